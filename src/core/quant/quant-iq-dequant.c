/*
 * quant-iq-dequant.c -- the codebook (IQ) formats back to F32.
 *
 * Each 8 (IQ2, IQ1) or 4 (IQ3) values are one grid entry of magnitudes times a scale; the signs
 * come either from a 7-bit index into ksigns (whose eighth bit restores even parity) or from an
 * explicit sign byte. The arithmetic order (scale first, then magnitude, then sign) is the one
 * upstream and the PyPI gguf package use, so the results are bit-identical to theirs.
 */
#include "quant-iq.h"

#include "ggml-math.h"
#include "quant-tables.h"

#include <string.h>

static inline uint8_t grid8_byte(uint64_t entry, int j) {
    return (uint8_t) (entry >> (8 * j));
}

static inline int8_t grid8_int(uint64_t entry, int j) {
    return (int8_t) (uint8_t) (entry >> (8 * j));
}

static inline uint8_t grid4_byte(uint32_t entry, int j) {
    return (uint8_t) (entry >> (8 * j));
}

static inline float sign_of(uint8_t signs, int j) {
    return (signs & ggmlx_kmask_iq2xs[j]) ? -1.0f : 1.0f;
}

/* the blocks' uint16/uint32 fields are little-endian on disk; read them byte-wise */
static inline uint32_t load_u32(const void * p) {
    const uint8_t * b = p;
    return (uint32_t) b[0] | ((uint32_t) b[1] << 8) | ((uint32_t) b[2] << 16) | ((uint32_t) b[3] << 24);
}

static inline uint16_t load_u16(const void * p) {
    const uint8_t * b = p;
    return (uint16_t) (b[0] | (b[1] << 8));
}

/* eight values of one IQ2 grid entry with a scale and a sign byte */
static inline void put_iq2_group(float * y, float db, uint64_t entry, uint8_t signs) {
    for (int j = 0; j < 8; ++j) {
        y[j] = db * grid8_byte(entry, j) * sign_of(signs, j);
    }
}

void ggmlx_dequantize_row_iq2_xxs(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq2_xxs * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float     d  = ggmlx_fp16_to_fp32(x[i].d);
        const uint8_t * qs = (const uint8_t *) x[i].qs;
        for (int g = 0; g < QK_K / 32; ++g) {
            /* per 32 values: four grid indices, then 4 x 7 sign bits and a 4-bit scale */
            const uint8_t * idx  = qs + 8 * g;
            const uint32_t  aux  = load_u32(qs + 8 * g + 4);
            const float     db   = d * (0.5f + (float) (aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; ++l) {
                const uint8_t signs = ggmlx_ksigns_iq2xs[(aux >> (7 * l)) & 127];
                put_iq2_group(y, db, ggmlx_iq2xxs_grid[idx[l]], signs);
                y += 8;
            }
        }
    }
}

void ggmlx_dequantize_row_iq2_xs(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq2_xs * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float d = ggmlx_fp16_to_fp32(x[i].d);
        for (int g = 0; g < QK_K / 32; ++g) {
            const float db[2] = {
                d * (0.5f + (float) (x[i].scales[g] & 0xf)) * 0.25f,
                d * (0.5f + (float) (x[i].scales[g] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; ++l) {
                /* 9 bits of grid index, 7 bits of sign index */
                const uint16_t q = load_u16(&x[i].qs[4 * g + l]);
                put_iq2_group(y, db[l / 2], ggmlx_iq2xs_grid[q & 511], ggmlx_ksigns_iq2xs[q >> 9]);
                y += 8;
            }
        }
    }
}

void ggmlx_dequantize_row_iq2_s(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq2_s * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float     d     = ggmlx_fp16_to_fp32(x[i].d);
        const uint8_t * qs    = x[i].qs;
        const uint8_t * signs = x[i].qs + QK_K / 8;
        for (int g = 0; g < QK_K / 32; ++g) {
            const float db[2] = {
                d * (0.5f + (float) (x[i].scales[g] & 0xf)) * 0.25f,
                d * (0.5f + (float) (x[i].scales[g] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; ++l) {
                /* qh[g] holds the two high index bits of each of the four groups, low pair first */
                const int idx = qs[4 * g + l] | (((x[i].qh[g] >> (2 * l)) & 3) << 8);
                put_iq2_group(y, db[l / 2], ggmlx_iq2s_grid[idx], signs[4 * g + l]);
                y += 8;
            }
        }
    }
}

void ggmlx_dequantize_row_iq3_xxs(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq3_xxs * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float     d   = ggmlx_fp16_to_fp32(x[i].d);
        const uint8_t * qs  = x[i].qs;
        const uint8_t * aux = x[i].qs + QK_K / 4;
        for (int g = 0; g < QK_K / 32; ++g) {
            const uint32_t w  = load_u32(aux + 4 * g);
            const float    db = d * (0.5f + (float) (w >> 28)) * 0.5f;
            for (int l = 0; l < 4; ++l) {
                const uint8_t  signs = ggmlx_ksigns_iq2xs[(w >> (7 * l)) & 127];
                const uint32_t lo    = ggmlx_iq3xxs_grid[qs[8 * g + 2 * l + 0]];
                const uint32_t hi    = ggmlx_iq3xxs_grid[qs[8 * g + 2 * l + 1]];
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db * grid4_byte(lo, j) * sign_of(signs, j + 0);
                    y[j + 4] = db * grid4_byte(hi, j) * sign_of(signs, j + 4);
                }
                y += 8;
            }
        }
    }
}

