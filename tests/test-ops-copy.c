/*
 * test-ops-copy.c -- DUP, CPY, CONT and casts between F32, F16, BF16 and I32 (contiguous,
 * transposed and permuted sources and destinations, reshaping copies, quantized byte copies),
 * GET_ROWS and SET_ROWS (including out-of-range indices: the compute fails and nothing is written).
 */
#include "test-ops-common.h"

static const enum ggml_type CTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
#define N_CTYPES 4

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_tensor(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* random values that every type can hold meaningfully (integers for I32 sources) */
static void fill_for(struct ggml_tensor * t, struct tu_rng * rng) {
    if (t->type == GGML_TYPE_I32) {
        TU_FOR_EACH(t, i0, i1, i2, i3) {
            tu_set(t, i0, i1, i2, i3, (double) ((int64_t) (tu_next(rng) % 4001) - 2000));
        }
    } else {
        tu_fill(t, rng, -300.0f, 300.0f);
    }
}

/* v converted to type the way a copy must do it: round to nearest even, or truncate to I32 */
static double converted(double v, enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F16:  return ggmlx_fp16_to_fp32(ggmlx_fp32_to_fp16((float) v));
    case GGML_TYPE_BF16: return ggmlx_bf16_to_fp32(ggmlx_fp32_to_bf16((float) v));
    case GGML_TYPE_I32:  return trunc(v);
    default:             return (float) v;
    }
}

/* which: 0 ggml_cpy into a fresh tensor of td (layout ld), 1 ggml_cast, 2 ggml_cont, 3 ggml_dup */
static void run_copy(enum ggml_type ts, enum ggml_type td, const int64_t ne[4], enum layout ls, enum layout ld,
                     int which, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * src = make_tensor(&e, ls, ts, ne);
    fill_for(src, &rng);
    double * vs = to_values(src);

    struct ggml_tensor * r = NULL;
    struct ggml_tensor * dst = NULL;
    switch (which) {
    case 0:
        dst = make_tensor(&e, ld, td, ne);
        r = ggml_cpy(e.ctx, src, dst);
        cr_assert_not_null(r, "%s", ggmlx_last_error());
        cr_assert_eq(r->data, dst->data, "ggml_cpy must return a view of its destination");
        break;
    case 1:
        r = to_alloc(&e, ggml_cast(e.ctx, src, td));
        break;
    case 2:
        r = to_alloc(&e, ggml_cont(e.ctx, src));
        break;
    default:
        r = to_alloc(&e, ggml_dup(e.ctx, src));
        break;
    }
    to_compute(&e, r, n_threads);
    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = converted(vs[i], r->type);
    }
    char what[128];
    snprintf(what, sizeof what, "copy kind %d %s -> %s [%lld,%lld,%lld,%lld] layouts %d -> %d threads %d", which,
             ggml_type_name(ts), ggml_type_name(r->type), (long long) ne[0], (long long) ne[1], (long long) ne[2],
             (long long) ne[3], (int) ls, (int) ld, n_threads);
    to_check(r, want, 0.0, what);
    to_check(src, vs, 0.0, "source must be unchanged");
    free(want);
    free(vs);
    to_end(&e);
}

Test(copy, cpy_every_type_pair) {
    const int64_t ne[4] = { 33, 3, 2, 1 };
    for (int s = 0; s < N_CTYPES; s++) {
        for (int d = 0; d < N_CTYPES; d++) {
            run_copy(CTYPES[s], CTYPES[d], ne, CONTIG, CONTIG, 0, 1, (uint64_t) (s * 10 + d));
        }
    }
}

Test(copy, cpy_all_sizes) {
    for (int k = 0; k < TU_N_SIZES; k++) {
        const int64_t ne[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 2 : 3, 1, 1 };
        run_copy(GGML_TYPE_F32, GGML_TYPE_F16, ne, CONTIG, CONTIG, 0, 1, (uint64_t) (100 + k));
        run_copy(GGML_TYPE_BF16, GGML_TYPE_F32, ne, TRANSPOSED, CONTIG, 0, 1, (uint64_t) (110 + k));
        run_copy(GGML_TYPE_F16, GGML_TYPE_F16, ne, CONTIG, TRANSPOSED, 0, 1, (uint64_t) (120 + k));
    }
}

