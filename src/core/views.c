/*
 * views.c -- ops that reinterpret or copy memory: views, reshapes, permutes, transposes, and
 * the copies (dup, cpy, cast, cont) that turn any layout into a contiguous tensor.
 */
#include "ggml-impl.h"

/* Byte span of a tensor's elements given its strides (0 when empty); SIZE_MAX when the caller's
 * strides make it overflow, which no memory can hold (ggml_nbytes would wrap to a small number). */
static size_t strided_span(const struct ggml_tensor * t) {
    if (ggml_is_empty(t)) {
        return 0;
    }
    const int64_t blck = ggml_blck_size(t->type);
    size_t span = ggml_type_size(t->type);
    int first = 0;
    if (blck != 1) {
        if (__builtin_mul_overflow((size_t) (t->ne[0] / blck), t->nb[0], &span)) {
            return SIZE_MAX;
        }
        first = 1;
    }
    for (int i = first; i < GGML_MAX_DIMS; i++) {
        size_t step;
        if (__builtin_mul_overflow((size_t) (t->ne[i] - 1), t->nb[i], &step) ||
            __builtin_add_overflow(span, step, &span)) {
            return SIZE_MAX;
        }
    }
    return span;
}

/* Checked after the strides are final: a view must stay inside the memory it looks at. */
static bool view_in_bounds(struct ggml_context * ctx, const struct ggml_tensor * view, const char * func) {
    const struct ggml_tensor * root = view->view_src;
    if (root == NULL) {
        return true;
    }
    const size_t span = strided_span(view);
    const size_t root_size = ggml_nbytes(root);
    if (span == SIZE_MAX) {
        ggmlx_ctx_fail(ctx, func, "view %s with strides (%zu, %zu, %zu, %zu) spans more bytes than memory can hold",
                       GGMLX_SHAPE(view), view->nb[0], view->nb[1], view->nb[2], view->nb[3]);
        return false;
    }
    if (view->view_offs > root_size || span > root_size - view->view_offs) {
        ggmlx_ctx_fail(ctx, func, "view %s at offset %zu spans %zu bytes, outside the %zu bytes of '%s'",
                       GGMLX_SHAPE(view), view->view_offs, span, root_size, root->name);
        return false;
    }
    return true;
}

static struct ggml_tensor * view_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_dims,
                                      const int64_t * ne, const size_t * nb, size_t offset, const char * func) {
    struct ggml_object * const before = ctx->objects_end;
    struct ggml_tensor * t = ggmlx_new_tensor_impl(ctx, a->type, n_dims, ne, a, offset, func);
    if (t == NULL) {
        return NULL;
    }
    if (nb != NULL) {
        for (int i = 1; i < GGML_MAX_DIMS; i++) {
            t->nb[i] = nb[i];
        }
        /* the strides are known only now: a refused view must not stay in the context */
        if (!view_in_bounds(ctx, t, func)) {
            ggmlx_ctx_rewind(ctx, before);
            return NULL;
        }
    }
    ggml_format_name(t, "%s (view)", a->name);
    memcpy(t->op_params, &offset, sizeof offset);
    t->op     = GGML_OP_VIEW;
    t->src[0] = a;
    return t;
}

struct ggml_tensor * ggml_view_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[1] = { ne0 };
    return view_impl(ctx, a, 1, ne, NULL, offset, __func__);
}

struct ggml_tensor * ggml_view_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  size_t nb1, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[2] = { ne0, ne1 };
    const size_t  nb[4] = { 0, nb1, nb1 * (size_t) ne1, nb1 * (size_t) ne1 };
    return view_impl(ctx, a, 2, ne, nb, offset, __func__);
}

struct ggml_tensor * ggml_view_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, size_t nb1, size_t nb2, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[3] = { ne0, ne1, ne2 };
    const size_t  nb[4] = { 0, nb1, nb2, nb2 * (size_t) ne2 };
    return view_impl(ctx, a, 3, ne, nb, offset, __func__);
}

struct ggml_tensor * ggml_view_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, int64_t ne3, size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    const size_t  nb[4] = { 0, nb1, nb2, nb3 };
    return view_impl(ctx, a, 4, ne, nb, offset, __func__);
}

/* ---- reshape ------------------------------------------------------------------------------- */

static struct ggml_tensor * reshape_impl(struct ggml_context * ctx, struct ggml_tensor * a, int n_dims,
                                         const int64_t * ne, const char * func) {
    if (!ggml_is_contiguous(a)) {
        ggmlx_ctx_fail(ctx, func, "cannot reshape non-contiguous %s; use ggml_cont first", GGMLX_SHAPE(a));
        return NULL;
    }
    int64_t n;
    if (!ggmlx_shape_elements(ne, n_dims, &n)) {
        ggmlx_ctx_fail(ctx, func, "cannot reshape %s to a shape with a negative dim or more than INT64_MAX "
                       "elements", GGMLX_SHAPE(a));
        return NULL;
    }
    if (n != ggml_nelements(a)) {
        ggmlx_ctx_fail(ctx, func, "cannot reshape %s (%lld elements) to %lld elements", GGMLX_SHAPE(a),
                       (long long) ggml_nelements(a), (long long) n);
        return NULL;
    }
    struct ggml_tensor * t = ggmlx_new_tensor_impl(ctx, a->type, n_dims, ne, a, 0, func);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (reshaped)", a->name);
    t->op     = GGML_OP_RESHAPE;
    t->src[0] = a;
    return t;
}

