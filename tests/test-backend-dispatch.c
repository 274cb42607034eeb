/*
 * test-backend-dispatch.c -- the generic backend layer against a mock backend, device and
 * registry: every ggml_backend_* / ggml_backend_dev_* / ggml_backend_reg_* / event call reaches
 * the right vtable entry, the fallbacks for missing entries give the stronger ordering
 * (synchronize, then the blocking form), input is checked before anything is enqueued, and
 * NULL handles are refused. (test-backend-api.c does the same on the real CPU backend.)
 */
#include <criterion/criterion.h>

#include "test-errlog.h"

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the mocks saw ------------------------------------------------------------------- */

static struct {
    int free, set_async, get_async, set2d_async, get2d_async, cpy_async, sync;
    int plan_create, plan_free, plan_compute, compute, record, wait, optimize;
    int get_status, clear_status, hold, release, pending;
    int ev_new, ev_free, ev_sync, dev_supports_op, dev_supports_buft, dev_offload, dev_init, from_host_ptr;
    int order[64], n_order; /* 's' sync, 'b' blocking write seen through the buffer */
    ggml_backend_t cpy_src, cpy_dst;
    bool cpy_ok;
    enum ggml_status status;
} M;


static void note(int c) {
    if (M.n_order < 64) {
        M.order[M.n_order++] = c;
    }
}

/* ---- a host buffer type whose writes are noted, so fallbacks can be ordered ----------------- */

static void hb_free(ggml_backend_buffer_t b) { free(b->context); }
static void * hb_base(ggml_backend_buffer_t b) { return b->context; }
static void hb_set(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b;
    note('b');
    memcpy((char *) t->data + off, d, n);
}
static void hb_get(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b;
    note('g');
    memcpy(d, (const char *) t->data + off, n);
}
static void hb_clear(ggml_backend_buffer_t b, uint8_t v) { memset(b->context, v, b->size); }
static const char * hb_name(ggml_backend_buffer_type_t buft) { return buft->context; }
static size_t hb_align(ggml_backend_buffer_type_t buft) { (void) buft; return 8; }
static bool hb_is_host(ggml_backend_buffer_type_t buft) { (void) buft; return true; }
static ggml_backend_buffer_t hb_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct ggml_backend_buffer_i i = { .free_buffer = hb_free, .get_base = hb_base, .set_tensor = hb_set,
                                       .get_tensor = hb_get, .clear = hb_clear };
    return ggml_backend_buffer_init(buft, i, calloc(1, size), size);
}

static struct ggml_backend_buffer_type host_buft = {
    .iface = { .get_name = hb_name, .alloc_buffer = hb_alloc, .get_alignment = hb_align, .is_host = hb_is_host },
    .context = "MOCKHOST",
};

/* a second type the mock device refuses */
static struct ggml_backend_buffer_type foreign_buft = {
    .iface = { .get_name = hb_name, .alloc_buffer = hb_alloc, .get_alignment = hb_align, .is_host = hb_is_host },
    .context = "FOREIGN",
};

/* ---- mock devices and registry ------------------------------------------------------------- */

static struct ggml_backend_reg mock_reg;
static struct ggml_backend_device dev_a, dev_b;

static const char * dev_name(ggml_backend_dev_t d) { return d->context; }
static const char * dev_desc(ggml_backend_dev_t d) { (void) d; return "a mock device"; }
static void dev_memory(ggml_backend_dev_t d, size_t * f, size_t * t) { (void) d; *f = 100; *t = 200; }
static enum ggml_backend_dev_type dev_type(ggml_backend_dev_t d) { (void) d; return GGML_BACKEND_DEVICE_TYPE_GPU; }
static void dev_props(ggml_backend_dev_t d, struct ggml_backend_dev_props * p) {
    p->name = d->context;
    p->type = GGML_BACKEND_DEVICE_TYPE_GPU;
    p->caps.events = true;
}
static ggml_backend_t mock_backend_new(ggml_backend_dev_t dev);
static ggml_backend_t dev_init(ggml_backend_dev_t d, const char * params) {
    M.dev_init++;
    return params && strcmp(params, "fail") == 0 ? NULL : mock_backend_new(d);
}
static ggml_backend_buffer_type_t dev_buft(ggml_backend_dev_t d) { (void) d; return &host_buft; }
static bool dev_supports_op(ggml_backend_dev_t d, const struct ggml_tensor * op) {
    (void) d;
    M.dev_supports_op++;
    return op->op != GGML_OP_MUL_MAT;
}
static bool dev_supports_buft(ggml_backend_dev_t d, ggml_backend_buffer_type_t buft) {
    (void) d;
    M.dev_supports_buft++;
    return buft == &host_buft;
}
static bool dev_offload(ggml_backend_dev_t d, const struct ggml_tensor * op) {
    (void) d;
    (void) op;
    M.dev_offload++;
    return true;
}
static ggml_backend_event_t ev_new(ggml_backend_dev_t d) {
    M.ev_new++;
    ggml_backend_event_t e = calloc(1, sizeof *e);
    e->device = d;
    return e;
}
static void ev_free(ggml_backend_dev_t d, ggml_backend_event_t e) {
    (void) d;
    M.ev_free++;
    free(e);
}
static void ev_sync(ggml_backend_dev_t d, ggml_backend_event_t e) {
    (void) d;
    (void) e;
    M.ev_sync++;
    note('e');
}

