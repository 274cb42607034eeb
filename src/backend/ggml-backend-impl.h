/*
 * ggml-backend-impl.h -- the vtables a backend implements, and the helpers backends share.
 *
 * The structs follow upstream's ggml-backend-impl.h field for field, with ggmlx's additions
 * (queue status) at the end of struct ggml_backend_i. Because of those additions the API
 * version differs from upstream's (2): a module built against upstream's headers is refused
 * with a message when loaded, never called through a mismatched vtable.
 */
#ifndef GGMLX_BACKEND_IMPL_H
#define GGMLX_BACKEND_IMPL_H

#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggmlx-backend-impl.h"

#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "gx" in the high bits, so it can never equal an upstream version number */
#define GGML_BACKEND_API_VERSION 0x67780001

/* ---- buffer type --------------------------------------------------------------------------- */

struct ggml_backend_buffer_type_i {
    const char *          (*get_name)      (ggml_backend_buffer_type_t buft);
    /* NULL on failure (out of memory, over the device limit): never abort */
    ggml_backend_buffer_t (*alloc_buffer)  (ggml_backend_buffer_type_t buft, size_t size);
    size_t                (*get_alignment) (ggml_backend_buffer_type_t buft);
    size_t                (*get_max_size)  (ggml_backend_buffer_type_t buft); /* opt: SIZE_MAX */
    size_t                (*get_alloc_size)(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor); /* opt: ggml_nbytes */
    bool                  (*is_host)       (ggml_backend_buffer_type_t buft); /* opt: false */

    /* ---- ggmlx additions ---- */

    /*
     * opt: allocate every unallocated tensor of a no_alloc context at once, for buffer types
     * whose memory is not one range of the size of the tensors (the meta buffer type keeps only
     * each device's slices). NULL with a message on failure, leaving the tensors unallocated.
     */
    ggml_backend_buffer_t (*alloc_ctx_tensors)(ggml_backend_buffer_type_t buft, struct ggml_context * ctx);
};

struct ggml_backend_buffer_type {
    struct ggml_backend_buffer_type_i iface;
    ggml_backend_dev_t                device;
    void                            * context;
};

/* ---- buffer -------------------------------------------------------------------------------- */

struct ggml_backend_buffer_i {
    void             (*free_buffer)  (ggml_backend_buffer_t buffer);  /* opt: frees the context, not the struct */
    void *           (*get_base)     (ggml_backend_buffer_t buffer);
    enum ggml_status (*init_tensor)  (ggml_backend_buffer_t buffer, struct ggml_tensor * tensor); /* opt */
    void             (*memset_tensor)(ggml_backend_buffer_t buffer,       struct ggml_tensor * tensor, uint8_t value, size_t offset, size_t size);
    void             (*set_tensor)   (ggml_backend_buffer_t buffer,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    void             (*get_tensor)   (ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size);
    void             (*set_tensor_2d)(ggml_backend_buffer_t buffer,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data); /* opt */
    void             (*get_tensor_2d)(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data); /* opt */
    /* dst is in this buffer, src anywhere; false when this buffer cannot do it (the caller falls back) */
    bool             (*cpy_tensor)   (ggml_backend_buffer_t buffer, const struct ggml_tensor * src, struct ggml_tensor * dst); /* opt */
    void             (*clear)        (ggml_backend_buffer_t buffer, uint8_t value);
    void             (*reset)        (ggml_backend_buffer_t buffer); /* opt */
};

struct ggml_backend_buffer {
    struct ggml_backend_buffer_i   iface;
    ggml_backend_buffer_type_t     buft;
    void                         * context;
    size_t                         size;
    enum ggml_backend_buffer_usage usage;
};

/* A new buffer struct (usage ANY); NULL when the host is out of memory. */
ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft, struct ggml_backend_buffer_i iface,
                                               void * context, size_t size);

/*
 * ggml_backend_tensor_alloc without its checks, for allocators whose plan already guarantees
 * that tensor is unallocated, not a view, and fits at addr inside buffer.
 */