Test(copy, permuted_sources_and_destinations) {
    const int64_t ne[4] = { 31, 32, 3, 2 };
    for (int s = 0; s < N_CTYPES; s++) {
        for (int d = 0; d < N_CTYPES; d++) {
            run_copy(CTYPES[s], CTYPES[d], ne, PERMUTED, CONTIG, 0, 1, (uint64_t) (200 + s * 10 + d));
            run_copy(CTYPES[s], CTYPES[d], ne, TRANSPOSED, PERMUTED, 0, 1, (uint64_t) (300 + s * 10 + d));
        }
    }
}

Test(copy, cast_cont_dup) {
    const int64_t ne[4] = { 33, 31, 2, 1 };
    for (int s = 0; s < N_CTYPES; s++) {
        for (int d = 0; d < N_CTYPES; d++) {
            run_copy(CTYPES[s], CTYPES[d], ne, PERMUTED, CONTIG, 1, 1, (uint64_t) (400 + s * 10 + d));
        }
        run_copy(CTYPES[s], CTYPES[s], ne, TRANSPOSED, CONTIG, 2, 1, (uint64_t) (500 + s));
        run_copy(CTYPES[s], CTYPES[s], ne, PERMUTED, CONTIG, 3, 1, (uint64_t) (510 + s));
        run_copy(CTYPES[s], CTYPES[s], ne, CONTIG, CONTIG, 2, 1, (uint64_t) (520 + s));
    }
}

Test(copy, dup_inplace_keeps_values) {
    const int64_t ne[4] = { 33, 31, 2, 1 };
    for (int t = 0; t < N_CTYPES; t++) {
        struct to_env e;
        to_begin(&e);
        struct tu_rng rng = tu_rng_new((uint64_t) (550 + t));
        struct ggml_tensor * src = make_tensor(&e, t % 2 ? PERMUTED : CONTIG, CTYPES[t], ne);
        fill_for(src, &rng);
        double * vs = to_values(src);
        struct ggml_tensor * r = ggml_dup_inplace(e.ctx, src);
        cr_assert_not_null(r, "%s", ggmlx_last_error());
        cr_assert_eq(r->data, src->data);
        to_compute(&e, r, 2);
        to_check(r, vs, 0.0, "ggml_dup_inplace");
        free(vs);
        to_end(&e);
    }
}

Test(copy, multithreaded_large) {
    const int64_t ne[4] = { 4097, 2, 1, 1 };
    run_copy(GGML_TYPE_F32, GGML_TYPE_BF16, ne, CONTIG, CONTIG, 0, 4, 600);
    run_copy(GGML_TYPE_F16, GGML_TYPE_F16, ne, CONTIG, CONTIG, 2, 3, 601);
    run_copy(GGML_TYPE_F32, GGML_TYPE_F32, ne, TRANSPOSED, CONTIG, 2, 4, 602);
    const int64_t ne2[4] = { 1023, 5, 1, 1 };
    run_copy(GGML_TYPE_I32, GGML_TYPE_F32, ne2, PERMUTED, TRANSPOSED, 0, 4, 603);
}

/* copies between different shapes keep the row-major logical order */
static void run_reshaping_copy(enum ggml_type ts, enum ggml_type td, const int64_t ne_s[4], const int64_t ne_d[4],
                               enum layout ls, enum layout ld, bool via_cont, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * src = make_tensor(&e, ls, ts, ne_s);
    fill_for(src, &rng);
    double * vs = to_values(src);
    struct ggml_tensor * r;
    if (via_cont) {
        r = to_alloc(&e, ggml_cont_4d(e.ctx, src, ne_d[0], ne_d[1], ne_d[2], ne_d[3]));
    } else {
        struct ggml_tensor * dst = make_tensor(&e, ld, td, ne_d);
        r = ggml_cpy(e.ctx, src, dst);
    }
    to_compute(&e, r, n_threads);
    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = converted(vs[i], r->type);
    }
    to_check(r, want, 0.0, via_cont ? "ggml_cont_4d into a new shape" : "ggml_cpy into a new shape");
    free(want);
    free(vs);
    to_end(&e);
}

