/*
 * cuda-ops.h -- the contract between the CUDA backend's host logic (C, the .c files in cuda/) and
 * its kernels (CUDA C++, the .cu files, one per op family with extern "C" launchers).
 *
 * The host side checks a graph, reserves scratch for every node before anything is enqueued
 * (so running out of memory leaves nothing half done), then calls one launcher per node on the
 * backend's stream. Launchers never synchronize, never allocate and never call cudaGetLastError
 * on behalf of others: each checks its own launches and reports through its return value.
 */
#ifndef GGMLX_CUDA_OPS_H
#define GGMLX_CUDA_OPS_H

#include "ggml.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a launcher may use. All pointers in tensors handed to launchers are device pointers. */
struct ggmlx_cuda_exec {
    int            device;       /* CUDA device ordinal (already current on the calling thread) */
    int            cc;           /* compute capability, major * 10 + minor */
    cudaStream_t   stream;       /* the backend's non-blocking stream */
    cublasHandle_t cublas;       /* bound to stream, workspace set after every cublasSetStream */
    void         * scratch;      /* device scratch of at least ggmlx_cuda_scratch_size(node) bytes */
    size_t         scratch_size;
    int64_t      * row_err;      /* the backend's error word (row-check.h), fixed for its lifetime */
    int            node;         /* the node's position in its graph, for the error word's record */
};

/*
 * true when a kernel exists for this op with these types and layouts. The device's supports_op
 * answers with this, so it must say yes only for what the launchers really compute.
 */
bool ggmlx_cuda_supports_op(const struct ggml_tensor * node);

/*
 * true for a node a graph compute passes over: views (no kernel), nodes not flagged for compute,
 * and empty tensors. The backend and the kernel emulator's EMU0 skip the same nodes.
 */
bool ggmlx_cuda_node_skipped(const struct ggml_tensor * node);

/* Device scratch a node needs (0 for most ops). */
size_t ggmlx_cuda_scratch_size(const struct ggml_tensor * node);

/*
 * Enqueue node's computation on ex->stream. Returns GGML_STATUS_SUCCESS, or an error status
 * with a message in err (a launch or cuBLAS failure). Precondition: ggmlx_cuda_supports_op(node).
 */
enum ggml_status ggmlx_cuda_compute_node(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                         char * err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_CUDA_OPS_H */
