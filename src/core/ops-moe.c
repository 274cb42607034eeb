/*
 * ops-moe.c -- mixture-of-experts ops, shaped as upstream:
 *   MUL_MAT_ID: as [K, N, n_expert] (one weight matrix per expert), b [K, n_b, n_tokens] F32,
 *               ids I32 [n_used, n_tokens]; result F32 [N, n_used, n_tokens] with
 *               res[:, e, t] = as[ids[e, t]] * b[:, e % n_b, t] (n_b is 1 or n_used).
 *   ADD_ID:     a [ne0, n_used, n_tokens] F32, b [ne0, n_expert] F32, ids as above;
 *               res[:, e, t] = a[:, e, t] + b[:, ids[e, t]].
 * An id outside 0 .. n_expert-1 is found when computing (the values are data, not shape).
 */
#include "ggml-impl.h"

struct ggml_tensor * ggml_mul_mat_id(struct ggml_context * ctx, struct ggml_tensor * as, struct ggml_tensor * b,
                                     struct ggml_tensor * ids) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, as);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE_TENSOR(ctx, ids);
    GGMLX_REQUIRE(ctx, as->type == GGML_TYPE_F32 || as->type == GGML_TYPE_F16 || as->type == GGML_TYPE_BF16 ||
                       ggml_is_quantized(as->type),
                  "as must be F32, F16, BF16 or a quantized type, got %s", GGMLX_SHAPE(as));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ids->type == GGML_TYPE_I32, "ids must be I32, got %s", GGMLX_SHAPE(ids));
    GGMLX_REQUIRE(ctx, !ggml_is_transposed(as), "as must not be transposed (nb0 > nb1): %s", GGMLX_SHAPE(as));
    GGMLX_REQUIRE(ctx, as->ne[3] == 1 && b->ne[3] == 1 && ids->ne[2] == 1 && ids->ne[3] == 1,
                  "as and b must be 3-D and ids 2-D: as %s, b %s, ids %s", GGMLX_SHAPE(as), GGMLX_SHAPE(b),
                  GGMLX_SHAPE(ids));
    GGMLX_REQUIRE(ctx, as->ne[0] == b->ne[0], "as ne0 (%lld) must equal b ne0 (%lld)", (long long) as->ne[0],
                  (long long) b->ne[0]);
    GGMLX_REQUIRE(ctx, ids->ne[1] == b->ne[2], "ids ne1 (%lld tokens) must equal b ne2 (%lld)",
                  (long long) ids->ne[1], (long long) b->ne[2]);
    GGMLX_REQUIRE(ctx, b->ne[1] > 0 && ids->ne[0] % b->ne[1] == 0,
                  "ids ne0 (%lld experts used) must be a whole multiple of b ne1 (%lld)", (long long) ids->ne[0],
                  (long long) b->ne[1]);

    const int64_t ne[4] = { as->ne[1], ids->ne[0], b->ne[2], 1 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_MUL_MAT_ID;
    result->src[0] = as;
    result->src[1] = b;
    result->src[2] = ids;
    return result;
}

struct ggml_tensor * ggml_add_id(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 struct ggml_tensor * ids) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE_TENSOR(ctx, ids);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32, "a and b must be F32, got a %s, b %s",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ids->type == GGML_TYPE_I32, "ids must be I32, got %s", GGMLX_SHAPE(ids));
    GGMLX_REQUIRE(ctx, a->ne[0] == b->ne[0] && a->ne[1] == ids->ne[0] && a->ne[2] == ids->ne[1] && a->ne[3] == 1,
                  "shapes do not fit: a %s, b %s, ids %s (need a [ne0, ids ne0, ids ne1], b [ne0, n_expert])",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b), GGMLX_SHAPE(ids));
    GGMLX_REQUIRE(ctx, b->ne[2] == 1 && b->ne[3] == 1 && ids->ne[2] == 1 && ids->ne[3] == 1,
                  "b must be 2-D and ids 2-D: b %s, ids %s", GGMLX_SHAPE(b), GGMLX_SHAPE(ids));

    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, a->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_ADD_ID;
    result->src[0] = a;
    result->src[1] = b;
    result->src[2] = ids;
    return result;
}
