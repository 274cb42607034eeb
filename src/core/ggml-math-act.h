/*
 * ggml-math-act.h -- activation functions (part of ggml-math.h; include that instead).
 *
 * All in single precision, as the kernels compute. Where the textbook formula cancels badly
 * (1 + tanh(y) or 1 + erf(y) for very negative y) an equivalent form without the cancellation is
 * used, so the negative tails keep their relative accuracy instead of collapsing to 0 early.
 */
#ifndef GGMLX_MATH_ACT_H
#define GGMLX_MATH_ACT_H

/* sqrt(2/pi), the scale inside the tanh approximation of GELU */
#define GGMLX_GELU_SQRT_2_OVER_PI 0.79788456080286535588f
#define GGMLX_GELU_COEF_A         0.044715f
/* 1/sqrt(2), for GELU through erf */
#define GGMLX_SQRT1_2             0.70710678118654752440f
/* the slope in the "quick" GELU, x * sigmoid(1.702 x) */
#define GGMLX_GELU_QUICK_COEF     1.702f

static inline GGMLX_HD float ggmlx_relu_f32(float x) {
    return x > 0.0f ? x : 0.0f;
}

static inline GGMLX_HD float ggmlx_abs_f32(float x) {
    return fabsf(x);
}

static inline GGMLX_HD float ggmlx_neg_f32(float x) {
    return -x;
}

static inline GGMLX_HD float ggmlx_tanh_f32(float x) {
    return tanhf(x);
}

static inline GGMLX_HD float ggmlx_exp_f32(float x) {
    return expf(x);
}

static inline GGMLX_HD float ggmlx_sqr_f32(float x) {
    return x * x;
}

static inline GGMLX_HD float ggmlx_sqrt_f32(float x) {
    return sqrtf(x);
}

/* Two branches so that exp never sees a large positive argument: no overflow, no inf/inf. */
static inline GGMLX_HD float ggmlx_sigmoid_f32(float x) {
    if (x >= 0.0f) {
        return 1.0f / (1.0f + expf(-x));
    }
    const float e = expf(x);
    return e / (1.0f + e);
}

static inline GGMLX_HD float ggmlx_silu_f32(float x) {
    return x * ggmlx_sigmoid_f32(x);
}

/*
 * 0.5 x (1 + tanh(y)) equals x * sigmoid(2y): the same value, without the cancellation of
 * 1 + tanh(y) near -1.
 */
static inline GGMLX_HD float ggmlx_gelu_f32(float x) {
    const float y = GGMLX_GELU_SQRT_2_OVER_PI * x * (1.0f + GGMLX_GELU_COEF_A * x * x);
    return x * ggmlx_sigmoid_f32(2.0f * y);
}

/* x * Phi(x); 1 + erf(-z) is erfc(z), which keeps the negative tail accurate */
static inline GGMLX_HD float ggmlx_gelu_erf_f32(float x) {
    return 0.5f * x * erfcf(-x * GGMLX_SQRT1_2);
}

static inline GGMLX_HD float ggmlx_gelu_quick_f32(float x) {
    return x * ggmlx_sigmoid_f32(GGMLX_GELU_QUICK_COEF * x);
}

/* ---- the rest of enum ggml_unary_op, and the ops with their own ggml_op (log, sin, cos) ------ */

static inline GGMLX_HD float ggmlx_sgn_f32(float x) {
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
}

static inline GGMLX_HD float ggmlx_step_f32(float x) {
    return x > 0.0f ? 1.0f : 0.0f;
}

/* exp(x) - 1 without the cancellation near 0 */
static inline GGMLX_HD float ggmlx_expm1_f32(float x) {
    return expm1f(x);
}

static inline GGMLX_HD float ggmlx_elu_f32(float x) {
    return x > 0.0f ? x : expm1f(x);
}

/*
 * min(1, max(0, (x + 3) / 6)) as upstream's fminf/fmaxf (NaN gives 0), written as comparisons so
 * that it compiles to min/max instructions rather than library calls.
 */
static inline GGMLX_HD float ggmlx_hardsigmoid_f32(float x) {
    const float y = (x + 3.0f) / 6.0f;
    const float z = y > 0.0f ? y : 0.0f;
    return z < 1.0f ? z : 1.0f;
}

static inline GGMLX_HD float ggmlx_hardswish_f32(float x) {
    return x * ggmlx_hardsigmoid_f32(x);
}

/* log(1 + e^x): x itself past 20 (as upstream), log1p for the rest so the negative tail is e^x */
static inline GGMLX_HD float ggmlx_softplus_f32(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

static inline GGMLX_HD float ggmlx_floor_f32(float x) {
    return floorf(x);
}

static inline GGMLX_HD float ggmlx_ceil_f32(float x) {
    return ceilf(x);
}

/* halfway cases away from zero, as roundf (and upstream) */
static inline GGMLX_HD float ggmlx_round_f32(float x) {
    return roundf(x);
}

static inline GGMLX_HD float ggmlx_trunc_f32(float x) {
    return truncf(x);
}

static inline GGMLX_HD float ggmlx_log_f32(float x) {
    return logf(x);
}

static inline GGMLX_HD float ggmlx_sin_f32(float x) {
    return sinf(x);
}

static inline GGMLX_HD float ggmlx_cos_f32(float x) {
    return cosf(x);
}

/* max(x, 0) + slope * min(x, 0) */
static inline GGMLX_HD float ggmlx_leaky_relu_f32(float x, float slope) {
    return (x > 0.0f ? x : 0.0f) + slope * (x < 0.0f ? x : 0.0f);
}

/*
 * max(min(x, hi), lo) in upstream's order and with its comparisons: with lo > hi the result is
 * lo, and NaN gives hi (or lo if that is larger).
 */
static inline GGMLX_HD float ggmlx_clamp_f32(float x, float lo, float hi) {
    const float m = x < hi ? x : hi;
    return m > lo ? m : lo;
}

/*
 * xIELU with the parameters as ggml_xielu stores them (alpha_n already beta + softplus(alpha_n),
 * alpha_p already softplus(alpha_p)).
 */
static inline GGMLX_HD float ggmlx_xielu_f32(float x, float alpha_n, float alpha_p, float beta, float eps) {
    if (x > 0.0f) {
        return alpha_p * x * x + beta * x;
    }
    return (expm1f(x < eps ? x : eps) - x) * alpha_n + beta * x;
}

/*
 * The gpt-oss SwiGLU: x clipped above at limit, the gate clipped to [-limit, limit] and shifted by
 * one: x * sigmoid(alpha x) * (g + 1).
 */
static inline GGMLX_HD float ggmlx_swiglu_oai_f32(float x, float g, float alpha, float limit) {
    const float xc = x < limit ? x : limit;
    const float gc = ggmlx_clamp_f32(g, -limit, limit);
    return xc * ggmlx_sigmoid_f32(alpha * xc) * (gc + 1.0f);
}

#endif
