/*
 * test-grad.c -- every gradient rule of ggml_build_backward_expand against central finite
 * differences: the loss L = sum(f(params) * w), w fixed random weights, is evaluated in float by
 * the CPU, the differences are taken in double with a fourth-order stencil, and each element of
 * each parameter's gradient must agree. Also: the rules of the API (no parameter, no loss, no
 * gradients in the graph, an op without a rule), ggml_graph_reset, and the gradient accumulators.
 */
#include <criterion/criterion.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 3

/* f builds the graph's output from the parameters (and may make constants of its own in ctx) */
typedef struct ggml_tensor * (*build_fn)(struct ggml_context * ctx, struct ggml_tensor ** p);

struct gcase {
    const char * name;
    int          n_params;
    int64_t      ne[MAX_PARAMS][4];
    float        lo, hi;        /* parameters drawn from [lo, hi) */
    bool         differentiable[MAX_PARAMS];
    build_fn     build;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static float frand(float lo, float hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (float) ((rng_state >> 11) * (1.0 / 9007199254740992.0));
}

static void fill(struct ggml_tensor * t, float lo, float hi) {
    float * d = (float *) t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        d[i] = frand(lo, hi);
    }
}

static float loss_value(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor * loss) {
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, gf, 2), GGML_STATUS_SUCCESS, "forward failed: %s",
                 ggmlx_last_error() ? ggmlx_last_error() : "?");
    return *(float *) loss->data;
}

static void check_case(const struct gcase * c) {
    struct ggml_init_params ip = { 64u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);

    struct ggml_tensor * p[MAX_PARAMS] = { NULL };
    for (int i = 0; i < c->n_params; i++) {
        p[i] = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, c->ne[i]);
        fill(p[i], c->lo, c->hi);
        ggml_format_name(p[i], "p%d", i);
        if (c->differentiable[i]) {
            ggml_set_param(p[i]);
        }
    }
    struct ggml_tensor * out = c->build(ctx, p);
    cr_assert_not_null(out, "%s: building f failed: %s", c->name, ggmlx_last_error() ? ggmlx_last_error() : "?");
    struct ggml_tensor * w = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, out->ne);
    fill(w, -1.0f, 1.0f);
    struct ggml_tensor * loss = ggml_sum(ctx, ggml_mul(ctx, out, w));
    ggml_set_loss(loss);

    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 1024, true);
    ggml_build_forward_expand(gf, loss);
    struct ggml_cgraph * gb = ggml_graph_dup(ctx, gf, true);
    ggml_build_backward_expand(ctx, gb, NULL);
    cr_assert_null(ggmlx_last_error(), "%s: backward failed: %s", c->name, ggmlx_last_error());

    ggml_graph_reset(gb);
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, gb, 2), GGML_STATUS_SUCCESS, "%s: backward compute failed: %s",
                 c->name, ggmlx_last_error() ? ggmlx_last_error() : "?");

    for (int i = 0; i < c->n_params; i++) {
        if (!c->differentiable[i]) {
            continue;
        }
        struct ggml_tensor * g = ggml_graph_get_grad(gb, p[i]);
        cr_assert_not_null(g, "%s: parameter %d has no gradient", c->name, i);
        const int64_t n = ggml_nelements(p[i]);
        /* a gradient may be a view (of a transpose, a permutation): read it by its strides */
        float * analytic = malloc((size_t) n * sizeof(float));
        for (int64_t k = 0; k < n; k++) {
            int64_t i0, i1, i2, i3;
            ggml_unravel_index(p[i], k, &i0, &i1, &i2, &i3);
            analytic[k] = *(const float *) ((const char *) g->data + i0 * g->nb[0] + i1 * g->nb[1] + i2 * g->nb[2] +
                                            i3 * g->nb[3]);
        }
        float * x = (float *) p[i]->data;
        for (int64_t k = 0; k < n; k++) {
            const float  x0 = x[k];
            const double h  = 1e-2 * fmax(1.0, fabs((double) x0));
            double f[4];
            const double off[4] = { -2.0, -1.0, 1.0, 2.0 };
            for (int s = 0; s < 4; s++) {
                x[k] = (float) ((double) x0 + off[s] * h);
                f[s] = loss_value(ctx, gf, loss);
            }
            x[k] = x0;
            const double numeric = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
            const double tol     = 5e-3 + 2e-2 * fabs(numeric);
            cr_assert(fabs((double) analytic[k] - numeric) <= tol,
                      "%s: d L / d p%d[%lld] = %.6g, finite differences give %.6g", c->name, i, (long long) k,
                      (double) analytic[k], numeric);
        }
        free(analytic);
    }
    ggml_free(ctx);
}

/* ---- the functions differentiated ----------------------------------------------------------- */

