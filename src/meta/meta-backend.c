/*
 * meta-backend.c -- the backend of a meta device: one simple backend per device, collectives
 * from the first device's registry when it has them, and the generic all-reduce (copies queued
 * between the devices and an ADD on each) when it does not.
 */
#include "meta-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the generic all-reduce -------------------------------------------------------------------- */

/* x[d] += tmp[d] on backend d (a one-node graph, queued) */
static enum ggml_status add_into(ggml_backend_t backend, struct ggml_tensor * x, struct ggml_tensor * tmp) {
    struct ggml_init_params ip = { 4 * ggml_tensor_overhead() + ggml_graph_overhead_custom(4, false), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        return GGML_STATUS_FAILED;
    }
    enum ggml_status st = GGML_STATUS_FAILED;
    /* plain descriptors of the two, so the graph holds the add alone, not what computed x */
    struct ggml_tensor * xv = ggml_new_tensor(ctx, x->type, GGML_MAX_DIMS, x->ne);
    struct ggml_tensor * tv = ggml_new_tensor(ctx, tmp->type, GGML_MAX_DIMS, tmp->ne);
    if (xv == NULL || tv == NULL) {
        ggml_free(ctx);
        return st;
    }
    memcpy(xv->nb, x->nb, sizeof xv->nb);
    memcpy(tv->nb, tmp->nb, sizeof tv->nb);
    xv->data   = x->data;
    xv->buffer = x->buffer;
    tv->data   = tmp->data;
    tv->buffer = tmp->buffer;
    struct ggml_tensor * sum = ggml_add_inplace(ctx, xv, tv);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 4, false);
    if (sum != NULL && g != NULL) {
        sum->data   = x->data;
        sum->buffer = x->buffer;
        ggml_build_forward_expand(g, sum);
        st = ggml_backend_graph_compute_async(backend, g);
    }
    ggml_free(ctx); /* the queue took what it needs (docs/async.md rule 2) */
    return st;
}

/*
 * Pairwise exchanges. A copy into tmp[d] is queued behind the earlier work of both sides (rule
 * 7), but the source may run on: before d adds into x[d], it waits until its partner has copied
 * x[d] away, recorded as an event after that copy on the partner's queue.
 */
enum ggml_status ggmlx_meta_allreduce_enqueue(ggml_backend_t * backends, struct ggml_tensor ** x, struct ggml_tensor ** tmp,
                                              size_t n) {
    if (n <= 1) {
        return GGML_STATUS_SUCCESS;
    }
    ggml_backend_event_t ev[META_MAX] = { 0 };
    enum ggml_status st = GGML_STATUS_FAILED;
    for (size_t d = 0; d < n; d++) {
        ev[d] = ggml_backend_event_new(ggml_backend_get_device(backends[d]));
    }
    size_t p2 = 1;
    while (p2 * 2 <= n) {
        p2 *= 2;
    }
    /* fold the devices beyond the largest power of two into the first ones */
    for (size_t d = p2; d < n; d++) {
        ggml_backend_tensor_copy_async(backends[d], backends[d - p2], x[d], tmp[d - p2]);
        if ((st = add_into(backends[d - p2], x[d - p2], tmp[d - p2])) != GGML_STATUS_SUCCESS) {
            goto out;
        }
    }
    for (size_t step = 1; step < p2; step *= 2) {
        for (size_t d = 0; d < p2; d++) {
            ggml_backend_tensor_copy_async(backends[d ^ step], backends[d], x[d ^ step], tmp[d]);
            if (ev[d] != NULL) {
                ggml_backend_event_record(ev[d], backends[d]);
            }
        }
        for (size_t d = 0; d < p2; d++) {
            if (ev[d ^ step] != NULL) {
                ggml_backend_event_wait(backends[d], ev[d ^ step]);
            } else {
                ggml_backend_synchronize(backends[d ^ step]); /* no events: the strongest order there is */
            }
            if ((st = add_into(backends[d], x[d], tmp[d])) != GGML_STATUS_SUCCESS) {
                goto out;
            }
        }
    }
    /* the folded devices copy the result back; their partners must not overwrite it before */
    for (size_t d = p2; d < n; d++) {
        ggml_backend_tensor_copy_async(backends[d - p2], backends[d], x[d - p2], x[d]);
        if (ev[d] != NULL) {
            ggml_backend_event_record(ev[d], backends[d]);
            ggml_backend_event_wait(backends[d - p2], ev[d]);
        } else {
            ggml_backend_synchronize(backends[d]);
        }
    }
    st = GGML_STATUS_SUCCESS;
out:
    for (size_t d = 0; d < n; d++) {
        ggml_backend_event_free(ev[d]); /* the queued records and waits keep what they need */
    }
    return st;
}

