/*
 * test-opt.c -- ggml-opt.h: datasets (batches follow the shard permutation, shuffles permute),
 * results, the refusals, and training through the backend scheduler: a small MLP fitted with
 * ggml_opt_fit (AdamW and SGD, MSE) on the CPU and split over SIM0, SIM1 and the CPU (the same
 * losses to a tolerance), a classifier trained epoch by epoch with cross entropy (accuracy), and
 * the per-step graphs of ggml_opt_prepare_alloc that llama.cpp uses.
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void sims(void) {
    const struct ggmlx_sim_config cfg = { .n_devices = 2, .memory_limit = (size_t) 64 << 20, .n_threads = 1 };
    cr_assert(ggmlx_sim_configure(&cfg), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
}

static float frand(uint32_t * s) {
    *s = *s * 1664525u + 1013904223u;
    return (float) (*s >> 8) / 16777216.0f * 2.0f - 1.0f;
}

/* ---- datasets --------------------------------------------------------------------------------- */

Test(opt_dataset, sizes_that_do_not_split_into_shards_are_refused) {
    cr_assert_null(ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 4, 1, 10, 3));
    cr_assert_not_null(strstr(ggmlx_last_error(), "ndata_shard"), "%s", ggmlx_last_error());
    cr_assert_null(ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 0, 1, 10, 5));
}

Test(opt_dataset, a_batch_holds_the_shards_the_permutation_names) {
    ggml_opt_dataset_t d = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 3, 1, 8, 2);
    cr_assert_not_null(d);
    cr_assert_eq(ggml_opt_dataset_ndata(d), 8);
    float * data = (float *) ggml_opt_dataset_data(d)->data, * labels = (float *) ggml_opt_dataset_labels(d)->data;
    for (int i = 0; i < 8; i++) {
        for (int j = 0; j < 3; j++) {
            data[i * 3 + j] = (float) (10 * i + j);
        }
        labels[i] = (float) -i;
    }
    float db[12], lb[4];
    ggml_opt_dataset_get_batch_host(d, db, sizeof db, lb, 1); /* shards 2 and 3 = datapoints 4..7 */
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(db[i * 3 + 1], (float) (10 * (4 + i) + 1));
        cr_assert_eq(lb[i], (float) -(4 + i));
    }
    /* a batch past the end, or of a size that is not whole shards, is refused and writes nothing */
    memset(db, 0, sizeof db);
    ggml_opt_dataset_get_batch_host(d, db, sizeof db, lb, 2);
    cr_assert_not_null(ggmlx_last_error());
    ggml_opt_dataset_get_batch_host(d, db, 5 * sizeof(float), lb, 0);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(db[0], 0.0f);
    ggml_opt_dataset_free(d);
}

Test(opt_dataset, shuffling_permutes_whole_shards, .init = sims) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, 256, false, false);
    ggml_opt_context_t o = ggml_opt_init(ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_SUM));
    cr_assert_not_null(o, "%s", ggmlx_last_error());
    ggml_opt_dataset_t d = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, 1, 0, 64, 1);
    float * data = (float *) ggml_opt_dataset_data(d)->data;
    for (int i = 0; i < 64; i++) {
        data[i] = (float) i;
    }
    ggml_opt_dataset_shuffle(o, d, -1);
    float all[64];
    ggml_opt_dataset_get_batch_host(d, all, sizeof all, NULL, 0);
    int seen[64] = { 0 }, moved = 0;
    for (int i = 0; i < 64; i++) {
        seen[(int) all[i]]++;
        moved += all[i] != (float) i;
    }
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(seen[i], 1, "datapoint %d appears %d times", i, seen[i]);
    }
    cr_assert_gt(moved, 32);
    ggml_opt_dataset_shuffle(o, d, 3); /* the first 3 shards only */
    cr_assert_null(ggmlx_last_error());
    ggml_opt_dataset_shuffle(o, d, 65);
    cr_assert_not_null(ggmlx_last_error());
    ggml_opt_dataset_free(d);
    ggml_opt_free(o);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

/* ---- refusals ---------------------------------------------------------------------------------- */

Test(opt_context, bad_params_are_refused) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, 256, false, false);
    struct ggml_opt_params p = ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_MEAN);
    p.opt_period = 0;
    cr_assert_null(ggml_opt_init(p));
    p = ggml_opt_default_params(NULL, GGML_OPT_LOSS_TYPE_MEAN);
    cr_assert_null(ggml_opt_init(p));
    p = ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_MEAN);
    struct ggml_init_params ip = { 1 << 20, NULL, true };
    p.ctx_compute = ggml_init(ip); /* without inputs and outputs */
    cr_assert_null(ggml_opt_init(p));
    cr_assert_not_null(strstr(ggmlx_last_error(), "together"), "%s", ggmlx_last_error());
    ggml_free(p.ctx_compute);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

