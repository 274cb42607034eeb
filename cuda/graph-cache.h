/*
 * graph-cache.h -- when a CUDA backend may replay a captured CUDA graph instead of launching a
 * compute's kernels one by one (docs/architecture.md §7). Plain C (no CUDA headers): the executable graphs
 * are opaque pointers here, made and destroyed by cuda-graph.c, so tests/test-cuda-graph-cache.c
 * checks every decision on a machine without a GPU.
 *
 * A compute is described by a signature: for every node its op, type, flags, shape, strides,
 * data pointer and op parameters, and the same of each source, plus a few words of the
 * backend's own (its scratch block, which captured kernels point into). A replay is only ever
 * chosen for a signature equal word for word to the one captured; anything that differs is
 * another entry, launched plainly until it has been seen again (the warm-up: the first run of
 * a graph may load modules or set up cuBLAS, which a capture must not contain).
 */
#ifndef GGMLX_CUDA_GRAPH_CACHE_H
#define GGMLX_CUDA_GRAPH_CACHE_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* entries per backend: a few splits times the scheduler's copy slots */
#define GGMLX_CUDA_GRAPH_CACHE_SIZE 16
/* identical computes launched plainly before the next one is captured (at least 1) */
#define GGMLX_CUDA_GRAPH_WARMUP 1
/* words of the backend's own in a signature */
#define GGMLX_CUDA_GRAPH_EXTRA 2

enum ggmlx_cuda_graph_action {
    GGMLX_CUDA_GRAPH_PLAIN,   /* launch the kernels one by one */
    GGMLX_CUDA_GRAPH_CAPTURE, /* launch them inside a capture, then launch what was captured */
    GGMLX_CUDA_GRAPH_REPLAY,  /* launch the entry's executable graph */
};

/* counts of lookups by outcome, for benchmarks and tests (ggmlx_backend_cuda_graph_stats) */
struct ggmlx_cuda_graph_stats {
    uint64_t n_plain;
    uint64_t n_capture;
    uint64_t n_replay;
    uint64_t n_failed; /* captures that failed and fell back to plain launches */
};

struct ggmlx_cuda_graph_entry {
    uint64_t   key[3];    /* first node, last node, node count: a cheap first filter */
    uint64_t * sig;
    size_t     n_sig;
    size_t     cap_sig;
    uint64_t   last_use;  /* 0: the entry is free */
    int        seen;      /* identical computes so far */
    bool       failed;    /* capturing this signature failed: plain launches until evicted */
    bool       ready;     /* exec was captured from this signature */
    void     * exec;      /* the owner's executable graph; when not ready, a stale one to update */
};

struct ggmlx_cuda_graph_cache {
    struct ggmlx_cuda_graph_entry entries[GGMLX_CUDA_GRAPH_CACHE_SIZE];
    uint64_t                      tick;
    uint64_t                    * work; /* the signature being built */
    size_t                        work_cap;
    void                       (* destroy)(void * exec, void * user);
    void                        * user;
    struct ggmlx_cuda_graph_stats stats;
};

/* GGML_CUDA_DISABLE_GRAPHS as upstream reads it: set at all (any value) turns graphs off */
bool ggmlx_cuda_graphs_disabled(const char * env);

/* destroy(exec, user) releases an executable graph the cache drops */
void ggmlx_cuda_graph_cache_init(struct ggmlx_cuda_graph_cache * c, void (*destroy)(void * exec, void * user),
                                 void * user);
void ggmlx_cuda_graph_cache_free(struct ggmlx_cuda_graph_cache * c);

/*
 * What to do with graph (extra: GGMLX_CUDA_GRAPH_EXTRA words of the backend's). *entry is the
 * entry to capture into or replay (valid until the next call), NULL with PLAIN when there is
 * nothing to cache (an empty graph, or no host memory for the signature).
 */
enum ggmlx_cuda_graph_action ggmlx_cuda_graph_cache_lookup(struct ggmlx_cuda_graph_cache * c,
                                                           const struct ggml_cgraph * graph,
                                                           const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA],
                                                           struct ggmlx_cuda_graph_entry ** entry);

/* after CAPTURE: exec now belongs to the entry (a different stale one is destroyed) */
void ggmlx_cuda_graph_cache_captured(struct ggmlx_cuda_graph_cache * c, struct ggmlx_cuda_graph_entry * e,
                                     void * exec);
/* after a failed CAPTURE or REPLAY: the entry's exec is destroyed, and it launches plainly from now */
void ggmlx_cuda_graph_cache_failed(struct ggmlx_cuda_graph_cache * c, struct ggmlx_cuda_graph_entry * e);

#endif /* GGMLX_CUDA_GRAPH_CACHE_H */
