/*
 * ops-unary.c -- UNARY (by enum ggml_unary_op), SQR, SQRT and SCALE constructors.
 */
#include "ggml-impl.h"

static bool float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/* The unary ops the CPU kernel computes; graphs with any other would fail only at compute time. */
static bool unary_op_implemented(enum ggml_unary_op op) {
    switch (op) {
    case GGML_UNARY_OP_ABS:
    case GGML_UNARY_OP_NEG:
    case GGML_UNARY_OP_TANH:
    case GGML_UNARY_OP_RELU:
    case GGML_UNARY_OP_SIGMOID:
    case GGML_UNARY_OP_GELU:
    case GGML_UNARY_OP_GELU_ERF:
    case GGML_UNARY_OP_SILU:
    case GGML_UNARY_OP_EXP:
        return true;
    default:
        return false;
    }
}

/* Common checks and result of the single-operand elementwise ops. */
static struct ggml_tensor * elementwise_impl(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_op op,
                                             bool inplace, const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (ctx->failed) {
        ggmlx_error(func, "context already failed by an earlier op (see the first error)");
        return NULL;
    }
    if (a == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument 'a' is NULL");
        return NULL;
    }
    if (!float_type(a->type)) {
        ggmlx_ctx_fail(ctx, func, "a %s: only F32, F16 and BF16 are supported", GGMLX_SHAPE(a));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    result->op     = op;
    result->src[0] = a;
    return result;
}

static struct ggml_tensor * unary_impl(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_unary_op op,
                                       bool inplace, const char * func) {
    if (ctx != NULL && !ctx->failed && !unary_op_implemented(op)) {
        const char * name = (int) op >= 0 && op < GGML_UNARY_OP_COUNT ? ggml_unary_op_name(op) : "(out of range)";
        ggmlx_ctx_fail(ctx, func, "unary op %d (%s) is not implemented in ggmlx yet", (int) op, name ? name : "?");
        return NULL;
    }
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_UNARY, inplace, func);
    if (result != NULL) {
        ggmlx_set_op_params_i32(result, 0, (int32_t) op);
    }
    return result;
}

struct ggml_tensor * ggml_unary(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_unary_op op) {
    return unary_impl(ctx, a, op, false, __func__);
}

struct ggml_tensor * ggml_unary_inplace(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_unary_op op) {
    return unary_impl(ctx, a, op, true, __func__);
}

#define GGMLX_DEFINE_UNARY(name, uop)                                                            \
    struct ggml_tensor * ggml_##name(struct ggml_context * ctx, struct ggml_tensor * a) {         \
        return unary_impl(ctx, a, uop, false, __func__);                                          \
    }                                                                                             \
    struct ggml_tensor * ggml_##name##_inplace(struct ggml_context * ctx, struct ggml_tensor * a) { \
        return unary_impl(ctx, a, uop, true, __func__);                                           \
    }

GGMLX_DEFINE_UNARY(abs,      GGML_UNARY_OP_ABS)
GGMLX_DEFINE_UNARY(neg,      GGML_UNARY_OP_NEG)
GGMLX_DEFINE_UNARY(tanh,     GGML_UNARY_OP_TANH)
GGMLX_DEFINE_UNARY(relu,     GGML_UNARY_OP_RELU)
GGMLX_DEFINE_UNARY(sigmoid,  GGML_UNARY_OP_SIGMOID)
GGMLX_DEFINE_UNARY(gelu,     GGML_UNARY_OP_GELU)
GGMLX_DEFINE_UNARY(gelu_erf, GGML_UNARY_OP_GELU_ERF)
GGMLX_DEFINE_UNARY(silu,     GGML_UNARY_OP_SILU)
GGMLX_DEFINE_UNARY(exp,      GGML_UNARY_OP_EXP)

#undef GGMLX_DEFINE_UNARY

struct ggml_tensor * ggml_sqr(struct ggml_context * ctx, struct ggml_tensor * a) {
    return elementwise_impl(ctx, a, GGML_OP_SQR, false, __func__);
}

struct ggml_tensor * ggml_sqr_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return elementwise_impl(ctx, a, GGML_OP_SQR, true, __func__);
}

struct ggml_tensor * ggml_sqrt(struct ggml_context * ctx, struct ggml_tensor * a) {
    return elementwise_impl(ctx, a, GGML_OP_SQRT, false, __func__);
}

struct ggml_tensor * ggml_sqrt_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    return elementwise_impl(ctx, a, GGML_OP_SQRT, true, __func__);
}

/* op_params: [0] scale, [1] bias (always 0 here), the layout of upstream's ggml_scale_bias */
static struct ggml_tensor * scale_impl(struct ggml_context * ctx, struct ggml_tensor * a, float s, bool inplace,
                                       const char * func) {
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_SCALE, inplace, func);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 0, s);
        ggmlx_set_op_params_f32(result, 1, 0.0f);
    }
    return result;
}

struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return scale_impl(ctx, a, s, false, __func__);
}

struct ggml_tensor * ggml_scale_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return scale_impl(ctx, a, s, true, __func__);
}
