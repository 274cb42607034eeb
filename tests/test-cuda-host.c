/*
 * test-cuda-host.c -- the CUDA backend's host side: registry, devices, buffers, streams, events
 * and copies. Built only when libggml-cuda is (tests/CMakeLists.txt).
 *
 * Without a GPU (CI) the suite checks that CUDA stays out of the way: zero devices, clean
 * refusals with messages, the rest of the registry intact. The GPU suite is skipped there,
 * never passed; scripts/gpu-check.sh runs it where a GPU is.
 */
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-cuda.h"
#include "ggml.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

static bool have_gpu(void) {
    return ggml_backend_cuda_get_device_count() > 0;
}

#define NEED_NO_GPU()                                                                          \
    do {                                                                                       \
        if (have_gpu()) {                                                                      \
            cr_skip_test("a CUDA device is present (these checks are for machines without)"); \
        }                                                                                      \
    } while (0)

#define NEED_GPU()                                                                             \
    do {                                                                                       \
        if (!have_gpu()) {                                                                     \
            cr_skip_test("no CUDA device (GPU-only check)");                                   \
        }                                                                                      \
    } while (0)

/* ---- everywhere ---------------------------------------------------------------------------- */

Test(cuda_host, registry_is_named_cuda_and_comes_first) {
    ggml_backend_reg_t reg = ggml_backend_cuda_reg();
    cr_assert_not_null(reg);
    cr_assert_str_eq(ggml_backend_reg_name(reg), GGML_CUDA_NAME);
    cr_assert_eq(ggml_backend_reg_by_name("CUDA"), reg);
    cr_assert_eq(ggml_backend_reg_get(0), reg, "CUDA must be the first registry (GPU kinds before the CPU)");
    cr_assert_eq(ggml_backend_reg_dev_count(reg), (size_t) ggml_backend_cuda_get_device_count());
}

Test(cuda_host, bad_device_indices_are_refused_with_a_message) {
    const int bad[] = { -1, GGML_CUDA_MAX_DEVICES, ggml_backend_cuda_get_device_count() };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ggmlx_clear_last_error();
        cr_assert_null(ggml_backend_cuda_init(bad[i]));
        cr_assert_not_null(ggmlx_last_error(), "init(%d) failed silently", bad[i]);
        ggmlx_clear_last_error();
        cr_assert_null(ggml_backend_cuda_buffer_type(bad[i]));
        cr_assert_not_null(ggmlx_last_error(), "buffer_type(%d) failed silently", bad[i]);
        char desc[64] = "untouched";
        ggml_backend_cuda_get_device_description(bad[i], desc, sizeof desc);
        cr_assert_str_eq(desc, "");
        size_t free = 1, total = 1;
        ggml_backend_cuda_get_device_memory(bad[i], &free, &total);
        cr_assert(free == 0 && total == 0);
    }
    cr_assert_null(ggml_backend_reg_dev_get(ggml_backend_cuda_reg(), (size_t) ggml_backend_cuda_get_device_count()));
}

Test(cuda_host, other_backends_are_not_cuda) {
    cr_assert_not(ggml_backend_is_cuda(NULL));
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    cr_assert_not(ggml_backend_is_cuda(cpu));
    ggml_backend_free(cpu);
}

Test(cuda_host, host_registration_is_opt_in) {
    unsetenv("GGML_CUDA_REGISTER_HOST");
    char buf[4096];
    cr_assert_not(ggml_backend_cuda_register_host_buffer(buf, sizeof buf));
    ggml_backend_cuda_unregister_host_buffer(buf); /* harmless when never registered */
    cr_assert_not_null(ggml_backend_reg_get_proc_address(ggml_backend_cuda_reg(), "ggml_backend_register_host_buffer"));
}

/* ---- without a GPU ------------------------------------------------------------------------- */

Test(cuda_host, no_gpu_means_zero_devices) {
    NEED_NO_GPU();
    cr_assert_eq(ggml_backend_cuda_get_device_count(), 0);
    cr_assert_eq(ggml_backend_reg_dev_count(ggml_backend_cuda_reg()), 0);
}

Test(cuda_host, no_gpu_init_and_buffer_types_fail_with_a_message) {
    NEED_NO_GPU();
    ggmlx_clear_last_error();
    cr_assert_null(ggml_backend_cuda_init(0));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "no CUDA devices") != NULL, "%s", ggmlx_last_error());
    ggmlx_clear_last_error();
    cr_assert_null(ggml_backend_cuda_buffer_type(0));
    cr_assert_not_null(ggmlx_last_error());
    ggmlx_clear_last_error();
    cr_assert_null(ggml_backend_cuda_host_buffer_type());
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_null(ggml_backend_init_by_name("CUDA0", NULL));
}

