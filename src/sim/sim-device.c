/*
 * sim-device.c -- the SIM registry, its devices and their backends (docs/sim.md).
 *
 * A SIM backend is a host backend (src/cpu/host-backend.h) whose address hook admits only its
 * own device's memory and hands the worker the read-write view of it: compute on another SIM
 * device's tensor or on host memory is refused when enqueued, and a pointer the checks cannot
 * see (one set by hand) stays PROT_NONE and faults when read.
 */
#ifndef GGML_BACKEND_DL

#include "sim-impl.h"

#include "cpu-ops.h"
#include "host-alias.h"
#include "host-backend.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct ggmlx_sim_device g_devices[GGMLX_SIM_MAX_DEVICES];
static int                     g_n_devices;
static pthread_once_t          g_once = PTHREAD_ONCE_INIT;
static struct ggml_backend_reg g_reg;

static struct ggmlx_sim_device * sim_of(ggml_backend_dev_t dev) {
    return dev->context;
}

/* ---- the backend --------------------------------------------------------------------------- */

static ggml_guid_t sim_guid(void) {
    static ggml_guid guid = { 0x67, 0x78, 0x73, 0x69, 0x6d, 0x2d, 0x71, 0x75,
                              0x65, 0x75, 0x65, 0x2d, 0x76, 0x31, 0x00, 0x01 };
    return &guid;
}

bool ggmlx_backend_is_sim(ggml_backend_t backend) {
    return backend != NULL && backend->guid != NULL && ggml_guid_matches(backend->guid, sim_guid());
}

/* only this device's memory, through its read-write view */
static void * sim_address(void * ctx, const struct ggml_tensor * t) {
    const void * owner = NULL;
    void * rw = ggmlx_alias_lookup(t->data, &owner);
    return rw != NULL && owner == ctx ? rw : NULL;
}

/* "" or NULL: the defaults; else "n_threads=N" (words separated by commas, semicolons or spaces) */
static bool parse_params(const struct ggmlx_sim_device * sd, const char * params, int * n_threads) {
    static const char * func = "ggml_backend_dev_init";
    *n_threads = sd->settings->n_threads;
    for (const char * p = params ? params : ""; *p;) {
        while (*p == ',' || *p == ';' || isspace((unsigned char) *p)) {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        const size_t n = strcspn(p, ",; \t\n");
        char * end;
        errno = 0;
        const long v = n > 10 && strncmp(p, "n_threads=", 10) == 0 ? strtol(p + 10, &end, 10) : -1;
        if (v < 1 || v > GGML_MAX_N_THREADS || errno != 0 || end != p + n) {
            ggmlx_error(func, "%s: bad parameter '%.*s' (known: n_threads=N, N from 1 to %d)", sd->name, (int) n, p,
                        GGML_MAX_N_THREADS);
            return false;
        }
        *n_threads = (int) v;
        p += n;
    }
    return true;
}

static ggml_backend_t sim_dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    struct ggmlx_sim_device * sd = sim_of(dev);
    int n_threads;
    if (!parse_params(sd, params, &n_threads)) {
        return NULL;
    }
    /* every queue its own replayable sequence: device and order of creation mixed into the seed */
    const uint64_t k     = atomic_fetch_add(&sd->n_backends, 1);
    const uint64_t chaos = sd->settings->chaos_seed;
    const struct ggmlx_host_backend_params p = {
        .name        = sd->name,
        .guid        = sim_guid(),
        .device      = dev,
        .sync        = false,
        .n_threads   = n_threads,
        .chaos_seed  = chaos ? chaos ^ ((uint64_t) (sd->index + 1) << 48) ^ (k * 0x9e3779b97f4a7c15ull) : 0,
        .address     = sim_address,
        .address_ctx = sd,
    };
    return ggmlx_host_backend_new(&p);
}

/* queued, as the CPU's: what the registry hands out as "ggml_backend_set_n_threads" */
static void sim_set_n_threads(ggml_backend_t backend, int n_threads) {
    static const char * func = "ggml_backend_set_n_threads";
    if (!ggmlx_backend_is_sim(backend)) {
        ggmlx_error(func, "%s is not a SIM backend", ggml_backend_name(backend));
        return;
    }
    if (n_threads <= 0 || n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(func, "n_threads = %d is out of range (1 to %d)", n_threads, GGML_MAX_N_THREADS);
        return;
    }
    struct ggmlx_host_backend * hb = ggmlx_host_backend_of(backend);
    struct ggmlx_host_settings  s  = ggmlx_host_backend_settings(hb);
    s.n_threads = n_threads;
    ggmlx_host_backend_update(hb, &s);
    ggmlx_ok();
}

/* ---- the device ---------------------------------------------------------------------------- */

static const char * sim_dev_get_name(ggml_backend_dev_t dev) {
    return sim_of(dev)->name;
}

static const char * sim_dev_get_description(ggml_backend_dev_t dev) {
    return sim_of(dev)->desc;
}

static void sim_dev_get_memory(ggml_backend_dev_t dev, size_t * free, size_t * total) {
    struct ggmlx_sim_device * sd = sim_of(dev);
    pthread_mutex_lock(&sd->mem_lock);
    *free = sd->limit - sd->used;
    pthread_mutex_unlock(&sd->mem_lock);
    *total = sd->limit;
}

