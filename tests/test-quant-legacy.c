/*
 * test-quant-legacy.c -- the legacy quantized types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, MXFP4,
 * NVFP4, Q1_0, Q2_0, TQ1_0, TQ2_0) through the public traits (to_float, from_float_ref) and
 * ggml_quantize_chunk: exact bytes of small blocks worked out by hand from the format rules,
 * round-trip error bounds on random rows, and edge cases (zeros, equal values, subnormal and
 * negative scales). Bit-exactness against the PyPI gguf package is checked separately.
 */
#include <criterion/criterion.h>

#include "test-util.h"

#include "quant/quant-blocks.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static const struct ggml_type_traits * traits(enum ggml_type t) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    cr_assert_not_null(tr);
    return tr;
}

/* quantize n values with from_float_ref into out (which must hold the bytes) */
static void quant_ref(enum ggml_type t, const float * x, void * out, int64_t n) {
    cr_assert_not_null(traits(t)->from_float_ref, "%s has from_float_ref", ggml_type_name(t));
    traits(t)->from_float_ref(x, out, n);
}

static void dequant(enum ggml_type t, const void * q, float * y, int64_t n) {
    cr_assert_not_null(traits(t)->to_float, "%s has to_float", ggml_type_name(t));
    traits(t)->to_float(q, y, n);
}

static void assert_bytes(const void * got, const void * want, size_t n, const char * what) {
    const uint8_t * g = got;
    const uint8_t * w = want;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(g[i], w[i], "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, g[i], w[i]);
    }
}

/* normal-ish values (sum of 4 uniforms), scaled */
static void fill_random(float * x, int64_t n, uint64_t salt, float scale) {
    struct tu_rng r = tu_rng_new(salt);
    for (int64_t i = 0; i < n; i++) {
        float s = 0.0f;
        for (int k = 0; k < 4; k++) {
            s += tu_uniform(&r, -1.0f, 1.0f);
        }
        x[i] = s * scale;
    }
}

static float block_absmax(const float * x, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        m = fmaxf(m, fabsf(x[i]));
    }
    return m;
}

static void block_min_max(const float * x, int n, float * mn, float * mx) {
    *mn = x[0];
    *mx = x[0];
    for (int i = 1; i < n; i++) {
        *mn = fminf(*mn, x[i]);
        *mx = fmaxf(*mx, x[i]);
    }
}

/* ---- exact bytes of hand-worked blocks ------------------------------------------------------- */

Test(quant_legacy_bytes, q8_0_of_0_to_31) {
    float x[32];
    for (int j = 0; j < 32; j++) {
        x[j] = (float) j;
    }
    block_q8_0 b;
    quant_ref(GGML_TYPE_Q8_0, x, &b, 32);
    /* d = 31/127 = 0.2441 = 1.9528 * 2^-3: exponent 12, mantissa round(0.9528 * 1024) = 976 */
    cr_assert_eq(b.d, 0x33d0);
    /* qs[j] = round(127 j / 31) */
    static const int8_t want[32] = { 0,   4,   8,   12,  16,  20,  25,  29,  33,  37,  41,
                                     45,  49,  53,  57,  61,  66,  70,  74,  78,  82,  86,
                                     90,  94,  98,  102, 107, 111, 115, 119, 123, 127 };
    assert_bytes(b.qs, want, 32, "q8_0 qs");
}

Test(quant_legacy_bytes, q8_1_keeps_d_times_sum) {
    float x[32];
    for (int j = 0; j < 32; j++) {
        x[j] = (float) j;
    }
    block_q8_1 b;
    quant_ref(GGML_TYPE_Q8_1, x, &b, 32);
    cr_assert_eq(b.d, 0x33d0);
    int sum = 0;
    for (int j = 0; j < 32; j++) {
        sum += b.qs[j];
    }
    cr_assert_eq(sum, 2032); /* the 32 values of q8_0_of_0_to_31 */
    cr_assert_eq(b.s, ggml_fp32_to_fp16(2032.0f * (31.0f / 127.0f)));
    cr_assert_null(traits(GGML_TYPE_Q8_1)->to_float, "q8_1 has no dequantizer");
}

