/*
 * ggml-backend.h -- buffer types, buffers, backends (in-order queues), events, devices and the
 * registry. Source and binary compatible with upstream ggml's ggml-backend.h (2026-08-21) for
 * every function declared here.
 *
 * Ordering rules (docs/async.md): a backend is one in-order queue; *_async calls, graph computes,
 * event records and waits run in the order they were enqueued. Buffer-level tensor_set/get/
 * memset/copy are synchronous for the host and do not wait for queued work.
 *
 * Errors (docs/errors.md): no call aborts on bad input. NULL handles, out-of-range offsets and
 * mismatched objects give NULL / false / an error status and a message in ggmlx_last_error().
 *
 * Free in reverse order of allocation: backends and buffers before the contexts whose tensors
 * point into them; a buffer only once nothing queued still uses it.
 */
#pragma once

#include "ggml.h"
#include "ggml-alloc.h"

#ifdef GGML_BACKEND_SHARED
#    if defined(_WIN32) && !defined(__MINGW32__)
#        ifdef GGML_BACKEND_BUILD
#            define GGML_BACKEND_API __declspec(dllexport) extern
#        else
#            define GGML_BACKEND_API __declspec(dllimport) extern
#        endif
#    else
#        define GGML_BACKEND_API __attribute__((visibility("default"))) extern
#    endif
#else
#    define GGML_BACKEND_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

    typedef struct ggml_backend_buffer_type * ggml_backend_buffer_type_t;
    typedef struct ggml_backend_buffer      * ggml_backend_buffer_t;
    typedef struct ggml_backend_event       * ggml_backend_event_t;
    typedef struct ggml_backend             * ggml_backend_t;
    typedef void                            * ggml_backend_graph_plan_t;
    typedef struct ggml_backend_reg         * ggml_backend_reg_t;
    typedef struct ggml_backend_device      * ggml_backend_dev_t;

    /*
     * Buffer types: where memory comes from (host memory, a device's memory, pinned memory).
     */

    GGML_API const char *          ggml_backend_buft_name          (ggml_backend_buffer_type_t buft);
    /* size 0 gives a valid empty buffer; NULL when memory cannot be had (over the device limit) */
    GGML_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer  (ggml_backend_buffer_type_t buft, size_t size);
    GGML_API size_t                ggml_backend_buft_get_alignment (ggml_backend_buffer_type_t buft);
    GGML_API size_t                ggml_backend_buft_get_max_size  (ggml_backend_buffer_type_t buft);
    /* bytes a tensor takes in buffers of this type (at least ggml_nbytes) */
    GGML_API size_t                ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor);
    /* true when the host can read tensor->data directly, in ggml's layout */
    GGML_API bool                  ggml_backend_buft_is_host       (ggml_backend_buffer_type_t buft);
    GGML_API ggml_backend_dev_t    ggml_backend_buft_get_device    (ggml_backend_buffer_type_t buft);

    /*
     * Buffers
     */

    enum ggml_backend_buffer_usage {
        GGML_BACKEND_BUFFER_USAGE_ANY = 0,
        GGML_BACKEND_BUFFER_USAGE_WEIGHTS = 1,
        GGML_BACKEND_BUFFER_USAGE_COMPUTE = 2,
    };

    GGML_API const char *                   ggml_backend_buffer_name          (ggml_backend_buffer_t buffer);
    /* NULL is allowed. Precondition: no queued work still uses the buffer (synchronize first). */
    GGML_API void                           ggml_backend_buffer_free          (ggml_backend_buffer_t buffer);
    GGML_API void *                         ggml_backend_buffer_get_base      (ggml_backend_buffer_t buffer);
    GGML_API size_t                         ggml_backend_buffer_get_size      (ggml_backend_buffer_t buffer);
    GGML_API enum ggml_status               ggml_backend_buffer_init_tensor   (ggml_backend_buffer_t buffer, struct ggml_tensor * tensor);
    GGML_API size_t                         ggml_backend_buffer_get_alignment (ggml_backend_buffer_t buffer);
    GGML_API size_t                         ggml_backend_buffer_get_max_size  (ggml_backend_buffer_t buffer);
    GGML_API size_t                         ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor);
    /* every byte set to value, synchronously */
    GGML_API void                           ggml_backend_buffer_clear         (ggml_backend_buffer_t buffer, uint8_t value);
    GGML_API bool                           ggml_backend_buffer_is_host       (ggml_backend_buffer_t buffer);
    GGML_API void                           ggml_backend_buffer_set_usage     (ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);
    GGML_API enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage     (ggml_backend_buffer_t buffer);
    GGML_API ggml_backend_buffer_type_t     ggml_backend_buffer_get_type      (ggml_backend_buffer_t buffer);
    /* forget backend-private per-tensor state */
    GGML_API void                           ggml_backend_buffer_reset         (ggml_backend_buffer_t buffer);

    /* copy src to dst (same layout); synchronous for the host, between any buffers */
    GGML_API void ggml_backend_tensor_copy(const struct ggml_tensor * src, struct ggml_tensor * dst);

    /*
     * Backends: one in-order queue each (a CUDA stream, or a worker thread for CPU and SIM)
     */

    GGML_API ggml_guid_t  ggml_backend_guid(ggml_backend_t backend);
    GGML_API const char * ggml_backend_name(ggml_backend_t backend);
    /* NULL is allowed; waits for queued work first */
    GGML_API void         ggml_backend_free(ggml_backend_t backend);

    GGML_API ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend);
    GGML_API ggml_backend_buffer_t      ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size);
    GGML_API size_t                     ggml_backend_get_alignment(ggml_backend_t backend);
    GGML_API size_t                     ggml_backend_get_max_size(ggml_backend_t backend);

    /*
     * Queued copies between host memory and a tensor. The host memory must stay valid until the
     * backend is synchronized or an event recorded after the call has completed (docs/async.md
     * rule 4). offset + size must lie within the tensor: otherwise nothing is queued.
     */
    GGML_API void ggml_backend_tensor_set_async   (ggml_backend_t backend,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    GGML_API void ggml_backend_tensor_get_async   (ggml_backend_t backend, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size);
    /* n_copies rows of size bytes, stride_tensor apart in the tensor and stride_data apart in host memory */
    GGML_API void ggml_backend_tensor_set_2d_async(ggml_backend_t backend,       struct ggml_tensor * tensor, const void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    GGML_API void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);

    /* Synchronous for the host; they do not wait for queued work (synchronize first if needed). */
    GGML_API void ggml_backend_tensor_set   (      struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
    GGML_API void ggml_backend_tensor_get   (const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size);
    GGML_API void ggml_backend_tensor_set_2d(      struct ggml_tensor * tensor, const void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    GGML_API void ggml_backend_tensor_get_2d(const struct ggml_tensor * tensor,       void * data, size_t offset, size_t size, size_t n_copies, size_t stride_tensor, size_t stride_data);
    GGML_API void ggml_backend_tensor_memset(      struct ggml_tensor * tensor,     uint8_t value, size_t offset, size_t size);

    /* returns when everything enqueued on backend before the call is done */
    GGML_API void ggml_backend_synchronize(ggml_backend_t backend);

    GGML_API ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, struct ggml_cgraph * cgraph);
    GGML_API void                      ggml_backend_graph_plan_free  (ggml_backend_t backend, ggml_backend_graph_plan_t plan);

    GGML_API enum ggml_status ggml_backend_graph_plan_compute (ggml_backend_t backend, ggml_backend_graph_plan_t plan);
    /* = graph_compute_async + synchronize; returns the queue's status (errors are sticky) */
    GGML_API enum ggml_status ggml_backend_graph_compute      (ggml_backend_t backend, struct ggml_cgraph * cgraph);
    /*
     * Enqueues the computation and returns. What the computation needs is taken from cgraph
     * now: the graph and tensor metadata may be changed or freed once this returns (tensor
     * data may not). Returns an error status only for errors found before enqueueing.
     */
    GGML_API enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph * cgraph);

    /* NOTE: upstream will remove these in favour of the device versions */
    GGML_API bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op);
    GGML_API bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft);
    GGML_API bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor * op);

    /*
     * Copy between backends: runs after all work queued on backend_src before it; backend_dst
     * runs nothing queued after it until the copy is done. Falls back to synchronizing both and
     * copying when no queued path exists.
     */
    GGML_API void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst, const struct ggml_tensor * src, struct ggml_tensor * dst);

    GGML_API ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend);

    /*
     * Events: 64-bit counters (docs/async.md rule 6). Made by a device, recorded by a backend
     * of that device, waited for by any backend or by the host. An event never recorded counts
     * as done.
     */

    GGML_API ggml_backend_event_t ggml_backend_event_new(ggml_backend_dev_t device);
    GGML_API void                 ggml_backend_event_free(ggml_backend_event_t event);
    GGML_API void                 ggml_backend_event_record(ggml_backend_event_t event, ggml_backend_t backend);
    GGML_API void                 ggml_backend_event_synchronize(ggml_backend_event_t event);
    GGML_API void                 ggml_backend_event_wait(ggml_backend_t backend, ggml_backend_event_t event);

    /*
     * Devices
     */

    enum ggml_backend_dev_type {
        GGML_BACKEND_DEVICE_TYPE_CPU,   /* host memory */
        GGML_BACKEND_DEVICE_TYPE_GPU,   /* its own memory */
        GGML_BACKEND_DEVICE_TYPE_IGPU,  /* a GPU that uses host memory */
        GGML_BACKEND_DEVICE_TYPE_ACCEL, /* works beside the CPU (BLAS, AMX) */
        GGML_BACKEND_DEVICE_TYPE_META,  /* several devices acting as one */
    };

    struct ggml_backend_dev_caps {
        bool async;                /* asynchronous operations */
        bool host_buffer;          /* pinned host buffers */
        bool buffer_from_host_ptr; /* buffers wrapping host memory */
        bool events;               /* event synchronization */
        bool mmap_support;         /* weights may be loaded by mmap */
    };

    struct ggml_backend_dev_props {
        const char * name;
        const char * description;
        size_t memory_free;
        size_t memory_total;
        enum ggml_backend_dev_type type;
        const char * device_id;    /* e.g. a PCI bus id "0000:01:00.0"; NULL when unknown */
        struct ggml_backend_dev_caps caps;
    };

    GGML_API const char *                  ggml_backend_dev_name(ggml_backend_dev_t device);
    GGML_API const char *                  ggml_backend_dev_description(ggml_backend_dev_t device);
    GGML_API void                          ggml_backend_dev_memory(ggml_backend_dev_t device, size_t * free, size_t * total);
    GGML_API enum ggml_backend_dev_type    ggml_backend_dev_type(ggml_backend_dev_t device);
    GGML_API void                          ggml_backend_dev_get_props(ggml_backend_dev_t device, struct ggml_backend_dev_props * props);
    GGML_API ggml_backend_reg_t            ggml_backend_dev_backend_reg(ggml_backend_dev_t device);
    /* params: a device-specific string, NULL for defaults (CPU: "sync" for blocking computes) */
    GGML_API ggml_backend_t                ggml_backend_dev_init(ggml_backend_dev_t device, const char * params);
    GGML_API ggml_backend_buffer_type_t    ggml_backend_dev_buffer_type(ggml_backend_dev_t device);
    GGML_API ggml_backend_buffer_type_t    ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device);
    GGML_API ggml_backend_buffer_t         ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void * ptr, size_t size, size_t max_tensor_size);

    GGML_API bool                          ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor * op);
    GGML_API bool                          ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft);
    GGML_API bool                          ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor * op);

    /*
     * Backend registries (one per backend kind) and the functions they offer by name
     */

    GGML_API const char *       ggml_backend_reg_name(ggml_backend_reg_t reg);
    GGML_API size_t             ggml_backend_reg_dev_count(ggml_backend_reg_t reg);
    GGML_API ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index);
    /* NULL when the registry has no function of that name (not an error) */
    GGML_API void *             ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name);

    /* what ggml_backend_reg_get_proc_address may hand out */
    typedef ggml_backend_buffer_type_t   (*ggml_backend_split_buffer_type_t)(int main_device, const float * tensor_split);
    typedef void                         (*ggml_backend_set_n_threads_t)(ggml_backend_t backend, int n_threads);
    typedef ggml_backend_buffer_type_t * (*ggml_backend_dev_get_extra_bufts_t)(ggml_backend_dev_t device);
    typedef void                         (*ggml_backend_set_abort_callback_t)(ggml_backend_t backend, ggml_abort_callback abort_callback, void * abort_callback_data);

    /*
     * Collectives between backends, used by the meta device for tensor parallelism. A registry
     * offers them as "ggml_backend_comm_init", "ggml_backend_comm_free" and
     * "ggml_backend_comm_allreduce_tensor".
     * comm_init: a communicator over n_backends backends of this registry, or NULL when it cannot
     *   make one (the meta device then reduces with copies and adds).
     * allreduce_tensor: tensors[i] lives on backends[i], all of one type and element count;
     *   enqueues "every tensor becomes the element-wise sum of all" on each backend's queue and
     *   returns false, having enqueued nothing, when it cannot (the caller falls back).
     */
    typedef void * (*ggml_backend_comm_init_t)(ggml_backend_t * backends, size_t n_backends);
    typedef void   (*ggml_backend_comm_free_t)(void * comm_ctx);
    typedef bool   (*ggml_backend_comm_allreduce_tensor_t)(void * comm_ctx, struct ggml_tensor ** tensors);

    struct ggml_backend_feature {
        const char * name;
        const char * value;
    };
    typedef struct ggml_backend_feature * (*ggml_backend_get_features_t)(ggml_backend_reg_t reg);

    /*
     * The registry of every backend and device. Devices are fixed at first use (simulated
     * devices must be configured before). Lookups by name ignore case.
     */

    GGML_API void ggml_backend_register(ggml_backend_reg_t reg);
    GGML_API void ggml_backend_device_register(ggml_backend_dev_t device);

    GGML_API size_t             ggml_backend_reg_count(void);
    GGML_API ggml_backend_reg_t ggml_backend_reg_get(size_t index);
    GGML_API ggml_backend_reg_t ggml_backend_reg_by_name(const char * name);

    GGML_API size_t             ggml_backend_dev_count(void);
    GGML_API ggml_backend_dev_t ggml_backend_dev_get(size_t index);
    GGML_API ggml_backend_dev_t ggml_backend_dev_by_name(const char * name);
    GGML_API ggml_backend_dev_t ggml_backend_dev_by_type(enum ggml_backend_dev_type type);

    GGML_API ggml_backend_t ggml_backend_init_by_name(const char * name, const char * params);
    GGML_API ggml_backend_t ggml_backend_init_by_type(enum ggml_backend_dev_type type, const char * params);
    /* the first GPU, else an integrated GPU, else the CPU */
    GGML_API ggml_backend_t ggml_backend_init_best(void);

    /*
     * Backend modules (shared libraries exporting ggml_backend_init and, optionally,
     * ggml_backend_score). A missing file, a library that is not a backend, or one built
     * against another backend API version gives NULL and a message.
     */
    GGML_API ggml_backend_reg_t ggml_backend_load(const char * path);
    GGML_API void               ggml_backend_unload(ggml_backend_reg_t reg);
    /* every module found in the usual places and in $GGML_BACKEND_PATH */
    GGML_API void               ggml_backend_load_all(void);
    GGML_API void               ggml_backend_load_all_from_path(const char * dir_path);

    /*
     * Backend scheduler: splits a graph across several backends, copies the tensors a split
     * needs from other devices, and runs every split asynchronously on its backend's queue
     * (docs/scheduler.md). Example:
     *
     *   sched = ggml_backend_sched_new({gpu, cpu}, NULL, 2, GGML_DEFAULT_GRAPH_SIZE, false, true);
     *   ggml_backend_sched_reserve(sched, measure_graph);      // optional: size the buffers once
     *   loop:
     *     graph = build_graph(...);
     *     ggml_backend_sched_reset(sched);
     *     ggml_backend_sched_alloc_graph(sched, graph);          // false: out of memory
     *     ggml_backend_tensor_set(input, ...);                   // no synchronize needed before
     *     ggml_backend_sched_graph_compute_async(sched, graph);
     *
     * Unlike upstream, the graph given to the scheduler is left as it was between calls (the
     * sources of nodes are rewritten only while a call runs), so the same graph may be reserved
     * and then allocated; and bad input is an error, never an abort.
     */