enum ggml_status ggmlx_tensor_place(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, void * addr);

/* do not use directly: ggml_backend_tensor_copy */
bool ggml_backend_buffer_copy_tensor(const struct ggml_tensor * src, struct ggml_tensor * dst);

/* A buffer made of several (used when a context's tensors exceed one buffer's max size). */
ggml_backend_buffer_t ggml_backend_multi_buffer_alloc_buffer(ggml_backend_buffer_t * buffers, size_t n_buffers);
bool                  ggml_backend_buffer_is_multi_buffer(ggml_backend_buffer_t buffer);
void                  ggml_backend_multi_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);

/* ---- meta device (src/meta/) ---------------------------------------------------------------- */

bool ggml_backend_is_meta(ggml_backend_t backend);
bool ggml_backend_buffer_is_meta(ggml_backend_buffer_t buf);
bool ggml_backend_buft_is_meta(ggml_backend_buffer_type_t buft);
/* number of simple backends of a meta backend, and the i-th (NULL when out of range) */
size_t         ggml_backend_meta_n_backends(ggml_backend_t meta_backend);
ggml_backend_t ggml_backend_meta_simple_backend(ggml_backend_t meta_backend, size_t index);
/*
 * Allocates ctx's tensors in a meta buffer type: each device's buffer holds only its slices.
 * Called by ggml_backend_alloc_ctx_tensors_from_buft when buft is a meta buffer type.
 */
ggml_backend_buffer_t ggml_backend_meta_alloc_ctx_tensors_from_buft(struct ggml_context * ctx,
                                                                             ggml_backend_buffer_type_t buft);

/*
 * An event made of one event per device (a meta device's): recording records every part on
 * its own backend, waiting waits for every part. The generic event calls take the parts apart
 * (the device's event_parts says what they are), so any backend can wait for a composite event.
 */
struct ggmlx_composite_event {
    size_t               n;
    ggml_backend_event_t parts[GGML_BACKEND_META_MAX_DEVICES];
};
/* the parts, from the event's device (event_parts), or NULL when the event has none */
const struct ggmlx_composite_event * ggmlx_event_composite(ggml_backend_event_t event);

/* ---- backend (one in-order queue) ---------------------------------------------------------- */

struct ggml_backend_i {
    const char * (*get_name)(ggml_backend_t backend);
    void (*free)(ggml_backend_t backend); /* frees the struct too; waits for queued work first */

