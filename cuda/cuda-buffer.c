/*
 * cuda-buffer.c -- device buffers (cudaMalloc, one buffer type per GPU) and the pinned host
 * buffer type "CUDA_Host" (cudaMallocHost memory presented as a CPU buffer).
 *
 * Buffer-level calls are synchronous for the host and do not wait for any backend's stream
 * (docs/async.md rule 5): they run on the calling thread's per-thread stream and wait for it.
 */
#include "cuda-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_buffer {
    struct ggmlx_cuda_device * d;
    void                     * ptr;
    size_t                     size; /* taken from the device's budget */
};

/* ---- which buffers are ours ---------------------------------------------------------------- */

static const char * buft_get_name(ggml_backend_buffer_type_t buft);

bool ggmlx_cuda_buft_is_device(ggml_backend_buffer_type_t buft) {
    return buft != NULL && buft->iface.get_name == buft_get_name;
}

struct ggmlx_cuda_device * ggmlx_cuda_buffer_device(ggml_backend_buffer_t buffer) {
    if (buffer == NULL || !ggmlx_cuda_buft_is_device(buffer->buft) || buffer->context == NULL) {
        return NULL; /* a zero-size buffer has no context and no memory */
    }
    return ((struct cuda_buffer *) buffer->context)->d;
}

struct ggmlx_cuda_device * ggmlx_cuda_tensor_device(const struct ggml_tensor * t) {
    return t != NULL && t->data != NULL ? ggmlx_cuda_buffer_device(ggmlx_tensor_buffer(t)) : NULL;
}

/* ---- synchronous copies on the calling thread's stream ------------------------------------- */

/* wait for the per-thread stream; the copy before it is only known to have worked after this */
static bool finish(struct ggmlx_cuda_device * d, const char * func) {
    return ggmlx_cuda_check(d, cudaStreamSynchronize(cudaStreamPerThread), func, "cudaStreamSynchronize");
}

static void copy_2d(struct ggmlx_cuda_device * d, const char * func, void * dst, size_t dpitch, const void * src,
                    size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
    if (!ggmlx_cuda_set_device(d, func)) {
        return;
    }
    cudaError_t err;
    if (height == 1) {
        err = cudaMemcpyAsync(dst, src, width, kind, cudaStreamPerThread);
    } else if (dpitch >= width && spitch >= width) {
        err = cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, cudaStreamPerThread);
    } else {
        /* overlapping rows are not a 2-D copy the runtime accepts: row by row, in order */
        err = cudaSuccess;
        for (size_t i = 0; i < height && err == cudaSuccess; i++) {
            err = cudaMemcpyAsync((char *) dst + i * dpitch, (const char *) src + i * spitch, width, kind,
                                  cudaStreamPerThread);
        }
    }
    if (ggmlx_cuda_check(d, err, func, "cudaMemcpyAsync")) {
        finish(d, func);
    }
}

/* ---- device buffer ------------------------------------------------------------------------- */

static void buffer_free(ggml_backend_buffer_t buffer) {
    struct cuda_buffer * b = buffer->context;
    /* cudaFree waits for the device; a failed device's memory is released with its context */
    if (!atomic_load(&b->d->failed) && ggmlx_cuda_set_device(b->d, "ggml_backend_buffer_free")) {
        ggmlx_cuda_check(b->d, cudaFree(b->ptr), "ggml_backend_buffer_free", "cudaFree");
    }
    ggmlx_cuda_vmem_release(&b->d->vmem, b->size);
    free(b);
}

static void * buffer_get_base(ggml_backend_buffer_t buffer) {
    return ((struct cuda_buffer *) buffer->context)->ptr;
}

static void buffer_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, uint8_t value,
                                 size_t offset, size_t size) {
    static const char * func = "ggml_backend_tensor_memset";
    struct cuda_buffer * b = buffer->context;
    if (ggmlx_cuda_set_device(b->d, func) &&
        ggmlx_cuda_check(b->d, cudaMemsetAsync((char *) tensor->data + offset, value, size, cudaStreamPerThread),
                         func, "cudaMemsetAsync")) {
        finish(b->d, func);
    }
}

static void buffer_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                              size_t offset, size_t size) {
    struct cuda_buffer * b = buffer->context;
    copy_2d(b->d, "ggml_backend_tensor_set", (char *) tensor->data + offset, size, data, size, size, 1,
            cudaMemcpyHostToDevice);
}

static void buffer_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                              size_t offset, size_t size) {
    struct cuda_buffer * b = buffer->context;
    copy_2d(b->d, "ggml_backend_tensor_get", data, size, (const char *) tensor->data + offset, size, size, 1,
            cudaMemcpyDeviceToHost);
}

