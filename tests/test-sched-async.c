/*
 * test-sched-async.c -- the scheduler's asynchronous behaviour across simulated devices and the
 * CPU (docs/async.md, "The scheduler"): the loop upstream's users run (reset, alloc_graph, set
 * inputs, compute_async, no synchronize), forced bad interleavings, pipeline parallelism, the
 * steady-state counters, input slots and errors of queued work.
 *
 * The networks are sched-async-net.h's chains of stages (one per SIM device) and sched-model.h's
 * decoder; every result is compared with a reference computed without the scheduler. SIM memory
 * faults when the host touches it, so results leave through ggml_backend_tensor_get_async on the
 * queue of the backend the scheduler computed them on, right after compute_async, as llama.cpp
 * fetches logits. Interleavings are built with hold/release: a held queue runs nothing, and
 * settle() waits (bounded) until a queue has run all it can. Built with GGMLX_DROP_EVENT_WAITS
 * the tests marked "drop-event-waits" fail by construction; .ci/run checks that this suite does.
 */
#include "sched-async-net.h"
#include "sched-model.h"

static void sim_setup(void) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = {
        .n_devices     = MAX_STAGES,
        .memory_limit  = (size_t) 64 << 20,
        .n_threads     = 1,
        .refused_ops   = NULL,
        .n_refused_ops = 0,
        .chaos_seed    = chaos ? strtoull(chaos, NULL, 10) : 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
}

TestSuite(sched_async, .init = sim_setup, .timeout = 60);

/* ---- the usual loop ------------------------------------------------------------------------ */

/*
 * llama.cpp's loop: every computation's graph is built in a fresh context and the previous one
 * is freed right after reset, while its work may still be queued; nothing is synchronized until
 * the end. In practice this fails without event waits (SIM1 copies h0 before SIM0 wrote it).
 */
Test(sched_async, loop_without_synchronize_matches_the_cpu_reference) {
    enum { K = 8 };
    struct net n;
    net_init(&n, 2, false);
    static float out[K][D * M];
    struct step prev = { 0 };
    for (int k = 0; k < K; k++) {
        clear_host(out[k]);
        struct step st;
        ggml_backend_sched_reset(n.sched);
        if (prev.ctx != NULL) {
            memset(ggml_get_mem_buffer(prev.ctx), 0xA5, ggml_get_mem_size(prev.ctx));
            step_free(&prev);
        }
        step_build(&n, &st);
        step_enqueue(&n, &st, k, out[k]);
        prev = st;
    }
    ggml_backend_sched_synchronize(n.sched);
    for (int k = 0; k < K; k++) {
        expect_output(&n, k, out[k]);
    }
    const struct ggmlx_sched_stats s = stats_of(&n);
    cr_assert_eq(s.n_computes, K, "n_computes = %llu", (unsigned long long) s.n_computes);
    step_free(&prev);
    net_free(&n);
}

/*
 * drop-event-waits: four computations (four input copies) pile up behind held queues; SIM1,
 * released first, must wait for SIM0 instead of copying h0 before it was computed.
 */
Test(sched_async, computations_piled_up_behind_held_queues_run_in_order_when_released) {
    enum { K = 4 };
    struct net n;
    net_init(&n, 2, true);
    cr_assert(ggmlx_sched_set_n_copies(n.sched, K), "%s", last_error());
    for (int i = 0; i < n.n_backends; i++) {
        cr_assert(ggmlx_backend_queue_hold(n.backends[i]));
    }
    static float out[K][D * M];
    struct step st[K];
    for (int k = 0; k < K; k++) {
        clear_host(out[k]);
        step_run(&n, &st[k], k, out[k]);
    }
    cr_assert_eq(ggml_backend_sched_get_n_copies(n.sched), K);
    cr_assert_gt(ggmlx_backend_queue_pending(n.backends[1]), 0, "SIM1 has work queued");
    for (int k = 0; k < K; k++) {
        expect_untouched(out[k], "nothing ran while every queue was held");
    }
    ggmlx_backend_queue_release(n.backends[1]);
    settle(n.backends[1]);
    expect_untouched(out[0], "SIM1 released alone has not run past its wait for SIM0");
    ggmlx_backend_queue_release(n.backends[0]);
    ggmlx_backend_queue_release(net_cpu(&n));
    ggml_backend_sched_synchronize(n.sched);
    for (int k = 0; k < K; k++) {
        expect_output(&n, k, out[k]);
        step_free(&st[k]);
    }
    net_free(&n);
}

/*
 * The same loop over sched-model.h's decoder (attention with RoPE and a causal mask, RMSNorm,
 * SwiGLU), layers spread over SIM0 and SIM1, embeddings and logits on the CPU. Two computations
 * pile up behind both held SIM queues, SIM1 is let go first, then two more run free; the logits
 * of each are fetched on the CPU queue and equal a CPU-only run.
 */