    /* opt: queued copies (NULL: the generic layer synchronizes and copies) */
    void (*set_tensor_async)   (ggml_backend_t backend,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    void (*get_tensor_async)   (ggml_backend_t backend, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size);
    void (*set_tensor_2d_async)(ggml_backend_t backend,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    void (*get_tensor_2d_async)(ggml_backend_t backend, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    /* called on the *destination* backend's vtable; false when it cannot queue this copy */
    bool (*cpy_tensor_async)(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor * src, struct ggml_tensor * dst);

    /* required when the backend is asynchronous */
    void (*synchronize)(ggml_backend_t backend);

    /* opt: graph plans */
    ggml_backend_graph_plan_t (*graph_plan_create) (ggml_backend_t backend, const struct ggml_cgraph * cgraph);
    void                      (*graph_plan_free)   (ggml_backend_t backend, ggml_backend_graph_plan_t plan);
    void                      (*graph_plan_update) (ggml_backend_t backend, ggml_backend_graph_plan_t plan, const struct ggml_cgraph * cgraph);
    enum ggml_status          (*graph_plan_compute)(ggml_backend_t backend, ggml_backend_graph_plan_t plan);

    /* enqueue the computation (asynchronous when the backend is) */
    enum ggml_status (*graph_compute)(ggml_backend_t backend, struct ggml_cgraph * cgraph);

    /* opt: events (required when the device's caps.events is true) */
    void (*event_record)(ggml_backend_t backend, ggml_backend_event_t event);
    void (*event_wait)  (ggml_backend_t backend, ggml_backend_event_t event);

    /* opt: reorder a graph's nodes for this backend (called by the scheduler per split) */
    void (*graph_optimize)(ggml_backend_t backend, struct ggml_cgraph * cgraph);

    /* ---- ggmlx additions ---- */

    /* opt: the queue's sticky status (first error of queued work), and resetting it */
    enum ggml_status (*get_status)  (ggml_backend_t backend);
    void             (*clear_status)(ggml_backend_t backend);

    /* opt: test hooks of host queues (ggmlx_backend_queue_hold/release/pending) */
    bool             (*queue_hold)   (ggml_backend_t backend, bool hold);
    size_t           (*queue_pending)(ggml_backend_t backend);

    /*
     * opt: enqueue a time stamp: when the queue reaches this point it stores the monotonic
     * clock (CLOCK_MONOTONIC, ns) in *ns. *ns may be read once the backend is synchronized.
     * Used by the scheduler's traces, so that spans are timed where the work runs.
     */
    void             (*queue_mark)(ggml_backend_t backend, uint64_t * ns);
};

struct ggml_backend {
    ggml_guid_t           guid;
    struct ggml_backend_i iface;
    ggml_backend_dev_t    device;
    void                * context;
};

struct ggml_backend_event {
    struct ggml_backend_device * device;
    void                       * context;

    /* ---- ggmlx addition ---- */

    /*
     * opt: a host counter event (host-queue.h) that mirrors this event's records, set by a
     * backend whose own events the host queues cannot wait on in queue order (CUDA's: a
     * cudaEventSynchronize run by a worker waits for the latest record, not the one enqueued
     * before the wait). A host queue waits on the twin instead (docs/async.md rule 6).
     */
    ggml_backend_event_t host_twin;
};

/* ---- device -------------------------------------------------------------------------------- */

struct ggml_backend_device_i {
    const char *               (*get_name)(ggml_backend_dev_t dev);
    const char *               (*get_description)(ggml_backend_dev_t dev);
    void                       (*get_memory)(ggml_backend_dev_t dev, size_t * free, size_t * total);
    enum ggml_backend_dev_type (*get_type)(ggml_backend_dev_t dev);
    void                       (*get_props)(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props);
    ggml_backend_t             (*init_backend)(ggml_backend_dev_t dev, const char * params);
    ggml_backend_buffer_type_t (*get_buffer_type)(ggml_backend_dev_t dev);
    ggml_backend_buffer_type_t (*get_host_buffer_type)(ggml_backend_dev_t dev);                                    /* opt */
    ggml_backend_buffer_t      (*buffer_from_host_ptr)(ggml_backend_dev_t dev, void * ptr, size_t size, size_t max_tensor_size); /* opt */
    bool                       (*supports_op)(ggml_backend_dev_t dev, const struct ggml_tensor * op);
    bool                       (*supports_buft)(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft);
    bool                       (*offload_op)(ggml_backend_dev_t dev, const struct ggml_tensor * op);               /* opt */
    ggml_backend_event_t       (*event_new)(ggml_backend_dev_t dev);                                               /* opt */
    void                       (*event_free)(ggml_backend_dev_t dev, ggml_backend_event_t event);
    void                       (*event_synchronize)(ggml_backend_dev_t dev, ggml_backend_event_t event);

    /* ---- ggmlx additions ---- */

    /*
     * opt: the parts of event when this device's events are made of other devices' events (a
     * meta device's: one per device), else NULL. ggml_backend_event_wait has a backend of any
     * other device wait for each part, so no backend needs to know what made the event.
     */
    const struct ggmlx_composite_event * (*event_parts)(ggml_backend_dev_t dev, ggml_backend_event_t event);
};

struct ggml_backend_device {
    struct ggml_backend_device_i iface;
    ggml_backend_reg_t           reg;
    void                       * context;
};

/* ---- registry ------------------------------------------------------------------------------ */

struct ggml_backend_reg_i {
    const char *       (*get_name)(ggml_backend_reg_t reg);
    size_t             (*get_device_count)(ggml_backend_reg_t reg);
    ggml_backend_dev_t (*get_device)(ggml_backend_reg_t reg, size_t index);
    void *             (*get_proc_address)(ggml_backend_reg_t reg, const char * name); /* opt */
};

struct ggml_backend_reg {
    int                       api_version; /* GGML_BACKEND_API_VERSION */
    struct ggml_backend_reg_i iface;
    void                    * context;
};

/* what a backend module exports */
typedef ggml_backend_reg_t (*ggml_backend_init_t)(void);  /* "ggml_backend_init" */
typedef int                (*ggml_backend_score_t)(void); /* "ggml_backend_score": 0 = cannot run here */

/*
 * ggmlx's addition, optional: "ggmlx_backend_unavailable_reason" says in one phrase why the
 * backend cannot be used here ("no CUDA device (cudaErrorNoDevice: ...)"), NULL when it can.
 * A module exports it next to ggml_backend_score (the loader asks it after a score of 0, so
 * the one line it logs names the cause); a linked registry with no device answers it through
 * get_proc_address under the same name, for ggmlx_backend_unavailable.
 */
typedef const char * (*ggmlx_backend_unavailable_reason_t)(void);
#define GGMLX_BACKEND_UNAVAILABLE_REASON "ggmlx_backend_unavailable_reason"

#ifdef GGML_BACKEND_DL
#    define GGML_BACKEND_DL_IMPL(reg_fn)                                                      \
        __attribute__((visibility("default"))) ggml_backend_reg_t ggml_backend_init(void);   \
        ggml_backend_reg_t ggml_backend_init(void) { return reg_fn(); }
#    define GGML_BACKEND_DL_SCORE_IMPL(score_fn)                                              \
        __attribute__((visibility("default"))) int ggml_backend_score(void);                 \
        int ggml_backend_score(void) { return score_fn(); }
#    define GGMLX_BACKEND_DL_REASON_IMPL(reason_fn)                                           \
        __attribute__((visibility("default"))) const char * ggmlx_backend_unavailable_reason(void); \
        const char * ggmlx_backend_unavailable_reason(void) { return reason_fn(); }
#else
#    define GGML_BACKEND_DL_IMPL(reg_fn)
#    define GGML_BACKEND_DL_SCORE_IMPL(score_fn)
#    define GGMLX_BACKEND_DL_REASON_IMPL(reason_fn)
#endif

/* ---- helpers for the generic layer --------------------------------------------------------- */

/* a registry's functions by name, for get_proc_address */
struct ggmlx_proc {
    const char * name;
    void       * fn;
};

static inline void * ggmlx_proc_lookup(const struct ggmlx_proc * procs, size_t n, const char * name) {
    for (size_t i = 0; name != NULL && i < n; i++) {
        if (strcmp(procs[i].name, name) == 0) {
            return procs[i].fn;
        }
    }
    return NULL; /* an unknown name is not an error: callers probe for optional functions */
}

/*
 * Stamp *ns with the monotonic clock (ns) when backend's queue reaches this point; true when
 * the backend does (queue_mark), false when it cannot and *ns got the time of the call.
 */
bool     ggmlx_backend_queue_mark(ggml_backend_t backend, uint64_t * ns);
/* CLOCK_MONOTONIC in ns (inline: every library times its own work, none exports it) */
static inline uint64_t ggmlx_time_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * Called by ggml_backend_free with the backend about to be freed (one hook; NULL removes it).
 * Upstream lets a program free its backends before a scheduler made with them (llama.cpp's
 * llama_context does); the scheduler layer sets the hook so that it forgets such a backend
 * instead of synchronizing freed memory later. The backend layer names no scheduler this way.
 */
void ggmlx_backend_set_free_hook(void (*hook)(ggml_backend_t backend));

/* the buffer that owns tensor's memory (a view's source's buffer); NULL when unallocated */
static inline ggml_backend_buffer_t ggmlx_tensor_buffer(const struct ggml_tensor * t) {
    return t->view_src ? t->view_src->buffer : t->buffer;
}

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_BACKEND_IMPL_H */
