/*
 * ops-custom.h -- the op_params of the custom ops (MAP_CUSTOM1/2/3 and CUSTOM), laid out as
 * upstream's: the callback, the number of threads it wants (GGML_N_TASKS_MAX: all of them) and
 * the caller's pointer.
 */
#ifndef GGMLX_OPS_CUSTOM_H
#define GGMLX_OPS_CUSTOM_H

#include "ggml.h"

#include <string.h>

struct ggmlx_custom1_params { ggml_custom1_op_t fun; int n_tasks; void * userdata; };
struct ggmlx_custom2_params { ggml_custom2_op_t fun; int n_tasks; void * userdata; };
struct ggmlx_custom3_params { ggml_custom3_op_t fun; int n_tasks; void * userdata; };
struct ggmlx_custom_params  { ggml_custom_op_t  fun; int n_tasks; void * userdata; };

/* the n_tasks a custom node asked for (the field sits at the same place in all four) */
static inline int ggmlx_custom_n_tasks(const struct ggml_tensor * node) {
    struct ggmlx_custom_params p;
    memcpy(&p, node->op_params, sizeof p);
    return p.n_tasks;
}

#endif /* GGMLX_OPS_CUSTOM_H */
