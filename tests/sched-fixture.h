/*
 * sched-fixture.h -- what the scheduler suites (test-sched.c, test-sched-eval.c) share: SIM
 * device set-ups for a test's .init, backends SIM0..SIMn-1 + CPU, a chain of matmuls with each
 * weight in its own WEIGHTS buffer, the sched-model.h decoder, and comparisons against a
 * CPU-only run (a graph allocator on one CPU backend, no scheduler). Criterion helpers.
 */
#ifndef GGMLX_SCHED_FIXTURE_H
#define GGMLX_SCHED_FIXTURE_H

#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "sched-model.h"
#include "test-errlog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-4

/* GGMLX_SIM_CHAOS, when set, is passed on: results must not depend on queue timing */
static inline void configure(int n_devices, size_t memory, const enum ggml_op * refused, int n_refused) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = {
        .n_devices = n_devices, .memory_limit = memory, .n_threads = 1,
        .refused_ops = refused, .n_refused_ops = n_refused, .chaos_seed = chaos ? strtoull(chaos, NULL, 10) : 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

/* Criterion runs the suite's init, then the test's: a test's own init reconfigures the devices */
static inline void four_sims(void) { configure(4, (size_t) 256 << 20, NULL, 0); }
static inline void sims_refusing_softmax(void) {
    static const enum ggml_op refuse_softmax[] = { GGML_OP_SOFT_MAX };
    configure(2, (size_t) 256 << 20, refuse_softmax, 1);
}
static inline void small_sims(void) { configure(2, (size_t) 4 << 20, NULL, 0); }

/* ---- backends ------------------------------------------------------------------------------- */

/* be[0..n_sim-1] = SIM0.., be[n_sim] = CPU */
struct backends {
    ggml_backend_t be[GGML_SCHED_MAX_BACKENDS];
    int            n;
};

static inline struct backends backends_new(int n_sim) {
    struct backends b = { { 0 }, n_sim + 1 };
    for (int i = 0; i < n_sim; i++) {
        char name[16];
        snprintf(name, sizeof name, "SIM%d", i);
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
        cr_assert_not_null(dev, "no %s", name);
        b.be[i] = ggml_backend_dev_init(dev, NULL);
        cr_assert(b.be[i] != NULL && ggmlx_backend_is_sim(b.be[i]));
    }
    b.be[n_sim] = ggml_backend_cpu_init();
    cr_assert_not_null(b.be[n_sim]);
    return b;
}

static inline void backends_free(struct backends * b) {
    for (int i = 0; i < b->n; i++) {
        ggml_backend_free(b->be[i]);
    }
}

static inline ggml_backend_t cpu_of(const struct backends * b) { return b->be[b->n - 1]; }

static inline ggml_backend_sched_t sched_new(struct backends * b, bool parallel) {
    ggml_backend_sched_t s = ggml_backend_sched_new(b->be, NULL, b->n, 2048, parallel, false);
    cr_assert_not_null(s, "sched_new: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return s;
}

static inline const char * bname(ggml_backend_t b) { return b ? ggml_backend_name(b) : "(none)"; }

/* ---- a chain of matmuls, each weight in its own WEIGHTS buffer ----------------------------- */

#define CH_MAX 16
#define CH_DIM 64

struct chain {
    int                   n;
    struct ggml_context * wctx[CH_MAX];
    ggml_backend_buffer_t wbuf[CH_MAX];
    struct ggml_tensor  * w[CH_MAX];
    struct ggml_context * ctx;
    struct ggml_cgraph  * gf;
    struct ggml_tensor  * x, * y[CH_MAX];
};

/* y[i] = w[i] y[i-1], y[-1] = x [CH_DIM, n_tok]; w[i] allocated on bufts[i] */
static inline void chain_new(struct chain * c, int n, const ggml_backend_buffer_type_t * bufts, int64_t n_tok) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->ctx = sm_ctx_new(CH_MAX + 2, 64);
    cr_assert_not_null(c->ctx);
    c->x = ggml_new_tensor_2d(c->ctx, GGML_TYPE_F32, CH_DIM, n_tok);
    ggml_set_name(c->x, "x");
    ggml_set_input(c->x);
    struct ggml_tensor * cur = c->x;
    for (int i = 0; i < n; i++) {
        c->wctx[i] = sm_ctx_new(1, 0);
        c->w[i] = ggml_new_tensor_2d(c->wctx[i], GGML_TYPE_F32, CH_DIM, CH_DIM);
        c->wbuf[i] = sm_alloc_weights(c->wctx[i], bufts[i]);
        cr_assert_not_null(c->wbuf[i], "weight %d: %s", i, ggmlx_last_error() ? ggmlx_last_error() : "");
        cr_assert(sm_fill(c->w[i], 77, 1, (uint64_t) i, 0.0f, 1.7f / sqrtf((float) CH_DIM)));
        cur = c->y[i] = ggml_format_name(ggml_mul_mat(c->ctx, c->w[i], cur), "y%d", i);
    }
    ggml_set_output(cur);
    c->gf = ggml_new_graph_custom(c->ctx, 64, false);
    ggml_build_forward_expand(c->gf, cur);
}

static inline void chain_set_input(const struct chain * c, uint64_t seed) {
    cr_assert(sm_fill(c->x, 88, seed, 0, 0.0f, 1.0f));
}

static inline void chain_free(struct chain * c) {
    for (int i = 0; i < c->n; i++) {
        ggml_backend_buffer_free(c->wbuf[i]);
        ggml_free(c->wctx[i]);
    }
    ggml_free(c->ctx);
}

/* the chain's output for input seed, on one CPU backend through a graph allocator */
static inline float * chain_reference(int n, int64_t n_tok, uint64_t seed) {
    ggml_backend_buffer_type_t bufts[CH_MAX];
    for (int i = 0; i < n; i++) {
        bufts[i] = ggml_backend_cpu_buffer_type();
    }
    struct chain c;
    chain_new(&c, n, bufts, n_tok);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    cr_assert(ggml_gallocr_alloc_graph(ga, c.gf));
    chain_set_input(&c, seed);
    cr_assert_eq(ggml_backend_graph_compute(cpu, c.gf), GGML_STATUS_SUCCESS);
    float * out = sm_read(c.y[n - 1]);
    ggml_gallocr_free(ga);
    ggml_backend_free(cpu);
    chain_free(&c);
    return out;
}

static inline void assert_close(const struct ggml_tensor * t, const float * want, const char * what) {
    float * got = sm_read(t);
    cr_assert_not_null(got);
    const double e = sm_max_rel_err(got, want, (size_t) ggml_nelements(t));
    free(got);
    cr_assert(e <= TOL, "%s: max relative error %g against the CPU-only run", what, e);
}

/* ---- the decoder ----------------------------------------------------------------------------- */

struct decoder {
    struct sm_config cfg;
    struct sm_model  m;
    struct sm_graph  g;
};

/* layers spread over lb[0..n_lb-1], tok_embd/output on io */
static inline void decoder_new(struct decoder * d, int n_layer, ggml_backend_t io, ggml_backend_t * lb, int n_lb, bool embd_input) {
    d->cfg = sm_config_default();
    d->cfg.n_layer = n_layer;
    d->cfg.embd_input = embd_input;
    cr_assert(sm_model_init(&d->m, &d->cfg));
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, lb, n_lb, n_layer);
    cr_assert(sm_model_alloc(&d->m, ggml_backend_get_default_buffer_type(io), bufts), "model: %s",
              ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert(sm_graph_build(&d->g, &d->m, d->cfg.n_tokens));
}

static inline void decoder_free(struct decoder * d) {
    sm_graph_free(&d->g);
    sm_model_free(&d->m);
}

static inline void decoder_check(const struct decoder * d, const struct sm_graph * g, uint64_t seed) {
    float * want = malloc(sizeof(float) * sm_out_count(&d->cfg, g->n_tokens));
    cr_assert(sm_reference(&d->cfg, g->n_tokens, seed, want, NULL));
    assert_close(g->out, want, "decoder logits");
    free(want);
}

/* reset, alloc, set the inputs for seed, compute, compare */
static inline void decoder_run(ggml_backend_sched_t s, const struct decoder * d, const struct sm_graph * g, uint64_t seed) {
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, g->gf), "alloc_graph: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert(sm_graph_set_inputs(g, &d->cfg, seed));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, g->gf), GGML_STATUS_SUCCESS, "%s",
                 ggmlx_last_error() ? ggmlx_last_error() : "");
    decoder_check(d, g, seed);
}

static inline ggml_backend_t backend_of(ggml_backend_sched_t s, const struct sm_graph * g, const char * name) {
    struct ggml_tensor * t = ggml_graph_get_tensor(g->gf, name);
    cr_assert_not_null(t, "no node %s", name);
    return ggml_backend_sched_get_tensor_backend(s, t);
}

#endif /* GGMLX_SCHED_FIXTURE_H */
