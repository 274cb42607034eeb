/*
 * host-backend.c -- the queued host backend shared by the CPU and the simulated devices
 * (host-backend.h, docs/async.md).
 *
 * The executing thread (the worker, or the caller in sync mode) alone touches `run`, the
 * backend's own thread pool and its work buffer. Addresses are resolved when work is
 * enqueued, on the caller's thread, while the buffers are certainly alive.
 */
#include "host-backend.h"
#include "cpu-ops.h"
#include "graph-snapshot.h"
#include "host-alias.h"
#include "threadpool.h"

#include <stdio.h>
#include <stdlib.h>

struct host_plan {
    struct ggmlx_graph_snapshot * snap;
    struct ggml_cplan             cplan;
};

struct ggmlx_host_backend {
    const char               * name;
    struct ggmlx_queue       * queue;     /* NULL: sync mode */
    ggmlx_host_address_fn      address;
    void                     * address_ctx;
    ggmlx_host_compute_fn      compute;   /* NULL: the CPU executor */
    void                     * compute_ctx;
    struct ggmlx_host_settings host;
    struct ggmlx_host_settings run;
    struct ggml_threadpool   * own_pool;  /* run.n_threads threads, made when first needed */
    uint8_t                  * work;
    size_t                     work_size;
    struct host_plan        ** plans;     /* live plans, so a freed one is refused */
    size_t                     n_plans;
    size_t                     cap_plans;
};

static enum ggml_status hb_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph);

struct ggmlx_host_backend * ggmlx_host_backend_of(ggml_backend_t backend) {
    /* every host backend shares this vtable, whatever its guid */
    return backend != NULL && backend->iface.graph_compute == hb_graph_compute ? backend->context : NULL;
}

struct ggmlx_queue * ggmlx_host_backend_queue(const struct ggmlx_host_backend * hb) {
    return hb ? hb->queue : NULL;
}

/* ---- where memory is reached --------------------------------------------------------------- */

/* the address the executing thread uses for t's memory, NULL when this backend cannot use t */
static void * reach(const struct ggmlx_host_backend * hb, const struct ggml_tensor * t) {
    if (t->data == NULL) {
        return NULL;
    }
    if (hb->address != NULL) {
        return hb->address(hb->address_ctx, t);
    }
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(t);
    return buf == NULL || ggml_backend_buffer_is_host(buf) ? t->data : NULL;
}

/* where any host backend may read t: host memory, or a device's private memory through its twin */
static const void * readable(const struct ggml_tensor * t) {
    if (t->data == NULL) {
        return NULL;
    }
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(t);
    if (buf == NULL || ggml_backend_buffer_is_host(buf)) {
        return t->data;
    }
    return ggmlx_alias_lookup(t->data, NULL);
}

/* rewrites the snapshot's data pointers into the executing thread's addresses */
static void translate(const struct ggmlx_host_backend * hb, struct ggmlx_graph_snapshot * snap) {
    if (hb->address == NULL) {
        return;
    }
    int n;
    struct ggml_tensor * ts = ggmlx_graph_snapshot_tensors(snap, &n);
    for (int i = 0; i < n; i++) {
        /* one the hook does not know keeps its address: read there, it faults, as it should */
        void * p = ts[i].data ? hb->address(hb->address_ctx, &ts[i]) : NULL;
        if (p != NULL) {
            ts[i].data = p;
        }
    }
}

/* ---- checks at enqueue time ---------------------------------------------------------------- */

/* why reach() refused t, for messages */
static const char * unusable(const struct ggmlx_host_backend * hb, const struct ggml_tensor * t, char * buf, size_t size) {
    ggml_backend_buffer_t b = ggmlx_tensor_buffer(t);
    if (t->data == NULL) {
        return "is not allocated";
    }
    snprintf(buf, size, "is in %s, not in memory %s can use", b ? ggml_backend_buffer_name(b) : "host memory without a buffer",
             hb->name);
    return buf;
}

