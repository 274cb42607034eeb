/*
 * quant-lowbit.c -- Q1_0 (128 signs and one f16 magnitude, the mean |x|) and Q2_0 (64 levels
 * -1, 0, 1, 2 times an f16 scale, amax). Bits are packed LSB first: element j of Q1_0 is bit j % 8
 * of byte j / 8, element j of Q2_0 is bits 2 * (j % 4) of byte j / 4.
 */
#include "quant-legacy.h"

#include "ggml-math.h"

void ggmlx_dequantize_row_q1_0(const void * x, float * y, int64_t k) {
    const block_q1_0 * b = x;
    for (int64_t i = 0; i < k / QK1_0; i++, y += QK1_0) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK1_0; j++) {
            y[j] = (b[i].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
        }
    }
}

void ggmlx_dequantize_row_q2_0(const void * x, float * y, int64_t k) {
    const block_q2_0 * b = x;
    for (int64_t i = 0; i < k / QK2_0; i++, y += QK2_0) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK2_0; j++) {
            const int q = (b[i].qs[j / 4] >> (2 * (j % 4))) & 3;
            y[j] = (float) (q - 1) * d;
        }
    }
}

void ggmlx_quantize_row_q1_0_ref(const float * x, void * y, int64_t k) {
    block_q1_0 * b = y;
    for (int64_t i = 0; i < k / QK1_0; i++, x += QK1_0) {
        float sum = 0.0f;
        for (int j = 0; j < QK1_0; j++) {
            sum += fabsf(x[j]);
        }
        b[i].d = ggmlx_fp32_to_fp16(sum / (float) QK1_0);
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int j = 0; j < QK1_0; j++) {
            if (x[j] >= 0.0f) {
                b[i].qs[j / 8] |= (uint8_t) (1u << (j % 8));
            }
        }
    }
}

void ggmlx_quantize_row_q2_0_ref(const float * x, void * y, int64_t k) {
    block_q2_0 * b = y;
    for (int64_t i = 0; i < k / QK2_0; i++, x += QK2_0) {
        float amax = 0.0f;
        for (int j = 0; j < QK2_0; j++) {
            if (amax < fabsf(x[j])) {
                amax = fabsf(x[j]);
            }
        }
        const float d  = amax;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        memset(b[i].qs, 0, sizeof b[i].qs);
        for (int j = 0; j < QK2_0; j++) {
            int q = (int) roundf(x[j] * id) + 1;
            q = q < 0 ? 0 : (q > 3 ? 3 : q);
            b[i].qs[j / 4] |= (uint8_t) (q << (2 * (j % 4)));
        }
    }
}

/* the weights are ignored: with one scale per block and the levels fixed, nothing is left to
 * choose (upstream too) */
size_t ggmlx_quantize_q1_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix;
    ggmlx_quantize_row_q1_0_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_q1_0) * (size_t) (n_per_row / QK1_0);
}

size_t ggmlx_quantize_q2_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix;
    ggmlx_quantize_row_q2_0_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_q2_0) * (size_t) (n_per_row / QK2_0);
}
