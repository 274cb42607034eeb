/*
 * multi-buffer.c -- one buffer made of several, for a context whose tensors exceed one
 * buffer's max size. The tensors live in the children; the multi-buffer frees, clears, resets
 * and labels them together. It has no base address of its own.
 */
#include "backend-check.h"

#include <stdlib.h>
#include <string.h>

struct multi_buffer_ctx {
    ggml_backend_buffer_t * buffers;
    size_t                  n_buffers;
};

static void multi_buffer_free(ggml_backend_buffer_t buffer) {
    struct multi_buffer_ctx * ctx = buffer->context;
    for (size_t i = 0; i < ctx->n_buffers; i++) {
        ggml_backend_buffer_free(ctx->buffers[i]);
    }
    free(ctx->buffers);
    free(ctx);
}

static void multi_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    struct multi_buffer_ctx * ctx = buffer->context;
    for (size_t i = 0; i < ctx->n_buffers; i++) {
        ggml_backend_buffer_clear(ctx->buffers[i], value);
    }
}

static void multi_buffer_reset(ggml_backend_buffer_t buffer) {
    struct multi_buffer_ctx * ctx = buffer->context;
    for (size_t i = 0; i < ctx->n_buffers; i++) {
        ggml_backend_buffer_reset(ctx->buffers[i]);
    }
}

/* the identity of a multi-buffer is this vtable's free_buffer (as upstream) */
static const struct ggml_backend_buffer_i multi_buffer_i = {
    .free_buffer = multi_buffer_free,
    .clear       = multi_buffer_clear,
    .reset       = multi_buffer_reset,
};

ggml_backend_buffer_t ggml_backend_multi_buffer_alloc_buffer(ggml_backend_buffer_t * buffers, size_t n_buffers) {
    if (buffers == NULL || n_buffers == 0) {
        ggmlx_error(__func__, "no buffers given");
        return NULL;
    }
    size_t total = 0;
    for (size_t i = 0; i < n_buffers; i++) {
        if (buffers[i] == NULL) {
            ggmlx_error(__func__, "buffers[%zu] is NULL", i);
            return NULL;
        }
        for (size_t j = 0; j < i; j++) {
            if (buffers[j] == buffers[i]) {
                ggmlx_error(__func__, "buffers[%zu] and buffers[%zu] are the same buffer", j, i);
                return NULL;
            }
        }
        if (__builtin_add_overflow(total, buffers[i]->size, &total)) {
            ggmlx_error(__func__, "total size overflows");
            return NULL;
        }
    }

    struct multi_buffer_ctx * ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        goto err_oom;
    }
    ctx->buffers = malloc(n_buffers * sizeof *ctx->buffers);
    if (ctx->buffers == NULL) {
        goto err_free_ctx;
    }
    memcpy(ctx->buffers, buffers, n_buffers * sizeof *ctx->buffers);
    ctx->n_buffers = n_buffers;

    ggml_backend_buffer_t buffer = ggml_backend_buffer_init(buffers[0]->buft, multi_buffer_i, ctx, total);
    if (buffer == NULL) {
        goto err_free_list;
    }
    ggmlx_ok();
    return buffer;

err_free_list:
    free(ctx->buffers);
err_free_ctx:
    free(ctx);
err_oom:
    ggmlx_error(__func__, "out of host memory");
    return NULL;
}

bool ggml_backend_buffer_is_multi_buffer(ggml_backend_buffer_t buffer) {
    if (buffer == NULL) {
        ggmlx_error(__func__, "buffer is NULL");
        return false;
    }
    return buffer->iface.free_buffer == multi_buffer_free;
}

void ggml_backend_multi_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage) {
    if (!ggml_backend_buffer_is_multi_buffer(buffer)) {
        if (buffer != NULL) {
            ggmlx_error(__func__, "buffer %s is not a multi-buffer", ggmlx_buffer_name_of(buffer));
        }
        return;
    }
    if (usage != GGML_BACKEND_BUFFER_USAGE_ANY && usage != GGML_BACKEND_BUFFER_USAGE_WEIGHTS &&
        usage != GGML_BACKEND_BUFFER_USAGE_COMPUTE) {
        ggmlx_error(__func__, "unknown usage %d", (int) usage);
        return;
    }
    buffer->usage = usage;
    struct multi_buffer_ctx * ctx = buffer->context;
    for (size_t i = 0; i < ctx->n_buffers; i++) {
        ggml_backend_buffer_set_usage(ctx->buffers[i], usage);
    }
}
