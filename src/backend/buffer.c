/*
 * buffer.c -- the generic ggml_backend_buffer_* calls on a buffer object. Moving tensor data
 * in and out of buffers is in tensor-data.c.
 */
#include "backend-check.h"

#include <stdlib.h>

ggml_backend_buffer_t ggml_backend_buffer_init(ggml_backend_buffer_type_t buft, struct ggml_backend_buffer_i iface,
                                               void * context, size_t size) {
    ggml_backend_buffer_t buffer = calloc(1, sizeof *buffer);
    if (buffer == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    buffer->iface   = iface;
    buffer->buft    = buft;
    buffer->context = context;
    buffer->size    = size;
    buffer->usage   = GGML_BACKEND_BUFFER_USAGE_ANY;
    return buffer;
}

void ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        return;
    }
    if (buffer->iface.free_buffer != NULL) {
        buffer->iface.free_buffer(buffer);
    }
    free(buffer);
}

const char * ggml_backend_buffer_name(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return NULL;
    }
    return ggml_backend_buft_name(buffer->buft);
}

void * ggml_backend_buffer_get_base(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return NULL;
    }
    if (buffer->size == 0) {
        /* no memory, and not an error: allocators handle empty buffers */
        ggmlx_ok();
        return NULL;
    }
    if (buffer->iface.get_base == NULL) {
        ggmlx_error(__func__, "buffer %s has no single base address (a multi-buffer?)", ggmlx_buffer_name_of(buffer));
        return NULL;
    }
    void * base = buffer->iface.get_base(buffer);
    if (base == NULL) {
        ggmlx_error(__func__, "buffer %s of %zu bytes reports a NULL base", ggmlx_buffer_name_of(buffer), buffer->size);
    }
    return base;
}

size_t ggml_backend_buffer_get_size(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return 0;
    }
    return buffer->size;
}

enum ggml_status ggml_backend_buffer_init_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor) {
    if (buffer == NULL || tensor == NULL) {
        ggmlx_error(__func__, "%s is NULL", buffer == NULL ? "buffer" : "tensor");
        return GGML_STATUS_FAILED;
    }
    if (buffer->iface.init_tensor == NULL) {
        return GGML_STATUS_SUCCESS;
    }
    ggmlx_clear_last_error();
    const enum ggml_status status = buffer->iface.init_tensor(buffer, tensor);
    if (status != GGML_STATUS_SUCCESS) {
        ggmlx_error_if_silent(__func__, "buffer %s could not initialise tensor '%s' (%s)",
                              ggmlx_buffer_name_of(buffer), tensor->name, ggml_status_to_string(status));
    }
    return status;
}

size_t ggml_backend_buffer_get_alignment(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return 0;
    }
    return ggml_backend_buft_get_alignment(buffer->buft);
}

size_t ggml_backend_buffer_get_max_size(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return 0;
    }
    return ggml_backend_buft_get_max_size(buffer->buft);
}

size_t ggml_backend_buffer_get_alloc_size(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return 0;
    }
    return ggml_backend_buft_get_alloc_size(buffer->buft, tensor);
}

void ggml_backend_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return;
    }
    if (buffer->size == 0) {
        return;
    }
    if (buffer->iface.clear == NULL) {
        ggmlx_error(__func__, "buffer %s cannot be cleared", ggmlx_buffer_name_of(buffer));
        return;
    }
    buffer->iface.clear(buffer, value);
}

bool ggml_backend_buffer_is_host(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return false;
    }
    return ggml_backend_buft_is_host(buffer->buft);
}

void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return;
    }
    if (usage != GGML_BACKEND_BUFFER_USAGE_ANY && usage != GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
        usage != GGML_BACKEND_BUFFER_USAGE_COMPUTE) {
        ggmlx_error(__func__, "unknown usage %d", (int) usage);
        return;
    }
    buffer->usage = usage;
    if (ggml_backend_buffer_is_multi_buffer(buffer)) {
        ggml_backend_multi_buffer_set_usage(buffer, usage);
    }
}

enum ggml_backend_buffer_usage ggml_backend_buffer_get_usage(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return GGML_BACKEND_BUFFER_USAGE_ANY;
    }
    return buffer->usage;
}

ggml_backend_buffer_type_t ggml_backend_buffer_get_type(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return NULL;
    }
    return buffer->buft;
}

