/*
 * test-sim-async.c -- the ordering rules of docs/async.md across two simulated devices (SIM0,
 * SIM1) and the CPU, one test per rule and pairing.
 *
 * SIM memory faults when the host touches it, so every value goes in and out through
 * ggml_backend_tensor_set/get(_async) or a copy between backends: a test that forgot a copy
 * crashes instead of passing. Interleavings are forced with hold/release, never with sleeps: a
 * held queue runs nothing, so "SIM0 has not run yet" is a fact, and settle() waits (bounded)
 * until a queue has run all it can. Built with GGMLX_DROP_EVENT_WAITS the tests marked
 * "drop-event-waits" must fail; .ci/run checks that this suite does.
 */
#include <criterion/criterion.h>

#include "test-queues.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1024

/* Devices are fixed at the first registry use, and every Criterion test runs in a process of its
 * own, so each test configures its two SIM devices first. GGMLX_SIM_CHAOS, when set, is passed
 * on: the suite must hold under random queue delays too. */
static void sim_setup(void) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = {
        .n_devices     = 2,
        .memory_limit  = (size_t) 256 << 20,
        .n_threads     = 1,
        .refused_ops   = NULL,
        .n_refused_ops = 0,
        .chaos_seed    = chaos ? strtoull(chaos, NULL, 10) : 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
}

TestSuite(sim_async, .init = sim_setup, .timeout = 60);

/* ---- helpers ------------------------------------------------------------------------------- */

static struct ggml_context * new_ctx_n(int n_tensors, int n_graphs) {
    struct ggml_init_params p = { (size_t) n_tensors * ggml_tensor_overhead() + (size_t) n_graphs * ggml_graph_overhead(),
                                  NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

static struct ggml_context * new_ctx(void) {
    return new_ctx_n(64, 4);
}

static struct ggml_tensor * vec(struct ggml_context * ctx, const char * name) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_set_name(t, name);
    return t;
}

static ggml_backend_buffer_t alloc_all(struct ggml_context * ctx, ggml_backend_t b) {
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, b);
    cr_assert_not_null(buf, "%s", last_error());
    return buf;
}

static struct ggml_cgraph * graph_of(struct ggml_context * ctx, struct ggml_tensor * out) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    cr_assert_not_null(g);
    ggml_build_forward_expand(g, out);
    return g;
}

static void fill_host(float * v, float base) {
    for (int i = 0; i < N; i++) {
        v[i] = base + (float) i;
    }
}

/* t[i] = base + i, through the buffer (SIM memory cannot be written by the host) */
static void fill(struct ggml_tensor * t, float base) {
    float v[N];
    fill_host(v, base);
    ggml_backend_tensor_set(t, v, 0, sizeof v);
}

static void fill_const(struct ggml_tensor * t, float c) {
    float v[N];
    for (int i = 0; i < N; i++) {
        v[i] = c;
    }
    ggml_backend_tensor_set(t, v, 0, sizeof v);
}

static void expect_host(const float * v, float mul, float base, float add, const char * what) {
    for (int i = 0; i < N; i++) {
        const float want = mul * (base + (float) i) + add;
        cr_assert_float_eq(v[i], want, 1e-3f * (1.0f + fabsf(want)), "%s: [%d] = %g, want %g", what, i, v[i], want);
    }
}

/* every t[i] == mul * (base + i) + add, read through the buffer */
static void expect(const struct ggml_tensor * t, float mul, float base, float add, const char * what) {
    float v[N];
    ggml_backend_tensor_get(t, v, 0, sizeof v);
    expect_host(v, mul, base, add, what);
}

/* bounded: true once b's queue has run everything (within 10 s) */
static bool drained(ggml_backend_t b) {
    for (int i = 0; i < 100000; i++) {
        if (ggmlx_backend_queue_pending(b) == 0) {
            return true;
        }
        nap_us(100);
    }
    return false;
}

/* fn(arg) on a helper thread, so a call that might block the host cannot hang the test */
struct helper {
    void      (*fn)(void *);
    void       * arg;
    atomic_bool  done;
    pthread_t    thread;
};

static void * helper_main(void * p) {
    struct helper * h = p;
    h->fn(h->arg);
    atomic_store(&h->done, true);
    return NULL;
}

static struct helper * start_helper(void (*fn)(void *), void * arg) {
    struct helper * h = calloc(1, sizeof *h);
    cr_assert_not_null(h);
    h->fn  = fn;
    h->arg = arg;
    atomic_init(&h->done, false);
    cr_assert_eq(pthread_create(&h->thread, NULL, helper_main, h), 0);
    return h;
}

/* true when the helper returned within `ms`; joined and freed then, left running otherwise */
static bool helper_done_within(struct helper * h, int ms) {
    for (int i = 0; i < ms * 10; i++) {
        if (atomic_load(&h->done)) {
            pthread_join(h->thread, NULL);
            free(h);
            return true;
        }
        nap_us(100);
    }
    return false;
}

static void event_sync_fn(void * ev) {
    ggml_backend_event_synchronize(ev);
}

static void synchronize_fn(void * b) {
    ggml_backend_synchronize(b);
}

/*
 * One backend's share of a test: x (input), y = 2x, a landing tensor `in` for data from
 * elsewhere, z = 3 * in. All four live in the backend's own memory.
 */
struct stage {
    ggml_backend_t        b;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * x, * y, * in, * z;
    struct ggml_cgraph  * gy, * gz;
};

static void stage_init(struct stage * s, ggml_backend_t b, float base) {
    s->b   = b;
    s->ctx = new_ctx();
    s->x   = vec(s->ctx, "x");
    s->in  = vec(s->ctx, "in");
    s->y   = ggml_scale(s->ctx, s->x, 2.0f);
    s->z   = ggml_scale(s->ctx, s->in, 3.0f);
    s->gy  = graph_of(s->ctx, s->y);
    s->gz  = graph_of(s->ctx, s->z);
    s->buf = alloc_all(s->ctx, b);
    fill(s->x, base);
    fill_const(s->y, -1.0f);  /* what a reader sees if it runs before the producer */
    fill_const(s->in, -2.0f); /* what the consumer sees if the data has not arrived */
    fill_const(s->z, -7.0f);
}

