/*
 * cuda-backend.c -- a CUDA backend: one non-blocking stream on one GPU (docs/architecture.md §7,
 * docs/async.md). Everything is enqueued on the stream and returns; synchronize waits for it.
 *
 * Sticky status (rule 8): the first failure of enqueued work (a launch, a copy, or an error the
 * stream reports later) is kept with its message and refuses later computes until cleared. A
 * sticky CUDA error (a fault inside a kernel) also marks the whole device failed, which no
 * clear can undo: the context is gone. An out-of-range row index (get_rows, set_rows) is such a
 * failure too, found only once the stream has drained: the kernels leave a record in the
 * backend's error word, read back at synchronize (row-check.h).
 */
#include "cuda-graph.h"
#include "cuda-impl.h"
#include "cuda-marks.h"
#include "cuda-ops.h"
#include "row-check.h"

#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuda_backend {
    struct ggmlx_cuda_device * d;
    cudaStream_t               stream;
    cublasHandle_t             cublas;
    void                     * cublas_ws;    /* cuBLAS workspace, bound after every cublasSetStream */
    size_t                     cublas_ws_size;
    void                     * scratch;      /* per-node scratch, grown before anything is enqueued */
    size_t                     scratch_size;
    cudaEvent_t                copy_event;   /* orders copies to other backends (made when needed) */
    enum ggml_status           status;       /* first error of enqueued work */
    char                       status_msg[320];
    struct ggmlx_cuda_marks    marks;        /* time stamps resolved at the next synchronize */
    struct ggmlx_cuda_graphs   graphs;       /* captured computes, replayed (cuda-graph.h) */
    int64_t                  * row_err;      /* GGMLX_ROW_ERR_SLOTS device words, zeroed */
    struct ggmlx_row_check     rows;         /* rows nodes enqueued since the word was last read */
};

static ggml_guid_t cuda_guid(void) {
    static ggml_guid guid = { 0x67, 0x78, 0x63, 0x75, 0x64, 0x61, 0x2d, 0x73,
                              0x74, 0x72, 0x65, 0x61, 0x6d, 0x2d, 0x76, 0x31 };
    return &guid;
}

bool ggml_backend_is_cuda(ggml_backend_t backend) {
    return backend != NULL && backend->guid != NULL && ggml_guid_matches(backend->guid, cuda_guid());
}

/* ---- status -------------------------------------------------------------------------------- */

/* keep the first error of enqueued work; the message is the thread's last error */
static enum ggml_status fail(struct cuda_backend * ctx, enum ggml_status st) {
    if (ctx->status == GGML_STATUS_SUCCESS) {
        const char * why = ggmlx_last_error();
        ctx->status = st;
        snprintf(ctx->status_msg, sizeof ctx->status_msg, "%s", why && why[0] ? why : ggml_status_to_string(st));
    }
    return st;
}

/* check an enqueueing call; a failure becomes the sticky status */
static bool enqueued(struct cuda_backend * ctx, cudaError_t err, const char * func, const char * what) {
    if (ggmlx_cuda_check(ctx->d, err, func, what)) {
        return true;
    }
    fail(ctx, GGML_STATUS_FAILED);
    return false;
}

/* an error the stream reports for work already enqueued (checked without blocking); true when
 * all of that work has finished without one */
static bool poll_stream(struct cuda_backend * ctx, const char * func) {
    const cudaError_t err = cudaStreamQuery(ctx->stream);
    if (err != cudaSuccess && err != cudaErrorNotReady && !ggmlx_cuda_check(ctx->d, err, func, "queued work")) {
        fail(ctx, GGML_STATUS_FAILED);
    } else if (err == cudaErrorNotReady) {
        (void) cudaGetLastError(); /* not an error: still running */
    }
    return err == cudaSuccess;
}

/*
 * Once the stream has drained: a bad row index the kernels recorded becomes the sticky status.
 * Read back only when a rows node ran since the last look, so other computes pay nothing. The
 * word is zeroed in stream order, before anything enqueued later can write to it.
 */