enum ggml_status ggmlx_meta_allreduce_generic(ggml_backend_t * backends, struct ggml_tensor ** tensors, size_t n) {
    if (backends == NULL || tensors == NULL || n == 0 || n > META_MAX) {
        ggmlx_error(__func__, backends == NULL || tensors == NULL ? "backends or tensors is NULL"
                                                                   : "n must be 1 to 16");
        return GGML_STATUS_FAILED;
    }
    for (size_t d = 0; d < n; d++) {
        const struct ggml_tensor * t = tensors[d];
        if (backends[d] == NULL || t == NULL) {
            ggmlx_error(__func__, "backends[%zu] or tensors[%zu] is NULL", d, d);
            return GGML_STATUS_FAILED;
        }
        if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_BF16) {
            ggmlx_error(__func__, "tensors[%zu] '%s' is %s; F32, F16 or BF16 can be summed", d, t->name,
                        ggml_type_name(t->type));
            return GGML_STATUS_FAILED;
        }
        if (t->type != tensors[0]->type || !ggml_are_same_shape(t, tensors[0]) || !ggml_is_contiguous(t)) {
            ggmlx_error(__func__, "tensors[%zu] '%s' differs in type or shape from tensors[0], or is not contiguous", d,
                        t->name);
            return GGML_STATUS_FAILED;
        }
        ggml_backend_buffer_t buf = t->view_src ? t->view_src->buffer : t->buffer;
        if (t->data == NULL || buf == NULL ||
            !ggml_backend_supports_buft(backends[d], ggml_backend_buffer_get_type(buf))) {
            ggmlx_error(__func__, "tensors[%zu] '%s' is not allocated where backends[%zu] (%s) can compute", d, t->name,
                        d, ggml_backend_name(backends[d]));
            return GGML_STATUS_FAILED;
        }
        for (size_t k = 0; k < d; k++) {
            if (backends[k] == backends[d] || tensors[k] == tensors[d]) {
                ggmlx_error(__func__, "backends[%zu] or tensors[%zu] is given twice", d, d);
                return GGML_STATUS_FAILED;
            }
        }
    }
    ggml_backend_buffer_t bufs[META_MAX] = { 0 };
    struct ggml_tensor    tmpt[META_MAX];
    struct ggml_tensor *  tmp[META_MAX];
    enum ggml_status st = GGML_STATUS_SUCCESS;
    for (size_t d = 0; d < n && n > 1; d++) {
        bufs[d] = ggml_backend_alloc_buffer(backends[d], ggml_nbytes(tensors[d]));
        if (bufs[d] == NULL) {
            ggmlx_error(__func__, "backend %s has no memory for a %zu-byte temporary", ggml_backend_name(backends[d]),
                        ggml_nbytes(tensors[d]));
            st = GGML_STATUS_ALLOC_FAILED;
            goto out;
        }
        tmpt[d]        = *tensors[d];
        tmpt[d].view_src = NULL;
        tmpt[d].view_offs = 0;
        tmpt[d].buffer = bufs[d];
        tmpt[d].data   = ggml_backend_buffer_get_base(bufs[d]);
        tmpt[d].op     = GGML_OP_NONE;
        memset(tmpt[d].src, 0, sizeof tmpt[d].src);
        tmp[d] = &tmpt[d];
    }
    if (n > 1) {
        st = ggmlx_meta_allreduce_enqueue(backends, tensors, tmp, n);
    }
out:
    for (size_t d = 0; d < n; d++) {
        ggml_backend_synchronize(backends[d]);
    }
    for (size_t d = 0; d < n; d++) {
        ggml_backend_buffer_free(bufs[d]);
    }
    if (st == GGML_STATUS_SUCCESS) {
        for (size_t d = 0; d < n; d++) {
            const enum ggml_status qs = ggmlx_backend_get_status(backends[d]);
            if (qs != GGML_STATUS_SUCCESS) {
                ggmlx_error(__func__, "backend %s failed while reducing", ggml_backend_name(backends[d]));
                return qs;
            }
        }
        ggmlx_ok();
    }
    return st;
}

