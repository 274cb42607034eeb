/*
 * dot-iq.c -- portable dot products of the codebook (IQ) super-block formats with Q8_K rows:
 * each 8 (or 4) values come from a grid entry, with signs from a sign byte; the group's integer
 * sum is scaled by its sub-block scale. Scales of the form d * (0.5 + s) * 0.25 are applied as
 * the integer (2 s + 1) and a final 1/8, which is exact.
 */
#include "qdot.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"
#include "quant/quant-tables.h"

#include <string.h>

static inline float h2f(ggmlx_half h) { return ggmlx_fp16_to_fp32(h); }

/* sum over 8 values of grid byte j (negated where bit j of signs is set) times y[j] */
static inline int dot8_signed(uint64_t grid, uint8_t signs, const int8_t * y) {
    int sum = 0;
    for (int j = 0; j < 8; j++) {
        /* the sign as a factor, not a branch: sign bits are random, a branch mispredicts half the time */
        const int g = (int)((grid >> (8 * j)) & 0xff) * (1 - 2 * ((signs >> j) & 1));
        sum += g * y[j];
    }
    return sum;
}

/* the same for two 4-value grid entries (IQ3 formats) */
static inline int dot4x2_signed(uint32_t g1, uint32_t g2, uint8_t signs, const int8_t * y) {
    return dot8_signed((uint64_t)g1 | ((uint64_t)g2 << 32), signs, y);
}

static void vec_dot_iq2_xxs_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    float                          acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t * yq   = y[i].qs;
        int            sumi = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            uint32_t a[2];
            memcpy(a, x[i].qs + 4 * g, sizeof(a));
            const uint8_t * idx = (const uint8_t *)&a[0];
            int             sub = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t signs = ggmlx_ksigns_iq2xs[(a[1] >> (7 * l)) & 127];
                sub += dot8_signed(ggmlx_iq2xxs_grid[idx[l]], signs, yq + 32 * g + 8 * l);
            }
            sumi += (int)(2 * (a[1] >> 28) + 1) * sub;
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = 0.125f * acc;
}

static void vec_dot_iq2_xs_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    float                         acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t * yq   = y[i].qs;
        int            sumi = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            int sub[2] = { 0, 0 };
            for (int l = 0; l < 4; l++) {
                const uint16_t q = x[i].qs[4 * g + l];
                sub[l / 2] += dot8_signed(ggmlx_iq2xs_grid[q & 511], ggmlx_ksigns_iq2xs[q >> 9], yq + 32 * g + 8 * l);
            }
            sumi += (2 * (x[i].scales[g] & 15) + 1) * sub[0] + (2 * (x[i].scales[g] >> 4) + 1) * sub[1];
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = 0.125f * acc;
}

static void vec_dot_iq2_s_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t *  yq    = y[i].qs;
        const uint8_t * signs = x[i].qs + QK_K / 8;
        int             sumi  = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            int sub[2] = { 0, 0 };
            for (int l = 0; l < 4; l++) {
                const int idx = x[i].qs[4 * g + l] | ((x[i].qh[g] << (8 - 2 * l)) & 0x300);
                sub[l / 2] += dot8_signed(ggmlx_iq2s_grid[idx], signs[4 * g + l], yq + 32 * g + 8 * l);
            }
            sumi += (2 * (x[i].scales[g] & 15) + 1) * sub[0] + (2 * (x[i].scales[g] >> 4) + 1) * sub[1];
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = 0.125f * acc;
}

static void vec_dot_iq3_xxs_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    float                          acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t *  yq   = y[i].qs;
        const uint8_t * q    = x[i].qs;
        int             sumi = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            uint32_t w;
            memcpy(&w, x[i].qs + QK_K / 4 + 4 * g, sizeof(w));
            int sub = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t signs = ggmlx_ksigns_iq2xs[(w >> (7 * l)) & 127];
                sub += dot4x2_signed(ggmlx_iq3xxs_grid[q[8 * g + 2 * l]], ggmlx_iq3xxs_grid[q[8 * g + 2 * l + 1]], signs,
                                     yq + 32 * g + 8 * l);
            }
            sumi += (int)(2 * (w >> 28) + 1) * sub;
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    /* (0.5 + s) * 0.5 = (2 s + 1) / 4 */
    *s = 0.25f * acc;
}

