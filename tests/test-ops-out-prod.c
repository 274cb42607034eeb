/*
 * test-ops-out-prod.c -- OUT_PROD against a double reference: odd sizes, broadcast over dims 2
 * and 3, F16/BF16 a, non-contiguous operands, several threads, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

/* want[i0, i1, i2, i3] = sum over k of a[i0, k, i2 / r2, i3 / r3] * b[i1, k, i2, i3] */
static double * ref_out_prod(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    const int64_t n0 = a->ne[0], n1 = b->ne[0], n2 = b->ne[2], n3 = b->ne[3], nk = a->ne[1];
    const int64_t r2 = n2 / a->ne[2], r3 = n3 / a->ne[3];
    const int64_t n  = n0 * n1 * n2 * n3;
    double * out = (double *) malloc((size_t) (n > 0 ? n : 1) * sizeof(double));
    for (int64_t i3 = 0; i3 < n3; i3++) {
        for (int64_t i2 = 0; i2 < n2; i2++) {
            for (int64_t i1 = 0; i1 < n1; i1++) {
                for (int64_t i0 = 0; i0 < n0; i0++) {
                    double s = 0.0;
                    for (int64_t k = 0; k < nk; k++) {
                        s += tu_get(a, i0, k, i2 / r2, i3 / r3) * tu_get(b, i1, k, i2, i3);
                    }
                    out[((i3 * n2 + i2) * n1 + i1) * n0 + i0] = s;
                }
            }
        }
    }
    return out;
}

/* SLICED_A: a is a view of the second half of each row of a wider tensor (rows not contiguous) */
enum layout { CONTIG, SLICED_A, PERMUTED_B };

static struct ggml_tensor * new_sliced(struct to_env * e, enum ggml_type t, const int64_t ne[4]) {
    struct ggml_tensor * base = to_new(e, t, 2 * ne[0], ne[1], ne[2], ne[3]);
    struct ggml_tensor * v = ggml_view_4d(e->ctx, base, ne[0], ne[1], ne[2], ne[3], base->nb[1], base->nb[2],
                                          base->nb[3], (size_t) ne[0] * ggml_type_size(t));
    cr_assert_not_null(v);
    return v;
}

static void run_case(enum ggml_type ta, const int64_t na[4], const int64_t nb[4], enum layout l, int n_threads,
                     uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = l == SLICED_A ? new_sliced(&e, ta, na) : to_new(&e, ta, na[0], na[1], na[2], na[3]);
    struct ggml_tensor * b = l == PERMUTED_B ? to_new_permuted(&e, GGML_TYPE_F32, nb[0], nb[1], nb[2], nb[3])
                                             : to_new(&e, GGML_TYPE_F32, nb[0], nb[1], nb[2], nb[3]);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    double * want = ref_out_prod(a, b);
    struct ggml_tensor * r = ggml_out_prod(e.ctx, a, b);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_OUT_PROD);
    cr_assert_eq(r->type, GGML_TYPE_F32);
    cr_assert(r->ne[0] == na[0] && r->ne[1] == nb[0] && r->ne[2] == nb[2] && r->ne[3] == nb[3]);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    char what[160];
    snprintf(what, sizeof what, "out_prod %s a [%lld,%lld,%lld,%lld] b [%lld,%lld,%lld,%lld] layout %d threads %d",
             ggml_type_name(ta), (long long) na[0], (long long) na[1], (long long) na[2], (long long) na[3],
             (long long) nb[0], (long long) nb[1], (long long) nb[2], (long long) nb[3], (int) l, n_threads);
    /* float accumulation over k products of values below 1 */
    to_check(r, want, 1e-5 * (double) (na[1] > 1 ? na[1] : 1), what);
    free(want);
    to_end(&e);
}

Test(out_prod, matches_reference_odd_sizes) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t n = TU_SIZES[s] > 100 ? 5 : TU_SIZES[s];
        const int64_t na[4] = { TU_SIZES[s], n, 1, 1 };
        const int64_t nb[4] = { 3, n, 1, 1 };
        run_case(GGML_TYPE_F32, na, nb, CONTIG, 1, (uint64_t) s);
    }
    const int64_t na[4] = { 33, 17, 1, 1 };
    const int64_t nb[4] = { 31, 17, 1, 1 };
    run_case(GGML_TYPE_F32, na, nb, CONTIG, 1, 10);
}

Test(out_prod, broadcasts_a_over_dims_2_and_3) {
    const int64_t na[4] = { 9, 7, 2, 1 };
    const int64_t nb[4] = { 5, 7, 6, 3 };
    run_case(GGML_TYPE_F32, na, nb, CONTIG, 2, 20);
}

Test(out_prod, f16_and_bf16_a) {
    const int64_t na[4] = { 33, 8, 2, 1 };
    const int64_t nb[4] = { 5, 8, 2, 2 };
    run_case(GGML_TYPE_F16, na, nb, CONTIG, 1, 30);
    run_case(GGML_TYPE_BF16, na, nb, CONTIG, 2, 31);
}

Test(out_prod, non_contiguous_operands) {
    const int64_t na[4] = { 6, 5, 3, 2 };
    const int64_t nb[4] = { 7, 5, 3, 2 };
    run_case(GGML_TYPE_F32, na, nb, SLICED_A, 1, 40);
    run_case(GGML_TYPE_F32, na, nb, PERMUTED_B, 2, 41);
    run_case(GGML_TYPE_F16, na, nb, SLICED_A, 3, 42);
}

Test(out_prod, multithreaded_rows) {
    const int64_t na[4] = { 256, 32, 1, 1 };
    const int64_t nb[4] = { 67, 32, 1, 1 };
    run_case(GGML_TYPE_F32, na, nb, CONTIG, 3, 50);
}

Test(out_prod, rejects_null_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_out_prod(ctx, a, NULL), "ggml_out_prod");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_out_prod(ctx, NULL, a), "ggml_out_prod");
    ggml_free(ctx);
}

/* upstream's constructor takes any types (test-backend-ops builds Q4_0 a, F16 b); the CPU refuses them */
Test(out_prod, builds_types_the_cpu_then_refuses) {
    const enum ggml_type ta[] = { GGML_TYPE_Q4_0, GGML_TYPE_F32 };
    const enum ggml_type tb[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    for (int k = 0; k < 2; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, ta[k], 32, 3);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, tb[k], 5, 3);
        struct ggml_tensor * r = ggml_out_prod(ctx, a, b);
        cr_assert_not_null(r, "%s", ggmlx_last_error());
        cr_assert(r->type == GGML_TYPE_F32 && r->ne[0] == 32 && r->ne[1] == 5);
        cr_assert(!ggml_backend_supports_op(cpu, r), "the CPU claims out_prod of %s x %s", ggml_type_name(ta[k]),
                  ggml_type_name(tb[k]));
        ggml_free(ctx);
    }
    ggml_backend_free(cpu);
}

Test(out_prod, rejects_mismatched_shapes) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 4);
    to_expect_rejected(ctx, ggml_out_prod(ctx, a, b), "ggml_out_prod");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 5, 3, 3);
    to_expect_rejected(ctx, ggml_out_prod(ctx, a, b), "ggml_out_prod");
    ggml_free(ctx);
}

Test(out_prod, rejects_transposed_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_transpose(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4));
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3);
    to_expect_rejected(ctx, ggml_out_prod(ctx, a, b), "ggml_out_prod");
    ggml_free(ctx);
}
