/*
 * cuda-marks.c -- GPU-timed time stamps (cuda-marks.h).
 */
#include "cuda-marks.h"

#include <stdlib.h>

/* an event to record a mark with: a spare one, or a new timing event */
static bool take_event(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaEvent_t * ev, const char * func) {
    if (m->n_spare > 0) {
        *ev = m->spare[--m->n_spare];
        return true;
    }
    /* default flags: timing enabled, which cudaEventElapsedTime needs */
    return ggmlx_cuda_check(d, cudaEventCreateWithFlags(ev, cudaEventDefault), func, "cudaEventCreate (mark)");
}

/* keep ev for reuse; destroyed when there is no room to keep it */
static void give_event(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaEvent_t ev, bool live,
                       const char * func) {
    if (m->n_spare == m->cap_spare) {
        const int cap = m->cap_spare ? m->cap_spare * 2 : 64;
        cudaEvent_t * spare = realloc(m->spare, (size_t) cap * sizeof *spare);
        if (spare == NULL) {
            if (live) {
                ggmlx_cuda_check(d, cudaEventDestroy(ev), func, "cudaEventDestroy (mark)");
            }
            return;
        }
        m->spare     = spare;
        m->cap_spare = cap;
    }
    m->spare[m->n_spare++] = ev;
}

bool ggmlx_cuda_marks_add(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaStream_t stream,
                          uint64_t * ns, const char * func) {
    if (m->n_pending == m->cap_pending) {
        const int cap = m->cap_pending ? m->cap_pending * 2 : 64;
        struct ggmlx_cuda_mark * p = realloc(m->pending, (size_t) cap * sizeof *p);
        if (p == NULL) {
            ggmlx_error(func, "%s: out of host memory for a time stamp", d->name);
            *ns = ggmlx_time_ns();
            return false;
        }
        m->pending     = p;
        m->cap_pending = cap;
    }
    cudaEvent_t ev;
    if (!take_event(m, d, &ev, func)) {
        *ns = ggmlx_time_ns();
        return false;
    }
    if (!ggmlx_cuda_check(d, cudaEventRecord(ev, stream), func, "cudaEventRecord (mark)")) {
        give_event(m, d, ev, !atomic_load(&d->failed), func);
        *ns = ggmlx_time_ns();
        return false;
    }
    m->pending[m->n_pending++] = (struct ggmlx_cuda_mark){ ev, ns };
    return true;
}

/* the host clock at the moment the idle stream reaches a fresh reference event; 0 on failure */
static uint64_t reference_time(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaStream_t stream,
                               const char * func) {
    if (m->ref == NULL &&
        !ggmlx_cuda_check(d, cudaEventCreateWithFlags(&m->ref, cudaEventDefault), func, "cudaEventCreate (reference)")) {
        m->ref = NULL;
        return 0;
    }
    if (!ggmlx_cuda_check(d, cudaEventRecord(m->ref, stream), func, "cudaEventRecord (reference)") ||
        !ggmlx_cuda_check(d, cudaEventSynchronize(m->ref), func, "cudaEventSynchronize (reference)")) {
        return 0;
    }
    /* the stream was idle, so the event completed at once: the host reads the clock right after */
    return ggmlx_time_ns();
}

void ggmlx_cuda_marks_resolve(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaStream_t stream,
                              bool stream_ok, const char * func) {
    if (m->n_pending == 0) {
        return;
    }
    const bool live = stream_ok && !atomic_load(&d->failed);
    const uint64_t ref_ns = live ? reference_time(m, d, stream, func) : 0;
    const uint64_t now    = ggmlx_time_ns();
    for (int i = 0; i < m->n_pending; i++) {
        struct ggmlx_cuda_mark * k = &m->pending[i];
        float ms = 0.0f;
        if (ref_ns != 0 && ggmlx_cuda_check(d, cudaEventElapsedTime(&ms, k->ev, m->ref), func, "cudaEventElapsedTime")) {
            const double back = ms > 0.0f ? (double) ms * 1e6 : 0.0;
            *k->ns = back < (double) ref_ns ? ref_ns - (uint64_t) back : 0;
        } else {
            *k->ns = now; /* wrong but sane: a trace shows the span, zero long, at the synchronize */
        }
        give_event(m, d, k->ev, !atomic_load(&d->failed), func);
    }
    m->n_pending = 0;
}

void ggmlx_cuda_marks_free(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, bool live, const char * func) {
    if (live) {
        for (int i = 0; i < m->n_pending; i++) {
            ggmlx_cuda_check(d, cudaEventDestroy(m->pending[i].ev), func, "cudaEventDestroy (mark)");
        }
        for (int i = 0; i < m->n_spare; i++) {
            ggmlx_cuda_check(d, cudaEventDestroy(m->spare[i]), func, "cudaEventDestroy (mark)");
        }
        if (m->ref != NULL) {
            ggmlx_cuda_check(d, cudaEventDestroy(m->ref), func, "cudaEventDestroy (reference)");
        }
    }
    free(m->pending);
    free(m->spare);
    *m = (struct ggmlx_cuda_marks){ 0 };
}