/* ---- backend interface --------------------------------------------------------------------------- */

static const char * meta_get_name(ggml_backend_t backend) {
    return ((struct meta_backend *) backend->context)->mdev->name;
}

static void meta_free(ggml_backend_t backend) {
    struct meta_backend * mb = backend->context;
    for (size_t d = 0; d < mb->n; d++) {
        if (mb->simple[d] != NULL) {
            ggml_backend_synchronize(mb->simple[d]);
        }
    }
    if (mb->comm != NULL && mb->comm_free != NULL) {
        mb->comm_free(mb->comm);
    }
    for (size_t d = 0; d < mb->n; d++) {
        ggml_backend_buffer_free(mb->tmp[d]);
        ggml_backend_free(mb->simple[d]);
    }
    free(mb);
    free(backend);
}

static void meta_synchronize(ggml_backend_t backend) {
    struct meta_backend * mb = backend->context;
    for (size_t d = 0; d < mb->n; d++) {
        ggml_backend_synchronize(mb->simple[d]);
    }
}

static enum ggml_status meta_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    struct meta_backend * mb = backend->context;
    if (mb->status != GGML_STATUS_SUCCESS) {
        ggmlx_error("ggml_backend_graph_compute", "%s failed earlier (status %d); clear its status first",
                    mb->mdev->name, (int) mb->status);
        return mb->status;
    }
    for (size_t d = 0; d < mb->n; d++) {
        const enum ggml_status qs = ggmlx_backend_get_status(mb->simple[d]);
        if (qs != GGML_STATUS_SUCCESS) {
            return qs;
        }
    }
    return ggmlx_meta_graph_compute(mb, cgraph);
}

static void meta_event_record(ggml_backend_t backend, ggml_backend_event_t event) {
    struct meta_backend * mb = backend->context;
    const struct ggmlx_composite_event * ce = ggmlx_event_composite(event);
    for (size_t d = 0; d < mb->n && ce != NULL; d++) {
        ggml_backend_event_record(ce->parts[d], mb->simple[d]);
    }
}

static void meta_event_wait(ggml_backend_t backend, ggml_backend_event_t event) {
    struct meta_backend * mb = backend->context;
    const struct ggmlx_composite_event * ce = ggmlx_event_composite(event);
    for (size_t d = 0; d < mb->n; d++) {
        if (ce == NULL) {
            ggml_backend_event_wait(mb->simple[d], event);
            continue;
        }
        for (size_t k = 0; k < ce->n; k++) {
            ggml_backend_event_wait(mb->simple[d], ce->parts[k]);
        }
    }
}

static enum ggml_status meta_get_status(ggml_backend_t backend) {
    struct meta_backend * mb = backend->context;
    if (mb->status != GGML_STATUS_SUCCESS) {
        return mb->status;
    }
    for (size_t d = 0; d < mb->n; d++) {
        const enum ggml_status qs = ggmlx_backend_get_status(mb->simple[d]);
        if (qs != GGML_STATUS_SUCCESS) {
            return qs;
        }
    }
    return GGML_STATUS_SUCCESS;
}

static void meta_clear_status(ggml_backend_t backend) {
    struct meta_backend * mb = backend->context;
    mb->status = GGML_STATUS_SUCCESS;
    for (size_t d = 0; d < mb->n; d++) {
        ggmlx_backend_clear_status(mb->simple[d]);
    }
}

static void meta_set_tensor_async(ggml_backend_t backend, struct ggml_tensor * tensor, const void * data, size_t offset,
                                  size_t size) {
    struct meta_backend * mb = backend->context;
    if (!ggmlx_meta_buffer_io_async(mb->simple, tensor, NULL, data, offset, size)) {
        ggmlx_error("ggml_backend_tensor_set_async", "'%s' is not in a meta buffer", tensor->name);
    }
}

static void meta_get_tensor_async(ggml_backend_t backend, const struct ggml_tensor * tensor, void * data, size_t offset,
                                  size_t size) {
    struct meta_backend * mb = backend->context;
    if (!ggmlx_meta_buffer_io_async(mb->simple, tensor, data, NULL, offset, size)) {
        ggmlx_error("ggml_backend_tensor_get_async", "'%s' is not in a meta buffer", tensor->name);
    }
}

