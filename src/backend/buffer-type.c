/*
 * buffer-type.c -- the generic ggml_backend_buft_* calls: checks, defaults for the optional
 * vtable entries, and zero-size buffers that never reach the backend.
 */
#include "backend-check.h"

#include <stdint.h>

/* A zero-size buffer owns no memory: the backend is never asked for it, so nothing to free. */
static const struct ggml_backend_buffer_i zero_size_buffer_i = { 0 };

const char * ggml_backend_buft_name(ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return NULL;
    }
    return buft->iface.get_name(buft);
}

ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return NULL;
    }
    if (size == 0) {
        return ggml_backend_buffer_init(buft, zero_size_buffer_i, NULL, 0);
    }
    ggmlx_clear_last_error();
    ggml_backend_buffer_t buffer = buft->iface.alloc_buffer(buft, size);
    if (buffer == NULL) {
        ggmlx_error_if_silent(__func__, "%s: could not allocate a buffer of %zu bytes", ggmlx_buft_name_of(buft), size);
        return NULL;
    }
    return buffer;
}

size_t ggml_backend_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return 0;
    }
    return buft->iface.get_alignment(buft);
}

size_t ggml_backend_buft_get_max_size(ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return 0;
    }
    return buft->iface.get_max_size ? buft->iface.get_max_size(buft) : SIZE_MAX;
}

size_t ggml_backend_buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor * tensor) {
    if (buft == NULL || tensor == NULL) {
        ggmlx_error(__func__, "%s is NULL", buft == NULL ? "buft" : "tensor");
        return 0;
    }
    const size_t nbytes = ggml_nbytes(tensor);
    if (buft->iface.get_alloc_size == NULL) {
        return nbytes;
    }
    const size_t size = buft->iface.get_alloc_size(buft, tensor);
    if (size < nbytes) {
        /* a broken backend: never let an allocator place a tensor in less than its bytes */
        ggmlx_error(__func__, "%s reports %zu bytes for tensor '%s' of %zu bytes; using %zu",
                    ggmlx_buft_name_of(buft), size, tensor->name, nbytes, nbytes);
        return nbytes;
    }
    return size;
}

bool ggml_backend_buft_is_host(ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return false;
    }
    return buft->iface.is_host ? buft->iface.is_host(buft) : false;
}

ggml_backend_dev_t ggml_backend_buft_get_device(ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return NULL;
    }
    /* NULL is a valid answer here (the CPU buffer type, as upstream) */
    ggmlx_ok();
    return buft->device;
}
