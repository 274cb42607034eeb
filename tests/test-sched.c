/*
 * test-sched.c -- the backend scheduler over 1 to 4 SIM devices and the CPU: every result is
 * checked against a CPU-only run of the same graph (a graph allocator on one CPU backend, no
 * scheduler), and where nodes went against the rules that place them (weights pin their ops,
 * refused ops fall back to the CPU, user pins win).
 *
 * SIM memory faults when the host touches it, so a value that the scheduler left on a device
 * without the copy it needed crashes the test instead of passing it.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

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

static void configure(int n_devices, size_t memory, const enum ggml_op * refused, int n_refused) {
    const struct ggmlx_sim_config cfg = {
        .n_devices = n_devices, .memory_limit = memory, .n_threads = 1,
        .refused_ops = refused, .n_refused_ops = n_refused, .chaos_seed = 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

/* Criterion runs the suite's init, then the test's: a test's own init reconfigures the devices */
static void four_sims(void) { configure(4, (size_t) 256 << 20, NULL, 0); }
static const enum ggml_op refuse_softmax[] = { GGML_OP_SOFT_MAX };
static void sims_refusing_softmax(void) { configure(2, (size_t) 256 << 20, refuse_softmax, 1); }
static void small_sims(void) { configure(2, (size_t) 4 << 20, NULL, 0); }

TestSuite(sched, .init = four_sims, .timeout = 60);

/* ---- backends ------------------------------------------------------------------------------- */

/* be[0..n_sim-1] = SIM0.., be[n_sim] = CPU */
struct backends {
    ggml_backend_t be[GGML_SCHED_MAX_BACKENDS];
    int            n;
};

