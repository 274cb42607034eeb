/*
 * test-quant-k.c -- the K-quants (Q2_K..Q6_K, Q8_K) and the non-linear 4-bit formats (IQ4_NL, IQ4_XS) through the
 * public traits (to_float, from_float_ref) and ggml_quantize_chunk (Q8_K, which has neither, through its internal
 * functions): blocks built by hand from the layouts and the
 * values they must decode to, exact results where the format leaves no choice, round-trip error bounds on Gaussian
 * rows, the importance-matrix paths, and edge cases (zeros, tiny and huge values, row lengths). Bit-exactness
 * against the PyPI gguf package and byte-exactness against upstream are checked separately.
 */
#include <criterion/criterion.h>

#include "test-util.h"

#include "quant/quant-blocks.h"
#include "quant/quant-k.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static const struct ggml_type_traits * traits(enum ggml_type t) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    cr_assert_not_null(tr);
    return tr;
}

static void quant_ref(enum ggml_type t, const float * x, void * out, int64_t n) {
    cr_assert_not_null(traits(t)->from_float_ref, "%s has from_float_ref", ggml_type_name(t));
    traits(t)->from_float_ref(x, out, n);
}

static void dequant(enum ggml_type t, const void * q, float * y, int64_t n) {
    cr_assert_not_null(traits(t)->to_float, "%s has to_float", ggml_type_name(t));
    traits(t)->to_float(q, y, n);
}

/* standard normal values (Box-Muller), scaled */
static void fill_gauss(float * x, int64_t n, uint64_t salt, float scale) {
    struct tu_rng r = tu_rng_new(salt);
    for (int64_t i = 0; i < n; i += 2) {
        const double u1 = 1.0 - (double) tu_uniform(&r, 0.0f, 1.0f); /* (0, 1] */
        const double u2 = (double) tu_uniform(&r, 0.0f, 1.0f);
        const double rad = sqrt(-2.0 * log(u1));
        x[i] = (float) (rad * cos(6.283185307179586 * u2)) * scale;
        if (i + 1 < n) {
            x[i + 1] = (float) (rad * sin(6.283185307179586 * u2)) * scale;
        }
    }
}

static double rms_error(const float * x, const float * y, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += ((double) y[i] - x[i]) * ((double) y[i] - x[i]);
    }
    return sqrt(s / (double) n);
}

static const enum ggml_type k_types[] = {
    GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
};
#define N_TYPES (sizeof k_types / sizeof k_types[0])

/* ---- dequantization of hand-built blocks ---------------------------------------------------- */

Test(quant_k_dequant, q2_K_scale_and_min_nibbles_and_2bit_positions) {
    block_q2_K b;
    memset(&b, 0, sizeof b);
    b.d    = 0x3800; /* 0.5 */
    b.dmin = 0x3400; /* 0.25 */
    b.scales[4]  = 0x53; /* sub-block 4: scale 3, min 5 */
    b.scales[12] = 0xaf; /* sub-block 12: scale 15, min 10 */
    b.qs[6]  = 0x20;     /* element 70 = 64 + 6: byte 6, bits 4-5 -> 2 */
    b.qs[40] = 0x30;     /* element 200 = 128 + 64 + 8: byte 32 + 8, bits 4-5 -> 3 */
    float y[QK_K];
    dequant(GGML_TYPE_Q2_K, &b, y, QK_K);
    cr_assert_eq(y[70], 0.5f * 3 * 2 - 0.25f * 5);
    cr_assert_eq(y[200], 0.5f * 15 * 3 - 0.25f * 10);
    cr_assert_eq(y[71], -0.25f * 5, "level 0 leaves only the minimum");
    cr_assert_eq(y[0], 0.0f);
}

