/*
 * quant-ternary.c -- TQ1_0 and TQ2_0: 256 values in {-1, 0, 1} times an f16 scale (amax), the
 * scale stored last in both blocks.
 *
 * TQ2_0 spends 2 bits a value: in each 32-byte group g, byte m holds elements 128g + 32l + m at
 * bits 2l. TQ1_0 packs 5 trits a byte (3^5 = 243 <= 256): the byte is ceil(t * 256 / 243) of the
 * base-3 number t whose most significant trit is the first element, so trit n is recovered as the
 * top bits of byte * 3^n (mod 256) times 3. qs[0..31] hold elements m + 32n of the first 160,
 * qs[32..47] elements 160 + m + 16n, and qh[j] (4 trits, shifted up one place) 240 + j + 4n.
 */
#include "quant-legacy.h"

#include "ggml-math.h"

static const uint8_t k_pow3[5] = { 1, 3, 9, 27, 81 };

static inline int trit_of(uint8_t byte, int n) {
    const uint8_t q = (uint8_t) (byte * k_pow3[n]);
    return ((uint16_t) q * 3) >> 8;
}

static inline uint8_t pack_trits(uint8_t t) {
    return (uint8_t) (((uint16_t) t * 256 + 242) / 243);
}

static float absmax(const float * x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        /* a NaN input makes amax NaN, as upstream's comparison does */
        amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    }
    return amax;
}

void ggmlx_dequantize_row_tq1_0(const void * x, float * y, int64_t k) {
    const block_tq1_0 * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int n = 0; n < 5; n++) {
            for (int m = 0; m < 32; m++) {
                y[32 * n + m] = (float) (trit_of(b[i].qs[m], n) - 1) * d;
            }
        }
        for (int n = 0; n < 5; n++) {
            for (int m = 0; m < 16; m++) {
                y[160 + 16 * n + m] = (float) (trit_of(b[i].qs[32 + m], n) - 1) * d;
            }
        }
        for (int n = 0; n < 4; n++) {
            for (int j = 0; j < 4; j++) {
                y[240 + 4 * n + j] = (float) (trit_of(b[i].qh[j], n) - 1) * d;
            }
        }
        y += QK_K;
    }
}

void ggmlx_dequantize_row_tq2_0(const void * x, float * y, int64_t k) {
    const block_tq2_0 * b = x;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = ggmlx_fp16_to_fp32(b[i].d);
        for (int g = 0; g < 2; g++) {
            for (int l = 0; l < 4; l++) {
                for (int m = 0; m < 32; m++) {
                    const int q = (b[i].qs[32 * g + m] >> (2 * l)) & 3;
                    y[128 * g + 32 * l + m] = (float) (q - 1) * d;
                }
            }
        }
        y += QK_K;
    }
}

void ggmlx_quantize_row_tq1_0_ref(const float * x, void * y, int64_t k) {
    block_tq1_0 * b = y;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        const float d  = absmax(x, QK_K);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        for (int m = 0; m < 32; m++) {
            uint8_t t = 0;
            for (int n = 0; n < 5; n++) {
                t = (uint8_t) (t * 3 + lroundf(x[m + 32 * n] * id) + 1);
            }
            b[i].qs[m] = pack_trits(t);
        }
        for (int m = 0; m < 16; m++) {
            uint8_t t = 0;
            for (int n = 0; n < 5; n++) {
                t = (uint8_t) (t * 3 + lroundf(x[160 + m + 16 * n] * id) + 1);
            }
            b[i].qs[32 + m] = pack_trits(t);
        }
        for (int j = 0; j < 4; j++) {
            uint8_t t = 0;
            for (int n = 0; n < 4; n++) {
                t = (uint8_t) (t * 3 + lroundf(x[240 + j + 4 * n] * id) + 1);
            }
            b[i].qh[j] = pack_trits((uint8_t) (t * 3));
        }
    }
}

void ggmlx_quantize_row_tq2_0_ref(const float * x, void * y, int64_t k) {
    block_tq2_0 * b = y;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        const float d  = absmax(x, QK_K);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = ggmlx_fp32_to_fp16(d);
        for (int g = 0; g < 2; g++) {
            for (int m = 0; m < 32; m++) {
                uint8_t q = 0;
                for (int l = 0; l < 4; l++) {
                    /* no clamp: a value is at most amax, and the mask keeps a stray one in its field */
                    const int t = (int) lroundf(x[128 * g + 32 * l + m] * id) + 1;
                    q = (uint8_t) (q + ((t & 3) << (2 * l)));
                }
                b[i].qs[32 * g + m] = q;
            }
        }
    }
}

size_t ggmlx_quantize_tq1_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix; /* three levels and one scale: nothing to weigh */
    ggmlx_quantize_row_tq1_0_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_tq1_0) * (size_t) (n_per_row / QK_K);
}

size_t ggmlx_quantize_tq2_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    (void) imatrix;
    ggmlx_quantize_row_tq2_0_ref(src, dst, nrows * n_per_row);
    return (size_t) nrows * sizeof(block_tq2_0) * (size_t) (n_per_row / QK_K);
}
