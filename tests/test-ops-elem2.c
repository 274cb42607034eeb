/*
 * test-ops-elem2.c -- the rest of the unary ops (sgn, step, elu, gelu_quick, hardswish,
 * hardsigmoid, expm1, softplus, floor, ceil, round, trunc) and LOG, SIN, COS against double
 * references: float types, sizes, transposed and permuted inputs, threads, in-place, by enum,
 * special values, and rejection of bad arguments.
 */
#include "test-ops-common.h"

#include "ggml-backend.h"

typedef struct ggml_tensor * (*unary_ctor)(struct ggml_context *, struct ggml_tensor *);

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double ref_step(double x) { return x > 0 ? 1.0 : 0.0; }
static double ref_elu(double x) { return x > 0 ? x : expm1(x); }
static double ref_gelu_quick(double x) { return x * ref_sigmoid(1.702 * x); }
static double ref_hardsigmoid(double x) { return fmin(1.0, fmax(0.0, (x + 3.0) / 6.0)); }
static double ref_hardswish(double x) { return x * ref_hardsigmoid(x); }
static double ref_softplus(double x) { return log1p(exp(x)); }

struct eop {
    const char *       name;
    enum ggml_unary_op uop;          /* GGML_UNARY_OP_COUNT: not a GGML_OP_UNARY op */
    enum ggml_op       op;
    unary_ctor         make;
    unary_ctor         make_inplace; /* NULL where upstream has none */
    double           (*ref)(double);
    float              lo, hi;       /* input range */
};

static const struct eop EOPS[] = {
    { "ggml_sgn",         GGML_UNARY_OP_SGN,         GGML_OP_UNARY, ggml_sgn,         ggml_sgn_inplace,         ref_sgn,         -4, 4 },
    { "ggml_step",        GGML_UNARY_OP_STEP,        GGML_OP_UNARY, ggml_step,        ggml_step_inplace,        ref_step,        -4, 4 },
    { "ggml_elu",         GGML_UNARY_OP_ELU,         GGML_OP_UNARY, ggml_elu,         ggml_elu_inplace,         ref_elu,         -6, 4 },
    { "ggml_gelu_quick",  GGML_UNARY_OP_GELU_QUICK,  GGML_OP_UNARY, ggml_gelu_quick,  ggml_gelu_quick_inplace,  ref_gelu_quick,  -6, 6 },
    { "ggml_hardswish",   GGML_UNARY_OP_HARDSWISH,   GGML_OP_UNARY, ggml_hardswish,   NULL,                     ref_hardswish,   -5, 5 },
    { "ggml_hardsigmoid", GGML_UNARY_OP_HARDSIGMOID, GGML_OP_UNARY, ggml_hardsigmoid, NULL,                     ref_hardsigmoid, -5, 5 },
    { "ggml_expm1",       GGML_UNARY_OP_EXPM1,       GGML_OP_UNARY, ggml_expm1,       ggml_expm1_inplace,       expm1,           -4, 4 },
    { "ggml_softplus",    GGML_UNARY_OP_SOFTPLUS,    GGML_OP_UNARY, ggml_softplus,    ggml_softplus_inplace,    ref_softplus,   -30, 30 },
    { "ggml_floor",       GGML_UNARY_OP_FLOOR,       GGML_OP_UNARY, ggml_floor,       ggml_floor_inplace,       floor,           -5, 5 },
    { "ggml_ceil",        GGML_UNARY_OP_CEIL,        GGML_OP_UNARY, ggml_ceil,        ggml_ceil_inplace,        ceil,            -5, 5 },
    { "ggml_round",       GGML_UNARY_OP_ROUND,       GGML_OP_UNARY, ggml_round,       ggml_round_inplace,       round,           -5, 5 },
    { "ggml_trunc",       GGML_UNARY_OP_TRUNC,       GGML_OP_UNARY, ggml_trunc,       ggml_trunc_inplace,       trunc,           -5, 5 },
    { "ggml_log",         GGML_UNARY_OP_COUNT,       GGML_OP_LOG,   ggml_log,         ggml_log_inplace,         log,          0.01f, 50 },
    { "ggml_sin",         GGML_UNARY_OP_COUNT,       GGML_OP_SIN,   ggml_sin,         ggml_sin_inplace,         sin,            -10, 10 },
    { "ggml_cos",         GGML_UNARY_OP_COUNT,       GGML_OP_COS,   ggml_cos,         ggml_cos_inplace,         cos,            -10, 10 },
};
#define N_EOPS ((int) (sizeof(EOPS) / sizeof(EOPS[0])))

