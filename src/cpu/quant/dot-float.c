/*
 * dot-float.c -- the F32, F16 and BF16 entries of the CPU type traits: their dot products (both
 * rows of the same type, as upstream's vec_dot_type for these is the type itself) and the
 * conversions from F32. The sums are kept in double: these serve tests and tools, not the
 * matrix-multiply paths, which have their own kernels (ops-matmul.c).
 */
#include "qdot.h"

#include "ggml-math.h"

#include <string.h>

static void vec_dot_f32(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const float * restrict x   = vx;
    const float * restrict y   = vy;
    double                 acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += (double)x[i] * (double)y[i];
    }
    *s = (float)acc;
}

static void vec_dot_f16(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const uint16_t * restrict x   = vx;
    const uint16_t * restrict y   = vy;
    double                    acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += (double)ggmlx_fp16_to_fp32(x[i]) * (double)ggmlx_fp16_to_fp32(y[i]);
    }
    *s = (float)acc;
}

static void vec_dot_bf16(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const uint16_t * restrict x   = vx;
    const uint16_t * restrict y   = vy;
    double                    acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += (double)ggmlx_bf16_to_fp32(x[i]) * (double)ggmlx_bf16_to_fp32(y[i]);
    }
    *s = (float)acc;
}

static void from_f32_to_f32(const float * restrict x, void * restrict y, int64_t k) {
    memcpy(y, x, (size_t)k * sizeof(float));
}

static void from_f32_to_f16(const float * restrict x, void * restrict vy, int64_t k) {
    uint16_t * y = vy;
    for (int64_t i = 0; i < k; i++) {
        y[i] = ggmlx_fp32_to_fp16(x[i]);
    }
}

static void from_f32_to_bf16(const float * restrict x, void * restrict vy, int64_t k) {
    uint16_t * y = vy;
    for (int64_t i = 0; i < k; i++) {
        y[i] = ggmlx_fp32_to_bf16(x[i]);
    }
}

/*
 * Truncation toward zero, as upstream's C cast; a value outside int32_t (undefined behaviour for
 * the cast) saturates, and NaN gives 0.
 */
static void from_f32_to_i32(const float * restrict x, void * restrict vy, int64_t k) {
    int32_t * y = vy;
    for (int64_t i = 0; i < k; i++) {
        const float v = x[i];
        y[i] = v != v ? 0 : v >= 2147483648.0f ? INT32_MAX : v < -2147483648.0f ? INT32_MIN : (int32_t)v;
    }
}

void ggmlx_qdot_fill_float(ggmlx_qdot_table t) {
    t[GGML_TYPE_F32]  = (struct ggml_type_traits_cpu){ from_f32_to_f32, vec_dot_f32, GGML_TYPE_F32, 1 };
    t[GGML_TYPE_F16]  = (struct ggml_type_traits_cpu){ from_f32_to_f16, vec_dot_f16, GGML_TYPE_F16, 1 };
    t[GGML_TYPE_BF16] = (struct ggml_type_traits_cpu){ from_f32_to_bf16, vec_dot_bf16, GGML_TYPE_BF16, 1 };
    t[GGML_TYPE_I32].from_float = from_f32_to_i32;
}
