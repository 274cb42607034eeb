/*
 * ops-image.c -- image constructors: POOL_1D (op_params i32 [op, k0, s0, p0]), POOL_2D (i32 [op,
 * k0, k1, s0, s1, p0, p1]), UPSCALE for ggml_upscale / upscale_ext / interpolate (i32 [0] mode |
 * flags), WIN_PART (i32 [npx, npy, w]), WIN_UNPART (i32 [w]), GET_REL_POS, ADD_REL_POS (i32 [0]
 * inplace). Layouts and op_params as upstream's.
 */
#include "ggml-impl.h"

/* a pooled length as upstream computes it (padding is a float there), or <= 0 when none fits */
static bool pool_args_ok(struct ggml_context * ctx, const struct ggml_tensor * a, enum ggml_op_pool op,
                         const char * func) {
    if (a == NULL) {
        ggmlx_ctx_fail(ctx, func, "tensor argument 'a' is NULL");
        return false;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16) {
        ggmlx_ctx_fail(ctx, func, "a must be F32 or F16, got %s", GGMLX_SHAPE(a));
        return false;
    }
    if (op != GGML_OP_POOL_MAX && op != GGML_OP_POOL_AVG) {
        ggmlx_ctx_fail(ctx, func, "op must be GGML_OP_POOL_MAX or GGML_OP_POOL_AVG, got %d", (int) op);
        return false;
    }
    return true;
}

struct ggml_tensor * ggml_pool_1d(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_op_pool op, int k0,
                                  int s0, int p0) {
    GGMLX_CTX_CHECK(ctx);
    if (!pool_args_ok(ctx, a, op, __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, k0 > 0 && s0 > 0 && p0 >= 0, "need k0 > 0, s0 > 0, p0 >= 0, got %d, %d, %d", k0, s0, p0);
    const int64_t ne[4] = { ggmlx_pool_out(a->ne[0], k0, s0, (float) p0), a->ne[1], a->ne[2], a->ne[3] };
    GGMLX_REQUIRE(ctx, ne[0] > 0, "a %s too short for a window of %d with padding %d", GGMLX_SHAPE(a), k0, p0);
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[4] = { (int32_t) op, k0, s0, p0 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_POOL_1D;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_pool_2d(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_op_pool op, int k0,
                                  int k1, int s0, int s1, float p0, float p1) {
    GGMLX_CTX_CHECK(ctx);
    if (!pool_args_ok(ctx, a, op, __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, k0 > 0 && k1 > 0 && s0 > 0 && s1 > 0, "need k0, k1, s0, s1 > 0, got %d, %d, %d, %d", k0, k1,
                  s0, s1);
    GGMLX_REQUIRE(ctx, p0 >= 0.0f && p1 >= 0.0f && p0 < 1e6f && p1 < 1e6f, "need 0 <= p0, p1 < 1e6, got %g, %g",
                  (double) p0, (double) p1);
    const int64_t ne[4] = { ggmlx_pool_out(a->ne[0], k0, s0, p0), ggmlx_pool_out(a->ne[1], k1, s1, p1), a->ne[2], a->ne[3] };
    GGMLX_REQUIRE(ctx, ne[0] > 0 && ne[1] > 0, "a %s too small for a %dx%d window with padding %g, %g",
                  GGMLX_SHAPE(a), k0, k1, (double) p0, (double) p1);
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    /* the padding travels as integers, as upstream stores it */
    const int32_t params[7] = { (int32_t) op, k0, k1, s0, s1, (int32_t) p0, (int32_t) p1 };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_POOL_2D;
    result->src[0] = a;
    return result;
}

static struct ggml_tensor * interpolate_impl(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0,
                                             int64_t ne1, int64_t ne2, int64_t ne3, uint32_t mode, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func)) {
        return NULL;
    }
    const uint32_t base = mode & 0xFFu;
    const uint32_t known = 0xFFu | GGML_SCALE_FLAG_ALIGN_CORNERS | GGML_SCALE_FLAG_ANTIALIAS;
    if (base >= GGML_SCALE_MODE_COUNT || (mode & ~known) != 0) {
        ggmlx_ctx_fail(ctx, func, "unknown mode 0x%x (a ggml_scale_mode, optionally | ggml_scale_flag bits)", mode);
        return NULL;
    }
    if ((mode & GGML_SCALE_FLAG_ANTIALIAS) && base != GGML_SCALE_MODE_BILINEAR) {
        ggmlx_ctx_fail(ctx, func, "GGML_SCALE_FLAG_ANTIALIAS needs GGML_SCALE_MODE_BILINEAR, got mode %u", base);
        return NULL;
    }
    if (ne0 <= 0 || ne1 <= 0 || ne2 <= 0 || ne3 <= 0 || ggml_nelements(a) == 0) {
        ggmlx_ctx_fail(ctx, func, "sizes must be > 0 and a non-empty: [%lld, %lld, %lld, %lld] from %s",
                       (long long) ne0, (long long) ne1, (long long) ne2, (long long) ne3, GGMLX_SHAPE(a));
        return NULL;
    }
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) mode);
    result->op     = GGML_OP_UPSCALE;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_upscale(struct ggml_context * ctx, struct ggml_tensor * a, int scale_factor,
                                  enum ggml_scale_mode mode) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, scale_factor > 1, "scale_factor must be > 1, got %d", scale_factor);
    return interpolate_impl(ctx, a, a->ne[0] * scale_factor, a->ne[1] * scale_factor, a->ne[2], a->ne[3],
                            (uint32_t) mode, __func__);
}

