/*
 * ops-backward.c -- the ops only training graphs use: the backward ops ggml_build_backward_expand
 * emits (REPEAT_BACK, SILU_BACK, RMS_NORM_BACK, SOFT_MAX_BACK, ROPE_BACK, GET_ROWS_BACK), the
 * cross-entropy loss and its gradient, and the optimizer steps. Sources and op_params are laid out
 * as upstream's, so any backend reads them the same way.
 */
#include "ggml-impl.h"

struct ggml_tensor * ggml_repeat_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, ggml_can_repeat(b, a) && !ggml_is_empty(b),
                  "a %s is not a repetition of b's shape %s (each dim of a a multiple of b's)", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, b->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_REPEAT_BACK;
    result->src[0] = a;
    return result;
}

/* a: the gradient of silu(b); b: silu's input */
struct ggml_tensor * ggml_silu_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__) || !ggmlx_require_f32(ctx, b, "b", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(a, b), "a %s and b %s must have the same shape", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SILU_BACK;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* a: the gradient of rms_norm(b, eps); b: its input */
struct ggml_tensor * ggml_rms_norm_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       float eps) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__) || !ggmlx_require_f32(ctx, b, "b", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(a, b), "a %s and b %s must have the same shape", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, eps >= 0.0f, "eps must be >= 0, got %g", (double) eps);
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, eps);
    result->op     = GGML_OP_RMS_NORM_BACK;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* a: the gradient of y = soft_max_ext(x, mask, scale, max_bias); b: y itself */
static struct ggml_tensor * soft_max_back_impl(struct ggml_context * ctx, struct ggml_tensor * a,
                                               struct ggml_tensor * b, float scale, float max_bias, bool inplace,
                                               const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func) || !ggmlx_require_f32(ctx, b, "b", func)) {
        return NULL;
    }
    if (!ggml_are_same_shape(a, b)) {
        ggmlx_ctx_fail(ctx, func, "a %s and b %s must have the same shape", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    /*
     * A max_bias (ALiBi) is kept in op_params as upstream's constructor keeps it; no backend computes
     * it (upstream's CPU neither), so such a node is refused by supports_op, not here.
     */
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, scale);
    ggmlx_set_op_params_f32(result, 1, max_bias);
    result->op     = GGML_OP_SOFT_MAX_BACK;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_soft_max_ext_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           float scale, float max_bias) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_back_impl(ctx, a, b, scale, max_bias, false, __func__);
}

struct ggml_tensor * ggml_soft_max_ext_back_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                   struct ggml_tensor * b, float scale, float max_bias) {
    GGMLX_CTX_CHECK(ctx);
    return soft_max_back_impl(ctx, a, b, scale, max_bias, true, __func__);
}

/* The rotation by -theta: the same op_params as ggml_rope_ext, the op ROPE_BACK. */
struct ggml_tensor * ggml_rope_ext_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       struct ggml_tensor * c, int n_dims, int mode, int n_ctx_orig, float freq_base,
                                       float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                                       float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    struct ggml_tensor * result = ggml_rope_ext(ctx, a, b, c, n_dims, mode, n_ctx_orig, freq_base, freq_scale,
                                                ext_factor, attn_factor, beta_fast, beta_slow);
    if (result != NULL) {
        result->op = GGML_OP_ROPE_BACK;
    }
    return result;
}

/* a: the gradient of get_rows(c, b) [n_embd, n]; b: I32 indices [n]; c: the rows' source (its shape) */
struct ggml_tensor * ggml_get_rows_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                       struct ggml_tensor * c) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE_TENSOR(ctx, c);
    /* a of any type, as upstream takes it (the CPU sums F32 only); b may index fewer rows than a has */
    GGMLX_REQUIRE(ctx, ggml_is_matrix(a), "a must be a matrix, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_I32 && ggml_is_vector(b) && b->ne[0] <= a->ne[1],
                  "b must be an I32 vector of at most one index per row of a %s, got %s", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ggml_is_matrix(c) && c->ne[0] == a->ne[0],
                  "c must be a matrix with rows as long as a's: a %s, c %s", GGMLX_SHAPE(a), GGMLX_SHAPE(c));
    struct ggml_tensor * result = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c->ne[0], c->ne[1]);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_GET_ROWS_BACK;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* -sum(b * log_softmax(a)) over each row of logits a and labels b, averaged over the rows: an F32 scalar */
struct ggml_tensor * ggml_cross_entropy_loss(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__) || !ggmlx_require_f32(ctx, b, "b", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(a, b), "logits a %s and labels b %s must have the same shape",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, !ggml_is_empty(a), "logits a %s are empty", GGMLX_SHAPE(a));
    struct ggml_tensor * result = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_CROSS_ENTROPY_LOSS;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* a: the loss's gradient (scalar); b: the logits; c: the labels -> the logits' gradient */
