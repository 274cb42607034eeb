/*
 * test-quant-dot.c -- the CPU type traits' quantized kernels: every type's vec_dot, in every
 * instruction-set variant this CPU runs, against a double-precision reference written here from
 * the block formats (dequantize the weight block and the 8-bit activation, multiply, sum); and
 * the activation quantizers (Q8_0, Q8_1, Q8_K) byte for byte against the reference rules and
 * across variants.
 *
 * Tolerance: a kernel sums each (sub-)block's products exactly in integers, then does a few float
 * roundings per block (scale products, the int -> float conversion, the fused subtraction of the
 * minima) and accumulates at most a few hundred block terms. Each rounding is at most 2^-24
 * relative to its own term, and the accumulation adds at most (terms) * 2^-24 relative to the
 * sum of the terms' magnitudes, which is at most M = sum over elements of (|scale part| +
 * |min part|) * |activation|. With at most 17 super-blocks of 16 sub-blocks (272 terms), the
 * error is below 300 * 2^-24 * M < 2e-5 * M; we allow 4e-5 * M.
 */
#include "test-util.h"

#include "quant/qdot.h"
#include "quant/quant-blocks.h"
#include "ggmlx-quant-tables.h"

#include <criterion/criterion.h>

/* ---- the reference dequantizers (double), with each element's magnitude bound ------------- */

static double h2d(uint16_t h) { return (double)ggmlx_fp16_to_fp32(h); }

static uint16_t rd16(const uint8_t * p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t * p) { return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24); }

/* value v[e] and bound m[e] of every element of one block */
typedef void (*deq_fn)(const uint8_t * b, double * v, double * m);

static void set(double * v, double * m, int e, double val, double mag) {
    v[e] = val;
    m[e] = mag;
}

