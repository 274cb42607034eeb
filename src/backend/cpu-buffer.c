/*
 * cpu-buffer.c -- the CPU buffer type: host memory in ggml's layout. It lives in libggml-base
 * (not libggml-cpu) because allocators and host code need host buffers without a CPU backend.
 */
#include "backend-check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Memory is allocated at this alignment (a cache line, suits AVX-512 loads)... */
#define CPU_BUFFER_BASE_ALIGN 64
/* ...but tensors are only promised upstream's TENSOR_ALIGNMENT, so buffer sizes computed by
 * programs written for upstream (sum of sizes padded to 32) still fit. */
#define CPU_TENSOR_ALIGN 32

/* ---- buffer ---------------------------------------------------------------------------------- */

static void cpu_buffer_free(ggml_backend_buffer_t buffer) {
    free(buffer->context);
}

static void * cpu_buffer_get_base(ggml_backend_buffer_t buffer) {
    return buffer->context;
}

static void cpu_buffer_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, uint8_t value,
                                     size_t offset, size_t size) {
    (void) buffer;
    memset((char *) tensor->data + offset, value, size);
}

static void cpu_buffer_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                  size_t offset, size_t size) {
    (void) buffer;
    memcpy((char *) tensor->data + offset, data, size);
}

static void cpu_buffer_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                  size_t offset, size_t size) {
    (void) buffer;
    memcpy(data, (const char *) tensor->data + offset, size);
}

static void cpu_buffer_set_tensor_2d(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    (void) buffer;
    for (size_t i = 0; i < n_copies; i++) {
        memcpy((char *) tensor->data + offset + i * stride_tensor, (const char *) data + i * stride_data, size);
    }
}

static void cpu_buffer_get_tensor_2d(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    (void) buffer;
    for (size_t i = 0; i < n_copies; i++) {
        memcpy((char *) data + i * stride_data, (const char *) tensor->data + offset + i * stride_tensor, size);
    }
}

static bool cpu_buffer_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * src,
                                  struct ggml_tensor * dst) {
    (void) buffer;
    ggml_backend_buffer_t src_buf = ggmlx_tensor_buffer(src);
    /* only host memory can be read directly; anything else goes through the source's buffer */
    if (src_buf == NULL || src->data == NULL || src_buf->buft == NULL || src_buf->buft->iface.is_host == NULL ||
        !src_buf->buft->iface.is_host(src_buf->buft)) {
        return false;
    }
    memcpy(dst->data, src->data, ggml_nbytes(src));
    return true;
}

static void cpu_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    memset(buffer->context, value, buffer->size);
}

static const struct ggml_backend_buffer_i cpu_buffer_i = {
    .free_buffer   = cpu_buffer_free,
    .get_base      = cpu_buffer_get_base,
    .init_tensor   = NULL,
    .memset_tensor = cpu_buffer_memset_tensor,
    .set_tensor    = cpu_buffer_set_tensor,
    .get_tensor    = cpu_buffer_get_tensor,
    .set_tensor_2d = cpu_buffer_set_tensor_2d,
    .get_tensor_2d = cpu_buffer_get_tensor_2d,
    .cpy_tensor    = cpu_buffer_cpy_tensor,
    .clear         = cpu_buffer_clear,
    .reset         = NULL,
};

/* the same, over memory the caller owns */
static const struct ggml_backend_buffer_i cpu_buffer_from_ptr_i = {
    .free_buffer   = NULL,
    .get_base      = cpu_buffer_get_base,
    .init_tensor   = NULL,
    .memset_tensor = cpu_buffer_memset_tensor,
    .set_tensor    = cpu_buffer_set_tensor,
    .get_tensor    = cpu_buffer_get_tensor,
    .set_tensor_2d = cpu_buffer_set_tensor_2d,
    .get_tensor_2d = cpu_buffer_get_tensor_2d,
    .cpy_tensor    = cpu_buffer_cpy_tensor,
    .clear         = cpu_buffer_clear,
    .reset         = NULL,
};

/* ---- buffer types ---------------------------------------------------------------------------- */

static const char * cpu_buft_get_name(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return "CPU";
}

static const char * cpu_mapped_buft_get_name(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return "CPU_Mapped";
}

static ggml_backend_buffer_t cpu_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    if (!ggmlx_host_size_possible(size, CPU_BUFFER_BASE_ALIGN)) {
        ggmlx_error("ggml_backend_buft_alloc_buffer", "CPU: %zu bytes is more memory than this machine has", size);
        return NULL;
    }
    const size_t padded = GGML_PAD(size, CPU_BUFFER_BASE_ALIGN);
    void * data = aligned_alloc(CPU_BUFFER_BASE_ALIGN, padded);
    if (data == NULL) {
        ggmlx_error("ggml_backend_buft_alloc_buffer", "CPU: out of host memory allocating %zu bytes", size);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggml_backend_buffer_init(buft, cpu_buffer_i, data, size);
    if (buffer == NULL) {
        free(data);
        return NULL;
    }
    return buffer;
}

static size_t cpu_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return CPU_TENSOR_ALIGN;
}

static bool cpu_buft_is_host(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return true;
}

/*
 * device is NULL as upstream: the CPU device lives in libggml-cpu, which this library cannot
 * reach; the CPU device accepts this buffer type through its supports_buft.
 */
static struct ggml_backend_buffer_type cpu_buft = {
    .iface = {
        .get_name       = cpu_buft_get_name,
        .alloc_buffer   = cpu_buft_alloc_buffer,
        .get_alignment  = cpu_buft_get_alignment,
        .get_max_size   = NULL,
        .get_alloc_size = NULL,
        .is_host        = cpu_buft_is_host,
    },
    .device  = NULL,
    .context = NULL,
};

static struct ggml_backend_buffer_type cpu_mapped_buft = {
    .iface = {
        .get_name       = cpu_mapped_buft_get_name,
        .alloc_buffer   = cpu_buft_alloc_buffer,
        .get_alignment  = cpu_buft_get_alignment,
        .get_max_size   = NULL,
        .get_alloc_size = NULL,
        .is_host        = cpu_buft_is_host,
    },
    .device  = NULL,
    .context = NULL,
};

ggml_backend_buffer_type_t ggml_backend_cpu_buffer_type(void) {
    return &cpu_buft;
}

ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void * ptr, size_t size) {
    if (ptr == NULL) {
        ggmlx_error(__func__, "ptr is NULL");
        return NULL;
    }
    if ((uintptr_t) ptr % CPU_TENSOR_ALIGN != 0) {
        ggmlx_error(__func__, "ptr %p is not aligned to %d bytes", ptr, CPU_TENSOR_ALIGN);
        return NULL;
    }
    if (size > UINTPTR_MAX - (uintptr_t) ptr) {
        ggmlx_error(__func__, "%zu bytes at %p overflow the address space", size, ptr);
        return NULL;
    }
    ggml_backend_buffer_t buffer = ggml_backend_buffer_init(&cpu_mapped_buft, cpu_buffer_from_ptr_i, ptr, size);
    if (buffer != NULL) {
        ggmlx_ok();
    }
    return buffer;
}
