/*
 * test-ops-matmul.c -- MUL_MAT against a double reference: F32, F16 and BF16 a; K, N and M over
 * the TU_SIZES; both kernel paths (packed GEMM and the dot path for few rows); broadcasting over
 * dims 2 and 3; strided, permuted and transposed views as operands (attention's K^T Q); 1 to 3
 * threads; every micro-kernel variant (portable, AVX2, AVX-512); ggml_mul_mat_set_prec; and the
 * error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <float.h>

enum layout {
    CONTIG,
    B_TRANSPOSED, /* b stored as [M, K] and transposed: every k step jumps a row */
    PERMUTED_HEADS, /* stored [K, dim2, dim1] and permuted: rows of a batch are not adjacent */
    A_STRIDED_K, /* a stored [dim2, K, N] and permuted: a's k stride is a whole row, still not transposed */
};

struct mm_case {
    enum ggml_type type;       /* of a */
    int64_t        K, N, M;
    int64_t        a2, a3;     /* a's batch dims */
    int64_t        b2, b3;     /* b's (whole multiples of a's) */
    enum layout    la, lb;
    int            n_threads;
};

static struct mm_case mmc(enum ggml_type type, int64_t K, int64_t N, int64_t M) {
    struct mm_case c = { type, K, N, M, 1, 1, 1, 1, CONTIG, CONTIG, 1 };
    return c;
}

static struct ggml_tensor * make_operand(struct to_env * e, enum layout l, enum ggml_type type, int64_t ne0,
                                         int64_t ne1, int64_t ne2, int64_t ne3) {
    struct ggml_tensor * t = NULL;
    switch (l) {
    case B_TRANSPOSED:
        t = ggml_transpose(e->ctx, to_new(e, type, ne1, ne0, ne2, ne3));
        break;
    case PERMUTED_HEADS:
        t = ggml_permute(e->ctx, to_new(e, type, ne0, ne2, ne1, ne3), 0, 2, 1, 3);
        break;
    case A_STRIDED_K:
        t = ggml_permute(e->ctx, to_new(e, type, ne2, ne0, ne1, ne3), 2, 0, 1, 3);
        break;
    default:
        return to_new(e, type, ne0, ne1, ne2, ne3);
    }
    cr_assert_not_null(t);
    cr_assert(t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3, "bad test layout %d", (int) l);
    return t;
}

/*
 * Runs one product and checks every element against the double reference within a bound on
 * float accumulation error: a few units of roundoff times sqrt(K) times the sum of |a_k b_k|.
 */
static void run_mm(const struct mm_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_operand(&e, c->la, c->type, c->K, c->N, c->a2, c->a3);
    struct ggml_tensor * b = make_operand(&e, c->lb, GGML_TYPE_F32, c->K, c->M, c->b2, c->b3);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    double * va = to_values(a);
    double * vb = to_values(b);

    struct ggml_tensor * r = ggml_mul_mat(e.ctx, a, b);
    cr_assert_not_null(r, "ggml_mul_mat: %s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_MUL_MAT);
    cr_assert_eq(r->type, GGML_TYPE_F32);
    cr_assert(r->ne[0] == c->N && r->ne[1] == c->M && r->ne[2] == c->b2 && r->ne[3] == c->b3);
    cr_assert_eq(r->src[0], a);
    cr_assert_eq(r->src[1], b);
    to_alloc(&e, r);
    to_compute(&e, r, c->n_threads);

    const int64_t r2 = c->b2 / c->a2, r3 = c->b3 / c->a3;
    const double  unit = ldexp(1.0, -24);
    int64_t bad = 0, f0 = 0, f1 = 0, f2 = 0, f3 = 0;
    double  fgot = 0.0, fwant = 0.0, fbound = 0.0;
    TU_FOR_EACH(r, n, m, i12, i13) {
        const double * x = va + to_index(a, 0, n, i12 / r2, i13 / r3);
        const double * y = vb + to_index(b, 0, m, i12, i13);
        double s = 0.0, sa = 0.0;
        for (int64_t k = 0; k < c->K; k++) {
            s  += x[k] * y[k];
            sa += fabs(x[k] * y[k]);
        }
        const double bound = 1e-6 + 8.0 * unit * sqrt((double) c->K) * sa;
        const double got   = tu_get(r, n, m, i12, i13);
        if (!(fabs(got - s) <= bound)) {
            if (bad++ == 0) {
                f0 = n; f1 = m; f2 = i12; f3 = i13;
                fgot = got; fwant = s; fbound = bound;
            }
        }
    }
    cr_assert_eq(bad, 0,
                 "mul_mat %s K=%lld N=%lld M=%lld a[..,%lld,%lld] b[..,%lld,%lld] layouts %d/%d threads %d: %lld of %lld "
                 "wrong; first [%lld,%lld,%lld,%lld] got %.9g want %.9g (bound %.3g)",
                 ggml_type_name(c->type), (long long) c->K, (long long) c->N, (long long) c->M, (long long) c->a2,
                 (long long) c->a3, (long long) c->b2, (long long) c->b3, (int) c->la, (int) c->lb, c->n_threads,
                 (long long) bad, (long long) ggml_nelements(r), (long long) f0, (long long) f1, (long long) f2,
                 (long long) f3, fgot, fwant, fbound);
    to_check(a, va, 0.0, "a must be unchanged");
    to_check(b, vb, 0.0, "b must be unchanged");
    free(va);
    free(vb);
    to_end(&e);
}

static const enum ggml_type TYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

Test(mul_mat, k_over_all_sizes) {
    for (int t = 0; t < 3; t++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            struct mm_case c = mmc(TYPES[t], TU_SIZES[s], 33, TU_SIZES[s] >= 1023 ? 5 : 31);
            run_mm(&c, (uint64_t) (t * 100 + s));
        }
    }
}

