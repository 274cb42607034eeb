/*
 * ops-conv.c -- convolution constructors. IM2COL, IM2COL_3D, COL2IM_1D, CONV_2D (direct),
 * CONV_2D_DW (direct depthwise), CONV_3D (direct), CONV_TRANSPOSE_1D and CONV_TRANSPOSE_2D are
 * ops of their own; every other ggml_conv_* is the graph upstream builds (im2col, then mul_mat,
 * reshapes and permutes), so its result and its nodes are what a ggml graph reader expects.
 * op_params as upstream: IM2COL i32 [s0, s1, p0, p1, d0, d1, is_2D]; IM2COL_3D i32 [s0, s1, s2,
 * p0, p1, p2, d0, d1, d2, IC]; COL2IM_1D [s0, oc, p0]; CONV_2D and CONV_2D_DW [s0, s1, p0, p1,
 * d0, d1]; CONV_3D [s0, s1, s2, p0, p1, p2, d0, d1, d2, c, n, oc]; CONV_TRANSPOSE_1D [s0, p0, d0];
 * CONV_TRANSPOSE_2D [stride].
 */
#include "ggml-impl.h"

/* an output length of a convolution, or -1 when stride/dilation are not positive or nothing fits */
static bool is_conv_kernel_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/* the im2col result type upstream's conv graphs use for a kernel of type t */
static enum ggml_type im2col_type_for(enum ggml_type t) {
    return t == GGML_TYPE_BF16 ? GGML_TYPE_F32 : GGML_TYPE_F16;
}

/* an F16 operand as mul_mat's b: our mul_mat takes F32 b only; F16 and BF16 values are exact
 * in F32, so the product is the one upstream computes from the F16 operand */
static struct ggml_tensor * as_f32(struct ggml_context * ctx, struct ggml_tensor * t) {
    return t == NULL || t->type == GGML_TYPE_F32 ? t : ggml_cast(ctx, t, GGML_TYPE_F32);
}

