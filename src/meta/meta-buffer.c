/*
 * meta-buffer.c -- the meta buffer type and buffers: one simple buffer per device, a reserved
 * (never touched) address range for the tensors' data pointers, and the split of each tensor
 * that is not MIRRORED. Reads and writes walk a tensor's "runs": the byte ranges of the whole
 * tensor that one device holds.
 */
#include "meta-impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- the split table ---------------------------------------------------------------------------- */

static size_t key_home(const struct meta_buffer * mb, const struct ggml_tensor * t) {
    uint64_t x = (uint64_t) (uintptr_t) t;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (size_t) (x >> 17) & (mb->cap_keys - 1);
}

static size_t key_slot(const struct meta_buffer * mb, const struct ggml_tensor * t) {
    size_t i = key_home(mb, t);
    while (mb->keys[i] != NULL && mb->keys[i] != t) {
        i = (i + 1) & (mb->cap_keys - 1);
    }
    return i;
}

/* caller holds mb->lock */
static struct meta_tensor_info * info_find(const struct meta_buffer * mb, const struct ggml_tensor * t) {
    if (mb->cap_keys == 0) {
        return NULL;
    }
    const size_t i = key_slot(mb, t);
    return mb->keys[i] == t ? &mb->infos[mb->vals[i] - 1] : NULL;
}

/* caller holds mb->lock; the entry for t, added (zeroed) when missing; NULL when out of memory */
static struct meta_tensor_info * info_get(struct meta_buffer * mb, const struct ggml_tensor * t) {
    struct meta_tensor_info * found = info_find(mb, t);
    if (found != NULL) {
        return found;
    }
    if (mb->n_infos == mb->cap_infos) {
        const size_t cap = mb->cap_infos ? 2 * mb->cap_infos : 64;
        struct meta_tensor_info * grown = realloc(mb->infos, cap * sizeof *grown);
        if (grown == NULL) {
            return NULL;
        }
        mb->infos     = grown;
        mb->cap_infos = cap;
    }
    if (2 * (mb->n_infos + 1) > mb->cap_keys) {
        const size_t cap = mb->cap_keys ? 2 * mb->cap_keys : 128;
        const struct ggml_tensor ** keys = calloc(cap, sizeof *keys);
        uint32_t * vals = calloc(cap, sizeof *vals);
        if (keys == NULL || vals == NULL) {
            free(keys);
            free(vals);
            return NULL;
        }
        free(mb->keys);
        free(mb->vals);
        mb->keys     = keys;
        mb->vals     = vals;
        mb->cap_keys = cap;
        for (size_t k = 0; k < mb->n_infos; k++) {
            const size_t i = key_slot(mb, mb->infos[k].tensor);
            mb->keys[i] = mb->infos[k].tensor;
            mb->vals[i] = (uint32_t) k + 1;
        }
    }
    struct meta_tensor_info * info = &mb->infos[mb->n_infos++];
    memset(info, 0, sizeof *info);
    info->tensor = t;
    ggmlx_meta_split_mirrored(&info->split);
    const size_t i = key_slot(mb, t);
    mb->keys[i] = t;
    mb->vals[i] = (uint32_t) mb->n_infos;
    return info;
}

/*
 * caller holds mb->lock; drops t's entry. The probe chain is closed by shifting later entries
 * back (no tombstones), and the last info moves into the freed place, so the table stays as
 * large as the tensors that are split now, however many graphs come and go.
 */
static void info_forget(struct meta_buffer * mb, const struct ggml_tensor * t) {
    if (mb->cap_keys == 0) {
        return;
    }
    const size_t mask = mb->cap_keys - 1;
    size_t i = key_slot(mb, t);
    if (mb->keys[i] != t) {
        return;
    }
    const size_t idx = mb->vals[i] - 1;
    for (size_t j = (i + 1) & mask; mb->keys[j] != NULL; j = (j + 1) & mask) {
        const size_t h = key_home(mb, mb->keys[j]);
        const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            mb->keys[i] = mb->keys[j];
            mb->vals[i] = mb->vals[j];
            i = j;
        }
    }
    mb->keys[i] = NULL;
    mb->vals[i] = 0;
    const size_t last = mb->n_infos - 1;
    if (idx != last) {
        mb->infos[idx] = mb->infos[last];
        mb->vals[key_slot(mb, mb->infos[idx].tensor)] = (uint32_t) idx + 1;
    }
    mb->n_infos--;
}