#define GGML_SCHED_MAX_BACKENDS 16
#ifndef GGML_SCHED_MAX_COPIES
#    define GGML_SCHED_MAX_COPIES 4
#endif

    typedef struct ggml_backend_sched * ggml_backend_sched_t;

    /*
     * Evaluation callback. With ask == true: does the user want to observe t (then the
     * scheduler computes up to t and synchronizes)? With ask == false: t has been computed;
     * returning false stops the whole compute (GGML_STATUS_ABORTED; later splits do not run).
     */
    typedef bool (*ggml_backend_sched_eval_callback)(struct ggml_tensor * t, bool ask, void * user_data);

    /*
     * backends in priority order (lower index first), the last one a CPU backend; at most
     * GGML_SCHED_MAX_BACKENDS. bufts: NULL or one buffer type per backend (NULL entries: the
     * backend's default), each usable by its backend. parallel: pipeline parallelism, with
     * ggmlx_sched_set_n_copies() copies of the inputs (default 2 with parallel, else 1).
     * op_offload: ops on weights in host memory may run on a higher-priority device.
     * NULL and a message on bad arguments.
     */
    GGML_API ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t * backends, ggml_backend_buffer_type_t * bufts, int n_backends,
                                                         size_t graph_size, bool parallel, bool op_offload);
    /* waits for queued work, then frees; the backends are the caller's */
    GGML_API void                 ggml_backend_sched_free(ggml_backend_sched_t sched);

    /* sizes[i]: the compute buffer backend i would need for measure_graph (nothing allocated) */
    GGML_API void                 ggml_backend_sched_reserve_size(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph, size_t * sizes);
    /* allocate compute buffers large enough for measure_graph; false when out of memory */
    GGML_API bool                 ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph * measure_graph);

    GGML_API int                  ggml_backend_sched_get_n_backends(ggml_backend_sched_t sched);
    GGML_API ggml_backend_t       ggml_backend_sched_get_backend(ggml_backend_sched_t sched, int i);

    /* of the last graph split */
    GGML_API int                  ggml_backend_sched_get_n_splits(ggml_backend_sched_t sched);
    GGML_API int                  ggml_backend_sched_get_n_copies(ggml_backend_sched_t sched);

    GGML_API ggml_backend_buffer_type_t ggml_backend_sched_get_buffer_type(ggml_backend_sched_t sched, ggml_backend_t backend);
    GGML_API size_t                     ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);

    /* pin node to backend (an error when backend cannot run it); call after reset */
    GGML_API void                 ggml_backend_sched_set_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node, ggml_backend_t backend);
    /* NULL when not assigned */
    GGML_API ggml_backend_t       ggml_backend_sched_get_tensor_backend(ggml_backend_sched_t sched, struct ggml_tensor * node);

    /* assign backends and build the splits (alloc_graph does it too) */
    GGML_API void                 ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);

    /* split and allocate graph in the compute buffers; false when out of memory */
    GGML_API bool                 ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
    /* compute_async, then synchronize; the first error of any split's queue */
    GGML_API enum ggml_status     ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
    /* allocate if needed and enqueue every split; returns at once */
    GGML_API enum ggml_status     ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched, struct ggml_cgraph * graph);
    GGML_API void                 ggml_backend_sched_synchronize(ggml_backend_sched_t sched);

    /*
     * Forget the backend assignments and allocation of the last graph. Needed before changing
     * tensor backends or allocating another graph; tensors of the last graph keep pointers
     * into compute buffers that the next graph reuses.
     */
    GGML_API void                 ggml_backend_sched_reset(ggml_backend_sched_t sched);

    GGML_API void                 ggml_backend_sched_set_eval_callback(ggml_backend_sched_t sched, ggml_backend_sched_eval_callback callback, void * user_data);

    /*
     * Tensor parallelism: the meta device (several devices acting as one) and how it splits a
     * tensor. docs/multi-gpu.md explains when this beats splitting layers with the scheduler.
     */