Test(opt_context, eval_without_alloc_is_refused) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, 256, false, false);
    ggml_opt_context_t o = ggml_opt_init(ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_SUM));
    ggml_opt_eval(o, NULL);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_opt_alloc first"), "%s", ggmlx_last_error());
    cr_assert_str_eq(ggml_opt_optimizer_name(ggml_opt_context_optimizer_type(o)), "adamw");
    cr_assert_str_eq(ggml_opt_optimizer_name(GGML_OPT_OPTIMIZER_TYPE_SGD), "sgd");
    ggml_opt_free(o);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

/* ---- training through the scheduler ------------------------------------------------------------- */

#define N_IN  2
#define N_HID 16
#define NDATA 256
#define BATCH 16

/* y = sin(2 x0) x1 on NDATA fixed points */
static ggml_opt_dataset_t regression_data(void) {
    ggml_opt_dataset_t d = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, 1, NDATA, 1);
    cr_assert_not_null(d);
    float * x = (float *) ggml_opt_dataset_data(d)->data, * y = (float *) ggml_opt_dataset_labels(d)->data;
    uint32_t seed = 5;
    for (int i = 0; i < NDATA; i++) {
        x[i * N_IN] = frand(&seed);
        x[i * N_IN + 1] = frand(&seed);
        y[i] = sinf(2.0f * x[i * N_IN]) * x[i * N_IN + 1];
    }
    return d;
}

struct mlp {
    struct ggml_context * ctx_w, * ctx_w2, * ctx_in, * ctx_c;
    ggml_backend_buffer_t buf_w1, buf_w2, buf_in;
    struct ggml_tensor *  w1, * b1, * w2, * in, * out;
};

/* w1, b1 on backend a, w2 on backend b, inputs on backend a; the graph in a no_alloc context */
static void mlp_build(struct mlp * m, ggml_backend_t a, ggml_backend_t b, int n_out) {
    struct ggml_init_params pw = { 8 * ggml_tensor_overhead(), NULL, true };
    m->ctx_w = ggml_init(pw);
    m->w1 = ggml_new_tensor_2d(m->ctx_w, GGML_TYPE_F32, N_IN, N_HID);
    m->b1 = ggml_new_tensor_1d(m->ctx_w, GGML_TYPE_F32, N_HID);
    struct ggml_init_params pw2 = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * c2 = m->ctx_w2 = ggml_init(pw2);
    m->w2 = ggml_new_tensor_2d(c2, GGML_TYPE_F32, N_HID, n_out);
    struct ggml_init_params pin = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * c3 = m->ctx_in = ggml_init(pin);
    m->in = ggml_new_tensor_2d(c3, GGML_TYPE_F32, N_IN, BATCH);
    m->buf_w1 = ggml_backend_alloc_ctx_tensors(m->ctx_w, a);
    m->buf_w2 = ggml_backend_alloc_ctx_tensors(c2, b);
    m->buf_in = ggml_backend_alloc_ctx_tensors(c3, a);
    cr_assert(m->buf_w1 && m->buf_w2 && m->buf_in);
    uint32_t seed = 77;
    float w1[N_IN * N_HID], b1[N_HID], w2[N_HID * 4];
    for (int i = 0; i < N_IN * N_HID; i++) w1[i] = frand(&seed);
    for (int i = 0; i < N_HID; i++) b1[i] = 0.5f * frand(&seed);
    for (int i = 0; i < N_HID * n_out; i++) w2[i] = 0.5f * frand(&seed);
    ggml_backend_tensor_set(m->w1, w1, 0, sizeof w1);
    ggml_backend_tensor_set(m->b1, b1, 0, sizeof b1);
    ggml_backend_tensor_set(m->w2, w2, 0, (size_t) (N_HID * n_out) * sizeof(float));
    ggml_set_param(m->w1);
    ggml_set_param(m->b1);
    ggml_set_param(m->w2);
    struct ggml_init_params pc = { 64 * ggml_tensor_overhead() + 4 * ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, true),
                                   NULL, true };
    m->ctx_c = ggml_init(pc);
    m->out = ggml_mul_mat(m->ctx_c, m->w2, ggml_silu(m->ctx_c, ggml_add(m->ctx_c, ggml_mul_mat(m->ctx_c, m->w1, m->in), m->b1)));
}