Test(quant_legacy_bytes, q4_0_minus_8_to_7) {
    /* the first 16 values -8..7 and 16 zeros: max = -8 (first of largest |x|), d = 1 */
    float x[32] = { 0 };
    for (int j = 0; j < 16; j++) {
        x[j] = (float) (j - 8);
    }
    block_q4_0 b;
    quant_ref(GGML_TYPE_Q4_0, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], 0x80 | j, "qs[%d] = 0x%02x: low nibble x + 8, high nibble 0 + 8", j, b.qs[j]);
    }
    float y[32];
    dequant(GGML_TYPE_Q4_0, &b, y, 32);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(y[j], x[j]);
    }
}

Test(quant_legacy_bytes, q4_0_truncates_after_adding_8_5) {
    /* d = 1 (x[0] = -8): level (int)(x + 8.5), at most 15 */
    float x[32] = { 0 };
    x[0] = -8.0f;
    x[1] = 0.49f;  /* 8.99 -> 8 */
    x[2] = 0.5f;   /* 9.0  -> 9 */
    x[3] = -0.5f;  /* 8.0  -> 8 */
    x[4] = -0.51f; /* 7.99 -> 7 */
    x[5] = 7.6f;   /* 16.1 -> 16, clamped to 15 */
    block_q4_0 b;
    quant_ref(GGML_TYPE_Q4_0, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00);
    static const uint8_t want[6] = { 0x80, 0x88, 0x89, 0x88, 0x87, 0x8f };
    assert_bytes(b.qs, want, 6, "q4_0 qs");
}

Test(quant_legacy_bytes, q8_0_rounds_half_away_from_zero) {
    float x[32] = { 0 };
    x[0] = 127.0f; /* d = 1 */
    x[1] = 0.5f;
    x[2] = -0.5f;
    x[3] = 1.49f;
    x[4] = 2.5f;
    x[5] = -126.5f;
    block_q8_0 b;
    quant_ref(GGML_TYPE_Q8_0, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00);
    static const int8_t want[6] = { 127, 1, -1, 1, 3, -127 };
    assert_bytes(b.qs, want, 6, "q8_0 qs");
}

Test(quant_legacy_bytes, q4_1_truncates_after_adding_0_5) {
    /* min 0, max 15: d = 1, level (int)(x + 0.5) */
    float x[32] = { 0 };
    x[0] = 15.0f;
    x[1] = 0.49f;
    x[2] = 0.5f;
    x[3] = 14.6f;
    block_q4_1 b;
    quant_ref(GGML_TYPE_Q4_1, x, &b, 32);
    static const uint8_t want[4] = { 0x0f, 0x00, 0x01, 0x0f };
    assert_bytes(b.qs, want, 4, "q4_1 qs");
}

Test(quant_legacy_bytes, q4_0_negative_scale) {
    /* a positive extreme gives d = 8 / -8 = -1: 8 maps to level 0, 0 to level 8 */
    float x[32] = { 0 };
    x[0] = 8.0f;
    x[16] = -7.0f;
    block_q4_0 b;
    quant_ref(GGML_TYPE_Q4_0, x, &b, 32);
    cr_assert_eq(b.d, 0xbc00);
    cr_assert_eq(b.qs[0], 0xf0); /* low: (int)(-8 + 8.5) = 0; high: (int)(7 + 8.5) = 15 */
    cr_assert_eq(b.qs[1], 0x88);
    float y[32];
    dequant(GGML_TYPE_Q4_0, &b, y, 32);
    cr_assert_eq(y[0], 8.0f);
    cr_assert_eq(y[16], -7.0f);
    cr_assert_eq(y[1], 0.0f);
}

Test(quant_legacy_bytes, q4_1_ramp_up_and_down) {
    float x[32];
    for (int j = 0; j < 16; j++) {
        x[j] = (float) j;
        x[j + 16] = (float) (15 - j);
    }
    block_q4_1 b;
    quant_ref(GGML_TYPE_Q4_1, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00); /* (15 - 0) / 15 */
    cr_assert_eq(b.m, 0x0000);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], j | ((15 - j) << 4));
    }
}

