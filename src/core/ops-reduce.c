/*
 * ops-reduce.c -- SUM, SUM_ROWS, MEAN, ARGMAX constructors.
 */
#include "ggml-impl.h"

static bool float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/* one element of a's type, as upstream */
struct ggml_tensor * ggml_sum(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, float_type(a->type), "a %s: only F32, F16 and BF16 are supported", GGMLX_SHAPE(a));
    const int64_t ne[1] = { 1 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, 1, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SUM;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_sum_rows(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, float_type(a->type), "a %s: only F32, F16 and BF16 are supported", GGMLX_SHAPE(a));
    const int64_t ne[GGML_MAX_DIMS] = { 1, a->ne[1], a->ne[2], a->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SUM_ROWS;
    result->src[0] = a;
    return result;
}

/* F32 result, as upstream */
struct ggml_tensor * ggml_mean(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a %s: only F32 is supported", GGMLX_SHAPE(a));
    const int64_t ne[GGML_MAX_DIMS] = { 1, a->ne[1], a->ne[2], a->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_MEAN;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_argmax(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a %s: only F32 is supported", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[2] == 1 && a->ne[3] == 1, "a %s must be a matrix", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[0] > 0 || a->ne[1] == 0, "a %s has empty rows: no maximum to find", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[0] <= INT32_MAX, "a %s: rows too long for I32 indices", GGMLX_SHAPE(a));
    const int64_t ne[1] = { a->ne[1] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_I32, 1, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_ARGMAX;
    result->src[0] = a;
    return result;
}
