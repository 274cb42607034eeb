/*
 * test-backend-api.c -- the public backend API on the real CPU backend: identity, its device
 * and registry, default buffer type, queued copies, graph computes and plans, the sticky
 * queue status, events (and the refusal to record one on another device's backend), copies
 * between backends, and bad input. Every wait is bounded (the suite's timeout).
 * test-backend-dispatch.c checks the generic layer's fallbacks against mocks.
 */
#include <criterion/criterion.h>

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct ggml_context * ctx;
static ggml_backend_t cpu;
static int g_n_errors;

static void count_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) text;
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        __atomic_fetch_add(&g_n_errors, 1, __ATOMIC_RELAXED);
    }
}

#define ASSERT_ERROR()                                                                        \
    do {                                                                                      \
        cr_assert_not_null(ggmlx_last_error(), "an error is recorded");                       \
        ggmlx_clear_last_error();                                                             \
    } while (0)

#define ASSERT_NO_ERROR() cr_assert_null(ggmlx_last_error(), "unexpected error: %s", ggmlx_last_error())

static void setup(void) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu, "ggml_backend_cpu_init: %s", ggmlx_last_error());
    ggml_log_set(count_log, NULL);
    ggmlx_clear_last_error();
}

static void teardown(void) {
    ggml_backend_free(cpu);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

/* the tensors of ctx allocated in a fresh CPU buffer */
static ggml_backend_buffer_t alloc_all(void) {
    size_t total = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data == NULL && t->view_src == NULL) {
            total += GGML_PAD(ggml_nbytes(t), 32);
        }
    }
    ggml_backend_buffer_t b = ggml_backend_alloc_buffer(cpu, total);
    cr_assert_not_null(b);
    char * at = ggml_backend_buffer_get_base(b);
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data == NULL && t->view_src == NULL) {
            cr_assert_eq(ggml_backend_tensor_alloc(b, t, at), GGML_STATUS_SUCCESS);
            at += GGML_PAD(ggml_nbytes(t), 32);
        } else if (t->view_src != NULL && t->buffer == NULL) {
            cr_assert_eq(ggml_backend_view_init(t), GGML_STATUS_SUCCESS);
        }
    }
    return b;
}

/* y = relu(x) over n floats */
struct relu_graph {
    struct ggml_tensor * x, * y;
    struct ggml_cgraph * g;
};

static struct relu_graph relu_graph(int64_t n) {
    struct relu_graph r;
    r.x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    r.y = ggml_relu(ctx, r.x);
    r.g = ggml_new_graph(ctx);
    ggml_build_forward_expand(r.g, r.y);
    return r;
}

static void set_ramp(struct ggml_tensor * x, int64_t n) {
    float * v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float) (i - n / 2);
    }
    ggml_backend_tensor_set(x, v, 0, (size_t) n * sizeof *v);
    free(v);
}

