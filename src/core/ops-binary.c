/*
 * ops-binary.c -- elementwise ADD, SUB, MUL, DIV with b broadcast over a.
 */
#include "ggml-impl.h"

static bool binary_type_ok(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/* Shared by the four ops; func is the public name, for messages. */
static struct ggml_tensor * binary_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                        enum ggml_op op, bool inplace, const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (ctx->failed) {
        ggmlx_error(func, "context already failed by an earlier op (see the first error)");
        return NULL;
    }
    if (a == NULL || b == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", a == NULL ? "a" : "b");
        return NULL;
    }
    if (!binary_type_ok(a->type) || !binary_type_ok(b->type)) {
        ggmlx_ctx_fail(ctx, func, "a %s and b %s: only F32, F16 and BF16 operands are supported",
                       GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    if (!ggml_can_repeat(b, a)) {
        ggmlx_ctx_fail(ctx, func, "b %s cannot be broadcast to a %s (each of a's dims must be a multiple of b's)",
                       GGMLX_SHAPE(b), GGMLX_SHAPE(a));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    result->op     = op;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_add(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_ADD, false, __func__);
}

struct ggml_tensor * ggml_add_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_ADD, true, __func__);
}

struct ggml_tensor * ggml_sub(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_SUB, false, __func__);
}

struct ggml_tensor * ggml_sub_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_SUB, true, __func__);
}

struct ggml_tensor * ggml_mul(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_MUL, false, __func__);
}

struct ggml_tensor * ggml_mul_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_MUL, true, __func__);
}

struct ggml_tensor * ggml_div(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_DIV, false, __func__);
}

struct ggml_tensor * ggml_div_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return binary_impl(ctx, a, b, GGML_OP_DIV, true, __func__);
}

/* a + b with the result in `type` (upstream's way of adding F32 updates to F16/BF16 or quantized weights) */
struct ggml_tensor * ggml_add_cast(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                   enum ggml_type type) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, ggml_is_quantized(a->type) || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16,
                  "a must be F16, BF16 or quantized (use ggml_add for F32), got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, binary_type_ok(b->type), "b must be F32, F16 or BF16, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ggmlx_type_is_valid(type) && ggml_blck_size(type) == 1,
                  "the result type %d must be a valid one-element type", (int) type);
    GGMLX_REQUIRE(ctx, b->ne[0] == a->ne[0] && ggml_can_repeat(b, a),
                  "b %s must have a's rows (ne0) and broadcast over a %s", GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, type, GGML_MAX_DIMS, a->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_ADD;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}
