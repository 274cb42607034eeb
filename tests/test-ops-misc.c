/*
 * test-ops-misc.c -- DIAG_MASK_ZERO, ARANGE, TIMESTEP_EMBEDDING, COUNT_EQUAL and CUMSUM against
 * double references (odd sizes, non-contiguous inputs, in place, threads) and their error rules.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

/* ---- DIAG_MASK_ZERO ------------------------------------------------------------------------ */

static void run_diag_mask_zero(const int64_t ne[4], int n_past, bool transposed, bool inplace, int n_threads,
                               uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = transposed ? to_new_transposed(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                                        : to_new(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    tu_fill(a, &rng, 0.5f, 2.0f);
    double * va = to_values(a);
    double * want = (double *) malloc((size_t) ggml_nelements(a) * sizeof(double));
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        const size_t i = to_index(a, i0, i1, i2, i3);
        want[i] = i0 > n_past + i1 ? 0.0 : va[i];
    }
    struct ggml_tensor * r = inplace ? ggml_diag_mask_zero_inplace(e.ctx, a, n_past) : ggml_diag_mask_zero(e.ctx, a, n_past);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_DIAG_MASK_ZERO);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), n_past);
    if (inplace) {
        cr_assert_eq(r->data, a->data);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    to_check(r, want, 0.0, "diag_mask_zero");
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

Test(diag_mask_zero, zeroes_above_the_shifted_diagonal) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] > 100 ? 3 : TU_SIZES[s], 2, 1 };
        run_diag_mask_zero(ne, 0, false, false, 1, (uint64_t) s);
        run_diag_mask_zero(ne, 2, false, false, 2, (uint64_t) (10 + s));
    }
}

Test(diag_mask_zero, transposed_and_inplace) {
    const int64_t ne[4] = { 33, 31, 2, 1 };
    run_diag_mask_zero(ne, 1, true, false, 2, 20);
    run_diag_mask_zero(ne, 0, false, true, 1, 21);
    run_diag_mask_zero(ne, 5, true, true, 3, 22);
}

Test(diag_mask_zero, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_diag_mask_zero(ctx, NULL, 0), "ggml_diag_mask_zero");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 4);
    to_expect_rejected(ctx, ggml_diag_mask_zero(ctx, a, 0), "ggml_diag_mask_zero");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    to_expect_rejected(ctx, ggml_diag_mask_zero_inplace(ctx, a, -1), "ggml_diag_mask_zero_inplace");
    ggml_free(ctx);
}

/* ---- ARANGE -------------------------------------------------------------------------------- */

static void run_arange(float start, float stop, float step, int64_t n_want, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * r = ggml_arange(e.ctx, start, stop, step);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_ARANGE);
    cr_assert_eq(r->type, GGML_TYPE_F32);
    cr_assert_eq(r->ne[0], n_want, "arange(%g, %g, %g): %lld elements, want %lld", (double) start, (double) stop,
                 (double) step, (long long) r->ne[0], (long long) n_want);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 0), start);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 1), stop);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 2), step);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) n_want * sizeof(double));
    for (int64_t i = 0; i < n_want; i++) {
        want[i] = (double) start + (double) step * (double) i;
    }
    to_check(r, want, 1e-6, "arange");
    free(want);
    to_end(&e);
}

Test(arange, counts_and_values) {
    run_arange(0.0f, 1.0f, 1.0f, 1, 1);
    run_arange(0.0f, 10.0f, 1.0f, 10, 1);
    run_arange(-3.0f, 4.5f, 0.5f, 15, 2);
    run_arange(2.0f, 3.0f, 0.3f, 4, 1); /* the last step lands short of stop */
    run_arange(0.0f, 4097.0f, 1.0f, 4097, 3);
}

Test(arange, rejects_bad_ranges) {
    const float bad[][3] = { { 1.0f, 1.0f, 1.0f }, { 2.0f, 1.0f, 1.0f }, { 0.0f, 1.0f, 0.0f }, { 0.0f, 1.0f, -1.0f },
                             { 0.0f, INFINITY, 1.0f }, { NAN, 1.0f, 1.0f }, { 0.0f, 1e30f, 1e-30f } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, ggml_arange(ctx, bad[i][0], bad[i][1], bad[i][2]), "ggml_arange");
        ggml_free(ctx);
    }
    cr_assert_null(ggml_arange(NULL, 0.0f, 1.0f, 1.0f));
}

/* ---- TIMESTEP_EMBEDDING -------------------------------------------------------------------- */

static void run_timestep(int64_t n, int dim, int max_period, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * t = to_new(&e, GGML_TYPE_F32, n, 1, 1, 1);
    tu_fill(t, &rng, 0.0f, 1000.0f);
    struct ggml_tensor * r = ggml_timestep_embedding(e.ctx, t, dim, max_period);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_TIMESTEP_EMBEDDING);
    cr_assert(r->type == GGML_TYPE_F32 && r->ne[0] == dim && r->ne[1] == n && r->ne[2] == 1 && r->ne[3] == 1);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), dim);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 1), max_period);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) (dim * n) * sizeof(double));
    const int half = dim / 2;
    for (int64_t i = 0; i < n; i++) {
        const double ts = tu_get(t, i, 0, 0, 0);
        for (int j = 0; j < half; j++) {
            const double f = exp(-log((double) max_period) * j / half);
            want[i * dim + j]        = cos(ts * f);
            want[i * dim + j + half] = sin(ts * f);
        }
        if (dim % 2) {
            want[i * dim + dim - 1] = 0.0;
        }
    }
    char what[96];
    snprintf(what, sizeof what, "timestep_embedding n %lld dim %d period %d", (long long) n, dim, max_period);
    to_check(r, want, 1e-6, what);
    free(want);
    to_end(&e);
}