static void check_rows(struct cuda_backend * ctx, const char * func) {
    if (!ggmlx_row_check_pending(&ctx->rows)) {
        return;
    }
    int64_t word[GGMLX_ROW_ERR_SLOTS];
    if (!enqueued(ctx, cudaMemcpyAsync(word, ctx->row_err, sizeof word, cudaMemcpyDeviceToHost, ctx->stream), func,
                  "cudaMemcpyAsync (row index check)") ||
        !enqueued(ctx, cudaStreamSynchronize(ctx->stream), func, "cudaStreamSynchronize")) {
        return;
    }
    char msg[256];
    if (ggmlx_row_check_decode(&ctx->rows, word, msg, sizeof msg)) {
        ggmlx_error(func, "%s: %s (nothing of that op was written)", ctx->d->name, msg);
        fail(ctx, GGML_STATUS_FAILED);
        if (!enqueued(ctx, cudaMemsetAsync(ctx->row_err, 0, sizeof word, ctx->stream), func, "cudaMemsetAsync")) {
            return;
        }
    }
    ggmlx_row_check_reset(&ctx->rows);
}

/* SUCCESS, or the sticky status as an error of func (the device's failure included) */
static enum ggml_status sticky(const char * func, struct cuda_backend * ctx) {
    if (!ggmlx_cuda_alive(ctx->d, func)) {
        return fail(ctx, GGML_STATUS_FAILED);
    }
    if (ctx->status != GGML_STATUS_SUCCESS) {
        ggmlx_error(func, "earlier work queued on %s failed (%s): %s; ggmlx_backend_clear_status resets it",
                    ctx->d->name, ggml_status_to_string(ctx->status), ctx->status_msg);
    }
    return ctx->status;
}

static enum ggml_status cuda_get_status(ggml_backend_t backend) {
    struct cuda_backend * ctx = backend->context;
    if (!atomic_load(&ctx->d->failed) && ggmlx_cuda_set_device(ctx->d, "ggmlx_backend_get_status") &&
        poll_stream(ctx, "ggmlx_backend_get_status")) {
        check_rows(ctx, "ggmlx_backend_get_status");
    }
    return sticky("ggmlx_backend_get_status", ctx);
}

static void cuda_clear_status(ggml_backend_t backend) {
    struct cuda_backend * ctx = backend->context;
    ctx->status        = GGML_STATUS_SUCCESS;
    ctx->status_msg[0] = '\0';
    /* a failed device stays failed: the next call says so */
}

/* the backend is usable for new work: device alive, current, no sticky status */
static bool ready(const char * func, struct cuda_backend * ctx) {
    return sticky(func, ctx) == GGML_STATUS_SUCCESS && ggmlx_cuda_set_device(ctx->d, func);
}

/* ---- scratch (reserved before enqueueing a graph) ------------------------------------------ */

/*
 * Grow the backend's scratch block to at least size. The old block may still be in use by work
 * in the stream: with stream-ordered allocation it is freed in stream order (after that work);
 * without, the stream is drained first. Out of memory leaves the stream untouched apart from the
 * free, and is GGML_STATUS_ALLOC_FAILED.
 */