static const struct ggml_backend_device_i full_dev_i = {
    .get_name = dev_name, .get_description = dev_desc, .get_memory = dev_memory, .get_type = dev_type,
    .get_props = dev_props, .init_backend = dev_init, .get_buffer_type = dev_buft,
    .supports_op = dev_supports_op, .supports_buft = dev_supports_buft, .offload_op = dev_offload,
    .event_new = ev_new, .event_free = ev_free, .event_synchronize = ev_sync,
};

static const char * reg_name(ggml_backend_reg_t r) { (void) r; return "MOCKREG"; }
static size_t reg_count(ggml_backend_reg_t r) { (void) r; return 2; }
static ggml_backend_dev_t reg_dev(ggml_backend_reg_t r, size_t i) { (void) r; return i == 0 ? &dev_a : &dev_b; }
static void * reg_proc(ggml_backend_reg_t r, const char * name) {
    (void) r;
    return strcmp(name, "mock_fn") == 0 ? (void *) &M : NULL;
}

/* ---- the mock backend ---------------------------------------------------------------------- */

static const char * be_name(ggml_backend_t b) { (void) b; return "MOCKBE"; }
static void be_free(ggml_backend_t b) { M.free++; free(b); }
static void be_set_async(ggml_backend_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b; (void) t; (void) d; (void) off; (void) n;
    M.set_async++;
}
static void be_get_async(ggml_backend_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b; (void) t; (void) d; (void) off; (void) n;
    M.get_async++;
}
static void be_set2d_async(ggml_backend_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n,
                           size_t nc, size_t st, size_t sd) {
    (void) b; (void) t; (void) d; (void) off; (void) n; (void) nc; (void) st; (void) sd;
    M.set2d_async++;
}
static void be_get2d_async(ggml_backend_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n,
                           size_t nc, size_t st, size_t sd) {
    (void) b; (void) t; (void) d; (void) off; (void) n; (void) nc; (void) st; (void) sd;
    M.get2d_async++;
}
static bool be_cpy_async(ggml_backend_t src_b, ggml_backend_t dst_b, const struct ggml_tensor * s, struct ggml_tensor * d) {
    (void) s; (void) d;
    M.cpy_async++;
    M.cpy_src = src_b;
    M.cpy_dst = dst_b;
    return M.cpy_ok;
}
static void be_sync(ggml_backend_t b) { (void) b; M.sync++; note('s'); }
static int g_plan_token;
static ggml_backend_graph_plan_t be_plan_create(ggml_backend_t b, const struct ggml_cgraph * g) {
    (void) b; (void) g;
    M.plan_create++;
    return &g_plan_token;
}
static void be_plan_free(ggml_backend_t b, ggml_backend_graph_plan_t p) { (void) b; (void) p; M.plan_free++; }
static enum ggml_status be_plan_compute(ggml_backend_t b, ggml_backend_graph_plan_t p) {
    (void) b;
    M.plan_compute++;
    return p == &g_plan_token ? GGML_STATUS_SUCCESS : GGML_STATUS_FAILED;
}
static enum ggml_status be_compute(ggml_backend_t b, struct ggml_cgraph * g) {
    (void) b; (void) g;
    M.compute++;
    note('c');
    return GGML_STATUS_SUCCESS;
}
static void be_record(ggml_backend_t b, ggml_backend_event_t e) { (void) b; (void) e; M.record++; }
static void be_wait(ggml_backend_t b, ggml_backend_event_t e) { (void) b; (void) e; M.wait++; }
static enum ggml_status be_get_status(ggml_backend_t b) { (void) b; M.get_status++; return M.status; }
static void be_clear_status(ggml_backend_t b) { (void) b; M.clear_status++; M.status = GGML_STATUS_SUCCESS; }
static bool be_hold(ggml_backend_t b, bool hold) {
    (void) b;
    if (hold) {
        M.hold++;
    } else {
        M.release++;
    }
    return true;
}
static size_t be_pending(ggml_backend_t b) { (void) b; M.pending++; return 7; }

static const struct ggml_backend_i full_be_i = {
    .get_name = be_name, .free = be_free, .set_tensor_async = be_set_async, .get_tensor_async = be_get_async,
    .set_tensor_2d_async = be_set2d_async, .get_tensor_2d_async = be_get2d_async, .cpy_tensor_async = be_cpy_async,
    .synchronize = be_sync, .graph_plan_create = be_plan_create, .graph_plan_free = be_plan_free,
    .graph_plan_compute = be_plan_compute, .graph_compute = be_compute, .event_record = be_record,
    .event_wait = be_wait, .get_status = be_get_status, .clear_status = be_clear_status, .queue_hold = be_hold,
    .queue_pending = be_pending,
};

/* only what upstream requires: name, free, graph_compute */
static const struct ggml_backend_i bare_be_i = { .get_name = be_name, .free = be_free, .graph_compute = be_compute };