Test(quant_k_dequant, q3_K_six_bit_scales_and_hmask) {
    block_q3_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3800; /* 0.5 */
    /* sub-block 0: level 33 (scale 1): low nibble 1 in scales[0], top bits 2 at scales[8] bits 0-1 */
    b.scales[0] = 0x01;
    b.scales[8] = 0x02;
    /* sub-block 9: level 44 (scale 12): low nibble 0xc in the high nibble of scales[1], top bits 2 at scales[9]
     * bits 4-5 */
    b.scales[1] = 0xc0;
    b.scales[9] = 0x20;
    /* sub-block 15: level 5 (scale -27): high nibble of scales[7], top bits 0 */
    b.scales[7] = 0x50;
    b.qs[3]     = 0x02 | (0x01 << 2); /* element 3 -> 2; element 35 -> 1 */
    b.hmask[3]  = 0x01;               /* element 3 keeps its level, element 35 (bit 1 clear) loses 4 */
    b.qs[54]    = 0x03;               /* element 150 = 128 + 22 */
    b.hmask[22] = 0x10;               /* bit 150 / 32 = 4 */
    b.qs[63]    = 0x40;               /* element 255 = 128 + 96 + 31: bits 6-7 -> 1 */
    float y[QK_K];
    dequant(GGML_TYPE_Q3_K, &b, y, QK_K);
    cr_assert_eq(y[3], 0.5f * 1 * 2);
    cr_assert_eq(y[35], 0.5f * -32 * -3, "sub-block 2 has level 0, scale -32");
    cr_assert_eq(y[150], 0.5f * 12 * 3);
    cr_assert_eq(y[151], 0.5f * 12 * -4, "stored 0 with a clear hmask bit is -4");
    cr_assert_eq(y[255], 0.5f * -27 * -3);
}

Test(quant_k_dequant, q4_K_get_scale_min_packing) {
    block_q4_K b;
    memset(&b, 0, sizeof b);
    b.d    = 0x3c00; /* 1 */
    b.dmin = 0x3800; /* 0.5 */
    b.scales[0] = 1;          /* sub-block 0: scale 1 */
    b.scales[4] = 2;          /* sub-block 0: min 2 */
    b.scales[1] = 3 | 0x80;   /* sub-block 1: scale 3; top bits 2 of sub-block 5's scale */
    b.scales[5] = 4 | 0x40;   /* sub-block 1: min 4; top bits 1 of sub-block 5's min */
    b.scales[8] = 0x86;       /* sub-block 4: scale 6, min 8 */
    b.scales[9] = 0x35;       /* sub-block 5: low nibbles 5 (scale) and 3 (min): scale 37, min 19 */
    b.qs[3]     = 0x75;       /* element 3 (sub-block 0) -> 5, element 35 (sub-block 1) -> 7 */
    b.qs[64 + 7] = 0xa0;      /* element 128 + 7 (sub-block 4) -> 0, element 160 + 7 (sub-block 5) -> 10 */
    float y[QK_K];
    dequant(GGML_TYPE_Q4_K, &b, y, QK_K);
    cr_assert_eq(y[3], 1.0f * 1 * 5 - 0.5f * 2);
    cr_assert_eq(y[35], 1.0f * 3 * 7 - 0.5f * 4);
    cr_assert_eq(y[135], -0.5f * 8);
    cr_assert_eq(y[167], 1.0f * 37 * 10 - 0.5f * 19);
}

Test(quant_k_dequant, q5_K_fifth_bit_in_qh) {
    block_q5_K b;
    memset(&b, 0, sizeof b);
    b.d    = 0x3800; /* 0.5 */
    b.dmin = 0x3400; /* 0.25 */
    b.scales[3]  = 2;    /* sub-block 3: scale 2 */
    b.scales[7]  = 10;   /* sub-block 3: min 10 */
    b.scales[10] = 0x21; /* sub-block 6: low nibbles 1 (scale) and 2 (min) */
    b.scales[2]  = 0xc0; /* sub-block 6's scale top bits 3: 1 + 48 = 49 */
    b.scales[6]  = 0x40; /* sub-block 6's min top bits 1: 2 + 16 = 18 */
    b.qs[32 + 2] = 0x90; /* element 96 + 2 (sub-block 3, high nibble of chunk 1) -> 9 */
    b.qh[2]      = 0x08; /* its fifth bit: bit 3 */
    b.qs[96 + 5] = 0x07; /* element 192 + 5 (sub-block 6, low nibble of chunk 3) -> 7 */
    b.qh[5]      = 0x40; /* its fifth bit: bit 6 */
    float y[QK_K];
    dequant(GGML_TYPE_Q5_K, &b, y, QK_K);
    cr_assert_eq(y[98], 0.5f * 2 * 25 - 0.25f * 10);
    cr_assert_eq(y[197], 0.5f * 49 * 23 - 0.25f * 18);
    cr_assert_eq(y[66], 0.0f, "sub-block 2 reads only the low 6 bits of bytes 2 and 6, which are 0");
}

