/*
 * qops-stopgap.c -- TEMPORARY: Q4_0 and Q8_0 rows to and from F32, only so that the quantized CPU
 * ops can be tested before the legacy-format branch lands. Removed when it is merged (its own
 * functions of the same names replace these).
 */
#include "quant-legacy.h"
#include "../ggml-math.h"

#include <math.h>

void ggmlx_dequantize_row_q4_0(const void * restrict vx, float * restrict y, int64_t k) {
    const block_q4_0 * x = vx;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        const float d = ggmlx_fp16_to_fp32(x[b].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            y[b * QK4_0 + j]             = d * (float) ((x[b].qs[j] & 0x0f) - 8);
            y[b * QK4_0 + j + QK4_0 / 2] = d * (float) ((x[b].qs[j] >> 4) - 8);
        }
    }
}

void ggmlx_quantize_row_q4_0_ref(const float * restrict x, void * restrict vy, int64_t k) {
    block_q4_0 * y = vy;
    for (int64_t b = 0; b < k / QK4_0; b++) {
        const float * v = x + b * QK4_0;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK4_0; j++) {
            if (fabsf(v[j]) > amax) {
                amax = fabsf(v[j]);
                max  = v[j];
            }
        }
        const float d  = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            int lo = (int) (v[j] * id + 8.5f), hi = (int) (v[j + QK4_0 / 2] * id + 8.5f);
            lo = lo > 15 ? 15 : lo;
            hi = hi > 15 ? 15 : hi;
            y[b].qs[j] = (uint8_t) (lo | (hi << 4));
        }
    }
}

void ggmlx_dequantize_row_q8_0(const void * restrict vx, float * restrict y, int64_t k) {
    const block_q8_0 * x = vx;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        const float d = ggmlx_fp16_to_fp32(x[b].d);
        for (int j = 0; j < QK8_0; j++) {
            y[b * QK8_0 + j] = d * (float) x[b].qs[j];
        }
    }
}

void ggmlx_quantize_row_q8_0_ref(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_0 * y = vy;
    for (int64_t b = 0; b < k / QK8_0; b++) {
        const float * v = x + b * QK8_0;
        float amax = 0.0f;
        for (int j = 0; j < QK8_0; j++) {
            amax = fmaxf(amax, fabsf(v[j]));
        }
        const float d  = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d = ggmlx_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++) {
            y[b].qs[j] = (int8_t) roundf(v[j] * id);
        }
    }
}