Test(quant_legacy_bytes, q5_0_minus_16_to_15) {
    float x[32];
    for (int j = 0; j < 32; j++) {
        x[j] = (float) (j - 16);
    }
    block_q5_0 b;
    quant_ref(GGML_TYPE_Q5_0, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00); /* -16 / -16 */
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], j | (j << 4)); /* levels j and j + 16 share their low nibble */
    }
    static const uint8_t qh[4] = { 0x00, 0x00, 0xff, 0xff }; /* bit 4 set for elements 16..31 */
    assert_bytes(b.qh, qh, 4, "q5_0 qh");
}

Test(quant_legacy_bytes, q5_1_0_to_31) {
    float x[32];
    for (int j = 0; j < 32; j++) {
        x[j] = (float) j;
    }
    block_q5_1 b;
    quant_ref(GGML_TYPE_Q5_1, x, &b, 32);
    cr_assert_eq(b.d, 0x3c00);
    cr_assert_eq(b.m, 0x0000);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], j | (j << 4));
    }
    static const uint8_t qh[4] = { 0x00, 0x00, 0xff, 0xff };
    assert_bytes(b.qh, qh, 4, "q5_1 qh");
}

/* the E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6: codes 0..7, negatives 8..15 */
static const float k_e2m1[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };

Test(quant_legacy_bytes, mxfp4_exact_e2m1_values) {
    float x[32];
    for (int j = 0; j < 8; j++) {
        x[j] = x[j + 16] = k_e2m1[j];
        x[j + 8] = x[j + 24] = -k_e2m1[j];
    }
    block_mxfp4 b;
    quant_ref(GGML_TYPE_MXFP4, x, &b, 32);
    /* amax 6: floor(log2 6) = 2, e = 2 - 2 + 127; the scale 2^(e-128) = 0.5 times the doubled codes */
    cr_assert_eq(b.e, 127);
    for (int j = 0; j < 16; j++) {
        const int code = j == 8 ? 0 : j; /* -0 ties with +0 and the first code wins */
        cr_assert_eq(b.qs[j], code | (code << 4), "qs[%d] = 0x%02x", j, b.qs[j]);
    }
    float y[32];
    dequant(GGML_TYPE_MXFP4, &b, y, 32);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(y[j], x[j]);
    }
}

Test(quant_legacy_bytes, nvfp4_exact_e2m1_values) {
    float x[64];
    for (int s = 0; s < 4; s++) {
        for (int j = 0; j < 8; j++) {
            x[16 * s + j] = k_e2m1[j];
            x[16 * s + 8 + j] = -k_e2m1[j];
        }
    }
    block_nvfp4 b;
    quant_ref(GGML_TYPE_NVFP4, x, &b, 64);
    for (int s = 0; s < 4; s++) {
        /* amax / 6 = 1.0 = UE4M3 exponent 0 + bias 7, mantissa 0 */
        cr_assert_eq(b.d[s], 0x38, "d[%d] = 0x%02x", s, b.d[s]);
        for (int j = 0; j < 8; j++) {
            const int hi = j == 0 ? 0 : 8 + j;
            cr_assert_eq(b.qs[8 * s + j], j | (hi << 4), "qs[%d]", 8 * s + j);
        }
    }
    float y[64];
    dequant(GGML_TYPE_NVFP4, &b, y, 64);
    for (int j = 0; j < 64; j++) {
        cr_assert_eq(y[j], x[j]);
    }
}

Test(quant_legacy_bytes, q1_0_alternating_signs) {
    float x[128];
    for (int j = 0; j < 128; j++) {
        x[j] = j % 2 ? 2.0f : -2.0f;
    }
    block_q1_0 b;
    quant_ref(GGML_TYPE_Q1_0, x, &b, 128);
    cr_assert_eq(b.d, 0x4000); /* mean |x| = 2 */
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], 0xaa); /* odd elements are >= 0: bits 1, 3, 5, 7 */
    }
    float y[128];
    dequant(GGML_TYPE_Q1_0, &b, y, 128);
    for (int j = 0; j < 128; j++) {
        cr_assert_eq(y[j], x[j]);
    }
}

Test(quant_legacy_bytes, q1_0_zero_counts_as_positive) {
    float x[128] = { 0 };
    x[0] = -1.0f;
    block_q1_0 b;
    quant_ref(GGML_TYPE_Q1_0, x, &b, 128);
    cr_assert_eq(b.qs[0], 0xfe);
    cr_assert_eq(b.qs[1], 0xff);
}

