/*
 * tensor.c -- creating tensors, their names and flags, and shape/layout queries.
 */
#include "ggml-impl.h"

#include <stdio.h>

/* ---- creation ------------------------------------------------------------------------------ */

bool ggmlx_shape_elements(const int64_t * ne, int n, int64_t * out) {
    int64_t count = 1;
    for (int i = 0; i < n; i++) {
        if (ne[i] < 0 || __builtin_mul_overflow(count, ne[i], &count)) {
            return false;
        }
    }
    *out = count;
    return true;
}

/* Elements times bytes without overflow; false when the tensor could never exist (its bytes or,
 * for block types of more elements than bytes, its element count beyond INT64_MAX). */
static bool tensor_data_size(enum ggml_type type, const int64_t ne[GGML_MAX_DIMS], size_t * out) {
    int64_t n_elements;
    if (!ggmlx_shape_elements(ne, GGML_MAX_DIMS, &n_elements)) {
        return false;
    }
    const int64_t blck = ggml_blck_size(type);
    const uint64_t tsize = (uint64_t) ggml_type_size(type);
    if (tsize != 0 && (uint64_t) (ne[0] / blck) > (uint64_t) INT64_MAX / tsize) {
        return false;
    }
    uint64_t size = tsize * (uint64_t) (ne[0] / blck);
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        if (ne[i] != 0 && size > (uint64_t) INT64_MAX / (uint64_t) ne[i]) {
            return false;
        }
        size *= (uint64_t) ne[i];
    }
    *out = (size_t) size;
    return true;
}

struct ggml_tensor * ggmlx_new_tensor_impl(struct ggml_context * ctx, enum ggml_type type, int n_dims,
                                           const int64_t * ne, struct ggml_tensor * view_src, size_t view_offs,
                                           const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (!ggmlx_type_is_valid(type)) {
        ggmlx_ctx_fail(ctx, func, "unknown or removed tensor type %d", (int) type);
        return NULL;
    }
    if (n_dims < 1 || n_dims > GGML_MAX_DIMS || ne == NULL) {
        ggmlx_ctx_fail(ctx, func, "n_dims must be 1..%d (got %d) with a shape", GGML_MAX_DIMS, n_dims);
        return NULL;
    }
    int64_t shape[GGML_MAX_DIMS] = { 1, 1, 1, 1 };
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 0) {
            ggmlx_ctx_fail(ctx, func, "dimension %d is negative (%lld)", i, (long long) ne[i]);
            return NULL;
        }
        shape[i] = ne[i];
    }
    if (shape[0] % ggml_blck_size(type) != 0) {
        ggmlx_ctx_fail(ctx, func, "ne0 = %lld is not a multiple of the %s block size %lld",
                       (long long) shape[0], ggml_type_name(type), (long long) ggml_blck_size(type));
        return NULL;
    }
    size_t data_size;
    if (!tensor_data_size(type, shape, &data_size)) {
        ggmlx_ctx_fail(ctx, func, "tensor of [%lld, %lld, %lld, %lld] %s is too large", (long long) shape[0],
                       (long long) shape[1], (long long) shape[2], (long long) shape[3], ggml_type_name(type));
        return NULL;
    }

    if (view_src != NULL && view_src->view_src != NULL) {
        /* views always point at the tensor that owns the memory */
        size_t root_offs;
        if (__builtin_add_overflow(view_offs, view_src->view_offs, &root_offs)) {
            ggmlx_ctx_fail(ctx, func, "view offset %zu past the %zu of '%s' overflows", view_offs,
                           view_src->view_offs, view_src->name);
            return NULL;
        }
        view_offs = root_offs;
        view_src  = view_src->view_src;
    }
    if (view_src != NULL) {
        const size_t src_size = ggml_nbytes(view_src);
        if (view_offs > src_size || data_size > src_size - view_offs) {
            ggmlx_ctx_fail(ctx, func, "view of %zu bytes at offset %zu is outside the %zu bytes of '%s'",
                           data_size, view_offs, src_size, view_src->name);
            return NULL;
        }
    }

    const bool   owns_data  = view_src == NULL && !ctx->no_alloc;
    const size_t obj_size   = GGMLX_TENSOR_DATA_OFFSET + (owns_data ? data_size : 0);
    if (owns_data && obj_size < data_size) {
        ggmlx_ctx_fail(ctx, func, "tensor is too large");
        return NULL;
    }
    struct ggml_object * obj = ggmlx_ctx_new_object(ctx, GGML_OBJECT_TYPE_TENSOR, obj_size);
    if (obj == NULL) {
        return NULL;
    }
    struct ggml_tensor * t = (struct ggml_tensor *) ((char *) ctx->mem_buffer + obj->offs);
    memset(t, 0, sizeof *t);
    t->type      = type;
    t->buffer    = view_src ? view_src->buffer : NULL;
    t->op        = GGML_OP_NONE;
    t->view_src  = view_src;
    t->view_offs = view_offs;
    if (view_src != NULL) {
        t->data = view_src->data ? (char *) view_src->data + view_offs : NULL;
    } else if (owns_data) {
        t->data = (char *) t + GGMLX_TENSOR_DATA_OFFSET;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[i] = shape[i];
    }
    t->nb[0] = ggml_type_size(type);
    t->nb[1] = t->nb[0] * (size_t) (shape[0] / ggml_blck_size(type));
    for (int i = 2; i < GGML_MAX_DIMS; i++) {
        t->nb[i] = t->nb[i - 1] * (size_t) shape[i - 1];
    }
    ggmlx_ok();
    return t;
}

