/*
 * test-ops-pad.c -- PAD (ggml_pad, ggml_pad_ext) and PAD_REFLECT_1D: values and zeros against a
 * reference, every dim padded on either side, F32/F16/BF16/I32, non-contiguous inputs, threads,
 * error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

static void run_case(enum ggml_type type, const int64_t ne[4], const int lp[4], const int rp[4], bool ext, int layout,
                     int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = layout == 1 ? to_new_transposed(&e, type, ne[0], ne[1], ne[2], ne[3])
                           : layout == 2 ? to_new_permuted(&e, type, ne[0], ne[1], ne[2], ne[3])
                                         : to_new(&e, type, ne[0], ne[1], ne[2], ne[3]);
    if (type == GGML_TYPE_I32) {
        TU_FOR_EACH(a, i0, i1, i2, i3) {
            tu_set(a, i0, i1, i2, i3, (double) (int32_t) (tu_next(&rng) % 1000) + 1);
        }
    } else {
        tu_fill(a, &rng, 0.5f, 2.0f); /* never zero: a misplaced value cannot pass for padding */
    }
    struct ggml_tensor * r = ext ? ggml_pad_ext(e.ctx, a, lp[0], rp[0], lp[1], rp[1], lp[2], rp[2], lp[3], rp[3])
                                 : ggml_pad(e.ctx, a, rp[0], rp[1], rp[2], rp[3]);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_PAD && r->type == type);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne[d] + lp[d] + rp[d]);
        cr_assert_eq(ggmlx_get_op_params_i32(r, 2 * d), lp[d]);
        cr_assert_eq(ggmlx_get_op_params_i32(r, 2 * d + 1), rp[d]);
    }
    to_alloc(&e, r);
    /* garbage in dst first: the padding must be written, not assumed */
    memset(r->data, 0x7f, ggml_nbytes(r));
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const int64_t j0 = i0 - lp[0], j1 = i1 - lp[1], j2 = i2 - lp[2], j3 = i3 - lp[3];
        const bool in = j0 >= 0 && j0 < ne[0] && j1 >= 0 && j1 < ne[1] && j2 >= 0 && j2 < ne[2] && j3 >= 0 && j3 < ne[3];
        want[to_index(r, i0, i1, i2, i3)] = in ? tu_get(a, j0, j1, j2, j3) : 0.0;
    }
    char what[128];
    snprintf(what, sizeof what, "pad%s %s layout %d threads %d", ext ? "_ext" : "", ggml_type_name(type), layout,
             n_threads);
    to_check(r, want, 0.0, what);
    free(want);
    to_end(&e);
}

static const int NONE[4] = { 0, 0, 0, 0 };

Test(pad, pads_the_end_of_every_dim) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], 3, 2, 1 };
        const int rp[4] = { 3, 1, 2, 1 };
        run_case(GGML_TYPE_F32, ne, NONE, rp, false, 0, s % 3 + 1, (uint64_t) s);
    }
}

Test(pad_ext, pads_both_sides_of_every_dim) {
    const int64_t ne[4] = { 33, 5, 3, 2 };
    const int lp[4] = { 2, 1, 0, 1 };
    const int rp[4] = { 1, 3, 2, 0 };
    run_case(GGML_TYPE_F32, ne, lp, rp, true, 0, 1, 10);
    run_case(GGML_TYPE_F32, ne, lp, rp, true, 0, 3, 11);
    run_case(GGML_TYPE_F32, ne, NONE, NONE, true, 0, 1, 12); /* no padding: a copy */
}

Test(pad_ext, other_types) {
    const int64_t ne[4] = { 31, 4, 2, 1 };
    const int lp[4] = { 1, 0, 1, 0 };
    const int rp[4] = { 2, 1, 0, 1 };
    run_case(GGML_TYPE_F16, ne, lp, rp, true, 0, 1, 20);
    run_case(GGML_TYPE_BF16, ne, lp, rp, true, 0, 2, 21);
    run_case(GGML_TYPE_I32, ne, lp, rp, true, 0, 1, 22);
}

