/*
 * test-quant-ops.c -- ops on quantized tensors through the backend API, on the CPU backend (three
 * threads, so the shared conversion and the thread splits run) and on SIM0 (GGMLX_SIM_DEVICES=1,
 * the same kernels on private memory): MUL_MAT with quantized weights against a double-precision
 * product of the dequantized weights and the F32 activations, GET_ROWS, CPY/DUP/CONT into and out
 * of quantized types, SET_ROWS, and the refusals (supports_op false, graph compute fails with the
 * rule named, nothing written).
 *
 * Tolerance of MUL_MAT: the weights enter exactly (the reference dequantizes the same bytes), so
 * the only error is the activations' quantization to the vec_dot_type (Q8_0 or Q8_K: a block of
 * values shares d = amax / 127, each value rounded to the nearest multiple, off by at most d / 2;
 * Q8_0 stores d as F16, a relative error of at most 2^-11 of every value), plus F32 summation:
 *     |err| <= sum_blocks (d_b / 2) * sum_{j in b} |w_j|  +  2^-10 * sum_j |w_j x_j|  +  1e-5 * (1 + |ref|).
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlx.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum be_kind { BE_CPU, BE_SIM };

static const char * last_error(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "(none)";
}

/* ---- random numbers (fixed seed from GGMLX_TEST_SEED) ------------------------------------------- */

static uint64_t g_rng;

static void seed(void) {
    const char * s = getenv("GGMLX_TEST_SEED");
    g_rng = s ? strtoull(s, NULL, 10) : 12345;
    g_rng = g_rng * 0x9e3779b97f4a7c15ull + 1;
}

static float uniform(float lo, float hi) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return lo + (hi - lo) * (float) ((g_rng >> 11) * (1.0 / 9007199254740992.0));
}

static float * random_floats(int64_t n, float lo, float hi) {
    float * v = malloc((size_t) n * sizeof *v);
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = uniform(lo, hi);
    }
    return v;
}

/* ---- a backend, a context, a graph ------------------------------------------------------------ */

struct fx {
    ggml_backend_t        be;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
};

static struct fx open_fx(enum be_kind kind) {
    struct fx f = { 0 };
    seed();
    if (kind == BE_SIM) {
        setenv("GGMLX_SIM_DEVICES", "1", 1); /* read at the registry's first use; each test is a process */
        ggml_backend_dev_t dev = ggml_backend_dev_by_name("SIM0");
        cr_assert_not_null(dev, "no SIM0: %s", last_error());
        f.be = ggml_backend_dev_init(dev, NULL);
    } else {
        f.be = ggml_backend_cpu_init();
        cr_assert_not_null(f.be, "%s", last_error());
        ggml_backend_cpu_set_n_threads(f.be, 3);
    }
    cr_assert_not_null(f.be, "%s", last_error());
    struct ggml_init_params p = { 64 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    f.ctx = ggml_init(p);
    cr_assert_not_null(f.ctx);
    return f;
}

static void alloc_fx(struct fx * f) {
    f->buf = ggml_backend_alloc_ctx_tensors(f->ctx, f->be);
    cr_assert_not_null(f->buf, "%s", last_error());
}

static void close_fx(struct fx * f) {
    ggml_backend_buffer_free(f->buf);
    ggml_free(f->ctx);
    ggml_backend_free(f->be);
}

static enum ggml_status compute(struct fx * f, struct ggml_tensor * out) {
    struct ggml_cgraph * g = ggml_new_graph(f->ctx);
    ggml_build_forward_expand(g, out);
    return ggml_backend_graph_compute(f->be, g);
}

/* n F32 values quantized by the reference quantizer into fresh bytes */
static void * quantize(enum ggml_type t, const float * x, int64_t n) {
    void * q = malloc(ggml_row_size(t, n));
    cr_assert_not_null(q);
    ggml_get_type_traits(t)->from_float_ref(x, q, n);
    return q;
}

static float * dequantize(enum ggml_type t, const void * q, int64_t n) {
    float * y = malloc((size_t) n * sizeof *y);
    cr_assert_not_null(y);
    ggml_get_type_traits(t)->to_float(q, y, n);
    return y;
}

/* ---- MUL_MAT ------------------------------------------------------------------------------------ */

/*
 * dst [N, M, B2, B3] = a [K, N, A2, A3] (type t) x b [K, M, B2, B3] (F32); b_transposed makes b a
 * transposed view (element stride M floats), so the activations are gathered before quantizing.
 */
static void check_mul_mat(enum be_kind kind, enum ggml_type t, int64_t K, int64_t N, int64_t M, int64_t A2, int64_t A3,
                          int64_t B2, int64_t B3, bool b_transposed) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * a = ggml_new_tensor_4d(f.ctx, t, K, N, A2, A3);
    struct ggml_tensor * bs = b_transposed ? ggml_new_tensor_4d(f.ctx, GGML_TYPE_F32, M, K, B2, B3)
                                           : ggml_new_tensor_4d(f.ctx, GGML_TYPE_F32, K, M, B2, B3);
    struct ggml_tensor * b = b_transposed ? ggml_transpose(f.ctx, bs) : bs;
    struct ggml_tensor * d = ggml_mul_mat(f.ctx, a, b);
    cr_assert_not_null(d, "%s", last_error());
    cr_assert(ggml_backend_supports_op(f.be, d), "%s does not take mul_mat with %s weights", ggml_backend_name(f.be),
              ggml_type_name(t));
    alloc_fx(&f);