struct meta_buffer * ggmlx_meta_buffer_of(ggml_backend_buffer_t buf) {
    return buf != NULL && ggml_backend_buft_is_meta(buf->buft) ? buf->context : NULL;
}

static const struct ggml_tensor * root_of(const struct ggml_tensor * t) {
    return t->view_src != NULL ? t->view_src : t;
}

bool ggmlx_meta_buffer_get_split(const struct ggml_tensor * t, struct meta_split * out) {
    struct meta_buffer * mb = ggmlx_meta_buffer_of(ggmlx_tensor_buffer(t));
    if (mb == NULL) {
        return false;
    }
    pthread_mutex_lock(&mb->lock);
    const struct meta_tensor_info * info = info_find(mb, t);
    if (info != NULL) {
        *out = info->split;
    } else {
        memset(out, 0, sizeof *out);
        ggmlx_meta_split_mirrored(out);
    }
    pthread_mutex_unlock(&mb->lock);
    return true;
}

bool ggmlx_meta_buffer_set_split(const struct ggml_tensor * t, const struct meta_split * s) {
    struct meta_buffer * mb = ggmlx_meta_buffer_of(ggmlx_tensor_buffer(t));
    if (mb == NULL || mb->compact) {
        return mb != NULL; /* a weight's split is fixed when it is allocated */
    }
    pthread_mutex_lock(&mb->lock);
    struct meta_tensor_info * info = info_get(mb, t);
    if (info != NULL) {
        info->split = *s;
    }
    pthread_mutex_unlock(&mb->lock);
    return info != NULL;
}

/* ---- where device d keeps a tensor ------------------------------------------------------------- */

static void dense_strides(enum ggml_type type, const int64_t ne[GGML_MAX_DIMS], size_t nb[GGML_MAX_DIMS]) {
    nb[0] = ggml_type_size(type);
    nb[1] = ggml_row_size(type, ne[0]);
    for (int i = 2; i < GGML_MAX_DIMS; i++) {
        nb[i] = nb[i - 1] * (size_t) ne[i - 1];
    }
}

bool ggmlx_meta_buffer_dev_view(const struct ggml_tensor * t, const struct meta_split * s, size_t d, struct meta_dev_view * out) {
    struct meta_buffer * mb = ggmlx_meta_buffer_of(ggmlx_tensor_buffer(t));
    if (mb == NULL || d >= mb->mdev->n) {
        return false;
    }
    memcpy(out->ne, t->ne, sizeof out->ne);
    memcpy(out->nb, t->nb, sizeof out->nb);
    out->buffer = mb->bufs[d];
    char * dev_base = ggml_backend_buffer_get_base(mb->bufs[d]);
    if (!mb->compact) {
        size_t off = (size_t) ((const char *) t->data - mb->base);
        if (meta_split_is_axis(s)) {
            if (s->n_seg != 1) {
                return false;
            }
            out->ne[s->axis] = s->len[0][d];
            off += meta_axis_bytes(t, s->axis, ggmlx_meta_split_start(s, mb->mdev->n, 0, d));
        }
        out->data = dev_base + off;
        return true;
    }
    const struct ggml_tensor * r = root_of(t);
    pthread_mutex_lock(&mb->lock);
    const struct meta_tensor_info * info = info_find(mb, r);
    const size_t dev_off = info != NULL ? info->dev_offset[d] : 0;
    const bool split = info != NULL && meta_split_is_axis(&info->split);
    pthread_mutex_unlock(&mb->lock);
    if (info == NULL) {
        return false;
    }
    if (!split) {
        /* a mirrored weight is whole on each device: views keep their place in it */
        out->data = dev_base + dev_off + ((const char *) t->data - (const char *) r->data);
        return true;
    }
    if (t != r || !meta_split_is_axis(s)) {
        return false; /* views of split weights are made by the graph code from the weight's own view */
    }
    out->ne[s->axis] = ggmlx_meta_split_dev_len(s, mb->mdev->n, d);
    dense_strides(t->type, out->ne, out->nb);
    out->data = dev_base + dev_off;
    return true;
}