static void deq_q4_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int j = 0; j < 16; j++) {
        set(v, m, j, d * ((b[2 + j] & 15) - 8), fabs(d * ((b[2 + j] & 15) - 8)));
        set(v, m, j + 16, d * ((b[2 + j] >> 4) - 8), fabs(d * ((b[2 + j] >> 4) - 8)));
    }
}
static void deq_q4_1(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b)), mn = h2d(rd16(b + 2));
    for (int j = 0; j < 16; j++) {
        set(v, m, j, d * (b[4 + j] & 15) + mn, fabs(d * (b[4 + j] & 15)) + fabs(mn));
        set(v, m, j + 16, d * (b[4 + j] >> 4) + mn, fabs(d * (b[4 + j] >> 4)) + fabs(mn));
    }
}
static void deq_q5_0(const uint8_t * b, double * v, double * m) {
    const double   d  = h2d(rd16(b));
    const uint32_t qh = rd32(b + 2);
    for (int j = 0; j < 16; j++) {
        const int lo = (b[6 + j] & 15) | (((qh >> j) & 1) << 4), hi = (b[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        set(v, m, j, d * (lo - 16), fabs(d * (lo - 16)));
        set(v, m, j + 16, d * (hi - 16), fabs(d * (hi - 16)));
    }
}
static void deq_q5_1(const uint8_t * b, double * v, double * m) {
    const double   d = h2d(rd16(b)), mn = h2d(rd16(b + 2));
    const uint32_t qh = rd32(b + 4);
    for (int j = 0; j < 16; j++) {
        const int lo = (b[8 + j] & 15) | (((qh >> j) & 1) << 4), hi = (b[8 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
        set(v, m, j, d * lo + mn, fabs(d * lo) + fabs(mn));
        set(v, m, j + 16, d * hi + mn, fabs(d * hi) + fabs(mn));
    }
}
static void deq_q8_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int j = 0; j < 32; j++) {
        set(v, m, j, d * (int8_t)b[2 + j], fabs(d * (int8_t)b[2 + j]));
    }
}
static void deq_lut32(const uint8_t * qs, double d, const int8_t * lut, double * v, double * m) {
    for (int j = 0; j < 16; j++) {
        set(v, m, j, d * lut[qs[j] & 15], fabs(d * lut[qs[j] & 15]));
        set(v, m, j + 16, d * lut[qs[j] >> 4], fabs(d * lut[qs[j] >> 4]));
    }
}
static void deq_iq4_nl(const uint8_t * b, double * v, double * m) { deq_lut32(b + 2, h2d(rd16(b)), ggmlx_kvalues_iq4nl, v, m); }
static void deq_mxfp4(const uint8_t * b, double * v, double * m) {
    /* 2^(e - 128) against the doubled E2M1 table is 2^(e - 127) against the true values */
    deq_lut32(b + 1, ldexp(1.0, b[0] - 128), ggmlx_kvalues_fp4, v, m);
}
static double ue4m3_half(uint8_t x) {
    if (x == 0 || x == 0x7f) {
        return 0.0;
    }
    const int ex = (x >> 3) & 15, man = x & 7;
    return 0.5 * (ex == 0 ? ldexp(man, -9) : ldexp(1.0 + man / 8.0, ex - 7));
}
static void deq_nvfp4(const uint8_t * b, double * v, double * m) {
    for (int sb = 0; sb < 4; sb++) {
        const double d = ue4m3_half(b[sb]);
        for (int j = 0; j < 8; j++) {
            const uint8_t q = b[4 + 8 * sb + j];
            set(v, m, 16 * sb + j, d * ggmlx_kvalues_fp4[q & 15], fabs(d * ggmlx_kvalues_fp4[q & 15]));
            set(v, m, 16 * sb + j + 8, d * ggmlx_kvalues_fp4[q >> 4], fabs(d * ggmlx_kvalues_fp4[q >> 4]));
        }
    }
}
static void deq_q1_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int e = 0; e < 128; e++) {
        set(v, m, e, ((b[2 + e / 8] >> (e % 8)) & 1) ? d : -d, fabs(d));
    }
}
static void deq_q2_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int e = 0; e < 64; e++) {
        const int q = ((b[2 + e / 4] >> (2 * (e % 4))) & 3) - 1;
        set(v, m, e, d * q, fabs(d * q));
    }
}
/* Q2_K/Q3_K: the 2-bit value of element e */
static int k2bits(const uint8_t * qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
static void deq_q2_K(const uint8_t * b, double * v, double * m) {
    const uint8_t * sc = b, *qs = b + 16;
    const double    d = h2d(rd16(b + 80)), dmin = h2d(rd16(b + 82));
    for (int e = 0; e < 256; e++) {
        const double a = d * (sc[e / 16] & 15) * k2bits(qs, e), c = dmin * (sc[e / 16] >> 4);
        set(v, m, e, a - c, fabs(a) + fabs(c));
    }
}
static void deq_q3_K(const uint8_t * b, double * v, double * m) {
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    const double   d = h2d(rd16(b + 108));
    for (int e = 0; e < 256; e++) {
        const int j  = e / 16;
        const int lo = j < 8 ? sc[j] & 15 : sc[j - 8] >> 4, hi = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
        const int q  = k2bits(qs, e) - (((hm[e % 32] >> (e / 32)) & 1) ? 0 : 4);
        const double val = d * ((lo | (hi << 4)) - 32) * q;
        set(v, m, e, val, fabs(val));
    }
}
static void k4sm(int j, const uint8_t * q, int * sc, int * mn) {
    if (j < 4) {
        *sc = q[j] & 63, *mn = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4), *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
static void deq_q45_K(const uint8_t * b, const uint8_t * qh, const uint8_t * qs, double * v, double * m) {
    const double d = h2d(rd16(b)), dmin = h2d(rd16(b + 2));
    for (int e = 0; e < 256; e++) {
        const int j = e / 32, l = e % 32;
        int       sc, mn;
        k4sm(j, b + 4, &sc, &mn);
        int q = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
        if (qh) {
            q |= ((qh[l] >> j) & 1) << 4;
        }
        const double a = d * sc * q, c = dmin * mn;
        set(v, m, e, a - c, fabs(a) + fabs(c));
    }
}
static void deq_q4_K(const uint8_t * b, double * v, double * m) { deq_q45_K(b, NULL, b + 16, v, m); }
static void deq_q5_K(const uint8_t * b, double * v, double * m) { deq_q45_K(b, b + 16, b + 48, v, m); }
static void deq_q6_K(const uint8_t * b, double * v, double * m) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t * sc = (const int8_t *)(b + 192);
    const double   d  = h2d(rd16(b + 208));
    for (int e = 0; e < 256; e++) {
        const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
        const int lowq = k < 2 ? ql[64 * h + l + 32 * k] & 15 : ql[64 * h + l + 32 * (k - 2)] >> 4;
        const int q    = (lowq | (((qh[32 * h + l] >> (2 * k)) & 3) << 4)) - 32;
        const double val = d * sc[8 * h + l / 16 + 2 * k] * q;
        set(v, m, e, val, fabs(val));
    }
}
static void deq_tq2_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b + 64));
    for (int g = 0; g < 2; g++) {
        for (int l = 0; l < 4; l++) {
            for (int k = 0; k < 32; k++) {
                const int q = ((b[32 * g + k] >> (2 * l)) & 3) - 1;
                set(v, m, 128 * g + 32 * l + k, d * q, fabs(d * q));
            }
        }
    }
}
static int trit(uint8_t byte, int k) {
    const int p[5] = { 1, 3, 9, 27, 81 };
    return ((((uint8_t)(byte * p[k])) * 3) >> 8) - 1;
}
static void deq_tq1_0(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b + 52));
    for (int k = 0; k < 5; k++) {
        for (int j = 0; j < 32; j++) {
            set(v, m, 32 * k + j, d * trit(b[j], k), fabs(d));
        }
        for (int j = 0; j < 16; j++) {
            set(v, m, 160 + 16 * k + j, d * trit(b[32 + j], k), fabs(d));
        }
    }
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < 4; j++) {
            set(v, m, 240 + 4 * k + j, d * trit(b[48 + j], k), fabs(d));
        }
    }
}
static void put8(double * v, double * m, int e0, double db, uint64_t grid, uint8_t signs) {
    for (int j = 0; j < 8; j++) {
        const double val = db * (double)((grid >> (8 * j)) & 255) * (((signs >> j) & 1) ? -1 : 1);
        set(v, m, e0 + j, val, fabs(val));
    }
}
static void deq_iq2_xxs(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int g = 0; g < 8; g++) {
        const uint32_t a0 = rd32(b + 2 + 8 * g), a1 = rd32(b + 6 + 8 * g);
        const double   db = d * (0.5 + (a1 >> 28)) * 0.25;
        for (int l = 0; l < 4; l++) {
            put8(v, m, 32 * g + 8 * l, db, ggmlx_iq2xxs_grid[(a0 >> (8 * l)) & 255], ggmlx_ksigns_iq2xs[(a1 >> (7 * l)) & 127]);
        }
    }
}
static void deq_iq2_xs(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int g = 0; g < 8; g++) {
        const uint8_t sc = b[66 + g];
        for (int l = 0; l < 4; l++) {
            const uint16_t q  = rd16(b + 2 + 2 * (4 * g + l));
            const double   db = d * (0.5 + (l < 2 ? sc & 15 : sc >> 4)) * 0.25;
            put8(v, m, 32 * g + 8 * l, db, ggmlx_iq2xs_grid[q & 511], ggmlx_ksigns_iq2xs[q >> 9]);
        }
    }
}
static void deq_iq2_s(const uint8_t * b, double * v, double * m) {
    const double   d  = h2d(rd16(b));
    const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
    for (int g = 0; g < 8; g++) {
        for (int l = 0; l < 4; l++) {
            const double db = d * (0.5 + (l < 2 ? sc[g] & 15 : sc[g] >> 4)) * 0.25;
            const int    ix = qs[4 * g + l] | ((qh[g] << (8 - 2 * l)) & 0x300);
            put8(v, m, 32 * g + 8 * l, db, ggmlx_iq2s_grid[ix], signs[4 * g + l]);
        }
    }
}
static void deq_iq3_xxs(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int g = 0; g < 8; g++) {
        const uint32_t w  = rd32(b + 2 + 64 + 4 * g);
        const double   db = d * (0.5 + (w >> 28)) * 0.5;
        for (int l = 0; l < 4; l++) {
            const uint64_t grid = ggmlx_iq3xxs_grid[b[2 + 8 * g + 2 * l]] | ((uint64_t)ggmlx_iq3xxs_grid[b[2 + 8 * g + 2 * l + 1]] << 32);
            put8(v, m, 32 * g + 8 * l, db, grid, ggmlx_ksigns_iq2xs[(w >> (7 * l)) & 127]);
        }
    }
}
static void deq_iq3_s(const uint8_t * b, double * v, double * m) {
    const double   d  = h2d(rd16(b));
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
    for (int g = 0; g < 8; g++) {
        const double db = d * (1 + 2 * ((sc[g / 2] >> (4 * (g % 2))) & 15));
        for (int l = 0; l < 4; l++) {
            const int i1 = qs[8 * g + 2 * l] | ((qh[g] << (8 - 2 * l)) & 256);
            const int i2 = qs[8 * g + 2 * l + 1] | ((qh[g] << (7 - 2 * l)) & 256);
            put8(v, m, 32 * g + 8 * l, db, ggmlx_iq3s_grid[i1] | ((uint64_t)ggmlx_iq3s_grid[i2] << 32), signs[4 * g + l]);
        }
    }
}
static void put_iq1(double * v, double * m, int e0, double dl, uint64_t grid, double delta) {
    for (int j = 0; j < 8; j++) {
        const double gv = (int8_t)((grid >> (8 * j)) & 255);
        set(v, m, e0 + j, dl * (gv + delta), fabs(dl * gv) + fabs(dl * delta));
    }
}
static void deq_iq1_s(const uint8_t * b, double * v, double * m) {
    const double d = h2d(rd16(b));
    for (int g = 0; g < 8; g++) {
        const uint16_t qh = rd16(b + 34 + 2 * g);
        const double   dl = d * (2 * ((qh >> 12) & 7) + 1), delta = (qh & 0x8000) ? -0.125 : 0.125;
        for (int l = 0; l < 4; l++) {
            put_iq1(v, m, 32 * g + 8 * l, dl, ggmlx_iq1s_grid[b[2 + 4 * g + l] | (((qh >> (3 * l)) & 7) << 8)], delta);
        }
    }
}
static uint16_t iq1m_dbits(const uint8_t * b) {
    const uint8_t * sc = b + 48;
    return (uint16_t)((rd16(sc) >> 12) | ((rd16(sc + 2) >> 8) & 0xf0) | ((rd16(sc + 4) >> 4) & 0xf00) | (rd16(sc + 6) & 0xf000));
}
static void deq_iq1_m(const uint8_t * b, double * v, double * m) {
    const uint8_t *qs = b, *qh = b + 32, *sc = b + 48;
    const double   d = h2d(iq1m_dbits(b));
    for (int g = 0; g < 8; g++) {
        const uint16_t w = rd16(sc + 2 * (g / 2));
        for (int l = 0; l < 4; l++) {
            const int    s3 = (w >> (6 * (g % 2) + 3 * (l / 2))) & 7;
            const int    hb = qh[2 * g + l / 2] >> (4 * (l % 2));
            const double dl = d * (2 * s3 + 1);
            put_iq1(v, m, 32 * g + 8 * l, dl, ggmlx_iq1s_grid[qs[4 * g + l] | ((hb & 7) << 8)], (hb & 8) ? -0.125 : 0.125);
        }
    }
}
static void deq_iq4_xs(const uint8_t * b, double * v, double * m) {
    const double   d  = h2d(rd16(b));
    const uint16_t sh = rd16(b + 2);
    for (int g = 0; g < 8; g++) {
        const int ls = (((b[4 + g / 2] >> (4 * (g % 2))) & 15) | (((sh >> (2 * g)) & 3) << 4)) - 32;
        deq_lut32(b + 8 + 16 * g, d * ls, ggmlx_kvalues_iq4nl, v + 32 * g, m + 32 * g);
    }
}