static void buffer_set_tensor_2d(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                 size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                 size_t stride_data) {
    struct cuda_buffer * b = buffer->context;
    copy_2d(b->d, "ggml_backend_tensor_set_2d", (char *) tensor->data + offset, stride_tensor, data, stride_data,
            size, n_copies, cudaMemcpyHostToDevice);
}

static void buffer_get_tensor_2d(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                 size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                 size_t stride_data) {
    struct cuda_buffer * b = buffer->context;
    copy_2d(b->d, "ggml_backend_tensor_get_2d", data, stride_data, (const char *) tensor->data + offset,
            stride_tensor, size, n_copies, cudaMemcpyDeviceToHost);
}

/*
 * dst is in this buffer. From another CUDA buffer: on the same GPU (another virtual device on it
 * too) a device-to-device copy, from another GPU a peer copy (the runtime stages it when peer
 * access is off). From host memory: an upload. Anything else (a SIM device's private memory): false, the caller goes through the host.
 */
static bool buffer_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    static const char * func = "ggml_backend_tensor_copy";
    struct cuda_buffer * b = buffer->context;
    ggml_backend_buffer_t src_buf = ggmlx_tensor_buffer(src);
    struct ggmlx_cuda_device * sd = ggmlx_cuda_buffer_device(src_buf);
    const size_t n = ggml_nbytes(src);
    if (sd == NULL) {
        if (src_buf == NULL || !ggml_backend_buffer_is_host(src_buf)) {
            return false;
        }
        copy_2d(b->d, func, dst->data, n, src->data, n, n, 1, cudaMemcpyHostToDevice);
        return true;
    }
    if (!ggmlx_cuda_alive(sd, func) || !ggmlx_cuda_set_device(b->d, func)) {
        return true; /* refused with a message: a host fallback would touch the failed device too */
    }
    /* one GPU (two virtual devices on it included): a plain device-to-device copy */
    const bool same_gpu = sd->ordinal == b->d->ordinal;
    cudaError_t err = same_gpu
        ? cudaMemcpyAsync(dst->data, src->data, n, cudaMemcpyDeviceToDevice, cudaStreamPerThread)
        : cudaMemcpyPeerAsync(dst->data, b->d->ordinal, src->data, sd->ordinal, n, cudaStreamPerThread);
    if (ggmlx_cuda_check(b->d, err, func, same_gpu ? "cudaMemcpyAsync" : "cudaMemcpyPeerAsync")) {
        finish(b->d, func);
    }
    return true;
}

static void buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    static const char * func = "ggml_backend_buffer_clear";
    struct cuda_buffer * b = buffer->context;
    if (ggmlx_cuda_set_device(b->d, func) &&
        ggmlx_cuda_check(b->d, cudaMemsetAsync(b->ptr, value, buffer->size, cudaStreamPerThread), func,
                         "cudaMemsetAsync")) {
        finish(b->d, func);
    }
}

static const struct ggml_backend_buffer_i cuda_buffer_iface = {
    .free_buffer   = buffer_free,
    .get_base      = buffer_get_base,
    .init_tensor   = NULL,
    .memset_tensor = buffer_memset_tensor,
    .set_tensor    = buffer_set_tensor,
    .get_tensor    = buffer_get_tensor,
    .set_tensor_2d = buffer_set_tensor_2d,
    .get_tensor_2d = buffer_get_tensor_2d,
    .cpy_tensor    = buffer_cpy_tensor,
    .clear         = buffer_clear,
    .reset         = NULL,
};

/* ---- device buffer type -------------------------------------------------------------------- */

static const char * buft_get_name(ggml_backend_buffer_type_t buft) {
    return ((struct ggmlx_cuda_device *) buft->context)->name;
}

static ggml_backend_buffer_t buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    static const char * func = "ggml_backend_buft_alloc_buffer";
    struct ggmlx_cuda_device * d = buft->context;
    if (!ggmlx_cuda_set_device(d, func)) {
        return NULL;
    }
    struct cuda_buffer * b = malloc(sizeof *b);
    if (b == NULL) {
        ggmlx_error(func, "%s: out of host memory", d->name);
        return NULL;
    }
    b->d    = d;
    b->ptr  = NULL;
    b->size = size;
    /* the device's budget first: on a shared GPU one device's out-of-memory is its own */
    if (!ggmlx_cuda_vmem_reserve(&d->vmem, size, func, d->name)) {
        goto err_free;
    }
    const cudaError_t err = cudaMalloc(&b->ptr, size);
    if (err != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc of %zu bytes", size);
        ggmlx_cuda_check(d, err, func, what);
        goto err_release;
    }
    ggml_backend_buffer_t buffer = ggml_backend_buffer_init(buft, cuda_buffer_iface, b, size);
    if (buffer == NULL) {
        ggmlx_cuda_check(d, cudaFree(b->ptr), func, "cudaFree");
        goto err_release;
    }
    return buffer;

