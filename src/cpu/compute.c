/*
 * compute.c -- ggml_graph_plan / ggml_graph_compute: runs a graph's nodes in order on the
 * caller's thread plus pool workers.
 *
 * Every node is checked on the caller's thread before anything runs (kernel exists, data is
 * allocated), so a graph that cannot be computed fails without writing any tensor. Nodes worth
 * one thread run on thread 0 alone with no barrier; a barrier is paid only around nodes split
 * across threads, which keeps chains of small ops near the cost of a function call.
 */
#include "cpu-ops.h"
#include "threadpool.h"

#include <stdio.h>
#include <stdlib.h>

struct ggmlx_cpu_state {
    struct ggml_cgraph   * graph;
    struct ggml_cplan    * cplan;
    int                    nth;
    uint8_t              * tasks;   /* per node: 0 skip, 1 thread 0 alone, 2 all threads */
    ggmlx_cpu_kernel_t   * kernels;
    struct ggmlx_barrier   barrier;
    atomic_bool            cancel;
    atomic_int             status;
    atomic_flag            error_taken;
    char                   error[384];
};

void ggmlx_cpu_barrier(const struct ggmlx_cpu_params * params) {
    ggmlx_barrier_wait(&params->state->barrier, params->nth);
}

void ggmlx_cpu_fail(const struct ggmlx_cpu_params * params, const char * fmt, ...) {
    struct ggmlx_cpu_state * st = params->state;
    if (!atomic_flag_test_and_set(&st->error_taken)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->error, sizeof st->error, fmt, ap);
        va_end(ap);
        atomic_store(&st->status, GGML_STATUS_FAILED);
    }
    atomic_store(&st->cancel, true);
}

static void run_graph(void * job, int ith) {
    struct ggmlx_cpu_state * st = job;
    struct ggml_cplan * cplan = st->cplan;
    bool unpublished = false; /* thread 0 wrote results the others have not synchronized with */

    for (int i = 0; i < st->graph->n_nodes; i++) {
        const int mode = st->tasks[i];
        if (mode == 0) {
            continue;
        }
        struct ggml_tensor * node = st->graph->nodes[i];
        if (mode == 1) {
            unpublished = true;
            if (ith == 0) {
                const struct ggmlx_cpu_params p = { 0, 1, cplan->work_data, cplan->work_size, st };
                st->kernels[i](&p, node);
            }
        } else {
            if (unpublished) {
                ggmlx_barrier_wait(&st->barrier, st->nth);
                unpublished = false;
            }
            if (atomic_load_explicit(&st->cancel, memory_order_acquire)) {
                break;
            }
            const struct ggmlx_cpu_params p = { ith, st->nth, cplan->work_data, cplan->work_size, st };
            st->kernels[i](&p, node);
            ggmlx_barrier_wait(&st->barrier, st->nth);
        }
        if (ith == 0 && cplan->abort_callback && cplan->abort_callback(cplan->abort_callback_data)) {
            int expected = GGML_STATUS_SUCCESS;
            atomic_compare_exchange_strong(&st->status, &expected, GGML_STATUS_ABORTED);
            atomic_store(&st->cancel, true);
        }
        if (atomic_load_explicit(&st->cancel, memory_order_acquire)) {
            break;
        }
    }
}

static int clamp_threads(int n_threads) {
    if (n_threads <= 0) {
        return GGML_DEFAULT_N_THREADS;
    }
    return n_threads > GGML_MAX_N_THREADS ? GGML_MAX_N_THREADS : n_threads;
}

/* true when the node does work (views and nodes added without the COMPUTE flag do not) */
static bool node_computes(const struct ggml_tensor * node) {
    return !ggmlx_op_is_view(node->op) && (node->flags & GGML_TENSOR_FLAG_COMPUTE) && node->ne[0] != 0 &&
           node->ne[1] != 0 && node->ne[2] != 0 && node->ne[3] != 0;
}

struct ggml_cplan ggml_graph_plan(const struct ggml_cgraph * cgraph, int n_threads, struct ggml_threadpool * threadpool) {
    struct ggml_cplan plan;
    memset(&plan, 0, sizeof plan);
    n_threads = clamp_threads(n_threads);
    if (threadpool != NULL && threadpool->n_threads < n_threads) {
        n_threads = threadpool->n_threads;
    }
    plan.n_threads  = n_threads;
    plan.threadpool = threadpool;
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return plan;
    }
    size_t work = 0;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * node = cgraph->nodes[i];
        if (!node_computes(node)) {
            continue;
        }
        const size_t w = ggmlx_cpu_work_size(node, ggmlx_cpu_n_tasks(node, n_threads) > 1 ? n_threads : 1);
        work = w > work ? w : work;
    }
    plan.work_size = work ? work + 64 : 0; /* room to align the start to a cache line */
    ggmlx_ok();
    return plan;
}

static const char * type_list(const struct ggml_tensor * node, char * buf, size_t n) {
    int off = snprintf(buf, n, "%s <-", ggml_type_name(node->type));
    for (int j = 0; j < GGML_MAX_SRC && node->src[j] && off < (int) n; j++) {
        off += snprintf(buf + off, n - (size_t) off, " %s", ggml_type_name(node->src[j]->type));
    }
    return buf;
}

