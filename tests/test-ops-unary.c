/*
 * test-ops-unary.c -- UNARY (each op ggml_unary accepts), SQR, SQRT, SCALE and GLU against double
 * references: float types, contiguous and permuted inputs, sizes, threads, in-place, op_params
 * layouts, and rejection of bad arguments.
 */
#include "test-ops-elementwise.h"



/* 0.5 x (1 + tanh(y)) as x / (1 + exp(-2y)), which does not cancel for negative x */
static double ref_gelu(double x) {
    const double y = sqrt(2.0 / acos(-1.0)) * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * y));
}

static double ref_gelu_erf(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double ref_gelu_quick(double x) { return x * ref_sigmoid(1.702 * x); }
static double ref_silu(double x) { return x * ref_sigmoid(x); }
static double ref_relu(double x) { return x > 0 ? x : 0.0; }
static double ref_neg(double x) { return -x; }
static double ref_sqr(double x) { return x * x; }

static const struct unary_case UOPS[] = {
    { "ggml_abs",      GGML_UNARY_OP_ABS,      GGML_OP_UNARY, ggml_abs,      ggml_abs_inplace,      fabs,         -4, 4 },
    { "ggml_neg",      GGML_UNARY_OP_NEG,      GGML_OP_UNARY, ggml_neg,      ggml_neg_inplace,      ref_neg,      -4, 4 },
    { "ggml_tanh",     GGML_UNARY_OP_TANH,     GGML_OP_UNARY, ggml_tanh,     ggml_tanh_inplace,     tanh,         -4, 4 },
    { "ggml_relu",     GGML_UNARY_OP_RELU,     GGML_OP_UNARY, ggml_relu,     ggml_relu_inplace,     ref_relu,     -4, 4 },
    { "ggml_sigmoid",  GGML_UNARY_OP_SIGMOID,  GGML_OP_UNARY, ggml_sigmoid,  ggml_sigmoid_inplace,  ref_sigmoid,  -8, 8 },
    { "ggml_gelu",     GGML_UNARY_OP_GELU,     GGML_OP_UNARY, ggml_gelu,     ggml_gelu_inplace,     ref_gelu,     -6, 6 },
    { "ggml_gelu_erf", GGML_UNARY_OP_GELU_ERF, GGML_OP_UNARY, ggml_gelu_erf, ggml_gelu_erf_inplace, ref_gelu_erf, -6, 6 },
    { "ggml_silu",     GGML_UNARY_OP_SILU,     GGML_OP_UNARY, ggml_silu,     ggml_silu_inplace,     ref_silu,     -8, 8 },
    { "ggml_exp",      GGML_UNARY_OP_EXP,      GGML_OP_UNARY, ggml_exp,      ggml_exp_inplace,      exp,          -5, 5 },
    { "ggml_sqr",      GGML_UNARY_OP_COUNT,    GGML_OP_SQR,   ggml_sqr,      ggml_sqr_inplace,      ref_sqr,      -4, 4 },
    { "ggml_sqrt",     GGML_UNARY_OP_COUNT,    GGML_OP_SQRT,  ggml_sqrt,     ggml_sqrt_inplace,     sqrt,          0, 9 },
};
#define N_UOPS ((int) (sizeof(UOPS) / sizeof(UOPS[0])))


Test(unary, every_op_f32_all_sizes) {
    for (int k = 0; k < N_UOPS; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 1 : 3, 2, 1 };
            run_unary_case(&UOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 1, (uint64_t) (k * 100 + s));
        }
    }
}

Test(unary, every_op_f16_bf16) {
    for (int k = 0; k < N_UOPS; k++) {
        for (int t = 1; t < 3; t++) {
            const int64_t ne[4] = { 33, 4, 1, 2 };
            run_unary_case(&UOPS[k], FTYPES[t], ne, CONTIG, 0, 1, (uint64_t) (1000 + k * 10 + t));
        }
    }
}

Test(unary, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 31, 32, 2, 3 };
    for (int k = 0; k < N_UOPS; k++) {
        for (int t = 0; t < 3; t++) {
            run_unary_case(&UOPS[k], FTYPES[t], ne, TRANSPOSED, 0, 1, (uint64_t) (2000 + k * 10 + t));
            run_unary_case(&UOPS[k], FTYPES[t], ne, PERMUTED, 0, 1, (uint64_t) (2100 + k * 10 + t));
        }
    }
}