Test(quant_legacy_bytes, q2_0_levels) {
    /* -1, 0, 1, 2 repeated: d = amax = 2; round(x / 2) + 1 = 0, 1, 2 (0.5 rounds away), 2 */
    float x[64];
    for (int j = 0; j < 64; j++) {
        x[j] = (float) (j % 4 - 1);
    }
    block_q2_0 b;
    quant_ref(GGML_TYPE_Q2_0, x, &b, 64);
    cr_assert_eq(b.d, 0x4000);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], 0 | (1 << 2) | (2 << 4) | (2 << 6));
    }
}

Test(quant_legacy_bytes, tq2_0_levels_by_shift) {
    /* element 128g + 32l + m takes bits 2l of byte 32g + m: here level l - 1 for l < 3, +1 for l = 3 */
    float x[256];
    for (int i = 0; i < 256; i++) {
        const int l = (i % 128) / 32;
        x[i] = l < 3 ? (float) (l - 1) : 1.0f;
    }
    block_tq2_0 b;
    quant_ref(GGML_TYPE_TQ2_0, x, &b, 256);
    cr_assert_eq(b.d, 0x3c00);
    for (int j = 0; j < 64; j++) {
        cr_assert_eq(b.qs[j], 0 | (1 << 2) | (2 << 4) | (2 << 6), "qs[%d] = 0x%02x", j, b.qs[j]);
    }
}

Test(quant_legacy_bytes, tq1_0_all_ones_and_zeros) {
    float x[256];
    for (int i = 0; i < 256; i++) {
        x[i] = 1.0f;
    }
    block_tq1_0 b;
    quant_ref(GGML_TYPE_TQ1_0, x, &b, 256);
    cr_assert_eq(b.d, 0x3c00);
    /* five trits 2 = 242: ceil(242 * 256 / 243) = 255; four trits 2 shifted up = 240 -> 253 */
    for (int j = 0; j < 48; j++) {
        cr_assert_eq(b.qs[j], 0xff);
    }
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(b.qh[j], 0xfd);
    }
    memset(x, 0, sizeof x);
    quant_ref(GGML_TYPE_TQ1_0, x, &b, 256);
    cr_assert_eq(b.d, 0x0000);
    /* trits 1: 11111 base 3 = 121 -> ceil(121 * 256 / 243) = 128; 1111 * 3 = 120 -> 127 */
    for (int j = 0; j < 48; j++) {
        cr_assert_eq(b.qs[j], 0x80);
    }
    for (int j = 0; j < 4; j++) {
        cr_assert_eq(b.qh[j], 0x7f);
    }
}

Test(quant_legacy_bytes, tq1_0_element_order) {
    /* one -1 at each packing position: the decode must put it back in the same place */
    static const int pos[] = { 0, 31, 32, 159, 160, 175, 176, 239, 240, 243, 244, 255 };
    for (size_t p = 0; p < sizeof pos / sizeof pos[0]; p++) {
        float x[256];
        for (int i = 0; i < 256; i++) {
            x[i] = 1.0f;
        }
        x[pos[p]] = -1.0f;
        block_tq1_0 b;
        float y[256];
        quant_ref(GGML_TYPE_TQ1_0, x, &b, 256);
        dequant(GGML_TYPE_TQ1_0, &b, y, 256);
        for (int i = 0; i < 256; i++) {
            cr_assert_eq(y[i], x[i], "-1 at %d: element %d is %g", pos[p], i, (double) y[i]);
        }
    }
}

/* ---- round trips ---------------------------------------------------------------------------- */

#define RT_ROWS 4
#define RT_N    512

/* quantize RT_ROWS x RT_N random values, dequantize, and check every element against bound(block) */
typedef float (*bound_fn)(const float * xb, int qk, float xj);

static void round_trip(enum ggml_type t, uint64_t salt, float scale, bound_fn bound) {
    static float x[RT_ROWS * RT_N], y[RT_ROWS * RT_N];
    static uint8_t q[RT_ROWS * RT_N * 2];
    fill_random(x, RT_ROWS * RT_N, salt, scale);
    const size_t bytes = ggml_quantize_chunk(t, x, q, 0, RT_ROWS, RT_N, NULL);
    cr_assert_eq(bytes, RT_ROWS * ggml_row_size(t, RT_N));
    dequant(t, q, y, RT_ROWS * RT_N);
    const int qk = (int) ggml_blck_size(t);
    for (int b0 = 0; b0 < RT_ROWS * RT_N; b0 += qk) {
        for (int j = b0; j < b0 + qk; j++) {
            const float lim = bound(x + b0, qk, x[j]);
            cr_assert_leq(fabsf(y[j] - x[j]), lim, "%s element %d: %g for %g (bound %g)", ggml_type_name(t), j,
                          (double) y[j], (double) x[j], (double) lim);
        }
    }
}

