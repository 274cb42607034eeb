/*
 * test-async.c -- the ordering rules of docs/async.md on the CPU queue, one test per rule.
 *
 * Interleavings are forced with the hold/release hooks, never with sleeps: a held queue runs
 * nothing, so "A has not run yet" is a fact, and settle() waits (bounded) until a queue has
 * either run everything or is blocked in an event wait. Built with GGMLX_DROP_EVENT_WAITS the
 * tests marked "drop-event-waits" must fail: that is how CI shows they can.
 */
#include <criterion/criterion.h>

#include "backend-cpu.h"
#include "graph-snapshot.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1024

TestSuite(async, .timeout = 60);

/* ---- helpers ------------------------------------------------------------------------------- */

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params p = { 64 * ggml_tensor_overhead() + 4 * ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

static ggml_backend_t cpu(const char * params) {
    ggml_backend_t b = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), params);
    cr_assert_not_null(b, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return b;
}

static struct ggml_tensor * vec(struct ggml_context * ctx, const char * name) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_set_name(t, name);
    return t;
}

static ggml_backend_buffer_t alloc_all(struct ggml_context * ctx, ggml_backend_t b) {
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, b);
    cr_assert_not_null(buf, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return buf;
}

/* t[i] = base + i (synchronously) */
static void fill(struct ggml_tensor * t, float base) {
    float v[N];
    for (int i = 0; i < N; i++) {
        v[i] = base + (float) i;
    }
    ggml_backend_tensor_set(t, v, 0, sizeof v);
}

static void fill_const(struct ggml_tensor * t, float c) {
    float v[N];
    for (int i = 0; i < N; i++) {
        v[i] = c;
    }
    ggml_backend_tensor_set(t, v, 0, sizeof v);
}

/* every t[i] == mul * (base + i) + add */
static void expect(const struct ggml_tensor * t, float mul, float base, float add, const char * what) {
    float v[N];
    ggml_backend_tensor_get(t, v, 0, sizeof v);
    for (int i = 0; i < N; i++) {
        const float want = mul * (base + (float) i) + add;
        cr_assert_float_eq(v[i], want, 1e-3f * (1.0f + fabsf(want)), "%s: [%d] = %g, want %g", what, i, v[i], want);
    }
}

static struct ggml_cgraph * graph_of(struct ggml_context * ctx, struct ggml_tensor * out) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    cr_assert_not_null(g);
    ggml_build_forward_expand(g, out);
    return g;
}

/* bounded: until b's queue has run everything or its worker is blocked in an event wait */
static void settle(ggml_backend_t b) {
    struct ggmlx_queue * q = ggmlx_backend_cpu_queue(b);
    cr_assert_not_null(q);
    for (int i = 0; i < 100000; i++) {
        if (ggmlx_backend_queue_pending(b) == 0 || ggmlx_queue_waiting(q)) {
            return;
        }
        nanosleep(&(struct timespec){ 0, 100000 }, NULL);
    }
    cr_assert_fail("queue did not settle within 10 s");
}

/* bounded: true once b's queue has run everything (within 10 s) */
static bool drained(ggml_backend_t b) {
    for (int i = 0; i < 100000; i++) {
        if (ggmlx_backend_queue_pending(b) == 0) {
            return true;
        }
        nanosleep(&(struct timespec){ 0, 100000 }, NULL);
    }
    return false;
}

/* fn(arg) on a helper thread; false when it has not returned after `seconds` */
struct helper {
    void (*fn)(void *);
    void * arg;
};

static void * helper_main(void * p) {
    struct helper * h = p;
    h->fn(h->arg);
    free(h);
    return NULL;
}

static pthread_t start_helper(void (*fn)(void *), void * arg) {
    struct helper * h = malloc(sizeof *h);
    h->fn  = fn;
    h->arg = arg;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, helper_main, h), 0);
    return t;
}

static bool join_within(pthread_t t, int seconds) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
        pthread_detach(t);
        return false;
    }
    return true;
}

/*
 * The two-backend fixture: x (input), y = 2x computed on A, z = 3y computed on B from a view
 * of y (a leaf of B's graph, so B never computes y itself).
 */
struct two {
    ggml_backend_t        a, b;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * x, * y, * z;
    struct ggml_cgraph  * ga, * gb;
};

static void two_init(struct two * t) {
    t->a   = cpu(NULL);
    t->b   = cpu(NULL);
    t->ctx = new_ctx();
    t->x   = vec(t->ctx, "x");
    t->y   = ggml_scale(t->ctx, t->x, 2.0f);
    struct ggml_tensor * yv = ggml_view_tensor(t->ctx, t->y);
    t->z   = ggml_scale(t->ctx, yv, 3.0f);
    t->ga  = graph_of(t->ctx, t->y);
    t->gb  = graph_of(t->ctx, t->z);
    t->buf = alloc_all(t->ctx, t->a);
    fill(t->x, 1.0f);
    fill_const(t->y, -1.0f); /* what B reads if it runs too early */
    fill_const(t->z, -7.0f);
}

