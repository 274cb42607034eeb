/*
 * test-cuda-virtual-buffer.c -- device buffers of virtual devices (cuda/cuda-buffer.c, linked
 * in here over stub runtime functions whose "device memory" is host memory, so no GPU is
 * needed): each device's budget is taken before cudaMalloc, so one device out of memory is
 * refused with a message while another on the same GPU still allocates; freeing and a failed
 * cudaMalloc give the bytes back; copies between devices of one GPU are device-to-device
 * copies, between GPUs peer copies. Needs only the CUDA headers; skipped without them.
 */
#include <criterion/criterion.h>

#if defined(GGMLX_TEST_CUDA_HEADERS)

#include "cuda-impl.h"

#include "ggml-alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- stub runtime -------------------------------------------------------------------------- */

static struct {
    int         malloc_calls, free_calls, d2d_copies, peer_copies;
    cudaError_t malloc_err; /* returned once by the next cudaMalloc */
} g_rt;

cudaError_t cudaMalloc(void ** p, size_t size) {
    g_rt.malloc_calls++;
    if (g_rt.malloc_err != cudaSuccess) {
        const cudaError_t e = g_rt.malloc_err;
        g_rt.malloc_err     = cudaSuccess;
        return e;
    }
    *p = malloc(size);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void * p) {
    g_rt.free_calls++;
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
    (void) s;
    if (kind == cudaMemcpyDeviceToDevice) {
        g_rt.d2d_copies++;
    }
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void * dst, int dd, const void * src, int sd, size_t n, cudaStream_t s) {
    (void) dd, (void) sd, (void) s;
    g_rt.peer_copies++;
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void * dst, size_t dp, const void * src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind kind, cudaStream_t s) {
    (void) kind, (void) s;
    for (size_t i = 0; i < h; i++) {
        memmove((char *) dst + i * dp, (const char *) src + i * sp, w);
    }
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void * p, int v, size_t n, cudaStream_t s) {
    (void) s;
    memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void) s;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}

/* the pinned host buffer type is not exercised here: pinning "fails" */
cudaError_t cudaMallocHost(void ** p, size_t size) {
    (void) p, (void) size;
    return cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void * p) {
    (void) p;
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void * p, size_t size, unsigned int flags) {
    (void) p, (void) size, (void) flags;
    return cudaErrorNotSupported;
}

cudaError_t cudaHostUnregister(void * p) {
    (void) p;
    return cudaSuccess;
}

const char * cudaGetErrorName(cudaError_t err) {
    return err == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation" : "cudaErrorStub";
}

const char * cudaGetErrorString(cudaError_t err) {
    (void) err;
    return "stub";
}

/* ---- stub device layer (cuda-device.c) ----------------------------------------------------- */

bool ggmlx_cuda_check(struct ggmlx_cuda_device * d, cudaError_t err, const char * func, const char * what) {
    if (err == cudaSuccess) {
        return true;
    }
    ggmlx_error(func, "%s: %s: %s", d ? d->name : "-", what, cudaGetErrorName(err));
    return false;
}

bool ggmlx_cuda_alive(struct ggmlx_cuda_device * d, const char * func) {
    (void) func;
    return !atomic_load(&d->failed);
}

bool ggmlx_cuda_set_device(struct ggmlx_cuda_device * d, const char * func) {
    return ggmlx_cuda_alive(d, func);
}

int ggmlx_cuda_n_devices(void) {
    return 3;
}

/* ---- fixture: CUDA0 and CUDA1 share GPU 0, CUDA2 is GPU 1 ---------------------------------- */

#define BUDGET ((size_t) 1 << 20)

static struct ggmlx_cuda_device g_dev[3];

static void setup(void) {
    memset(&g_rt, 0, sizeof g_rt);
    for (int i = 0; i < 3; i++) {
        struct ggmlx_cuda_device * d = &g_dev[i];
        memset(d, 0, sizeof *d);
        d->ordinal = i < 2 ? 0 : 1;
        d->share   = i < 2 ? 2 : 1;
        snprintf(d->name, sizeof d->name, "CUDA%d", i);
        atomic_init(&d->failed, false);
        ggmlx_cuda_vmem_init(&d->vmem, BUDGET);
        d->buft = (struct ggml_backend_buffer_type){ ggmlx_cuda_buft_iface, &d->dev, d };
    }
    ggmlx_clear_last_error();
}

TestSuite(cuda_virtual_buffer, .init = setup, .timeout = 60);

