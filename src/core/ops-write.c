/*
 * ops-write.c -- constructors of the ops that write into (part of) a tensor or fill it:
 * SET and ACC (op_params i32 [0..4] nb1, nb2, nb3, offset, inplace, as upstream: b lands in the
 * view of a those strides and byte offset describe), FILL (f32 [0] the value), TRI (i32 [0] the
 * ggml_tri_type), DIAG (a row vector spread on the diagonal of a square matrix), ROLL (i32 [0..3]
 * the shifts) and SOLVE_TRI (no op_params: upstream implements one variant).
 */
#include "ggml-impl.h"

#include <limits.h>

/*
 * The view of a with strides nb1..nb3 (bytes) at byte offset `offset`, shaped like b, must lie
 * inside a: its last element starts at offset + sum((ne_i - 1) * nb_i), and b's elements are
 * a's type, one element wide.
 */
static bool view_fits(const struct ggml_tensor * a, const struct ggml_tensor * b, const size_t nb[4], size_t offset) {
    if (ggml_nelements(b) == 0) {
        return offset <= ggml_nbytes(a);
    }
    size_t last = offset;
    for (int d = 0; d < 4; d++) {
        size_t step;
        if (__builtin_mul_overflow((size_t) (b->ne[d] - 1), nb[d], &step) || __builtin_add_overflow(last, step, &last)) {
            return false;
        }
    }
    size_t end;
    return !__builtin_add_overflow(last, nb[0], &end) && end <= ggml_nbytes(a);
}