    const int64_t na = K * N * A2 * A3, nb = K * M * B2 * B3;
    float * wf = random_floats(na, -1.0f, 1.0f);
    void  * wq = quantize(t, wf, na);
    float * w  = dequantize(t, wq, na);
    float * x  = random_floats(nb, -2.0f, 2.0f); /* logical b[k, m, i2, i3] at ((i3 * B2 + i2) * M + m) * K + k */
    ggml_backend_tensor_set(a, wq, 0, ggml_nbytes(a));
    if (b_transposed) {
        float * xs = malloc((size_t) nb * sizeof *xs);
        for (int64_t r = 0; r < M * B2 * B3; r++) {
            const int64_t m = r % M, plane = r / M;
            for (int64_t k = 0; k < K; k++) {
                xs[(plane * K + k) * M + m] = x[r * K + k];
            }
        }
        ggml_backend_tensor_set(bs, xs, 0, ggml_nbytes(bs));
        free(xs);
    } else {
        ggml_backend_tensor_set(bs, x, 0, ggml_nbytes(bs));
    }
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());

    float * got = malloc(ggml_nbytes(d));
    ggml_backend_tensor_get(d, got, 0, ggml_nbytes(d));
    const int64_t qb = ggml_blck_size(ggml_get_type_traits_cpu(t)->vec_dot_type);
    for (int64_t i3 = 0; i3 < B3; i3++) {
        for (int64_t i2 = 0; i2 < B2; i2++) {
            const float * wp = w + ((i3 / (B3 / A3)) * A2 + i2 / (B2 / A2)) * N * K;
            for (int64_t m = 0; m < M; m++) {
                const float * xr = x + ((i3 * B2 + i2) * M + m) * K;
                for (int64_t n = 0; n < N; n++) {
                    const float * wr = wp + n * K;
                    double ref = 0.0, tol = 0.0, mag = 0.0;
                    for (int64_t b0 = 0; b0 < K; b0 += qb) {
                        double amax = 0.0, wsum = 0.0;
                        for (int64_t k = b0; k < b0 + qb; k++) {
                            ref += (double) wr[k] * (double) xr[k];
                            mag += fabs((double) wr[k] * (double) xr[k]);
                            amax = fmax(amax, fabs((double) xr[k]));
                            wsum += fabs((double) wr[k]);
                        }
                        tol += amax / 127.0 / 2.0 * wsum;
                    }
                    tol += mag / 1024.0 + 1e-5 * (1.0 + fabs(ref));
                    const float v = got[((i3 * B2 + i2) * M + m) * N + n];
                    cr_assert(fabs((double) v - ref) <= tol,
                              "%s %s K=%lld: dst[%lld, %lld, %lld, %lld] = %.7g, reference %.7g, tolerance %.3g",
                              ggml_backend_name(f.be), ggml_type_name(t), (long long) K, (long long) n, (long long) m,
                              (long long) i2, (long long) i3, v, ref, tol);
                }
            }
        }
    }
    free(got);
    free(x);
    free(w);
    free(wq);
    free(wf);
    close_fx(&f);
}

