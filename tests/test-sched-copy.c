/*
 * test-sched-copy.c -- every way the scheduler copies a split input between backends gives
 * the same result: through the destination queue (cpy_tensor_async), through host staging
 * (GGMLX_SCHED_COPY=bounce) and synchronously on the host (GGMLX_SCHED_COPY=sync); the stats
 * say which way was taken. Criterion forks a process per test, so each sets its own
 * environment and SIM devices before the registry is first used.
 */
#include <criterion/criterion.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "sched-model.h"

static ggml_backend_t           g_backends[4];
static int                      g_n;
static ggml_backend_sched_t     g_sched;
static struct sm_config         g_cfg;
static struct sm_model          g_model;

static void setup_with(const char * mode) {
    if (mode != NULL) {
        setenv("GGMLX_SCHED_COPY", mode, 1);
    }
    struct ggmlx_sim_config sc = { .n_devices = 2 };
    cr_assert(ggmlx_sim_configure(&sc));
    g_n = 0;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_GPU) {
            g_backends[g_n++] = ggml_backend_dev_init(d, NULL);
        }
    }
    cr_assert_eq(g_n, 2, "two SIM devices expected");
    g_backends[g_n++] = ggml_backend_cpu_init();

    g_cfg = sm_config_default();
    cr_assert(sm_model_init(&g_model, &g_cfg));
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, g_backends, g_n, g_cfg.n_layer);
    cr_assert(sm_model_alloc(&g_model, ggml_backend_get_default_buffer_type(g_backends[g_n - 1]), bufts));
    g_sched = ggml_backend_sched_new(g_backends, NULL, g_n, sm_graph_size(&g_cfg), false, true);
    cr_assert_not_null(g_sched);
}

static void teardown(void) {
    ggml_backend_sched_free(g_sched);
    sm_model_free(&g_model);
    for (int i = 0; i < g_n; i++) {
        ggml_backend_free(g_backends[i]);
    }
    unsetenv("GGMLX_SCHED_COPY");
}

/* three computes of the decoder; each output equals the CPU-only reference */
static void run_and_check(void) {
    const size_t n = sm_out_count(&g_cfg, g_cfg.n_tokens);
    float * got  = malloc(n * sizeof *got);
    float * want = malloc(n * sizeof *want);
    for (uint64_t it = 0; it < 3; it++) {
        struct sm_graph g;
        cr_assert(sm_graph_build(&g, &g_model, g_cfg.n_tokens));
        ggml_backend_sched_reset(g_sched);
        cr_assert(ggml_backend_sched_alloc_graph(g_sched, g.gf), "%s", ggmlx_last_error());
        cr_assert(sm_graph_set_inputs(&g, &g_cfg, it));
        cr_assert_eq(ggml_backend_sched_graph_compute(g_sched, g.gf), GGML_STATUS_SUCCESS);
        ggml_backend_tensor_get(g.out, got, 0, n * sizeof *got);
        cr_assert(sm_reference(&g_cfg, g_cfg.n_tokens, it, want, NULL));
        cr_assert_lt(sm_max_rel_err(got, want, n), 1e-4, "iteration %d", (int) it);
        sm_graph_free(&g);
    }
    free(got);
    free(want);
}

static struct ggmlx_sched_stats stats(void) {
    struct ggmlx_sched_stats s;
    cr_assert(ggmlx_sched_get_stats(g_sched, &s));
    return s;
}

static void setup_best(void)   { setup_with(NULL); }
static void setup_bounce(void) { setup_with("bounce"); }
static void setup_sync(void)   { setup_with("sync"); }

Test(sched_copy, queued_copies_between_host_queues_need_no_host_copy, .init = setup_best, .fini = teardown) {
    run_and_check();
    const struct ggmlx_sched_stats s = stats();
    cr_assert_gt(s.n_async_copies, 0);
    cr_assert_eq(s.n_sync_fallbacks, 0);
    cr_assert_gt(s.bytes_copied, 0);
}

Test(sched_copy, copies_bounced_through_host_staging_are_right_and_queued, .init = setup_bounce, .fini = teardown) {
    run_and_check();
    const struct ggmlx_sched_stats s = stats();
    cr_assert_gt(s.n_async_copies, 0);
    cr_assert_eq(s.n_sync_fallbacks, 0);
}

Test(sched_copy, synchronous_copies_are_right_and_counted, .init = setup_sync, .fini = teardown) {
    run_and_check();
    const struct ggmlx_sched_stats s = stats();
    cr_assert_eq(s.n_async_copies, 0);
    cr_assert_gt(s.n_sync_fallbacks, 0);
}

