/*
 * test-ops-elem3.c -- the elementwise ops with parameters or a second operand: SCALE with bias
 * (ggml_scale_bias), CLAMP, LEAKY_RELU, UNARY XIELU and ADD1, against double references: float
 * types, sizes, transposed and permuted inputs, threads, in-place, op_params layouts as upstream,
 * and rejection of bad arguments.
 */
#include "test-ops-elementwise.h"

#include "ggml-backend.h"

static float param_f32(const struct ggml_tensor * t, int i) {
    float v;
    memcpy(&v, (const char *) t->op_params + (size_t) i * sizeof(float), sizeof v);
    return v;
}

/* ---- the parameterized unary family -------------------------------------------------------- */

enum pop { P_SCALE_BIAS, P_CLAMP, P_LEAKY, P_XIELU };

struct pcase {
    enum pop op;
    float    p[4]; /* scale_bias: s, b; clamp: min, max; leaky: slope; xielu: alpha_n, alpha_p, beta, eps */
};

static double softplus(double x) { return log1p(exp(x)); }

static double ref_p(const struct pcase * c, double x) {
    switch (c->op) {
    case P_SCALE_BIAS: return x * c->p[0] + c->p[1];
    case P_CLAMP:      return fmax(fmin(x, c->p[1]), c->p[0]);
    case P_LEAKY:      return x > 0 ? x : x * c->p[0];
    default: {
        /* the constructor stores these as floats: compare with what it stored */
        const double an = (float) (c->p[2] + (float) softplus(c->p[0])), ap = (float) softplus(c->p[1]);
        const double beta = c->p[2], eps = c->p[3];
        return x > 0 ? ap * x * x + beta * x : (expm1(fmin(x, eps)) - x) * an + beta * x;
    }
    }
}

static const char * pname(enum pop op) {
    switch (op) {
    case P_SCALE_BIAS: return "scale_bias";
    case P_CLAMP:      return "clamp";
    case P_LEAKY:      return "leaky_relu";
    default:           return "xielu";
    }
}

static struct ggml_tensor * make_p(struct ggml_context * ctx, const struct pcase * c, struct ggml_tensor * a,
                                   bool inplace) {
    switch (c->op) {
    case P_SCALE_BIAS:
        return inplace ? ggml_scale_bias_inplace(ctx, a, c->p[0], c->p[1]) : ggml_scale_bias(ctx, a, c->p[0], c->p[1]);
    case P_CLAMP: return ggml_clamp(ctx, a, c->p[0], c->p[1]);
    case P_LEAKY: return ggml_leaky_relu(ctx, a, c->p[0], inplace);
    default:      return ggml_xielu(ctx, a, c->p[0], c->p[1], c->p[2], c->p[3]);
    }
}

static void check_params(const struct pcase * c, const struct ggml_tensor * r) {
    switch (c->op) {
    case P_SCALE_BIAS:
        cr_assert_eq(r->op, GGML_OP_SCALE);
        cr_assert(param_f32(r, 0) == c->p[0] && param_f32(r, 1) == c->p[1], "op_params must be {scale, bias}");
        break;
    case P_CLAMP:
        cr_assert_eq(r->op, GGML_OP_CLAMP);
        cr_assert(param_f32(r, 0) == c->p[0] && param_f32(r, 1) == c->p[1], "op_params must be {min, max}");
        break;
    case P_LEAKY:
        cr_assert_eq(r->op, GGML_OP_LEAKY_RELU);
        cr_assert(param_f32(r, 0) == c->p[0], "op_params[0] must be the slope");
        break;
    default:
        cr_assert_eq(r->op, GGML_OP_UNARY);
        cr_assert_eq(ggml_get_unary_op(r), GGML_UNARY_OP_XIELU);
        cr_assert(param_f32(r, 1) == c->p[2] + (float) softplus(c->p[0]), "op_params[1]: beta + softplus(alpha_n)");
        cr_assert(param_f32(r, 2) == (float) softplus(c->p[1]), "op_params[2]: softplus(alpha_p)");
        cr_assert(param_f32(r, 3) == c->p[2] && param_f32(r, 4) == c->p[3], "op_params[3], [4]: beta, eps");
        break;
    }
}