Test(quant_k_dequant, q6_K_ql_qh_and_signed_scales) {
    block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = 0x3400; /* 0.25 */
    for (int s = 0; s < 16; s++) {
        b.scales[s] = (int8_t) (s - 8);
    }
    b.ql[5]  = 0x3a; /* element 5 low nibble 0xa, element 69 low nibble 3 */
    b.ql[37] = 0xf1; /* element 37 low nibble 1, element 101 low nibble 0xf */
    b.qh[5]  = 0xe4; /* top bits: element 5 -> 0, 37 -> 1, 69 -> 2, 101 -> 3 */
    b.ql[84] = 0x0c; /* second half, l = 20: element 148 low nibble 0xc */
    b.qh[52] = 0x01; /* its top bits 1 */
    float y[QK_K];
    dequant(GGML_TYPE_Q6_K, &b, y, QK_K);
    cr_assert_eq(y[5], 0.25f * -8 * (10 - 32));
    cr_assert_eq(y[37], 0.25f * -6 * (17 - 32));
    cr_assert_eq(y[69], 0.25f * -4 * (35 - 32));
    cr_assert_eq(y[101], 0.25f * -2 * (63 - 32));
    cr_assert_eq(y[148], 0.25f * 1 * (28 - 32), "scale 8 + 20/16 = 9");
    cr_assert_eq(y[0], 0.25f * -8 * -32, "all-zero bits are level -32");
}

Test(quant_k_dequant, q8_K_f32_scale) {
    block_q8_K b;
    memset(&b, 0, sizeof b);
    b.d     = 0.5f;
    b.qs[3] = -7;
    b.qs[255] = 127;
    float y[QK_K];
    ggmlx_dequantize_row_q8_K(&b, y, QK_K);
    cr_assert_eq(y[3], -3.5f);
    cr_assert_eq(y[255], 63.5f);
    cr_assert_eq(y[0], 0.0f);
}

Test(quant_k_dequant, iq4_nl_codebook_ends_and_nibble_order) {
    block_iq4_nl b;
    memset(&b, 0, sizeof b);
    b.d     = 0x3800; /* 0.5 */
    b.qs[0] = 0xf0;   /* element 0 -> entry 0 (-127), element 16 -> entry 15 (113) */
    b.qs[1] = 0x98;   /* element 1 -> entry 8 (1), element 17 -> entry 9 (13) */
    float y[QK4_NL];
    dequant(GGML_TYPE_IQ4_NL, &b, y, QK4_NL);
    cr_assert_eq(y[0], -63.5f);
    cr_assert_eq(y[16], 56.5f);
    cr_assert_eq(y[1], 0.5f);
    cr_assert_eq(y[17], 6.5f);
}

Test(quant_k_dequant, iq4_xs_split_6bit_scales) {
    block_iq4_xs b;
    memset(&b, 0, sizeof b);
    b.d           = 0x3400; /* 0.25 */
    b.scales_l[2] = 0x70;   /* group 5: low nibble 7 (high nibble of byte 2) */
    b.scales_h    = 0x0800; /* group 5: top bits 2 (bits 10-11): level 39, scale 7 */
    b.qs[16 * 5 + 1] = 0x90; /* group 5 element 17 -> entry 9 (13) */
    float y[QK_K];
    dequant(GGML_TYPE_IQ4_XS, &b, y, QK_K);
    cr_assert_eq(y[5 * 32 + 17], 0.25f * 7 * 13);
    cr_assert_eq(y[0], 0.25f * -32 * -127, "group 0: level 0 is scale -32, entry 0 is -127");
}

