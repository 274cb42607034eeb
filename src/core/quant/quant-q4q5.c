/*
 * quant-q4q5.c -- Q4_0, Q4_1, Q5_0 and Q5_1: 32 values per block, one f16 scale (and for the _1
 * formats an f16 minimum). Element j of a block sits in the low nibble of qs[j % 16] for j < 16
 * and in the high nibble for j >= 16; the 5-bit formats keep bit 4 of element j in bit j of the
 * little-endian word qh.
 *
 * The reference quantizers truncate (int8_t)(v + 8.5f) rather than round, and clamp only from
 * above, exactly as upstream does: that is what makes the bytes match files made elsewhere.
 */
#include "quant-legacy.h"
#include "quant-search.h"

#include "ggml-math.h"

#include <float.h>

/* the value of largest magnitude, sign kept; the first one wins a tie */
static float signed_absmax(const float * x, int n) {
    float amax = 0.0f;
    float max  = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max  = x[j];
        }
    }
    return max;
}

static void min_max(const float * x, int n, float * pmin, float * pmax) {
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < min) {
            min = x[j];
        }
        if (x[j] > max) {
            max = x[j];
        }
    }
    *pmin = min;
    *pmax = max;
}

static inline uint8_t min_u8(int a, int b) {
    return (uint8_t) (a < b ? a : b);
}

/* levels q[0..31] (0..31) into the low nibbles, and bit 4 of each into the word qh */
static void pack_q5(const uint8_t * q, uint8_t * qs, uint8_t * qh_bytes) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t) ((q[j] & 15) | ((q[j + 16] & 15) << 4));
        qh |= (uint32_t) ((q[j] >> 4) & 1) << j;
        qh |= (uint32_t) ((q[j + 16] >> 4) & 1) << (j + 16);
    }
    for (int b = 0; b < 4; b++) {
        qh_bytes[b] = (uint8_t) (qh >> (8 * b));
    }
}

static uint32_t load_qh(const uint8_t * qh) {
    return (uint32_t) qh[0] | (uint32_t) qh[1] << 8 | (uint32_t) qh[2] << 16 | (uint32_t) qh[3] << 24;
}

/* ---- dequantization ---------------------------------------------------------------------- */

void ggmlx_dequantize_row_q4_0(const void * x, float * y, int64_t k) {
    const block_q4_0 * b = x;
    for (int64_t i = 0; i < k / QK4_0; i++, y += QK4_0) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; j++) {
            y[j]      = (float) ((b[i].qs[j] & 15) - 8) * d;
            y[j + 16] = (float) ((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void ggmlx_dequantize_row_q4_1(const void * x, float * y, int64_t k) {
    const block_q4_1 * b = x;
    for (int64_t i = 0; i < k / QK4_1; i++, y += QK4_1) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        const float m = ggmlx_fp16_to_fp32(b[i].m);
        for (int j = 0; j < 16; j++) {
            y[j]      = (float) (b[i].qs[j] & 15) * d + m;
            y[j + 16] = (float) (b[i].qs[j] >> 4) * d + m;
        }
    }
}

void ggmlx_dequantize_row_q5_0(const void * x, float * y, int64_t k) {
    const block_q5_0 * b = x;
    for (int64_t i = 0; i < k / QK5_0; i++, y += QK5_0) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int q0 = (b[i].qs[j] & 15) | (int) (((qh >> j) & 1) << 4);
            const int q1 = (b[i].qs[j] >> 4) | (int) (((qh >> (j + 16)) & 1) << 4);
            y[j]      = (float) (q0 - 16) * d;
            y[j + 16] = (float) (q1 - 16) * d;
        }
    }
}

