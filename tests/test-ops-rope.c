/*
 * test-ops-rope.c -- ROPE (normal and NEOX) against a double reference: full and partial
 * n_dims, frequency factors, YaRN (ext_factor != 0), F32 and F16, strided inputs, in place,
 * several threads, the op_params layout, ggml_rope_yarn_corr_dims, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

enum layout { CONTIG, TRANSPOSED, PERMUTED };

struct rope_case {
    int64_t        ne[4];      /* [head_dim, n_head, n_tokens, n_seq] */
    enum ggml_type type;
    enum layout    layout;
    int            n_dims;
    int            mode;
    bool           freq_factors;
    bool           use_ext;    /* ggml_rope_ext with the fields below; else ggml_rope */
    int            n_ctx_orig;
    float          freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow;
    bool           inplace;
    int            n_threads;
};

static struct rope_case basic(int64_t ne0, int64_t ne1, int64_t ne2, int n_dims, int mode) {
    struct rope_case c;
    memset(&c, 0, sizeof c);
    c.ne[0] = ne0; c.ne[1] = ne1; c.ne[2] = ne2; c.ne[3] = 1;
    c.type = GGML_TYPE_F32;
    c.n_dims = n_dims;
    c.mode = mode;
    c.freq_base = 10000.0f;
    c.freq_scale = 1.0f;
    c.attn_factor = 1.0f;
    c.n_threads = 1;
    return c;
}

static struct rope_case yarn(int64_t ne0, int64_t ne1, int64_t ne2, int n_dims, int mode, float ext_factor) {
    struct rope_case c = basic(ne0, ne1, ne2, n_dims, mode);
    c.use_ext = true;
    c.n_ctx_orig = 4096;
    c.freq_base = 500000.0f;
    c.freq_scale = 0.25f;
    c.ext_factor = ext_factor;
    c.attn_factor = 0.9f;
    c.beta_fast = 32.0f;
    c.beta_slow = 1.0f;
    return c;
}

/* YaRN's correction dims, in double */
static void ref_corr_dims(int n_dims, int n_ctx_orig, double base, double beta_fast, double beta_slow, double dims[2]) {
    const double two_pi = 6.283185307179586;
    const double lo = n_dims * log(n_ctx_orig / (beta_fast * two_pi)) / (2.0 * log(base));
    const double hi = n_dims * log(n_ctx_orig / (beta_slow * two_pi)) / (2.0 * log(base));
    dims[0] = fmax(0.0, floor(lo));
    dims[1] = fmin((double) (n_dims - 1), ceil(hi));
}

