/*
 * cuda-impl.h -- what the CUDA backend's host files (cuda-device.c, cuda-buffer.c,
 * cuda-backend.c, cuda-event.c) share: the device table, error checking and buffer ownership.
 * C11 only; the kernels see cuda-ops.h, never this.
 */
#ifndef GGMLX_CUDA_IMPL_H
#define GGMLX_CUDA_IMPL_H

#include "backend/ggml-backend-impl.h"
#include "ggml-cuda.h"
#include "virtual-devices.h"

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* tensors in device buffers are placed at this alignment (what upstream promises) */
#define GGMLX_CUDA_ALIGN 128

struct ggmlx_cuda_device {
    int    ordinal;          /* CUDA runtime device ordinal */
    int    cc;               /* compute capability, major * 10 + minor */
    bool   pools;            /* stream-ordered allocation (cudaMallocAsync) supported */
    size_t total_mem;
    char   name[16];         /* "CUDA0" */
    char   description[256]; /* the GPU's product name */
    char   pci_id[40];       /* lower case "dddd:bb:dd.f", "-vK" added for a shared GPU's K-th device */
    int    share;            /* devices of this process on the same GPU (GGML_CUDA_DEVICES) */

    /* buffers take their bytes from this budget before cudaMalloc (virtual-devices.h) */
    struct ggmlx_cuda_vmem vmem;

    /* a sticky CUDA error poisons the GPU's context: every later call on it (on every device
     * sharing that GPU) must fail */
    atomic_bool failed;
    char        failed_msg[256];

    struct ggml_backend_buffer_type buft;
    struct ggml_backend_device      dev;
};

/* number of usable devices (0 without a driver or a GPU); the table is made on first use */
int                        ggmlx_cuda_n_devices(void);
/* device i, or NULL with an error naming func when i is out of range */
struct ggmlx_cuda_device * ggmlx_cuda_device_at(const char * func, int i);
/* the device behind a registry device of ours, or NULL */
struct ggmlx_cuda_device * ggmlx_cuda_device_of(ggml_backend_dev_t dev);

/*
 * true when err is cudaSuccess. Otherwise: an error "func: CUDAn: what: name (text)" is
 * recorded, the runtime's last error cleared, and a sticky error marks the device failed.
 * d may be NULL (no device involved).
 */
bool ggmlx_cuda_check(struct ggmlx_cuda_device * d, cudaError_t err, const char * func, const char * what);
/* false (error recorded) when d has failed earlier */
bool ggmlx_cuda_alive(struct ggmlx_cuda_device * d, const char * func);
/* make d current on the calling thread (checked, and refused when d has failed) */
bool ggmlx_cuda_set_device(struct ggmlx_cuda_device * d, const char * func);

/* ---- buffers (cuda-buffer.c) --------------------------------------------------------------- */

extern const struct ggml_backend_buffer_type_i ggmlx_cuda_buft_iface;

/* the device owning a CUDA device buffer, NULL for any other buffer (pinned host ones included) */
struct ggmlx_cuda_device * ggmlx_cuda_buffer_device(ggml_backend_buffer_t buffer);
/* the device whose memory holds t (a view: its source's), NULL when not in a CUDA device buffer */
struct ggmlx_cuda_device * ggmlx_cuda_tensor_device(const struct ggml_tensor * t);
bool                       ggmlx_cuda_buft_is_device(ggml_backend_buffer_type_t buft);

/* ---- backends and events (cuda-backend.c, cuda-event.c) ------------------------------------ */

ggml_backend_t ggmlx_cuda_backend_new(struct ggmlx_cuda_device * d, const char * func);

/* for work that other files enqueue on a backend's stream (cuda-comm.c); backend must be CUDA */
struct ggmlx_cuda_device * ggmlx_cuda_backend_device(ggml_backend_t backend);
cudaStream_t               ggmlx_cuda_backend_stream(ggml_backend_t backend);
/* usable for new work: device alive and current, no sticky status (error recorded otherwise) */
bool                       ggmlx_cuda_backend_ready(ggml_backend_t backend, const char * func);
/* such work failed after parts of it may have been enqueued: the thread's last error becomes
 * the backend's sticky status */
void                       ggmlx_cuda_backend_fail(ggml_backend_t backend);

ggml_backend_event_t ggmlx_cuda_event_new(struct ggmlx_cuda_device * d);
void                 ggmlx_cuda_event_free(ggml_backend_event_t event);
void                 ggmlx_cuda_event_synchronize(ggml_backend_event_t event);
/* enqueue a record of event on stream (event made by d, stream of d) */
bool                 ggmlx_cuda_event_record(struct ggmlx_cuda_device * d, cudaStream_t stream, ggml_backend_event_t event);
/* enqueue on stream (of d) a wait for event: a CUDA event of any device, or a host counter event */
bool                 ggmlx_cuda_event_wait(struct ggmlx_cuda_device * d, cudaStream_t stream, ggml_backend_event_t event);

#endif /* GGMLX_CUDA_IMPL_H */
