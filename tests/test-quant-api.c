/*
 * test-quant-api.c -- ggml_quantize_chunk, ggml_quantize_requires_imatrix, ggml_quantize_init /
 * ggml_quantize_free and ggml_validate_row_data on quantized rows: each refusal (one test per
 * rule: 0 bytes, an error, dst untouched), where chunk writes for start > 0, and each block rule
 * of the validator, whose message names the failing block.
 */
#include <criterion/criterion.h>

#include "test-errlog.h"
#include "test-util.h"

#include "quant/quant-blocks.h"

static void setup(void) {
    ggml_log_set(count_log, NULL);
    ggmlx_clear_last_error();
    g_n_errors = 0;
}

TestSuite(quant_chunk, .init = setup);
TestSuite(quant_validate, .init = setup);
TestSuite(quant_init, .init = setup);

enum { N = 256, ROWS = 4 };

static float g_x[ROWS * N];
static uint8_t g_dst[ROWS * N * 4];

static void fill(void) {
    struct tu_rng r = tu_rng_new(7);
    for (int i = 0; i < ROWS * N; i++) {
        g_x[i] = tu_uniform(&r, -2.0f, 2.0f);
    }
    memset(g_dst, 0xab, sizeof g_dst);
}

static void assert_dst_untouched(void) {
    for (size_t i = 0; i < sizeof g_dst; i++) {
        cr_assert_eq(g_dst[i], 0xab, "dst byte %zu was written by a refused call", i);
    }
}

static void assert_refused(enum ggml_type t, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix, const char * needle) {
    const size_t r = ggml_quantize_chunk(t, src, dst, start, nrows, n_per_row, imatrix);
    cr_assert_eq(r, 0, "refused: 0 bytes");
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), needle), "message \"%s\" mentions \"%s\"", ggmlx_last_error(), needle);
    ASSERT_ERROR();
    assert_dst_untouched();
}

/* ---- ggml_quantize_chunk: refusals ----------------------------------------------------------- */

Test(quant_chunk, start_not_a_multiple_of_the_block_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q4_0, g_x, g_dst, 16, 1, 32, NULL, "start 16");
}

Test(quant_chunk, start_not_a_multiple_of_n_per_row_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q4_0, g_x, g_dst, 64, 1, 96, NULL, "n_per_row 96");
}

Test(quant_chunk, negative_start_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q8_0, g_x, g_dst, -32, 1, 32, NULL, "start -32");
}

Test(quant_chunk, n_per_row_not_a_multiple_of_the_block_is_refused) {
    fill();
    assert_refused(GGML_TYPE_TQ2_0, g_x, g_dst, 0, 1, 128, NULL, "block size 256");
}

Test(quant_chunk, negative_nrows_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q8_0, g_x, g_dst, 0, -1, 32, NULL, "negative");
}

Test(quant_chunk, null_src_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q8_0, NULL, g_dst, 0, 1, 32, NULL, "NULL");
}

Test(quant_chunk, null_dst_is_refused) {
    fill();
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q8_0, g_x, NULL, 0, 1, 32, NULL), 0);
    ASSERT_ERROR();
}

Test(quant_chunk, q8_1_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q8_1, g_x, g_dst, 0, 1, 32, NULL, "no quantizer");
}

Test(quant_chunk, q8_k_is_refused) {
    fill();
    assert_refused(GGML_TYPE_Q8_K, g_x, g_dst, 0, 1, 256, NULL, "no quantizer");
}

Test(quant_chunk, integer_types_are_refused) {
    fill();
    static const enum ggml_type ts[] = { GGML_TYPE_I8, GGML_TYPE_I16, GGML_TYPE_I32, GGML_TYPE_I64 };
    for (size_t i = 0; i < 4; i++) {
        assert_refused(ts[i], g_x, g_dst, 0, 1, 32, NULL, "no quantizer");
    }
}

Test(quant_chunk, f64_is_refused) {
    fill();
    assert_refused(GGML_TYPE_F64, g_x, g_dst, 0, 1, 32, NULL, "no quantizer");
}

Test(quant_chunk, removed_type_ids_are_refused) {
    fill();
    static const int ids[] = { 4, 5, 31, 32, 33, 36, 37, 38 };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        assert_refused((enum ggml_type) ids[i], g_x, g_dst, 0, 1, 32, NULL, "removed");
    }
}