struct ggml_tensor * ggml_reshape(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    return reshape_impl(ctx, a, GGML_MAX_DIMS, b->ne, __func__);
}

struct ggml_tensor * ggml_reshape_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[1] = { ne0 };
    return reshape_impl(ctx, a, 1, ne, __func__);
}

struct ggml_tensor * ggml_reshape_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[2] = { ne0, ne1 };
    return reshape_impl(ctx, a, 2, ne, __func__);
}

struct ggml_tensor * ggml_reshape_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                     int64_t ne2) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[3] = { ne0, ne1, ne2 };
    return reshape_impl(ctx, a, 3, ne, __func__);
}

struct ggml_tensor * ggml_reshape_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                     int64_t ne2, int64_t ne3) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    return reshape_impl(ctx, a, 4, ne, __func__);
}

/* ---- permute and transpose ----------------------------------------------------------------- */

struct ggml_tensor * ggml_permute(struct ggml_context * ctx, struct ggml_tensor * a, int axis0, int axis1, int axis2,
                                  int axis3) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int axes[4] = { axis0, axis1, axis2, axis3 };
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        GGMLX_REQUIRE(ctx, axes[i] >= 0 && axes[i] < GGML_MAX_DIMS, "axis %d = %d is not in 0..3", i, axes[i]);
        seen |= 1 << axes[i];
    }
    GGMLX_REQUIRE(ctx, seen == 0xf, "axes (%d, %d, %d, %d) are not a permutation of 0..3", axis0, axis1, axis2, axis3);

    struct ggml_tensor * t = ggml_view_tensor(ctx, a);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (permuted)", a->name);
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        t->ne[axes[i]] = a->ne[i];
        t->nb[axes[i]] = a->nb[i];
    }
    t->op     = GGML_OP_PERMUTE;
    t->src[0] = a;
    memcpy(t->op_params, axes, sizeof axes);
    return t;
}

struct ggml_tensor * ggml_transpose(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    struct ggml_tensor * t = ggml_view_tensor(ctx, a);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (transposed)", a->name);
    t->ne[0] = a->ne[1];
    t->ne[1] = a->ne[0];
    t->nb[0] = a->nb[1];
    t->nb[1] = a->nb[0];
    t->op     = GGML_OP_TRANSPOSE;
    t->src[0] = a;
    return t;
}

/* ---- copies -------------------------------------------------------------------------------- */

static struct ggml_tensor * dup_impl(struct ggml_context * ctx, struct ggml_tensor * a, bool inplace, const char * func) {
    struct ggml_tensor * t = ggmlx_new_result(ctx, a, inplace, func);
    if (t == NULL) {
        return NULL;
    }
    t->op     = GGML_OP_DUP;
    t->src[0] = a;
    return t;
}

struct ggml_tensor * ggml_dup(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return dup_impl(ctx, a, false, __func__);
}

struct ggml_tensor * ggml_dup_inplace(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return dup_impl(ctx, a, true, __func__);
}

struct ggml_tensor * ggml_cpy(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, ggml_nelements(a) == ggml_nelements(b), "cannot copy %s into %s: element counts differ",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    struct ggml_tensor * t = ggml_view_tensor(ctx, b);
    if (t == NULL) {
        return NULL;
    }
    if (b->name[0] != '\0') {
        ggml_format_name(t, "%s (copy of %s)", b->name, a->name);
    } else {
        ggml_format_name(t, "%s (copy)", a->name);
    }
    t->op     = GGML_OP_CPY;
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

struct ggml_tensor * ggml_cast(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_type type) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    struct ggml_tensor * t = ggmlx_new_tensor_impl(ctx, type, GGML_MAX_DIMS, a->ne, NULL, 0, __func__);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (copy)", a->name);
    t->op     = GGML_OP_CPY;
    t->src[0] = a;
    t->src[1] = t; /* as upstream: a cast is a copy into itself */
    return t;
}

static struct ggml_tensor * cont_impl(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                      int64_t ne2, int64_t ne3, const char * func) {
    const int64_t n = ggml_nelements(a);
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    int64_t count;
    if (!ggmlx_shape_elements(ne, 4, &count) || count != n) {
        ggmlx_ctx_fail(ctx, func, "%s has %lld elements, not [%lld, %lld, %lld, %lld]", GGMLX_SHAPE(a), (long long) n,
                       (long long) ne0, (long long) ne1, (long long) ne2, (long long) ne3);
        return NULL;
    }
    struct ggml_tensor * t = ggmlx_new_tensor_impl(ctx, a->type, 4, ne, NULL, 0, func);
    if (t == NULL) {
        return NULL;
    }
    ggml_format_name(t, "%s (cont)", a->name);
    t->op     = GGML_OP_CONT;
    t->src[0] = a;
    return t;
}

struct ggml_tensor * ggml_cont(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return cont_impl(ctx, a, a->ne[0], a->ne[1], a->ne[2], a->ne[3], __func__);
}

struct ggml_tensor * ggml_cont_1d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return cont_impl(ctx, a, ne0, 1, 1, 1, __func__);
}

struct ggml_tensor * ggml_cont_2d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return cont_impl(ctx, a, ne0, ne1, 1, 1, __func__);
}

struct ggml_tensor * ggml_cont_3d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return cont_impl(ctx, a, ne0, ne1, ne2, 1, __func__);
}

struct ggml_tensor * ggml_cont_4d(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                  int64_t ne2, int64_t ne3) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return cont_impl(ctx, a, ne0, ne1, ne2, ne3, __func__);
}
