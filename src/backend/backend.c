/*
 * backend.c -- the generic ggml_backend_* calls on a backend (one in-order queue): checks,
 * then the vtable, with the fallbacks docs/async.md allows when an entry is missing (a stronger
 * ordering, never a weaker one).
 */
#include "backend-check.h"
#include "ggmlx-backend.h"

#include <time.h>

#define CHECK_BACKEND(backend, ret)                                                           \
    do {                                                                                      \
        if ((backend) == NULL) {                                                              \
            ggmlx_error(__func__, "backend is NULL");                                         \
            return ret;                                                                       \
        }                                                                                     \
    } while (0)

#define NOTHING /* for CHECK_BACKEND in void functions */

ggml_guid_t ggml_backend_guid(ggml_backend_t backend) {
    CHECK_BACKEND(backend, NULL);
    return backend->guid;
}

const char * ggml_backend_name(ggml_backend_t backend) {
    /* upstream's answer for NULL, so it can be printed as is */
    if (backend == NULL) {
        return "NULL";
    }
    return backend->iface.get_name(backend);
}

static void (*_Atomic g_free_hook)(ggml_backend_t);

void ggmlx_backend_set_free_hook(void (*hook)(ggml_backend_t backend)) {
    g_free_hook = hook;
}

void ggml_backend_free(ggml_backend_t backend) {
    if (backend == NULL) {
        return;
    }
    void (*hook)(ggml_backend_t) = g_free_hook;
    if (hook != NULL) {
        hook(backend);
    }
    backend->iface.free(backend);
}

ggml_backend_buffer_type_t ggml_backend_get_default_buffer_type(ggml_backend_t backend) {
    CHECK_BACKEND(backend, NULL);
    if (backend->device == NULL) {
        ggmlx_error(__func__, "backend %s has no device", ggml_backend_name(backend));
        return NULL;
    }
    return ggml_backend_dev_buffer_type(backend->device);
}

ggml_backend_buffer_t ggml_backend_alloc_buffer(ggml_backend_t backend, size_t size) {
    CHECK_BACKEND(backend, NULL);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    return buft ? ggml_backend_buft_alloc_buffer(buft, size) : NULL;
}

size_t ggml_backend_get_alignment(ggml_backend_t backend) {
    CHECK_BACKEND(backend, 0);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    return buft ? ggml_backend_buft_get_alignment(buft) : 0;
}

size_t ggml_backend_get_max_size(ggml_backend_t backend) {
    CHECK_BACKEND(backend, 0);
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    return buft ? ggml_backend_buft_get_max_size(buft) : 0;
}

/* ---- queued copies between host memory and tensors ----------------------------------------- */

/*
 * A backend's own queued copy touches the buffer's memory on the backend's terms, so the buffer
 * must be one the backend can use (a CPU queue cannot write into a device's private memory).
 * The fallbacks go through the buffer itself and work with any buffer.
 */
static bool backend_can_use(const char * func, ggml_backend_t backend, ggml_backend_buffer_t buf) {
    ggml_backend_dev_t dev = backend->device;
    if (dev == NULL || dev->iface.supports_buft == NULL || buf->buft == NULL) {
        return true;
    }
    if (dev->iface.supports_buft(dev, buf->buft)) {
        return true;
    }
    ggmlx_error(func, "backend %s cannot use a tensor in a %s buffer; nothing queued", ggml_backend_name(backend),
                ggmlx_buffer_name_of(buf));
    return false;
}

void ggml_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                   size_t offset, size_t size) {
    CHECK_BACKEND(backend, NOTHING);
    ggml_backend_buffer_t buf;
    if (ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, 1, 0, 0, &buf) != GGMLX_IO_GO) {
        return;
    }
    if (backend->iface.set_tensor_async == NULL) {
        ggml_backend_synchronize(backend);
        ggml_backend_tensor_set(tensor, data, offset, size);
        return;
    }
    if (backend_can_use(__func__, backend, buf)) {
        backend->iface.set_tensor_async(backend, tensor, data, offset, size);
    }
}

void ggml_backend_tensor_get_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                   size_t offset, size_t size) {
    CHECK_BACKEND(backend, NOTHING);
    ggml_backend_buffer_t buf;
    if (ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, 1, 0, 0, &buf) != GGMLX_IO_GO) {
        return;
    }
    if (backend->iface.get_tensor_async == NULL) {
        ggml_backend_synchronize(backend);
        ggml_backend_tensor_get(tensor, data, offset, size);
        return;
    }
    if (backend_can_use(__func__, backend, buf)) {
        backend->iface.get_tensor_async(backend, tensor, data, offset, size);
    }
}