struct ggml_tensor * ggml_new_tensor(struct ggml_context * ctx, enum ggml_type type, int n_dims, const int64_t * ne) {
    GGMLX_CTX_CHECK(ctx);
    return ggmlx_new_tensor_impl(ctx, type, n_dims, ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_new_tensor_1d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0) {
    GGMLX_CTX_CHECK(ctx);
    const int64_t ne[1] = { ne0 };
    return ggmlx_new_tensor_impl(ctx, type, 1, ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_new_tensor_2d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1) {
    GGMLX_CTX_CHECK(ctx);
    const int64_t ne[2] = { ne0, ne1 };
    return ggmlx_new_tensor_impl(ctx, type, 2, ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_new_tensor_3d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                        int64_t ne2) {
    GGMLX_CTX_CHECK(ctx);
    const int64_t ne[3] = { ne0, ne1, ne2 };
    return ggmlx_new_tensor_impl(ctx, type, 3, ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_new_tensor_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                        int64_t ne2, int64_t ne3) {
    GGMLX_CTX_CHECK(ctx);
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return ggmlx_new_tensor_impl(ctx, type, 4, ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_dup_tensor(struct ggml_context * ctx, const struct ggml_tensor * src) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, src);
    return ggmlx_new_tensor_impl(ctx, src->type, GGML_MAX_DIMS, src->ne, NULL, 0, __func__);
}

struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * src) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, src);
    struct ggml_tensor * t = ggmlx_new_tensor_impl(ctx, src->type, GGML_MAX_DIMS, src->ne, src, 0, __func__);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (view)", src->name);
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->nb[i] = src->nb[i];
    }
    return t;
}

struct ggml_tensor * ggmlx_new_result(struct ggml_context * ctx, struct ggml_tensor * a, bool inplace, const char * func) {
    if (inplace) {
        struct ggml_tensor * t = ggml_view_tensor(ctx, a);
        if (t == NULL) {
            ggmlx_error(func, "cannot make the in-place result view");
        }
        return t;
    }
    return ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, a->ne, NULL, 0, func);
}

/* ---- walking a context --------------------------------------------------------------------- */

static struct ggml_tensor * tensor_of(const struct ggml_context * ctx, const struct ggml_object * obj) {
    return (struct ggml_tensor *) ((char *) ctx->mem_buffer + obj->offs);
}

struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx) {
    if (ctx == NULL) {
        return NULL;
    }
    for (const struct ggml_object * obj = ctx->objects_begin; obj != NULL; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TYPE_TENSOR) {
            return tensor_of(ctx, obj);
        }
    }
    return NULL;
}

struct ggml_tensor * ggml_get_next_tensor(const struct ggml_context * ctx, struct ggml_tensor * tensor) {
    if (ctx == NULL || tensor == NULL) {
        return NULL;
    }
    const struct ggml_object * obj = (const struct ggml_object *) ((const char *) tensor - GGMLX_OBJECT_SIZE);
    for (obj = obj->next; obj != NULL; obj = obj->next) {
        if (obj->type == GGML_OBJECT_TYPE_TENSOR) {
            return tensor_of(ctx, obj);
        }
    }
    return NULL;
}

struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name) {
    if (ctx == NULL || name == NULL) {
        ggmlx_error(__func__, "ctx or name is NULL");
        return NULL;
    }
    ggmlx_ok();
    for (struct ggml_tensor * t = ggml_get_first_tensor(ctx); t != NULL; t = ggml_get_next_tensor(ctx, t)) {
        if (strcmp(t->name, name) == 0) {
            return t;
        }
    }
    return NULL;
}

/* ---- names and flags ----------------------------------------------------------------------- */

const char * ggml_get_name(const struct ggml_tensor * tensor) {
    return tensor ? tensor->name : NULL;
}

/*
 * Naming the NULL of a failed constructor, as in ggml_set_name(ggml_add(...), "x"), must not
 * hide why the constructor failed: the pending error is carried into the new message.
 */
static void null_tensor_error(const char * func) {
    char pending[400];
    if (ggmlx_error_save(pending, sizeof pending)) {
        ggmlx_error(func, "tensor is NULL, after: %s", pending);
    } else {
        ggmlx_error(func, "tensor is NULL");
    }
}

struct ggml_tensor * ggml_set_name(struct ggml_tensor * tensor, const char * name) {
    if (tensor == NULL) {
        null_tensor_error(__func__);
        return NULL;
    }
    if (name == NULL) {
        ggmlx_error(__func__, "name is NULL");
        return NULL;
    }
    size_t i = 0;
    for (; i < sizeof tensor->name - 1 && name[i] != '\0'; i++) {
        tensor->name[i] = name[i];
    }
    tensor->name[i] = '\0';
    return tensor;
}

struct ggml_tensor * ggml_format_name(struct ggml_tensor * tensor, const char * fmt, ...) {
    if (tensor == NULL) {
        null_tensor_error(__func__);
        return NULL;
    }
    if (fmt == NULL) {
        ggmlx_error(__func__, "fmt is NULL");
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tensor->name, sizeof tensor->name, fmt, ap);
    va_end(ap);
    return tensor;
}

static void set_flag(struct ggml_tensor * tensor, int32_t flag, const char * func) {
    if (tensor == NULL) {
        ggmlx_error(func, "tensor is NULL");
        return;
    }
    tensor->flags |= flag;
}

void ggml_set_input(struct ggml_tensor * tensor) {
    set_flag(tensor, GGML_TENSOR_FLAG_INPUT, __func__);
}

void ggml_set_output(struct ggml_tensor * tensor) {
    set_flag(tensor, GGML_TENSOR_FLAG_OUTPUT, __func__);
}

void ggml_set_param(struct ggml_tensor * tensor) {
    if (tensor != NULL && tensor->op != GGML_OP_NONE) {
        ggmlx_error(__func__, "only a leaf (op NONE) can be a parameter, '%s' is %s", tensor->name,
                    ggml_op_name(tensor->op));
        return;
    }
    set_flag(tensor, GGML_TENSOR_FLAG_PARAM, __func__);
}

void ggml_set_loss(struct ggml_tensor * tensor) {
    if (tensor != NULL && (!ggml_is_scalar(tensor) || tensor->type != GGML_TYPE_F32)) {
        ggmlx_error(__func__, "a loss must be an F32 scalar, '%s' is %s", tensor->name, GGMLX_SHAPE(tensor));
        return;
    }
    set_flag(tensor, GGML_TENSOR_FLAG_LOSS, __func__);
}

/* ---- data ---------------------------------------------------------------------------------- */

void * ggml_get_data(const struct ggml_tensor * tensor) {
    return tensor ? tensor->data : NULL;
}

float * ggml_get_data_f32(const struct ggml_tensor * tensor) {
    if (tensor == NULL || tensor->type != GGML_TYPE_F32) {
        ggmlx_error(__func__, "tensor is NULL or not F32");
        return NULL;
    }
    return (float *) tensor->data;
}

struct ggml_tensor * ggml_set_zero(struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        ggmlx_error(__func__, "tensor is NULL");
        return NULL;
    }
    if (ggml_is_empty(tensor)) {
        return tensor;
    }
    if (tensor->data == NULL) {
        ggmlx_error(__func__, "tensor '%s' has no data", tensor->name);
        return NULL;
    }
    if (tensor->buffer != NULL) {
        ggmlx_error(__func__, "tensor '%s' lives in a backend buffer: use ggml_backend_tensor_memset", tensor->name);
        return NULL;
    }
    memset(tensor->data, 0, ggml_nbytes(tensor));
    return tensor;
}

