/*
 * tallocr.c -- the linear allocator: tensors placed one after the other in one buffer.
 */
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"

#include <stdint.h>

struct ggml_tallocr ggml_tallocr_new(ggml_backend_buffer_t buffer) {
    struct ggml_tallocr talloc = { 0 };
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return talloc;
    }
    size_t align = ggml_backend_buffer_get_alignment(buffer);
    if (align == 0 || (align & (align - 1)) != 0) {
        ggmlx_error(__func__, "buffer '%s' has alignment %zu, not a power of two", ggml_backend_buffer_name(buffer), align);
        return talloc;
    }
    talloc.buffer    = buffer;
    talloc.base      = ggml_backend_buffer_get_base(buffer);
    talloc.alignment = align;
    /* the first tensor starts at the first aligned address, whatever the base */
    talloc.offset    = (align - (uintptr_t) talloc.base % align) % align;
    ggmlx_ok();
    return talloc;
}

enum ggml_status ggml_tallocr_alloc(struct ggml_tallocr * talloc, struct ggml_tensor * tensor) {
    if (talloc == NULL || talloc->buffer == NULL || tensor == NULL) {
        ggmlx_error(__func__, "%s is NULL", talloc == NULL ? "talloc" : tensor == NULL ? "tensor" : "talloc->buffer");
        return GGML_STATUS_FAILED;
    }
    if (talloc->alignment == 0 || (talloc->alignment & (talloc->alignment - 1)) != 0) {
        ggmlx_error(__func__, "talloc has alignment %zu, not a power of two (not made by ggml_tallocr_new?)",
                    talloc->alignment);
        return GGML_STATUS_FAILED;
    }
    if (tensor->view_src != NULL) {
        ggmlx_error(__func__, "tensor '%s' is a view: use ggml_backend_view_init", tensor->name);
        return GGML_STATUS_FAILED;
    }
    if (tensor->data != NULL) {
        ggmlx_error(__func__, "tensor '%s' is already allocated", tensor->name);
        return GGML_STATUS_FAILED;
    }

    const size_t buf_size = ggml_backend_buffer_get_size(talloc->buffer);
    const size_t size     = ggml_backend_buffer_get_alloc_size(talloc->buffer, tensor);
    const size_t avail    = talloc->offset <= buf_size ? buf_size - talloc->offset : 0;
    const size_t padded   = size <= SIZE_MAX - (talloc->alignment - 1) ? GGML_PAD(size, talloc->alignment) : SIZE_MAX;
    if (padded > avail) {
        ggmlx_error(__func__, "not enough space in buffer '%s' for tensor '%s' (needs %zu bytes, %zu of %zu left)",
                    ggml_backend_buffer_name(talloc->buffer), tensor->name, padded, avail, buf_size);
        return GGML_STATUS_ALLOC_FAILED;
    }

    if (talloc->base == NULL) {
        ggmlx_error(__func__, "buffer '%s' has no memory", ggml_backend_buffer_name(talloc->buffer));
        return GGML_STATUS_ALLOC_FAILED;
    }
    void * addr = (char *) talloc->base + talloc->offset;
    enum ggml_status status = ggml_backend_tensor_alloc(talloc->buffer, tensor, addr);
    if (status != GGML_STATUS_SUCCESS) {
        return status; /* the buffer layer said why; the allocator keeps its offset */
    }
    talloc->offset += padded;
    ggmlx_ok();
    return GGML_STATUS_SUCCESS;
}