static void two_free(struct two * t) {
    ggml_backend_free(t->a);
    ggml_backend_free(t->b);
    ggml_backend_buffer_free(t->buf);
    ggml_free(t->ctx);
}

/* ---- rule 1: a backend is one in-order queue ----------------------------------------------- */

Test(async, rule1_compute_async_returns_before_running) {
    struct two t;
    two_init(&t);
    cr_assert(ggmlx_backend_queue_hold(t.a));
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 1);
    expect(t.y, 0.0f, 0.0f, -1.0f, "nothing ran while held");
    cr_assert(ggmlx_backend_queue_release(t.a));
    ggml_backend_synchronize(t.a);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0);
    expect(t.y, 2.0f, 1.0f, 0.0f, "y after synchronize");
    two_free(&t);
}

Test(async, rule1_copies_computes_and_copies_run_in_enqueue_order) {
    struct two t;
    two_init(&t);
    float in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i]  = 10.0f + (float) i;
        out[i] = -5.0f;
    }
    cr_assert(ggmlx_backend_queue_hold(t.a));
    ggml_backend_tensor_set_async(t.a, t.x, in, 0, sizeof in);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get_async(t.a, t.y, out, 0, sizeof out);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 3);
    cr_assert_float_eq(out[0], -5.0f, 0, "the get has not run while held");
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(out[i], 2.0f * in[i], 1e-3f, "[%d]: set, then compute, then get", i);
    }
    two_free(&t);
}

Test(async, rule1_a_chain_of_computes_runs_in_order) {
    ggml_backend_t b = cpu(NULL);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = vec(ctx, "x");
    struct ggml_tensor * step = ggml_scale_inplace(ctx, x, 2.0f); /* x *= 2, in place */
    struct ggml_cgraph * g = graph_of(ctx, step);
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    fill_const(x, 1.0f);
    ggmlx_backend_queue_hold(b);
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_SUCCESS);
    }
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);
    expect(x, 0.0f, 0.0f, 1024.0f, "ten doublings, each after the one before");
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

Test(async, rule1_free_runs_queued_work_first) {
    struct two t;
    two_init(&t);
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    ggml_backend_free(t.a); /* held: free still drains */
    t.a = cpu(NULL);
    expect(t.y, 2.0f, 1.0f, 0.0f, "the queued compute ran before the backend went");
    two_free(&t);
}

/* ---- rule 2: what a compute needs is taken when it is enqueued ----------------------------- */

Test(async, rule2_context_freed_right_after_compute_async) {
    ggml_backend_t b = cpu(NULL);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = vec(ctx, "x");
    struct ggml_tensor * y = ggml_add(ctx, ggml_scale(ctx, x, 2.0f), x); /* 3x, two nodes */
    struct ggml_cgraph * g = graph_of(ctx, y);
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    fill(x, 1.0f);
    fill_const(y, -1.0f);
    float * y_data = y->data;

    ggmlx_backend_queue_hold(b);
    cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_SUCCESS);
    /* wreck every tensor struct and the graph, then free them, while the work is still queued */
    memset(ggml_get_mem_buffer(ctx), 0xA5, ggml_get_mem_size(ctx));
    ggml_free(ctx);
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);

    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(y_data[i], 3.0f * (1.0f + (float) i), 1e-3f, "[%d]", i);
    }
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
}

Test(async, rule2_graph_changed_after_compute_async) {
    struct two t;
    two_init(&t);
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    /* change the node's scale and drop the node from the graph: the queued work must not see it */
    const float other = 100.0f;
    memcpy(t.y->op_params, &other, sizeof other);
    t.ga->n_nodes = 0;
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    expect(t.y, 2.0f, 1.0f, 0.0f, "the graph as it was at enqueue time");
    two_free(&t);
}

/* ---- rule 3: synchronize; graph_compute = async + synchronize ------------------------------ */

Test(async, rule3_synchronize_waits_for_everything_enqueued_before) {
    struct two t;
    two_init(&t);
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.gb), GGML_STATUS_SUCCESS); /* same queue: z after y */
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0);
    expect(t.z, 6.0f, 1.0f, 0.0f, "z = 3 * 2x");
    two_free(&t);
}

Test(async, rule3_graph_compute_returns_with_the_result) {
    struct two t;
    two_init(&t);
    cr_assert_eq(ggml_backend_graph_compute(t.a, t.ga), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0);
    expect(t.y, 2.0f, 1.0f, 0.0f, "no synchronize needed");
    two_free(&t);
}

/* ---- rule 4: host memory of *_async calls is used when the copy runs ----------------------- */