Test(sched_async, decoder_loop_without_synchronize_over_held_sims_equals_the_cpu_run) {
    enum { K = 4 };
    ggml_backend_t be[3] = { sim(0), sim(1), cpu() };
    struct sm_config cfg = sm_config_default();
    struct sm_model m;
    cr_assert(sm_model_init(&m, &cfg));
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, be, 2, cfg.n_layer);
    cr_assert(sm_model_alloc(&m, ggml_backend_get_default_buffer_type(be[2]), bufts), "%s", last_error());
    ggml_backend_sched_t sched = ggml_backend_sched_new(be, NULL, 3, sm_graph_size(&cfg), true, false);
    cr_assert_not_null(sched, "%s", last_error());
    const size_t n_out = sm_out_count(&cfg, cfg.n_tokens);
    float * out[K];
    struct sm_graph g[K];
    cr_assert(ggmlx_backend_queue_hold(be[0]));
    cr_assert(ggmlx_backend_queue_hold(be[1]));
    for (int k = 0; k < K; k++) {
        if (k == 2) {
            /* two input slots: a third computation would wait for the first, held */
            ggmlx_backend_queue_release(be[1]);
            settle(be[1]);
            ggmlx_backend_queue_release(be[0]);
        }
        out[k] = malloc(n_out * sizeof(float));
        cr_assert_not_null(out[k]);
        ggml_backend_sched_reset(sched);
        cr_assert(sm_graph_build(&g[k], &m, cfg.n_tokens));
        cr_assert(ggml_backend_sched_alloc_graph(sched, g[k].gf), "alloc %d: %s", k, last_error());
        cr_assert(sm_graph_set_inputs(&g[k], &cfg, 100 + (uint64_t) k));
        cr_assert_eq(ggml_backend_sched_graph_compute_async(sched, g[k].gf), GGML_STATUS_SUCCESS, "%s", last_error());
        ggml_backend_t ob = ggml_backend_sched_get_tensor_backend(sched, g[k].out);
        cr_assert_eq(ob, be[2], "the logits are computed on the CPU (output weights there)");
        ggml_backend_tensor_get_async(ob, g[k].out, out[k], 0, n_out * sizeof(float));
    }
    ggml_backend_sched_synchronize(sched);
    float * want = malloc(n_out * sizeof(float));
    cr_assert_not_null(want);
    for (int k = 0; k < K; k++) {
        cr_assert(sm_reference(&cfg, cfg.n_tokens, 100 + (uint64_t) k, want, NULL));
        const double e = sm_max_rel_err(out[k], want, n_out);
        cr_assert(e <= 1e-4, "computation %d: max relative error %g against the CPU-only run", k, e);
        free(out[k]);
        sm_graph_free(&g[k]);
    }
    free(want);
    ggml_backend_sched_free(sched);
    sm_model_free(&m);
    for (int i = 0; i < 3; i++) {
        ggml_backend_free(be[i]);
    }
}

/* ---- forced bad interleavings -------------------------------------------------------------- */

/*
 * drop-event-waits: SIM1 (the destination of h0) is held while SIM0 finishes computation 0 and
 * computation 1 is enqueued. SIM0 must not overwrite h0 with h1 before SIM1 copied it, or
 * computation 0 comes out as computation 1. The context of computation 0 is freed meanwhile.
 */
Test(sched_async, destination_held_while_the_source_runs_the_next_computation) {
    struct net n;
    net_init(&n, 2, true);
    float out0[D * M], out1[D * M];
    clear_host(out0);
    clear_host(out1);
    struct step st0, st1;
    cr_assert(ggmlx_backend_queue_hold(n.backends[1]));
    step_run(&n, &st0, 0, out0);
    settle(n.backends[0]); /* computation 0's first stage has run */
    ggml_backend_sched_reset(n.sched);
    step_free(&st0);
    step_build(&n, &st1);
    step_enqueue(&n, &st1, 1, out1);
    settle(n.backends[0]);
    expect_untouched(out0, "computation 0 waits for held SIM1");
    ggmlx_backend_queue_release(n.backends[1]);
    ggml_backend_sched_synchronize(n.sched);
    expect_output(&n, 0, out0);
    expect_output(&n, 1, out1);
    step_free(&st1);
    net_free(&n);
}

