/*
 * registry.c -- the registry of every backend and device (ggml-backend.h, "registry").
 *
 * Filled on first use with the statically linked backends (pthread_once), later by
 * ggml_backend_register / ggml_backend_device_register and by loaded modules (backend-load.c).
 * The mutex guards only the two lists: backend code (names, types, init) always runs on a
 * snapshot with the lock released, so a backend may call back into the registry, and a slow
 * device query never blocks other threads' lookups.
 */
#include "registry-impl.h"

#include "ggml-cpu.h"
#ifdef GGMLX_HAVE_CUDA
#    include "ggml-cuda.h"
#endif
#include "ggmlx-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * The statically linked backends, in registration order. The order is the device order, and
 * lookups by type take the first match, so GPU kinds come first and the CPU comes last (as in
 * upstream, where the scheduler also wants the CPU last).
 */
static ggml_backend_reg_t (*const g_static_regs[])(void) = {
    /* ---- GPU-kind registries go here (CUDA when GGMLX_HAVE_CUDA, then SIM) ---- */
#ifdef GGMLX_HAVE_CUDA
    ggml_backend_cuda_reg, /* zero devices without a GPU or a driver */
#endif
#ifndef GGML_BACKEND_DL
    ggmlx_sim_reg, /* simulated devices need the linked CPU executor: none in a module build */
#endif
    /* ---- the CPU, always last (a module of its own in a GGML_BACKEND_DL build) ---- */
#ifndef GGML_BACKEND_DL
    ggml_backend_cpu_reg,
#endif
    NULL, /* keeps the array non-empty whatever is compiled in */
};

struct reg_entry {
    ggml_backend_reg_t reg;
    void             * handle; /* dlopen handle of the module, NULL when statically linked */
};

static pthread_once_t     g_once  = PTHREAD_ONCE_INIT;
static pthread_mutex_t    g_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct reg_entry * g_regs;
static size_t             g_n_regs, g_cap_regs;
static ggml_backend_dev_t * g_devs;
static size_t             g_n_devs, g_cap_devs;

/* backends found but not usable here (modules ggml_backend_load_all left out), with the reason */
struct unavailable {
    char name[32];
    char why[448];
};
static struct unavailable * g_unavail;
static size_t               g_n_unavail, g_cap_unavail;

/* ---- helpers ------------------------------------------------------------------------------- */

void ggmlx_registry_report(bool as_error, const char * func, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (as_error) {
        ggmlx_errorv(func, fmt, ap);
    } else {
        char msg[448];
        vsnprintf(msg, sizeof msg, fmt, ap);
        ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: %s\n", func, msg);
    }
    va_end(ap);
}

/* Room for n more elements of size elem in *arr (capacity *cap); false when out of memory. */
static bool reserve(void ** arr, size_t * cap, size_t used, size_t n, size_t elem) {
    if (used + n <= *cap) {
        return true;
    }
    size_t want = *cap ? *cap : 8;
    while (want < used + n) {
        want *= 2;
    }
    void * p = realloc(*arr, want * elem);
    if (p == NULL) {
        return false;
    }
    *arr = p;
    *cap = want;
    return true;
}

static bool has_dev_locked(ggml_backend_dev_t dev) {
    for (size_t i = 0; i < g_n_devs; i++) {
        if (g_devs[i] == dev) {
            return true;
        }
    }
    return false;
}

static const char * reg_name_of(ggml_backend_reg_t reg) {
    const char * name = reg->iface.get_name ? reg->iface.get_name(reg) : NULL;
    return name ? name : "";
}

static const char * dev_name_of(ggml_backend_dev_t dev) {
    const char * name = dev->iface.get_name ? dev->iface.get_name(dev) : NULL;
    return name ? name : "";
}

static const char * type_name(enum ggml_backend_dev_type type) {
    switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU:   return "CPU";
    case GGML_BACKEND_DEVICE_TYPE_GPU:   return "GPU";
    case GGML_BACKEND_DEVICE_TYPE_IGPU:  return "IGPU";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "ACCEL";
    case GGML_BACKEND_DEVICE_TYPE_META:  return "META";
    }
    return "unknown";
}