struct ggml_tensor * ggml_im2col(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s0,
                                 int s1, int p0, int p1, int d0, int d1, bool is_2D, enum ggml_type dst_type) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16,
                  "dst_type must be F32 or F16, got %s", ggml_type_name(dst_type));
    if (is_2D) {
        GGMLX_REQUIRE(ctx, a->ne[2] == b->ne[2], "2D: a ne2 (input channels) must equal b ne2: a %s, b %s",
                      GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    } else {
        GGMLX_REQUIRE(ctx, a->ne[1] == b->ne[1] && b->ne[3] == 1,
                      "1D: a ne1 (input channels) must equal b ne1 and b ne3 must be 1: a %s, b %s",
                      GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    }
    GGMLX_REQUIRE(ctx, s0 > 0 && d0 > 0 && (!is_2D || (s1 > 0 && d1 > 0)),
                  "strides and dilations must be > 0, got s0 %d s1 %d d0 %d d1 %d", s0, s1, d0, d1);
    const int64_t OW = ggmlx_conv_out(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = is_2D ? ggmlx_conv_out(b->ne[1], a->ne[1], s1, p1, d1) : 1;
    GGMLX_REQUIRE(ctx, OW > 0 && OH > 0, "b %s too small for kernel a %s with padding %d, %d and dilation %d, %d",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(a), p0, p1, d0, d1);
    const int64_t ne[4] = {
        is_2D ? a->ne[0] * a->ne[1] * a->ne[2] : a->ne[0] * a->ne[1],
        OW,
        is_2D ? OH : b->ne[2],
        is_2D ? b->ne[3] : 1,
    };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, dst_type, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[7] = { s0, s1, p0, p1, d0, d1, is_2D ? 1 : 0 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_IM2COL;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_im2col_3d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    int64_t IC, int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1,
                                    int d2, enum ggml_type dst_type) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16,
                  "dst_type must be F32 or F16, got %s", ggml_type_name(dst_type));
    /*
     * Only the kernel's KW, KH, KD are read here: its ne3 (OC * IC) matters to ggml_conv_3d alone.
     * N = b ne3 / IC rounds down as upstream's does (its test-backend-ops views 1 of IC 3 channels,
     * which gives an empty result); channels past N * IC are not read.
     */
    GGMLX_REQUIRE(ctx, IC > 0 && IC <= INT32_MAX, "IC %lld must be > 0: a %s, b %s", (long long) IC, GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    const int64_t OW = ggmlx_conv_out(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = ggmlx_conv_out(b->ne[1], a->ne[1], s1, p1, d1);
    const int64_t OD = ggmlx_conv_out(b->ne[2], a->ne[2], s2, p2, d2);
    GGMLX_REQUIRE(ctx, OW > 0 && OH > 0 && OD > 0,
                  "b %s too small for kernel a %s (or a stride/dilation not > 0)", GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    const int64_t ne[4] = { a->ne[0] * a->ne[1] * a->ne[2] * IC, OW, OH, OD * (b->ne[3] / IC) };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, dst_type, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[10] = { s0, s1, s2, p0, p1, p2, d0, d1, d2, (int32_t) IC };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_IM2COL_3D;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_col2im_1d(struct ggml_context * ctx, struct ggml_tensor * a, int s0, int oc, int p0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, ggml_is_matrix(a) && ggml_is_contiguous(a), "a must be a contiguous matrix, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, s0 > 0 && oc > 0 && p0 >= 0, "need s0 > 0, oc > 0 and p0 >= 0, got %d, %d, %d", s0, oc, p0);
    GGMLX_REQUIRE(ctx, a->ne[0] % oc == 0 && a->ne[0] >= oc,
                  "a ne0 must be a whole number (> 0) of oc %d blocks, got %s", oc, GGMLX_SHAPE(a));
    const int64_t K = a->ne[0] / oc;
    const int64_t T_out = (a->ne[1] - 1) * s0 + K - 2 * (int64_t) p0;
    GGMLX_REQUIRE(ctx, a->ne[1] > 0 && T_out > 0, "padding %d crops all of the %lld output samples", p0,
                  (long long) ((a->ne[1] - 1) * s0 + K));
    const int64_t ne[2] = { T_out, oc };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, 2, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[3] = { s0, oc, p0 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_COL2IM_1D;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_conv_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s0,
                                  int p0, int d0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a (kernel) must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    struct ggml_tensor * cols = ggml_im2col(ctx, a, b, s0, 0, p0, 0, d0, 0, false, im2col_type_for(a->type));
    if (cols == NULL) {
        return NULL;
    }
    struct ggml_tensor * lhs = ggml_reshape_2d(ctx, cols, cols->ne[0], cols->ne[2] * cols->ne[1]);
    struct ggml_tensor * rhs = as_f32(ctx, ggml_reshape_2d(ctx, a, a->ne[0] * a->ne[1], a->ne[2] * a->ne[3]));
    struct ggml_tensor * res = lhs && rhs ? ggml_mul_mat(ctx, lhs, rhs) : NULL;
    return res ? ggml_reshape_3d(ctx, res, cols->ne[1], a->ne[2], cols->ne[2]) : NULL;
}

struct ggml_tensor * ggml_conv_1d_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s,
                                     int d) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return ggml_conv_1d(ctx, a, b, s, (int) (a->ne[0] / 2), d);
}

struct ggml_tensor * ggml_conv_1d_dw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     int s0, int p0, int d0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a (kernel) must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->ne[3] == 1, "b must have at most 3 dims [L, C, N], got %s", GGMLX_SHAPE(b));
    struct ggml_tensor * b4 = ggml_reshape_4d(ctx, b, b->ne[0], 1, b->ne[1], b->ne[2]);
    struct ggml_tensor * cols = b4 ? ggml_im2col(ctx, a, b4, s0, 0, p0, 0, d0, 0, false, im2col_type_for(a->type)) : NULL;
    struct ggml_tensor * res = cols ? ggml_mul_mat(ctx, cols, as_f32(ctx, a)) : NULL;
    return res ? ggml_reshape_3d(ctx, res, res->ne[0], res->ne[2], 1) : NULL;
}

struct ggml_tensor * ggml_conv_1d_dw_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                        int s0, int d0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return ggml_conv_1d_dw(ctx, a, b, s0, (int) (a->ne[0] / 2), d0);
}

struct ggml_tensor * ggml_conv_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s0,
                                  int s1, int p0, int p1, int d0, int d1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a (kernel) must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    struct ggml_tensor * cols = ggml_im2col(ctx, a, b, s0, s1, p0, p1, d0, d1, true, im2col_type_for(a->type));
    if (cols == NULL) {
        return NULL;
    }
    struct ggml_tensor * lhs = ggml_reshape_2d(ctx, cols, cols->ne[0], cols->ne[3] * cols->ne[2] * cols->ne[1]);
    struct ggml_tensor * rhs = as_f32(ctx, ggml_reshape_2d(ctx, a, a->ne[0] * a->ne[1] * a->ne[2], a->ne[3]));
    struct ggml_tensor * res = lhs && rhs ? ggml_mul_mat(ctx, lhs, rhs) : NULL;
    res = res ? ggml_reshape_4d(ctx, res, cols->ne[1], cols->ne[2], cols->ne[3], a->ne[3]) : NULL;
    res = res ? ggml_permute(ctx, res, 0, 1, 3, 2) : NULL;
    return res ? ggml_cont(ctx, res) : NULL;
}