static const enum ggml_type FTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_input(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* the kernel rounds its float result to the type; F32 allows a few ulps of the function */
static double tol_for(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? 2e-6 : tu_tol(t);
}

/* how: 0 ggml_<op>, 1 ggml_<op>_inplace, 2 ggml_unary, 3 ggml_unary_inplace */
static void run_eop(const struct eop * u, enum ggml_type type, const int64_t ne[4], enum layout l, int how,
                    int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, type, ne);
    tu_fill(a, &rng, u->lo, u->hi);
    double * va = to_values(a);

    struct ggml_tensor * r;
    if (how == 2 || how == 3) {
        r = how == 2 ? ggml_unary(e.ctx, a, u->uop) : ggml_unary_inplace(e.ctx, a, u->uop);
    } else {
        r = how == 0 ? u->make(e.ctx, a) : u->make_inplace(e.ctx, a);
    }
    cr_assert_not_null(r, "%s: %s", u->name, ggmlx_last_error());
    cr_assert_eq(r->op, u->op, "%s: op %s", u->name, ggml_op_name(r->op));
    cr_assert_eq(r->type, type);
    cr_assert_eq(r->src[0], a);
    if (u->op == GGML_OP_UNARY) {
        cr_assert_eq(r->op_params[0], (int32_t) u->uop, "op_params[0] must hold the unary op");
        cr_assert_eq(ggml_get_unary_op(r), u->uop);
    }
    const bool inplace = how == 1 || how == 3;
    if (inplace) {
        cr_assert_eq(r->data, a->data);
        cr_assert_eq(r->view_src, a->view_src != NULL ? a->view_src : a);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);

    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = u->ref(va[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s [%lld,%lld,%lld,%lld] layout %d how %d threads %d", u->name,
             ggml_type_name(type), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l,
             how, n_threads);
    to_check(r, want, tol_for(type), what);
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

Test(elem2, every_op_f32_all_sizes) {
    for (int k = 0; k < N_EOPS; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 1 : 3, 2, 1 };
            run_eop(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 1, (uint64_t) (k * 100 + s));
        }
    }
}

Test(elem2, every_op_f16_bf16) {
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 1; t < 3; t++) {
            const int64_t ne[4] = { 33, 4, 1, 2 };
            run_eop(&EOPS[k], FTYPES[t], ne, CONTIG, 0, 1, (uint64_t) (1000 + k * 10 + t));
        }
    }
}

Test(elem2, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 31, 32, 2, 3 };
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 0; t < 3; t++) {
            run_eop(&EOPS[k], FTYPES[t], ne, TRANSPOSED, 0, 1, (uint64_t) (2000 + k * 10 + t));
            run_eop(&EOPS[k], FTYPES[t], ne, PERMUTED, 0, 1, (uint64_t) (2100 + k * 10 + t));
        }
    }
}

Test(elem2, inplace_and_by_enum) {
    const int64_t ne[4] = { 33, 5, 1, 1 };
    for (int k = 0; k < N_EOPS; k++) {
        if (EOPS[k].make_inplace != NULL) {
            run_eop(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 1, 1, (uint64_t) (3000 + k));
            run_eop(&EOPS[k], GGML_TYPE_BF16, ne, TRANSPOSED, 1, 1, (uint64_t) (3100 + k));
        }
        if (EOPS[k].op == GGML_OP_UNARY) {
            run_eop(&EOPS[k], GGML_TYPE_F16, ne, CONTIG, 2, 1, (uint64_t) (3200 + k));
            run_eop(&EOPS[k], GGML_TYPE_F32, ne, PERMUTED, 3, 1, (uint64_t) (3300 + k));
        }
    }
}