static struct backends backends_new(int n_sim) {
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

static void backends_free(struct backends * b) {
    for (int i = 0; i < b->n; i++) {
        ggml_backend_free(b->be[i]);
    }
}

static ggml_backend_t cpu_of(const struct backends * b) { return b->be[b->n - 1]; }

static ggml_backend_sched_t sched_new(struct backends * b, bool parallel) {
    ggml_backend_sched_t s = ggml_backend_sched_new(b->be, NULL, b->n, 2048, parallel, false);
    cr_assert_not_null(s, "sched_new: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return s;
}

static const char * bname(ggml_backend_t b) { return b ? ggml_backend_name(b) : "(none)"; }

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
static void chain_new(struct chain * c, int n, const ggml_backend_buffer_type_t * bufts, int64_t n_tok) {
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

static void chain_set_input(const struct chain * c, uint64_t seed) {
    cr_assert(sm_fill(c->x, 88, seed, 0, 0.0f, 1.0f));
}

static void chain_free(struct chain * c) {
    for (int i = 0; i < c->n; i++) {
        ggml_backend_buffer_free(c->wbuf[i]);
        ggml_free(c->wctx[i]);
    }
    ggml_free(c->ctx);
}

/* the chain's output for input seed, on one CPU backend through a graph allocator */
static float * chain_reference(int n, int64_t n_tok, uint64_t seed) {
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

static void assert_close(const struct ggml_tensor * t, const float * want, const char * what) {
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
static void decoder_new(struct decoder * d, int n_layer, ggml_backend_t io, ggml_backend_t * lb, int n_lb, bool embd_input) {
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

static void decoder_free(struct decoder * d) {
    sm_graph_free(&d->g);
    sm_model_free(&d->m);
}

static void decoder_check(const struct decoder * d, const struct sm_graph * g, uint64_t seed) {
    float * want = malloc(sizeof(float) * sm_out_count(&d->cfg, g->n_tokens));
    cr_assert(sm_reference(&d->cfg, g->n_tokens, seed, want, NULL));
    assert_close(g->out, want, "decoder logits");
    free(want);
}

/* reset, alloc, set the inputs for seed, compute, compare */
static void decoder_run(ggml_backend_sched_t s, const struct decoder * d, const struct sm_graph * g, uint64_t seed) {
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, g->gf), "alloc_graph: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert(sm_graph_set_inputs(g, &d->cfg, seed));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, g->gf), GGML_STATUS_SUCCESS, "%s",
                 ggmlx_last_error() ? ggmlx_last_error() : "");
    decoder_check(d, g, seed);
}

static ggml_backend_t backend_of(ggml_backend_sched_t s, const struct sm_graph * g, const char * name) {
    struct ggml_tensor * t = ggml_graph_get_tensor(g->gf, name);
    cr_assert_not_null(t, "no node %s", name);
    return ggml_backend_sched_get_tensor_backend(s, t);
}

/* ---- placement and results -------------------------------------------------------------------- */

/* weight i on device i % (n_sim + 1), the CPU last: every matmul starts a split */
ParameterizedTestParameters(sched, matmul_chain_runs_where_its_weights_are_and_equals_cpu) {
    static int n_sims[] = { 1, 2, 3, 4 };
    return cr_make_param_array(int, n_sims, 4);
}

ParameterizedTest(int * n_sim, sched, matmul_chain_runs_where_its_weights_are_and_equals_cpu) {
    struct backends b = backends_new(*n_sim);
    const int n = 2 * b.n;
    ggml_backend_buffer_type_t bufts[CH_MAX];
    for (int i = 0; i < n; i++) {
        bufts[i] = ggml_backend_get_default_buffer_type(b.be[i % b.n]);
    }
    struct chain c;
    chain_new(&c, n, bufts, 8);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    chain_set_input(&c, 5);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);

    cr_assert_eq(ggml_backend_sched_get_n_splits(s), n, "one split per matmul (devices alternate)");
    for (int i = 0; i < n; i++) {
        ggml_backend_t got = ggml_backend_sched_get_tensor_backend(s, c.y[i]);
        cr_assert_eq(got, b.be[i % b.n], "y%d on %s, its weight is on %s", i, bname(got), bname(b.be[i % b.n]));
    }
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.x), cpu_of(&b), "graph inputs live on the CPU");
    float * want = chain_reference(n, 8, 5);
    assert_close(c.y[n - 1], want, "chain output");
    free(want);
    ggml_backend_sched_free(s);
    chain_free(&c);
    backends_free(&b);
}

static void decoder_over_sims(int n_sim, int n_layer) {
    struct backends b = backends_new(n_sim);
    struct decoder d;
    decoder_new(&d, n_layer, cpu_of(&b), b.be, n_sim, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    decoder_run(s, &d, &d.g, 1);
    /* embedding lookup on the CPU, the layers on their devices, the logits on the CPU */
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), n_sim + 2);
    for (int il = 0; il < n_layer; il++) {
        char name[32];
        snprintf(name, sizeof name, "l%d.q", il);
        ggml_backend_t want = b.be[il * n_sim / n_layer];
        cr_assert_eq(backend_of(s, &d.g, name), want, "%s on %s, want %s", name, bname(backend_of(s, &d.g, name)),
                     bname(want));
    }
    cr_assert_eq(backend_of(s, &d.g, "out"), cpu_of(&b));
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, decoder_layers_over_two_sims_equal_cpu) { decoder_over_sims(2, 4); }
Test(sched, decoder_layers_over_four_sims_equal_cpu) { decoder_over_sims(4, 8); }

Test(sched, refused_softmax_runs_on_the_cpu_in_a_split_of_its_own, .init = sims_refusing_softmax) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 2, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    decoder_run(s, &d, &d.g, 2);
    for (int il = 0; il < 2; il++) {
        char name[32];
        snprintf(name, sizeof name, "l%d.kq_soft", il);
        cr_assert_eq(backend_of(s, &d.g, name), cpu_of(&b), "%s: SIM refuses soft_max", name);
        snprintf(name, sizeof name, "l%d.kqv", il);
        cr_assert_eq(backend_of(s, &d.g, name), b.be[il], "%s back on its layer's device", name);
    }
    /* CPU | per layer: SIM, CPU (soft_max), SIM | CPU */
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 2 + 3 * 2);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, inputs_on_the_cpu_outputs_read_back_from_a_sim) {
    struct backends b = backends_new(4);
    struct decoder d;
    /* output weights on SIM3: the logits are computed there and stay in its private memory */
    decoder_new(&d, 4, b.be[3], b.be, 4, true);
    ggml_backend_sched_t s = sched_new(&b, false);
    decoder_run(s, &d, &d.g, 3);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, d.g.inp), cpu_of(&b));
    cr_assert(ggml_backend_buffer_is_host(d.g.inp->buffer), "the input is in host memory");
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, d.g.out), b.be[3]);
    cr_assert_not(ggml_backend_buffer_is_host(d.g.out->buffer), "the logits are in SIM3's memory");
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

