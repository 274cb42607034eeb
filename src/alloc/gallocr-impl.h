/*
 * gallocr-impl.h -- the graph allocator's state, shared by gallocr.c (buffers, public calls) and
 * gallocr-plan.c (running a graph through the offset allocators to plan every address).
 * Internal to libggml-base.
 */
#ifndef GGMLX_GALLOCR_IMPL_H
#define GGMLX_GALLOCR_IMPL_H

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "dyn-tallocr.h"
#include "ptr-map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where one tensor goes. buffer_id -1: not placed by us (it has data already, or is a view). */
struct ggmlx_tensor_plan {
    int               buffer_id;
    struct ggmlx_addr addr;
    size_t            size_max; /* bytes reserved for it: a later graph's tensor must fit */
};

struct ggmlx_node_plan {
    struct ggmlx_tensor_plan dst;
    struct ggmlx_tensor_plan src[GGML_MAX_SRC];
};

/* The addresses of one graph, node by node, and the graph's shape to recognise it again. */
struct ggmlx_gplan {
    int                        n_nodes;
    int                        n_leafs;
    struct ggmlx_node_plan   * nodes;
    struct ggmlx_tensor_plan * leafs;
    uint64_t                   fingerprint;
};

/* Per-tensor state while planning, in an open-addressing table keyed by tensor pointer. */
struct ggmlx_sim_entry {
    const struct ggml_tensor * key;
    int                        n_children;   /* consumers not yet run */
    int                        n_views;      /* views (graph nodes) not yet done with it */
    int                        buffer_id;
    int                        index;        /* position in the graph, for fingerprints */
    struct ggmlx_addr          addr;
    size_t                     size;         /* bytes reserved at addr */
    bool                       placed;       /* has an address */
    bool                       own;          /* holds its memory now (not freed, not handed on) */
    bool                       view_counted; /* a view counted in its source's n_views */
};

struct ggmlx_sim_map {
    struct ggmlx_sim_entry * slots;
    size_t                   cap; /* a power of two, 0 before first use */
};

/* A graph's memory in one buffer type: one backend buffer per allocator chunk. */
struct ggmlx_vbuffer {
    int                   n_chunks;
    ggml_backend_buffer_t chunks[GGMLX_VBUFFER_MAX_CHUNKS];
};

struct ggml_gallocr {
    int                          n_bufs;
    ggml_backend_buffer_type_t * bufts;
    int                        * owner;   /* owner[i]: the first id with the same buffer type */
    struct ggmlx_dyn_tallocr   * tallocs; /* used at owner ids only */
    struct ggmlx_vbuffer       * vbufs;   /* used at owner ids only */
    struct ggmlx_gplan           plan;    /* the plan the buffers are sized for */
    bool                         planned;
    struct ggmlx_sim_map         map;     /* scratch for planning */
    struct ggmlx_ptr_map         fmap;    /* scratch for fingerprints: tensor -> position */
    uint64_t                     fp_override; /* non-zero: the caller's fingerprint of the graph */
    /* alloc_graph of an unplanned graph returns false with no error (a caller's gallocr of
     * several buffers gets one) even with one buffer: the scheduler plans and grows itself,
     * after the queues that may use the old buffers are idle */
    bool                         no_auto_reserve;
};

/*
 * Plan graph into *out (fresh arrays; free with ggmlx_gplan_free). Resets and uses g's offset
 * allocators, whose chunk sizes then say how large each buffer must be. false (error recorded
 * under func) on bad buffer ids or when host memory ran out.
 */
bool ggmlx_gallocr_plan(struct ggml_gallocr * g, struct ggml_cgraph * graph, const int * node_ids,
                        const int * leaf_ids, struct ggmlx_gplan * out, const char * func);

/* A hash of the graph's structure (ops, flags, which tensor feeds which); false when out of host memory. */
bool ggmlx_gallocr_fingerprint(struct ggml_gallocr * g, struct ggml_cgraph * graph, uint64_t * out);
/* which sources an in-place op could share memory with (part of a fingerprint) */
uint32_t ggmlx_gallocr_inplace_bits(const struct ggml_tensor * t);

/*
 * Use fp (non-zero) as the fingerprint of the graphs given from now on, instead of computing
 * one; 0 goes back to computing. The caller vouches that fp identifies the graph's structure
 * (ops, flags, which tensor feeds which, in-place bits) and that every source of a node is a
 * node or leaf of the graph. The scheduler knows both from its split at no extra cost.
 */
static inline void ggmlx_gallocr_set_fingerprint(struct ggml_gallocr * g, uint64_t fp) {
    g->fp_override = fp;
}

/* after a fingerprint: is t a node or leaf of the graph it was taken of? */
bool ggmlx_gallocr_in_fingerprint(const struct ggml_gallocr * g, const struct ggml_tensor * t);

void ggmlx_gplan_free(struct ggmlx_gplan * plan);

/* ---- for the scheduler (src/sched) ---------------------------------------------------------- */

/*
 * Plan graph and adopt the plan only when it fits the buffers as they are: *fits tells which.
 * Nothing is allocated or freed, so queued work that uses the buffers is not disturbed.
 * false (error recorded under func) when planning failed.
 */
bool ggmlx_gallocr_plan_in_place(struct ggml_gallocr * g, struct ggml_cgraph * graph, const int * node_ids,
                                 const int * leaf_ids, bool * fits, const char * func);

/* Every backend buffer the allocator holds now, through fn. */
void ggmlx_gallocr_foreach_buffer(const struct ggml_gallocr * g, void (*fn)(ggml_backend_buffer_t, void *), void * user);

#endif /* GGMLX_GALLOCR_IMPL_H */
