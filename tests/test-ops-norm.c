/*
 * test-ops-norm.c -- NORM, RMS_NORM and L2_NORM against a double reference: every size, contiguous,
 * transposed and permuted inputs, in place, several threads, eps, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

typedef struct ggml_tensor * (*norm_ctor)(struct ggml_context *, struct ggml_tensor *, float);

struct normop {
    const char * name;
    norm_ctor    make;
    norm_ctor    make_inplace;
    int          kind; /* NORM_PLAIN, NORM_RMS, NORM_L2 */
    enum ggml_op op;
};

enum { NORM_PLAIN, NORM_RMS, NORM_L2 };

static const struct normop OPS[] = {
    { "ggml_norm",     ggml_norm,     ggml_norm_inplace,     NORM_PLAIN, GGML_OP_NORM },
    { "ggml_rms_norm", ggml_rms_norm, ggml_rms_norm_inplace, NORM_RMS,   GGML_OP_RMS_NORM },
    { "ggml_l2_norm",  ggml_l2_norm,  ggml_l2_norm_inplace,  NORM_L2,    GGML_OP_L2_NORM },
};
#define N_OPS ((int) (sizeof OPS / sizeof OPS[0]))

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_input(struct to_env * e, enum layout l, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* the reference normalisation of every row of the values v (logical order) of shape ne */
static double * ref_norm(const double * v, const int64_t ne[4], int kind, double eps) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    double * out = (double *) malloc((size_t) (n ? n : 1) * sizeof(double));
    for (int64_t r = 0; r < ne[1] * ne[2] * ne[3]; r++) {
        const double * x = v + r * ne[0];
        double mean = 0.0;
        if (kind == NORM_PLAIN) {
            for (int64_t i = 0; i < ne[0]; i++) {
                mean += x[i];
            }
            mean /= (double) ne[0];
        }
        double sq = 0.0;
        for (int64_t i = 0; i < ne[0]; i++) {
            sq += (x[i] - mean) * (x[i] - mean);
        }
        /* L2: x / max(|x|, eps) as upstream; the others: (x - mean) / sqrt(var + eps) */
        const double scale = kind == NORM_L2 ? 1.0 / fmax(sqrt(sq), eps) : 1.0 / sqrt(sq / (double) ne[0] + eps);
        for (int64_t i = 0; i < ne[0]; i++) {
            out[r * ne[0] + i] = (x[i] - mean) * scale;
        }
    }
    return out;
}

static void run_case(const struct normop * op, const int64_t ne[4], enum layout l, bool inplace, int n_threads,
                     float eps, float lo, float hi, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, ne);
    tu_fill(a, &rng, lo, hi);
    double * va   = to_values(a);
    double * want = ref_norm(va, ne, op->kind, eps);

    struct ggml_tensor * r = inplace ? op->make_inplace(e.ctx, a, eps) : op->make(e.ctx, a, eps);
    cr_assert_not_null(r, "%s: %s", op->name, ggmlx_last_error());
    cr_assert_eq(r->op, op->op);
    cr_assert_eq(r->type, GGML_TYPE_F32);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne[d]);
    }
    cr_assert_eq(ggmlx_get_op_params_f32(r, 0), eps);
    if (inplace) {
        cr_assert_eq(r->data, a->data, "in-place result must share a's memory");
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);

    char what[160];
    snprintf(what, sizeof what, "%s%s [%lld,%lld,%lld,%lld] layout %d threads %d eps %g", op->name,
             inplace ? "_inplace" : "", (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3],
             (int) l, n_threads, (double) eps);
    to_check(r, want, 1e-5, what);
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

static int64_t rows_for(int64_t ne0) {
    return ne0 >= 1023 ? 1 : 3;
}

Test(norm, matches_reference_all_sizes) {
    for (int o = 0; o < N_OPS; o++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], rows_for(TU_SIZES[s]), 2, 1 };
            run_case(&OPS[o], ne, CONTIG, false, 1, 1e-5f, -2.0f, 2.0f, (uint64_t) (o * 100 + s));
        }
    }
}

Test(norm, offset_values_keep_their_variance) {
    /* a large common offset: a float-only mean/variance would lose most digits of the variance */
    const int64_t ne[4] = { 1023, 2, 1, 1 };
    run_case(&OPS[0], ne, CONTIG, false, 1, 1e-6f, 1000.0f, 1001.0f, 150);
}