Test(cuda_host, no_gpu_leaves_the_rest_of_the_registry_working) {
    NEED_NO_GPU();
    ggml_backend_dev_t cpu = ggml_backend_dev_by_name("CPU");
    cr_assert_not_null(cpu);
    cr_assert_null(ggml_backend_dev_by_name("CUDA0"));
    ggml_backend_t best = ggml_backend_init_best();
    cr_assert_not_null(best, "%s", ggmlx_last_error());
    cr_assert_not(ggml_backend_is_cuda(best));
    ggml_backend_free(best);
}

/* ---- on a GPU ------------------------------------------------------------------------------ */

struct gpu_fixture {
    ggml_backend_t             b;
    ggml_backend_buffer_type_t buft;
};

static struct gpu_fixture gpu_open(void) {
    struct gpu_fixture f;
    f.b = ggml_backend_cuda_init(0);
    cr_assert_not_null(f.b, "%s", ggmlx_last_error());
    cr_assert(ggml_backend_is_cuda(f.b));
    f.buft = ggml_backend_cuda_buffer_type(0);
    cr_assert_not_null(f.buft);
    return f;
}

/* a no_alloc context of n f32 vectors of ne elements, allocated in buft */
static struct ggml_context * vectors(int n, int64_t ne, ggml_backend_buffer_type_t buft, struct ggml_tensor ** out,
                                     ggml_backend_buffer_t * buf) {
    struct ggml_init_params ip = { ggml_tensor_overhead() * (size_t) (n + 8) + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);
    for (int i = 0; i < n; i++) {
        out[i] = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ne);
    }
    *buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    cr_assert_not_null(*buf, "%s", ggmlx_last_error());
    return ctx;
}

static void fill(float * v, int64_t n, float base) {
    for (int64_t i = 0; i < n; i++) {
        v[i] = base + (float) i * 0.5f;
    }
}

Test(cuda_gpu, device_properties) {
    NEED_GPU();
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("CUDA0");
    cr_assert_not_null(dev);
    struct ggml_backend_dev_props p;
    ggml_backend_dev_get_props(dev, &p);
    cr_assert_eq(p.type, GGML_BACKEND_DEVICE_TYPE_GPU);
    cr_assert(p.caps.async && p.caps.host_buffer && p.caps.events && !p.caps.buffer_from_host_ptr);
    cr_assert(p.memory_total > 0 && p.memory_free <= p.memory_total);
    cr_assert_not_null(p.device_id);
    for (const char * c = p.device_id; *c; c++) {
        cr_assert(!(*c >= 'A' && *c <= 'Z'), "device_id %s is not lower case", p.device_id);
    }
    char desc[256];
    ggml_backend_cuda_get_device_description(0, desc, sizeof desc);
    cr_assert_str_eq(desc, p.description);
    cr_assert_eq(ggml_backend_buft_get_alignment(ggml_backend_cuda_buffer_type(0)), 128);
}

Test(cuda_gpu, alloc_set_get_memset_round_trip) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    struct ggml_tensor * t[1];
    ggml_backend_buffer_t buf;
    struct ggml_context * ctx = vectors(1, 1000, f.buft, t, &buf);
    cr_assert_not(ggml_backend_buffer_is_host(buf));
    float in[1000], out[1000];
    fill(in, 1000, 1.0f);
    ggml_backend_tensor_set(t[0], in, 0, sizeof in);
    memset(out, 0, sizeof out);
    ggml_backend_tensor_get(t[0], out, 0, sizeof out);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_tensor_memset(t[0], 0, 4 * sizeof(float), 8 * sizeof(float));
    ggml_backend_tensor_get(t[0], out, 0, sizeof out);
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(out[i], (i >= 4 && i < 12) ? 0.0f : in[i], "element %d", i);
    }
    ggml_backend_buffer_clear(buf, 0);
    ggml_backend_tensor_get(t[0], out, 0, sizeof out);
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(out[i], 0.0f);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(f.b);
}

Test(cuda_gpu, out_of_memory_is_null_with_a_message) {
    NEED_GPU();
    ggmlx_clear_last_error();
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_cuda_buffer_type(0), (size_t) 1 << 50);
    cr_assert_null(buf);
    cr_assert_not_null(ggmlx_last_error());
    /* the device is still usable */
    buf = ggml_backend_buft_alloc_buffer(ggml_backend_cuda_buffer_type(0), 1 << 20);
    cr_assert_not_null(buf, "%s", ggmlx_last_error());
    ggml_backend_buffer_free(buf);
}

