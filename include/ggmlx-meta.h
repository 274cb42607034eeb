/*
 * ggmlx-meta.h -- ggmlx's extensions to the meta device (ggml_backend_meta_device, tensor
 * parallelism): the generic all-reduce called directly, counters of what a meta backend did, and
 * how much each device holds of a meta buffer. docs/multi-gpu.md explains the meta device.
 */
#pragma once

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

    /*
     * The all-reduce the meta device uses when a registry offers no comm functions: afterwards
     * every tensors[i] holds the element-wise sum of all n of them. Pairwise exchanges (copies
     * queued between the backends, then an ADD on each), log2(n) rounds for a power of two; other
     * counts fold the extra devices in first and copy the result back to them last.
     *
     * Preconditions: 1 <= n <= GGML_BACKEND_META_MAX_DEVICES; tensors[i] allocated in a buffer
     * that backends[i] can compute on; all of one float type (F32, F16, BF16), one shape, and
     * contiguous. Enqueues the work, then synchronizes the n backends (temporary buffers are
     * freed before it returns). Returns GGML_STATUS_SUCCESS, or an error status with a message
     * having changed nothing when an argument is bad, or ALLOC_FAILED when a device is out of memory.
     */
    GGML_API enum ggml_status ggmlx_meta_allreduce_generic(ggml_backend_t * backends, struct ggml_tensor ** tensors,
                                                           size_t n);

    /* What a meta backend did since it was made or its stats were last reset. */
    struct ggmlx_meta_stats {
        uint64_t n_graphs;             /* graph computes */
        uint64_t n_subgraphs;          /* pieces between reductions, all graphs together */
        uint64_t n_allreduce_comm;     /* reductions through the registry's comm functions (NCCL) */
        uint64_t n_allreduce_generic;  /* reductions with copies and adds */
        uint64_t bytes_reduced;        /* bytes of one device's tensor, summed over reductions */
    };

    /* false (and a message) when backend is not a meta backend or out is NULL */
    GGML_API bool ggmlx_meta_get_stats(ggml_backend_t backend, struct ggmlx_meta_stats * out);
    GGML_API void ggmlx_meta_reset_stats(ggml_backend_t backend);

    /* Number of devices a meta device spans; 0 when dev is not a meta device (or is NULL). */
    GGML_API size_t ggmlx_meta_dev_n_devices(ggml_backend_dev_t dev);

    /*
     * Bytes that device i holds of a meta buffer (only its slices for weights), or 0 when buffer
     * is not a meta buffer or i is out of range.
     */
    GGML_API size_t ggmlx_meta_buffer_device_size(ggml_backend_buffer_t buffer, size_t i);

#ifdef __cplusplus
}
#endif
