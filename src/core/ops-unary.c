/*
 * ops-unary.c -- UNARY (by enum ggml_unary_op), SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP and
 * LEAKY_RELU constructors.
 */
#include "ggml-impl.h"
#include "ggml-math.h"

static bool float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/*
 * The unary ops ggml_unary accepts: every one the CPU kernel computes except XIELU, whose four
 * parameters only ggml_xielu sets (through ggml_unary they would all be 0).
 */
static bool unary_op_implemented(enum ggml_unary_op op) {
    return (int) op >= 0 && op < GGML_UNARY_OP_COUNT && op != GGML_UNARY_OP_XIELU;
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
        if (op == GGML_UNARY_OP_XIELU) {
            ggmlx_ctx_fail(ctx, func, "unary op XIELU is not implemented through %s: it needs the parameters that "
                           "ggml_xielu sets", func);
        } else {
            ggmlx_ctx_fail(ctx, func, "unary op %d (%s) is not implemented in ggmlx yet", (int) op, name ? name : "?");
        }
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
GGMLX_DEFINE_UNARY(sgn,        GGML_UNARY_OP_SGN)
GGMLX_DEFINE_UNARY(step,       GGML_UNARY_OP_STEP)
GGMLX_DEFINE_UNARY(elu,        GGML_UNARY_OP_ELU)
GGMLX_DEFINE_UNARY(gelu_quick, GGML_UNARY_OP_GELU_QUICK)
GGMLX_DEFINE_UNARY(expm1,      GGML_UNARY_OP_EXPM1)
GGMLX_DEFINE_UNARY(softplus,   GGML_UNARY_OP_SOFTPLUS)
GGMLX_DEFINE_UNARY(floor,      GGML_UNARY_OP_FLOOR)
GGMLX_DEFINE_UNARY(ceil,       GGML_UNARY_OP_CEIL)
GGMLX_DEFINE_UNARY(round,      GGML_UNARY_OP_ROUND)
GGMLX_DEFINE_UNARY(trunc,      GGML_UNARY_OP_TRUNC)

#undef GGMLX_DEFINE_UNARY

/* upstream has no in-place forms of these two */
struct ggml_tensor * ggml_hardswish(struct ggml_context * ctx, struct ggml_tensor * a) {
    return unary_impl(ctx, a, GGML_UNARY_OP_HARDSWISH, false, __func__);
}

struct ggml_tensor * ggml_hardsigmoid(struct ggml_context * ctx, struct ggml_tensor * a) {
    return unary_impl(ctx, a, GGML_UNARY_OP_HARDSIGMOID, false, __func__);
}

/*
 * op_params as upstream: [0] GGML_UNARY_OP_XIELU, then floats [1] beta + softplus(alpha_n),
 * [2] softplus(alpha_p), [3] beta, [4] eps.
 */
struct ggml_tensor * ggml_xielu(struct ggml_context * ctx, struct ggml_tensor * a, float alpha_n, float alpha_p,
                                float beta, float eps) {
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_UNARY, false, __func__);
    if (result != NULL) {
        ggmlx_set_op_params_i32(result, 0, (int32_t) GGML_UNARY_OP_XIELU);
        ggmlx_set_op_params_f32(result, 1, beta + ggmlx_softplus_f32(alpha_n));
        ggmlx_set_op_params_f32(result, 2, ggmlx_softplus_f32(alpha_p));
        ggmlx_set_op_params_f32(result, 3, beta);
        ggmlx_set_op_params_f32(result, 4, eps);
    }
    return result;
}

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

#define GGMLX_DEFINE_ELEMENTWISE(name, gop)                                                      \
    struct ggml_tensor * ggml_##name(struct ggml_context * ctx, struct ggml_tensor * a) {         \
        return elementwise_impl(ctx, a, gop, false, __func__);                                    \
    }                                                                                             \
    struct ggml_tensor * ggml_##name##_inplace(struct ggml_context * ctx, struct ggml_tensor * a) { \
        return elementwise_impl(ctx, a, gop, true, __func__);                                     \
    }

GGMLX_DEFINE_ELEMENTWISE(log, GGML_OP_LOG)
GGMLX_DEFINE_ELEMENTWISE(sin, GGML_OP_SIN)
GGMLX_DEFINE_ELEMENTWISE(cos, GGML_OP_COS)

#undef GGMLX_DEFINE_ELEMENTWISE

/* op_params: [0] scale, [1] bias (0 for ggml_scale), the layout of upstream's ggml_scale_bias */
static struct ggml_tensor * scale_impl(struct ggml_context * ctx, struct ggml_tensor * a, float s, float b,
                                       bool inplace, const char * func) {
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_SCALE, inplace, func);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 0, s);
        ggmlx_set_op_params_f32(result, 1, b);
    }
    return result;
}

struct ggml_tensor * ggml_scale(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return scale_impl(ctx, a, s, 0.0f, false, __func__);
}

struct ggml_tensor * ggml_scale_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s) {
    return scale_impl(ctx, a, s, 0.0f, true, __func__);
}

struct ggml_tensor * ggml_scale_bias(struct ggml_context * ctx, struct ggml_tensor * a, float s, float b) {
    return scale_impl(ctx, a, s, b, false, __func__);
}

struct ggml_tensor * ggml_scale_bias_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float s, float b) {
    return scale_impl(ctx, a, s, b, true, __func__);
}

/*
 * op_params: [0] min, [1] max (floats). As upstream, the result is a view of a: clamp always
 * works in place. min > max is not an error; every element then becomes min, as upstream.
 */
struct ggml_tensor * ggml_clamp(struct ggml_context * ctx, struct ggml_tensor * a, float min, float max) {
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_CLAMP, true, __func__);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 0, min);
        ggmlx_set_op_params_f32(result, 1, max);
    }
    return result;
}

/* op_params: [0] negative_slope (float) */
struct ggml_tensor * ggml_leaky_relu(struct ggml_context * ctx, struct ggml_tensor * a, float negative_slope,
                                     bool inplace) {
    struct ggml_tensor * result = elementwise_impl(ctx, a, GGML_OP_LEAKY_RELU, inplace, __func__);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 0, negative_slope);
    }
    return result;
}