/* the bounce through the host, with computes in flight: staging of one slot is not reused early */
Test(sched_copy, bounced_copies_stay_right_with_two_computes_in_flight, .init = setup_bounce, .fini = teardown) {
    cr_assert(ggmlx_sched_set_n_copies(g_sched, 2));
    const size_t n = sm_out_count(&g_cfg, g_cfg.n_tokens);
    enum { K = 6 };
    float * got[K];
    struct sm_graph g[K];
    for (int it = 0; it < K; it++) {
        got[it] = malloc(n * sizeof(float));
        cr_assert(sm_graph_build(&g[it], &g_model, g_cfg.n_tokens));
        ggml_backend_sched_reset(g_sched);
        cr_assert(ggml_backend_sched_alloc_graph(g_sched, g[it].gf));
        cr_assert(sm_graph_set_inputs(&g[it], &g_cfg, (uint64_t) it));
        cr_assert_eq(ggml_backend_sched_graph_compute_async(g_sched, g[it].gf), GGML_STATUS_SUCCESS);
        ggml_backend_t ob = ggml_backend_sched_get_tensor_backend(g_sched, g[it].out);
        cr_assert_not_null(ob);
        ggml_backend_tensor_get_async(ob, g[it].out, got[it], 0, n * sizeof(float));
    }
    ggml_backend_sched_synchronize(g_sched);
    float * want = malloc(n * sizeof *want);
    for (int it = 0; it < K; it++) {
        cr_assert(sm_reference(&g_cfg, g_cfg.n_tokens, (uint64_t) it, want, NULL));
        cr_assert_lt(sm_max_rel_err(got[it], want, n), 1e-4, "iteration %d", it);
        free(got[it]);
        sm_graph_free(&g[it]);
    }
    free(want);
}

/*
 * Rule 7, destination side: a copy must not overtake work queued earlier on its destination.
 * dst's queue is held with a set of dst queued on it; the copy of src into dst is enqueued
 * after it, so when the queue is released dst must end with src's values, not the earlier set's.
 */
Test(sched_copy, a_copy_waits_for_earlier_work_on_its_destination, .init = setup_best, .fini = teardown) {
    ggml_backend_t a = g_backends[0], b = g_backends[1];
    struct ggml_init_params p = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ca = ggml_init(p), * cb = ggml_init(p);
    struct ggml_tensor * src = ggml_new_tensor_1d(ca, GGML_TYPE_F32, 256);
    struct ggml_tensor * dst = ggml_new_tensor_1d(cb, GGML_TYPE_F32, 256);
    ggml_backend_buffer_t ba = ggml_backend_alloc_ctx_tensors(ca, a), bb = ggml_backend_alloc_ctx_tensors(cb, b);
    cr_assert(ba != NULL && bb != NULL);
    float ones[256], twos[256], got[256];
    for (int i = 0; i < 256; i++) {
        ones[i] = 1.0f;
        twos[i] = 2.0f;
    }
    ggml_backend_tensor_set(src, twos, 0, sizeof twos);
    cr_assert(ggmlx_backend_queue_hold(b));
    ggml_backend_tensor_set_async(b, dst, ones, 0, sizeof ones);
    ggml_backend_tensor_copy_async(a, b, src, dst);
    ggml_backend_synchronize(a); /* the source side is done; the destination still holds the set */
    cr_assert(ggmlx_backend_queue_release(b));
    ggml_backend_synchronize(b);
    ggml_backend_tensor_get(dst, got, 0, sizeof got);
    for (int i = 0; i < 256; i++) {
        cr_assert_float_eq(got[i], 2.0f, 0, "element %d: the copy ran before the destination's earlier set", i);
    }
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bb);
    ggml_free(ca);
    ggml_free(cb);
}

/*
 * A graph allocated by one scheduler, which is then freed, can be given to another: the
 * tensors the first one placed are placed anew, not taken for pre-allocated tensors whose
 * buffers are gone.
 */
Test(sched_copy, a_graph_outlives_the_scheduler_that_allocated_it, .init = setup_best, .fini = teardown) {
    const size_t n = sm_out_count(&g_cfg, g_cfg.n_tokens);
    float * got  = malloc(n * sizeof *got);
    float * want = malloc(n * sizeof *want);
    struct sm_graph g;
    cr_assert(sm_graph_build(&g, &g_model, g_cfg.n_tokens));
    cr_assert(ggml_backend_sched_alloc_graph(g_sched, g.gf));
    ggml_backend_sched_free(g_sched);
    g_sched = ggml_backend_sched_new(g_backends, NULL, g_n, sm_graph_size(&g_cfg), false, true);
    cr_assert_not_null(g_sched);
    cr_assert(ggml_backend_sched_alloc_graph(g_sched, g.gf), "%s", ggmlx_last_error());
    cr_assert(sm_graph_set_inputs(&g, &g_cfg, 7));
    cr_assert_eq(ggml_backend_sched_graph_compute(g_sched, g.gf), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    ggml_backend_tensor_get(g.out, got, 0, n * sizeof *got);
    cr_assert(sm_reference(&g_cfg, g_cfg.n_tokens, 7, want, NULL));
    cr_assert_lt(sm_max_rel_err(got, want, n), 1e-4);
    sm_graph_free(&g);
    free(got);
    free(want);
}