void ggml_unravel_index(const struct ggml_tensor * tensor, int64_t i, int64_t * i0, int64_t * i1, int64_t * i2,
                        int64_t * i3) {
    if (tensor == NULL) {
        ggmlx_error(__func__, "tensor is NULL");
        return;
    }
    if (ggml_is_empty(tensor)) {
        ggmlx_error(__func__, "tensor '%s' %s is empty: it has no index %lld", tensor->name, GGMLX_SHAPE(tensor),
                    (long long) i);
        return;
    }
    if (i < 0 || i >= ggml_nelements(tensor)) {
        ggmlx_error(__func__, "index %lld is outside the %lld elements of '%s' %s", (long long) i,
                    (long long) ggml_nelements(tensor), tensor->name, GGMLX_SHAPE(tensor));
        return;
    }
    const int64_t ne0 = tensor->ne[0], ne1 = tensor->ne[1], ne2 = tensor->ne[2];
    const int64_t c3 = i / (ne2 * ne1 * ne0);
    const int64_t c2 = (i - c3 * ne2 * ne1 * ne0) / (ne1 * ne0);
    const int64_t c1 = (i - c3 * ne2 * ne1 * ne0 - c2 * ne1 * ne0) / ne0;
    const int64_t c0 = i - c3 * ne2 * ne1 * ne0 - c2 * ne1 * ne0 - c1 * ne0;
    if (i0) { *i0 = c0; }
    if (i1) { *i1 = c1; }
    if (i2) { *i2 = c2; }
    if (i3) { *i3 = c3; }
}

/* ---- shape and layout ---------------------------------------------------------------------- */

int64_t ggml_nelements(const struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        return 0;
    }
    return tensor->ne[0] * tensor->ne[1] * tensor->ne[2] * tensor->ne[3];
}

int64_t ggml_nrows(const struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        return 0;
    }
    return tensor->ne[1] * tensor->ne[2] * tensor->ne[3];
}

size_t ggml_nbytes(const struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        return 0;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (tensor->ne[i] <= 0) {
            return 0;
        }
    }
    /* the span from the first byte to the end of the last element, whatever the strides */
    const int64_t blck = ggml_blck_size(tensor->type);
    size_t span = blck == 1 ? ggml_type_size(tensor->type) : (size_t) (tensor->ne[0] / (blck ? blck : 1)) * tensor->nb[0];
    if (blck == 1) {
        span += (size_t) (tensor->ne[0] - 1) * tensor->nb[0];
    }
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        span += (size_t) (tensor->ne[i] - 1) * tensor->nb[i];
    }
    return span;
}

size_t ggml_nbytes_pad(const struct ggml_tensor * tensor) {
    return GGML_PAD(ggml_nbytes(tensor), GGML_MEM_ALIGN);
}

size_t ggml_element_size(const struct ggml_tensor * tensor) {
    return tensor ? ggml_type_size(tensor->type) : 0;
}

bool ggml_is_transposed(const struct ggml_tensor * tensor) {
    return tensor && tensor->nb[0] > tensor->nb[1];
}

bool ggml_is_permuted(const struct ggml_tensor * tensor) {
    return tensor && (tensor->nb[0] > tensor->nb[1] || tensor->nb[1] > tensor->nb[2] || tensor->nb[2] > tensor->nb[3]);
}

bool ggml_is_empty(const struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        return true;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (tensor->ne[i] == 0) {
            return true;
        }
    }
    return false;
}

bool ggml_is_scalar(const struct ggml_tensor * tensor) {
    return tensor && tensor->ne[0] == 1 && tensor->ne[1] == 1 && tensor->ne[2] == 1 && tensor->ne[3] == 1;
}

bool ggml_is_vector(const struct ggml_tensor * tensor) {
    return tensor && tensor->ne[1] == 1 && tensor->ne[2] == 1 && tensor->ne[3] == 1;
}

bool ggml_is_matrix(const struct ggml_tensor * tensor) {
    return tensor && tensor->ne[2] == 1 && tensor->ne[3] == 1;
}

bool ggml_is_3d(const struct ggml_tensor * tensor) {
    return tensor && tensor->ne[3] == 1;
}