/* drop-event-waits: SIM0 (the source) is held; SIM1 must wait for both of its computations */
Test(sched_async, source_held_the_destination_waits_for_it) {
    struct net n;
    net_init(&n, 2, true);
    float out0[D * M], out1[D * M];
    clear_host(out0);
    clear_host(out1);
    struct step st0, st1;
    cr_assert(ggmlx_backend_queue_hold(n.backends[0]));
    step_run(&n, &st0, 0, out0);
    step_run(&n, &st1, 1, out1);
    settle(n.backends[1]);
    expect_untouched(out0, "SIM1 has not run past its wait for held SIM0 (computation 0)");
    expect_untouched(out1, "SIM1 has not run past its wait for held SIM0 (computation 1)");
    ggmlx_backend_queue_release(n.backends[0]);
    ggml_backend_sched_synchronize(n.sched);
    expect_output(&n, 0, out0);
    expect_output(&n, 1, out1);
    step_free(&st0);
    step_free(&st1);
    net_free(&n);
}

/*
 * With n_copies input slots, computation k + n_copies reuses the slot of computation k: its
 * alloc_graph must block until computation k is done, or the new input overwrites the old one
 * before SIM0 copied it.
 */
/*
 * fn(arg) on a helper thread while `held`'s queue is held: still blocked after 100 ms (else the
 * test fails with `why`), and done within 10 s once the queue is released.
 */
static void expect_blocked_until_release(ggml_backend_t held, void (*fn)(void *), void * arg, const char * why) {
    struct helper * h = start_helper(fn, arg);
    nap_us(100000);
    cr_assert_not(atomic_load(&h->done), "%s", why);
    ggmlx_backend_queue_release(held);
    cr_assert(helper_done_within(h, 10000), "still blocked after the release");
}

static void check_input_slot_reuse(bool parallel, int n_copies) {
    struct net n;
    net_init(&n, 2, parallel);
    cr_assert(ggmlx_sched_set_n_copies(n.sched, n_copies), "%s", last_error());
    static float out[GGMLX_SCHED_MAX_COPIES + 1][D * M];
    struct step st[GGMLX_SCHED_MAX_COPIES + 1];
    cr_assert(ggmlx_backend_queue_hold(n.backends[0]));
    for (int k = 0; k < n_copies; k++) {
        clear_host(out[k]);
        step_run(&n, &st[k], k, out[k]);
    }
    clear_host(out[n_copies]);
    struct enqueue_job job = { .n = &n, .st = &st[n_copies], .k = n_copies, .out = out[n_copies] };
    char why[128];
    snprintf(why, sizeof why, "computation %d was enqueued while computation 0, whose input slot it takes, was held",
             n_copies);
    expect_blocked_until_release(n.backends[0], enqueue_job_fn, &job, why);
    expect_job_ok(&job);
    ggml_backend_sched_synchronize(n.sched);
    for (int k = 0; k <= n_copies; k++) {
        expect_output(&n, k, out[k]);
        step_free(&st[k]);
    }
    const struct ggmlx_sched_stats s = stats_of(&n);
    cr_assert_geq(s.n_host_waits, 1, "the blocked alloc_graph counts as a host wait");
    net_free(&n);
}

Test(sched_async, one_input_slot_alloc_graph_waits_for_the_queued_computation) {
    check_input_slot_reuse(false, 1);
}

Test(sched_async, two_input_slots_the_third_computation_waits_for_the_first) {
    check_input_slot_reuse(true, 2);
}

/*
 * A graph input in the caller's own buffer gets no input slot, and upstream's loop rewrites it
 * right after the next alloc_graph. With SIM0 held, four computations are enqueued before any
 * copy runs: each must still see its own input (the copy reads the caller's memory at once).
 */
