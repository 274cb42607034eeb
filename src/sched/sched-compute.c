/*
 * sched-compute.c -- enqueueing the splits: copies between backends and the events that
 * order them. Nothing here blocks the host, except a copy no queue can make (counted in
 * stats.n_sync_fallbacks) and the evaluation callback, which asks for it.
 *
 * Each backend is an in-order queue. What the queues alone do not order, events do:
 *   - a copy between queues runs after the work queued on both before it, and before the
 *     work queued on its destination after it (docs/async.md rule 7);
 *   - a copy the scheduler makes itself on the source queue into host memory of B
 *     (get_tensor_async) must not overwrite what B's earlier work still uses: the source queue
 *     first waits for all B has queued (ev_progress[B]);
 *   - memory of backend A that another queue still reads (a copy made there, or a split that
 *     reads A's memory in place) must not be overwritten by A's later work: A first waits for
 *     those readers (pending_read[A], ev_reads[reader]);
 *   - a split reading A's memory in place waits for A's work so far (ev_progress[A]).
 * At the end of a compute every backend it used records the slot's event, which alloc_graph
 * waits for before it hands the slot's inputs to the host again.
 */
#include "sched-impl.h"

#include <stdlib.h>
#include <string.h>

/* b's queue waits for ev; in a trace, the span shows how long b's queue stood still */
static void traced_wait(struct ggml_backend_sched * sched, int b, int a, ggml_backend_event_t ev) {
    int span = -1;
    if (sched->trace != NULL) {
        char name[96];
        snprintf(name, sizeof name, "wait for %s", ggml_backend_name(sched->backends[a]));
        span = ggmlx_sched_trace_begin(sched->trace, b, sched->backends[b], name, "wait", -1, sched->cur_copy);
    }
    ggml_backend_event_wait(sched->backends[b], ev);
    sched->stats.n_event_waits++;
    if (span >= 0) {
        ggmlx_sched_trace_end(sched->trace, span, sched->backends[b]);
    }
}

/* b waits on its queue for everything queued on a so far */
static void queue_after(struct ggml_backend_sched * sched, int b, int a) {
    if (a == b) {
        return;
    }
    ggml_backend_event_t ev = sched->ev_progress[a];
    if (ev == NULL || sched->ev_reads[b] == NULL) {
        /* no events on one side: the host waits instead, which orders everything */
        ggml_backend_synchronize(sched->backends[a]);
        sched->stats.n_host_waits++;
        return;
    }
    ggml_backend_event_record(ev, sched->backends[a]);
    traced_wait(sched, b, a, ev);
}

/* b's later work may overwrite memory other queues were still reading: wait for them first */
static void before_writing(struct ggml_backend_sched * sched, int b) {
    const uint32_t readers = sched->pending_read[b];
    for (int r = 0; r < sched->n_backends; r++) {
        if (!(readers & (1u << r)) || r == b) {
            continue;
        }
        if (sched->ev_reads[r] != NULL && sched->ev_reads[b] != NULL) {
            traced_wait(sched, b, r, sched->ev_reads[r]);
        } else {
            ggml_backend_synchronize(sched->backends[r]);
            sched->stats.n_host_waits++;
        }
    }
    sched->pending_read[b] = 0;
}

/* b's reads of other backends' memory so far are done when this event is */
static void reads_recorded(struct ggml_backend_sched * sched, int b, uint32_t sources) {
    if (sched->ev_reads[b] != NULL) {
        ggml_backend_event_record(sched->ev_reads[b], sched->backends[b]);
    }
    for (int a = 0; a < sched->n_backends; a++) {
        if ((sources & (1u << a)) && a != b) {
            sched->pending_read[a] |= 1u << b;
        }
    }
}

/* ---- staging for copies through the host ----------------------------------------------------- */

/* pinned memory when a device offers it, so the device copies really are asynchronous */
static ggml_backend_buffer_type_t staging_buft(const struct ggml_backend_sched * sched) {
    for (int b = 0; b < sched->n_backends; b++) {
        ggml_backend_buffer_type_t buft = ggml_backend_dev_host_buffer_type(ggml_backend_get_device(sched->backends[b]));
        if (buft != NULL) {
            return buft;
        }
    }
    return ggml_backend_cpu_buffer_type();
}

/*
 * n bytes of the current slot's staging memory, NULL when none can be had. Outgrown buffers
 * are kept (queued copies of this compute may still use them) until the slot is idle.
 */