Test(elem2, multithreaded_large) {
    const int64_t ne[4] = { 4097, 3, 1, 1 };
    for (int k = 0; k < N_EOPS; k++) {
        run_eop(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 4, (uint64_t) (4000 + k));
        run_eop(&EOPS[k], GGML_TYPE_F16, ne, CONTIG, 0, 3, (uint64_t) (4100 + k));
    }
}

/* ---- special values ------------------------------------------------------------------------ */

#define N_SPECIAL 9
static const float SPECIAL[N_SPECIAL] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 2.5f, -2.5f, 100.0f, -100.0f };

/* op applied to SPECIAL in F32, result in out */
static void special_run(unary_ctor make, float out[N_SPECIAL]) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, N_SPECIAL, 1, 1, 1);
    memcpy(a->data, SPECIAL, sizeof SPECIAL);
    struct ggml_tensor * r = to_alloc(&e, make(e.ctx, a));
    to_compute(&e, r, 1);
    memcpy(out, r->data, N_SPECIAL * sizeof(float));
    to_end(&e);
}

/* same value, NaN matching NaN and zeros matching in sign */
static bool same(float got, float want) {
    if (isnan(want)) {
        return isnan(got);
    }
    return got == want && signbit(got) == signbit(want);
}

static void expect_special(const char * name, unary_ctor make, const float want[N_SPECIAL]) {
    float got[N_SPECIAL];
    special_run(make, got);
    for (int i = 0; i < N_SPECIAL; i++) {
        cr_expect(same(got[i], want[i]), "%s(%g): got %g, want %g", name, (double) SPECIAL[i], (double) got[i],
                  (double) want[i]);
    }
}

Test(elem2, special_values_exact_ops) {
    /*                                 0      -0      inf        -inf       nan  2.5   -2.5   100    -100 */
    expect_special("sgn", ggml_sgn, (const float[]) { 0, 0, 1, -1, 0, 1, -1, 1, -1 });
    expect_special("step", ggml_step, (const float[]) { 0, 0, 1, 0, 0, 1, 0, 1, 0 });
    expect_special("floor", ggml_floor, (const float[]) { 0, -0.0f, INFINITY, -INFINITY, NAN, 2, -3, 100, -100 });
    expect_special("ceil", ggml_ceil, (const float[]) { 0, -0.0f, INFINITY, -INFINITY, NAN, 3, -2, 100, -100 });
    /* halfway cases away from zero, as upstream's roundf */
    expect_special("round", ggml_round, (const float[]) { 0, -0.0f, INFINITY, -INFINITY, NAN, 3, -3, 100, -100 });
    expect_special("trunc", ggml_trunc, (const float[]) { 0, -0.0f, INFINITY, -INFINITY, NAN, 2, -2, 100, -100 });
    /* NaN becomes 0 through fminf/fmaxf, as upstream */
    expect_special("hardsigmoid", ggml_hardsigmoid,
                   (const float[]) { 0.5f, 0.5f, 1, 0, 0, 5.5f / 6.0f, 0.5f / 6.0f, 1, 0 });
}

