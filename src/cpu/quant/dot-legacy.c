/*
 * dot-legacy.c -- portable dot products of the 32-element formats (and the 64/128-element NVFP4,
 * Q1_0 and Q2_0, which span several Q8_0 blocks) with their 8-bit activations. Each block's
 * products are summed exactly in integers and scaled once, so the only rounding is in the float
 * accumulation across blocks.
 */
#include "qdot.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"
#include "ggmlx-quant-tables.h"

#include <string.h>

static inline float h2f(ggmlx_half h) { return ggmlx_fp16_to_fp32(h); }

static void vec_dot_q4_0_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK4_0;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            sumi += ((x[i].qs[j] & 15) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + QK4_0 / 2];
        }
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d));
    }
    *s = acc;
}

static void vec_dot_q4_1_q8_1(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_1 * restrict x  = vx;
    const block_q8_1 * restrict y  = vy;
    const int                   nb = n / QK4_1;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK4_1 / 2; j++) {
            sumi += (x[i].qs[j] & 15) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + QK4_1 / 2];
        }
        /* the minimum times the sum of the activations, which y carries as s */
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d)) + h2f(x[i].m) * h2f(y[i].s);
    }
    *s = acc;
}

static void vec_dot_q5_0_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q5_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK5_0;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof(qh));
        int sumi = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            const int lo = (x[i].qs[j] & 15) | (int)(((qh >> j) & 1u) << 4);
            const int hi = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            sumi += (lo - 16) * y[i].qs[j] + (hi - 16) * y[i].qs[j + QK5_0 / 2];
        }
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d));
    }
    *s = acc;
}

static void vec_dot_q5_1_q8_1(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q5_1 * restrict x  = vx;
    const block_q8_1 * restrict y  = vy;
    const int                   nb = n / QK5_1;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        uint32_t qh;
        memcpy(&qh, x[i].qh, sizeof(qh));
        int sumi = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            const int lo = (x[i].qs[j] & 15) | (int)(((qh >> j) & 1u) << 4);
            const int hi = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
            sumi += lo * y[i].qs[j] + hi * y[i].qs[j + QK5_1 / 2];
        }
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d)) + h2f(x[i].m) * h2f(y[i].s);
    }
    *s = acc;
}

static void vec_dot_q8_0_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q8_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK8_0;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; j++) {
            sumi += x[i].qs[j] * y[i].qs[j];
        }
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d));
    }
    *s = acc;
}

/* the 16-entry codebook formats: a nibble picks an int8 value */
static inline int dot_nibbles_lut(const uint8_t * qs, const int8_t * lut, const int8_t * y) {
    int sumi = 0;
    for (int j = 0; j < 16; j++) {
        sumi += lut[qs[j] & 15] * y[j] + lut[qs[j] >> 4] * y[j + 16];
    }
    return sumi;
}

static void vec_dot_iq4_nl_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq4_nl * restrict x  = vx;
    const block_q8_0 * restrict   y  = vy;
    const int                     nb = n / QK4_NL;
    float                         acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int sumi = dot_nibbles_lut(x[i].qs, ggmlx_kvalues_iq4nl, y[i].qs);
        acc += (float)sumi * (h2f(x[i].d) * h2f(y[i].d));
    }
    *s = acc;
}

static void vec_dot_mxfp4_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_mxfp4 * restrict x  = vx;
    const block_q8_0 * restrict  y  = vy;
    const int                    nb = n / QK_MXFP4;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int sumi = dot_nibbles_lut(x[i].qs, ggmlx_kvalues_fp4, y[i].qs);
        acc += (float)sumi * (ggmlx_e8m0_to_fp32_half(x[i].e) * h2f(y[i].d));
    }
    *s = acc;
}

static void vec_dot_nvfp4_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_nvfp4 * restrict x  = vx;
    const block_q8_0 * restrict  y  = vy;
    const int                    nb = n / QK_NVFP4;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        for (int sb = 0; sb < QK_NVFP4 / QK_NVFP4_SUB; sb++) {
            /* a sub-block is half of a Q8_0 block: elements 16 sb .. 16 sb + 15 */
            const block_q8_0 * yb = &y[2 * i + sb / 2];
            const int8_t *     yq = yb->qs + 16 * (sb % 2);
            const uint8_t *    q  = x[i].qs + 8 * sb;
            int                sumi = 0;
            for (int j = 0; j < 8; j++) {
                sumi += ggmlx_kvalues_fp4[q[j] & 15] * yq[j] + ggmlx_kvalues_fp4[q[j] >> 4] * yq[j + 8];
            }
            acc += (float)sumi * (ggmlx_ue4m3_to_fp32(x[i].d[sb]) * h2f(yb->d));
        }
    }
    *s = acc;
}

static void vec_dot_q1_0_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q1_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK1_0;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const float dx = h2f(x[i].d);
        for (int b = 0; b < QK1_0 / QK8_0; b++) {
            const block_q8_0 * yb   = &y[4 * i + b];
            int                sumi = 0;
            for (int j = 0; j < QK8_0; j++) {
                const int e = 32 * b + j;
                sumi += (2 * ((x[i].qs[e / 8] >> (e % 8)) & 1) - 1) * yb->qs[j]; /* +-1 without a branch */
            }
            acc += (float)sumi * (dx * h2f(yb->d));
        }
    }
    *s = acc;
}

static void vec_dot_q2_0_q8_0(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q2_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK2_0;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const float dx = h2f(x[i].d);
        for (int b = 0; b < QK2_0 / QK8_0; b++) {
            const block_q8_0 * yb   = &y[2 * i + b];
            int                sumi = 0;
            for (int j = 0; j < QK8_0; j++) {
                const int e = 32 * b + j;
                sumi += (((x[i].qs[e / 4] >> (2 * (e % 4))) & 3) - 1) * yb->qs[j];
            }
            acc += (float)sumi * (dx * h2f(yb->d));
        }
    }
    *s = acc;
}

void ggmlx_qdot_fill_legacy(ggmlx_qdot_table t) {
    t[GGML_TYPE_Q4_0].vec_dot   = vec_dot_q4_0_q8_0;
    t[GGML_TYPE_Q4_1].vec_dot   = vec_dot_q4_1_q8_1;
    t[GGML_TYPE_Q5_0].vec_dot   = vec_dot_q5_0_q8_0;
    t[GGML_TYPE_Q5_1].vec_dot   = vec_dot_q5_1_q8_1;
    t[GGML_TYPE_Q8_0].vec_dot   = vec_dot_q8_0_q8_0;
    t[GGML_TYPE_IQ4_NL].vec_dot = vec_dot_iq4_nl_q8_0;
    t[GGML_TYPE_MXFP4].vec_dot  = vec_dot_mxfp4_q8_0;
    t[GGML_TYPE_NVFP4].vec_dot  = vec_dot_nvfp4_q8_0;
    t[GGML_TYPE_Q1_0].vec_dot   = vec_dot_q1_0_q8_0;
    t[GGML_TYPE_Q2_0].vec_dot   = vec_dot_q2_0_q8_0;
}