Test(copy, between_different_shapes) {
    const int64_t s1[4] = { 6, 4, 3, 1 }, d1[4] = { 8, 9, 1, 1 };
    const int64_t s2[4] = { 33, 5, 2, 1 }, d2[4] = { 10, 33, 1, 1 };
    const int64_t s3[4] = { 1, 31, 1, 1 }, d3[4] = { 31, 1, 1, 1 };
    const int64_t s4[4] = { 4097, 2, 1, 1 }, d4[4] = { 2, 4097, 1, 1 };
    const int64_t d5[4] = { 5, 66, 1, 1 };
    for (int t = 0; t < N_CTYPES; t++) {
        run_reshaping_copy(CTYPES[t], GGML_TYPE_F32, s1, d1, PERMUTED, CONTIG, false, 1, (uint64_t) (700 + t));
        run_reshaping_copy(GGML_TYPE_F32, CTYPES[t], s2, d2, TRANSPOSED, TRANSPOSED, false, 1, (uint64_t) (710 + t));
        run_reshaping_copy(CTYPES[t], CTYPES[t], s2, d5, PERMUTED, CONTIG, true, 1, (uint64_t) (720 + t));
        run_reshaping_copy(CTYPES[t], CTYPES[t], s3, d3, TRANSPOSED, CONTIG, true, 1, (uint64_t) (730 + t));
    }
    run_reshaping_copy(GGML_TYPE_F32, GGML_TYPE_F16, s4, d4, CONTIG, CONTIG, false, 4, 740);
    run_reshaping_copy(GGML_TYPE_F16, GGML_TYPE_F16, s4, d4, TRANSPOSED, CONTIG, true, 4, 741);
}

Test(copy, float_to_i32_truncates_and_saturates) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * src = to_new(&e, GGML_TYPE_F32, 8, 1, 1, 1);
    const float in[8] = { 1.9f, -1.9f, 0.5f, -0.5f, 3e9f, -3e9f, NAN, 2147483520.0f };
    const int32_t want[8] = { 1, -1, 0, 0, INT32_MAX, INT32_MIN, 0, 2147483520 };
    memcpy(src->data, in, sizeof in);
    struct ggml_tensor * dst = to_new(&e, GGML_TYPE_I32, 8, 1, 1, 1);
    to_compute(&e, ggml_cpy(e.ctx, src, dst), 1);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(((const int32_t *) dst->data)[i], want[i], "element %d", i);
    }
    to_end(&e);
}

/* a quantized copy moves whole blocks: bytes must match row for row */
Test(copy, quantized_same_type_copies_bytes) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(800);
    struct ggml_tensor * src = to_new(&e, GGML_TYPE_Q8_0, 64, 3, 2, 1);
    unsigned char * ps = (unsigned char *) src->data;
    for (size_t i = 0; i < ggml_nbytes(src); i++) {
        ps[i] = (unsigned char) tu_next(&rng);
    }
    /* contiguous destination */
    struct ggml_tensor * d1 = to_new(&e, GGML_TYPE_Q8_0, 64, 3, 2, 1);
    /* rows spaced out: a view with a larger row stride into a bigger tensor */
    struct ggml_tensor * big = to_new(&e, GGML_TYPE_Q8_0, 128, 6, 1, 1);
    memset(big->data, 0x5a, ggml_nbytes(big));
    const size_t row = ggml_row_size(GGML_TYPE_Q8_0, 64);
    struct ggml_tensor * d2 = ggml_view_3d(e.ctx, big, 64, 3, 2, big->nb[1], 3 * big->nb[1], 0);
    cr_assert_not_null(d2, "%s", ggmlx_last_error());
    struct ggml_tensor * c1 = ggml_cpy(e.ctx, src, d1);
    struct ggml_tensor * c2 = ggml_cpy(e.ctx, src, d2);
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    ggml_build_forward_expand(gf, c1);
    ggml_build_forward_expand(gf, c2);
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 2), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    cr_assert_eq(memcmp(d1->data, src->data, ggml_nbytes(src)), 0);
    for (int64_t i2 = 0; i2 < 2; i2++) {
        for (int64_t i1 = 0; i1 < 3; i1++) {
            const unsigned char * want = ps + i2 * src->nb[2] + i1 * src->nb[1];
            const unsigned char * got  = (const unsigned char *) big->data + i2 * 3 * big->nb[1] + i1 * big->nb[1];
            cr_assert_eq(memcmp(got, want, row), 0, "row %lld, %lld", (long long) i1, (long long) i2);
            /* the second half of each big row is outside the view and keeps its pattern */
            for (size_t k = row; k < big->nb[1]; k++) {
                cr_assert_eq(got[k], 0x5a);
            }
        }
    }
    to_end(&e);
}

