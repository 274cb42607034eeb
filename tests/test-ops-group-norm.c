/*
 * test-ops-group-norm.c -- GROUP_NORM against a double reference: groups that divide the
 * channels and groups that do not (a short or empty last group), transposed and permuted
 * inputs, in place, several threads, eps, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

enum layout { CONTIG, TRANSPOSED, PERMUTED };

/* channels (dim 2) in groups of ceil(ne2 / n_groups); each group of each dim-3 slice normalised */
static double * ref_group_norm(const double * v, const int64_t ne[4], int n_groups, double eps) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    double * out = (double *) malloc((size_t) (n ? n : 1) * sizeof(double));
    const int64_t per = (ne[2] + n_groups - 1) / n_groups;
    const int64_t plane = ne[0] * ne[1];
    for (int64_t i3 = 0; i3 < ne[3]; i3++) {
        for (int64_t c0 = 0; c0 < ne[2]; c0 += per) {
            const int64_t c1 = c0 + per < ne[2] ? c0 + per : ne[2];
            const double * x = v + (i3 * ne[2] + c0) * plane;
            double * y = out + (i3 * ne[2] + c0) * plane;
            const int64_t m = (c1 - c0) * plane;
            double mean = 0.0, sq = 0.0;
            for (int64_t i = 0; i < m; i++) {
                mean += x[i];
            }
            mean /= (double) m;
            for (int64_t i = 0; i < m; i++) {
                sq += (x[i] - mean) * (x[i] - mean);
            }
            const double scale = 1.0 / sqrt(sq / (double) m + eps);
            for (int64_t i = 0; i < m; i++) {
                y[i] = (x[i] - mean) * scale;
            }
        }
    }
    return out;
}

static void run_case(const int64_t ne[4], int n_groups, enum layout l, bool inplace, int n_threads, float eps,
                     uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = l == TRANSPOSED ? to_new_transposed(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                           : l == PERMUTED   ? to_new_permuted(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                                             : to_new(&e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    tu_fill(a, &rng, -1.0f, 3.0f);
    double * va   = to_values(a);
    double * want = ref_group_norm(va, ne, n_groups, eps);

    struct ggml_tensor * r = inplace ? ggml_group_norm_inplace(e.ctx, a, n_groups, eps)
                                     : ggml_group_norm(e.ctx, a, n_groups, eps);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_GROUP_NORM);
    cr_assert_eq(r->type, GGML_TYPE_F32);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), n_groups);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 1), eps);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne[d]);
    }
    if (inplace) {
        cr_assert_eq(r->data, a->data, "in-place result must share a's memory");
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    char what[160];
    snprintf(what, sizeof what, "group_norm%s [%lld,%lld,%lld,%lld] groups %d layout %d threads %d",
             inplace ? "_inplace" : "", (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3],
             n_groups, (int) l, n_threads);
    to_check(r, want, 1e-5, what);
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

Test(group_norm, groups_dividing_the_channels) {
    const int64_t ne[4] = { 7, 5, 8, 2 };
    run_case(ne, 1, CONTIG, false, 1, 1e-6f, 1);
    run_case(ne, 2, CONTIG, false, 1, 1e-6f, 2);
    run_case(ne, 4, CONTIG, false, 1, 1e-6f, 3);
    run_case(ne, 8, CONTIG, false, 1, 1e-6f, 4);
}

Test(group_norm, groups_not_dividing_the_channels) {
    /* 10 channels in 4 groups: groups of 3, the last one of 1; 3 channels in 5 groups: 3 of 1, 2 empty */
    const int64_t ne[4] = { 6, 3, 10, 1 };
    run_case(ne, 4, CONTIG, false, 1, 1e-6f, 10);
    const int64_t ne2[4] = { 6, 3, 3, 2 };
    run_case(ne2, 5, CONTIG, false, 2, 1e-6f, 11);
}

Test(group_norm, odd_sizes_and_threads) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], 3, 4, 1 };
        run_case(ne, 2, CONTIG, false, s % 3 + 1, 1e-5f, (uint64_t) (20 + s));
    }
    const int64_t many[4] = { 33, 31, 32, 2 };
    run_case(many, 32, CONTIG, false, 3, 1e-5f, 30);
}

Test(group_norm, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 6, 2 };
    run_case(ne, 3, TRANSPOSED, false, 1, 1e-5f, 40);
    run_case(ne, 3, PERMUTED, false, 2, 1e-5f, 41);
}

Test(group_norm, inplace_writes_into_a) {
    const int64_t ne[4] = { 32, 5, 6, 1 };
    run_case(ne, 2, CONTIG, true, 1, 1e-5f, 50);
    run_case(ne, 3, TRANSPOSED, true, 2, 1e-5f, 51);
}

Test(group_norm, eps_is_applied) {
    const int64_t ne[4] = { 5, 3, 4, 1 };
    run_case(ne, 2, CONTIG, false, 1, 0.5f, 60);
}

Test(group_norm, rejects_null_input) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_group_norm(ctx, NULL, 2, 1e-5f), "ggml_group_norm");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_group_norm_inplace(ctx, NULL, 2, 1e-5f), "ggml_group_norm_inplace");
    ggml_free(ctx);
    cr_assert_null(ggml_group_norm(NULL, NULL, 2, 1e-5f));
}

Test(group_norm, rejects_non_f32_input) {
    const enum ggml_type bad[] = { GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int t = 0; t < 3; t++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_3d(ctx, bad[t], 4, 3, 4);
        to_expect_rejected(ctx, ggml_group_norm(ctx, a, 2, 1e-5f), "ggml_group_norm");
        ggml_free(ctx);
    }
}

Test(group_norm, rejects_n_groups_below_one) {
    const int bad[] = { 0, -1 };
    for (int i = 0; i < 2; i++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 4);
        to_expect_rejected(ctx, ggml_group_norm(ctx, a, bad[i], 1e-5f), "ggml_group_norm");
        cr_assert_not_null(strstr(ggmlx_last_error(), "n_groups"));
        ggml_free(ctx);
    }
}

Test(group_norm, rejects_negative_or_nan_eps) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 4);
    to_expect_rejected(ctx, ggml_group_norm(ctx, a, 2, -1.0f), "ggml_group_norm");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 4);
    to_expect_rejected(ctx, ggml_group_norm_inplace(ctx, a, 2, NAN), "ggml_group_norm_inplace");
    ggml_free(ctx);
}
