/*
 * ggmlx-sched.h -- ggmlx's extensions to the backend scheduler (ggml_backend_sched_*):
 * run-time control of pipeline copies, counters of what the scheduler did, and traces.
 * docs/scheduler.md explains the scheduler; everything here is prefixed ggmlx_.
 */
#pragma once

#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the most input copies a scheduler can keep (ggmlx_sched_set_n_copies) */
#define GGMLX_SCHED_MAX_COPIES 8

    /*
     * Number of slots: n computes may be in flight at once (pipeline parallelism), each with
     * its own copy of what a slot holds: the graph inputs (tensors flagged
     * GGML_TENSOR_FLAG_INPUT that the scheduler allocates) and the tensors one device passes on
     * to another. Nothing else is multiplied: other intermediate tensors and the copies made on
     * the receiving device are shared by all computes. 1 <= n_copies <=
     * GGMLX_SCHED_MAX_COPIES. Waits for queued work and takes effect at the next
     * alloc_graph; false (and a message) on a bad value.
     */
    GGML_API bool ggmlx_sched_set_n_copies(ggml_backend_sched_t sched, int n_copies);

    /* What the scheduler did since it was made or the stats were last reset. */
    struct ggmlx_sched_stats {
        uint64_t n_computes;        /* graph_compute(_async) calls that enqueued work */
        uint64_t n_splits;          /* splits enqueued, all computes together */
        uint64_t n_async_copies;    /* split inputs copied through a queue (no host wait) */
        uint64_t n_sync_fallbacks;  /* split inputs copied on the host after synchronizing both backends */
        uint64_t n_host_waits;      /* times the scheduler itself blocked the caller on queued work */
        uint64_t n_event_waits;     /* waits enqueued on a backend for another backend's event */
        uint64_t n_reallocs;        /* compute buffers (re)allocated because a graph needed more */
        uint64_t bytes_copied;      /* bytes of split inputs copied between backends */
        /* bytes of each backend's compute buffer: shared part and each input copy slot */
        size_t   compute_bytes[GGML_SCHED_MAX_BACKENDS];
        size_t   input_slot_bytes[GGML_SCHED_MAX_BACKENDS][GGMLX_SCHED_MAX_COPIES];
    };

    /* false on a NULL argument */
    GGML_API bool ggmlx_sched_get_stats(ggml_backend_sched_t sched, struct ggmlx_sched_stats * stats);
    GGML_API void ggmlx_sched_reset_stats(ggml_backend_sched_t sched);

    /*
     * Record a Chrome/Perfetto trace (JSON, chrome://tracing or ui.perfetto.dev) of every
     * split, copy, wait and compute, one track per backend queue, timed by the queues
     * themselves when the work runs. The file is written when tracing stops: on
     * ggmlx_sched_set_trace(sched, NULL), and on ggml_backend_sched_free. The environment
     * variable GGMLX_SCHED_TRACE=file.json starts a trace in every new scheduler.
     * false (and a message) when the file cannot be opened.
     */
    GGML_API bool ggmlx_sched_set_trace(ggml_backend_sched_t sched, const char * path);

#ifdef __cplusplus
}
#endif