#define ON_BOTH(suite, name)                                   \
    static void name(enum be_kind kind);                       \
    Test(suite, name##_on_cpu) { name(BE_CPU); }               \
    Test(suite, name##_on_sim0) { name(BE_SIM); }              \
    static void name(enum be_kind kind)

ON_BOTH(quant_mul_mat, q4_0_matrix_vector_with_odd_row_count) {
    check_mul_mat(kind, GGML_TYPE_Q4_0, 256, 67, 1, 1, 1, 1, 1, false);
}

ON_BOTH(quant_mul_mat, q8_0_matrix_vector_with_odd_row_count) {
    check_mul_mat(kind, GGML_TYPE_Q8_0, 96, 45, 1, 1, 1, 1, 1, false);
}

ON_BOTH(quant_mul_mat, q4_0_batch_larger_than_a_tile) {
    check_mul_mat(kind, GGML_TYPE_Q4_0, 128, 71, 70, 1, 1, 1, 1, false);
}

/* the tiles of a batch go to the batched 8-bit kernel; these force its portable C kernel, or none */
ON_BOTH(quant_mul_mat, q8_0_batch_with_the_portable_gemm_kernel) {
    setenv("GGMLX_MATMUL_KERNEL", "portable", 1);
    check_mul_mat(kind, GGML_TYPE_Q8_0, 96, 40, 67, 1, 1, 1, 1, false);
}

ON_BOTH(quant_mul_mat, q8_0_batch_of_more_rows_than_one_gemm_call_takes) {
    check_mul_mat(kind, GGML_TYPE_Q8_0, 64, 20, 2050, 1, 1, 1, 1, false);
}

ON_BOTH(quant_mul_mat, q4_0_batch_with_vec_dot_only) {
    setenv("GGMLX_MATMUL_KERNEL", "avx2", 1);
    check_mul_mat(kind, GGML_TYPE_Q4_0, 96, 40, 67, 1, 1, 1, 1, false);
}

ON_BOTH(quant_mul_mat, q8_0_broadcast_over_dims_2_and_3) {
    check_mul_mat(kind, GGML_TYPE_Q8_0, 64, 9, 5, 2, 1, 4, 3, false);
}

ON_BOTH(quant_mul_mat, q4_0_vector_per_batch_broadcast) {
    check_mul_mat(kind, GGML_TYPE_Q4_0, 64, 13, 1, 1, 2, 3, 2, false);
}

ON_BOTH(quant_mul_mat, q8_0_transposed_activations_are_gathered) {
    check_mul_mat(kind, GGML_TYPE_Q8_0, 64, 17, 6, 1, 1, 2, 1, true);
}

ON_BOTH(quant_mul_mat, q4_0_strided_vector_split_across_threads) {
    check_mul_mat(kind, GGML_TYPE_Q4_0, 160, 8, 1, 1, 1, 1, 1, true);
}

/* ---- GET_ROWS ----------------------------------------------------------------------------------- */

static void check_get_rows(enum be_kind kind, enum ggml_type t) {
    struct fx f = open_fx(kind);
    const int64_t K = 64, R = 7, NI = 5, P = 2;
    struct ggml_tensor * a   = ggml_new_tensor_3d(f.ctx, t, K, R, P);
    struct ggml_tensor * idx = ggml_new_tensor_2d(f.ctx, GGML_TYPE_I32, NI, P);
    struct ggml_tensor * d   = ggml_get_rows(f.ctx, a, idx);
    cr_assert_not_null(d, "%s", last_error());
    cr_assert_eq(d->type, GGML_TYPE_F32);
    alloc_fx(&f);
    float * wf = random_floats(K * R * P, -3.0f, 3.0f);
    void  * wq = quantize(t, wf, K * R * P);
    float * w  = dequantize(t, wq, K * R * P);
    const int32_t rows[10] = { 6, 0, 3, 3, 5, 1, 6, 2, 0, 4 };
    ggml_backend_tensor_set(a, wq, 0, ggml_nbytes(a));
    ggml_backend_tensor_set(idx, rows, 0, sizeof rows);
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    float got[64 * 10];
    ggml_backend_tensor_get(d, got, 0, sizeof got);
    for (int64_t p = 0; p < P; p++) {
        for (int64_t i = 0; i < NI; i++) {
            const float * want = w + (p * R + rows[p * NI + i]) * K;
            cr_assert_arr_eq(got + (p * NI + i) * K, want, K * sizeof(float), "%s: row %lld of plane %lld",
                             ggml_type_name(t), (long long) i, (long long) p);
        }
    }
    free(w);
    free(wq);
    free(wf);
    close_fx(&f);
}

ON_BOTH(quant_get_rows, q4_0_rows_are_dequantized_exactly) {
    check_get_rows(kind, GGML_TYPE_Q4_0);
}

ON_BOTH(quant_get_rows, q8_0_rows_are_dequantized_exactly) {
    check_get_rows(kind, GGML_TYPE_Q8_0);
}

ON_BOTH(quant_get_rows, index_out_of_range_fails_and_writes_nothing) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * a   = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q8_0, 32, 3);
    struct ggml_tensor * idx = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I32, 2);
    struct ggml_tensor * d   = ggml_get_rows(f.ctx, a, idx);
    alloc_fx(&f);
    float * wf = random_floats(96, -1.0f, 1.0f);
    void  * wq = quantize(GGML_TYPE_Q8_0, wf, 96);
    ggml_backend_tensor_set(a, wq, 0, ggml_nbytes(a));
    const int32_t rows[2] = { 1, 3 };
    ggml_backend_tensor_set(idx, rows, 0, sizeof rows);
    float before[64];
    for (int i = 0; i < 64; i++) {
        before[i] = 42.0f;
    }
    ggml_backend_tensor_set(d, before, 0, sizeof before);
    cr_assert_eq(compute(&f, d), GGML_STATUS_FAILED);
    cr_assert(strstr(last_error(), "out of range") != NULL, "%s", last_error());
    float after[64];
    ggml_backend_tensor_get(d, after, 0, sizeof after);
    cr_assert_arr_eq(after, before, sizeof before);
    free(wq);
    free(wf);
    close_fx(&f);
}