static const struct ggml_backend_i meta_backend_iface = {
    .get_name            = meta_get_name,
    .free                = meta_free,
    .set_tensor_async    = meta_set_tensor_async,
    .get_tensor_async    = meta_get_tensor_async,
    .set_tensor_2d_async = NULL,
    .get_tensor_2d_async = NULL,
    .cpy_tensor_async    = NULL,
    .synchronize         = meta_synchronize,
    .graph_plan_create   = NULL,
    .graph_plan_free     = NULL,
    .graph_plan_update   = NULL,
    .graph_plan_compute  = NULL,
    .graph_compute       = meta_compute,
    .event_record        = meta_event_record,
    .event_wait          = meta_event_wait,
    .graph_optimize      = NULL,
    .get_status          = meta_get_status,
    .clear_status        = meta_clear_status,
    .queue_hold          = NULL,
    .queue_pending       = NULL,
    .queue_mark          = NULL,
};

struct meta_backend * ggmlx_meta_backend_of(ggml_backend_t backend) {
    return backend != NULL && backend->iface.graph_compute == meta_compute ? backend->context : NULL;
}

bool ggml_backend_is_meta(ggml_backend_t backend) {
    return ggmlx_meta_backend_of(backend) != NULL;
}

size_t ggml_backend_meta_n_backends(ggml_backend_t meta_backend) {
    const struct meta_backend * mb = ggmlx_meta_backend_of(meta_backend);
    return mb != NULL ? mb->n : 0;
}

ggml_backend_t ggml_backend_meta_simple_backend(ggml_backend_t meta_backend, size_t index) {
    const struct meta_backend * mb = ggmlx_meta_backend_of(meta_backend);
    return mb != NULL && index < mb->n ? mb->simple[index] : NULL;
}

ggml_backend_t ggmlx_meta_backend_new(struct meta_device * mdev, const char * params) {
    static const char * func = "ggml_backend_dev_init";
    struct meta_backend * mb = calloc(1, sizeof *mb);
    ggml_backend_t backend = calloc(1, sizeof *backend);
    if (mb == NULL || backend == NULL) {
        ggmlx_error(func, "out of host memory");
        goto err;
    }
    mb->mdev   = mdev;
    mb->n      = mdev->n;
    mb->status = GGML_STATUS_SUCCESS;
    for (size_t d = 0; d < mb->n; d++) {
        mb->simple[d] = ggml_backend_dev_init(mdev->devs[d], params);
        if (mb->simple[d] == NULL) {
            ggmlx_error(func, "%s: device %s could not make a backend", mdev->name, ggml_backend_dev_name(mdev->devs[d]));
            goto err;
        }
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(mdev->devs[0]);
    if (mb->n > 1 && reg != NULL) {
        ggml_backend_comm_init_t init = (ggml_backend_comm_init_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_comm_init");
        mb->comm_free = (ggml_backend_comm_free_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_comm_free");
        mb->comm_allreduce = (ggml_backend_comm_allreduce_tensor_t) ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_comm_allreduce_tensor");
        mb->comm = init != NULL && mb->comm_allreduce != NULL ? init(mb->simple, mb->n) : NULL;
        if (mb->comm == NULL) {
            mb->comm_allreduce = NULL; /* the generic reduction it is */
        }
    }
    backend->guid    = NULL;
    backend->iface   = meta_backend_iface;
    backend->device  = &mdev->dev;
    backend->context = mb;
    ggmlx_ok();
    return backend;
err:
    if (mb != NULL) {
        for (size_t d = 0; d < mb->n; d++) {
            ggml_backend_free(mb->simple[d]);
        }
    }
    free(mb);
    free(backend);
    return NULL;
}

bool ggmlx_meta_get_stats(ggml_backend_t backend, struct ggmlx_meta_stats * out) {
    const struct meta_backend * mb = ggmlx_meta_backend_of(backend);
    if (mb == NULL || out == NULL) {
        ggmlx_error(__func__, mb == NULL ? "backend is not a meta backend" : "out is NULL");
        return false;
    }
    *out = mb->stats;
    ggmlx_ok();
    return true;
}

void ggmlx_meta_reset_stats(ggml_backend_t backend) {
    struct meta_backend * mb = ggmlx_meta_backend_of(backend);
    if (mb == NULL) {
        ggmlx_error(__func__, "backend is not a meta backend");
        return;
    }
    memset(&mb->stats, 0, sizeof mb->stats);
    ggmlx_ok();
}