Test(sched_async, input_in_the_callers_buffer_may_be_rewritten_once_compute_async_returns) {
    enum { K = 4 };
    struct net n;
    net_init(&n, 1, true);
    cr_assert(ggmlx_sched_set_n_copies(n.sched, K), "%s", last_error());
    struct ggml_init_params xp = { ggml_tensor_overhead(), NULL, true };
    struct ggml_context * xctx = ggml_init(xp);
    struct ggml_tensor * x = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, D, M);
    ggml_set_name(x, "x");
    ggml_set_input(x);
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors_from_buft(xctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(xbuf, "%s", last_error());
    struct ggml_init_params gp = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * gctx = ggml_init(gp);
    struct ggml_tensor * h = ggml_scale(gctx, ggml_mul_mat(gctx, n.w[0], x), 0.125f);
    ggml_set_output(h);
    struct ggml_cgraph * g = ggml_new_graph(gctx);
    ggml_build_forward_expand(g, h);

    cr_assert(ggmlx_backend_queue_hold(n.backends[0]));
    static float out[K][D * M];
    for (int k = 0; k < K; k++) {
        float in[D * M];
        input_of(k, in);
        clear_host(out[k]);
        ggml_backend_sched_reset(n.sched);
        cr_assert(ggml_backend_sched_alloc_graph(n.sched, g), "computation %d: %s", k, last_error());
        cr_assert_eq(x->buffer, xbuf, "the caller's input stays in the caller's buffer");
        ggml_backend_tensor_set(x, in, 0, sizeof in);
        cr_assert_eq(ggml_backend_sched_graph_compute_async(n.sched, g), GGML_STATUS_SUCCESS, "%s", last_error());
        cr_assert_eq(ggml_backend_sched_get_tensor_backend(n.sched, h), n.backends[0]);
        ggml_backend_tensor_get_async(n.backends[0], h, out[k], 0, sizeof out[k]);
    }
    cr_assert_gt(ggmlx_backend_queue_pending(n.backends[0]), 0, "SIM0 has the computations queued");
    ggmlx_backend_queue_release(n.backends[0]);
    ggml_backend_sched_synchronize(n.sched);
    for (int k = 0; k < K; k++) {
        expect_output(&n, k, out[k]);
    }
    const struct ggmlx_sched_stats s = stats_of(&n);
    cr_assert_eq(s.n_sync_fallbacks, 0, "the copies were queued, not made after draining SIM0");
    ggml_backend_sched_reset(n.sched);
    ggml_free(gctx);
    ggml_backend_buffer_free(xbuf);
    ggml_free(xctx);
    net_free(&n);
}

/* ---- a scheduler over the CPU alone, with its queue held --------------------------------------- */

/* y = x^2 / 2 over n values; x in the caller's own CPU buffer when caller_x, else the scheduler's */
struct cpu_graph {
    struct ggml_context * ctx, * xctx;
    ggml_backend_buffer_t xbuf;
    struct ggml_cgraph  * g;
    struct ggml_tensor  * x, * y;
    int64_t               n;
};

static void cpu_graph_build(struct cpu_graph * cg, ggml_backend_t cpu, int64_t n, bool caller_x) {
    struct ggml_init_params p  = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_init_params xp = { ggml_tensor_overhead(), NULL, true };
    memset(cg, 0, sizeof *cg);
    cg->n   = n;
    cg->ctx = ggml_init(p);
    cg->xctx = caller_x ? ggml_init(xp) : NULL;
    cr_assert(cg->ctx != NULL && (!caller_x || cg->xctx != NULL));
    cg->x = ggml_new_tensor_1d(caller_x ? cg->xctx : cg->ctx, GGML_TYPE_F32, n);
    ggml_set_input(cg->x);
    if (caller_x) {
        cg->xbuf = ggml_backend_alloc_ctx_tensors(cg->xctx, cpu);
        cr_assert_not_null(cg->xbuf, "%s", last_error());
    }
    cg->y = ggml_scale(cg->ctx, ggml_sqr(cg->ctx, cg->x), 0.5f);
    ggml_set_output(cg->y);
    cg->g = ggml_new_graph(cg->ctx);
    ggml_build_forward_expand(cg->g, cg->y);
}

static void cpu_graph_free(struct cpu_graph * cg) {
    ggml_free(cg->ctx);
    ggml_backend_buffer_free(cg->xbuf);
    ggml_free(cg->xctx);
}

/* computation k of graph cg: its own input and output (no assertion: helper threads run it) */
struct cpu_job {
    ggml_backend_sched_t sched;
    ggml_backend_t       cpu;
    struct cpu_graph   * cg;
    int                  k;
    float              * in, * out;
    const char         * failed;
};

static void cpu_job_init(struct cpu_job * j, ggml_backend_sched_t sched, ggml_backend_t cpu, struct cpu_graph * cg,
                         int k) {
    *j = (struct cpu_job){ sched, cpu, cg, k, malloc((size_t) cg->n * sizeof(float)),
                           malloc((size_t) cg->n * sizeof(float)), NULL };
    cr_assert(j->in != NULL && j->out != NULL);
    for (int64_t i = 0; i < cg->n; i++) {
        j->in[i]  = (float) (100 * k + i % 29) - 14.0f;
        j->out[i] = SENTINEL;
    }
}

/* reset, alloc_graph, set the input, compute_async, fetch the output on the CPU queue */
static void cpu_job_fn(void * p) {
    struct cpu_job * j = p;
    ggml_backend_sched_reset(j->sched);
    if (!ggml_backend_sched_alloc_graph(j->sched, j->cg->g)) {
        j->failed = "alloc_graph";
        return;
    }
    ggml_backend_tensor_set(j->cg->x, j->in, 0, ggml_nbytes(j->cg->x));
    if (ggml_backend_sched_graph_compute_async(j->sched, j->cg->g) != GGML_STATUS_SUCCESS) {
        j->failed = "graph_compute_async";
        return;
    }
    ggml_backend_tensor_get_async(j->cpu, j->cg->y, j->out, 0, ggml_nbytes(j->cg->y));
}