/* ---- the same graph again ------------------------------------------------------------------- */

Test(sched, repeated_computes_of_one_allocated_graph) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf));
    for (uint64_t seed = 10; seed < 14; seed++) {
        cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, seed));
        cr_assert_eq(ggml_backend_sched_graph_compute(s, d.g.gf), GGML_STATUS_SUCCESS);
        decoder_check(&d, &d.g, seed);
    }
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, reset_and_alloc_of_the_same_graph_again) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    for (uint64_t seed = 20; seed < 24; seed++) {
        decoder_run(s, &d, &d.g, seed);
    }
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, reserve_then_alloc_of_the_same_graph) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_reserve(s, d.g.gf));
    cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, 30));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, d.g.gf), GGML_STATUS_SUCCESS);
    decoder_check(&d, &d.g, 30);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, the_users_graph_sources_are_unchanged_by_every_call) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 2, cpu_of(&b), b.be, 2, false);
    const int n = ggml_graph_n_nodes(d.g.gf);
    struct ggml_tensor ** srcs = malloc(sizeof(struct ggml_tensor *) * (size_t) n * GGML_MAX_SRC);
    for (int i = 0; i < n; i++) {
        memcpy(srcs + (size_t) i * GGML_MAX_SRC, ggml_graph_node(d.g.gf, i)->src, sizeof(struct ggml_tensor *) * GGML_MAX_SRC);
    }
    ggml_backend_sched_t s = sched_new(&b, false);
    for (int step = 0; step < 4; step++) {
        switch (step) {
        case 0: cr_assert(ggml_backend_sched_reserve(s, d.g.gf)); break;
        case 1: ggml_backend_sched_split_graph(s, d.g.gf); break;
        case 2: cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf)); break;
        default:
            cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, 1));
            cr_assert_eq(ggml_backend_sched_graph_compute(s, d.g.gf), GGML_STATUS_SUCCESS);
        }
        cr_assert_eq(ggml_graph_n_nodes(d.g.gf), n);
        for (int i = 0; i < n; i++) {
            cr_assert_arr_eq(ggml_graph_node(d.g.gf, i)->src, srcs + (size_t) i * GGML_MAX_SRC,
                             sizeof(struct ggml_tensor *) * GGML_MAX_SRC, "step %d: node %d (%s) sources rewritten", step,
                             i, ggml_graph_node(d.g.gf, i)->name);
        }
    }
    free(srcs);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, reserve_for_the_largest_graph_then_smaller_graphs_need_no_realloc) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    d.cfg.n_tokens = d.m.cfg.n_tokens = 16;
    struct sm_graph measure;
    cr_assert(sm_graph_build(&measure, &d.m, 16));
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_reserve(s, measure.gf));
    size_t size0[3];
    for (int i = 0; i < 3; i++) {
        size0[i] = ggml_backend_sched_get_buffer_size(s, b.be[i]);
        cr_assert_gt(size0[i], 0, "%s has a compute buffer after reserve", bname(b.be[i]));
    }
    struct ggmlx_sched_stats st0, st1;
    cr_assert(ggmlx_sched_get_stats(s, &st0));
    const int sizes[] = { 1, 5, 16, 9 };
    for (int k = 0; k < 4; k++) {
        struct sm_graph g;
        cr_assert(sm_graph_build(&g, &d.m, sizes[k]));
        decoder_run(s, &d, &g, 40 + (uint64_t) k);
        sm_graph_free(&g);
    }
    cr_assert(ggmlx_sched_get_stats(s, &st1));
    cr_assert_eq(st1.n_reallocs, st0.n_reallocs, "no compute buffer grew after reserve (%llu reallocs)",
                 (unsigned long long) (st1.n_reallocs - st0.n_reallocs));
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_size(s, b.be[i]), size0[i], "%s buffer size changed", bname(b.be[i]));
    }
    sm_graph_free(&measure);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