Test(elem2, special_values_tails) {
    float got[N_SPECIAL];
    special_run(ggml_softplus, got);
    cr_expect(got[2] == INFINITY && got[3] == 0.0f && isnan(got[4]) && got[7] == 100.0f, "softplus tails");
    cr_expect(fabs(got[0] - log(2.0)) < 1e-7 && got[8] >= 0.0f && got[8] < 1e-40f, "softplus(0), softplus(-100)");
    special_run(ggml_elu, got);
    cr_expect(got[2] == INFINITY && got[3] == -1.0f && got[8] == -1.0f && got[7] == 100.0f && isnan(got[4]), "elu");
    special_run(ggml_expm1, got);
    cr_expect(got[2] == INFINITY && got[3] == -1.0f && got[0] == 0.0f && got[7] == INFINITY, "expm1");
    special_run(ggml_gelu_quick, got);
    cr_expect(got[2] == INFINITY && got[0] == 0.0f && got[7] == 100.0f && fabsf(got[8]) < 1e-30f, "gelu_quick");
    special_run(ggml_hardswish, got);
    cr_expect(got[2] == INFINITY && got[7] == 100.0f && got[8] == 0.0f && got[0] == 0.0f, "hardswish");
    special_run(ggml_log, got);
    cr_expect(got[0] == -INFINITY && got[1] == -INFINITY && got[2] == INFINITY && isnan(got[3]) && isnan(got[6]),
              "log");
    special_run(ggml_sin, got);
    cr_expect(got[0] == 0.0f && isnan(got[2]) && isnan(got[4]), "sin");
    special_run(ggml_cos, got);
    cr_expect(got[0] == 1.0f && isnan(got[3]), "cos");
}

/* expm1 keeps its relative accuracy near 0, where exp(x) - 1 would cancel */
Test(elem2, expm1_accurate_near_zero) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 4, 1, 1, 1);
    const float in[4] = { 1e-7f, -3e-6f, 1e-20f, 2e-4f };
    memcpy(a->data, in, sizeof in);
    struct ggml_tensor * r = to_alloc(&e, ggml_expm1(e.ctx, a));
    to_compute(&e, r, 1);
    for (int i = 0; i < 4; i++) {
        const double want = expm1((double) in[i]);
        const double got  = ((const float *) r->data)[i];
        cr_expect(fabs(got - want) <= 4e-7 * fabs(want), "expm1(%g): got %.9g want %.9g", (double) in[i], got, want);
    }
    to_end(&e);
}

/* ---- bad input ----------------------------------------------------------------------------- */

Test(elem2, rejects_null_input) {
    for (int k = 0; k < N_EOPS; k++) {
        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, EOPS[k].make(ctx, NULL), EOPS[k].name);
        ggml_free(ctx);
        cr_assert_null(EOPS[k].make(NULL, NULL));
        cr_assert_not_null(strstr(ggmlx_last_error(), "ctx is NULL"), "%s", ggmlx_last_error());
        if (EOPS[k].make_inplace != NULL) {
            char name[64];
            snprintf(name, sizeof name, "%s_inplace", EOPS[k].name);
            ctx = to_small_ctx();
            to_expect_rejected(ctx, EOPS[k].make_inplace(ctx, NULL), name);
            ggml_free(ctx);
        }
    }
}

Test(elem2, rejects_non_float_types) {
    const enum ggml_type bad[] = { GGML_TYPE_I32, GGML_TYPE_Q8_0, GGML_TYPE_I8 };
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 0; t < 3; t++) {
            struct ggml_context * ctx = to_small_ctx();
            struct ggml_tensor * a = ggml_new_tensor_1d(ctx, bad[t], 64);
            to_expect_rejected(ctx, EOPS[k].make(ctx, a), EOPS[k].name);
            ggml_free(ctx);
        }
    }
}

Test(elem2, failed_context_stays_failed) {
    for (int k = 0; k < N_EOPS; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
        cr_assert_null(EOPS[k].make(ctx, NULL));
        cr_assert_null(EOPS[k].make(ctx, a), "%s accepted a failed context", EOPS[k].name);
        cr_assert(ggmlx_context_is_failed(ctx));
        ggml_free(ctx);
    }
}

/* the CPU backend claims every one of them for float types, and none for I32 */
Test(elem2, cpu_supports_op) {
    ggml_backend_t be = ggml_backend_cpu_init();
    cr_assert_not_null(be);
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 0; t < 3; t++) {
            struct ggml_tensor * a = ggml_new_tensor_2d(ctx, FTYPES[t], 8, 2);
            struct ggml_tensor * r = EOPS[k].make(ctx, a);
            cr_assert_not_null(r);
            cr_expect(ggml_backend_supports_op(be, r), "%s %s", EOPS[k].name, ggml_type_name(FTYPES[t]));
        }
    }
    ggml_free(ctx);
    ggml_backend_free(be);
}
