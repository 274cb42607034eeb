/*
 * test-sched.c -- the backend scheduler over 1 to 4 SIM devices and the CPU: every result is
 * checked against a CPU-only run of the same graph (sched-fixture.h), and where nodes went
 * against the rules that place them (weights pin their ops, refused ops fall back to the CPU,
 * user pins win). test-sched-eval.c has the eval callback, buffer sizes and counters.
 *
 * SIM memory faults when the host touches it, so a value that the scheduler left on a device
 * without the copy it needed crashes the test instead of passing it.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "sched-fixture.h"

TestSuite(sched, .init = four_sims, .timeout = 60);

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

/* output weights on SIM3: the logits are computed there and stay in its private memory */
static void outputs_on_sim3(bool embd_input) {
    struct backends b = backends_new(4);
    struct decoder d;
    decoder_new(&d, 4, b.be[3], b.be, 4, embd_input);
    ggml_backend_sched_t s = sched_new(&b, false);
    decoder_run(s, &d, &d.g, 3);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, d.g.inp), cpu_of(&b));
    cr_assert(ggml_backend_buffer_is_host(d.g.inp->buffer), "the input is in host memory");
    if (!embd_input) {
        cr_assert_eq(backend_of(s, &d.g, "embd"), b.be[3], "the lookup runs where the table is");
    }
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, d.g.out), b.be[3]);
    cr_assert_not(ggml_backend_buffer_is_host(d.g.out->buffer), "the logits are in SIM3's memory");
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, embeddings_in_from_the_cpu_logits_out_from_a_sim) { outputs_on_sim3(true); }
Test(sched, token_ids_in_from_the_cpu_lookup_and_logits_on_a_sim) { outputs_on_sim3(false); }

Test(sched, a_deeper_wider_decoder_over_four_sims_equals_cpu) {
    struct backends b = backends_new(4);
    struct decoder d;
    d.cfg = sm_config_default();
    d.cfg.n_layer = 12;
    d.cfg.n_embd = 64;
    d.cfg.n_head = 8;
    d.cfg.n_ff = 160;
    d.cfg.n_tokens = 24;
    d.cfg.n_vocab = 100;
    cr_assert(sm_model_init(&d.m, &d.cfg));
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, b.be, 4, d.cfg.n_layer);
    cr_assert(sm_model_alloc(&d.m, ggml_backend_cpu_buffer_type(), bufts));
    cr_assert(sm_graph_build(&d.g, &d.m, d.cfg.n_tokens));
    ggml_backend_sched_t s = sched_new(&b, true);
    for (uint64_t seed = 15; seed < 17; seed++) {
        decoder_run(s, &d, &d.g, seed);
    }
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 4 + 2);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

/*
 * graph_size is a hint: the scheduler grows its tables past it (upstream asserts once the nodes,
 * its split copies and their inputs pass graph_size). 4 layers over two SIM devices are over 100
 * nodes, 4 splits and their copies, under a graph_size of 8; computed twice, in pipeline.
 */
Test(sched, a_graph_of_many_more_nodes_than_graph_size_over_devices_equals_cpu) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = ggml_backend_sched_new(b.be, NULL, b.n, 8, true, false);
    cr_assert_not_null(s, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert_gt(ggml_graph_n_nodes(d.g.gf), 8 * 10, "far more nodes than graph_size: %d", ggml_graph_n_nodes(d.g.gf));
    for (uint64_t seed = 30; seed < 32; seed++) {
        decoder_run(s, &d, &d.g, seed);
    }
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 2 + 2, "CPU, SIM0, SIM1, CPU");
    cr_assert_gt(ggml_backend_sched_get_n_copies(s), 1);
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

/* ---- more placement rules ------------------------------------------------------------------------ */

static void cpu_chain(struct chain * c, int n, int64_t n_tok) {
    ggml_backend_buffer_type_t bufts[CH_MAX];
    for (int i = 0; i < n; i++) {
        bufts[i] = ggml_backend_cpu_buffer_type();
    }
    chain_new(c, n, bufts, n_tok);
}

