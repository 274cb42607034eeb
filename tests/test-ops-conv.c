/*
 * test-ops-conv.c -- im2col, im2col_3d, col2im_1d and every ggml_conv_* against direct
 * convolution loops in double: strides, padding, dilation, odd sizes, permuted data, F32 and F16
 * kernels, one and several threads, guard bytes around the single-op results; the refused shapes.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <stdlib.h>

/* ---- helpers --------------------------------------------------------------------------------- */

/* an allocating context for the composed graphs (im2col + mul_mat + reshapes) */
static struct ggml_context * big_ctx(void) {
    struct ggml_init_params p = { 64u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

static void compute_in(struct ggml_context * ctx, struct ggml_tensor * out, int n_threads) {
    cr_assert_not_null(out, "constructor failed: %s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    const enum ggml_status st = tu_compute(ctx, out, n_threads);
    cr_assert_eq(st, GGML_STATUS_SUCCESS, "compute failed: %s", ggmlx_last_error() ? ggmlx_last_error() : "?");
}

static int64_t out_len(int64_t in, int64_t k, int s, int p, int d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* b (data) of shape ne, stored contiguous or permuted */
static struct ggml_tensor * new_data(struct to_env * e, const int64_t ne[4], bool permuted) {
    return permuted ? to_new_permuted(e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3])
                    : to_new(e, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3]);
}

struct conv2 {
    int s0, s1, p0, p1, d0, d1;
};

/* direct 2D convolution in double: kernel (kw, kh, ic, oc), data (iw, ih, ic, n) -> [OW, OH, OC, N] */
static double * ref_conv2d(const struct ggml_tensor * a, const struct ggml_tensor * b, struct conv2 c, int64_t OW,
                           int64_t OH) {
    const int64_t KW = a->ne[0], KH = a->ne[1], IC = a->ne[2], OC = a->ne[3], N = b->ne[3];
    double * want = calloc((size_t) (OW * OH * OC * N), sizeof(double));
    for (int64_t n = 0; n < N; n++)
    for (int64_t oc = 0; oc < OC; oc++)
    for (int64_t oh = 0; oh < OH; oh++)
    for (int64_t ow = 0; ow < OW; ow++) {
        double sum = 0;
        for (int64_t ic = 0; ic < IC; ic++)
        for (int64_t kh = 0; kh < KH; kh++)
        for (int64_t kw = 0; kw < KW; kw++) {
            const int64_t iw = ow * c.s0 + kw * c.d0 - c.p0, ih = oh * c.s1 + kh * c.d1 - c.p1;
            if (iw >= 0 && iw < b->ne[0] && ih >= 0 && ih < b->ne[1]) {
                sum += tu_get(a, kw, kh, ic, oc) * tu_get(b, iw, ih, ic, n);
            }
        }
        want[((n * OC + oc) * OH + oh) * OW + ow] = sum;
    }
    return want;
}

/* ---- im2col ---------------------------------------------------------------------------------- */

static void im2col_case(bool is_2D, enum ggml_type dt, bool permuted, int n_threads, struct conv2 c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    /* 2D: kernel [3, 2, 3, 4], data [9, 7, 3, 2]; 1D: kernel [3, 4, 5], data [11, 4, 2] */
    const int64_t kne[4] = { 3, is_2D ? 2 : 4, is_2D ? 3 : 5, is_2D ? 4 : 1 };
    const int64_t bne[4] = { is_2D ? 9 : 11, is_2D ? 7 : 4, is_2D ? 3 : 2, is_2D ? 2 : 1 };
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, kne[0], kne[1], kne[2], kne[3]);
    struct ggml_tensor * b = new_data(&e, bne, permuted);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = ggml_im2col(e.ctx, a, b, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1, is_2D, dt);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = out_len(bne[0], kne[0], c.s0, c.p0, c.d0);
    const int64_t OH = is_2D ? out_len(bne[1], kne[1], c.s1, c.p1, c.d1) : 1;
    const int64_t KH = is_2D ? kne[1] : 1, IC = is_2D ? kne[2] : kne[1];
    cr_assert(r->op == GGML_OP_IM2COL && r->type == dt);
    cr_assert_eq(r->ne[0], IC * KH * kne[0]);
    cr_assert_eq(r->ne[1], OW);
    cr_assert_eq(r->ne[2], is_2D ? OH : bne[2]);
    cr_assert_eq(r->ne[3], is_2D ? bne[3] : 1);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 6), is_2D ? 1 : 0);
    to_alloc(&e, r);
    memset(r->data, 0x7f, ggml_nbytes(r));
    to_compute(&e, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        const int64_t kw = i0 % kne[0], kh = (i0 / kne[0]) % KH, ic = i0 / (kne[0] * KH);
        const int64_t oh = is_2D ? i2 : 0, n = is_2D ? i3 : i2;
        const int64_t iw = i1 * c.s0 + kw * c.d0 - c.p0, ih = oh * c.s1 + kh * c.d1 - c.p1;
        double v = 0;
        if (iw >= 0 && iw < bne[0] && ih >= 0 && ih < (is_2D ? bne[1] : 1)) {
            v = is_2D ? tu_get(b, iw, ih, ic, n) : tu_get(b, iw, ic, n, 0);
        }
        want[to_index(r, i0, i1, i2, i3)] = v;
    }
    to_check(r, want, dt == GGML_TYPE_F16 ? 1e-3 : 0.0, "im2col");
    free(want);
    to_end(&e);
}