Test(mul_mat, n_over_all_sizes) {
    for (int t = 0; t < 3; t++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            struct mm_case c = mmc(TYPES[t], 32, TU_SIZES[s], TU_SIZES[s] >= 1023 ? 13 : 33);
            run_mm(&c, (uint64_t) (1000 + t * 100 + s));
        }
    }
}

Test(mul_mat, m_over_all_sizes) {
    for (int t = 0; t < 3; t++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            struct mm_case c = mmc(TYPES[t], 33, TU_SIZES[s] >= 1023 ? 12 : 31, TU_SIZES[s]);
            run_mm(&c, (uint64_t) (2000 + t * 100 + s));
        }
    }
}

Test(mul_mat, few_rows_take_the_dot_path) {
    /* matrix-vector products and thin matrices on either side */
    const int64_t shapes[][3] = { { 4097, 33, 1 }, { 1023, 64, 2 }, { 33, 31, 3 }, { 1023, 1, 40 },
                                  { 32, 7, 100 }, { 31, 2, 2 }, { 1, 1, 1 }, { 4097, 3, 1 } };
    for (int t = 0; t < 3; t++) {
        for (int k = 0; k < 8; k++) {
            struct mm_case c = mmc(TYPES[t], shapes[k][0], shapes[k][1], shapes[k][2]);
            run_mm(&c, (uint64_t) (3000 + t * 100 + k));
            c.n_threads = 2;
            run_mm(&c, (uint64_t) (3050 + t * 100 + k));
        }
    }
}

Test(mul_mat, several_blocks_in_every_dim) {
    /* K spans 3 k-blocks (KC 512), N several a-panels (one partial), M 2 b-blocks (MC 528, one partial) */
    struct mm_case c = mmc(GGML_TYPE_F32, 1100, 45, 600);
    c.n_threads = 1; /* one unit holds all of M */
    run_mm(&c, 4000);
    c = mmc(GGML_TYPE_F16, 513, 70, 197);
    c.n_threads = 3;
    run_mm(&c, 4001);
}

Test(mul_mat, broadcast_over_dims_2_and_3) {
    for (int t = 0; t < 3; t++) {
        struct mm_case c = mmc(TYPES[t], 33, 31, 12);
        c.a2 = 2; c.a3 = 3; c.b2 = 4; c.b3 = 6;
        run_mm(&c, (uint64_t) (5000 + t));
        c = mmc(TYPES[t], 32, 40, 2);
        c.a2 = 1; c.a3 = 1; c.b2 = 3; c.b3 = 2;
        c.n_threads = 2;
        run_mm(&c, (uint64_t) (5010 + t));
        c = mmc(TYPES[t], 16, 5, 9);
        c.a2 = 3; c.a3 = 2; c.b2 = 3; c.b3 = 2;
        run_mm(&c, (uint64_t) (5020 + t));
    }
}