/* ---- reference quantizers: results the format leaves no choice about ----------------------- */

Test(quant_k_ref, q8_K_levels_bsums_and_ties_to_even) {
    float x[QK_K];
    for (int j = 0; j < QK_K; j++) {
        x[j] = (float) (j - 128); /* -128..127: max = -128, iscale = 127/128 */
    }
    block_q8_K b;
    ggmlx_quantize_row_q8_K_ref(x, &b, QK_K);
    cr_assert_eq(b.d, 1.0f / (-127.0f / -128.0f));
    cr_assert_eq(b.qs[0], -127);
    cr_assert_eq(b.qs[255], 126, "127 * 127/128 = 126.0078");
    cr_assert_eq(b.qs[128 + 64], 64, "63.5 rounds to even");
    cr_assert_eq(b.qs[128 - 64], -64, "-63.5 rounds to even");
    cr_assert_eq(b.qs[128 + 1], 1);
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int j = 0; j < 16; j++) {
            sum += b.qs[16 * g + j];
        }
        cr_assert_eq(b.bsums[g], sum, "bsums[%d]", g);
    }
}

Test(quant_k_ref, q6_K_integer_levels_come_back_exactly) {
    /* every sub-block holds integers in -32..31 and reaches -32: each sub-block scale is 1, the super-scale
     * -1/128 and the int8 scale -128, all exact */
    float x[QK_K], y[QK_K];
    for (int j = 0; j < QK_K; j++) {
        x[j] = j % 16 == 0 ? -32.0f : (float) ((j * 7) % 64 - 32);
    }
    block_q6_K b;
    quant_ref(GGML_TYPE_Q6_K, x, &b, QK_K);
    cr_assert_eq(b.d, 0xa000, "-1/128 in f16");
    for (int s = 0; s < 16; s++) {
        cr_assert_eq(b.scales[s], -128);
    }
    dequant(GGML_TYPE_Q6_K, &b, y, QK_K);
    for (int j = 0; j < QK_K; j++) {
        cr_assert_eq(y[j], x[j], "element %d", j);
    }
}

Test(quant_k_ref, q4_K_integer_levels_within_f16_rounding) {
    /* 0..15 in every sub-block: scale 1, min 0, stored as 63 * (1/63 in f16) */
    float x[QK_K], y[QK_K];
    for (int j = 0; j < QK_K; j++) {
        x[j] = (float) (j % 16);
    }
    block_q4_K b;
    quant_ref(GGML_TYPE_Q4_K, x, &b, QK_K);
    cr_assert_eq(b.dmin, 0, "no minimum to subtract");
    dequant(GGML_TYPE_Q4_K, &b, y, QK_K);
    for (int j = 0; j < QK_K; j++) {
        cr_assert_leq(fabsf(y[j] - x[j]), 15.0f / 2048.0f, "element %d: %g", j, (double) y[j]);
    }
}

Test(quant_k_ref, iq4_nl_codebook_values_come_back_exactly) {
    /* the 16 codebook values twice: max -127 gives d = 1 and the least-squares fit keeps it */
    static const float kv[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };
    float x[QK4_NL], y[QK4_NL];
    for (int j = 0; j < QK4_NL; j++) {
        x[j] = kv[(j * 5) % 16];
    }
    block_iq4_nl b;
    quant_ref(GGML_TYPE_IQ4_NL, x, &b, QK4_NL);
    cr_assert_eq(b.d, 0x3c00);
    dequant(GGML_TYPE_IQ4_NL, &b, y, QK4_NL);
    for (int j = 0; j < QK4_NL; j++) {
        cr_assert_eq(y[j], x[j], "element %d", j);
    }
}

/* ---- round trips on Gaussian rows ------------------------------------------------------------ */

#define RT_ROWS 16
#define RT_N    1024

