/*
 * test-ops-elem2.c -- the rest of the unary ops (sgn, step, elu, gelu_quick, hardswish,
 * hardsigmoid, expm1, softplus, floor, ceil, round, trunc) and LOG, SIN, COS against double
 * references: float types, sizes, transposed and permuted inputs, threads, in-place, by enum,
 * special values, and rejection of bad arguments.
 */
#include "test-ops-elementwise.h"

#include "ggml-backend.h"

static double ref_sgn(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double ref_step(double x) { return x > 0 ? 1.0 : 0.0; }
static double ref_elu(double x) { return x > 0 ? x : expm1(x); }
static double ref_gelu_quick(double x) { return x * ref_sigmoid(1.702 * x); }
static double ref_hardsigmoid(double x) { return fmin(1.0, fmax(0.0, (x + 3.0) / 6.0)); }
static double ref_hardswish(double x) { return x * ref_hardsigmoid(x); }
static double ref_softplus(double x) { return log1p(exp(x)); }

static const struct unary_case EOPS[] = {
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


Test(elem2, every_op_f32_all_sizes) {
    for (int k = 0; k < N_EOPS; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 1 : 3, 2, 1 };
            run_unary_case(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 1, (uint64_t) (k * 100 + s));
        }
    }
}

Test(elem2, every_op_f16_bf16) {
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 1; t < 3; t++) {
            const int64_t ne[4] = { 33, 4, 1, 2 };
            run_unary_case(&EOPS[k], FTYPES[t], ne, CONTIG, 0, 1, (uint64_t) (1000 + k * 10 + t));
        }
    }
}

Test(elem2, transposed_and_permuted_inputs) {
    const int64_t ne[4] = { 31, 32, 2, 3 };
    for (int k = 0; k < N_EOPS; k++) {
        for (int t = 0; t < 3; t++) {
            run_unary_case(&EOPS[k], FTYPES[t], ne, TRANSPOSED, 0, 1, (uint64_t) (2000 + k * 10 + t));
            run_unary_case(&EOPS[k], FTYPES[t], ne, PERMUTED, 0, 1, (uint64_t) (2100 + k * 10 + t));
        }
    }
}

Test(elem2, inplace_and_by_enum) {
    const int64_t ne[4] = { 33, 5, 1, 1 };
    for (int k = 0; k < N_EOPS; k++) {
        if (EOPS[k].make_inplace != NULL) {
            run_unary_case(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 1, 1, (uint64_t) (3000 + k));
            run_unary_case(&EOPS[k], GGML_TYPE_BF16, ne, TRANSPOSED, 1, 1, (uint64_t) (3100 + k));
        }
        if (EOPS[k].op == GGML_OP_UNARY) {
            run_unary_case(&EOPS[k], GGML_TYPE_F16, ne, CONTIG, 2, 1, (uint64_t) (3200 + k));
            run_unary_case(&EOPS[k], GGML_TYPE_F32, ne, PERMUTED, 3, 1, (uint64_t) (3300 + k));
        }
    }
}

Test(elem2, multithreaded_large) {
    const int64_t ne[4] = { 4097, 3, 1, 1 };
    for (int k = 0; k < N_EOPS; k++) {
        run_unary_case(&EOPS[k], GGML_TYPE_F32, ne, CONTIG, 0, 4, (uint64_t) (4000 + k));
        run_unary_case(&EOPS[k], GGML_TYPE_F16, ne, CONTIG, 0, 3, (uint64_t) (4100 + k));
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
