/*
 * quant-fp4.c -- MXFP4 (32 values, one E8M0 power-of-two scale) and NVFP4 (64 values, a UE4M3
 * scale per 16). Both store 4-bit E2M1 codes looked up in ggmlx_kvalues_fp4, which holds the
 * values doubled (so they are integers); the scale decoders halve to match. Each value takes the
 * code whose scaled value is nearest, the first one on a tie.
 */
#include "quant-legacy.h"
#include "quant-tables.h"

static int nearest_fp4(float x, float scale) {
    int best = 0;
    float best_err = fabsf((float) ggmlx_kvalues_fp4[0] * scale - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float) ggmlx_kvalues_fp4[i] * scale - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

static float absmax(const float * x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
        }
    }
    return amax;
}

void ggmlx_dequantize_row_mxfp4(const void * x, float * y, int64_t k) {
    const block_mxfp4 * b = x;
    for (int64_t i = 0; i < k / QK_MXFP4; i++, y += QK_MXFP4) {
        const float d = ggmlx_e8m0_to_fp32_half(b[i].e);
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            y[j]                = (float) ggmlx_kvalues_fp4[b[i].qs[j] & 15] * d;
            y[j + QK_MXFP4 / 2] = (float) ggmlx_kvalues_fp4[b[i].qs[j] >> 4] * d;
        }
    }
}

void ggmlx_dequantize_row_nvfp4(const void * x, float * y, int64_t k) {
    const block_nvfp4 * b = x;
    const int half = QK_NVFP4_SUB / 2;
    for (int64_t i = 0; i < k / QK_NVFP4; i++) {
        for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; s++, y += QK_NVFP4_SUB) {
            const float d = ggmlx_ue4m3_to_fp32(b[i].d[s]);
            const uint8_t * qs = b[i].qs + s * half;
            for (int j = 0; j < half; j++) {
                y[j]        = (float) ggmlx_kvalues_fp4[qs[j] & 15] * d;
                y[j + half] = (float) ggmlx_kvalues_fp4[qs[j] >> 4] * d;
            }
        }
    }
}

void ggmlx_quantize_row_mxfp4_ref(const float * x, void * y, int64_t k) {
    block_mxfp4 * b = y;
    for (int64_t i = 0; i < k / QK_MXFP4; i++, x += QK_MXFP4) {
        const float amax = absmax(x, QK_MXFP4);
        /* the largest code is 6 = 1.5 * 2^2: the exponent of amax, less 2, rebiased */
        const uint8_t e = amax > 0.0f ? (uint8_t) (floorf(log2f(amax)) - 2.0f + 127.0f) : 0;
        const float d = ggmlx_e8m0_to_fp32_half(e);
        b[i].e = e;
        for (int j = 0; j < QK_MXFP4 / 2; j++) {
            const int q0 = nearest_fp4(x[j], d);
            const int q1 = nearest_fp4(x[j + QK_MXFP4 / 2], d);
            b[i].qs[j] = (uint8_t) (q0 | (q1 << 4));
        }
    }
}

void ggmlx_quantize_row_nvfp4_ref(const float * x, void * y, int64_t k) {
    block_nvfp4 * b = y;
    const int half = QK_NVFP4_SUB / 2;
    for (int64_t i = 0; i < k / QK_NVFP4; i++) {
        for (int s = 0; s < QK_NVFP4 / QK_NVFP4_SUB; s++, x += QK_NVFP4_SUB) {
            /* 6 is the largest E2M1 magnitude */
            const uint8_t ue = ggmlx_fp32_to_ue4m3(absmax(x, QK_NVFP4_SUB) / 6.0f);
            const float d = ggmlx_ue4m3_to_fp32(ue);
            b[i].d[s] = ue;
            for (int j = 0; j < half; j++) {
                const int q0 = nearest_fp4(x[j], d);
                const int q1 = nearest_fp4(x[j + half], d);
                b[i].qs[s * half + j] = (uint8_t) (q0 | (q1 << 4));
            }
        }
    }
}

size_t ggmlx_quantize_mxfp4(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix; /* the power-of-two scale and fixed codes leave nothing to weigh */
    ggmlx_quantize_row_mxfp4_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_mxfp4) * (size_t) (n_per_row / QK_MXFP4);
}

size_t ggmlx_quantize_nvfp4(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix;
    ggmlx_quantize_row_nvfp4_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_nvfp4) * (size_t) (n_per_row / QK_NVFP4);
}