void ggmlx_dequantize_row_q5_1(const void * x, float * y, int64_t k) {
    const block_q5_1 * b = x;
    for (int64_t i = 0; i < k / QK5_1; i++, y += QK5_1) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        const float m = ggmlx_fp16_to_fp32(b[i].m);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < 16; j++) {
            const int q0 = (b[i].qs[j] & 15) | (int) (((qh >> j) & 1) << 4);
            const int q1 = (b[i].qs[j] >> 4) | (int) (((qh >> (j + 16)) & 1) << 4);
            y[j]      = (float) q0 * d + m;
            y[j + 16] = (float) q1 * d + m;
        }
    }
}

/* ---- reference quantizers ------------------------------------------------------------------- */

void ggmlx_quantize_row_q4_0_ref(const float * x, void * y, int64_t k) {
    block_q4_0 * b = y;
    for (int64_t i = 0; i < k / QK4_0; i++, x += QK4_0) {
        const float d  = signed_absmax(x, QK4_0) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            const uint8_t q0 = min_u8(15, (int8_t) (x[j] * id + 8.5f));
            const uint8_t q1 = min_u8(15, (int8_t) (x[j + 16] * id + 8.5f));
            b[i].qs[j] = (uint8_t) (q0 | (q1 << 4));
        }
    }
}

void ggmlx_quantize_row_q4_1_ref(const float * x, void * y, int64_t k) {
    block_q4_1 * b = y;
    for (int64_t i = 0; i < k / QK4_1; i++, x += QK4_1) {
        float min, max;
        min_max(x, QK4_1, &min, &max);
        const float d  = (max - min) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        b[i].m = ggmlx_fp32_to_fp16(min);
        for (int j = 0; j < 16; j++) {
            const uint8_t q0 = min_u8(15, (int8_t) ((x[j] - min) * id + 0.5f));
            const uint8_t q1 = min_u8(15, (int8_t) ((x[j + 16] - min) * id + 0.5f));
            b[i].qs[j] = (uint8_t) (q0 | (q1 << 4));
        }
    }
}

void ggmlx_quantize_row_q5_0_ref(const float * x, void * y, int64_t k) {
    block_q5_0 * b = y;
    for (int64_t i = 0; i < k / QK5_0; i++, x += QK5_0) {
        const float d  = signed_absmax(x, QK5_0) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        uint8_t q[QK5_0];
        for (int j = 0; j < QK5_0; j++) {
            q[j] = min_u8(31, (int8_t) (x[j] * id + 16.5f));
        }
        pack_q5(q, b[i].qs, b[i].qh);
    }
}

void ggmlx_quantize_row_q5_1_ref(const float * x, void * y, int64_t k) {
    block_q5_1 * b = y;
    for (int64_t i = 0; i < k / QK5_1; i++, x += QK5_1) {
        float min, max;
        min_max(x, QK5_1, &min, &max);
        const float d  = (max - min) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        b[i].m = ggmlx_fp32_to_fp16(min);
        uint8_t q[QK5_1];
        for (int j = 0; j < QK5_1; j++) {
            /* no clamp: (x - min) * id never exceeds 31 by more than rounding */
            q[j] = (uint8_t) ((x[j] - min) * id + 0.5f);
        }
        pack_q5(q, b[i].qs, b[i].qh);
    }
}

/* ---- with an importance matrix ---------------------------------------------------------------- */

/* sigma2 is the mean square of the whole row: it keeps small values of a block from getting
 * zero weight when the imatrix weights them little */
static float row_sigma2(const float * x, int64_t n) {
    float sum = 0.0f;
    for (int64_t j = 0; j < n; j++) {
        sum += x[j] * x[j];
    }
    return sum / (float) n;
}

static void block_weights(const float * x, const float * qw, float sigma2, float * w) {
    for (int j = 0; j < 32; j++) {
        w[j] = qw[j] * sqrtf(sigma2 + x[j] * x[j]);
    }
}

