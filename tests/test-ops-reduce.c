/*
 * test-ops-reduce.c -- SUM, SUM_ROWS, MEAN, ARGMAX against double references: types, sizes,
 * transposed/permuted inputs, threads (SUM combines per-thread partials), and bad arguments.
 */
#include "test-ops-common.h"

static const enum ggml_type FTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_tensor(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* result rounding plus the float rounding of a sum of n terms of size ~1 */
static double sum_tol(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? 2e-6 : tu_tol(t);
}

/* ---- sum ----------------------------------------------------------------------------------- */

static void run_sum(enum ggml_type type, const int64_t ne[4], enum layout l, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, l, type, ne);
    tu_fill(a, &rng, -1.0f, 1.5f);
    struct ggml_tensor * r = ggml_sum(e.ctx, a);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_SUM);
    cr_assert_eq(r->type, type, "the sum has a's type, as upstream");
    cr_assert_eq(ggml_nelements(r), 1);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double want = 0.0;
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        want += tu_get(a, i0, i1, i2, i3);
    }
    char what[96];
    snprintf(what, sizeof what, "ggml_sum %s [%lld,%lld,%lld,%lld] layout %d threads %d", ggml_type_name(type),
             (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l, n_threads);
    to_check(r, &want, sum_tol(type), what);
    to_end(&e);
}

Test(sum, every_type_and_size) {
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < TU_N_SIZES; k++) {
            const int64_t ne[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 2 : 3, 2, 1 };
            run_sum(FTYPES[t], ne, CONTIG, 1, (uint64_t) (t * 10 + k));
        }
    }
}

Test(sum, permuted_inputs) {
    const int64_t ne[4] = { 31, 33, 2, 3 };
    for (int t = 0; t < 3; t++) {
        run_sum(FTYPES[t], ne, TRANSPOSED, 1, (uint64_t) (100 + t));
        run_sum(FTYPES[t], ne, PERMUTED, 2, (uint64_t) (110 + t));
    }
}

Test(sum, thread_partials_combine) {
    /* a thread count that does not divide the rows, and more threads than rows */
    const int64_t ne[4] = { 4097, 7, 1, 1 };
    for (int nth = 2; nth <= 5; nth++) {
        run_sum(GGML_TYPE_F32, ne, CONTIG, nth, (uint64_t) (200 + nth));
    }
    const int64_t one_row[4] = { 4097, 1, 1, 1 };
    run_sum(GGML_TYPE_F32, one_row, CONTIG, 4, 210);
    const int64_t tr[4] = { 1023, 9, 1, 1 };
    run_sum(GGML_TYPE_BF16, tr, TRANSPOSED, 3, 211);
}

Test(sum, large_sum_keeps_precision) {
    /* 8194 copies of 0.1f: exact in double; a float running sum drifts by many ulps */
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 4097, 2, 1, 1);
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        tu_set(a, i0, i1, i2, i3, 0.1);
    }
    struct ggml_tensor * r = to_alloc(&e, ggml_sum(e.ctx, a));
    to_compute(&e, r, 1);
    const double want = 8194.0 * (double) 0.1f;
    cr_assert_eq(((const float *) r->data)[0], (float) want);
    to_end(&e);
}

/* ---- sum_rows and mean --------------------------------------------------------------------- */

static void run_rows(bool mean, enum ggml_type type, const int64_t ne[4], enum layout l, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, l, type, ne);
    tu_fill(a, &rng, -1.0f, 1.5f);
    struct ggml_tensor * r = mean ? ggml_mean(e.ctx, a) : ggml_sum_rows(e.ctx, a);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, mean ? GGML_OP_MEAN : GGML_OP_SUM_ROWS);
    cr_assert_eq(r->type, mean ? GGML_TYPE_F32 : type);
    cr_assert(r->ne[0] == 1 && r->ne[1] == ne[1] && r->ne[2] == ne[2] && r->ne[3] == ne[3]);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, j0, i1, i2, i3) {
        double s = 0.0;
        for (int64_t i0 = 0; i0 < ne[0]; i0++) {
            s += tu_get(a, i0, i1, i2, i3);
        }
        want[to_index(r, j0, i1, i2, i3)] = mean ? s / (double) ne[0] : s;
    }
    char what[96];
    snprintf(what, sizeof what, "%s %s [%lld,%lld,%lld,%lld] layout %d", mean ? "ggml_mean" : "ggml_sum_rows",
             ggml_type_name(type), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l);
    to_check(r, want, sum_tol(r->type), what);
    free(want);
    to_end(&e);
}

Test(sum_rows, every_type_size_and_layout) {
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < TU_N_SIZES; k++) {
            const int64_t ne[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 2 : 5, 3, 1 };
            run_rows(false, FTYPES[t], ne, CONTIG, TU_SIZES[k] == 4097 ? 4 : 1, (uint64_t) (t * 10 + k));
        }
        const int64_t ne[4] = { 33, 31, 2, 2 };
        run_rows(false, FTYPES[t], ne, TRANSPOSED, 1, (uint64_t) (100 + t));
        run_rows(false, FTYPES[t], ne, PERMUTED, 2, (uint64_t) (110 + t));
    }
}