/* RMS error over RT_ROWS x RT_N standard normal values, from ggml_quantize_chunk (imatrix NULL) */
static double gauss_rms(enum ggml_type t, uint64_t salt, float scale) {
    static float   x[RT_ROWS * RT_N], y[RT_ROWS * RT_N];
    static uint8_t q[RT_ROWS * RT_N];
    fill_gauss(x, RT_ROWS * RT_N, salt, scale);
    cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, RT_ROWS, RT_N, NULL), RT_ROWS * ggml_row_size(t, RT_N));
    dequant(t, q, y, RT_ROWS * RT_N);
    return rms_error(x, y, RT_ROWS * RT_N) / scale;
}

/* upstream's reference quantizers give (sigma 1): Q2_K 0.29, Q3_K 0.15, Q4_K 0.071, Q5_K 0.036, Q6_K 0.0175,
 * IQ4_NL/IQ4_XS 0.076; the bounds leave ~10% for the sample */
Test(quant_k_round_trip, q2_K) { cr_assert_lt(gauss_rms(GGML_TYPE_Q2_K, 1, 1.0f), 0.32); }
Test(quant_k_round_trip, q3_K) { cr_assert_lt(gauss_rms(GGML_TYPE_Q3_K, 2, 1.0f), 0.165); }
Test(quant_k_round_trip, q4_K) { cr_assert_lt(gauss_rms(GGML_TYPE_Q4_K, 3, 1.0f), 0.078); }
Test(quant_k_round_trip, q5_K) { cr_assert_lt(gauss_rms(GGML_TYPE_Q5_K, 4, 1.0f), 0.040); }
Test(quant_k_round_trip, q6_K) { cr_assert_lt(gauss_rms(GGML_TYPE_Q6_K, 5, 1.0f), 0.0195); }
Test(quant_k_round_trip, iq4_nl) { cr_assert_lt(gauss_rms(GGML_TYPE_IQ4_NL, 6, 1.0f), 0.084); }
Test(quant_k_round_trip, iq4_xs) { cr_assert_lt(gauss_rms(GGML_TYPE_IQ4_XS, 7, 1.0f), 0.084); }

Test(quant_k_round_trip, q8_K_within_half_a_step) {
    float x[4 * QK_K], y[4 * QK_K];
    fill_gauss(x, 4 * QK_K, 8, 1.0f);
    block_q8_K b[4];
    ggmlx_quantize_row_q8_K_ref(x, b, 4 * QK_K);
    ggmlx_dequantize_row_q8_K(b, y, 4 * QK_K);
    for (int i = 0; i < 4 * QK_K; i++) {
        cr_assert_leq(fabsf(y[i] - x[i]), fabsf(b[i / QK_K].d) * 0.5001f, "element %d", i);
    }
}

Test(quant_k_round_trip, power_of_two_scaling_changes_nothing) {
    /* every step scales exactly by 2^k while the f16 scales stay normal numbers: the same relative error */
    for (size_t i = 0; i < N_TYPES; i++) {
        const double e1 = gauss_rms(k_types[i], 9, 1.0f);
        const double es = gauss_rms(k_types[i], 9, 0.125f);
        const double el = gauss_rms(k_types[i], 9, 1024.0f);
        cr_assert_lt(fabs(es - e1), 1e-9 * e1, "%s: %g at 1/8, %g at 1", ggml_type_name(k_types[i]), es, e1);
        cr_assert_lt(fabs(el - e1), 1e-9 * e1, "%s: %g at 1024, %g at 1", ggml_type_name(k_types[i]), el, e1);
    }
}

Test(quant_k_round_trip, chunk_without_imatrix_equals_from_float_ref) {
    enum { N = 2 * QK_K };
    static float   x[N];
    static uint8_t a[N], b[N];
    fill_gauss(x, N, 10, 1.0f);
    static const enum ggml_type ts[] = { GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                                         GGML_TYPE_Q6_K };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const size_t bytes = ggml_row_size(ts[i], N);
        quant_ref(ts[i], x, a, N);
        cr_assert_eq(ggml_quantize_chunk(ts[i], x, b, 0, 1, N, NULL), bytes);
        cr_assert_eq(memcmp(a, b, bytes), 0, "%s", ggml_type_name(ts[i]));
    }
}