static void check_relu_of_ramp(struct ggml_tensor * y, int64_t n) {
    float * v = malloc((size_t) n * sizeof *v);
    ggml_backend_tensor_get(y, v, 0, (size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        const float want = i - n / 2 > 0 ? (float) (i - n / 2) : 0.0f;
        cr_assert_eq(v[i], want, "y[%lld] = %g, want %g", (long long) i, v[i], want);
    }
    free(v);
}

/* ==== identity, device, registry ============================================================= */

TestSuite(cpu_backend, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_backend, is_named_CPU_and_is_cpu) {
    cr_assert_str_eq(ggml_backend_name(cpu), "CPU");
    cr_assert(ggml_backend_is_cpu(cpu));
}

Test(cpu_backend, guid_is_shared_by_every_cpu_backend) {
    ggml_backend_t other = ggml_backend_cpu_init();
    cr_assert_not_null(ggml_backend_guid(cpu));
    cr_assert(ggml_guid_matches(ggml_backend_guid(cpu), ggml_backend_guid(other)));
    ggml_backend_free(other);
}

Test(cpu_backend, device_is_the_registrys_cpu_device) {
    ggml_backend_dev_t dev = ggml_backend_get_device(cpu);
    cr_assert_not_null(dev);
    cr_assert_str_eq(ggml_backend_dev_name(dev), "CPU");
    cr_assert_eq(ggml_backend_dev_type(dev), GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    cr_assert_not_null(reg);
    cr_assert_str_eq(ggml_backend_reg_name(reg), "CPU");
    cr_assert_geq(ggml_backend_reg_dev_count(reg), 1);
    cr_assert_eq(ggml_backend_reg_dev_get(reg, 0), dev);
    cr_assert_eq(ggml_backend_cpu_reg(), reg);
}

Test(cpu_backend, device_props) {
    struct ggml_backend_dev_props p;
    ggml_backend_dev_get_props(ggml_backend_get_device(cpu), &p);
    cr_assert_str_eq(p.name, "CPU");
    cr_assert_not_null(p.description);
    cr_assert_eq(p.type, GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert(p.caps.async);
    cr_assert(p.caps.events);
    cr_assert(p.caps.buffer_from_host_ptr);
    cr_assert_gt(p.memory_total, 0);
}

Test(cpu_backend, set_n_threads_is_offered_by_name) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(ggml_backend_get_device(cpu));
    ggml_backend_set_n_threads_t fn =
        (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    cr_assert_not_null(fn);
    fn(cpu, 2);
    cr_assert_null(ggml_backend_reg_get_proc_address(reg, "no_such_function"));
    ASSERT_NO_ERROR();
}

Test(cpu_backend, default_buffer_type_is_the_cpu_buffer_type) {
    cr_assert_eq(ggml_backend_get_default_buffer_type(cpu), ggml_backend_cpu_buffer_type());
    cr_assert_eq(ggml_backend_dev_buffer_type(ggml_backend_get_device(cpu)), ggml_backend_cpu_buffer_type());
    cr_assert_eq(ggml_backend_get_alignment(cpu), 32);
    cr_assert_eq(ggml_backend_get_max_size(cpu), SIZE_MAX);
}

Test(cpu_backend, alloc_buffer_gives_a_host_buffer) {
    ggml_backend_buffer_t b = ggml_backend_alloc_buffer(cpu, 1 << 16);
    cr_assert_not_null(b);
    cr_assert(ggml_backend_buffer_is_host(b));
    cr_assert_eq(ggml_backend_buffer_get_size(b), 1 << 16);
    ggml_backend_buffer_free(b);
}

Test(cpu_backend, supports_host_buffers_and_its_ops) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    cr_assert(ggml_backend_supports_op(cpu, ggml_relu(ctx, x)));
    cr_assert(ggml_backend_supports_buft(cpu, ggml_backend_cpu_buffer_type()));
    cr_assert_not(ggml_backend_offload_op(cpu, ggml_relu(ctx, x)));
}

Test(cpu_backend, buffer_from_host_ptr_through_the_device) {
    void * mem = aligned_alloc(64, 256);
    ggml_backend_buffer_t b = ggml_backend_dev_buffer_from_host_ptr(ggml_backend_get_device(cpu), mem, 256, 256);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_base(b), mem);
    ggml_backend_buffer_free(b);
    free(mem);
}

/* ==== queued copies ========================================================================== */

TestSuite(cpu_async_io, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_async_io, set_then_get_after_synchronize) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    ggml_backend_buffer_t b = alloc_all();
    float in[64], out[64];
    for (int i = 0; i < 64; i++) {
        in[i] = (float) i * 0.25f;
    }
    ggml_backend_tensor_set_async(cpu, x, in, 0, sizeof in);
    ggml_backend_tensor_get_async(cpu, x, out, 0, sizeof out);
    ggml_backend_synchronize(cpu);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_buffer_free(b);
}

Test(cpu_async_io, set_2d_and_get_2d) {
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 6);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_tensor_memset(x, 0, 0, ggml_nbytes(x));
    const float in[6] = { 1, 2, 3, 4, 5, 6 };
    /* column 2 of every row from a packed array, then read back column 2 */
    ggml_backend_tensor_set_2d_async(cpu, x, in, 2 * sizeof(float), sizeof(float), 6, x->nb[1], sizeof(float));
    float out[6] = { 0 };
    ggml_backend_tensor_get_2d_async(cpu, x, out, 2 * sizeof(float), sizeof(float), 6, x->nb[1], sizeof(float));
    ggml_backend_synchronize(cpu);
    cr_assert_arr_eq(in, out, sizeof in);
    float all[24];
    ggml_backend_tensor_get(x, all, 0, sizeof all);
    cr_assert_eq(all[4 * 5 + 2], 6.0f);
    cr_assert_eq(all[4 * 5 + 3], 0.0f, "other columns untouched");
    ggml_backend_buffer_free(b);
}