static bool is_float(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

static struct ggml_tensor * set_acc_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         size_t nb1, size_t nb2, size_t nb3, size_t offset, bool inplace,
                                         enum ggml_op op, const char * func) {
    if (a == NULL || b == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", a == NULL ? "a" : "b");
        return NULL;
    }
    if (ggml_nelements(b) > ggml_nelements(a)) {
        ggmlx_ctx_fail(ctx, func, "b %s has more elements than a %s", GGMLX_SHAPE(b), GGMLX_SHAPE(a));
        return NULL;
    }
    if (op == GGML_OP_ACC && (a->type != GGML_TYPE_F32 || b->type != GGML_TYPE_F32)) {
        ggmlx_ctx_fail(ctx, func, "a and b must be F32, got a %s, b %s", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    if (op == GGML_OP_SET && !(is_float(a->type) && is_float(b->type)) &&
        (a->type != b->type || ggml_blck_size(a->type) != 1)) {
        ggmlx_ctx_fail(ctx, func, "a %s and b %s must be float types (F32, F16, BF16) or the same one-element type",
                       GGMLX_SHAPE(a), GGMLX_SHAPE(b));
        return NULL;
    }
    if (!ggml_is_contiguous(a)) {
        ggmlx_ctx_fail(ctx, func, "a must be contiguous (the strides and offset address its memory), got %s",
                       GGMLX_SHAPE(a));
        return NULL;
    }
    /* upstream keeps the strides and offset as int32 op_params */
    if (nb1 > INT32_MAX || nb2 > INT32_MAX || nb3 > INT32_MAX || offset > INT32_MAX) {
        ggmlx_ctx_fail(ctx, func, "nb1 %zu, nb2 %zu, nb3 %zu and offset %zu must each fit in int32", nb1, nb2, nb3,
                       offset);
        return NULL;
    }
    const size_t nb[4] = { ggml_type_size(a->type), nb1, nb2, nb3 };
    if (!view_fits(a, b, nb, offset)) {
        ggmlx_ctx_fail(ctx, func, "b %s placed at offset %zu with strides %zu, %zu, %zu reaches past a %s (%zu bytes)",
                       GGMLX_SHAPE(b), offset, nb1, nb2, nb3, GGMLX_SHAPE(a), ggml_nbytes(a));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[5] = { (int32_t) nb1, (int32_t) nb2, (int32_t) nb3, (int32_t) offset, inplace ? 1 : 0 };
    ggmlx_set_op_params(result, params, sizeof(params));
    result->op     = op;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_set(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, size_t nb1,
                              size_t nb2, size_t nb3, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, false, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_set_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, true, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_set_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                 size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return set_acc_impl(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset, false, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_set_1d_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return set_acc_impl(ctx, a, b, a->nb[1], a->nb[2], a->nb[3], offset, true, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_set_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, size_t nb1,
                                 size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return set_acc_impl(ctx, a, b, nb1, a->nb[2], a->nb[3], offset, false, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_set_2d_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         size_t nb1, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return set_acc_impl(ctx, a, b, nb1, a->nb[2], a->nb[3], offset, true, GGML_OP_SET, __func__);
}

struct ggml_tensor * ggml_acc(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, size_t nb1,
                              size_t nb2, size_t nb3, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, false, GGML_OP_ACC, __func__);
}

struct ggml_tensor * ggml_acc_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    GGMLX_CTX_CHECK(ctx);
    return set_acc_impl(ctx, a, b, nb1, nb2, nb3, offset, true, GGML_OP_ACC, __func__);
}

static struct ggml_tensor * fill_impl(struct ggml_context * ctx, struct ggml_tensor * a, float c, bool inplace,
                                      const char * func) {
    if (a == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument 'a' is NULL");
        return NULL;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16 && a->type != GGML_TYPE_BF16) {
        ggmlx_ctx_fail(ctx, func, "a must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, c);
    result->op     = GGML_OP_FILL;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_fill(struct ggml_context * ctx, struct ggml_tensor * a, float c) {
    GGMLX_CTX_CHECK(ctx);
    return fill_impl(ctx, a, c, false, __func__);
}

struct ggml_tensor * ggml_fill_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float c) {
    GGMLX_CTX_CHECK(ctx);
    return fill_impl(ctx, a, c, true, __func__);
}

struct ggml_tensor * ggml_tri(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_tri_type type) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16,
                  "a must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[0] == a->ne[1], "a must be square in dims 0 and 1, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, (int) type >= GGML_TRI_TYPE_UPPER_DIAG && (int) type <= GGML_TRI_TYPE_LOWER,
                  "unknown triangle type %d (GGML_TRI_TYPE_UPPER_DIAG .. GGML_TRI_TYPE_LOWER)", (int) type);
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) type);
    result->op     = GGML_OP_TRI;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_diag(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->ne[1] == 1, "a must be a row (ne1 == 1), got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16,
                  "a must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    const int64_t ne[4] = { a->ne[0], a->ne[0], a->ne[2], a->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_DIAG;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_roll(struct ggml_context * ctx, struct ggml_tensor * a, int shift0, int shift1, int shift2,
                               int shift3) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, ggml_blck_size(a->type) == 1, "a must not be of a block-quantized type, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->nb[0] == ggml_type_size(a->type), "a's elements must be contiguous in dim 0, got %s",
                  GGMLX_SHAPE(a));
    const int shift[4] = { shift0, shift1, shift2, shift3 };
    for (int d = 0; d < 4; d++) {
        /* a shift of a whole dim or more is a caller's mistake upstream refuses too */
        GGMLX_REQUIRE(ctx, (int64_t) (shift[d] < 0 ? -(int64_t) shift[d] : shift[d]) < a->ne[d] || a->ne[d] == 0,
                      "shift %d of dim %d must be smaller in magnitude than its size (a %s)", shift[d], d,
                      GGMLX_SHAPE(a));
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    for (int d = 0; d < 4; d++) {
        ggmlx_set_op_params_i32(result, d, shift[d]);
    }
    result->op     = GGML_OP_ROLL;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_solve_tri(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    bool left, bool lower, bool uni) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__) || !ggmlx_require_f32(ctx, b, "b", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, a->ne[0] == a->ne[1], "a must be square, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->ne[1] == a->ne[1], "b %s must have as many rows (ne1) as a %s", GGMLX_SHAPE(b),
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3], "a %s and b %s must have the same batch dims",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ggml_is_contiguous(a) && ggml_is_contiguous(b), "a %s and b %s must be contiguous",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, left && lower && !uni,
                  "only left = true, lower = true, uni = false is implemented (as upstream), got %d, %d, %d",
                  (int) left, (int) lower, (int) uni);
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, b->ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SOLVE_TRI;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}
