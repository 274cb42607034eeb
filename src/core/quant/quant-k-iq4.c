/*
 * quant-k-iq4.c -- IQ4_NL (32 values, one f16 scale) and IQ4_XS (256 values, an f16 super-scale and a 6-bit signed
 * scale per 32): each value is a 4-bit index into the 16-entry non-uniform codebook kvalues_iq4nl; within each 32
 * values, element j sits in the low nibble of byte j % 16 for j < 16 and in the high nibble for j >= 16.
 *
 * One search serves both, as upstream's: per 32 values, a scale from the largest magnitude, each value to its nearest
 * codebook entry, the least-squares scale, then (when asked) 15 more starting scales.
 */
#include "quant-k.h"
#include "quant-search.h"
#include "quant-tables.h"

#include "ggml-math.h"

#include <math.h>
#include <string.h>

#define IQ4_NTRY 7 /* the whole-rows quantizers try 2*7+1 starting scales per 32 values */

void ggmlx_dequantize_row_iq4_nl(const void * x, float * y, int64_t k) {
    const block_iq4_nl * b = x;
    for (int64_t i = 0; i < k / QK4_NL; i++, y += QK4_NL) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            y[j]              = d * (float) ggmlx_kvalues_iq4nl[b[i].qs[j] & 15];
            y[j + QK4_NL / 2] = d * (float) ggmlx_kvalues_iq4nl[b[i].qs[j] >> 4];
        }
    }
}

static int iq4_xs_level(const block_iq4_xs * b, int g) {
    const int lo = (b->scales_l[g / 2] >> (4 * (g % 2))) & 15;
    const int hi = (b->scales_h >> (2 * g)) & 3;
    return (lo | (hi << 4)) - 32;
}

void ggmlx_dequantize_row_iq4_xs(const void * x, float * y, int64_t k) {
    const block_iq4_xs * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int g = 0; g < QK_K / 32; g++, y += 32) {
            const float     dl = d * (float) iq4_xs_level(&b[i], g);
            const uint8_t * qs = b[i].qs + 16 * g;
            for (int j = 0; j < 16; j++) {
                y[j]      = dl * (float) ggmlx_kvalues_iq4nl[qs[j] & 15];
                y[j + 16] = dl * (float) ggmlx_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* the index of the codebook entry nearest to v (ascending table; a tie goes to the upper entry) */
static int nearest_index(const int8_t * values, float v) {
    if (v <= (float) values[0]) {
        return 0;
    }
    if (v >= (float) values[15]) {
        return 15;
    }
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (v < (float) values[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return v - (float) values[hi - 1] < (float) values[hi] - v ? hi - 1 : hi;
}

/*
 * The scale of 32 values xb with weights w; Lb gets the indices found along the way. ntry < 0 (the reference path)
 * keeps the least-squares scale of the first mapping; ntry > 0 also tries the starting scales (itry + values[0]) /
 * max for itry in [-ntry, ntry] and keeps the best. A group below GGMLX_GROUP_MAX_EPS gets 0 and Lb untouched.
 */
static float group_scale(const float * xb, const float * w, uint8_t * Lb, int ntry) {
    const int8_t * values = ggmlx_kvalues_iq4nl;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++) {
        if (fabsf(xb[j]) > amax) {
            amax = fabsf(xb[j]);
            max  = xb[j];
        }
    }
    if (amax < GGMLX_GROUP_MAX_EPS) {
        return 0.0f;
    }
    float d  = ntry > 0 ? -max / (float) values[0] : max / (float) values[0];
    float id = 1.0f / d;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; j++) {
        const int l = nearest_index(values, id * xb[j]);
        Lb[j] = (uint8_t) l;
        const float q = (float) values[l];
        sumqx += w[j] * q * xb[j];
        sumq2 += w[j] * q * q;
    }
    d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; itry++) {
        id = (float) (itry + values[0]) / max;
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float q = (float) values[nearest_index(values, id * xb[j])];
            sumqx += w[j] * q * xb[j];
            sumq2 += w[j] * q * q;
        }
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d    = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* weights: qw * sqrt(sigma2 + x^2) with sigma2 = 2 * mean x^2 over the n values given, or x^2 without qw */
static void group_weights(const float * xb, const float * qw, float sigma2, float * w) {
    for (int j = 0; j < 32; j++) {
        w[j] = qw != NULL ? qw[j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
    }
}

static float mean2x2(const float * x, int n) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
        s += x[j] * x[j];
    }
    return s * (2.0f / (float) n);
}

static void pack_nibbles(const uint8_t * L, uint8_t * qs) {
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t) (L[j] | (L[j + 16] << 4));
    }
}

