/*
 * test-ops-copy-cast.c -- conversions of CPY/DUP/CONT at the edges of each type (expected bit
 * patterns written out, not computed by the library's own converters): F32 -> F16 and -> BF16
 * rounding to nearest even, overflow to infinity, subnormals, signed zero and NaN; F16/BF16 <->
 * I32 (truncation toward zero, saturation, NaN -> 0); F16 <-> BF16 -- each through the vector
 * loop and the scalar tail, on the default kernel and GGMLX_COPY_KERNEL=portable, bit for bit
 * alike; conversions between non-contiguous layouts on several threads; the CPU's supports_op for every type pair; and the
 * constructors' error contract (element counts, NULL operands).
 */
#include "test-ops-common.h"
#include "ggml-cpu.h"

#include <limits.h>

/* one ggml_cpy of n raw values of type ts into td on the kernel GGMLX_COPY_KERNEL selects */
static void cpy_once(enum ggml_type ts, const void * in, enum ggml_type td, void * out, int64_t n, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * src = to_new(&e, ts, n, 1, 1, 1);
    struct ggml_tensor * dst = to_new(&e, td, n, 1, 1, 1);
    memcpy(src->data, in, ggml_nbytes(src));
    struct ggml_tensor * r = ggml_cpy(e.ctx, src, dst);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    to_compute(&e, r, n_threads);
    memcpy(out, dst->data, ggml_nbytes(dst));
    to_end(&e);
}

/*
 * Copies n values (raw bytes of type ts) into td; out gets the n results. The values are tiled
 * over a longer row so each one passes both through the 16-wide vector loop and the scalar tail,
 * on the default kernel and on GGMLX_COPY_KERNEL=portable: all of them must agree bit for bit.
 */
static void cpy_raw(enum ggml_type ts, const void * in, enum ggml_type td, void * out, int64_t n, int n_threads) {
    const size_t  es = ggml_type_size(ts), ed = ggml_type_size(td);
    const int64_t len = 40 + n; /* 32 in the vector loop (for n <= 16 every value twice), the rest scalar */
    char * tin  = (char *) malloc((size_t) len * es);
    char * fast = (char *) malloc((size_t) len * ed);
    char * port = (char *) malloc((size_t) len * ed);
    for (int64_t i = 0; i < len; i++) {
        memcpy(tin + (size_t) i * es, (const char *) in + (size_t) (i % n) * es, es);
    }
    unsetenv("GGMLX_COPY_KERNEL");
    cpy_once(ts, tin, td, fast, len, n_threads);
    cr_assert_eq(setenv("GGMLX_COPY_KERNEL", "portable", 1), 0);
    cpy_once(ts, tin, td, port, len, n_threads);
    unsetenv("GGMLX_COPY_KERNEL");
    for (int64_t i = 0; i < len; i++) {
        cr_assert(memcmp(fast + (size_t) i * ed, port + (size_t) i * ed, ed) == 0,
                  "%s -> %s element %lld (value %lld): default and portable kernels differ", ggml_type_name(ts),
                  ggml_type_name(td), (long long) i, (long long) (i % n));
        cr_assert(memcmp(fast + (size_t) i * ed, fast + (size_t) (i % n) * ed, ed) == 0,
                  "%s -> %s value %lld: converted differently at element %lld", ggml_type_name(ts),
                  ggml_type_name(td), (long long) (i % n), (long long) i);
    }
    memcpy(out, fast, (size_t) n * ed);
    free(tin);
    free(fast);
    free(port);
}

static float f32_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }

Test(copy_cast, f32_to_f16_rounds_to_nearest_even_and_overflows_to_inf) {
    const float in[] = { 1.0f, -0.0f, 2049.0f, 2051.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                         INFINITY, -INFINITY, 0x1p-24f, 0x1p-25f, 0x3p-26f, 0x1p-14f, 1e-10f };
    const uint16_t want[] = { 0x3C00, 0x8000, 0x6800, 0x6802, 0x7BFF, 0x7BFF, 0x7C00, 0x7C00, 0xFC00,
                              0x7C00, 0xFC00, 0x0001, 0x0000, 0x0001, 0x0400, 0x0000 };
    const int64_t n = (int64_t) (sizeof in / sizeof in[0]);
    uint16_t out[sizeof in / sizeof in[0]];
    cpy_raw(GGML_TYPE_F32, in, GGML_TYPE_F16, out, n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_expect_eq(out[i], want[i], "F32 %a -> F16: got 0x%04x want 0x%04x", (double) in[i], out[i], want[i]);
    }
}

