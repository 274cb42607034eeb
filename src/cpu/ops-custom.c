/*
 * ops-custom.c -- the custom ops' kernel: the user's callback, called on each of the node's
 * threads with its index and the node's thread count: n_tasks of them (all for GGML_N_TASKS_MAX),
 * at most the computation's. The executor runs a node on one thread or all, so the threads past
 * n_tasks return at once.
 */
#include "cpu-ops.h"
#include "ops-custom.h"

void ggmlx_cpu_custom(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const int want = ggmlx_custom_n_tasks(dst);
    const int nth  = want == GGML_N_TASKS_MAX || want > params->nth ? params->nth : want;
    const int ith  = params->ith;
    if (ith >= nth) {
        return;
    }
    switch (dst->op) {
    case GGML_OP_MAP_CUSTOM1: {
        struct ggmlx_custom1_params p;
        memcpy(&p, dst->op_params, sizeof p);
        p.fun(dst, dst->src[0], ith, nth, p.userdata);
        break;
    }
    case GGML_OP_MAP_CUSTOM2: {
        struct ggmlx_custom2_params p;
        memcpy(&p, dst->op_params, sizeof p);
        p.fun(dst, dst->src[0], dst->src[1], ith, nth, p.userdata);
        break;
    }
    case GGML_OP_MAP_CUSTOM3: {
        struct ggmlx_custom3_params p;
        memcpy(&p, dst->op_params, sizeof p);
        p.fun(dst, dst->src[0], dst->src[1], dst->src[2], ith, nth, p.userdata);
        break;
    }
    default: {
        struct ggmlx_custom_params p;
        memcpy(&p, dst->op_params, sizeof p);
        p.fun(dst, ith, nth, p.userdata);
        break;
    }
    }
}
