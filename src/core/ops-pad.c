/*
 * ops-pad.c -- PAD constructors: zeros added before and after each dim (op_params as upstream:
 * i32 [0..7] lp0, rp0, lp1, rp1, lp2, rp2, lp3, rp3, [8] 1 when the padding wraps around, taken from
 * the other side of each dim as on a torus, else 0); PAD_REFLECT_1D: dim 0 extended by its
 * reflection (op_params i32 [0] p0, [1] p1).
 */
#include "ggml-impl.h"

static struct ggml_tensor * pad_impl(struct ggml_context * ctx, struct ggml_tensor * a, const int lp[4],
                                     const int rp[4], bool circular, const char * func) {
    if (a == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument 'a' is NULL");
        return NULL;
    }
    if (ggml_blck_size(a->type) != 1) {
        ggmlx_ctx_fail(ctx, func, "a must not be of a block-quantized type, got %s", GGMLX_SHAPE(a));
        return NULL;
    }
    int64_t ne[GGML_MAX_DIMS];
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        if (lp[d] < 0 || rp[d] < 0) {
            ggmlx_ctx_fail(ctx, func, "padding of dim %d must be >= 0, got %d before and %d after", d, lp[d], rp[d]);
            return NULL;
        }
        if (circular && a->ne[d] == 0 && lp[d] + rp[d] > 0) {
            ggmlx_ctx_fail(ctx, func, "dim %d of a %s is empty: there is nothing to wrap around", d, GGMLX_SHAPE(a));
            return NULL;
        }
        if (__builtin_add_overflow(a->ne[d], (int64_t) lp[d] + rp[d], &ne[d])) {
            ggmlx_ctx_fail(ctx, func, "padding %s by %d and %d in dim %d gives more than INT64_MAX elements",
                           GGMLX_SHAPE(a), lp[d], rp[d], d);
            return NULL;
        }
    }
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, func);
    if (result == NULL) {
        return NULL;
    }
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        ggmlx_set_op_params_i32(result, 2 * d, lp[d]);
        ggmlx_set_op_params_i32(result, 2 * d + 1, rp[d]);
    }
    ggmlx_set_op_params_i32(result, 8, circular ? 1 : 0);
    result->op     = GGML_OP_PAD;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_pad(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1, int p2, int p3) {
    GGMLX_CTX_CHECK(ctx);
    const int lp[4] = { 0, 0, 0, 0 };
    const int rp[4] = { p0, p1, p2, p3 };
    return pad_impl(ctx, a, lp, rp, false, __func__);
}

struct ggml_tensor * ggml_pad_ext(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0, int lp1, int rp1,
                                  int lp2, int rp2, int lp3, int rp3) {
    GGMLX_CTX_CHECK(ctx);
    const int lp[4] = { lp0, lp1, lp2, lp3 };
    const int rp[4] = { rp0, rp1, rp2, rp3 };
    return pad_impl(ctx, a, lp, rp, false, __func__);
}

struct ggml_tensor * ggml_pad_circular(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1, int p2,
                                       int p3) {
    GGMLX_CTX_CHECK(ctx);
    const int lp[4] = { 0, 0, 0, 0 };
    const int rp[4] = { p0, p1, p2, p3 };
    return pad_impl(ctx, a, lp, rp, true, __func__);
}

struct ggml_tensor * ggml_pad_ext_circular(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0, int lp1,
                                           int rp1, int lp2, int rp2, int lp3, int rp3) {
    GGMLX_CTX_CHECK(ctx);
    const int lp[4] = { lp0, lp1, lp2, lp3 };
    const int rp[4] = { rp0, rp1, rp2, rp3 };
    return pad_impl(ctx, a, lp, rp, true, __func__);
}

struct ggml_tensor * ggml_pad_reflect_1d(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, ggml_is_contiguous(a), "a must be contiguous, got %s", GGMLX_SHAPE(a));
    /* a reflection reaches at most ne0 - 1 elements away from the edge */
    GGMLX_REQUIRE(ctx, p0 >= 0 && p1 >= 0 && p0 < a->ne[0] && p1 < a->ne[0],
                  "p0 and p1 must be in 0 .. ne0 - 1 (%lld), got %d and %d", (long long) a->ne[0] - 1, p0, p1);
    const int64_t ne[GGML_MAX_DIMS] = { a->ne[0] + p0 + p1, a->ne[1], a->ne[2], a->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, p0);
    ggmlx_set_op_params_i32(result, 1, p1);
    result->op     = GGML_OP_PAD_REFLECT_1D;
    result->src[0] = a;
    return result;
}