static void stage_free(struct stage * s) {
    ggml_backend_free(s->b);
    ggml_backend_buffer_free(s->buf);
    ggml_free(s->ctx);
}

static void compute_async(ggml_backend_t b, struct ggml_cgraph * g) {
    cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_SUCCESS, "%s: %s", ggml_backend_name(b),
                 last_error());
}

/* ---- rule 1: each SIM backend is one in-order queue ---------------------------------------- */

Test(sim_async, rule1_sim_compute_async_returns_before_running) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    cr_assert(ggmlx_backend_queue_hold(s.b));
    compute_async(s.b, s.gy);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 1);
    expect(s.y, 0.0f, 0.0f, -1.0f, "nothing ran while held");
    cr_assert(ggmlx_backend_queue_release(s.b));
    ggml_backend_synchronize(s.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0);
    expect(s.y, 2.0f, 1.0f, 0.0f, "y after synchronize");
    stage_free(&s);
}

Test(sim_async, rule1_sim_set_compute_get_run_in_enqueue_order) {
    struct stage s;
    stage_init(&s, sim(1), 1.0f);
    float in[N], out[N];
    fill_host(in, 10.0f);
    for (int i = 0; i < N; i++) {
        out[i] = -5.0f;
    }
    ggmlx_backend_queue_hold(s.b);
    ggml_backend_tensor_set_async(s.b, s.x, in, 0, sizeof in);
    compute_async(s.b, s.gy);
    ggml_backend_tensor_get_async(s.b, s.y, out, 0, sizeof out);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 3);
    cr_assert_float_eq(out[0], -5.0f, 0, "the get has not run while held");
    ggmlx_backend_queue_release(s.b);
    ggml_backend_synchronize(s.b);
    expect_host(out, 2.0f, 10.0f, 0.0f, "set, then compute, then get");
    stage_free(&s);
}

Test(sim_async, rule1_sim_chain_of_computes_runs_in_order) {
    ggml_backend_t b = sim(0);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = vec(ctx, "x");
    struct ggml_tensor * ones = vec(ctx, "ones");
    /* alternating x = 2x and x = x + 1: any reordering changes the result */
    struct ggml_cgraph * g[2] = { graph_of(ctx, ggml_scale_inplace(ctx, x, 2.0f)),
                                  graph_of(ctx, ggml_add_inplace(ctx, x, ones)) };
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    fill_const(x, 0.0f);
    fill_const(ones, 1.0f);
    ggmlx_backend_queue_hold(b);
    float want = 0.0f;
    for (int i = 0; i < 10; i++) {
        compute_async(b, g[i % 2]);
        want = i % 2 == 0 ? 2.0f * want : want + 1.0f;
    }
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);
    expect(x, 0.0f, 0.0f, want, "ten steps, each after the one before");
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

Test(sim_async, rule1_sim_free_runs_queued_work_first) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    ggmlx_backend_queue_hold(s.b);
    compute_async(s.b, s.gy);
    ggml_backend_free(s.b); /* held: free still drains */
    s.b = sim(0);
    expect(s.y, 2.0f, 1.0f, 0.0f, "the queued compute ran before the backend went");
    stage_free(&s);
}

Test(sim_async, rule1_queues_of_sim0_sim1_and_cpu_are_independent) {
    struct stage s0, s1, c;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 2.0f);
    stage_init(&c, cpu(), 3.0f);
    ggmlx_backend_queue_hold(s0.b);
    compute_async(s0.b, s0.gy);
    /* SIM1 and the CPU are not behind SIM0's held queue */
    cr_assert_eq(ggml_backend_graph_compute(s1.b, s1.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    cr_assert_eq(ggml_backend_graph_compute(c.b, c.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    expect(s1.y, 2.0f, 2.0f, 0.0f, "SIM1 ran");
    expect(c.y, 2.0f, 3.0f, 0.0f, "the CPU ran");
    expect(s0.y, 0.0f, 0.0f, -1.0f, "SIM0 is still held");
    cr_assert_eq(ggmlx_backend_queue_pending(s0.b), 1);
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(s0.b);
    expect(s0.y, 2.0f, 1.0f, 0.0f, "SIM0 after release");
    stage_free(&s0);
    stage_free(&s1);
    stage_free(&c);
}

/* ---- rule 2: what a compute needs is taken when it is enqueued ----------------------------- */

Test(sim_async, rule2_sim_context_freed_right_after_compute_async) {
    ggml_backend_t b = sim(0);
    /* x and out persist; the graph and its intermediate tensors live in a context of their own,
     * placed by a graph allocator, and that context is wrecked and freed while the work is held */
    struct ggml_context * keep = new_ctx();
    struct ggml_tensor * x   = vec(keep, "x");
    struct ggml_tensor * out = vec(keep, "out");
    ggml_backend_buffer_t buf = alloc_all(keep, b);
    fill(x, 1.0f);
    fill_const(out, -1.0f);

    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * y = ggml_add(ctx, ggml_scale(ctx, x, 2.0f), x); /* 3x, two nodes */
    struct ggml_cgraph * g = graph_of(ctx, ggml_cpy(ctx, y, out));
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_dev_buffer_type(ggml_backend_get_device(b)));
    cr_assert_not_null(galloc);
    cr_assert(ggml_gallocr_alloc_graph(galloc, g), "%s", last_error());

    ggmlx_backend_queue_hold(b);
    compute_async(b, g);
    memset(ggml_get_mem_buffer(ctx), 0xA5, ggml_get_mem_size(ctx));
    ggml_free(ctx);
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);
    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS, "%s", last_error());
    expect(out, 3.0f, 1.0f, 0.0f, "computed from the graph as it was at enqueue time");

    ggml_gallocr_free(galloc);
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(keep);
}

Test(sim_async, rule2_sim_graph_changed_after_compute_async) {
    struct stage s;
    stage_init(&s, sim(1), 1.0f);
    ggmlx_backend_queue_hold(s.b);
    compute_async(s.b, s.gy);
    const float other = 100.0f;
    memcpy(s.y->op_params, &other, sizeof other);
    s.gy->n_nodes = 0;
    ggmlx_backend_queue_release(s.b);
    ggml_backend_synchronize(s.b);
    expect(s.y, 2.0f, 1.0f, 0.0f, "the graph as it was at enqueue time");
    stage_free(&s);
}

