/*
 * tensor-data.c -- moving tensor data between host memory and buffers, synchronously for the
 * host (docs/async.md rule 5: these never wait for queued work). Every call is checked whole
 * before the buffer is touched, so a refused call writes nothing.
 */
#include "backend-check.h"

#include <stdlib.h>

void ggml_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    ggml_backend_buffer_t buf;
    const enum ggmlx_io_check c = ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, 1, 0, 0, &buf);
    if (c != GGMLX_IO_GO) {
        return;
    }
    if (buf->iface.set_tensor == NULL) {
        ggmlx_error(__func__, "buffer %s cannot be written", ggmlx_buffer_name_of(buf));
        return;
    }
    buf->iface.set_tensor(buf, tensor, data, offset, size);
}

void ggml_backend_tensor_get(const struct ggml_tensor * tensor, void * data, size_t offset, size_t size) {
    ggml_backend_buffer_t buf;
    const enum ggmlx_io_check c = ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, 1, 0, 0, &buf);
    if (c != GGMLX_IO_GO) {
        return;
    }
    if (buf->iface.get_tensor == NULL) {
        ggmlx_error(__func__, "buffer %s cannot be read", ggmlx_buffer_name_of(buf));
        return;
    }
    buf->iface.get_tensor(buf, tensor, data, offset, size);
}

void ggml_backend_tensor_set_2d(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size,
                                size_t n_copies, size_t stride_tensor, size_t stride_data) {
    ggml_backend_buffer_t buf;
    const enum ggmlx_io_check c = ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, n_copies,
                                                        stride_tensor, stride_data, &buf);
    if (c != GGMLX_IO_GO) {
        return;
    }
    if (buf->iface.set_tensor == NULL) {
        ggmlx_error(__func__, "buffer %s cannot be written", ggmlx_buffer_name_of(buf));
        return;
    }
    if (n_copies > 1 && buf->iface.set_tensor_2d != NULL) {
        buf->iface.set_tensor_2d(buf, tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        return;
    }
    for (size_t i = 0; i < n_copies; i++) {
        buf->iface.set_tensor(buf, tensor, (const char *) data + i * stride_data, offset + i * stride_tensor, size);
    }
}

void ggml_backend_tensor_get_2d(const struct ggml_tensor * tensor, void * data, size_t offset, size_t size,
                                size_t n_copies, size_t stride_tensor, size_t stride_data) {
    ggml_backend_buffer_t buf;
    const enum ggmlx_io_check c = ggmlx_check_tensor_io(__func__, tensor, data, true, offset, size, n_copies,
                                                        stride_tensor, stride_data, &buf);
    if (c != GGMLX_IO_GO) {
        return;
    }
    if (buf->iface.get_tensor == NULL) {
        ggmlx_error(__func__, "buffer %s cannot be read", ggmlx_buffer_name_of(buf));
        return;
    }
    if (n_copies > 1 && buf->iface.get_tensor_2d != NULL) {
        buf->iface.get_tensor_2d(buf, tensor, data, offset, size, n_copies, stride_tensor, stride_data);
        return;
    }
    for (size_t i = 0; i < n_copies; i++) {
        buf->iface.get_tensor(buf, tensor, (char *) data + i * stride_data, offset + i * stride_tensor, size);
    }
}

void ggml_backend_tensor_memset(struct ggml_tensor * tensor, uint8_t value, size_t offset, size_t size) {
    ggml_backend_buffer_t buf;
    const enum ggmlx_io_check c = ggmlx_check_tensor_io(__func__, tensor, NULL, false, offset, size, 1, 0, 0, &buf);
    if (c != GGMLX_IO_GO) {
        return;
    }
    if (buf->iface.memset_tensor == NULL) {
        ggmlx_error(__func__, "buffer %s does not support memset", ggmlx_buffer_name_of(buf));
        return;
    }
    buf->iface.memset_tensor(buf, tensor, value, offset, size);
}

/* ---- copies between tensors ---------------------------------------------------------------- */

bool ggml_backend_buffer_copy_tensor(const struct ggml_tensor * src, struct ggml_tensor * dst) {
    if (src == NULL || dst == NULL) {
        ggmlx_error(__func__, "%s is NULL", src == NULL ? "src" : "dst");
        return false;
    }
    ggml_backend_buffer_t dst_buf = ggmlx_tensor_buffer(dst);
    if (dst_buf == NULL || dst_buf->iface.cpy_tensor == NULL) {
        return false;
    }
    return dst_buf->iface.cpy_tensor(dst_buf, src, dst);
}

