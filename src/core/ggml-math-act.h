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

#endif