static struct ggml_tensor * f_add(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_add(c, p[0], p[1]); }
static struct ggml_tensor * f_sub(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sub(c, p[0], p[1]); }
static struct ggml_tensor * f_mul(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_mul(c, p[0], p[1]); }
static struct ggml_tensor * f_div(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_div(c, p[0], p[1]); }
static struct ggml_tensor * f_add1(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_add1(c, p[0], p[1]); }
static struct ggml_tensor * f_sqr(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sqr(c, p[0]); }
static struct ggml_tensor * f_sqrt(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sqrt(c, p[0]); }
static struct ggml_tensor * f_log(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_log(c, p[0]); }
static struct ggml_tensor * f_sin(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sin(c, p[0]); }
static struct ggml_tensor * f_cos(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_cos(c, p[0]); }
static struct ggml_tensor * f_sum(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sum(c, p[0]); }
static struct ggml_tensor * f_sum_rows(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_sum_rows(c, p[0]); }
static struct ggml_tensor * f_mean(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_mean(c, p[0]); }
static struct ggml_tensor * f_repeat(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_repeat_4d(c, p[0], 6, 4, 3, 2);
}
static struct ggml_tensor * f_repeat_back(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_repeat_back(c, p[0], ggml_new_tensor_4d(c, GGML_TYPE_F32, 2, 2, 1, 1));
}
static struct ggml_tensor * f_rms_norm(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_rms_norm(c, p[0], 1e-5f);
}
static struct ggml_tensor * f_mul_mat(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_mul_mat(c, p[0], p[1]);
}
static struct ggml_tensor * f_scale(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_scale(c, p[0], -1.75f); }
static struct ggml_tensor * f_cpy(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_cpy(c, p[0], ggml_new_tensor_2d(c, GGML_TYPE_F32, 6, 2));
}
static struct ggml_tensor * f_cont(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_cont(c, ggml_transpose(c, p[0]));
}
static struct ggml_tensor * f_reshape(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_sqr(c, ggml_reshape_2d(c, p[0], 3, 8));
}
static struct ggml_tensor * f_permute(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_sqr(c, ggml_permute(c, p[0], 2, 0, 3, 1));
}
static struct ggml_tensor * f_transpose(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_mul_mat(c, ggml_cont(c, ggml_transpose(c, p[0])), p[1]);
}
static struct ggml_tensor * f_get_rows(struct ggml_context * c, struct ggml_tensor ** p) {
    struct ggml_tensor * idx = ggml_new_tensor_1d(c, GGML_TYPE_I32, 5);
    const int32_t rows[5] = { 3, 0, 3, 1, 3 }; /* repeats: their gradients add up */
    memcpy(idx->data, rows, sizeof rows);
    return ggml_get_rows(c, p[0], idx);
}
static struct ggml_tensor * f_soft_max(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_soft_max_ext(c, p[0], NULL, 0.7f, 0.0f);
}
static struct ggml_tensor * f_soft_max_masked(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_soft_max(c, ggml_diag_mask_inf(c, p[0], 1));
}
static struct ggml_tensor * rope_of(struct ggml_context * c, struct ggml_tensor * x, int mode) {
    struct ggml_tensor * pos = ggml_new_tensor_1d(c, GGML_TYPE_I32, x->ne[2]);
    for (int i = 0; i < x->ne[2]; i++) {
        ((int32_t *) pos->data)[i] = 3 * i + 1;
    }
    return ggml_rope_ext(c, x, pos, NULL, 4, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}
static struct ggml_tensor * f_rope(struct ggml_context * c, struct ggml_tensor ** p) {
    return rope_of(c, p[0], GGML_ROPE_TYPE_NORMAL);
}
static struct ggml_tensor * f_rope_neox(struct ggml_context * c, struct ggml_tensor ** p) {
    return rope_of(c, p[0], GGML_ROPE_TYPE_NEOX);
}
static struct ggml_tensor * f_abs(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_abs(c, p[0]); }
static struct ggml_tensor * f_neg(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_neg(c, p[0]); }
static struct ggml_tensor * f_relu(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_relu(c, p[0]); }
static struct ggml_tensor * f_silu(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_silu(c, p[0]); }
static struct ggml_tensor * f_exp(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_exp(c, p[0]); }
static struct ggml_tensor * f_swiglu(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_swiglu_split(c, p[0], p[1]);
}
static struct ggml_tensor * f_cross_entropy(struct ggml_context * c, struct ggml_tensor ** p) {
    return ggml_cross_entropy_loss(c, p[0], ggml_soft_max(c, p[1]));
}
static struct ggml_tensor * f_dup(struct ggml_context * c, struct ggml_tensor ** p) { return ggml_dup(c, p[0]); }
static struct ggml_tensor * f_chain(struct ggml_context * c, struct ggml_tensor ** p) {
    /* a tiny MLP layer with a norm and a shared input: gradients from two paths add */
    struct ggml_tensor * h = ggml_silu(c, ggml_add(c, ggml_mul_mat(c, p[0], p[1]), p[2]));
    return ggml_mul(c, ggml_rms_norm(c, h, 1e-6f), h);
}

#define SHAPE(a, b, c_, d) { a, b, c_, d }
#define ALL         { true, true, true }
#define LOGITS_ONLY { true, false, false }
#define GRAD_TEST(id, np, s0, s1, s2, lo_, hi_, diff, fn)                                                    \
    static const struct gcase case_##id = { .name = #id, .n_params = np, .ne = { s0, s1, s2 }, .lo = lo_,       \
                                            .hi = hi_, .differentiable = diff, .build = fn };                   \
    Test(grad, id, .timeout = 120) {                                                                          \
        check_case(&case_##id);                                                                               \
    }

#define ONE(id, fn, lo, hi) GRAD_TEST(id, 1, SHAPE(4, 3, 2, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), lo, hi, ALL, fn)

GRAD_TEST(add, 2, SHAPE(4, 3, 2, 1), SHAPE(4, 3, 2, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_add)
GRAD_TEST(add_broadcast, 2, SHAPE(4, 3, 2, 1), SHAPE(4, 1, 2, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_add)
GRAD_TEST(sub_broadcast, 2, SHAPE(4, 3, 2, 1), SHAPE(1, 3, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_sub)
GRAD_TEST(mul_broadcast, 2, SHAPE(4, 3, 2, 1), SHAPE(4, 3, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_mul)
GRAD_TEST(div, 2, SHAPE(4, 3, 2, 1), SHAPE(4, 3, 2, 1), SHAPE(1, 1, 1, 1), 0.5f, 2, ALL, f_div)
GRAD_TEST(add1, 2, SHAPE(4, 3, 2, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_add1)
ONE(sqr, f_sqr, -1, 1)
ONE(sqrt, f_sqrt, 0.5f, 2)
ONE(log, f_log, 0.5f, 2)
ONE(sin, f_sin, -2, 2)
ONE(cos, f_cos, -2, 2)
ONE(sum, f_sum, -1, 1)
ONE(sum_rows, f_sum_rows, -1, 1)
ONE(mean, f_mean, -1, 1)
GRAD_TEST(repeat, 1, SHAPE(3, 2, 1, 2), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_repeat)
GRAD_TEST(repeat_back, 1, SHAPE(4, 6, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_repeat_back)
GRAD_TEST(rms_norm, 1, SHAPE(7, 3, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_rms_norm)
GRAD_TEST(mul_mat, 2, SHAPE(5, 3, 1, 1), SHAPE(5, 4, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_mul_mat)
GRAD_TEST(mul_mat_broadcast, 2, SHAPE(5, 3, 2, 1), SHAPE(5, 2, 4, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_mul_mat)
ONE(scale, f_scale, -1, 1)
GRAD_TEST(cpy, 1, SHAPE(4, 3, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_cpy)
GRAD_TEST(cont_of_transpose, 1, SHAPE(4, 3, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_cont)
ONE(reshape, f_reshape, -1, 1)
ONE(permute, f_permute, -1, 1)
GRAD_TEST(transpose, 2, SHAPE(3, 5, 1, 1), SHAPE(5, 2, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_transpose)
GRAD_TEST(get_rows, 1, SHAPE(3, 4, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_get_rows)
GRAD_TEST(soft_max_scaled, 1, SHAPE(6, 3, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -2, 2, ALL, f_soft_max)
GRAD_TEST(soft_max_after_diag_mask_inf, 1, SHAPE(4, 4, 1, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -2, 2, ALL, f_soft_max_masked)
GRAD_TEST(rope, 1, SHAPE(6, 2, 3, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_rope)
GRAD_TEST(rope_neox, 1, SHAPE(6, 2, 3, 1), SHAPE(1, 1, 1, 1), SHAPE(1, 1, 1, 1), -1, 1, ALL, f_rope_neox)
ONE(abs, f_abs, 0.2f, 1) /* kept away from the kink at 0 */
ONE(neg, f_neg, -1, 1)
ONE(relu, f_relu, 0.2f, 1)
ONE(silu, f_silu, -3, 3)
ONE(exp, f_exp, -1, 1)
GRAD_TEST(swiglu_split, 2, SHAPE(4, 3, 1, 1), SHAPE(4, 3, 1, 1), SHAPE(1, 1, 1, 1), -2, 2, ALL, f_swiglu)
GRAD_TEST(cross_entropy_loss, 2, SHAPE(5, 3, 1, 1), SHAPE(5, 3, 1, 1), SHAPE(1, 1, 1, 1), -2, 2, LOGITS_ONLY, f_cross_entropy)
ONE(dup, f_dup, -1, 1)
GRAD_TEST(two_paths_through_silu_rms_norm_and_mul_mat, 3, SHAPE(5, 4, 1, 1), SHAPE(5, 3, 1, 1), SHAPE(4, 1, 1, 1),
          -1, 1, ALL, f_chain)