/* ---- rule 3: synchronize ------------------------------------------------------------------- */

Test(sim_async, rule3_sim_synchronize_waits_for_everything_enqueued_before) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    ggmlx_backend_queue_hold(s.b);
    compute_async(s.b, s.gy);
    ggml_backend_tensor_copy_async(s.b, s.b, s.y, s.in); /* same backend: queued in order */
    compute_async(s.b, s.gz);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 3, "the copy is queued too");
    expect(s.in, 0.0f, 0.0f, -2.0f, "queued, not done");
    ggmlx_backend_queue_release(s.b);
    ggml_backend_synchronize(s.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0);
    expect(s.in, 2.0f, 1.0f, 0.0f, "copied after the compute");
    expect(s.z, 6.0f, 1.0f, 0.0f, "z = 3 * 2x");
    stage_free(&s);
}

Test(sim_async, rule3_sim_graph_compute_returns_with_the_result) {
    struct stage s;
    stage_init(&s, sim(1), 4.0f);
    cr_assert_eq(ggml_backend_graph_compute(s.b, s.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0);
    expect(s.y, 2.0f, 4.0f, 0.0f, "no synchronize needed");
    stage_free(&s);
}

Test(sim_async, rule3_synchronize_does_not_wait_for_another_sim_queue) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 2.0f);
    ggmlx_backend_queue_hold(s0.b);
    compute_async(s0.b, s0.gy);
    compute_async(s1.b, s1.gy);
    struct helper * h = start_helper(synchronize_fn, s1.b);
    const bool returned = helper_done_within(h, 10000);
    ggmlx_backend_queue_release(s0.b);
    cr_assert(returned, "synchronize(SIM1) waited for held SIM0");
    expect(s1.y, 2.0f, 2.0f, 0.0f, "SIM1's own work is done");
    ggml_backend_synchronize(s0.b);
    stage_free(&s0);
    stage_free(&s1);
}

/* ---- rule 4: host memory of *_async calls is used when the copy runs ----------------------- */

Test(sim_async, rule4_sim_set_async_reads_host_memory_when_it_runs) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    float in[N];
    for (int i = 0; i < N; i++) {
        in[i] = 1.0f;
    }
    ggmlx_backend_queue_hold(s.b);
    ggml_backend_tensor_set_async(s.b, s.x, in, 0, sizeof in);
    fill_host(in, 5.0f); /* still ours to change: nothing was copied yet */
    ggmlx_backend_queue_release(s.b);
    ggml_backend_synchronize(s.b);
    expect(s.x, 1.0f, 5.0f, 0.0f, "x has what the memory held when the copy ran");
    stage_free(&s);
}

Test(sim_async, rule4_sim_get_async_writes_host_memory_only_when_it_runs) {
    struct stage s;
    stage_init(&s, sim(1), 1.0f);
    float out[N];
    for (int i = 0; i < N; i++) {
        out[i] = -3.0f;
    }
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s.b));
    cr_assert_not_null(ev, "%s", last_error());
    ggmlx_backend_queue_hold(s.b);
    ggml_backend_tensor_get_async(s.b, s.x, out, 0, sizeof out);
    ggml_backend_event_record(ev, s.b);
    cr_assert_float_eq(out[0], -3.0f, 0, "not written while held");
    ggmlx_backend_queue_release(s.b);
    ggml_backend_event_synchronize(ev); /* an event recorded after the call has completed */
    expect_host(out, 1.0f, 1.0f, 0.0f, "written when the copy ran");
    ggml_backend_event_free(ev);
    stage_free(&s);
}

/* ---- rule 5: buffer-level calls do not wait for the queue ---------------------------------- */

Test(sim_async, rule5_sim_tensor_set_and_get_do_not_wait_for_queued_work) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    ggmlx_backend_queue_hold(s.b);
    compute_async(s.b, s.gy);
    fill(s.x, 20.0f); /* returns at once although the queue is held */
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 1);
    expect(s.x, 1.0f, 20.0f, 0.0f, "the blocking set happened now");
    expect(s.y, 0.0f, 0.0f, -1.0f, "the blocking get read y now, before the queued compute");
    ggmlx_backend_queue_release(s.b);
    ggml_backend_synchronize(s.b);
    expect(s.y, 2.0f, 20.0f, 0.0f, "the queued compute, run later, read the new x");
    stage_free(&s);
}

Test(sim_async, rule5_buffer_level_copy_between_sims_does_not_wait) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 2.0f);
    ggmlx_backend_queue_hold(s0.b);
    ggmlx_backend_queue_hold(s1.b);
    compute_async(s0.b, s0.gy);
    compute_async(s1.b, s1.gz);
    ggml_backend_tensor_copy(s0.y, s1.in); /* both queues held: copies y as it is now */
    ggml_backend_tensor_copy(s0.x, s1.x);
    cr_assert_eq(ggmlx_backend_queue_pending(s0.b), 1);
    cr_assert_eq(ggmlx_backend_queue_pending(s1.b), 1);
    expect(s1.in, 0.0f, 0.0f, -1.0f, "SIM0's y before its compute ran");
    expect(s1.x, 1.0f, 1.0f, 0.0f, "SIM0's x");
    ggmlx_backend_queue_release(s0.b);
    ggmlx_backend_queue_release(s1.b);
    ggml_backend_synchronize(s0.b);
    ggml_backend_synchronize(s1.b);
    expect(s1.z, 0.0f, 0.0f, -3.0f, "SIM1's queued compute read the copied -1s");
    stage_free(&s0);
    stage_free(&s1);
}

/* ---- rule 6: counter events across SIM0, SIM1 and the CPU ---------------------------------- */

/*
 * drop-event-waits: SIM1 must not take the staged data before SIM0 has put it there. SIM0
 * computes y and copies it out to host memory; SIM1, behind a wait on SIM0's event, copies it
 * in and computes from it.
 */