static void run_rope(const struct rope_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a;
    switch (c->layout) {
    case TRANSPOSED: a = to_new_transposed(&e, c->type, c->ne[0], c->ne[1], c->ne[2], c->ne[3]); break;
    case PERMUTED:   a = to_new_permuted(&e, c->type, c->ne[0], c->ne[1], c->ne[2], c->ne[3]); break;
    default:         a = to_new(&e, c->type, c->ne[0], c->ne[1], c->ne[2], c->ne[3]); break;
    }
    tu_fill(a, &rng, -1.0f, 1.0f);
    struct ggml_tensor * pos = to_new(&e, GGML_TYPE_I32, c->ne[2], 1, 1, 1);
    for (int64_t i = 0; i < c->ne[2]; i++) {
        tu_set(pos, i, 0, 0, 0, (double) (int) (tu_next(&rng) % 48));
    }
    struct ggml_tensor * ff = NULL;
    if (c->freq_factors) {
        ff = to_new(&e, GGML_TYPE_F32, c->n_dims / 2 + 3, 1, 1, 1);
        tu_fill(ff, &rng, 1.0f, 4.0f);
    }
    double * va = to_values(a);

    const int    n_pairs    = c->n_dims / 2;
    const double freq_scale = c->use_ext ? c->freq_scale : 1.0;
    const double ext_factor = c->use_ext ? c->ext_factor : 0.0;
    double corr[2] = { 0.0, 0.0 };
    double mscale  = c->use_ext ? c->attn_factor : 1.0;
    if (ext_factor != 0.0) {
        ref_corr_dims(c->n_dims, c->n_ctx_orig, c->freq_base, c->beta_fast, c->beta_slow, corr);
        mscale *= 1.0 + 0.1 * log(1.0 / freq_scale);
    }
    double * want = (double *) malloc((size_t) ggml_nelements(a) * sizeof(double));
    for (int64_t i3 = 0; i3 < c->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < c->ne[2]; i2++) {
            const double p = tu_get(pos, i2, 0, 0, 0);
            for (int64_t i1 = 0; i1 < c->ne[1]; i1++) {
                for (int64_t i0 = c->n_dims; i0 < c->ne[0]; i0++) {
                    want[to_index(a, i0, i1, i2, i3)] = va[to_index(a, i0, i1, i2, i3)];
                }
                for (int i = 0; i < n_pairs; i++) {
                    const double f  = ff ? tu_get(ff, i, 0, 0, 0) : 1.0;
                    const double te = p * pow((double) c->freq_base, -2.0 * i / c->n_dims) / f;
                    double theta = freq_scale * te;
                    if (ext_factor != 0.0) {
                        const double y    = (i - corr[0]) / fmax(0.001, corr[1] - corr[0]);
                        const double ramp = 1.0 - fmin(1.0, fmax(0.0, y));
                        const double mix  = ramp * ext_factor;
                        theta = theta * (1.0 - mix) + te * mix;
                    }
                    const int64_t j0 = c->mode == GGML_ROPE_TYPE_NEOX ? i : 2 * i;
                    const int64_t j1 = c->mode == GGML_ROPE_TYPE_NEOX ? i + n_pairs : 2 * i + 1;
                    const double x0 = va[to_index(a, j0, i1, i2, i3)];
                    const double x1 = va[to_index(a, j1, i1, i2, i3)];
                    want[to_index(a, j0, i1, i2, i3)] = (x0 * cos(theta) - x1 * sin(theta)) * mscale;
                    want[to_index(a, j1, i1, i2, i3)] = (x0 * sin(theta) + x1 * cos(theta)) * mscale;
                }
            }
        }
    }

    struct ggml_tensor * r;
    if (c->use_ext) {
        r = (c->inplace ? ggml_rope_ext_inplace : ggml_rope_ext)(e.ctx, a, pos, ff, c->n_dims, c->mode, c->n_ctx_orig,
                                                               c->freq_base, c->freq_scale, c->ext_factor,
                                                               c->attn_factor, c->beta_fast, c->beta_slow);
    } else {
        r = (c->inplace ? ggml_rope_inplace : ggml_rope)(e.ctx, a, pos, c->n_dims, c->mode);
    }
    cr_assert_not_null(r, "rope: %s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_ROPE);
    cr_assert_eq(r->type, c->type);
    cr_assert_eq(r->src[0], a);
    cr_assert_eq(r->src[1], pos);
    cr_assert_eq(r->src[2], ff);
    if (c->inplace) {
        cr_assert_eq(r->data, a->data, "in-place result must share a's memory");
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, c->n_threads);

    char what[200];
    snprintf(what, sizeof what, "rope%s%s %s mode %d [%lld,%lld,%lld,%lld] n_dims %d layout %d ff %d ext %g threads %d",
             c->use_ext ? "_ext" : "", c->inplace ? "_inplace" : "", ggml_type_name(c->type), c->mode,
             (long long) c->ne[0], (long long) c->ne[1], (long long) c->ne[2], (long long) c->ne[3], c->n_dims,
             (int) c->layout, (int) c->freq_factors, ext_factor, c->n_threads);
    /* angles up to ~50 rad computed in float: a few 1e-6 of absolute error are expected */
    to_check(r, want, c->type == GGML_TYPE_F32 ? 3e-5 : tu_tol(c->type), what);
    if (!c->inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

static const int MODES[] = { GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX };

Test(rope, full_rows_all_sizes) {
    for (int m = 0; m < 2; m++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t ne0 = TU_SIZES[s];
            if (ne0 < 2) {
                continue; /* no pair to rotate: n_dims would be 0 (rejected, see below) */
            }
            const int64_t heads  = ne0 >= 1023 ? 1 : 3;
            const int64_t tokens = ne0 >= 1023 ? 2 : 5;
            /* the largest even n_dims: odd sizes leave their last element to be copied */
            struct rope_case c = basic(ne0, heads, tokens, (int) (ne0 & ~(int64_t) 1), MODES[m]);
            run_rope(&c, (uint64_t) (m * 100 + s));
        }
    }
}

Test(rope, partial_n_dims_copies_the_rest) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = basic(64, 4, 6, 32, MODES[m]);
        run_rope(&c, (uint64_t) (200 + m));
        c = basic(128, 2, 3, 2, MODES[m]);
        run_rope(&c, (uint64_t) (210 + m));
        c = basic(33, 3, 4, 10, MODES[m]);
        run_rope(&c, (uint64_t) (220 + m));
    }
}