/* ---- runs: the byte ranges of a tensor device d holds ------------------------------------------- */

/*
 * Calls fn for each run of root tensor r (contiguous) that device d holds under split s,
 * clipped to [lo, hi): full = byte offset in the whole tensor, dev = offset in the device's
 * copy (relative to where the device keeps r), n = bytes.
 */
typedef void (*run_fn)(void * ud, size_t d, size_t full, size_t dev, size_t n);

static void for_each_run(const struct ggml_tensor * r, const struct meta_split * s, size_t n_devs, size_t d,
                         bool compact, size_t lo, size_t hi, run_fn fn, void * ud) {
    if (!meta_split_is_axis(s)) {
        if (hi > lo) {
            fn(ud, d, lo, lo, hi - lo);
        }
        return;
    }
    const int    a     = s->axis;
    const size_t block = meta_axis_bytes(r, a, r->ne[a]); /* axis a and everything below it */
    const size_t dev_block = meta_axis_bytes(r, a, ggmlx_meta_split_dev_len(s, n_devs, d));
    const size_t outer = block > 0 ? ggml_nbytes(r) / block : 0;
    for (size_t o = 0; o < outer; o++) {
        size_t dev_pos = o * dev_block;
        for (uint32_t k = 0; k < s->n_seg; k++) {
            const size_t n     = meta_axis_bytes(r, a, s->len[k][d]);
            const size_t start = o * block + meta_axis_bytes(r, a, ggmlx_meta_split_start(s, n_devs, k, d));
            const size_t b0 = start > lo ? start : lo;
            const size_t b1 = start + n < hi ? start + n : hi;
            if (b1 > b0) {
                fn(ud, d, b0, (compact ? dev_pos : start) + (b0 - start), b1 - b0);
            }
            dev_pos += n;
        }
    }
}

struct io_job {
    struct meta_buffer * mb;
    size_t               dev_base_off[META_MAX]; /* where each device keeps the root, in its buffer */
    size_t               full_base;              /* offset of the accessed range within the root */
    const uint8_t      * src;
    uint8_t            * dst;
    uint8_t              value;
    ggml_backend_t       backend[META_MAX];      /* queued I/O when set */
};

/* a whole-buffer tensor per device, so the simple buffers' own (checked) calls can be used */
static void whole_tensor(ggml_backend_buffer_t buf, struct ggml_tensor * w) {
    memset(w, 0, sizeof *w);
    w->type   = GGML_TYPE_I8;
    w->buffer = buf;
    w->data   = ggml_backend_buffer_get_base(buf);
    w->ne[0]  = (int64_t) ggml_backend_buffer_get_size(buf);
    w->ne[1] = w->ne[2] = w->ne[3] = 1;
    w->nb[0]  = 1;
    w->nb[1] = w->nb[2] = w->nb[3] = (size_t) w->ne[0];
}

/* queued on backend[d] when the job has backends, else done now */
static void run_set(void * ud, size_t d, size_t full, size_t dev, size_t n) {
    struct io_job * j = ud;
    const void * src = j->src + (full - j->full_base);
    if (j->backend[d] != NULL) {
        ggml_backend_tensor_set_async(j->backend[d], &j->mb->whole[d], src, j->dev_base_off[d] + dev, n);
    } else {
        ggml_backend_tensor_set(&j->mb->whole[d], src, j->dev_base_off[d] + dev, n);
    }
}

static void run_get(void * ud, size_t d, size_t full, size_t dev, size_t n) {
    struct io_job * j = ud;
    void * dst = j->dst + (full - j->full_base);
    if (j->backend[d] != NULL) {
        ggml_backend_tensor_get_async(j->backend[d], &j->mb->whole[d], dst, j->dev_base_off[d] + dev, n);
    } else {
        ggml_backend_tensor_get(&j->mb->whole[d], dst, j->dev_base_off[d] + dev, n);
    }
}

