/*
 * quant-k45.c -- Q4_K and Q5_K: super-blocks of 256 values in 8 sub-blocks of 32, y = d*sc*q - dmin*m with a 6-bit
 * scale sc and a 6-bit minimum m per sub-block, packed 8+8 into 12 bytes (pack_scale_min / scale_min below). Within
 * each 64 values the first 32 sit in the low nibbles of 32 bytes and the next 32 in the high nibbles; Q5_K keeps the
 * fifth bit of sub-block s in bit s of qh[l].
 *
 * Quantizing takes three steps, as upstream's: fit (scale, min) per sub-block, quantize those 8 scales and 8 minimums
 * to 6 bits, then requantize every value against the rounded (f16) super-scales.
 */
#include "quant-k.h"
#include "quant-search.h"

#include "ggml-math.h"

#include <math.h>
#include <string.h>

/* sub-block j's 6-bit scale and minimum: j < 4 in the low 6 bits of bytes j and j+4; j >= 4 split into the nibbles
 * of byte j+4 and the top 2 bits of bytes j-4 (scale) and j (minimum) */
static void scale_min(int j, const uint8_t * q, uint8_t * sc, uint8_t * m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m  = q[j + 4] & 63;
    } else {
        *sc = (uint8_t) ((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
        *m  = (uint8_t) ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

static void pack_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t * q) {
    if (j < 4) {
        q[j]     = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = (uint8_t) ((ls & 15) | ((lm & 15) << 4));
        q[j - 4] |= (uint8_t) ((ls >> 4) << 6);
        q[j] |= (uint8_t) ((lm >> 4) << 6);
    }
}

static inline int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

/* ---- dequantization ---------------------------------------------------------------------- */

void ggmlx_dequantize_row_q4_K(const void * x, float * y, int64_t k) {
    const block_q4_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float    d    = ggmlx_fp16_to_fp32(b[i].d);
        const float    dmin = ggmlx_fp16_to_fp32(b[i].dmin);
        const uint8_t * q   = b[i].qs;
        for (int c = 0; c < QK_K / 64; c++, q += 32) {
            uint8_t sc, m;
            scale_min(2 * c, b[i].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = dmin * (float) m;
            scale_min(2 * c + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = dmin * (float) m;
            for (int l = 0; l < 32; l++) {
                *y++ = d1 * (float) (q[l] & 15) - m1;
            }
            for (int l = 0; l < 32; l++) {
                *y++ = d2 * (float) (q[l] >> 4) - m2;
            }
        }
    }
}

void ggmlx_dequantize_row_q5_K(const void * x, float * y, int64_t k) {
    const block_q5_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float    d    = ggmlx_fp16_to_fp32(b[i].d);
        const float    dmin = ggmlx_fp16_to_fp32(b[i].dmin);
        const uint8_t * ql  = b[i].qs;
        const uint8_t * qh  = b[i].qh;
        for (int c = 0; c < QK_K / 64; c++, ql += 32) {
            uint8_t sc, m;
            scale_min(2 * c, b[i].scales, &sc, &m);
            const float d1 = d * (float) sc, m1 = dmin * (float) m;
            scale_min(2 * c + 1, b[i].scales, &sc, &m);
            const float d2 = d * (float) sc, m2 = dmin * (float) m;
            for (int l = 0; l < 32; l++) {
                const int q = (ql[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4);
                *y++ = d1 * (float) q - m1;
            }
            for (int l = 0; l < 32; l++) {
                const int q = (ql[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4);
                *y++ = d2 * (float) q - m2;
            }
        }
    }
}

/* ---- quantization ------------------------------------------------------------------------ */

/* The 6-bit levels of the 8 fitted scales and minimums against their maxima (reference path); the (uint8_t)
 * conversion before the clamp is upstream's, it maps a slightly negative fit to 63. */
static void scales_to_6bit(const float * scales, const float * mins, float max_scale, float max_min,
                           uint8_t * packed, ggmlx_half * d, ggmlx_half * dmin) {
    const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    const float inv_min   = max_min > 0.0f ? 63.0f / max_min : 0.0f;
    memset(packed, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t ls = (uint8_t) ggmlx_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t) ggmlx_nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        pack_scale_min(j, ls, lm, packed);
    }
    *d    = ggmlx_fp32_to_fp16(max_scale / 63.0f);
    *dmin = ggmlx_fp32_to_fp16(max_min / 63.0f);
}

/* levels against the stored super-scales; a sub-block whose scale rounds to 0 keeps its fitted levels */
static void requantize(const float * x, const uint8_t * packed, ggmlx_half hd, ggmlx_half hdmin, int nmax,
                       uint8_t * L) {
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, m;
        scale_min(j, packed, &sc, &m);
        const float d = ggmlx_fp16_to_fp32(hd) * (float) sc;
        if (d == 0.0f) {
            continue;
        }
        const float dm = ggmlx_fp16_to_fp32(hdmin) * (float) m;
        for (int l = 0; l < 32; l++) {
            L[32 * j + l] = (uint8_t) clamp_int(ggmlx_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
        }
    }
}

/* reference fit of one super-block: weights av_x + |x| with av_x the sub-block's RMS */
static void fit_ref(const float * x, int nmax, float rmin, float rdelta, int nstep, uint8_t * L, uint8_t * packed,
                    ggmlx_half * d, ggmlx_half * dmin) {
    float   scales[QK_K / 32], mins[QK_K / 32], weights[32];
    uint8_t Laux[32];
    float   max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < QK_K / 32; j++) {
        const float * xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++) {
            sum_x2 += xs[l] * xs[l];
        }
        const float av_x = sqrtf(sum_x2 / 32.0f);
        for (int l = 0; l < 32; l++) {
            weights[l] = av_x + fabsf(xs[l]);
        }
        scales[j] = ggmlx_make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep,
                                           false);
        if (scales[j] > max_scale) {
            max_scale = scales[j];
        }
        if (mins[j] > max_min) {
            max_min = mins[j];
        }
    }
    scales_to_6bit(scales, mins, max_scale, max_min, packed, d, dmin);
    requantize(x, packed, *d, *dmin, nmax, L);
}

