/*
 * backend-cpu.c -- the CPU backend: one host queue per backend whose worker runs snapshots of
 * the graphs on the CPU executor (docs/async.md), or, in "sync" mode, no queue at all.
 *
 * Two copies of the settings exist because two threads use them: `host` is what the caller
 * last set (plans read it on the caller's thread), `run` is what the executing thread sees; a
 * setter changes `host` at once and `run` through the queue, so it applies exactly to the work
 * enqueued after it. The executing thread (the worker, or the caller in sync mode) alone
 * touches `run`, the backend's own thread pool and its work buffer.
 */
#include "backend-cpu.h"
#include "cpu-ops.h"
#include "graph-snapshot.h"
#include "threadpool.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_settings {
    int                      n_threads;
    struct ggml_threadpool * threadpool;   /* the caller's pool, or NULL for the backend's own */
    ggml_abort_callback      abort_callback;
    void                   * abort_data;
    bool                     use_ref;
};

struct cpu_plan {
    struct ggmlx_graph_snapshot * snap;
    struct ggml_cplan             cplan;
};

struct cpu_backend {
    struct ggmlx_queue     * queue;       /* NULL: sync mode */
    struct cpu_settings      host;
    struct cpu_settings      run;
    struct ggml_threadpool * own_pool;    /* run.n_threads threads, made when first needed */
    uint8_t                * work;
    size_t                   work_size;
    struct cpu_plan       ** plans;       /* live plans, so a freed one is refused */
    size_t                   n_plans;
    size_t                   cap_plans;
};

static ggml_guid_t cpu_guid(void) {
    static ggml_guid guid = { 0x67, 0x78, 0x63, 0x70, 0x75, 0x2d, 0x71, 0x75,
                              0x65, 0x75, 0x65, 0x2d, 0x76, 0x31, 0x00, 0x01 };
    return &guid;
}

bool ggml_backend_is_cpu(ggml_backend_t backend) {
    return backend != NULL && backend->guid != NULL && ggml_guid_matches(backend->guid, cpu_guid());
}

static struct cpu_backend * cpu_ctx(const char * func, ggml_backend_t backend) {
    if (!ggml_backend_is_cpu(backend)) {
        ggmlx_error(func, "%s is not a CPU backend", backend ? ggml_backend_name(backend) : "NULL");
        return NULL;
    }
    return backend->context;
}

struct ggmlx_queue * ggmlx_backend_cpu_queue(ggml_backend_t backend) {
    return ggml_backend_is_cpu(backend) ? ((struct cpu_backend *) backend->context)->queue : NULL;
}

/* ---- checks at enqueue time ---------------------------------------------------------------- */

static bool usable(const struct ggml_tensor * t) {
    if (t->data == NULL) {
        return false;
    }
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(t);
    return buf == NULL || ggml_backend_buffer_is_host(buf);
}

/* What can be known before running: FAILED (error recorded) when some node cannot run here. */
static enum ggml_status check_graph(const char * func, const struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        if (ggmlx_op_is_view(node->op) || !(node->flags & GGML_TENSOR_FLAG_COMPUTE) || ggml_is_empty(node)) {
            continue;
        }
        if (ggmlx_cpu_kernel_for(node) == NULL) {
            ggmlx_error(func, "node %d '%s': %s of %s is not supported by the CPU backend; nothing queued", i,
                        node->name, ggml_op_desc(node), GGMLX_SHAPE(node));
            return GGML_STATUS_FAILED;
        }
        if (!usable(node)) {
            ggmlx_error(func, "node %d '%s' is not allocated in host memory; nothing queued", i, node->name);
            return GGML_STATUS_FAILED;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s != NULL && !ggml_is_empty(s) && !usable(s)) {
                ggmlx_error(func, "source %d '%s' of node %d '%s' is not allocated in host memory; nothing queued",
                            j, s->name, i, node->name);
                return GGML_STATUS_FAILED;
            }
        }
    }
    return GGML_STATUS_SUCCESS;
}