Test(cpu_async_io, out_of_bounds_is_refused_with_nothing_queued) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_tensor_memset(x, 0x5A, 0, 16);
    float in[8] = { 0 };
    cr_assert(ggmlx_backend_queue_hold(cpu), "the CPU backend has a host queue");
    ggml_backend_tensor_set_async(cpu, x, in, 0, sizeof in);
    ASSERT_ERROR();
    ggml_backend_tensor_set_2d_async(cpu, x, in, 0, 8, 3, 8, 8);
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_queue_pending(cpu), 0, "nothing enqueued");
    ggmlx_backend_queue_release(cpu);
    ggml_backend_synchronize(cpu);
    unsigned char raw[16];
    ggml_backend_tensor_get(x, raw, 0, 16);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(raw[i], 0x5A);
    }
    ggml_backend_buffer_free(b);
}

/* a non-host buffer type the CPU device must refuse */
static const char * priv_name(ggml_backend_buffer_type_t buft) { (void) buft; return "PRIVATE"; }
static size_t priv_align(ggml_backend_buffer_type_t buft) { (void) buft; return 32; }
static void priv_free(ggml_backend_buffer_t b) { free(b->context); }
static void * priv_base(ggml_backend_buffer_t b) { return b->context; }
static ggml_backend_buffer_t priv_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct ggml_backend_buffer_i i = { .free_buffer = priv_free, .get_base = priv_base };
    return ggml_backend_buffer_init(buft, i, calloc(1, size), size);
}
static struct ggml_backend_buffer_type priv_buft = {
    .iface = { .get_name = priv_name, .alloc_buffer = priv_alloc, .get_alignment = priv_align },
};

Test(cpu_async_io, a_tensor_of_another_buffer_type_is_refused) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(&priv_buft, 64);
    ggml_backend_tensor_alloc(b, x, ggml_backend_buffer_get_base(b));
    cr_assert_not(ggml_backend_supports_buft(cpu, &priv_buft));
    float in[4] = { 1, 2, 3, 4 };
    ggmlx_backend_queue_hold(cpu);
    ggml_backend_tensor_set_async(cpu, x, in, 0, sizeof in);
    ASSERT_ERROR();
    ggml_backend_tensor_get_async(cpu, x, in, 0, sizeof in);
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_queue_pending(cpu), 0, "nothing enqueued");
    ggmlx_backend_queue_release(cpu);
    cr_assert(((unsigned char *) x->data)[0] == 0, "nothing written");
    ggml_backend_buffer_free(b);
}

/* ==== graphs ================================================================================= */

TestSuite(cpu_graphs, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_graphs, compute_gives_the_result) {
    struct relu_graph r = relu_graph(100);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 100);
    cr_assert_eq(ggml_backend_graph_compute(cpu, r.g), GGML_STATUS_SUCCESS);
    check_relu_of_ramp(r.y, 100);
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, compute_async_then_synchronize) {
    struct relu_graph r = relu_graph(1000);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 1000);
    cr_assert_eq(ggml_backend_graph_compute_async(cpu, r.g), GGML_STATUS_SUCCESS);
    ggml_backend_synchronize(cpu);
    check_relu_of_ramp(r.y, 1000);
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, compute_async_returns_while_the_queue_is_held) {
    struct relu_graph r = relu_graph(16);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 16);
    ggml_backend_tensor_memset(r.y, 0xFF, 0, ggml_nbytes(r.y));
    cr_assert(ggmlx_backend_queue_hold(cpu));
    cr_assert_eq(ggml_backend_graph_compute_async(cpu, r.g), GGML_STATUS_SUCCESS);
    cr_assert_geq(ggmlx_backend_queue_pending(cpu), 1, "queued, not run");
    unsigned char raw[4];
    ggml_backend_tensor_get(r.y, raw, 0, 4);
    cr_assert_eq(raw[0], 0xFF, "not computed yet");
    cr_assert(ggmlx_backend_queue_release(cpu));
    ggml_backend_synchronize(cpu);
    cr_assert_eq(ggmlx_backend_queue_pending(cpu), 0);
    check_relu_of_ramp(r.y, 16);
    ggml_backend_buffer_free(b);
}