Test(pad_ext, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 2, 3 };
    const int lp[4] = { 1, 2, 0, 1 };
    const int rp[4] = { 2, 0, 1, 1 };
    run_case(GGML_TYPE_F32, ne, lp, rp, true, 1, 2, 30);
    run_case(GGML_TYPE_F16, ne, lp, rp, true, 2, 3, 31);
}

Test(pad, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_pad(ctx, NULL, 1, 0, 0, 0), "ggml_pad");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    to_expect_rejected(ctx, ggml_pad(ctx, a, 0, -1, 0, 0), "ggml_pad");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 2);
    to_expect_rejected(ctx, ggml_pad(ctx, a, 32, 0, 0, 0), "ggml_pad");
    ggml_free(ctx);
}

Test(pad, rejects_padding_past_int64_elements) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, INT64_MAX - 2);
    cr_assert_not_null(a);
    /* (INT64_MAX - 2) + 100 overflowed int64 (undefined behaviour) */
    to_expect_rejected(ctx, ggml_pad(ctx, a, 100, 0, 0, 0), "ggml_pad");
    cr_assert(strstr(ggmlx_last_error(), "INT64_MAX") != NULL, "%s", ggmlx_last_error());
    ggml_free(ctx);
}

Test(pad_ext, rejects_negative_padding) {
    for (int i = 0; i < 8; i++) {
        int p[8] = { 0 };
        p[i] = -1;
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
        to_expect_rejected(ctx, ggml_pad_ext(ctx, a, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]), "ggml_pad_ext");
        ggml_free(ctx);
    }
}

/* ---- PAD_REFLECT_1D ------------------------------------------------------------------------ */

static void run_reflect(const int64_t ne[4], int p0, int p1, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    tu_fill(a, &rng, -2.0f, 2.0f);
    struct ggml_tensor * r = ggml_pad_reflect_1d(e.ctx, a, p0, p1);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_PAD_REFLECT_1D && r->type == GGML_TYPE_F32);
    cr_assert(r->ne[0] == ne[0] + p0 + p1 && r->ne[1] == ne[1] && r->ne[2] == ne[2] && r->ne[3] == ne[3]);
    cr_assert(ggmlx_get_op_params_i32(r, 0) == p0 && ggmlx_get_op_params_i32(r, 1) == p1);
    to_alloc(&e, r);
    memset(r->data, 0x7f, ggml_nbytes(r));
    to_compute(&e, r, n_threads);
    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        /* position in a of output column i0: reflected at both edges, the edge itself once */
        int64_t j = i0 - p0;
        if (j < 0) {
            j = -j;
        } else if (j >= ne[0]) {
            j = 2 * (ne[0] - 1) - j;
        }
        want[to_index(r, i0, i1, i2, i3)] = tu_get(a, j, i1, i2, i3);
    }
    to_check(r, want, 0.0, "pad_reflect_1d");
    free(want);
    to_end(&e);
}

Test(pad_reflect_1d, reflects_both_edges) {
    const int64_t ne[4] = { 7, 3, 2, 1 };
    run_reflect(ne, 2, 1, 1, 40);
    run_reflect(ne, 6, 6, 2, 41); /* the longest reflections allowed */
    run_reflect(ne, 0, 0, 1, 42);
    const int64_t big[4] = { 4097, 3, 1, 1 };
    run_reflect(big, 33, 1023, 3, 43);
}

Test(pad_reflect_1d, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_pad_reflect_1d(ctx, NULL, 1, 1), "ggml_pad_reflect_1d");
    ggml_free(ctx);
    const int bad[][2] = { { -1, 0 }, { 0, -1 }, { 4, 0 }, { 0, 4 } };
    for (int i = 0; i < 4; i++) {
        ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
        to_expect_rejected(ctx, ggml_pad_reflect_1d(ctx, a, bad[i][0], bad[i][1]), "ggml_pad_reflect_1d");
        ggml_free(ctx);
    }
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 2);
    to_expect_rejected(ctx, ggml_pad_reflect_1d(ctx, a, 1, 1), "ggml_pad_reflect_1d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_transpose(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5));
    to_expect_rejected(ctx, ggml_pad_reflect_1d(ctx, a, 1, 1), "ggml_pad_reflect_1d");
    ggml_free(ctx);
}
