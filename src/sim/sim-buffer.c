/*
 * sim-buffer.c -- a SIM device's private memory.
 *
 * A buffer is one memfd mapped twice: a PROT_NONE view, whose addresses are what tensor->data
 * holds (so the host faults on a read it should have made through a copy, as it would on a
 * GPU), and a read-write view of the same pages for the device's worker and for the buffer's
 * own set/get/memset/copy. The pair is entered in the alias table (host-alias.h), through which
 * the host backends find the read-write address of any SIM tensor.
 *
 * Memory is counted per device: an allocation that would take the device past its limit
 * fails, as cudaMalloc would, and freeing gives the bytes back.
 */
#ifndef GGML_BACKEND_DL

#include "sim-impl.h"

#include "host-alias.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sim_buffer {
    struct ggmlx_sim_device * dev;
    char                    * hidden; /* PROT_NONE: what tensors point into */
    char                    * rw;
    size_t                    map_size;
    size_t                    charged;
};

/* ---- memory accounting --------------------------------------------------------------------- */

static bool charge(struct ggmlx_sim_device * sd, size_t size) {
    pthread_mutex_lock(&sd->mem_lock);
    const size_t free_bytes = sd->limit - sd->used;
    const bool   ok         = size <= free_bytes;
    if (ok) {
        sd->used += size;
    }
    pthread_mutex_unlock(&sd->mem_lock);
    if (!ok) {
        ggmlx_error("ggml_backend_buft_alloc_buffer", "%s: out of device memory: %zu bytes asked, %zu of %zu free",
                    sd->name, size, free_bytes, sd->limit);
    }
    return ok;
}

static void uncharge(struct ggmlx_sim_device * sd, size_t size) {
    pthread_mutex_lock(&sd->mem_lock);
    sd->used -= size;
    pthread_mutex_unlock(&sd->mem_lock);
}

/* ---- the buffer ---------------------------------------------------------------------------- */

/* the read-write address of [p, p + size) in this buffer, NULL (error of func) when outside it */
static char * rw_at(const char * func, ggml_backend_buffer_t buffer, const void * p, size_t size) {
    const struct sim_buffer * b = buffer->context;
    const uintptr_t at = (uintptr_t) p, base = (uintptr_t) b->hidden;
    if (p == NULL || at < base || at - base > buffer->size || size > buffer->size - (at - base)) {
        ggmlx_error(func, "%s: %zu bytes at %p are not in this buffer [%p, +%zu)", b->dev->name, size, p,
                    (void *) b->hidden, buffer->size);
        return NULL;
    }
    return b->rw + (at - base);
}

/* tensor's bytes [offset, offset + size) in the read-write view */
static char * tensor_rw(const char * func, ggml_backend_buffer_t buffer, const struct ggml_tensor * t, size_t offset,
                        size_t size) {
    if (t->data == NULL || offset > SIZE_MAX - (uintptr_t) t->data) {
        ggmlx_error(func, "tensor '%s' has no data in this buffer", t->name);
        return NULL;
    }
    return rw_at(func, buffer, (const char *) t->data + offset, size);
}

static void sim_buffer_free(ggml_backend_buffer_t buffer) {
    struct sim_buffer * b = buffer->context;
    ggmlx_alias_remove(b->hidden);
    munmap(b->hidden, b->map_size);
    munmap(b->rw, b->map_size);
    uncharge(b->dev, b->charged);
    free(b);
}

static void * sim_buffer_get_base(ggml_backend_buffer_t buffer) {
    const struct sim_buffer * b = buffer->context;
    return b->hidden;
}

static void sim_buffer_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, uint8_t value,
                                     size_t offset, size_t size) {
    char * p = tensor_rw("ggml_backend_tensor_memset", buffer, tensor, offset, size);
    if (p != NULL) {
        memset(p, value, size);
    }
}

static void sim_buffer_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                  size_t offset, size_t size) {
    char * p = tensor_rw("ggml_backend_tensor_set", buffer, tensor, offset, size);
    if (p != NULL) {
        memcpy(p, data, size);
    }
}

static void sim_buffer_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                  size_t offset, size_t size) {
    const char * p = tensor_rw("ggml_backend_tensor_get", buffer, tensor, offset, size);
    if (p != NULL) {
        memcpy(data, p, size);
    }
}

/* the span rows [0, n_copies) cover: (n_copies - 1) strides and one row (checked by the caller) */
static size_t span(size_t size, size_t n_copies, size_t stride) {
    return n_copies == 0 ? 0 : (n_copies - 1) * stride + size;
}

static void sim_buffer_set_tensor_2d(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    char * p = tensor_rw("ggml_backend_tensor_set_2d", buffer, tensor, offset, span(size, n_copies, stride_tensor));
    for (size_t i = 0; p != NULL && i < n_copies; i++) {
        memcpy(p + i * stride_tensor, (const char *) data + i * stride_data, size);
    }
}

static void sim_buffer_get_tensor_2d(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                     size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                                     size_t stride_data) {
    const char * p = tensor_rw("ggml_backend_tensor_get_2d", buffer, tensor, offset, span(size, n_copies, stride_tensor));
    for (size_t i = 0; p != NULL && i < n_copies; i++) {
        memcpy((char *) data + i * stride_data, p + i * stride_tensor, size);
    }
}

