/*
 * test-ops-image.c -- pool_1d, pool_2d, upscale / upscale_ext / interpolate (nearest, bilinear,
 * bicubic, align-corners, antialias), win_part, win_unpart, get_rel_pos, add_rel_pos against
 * references in double, with guard bytes, odd sizes, permuted inputs and threads; the refused
 * shapes.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static struct ggml_tensor * new_input(struct to_env * e, enum ggml_type t, const int64_t ne[4], bool permuted) {
    return permuted ? to_new_permuted(e, t, ne[0], ne[1], ne[2], ne[3]) : to_new(e, t, ne[0], ne[1], ne[2], ne[3]);
}

static void run(struct to_env * e, struct ggml_tensor * r, int n_threads) {
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    to_alloc(e, r);
    memset(r->data, 0x7f, ggml_nbytes(r));
    to_compute(e, r, n_threads);
}

/* ---- pooling --------------------------------------------------------------------------------- */

static void pool_1d_case(enum ggml_type t, enum ggml_op_pool op, int k, int s, int p, bool permuted, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) (k * 100 + s * 10 + p));
    const int64_t ne[4] = { 17, 3, 2, 2 };
    struct ggml_tensor * a = new_input(&e, t, ne, permuted);
    tu_fill(a, &rng, -2.0f, 1.0f); /* mostly negative: a max that starts from 0 would show */
    struct ggml_tensor * r = ggml_pool_1d(e.ctx, a, op, k, s, p);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = (ne[0] + 2 * p - k) / s + 1;
    cr_assert(r->ne[0] == OW && r->ne[1] == 3 && r->ne[2] == 2 && r->ne[3] == 2 && r->type == GGML_TYPE_F32);
    run(&e, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ow, i1, i2, i3) {
        double acc = op == GGML_OP_POOL_MAX ? -DBL_MAX : 0.0;
        int count = 0;
        for (int64_t j = ow * s - p; j < ow * s - p + k; j++) {
            if (j >= 0 && j < ne[0]) {
                const double v = tu_get(a, j, i1, i2, i3);
                acc = op == GGML_OP_POOL_MAX ? fmax(acc, v) : acc + v;
                count++;
            }
        }
        want[to_index(r, ow, i1, i2, i3)] = op == GGML_OP_POOL_AVG ? acc / count : acc;
    }
    to_check(r, want, 1e-6, "pool_1d");
    free(want);
    to_end(&e);
}

Test(pool_1d, max_and_avg_with_padding) {
    pool_1d_case(GGML_TYPE_F32, GGML_OP_POOL_MAX, 3, 1, 0, false, 1);
    pool_1d_case(GGML_TYPE_F32, GGML_OP_POOL_AVG, 3, 2, 1, false, 2);
    pool_1d_case(GGML_TYPE_F16, GGML_OP_POOL_MAX, 4, 3, 2, false, 1);
    pool_1d_case(GGML_TYPE_F16, GGML_OP_POOL_AVG, 5, 2, 2, true, 3);
    pool_1d_case(GGML_TYPE_F32, GGML_OP_POOL_AVG, 2, 2, 0, true, 2);
}

static void pool_2d_case(enum ggml_type t, enum ggml_op_pool op, int k0, int k1, int s0, int s1, int p0, int p1,
                         bool permuted, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) (k0 * 1000 + k1 * 100 + s0 * 10 + p0));
    const int64_t ne[4] = { 13, 11, 3, 2 };
    struct ggml_tensor * a = new_input(&e, t, ne, permuted);
    tu_fill(a, &rng, -2.0f, 1.0f);
    struct ggml_tensor * r = ggml_pool_2d(e.ctx, a, op, k0, k1, s0, s1, (float) p0, (float) p1);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = (ne[0] + 2 * p0 - k0) / s0 + 1, OH = (ne[1] + 2 * p1 - k1) / s1 + 1;
    cr_assert(r->ne[0] == OW && r->ne[1] == OH && r->ne[2] == 3 && r->ne[3] == 2);
    cr_assert(ggmlx_get_op_params_i32(r, 5) == p0 && ggmlx_get_op_params_i32(r, 6) == p1);
    run(&e, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ox, oy, i2, i3) {
        double acc = op == GGML_OP_POOL_MAX ? -DBL_MAX : 0.0;
        for (int64_t y = oy * s1 - p1; y < oy * s1 - p1 + k1; y++) {
            for (int64_t x = ox * s0 - p0; x < ox * s0 - p0 + k0; x++) {
                if (x >= 0 && x < ne[0] && y >= 0 && y < ne[1]) {
                    const double v = tu_get(a, x, y, i2, i3);
                    acc = op == GGML_OP_POOL_MAX ? fmax(acc, v) : acc + v;
                }
            }
        }
        /* the 2D average counts the padding (upstream divides by k0*k1) */
        want[to_index(r, ox, oy, i2, i3)] = op == GGML_OP_POOL_AVG ? acc / (k0 * k1) : acc;
    }
    to_check(r, want, 1e-6, "pool_2d");
    free(want);
    to_end(&e);
}