Test(timestep_embedding, even_and_odd_dims) {
    run_timestep(1, 2, 10000, 1, 1);
    run_timestep(5, 32, 10000, 1, 2);
    run_timestep(3, 33, 10000, 2, 3); /* odd: the last column is 0 */
    run_timestep(31, 1, 100, 1, 4);   /* no frequencies at all */
    run_timestep(33, 320, 10000, 3, 5);
}

Test(timestep_embedding, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_timestep_embedding(ctx, NULL, 8, 10000), "ggml_timestep_embedding");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4);
    to_expect_rejected(ctx, ggml_timestep_embedding(ctx, t, 8, 10000), "ggml_timestep_embedding");
    ggml_free(ctx);
    ctx = to_small_ctx();
    t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    to_expect_rejected(ctx, ggml_timestep_embedding(ctx, t, 8, 10000), "ggml_timestep_embedding");
    ggml_free(ctx);
    ctx = to_small_ctx();
    t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_timestep_embedding(ctx, t, 0, 10000), "ggml_timestep_embedding");
    ggml_free(ctx);
    ctx = to_small_ctx();
    t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_timestep_embedding(ctx, t, 8, 0), "ggml_timestep_embedding");
    ggml_free(ctx);
}

/* ---- COUNT_EQUAL --------------------------------------------------------------------------- */

static void run_count_equal(const int64_t ne[4], bool transposed, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_I32, ne[0], ne[1], ne[2], ne[3]);
    struct ggml_tensor * b = transposed ? to_new_transposed(&e, GGML_TYPE_I32, ne[0], ne[1], ne[2], ne[3])
                                        : to_new(&e, GGML_TYPE_I32, ne[0], ne[1], ne[2], ne[3]);
    int64_t want = 0;
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        const int32_t x = (int32_t) (tu_next(&rng) % 4);
        const int32_t y = (int32_t) (tu_next(&rng) % 4);
        tu_set(a, i0, i1, i2, i3, x);
        tu_set(b, i0, i1, i2, i3, y);
        want += x == y;
    }
    struct ggml_tensor * r = ggml_count_equal(e.ctx, a, b);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_COUNT_EQUAL && r->type == GGML_TYPE_I64 && ggml_nelements(r) == 1);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    cr_assert_eq(*(const int64_t *) r->data, want, "count_equal: %lld, want %lld (threads %d)",
                 (long long) *(const int64_t *) r->data, (long long) want, n_threads);
    to_end(&e);
}

Test(count_equal, counts_equal_elements) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], 3, 2, 1 };
        run_count_equal(ne, false, s % 3 + 1, (uint64_t) s);
    }
    const int64_t ne[4] = { 33, 31, 2, 3 };
    run_count_equal(ne, true, 2, 20);
    const int64_t big[4] = { 4097, 7, 1, 1 };
    run_count_equal(big, false, 3, 21);
}

Test(count_equal, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    to_expect_rejected(ctx, ggml_count_equal(ctx, a, NULL), "ggml_count_equal");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 5);
    to_expect_rejected(ctx, ggml_count_equal(ctx, a, b), "ggml_count_equal");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_count_equal(ctx, a, b), "ggml_count_equal");
    ggml_free(ctx);
}

/* ---- CUMSUM -------------------------------------------------------------------------------- */

static void run_cumsum(const int64_t ne[4], int layout, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = layout == 1 ? to_new_transposed(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                           : layout == 2 ? to_new_permuted(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                                         : to_new(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    tu_fill(a, &rng, -1.0f, 1.0f);
    double * va = to_values(a);
    const int64_t n = ggml_nelements(a);
    double * want = (double *) malloc((size_t) n * sizeof(double));
    for (int64_t r = 0; r < n / ne[0]; r++) {
        double acc = 0.0;
        for (int64_t i = 0; i < ne[0]; i++) {
            acc += va[r * ne[0] + i];
            want[r * ne[0] + i] = acc;
        }
    }
    struct ggml_tensor * r = ggml_cumsum(e.ctx, a);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_CUMSUM && r->type == GGML_TYPE_F32 && ggml_are_same_shape(r, a));
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    to_check(r, want, 1e-6, "cumsum");
    to_check(a, va, 0.0, "input must be unchanged");
    free(want);
    free(va);
    to_end(&e);
}

Test(cumsum, running_sums_along_rows) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] > 100 ? 2 : 5, 2, 1 };
        run_cumsum(ne, 0, s % 3 + 1, (uint64_t) s);
    }
}

Test(cumsum, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 2, 3 };
    run_cumsum(ne, 1, 1, 10);
    run_cumsum(ne, 2, 2, 11);
}

Test(cumsum, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_cumsum(ctx, NULL), "ggml_cumsum");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4);
    to_expect_rejected(ctx, ggml_cumsum(ctx, a), "ggml_cumsum");
    ggml_free(ctx);
}