static ggml_guid g_guid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static ggml_backend_t mock_backend_with(ggml_backend_dev_t dev, struct ggml_backend_i iface) {
    ggml_backend_t b = calloc(1, sizeof *b);
    b->guid   = &g_guid;
    b->iface  = iface;
    b->device = dev;
    return b;
}

static ggml_backend_t mock_backend_new(ggml_backend_dev_t dev) {
    return mock_backend_with(dev, full_be_i);
}

/* ---- fixture ------------------------------------------------------------------------------- */

static struct ggml_context * ctx;
static ggml_backend_buffer_t g_buf;
static ggml_backend_t be, bare;
static struct ggml_tensor * t; /* 4x4 F32 in g_buf, filled with 0xA5 */

static void setup(void) {
    memset(&M, 0, sizeof M);
    mock_reg = (struct ggml_backend_reg) {
        .api_version = GGML_BACKEND_API_VERSION,
        .iface = { .get_name = reg_name, .get_device_count = reg_count, .get_device = reg_dev, .get_proc_address = reg_proc },
    };
    dev_a = (struct ggml_backend_device) { .iface = full_dev_i, .reg = &mock_reg, .context = "DEVA" };
    dev_b = (struct ggml_backend_device) { .iface = full_dev_i, .reg = &mock_reg, .context = "DEVB" };
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    g_buf = ggml_backend_buft_alloc_buffer(&host_buft, 64);
    ggml_backend_buffer_clear(g_buf, 0xA5);
    ggml_backend_tensor_alloc(g_buf, t, ggml_backend_buffer_get_base(g_buf));
    be   = mock_backend_new(&dev_a);
    bare = mock_backend_with(&dev_a, bare_be_i);
    ggmlx_clear_last_error();
    g_n_errors = 0;
    ggml_log_set(count_log, NULL);
}

static void teardown(void) {
    ggml_backend_free(be);
    ggml_backend_free(bare);
    ggml_backend_buffer_free(g_buf);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

static bool all_bytes(const void * p, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; i++) {
        if (((const uint8_t *) p)[i] != v) {
            return false;
        }
    }
    return true;
}

/* ==== backend basics ========================================================================= */

TestSuite(backend, .init = setup, .fini = teardown);

Test(backend, guid_and_name_come_from_the_backend) {
    cr_assert_eq(ggml_backend_guid(be), &g_guid);
    cr_assert_str_eq(ggml_backend_name(be), "MOCKBE");
}

Test(backend, name_of_null_is_NULL_as_upstream) {
    cr_assert_str_eq(ggml_backend_name(NULL), "NULL");
}

Test(backend, free_calls_the_backend_and_null_is_a_no_op) {
    ggml_backend_t b = mock_backend_new(&dev_a);
    ggml_backend_free(b);
    cr_assert_eq(M.free, 1);
    ggml_backend_free(NULL);
    cr_assert_eq(M.free, 1);
    cr_assert_eq(g_n_errors, 0);
}

Test(backend, default_buffer_type_is_the_devices) {
    cr_assert_eq(ggml_backend_get_default_buffer_type(be), &host_buft);
    cr_assert_eq(ggml_backend_get_alignment(be), 8);
    cr_assert_eq(ggml_backend_get_max_size(be), SIZE_MAX);
    ggml_backend_buffer_t b = ggml_backend_alloc_buffer(be, 40);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_type(b), &host_buft);
    cr_assert_eq(ggml_backend_buffer_get_size(b), 40);
    ggml_backend_buffer_free(b);
}

Test(backend, without_a_device_there_is_no_default_buffer_type) {
    ggml_backend_t b = mock_backend_with(NULL, full_be_i);
    cr_assert_null(ggml_backend_get_default_buffer_type(b));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_alloc_buffer(b, 16));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_get_alignment(b), 0);
    ASSERT_ERROR();
    ggml_backend_free(b);
}

Test(backend, get_device) {
    cr_assert_eq(ggml_backend_get_device(be), &dev_a);
}

Test(backend, synchronize_calls_the_backend) {
    ggml_backend_synchronize(be);
    cr_assert_eq(M.sync, 1);
}

Test(backend, synchronize_of_a_synchronous_backend_does_nothing) {
    ggml_backend_synchronize(bare);
    cr_assert_eq(g_n_errors, 0);
}

/* ==== queued copies and their fallbacks ====================================================== */

TestSuite(async_io, .init = setup, .fini = teardown);

Test(async_io, set_and_get_reach_the_queue) {
    float v[4] = { 0 };
    ggml_backend_tensor_set_async(be, t, v, 0, sizeof v);
    ggml_backend_tensor_get_async(be, t, v, 16, sizeof v);
    cr_assert_eq(M.set_async, 1);
    cr_assert_eq(M.get_async, 1);
    cr_assert_eq(M.n_order, 0, "nothing blocking, no synchronize");
}