Test(quant_chunk, out_of_range_type_is_refused) {
    fill();
    assert_refused(GGML_TYPE_COUNT, g_x, g_dst, 0, 1, 32, NULL, "unknown");
    assert_refused((enum ggml_type) -1, g_x, g_dst, 0, 1, 32, NULL, "unknown");
}

Test(quant_chunk, missing_required_imatrix_is_refused) {
    fill();
    static const enum ggml_type ts[] = { GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ1_S };
    bool any = false;
    for (size_t i = 0; i < 3; i++) {
        if (ggml_quantize_requires_imatrix(ts[i])) {
            any = true;
            assert_refused(ts[i], g_x, g_dst, 0, 1, 256, NULL, "importance matrix");
        }
    }
    if (!any) {
        cr_skip_test("no quantizer that requires an importance matrix is built in yet");
    }
}

/* ---- ggml_quantize_chunk: what it writes ----------------------------------------------------- */

Test(quant_chunk, legacy_types_need_no_imatrix) {
    static const enum ggml_type ts[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4,
        GGML_TYPE_NVFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_F32,
        GGML_TYPE_F16, GGML_TYPE_BF16,
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        cr_assert_not(ggml_quantize_requires_imatrix(ts[i]), "%s", ggml_type_name(ts[i]));
    }
    cr_assert_not(ggml_quantize_requires_imatrix(GGML_TYPE_COUNT));
}

Test(quant_chunk, without_imatrix_equals_from_float_ref) {
    static const enum ggml_type ts[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4,
        GGML_TYPE_NVFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0,
    };
    fill();
    static uint8_t ref[ROWS * N * 4];
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const size_t bytes = ROWS * ggml_row_size(ts[i], N);
        cr_assert_eq(ggml_quantize_chunk(ts[i], g_x, g_dst, 0, ROWS, N, NULL), bytes, "%s", ggml_type_name(ts[i]));
        ASSERT_NO_ERROR();
        ggml_get_type_traits(ts[i])->from_float_ref(g_x, ref, ROWS * N);
        cr_assert_eq(memcmp(g_dst, ref, bytes), 0, "%s: chunk and from_float_ref differ", ggml_type_name(ts[i]));
    }
}

Test(quant_chunk, start_writes_at_its_row) {
    fill();
    const size_t row = ggml_row_size(GGML_TYPE_Q8_0, N);
    /* rows 2 and 3 only: dst + 2 rows, src + start */
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q8_0, g_x, g_dst, 2 * N, 2, N, NULL), 2 * row);
    uint8_t want[2 * N * 2];
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(g_x + 2 * N, want, 2 * N);
    cr_assert_eq(memcmp(g_dst + 2 * row, want, 2 * row), 0, "rows 2..3 hold the quantized rows 2..3");
    for (size_t i = 0; i < 2 * row; i++) {
        cr_assert_eq(g_dst[i], 0xab, "byte %zu of rows 0..1 untouched", i);
    }
    for (size_t i = 4 * row; i < sizeof g_dst; i++) {
        cr_assert_eq(g_dst[i], 0xab, "byte %zu past row 3 untouched", i);
    }
}

Test(quant_chunk, start_writes_at_its_row_with_imatrix) {
    fill();
    float w[N];
    for (int j = 0; j < N; j++) {
        w[j] = 1.0f + (float) (j % 5);
    }
    const size_t row = ggml_row_size(GGML_TYPE_Q4_1, N);
    static uint8_t all[ROWS * N];
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q4_1, g_x, all, 0, ROWS, N, w), ROWS * row);
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q4_1, g_x, g_dst, 3 * N, 1, N, w), row);
    cr_assert_eq(memcmp(g_dst + 3 * row, all + 3 * row, row), 0, "row 3 alone is row 3 of the whole");
    for (size_t i = 0; i < 3 * row; i++) {
        cr_assert_eq(g_dst[i], 0xab);
    }
}

Test(quant_chunk, f16_start_counts_elements) {
    fill();
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_F16, g_x, g_dst, N, 1, N, NULL), N * 2);
    const uint16_t * h = (const uint16_t *) g_dst;
    for (int j = 0; j < N; j++) {
        cr_assert_eq(h[N + j], ggml_fp32_to_fp16(g_x[N + j]), "element %d", N + j);
        cr_assert_eq(h[j], 0xabab, "element %d untouched", j);
    }
}