static void run_p(const struct pcase * c, enum ggml_type type, const int64_t ne[4], enum layout l, bool inplace,
                  int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, type, ne);
    tu_fill(a, &rng, -4.0f, 4.0f);
    double * va = to_values(a);
    struct ggml_tensor * r = make_p(e.ctx, c, a, inplace);
    cr_assert_not_null(r, "%s: %s", pname(c->op), ggmlx_last_error());
    cr_assert_eq(r->type, type);
    cr_assert_eq(r->src[0], a);
    check_params(c, r);
    /* clamp is always in place, as upstream */
    const bool in_place = inplace || c->op == P_CLAMP;
    if (in_place) {
        cr_assert_eq(r->data, a->data);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = ref_p(c, va[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s [%lld,%lld,%lld,%lld] layout %d inplace %d threads %d", pname(c->op),
             ggml_type_name(type), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l,
             (int) inplace, n_threads);
    to_check(r, want, tol_for(type), what);
    if (!in_place) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

static const struct pcase PCASES[] = {
    { P_SCALE_BIAS, { 0.5f, -1.25f, 0, 0 } },
    { P_SCALE_BIAS, { -3.0f, 0.75f, 0, 0 } },
    { P_CLAMP,      { -1.5f, 2.0f, 0, 0 } },
    { P_CLAMP,      { 0.0f, 0.0f, 0, 0 } },
    { P_CLAMP,      { 1.0f, -1.0f, 0, 0 } }, /* min > max: everything becomes min, as upstream */
    { P_LEAKY,      { 0.01f, 0, 0, 0 } },
    { P_LEAKY,      { -0.5f, 0, 0, 0 } },
    { P_LEAKY,      { 0.0f, 0, 0, 0 } },
    { P_XIELU,      { 0.8f, 0.8f, 0.5f, -1e-6f } },
    { P_XIELU,      { -0.3f, 1.7f, 0.25f, -0.5f } },
};
#define N_PCASES ((int) (sizeof PCASES / sizeof PCASES[0]))

Test(elem3, param_ops_f32_all_sizes) {
    for (int k = 0; k < N_PCASES; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 2 : 3, 2, 1 };
            run_p(&PCASES[k], GGML_TYPE_F32, ne, CONTIG, false, s == TU_N_SIZES - 1 ? 4 : 1, (uint64_t) (k * 100 + s));
        }
    }
}

Test(elem3, param_ops_types_and_layouts) {
    const int64_t ne[4] = { 31, 32, 2, 3 };
    for (int k = 0; k < N_PCASES; k++) {
        for (int t = 0; t < 3; t++) {
            run_p(&PCASES[k], FTYPES[t], ne, CONTIG, false, 1, (uint64_t) (1000 + k * 10 + t));
            run_p(&PCASES[k], FTYPES[t], ne, TRANSPOSED, false, 2, (uint64_t) (1100 + k * 10 + t));
            run_p(&PCASES[k], FTYPES[t], ne, PERMUTED, false, 1, (uint64_t) (1200 + k * 10 + t));
        }
    }
}

Test(elem3, param_ops_inplace) {
    const int64_t ne[4] = { 33, 5, 2, 1 };
    for (int k = 0; k < N_PCASES; k++) {
        if (PCASES[k].op == P_XIELU) {
            continue; /* upstream has no in-place xielu */
        }
        run_p(&PCASES[k], GGML_TYPE_F32, ne, CONTIG, true, 1, (uint64_t) (2000 + k));
        run_p(&PCASES[k], GGML_TYPE_F16, ne, PERMUTED, true, 3, (uint64_t) (2100 + k));
        run_p(&PCASES[k], GGML_TYPE_BF16, ne, TRANSPOSED, true, 1, (uint64_t) (2200 + k));
    }
}