/* ---- the types under test: where their scale fields are, to keep random blocks finite ----- */

enum scale_kind { SC_HALF, SC_E8M0, SC_UE4M3, SC_IQ1M };

struct qtype {
    enum ggml_type type;
    deq_fn         deq;
    int            n_halves;  /* fp16 scale fields */
    int            half_at[2];
    enum scale_kind kind;
};

static const struct qtype k_types[] = {
    { GGML_TYPE_Q4_0, deq_q4_0, 1, { 0 }, SC_HALF },        { GGML_TYPE_Q4_1, deq_q4_1, 2, { 0, 2 }, SC_HALF },
    { GGML_TYPE_Q5_0, deq_q5_0, 1, { 0 }, SC_HALF },        { GGML_TYPE_Q5_1, deq_q5_1, 2, { 0, 2 }, SC_HALF },
    { GGML_TYPE_Q8_0, deq_q8_0, 1, { 0 }, SC_HALF },        { GGML_TYPE_IQ4_NL, deq_iq4_nl, 1, { 0 }, SC_HALF },
    { GGML_TYPE_MXFP4, deq_mxfp4, 0, { 0 }, SC_E8M0 },      { GGML_TYPE_NVFP4, deq_nvfp4, 0, { 0 }, SC_UE4M3 },
    { GGML_TYPE_Q1_0, deq_q1_0, 1, { 0 }, SC_HALF },        { GGML_TYPE_Q2_0, deq_q2_0, 1, { 0 }, SC_HALF },
    { GGML_TYPE_Q2_K, deq_q2_K, 2, { 80, 82 }, SC_HALF },   { GGML_TYPE_Q3_K, deq_q3_K, 1, { 108 }, SC_HALF },
    { GGML_TYPE_Q4_K, deq_q4_K, 2, { 0, 2 }, SC_HALF },     { GGML_TYPE_Q5_K, deq_q5_K, 2, { 0, 2 }, SC_HALF },
    { GGML_TYPE_Q6_K, deq_q6_K, 1, { 208 }, SC_HALF },      { GGML_TYPE_TQ1_0, deq_tq1_0, 1, { 52 }, SC_HALF },
    { GGML_TYPE_TQ2_0, deq_tq2_0, 1, { 64 }, SC_HALF },     { GGML_TYPE_IQ2_XXS, deq_iq2_xxs, 1, { 0 }, SC_HALF },
    { GGML_TYPE_IQ2_XS, deq_iq2_xs, 1, { 0 }, SC_HALF },    { GGML_TYPE_IQ2_S, deq_iq2_s, 1, { 0 }, SC_HALF },
    { GGML_TYPE_IQ3_XXS, deq_iq3_xxs, 1, { 0 }, SC_HALF },  { GGML_TYPE_IQ3_S, deq_iq3_s, 1, { 0 }, SC_HALF },
    { GGML_TYPE_IQ1_S, deq_iq1_s, 1, { 0 }, SC_HALF },      { GGML_TYPE_IQ1_M, deq_iq1_m, 0, { 0 }, SC_IQ1M },
    { GGML_TYPE_IQ4_XS, deq_iq4_xs, 1, { 0 }, SC_HALF },
};
#define N_TYPES ((int)(sizeof(k_types) / sizeof(k_types[0])))