Test(im2col, two_d_f32_and_f16_strides_padding_dilation) {
    const struct conv2 cs[] = { { 1, 1, 0, 0, 1, 1 }, { 2, 1, 1, 0, 1, 2 }, { 3, 2, 2, 1, 2, 1 } };
    for (int i = 0; i < 3; i++) {
        im2col_case(true, GGML_TYPE_F32, false, 1 + i, cs[i], 10 + (uint64_t) i);
        im2col_case(true, GGML_TYPE_F16, false, 2, cs[i], 20 + (uint64_t) i);
    }
}

Test(im2col, one_d_and_permuted_data) {
    const struct conv2 c = { 2, 0, 2, 0, 2, 0 };
    im2col_case(false, GGML_TYPE_F32, false, 1, c, 30);
    im2col_case(false, GGML_TYPE_F16, false, 3, c, 31);
    const struct conv2 c2 = { 1, 2, 1, 1, 1, 1 };
    im2col_case(true, GGML_TYPE_F32, true, 2, c2, 32);
}

Test(im2col, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 3, 3, 2, 4);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 1, 1, 0, 0, 1, 1, true, GGML_TYPE_F32), "ggml_im2col"); /* IC */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 9, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 1, 1, 0, 0, 1, 1, true, GGML_TYPE_F32), "ggml_im2col"); /* too big */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 3, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 0, 1, 0, 0, 1, 1, true, GGML_TYPE_F32), "ggml_im2col"); /* stride */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 3, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 1, 1, 0, 0, 1, 1, true, GGML_TYPE_Q8_0), "ggml_im2col");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 3, 2, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 2, 1, 2); /* 1D with ne3 > 1 */
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 1, 0, 0, 0, 1, 0, false, GGML_TYPE_F32), "ggml_im2col");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 3, 2, 4);
    b = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 8, 2, 1); /* F16 data */
    to_expect_rejected(ctx, ggml_im2col(ctx, a, b, 1, 0, 0, 0, 1, 0, false, GGML_TYPE_F32), "ggml_im2col");
    ggml_free(ctx);
}

/* ---- conv_1d family (im2col + mul_mat) ------------------------------------------------------- */

static void conv_1d_case(enum ggml_type kt, int K, int s, int p, int d, bool ph, int n_threads, uint64_t salt) {
    struct ggml_context * ctx = big_ctx();
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t L = 23, IC = 3, OC = 5, N = 2;
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, kt, K, IC, OC);
    struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, L, IC, N);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    if (ph) {
        p = K / 2;
    }
    struct ggml_tensor * r = ph ? ggml_conv_1d_ph(ctx, a, b, s, d) : ggml_conv_1d(ctx, a, b, s, p, d);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OL = out_len(L, K, s, p, d);
    cr_assert(r->ne[0] == OL && r->ne[1] == OC && r->ne[2] == N && r->ne[3] == 1 && r->type == GGML_TYPE_F32);
    compute_in(ctx, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ol, j, k, i3) {
        /* upstream's graph reshapes the [N*OL, OC] product to [OL, OC, N] without a permute, so
         * for N > 1 the dims 1 and 2 hold (oc, n) interleaved as the product's memory has them */
        const int64_t t = j + OC * k, n = t % N, oc = t / N;
        double sum = 0;
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t k = 0; k < K; k++) {
                const int64_t j = ol * s + k * d - p;
                if (j >= 0 && j < L) {
                    sum += tu_get(a, k, ic, oc, 0) * tu_get(b, j, ic, n, 0);
                }
            }
        }
        want[to_index(r, ol, j, k, i3)] = sum;
    }
    /* the columns are F16, as upstream's graph makes them */
    to_check(r, want, 3e-3, ph ? "conv_1d_ph" : "conv_1d");
    free(want);
    ggml_free(ctx);
}