Test(rope, frequency_factors) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = basic(64, 3, 5, 64, MODES[m]);
        c.use_ext = true;
        c.freq_factors = true;
        run_rope(&c, (uint64_t) (300 + m));
        c = basic(96, 2, 4, 48, MODES[m]);
        c.use_ext = true;
        c.freq_factors = true;
        c.freq_scale = 0.5f;
        c.attn_factor = 1.25f;
        run_rope(&c, (uint64_t) (310 + m));
    }
}

Test(rope, yarn_extrapolation_mix) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = yarn(128, 2, 7, 128, MODES[m], 1.0f);
        run_rope(&c, (uint64_t) (400 + m));
        c = yarn(64, 3, 5, 48, MODES[m], 0.5f);
        c.freq_factors = true;
        run_rope(&c, (uint64_t) (410 + m));
        /* ext_factor 0: interpolation only, no amplitude correction */
        c = yarn(64, 2, 4, 64, MODES[m], 0.0f);
        run_rope(&c, (uint64_t) (420 + m));
    }
}

Test(rope, f16_rows) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = basic(64, 4, 5, 64, MODES[m]);
        c.type = GGML_TYPE_F16;
        run_rope(&c, (uint64_t) (500 + m));
        c = yarn(33, 2, 3, 16, MODES[m], 1.0f);
        c.type = GGML_TYPE_F16;
        c.freq_factors = true;
        run_rope(&c, (uint64_t) (510 + m));
        c = basic(32, 3, 4, 32, MODES[m]);
        c.type = GGML_TYPE_F16;
        c.layout = PERMUTED;
        c.inplace = true;
        run_rope(&c, (uint64_t) (520 + m));
    }
}

Test(rope, strided_inputs) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = basic(32, 31, 3, 32, MODES[m]);
        c.layout = TRANSPOSED;
        run_rope(&c, (uint64_t) (600 + m));
        c = basic(33, 4, 5, 24, MODES[m]);
        c.ne[3] = 2;
        c.layout = PERMUTED;
        run_rope(&c, (uint64_t) (610 + m));
    }
}

Test(rope, inplace_and_threads) {
    for (int m = 0; m < 2; m++) {
        struct rope_case c = basic(128, 8, 9, 96, MODES[m]);
        c.inplace = true;
        c.n_threads = 2;
        run_rope(&c, (uint64_t) (700 + m));
        c = yarn(64, 16, 8, 64, MODES[m], 1.0f);
        c.n_threads = 3;
        run_rope(&c, (uint64_t) (710 + m));
        c = basic(32, 4, 4, 32, MODES[m]);
        c.layout = TRANSPOSED;
        c.inplace = true;
        run_rope(&c, (uint64_t) (720 + m));
    }
}

Test(rope, op_params_layout_matches_upstream) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 4, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor * f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);

    struct ggml_tensor * r = ggml_rope(ctx, a, p, 32, GGML_ROPE_TYPE_NEOX);
    cr_assert_not_null(r);
    const int32_t want_i[5] = { 0, 32, GGML_ROPE_TYPE_NEOX, 0, 0 };
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(ggmlx_get_op_params_i32(r, i), want_i[i], "op_params[%d]", i);
    }
    const float want_f[6] = { 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f };
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(ggmlx_get_op_params_f32(r, 5 + i), want_f[i], "op_params[%d]", 5 + i);
    }
    cr_assert_null(r->src[2]);
    cr_assert_null(r->view_src);

    r = ggml_rope_ext_inplace(ctx, a, p, f, 32, GGML_ROPE_TYPE_NORMAL, 2048, 5e5f, 0.5f, 1.0f, 0.75f, 24.0f, 2.0f);
    cr_assert_not_null(r);
    cr_assert_eq(r->view_src, a);
    cr_assert_eq(r->src[2], f);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 1), 32);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 2), GGML_ROPE_TYPE_NORMAL);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 4), 2048);
    const float want_e[6] = { 5e5f, 0.5f, 1.0f, 0.75f, 24.0f, 2.0f };
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(ggmlx_get_op_params_f32(r, 5 + i), want_e[i], "op_params[%d]", 5 + i);
    }
    for (int i = 11; i < 15; i++) {
        cr_assert_eq(ggmlx_get_op_params_i32(r, i), 0, "sections op_params[%d]", i);
    }
    ggml_free(ctx);
}