/* ---- CPY / DUP / CONT --------------------------------------------------------------------------- */

/*
 * each quantized value within half a step of its block (Q8_0: d = amax / 127). Q4_0 maps the
 * signed maximum to -8d, so the other end has levels only up to 7d: a value there may be off by up
 * to one whole step d = amax / 8.
 */
static void expect_round_trip(enum ggml_type t, const float * x, const void * q, int64_t n) {
    float * y = dequantize(t, q, n);
    const int64_t bs = ggml_blck_size(t);
    for (int64_t b0 = 0; b0 < n; b0 += bs) {
        float amax = 0.0f;
        for (int64_t j = b0; j < b0 + bs; j++) {
            amax = fmaxf(amax, fabsf(x[j]));
        }
        const float tol = t == GGML_TYPE_Q8_0 ? amax / 127.0f * 0.5f : amax / 8.0f;
        for (int64_t j = b0; j < b0 + bs; j++) {
            cr_assert(fabsf(y[j] - x[j]) <= tol * 1.01f + amax * 1e-3f,
                      "%s: element %lld: %g quantized to %g (tolerance %g)", ggml_type_name(t), (long long) j, x[j],
                      y[j], tol);
        }
    }
    free(y);
}

static void check_cpy_to_quant(enum be_kind kind, enum ggml_type t, enum ggml_type src_type, bool permuted) {
    struct fx f = open_fx(kind);
    const int64_t K = 96, R = 5;
    /* a permuted source: logical [K, R] stored as [R, K] */
    struct ggml_tensor * ss = permuted ? ggml_new_tensor_2d(f.ctx, src_type, R, K) : ggml_new_tensor_2d(f.ctx, src_type, K, R);
    struct ggml_tensor * s  = permuted ? ggml_transpose(f.ctx, ss) : ss;
    struct ggml_tensor * q  = ggml_new_tensor_2d(f.ctx, t, K, R);
    struct ggml_tensor * d  = ggml_cpy(f.ctx, s, q);
    cr_assert_not_null(d, "%s", last_error());
    cr_assert(ggml_backend_supports_op(f.be, d));
    alloc_fx(&f);
    float * x = random_floats(K * R, -2.0f, 2.0f);
    /* what the source holds, as the values the quantizer sees */
    float * xs = malloc((size_t) (K * R) * sizeof *xs);
    void  * raw = malloc((size_t) (K * R) * 4);
    for (int64_t r = 0; r < R; r++) {
        for (int64_t k = 0; k < K; k++) {
            const int64_t at = permuted ? k * R + r : r * K + k;
            if (src_type == GGML_TYPE_F16) {
                ((ggml_fp16_t *) raw)[at] = ggml_fp32_to_fp16(x[r * K + k]);
                xs[r * K + k] = ggml_fp16_to_fp32(((ggml_fp16_t *) raw)[at]);
            } else {
                ((float *) raw)[at] = x[r * K + k];
                xs[r * K + k] = x[r * K + k];
            }
        }
    }
    ggml_backend_tensor_set(ss, raw, 0, ggml_nbytes(ss));
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    void * got = malloc(ggml_nbytes(q));
    ggml_backend_tensor_get(q, got, 0, ggml_nbytes(q));
    expect_round_trip(t, xs, got, K * R);
    free(got);
    free(raw);
    free(xs);
    free(x);
    close_fx(&f);
}