Test(pool_2d, max_and_avg_strides_padding) {
    pool_2d_case(GGML_TYPE_F32, GGML_OP_POOL_MAX, 2, 2, 2, 2, 0, 0, false, 1);
    pool_2d_case(GGML_TYPE_F32, GGML_OP_POOL_AVG, 3, 2, 2, 1, 1, 1, false, 2);
    pool_2d_case(GGML_TYPE_F16, GGML_OP_POOL_MAX, 3, 3, 1, 2, 1, 0, true, 3);
    pool_2d_case(GGML_TYPE_F16, GGML_OP_POOL_AVG, 4, 3, 3, 2, 2, 1, false, 1);
    pool_2d_case(GGML_TYPE_F32, GGML_OP_POOL_AVG, 5, 4, 2, 3, 0, 2, true, 2);
}

Test(pool, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_1d(ctx, a, GGML_OP_POOL_MAX, 5, 1, 0), "ggml_pool_1d"); /* window too big */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_1d(ctx, a, GGML_OP_POOL_COUNT, 2, 1, 0), "ggml_pool_1d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_1d(ctx, a, GGML_OP_POOL_AVG, 2, 0, 0), "ggml_pool_1d"); /* stride 0 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_2d(ctx, a, GGML_OP_POOL_AVG, 2, 2, 1, 1, 0, 0), "ggml_pool_2d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_2d(ctx, a, GGML_OP_POOL_AVG, 2, 4, 1, 1, 0, 0), "ggml_pool_2d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_pool_2d(ctx, a, GGML_OP_POOL_AVG, 2, 2, 1, 1, -1.0f, 0), "ggml_pool_2d");
    ggml_free(ctx);
}

/* ---- upscale / interpolate ------------------------------------------------------------------- */

static double px(const struct ggml_tensor * a, int64_t x, int64_t y, int64_t i2, int64_t i3) {
    x = x < 0 ? 0 : (x >= a->ne[0] ? a->ne[0] - 1 : x);
    y = y < 0 ? 0 : (y >= a->ne[1] ? a->ne[1] - 1 : y);
    return tu_get(a, x, y, i2, i3);
}

static double cubic(double t) {
    const double A = -0.75;
    t = fabs(t);
    return t <= 1 ? ((A + 2) * t - (A + 3)) * t * t + 1 : t < 2 ? ((A * t - 5 * A) * t + 8 * A) * t - 4 * A : 0;
}

/* one output sample of upstream's documented resampling, in double */
static double ref_sample(const struct ggml_tensor * a, const int64_t ne[4], uint32_t mode, int64_t i0, int64_t i1,
                         int64_t i2, int64_t i3) {
    const int64_t n0 = a->ne[0], n1 = a->ne[1];
    double sf0 = (double) ne[0] / n0, sf1 = (double) ne[1] / n1, off = 0.5;
    if (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) {
        off = 0;
        if (ne[0] > 1 && n0 > 1) {
            sf0 = (double) (ne[0] - 1) / (n0 - 1);
        }
        if (ne[1] > 1 && n1 > 1) {
            sf1 = (double) (ne[1] - 1) / (n1 - 1);
        }
    }
    const int64_t j2 = (int64_t) (i2 * a->ne[2] / ne[2]), j3 = (int64_t) (i3 * a->ne[3] / ne[3]);
    const uint32_t m = mode & 0xFF;
    if (m == GGML_SCALE_MODE_NEAREST) {
        return tu_get(a, (int64_t) floor(i0 / sf0), (int64_t) floor(i1 / sf1), j2, j3);
    }
    if (m == GGML_SCALE_MODE_BILINEAR && (mode & GGML_SCALE_FLAG_ANTIALIAS)) {
        const double sup0 = fmax(1, 1 / sf0), sup1 = fmax(1, 1 / sf1);
        const double x = (i0 + off) / sf0, y = (i1 + off) / sf1;
        double val = 0, tot = 0;
        for (int64_t sy = 0; sy < n1; sy++) {
            const double wy = fmax(0, 1 - fabs((sy - y + off) / sup1));
            for (int64_t sx = 0; sx < n0; sx++) {
                const double w = fmax(0, 1 - fabs((sx - x + off) / sup0)) * wy;
                if (w > 0) {
                    val += w * tu_get(a, sx, sy, j2, j3);
                    tot += w;
                }
            }
        }
        return tot > 0 ? val / tot : val;
    }
    const double x = (i0 + off) / sf0 - off, y = (i1 + off) / sf1 - off;
    const int64_t x0 = (int64_t) floor(x), y0 = (int64_t) floor(y);
    if (m == GGML_SCALE_MODE_BILINEAR) {
        const int64_t cx = x0 < 0 ? 0 : (x0 > n0 - 1 ? n0 - 1 : x0), cy = y0 < 0 ? 0 : (y0 > n1 - 1 ? n1 - 1 : y0);
        const double dx = fmin(fmax(x - cx, 0), 1), dy = fmin(fmax(y - cy, 0), 1);
        return px(a, cx, cy, j2, j3) * (1 - dx) * (1 - dy) + px(a, x0 + 1, cy, j2, j3) * dx * (1 - dy) +
               px(a, cx, y0 + 1, j2, j3) * (1 - dx) * dy + px(a, x0 + 1, y0 + 1, j2, j3) * dx * dy;
    }
    const double dx = x - x0, dy = y - y0;
    double val = 0;
    for (int j = -1; j <= 2; j++) {
        for (int i = -1; i <= 2; i++) {
            val += px(a, x0 + i, y0 + j, j2, j3) * cubic(dx - i) * cubic(dy - j);
        }
    }
    return val;
}