Test(mul_mat, attention_k_times_q_with_permuted_views) {
    /* KQ = mul_mat(K, Q): K [head_dim, n_kv, n_head_kv], Q [head_dim, n_tokens, n_head], both
     * permuted from token-major storage; grouped-query heads broadcast over dim 2 */
    for (int t = 0; t < 2; t++) {
        struct mm_case c = mmc(TYPES[t], 64, 33, 7);
        c.a2 = 2; c.b2 = 8;
        c.la = PERMUTED_HEADS;
        c.lb = PERMUTED_HEADS;
        run_mm(&c, (uint64_t) (6000 + t));
        c.M = 1; /* one new token: the dot path */
        c.n_threads = 2;
        run_mm(&c, (uint64_t) (6010 + t));
    }
}

Test(mul_mat, transposed_view_b_and_strided_a) {
    for (int t = 0; t < 3; t++) {
        struct mm_case c = mmc(TYPES[t], 31, 33, 20);
        c.lb = B_TRANSPOSED;
        run_mm(&c, (uint64_t) (7000 + t));
        c.M = 2;
        run_mm(&c, (uint64_t) (7010 + t));
        c = mmc(TYPES[t], 33, 40, 13);
        c.a2 = 3; c.b2 = 3;
        c.la = A_STRIDED_K;
        c.lb = B_TRANSPOSED;
        c.n_threads = 2;
        run_mm(&c, (uint64_t) (7020 + t));
        c.N = 5;
        run_mm(&c, (uint64_t) (7030 + t));
    }
}

Test(mul_mat, threads_split_output_blocks) {
    for (int t = 0; t < 3; t++) {
        for (int nt = 1; nt <= 3; nt++) {
            struct mm_case c = mmc(TYPES[t], 64, 97, 50);
            c.n_threads = nt;
            run_mm(&c, (uint64_t) (8000 + t * 10 + nt));
            c = mmc(TYPES[t], 40, 32, 12); /* a single micro-tile: some threads get nothing */
            c.n_threads = nt;
            run_mm(&c, (uint64_t) (8100 + t * 10 + nt));
        }
    }
}

Test(mul_mat, every_kernel_variant_agrees) {
    const char * variants[] = { "portable", "avx2", "avx512" };
    for (int v = 0; v < 3; v++) {
        cr_assert_eq(setenv("GGMLX_MATMUL_KERNEL", variants[v], 1), 0);
        for (int t = 0; t < 3; t++) {
            struct mm_case c = mmc(TYPES[t], 300, 70, 29);
            c.n_threads = 2;
            run_mm(&c, (uint64_t) (9000 + v * 10 + t));
            c = mmc(TYPES[t], 257, 5, 33); /* dot path with conversions */
            run_mm(&c, (uint64_t) (9100 + v * 10 + t));
            c = mmc(TYPES[t], 1023, 64, 1);
            run_mm(&c, (uint64_t) (9200 + v * 10 + t));
        }
    }
    unsetenv("GGMLX_MATMUL_KERNEL");
}

Test(mul_mat, empty_dims_compute_nothing) {
    const int64_t shapes[][3] = { { 16, 0, 5 }, { 16, 40, 0 }, { 16, 0, 0 }, { 16, 0, 2 } };
    for (int k = 0; k < 4; k++) {
        struct mm_case c = mmc(GGML_TYPE_F16, shapes[k][0], shapes[k][1], shapes[k][2]);
        c.n_threads = 2;
        run_mm(&c, (uint64_t) (9500 + k));
    }
    struct mm_case c = mmc(GGML_TYPE_F32, 16, 40, 12);
    c.b2 = 0;
    run_mm(&c, 9510);
}

