/*
 * ops-rows.c -- GET_ROWS (gather rows by index) and SET_ROWS (scatter rows by index).
 */
#include "ggml-impl.h"

/*
 * a [n_embd, n_rows, ne2, ne3], b I32 [n, ne2, ne3] -> [n_embd, n, ne2, ne3]: F32 (quantized
 * rows are dequantized), or I32 for I32 data, as upstream. Index values are checked when the graph runs (they are data).
 */
struct ggml_tensor * ggml_get_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16 ||
                       a->type == GGML_TYPE_I32 || ggml_is_quantized(a->type),
                  "a %s: data must be F32, F16, BF16, I32 or a quantized type", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_I32, "b %s: row indices must be I32", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3] && b->ne[3] == 1,
                  "indices b %s do not fit a %s (need b->ne[1] == a->ne[2], b->ne[2] == a->ne[3], b->ne[3] == 1)",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(a));

    const enum ggml_type type = a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    const int64_t ne[GGML_MAX_DIMS] = { a->ne[0], b->ne[0], b->ne[1], b->ne[2] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_GET_ROWS;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/*
 * a [n_embd, n_rows, ne2, ne3] (F32/F16/BF16 or quantized) receives b's F32 or F16 rows [n_embd, n, ne2, ne3] at the
 * indices in c [n, ne2', ne3'] (I64 or I32), c broadcast over dims 2 and 3. The result is a view
 * of a; the source order (b, c, a) is upstream's.
 */
struct ggml_tensor * ggml_set_rows(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   struct ggml_tensor * c) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE_TENSOR(ctx, c);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16 ||
                       ggml_is_quantized(a->type),
                  "destination a %s must be F32, F16, BF16 or a quantized type", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16, "source b %s must be F32 or F16",
                  GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, c->type == GGML_TYPE_I64 || c->type == GGML_TYPE_I32,
                  "row indices c %s must be I64 or I32", GGMLX_SHAPE(c));
    GGMLX_REQUIRE(ctx, a->ne[0] == b->ne[0] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3],
                  "source b %s does not match destination a %s in dims 0, 2 and 3", GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, c->ne[0] == b->ne[1] && c->ne[3] == 1,
                  "indices c %s: need one index per row of b %s (c->ne[0] == b->ne[1]) and c->ne[3] == 1",
                  GGMLX_SHAPE(c), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, c->ne[1] > 0 && c->ne[2] > 0 && b->ne[2] % c->ne[1] == 0 && b->ne[3] % c->ne[2] == 0,
                  "indices c %s cannot be broadcast over b %s (b->ne[2] %% c->ne[1] and b->ne[3] %% c->ne[2] must be 0)",
                  GGMLX_SHAPE(c), GGMLX_SHAPE(b));

    struct ggml_tensor * result = ggmlx_new_result(ctx, a, true, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SET_ROWS;
    result->src[0] = b;
    result->src[1] = c;
    result->src[2] = a;
    return result;
}