enum up_api { UP_INTERPOLATE, UP_UPSCALE, UP_EXT };

static void upscale_case(enum up_api api, const int64_t src_ne[4], const int64_t ne[4], uint32_t mode, bool permuted,
                         int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(mode * 7 + (uint64_t) ne[0]);
    struct ggml_tensor * a = new_input(&e, GGML_TYPE_F32, src_ne, permuted);
    tu_fill(a, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = NULL;
    switch (api) {
    case UP_INTERPOLATE: r = ggml_interpolate(e.ctx, a, ne[0], ne[1], ne[2], ne[3], mode); break;
    case UP_UPSCALE: r = ggml_upscale(e.ctx, a, (int) (ne[0] / src_ne[0]), (enum ggml_scale_mode) mode); break;
    case UP_EXT:
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        r = ggml_upscale_ext(e.ctx, a, (int) ne[0], (int) ne[1], (int) ne[2], (int) ne[3], (enum ggml_scale_mode) mode);
#pragma GCC diagnostic pop
        break;
    }
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_UPSCALE && (uint32_t) ggmlx_get_op_params_i32(r, 0) == mode);
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(r->ne[d], ne[d]);
    }
    run(&e, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        want[to_index(r, i0, i1, i2, i3)] = ref_sample(a, ne, mode, i0, i1, i2, i3);
    }
    char what[64];
    snprintf(what, sizeof what, "interpolate mode 0x%x", mode);
    to_check(r, want, 2e-5, what);
    free(want);
    to_end(&e);
}

Test(upscale, nearest_by_an_integer_factor) {
    const int64_t s[4] = { 5, 3, 2, 2 }, d[4] = { 10, 6, 2, 2 };
    upscale_case(UP_UPSCALE, s, d, GGML_SCALE_MODE_NEAREST, false, 1);
    const int64_t d3[4] = { 15, 9, 2, 2 };
    upscale_case(UP_UPSCALE, s, d3, GGML_SCALE_MODE_BILINEAR, true, 2);
}

Test(upscale_ext, every_dim_nearest) {
    const int64_t s[4] = { 4, 3, 2, 1 }, d[4] = { 8, 6, 4, 2 };
    upscale_case(UP_EXT, s, d, GGML_SCALE_MODE_NEAREST, false, 2);
}

Test(interpolate, nearest_up_and_down) {
    const int64_t s[4] = { 8, 6, 3, 1 }, up[4] = { 12, 9, 3, 1 }, down[4] = { 4, 3, 3, 1 };
    upscale_case(UP_INTERPOLATE, s, up, GGML_SCALE_MODE_NEAREST, false, 1);
    upscale_case(UP_INTERPOLATE, s, down, GGML_SCALE_MODE_NEAREST, true, 3);
}

Test(interpolate, bilinear_up_and_down) {
    const int64_t s[4] = { 8, 6, 3, 2 }, up[4] = { 12, 9, 3, 2 }, down[4] = { 4, 3, 3, 2 }, odd[4] = { 10, 15, 3, 2 };
    upscale_case(UP_INTERPOLATE, s, up, GGML_SCALE_MODE_BILINEAR, false, 1);
    upscale_case(UP_INTERPOLATE, s, down, GGML_SCALE_MODE_BILINEAR, false, 2);
    upscale_case(UP_INTERPOLATE, s, odd, GGML_SCALE_MODE_BILINEAR, true, 3);
}