ON_BOTH(quant_cpy, f32_to_q8_0_within_half_a_step) {
    check_cpy_to_quant(kind, GGML_TYPE_Q8_0, GGML_TYPE_F32, false);
}

ON_BOTH(quant_cpy, f32_to_q4_0_within_half_a_step) {
    check_cpy_to_quant(kind, GGML_TYPE_Q4_0, GGML_TYPE_F32, false);
}

ON_BOTH(quant_cpy, permuted_f16_to_q8_0_within_half_a_step) {
    check_cpy_to_quant(kind, GGML_TYPE_Q8_0, GGML_TYPE_F16, true);
}

ON_BOTH(quant_cpy, q4_0_to_f32_in_another_shape_is_exact) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * q = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q4_0, 64, 3);
    struct ggml_tensor * o = ggml_new_tensor_3d(f.ctx, GGML_TYPE_F32, 32, 2, 3);
    struct ggml_tensor * d = ggml_cpy(f.ctx, q, o);
    alloc_fx(&f);
    float * x  = random_floats(192, -1.0f, 1.0f);
    void  * qb = quantize(GGML_TYPE_Q4_0, x, 192);
    float * y  = dequantize(GGML_TYPE_Q4_0, qb, 192);
    ggml_backend_tensor_set(q, qb, 0, ggml_nbytes(q));
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    float got[192];
    ggml_backend_tensor_get(o, got, 0, sizeof got);
    cr_assert_arr_eq(got, y, sizeof got);
    free(y);
    free(qb);
    free(x);
    close_fx(&f);
}

ON_BOTH(quant_cpy, q8_0_to_transposed_f32_is_exact) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * q  = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q8_0, 32, 4);
    struct ggml_tensor * os = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 32);
    struct ggml_tensor * d  = ggml_cpy(f.ctx, q, ggml_transpose(f.ctx, os));
    alloc_fx(&f);
    float * x  = random_floats(128, -1.0f, 1.0f);
    void  * qb = quantize(GGML_TYPE_Q8_0, x, 128);
    float * y  = dequantize(GGML_TYPE_Q8_0, qb, 128);
    ggml_backend_tensor_set(q, qb, 0, ggml_nbytes(q));
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    float got[128];
    ggml_backend_tensor_get(os, got, 0, sizeof got);
    for (int r = 0; r < 4; r++) {
        for (int k = 0; k < 32; k++) {
            cr_assert_eq(got[k * 4 + r], y[r * 32 + k], "[%d, %d]", k, r);
        }
    }
    free(y);
    free(qb);
    free(x);
    close_fx(&f);
}