Test(unary, inplace_and_by_enum) {
    const int64_t ne[4] = { 33, 5, 1, 1 };
    for (int k = 0; k < N_UOPS; k++) {
        run_unary_case(&UOPS[k], GGML_TYPE_F32, ne, CONTIG, 1, 1, (uint64_t) (3000 + k));
        run_unary_case(&UOPS[k], GGML_TYPE_BF16, ne, TRANSPOSED, 1, 1, (uint64_t) (3100 + k));
        if (UOPS[k].op == GGML_OP_UNARY) {
            run_unary_case(&UOPS[k], GGML_TYPE_F16, ne, CONTIG, 2, 1, (uint64_t) (3200 + k));
            run_unary_case(&UOPS[k], GGML_TYPE_F32, ne, PERMUTED, 3, 1, (uint64_t) (3300 + k));
        }
    }
}

Test(unary, multithreaded_large) {
    const int64_t ne[4] = { 4097, 2, 1, 1 };
    for (int k = 0; k < N_UOPS; k++) {
        run_unary_case(&UOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 4, (uint64_t) (4000 + k));
        run_unary_case(&UOPS[k], GGML_TYPE_F16, ne, CONTIG, 0, 3, (uint64_t) (4100 + k));
    }
}

Test(unary, special_values) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 6, 1, 1, 1);
    const float in[6] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 100.0f };
    memcpy(a->data, in, sizeof in);
    struct ggml_tensor * ra = to_alloc(&e, ggml_relu(e.ctx, a));
    struct ggml_tensor * rs = to_alloc(&e, ggml_sigmoid(e.ctx, a));
    struct ggml_tensor * rt = to_alloc(&e, ggml_tanh(e.ctx, a));
    struct ggml_tensor * re = to_alloc(&e, ggml_exp(e.ctx, a));
    struct ggml_tensor * rq = to_alloc(&e, ggml_sqrt(e.ctx, a));
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    ggml_build_forward_expand(gf, ra);
    ggml_build_forward_expand(gf, rs);
    ggml_build_forward_expand(gf, rt);
    ggml_build_forward_expand(gf, re);
    ggml_build_forward_expand(gf, rq);
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 1), GGML_STATUS_SUCCESS);
    const float * r = (const float *) ra->data;
    cr_assert(r[0] == 0.0f && r[2] == INFINITY && r[3] == 0.0f && r[5] == 100.0f);
    const float * s = (const float *) rs->data;
    cr_assert(s[0] == 0.5f && s[2] == 1.0f && s[3] == 0.0f && isnan(s[4]) && s[5] == 1.0f);
    const float * t = (const float *) rt->data;
    cr_assert(t[2] == 1.0f && t[3] == -1.0f && isnan(t[4]));
    const float * x = (const float *) re->data;
    cr_assert(x[0] == 1.0f && x[2] == INFINITY && x[3] == 0.0f && x[5] == INFINITY);
    const float * q = (const float *) rq->data;
    cr_assert(q[0] == 0.0f && q[2] == INFINITY && isnan(q[3]));
    to_end(&e);
}

/* ---- scale --------------------------------------------------------------------------------- */

static void run_scale(enum ggml_type type, const int64_t ne[4], enum layout l, bool inplace, float s, int n_threads,
                      uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, type, ne);
    tu_fill(a, &rng, -3.0f, 3.0f);
    double * va = to_values(a);
    struct ggml_tensor * r = inplace ? ggml_scale_inplace(e.ctx, a, s) : ggml_scale(e.ctx, a, s);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_SCALE);
    float p[2];
    memcpy(p, r->op_params, sizeof p);
    cr_assert(p[0] == s && p[1] == 0.0f, "op_params must be {scale, bias 0}");
    if (!inplace) {
        to_alloc(&e, r);
    } else {
        cr_assert_eq(r->data, a->data);
    }
    to_compute(&e, r, n_threads);
    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = va[i] * (double) s;
    }
    to_check(r, want, tol_for(type), "ggml_scale");
    free(want);
    free(va);
    to_end(&e);
}