Test(conv_1d, matches_direct_convolution) {
    conv_1d_case(GGML_TYPE_F32, 3, 1, 0, 1, false, 1, 40);
    conv_1d_case(GGML_TYPE_F16, 5, 2, 3, 2, false, 2, 41);
    conv_1d_case(GGML_TYPE_F32, 4, 3, 1, 1, false, 3, 42);
    /* a BF16 kernel: F32 columns, as upstream's graph picks for it */
    conv_1d_case(GGML_TYPE_BF16, 3, 2, 1, 1, false, 2, 45);
}

Test(conv_1d_ph, pads_half_the_kernel) {
    conv_1d_case(GGML_TYPE_F16, 3, 1, 0, 1, true, 1, 43);
    conv_1d_case(GGML_TYPE_F32, 7, 2, 0, 1, true, 2, 44);
}

static void conv_1d_dw_case(enum ggml_type kt, int K, int s, int p, int d, bool ph, int n_threads, uint64_t salt) {
    struct ggml_context * ctx = big_ctx();
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t L = 19, C = 6;
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, kt, K, 1, C);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, L, C);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    if (ph) {
        p = K / 2;
    }
    struct ggml_tensor * r = ph ? ggml_conv_1d_dw_ph(ctx, a, b, s, d) : ggml_conv_1d_dw(ctx, a, b, s, p, d);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OL = out_len(L, K, s, p, d);
    cr_assert(r->ne[0] == OL && r->ne[1] == C && r->ne[2] == 1 && r->ne[3] == 1);
    compute_in(ctx, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ol, c, i2, i3) {
        double sum = 0;
        for (int64_t k = 0; k < K; k++) {
            const int64_t j = ol * s + k * d - p;
            if (j >= 0 && j < L) {
                sum += tu_get(a, k, 0, c, 0) * tu_get(b, j, c, 0, 0);
            }
        }
        want[to_index(r, ol, c, i2, i3)] = sum;
    }
    to_check(r, want, 3e-3, ph ? "conv_1d_dw_ph" : "conv_1d_dw");
    free(want);
    ggml_free(ctx);
}

Test(conv_1d_dw, one_kernel_per_channel) {
    conv_1d_dw_case(GGML_TYPE_F32, 3, 1, 1, 1, false, 1, 50);
    conv_1d_dw_case(GGML_TYPE_F16, 4, 2, 0, 2, false, 2, 51);
}

Test(conv_1d_dw_ph, pads_half_the_kernel) {
    conv_1d_dw_case(GGML_TYPE_F32, 5, 1, 0, 1, true, 1, 52);
    conv_1d_dw_case(GGML_TYPE_F16, 3, 2, 0, 3, true, 3, 53);
}

Test(conv_1d, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 2, 4);
    struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 3, 1); /* IC 3 vs 2 */
    to_expect_rejected(ctx, ggml_conv_1d(ctx, a, b, 1, 0, 1), "ggml_im2col");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_I32, 3, 2, 4);
    b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 1);
    to_expect_rejected(ctx, ggml_conv_1d(ctx, a, b, 1, 0, 1), "ggml_conv_1d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 1, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 2, 2);
    to_expect_rejected(ctx, ggml_conv_1d_dw(ctx, a, b, 1, 0, 1), "ggml_conv_1d_dw");
    ggml_free(ctx);
}

/* ---- conv_2d family -------------------------------------------------------------------------- */

enum conv2_kind { C2_GRAPH, C2_DIRECT, C2_SK_P0, C2_S1_PH };