static enum ggml_status reserve_scratch(struct cuda_backend * ctx, size_t size, const char * func) {
    if (size <= ctx->scratch_size) {
        return GGML_STATUS_SUCCESS;
    }
    size = GGML_PAD(size + size / 8, 256); /* some headroom, so growing by small steps is rare */
    cudaError_t err;
    if (ctx->d->pools) {
        if (ctx->scratch != NULL && !enqueued(ctx, cudaFreeAsync(ctx->scratch, ctx->stream), func, "cudaFreeAsync")) {
            return GGML_STATUS_FAILED;
        }
        ctx->scratch      = NULL;
        ctx->scratch_size = 0;
        err = cudaMallocAsync(&ctx->scratch, size, ctx->stream);
    } else {
        if (!enqueued(ctx, cudaStreamSynchronize(ctx->stream), func, "cudaStreamSynchronize")) {
            return GGML_STATUS_FAILED;
        }
        if (ctx->scratch != NULL) {
            ggmlx_cuda_check(ctx->d, cudaFree(ctx->scratch), func, "cudaFree");
        }
        ctx->scratch      = NULL;
        ctx->scratch_size = 0;
        err = cudaMalloc(&ctx->scratch, size);
    }
    if (err != cudaSuccess) {
        char what[96];
        snprintf(what, sizeof what, "scratch of %zu bytes", size);
        ggmlx_cuda_check(ctx->d, err, func, what);
        ctx->scratch = NULL;
        /* out of memory refuses this graph only; anything else is a fault of the stream */
        return err == cudaErrorMemoryAllocation ? GGML_STATUS_ALLOC_FAILED : fail(ctx, GGML_STATUS_FAILED);
    }
    ctx->scratch_size = size;
    return GGML_STATUS_SUCCESS;
}

/* ---- graphs -------------------------------------------------------------------------------- */

/* everything that can be known before enqueueing: FAILED (error recorded) when a node cannot run */
static enum ggml_status check_graph(const char * func, struct cuda_backend * ctx, const struct ggml_cgraph * g,
                                    size_t * scratch) {
    *scratch = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        if (ggmlx_cuda_node_skipped(node)) {
            continue;
        }
        if (!ggmlx_cuda_supports_op(node)) {
            ggmlx_error(func, "node %d '%s': %s of %s is not supported by %s; nothing queued", i, node->name,
                        ggml_op_desc(node), GGMLX_SHAPE(node), ctx->d->name);
            return GGML_STATUS_FAILED;
        }
        if (ggmlx_cuda_tensor_device(node) != ctx->d) {
            ggmlx_error(func, "node %d '%s' is not allocated in %s memory; nothing queued", i, node->name,
                        ctx->d->name);
            return GGML_STATUS_FAILED;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s != NULL && !ggml_is_empty(s) && ggmlx_cuda_tensor_device(s) != ctx->d) {
                ggmlx_error(func, "source %d '%s' of node %d '%s' is not allocated in %s memory; nothing queued", j,
                            s->name, i, node->name, ctx->d->name);
                return GGML_STATUS_FAILED;
            }
        }
        const size_t need = ggmlx_cuda_scratch_size(node);
        *scratch = need > *scratch ? need : *scratch;
    }
    return GGML_STATUS_SUCCESS;
}

struct launch_args {
    const struct ggmlx_cuda_exec * ex;
    struct ggml_cgraph           * cgraph;
    int                            failed_node;
    char                           err[256];
};

/*
 * One launcher per node. A failure is kept in the arguments, not recorded: inside a CUDA graph
 * capture it may be the capture's alone, and the plain launches that follow decide.
 */
static enum ggml_status launch_nodes(void * user) {
    struct launch_args * a = user;
    struct ggmlx_cuda_exec ex = *a->ex;
    for (int i = 0; i < a->cgraph->n_nodes; i++) {
        struct ggml_tensor * node = a->cgraph->nodes[i];
        if (ggmlx_cuda_node_skipped(node)) {
            continue;
        }
        a->err[0] = '\0';
        ex.node = i;
        const enum ggml_status st = ggmlx_cuda_compute_node(&ex, node, a->err, sizeof a->err);
        if (st != GGML_STATUS_SUCCESS) {
            a->failed_node = i;
            return st;
        }
    }
    a->failed_node = -1;
    return GGML_STATUS_SUCCESS;
}

/*
 * A compute with rows nodes (epoch > 0) gets its number written into the error word ahead of its
 * kernels, outside any capture: replayed kernels cannot carry a new number, but they read this
 * one. A pageable source is staged before cudaMemcpyAsync returns, so a local will do.
 */