static void wr16(uint8_t * p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* give a block's scale fields the value of `scale` (a magnitude; 0 makes them zero) */
static void set_scales(const struct qtype * qt, uint8_t * b, struct tu_rng * r, float scale) {
    for (int k = 0; k < qt->n_halves; k++) {
        const float v = scale == 0.0f ? 0.0f : scale * tu_uniform(r, 0.25f, 1.0f);
        wr16(b + qt->half_at[k], ggmlx_fp32_to_fp16(v));
    }
    if (qt->kind == SC_E8M0) {
        b[0] = scale == 0.0f ? 0 : (uint8_t)(121 + tu_next(r) % 6); /* 2^-7 .. 2^-2 */
    } else if (qt->kind == SC_UE4M3) {
        for (int s = 0; s < 4; s++) {
            b[s] = scale == 0.0f ? 0 : (uint8_t)(0x20 + tu_next(r) % 0x18); /* 2^-3 .. 2^-1 range */
        }
    } else if (qt->kind == SC_IQ1M) {
        const uint16_t d = scale == 0.0f ? 0 : ggmlx_fp32_to_fp16(scale * tu_uniform(r, 0.25f, 1.0f));
        for (int k = 0; k < 4; k++) {
            const uint16_t w = (uint16_t)((rd16(b + 48 + 2 * k) & 0x0fff) | (((d >> (4 * k)) & 15) << 12));
            wr16(b + 48 + 2 * k, w);
        }
    }
}

/* ---- activations ---------------------------------------------------------------------------- */

static void random_floats(struct tu_rng * r, float * x, int n) {
    for (int i = 0; i < n; i++) {
        x[i] = tu_uniform(r, -1.0f, 1.0f) * tu_uniform(r, 0.0f, 2.0f);
    }
}

/* the activation row's element values (double) */
static void deq_act(enum ggml_type vt, const void * y, int n, double * out) {
    if (vt == GGML_TYPE_Q8_K) {
        const block_q8_K * b = y;
        for (int i = 0; i < n; i++) {
            out[i] = (double)b[i / QK_K].d * b[i / QK_K].qs[i % QK_K];
        }
    } else if (vt == GGML_TYPE_Q8_1) {
        const block_q8_1 * b = y;
        for (int i = 0; i < n; i++) {
            out[i] = h2d(b[i / 32].d) * b[i / 32].qs[i % 32];
        }
    } else {
        const block_q8_0 * b = y;
        for (int i = 0; i < n; i++) {
            out[i] = h2d(b[i / 32].d) * b[i / 32].qs[i % 32];
        }
    }
}

static bool isa_runs(enum ggmlx_qdot_isa isa) { return isa <= ggmlx_qdot_isa_best(); }

/* ---- the dot products ----------------------------------------------------------------------- */

struct dot_case {
    int   nb;          /* weight blocks */
    float wscale;      /* scale magnitude of the weights (0: all scales zero) */
    int   wbyte;       /* -1: random quant bytes, else every quant byte */
    int   act;         /* 0: quantized random floats, 1: every activation +127, 2: -127 */
    void (*fill)(uint8_t * blk, int b); /* when set: rewrites block b's random quant bytes */
};

static void check_dot_with(const struct qtype * qt, const struct ggml_type_traits_cpu * tc, const char * variant,
                           struct dot_case c, uint64_t salt) {
    cr_assert_not_null(tc);
    cr_assert_not_null(tc->vec_dot, "%s has no vec_dot", ggml_type_name(qt->type));
    const enum ggml_type vt   = tc->vec_dot_type;
    const int64_t        blck = ggml_blck_size(qt->type);
    const size_t         bsz  = ggml_type_size(qt->type);
    const int            n    = (int)(c.nb * blck);
    struct tu_rng        r    = tu_rng_new(salt);

    uint8_t * x  = malloc(bsz * (size_t)c.nb);
    void *    y  = malloc(ggml_row_size(vt, n));
    float *   f  = malloc(sizeof(float) * (size_t)n);
    double *  xv = malloc(sizeof(double) * (size_t)blck);
    double *  xm = malloc(sizeof(double) * (size_t)blck);
    double *  yv = malloc(sizeof(double) * (size_t)n);
    cr_assert(x && y && f && xv && xm && yv);

    for (int b = 0; b < c.nb; b++) {
        uint8_t * blk = x + bsz * (size_t)b;
        for (size_t k = 0; k < bsz; k++) {
            blk[k] = c.wbyte < 0 ? (uint8_t)tu_next(&r) : (uint8_t)c.wbyte;
        }
        if (c.fill != NULL) {
            c.fill(blk, b);
        }
        set_scales(qt, blk, &r, c.wscale);
    }
    if (c.act == 0) {
        random_floats(&r, f, n);
    } else {
        for (int i = 0; i < n; i++) {
            f[i] = c.act == 1 ? 1.0f : -1.0f; /* quantizes to +-127 with d = 1/127 */
        }
    }
    ggmlx_type_traits_cpu_isa(vt, GGMLX_QDOT_PORTABLE)->from_float(f, y, n);
    deq_act(vt, y, n, yv);

    double ref = 0.0, mag = 0.0;
    for (int b = 0; b < c.nb; b++) {
        qt->deq(x + bsz * (size_t)b, xv, xm);
        for (int j = 0; j < blck; j++) {
            ref += xv[j] * yv[b * blck + j];
            mag += xm[j] * fabs(yv[b * blck + j]);
        }
        if (vt == GGML_TYPE_Q8_1) {
            /* the minimum meets the activations' sum as the block stores it (s, rounded to half) */
            const block_q8_1 * yb = (const block_q8_1 *)y + b;
            double             sy = 0.0;
            for (int j = 0; j < blck; j++) {
                sy += yv[b * blck + j];
            }
            ref += h2d(rd16(x + bsz * (size_t)b + 2)) * (h2d(yb->s) - sy);
        }
    }
    float got = NAN;
    tc->vec_dot(n, &got, 0, x, 0, y, 0, 1);
    const double tol = 4e-5 * mag;
    cr_expect(fabs((double)got - ref) <= tol, "%s/%s nb=%d wbyte=%d act=%d: got %.9g, reference %.9g (tolerance %.3g)",
              ggml_type_name(qt->type), variant, c.nb, c.wbyte, c.act, (double)got, ref, tol);
    if (c.wscale == 0.0f && qt->kind != SC_E8M0) { /* E8M0 has no zero: its smallest scale is 2^-128 */
        cr_expect(got == 0.0f, "%s/%s: zero scales give %g", ggml_type_name(qt->type), variant, (double)got);
    }
    free(x), free(y), free(f), free(xv), free(xm), free(yv);
}

static void check_dot(const struct qtype * qt, enum ggmlx_qdot_isa isa, struct dot_case c, uint64_t salt) {
    check_dot_with(qt, ggmlx_type_traits_cpu_isa(qt->type, isa), ggmlx_qdot_isa_name(isa), c, salt);
}

static void check_type_all(enum ggmlx_qdot_isa isa) {
    if (!isa_runs(isa)) {
        cr_log_warn("this CPU lacks %s: its variant is not tested here", ggmlx_qdot_isa_name(isa));
        return;
    }
    const int counts[] = { 1, 3, 17 };
    for (int t = 0; t < N_TYPES; t++) {
        for (int k = 0; k < 3; k++) {
            check_dot(&k_types[t], isa, (struct dot_case){ counts[k], 0.05f, -1, 0, NULL }, (uint64_t)(100 * t + k));
        }
    }
}

static void check_type_edges(enum ggmlx_qdot_isa isa) {
    if (!isa_runs(isa)) {
        return;
    }
    for (int t = 0; t < N_TYPES; t++) {
        const struct qtype * qt = &k_types[t];
        check_dot(qt, isa, (struct dot_case){ 3, 0.0f, -1, 0, NULL }, 7000 + t);   /* zero scales */
        check_dot(qt, isa, (struct dot_case){ 3, 0.05f, 0xff, 1, NULL }, 7100 + t); /* every quant bit set, y = +127 */
        check_dot(qt, isa, (struct dot_case){ 3, 0.05f, 0x00, 2, NULL }, 7200 + t); /* every quant bit clear, y = -127 */
        check_dot(qt, isa, (struct dot_case){ 3, 0.05f, 0xff, 2, NULL }, 7300 + t);
        check_dot(qt, isa, (struct dot_case){ 17, 8.0f, -1, 1, NULL }, 7400 + t);  /* large scales */
        /* the same extremes through the SIMD kernels' main loops (eight blocks and more a step) */
        check_dot(qt, isa, (struct dot_case){ 17, 0.05f, 0xff, 1, NULL }, 7500 + t);
        check_dot(qt, isa, (struct dot_case){ 17, 0.05f, 0x00, 2, NULL }, 7600 + t);
        check_dot(qt, isa, (struct dot_case){ 17, 0.0f, -1, 0, NULL }, 7700 + t);
    }
}

Test(quant_dot, portable_matches_double_reference) { check_type_all(GGMLX_QDOT_PORTABLE); }
Test(quant_dot, avx2_matches_double_reference) { check_type_all(GGMLX_QDOT_AVX2); }
Test(quant_dot, avx512_matches_double_reference) { check_type_all(GGMLX_QDOT_AVX512); }
/* AVX-512 CPUs without VBMI (the first ones) get other Q4_0/Q8_0 kernels than this one may */
Test(quant_dot, avx512_without_vbmi_matches_double_reference) {
    if (!isa_runs(GGMLX_QDOT_AVX512)) {
        cr_log_warn("this CPU lacks avx512: its variant is not tested here");
        return;
    }
    static ggmlx_qdot_table t;
    ggmlx_qdot_fill_portable(t);
    ggmlx_qdot_fill_avx2(t);
    ggmlx_qdot_fill_avx512_base(t);
    const int counts[] = { 1, 3, 17 };
    for (int k = 0; k < N_TYPES; k++) {
        for (int j = 0; j < 3; j++) {
            check_dot_with(&k_types[k], &t[k_types[k].type], "avx512-base", (struct dot_case){ counts[j], 0.05f, -1, 0, NULL }, 900 + k);
        }
        check_dot_with(&k_types[k], &t[k_types[k].type], "avx512-base", (struct dot_case){ 17, 8.0f, 0xff, 2, NULL }, 950 + k);
    }
}

/*
 * The matrix-vector kernels: nr rows (bx bytes apart, with a gap after each row) against one
 * activation row; each result against the double reference of its row, and as close to what the
 * same variant's vec_dot gives as the summation order allows.
 */
static void check_gemv(const struct qtype * qt, enum ggmlx_qdot_isa isa, int nb, int nr, uint64_t salt) {
    const ggmlx_gemv_t gemv = ggmlx_qdot_gemv_isa(qt->type, isa);
    if (gemv == NULL) {
        return;
    }
    const struct ggml_type_traits_cpu * tc = ggmlx_type_traits_cpu_isa(qt->type, isa);
    const enum ggml_type vt   = tc->vec_dot_type;
    const int64_t        blck = ggml_blck_size(qt->type);
    const size_t         bsz  = ggml_type_size(qt->type);
    const size_t         bx   = bsz * (size_t)nb + 40;
    const int            n    = (int)(nb * blck);
    struct tu_rng        r    = tu_rng_new(salt);
    uint8_t * x  = malloc(bx * (size_t)nr);
    void *    y  = malloc(ggml_row_size(vt, n));
    float *   f  = malloc(sizeof(float) * (size_t)n);
    float *   s  = malloc(sizeof(float) * (size_t)(nr + 1));
    double *  xv = malloc(sizeof(double) * (size_t)blck);
    double *  xm = malloc(sizeof(double) * (size_t)blck);
    double *  yv = malloc(sizeof(double) * (size_t)n);
    cr_assert(x && y && f && s && xv && xm && yv);
    for (size_t k = 0; k < bx * (size_t)nr; k++) {
        x[k] = (uint8_t)tu_next(&r);
    }
    for (int row = 0; row < nr; row++) {
        for (int b = 0; b < nb; b++) {
            set_scales(qt, x + bx * (size_t)row + bsz * (size_t)b, &r, 0.05f);
        }
    }
    random_floats(&r, f, n);
    ggmlx_type_traits_cpu_isa(vt, GGMLX_QDOT_PORTABLE)->from_float(f, y, n);
    deq_act(vt, y, n, yv);
    s[nr] = 12345.0f; /* must stay: the kernel writes nr results */
    gemv(n, s, x, bx, nr, y);
    cr_expect(s[nr] == 12345.0f, "%s/%s gemv wrote past its %d rows", ggml_type_name(qt->type), ggmlx_qdot_isa_name(isa), nr);
    for (int row = 0; row < nr; row++) {
        const uint8_t * xr  = x + bx * (size_t)row;
        double          ref = 0.0, mag = 0.0;
        for (int b = 0; b < nb; b++) {
            qt->deq(xr + bsz * (size_t)b, xv, xm);
            for (int j = 0; j < blck; j++) {
                ref += xv[j] * yv[b * blck + j];
                mag += xm[j] * fabs(yv[b * blck + j]);
            }
        }
        float one = NAN;
        tc->vec_dot(n, &one, 0, xr, 0, y, 0, 1);
        cr_expect(fabs((double)s[row] - ref) <= 4e-5 * mag, "%s/%s gemv nb=%d nr=%d row %d: got %.9g, reference %.9g",
                  ggml_type_name(qt->type), ggmlx_qdot_isa_name(isa), nb, nr, row, (double)s[row], ref);
        cr_expect(fabs((double)s[row] - (double)one) <= 4e-5 * mag, "%s/%s gemv row %d: %.9g, vec_dot %.9g",
                  ggml_type_name(qt->type), ggmlx_qdot_isa_name(isa), row, (double)s[row], (double)one);
    }
    free(x), free(y), free(f), free(s), free(xv), free(xm), free(yv);
}

Test(quant_dot, gemv_matches_reference_and_vec_dot) {
    const int nbs[] = { 1, 8, 17 };
    const int nrs[] = { 1, 4, 7, 9 };
    int       found = 0;
    for (enum ggmlx_qdot_isa isa = GGMLX_QDOT_PORTABLE; isa <= ggmlx_qdot_isa_best(); isa++) {
        for (int t = 0; t < N_TYPES; t++) {
            found += ggmlx_qdot_gemv_isa(k_types[t].type, isa) != NULL;
            for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 4; b++) {
                    check_gemv(&k_types[t], isa, nbs[a], nrs[b], (uint64_t)(5000 + 100 * t + 10 * a + b));
                }
            }
        }
    }
    if (found == 0) {
        cr_log_warn("no matrix-vector kernel on this CPU: nothing to test");
    }
}

