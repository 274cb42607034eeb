/*
 * sched-impl.h -- the backend scheduler's state, shared by its files:
 *   sched.c          creation, getters, reset, the extensions of ggmlx-sched.h
 *   sched-split.c    placing nodes on backends and cutting the graph into splits
 *   sched-alloc.c    input slots, compute buffers, reserve and alloc_graph
 *   sched-compute.c  enqueueing splits, copies and the events that order them
 *   sched-trace.c    the Chrome/Perfetto trace
 *   sched-debug.c    GGML_SCHED_DEBUG printing
 * Internal to libggml-base.
 */
#ifndef GGMLX_SCHED_IMPL_H
#define GGMLX_SCHED_IMPL_H

#include "ggml-backend-impl.h"
#include "ggml-alloc.h"
#include "ggmlx-sched.h"
#include "ggmlx.h"
#include "ggmlx-backend.h"
#include "alloc/ptr-map.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Marks tensors whose memory the scheduler handed out, so a later split re-places them. */
#define GGMLX_TENSOR_FLAG_SCHED_ALLOC (1 << 30)

/*
 * A graph input in the caller's own memory (root of a view chain): the caller may rewrite it
 * after the next alloc_graph, so no queued work may read it later than that (docs/scheduler.md).
 */
static inline bool ggmlx_sched_is_caller_input(const struct ggml_tensor * root) {
    return (root->flags & GGML_TENSOR_FLAG_INPUT) && root->data != NULL &&
           !(root->flags & GGMLX_TENSOR_FLAG_SCHED_ALLOC);
}

/* Why a node went to its backend (GGML_SCHED_DEBUG=2 prints it). */
enum sched_cause {
    CAUSE_NONE = 0,
    CAUSE_USER,      /* ggml_backend_sched_set_tensor_backend */
    CAUSE_BUFFER,    /* pre-allocated: the backend of its buffer */
    CAUSE_INPUT,     /* a graph input: the last (CPU) backend */
    CAUSE_WEIGHT,    /* a source in a weights buffer */
    CAUSE_OFFLOAD,   /* op_offload moved an op on host weights to a device */
    CAUSE_EXPAND_GPU,/* pass 2, next to a node on a non-CPU backend */
    CAUSE_EXPAND,    /* pass 2, next to any assigned node */
    CAUSE_SOURCES,   /* pass 3, the backend most of its sources are on */
    CAUSE_UPGRADE,   /* pass 3, a higher-priority backend on the same buffer type */
    CAUSE_VIEW,      /* pass 4, the backend of the tensor it views */
    CAUSE_FALLBACK,  /* pass 4, the first backend that supports it */
};

/* Per-tensor state of the graph being split, indexed by hash slot. */
struct sched_tinfo {
    int8_t backend; /* -1: not assigned */
    int8_t cause;   /* enum sched_cause */
    bool   user;    /* assigned by set_tensor_backend: never moved */
    bool   graph_input; /* counted in sched->graph_inputs */
    bool   written;     /* a node of the graph writes this memory (the root of a view chain) */
    int    last_write;  /* index of the last node that writes it (roots only) */
    bool   allocated;   /* unallocated before the split: the scheduler gives it memory */
};

/* Per-tensor state of the graph being split: tensor -> dense index into tinfo. */
struct sched_table {
    struct ggmlx_ptr_map map;
    int32_t              n;          /* tensors seen, in order of first sight */
    size_t               tinfo_cap;
};

/* A tensor pinned with ggml_backend_sched_set_tensor_backend. */
struct sched_pin {
    struct ggml_tensor * tensor;
    int                  backend;
};

