/*
 * backend-cpu-device.c -- the CPU device and registry: properties, init parameters, what the
 * CPU can run, and the functions the registry hands out by name.
 */
#include "backend-cpu.h"
#include "cpu-ops.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- description (read once) --------------------------------------------------------------- */

static pthread_once_t g_desc_once = PTHREAD_ONCE_INIT;
static char           g_desc[256] = "CPU";

static void read_description(void) {
    FILE * f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) != 0) {
            continue;
        }
        const char * v = strchr(line, ':');
        if (v == NULL) {
            continue;
        }
        v++;
        while (*v == ' ' || *v == '\t') {
            v++;
        }
        snprintf(g_desc, sizeof g_desc, "%s", v);
        size_t n = strlen(g_desc);
        while (n > 0 && isspace((unsigned char) g_desc[n - 1])) {
            g_desc[--n] = '\0';
        }
        if (n == 0) {
            snprintf(g_desc, sizeof g_desc, "CPU");
        }
        break;
    }
    fclose(f);
}

/* ---- device -------------------------------------------------------------------------------- */

static const char * cpu_dev_get_name(ggml_backend_dev_t dev) {
    (void) dev;
    return "CPU";
}

static const char * cpu_dev_get_description(ggml_backend_dev_t dev) {
    (void) dev;
    pthread_once(&g_desc_once, read_description);
    return g_desc;
}

static void cpu_dev_get_memory(ggml_backend_dev_t dev, size_t * free, size_t * total) {
    (void) dev;
    const long page  = sysconf(_SC_PAGESIZE);
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long avail = sysconf(_SC_AVPHYS_PAGES);
    *total = page > 0 && pages > 0 ? (size_t) pages * (size_t) page : 0;
    *free  = page > 0 && avail > 0 ? (size_t) avail * (size_t) page : 0;
}

static enum ggml_backend_dev_type cpu_dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_CPU;
}

static void cpu_dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    props->name        = cpu_dev_get_name(dev);
    props->description = cpu_dev_get_description(dev);
    props->type        = cpu_dev_get_type(dev);
    props->device_id   = NULL;
    cpu_dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps.async                = true;
    props->caps.host_buffer          = false;
    props->caps.buffer_from_host_ptr = true;
    props->caps.events               = true;
    props->caps.mmap_support         = true;
}

/*
 * params: NULL or "" for the defaults, else words separated by commas, semicolons or spaces:
 * "sync" (compute on the caller's thread), "async" (the queue, even under GGMLX_CPU_SYNC=1),
 * "n_threads=N".
 */
static bool parse_params(const char * params, struct ggmlx_cpu_backend_params * out) {
    static const char * func = "ggml_backend_dev_init";
    const char * env = getenv("GGMLX_CPU_SYNC");
    out->sync      = env != NULL && strcmp(env, "1") == 0;
    out->n_threads = GGML_DEFAULT_N_THREADS;
    if (params == NULL) {
        return true;
    }
    const char * p = params;
    while (*p) {
        while (*p == ',' || *p == ';' || isspace((unsigned char) *p)) {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        const size_t n = strcspn(p, ",; \t\n");
        if (n == 4 && strncmp(p, "sync", 4) == 0) {
            out->sync = true;
        } else if (n == 5 && strncmp(p, "async", 5) == 0) {
            out->sync = false;
        } else if (n > 10 && strncmp(p, "n_threads=", 10) == 0) {
            char * end;
            errno = 0;
            const long v = strtol(p + 10, &end, 10);
            if (errno != 0 || end != p + n || v < 1 || v > GGML_MAX_N_THREADS) {
                ggmlx_error(func, "CPU: bad parameter '%.*s' (n_threads is 1 to %d)", (int) n, p, GGML_MAX_N_THREADS);
                return false;
            }
            out->n_threads = (int) v;
        } else {
            ggmlx_error(func, "CPU: unknown parameter '%.*s' (known: sync, async, n_threads=N)", (int) n, p);
            return false;
        }
        p += n;
    }
    return true;
}

static ggml_backend_t cpu_dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    struct ggmlx_cpu_backend_params p;
    if (!parse_params(params, &p)) {
        return NULL;
    }
    return ggmlx_cpu_backend_new(dev, &p);
}

static ggml_backend_buffer_type_t cpu_dev_get_buffer_type(ggml_backend_dev_t dev) {
    (void) dev;
    return ggml_backend_cpu_buffer_type();
}

static ggml_backend_buffer_t cpu_dev_buffer_from_host_ptr(ggml_backend_dev_t dev, void * ptr, size_t size,
                                                          size_t max_tensor_size) {
    (void) dev;
    (void) max_tensor_size;
    return ggml_backend_cpu_buffer_from_ptr(ptr, size);
}

static bool cpu_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    return ggmlx_op_is_view(op->op) || ggmlx_cpu_kernel_for(op) != NULL;
}

static bool cpu_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    (void) dev;
    return ggml_backend_buft_is_host(buft);
}