/* the sticky status of a queue, as an error of func (SUCCESS when there is none) */
static enum ggml_status sticky(const char * func, struct cpu_backend * ctx) {
    const enum ggml_status st = ggmlx_queue_status(ctx->queue);
    if (st != GGML_STATUS_SUCCESS) {
        ggmlx_error(func, "earlier work queued on CPU failed (%s): %s; ggmlx_backend_clear_status resets it",
                    ggml_status_to_string(st), ggmlx_queue_error(ctx->queue));
    }
    return st;
}

/* push a task; a failed push already released arg */
static bool push(struct cpu_backend * ctx, enum ggml_status (*run)(void *), void (*release)(void *), void * arg,
                 bool always_run) {
    const struct ggmlx_task task = { run, release, arg, always_run };
    return ggmlx_queue_push(ctx->queue, task);
}

/* ---- computing (on the executing thread) --------------------------------------------------- */

static struct ggml_threadpool * own_pool(struct cpu_backend * ctx) {
    const int n = ctx->run.n_threads;
    if (ctx->own_pool != NULL && ctx->own_pool->n_threads != n) {
        ggml_threadpool_free(ctx->own_pool);
        ctx->own_pool = NULL;
    }
    if (ctx->own_pool == NULL) {
        struct ggml_threadpool_params p = ggml_threadpool_params_default(n);
        ctx->own_pool = ggml_threadpool_new(&p); /* NULL: the executor borrows a cached pool */
    }
    return ctx->own_pool;
}

static enum ggml_status execute(struct cpu_backend * ctx, struct ggml_cgraph * g) {
    const struct cpu_settings * s = &ctx->run;
    struct ggml_threadpool * pool = s->threadpool;
    if (pool == NULL && s->n_threads > 1) {
        pool = own_pool(ctx);
    }
    struct ggml_cplan cplan = ggml_graph_plan(g, s->n_threads, pool);
    if (cplan.work_size > ctx->work_size) {
        free(ctx->work);
        ctx->work_size = 0;
        ctx->work = malloc(cplan.work_size);
        if (ctx->work == NULL) {
            ggmlx_error("ggml_backend_graph_compute", "CPU: no %zu bytes of host memory for the work buffer",
                        cplan.work_size);
            return GGML_STATUS_ALLOC_FAILED;
        }
        ctx->work_size = cplan.work_size;
    }
    cplan.work_data           = cplan.work_size ? ctx->work : NULL;
    cplan.abort_callback      = s->abort_callback;
    cplan.abort_callback_data = s->abort_data;
    cplan.use_ref             = s->use_ref;
    return ggml_graph_compute(g, &cplan);
}

struct compute_job {
    struct cpu_backend          * ctx;
    struct ggmlx_graph_snapshot * snap;
};

static enum ggml_status run_compute(void * arg) {
    struct compute_job * job = arg;
    const enum ggml_status st = execute(job->ctx, ggmlx_graph_snapshot_graph(job->snap));
    if (st != GGML_STATUS_SUCCESS) {
        const char * why = ggmlx_last_error();
        char msg[512];
        snprintf(msg, sizeof msg, "queued graph_compute on CPU: %s",
                 why ? why : st == GGML_STATUS_ABORTED ? "aborted by the abort callback" : ggml_status_to_string(st));
        ggmlx_queue_set_error(job->ctx->queue, st, msg);
    }
    return st;
}

static void release_compute(void * arg) {
    struct compute_job * job = arg;
    ggmlx_graph_snapshot_free(job->snap);
    free(job);
}

