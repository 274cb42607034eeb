/*
 * ggml-cuda.h -- the CUDA backend: one backend is one non-blocking stream on one GPU
 * (docs/async.md). Declarations and meaning follow upstream ggml's ggml-cuda.h.
 *
 * Without a CUDA driver or without a GPU the registry "CUDA" has zero devices and every
 * per-device call fails with a message (NULL, false, or zeroed outputs); nothing aborts.
 */
#pragma once

#include "ggml.h"
#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGML_CUDA_NAME   "CUDA"
#define GGML_CUBLAS_NAME "cuBLAS"

/* devices beyond this many are not registered */
#define GGML_CUDA_MAX_DEVICES 16

    /* A new backend (its own stream) on device `device`; NULL with a message when it cannot be made. */
    GGML_BACKEND_API ggml_backend_t ggml_backend_cuda_init(int device);

    GGML_BACKEND_API bool ggml_backend_is_cuda(ggml_backend_t backend);

    /* device memory of one GPU (cudaMalloc); NULL with a message for a bad index */
    GGML_BACKEND_API ggml_backend_buffer_type_t ggml_backend_cuda_buffer_type(int device);

    /* pinned host memory (cudaMallocHost), usable as CPU memory; NULL when there is no GPU */
    GGML_BACKEND_API ggml_backend_buffer_type_t ggml_backend_cuda_host_buffer_type(void);

    GGML_BACKEND_API int  ggml_backend_cuda_get_device_count(void);
    GGML_BACKEND_API void ggml_backend_cuda_get_device_description(int device, char * description,
                                                                   size_t description_size);
    GGML_BACKEND_API void ggml_backend_cuda_get_device_memory(int device, size_t * free, size_t * total);

    /*
     * Pin (page-lock) memory the caller owns so copies from and to it are asynchronous. As
     * upstream, this is done only when GGML_CUDA_REGISTER_HOST is set in the environment;
     * otherwise it returns false and the memory stays pageable.
     */
    GGML_BACKEND_API bool ggml_backend_cuda_register_host_buffer(void * buffer, size_t size);
    GGML_BACKEND_API void ggml_backend_cuda_unregister_host_buffer(void * buffer);

    GGML_BACKEND_API ggml_backend_reg_t ggml_backend_cuda_reg(void);

#ifdef __cplusplus
}
#endif
