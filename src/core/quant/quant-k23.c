/*
 * quant-k23.c -- Q2_K and Q3_K: super-blocks of 256 values in 16 sub-blocks of 16. Both store 2 bits per value
 * the same way: per 128 values (32 bytes of qs) and l < 32, value 32*s + l sits at bits 2*s of byte l (s = 0..3).
 *
 * Q2_K: y = d*(sc & 15)*q - dmin*(sc >> 4), q in 0..3, one byte of scale and minimum per sub-block.
 * Q3_K: y = d*(sc - 32)*q, q in -4..3: the 2 stored bits, minus 4 when value k's bit (k / 32) of hmask[k % 32] is
 * clear; 6-bit scales, low nibbles in scales[0..7] (sub-blocks 0..7 low, 8..15 high nibble), top two bits of
 * sub-block j at bits 2*(j / 4) of scales[8 + j % 4].
 */
#include "quant-k.h"
#include "quant-search.h"

#include "ggml-math.h"

#include <math.h>
#include <string.h>

static inline int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

static void pack_2bit(const uint8_t * L, uint8_t * qs) {
    for (int h = 0; h < QK_K; h += 128) {
        for (int l = 0; l < 32; l++) {
            qs[h / 4 + l] = (uint8_t) (L[h + l] | (L[h + l + 32] << 2) | (L[h + l + 64] << 4) | (L[h + l + 96] << 6));
        }
    }
}

/* ---- Q2_K -------------------------------------------------------------------------------- */

void ggmlx_dequantize_row_q2_K(const void * x, float * y, int64_t k) {
    const block_q2_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d    = ggmlx_fp16_to_fp32(b[i].d);
        const float dmin = ggmlx_fp16_to_fp32(b[i].dmin);
        for (int v = 0; v < QK_K; v++) {
            const int   s  = v / 16;
            const int   q  = (b[i].qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32))) & 3;
            const float dl = d * (float) (b[i].scales[s] & 15);
            const float ml = dmin * (float) (b[i].scales[s] >> 4);
            *y++ = dl * (float) q - ml;
        }
    }
}

/* levels against the stored scales; a sub-block whose scale is 0 keeps the levels of its fit */
static void q2_K_requantize(const float * x, const block_q2_K * b, uint8_t * L) {
    const float d_all = ggmlx_fp16_to_fp32(b->d);
    const float m_all = ggmlx_fp16_to_fp32(b->dmin);
    for (int s = 0; s < QK_K / 16; s++) {
        const float d = d_all * (float) (b->scales[s] & 15);
        if (d == 0.0f) {
            continue;
        }
        const float m = m_all * (float) (b->scales[s] >> 4);
        for (int l = 0; l < 16; l++) {
            L[16 * s + l] = (uint8_t) clamp_int(ggmlx_nearest_int((x[16 * s + l] + m) / d), 0, 3);
        }
    }
}

void ggmlx_quantize_row_q2_K_ref(const float * x, void * y, int64_t k) {
    block_q2_K * b = y;
    uint8_t      L[QK_K], Laux[16];
    float        weights[16], scales[QK_K / 16], mins[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0.0f, max_min = 0.0f;
        for (int s = 0; s < QK_K / 16; s++) {
            for (int l = 0; l < 16; l++) {
                weights[l] = fabsf(x[16 * s + l]);
            }
            scales[s] = ggmlx_make_qkx2_quants(16, 3, x + 16 * s, weights, L + 16 * s, &mins[s], Laux, -0.5f, 0.1f, 15,
                                               true);
            if (scales[s] > max_scale) {
                max_scale = scales[s];
            }
            if (mins[s] > max_min) {
                max_min = mins[s];
            }
        }
        /* the byte takes whatever nearest_int gives, unclamped, as upstream stores it */
        memset(b[i].scales, 0, sizeof b[i].scales);
        b[i].d = ggmlx_fp32_to_fp16(0.0f);
        if (max_scale > 0.0f) {
            const float iscale = 15.0f / max_scale;
            for (int s = 0; s < QK_K / 16; s++) {
                b[i].scales[s] = (uint8_t) ggmlx_nearest_int(iscale * scales[s]);
            }
            b[i].d = ggmlx_fp32_to_fp16(max_scale / 15.0f);
        }
        b[i].dmin = ggmlx_fp32_to_fp16(0.0f);
        if (max_min > 0.0f) {
            const float iscale = 15.0f / max_min;
            for (int s = 0; s < QK_K / 16; s++) {
                b[i].scales[s] |= (uint8_t) ((unsigned) ggmlx_nearest_int(iscale * mins[s]) << 4);
            }
            b[i].dmin = ggmlx_fp32_to_fp16(max_min / 15.0f);
        }
        q2_K_requantize(x, &b[i], L);
        pack_2bit(L, b[i].qs);
    }
}