Test(quant_k_round_trip, iq4_chunk_searches_more_than_ref) {
    /* ggml_quantize_chunk tries 15 scales per 32 values, from_float_ref one: less error, other bytes */
    enum { N = RT_ROWS * RT_N };
    static float   x[N], y[N];
    static uint8_t q[N];
    fill_gauss(x, N, 11, 1.0f);
    static const enum ggml_type ts[] = { GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS };
    for (size_t i = 0; i < 2; i++) {
        quant_ref(ts[i], x, q, N);
        dequant(ts[i], q, y, N);
        const double e_ref = rms_error(x, y, N);
        cr_assert_eq(ggml_quantize_chunk(ts[i], x, q, 0, RT_ROWS, RT_N, NULL), RT_ROWS * ggml_row_size(ts[i], RT_N));
        dequant(ts[i], q, y, N);
        const double e_chunk = rms_error(x, y, N);
        cr_assert_leq(e_chunk, e_ref, "%s: %g from chunk, %g from ref", ggml_type_name(ts[i]), e_chunk, e_ref);
    }
}

/* ---- importance matrix ----------------------------------------------------------------------- */

/* error in the heavily weighted columns (every 8th) with and without the imatrix, weighted error overall */
static void imatrix_helps(enum ggml_type t, uint64_t salt) {
    enum { ROWS = 16, N = 1024 };
    static float   x[ROWS * N], y0[ROWS * N], y1[ROWS * N], w[N];
    static uint8_t q[ROWS * N];
    fill_gauss(x, ROWS * N, salt, 1.0f);
    for (int j = 0; j < N; j++) {
        w[j] = j % 8 == 3 ? 100.0f : 0.01f;
    }
    cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, ROWS, N, NULL), ROWS * ggml_row_size(t, N));
    dequant(t, q, y0, ROWS * N);
    cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, ROWS, N, w), ROWS * ggml_row_size(t, N));
    dequant(t, q, y1, ROWS * N);
    double e0 = 0.0, e1 = 0.0;
    for (int i = 0; i < ROWS * N; i++) {
        const double w_i = w[i % N];
        e0 += w_i * ((double) y0[i] - x[i]) * ((double) y0[i] - x[i]);
        e1 += w_i * ((double) y1[i] - x[i]) * ((double) y1[i] - x[i]);
    }
    /* upstream's searches cut it to 0.1..0.45 of the plain error on such data */
    cr_assert_lt(e1, e0 * 0.8, "%s weighted error %g with the imatrix, %g without", ggml_type_name(t), e1, e0);
}

Test(quant_k_imatrix, q2_K_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_Q2_K, 21); }
Test(quant_k_imatrix, q3_K_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_Q3_K, 22); }
Test(quant_k_imatrix, q4_K_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_Q4_K, 23); }
Test(quant_k_imatrix, q5_K_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_Q5_K, 24); }
Test(quant_k_imatrix, q6_K_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_Q6_K, 25); }
Test(quant_k_imatrix, iq4_nl_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_IQ4_NL, 26); }
Test(quant_k_imatrix, iq4_xs_lowers_the_weighted_error) { imatrix_helps(GGML_TYPE_IQ4_XS, 27); }

Test(quant_k_imatrix, one_weight_vector_serves_every_row) {
    /* the same row twice gives the same bytes twice: the weights are indexed by column, not by element */
    enum { N = 2 * QK_K };
    static float   x[2 * N], w[N];
    static uint8_t q[2 * N];
    fill_gauss(x, N, 28, 1.0f);
    memcpy(x + N, x, sizeof(float) * N);
    for (int j = 0; j < N; j++) {
        w[j] = 0.5f + (float) (j % 7);
    }
    for (size_t i = 0; i < N_TYPES; i++) {
        const size_t row = ggml_row_size(k_types[i], N);
        cr_assert_eq(ggml_quantize_chunk(k_types[i], x, q, 0, 2, N, w), 2 * row);
        cr_assert_eq(memcmp(q, q + row, row), 0, "%s", ggml_type_name(k_types[i]));
    }
}