struct ggml_tensor * ggml_upscale_ext(struct ggml_context * ctx, struct ggml_tensor * a, int ne0, int ne1, int ne2,
                                      int ne3, enum ggml_scale_mode mode) {
    GGMLX_CTX_CHECK(ctx);
    return interpolate_impl(ctx, a, ne0, ne1, ne2, ne3, (uint32_t) mode, __func__);
}

struct ggml_tensor * ggml_interpolate(struct ggml_context * ctx, struct ggml_tensor * a, int64_t ne0, int64_t ne1,
                                      int64_t ne2, int64_t ne3, uint32_t mode) {
    GGMLX_CTX_CHECK(ctx);
    return interpolate_impl(ctx, a, ne0, ne1, ne2, ne3, mode, __func__);
}

struct ggml_tensor * ggml_win_part(struct ggml_context * ctx, struct ggml_tensor * a, int w) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, a->ne[3] == 1, "a must have at most 3 dims, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, w > 0, "window size w must be > 0, got %d", w);
    const int64_t npx = (a->ne[1] + w - 1) / w, npy = (a->ne[2] + w - 1) / w;
    GGMLX_REQUIRE(ctx, npx * npy <= INT32_MAX, "too many windows of %d in %s", w, GGMLX_SHAPE(a));
    const int64_t ne[4] = { a->ne[0], w, w, npx * npy };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    const int32_t params[3] = { (int32_t) npx, (int32_t) npy, w };
    ggmlx_set_op_params(result, params, sizeof params);
    result->op     = GGML_OP_WIN_PART;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_win_unpart(struct ggml_context * ctx, struct ggml_tensor * a, int w0, int h0, int w) {
    GGMLX_CTX_CHECK(ctx);
    if (!ggmlx_require_f32(ctx, a, "a", __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, w > 0 && w0 > 0 && h0 > 0, "need w, w0, h0 > 0, got %d, %d, %d", w, w0, h0);
    const int64_t npx = ((int64_t) w0 + w - 1) / w, npy = ((int64_t) h0 + w - 1) / w;
    /* the windows must cover w0 x h0, as ggml_win_part made them */
    GGMLX_REQUIRE(ctx, a->ne[1] == w && a->ne[2] == w && a->ne[3] == npx * npy,
                  "a %s must be [C, %d, %d, %lld] (windows of %d covering %d x %d)", GGMLX_SHAPE(a), w, w,
                  (long long) (npx * npy), w, w0, h0);
    const int64_t ne[3] = { a->ne[0], w0, h0 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 3, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, w);
    result->op     = GGML_OP_WIN_UNPART;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_get_rel_pos(struct ggml_context * ctx, struct ggml_tensor * a, int qh, int kh) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F16, "a must be F16, got %s", GGMLX_SHAPE(a));
    GGMLX_REQUIRE(ctx, qh == kh && qh > 0, "qh and kh must be equal and > 0, got %d and %d", qh, kh);
    GGMLX_REQUIRE(ctx, a->ne[1] == 2 * (int64_t) qh - 1, "a ne1 must be 2 * qh - 1 = %lld, got %s",
                  (long long) (2 * (int64_t) qh - 1), GGMLX_SHAPE(a));
    const int64_t ne[3] = { a->ne[0], kh, qh };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F16, 3, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_GET_REL_POS;
    result->src[0] = a;
    return result;
}

static struct ggml_tensor * add_rel_pos_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * pw,
                                             struct ggml_tensor * ph, bool inplace, const char * func) {
    if (!ggmlx_require_f32(ctx, a, "a", func) || !ggmlx_require_f32(ctx, pw, "pw", func) ||
        !ggmlx_require_f32(ctx, ph, "ph", func)) {
        return NULL;
    }
    if (!ggml_are_same_shape(pw, ph) || !ggml_is_contiguous(a) || !ggml_is_contiguous(pw) ||
        !ggml_is_contiguous(ph)) {
        ggmlx_ctx_fail(ctx, func, "pw %s and ph %s must have one shape and, with a %s, be contiguous",
                       GGMLX_SHAPE(pw), GGMLX_SHAPE(ph), GGMLX_SHAPE(a));
        return NULL;
    }
    if (pw->ne[3] != a->ne[2] || pw->ne[0] * pw->ne[0] != a->ne[0] || pw->ne[1] * pw->ne[2] != a->ne[1]) {
        ggmlx_ctx_fail(ctx, func, "a %s must be [W*W, H*Q, B] for pw %s = [W, H, Q, B]", GGMLX_SHAPE(a),
                       GGMLX_SHAPE(pw));
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, inplace ? 1 : 0);
    result->op     = GGML_OP_ADD_REL_POS;
    result->src[0] = a;
    result->src[1] = pw;
    result->src[2] = ph;
    return result;
}

struct ggml_tensor * ggml_add_rel_pos(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * pw,
                                      struct ggml_tensor * ph) {
    GGMLX_CTX_CHECK(ctx);
    return add_rel_pos_impl(ctx, a, pw, ph, false, __func__);
}

struct ggml_tensor * ggml_add_rel_pos_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * pw,
                                              struct ggml_tensor * ph) {
    GGMLX_CTX_CHECK(ctx);
    return add_rel_pos_impl(ctx, a, pw, ph, true, __func__);
}