static void run_memset(void * ud, size_t d, size_t full, size_t dev, size_t n) {
    (void) full;
    struct io_job * j = ud;
    ggml_backend_tensor_memset(&j->mb->whole[d], j->value, j->dev_base_off[d] + dev, n);
}

/*
 * Prepares an access of [offset, offset + size) of tensor t: its root, the root's split, where
 * each device keeps the root, and the range within the root. False with a message when the
 * access cannot be mapped (a view into a split tensor that is not the whole of it).
 */
static bool io_prepare(struct meta_buffer * mb, const struct ggml_tensor * t, size_t offset, struct io_job * j, struct meta_split * s, const struct ggml_tensor ** root, const char * func) {
    memset(j, 0, sizeof *j);
    j->mb = mb;
    const struct ggml_tensor * r = root_of(t);
    pthread_mutex_lock(&mb->lock);
    const struct meta_tensor_info * info = info_find(mb, r);
    if (info != NULL) {
        *s = info->split;
    } else {
        memset(s, 0, sizeof *s);
        ggmlx_meta_split_mirrored(s);
    }
    for (size_t d = 0; d < mb->mdev->n; d++) {
        j->dev_base_off[d] = mb->compact ? (info != NULL ? info->dev_offset[d] : 0)
                                         : (size_t) ((const char *) r->data - mb->base);
    }
    pthread_mutex_unlock(&mb->lock);
    const size_t view_off = (size_t) ((const char *) t->data - (const char *) r->data);
    if (meta_split_is_axis(s) && !ggml_is_contiguous(r)) {
        ggmlx_error(func, "tensor '%s' is split along axis %d but not contiguous", r->name, s->axis);
        return false;
    }
    if (meta_split_is_axis(s) && t != r && !(view_off == 0 && ggml_nbytes(t) == ggml_nbytes(r))) {
        ggmlx_error(func, "'%s' is a view into '%s', which is split along axis %d: access the whole tensor instead",
                    t->name, r->name, s->axis);
        return false;
    }
    j->full_base = view_off + offset;
    *root = r;
    return true;
}

/* ---- buffer interface ------------------------------------------------------------------------ */

static void meta_buffer_free(ggml_backend_buffer_t buffer) {
    struct meta_buffer * mb = buffer->context;
    for (size_t d = 0; d < mb->mdev->n; d++) {
        ggml_backend_buffer_free(mb->bufs[d]);
    }
    if (mb->base != NULL) {
        munmap(mb->base, mb->size > 0 ? mb->size : 1);
    }
    pthread_mutex_destroy(&mb->lock);
    free(mb->infos);
    free(mb->keys);
    free(mb->vals);
    free(mb);
}

static void * meta_buffer_get_base(ggml_backend_buffer_t buffer) {
    return ((struct meta_buffer *) buffer->context)->base;
}

/* writes (queued on backends[d] when backends is not NULL) */
static void meta_io_set(struct meta_buffer * mb, const struct ggml_tensor * tensor, const void * data, size_t offset,
                        size_t size, ggml_backend_t * backends) {
    struct io_job j;
    struct meta_split s;
    const struct ggml_tensor * r;
    if (!io_prepare(mb, tensor, offset, &j, &s, &r, "ggml_backend_tensor_set")) {
        return;
    }
    j.src = data;
    const size_t n = mb->mdev->n;
    if (backends != NULL) {
        memcpy(j.backend, backends, n * sizeof *backends);
    }
    if (s.axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL) {
        /* the sum of the parts must be the data: device 0 holds it, the others zero */
        for_each_run(r, &s, n, 0, mb->compact, j.full_base, j.full_base + size, run_set, &j);
        j.value = 0;
        for (size_t d = 1; d < n; d++) {
            if (backends != NULL) {
                ggml_backend_synchronize(backends[d]); /* a memset is not queued */
            }
            for_each_run(r, &s, n, d, mb->compact, j.full_base, j.full_base + size, run_memset, &j);
        }
        return;
    }
    for (size_t d = 0; d < n; d++) {
        for_each_run(r, &s, n, d, mb->compact, j.full_base, j.full_base + size, run_set, &j);
    }
}

