/*
 * test-ops-write.c -- the ops that write into a tensor: SET (set, set_1d, set_2d and _inplace),
 * ACC, FILL, TRI, DIAG, ROLL, PAD circular, SOLVE_TRI and ADD_CAST; values against references
 * computed here in double, guard bytes around every tensor, threads, and every refused shape.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <stdlib.h>

static double * want_of(const struct ggml_tensor * t) {
    double * w = (double *) calloc((size_t) ggml_nelements(t) + 1, sizeof(double));
    cr_assert_not_null(w);
    return w;
}

/* set/acc of a [ne0, ne1, ne2] F32 with b placed at (o0, o1, o2) */
static void run_set(bool acc, bool inplace, int variant, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(7 + (uint64_t) variant);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 37, 5, 3, 1);
    struct ggml_tensor * b = variant == 1 ? to_new(&e, GGML_TYPE_F32, 20, 1, 1, 1) : to_new(&e, GGML_TYPE_F32, 9, 3, 2, 1);
    tu_fill(a, &rng, -2.0f, 2.0f);
    tu_fill(b, &rng, -2.0f, 2.0f);
    double * va = to_values(a);
    const int64_t o0 = 4, o1 = variant == 1 ? 0 : 1, o2 = variant == 1 ? 0 : 1;
    const size_t off = ggmlx_offset(a, o0, o1, o2, 0);
    struct ggml_tensor * r;
    if (variant == 1) {
        r = acc ? NULL : inplace ? ggml_set_1d_inplace(e.ctx, a, b, off) : ggml_set_1d(e.ctx, a, b, off);
    } else if (variant == 2 && !acc) {
        r = inplace ? ggml_set_2d_inplace(e.ctx, a, b, a->nb[1], off) : ggml_set_2d(e.ctx, a, b, a->nb[1], off);
    } else if (acc) {
        r = inplace ? ggml_acc_inplace(e.ctx, a, b, a->nb[1], a->nb[2], a->nb[3], off)
                    : ggml_acc(e.ctx, a, b, a->nb[1], a->nb[2], a->nb[3], off);
    } else {
        r = inplace ? ggml_set_inplace(e.ctx, a, b, a->nb[1], a->nb[2], a->nb[3], off)
                    : ggml_set(e.ctx, a, b, a->nb[1], a->nb[2], a->nb[3], off);
    }
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, acc ? GGML_OP_ACC : GGML_OP_SET);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 3), (int32_t) off);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 4), inplace ? 1 : 0);
    if (!inplace) {
        to_alloc(&e, r);
    }
    double * w = want_of(a);
    memcpy(w, va, (size_t) ggml_nelements(a) * sizeof(double));
    TU_FOR_EACH(b, i0, i1, i2, i3) {
        /* b's element lands where its byte offset in the view falls in a (set_1d: a flat run) */
        int64_t flat = to_index(a, o0, o1, o2, 0) + (variant == 1 ? i0 : i0 + i1 * a->ne[0] + i2 * a->ne[0] * a->ne[1]);
        (void) i3;
        w[flat] = acc ? w[flat] + tu_get(b, i0, i1, i2, i3) : tu_get(b, i0, i1, i2, i3);
    }
    to_compute(&e, r, n_threads);
    to_check(r, w, 1e-6, acc ? "acc" : "set");
    if (!inplace) {
        to_check(a, va, 0.0, "a untouched"); /* the out-of-place forms leave a as it was */
    }
    free(va);
    free(w);
    to_end(&e);
}

Test(set, writes_b_into_the_view_of_a_copy) { run_set(false, false, 0, 1); run_set(false, false, 0, 2); }
Test(set, inplace_writes_into_a) { run_set(false, true, 0, 2); }
Test(set, set_1d_writes_a_flat_run) { run_set(false, false, 1, 1); run_set(false, true, 1, 2); }
Test(set, set_2d_takes_the_row_stride) { run_set(false, false, 2, 2); run_set(false, true, 2, 1); }
Test(acc, adds_b_into_the_view) { run_set(true, false, 0, 1); run_set(true, false, 0, 2); }
Test(acc, inplace_adds_into_a) { run_set(true, true, 0, 2); }