/*
 * With the CPU queue held: computation 0 of cg[0] is enqueued, then computation 1 of cg[1] on a
 * helper thread must block (else the test fails with `why`) until the queue is released. Both
 * results are right afterwards.
 */
static void check_second_computation_waits(struct cpu_graph * cg0, struct cpu_graph * cg1, const char * why) {
    ggml_backend_t be = cpu();
    ggml_backend_sched_t sched = ggml_backend_sched_new(&be, NULL, 1, 64, true, false);
    cr_assert_not_null(sched, "%s", last_error());
    struct cpu_graph * cg[2] = { cg0, cg1 };
    struct cpu_job job[2];
    for (int k = 0; k < 2; k++) {
        cpu_job_init(&job[k], sched, be, cg[k], k);
    }
    cr_assert(ggmlx_backend_queue_hold(be));
    cpu_job_fn(&job[0]);
    cr_assert_null(job[0].failed, "computation 0: %s failed: %s", job[0].failed, last_error());
    expect_blocked_until_release(be, cpu_job_fn, &job[1], why);
    cr_assert_null(job[1].failed, "computation 1: %s failed: %s", job[1].failed, last_error());
    ggml_backend_sched_synchronize(sched);
    for (int k = 0; k < 2; k++) {
        for (int64_t i = 0; i < cg[k]->n; i++) {
            const float want = 0.5f * job[k].in[i] * job[k].in[i];
            cr_assert_eq(job[k].out[i], want, "computation %d: y[%lld] = %g, want %g", k, (long long) i,
                         job[k].out[i], want);
        }
        free(job[k].in);
        free(job[k].out);
    }
    ggml_backend_sched_free(sched);
    ggml_backend_free(be);
}

/*
 * Each graph larger than the last: the compute buffer must grow, and the old one may not be
 * freed while the queued computation still writes it.
 */
Test(sched_async, cpu_only_scheduler_grows_its_buffer_only_after_the_queued_computation) {
    ggml_backend_t be = cpu();
    struct cpu_graph small, large;
    cpu_graph_build(&small, be, (int64_t) 1 << 16, false);
    cpu_graph_build(&large, be, (int64_t) 1 << 18, false);
    check_second_computation_waits(&small, &large, "the larger graph was allocated while computation 0, which "
                                                   "writes the old compute buffer, was held in the queue");
    cpu_graph_free(&large);
    cpu_graph_free(&small);
    ggml_backend_free(be);
}

/*
 * An input in the caller's own CPU buffer that a CPU split reads in place: upstream's CPU
 * backend computes before compute_async returns, so callers rewrite such an input after the
 * next alloc_graph, which must therefore wait until computation 0 ran.
 */
Test(sched_async, input_in_the_callers_buffer_read_in_place_is_rewritten_only_after_it_was_read) {
    ggml_backend_t be = cpu();
    struct cpu_graph cg;
    cpu_graph_build(&cg, be, 4096, true);
    check_second_computation_waits(&cg, &cg, "the input was handed back for rewriting while computation 0, which "
                                             "reads it in place, was held in the queue");
    cpu_graph_free(&cg);
    ggml_backend_free(be);
}

/* ---- pipeline parallelism ------------------------------------------------------------------ */

/*
 * drop-event-waits: SIM0 -> SIM1 -> SIM2 with SIM2 held. Computation 1 is enqueued without
 * waiting for computation 0 (it has its own input slot): two computations in flight. SIM1 must
 * not overwrite computation 0's h1 with computation 1's before SIM2 copied it.
 */
Test(sched_async, pipeline_enqueues_the_next_computation_while_the_last_stage_is_held) {
    struct net n;
    net_init(&n, 3, true);
    cr_assert_eq(ggml_backend_sched_get_n_copies(n.sched), 2, "parallel: two input copies by default");
    ggml_backend_t last = n.backends[2];
    float out0[D * M], out1[D * M];
    clear_host(out0);
    clear_host(out1);
    struct step st0, st1;
    cr_assert(ggmlx_backend_queue_hold(last));
    step_run(&n, &st0, 0, out0);
    ggmlx_sched_reset_stats(n.sched);
    struct enqueue_job job = { .n = &n, .st = &st1, .k = 1, .out = out1 };
    cr_assert(helper_done_within(start_helper(enqueue_job_fn, &job), 10000),
              "enqueueing computation 1 blocked on computation 0: no pipeline");
    expect_job_ok(&job);
    const struct ggmlx_sched_stats s = stats_of(&n);
    cr_assert_eq(s.n_host_waits, 0, "computation 1 needed no host wait (%llu)", (unsigned long long) s.n_host_waits);
    cr_assert_eq(s.n_computes, 1);
    settle(n.backends[0]);
    settle(n.backends[1]);
    expect_untouched(out0, "computation 0 is still held on SIM2");
    ggmlx_backend_queue_release(last);
    ggml_backend_sched_synchronize(n.sched);
    expect_output(&n, 0, out0);
    expect_output(&n, 1, out1);
    step_free(&st0);
    step_free(&st1);
    net_free(&n);
}