Test(elem3, clamp_and_leaky_special_values) {
    struct to_env e;
    to_begin(&e);
    const float in[6] = { INFINITY, -INFINITY, NAN, -0.0f, 5.0f, -5.0f };
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 6, 1, 1, 1);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 6, 1, 1, 1);
    memcpy(a->data, in, sizeof in);
    memcpy(b->data, in, sizeof in);
    struct ggml_tensor * rc = ggml_clamp(e.ctx, a, -1.0f, 1.0f);
    struct ggml_tensor * rl = to_alloc(&e, ggml_leaky_relu(e.ctx, b, 0.1f, false));
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    ggml_build_forward_expand(gf, rc);
    ggml_build_forward_expand(gf, rl);
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 1), GGML_STATUS_SUCCESS);
    const float * c = (const float *) rc->data;
    /* NaN comes out as max, as from upstream's MAX(MIN(x, max), min) */
    cr_expect(c[0] == 1.0f && c[1] == -1.0f && c[2] == 1.0f && c[3] == 0.0f && c[4] == 1.0f && c[5] == -1.0f,
              "clamp: %g %g %g %g %g %g", c[0], c[1], c[2], c[3], c[4], c[5]);
    const float * l = (const float *) rl->data;
    /* NaN comes out as 0, as from upstream's max(x, 0) + slope * min(x, 0) with comparisons */
    cr_expect(l[0] == INFINITY && l[1] == -INFINITY && l[2] == 0.0f && l[4] == 5.0f && fabsf(l[5] + 0.5f) < 1e-7f,
              "leaky_relu: %g %g %g %g %g %g", l[0], l[1], l[2], l[3], l[4], l[5]);
    to_end(&e);
}

/* ---- add1 ---------------------------------------------------------------------------------- */

static void run_add1(enum ggml_type ta, enum ggml_type tb, const int64_t ne[4], enum layout l, bool inplace,
                     int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, ta, ne);
    struct ggml_tensor * b = to_new(&e, tb, 1, 1, 1, 1);
    tu_fill(a, &rng, -4.0f, 4.0f);
    tu_fill(b, &rng, -4.0f, 4.0f);
    double * va = to_values(a);
    const double y = tu_get(b, 0, 0, 0, 0);
    struct ggml_tensor * r = inplace ? ggml_add1_inplace(e.ctx, a, b) : ggml_add1(e.ctx, a, b);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_ADD1);
    cr_assert_eq(r->type, ta);
    cr_assert(r->src[0] == a && r->src[1] == b);
    cr_assert(ggml_are_same_shape(r, a));
    if (inplace) {
        cr_assert_eq(r->data, a->data);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = va[i] + y;
    }
    char what[128];
    snprintf(what, sizeof what, "add1 %s + %s [%lld,%lld,%lld,%lld] layout %d inplace %d", ggml_type_name(ta),
             ggml_type_name(tb), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l,
             (int) inplace);
    to_check(r, want, tol_for(ta), what);
    free(want);
    free(va);
    to_end(&e);
}

Test(add1, all_sizes_f32) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 2 : 3, 2, 1 };
        run_add1(GGML_TYPE_F32, GGML_TYPE_F32, ne, CONTIG, false, s == TU_N_SIZES - 1 ? 4 : 1, (uint64_t) s);
    }
}

Test(add1, every_type_pair_and_layout) {
    const int64_t ne[4] = { 31, 32, 2, 1 };
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            run_add1(FTYPES[i], FTYPES[j], ne, CONTIG, false, 1, (uint64_t) (100 + i * 3 + j));
            run_add1(FTYPES[i], FTYPES[j], ne, TRANSPOSED, false, 2, (uint64_t) (200 + i * 3 + j));
            run_add1(FTYPES[i], FTYPES[j], ne, PERMUTED, true, 1, (uint64_t) (300 + i * 3 + j));
        }
        run_add1(FTYPES[i], GGML_TYPE_F32, ne, CONTIG, true, 3, (uint64_t) (400 + i));
    }
}

Test(add1, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * v = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    to_expect_rejected(ctx, ggml_add1(ctx, a, v), "ggml_add1");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    to_expect_rejected(ctx, ggml_add1_inplace(ctx, a, NULL), "ggml_add1_inplace");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    to_expect_rejected(ctx, ggml_add1(ctx, NULL, s), "ggml_add1");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2);
    s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    to_expect_rejected(ctx, ggml_add1(ctx, a, s), "ggml_add1");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    s = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    to_expect_rejected(ctx, ggml_add1(ctx, a, s), "ggml_add1");
    ggml_free(ctx);

    cr_assert_null(ggml_add1(NULL, NULL, NULL));
    cr_assert_not_null(strstr(ggmlx_last_error(), "ctx is NULL"));
}