static bool start_epoch(struct cuda_backend * ctx, int epoch, const char * func) {
    if (epoch == 0) {
        return true;
    }
    const int64_t v = epoch;
    return enqueued(ctx, cudaMemcpyAsync(ctx->row_err + GGMLX_ROW_ERR_EPOCH, &v, sizeof v, cudaMemcpyHostToDevice,
                                         ctx->stream), func, "cudaMemcpyAsync (row index check)");
}

static enum ggml_status cuda_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    static const char * func = "ggml_backend_graph_compute_async";
    struct cuda_backend * ctx = backend->context;
    enum ggml_status st = sticky(func, ctx);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    size_t scratch = 0;
    if (check_graph(func, ctx, cgraph, &scratch) != GGML_STATUS_SUCCESS) {
        return GGML_STATUS_FAILED;
    }
    if (!ggmlx_cuda_set_device(ctx->d, func)) {
        return fail(ctx, GGML_STATUS_FAILED);
    }
    st = reserve_scratch(ctx, scratch, func);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    if (!start_epoch(ctx, ggmlx_row_check_add(&ctx->rows, cgraph), func)) {
        return GGML_STATUS_FAILED;
    }
    const struct ggmlx_cuda_exec ex = {
        .device       = ctx->d->ordinal,
        .cc           = ctx->d->cc,
        .stream       = ctx->stream,
        .cublas       = ctx->cublas,
        .scratch      = ctx->scratch,
        .scratch_size = ctx->scratch_size,
        .row_err      = ctx->row_err,
    };
    struct launch_args args = { .ex = &ex, .cgraph = cgraph, .failed_node = -1 };
    /* captured kernels point into the scratch block: a new block is a new signature */
    const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA] = { (uint64_t) (uintptr_t) ctx->scratch, ctx->scratch_size };
    st = ggmlx_cuda_graphs_run(&ctx->graphs, ctx->stream, cgraph, extra, launch_nodes, &args, func);
    if (st != GGML_STATUS_SUCCESS) {
        /* nodes before it are already in the stream: the failure is sticky, as a queued one */
        if (args.failed_node >= 0) {
            const struct ggml_tensor * node = cgraph->nodes[args.failed_node];
            ggmlx_error(func, "%s: node %d '%s' (%s): %s", ctx->d->name, args.failed_node, node->name,
                        ggml_op_desc(node), args.err[0] ? args.err : ggml_status_to_string(st));
        } else {
            ggmlx_error(func, "%s: %s", ctx->d->name, ggml_status_to_string(st));
        }
        poll_stream(ctx, func); /* a launch failure may be a sticky device error */
        return fail(ctx, st);
    }
    ggmlx_ok();
    return GGML_STATUS_SUCCESS;
}

static void cuda_synchronize(ggml_backend_t backend) {
    static const char * func = "ggml_backend_synchronize";
    struct cuda_backend * ctx = backend->context;
    if (!ggmlx_cuda_set_device(ctx->d, func)) {
        fail(ctx, GGML_STATUS_FAILED);
        ggmlx_cuda_marks_resolve(&ctx->marks, ctx->d, ctx->stream, false, func);
        return;
    }
    /* an error here is one of enqueued work (a kernel fault shows up only now) */
    const bool ok = enqueued(ctx, cudaStreamSynchronize(ctx->stream), func, "cudaStreamSynchronize");
    if (ok) {
        check_rows(ctx, func);
    }
    ggmlx_cuda_marks_resolve(&ctx->marks, ctx->d, ctx->stream, ok, func);
}

/* timed on the GPU; the time is written at the next synchronize (cuda-marks.h) */
static void cuda_queue_mark(ggml_backend_t backend, uint64_t * ns) {
    static const char * func = "ggmlx_backend_queue_mark";
    struct cuda_backend * ctx = backend->context;
    /* not ready(): a sticky status must not stop a trace's spans from closing */
    if (!ggmlx_cuda_alive(ctx->d, func) || !ggmlx_cuda_set_device(ctx->d, func)) {
        *ns = ggmlx_time_ns();
        return;
    }
    ggmlx_cuda_marks_add(&ctx->marks, ctx->d, ctx->stream, ns, func);
}

