/*
 * test-ops-rope-multi.c -- ggml_rope_multi (MROPE, IMROPE, VISION) against a double-precision
 * reference written from upstream's documented semantics, the deprecated ggml_rope_custom
 * wrappers, and every refused argument.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <math.h>
#include <stdlib.h>

/* which of the token's four positions turns pair p, and the frequency step it takes */
static void ref_section(int mode, const int s[4], int64_t p, int * which, int64_t * step) {
    const int64_t n = s[0] + s[1] + s[2] + s[3];
    const int64_t sec = p % n;
    if (mode == GGML_ROPE_TYPE_IMROPE) {
        *which = sec % 3 == 1 && sec < 3 * s[1] ? 1 : sec % 3 == 2 && sec < 3 * s[2] ? 2
               : sec % 3 == 0 && sec < 3 * s[0] ? 0 : 3;
    } else {
        *which = sec < s[0] ? 0 : sec < s[0] + s[1] ? 1 : sec < s[0] + s[1] + s[2] ? 2 : 3;
    }
    int64_t start = 0;
    for (int i = 0; i < *which; i++) {
        start += s[i];
    }
    *step = mode == GGML_ROPE_TYPE_VISION ? sec - start : p;
}

static void run_multi(int mode, const int s[4], int64_t ne0, int n_dims, bool with_ff, float ext_factor, bool f16,
                      bool inplace, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) mode * 31 + (uint64_t) ne0);
    const enum ggml_type type = f16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    const int64_t nh = 3, nt = 5;
    struct ggml_tensor * a   = to_new(&e, type, ne0, nh, nt, 1);
    struct ggml_tensor * pos = to_new(&e, GGML_TYPE_I32, 4 * nt, 1, 1, 1);
    struct ggml_tensor * ff  = with_ff ? to_new(&e, GGML_TYPE_F32, ne0 / 2, 1, 1, 1) : NULL;
    tu_fill(a, &rng, -1.0f, 1.0f);
    for (int64_t i = 0; i < 4 * nt; i++) {
        ((int32_t *) pos->data)[i] = (int32_t) (tu_next(&rng) % 50);
    }
    if (ff) {
        tu_fill(ff, &rng, 1.0f, 4.0f);
    }
    double * va = to_values(a);
    int sec[4] = { s[0], s[1], s[2], s[3] };
    const float base = 10000.0f, fscale = 0.5f, attn = 1.25f, bf = 32.0f, bs = 1.0f;
    const int n_ctx_orig = 64;
    struct ggml_tensor * r = inplace
        ? ggml_rope_multi_inplace(e.ctx, a, pos, ff, n_dims, sec, mode, n_ctx_orig, base, fscale, ext_factor, attn, bf, bs)
        : ggml_rope_multi(e.ctx, a, pos, ff, n_dims, sec, mode, n_ctx_orig, base, fscale, ext_factor, attn, bf, bs);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ggmlx_get_op_params_i32(r, 11 + i), s[i]);
    }
    if (!inplace) {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);

    float corr[2];
    ggml_rope_yarn_corr_dims(n_dims, n_ctx_orig, base, bf, bs, corr);
    const double mscale = ext_factor != 0.0f ? attn * (1.0 + 0.1 * log(1.0 / fscale)) : attn;
    const bool vision = mode == GGML_ROPE_TYPE_VISION;
    const int64_t n_pairs = vision ? ne0 / 2 : n_dims / 2, partner = vision ? n_dims : n_dims / 2;
    double * w = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    memcpy(w, va, (size_t) ggml_nelements(r) * sizeof(double));
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t h = 0; h < nh; h++) {
            for (int64_t p = 0; p < n_pairs; p++) {
                int which;
                int64_t step;
                ref_section(mode, s, p, &which, &step);
                const double pp = ((int32_t *) pos->data)[t + which * nt];
                const double f  = ff ? ((float *) ff->data)[p] : 1.0;
                const double extrap = pp * pow(base, -2.0 * (double) step / n_dims) / f;
                const double interp = fscale * extrap;
                double theta = interp;
                if (ext_factor != 0.0f) {
                    const double y = ((double) p - corr[0]) / fmax(0.001, corr[1] - corr[0]);
                    const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * ext_factor;
                    theta = interp * (1.0 - mix) + extrap * mix;
                }
                const double c = cos(theta) * mscale, sn = sin(theta) * mscale;
                const double x0 = va[to_index(a, p, h, t, 0)], x1 = va[to_index(a, p + partner, h, t, 0)];
                w[to_index(a, p, h, t, 0)]           = x0 * c - x1 * sn;
                w[to_index(a, p + partner, h, t, 0)] = x0 * sn + x1 * c;
            }
        }
    }
    char what[96];
    snprintf(what, sizeof what, "rope_multi mode %d ne0 %lld n_dims %d", mode, (long long) ne0, n_dims);
    to_check(r, w, f16 ? 4e-3 : 2e-5, what);
    free(w);
    free(va);
    to_end(&e);
}