struct ggml_tensor * ggml_conv_2d_sk_p0(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return ggml_conv_2d(ctx, a, b, (int) a->ne[0], (int) a->ne[1], 0, 0, 1, 1);
}

struct ggml_tensor * ggml_conv_2d_s1_ph(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    return ggml_conv_2d(ctx, a, b, 1, 1, (int) (a->ne[0] / 2), (int) (a->ne[1] / 2), 1, 1);
}

struct ggml_tensor * ggml_conv_2d_dw(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int s0,
                                     int s1, int p0, int p1, int d0, int d1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a (kernel) must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, a->ne[2] * a->ne[3] == b->ne[2], "a %s needs one kernel per channel (ne2) of b %s",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    struct ggml_tensor * a4 = ggml_reshape_4d(ctx, a, a->ne[0], a->ne[1], 1, a->ne[2] * a->ne[3]);
    struct ggml_tensor * b4 = ggml_reshape_4d(ctx, b, b->ne[0], b->ne[1], 1, b->ne[2] * b->ne[3]);
    struct ggml_tensor * cols = a4 && b4 ? ggml_im2col(ctx, a4, b4, s0, s1, p0, p1, d0, d1, true,
                                                       im2col_type_for(a->type)) : NULL;
    if (cols == NULL) {
        return NULL;
    }
    struct ggml_tensor * nb = as_f32(ctx, ggml_reshape_4d(ctx, cols, cols->ne[0], cols->ne[2] * cols->ne[1], b->ne[2],
                                                          b->ne[3]));
    struct ggml_tensor * na = as_f32(ctx, ggml_reshape_4d(ctx, a4, a4->ne[0] * a4->ne[1], a4->ne[2], a4->ne[3], 1));
    struct ggml_tensor * res = na && nb ? ggml_mul_mat(ctx, na, nb) : NULL;
    return res ? ggml_reshape_4d(ctx, res, cols->ne[1], cols->ne[2], b->ne[2], b->ne[3]) : NULL;
}