/* importance-weighted fit: weights qw * sqrt(sigma2 + x^2), sigma2 = 2 * mean x^2 of the super-block; the 6-bit
 * scales and minimums come from a weighted search of their own (make_qp_quants) */
static void fit_imatrix(const float * x, const float * qw, int nmax, uint8_t * L, uint8_t * packed, ggmlx_half * d,
                        ggmlx_half * dmin) {
    float   scales[QK_K / 32], mins[QK_K / 32], sw[QK_K / 32], weights[32];
    uint8_t Laux[32], Ls[QK_K / 32], Lm[QK_K / 32];
    float   sum_x2 = 0.0f;
    for (int l = 0; l < QK_K; l++) {
        sum_x2 += x[l] * x[l];
    }
    const float sigma2 = 2.0f * sum_x2 / (float) QK_K;
    for (int j = 0; j < QK_K / 32; j++) {
        const float * xs = x + 32 * j;
        float sumw = 0.0f;
        for (int l = 0; l < 32; l++) {
            weights[l] = qw[32 * j + l] * sqrtf(sigma2 + xs[l] * xs[l]);
        }
        for (int l = 0; l < 32; l++) {
            sumw += weights[l];
        }
        sw[j]     = sumw;
        scales[j] = ggmlx_make_qkx3_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float d_block = ggmlx_make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
    const float m_block = ggmlx_make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
    memset(packed, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 32; j++) {
        pack_scale_min(j, Ls[j] < 63 ? Ls[j] : 63, Lm[j] < 63 ? Lm[j] : 63, packed);
    }
    *d    = ggmlx_fp32_to_fp16(d_block);
    *dmin = ggmlx_fp32_to_fp16(m_block);
    requantize(x, packed, *d, *dmin, nmax, L);
}

static void pack_q4(const uint8_t * L, uint8_t * qs) {
    for (int c = 0; c < QK_K / 64; c++) {
        for (int l = 0; l < 32; l++) {
            qs[32 * c + l] = (uint8_t) (L[64 * c + l] | (L[64 * c + 32 + l] << 4));
        }
    }
}

static void pack_q5(const uint8_t * L, uint8_t * qs, uint8_t * qh) {
    memset(qh, 0, QK_K / 8);
    for (int c = 0; c < QK_K / 64; c++) {
        for (int l = 0; l < 32; l++) {
            const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
            qs[32 * c + l] = (uint8_t) ((lo & 15) | ((hi & 15) << 4));
            qh[l] |= (uint8_t) (((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        }
    }
}

void ggmlx_quantize_row_q4_K_ref(const float * x, void * y, int64_t k) {
    block_q4_K * b = y;
    uint8_t      L[QK_K];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        fit_ref(x, 15, -1.0f, 0.1f, 20, L, b[i].scales, &b[i].d, &b[i].dmin);
        pack_q4(L, b[i].qs);
    }
}

void ggmlx_quantize_row_q5_K_ref(const float * x, void * y, int64_t k) {
    block_q5_K * b = y;
    uint8_t      L[QK_K];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        fit_ref(x, 31, -0.5f, 0.1f, 15, L, b[i].scales, &b[i].d, &b[i].dmin);
        pack_q5(L, b[i].qs, b[i].qh);
    }
}

size_t ggmlx_quantize_q4_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t nb = n_per_row / QK_K;
    if (imatrix == NULL) {
        ggmlx_quantize_row_q4_K_ref(src, dst, nrows * n_per_row);
        return (size_t) (nrows * nb) * sizeof(block_q4_K);
    }
    block_q4_K * b = dst;
    uint8_t      L[QK_K];
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            fit_imatrix(src + r * n_per_row + i * QK_K, imatrix + i * QK_K, 15, L, b->scales, &b->d, &b->dmin);
            pack_q4(L, b->qs);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_q4_K);
}

size_t ggmlx_quantize_q5_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t nb = n_per_row / QK_K;
    if (imatrix == NULL) {
        ggmlx_quantize_row_q5_K_ref(src, dst, nrows * n_per_row);
        return (size_t) (nrows * nb) * sizeof(block_q5_K);
    }
    block_q5_K * b = dst;
    uint8_t      L[QK_K];
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            fit_imatrix(src + r * n_per_row + i * QK_K, imatrix + i * QK_K, 31, L, b->scales, &b->d, &b->dmin);
            pack_q5(L, b->qs, b->qh);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_q5_K);
}