/* ---- pins -------------------------------------------------------------------------------------- */

#define PK 32
#define PN 16

struct pin_graph {
    struct ggml_context * ctx;
    struct ggml_cgraph  * gf;
    struct ggml_tensor  * a, * bb, * c, * out;
};

/* out = 2 * (0.5 * mul_mat(a, b)): no weights, so everything goes to the CPU unless pinned */
static void pin_graph_new(struct pin_graph * p) {
    p->ctx = sm_ctx_new(16, 16);
    p->a  = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, PK, PN);
    p->bb = ggml_new_tensor_2d(p->ctx, GGML_TYPE_F32, PK, PN);
    ggml_set_input(p->a);
    ggml_set_input(p->bb);
    p->c = ggml_mul_mat(p->ctx, p->a, p->bb);
    struct ggml_tensor * h = ggml_scale(p->ctx, p->c, 0.5f);
    p->out = ggml_add(p->ctx, h, h);
    ggml_set_output(p->out);
    p->gf = ggml_new_graph_custom(p->ctx, 16, false);
    ggml_build_forward_expand(p->gf, p->out);
}

static void pin_graph_check(const struct pin_graph * p) {
    cr_assert(sm_fill(p->a, 3, 1, 0, 0.0f, 1.0f));
    cr_assert(sm_fill(p->bb, 3, 2, 0, 0.0f, 1.0f));
    float * a = sm_read(p->a), * bv = sm_read(p->bb), * got = sm_read(p->out);
    for (int j = 0; j < PN; j++) {
        for (int i = 0; i < PN; i++) {
            double acc = 0.0;
            for (int k = 0; k < PK; k++) {
                acc += (double) a[i * PK + k] * bv[j * PK + k];
            }
            cr_assert(fabs(got[j * PN + i] - acc) <= TOL * (1 + fabs(acc)), "out[%d,%d] = %g, want %g", i, j, got[j * PN + i], acc);
        }
    }
    free(a);
    free(bv);
    free(got);
}

Test(sched, a_pinned_node_runs_on_its_backend_and_pulls_its_neighbours) {
    struct backends b = backends_new(2);
    struct pin_graph p;
    pin_graph_new(&p);
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_reset(s);
    cr_assert_null(ggml_backend_sched_get_tensor_backend(s, p.c), "nothing assigned after reset");
    ggml_backend_sched_set_tensor_backend(s, p.c, b.be[1]);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, p.c), b.be[1]);
    cr_assert(ggml_backend_sched_alloc_graph(s, p.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, p.c), b.be[1], "the pin survives alloc_graph");
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, p.out), b.be[1], "a device assignment spreads to later nodes");
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 1);
    /* inputs written after alloc: they are in host slots and copied to SIM1 by the compute */
    cr_assert(sm_fill(p.a, 3, 1, 0, 0.0f, 1.0f));
    cr_assert(sm_fill(p.bb, 3, 2, 0, 0.0f, 1.0f));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, p.gf), GGML_STATUS_SUCCESS);
    pin_graph_check(&p);

    ggml_backend_sched_reset(s);
    cr_assert_null(ggml_backend_sched_get_tensor_backend(s, p.c), "reset forgets the pin");
    cr_assert(ggml_backend_sched_alloc_graph(s, p.gf));
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, p.c), cpu_of(&b), "without a pin: the CPU");
    ggml_backend_sched_free(s);
    ggml_free(p.ctx);
    backends_free(&b);
}