static bool always_abort(void * data) {
    (void) data;
    return true;
}

Test(cpu_graphs, queued_failures_are_sticky_until_cleared) {
    /* a set_rows index out of range is found only while computing, on the worker */
    struct relu_graph r = relu_graph(64);
    struct ggml_tensor * dst  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * rows = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 1);
    struct ggml_tensor * idx  = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, 1);
    struct ggml_cgraph * bad  = ggml_new_graph(ctx);
    ggml_build_forward_expand(bad, ggml_set_rows(ctx, dst, rows, idx));
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 64);
    const int64_t out_of_range = 7;
    ggml_backend_tensor_set(idx, &out_of_range, 0, sizeof out_of_range);
    const enum ggml_status st = ggml_backend_graph_compute(cpu, bad);
    cr_assert_eq(st, GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error(), "the failure has a message");
    cr_assert_eq(ggmlx_backend_get_status(cpu), st);
    cr_assert_eq(ggml_backend_graph_compute(cpu, r.g), st, "still failed: the status is sticky");
    ggmlx_backend_clear_status(cpu);
    cr_assert_eq(ggmlx_backend_get_status(cpu), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_compute(cpu, r.g), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    check_relu_of_ramp(r.y, 64);
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, an_abort_is_returned_once) {
    struct relu_graph r = relu_graph(64);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 64);
    ggml_backend_cpu_set_abort_callback(cpu, always_abort, NULL);
    cr_assert_eq(ggml_backend_graph_compute(cpu, r.g), GGML_STATUS_ABORTED);
    ggml_backend_cpu_set_abort_callback(cpu, NULL, NULL);
    cr_assert_eq(ggml_backend_graph_compute(cpu, r.g), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    check_relu_of_ramp(r.y, 64);
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, a_failed_graph_is_refused) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, NULL);
    ggmlx_clear_last_error();
    cr_assert_eq(ggml_backend_graph_compute(cpu, g), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute_async(cpu, g), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_graph_plan_create(cpu, g));
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_get_status(cpu), GGML_STATUS_SUCCESS, "refused before enqueueing");
}