/* ---- get_rows ------------------------------------------------------------------------------ */

static void run_get_rows(enum ggml_type ta, const int64_t ne_a[4], int64_t n, enum layout la, bool idx_transposed,
                         int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, la, ta, ne_a);
    fill_for(a, &rng);
    const int64_t ne_b[4] = { n, ne_a[2], ne_a[3], 1 };
    struct ggml_tensor * b = make_tensor(&e, idx_transposed ? TRANSPOSED : CONTIG, GGML_TYPE_I32, ne_b);
    TU_FOR_EACH(b, i0, i1, i2, i3) {
        tu_set(b, i0, i1, i2, i3, (double) (tu_next(&rng) % (uint64_t) ne_a[1]));
    }
    struct ggml_tensor * r = ggml_get_rows(e.ctx, a, b);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_GET_ROWS);
    cr_assert_eq(r->type, ta == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32);
    cr_assert(r->ne[0] == ne_a[0] && r->ne[1] == n && r->ne[2] == ne_a[2] && r->ne[3] == ne_a[3]);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const int64_t row = (int64_t) tu_get(b, i1, i2, i3, 0);
        want[to_index(r, i0, i1, i2, i3)] = tu_get(a, i0, row, i2, i3);
    }
    char what[96];
    snprintf(what, sizeof what, "ggml_get_rows %s n_embd %lld n %lld layout %d", ggml_type_name(ta),
             (long long) ne_a[0], (long long) n, (int) la);
    to_check(r, want, 0.0, what);
    free(want);
    to_end(&e);
}

Test(get_rows, every_type_and_size) {
    for (int t = 0; t < N_CTYPES; t++) {
        for (int k = 0; k < TU_N_SIZES; k++) {
            const int64_t ne_a[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 3 : 7, 1, 1 };
            run_get_rows(CTYPES[t], ne_a, TU_SIZES[k] >= 1023 ? 2 : 5, CONTIG, false, 1, (uint64_t) (t * 10 + k));
        }
    }
}

Test(get_rows, batched_and_permuted) {
    const int64_t ne_a[4] = { 33, 10, 3, 2 };
    for (int t = 0; t < N_CTYPES; t++) {
        run_get_rows(CTYPES[t], ne_a, 4, CONTIG, false, 1, (uint64_t) (100 + t));
        run_get_rows(CTYPES[t], ne_a, 31, TRANSPOSED, true, 1, (uint64_t) (110 + t));
        run_get_rows(CTYPES[t], ne_a, 5, PERMUTED, false, 2, (uint64_t) (120 + t));
    }
    const int64_t big[4] = { 4097, 4, 1, 1 };
    run_get_rows(GGML_TYPE_F16, big, 3, CONTIG, false, 4, 130);
}

/* an out-of-range index fails the compute and leaves dst exactly as it was */
static void run_get_rows_bad_index(int32_t bad, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(140);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 4097, 5, 1, 1);
    tu_fill(a, &rng, -1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_I32, 3, 1, 1, 1);
    const int32_t idx[3] = { 1, 4, bad };
    memcpy(b->data, idx, sizeof idx);
    struct ggml_tensor * r = to_alloc(&e, ggml_get_rows(e.ctx, a, b));
    memset(r->data, 0x7e, ggml_nbytes(r));
    cr_assert_eq(tu_compute(e.ctx, r, n_threads), GGML_STATUS_FAILED);
    for (size_t i = 0; i < ggml_nbytes(r); i++) {
        cr_assert_eq(((const unsigned char *) r->data)[i], 0x7e, "dst byte %zu written despite a bad index", i);
    }
    to_end(&e);
}

Test(get_rows, out_of_range_index_fails_without_writing) {
    run_get_rows_bad_index(5, 1);
    run_get_rows_bad_index(-1, 1);
    run_get_rows_bad_index(1 << 30, 4);
}