Test(sched, a_node_pinned_to_a_backend_that_refuses_its_op_is_an_error, .init = sims_refusing_softmax) {
    struct backends b = backends_new(2);
    struct ggml_context * ctx = sm_ctx_new(8, 8);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 4);
    ggml_set_input(x);
    struct ggml_tensor * y = ggml_soft_max(ctx, x);
    ggml_set_output(y);
    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 8, false);
    ggml_build_forward_expand(gf, y);
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_reset(s);
    ggmlx_clear_last_error();
    g_n_errors = 0;
    ggml_backend_sched_set_tensor_backend(s, y, b.be[0]);
    bool failed = ggmlx_last_error() != NULL;
    if (!failed) {
        failed = !ggml_backend_sched_alloc_graph(s, gf);
        if (!failed) {
            failed = ggml_backend_sched_graph_compute(s, gf) != GGML_STATUS_SUCCESS;
        }
    }
    cr_assert(failed, "soft_max pinned to SIM0, which refuses it, was accepted");
    ASSERT_ERROR();
    /* the scheduler works again once the pin is gone */
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, y), cpu_of(&b));
    cr_assert(sm_fill(x, 4, 0, 0, 0.0f, 2.0f));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, gf), GGML_STATUS_SUCCESS);
    float * v = sm_read(y);
    for (int r = 0; r < 4; r++) {
        double sum = 0.0;
        for (int i = 0; i < 16; i++) {
            sum += v[r * 16 + i];
        }
        cr_assert(fabs(sum - 1.0) < 1e-5, "row %d of soft_max sums to %g", r, sum);
    }
    free(v);
    ggml_backend_sched_free(s);
    ggml_free(ctx);
    backends_free(&b);
}

/* ---- memory ------------------------------------------------------------------------------------ */

Test(sched, a_compute_buffer_past_the_device_limit_fails_then_a_smaller_graph_works, .init = small_sims) {
    struct backends b = backends_new(2);
    const ggml_backend_buffer_type_t bufts[2] = { ggml_backend_get_default_buffer_type(b.be[0]),
                                                  ggml_backend_get_default_buffer_type(b.be[0]) };
    struct chain big, small;
    chain_new(&big, 2, bufts, 16384); /* 4 MiB per activation: the input's copy and y0 alone fill the device */
    chain_new(&small, 2, bufts, 8);
    ggml_backend_sched_t s = sched_new(&b, false);
    g_n_errors = 0;
    cr_assert_not(ggml_backend_sched_alloc_graph(s, big.gf), "8 MiB of live activations fit a 4 MiB device");
    ASSERT_ERROR();
    ggml_backend_sched_reset(s);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, big.gf), GGML_STATUS_ALLOC_FAILED);
    ASSERT_ERROR();
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, small.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    chain_set_input(&small, 6);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, small.gf), GGML_STATUS_SUCCESS);
    float * want = chain_reference(2, 8, 6);
    assert_close(small.y[1], want, "small chain after the failure");
    free(want);
    ggml_backend_sched_free(s);
    chain_free(&big);
    chain_free(&small);
    backends_free(&b);
}

/* ---- eval callback ------------------------------------------------------------------------------ */

struct cb_state {
    struct ggml_cgraph        * gf;
    const struct sm_ref_nodes * ref;          /* NULL: no value check */
    const char                * only;         /* ask for nodes whose name ends so; NULL: all */
    const char                * stop_at;      /* return false once this node is computed */
    bool                        asked[256], seen[256];
    int                         n_seen, n_compared, n_after_stop, n_bad_order;
    bool                        stopped;
    double                      worst;
};

static int node_index(struct ggml_cgraph * gf, const struct ggml_tensor * t) {
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        if (ggml_graph_node(gf, i) == t) {
            return i;
        }
    }
    return -1;
}

