/*
 * test-ops-gemv.c -- MUL_MAT with one column (the matrix-vector kernel): F32, F16 and BF16
 * weights against a double reference, K and N around the kernel's 4-row and 16/32-element steps,
 * 1 to 3 threads, strided vectors, permuted weight rows, batches with broadcast, and every
 * kernel variant (GGMLX_MATMUL_KERNEL=portable|avx2|avx512) giving the same results.
 */
#include "test-ops-common.h"

static const enum ggml_type WTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

struct gv_case {
    enum ggml_type type;
    int64_t        K, N;
    int64_t        a2, b2;      /* batches: b2 a multiple of a2 */
    bool           b_strided;   /* the vector is a column of a bigger matrix (k stride > 4 bytes) */
    bool           a_permuted;  /* weight rows of one batch are not adjacent */
    int            n_threads;
};

static struct gv_case gvc(enum ggml_type type, int64_t K, int64_t N, int n_threads) {
    struct gv_case c = { type, K, N, 1, 1, false, false, n_threads };
    return c;
}

/* computes a * b and returns the results (N * b2 floats, caller frees) after checking them */
static float * run_gv(const struct gv_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = c->a_permuted
        ? ggml_permute(e.ctx, to_new(&e, c->type, c->K, c->a2, c->N, 1), 0, 2, 1, 3)
        : to_new(&e, c->type, c->K, c->N, c->a2, 1);
    struct ggml_tensor * b = c->b_strided
        ? ggml_transpose(e.ctx, to_new(&e, GGML_TYPE_F32, 3, c->K, c->b2, 1))
        : to_new(&e, GGML_TYPE_F32, c->K, 1, c->b2, 1);
    if (c->b_strided) {
        b = ggml_view_4d(e.ctx, b, c->K, 1, c->b2, 1, b->nb[1], b->nb[2], b->nb[3], 0);
    }
    cr_assert(a->ne[0] == c->K && a->ne[1] == c->N && a->ne[2] == c->a2);
    cr_assert(b->ne[0] == c->K && b->ne[1] == 1 && b->ne[2] == c->b2);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    double * va = to_values(a);
    double * vb = to_values(b);

    struct ggml_tensor * r = ggml_mul_mat(e.ctx, a, b);
    cr_assert_not_null(r, "ggml_mul_mat: %s", ggmlx_last_error());
    to_alloc(&e, r);
    to_compute(&e, r, c->n_threads);

    const int64_t rb   = c->b2 / c->a2;
    const double  unit = ldexp(1.0, -24);
    float * out = (float *) malloc((size_t) ggml_nelements(r) * sizeof(float));
    int64_t bad = 0, i = 0;
    TU_FOR_EACH(r, n, m, i12, i13) {
        const double * x = va + to_index(a, 0, n, i12 / rb, i13);
        const double * y = vb + to_index(b, 0, m, i12, i13);
        double s = 0.0, sa = 0.0;
        for (int64_t k = 0; k < c->K; k++) {
            s  += x[k] * y[k];
            sa += fabs(x[k] * y[k]);
        }
        const double got = tu_get(r, n, m, i12, i13);
        out[i++] = (float) got;
        if (!(fabs(got - s) <= 1e-6 + 8.0 * unit * sqrt((double) c->K) * sa)) {
            if (bad++ == 0) {
                cr_log_error("gemv %s K=%lld N=%lld [%lld, batch %lld]: got %.9g want %.9g",
                             ggml_type_name(c->type), (long long) c->K, (long long) c->N, (long long) n,
                             (long long) i12, got, s);
            }
        }
    }
    cr_assert_eq(bad, 0, "gemv %s K=%lld N=%lld a2=%lld b2=%lld strided b %d permuted a %d threads %d: %lld wrong",
                 ggml_type_name(c->type), (long long) c->K, (long long) c->N, (long long) c->a2, (long long) c->b2,
                 (int) c->b_strided, (int) c->a_permuted, c->n_threads, (long long) bad);
    to_check(a, va, 0.0, "a must be unchanged");
    to_check(b, vb, 0.0, "b must be unchanged");
    free(va);
    free(vb);
    to_end(&e);
    return out;
}

static const int64_t GV_K[] = { 1, 7, 16, 31, 32, 33, 48, 100, 257 };
static const int64_t GV_N[] = { 1, 3, 4, 5, 8, 9, 37 };

Test(gemv, sizes_around_the_kernel_steps) {
    for (int t = 0; t < 3; t++) {
        for (size_t k = 0; k < sizeof GV_K / sizeof GV_K[0]; k++) {
            for (size_t n = 0; n < sizeof GV_N / sizeof GV_N[0]; n++) {
                struct gv_case c = gvc(WTYPES[t], GV_K[k], GV_N[n], 1);
                free(run_gv(&c, (uint64_t) (100 + t * 1000 + k * 10 + n)));
            }
        }
    }
}

Test(gemv, threads_split_the_rows) {
    for (int t = 0; t < 3; t++) {
        for (int nt = 1; nt <= 3; nt++) {
            struct gv_case c = gvc(WTYPES[t], 300, 61, nt);
            free(run_gv(&c, (uint64_t) (5000 + t * 10 + nt)));
            c = gvc(WTYPES[t], 64, 2, nt); /* fewer rows than threads */
            free(run_gv(&c, (uint64_t) (5100 + t * 10 + nt)));
        }
    }
}

Test(gemv, strided_vector) {
    for (int t = 0; t < 3; t++) {
        struct gv_case c = gvc(WTYPES[t], 129, 23, 2);
        c.b_strided = true;
        free(run_gv(&c, (uint64_t) (6000 + t)));
    }
}

Test(gemv, permuted_weight_rows) {
    for (int t = 0; t < 3; t++) {
        struct gv_case c = gvc(WTYPES[t], 70, 13, 2);
        c.a2 = 3;
        c.b2 = 3;
        c.a_permuted = true;
        free(run_gv(&c, (uint64_t) (6100 + t)));
    }
}

Test(gemv, batches_broadcast_the_weights) {
    for (int t = 0; t < 3; t++) {
        struct gv_case c = gvc(WTYPES[t], 96, 11, 2);
        c.a2 = 2;
        c.b2 = 6;
        free(run_gv(&c, (uint64_t) (6200 + t)));
    }
}

Test(gemv, every_kernel_variant_agrees) {
    const char * variants[] = { "portable", "avx2", "avx512" };
    for (int t = 0; t < 3; t++) {
        float * first = NULL;
        const int64_t K = 1000, N = 45;
        for (int v = 0; v < 3; v++) {
            cr_assert_eq(setenv("GGMLX_MATMUL_KERNEL", variants[v], 1), 0);
            struct gv_case c = gvc(WTYPES[t], K, N, 2);
            float * out = run_gv(&c, (uint64_t) (7000 + t)); /* same salt: same operands */
            if (first == NULL) {
                first = out;
                continue;
            }
            for (int64_t i = 0; i < N; i++) {
                cr_assert(fabsf(out[i] - first[i]) <= 1e-4f * (1.0f + fabsf(first[i])),
                          "%s %s row %lld: %.9g vs portable %.9g", ggml_type_name(WTYPES[t]), variants[v],
                          (long long) i, out[i], first[i]);
            }
            free(out);
        }
        free(first);
    }
    unsetenv("GGMLX_MATMUL_KERNEL");
}