static void conv_2d_case(enum conv2_kind kind, enum ggml_type kt, struct conv2 c, bool permuted, int n_threads,
                         uint64_t salt) {
    struct to_env e = { 0 };
    struct ggml_context * ctx = NULL;
    const bool direct = kind == C2_DIRECT;
    if (direct) {
        to_begin(&e);
        ctx = e.ctx;
    } else {
        ctx = big_ctx();
    }
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t kne[4] = { kind == C2_SK_P0 ? 4 : 3, kind == C2_SK_P0 ? 2 : 3, 3, 4 };
    const int64_t bne[4] = { 13, 10, 3, 2 };
    struct ggml_tensor * a = direct ? to_new(&e, kt, kne[0], kne[1], kne[2], kne[3])
                                    : ggml_new_tensor_4d(ctx, kt, kne[0], kne[1], kne[2], kne[3]);
    struct ggml_tensor * b = direct ? new_data(&e, bne, permuted)
                                    : ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bne[0], bne[1], bne[2], bne[3]);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = NULL;
    switch (kind) {
    case C2_GRAPH:  r = ggml_conv_2d(ctx, a, b, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1); break;
    case C2_DIRECT: r = ggml_conv_2d_direct(ctx, a, b, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1); break;
    case C2_SK_P0:
        c = (struct conv2) { (int) kne[0], (int) kne[1], 0, 0, 1, 1 };
        r = ggml_conv_2d_sk_p0(ctx, a, b);
        break;
    case C2_S1_PH:
        c = (struct conv2) { 1, 1, (int) kne[0] / 2, (int) kne[1] / 2, 1, 1 };
        r = ggml_conv_2d_s1_ph(ctx, a, b);
        break;
    }
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = out_len(bne[0], kne[0], c.s0, c.p0, c.d0), OH = out_len(bne[1], kne[1], c.s1, c.p1, c.d1);
    cr_assert(r->ne[0] == OW && r->ne[1] == OH && r->ne[2] == kne[3] && r->ne[3] == bne[3], "shape [%lld, %lld, %lld, %lld]",
              (long long) r->ne[0], (long long) r->ne[1], (long long) r->ne[2], (long long) r->ne[3]);
    if (direct) {
        cr_assert(r->op == GGML_OP_CONV_2D && ggmlx_get_op_params_i32(r, 4) == c.d0);
        to_alloc(&e, r);
        memset(r->data, 0x7f, ggml_nbytes(r));
        to_compute(&e, r, n_threads);
    } else {
        compute_in(ctx, r, n_threads);
    }
    double * want = ref_conv2d(a, b, c, OW, OH);
    to_check(r, want, direct ? (kt == GGML_TYPE_F32 ? 1e-5 : 1e-4) : 3e-3, "conv_2d");
    free(want);
    if (direct) {
        to_end(&e);
    } else {
        ggml_free(ctx);
    }
}

static const struct conv2 C2[] = {
    { 1, 1, 0, 0, 1, 1 }, { 2, 1, 1, 2, 1, 1 }, { 1, 3, 2, 0, 2, 1 }, { 3, 2, 1, 1, 2, 2 },
};

Test(conv_2d, graph_matches_direct_convolution) {
    for (int i = 0; i < 4; i++) {
        conv_2d_case(C2_GRAPH, i % 2 ? GGML_TYPE_F16 : GGML_TYPE_F32, C2[i], false, 1 + i % 3, 60 + (uint64_t) i);
    }
    conv_2d_case(C2_GRAPH, GGML_TYPE_BF16, C2[1], false, 2, 64);
}

Test(conv_2d_direct, f32_and_f16_kernels_permuted_data_threads) {
    for (int i = 0; i < 4; i++) {
        conv_2d_case(C2_DIRECT, GGML_TYPE_F32, C2[i], i == 2, 1 + i % 3, 70 + (uint64_t) i);
        conv_2d_case(C2_DIRECT, GGML_TYPE_F16, C2[i], i == 3, 2, 80 + (uint64_t) i);
    }
}

Test(conv_2d_sk_p0, stride_is_the_kernel) {
    conv_2d_case(C2_SK_P0, GGML_TYPE_F16, C2[0], false, 2, 90);
}

Test(conv_2d_s1_ph, same_size_output) {
    conv_2d_case(C2_S1_PH, GGML_TYPE_F32, C2[0], false, 1, 91);
    conv_2d_case(C2_S1_PH, GGML_TYPE_F16, C2[0], false, 3, 92);
}

Test(conv_2d_direct, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 4);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_conv_2d_direct(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_conv_2d_direct");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_BF16, 3, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_conv_2d_direct(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_conv_2d_direct");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_conv_2d_direct(ctx, a, b, 1, 1, 0, 0, 0, 1), "ggml_conv_2d_direct"); /* d0 0 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_conv_2d_direct(ctx, a, b, 1, 1, 0, 0, 4, 1), "ggml_conv_2d_direct"); /* span 9 > 8 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 4);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 3, 1);
    to_expect_rejected(ctx, ggml_conv_2d(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_im2col");
    ggml_free(ctx);
}

/* ---- depthwise 2D ---------------------------------------------------------------------------- */