Test(async_io, set_without_a_queue_synchronizes_then_writes) {
    const float v[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set_async(bare, t, v, 0, sizeof v);
    cr_assert_arr_eq(t->data, v, sizeof v, "written before the call returns");
    ggml_backend_t b = mock_backend_with(&dev_a, full_be_i);
    b->iface.set_tensor_async = NULL;
    ggml_backend_tensor_set_async(b, t, v, 16, sizeof v);
    cr_assert_eq(M.n_order, 3);
    cr_assert_eq(M.order[1], 's', "synchronized first");
    cr_assert_eq(M.order[2], 'b', "then written through the buffer");
    ggml_backend_free(b);
}

Test(async_io, get_without_a_queue_synchronizes_then_reads) {
    ggml_backend_t b = mock_backend_with(&dev_a, full_be_i);
    b->iface.get_tensor_async = NULL;
    float out[2];
    ggml_backend_tensor_get_async(b, t, out, 0, sizeof out);
    cr_assert_eq(M.n_order, 2);
    cr_assert_eq(M.order[0], 's');
    cr_assert_eq(M.order[1], 'g');
    cr_assert(all_bytes(out, sizeof out, 0xA5));
    ggml_backend_free(b);
}

Test(async_io, out_of_bounds_is_refused_before_enqueueing) {
    float v[8] = { 0 };
    ggml_backend_tensor_set_async(be, t, v, 60, 8);
    ASSERT_ERROR();
    ggml_backend_tensor_get_async(be, t, v, 0, 65);
    ASSERT_ERROR();
    ggml_backend_tensor_set_2d_async(be, t, v, 0, 16, 5, 16, 16);
    ASSERT_ERROR();
    ggml_backend_tensor_get_2d_async(be, t, v, 8, 16, 4, 16, 0);
    ASSERT_ERROR();
    cr_assert_eq(M.set_async + M.get_async + M.set2d_async + M.get2d_async, 0, "nothing enqueued");
}

Test(async_io, out_of_bounds_without_a_queue_neither_syncs_nor_writes) {
    float v[8] = { 0 };
    ggml_backend_tensor_set_async(bare, t, v, 60, 8);
    ASSERT_ERROR();
    cr_assert_eq(M.n_order, 0);
    cr_assert(all_bytes(t->data, 64, 0xA5));
}

Test(async_io, unallocated_and_null_are_refused) {
    struct ggml_tensor * u = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    float v[4] = { 0 };
    ggml_backend_tensor_set_async(be, u, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_get_async(be, NULL, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_set_async(be, t, NULL, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_set_async(NULL, t, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_get_async(NULL, t, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_set_2d_async(NULL, t, v, 0, 4, 1, 0, 0);
    ASSERT_ERROR();
    ggml_backend_tensor_get_2d_async(NULL, t, v, 0, 4, 1, 0, 0);
    ASSERT_ERROR();
    cr_assert_eq(M.set_async + M.get_async + M.set2d_async + M.get2d_async, 0);
}

Test(async_io, size_zero_enqueues_nothing) {
    ggml_backend_tensor_set_async(be, t, NULL, 0, 0);
    ggml_backend_tensor_get_2d_async(be, t, NULL, 0, 16, 0, 16, 16);
    ASSERT_NO_ERROR();
    cr_assert_eq(M.set_async + M.get2d_async + M.get_async, 0);
}

Test(async_io, a_tensor_in_a_buffer_the_backend_cannot_use_is_refused) {
    ggml_backend_buffer_t fb = ggml_backend_buft_alloc_buffer(&foreign_buft, 64);
    struct ggml_tensor * f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_backend_tensor_alloc(fb, f, ggml_backend_buffer_get_base(fb));
    float v[4] = { 0 };
    ggml_backend_tensor_set_async(be, f, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_get_async(be, f, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_set_2d_async(be, f, v, 0, 4, 2, 4, 4);
    ASSERT_ERROR();
    cr_assert_eq(M.set_async + M.get_async + M.set2d_async, 0);
    ggml_backend_buffer_free(fb);
}

Test(async_io, set_2d_uses_the_2d_entry) {
    float v[16] = { 0 };
    ggml_backend_tensor_set_2d_async(be, t, v, 0, 8, 4, 16, 8);
    ggml_backend_tensor_get_2d_async(be, t, v, 0, 8, 4, 16, 8);
    cr_assert_eq(M.set2d_async, 1);
    cr_assert_eq(M.get2d_async, 1);
    cr_assert_eq(M.set_async + M.get_async, 0);
}

Test(async_io, set_2d_without_the_2d_entry_queues_rows) {
    ggml_backend_t b = mock_backend_with(&dev_a, full_be_i);
    b->iface.set_tensor_2d_async = NULL;
    b->iface.get_tensor_2d_async = NULL;
    float v[16] = { 0 };
    ggml_backend_tensor_set_2d_async(b, t, v, 0, 8, 4, 16, 8);
    ggml_backend_tensor_get_2d_async(b, t, v, 0, 8, 3, 16, 8);
    cr_assert_eq(M.set_async, 4);
    cr_assert_eq(M.get_async, 3);
    cr_assert_eq(M.sync, 0, "still queued: no synchronize");
    ggml_backend_free(b);
}

Test(async_io, set_2d_without_any_queue_synchronizes_once_then_writes_rows) {
    const float v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    ggml_backend_t b = mock_backend_with(&dev_a, bare_be_i);
    b->iface.synchronize = be_sync;
    ggml_backend_tensor_set_2d_async(b, t, v, 4, 8, 4, 16, 8);
    cr_assert_eq(M.sync, 1);
    cr_assert_eq(M.order[0], 's');
    const float * d = t->data;
    cr_assert_eq(d[1], 1.0f);
    cr_assert_eq(d[2], 2.0f);
    cr_assert_eq(d[13], 7.0f);
    cr_assert(all_bytes(&d[3], 8, 0xA5), "between rows unchanged");
    ggml_backend_free(b);
}

/* ==== graphs ================================================================================= */

TestSuite(graphs, .init = setup, .fini = teardown);

static struct ggml_cgraph * small_graph(void) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_relu(ctx, t));
    return g;
}

Test(graphs, compute_async_reaches_the_backend_and_returns) {
    cr_assert_eq(ggml_backend_graph_compute_async(be, small_graph()), GGML_STATUS_SUCCESS);
    cr_assert_eq(M.compute, 1);
    cr_assert_eq(M.sync, 0, "no synchronize");
}

Test(graphs, compute_is_compute_async_then_synchronize) {
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_SUCCESS);
    cr_assert_eq(M.n_order, 2);
    cr_assert_eq(M.order[0], 'c');
    cr_assert_eq(M.order[1], 's');
    cr_assert_eq(M.get_status, 1, "then the queue's status");
}

Test(graphs, compute_returns_the_sticky_queue_status) {
    M.status = GGML_STATUS_FAILED;
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_FAILED, "stays until cleared");
    ASSERT_ERROR();
    ggmlx_backend_clear_status(be);
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_SUCCESS);
    ASSERT_NO_ERROR();
}

Test(graphs, compute_returns_an_abort_once) {
    M.status = GGML_STATUS_ABORTED;
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_ABORTED);
    ASSERT_NO_ERROR();
    cr_assert_eq(ggml_backend_graph_compute(be, small_graph()), GGML_STATUS_SUCCESS, "cleared once returned");
}

Test(graphs, compute_on_a_synchronous_backend) {
    cr_assert_eq(ggml_backend_graph_compute(bare, small_graph()), GGML_STATUS_SUCCESS);
    cr_assert_eq(M.compute, 1);
}

Test(graphs, a_failed_graph_is_refused_before_enqueueing) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, NULL);
    ggmlx_clear_last_error();
    g_n_errors = 0;
    cr_assert(ggmlx_graph_is_failed(g));
    cr_assert_eq(ggml_backend_graph_compute_async(be, g), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute(be, g), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(M.compute, 0);
}

Test(graphs, null_backend_or_graph_is_refused) {
    cr_assert_eq(ggml_backend_graph_compute(NULL, small_graph()), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute(be, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute_async(NULL, small_graph()), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_compute_async(be, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(M.compute, 0);
}

Test(graphs, plans_reach_the_backend) {
    ggml_backend_graph_plan_t p = ggml_backend_graph_plan_create(be, small_graph());
    cr_assert_eq(p, &g_plan_token);
    cr_assert_eq(ggml_backend_graph_plan_compute(be, p), GGML_STATUS_SUCCESS);
    ggml_backend_graph_plan_free(be, p);
    cr_assert_eq(M.plan_create + M.plan_compute + M.plan_free, 3);
}

Test(graphs, plans_on_a_backend_without_them_are_refused) {
    cr_assert_null(ggml_backend_graph_plan_create(bare, small_graph()));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_plan_compute(bare, &g_plan_token), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(bare, &g_plan_token);
    ASSERT_ERROR();
}

Test(graphs, null_plans_are_refused) {
    cr_assert_eq(ggml_backend_graph_plan_compute(be, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(be, NULL);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_graph_plan_create(be, NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_graph_plan_create(NULL, small_graph()));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_graph_plan_compute(NULL, &g_plan_token), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_graph_plan_free(NULL, &g_plan_token);
    ASSERT_ERROR();
    cr_assert_eq(M.plan_create + M.plan_compute + M.plan_free, 0);
}

/* ==== capabilities =========================================================================== */

TestSuite(caps, .init = setup, .fini = teardown);

Test(caps, supports_and_offload_ask_the_device) {
    struct ggml_tensor * r = ggml_relu(ctx, t);
    struct ggml_tensor * mm = ggml_mul_mat(ctx, t, t);
    cr_assert(ggml_backend_supports_op(be, r));
    cr_assert_not(ggml_backend_supports_op(be, mm));
    cr_assert(ggml_backend_supports_buft(be, &host_buft));
    cr_assert_not(ggml_backend_supports_buft(be, &foreign_buft));
    cr_assert(ggml_backend_offload_op(be, mm));
    cr_assert_eq(M.dev_supports_op, 2);
    cr_assert_eq(M.dev_supports_buft, 2);
    cr_assert_eq(M.dev_offload, 1);
}

Test(caps, offload_without_the_entry_is_false) {
    dev_a.iface.offload_op = NULL;
    cr_assert_not(ggml_backend_offload_op(be, t));
    cr_assert_not(ggml_backend_dev_offload_op(&dev_a, t));
    ASSERT_NO_ERROR();
}

Test(caps, null_arguments_are_false_with_an_error) {
    cr_assert_not(ggml_backend_supports_op(NULL, t));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_supports_op(be, NULL));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_supports_buft(NULL, &host_buft));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_supports_buft(be, NULL));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_offload_op(NULL, t));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_offload_op(be, NULL));
    ASSERT_ERROR();
}

/* ==== copies between backends ================================================================ */

TestSuite(copy_async, .init = setup, .fini = teardown);

static struct ggml_tensor * second_tensor(ggml_backend_buffer_t * out) {
    struct ggml_tensor * u = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    *out = ggml_backend_buft_alloc_buffer(&host_buft, 64);
    ggml_backend_tensor_alloc(*out, u, ggml_backend_buffer_get_base(*out));
    return u;
}

Test(copy_async, asks_the_destination_backend) {
    ggml_backend_buffer_t ub;
    struct ggml_tensor * u = second_tensor(&ub);
    ggml_backend_t src_b = mock_backend_with(&dev_b, bare_be_i);
    M.cpy_ok = true;
    ggml_backend_tensor_copy_async(src_b, be, t, u);
    cr_assert_eq(M.cpy_async, 1);
    cr_assert_eq(M.cpy_src, src_b);
    cr_assert_eq(M.cpy_dst, be);
    cr_assert_eq(M.sync, 0, "queued: no synchronize");
    ggml_backend_free(src_b);
    ggml_backend_buffer_free(ub);
}

Test(copy_async, falls_back_to_synchronize_both_and_copy) {
    ggml_backend_buffer_t ub;
    struct ggml_tensor * u = second_tensor(&ub);
    ggml_backend_t src_b = mock_backend_new(&dev_b);
    M.cpy_ok = false; /* the destination declines */
    ggml_backend_tensor_copy_async(src_b, be, t, u);
    cr_assert_eq(M.cpy_async, 1);
    cr_assert_eq(M.sync, 2, "both backends drained");
    cr_assert_eq(M.order[0], 's');
    cr_assert_eq(M.order[1], 's');
    cr_assert_eq(M.order[2], 'b', "then the copy");
    cr_assert_arr_eq(t->data, u->data, 64);
    ggml_backend_free(src_b);
    ggml_backend_buffer_free(ub);
}

Test(copy_async, without_the_entry_copies_after_synchronizing) {
    ggml_backend_buffer_t ub;
    struct ggml_tensor * u = second_tensor(&ub);
    ggml_backend_tensor_copy_async(be, bare, t, u);
    cr_assert_eq(M.cpy_async, 0);
    cr_assert_eq(M.sync, 1, "the source (the destination has nothing to drain)");
    cr_assert_arr_eq(t->data, u->data, 64);
    ggml_backend_buffer_free(ub);
}

Test(copy_async, different_layouts_and_nulls_are_refused) {
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 8);
    ggml_backend_buffer_t wb = ggml_backend_buft_alloc_buffer(&host_buft, 64);
    ggml_backend_tensor_alloc(wb, w, ggml_backend_buffer_get_base(wb));
    ggml_backend_buffer_clear(wb, 0x11);
    ggml_backend_tensor_copy_async(be, be, t, w);
    ASSERT_ERROR();
    ggml_backend_tensor_copy_async(NULL, be, t, t);
    ASSERT_ERROR();
    ggml_backend_tensor_copy_async(be, NULL, t, t);
    ASSERT_ERROR();
    ggml_backend_tensor_copy_async(be, be, NULL, t);
    ASSERT_ERROR();
    ggml_backend_tensor_copy_async(be, be, t, NULL);
    ASSERT_ERROR();
    cr_assert_eq(M.cpy_async + M.sync, 0);
    cr_assert(all_bytes(w->data, 64, 0x11));
    ggml_backend_buffer_free(wb);
}

