/*
 * ops-rope.c -- ROPE constructors (rotary position embedding, normal and NEOX layouts) and the
 * YaRN correction-dims helper.
 */
#include "ggml-impl.h"
#include "ggml-math.h"

static struct ggml_tensor * rope_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                      float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                      float beta_slow, bool inplace, const char * func) {
    if (a == NULL || b == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", a == NULL ? "a" : "b");
        return NULL;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        ggmlx_ctx_fail(ctx, func, "a must be F32 or F16, got %s", GGMLX_SHAPE(a));
        return NULL;
    }
    if (mode != GGML_ROPE_TYPE_NORMAL && mode != GGML_ROPE_TYPE_NEOX) {
        ggmlx_ctx_fail(ctx, func,
                       "mode %d is not supported (only GGML_ROPE_TYPE_NORMAL = 0 and GGML_ROPE_TYPE_NEOX = 2; "
                       "multimodal and vision rope are not implemented)", mode);
        return NULL;
    }
    /* positions: one per token, and tokens are a's dim 2 */
    if (b->type != GGML_TYPE_I32 || !ggml_is_vector(b) || b->ne[0] != a->ne[2]) {
        ggmlx_ctx_fail(ctx, func, "b must be an I32 vector with one position per a's ne2: a %s, b %s",
                       GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    /* pairs are rotated, so n_dims must be even; a zero n_dims would divide by zero in the angle */
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > a->ne[0]) {
        ggmlx_ctx_fail(ctx, func, "n_dims %d must be even, > 0 and <= a's ne0 (a %s)", n_dims, GGMLX_SHAPE(a));
        return NULL;
    }
    if (c != NULL && (c->type != GGML_TYPE_F32 || c->ne[0] < n_dims / 2)) {
        ggmlx_ctx_fail(ctx, func, "freq factors c must be F32 with ne0 >= n_dims/2 = %d, got %s", n_dims / 2,
                       GGMLX_SHAPE(c));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    /* upstream's layout: n_past and n_ctx are vestigial zeros; the mrope sections stay zero */
    int32_t params[15] = { 0, n_dims, mode, 0, n_ctx_orig };
    memcpy(params +  5, &freq_base,   sizeof(float));
    memcpy(params +  6, &freq_scale,  sizeof(float));
    memcpy(params +  7, &ext_factor,  sizeof(float));
    memcpy(params +  8, &attn_factor, sizeof(float));
    memcpy(params +  9, &beta_fast,   sizeof(float));
    memcpy(params + 10, &beta_slow,   sizeof(float));
    ggmlx_set_op_params(result, params, sizeof(params));
    result->op     = GGML_OP_ROPE;
    result->src[0] = a;
    result->src[1] = b;
    result->src[2] = c;
    return result;
}

/* upstream's defaults, betas included (they only matter when ext_factor != 0, which is 0 here) */
struct ggml_tensor * ggml_rope(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims,
                               int mode) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, NULL, n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, false, __func__);
}

struct ggml_tensor * ggml_rope_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       int n_dims, int mode) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, NULL, n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, true, __func__);
}

struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                   float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                   float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, false, __func__);
}

struct ggml_tensor * ggml_rope_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                           float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                           float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, true, __func__);
}

void ggml_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                              float dims[2]) {
    if (dims == NULL) {
        ggmlx_error(__func__, "dims is NULL");
        return;
    }
    ggmlx_rope_yarn_corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow, dims);
    ggmlx_ok();
}
