/*
 * alloc-ctx.c -- every unallocated tensor of a no_alloc context placed in buffers of one type:
 * one buffer when they fit under the type's max size, else several wrapped in a multi-buffer.
 * Tensors are packed in creation order, so a view always comes after its source.
 */
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"

#include <stdint.h>
#include <stdlib.h>

struct ctx_buffers {
    ggml_backend_buffer_t * bufs;
    size_t                  n;
    size_t                  cap;
};

static bool owned_by(const struct ctx_buffers * b, ggml_backend_buffer_t buf) {
    for (size_t i = 0; i < b->n; i++) {
        if (b->bufs[i] == buf) {
            return true;
        }
    }
    return false;
}

/* Undo everything: tensors placed in our buffers forget them, and the buffers go. */
static void unwind(struct ggml_context * ctx, struct ctx_buffers * b) {
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (t->buffer != NULL && owned_by(b, t->buffer)) {
            t->buffer = NULL;
            t->data   = NULL;
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        ggml_backend_buffer_free(b->bufs[i]);
    }
    free(b->bufs);
    b->bufs = NULL;
    b->n = b->cap = 0;
}

static bool view_needs_init(const struct ggml_tensor * t) {
    return t->view_src != NULL && t->buffer == NULL;
}

/* one buffer of size bytes for the tensors [first, last) */
static bool place_range(struct ggml_context * ctx, struct ggml_tensor * first, struct ggml_tensor * last,
                        ggml_backend_buffer_type_t buft, size_t size, struct ctx_buffers * b, const char * func) {
    if (b->n == b->cap) {
        const size_t cap = b->cap ? 2 * b->cap : 4;
        ggml_backend_buffer_t * bufs = realloc(b->bufs, cap * sizeof *bufs);
        if (bufs == NULL) {
            ggmlx_error(func, "out of host memory");
            return false;
        }
        b->bufs = bufs;
        b->cap  = cap;
    }
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, size);
    if (buf == NULL) {
        ggmlx_error(func, "cannot allocate a %s buffer of %zu bytes for the context's tensors", ggml_backend_buft_name(buft),
                    size);
        return false;
    }
    b->bufs[b->n++] = buf;

    struct ggml_tallocr talloc = ggml_tallocr_new(buf);
    for (struct ggml_tensor * t = first; t != last; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data != NULL || t->view_src != NULL) {
            continue;
        }
        const enum ggml_status status = ggml_tallocr_alloc(&talloc, t);
        if (status != GGML_STATUS_SUCCESS) {
            ggmlx_error(func, "cannot place tensor '%s' in its buffer (%s)", t->name, ggml_status_to_string(status));
            return false;
        }
    }
    return true;
}

/* once every source has memory: views get theirs (also when nothing else needed a buffer) */
static bool init_views(struct ggml_context * ctx, const char * func) {
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (!view_needs_init(t)) {
            continue;
        }
        if (t->view_src->buffer == NULL) {
            if (t->data != NULL) {
                continue; /* a view of memory that belongs to no backend buffer: nothing to do */
            }
            ggmlx_error(func, "view '%s' has a source '%s' that is not allocated anywhere", t->name, t->view_src->name);
            return false;
        }
        if (ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
            ggmlx_error(func, "cannot initialise view '%s'", t->name);
            return false;
        }
    }
    return true;
}

/*
 * The work of both public calls: with dry, only add up the sizes. NULL with *total = 0 and
 * *failed = false when there is nothing to allocate.
 */
static ggml_backend_buffer_t alloc_ctx(struct ggml_context * ctx, ggml_backend_buffer_type_t buft, bool dry,
                                       size_t * total, bool * failed, const char * func) {
    *total  = 0;
    *failed = true;
    if (ctx == NULL || buft == NULL) {
        ggmlx_error(func, "%s is NULL", ctx == NULL ? "ctx" : "buft");
        return NULL;
    }
    if (!ggml_get_no_alloc(ctx)) {
        ggmlx_error(func, "ctx must be a no_alloc context (its tensors have memory of their own)");
        return NULL;
    }
    if (!dry && buft->iface.alloc_ctx_tensors != NULL) {
        ggmlx_clear_last_error();
        ggml_backend_buffer_t buf = buft->iface.alloc_ctx_tensors(buft, ctx);
        *failed = buf == NULL && ggmlx_last_error() != NULL;
        return buf;
    }
    const size_t align    = ggml_backend_buft_get_alignment(buft);
    const size_t max_size = ggml_backend_buft_get_max_size(buft);
    if (align == 0 || (align & (align - 1)) != 0) {
        ggmlx_error(func, "buffer type %s has alignment %zu, not a power of two", ggml_backend_buft_name(buft), align);
        return NULL;
    }

    struct ctx_buffers b = { 0 };
    struct ggml_tensor * first = ggml_get_first_tensor(ctx);
    size_t cur = 0;
    for (struct ggml_tensor * t = first; t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        size_t need = 0;
        if (t->data == NULL && t->view_src == NULL) {
            const size_t size = ggml_backend_buft_get_alloc_size(buft, t);
            if (size > SIZE_MAX - align || size + align - 1 > SIZE_MAX - *total - cur) {
                ggmlx_error(func, "tensor '%s' of %zu bytes is too large", t->name, size);
                goto err;
            }
            need = GGML_PAD(size, align);
        }
        /* a tensor that alone exceeds max_size still gets a buffer of its own: the type decides */
        if (cur > 0 && cur + need > max_size) {
            if (!dry && !place_range(ctx, first, t, buft, cur, &b, func)) {
                goto err;
            }
            *total += cur;
            first = t;
            cur   = 0;
        }
        cur += need;
    }
    if (cur > 0) {
        if (!dry && !place_range(ctx, first, NULL, buft, cur, &b, func)) {
            goto err;
        }
        *total += cur;
    }
    if (dry) {
        *failed = false;
        return NULL;
    }
    if (!init_views(ctx, func)) {
        goto err;
    }
    *failed = false;
    if (b.n == 0) {
        return NULL;
    }

    ggml_backend_buffer_t buffer = b.bufs[0];
    if (b.n > 1) {
        buffer = ggml_backend_multi_buffer_alloc_buffer(b.bufs, b.n);
        if (buffer == NULL) {
            *failed = true;
            goto err;
        }
    }
    free(b.bufs);
    return buffer;

err:
    unwind(ctx, &b);
    *total = 0;
    return NULL;
}

size_t ggml_backend_alloc_ctx_tensors_from_buft_size(struct ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    size_t total;
    bool   failed;
    alloc_ctx(ctx, buft, true, &total, &failed, __func__);
    if (!failed) {
        ggmlx_ok();
    }
    return total;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    size_t total;
    bool   failed;
    ggml_backend_buffer_t buffer = alloc_ctx(ctx, buft, false, &total, &failed, __func__);
    if (failed) {
        return NULL;
    }
    if (buffer == NULL) {
        /* as upstream: nothing to do is not an error, but the caller gets no buffer to free */
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: every tensor of the context is already allocated\n", __func__);
    }
    ggmlx_ok();
    return buffer;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors(struct ggml_context * ctx, ggml_backend_t backend) {
    if (backend == NULL) {
        ggmlx_error(__func__, "backend is NULL");
        return NULL;
    }
    ggml_backend_buffer_type_t buft = ggml_backend_get_default_buffer_type(backend);
    if (buft == NULL) {
        return NULL; /* the backend layer said why */
    }
    return ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
}
