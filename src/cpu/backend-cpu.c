/*
 * backend-cpu.c -- the CPU backend: a host backend (host-backend.c) over host memory, plus the
 * CPU's own settings API (threads, thread pool, abort callback, reference kernels), each
 * applied in queue order.
 */
#include "backend-cpu.h"
#include "host-backend.h"

static ggml_guid_t cpu_guid(void) {
    static ggml_guid guid = { 0x67, 0x78, 0x63, 0x70, 0x75, 0x2d, 0x71, 0x75,
                              0x65, 0x75, 0x65, 0x2d, 0x76, 0x31, 0x00, 0x01 };
    return &guid;
}

bool ggml_backend_is_cpu(ggml_backend_t backend) {
    return backend != NULL && backend->guid != NULL && ggml_guid_matches(backend->guid, cpu_guid());
}

static struct ggmlx_host_backend * cpu_ctx(const char * func, ggml_backend_t backend) {
    if (!ggml_backend_is_cpu(backend)) {
        ggmlx_error(func, "%s is not a CPU backend", backend ? ggml_backend_name(backend) : "NULL");
        return NULL;
    }
    return ggmlx_host_backend_of(backend);
}

struct ggmlx_queue * ggmlx_backend_cpu_queue(ggml_backend_t backend) {
    return ggml_backend_is_cpu(backend) ? ggmlx_host_backend_queue(ggmlx_host_backend_of(backend)) : NULL;
}

/* ---- settings (queued) --------------------------------------------------------------------- */

void ggml_backend_cpu_set_n_threads(ggml_backend_t backend_cpu, int n_threads) {
    struct ggmlx_host_backend * hb = cpu_ctx(__func__, backend_cpu);
    if (hb == NULL) {
        return;
    }
    if (n_threads <= 0 || n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(__func__, "n_threads = %d is out of range (1 to %d)", n_threads, GGML_MAX_N_THREADS);
        return;
    }
    struct ggmlx_host_settings s = ggmlx_host_backend_settings(hb);
    s.n_threads = n_threads;
    ggmlx_host_backend_update(hb, &s);
    ggmlx_ok();
}

void ggml_backend_cpu_set_threadpool(ggml_backend_t backend_cpu, ggml_threadpool_t threadpool) {
    struct ggmlx_host_backend * hb = cpu_ctx(__func__, backend_cpu);
    if (hb == NULL) {
        return;
    }
    struct ggmlx_host_settings s = ggmlx_host_backend_settings(hb);
    s.threadpool = threadpool;
    ggmlx_host_backend_update(hb, &s);
    ggmlx_ok();
}

void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback,
                                         void * abort_callback_data) {
    struct ggmlx_host_backend * hb = cpu_ctx(__func__, backend_cpu);
    if (hb == NULL) {
        return;
    }
    struct ggmlx_host_settings s = ggmlx_host_backend_settings(hb);
    s.abort_callback = abort_callback;
    s.abort_data     = abort_callback_data;
    ggmlx_host_backend_update(hb, &s);
    ggmlx_ok();
}

void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref) {
    struct ggmlx_host_backend * hb = cpu_ctx(__func__, backend_cpu);
    if (hb == NULL) {
        return;
    }
    struct ggmlx_host_settings s = ggmlx_host_backend_settings(hb);
    s.use_ref = use_ref;
    ggmlx_host_backend_update(hb, &s);
    ggmlx_ok();
}

int ggmlx_backend_cpu_run_n_threads(ggml_backend_t backend) {
    return ggml_backend_is_cpu(backend) ? ggmlx_host_backend_run_settings(ggmlx_host_backend_of(backend)).n_threads : 0;
}

/* ---- the backend --------------------------------------------------------------------------- */

ggml_backend_t ggmlx_cpu_backend_new(ggml_backend_dev_t dev, const struct ggmlx_cpu_backend_params * params) {
    const struct ggmlx_host_backend_params p = {
        .name      = "CPU",
        .guid      = cpu_guid(),
        .device    = dev,
        .sync      = params->sync,
        .n_threads = params->n_threads,
        /* no address hook: tensors in host memory are used where they are */
    };
    return ggmlx_host_backend_new(&p);
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