Test(sim_async, rule6_sim0_to_sim1_wait_orders_work) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 9.0f);
    float staging[N];
    for (int i = 0; i < N; i++) {
        staging[i] = -4.0f;
    }
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s0.b));
    cr_assert_not_null(ev, "%s", last_error());
    ggmlx_backend_queue_hold(s0.b);
    compute_async(s0.b, s0.gy);
    ggml_backend_tensor_get_async(s0.b, s0.y, staging, 0, sizeof staging);
    ggml_backend_event_record(ev, s0.b);
    ggml_backend_event_wait(s1.b, ev); /* returns at once: the host does not block */
    ggml_backend_tensor_set_async(s1.b, s1.in, staging, 0, sizeof staging);
    compute_async(s1.b, s1.gz);
    settle(s1.b);
    expect(s1.z, 0.0f, 0.0f, -7.0f, "SIM1 has not run past its wait");
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(s1.b);
    expect(s1.z, 6.0f, 1.0f, 0.0f, "SIM1 computed from SIM0's result");
    ggml_backend_event_free(ev);
    stage_free(&s0);
    stage_free(&s1);
}

/* drop-event-waits: a CPU queue waiting on a SIM event; SIM0 writes straight into CPU memory */
Test(sim_async, rule6_sim0_to_cpu_wait_orders_work) {
    struct stage s0, c;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&c, cpu(), 9.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s0.b));
    ggmlx_backend_queue_hold(s0.b);
    compute_async(s0.b, s0.gy);
    ggml_backend_tensor_get_async(s0.b, s0.y, c.in->data, 0, ggml_nbytes(c.in)); /* CPU memory is host memory */
    ggml_backend_event_record(ev, s0.b);
    ggml_backend_event_wait(c.b, ev);
    compute_async(c.b, c.gz);
    settle(c.b);
    expect(c.z, 0.0f, 0.0f, -7.0f, "the CPU has not run past its wait");
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(c.b);
    expect(c.z, 6.0f, 1.0f, 0.0f, "the CPU computed from SIM0's result");
    ggml_backend_event_free(ev);
    stage_free(&s0);
    stage_free(&c);
}

/* drop-event-waits: a SIM queue waiting on a CPU event; SIM1 reads straight from CPU memory */
Test(sim_async, rule6_cpu_to_sim1_wait_orders_work) {
    struct stage c, s1;
    stage_init(&c, cpu(), 1.0f);
    stage_init(&s1, sim(1), 9.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(c.b));
    ggmlx_backend_queue_hold(c.b);
    compute_async(c.b, c.gy);
    ggml_backend_event_record(ev, c.b);
    ggml_backend_event_wait(s1.b, ev);
    ggml_backend_tensor_set_async(s1.b, s1.in, c.y->data, 0, ggml_nbytes(c.y));
    compute_async(s1.b, s1.gz);
    settle(s1.b);
    expect(s1.z, 0.0f, 0.0f, -7.0f, "SIM1 has not run past its wait");
    ggmlx_backend_queue_release(c.b);
    ggml_backend_synchronize(s1.b);
    expect(s1.z, 6.0f, 1.0f, 0.0f, "SIM1 computed from the CPU's result");
    ggml_backend_event_free(ev);
    stage_free(&c);
    stage_free(&s1);
}

/* drop-event-waits: a SIM queue behind a wait stays blocked while the event is pending */
Test(sim_async, rule6_sim_waiting_queue_blocks_until_the_record_runs) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 1.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s0.b));
    ggmlx_backend_queue_hold(s0.b);
    ggml_backend_event_record(ev, s0.b);
    ggml_backend_event_wait(s1.b, ev);
    compute_async(s1.b, s1.gy);
    settle(s1.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s1.b), 2, "the wait and the compute are still queued");
    expect(s1.y, 0.0f, 0.0f, -1.0f, "SIM1's compute has not run");
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(s1.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s1.b), 0);
    expect(s1.y, 2.0f, 1.0f, 0.0f, "and ran once the record did");
    ggml_backend_event_free(ev);
    stage_free(&s0);
    stage_free(&s1);
}

Test(sim_async, rule6_sim_wait_target_is_taken_at_enqueue_time) {
    ggml_backend_t a  = sim(0);
    ggml_backend_t a2 = sim(0); /* a second backend of the same device may record its events */
    struct stage s1;
    stage_init(&s1, sim(1), 1.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(a));
    ggmlx_backend_queue_hold(a);
    ggmlx_backend_queue_hold(a2);
    ggml_backend_event_record(ev, a);  /* record 1 */
    ggml_backend_event_wait(s1.b, ev); /* waits for record 1 only */
    compute_async(s1.b, s1.gy);
    ggml_backend_event_record(ev, a2); /* record 2, after the wait was enqueued */
    cr_assert_eq(ggmlx_backend_queue_pending(a2), 1, "the record on the second backend was accepted");
    ggmlx_backend_queue_release(a); /* record 1 runs; record 2 stays held */
    cr_assert(drained(s1.b), "SIM1 waited for a record enqueued after its wait");
    expect(s1.y, 2.0f, 1.0f, 0.0f, "SIM1's compute ran");
    ggmlx_backend_queue_release(a2);
    ggml_backend_event_synchronize(ev);
    ggml_backend_event_free(ev);
    ggml_backend_free(a);
    ggml_backend_free(a2);
    stage_free(&s1);
}

Test(sim_async, rule6_sim_event_never_recorded_counts_as_done) {
    struct stage s1, c;
    stage_init(&s1, sim(1), 1.0f);
    stage_init(&c, cpu(), 1.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_dev_by_name("SIM0"));
    cr_assert_not_null(ev, "%s", last_error());
    ggml_backend_event_wait(s1.b, ev);
    compute_async(s1.b, s1.gy);
    ggml_backend_event_wait(c.b, ev);
    compute_async(c.b, c.gy);
    cr_assert(drained(s1.b), "SIM1: nothing to wait for");
    cr_assert(drained(c.b), "CPU: nothing to wait for");
    cr_assert(helper_done_within(start_helper(event_sync_fn, ev), 10000), "event_synchronize returned");
    expect(s1.y, 2.0f, 1.0f, 0.0f, "SIM1 ran");
    ggml_backend_event_free(ev);
    stage_free(&s1);
    stage_free(&c);
}

struct sync_probe {
    ggml_backend_event_t ev;
    atomic_bool          done;
};

static void probe_fn(void * p) {
    struct sync_probe * s = p;
    ggml_backend_event_synchronize(s->ev);
    atomic_store(&s->done, true);
}