static void meta_buffer_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, const void * data,
                                   size_t offset, size_t size) {
    meta_io_set(buffer->context, tensor, data, offset, size, NULL);
}

/* adds n elements of src into dst, both of a float type */
static bool add_into(enum ggml_type type, uint8_t * dst, const uint8_t * src, size_t bytes) {
    switch (type) {
    case GGML_TYPE_F32:
        for (size_t i = 0; i < bytes / 4; i++) {
            float a, b;
            memcpy(&a, dst + 4 * i, 4);
            memcpy(&b, src + 4 * i, 4);
            a += b;
            memcpy(dst + 4 * i, &a, 4);
        }
        return true;
    case GGML_TYPE_F16:
    case GGML_TYPE_BF16:
        for (size_t i = 0; i < bytes / 2; i++) {
            uint16_t a, b;
            memcpy(&a, dst + 2 * i, 2);
            memcpy(&b, src + 2 * i, 2);
            const float v = type == GGML_TYPE_F16 ? ggml_fp16_to_fp32(a) + ggml_fp16_to_fp32(b)
                                                  : ggml_bf16_to_fp32(*(ggml_bf16_t *) &a) + ggml_bf16_to_fp32(*(ggml_bf16_t *) &b);
            a = type == GGML_TYPE_F16 ? ggml_fp32_to_fp16(v) : ggml_fp32_to_bf16(v).bits;
            memcpy(dst + 2 * i, &a, 2);
        }
        return true;
    default:
        return false;
    }
}

/* reads (queued on backends[d] when backends is not NULL, except partial sums: added on the host) */
static void meta_io_get(struct meta_buffer * mb, const struct ggml_tensor * tensor, void * data, size_t offset,
                        size_t size, ggml_backend_t * backends) {
    struct io_job j;
    struct meta_split s;
    const struct ggml_tensor * r;
    if (!io_prepare(mb, tensor, offset, &j, &s, &r, "ggml_backend_tensor_get")) {
        return;
    }
    j.dst = data;
    const size_t n = mb->mdev->n;
    if (backends != NULL && s.axis != GGML_BACKEND_SPLIT_AXIS_PARTIAL) {
        memcpy(j.backend, backends, n * sizeof *backends);
    }
    if (backends != NULL && s.axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL) {
        for (size_t d = 0; d < n; d++) {
            ggml_backend_synchronize(backends[d]); /* the sum is made on the host, after the parts are done */
        }
    }
    if (s.axis == GGML_BACKEND_SPLIT_AXIS_MIRRORED) {
        for_each_run(r, &s, n, 0, mb->compact, j.full_base, j.full_base + size, run_get, &j);
        return;
    }
    if (s.axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL) {
        /* the value is the sum of the devices' parts */
        uint8_t * part = malloc(size > 0 ? size : 1);
        if (part == NULL) {
            ggmlx_error("ggml_backend_tensor_get", "out of host memory");
            return;
        }
        for_each_run(r, &s, n, 0, mb->compact, j.full_base, j.full_base + size, run_get, &j);
        j.dst = part;
        for (size_t d = 1; d < n; d++) {
            for_each_run(r, &s, n, d, mb->compact, j.full_base, j.full_base + size, run_get, &j);
            if (!add_into(r->type, data, part, size)) {
                ggmlx_error("ggml_backend_tensor_get", "tensor '%s' holds partial sums of type %s, which cannot be added",
                            r->name, ggml_type_name(r->type));
                break;
            }
        }
        free(part);
        return;
    }
    for (size_t d = 0; d < n; d++) {
        for_each_run(r, &s, n, d, mb->compact, j.full_base, j.full_base + size, run_get, &j);
    }
}

static void meta_buffer_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor * tensor, void * data,
                                   size_t offset, size_t size) {
    meta_io_get(buffer->context, tensor, data, offset, size, NULL);
}

bool ggmlx_meta_buffer_io_async(ggml_backend_t * backends, const struct ggml_tensor * tensor, void * host, const void * src,
                                size_t offset, size_t size) {
    struct meta_buffer * mb = ggmlx_meta_buffer_of(ggmlx_tensor_buffer(tensor));
    if (mb == NULL) {
        return false;
    }
    if (src != NULL) {
        meta_io_set(mb, tensor, src, offset, size, backends);
    } else {
        meta_io_get(mb, tensor, host, offset, size, backends);
    }
    return true;
}