Test(interpolate, bilinear_align_corners) {
    const int64_t s[4] = { 5, 4, 2, 1 }, up[4] = { 9, 7, 2, 1 }, down[4] = { 3, 1, 2, 1 };
    upscale_case(UP_INTERPOLATE, s, up, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS, false, 2);
    upscale_case(UP_INTERPOLATE, s, down, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS, false, 1);
}

Test(interpolate, bicubic_with_and_without_align_corners) {
    const int64_t s[4] = { 6, 5, 2, 1 }, up[4] = { 12, 10, 2, 1 }, down[4] = { 3, 4, 2, 1 };
    upscale_case(UP_INTERPOLATE, s, up, GGML_SCALE_MODE_BICUBIC, false, 1);
    upscale_case(UP_INTERPOLATE, s, down, GGML_SCALE_MODE_BICUBIC, true, 2);
    const int64_t s2[4] = { 5, 4, 2, 1 }, up2[4] = { 9, 7, 2, 1 };
    upscale_case(UP_INTERPOLATE, s2, up2, GGML_SCALE_MODE_BICUBIC | GGML_SCALE_FLAG_ALIGN_CORNERS, false, 3);
}

Test(interpolate, bilinear_antialias) {
    const int64_t s[4] = { 16, 12, 2, 1 }, down[4] = { 6, 3, 2, 1 }, up[4] = { 32, 24, 2, 1 };
    upscale_case(UP_INTERPOLATE, s, down, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS, false, 1);
    upscale_case(UP_INTERPOLATE, s, up, GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS, true, 2);
}

Test(interpolate, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_interpolate(ctx, a, 8, 6, 1, 1, GGML_SCALE_MODE_COUNT), "ggml_interpolate");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_interpolate(ctx, a, 8, 6, 1, 1, GGML_SCALE_MODE_BICUBIC | GGML_SCALE_FLAG_ANTIALIAS),
                       "ggml_interpolate");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 3);
    to_expect_rejected(ctx, ggml_interpolate(ctx, a, 8, 6, 1, 1, GGML_SCALE_MODE_NEAREST), "ggml_interpolate");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_interpolate(ctx, a, 0, 6, 1, 1, GGML_SCALE_MODE_NEAREST), "ggml_interpolate");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_upscale(ctx, a, 1, GGML_SCALE_MODE_NEAREST), "ggml_upscale");
    ggml_free(ctx);
}

/* ---- SAM windows and relative positions ------------------------------------------------------ */

static void win_case(int64_t C, int64_t W, int64_t H, int w, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) (C * 100 + W * 10 + w));
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, C, W, H, 1);
    tu_fill(a, &rng, 0.5f, 2.0f); /* never zero: padding cannot pass for data */
    struct ggml_tensor * parts = ggml_win_part(e.ctx, a, w);
    cr_assert_not_null(parts, "%s", ggmlx_last_error());
    const int64_t npx = (W + w - 1) / w, npy = (H + w - 1) / w;
    cr_assert(parts->ne[0] == C && parts->ne[1] == w && parts->ne[2] == w && parts->ne[3] == npx * npy);
    cr_assert(ggmlx_get_op_params_i32(parts, 0) == npx && ggmlx_get_op_params_i32(parts, 1) == npy);
    run(&e, parts, n_threads);
    double * want = calloc((size_t) ggml_nelements(parts), sizeof(double));
    TU_FOR_EACH(parts, c, x, y, win) {
        const int64_t sx = (win % npx) * w + x, sy = (win / npx) * w + y;
        want[to_index(parts, c, x, y, win)] = sx < W && sy < H ? tu_get(a, c, sx, sy, 0) : 0.0;
    }
    to_check(parts, want, 0.0, "win_part");
    free(want);
    /* unpart gives a back exactly */
    struct ggml_tensor * back = ggml_win_unpart(e.ctx, parts, (int) W, (int) H, w);
    cr_assert_not_null(back, "%s", ggmlx_last_error());
    cr_assert(back->ne[0] == C && back->ne[1] == W && back->ne[2] == H && back->ne[3] == 1);
    to_alloc(&e, back);
    cr_assert_eq(tu_compute(e.ctx, back, n_threads), GGML_STATUS_SUCCESS);
    double * orig = to_values(a);
    to_check(back, orig, 0.0, "win_unpart");
    free(orig);
    to_end(&e);
}