/* A copy of the registry list (*n entries); NULL with *n == 0 when empty or out of memory. */
static ggml_backend_reg_t * regs_snapshot(size_t * n) {
    ggml_backend_reg_t * out = NULL;
    pthread_mutex_lock(&g_mutex);
    *n = g_n_regs;
    if (*n > 0 && (out = malloc(*n * sizeof *out)) != NULL) {
        for (size_t i = 0; i < *n; i++) {
            out[i] = g_regs[i].reg;
        }
    }
    pthread_mutex_unlock(&g_mutex);
    if (out == NULL) {
        *n = 0;
    }
    return out;
}

/* Devices are owned by their backends and never freed by unregistering, so copies stay valid. */
static ggml_backend_dev_t * devs_snapshot(size_t * n) {
    ggml_backend_dev_t * out = NULL;
    pthread_mutex_lock(&g_mutex);
    *n = g_n_devs;
    if (*n > 0 && (out = malloc(*n * sizeof *out)) != NULL) {
        memcpy(out, g_devs, *n * sizeof *out);
    }
    pthread_mutex_unlock(&g_mutex);
    if (out == NULL) {
        *n = 0;
    }
    return out;
}

/* "CPU, SIM0, SIM1" into buf, for messages that say what there is instead */
static const char * device_list(char * buf, size_t size) {
    size_t n;
    ggml_backend_dev_t * devs = devs_snapshot(&n);
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", dev_name_of(devs[i]));
        used += w > 0 ? (size_t) w : 0;
    }
    free(devs);
    if (n == 0) {
        snprintf(buf, size, "none");
    }
    return buf;
}

/* ---- backends that cannot be used here ----------------------------------------------------------- */

static void drop_unavailable_locked(const char * name) {
    size_t kept = 0;
    for (size_t i = 0; i < g_n_unavail; i++) {
        if (strcasecmp(g_unavail[i].name, name) != 0) {
            g_unavail[kept++] = g_unavail[i];
        }
    }
    g_n_unavail = kept;
}

bool ggmlx_registry_note_unavailable(const char * name, const char * why) {
    pthread_mutex_lock(&g_mutex);
    for (size_t i = 0; i < g_n_unavail; i++) {
        const struct unavailable * u = &g_unavail[i];
        if (strcasecmp(u->name, name) == 0 && strncmp(u->why, why, sizeof u->why - 1) == 0) {
            pthread_mutex_unlock(&g_mutex);
            return false; /* noted before, for the same reason */
        }
    }
    drop_unavailable_locked(name); /* the latest reason replaces an older one */
    /* out of memory only loses the note: the info line was logged already */
    if (reserve((void **) &g_unavail, &g_cap_unavail, g_n_unavail, 1, sizeof *g_unavail)) {
        struct unavailable * u = &g_unavail[g_n_unavail++];
        snprintf(u->name, sizeof u->name, "%s", name);
        snprintf(u->why, sizeof u->why, "%s", why);
    }
    pthread_mutex_unlock(&g_mutex);
    return true;
}

/* the reason a registered registry without devices gives, copied into why; false when it gives none */
static bool reg_unavailable_reason(ggml_backend_reg_t reg, char * why, size_t size) {
    if (reg->iface.get_device_count(reg) > 0 || reg->iface.get_proc_address == NULL) {
        return false;
    }
    ggmlx_backend_unavailable_reason_t fn  = NULL;
    void *                             sym = reg->iface.get_proc_address(reg, GGMLX_BACKEND_UNAVAILABLE_REASON);
    memcpy(&fn, &sym, sizeof fn);
    const char * r = fn != NULL ? fn() : NULL;
    if (r == NULL || r[0] == '\0') {
        return false;
    }
    snprintf(why, size, "%s", r);
    return true;
}