static bool ends_with(const char * s, const char * suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool observe(struct ggml_tensor * t, bool ask, void * user_data) {
    struct cb_state * st = user_data;
    const int i = node_index(st->gf, t);
    if (st->stopped) {
        st->n_after_stop++;
    }
    if (i < 0 || i >= 256) {
        st->n_bad_order++;
        return false;
    }
    if (ask) {
        st->asked[i] = st->only == NULL || ends_with(t->name, st->only);
        return st->asked[i];
    }
    if (!st->asked[i] || st->seen[i]) {
        st->n_bad_order++; /* computed data handed over without being asked for, or twice */
    }
    st->seen[i] = true;
    st->n_seen++;
    if (st->ref != NULL && i < st->ref->n_nodes && st->ref->values[i] != NULL) {
        float * got = sm_read(t);
        if (got != NULL) {
            const double e = sm_max_rel_err(got, st->ref->values[i], (size_t) ggml_nelements(t));
            st->worst = isnan(e) || e > st->worst ? e : st->worst;
            st->n_compared++;
            free(got);
        }
    }
    if (st->stop_at != NULL && strcmp(t->name, st->stop_at) == 0) {
        st->stopped = true;
        return false;
    }
    return true;
}

static bool is_view_op(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE || op == GGML_OP_NONE;
}

Test(sched, eval_callback_sees_every_node_with_the_reference_values) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 2, cpu_of(&b), b.be, 2, false);
    struct sm_ref_nodes ref;
    cr_assert(sm_reference(&d.cfg, d.cfg.n_tokens, 50, NULL, &ref));
    cr_assert_eq(ref.n_nodes, ggml_graph_n_nodes(d.g.gf));
    struct cb_state st = { .gf = d.g.gf, .ref = &ref };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf));
    cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, 50));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, d.g.gf), GGML_STATUS_SUCCESS);
    cr_assert_eq(st.n_bad_order, 0, "every node handed over once, after it was asked for");
    for (int i = 0; i < ggml_graph_n_nodes(d.g.gf); i++) {
        struct ggml_tensor * t = ggml_graph_node(d.g.gf, i);
        if (!is_view_op(t->op)) {
            cr_assert(st.asked[i] && st.seen[i], "node %d (%s) asked %d, seen %d", i, t->name, st.asked[i], st.seen[i]);
        }
    }
    cr_assert_geq(st.n_compared, 20 * d.cfg.n_layer);
    cr_assert(st.worst <= TOL, "an observed node differs from the CPU-only run by %g", st.worst);
    decoder_check(&d, &d.g, 50);
    sm_ref_nodes_free(&ref);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, eval_callback_sees_only_the_nodes_it_asks_for) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    struct cb_state st = { .gf = d.g.gf, .only = ".kq_soft" };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    decoder_run(s, &d, &d.g, 51);
    cr_assert_eq(st.n_seen, d.cfg.n_layer, "one soft_max per layer handed over");
    cr_assert_eq(st.n_bad_order, 0);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, eval_callback_false_stops_the_whole_compute) {
    struct backends b = backends_new(2);
    const ggml_backend_buffer_type_t bufts[4] = {
        ggml_backend_get_default_buffer_type(b.be[0]), ggml_backend_get_default_buffer_type(b.be[0]),
        ggml_backend_get_default_buffer_type(b.be[1]), ggml_backend_get_default_buffer_type(b.be[1]) };
    struct chain c;
    chain_new(&c, 4, bufts, 8);
    struct cb_state st = { .gf = c.gf, .stop_at = "y0" };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 7);
    /* a marker in the output (SIM1's memory): still there when SIM1's split never ran */
    float mark[CH_DIM * 8];
    for (int i = 0; i < CH_DIM * 8; i++) {
        mark[i] = 12345.0f;
    }
    ggml_backend_tensor_set(c.y[3], mark, 0, sizeof mark);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_ABORTED);
    cr_assert(st.stopped);
    cr_assert_eq(st.n_after_stop, 0, "the callback was called %d times after it said stop", st.n_after_stop);
    float * out = sm_read(c.y[3]);
    cr_assert_arr_eq(out, mark, sizeof mark, "the split after the stop ran");
    free(out);

    ggml_backend_sched_set_eval_callback(s, NULL, NULL);
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 7);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS, "the scheduler works after a stop");
    float * want = chain_reference(4, 8, 7);
    assert_close(c.y[3], want, "chain after an aborted compute");
    free(want);
    ggml_backend_sched_free(s);
    chain_free(&c);
    backends_free(&b);
}