Test(copy_cast, f32_nan_stays_nan_in_f16_and_bf16) {
    const float in[2] = { NAN, -NAN };
    uint16_t h[2], b[2];
    cpy_raw(GGML_TYPE_F32, in, GGML_TYPE_F16, h, 2, 1);
    cpy_raw(GGML_TYPE_F32, in, GGML_TYPE_BF16, b, 2, 1);
    for (int i = 0; i < 2; i++) {
        cr_expect(f16_is_nan(h[i]), "F16 0x%04x is not NaN", h[i]);
        cr_expect(bf16_is_nan(b[i]), "BF16 0x%04x is not NaN", b[i]);
    }
}

Test(copy_cast, f32_to_bf16_rounds_to_nearest_even) {
    const uint32_t in_bits[] = { 0x3F800000, 0x3F808000, 0x3F818000, 0x3F800001, 0x3F80FFFF, 0x7F7FFFFF,
                                 0xFF800000, 0x80000000, 0x00000001, 0xC0490FDB };
    const uint16_t want[] = { 0x3F80, 0x3F80, 0x3F82, 0x3F80, 0x3F81, 0x7F80, 0xFF80, 0x8000, 0x0000, 0xC049 };
    const int64_t n = (int64_t) (sizeof in_bits / sizeof in_bits[0]);
    float in[sizeof in_bits / sizeof in_bits[0]];
    for (int64_t i = 0; i < n; i++) {
        in[i] = f32_bits(in_bits[i]);
    }
    uint16_t out[sizeof in_bits / sizeof in_bits[0]];
    cpy_raw(GGML_TYPE_F32, in, GGML_TYPE_BF16, out, n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_expect_eq(out[i], want[i], "F32 0x%08x -> BF16: got 0x%04x want 0x%04x", in_bits[i], out[i], want[i]);
    }
}

Test(copy_cast, half_to_i32_truncates_saturates_and_zeroes_nan) {
    /* F16: -2.5, 2.75, 65504, -inf, NaN, -0 */
    const uint16_t h[] = { 0xC100, 0x4180, 0x7BFF, 0xFC00, 0x7E00, 0x8000 };
    const int32_t  hw[] = { -2, 2, 65504, INT32_MIN, 0, 0 };
    int32_t out[6];
    cpy_raw(GGML_TYPE_F16, h, GGML_TYPE_I32, out, 6, 1);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(out[i], hw[i], "F16 0x%04x -> I32: got %d want %d", h[i], out[i], hw[i]);
    }
    /* BF16: -1.5, 3.0e9 (0x4F33), -3.0e9, inf, NaN, 100.5 (0x42C9) */
    const uint16_t b[] = { 0xBFC0, 0x4F33, 0xCF33, 0x7F80, 0x7FC0, 0x42C9 };
    const int32_t  bw[] = { -1, INT32_MAX, INT32_MIN, INT32_MAX, 0, 100 };
    cpy_raw(GGML_TYPE_BF16, b, GGML_TYPE_I32, out, 6, 1);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(out[i], bw[i], "BF16 0x%04x -> I32: got %d want %d", b[i], out[i], bw[i]);
    }
}

Test(copy_cast, i32_to_half_rounds_and_overflows) {
    const int32_t in[] = { 0, -7, 2049, 2051, 65504, 70000, -70000, 16777217, INT32_MAX };
    const uint16_t hw[] = { 0x0000, 0xC700, 0x6800, 0x6802, 0x7BFF, 0x7C00, 0xFC00, 0x7C00, 0x7C00 };
    /* BF16 keeps 8 significant bits: 2049 -> 2048, 2051 -> 2048, 65504 -> 65536, 70000 -> 70144 */
    const uint16_t bw[] = { 0x0000, 0xC0E0, 0x4500, 0x4500, 0x4780, 0x4789, 0xC789, 0x4B80, 0x4F00 };
    const int64_t n = (int64_t) (sizeof in / sizeof in[0]);
    uint16_t out[sizeof in / sizeof in[0]];
    cpy_raw(GGML_TYPE_I32, in, GGML_TYPE_F16, out, n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_expect_eq(out[i], hw[i], "I32 %d -> F16: got 0x%04x want 0x%04x", in[i], out[i], hw[i]);
    }
    cpy_raw(GGML_TYPE_I32, in, GGML_TYPE_BF16, out, n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_expect_eq(out[i], bw[i], "I32 %d -> BF16: got 0x%04x want 0x%04x", in[i], out[i], bw[i]);
    }
}