Test(copy_async, an_unallocated_destination_is_refused) {
    struct ggml_tensor * u = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    ggml_backend_tensor_copy_async(be, be, t, u);
    ASSERT_ERROR();
    cr_assert_eq(M.cpy_async + M.sync, 0);
}

/* ==== ggmlx queue extensions ================================================================= */

TestSuite(queue_ext, .init = setup, .fini = teardown);

Test(queue_ext, reach_the_backend) {
    M.status = GGML_STATUS_FAILED;
    cr_assert_eq(ggmlx_backend_get_status(be), GGML_STATUS_FAILED);
    ggmlx_backend_clear_status(be);
    cr_assert_eq(ggmlx_backend_get_status(be), GGML_STATUS_SUCCESS);
    cr_assert(ggmlx_backend_queue_hold(be));
    cr_assert(ggmlx_backend_queue_release(be));
    cr_assert_eq(ggmlx_backend_queue_pending(be), 7);
    cr_assert_eq(M.hold, 1);
    cr_assert_eq(M.release, 1);
    cr_assert_eq(M.clear_status, 1);
}

Test(queue_ext, defaults_without_a_host_queue) {
    cr_assert_eq(ggmlx_backend_get_status(bare), GGML_STATUS_SUCCESS);
    ggmlx_backend_clear_status(bare);
    cr_assert_not(ggmlx_backend_queue_hold(bare));
    cr_assert_not(ggmlx_backend_queue_release(bare));
    cr_assert_eq(ggmlx_backend_queue_pending(bare), 0);
    cr_assert_eq(g_n_errors, 0);
}