void ggml_backend_buffer_reset(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return;
    }
    if (buffer->iface.reset != NULL) {
        buffer->iface.reset(buffer);
    }
}

/* ---- placing tensors in buffers ------------------------------------------------------------ */

enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, void * addr) {
    if (buffer == NULL || tensor == NULL || addr == NULL) {
        ggmlx_error(__func__, "%s is NULL", buffer == NULL ? "buffer" : tensor == NULL ? "tensor" : "addr");
        return GGML_STATUS_FAILED;
    }
    if (tensor->buffer != NULL || tensor->data != NULL) {
        ggmlx_error(__func__, "tensor '%s' is already allocated", tensor->name);
        return GGML_STATUS_FAILED;
    }
    if (tensor->view_src != NULL) {
        ggmlx_error(__func__, "tensor '%s' is a view: use ggml_backend_view_init", tensor->name);
        return GGML_STATUS_FAILED;
    }
    if (buffer->size == 0 || buffer->iface.get_base == NULL) {
        ggmlx_error(__func__, "buffer %s has no memory to place tensor '%s' in", ggmlx_buffer_name_of(buffer), tensor->name);
        return GGML_STATUS_FAILED;
    }
    const size_t size = buffer->buft ? ggml_backend_buft_get_alloc_size(buffer->buft, tensor) : ggml_nbytes(tensor);
    const uintptr_t base = (uintptr_t) buffer->iface.get_base(buffer);
    const uintptr_t at   = (uintptr_t) addr;
    /* compared as integers: addresses outside the buffer are not valid pointer arithmetic */
    if (at < base || at - base > buffer->size || size > buffer->size - (at - base)) {
        ggmlx_error(__func__, "tensor '%s' (%zu bytes) at %p does not fit in buffer %s [%p, +%zu)", tensor->name, size,
                    addr, ggmlx_buffer_name_of(buffer), (void *) base, buffer->size);
        return GGML_STATUS_FAILED;
    }
    tensor->buffer = buffer;
    tensor->data   = addr;
    const enum ggml_status status = ggml_backend_buffer_init_tensor(buffer, tensor);
    if (status != GGML_STATUS_SUCCESS) {
        /* leave the tensor as it was, so the caller may place it elsewhere */
        tensor->buffer = NULL;
        tensor->data   = NULL;
        return status;
    }
    ggmlx_ok();
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggmlx_tensor_place(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, void * addr) {
    tensor->buffer = buffer;
    tensor->data   = addr;
    const enum ggml_status status = buffer->iface.init_tensor ? buffer->iface.init_tensor(buffer, tensor) : GGML_STATUS_SUCCESS;
    if (status != GGML_STATUS_SUCCESS) {
        tensor->buffer = NULL;
        tensor->data   = NULL;
    }
    return status;
}

enum ggml_status ggml_backend_view_init(struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        ggmlx_error(__func__, "tensor is NULL");
        return GGML_STATUS_FAILED;
    }
    const struct ggml_tensor * src = tensor->view_src;
    if (src == NULL) {
        ggmlx_error(__func__, "tensor '%s' is not a view", tensor->name);
        return GGML_STATUS_FAILED;
    }
    if (tensor->buffer != NULL) {
        ggmlx_error(__func__, "view '%s' is already initialised", tensor->name);
        return GGML_STATUS_FAILED;
    }
    if (src->buffer == NULL || src->data == NULL) {
        ggmlx_error(__func__, "the source '%s' of view '%s' is not allocated", src->name, tensor->name);
        return GGML_STATUS_FAILED;
    }
    const size_t src_size  = ggml_nbytes(src);
    const size_t view_size = ggml_nbytes(tensor);
    if (tensor->view_offs > src_size || view_size > src_size - tensor->view_offs) {
        ggmlx_error(__func__, "view '%s' (%zu bytes at offset %zu) lies outside its source '%s' of %zu bytes",
                    tensor->name, view_size, tensor->view_offs, src->name, src_size);
        return GGML_STATUS_FAILED;
    }
    tensor->buffer = src->buffer;
    tensor->data   = (char *) src->data + tensor->view_offs;
    const enum ggml_status status = ggml_backend_buffer_init_tensor(tensor->buffer, tensor);
    if (status != GGML_STATUS_SUCCESS) {
        tensor->buffer = NULL;
        tensor->data   = NULL;
        return status;
    }
    ggmlx_ok();
    return GGML_STATUS_SUCCESS;
}
