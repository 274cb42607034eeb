/*
 * ops-dsv4.c -- DeepSeek's sparse-attention indexer (LIGHTNING_INDEXER) and V4's hyper-connection
 * ops (DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST), shapes as upstream's header documents them.
 *   dsv4_hc_comb op_params f32 [0] eps, i32 [1] n_iter (Sinkhorn iterations)
 */
#include "ggml-impl.h"

/* hyper-connection streams: upstream's fused comb is written for DeepSeek V4's 4 only */
#define DSV4_HC 4

static bool is_1d_or_less(const struct ggml_tensor * t, int from) {
    for (int i = from; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] != 1) {
            return false;
        }
    }
    return true;
}

struct ggml_tensor * ggml_lightning_indexer(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                           struct ggml_tensor * weights, struct ggml_tensor * mask) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, q, "q", __func__) || !ggmlx_require_f32(ctx, weights, "weights", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE_TENSOR(ctx, k);
    GGMLX_REQUIRE_TENSOR(ctx, mask);
    GGMLX_REQUIRE(ctx, mask->type == GGML_TYPE_F16, "mask must be F16, got %s", GGMLX_SHAPE(mask));
    const struct ggml_type_traits * kt = ggml_get_type_traits(k->type);
    GGMLX_REQUIRE(ctx, k->type == GGML_TYPE_F32 || (kt != NULL && kt->to_float != NULL),
                  "k %s: its type has no conversion to F32", GGMLX_SHAPE(k));
    GGMLX_REQUIRE(ctx, q->nb[0] == sizeof(float) && weights->nb[0] == sizeof(float) && mask->nb[0] == 2 &&
                  k->nb[0] == ggml_type_size(k->type),
                  "q %s, k %s, weights %s and mask %s must have contiguous rows", GGMLX_SHAPE(q), GGMLX_SHAPE(k),
                  GGMLX_SHAPE(weights), GGMLX_SHAPE(mask));
    GGMLX_REQUIRE(ctx, q->ne[0] == k->ne[0] && k->ne[1] == 1 && k->ne[0] % ggml_blck_size(k->type) == 0,
                  "k %s must be [n_embd, 1, n_kv, ne3] with q's n_embd (q %s)", GGMLX_SHAPE(k), GGMLX_SHAPE(q));
    GGMLX_REQUIRE(ctx, weights->ne[0] == q->ne[1] && weights->ne[1] == q->ne[2] && weights->ne[2] == 1,
                  "weights %s must be [n_head, n_batch, 1, ne3] for q %s", GGMLX_SHAPE(weights), GGMLX_SHAPE(q));
    GGMLX_REQUIRE(ctx, mask->ne[0] == k->ne[2] && mask->ne[1] == q->ne[2] && mask->ne[2] == 1,
                  "mask %s must be [n_kv, n_batch, 1, ne33] for q %s and k %s", GGMLX_SHAPE(mask), GGMLX_SHAPE(q),
                  GGMLX_SHAPE(k));
    GGMLX_REQUIRE(ctx, q->ne[3] == k->ne[3] && k->ne[3] == weights->ne[3] && weights->ne[3] % mask->ne[3] == 0,
                  "q %s, k %s and weights %s must share ne3, a multiple of mask's %s", GGMLX_SHAPE(q), GGMLX_SHAPE(k),
                  GGMLX_SHAPE(weights), GGMLX_SHAPE(mask));
    const int64_t ne[4] = { k->ne[2], q->ne[2], 1, q->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_LIGHTNING_INDEXER;
    result->src[0] = q;
    result->src[1] = k;
    result->src[2] = weights;
    result->src[3] = mask;
    return result;
}

struct ggml_tensor * ggml_dsv4_hc_comb(struct ggml_context * ctx, struct ggml_tensor * mixes,
                                      struct ggml_tensor * scale, struct ggml_tensor * base, float eps,
                                      int32_t n_iter) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, mixes, "mixes", __func__) || !ggmlx_require_f32(ctx, scale, "scale", __func__) ||
        !ggmlx_require_f32(ctx, base, "base", __func__)) {
        return NULL;
    }
    const int64_t mix_dim = (2 + DSV4_HC) * DSV4_HC;
    GGMLX_REQUIRE(ctx, n_iter > 0, "n_iter (%d) must be positive", (int) n_iter);
    GGMLX_REQUIRE(ctx, mixes->ne[0] == mix_dim && is_1d_or_less(mixes, 2),
                  "mixes %s must be [(2 + hc)*hc = %lld, n_tokens] (hc = %d streams)", GGMLX_SHAPE(mixes),
                  (long long) mix_dim, DSV4_HC);
    GGMLX_REQUIRE(ctx, scale->ne[0] >= 3 && is_1d_or_less(scale, 1), "scale %s must be a vector of at least 3",
                  GGMLX_SHAPE(scale));
    GGMLX_REQUIRE(ctx, base->ne[0] == mix_dim && is_1d_or_less(base, 1), "base %s must be a vector of %lld",
                  GGMLX_SHAPE(base), (long long) mix_dim);
    const int64_t ne[3] = { DSV4_HC, DSV4_HC, mixes->ne[1] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 3, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, eps);
    ggmlx_set_op_params_i32(result, 1, n_iter);
    result->op     = GGML_OP_DSV4_HC_COMB;
    result->src[0] = mixes;
    result->src[1] = scale;
    result->src[2] = base;
    return result;
}