struct ggml_tensor * ggml_cross_entropy_loss_back(struct ggml_context * ctx, struct ggml_tensor * a,
                                                 struct ggml_tensor * b, struct ggml_tensor * c) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__) || !ggmlx_require_f32(ctx, b, "b", __func__) ||
        !ggmlx_require_f32(ctx, c, "c", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_is_scalar(a), "the gradient a must be a scalar, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(b, c), "logits b %s and labels c %s must have the same shape",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(c));
    struct ggml_tensor * result = ggmlx_new_result(ctx, b, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_CROSS_ENTROPY_LOSS_BACK;
    result->src[0] = a;
    result->src[1] = b;
    result->src[2] = c;
    return result;
}

/* the checks both optimizer steps share: a trainable F32 tensor and an F32 gradient of its shape */
static bool opt_step_ok(struct ggml_context * ctx, const struct ggml_tensor * a, const struct ggml_tensor * grad,
                        const struct ggml_tensor * params, int64_t n_params, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func) || !ggmlx_require_f32(ctx, grad, "grad", func) ||
        !ggmlx_require_f32(ctx, params, "params", func)) {
        return false;
    }
    if (!(a->flags & GGML_TENSOR_FLAG_PARAM)) {
        ggmlx_ctx_fail(ctx, func, "a '%s' is not a parameter (ggml_set_param)", a->name);
        return false;
    }
    if (!ggml_are_same_shape(a, grad)) {
        ggmlx_ctx_fail(ctx, func, "grad %s must have a's shape %s", GGMLX_SHAPE(grad), GGMLX_SHAPE(a));
        return false;
    }
    if (ggml_nelements(params) != n_params) {
        ggmlx_ctx_fail(ctx, func, "params must hold %lld floats, got %s", (long long) n_params, GGMLX_SHAPE(params));
        return false;
    }
    return true;
}

/* adamw_params: alpha, beta1, beta2, eps, weight decay, 1/(1-beta1^t), 1/(1-beta2^t) */
struct ggml_tensor * ggml_opt_step_adamw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * grad,
                                        struct ggml_tensor * m, struct ggml_tensor * v,
                                        struct ggml_tensor * adamw_params) {
    GGMLX_CTX_CHECK(ctx);
    if (!opt_step_ok(ctx, a, grad, adamw_params, 7, __func__) || !ggmlx_require_f32(ctx, m, "m", __func__) ||
        !ggmlx_require_f32(ctx, v, "v", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(a, m) && ggml_are_same_shape(a, v),
                  "the moments m %s and v %s must have a's shape %s", GGMLX_SHAPE(m), GGMLX_SHAPE(v), GGMLX_SHAPE(a));
    struct ggml_tensor * result = ggml_view_tensor(ctx, a);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_OPT_STEP_ADAMW;
    result->src[0] = a;
    result->src[1] = grad;
    result->src[2] = m;
    result->src[3] = v;
    result->src[4] = adamw_params;
    return result;
}

/* sgd_params: alpha, weight decay */
struct ggml_tensor * ggml_opt_step_sgd(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * grad,
                                      struct ggml_tensor * sgd_params) {
    GGMLX_CTX_CHECK(ctx);
    if (!opt_step_ok(ctx, a, grad, sgd_params, 2, __func__)) {
        return NULL;
    }
    struct ggml_tensor * result = ggml_view_tensor(ctx, a);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_OPT_STEP_SGD;
    result->src[0] = a;
    result->src[1] = grad;
    result->src[2] = sgd_params;
    return result;
}

/* The rotation by -theta of ggml_rope_multi with the same parameters. */
struct ggml_tensor * ggml_rope_multi_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         struct ggml_tensor * c, int n_dims, int sections[4], int mode,
                                         int n_ctx_orig, float freq_base, float freq_scale, float ext_factor,
                                         float attn_factor, float beta_fast, float beta_slow) {
    GGMLX_CTX_CHECK(ctx);
    struct ggml_tensor * result = ggml_rope_multi(ctx, a, b, c, n_dims, sections, mode, n_ctx_orig, freq_base,
                                                  freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);
    if (result != NULL) {
        result->op = GGML_OP_ROPE_BACK;
    }
    return result;
}

/* a: the gradient of ggml_im2col(b, image, ...) ; ne: the image's shape. The image's gradient: each
 * column entry's gradient added to the pixel it was read from. */
