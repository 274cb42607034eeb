/*
 * ops-sort.c -- ARGSORT and TOP_K constructors (I32 indices along dim 0, as upstream).
 */
#include "ggml-impl.h"

/* I32 like a; op_params i32 [0] order */
struct ggml_tensor * ggml_argsort(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_sort_order order) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, order == GGML_SORT_ORDER_ASC || order == GGML_SORT_ORDER_DESC,
                  "unknown sort order %d (GGML_SORT_ORDER_ASC or GGML_SORT_ORDER_DESC)", (int) order);
    GGMLX_REQUIRE(ctx, a->ne[0] <= INT32_MAX, "rows too long for I32 indices: a %s", GGMLX_SHAPE(a));
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_I32, GGML_MAX_DIMS, a->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) order);
    result->op     = GGML_OP_ARGSORT;
    result->src[0] = a;
    return result;
}

/* I32 [k, ne1, ne2, ne3]: the indices of each row's k largest elements (ggmlx: largest first) */
struct ggml_tensor * ggml_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, k >= 1 && k <= a->ne[0], "k must be in 1 .. a ne0 (%lld), got %d", (long long) a->ne[0], k);
    GGMLX_REQUIRE(ctx, a->ne[0] <= INT32_MAX, "rows too long for I32 indices: a %s", GGMLX_SHAPE(a));
    const int64_t ne[GGML_MAX_DIMS] = { k, a->ne[1], a->ne[2], a->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_I32, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_TOP_K;
    result->src[0] = a;
    return result;
}

/* the indices of each row's k largest elements, largest first: a view of the first k columns of a
 * descending argsort, as upstream builds it (so the result is not contiguous) */
struct ggml_tensor * ggml_argsort_top_k(struct ggml_context * ctx, struct ggml_tensor * a, int k) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, k >= 1 && k <= a->ne[0], "k must be in 1 .. a ne0 (%lld), got %d", (long long) a->ne[0], k);
    struct ggml_tensor * sorted = ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC);
    if (sorted == NULL) {
        return NULL;
    }
    return ggml_view_4d(ctx, sorted, k, a->ne[1], a->ne[2], a->ne[3], sorted->nb[1], sorted->nb[2], sorted->nb[3], 0);
}
