/*
 * sched.c -- the backend scheduler's life cycle and small public calls: creation and checks of
 * the arguments, getters, reset, pinning tensors to backends, and the ggmlx-sched.h extensions.
 * The work itself is in sched-split.c (placement), sched-alloc.c (memory) and
 * sched-compute.c (queues and events). docs/scheduler.md describes the whole.
 */
#include "sched-impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_SCHED(ret)                                                                      \
    do {                                                                                      \
        if (sched == NULL) {                                                                  \
            ggmlx_error(__func__, "sched is NULL");                                           \
            return ret;                                                                       \
        }                                                                                     \
    } while (0)
#define NOTHING

int ggmlx_sched_backend_id(const struct ggml_backend_sched * sched, ggml_backend_t backend) {
    for (int i = 0; i < sched->n_backends; i++) {
        if (sched->backends[i] == backend) {
            return i;
        }
    }
    return -1;
}

bool ggmlx_sched_owns_buffer(const struct ggml_backend_sched * sched, ggml_backend_buffer_t buffer) {
    for (int i = 0; buffer != NULL && i < sched->n_own_buffers; i++) {
        if (sched->own_buffers[i] == buffer) {
            return true;
        }
    }
    return false;
}

/*
 * The buffers of every live scheduler, by value. A tensor marked as a scheduler's allocation
 * whose buffer is in no live scheduler was left behind by one since freed: it is placed anew
 * rather than taken for a tensor the user pre-allocated (its buffer is gone).
 */
static pthread_mutex_t         g_live_mutex = PTHREAD_MUTEX_INITIALIZER;
static ggml_backend_buffer_t * g_live;
static const void           ** g_live_owner;
static int                     g_n_live, g_live_cap;

static bool live_add(const struct ggml_backend_sched * sched, ggml_backend_buffer_t buffer) {
    bool ok = true;
    pthread_mutex_lock(&g_live_mutex);
    if (g_n_live == g_live_cap) {
        const int cap = g_live_cap ? 2 * g_live_cap : 64;
        ggml_backend_buffer_t * b = realloc(g_live, (size_t) cap * sizeof *b);
        if (b != NULL) {
            g_live = b;
        }
        const void ** o = b != NULL ? realloc(g_live_owner, (size_t) cap * sizeof *o) : NULL;
        if (o != NULL) {
            g_live_owner = o;
            g_live_cap   = cap;
        }
        ok = b != NULL && o != NULL;
    }
    if (ok) {
        g_live[g_n_live]       = buffer;
        g_live_owner[g_n_live] = sched;
        g_n_live++;
    }
    pthread_mutex_unlock(&g_live_mutex);
    return ok;
}

static void live_remove_all(const struct ggml_backend_sched * sched) {
    pthread_mutex_lock(&g_live_mutex);
    int n = 0;
    for (int i = 0; i < g_n_live; i++) {
        if (g_live_owner[i] != sched) {
            g_live[n]       = g_live[i];
            g_live_owner[n] = g_live_owner[i];
            n++;
        }
    }
    g_n_live = n;
    pthread_mutex_unlock(&g_live_mutex);
}

bool ggmlx_sched_buffer_is_live(ggml_backend_buffer_t buffer) {
    bool found = false;
    pthread_mutex_lock(&g_live_mutex);
    for (int i = 0; i < g_n_live && !found; i++) {
        found = g_live[i] == buffer;
    }
    pthread_mutex_unlock(&g_live_mutex);
    return found;
}

bool ggmlx_sched_add_own_buffer(struct ggml_backend_sched * sched, ggml_backend_buffer_t buffer) {
    if (buffer == NULL || ggmlx_sched_owns_buffer(sched, buffer)) {
        return true;
    }
    if (!live_add(sched, buffer)) {
        return false;
    }
    if (sched->n_own_buffers == sched->own_buffers_cap) {
        const int cap = sched->own_buffers_cap ? 2 * sched->own_buffers_cap : 16;
        ggml_backend_buffer_t * b = realloc(sched->own_buffers, (size_t) cap * sizeof *b);
        if (b == NULL) {
            return false;
        }
        sched->own_buffers     = b;
        sched->own_buffers_cap = cap;
    }
    sched->own_buffers[sched->n_own_buffers++] = buffer;
    return true;
}