static enum ggml_status cpu_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    static const char * func = "ggml_backend_graph_compute_async";
    struct cpu_backend * ctx = backend->context;
    if (check_graph(func, cgraph) != GGML_STATUS_SUCCESS) {
        return GGML_STATUS_FAILED;
    }
    if (ctx->queue == NULL) {
        return execute(ctx, cgraph);
    }
    const enum ggml_status st = sticky(func, ctx);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    struct compute_job * job = malloc(sizeof *job);
    if (job == NULL) {
        ggmlx_error(func, "out of host memory; nothing queued");
        return GGML_STATUS_ALLOC_FAILED;
    }
    job->ctx  = ctx;
    job->snap = ggmlx_graph_snapshot_new(cgraph);
    if (job->snap == NULL) {
        free(job);
        return GGML_STATUS_ALLOC_FAILED;
    }
    if (!push(ctx, run_compute, release_compute, job, false)) {
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
static void copy_rows(struct cpu_backend * ctx, void * dst, const void * src, size_t size, size_t n_rows,
                      size_t dst_stride, size_t src_stride) {
    struct copy_job c = { dst, src, size, n_rows, dst_stride, src_stride };
    if (ctx->queue == NULL) {
        run_copy(&c);
        return;
    }
    struct copy_job * job = malloc(sizeof *job);
    if (job == NULL) {
        /* keep the order by waiting for the queue, then copy */
        ggmlx_error("ggml_backend_tensor_copy_async", "out of host memory; copying synchronously");
        ggmlx_queue_sync(ctx->queue);
        run_copy(&c);
        return;
    }
    *job = c;
    push(ctx, run_copy, free, job, false);
}

static bool host_tensor(const struct ggml_tensor * t) {
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(t);
    return t->data != NULL && (buf == NULL || ggml_backend_buffer_is_host(buf));
}

static void cpu_set_tensor_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data, size_t offset,
                                 size_t size) {
    if (!host_tensor(tensor)) {
        ggmlx_error("ggml_backend_tensor_set_async", "CPU: tensor '%s' is not in host memory", tensor->name);
        return;
    }
    copy_rows(backend->context, (char *) tensor->data + offset, data, size, 1, 0, 0);
}

static void cpu_get_tensor_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data, size_t offset,
                                 size_t size) {
    if (!host_tensor(tensor)) {
        ggmlx_error("ggml_backend_tensor_get_async", "CPU: tensor '%s' is not in host memory", tensor->name);
        return;
    }
    copy_rows(backend->context, data, (const char *) tensor->data + offset, size, 1, 0, 0);
}

static void cpu_set_tensor_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                    size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                    size_t stride_data) {
    if (!host_tensor(tensor)) {
        ggmlx_error("ggml_backend_tensor_set_2d_async", "CPU: tensor '%s' is not in host memory", tensor->name);
        return;
    }
    copy_rows(backend->context, (char *) tensor->data + offset, data, size, n_copies, stride_tensor, stride_data);
}

static void cpu_get_tensor_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                    size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                    size_t stride_data) {
    if (!host_tensor(tensor)) {
        ggmlx_error("ggml_backend_tensor_get_2d_async", "CPU: tensor '%s' is not in host memory", tensor->name);
        return;
    }
    copy_rows(backend->context, data, (const char *) tensor->data + offset, size, n_copies, stride_data,
              stride_tensor);
}

/*
 * Between two CPU backends: src's queue records a private event, dst's queue waits for it and
 * then copies, so the copy follows everything queued on src before it and precedes everything
 * queued on dst after it (rule 7). Anything else is left to the generic fallback.
 */
static bool cpu_cpy_tensor_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor * src,
                                 struct ggml_tensor * dst) {
    if (!ggml_backend_is_cpu(backend_src) || !host_tensor(src) || !host_tensor(dst) ||
        ggml_nbytes(src) != ggml_nbytes(dst)) {
        return false;
    }
    struct cpu_backend * s = backend_src->context;
    struct cpu_backend * d = backend_dst->context;
    if (s != d && s->queue != NULL) {
        ggml_backend_event_t ev = ggmlx_host_event_new(backend_src->device);
        if (ev == NULL) {
            return false;
        }
        ggmlx_host_event_record(s->queue, ev);
        ggmlx_host_event_wait(d->queue, ev); /* d in sync mode: the caller waits */
        ggmlx_host_event_free(ev);           /* the queued record and wait keep it alive */
    }
    copy_rows(d, dst->data, src->data, ggml_nbytes(src), 1, 0, 0);
    return true;
}