static void vec_dot_iq3_s_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t *  yq   = y[i].qs;
        const uint8_t * q    = x[i].qs;
        int             sumi = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            const int qh  = x[i].qh[g];
            int       sub = 0;
            for (int l = 0; l < 4; l++) {
                const int i1 = q[8 * g + 2 * l] | ((qh << (8 - 2 * l)) & 256);
                const int i2 = q[8 * g + 2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
                sub += dot4x2_signed(ggmlx_iq3s_grid[i1], ggmlx_iq3s_grid[i2], x[i].signs[4 * g + l], yq + 32 * g + 8 * l);
            }
            const int nib = (x[i].scales[g / 2] >> (4 * (g % 2))) & 15;
            sumi += (2 * nib + 1) * sub;
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

/* 8 grid values (int8 in {-1, 0, 1}) times y */
static inline int dot8_iq1(uint64_t grid, const int8_t * y) {
    int sum = 0;
    for (int j = 0; j < 8; j++) {
        sum += (int8_t)((grid >> (8 * j)) & 0xff) * y[j];
    }
    return sum;
}

static inline int sum8(const int8_t * y) {
    int sum = 0;
    for (int j = 0; j < 8; j++) {
        sum += y[j];
    }
    return sum;
}

static void vec_dot_iq1_s_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq1_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t * yq   = y[i].qs;
        int            sumi = 0; /* sum of scale * grid . y */
        int            sumd = 0; /* sum of scale * delta sign * sum(y), delta being 1/8 */
        for (int g = 0; g < QK_K / 32; g++) {
            const int qh  = x[i].qh[g];
            int       sub = 0;
            for (int l = 0; l < 4; l++) {
                const int idx = x[i].qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
                sub += dot8_iq1(ggmlx_iq1s_grid[idx], yq + 32 * g + 8 * l);
            }
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            const int ys = y[i].bsums[2 * g] + y[i].bsums[2 * g + 1];
            sumi += ls * sub;
            sumd += ls * ((qh & 0x8000) ? -ys : ys);
        }
        acc += h2f(x[i].d) * y[i].d * ((float)sumi + 0.125f * (float)sumd);
    }
    *s = acc;
}

static void vec_dot_iq1_m_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq1_m * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        uint16_t sc[4];
        memcpy(sc, x[i].scales, sizeof(sc));
        /* the super-block scale is spread over the top nibbles of the four words */
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                          (sc[3] & 0xf000));
        const int8_t * yq   = y[i].qs;
        int            sumi = 0, sumd = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * qs = x[i].qs + 4 * g;
            const uint8_t * qh = x[i].qh + 2 * g;
            const int       ls[2] = { 2 * ((sc[g / 2] >> (6 * (g % 2))) & 7) + 1,
                                      2 * ((sc[g / 2] >> (6 * (g % 2) + 3)) & 7) + 1 };
            for (int l = 0; l < 4; l++) {
                const int     hbyte = qh[l / 2] >> (4 * (l % 2)); /* this 8-group's nibble of qh */
                const int     idx   = qs[l] | ((hbyte & 7) << 8);
                const int8_t * yl   = yq + 32 * g + 8 * l;
                const int     ys    = sum8(yl);
                sumi += ls[l / 2] * dot8_iq1(ggmlx_iq1s_grid[idx], yl);
                sumd += ls[l / 2] * ((hbyte & 8) ? -ys : ys);
            }
        }
        acc += h2f(dbits) * y[i].d * ((float)sumi + 0.125f * (float)sumd);
    }
    *s = acc;
}

static void vec_dot_iq4_xs_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq4_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    float                         acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int g = 0; g < QK_K / 32; g++) {
            const int ls = (((x[i].scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((x[i].scales_h >> (2 * g)) & 3) << 4)) - 32;
            const uint8_t * q   = x[i].qs + 16 * g;
            const int8_t *  yq  = y[i].qs + 32 * g;
            int             sub = 0;
            for (int j = 0; j < 16; j++) {
                sub += ggmlx_kvalues_iq4nl[q[j] & 15] * yq[j] + ggmlx_kvalues_iq4nl[q[j] >> 4] * yq[j + 16];
            }
            sumi += ls * sub;
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

void ggmlx_qdot_fill_iq(ggmlx_qdot_table t) {
    t[GGML_TYPE_IQ2_XXS].vec_dot = vec_dot_iq2_xxs_q8_K;
    t[GGML_TYPE_IQ2_XS].vec_dot  = vec_dot_iq2_xs_q8_K;
    t[GGML_TYPE_IQ2_S].vec_dot   = vec_dot_iq2_s_q8_K;
    t[GGML_TYPE_IQ3_XXS].vec_dot = vec_dot_iq3_xxs_q8_K;
    t[GGML_TYPE_IQ3_S].vec_dot   = vec_dot_iq3_s_q8_K;
    t[GGML_TYPE_IQ1_S].vec_dot   = vec_dot_iq1_s_q8_K;
    t[GGML_TYPE_IQ1_M].vec_dot   = vec_dot_iq1_m_q8_K;
    t[GGML_TYPE_IQ4_XS].vec_dot  = vec_dot_iq4_xs_q8_K;
}