/* ---- creation ------------------------------------------------------------------------------- */

static bool check_backends(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts, int n) {
    static const char * func = "ggml_backend_sched_new";
    if (backends == NULL) {
        ggmlx_error(func, "backends is NULL");
        return false;
    }
    if (n <= 0 || n > GGML_SCHED_MAX_BACKENDS) {
        ggmlx_error(func, "n_backends is %d; a scheduler takes 1 to %d backends", n, GGML_SCHED_MAX_BACKENDS);
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (backends[i] == NULL) {
            ggmlx_error(func, "backends[%d] is NULL", i);
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (backends[j] == backends[i]) {
                ggmlx_error(func, "backend %s is listed twice (%d and %d)", ggml_backend_name(backends[i]), j, i);
                return false;
            }
        }
        if (bufts != NULL && bufts[i] != NULL && !ggml_backend_supports_buft(backends[i], bufts[i])) {
            ggmlx_error(func, "backend %s cannot use buffer type %s (bufts[%d])", ggml_backend_name(backends[i]),
                        ggml_backend_buft_name(bufts[i]), i);
            return false;
        }
    }
    ggml_backend_dev_t last = ggml_backend_get_device(backends[n - 1]);
    if (last == NULL || ggml_backend_dev_type(last) != GGML_BACKEND_DEVICE_TYPE_CPU) {
        /* every op must have somewhere to run: the CPU is the fallback of last resort */
        ggmlx_error(func, "the last backend must be a CPU backend (it is %s)", ggml_backend_name(backends[n - 1]));
        return false;
    }
    return true;
}

static void free_events(struct ggml_backend_sched * sched) {
    for (int b = 0; b < sched->n_backends; b++) {
        ggml_backend_event_free(sched->ev_progress[b]);
        ggml_backend_event_free(sched->ev_reads[b]);
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            ggml_backend_event_free(sched->ev_slot[b][c]);
        }
    }
}

/* NULL events are allowed (a device without events): the scheduler then synchronizes instead */
static void make_events(struct ggml_backend_sched * sched) {
    for (int b = 0; b < sched->n_backends; b++) {
        ggml_backend_dev_t dev = ggml_backend_get_device(sched->backends[b]);
        struct ggml_backend_dev_props props;
        ggml_backend_dev_get_props(dev, &props);
        if (!props.caps.events) {
            continue;
        }
        sched->ev_progress[b] = ggml_backend_event_new(dev);
        sched->ev_reads[b]    = ggml_backend_event_new(dev);
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            sched->ev_slot[b][c] = ggml_backend_event_new(dev);
        }
    }
}

/*
 * A CPU backend next to a device with pinned host memory (a GPU) computes in that memory, so
 * copies between the two are true asynchronous DMA rather than staged by the driver.
 */
static ggml_backend_buffer_type_t default_buft(ggml_backend_t * backends, int n, int i) {
    ggml_backend_buffer_type_t own = ggml_backend_get_default_buffer_type(backends[i]);
    ggml_backend_dev_t dev = ggml_backend_get_device(backends[i]);
    if (dev == NULL || ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) {
        return own;
    }
    for (int j = 0; j < n; j++) {
        ggml_backend_dev_t other = ggml_backend_get_device(backends[j]);
        if (j == i || other == NULL || ggml_backend_dev_type(other) == GGML_BACKEND_DEVICE_TYPE_CPU) {
            continue;
        }
        ggml_backend_buffer_type_t pinned = ggml_backend_dev_host_buffer_type(other);
        if (pinned != NULL && ggml_backend_supports_buft(backends[i], pinned)) {
            return pinned;
        }
    }
    return own;
}

/* ---- live schedulers, for backends freed before them -------------------------------------------- */

static pthread_mutex_t               g_scheds_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ggml_backend_sched **  g_scheds;
static int                           g_n_scheds, g_scheds_cap;