Test(async, rule4_set_async_reads_host_memory_when_it_runs) {
    struct two t;
    two_init(&t);
    float in[N];
    for (int i = 0; i < N; i++) {
        in[i] = 1.0f;
    }
    ggmlx_backend_queue_hold(t.a);
    ggml_backend_tensor_set_async(t.a, t.x, in, 0, sizeof in);
    for (int i = 0; i < N; i++) {
        in[i] = 5.0f + (float) i; /* still ours to change: nothing was copied yet */
    }
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    expect(t.x, 1.0f, 5.0f, 0.0f, "x has the values the memory held when the copy ran");
    two_free(&t);
}

Test(async, rule4_get_async_writes_host_memory_only_when_it_runs) {
    struct two t;
    two_init(&t);
    float out[N];
    for (int i = 0; i < N; i++) {
        out[i] = -3.0f;
    }
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    cr_assert_not_null(ev);
    ggmlx_backend_queue_hold(t.a);
    ggml_backend_tensor_get_async(t.a, t.x, out, 0, sizeof out);
    ggml_backend_event_record(ev, t.a);
    cr_assert_float_eq(out[0], -3.0f, 0);
    ggmlx_backend_queue_release(t.a);
    ggml_backend_event_synchronize(ev); /* an event recorded after the call has completed */
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(out[i], 1.0f + (float) i, 0, "[%d]", i);
    }
    ggml_backend_event_free(ev);
    two_free(&t);
}

/* ---- rule 5: buffer-level calls do not wait for the queue ---------------------------------- */

Test(async, rule5_tensor_set_does_not_wait_for_queued_work) {
    struct two t;
    two_init(&t);
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    fill(t.x, 20.0f); /* returns at once although the queue is held */
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 1);
    expect(t.x, 1.0f, 20.0f, 0.0f, "the blocking set happened now");
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    expect(t.y, 2.0f, 20.0f, 0.0f, "the queued compute, run later, read the new x");
    two_free(&t);
}

/* ---- rule 6: counter events ---------------------------------------------------------------- */

/* drop-event-waits: B's compute must wait for A's through the event */
Test(async, rule6_wait_orders_work_across_queues) {
    struct two t;
    two_init(&t);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    ggml_backend_event_record(ev, t.a);
    ggml_backend_event_wait(t.b, ev); /* returns at once: the host does not block */
    cr_assert_eq(ggml_backend_graph_compute_async(t.b, t.gb), GGML_STATUS_SUCCESS);
    settle(t.b); /* B has run all it may: with the wait, nothing past it */
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.b);
    expect(t.z, 6.0f, 1.0f, 0.0f, "B computed from A's result");
    ggml_backend_event_free(ev);
    two_free(&t);
}

/* drop-event-waits: a queue behind a wait stays blocked while the event is pending */
Test(async, rule6_waiting_queue_blocks_until_the_record_runs) {
    struct two t;
    two_init(&t);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    ggmlx_backend_queue_hold(t.a);
    ggml_backend_event_record(ev, t.a);
    ggml_backend_event_wait(t.b, ev);
    cr_assert_eq(ggml_backend_graph_compute_async(t.b, t.gb), GGML_STATUS_SUCCESS);
    settle(t.b);
    cr_assert(ggmlx_queue_waiting(ggmlx_backend_cpu_queue(t.b)), "B's worker is blocked in the wait");
    cr_assert_eq(ggmlx_backend_queue_pending(t.b), 2, "the wait and the compute are still queued");
    expect(t.z, 0.0f, 0.0f, -7.0f, "B's compute has not run");
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.b);
    cr_assert_eq(ggmlx_backend_queue_pending(t.b), 0);
    ggml_backend_event_free(ev);
    two_free(&t);
}

Test(async, rule6_wait_target_is_taken_at_enqueue_time) {
    struct two t;
    two_init(&t);
    ggml_backend_t c = cpu(NULL);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    ggmlx_backend_queue_hold(t.a);
    ggmlx_backend_queue_hold(c);
    ggml_backend_event_record(ev, t.a);  /* record 1 */
    ggml_backend_event_wait(t.b, ev);    /* waits for record 1 only */
    cr_assert_eq(ggml_backend_graph_compute_async(t.b, t.gb), GGML_STATUS_SUCCESS);
    ggml_backend_event_record(ev, c);    /* record 2, after the wait was enqueued */
    ggmlx_backend_queue_release(t.a);    /* record 1 runs; record 2 stays held */
    cr_assert(drained(t.b), "B did not wait for a record enqueued after its wait");
    ggmlx_backend_queue_release(c);
    ggml_backend_event_synchronize(ev);
    ggml_backend_event_free(ev);
    ggml_backend_free(c);
    two_free(&t);
}

static void event_sync_fn(void * ev) {
    ggml_backend_event_synchronize(ev);
}