Test(set, converts_f32_into_an_f16_a) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, 8, 2, 1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 3, 1, 1, 1);
    TU_FOR_EACH(a, i0, i1, i2, i3) { tu_set(a, i0, i1, i2, i3, 1.0); }
    TU_FOR_EACH(b, i0, i1, i2, i3) { tu_set(b, i0, i1, i2, i3, 0.5 * (double) (i0 + 1)); }
    struct ggml_tensor * r = ggml_set_1d(e.ctx, a, b, 10 * sizeof(uint16_t));
    to_alloc(&e, r);
    to_compute(&e, r, 1);
    double w[16];
    for (int i = 0; i < 16; i++) {
        w[i] = i >= 10 && i < 13 ? 0.5 * (i - 9) : 1.0;
    }
    to_check(r, w, 0.0, "set f16");
    to_end(&e);
}

Test(set, refuses_a_view_reaching_past_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_set_1d(ctx, a, b, 5 * sizeof(float)), "ggml_set_1d");
    ggml_free(ctx);
}

Test(set, refuses_b_larger_than_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    to_expect_rejected(ctx, ggml_set(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], 0), "ggml_set");
    ggml_free(ctx);
}

Test(set, refuses_a_non_contiguous_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_transpose(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3));
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    to_expect_rejected(ctx, ggml_set_1d(ctx, a, b, 0), "ggml_set_1d");
    ggml_free(ctx);
}

Test(set, refuses_mixed_non_float_types) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 8);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    to_expect_rejected(ctx, ggml_set_1d(ctx, a, b, 0), "ggml_set_1d");
    ggml_free(ctx);
}

Test(acc, refuses_non_f32) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 8);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 2);
    to_expect_rejected(ctx, ggml_acc(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], 0), "ggml_acc");
    ggml_free(ctx);
}

static void run_fill(enum ggml_type type, bool inplace, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, type, 33, 7, 2, 1);
    struct tu_rng rng = tu_rng_new(3);
    tu_fill(a, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = inplace ? ggml_fill_inplace(e.ctx, a, 2.5f) : ggml_fill(e.ctx, a, 2.5f);
    cr_assert_not_null(r);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 0), 2.5f);
    if (!inplace) {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    double * w = want_of(r);
    for (int64_t i = 0; i < ggml_nelements(r); i++) {
        w[i] = 2.5;
    }
    to_check(r, w, 0.0, "fill");
    free(w);
    to_end(&e);
}

Test(fill, writes_the_constant_everywhere) {
    run_fill(GGML_TYPE_F32, false, 1);
    run_fill(GGML_TYPE_F16, false, 2);
    run_fill(GGML_TYPE_BF16, true, 2);
}

Test(fill, refuses_integer_types) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_fill(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4), 1.0f), "ggml_fill");
    ggml_free(ctx);
}

static void run_tri(enum ggml_tri_type type, int layout, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(11 + (uint64_t) type);
    struct ggml_tensor * a = layout ? to_new_transposed(&e, GGML_TYPE_F32, 9, 9, 3, 1) : to_new(&e, GGML_TYPE_F32, 9, 9, 3, 1);
    tu_fill(a, &rng, 0.5f, 2.0f);
    struct ggml_tensor * r = ggml_tri(e.ctx, a, type);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * w = want_of(r);
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const bool keep = type == GGML_TRI_TYPE_LOWER ? i0 < i1 : type == GGML_TRI_TYPE_LOWER_DIAG ? i0 <= i1
                        : type == GGML_TRI_TYPE_UPPER ? i0 > i1 : i0 >= i1;
        w[to_index(r, i0, i1, i2, i3)] = keep ? tu_get(a, i0, i1, i2, i3) : 0.0;
    }
    to_check(r, w, 0.0, "tri");
    free(w);
    to_end(&e);
}

Test(tri, keeps_each_of_the_four_triangles) {
    run_tri(GGML_TRI_TYPE_LOWER, 0, 1);
    run_tri(GGML_TRI_TYPE_LOWER_DIAG, 1, 2);
    run_tri(GGML_TRI_TYPE_UPPER, 0, 2);
    run_tri(GGML_TRI_TYPE_UPPER_DIAG, 1, 1);
}

