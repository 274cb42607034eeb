/*
 * ops-rope.c -- ROPE constructors (rotary position embedding, normal and NEOX layouts) and the
 * YaRN correction-dims helper.
 */
#include "ggml-impl.h"
#include "ggml-math.h"

static struct ggml_tensor * rope_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                      float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                      float beta_slow, const int * sections, bool inplace, const char * func) {
    if (a == NULL || b == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", a == NULL ? "a" : "b");
        return NULL;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        ggmlx_ctx_fail(ctx, func, "a must be F32 or F16, got %s", GGMLX_SHAPE(a));
        return NULL;
    }
    if (sections == NULL && mode != GGML_ROPE_TYPE_NORMAL && mode != GGML_ROPE_TYPE_NEOX) {
        ggmlx_ctx_fail(ctx, func,
                       "mode %d is not supported (GGML_ROPE_TYPE_NORMAL = 0 or GGML_ROPE_TYPE_NEOX = 2; the "
                       "multimodal modes go through ggml_rope_multi)", mode);
        return NULL;
    }
    if (sections != NULL && mode != GGML_ROPE_TYPE_MROPE && mode != GGML_ROPE_TYPE_VISION &&
        mode != GGML_ROPE_TYPE_IMROPE) {
        ggmlx_ctx_fail(ctx, func,
                       "mode %d is not a multimodal mode (GGML_ROPE_TYPE_MROPE = 8, GGML_ROPE_TYPE_VISION = 24 or "
                       "GGML_ROPE_TYPE_IMROPE = 40)", mode);
        return NULL;
    }
    /* positions: one per token (four per token for the multimodal modes), and tokens are a's dim 2 */
    const int64_t n_pos = sections != NULL ? 4 * a->ne[2] : a->ne[2];
    if (b->type != GGML_TYPE_I32 || !ggml_is_vector(b) || b->ne[0] != n_pos) {
        ggmlx_ctx_fail(ctx, func, "b must be an I32 vector of %lld positions (%s per a's ne2): a %s, b %s",
                       (long long) n_pos, sections != NULL ? "four" : "one", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    if (sections != NULL) {
        for (int i = 0; i < GGML_MROPE_SECTIONS; i++) {
            if (sections[i] < 0) {
                ggmlx_ctx_fail(ctx, func, "section %d is negative (%d)", i, sections[i]);
                return NULL;
            }
        }
        /*
         * A section is a count of rotated pairs; pair p falls in section (p mod sum), so sections
         * longer than the row are fine (upstream's test-backend-ops gives {42, 42, 42, 0} to a row
         * of 64 pairs), but the sum is a divisor and the first three cannot all be empty.
         */
        if (sections[0] == 0 && sections[1] == 0 && sections[2] == 0) {
            ggmlx_ctx_fail(ctx, func,
                           "sections {%d, %d, %d, %d} must have a non-zero one among the first three (a %s)",
                           sections[0], sections[1], sections[2], sections[3], GGMLX_SHAPE(a));
            return NULL;
        }
        if (mode == GGML_ROPE_TYPE_VISION && 2 * (int64_t) n_dims != a->ne[0]) {
            ggmlx_ctx_fail(ctx, func, "vision rope needs n_dims = ne0/2, got n_dims %d for a %s", n_dims,
                           GGMLX_SHAPE(a));
            return NULL;
        }
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
    /* upstream's layout: n_past and n_ctx are vestigial zeros; [11..14] the mrope sections (else zero) */
    int32_t params[15] = { 0, n_dims, mode, 0, n_ctx_orig };
    memcpy(params +  5, &freq_base,   sizeof(float));
    memcpy(params +  6, &freq_scale,  sizeof(float));
    memcpy(params +  7, &ext_factor,  sizeof(float));
    memcpy(params +  8, &attn_factor, sizeof(float));
    memcpy(params +  9, &beta_fast,   sizeof(float));
    memcpy(params + 10, &beta_slow,   sizeof(float));
    if (sections != NULL) {
        memcpy(params + 11, sections, GGML_MROPE_SECTIONS * sizeof(int32_t));
    }
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
    return rope_impl(ctx, a, b, NULL, n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, NULL, false, __func__);
}

struct ggml_tensor * ggml_rope_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       int n_dims, int mode) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, NULL, n_dims, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, NULL, true, __func__);
}

struct ggml_tensor * ggml_rope_ext(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                   float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                   float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, NULL, false, __func__);
}

struct ggml_tensor * ggml_rope_ext_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig,
                                           float freq_base, float freq_scale, float ext_factor, float attn_factor,
                                           float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, NULL, true, __func__);
}

struct ggml_tensor * ggml_rope_multi(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     struct ggml_tensor * c, int n_dims, int sections[GGML_MROPE_SECTIONS], int mode,
                                     int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                     float attn_factor, float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, sections != NULL, "sections is NULL");
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, sections, false, __func__);
}

struct ggml_tensor * ggml_rope_multi_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                             struct ggml_tensor * c, int n_dims, int sections[GGML_MROPE_SECTIONS],
                                             int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                             float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, sections != NULL, "sections is NULL");
    return rope_impl(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, sections, true, __func__);
}

/* upstream's deprecated names for ggml_rope_ext without frequency factors */
struct ggml_tensor * ggml_rope_custom(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                      float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, NULL, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, NULL, false, __func__);
}

struct ggml_tensor * ggml_rope_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                              int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                              float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    return rope_impl(ctx, a, b, NULL, n_dims, mode, n_ctx_orig, freq_base, freq_scale, ext_factor, attn_factor,
                     beta_fast, beta_slow, NULL, true, __func__);
}

/*
 * Rotates the channels from n_offs on instead of from 0 (op_params i32 [15], as upstream; the
 * channels before and after pass through). Returns a, or NULL (nothing changed) when a is not a
 * rope node or the rotated channels would not fit in its rows.
 */
struct ggml_tensor * ggml_rope_set_offset(struct ggml_tensor * a, int n_offs) {
    if (a == NULL) {
        ggmlx_error(__func__, "tensor argument 'a' is NULL");
        return NULL;
    }
    if (a->op != GGML_OP_ROPE && a->op != GGML_OP_ROPE_BACK) {
        ggmlx_error(__func__, "a must be a ROPE or ROPE_BACK result, got op %s", ggml_op_name(a->op));
        return NULL;
    }
    const int     n_dims = ggmlx_get_op_params_i32(a, 1);
    const int     mode   = ggmlx_get_op_params_i32(a, 2);
    const int64_t span   = mode == GGML_ROPE_TYPE_VISION ? 2 * (int64_t) n_dims : n_dims;
    if (n_offs < 0 || n_offs + span > a->ne[0]) {
        ggmlx_error(__func__, "%lld rotated channels from channel %d do not fit rows of %lld", (long long) span, n_offs,
                    (long long) a->ne[0]);
        return NULL;
    }
    ggmlx_set_op_params_i32(a, 15, n_offs);
    ggmlx_ok();
    return a;
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