Test(async, rule6_event_never_recorded_counts_as_done) {
    struct two t;
    two_init(&t);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    ggml_backend_event_wait(t.b, ev);
    cr_assert_eq(ggml_backend_graph_compute_async(t.b, t.ga), GGML_STATUS_SUCCESS);
    cr_assert(drained(t.b), "nothing to wait for");
    cr_assert(join_within(start_helper(event_sync_fn, ev), 10), "event_synchronize returned");
    ggml_backend_event_free(ev);
    two_free(&t);
}

struct sync_probe {
    ggml_backend_event_t  ev;
    const struct ggml_tensor * y;
    atomic_bool           done;
    float                 seen;
};

static void probe_fn(void * p) {
    struct sync_probe * s = p;
    ggml_backend_event_synchronize(s->ev);
    ggml_backend_tensor_get(s->y, &s->seen, 0, sizeof s->seen);
    atomic_store(&s->done, true);
}

Test(async, rule6_event_synchronize_blocks_the_host_until_the_record_ran) {
    struct two t;
    two_init(&t);
    struct sync_probe s = { ggml_backend_event_new(ggml_backend_get_device(t.a)), t.y, false, 0.0f };
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    ggml_backend_event_record(s.ev, t.a);
    pthread_t h = start_helper(probe_fn, &s);
    nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
    cr_assert_not(atomic_load(&s.done), "event_synchronize returned while the record was held");
    ggmlx_backend_queue_release(t.a);
    cr_assert(join_within(h, 10));
    cr_assert_float_eq(s.seen, 2.0f, 0, "the host saw A's result after event_synchronize");
    ggml_backend_event_free(s.ev);
    two_free(&t);
}

Test(async, rule6_event_free_while_queued_is_safe) {
    struct two t;
    two_init(&t);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));
    ggmlx_backend_queue_hold(t.a);
    ggml_backend_event_record(ev, t.a);
    ggml_backend_event_wait(t.b, ev);
    ggml_backend_event_free(ev); /* the queued record and wait keep the counter alive */
    cr_assert_eq(ggml_backend_graph_compute_async(t.b, t.gb), GGML_STATUS_SUCCESS);
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    ggml_backend_synchronize(t.b);
    cr_assert_eq(ggmlx_backend_queue_pending(t.b), 0);
    two_free(&t);
}

/* a device of another kind whose events the CPU cannot wait for natively */
static atomic_int g_foreign_syncs;

static void foreign_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    (void) event;
    atomic_fetch_add(&g_foreign_syncs, 1);
}

static const char * foreign_name(ggml_backend_dev_t dev) {
    (void) dev;
    return "FOREIGN";
}

/* drop-event-waits: the fallback wait is a wait too */
Test(async, rule6_foreign_event_wait_blocks_the_worker_on_event_synchronize) {
    struct ggml_backend_device foreign = { .iface = { .get_name = foreign_name,
                                                       .event_synchronize = foreign_event_synchronize } };
    uint32_t not_a_host_event = 0;
    struct ggml_backend_event ev = { &foreign, &not_a_host_event, NULL };
    ggml_backend_t b = cpu(NULL);
    ggmlx_backend_queue_hold(b);
    ggml_backend_event_wait(b, &ev);
    cr_assert_eq(atomic_load(&g_foreign_syncs), 0, "queued: the host did not wait");
    cr_assert_eq(ggmlx_backend_queue_pending(b), 1);
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);
    cr_assert_eq(atomic_load(&g_foreign_syncs), 1, "the worker synchronized the foreign event");
    ggml_backend_free(b);
}

/*
 * A foreign event whose records are mirrored in a host twin (CUDA's): the CPU queue waits for the
 * record enqueued before the wait, through the twin, and not for a record made after it. Waiting
 * for the latest record when the worker gets there (a cudaEventSynchronize) deadlocked the
 * demo's scheduler check on three CUDA devices: the later record depended on the CPU.
 */
Test(async, rule6_foreign_event_with_a_host_twin_waits_for_the_record_before_the_wait) {
    struct ggml_backend_device foreign = { .iface = { .get_name = foreign_name,
                                                       .event_synchronize = foreign_event_synchronize } };
    ggml_backend_t b = cpu(NULL);
    ggml_backend_event_t twin = ggmlx_host_event_new(&foreign);
    ggml_backend_event_t after = ggml_backend_event_new(ggml_backend_get_device(b));
    cr_assert(twin != NULL && after != NULL);
    uint32_t not_a_host_event = 0;
    struct ggml_backend_event ev = { &foreign, &not_a_host_event, twin };
    struct ggmlx_host_event * tw = ggmlx_host_event_of(twin);

    const uint64_t first = ggmlx_host_event_begin_record(tw); /* the foreign device's record 1 */
    ggml_backend_event_wait(b, &ev);                           /* waits for record 1 */
    ggml_backend_event_record(after, b);
    const uint64_t second = ggmlx_host_event_begin_record(tw); /* record 2, after the wait */
    cr_assert_eq(second, first + 1);

    ggmlx_host_event_complete(tw, first);
    ggml_backend_event_synchronize(after); /* hangs (test timeout) if the wait took record 2 */
    cr_assert_eq(atomic_load(&g_foreign_syncs), 0, "the twin was waited on, not the foreign event");
#ifndef GGMLX_DROP_EVENT_WAITS
    /* and the wait is real: a second wait, for record 2, holds the queue until it completes */
    ggml_backend_event_wait(b, &ev);
    ggml_backend_event_record(after, b);
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(ggmlx_backend_queue_pending(b) > 0, true, "the queue ran past a wait for an open record");
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
#endif
    ggmlx_host_event_complete(tw, second);
    ggml_backend_synchronize(b);
    ggml_backend_event_free(after);
    ggmlx_host_event_free(twin);
    ggml_backend_free(b);
}