static void conv_2d_dw_case(bool direct, enum ggml_type kt, struct conv2 c, bool cwhn, int n_threads, uint64_t salt) {
    struct ggml_context * ctx = big_ctx();
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t C = 5, N = 2, W = 11, H = 9;
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, kt, 3, 3, 1, C);
    struct ggml_tensor * b = NULL;
    if (cwhn) {
        /* channels innermost in memory: [C, W, H, N] permuted to [W, H, C, N] */
        b = ggml_permute(ctx, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, C, W, H, N), 2, 0, 1, 3);
    } else {
        b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, W, H, C, N);
    }
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = direct ? ggml_conv_2d_dw_direct(ctx, a, b, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1)
                                    : ggml_conv_2d_dw(ctx, a, b, c.s0, c.s1, c.p0, c.p1, c.d0, c.d1);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = out_len(W, 3, c.s0, c.p0, c.d0), OH = out_len(H, 3, c.s1, c.p1, c.d1);
    cr_assert(r->ne[0] == OW && r->ne[1] == OH && r->ne[2] == C && r->ne[3] == N, "shape [%lld, %lld, %lld, %lld]",
              (long long) r->ne[0], (long long) r->ne[1], (long long) r->ne[2], (long long) r->ne[3]);
    if (direct && cwhn) {
        cr_assert(r->nb[2] == sizeof(float) && r->nb[0] == C * sizeof(float), "result not channels-innermost");
    }
    compute_in(ctx, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ow, oh, ch, n) {
        double sum = 0;
        for (int64_t kh = 0; kh < 3; kh++) {
            for (int64_t kw = 0; kw < 3; kw++) {
                const int64_t iw = ow * c.s0 + kw * c.d0 - c.p0, ih = oh * c.s1 + kh * c.d1 - c.p1;
                if (iw >= 0 && iw < W && ih >= 0 && ih < H) {
                    sum += tu_get(a, kw, kh, 0, ch) * tu_get(b, iw, ih, ch, n);
                }
            }
        }
        want[to_index(r, ow, oh, ch, n)] = sum;
    }
    to_check(r, want, direct ? 1e-4 : 3e-3, direct ? "conv_2d_dw_direct" : "conv_2d_dw");
    free(want);
    ggml_free(ctx);
}

Test(conv_2d_dw, graph_matches_direct_convolution) {
    conv_2d_dw_case(false, GGML_TYPE_F32, C2[1], false, 1, 100);
    conv_2d_dw_case(false, GGML_TYPE_F16, C2[3], false, 2, 101);
}

Test(conv_2d_dw_direct, whcn_and_cwhn_layouts) {
    for (int i = 0; i < 4; i++) {
        conv_2d_dw_case(true, i % 2 ? GGML_TYPE_F16 : GGML_TYPE_F32, C2[i], false, 1 + i % 3, 110 + (uint64_t) i);
        conv_2d_dw_case(true, GGML_TYPE_F32, C2[i], true, 2, 120 + (uint64_t) i);
    }
}

