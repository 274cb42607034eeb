/*
 * ggmlx.h -- ggmlx's own extensions to the ggml API: the error contract and graph helpers.
 * Everything here is prefixed ggmlx_ so it can never collide with a future upstream name.
 */
#pragma once

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

    /*
     * The message of the last error on the calling thread, or NULL when the last call of the
     * library on this thread succeeded. The text stays valid until the next library call on the
     * same thread. Errors in queued work on worker threads are not reported here but through
     * the status of the next compute (docs/async.md).
     */
    GGML_API const char * ggmlx_last_error(void);

    /* Forget the calling thread's last error. */
    GGML_API void ggmlx_clear_last_error(void);

    /*
     * A context is failed once an op constructor on it failed: later constructors and
     * ggml_new_graph() on it return NULL. ggml_reset() clears the mark.
     */
    GGML_API bool ggmlx_context_is_failed(const struct ggml_context * ctx);

    /* A graph is failed when a NULL or failed tensor was added to it; computing it fails. */
    GGML_API bool ggmlx_graph_is_failed(const struct ggml_cgraph * cgraph);

    /*
     * A graph of nodes [i0, i1) of cgraph, sharing cgraph's node array (upstream keeps this
     * internal as ggml_graph_view). The view is allocated in ctx, lives as long as both ctx and
     * cgraph, and cannot be expanded. NULL on bad bounds.
     */
    GGML_API struct ggml_cgraph * ggmlx_graph_view(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int i0, int i1);

    /* Identity of the graph's current contents: changes whenever a node is added or removed. */
    GGML_API uint64_t ggmlx_graph_uid(const struct ggml_cgraph * cgraph);

    /* Short description of how this library was built (version, CPU features, CUDA, sanitizers). */
    GGML_API const char * ggmlx_build_info(void);

#ifdef __cplusplus
}
#endif