ON_BOTH(quant_cpy, cont_of_q8_0_moves_bytes) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * q = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q8_0, 64, 3);
    struct ggml_tensor * d = ggml_cont(f.ctx, ggml_view_2d(f.ctx, q, 64, 2, q->nb[1], q->nb[1]));
    alloc_fx(&f);
    float * x  = random_floats(192, -1.0f, 1.0f);
    void  * qb = quantize(GGML_TYPE_Q8_0, x, 192);
    ggml_backend_tensor_set(q, qb, 0, ggml_nbytes(q));
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    char got[2 * 68];
    ggml_backend_tensor_get(d, got, 0, sizeof got);
    cr_assert_arr_eq(got, (char *) qb + q->nb[1], sizeof got);
    free(qb);
    free(x);
    close_fx(&f);
}

/* ---- SET_ROWS ----------------------------------------------------------------------------------- */

static void check_set_rows(enum be_kind kind, enum ggml_type t, enum ggml_type src_type) {
    struct fx f = open_fx(kind);
    const int64_t K = 64, R = 6, NS = 3;
    struct ggml_tensor * a   = ggml_new_tensor_2d(f.ctx, t, K, R);
    struct ggml_tensor * b   = ggml_new_tensor_2d(f.ctx, src_type, K, NS);
    struct ggml_tensor * idx = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I64, NS);
    struct ggml_tensor * d   = ggml_set_rows(f.ctx, a, b, idx);
    cr_assert_not_null(d, "%s", last_error());
    cr_assert(ggml_backend_supports_op(f.be, d));
    alloc_fx(&f);
    float * old = random_floats(K * R, -1.0f, 1.0f);
    void  * oq  = quantize(t, old, K * R);
    ggml_backend_tensor_set(a, oq, 0, ggml_nbytes(a));
    float * x = random_floats(K * NS, -4.0f, 4.0f);
    if (src_type == GGML_TYPE_F16) {
        ggml_fp16_t h[64 * 3];
        for (int i = 0; i < K * NS; i++) {
            h[i] = ggml_fp32_to_fp16(x[i]);
            x[i] = ggml_fp16_to_fp32(h[i]);
        }
        ggml_backend_tensor_set(b, h, 0, sizeof h);
    } else {
        ggml_backend_tensor_set(b, x, 0, ggml_nbytes(b));
    }
    const int64_t rows[3] = { 4, 1, 5 };
    ggml_backend_tensor_set(idx, rows, 0, sizeof rows);
    cr_assert_eq(compute(&f, d), GGML_STATUS_SUCCESS, "%s", last_error());
    char * got = malloc(ggml_nbytes(a));
    ggml_backend_tensor_get(a, got, 0, ggml_nbytes(a));
    const size_t rs = ggml_row_size(t, K);
    for (int64_t r = 0; r < R; r++) {
        int64_t from = -1;
        for (int i = 0; i < NS; i++) {
            from = rows[i] == r ? i : from;
        }
        if (from < 0) {
            cr_assert_arr_eq(got + r * rs, (char *) oq + r * rs, rs, "row %lld was not to be written", (long long) r);
        } else {
            expect_round_trip(t, x + from * K, got + r * rs, K);
        }
    }
    free(got);
    free(x);
    free(oq);
    free(old);
    close_fx(&f);
}

ON_BOTH(quant_set_rows, f32_rows_into_q8_0) {
    check_set_rows(kind, GGML_TYPE_Q8_0, GGML_TYPE_F32);
}

ON_BOTH(quant_set_rows, f32_rows_into_q4_0) {
    check_set_rows(kind, GGML_TYPE_Q4_0, GGML_TYPE_F32);
}

ON_BOTH(quant_set_rows, f16_rows_into_q4_0) {
    check_set_rows(kind, GGML_TYPE_Q4_0, GGML_TYPE_F16);
}