/* what the evaluation callback saw of h0 (on the helper thread that runs the compute) */
struct h0_probe {
    atomic_bool seen;
    float       v[D * M];
};

static bool h0_probe_cb(struct ggml_tensor * t, bool ask, void * user) {
    struct h0_probe * p = user;
    if (strcmp(t->name, "h0") != 0) {
        return true; /* not wanted; when asked after computing: go on */
    }
    if (!ask) {
        ggml_backend_tensor_get(t, p->v, 0, sizeof p->v); /* the scheduler synchronized SIM0 */
        atomic_store(&p->seen, true);
    }
    return true;
}

/*
 * SIM0 -> SIM1 -> SIM2 with SIM2 held: computation 1's first stage is computed on SIM0 while
 * computation 0 still waits on SIM2. It is observed through the evaluation callback, which
 * sees h0 right after SIM0 computed it (the compute itself then blocks on SIM2, on a helper
 * thread, until the release).
 */
Test(sched_async, pipeline_computes_the_next_first_stage_while_the_last_stage_is_held) {
    struct net n;
    net_init(&n, 3, true);
    ggml_backend_t last = n.backends[2];
    float out0[D * M], out1[D * M];
    clear_host(out0);
    clear_host(out1);
    struct step st0, st1;
    cr_assert(ggmlx_backend_queue_hold(last));
    step_run(&n, &st0, 0, out0);
    static struct h0_probe probe;
    atomic_init(&probe.seen, false);
    ggml_backend_sched_set_eval_callback(n.sched, h0_probe_cb, &probe);
    struct enqueue_job job = { .n = &n, .st = &st1, .k = 1, .out = out1 };
    struct helper * h = start_helper(enqueue_job_fn, &job);
    bool seen = false;
    for (int i = 0; i < 100000 && !seen; i++) {
        seen = atomic_load(&probe.seen);
        nap_us(100);
    }
    cr_assert(seen, "SIM0 did not compute computation 1's first stage while computation 0 was held");
    expect_stages(&n, 1, 1, probe.v, "h0 of computation 1, seen by the callback");
    expect_untouched(out0, "computation 0 is still held on SIM2");
    ggmlx_backend_queue_release(last);
    cr_assert(helper_done_within(h, 10000), "computation 1 still blocked after the release");
    expect_job_ok(&job);
    ggml_backend_sched_synchronize(n.sched);
    expect_output(&n, 0, out0);
    expect_output(&n, 1, out1);
    step_free(&st0);
    step_free(&st1);
    net_free(&n);
}

/* ---- steady state -------------------------------------------------------------------------- */

Test(sched_async, steady_state_has_no_host_waits_and_no_sync_fallbacks) {
    enum { WARM = 2, K = 6 };
    struct net n;
    net_init(&n, 2, false);
    float out[D * M];
    for (int k = 0; k < WARM + K; k++) {
        if (k == WARM) {
            ggmlx_sched_reset_stats(n.sched);
        }
        struct step st;
        clear_host(out);
        step_run(&n, &st, k, out);
        ggml_backend_sched_synchronize(n.sched);
        expect_output(&n, k, out);
        step_free(&st);
    }
    const struct ggmlx_sched_stats s = stats_of(&n);
    cr_assert_eq(s.n_computes, K, "n_computes = %llu", (unsigned long long) s.n_computes);
    cr_assert_eq(s.n_splits, 2 * K, "two splits (SIM0, SIM1) per computation: %llu", (unsigned long long) s.n_splits);
    cr_assert_eq(s.n_host_waits, 0, "n_host_waits = %llu", (unsigned long long) s.n_host_waits);
    cr_assert_eq(s.n_sync_fallbacks, 0, "n_sync_fallbacks = %llu", (unsigned long long) s.n_sync_fallbacks);
    cr_assert_eq(s.n_async_copies, 2 * K, "x to SIM0 and h0 to SIM1, queued, per computation: %llu",
                 (unsigned long long) s.n_async_copies);
    cr_assert_eq(s.bytes_copied, (uint64_t) 2 * K * D * M * sizeof(float), "bytes_copied = %llu",
                 (unsigned long long) s.bytes_copied);
    cr_assert_eq(s.n_reallocs, 0, "the same graph shape needs no new buffers: %llu",
                 (unsigned long long) s.n_reallocs);
    net_free(&n);
}

