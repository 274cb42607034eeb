#include "qdot.h"
void ggmlx_qdot_fill_iq(ggmlx_qdot_table t) { (void)t; }