Test(quant_k_imatrix, none_of_these_types_requires_one) {
    for (size_t i = 0; i < N_TYPES; i++) {
        cr_assert_not(ggml_quantize_requires_imatrix(k_types[i]), "%s", ggml_type_name(k_types[i]));
    }
}

/* ---- edge cases ------------------------------------------------------------------------------- */

Test(quant_k_edge, all_zeros_give_zeros_and_valid_blocks) {
    static float   x[QK_K], y[QK_K], w[QK_K];
    static uint8_t q[2 * QK_K];
    for (int j = 0; j < QK_K; j++) {
        w[j] = 1.0f;
    }
    for (size_t i = 0; i < N_TYPES; i++) {
        const enum ggml_type t = k_types[i];
        for (int pass = 0; pass < 3; pass++) {
            memset(q, 0xcd, sizeof q);
            if (pass == 0) {
                quant_ref(t, x, q, QK_K);
            } else {
                cr_assert_eq(ggml_quantize_chunk(t, x, q, 0, 1, QK_K, pass == 2 ? w : NULL), ggml_row_size(t, QK_K));
            }
            dequant(t, q, y, QK_K);
            for (int j = 0; j < QK_K; j++) {
                cr_assert_eq(fabsf(y[j]), 0.0f, "%s pass %d element %d is %g", ggml_type_name(t), pass, j,
                             (double) y[j]);
            }
            cr_assert(ggml_validate_row_data(t, q, ggml_row_size(t, QK_K)), "%s of zeros is valid", ggml_type_name(t));
        }
    }
}

Test(quant_k_edge, q8_K_zeros_clear_the_whole_block) {
    float x[QK_K] = { 0 };
    block_q8_K b;
    memset(&b, 0x5a, sizeof b);
    ggmlx_quantize_row_q8_K_ref(x, &b, QK_K);
    cr_assert_eq(b.d, 0.0f);
    for (int j = 0; j < QK_K; j++) {
        cr_assert_eq(b.qs[j], 0);
    }
    for (int g = 0; g < 16; g++) {
        cr_assert_eq(b.bsums[g], 0, "bsums[%d]", g);
    }
}

Test(quant_k_edge, iq4_xs_zero_super_block_stores_minus_zero) {
    /* upstream's d = -max_scale / 32 is -0.0 for a block of zeros: 0x8000 */
    float x[QK_K] = { 0 };
    block_iq4_xs b;
    quant_ref(GGML_TYPE_IQ4_XS, x, &b, QK_K);
    cr_assert_eq(b.d, 0x8000);
    cr_assert_eq(b.scales_h, 0xaaaa, "every level 32 (scale 0): top bits 2");
    for (int j = 0; j < QK_K / 2; j++) {
        cr_assert_eq(b.qs[j], 0x88, "entry 8 (value 1) is the one nearest 0");
    }
}

Test(quant_k_edge, tiny_values_underflow_to_zero) {
    /* 1e-30 is far below the smallest f16 subnormal: every scale rounds to 0 and so does every value */
    static float   x[QK_K], y[QK_K];
    static uint8_t q[2 * QK_K];
    fill_gauss(x, QK_K, 29, 1e-30f);
    for (size_t i = 0; i < N_TYPES; i++) {
        cr_assert_eq(ggml_quantize_chunk(k_types[i], x, q, 0, 1, QK_K, NULL), ggml_row_size(k_types[i], QK_K));
        dequant(k_types[i], q, y, QK_K);
        for (int j = 0; j < QK_K; j++) {
            cr_assert_eq(fabsf(y[j]), 0.0f, "%s element %d is %g", ggml_type_name(k_types[i]), j, (double) y[j]);
        }
    }
}

