/*
 * ggml-math.h -- per-element math shared by the CPU kernels and the CUDA kernels.
 *
 * Valid as C11 and as CUDA C++: every function is `static inline GGMLX_HD`, so the CPU tests
 * exercise the very code the GPU runs. Keep it free of libc calls that CUDA lacks on the
 * device (fine: expf, tanhf, erff, sqrtf, powf, logf, sinf, cosf, fabsf, floorf, fmaxf).
 *
 * This file holds the number formats; activations are in ggml-math-act.h, rotary embedding in
 * ggml-math-rope.h and the conversion, sort and generator rules in ggml-math-misc.h, all
 * included at the end.
 */
#ifndef GGMLX_MATH_H
#define GGMLX_MATH_H

#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__CUDACC__)
#    define GGMLX_HD __host__ __device__
#else
#    define GGMLX_HD
#endif

/* bit casts without aliasing trouble; memcpy of 4 bytes compiles to a move on both sides */
static inline GGMLX_HD uint32_t ggmlx_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline GGMLX_HD float ggmlx_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * binary16 -> binary32, exact. Subnormal halves are rebuilt by scaling the mantissa as a float
 * (2^-24 * m), which avoids a normalisation loop.
 */
static inline GGMLX_HD float ggmlx_fp16_to_fp32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t expo = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (expo == 0) {
        float mag = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
        return ggmlx_bits_f32(ggmlx_f32_bits(mag) | sign);
    }
    if (expo == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf, or NaN keeping its payload */
    } else {
        bits = sign | ((expo + 112u) << 23) | (mant << 13); /* rebias 15 -> 127 */
    }
    return ggmlx_bits_f32(bits);
}

/* binary32 -> binary16, round to nearest even; overflow gives inf, NaN stays a quiet NaN */
static inline GGMLX_HD uint16_t ggmlx_fp32_to_fp16(float f) {
    const uint32_t x    = ggmlx_f32_bits(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t absx = x & 0x7fffffffu;

    if (absx >= 0x7f800000u) { /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    }
    if (absx >= 0x477ff000u) { /* rounds to >= 65520: overflow */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (absx < 0x38800000u) { /* below 2^-14: subnormal half or zero */
        /* value in units of 2^-24, rounded to nearest even by the float adder itself */
        float mag = ggmlx_bits_f32(absx) * 16777216.0f; /* 2^24 */
        float r   = mag + 12582912.0f - 12582912.0f;     /* 1.5*2^23 rounds to an integer, ties to even */
        return (uint16_t)(sign | (uint16_t)r);
    }
    /* normal: rebias and round the 13 dropped bits to nearest even */
    uint32_t v    = absx - 0x38000000u; /* exponent 127 -> 15 */
    uint32_t lsb  = (v >> 13) & 1u;
    v += 0xfffu + lsb;
    return (uint16_t)(sign | (uint16_t)(v >> 13));
}

static inline GGMLX_HD float ggmlx_bf16_to_fp32(uint16_t b) {
    return ggmlx_bits_f32((uint32_t)b << 16);
}

/* binary32 -> bfloat16, round to nearest even; NaN stays a quiet NaN */
static inline GGMLX_HD uint16_t ggmlx_fp32_to_bf16(float f) {
    uint32_t x = ggmlx_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

#include "ggml-math-act.h"
#include "ggml-math-rope.h"
#include "ggml-math-misc.h"

#endif /* GGMLX_MATH_H */