/* ---- input copies -------------------------------------------------------------------------- */

struct sizes {
    size_t                   buffer[MAX_STAGES + 1]; /* ggml_backend_sched_get_buffer_size */
    struct ggmlx_sched_stats stats;
};

/*
 * n_copies input copies, reserved with the graph of computation `first`, then that many
 * computations run (every slot used once): the sizes after them, checked equal to those right
 * after reserve (running reallocates nothing).
 */
static struct sizes sizes_with_copies(struct net * n, int n_copies, int first) {
    struct sizes z;
    cr_assert(ggmlx_sched_set_n_copies(n->sched, n_copies), "%s", last_error());
    struct step st;
    step_build(n, &st);
    ggml_backend_sched_reset(n->sched);
    cr_assert(ggml_backend_sched_reserve(n->sched, st.g), "reserve: %s", last_error());
    cr_assert_eq(ggml_backend_sched_get_n_copies(n->sched), n_copies);
    for (int i = 0; i < n->n_backends; i++) {
        z.buffer[i] = ggml_backend_sched_get_buffer_size(n->sched, n->backends[i]);
    }
    z.stats = stats_of(n);
    step_free(&st);
    for (int k = first; k < first + n_copies; k++) {
        float out[D * M];
        step_run(n, &st, k, out);
        ggml_backend_sched_synchronize(n->sched);
        expect_output(n, k, out);
        cr_assert_eq(backend_index(n, ggml_backend_sched_get_tensor_backend(n->sched, st.x)), n->n_stages,
                     "the graph input is placed on the CPU");
        step_free(&st);
    }
    for (int i = 0; i < n->n_backends; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_size(n->sched, n->backends[i]), z.buffer[i],
                     "%s with %d copies: %zu bytes after running, %zu after reserve", ggml_backend_name(n->backends[i]),
                     n_copies, ggml_backend_sched_get_buffer_size(n->sched, n->backends[i]), z.buffer[i]);
    }
    return z;
}

/*
 * Only graph inputs are multiplied: from two copies to three, the CPU buffer (where x is)
 * grows by one input slot, exactly, and the SIM devices' buffers (weights' products, the copy
 * of x, the copy of h0) do not grow at all.
 */
/*
 * A third copy adds one slot on each backend that holds something a later stage takes from it
 * (the input x on the CPU, each stage's result but the last), and nothing else: the shared part
 * of every buffer stays as it was.
 */
Test(sched_async, a_third_copy_grows_each_backend_by_one_slot_of_what_it_passes_on) {
    struct net n;
    net_init(&n, 2, true);
    const int cpu_id = n.n_stages;
    const size_t x_bytes = (size_t) D * M * sizeof(float);
    const struct sizes z2 = sizes_with_copies(&n, 2, 0);
    const struct sizes z3 = sizes_with_copies(&n, 3, 2);

    for (int b = 0; b <= n.n_stages; b++) {
        const char * name = b == cpu_id ? "CPU" : ggml_backend_name(n.backends[b]);
        /* the CPU passes x on, SIM0 its result; the last stage's result is only read by the host */
        const bool passes_on = b == cpu_id || b < n.n_stages - 1;
        const size_t slot = z3.stats.input_slot_bytes[b][2];
        if (passes_on) {
            cr_assert_geq(slot, x_bytes, "%s: the third slot holds %zu bytes for %zu", name, slot, x_bytes);
        } else {
            cr_assert_eq(slot, 0, "%s passes nothing on: no slot", name);
        }
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            cr_assert_eq(z3.stats.input_slot_bytes[b][c], c < 3 ? slot : 0, "%s, three copies, slot %d", name, c);
            cr_assert_eq(z2.stats.input_slot_bytes[b][c], c < 2 ? slot : 0, "%s, two copies, slot %d", name, c);
        }
        cr_assert_eq(z3.buffer[b] - z2.buffer[b], slot, "%s: %zu -> %zu bytes, one slot of %zu more", name,
                     z2.buffer[b], z3.buffer[b], slot);
        cr_assert_eq(z3.stats.compute_bytes[b], z2.stats.compute_bytes[b], "%s: the shared part is unchanged", name);
    }
    net_free(&n);
}

/* ---- errors in queued work ----------------------------------------------------------------- */

/* set_rows of one row into a cache tensor in SIM0's memory: the index is checked on the worker */
struct row_writer {
    struct ggml_context * kctx;
    struct ggml_tensor  * cache; /* [D, R] on SIM0 */
    ggml_backend_buffer_t kbuf;
};

enum { CACHE_ROWS = 8 };

