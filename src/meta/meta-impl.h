/*
 * meta-impl.h -- the meta device's internals: one device made of several (tensor parallelism).
 *
 * Layout of a tensor on the devices (docs/multi-gpu.md):
 *  - A tensor is MIRRORED (every device holds all of it), PARTIAL (every device holds a whole
 *    tensor and the value is their sum) or split along one axis, each device holding a list of
 *    intervals along it (one per segment).
 *  - Weights (buffers made by ggml_backend_alloc_ctx_tensors_from_buft) are COMPACT: each
 *    device stores its intervals as one dense tensor, so it holds only its share.
 *  - Compute buffers (made by alloc_buffer, i.e. by the allocators) are FULL: every device has
 *    a buffer of the whole size and keeps each tensor where it lies in the meta buffer, touching
 *    only its own elements. So the allocators' in-place reuse stays valid element by element.
 */
#ifndef GGMLX_META_IMPL_H
#define GGMLX_META_IMPL_H

#include "ggml-backend-impl.h"
#include "ggmlx-backend.h"
#include "ggmlx-meta.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define META_MAX GGML_BACKEND_META_MAX_DEVICES
#define META_MAX_SEG 16

/* ---- split states ---------------------------------------------------------------------------- */

/* Where a tensor's values are: an axis 0..3, or GGML_BACKEND_SPLIT_AXIS_MIRRORED / _PARTIAL. */
struct meta_split {
    int      axis;
    uint32_t n_seg;                         /* segments along the axis (1 for compute tensors) */
    int64_t  len[META_MAX_SEG][META_MAX];   /* length of segment s on device d */
};

static inline bool meta_split_is_axis(const struct meta_split * s) { return s->axis >= 0 && s->axis < GGML_MAX_DIMS; }

/* start of device d's piece of segment s along the axis */
int64_t ggmlx_meta_split_start(const struct meta_split * s, size_t n_devs, uint32_t seg, size_t d);
/* device d's total length along the axis */
int64_t ggmlx_meta_split_dev_len(const struct meta_split * s, size_t n_devs, size_t d);
bool    ggmlx_meta_split_equal(const struct meta_split * a, const struct meta_split * b, size_t n_devs);
void    ggmlx_meta_split_mirrored(struct meta_split * s);

/*
 * Bytes that n elements of t take along axis a. Along axis 0 a quantized type packs a block of
 * elements into one nb[0], so the count goes through the type's block size there.
 */
static inline size_t meta_axis_bytes(const struct ggml_tensor * t, int a, int64_t n) {
    return a == 0 ? ggml_row_size(t->type, n) : (size_t) n * t->nb[a];
}

/*
 * Converts the user's state for tensor t into a meta_split; false with a message (naming t)
 * when the state is not valid for a statically allocated tensor.
 */
bool ggmlx_meta_split_from_user(const struct ggml_backend_meta_split_state * u, const struct ggml_tensor * t, size_t n_devs,
                                struct meta_split * out, const char * func);

/* ---- device ---------------------------------------------------------------------------------- */

struct meta_device {
    struct ggml_backend_device          dev;
    struct ggml_backend_buffer_type     buft;
    size_t                              n;
    ggml_backend_dev_t                  devs[META_MAX];
    ggml_backend_buffer_type_t          dev_bufts[META_MAX];
    ggml_backend_meta_get_split_state_t get_split_state;
    void                              * ud;
    char                                name[192];
    char                                buft_name[208];
    char                                description[512];
};

struct meta_device * ggmlx_meta_device_of(ggml_backend_dev_t dev);       /* NULL when not a meta device */
struct meta_device * ggmlx_meta_device_of_buft(ggml_backend_buffer_type_t buft);

extern const struct ggml_backend_buffer_type_i ggmlx_meta_buft_iface;

/* ---- buffers --------------------------------------------------------------------------------- */

/* a tensor of a meta buffer whose layout is not the default (MIRRORED) */
struct meta_tensor_info {
    const struct ggml_tensor * tensor;
    struct meta_split          split;
    size_t                     dev_offset[META_MAX]; /* COMPACT: where the device's dense piece starts */
};