static void * staging_take(struct ggml_backend_sched * sched, size_t n) {
    struct sched_staging * st = &sched->staging[sched->cur_copy];
    const size_t size = (n + 63) & ~(size_t) 63;
    const size_t have = st->buffer ? ggml_backend_buffer_get_size(st->buffer) : 0;
    if (st->used + size > have) {
        size_t want = have * 2 > st->used + size ? have * 2 : st->used + size;
        want = want < ((size_t) 1 << 20) ? (size_t) 1 << 20 : want;
        ggml_backend_buffer_t nb = ggml_backend_buft_alloc_buffer(staging_buft(sched), want);
        if (nb == NULL) {
            return NULL;
        }
        if (st->buffer != NULL) {
            if (st->n_retired == st->retired_cap) {
                const int cap = st->retired_cap ? 2 * st->retired_cap : 4;
                ggml_backend_buffer_t * r = realloc(st->retired, (size_t) cap * sizeof *r);
                if (r == NULL) {
                    ggml_backend_buffer_free(nb);
                    return NULL;
                }
                st->retired     = r;
                st->retired_cap = cap;
            }
            st->retired[st->n_retired++] = st->buffer;
        }
        st->buffer = nb;
        st->used   = 0;
    }
    void * p = (char *) ggml_backend_buffer_get_base(st->buffer) + st->used;
    st->used += size;
    return p;
}

/*
 * A copy's span in the trace, on the track of the queue that makes it (track n_backends, the
 * host's, for a synchronous copy). Begun only once that queue's waits are enqueued, so a copy
 * span covers the copy alone and the waits show as their own spans: an idle queue never looks
 * busy copying.
 */
static int copy_span(struct ggml_backend_sched * sched, int track, const struct sched_input * in, int index) {
    if (sched->trace == NULL) {
        return -1;
    }
    char name[96];
    snprintf(name, sizeof name, "copy %s", in->src->name);
    ggml_backend_t queue = track < sched->n_backends ? sched->backends[track] : NULL;
    return ggmlx_sched_trace_begin(sched->trace, track, queue, name, "copy", index, sched->cur_copy);
}

static void copy_span_end(struct ggml_backend_sched * sched, int track, int span) {
    if (span >= 0) {
        ggmlx_sched_trace_end(sched->trace, span, track < sched->n_backends ? sched->backends[track] : NULL);
    }
}

/*
 * One input copy a -> b of split index, through a queue when one can make it: the
 * destination's copy (cpy_tensor_async), or the queue on the device side of host memory
 * (set/get_tensor_async). *b_after: the backends whose work so far b's queue already waits
 * for (b's earlier copies of this split), which b need not wait for again.
 */