/* importance-weighted: weights qw * sqrt(sigma2 + x^2) with sigma2 the mean x^2 of the super-block (Q3..Q5_K double
 * it, Q2_K does not), scales and minimums to 4 bits by a weighted search */
static void q2_K_block_imatrix(const float * x, block_q2_K * b, const float * qw) {
    uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float   weight[16], scales[QK_K / 16], mins[QK_K / 16], sw[QK_K / 16];
    float   sumx2 = 0.0f;
    for (int j = 0; j < QK_K; j++) {
        sumx2 += x[j] * x[j];
    }
    const float sigma2 = sumx2 / (float) QK_K;
    for (int s = 0; s < QK_K / 16; s++) {
        sw[s] = 0.0f;
        for (int l = 0; l < 16; l++) {
            weight[l] = qw[16 * s + l] * sqrtf(sigma2 + x[16 * s + l] * x[16 * s + l]);
        }
        for (int l = 0; l < 16; l++) {
            sw[s] += weight[l];
        }
        scales[s] = ggmlx_make_qkx3_quants(16, 3, x + 16 * s, weight, L + 16 * s, &mins[s], Laux, -0.9f, 0.05f, 36,
                                           false);
    }
    const float dm = ggmlx_make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
    const float mm = ggmlx_make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
    b->d    = ggmlx_fp32_to_fp16(dm);
    b->dmin = ggmlx_fp32_to_fp16(mm);
    for (int s = 0; s < QK_K / 16; s++) {
        b->scales[s] = (uint8_t) (Ls[s] | (Lm[s] << 4));
    }
    q2_K_requantize(x, b, L);
    pack_2bit(L, b->qs);
}

size_t ggmlx_quantize_q2_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t nb = n_per_row / QK_K;
    if (imatrix == NULL) {
        ggmlx_quantize_row_q2_K_ref(src, dst, nrows * n_per_row);
        return (size_t) (nrows * nb) * sizeof(block_q2_K);
    }
    block_q2_K * b = dst;
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            q2_K_block_imatrix(src + r * n_per_row + i * QK_K, b, imatrix + i * QK_K);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_q2_K);
}

/* ---- Q3_K -------------------------------------------------------------------------------- */

static int q3_K_scale(const uint8_t * scales, int j) {
    const int lo = j < 8 ? scales[j] & 15 : scales[j - 8] >> 4;
    const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

/* l: the stored 6-bit level 0..63 */
static void q3_K_pack_scale(uint8_t * scales, int j, int l) {
    if (j < 8) {
        scales[j] = (uint8_t) (l & 15);
    } else {
        scales[j - 8] |= (uint8_t) ((l & 15) << 4);
    }
    scales[8 + j % 4] |= (uint8_t) ((l >> 4) << (2 * (j / 4)));
}

void ggmlx_dequantize_row_q3_K(const void * x, float * y, int64_t k) {
    const block_q3_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int v = 0; v < QK_K; v++) {
            const int   lo = (b[i].qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32))) & 3;
            const int   q  = lo - ((b[i].hmask[v % 32] >> (v / 32)) & 1 ? 0 : 4);
            const float dl = d * (float) q3_K_scale(b[i].scales, v / 16);
            *y++ = dl * (float) q;
        }
    }
}