/* no variant below AVX-512 has one, so the forced variants fall back to vec_dot per row */
Test(quant_dot, gemv_absent_below_avx512) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        cr_expect_null((void *)ggmlx_qdot_gemv_isa((enum ggml_type)t, GGMLX_QDOT_PORTABLE));
        cr_expect_null((void *)ggmlx_qdot_gemv_isa((enum ggml_type)t, GGMLX_QDOT_AVX2));
    }
    cr_expect_null((void *)ggmlx_qdot_gemv_isa(GGML_TYPE_COUNT, GGMLX_QDOT_AVX512));
}

Test(quant_dot, portable_edge_blocks) { check_type_edges(GGMLX_QDOT_PORTABLE); }
Test(quant_dot, avx2_edge_blocks) { check_type_edges(GGMLX_QDOT_AVX2); }
Test(quant_dot, avx512_edge_blocks) { check_type_edges(GGMLX_QDOT_AVX512); }

/*
 * The 1- and 2-bit formats' SIMD kernels (Q1_0, Q2_0, TQ1_0, TQ2_0, IQ1_S, IQ1_M) take several
 * blocks or groups per step: every row length from 1 to 9 blocks, so that each partial step is
 * met, and quant bytes at TQ1_0's trit boundaries (85/86, 170/171: the leading trit changes).
 */