Test(tri, refuses_a_non_square_matrix) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_tri(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3), GGML_TRI_TYPE_LOWER), "ggml_tri");
    ggml_free(ctx);
}

Test(tri, refuses_an_unknown_type) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_tri(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4), (enum ggml_tri_type) 7),
                       "ggml_tri");
    ggml_free(ctx);
}

Test(diag, spreads_a_row_on_the_diagonal) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(5);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 6, 1, 3, 2);
    tu_fill(a, &rng, 0.5f, 2.0f);
    struct ggml_tensor * r = ggml_diag(e.ctx, a);
    cr_assert_not_null(r);
    cr_assert(r->ne[0] == 6 && r->ne[1] == 6 && r->ne[2] == 3 && r->ne[3] == 2);
    to_alloc(&e, r);
    memset(r->data, 0x7f, ggml_nbytes(r));
    to_compute(&e, r, 2);
    double * w = want_of(r);
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        w[to_index(r, i0, i1, i2, i3)] = i0 == i1 ? tu_get(a, i0, 0, i2, i3) : 0.0;
    }
    to_check(r, w, 0.0, "diag");
    free(w);
    to_end(&e);
}

Test(diag, refuses_more_than_one_row) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_diag(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2)), "ggml_diag");
    ggml_free(ctx);
}

static int64_t wrapi(int64_t i, int64_t n) {
    return ((i % n) + n) % n;
}

static void run_roll(const int s[4], int layout, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(17);
    struct ggml_tensor * a = layout ? to_new_permuted(&e, GGML_TYPE_F32, 7, 5, 3, 2) : to_new(&e, GGML_TYPE_F32, 7, 5, 3, 2);
    tu_fill(a, &rng, -1.0f, 1.0f);
    struct ggml_tensor * in = layout ? ggml_cont(e.ctx, a) : a;
    struct ggml_tensor * r = ggml_roll(e.ctx, in, s[0], s[1], s[2], s[3]);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    if (layout) {
        to_alloc(&e, in);
    }
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * w = want_of(r);
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        w[to_index(r, i0, i1, i2, i3)] =
            tu_get(a, wrapi(i0 - s[0], 7), wrapi(i1 - s[1], 5), wrapi(i2 - s[2], 3), wrapi(i3 - s[3], 2));
    }
    to_check(r, w, 0.0, "roll");
    free(w);
    to_end(&e);
}

Test(roll, moves_elements_with_wrap_around) {
    const int s1[4] = { 3, -2, 1, 1 };
    const int s2[4] = { -6, 4, -2, 0 };
    const int s3[4] = { 0, 0, 0, 0 };
    run_roll(s1, 0, 1);
    run_roll(s2, 1, 2);
    run_roll(s3, 0, 2);
}

Test(roll, refuses_a_shift_of_a_whole_dim) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_roll(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3), 0, -3, 0, 0), "ggml_roll");
    ggml_free(ctx);
}

Test(pad_circular, wraps_values_from_the_other_side) {
    const int lp[4] = { 2, 1, 0, 1 }, rp[4] = { 3, 0, 2, 0 };
    for (int ext = 0; ext < 2; ext++) {
        struct to_env e;
        to_begin(&e);
        struct tu_rng rng = tu_rng_new(23);
        struct ggml_tensor * a = to_new_transposed(&e, GGML_TYPE_F32, 5, 4, 3, 2);
        tu_fill(a, &rng, 0.5f, 2.0f);
        struct ggml_tensor * r = ext ? ggml_pad_ext_circular(e.ctx, a, lp[0], rp[0], lp[1], rp[1], lp[2], rp[2], lp[3], rp[3])
                                     : ggml_pad_circular(e.ctx, a, rp[0], rp[1], rp[2], rp[3]);
        cr_assert_not_null(r, "%s", ggmlx_last_error());
        cr_assert_eq(ggmlx_get_op_params_i32(r, 8), 1);
        to_alloc(&e, r);
        to_compute(&e, r, 2);
        double * w = want_of(r);
        TU_FOR_EACH(r, i0, i1, i2, i3) {
            const int * l = ext ? lp : (const int[4]) { 0, 0, 0, 0 };
            w[to_index(r, i0, i1, i2, i3)] =
                tu_get(a, wrapi(i0 - l[0], 5), wrapi(i1 - l[1], 4), wrapi(i2 - l[2], 3), wrapi(i3 - l[3], 2));
        }
        to_check(r, w, 0.0, "pad circular");
        free(w);
        to_end(&e);
    }
}