static void copy_one(struct ggml_backend_sched * sched, const struct sched_input * in, int index, uint32_t * b_after) {
    const int      ia = in->src_backend, ib = in->dst_backend;
    ggml_backend_t a = sched->backends[ia];
    ggml_backend_t b = sched->backends[ib];
    const size_t   n = ggml_nbytes(in->src);
    const bool  best = sched->copy_mode == SCHED_COPY_BEST;
    int         span;
    sched->stats.bytes_copied += n;
    if (sched->copy_mode == SCHED_COPY_SYNC) {
        goto sync;
    }
    if (in->from_caller) {
        /* the caller's memory is read now, so it may be rewritten once compute returns */
        void * host = b->iface.set_tensor_async != NULL ? staging_take(sched, n) : NULL;
        if (host == NULL) {
            goto sync;
        }
        ggml_backend_tensor_get(in->src, host, 0, n);
        span = copy_span(sched, ib, in, index);
        ggml_backend_tensor_set_async(b, in->dst, host, 0, n);
        copy_span_end(sched, ib, span);
        sched->stats.n_async_copies++;
        return;
    }
    if (best && b->iface.cpy_tensor_async != NULL) {
        /* the backend's copy orders itself after a's work (docs/async.md rule 7), but that
         * wait would happen inside the copy: with events, b waits first, in a span of its own */
        if (sched->ev_progress[ia] != NULL && sched->ev_reads[ib] != NULL && !(*b_after & (1u << ia))) {
            queue_after(sched, ib, ia);
            *b_after |= 1u << ia;
        }
        span = copy_span(sched, ib, in, index);
        if (b->iface.cpy_tensor_async(a, b, in->src, in->dst)) {
            copy_span_end(sched, ib, span);
            sched->stats.n_async_copies++;
            return;
        }
        /* refused (another kind of source, say): the span is left open, which keeps it out of
         * the trace, and the copy is made below in its own span */
    }
    ggml_backend_buffer_t sbuf = ggmlx_tensor_buffer(in->src);
    ggml_backend_buffer_t dbuf = ggmlx_tensor_buffer(in->dst);
    if (!best) {
        goto bounce;
    }
    if (sbuf != NULL && ggml_backend_buffer_is_host(sbuf) && b->iface.set_tensor_async != NULL) {
        /* b reads the host memory itself, once a's work that writes it is done */
        if (!(*b_after & (1u << ia))) {
            queue_after(sched, ib, ia);
            *b_after |= 1u << ia;
        }
        span = copy_span(sched, ib, in, index);
        ggml_backend_tensor_set_async(b, in->dst, in->src->data, 0, n);
        copy_span_end(sched, ib, span);
        sched->stats.n_async_copies++;
        return;
    }
    if (dbuf != NULL && ggml_backend_buffer_is_host(dbuf) && a->iface.get_tensor_async != NULL) {
        /* a writes b's memory: not before b's earlier work is done with it */
        queue_after(sched, ia, ib);
        span = copy_span(sched, ia, in, index);
        ggml_backend_tensor_get_async(a, in->src, in->dst->data, 0, n);
        copy_span_end(sched, ia, span);
        queue_after(sched, ib, ia);
        *b_after |= 1u << ia;
        sched->stats.n_async_copies++;
        return;
    }
bounce:
    if (a->iface.get_tensor_async != NULL && b->iface.set_tensor_async != NULL) {
        void * host = staging_take(sched, n);
        if (host != NULL) {
            span = copy_span(sched, ia, in, index);
            ggml_backend_tensor_get_async(a, in->src, host, 0, n);
            copy_span_end(sched, ia, span);
            queue_after(sched, ib, ia);
            *b_after |= 1u << ia;
            span = copy_span(sched, ib, in, index);
            ggml_backend_tensor_set_async(b, in->dst, host, 0, n);
            copy_span_end(sched, ib, span);
            sched->stats.n_async_copies++;
            return;
        }
    }
sync:
    ggml_backend_synchronize(a);
    ggml_backend_synchronize(b);
    span = copy_span(sched, sched->n_backends, in, index);
    ggml_backend_tensor_copy(in->src, in->dst);
    copy_span_end(sched, sched->n_backends, span);
    sched->stats.n_sync_fallbacks++;
}

static void copy_inputs(struct ggml_backend_sched * sched, const struct sched_split * sp, int index) {
    uint32_t sources = 0, after = 0;
    for (int k = sp->input_begin; k < sp->input_begin + sp->n_inputs; k++) {
        /* a source in slot memory is not overwritten before the slot is waited for */
        if (!sched->inputs[k].slotted) {
            sources |= 1u << sched->inputs[k].src_backend;
        }
        copy_one(sched, &sched->inputs[k], index, &after);
    }
    reads_recorded(sched, sp->backend, sources);
}

/* ---- computing a split ---------------------------------------------------------------------- */

/* compute nodes [j0, j1) of the user's graph on b */
static enum ggml_status compute_range(struct ggml_backend_sched * sched, const struct sched_split * sp, int j0, int j1) {
    struct ggml_cgraph view = *sp->graph;
    view.nodes   = sched->graph->nodes + j0;
    view.n_nodes = j1 - j0;
    view.size    = j1 - j0;
    view.uid     = j0 == sp->i_start && j1 == sp->i_end ? sp->graph->uid : ggmlx_next_graph_uid();
    return ggml_backend_graph_compute_async(sched->backends[sp->backend], &view);
}

/*
 * With an evaluation callback: compute up to each node the user wants to see, let the user
 * look at it, go on. false from the callback stops the compute (*aborted).
 */
static enum ggml_status compute_observed(struct ggml_backend_sched * sched, const struct sched_split * sp, bool * aborted) {
    ggml_backend_t backend = sched->backends[sp->backend];
    int j0 = sp->i_start;
    while (j0 < sp->i_end) {
        int j1 = j0;
        while (j1 < sp->i_end - 1 && !sched->callback_eval(sched->graph->nodes[j1], true, sched->callback_eval_user_data)) {
            j1++;
        }
        const bool wanted = j1 < sp->i_end - 1 ||
                            sched->callback_eval(sched->graph->nodes[j1], true, sched->callback_eval_user_data);
        enum ggml_status st = compute_range(sched, sp, j0, j1 + 1);
        if (st != GGML_STATUS_SUCCESS) {
            return st;
        }
        ggml_backend_synchronize(backend);
        st = ggmlx_backend_get_status(backend);
        if (st != GGML_STATUS_SUCCESS) {
            ggmlx_backend_clear_status(backend);
            return st;
        }
        if (wanted && !sched->callback_eval(sched->graph->nodes[j1], false, sched->callback_eval_user_data)) {
            *aborted = true;
            return GGML_STATUS_ABORTED;
        }
        j0 = j1 + 1;
    }
    return GGML_STATUS_SUCCESS;
}