Test(quant_chunk, bf16_and_f32_start_count_elements) {
    fill();
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_BF16, g_x, g_dst, N, 2, N, NULL), 2 * N * 2);
    const uint16_t * b = (const uint16_t *) g_dst;
    for (int j = N; j < 3 * N; j++) {
        cr_assert_eq(b[j], ggml_fp32_to_bf16(g_x[j]).bits);
    }
    memset(g_dst, 0xab, sizeof g_dst);
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_F32, g_x, g_dst, 3 * N, 1, N, NULL), N * 4);
    cr_assert_eq(memcmp(g_dst + 3 * N * 4, g_x + 3 * N, N * 4), 0);
    cr_assert_eq(g_dst[0], 0xab);
}

Test(quant_chunk, zero_rows_write_nothing) {
    fill();
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q4_0, g_x, g_dst, 0, 0, N, NULL), 0);
    ASSERT_NO_ERROR();
    assert_dst_untouched();
}

/* ---- init and free --------------------------------------------------------------------------- */

Test(quant_init, init_and_free_any_number_of_times) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        ggml_quantize_init((enum ggml_type) t);
        ggml_quantize_init((enum ggml_type) t);
    }
    ggml_quantize_free();
    ggml_quantize_free();
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
    /* and quantizing still works after a free */
    fill();
    cr_assert_eq(ggml_quantize_chunk(GGML_TYPE_Q5_0, g_x, g_dst, 0, 1, N, NULL), ggml_row_size(GGML_TYPE_Q5_0, N));
}

/* ---- ggml_validate_row_data ------------------------------------------------------------------ */

static void assert_invalid(enum ggml_type t, const void * data, size_t nbytes, const char * needle) {
    cr_assert_not(ggml_validate_row_data(t, data, nbytes), "%s data refused", ggml_type_name(t));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), needle), "message \"%s\" mentions \"%s\"", ggmlx_last_error(), needle);
    ASSERT_ERROR();
}

/* two valid blocks of t, the second then spoiled by the caller */
static void two_blocks(enum ggml_type t, uint8_t * buf) {
    memset(buf, 0, 2 * ggml_type_size(t));
}

Test(quant_validate, q4_0_nan_d_is_invalid) {
    block_q4_0 b[2] = { 0 };
    b[1].d = 0x7e00;
    assert_invalid(GGML_TYPE_Q4_0, b, sizeof b, "block 1");
}

Test(quant_validate, q8_0_inf_d_is_invalid) {
    block_q8_0 b[2] = { 0 };
    b[0].d = 0xfc00;
    assert_invalid(GGML_TYPE_Q8_0, b, sizeof b, "block 0");
}

Test(quant_validate, q4_1_nan_m_is_invalid) {
    block_q4_1 b[2] = { 0 };
    b[1].m = 0x7c01;
    assert_invalid(GGML_TYPE_Q4_1, b, sizeof b, "m is not finite");
}

Test(quant_validate, q5_1_inf_m_is_invalid) {
    block_q5_1 b[1] = { 0 };
    b[0].m = 0x7c00;
    assert_invalid(GGML_TYPE_Q5_1, b, sizeof b, "block 0");
}

Test(quant_validate, d_of_every_single_scale_type_is_checked) {
    static const enum ggml_type ts[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q8_0, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0,
        GGML_TYPE_TQ2_0, GGML_TYPE_Q3_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_IQ2_XXS,
        GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S,
    };
    /* where d lies in each block */
    static const size_t off[] = {
        offsetof(block_q4_0, d), offsetof(block_q5_0, d), offsetof(block_q8_0, d), offsetof(block_q1_0, d),
        offsetof(block_q2_0, d), offsetof(block_tq1_0, d), offsetof(block_tq2_0, d), offsetof(block_q3_K, d),
        offsetof(block_q6_K, d), offsetof(block_iq4_nl, d), offsetof(block_iq4_xs, d), offsetof(block_iq2_xxs, d),
        offsetof(block_iq2_xs, d), offsetof(block_iq2_s, d), offsetof(block_iq3_xxs, d), offsetof(block_iq3_s, d),
        offsetof(block_iq1_s, d),
    };
    uint8_t buf[2 * 292];
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        two_blocks(ts[i], buf);
        cr_assert(ggml_validate_row_data(ts[i], buf, 2 * ggml_type_size(ts[i])), "%s zeros valid", ggml_type_name(ts[i]));
        const uint16_t inf = 0x7c00;
        memcpy(buf + ggml_type_size(ts[i]) + off[i], &inf, 2);
        assert_invalid(ts[i], buf, 2 * ggml_type_size(ts[i]), "block 1");
    }
}