bool ggmlx_backend_unavailable(size_t i, char * name, size_t name_size, char * why, size_t why_size) {
    ggmlx_registry_init();
    if (name == NULL || why == NULL || name_size == 0 || why_size == 0) {
        ggmlx_error(__func__, "name and why must be buffers with room");
        return false;
    }
    name[0] = why[0] = '\0';
    /* first the modules left out, then the registered registries that have no device */
    pthread_mutex_lock(&g_mutex);
    const size_t n_notes = g_n_unavail;
    if (i < n_notes) {
        snprintf(name, name_size, "%s", g_unavail[i].name);
        snprintf(why, why_size, "%s", g_unavail[i].why);
    }
    pthread_mutex_unlock(&g_mutex);
    ggmlx_ok();
    if (i < n_notes) {
        return true;
    }
    i -= n_notes;
    size_t n;
    ggml_backend_reg_t * regs  = regs_snapshot(&n);
    bool                 found = false;
    for (size_t r = 0; r < n && !found; r++) {
        if (reg_unavailable_reason(regs[r], why, why_size) && i-- == 0) {
            snprintf(name, name_size, "%s", reg_name_of(regs[r]));
            found = true;
        }
    }
    free(regs);
    if (!found) {
        why[0] = '\0';
    }
    return found;
}

/* ---- initialisation -------------------------------------------------------------------------- */

static void register_static_backends(void) {
    /* Under pthread_once: a reg function that called back into the registry would deadlock,
     * so the getters must only build their registry. */
    for (size_t i = 0; i < sizeof g_static_regs / sizeof g_static_regs[0]; i++) {
        ggml_backend_reg_t reg = g_static_regs[i] ? g_static_regs[i]() : NULL; /* NULL: the end mark */
        if (reg != NULL) {
            ggmlx_registry_add(reg, NULL, "ggml_backend_registry_init", false);
        }
    }
}

void ggmlx_registry_init(void) {
    pthread_once(&g_once, register_static_backends);
}

/* ---- adding and removing ------------------------------------------------------------------- */

enum ggmlx_reg_add ggmlx_registry_add(ggml_backend_reg_t reg, void * handle, const char * func, bool as_error) {
    if (reg == NULL) {
        ggmlx_registry_report(as_error, func, "reg is NULL");
        return GGMLX_REG_FAILED;
    }
    if (reg->api_version != GGML_BACKEND_API_VERSION) {
        ggmlx_registry_report(as_error, func,
                              "registry built for backend API version %d (0x%x), this library needs %d (0x%x)",
                              reg->api_version, (unsigned) reg->api_version, GGML_BACKEND_API_VERSION,
                              (unsigned) GGML_BACKEND_API_VERSION);
        return GGMLX_REG_FAILED;
    }
    if (reg->iface.get_name == NULL || reg->iface.get_device_count == NULL || reg->iface.get_device == NULL) {
        ggmlx_registry_report(as_error, func, "registry lacks get_name, get_device_count or get_device");
        return GGMLX_REG_FAILED;
    }

    /* asked before taking the lock: this is backend code */
    const char * name = reg_name_of(reg);
    const size_t n    = reg->iface.get_device_count(reg);
    ggml_backend_dev_t * devs = NULL;
    if (n > 0 && (devs = calloc(n, sizeof *devs)) == NULL) {
        ggmlx_registry_report(as_error, func, "out of memory registering '%s'", name);
        return GGMLX_REG_FAILED;
    }
    for (size_t i = 0; i < n; i++) {
        devs[i] = reg->iface.get_device(reg, i);
        if (devs[i] == NULL || devs[i]->iface.get_name == NULL || devs[i]->iface.get_type == NULL) {
            ggmlx_registry_report(as_error, func, "device %zu of registry '%s' is NULL or lacks get_name/get_type",
                                  i, name);
            free(devs);
            return GGMLX_REG_FAILED;
        }
    }

    enum ggmlx_reg_add result = GGMLX_REG_ADDED;
    pthread_mutex_lock(&g_mutex);
    for (size_t i = 0; i < g_n_regs; i++) {
        if (g_regs[i].reg == reg) {
            result = GGMLX_REG_ALREADY;
            goto out_unlock;
        }
    }
    /* both lists grow first, so a failure leaves the registry as it was */
    if (!reserve((void **) &g_regs, &g_cap_regs, g_n_regs, 1, sizeof *g_regs) ||
        !reserve((void **) &g_devs, &g_cap_devs, g_n_devs, n, sizeof *g_devs)) {
        result = GGMLX_REG_FAILED;
        goto out_unlock;
    }
    g_regs[g_n_regs++] = (struct reg_entry) { reg, handle };
    for (size_t i = 0; i < n; i++) {
        if (!has_dev_locked(devs[i])) { /* already added by ggml_backend_device_register */
            g_devs[g_n_devs++] = devs[i];
        }
    }
    if (n > 0) {
        drop_unavailable_locked(name);
    }
out_unlock:
    pthread_mutex_unlock(&g_mutex);
    free(devs);
    if (result == GGMLX_REG_FAILED) {
        ggmlx_registry_report(as_error, func, "out of memory registering '%s'", name);
    } else {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: backend '%s' (%zu devices) %s\n", func, name, n,
                  result == GGMLX_REG_ADDED ? "registered" : "was registered already");
    }
    return result;
}

