/*
 * context.c -- contexts: one block of memory holding objects (tensors, graphs, work buffers)
 * one after the other, freed all at once.
 */
#include "ggml-impl.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/sysinfo.h>

/*
 * More than RAM and swap together can never be backed, and a size this close to SIZE_MAX would
 * wrap when padded. Refusing both here makes impossible requests fail cleanly everywhere,
 * including under sanitizer allocators that abort on huge sizes instead of returning NULL.
 */
bool ggmlx_host_size_possible(size_t size, size_t align) {
    if (size > (size_t) PTRDIFF_MAX - align) {
        return false;
    }
    struct sysinfo si;
    if (sysinfo(&si) != 0) {
        return true;
    }
    const unsigned long long unit  = si.mem_unit ? si.mem_unit : 1;
    const unsigned long long limit = ((unsigned long long) si.totalram + si.totalswap) * unit;
    return limit == 0 || size <= limit;
}

static bool init_params_ok(const struct ggml_init_params * params, size_t mem_size) {
    if (params->mem_buffer == NULL) {
        if (!ggmlx_host_size_possible(mem_size, GGMLX_CTX_ALIGN)) {
            ggmlx_error("ggml_init", "mem_size %zu is more memory than this machine has", mem_size);
            return false;
        }
        return true;
    }
    /* the caller's buffer: its end must be an address, or object offsets would wrap */
    const uintptr_t base = (uintptr_t) params->mem_buffer;
    if (mem_size > (size_t) PTRDIFF_MAX || base > UINTPTR_MAX - mem_size) {
        ggmlx_error("ggml_init", "mem_buffer %p with mem_size %zu runs past the end of the address space",
                    params->mem_buffer, mem_size);
        return false;
    }
    return true;
}

struct ggml_context * ggml_init(struct ggml_init_params params) {
    size_t mem_size = params.mem_size ? params.mem_size : GGML_MEM_ALIGN;
    if (!init_params_ok(&params, mem_size)) {
        return NULL;
    }
    struct ggml_context * ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        ggmlx_error(__func__, "out of host memory for the context header");
        return NULL;
    }
    if (params.mem_buffer) {
        ctx->mem_buffer       = params.mem_buffer;
        ctx->mem_buffer_owned = false;
    } else {
        mem_size = GGML_PAD(mem_size, GGMLX_CTX_ALIGN);
        ctx->mem_buffer = aligned_alloc(GGMLX_CTX_ALIGN, mem_size);
        if (ctx->mem_buffer == NULL) {
            ggmlx_error(__func__, "cannot allocate %zu bytes of context memory", mem_size);
            goto err_free_ctx;
        }
        ctx->mem_buffer_owned = true;
    }
    ctx->mem_size = mem_size;
    ctx->no_alloc = params.no_alloc;
    ggmlx_ok();
    return ctx;

err_free_ctx:
    free(ctx);
    return NULL;
}

void ggml_reset(struct ggml_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    ctx->n_objects     = 0;
    ctx->objects_begin = NULL;
    ctx->objects_end   = NULL;
    ctx->failed        = false;
}

void ggml_free(struct ggml_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    if (ctx->mem_buffer_owned) {
        free(ctx->mem_buffer);
    }
    free(ctx);
}

size_t ggml_used_mem(const struct ggml_context * ctx) {
    if (ctx == NULL || ctx->objects_end == NULL) {
        return 0;
    }
    return ctx->objects_end->offs + ctx->objects_end->size;
}

bool ggml_get_no_alloc(struct ggml_context * ctx) {
    return ctx ? ctx->no_alloc : false;
}

void ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return;
    }
    ctx->no_alloc = no_alloc;
}

void * ggml_get_mem_buffer(const struct ggml_context * ctx) {
    return ctx ? ctx->mem_buffer : NULL;
}

size_t ggml_get_mem_size(const struct ggml_context * ctx) {
    return ctx ? ctx->mem_size : 0;
}

size_t ggml_get_max_tensor_size(const struct ggml_context * ctx) {
    size_t max_size = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        size_t n = ggml_nbytes(t);
        max_size = n > max_size ? n : max_size;
    }
    return max_size;
}