/* What can be known before running: FAILED (error recorded) when some node cannot run here. */
static enum ggml_status check_graph(const char * func, ggml_backend_t backend, const struct ggml_cgraph * g) {
    const struct ggmlx_host_backend * hb = backend->context;
    ggml_backend_dev_t dev = backend->device;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        if (ggmlx_op_is_view(node->op) || !(node->flags & GGML_TENSOR_FLAG_COMPUTE) || ggml_is_empty(node)) {
            continue;
        }
        if (!dev->iface.supports_op(dev, node)) {
            const char * why = ggmlx_cpu_refusal(node);
            ggmlx_error(func, "node %d '%s': %s of %s is not supported by %s%s%s; nothing queued", i, node->name,
                        ggml_op_desc(node), GGMLX_SHAPE(node), hb->name, why ? ": " : "", why ? why : "");
            return GGML_STATUS_FAILED;
        }
        if (reach(hb, node) == NULL) {
            char why[160];
            ggmlx_error(func, "node %d '%s' %s; nothing queued", i, node->name, unusable(hb, node, why, sizeof why));
            return GGML_STATUS_FAILED;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s != NULL && !ggml_is_empty(s) && reach(hb, s) == NULL) {
                char why[160];
                ggmlx_error(func, "source %d '%s' of node %d '%s' %s; nothing queued", j, s->name, i, node->name,
                            unusable(hb, s, why, sizeof why));
                return GGML_STATUS_FAILED;
            }
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* the sticky status of a queue, as an error of func (SUCCESS when there is none) */
static enum ggml_status sticky(const char * func, struct ggmlx_host_backend * hb) {
    const enum ggml_status st = ggmlx_queue_status(hb->queue);
    if (st != GGML_STATUS_SUCCESS) {
        ggmlx_error(func, "earlier work queued on %s failed (%s): %s; ggmlx_backend_clear_status resets it", hb->name,
                    ggml_status_to_string(st), ggmlx_queue_error(hb->queue));
    }
    return st;
}

/* push a task; a failed push already released arg */
static bool push(struct ggmlx_host_backend * hb, enum ggml_status (*run)(void *), void (*release)(void *), void * arg,
                 bool always_run) {
    const struct ggmlx_task task = { run, release, arg, always_run };
    return ggmlx_queue_push(hb->queue, task);
}

/* ---- computing (on the executing thread) --------------------------------------------------- */

static struct ggml_threadpool * own_pool(struct ggmlx_host_backend * hb) {
    const int n = hb->run.n_threads;
    if (hb->own_pool != NULL && hb->own_pool->n_threads != n) {
        ggml_threadpool_free(hb->own_pool);
        hb->own_pool = NULL;
    }
    if (hb->own_pool == NULL) {
        struct ggml_threadpool_params p = ggml_threadpool_params_default(n);
        hb->own_pool = ggml_threadpool_new(&p); /* NULL: the executor borrows a cached pool */
    }
    return hb->own_pool;
}

static enum ggml_status execute(struct ggmlx_host_backend * hb, struct ggml_cgraph * g) {
    if (hb->compute != NULL) {
        return hb->compute(hb->compute_ctx, g);
    }
    const struct ggmlx_host_settings * s = &hb->run;
    struct ggml_threadpool * pool = s->threadpool;
    if (pool == NULL && s->n_threads > 1) {
        pool = own_pool(hb);
    }
    struct ggml_cplan cplan = ggml_graph_plan(g, s->n_threads, pool);
    if (cplan.work_size > hb->work_size) {
        free(hb->work);
        hb->work_size = 0;
        hb->work = malloc(cplan.work_size);
        if (hb->work == NULL) {
            ggmlx_error("ggml_backend_graph_compute", "%s: no %zu bytes of host memory for the work buffer", hb->name,
                        cplan.work_size);
            return GGML_STATUS_ALLOC_FAILED;
        }
        hb->work_size = cplan.work_size;
    }
    cplan.work_data           = cplan.work_size ? hb->work : NULL;
    cplan.abort_callback      = s->abort_callback;
    cplan.abort_callback_data = s->abort_data;
    cplan.use_ref             = s->use_ref;
    return ggml_graph_compute(g, &cplan);
}

struct compute_job {
    struct ggmlx_host_backend   * hb;
    struct ggmlx_graph_snapshot * snap;
};

static enum ggml_status run_compute(void * arg) {
    struct compute_job * job = arg;
    const enum ggml_status st = execute(job->hb, ggmlx_graph_snapshot_graph(job->snap));
    if (st != GGML_STATUS_SUCCESS) {
        const char * why = ggmlx_last_error();
        char msg[512];
        snprintf(msg, sizeof msg, "queued graph_compute on %s: %s", job->hb->name,
                 why ? why : st == GGML_STATUS_ABORTED ? "aborted by the abort callback" : ggml_status_to_string(st));
        ggmlx_queue_set_error(job->hb->queue, st, msg);
    }
    return st;
}

static void release_compute(void * arg) {
    struct compute_job * job = arg;
    ggmlx_graph_snapshot_free(job->snap);
    free(job);
}

static enum ggml_status hb_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    static const char * func = "ggml_backend_graph_compute_async";
    struct ggmlx_host_backend * hb = backend->context;
    if (check_graph(func, backend, cgraph) != GGML_STATUS_SUCCESS) {
        return GGML_STATUS_FAILED;
    }
    if (hb->queue == NULL && hb->address == NULL) {
        return execute(hb, cgraph);
    }
    const enum ggml_status st = sticky(func, hb);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    struct compute_job * job = malloc(sizeof *job);
    if (job == NULL) {
        ggmlx_error(func, "out of host memory; nothing queued");
        return GGML_STATUS_ALLOC_FAILED;
    }
    job->hb   = hb;
    job->snap = ggmlx_graph_snapshot_new(cgraph);
    if (job->snap == NULL) {
        free(job);
        return GGML_STATUS_ALLOC_FAILED;
    }
    translate(hb, job->snap);
    if (hb->queue == NULL) {
        /* sync mode over translated memory: the snapshot is only the translation */
        const enum ggml_status done = execute(hb, ggmlx_graph_snapshot_graph(job->snap));
        release_compute(job);
        return done;
    }
    if (!push(hb, run_compute, release_compute, job, false)) {
        return GGML_STATUS_ALLOC_FAILED;
    }
    return GGML_STATUS_SUCCESS;
}