static void row_writer_init(struct row_writer * w, ggml_backend_t b) {
    struct ggml_init_params kp = { 2 * ggml_tensor_overhead(), NULL, true };
    w->kctx  = ggml_init(kp);
    w->cache = ggml_new_tensor_2d(w->kctx, GGML_TYPE_F32, D, CACHE_ROWS);
    w->kbuf  = ggml_backend_alloc_ctx_tensors(w->kctx, b);
    cr_assert_not_null(w->kbuf, "%s", last_error());
    ggml_backend_buffer_clear(w->kbuf, 0);
}

static void row_writer_free(struct row_writer * w) {
    ggml_backend_buffer_free(w->kbuf);
    ggml_free(w->kctx);
}

static float row_value(int tag, int i) {
    return (float) (tag * 100 + i + 1);
}

/* allocate and enqueue "cache[at] = row_value(tag)"; returns compute_async's status, or the sync compute's */
static enum ggml_status write_row(struct net * n, struct row_writer * w, int32_t at, int tag, bool sync) {
    struct ggml_init_params p = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * row = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, D, 1);
    struct ggml_tensor * idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    ggml_set_input(row);
    ggml_set_input(idx);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_set_rows(ctx, w->cache, row, idx));
    ggml_backend_sched_reset(n->sched);
    cr_assert(ggml_backend_sched_alloc_graph(n->sched, g), "%s", last_error());
    float v[D];
    for (int i = 0; i < D; i++) {
        v[i] = row_value(tag, i);
    }
    ggml_backend_tensor_set(row, v, 0, sizeof v);
    ggml_backend_tensor_set(idx, &at, 0, sizeof at);
    const enum ggml_status st = sync ? ggml_backend_sched_graph_compute(n->sched, g)
                                     : ggml_backend_sched_graph_compute_async(n->sched, g);
    ggml_free(ctx);
    return st;
}

/* cache row r holds row_value(tag) (tag < 0: still zero) */
static void expect_row(const struct row_writer * w, int r, int tag, const char * what) {
    float got[D];
    ggml_backend_tensor_get(w->cache, got, (size_t) r * D * sizeof(float), sizeof got);
    for (int i = 0; i < D; i++) {
        const float want = tag < 0 ? 0.0f : row_value(tag, i);
        cr_assert_float_eq(got[i], want, 0, "%s: row %d [%d] = %g, want %g", what, r, i, got[i], want);
    }
}

/*
 * An index out of range, found by SIM0's worker while computing (docs/async.md rule 8), is
 * returned by ggml_backend_sched_graph_compute with a message; the scheduler reports it once,
 * so the next computation runs.
 */
Test(sched_async, queued_error_is_returned_by_sched_graph_compute_once) {
    struct net n;
    net_init(&n, 2, false);
    struct row_writer w;
    row_writer_init(&w, n.backends[0]);
    cr_assert_neq(write_row(&n, &w, CACHE_ROWS + 3, 1, true), GGML_STATUS_SUCCESS, "the bad index is reported");
    cr_assert(strstr(last_error(), "SIM0") != NULL, "the message names the queue: %s", last_error());
    cr_assert_eq(write_row(&n, &w, 2, 2, true), GGML_STATUS_SUCCESS, "the next computation runs: %s", last_error());
    expect_row(&w, 2, 2, "written after the error");
    row_writer_free(&w);
    net_free(&n);
}

/*
 * The same error after compute_async: ggml_backend_sched_synchronize does not lose it (it stays
 * on SIM0's queue), the next ggml_backend_sched_graph_compute returns it and runs nothing, and
 * the one after that works.
 */
Test(sched_async, queued_error_after_compute_async_surfaces_at_the_next_sched_graph_compute) {
    struct net n;
    net_init(&n, 2, false);
    struct row_writer w;
    row_writer_init(&w, n.backends[0]);
    cr_assert_eq(write_row(&n, &w, CACHE_ROWS + 3, 1, false), GGML_STATUS_SUCCESS, "enqueued: %s", last_error());
    ggml_backend_sched_synchronize(n.sched);
    cr_assert_neq(ggmlx_backend_get_status(n.backends[0]), GGML_STATUS_SUCCESS, "sticky on SIM0 after synchronize");
    cr_assert_neq(write_row(&n, &w, 1, 2, true), GGML_STATUS_SUCCESS, "the next computation returns the error");
    cr_assert_str_neq(last_error(), "", "with a message");
    expect_row(&w, 1, -1, "the computation refused because of the error wrote nothing");
    cr_assert_eq(write_row(&n, &w, 3, 3, true), GGML_STATUS_SUCCESS, "then it works: %s", last_error());
    expect_row(&w, 3, 3, "written after the error was reported");
    row_writer_free(&w);
    net_free(&n);
}