Test(copy_cast, i32_to_f32_and_back_is_exact_up_to_2_pow_24) {
    const int32_t in[] = { 0, 1, -1, 16777216, -16777216, 123456, -98765 };
    const int64_t n = (int64_t) (sizeof in / sizeof in[0]);
    float f[sizeof in / sizeof in[0]];
    int32_t back[sizeof in / sizeof in[0]];
    cpy_raw(GGML_TYPE_I32, in, GGML_TYPE_F32, f, n, 1);
    cpy_raw(GGML_TYPE_F32, f, GGML_TYPE_I32, back, n, 1);
    for (int64_t i = 0; i < n; i++) {
        cr_expect_eq(f[i], (float) in[i]);
        cr_expect_eq(back[i], in[i]);
    }
}

Test(copy_cast, f16_and_bf16_convert_both_ways) {
    /* F16 -> BF16: 1, 65504 (rounds up to 65536), 2^-24 (exact), -inf, 1 + 2^-10 (rounds to 1) */
    const uint16_t h[] = { 0x3C00, 0x7BFF, 0x0001, 0xFC00, 0x3C01 };
    const uint16_t hb[] = { 0x3F80, 0x4780, 0x3380, 0xFF80, 0x3F80 };
    uint16_t out[5];
    cpy_raw(GGML_TYPE_F16, h, GGML_TYPE_BF16, out, 5, 1);
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(out[i], hb[i], "F16 0x%04x -> BF16: got 0x%04x want 0x%04x", h[i], out[i], hb[i]);
    }
    /* BF16 -> F16: 1, 1e5 (0x47C3: overflows), -2, 2^-30 (0x3080: underflows to 0), 0.333984375 */
    const uint16_t b[] = { 0x3F80, 0x47C3, 0xC000, 0x3080, 0x3EAB };
    const uint16_t bh[] = { 0x3C00, 0x7C00, 0xC000, 0x0000, 0x3558 };
    cpy_raw(GGML_TYPE_BF16, b, GGML_TYPE_F16, out, 5, 1);
    for (int i = 0; i < 5; i++) {
        cr_expect_eq(out[i], bh[i], "BF16 0x%04x -> F16: got 0x%04x want 0x%04x", b[i], out[i], bh[i]);
    }
    const uint16_t nan_b = 0x7FC0, nan_h = 0x7E00;
    cpy_raw(GGML_TYPE_BF16, &nan_b, GGML_TYPE_F16, out, 1, 1);
    cr_expect(f16_is_nan(out[0]), "BF16 NaN -> F16 0x%04x", out[0]);
    cpy_raw(GGML_TYPE_F16, &nan_h, GGML_TYPE_BF16, out, 1, 1);
    cr_expect(bf16_is_nan(out[0]), "F16 NaN -> BF16 0x%04x", out[0]);
}

/* value v as type t holds it (the test's own rounding: exact for the integers used here) */
static double as_type(double v, enum ggml_type t) {
    switch (t) {
    case GGML_TYPE_F16:  return ggml_fp16_to_fp32(ggml_fp32_to_fp16((float) v));
    case GGML_TYPE_BF16: return ggml_bf16_to_fp32(ggml_fp32_to_bf16((float) v));
    case GGML_TYPE_I32:  return trunc(v);
    default:             return (float) v;
    }
}