Test(sched, weights_in_host_memory_without_op_offload_stay_on_the_cpu) {
    struct backends b = backends_new(2);
    struct chain c;
    cpu_chain(&c, 3, 32);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 8);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 1);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.y[i]), cpu_of(&b));
    }
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert_eq(st.n_async_copies + st.n_sync_fallbacks, 0, "nothing to copy: all on the CPU");
    cr_assert_eq(st.bytes_copied, 0);
    float * want = chain_reference(3, 32, 8);
    assert_close(c.y[2], want, "CPU-only chain");
    free(want);
    ggml_backend_sched_free(s);
    chain_free(&c);
    backends_free(&b);
}

/* SIM devices take an op on host weights from a batch of 32 rows (sim_dev_offload_op) */
Test(sched, op_offload_sends_a_large_batch_on_host_weights_to_the_first_device) {
    struct backends b = backends_new(2);
    for (int k = 0; k < 2; k++) {
        const int64_t n_tok = k == 0 ? 32 : 8;
        struct chain c;
        cpu_chain(&c, 2, n_tok);
        ggml_backend_sched_t s = ggml_backend_sched_new(b.be, NULL, b.n, 256, false, true);
        cr_assert_not_null(s);
        cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
        chain_set_input(&c, 9);
        cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);
        ggml_backend_t want_b = n_tok >= 32 ? b.be[0] : cpu_of(&b);
        for (int i = 0; i < 2; i++) {
            ggml_backend_t got = ggml_backend_sched_get_tensor_backend(s, c.y[i]);
            cr_assert_eq(got, want_b, "batch %lld: y%d on %s, want %s", (long long) n_tok, i, bname(got), bname(want_b));
        }
        float * want = chain_reference(2, n_tok, 9);
        assert_close(c.y[1], want, "offloaded chain");
        free(want);
        ggml_backend_sched_free(s);
        chain_free(&c);
    }
    backends_free(&b);
}

/* the llama KV-cache pattern: a node writes into a tensor the user allocated on a device */
Test(sched, a_copy_into_a_preallocated_cache_runs_on_the_cache_device) {
    struct backends b = backends_new(2);
    const ggml_backend_buffer_type_t bufts[1] = { ggml_backend_get_default_buffer_type(b.be[0]) };
    struct chain c;
    chain_new(&c, 1, bufts, 8);
    struct ggml_context * kctx = sm_ctx_new(1, 0);
    struct ggml_tensor * cache = ggml_new_tensor_2d(kctx, GGML_TYPE_F32, CH_DIM, 16);
    ggml_backend_buffer_t kbuf = ggml_backend_alloc_ctx_tensors(kctx, b.be[1]);
    cr_assert_not_null(kbuf);
    ggml_backend_buffer_clear(kbuf, 0);
    /* y0 into cache rows 8..15, rows 0..7 untouched */
    struct ggml_tensor * dst = ggml_view_2d(c.ctx, cache, CH_DIM, 8, cache->nb[1], 8 * cache->nb[1]);
    struct ggml_tensor * cp = ggml_cpy(c.ctx, c.y[0], dst);
    ggml_build_forward_expand(c.gf, cp);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    chain_set_input(&c, 10);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.y[0]), b.be[0]);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, cp), b.be[1], "the write goes where the cache is");
    float * got = sm_read(cache), * want = chain_reference(1, 8, 10);
    for (int i = 0; i < CH_DIM * 8; i++) {
        cr_assert_eq(got[i], 0.0f, "cache row %d was written", i / CH_DIM);
    }
    const double e = sm_max_rel_err(got + CH_DIM * 8, want, CH_DIM * 8);
    cr_assert(e <= TOL, "the cache holds y0 within %g", e);
    free(got);
    free(want);
    ggml_backend_sched_free(s);
    ggml_backend_buffer_free(kbuf);
    ggml_free(kctx);
    chain_free(&c);
    backends_free(&b);
}