static void forget_backend(ggml_backend_t backend) {
    pthread_mutex_lock(&g_scheds_mutex);
    for (int i = 0; i < g_n_scheds; i++) {
        for (int b = 0; b < g_scheds[i]->n_backends; b++) {
            if (g_scheds[i]->backends[b] == backend) {
                g_scheds[i]->backend_gone[b] = true;
            }
        }
    }
    pthread_mutex_unlock(&g_scheds_mutex);
}

static bool scheds_add(struct ggml_backend_sched * sched) {
    bool ok = true;
    pthread_mutex_lock(&g_scheds_mutex);
    if (g_n_scheds == g_scheds_cap) {
        const int cap = g_scheds_cap ? 2 * g_scheds_cap : 16;
        struct ggml_backend_sched ** n = realloc(g_scheds, (size_t) cap * sizeof *n);
        ok = n != NULL;
        if (ok) {
            g_scheds     = n;
            g_scheds_cap = cap;
        }
    }
    if (ok) {
        g_scheds[g_n_scheds++] = sched;
        ggmlx_backend_set_free_hook(forget_backend);
    }
    pthread_mutex_unlock(&g_scheds_mutex);
    return ok;
}

static void scheds_remove(const struct ggml_backend_sched * sched) {
    pthread_mutex_lock(&g_scheds_mutex);
    for (int i = 0; i < g_n_scheds; i++) {
        if (g_scheds[i] == sched) {
            g_scheds[i] = g_scheds[--g_n_scheds];
            break;
        }
    }
    pthread_mutex_unlock(&g_scheds_mutex);
}

ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts, int n_backends,
                                            size_t graph_size, bool parallel, bool op_offload) {
    if (!check_backends(backends, bufts, n_backends)) {
        return NULL;
    }
    struct ggml_backend_sched * sched = calloc(1, sizeof *sched);
    if (sched == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    sched->n_backends = n_backends;
    for (int i = 0; i < n_backends; i++) {
        sched->backends[i] = backends[i];
        sched->bufts[i]    = bufts != NULL && bufts[i] != NULL ? bufts[i] : default_buft(backends, n_backends, i);
    }
    sched->galloc = ggml_gallocr_new_n(sched->bufts, n_backends);
    if (sched->galloc == NULL) {
        free(sched);
        return NULL;
    }
    if (!scheds_add(sched)) {
        ggml_gallocr_free(sched->galloc);
        free(sched);
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    sched->op_offload    = op_offload;
    sched->parallel      = parallel;
    sched->graph_size    = graph_size > 0 ? graph_size : GGML_DEFAULT_GRAPH_SIZE;
    sched->n_copies      = parallel ? 2 : 1;
    sched->n_copies_next = sched->n_copies;
    sched->next_copy     = 0;
    sched->is_reset      = true;
    const char * mode = getenv("GGMLX_SCHED_COPY");
    sched->copy_mode  = mode == NULL                 ? SCHED_COPY_BEST
                      : strcmp(mode, "bounce") == 0  ? SCHED_COPY_BOUNCE
                      : strcmp(mode, "sync") == 0    ? SCHED_COPY_SYNC
                                                     : SCHED_COPY_BEST;
    const char * dbg = getenv("GGML_SCHED_DEBUG");
    sched->debug = dbg != NULL ? atoi(dbg) : 0;
    make_events(sched);

    const char * trace = getenv("GGMLX_SCHED_TRACE");
    if (trace != NULL && trace[0] != '\0' && !ggmlx_sched_set_trace(sched, trace)) {
        ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: GGMLX_SCHED_TRACE=%s: not tracing\n", __func__, trace);
    }
    ggmlx_ok();
    return sched;
}

void ggml_backend_sched_free(ggml_backend_sched_t sched) {
    if (sched == NULL) {
        return;
    }
    scheds_remove(sched);
    /* queued work still reads and writes the compute buffers freed below */
    ggmlx_sched_sync_all(sched, false);
    if (sched->trace != NULL) {
        ggmlx_sched_trace_close(sched->trace);
        sched->trace = NULL;
    }
    ggmlx_sched_free_slots(sched);
    live_remove_all(sched);
    free_events(sched);
    ggml_gallocr_free(sched->galloc);
    ggml_free(sched->ctx);
    ggmlx_ptr_map_free(&sched->table.map);
    free(sched->tinfo);
    free(sched->node_slots);
    free(sched->splits);
    free(sched->inputs);
    free(sched->rewrites);
    free(sched->graph_inputs);
    free(sched->pins);
    free(sched->node_ids);
    free(sched->leaf_ids);
    free(sched->own_buffers);
    free(sched->ctx_mem);
    free(sched);
}

/* ---- getters -------------------------------------------------------------------------------- */

int ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched) {
    CHECK_SCHED(0);
    ggmlx_ok();
    return sched->n_backends;
}

ggml_backend_t ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i) {
    CHECK_SCHED(NULL);
    if (i < 0 || i >= sched->n_backends) {
        ggmlx_error(__func__, "backend index %d out of range [0, %d)", i, sched->n_backends);
        return NULL;
    }
    ggmlx_ok();
    return sched->backends[i];
}

int ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched) {
    CHECK_SCHED(0);
    ggmlx_ok();
    return sched->split_ok ? sched->n_splits : 0;
}

int ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched) {
    CHECK_SCHED(0);
    ggmlx_ok();
    return sched->n_copies_next;
}

static int backend_arg(ggml_backend_sched_t sched, ggml_backend_t backend, const char * func) {
    if (backend == NULL) {
        ggmlx_error(func, "backend is NULL");
        return -1;
    }
    const int id = ggmlx_sched_backend_id(sched, backend);
    if (id < 0) {
        ggmlx_error(func, "backend %s is not one of this scheduler's backends", ggml_backend_name(backend));
    }
    return id;
}

ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched, ggml_backend_t backend) {
    CHECK_SCHED(NULL);
    const int id = backend_arg(sched, backend, __func__);
    if (id < 0) {
        return NULL;
    }
    ggmlx_ok();
    return sched->bufts[id];
}

size_t ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend) {
    CHECK_SCHED(0);
    const int id = backend_arg(sched, backend, __func__);
    if (id < 0) {
        return 0;
    }
    size_t size = ggml_gallocr_get_buffer_size(sched->galloc, id);
    for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
        size += sched->slot_bufs[id][c].buffer ? ggml_backend_buffer_get_size(sched->slot_bufs[id][c].buffer) : 0;
    }
    ggmlx_ok();
    return size;
}

/* ---- assignments ---------------------------------------------------------------------------- */

void ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node, ggml_backend_t backend) {
    CHECK_SCHED(NOTHING);
    if (node == NULL) {
        ggmlx_error(__func__, "node is NULL");
        return;
    }
    const int id = backend_arg(sched, backend, __func__);
    if (id < 0) {
        return;
    }
    if (!ggmlx_is_view_op(node->op) && node->op != GGML_OP_NONE && !ggml_backend_supports_op(backend, node)) {
        ggmlx_error(__func__, "backend %s cannot run %s (tensor '%s'); not pinned", ggml_backend_name(backend),
                    ggml_op_desc(node), node->name);
        return;
    }
    for (int i = 0; i < sched->n_pins; i++) {
        if (sched->pins[i].tensor == node) {
            sched->pins[i].backend = id;
            sched->is_reset        = false;
            ggmlx_ok();
            return;
        }
    }
    if (sched->n_pins == sched->pins_cap) {
        const int cap = sched->pins_cap ? 2 * sched->pins_cap : 16;
        struct sched_pin * p = realloc(sched->pins, (size_t) cap * sizeof *p);
        if (p == NULL) {
            ggmlx_error(__func__, "out of host memory");
            return;
        }
        sched->pins     = p;
        sched->pins_cap = cap;
    }
    sched->pins[sched->n_pins++] = (struct sched_pin){ node, id };
    sched->is_reset              = false;
    ggmlx_ok();
}