static void mlp_free(struct mlp * m) {
    ggml_free(m->ctx_c);
    ggml_backend_buffer_free(m->buf_in);
    ggml_backend_buffer_free(m->buf_w2);
    ggml_backend_buffer_free(m->buf_w1);
    ggml_free(m->ctx_in);
    ggml_free(m->ctx_w2);
    ggml_free(m->ctx_w);
}

static float mse_of(struct mlp * m, ggml_opt_dataset_t d) {
    float w1[N_IN * N_HID], b1[N_HID], w2[N_HID];
    ggml_backend_tensor_get(m->w1, w1, 0, sizeof w1);
    ggml_backend_tensor_get(m->b1, b1, 0, sizeof b1);
    ggml_backend_tensor_get(m->w2, w2, 0, sizeof w2);
    const float * x = (const float *) ggml_opt_dataset_data(d)->data, * y = (const float *) ggml_opt_dataset_labels(d)->data;
    double err = 0.0;
    for (int i = 0; i < NDATA; i++) {
        double o = 0.0;
        for (int h = 0; h < N_HID; h++) {
            double a = b1[h];
            for (int j = 0; j < N_IN; j++) a += (double) w1[h * N_IN + j] * x[i * N_IN + j];
            o += w2[h] * a / (1.0 + exp(-a));
        }
        err += (o - y[i]) * (o - y[i]);
    }
    return (float) (err / NDATA);
}

static struct ggml_opt_optimizer_params fixed_pars(void * ud) {
    (void) ud;
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(NULL);
    p.adamw.alpha = 0.01f;
    p.sgd.alpha   = 0.05f;
    return p;
}

/* fits the regression with n_sim SIM devices in front of the CPU; returns the final MSE */
static float fit(int n_sim, enum ggml_opt_optimizer_type opt, int nepoch, float * mse0) {
    ggml_backend_t be[3];
    for (int i = 0; i < n_sim; i++) {
        char name[8] = "SIM0";
        name[3] = (char) ('0' + i);
        be[i] = ggml_backend_dev_init(ggml_backend_dev_by_name(name), NULL);
        cr_assert_not_null(be[i]);
    }
    be[n_sim] = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be[n_sim], 1); /* as the SIM devices: the same summation order */
    ggml_backend_sched_t s = ggml_backend_sched_new(be, NULL, n_sim + 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    cr_assert_not_null(s);
    struct mlp m;
    mlp_build(&m, be[0], be[n_sim > 1 ? 1 : 0], 1);
    ggml_opt_dataset_t d = regression_data();
    *mse0 = mse_of(&m, d);
    ggml_opt_fit(s, m.ctx_c, m.in, m.out, d, GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR, opt, fixed_pars, nepoch,
                 BATCH, 0.0f, true);
    cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
    const float mse = mse_of(&m, d);
    ggml_opt_dataset_free(d);
    mlp_free(&m);
    ggml_backend_sched_free(s);
    for (int i = 0; i <= n_sim; i++) {
        ggml_backend_free(be[i]);
    }
    return mse;
}

Test(opt_fit, adamw_on_the_cpu_reduces_the_error_tenfold, .init = sims, .timeout = 120) {
    float mse0;
    const float mse = fit(0, GGML_OPT_OPTIMIZER_TYPE_ADAMW, 20, &mse0);
    cr_assert_lt(mse, mse0 / 10.0f, "MSE %g -> %g", (double) mse0, (double) mse);
}

Test(opt_fit, sgd_on_the_cpu_reduces_the_error_fourfold, .init = sims, .timeout = 120) {
    float mse0;
    const float mse = fit(0, GGML_OPT_OPTIMIZER_TYPE_SGD, 20, &mse0);
    cr_assert_lt(mse, mse0 / 4.0f, "MSE %g -> %g", (double) mse0, (double) mse);
}

/* w2 on SIM1, the rest on SIM0: each parameter's moments must live with it, or the steps would
 * update copies and lose them (upstream keeps them all on the first backend) */
Test(opt_fit, split_over_sim0_sim1_and_the_cpu_gives_the_cpu_s_result, .init = sims, .timeout = 120) {
    float mse0_cpu, mse0_sim;
    const float cpu = fit(0, GGML_OPT_OPTIMIZER_TYPE_ADAMW, 5, &mse0_cpu);
    const float sim = fit(2, GGML_OPT_OPTIMIZER_TYPE_ADAMW, 5, &mse0_sim);

    cr_assert_eq(mse0_cpu, mse0_sim);
    cr_assert_lt(cpu, mse0_cpu);
    cr_assert_float_eq(sim, cpu, 1e-4f * cpu, "MSE after 5 epochs: CPU %g, SIM0+SIM1+CPU %g", (double) cpu, (double) sim);
}