Test(pad_circular, plain_pad_keeps_the_flag_zero) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * r = ggml_pad(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), 1, 0, 0, 0);
    cr_assert_not_null(r);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 8), 0);
    ggml_free(ctx);
}

Test(pad_circular, refuses_wrapping_an_empty_dim) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_pad_circular(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 0), 0, 1, 0, 0),
                       "ggml_pad_circular");
    ggml_free(ctx);
}

static void run_solve(int64_t n, int64_t k, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) (n * 100 + k));
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, n, n, 2, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, k, n, 2, 1);
    /* a well-conditioned lower triangle: a dominant diagonal */
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        tu_set(a, i0, i1, i2, i3, i0 > i1 ? 0.0 : i0 == i1 ? 2.0 + tu_uniform(&rng, 0, 1) : tu_uniform(&rng, -0.5f, 0.5f) / (double) n);
    }
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = ggml_solve_tri(e.ctx, a, b, true, true, false);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * w = want_of(r);
    for (int64_t i2 = 0; i2 < 2; i2++) {
        for (int64_t j = 0; j < k; j++) {
            for (int64_t i = 0; i < n; i++) {
                double s = tu_get(b, j, i, i2, 0);
                for (int64_t t = 0; t < i; t++) {
                    s -= tu_get(a, t, i, i2, 0) * w[to_index(r, j, t, i2, 0)];
                }
                w[to_index(r, j, i, i2, 0)] = s / tu_get(a, i, i, i2, 0);
            }
        }
    }
    to_check(r, w, 1e-5, "solve_tri");
    free(w);
    to_end(&e);
}

Test(solve_tri, solves_lower_triangular_systems) {
    run_solve(1, 1, 1);
    run_solve(7, 3, 2);
    run_solve(33, 70, 2);
}

Test(solve_tri, refuses_unimplemented_variants) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 4);
    to_expect_rejected(ctx, ggml_solve_tri(ctx, a, b, true, false, false), "ggml_solve_tri");
    ggml_free(ctx);
}

Test(solve_tri, refuses_mismatched_rows) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_solve_tri(ctx, a, b, true, true, false), "ggml_solve_tri");
    ggml_free(ctx);
}

Test(solve_tri, refuses_a_non_square_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 4);
    to_expect_rejected(ctx, ggml_solve_tri(ctx, a, b, true, true, false), "ggml_solve_tri");
    ggml_free(ctx);
}

Test(add_cast, adds_into_the_requested_type) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(29);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, 16, 3, 1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 16, 1, 1, 1);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = ggml_add_cast(e.ctx, a, b, GGML_TYPE_F32);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->type == GGML_TYPE_F32 && r->op == GGML_OP_ADD);
    to_alloc(&e, r);
    to_compute(&e, r, 1);
    double * w = want_of(r);
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        w[to_index(r, i0, i1, i2, i3)] = tu_get(a, i0, i1, i2, i3) + tu_get(b, i0, 0, 0, 0);
    }
    to_check(r, w, 1e-6, "add_cast");
    free(w);
    to_end(&e);
}

Test(add_cast, refuses_an_f32_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_add_cast(ctx, a, a, GGML_TYPE_F16), "ggml_add_cast");
    ggml_free(ctx);
}

Test(add_cast, refuses_b_with_other_rows) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 2);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    to_expect_rejected(ctx, ggml_add_cast(ctx, a, b, GGML_TYPE_F32), "ggml_add_cast");
    ggml_free(ctx);
}
