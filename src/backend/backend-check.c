/*
 * backend-check.c -- argument checks shared by the generic backend layer (see backend-check.h).
 */
#include "backend-check.h"

#include <stdarg.h>

bool ggmlx_tensor_is_allocated(const struct ggml_tensor * t) {
    return t != NULL && ggmlx_tensor_buffer(t) != NULL && t->data != NULL;
}

bool ggmlx_same_layout(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    if (a->type != b->type) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (a->ne[i] != b->ne[i] || a->nb[i] != b->nb[i]) {
            return false;
        }
    }
    return true;
}

bool ggmlx_has_gaps(const struct ggml_tensor * t) {
    size_t own = ggml_row_size(t->type, t->ne[0]);
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        own *= (size_t) t->ne[i];
    }
    return own != 0 && ggml_nbytes(t) > own;
}

enum ggmlx_io_check ggmlx_check_tensor_io(const char * func, const struct ggml_tensor * tensor, const void * host,
                                          bool need_host, size_t offset, size_t size, size_t n_copies,
                                          size_t stride_tensor, size_t stride_data, ggml_backend_buffer_t * buf_out) {
    if (tensor == NULL) {
        ggmlx_error(func, "tensor is NULL");
        return GGMLX_IO_ERROR;
    }
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(tensor);
    if (buf == NULL) {
        ggmlx_error(func, "tensor '%s' has no backend buffer (not allocated by a backend)", tensor->name);
        return GGMLX_IO_ERROR;
    }
    if (size == 0 || n_copies == 0) {
        ggmlx_ok();
        return GGMLX_IO_NOTHING;
    }
    if (tensor->data == NULL) {
        ggmlx_error(func, "tensor '%s' is not allocated (data is NULL)", tensor->name);
        return GGMLX_IO_ERROR;
    }
    if (need_host && host == NULL) {
        ggmlx_error(func, "data is NULL (%zu bytes requested)", size);
        return GGMLX_IO_ERROR;
    }

    /* the last row ends furthest in both the tensor and host memory (strides are unsigned) */
    const size_t nbytes = ggml_nbytes(tensor);
    size_t rows_t, end_t, rows_h, end_h;
    if (__builtin_mul_overflow(n_copies - 1, stride_tensor, &rows_t) ||
        __builtin_add_overflow(offset, rows_t, &end_t) ||
        __builtin_add_overflow(end_t, size, &end_t) ||
        end_t > nbytes) {
        ggmlx_error(func, "out of bounds: %zu row(s) of %zu bytes at offset %zu (stride %zu) do not fit in tensor '%s' "
                    "of %zu bytes %s; nothing done", n_copies, size, offset, stride_tensor, tensor->name, nbytes,
                    GGMLX_SHAPE(tensor));
        return GGMLX_IO_ERROR;
    }
    if (__builtin_mul_overflow(n_copies - 1, stride_data, &rows_h) ||
        __builtin_add_overflow(rows_h, size, &end_h) ||
        (host != NULL && end_h > UINTPTR_MAX - (uintptr_t) host)) {
        ggmlx_error(func, "host rows (%zu of %zu bytes, stride %zu) overflow the address space", n_copies, size, stride_data);
        return GGMLX_IO_ERROR;
    }
    *buf_out = buf;
    /* cleared before the buffer is called, so an error the buffer reports stays visible */
    ggmlx_ok();
    return GGMLX_IO_GO;
}

void ggmlx_error_if_silent(const char * func, const char * fmt, ...) {
    if (ggmlx_last_error() != NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    ggmlx_errorv(func, fmt, ap);
    va_end(ap);
}
