/*
 * test-ops-binary.c -- ADD, SUB, MUL, DIV against a double reference: every float type for each
 * operand, contiguous and transposed/permuted operands, broadcasting, in-place, and rejection of
 * bad arguments.
 */
#include "test-ops-common.h"

typedef struct ggml_tensor * (*binary_ctor)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);

struct binop {
    const char * name;
    binary_ctor  make;
    binary_ctor  make_inplace;
    char         sym;
};

static const struct binop OPS[] = {
    { "ggml_add", ggml_add, ggml_add_inplace, '+' },
    { "ggml_sub", ggml_sub, ggml_sub_inplace, '-' },
    { "ggml_mul", ggml_mul, ggml_mul_inplace, '*' },
    { "ggml_div", ggml_div, ggml_div_inplace, '/' },
};
#define N_OPS ((int) (sizeof(OPS) / sizeof(OPS[0])))

static const enum ggml_type FTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

static double ref_apply(char sym, double x, double y) {
    switch (sym) {
    case '+': return x + y;
    case '-': return x - y;
    case '*': return x * y;
    default:  return x / y;
    }
}

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_operand(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/*
 * One case: a of shape ne_a and b of shape ne_b (broadcast), both in the given layouts; checks the
 * result against the double reference of the values actually stored in a and b.
 */
static void run_case(const struct binop * op, enum ggml_type ta, enum ggml_type tb, const int64_t ne_a[4],
                     const int64_t ne_b[4], enum layout la, enum layout lb, bool inplace, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_operand(&e, la, ta, ne_a);
    struct ggml_tensor * b = make_operand(&e, lb, tb, ne_b);
    tu_fill(a, &rng, -2.0f, 2.0f);
    if (op->sym == '/') {
        tu_fill(b, &rng, 0.5f, 2.0f); /* keep quotients well conditioned */
    } else {
        tu_fill(b, &rng, -2.0f, 2.0f);
    }
    double * va = to_values(a);
    double * vb = to_values(b);

    struct ggml_tensor * r = inplace ? op->make_inplace(e.ctx, a, b) : op->make(e.ctx, a, b);
    cr_assert_not_null(r, "%s: %s", op->name, ggmlx_last_error());
    cr_assert_eq(r->type, ta);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne_a[d]);
    }
    if (inplace) {
        cr_assert_eq(r->data, a->data, "in-place result must share a's memory");
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);

    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const double x = va[to_index(a, i0, i1, i2, i3)];
        const double y = vb[to_index(b, i0 % ne_b[0], i1 % ne_b[1], i2 % ne_b[2], i3 % ne_b[3])];
        want[to_index(r, i0, i1, i2, i3)] = ref_apply(op->sym, x, y);
    }
    char what[160];
    snprintf(what, sizeof what, "%s%s %s/%s a[%lld,%lld,%lld,%lld] b[%lld,%lld,%lld,%lld] layouts %d/%d threads %d",
             op->name, inplace ? "_inplace" : "", ggml_type_name(ta), ggml_type_name(tb), (long long) ne_a[0],
             (long long) ne_a[1], (long long) ne_a[2], (long long) ne_a[3], (long long) ne_b[0], (long long) ne_b[1],
             (long long) ne_b[2], (long long) ne_b[3], (int) la, (int) lb, n_threads);
    /* float arithmetic, then rounding to the result type */
    const double tol = tu_tol(ta) > 1e-5 ? tu_tol(ta) : 1e-6;
    to_check(r, want, tol, what);
    if (!inplace) {
        to_check(a, va, 0.0, "input a must be unchanged");
    }
    to_check(b, vb, 0.0, "input b must be unchanged");
    free(want);
    free(va);
    free(vb);
    to_end(&e);
}

static int64_t rows_for(int64_t ne0) {
    return ne0 >= 1023 ? 2 : 3; /* keeps the 4097 cases small */
}

Test(binary, same_shape_f32_all_sizes) {
    for (int o = 0; o < N_OPS; o++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], rows_for(TU_SIZES[s]), 2, 1 };
            run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne, ne, CONTIG, CONTIG, false, 1, (uint64_t) (o * 100 + s));
        }
    }
}

Test(binary, every_type_combination) {
    for (int o = 0; o < N_OPS; o++) {
        for (int ia = 0; ia < 3; ia++) {
            for (int ib = 0; ib < 3; ib++) {
                const int64_t ne[4] = { 33, 3, 2, 1 };
                run_case(&OPS[o], FTYPES[ia], FTYPES[ib], ne, ne, CONTIG, CONTIG, false, 1,
                         (uint64_t) (1000 + o * 10 + ia * 3 + ib));
            }
        }
    }
}

Test(binary, broadcast_row_vector) {
    for (int o = 0; o < N_OPS; o++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne_a[4] = { TU_SIZES[s], rows_for(TU_SIZES[s]), 2, 2 };
            const int64_t ne_b[4] = { TU_SIZES[s], 1, 1, 1 };
            run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne_a, ne_b, CONTIG, CONTIG, false, 1,
                     (uint64_t) (2000 + o * 10 + s));
        }
    }
}

Test(binary, broadcast_scalar_and_partial_dims) {
    const int64_t ne_a[4] = { 32, 6, 4, 2 };
    const int64_t shapes[][4] = { { 1, 1, 1, 1 }, { 1, 6, 1, 2 }, { 32, 3, 2, 1 }, { 16, 2, 4, 1 }, { 1, 1, 4, 1 } };
    for (int o = 0; o < N_OPS; o++) {
        for (int k = 0; k < 5; k++) {
            for (int t = 0; t < 3; t++) {
                run_case(&OPS[o], FTYPES[t], GGML_TYPE_F32, ne_a, shapes[k], CONTIG, CONTIG, false, 1,
                         (uint64_t) (3000 + o * 100 + k * 10 + t));
            }
        }
    }
}