Test(scale, all_sizes_types_layouts) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 2 : 3, 1, 1 };
        run_scale(GGML_TYPE_F32, ne, CONTIG, false, 0.125f, s == TU_N_SIZES - 1 ? 4 : 1, (uint64_t) s);
    }
    const int64_t ne[4] = { 32, 33, 2, 1 };
    for (int t = 0; t < 3; t++) {
        run_scale(FTYPES[t], ne, CONTIG, false, -1.5f, 1, (uint64_t) (100 + t));
        run_scale(FTYPES[t], ne, TRANSPOSED, false, 3.0f, 1, (uint64_t) (110 + t));
        run_scale(FTYPES[t], ne, PERMUTED, true, 0.5f, 2, (uint64_t) (120 + t));
        run_scale(FTYPES[t], ne, CONTIG, true, 0.0f, 1, (uint64_t) (130 + t));
    }
}

Test(scale, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_scale(ctx, NULL, 2.0f), "ggml_scale");
    ggml_free(ctx);
    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 8);
    to_expect_rejected(ctx, ggml_scale_inplace(ctx, a, 2.0f), "ggml_scale_inplace");
    ggml_free(ctx);
}

/* ---- bad input for the unary family --------------------------------------------------------- */

Test(unary, rejects_null_input) {
    for (int k = 0; k < N_UOPS; k++) {
        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, UOPS[k].make(ctx, NULL), UOPS[k].name);
        ggml_free(ctx);
        cr_assert_null(UOPS[k].make_inplace(NULL, NULL));
        cr_assert_not_null(ggmlx_last_error());
    }
}

Test(unary, rejects_non_float_types) {
    const enum ggml_type bad[] = { GGML_TYPE_I32, GGML_TYPE_Q8_0, GGML_TYPE_I8 };
    for (int k = 0; k < N_UOPS; k++) {
        for (int t = 0; t < 3; t++) {
            struct ggml_context * ctx = to_small_ctx();
            struct ggml_tensor * a = ggml_new_tensor_1d(ctx, bad[t], 64);
            to_expect_rejected(ctx, UOPS[k].make(ctx, a), UOPS[k].name);
            ggml_free(ctx);
        }
    }
}

Test(unary, rejects_unimplemented_unary_ops) {
    /* XIELU needs its parameters: only ggml_xielu makes it */
    const enum ggml_unary_op missing[] = { GGML_UNARY_OP_XIELU, GGML_UNARY_OP_COUNT, (enum ggml_unary_op) -1 };
    for (size_t k = 0; k < sizeof missing / sizeof missing[0]; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
        to_expect_rejected(ctx, ggml_unary(ctx, a, missing[k]), "ggml_unary");
        cr_assert_not_null(strstr(ggmlx_last_error(), "not implemented"), "%s", ggmlx_last_error());
        ggml_free(ctx);
    }
}

/* a graph edited (or made by a newer ggml) to hold an op this build lacks fails at compute time */
Test(unary, unknown_op_in_graph_fails_compute) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 8, 2, 1, 1);
    memset(a->data, 0, ggml_nbytes(a));
    struct ggml_tensor * r = to_alloc(&e, ggml_relu(e.ctx, a));
    r->op_params[0] = GGML_UNARY_OP_COUNT;
    cr_assert_eq(tu_compute(e.ctx, r, 1), GGML_STATUS_FAILED);
    struct ggml_tensor * g = to_alloc(&e, ggml_swiglu(e.ctx, a));
    g->op_params[0] = GGML_GLU_OP_COUNT;
    cr_assert_eq(tu_compute(e.ctx, g, 1), GGML_STATUS_FAILED);
    to_end(&e);
}

Test(unary, failed_context_stays_failed) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    cr_assert_null(ggml_relu(ctx, NULL));
    cr_assert_null(ggml_relu(ctx, a));
    cr_assert(ggmlx_context_is_failed(ctx));
    ggml_free(ctx);
}

/* ---- GLU ----------------------------------------------------------------------------------- */

struct gluop {
    enum ggml_glu_op op;
    double         (*act)(double);
};

