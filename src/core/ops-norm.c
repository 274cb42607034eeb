/*
 * ops-norm.c -- NORM, RMS_NORM and L2_NORM constructors (row-wise normalisation along dim 0) and
 * GROUP_NORM (over groups of channels, dim 2).
 */
#include "ggml-impl.h"

static struct ggml_tensor * norm_impl(struct ggml_context * ctx, struct ggml_tensor * a, float eps, bool inplace,
                                      enum ggml_op op, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func)) {
        return NULL;
    }
    /* a negative or NaN eps would make the square root undefined for a constant row */
    if (!(eps >= 0.0f)) {
        ggmlx_ctx_fail(ctx, func, "eps must be >= 0, got %g", (double) eps);
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, eps);
    result->op     = op;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, false, GGML_OP_NORM, __func__);
}

struct ggml_tensor * ggml_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, true, GGML_OP_NORM, __func__);
}

struct ggml_tensor * ggml_rms_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, false, GGML_OP_RMS_NORM, __func__);
}

struct ggml_tensor * ggml_rms_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, true, GGML_OP_RMS_NORM, __func__);
}

struct ggml_tensor * ggml_l2_norm(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, false, GGML_OP_L2_NORM, __func__);
}

struct ggml_tensor * ggml_l2_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return norm_impl(ctx, a, eps, true, GGML_OP_L2_NORM, __func__);
}

/* op_params as upstream: i32 [0] n_groups, f32 [1] eps */
static struct ggml_tensor * group_norm_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_groups, float eps,
                                            bool inplace, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func)) {
        return NULL;
    }
    if (n_groups < 1) {
        ggmlx_ctx_fail(ctx, func, "n_groups must be >= 1, got %d", n_groups);
        return NULL;
    }
    if (!(eps >= 0.0f)) {
        ggmlx_ctx_fail(ctx, func, "eps must be >= 0, got %g", (double) eps);
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, n_groups);
    ggmlx_set_op_params_f32(result, 1, eps);
    result->op     = GGML_OP_GROUP_NORM;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_group_norm(struct ggml_context * ctx, struct ggml_tensor * a, int n_groups, float eps) {
    GGMLX_CTX_CHECK(ctx);
    return group_norm_impl(ctx, a, n_groups, eps, false, __func__);
}

struct ggml_tensor * ggml_group_norm_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_groups,
                                             float eps) {
    GGMLX_CTX_CHECK(ctx);
    return group_norm_impl(ctx, a, n_groups, eps, true, __func__);
}
