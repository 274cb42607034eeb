/*
 * test-train.c -- the rules around ggml_build_backward_expand (what it refuses and how), the
 * gradient accumulators and ggml_graph_reset, the loss and optimizer-step kernels against double
 * references, and a small model trained with each optimizer step until its loss is below a target.
 */
#include <criterion/criterion.h>

#include "ggml.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params ip = { 32u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);
    return ctx;
}

static void fill(struct ggml_tensor * t, uint32_t seed, float scale) {
    float * d = (float *) t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        d[i] = scale * ((float) (seed >> 8) / 16777216.0f - 0.5f);
    }
}

/* x (param) -> sum(sqr(x)): a loss whose gradient is 2x */
static struct ggml_tensor * square_loss(struct ggml_context * ctx, struct ggml_tensor ** x) {
    *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    fill(*x, 7, 2.0f);
    ggml_set_param(*x);
    struct ggml_tensor * loss = ggml_sum(ctx, ggml_sqr(ctx, *x));
    ggml_set_loss(loss);
    return loss;
}

Test(backward, a_graph_without_room_for_gradients_is_refused_and_failed) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x;
    struct ggml_tensor * loss = square_loss(ctx, &x);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "no room for gradients"), "%s", ggmlx_last_error());
    cr_assert_neq(ggml_graph_compute_with_ctx(ctx, g, 1), GGML_STATUS_SUCCESS);
    cr_assert_null(ggml_graph_get_grad(g, x));
    ggml_free(ctx);
}

Test(backward, a_graph_without_parameters_is_refused) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    struct ggml_tensor * loss = ggml_sum(ctx, ggml_sqr(ctx, x));
    ggml_set_loss(loss);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_set_param"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}

Test(backward, a_graph_without_loss_is_refused) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_set_param(x);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(g, ggml_sum(ctx, ggml_sqr(ctx, x)));
    ggml_build_backward_expand(ctx, g, NULL);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_set_loss"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}

Test(backward, an_op_without_a_gradient_rule_fails_the_graph_naming_the_node) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    fill(x, 3, 1.0f);
    ggml_set_param(x);
    struct ggml_tensor * n = ggml_norm(ctx, x, 1e-5f);
    ggml_set_name(n, "the norm");
    struct ggml_tensor * loss = ggml_sum(ctx, n);
    ggml_set_loss(loss);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "the norm"), "%s", ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "NORM"), "%s", ggmlx_last_error());
    cr_assert_neq(ggml_graph_compute_with_ctx(ctx, g, 1), GGML_STATUS_SUCCESS);
    ggml_free(ctx);
}

Test(backward, reset_sets_the_loss_gradient_to_one_and_zeroes_accumulators) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x;
    struct ggml_tensor * loss = square_loss(ctx, &x);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(g, loss);
    struct ggml_tensor * acc = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    fill(acc, 99, 3.0f);
    struct ggml_tensor * accs[64] = { NULL };
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        if (ggml_graph_node(g, i) == x) {
            accs[i] = acc;
        }
    }
    ggml_build_backward_expand(ctx, g, accs);
    cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
    cr_assert_eq(ggml_graph_get_grad_acc(g, x), acc);
    struct ggml_tensor * lacc = ggml_graph_get_grad_acc(g, loss);
    cr_assert_not_null(lacc);
    *(float *) lacc->data = 42.0f;
    ggml_graph_reset(g);
    cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
    cr_assert_eq(*(float *) lacc->data, 1.0f);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(((float *) acc->data)[i], 0.0f);
    }
    ggml_free(ctx);
}

Test(backward, accumulators_add_up_evaluations_until_reset) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x;
    struct ggml_tensor * loss = square_loss(ctx, &x);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 64, true);
    ggml_build_forward_expand(g, loss);
    struct ggml_tensor * acc = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    struct ggml_tensor * accs[64] = { NULL };
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        accs[i] = ggml_graph_node(g, i) == x ? acc : NULL;
    }
    ggml_build_backward_expand(ctx, g, accs);
    ggml_graph_reset(g);
    for (int round = 1; round <= 3; round++) {
        cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 2), GGML_STATUS_SUCCESS);
        for (int i = 0; i < 5; i++) {
            const float want = (float) round * 2.0f * ((float *) x->data)[i];
            cr_assert_float_eq(((float *) acc->data)[i], want, 1e-5f, "round %d element %d", round, i);
        }
    }
    ggml_graph_reset(g);
    cr_assert_eq(((float *) acc->data)[0], 0.0f);
    ggml_free(ctx);
}