static const struct gluop GLUS[] = {
    { GGML_GLU_OP_REGLU,       ref_relu },
    { GGML_GLU_OP_GEGLU,       ref_gelu },
    { GGML_GLU_OP_SWIGLU,      ref_silu },
    { GGML_GLU_OP_GEGLU_ERF,   ref_gelu_erf },
    { GGML_GLU_OP_GEGLU_QUICK, ref_gelu_quick },
};
#define N_GLUS ((int) (sizeof(GLUS) / sizeof(GLUS[0])))

/*
 * mode 0: ggml_glu(a, op, swapped); 1: ggml_glu_split(a, b, op); 2: the named helper (geglu /
 * swiglu, swapped or split) where one exists.
 */
static void run_glu(const struct gluop * g, enum ggml_type type, int64_t nc, int64_t nr, enum layout l, int mode,
                    bool swapped, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    const bool split = mode == 1 || (mode == 2 && swapped == false && (salt & 1));
    const int64_t ne_a[4] = { split ? nc : 2 * nc, nr, 2, 1 };
    struct ggml_tensor * a = make_input(&e, l, type, ne_a);
    struct ggml_tensor * b = split ? make_input(&e, l, type, ne_a) : NULL;
    tu_fill(a, &rng, -4.0f, 4.0f);
    if (b) {
        tu_fill(b, &rng, -4.0f, 4.0f);
    }
    double * va = to_values(a);
    double * vb = b ? to_values(b) : NULL;

    struct ggml_tensor * r = NULL;
    if (mode == 0) {
        r = ggml_glu(e.ctx, a, g->op, swapped);
    } else if (mode == 1) {
        r = ggml_glu_split(e.ctx, a, b, g->op);
    } else if (g->op == GGML_GLU_OP_GEGLU) {
        r = split ? ggml_geglu_split(e.ctx, a, b) : swapped ? ggml_geglu_swapped(e.ctx, a) : ggml_geglu(e.ctx, a);
    } else {
        r = split ? ggml_swiglu_split(e.ctx, a, b) : swapped ? ggml_swiglu_swapped(e.ctx, a) : ggml_swiglu(e.ctx, a);
    }
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_GLU);
    cr_assert_eq(r->op_params[0], (int32_t) g->op);
    cr_assert_eq(r->op_params[1], swapped && !split ? 1 : 0);
    cr_assert_eq(ggml_get_glu_op(r), g->op);
    cr_assert_eq(r->ne[0], nc);
    cr_assert_eq(r->ne[1], nr);
    cr_assert_eq(r->src[1], b);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);

    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        double x, gate;
        if (split) {
            x    = va[to_index(a, i0, i1, i2, i3)];
            gate = vb[to_index(b, i0, i1, i2, i3)];
        } else {
            const double lo = va[to_index(a, i0, i1, i2, i3)];
            const double hi = va[to_index(a, i0 + nc, i1, i2, i3)];
            x    = swapped ? hi : lo;
            gate = swapped ? lo : hi;
        }
        want[to_index(r, i0, i1, i2, i3)] = g->act(x) * gate;
    }
    char what[128];
    snprintf(what, sizeof what, "glu op %d %s nc %lld layout %d mode %d swapped %d", (int) g->op, ggml_type_name(type),
             (long long) nc, (int) l, mode, (int) swapped);
    /* |act(x) * g| reaches 16 here; the tolerance is relative to that */
    to_check(r, want, type == GGML_TYPE_F32 ? 4e-6 : tu_tol(type), what);
    free(want);
    free(va);
    free(vb);
    to_end(&e);
}

Test(glu, every_op_f32_all_sizes) {
    for (int k = 0; k < N_GLUS; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t nr = TU_SIZES[s] >= 1023 ? 1 : 3;
            run_glu(&GLUS[k], GGML_TYPE_F32, TU_SIZES[s], nr, CONTIG, 0, s % 2 == 1, 1, (uint64_t) (k * 100 + s));
        }
    }
}