static void meta_buffer_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor, uint8_t value,
                                      size_t offset, size_t size) {
    struct meta_buffer * mb = buffer->context;
    struct io_job j;
    struct meta_split s;
    const struct ggml_tensor * r;
    if (!io_prepare(mb, tensor, offset, &j, &s, &r, "ggml_backend_tensor_memset")) {
        return;
    }
    const size_t n = mb->mdev->n;
    for (size_t d = 0; d < n; d++) {
        j.value = s.axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL && d > 0 ? 0 : value;
        for_each_run(r, &s, n, d, mb->compact, j.full_base, j.full_base + size, run_memset, &j);
    }
}

static void meta_buffer_clear(ggml_backend_buffer_t buffer, uint8_t value) {
    struct meta_buffer * mb = buffer->context;
    for (size_t d = 0; d < mb->mdev->n; d++) {
        ggml_backend_buffer_clear(mb->bufs[d], value);
    }
}

/*
 * A tensor placed in a compute buffer starts MIRRORED. Its struct may sit where a tensor of an
 * earlier graph sat (a context's memory reused), and the split table is keyed by address, so
 * whatever that tensor left behind is dropped here. Weights' splits are fixed at allocation.
 */
static enum ggml_status meta_buffer_init_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor * tensor) {
    struct meta_buffer * mb = buffer->context;
    if (!mb->compact) {
        pthread_mutex_lock(&mb->lock);
        info_forget(mb, tensor);
        pthread_mutex_unlock(&mb->lock);
    }
    return GGML_STATUS_SUCCESS;
}

static const struct ggml_backend_buffer_i meta_buffer_iface = {
    .free_buffer   = meta_buffer_free,
    .get_base      = meta_buffer_get_base,
    .init_tensor   = meta_buffer_init_tensor,
    .memset_tensor = meta_buffer_memset_tensor,
    .set_tensor    = meta_buffer_set_tensor,
    .get_tensor    = meta_buffer_get_tensor,
    .set_tensor_2d = NULL,
    .get_tensor_2d = NULL,
    .cpy_tensor    = NULL,
    .clear         = meta_buffer_clear,
    .reset         = NULL,
};

/*
 * A meta buffer over the given per-device buffers (taken over, freed on failure) with a
 * reserved range of size bytes for the tensors' data pointers.
 */
static ggml_backend_buffer_t meta_buffer_make(struct meta_device * m, ggml_backend_buffer_t * bufs, size_t size,
                                              bool compact, const char * func) {
    struct meta_buffer * mb = calloc(1, sizeof *mb);
    void * base = mmap(NULL, size > 0 ? size : 1, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mb == NULL || base == MAP_FAILED) {
        ggmlx_error(func, "%s: could not reserve %zu bytes of address space", m->name, size);
        goto err;
    }
    mb->mdev    = m;
    mb->compact = compact;
    mb->base    = base;
    mb->size    = size;
    pthread_mutex_init(&mb->lock, NULL);
    memcpy(mb->bufs, bufs, m->n * sizeof *bufs);
    for (size_t d = 0; d < m->n; d++) {
        whole_tensor(bufs[d], &mb->whole[d]);
    }
    ggml_backend_buffer_t buf = ggml_backend_buffer_init(&m->buft, meta_buffer_iface, mb, size);
    if (buf == NULL) {
        pthread_mutex_destroy(&mb->lock);
        ggmlx_error(func, "out of host memory");
        goto err;
    }
    return buf;
err:
    if (base != MAP_FAILED && base != NULL) {
        munmap(base, size > 0 ? size : 1);
    }
    free(mb);
    for (size_t d = 0; d < m->n; d++) {
        ggml_backend_buffer_free(bufs[d]);
    }
    return NULL;
}

/* ---- buffer type --------------------------------------------------------------------------------- */

static const char * meta_buft_get_name(ggml_backend_buffer_type_t buft) {
    return ((struct meta_device *) buft->context)->buft_name;
}