/* ---- queued copies between host memory and tensors ----------------------------------------- */

/* tensor is in this backend's device memory (error recorded otherwise) */
static bool own_tensor(const char * func, struct cuda_backend * ctx, const struct ggml_tensor * t) {
    if (ggmlx_cuda_tensor_device(t) == ctx->d) {
        return true;
    }
    ggmlx_error(func, "%s: tensor '%s' is not in %s memory; nothing queued", ctx->d->name, t->name, ctx->d->name);
    return false;
}

static void copy_async(struct cuda_backend * ctx, const char * func, void * dst, size_t dpitch, const void * src,
                       size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind) {
    if (!ready(func, ctx)) {
        return;
    }
    if (height == 1) {
        enqueued(ctx, cudaMemcpyAsync(dst, src, width, kind, ctx->stream), func, "cudaMemcpyAsync");
    } else if (dpitch >= width && spitch >= width) {
        enqueued(ctx, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, ctx->stream), func,
                 "cudaMemcpy2DAsync");
    } else {
        for (size_t i = 0; i < height; i++) {
            if (!enqueued(ctx, cudaMemcpyAsync((char *) dst + i * dpitch, (const char *) src + i * spitch, width, kind,
                                               ctx->stream), func, "cudaMemcpyAsync")) {
                return;
            }
        }
    }
}

static void cuda_set_tensor_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                  size_t offset, size_t size) {
    static const char * func = "ggml_backend_tensor_set_async";
    struct cuda_backend * ctx = backend->context;
    if (own_tensor(func, ctx, tensor)) {
        copy_async(ctx, func, (char *) tensor->data + offset, size, data, size, size, 1, cudaMemcpyHostToDevice);
    }
}

static void cuda_get_tensor_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                  size_t offset, size_t size) {
    static const char * func = "ggml_backend_tensor_get_async";
    struct cuda_backend * ctx = backend->context;
    if (own_tensor(func, ctx, tensor)) {
        copy_async(ctx, func, data, size, (const char *) tensor->data + offset, size, size, 1, cudaMemcpyDeviceToHost);
    }
}

static void cuda_set_tensor_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    static const char * func = "ggml_backend_tensor_set_2d_async";
    struct cuda_backend * ctx = backend->context;
    if (own_tensor(func, ctx, tensor)) {
        copy_async(ctx, func, (char *) tensor->data + offset, stride_tensor, data, stride_data, size, n_copies,
                   cudaMemcpyHostToDevice);
    }
}

static void cuda_get_tensor_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    static const char * func = "ggml_backend_tensor_get_2d_async";
    struct cuda_backend * ctx = backend->context;
    if (own_tensor(func, ctx, tensor)) {
        copy_async(ctx, func, data, stride_data, (const char *) tensor->data + offset, stride_tensor, size, n_copies,
                   cudaMemcpyDeviceToHost);
    }
}

/* waiter's stream runs nothing queued after this until what other's stream holds now is done */
static bool stream_after(struct cuda_backend * waiter, struct cuda_backend * other, const char * func) {
    if (other->copy_event == NULL &&
        !enqueued(other, cudaEventCreateWithFlags(&other->copy_event, cudaEventDisableTiming), func, "cudaEventCreate")) {
        other->copy_event = NULL;
        return false;
    }
    if (!ggmlx_cuda_set_device(other->d, func) ||
        !enqueued(other, cudaEventRecord(other->copy_event, other->stream), func, "cudaEventRecord")) {
        return false;
    }
#ifndef GGMLX_DROP_EVENT_WAITS
    /* the wait takes the record just made, even if the event is recorded again later */
    if (!ggmlx_cuda_set_device(waiter->d, func) ||
        !enqueued(waiter, cudaStreamWaitEvent(waiter->stream, other->copy_event, 0), func, "cudaStreamWaitEvent")) {
        return false;
    }
#endif
    return true;
}