struct ggml_object * ggmlx_ctx_new_object(struct ggml_context * ctx, enum ggml_object_type type, size_t size) {
    const size_t cur_end = ggml_used_mem(ctx);
    /* header right after the previous payload, payload aligned by absolute address (a user
     * buffer may itself be unaligned) */
    const uintptr_t base     = (uintptr_t) ctx->mem_buffer;
    const uintptr_t pay_addr = GGML_PAD(base + cur_end + GGMLX_OBJECT_SIZE, (uintptr_t) GGMLX_CTX_ALIGN);
    const size_t    pay_at   = (size_t) (pay_addr - base);
    const size_t    hdr_at   = pay_at - GGMLX_OBJECT_SIZE;
    const size_t    pay_size = GGML_PAD(size, GGML_MEM_ALIGN);

    if (size > ctx->mem_size) {
        /* beyond this pay_size could have wrapped (mem_size itself is at most PTRDIFF_MAX) */
        ggmlx_ctx_fail(ctx, "ggml_new_object", "context out of memory: %zu bytes asked for, the context holds %zu "
                       "(raise mem_size)", size, ctx->mem_size);
        return NULL;
    }
    if (pay_size > ctx->mem_size || pay_at > ctx->mem_size - pay_size) {
        ggmlx_ctx_fail(ctx, "ggml_new_object",
                       "context out of memory: need %zu more bytes, %zu of %zu used (raise mem_size)",
                       pay_at + pay_size - cur_end, cur_end, ctx->mem_size);
        return NULL;
    }
    struct ggml_object * obj = (struct ggml_object *) ((char *) ctx->mem_buffer + hdr_at);
    obj->offs = pay_at;
    obj->size = pay_size;
    obj->next = NULL;
    obj->type = type;
    memset(obj->padding, 0, sizeof obj->padding);

    if (ctx->objects_end) {
        ctx->objects_end->next = obj;
    } else {
        ctx->objects_begin = obj;
    }
    ctx->objects_end = obj;
    ctx->n_objects++;
    return obj;
}

void ggmlx_ctx_rewind(struct ggml_context * ctx, struct ggml_object * end) {
    struct ggml_object * obj = end ? end->next : ctx->objects_begin;
    for (; obj != NULL; obj = obj->next) {
        ctx->n_objects--;
    }
    if (end != NULL) {
        end->next = NULL;
    } else {
        ctx->objects_begin = NULL;
    }
    ctx->objects_end = end;
}

void * ggml_new_buffer(struct ggml_context * ctx, size_t nbytes) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return NULL;
    }
    struct ggml_object * obj = ggmlx_ctx_new_object(ctx, GGML_OBJECT_TYPE_WORK_BUFFER, nbytes);
    if (obj == NULL) {
        return NULL;
    }
    ggmlx_ok();
    return (char *) ctx->mem_buffer + obj->offs;
}

static const char * object_type_name(enum ggml_object_type type) {
    switch (type) {
    case GGML_OBJECT_TYPE_TENSOR:      return "tensor";
    case GGML_OBJECT_TYPE_GRAPH:       return "graph";
    case GGML_OBJECT_TYPE_WORK_BUFFER: return "work buffer";
    }
    return "?";
}

void ggml_print_object(const struct ggml_object * obj) {
    if (obj == NULL) {
        return;
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, " - ggml_object: type = %s, offs = %zu, size = %zu, next = %p\n",
              object_type_name(obj->type), obj->offs, obj->size, (const void *) obj->next);
}

void ggml_print_objects(const struct ggml_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, "%s: objects in context %p:\n", __func__, (const void *) ctx);
    for (const struct ggml_object * obj = ctx->objects_begin; obj != NULL; obj = obj->next) {
        ggml_print_object(obj);
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, "%s: --- end ---\n", __func__);
}

bool ggmlx_context_is_failed(const struct ggml_context * ctx) {
    return ctx == NULL || ctx->failed;
}

size_t ggml_tensor_overhead(void) {
    /* header, worst-case alignment gap, and the tensor struct padded to keep data aligned */
    return GGMLX_OBJECT_SIZE + (GGMLX_CTX_ALIGN - 1) + GGMLX_TENSOR_DATA_OFFSET;
}
