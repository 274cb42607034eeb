/*
 * meta-device.c -- ggml_backend_meta_device: the device made of devices, its cache (one device
 * per set of arguments, safe from any thread, alive until the process ends) and its events
 * (one event per device, taken apart by the generic event calls).
 */
#include "meta-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- device interface -------------------------------------------------------------------------- */

static const char * meta_dev_get_name(ggml_backend_dev_t dev) {
    return ((struct meta_device *) dev->context)->name;
}

static const char * meta_dev_get_description(ggml_backend_dev_t dev) {
    return ((struct meta_device *) dev->context)->description;
}

static void meta_dev_get_memory(ggml_backend_dev_t dev, size_t * free, size_t * total) {
    const struct meta_device * m = dev->context;
    size_t f = 0, t = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t fi = 0, ti = 0;
        ggml_backend_dev_memory(m->devs[i], &fi, &ti);
        f += fi;
        t += ti;
    }
    *free  = f;
    *total = t;
}

static enum ggml_backend_dev_type meta_dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_META;
}

static void meta_dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    const struct meta_device * m = dev->context;
    memset(props, 0, sizeof *props);
    props->name        = m->name;
    props->description = m->description;
    props->type        = GGML_BACKEND_DEVICE_TYPE_META;
    meta_dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps.async  = true;
    props->caps.events = true;
    for (size_t i = 0; i < m->n; i++) {
        struct ggml_backend_dev_props p;
        ggml_backend_dev_get_props(m->devs[i], &p);
        props->caps.async  = props->caps.async && p.caps.async;
        props->caps.events = props->caps.events && p.caps.events;
    }
}

static ggml_backend_t meta_dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    return ggmlx_meta_backend_new(dev->context, params);
}

static ggml_backend_buffer_type_t meta_dev_get_buffer_type(ggml_backend_dev_t dev) {
    return &((struct meta_device *) dev->context)->buft;
}

static bool meta_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    const struct meta_device * m = dev->context;
    for (size_t i = 0; i < m->n; i++) {
        if (!ggml_backend_dev_supports_op(m->devs[i], op)) {
            return false;
        }
    }
    return true;
}

static bool meta_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    return buft == &((struct meta_device *) dev->context)->buft;
}

static ggml_backend_event_t meta_dev_event_new(ggml_backend_dev_t dev) {
    const struct meta_device * m = dev->context;
    struct ggmlx_composite_event * ce = calloc(1, sizeof *ce);
    ggml_backend_event_t ev = calloc(1, sizeof *ev);
    if (ce == NULL || ev == NULL) {
        ggmlx_error("ggml_backend_event_new", "out of host memory");
        goto err;
    }
    for (size_t i = 0; i < m->n; i++) {
        ce->parts[i] = ggml_backend_event_new(m->devs[i]);
        if (ce->parts[i] == NULL) {
            ggmlx_error("ggml_backend_event_new", "%s: device %s could not make an event", m->name,
                        ggml_backend_dev_name(m->devs[i]));
            goto err;
        }
        ce->n = i + 1;
    }
    ev->device  = dev;
    ev->context = ce;
    return ev;
err:
    if (ce != NULL) {
        for (size_t i = 0; i < ce->n; i++) {
            ggml_backend_event_free(ce->parts[i]);
        }
    }
    free(ce);
    free(ev);
    return NULL;
}

static void meta_dev_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    struct ggmlx_composite_event * ce = event->context;
    for (size_t i = 0; i < ce->n; i++) {
        ggml_backend_event_free(ce->parts[i]);
    }
    free(ce);
    free(event);
}

static const struct ggmlx_composite_event * meta_dev_event_parts(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    return event->context;
}

static void meta_dev_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    const struct ggmlx_composite_event * ce = event->context;
    for (size_t i = 0; i < ce->n; i++) {
        ggml_backend_event_synchronize(ce->parts[i]);
    }
}

static const struct ggml_backend_device_i meta_dev_iface = {
    .get_name             = meta_dev_get_name,
    .get_description      = meta_dev_get_description,
    .get_memory           = meta_dev_get_memory,
    .get_type             = meta_dev_get_type,
    .get_props            = meta_dev_get_props,
    .init_backend         = meta_dev_init_backend,
    .get_buffer_type      = meta_dev_get_buffer_type,
    .get_host_buffer_type = NULL,
    .buffer_from_host_ptr = NULL,
    .supports_op          = meta_dev_supports_op,
    .supports_buft        = meta_dev_supports_buft,
    .offload_op           = NULL,
    .event_new            = meta_dev_event_new,
    .event_free           = meta_dev_event_free,
    .event_synchronize    = meta_dev_event_synchronize,
    .event_parts          = meta_dev_event_parts,
};

struct meta_device * ggmlx_meta_device_of(ggml_backend_dev_t dev) {
    return dev != NULL && dev->iface.get_name == meta_dev_get_name ? dev->context : NULL;
}

struct meta_device * ggmlx_meta_device_of_buft(ggml_backend_buffer_type_t buft) {
    return buft != NULL && buft->iface.alloc_buffer == ggmlx_meta_buft_iface.alloc_buffer ? buft->context : NULL;
}