static const enum ggml_type k_lowbit[] = { GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0,
                                           GGML_TYPE_TQ2_0, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M };

static const struct qtype * qtype_of(enum ggml_type type) {
    for (int t = 0; t < N_TYPES; t++) {
        if (k_types[t].type == type) {
            return &k_types[t];
        }
    }
    cr_assert_fail("%s is not in k_types", ggml_type_name(type));
    return NULL;
}

/*
 * The SIMD kernels derive the eighth sign bit of IQ2_XXS, IQ2_XS and IQ3_XXS from the 7-bit
 * index's parity instead of reading ggmlx_ksigns_iq2xs: four blocks hold each of the 128 sign
 * indices once, so a wrong bit for any of them shows against the reference (which reads the table).
 */
static void every_sign_xxs(uint8_t * words, int b) { /* eight words: four 7-bit indices, a scale */
    for (int g = 0; g < 8; g++) {
        uint32_t w = rd32(words + 4 * g) & 0xf0000000u;
        for (int l = 0; l < 4; l++) {
            w |= (uint32_t)((32 * b + 4 * g + l) & 127) << (7 * l);
        }
        memcpy(words + 4 * g, &w, sizeof(w));
    }
}

static void every_sign_iq2_xxs(uint8_t * blk, int b) {
    uint8_t words[32];
    for (int g = 0; g < 8; g++) {
        memcpy(words + 4 * g, blk + offsetof(block_iq2_xxs, qs) + 8 * g + 4, 4);
    }
    every_sign_xxs(words, b);
    for (int g = 0; g < 8; g++) {
        memcpy(blk + offsetof(block_iq2_xxs, qs) + 8 * g + 4, words + 4 * g, 4);
    }
}

static void every_sign_iq3_xxs(uint8_t * blk, int b) { every_sign_xxs(blk + offsetof(block_iq3_xxs, qs) + QK_K / 4, b); }

static void every_sign_iq2_xs(uint8_t * blk, int b) {
    for (int k = 0; k < 32; k++) {
        uint8_t * e = blk + offsetof(block_iq2_xs, qs) + 2 * k;
        const uint16_t v = (uint16_t)((rd16(e) & 511) | (((32 * b + k) & 127) << 9));
        memcpy(e, &v, sizeof(v));
    }
}

Test(quant_dot, iq2_iq3_every_sign_index_in_every_variant) {
    const struct {
        enum ggml_type type;
        void (*fill)(uint8_t *, int);
    } cases[] = { { GGML_TYPE_IQ2_XXS, every_sign_iq2_xxs }, { GGML_TYPE_IQ2_XS, every_sign_iq2_xs },
                  { GGML_TYPE_IQ3_XXS, every_sign_iq3_xxs } };
    for (enum ggmlx_qdot_isa isa = GGMLX_QDOT_PORTABLE; isa <= ggmlx_qdot_isa_best(); isa++) {
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
            check_dot(qtype_of(cases[k].type), isa, (struct dot_case){ 4, 0.05f, -1, 0, cases[k].fill }, 8000 + k);
            check_dot(qtype_of(cases[k].type), isa, (struct dot_case){ 4, 0.05f, -1, 1, cases[k].fill }, 8100 + k);
        }
    }
}

static void check_lowbit(enum ggmlx_qdot_isa isa) {
    if (!isa_runs(isa)) {
        cr_log_warn("this CPU lacks %s: its variant is not tested here", ggmlx_qdot_isa_name(isa));
        return;
    }
    const int bytes[] = { 85, 86, 170, 171, 0x55, 0xaa };
    for (size_t t = 0; t < sizeof(k_lowbit) / sizeof(k_lowbit[0]); t++) {
        const struct qtype * qt = qtype_of(k_lowbit[t]);
        for (int nb = 1; nb <= 9; nb++) {
            check_dot(qt, isa, (struct dot_case){ nb, 0.05f, -1, 0, NULL }, 8000 + 16 * t + (uint64_t)nb);
            check_dot(qt, isa, (struct dot_case){ nb, 8.0f, -1, nb % 2 ? 1 : 2, NULL }, 8500 + 16 * t + (uint64_t)nb);
        }
        for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++) {
            check_dot(qt, isa, (struct dot_case){ 5, 0.05f, bytes[b], 0, NULL }, 9000 + 16 * t + b);
            check_dot(qt, isa, (struct dot_case){ 5, 0.05f, bytes[b], 2, NULL }, 9500 + 16 * t + b);
        }
        check_dot(qt, isa, (struct dot_case){ 7, 0.0f, -1, 0, NULL }, 9900 + t); /* zero scales: exactly 0 */
    }
}

Test(quant_dot, lowbit_portable_every_block_count) { check_lowbit(GGMLX_QDOT_PORTABLE); }
Test(quant_dot, lowbit_avx2_every_block_count) { check_lowbit(GGMLX_QDOT_AVX2); }
Test(quant_dot, lowbit_avx512_every_block_count) { check_lowbit(GGMLX_QDOT_AVX512); }