Test(conv_2d_dw_direct, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 4);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 4, 1);
    to_expect_rejected(ctx, ggml_conv_2d_dw_direct(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_conv_2d_dw_direct");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 1, 3);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 4, 1);
    to_expect_rejected(ctx, ggml_conv_2d_dw_direct(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_conv_2d_dw_direct");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 1, 3);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 4, 1);
    to_expect_rejected(ctx, ggml_conv_2d_dw(ctx, a, b, 1, 1, 0, 0, 1, 1), "ggml_conv_2d_dw");
    ggml_free(ctx);
}

/* ---- 3D -------------------------------------------------------------------------------------- */

struct conv3 {
    int s[3], p[3], d[3];
};

static void conv_3d_case(bool direct, enum ggml_type kt, struct conv3 c, int n_threads, uint64_t salt) {
    struct ggml_context * ctx = big_ctx();
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t IC = 2, OC = 3, N = 2, K[3] = { 3, 2, 2 }, I[3] = { 7, 6, 5 };
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, kt, K[0], K[1], K[2], IC * OC);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, I[0], I[1], I[2], IC * N);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = direct
        ? ggml_conv_3d_direct(ctx, a, b, c.s[0], c.s[1], c.s[2], c.p[0], c.p[1], c.p[2], c.d[0], c.d[1], c.d[2],
                              (int) IC, (int) N, (int) OC)
        : ggml_conv_3d(ctx, a, b, IC, c.s[0], c.s[1], c.s[2], c.p[0], c.p[1], c.p[2], c.d[0], c.d[1], c.d[2]);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    int64_t O[3];
    for (int i = 0; i < 3; i++) {
        O[i] = out_len(I[i], K[i], c.s[i], c.p[i], c.d[i]);
    }
    cr_assert(r->ne[0] == O[0] && r->ne[1] == O[1] && r->ne[2] == O[2] && r->ne[3] == OC * N, "shape [%lld, %lld, %lld, %lld]",
              (long long) r->ne[0], (long long) r->ne[1], (long long) r->ne[2], (long long) r->ne[3]);
    compute_in(ctx, r, n_threads);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, ow, oh, od, i3) {
        const int64_t n = i3 / OC, oc = i3 % OC;
        double sum = 0;
        for (int64_t ic = 0; ic < IC; ic++)
        for (int64_t kd = 0; kd < K[2]; kd++)
        for (int64_t kh = 0; kh < K[1]; kh++)
        for (int64_t kw = 0; kw < K[0]; kw++) {
            const int64_t iw = ow * c.s[0] + kw * c.d[0] - c.p[0];
            const int64_t ih = oh * c.s[1] + kh * c.d[1] - c.p[1];
            const int64_t id = od * c.s[2] + kd * c.d[2] - c.p[2];
            if (iw >= 0 && iw < I[0] && ih >= 0 && ih < I[1] && id >= 0 && id < I[2]) {
                sum += tu_get(a, kw, kh, kd, oc * IC + ic) * tu_get(b, iw, ih, id, n * IC + ic);
            }
        }
        want[to_index(r, ow, oh, od, i3)] = sum;
    }
    to_check(r, want, direct ? 1e-4 : 3e-3, direct ? "conv_3d_direct" : "conv_3d");
    free(want);
    ggml_free(ctx);
}

static const struct conv3 C3[] = {
    { { 1, 1, 1 }, { 0, 0, 0 }, { 1, 1, 1 } },
    { { 2, 1, 2 }, { 1, 0, 1 }, { 1, 2, 1 } },
    { { 1, 2, 1 }, { 2, 1, 0 }, { 2, 1, 2 } },
};

Test(conv_3d, graph_matches_direct_convolution) {
    for (int i = 0; i < 3; i++) {
        conv_3d_case(false, i == 1 ? GGML_TYPE_F16 : GGML_TYPE_F32, C3[i], 1 + i, 130 + (uint64_t) i);
    }
}

Test(conv_3d_direct, f32_and_f16_kernels) {
    for (int i = 0; i < 3; i++) {
        conv_3d_case(true, GGML_TYPE_F32, C3[i], 1 + i, 140 + (uint64_t) i);
        conv_3d_case(true, GGML_TYPE_F16, C3[i], 2, 150 + (uint64_t) i);
    }
}

Test(im2col_3d, column_layout) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(160);
    const int64_t IC = 2, N = 2;
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F16, 2, 3, 2, IC * 3);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 5, 6, 4, IC * N);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * r = ggml_im2col_3d(e.ctx, a, b, IC, 1, 2, 1, 1, 0, 1, 2, 1, 1, GGML_TYPE_F32);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t OW = out_len(5, 2, 1, 1, 2), OH = out_len(6, 3, 2, 0, 1), OD = out_len(4, 2, 1, 1, 1);
    cr_assert(r->ne[0] == 2 * 3 * 2 * IC && r->ne[1] == OW && r->ne[2] == OH && r->ne[3] == OD * N);
    to_alloc(&e, r);
    to_compute(&e, r, 2);
    double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
    TU_FOR_EACH(r, i0, ow, oh, i3) {
        const int64_t kw = i0 % 2, kh = (i0 / 2) % 3, kd = (i0 / 6) % 2, ic = i0 / 12;
        const int64_t n = i3 / OD, od = i3 % OD;
        const int64_t iw = ow * 1 + kw * 2 - 1, ih = oh * 2 + kh - 0, id = od + kd - 1;
        const bool in = iw >= 0 && iw < 5 && ih >= 0 && ih < 6 && id >= 0 && id < 4;
        want[to_index(r, i0, ow, oh, i3)] = in ? tu_get(b, iw, ih, id, n * IC + ic) : 0.0;
    }
    to_check(r, want, 0.0, "im2col_3d");
    free(want);
    to_end(&e);
}

