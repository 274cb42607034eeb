/*
 * ggml-impl.h -- internals shared by the core, the CPU backend and the tests.
 * Not installed: nothing here is part of the public API.
 */
#ifndef GGMLX_IMPL_H
#define GGMLX_IMPL_H

#include "ggml.h"
#include "ggmlx.h"
/* the functions other libraries call here are declared exported there first */
#include "ggmlx-backend-impl.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- objects and contexts ------------------------------------------------------------------ */

/* Header placed before each object in a context's memory; objects form a list in creation order. */
struct ggml_object {
    size_t                offs; /* of the object's payload, from the start of the context memory */
    size_t                size; /* of the payload */
    struct ggml_object  * next;
    enum ggml_object_type type;
    char                  padding[4];
};

#define GGMLX_OBJECT_SIZE sizeof(struct ggml_object)

/* Object payloads start at multiples of this, so tensor data suits aligned SIMD loads. */
#define GGMLX_CTX_ALIGN 64

/* A tensor's own data follows its struct at this offset into the object's payload. */
#define GGMLX_TENSOR_DATA_OFFSET GGML_PAD(sizeof(struct ggml_tensor), GGMLX_CTX_ALIGN)

struct ggml_context {
    size_t               mem_size;
    void               * mem_buffer;
    bool                 mem_buffer_owned;
    bool                 no_alloc;
    bool                 failed;      /* an op constructor failed: see docs/errors.md */
    int                  n_objects;
    struct ggml_object * objects_begin;
    struct ggml_object * objects_end;
};

/* Room for an object of `size` payload bytes; NULL (error recorded, ctx failed) when full. */
struct ggml_object * ggmlx_ctx_new_object(struct ggml_context * ctx, enum ggml_object_type type, size_t size);

/* Forget every object after `end` (NULL: all of them), so a constructor that fails after taking
 * its object leaves the context as it found it. */
void ggmlx_ctx_rewind(struct ggml_context * ctx, struct ggml_object * end);

/* Whether `size` bytes at `align` could ever be allocated on this host (padding cannot wrap,
 * and it fits in RAM plus swap); false means refuse before asking the allocator. */
bool ggmlx_host_size_possible(size_t size, size_t align);

/* ---- graphs -------------------------------------------------------------------------------- */

/* Open-addressing set of tensor pointers, used to visit each node once. */
struct ggmlx_hash_set {
    size_t                size;
    uint32_t            * used; /* bitset, one bit per slot */
    struct ggml_tensor ** keys;
};

#define GGMLX_HASH_FULL ((size_t) -1)

size_t ggmlx_hash_size(size_t min_size);           /* a prime >= min_size */
size_t ggmlx_hash_find(const struct ggmlx_hash_set * hs, const struct ggml_tensor * key); /* slot or GGMLX_HASH_FULL */
bool   ggmlx_hash_contains(const struct ggmlx_hash_set * hs, const struct ggml_tensor * key);
size_t ggmlx_hash_insert(struct ggmlx_hash_set * hs, struct ggml_tensor * key); /* slot; GGMLX_HASH_FULL when full */

struct ggml_cgraph {
    int                    size;    /* capacity of nodes and leafs */
    int                    n_nodes;
    int                    n_leafs;
    struct ggml_tensor  ** nodes;   /* ops, in an order where sources come first */
    struct ggml_tensor  ** leafs;   /* inputs and constants (op NONE) */
    struct ggmlx_hash_set  visited;
    bool                   failed;
    bool                   is_view; /* nodes are borrowed from another graph: no hash set */
    uint64_t               uid;
    /* with gradients (ggml_new_graph_custom(..., true)): per slot of visited, the gradient of the
     * tensor in that slot and its accumulator (a tensor the gradient is added into in place) */
    struct ggml_tensor  ** grads;
    struct ggml_tensor  ** grad_accs;
};

/* A fresh process-wide graph identity, never 0. */
uint64_t ggmlx_next_graph_uid(void);

/* ---- errors and logging -------------------------------------------------------------------- */

void ggmlx_log(enum ggml_log_level level, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
void ggmlx_logv(enum ggml_log_level level, const char * fmt, va_list ap);

/*
 * Record an error for the calling thread (ggmlx_last_error) and log it at ERROR level, prefixed
 * with the public function's name. Under GGMLX_ON_ERROR=abort, aborts instead (upstream's way).
 */
void ggmlx_error(const char * func, const char * fmt, ...) __attribute__((format(printf, 2, 3)));
void ggmlx_errorv(const char * func, const char * fmt, va_list ap);

/* A public entry point that succeeded: clear the thread's last error. */
void ggmlx_ok(void);

/*
 * The thread's error across internal calls of public functions that clear it when they succeed
 * (a failed call that then synchronizes or frees): save copies it (false when there is none),
 * restore records it again without logging it a second time.
 */
bool ggmlx_error_save(char * buf, size_t size);
void ggmlx_error_restore(const char * saved);

/* Record an error and mark ctx failed (ctx may be NULL). */
void ggmlx_ctx_fail(struct ggml_context * ctx, const char * func, const char * fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Checks at the top of an op constructor. On failure: error recorded, context marked failed,
 * NULL returned from the enclosing function.
 */
#define GGMLX_CTX_CHECK(ctx)                                                                  \
    do {                                                                                      \
        if ((ctx) == NULL) {                                                                  \
            ggmlx_error(__func__, "ctx is NULL");                                             \
            return NULL;                                                                      \
        }                                                                                     \
        if ((ctx)->failed) {                                                                  \
            ggmlx_error(__func__, "context already failed by an earlier op (see the first error)"); \
            return NULL;                                                                      \
        }                                                                                     \
    } while (0)

#define GGMLX_REQUIRE(ctx, cond, ...)                                                         \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            ggmlx_ctx_fail((ctx), __func__, __VA_ARGS__);                                     \
            return NULL;                                                                      \
        }                                                                                     \
    } while (0)