/* each SIMD variant installs its own kernel for these (none falls back to the one below it) */
Test(quant_dot, lowbit_simd_variants_have_their_own_kernels) {
    for (enum ggmlx_qdot_isa isa = GGMLX_QDOT_AVX2; isa <= ggmlx_qdot_isa_best(); isa++) {
        for (size_t k = 0; k < sizeof(k_lowbit) / sizeof(k_lowbit[0]); k++) {
            cr_expect_neq((void *)ggmlx_type_traits_cpu_isa(k_lowbit[k], isa)->vec_dot,
                          (void *)ggmlx_type_traits_cpu_isa(k_lowbit[k], isa - 1)->vec_dot, "%s %s",
                          ggml_type_name(k_lowbit[k]), ggmlx_qdot_isa_name(isa));
        }
    }
}

/* the activation types are upstream's: Q8_0 for Q1_0 and Q2_0, Q8_K for the others */
Test(quant_dot, lowbit_activation_types) {
    for (size_t k = 0; k < sizeof(k_lowbit) / sizeof(k_lowbit[0]); k++) {
        const enum ggml_type want = k_lowbit[k] == GGML_TYPE_Q1_0 || k_lowbit[k] == GGML_TYPE_Q2_0 ? GGML_TYPE_Q8_0 : GGML_TYPE_Q8_K;
        cr_expect_eq(ggml_get_type_traits_cpu(k_lowbit[k])->vec_dot_type, want, "%s", ggml_type_name(k_lowbit[k]));
    }
}

/* ---- the activation quantizers ------------------------------------------------------------- */

/* reference Q8_0 / Q8_1 block (formats: amax / 127, roundf of x / d computed as x * (1 / d)) */
static void ref_q8_01(const float * x, int8_t * qs, uint16_t * d_out, uint16_t * s_out) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    }
    const float d  = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int         sum = 0;
    for (int j = 0; j < 32; j++) {
        qs[j] = (int8_t)roundf(x[j] * id);
        sum += qs[j];
    }
    *d_out = ggmlx_fp32_to_fp16(d);
    *s_out = ggmlx_fp32_to_fp16((float)sum * d);
}

/* rows with the hard cases: exact halves, zero blocks, equal magnitudes of both signs, tiny values */
static void tricky_row(struct tu_rng * r, float * x, int n, int kind) {
    random_floats(r, x, n);
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 1: x[i] = (float)((int)(tu_next(r) % 255) - 127) * 0.5f; break;  /* many ties after scaling */
        case 2: x[i] = (i / 32) % 2 ? 0.0f : x[i]; break;                  /* zero blocks */
        case 3: x[i] = (i % 7 == 0) ? ((i / 7) % 2 ? 3.0f : -3.0f) : x[i]; break; /* +-max */
        case 4: x[i] *= 1e-30f; break;
        case 5: x[i] = i % 37 == 5 ? INFINITY : i % 41 == 3 ? NAN : i % 43 == 1 ? -INFINITY : x[i]; break;
        default: break;
        }
    }
}

Test(quant_dot, q8_0_and_q8_1_match_reference_rule) {
    struct tu_rng r = tu_rng_new(31);
    float         x[512];
    for (int kind = 0; kind < 5; kind++) {
        tricky_row(&r, x, 512, kind);
        block_q8_0 a[16];
        block_q8_1 b[16];
        ggmlx_quantize_row_q8_0_cpu(x, a, 512);
        ggmlx_quantize_row_q8_1_cpu(x, b, 512);
        for (int i = 0; i < 16; i++) {
            int8_t   qs[32];
            uint16_t d, s;
            ref_q8_01(x + 32 * i, qs, &d, &s);
            cr_expect(memcmp(qs, a[i].qs, 32) == 0 && d == a[i].d, "Q8_0 kind %d block %d", kind, i);
            cr_expect(memcmp(qs, b[i].qs, 32) == 0 && d == b[i].d && s == b[i].s, "Q8_1 kind %d block %d", kind, i);
        }
    }
}

Test(quant_dot, q8_K_matches_reference_rule) {
    struct tu_rng r = tu_rng_new(32);
    float         x[1024];
    for (int kind = 0; kind < 5; kind++) {
        tricky_row(&r, x, 1024, kind);
        if (kind == 2) {
            memset(x + 256, 0, 256 * sizeof(float));
        }
        block_q8_K y[4];
        ggmlx_quantize_row_q8_K_cpu(x, y, 1024);
        for (int i = 0; i < 4; i++) {
            const float * xb = x + 256 * i;
            float         mx = 0.0f, amax = 0.0f;
            for (int j = 0; j < 256; j++) {
                if (fabsf(xb[j]) > amax) {
                    amax = fabsf(xb[j]), mx = xb[j];
                }
            }
            if (amax == 0.0f) {
                cr_expect(y[i].d == 0.0f, "kind %d block %d: zero block", kind, i);
                for (int j = 0; j < 256; j++) {
                    cr_expect(y[i].qs[j] == 0);
                }
                continue;
            }
            const float iscale = -127.0f / mx;
            for (int j = 0; j < 256; j++) {
                const long v = lrintf(iscale * xb[j]); /* ties to even in the default mode */
                cr_expect(y[i].qs[j] == (v < 127 ? v : 127), "kind %d block %d elem %d", kind, i, j);
            }
            for (int g = 0; g < 16; g++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) {
                    sum += y[i].qs[16 * g + j];
                }
                cr_expect(y[i].bsums[g] == sum);
            }
            cr_expect(y[i].d == 1.0f / iscale);
        }
    }
}

Test(quant_dot, q8_0_matches_the_formats_reference_quantizer) {
    const struct ggml_type_traits * tt = ggml_get_type_traits(GGML_TYPE_Q8_0);
    if (tt->from_float_ref == NULL) {
        cr_log_warn("Q8_0 has no from_float_ref yet");
        return;
    }
    struct tu_rng r = tu_rng_new(33);
    float         x[256];
    tricky_row(&r, x, 256, 1);
    block_q8_0 a[8], b[8];
    ggmlx_quantize_row_q8_0_cpu(x, a, 256);
    tt->from_float_ref(x, b, 256);
    cr_expect(memcmp(a, b, sizeof(a)) == 0);
}