/* upstream's test-backend-ops gives IC 3 with a kernel of ne3 1: only KW, KH, KD are read */
Test(im2col_3d, kernel_ne3_need_not_be_a_multiple_of_ic) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 1);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 10, 10, 10, 9);
    struct ggml_tensor * r = ggml_im2col_3d(ctx, a, b, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, GGML_TYPE_F32);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == 27 * 3 && r->ne[1] == 8 && r->ne[2] == 8 && r->ne[3] == 8 * 3);
    ggml_free(ctx);
}

/* upstream's v=1 case: a view of 1 channel with IC 3 gives N = 0 and an empty result, computed as such */
Test(im2col_3d, fewer_channels_than_ic_give_an_empty_result) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 3, 3, 3, 3);
    struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, 6, 6, 5, 1);
    struct ggml_tensor * r = ggml_im2col_3d(e.ctx, a, b, 3, 1, 1, 1, 0, 0, 0, 1, 1, 1, GGML_TYPE_F32);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == 27 * 3 && r->ne[3] == 0 && ggml_nelements(r) == 0);
    to_alloc(&e, r);
    to_compute(&e, r, 2);
    to_end(&e);
}

Test(conv_3d, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 6);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 8, 4);
    to_expect_rejected(ctx, ggml_conv_3d_direct(ctx, a, b, 1, 1, 1, 0, 0, 0, 1, 1, 1, 2, 2, 2), "ggml_conv_3d_direct");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 6);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 8, 4);
    to_expect_rejected(ctx, ggml_im2col_3d(ctx, a, b, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, GGML_TYPE_F32), "ggml_im2col_3d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 3, 6);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 8, 4);
    to_expect_rejected(ctx, ggml_conv_3d(ctx, a, b, 4, 1, 1, 1, 0, 0, 0, 1, 1, 1), "ggml_conv_3d");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 9, 6);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 8, 8, 4);
    to_expect_rejected(ctx, ggml_conv_3d(ctx, a, b, 2, 1, 1, 1, 0, 0, 0, 1, 1, 1), "ggml_im2col_3d");
    ggml_free(ctx);
}

/* ---- transposed convolutions and col2im ------------------------------------------------------ */

Test(conv_transpose_1d, scatters_each_input_sample) {
    for (int t = 0; t < 2; t++) {
        for (int s0 = 1; s0 <= 3; s0++) {
            struct to_env e;
            to_begin(&e);
            struct tu_rng rng = tu_rng_new(170 + (uint64_t) (t * 10 + s0));
            const int64_t K = 4, OC = 3, IC = 5, L = 9;
            struct ggml_tensor * a = to_new(&e, t ? GGML_TYPE_F16 : GGML_TYPE_F32, K, OC, IC, 1);
            struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, L, IC, 1, 1);
            tu_fill(a, &rng, -1.0f, 1.0f);
            tu_fill(b, &rng, -1.0f, 1.0f);
            struct ggml_tensor * r = ggml_conv_transpose_1d(e.ctx, a, b, s0, 0, 1);
            cr_assert_not_null(r, "%s", ggmlx_last_error());
            cr_assert(r->ne[0] == (L - 1) * s0 + K && r->ne[1] == OC && r->ne[2] == 1);
            to_alloc(&e, r);
            memset(r->data, 0x7f, ggml_nbytes(r));
            to_compute(&e, r, s0);
            double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
            for (int64_t oc = 0; oc < OC; oc++)
            for (int64_t ic = 0; ic < IC; ic++)
            for (int64_t l = 0; l < L; l++)
            for (int64_t k = 0; k < K; k++) {
                want[oc * r->ne[0] + l * s0 + k] += tu_get(a, k, oc, ic, 0) * tu_get(b, l, ic, 0, 0);
            }
            to_check(r, want, 1e-5, "conv_transpose_1d");
            free(want);
            to_end(&e);
        }
    }
}

Test(conv_transpose_1d, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 5);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 5);
    to_expect_rejected(ctx, ggml_conv_transpose_1d(ctx, a, b, 1, 1, 1), "ggml_conv_transpose_1d"); /* p0 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 5);
    b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 4);
    to_expect_rejected(ctx, ggml_conv_transpose_1d(ctx, a, b, 1, 0, 1), "ggml_conv_transpose_1d"); /* IC */
    ggml_free(ctx);
}