static enum ggml_status run_split(struct ggml_backend_sched * sched, const struct sched_split * sp, int index,
                                  bool * aborted) {
    const int b = sp->backend;
    before_writing(sched, b);
    if (sp->n_inputs > 0) {
        copy_inputs(sched, sp, index);
    }
    for (int a = 0; a < sched->n_backends; a++) {
        if (sp->reads_from & (1u << a)) {
            queue_after(sched, b, a);
        }
    }
    int span = -1;
    if (sched->trace != NULL) {
        char name[96];
        snprintf(name, sizeof name, "split %d: %s", index, ggml_backend_name(sched->backends[b]));
        span = ggmlx_sched_trace_begin(sched->trace, b, sched->backends[b], name, "compute", index, sched->cur_copy);
    }
    const enum ggml_status st = sched->callback_eval != NULL ? compute_observed(sched, sp, aborted)
                                                             : compute_range(sched, sp, sp->i_start, sp->i_end);
    if (span >= 0) {
        ggmlx_sched_trace_end(sched->trace, span, sched->backends[b]);
    }
    if (sp->reads_from != 0) {
        reads_recorded(sched, b, sp->reads_from);
    }
    return st;
}

/* backends whose splits read a graph input in the caller's own memory in place (rewrites applied) */
static uint32_t caller_input_readers(const struct ggml_backend_sched * sched) {
    uint32_t mask = 0;
    for (int s = 0; s < sched->n_splits; s++) {
        const struct sched_split * sp = &sched->splits[s];
        for (int i = sp->i_start; i < sp->i_end && !(mask & (1u << sp->backend)); i++) {
            const struct ggml_tensor * node = sched->graph->nodes[i];
            for (int j = 0; j < GGML_MAX_SRC; j++) {
                const struct ggml_tensor * r = node->src[j];
                r = r != NULL && r->view_src != NULL ? r->view_src : r;
                if (r != NULL && ggmlx_sched_is_caller_input(r)) {
                    mask |= 1u << sp->backend;
                }
            }
        }
    }
    return mask;
}

enum ggml_status ggmlx_sched_compute_splits(struct ggml_backend_sched * sched) {
    const int c    = sched->cur_copy;
    uint32_t  used = 0;
    bool      aborted = false;
    enum ggml_status st = GGML_STATUS_SUCCESS;

    if (sched->slot_busy[c] && sched->staging[c].used > 0) {
        /* the same graph again without alloc_graph: its staging memory may still be in use */
        ggmlx_sched_wait_slot(sched, c);
    }
    sched->staging[c].used = 0;
    char why[256] = "";
    int  failed   = -1;
    ggmlx_sched_apply_rewrites(sched);
    for (int s = 0; s < sched->n_splits && st == GGML_STATUS_SUCCESS; s++) {
        const struct sched_split * sp = &sched->splits[s];
        used |= 1u << sp->backend;
        st = run_split(sched, sp, s, &aborted);
        sched->stats.n_splits++;
        if (st != GGML_STATUS_SUCCESS && !aborted) {
            /* kept: the event records below succeed and would clear the thread's error */
            const char * e = ggmlx_last_error();
            snprintf(why, sizeof why, "%s", e != NULL ? e : "no message");
            failed = s;
        }
    }
    sched->caller_readers   = caller_input_readers(sched);
    sched->caller_read_slot = c;
    ggmlx_sched_restore_rewrites(sched);

    /* even a stopped compute leaves the slot's events recorded: the next alloc can wait on them */
    for (int b = 0; b < sched->n_backends; b++) {
        if ((used & (1u << b)) && sched->ev_slot[b][c] != NULL) {
            ggml_backend_event_record(sched->ev_slot[b][c], sched->backends[b]);
        }
    }
    sched->slot_busy[c] = true;
    sched->slot_backends[c] |= used;
    sched->stats.n_computes++;
    if (aborted) {
        ggmlx_error("ggml_backend_sched_graph_compute", "stopped by the evaluation callback");
        return GGML_STATUS_ABORTED;
    }
    if (failed >= 0) {
        ggmlx_error("ggml_backend_sched_graph_compute", "split %d on %s failed (status %d): %s", failed,
                    ggml_backend_name(sched->backends[sched->splits[failed].backend]), (int) st, why);
    }
    return st;
}