static bool cpu_dev_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    (void) op;
    return false;
}

static ggml_backend_event_t cpu_dev_event_new(ggml_backend_dev_t dev) {
    return ggmlx_host_event_new(dev);
}

static void cpu_dev_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_free(event);
}

static void cpu_dev_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_synchronize(event);
}

static struct ggml_backend_reg g_cpu_reg;

static struct ggml_backend_device g_cpu_device = {
    .iface = {
        .get_name             = cpu_dev_get_name,
        .get_description      = cpu_dev_get_description,
        .get_memory           = cpu_dev_get_memory,
        .get_type             = cpu_dev_get_type,
        .get_props            = cpu_dev_get_props,
        .init_backend         = cpu_dev_init_backend,
        .get_buffer_type      = cpu_dev_get_buffer_type,
        .get_host_buffer_type = NULL,
        .buffer_from_host_ptr = cpu_dev_buffer_from_host_ptr,
        .supports_op          = cpu_dev_supports_op,
        .supports_buft        = cpu_dev_supports_buft,
        .offload_op           = cpu_dev_offload_op,
        .event_new            = cpu_dev_event_new,
        .event_free           = cpu_dev_event_free,
        .event_synchronize    = cpu_dev_event_synchronize,
    },
    .reg     = &g_cpu_reg,
    .context = NULL,
};

ggml_backend_dev_t ggmlx_cpu_device(void) {
    return &g_cpu_device;
}

ggml_backend_t ggml_backend_cpu_init(void) {
    return cpu_dev_init_backend(&g_cpu_device, NULL);
}

/* ---- registry ------------------------------------------------------------------------------ */

static const char * cpu_reg_get_name(ggml_backend_reg_t reg) {
    (void) reg;
    return "CPU";
}

static size_t cpu_reg_get_device_count(ggml_backend_reg_t reg) {
    (void) reg;
    return 1;
}

static ggml_backend_dev_t cpu_reg_get_device(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    if (index != 0) {
        ggmlx_error("ggml_backend_reg_dev_get", "CPU has one device; index %zu is out of range", index);
        return NULL;
    }
    return &g_cpu_device;
}

static pthread_once_t              g_features_once = PTHREAD_ONCE_INIT;
static struct ggml_backend_feature g_features[16];

static void find_features(void) {
    const struct {
        const char * name;
        int (*has)(void);
    } all[] = {
        { "SSE3", ggml_cpu_has_sse3 }, { "SSSE3", ggml_cpu_has_ssse3 }, { "AVX", ggml_cpu_has_avx },
        { "AVX2", ggml_cpu_has_avx2 }, { "F16C", ggml_cpu_has_f16c },   { "FMA", ggml_cpu_has_fma },
        { "AVX512", ggml_cpu_has_avx512 }, { "AVX512_BF16", ggml_cpu_has_avx512_bf16 },
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (all[i].has()) {
            g_features[n].name  = all[i].name;
            g_features[n].value = "1";
            n++;
        }
    }
    g_features[n].name  = NULL; /* the list ends with a NULL name */
    g_features[n].value = NULL;
}

static struct ggml_backend_feature * cpu_get_features(ggml_backend_reg_t reg) {
    (void) reg;
    pthread_once(&g_features_once, find_features);
    return g_features;
}

static ggml_backend_buffer_type_t * cpu_get_extra_bufts(ggml_backend_dev_t dev) {
    (void) dev;
    static ggml_backend_buffer_type_t none[1] = { NULL }; /* no repacking buffer types */
    return none;
}

static void * cpu_reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    (void) reg;
    static const struct ggmlx_proc procs[] = {
        { "ggml_backend_set_n_threads",       (void *) ggml_backend_cpu_set_n_threads },
        { "ggml_backend_set_abort_callback",  (void *) ggml_backend_cpu_set_abort_callback },
        { "ggml_backend_cpu_set_use_ref",     (void *) ggml_backend_cpu_set_use_ref },
        { "ggml_threadpool_new",              (void *) ggml_threadpool_new },
        { "ggml_threadpool_free",             (void *) ggml_threadpool_free },
        { "ggml_backend_cpu_set_threadpool",  (void *) ggml_backend_cpu_set_threadpool },
        { "ggml_backend_get_features",        (void *) cpu_get_features },
        { "ggml_backend_dev_get_extra_bufts", (void *) cpu_get_extra_bufts },
    };
    return ggmlx_proc_lookup(procs, sizeof procs / sizeof procs[0], name);
}

static struct ggml_backend_reg g_cpu_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface = {
        .get_name         = cpu_reg_get_name,
        .get_device_count = cpu_reg_get_device_count,
        .get_device       = cpu_reg_get_device,
        .get_proc_address = cpu_reg_get_proc_address,
    },
    .context = NULL,
};

ggml_backend_reg_t ggml_backend_cpu_reg(void) {
    return &g_cpu_reg;
}

GGML_BACKEND_DL_IMPL(ggml_backend_cpu_reg)