err_release:
    ggmlx_cuda_vmem_release(&d->vmem, size);
err_free:
    free(b);
    return NULL;
}

static size_t buft_get_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return GGMLX_CUDA_ALIGN;
}

const struct ggml_backend_buffer_type_i ggmlx_cuda_buft_iface = {
    .get_name       = buft_get_name,
    .alloc_buffer   = buft_alloc_buffer,
    .get_alignment  = buft_get_alignment,
    .get_max_size   = NULL,
    .get_alloc_size = NULL,
    .is_host        = NULL,
};

/* ---- pinned host buffer type --------------------------------------------------------------- */

static const char * host_buft_get_name(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return "CUDA_Host";
}

static void host_buffer_free(ggml_backend_buffer_t buffer) {
    ggmlx_cuda_check(NULL, cudaFreeHost(buffer->context), "ggml_backend_buffer_free", "cudaFreeHost");
}

/*
 * Pinned memory behaves as CPU memory in every respect but freeing, so the buffer is a CPU
 * buffer over it with its own free. When pinning fails the caller still gets memory: a plain
 * CPU buffer (copies from it are then synchronous), with a warning, as upstream does.
 */
static ggml_backend_buffer_t host_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    static const char * func = "ggml_backend_buft_alloc_buffer";
    void * ptr = NULL;
    const cudaError_t err = ggmlx_cuda_n_devices() > 0 ? cudaMallocHost(&ptr, size) : cudaErrorNoDevice;
    if (err != cudaSuccess) {
        (void) cudaGetLastError();
        ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: CUDA_Host: no %zu bytes of pinned memory (%s); using pageable memory\n",
                  func, size, cudaGetErrorName(err));
        return ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
    }
    ggml_backend_buffer_t buffer = ggml_backend_cpu_buffer_from_ptr(ptr, size);
    if (buffer == NULL) {
        ggmlx_cuda_check(NULL, cudaFreeHost(ptr), func, "cudaFreeHost");
        return NULL;
    }
    buffer->buft              = buft;
    buffer->iface.free_buffer = host_buffer_free;
    return buffer;
}

static size_t host_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

static bool host_buft_is_host(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return true;
}

static struct ggml_backend_buffer_type g_host_buft = {
    .iface = {
        .get_name       = host_buft_get_name,
        .alloc_buffer   = host_buft_alloc_buffer,
        .get_alignment  = host_buft_get_alignment,
        .get_max_size   = NULL,
        .get_alloc_size = NULL,
        .is_host        = host_buft_is_host,
    },
    .device  = NULL, /* set to CUDA0 when first asked for */
    .context = NULL,
};

ggml_backend_buffer_type_t ggml_backend_cuda_host_buffer_type(void) {
    if (ggmlx_cuda_n_devices() == 0) {
        ggmlx_error(__func__, "there are no CUDA devices (no GPU, or no CUDA driver)");
        return NULL;
    }
    g_host_buft.device = ggml_backend_reg_dev_get(ggml_backend_cuda_reg(), 0);
    ggmlx_ok();
    return &g_host_buft;
}

/* ---- registering memory the caller owns ---------------------------------------------------- */

bool ggml_backend_cuda_register_host_buffer(void * buffer, size_t size) {
    if (getenv("GGML_CUDA_REGISTER_HOST") == NULL) {
        return false; /* as upstream: opt-in, pinning large mappings is slow and can fail */
    }
    if (buffer == NULL || size == 0 || ggmlx_cuda_n_devices() == 0) {
        return false;
    }
    const cudaError_t err = cudaHostRegister(buffer, size, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (err != cudaSuccess) {
        (void) cudaGetLastError();
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: cudaHostRegister of %zu bytes failed: %s\n", __func__, size,
                  cudaGetErrorString(err));
        return false;
    }
    return true;
}

void ggml_backend_cuda_unregister_host_buffer(void * buffer) {
    if (getenv("GGML_CUDA_REGISTER_HOST") == NULL || buffer == NULL || ggmlx_cuda_n_devices() == 0) {
        return;
    }
    if (cudaHostUnregister(buffer) != cudaSuccess) {
        (void) cudaGetLastError(); /* memory that was never registered: nothing to undo */
    }
}