Test(cpu_graphs, plans_compute_the_graph) {
    struct relu_graph r = relu_graph(50);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 50);
    ggml_backend_graph_plan_t p = ggml_backend_graph_plan_create(cpu, r.g);
    cr_assert_not_null(p, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_backend_graph_plan_compute(cpu, p), GGML_STATUS_SUCCESS);
    check_relu_of_ramp(r.y, 50);
    ggml_backend_graph_plan_free(cpu, p);
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, null_plans_are_refused) {
    cr_assert_eq(ggml_backend_graph_plan_compute(cpu, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(cpu, NULL);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_graph_plan_create(cpu, NULL));
    ASSERT_ERROR();
}

Test(cpu_graphs, a_plan_used_after_free_is_refused) {
    struct relu_graph r = relu_graph(8);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_graph_plan_t p = ggml_backend_graph_plan_create(cpu, r.g);
    cr_assert_not_null(p);
    ggml_backend_graph_plan_free(cpu, p);
    cr_assert_eq(ggml_backend_graph_plan_compute(cpu, p), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(cpu, p);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}

Test(cpu_graphs, a_plan_of_another_backend_is_refused) {
    struct relu_graph r = relu_graph(8);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_t other = ggml_backend_cpu_init();
    ggml_backend_graph_plan_t p = ggml_backend_graph_plan_create(other, r.g);
    cr_assert_eq(ggml_backend_graph_plan_compute(cpu, p), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(other, p);
    ggml_backend_free(other);
    ggml_backend_buffer_free(b);
}

/* ==== events ================================================================================= */

TestSuite(cpu_events, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_events, record_then_synchronize) {
    ggml_backend_event_t e = ggml_backend_event_new(ggml_backend_get_device(cpu));
    cr_assert_not_null(e);
    ggml_backend_event_record(e, cpu);
    ASSERT_NO_ERROR();
    ggml_backend_event_synchronize(e);
    ggml_backend_event_free(e);
}

Test(cpu_events, a_never_recorded_event_counts_as_done) {
    ggml_backend_event_t e = ggml_backend_event_new(ggml_backend_get_device(cpu));
    ggml_backend_event_synchronize(e); /* returns at once: bounded by the suite's timeout */
    ggml_backend_event_wait(cpu, e);
    ggml_backend_synchronize(cpu);
    ggml_backend_event_free(e);
}

Test(cpu_events, a_wait_orders_one_queue_after_another) {
    struct relu_graph r = relu_graph(32);
    ggml_backend_buffer_t b = alloc_all();
    set_ramp(r.x, 32);
    ggml_backend_tensor_memset(r.y, 0xFF, 0, ggml_nbytes(r.y)); /* NaN until computed */
    ggml_backend_t second = ggml_backend_cpu_init();
    ggml_backend_event_t e = ggml_backend_event_new(ggml_backend_get_device(cpu));
    float out[32];
    memset(out, 0, sizeof out);

    cr_assert(ggmlx_backend_queue_hold(cpu));
    ggml_backend_graph_compute_async(cpu, r.g);
    ggml_backend_event_record(e, cpu);
    ggml_backend_event_wait(second, e);
    /* second reads y only once the event is set, i.e. after cpu (held now) has computed it */
    ggml_backend_tensor_get_async(second, r.y, out, 0, sizeof out);
    cr_assert(ggmlx_backend_queue_release(cpu));
    ggml_backend_synchronize(second);
    for (int i = 0; i < 32; i++) {
        const float want = i - 16 > 0 ? (float) (i - 16) : 0.0f;
        cr_assert_eq(out[i], want, "out[%d] read after the compute", i);
    }
    ggml_backend_event_free(e);
    ggml_backend_free(second);
    ggml_backend_buffer_free(b);
}

/* a second device (not the CPU) whose events the CPU backend must not record */
static const char * other_name(ggml_backend_dev_t d) { (void) d; return "OTHER"; }
static ggml_backend_event_t other_event_new(ggml_backend_dev_t d) {
    ggml_backend_event_t e = calloc(1, sizeof *e);
    e->device = d;
    return e;
}
static void other_event_free(ggml_backend_dev_t d, ggml_backend_event_t e) { (void) d; free(e); }
static void other_event_sync(ggml_backend_dev_t d, ggml_backend_event_t e) { (void) d; (void) e; }
static struct ggml_backend_device other_dev = {
    .iface = { .get_name = other_name, .event_new = other_event_new, .event_free = other_event_free,
               .event_synchronize = other_event_sync },
};

static const char * other_be_name(ggml_backend_t b) { (void) b; return "OTHERBE"; }
static void other_be_free(ggml_backend_t b) { free(b); }
static int g_other_records;
static void other_be_record(ggml_backend_t b, ggml_backend_event_t e) { (void) b; (void) e; g_other_records++; }

Test(cpu_events, recording_on_another_devices_backend_is_refused) {
    ggml_backend_event_t foreign = ggml_backend_event_new(&other_dev);
    cr_assert_not_null(foreign);
    cr_assert(ggmlx_backend_queue_hold(cpu));
    ggml_backend_event_record(foreign, cpu);
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_queue_pending(cpu), 0, "nothing enqueued");
    cr_assert(ggmlx_backend_queue_release(cpu));
    ggml_backend_event_free(foreign);
}

Test(cpu_events, a_cpu_event_is_refused_by_another_devices_backend) {
    ggml_backend_event_t e = ggml_backend_event_new(ggml_backend_get_device(cpu));
    ggml_backend_t ob = calloc(1, sizeof *ob);
    ob->iface.get_name     = other_be_name;
    ob->iface.free         = other_be_free;
    ob->iface.event_record = other_be_record;
    ob->device             = &other_dev;
    g_other_records = 0;
    ggml_backend_event_record(e, ob);
    ASSERT_ERROR();
    cr_assert_eq(g_other_records, 0);
    ggml_backend_free(ob);
    ggml_backend_event_free(e);
}

Test(cpu_events, null_handles) {
    ggml_backend_event_t e = ggml_backend_event_new(ggml_backend_get_device(cpu));
    ggml_backend_event_record(e, NULL);
    ASSERT_ERROR();
    ggml_backend_event_record(NULL, cpu);
    ASSERT_ERROR();
    ggml_backend_event_wait(cpu, NULL);
    ASSERT_ERROR();
    ggml_backend_event_synchronize(NULL);
    ASSERT_ERROR();
    ggml_backend_event_free(NULL);
    ggml_backend_event_free(e);
}

/* ==== copies between backends ================================================================ */

TestSuite(cpu_copy, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_copy, between_two_cpu_backends) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    struct ggml_tensor * c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_t second = ggml_backend_cpu_init();
    float in[16], out[16];
    for (int i = 0; i < 16; i++) {
        in[i] = (float) (i * i);
    }
    ggml_backend_tensor_set_async(cpu, a, in, 0, sizeof in);
    ggml_backend_tensor_copy_async(cpu, second, a, c);
    ggml_backend_tensor_get_async(second, c, out, 0, sizeof out);
    ggml_backend_synchronize(second);
    ggml_backend_synchronize(cpu);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_free(second);
    ggml_backend_buffer_free(b);
}

Test(cpu_copy, different_layouts_are_refused) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    ggml_backend_buffer_t b = alloc_all();
    ggml_backend_tensor_copy_async(cpu, cpu, a, c);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}

