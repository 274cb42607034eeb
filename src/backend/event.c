/*
 * event.c -- the generic event calls. An event belongs to the device that made it; only a
 * backend of that device may record it; any backend may wait for it (docs/async.md rule 6).
 */
#include "backend-check.h"

const struct ggmlx_composite_event * ggmlx_event_composite(ggml_backend_event_t event) {
    if (event == NULL || event->device == NULL || event->device->iface.event_parts == NULL) {
        return NULL;
    }
    return event->device->iface.event_parts(event->device, event);
}

ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device) {
    if (device == NULL) {
        ggmlx_error(__func__, "device is NULL");
        return NULL;
    }
    if (device->iface.event_new == NULL) {
        /* as upstream: callers (the scheduler) fall back to synchronizing; caps.events says why */
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: device %s has no events\n", __func__, device->iface.get_name(device));
        ggmlx_ok();
        return NULL;
    }
    ggmlx_clear_last_error();
    ggml_backend_event_t event = device->iface.event_new(device);
    if (event == NULL) {
        ggmlx_error_if_silent(__func__, "device %s could not make an event", device->iface.get_name(device));
    }
    return event;
}

void ggml_backend_event_free(ggml_backend_event_t event) {
    if (event == NULL) {
        return;
    }
    if (event->device == NULL || event->device->iface.event_free == NULL) {
        ggmlx_error(__func__, "event has no device to free it; leaked");
        return;
    }
    event->device->iface.event_free(event->device, event);
}

void ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend) {
    if (event == NULL || backend == NULL) {
        ggmlx_error(__func__, "%s is NULL", event == NULL ? "event" : "backend");
        return;
    }
    if (backend->device != event->device) {
        ggmlx_error(__func__, "event of device %s cannot be recorded on backend %s of device %s; nothing enqueued",
                    event->device ? event->device->iface.get_name(event->device) : "(none)", ggml_backend_name(backend),
                    backend->device ? backend->device->iface.get_name(backend->device) : "(none)");
        return;
    }
    if (backend->iface.event_record == NULL) {
        ggmlx_error(__func__, "backend %s does not support events", ggml_backend_name(backend));
        return;
    }
    ggmlx_ok();
    backend->iface.event_record(backend, event);
}

void ggml_backend_event_synchronize(ggml_backend_event_t event) {
    if (event == NULL) {
        ggmlx_error(__func__, "event is NULL");
        return;
    }
    if (event->device == NULL || event->device->iface.event_synchronize == NULL) {
        ggmlx_error(__func__, "event has no device that can wait for it");
        return;
    }
    ggmlx_ok();
    event->device->iface.event_synchronize(event->device, event);
}

void ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    if (backend == NULL || event == NULL) {
        ggmlx_error(__func__, "%s is NULL", backend == NULL ? "backend" : "event");
        return;
    }
#ifdef GGMLX_DROP_EVENT_WAITS
    /* testing build: the async suite must fail without waits (CI checks that it does) */
    ggmlx_ok();
    return;
#endif
    const struct ggmlx_composite_event * parts = ggmlx_event_composite(event);
    if (parts != NULL && backend->device != event->device) {
        /* a backend of another device waits for a composite event by waiting for each part;
           one of the event's own device knows its parts (its event_wait takes them apart) */
        for (size_t i = 0; i < parts->n; i++) {
            ggml_backend_event_wait(backend, parts->parts[i]);
        }
        return;
    }
    if (backend->iface.event_wait == NULL) {
        /* no queued wait: the host waits instead, so later work on backend still comes after */
        ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: backend %s cannot wait for events in its queue; waiting on the host\n",
                  __func__, ggml_backend_name(backend));
        ggml_backend_event_synchronize(event);
        return;
    }
    ggmlx_ok();
    backend->iface.event_wait(backend, event);
}