/*
 * L carries over from the previous block: the reference path (ntry < 0) leaves an all-zero block's indices as the
 * block before it had them, as upstream's does (the callers start it at 8, the entry nearest 0, where upstream's is
 * uninitialized). With ntry > 0 every index is derived again from the final scale.
 */
static void iq4_nl_block(const float * x, block_iq4_nl * b, const float * qw, int ntry, uint8_t * L) {
    float w[32];
    group_weights(x, qw, qw != NULL ? mean2x2(x, 32) : 0.0f, w);
    const float d = group_scale(x, w, L, ntry);
    b->d = ggmlx_fp32_to_fp16(d);
    if (ntry > 0) {
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        for (int j = 0; j < 32; j++) {
            L[j] = (uint8_t) nearest_index(ggmlx_kvalues_iq4nl, id * x[j]);
        }
    }
    pack_nibbles(L, b->qs);
}

static void iq4_xs_block(const float * x, block_iq4_xs * b, const float * qw) {
    float   w[32], scales[QK_K / 32];
    uint8_t L[QK_K];
    const float sigma2 = qw != NULL ? mean2x2(x, QK_K) : 0.0f;
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int g = 0; g < QK_K / 32; g++) {
        group_weights(x + 32 * g, qw != NULL ? qw + 32 * g : NULL, sigma2, w);
        scales[g] = group_scale(x + 32 * g, w, L + 32 * g, IQ4_NTRY);
        if (fabsf(scales[g]) > amax_scale) {
            amax_scale = fabsf(scales[g]);
            max_scale  = scales[g];
        }
    }
    /* an all-zero super-block stores d = -0.0 (0x8000), as upstream's -max_scale / 32 gives */
    const float d  = -max_scale / 32.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b->d        = ggmlx_fp32_to_fp16(d);
    b->scales_h = 0;
    for (int g = 0; g < QK_K / 32; g++) {
        int l = ggmlx_nearest_int(id * scales[g]);
        l = l < -32 ? -32 : (l > 31 ? 31 : l);
        const float dl  = d * (float) l;
        const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
        for (int j = 0; j < 32; j++) {
            L[32 * g + j] = (uint8_t) nearest_index(ggmlx_kvalues_iq4nl, idl * x[32 * g + j]);
        }
        l += 32;
        if (g % 2 == 0) {
            b->scales_l[g / 2] = (uint8_t) (l & 15);
        } else {
            b->scales_l[g / 2] |= (uint8_t) ((l & 15) << 4);
        }
        b->scales_h |= (uint16_t) ((l >> 4) << (2 * g));
        pack_nibbles(L + 32 * g, b->qs + 16 * g);
    }
}

void ggmlx_quantize_row_iq4_nl_ref(const float * x, void * y, int64_t k) {
    block_iq4_nl * b = y;
    uint8_t        L[32];
    memset(L, 8, sizeof L);
    for (int64_t i = 0; i < k / QK4_NL; i++) {
        iq4_nl_block(x + i * QK4_NL, &b[i], NULL, -1, L);
    }
}

void ggmlx_quantize_row_iq4_xs_ref(const float * x, void * y, int64_t k) {
    block_iq4_xs * b = y;
    for (int64_t i = 0; i < k / QK_K; i++) {
        iq4_xs_block(x + i * QK_K, &b[i], NULL);
    }
}

size_t ggmlx_quantize_iq4_nl(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t  nb = n_per_row / QK4_NL;
    block_iq4_nl * b  = dst;
    uint8_t        L[32];
    memset(L, 8, sizeof L);
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            iq4_nl_block(src + r * n_per_row + i * QK4_NL, b, imatrix != NULL ? imatrix + i * QK4_NL : NULL, IQ4_NTRY,
                         L);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq4_nl);
}

size_t ggmlx_quantize_iq4_xs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t  nb = n_per_row / QK_K;
    block_iq4_xs * b  = dst;
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            iq4_xs_block(src + r * n_per_row + i * QK_K, b, imatrix != NULL ? imatrix + i * QK_K : NULL);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq4_xs);
}