Test(quant_k_edge, huge_values_stay_finite_and_close) {
    /* peaks near 30000: the largest scales approach the top of f16 (65504) without reaching inf */
    static float   x[QK_K], y[QK_K];
    static uint8_t q[2 * QK_K];
    fill_gauss(x, QK_K, 30, 8000.0f);
    for (size_t i = 0; i < N_TYPES; i++) {
        cr_assert_eq(ggml_quantize_chunk(k_types[i], x, q, 0, 1, QK_K, NULL), ggml_row_size(k_types[i], QK_K));
        dequant(k_types[i], q, y, QK_K);
        for (int j = 0; j < QK_K; j++) {
            cr_assert(isfinite(y[j]), "%s element %d", ggml_type_name(k_types[i]), j);
        }
        cr_assert_lt(rms_error(x, y, QK_K), 0.4 * 8000.0, "%s", ggml_type_name(k_types[i]));
    }
}

Test(quant_k_edge, one_nonzero_value_per_super_block) {
    /* a single spike: the zero sub-blocks must stay exactly 0 and the spike must come back within its step */
    static float   x[QK_K], y[QK_K];
    static uint8_t q[2 * QK_K];
    memset(x, 0, sizeof x);
    x[77] = 3.0f;
    for (size_t i = 0; i < N_TYPES; i++) {
        const enum ggml_type t = k_types[i];
        quant_ref(t, x, q, QK_K);
        dequant(t, q, y, QK_K);
        cr_assert_lt(fabsf(y[77] - 3.0f), 3.0f * 0.02f, "%s spike %g", ggml_type_name(t), (double) y[77]);
        for (int j = 0; j < QK_K; j++) {
            if (j / 32 != 77 / 32) {
                cr_assert_eq(fabsf(y[j]), 0.0f, "%s element %d is %g", ggml_type_name(t), j, (double) y[j]);
            }
        }
    }
}

Test(quant_k_edge, n_per_row_must_be_a_multiple_of_the_block) {
    static float   x[2 * QK_K];
    static uint8_t q[2 * QK_K];
    fill_gauss(x, 2 * QK_K, 31, 1.0f);
    static const enum ggml_type super[] = { GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                                            GGML_TYPE_Q6_K, GGML_TYPE_IQ4_XS };
    for (size_t i = 0; i < sizeof super / sizeof super[0]; i++) {
        cr_assert_eq(ggml_quantize_chunk(super[i], x, q, 0, 2, 128, NULL), 0, "%s 128", ggml_type_name(super[i]));
        cr_assert_not_null(strstr(ggmlx_last_error(), "n_per_row"));
        cr_assert_eq(ggml_quantize_chunk(super[i], x, q, 0, 1, 384, NULL), 0, "%s 384", ggml_type_name(super[i]));
        cr_assert_eq(ggml_quantize_chunk(super[i], x, q, 0, 1, 512, NULL), ggml_row_size(super[i], 512));
    }
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_IQ4_NL, x, q, 0, 1, 48, NULL), 0, "iq4_nl 48");
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_IQ4_NL, x, q, 0, 3, 32, NULL), 3 * sizeof(block_iq4_nl));
}

Test(quant_k_edge, q8_K_is_not_a_chunk_type) {
    static float   x[QK_K];
    static uint8_t q[sizeof(block_q8_K)];
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q8_K, x, q, 0, 1, QK_K, NULL), 0);
    cr_assert_null(traits(GGML_TYPE_Q8_K)->to_float, "as upstream, no public conversions");
    cr_assert_null(traits(GGML_TYPE_Q8_K)->from_float_ref);
}

Test(quant_k_edge, start_row_places_the_output) {
    /* start = 2 rows: the bytes go to row 2 and equal a one-row quantization of the same values */
    enum { N = QK_K };
    static float   x[3 * N];
    static uint8_t a[3 * N], b[N];
    fill_gauss(x, 3 * N, 32, 1.0f);
    for (size_t i = 0; i < N_TYPES; i++) {
        const size_t row = ggml_row_size(k_types[i], N);
        memset(a, 0, sizeof a);
        cr_assert_eq(ggml_quantize_chunk(k_types[i], x, a, 2 * N, 1, N, NULL), row);
        cr_assert_eq(ggml_quantize_chunk(k_types[i], x + 2 * N, b, 0, 1, N, NULL), row);
        cr_assert_eq(memcmp(a + 2 * row, b, row), 0, "%s", ggml_type_name(k_types[i]));
    }
}