/* ---- queued copies ------------------------------------------------------------------------- */

struct copy_job {
    char       * dst;
    const char * src;
    size_t       size;
    size_t       n_rows;
    size_t       dst_stride;
    size_t       src_stride;
};

static enum ggml_status run_copy(void * arg) {
    const struct copy_job * c = arg;
    for (size_t i = 0; i < c->n_rows; i++) {
        memcpy(c->dst + i * c->dst_stride, c->src + i * c->src_stride, c->size);
    }
    return GGML_STATUS_SUCCESS;
}

/* copy now in sync mode, else queue it */
static void copy_rows(struct ggmlx_host_backend * hb, void * dst, const void * src, size_t size, size_t n_rows,
                      size_t dst_stride, size_t src_stride) {
    struct copy_job c = { dst, src, size, n_rows, dst_stride, src_stride };
    if (hb->queue == NULL) {
        run_copy(&c);
        return;
    }
    struct copy_job * job = malloc(sizeof *job);
    if (job == NULL) {
        /* keep the order by waiting for the queue, then copy */
        ggmlx_error("ggml_backend_tensor_copy_async", "out of host memory; copying synchronously");
        ggmlx_queue_sync(hb->queue);
        run_copy(&c);
        return;
    }
    *job = c;
    push(hb, run_copy, free, job, false);
}

/* t's memory as this backend reaches it, or NULL with an error of func */
static char * reach_or_error(const char * func, const struct ggmlx_host_backend * hb, const struct ggml_tensor * t) {
    char * p = reach(hb, t);
    if (p == NULL) {
        ggmlx_error(func, "%s: tensor '%s' is not in memory this backend can use", hb->name, t->name);
    }
    return p;
}

static void hb_set_tensor_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data, size_t offset,
                                size_t size) {
    char * p = reach_or_error("ggml_backend_tensor_set_async", backend->context, tensor);
    if (p != NULL) {
        copy_rows(backend->context, p + offset, data, size, 1, 0, 0);
    }
}

static void hb_get_tensor_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data, size_t offset,
                                size_t size) {
    const char * p = reach_or_error("ggml_backend_tensor_get_async", backend->context, tensor);
    if (p != NULL) {
        copy_rows(backend->context, data, p + offset, size, 1, 0, 0);
    }
}

static void hb_set_tensor_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                   size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                   size_t stride_data) {
    char * p = reach_or_error("ggml_backend_tensor_set_2d_async", backend->context, tensor);
    if (p != NULL) {
        copy_rows(backend->context, p + offset, data, size, n_copies, stride_tensor, stride_data);
    }
}

static void hb_get_tensor_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                   size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                   size_t stride_data) {
    const char * p = reach_or_error("ggml_backend_tensor_get_2d_async", backend->context, tensor);
    if (p != NULL) {
        copy_rows(backend->context, data, p + offset, size, n_copies, stride_data, stride_tensor);
    }
}