struct ggml_tensor * ggml_dsv4_hc_pre(struct ggml_context * ctx, struct ggml_tensor * x,
                                     struct ggml_tensor * weights) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, x, "x", __func__) || !ggmlx_require_f32(ctx, weights, "weights", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, x->ne[1] > 0 && x->ne[3] == 1, "x %s must be [n_embd, hc, n_tokens]", GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, weights->ne[0] == x->ne[1] && weights->ne[1] == x->ne[2] && is_1d_or_less(weights, 2),
                  "weights %s must be [hc, n_tokens] for x %s", GGMLX_SHAPE(weights), GGMLX_SHAPE(x));
    const int64_t ne[2] = { x->ne[0], x->ne[2] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 2, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_DSV4_HC_PRE;
    result->src[0] = x;
    result->src[1] = weights;
    return result;
}

struct ggml_tensor * ggml_dsv4_hc_post(struct ggml_context * ctx, struct ggml_tensor * x,
                                      struct ggml_tensor * residual, struct ggml_tensor * post,
                                      struct ggml_tensor * comb) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, x, "x", __func__) || !ggmlx_require_f32(ctx, residual, "residual", __func__) ||
        !ggmlx_require_f32(ctx, post, "post", __func__) || !ggmlx_require_f32(ctx, comb, "comb", __func__)) {
        return NULL;
    }
    const int64_t n_embd = x->ne[0];
    const int64_t n_tok  = x->ne[1];
    const int64_t hc     = residual->ne[1];
    GGMLX_REQUIRE(ctx, is_1d_or_less(x, 2), "x %s must be [n_embd, n_tokens]", GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, hc > 0 && residual->ne[0] == n_embd && residual->ne[2] == n_tok && residual->ne[3] == 1,
                  "residual %s must be [n_embd, hc, n_tokens] for x %s", GGMLX_SHAPE(residual), GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, post->ne[0] == hc && post->ne[1] == n_tok && is_1d_or_less(post, 2),
                  "post %s must be [hc, n_tokens] for residual %s", GGMLX_SHAPE(post), GGMLX_SHAPE(residual));
    GGMLX_REQUIRE(ctx, comb->ne[0] == hc && comb->ne[1] == hc && comb->ne[2] == n_tok && comb->ne[3] == 1,
                  "comb %s must be [hc, hc, n_tokens] for residual %s", GGMLX_SHAPE(comb), GGMLX_SHAPE(residual));
    const int64_t ne[3] = { n_embd, hc, n_tok };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 3, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_DSV4_HC_POST;
    result->src[0] = x;
    result->src[1] = residual;
    result->src[2] = post;
    result->src[3] = comb;
    return result;
}