static enum ggml_backend_dev_type sim_dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static void sim_dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    props->name        = sim_dev_get_name(dev);
    props->description = sim_dev_get_description(dev);
    props->type        = GGML_BACKEND_DEVICE_TYPE_GPU;
    props->device_id   = NULL;
    sim_dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps.async                = true;
    props->caps.host_buffer          = false;
    props->caps.buffer_from_host_ptr = false;
    props->caps.events               = true;
    props->caps.mmap_support         = false;
}

static ggml_backend_buffer_type_t sim_dev_get_buffer_type(ggml_backend_dev_t dev) {
    return &sim_of(dev)->buft;
}

static bool sim_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    if ((int) op->op < 0 || op->op >= GGML_OP_COUNT || sim_of(dev)->settings->refused[op->op]) {
        return false;
    }
    return ggmlx_op_is_view(op->op) || ggmlx_cpu_kernel_for(op) != NULL;
}

/* a device computes only on its own memory; host buffers get copies from the scheduler */
static bool sim_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return buft == &sim_of(dev)->buft;
}

/*
 * As a GPU backend decides: an op whose weight sits in host memory is worth sending here (the
 * weight copied over) when it works on a batch of 32 rows or more; row lookups never are.
 */
static bool sim_dev_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    const int64_t batch = op->op == GGML_OP_MUL_MAT_ID ? op->ne[2] : op->ne[1];
    return op->op != GGML_OP_GET_ROWS && batch >= 32 && sim_dev_supports_op(dev, op);
}

static ggml_backend_event_t sim_dev_event_new(ggml_backend_dev_t dev) {
    return ggmlx_host_event_new(dev);
}

static void sim_dev_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_free(event);
}

static void sim_dev_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_synchronize(event);
}

static const struct ggml_backend_device_i sim_device_i = {
    .get_name             = sim_dev_get_name,
    .get_description      = sim_dev_get_description,
    .get_memory           = sim_dev_get_memory,
    .get_type             = sim_dev_get_type,
    .get_props            = sim_dev_get_props,
    .init_backend         = sim_dev_init_backend,
    .get_buffer_type      = sim_dev_get_buffer_type,
    .get_host_buffer_type = NULL,
    .buffer_from_host_ptr = NULL,
    .supports_op          = sim_dev_supports_op,
    .supports_buft        = sim_dev_supports_buft,
    .offload_op           = sim_dev_offload_op,
    .event_new            = sim_dev_event_new,
    .event_free           = sim_dev_event_free,
    .event_synchronize    = sim_dev_event_synchronize,
};

/* ---- the registry -------------------------------------------------------------------------- */

static const char * sim_reg_get_name(ggml_backend_reg_t reg) {
    (void) reg;
    return "SIM";
}

static size_t sim_reg_get_device_count(ggml_backend_reg_t reg) {
    (void) reg;
    return (size_t) g_n_devices;
}

static ggml_backend_dev_t sim_reg_get_device(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    if (index >= (size_t) g_n_devices) {
        ggmlx_error("ggml_backend_reg_dev_get", "SIM has %d devices; index %zu is out of range", g_n_devices, index);
        return NULL;
    }
    return &g_devices[index].dev;
}

static void * sim_reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    (void) reg;
    if (name != NULL && strcmp(name, "ggml_backend_set_n_threads") == 0) {
        return (void *) sim_set_n_threads;
    }
    return NULL;
}

static struct ggml_backend_reg g_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface = {
        .get_name         = sim_reg_get_name,
        .get_device_count = sim_reg_get_device_count,
        .get_device       = sim_reg_get_device,
        .get_proc_address = sim_reg_get_proc_address,
    },
    .context = NULL,
};

static void make_devices(void) {
    const struct ggmlx_sim_settings * s = ggmlx_sim_settings_fix();
    for (int i = 0; i < s->n_devices; i++) {
        struct ggmlx_sim_device * sd = &g_devices[i];
        sd->index    = i;
        sd->limit    = s->memory_limit;
        sd->settings = s;
        atomic_init(&sd->n_backends, 0);
        if (pthread_mutex_init(&sd->mem_lock, NULL) != 0) {
            ggmlx_log(GGML_LOG_LEVEL_ERROR, "SIM: cannot make device %d (mutex): %d SIM devices\n", i, i);
            break;
        }
        snprintf(sd->name, sizeof sd->name, "SIM%d", i);
        snprintf(sd->desc, sizeof sd->desc, "ggmlx simulated GPU %d (%zu MiB private memory, %d compute thread%s)", i,
                 s->memory_limit >> 20, s->n_threads, s->n_threads == 1 ? "" : "s");
        sd->dev = (struct ggml_backend_device) { .iface = sim_device_i, .reg = &g_reg, .context = sd };
        ggmlx_sim_buft_init(sd);
        g_n_devices = i + 1;
    }
}

ggml_backend_reg_t ggmlx_sim_reg(void) {
    pthread_once(&g_once, make_devices);
    return &g_reg;
}

#endif /* GGML_BACKEND_DL */