Test(get_rows, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    to_expect_rejected(ctx, ggml_get_rows(ctx, NULL, b), "ggml_get_rows");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_get_rows(ctx, a, NULL), "ggml_get_rows");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    to_expect_rejected(ctx, ggml_get_rows(ctx, a, b), "ggml_get_rows");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    b = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 2, 3);
    to_expect_rejected(ctx, ggml_get_rows(ctx, a, b), "ggml_get_rows");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I64, 32, 3);
    b = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    to_expect_rejected(ctx, ggml_get_rows(ctx, a, b), "ggml_get_rows");
    ggml_free(ctx);
}

/* ---- set_rows ------------------------------------------------------------------------------ */

/*
 * a [ne0, ne1, ne2, ne3] receives b [ne0, n, ne2, ne3] at indices c [n, c1, c2]; the indices of
 * each (i2, i3) group are distinct, so no two rows land on the same destination row.
 */
static void run_set_rows(enum ggml_type ta, enum ggml_type tc, const int64_t ne_a[4], int64_t n, int64_t c1, int64_t c2,
                         enum layout lb, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = to_new(&e, ta, ne_a[0], ne_a[1], ne_a[2], ne_a[3]);
    tu_fill(a, &rng, -5, 5);
    const int64_t ne_b[4] = { ne_a[0], n, ne_a[2], ne_a[3] };
    struct ggml_tensor * b = make_tensor(&e, lb, GGML_TYPE_F32, ne_b);
    tu_fill(b, &rng, -5, 5);
    struct ggml_tensor * c = to_new(&e, tc, n, c1, c2, 1);
    int64_t * perm = (int64_t *) malloc((size_t) ne_a[1] * sizeof(int64_t));
    for (int64_t j2 = 0; j2 < c2; j2++) {
        for (int64_t j1 = 0; j1 < c1; j1++) {
            for (int64_t k = 0; k < ne_a[1]; k++) {
                perm[k] = k;
            }
            for (int64_t k = ne_a[1] - 1; k > 0; k--) { /* Fisher-Yates */
                const int64_t m = (int64_t) (tu_next(&rng) % (uint64_t) (k + 1));
                const int64_t tmp = perm[k];
                perm[k] = perm[m];
                perm[m] = tmp;
            }
            for (int64_t i = 0; i < n; i++) {
                tu_set(c, i, j1, j2, 0, (double) perm[i]);
            }
        }
    }
    free(perm);
    double * va = to_values(a);

    struct ggml_tensor * r = ggml_set_rows(e.ctx, a, b, c);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_SET_ROWS);
    cr_assert_eq(r->view_src, a, "the result must be a view of a");
    cr_assert(r->src[0] == b && r->src[1] == c && r->src[2] == a, "sources must be (b, c, a) as upstream");
    to_compute(&e, r, n_threads);

    double * want = va; /* a's old values, overwritten where rows land */
    TU_FOR_EACH(b, i0, i, i2, i3) {
        const int64_t row = (int64_t) tu_get(c, i, i2 % c1, i3 % c2, 0);
        want[to_index(a, i0, row, i2, i3)] = converted(tu_get(b, i0, i, i2, i3), ta);
    }
    char what[96];
    snprintf(what, sizeof what, "ggml_set_rows %s idx %s n_embd %lld n %lld", ggml_type_name(ta), ggml_type_name(tc),
             (long long) ne_a[0], (long long) n);
    to_check(a, want, 0.0, what);
    free(va);
    to_end(&e);
}

Test(set_rows, every_type_and_size) {
    const enum ggml_type dtypes[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < TU_N_SIZES; k++) {
            const int64_t ne_a[4] = { TU_SIZES[k], TU_SIZES[k] >= 1023 ? 3 : 8, 1, 1 };
            const int64_t n = TU_SIZES[k] >= 1023 ? 2 : 5;
            run_set_rows(dtypes[t], k % 2 ? GGML_TYPE_I32 : GGML_TYPE_I64, ne_a, n, 1, 1, CONTIG,
                         TU_SIZES[k] == 4097 ? 4 : 1, (uint64_t) (t * 10 + k));
        }
    }
}