Test(win_part, windows_with_padding_and_unpart_restores) {
    win_case(3, 7, 5, 3, 1);
    win_case(4, 6, 6, 3, 2);
    win_case(2, 5, 9, 4, 3);
    win_case(1, 1, 1, 2, 1);
}

Test(win_part, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 4, 4, 2);
    to_expect_rejected(ctx, ggml_win_part(ctx, a, 2), "ggml_win_part"); /* 4 dims */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 4, 4);
    to_expect_rejected(ctx, ggml_win_part(ctx, a, 0), "ggml_win_part");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 2, 2, 3); /* 3 windows cannot cover 4 x 4 */
    to_expect_rejected(ctx, ggml_win_unpart(ctx, a, 4, 4, 2), "ggml_win_unpart");
    ggml_free(ctx);
}

Test(get_rel_pos, rows_by_relative_offset) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(300);
    const int qh = 5;
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, 6, 2 * qh - 1, 1, 1);
    tu_fill(a, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = ggml_get_rel_pos(e.ctx, a, qh, qh);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->type == GGML_TYPE_F16 && r->ne[0] == 6 && r->ne[1] == qh && r->ne[2] == qh);
    run(&e, r, 2);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, c, k, q, i3) {
        want[to_index(r, c, k, q, i3)] = tu_get(a, c, qh - 1 - k + q, 0, 0);
    }
    to_check(r, want, 0.0, "get_rel_pos");
    free(want);
    to_end(&e);
}

Test(get_rel_pos, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 6, 9);
    to_expect_rejected(ctx, ggml_get_rel_pos(ctx, a, 5, 4), "ggml_get_rel_pos");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 6, 8);
    to_expect_rejected(ctx, ggml_get_rel_pos(ctx, a, 5, 5), "ggml_get_rel_pos");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 9);
    to_expect_rejected(ctx, ggml_get_rel_pos(ctx, a, 5, 5), "ggml_get_rel_pos");
    ggml_free(ctx);
}

static void add_rel_pos_case(bool inplace, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(inplace ? 310 : 311);
    const int64_t W = 4, H = 3, Q = 2, B = 3;
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, W * W, H * Q, B, 1);
    struct ggml_tensor * pw = to_new(&e, GGML_TYPE_F32, W, H, Q, B);
    struct ggml_tensor * ph = to_new(&e, GGML_TYPE_F32, W, H, Q, B);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(pw, &rng, -1.0f, 1.0f);
    tu_fill(ph, &rng, -1.0f, 1.0f);
    double * orig = to_values(a);
    struct ggml_tensor * r = inplace ? ggml_add_rel_pos_inplace(e.ctx, a, pw, ph) : ggml_add_rel_pos(e.ctx, a, pw, ph);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(ggmlx_get_op_params_i32(r, 0) == (inplace ? 1 : 0));
    if (inplace) {
        cr_assert(r->data == a->data);
        to_compute(&e, r, n_threads);
    } else {
        run(&e, r, n_threads);
    }
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const int64_t kh = i0 / W, kw = i0 % W, h = i1 % H, q = i1 / H;
        want[to_index(r, i0, i1, i2, i3)] = orig[to_index(r, i0, i1, i2, i3)] + tu_get(ph, kh, h, q, i2) +
                                            tu_get(pw, kw, h, q, i2);
    }
    to_check(r, want, 1e-6, inplace ? "add_rel_pos_inplace" : "add_rel_pos");
    if (!inplace) {
        double * still = to_values(a);
        to_check(a, orig, 0.0, "add_rel_pos left a alone");
        free(still);
    }
    free(want);
    free(orig);
    to_end(&e);
}

Test(add_rel_pos, adds_both_position_tables) {
    add_rel_pos_case(false, 1);
    add_rel_pos_case(false, 3);
}

Test(add_rel_pos_inplace, writes_into_a) {
    add_rel_pos_case(true, 2);
}

Test(add_rel_pos, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 6, 3);
    struct ggml_tensor * pw = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 3);
    struct ggml_tensor * ph = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 2);
    to_expect_rejected(ctx, ggml_add_rel_pos(ctx, a, pw, ph), "ggml_add_rel_pos"); /* shapes differ */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 15, 6, 3);
    pw = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 3);
    ph = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 3);
    to_expect_rejected(ctx, ggml_add_rel_pos_inplace(ctx, a, pw, ph), "ggml_add_rel_pos_inplace");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 6, 3);
    pw = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 4, 3, 2, 3);
    ph = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 4, 3, 2, 3);
    to_expect_rejected(ctx, ggml_add_rel_pos(ctx, a, pw, ph), "ggml_add_rel_pos");
    ggml_free(ctx);
}
