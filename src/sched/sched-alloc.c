/*
 * sched-alloc.c -- the scheduler's memory: input slots, compute buffers, reserve and alloc.
 *
 * Two kinds of memory, chosen by who writes it:
 *   - graph inputs are written by the host (ggml_backend_tensor_set) between alloc_graph and
 *     compute, and the tensors a device passes on are read by another device's queue that may
 *     lag behind. Both live in slots, one buffer per (backend, slot), and a slot is handed out
 *     again only once the compute that used it last is done. With n_copies slots, n computes
 *     can be in flight (pipeline parallelism); nothing else is multiplied.
 *   - everything else is written only by queued work: the compute buffers of ggml_gallocr,
 *     shared by all computes, whose reuse is ordered by the queues and events
 *     (sched-compute.c), so handing them out needs no host wait.
 * Buffers only grow when a graph needs more; then every queue is drained first, because the
 * old buffers are freed.
 */
#include "sched-impl.h"
#include "alloc/gallocr-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- waiting -------------------------------------------------------------------------------- */

/* the host waits until the backends in mask finished slot c's compute */
static void wait_slot_on(struct ggml_backend_sched * sched, int c, uint32_t mask) {
    for (int b = 0; b < sched->n_backends; b++) {
        if (!(mask & (1u << b))) {
            continue;
        }
        if (sched->ev_slot[b][c] != NULL) {
            ggml_backend_event_synchronize(sched->ev_slot[b][c]);
        } else {
            ggml_backend_synchronize(sched->backends[b]);
        }
    }
}

void ggmlx_sched_wait_slot(struct ggml_backend_sched * sched, int c) {
    if (!sched->slot_busy[c]) {
        return;
    }
    wait_slot_on(sched, c, sched->slot_backends[c]);
    sched->stats.n_host_waits++;
    sched->slot_busy[c]     = false;
    sched->slot_backends[c] = 0;
    ggmlx_sched_release_staging(sched, c, false);
}

/*
 * The caller rewrites graph inputs after alloc_graph. Inputs in the caller's own memory that
 * the last compute reads in place (a CPU split, say) must not change before that compute ran:
 * upstream's CPU backend computes before returning, and loops rely on it.
 */
static void wait_caller_reads(struct ggml_backend_sched * sched) {
    if (sched->caller_readers == 0) {
        return;
    }
    wait_slot_on(sched, sched->caller_read_slot, sched->caller_readers);
    sched->stats.n_host_waits++;
    sched->caller_readers = 0;
}

void ggmlx_sched_sync_all(struct ggml_backend_sched * sched, bool counted) {
    bool busy = false;
    for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
        busy = busy || sched->slot_busy[c];
        sched->slot_busy[c]     = false;
        sched->slot_backends[c] = 0;
    }
    for (int b = 0; b < sched->n_backends; b++) {
        if (!sched->backend_gone[b]) { /* a freed backend finished its queue when it was freed */
            ggml_backend_synchronize(sched->backends[b]);
        }
        sched->pending_read[b] = 0;
    }
    sched->caller_readers = 0;
    for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
        ggmlx_sched_release_staging(sched, c, false);
    }
    if (counted && busy) {
        sched->stats.n_host_waits++;
    }
}

/* ---- input slots ---------------------------------------------------------------------------- */

void ggmlx_sched_release_staging(struct ggml_backend_sched * sched, int c, bool all) {
    struct sched_staging * st = &sched->staging[c];
    for (int i = 0; i < st->n_retired; i++) {
        ggml_backend_buffer_free(st->retired[i]);
    }
    st->n_retired = 0;
    if (all) {
        ggml_backend_buffer_free(st->buffer);
        free(st->retired);
        memset(st, 0, sizeof *st);
    }
}

void ggmlx_sched_free_slots(struct ggml_backend_sched * sched) {
    for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
        ggmlx_sched_release_staging(sched, c, true);
    }
    for (int b = 0; b < GGML_SCHED_MAX_BACKENDS; b++) {
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            ggml_backend_buffer_free(sched->slot_bufs[b][c].buffer);
            sched->slot_bufs[b][c].buffer = NULL;
        }
    }
}