Test(backward, reset_of_a_graph_without_gradients_is_refused) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_graph_reset(g);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "no gradients"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}

/* ---- kernels against double references ------------------------------------------------------ */

Test(train_ops, cross_entropy_loss_is_the_mean_over_rows_of_minus_labels_times_log_softmax) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 37, 9);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 37, 9);
    fill(a, 1, 8.0f);
    fill(b, 2, 1.0f);
    struct ggml_tensor * l = ggml_cross_entropy_loss(ctx, a, b);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, l);
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 2), GGML_STATUS_SUCCESS);
    double total = 0.0;
    for (int r = 0; r < 9; r++) {
        const float * x = (const float *) a->data + r * 37;
        const float * t = (const float *) b->data + r * 37;
        double mx = -INFINITY, s = 0.0;
        for (int i = 0; i < 37; i++) mx = fmax(mx, x[i]);
        for (int i = 0; i < 37; i++) s += exp(x[i] - mx);
        for (int i = 0; i < 37; i++) total += t[i] * (x[i] - mx - log(s));
    }
    cr_assert_float_eq(*(float *) l->data, (float) (-total / 9.0), 1e-5f * (float) fabs(total));
    ggml_free(ctx);
}

Test(train_ops, opt_step_adamw_follows_the_adamw_update_for_two_steps) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3);
    struct ggml_tensor * gr = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3);
    struct ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3);
    struct ggml_tensor * v = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 7, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 7);
    fill(w, 4, 2.0f);
    fill(gr, 5, 1.0f);
    memset(m->data, 0, ggml_nbytes(m));
    memset(v->data, 0, ggml_nbytes(v));
    ggml_set_param(w);
    const double alpha = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    struct ggml_tensor * step = ggml_opt_step_adamw(ctx, w, gr, m, v, p);
    cr_assert_not_null(step);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, step);
    double rw[21], rm[21] = { 0 }, rv[21] = { 0 };
    for (int i = 0; i < 21; i++) rw[i] = ((float *) w->data)[i];
    for (int t = 1; t <= 2; t++) {
        const float pv[7] = { (float) alpha, (float) b1, (float) b2, (float) eps, (float) wd,
                              (float) (1.0 / (1.0 - pow(b1, t))), (float) (1.0 / (1.0 - pow(b2, t))) };
        memcpy(p->data, pv, sizeof pv);
        cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 2), GGML_STATUS_SUCCESS);
        for (int i = 0; i < 21; i++) {
            const double gi = ((float *) gr->data)[i];
            rm[i] = b1 * rm[i] + (1 - b1) * gi;
            rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
            rw[i] = rw[i] * (1 - alpha * wd) - alpha * rm[i] * pv[5] / (sqrt(rv[i] * pv[6]) + eps);
            cr_assert_float_eq(((float *) w->data)[i], (float) rw[i], 1e-5f, "step %d element %d", t, i);
            cr_assert_float_eq(((float *) m->data)[i], (float) rm[i], 1e-6f);
        }
    }
    ggml_free(ctx);
}

Test(train_ops, opt_step_sgd_is_decay_then_step_against_the_gradient) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 11);
    struct ggml_tensor * gr = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 11);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    fill(w, 8, 2.0f);
    fill(gr, 9, 2.0f);
    ((float *) p->data)[0] = 0.25f;
    ((float *) p->data)[1] = 0.5f;
    ggml_set_param(w);
    float before[11];
    memcpy(before, w->data, sizeof before);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_opt_step_sgd(ctx, w, gr, p));
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 1), GGML_STATUS_SUCCESS);
    for (int i = 0; i < 11; i++) {
        const float want = before[i] * (1.0f - 0.25f * 0.5f) - 0.25f * ((float *) gr->data)[i];
        cr_assert_float_eq(((float *) w->data)[i], want, 1e-6f);
    }
    ggml_free(ctx);
}

