/*
 * gguf-tensor.c -- tensor infos: getters, adding tensors, changing their type or data, and
 * the layout of the data section (each tensor after the previous one, padded to the alignment).
 */
#include "gguf-impl.h"
#include "ggml-impl.h"

#include <stdlib.h>
#include <string.h>

bool gguf_ctx_push_info(struct gguf_context * ctx, const struct gguf_tensor_info * info) {
    if (ctx->n_info == ctx->cap_info) {
        size_t cap = ctx->cap_info ? 2 * ctx->cap_info : 16;
        struct gguf_tensor_info * p = realloc(ctx->info, cap * sizeof *p);
        if (p == NULL) {
            return false;
        }
        ctx->info     = p;
        ctx->cap_info = cap;
    }
    ctx->info[ctx->n_info++] = *info;
    return true;
}

void gguf_ctx_layout(struct gguf_context * ctx, size_t first) {
    uint64_t off = 0;
    if (first > 0) {
        const struct gguf_tensor_info * prev = &ctx->info[first - 1];
        off = prev->offset + GGML_PAD(ggml_nbytes(&prev->t), ctx->alignment);
    }
    for (size_t i = first; i < ctx->n_info; i++) {
        ctx->info[i].offset = off;
        off += GGML_PAD(ggml_nbytes(&ctx->info[i].t), ctx->alignment);
    }
    ctx->size = (size_t) off;
}

/* ---- getters --------------------------------------------------------------------------------- */

int64_t gguf_get_n_tensors(const struct gguf_context * ctx) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return 0;
    }
    ggmlx_ok();
    return (int64_t) ctx->n_info;
}

int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name) {
    if (ctx == NULL || name == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "name");
        return -1;
    }
    ggmlx_ok();
    for (size_t i = 0; i < ctx->n_info; i++) {
        if (strcmp(ctx->info[i].t.name, name) == 0) {
            return (int64_t) i;
        }
    }
    return -1;
}

static const struct gguf_tensor_info * info_at(const struct gguf_context * ctx, int64_t id, const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (id < 0 || (uint64_t) id >= ctx->n_info) {
        ggmlx_error(func, "tensor id %lld out of range (the context has %zu tensors)", (long long) id, ctx->n_info);
        return NULL;
    }
    ggmlx_ok();
    return &ctx->info[id];
}

size_t gguf_get_tensor_offset(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * info = info_at(ctx, tensor_id, __func__);
    return info ? (size_t) info->offset : 0;
}

const char * gguf_get_tensor_name(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * info = info_at(ctx, tensor_id, __func__);
    return info ? info->t.name : NULL;
}

const int64_t * gguf_get_tensor_ne(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * info = info_at(ctx, tensor_id, __func__);
    return info ? info->t.ne : NULL;
}

enum ggml_type gguf_get_tensor_type(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * info = info_at(ctx, tensor_id, __func__);
    return info ? info->t.type : (enum ggml_type) -1;
}

size_t gguf_get_tensor_size(const struct gguf_context * ctx, int64_t tensor_id) {
    const struct gguf_tensor_info * info = info_at(ctx, tensor_id, __func__);
    return info ? ggml_nbytes(&info->t) : 0;
}

/* ---- editing --------------------------------------------------------------------------------- */

void gguf_add_tensor(struct gguf_context * ctx, const struct ggml_tensor * tensor) {
    if (ctx == NULL || tensor == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "tensor");
        return;
    }
    if (gguf_find_tensor(ctx, tensor->name) >= 0) {
        ggmlx_error(__func__, "duplicate tensor name '%s'", tensor->name);
        return;
    }
    if (ggml_blck_size(tensor->type) == 0) {
        ggmlx_error(__func__, "tensor '%s': unknown type %d", tensor->name, (int) tensor->type);
        return;
    }
    struct gguf_tensor_info info;
    info.t      = *tensor;
    info.offset = 0;
    if (!gguf_ctx_push_info(ctx, &info)) {
        ggmlx_error(__func__, "out of memory");
        return;
    }
    gguf_ctx_layout(ctx, ctx->n_info - 1);
    ggmlx_ok();
}

static struct gguf_tensor_info * info_named(struct gguf_context * ctx, const char * name, const char * func) {
    if (ctx == NULL || name == NULL) {
        ggmlx_error(func, "%s is NULL", ctx == NULL ? "ctx" : "name");
        return NULL;
    }
    const int64_t id = gguf_find_tensor(ctx, name);
    if (id < 0) {
        ggmlx_error(func, "no tensor named '%s'", name);
        return NULL;
    }
    return &ctx->info[id];
}

void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, enum ggml_type type) {
    struct gguf_tensor_info * info = info_named(ctx, name, __func__);
    if (info == NULL) {
        return;
    }
    const int64_t blck = ggml_blck_size(type);
    if (blck == 0) {
        ggmlx_error(__func__, "tensor '%s': unknown type %d", name, (int) type);
        return;
    }
    if (info->t.ne[0] % blck != 0) {
        ggmlx_error(__func__, "tensor '%s': ne[0] = %lld is not a multiple of the block size %lld of %s", name,
                    (long long) info->t.ne[0], (long long) blck, ggml_type_name(type));
        return;
    }
    struct ggml_tensor * t = &info->t;
    t->type  = type;
    t->nb[0] = ggml_type_size(type);
    t->nb[1] = t->nb[0] * (size_t) (t->ne[0] / blck);
    for (int j = 2; j < GGML_MAX_DIMS; j++) {
        t->nb[j] = t->nb[j - 1] * (size_t) t->ne[j - 1];
    }
    gguf_ctx_layout(ctx, (size_t) (info - ctx->info));
    ggmlx_ok();
}

void gguf_set_tensor_data(struct gguf_context * ctx, const char * name, const void * data) {
    struct gguf_tensor_info * info = info_named(ctx, name, __func__);
    if (info == NULL) {
        return;
    }
    info->t.data   = (void *) data; /* the writer only reads it */
    info->t.buffer = NULL;
    ggmlx_ok();
}
