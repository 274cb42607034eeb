/*
 * ops-softmax.c -- SOFT_MAX (with optional mask, scale and ALiBi bias) and DIAG_MASK_INF.
 */
#include "ggml-impl.h"

static struct ggml_tensor * soft_max_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * mask,
                                          float scale, float max_bias, bool inplace, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func)) {
        return NULL;
    }
    if (mask != NULL) {
        if (mask->type != GGML_TYPE_F16 && mask->type != GGML_TYPE_F32) {
            ggmlx_ctx_fail(ctx, func, "mask must be F16 or F32, got %s", GGMLX_SHAPE(mask));
            return NULL;
        }
        /* rows of the mask are picked by a's row index, so the mask needs at least as many;
         * dims 2 and 3 repeat the mask, which needs whole multiples (and no empty dim) */
        const bool ok = mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1] &&
                        mask->ne[2] > 0 && mask->ne[3] > 0 &&
                        a->ne[2] % mask->ne[2] == 0 && a->ne[3] % mask->ne[3] == 0;
        if (!ok) {
            ggmlx_ctx_fail(ctx, func,
                           "mask %s does not fit a %s (need mask ne0 == a ne0, mask ne1 >= a ne1, "
                           "a ne2 and ne3 whole multiples of the mask's)", GGMLX_SHAPE(mask), GGMLX_SHAPE(a));
            return NULL;
        }
    }
    /* ALiBi adds slope*mask: without a mask there is nothing to scale, as upstream requires */
    if (max_bias > 0.0f && mask == NULL) {
        ggmlx_ctx_fail(ctx, func, "max_bias %g > 0 (ALiBi) needs a mask", (double) max_bias);
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, scale);
    ggmlx_set_op_params_f32(result, 1, max_bias);
    result->op     = GGML_OP_SOFT_MAX;
    result->src[0] = a;
    result->src[1] = mask;
    return result;
}

struct ggml_tensor * ggml_soft_max(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_impl(ctx, a, NULL, 1.0f, 0.0f, false, __func__);
}

struct ggml_tensor * ggml_soft_max_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_impl(ctx, a, NULL, 1.0f, 0.0f, true, __func__);
}

struct ggml_tensor * ggml_soft_max_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * mask,
                                       float scale, float max_bias) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_impl(ctx, a, mask, scale, max_bias, false, __func__);
}

struct ggml_tensor * ggml_soft_max_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                               struct ggml_tensor * mask, float scale, float max_bias) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_impl(ctx, a, mask, scale, max_bias, true, __func__);
}

struct ggml_tensor * ggmlx_diag_mask_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_past,
                                          enum ggml_op op, bool inplace, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func)) {
        return NULL;
    }
    if (n_past < 0) {
        ggmlx_ctx_fail(ctx, func, "n_past must be >= 0, got %d", n_past);
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, n_past);
    result->op     = op;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_diag_mask_inf(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    GGMLX_CTX_CHECK(ctx);
    return ggmlx_diag_mask_impl(ctx, a, n_past, GGML_OP_DIAG_MASK_INF, false, __func__);
}

struct ggml_tensor * ggml_diag_mask_inf_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    GGMLX_CTX_CHECK(ctx);
    return ggmlx_diag_mask_impl(ctx, a, n_past, GGML_OP_DIAG_MASK_INF, true, __func__);
}

/* one F32 logit per head (a's ne2) joining every row's softmax without an output (NULL removes) */
void ggml_soft_max_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks) {
    if (a == NULL) {
        ggmlx_error(__func__, "tensor argument 'a' is NULL");
        return;
    }
    if (a->op != GGML_OP_SOFT_MAX) {
        ggmlx_error(__func__, "a must be a SOFT_MAX result, got op %s", ggml_op_name(a->op));
        return;
    }
    if (sinks != NULL && (sinks->type != GGML_TYPE_F32 || sinks->ne[0] != a->src[0]->ne[2] ||
                          ggml_nelements(sinks) != sinks->ne[0])) {
        ggmlx_error(__func__, "sinks must be F32 [a ne2 = %lld], got %s", (long long) a->src[0]->ne[2],
                    GGMLX_SHAPE(sinks));
        return;
    }
    a->src[2] = sinks;
    ggmlx_ok();
}