bool ggmlx_registry_remove(ggml_backend_reg_t reg, void ** handle) {
    bool found = false;
    pthread_mutex_lock(&g_mutex);
    for (size_t i = 0; i < g_n_regs; i++) {
        if (g_regs[i].reg == reg) {
            *handle = g_regs[i].handle;
            memmove(&g_regs[i], &g_regs[i + 1], (g_n_regs - i - 1) * sizeof *g_regs);
            g_n_regs--;
            found = true;
            break;
        }
    }
    if (found) {
        size_t kept = 0;
        for (size_t i = 0; i < g_n_devs; i++) {
            if (g_devs[i]->reg != reg) {
                g_devs[kept++] = g_devs[i];
            }
        }
        g_n_devs = kept;
    }
    pthread_mutex_unlock(&g_mutex);
    return found;
}

bool ggmlx_registry_has_name(const char * name) {
    ggmlx_registry_init();
    size_t n;
    ggml_backend_reg_t * regs = regs_snapshot(&n);
    bool found = false;
    for (size_t i = 0; i < n && !found; i++) {
        found = strcasecmp(reg_name_of(regs[i]), name) == 0;
    }
    free(regs);
    return found;
}

void ggml_backend_register(ggml_backend_reg_t reg) {
    ggmlx_registry_init();
    if (ggmlx_registry_add(reg, NULL, __func__, true) != GGMLX_REG_FAILED) {
        ggmlx_ok();
    }
}

void ggml_backend_device_register(ggml_backend_dev_t device) {
    ggmlx_registry_init();
    if (device == NULL) {
        ggmlx_error(__func__, "device is NULL");
        return;
    }
    if (device->iface.get_name == NULL || device->iface.get_type == NULL) {
        ggmlx_error(__func__, "device lacks get_name or get_type");
        return;
    }
    bool ok = true;
    pthread_mutex_lock(&g_mutex);
    if (!has_dev_locked(device)) {
        ok = reserve((void **) &g_devs, &g_cap_devs, g_n_devs, 1, sizeof *g_devs);
        if (ok) {
            g_devs[g_n_devs++] = device;
        }
    }
    pthread_mutex_unlock(&g_mutex);
    if (!ok) {
        ggmlx_error(__func__, "out of memory");
        return;
    }
    ggmlx_ok();
}

/* ---- registries ------------------------------------------------------------------------------ */

size_t ggml_backend_reg_count(void) {
    ggmlx_registry_init();
    pthread_mutex_lock(&g_mutex);
    const size_t n = g_n_regs;
    pthread_mutex_unlock(&g_mutex);
    ggmlx_ok();
    return n;
}

ggml_backend_reg_t ggml_backend_reg_get(size_t index) {
    ggmlx_registry_init();
    pthread_mutex_lock(&g_mutex);
    const size_t       n   = g_n_regs;
    ggml_backend_reg_t reg = index < n ? g_regs[index].reg : NULL;
    pthread_mutex_unlock(&g_mutex);
    if (reg == NULL) {
        ggmlx_error(__func__, "index %zu out of range (%zu registries)", index, n);
        return NULL;
    }
    ggmlx_ok();
    return reg;
}

ggml_backend_reg_t ggml_backend_reg_by_name(const char * name) {
    ggmlx_registry_init();
    if (name == NULL) {
        ggmlx_error(__func__, "name is NULL");
        return NULL;
    }
    size_t n;
    ggml_backend_reg_t * regs = regs_snapshot(&n);
    ggml_backend_reg_t   reg  = NULL;
    for (size_t i = 0; i < n && reg == NULL; i++) {
        if (strcasecmp(reg_name_of(regs[i]), name) == 0) {
            reg = regs[i];
        }
    }
    free(regs);
    ggmlx_ok(); /* no registry of that name is an answer, not an error */
    return reg;
}