Test(cpu_copy, blocking_copy_between_buffers) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 5, 3);
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 5, 3);
    ggml_backend_buffer_t b = alloc_all();
    uint16_t in[15];
    for (int i = 0; i < 15; i++) {
        in[i] = (uint16_t) (0x3C00 + i);
    }
    ggml_backend_tensor_set(a, in, 0, sizeof in);
    ggml_backend_tensor_copy(a, c);
    uint16_t out[15];
    ggml_backend_tensor_get(c, out, 0, sizeof out);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_buffer_free(b);
}

/* ==== bad input ============================================================================== */

TestSuite(cpu_bad_input, .init = setup, .fini = teardown, .timeout = 60);

Test(cpu_bad_input, null_graph_and_null_backend) {
    cr_assert_eq(ggml_backend_graph_compute(cpu, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute_async(cpu, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    struct relu_graph r = relu_graph(4);
    cr_assert_eq(ggml_backend_graph_compute(NULL, r.g), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_synchronize(NULL);
    ASSERT_ERROR();
    cr_assert_str_eq(ggml_backend_name(NULL), "NULL");
    cr_assert_not(ggml_backend_is_cpu(NULL));
}

/* the message names the function the caller used, not the one it delegates to */
Test(cpu_bad_input, a_null_argument_is_named_under_the_function_called) {
    struct relu_graph r = relu_graph(4);
    cr_assert_eq(ggml_backend_graph_compute(NULL, r.g), GGML_STATUS_FAILED);
    cr_assert_str_eq(ggmlx_last_error(), "ggml_backend_graph_compute: backend is NULL");
    cr_assert_eq(ggml_backend_graph_compute(cpu, NULL), GGML_STATUS_FAILED);
    cr_assert_str_eq(ggmlx_last_error(), "ggml_backend_graph_compute: cgraph is NULL");
    cr_assert_null(ggml_backend_alloc_buffer(NULL, 16));
    cr_assert_str_eq(ggmlx_last_error(), "ggml_backend_alloc_buffer: backend is NULL");
    cr_assert_eq(ggml_backend_get_alignment(NULL), 0);
    cr_assert_str_eq(ggmlx_last_error(), "ggml_backend_get_alignment: backend is NULL");
    cr_assert_eq(ggml_backend_get_max_size(NULL), 0);
    cr_assert_str_eq(ggmlx_last_error(), "ggml_backend_get_max_size: backend is NULL");
    ggmlx_clear_last_error();
}

Test(cpu_bad_input, an_unallocated_graph_is_refused_before_enqueueing) {
    struct relu_graph r = relu_graph(4); /* no buffer */
    const enum ggml_status st = ggml_backend_graph_compute(cpu, r.g);
    cr_assert_eq(st, GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_get_status(cpu), GGML_STATUS_SUCCESS, "the queue is still usable");
}

Test(cpu_bad_input, get_past_the_end_leaves_host_memory_unchanged) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_buffer_t b = alloc_all();
    unsigned char out[32];
    memset(out, 0x3C, sizeof out);
    ggml_backend_tensor_get_async(cpu, x, out, 4, 16);
    ASSERT_ERROR();
    ggml_backend_synchronize(cpu);
    for (size_t i = 0; i < sizeof out; i++) {
        cr_assert_eq(out[i], 0x3C);
    }
    ggml_backend_buffer_free(b);
}