Test(glu, swapped_split_types_and_layouts) {
    for (int k = 0; k < N_GLUS; k++) {
        for (int t = 0; t < 3; t++) {
            run_glu(&GLUS[k], FTYPES[t], 32, 3, CONTIG, 0, false, 1, (uint64_t) (1000 + k * 10 + t));
            run_glu(&GLUS[k], FTYPES[t], 32, 3, CONTIG, 0, true, 1, (uint64_t) (1100 + k * 10 + t));
            run_glu(&GLUS[k], FTYPES[t], 33, 4, CONTIG, 1, false, 1, (uint64_t) (1200 + k * 10 + t));
            run_glu(&GLUS[k], FTYPES[t], 31, 33, TRANSPOSED, 0, true, 1, (uint64_t) (1300 + k * 10 + t));
            run_glu(&GLUS[k], FTYPES[t], 31, 5, PERMUTED, 1, false, 1, (uint64_t) (1400 + k * 10 + t));
        }
    }
}

Test(glu, named_helpers) {
    /* GLUS[1] is GEGLU, GLUS[2] SWIGLU; odd salts pick the split form */
    for (int k = 1; k <= 2; k++) {
        run_glu(&GLUS[k], GGML_TYPE_F32, 33, 3, CONTIG, 2, false, 1, 2000);
        run_glu(&GLUS[k], GGML_TYPE_F32, 33, 3, CONTIG, 2, true, 1, 2002);
        run_glu(&GLUS[k], GGML_TYPE_F16, 33, 3, CONTIG, 2, false, 1, 2001);
    }
}

Test(glu, multithreaded_large) {
    for (int k = 0; k < N_GLUS; k++) {
        run_glu(&GLUS[k], GGML_TYPE_F32, 4097, 2, CONTIG, 0, false, 4, (uint64_t) (3000 + k));
        run_glu(&GLUS[k], GGML_TYPE_F32, 4097, 1, CONTIG, 1, false, 3, (uint64_t) (3100 + k));
    }
}

Test(glu, rejects_bad_arguments) {
    struct ggml_context * ctx;
    const struct {
        const char * name;
        struct ggml_tensor * (*make)(struct ggml_context *, struct ggml_tensor *);
    } one[] = { { "ggml_geglu", ggml_geglu }, { "ggml_geglu_swapped", ggml_geglu_swapped },
                { "ggml_swiglu", ggml_swiglu }, { "ggml_swiglu_swapped", ggml_swiglu_swapped } };
    for (int k = 0; k < 4; k++) {
        ctx = to_small_ctx();
        to_expect_rejected(ctx, one[k].make(ctx, NULL), one[k].name);
        ggml_free(ctx);
    }
    const struct {
        const char * name;
        struct ggml_tensor * (*make)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);
    } two[] = { { "ggml_geglu_split", ggml_geglu_split }, { "ggml_swiglu_split", ggml_swiglu_split } };
    for (int k = 0; k < 2; k++) {
        ctx = to_small_ctx();
        struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        to_expect_rejected(ctx, two[k].make(ctx, x, NULL), two[k].name);
        ggml_free(ctx);
        ctx = to_small_ctx();
        x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        to_expect_rejected(ctx, two[k].make(ctx, NULL, x), two[k].name);
        ggml_free(ctx);
    }
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_glu(ctx, NULL, GGML_GLU_OP_REGLU, true), "ggml_glu");
    ggml_free(ctx);

    /* an odd row is not refused: its last element is left out, as upstream does (test-ops-glu2.c) */
    ctx = to_small_ctx();
    struct ggml_tensor * odd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 2);
    struct ggml_tensor * r   = ggml_geglu(ctx, odd);
    cr_assert(r != NULL && r->ne[0] == 3, "%s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    to_expect_rejected(ctx, ggml_swiglu_split(ctx, a, b), "ggml_swiglu_split");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    b = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 2);
    to_expect_rejected(ctx, ggml_geglu_split(ctx, a, b), "ggml_geglu_split");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    to_expect_rejected(ctx, ggml_glu_split(ctx, a, NULL, GGML_GLU_OP_SWIGLU), "ggml_glu_split");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2);
    to_expect_rejected(ctx, ggml_swiglu_swapped(ctx, a), "ggml_swiglu_swapped");
    ggml_free(ctx);

    const enum ggml_glu_op bad_ops[] = { GGML_GLU_OP_SWIGLU_OAI, GGML_GLU_OP_COUNT, (enum ggml_glu_op) 99 };
    for (int k = 0; k < 3; k++) {
        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        to_expect_rejected(ctx, ggml_glu(ctx, a, bad_ops[k], false), "ggml_glu");
        ggml_free(ctx);
    }
}