Test(sim_async, rule6_sim_event_synchronize_blocks_the_host_until_the_record_ran) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    struct sync_probe p = { ggml_backend_event_new(ggml_backend_get_device(s.b)), false };
    ggmlx_backend_queue_hold(s.b);
    compute_async(s.b, s.gy);
    ggml_backend_event_record(p.ev, s.b);
    struct helper * h = start_helper(probe_fn, &p);
    nap_us(50000);
    cr_assert_not(atomic_load(&p.done), "event_synchronize returned while the record was held");
    ggmlx_backend_queue_release(s.b);
    cr_assert(helper_done_within(h, 10000));
    /* (the record task itself may still count as pending for a moment: its value is what matters) */
    expect(s.y, 2.0f, 1.0f, 0.0f, "the host sees SIM0's result after event_synchronize");
    ggml_backend_event_free(p.ev);
    stage_free(&s);
}

Test(sim_async, rule6_recording_on_another_devices_backend_is_refused) {
    ggml_backend_t s0 = sim(0), s1 = sim(1), c = cpu();
    ggml_backend_event_t ev0 = ggml_backend_event_new(ggml_backend_get_device(s0));
    ggml_backend_event_t evc = ggml_backend_event_new(ggml_backend_get_device(c));
    ggmlx_backend_queue_hold(s0);
    ggmlx_backend_queue_hold(s1);
    ggmlx_backend_queue_hold(c);

    ggmlx_clear_last_error();
    ggml_backend_event_record(ev0, s1);
    cr_assert_not_null(ggmlx_last_error(), "SIM0's event on SIM1: an error");
    cr_assert(strstr(ggmlx_last_error(), "SIM0") != NULL, "the message names the event's device: %s", last_error());
    ggmlx_clear_last_error();
    ggml_backend_event_record(ev0, c);
    cr_assert_not_null(ggmlx_last_error(), "SIM0's event on the CPU: an error");
    ggmlx_clear_last_error();
    ggml_backend_event_record(evc, s0);
    cr_assert_not_null(ggmlx_last_error(), "the CPU's event on SIM0: an error");
    cr_assert_eq(ggmlx_backend_queue_pending(s0), 0, "nothing enqueued on SIM0");
    cr_assert_eq(ggmlx_backend_queue_pending(s1), 0, "nothing enqueued on SIM1");
    cr_assert_eq(ggmlx_backend_queue_pending(c), 0, "nothing enqueued on the CPU");

    /* the refused records left the events never recorded: waits on them do not block */
    ggmlx_backend_queue_release(s0);
    ggmlx_backend_queue_release(s1);
    ggmlx_backend_queue_release(c);
    ggml_backend_event_wait(s1, ev0);
    ggml_backend_event_wait(s0, evc);
    cr_assert(drained(s1));
    cr_assert(drained(s0));
    ggml_backend_event_free(ev0);
    ggml_backend_event_free(evc);
    ggml_backend_free(s0);
    ggml_backend_free(s1);
    ggml_backend_free(c);
}

Test(sim_async, rule6_sim_event_free_while_queued_is_safe) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 1.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s0.b));
    ggmlx_backend_queue_hold(s0.b);
    ggml_backend_event_record(ev, s0.b);
    ggml_backend_event_wait(s1.b, ev);
    ggml_backend_event_free(ev); /* the queued record and wait keep the counter alive */
    compute_async(s1.b, s1.gy);
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(s0.b);
    ggml_backend_synchronize(s1.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s1.b), 0);
    expect(s1.y, 2.0f, 1.0f, 0.0f, "SIM1 ran after the wait");
    stage_free(&s0);
    stage_free(&s1);
}

/* ---- rule 7: copies between backends are ordered on both sides ----------------------------- */

struct copy_call {
    ggml_backend_t             src_b, dst_b;
    const struct ggml_tensor * src;
    struct ggml_tensor       * dst;
};

static void copy_async_fn(void * p) {
    struct copy_call * c = p;
    ggml_backend_tensor_copy_async(c->src_b, c->dst_b, c->src, c->dst);
}

/*
 * src computes y = 2x (held), y is copied to dst's `in`, dst computes z = 3 * in; then src is
 * released. The copy must come after src's compute and before dst's. The copy is made on a
 * helper thread: a copy_async that has no queued path for this pair blocks the host on the held
 * source, which is reported as such instead of hanging the test.
 */
static void copy_is_ordered_on_both_sides(struct stage * src, struct stage * dst, float base) {
    ggmlx_backend_queue_hold(src->b);
    compute_async(src->b, src->gy);
    struct copy_call call = { src->b, dst->b, src->y, dst->in };
    struct helper * h = start_helper(copy_async_fn, &call);
    if (!helper_done_within(h, 5000)) {
        ggmlx_backend_queue_release(src->b);
        cr_assert(helper_done_within(h, 10000), "copy_async did not return even after the release");
        cr_assert_fail("copy_async %s -> %s blocked the host on the held source: no queued copy path",
                       ggml_backend_name(src->b), ggml_backend_name(dst->b));
    }
    compute_async(dst->b, dst->gz);
    settle(dst->b);
    expect(dst->z, 0.0f, 0.0f, -7.0f, "the destination has not run past the copy");
    ggmlx_backend_queue_release(src->b);
    ggml_backend_synchronize(dst->b);
    ggml_backend_synchronize(src->b);
    expect(dst->in, 2.0f, base, 0.0f, "the copy holds the source's computed y");
    expect(dst->z, 6.0f, base, 0.0f, "the destination computed from the copy");
}

/* drop-event-waits */
Test(sim_async, rule7_copy_async_sim0_to_sim1_after_src_work_before_later_dst_work) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 50.0f);
    copy_is_ordered_on_both_sides(&s0, &s1, 1.0f);
    stage_free(&s0);
    stage_free(&s1);
}

/* drop-event-waits */
Test(sim_async, rule7_copy_async_sim1_to_cpu_after_src_work_before_later_dst_work) {
    struct stage s1, c;
    stage_init(&s1, sim(1), 3.0f);
    stage_init(&c, cpu(), 50.0f);
    copy_is_ordered_on_both_sides(&s1, &c, 3.0f);
    stage_free(&s1);
    stage_free(&c);
}