/* ---- a classifier, epoch by epoch ---------------------------------------------------------------- */

Test(opt_epoch, cross_entropy_training_reports_loss_and_accuracy, .init = sims, .timeout = 120) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    struct mlp m;
    mlp_build(&m, cpu, cpu, 2);
    /* class 1 when x0 * x1 > 0 */
    ggml_opt_dataset_t d = ggml_opt_dataset_init(GGML_TYPE_F32, GGML_TYPE_F32, N_IN, 2, NDATA, 1);
    float * x = (float *) ggml_opt_dataset_data(d)->data, * y = (float *) ggml_opt_dataset_labels(d)->data;
    uint32_t seed = 9;
    for (int i = 0; i < NDATA; i++) {
        x[2 * i] = frand(&seed);
        x[2 * i + 1] = frand(&seed);
        const int c = x[2 * i] * x[2 * i + 1] > 0.0f;
        y[2 * i] = (float) (1 - c);
        y[2 * i + 1] = (float) c;
    }
    struct ggml_opt_params p = ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
    p.ctx_compute = m.ctx_c;
    p.inputs      = m.in;
    p.outputs     = m.out;
    p.get_opt_pars = fixed_pars;
    ggml_opt_context_t o = ggml_opt_init(p);
    cr_assert_not_null(o, "%s", ggmlx_last_error());
    cr_assert(ggml_opt_static_graphs(o));
    cr_assert_not_null(ggml_opt_labels(o));
    cr_assert_not_null(ggml_opt_pred(o));
    ggml_opt_result_t rt = ggml_opt_result_init(), rv = ggml_opt_result_init();
    double first = 0.0, loss = 0.0, unc, acc, acc_unc;
    for (int epoch = 0; epoch < 40; epoch++) {
        ggml_opt_result_reset(rt);
        ggml_opt_result_reset(rv);
        ggml_opt_epoch(o, d, rt, rv, NDATA * 3 / 4, NULL, NULL);
        cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
        ggml_opt_result_loss(rt, &loss, &unc);
        if (epoch == 0) {
            first = loss;
        }
    }
    int64_t nd;
    ggml_opt_result_ndata(rt, &nd);
    cr_assert_eq(nd, NDATA * 3 / 4);
    ggml_opt_result_ndata(rv, &nd);
    cr_assert_eq(nd, NDATA / 4);
    cr_assert_lt(loss, first / 2.0, "training loss %g -> %g", first, loss);
    cr_assert(isfinite(unc) && unc >= 0.0);
    ggml_opt_result_accuracy(rv, &acc, &acc_unc);
    cr_assert_gt(acc, 0.85, "validation accuracy %g", acc);
    int32_t pred[NDATA / 4];
    ggml_opt_result_pred(rv, pred);
    for (int i = 0; i < NDATA / 4; i++) {
        cr_assert(pred[i] == 0 || pred[i] == 1);
    }
    ggml_opt_result_free(rv);
    ggml_opt_result_free(rt);
    ggml_opt_free(o);
    ggml_opt_dataset_free(d);
    mlp_free(&m);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

/* ---- graphs given step by step (what llama.cpp does) --------------------------------------------- */

Test(opt_steps, prepare_alloc_each_step_trains_like_static_graphs, .init = sims, .timeout = 120) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    struct mlp m;
    mlp_build(&m, cpu, cpu, 1);
    ggml_opt_dataset_t d = regression_data();
    const float mse0 = mse_of(&m, d);
    struct ggml_opt_params p = ggml_opt_default_params(s, GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR);
    p.get_opt_pars = fixed_pars;
    ggml_opt_context_t o = ggml_opt_init(p);
    cr_assert_not_null(o);
    cr_assert(!ggml_opt_static_graphs(o));
    ggml_opt_alloc(o, true); /* without prepare_alloc: refused */
    cr_assert_not_null(ggmlx_last_error());
    ggml_opt_result_t r = ggml_opt_result_init();
    float labels[BATCH];
    for (int step = 0; step < 20 * NDATA / BATCH; step++) {
        struct ggml_init_params pc = { 64 * ggml_tensor_overhead() + 4 * ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, true),
                                       NULL, true };
        struct ggml_context * cc = ggml_init(pc);
        struct ggml_tensor * out = ggml_mul_mat(cc, m.w2, ggml_silu(cc, ggml_add(cc, ggml_mul_mat(cc, m.w1, m.in), m.b1)));
        struct ggml_cgraph * gf = ggml_new_graph_custom(cc, GGML_DEFAULT_GRAPH_SIZE, true);
        ggml_build_forward_expand(gf, out);
        ggml_opt_prepare_alloc(o, cc, gf, m.in, out);
        ggml_opt_alloc(o, true);
        cr_assert_null(ggmlx_last_error(), "step %d: %s", step, ggmlx_last_error());
        float xb[N_IN * BATCH];
        ggml_opt_dataset_get_batch_host(d, xb, sizeof xb, labels, step % (NDATA / BATCH));
        ggml_backend_tensor_set(m.in, xb, 0, sizeof xb);
        ggml_backend_tensor_set(ggml_opt_labels(o), labels, 0, sizeof labels);
        ggml_opt_eval(o, r);
        cr_assert_null(ggmlx_last_error(), "step %d: %s", step, ggmlx_last_error());
        ggml_free(cc);
    }
    const float mse = mse_of(&m, d);
    cr_assert_lt(mse, mse0 / 10.0f, "MSE %g -> %g", (double) mse0, (double) mse);
    int64_t nd;
    ggml_opt_result_ndata(r, &nd);
    cr_assert_eq(nd, 20 * NDATA);
    ggml_opt_result_free(r);
    ggml_opt_free(o);
    ggml_opt_dataset_free(d);
    mlp_free(&m);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

