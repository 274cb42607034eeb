/*
 * ggml-math-misc.h -- per-element rules of the conversion, sort and generator ops (part of
 * ggml-math.h; include that instead). The CPU and CUDA kernels both call these, so a value
 * converted, an order decided or an embedding entry computed is the same on either backend.
 */
#ifndef GGMLX_MATH_MISC_H
#define GGMLX_MATH_MISC_H

/*
 * float -> I32 without undefined behaviour: truncation toward zero, saturating, NaN -> 0. On the
 * GPU that is exactly what cvt.rzi.s32.f32 does in one instruction; the branches spelled out
 * cost the copy kernel registers it then spills.
 */
static inline GGMLX_HD int32_t ggmlx_f32_to_i32_sat(float f) {
#if defined(__CUDA_ARCH__)
    return __float2int_rz(f);
#else
    if (!(f == f)) {
        return 0;
    }
    if (f >= 2147483648.0f) {
        return 2147483647;
    }
    if (f <= -2147483648.0f) {
        return -2147483647 - 1;
    }
    return (int32_t) f;
#endif
}

/*
 * A 32-bit key whose unsigned order is the ascending order of v (desc: the descending one):
 * sign-magnitude flipped into two's-complement order, NaN the largest, -0 equal to +0. Ties are
 * broken by index by the callers, which makes every sort stable and the same on both backends.
 */
static inline GGMLX_HD uint32_t ggmlx_sort_key(float v, int desc) {
    uint32_t u;
    if (!(v == v)) {
        u = 0xFFFFFFFFu;
    } else if (v == 0.0f) {
        u = 0x80000000u;
    } else {
        u = ggmlx_f32_bits(v);
        u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    }
    return desc ? ~u : u;
}

/*
 * A float product that is rounded before anything else happens to it: nvcc would otherwise fuse
 * it with a following add into one fma (rounded once), and the GPU would differ from the CPU,
 * which rounds twice.
 */
#if defined(__CUDA_ARCH__)
#    define GGMLX_MUL_RN(a, b) __fmul_rn((a), (b))
#else
#    define GGMLX_MUL_RN(a, b) ((a) * (b))
#endif

/* element i of arange: in float, as upstream computes it */
static inline GGMLX_HD float ggmlx_arange_f32(float start, float step, int64_t i) {
    return start + GGMLX_MUL_RN(step, (float) i);
}

/*
 * Element i of a timestep embedding row for timestep t: [cos(t f_0) .. cos(t f_{h-1}),
 * sin(t f_0) .. sin(t f_{h-1}) (, 0 when dim is odd)] with h = dim / 2, f_j = exp(-lmax j / h)
 * and lmax = log(max_period). In double: t f_j reaches thousands of radians, where a float
 * argument is already off in the fourth digit.
 */
static inline GGMLX_HD float ggmlx_timestep_embedding_f32(float t, int64_t i, int64_t dim, double lmax) {
    const int64_t half = dim / 2;
    if (i >= 2 * half) {
        return 0.0f;
    }
    const int64_t j   = i < half ? i : i - half;
    const double  arg = (double) t * exp(-lmax * (double) j / (double) half);
    return (float) (i < half ? cos(arg) : sin(arg));
}

#endif