Test(queue_ext, null_backend_is_refused) {
    cr_assert_eq(ggmlx_backend_get_status(NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggmlx_backend_clear_status(NULL);
    ASSERT_ERROR();
    cr_assert_not(ggmlx_backend_queue_hold(NULL));
    ASSERT_ERROR();
    cr_assert_not(ggmlx_backend_queue_release(NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggmlx_backend_queue_pending(NULL), 0);
    ASSERT_ERROR();
}

/* ==== events ================================================================================= */

TestSuite(events, .init = setup, .fini = teardown);

Test(events, made_by_the_device_and_freed_by_it) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    cr_assert_not_null(e);
    cr_assert_eq(e->device, &dev_a);
    ggml_backend_event_free(e);
    cr_assert_eq(M.ev_new, 1);
    cr_assert_eq(M.ev_free, 1);
}

Test(events, a_device_without_events_gives_null_without_error) {
    dev_a.iface.event_new = NULL;
    cr_assert_null(ggml_backend_event_new(&dev_a));
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
}

Test(events, record_wait_and_synchronize_reach_their_owners) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    ggml_backend_t other = mock_backend_new(&dev_b);
    ggml_backend_event_record(e, be);
    ggml_backend_event_wait(other, e);
    ggml_backend_event_synchronize(e);
    cr_assert_eq(M.record, 1);
    cr_assert_eq(M.wait, 1, "any backend may wait");
    cr_assert_eq(M.ev_sync, 1);
    ggml_backend_free(other);
    ggml_backend_event_free(e);
}

Test(events, recording_on_another_devices_backend_is_refused) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    ggml_backend_t other = mock_backend_new(&dev_b);
    ggml_backend_event_record(e, other);
    ASSERT_ERROR();
    cr_assert_eq(M.record, 0, "nothing enqueued");
    ggml_backend_free(other);
    ggml_backend_event_free(e);
}