/* drop-event-waits */
Test(sim_async, rule7_copy_async_cpu_to_sim0_after_src_work_before_later_dst_work) {
    struct stage c, s0;
    stage_init(&c, cpu(), 5.0f);
    stage_init(&s0, sim(0), 50.0f);
    copy_is_ordered_on_both_sides(&c, &s0, 5.0f);
    stage_free(&c);
    stage_free(&s0);
}

/* drop-event-waits: both held, the destination released first: it must still wait for the source */
Test(sim_async, rule7_copy_async_destination_released_first_still_waits_for_the_source) {
    struct stage s0, s1;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 50.0f);
    ggmlx_backend_queue_hold(s0.b);
    ggmlx_backend_queue_hold(s1.b);
    compute_async(s0.b, s0.gy);
    ggml_backend_tensor_copy_async(s0.b, s1.b, s0.y, s1.in);
    compute_async(s1.b, s1.gz);
    ggmlx_backend_queue_release(s1.b); /* the destination first: it must wait for the source */
    settle(s1.b);
    expect(s1.z, 0.0f, 0.0f, -7.0f, "SIM1 has not run past the copy");
    ggmlx_backend_queue_release(s0.b);
    ggml_backend_synchronize(s1.b);
    expect(s1.z, 6.0f, 1.0f, 0.0f, "SIM1 computed from SIM0's y");
    stage_free(&s0);
    stage_free(&s1);
}

/*
 * drop-event-waits: a three-stage pipeline SIM0 -> SIM1 -> CPU, every iteration in tensors of
 * its own: x (set from the host) -> a = 2x on SIM0 -> copy -> b = a + 1 on SIM1 -> copy ->
 * c = 3b on the CPU -> read back. Both SIM queues are held while everything is enqueued, then
 * released last stage first.
 */
#define PIPE_ITERS 32

Test(sim_async, rule7_three_stage_pipeline_sim0_sim1_cpu_held) {
    ggml_backend_t b0 = sim(0), b1 = sim(1), bc = cpu();
    struct ggml_context * c0 = new_ctx_n(2 * PIPE_ITERS, PIPE_ITERS);
    struct ggml_context * c1 = new_ctx_n(3 * PIPE_ITERS + 1, PIPE_ITERS);
    struct ggml_context * cc = new_ctx_n(2 * PIPE_ITERS, PIPE_ITERS);
    struct ggml_tensor * ones = vec(c1, "ones");
    struct ggml_tensor * x[PIPE_ITERS], * a[PIPE_ITERS], * a1[PIPE_ITERS], * b[PIPE_ITERS], * b2[PIPE_ITERS],
                       * c[PIPE_ITERS];
    struct ggml_cgraph * g0[PIPE_ITERS], * g1[PIPE_ITERS], * gc[PIPE_ITERS];
    for (int i = 0; i < PIPE_ITERS; i++) {
        x[i]  = vec(c0, "x");
        a[i]  = ggml_scale(c0, x[i], 2.0f);
        g0[i] = graph_of(c0, a[i]);
        a1[i] = vec(c1, "a1");
        b[i]  = ggml_add(c1, a1[i], ones);
        g1[i] = graph_of(c1, b[i]);
        b2[i] = vec(cc, "b2");
        c[i]  = ggml_scale(cc, b2[i], 3.0f);
        gc[i] = graph_of(cc, c[i]);
    }
    ggml_backend_buffer_t buf0 = alloc_all(c0, b0), buf1 = alloc_all(c1, b1), bufc = alloc_all(cc, bc);
    ggml_backend_buffer_clear(buf0, 0);
    ggml_backend_buffer_clear(buf1, 0);
    ggml_backend_buffer_clear(bufc, 0);
    fill_const(ones, 1.0f);
    float (*in)[N]  = malloc(PIPE_ITERS * sizeof *in);
    float (*out)[N] = malloc(PIPE_ITERS * sizeof *out);
    cr_assert(in != NULL && out != NULL);

    ggmlx_backend_queue_hold(b0);
    ggmlx_backend_queue_hold(b1);
    for (int i = 0; i < PIPE_ITERS; i++) {
        fill_host(in[i], (float) (100 * i));
        ggml_backend_tensor_set_async(b0, x[i], in[i], 0, sizeof in[i]);
        compute_async(b0, g0[i]);
        ggml_backend_tensor_copy_async(b0, b1, a[i], a1[i]);
        compute_async(b1, g1[i]);
        ggml_backend_tensor_copy_async(b1, bc, b[i], b2[i]);
        compute_async(bc, gc[i]);
        ggml_backend_tensor_get_async(bc, c[i], out[i], 0, sizeof out[i]);
    }
    settle(bc);
    ggmlx_backend_queue_release(b1);
    settle(b1);
    ggmlx_backend_queue_release(b0);
    ggml_backend_synchronize(bc);
    for (int i = 0; i < PIPE_ITERS; i++) {
        char what[64];
        snprintf(what, sizeof what, "iteration %d: 3 * (2x + 1)", i);
        expect_host(out[i], 6.0f, (float) (100 * i), 3.0f, what);
    }
    free(in);
    free(out);
    ggml_backend_free(b0);
    ggml_backend_free(b1);
    ggml_backend_free(bc);
    ggml_backend_buffer_free(buf0);
    ggml_backend_buffer_free(buf1);
    ggml_backend_buffer_free(bufc);
    ggml_free(c0);
    ggml_free(c1);
    ggml_free(cc);
}

/*
 * drop-event-waits, in practice (a free-running race, no holds): the same pipeline over 200
 * iterations through two slots per stage, double-buffered as a real pipeline is: a slot is
 * written again only after an event says its last reader is done. Every hop is a copy_async or
 * an event.
 */
#define RUN_ITERS 200
#define SLOTS     2