Test(rope_multi, mrope_turns_each_section_by_its_position) {
    const int s[4] = { 4, 2, 2, 0 };
    run_multi(GGML_ROPE_TYPE_MROPE, s, 18, 16, false, 0.0f, false, false, 1);
    run_multi(GGML_ROPE_TYPE_MROPE, s, 16, 16, true, 0.0f, false, false, 2);
}

Test(rope_multi, mrope_uses_the_fourth_position_for_the_last_section) {
    const int s[4] = { 2, 2, 2, 2 };
    run_multi(GGML_ROPE_TYPE_MROPE, s, 20, 16, false, 0.0f, false, false, 2);
}

Test(rope_multi, imrope_interleaves_the_sections) {
    const int s[4] = { 3, 3, 2, 0 };
    run_multi(GGML_ROPE_TYPE_IMROPE, s, 16, 16, false, 0.0f, false, false, 1);
    run_multi(GGML_ROPE_TYPE_IMROPE, s, 24, 16, true, 0.0f, true, false, 2);
}

Test(rope_multi, vision_restarts_the_angles_in_each_section) {
    const int s[4] = { 4, 4, 0, 0 };
    run_multi(GGML_ROPE_TYPE_VISION, s, 16, 8, false, 0.0f, false, false, 1);
    run_multi(GGML_ROPE_TYPE_VISION, s, 16, 8, true, 0.0f, false, true, 2);
}

Test(rope_multi, yarn_ramp_applies_as_in_rope_ext) {
    const int s[4] = { 4, 2, 2, 0 };
    run_multi(GGML_ROPE_TYPE_MROPE, s, 16, 16, false, 1.0f, false, false, 2);
}

Test(rope_multi, f16_in_place) {
    const int s[4] = { 4, 2, 2, 0 };
    run_multi(GGML_ROPE_TYPE_MROPE, s, 18, 16, false, 0.0f, true, true, 2);
}

static struct ggml_tensor * try_multi(struct ggml_context * ctx, int64_t ne0, int64_t n_pos, int n_dims, int s0, int s1,
                                      int mode) {
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, ne0, 2, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_pos);
    int s[4] = { s0, s1, 0, 0 };
    return ggml_rope_multi(ctx, a, p, NULL, n_dims, s, mode, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f);
}

Test(rope_multi, refuses_one_position_per_token) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, try_multi(ctx, 16, 3, 16, 4, 4, GGML_ROPE_TYPE_MROPE), "ggml_rope_multi");
    ggml_free(ctx);
}

Test(rope_multi, refuses_a_plain_mode) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, try_multi(ctx, 16, 12, 16, 4, 4, GGML_ROPE_TYPE_NEOX), "ggml_rope_multi");
    ggml_free(ctx);
}

Test(rope_multi, refuses_all_zero_sections) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, try_multi(ctx, 16, 12, 16, 0, 0, GGML_ROPE_TYPE_MROPE), "ggml_rope_multi");
    ggml_free(ctx);
}

/* upstream's test-backend-ops gives {n/3, n/3, n/3, 0} to rows of n/2 pairs: the sections wrap */
Test(rope_multi, sections_longer_than_the_row_wrap_around) {
    const int s[4] = { 6, 6, 6, 0 };
    run_multi(GGML_ROPE_TYPE_MROPE, s, 16, 16, false, 0.0f, false, false, 1);
    run_multi(GGML_ROPE_TYPE_IMROPE, s, 16, 16, false, 0.0f, false, false, 2);
}

Test(rope_multi, refuses_vision_without_half_the_row) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, try_multi(ctx, 16, 12, 16, 4, 4, GGML_ROPE_TYPE_VISION), "ggml_rope_multi");
    ggml_free(ctx);
}

Test(rope_multi, refuses_rope_ext_in_a_multimodal_mode) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 2, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 12);
    to_expect_rejected(ctx, ggml_rope_ext(ctx, a, p, NULL, 16, GGML_ROPE_TYPE_MROPE, 0, 1e4f, 1, 0, 1, 32, 1),
                       "ggml_rope_ext");
    ggml_free(ctx);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