Test(events, recording_on_a_backend_without_events_is_refused) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    ggml_backend_event_record(e, bare);
    ASSERT_ERROR();
    ggml_backend_event_free(e);
}

Test(events, waiting_without_a_queued_wait_waits_on_the_host) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    ggml_backend_event_wait(bare, e);
    cr_assert_eq(M.ev_sync, 1, "a stronger ordering, never none");
    ggml_backend_event_free(e);
}

Test(events, null_handles) {
    ggml_backend_event_t e = ggml_backend_event_new(&dev_a);
    cr_assert_null(ggml_backend_event_new(NULL));
    ASSERT_ERROR();
    ggml_backend_event_record(NULL, be);
    ASSERT_ERROR();
    ggml_backend_event_record(e, NULL);
    ASSERT_ERROR();
    ggml_backend_event_wait(NULL, e);
    ASSERT_ERROR();
    ggml_backend_event_wait(be, NULL);
    ASSERT_ERROR();
    ggml_backend_event_synchronize(NULL);
    ASSERT_ERROR();
    ggml_backend_event_free(NULL);
    cr_assert_eq(g_n_errors, 0, "freeing NULL is allowed");
    cr_assert_eq(M.record + M.wait + M.ev_sync, 0);
    ggml_backend_event_free(e);
}

/* ==== devices ================================================================================ */

TestSuite(devices, .init = setup, .fini = teardown);

Test(devices, describe_themselves) {
    cr_assert_str_eq(ggml_backend_dev_name(&dev_a), "DEVA");
    cr_assert_str_eq(ggml_backend_dev_description(&dev_a), "a mock device");
    cr_assert_eq(ggml_backend_dev_type(&dev_a), GGML_BACKEND_DEVICE_TYPE_GPU);
    cr_assert_eq(ggml_backend_dev_backend_reg(&dev_a), &mock_reg);
    size_t f = 0, tot = 0;
    ggml_backend_dev_memory(&dev_a, &f, &tot);
    cr_assert_eq(f, 100);
    cr_assert_eq(tot, 200);
}

Test(devices, props_are_zeroed_before_the_device_fills_them) {
    struct ggml_backend_dev_props p;
    memset(&p, 0x7F, sizeof p);
    ggml_backend_dev_get_props(&dev_a, &p);
    cr_assert_str_eq(p.name, "DEVA");
    cr_assert_null(p.description, "left unset by the device: zero");
    cr_assert_null(p.device_id);
    cr_assert_eq(p.memory_total, 0);
    cr_assert(p.caps.events);
    cr_assert_not(p.caps.async);
}

Test(devices, memory_takes_either_pointer_alone) {
    size_t f = 1;
    ggml_backend_dev_memory(&dev_a, &f, NULL);
    cr_assert_eq(f, 100);
    size_t tot = 1;
    ggml_backend_dev_memory(&dev_a, NULL, &tot);
    cr_assert_eq(tot, 200);
}