/* ---- snapshots (rule 2), directly ---------------------------------------------------------- */

Test(async, rule2_snapshot_owns_nodes_sources_and_view_chains) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * xt = ggml_transpose(ctx, x); /* a view node: nothing to compute */
    struct ggml_tensor * c  = ggml_cont(ctx, xt);
    struct ggml_tensor * y  = ggml_add(ctx, c, c);
    ggml_set_name(x, "x");
    ggml_set_name(c, "c");
    ggml_set_name(y, "y");
    struct ggml_cgraph * g = graph_of(ctx, y);
    cr_assert_eq(ggml_graph_n_nodes(g), 3);

    struct ggmlx_graph_snapshot * snap = ggmlx_graph_snapshot_new(g);
    cr_assert_not_null(snap);
    /* the originals are gone: everything below must come from the snapshot */
    memset(ggml_get_mem_buffer(ctx), 0xA5, ggml_get_mem_size(ctx));
    ggml_free(ctx);

    struct ggml_cgraph * sg = ggmlx_graph_snapshot_graph(snap);
    cr_assert_eq(ggml_graph_n_nodes(sg), 2, "the view node is left out");
    struct ggml_tensor * sc = ggml_graph_node(sg, 0);
    struct ggml_tensor * sy = ggml_graph_node(sg, 1);
    cr_assert_str_eq(sc->name, "c");
    cr_assert_eq(sc->op, GGML_OP_CONT);
    cr_assert_str_eq(sy->name, "y");
    cr_assert_eq(sy->op, GGML_OP_ADD);
    cr_assert_eq(sy->src[0], sc, "sources point at the copies");
    cr_assert_eq(sy->src[1], sc);
    const struct ggml_tensor * sxt = sc->src[0];
    cr_assert_eq(sxt->op, GGML_OP_TRANSPOSE, "a source that is a view is copied");
    cr_assert_not_null(sxt->view_src);
    cr_assert_str_eq(sxt->view_src->name, "x", "and so is what it views");
    cr_assert_eq(sxt->src[0], sxt->view_src);
    cr_assert_eq(sxt->ne[0], 4);
    cr_assert_eq(sxt->ne[1], 8);
    ggmlx_graph_snapshot_free(snap);
}

/* ---- rule 7: copies between backends ------------------------------------------------------- */