bool ggml_backend_buft_is_meta(ggml_backend_buffer_type_t buft) {
    return ggmlx_meta_device_of_buft(buft) != NULL;
}

size_t ggmlx_meta_dev_n_devices(ggml_backend_dev_t dev) {
    const struct meta_device * m = ggmlx_meta_device_of(dev);
    return m != NULL ? m->n : 0;
}

/* ---- creation and cache ------------------------------------------------------------------------ */

/*
 * Devices are handed out to callers that keep raw pointers (upstream does the same), so they
 * live until the process ends; the list only grows, under a lock, so any thread may ask.
 */
static pthread_mutex_t       g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct meta_device ** g_cache;
static size_t                g_cache_n, g_cache_cap;

static bool same_args(const struct meta_device * m, ggml_backend_dev_t * devs, size_t n,
                      ggml_backend_meta_get_split_state_t fn, void * ud) {
    if (m->n != n || m->get_split_state != fn || m->ud != ud) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (m->devs[i] != devs[i]) {
            return false;
        }
    }
    return true;
}

static struct meta_device * make_device(ggml_backend_dev_t * devs, size_t n, ggml_backend_meta_get_split_state_t fn,
                                        void * ud) {
    struct meta_device * m = calloc(1, sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    m->n               = n;
    m->get_split_state = fn;
    m->ud              = ud;
    size_t off = (size_t) snprintf(m->name, sizeof m->name, "Meta(");
    size_t doff = 0;
    for (size_t i = 0; i < n; i++) {
        m->devs[i]      = devs[i];
        m->dev_bufts[i] = ggml_backend_dev_buffer_type(devs[i]);
        if (off < sizeof m->name) {
            off += (size_t) snprintf(m->name + off, sizeof m->name - off, "%s%s", i ? "," : "",
                                     ggml_backend_dev_name(devs[i]));
        }
        if (doff < sizeof m->description) {
            doff += (size_t) snprintf(m->description + doff, sizeof m->description - doff, "%s%s", i ? " + " : "",
                                      ggml_backend_dev_description(devs[i]));
        }
    }
    if (off < sizeof m->name) {
        snprintf(m->name + off, sizeof m->name - off, ")");
    }
    snprintf(m->buft_name, sizeof m->buft_name, "%s", m->name);

    m->dev.iface   = meta_dev_iface;
    m->dev.reg     = NULL; /* as upstream: made on request, not enumerated by any registry */
    m->dev.context = m;
    m->buft.iface   = ggmlx_meta_buft_iface;
    m->buft.device  = &m->dev;
    m->buft.context = m;
    return m;
}

ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t * devs, size_t n_devs,
                                            ggml_backend_meta_get_split_state_t get_split_state,
                                            void * get_split_state_ud) {
    if (devs == NULL) {
        ggmlx_error(__func__, "devs is NULL");
        return NULL;
    }
    if (n_devs == 0 || n_devs > META_MAX) {
        ggmlx_error(__func__, "n_devs = %zu; 1 to %d devices are possible", n_devs, META_MAX);
        return NULL;
    }
    if (get_split_state == NULL) {
        ggmlx_error(__func__, "get_split_state is NULL");
        return NULL;
    }
    for (size_t i = 0; i < n_devs; i++) {
        if (devs[i] == NULL) {
            ggmlx_error(__func__, "devs[%zu] is NULL", i);
            return NULL;
        }
        if (ggmlx_meta_device_of(devs[i]) != NULL) {
            ggmlx_error(__func__, "devs[%zu] (%s) is itself a meta device", i, ggml_backend_dev_name(devs[i]));
            return NULL;
        }
        for (size_t j = 0; j < i; j++) {
            if (devs[j] == devs[i]) {
                ggmlx_error(__func__, "device %s is given twice (devs[%zu] and devs[%zu])",
                            ggml_backend_dev_name(devs[i]), j, i);
                return NULL;
            }
        }
        if (ggml_backend_dev_buffer_type(devs[i]) == NULL) {
            ggmlx_error(__func__, "device %s has no buffer type", ggml_backend_dev_name(devs[i]));
            return NULL;
        }
    }

    pthread_mutex_lock(&g_cache_lock);
    struct meta_device * found = NULL;
    for (size_t i = 0; i < g_cache_n && found == NULL; i++) {
        if (same_args(g_cache[i], devs, n_devs, get_split_state, get_split_state_ud)) {
            found = g_cache[i];
        }
    }
    if (found == NULL) {
        if (g_cache_n == g_cache_cap) {
            const size_t cap = g_cache_cap ? 2 * g_cache_cap : 8;
            struct meta_device ** grown = realloc(g_cache, cap * sizeof *grown);
            if (grown == NULL) {
                pthread_mutex_unlock(&g_cache_lock);
                ggmlx_error(__func__, "out of host memory");
                return NULL;
            }
            g_cache     = grown;
            g_cache_cap = cap;
        }
        found = make_device(devs, n_devs, get_split_state, get_split_state_ud);
        if (found != NULL) {
            g_cache[g_cache_n++] = found;
        }
    }
    pthread_mutex_unlock(&g_cache_lock);
    if (found == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    ggmlx_ok();
    return &found->dev;
}
