/*
 * backend-check.h -- argument checks shared by the generic backend layer (buffers, backends,
 * events), so the blocking and the queued forms of a call refuse exactly the same input.
 * Internal to libggml-base.
 */
#ifndef GGMLX_BACKEND_CHECK_H
#define GGMLX_BACKEND_CHECK_H

#include "ggml-backend-impl.h"

#include <stdbool.h>
#include <stddef.h>

enum ggmlx_io_check {
    GGMLX_IO_ERROR,   /* refused: error recorded, nothing may be done */
    GGMLX_IO_NOTHING, /* valid, but there are no bytes to move */
    GGMLX_IO_GO,      /* valid: every row lies inside the tensor */
};

/*
 * Checks a transfer of n_copies rows of size bytes, at offset + i*stride_tensor in tensor and
 * i*stride_data in host memory. host may be NULL only when need_host is false (memset).
 * On GGMLX_IO_GO, *buf_out is the buffer owning the tensor's memory. Valid input clears the
 * thread's last error.
 */
enum ggmlx_io_check ggmlx_check_tensor_io(const char * func, const struct ggml_tensor * tensor, const void * host,
                                          bool need_host, size_t offset, size_t size, size_t n_copies,
                                          size_t stride_tensor, size_t stride_data, ggml_backend_buffer_t * buf_out);

/* same type, shape and strides */
bool ggmlx_same_layout(const struct ggml_tensor * a, const struct ggml_tensor * b);

/*
 * true when t's bytes span more than its elements (a view of part of a tensor, with other data
 * between its rows): a copy of ggml_nbytes(t) bytes from its start would overwrite that data.
 */
bool ggmlx_has_gaps(const struct ggml_tensor * t);

/* tensor has a buffer and data (its view source's, for a view) */
bool ggmlx_tensor_is_allocated(const struct ggml_tensor * t);

/*
 * Vtable calls that return NULL/false on failure should say why, but a backend may forget:
 * clear the thread's error before the call, and after a failure add a message if none was left.
 */
void ggmlx_error_if_silent(const char * func, const char * fmt, ...) __attribute__((format(printf, 2, 3)));

/* names for messages: never NULL, never an error of their own */
static inline const char * ggmlx_buft_name_of(ggml_backend_buffer_type_t buft) {
    return buft != NULL && buft->iface.get_name != NULL ? buft->iface.get_name(buft) : "(unnamed buffer type)";
}

static inline const char * ggmlx_buffer_name_of(ggml_backend_buffer_t buffer) {
    return buffer != NULL ? ggmlx_buft_name_of(buffer->buft) : "(no buffer)";
}

#endif /* GGMLX_BACKEND_CHECK_H */
