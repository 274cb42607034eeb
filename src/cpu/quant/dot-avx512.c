#include "qdot.h"
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { (void)t; }