/* f16 keeps 11 significant bits: a stored scale is off by at most 2^-11 of itself */
#define F16_REL (1.0f / 2048.0f)

/* symmetric formats with levels -nmax..nmax-1 of d = max / -nmax: half a step, except where the
 * level nmax is clamped away (only the side opposite to max reaches it), plus the f16 rounding of
 * d times the level */
static float bound_symmetric(const float * xb, int qk, float xj, int nmax) {
    float max = 0.0f;
    for (int i = 0; i < qk; i++) {
        if (fabsf(xb[i]) > fabsf(max)) {
            max = xb[i];
        }
    }
    const float d = max / (float) -nmax;
    const float f16 = (float) nmax * fabsf(d) * F16_REL * 1.01f;
    if (d != 0.0f && xj / d > (float) nmax - 0.5f) {
        return fabsf(xj - (float) (nmax - 1) * d) + f16;
    }
    return 0.5f * fabsf(d) * 1.0001f + f16;
}
static float bound_q4_0(const float * xb, int qk, float xj) { return bound_symmetric(xb, qk, xj, 8); }
static float bound_q5_0(const float * xb, int qk, float xj) { return bound_symmetric(xb, qk, xj, 16); }

/* Q8_0: round to nearest of 255 levels, d = amax / 127 */
static float bound_q8_0(const float * xb, int qk, float xj) {
    (void) xj;
    const float d = block_absmax(xb, qk) / 127.0f;
    return 0.5f * d * 1.0001f + 127.0f * d * F16_REL * 1.01f;
}

/* asymmetric: half a step of (max - min) / levels, plus the f16 rounding of d (times up to
 * `levels`) and of m */
static float bound_asym(const float * xb, int qk, float levels) {
    float mn, mx;
    block_min_max(xb, qk, &mn, &mx);
    const float d = (mx - mn) / levels;
    return 0.5f * d * 1.0001f + levels * d * F16_REL * 1.01f + fabsf(mn) * F16_REL * 1.01f;
}
static float bound_q4_1(const float * xb, int qk, float xj) { (void) xj; return bound_asym(xb, qk, 15.0f); }
static float bound_q5_1(const float * xb, int qk, float xj) { (void) xj; return bound_asym(xb, qk, 31.0f); }

/* d = amax: levels -d, 0, d are half a scale apart at worst */
static float bound_ternary(const float * xb, int qk, float xj) {
    (void) xj;
    return block_absmax(xb, qk) * (0.5f * 1.0001f + F16_REL * 1.01f);
}

/* MXFP4: d = 2^(floor(log2 amax) - 3) and codes 0, 1, 2, 3, 4, 6, 8, 12 times d; amax < 16 d.
 * Half the gap to the neighbouring code: 0.5 d below 4 d, d up to 8 d, 2 d up to 12 d, and
 * everything above 12 d goes to 12 d */
static float bound_mxfp4(const float * xb, int qk, float xj) {
    const float amax = block_absmax(xb, qk);
    if (amax == 0.0f) {
        return 0.0f;
    }
    const float d = ldexpf(1.0f, (int) floorf(log2f(amax)) - 3);
    const float a = fabsf(xj) / d;
    if (a > 12.0f) {
        return fabsf(xj) - 12.0f * d;
    }
    return (a <= 4.0f ? 0.5f : a <= 8.0f ? 1.0f : 2.0f) * d;
}

/* NVFP4: per 16 values the scale S = amax / 6 rounded to a 3-bit mantissa (within 1/16), codes
 * 0, 0.5, 1, 1.5, 2, 3, 4, 6 times S: at most S between codes, and amax - 6 S above them */
static float bound_nvfp4(const float * xb, int qk, float xj) {
    (void) qk;
    (void) xj;
    float m = 0.0f;
    for (int s = 0; s < 64; s += 16) {
        m = fmaxf(m, block_absmax(xb + s, 16));
    }
    return m / 6.0f * 1.0625f;
}