Test(mul_mat, set_prec_records_precision) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    struct ggml_tensor * r = ggml_mul_mat(ctx, a, b);
    cr_assert_not_null(r);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), GGML_PREC_DEFAULT);
    ggml_mul_mat_set_prec(r, GGML_PREC_F32);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), GGML_PREC_F32);

    /* not a MUL_MAT: error recorded, tensor untouched */
    struct ggml_tensor * s = ggml_add(ctx, b, b);
    cr_assert_not_null(s);
    int32_t before[GGML_MAX_OP_PARAMS / sizeof(int32_t)];
    memcpy(before, s->op_params, sizeof before);
    ggml_mul_mat_set_prec(s, GGML_PREC_F32);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_mul_mat_set_prec"));
    cr_assert_eq(memcmp(before, s->op_params, sizeof before), 0);
    cr_assert_eq(s->op, GGML_OP_ADD);

    ggml_mul_mat_set_prec(NULL, GGML_PREC_F32);
    cr_assert_not_null(ggmlx_last_error());

    ggml_mul_mat_set_prec(r, (enum ggml_prec) 3);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), GGML_PREC_F32);
    ggml_free(ctx);
}

Test(mul_mat, rejects_null_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    to_expect_rejected(ctx, ggml_mul_mat(ctx, a, NULL), "ggml_mul_mat");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    to_expect_rejected(ctx, ggml_mul_mat(ctx, NULL, a), "ggml_mul_mat");
    ggml_free(ctx);
    cr_assert_null(ggml_mul_mat(NULL, NULL, NULL));
    cr_assert_not_null(ggmlx_last_error());
}

Test(mul_mat, rejects_bad_types) {
    const enum ggml_type bad_a[] = { GGML_TYPE_I32, GGML_TYPE_I16, GGML_TYPE_F64 };
    for (int k = 0; k < 3; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, bad_a[k], 32, 4);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 3);
        to_expect_rejected(ctx, ggml_mul_mat(ctx, a, b), "ggml_mul_mat");
        ggml_free(ctx);
    }
    const enum ggml_type bad_b[] = { GGML_TYPE_I32, GGML_TYPE_Q8_0 };
    for (int k = 0; k < 2; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 32, 4);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, bad_b[k], 32, 3);
        to_expect_rejected(ctx, ggml_mul_mat(ctx, a, b), "ggml_mul_mat");
        ggml_free(ctx);
    }
}

/* upstream's constructor takes an F16 b (test-backend-ops builds it); the CPU computes F32 b only */
Test(mul_mat, builds_a_16_bit_b_the_cpu_then_refuses) {
    const enum ggml_type tb[] = { GGML_TYPE_F16, GGML_TYPE_BF16 };
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    for (int k = 0; k < 2; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 32, 4);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, tb[k], 32, 3);
        struct ggml_tensor * r = ggml_mul_mat(ctx, a, b);
        cr_assert_not_null(r, "%s", ggmlx_last_error());
        cr_assert(r->type == GGML_TYPE_F32 && r->ne[0] == 4 && r->ne[1] == 3);
        cr_assert(!ggml_backend_supports_op(cpu, r), "the CPU claims mul_mat with a %s b", ggml_type_name(tb[k]));
        ggml_free(ctx);
    }
    ggml_backend_free(cpu);
}

Test(mul_mat, rejects_shapes_that_do_not_fit) {
    const int64_t bad_b[][4] = {
        { 7, 3, 2, 3 },  /* K differs */
        { 8, 3, 3, 3 },  /* 3 is not a multiple of a's 2 */
        { 8, 3, 2, 4 },  /* 4 is not a multiple of a's 3 */
        { 8, 3, 1, 3 },  /* b's dim 2 smaller than a's */
    };
    for (int k = 0; k < 4; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 2, 3);
        struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad_b[k][0], bad_b[k][1], bad_b[k][2], bad_b[k][3]);
        to_expect_rejected(ctx, ggml_mul_mat(ctx, a, b), "ggml_mul_mat");
        ggml_free(ctx);
    }
}

Test(mul_mat, rejects_transposed_a) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * base = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * a = ggml_transpose(ctx, base); /* [8, 4] with nb0 > nb1 */
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    cr_assert_not_null(a);
    to_expect_rejected(ctx, ggml_mul_mat(ctx, a, b), "ggml_mul_mat");
    ggml_free(ctx);
}

Test(mul_mat, failed_context_rejects_later_calls) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    cr_assert_null(ggml_mul_mat(ctx, a, NULL));
    cr_assert_null(ggml_mul_mat(ctx, a, b));
    cr_assert_not_null(ggmlx_last_error());
    ggml_free(ctx);
}