/* ---- buffers, copies, counters ------------------------------------------------------------------ */

Test(sched, buffer_types_are_the_backends_defaults_and_copies_multiply_only_inputs) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 1, "one copy without parallel");
    for (int i = 0; i < b.n; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_type(s, b.be[i]), ggml_backend_get_default_buffer_type(b.be[i]));
    }
    decoder_run(s, &d, &d.g, 60);
    size_t one[3], three[3];
    for (int i = 0; i < 3; i++) {
        one[i] = ggml_backend_sched_get_buffer_size(s, b.be[i]);
    }
    cr_assert_gt(one[0], 0);
    cr_assert_gt(one[1], 0);
    cr_assert(ggmlx_sched_set_n_copies(s, 3));
    for (uint64_t seed = 61; seed < 65; seed++) {
        decoder_run(s, &d, &d.g, seed); /* rotates through the three input slots */
    }
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 3);
    for (int i = 0; i < 3; i++) {
        three[i] = ggml_backend_sched_get_buffer_size(s, b.be[i]);
    }
    cr_assert_eq(three[0], one[0], "SIM0 holds no graph input: no more memory with more copies");
    cr_assert_eq(three[1], one[1], "SIM1 holds no graph input: no more memory with more copies");
    const size_t align = ggml_backend_buft_get_alignment(ggml_backend_get_default_buffer_type(cpu_of(&b)));
    const struct ggml_tensor * ins[3] = { d.g.inp, d.g.pos, d.g.mask };
    size_t per_copy = 0;
    for (int i = 0; i < 3; i++) {
        per_copy += (ggml_nbytes(ins[i]) + align - 1) / align * align;
    }
    cr_assert_gt(three[2], one[2], "two more copies of the inputs on the CPU");
    cr_assert_leq(three[2] - one[2], 2 * (per_copy + align), "CPU grew by %zu for 2 copies of %zu bytes of inputs",
                  three[2] - one[2], per_copy);
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
        cr_assert_eq(st.input_slot_bytes[2][c] > 0, c < 3, "CPU input slot %d: %zu bytes", c, st.input_slot_bytes[2][c]);
        cr_assert_eq(st.input_slot_bytes[0][c], 0);
        cr_assert_eq(st.input_slot_bytes[1][c], 0);
    }
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, parallel_keeps_two_copies) {
    struct backends b = backends_new(2);
    ggml_backend_sched_t s = sched_new(&b, true);
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 2);
    cr_assert_eq(ggml_backend_sched_get_n_backends(s), 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_backend(s, i), b.be[i]);
    }
    ggml_backend_sched_free(s);
    backends_free(&b);
}

Test(sched, steady_state_copies_are_queued_with_no_host_wait) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    ggmlx_sched_reset_stats(s);
    for (uint64_t seed = 70; seed < 73; seed++) {
        ggml_backend_sched_reset(s);
        cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf));
        cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, seed));
        cr_assert_eq(ggml_backend_sched_graph_compute_async(s, d.g.gf), GGML_STATUS_SUCCESS);
        ggml_backend_sched_synchronize(s);
        decoder_check(&d, &d.g, seed);
    }
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert_eq(st.n_computes, 3);
    cr_assert_eq(st.n_splits, 3 * (uint64_t) ggml_backend_sched_get_n_splits(s));
    cr_assert_eq(st.n_sync_fallbacks, 0, "SIM devices and the CPU copy through queues");
    cr_assert_eq(st.n_host_waits, 0, "nothing was pending at any alloc (synchronized before)");
    cr_assert_geq(st.n_async_copies, 3 * 3, "at least SIM0 -> SIM1, SIM1 -> CPU and the embeddings per compute");
    cr_assert_gt(st.bytes_copied, 0);
    ggmlx_sched_reset_stats(s);
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert(st.n_computes == 0 && st.n_splits == 0 && st.n_async_copies == 0 && st.bytes_copied == 0);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}