int ggml_n_dims(const struct ggml_tensor * tensor) {
    if (tensor == NULL) {
        return 1;
    }
    for (int i = GGML_MAX_DIMS - 1; i >= 1; i--) {
        if (tensor->ne[i] > 1) {
            return i + 1;
        }
    }
    return 1;
}

/*
 * Contiguous in memory for dims above n: dims 1..n may have any stride (each is a separate
 * block), every dim above n must follow the one below it with no gap. Dims of size 1 never
 * matter, since their stride is never used.
 */
static bool is_contiguous_above(const struct ggml_tensor * t, int n) {
    const int64_t blck = ggml_blck_size(t->type);
    size_t expect = ggml_type_size(t->type);
    if (t->ne[0] != blck && t->nb[0] != expect) {
        return false;
    }
    expect *= (size_t) (t->ne[0] / (blck ? blck : 1));
    for (int i = 1; i < GGML_MAX_DIMS; i++) {
        if (t->ne[i] == 1) {
            continue;
        }
        if (i > n) {
            if (t->nb[i] != expect) {
                return false;
            }
            expect *= (size_t) t->ne[i];
        } else {
            expect = (size_t) t->ne[i] * t->nb[i];
        }
    }
    return true;
}

bool ggml_is_contiguous(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_above(tensor, 0);
}

bool ggml_is_contiguous_0(const struct ggml_tensor * tensor) {
    return ggml_is_contiguous(tensor);
}

bool ggml_is_contiguous_1(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_above(tensor, 1);
}

bool ggml_is_contiguous_2(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_above(tensor, 2);
}

bool ggml_is_contiguously_allocated(const struct ggml_tensor * tensor) {
    return tensor && ggml_nbytes(tensor) ==
                         (size_t) ggml_nelements(tensor) * ggml_type_size(tensor->type) / (size_t) ggml_blck_size(tensor->type);
}

bool ggml_is_contiguous_channels(const struct ggml_tensor * tensor) {
    return tensor && tensor->nb[0] > tensor->nb[2] && tensor->nb[1] > tensor->nb[0] &&
           tensor->nb[2] == ggml_type_size(tensor->type);
}

bool ggml_is_contiguous_rows(const struct ggml_tensor * tensor) {
    return tensor && (tensor->ne[0] == ggml_blck_size(tensor->type) || tensor->nb[0] == ggml_type_size(tensor->type));
}

bool ggml_are_same_shape(const struct ggml_tensor * t0, const struct ggml_tensor * t1) {
    if (t0 == NULL || t1 == NULL) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t0->ne[i] != t1->ne[i]) {
            return false;
        }
    }
    return true;
}

bool ggml_are_same_stride(const struct ggml_tensor * t0, const struct ggml_tensor * t1) {
    if (t0 == NULL || t1 == NULL) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t0->nb[i] != t1->nb[i]) {
            return false;
        }
    }
    return true;
}

bool ggml_can_repeat(const struct ggml_tensor * t0, const struct ggml_tensor * t1) {
    if (t0 == NULL || t1 == NULL) {
        return false;
    }
    if (ggml_is_empty(t0)) {
        return ggml_is_empty(t1);
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (t1->ne[i] % t0->ne[i] != 0) {
            return false;
        }
    }
    return true;
}

/* Dims below n are packed together (dim 0 one element apart, each next dim right after the last);
 * the dims from n on may have any stride. A dim of size 1 never breaks contiguity. */
static bool is_contiguous_below(const struct ggml_tensor * t, int n) {
    const int64_t blck = ggml_blck_size(t->type);
    size_t expect = ggml_type_size(t->type);
    if (t->ne[0] != blck && t->nb[0] != expect) {
        return false;
    }
    expect *= (size_t) (t->ne[0] / (blck ? blck : 1));
    for (int i = 1; i < n; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect) {
            return false;
        }
        expect *= (size_t) t->ne[i];
    }
    return true;
}

bool ggml_is_contiguous_to_1(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_below(tensor, 1);
}

bool ggml_is_contiguous_to_2(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_below(tensor, 2);
}

bool ggml_is_contiguous_to_3(const struct ggml_tensor * tensor) {
    return tensor && is_contiguous_below(tensor, 3);
}

/* a view shares another tensor's memory (ggml_view_*, reshape, permute, in-place results) */
bool ggml_is_view(const struct ggml_tensor * tensor) {
    return tensor && tensor->view_src != NULL;
}