/* drop-event-waits: the copy must follow A's compute and precede B's */
Test(async, rule7_copy_async_runs_after_src_work_and_before_later_dst_work) {
    ggml_backend_t a = cpu(NULL), b = cpu(NULL);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x  = vec(ctx, "x");
    struct ggml_tensor * y  = ggml_scale(ctx, x, 2.0f); /* on A */
    struct ggml_tensor * y2 = vec(ctx, "y2");           /* B's copy of y */
    struct ggml_tensor * z  = ggml_scale(ctx, y2, 3.0f); /* on B */
    struct ggml_cgraph * ga = graph_of(ctx, y);
    struct ggml_cgraph * gb = graph_of(ctx, z);
    ggml_backend_buffer_t buf = alloc_all(ctx, a);
    fill(x, 1.0f);
    fill_const(y, -1.0f);
    fill_const(y2, -2.0f);

    ggmlx_backend_queue_hold(a);
    cr_assert_eq(ggml_backend_graph_compute_async(a, ga), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_copy_async(a, b, y, y2);
    cr_assert_eq(ggml_backend_graph_compute_async(b, gb), GGML_STATUS_SUCCESS);
    settle(b);
    ggmlx_backend_queue_release(a);
    ggml_backend_synchronize(b);
    expect(y2, 2.0f, 1.0f, 0.0f, "y2 = A's y");
    expect(z, 6.0f, 1.0f, 0.0f, "B's compute used the copy");

    ggml_backend_free(a);
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* drop-event-waits: a pipeline of four stages over two queues, every hop through an event */
Test(async, rule7_ping_pong_pipeline_keeps_every_hop_ordered) {
    ggml_backend_t q[2] = { cpu(NULL), cpu(NULL) };
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * v    = vec(ctx, "v");
    struct ggml_tensor * ones = vec(ctx, "ones");
    /* stages alternate "v *= 2" (queue 0) and "v += 1" (queue 1): the order shows in the result */
    struct ggml_cgraph * g[2] = { graph_of(ctx, ggml_scale_inplace(ctx, v, 2.0f)),
                                  graph_of(ctx, ggml_add_inplace(ctx, v, ones)) };
    ggml_backend_buffer_t buf = alloc_all(ctx, q[0]);
    fill_const(v, 1.0f);
    fill_const(ones, 1.0f);
    ggml_backend_event_t ev[2] = { ggml_backend_event_new(ggml_backend_get_device(q[0])),
                                   ggml_backend_event_new(ggml_backend_get_device(q[1])) };
    ggmlx_backend_queue_hold(q[0]);
    ggmlx_backend_queue_hold(q[1]);
    for (int i = 0; i < 4; i++) {
        const int me = i % 2;
        if (i > 0) {
            ggml_backend_event_wait(q[me], ev[!me]);
        }
        cr_assert_eq(ggml_backend_graph_compute_async(q[me], g[me]), GGML_STATUS_SUCCESS);
        ggml_backend_event_record(ev[me], q[me]);
    }
    ggmlx_backend_queue_release(q[1]); /* the later stages first: they must wait */
    settle(q[1]);
    ggmlx_backend_queue_release(q[0]);
    ggml_backend_synchronize(q[0]);
    ggml_backend_synchronize(q[1]);
    expect(v, 0.0f, 0.0f, 7.0f, "((1 * 2) + 1) * 2 + 1, stage after stage");
    ggml_backend_event_free(ev[0]);
    ggml_backend_event_free(ev[1]);
    ggml_backend_free(q[0]);
    ggml_backend_free(q[1]);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* free-running (no holds): 100 stages alternating two queues, each hop through an event */
Test(async, rule6_hundred_hops_without_holds_stay_ordered) {
    ggml_backend_t q[2] = { cpu("n_threads=1"), cpu("n_threads=2") };
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * v    = vec(ctx, "v");
    struct ggml_tensor * ones = vec(ctx, "ones");
    struct ggml_cgraph * g[2] = { graph_of(ctx, ggml_add_inplace(ctx, v, ones)),
                                  graph_of(ctx, ggml_scale_inplace(ctx, v, 0.5f)) };
    ggml_backend_buffer_t buf = alloc_all(ctx, q[0]);
    fill(v, 0.0f);
    fill_const(ones, 1.0f);
    ggml_backend_event_t ev[2] = { ggml_backend_event_new(ggml_backend_get_device(q[0])),
                                   ggml_backend_event_new(ggml_backend_get_device(q[1])) };
    float want[N];
    for (int i = 0; i < N; i++) {
        want[i] = (float) i;
    }
    for (int s = 0; s < 100; s++) {
        const int me = s % 2;
        ggml_backend_event_wait(q[me], ev[!me]);
        cr_assert_eq(ggml_backend_graph_compute_async(q[me], g[me]), GGML_STATUS_SUCCESS);
        ggml_backend_event_record(ev[me], q[me]);
        for (int i = 0; i < N; i++) {
            want[i] = me == 0 ? want[i] + 1.0f : want[i] * 0.5f;
        }
    }
    ggml_backend_event_synchronize(ev[1]);
    float got[N];
    ggml_backend_tensor_get(v, got, 0, sizeof got);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(got[i], want[i], 0, "[%d]: stages ran out of order", i);
    }
    ggml_backend_event_free(ev[0]);
    ggml_backend_event_free(ev[1]);
    ggml_backend_free(q[0]);
    ggml_backend_free(q[1]);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

Test(async, rule7_copy_on_the_same_backend_is_queued_in_order) {
    struct two t;
    two_init(&t);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * y2 = vec(c2, "y2");
    ggml_backend_buffer_t buf2 = alloc_all(c2, t.a);
    fill_const(y2, -2.0f);
    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_copy_async(t.a, t.a, t.y, y2);
    expect(y2, 0.0f, 0.0f, -2.0f, "queued, not done");
    ggmlx_backend_queue_release(t.a);
    ggml_backend_synchronize(t.a);
    expect(y2, 2.0f, 1.0f, 0.0f, "copied after the compute");
    ggml_backend_buffer_free(buf2);
    ggml_free(c2);
    two_free(&t);
}

/* ---- rule 8: errors in queued work are sticky ---------------------------------------------- */

Test(async, rule8_queued_error_is_sticky_until_cleared) {
    struct two t;
    two_init(&t);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * dst = ggml_new_tensor_2d(c2, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * src = ggml_new_tensor_2d(c2, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * idx = ggml_new_tensor_1d(c2, GGML_TYPE_I64, 2);
    struct ggml_tensor * sr  = ggml_set_rows(c2, dst, src, idx);
    cr_assert_not_null(sr);
    struct ggml_cgraph * gbad = graph_of(c2, sr);
    ggml_backend_buffer_t buf2 = alloc_all(c2, t.a);
    const int64_t rows[2] = { 1, 100 }; /* 100 is past the 8 rows of dst */
    ggml_backend_buffer_clear(buf2, 0);
    ggml_backend_tensor_set(idx, rows, 0, sizeof rows);

    cr_assert_eq(ggml_backend_graph_compute_async(t.a, gbad), GGML_STATUS_SUCCESS, "only the data is wrong");
    ggml_backend_synchronize(t.a);
    cr_assert_eq(ggmlx_backend_get_status(t.a), GGML_STATUS_FAILED);

    /* the next compute returns the error and runs nothing */
    cr_assert_eq(ggml_backend_graph_compute(t.a, t.ga), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "clear_status") != NULL, "%s", ggmlx_last_error());
    expect(t.y, 0.0f, 0.0f, -1.0f, "nothing ran after the error");
    cr_assert_eq(ggmlx_backend_get_status(t.a), GGML_STATUS_FAILED, "reading does not clear");

    ggmlx_backend_clear_status(t.a);
    cr_assert_eq(ggmlx_backend_get_status(t.a), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute(t.a, t.ga), GGML_STATUS_SUCCESS);
    expect(t.y, 2.0f, 1.0f, 0.0f, "usable again");

    ggml_backend_buffer_free(buf2);
    ggml_free(c2);
    two_free(&t);
}

Test(async, rule8_work_queued_behind_an_error_is_skipped_but_events_still_fire) {
    struct two t;
    two_init(&t);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * dst = ggml_new_tensor_2d(c2, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * src = ggml_new_tensor_2d(c2, GGML_TYPE_F32, 4, 1);
    struct ggml_tensor * idx = ggml_new_tensor_1d(c2, GGML_TYPE_I32, 1);
    struct ggml_cgraph * gbad = graph_of(c2, ggml_set_rows(c2, dst, src, idx));
    ggml_backend_buffer_t buf2 = alloc_all(c2, t.a);
    const int32_t row = -1;
    ggml_backend_tensor_set(idx, &row, 0, sizeof row);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(t.a));

    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, gbad), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, t.ga), GGML_STATUS_SUCCESS); /* enqueued before the error */
    ggml_backend_event_record(ev, t.a);
    ggml_backend_event_wait(t.b, ev);
    ggmlx_backend_queue_release(t.a);
    cr_assert(join_within(start_helper(event_sync_fn, ev), 10), "the record ran after the error");
    ggml_backend_synchronize(t.b);
    cr_assert_eq(ggmlx_backend_queue_pending(t.b), 0, "B is not stuck behind A's error");
    cr_assert_eq(ggmlx_backend_get_status(t.a), GGML_STATUS_FAILED);
    cr_assert_eq(ggmlx_backend_get_status(t.b), GGML_STATUS_SUCCESS, "errors are per queue");
    expect(t.y, 0.0f, 0.0f, -1.0f, "the compute behind the error was skipped");

    ggml_backend_event_free(ev);
    ggml_backend_buffer_free(buf2);
    ggml_free(c2);
    two_free(&t);
}

Test(async, rule8_errors_found_at_enqueue_time_are_returned_not_queued) {
    struct two t;
    two_init(&t);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * lonely = vec(c2, "lonely"); /* never allocated */
    struct ggml_cgraph * g_unalloc = graph_of(c2, ggml_scale(c2, lonely, 2.0f));
    struct ggml_cgraph * g_unsupported = graph_of(t.ctx, ggml_cast(t.ctx, t.y, GGML_TYPE_IQ2_XXS)); /* no quantizer */

    ggmlx_backend_queue_hold(t.a);
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, g_unalloc), GGML_STATUS_FAILED);
    cr_assert(strstr(ggmlx_last_error(), "not allocated") != NULL, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_backend_graph_compute_async(t.a, g_unsupported), GGML_STATUS_FAILED);
    cr_assert(strstr(ggmlx_last_error(), "not supported") != NULL, "%s", ggmlx_last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0, "nothing was queued");
    ggmlx_backend_queue_release(t.a);
    cr_assert_eq(ggmlx_backend_get_status(t.a), GGML_STATUS_SUCCESS, "not sticky: the queue never saw them");
    ggml_free(c2);
    two_free(&t);
}