Test(sim_async, rule7_pipeline_sim0_sim1_cpu_free_running_double_buffered) {
    ggml_backend_t b0 = sim(0), b1 = sim(1), bc = cpu();
    struct ggml_context * c0 = new_ctx_n(2 * SLOTS, SLOTS);
    struct ggml_context * c1 = new_ctx_n(2 * SLOTS + 1, SLOTS);
    struct ggml_context * cc = new_ctx_n(2 * SLOTS, SLOTS);
    struct ggml_tensor * ones = vec(c1, "ones");
    struct ggml_tensor * x[SLOTS], * a[SLOTS], * a1[SLOTS], * b[SLOTS], * b2[SLOTS], * c[SLOTS];
    struct ggml_cgraph * g0[SLOTS], * g1[SLOTS], * gc[SLOTS];
    ggml_backend_event_t done1[SLOTS], donec[SLOTS];
    for (int k = 0; k < SLOTS; k++) {
        x[k]     = vec(c0, "x");
        a[k]     = ggml_scale(c0, x[k], 2.0f);
        g0[k]    = graph_of(c0, a[k]);
        a1[k]    = vec(c1, "a1");
        b[k]     = ggml_add(c1, a1[k], ones);
        g1[k]    = graph_of(c1, b[k]);
        b2[k]    = vec(cc, "b2");
        c[k]     = ggml_scale(cc, b2[k], 3.0f);
        gc[k]    = graph_of(cc, c[k]);
        done1[k] = ggml_backend_event_new(ggml_backend_get_device(b1));
        donec[k] = ggml_backend_event_new(ggml_backend_get_device(bc));
    }
    ggml_backend_buffer_t buf0 = alloc_all(c0, b0), buf1 = alloc_all(c1, b1), bufc = alloc_all(cc, bc);
    fill_const(ones, 1.0f);
    float (*in)[N]  = malloc(RUN_ITERS * sizeof *in);
    float (*out)[N] = malloc(RUN_ITERS * sizeof *out);
    cr_assert(in != NULL && out != NULL);

    for (int i = 0; i < RUN_ITERS; i++) {
        const int k = i % SLOTS;
        fill_host(in[i], (float) (7 * i));
        /* SIM0 rewrites a[k] only when SIM1 is done with the last copy of it */
        ggml_backend_event_wait(b0, done1[k]);
        ggml_backend_tensor_set_async(b0, x[k], in[i], 0, sizeof in[i]);
        compute_async(b0, g0[k]);
        /* SIM1 rewrites a1[k] and b[k] only when the CPU is done with the last b[k] */
        ggml_backend_event_wait(b1, donec[k]);
        ggml_backend_tensor_copy_async(b0, b1, a[k], a1[k]);
        compute_async(b1, g1[k]);
        ggml_backend_event_record(done1[k], b1);
        ggml_backend_tensor_copy_async(b1, bc, b[k], b2[k]);
        compute_async(bc, gc[k]);
        ggml_backend_tensor_get_async(bc, c[k], out[i], 0, sizeof out[i]);
        ggml_backend_event_record(donec[k], bc);
    }
    ggml_backend_synchronize(b0);
    ggml_backend_synchronize(b1);
    ggml_backend_synchronize(bc);
    cr_assert_eq(ggmlx_backend_get_status(b0), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggmlx_backend_get_status(b1), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggmlx_backend_get_status(bc), GGML_STATUS_SUCCESS);
    for (int i = 0; i < RUN_ITERS; i++) {
        char what[64];
        snprintf(what, sizeof what, "iteration %d: 3 * (2x + 1)", i);
        expect_host(out[i], 6.0f, (float) (7 * i), 3.0f, what);
    }
    free(in);
    free(out);
    for (int k = 0; k < SLOTS; k++) {
        ggml_backend_event_free(done1[k]);
        ggml_backend_event_free(donec[k]);
    }
    ggml_backend_free(b0);
    ggml_backend_free(b1);
    ggml_backend_free(bc);
    ggml_backend_buffer_free(buf0);
    ggml_backend_buffer_free(buf1);
    ggml_backend_buffer_free(bufc);
    ggml_free(c0);
    ggml_free(c1);
    ggml_free(cc);
}

/*
 * drop-event-waits, in practice (a free-running race, no holds): a hundred hops around
 * SIM0 -> SIM1 -> CPU -> SIM0, each a copy_async then v = v/2 + 1 on the destination
 */
Test(sim_async, rule7_hundred_hops_around_sim0_sim1_cpu_without_holds) {
    ggml_backend_t q[3] = { sim(0), sim(1), cpu() };
    struct ggml_context * ctx[3];
    struct ggml_tensor * v[3], * ones[3];
    struct ggml_cgraph * g[3];
    ggml_backend_buffer_t buf[3];
    for (int d = 0; d < 3; d++) {
        ctx[d]  = new_ctx();
        v[d]    = vec(ctx[d], "v");
        ones[d] = vec(ctx[d], "ones");
        g[d]    = graph_of(ctx[d], ggml_add_inplace(ctx[d], ggml_scale_inplace(ctx[d], v[d], 0.5f), ones[d]));
        buf[d]  = alloc_all(ctx[d], q[d]);
        fill_const(ones[d], 1.0f);
        fill_const(v[d], -100.0f);
    }
    fill(v[0], 0.0f);
    float want[N];
    fill_host(want, 0.0f);
    int at = 0;
    for (int s = 0; s < 100; s++) {
        const int next = (at + 1) % 3;
        ggml_backend_tensor_copy_async(q[at], q[next], v[at], v[next]);
        compute_async(q[next], g[next]);
        for (int i = 0; i < N; i++) {
            want[i] = want[i] * 0.5f + 1.0f;
        }
        at = next;
    }
    ggml_backend_synchronize(q[at]);
    float got[N];
    ggml_backend_tensor_get(v[at], got, 0, sizeof got);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(got[i], want[i], 1e-6f * (1.0f + fabsf(want[i])), "[%d]: hops ran out of order", i);
    }
    for (int d = 0; d < 3; d++) {
        ggml_backend_synchronize(q[d]);
        ggml_backend_free(q[d]);
        ggml_backend_buffer_free(buf[d]);
        ggml_free(ctx[d]);
    }
}

/* ---- rule 8: errors in queued work are sticky, per SIM queue ------------------------------- */

/* a graph whose set_rows writes row `row` of an 8-row tensor: found out of range only when run */
struct bad_graph {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_cgraph  * g;
};