Test(binary, transposed_and_permuted_operands) {
    const int64_t ne[4] = { 31, 33, 2, 3 };
    const int64_t ne_b[4] = { 31, 33, 1, 3 };
    for (int o = 0; o < N_OPS; o++) {
        for (int t = 0; t < 3; t++) {
            run_case(&OPS[o], FTYPES[t], GGML_TYPE_F32, ne, ne, TRANSPOSED, CONTIG, false, 1, (uint64_t) (4000 + o * 10 + t));
            run_case(&OPS[o], GGML_TYPE_F32, FTYPES[t], ne, ne, CONTIG, PERMUTED, false, 1, (uint64_t) (4100 + o * 10 + t));
            run_case(&OPS[o], FTYPES[t], FTYPES[t], ne, ne_b, PERMUTED, TRANSPOSED, false, 1, (uint64_t) (4200 + o * 10 + t));
        }
    }
}

Test(binary, multithreaded_large) {
    const int64_t ne[4] = { 4097, 2, 1, 1 };
    const int64_t ne_b[4] = { 4097, 1, 1, 1 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne, ne_b, CONTIG, CONTIG, false, 4, (uint64_t) (5000 + o));
        run_case(&OPS[o], GGML_TYPE_F16, GGML_TYPE_F32, ne, ne, CONTIG, CONTIG, false, 3, (uint64_t) (5100 + o));
        /* dense F32 of one shape is split by elements, not rows: an odd count over 3 threads */
        const int64_t ne_d[4] = { 1001, 3, 3, 1 };
        run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne_d, ne_d, CONTIG, CONTIG, false, 3, (uint64_t) (5300 + o));
        const int64_t ne_t[4] = { 1023, 7, 1, 1 };
        run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne_t, ne_t, TRANSPOSED, CONTIG, false, 4, (uint64_t) (5200 + o));
    }
}

Test(binary, inplace_writes_into_a) {
    const int64_t ne[4] = { 33, 4, 2, 1 };
    const int64_t ne_b[4] = { 33, 1, 2, 1 };
    for (int o = 0; o < N_OPS; o++) {
        for (int t = 0; t < 3; t++) {
            run_case(&OPS[o], FTYPES[t], GGML_TYPE_F32, ne, ne_b, CONTIG, CONTIG, true, 1, (uint64_t) (6000 + o * 10 + t));
        }
        run_case(&OPS[o], GGML_TYPE_F32, GGML_TYPE_F32, ne, ne_b, TRANSPOSED, CONTIG, true, 2, (uint64_t) (6100 + o));
    }
}

Test(binary, records_op_and_sources) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    const enum ggml_op want[] = { GGML_OP_ADD, GGML_OP_SUB, GGML_OP_MUL, GGML_OP_DIV };
    for (int o = 0; o < N_OPS; o++) {
        struct ggml_tensor * r = OPS[o].make(ctx, a, b);
        cr_assert_not_null(r);
        cr_assert_eq(r->op, want[o]);
        cr_assert_eq(r->src[0], a);
        cr_assert_eq(r->src[1], b);
        cr_assert_null(r->view_src);
        struct ggml_tensor * ri = OPS[o].make_inplace(ctx, a, b);
        cr_assert_not_null(ri);
        cr_assert_eq(ri->op, want[o]);
        cr_assert_eq(ri->view_src, a);
    }
    ggml_free(ctx);
}

Test(binary, rejects_null_arguments) {
    for (int o = 0; o < N_OPS; o++) {
        for (int which = 0; which < 2; which++) {
            struct ggml_context * ctx = to_small_ctx();
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
            struct ggml_tensor * r = which == 0 ? OPS[o].make(ctx, NULL, a) : OPS[o].make(ctx, a, NULL);
            to_expect_rejected(ctx, r, OPS[o].name);
            ggml_free(ctx);
        }
        cr_assert_null(OPS[o].make(NULL, NULL, NULL));
        cr_assert_not_null(ggmlx_last_error());
    }
}

Test(binary, rejects_shapes_that_do_not_broadcast) {
    const int64_t bad[][4] = { { 3, 3, 1, 1 }, { 4, 2, 1, 1 }, { 4, 3, 2, 1 }, { 8, 1, 1, 1 } };
    for (int o = 0; o < N_OPS; o++) {
        for (int k = 0; k < 4; k++) {
            struct ggml_context * ctx = to_small_ctx();
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
            struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad[k][0], bad[k][1], bad[k][2], bad[k][3]);
            to_expect_rejected(ctx, OPS[o].make(ctx, a, b), OPS[o].name);
            ggml_free(ctx);
        }
    }
}

Test(binary, rejects_unsupported_types) {
    for (int o = 0; o < N_OPS; o++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 3);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
        to_expect_rejected(ctx, OPS[o].make(ctx, a, b), OPS[o].name);
        ggml_free(ctx);

        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 3);
        b = ggml_new_tensor_2d(ctx, GGML_TYPE_Q8_0, 32, 3);
        to_expect_rejected(ctx, OPS[o].make_inplace(ctx, a, b), OPS[o].name);
        ggml_free(ctx);
    }
}

Test(binary, failed_context_stays_failed) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 3);
    cr_assert_null(ggml_add(ctx, a, b));
    cr_assert(ggmlx_context_is_failed(ctx));
    /* a valid call on the failed context still fails */
    cr_assert_null(ggml_mul(ctx, a, a));
    cr_assert_not_null(ggmlx_last_error());
    ggml_free(ctx);
}