/* ---- bad input for the parameterized ops --------------------------------------------------- */

Test(elem3, rejects_null_input) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_scale_bias(ctx, NULL, 1.0f, 2.0f), "ggml_scale_bias");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_scale_bias_inplace(ctx, NULL, 1.0f, 2.0f), "ggml_scale_bias_inplace");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_clamp(ctx, NULL, -1.0f, 1.0f), "ggml_clamp");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_leaky_relu(ctx, NULL, 0.1f, true), "ggml_leaky_relu");
    ggml_free(ctx);
    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_xielu(ctx, NULL, 0.8f, 0.8f, 0.5f, -1e-6f), "ggml_xielu");
    ggml_free(ctx);
    cr_assert_null(ggml_clamp(NULL, NULL, 0, 1));
    cr_assert_null(ggml_xielu(NULL, NULL, 0, 0, 0, 0));
}

Test(elem3, rejects_non_float_types) {
    const enum ggml_type bad[] = { GGML_TYPE_I32, GGML_TYPE_Q8_0 };
    for (int t = 0; t < 2; t++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_1d(ctx, bad[t], 64);
        to_expect_rejected(ctx, ggml_scale_bias(ctx, a, 1.0f, 1.0f), "ggml_scale_bias");
        ggml_free(ctx);
        ctx = to_small_ctx();
        a = ggml_new_tensor_1d(ctx, bad[t], 64);
        to_expect_rejected(ctx, ggml_clamp(ctx, a, 0.0f, 1.0f), "ggml_clamp");
        ggml_free(ctx);
        ctx = to_small_ctx();
        a = ggml_new_tensor_1d(ctx, bad[t], 64);
        to_expect_rejected(ctx, ggml_leaky_relu(ctx, a, 0.1f, false), "ggml_leaky_relu");
        ggml_free(ctx);
        ctx = to_small_ctx();
        a = ggml_new_tensor_1d(ctx, bad[t], 64);
        to_expect_rejected(ctx, ggml_xielu(ctx, a, 0.8f, 0.8f, 0.5f, -1e-6f), "ggml_xielu");
        ggml_free(ctx);
    }
}

Test(elem3, cpu_supports_op) {
    ggml_backend_t be = ggml_backend_cpu_init();
    cr_assert_not_null(be);
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (int t = 0; t < 3; t++) {
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, FTYPES[t], 8, 2);
        struct ggml_tensor * s = ggml_new_tensor_1d(ctx, FTYPES[(t + 1) % 3], 1);
        for (int k = 0; k < N_PCASES; k++) {
            cr_expect(ggml_backend_supports_op(be, make_p(ctx, &PCASES[k], a, false)), "%s", pname(PCASES[k].op));
        }
        cr_expect(ggml_backend_supports_op(be, ggml_add1(ctx, a, s)), "add1");
    }
    ggml_free(ctx);
    ggml_backend_free(be);
}

/* after one refused constructor, every later one on that context is refused too */
Test(elem3, failed_context_stays_failed) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    cr_assert_null(ggml_clamp(ctx, NULL, 0.0f, 1.0f));
    cr_assert(ggmlx_context_is_failed(ctx));
    cr_assert_null(ggml_clamp(ctx, a, 0.0f, 1.0f));
    cr_assert_null(ggml_leaky_relu(ctx, a, 0.1f, false));
    cr_assert_null(ggml_scale_bias(ctx, a, 1.0f, 1.0f));
    cr_assert_null(ggml_scale_bias_inplace(ctx, a, 1.0f, 1.0f));
    cr_assert_null(ggml_xielu(ctx, a, 0.8f, 0.8f, 0.5f, -1e-6f));
    cr_assert_null(ggml_add1(ctx, a, s));
    cr_assert_null(ggml_add1_inplace(ctx, a, s));
    cr_assert_null(ggml_swiglu_oai(ctx, a, NULL, 1.702f, 7.0f));
    cr_assert_not_null(strstr(ggmlx_last_error(), "already failed"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}