static size_t meta_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    const struct meta_device * m = buft->context;
    size_t a = 1;
    for (size_t d = 0; d < m->n; d++) {
        const size_t ad = ggml_backend_buft_get_alignment(m->dev_bufts[d]);
        a = ad > a ? ad : a;
    }
    return a;
}

static size_t meta_buft_get_max_size(ggml_backend_buffer_type_t buft) {
    const struct meta_device * m = buft->context;
    size_t mx = SIZE_MAX;
    for (size_t d = 0; d < m->n; d++) {
        const size_t md = ggml_backend_buft_get_max_size(m->dev_bufts[d]);
        mx = md < mx ? md : mx;
    }
    return mx;
}

/* a compute buffer: every device gets the whole size (see meta-impl.h, FULL layout) */
static ggml_backend_buffer_t meta_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    struct meta_device * m = buft->context;
    ggml_backend_buffer_t bufs[META_MAX] = { 0 };
    for (size_t d = 0; d < m->n; d++) {
        bufs[d] = ggml_backend_buft_alloc_buffer(m->dev_bufts[d], size);
        if (bufs[d] == NULL) {
            ggmlx_error("ggml_backend_buft_alloc_buffer", "%s: device %s could not allocate %zu bytes", m->name,
                        ggml_backend_dev_name(m->devs[d]), size);
            for (size_t k = 0; k < d; k++) {
                ggml_backend_buffer_free(bufs[k]);
            }
            return NULL;
        }
    }
    return meta_buffer_make(m, bufs, size, false, "ggml_backend_buft_alloc_buffer");
}

/* bytes device d's dense piece of t needs under split s */
static size_t piece_alloc_size(const struct meta_device * m, size_t d, const struct ggml_tensor * t,
                               const struct meta_split * s) {
    struct ggml_tensor tmp = *t;
    if (meta_split_is_axis(s)) {
        tmp.ne[s->axis] = ggmlx_meta_split_dev_len(s, m->n, d);
        dense_strides(t->type, tmp.ne, tmp.nb);
    }
    return ggml_backend_buft_get_alloc_size(m->dev_bufts[d], &tmp);
}

/* weights: each device's buffer holds only its pieces, laid out densely one after another */
static ggml_backend_buffer_t meta_buft_alloc_ctx_tensors(ggml_backend_buffer_type_t buft, struct ggml_context * ctx) {
    static const char * func = "ggml_backend_alloc_ctx_tensors_from_buft";
    struct meta_device * m = buft->context;
    const size_t n = m->n;
    const size_t valign = meta_buft_get_alignment(buft);
    size_t dalign[META_MAX], dsize[META_MAX] = { 0 };
    for (size_t d = 0; d < n; d++) {
        dalign[d] = ggml_backend_buft_get_alignment(m->dev_bufts[d]);
    }

    size_t n_t = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        n_t += t->data == NULL && t->view_src == NULL;
    }
    if (n_t == 0) {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: every tensor of the context is already allocated\n", func);
        return NULL;
    }
    struct meta_tensor_info * infos = calloc(n_t, sizeof *infos);
    size_t * voffs = calloc(n_t, sizeof *voffs);
    ggml_backend_buffer_t bufs[META_MAX] = { 0 };
    ggml_backend_buffer_t buf = NULL;
    if (infos == NULL || voffs == NULL) {
        ggmlx_error(func, "out of host memory");
        goto err;
    }

    /* ask for and check every split before allocating anything */
    size_t vsize = 0, k = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (t->data != NULL || t->view_src != NULL) {
            continue;
        }
        const struct ggml_backend_meta_split_state u = m->get_split_state(t, m->ud);
        if (!ggmlx_meta_split_from_user(&u, t, n, &infos[k].split, func)) {
            goto err;
        }
        if (meta_split_is_axis(&infos[k].split) && !ggml_is_contiguous(t)) {
            ggmlx_error(func, "tensor '%s' is split but not contiguous", t->name);
            goto err;
        }
        infos[k].tensor = t;
        for (size_t d = 0; d < n; d++) {
            infos[k].dev_offset[d] = dsize[d];
            dsize[d] += GGML_PAD(piece_alloc_size(m, d, t, &infos[k].split), dalign[d]);
        }
        voffs[k] = vsize;
        vsize += GGML_PAD(ggml_backend_buft_get_alloc_size(buft, t), valign);
        k++;
    }
    for (size_t d = 0; d < n; d++) {
        bufs[d] = ggml_backend_buft_alloc_buffer(m->dev_bufts[d], dsize[d] > 0 ? dsize[d] : dalign[d]);
        if (bufs[d] == NULL) {
            ggmlx_error(func, "%s: device %s could not allocate its %zu bytes of weights", m->name,
                        ggml_backend_dev_name(m->devs[d]), dsize[d]);
            goto err;
        }
    }
    buf = meta_buffer_make(m, bufs, vsize, true, func);
    memset(bufs, 0, sizeof bufs); /* taken over (or freed) by meta_buffer_make */
    if (buf == NULL) {
        goto err;
    }
    struct meta_buffer * mb = buf->context;
    for (size_t d = 0; d < n; d++) {
        mb->dev_size[d] = dsize[d];
    }
    for (size_t i = 0; i < k; i++) {
        struct meta_tensor_info * info = info_get(mb, infos[i].tensor);
        if (info == NULL) {
            ggmlx_error(func, "out of host memory");
            goto err_placed;
        }
        *info = infos[i];
    }
    for (size_t i = 0; i < k; i++) {
        if (ggmlx_tensor_place(buf, (struct ggml_tensor *) infos[i].tensor, mb->base + voffs[i]) != GGML_STATUS_SUCCESS) {
            goto err_placed;
        }
    }
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src != NULL && t->buffer == NULL && t->view_src->buffer == buf &&
            ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
            goto err_placed;
        }
    }
    free(infos);
    free(voffs);
    ggmlx_ok();
    return buf;

