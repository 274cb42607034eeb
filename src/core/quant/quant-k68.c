/*
 * quant-k68.c -- Q6_K (16 sub-blocks of 16 with int8 scales, y = d*sc*q, q in -32..31) and Q8_K (the f32-scaled
 * 8-bit activations that K-quant and IQ dot products multiply against; bsums saves those kernels a pass).
 *
 * Q6_K stores, per 128 values and l < 32, the low nibbles of values l and l+64 in ql[l], of l+32 and l+96 in
 * ql[l+32], and their top two bits in qh[l] at bits 0, 4, 2 and 6 (by value: l, l+32, l+64, l+96 -> 0, 2, 4, 6).
 */
#include "quant-k.h"
#include "quant-search.h"

#include "ggml-math.h"

#include <math.h>
#include <string.h>

static inline int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

void ggmlx_dequantize_row_q6_K(const void * x, float * y, int64_t k) {
    const block_q6_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float     d  = ggmlx_fp16_to_fp32(b[i].d);
        const uint8_t * ql = b[i].ql;
        const uint8_t * qh = b[i].qh;
        const int8_t *  sc = b[i].scales;
        for (int h = 0; h < QK_K / 128; h++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                const int s  = l / 16;
                const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l]      = d * (float) sc[s] * (float) q1;
                y[l + 32] = d * (float) sc[s + 2] * (float) q2;
                y[l + 64] = d * (float) sc[s + 4] * (float) q3;
                y[l + 96] = d * (float) sc[s + 6] * (float) q4;
            }
        }
    }
}

/* one super-block; qw is NULL (weights x^2) or the block's 256 importance weights */
static void q6_K_block(const float * x, block_q6_K * b, const float * qw) {
    int8_t L[QK_K];
    float  scales[QK_K / 16];
    float  max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int s = 0; s < QK_K / 16; s++) {
        scales[s] = ggmlx_make_qx_quants(16, 32, x + 16 * s, L + 16 * s, 1, qw != NULL ? qw + 16 * s : NULL);
        if (fabsf(scales[s]) > max_abs_scale) {
            max_abs_scale = fabsf(scales[s]);
            max_scale     = scales[s];
        }
    }
    if (max_abs_scale < GGMLX_GROUP_MAX_EPS) {
        memset(b, 0, sizeof *b);
        return;
    }

    const float iscale = -128.0f / max_scale;
    b->d = ggmlx_fp32_to_fp16(1.0f / iscale);
    for (int s = 0; s < QK_K / 16; s++) {
        const int l = ggmlx_nearest_int(iscale * scales[s]);
        b->scales[s] = (int8_t) (l < 127 ? l : 127);
    }
    for (int s = 0; s < QK_K / 16; s++) {
        const float d = ggmlx_fp16_to_fp32(b->d) * (float) b->scales[s];
        if (d == 0.0f) {
            continue; /* keeps the levels make_qx_quants chose */
        }
        for (int l = 0; l < 16; l++) {
            L[16 * s + l] = (int8_t) (clamp_int(ggmlx_nearest_int(x[16 * s + l] / d), -32, 31) + 32);
        }
    }

    uint8_t * ql = b->ql;
    uint8_t * qh = b->qh;
    for (int h = 0; h < QK_K; h += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; l++) {
            const int v0 = L[h + l], v1 = L[h + l + 32], v2 = L[h + l + 64], v3 = L[h + l + 96];
            ql[l]      = (uint8_t) ((v0 & 15) | ((v2 & 15) << 4));
            ql[l + 32] = (uint8_t) ((v1 & 15) | ((v3 & 15) << 4));
            qh[l]      = (uint8_t) ((v0 >> 4) | ((v1 >> 4) << 2) | ((v2 >> 4) << 4) | ((v3 >> 4) << 6));
        }
    }
}

void ggmlx_quantize_row_q6_K_ref(const float * x, void * y, int64_t k) {
    block_q6_K * b = y;
    for (int64_t i = 0; i < k / QK_K; i++) {
        q6_K_block(x + i * QK_K, &b[i], NULL);
    }
}

size_t ggmlx_quantize_q6_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    const int64_t nb = n_per_row / QK_K;
    if (imatrix == NULL) {
        ggmlx_quantize_row_q6_K_ref(src, dst, nrows * n_per_row);
        return (size_t) (nrows * nb) * sizeof(block_q6_K);
    }
    block_q6_K * b = dst;
    for (int64_t r = 0; r < nrows; r++) {
        for (int64_t i = 0; i < nb; i++, b++) {
            /* upstream weighs Q6_K by the importance alone, not by qw * sqrt(sigma2 + x^2) */
            q6_K_block(src + r * n_per_row + i * QK_K, b, imatrix + i * QK_K);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_q6_K);
}

void ggmlx_dequantize_row_q8_K(const void * x, float * y, int64_t k) {
    const block_q8_K * b = x;
    for (int64_t i = 0; i < k / QK_K; i++, y += QK_K) {
        for (int j = 0; j < QK_K; j++) {
            y[j] = b[i].d * (float) b[i].qs[j];
        }
    }
}

void ggmlx_quantize_row_q8_K_ref(const float * x, void * y, int64_t k) {
    block_q8_K * b = y;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max  = x[j];
            }
        }
        if (amax == 0.0f) {
            /* upstream leaves bsums as they were; zeros are what a dot product needs */
            memset(&b[i], 0, sizeof b[i]);
            continue;
        }
        /* -127 rather than -128 keeps every level's negation in int8, which the IQ dot products rely on */
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = ggmlx_nearest_int(iscale * x[j]);
            b[i].qs[j] = (int8_t) (v < 127 ? v : 127);
        }
        for (int g = 0; g < QK_K / 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++) {
                sum += b[i].qs[16 * g + j];
            }
            b[i].bsums[g] = (int16_t) sum;
        }
        b[i].d = 1.0f / iscale;
    }
}