static void cpu_synchronize(ggml_backend_t backend) {
    struct cpu_backend * ctx = backend->context;
    ggmlx_queue_sync(ctx->queue);
}

/* ---- graph plans: run synchronously on the caller's thread --------------------------------- */

static ggml_backend_graph_plan_t cpu_graph_plan_create(ggml_backend_t backend, const struct ggml_cgraph * cgraph) {
    static const char * func = "ggml_backend_graph_plan_create";
    struct cpu_backend * ctx = backend->context;
    if (cgraph->failed) {
        ggmlx_error(func, "the graph is failed (a NULL or failed tensor was added to it)");
        return NULL;
    }
    if (check_graph(func, cgraph) != GGML_STATUS_SUCCESS) {
        return NULL;
    }
    if (ctx->n_plans == ctx->cap_plans) {
        const size_t cap = ctx->cap_plans ? ctx->cap_plans * 2 : 8;
        struct cpu_plan ** plans = realloc(ctx->plans, cap * sizeof *plans);
        if (plans == NULL) {
            goto err_oom;
        }
        ctx->plans     = plans;
        ctx->cap_plans = cap;
    }
    struct cpu_plan * plan = calloc(1, sizeof *plan);
    if (plan == NULL) {
        goto err_oom;
    }
    plan->snap = ggmlx_graph_snapshot_new(cgraph);
    if (plan->snap == NULL) {
        goto err_plan;
    }
    struct ggml_cgraph * g = ggmlx_graph_snapshot_graph(plan->snap);
    plan->cplan = ggml_graph_plan(g, ctx->host.n_threads, ctx->host.threadpool);
    if (plan->cplan.work_size > 0) {
        plan->cplan.work_data = malloc(plan->cplan.work_size);
        if (plan->cplan.work_data == NULL) {
            goto err_snap;
        }
    }
    plan->cplan.abort_callback      = ctx->host.abort_callback;
    plan->cplan.abort_callback_data = ctx->host.abort_data;
    plan->cplan.use_ref             = ctx->host.use_ref;
    ctx->plans[ctx->n_plans++] = plan;
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

/* index of a live plan of ctx, or -1 */
static long find_plan(const struct cpu_backend * ctx, ggml_backend_graph_plan_t plan) {
    for (size_t i = 0; i < ctx->n_plans; i++) {
        if (ctx->plans[i] == plan) {
            return (long) i;
        }
    }
    return -1;
}

static void free_plan(struct cpu_plan * plan) {
    free(plan->cplan.work_data);
    ggmlx_graph_snapshot_free(plan->snap);
    free(plan);
}

static void cpu_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    struct cpu_backend * ctx = backend->context;
    const long i = find_plan(ctx, plan);
    if (i < 0) {
        ggmlx_error("ggml_backend_graph_plan_free", "not a live plan of this CPU backend (freed already?)");
        return;
    }
    free_plan(ctx->plans[i]);
    ctx->plans[i] = ctx->plans[--ctx->n_plans];
    ggmlx_ok();
}

static enum ggml_status cpu_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    static const char * func = "ggml_backend_graph_plan_compute";
    struct cpu_backend * ctx = backend->context;
    const long i = find_plan(ctx, plan);
    if (i < 0) {
        ggmlx_error(func, "not a live plan of this CPU backend (freed, or made by another backend)");
        return GGML_STATUS_FAILED;
    }
    /* a plan runs in queue order: after everything enqueued before it */
    ggmlx_queue_sync(ctx->queue);
    const enum ggml_status st = sticky(func, ctx);
    if (st != GGML_STATUS_SUCCESS) {
        return st;
    }
    struct cpu_plan * p = ctx->plans[i];
    return ggml_graph_compute(ggmlx_graph_snapshot_graph(p->snap), &p->cplan);
}