void ggml_backend_tensor_set_2d_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data,
                                      size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                      size_t stride_data) {
    CHECK_BACKEND(backend, NOTHING);
    ggml_backend_buffer_t buf;
    if (ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, n_copies, stride_tensor, stride_data,
                              &buf) != GGMLX_IO_GO) {
        return;
    }
    if (n_copies > 1 && backend->iface.set_tensor_2d_async != NULL) {
        if (backend_can_use(__func__, backend, buf)) {
            backend->iface.set_tensor_2d_async(backend, tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        }
        return;
    }
    if (backend->iface.set_tensor_async == NULL) {
        ggml_backend_synchronize(backend);
        ggml_backend_tensor_set_2d(tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        return;
    }
    /* row by row through the backend's 1-D queued copy (the rows were checked above) */
    if (!backend_can_use(__func__, backend, buf)) {
        return;
    }
    for (size_t i = 0; i < n_copies; i++) {
        backend->iface.set_tensor_async(backend, tensor, (const char *) data + i * stride_data,
                                        offset + i * stride_tensor, size);
    }
}

void ggml_backend_tensor_get_2d_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data,
                                      size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                      size_t stride_data) {
    CHECK_BACKEND(backend, NOTHING);
    ggml_backend_buffer_t buf;
    if (ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, n_copies, stride_tensor, stride_data,
                              &buf) != GGMLX_IO_GO) {
        return;
    }
    if (n_copies > 1 && backend->iface.get_tensor_2d_async != NULL) {
        if (backend_can_use(__func__, backend, buf)) {
            backend->iface.get_tensor_2d_async(backend, tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        }
        return;
    }
    if (backend->iface.get_tensor_async == NULL) {
        ggml_backend_synchronize(backend);
        ggml_backend_tensor_get_2d(tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        return;
    }
    if (!backend_can_use(__func__, backend, buf)) {
        return;
    }
    for (size_t i = 0; i < n_copies; i++) {
        backend->iface.get_tensor_async(backend, tensor, (char *) data + i * stride_data,
                                        offset + i * stride_tensor, size);
    }
}

void ggml_backend_synchronize(ggml_backend_t backend) {
    CHECK_BACKEND(backend, NOTHING);
    if (backend->iface.synchronize != NULL) {
        backend->iface.synchronize(backend);
    }
}

/* ---- graphs -------------------------------------------------------------------------------- */

ggml_backend_graph_plan_t ggml_backend_graph_plan_create(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    CHECK_BACKEND(backend, NULL);
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return NULL;
    }
    if (backend->iface.graph_plan_create == NULL) {
        ggmlx_error(__func__, "backend %s does not support graph plans", ggml_backend_name(backend));
        return NULL;
    }
    ggmlx_clear_last_error();
    ggml_backend_graph_plan_t plan = backend->iface.graph_plan_create(backend, cgraph);
    if (plan == NULL) {
        ggmlx_error_if_silent(__func__, "backend %s could not plan the graph", ggml_backend_name(backend));
    }
    return plan;
}

void ggml_backend_graph_plan_free(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    CHECK_BACKEND(backend, NOTHING);
    if (plan == NULL) {
        ggmlx_error(__func__, "plan is NULL");
        return;
    }
    if (backend->iface.graph_plan_free == NULL) {
        ggmlx_error(__func__, "backend %s does not support graph plans", ggml_backend_name(backend));
        return;
    }
    backend->iface.graph_plan_free(backend, plan);
}

enum ggml_status ggml_backend_graph_plan_compute(ggml_backend_t backend, ggml_backend_graph_plan_t plan) {
    CHECK_BACKEND(backend, GGML_STATUS_FAILED);
    if (plan == NULL) {
        ggmlx_error(__func__, "plan is NULL");
        return GGML_STATUS_FAILED;
    }
    if (backend->iface.graph_plan_compute == NULL) {
        ggmlx_error(__func__, "backend %s does not support graph plans", ggml_backend_name(backend));
        return GGML_STATUS_FAILED;
    }
    return backend->iface.graph_plan_compute(backend, plan);
}

/* the arguments of both compute calls, refused under the name of the one the caller used */
static bool compute_args_ok(ggml_backend_t backend, const struct ggml_cgraph * cgraph, const char * func) {
    if (backend == NULL || cgraph == NULL) {
        ggmlx_error(func, "%s is NULL", backend == NULL ? "backend" : "cgraph");
        return false;
    }
    if (cgraph->failed) {
        ggmlx_error(func, "the graph is failed (a NULL or failed tensor was added to it); nothing computed");
        return false;
    }
    return true;
}

enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    if (!compute_args_ok(backend, cgraph, __func__)) {
        return GGML_STATUS_FAILED;
    }
    ggmlx_ok();
    return backend->iface.graph_compute(backend, cgraph);
}

enum ggml_status ggml_backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    if (!compute_args_ok(backend, cgraph, __func__)) {
        return GGML_STATUS_FAILED;
    }
    const enum ggml_status status = ggml_backend_graph_compute_async(backend, cgraph);
    if (status == GGML_STATUS_ABORTED && backend->iface.clear_status != NULL) {
        /* an abort left by earlier queued work (refused at enqueue): returned once, as below */
        backend->iface.clear_status(backend);
        ggmlx_clear_last_error();
        return status;
    }
    if (status != GGML_STATUS_SUCCESS) {
        return status;
    }
    ggml_backend_synchronize(backend);
    if (backend->iface.get_status == NULL) {
        return GGML_STATUS_SUCCESS;
    }
    ggmlx_clear_last_error();
    const enum ggml_status queued = backend->iface.get_status(backend);
    if (queued == GGML_STATUS_ABORTED && backend->iface.clear_status != NULL) {
        /* an abort is the caller's own request, not a fault of the queue: report it once, as
         * upstream's CPU backend does, so the next computation runs normally */
        backend->iface.clear_status(backend);
        ggmlx_clear_last_error();
    } else if (queued != GGML_STATUS_SUCCESS) {
        ggmlx_error_if_silent(__func__, "work queued on %s failed (%s); the status stays until "
                              "ggmlx_backend_clear_status", ggml_backend_name(backend), ggml_status_to_string(queued));
    }
    return queued;
}