/* Fills kernels/tasks; returns false (error recorded) when some node cannot be computed. */
static bool prepare(struct ggmlx_cpu_state * st, bool * any_parallel) {
    *any_parallel = false;
    for (int i = 0; i < st->graph->n_nodes; i++) {
        struct ggml_tensor * node = st->graph->nodes[i];
        st->tasks[i] = 0;
        if (!node_computes(node)) {
            continue;
        }
        ggmlx_cpu_kernel_t k = ggmlx_cpu_kernel_for(node);
        if (k == NULL) {
            char types[128];
            const char * why = ggmlx_cpu_refusal(node);
            ggmlx_error("ggml_graph_compute", "node %d '%s': %s (%s) is not supported by the CPU kernels%s%s", i,
                        node->name, ggml_op_desc(node), type_list(node, types, sizeof types), why ? ": " : "",
                        why ? why : "");
            return false;
        }
        if (node->data == NULL) {
            ggmlx_error("ggml_graph_compute", "node %d '%s' (%s) has no data: allocate it first", i, node->name,
                        ggml_op_desc(node));
            return false;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s != NULL && s->data == NULL && !ggml_is_empty(s)) {
                ggmlx_error("ggml_graph_compute", "source %d '%s' of node %d '%s' has no data: allocate it first", j,
                            s->name, i, node->name);
                return false;
            }
        }
        st->kernels[i] = k;
        st->tasks[i]   = ggmlx_cpu_n_tasks(node, st->nth) > 1 ? 2 : 1;
        *any_parallel |= st->tasks[i] == 2;
    }
    return true;
}

enum ggml_status ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_cplan * cplan) {
    if (cgraph == NULL || cplan == NULL) {
        ggmlx_error(__func__, "cgraph or cplan is NULL");
        return GGML_STATUS_FAILED;
    }
    if (cgraph->failed) {
        ggmlx_error(__func__, "graph is marked failed (a NULL tensor or a full graph was added to it)");
        return GGML_STATUS_FAILED;
    }
    if (cplan->work_size > 0 && cplan->work_data == NULL) {
        ggmlx_error(__func__, "the plan needs %zu bytes of work_data", cplan->work_size);
        return GGML_STATUS_FAILED;
    }
    if (cplan->n_threads <= 0 || cplan->n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(__func__, "cplan->n_threads = %d is out of range", cplan->n_threads);
        return GGML_STATUS_FAILED;
    }
    ggml_cpu_init();

    struct ggmlx_cpu_state st;
    memset(&st, 0, sizeof st);
    st.graph = cgraph;
    st.nth   = cplan->n_threads;
    atomic_store(&st.status, GGML_STATUS_SUCCESS);
    atomic_flag_clear(&st.error_taken);
    atomic_store(&st.cancel, false);
    ggmlx_barrier_init(&st.barrier, &st.cancel);

    /* keep the caller's plan intact, but hand kernels a cache-line aligned work area */
    struct ggml_cplan plan = *cplan;
    if (plan.work_data != NULL) {
        const uintptr_t a = ((uintptr_t) plan.work_data + 63) & ~(uintptr_t) 63;
        const size_t    skew = (size_t) (a - (uintptr_t) plan.work_data);
        plan.work_size = plan.work_size > skew ? plan.work_size - skew : 0;
        plan.work_data = (uint8_t *) a;
    }
    st.cplan = &plan;

    const size_t n = (size_t) (cgraph->n_nodes > 0 ? cgraph->n_nodes : 1);
    st.tasks   = malloc(n);
    st.kernels = malloc(n * sizeof *st.kernels);
    enum ggml_status status = GGML_STATUS_FAILED;
    if (st.tasks == NULL || st.kernels == NULL) {
        ggmlx_error(__func__, "out of host memory");
        goto out;
    }
    bool any_parallel = false;
    if (!prepare(&st, &any_parallel)) {
        goto out;
    }

    struct ggml_threadpool * tp = NULL;
    if (any_parallel && st.nth > 1) {
        tp = cplan->threadpool ? cplan->threadpool : ggmlx_threadpool_acquire(st.nth);
        if (tp == NULL) {
            st.nth = 1; /* no threads to be had: compute alone rather than fail */
            for (size_t i = 0; i < (size_t) cgraph->n_nodes; i++) {
                st.tasks[i] = st.tasks[i] ? 1 : 0;
            }
        } else if (tp->n_threads < st.nth) {
            st.nth = tp->n_threads;
        }
    } else {
        st.nth = 1;
        for (size_t i = 0; i < (size_t) cgraph->n_nodes; i++) {
            st.tasks[i] = st.tasks[i] ? 1 : 0;
        }
    }
    if (tp != NULL) {
        ggmlx_threadpool_run(tp, st.nth, run_graph, &st);
        if (cplan->threadpool == NULL) {
            ggmlx_threadpool_release(tp);
        }
    } else {
        run_graph(&st, 0);
    }

    status = (enum ggml_status) atomic_load(&st.status);
    if (status == GGML_STATUS_FAILED) {
        ggmlx_error(__func__, "%s", st.error);
    } else if (status == GGML_STATUS_ABORTED) {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: aborted by the abort callback\n", __func__);
        ggmlx_ok();
    } else {
        ggmlx_ok();
    }
out:
    free(st.tasks);
    free(st.kernels);
    return status;
}

enum ggml_status ggml_graph_compute_with_ctx(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int n_threads) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return GGML_STATUS_FAILED;
    }
    struct ggml_cplan plan = ggml_graph_plan(cgraph, n_threads, NULL);
    if (cgraph == NULL) {
        return GGML_STATUS_FAILED;
    }
    if (plan.work_size > 0) {
        plan.work_data = ggml_new_buffer(ctx, plan.work_size);
        if (plan.work_data == NULL) {
            return GGML_STATUS_ALLOC_FAILED;
        }
    }
    return ggml_graph_compute(cgraph, &plan);
}