/* permuted source into a transposed destination, every pair of the four types, 3 threads */
Test(copy_cast, noncontiguous_both_sides_on_three_threads) {
    const enum ggml_type T[4] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int s = 0; s < 4; s++) {
        for (int d = 0; d < 4; d++) {
            struct to_env e;
            to_begin(&e);
            struct ggml_tensor * src = to_new_permuted(&e, T[s], 37, 19, 3, 2);
            struct ggml_tensor * dst = to_new_transposed(&e, T[d], 37, 19, 3, 2);
            cr_assert(!ggml_is_contiguous(src) && !ggml_is_contiguous(dst));
            struct tu_rng rng = tu_rng_new((uint64_t) (900 + s * 4 + d));
            TU_FOR_EACH(src, i0, i1, i2, i3) {
                /* small integers and halves: exact in every type but I32, which truncates them */
                tu_set(src, i0, i1, i2, i3, 0.5 * (double) ((int64_t) (tu_next(&rng) % 401) - 200));
            }
            double * vs = to_values(src);
            struct ggml_tensor * r = ggml_cpy(e.ctx, src, dst);
            cr_assert_not_null(r, "%s", ggmlx_last_error());
            to_compute(&e, r, 3);
            const size_t n = (size_t) ggml_nelements(dst);
            for (size_t i = 0; i < n; i++) {
                vs[i] = as_type(vs[i], T[d]);
            }
            char what[64];
            snprintf(what, sizeof what, "%s (permuted) -> %s (transposed)", ggml_type_name(T[s]), ggml_type_name(T[d]));
            to_check(dst, vs, 0.0, what);
            free(vs);
            to_end(&e);
        }
    }
}

Test(copy_cast, cpu_supports_every_pair_of_the_four_types) {
    const enum ggml_type T[4] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    ggml_backend_t be = ggml_backend_cpu_init();
    cr_assert_not_null(be);
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (int s = 0; s < 4; s++) {
        for (int d = 0; d < 4; d++) {
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, T[s], 8, 3);
            struct ggml_tensor * b = ggml_new_tensor_2d(ctx, T[d], 4, 6);
            cr_expect(ggml_backend_supports_op(be, ggml_cpy(ctx, a, b)), "cpy %s -> %s", ggml_type_name(T[s]),
                      ggml_type_name(T[d]));
            cr_expect(ggml_backend_supports_op(be, ggml_cast(ctx, a, T[d])), "cast %s -> %s", ggml_type_name(T[s]),
                      ggml_type_name(T[d]));
        }
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, T[s], 8, 3);
        cr_expect(ggml_backend_supports_op(be, ggml_cont(ctx, ggml_transpose(ctx, a))), "cont %s", ggml_type_name(T[s]));
        cr_expect(ggml_backend_supports_op(be, ggml_dup(ctx, a)), "dup %s", ggml_type_name(T[s]));
    }
    ggml_free(ctx);
    ggml_backend_free(be);
}

Test(copy_cast, cpy_rejects_different_element_counts) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 5, 3);
    to_expect_rejected(ctx, ggml_cpy(ctx, a, b), "ggml_cpy");
    ggml_free(ctx);
}

Test(copy_cast, cpy_rejects_null_operands) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_cpy(ctx, a, NULL), "ggml_cpy");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_cpy(ctx, NULL, a), "ggml_cpy");
    ggml_free(ctx);
}

Test(copy_cast, dup_cast_and_cont_reject_null) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_dup(ctx, NULL), "ggml_dup");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_dup_inplace(ctx, NULL), "ggml_dup_inplace");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_cast(ctx, NULL, GGML_TYPE_F16), "ggml_cast");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_cont(ctx, NULL), "ggml_cont");
    ggml_free(ctx);
}

/*
 * NULL, context failed, and a message about the element count. (The message names the internal
 * cont_impl rather than ggml_cont_Nd, since views.c's cont_impl uses GGMLX_REQUIRE, so the
 * function name is not checked here: reported, views.c is not this suite's file.)
 */
static void expect_cont_rejected(struct ggml_context * ctx, const struct ggml_tensor * r, const char * func) {
    cr_assert_null(r, "%s accepted a different element count", func);
    const char * err = ggmlx_last_error();
    cr_assert_not_null(err, "%s: no error recorded", func);
    cr_assert_not_null(strstr(err, "elements"), "%s: error does not mention the element count: %s", func, err);
    cr_assert(ggmlx_context_is_failed(ctx), "%s: context not marked failed", func);
}

