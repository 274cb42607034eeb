/*
 * ggmlx-backend.h -- ggmlx's extensions to the backend API: queue status and test hooks.
 */
#pragma once

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

    /*
     * Errors in queued work are sticky per queue (docs/async.md rule 8): the first one is kept
     * and returned by the next ggml_backend_graph_compute / synchronizing call. Reading it does
     * not clear it; clearing makes the queue usable again.
     */
    GGML_API enum ggml_status ggmlx_backend_get_status(ggml_backend_t backend);
    GGML_API void             ggmlx_backend_clear_status(ggml_backend_t backend);

    /*
     * Deterministic interleavings for tests: while held, a CPU or SIM queue runs nothing more
     * (enqueueing still works); release lets it continue. false for backends without a host
     * queue (CUDA) or in the CPU's "sync" mode.
     */
    GGML_API bool ggmlx_backend_queue_hold(ggml_backend_t backend);
    GGML_API bool ggmlx_backend_queue_release(ggml_backend_t backend);

    /* Number of tasks enqueued and not yet finished on a host queue (0 for other backends). */
    GGML_API size_t ggmlx_backend_queue_pending(ggml_backend_t backend);

    /*
     * Backends this process found but cannot use, and why: first the modules that
     * ggml_backend_load_all left out (a library missing, such as libcublas, or no device:
     * "no CUDA device (cudaErrorInsufficientDriver: ...)"), then the registered registries with
     * no device that can say why (CUDA linked in, on a machine without a GPU or driver).
     * Entry i (from 0) is copied into name ("CUDA") and why; false past the last entry.
     */
    GGML_API bool ggmlx_backend_unavailable(size_t i, char * name, size_t name_size, char * why, size_t why_size);

#ifdef __cplusplus
}
#endif