Test(conv_transpose_2d_p0, scatters_each_input_pixel) {
    for (int t = 0; t < 2; t++) {
        for (int st = 1; st <= 3; st++) {
            struct to_env e;
            to_begin(&e);
            struct tu_rng rng = tu_rng_new(180 + (uint64_t) (t * 10 + st));
            const int64_t KW = 3, KH = 2, OC = 3, IC = 4, W = 5, H = 4, N = 2;
            struct ggml_tensor * a = to_new(&e, t ? GGML_TYPE_F16 : GGML_TYPE_F32, KW, KH, OC, IC);
            struct ggml_tensor * b = to_new(&e, GGML_TYPE_F32, W, H, IC, N);
            tu_fill(a, &rng, -1.0f, 1.0f);
            tu_fill(b, &rng, -1.0f, 1.0f);
            struct ggml_tensor * r = ggml_conv_transpose_2d_p0(e.ctx, a, b, st);
            cr_assert_not_null(r, "%s", ggmlx_last_error());
            cr_assert(r->ne[0] == (W - 1) * st + KW && r->ne[1] == (H - 1) * st + KH && r->ne[2] == OC && r->ne[3] == N);
            to_alloc(&e, r);
            to_compute(&e, r, st);
            double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
            for (int64_t n = 0; n < N; n++)
            for (int64_t oc = 0; oc < OC; oc++)
            for (int64_t ic = 0; ic < IC; ic++)
            for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++)
            for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t kx = 0; kx < KW; kx++) {
                want[to_index(r, x * st + kx, y * st + ky, oc, n)] += tu_get(a, kx, ky, oc, ic) * tu_get(b, x, y, ic, n);
            }
            to_check(r, want, 1e-5, "conv_transpose_2d_p0");
            free(want);
            to_end(&e);
        }
    }
}

Test(conv_transpose_2d_p0, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 4);
    struct ggml_tensor * b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 5, 5, 3, 1);
    to_expect_rejected(ctx, ggml_conv_transpose_2d_p0(ctx, a, b, 1), "ggml_conv_transpose_2d_p0");
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, 2, 3);
    b = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 5, 5, 3, 1);
    to_expect_rejected(ctx, ggml_conv_transpose_2d_p0(ctx, a, b, 0), "ggml_conv_transpose_2d_p0");
    ggml_free(ctx);
}

Test(col2im_1d, sums_overlapping_columns) {
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int t = 0; t < 3; t++) {
        for (int s0 = 1; s0 <= 3; s0++) {
            struct to_env e;
            to_begin(&e);
            struct tu_rng rng = tu_rng_new(190 + (uint64_t) (t * 10 + s0));
            const int64_t K = 4, OC = 3, T_in = 7;
            const int p0 = s0 - 1;
            struct ggml_tensor * a = to_new(&e, types[t], K * OC, T_in, 1, 1);
            tu_fill(a, &rng, -1.0f, 1.0f);
            struct ggml_tensor * r = ggml_col2im_1d(e.ctx, a, s0, (int) OC, p0);
            cr_assert_not_null(r, "%s", ggmlx_last_error());
            const int64_t T_out = (T_in - 1) * s0 + K - 2 * p0;
            cr_assert(r->ne[0] == T_out && r->ne[1] == OC && r->type == types[t]);
            to_alloc(&e, r);
            to_compute(&e, r, t + 1);
            double * want = calloc((size_t) ggml_nelements(r), sizeof(double));
            for (int64_t oc = 0; oc < OC; oc++)
            for (int64_t ti = 0; ti < T_in; ti++)
            for (int64_t k = 0; k < K; k++) {
                const int64_t to = ti * s0 + k - p0;
                if (to >= 0 && to < T_out) {
                    want[oc * T_out + to] += tu_get(a, oc * K + k, ti, 0, 0);
                }
            }
            to_check(r, want, tu_tol(types[t]), "col2im_1d");
            free(want);
            to_end(&e);
        }
    }
}

Test(col2im_1d, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 10, 4);
    to_expect_rejected(ctx, ggml_col2im_1d(ctx, a, 1, 3, 0), "ggml_col2im_1d"); /* 10 not a multiple of 3 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 2);
    to_expect_rejected(ctx, ggml_col2im_1d(ctx, a, 1, 3, 2), "ggml_col2im_1d"); /* crops everything */
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 6, 2);
    to_expect_rejected(ctx, ggml_col2im_1d(ctx, a, 1, 3, 0), "ggml_col2im_1d");
    ggml_free(ctx);
}