/* ---- refusals ----------------------------------------------------------------------------------- */

/* supports_op says no, and computing fails naming the rule (why), writing nothing */
static void expect_refused(struct fx * f, struct ggml_tensor * node, const char * why) {
    cr_assert_not(ggml_backend_supports_op(f->be, node), "%s took %s", ggml_backend_name(f->be), ggml_op_desc(node));
    cr_assert_eq(compute(f, node), GGML_STATUS_FAILED);
    cr_assert(strstr(last_error(), why) != NULL, "the error does not say \"%s\": %s", why, last_error());
}

ON_BOTH(quant_refusals, cpy_into_iq2_xxs_has_no_quantizer) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * s = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 256);
    struct ggml_tensor * q = ggml_new_tensor_1d(f.ctx, GGML_TYPE_IQ2_XXS, 256);
    struct ggml_tensor * d = ggml_cpy(f.ctx, s, q);
    alloc_fx(&f);
    expect_refused(&f, d, "made only by ggml_quantize_chunk");
    close_fx(&f);
}

ON_BOTH(quant_refusals, set_rows_into_iq3_s_has_no_quantizer) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * a   = ggml_new_tensor_2d(f.ctx, GGML_TYPE_IQ3_S, 256, 2);
    struct ggml_tensor * b   = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 256, 1);
    struct ggml_tensor * idx = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I64, 1);
    struct ggml_tensor * d   = ggml_set_rows(f.ctx, a, b, idx);
    alloc_fx(&f);
    expect_refused(&f, d, "made only by ggml_quantize_chunk");
    close_fx(&f);
}

ON_BOTH(quant_refusals, quantized_source_copies_into_f32_only) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * q = ggml_new_tensor_1d(f.ctx, GGML_TYPE_Q8_0, 64);
    struct ggml_tensor * h = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F16, 64);
    struct ggml_tensor * d = ggml_cpy(f.ctx, q, h);
    alloc_fx(&f);
    expect_refused(&f, d, "F32 or its own type");
    close_fx(&f);
}

ON_BOTH(quant_refusals, quantized_destination_must_be_contiguous) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * s = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 32, 2);
    struct ggml_tensor * q = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q8_0, 32, 4);
    struct ggml_tensor * v = ggml_view_2d(f.ctx, q, 32, 2, 2 * q->nb[1], 0); /* every other row */
    struct ggml_tensor * d = ggml_cpy(f.ctx, s, v);
    alloc_fx(&f);
    expect_refused(&f, d, "must be contiguous");
    close_fx(&f);
}

ON_BOTH(quant_refusals, mul_mat_with_q8_1_weights_has_no_dot_kernel) {
    struct fx f = open_fx(kind);
    struct ggml_tensor * a = ggml_new_tensor_2d(f.ctx, GGML_TYPE_Q8_1, 32, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 32, 2);
    struct ggml_tensor * d = ggml_mul_mat(f.ctx, a, b);
    cr_assert_not_null(d, "%s", last_error());
    alloc_fx(&f);
    expect_refused(&f, d, "no CPU dot product kernel");
    close_fx(&f);
}

Test(quant_refusals, mul_mat_with_quantized_activations_is_refused_when_built) {
    struct ggml_init_params p = { 8 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 32, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 32, 2);
    cr_assert_null(ggml_mul_mat(ctx, a, b));
    cr_assert(strstr(last_error(), "b must be F32") != NULL, "%s", last_error());
    ggml_free(ctx);
}

/* ---- placement ---------------------------------------------------------------------------------- */

Test(quant_sched, sim0_takes_quantized_mul_mat) {
    setenv("GGMLX_SIM_DEVICES", "1", 1);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("SIM0");
    cr_assert_not_null(dev);
    struct ggml_init_params p = { 8 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 8);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 40);
    struct ggml_tensor * d = ggml_mul_mat(ctx, a, b);
    cr_assert(ggml_backend_dev_supports_op(dev, d));
    cr_assert(ggml_backend_dev_offload_op(dev, d), "a batch of 40 rows is worth sending to SIM0");
    ggml_free(ctx);
}