Test(set_rows, broadcast_indices_and_strided_source) {
    const int64_t ne_a[4] = { 33, 9, 4, 2 };
    run_set_rows(GGML_TYPE_F32, GGML_TYPE_I64, ne_a, 5, 4, 2, CONTIG, 1, 100);
    run_set_rows(GGML_TYPE_F16, GGML_TYPE_I64, ne_a, 5, 2, 1, TRANSPOSED, 1, 101);
    run_set_rows(GGML_TYPE_BF16, GGML_TYPE_I32, ne_a, 9, 1, 2, PERMUTED, 2, 102);
    run_set_rows(GGML_TYPE_F32, GGML_TYPE_I32, ne_a, 3, 1, 1, TRANSPOSED, 3, 103);
}

static void run_set_rows_bad_index(enum ggml_type tc, int64_t bad, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(200);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, 4097, 4, 1, 1);
    tu_fill(a, &rng, -1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 4097, 3, 1, 1);
    tu_fill(b, &rng, -1, 1);
    struct ggml_tensor * c = to_new(&e, tc, 3, 1, 1, 1);
    /* valid indices first: none of them may be written either */
    tu_set(c, 0, 0, 0, 0, 0);
    tu_set(c, 1, 0, 0, 0, 2);
    tu_set(c, 2, 0, 0, 0, (double) bad);
    unsigned char * before = (unsigned char *) malloc(ggml_nbytes(a));
    memcpy(before, a->data, ggml_nbytes(a));
    struct ggml_tensor * r = ggml_set_rows(e.ctx, a, b, c);
    cr_assert_not_null(r);
    cr_assert_eq(tu_compute(e.ctx, r, n_threads), GGML_STATUS_FAILED);
    cr_assert_eq(memcmp(before, a->data, ggml_nbytes(a)), 0, "destination written despite a bad index");
    free(before);
    to_end(&e);
}

Test(set_rows, out_of_range_index_fails_without_writing) {
    run_set_rows_bad_index(GGML_TYPE_I64, 4, 1);
    run_set_rows_bad_index(GGML_TYPE_I64, -1, 4);
    run_set_rows_bad_index(GGML_TYPE_I64, (int64_t) 1 << 40, 2);
    run_set_rows_bad_index(GGML_TYPE_I32, 4, 4);
    run_set_rows_bad_index(GGML_TYPE_I32, -7, 1);
}

Test(set_rows, rejects_bad_arguments) {
    struct {
        enum ggml_type ta, tb, tc;
        int64_t a[4], b[4], c[4];
    } cases[] = {
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_F32, { 4, 5, 1, 1 }, { 4, 2, 1, 1 }, { 2, 1, 1, 1 } },  /* F32 idx */
        { GGML_TYPE_F32, GGML_TYPE_BF16, GGML_TYPE_I64, { 4, 5, 1, 1 }, { 4, 2, 1, 1 }, { 2, 1, 1, 1 } }, /* BF16 src */
        { GGML_TYPE_I32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 1, 1 }, { 4, 2, 1, 1 }, { 2, 1, 1, 1 } },  /* I32 dst */
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 1, 1 }, { 3, 2, 1, 1 }, { 2, 1, 1, 1 } },  /* ne0 */
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 2, 1 }, { 4, 2, 1, 1 }, { 2, 1, 1, 1 } },  /* ne2 */
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 1, 1 }, { 4, 2, 1, 1 }, { 3, 1, 1, 1 } },  /* n idx */
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 3, 1 }, { 4, 2, 3, 1 }, { 2, 2, 1, 1 } },  /* bcast */
        { GGML_TYPE_F32, GGML_TYPE_F32, GGML_TYPE_I64, { 4, 5, 1, 1 }, { 4, 2, 1, 1 }, { 2, 1, 1, 2 } },  /* c ne3 */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor(ctx, cases[k].ta, 4, cases[k].a);
        struct ggml_tensor * b = ggml_new_tensor(ctx, cases[k].tb, 4, cases[k].b);
        struct ggml_tensor * c = ggml_new_tensor(ctx, cases[k].tc, 4, cases[k].c);
        cr_assert(a && b && c);
        to_expect_rejected(ctx, ggml_set_rows(ctx, a, b, c), "ggml_set_rows");
        ggml_free(ctx);
    }
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    to_expect_rejected(ctx, ggml_set_rows(ctx, a, b, NULL), "ggml_set_rows");
    ggml_free(ctx);
}