struct ggml_tensor * ggml_im2col_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     int64_t * ne, int s0, int s1, int p0, int p1, int d0, int d1, bool is_2D) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, ne != NULL, "ne is NULL");
    if (!ggmlx_require_f32(ctx, a, "a", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, s0 > 0 && s1 > 0 && d0 > 0 && d1 > 0 && p0 >= 0 && p1 >= 0,
                  "need strides and dilations > 0 and paddings >= 0, got s %d %d, p %d %d, d %d %d", s0, s1, p0, p1,
                  d0, d1);
    const int64_t KW = b->ne[0], KH = is_2D ? b->ne[1] : 1;
    const int64_t IC = is_2D ? ne[2] : ne[1];
    const int64_t IW = ne[0], IH = is_2D ? ne[1] : 1;
    const int64_t OW = ggmlx_conv_out(IW, KW, s0, p0, d0);
    const int64_t OH = is_2D ? ggmlx_conv_out(IH, KH, s1, p1, d1) : 1;
    const bool fits = a->ne[0] == IC * KH * KW && a->ne[1] == OW && (is_2D ? a->ne[2] == OH && a->ne[3] == ne[3]
                                                                           : a->ne[2] == ne[2] && a->ne[3] == 1);
    GGMLX_REQUIRE(ctx, fits, "a %s is not the im2col of an image [%lld, %lld, %lld, %lld] with kernel %s",
                  GGMLX_SHAPE(a), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3],
                  GGMLX_SHAPE(b));
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[7] = { s0, s1, p0, p1, d0, d1, is_2D ? 1 : 0 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_IM2COL_BACK;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* a: the gradient of ggml_pool_2d(af, ...); af: the pooled input. The input's gradient. */
struct ggml_tensor * ggml_pool_2d_back(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * af,
                                      enum ggml_op_pool op, int k0, int k1, int s0, int s1, float p0, float p1) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE_TENSOR(ctx, af);
    GGMLX_REQUIRE(ctx, op == GGML_OP_POOL_MAX || op == GGML_OP_POOL_AVG, "op %d is not a pool op", (int) op);
    GGMLX_REQUIRE(ctx, k0 > 0 && k1 > 0 && s0 > 0 && s1 > 0 && p0 >= 0.0f && p1 >= 0.0f && p0 < 1e6f && p1 < 1e6f,
                  "need k0, k1, s0, s1 > 0 and paddings in [0, 1e6)");
    const int64_t OW = ggmlx_pool_out(af->ne[0], k0, s0, p0), OH = ggmlx_pool_out(af->ne[1], k1, s1, p1);
    GGMLX_REQUIRE(ctx, a->ne[0] == OW && a->ne[1] == OH && a->ne[2] == af->ne[2] && a->ne[3] == af->ne[3],
                  "a %s is not the pool of af %s", GGMLX_SHAPE(a), GGMLX_SHAPE(af));
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, af->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[7] = { (int32_t) op, k0, k1, s0, s1, (int32_t) p0, (int32_t) p1 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_POOL_2D_BACK;
    result->src[0] = a;
    result->src[1] = af;
    return result;
}

/*
 * The gradients of attention O = V softmax(K^T Q / sqrt(D)) (causal when masked) with respect to
 * q [D, N, ne2, ne3], k [D, M, kv2, ne3] and v [M, D, kv2, ne3] (v transposed), given d, the
 * gradient of O [D, N, ne2, ne3]; query heads share key/value heads in groups of ne2 / kv2. The
 * three gradients are laid end to end in one F32 vector, each padded to GGML_MEM_ALIGN bytes.
 */
struct ggml_tensor * ggml_flash_attn_back(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                         struct ggml_tensor * v, struct ggml_tensor * d, bool masked) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, q, "q", __func__) || !ggmlx_require_f32(ctx, k, "k", __func__) ||
        !ggmlx_require_f32(ctx, v, "v", __func__) || !ggmlx_require_f32(ctx, d, "d", __func__)) {
        return NULL;
    }
    const int64_t D = q->ne[0], N = q->ne[1], M = k->ne[1], ne2 = q->ne[2], ne3 = q->ne[3], kv2 = k->ne[2];
    const bool ok = k->ne[0] == D && v->ne[0] == M && v->ne[1] == D && v->ne[2] == kv2 && v->ne[3] == ne3 &&
                    k->ne[3] == ne3 && ggml_are_same_shape(q, d) && kv2 > 0 && ne2 % kv2 == 0 && M >= N;
    GGMLX_REQUIRE(ctx, ok, "shapes do not fit: q %s, k %s, v %s, d %s (k [D, M, kv, ne3], v [M, D, kv, ne3], d like q, "
                           "q heads a multiple of kv heads, M >= N)", GGMLX_SHAPE(q), GGMLX_SHAPE(k), GGMLX_SHAPE(v),
                  GGMLX_SHAPE(d));
    const size_t a = GGML_MEM_ALIGN;
    const size_t bytes = GGML_PAD((size_t) ggml_nelements(q) * sizeof(float), a) +
                         GGML_PAD((size_t) ggml_nelements(k) * sizeof(float), a) +
                         GGML_PAD((size_t) ggml_nelements(v) * sizeof(float), a);
    struct ggml_tensor * result = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t) (bytes / sizeof(float)));
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, masked ? 1 : 0);
    result->op     = GGML_OP_FLASH_ATTN_BACK;
    result->src[0] = q;
    result->src[1] = k;
    result->src[2] = v;
    result->src[3] = d;
    return result;
}