/*
 * Between CUDA backends (rule 7): the copy is enqueued on the source's stream once the work
 * queued on both streams before it is done (the destination's too: its earlier work may still
 * use the memory the copy overwrites), and the destination's stream waits for the copy, so
 * nothing queued there later starts before it is done. On one backend it is a plain copy in
 * its stream. Tensors outside CUDA device memory: false (the generic layer copies on the host
 * after synchronizing both backends).
 */
static bool cuda_cpy_tensor_async(ggml_backend_t backend_src, ggml_backend_t backend_dst,
                                  const struct ggml_tensor * src, struct ggml_tensor * dst) {
    static const char * func = "ggml_backend_tensor_copy_async";
    if (!ggml_backend_is_cuda(backend_src) || !ggml_backend_is_cuda(backend_dst)) {
        return false;
    }
    struct cuda_backend * s = backend_src->context;
    struct cuda_backend * d = backend_dst->context;
    if (ggmlx_cuda_tensor_device(src) != s->d || ggmlx_cuda_tensor_device(dst) != d->d ||
        ggml_nbytes(src) != ggml_nbytes(dst)) {
        return false;
    }
    const size_t n = ggml_nbytes(src);
    if (!ready(func, s) || (s != d && !ready(func, d))) {
        return true; /* refused with a message and a sticky status; a host copy would not help */
    }
    if (s != d && !stream_after(s, d, func)) {
        /* no ordering on the device: the destination's earlier work finishes on the host instead */
        ggmlx_cuda_check(d->d, cudaStreamSynchronize(d->stream), func, "cudaStreamSynchronize");
    }
    if (!ggmlx_cuda_set_device(s->d, func)) {
        return true;
    }
    /* virtual devices on one GPU (GGML_CUDA_DEVICES) copy as one device: no peer copy */
    const bool same_gpu = s->d->ordinal == d->d->ordinal;
    const cudaError_t err = same_gpu
        ? cudaMemcpyAsync(dst->data, src->data, n, cudaMemcpyDeviceToDevice, s->stream)
        : cudaMemcpyPeerAsync(dst->data, d->d->ordinal, src->data, s->d->ordinal, n, s->stream);
    if (!enqueued(s, err, func, same_gpu ? "cudaMemcpyAsync" : "cudaMemcpyPeerAsync") || s == d) {
        return true;
    }
    if (!stream_after(d, s, func)) {
        /* the destination must not run ahead of the copy: the host waits for the source instead */
        ggmlx_cuda_check(s->d, cudaStreamSynchronize(s->stream), func, "cudaStreamSynchronize");
    }
    return true;
}

/* ---- events -------------------------------------------------------------------------------- */

static void cuda_event_record(ggml_backend_t backend, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_record";
    struct cuda_backend * ctx = backend->context;
    /* records still run after a queued error (rule 8), so no other queue waits forever */
    if (!ggmlx_cuda_set_device(ctx->d, func)) {
        return;
    }
    if (ggmlx_cuda_event_record(ctx->d, ctx->stream, event)) {
        ggmlx_ok();
    }
}

static void cuda_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_wait";
    struct cuda_backend * ctx = backend->context;
    if (!ggmlx_cuda_set_device(ctx->d, func)) {
        return;
    }
    if (ggmlx_cuda_event_wait(ctx->d, ctx->stream, event)) {
        ggmlx_ok();
    } else {
        fail(ctx, GGML_STATUS_FAILED);
    }
}

/* ---- work enqueued by other files ---------------------------------------------------------- */

struct ggmlx_cuda_device * ggmlx_cuda_backend_device(ggml_backend_t backend) {
    return ((struct cuda_backend *) backend->context)->d;
}

cudaStream_t ggmlx_cuda_backend_stream(ggml_backend_t backend) {
    return ((struct cuda_backend *) backend->context)->stream;
}