/* ---- the "sync" mode ----------------------------------------------------------------------- */

Test(async, sync_mode_computes_before_returning) {
    ggml_backend_t b = cpu("sync");
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = vec(ctx, "x");
    struct ggml_tensor * y = ggml_scale(ctx, x, 2.0f);
    struct ggml_cgraph * g = graph_of(ctx, y);
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    fill(x, 1.0f);
    cr_assert_not(ggmlx_backend_queue_hold(b), "no queue to hold");
    cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_SUCCESS);
    expect(y, 2.0f, 1.0f, 0.0f, "done when graph_compute_async returned");
    cr_assert_eq(ggmlx_backend_queue_pending(b), 0);
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

Test(async, sync_mode_from_the_environment) {
    setenv("GGMLX_CPU_SYNC", "1", 1);
    ggml_backend_t b = cpu(NULL);
    ggml_backend_t forced = cpu("async");
    unsetenv("GGMLX_CPU_SYNC");
    cr_assert_null(ggmlx_backend_cpu_queue(b), "GGMLX_CPU_SYNC=1: no queue");
    cr_assert_not_null(ggmlx_backend_cpu_queue(forced), "the 'async' parameter wins over the environment");
    ggml_backend_free(b);
    ggml_backend_free(forced);
}

Test(async, sync_mode_returns_errors_directly) {
    ggml_backend_t b = cpu("sync");
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * dst = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * src = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 1);
    struct ggml_tensor * idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    struct ggml_cgraph * g = graph_of(ctx, ggml_set_rows(ctx, dst, src, idx));
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    const int32_t row = 9;
    ggml_backend_tensor_set(idx, &row, 0, sizeof row);
    cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_FAILED);
    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS, "nothing queued, nothing sticky");
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