Test(copy_cast, cont_nd_rejects_a_different_element_count) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4);
    expect_cont_rejected(ctx, ggml_cont_1d(ctx, a, 23), "ggml_cont_1d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 6, 4);
    expect_cont_rejected(ctx, ggml_cont_2d(ctx, a, 5, 5), "ggml_cont_2d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, 6, 4);
    expect_cont_rejected(ctx, ggml_cont_3d(ctx, a, 2, 2, 5), "ggml_cont_3d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 6, 4);
    expect_cont_rejected(ctx, ggml_cont_4d(ctx, a, 2, 2, 2, 2), "ggml_cont_4d");
    ggml_free(ctx);
}

Test(copy_cast, cont_nd_reshapes_a_transposed_source) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * src = to_new_transposed(&e, GGML_TYPE_BF16, 6, 4, 1, 1);
    struct tu_rng rng = tu_rng_new(950);
    tu_fill(src, &rng, -10.0f, 10.0f);
    double * vs = to_values(src);
    struct ggml_tensor * r2 = to_alloc(&e, ggml_cont_2d(e.ctx, src, 8, 3));
    struct ggml_tensor * r3 = to_alloc(&e, ggml_cont_3d(e.ctx, src, 2, 3, 4));
    struct ggml_tensor * r1 = to_alloc(&e, ggml_cont_1d(e.ctx, src, 24));
    cr_assert(r2->ne[0] == 8 && r2->ne[1] == 3 && r3->ne[2] == 4 && r1->ne[0] == 24);
    to_compute(&e, r2, 2);
    to_compute(&e, r3, 1);
    to_compute(&e, r1, 3);
    to_check(r2, vs, 0.0, "ggml_cont_2d");
    to_check(r3, vs, 0.0, "ggml_cont_3d");
    to_check(r1, vs, 0.0, "ggml_cont_1d");
    free(vs);
    to_end(&e);
}

/* random bit patterns (NaN payloads, subnormals, huge values) of each type into every other type */
Test(copy_cast, random_bit_patterns_convert_alike_on_both_kernels) {
    const enum ggml_type T[4] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    enum { N = 4099 };
    uint32_t * in  = (uint32_t *) malloc(N * sizeof(uint32_t));
    uint32_t * out = (uint32_t *) malloc(N * sizeof(uint32_t));
    for (int s = 0; s < 4; s++) {
        struct tu_rng rng = tu_rng_new((uint64_t) (1200 + s));
        const size_t es = ggml_type_size(T[s]);
        for (int i = 0; i < N; i++) {
            const uint32_t v = (uint32_t) tu_next(&rng);
            if (es == 2) {
                ((uint16_t *) in)[i] = (uint16_t) v;
            } else {
                in[i] = v;
            }
        }
        for (int d = 0; d < 4; d++) {
            if (d != s) {
                cpy_raw(T[s], in, T[d], out, N, 2);
            }
        }
    }
    free(in);
    free(out);
}

/* contiguous tensors of different types and shapes: one flat run split between 1-4 threads */
Test(copy_cast, contiguous_runs_split_between_threads) {
    const enum ggml_type T[4] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int s = 0; s < 4; s++) {
        for (int d = 0; d < 4; d++) {
            for (int nt = 1; nt <= 4; nt++) {
                struct to_env e;
                to_begin(&e);
                struct ggml_tensor * src = to_new(&e, T[s], 1031, 5, 1, 1);
                struct ggml_tensor * dst = to_new(&e, T[d], 5, 1031, 1, 1); /* another shape, same count */
                struct tu_rng rng = tu_rng_new((uint64_t) (1300 + s * 16 + d * 4 + nt));
                TU_FOR_EACH(src, i0, i1, i2, i3) {
                    tu_set(src, i0, i1, i2, i3, 0.5 * (double) ((int64_t) (tu_next(&rng) % 401) - 200));
                }
                double * vs = to_values(src);
                to_compute(&e, ggml_cpy(e.ctx, src, dst), nt);
                for (size_t i = 0; i < (size_t) ggml_nelements(dst); i++) {
                    vs[i] = as_type(vs[i], T[d]);
                }
                char what[64];
                snprintf(what, sizeof what, "%s -> %s on %d threads", ggml_type_name(T[s]), ggml_type_name(T[d]), nt);
                to_check(dst, vs, 0.0, what);
                free(vs);
                to_end(&e);
            }
        }
    }
}