static struct ggml_opt_optimizer_params huge_rate(void * ud) {
    (void) ud;
    struct ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(NULL);
    p.sgd.alpha = 1e30f;
    return p;
}

Test(opt_fit, a_loss_that_turns_nan_is_reported_and_stops_the_fit, .init = sims, .timeout = 120) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, GGML_DEFAULT_GRAPH_SIZE, false, false);
    struct mlp m;
    mlp_build(&m, cpu, cpu, 1);
    ggml_opt_dataset_t d = regression_data();
    ggml_opt_fit(s, m.ctx_c, m.in, m.out, d, GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR, GGML_OPT_OPTIMIZER_TYPE_SGD,
                 huge_rate, 3, BATCH, 0.0f, true);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "the loss is"), "%s", ggmlx_last_error());
    ggml_opt_dataset_free(d);
    mlp_free(&m);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

/* the scheduler refuses an AdamW step whose moments live where the step's device cannot update them */
Test(opt_sched, adamw_moments_on_another_device_are_refused, .init = sims) {
    ggml_backend_t be[3] = { ggml_backend_dev_init(ggml_backend_dev_by_name("SIM0"), NULL),
                             ggml_backend_dev_init(ggml_backend_dev_by_name("SIM1"), NULL), ggml_backend_cpu_init() };
    ggml_backend_sched_t s = ggml_backend_sched_new(be, NULL, 3, 256, false, false);
    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * c1 = ggml_init(ip), * c0 = ggml_init(ip), * cc = ggml_init(ip);
    struct ggml_tensor * w = ggml_new_tensor_1d(c1, GGML_TYPE_F32, 8);
    struct ggml_tensor * g = ggml_new_tensor_1d(c1, GGML_TYPE_F32, 8);
    struct ggml_tensor * m = ggml_new_tensor_1d(c0, GGML_TYPE_F32, 8);
    struct ggml_tensor * v = ggml_new_tensor_1d(c0, GGML_TYPE_F32, 8);
    struct ggml_tensor * p = ggml_new_tensor_1d(cc, GGML_TYPE_F32, 7);
    ggml_set_name(m, "m");
    ggml_set_param(w);
    ggml_backend_buffer_t b1 = ggml_backend_alloc_ctx_tensors(c1, be[1]);
    ggml_backend_buffer_t b0 = ggml_backend_alloc_ctx_tensors(c0, be[0]);
    ggml_backend_buffer_t bc = ggml_backend_alloc_ctx_tensors(cc, be[2]);
    struct ggml_cgraph * gr = ggml_new_graph(cc);
    ggml_build_forward_expand(gr, ggml_opt_step_adamw(cc, w, g, m, v, p));
    /* SIM1 cannot use SIM0's memory: the step would update a copy of m */
    cr_assert(!ggml_backend_supports_buft(be[1], ggml_backend_buffer_get_type(b0)));
    cr_assert(!ggml_backend_sched_alloc_graph(s, gr));
    cr_assert_not_null(strstr(ggmlx_last_error(), "updates 'm' in place"), "%s", ggmlx_last_error());
    ggml_backend_sched_free(s);
    ggml_backend_buffer_free(bc);
    ggml_backend_buffer_free(b0);
    ggml_backend_buffer_free(b1);
    ggml_free(cc);
    ggml_free(c0);
    ggml_free(c1);
    for (int i = 0; i < 3; i++) {
        ggml_backend_free(be[i]);
    }
}
