/*
 * act-quantize.c -- the portable activation quantizers: a row of floats to Q8_0, Q8_1 or Q8_K,
 * the types the dot products take as their second operand. They follow the reference
 * quantizers step by step (same operations in the same order, in float), so they give the
 * same bytes; every SIMD variant is checked against them.
 */
#include "qdot.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"

#include <math.h>
#include <string.h>

/*
 * Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 leaves the integer in the low
 * mantissa bits (the reference quantizers round this way, not with roundf).
 */
static inline int q8k_nearest_int(float v) {
    const float biased = v + 12582912.0f;
    uint32_t    bits;
    memcpy(&bits, &biased, sizeof(bits));
    return (int)(bits & 0x007fffffu) - 0x00400000;
}

/*
 * A rounded value (in [-127, 127] for finite input) as a quant. NaN, which only non-finite input
 * makes (inf * 0, or a NaN element), becomes -128: what the SIMD conversions give (their integer
 * "indefinite" value saturated to a byte), so that every variant writes the same bytes, where a
 * plain C cast would be undefined.
 */
static inline int8_t q8_of(float r) { return r != r ? (int8_t)-128 : (int8_t)r; }

void ggmlx_quantize_row_q8_0_cpu(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_0 * restrict y  = vy;
    const int64_t         nb = k / QK8_0;

    for (int64_t i = 0; i < nb; i++) {
        const float * xb   = x + i * QK8_0;
        float         amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) {
            const float a = fabsf(xb[j]);
            amax          = a > amax ? a : amax;
        }
        const float d  = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d         = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) {
            y[i].qs[j] = q8_of(roundf(xb[j] * id));
        }
    }
}

void ggmlx_quantize_row_q8_1_cpu(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_1 * restrict y  = vy;
    const int64_t         nb = k / QK8_1;

    for (int64_t i = 0; i < nb; i++) {
        const float * xb   = x + i * QK8_1;
        float         amax = 0.0f;
        for (int j = 0; j < QK8_1; j++) {
            const float a = fabsf(xb[j]);
            amax          = a > amax ? a : amax;
        }
        const float d   = amax / 127.0f;
        const float id  = d != 0.0f ? 1.0f / d : 0.0f;
        int         sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[i].qs[j] = q8_of(roundf(xb[j] * id));
            sum += y[i].qs[j];
        }
        y[i].d = ggmlx_fp32_to_fp16(d);
        y[i].s = ggmlx_fp32_to_fp16((float)sum * d);
    }
}

void ggmlx_quantize_row_q8_K_cpu(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_K * restrict y  = vy;
    const int64_t         nb = k / QK_K;

    for (int64_t i = 0; i < nb; i++) {
        const float * xb   = x + i * QK_K;
        float         max  = 0.0f; /* the signed value of largest magnitude, the first one on ties */
        float         amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            const float a = fabsf(xb[j]);
            if (a > amax) {
                amax = a;
                max  = xb[j];
            }
        }
        if (amax == 0.0f) {
            /* the reference leaves bsums as they were; zero is what the zero quants sum to */
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const float p = iscale * xb[j];
            const int   v = q8k_nearest_int(p);
            y[i].qs[j]    = p != p ? (int8_t)-128 : (int8_t)(v < 127 ? v : 127); /* NaN: as q8_of */
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) {
                sum += y[i].qs[16 * g + j];
            }
            y[i].bsums[g] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}