Test(quant_legacy_round_trip, q8_0) { round_trip(GGML_TYPE_Q8_0, 1, 1.0f, bound_q8_0); }
Test(quant_legacy_round_trip, q4_0) { round_trip(GGML_TYPE_Q4_0, 2, 1.0f, bound_q4_0); }
Test(quant_legacy_round_trip, q4_1) { round_trip(GGML_TYPE_Q4_1, 3, 1.0f, bound_q4_1); }
Test(quant_legacy_round_trip, q5_0) { round_trip(GGML_TYPE_Q5_0, 4, 1.0f, bound_q5_0); }
Test(quant_legacy_round_trip, q5_1) { round_trip(GGML_TYPE_Q5_1, 5, 1.0f, bound_q5_1); }
Test(quant_legacy_round_trip, mxfp4) { round_trip(GGML_TYPE_MXFP4, 6, 1.0f, bound_mxfp4); }
Test(quant_legacy_round_trip, nvfp4) { round_trip(GGML_TYPE_NVFP4, 7, 1.0f, bound_nvfp4); }
Test(quant_legacy_round_trip, q2_0) { round_trip(GGML_TYPE_Q2_0, 8, 1.0f, bound_ternary); }
Test(quant_legacy_round_trip, tq1_0) { round_trip(GGML_TYPE_TQ1_0, 9, 1.0f, bound_ternary); }
Test(quant_legacy_round_trip, tq2_0) { round_trip(GGML_TYPE_TQ2_0, 10, 1.0f, bound_ternary); }
Test(quant_legacy_round_trip, q8_0_large_values) { round_trip(GGML_TYPE_Q8_0, 11, 3000.0f, bound_q8_0); }
Test(quant_legacy_round_trip, q4_1_small_values) { round_trip(GGML_TYPE_Q4_1, 12, 1e-3f, bound_q4_1); }

Test(quant_legacy_round_trip, q1_0_keeps_signs_and_mean_magnitude) {
    float x[256], y[256];
    fill_random(x, 256, 13, 1.0f);
    uint8_t q[2 * sizeof(block_q1_0)];
    quant_ref(GGML_TYPE_Q1_0, x, q, 256);
    dequant(GGML_TYPE_Q1_0, q, y, 256);
    for (int b0 = 0; b0 < 256; b0 += 128) {
        float sum = 0.0f;
        for (int j = b0; j < b0 + 128; j++) {
            sum += fabsf(x[j]);
        }
        const float d = ggml_fp16_to_fp32(ggml_fp32_to_fp16(sum / 128.0f));
        for (int j = b0; j < b0 + 128; j++) {
            cr_assert_eq(y[j], x[j] >= 0.0f ? d : -d, "element %d", j);
        }
    }
}

/* ---- edge cases ------------------------------------------------------------------------------ */

static const enum ggml_type k_legacy[] = {
    GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4,
    GGML_TYPE_NVFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0,
};
#define N_LEGACY (sizeof k_legacy / sizeof k_legacy[0])

Test(quant_legacy_edge, all_zeros_give_zeros) {
    float x[256] = { 0 }, y[256];
    uint8_t q[512];
    for (size_t i = 0; i < N_LEGACY; i++) {
        const enum ggml_type t = k_legacy[i];
        memset(q, 0xcd, sizeof q);
        quant_ref(t, x, q, 256);
        dequant(t, q, y, 256);
        for (int j = 0; j < 256; j++) {
            /* Q1_0 has no zero: a zero block dequantizes to +-0 */
            cr_assert_eq(fabsf(y[j]), 0.0f, "%s element %d is %g", ggml_type_name(t), j, (double) y[j]);
        }
        cr_assert(ggml_validate_row_data(t, q, ggml_row_size(t, 256)), "%s of zeros is valid", ggml_type_name(t));
    }
}