Test(cuda_gpu, async_set_get_and_2d) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    struct ggml_tensor * t[1];
    ggml_backend_buffer_t buf;
    struct ggml_context * ctx = vectors(1, 64, f.buft, t, &buf);
    float in[64], out[64];
    fill(in, 64, 3.0f);
    ggml_backend_tensor_set_async(f.b, t[0], in, 0, sizeof in);
    memset(out, 0, sizeof out);
    ggml_backend_tensor_get_async(f.b, t[0], out, 0, sizeof out);
    ggml_backend_synchronize(f.b);
    cr_assert_arr_eq(in, out, sizeof in);
    /* 8 rows of 4 floats every 8 floats in the tensor, packed on the host */
    float rows[32], back[32];
    fill(rows, 32, -7.0f);
    ggml_backend_tensor_set_2d_async(f.b, t[0], rows, 0, 4 * sizeof(float), 8, 8 * sizeof(float), 4 * sizeof(float));
    ggml_backend_tensor_get_2d_async(f.b, t[0], back, 0, 4 * sizeof(float), 8, 8 * sizeof(float), 4 * sizeof(float));
    ggml_backend_synchronize(f.b);
    cr_assert_arr_eq(rows, back, sizeof rows);
    cr_assert_eq(ggmlx_backend_get_status(f.b), GGML_STATUS_SUCCESS);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(f.b);
}

Test(cuda_gpu, compute_a_small_graph) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    struct ggml_init_params ip = { ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1000);
    struct ggml_tensor * c = ggml_add(ctx, a, b);
    if (!ggml_backend_supports_op(f.b, c)) {
        ggml_free(ctx);
        ggml_backend_free(f.b);
        cr_skip_test("no ADD kernel in this build yet");
    }
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, c);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, f.buft);
    cr_assert_not_null(buf);
    float va[1000], vb[1000], vc[1000];
    fill(va, 1000, 1.0f);
    fill(vb, 1000, -2.0f);
    ggml_backend_tensor_set(a, va, 0, sizeof va);
    ggml_backend_tensor_set(b, vb, 0, sizeof vb);
    cr_assert_eq(ggml_backend_graph_compute(f.b, gf), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    ggml_backend_tensor_get(c, vc, 0, sizeof vc);
    for (int i = 0; i < 1000; i++) {
        cr_assert_float_eq(vc[i], va[i] + vb[i], 1e-6f, "element %d", i);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(f.b);
}

Test(cuda_gpu, a_graph_in_host_memory_is_refused_before_enqueueing) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    struct ggml_tensor * t[2];
    ggml_backend_buffer_t buf;
    struct ggml_context * ctx = vectors(2, 16, ggml_backend_cpu_buffer_type(), t, &buf);
    struct ggml_tensor * c = ggml_add(ctx, t[0], t[1]);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, c);
    c->data   = t[0]->data; /* allocated, but in host memory */
    c->buffer = buf;
    cr_assert_eq(ggml_backend_graph_compute(f.b, gf), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    /* refused up front: nothing became sticky */
    cr_assert_eq(ggmlx_backend_get_status(f.b), GGML_STATUS_SUCCESS);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(f.b);
}

Test(cuda_gpu, events_order_two_streams) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    ggml_backend_t b2 = ggml_backend_cuda_init(0);
    cr_assert_not_null(b2);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(f.b));
    cr_assert_not_null(ev, "%s", ggmlx_last_error());
    ggml_backend_event_synchronize(ev); /* never recorded: done */
    ggml_backend_event_wait(b2, ev);
    struct ggml_tensor * t[2];
    ggml_backend_buffer_t buf;
    struct ggml_context * ctx = vectors(2, 1 << 20, f.buft, t, &buf);
    static float in[1 << 20], out[1 << 20];
    fill(in, 1 << 20, 5.0f);
    ggml_backend_tensor_set_async(f.b, t[0], in, 0, sizeof in);
    ggml_backend_event_record(ev, f.b);
    ggml_backend_event_wait(b2, ev);
    ggml_backend_tensor_copy_async(b2, b2, t[0], t[1]); /* on b2, after f.b's upload */
    ggml_backend_tensor_get_async(b2, t[1], out, 0, sizeof out);
    ggml_backend_synchronize(b2);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_event_free(ev);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(b2);
    ggml_backend_free(f.b);
}