/*
 * Between two host backends (CPU or SIM, either way): src's queue records a private event,
 * dst's queue waits for it and then copies, so the copy follows everything queued on src
 * before it and precedes everything queued on dst after it (rule 7). Anything else (another
 * kind of source backend, memory neither side can reach) is left to the generic fallback.
 */
static bool hb_cpy_tensor_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor * src,
                                struct ggml_tensor * dst) {
    struct ggmlx_host_backend * s = ggmlx_host_backend_of(backend_src);
    struct ggmlx_host_backend * d = backend_dst->context;
    if (s == NULL || ggml_nbytes(src) != ggml_nbytes(dst)) {
        return false;
    }
    const void * from = readable(src);
    void *       to   = reach(d, dst);
    if (from == NULL || to == NULL) {
        return false;
    }
    if (s != d && s->queue != NULL) {
        ggml_backend_event_t ev = ggmlx_host_event_new(backend_src->device);
        if (ev == NULL) {
            return false;
        }
        ggmlx_host_event_record(s->queue, ev);
        ggmlx_host_event_wait(d->queue, ev); /* d in sync mode: the caller waits */
        ggmlx_host_event_free(ev);           /* the queued record and wait keep it alive */
    }
    copy_rows(d, to, from, ggml_nbytes(src), 1, 0, 0);
    return true;
}

static void hb_synchronize(ggml_backend_t backend) {
    struct ggmlx_host_backend * hb = backend->context;
    ggmlx_queue_sync(hb->queue);
}

/* ---- graph plans: run synchronously on the caller's thread --------------------------------- */

static ggml_backend_graph_plan_t hb_graph_plan_create(ggml_backend_t backend, const struct ggml_cgraph * cgraph) {
    static const char * func = "ggml_backend_graph_plan_create";
    struct ggmlx_host_backend * hb = backend->context;
    if (cgraph->failed) {
        ggmlx_error(func, "the graph is failed (a NULL or failed tensor was added to it)");
        return NULL;
    }
    if (check_graph(func, backend, cgraph) != GGML_STATUS_SUCCESS) {
        return NULL;
    }
    if (hb->n_plans == hb->cap_plans) {
        const size_t cap = hb->cap_plans ? hb->cap_plans * 2 : 8;
        struct host_plan ** plans = realloc(hb->plans, cap * sizeof *plans);
        if (plans == NULL) {
            goto err_oom;
        }
        hb->plans     = plans;
        hb->cap_plans = cap;
    }
    struct host_plan * plan = calloc(1, sizeof *plan);
    if (plan == NULL) {
        goto err_oom;
    }
    plan->snap = ggmlx_graph_snapshot_new(cgraph);
    if (plan->snap == NULL) {
        goto err_plan;
    }
    translate(hb, plan->snap);
    struct ggml_cgraph * g = ggmlx_graph_snapshot_graph(plan->snap);
    plan->cplan = ggml_graph_plan(g, hb->host.n_threads, hb->host.threadpool);
    if (plan->cplan.work_size > 0) {
        plan->cplan.work_data = malloc(plan->cplan.work_size);
        if (plan->cplan.work_data == NULL) {
            goto err_snap;
        }
    }
    plan->cplan.abort_callback      = hb->host.abort_callback;
    plan->cplan.abort_callback_data = hb->host.abort_data;
    plan->cplan.use_ref             = hb->host.use_ref;
    hb->plans[hb->n_plans++] = plan;
    ggmlx_ok();
    return plan;

err_snap:
    ggmlx_graph_snapshot_free(plan->snap);
err_plan:
    free(plan);
err_oom:
    ggmlx_error(func, "out of host memory");
    return NULL;
}

/* index of a live plan of hb, or -1 */
static long find_plan(const struct ggmlx_host_backend * hb, ggml_backend_graph_plan_t plan) {
    for (size_t i = 0; i < hb->n_plans; i++) {
        if (hb->plans[i] == plan) {
            return (long) i;
        }
    }
    return -1;
}

static void free_plan(struct host_plan * plan) {
    free(plan->cplan.work_data);
    ggmlx_graph_snapshot_free(plan->snap);
    free(plan);
}