static size_t input_bytes(const struct ggml_backend_sched * sched, int b, const struct ggml_tensor * t) {
    const size_t align = ggml_backend_buft_get_alignment(sched->bufts[b]);
    const size_t size  = ggml_backend_buft_get_alloc_size(sched->bufts[b], t);
    return align > 1 ? (size + align - 1) / align * align : size;
}

static void inputs_per_backend(struct ggml_backend_sched * sched, size_t * need) {
    memset(need, 0, GGML_SCHED_MAX_BACKENDS * sizeof *need);
    for (int i = 0; i < sched->n_graph_inputs; i++) {
        const int b = ggmlx_sched_tensor_backend_id(sched, sched->graph_inputs[i]);
        need[b] += input_bytes(sched, b, sched->graph_inputs[i]);
    }
}

/* slot c on backend b holds at least need bytes; the slot must be idle */
static bool slot_reserve(struct ggml_backend_sched * sched, int b, int c, size_t need, const char * func) {
    struct sched_slot_buffer * sb = &sched->slot_bufs[b][c];
    if (need == 0 || (sb->buffer != NULL && ggml_backend_buffer_get_size(sb->buffer) >= need)) {
        return true;
    }
    ggml_backend_buffer_free(sb->buffer);
    sb->buffer = ggml_backend_buft_alloc_buffer(sched->bufts[b], need);
    if (sb->buffer == NULL || !ggmlx_sched_add_own_buffer(sched, sb->buffer)) {
        ggml_backend_buffer_free(sb->buffer);
        sb->buffer = NULL;
        ggmlx_error(func, "cannot allocate %zu bytes for the graph inputs (slot %d) on %s", need, c,
                    ggml_backend_name(sched->backends[b]));
        return false;
    }
    ggml_backend_buffer_set_usage(sb->buffer, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    sched->stats.n_reallocs++;
    return true;
}

/*
 * After a failed alloc: the slots of c are put back at the sizes they had (had[b] bytes, 0 for
 * none) and the graph inputs lose the memory they were given, so a failure holds no more device
 * memory than before the call (docs/architecture.md §4). The slot is idle (alloc waited for it).
 */
static void slots_restore(struct ggml_backend_sched * sched, int c, const size_t * had) {
    for (int i = 0; i < sched->n_graph_inputs; i++) {
        struct ggml_tensor * t = sched->graph_inputs[i];
        if (t->flags & GGMLX_TENSOR_FLAG_SCHED_ALLOC) {
            t->data   = NULL;
            t->buffer = NULL;
            t->flags &= ~GGMLX_TENSOR_FLAG_SCHED_ALLOC;
        }
    }
    for (int b = 0; b < sched->n_backends; b++) {
        struct sched_slot_buffer * sb = &sched->slot_bufs[b][c];
        const size_t now = sb->buffer != NULL ? ggml_backend_buffer_get_size(sb->buffer) : 0;
        if (now == had[b]) {
            continue;
        }
        ggml_backend_buffer_free(sb->buffer);
        sb->buffer = had[b] > 0 ? ggml_backend_buft_alloc_buffer(sched->bufts[b], had[b]) : NULL;
        if (sb->buffer != NULL && !ggmlx_sched_add_own_buffer(sched, sb->buffer)) {
            ggml_backend_buffer_free(sb->buffer);
            sb->buffer = NULL;
        }
        if (sb->buffer != NULL) {
            ggml_backend_buffer_set_usage(sb->buffer, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
        }
    }
}

static bool place_inputs(struct ggml_backend_sched * sched, int c, const char * func) {
    size_t need[GGML_SCHED_MAX_BACKENDS], off[GGML_SCHED_MAX_BACKENDS] = { 0 };
    inputs_per_backend(sched, need);
    for (int b = 0; b < sched->n_backends; b++) {
        if (!slot_reserve(sched, b, c, need[b], func)) {
            return false;
        }
    }
    for (int i = 0; i < sched->n_graph_inputs; i++) {
        struct ggml_tensor * t = sched->graph_inputs[i];
        const int b = ggmlx_sched_tensor_backend_id(sched, t);
        ggml_backend_buffer_t buf = sched->slot_bufs[b][c].buffer;
        if (ggml_backend_tensor_alloc(buf, t, (char *) ggml_backend_buffer_get_base(buf) + off[b]) != GGML_STATUS_SUCCESS) {
            return false;
        }
        t->flags |= GGMLX_TENSOR_FLAG_SCHED_ALLOC;
        off[b] += input_bytes(sched, b, t);
    }
    return true;
}

/* ---- compute buffers ------------------------------------------------------------------------ */

static void own_cb(ggml_backend_buffer_t buffer, void * user) {
    ggmlx_sched_add_own_buffer(user, buffer);
}

static bool alloc_compute_fp(struct ggml_backend_sched * sched, struct ggml_cgraph * a, const char * func) {
    /* with one backend the allocator would grow its buffer itself, under queued work */
    sched->galloc->no_auto_reserve = true;
    ggmlx_clear_last_error();
    if (!ggml_gallocr_alloc_graph(sched->galloc, a)) {
        if (ggmlx_last_error() != NULL) {
            return false;
        }
        /* another graph than the one planned: plan it, and grow the buffers only when needed */
        bool fits = false;
        if (!ggmlx_gallocr_plan_in_place(sched->galloc, a, sched->node_ids, sched->leaf_ids, &fits, func)) {
            return false;
        }
        if (!fits) {
            /* the old buffers are freed: nothing queued may still use them */
            ggmlx_sched_sync_all(sched, true);
            sched->stats.n_reallocs++;
            if (!ggml_gallocr_reserve_n(sched->galloc, a, sched->node_ids, sched->leaf_ids)) {
                return false;
            }
        }
        if (!ggml_gallocr_alloc_graph(sched->galloc, a)) {
            return false;
        }
    }
    ggmlx_gallocr_foreach_buffer(sched->galloc, own_cb, sched);
    return true;
}

static bool alloc_compute(struct ggml_backend_sched * sched, const char * func) {
    struct ggml_cgraph * a = sched->alloc_graph;
    ggmlx_gallocr_set_fingerprint(sched->galloc, sched->fingerprint);
    const bool ok = alloc_compute_fp(sched, a, func);
    ggmlx_gallocr_set_fingerprint(sched->galloc, 0);
    return ok;
}

static void mark_own(struct ggml_backend_sched * sched, struct ggml_tensor * t) {
    if (t->buffer != NULL && ggmlx_sched_owns_buffer(sched, t->buffer)) {
        t->flags |= GGMLX_TENSOR_FLAG_SCHED_ALLOC;
    }
}

static void mark_allocations(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_leafs; i++) {
        mark_own(sched, g->leafs[i]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        mark_own(sched, g->nodes[i]);
    }
}

static void switch_copies(struct ggml_backend_sched * sched) {
    if (sched->n_copies_next == sched->n_copies) {
        return;
    }
    /* slots of the old count may still be read by queued work */
    ggmlx_sched_sync_all(sched, false);
    ggmlx_sched_free_slots(sched);
    sched->n_copies  = sched->n_copies_next;
    sched->next_copy = 0;
}

enum ggml_status ggmlx_sched_alloc(struct ggml_backend_sched * sched, struct ggml_cgraph * g, const char * func) {
    switch_copies(sched);
    const int c = sched->next_copy;
    int span = sched->trace ? ggmlx_sched_trace_begin(sched->trace, sched->n_backends, NULL, "alloc", "host", -1, c) : -1;

    ggmlx_sched_wait_slot(sched, c);
    wait_caller_reads(sched);
    const int split_span =
        sched->trace ? ggmlx_sched_trace_begin(sched->trace, sched->n_backends, NULL, "split_graph", "host", -1, c) : -1;
    const bool split_ok = ggmlx_sched_split(sched, g, func);
    if (split_span >= 0) {
        ggmlx_sched_trace_end(sched->trace, split_span, NULL);
    }
    if (!split_ok) {
        goto err;
    }
    size_t had[GGML_SCHED_MAX_BACKENDS];
    for (int b = 0; b < sched->n_backends; b++) {
        ggml_backend_buffer_t sb = sched->slot_bufs[b][c].buffer;
        had[b] = sb != NULL ? ggml_backend_buffer_get_size(sb) : 0;
    }
    if (!place_inputs(sched, c, func)) {
        goto err_status;
    }
    ggmlx_sched_apply_rewrites(sched);
    const bool ok = alloc_compute(sched, func);
    ggmlx_sched_restore_rewrites(sched);
    if (!ok) {
        goto err_status;
    }
    mark_allocations(sched, g);
    sched->cur_copy  = c;
    sched->next_copy = (c + 1) % sched->n_copies;
    sched->is_alloc  = true;
    sched->is_reset  = false;
    if (span >= 0) {
        ggmlx_sched_trace_end(sched->trace, span, NULL);
    }
    return GGML_STATUS_SUCCESS;

    enum ggml_status st;
err_status:
    /* out of memory: callers may retry smaller, so the failure leaves the slots as they were */
    ggmlx_log(GGML_LOG_LEVEL_ERROR, "%s: failed to allocate the graph's buffers\n", func);
    char saved[512];
    const bool had_error = ggmlx_error_save(saved, sizeof saved);
    slots_restore(sched, c, had);
    if (had_error) {
        ggmlx_error_restore(saved);
    }
    st = GGML_STATUS_ALLOC_FAILED;
    goto out;
err:
    /* the graph itself cannot be scheduled (an op no backend runs, a weight on a foreign device) */
    st = GGML_STATUS_FAILED;
out:
    if (span >= 0) {
        ggmlx_sched_trace_end(sched->trace, span, NULL);
    }
    sched->is_reset = false;
    return st;
}

/* ---- reserve -------------------------------------------------------------------------------- */

bool ggmlx_sched_reserve(struct ggml_backend_sched * sched, struct ggml_cgraph * g, size_t * sizes_only,
                         const char * func) {
    switch_copies(sched);
    ggmlx_sched_sync_all(sched, false);
    if (!ggmlx_sched_split(sched, g, func)) {
        return false;
    }
    size_t need[GGML_SCHED_MAX_BACKENDS];
    inputs_per_backend(sched, need);
    /* inputs go to the slots, not to the compute buffers: the planner must skip them */
    for (int i = 0; i < sched->n_graph_inputs; i++) {
        sched->graph_inputs[i]->data = sched->graph_inputs[i];
    }
    ggmlx_sched_apply_rewrites(sched);
    bool ok = true;
    if (sizes_only != NULL) {
        ggml_gallocr_reserve_n_size(sched->galloc, sched->alloc_graph, sched->node_ids, sched->leaf_ids, sizes_only);
        for (int b = 0; b < sched->n_backends; b++) {
            sizes_only[b] += need[b] * (size_t) sched->n_copies;
        }
    } else {
        ggmlx_gallocr_set_fingerprint(sched->galloc, sched->fingerprint);
        ok = ggml_gallocr_reserve_n(sched->galloc, sched->alloc_graph, sched->node_ids, sched->leaf_ids);
        ggmlx_gallocr_set_fingerprint(sched->galloc, 0);
        sched->stats.n_reallocs += ok;
        ggmlx_gallocr_foreach_buffer(sched->galloc, own_cb, sched);
        for (int b = 0; b < sched->n_backends && ok; b++) {
            for (int c = 0; c < sched->n_copies && ok; c++) {
                ok = slot_reserve(sched, b, c, need[b], func);
            }
        }
    }
    ggmlx_sched_restore_rewrites(sched);
    for (int i = 0; i < sched->n_graph_inputs; i++) {
        sched->graph_inputs[i]->data = NULL;
    }
    return ok;
}