/* ---- events -------------------------------------------------------------------------------- */

static void cpu_event_record(ggml_backend_t backend, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_record";
    struct cpu_backend * ctx = backend->context;
    if (ggmlx_host_event_of(event) == NULL || event->device != backend->device) {
        ggmlx_error(func, "the event was not made by the CPU device; a backend records only its own device's events");
        return;
    }
    if (ggmlx_host_event_record(ctx->queue, event)) {
        ggmlx_ok();
    }
}

#ifndef GGMLX_DROP_EVENT_WAITS
static enum ggml_status run_foreign_wait(void * arg) {
    ggml_backend_event_synchronize(arg);
    return GGML_STATUS_SUCCESS;
}
#endif

static void cpu_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    struct cpu_backend * ctx = backend->context;
    if (ggmlx_host_event_of(event) != NULL) {
        if (ggmlx_host_event_wait(ctx->queue, event)) {
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
        ggmlx_log(GGML_LOG_LEVEL_WARN, "ggml_backend_event_wait: CPU waits on a %s event by blocking its worker\n",
                  event->device ? ggml_backend_dev_name(event->device) : "foreign");
    }
    if (ctx->queue == NULL) {
        ggml_backend_event_synchronize(event);
        return;
    }
    push(ctx, run_foreign_wait, NULL, event, true);
#endif
}

/* ---- status and test hooks ----------------------------------------------------------------- */

static enum ggml_status cpu_get_status(ggml_backend_t backend) {
    /* the queue's own message is what the caller needs, so it becomes the last error */
    return sticky("ggml_backend_get_status", backend->context);
}

static void cpu_clear_status(ggml_backend_t backend) {
    struct cpu_backend * ctx = backend->context;
    ggmlx_queue_clear_status(ctx->queue);
}

static bool cpu_queue_hold(ggml_backend_t backend, bool hold) {
    struct cpu_backend * ctx = backend->context;
    if (ctx->queue == NULL) {
        return false;
    }
    ggmlx_queue_hold(ctx->queue, hold);
    return true;
}

static size_t cpu_queue_pending(ggml_backend_t backend) {
    struct cpu_backend * ctx = backend->context;
    return ggmlx_queue_pending(ctx->queue);
}

/* ---- settings (queued) --------------------------------------------------------------------- */

struct settings_job {
    struct cpu_backend * ctx;
    struct cpu_settings  s;
};

static enum ggml_status run_settings(void * arg) {
    struct settings_job * job = arg;
    job->ctx->run = job->s;
    return GGML_STATUS_SUCCESS;
}

/* the caller changed ctx->host: the executing thread picks it up in queue order */
static void publish_settings(struct cpu_backend * ctx) {
    if (ctx->queue == NULL) {
        ctx->run = ctx->host;
        return;
    }
    struct settings_job * job = malloc(sizeof *job);
    if (job == NULL) {
        ggmlx_error("ggml_backend_cpu_set", "out of host memory; applying after the queued work");
        ggmlx_queue_sync(ctx->queue);
        ctx->run = ctx->host;
        return;
    }
    job->ctx = ctx;
    job->s   = ctx->host;
    push(ctx, run_settings, free, job, true);
}

void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads) {
    struct cpu_backend * ctx = cpu_ctx(__func__, backend_cpu);
    if (ctx == NULL) {
        return;
    }
    if (n_threads <= 0 || n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(__func__, "n_threads = %d is out of range (1 to %d)", n_threads, GGML_MAX_N_THREADS);
        return;
    }
    ctx->host.n_threads = n_threads;
    publish_settings(ctx);
    ggmlx_ok();
}

void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool) {
    struct cpu_backend * ctx = cpu_ctx(__func__, backend_cpu);
    if (ctx == NULL) {
        return;
    }
    ctx->host.threadpool = threadpool;
    publish_settings(ctx);
    ggmlx_ok();
}