Test(train_ops, an_optimizer_step_on_a_tensor_that_is_not_a_parameter_is_refused) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * gr = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    cr_assert_null(ggml_opt_step_sgd(ctx, w, gr, p));
    cr_assert_not_null(strstr(ggmlx_last_error(), "not a parameter"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}

Test(train_ops, get_rows_back_with_an_index_out_of_range_fails_the_computation) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * grad = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    struct ggml_tensor * idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 2);
    struct ggml_tensor * src = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    ((int32_t *) idx->data)[0] = 1;
    ((int32_t *) idx->data)[1] = 4;
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_get_rows_back(ctx, grad, idx, src));
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 1), GGML_STATUS_FAILED);
    cr_assert_not_null(strstr(ggmlx_last_error(), "index 4"), "%s", ggmlx_last_error());
    ggml_free(ctx);
}

/* ---- training converges ---------------------------------------------------------------------- */

/* A two-layer MLP learns y = sin(3 x0) + x1^2 on 64 fixed points, full batch, until its mean
 * squared error is below target; returns the final loss (the starting loss is about 0.6). */
static float train_mlp(bool adamw, int steps) {
    struct ggml_context * ctx = new_ctx();
    const int n_in = 2, n_hid = 16, n = 64;
    struct ggml_tensor * x  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_in, n);
    struct ggml_tensor * y  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, n);
    struct ggml_tensor * w1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_in, n_hid);
    struct ggml_tensor * b1 = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_hid);
    struct ggml_tensor * w2 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_hid, 1);
    fill(x, 11, 2.0f);
    for (int i = 0; i < n; i++) {
        const float * xi = (const float *) x->data + i * n_in;
        ((float *) y->data)[i] = sinf(3.0f * xi[0]) + xi[1] * xi[1];
    }
    fill(w1, 12, 2.0f);
    fill(b1, 13, 1.0f);
    fill(w2, 14, 1.0f);
    struct ggml_tensor * params[3] = { w1, b1, w2 };
    for (int i = 0; i < 3; i++) {
        ggml_set_param(params[i]);
    }
    struct ggml_tensor * h    = ggml_silu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w1, x), b1));
    struct ggml_tensor * out  = ggml_mul_mat(ctx, w2, h);
    struct ggml_tensor * loss = ggml_scale(ctx, ggml_sum(ctx, ggml_sqr(ctx, ggml_sub(ctx, out, y))), 1.0f / (float) n);
    ggml_set_loss(loss);

    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 512, true);
    ggml_build_forward_expand(g, loss);
    ggml_build_backward_expand(ctx, g, NULL);
    cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
    struct ggml_tensor * opt = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, adamw ? 7 : 2);
    for (int i = 0; i < 3; i++) {
        struct ggml_tensor * gr = ggml_graph_get_grad(g, params[i]);
        cr_assert_not_null(gr);
        if (adamw) {
            struct ggml_tensor * m = ggml_dup_tensor(ctx, params[i]);
            struct ggml_tensor * v = ggml_dup_tensor(ctx, params[i]);
            ggml_build_forward_expand(g, ggml_opt_step_adamw(ctx, params[i], gr, m, v, opt));
        } else {
            ggml_build_forward_expand(g, ggml_opt_step_sgd(ctx, params[i], gr, opt));
        }
    }
    ggml_graph_reset(g);
    float last = INFINITY;
    for (int t = 1; t <= steps; t++) {
        float * p = (float *) opt->data;
        if (adamw) {
            p[0] = 0.02f; p[1] = 0.9f; p[2] = 0.999f; p[3] = 1e-8f; p[4] = 0.0f;
            p[5] = 1.0f / (1.0f - powf(0.9f, (float) t));
            p[6] = 1.0f / (1.0f - powf(0.999f, (float) t));
        } else {
            p[0] = 0.2f; p[1] = 0.0f;
        }
        cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 2), GGML_STATUS_SUCCESS);
        last = *(float *) loss->data;
        cr_assert(isfinite(last), "the loss is %g at step %d", (double) last, t);
    }
    ggml_free(ctx);
    return last;
}

Test(train, an_mlp_trained_with_adamw_reaches_the_target_loss, .timeout = 120) {
    const float loss = train_mlp(true, 600);
    cr_assert_lt(loss, 0.005f, "loss after 600 AdamW steps: %g", (double) loss);
}

Test(train, an_mlp_trained_with_sgd_reaches_the_target_loss, .timeout = 120) {
    const float loss = train_mlp(false, 4000);
    cr_assert_lt(loss, 0.01f, "loss after 4000 SGD steps: %g", (double) loss);
}