static void bad_graph_init(struct bad_graph * bg, ggml_backend_t b, int64_t row) {
    bg->ctx = new_ctx();
    struct ggml_tensor * dst = ggml_new_tensor_2d(bg->ctx, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * src = ggml_new_tensor_2d(bg->ctx, GGML_TYPE_F32, 4, 1);
    struct ggml_tensor * idx = ggml_new_tensor_1d(bg->ctx, GGML_TYPE_I64, 1);
    struct ggml_tensor * sr  = ggml_set_rows(bg->ctx, dst, src, idx);
    cr_assert_not_null(sr);
    bg->g   = graph_of(bg->ctx, sr);
    bg->buf = alloc_all(bg->ctx, b);
    ggml_backend_buffer_clear(bg->buf, 0);
    ggml_backend_tensor_set(idx, &row, 0, sizeof row);
}

static void bad_graph_free(struct bad_graph * bg) {
    ggml_backend_buffer_free(bg->buf);
    ggml_free(bg->ctx);
}

Test(sim_async, rule8_sim_queued_error_is_sticky_until_cleared_and_per_queue) {
    struct stage s0, s1, c;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 2.0f);
    stage_init(&c, cpu(), 3.0f);
    struct bad_graph bg;
    bad_graph_init(&bg, s0.b, 100); /* past the 8 rows */

    cr_assert_eq(ggml_backend_graph_compute_async(s0.b, bg.g), GGML_STATUS_SUCCESS, "only the data is wrong");
    ggml_backend_synchronize(s0.b);
    cr_assert_eq(ggmlx_backend_get_status(s0.b), GGML_STATUS_FAILED);

    /* the next compute on SIM0 returns the error and runs nothing */
    cr_assert_eq(ggml_backend_graph_compute(s0.b, s0.gy), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    expect(s0.y, 0.0f, 0.0f, -1.0f, "nothing ran on SIM0 after the error");
    cr_assert_eq(ggmlx_backend_get_status(s0.b), GGML_STATUS_FAILED, "reading does not clear");

    /* SIM1 and the CPU are not marked */
    cr_assert_eq(ggmlx_backend_get_status(s1.b), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggmlx_backend_get_status(c.b), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute(s1.b, s1.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    cr_assert_eq(ggml_backend_graph_compute(c.b, c.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    expect(s1.y, 2.0f, 2.0f, 0.0f, "SIM1 computes");
    expect(c.y, 2.0f, 3.0f, 0.0f, "the CPU computes");

    ggmlx_backend_clear_status(s0.b);
    cr_assert_eq(ggmlx_backend_get_status(s0.b), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute(s0.b, s0.gy), GGML_STATUS_SUCCESS, "%s", last_error());
    expect(s0.y, 2.0f, 1.0f, 0.0f, "SIM0 usable again");

    bad_graph_free(&bg);
    stage_free(&s0);
    stage_free(&s1);
    stage_free(&c);
}

Test(sim_async, rule8_sim_work_behind_an_error_is_skipped_but_events_still_fire) {
    struct stage s0, s1, c;
    stage_init(&s0, sim(0), 1.0f);
    stage_init(&s1, sim(1), 2.0f);
    stage_init(&c, cpu(), 3.0f);
    struct bad_graph bg;
    bad_graph_init(&bg, s0.b, -1);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s0.b));

    ggmlx_backend_queue_hold(s0.b);
    cr_assert_eq(ggml_backend_graph_compute_async(s0.b, bg.g), GGML_STATUS_SUCCESS);
    compute_async(s0.b, s0.gy); /* enqueued before the error happened */
    ggml_backend_event_record(ev, s0.b);
    ggml_backend_event_wait(s1.b, ev);
    compute_async(s1.b, s1.gy);
    ggml_backend_event_wait(c.b, ev);
    compute_async(c.b, c.gy);
    ggmlx_backend_queue_release(s0.b);
    cr_assert(helper_done_within(start_helper(event_sync_fn, ev), 10000), "the record ran after the error");
    cr_assert(drained(s1.b), "SIM1 is not stuck behind SIM0's error");
    cr_assert(drained(c.b), "the CPU is not stuck behind SIM0's error");
    cr_assert_eq(ggmlx_backend_get_status(s0.b), GGML_STATUS_FAILED);
    cr_assert_eq(ggmlx_backend_get_status(s1.b), GGML_STATUS_SUCCESS, "errors are per queue");
    cr_assert_eq(ggmlx_backend_get_status(c.b), GGML_STATUS_SUCCESS, "errors are per queue");
    expect(s0.y, 0.0f, 0.0f, -1.0f, "the compute behind the error was skipped");
    expect(s1.y, 2.0f, 2.0f, 0.0f, "SIM1's compute ran");
    expect(c.y, 2.0f, 3.0f, 0.0f, "the CPU's compute ran");

    ggml_backend_event_free(ev);
    bad_graph_free(&bg);
    stage_free(&s0);
    stage_free(&s1);
    stage_free(&c);
}

Test(sim_async, rule8_sim_errors_found_at_enqueue_time_are_returned_not_queued) {
    struct stage s;
    stage_init(&s, sim(0), 1.0f);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * lonely = vec(c2, "lonely"); /* never allocated */
    struct ggml_cgraph * g_unalloc = graph_of(c2, ggml_scale(c2, lonely, 2.0f));
    ggmlx_backend_queue_hold(s.b);
    cr_assert_eq(ggml_backend_graph_compute_async(s.b, g_unalloc), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0, "nothing was queued");
    ggmlx_backend_queue_release(s.b);
    cr_assert_eq(ggmlx_backend_get_status(s.b), GGML_STATUS_SUCCESS, "not sticky: the queue never saw it");
    ggml_free(c2);
    stage_free(&s);
}

/* ---- hooks --------------------------------------------------------------------------------- */

Test(sim_async, hold_and_release_report_pending_work_on_sim_queues) {
    struct stage s;
    stage_init(&s, sim(1), 1.0f);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0);
    cr_assert(ggmlx_backend_queue_hold(s.b));
    for (int i = 0; i < 5; i++) {
        compute_async(s.b, s.gy);
    }
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 5);
    cr_assert(ggmlx_backend_queue_release(s.b));
    ggml_backend_synchronize(s.b);
    cr_assert_eq(ggmlx_backend_queue_pending(s.b), 0);
    stage_free(&s);
}