struct meta_buffer {
    struct meta_device      * mdev;
    bool                      compact;        /* weights: per-device dense pieces */
    char                    * base;           /* reserved address range, never accessed */
    size_t                    size;
    ggml_backend_buffer_t     bufs[META_MAX]; /* one per device */
    size_t                    dev_size[META_MAX]; /* COMPACT: bytes of pieces on each device */
    struct ggml_tensor        whole[META_MAX];    /* each device's buffer as one tensor, for queued I/O */
    pthread_mutex_t           lock;           /* infos: compute records states from the queue caller */
    struct meta_tensor_info * infos;
    size_t                    n_infos, cap_infos;
    const struct ggml_tensor ** keys;         /* open addressing: tensor -> infos index + 1 */
    uint32_t                * vals;
    size_t                    cap_keys;
};

struct meta_buffer * ggmlx_meta_buffer_of(ggml_backend_buffer_t buf); /* NULL when not a meta buffer */

/* t's split in its meta buffer (MIRRORED when none was recorded); false when t is not in one */
bool ggmlx_meta_buffer_get_split(const struct ggml_tensor * t, struct meta_split * out);
/* records t's split (compute tensors, set by the meta backend); false when out of host memory */
bool ggmlx_meta_buffer_set_split(const struct ggml_tensor * t, const struct meta_split * s);

/*
 * Device d's view of meta tensor t (in a meta buffer) under split s: its ne, nb and data
 * pointer, and the simple buffer that owns the memory.
 */
struct meta_dev_view {
    int64_t               ne[GGML_MAX_DIMS];
    size_t                nb[GGML_MAX_DIMS];
    void                * data;
    ggml_backend_buffer_t buffer;
};
/*
 * Queued I/O of a meta tensor through the devices' backends: a write when src is not NULL, else
 * a read into host. False when tensor is not in a meta buffer.
 */
bool ggmlx_meta_buffer_io_async(ggml_backend_t * backends, const struct ggml_tensor * tensor, void * host, const void * src,
                                size_t offset, size_t size);

bool ggmlx_meta_buffer_dev_view(const struct ggml_tensor * t, const struct meta_split * s, size_t d, struct meta_dev_view * out);

/* ---- backend --------------------------------------------------------------------------------- */

struct meta_backend {
    struct meta_device                 * mdev;
    size_t                               n;
    ggml_backend_t                       simple[META_MAX];
    /* the registry's collectives, when the first device's registry offers them */
    void                               * comm;
    ggml_backend_comm_free_t             comm_free;
    ggml_backend_comm_allreduce_tensor_t comm_allreduce;
    /* temporaries of the generic all-reduce, one per device, grown as needed */
    ggml_backend_buffer_t                tmp[META_MAX];
    size_t                               tmp_size;
    struct ggmlx_meta_stats              stats;
    enum ggml_status                     status; /* sticky: first failure of a compute */
};

struct meta_backend * ggmlx_meta_backend_of(ggml_backend_t backend);
ggml_backend_t        ggmlx_meta_backend_new(struct meta_device * mdev, const char * params);

/* the graph computation (meta-graph.c) */
enum ggml_status ggmlx_meta_graph_compute(struct meta_backend * mb, struct ggml_cgraph * cgraph);

/*
 * Enqueues "each x[d] becomes the sum of all" (x[d] a tensor of backend d's memory, all of one
 * type and shape, contiguous); tmp[d] is a scratch tensor of the same shape on device d.
 */
enum ggml_status ggmlx_meta_allreduce_enqueue(ggml_backend_t * backends, struct ggml_tensor ** x, struct ggml_tensor ** tmp,
                                              size_t n);

/* per-op propagation of split states (meta-state.c) */
enum meta_rule {
    META_RULE_OK,       /* out and want[] are set */
    META_RULE_REDUCE,   /* source *reduce_src is PARTIAL and must be reduced first */
    META_RULE_REFUSE,   /* cannot run split this way: message in why */
};

struct meta_rule_result {
    struct meta_split out;
    struct meta_split want[GGML_MAX_SRC]; /* the layout each source must be given in */
    int               reduce_src;
    char              why[192];
};

enum meta_rule ggmlx_meta_rule_apply(const struct ggml_tensor * node, const struct meta_split * const * src, size_t n_devs,
                                     struct meta_rule_result * r);

/*
 * Whether a tensor with split have can be handed to a kernel as want on each device: equal, or
 * have MIRRORED and want an axis split (a view of each device's part), or the tensor broadcast
 * (extent 1) along want's axis.
 */
bool ggmlx_meta_can_view_as(const struct ggml_tensor * t, const struct meta_split * have, const struct meta_split * want,
                            size_t n_devs);

#endif /* GGMLX_META_IMPL_H */