Test(norm, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 33, 31, 2, 3 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], ne, TRANSPOSED, false, 1, 1e-5f, -1.0f, 3.0f, (uint64_t) (200 + o));
        run_case(&OPS[o], ne, PERMUTED, false, 2, 1e-5f, -1.0f, 3.0f, (uint64_t) (210 + o));
    }
}

Test(norm, multithreaded_rows) {
    const int64_t ne[4] = { 1023, 7, 1, 1 };
    const int64_t ne_big[4] = { 4097, 2, 1, 1 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], ne, CONTIG, false, 2, 1e-5f, -2.0f, 2.0f, (uint64_t) (300 + o));
        run_case(&OPS[o], ne_big, CONTIG, false, 3, 1e-5f, -2.0f, 2.0f, (uint64_t) (310 + o));
    }
}

Test(norm, inplace_writes_into_a) {
    const int64_t ne[4] = { 32, 5, 2, 1 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], ne, CONTIG, true, 1, 1e-5f, -2.0f, 2.0f, (uint64_t) (400 + o));
        run_case(&OPS[o], ne, TRANSPOSED, true, 2, 1e-5f, -2.0f, 2.0f, (uint64_t) (410 + o));
    }
}

Test(norm, eps_is_applied) {
    /* a large eps visibly shrinks the result; with a constant row NORM gives zeros, not NaN */
    const int64_t ne[4] = { 31, 2, 1, 1 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], ne, CONTIG, false, 1, 0.5f, -1.0f, 1.0f, (uint64_t) (500 + o));
    }
    run_case(&OPS[0], ne, CONTIG, false, 1, 1e-5f, 3.0f, 3.0f, 510);
}

Test(norm, single_element_rows) {
    const int64_t ne[4] = { 1, 33, 2, 1 };
    for (int o = 0; o < N_OPS; o++) {
        run_case(&OPS[o], ne, CONTIG, false, 1, 1e-3f, -2.0f, 2.0f, (uint64_t) (600 + o));
    }
}

Test(norm, rejects_null_arguments) {
    for (int o = 0; o < N_OPS; o++) {
        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, OPS[o].make(ctx, NULL, 1e-5f), OPS[o].name);
        ggml_free(ctx);
        ctx = to_small_ctx();
        to_expect_rejected(ctx, OPS[o].make_inplace(ctx, NULL, 1e-5f), OPS[o].name);
        ggml_free(ctx);
        cr_assert_null(OPS[o].make(NULL, NULL, 1e-5f));
        cr_assert_not_null(ggmlx_last_error());
    }
}

Test(norm, rejects_non_f32_input) {
    const enum ggml_type bad[] = { GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int o = 0; o < N_OPS; o++) {
        for (int t = 0; t < 3; t++) {
            struct ggml_context * ctx = to_small_ctx();
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, bad[t], 8, 3);
            to_expect_rejected(ctx, OPS[o].make(ctx, a, 1e-5f), OPS[o].name);
            ggml_free(ctx);
        }
    }
}

Test(norm, rejects_negative_or_nan_eps) {
    for (int o = 0; o < N_OPS; o++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
        to_expect_rejected(ctx, OPS[o].make(ctx, a, -1.0f), OPS[o].name);
        ggml_free(ctx);
        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
        to_expect_rejected(ctx, OPS[o].make_inplace(ctx, a, NAN), OPS[o].name);
        ggml_free(ctx);
    }
}

Test(norm, failed_context_rejects_later_calls) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    cr_assert_null(ggml_norm(ctx, NULL, 1e-5f));
    cr_assert_null(ggml_rms_norm(ctx, a, 1e-5f));
    cr_assert_null(ggml_l2_norm(ctx, a, 1e-5f));
    cr_assert_not_null(ggmlx_last_error());
    ggml_free(ctx);
}

Test(norm, l2_norm_floors_small_norms_at_eps) {
    /* a row of norm far below eps is divided by eps, not by its own norm */
    const int64_t ne[4] = { 33, 3, 1, 1 };
    run_case(&OPS[2], ne, CONTIG, false, 1, 1.0f, -0.01f, 0.01f, 700);
    run_case(&OPS[2], ne, CONTIG, false, 1, 1e-6f, 0.0f, 0.0f, 701); /* zeros stay zeros, no NaN */
}