Test(quant_validate, dmin_of_k_quants_is_checked) {
    block_q2_K a[2] = { 0 };
    a[1].dmin = 0x7e00;
    assert_invalid(GGML_TYPE_Q2_K, a, sizeof a, "dmin");
    block_q4_K b[1] = { 0 };
    b[0].dmin = 0xfc00;
    assert_invalid(GGML_TYPE_Q4_K, b, sizeof b, "dmin");
    block_q5_K c[1] = { 0 };
    c[0].d = 0x7c00;
    assert_invalid(GGML_TYPE_Q5_K, c, sizeof c, "block 0");
}

Test(quant_validate, mxfp4_exponent_ff_is_invalid) {
    block_mxfp4 b[3] = { 0 };
    b[2].e = 0xfe;
    cr_assert(ggml_validate_row_data(GGML_TYPE_MXFP4, b, sizeof b), "e = 0xfe is a scale");
    b[2].e = 0xff;
    assert_invalid(GGML_TYPE_MXFP4, b, sizeof b, "block 2");
}

Test(quant_validate, nvfp4_is_always_valid) {
    uint8_t b[2 * sizeof(block_nvfp4)];
    memset(b, 0xff, sizeof b);
    cr_assert(ggml_validate_row_data(GGML_TYPE_NVFP4, b, sizeof b));
    ASSERT_NO_ERROR();
}

Test(quant_validate, q8_k_f32_d_is_checked) {
    static block_q8_K b[2];
    memset(b, 0, sizeof b);
    cr_assert(ggml_validate_row_data(GGML_TYPE_Q8_K, b, sizeof b));
    b[1].d = INFINITY;
    assert_invalid(GGML_TYPE_Q8_K, b, sizeof b, "block 1");
    b[1].d = NAN;
    assert_invalid(GGML_TYPE_Q8_K, b, sizeof b, "block 1");
}

Test(quant_validate, iq1_m_assembled_scale_is_checked) {
    /* the f16 scale is the top nibble of each LE u16 of scales: 0x7c00 -> nibbles 0, 0, c, 7 */
    block_iq1_m b[2];
    memset(b, 0, sizeof b);
    b[1].scales[5] = 0xc0; /* word 2, top nibble 0xc -> bits 8..11 */
    b[1].scales[7] = 0x70; /* word 3, top nibble 0x7 -> bits 12..15 */
    assert_invalid(GGML_TYPE_IQ1_M, b, sizeof b, "block 1");
    b[1].scales[5] = 0xb0; /* 0x7b00: finite */
    cr_assert(ggml_validate_row_data(GGML_TYPE_IQ1_M, b, sizeof b));
    /* the low 12 bits of each word are sub-scales, not part of the check */
    memset(b[0].scales, 0x0f, sizeof b[0].scales);
    cr_assert(ggml_validate_row_data(GGML_TYPE_IQ1_M, b, sizeof b));
}

Test(quant_validate, q8_1_is_never_valid) {
    block_q8_1 b[1] = { 0 };
    assert_invalid(GGML_TYPE_Q8_1, b, sizeof b, "q8_1");
}

Test(quant_validate, partial_block_is_invalid) {
    block_q4_0 b[2] = { 0 };
    cr_assert_not(ggml_validate_row_data(GGML_TYPE_Q4_0, b, sizeof b - 1));
    ASSERT_ERROR();
}

Test(quant_validate, removed_type_is_invalid) {
    uint8_t b[32] = { 0 };
    cr_assert_not(ggml_validate_row_data((enum ggml_type) 4, b, sizeof b));
    ASSERT_ERROR();
}

Test(quant_validate, integers_are_always_valid) {
    uint8_t b[64];
    memset(b, 0xff, sizeof b);
    cr_assert(ggml_validate_row_data(GGML_TYPE_I8, b, sizeof b));
    cr_assert(ggml_validate_row_data(GGML_TYPE_I32, b, sizeof b));
    ASSERT_NO_ERROR();
}

Test(quant_validate, quantized_output_is_valid) {
    fill();
    static const enum ggml_type ts[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4,
        GGML_TYPE_NVFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0,
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const size_t bytes = ggml_quantize_chunk(ts[i], g_x, g_dst, 0, ROWS, N, NULL);
        cr_assert(ggml_validate_row_data(ts[i], g_dst, bytes), "%s", ggml_type_name(ts[i]));
    }
}