static void check_act_isa(enum ggml_type vt, enum ggmlx_qdot_isa isa) {
    if (!isa_runs(isa)) {
        return;
    }
    const ggml_from_float_t fp = ggmlx_type_traits_cpu_isa(vt, GGMLX_QDOT_PORTABLE)->from_float;
    const ggml_from_float_t fi = ggmlx_type_traits_cpu_isa(vt, isa)->from_float;
    struct tu_rng           r  = tu_rng_new(40 + vt);
    const int               n  = 17 * 256;
    float *                 x  = malloc(sizeof(float) * n);
    const size_t            rs = ggml_row_size(vt, n);
    uint8_t *               a  = malloc(rs);
    uint8_t *               b  = malloc(rs);
    cr_assert(x && a && b);
    for (int kind = 0; kind < 6; kind++) { /* kind 5: infinities and NaN, which must not split the variants */
        tricky_row(&r, x, n, kind);
        for (int len = ggml_blck_size(vt); len <= n; len += (len < 1024 ? ggml_blck_size(vt) : n)) {
            memset(a, 0x5a, rs);
            memset(b, 0x5a, rs);
            fp(x, a, len);
            fi(x, b, len);
            cr_expect(memcmp(a, b, rs) == 0, "%s from_float %s differs from portable (kind %d, %d values)", ggml_type_name(vt),
                      ggmlx_qdot_isa_name(isa), kind, len);
        }
    }
    free(x), free(a), free(b);
}

Test(quant_dot, activation_quantizers_identical_in_every_variant) {
    const enum ggml_type types[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q8_K };
    for (int t = 0; t < 3; t++) {
        check_act_isa(types[t], GGMLX_QDOT_AVX2);
        check_act_isa(types[t], GGMLX_QDOT_AVX512);
    }
}

/* ---- the table -------------------------------------------------------------------------------- */

Test(quant_dot, traits_follow_the_type_table) {
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_Q4_0)->vec_dot_type, GGML_TYPE_Q8_0);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_Q4_1)->vec_dot_type, GGML_TYPE_Q8_1);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_Q5_1)->vec_dot_type, GGML_TYPE_Q8_1);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_NVFP4)->vec_dot_type, GGML_TYPE_Q8_0);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_IQ1_M)->vec_dot_type, GGML_TYPE_Q8_K);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_TQ1_0)->vec_dot_type, GGML_TYPE_Q8_K);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_F16)->vec_dot_type, GGML_TYPE_F16);
    cr_expect_null(ggml_get_type_traits_cpu(GGML_TYPE_Q8_1)->vec_dot);
    cr_expect_null(ggml_get_type_traits_cpu(GGML_TYPE_Q8_K)->vec_dot);
    cr_expect_not_null(ggml_get_type_traits_cpu(GGML_TYPE_Q8_K)->from_float);
    cr_expect_null(ggml_get_type_traits_cpu(GGML_TYPE_IQ2_XXS)->from_float); /* needs the search tables */
    cr_expect_null(ggml_get_type_traits_cpu(GGML_TYPE_IQ3_S)->from_float);
    /* the weight types convert with their reference quantizer */
    cr_expect_eq((void *)ggml_get_type_traits_cpu(GGML_TYPE_Q4_0)->from_float,
                 (void *)ggml_get_type_traits(GGML_TYPE_Q4_0)->from_float_ref);
    cr_expect_eq((void *)ggml_get_type_traits_cpu(GGML_TYPE_IQ4_XS)->from_float,
                 (void *)ggml_get_type_traits(GGML_TYPE_IQ4_XS)->from_float_ref);
    for (int t = 0; t < N_TYPES; t++) {
        cr_expect_eq(ggml_get_type_traits_cpu(k_types[t].type)->nrows, 1);
        cr_expect_not_null(ggml_get_type_traits_cpu(k_types[t].type)->vec_dot, "%s", ggml_type_name(k_types[t].type));
    }
}

Test(quant_dot, out_of_range_type_is_null) {
    cr_expect_null(ggml_get_type_traits_cpu(GGML_TYPE_COUNT));
    cr_expect_null(ggml_get_type_traits_cpu((enum ggml_type)-1));
}

Test(quant_dot, forced_portable_variant_is_used) {
    setenv("GGMLX_MATMUL_KERNEL", "portable", 1);
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_Q4_0), ggmlx_type_traits_cpu_isa(GGML_TYPE_Q4_0, GGMLX_QDOT_PORTABLE));
    unsetenv("GGMLX_MATMUL_KERNEL");
    cr_expect_eq(ggml_get_type_traits_cpu(GGML_TYPE_Q4_0), ggmlx_type_traits_cpu_isa(GGML_TYPE_Q4_0, ggmlx_qdot_isa_best()));
}

Test(quant_dot, float_entries) {
    const float    a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 0.5f, -1, 2, 0.25f, -2 };
    uint16_t       ha[5], hb[5];
    float          s = 0;
    const struct ggml_type_traits_cpu * f32 = ggml_get_type_traits_cpu(GGML_TYPE_F32);
    f32->vec_dot(5, &s, 0, a, 0, b, 0, 1);
    cr_expect_float_eq(s, -4.5f, 0);
    for (int t = 0; t < 2; t++) {
        const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(t == 0 ? GGML_TYPE_F16 : GGML_TYPE_BF16);
        tc->from_float(a, ha, 5);
        tc->from_float(b, hb, 5);
        tc->vec_dot(5, &s, 0, ha, 0, hb, 0, 1);
        cr_expect_float_eq(s, -4.5f, 0); /* every value is exact in both */
    }
}

Test(quant_dot, simd_variants_have_their_own_kernels) {
    const enum ggml_type fast[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                    GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                    GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_XS, GGML_TYPE_NVFP4, GGML_TYPE_TQ2_0,
                                    GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                    GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M };
    for (enum ggmlx_qdot_isa isa = GGMLX_QDOT_AVX2; isa <= ggmlx_qdot_isa_best(); isa++) {
        for (size_t k = 0; k < sizeof(fast) / sizeof(fast[0]); k++) {
            cr_expect_neq((void *)ggmlx_type_traits_cpu_isa(fast[k], isa)->vec_dot,
                          (void *)ggmlx_type_traits_cpu_isa(fast[k], isa - 1)->vec_dot, "%s %s", ggml_type_name(fast[k]),
                          ggmlx_qdot_isa_name(isa));
        }
        cr_expect_neq((void *)ggmlx_type_traits_cpu_isa(GGML_TYPE_Q8_K, isa)->from_float,
                      (void *)ggmlx_type_traits_cpu_isa(GGML_TYPE_Q8_K, GGMLX_QDOT_PORTABLE)->from_float);
    }
}

Test(quant_dot, fp4_scale_decoders_match_the_formats_for_every_byte) {
    for (int v = 0; v < 256; v++) {
        cr_expect_eq((double)ggmlx_ue4m3_to_fp32((uint8_t)v), ue4m3_half((uint8_t)v), "UE4M3 0x%02x", v);
        cr_expect_eq((double)ggmlx_e8m0_to_fp32_half((uint8_t)v), ldexp(1.0, v - 128), "E8M0 0x%02x", v);
    }
}