Test(sched, f16_weights_over_two_sims_equal_cpu) {
    struct backends b = backends_new(2);
    struct decoder d;
    d.cfg = sm_config_default();
    d.cfg.wtype = GGML_TYPE_F16;
    cr_assert(sm_model_init(&d.m, &d.cfg));
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, b.be, 2, d.cfg.n_layer);
    cr_assert(sm_model_alloc(&d.m, ggml_backend_cpu_buffer_type(), bufts));
    cr_assert(sm_graph_build(&d.g, &d.m, d.cfg.n_tokens));
    ggml_backend_sched_t s = sched_new(&b, false);
    decoder_run(s, &d, &d.g, 11);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, split_graph_places_nodes_without_allocating) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 2, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_split_graph(s, d.g.gf);
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 4);
    cr_assert_eq(backend_of(s, &d.g, "l0.ffn_out"), b.be[0]);
    cr_assert_eq(backend_of(s, &d.g, "l1.ffn_out"), b.be[1]);
    for (int i = 0; i < b.n; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_size(s, b.be[i]), 0, "%s: nothing allocated yet", bname(b.be[i]));
    }
    decoder_run(s, &d, &d.g, 12);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched, outputs_on_several_devices_are_all_read_back) {
    struct backends b = backends_new(3);
    ggml_backend_buffer_type_t bufts[3];
    for (int i = 0; i < 3; i++) {
        bufts[i] = ggml_backend_get_default_buffer_type(b.be[i]);
    }
    struct chain c;
    chain_new(&c, 3, bufts, 8);
    ggml_set_output(c.y[0]);
    ggml_set_output(c.y[1]);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 14);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.y[i]), b.be[i]);
        float * want = chain_reference(i + 1, 8, 14);
        assert_close(c.y[i], want, "an output");
        free(want);
    }
    ggml_backend_sched_free(s);
    chain_free(&c);
    backends_free(&b);
}

/* with nothing for the user to write, compute may allocate by itself (as upstream) */
Test(sched, compute_allocates_a_graph_that_was_not_allocated) {
    struct backends b = backends_new(2);
    struct pin_graph p;
    pin_graph_new(&p);
    struct ggml_context * uctx = sm_ctx_new(2, 0);
    struct ggml_tensor * ua = ggml_dup_tensor(uctx, p.a), * ub = ggml_dup_tensor(uctx, p.bb);
    ggml_backend_buffer_t ubuf = ggml_backend_alloc_ctx_tensors(uctx, b.be[1]);
    cr_assert_not_null(ubuf);
    p.c->src[0] = ua; /* the user's operands on SIM1: the scheduler allocates nothing to fill */
    p.c->src[1] = ub;
    p.a  = ua;
    p.bb = ub;
    p.gf = ggml_new_graph_custom(p.ctx, 16, false); /* without the old inputs as leafs */
    ggml_build_forward_expand(p.gf, p.out);
    cr_assert(sm_fill(ua, 3, 1, 0, 0.0f, 1.0f));
    cr_assert(sm_fill(ub, 3, 2, 0, 0.0f, 1.0f));
    ggml_backend_sched_t s = sched_new(&b, false);
    for (int k = 0; k < 2; k++) {
        const enum ggml_status st = ggml_backend_sched_graph_compute(s, p.gf);
        cr_assert_eq(st, GGML_STATUS_SUCCESS, "compute %d: status %d: %s", k, st, ggmlx_last_error() ? ggmlx_last_error() : "");
        cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, p.c), b.be[1], "the operands' device");
        pin_graph_check(&p);
        ggml_backend_sched_reset(s);
    }
    ggml_backend_sched_free(s);
    ggml_backend_buffer_free(ubuf);
    ggml_free(uctx);
    ggml_free(p.ctx);
    backends_free(&b);
}