/* ---- capabilities -------------------------------------------------------------------------- */

bool ggml_backend_supports_op(ggml_backend_t backend, const struct ggml_tensor * op) {
    CHECK_BACKEND(backend, false);
    return ggml_backend_dev_supports_op(backend->device, op);
}

bool ggml_backend_supports_buft(ggml_backend_t backend, ggml_backend_buffer_type_t buft) {
    CHECK_BACKEND(backend, false);
    return ggml_backend_dev_supports_buft(backend->device, buft);
}

bool ggml_backend_offload_op(ggml_backend_t backend, const struct ggml_tensor * op) {
    CHECK_BACKEND(backend, false);
    return ggml_backend_dev_offload_op(backend->device, op);
}

/* ---- copies between backends --------------------------------------------------------------- */

void ggml_backend_tensor_copy_async(ggml_backend_t backend_src, ggml_backend_t backend_dst,
                                    const struct ggml_tensor * src, struct ggml_tensor * dst) {
    if (backend_src == NULL || backend_dst == NULL) {
        ggmlx_error(__func__, "%s is NULL", backend_src == NULL ? "backend_src" : "backend_dst");
        return;
    }
    if (src == NULL || dst == NULL) {
        ggmlx_error(__func__, "%s is NULL", src == NULL ? "src" : "dst");
        return;
    }
    if (!ggmlx_same_layout(src, dst)) {
        ggmlx_error(__func__, "'%s' %s and '%s' %s differ in type, shape or strides", src->name, GGMLX_SHAPE(src),
                    dst->name, GGMLX_SHAPE(dst));
        return;
    }
    if (!ggmlx_tensor_is_allocated(src) || !ggmlx_tensor_is_allocated(dst)) {
        const struct ggml_tensor * t = ggmlx_tensor_is_allocated(src) ? dst : src;
        ggmlx_error(__func__, "tensor '%s' is not allocated in a backend buffer", t->name);
        return;
    }
    if (src == dst) {
        ggmlx_ok();
        return;
    }
    ggmlx_ok();
    /* a backend's own copy moves the whole span; a gapped view goes run by run (tensor_copy) */
    if (!ggmlx_has_gaps(src) && backend_dst->iface.cpy_tensor_async != NULL &&
        backend_dst->iface.cpy_tensor_async(backend_src, backend_dst, src, dst)) {
        return;
    }
    /* no queued path: the strongest ordering there is, both queues drained around a blocking copy */
    ggml_backend_synchronize(backend_src);
    ggml_backend_synchronize(backend_dst);
    ggml_backend_tensor_copy(src, dst);
}

ggml_backend_dev_t ggml_backend_get_device(ggml_backend_t backend) {
    CHECK_BACKEND(backend, NULL);
    return backend->device;
}

/* ---- ggmlx extensions: queue status and test hooks ----------------------------------------- */

enum ggml_status ggmlx_backend_get_status(ggml_backend_t backend) {
    CHECK_BACKEND(backend, GGML_STATUS_FAILED);
    return backend->iface.get_status ? backend->iface.get_status(backend) : GGML_STATUS_SUCCESS;
}

void ggmlx_backend_clear_status(ggml_backend_t backend) {
    CHECK_BACKEND(backend, NOTHING);
    if (backend->iface.clear_status != NULL) {
        backend->iface.clear_status(backend);
    }
}

bool ggmlx_backend_queue_hold(ggml_backend_t backend) {
    CHECK_BACKEND(backend, false);
    return backend->iface.queue_hold ? backend->iface.queue_hold(backend, true) : false;
}

bool ggmlx_backend_queue_release(ggml_backend_t backend) {
    CHECK_BACKEND(backend, false);
    return backend->iface.queue_hold ? backend->iface.queue_hold(backend, false) : false;
}

size_t ggmlx_backend_queue_pending(ggml_backend_t backend) {
    CHECK_BACKEND(backend, 0);
    return backend->iface.queue_pending ? backend->iface.queue_pending(backend) : 0;
}

/* ---- time stamps on queues (scheduler traces) ---------------------------------------------- */

bool ggmlx_backend_queue_mark(ggml_backend_t backend, uint64_t * ns) {
    if (backend != NULL && ns != NULL && backend->iface.queue_mark != NULL) {
        backend->iface.queue_mark(backend, ns);
        return true;
    }
    if (ns != NULL) {
        *ns = ggmlx_time_ns();
    }
    return false;
}