static void hb_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    struct ggmlx_host_backend * hb = backend->context;
    const long i = find_plan(hb, plan);
    if (i < 0) {
        ggmlx_error("ggml_backend_graph_plan_free", "not a live plan of backend %s (freed already?)", hb->name);
        return;
    }
    free_plan(hb->plans[i]);
    hb->plans[i] = hb->plans[--hb->n_plans];
    ggmlx_ok();
}

static enum ggml_status hb_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    static const char * func = "ggml_backend_graph_plan_compute";
    struct ggmlx_host_backend * hb = backend->context;
    const long i = find_plan(hb, plan);
    if (i < 0) {
        ggmlx_error(func, "not a live plan of backend %s (freed, or made by another backend)", hb->name);
        return GGML_STATUS_FAILED;
    }
    /* a plan runs in queue order: after everything enqueued before it */
    ggmlx_queue_sync(hb->queue);
    const enum ggml_status st = sticky(func, hb);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    struct host_plan * p = hb->plans[i];
    if (hb->compute != NULL) {
        return hb->compute(hb->compute_ctx, ggmlx_graph_snapshot_graph(p->snap));
    }
    return ggml_graph_compute(ggmlx_graph_snapshot_graph(p->snap), &p->cplan);
}

/* ---- events -------------------------------------------------------------------------------- */

static void hb_event_record(ggml_backend_t backend, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_record";
    struct ggmlx_host_backend * hb = backend->context;
    if (ggmlx_host_event_of(event) == NULL || event->device != backend->device) {
        ggmlx_error(func, "the event was not made by device %s; a backend records only its own device's events",
                    ggml_backend_dev_name(backend->device));
        return;
    }
    if (ggmlx_host_event_record(hb->queue, event)) {
        ggmlx_ok();
    }
}

#ifndef GGMLX_DROP_EVENT_WAITS
static enum ggml_status run_foreign_wait(void * arg) {
    ggml_backend_event_synchronize(arg);
    return GGML_STATUS_SUCCESS;
}
#endif

static void hb_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    struct ggmlx_host_backend * hb = backend->context;
    if (event != NULL && ggmlx_host_event_of(event) == NULL && ggmlx_host_event_of(event->host_twin) != NULL) {
        event = event->host_twin; /* a CUDA event: its twin counts the records in queue order */
    }
    if (ggmlx_host_event_of(event) != NULL) {
        if (ggmlx_host_event_wait(hb->queue, event)) {
            ggmlx_ok();
        }
        return;
    }
#ifdef GGMLX_DROP_EVENT_WAITS
    return; /* the testing switch drops every wait (see host-queue.h) */
#else
    /* another kind's event (CUDA): the worker blocks on it, stronger than a native wait */
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&warned)) {
        ggmlx_log(GGML_LOG_LEVEL_WARN, "ggml_backend_event_wait: %s waits on a %s event by blocking its worker\n",
                  hb->name, event->device ? ggml_backend_dev_name(event->device) : "foreign");
    }
    if (hb->queue == NULL) {
        ggml_backend_event_synchronize(event);
        return;
    }
    push(hb, run_foreign_wait, NULL, event, true);
#endif
}

/* ---- status and test hooks ----------------------------------------------------------------- */

static enum ggml_status hb_get_status(ggml_backend_t backend) {
    /* the queue's own message is what the caller needs, so it becomes the last error */
    return sticky("ggml_backend_get_status", backend->context);
}

static void hb_clear_status(ggml_backend_t backend) {
    struct ggmlx_host_backend * hb = backend->context;
    ggmlx_queue_clear_status(hb->queue);
}

static bool hb_queue_hold(ggml_backend_t backend, bool hold) {
    struct ggmlx_host_backend * hb = backend->context;
    if (hb->queue == NULL) {
        return false;
    }
    ggmlx_queue_hold(hb->queue, hold);
    return true;
}

static size_t hb_queue_pending(ggml_backend_t backend) {
    struct ggmlx_host_backend * hb = backend->context;
    return ggmlx_queue_pending(hb->queue);
}

/* ---- time stamps (scheduler traces) -------------------------------------------------------- */

static enum ggml_status run_mark(void * arg) {
    *(uint64_t *) arg = ggmlx_time_ns();
    return GGML_STATUS_SUCCESS;
}

static void hb_queue_mark(ggml_backend_t backend, uint64_t * ns) {
    struct ggmlx_host_backend * hb = backend->context;
    /* always_run: a span must close even after queued work failed, or its time would be garbage */
    if (hb->queue == NULL || !push(hb, run_mark, NULL, ns, true)) {
        *ns = ggmlx_time_ns(); /* sync mode: everything before it has run already */
    }
}

