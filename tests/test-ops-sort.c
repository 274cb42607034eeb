/*
 * test-ops-sort.c -- ARGSORT and TOP_K: every row's indices against a reference order (stable:
 * equal values keep their index order; NaN is the largest value), odd sizes, non-contiguous
 * inputs, several threads, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

/* x goes before y (desc: larger first; NaN largest; ties by index) */
static bool ref_before(double x, int64_t ix, double y, int64_t iy, bool desc) {
    const bool nx = isnan(x), ny = isnan(y);
    if (nx || ny) {
        if (nx && ny) {
            return ix < iy;
        }
        return desc ? nx : ny;
    }
    if (x != y) {
        return desc ? x > y : x < y;
    }
    return ix < iy;
}

/* the row qsort compares in (qsort has no context argument; tests run one case at a time) */
static const double * g_row;
static bool           g_desc;

static int ref_cmp(const void * pa, const void * pb) {
    const int64_t ia = *(const int64_t *) pa, ib = *(const int64_t *) pb;
    if (ia == ib) {
        return 0;
    }
    return ref_before(g_row[ia], ia, g_row[ib], ib, g_desc) ? -1 : 1;
}

/* the reference order of row v[0..n) into idx: ties broken by index, so any sort is stable */
static void ref_order(const double * v, int64_t n, bool desc, int64_t * idx) {
    for (int64_t i = 0; i < n; i++) {
        idx[i] = i;
    }
    g_row  = v;
    g_desc = desc;
    qsort(idx, (size_t) n, sizeof *idx, ref_cmp);
}

enum fill { RANDOM, FEW_VALUES, WITH_NAN, SIGNED_ZEROS };

static void run_case(bool top_k, int k, enum ggml_sort_order order, const int64_t ne[4], int layout, enum fill f,
                     int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = layout == 1 ? to_new_transposed(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                           : layout == 2 ? to_new_permuted(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                                         : to_new(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        double v = tu_uniform(&rng, -10.0f, 10.0f);
        if (f == FEW_VALUES) {
            v = (double) (tu_next(&rng) % 3); /* many ties */
        } else if (f == WITH_NAN && tu_next(&rng) % 5 == 0) {
            v = NAN;
        } else if (f == SIGNED_ZEROS) {
            const double vals[4] = { -0.0, 0.0, 1.0, -1.0 }; /* -0 and +0 are equal: index order */
            v = vals[tu_next(&rng) % 4];
        }
        tu_set(a, i0, i1, i2, i3, v);
    }
    double * va = to_values(a);
    struct ggml_tensor * r = top_k ? ggml_top_k(e.ctx, a, k) : ggml_argsort(e.ctx, a, order);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, top_k ? GGML_OP_TOP_K : GGML_OP_ARGSORT);
    cr_assert_eq(r->type, GGML_TYPE_I32);
    cr_assert(r->ne[0] == (top_k ? k : ne[0]) && r->ne[1] == ne[1] && r->ne[2] == ne[2] && r->ne[3] == ne[3]);
    if (!top_k) {
        cr_assert_eq(ggmlx_get_op_params_i32(r, 0), (int32_t) order);
    }
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);

    const bool desc = top_k || order == GGML_SORT_ORDER_DESC;
    int64_t * idx = (int64_t *) malloc((size_t) ne[0] * sizeof(int64_t));
    const int64_t nrows = ne[1] * ne[2] * ne[3];
    for (int64_t row = 0; row < nrows; row++) {
        const int64_t i1 = row % ne[1], i2 = (row / ne[1]) % ne[2], i3 = row / (ne[1] * ne[2]);
        ref_order(va + row * ne[0], ne[0], desc, idx);
        for (int64_t i = 0; i < r->ne[0]; i++) {
            const int64_t got = (int64_t) tu_get(r, i, i1, i2, i3);
            cr_assert_eq(got, idx[i], "%s row %lld position %lld: index %lld, want %lld (size %lld, threads %d)",
                         top_k ? "top_k" : "argsort", (long long) row, (long long) i, (long long) got,
                         (long long) idx[i], (long long) ne[0], n_threads);
        }
    }
    free(idx);
    to_check(a, va, 0.0, "input must be unchanged");
    free(va);
    to_end(&e);
}