/* dst is in this buffer; src in host memory or in any SIM device's memory (through its twin) */
static bool sim_buffer_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * src,
                                  struct ggml_tensor * dst) {
    ggml_backend_buffer_t src_buf = ggmlx_tensor_buffer(src);
    const size_t nbytes = ggml_nbytes(src);
    const void * from = NULL;
    if (src->data == NULL) {
        return false;
    }
    if (src_buf == NULL || ggml_backend_buffer_is_host(src_buf)) {
        from = src->data;
    } else {
        from = ggmlx_alias_lookup(src->data, NULL);
    }
    char * to = from ? tensor_rw("ggml_backend_tensor_copy", buffer, dst, 0, nbytes) : NULL;
    if (to == NULL) {
        return false;
    }
    memmove(to, from, nbytes); /* memmove: src and dst may be views of one buffer */
    return true;
}

static void sim_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    struct sim_buffer * b = buffer->context;
    memset(b->rw, value, buffer->size);
}

static const struct ggml_backend_buffer_i sim_buffer_i = {
    .free_buffer   = sim_buffer_free,
    .get_base      = sim_buffer_get_base,
    .init_tensor   = NULL,
    .memset_tensor = sim_buffer_memset_tensor,
    .set_tensor    = sim_buffer_set_tensor,
    .get_tensor    = sim_buffer_get_tensor,
    .set_tensor_2d = sim_buffer_set_tensor_2d,
    .get_tensor_2d = sim_buffer_get_tensor_2d,
    .cpy_tensor    = sim_buffer_cpy_tensor,
    .clear         = sim_buffer_clear,
    .reset         = NULL,
};

/* ---- the buffer type ----------------------------------------------------------------------- */

static const char * sim_buft_get_name(ggml_backend_buffer_type_t buft) {
    const struct ggmlx_sim_device * sd = buft->context;
    return sd->name;
}

static ggml_backend_buffer_t sim_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    static const char * func = "ggml_backend_buft_alloc_buffer";
    struct ggmlx_sim_device * sd = buft->context;
    const long page = sysconf(_SC_PAGESIZE);
    const size_t pg = page > 0 ? (size_t) page : 4096;
    if (!charge(sd, size)) { /* also refuses what could not be mapped: size <= limit <= 2^44 */
        return NULL;
    }
    struct sim_buffer * b = calloc(1, sizeof *b);
    if (b == NULL) {
        ggmlx_error(func, "%s: out of host memory", sd->name);
        goto err_uncharge;
    }
    b->dev      = sd;
    b->charged  = size;
    b->map_size = (size + pg - 1) / pg * pg;
    char fd_name[32];
    snprintf(fd_name, sizeof fd_name, "ggmlx-%s", sd->name);
    const int fd = memfd_create(fd_name, MFD_CLOEXEC);
    if (fd < 0) {
        ggmlx_error(func, "%s: memfd_create failed: %s", sd->name, strerror(errno));
        goto err_free;
    }
    if (ftruncate(fd, (off_t) b->map_size) != 0) {
        ggmlx_error(func, "%s: cannot size the memory file to %zu bytes: %s", sd->name, b->map_size, strerror(errno));
        goto err_close;
    }
    b->rw = mmap(NULL, b->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b->rw == MAP_FAILED) {
        ggmlx_error(func, "%s: cannot map %zu bytes: %s", sd->name, b->map_size, strerror(errno));
        goto err_close;
    }
    b->hidden = mmap(NULL, b->map_size, PROT_NONE, MAP_SHARED, fd, 0);
    close(fd); /* the mappings keep the memory */
    if (b->hidden == MAP_FAILED) {
        ggmlx_error(func, "%s: cannot map %zu bytes: %s", sd->name, b->map_size, strerror(errno));
        goto err_unmap_rw;
    }
    if (!ggmlx_alias_add(b->hidden, b->rw, b->map_size, sd)) {
        goto err_unmap;
    }
    ggml_backend_buffer_t buffer = ggml_backend_buffer_init(buft, sim_buffer_i, b, size);
    if (buffer == NULL) {
        goto err_alias;
    }
    return buffer;

err_alias:
    ggmlx_alias_remove(b->hidden);
err_unmap:
    munmap(b->hidden, b->map_size);
err_unmap_rw:
    munmap(b->rw, b->map_size);
    goto err_free;
err_close:
    close(fd);
err_free:
    free(b);
err_uncharge:
    uncharge(sd, size);
    return NULL;
}

static size_t sim_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return GGMLX_SIM_ALIGN;
}

static size_t sim_buft_get_max_size(ggml_backend_buffer_type_t buft) {
    const struct ggmlx_sim_device * sd = buft->context;
    return sd->limit;
}

static bool sim_buft_is_host(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return false;
}

void ggmlx_sim_buft_init(struct ggmlx_sim_device * sd) {
    sd->buft = (struct ggml_backend_buffer_type) {
        .iface = {
            .get_name       = sim_buft_get_name,
            .alloc_buffer   = sim_buft_alloc_buffer,
            .get_alignment  = sim_buft_get_alignment,
            .get_max_size   = sim_buft_get_max_size,
            .get_alloc_size = NULL,
            .is_host        = sim_buft_is_host,
        },
        .device  = &sd->dev,
        .context = sd,
    };
}

#endif /* GGML_BACKEND_DL */