/* ---- devices --------------------------------------------------------------------------------- */

size_t ggml_backend_dev_count(void) {
    ggmlx_registry_init();
    pthread_mutex_lock(&g_mutex);
    const size_t n = g_n_devs;
    pthread_mutex_unlock(&g_mutex);
    ggmlx_ok();
    return n;
}

ggml_backend_dev_t ggml_backend_dev_get(size_t index) {
    ggmlx_registry_init();
    pthread_mutex_lock(&g_mutex);
    const size_t       n   = g_n_devs;
    ggml_backend_dev_t dev = index < n ? g_devs[index] : NULL;
    pthread_mutex_unlock(&g_mutex);
    if (dev == NULL) {
        ggmlx_error(__func__, "index %zu out of range (%zu devices)", index, n);
        return NULL;
    }
    ggmlx_ok();
    return dev;
}

static ggml_backend_dev_t find_by_name(const char * name) {
    size_t n;
    ggml_backend_dev_t * devs = devs_snapshot(&n);
    ggml_backend_dev_t   dev  = NULL;
    for (size_t i = 0; i < n && dev == NULL; i++) {
        if (strcasecmp(dev_name_of(devs[i]), name) == 0) {
            dev = devs[i];
        }
    }
    free(devs);
    return dev;
}

static bool valid_type(enum ggml_backend_dev_type type) {
    return (int) type >= (int) GGML_BACKEND_DEVICE_TYPE_CPU && (int) type <= (int) GGML_BACKEND_DEVICE_TYPE_META;
}

static ggml_backend_dev_t find_by_type(enum ggml_backend_dev_type type) {
    size_t n;
    ggml_backend_dev_t * devs = devs_snapshot(&n);
    ggml_backend_dev_t   dev  = NULL;
    for (size_t i = 0; i < n && dev == NULL; i++) {
        if (devs[i]->iface.get_type(devs[i]) == type) {
            dev = devs[i];
        }
    }
    free(devs);
    return dev;
}

ggml_backend_dev_t ggml_backend_dev_by_name(const char * name) {
    ggmlx_registry_init();
    if (name == NULL) {
        ggmlx_error(__func__, "name is NULL");
        return NULL;
    }
    ggml_backend_dev_t dev = find_by_name(name);
    ggmlx_ok(); /* no device of that name is an answer, not an error */
    return dev;
}

ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type) {
    ggmlx_registry_init();
    if (!valid_type(type)) {
        ggmlx_error(__func__, "unknown device type %d", (int) type);
        return NULL;
    }
    ggml_backend_dev_t dev = find_by_type(type);
    ggmlx_ok();
    return dev;
}

/* ---- backends ---------------------------------------------------------------------------------- */

ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params) {
    ggmlx_registry_init();
    if (name == NULL) {
        ggmlx_error(__func__, "name is NULL");
        return NULL;
    }
    ggml_backend_dev_t dev = find_by_name(name);
    if (dev == NULL) {
        char list[256];
        ggmlx_error(__func__, "no device named '%s' (devices: %s)", name, device_list(list, sizeof list));
        return NULL;
    }
    return ggml_backend_dev_init(dev, params);
}

ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params) {
    ggmlx_registry_init();
    if (!valid_type(type)) {
        ggmlx_error(__func__, "unknown device type %d", (int) type);
        return NULL;
    }
    ggml_backend_dev_t dev = find_by_type(type);
    if (dev == NULL) {
        char list[256];
        ggmlx_error(__func__, "no device of type %s (devices: %s)", type_name(type), device_list(list, sizeof list));
        return NULL;
    }
    return ggml_backend_dev_init(dev, params);
}

ggml_backend_t ggml_backend_init_best(void) {
    ggmlx_registry_init();
    ggml_backend_dev_t dev = find_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (dev == NULL) {
        dev = find_by_type(GGML_BACKEND_DEVICE_TYPE_IGPU);
    }
    if (dev == NULL) {
        dev = find_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    }
    if (dev == NULL) {
        char list[256];
        ggmlx_error(__func__, "no GPU, integrated GPU or CPU device (devices: %s)", device_list(list, sizeof list));
        return NULL;
    }
    return ggml_backend_dev_init(dev, NULL);
}
