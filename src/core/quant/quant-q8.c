/*
 * quant-q8.c -- Q8_0 and Q8_1: 32 signed bytes and an f16 scale, amax / 127. Q8_1 also keeps
 * s = d * sum(qs) so that a dot product with Q4_1/Q5_1 can add their minimum in one step; it
 * exists only as the other operand of those dot products, so it has no dequantizer.
 */
#include "quant-legacy.h"

#include "ggml-math.h"

static float absmax(const float * x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        /* not fmaxf: a NaN input makes amax NaN, as upstream's comparison does */
        amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    }
    return amax;
}

void ggmlx_dequantize_row_q8_0(const void * x, float * y, int64_t k) {
    const block_q8_0 * b = x;
    for (int64_t i = 0; i < k / QK8_0; i++, y += QK8_0) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK8_0; j++) {
            y[j] = (float) b[i].qs[j] * d;
        }
    }
}

void ggmlx_quantize_row_q8_0_ref(const float * x, void * y, int64_t k) {
    block_q8_0 * b = y;
    for (int64_t i = 0; i < k / QK8_0; i++, x += QK8_0) {
        const float d  = absmax(x, QK8_0) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) {
            b[i].qs[j] = (int8_t) roundf(x[j] * id);
        }
    }
}

void ggmlx_quantize_row_q8_1_ref(const float * x, void * y, int64_t k) {
    block_q8_1 * b = y;
    for (int64_t i = 0; i < k / QK8_1; i++, x += QK8_1) {
        const float d  = absmax(x, QK8_1) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            b[i].qs[j] = (int8_t) roundf(x[j] * id);
            sum += b[i].qs[j];
        }
        b[i].d = ggmlx_fp32_to_fp16(d);
        b[i].s = ggmlx_fp32_to_fp16((float) sum * d);
    }
}

size_t ggmlx_quantize_q8_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix; /* eight bits leave nothing for the weights to choose */
    ggmlx_quantize_row_q8_0_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_q8_0) * (size_t) (n_per_row / QK8_0);
}