Test(cuda_virtual_buffer, out_of_memory_is_per_device) {
    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(&g_dev[0].buft, BUDGET / 4 * 3);
    cr_assert_not_null(a);
    cr_assert_eq(ggmlx_cuda_vmem_used(&g_dev[0].vmem), BUDGET / 4 * 3);

    const int mallocs = g_rt.malloc_calls;
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(&g_dev[0].buft, BUDGET / 2);
    cr_assert_null(b, "past CUDA0's budget");
    cr_assert_eq(g_rt.malloc_calls, mallocs, "refused before cudaMalloc");
    const char * e = ggmlx_last_error();
    cr_assert(e != NULL && strstr(e, "CUDA0") && strstr(e, "out of memory"), "the error says who and why: %s",
              e ? e : "(none)");

    ggml_backend_buffer_t c = ggml_backend_buft_alloc_buffer(&g_dev[1].buft, BUDGET / 4 * 3);
    cr_assert_not_null(c, "CUDA1 on the same GPU still allocates: %s", ggmlx_last_error());

    ggml_backend_buffer_free(a);
    cr_assert_eq(ggmlx_cuda_vmem_used(&g_dev[0].vmem), 0, "freeing gives the bytes back");
    b = ggml_backend_buft_alloc_buffer(&g_dev[0].buft, BUDGET / 2);
    cr_assert_not_null(b);
    ggml_backend_buffer_free(b);
    ggml_backend_buffer_free(c);
    cr_assert_eq(ggmlx_cuda_vmem_used(&g_dev[1].vmem), 0);
    cr_assert_eq(g_rt.free_calls, 3);
}

Test(cuda_virtual_buffer, failed_cuda_malloc_gives_the_budget_back) {
    g_rt.malloc_err = cudaErrorMemoryAllocation;
    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(&g_dev[2].buft, 4096);
    cr_assert_null(a);
    cr_assert(strstr(ggmlx_last_error(), "cudaMalloc") != NULL, "%s", ggmlx_last_error());
    cr_assert_eq(ggmlx_cuda_vmem_used(&g_dev[2].vmem), 0, "nothing stays reserved");
    a = ggml_backend_buft_alloc_buffer(&g_dev[2].buft, BUDGET);
    cr_assert_not_null(a, "the whole budget is still there");
    ggml_backend_buffer_free(a);
}

Test(cuda_virtual_buffer, failed_device_still_releases_its_budget) {
    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(&g_dev[1].buft, 4096);
    cr_assert_not_null(a);
    void * leak = ggml_backend_buffer_get_base(a); /* a failed device's memory goes with its context */
    atomic_store(&g_dev[1].failed, true);
    ggml_backend_buffer_free(a);
    cr_assert_eq(g_rt.free_calls, 0, "no cudaFree on a failed device");
    cr_assert_eq(ggmlx_cuda_vmem_used(&g_dev[1].vmem), 0);
    free(leak);
}

/* a tensor of 64 floats placed at the start of a new buffer of dev */
static struct ggml_tensor * placed(struct ggml_context * ctx, struct ggmlx_cuda_device * dev, ggml_backend_buffer_t * buf) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    *buf = ggml_backend_buft_alloc_buffer(&dev->buft, 1024);
    cr_assert_not_null(*buf);
    cr_assert_eq(ggml_backend_tensor_alloc(*buf, t, ggml_backend_buffer_get_base(*buf)), GGML_STATUS_SUCCESS);
    return t;
}

Test(cuda_virtual_buffer, copies_within_a_gpu_are_device_to_device) {
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    ggml_backend_buffer_t b0, b1, b2;
    struct ggml_tensor * t0 = placed(ctx, &g_dev[0], &b0);
    struct ggml_tensor * t1 = placed(ctx, &g_dev[1], &b1);
    struct ggml_tensor * t2 = placed(ctx, &g_dev[2], &b2);
    float v[64], w[64];
    for (int i = 0; i < 64; i++) {
        v[i] = (float) i * 0.5f - 3.0f;
    }
    ggml_backend_tensor_set(t0, v, 0, sizeof v);

    ggml_backend_tensor_copy(t0, t1);
    cr_assert_eq(g_rt.d2d_copies, 1, "CUDA0 -> CUDA1, one GPU: a device-to-device copy");
    cr_assert_eq(g_rt.peer_copies, 0, "never a peer copy within a GPU");
    ggml_backend_tensor_get(t1, w, 0, sizeof w);
    cr_assert_arr_eq(v, w, sizeof v);

    ggml_backend_tensor_copy(t1, t2);
    cr_assert_eq(g_rt.peer_copies, 1, "CUDA1 -> CUDA2, two GPUs: a peer copy");
    memset(w, 0, sizeof w);
    ggml_backend_tensor_get(t2, w, 0, sizeof w);
    cr_assert_arr_eq(v, w, sizeof v);

    ggml_backend_buffer_free(b0);
    ggml_backend_buffer_free(b1);
    ggml_backend_buffer_free(b2);
    ggml_free(ctx);
}

#else

Test(cuda_virtual_buffer, skipped_without_cuda_headers) {
    cr_skip_test("built without the CUDA headers");
}

#endif
