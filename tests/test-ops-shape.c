/*
 * test-ops-shape.c -- REPEAT (ggml_repeat, ggml_repeat_4d) and CONCAT over every dim: element
 * types, contiguous and permuted inputs, sizes, threads, quantized rows, and bad arguments.
 */
#include "test-ops-common.h"

static const enum ggml_type RTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
#define N_RTYPES 4

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_tensor(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

static void fill_any(struct ggml_tensor * t, struct tu_rng * rng) {
    if (t->type == GGML_TYPE_I32) {
        TU_FOR_EACH(t, i0, i1, i2, i3) {
            tu_set(t, i0, i1, i2, i3, (double) ((int64_t) (tu_next(rng) % 2001) - 1000));
        }
    } else {
        tu_fill(t, rng, -10, 10);
    }
}

/* ---- repeat -------------------------------------------------------------------------------- */

static void run_repeat(enum ggml_type type, const int64_t ne_a[4], const int64_t ne[4], enum layout l, bool by_4d,
                       int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, l, type, ne_a);
    fill_any(a, &rng);
    struct ggml_tensor * r;
    if (by_4d) {
        r = ggml_repeat_4d(e.ctx, a, ne[0], ne[1], ne[2], ne[3]);
    } else {
        /* the shape donor needs no data */
        struct ggml_tensor * shape = ggml_new_tensor_4d(e.ctx, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
        r = ggml_repeat(e.ctx, a, shape);
    }
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_REPEAT);
    cr_assert_eq(r->type, type);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne[d]);
    }
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        want[to_index(r, i0, i1, i2, i3)] = tu_get(a, i0 % ne_a[0], i1 % ne_a[1], i2 % ne_a[2], i3 % ne_a[3]);
    }
    char what[128];
    snprintf(what, sizeof what, "repeat %s [%lld,%lld,%lld,%lld] -> [%lld,%lld,%lld,%lld] layout %d", ggml_type_name(type),
             (long long) ne_a[0], (long long) ne_a[1], (long long) ne_a[2], (long long) ne_a[3], (long long) ne[0],
             (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l);
    to_check(r, want, 0.0, what);
    free(want);
    to_end(&e);
}

Test(repeat, every_type_and_size) {
    for (int t = 0; t < N_RTYPES; t++) {
        for (int k = 0; k < TU_N_SIZES; k++) {
            const int64_t s = TU_SIZES[k];
            const int64_t ne_a[4] = { s, 1, 1, 1 };
            const int64_t ne[4] = { s, s >= 1023 ? 2 : 3, 2, 1 };
            run_repeat(RTYPES[t], ne_a, ne, CONTIG, k % 2 == 0, s == 4097 ? 4 : 1, (uint64_t) (t * 10 + k));
            const int64_t ne_b[4] = { 1, s >= 1023 ? 2 : 3, 1, 1 };
            const int64_t ne2[4] = { s, s >= 1023 ? 2 : 3, 1, 1 };
            run_repeat(RTYPES[t], ne_b, ne2, CONTIG, k % 2 == 1, 1, (uint64_t) (t * 10 + k + 100));
        }
    }
}

Test(repeat, tiles_every_dim_from_permuted_source) {
    const int64_t ne_a[4] = { 3, 5, 2, 1 };
    const int64_t ne[4] = { 9, 10, 4, 3 };
    for (int t = 0; t < N_RTYPES; t++) {
        run_repeat(RTYPES[t], ne_a, ne, CONTIG, false, 1, (uint64_t) (200 + t));
        run_repeat(RTYPES[t], ne_a, ne, TRANSPOSED, true, 2, (uint64_t) (210 + t));
        run_repeat(RTYPES[t], ne_a, ne, PERMUTED, false, 1, (uint64_t) (220 + t));
    }
    const int64_t ne_a4[4] = { 2, 3, 2, 2 };
    const int64_t ne4[4] = { 4, 3, 6, 4 };
    run_repeat(GGML_TYPE_F16, ne_a4, ne4, PERMUTED, true, 1, 225);
    const int64_t same[4] = { 3, 5, 2, 1 };
    run_repeat(GGML_TYPE_F32, ne_a, same, PERMUTED, true, 1, 230);
}

Test(repeat, empty_source_to_empty_result) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 0, 3);
    struct ggml_tensor * r = ggml_repeat_4d(ctx, a, 0, 6, 1, 1);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_nelements(r), 0);
    ggml_free(ctx);
}

Test(repeat, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_repeat(ctx, a, NULL), "ggml_repeat");
    ggml_free(ctx);

    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_repeat_4d(ctx, NULL, 4, 3, 1, 1), "ggml_repeat_4d");
    ggml_free(ctx);

    const int64_t bad[][4] = { { 6, 3, 1, 1 }, { 4, 4, 1, 1 }, { 2, 3, 1, 1 }, { 4, 3, -1, 1 } };
    for (int k = 0; k < 4; k++) {
        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
        to_expect_rejected(ctx, ggml_repeat_4d(ctx, a, bad[k][0], bad[k][1], bad[k][2], bad[k][3]), "ggml_repeat_4d");
        ggml_free(ctx);
    }

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 3);
    to_expect_rejected(ctx, ggml_repeat(ctx, a, b), "ggml_repeat");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 32, 3);
    to_expect_rejected(ctx, ggml_repeat_4d(ctx, a, 32, 6, 1, 1), "ggml_repeat_4d");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 0, 3);
    to_expect_rejected(ctx, ggml_repeat_4d(ctx, a, 4, 3, 1, 1), "ggml_repeat_4d");
    ggml_free(ctx);
}