err_placed:
    for (size_t i = 0; i < k; i++) {
        struct ggml_tensor * t = (struct ggml_tensor *) infos[i].tensor;
        if (t->buffer == buf) {
            t->buffer = NULL;
            t->data   = NULL;
        }
    }
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src != NULL && t->buffer == buf) {
            t->buffer = NULL;
            t->data   = NULL;
        }
    }
    ggml_backend_buffer_free(buf);
err:
    for (size_t d = 0; d < n; d++) {
        ggml_backend_buffer_free(bufs[d]);
    }
    free(infos);
    free(voffs);
    return NULL;
}

const struct ggml_backend_buffer_type_i ggmlx_meta_buft_iface = {
    .get_name          = meta_buft_get_name,
    .alloc_buffer      = meta_buft_alloc_buffer,
    .get_alignment     = meta_buft_get_alignment,
    .get_max_size      = meta_buft_get_max_size,
    .get_alloc_size    = NULL,
    .is_host           = NULL,
    .alloc_ctx_tensors = meta_buft_alloc_ctx_tensors,
};

bool ggml_backend_buffer_is_meta(ggml_backend_buffer_t buf) {
    return ggmlx_meta_buffer_of(buf) != NULL;
}

size_t ggmlx_meta_buffer_device_size(ggml_backend_buffer_t buffer, size_t i) {
    const struct meta_buffer * mb = ggmlx_meta_buffer_of(buffer);
    if (mb == NULL || i >= mb->mdev->n) {
        return 0;
    }
    return mb->compact ? mb->dev_size[i] : ggml_backend_buffer_get_size(mb->bufs[i]);
}

ggml_backend_buffer_t ggml_backend_meta_alloc_ctx_tensors_from_buft(struct ggml_context * ctx,
                                                                    ggml_backend_buffer_type_t buft) {
    if (ctx == NULL || ggmlx_meta_device_of_buft(buft) == NULL) {
        ggmlx_error(__func__, ctx == NULL ? "ctx is NULL" : "buft is not a meta buffer type");
        return NULL;
    }
    if (!ggml_get_no_alloc(ctx)) {
        ggmlx_error(__func__, "ctx must be a no_alloc context (its tensors have memory of their own)");
        return NULL;
    }
    ggmlx_clear_last_error();
    return meta_buft_alloc_ctx_tensors(buft, ctx);
}