void ggmlx_dequantize_row_iq3_s(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq3_s * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float d = ggmlx_fp16_to_fp32(x[i].d);
        for (int g = 0; g < QK_K / 32; ++g) {
            const int       sc    = (x[i].scales[g / 2] >> (4 * (g % 2))) & 0xf;
            const float     db    = d * (float) (1 + 2 * sc);
            const uint8_t * qs    = x[i].qs + 8 * g;
            const uint8_t * signs = x[i].signs + 4 * g;
            /* qh[g]: bit m is the ninth index bit of the m-th 4-value entry of this group */
            const int       qh    = x[i].qh[g];
            for (int l = 0; l < 4; ++l) {
                const uint32_t lo = ggmlx_iq3s_grid[qs[2 * l + 0] | (((qh >> (2 * l + 0)) & 1) << 8)];
                const uint32_t hi = ggmlx_iq3s_grid[qs[2 * l + 1] | (((qh >> (2 * l + 1)) & 1) << 8)];
                for (int j = 0; j < 4; ++j) {
                    y[j + 0] = db * grid4_byte(lo, j) * sign_of(signs[l], j + 0);
                    y[j + 4] = db * grid4_byte(hi, j) * sign_of(signs[l], j + 4);
                }
                y += 8;
            }
        }
    }
}

void ggmlx_dequantize_row_iq1_s(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq1_s * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float d = ggmlx_fp16_to_fp32(x[i].d);
        for (int g = 0; g < QK_K / 32; ++g) {
            /* qh: 4 x 3 high index bits, a 3-bit scale, and the sign of the delta on top */
            const uint16_t qh    = load_u16(&x[i].qh[g]);
            const float    dl    = d * (float) (2 * ((qh >> 12) & 7) + 1);
            const float    delta = (qh & 0x8000) ? -IQ1S_DELTA : IQ1S_DELTA;
            for (int l = 0; l < 4; ++l) {
                const int      idx   = x[i].qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
                const uint64_t entry = ggmlx_iq1s_grid[idx];
                for (int j = 0; j < 8; ++j) {
                    y[j] = dl * ((float) grid8_int(entry, j) + delta);
                }
                y += 8;
            }
        }
    }
}

/* IQ1_M has no d field: the half's 16 bits are the top nibbles of the four scale words */
static uint16_t iq1m_super_scale(const block_iq1_m * b) {
    const uint16_t s0 = load_u16(b->scales + 0), s1 = load_u16(b->scales + 2);
    const uint16_t s2 = load_u16(b->scales + 4), s3 = load_u16(b->scales + 6);
    return (uint16_t) ((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000));
}

void ggmlx_dequantize_row_iq1_m(const void * restrict vx, float * restrict y, int64_t k) {
    const block_iq1_m * x = vx;
    for (int64_t i = 0; i < k / QK_K; ++i) {
        const float d = ggmlx_fp16_to_fp32(iq1m_super_scale(&x[i]));
        for (int g = 0; g < QK_K / 32; ++g) {
            /* the scale word of groups 2m and 2m+1 holds two 3-bit scales for each (16 values each) */
            const uint16_t sc    = load_u16(x[i].scales + 2 * (g / 2));
            const int      shift = 6 * (g % 2);
            const float    dl[2] = {
                d * (float) (2 * ((sc >> (shift + 0)) & 7) + 1),
                d * (float) (2 * ((sc >> (shift + 3)) & 7) + 1),
            };
            for (int l = 0; l < 4; ++l) {
                /* qh byte per pair of entries: 3 index bits and a delta sign bit in each nibble */
                const int      nib   = (x[i].qh[2 * g + l / 2] >> (4 * (l % 2))) & 0xf;
                const int      idx   = x[i].qs[4 * g + l] | ((nib & 7) << 8);
                const float    delta = (nib & 8) ? -IQ1M_DELTA : IQ1M_DELTA;
                const uint64_t entry = ggmlx_iq1s_grid[idx];
                for (int j = 0; j < 8; ++j) {
                    y[j] = dl[l / 2] * ((float) grid8_int(entry, j) + delta);
                }
                y += 8;
            }
        }
    }
}