void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback,
                                         void * abort_callback_data) {
    struct cpu_backend * ctx = cpu_ctx(__func__, backend_cpu);
    if (ctx == NULL) {
        return;
    }
    ctx->host.abort_callback = abort_callback;
    ctx->host.abort_data     = abort_callback_data;
    publish_settings(ctx);
    ggmlx_ok();
}

void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref) {
    struct cpu_backend * ctx = cpu_ctx(__func__, backend_cpu);
    if (ctx == NULL) {
        return;
    }
    ctx->host.use_ref = use_ref;
    publish_settings(ctx);
    ggmlx_ok();
}

int ggmlx_backend_cpu_run_n_threads(ggml_backend_t backend) {
    return ggml_backend_is_cpu(backend) ? ((struct cpu_backend *) backend->context)->run.n_threads : 0;
}

/* ---- the backend --------------------------------------------------------------------------- */

static const char * cpu_get_name(ggml_backend_t backend) {
    (void) backend;
    return "CPU";
}

static void cpu_free(ggml_backend_t backend) {
    struct cpu_backend * ctx = backend->context;
    ggmlx_queue_free(ctx->queue); /* runs what is queued first */
    for (size_t i = 0; i < ctx->n_plans; i++) {
        free_plan(ctx->plans[i]);
    }
    free(ctx->plans);
    ggml_threadpool_free(ctx->own_pool);
    free(ctx->work);
    free(ctx);
    free(backend);
}

static const struct ggml_backend_i cpu_backend_iface = {
    .get_name            = cpu_get_name,
    .free                = cpu_free,
    .set_tensor_async    = cpu_set_tensor_async,
    .get_tensor_async    = cpu_get_tensor_async,
    .set_tensor_2d_async = cpu_set_tensor_2d_async,
    .get_tensor_2d_async = cpu_get_tensor_2d_async,
    .cpy_tensor_async    = cpu_cpy_tensor_async,
    .synchronize         = cpu_synchronize,
    .graph_plan_create   = cpu_graph_plan_create,
    .graph_plan_free     = cpu_graph_plan_free,
    .graph_plan_update   = NULL,
    .graph_plan_compute  = cpu_graph_plan_compute,
    .graph_compute       = cpu_graph_compute,
    .event_record        = cpu_event_record,
    .event_wait          = cpu_event_wait,
    .graph_optimize      = NULL,
    .get_status          = cpu_get_status,
    .clear_status        = cpu_clear_status,
    .queue_hold          = cpu_queue_hold,
    .queue_pending       = cpu_queue_pending,
};

ggml_backend_t ggmlx_cpu_backend_new(ggml_backend_dev_t dev, const struct ggmlx_cpu_backend_params * params) {
    static const char * func = "ggml_backend_cpu_init";
    ggml_backend_t backend = calloc(1, sizeof *backend);
    struct cpu_backend * ctx = calloc(1, sizeof *ctx);
    if (backend == NULL || ctx == NULL) {
        ggmlx_error(func, "out of host memory");
        goto err_free;
    }
    ctx->host.n_threads = params->n_threads;
    ctx->run            = ctx->host;
    if (!params->sync) {
        ctx->queue = ggmlx_queue_new("CPU");
        if (ctx->queue == NULL) {
            goto err_free;
        }
    }
    backend->guid    = cpu_guid();
    backend->iface   = cpu_backend_iface;
    backend->device  = dev;
    backend->context = ctx;
    ggmlx_ok();
    return backend;

err_free:
    free(ctx);
    free(backend);
    return NULL;
}

#ifdef GGML_BACKEND_DL
/*
 * The module's ggml_backend_score (ggml_backend_init is in backend-cpu-device.c). One build runs
 * on any host, picking its mul_mat kernel at run time, so there are no variants to rank: it is
 * always usable.
 */
static int cpu_module_score(void) {
    return 1;
}

GGML_BACKEND_DL_SCORE_IMPL(cpu_module_score)
#endif
