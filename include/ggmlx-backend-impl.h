/*
 * ggmlx-backend-impl.h -- the functions ggmlx's backend libraries call across a library
 * boundary: the backend-author layer that libggml-cpu, libggml-cuda and the SIM devices (in
 * libggml) share with libggml-base.
 *
 * Applications never need this header. Each function here holds or touches state that must
 * exist once per process (the thread's last error and the log callback, the host events and
 * host queues that backends of different libraries wait on, the registry of host aliases), or
 * builds a backend on the CPU executor, so it lives in one library and the others call it
 * there. Everything else the libraries share is compiled into each one and exported by none.
 *
 * It is an internal interface made visible, as upstream's ggml-backend-impl.h functions are:
 * the vtables these functions work with are not installed, the semantics are in the sources
 * named per group, and nothing here is kept stable between versions.
 */
#pragma once

#include "ggml-backend.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

    /* ---- libggml-base: errors and logging (src/core/ggml-impl.h) ---------------------------- */

    /* log through the callback ggml_log_set installed */
    GGML_ATTRIBUTE_FORMAT(2, 3)
    GGML_API void ggmlx_log(enum ggml_log_level level, const char * fmt, ...);
    /* record the calling thread's error (ggmlx_last_error) and log it, prefixed with func */
    GGML_ATTRIBUTE_FORMAT(2, 3)
    GGML_API void ggmlx_error(const char * func, const char * fmt, ...);
    GGML_API void ggmlx_errorv(const char * func, const char * fmt, va_list ap);
    /* a public entry point succeeded: clear the calling thread's error */
    GGML_API void ggmlx_ok(void);
    /* "[4, 3, 1, 1] f32" into buf, for messages */
    GGML_API const char * ggmlx_shape_str(const struct ggml_tensor * t, char * buf, size_t n);

    /* ---- libggml-base: buffers (src/backend/ggml-backend-impl.h) ---------------------------- */

    struct ggml_backend_buffer_i;
    /* a new buffer struct (usage ANY) over a backend's own context; NULL when out of memory */
    GGML_API ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft,
                                                            struct ggml_backend_buffer_i iface, void * context,
                                                            size_t size);

    /* ---- libggml-base: host queues and host events (src/backend/host-queue.h) --------------- */

    struct ggmlx_queue;
    struct ggmlx_task;
    struct ggmlx_host_event;

    GGML_API struct ggmlx_queue * ggmlx_queue_new(const char * name);
    GGML_API void                 ggmlx_queue_set_chaos(struct ggmlx_queue * q, uint64_t seed);
    GGML_API void                 ggmlx_queue_free(struct ggmlx_queue * q);
    GGML_API bool                 ggmlx_queue_push(struct ggmlx_queue * q, struct ggmlx_task task);
    GGML_API void                 ggmlx_queue_sync(struct ggmlx_queue * q);
    GGML_API enum ggml_status     ggmlx_queue_status(struct ggmlx_queue * q);
    GGML_API void ggmlx_queue_set_error(struct ggmlx_queue * q, enum ggml_status status, const char * msg);
    GGML_API const char *         ggmlx_queue_error(struct ggmlx_queue * q);
    GGML_API void                 ggmlx_queue_clear_status(struct ggmlx_queue * q);
    GGML_API void                 ggmlx_queue_hold(struct ggmlx_queue * q, bool hold);
    GGML_API size_t               ggmlx_queue_pending(struct ggmlx_queue * q);

    GGML_API struct ggmlx_host_event * ggmlx_host_event_of(ggml_backend_event_t event);
    GGML_API ggml_backend_event_t      ggmlx_host_event_new(ggml_backend_dev_t dev);
    GGML_API void                      ggmlx_host_event_free(ggml_backend_event_t event);
    GGML_API bool                      ggmlx_host_event_record(struct ggmlx_queue * q, ggml_backend_event_t event);
    GGML_API bool                      ggmlx_host_event_wait(struct ggmlx_queue * q, ggml_backend_event_t event);
    GGML_API void                      ggmlx_host_event_synchronize(ggml_backend_event_t event);
    GGML_API void                      ggmlx_host_event_retain(struct ggmlx_host_event * ev);
    GGML_API void                      ggmlx_host_event_release(struct ggmlx_host_event * ev);
    GGML_API uint64_t                  ggmlx_host_event_begin_record(struct ggmlx_host_event * ev);
    GGML_API void                      ggmlx_host_event_complete(struct ggmlx_host_event * ev, uint64_t target);

    /* ---- libggml-base: host aliases of device memory (src/backend/host-alias.h) ------------- */

    GGML_API bool   ggmlx_alias_add(const void * hidden, void * rw, size_t size, const void * owner);
    GGML_API void   ggmlx_alias_remove(const void * hidden);
    GGML_API void * ggmlx_alias_lookup(const void * p, const void ** owner);

    /* ---- libggml-cpu: a backend on the CPU executor (src/cpu/host-backend.h, cpu-ops.h) ----- */

    struct ggmlx_host_backend;
    struct ggmlx_host_backend_params;
    struct ggmlx_host_settings;
    struct ggmlx_cpu_params;
    typedef void (*ggmlx_cpu_kernel_t)(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

    GGML_BACKEND_API ggml_backend_t              ggmlx_host_backend_new(const struct ggmlx_host_backend_params * params);
    GGML_BACKEND_API struct ggmlx_host_backend * ggmlx_host_backend_of(ggml_backend_t backend);
    GGML_BACKEND_API struct ggmlx_host_settings  ggmlx_host_backend_settings(const struct ggmlx_host_backend * hb);
    GGML_BACKEND_API void                        ggmlx_host_backend_update(struct ggmlx_host_backend * hb,
                                                                           const struct ggmlx_host_settings * s);
    /* the CPU kernel of node's op and types, NULL when the CPU has none */
    GGML_BACKEND_API ggmlx_cpu_kernel_t          ggmlx_cpu_kernel_for(const struct ggml_tensor * node);

#ifdef __cplusplus
}
#endif