Test(mean, sizes_and_layouts) {
    for (int k = 0; k < TU_N_SIZES; k++) {
        const int64_t ne[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 2 : 5, 1, 2 };
        run_rows(true, GGML_TYPE_F32, ne, CONTIG, TU_SIZES[k] == 4097 ? 3 : 1, (uint64_t) (200 + k));
    }
    const int64_t ne[4] = { 32, 33, 2, 1 };
    run_rows(true, GGML_TYPE_F32, ne, TRANSPOSED, 1, 210);
    run_rows(true, GGML_TYPE_F32, ne, PERMUTED, 1, 211);
}

/* ---- argmax -------------------------------------------------------------------------------- */

static void run_argmax(int64_t ne0, int64_t ne1, enum layout l, bool ties, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t ne[4] = { ne0, ne1, 1, 1 };
    struct ggml_tensor * a = make_tensor(&e, l, GGML_TYPE_F32, ne);
    if (ties) {
        /* few distinct values: the maximum appears several times and the first must win */
        TU_FOR_EACH(a, i0, i1, i2, i3) {
            tu_set(a, i0, i1, i2, i3, (double) (tu_next(&rng) % 4));
        }
    } else {
        tu_fill(a, &rng, -100.0f, 100.0f);
    }
    struct ggml_tensor * r = ggml_argmax(e.ctx, a);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_ARGMAX);
    cr_assert_eq(r->type, GGML_TYPE_I32);
    cr_assert_eq(r->ne[0], ne1);
    cr_assert_eq(ggml_nelements(r), ne1);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    for (int64_t i1 = 0; i1 < ne1; i1++) {
        int64_t best = 0;
        for (int64_t i0 = 1; i0 < ne0; i0++) {
            if (tu_get(a, i0, i1, 0, 0) > tu_get(a, best, i1, 0, 0)) {
                best = i0;
            }
        }
        cr_assert_eq(((const int32_t *) r->data)[i1], (int32_t) best, "row %lld of [%lld, %lld] layout %d",
                     (long long) i1, (long long) ne0, (long long) ne1, (int) l);
    }
    to_end(&e);
}

Test(argmax, sizes_layouts_and_ties) {
    for (int k = 0; k < TU_N_SIZES; k++) {
        const int64_t ne1 = TU_SIZES[k] >= 1023 ? 2 : 7;
        run_argmax(TU_SIZES[k], ne1, CONTIG, false, 1, (uint64_t) k);
        run_argmax(TU_SIZES[k], ne1, CONTIG, true, TU_SIZES[k] == 4097 ? 4 : 1, (uint64_t) (10 + k));
    }
    run_argmax(33, 31, TRANSPOSED, false, 1, 100);
    run_argmax(32, 4097, TRANSPOSED, true, 4, 101);
}

Test(argmax, nan_never_wins) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 4, 3, 1, 1);
    const float v[12] = { NAN, 1.0f, 3.0f, 2.0f,   -5.0f, NAN, -4.0f, -4.0f,   NAN, NAN, NAN, NAN };
    memcpy(a->data, v, sizeof v);
    struct ggml_tensor * r = to_alloc(&e, ggml_argmax(e.ctx, a));
    to_compute(&e, r, 1);
    const int32_t * got = (const int32_t *) r->data;
    cr_assert_eq(got[0], 2);
    cr_assert_eq(got[1], 2);
    cr_assert_eq(got[2], 0);
    to_end(&e);
}

/* ---- bad arguments ------------------------------------------------------------------------- */

typedef struct ggml_tensor * (*reduce_ctor)(struct ggml_context *, struct ggml_tensor *);

Test(reduce, rejects_bad_arguments) {
    const struct {
        const char * name;
        reduce_ctor  make;
        enum ggml_type bad_type;
    } ops[] = {
        { "ggml_sum",      ggml_sum,      GGML_TYPE_I32 },
        { "ggml_sum_rows", ggml_sum_rows, GGML_TYPE_Q8_0 },
        { "ggml_mean",     ggml_mean,     GGML_TYPE_F16 },
        { "ggml_argmax",   ggml_argmax,   GGML_TYPE_I32 },
    };
    for (int k = 0; k < 4; k++) {
        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, ops[k].make(ctx, NULL), ops[k].name);
        ggml_free(ctx);

        ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, ops[k].bad_type, 32, 3);
        to_expect_rejected(ctx, ops[k].make(ctx, a), ops[k].name);
        ggml_free(ctx);

        cr_assert_null(ops[k].make(NULL, NULL));
    }
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    to_expect_rejected(ctx, ggml_argmax(ctx, a), "ggml_argmax");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 0, 3);
    to_expect_rejected(ctx, ggml_argmax(ctx, a), "ggml_argmax");
    ggml_free(ctx);
}