/* ---- concat -------------------------------------------------------------------------------- */

static void run_concat(enum ggml_type type, const int64_t ne_a[4], int64_t nb_dim, int dim, enum layout la,
                       enum layout lb, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    int64_t ne_b[4];
    memcpy(ne_b, ne_a, sizeof ne_b);
    ne_b[dim] = nb_dim;
    struct ggml_tensor * a = make_tensor(&e, la, type, ne_a);
    struct ggml_tensor * b = make_tensor(&e, lb, type, ne_b);
    fill_any(a, &rng);
    fill_any(b, &rng);
    struct ggml_tensor * r = ggml_concat(e.ctx, a, b, dim);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_CONCAT);
    cr_assert_eq(r->op_params[0], dim);
    cr_assert_eq(r->ne[dim], ne_a[dim] + nb_dim);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        int64_t i[4] = { i0, i1, i2, i3 };
        double v;
        if (i[dim] < ne_a[dim]) {
            v = tu_get(a, i[0], i[1], i[2], i[3]);
        } else {
            i[dim] -= ne_a[dim];
            v = tu_get(b, i[0], i[1], i[2], i[3]);
        }
        want[to_index(r, i0, i1, i2, i3)] = v;
    }
    char what[96];
    snprintf(what, sizeof what, "concat %s dim %d layouts %d/%d", ggml_type_name(type), dim, (int) la, (int) lb);
    to_check(r, want, 0.0, what);
    free(want);
    to_end(&e);
}

Test(concat, every_dim_and_type) {
    const int64_t ne_a[4] = { 5, 4, 3, 2 };
    for (int t = 0; t < N_RTYPES; t++) {
        for (int dim = 0; dim < 4; dim++) {
            run_concat(RTYPES[t], ne_a, 3, dim, CONTIG, CONTIG, 1, (uint64_t) (t * 10 + dim));
            run_concat(RTYPES[t], ne_a, 1, dim, TRANSPOSED, PERMUTED, 1, (uint64_t) (t * 10 + dim + 100));
        }
    }
}

Test(concat, all_sizes) {
    for (int k = 0; k < TU_N_SIZES; k++) {
        const int64_t s = TU_SIZES[k];
        const int64_t ne_a[4] = { s, s >= 1023 ? 1 : 3, 1, 1 };
        run_concat(GGML_TYPE_F32, ne_a, s, 0, CONTIG, CONTIG, s >= 1023 ? 4 : 1, (uint64_t) (200 + k));
        run_concat(GGML_TYPE_F16, ne_a, 2, 1, CONTIG, TRANSPOSED, s >= 1023 ? 3 : 1, (uint64_t) (210 + k));
    }
}

Test(concat, quantized_rows) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(300);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_Q8_0, 64, 2, 1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_Q8_0, 32, 2, 1, 1);
    struct ggml_tensor * c = to_new(&e, GGML_TYPE_Q8_0, 64, 3, 1, 1);
    unsigned char * bytes[3] = { a->data, b->data, c->data };
    struct ggml_tensor * ts[3] = { a, b, c };
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; i < ggml_nbytes(ts[k]); i++) {
            bytes[k][i] = (unsigned char) tu_next(&rng);
        }
    }
    struct ggml_tensor * r0 = to_alloc(&e, ggml_concat(e.ctx, a, b, 0));
    struct ggml_tensor * r1 = to_alloc(&e, ggml_concat(e.ctx, a, c, 1));
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    ggml_build_forward_expand(gf, r0);
    ggml_build_forward_expand(gf, r1);
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 1), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    const size_t ra = ggml_row_size(GGML_TYPE_Q8_0, 64), rb = ggml_row_size(GGML_TYPE_Q8_0, 32);
    for (int64_t i1 = 0; i1 < 2; i1++) {
        const unsigned char * got = (const unsigned char *) r0->data + i1 * r0->nb[1];
        cr_assert_eq(memcmp(got, bytes[0] + i1 * a->nb[1], ra), 0);
        cr_assert_eq(memcmp(got + ra, bytes[1] + i1 * b->nb[1], rb), 0);
    }
    cr_assert_eq(memcmp(r1->data, a->data, ggml_nbytes(a)), 0);
    cr_assert_eq(memcmp((const char *) r1->data + ggml_nbytes(a), c->data, ggml_nbytes(c)), 0);
    to_end(&e);
}

Test(concat, rejects_a_result_past_int64_elements) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, (int64_t) 1 << 62);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, INT64_MAX - 2);
    /* 2^62 + (INT64_MAX - 2) overflowed int64 (undefined behaviour) */
    to_expect_rejected(ctx, ggml_concat(ctx, a, b, 0), "ggml_concat");
    cr_assert(strstr(ggmlx_last_error(), "INT64_MAX") != NULL, "%s", ggmlx_last_error());
    ggml_free(ctx);
}

Test(concat, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_concat(ctx, a, NULL, 0), "ggml_concat");
    ggml_free(ctx);

    const int dims[] = { -1, 4 };
    for (int k = 0; k < 2; k++) {
        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
        to_expect_rejected(ctx, ggml_concat(ctx, a, a, dims[k]), "ggml_concat");
        ggml_free(ctx);
    }

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 3);
    to_expect_rejected(ctx, ggml_concat(ctx, a, b, 1), "ggml_concat");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3);
    to_expect_rejected(ctx, ggml_concat(ctx, a, b, 1), "ggml_concat");
    ggml_free(ctx);
}
