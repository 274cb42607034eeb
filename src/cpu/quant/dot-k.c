#include "qdot.h"
void ggmlx_qdot_fill_k(ggmlx_qdot_table t) { (void)t; }