Test(quant_legacy_edge, all_equal_values) {
    float x[256], y[256];
    uint8_t q[512];
    for (int j = 0; j < 256; j++) {
        /* 127/128: it, it / 127, / 8 and / 16 are all exact in f16, so every scale is stored exactly */
        x[j] = 0.9921875f;
    }
    for (size_t i = 0; i < N_LEGACY; i++) {
        const enum ggml_type t = k_legacy[i];
        if (t == GGML_TYPE_MXFP4 || t == GGML_TYPE_NVFP4) {
            continue; /* not a multiple of an E2M1 code and their scales; mxfp4_equal_values */
        }
        quant_ref(t, x, q, 256);
        dequant(t, q, y, 256);
        for (int j = 0; j < 256; j++) {
            cr_assert_eq(y[j], 0.9921875f, "%s element %d is %g", ggml_type_name(t), j, (double) y[j]);
        }
    }
}

Test(quant_legacy_edge, q4_1_equal_values_keep_the_minimum) {
    /* max == min: d = 0, every level 0, and the value lives in m */
    float x[32], y[32];
    for (int j = 0; j < 32; j++) {
        x[j] = -3.0f;
    }
    block_q4_1 b;
    quant_ref(GGML_TYPE_Q4_1, x, &b, 32);
    cr_assert_eq(b.d, 0);
    cr_assert_eq(b.m, 0xc200);
    dequant(GGML_TYPE_Q4_1, &b, y, 32);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(y[j], -3.0f);
    }
}

Test(quant_legacy_edge, mxfp4_equal_values) {
    float x[32], y[32];
    for (int j = 0; j < 32; j++) {
        x[j] = -48.0f; /* floor(log2 48) = 5: e = 5 - 2 + 127 = 130, scale 2^2, code 15 (-12) */
    }
    block_mxfp4 b;
    quant_ref(GGML_TYPE_MXFP4, x, &b, 32);
    cr_assert_eq(b.e, 130);
    for (int j = 0; j < 16; j++) {
        cr_assert_eq(b.qs[j], 0xff);
    }
    dequant(GGML_TYPE_MXFP4, &b, y, 32);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(y[j], -48.0f, "element %d is %g", j, (double) y[j]);
    }
}

Test(quant_legacy_edge, q8_0_subnormal_scale) {
    /* amax 31e-6: d = 2.44e-7 is below the f16 normal range (6.1e-5), stored as a subnormal */
    float x[32], y[32];
    for (int j = 0; j < 32; j++) {
        x[j] = (float) j * 1e-6f;
    }
    block_q8_0 b;
    quant_ref(GGML_TYPE_Q8_0, x, &b, 32);
    cr_assert_neq(b.d, 0);
    cr_assert_lt(b.d, 0x0400, "d = 0x%04x is subnormal", b.d);
    cr_assert_eq(b.d, ggml_fp32_to_fp16(31e-6f / 127.0f));
    dequant(GGML_TYPE_Q8_0, &b, y, 32);
    const float d = ggml_fp16_to_fp32(b.d);
    for (int j = 0; j < 32; j++) {
        cr_assert_eq(y[j], (float) b.qs[j] * d);
        /* a subnormal d has a step of 2^-24: relative error up to 2^-24 / d per level */
        cr_assert_leq(fabsf(y[j] - x[j]), 0.5f * d + 127.0f * 0x1p-25f, "element %d", j);
    }
}

Test(quant_legacy_edge, q5_0_negative_scale) {
    /* a positive extreme 16 gives d = -1: level 0 means +16 */
    float x[32] = { 0 };
    x[5] = 16.0f;
    block_q5_0 b;
    quant_ref(GGML_TYPE_Q5_0, x, &b, 32);
    cr_assert_eq(b.d, 0xbc00);
    float y[32];
    dequant(GGML_TYPE_Q5_0, &b, y, 32);
    cr_assert_eq(y[5], 16.0f);
    cr_assert_eq(y[0], 0.0f);
}

Test(quant_legacy_edge, tq2_0_ignores_imatrix) {
    float x[256], w[256];
    fill_random(x, 256, 14, 1.0f);
    for (int j = 0; j < 256; j++) {
        w[j] = (float) (j + 1);
    }
    uint8_t a[sizeof(block_tq2_0)], b[sizeof(block_tq2_0)];
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_TQ2_0, x, a, 0, 1, 256, NULL), sizeof a);
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_TQ2_0, x, b, 0, 1, 256, w), sizeof b);
    assert_bytes(a, b, sizeof a, "tq2_0 with and without imatrix");
}

/* ---- importance matrix ----------------------------------------------------------------------- */