/* Each listed tensor argument must be non-NULL. */
#define GGMLX_REQUIRE_TENSOR(ctx, t) GGMLX_REQUIRE(ctx, (t) != NULL, "tensor argument '%s' is NULL", #t)

/* "[4, 3, 1, 1] f32" into buf, for messages */
const char * ggmlx_shape_str(const struct ggml_tensor * t, char * buf, size_t n);
#define GGMLX_SHAPE(t) ggmlx_shape_str((t), (char[96]){0}, 96)

/* ---- tensors ------------------------------------------------------------------------------- */

/* The element count of shape ne[0..n-1] into *out; false when a dim is negative or the count
 * does not fit in int64 (so callers never multiply into signed overflow). */
bool ggmlx_shape_elements(const int64_t * ne, int n, int64_t * out);

/*
 * New tensor: with view_src, a view at view_offs bytes into view_src's data (no memory taken);
 * otherwise data from the context unless no_alloc. Contiguous strides. NULL on error (ctx failed).
 */
struct ggml_tensor * ggmlx_new_tensor_impl(struct ggml_context * ctx, enum ggml_type type, int n_dims,
                                           const int64_t * ne, struct ggml_tensor * view_src, size_t view_offs,
                                           const char * func);

/* t (argument `name` of func) is a tensor of type F32; else error recorded, ctx failed, false */
static inline bool ggmlx_require_f32(struct ggml_context * ctx, const struct ggml_tensor * t, const char * name,
                                     const char * func) {
    if (t == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", name);
        return false;
    }
    if (t->type != GGML_TYPE_F32) {
        ggmlx_ctx_fail(ctx, func, "%s must be F32, got %s", name, GGMLX_SHAPE(t));
        return false;
    }
    return true;
}

/* diag_mask_inf / diag_mask_zero (op): op_params i32 [0] n_past, as upstream */
struct ggml_tensor * ggmlx_diag_mask_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_past,
                                          enum ggml_op op, bool inplace, const char * func);

/* A new op result: like a, or a view of a for in-place ops. */
struct ggml_tensor * ggmlx_new_result(struct ggml_context * ctx, struct ggml_tensor * a, bool inplace, const char * func);

static inline void ggmlx_set_op_params(struct ggml_tensor * t, const void * params, size_t size) {
    memcpy(t->op_params, params, size); /* callers pass at most GGML_MAX_OP_PARAMS */
}

static inline int32_t ggmlx_get_op_params_i32(const struct ggml_tensor * t, int i) {
    return t->op_params[i];
}

static inline float ggmlx_get_op_params_f32(const struct ggml_tensor * t, int i) {
    float f;
    memcpy(&f, &t->op_params[i], sizeof f);
    return f;
}

static inline void ggmlx_set_op_params_i32(struct ggml_tensor * t, int i, int32_t v) {
    t->op_params[i] = v;
}

static inline void ggmlx_set_op_params_f32(struct ggml_tensor * t, int i, float v) {
    memcpy(&t->op_params[i], &v, sizeof v);
}

/* true for ops that only reinterpret memory (no computation) */
static inline bool ggmlx_op_is_view(enum ggml_op op) {
    return op == GGML_OP_NONE || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE ||
           op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

/* Output length of a convolution along one dim (input in, kernel k, stride s, padding p,
 * dilation d), <= 0 when the kernel does not fit; and of a pooling window (upstream's formula,
 * padding as a float). Shared by the ops and their backward ops. */
static inline int64_t ggmlx_conv_out(int64_t in, int64_t k, int s, int p, int d) {
    if (s <= 0 || d <= 0 || k <= 0) {
        return -1;
    }
    const int64_t span = (int64_t) d * (k - 1) + 1;
    const int64_t room = in + 2 * (int64_t) p - span;
    /*
     * C's division truncates toward zero, as upstream's ggml_calc_conv_output_size does: a window
     * that overhangs the padded input by less than a stride still gives one output (its missing
     * taps read as zero); upstream's test-backend-ops builds such convolutions.
     */
    return room / s + 1;
}

static inline int64_t ggmlx_pool_out(int64_t in, int k, int s, float p) {
    return (int64_t) (((double) in + 2.0 * (double) p - (double) k) / (double) s + 1.0);
}

/* true when type is a declared, non-removed type */
bool ggmlx_type_is_valid(enum ggml_type type);

/* byte offset of element (i0, i1, i2, i3) */
static inline size_t ggmlx_offset(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (size_t)i0 * t->nb[0] + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3];
}

#endif /* GGMLX_IMPL_H */