struct ggml_tensor * ggml_conv_2d_dw_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            int stride0, int stride1, int pad0, int pad1, int dilation0,
                                            int dilation1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a (kernel) must be F32 or F16, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, a->ne[2] == 1 && a->ne[3] == b->ne[2],
                  "a must be [KW, KH, 1, C] with C = b ne2: a %s, b %s", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    const int64_t OW = ggmlx_conv_out(b->ne[0], a->ne[0], stride0, pad0, dilation0);
    const int64_t OH = ggmlx_conv_out(b->ne[1], a->ne[1], stride1, pad1, dilation1);
    GGMLX_REQUIRE(ctx, OW > 0 && OH > 0, "b %s too small for kernel a %s (or a stride/dilation not > 0)",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    const int64_t ne[4] = { OW, OH, b->ne[2], b->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, b->type, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    if (ggml_is_contiguous_channels(b)) {
        /* channels innermost in memory, as the input (CWHN) */
        const size_t ts = ggml_type_size(result->type);
        result->nb[0] = (size_t) result->ne[2] * ts;
        result->nb[1] = (size_t) result->ne[0] * result->nb[0];
        result->nb[2] = ts;
    }
    const int32_t params[6] = { stride0, stride1, pad0, pad1, dilation0, dilation1 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_CONV_2D_DW;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_conv_2d_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         int s0, int s1, int p0, int p1, int d0, int d1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a (kernel) must be F32 or F16, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, a->ne[2] == b->ne[2], "a ne2 (input channels) must equal b ne2: a %s, b %s", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    const int64_t OW = ggmlx_conv_out(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = ggmlx_conv_out(b->ne[1], a->ne[1], s1, p1, d1);
    GGMLX_REQUIRE(ctx, OW > 0 && OH > 0, "b %s too small for kernel a %s (or a stride/dilation not > 0)",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    const int64_t ne[4] = { OW, OH, a->ne[3], b->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, b->type, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[6] = { s0, s1, p0, p1, d0, d1 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_CONV_2D;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_conv_3d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int64_t IC,
                                  int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, is_conv_kernel_type(a->type), "a (kernel) must be F32, F16 or BF16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, IC > 0 && a->ne[3] % IC == 0 && b->ne[3] >= IC,
                  "IC %lld must be > 0, divide a ne3 (OC * IC) and be at most b ne3: a %s, b %s", (long long) IC,
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    struct ggml_tensor * cols = ggml_im2col_3d(ctx, a, b, IC, s0, s1, s2, p0, p1, p2, d0, d1, d2,
                                               im2col_type_for(a->type));
    if (cols == NULL) {
        return NULL;
    }
    const int64_t OC = a->ne[3] / IC, N = b->ne[3] / IC, OD = cols->ne[3] / N;
    struct ggml_tensor * lhs = ggml_reshape_2d(ctx, cols, cols->ne[0], cols->ne[3] * cols->ne[2] * cols->ne[1]);
    struct ggml_tensor * rhs = as_f32(ctx, ggml_reshape_2d(ctx, a, a->ne[0] * a->ne[1] * a->ne[2] * IC, OC));
    struct ggml_tensor * res = lhs && rhs ? ggml_mul_mat(ctx, lhs, rhs) : NULL;
    res = res ? ggml_reshape_4d(ctx, res, cols->ne[1] * cols->ne[2], OD, N, OC) : NULL;
    res = res ? ggml_permute(ctx, res, 0, 1, 3, 2) : NULL;
    res = res ? ggml_cont(ctx, res) : NULL;
    return res ? ggml_reshape_4d(ctx, res, cols->ne[1], cols->ne[2], OD, OC * N) : NULL;
}

struct ggml_tensor * ggml_conv_3d_direct(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                         int s0, int s1, int s2, int p0, int p1, int p2, int d0, int d1, int d2,
                                         int n_channels, int n_batch, int n_channels_out) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a (kernel) must be F32 or F16, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, n_channels > 0 && n_batch > 0 && n_channels_out > 0,
                  "channel and batch counts must be > 0, got %d, %d, %d", n_channels, n_batch, n_channels_out);
    GGMLX_REQUIRE(ctx, a->ne[3] == (int64_t) n_channels * n_channels_out && b->ne[3] == (int64_t) n_channels * n_batch,
                  "need a ne3 = channels * channels_out (%d * %d) and b ne3 = channels * batch (%d * %d): a %s, b %s",
                  n_channels, n_channels_out, n_channels, n_batch, GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    const int64_t OW = ggmlx_conv_out(b->ne[0], a->ne[0], s0, p0, d0);
    const int64_t OH = ggmlx_conv_out(b->ne[1], a->ne[1], s1, p1, d1);
    const int64_t OD = ggmlx_conv_out(b->ne[2], a->ne[2], s2, p2, d2);
    GGMLX_REQUIRE(ctx, OW > 0 && OH > 0 && OD > 0, "b %s too small for kernel a %s (or a stride/dilation not > 0)",
                  GGMLX_SHAPE(b), GGMLX_SHAPE(a));
    const int64_t ne[4] = { OW, OH, OD, (int64_t) n_channels_out * n_batch };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[12] = { s0, s1, s2, p0, p1, p2, d0, d1, d2, n_channels, n_batch, n_channels_out };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_CONV_3D;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_conv_transpose_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                            int s0, int p0, int d0) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a (kernel) must be F32 or F16, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ggml_is_matrix(b) && a->ne[3] == 1 && a->ne[2] == b->ne[1],
                  "need a [K, OC, IC], b [L, IC] with the same IC: a %s, b %s", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    /* upstream's kernel implements neither padding nor dilation */
    GGMLX_REQUIRE(ctx, p0 == 0 && d0 == 1, "only p0 = 0 and d0 = 1 are supported, got %d and %d", p0, d0);
    GGMLX_REQUIRE(ctx, s0 > 0 && a->ne[0] > 0 && b->ne[0] > 0, "need s0 > 0 and non-empty a %s, b %s (s0 %d)",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b), s0);
    const int64_t ne[4] = { (b->ne[0] - 1) * s0 + a->ne[0], a->ne[1], b->ne[2], 1 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[3] = { s0, p0, d0 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_CONV_TRANSPOSE_1D;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_conv_transpose_2d_p0(struct ggml_context * ctx, struct ggml_tensor * a,
                                               struct ggml_tensor * b, int stride) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16, "a (kernel) must be F32 or F16, got %s",
                  GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32, "b (the data) must be F32, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, a->ne[3] == b->ne[2], "a ne3 (input channels) must equal b ne2: a %s, b %s", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, stride > 0 && a->ne[0] > 0 && a->ne[1] > 0 && b->ne[0] > 0 && b->ne[1] > 0,
                  "need stride > 0 and non-empty a %s, b %s (stride %d)", GGMLX_SHAPE(a), GGMLX_SHAPE(b), stride);
    const int64_t ne[4] = { (b->ne[0] - 1) * stride + a->ne[0], (b->ne[1] - 1) * stride + a->ne[1], a->ne[2],
                            b->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, stride);
    result->op     = GGML_OP_CONV_TRANSPOSE_2D;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}