Test(cuda_gpu, copy_async_between_cuda_backends) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    const int last = ggml_backend_cuda_get_device_count() - 1; /* another GPU when there is one */
    ggml_backend_t b2 = ggml_backend_cuda_init(last);
    cr_assert_not_null(b2);
    struct ggml_tensor * s[1], * d[1];
    ggml_backend_buffer_t sbuf, dbuf;
    struct ggml_context * sctx = vectors(1, 4096, f.buft, s, &sbuf);
    struct ggml_context * dctx = vectors(1, 4096, ggml_backend_cuda_buffer_type(last), d, &dbuf);
    float in[4096], out[4096];
    fill(in, 4096, 11.0f);
    ggml_backend_tensor_set_async(f.b, s[0], in, 0, sizeof in);
    ggml_backend_tensor_copy_async(f.b, b2, s[0], d[0]);
    ggml_backend_tensor_get_async(b2, d[0], out, 0, sizeof out);
    ggml_backend_synchronize(b2);
    cr_assert_arr_eq(in, out, sizeof in);
    cr_assert_eq(ggmlx_backend_get_status(b2), GGML_STATUS_SUCCESS);
    ggml_backend_buffer_free(sbuf);
    ggml_backend_buffer_free(dbuf);
    ggml_free(sctx);
    ggml_free(dctx);
    ggml_backend_free(b2);
    ggml_backend_free(f.b);
}

/*
 * The stream waits in the GPU for a CPU queue's event: the CPU queue is held, so the data the
 * stream uploads from pinned memory is only there once the CPU has run; a missing wait uploads
 * zeros.
 */
Test(cuda_gpu, stream_waits_for_a_cpu_event, .timeout = 60) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    cr_assert(ggmlx_backend_queue_hold(cpu), "the CPU backend has no queue (GGMLX_CPU_SYNC set?)");
    struct ggml_tensor * h[1], * t[1];
    ggml_backend_buffer_t hbuf, dbuf;
    struct ggml_context * hctx = vectors(1, 256, ggml_backend_cuda_host_buffer_type(), h, &hbuf);
    struct ggml_context * dctx = vectors(1, 256, f.buft, t, &dbuf);
    cr_assert(ggml_backend_buffer_is_host(hbuf));
    ggml_backend_buffer_clear(hbuf, 0);
    float in[256], out[256];
    fill(in, 256, 42.0f);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(cpu));
    ggml_backend_tensor_set_async(cpu, h[0], in, 0, sizeof in);
    ggml_backend_event_record(ev, cpu);
    ggml_backend_event_wait(f.b, ev); /* must not block the host: the CPU queue is held */
    ggml_backend_tensor_set_async(f.b, t[0], h[0]->data, 0, sizeof in);
    usleep(20000); /* the stream would have copied zeros by now without the wait */
    ggmlx_backend_queue_release(cpu);
    ggml_backend_synchronize(f.b);
    ggml_backend_tensor_get(t[0], out, 0, sizeof out);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_synchronize(cpu);
    ggml_backend_event_free(ev);
    ggml_backend_buffer_free(hbuf);
    ggml_backend_buffer_free(dbuf);
    ggml_free(hctx);
    ggml_free(dctx);
    ggml_backend_free(cpu);
    ggml_backend_free(f.b);
}

/* The reverse: a CPU queue waits for a CUDA event before reading what the stream downloaded. */
Test(cuda_gpu, cpu_queue_waits_for_a_cuda_event, .timeout = 60) {
    NEED_GPU();
    struct gpu_fixture f = gpu_open();
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    struct ggml_tensor * h[2], * t[1];
    ggml_backend_buffer_t hbuf, dbuf;
    const int64_t n = 1 << 20;
    struct ggml_context * hctx = vectors(2, n, ggml_backend_cuda_host_buffer_type(), h, &hbuf);
    struct ggml_context * dctx = vectors(1, n, f.buft, t, &dbuf);
    ggml_backend_buffer_clear(hbuf, 0);
    static float in[1 << 20], out[1 << 20];
    fill(in, n, 1.0f);
    ggml_backend_tensor_set(t[0], in, 0, sizeof in);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(f.b));
    ggml_backend_tensor_get_async(f.b, t[0], h[0]->data, 0, sizeof in);
    ggml_backend_event_record(ev, f.b);
    ggml_backend_event_wait(cpu, ev);
    ggml_backend_tensor_copy_async(cpu, cpu, h[0], h[1]); /* on the CPU queue, after the wait */
    ggml_backend_synchronize(cpu);
    ggml_backend_tensor_get(h[1], out, 0, sizeof out);
    cr_assert_arr_eq(in, out, sizeof in);
    ggml_backend_synchronize(f.b);
    ggml_backend_event_free(ev);
    ggml_backend_buffer_free(hbuf);
    ggml_backend_buffer_free(dbuf);
    ggml_free(hctx);
    ggml_free(dctx);
    ggml_backend_free(cpu);
    ggml_backend_free(f.b);
}