Test(argsort, ascending_and_descending_all_sizes) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] > 100 ? 2 : 5, 2, 1 };
        run_case(false, 0, GGML_SORT_ORDER_ASC, ne, 0, RANDOM, 1, (uint64_t) s);
        run_case(false, 0, GGML_SORT_ORDER_DESC, ne, 0, RANDOM, 2, (uint64_t) (10 + s));
    }
}

Test(argsort, ties_keep_index_order) {
    const int64_t ne[4] = { 1023, 3, 1, 1 };
    run_case(false, 0, GGML_SORT_ORDER_ASC, ne, 0, FEW_VALUES, 1, 20);
    run_case(false, 0, GGML_SORT_ORDER_DESC, ne, 0, FEW_VALUES, 3, 21);
}

Test(argsort, nan_sorts_as_largest) {
    const int64_t ne[4] = { 33, 4, 1, 1 };
    run_case(false, 0, GGML_SORT_ORDER_ASC, ne, 0, WITH_NAN, 1, 30);
    run_case(false, 0, GGML_SORT_ORDER_DESC, ne, 0, WITH_NAN, 1, 31);
}

Test(argsort, signed_zeros_are_ties) {
    const int64_t small[4] = { 33, 3, 1, 1 };
    const int64_t large[4] = { 1023, 2, 1, 1 };
    run_case(false, 0, GGML_SORT_ORDER_ASC, small, 0, SIGNED_ZEROS, 1, 35);
    run_case(false, 0, GGML_SORT_ORDER_DESC, large, 0, SIGNED_ZEROS, 2, 36);
    run_case(true, 40, GGML_SORT_ORDER_DESC, large, 0, SIGNED_ZEROS, 1, 37);
}

Test(argsort, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 2, 3 };
    run_case(false, 0, GGML_SORT_ORDER_ASC, ne, 1, RANDOM, 2, 40);
    run_case(false, 0, GGML_SORT_ORDER_DESC, ne, 2, RANDOM, 3, 41);
}

Test(top_k, largest_k_of_each_row) {
    const int ks[] = { 1, 2, 5, 32, 33, 100 };
    for (int s = 0; s < TU_N_SIZES; s++) {
        for (int j = 0; j < 6; j++) {
            if (ks[j] > TU_SIZES[s]) {
                continue;
            }
            const int64_t ne[4] = { TU_SIZES[s], 3, 2, 1 };
            run_case(true, ks[j], GGML_SORT_ORDER_DESC, ne, 0, RANDOM, j % 3 + 1, (uint64_t) (100 + s * 10 + j));
        }
    }
}

Test(top_k, whole_row_ties_and_nan) {
    const int64_t ne[4] = { 31, 4, 1, 1 };
    run_case(true, 31, GGML_SORT_ORDER_DESC, ne, 0, RANDOM, 1, 200);
    run_case(true, 4, GGML_SORT_ORDER_DESC, ne, 0, FEW_VALUES, 1, 201);
    run_case(true, 40 > 31 ? 31 : 40, GGML_SORT_ORDER_DESC, ne, 0, FEW_VALUES, 2, 202);
    run_case(true, 3, GGML_SORT_ORDER_DESC, ne, 0, WITH_NAN, 1, 203);
}

Test(top_k, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 2, 3 };
    run_case(true, 4, GGML_SORT_ORDER_DESC, ne, 1, RANDOM, 2, 300);
    run_case(true, 33, GGML_SORT_ORDER_DESC, ne, 2, RANDOM, 3, 301);
}

Test(argsort, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_argsort(ctx, NULL, GGML_SORT_ORDER_ASC), "ggml_argsort");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 2);
    to_expect_rejected(ctx, ggml_argsort(ctx, a, GGML_SORT_ORDER_ASC), "ggml_argsort");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    to_expect_rejected(ctx, ggml_argsort(ctx, a, (enum ggml_sort_order) 2), "ggml_argsort");
    ggml_free(ctx);
}

Test(top_k, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_top_k(ctx, NULL, 1), "ggml_top_k");
    ggml_free(ctx);
    const int bad_k[] = { 0, -1, 5 };
    for (int i = 0; i < 3; i++) {
        ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
        to_expect_rejected(ctx, ggml_top_k(ctx, a, bad_k[i]), "ggml_top_k");
        ggml_free(ctx);
    }
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 2);
    to_expect_rejected(ctx, ggml_top_k(ctx, a, 2), "ggml_top_k");
    ggml_free(ctx);
}