Test(rope_custom, equals_rope_ext_without_freq_factors) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(41);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 16, 2, 4, 1);
    struct ggml_tensor * p = to_new(&e, GGML_TYPE_I32, 4, 1, 1, 1);
    tu_fill(a, &rng, -1.0f, 1.0f);
    for (int i = 0; i < 4; i++) {
        ((int32_t *) p->data)[i] = 3 * i + 1;
    }
    struct ggml_tensor * r1 = ggml_rope_custom(e.ctx, a, p, 12, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1.0f, 0.0f, 1.0f, 32, 1);
    struct ggml_tensor * r2 = ggml_rope_ext(e.ctx, a, p, NULL, 12, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1.0f, 0.0f, 1.0f, 32, 1);
    cr_assert_not_null(r1);
    cr_assert_not_null(r2);
    cr_assert_eq(memcmp(r1->op_params, r2->op_params, sizeof r1->op_params), 0);
    to_alloc(&e, r1);
    to_alloc(&e, r2);
    to_compute(&e, r1, 1);
    to_compute(&e, r2, 1);
    double * w = to_values(r2);
    to_check(r1, w, 0.0, "rope_custom");
    free(w);
    struct ggml_tensor * r3 = ggml_rope_custom_inplace(e.ctx, a, p, 12, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1, 0, 1, 32, 1);
    cr_assert_not_null(r3);
    cr_assert_eq(r3->view_src, a);
    to_end(&e);
}
#pragma GCC diagnostic pop

/* the rotated channels [off, off + n_dims) must equal rope_ext of those channels alone */
static void run_offset(int mode, int64_t ne0, int n_dims, int off, bool multi, int n_threads) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new((uint64_t) off);
    const int64_t nh = 2, nt = 3;
    struct ggml_tensor * a   = to_new(&e, GGML_TYPE_F32, ne0, nh, nt, 1);
    struct ggml_tensor * sub = to_new(&e, GGML_TYPE_F32, n_dims, nh, nt, 1);
    struct ggml_tensor * pos = to_new(&e, GGML_TYPE_I32, multi ? 4 * nt : nt, 1, 1, 1);
    tu_fill(a, &rng, -1.0f, 1.0f);
    TU_FOR_EACH(sub, i0, i1, i2, i3) {
        tu_set(sub, i0, i1, i2, i3, tu_get(a, i0 + off, i1, i2, i3));
    }
    for (int64_t i = 0; i < pos->ne[0]; i++) {
        ((int32_t *) pos->data)[i] = (int32_t) (7 * i % 11); /* multi: the same positions repeat per section */
    }
    int sec[4] = { n_dims / 4, n_dims / 4, 0, 0 };
    struct ggml_tensor * r = multi ? ggml_rope_multi(e.ctx, a, pos, NULL, n_dims, sec, mode, 0, 1e4f, 1, 0, 1, 32, 1)
                                   : ggml_rope_ext(e.ctx, a, pos, NULL, n_dims, mode, 0, 1e4f, 1, 0, 1, 32, 1);
    struct ggml_tensor * q = multi ? ggml_rope_multi(e.ctx, sub, pos, NULL, n_dims, sec, mode, 0, 1e4f, 1, 0, 1, 32, 1)
                                   : ggml_rope_ext(e.ctx, sub, pos, NULL, n_dims, mode, 0, 1e4f, 1, 0, 1, 32, 1);
    cr_assert_eq(ggml_rope_set_offset(r, off), r, "%s", ggmlx_last_error());
    cr_assert_eq(ggmlx_get_op_params_i32(r, 15), off);
    to_alloc(&e, r);
    to_alloc(&e, q);
    to_compute(&e, r, n_threads);
    to_compute(&e, q, 1);
    double * w = to_values(a);
    TU_FOR_EACH(q, i0, i1, i2, i3) {
        w[to_index(a, i0 + off, i1, i2, i3)] = tu_get(q, i0, i1, i2, i3);
    }
    to_check(r, w, 0.0, "rope with offset");
    free(w);
    to_end(&e);
}

Test(rope_set_offset, rotates_the_channels_from_the_offset) {
    run_offset(GGML_ROPE_TYPE_NEOX, 24, 8, 12, false, 2);
    run_offset(GGML_ROPE_TYPE_NORMAL, 24, 8, 3, false, 1);
    run_offset(GGML_ROPE_TYPE_NEOX, 16, 8, 8, false, 2);
    run_offset(GGML_ROPE_TYPE_MROPE, 40, 16, 20, true, 2);
}

Test(rope_set_offset, refuses_channels_past_the_row) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 16, 2, 3);
    struct ggml_tensor * p = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor * r = ggml_rope_ext(ctx, a, p, NULL, 8, GGML_ROPE_TYPE_NEOX, 0, 1e4f, 1, 0, 1, 32, 1);
    cr_assert_null(ggml_rope_set_offset(r, 9));
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_rope_set_offset"));
    cr_assert_null(ggml_rope_set_offset(r, -2));
    cr_assert_eq(ggmlx_get_op_params_i32(r, 15), 0, "a refused offset changes nothing");
    ggml_free(ctx);
}

Test(rope_set_offset, refuses_a_tensor_that_is_not_a_rope) {
    struct ggml_context * ctx = to_small_ctx();
    cr_assert_null(ggml_rope_set_offset(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16), 0));
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_rope_set_offset"));
    ggml_free(ctx);
}