static void q4_0_row_imatrix(const float * x, block_q4_0 * b, int64_t n, const float * imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / QK4_0; ib++) {
        float w[QK4_0];
        int8_t L[QK4_0];
        block_weights(x + QK4_0 * ib, imatrix + QK4_0 * ib, sigma2, w);
        const float d = ggmlx_make_qx_quants(QK4_0, 8, x + QK4_0 * ib, L, 1, w);
        b[ib].d = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            b[ib].qs[j] = (uint8_t) (L[j] | (L[j + 16] << 4));
        }
    }
}

static void q4_1_row_imatrix(const float * x, block_q4_1 * b, int64_t n, const float * imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / QK4_1; ib++) {
        float w[QK4_1], min;
        uint8_t L[QK4_1], Laux[QK4_1];
        block_weights(x + QK4_1 * ib, imatrix + QK4_1 * ib, sigma2, w);
        const float d = ggmlx_make_qkx3_quants(QK4_1, 15, x + QK4_1 * ib, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        b[ib].d = ggmlx_fp32_to_fp16(d);
        b[ib].m = ggmlx_fp32_to_fp16(-min);
        for (int j = 0; j < 16; j++) {
            b[ib].qs[j] = (uint8_t) (L[j] | (L[j + 16] << 4));
        }
    }
}

static void q5_0_row_imatrix(const float * x, block_q5_0 * b, int64_t n, const float * imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / QK5_0; ib++) {
        float w[QK5_0];
        int8_t L[QK5_0];
        block_weights(x + QK5_0 * ib, imatrix + QK5_0 * ib, sigma2, w);
        const float d = ggmlx_make_qx_quants(QK5_0, 16, x + QK5_0 * ib, L, 1, w);
        b[ib].d = ggmlx_fp32_to_fp16(d);
        pack_q5((const uint8_t *) L, b[ib].qs, b[ib].qh);
    }
}

static void q5_1_row_imatrix(const float * x, block_q5_1 * b, int64_t n, const float * imatrix) {
    const float sigma2 = row_sigma2(x, n);
    for (int64_t ib = 0; ib < n / QK5_1; ib++) {
        float w[QK5_1], min;
        uint8_t L[QK5_1], Laux[QK5_1];
        block_weights(x + QK5_1 * ib, imatrix + QK5_1 * ib, sigma2, w);
        const float d = ggmlx_make_qkx3_quants(QK5_1, 31, x + QK5_1 * ib, w, L, &min, Laux, -0.9f, 0.05f, 36, false);
        b[ib].d = ggmlx_fp32_to_fp16(d);
        b[ib].m = ggmlx_fp32_to_fp16(-min);
        pack_q5(L, b[ib].qs, b[ib].qh);
    }
}

/* ---- whole rows ------------------------------------------------------------------------------ */

#define DEFINE_QUANTIZE_ROWS(t, block, qk)                                                               \
    size_t ggmlx_quantize_##t(const float * src, void * dst, int64_t nrows, int64_t n_per_row,            \
                              const float * imatrix) {                                                   \
        const size_t row_size = sizeof(block) * (size_t) (n_per_row / (qk));                             \
        if (imatrix == NULL) {                                                                           \
            ggmlx_quantize_row_##t##_ref(src, dst, nrows * n_per_row);                                   \
            return (size_t) nrows * row_size;                                                            \
        }                                                                                                \
        for (int64_t r = 0; r < nrows; r++) {                                                            \
            t##_row_imatrix(src + r * n_per_row, (block *) ((char *) dst + (size_t) r * row_size),        \
                            n_per_row, imatrix);                                                         \
        }                                                                                                \
        return (size_t) nrows * row_size;                                                                \
    }

DEFINE_QUANTIZE_ROWS(q4_0, block_q4_0, QK4_0)
DEFINE_QUANTIZE_ROWS(q4_1, block_q4_1, QK4_1)
DEFINE_QUANTIZE_ROWS(q5_0, block_q5_0, QK5_0)
DEFINE_QUANTIZE_ROWS(q5_1, block_q5_1, QK5_1)