/* requantize against the stored scales (levels 0..7 = q + 4), then move bit 2 into hmask and pack the rest */
static void q3_K_finish(const float * x, block_q3_K * b, int8_t * L) {
    const float d_all = ggmlx_fp16_to_fp32(b->d);
    for (int s = 0; s < QK_K / 16; s++) {
        const float d = d_all * (float) q3_K_scale(b->scales, s);
        if (d == 0.0f) {
            continue;
        }
        for (int l = 0; l < 16; l++) {
            L[16 * s + l] = (int8_t) (clamp_int(ggmlx_nearest_int(x[16 * s + l] / d), -4, 3) + 4);
        }
    }
    uint8_t low[QK_K];
    memset(b->hmask, 0, sizeof b->hmask);
    for (int v = 0; v < QK_K; v++) {
        int l = L[v];
        if (l > 3) {
            b->hmask[v % 32] |= (uint8_t) (1u << (v / 32));
            l -= 4;
        }
        low[v] = (uint8_t) l;
    }
    pack_2bit(low, b->qs);
}

void ggmlx_quantize_row_q3_K_ref(const float * x, void * y, int64_t k) {
    block_q3_K * b = y;
    int8_t       L[QK_K];
    float        scales[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0.0f, amax = 0.0f;
        for (int s = 0; s < QK_K / 16; s++) {
            scales[s] = ggmlx_make_q3_quants(16, 4, x + 16 * s, L + 16 * s, true);
            if (fabsf(scales[s]) > amax) {
                amax      = fabsf(scales[s]);
                max_scale = scales[s];
            }
        }
        memset(b[i].scales, 0, sizeof b[i].scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.0f / max_scale;
            for (int s = 0; s < QK_K / 16; s++) {
                /* upstream narrows to int8 before clamping */
                const int8_t l = (int8_t) ggmlx_nearest_int(iscale * scales[s]);
                q3_K_pack_scale(b[i].scales, s, clamp_int(l, -32, 31) + 32);
            }
            b[i].d = ggmlx_fp32_to_fp16(1.0f / iscale);
        } else {
            b[i].d = ggmlx_fp32_to_fp16(0.0f);
        }
        q3_K_finish(x, &b[i], L);
    }
}

static void q3_K_block(const float * x, block_q3_K * b, const float * qw) {
    int8_t L[QK_K], Ls[QK_K / 16];
    float  scales[QK_K / 16], weight[16], sw[QK_K / 16];
    float  sumx2 = 0.0f;
    for (int j = 0; j < QK_K; j++) {
        sumx2 += x[j] * x[j];
    }
    const float sigma2 = 2.0f * sumx2 / (float) QK_K;
    for (int s = 0; s < QK_K / 16; s++) {
        const float * xs = x + 16 * s;
        for (int l = 0; l < 16; l++) {
            weight[l] = qw != NULL ? qw[16 * s + l] * sqrtf(sigma2 + xs[l] * xs[l]) : xs[l] * xs[l];
        }
        float sumw = 0.0f;
        for (int l = 0; l < 16; l++) {
            sumw += weight[l];
        }
        sw[s]     = sumw;
        scales[s] = ggmlx_make_qx_quants(16, 4, xs, L + 16 * s, 1, weight);
    }
    memset(b->scales, 0, sizeof b->scales);
    const float d_block = ggmlx_make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
    for (int s = 0; s < QK_K / 16; s++) {
        q3_K_pack_scale(b->scales, s, Ls[s]);
    }
    b->d = ggmlx_fp32_to_fp16(d_block);
    q3_K_finish(x, b, L);
}

size_t ggmlx_quantize_q3_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t nb = n_per_row / QK_K;
    if (imatrix == NULL) {
        ggmlx_quantize_row_q3_K_ref(src, dst, nrows * n_per_row);
        return (size_t) (nrows * nb) * sizeof(block_q3_K);
    }
    block_q3_K * b = dst;
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            q3_K_block(src + r * n_per_row + i * QK_K, b, imatrix + i * QK_K);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_q3_K);
}