/* ops that compute nothing: their result is a view of their source */
static inline bool ggmlx_is_view_op(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

/* A source one split needs from another backend (or a graph input put in a slot). */
struct sched_input {
    struct ggml_tensor * src;      /* the tensor on its own backend */
    struct ggml_tensor * dst;      /* its copy on the split's backend */
    int                  src_backend;
    int                  dst_backend;
    int                  first_node;   /* the node that needed it first (later splits reuse the copy) */
    bool                 slotted;      /* src is in slot memory: no later compute overwrites it early */
    bool                 from_caller;  /* src is a graph input in the caller's own memory: read it at once */
};

/* A source node->src[j] rewritten to a copy while the scheduler works on the graph. */
struct sched_rewrite {
    struct ggml_tensor * node;
    int                  j;
    struct ggml_tensor * original;
    struct ggml_tensor * copy;
};

/* A run of consecutive nodes of the user's graph on one backend. */
struct sched_split {
    int                  backend;
    int                  i_start, i_end;   /* nodes [i_start, i_end) of the user's graph */
    int                  input_begin;      /* its copies: sched->inputs[input_begin, input_begin + n_inputs) */
    int                  n_inputs;
    uint32_t             reads_from;       /* backends whose compute memory it reads without a copy */
    struct ggml_cgraph * graph;            /* view of the user's graph (in sched->ctx) */
};

/* One pipeline slot's memory for graph inputs on one backend. */
struct sched_slot_buffer {
    ggml_backend_buffer_t buffer;
    size_t                used;
};

/* Host memory for copies that bounce through the host (neither side can reach the other). */
struct sched_staging {
    ggml_backend_buffer_t   buffer;
    size_t                  used;
    ggml_backend_buffer_t * retired;   /* outgrown, still read by queued copies until the slot is idle */
    int                     n_retired, retired_cap;
};

/* How copies between backends are made; GGMLX_SCHED_COPY=bounce|sync forces a way (tests). */
enum sched_copy_mode {
    SCHED_COPY_BEST = 0,
    SCHED_COPY_BOUNCE,
    SCHED_COPY_SYNC,
};

struct sched_trace; /* sched-trace.c */

struct ggml_backend_sched {
    int                        n_backends;
    ggml_backend_t             backends[GGML_SCHED_MAX_BACKENDS];
    bool                       backend_gone[GGML_SCHED_MAX_BACKENDS]; /* freed before the scheduler */
    ggml_backend_buffer_type_t bufts[GGML_SCHED_MAX_BACKENDS];
    ggml_gallocr_t             galloc;
    bool                       op_offload;
    bool                       parallel;
    int                        debug;          /* GGML_SCHED_DEBUG */
    size_t                     graph_size;

    /* the graph being split: per-tensor info in a hash keyed by tensor pointer */
    struct sched_table         table;          /* tensor -> slot of tinfo */
    struct sched_tinfo       * tinfo;          /* [table.n], in order of first sight */
    int32_t                  * node_slots;     /* per node: its slot and its sources' (-1 none) */
    int                        node_slots_cap;
    struct ggml_cgraph       * graph;          /* the user's graph last split */
    struct sched_pin         * pins;
    int                        n_pins, pins_cap;

    struct sched_split       * splits;
    int                        n_splits, splits_cap;
    struct sched_input       * inputs;         /* copies of every split, split after split */
    int                        n_inputs, inputs_cap;
    struct sched_rewrite     * rewrites;
    int                        n_rewrites, rewrites_cap;
    struct ggml_tensor      ** graph_inputs;   /* user inputs and copied tensors, allocated in slots */
    int                        n_graph_inputs, graph_inputs_cap;
    bool                       rewritten;      /* rewrites are applied to the user's graph now */

    /* the graph given to the allocator: every split's copies, then its nodes */
    struct ggml_cgraph       * alloc_graph;
    int                      * node_ids;       /* backend of alloc_graph->nodes[i] */
    int                      * leaf_ids;
    int                        ids_cap, leaf_ids_cap;

    struct ggml_context      * ctx;            /* copy tensors and split views; remade per split */
    void                     * ctx_mem;
    size_t                     ctx_mem_size;

    /* pipeline slots for graph inputs */
    int                        n_copies;       /* in use */
    int                        n_copies_next;  /* takes effect at the next alloc */
    int                        cur_copy, next_copy;
    struct sched_slot_buffer   slot_bufs[GGML_SCHED_MAX_BACKENDS][GGMLX_SCHED_MAX_COPIES];
    struct sched_staging       staging[GGMLX_SCHED_MAX_COPIES];
    enum sched_copy_mode       copy_mode;
    bool                       slot_busy[GGMLX_SCHED_MAX_COPIES]; /* a compute of this slot may be queued */
    uint32_t                   slot_backends[GGMLX_SCHED_MAX_COPIES]; /* backends it used */
    /* the last compute read inputs in the caller's own memory in place on these backends (of
     * its slot caller_read_slot): the next alloc_graph, after which the caller rewrites inputs,
     * waits for them */
    uint32_t                   caller_readers;
    int                        caller_read_slot;

    /* buffers the scheduler owns or owned (values only, never dereferenced once retired) */
    ggml_backend_buffer_t    * own_buffers;
    int                        n_own_buffers, own_buffers_cap;

    /* ordering between queues (docs/scheduler.md, "Ordering") */
    ggml_backend_event_t       ev_progress[GGML_SCHED_MAX_BACKENDS]; /* recorded on demand: all work so far */
    ggml_backend_event_t       ev_reads[GGML_SCHED_MAX_BACKENDS];    /* after work that read other backends' memory */
    ggml_backend_event_t       ev_slot[GGML_SCHED_MAX_BACKENDS][GGMLX_SCHED_MAX_COPIES]; /* end of a slot's compute */
    uint32_t                   pending_read[GGML_SCHED_MAX_BACKENDS]; /* backends that may still read b's memory */

    uint64_t                   fingerprint;    /* structure of the allocator's graph (never 0) */
    bool                       is_reset, is_alloc;
    bool                       split_ok;       /* the last split succeeded */

    ggml_backend_sched_eval_callback callback_eval;
    void                           * callback_eval_user_data;

    struct ggmlx_sched_stats   stats;
    struct sched_trace       * trace;          /* NULL when not tracing */
};

/* ---- sched.c ------------------------------------------------------------------------------- */

/* index of backend in sched, -1 when not one of its backends */
int  ggmlx_sched_backend_id(const struct ggml_backend_sched * sched, ggml_backend_t backend);
/* a buffer the scheduler allocated (now or before: compared by value only) */
bool ggmlx_sched_owns_buffer(const struct ggml_backend_sched * sched, ggml_backend_buffer_t buffer);
bool ggmlx_sched_add_own_buffer(struct ggml_backend_sched * sched, ggml_backend_buffer_t buffer);
/* a buffer some live scheduler allocated (now or before) */
bool ggmlx_sched_buffer_is_live(ggml_backend_buffer_t buffer);

/* ---- sched-split.c ------------------------------------------------------------------------- */

/* Place every node and build the splits and the allocator's graph; false (error set) on failure. */
bool ggmlx_sched_split(struct ggml_backend_sched * sched, struct ggml_cgraph * graph, const char * func);
/* Point rewritten sources at their copies (apply) or back at the originals (restore). */
void ggmlx_sched_apply_rewrites(struct ggml_backend_sched * sched);
void ggmlx_sched_restore_rewrites(struct ggml_backend_sched * sched);
/* t's index in tinfo for the last split, -1 when it was not part of it */
int32_t ggmlx_sched_find(const struct ggml_backend_sched * sched, const struct ggml_tensor * t);
/* the backend a tensor was assigned, -1 none */
int  ggmlx_sched_tensor_backend_id(const struct ggml_backend_sched * sched, const struct ggml_tensor * t);
/* forget the last graph's assignments (not the pins) */
void ggmlx_sched_clear_assignments(struct ggml_backend_sched * sched);

/* ---- sched-alloc.c ------------------------------------------------------------------------- */

/* Wait (host) until no queued compute of slot c remains; counts a host wait when it blocks. */
void ggmlx_sched_wait_slot(struct ggml_backend_sched * sched, int c);
/* Every queue idle, all slots free (host wait, counted unless counted == false). */
void ggmlx_sched_sync_all(struct ggml_backend_sched * sched, bool counted);
enum ggml_status ggmlx_sched_alloc(struct ggml_backend_sched * sched, struct ggml_cgraph * graph, const char * func);
bool ggmlx_sched_reserve(struct ggml_backend_sched * sched, struct ggml_cgraph * graph, size_t * sizes_only,
                         const char * func);
void ggmlx_sched_free_slots(struct ggml_backend_sched * sched);
/* Free staging buffers outgrown by slot c (all = true: every buffer of the slot); the slot must be idle. */
void ggmlx_sched_release_staging(struct ggml_backend_sched * sched, int c, bool all);

/* ---- sched-compute.c ----------------------------------------------------------------------- */

enum ggml_status ggmlx_sched_compute_splits(struct ggml_backend_sched * sched);

/* ---- sched-trace.c ------------------------------------------------------------------------- */

/*
 * A trace records spans on tracks (one per backend queue, plus one for the host). A span's
 * begin and end times come from ggmlx_backend_queue_mark(): the queue writes the time when it
 * reaches the mark; times are read when the trace is written, after every queue is idle.
 */
struct sched_trace * ggmlx_sched_trace_open(const char * path, const char * const * track_names, int n_tracks);
/* Begin a span on track (a backend id, or n_tracks - 1 for the host); returns its handle, -1 when full. */
int   ggmlx_sched_trace_begin(struct sched_trace * tr, int track, ggml_backend_t queue, const char * name,
                              const char * category, int split, int copy_slot);
void  ggmlx_sched_trace_end(struct sched_trace * tr, int span, ggml_backend_t queue);
/* Write the JSON file and free; the queues must be idle. false when writing failed. */
bool  ggmlx_sched_trace_close(struct sched_trace * tr);

/* ---- sched-debug.c ------------------------------------------------------------------------- */

const char * ggmlx_sched_cause_name(enum sched_cause cause);
/* GGML_SCHED_DEBUG=1: one line per split with its inputs; 2: every node with its backend and cause */
void ggmlx_sched_print_splits(const struct ggml_backend_sched * sched);

#endif /* GGMLX_SCHED_IMPL_H */