bool ggmlx_cuda_backend_ready(ggml_backend_t backend, const char * func) {
    return ready(func, backend->context);
}

void ggmlx_cuda_backend_fail(ggml_backend_t backend) {
    fail(backend->context, GGML_STATUS_FAILED);
}

bool ggmlx_backend_cuda_graph_stats(ggml_backend_t backend, struct ggmlx_cuda_graph_stats * stats) {
    if (!ggml_backend_is_cuda(backend) || stats == NULL) {
        ggmlx_error(__func__, "%s", stats == NULL ? "stats is NULL" : "not a CUDA backend");
        return false;
    }
    *stats = ((struct cuda_backend *) backend->context)->graphs.cache.stats;
    ggmlx_ok();
    return true;
}

/* ---- the backend --------------------------------------------------------------------------- */

static const char * cuda_get_name(ggml_backend_t backend) {
    return ((struct cuda_backend *) backend->context)->d->name;
}

/* releases what ctx holds; the stream is drained first so nothing in flight loses its memory */
static void destroy(struct cuda_backend * ctx, const char * func) {
    struct ggmlx_cuda_device * d = ctx->d;
    const bool live = !atomic_load(&d->failed) && ggmlx_cuda_set_device(d, func);
    if (live && ctx->stream != NULL) {
        /* stream-ordered scratch goes back to the pool in stream order, before the drain */
        if (ctx->scratch != NULL && d->pools &&
            ggmlx_cuda_check(d, cudaFreeAsync(ctx->scratch, ctx->stream), func, "cudaFreeAsync")) {
            ctx->scratch = NULL;
        }
        ggmlx_cuda_check(d, cudaStreamSynchronize(ctx->stream), func, "cudaStreamSynchronize");
    }
    /* executable graphs reference the scratch and workspace freed below */
    ggmlx_cuda_graphs_free(&ctx->graphs);
    if (ctx->cublas != NULL) {
        const cublasStatus_t cs = cublasDestroy(ctx->cublas);
        if (cs != CUBLAS_STATUS_SUCCESS) {
            ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: %s: cublasDestroy: cuBLAS status %d\n", func, d->name, (int) cs);
        }
    }
    ggmlx_cuda_marks_free(&ctx->marks, d, live, func);
    if (live) {
        if (ctx->row_err != NULL) {
            ggmlx_cuda_check(d, cudaFree(ctx->row_err), func, "cudaFree");
        }
        if (ctx->scratch != NULL) {
            ggmlx_cuda_check(d, cudaFree(ctx->scratch), func, "cudaFree");
        }
        if (ctx->cublas_ws != NULL) {
            ggmlx_cuda_check(d, cudaFree(ctx->cublas_ws), func, "cudaFree");
        }
        if (ctx->copy_event != NULL) {
            ggmlx_cuda_check(d, cudaEventDestroy(ctx->copy_event), func, "cudaEventDestroy");
        }
        if (ctx->stream != NULL) {
            ggmlx_cuda_check(d, cudaStreamDestroy(ctx->stream), func, "cudaStreamDestroy");
        }
    }
    free(ctx);
}

static void cuda_free(ggml_backend_t backend) {
    destroy(backend->context, "ggml_backend_free");
    free(backend);
}

static const struct ggml_backend_i cuda_backend_iface = {
    .get_name            = cuda_get_name,
    .free                = cuda_free,
    .set_tensor_async    = cuda_set_tensor_async,
    .get_tensor_async    = cuda_get_tensor_async,
    .set_tensor_2d_async = cuda_set_tensor_2d_async,
    .get_tensor_2d_async = cuda_get_tensor_2d_async,
    .cpy_tensor_async    = cuda_cpy_tensor_async,
    .synchronize         = cuda_synchronize,
    .graph_plan_create   = NULL,
    .graph_plan_free     = NULL,
    .graph_plan_update   = NULL,
    .graph_plan_compute  = NULL,
    .graph_compute       = cuda_graph_compute,
    .event_record        = cuda_event_record,
    .event_wait          = cuda_event_wait,
    .graph_optimize      = NULL,
    .get_status          = cuda_get_status,
    .clear_status        = cuda_clear_status,
    .queue_hold          = NULL, /* a stream cannot be held from the host */
    .queue_pending       = NULL,
    .queue_mark          = cuda_queue_mark,
};