/* a gapped view's packed runs of bytes: run bytes each, at the offsets run_at() gives */
struct runs {
    size_t  run;
    int64_t n[GGML_MAX_DIMS];  /* runs along each dim (1 for the dims folded into a run) */
    size_t  nb[GGML_MAX_DIMS];
    int64_t count;
};

static struct runs runs_of(const struct ggml_tensor * t) {
    struct runs r = { 0 };
    int first = 0;
    if (t->nb[0] == ggml_type_size(t->type)) {
        r.run = ggml_row_size(t->type, t->ne[0]);
        first = 1;
        while (first < GGML_MAX_DIMS && t->nb[first] == r.run) {
            r.run *= (size_t) t->ne[first++];
        }
    } else {
        r.run = ggml_type_size(t->type); /* one block (element) at a time */
    }
    r.count = 1;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        r.n[i]  = i < first ? 1 : (i == 0 ? t->ne[0] / ggml_blck_size(t->type) : t->ne[i]);
        r.nb[i] = t->nb[i];
        r.count *= r.n[i];
    }
    return r;
}

static size_t run_at(const struct runs * r, int64_t k) {
    size_t off = 0;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        off += (size_t) (k % r->n[i]) * r->nb[i];
        k /= r->n[i];
    }
    return off;
}

/*
 * src and dst share a layout with gaps (views of parts of tensors): only the views' own bytes
 * move, run by run, so the data between their rows stays as it was (upstream copies the span).
 */
static void copy_gapped(const struct ggml_tensor * src, struct ggml_tensor * dst) {
    static const char * func = "ggml_backend_tensor_copy";
    const struct runs r = runs_of(src);
    const bool src_host = ggml_backend_buffer_is_host(ggmlx_tensor_buffer(src));
    const bool dst_host = ggml_backend_buffer_is_host(ggmlx_tensor_buffer(dst));
    char * tmp = NULL;
    if (!src_host && !dst_host) {
        tmp = malloc(ggml_nbytes(src));
        if (tmp == NULL) {
            ggmlx_error(func, "out of host memory for a %zu-byte staging copy", ggml_nbytes(src));
            return;
        }
        for (int64_t k = 0; k < r.count && ggmlx_last_error() == NULL; k++) {
            ggml_backend_tensor_get(src, tmp + run_at(&r, k), run_at(&r, k), r.run);
        }
    }
    const char * from = src_host ? (const char *) src->data : tmp;
    for (int64_t k = 0; k < r.count && ggmlx_last_error() == NULL; k++) {
        const size_t off = run_at(&r, k);
        if (from != NULL) {
            ggml_backend_tensor_set(dst, from + off, off, r.run);
        } else {
            ggml_backend_tensor_get(src, (char *) dst->data + off, off, r.run);
        }
    }
    free(tmp);
}

void ggml_backend_tensor_copy(const struct ggml_tensor * src, struct ggml_tensor * dst) {
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
    const size_t nbytes = ggml_nbytes(src);
    if (src == dst || nbytes == 0) {
        ggmlx_ok();
        return;
    }
    if (ggmlx_has_gaps(src)) {
        ggmlx_ok();
        copy_gapped(src, dst);
        return;
    }
    ggml_backend_buffer_t src_buf = ggmlx_tensor_buffer(src);
    ggml_backend_buffer_t dst_buf = ggmlx_tensor_buffer(dst);
    if (ggml_backend_buffer_is_host(src_buf)) {
        ggml_backend_tensor_set(dst, src->data, 0, nbytes);
        return;
    }
    if (ggml_backend_buffer_is_host(dst_buf)) {
        ggml_backend_tensor_get(src, dst->data, 0, nbytes);
        return;
    }
    if (ggml_backend_buffer_copy_tensor(src, dst)) {
        return;
    }
    /* neither side is host memory and dst's buffer has no direct path: bounce through the host */
    void * tmp = malloc(nbytes);
    if (tmp == NULL) {
        ggmlx_error(__func__, "out of host memory for a %zu-byte staging copy", nbytes);
        return;
    }
    ggml_backend_tensor_get(src, tmp, 0, nbytes);
    if (ggmlx_last_error() == NULL) {
        ggml_backend_tensor_set(dst, tmp, 0, nbytes);
    }
    free(tmp);
}
