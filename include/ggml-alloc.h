/*
 * ggml-alloc.h -- placing tensors in backend buffers: a linear allocator (tallocr) and a graph
 * allocator (gallocr) that reuses memory between nodes whose lifetimes do not overlap.
 * Compatible with upstream ggml's ggml-alloc.h (2026-08-21).
 */
#pragma once

#include "ggml.h"

#ifdef __cplusplus
extern "C" {
#endif

    typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
    typedef struct ggml_backend_buffer      * ggml_backend_buffer_t;
    typedef struct ggml_backend             * ggml_backend_t;

    /* Linear allocator: tensors one after the other in one buffer, never freed individually. */
    struct ggml_tallocr {
        ggml_backend_buffer_t buffer;
        void * base;
        size_t alignment;
        size_t offset;
    };

    GGML_API struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer);
    /* GGML_STATUS_ALLOC_FAILED when the buffer is full (the allocator is left unchanged) */
    GGML_API enum ggml_status    ggml_tallocr_alloc(struct ggml_tallocr * talloc, struct ggml_tensor * tensor);

    /*
     * Graph allocator: plans where every node of a graph lives so that memory is reused once a
     * tensor's last consumer has run; inputs (GGML_TENSOR_FLAG_INPUT) get their own space and
     * outputs (GGML_TENSOR_FLAG_OUTPUT) are never overwritten. Tensors that already have data
     * (weights) and views are left alone.
     *
     * Usage:
     *   gallocr = ggml_gallocr_new(buft);
     *   ggml_gallocr_reserve(gallocr, worst_case_graph);  (optional: avoids reallocations)
     *   for each graph: ggml_gallocr_alloc_graph(gallocr, graph); compute
     *   ggml_gallocr_free(gallocr);
     */

    typedef struct ggml_gallocr * ggml_gallocr_t;

    GGML_API ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft);
    GGML_API ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs);
    GGML_API void           ggml_gallocr_free(ggml_gallocr_t galloc);

    /*
     * Pre-allocate buffers big enough for graph; with several buffers, node_buffer_ids and
     * leaf_buffer_ids say which buffer each node and leaf goes to. false when a buffer cannot
     * be allocated: the allocator keeps its previous buffers and stays usable.
     */
    GGML_API bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph);
    GGML_API bool ggml_gallocr_reserve_n(
        ggml_gallocr_t galloc,
        struct ggml_cgraph * graph,
        const int * node_buffer_ids,
        const int * leaf_buffer_ids);
    /* the sizes reserve_n would allocate, per buffer, without allocating */
    GGML_API void ggml_gallocr_reserve_n_size(
        ggml_gallocr_t galloc,
        struct ggml_cgraph * graph,
        const int * node_buffer_ids,
        const int * leaf_buffer_ids,
        size_t * sizes);

    /*
     * Give every node of graph its memory. With one buffer, grows it automatically when the
     * graph needs more; with several, returns false with an error if the graph differs from the
     * reserved one or outgrew it (call reserve_n with it first); nothing is allocated then.
     */
    GGML_API bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph);

    GGML_API size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id);

    /* Allocate every unallocated tensor of ctx in one (or, past max_size, several) buffer(s). */
    GGML_API size_t                       ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context * ctx, ggml_backend_buffer_type_t buft);
    GGML_API struct ggml_backend_buffer * ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx, ggml_backend_buffer_type_t buft);
    GGML_API struct ggml_backend_buffer * ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend);

#ifdef __cplusplus
}
#endif