static bool cublas_ok(struct ggmlx_cuda_device * d, cublasStatus_t st, const char * func, const char * what) {
    if (st == CUBLAS_STATUS_SUCCESS) {
        return true;
    }
    ggmlx_error(func, "%s: %s: cuBLAS status %d", d->name, what, (int) st);
    return false;
}

/*
 * The cuBLAS handle works in the backend's stream. Its workspace is ours (a size cuBLAS
 * recommends for the architecture), set after cublasSetStream because setting the stream
 * makes cuBLAS drop a workspace given before.
 */
static bool setup_cublas(struct cuda_backend * ctx, const char * func) {
    struct ggmlx_cuda_device * d = ctx->d;
    ctx->cublas_ws_size = d->cc >= 90 ? (size_t) 32 << 20 : (size_t) 4 << 20;
    if (!ggmlx_cuda_check(d, cudaMalloc(&ctx->cublas_ws, ctx->cublas_ws_size), func, "cudaMalloc (cuBLAS workspace)")) {
        ctx->cublas_ws = NULL;
        return false;
    }
    if (!cublas_ok(d, cublasCreate(&ctx->cublas), func, "cublasCreate")) {
        ctx->cublas = NULL;
        return false;
    }
    return cublas_ok(d, cublasSetStream(ctx->cublas, ctx->stream), func, "cublasSetStream") &&
           cublas_ok(d, cublasSetWorkspace(ctx->cublas, ctx->cublas_ws, ctx->cublas_ws_size), func,
                     "cublasSetWorkspace");
}

/* zeroed in stream order: before any kernel of the backend can run */
static bool setup_row_err(struct cuda_backend * ctx, const char * func) {
    const size_t size = GGMLX_ROW_ERR_SLOTS * sizeof *ctx->row_err;
    if (!ggmlx_cuda_check(ctx->d, cudaMalloc((void **) &ctx->row_err, size), func, "cudaMalloc (row index check)")) {
        ctx->row_err = NULL;
        return false;
    }
    ggmlx_row_check_reset(&ctx->rows);
    return ggmlx_cuda_check(ctx->d, cudaMemsetAsync(ctx->row_err, 0, size, ctx->stream), func, "cudaMemsetAsync");
}

ggml_backend_t ggmlx_cuda_backend_new(struct ggmlx_cuda_device * d, const char * func) {
    if (!ggmlx_cuda_set_device(d, func)) {
        return NULL;
    }
    ggml_backend_t backend = calloc(1, sizeof *backend);
    struct cuda_backend * ctx = calloc(1, sizeof *ctx);
    if (backend == NULL || ctx == NULL) {
        ggmlx_error(func, "out of host memory");
        goto err_free;
    }
    ctx->d      = d;
    ctx->status = GGML_STATUS_SUCCESS;
    ggmlx_cuda_graphs_init(&ctx->graphs, d);
    /* non-blocking: the legacy default stream (other libraries' work) never serializes with ours */
    if (!ggmlx_cuda_check(d, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), func,
                          "cudaStreamCreateWithFlags")) {
        ctx->stream = NULL;
        goto err_ctx;
    }
    if (!setup_cublas(ctx, func) || !setup_row_err(ctx, func)) {
        goto err_ctx;
    }
    backend->guid    = cuda_guid();
    backend->iface   = cuda_backend_iface;
    backend->device  = &d->dev;
    backend->context = ctx;
    ggmlx_ok();
    return backend;

err_ctx:
    destroy(ctx, func);
    ctx = NULL;
err_free:
    free(ctx);
    free(backend);
    return NULL;
}