Test(rope, yarn_corr_dims_helper) {
    const int   n_dims[] = { 64, 128, 96 };
    const int   n_ctx[]  = { 2048, 4096, 32768 };
    const float base[]   = { 10000.0f, 500000.0f, 1000000.0f };
    for (int k = 0; k < 3; k++) {
        float  got[2] = { -1.0f, -1.0f };
        double want[2];
        ggml_rope_yarn_corr_dims(n_dims[k], n_ctx[k], base[k], 32.0f, 1.0f, got);
        ref_corr_dims(n_dims[k], n_ctx[k], base[k], 32.0, 1.0, want);
        cr_assert_eq((double) got[0], want[0], "start: got %g want %g", (double) got[0], want[0]);
        cr_assert_eq((double) got[1], want[1], "end: got %g want %g", (double) got[1], want[1]);
        cr_assert(got[0] >= 0.0f && got[1] <= (float) (n_dims[k] - 1));
    }
    ggml_rope_yarn_corr_dims(64, 4096, 10000.0f, 32.0f, 1.0f, NULL);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_rope_yarn_corr_dims"));
}

/* ---- the error contract -------------------------------------------------------------------- */

Test(rope, rejects_null_tensors) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    to_expect_rejected(ctx, ggml_rope(ctx, a, NULL, 8, 0), "ggml_rope");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    to_expect_rejected(ctx, ggml_rope_ext(ctx, NULL, p, NULL, 8, 0, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                       "ggml_rope_ext");
    ggml_free(ctx);

    cr_assert_null(ggml_rope(NULL, NULL, NULL, 8, 0));
    cr_assert_not_null(ggmlx_last_error());
}

Test(rope, rejects_unsupported_modes) {
    const int modes[] = { 1, 3, GGML_ROPE_TYPE_MROPE, GGML_ROPE_TYPE_VISION, GGML_ROPE_TYPE_IMROPE };
    for (int k = 0; k < 5; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
        struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
        to_expect_rejected(ctx, ggml_rope_inplace(ctx, a, p, 8, modes[k]), "ggml_rope_inplace");
        cr_assert_not_null(strstr(ggmlx_last_error(), "mode"), "message should name the mode: %s", ggmlx_last_error());
        ggml_free(ctx);
    }
}

Test(rope, rejects_bad_positions) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3); /* not I32 */
    to_expect_rejected(ctx, ggml_rope(ctx, a, p, 8, 0), "ggml_rope");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4); /* one per token: 3 */
    to_expect_rejected(ctx, ggml_rope(ctx, a, p, 8, 0), "ggml_rope");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    p = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 2); /* not a vector */
    to_expect_rejected(ctx, ggml_rope(ctx, a, p, 8, 0), "ggml_rope");
    ggml_free(ctx);
}

Test(rope, rejects_bad_n_dims_types_and_factors) {
    const int bad_dims[] = { 0, -2, 7, 10 };
    for (int k = 0; k < 4; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
        struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
        to_expect_rejected(ctx, ggml_rope(ctx, a, p, bad_dims[k], 0), "ggml_rope");
        ggml_free(ctx);
    }
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_BF16, 8, 2, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    to_expect_rejected(ctx, ggml_rope(ctx, a, p, 8, 0), "ggml_rope");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor * f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3); /* needs n_dims/2 = 4 */
    to_expect_rejected(ctx, ggml_rope_ext(ctx, a, p, f, 8, 0, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f), "ggml_rope_ext");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 2, 3);
    p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    f = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, 4);
    to_expect_rejected(ctx, ggml_rope_ext_inplace(ctx, a, p, f, 8, 2, 0, 1e4f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f),
                       "ggml_rope_ext_inplace");
    ggml_free(ctx);
}