Test(devices, init_makes_a_backend_of_the_device) {
    ggml_backend_t b = ggml_backend_dev_init(&dev_b, NULL);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_get_device(b), &dev_b);
    ggml_backend_free(b);
}

Test(devices, a_failed_init_leaves_a_message) {
    cr_assert_null(ggml_backend_dev_init(&dev_a, "fail"));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "DEVA") != NULL, "%s", ggmlx_last_error());
}

Test(devices, buffer_types) {
    cr_assert_eq(ggml_backend_dev_buffer_type(&dev_a), &host_buft);
    cr_assert_null(ggml_backend_dev_host_buffer_type(&dev_a), "none: the entry is NULL");
    ASSERT_NO_ERROR();
}

Test(devices, buffer_from_host_ptr_without_support_is_refused) {
    char mem[64];
    cr_assert_null(ggml_backend_dev_buffer_from_host_ptr(&dev_a, mem, sizeof mem, sizeof mem));
    ASSERT_ERROR();
}

static ggml_backend_buffer_t wrap_ptr(ggml_backend_dev_t d, void * ptr, size_t size, size_t max) {
    (void) d;
    (void) max;
    M.from_host_ptr++;
    return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

Test(devices, buffer_from_host_ptr_reaches_the_device) {
    dev_a.iface.buffer_from_host_ptr = wrap_ptr;
    void * mem = aligned_alloc(64, 64);
    ggml_backend_buffer_t b = ggml_backend_dev_buffer_from_host_ptr(&dev_a, mem, 64, 64);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_base(b), mem);
    cr_assert_eq(M.from_host_ptr, 1);
    cr_assert_null(ggml_backend_dev_buffer_from_host_ptr(&dev_a, NULL, 64, 64));
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
    free(mem);
}

Test(devices, null_device_everywhere) {
    struct ggml_backend_dev_props p;
    memset(&p, 0x7F, sizeof p);
    size_t f = 5, tot = 5;
    cr_assert_null(ggml_backend_dev_name(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_description(NULL));
    ASSERT_ERROR();
    ggml_backend_dev_memory(NULL, &f, &tot);
    ASSERT_ERROR();
    cr_assert_eq(f + tot, 0);
    ggml_backend_dev_type(NULL);
    ASSERT_ERROR();
    ggml_backend_dev_get_props(NULL, &p);
    ASSERT_ERROR();
    cr_assert_null(p.name, "zeroed");
    ggml_backend_dev_get_props(&dev_a, NULL);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_backend_reg(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_init(NULL, NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_buffer_type(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_host_buffer_type(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_dev_buffer_from_host_ptr(NULL, &p, 8, 8));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_dev_supports_op(NULL, t));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_dev_supports_buft(NULL, &host_buft));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_dev_offload_op(NULL, t));
    ASSERT_ERROR();
}

/* ==== registries ============================================================================= */

TestSuite(regs, .init = setup, .fini = teardown);

Test(regs, name_and_devices) {
    cr_assert_str_eq(ggml_backend_reg_name(&mock_reg), "MOCKREG");
    cr_assert_eq(ggml_backend_reg_dev_count(&mock_reg), 2);
    cr_assert_eq(ggml_backend_reg_dev_get(&mock_reg, 0), &dev_a);
    cr_assert_eq(ggml_backend_reg_dev_get(&mock_reg, 1), &dev_b);
}

Test(regs, device_index_out_of_range_is_refused) {
    cr_assert_null(ggml_backend_reg_dev_get(&mock_reg, 2));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_reg_dev_get(&mock_reg, SIZE_MAX));
    ASSERT_ERROR();
}

Test(regs, proc_address) {
    cr_assert_eq(ggml_backend_reg_get_proc_address(&mock_reg, "mock_fn"), (void *) &M);
    cr_assert_null(ggml_backend_reg_get_proc_address(&mock_reg, "no_such_fn"));
    ASSERT_NO_ERROR();
}

Test(regs, proc_address_without_the_entry_is_null_without_error) {
    mock_reg.iface.get_proc_address = NULL;
    cr_assert_null(ggml_backend_reg_get_proc_address(&mock_reg, "mock_fn"));
    ASSERT_NO_ERROR();
}

Test(regs, null_handles) {
    cr_assert_null(ggml_backend_reg_name(NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_reg_dev_count(NULL), 0);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_reg_dev_get(NULL, 0));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_reg_get_proc_address(NULL, "x"));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_reg_get_proc_address(&mock_reg, NULL));
    ASSERT_ERROR();
}

/* ==== NULL backends everywhere =============================================================== */

TestSuite(null_backend, .init = setup, .fini = teardown);

Test(null_backend, every_call_is_refused) {
    float v[4] = { 0 };
    cr_assert_null(ggml_backend_guid(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_get_default_buffer_type(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_alloc_buffer(NULL, 16));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_get_alignment(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_get_max_size(NULL), 0);
    ASSERT_ERROR();
    ggml_backend_synchronize(NULL);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_get_device(NULL));
    ASSERT_ERROR();
    ggml_backend_tensor_set_async(NULL, t, v, 0, sizeof v);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 64, 0xA5));
}
