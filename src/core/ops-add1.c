/*
 * ops-add1.c -- ADD1: a + b with b a single element (upstream's ggml_add1). The result has a's
 * shape and type; b may be any float type. Upstream also asks a to be padded 1-d (rows packed);
 * the CPU kernel here walks any strides, so a may be any view.
 */
#include "ggml-impl.h"

static bool add1_type_ok(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

static struct ggml_tensor * add1_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      bool inplace, const char * func) {
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
    if (!add1_type_ok(a->type) || !add1_type_ok(b->type)) {
        ggmlx_ctx_fail(ctx, func, "a %s and b %s: only F32, F16 and BF16 operands are supported",
                       GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    if (!ggml_is_scalar(b)) {
        ggmlx_ctx_fail(ctx, func, "b %s must be a scalar (one element)", GGMLX_SHAPE(b));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_ADD1;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_add1(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return add1_impl(ctx, a, b, false, __func__);
}

struct ggml_tensor * ggml_add1_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return add1_impl(ctx, a, b, true, __func__);
}