Test(async, sync_mode_events_complete_at_once) {
    ggml_backend_t s = cpu("sync");
    ggml_backend_t q = cpu(NULL);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(s));
    ggml_backend_event_record(ev, s);
    ggml_backend_event_wait(q, ev);
    cr_assert(drained(q));
    cr_assert(join_within(start_helper(event_sync_fn, ev), 10));
    ggml_backend_event_free(ev);
    ggml_backend_free(s);
    ggml_backend_free(q);
}

/* ---- settings are queued ------------------------------------------------------------------- */

struct peek {
    ggml_backend_t backend;
    int            n_threads;
};

static enum ggml_status peek_fn(void * p) {
    struct peek * k = p;
    k->n_threads = ggmlx_backend_cpu_run_n_threads(k->backend);
    return GGML_STATUS_SUCCESS;
}

Test(async, set_n_threads_is_queued) {
    ggml_backend_t b = cpu("n_threads=4");
    struct ggmlx_queue * q = ggmlx_backend_cpu_queue(b);
    struct peek before = { b, 0 }, after = { b, 0 };
    ggmlx_backend_queue_hold(b);
    cr_assert(ggmlx_queue_push(q, (struct ggmlx_task){ peek_fn, NULL, &before, false }));
    ggml_backend_cpu_set_n_threads(b, 2);
    cr_assert(ggmlx_queue_push(q, (struct ggmlx_task){ peek_fn, NULL, &after, false }));
    ggmlx_backend_queue_release(b);
    ggml_backend_synchronize(b);
    cr_assert_eq(before.n_threads, 4, "work enqueued before the call keeps 4 threads");
    cr_assert_eq(after.n_threads, 2, "work enqueued after it gets 2");
    ggml_backend_free(b);
}

Test(async, results_do_not_depend_on_the_thread_count) {
    ggml_backend_t b = cpu(NULL);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, N, 64);
    struct ggml_tensor * y = ggml_scale(ctx, x, 2.0f);
    struct ggml_cgraph * g = graph_of(ctx, y);
    ggml_backend_buffer_t buf = alloc_all(ctx, b);
    float * v = malloc(ggml_nbytes(x));
    for (int64_t i = 0; i < ggml_nelements(x); i++) {
        v[i] = (float) (i % 97);
    }
    ggml_backend_tensor_set(x, v, 0, ggml_nbytes(x));
    for (int nt = 1; nt <= 3; nt++) {
        ggml_backend_cpu_set_n_threads(b, nt);
        ggml_backend_buffer_clear(buf, 0); /* x too: set it again, queued */
        ggml_backend_tensor_set_async(b, x, v, 0, ggml_nbytes(x));
        cr_assert_eq(ggml_backend_graph_compute(b, g), GGML_STATUS_SUCCESS);
        float out[64];
        ggml_backend_tensor_get_2d(y, out, 0, sizeof(float), 64, y->nb[1], sizeof(float));
        for (int r = 0; r < 64; r++) {
            cr_assert_float_eq(out[r], 2.0f * (float) ((r * N) % 97), 0, "%d threads, row %d", nt, r);
        }
    }
    free(v);
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* ---- hooks --------------------------------------------------------------------------------- */

Test(async, hold_and_release_report_pending_work) {
    struct two t;
    two_init(&t);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0);
    cr_assert(ggmlx_backend_queue_hold(t.a));
    for (int i = 0; i < 5; i++) {
        ggml_backend_graph_compute_async(t.a, t.ga);
    }
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 5);
    cr_assert(ggmlx_backend_queue_release(t.a));
    ggml_backend_synchronize(t.a);
    cr_assert_eq(ggmlx_backend_queue_pending(t.a), 0);
    two_free(&t);
}