/* ---- settings (queued) --------------------------------------------------------------------- */

struct settings_job {
    struct ggmlx_host_backend * hb;
    struct ggmlx_host_settings  s;
};

static enum ggml_status run_settings(void * arg) {
    struct settings_job * job = arg;
    job->hb->run = job->s;
    return GGML_STATUS_SUCCESS;
}

struct ggmlx_host_settings ggmlx_host_backend_settings(const struct ggmlx_host_backend * hb) {
    return hb->host;
}

struct ggmlx_host_settings ggmlx_host_backend_run_settings(const struct ggmlx_host_backend * hb) {
    return hb->run;
}

void ggmlx_host_backend_update(struct ggmlx_host_backend * hb, const struct ggmlx_host_settings * s) {
    hb->host = *s;
    if (hb->queue == NULL) {
        hb->run = hb->host;
        return;
    }
    struct settings_job * job = malloc(sizeof *job);
    if (job == NULL) {
        ggmlx_error("ggml_backend_cpu_set", "out of host memory; applying after the queued work");
        ggmlx_queue_sync(hb->queue);
        hb->run = hb->host;
        return;
    }
    job->hb = hb;
    job->s  = hb->host;
    push(hb, run_settings, free, job, true);
}

/* ---- the backend --------------------------------------------------------------------------- */

static const char * hb_get_name(ggml_backend_t backend) {
    const struct ggmlx_host_backend * hb = backend->context;
    return hb->name;
}

static void hb_free(ggml_backend_t backend) {
    struct ggmlx_host_backend * hb = backend->context;
    ggmlx_queue_free(hb->queue); /* runs what is queued first */
    for (size_t i = 0; i < hb->n_plans; i++) {
        free_plan(hb->plans[i]);
    }
    free(hb->plans);
    ggml_threadpool_free(hb->own_pool);
    free(hb->work);
    free(hb);
    free(backend);
}

static const struct ggml_backend_i host_backend_iface = {
    .get_name            = hb_get_name,
    .free                = hb_free,
    .set_tensor_async    = hb_set_tensor_async,
    .get_tensor_async    = hb_get_tensor_async,
    .set_tensor_2d_async = hb_set_tensor_2d_async,
    .get_tensor_2d_async = hb_get_tensor_2d_async,
    .cpy_tensor_async    = hb_cpy_tensor_async,
    .synchronize         = hb_synchronize,
    .graph_plan_create   = hb_graph_plan_create,
    .graph_plan_free     = hb_graph_plan_free,
    .graph_plan_update   = NULL,
    .graph_plan_compute  = hb_graph_plan_compute,
    .graph_compute       = hb_graph_compute,
    .event_record        = hb_event_record,
    .event_wait          = hb_event_wait,
    .graph_optimize      = NULL,
    .get_status          = hb_get_status,
    .clear_status        = hb_clear_status,
    .queue_hold          = hb_queue_hold,
    .queue_pending       = hb_queue_pending,
    .queue_mark          = hb_queue_mark,
};

ggml_backend_t ggmlx_host_backend_new(const struct ggmlx_host_backend_params * params) {
    static const char * func = "ggml_backend_dev_init";
    ggml_backend_t backend = calloc(1, sizeof *backend);
    struct ggmlx_host_backend * hb = calloc(1, sizeof *hb);
    if (backend == NULL || hb == NULL) {
        ggmlx_error(func, "out of host memory");
        goto err_free;
    }
    hb->name           = params->name;
    hb->address        = params->address;
    hb->address_ctx    = params->address_ctx;
    hb->compute        = params->compute;
    hb->compute_ctx    = params->compute_ctx;
    hb->host.n_threads = params->n_threads;
    hb->run            = hb->host;
    if (!params->sync) {
        hb->queue = ggmlx_queue_new(params->name);
        if (hb->queue == NULL) {
            goto err_free;
        }
        ggmlx_queue_set_chaos(hb->queue, params->chaos_seed);
    }
    backend->guid    = params->guid;
    backend->iface   = host_backend_iface;
    backend->device  = params->device;
    backend->context = hb;
    ggmlx_ok();
    return backend;

err_free:
    free(hb);
    free(backend);
    return NULL;
}