ggml_backend_t ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node) {
    CHECK_SCHED(NULL);
    if (node == NULL) {
        ggmlx_error(__func__, "node is NULL");
        return NULL;
    }
    ggmlx_ok();
    for (int i = 0; i < sched->n_pins; i++) {
        if (sched->pins[i].tensor == node) {
            return sched->backends[sched->pins[i].backend];
        }
    }
    const int id = ggmlx_sched_tensor_backend_id(sched, node);
    return id >= 0 ? sched->backends[id] : NULL;
}

/* reset's work without touching the thread's error: reserve resets after a failure too */
static void sched_reset(struct ggml_backend_sched * sched) {
    if (!sched->is_reset) {
        sched->n_pins = 0;
        ggmlx_sched_clear_assignments(sched);
    }
    sched->is_alloc = false;
    sched->is_reset = true;
}

void ggml_backend_sched_reset(ggml_backend_sched_t sched) {
    CHECK_SCHED(NOTHING);
    sched_reset(sched);
    ggmlx_ok();
}

void ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched, ggml_backend_sched_eval_callback callback,
                                          void * user_data) {
    CHECK_SCHED(NOTHING);
    sched->callback_eval           = callback;
    sched->callback_eval_user_data = user_data;
    ggmlx_ok();
}

/* ---- splitting, allocating, computing -------------------------------------------------------- */

static bool graph_arg(struct ggml_cgraph * graph, const char * func) {
    if (graph == NULL) {
        ggmlx_error(func, "graph is NULL");
        return false;
    }
    if (ggmlx_graph_is_failed(graph)) {
        ggmlx_error(func, "graph is failed (an op constructor failed while building it)");
        return false;
    }
    return true;
}

void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {
    CHECK_SCHED(NOTHING);
    if (!graph_arg(graph, __func__)) {
        return;
    }
    if (ggmlx_sched_split(sched, graph, __func__)) {
        ggmlx_ok();
    }
}

bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {
    CHECK_SCHED(false);
    if (!graph_arg(graph, __func__)) {
        return false;
    }
    if (sched->is_alloc) {
        if (graph == sched->graph) {
            ggmlx_ok();
            return true;
        }
        ggmlx_error(__func__, "another graph is allocated: call ggml_backend_sched_reset first");
        return false;
    }
    if (ggmlx_sched_alloc(sched, graph, __func__) != GGML_STATUS_SUCCESS) {
        return false;
    }
    ggmlx_ok();
    return true;
}

enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {
    CHECK_SCHED(GGML_STATUS_FAILED);
    if (!graph_arg(graph, __func__)) {
        return GGML_STATUS_FAILED;
    }
    if (sched->is_alloc && graph != sched->graph) {
        ggmlx_error(__func__, "graph is not the one allocated by ggml_backend_sched_alloc_graph: reset first");
        return GGML_STATUS_FAILED;
    }
    if (!sched->is_alloc) {
        if (!sched->is_reset) {
            sched_reset(sched);
        }
        const enum ggml_status st = ggmlx_sched_alloc(sched, graph, __func__);
        if (st != GGML_STATUS_SUCCESS) {
            return st;
        }
    }
    const enum ggml_status st = ggmlx_sched_compute_splits(sched);
    if (st == GGML_STATUS_SUCCESS) {
        ggmlx_ok();
    }
    return st;
}

void ggml_backend_sched_synchronize(ggml_backend_sched_t sched) {
    CHECK_SCHED(NOTHING);
    ggmlx_sched_sync_all(sched, false);
    if (!sched->is_alloc) {
        /* as upstream: idle computes restart at slot 0, so repeated single computes use one slot */
        sched->next_copy = 0;
    }
    ggmlx_ok();
}

enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph * graph) {
    CHECK_SCHED(GGML_STATUS_FAILED);
    enum ggml_status st = ggml_backend_sched_graph_compute_async(sched, graph);
    char saved[512];
    const bool failed = st != GGML_STATUS_SUCCESS && ggmlx_error_save(saved, sizeof saved);
    ggmlx_sched_sync_all(sched, false);
    /* errors of queued work are sticky per queue (docs/async.md rule 8): report and clear them once */
    for (int b = 0; b < sched->n_backends; b++) {
        const enum ggml_status q = ggmlx_backend_get_status(sched->backends[b]);
        if (q != GGML_STATUS_SUCCESS) {
            ggmlx_backend_clear_status(sched->backends[b]);
            if (st == GGML_STATUS_SUCCESS) {
                st = q;
                ggmlx_error(__func__, "queued work on %s failed (status %d)", ggml_backend_name(sched->backends[b]), (int) q);
            }
        }
    }
    if (st == GGML_STATUS_SUCCESS) {
        ggmlx_ok();
    } else if (failed) {
        ggmlx_error_restore(saved); /* synchronizing cleared it */
    }
    return st;
}

bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph) {
    CHECK_SCHED(false);
    if (!graph_arg(measure_graph, __func__)) {
        return false;
    }
    const bool ok = ggmlx_sched_reserve(sched, measure_graph, NULL, __func__);
    sched_reset(sched);
    if (ok) {
        ggmlx_ok();
    }
    return ok;
}

void ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph, size_t * sizes) {
    CHECK_SCHED(NOTHING);
    if (sizes == NULL) {
        ggmlx_error(__func__, "sizes is NULL");
        return;
    }
    memset(sizes, 0, (size_t) sched->n_backends * sizeof *sizes);
    if (!graph_arg(measure_graph, __func__)) {
        return;
    }
    const bool ok = ggmlx_sched_reserve(sched, measure_graph, sizes, __func__);
    sched_reset(sched);
    if (ok) {
        ggmlx_ok();
    }
}

/* ---- ggmlx extensions ----------------------------------------------------------------------- */

bool ggmlx_sched_set_n_copies(ggml_backend_sched_t sched, int n_copies) {
    CHECK_SCHED(false);
    if (n_copies < 1 || n_copies > GGMLX_SCHED_MAX_COPIES) {
        ggmlx_error(__func__, "n_copies is %d; it must be 1 to %d", n_copies, GGMLX_SCHED_MAX_COPIES);
        return false;
    }
    sched->n_copies_next = n_copies;
    ggmlx_ok();
    return true;
}

bool ggmlx_sched_get_stats(ggml_backend_sched_t sched, struct ggmlx_sched_stats * stats) {
    CHECK_SCHED(false);
    if (stats == NULL) {
        ggmlx_error(__func__, "stats is NULL");
        return false;
    }
    *stats = sched->stats;
    for (int b = 0; b < sched->n_backends; b++) {
        stats->compute_bytes[b] = ggml_gallocr_get_buffer_size(sched->galloc, b);
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            ggml_backend_buffer_t buf = sched->slot_bufs[b][c].buffer;
            stats->input_slot_bytes[b][c] = buf ? ggml_backend_buffer_get_size(buf) : 0;
        }
    }
    ggmlx_ok();
    return true;
}

void ggmlx_sched_reset_stats(ggml_backend_sched_t sched) {
    CHECK_SCHED(NOTHING);
    memset(&sched->stats, 0, sizeof sched->stats);
    ggmlx_ok();
}

bool ggmlx_sched_set_trace(ggml_backend_sched_t sched, const char * path) {
    CHECK_SCHED(false);
    if (sched->trace != NULL) {
        /* the spans' times are written by the queues: they must have run */
        ggmlx_sched_sync_all(sched, false);
        const bool ok = ggmlx_sched_trace_close(sched->trace);
        sched->trace  = NULL;
        if (!ok) {
            return false;
        }
    }
    if (path == NULL) {
        ggmlx_ok();
        return true;
    }
    const char * names[GGML_SCHED_MAX_BACKENDS + 1];
    for (int b = 0; b < sched->n_backends; b++) {
        names[b] = ggml_backend_name(sched->backends[b]);
    }
    names[sched->n_backends] = "host";
    sched->trace = ggmlx_sched_trace_open(path, names, sched->n_backends + 1);
    if (sched->trace == NULL) {
        return false;
    }
    ggmlx_ok();
    return true;
}
