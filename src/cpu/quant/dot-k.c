/*
 * dot-k.c -- portable dot products of the K-quants and the ternary formats with Q8_K rows. Sums
 * are exact in integers per super-block; the sub-block minima of Q2_K/Q4_K/Q5_K use the Q8_K
 * block sums (bsums) instead of a pass over the activations.
 */
#include "qdot.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"

#include <string.h>

static inline float h2f(ggmlx_half h) { return ggmlx_fp16_to_fp32(h); }

/* Q4_K/Q5_K's 12-byte packing of eight 6-bit scales and eight 6-bit minima */
static inline void k4_scale_min(int j, const uint8_t * q, int * sc, int * m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m  = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        *m  = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void vec_dot_q2_K_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q2_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sum_min = 0;
        for (int j = 0; j < 16; j++) {
            sum_min += (x[i].scales[j] >> 4) * y[i].bsums[j];
        }
        int sumi = 0;
        /* elements 128 h + 32 k + l take bits 2k of byte 32 h + l */
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < 4; k++) {
                const uint8_t * q  = x[i].qs + 32 * h;
                const int8_t *  yq = y[i].qs + 128 * h + 32 * k;
                int             sub[2] = { 0, 0 };
                for (int l = 0; l < 32; l++) {
                    sub[l / 16] += ((q[l] >> (2 * k)) & 3) * yq[l];
                }
                const int j = 8 * h + 2 * k;
                sumi += (x[i].scales[j] & 15) * sub[0] + (x[i].scales[j + 1] & 15) * sub[1];
            }
        }
        acc += y[i].d * (h2f(x[i].d) * (float)sumi - h2f(x[i].dmin) * (float)sum_min);
    }
    *s = acc;
}

static void vec_dot_q3_K_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q3_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sc[16];
        for (int j = 0; j < 16; j++) {
            const int lo = j < 8 ? x[i].scales[j] & 15 : x[i].scales[j - 8] >> 4;
            const int hi = (x[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j]        = (lo | (hi << 4)) - 32;
        }
        int sumi = 0;
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < 4; k++) {
                const uint8_t * q  = x[i].qs + 32 * h;
                const int8_t *  yq = y[i].qs + 128 * h + 32 * k;
                int             sub[2] = { 0, 0 };
                for (int l = 0; l < 32; l++) {
                    /* 0..3, less 4 where the high-mask bit (bit 4h + k of hmask[l]) is clear */
                    const int v = (int)((q[l] >> (2 * k)) & 3) - 4 + 4 * ((x[i].hmask[l] >> (4 * h + k)) & 1);
                    sub[l / 16] += v * yq[l];
                }
                sumi += sc[8 * h + 2 * k] * sub[0] + sc[8 * h + 2 * k + 1] * sub[1];
            }
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

static void vec_dot_q4_K_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0, sum_min = 0;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            k4_scale_min(j, x[i].scales, &sc, &m);
            const uint8_t * q     = x[i].qs + 32 * (j / 2);
            const int       shift = 4 * (j % 2);
            const int8_t *  yq    = y[i].qs + 32 * j;
            int             sub   = 0;
            for (int l = 0; l < 32; l++) {
                sub += ((q[l] >> shift) & 15) * yq[l];
            }
            sumi += sc * sub;
            sum_min += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        acc += y[i].d * (h2f(x[i].d) * (float)sumi - h2f(x[i].dmin) * (float)sum_min);
    }
    *s = acc;
}

static void vec_dot_q5_K_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q5_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0, sum_min = 0;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            k4_scale_min(j, x[i].scales, &sc, &m);
            const uint8_t * q     = x[i].qs + 32 * (j / 2);
            const int       shift = 4 * (j % 2);
            const int8_t *  yq    = y[i].qs + 32 * j;
            int             sub   = 0;
            for (int l = 0; l < 32; l++) {
                const int v = ((q[l] >> shift) & 15) | (((x[i].qh[l] >> j) & 1) << 4);
                sub += v * yq[l];
            }
            sumi += sc * sub;
            sum_min += m * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        }
        acc += y[i].d * (h2f(x[i].d) * (float)sumi - h2f(x[i].dmin) * (float)sum_min);
    }
    *s = acc;
}

static void vec_dot_q6_K_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q6_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int h = 0; h < 2; h++) {
            const uint8_t * ql = x[i].ql + 64 * h;
            const uint8_t * qh = x[i].qh + 32 * h;
            const int8_t *  yq = y[i].qs + 128 * h;
            const int8_t *  sc = x[i].scales + 8 * h;
            for (int l = 0; l < 32; l++) {
                const int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                sumi += sc[l / 16 + 0] * q1 * yq[l] + sc[l / 16 + 2] * q2 * yq[l + 32] +
                        sc[l / 16 + 4] * q3 * yq[l + 64] + sc[l / 16 + 6] * q4 * yq[l + 96];
            }
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

static void vec_dot_tq2_0_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_tq2_0 * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        int sumi = 0;
        for (int g = 0; g < 2; g++) {
            for (int l = 0; l < 4; l++) {
                for (int m = 0; m < 32; m++) {
                    const int q = ((x[i].qs[32 * g + m] >> (2 * l)) & 3) - 1;
                    sumi += q * y[i].qs[128 * g + 32 * l + m];
                }
            }
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

/* trit k (0 = most significant) of a byte holding ceil(v * 256 / 243): scale up, keep the top */
static inline int tq1_trit(uint8_t byte, int k) {
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t        shifted = (uint8_t)(byte * pow3[k]);
    return (int)(((uint16_t)shifted * 3) >> 8) - 1;
}

static void vec_dot_tq1_0_q8_K(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_tq1_0 * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t * yq   = y[i].qs;
        int            sumi = 0;
        for (int k = 0; k < 5; k++) {
            for (int m = 0; m < 32; m++) {
                sumi += tq1_trit(x[i].qs[m], k) * yq[32 * k + m];
            }
            for (int m = 0; m < 16; m++) {
                sumi += tq1_trit(x[i].qs[32 + m], k) * yq[160 + 16 * k + m];
            }
        }
        for (int k = 0; k < 4; k++) {
            for (int m = 0; m < 4; m++) {
                sumi += tq1_trit(x[i].qh[m], k) * yq[240 + 4 * k + m];
            }
        }
        acc += h2f(x[i].d) * y[i].d * (float)sumi;
    }
    *s = acc;
}

void ggmlx_qdot_fill_k(ggmlx_qdot_table t) {
    t[GGML_TYPE_Q2_K].vec_dot  = vec_dot_q2_K_q8_K;
    t[GGML_TYPE_Q3_K].vec_dot  = vec_dot_q3_K_q8_K;
    t[GGML_TYPE_Q4_K].vec_dot  = vec_dot_q4_K_q8_K;
    t[GGML_TYPE_Q5_K].vec_dot  = vec_dot_q5_K_q8_K;
    t[GGML_TYPE_Q6_K].vec_dot  = vec_dot_q6_K_q8_K;
    t[GGML_TYPE_TQ1_0].vec_dot = vec_dot_tq1_0_q8_K;
    t[GGML_TYPE_TQ2_0].vec_dot = vec_dot_tq2_0_q8_K;
}