/* Sum over rows of |error| in the heavily weighted columns, with and without the imatrix: the
 * imatrix search must trade error elsewhere for less error where the weights are. */
static void imatrix_helps(enum ggml_type t, uint64_t salt) {
    enum { ROWS = 64, N = 256 };
    static float x[ROWS * N], y0[ROWS * N], y1[ROWS * N], w[N];
    static uint8_t q[ROWS * N * 2];
    fill_random(x, ROWS * N, salt, 1.0f);
    for (int j = 0; j < N; j++) {
        w[j] = j % 8 == 3 ? 100.0f : 0.01f;
    }
    cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, ROWS, N, NULL), ROWS * ggml_row_size(t, N));
    dequant(t, q, y0, ROWS * N);
    cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, ROWS, N, w), ROWS * ggml_row_size(t, N));
    dequant(t, q, y1, ROWS * N);
    double e0 = 0.0, e1 = 0.0;
    for (int i = 0; i < ROWS * N; i++) {
        if (i % 8 == 3) {
            e0 += fabs((double) y0[i] - x[i]);
            e1 += fabs((double) y1[i] - x[i]);
        }
    }
    cr_assert_lt(e1, e0 * 0.9, "%s weighted-column error %g with the imatrix, %g without", ggml_type_name(t), e1, e0);
}

Test(quant_legacy_imatrix, q4_0_weights_the_marked_columns) { imatrix_helps(GGML_TYPE_Q4_0, 21); }
Test(quant_legacy_imatrix, q4_1_weights_the_marked_columns) { imatrix_helps(GGML_TYPE_Q4_1, 22); }
Test(quant_legacy_imatrix, q5_0_weights_the_marked_columns) { imatrix_helps(GGML_TYPE_Q5_0, 23); }
Test(quant_legacy_imatrix, q5_1_weights_the_marked_columns) { imatrix_helps(GGML_TYPE_Q5_1, 24); }

Test(quant_legacy_imatrix, uniform_weights_stay_close_to_the_data) {
    /* with equal weights the search still has to land within a step of every value */
    enum { N = 256 };
    float x[N], y[N], w[N];
    fill_random(x, N, 25, 1.0f);
    for (int j = 0; j < N; j++) {
        w[j] = 1.0f;
    }
    static const enum ggml_type ts[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1 };
    for (size_t k = 0; k < 4; k++) {
        uint8_t q[N];
        cr_assert_eq(ggml_quantize_chunk(ts[k], x, q, 0, 1, N, w), ggml_row_size(ts[k], N));
        dequant(ts[k], q, y, N);
        for (int b0 = 0; b0 < N; b0 += 32) {
            /* at most two steps of the plain scale: the search moves the scale a little, and a
             * symmetric format may clamp its extreme */
            float mn, mx, lim;
            block_min_max(x + b0, 32, &mn, &mx);
            switch (ts[k]) {
            case GGML_TYPE_Q4_0: lim = block_absmax(x + b0, 32) / 8.0f * 2.0f; break;
            case GGML_TYPE_Q5_0: lim = block_absmax(x + b0, 32) / 16.0f * 2.0f; break;
            case GGML_TYPE_Q4_1: lim = (mx - mn) / 15.0f * 2.0f; break;
            default:             lim = (mx - mn) / 31.0f * 2.0f; break;
            }
            for (int j = b0; j < b0 + 32; j++) {
                cr_assert_leq(fabsf(y[j] - x[j]), lim, "%s element %d", ggml_type_name(ts[k]), j);
            }
        }
    }
}

Test(quant_legacy_imatrix, zero_row_with_imatrix_is_zero) {
    float x[64] = { 0 }, y[64], w[64];
    for (int j = 0; j < 64; j++) {
        w[j] = 1.0f;
    }
    static const enum ggml_type ts[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1 };
    for (size_t k = 0; k < 4; k++) {
        uint8_t q[128];
        cr_assert_eq(ggml_quantize_chunk(ts[k], x, q, 0, 1, 64, w), ggml_row_size(ts[k], 64));
        dequant(ts[k], q, y, 64);
        for (int j = 0; j < 64; j++) {
            cr_assert_eq(y[j], 0.0f, "%s element %d", ggml_type_name(ts[k]), j);
        }
    }
}