#define GGML_BACKEND_META_MAX_DEVICES 16

    enum ggml_backend_meta_split_axis {
        GGML_BACKEND_SPLIT_AXIS_0        = 0,
        GGML_BACKEND_SPLIT_AXIS_1        = 1,
        GGML_BACKEND_SPLIT_AXIS_2        = 2,
        GGML_BACKEND_SPLIT_AXIS_3        = 3,
        GGML_BACKEND_SPLIT_AXIS_MIRRORED = 10, /* every device holds all values */
        GGML_BACKEND_SPLIT_AXIS_PARTIAL  = 11, /* every device holds a partial sum */
        GGML_BACKEND_SPLIT_AXIS_NONE     = 98,
        GGML_BACKEND_SPLIT_AXIS_UNKNOWN  = 99,
    };

    struct ggml_backend_meta_split_state {
        enum ggml_backend_meta_split_axis axis;
        int64_t  ne[16 * GGML_BACKEND_META_MAX_DEVICES]; /* slice length along axis, per (segment, device) */
        uint32_t nr[16];                                 /* repetitions per segment */
        uint32_t n_segments;
    };

    typedef struct ggml_backend_meta_split_state (*ggml_backend_meta_get_split_state_t)(const struct ggml_tensor * tensor, void * userdata);

    /* "axis_0" .. "axis_3", "mirrored", "partial", "none", "unknown"; "invalid" for other values */
    GGML_API const char * ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis);

    /*
     * A device made of n_devs devices acting as one, for tensor parallelism: each tensor
     * allocated statically in its buffer type (weights) is split across the devices as
     * get_split_state says, and each device holds only its slice. Compute tensors get split
     * states derived from their sources; partial sums are reduced between devices through the
     * first device's registry's comm functions, or with copies and adds.
     *
     * Preconditions: 1 <= n_devs <= GGML_BACKEND_META_MAX_DEVICES, devs[i] non-NULL and
     * distinct, none of them a meta device; get_split_state non-NULL. It is called for each
     * statically allocated tensor (not for views) with get_split_state_ud; it must return a state
     * whose slices add up to the tensor's extent along the axis (see docs/multi-gpu.md). A state
     * that does not is an error for that allocation, never a crash.
     *
     * The same arguments return the same device (it lives until the process ends); safe to call
     * from several threads. Returns NULL, with a message, on bad arguments.
     */
    GGML_API ggml_backend_dev_t ggml_backend_meta_device(ggml_backend_dev_t * devs, size_t n_devs,
                                                         ggml_backend_meta_get_split_state_t get_split_state,
                                                         void * get_split_state_ud);

    /*
     * Utils
     */

    struct ggml_backend_graph_copy {
        ggml_backend_buffer_t buffer;
        struct ggml_context * ctx_allocated;
        struct ggml_context * ctx_unallocated;
        struct ggml_cgraph * graph;
    };

    /* a copy of graph with its tensors and data on backend; graph is NULL on failure */
    GGML_API struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, struct ggml_cgraph * graph);
    GGML_API void                           ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy);

    typedef bool (*ggml_backend_eval_callback)(int node_index, struct ggml_tensor * t1, struct ggml_tensor * t2, void * user_data);

    /*
     * Compute graph on both backends and call callback with each pair of results (or only the
     * test_nodes when num_test_nodes > 0). false when the copy or a computation failed.
     */
    GGML_API bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2, struct ggml_cgraph * graph,
                                                     ggml_backend_eval_callback callback, void * user_data,
                                                     struct ggml_tensor const * const * test_nodes, size_t num_test_nodes);

    /* place an unallocated tensor at addr inside buffer */
    GGML_API enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, void * addr);
    /* give a view the buffer and data of the tensor it views */
    GGML_API enum ggml_status ggml_backend_view_init(struct ggml_tensor * tensor);

    /* a CPU buffer over memory the caller owns (not freed with the buffer); ptr aligned to 32 */
    GGML_API ggml_backend_buffer_t      ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size);
    GGML_API ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void);

#ifdef __cplusplus
}
#endif
