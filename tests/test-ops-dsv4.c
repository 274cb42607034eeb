/*
 * test-ops-dsv4.c -- LIGHTNING_INDEXER (F32, F16 and Q8_0 keys, mask broadcast over streams) and
 * DeepSeek V4's hyper-connection ops DSV4_HC_COMB (softmax + Sinkhorn), DSV4_HC_PRE, DSV4_HC_POST
 * against double references written from the header's definitions, with their refused shapes.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <math.h>

static struct ggml_tensor * rnd(struct to_env * e, struct tu_rng * rng, enum ggml_type type, int64_t ne0,
                                int64_t ne1, int64_t ne2, int64_t ne3, float lo, float hi) {
    struct ggml_tensor * t = to_new(e, type, ne0, ne1, ne2, ne3);
    tu_fill(t, rng, lo, hi);
    return t;
}

/* ---- LIGHTNING_INDEXER --------------------------------------------------------------------- */

static void run_indexer(enum ggml_type ktype, int64_t n_embd, int64_t n_head, int64_t n_batch, int64_t n_kv,
                        int64_t ne3, int64_t ne33, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * q = rnd(&e, &rng, GGML_TYPE_F32, n_embd, n_head, n_batch, ne3, -1.0f, 1.0f);
    struct ggml_tensor * kf = rnd(&e, &rng, GGML_TYPE_F32, n_embd, 1, n_kv, ne3, -1.0f, 1.0f);
    struct ggml_tensor * w = rnd(&e, &rng, GGML_TYPE_F32, n_head, n_batch, 1, ne3, 0.0f, 1.0f);
    struct ggml_tensor * m = rnd(&e, &rng, GGML_TYPE_F16, n_kv, n_batch, 1, ne33, -2.0f, 0.0f);
    ggml_fp16_t * mh = (ggml_fp16_t *) m->data; /* a causal-style -inf in the mask */
    mh[n_kv - 1] = ggml_fp32_to_fp16(-INFINITY);
    struct ggml_tensor * k = kf;
    if (ktype != GGML_TYPE_F32) { /* the reference reads the keys back as the kernel sees them */
        k = to_new(&e, ktype, n_embd, 1, n_kv, ne3);
        const int64_t rows = n_kv * ne3;
        cr_assert_eq(ggml_quantize_requires_imatrix(ktype), false);
        if (ktype == GGML_TYPE_F16) {
            ggml_fp32_to_fp16_row((const float *) kf->data, (ggml_fp16_t *) k->data, rows * n_embd);
        } else {
            ggml_quantize_chunk(ktype, (const float *) kf->data, k->data, 0, rows, n_embd, NULL);
        }
        ggml_get_type_traits(ktype)->to_float(k->data, (float *) kf->data, rows * n_embd);
    }
    struct ggml_tensor * r = ggml_lightning_indexer(e.ctx, q, k, w, m);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == n_kv && r->ne[1] == n_batch && r->ne[2] == 1 && r->ne[3] == ne3);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = malloc((size_t) ggml_nelements(r) * sizeof(double));
    for (int64_t s = 0; s < ne3; s++) {
        for (int64_t t = 0; t < n_batch; t++) {
            for (int64_t j = 0; j < n_kv; j++) {
                double score = 0;
                for (int64_t h = 0; h < n_head; h++) {
                    double dot = 0;
                    for (int64_t i = 0; i < n_embd; i++) {
                        dot += tu_get(q, i, h, t, s) * tu_get(kf, i, 0, j, s);
                    }
                    score += (dot > 0 ? dot : 0) * tu_get(w, h, t, 0, s);
                }
                want[to_index(r, j, t, 0, s)] = score + tu_get(m, j, t, 0, s % ne33);
            }
        }
    }
    to_check(r, want, 1e-5, "lightning_indexer");
    free(want);
    to_end(&e);
}

Test(lightning_indexer, relu_scores_weighted_over_heads_plus_mask) {
    run_indexer(GGML_TYPE_F32, 7, 3, 5, 9, 1, 1, 1, 1);
    run_indexer(GGML_TYPE_F32, 1, 1, 1, 1, 1, 1, 1, 2);
    run_indexer(GGML_TYPE_F32, 64, 4, 3, 1031, 2, 1, 3, 3); /* threads over keys, mask shared by streams */
}

Test(lightning_indexer, f16_and_q8_0_keys) {
    run_indexer(GGML_TYPE_F16, 33, 2, 4, 17, 2, 2, 2, 4);
    run_indexer(GGML_TYPE_Q8_0, 64, 3, 2, 11, 1, 1, 1, 5);
}

Test(lightning_indexer, rejects_bad_shapes) {
    for (int bad = 0; bad < 6; bad++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 3, 4, 2);
        struct ggml_tensor * k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad == 0 ? 9 : 8, bad == 1 ? 2 : 1, 5, 2);
        struct ggml_tensor * w = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad == 2 ? 4 : 3, 4, 1, 2);
        struct ggml_tensor * m = ggml_new_tensor_4d(ctx, bad == 3 ? GGML_TYPE_F32 : GGML_TYPE_F16, bad == 4 ? 6 : 5, 4, 1,
                                                    bad == 5 ? 3 : 1);
        to_expect_rejected(ctx, ggml_lightning_indexer(ctx, q, k, w, m), "ggml_lightning_indexer");
        ggml_free(ctx);
    }
}

/* ---- DSV4_HC_COMB -------------------------------------------------------------------------- */

static void comb_reference(const struct ggml_tensor * mixes, const struct ggml_tensor * scale,
                           const struct ggml_tensor * base, double eps, int n_iter, int64_t t, double * m) {
    /* m[d + 4 s]: softmax over destinations d for each source s, then Sinkhorn */
    for (int s = 0; s < 4; s++) {
        double l[4], mx = -INFINITY, sum = 0;
        for (int d = 0; d < 4; d++) {
            l[d] = tu_get(mixes, 8 + d + 4 * s, t, 0, 0) * tu_get(scale, 2, 0, 0, 0) + tu_get(base, 8 + d + 4 * s, 0, 0, 0);
            mx = fmax(mx, l[d]);
        }
        for (int d = 0; d < 4; d++) {
            sum += exp(l[d] - mx);
        }
        for (int d = 0; d < 4; d++) {
            m[d + 4 * s] = exp(l[d] - mx) / sum + eps;
        }
    }
    for (int it = 0; it < n_iter; it++) {
        if (it > 0) { /* each source's column over destinations */
            for (int s = 0; s < 4; s++) {
                double sum = eps;
                for (int d = 0; d < 4; d++) {
                    sum += m[d + 4 * s];
                }
                for (int d = 0; d < 4; d++) {
                    m[d + 4 * s] /= sum;
                }
            }
        }
        for (int d = 0; d < 4; d++) { /* each destination's row over sources */
            double sum = eps;
            for (int s = 0; s < 4; s++) {
                sum += m[d + 4 * s];
            }
            for (int s = 0; s < 4; s++) {
                m[d + 4 * s] /= sum;
            }
        }
    }
}

static void run_comb(int64_t n_tok, float eps, int n_iter, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * mixes = rnd(&e, &rng, GGML_TYPE_F32, 24, n_tok, 1, 1, -2.0f, 2.0f);
    struct ggml_tensor * scale = rnd(&e, &rng, GGML_TYPE_F32, 3, 1, 1, 1, 0.5f, 1.0f);
    struct ggml_tensor * base  = rnd(&e, &rng, GGML_TYPE_F32, 24, 1, 1, 1, -0.5f, 0.5f);
    struct ggml_tensor * r = ggml_dsv4_hc_comb(e.ctx, mixes, scale, base, eps, n_iter);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == 4 && r->ne[1] == 4 && r->ne[2] == n_tok);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 0), eps);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 1), n_iter);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = malloc((size_t) ggml_nelements(r) * sizeof(double));
    for (int64_t t = 0; t < n_tok; t++) {
        comb_reference(mixes, scale, base, eps, n_iter, t, want + 16 * t);
    }
    to_check(r, want, 1e-5, "dsv4_hc_comb");
    free(want);
    to_end(&e);
}

Test(dsv4_hc_comb, softmax_then_sinkhorn_per_token) {
    run_comb(1, 1e-6f, 1, 1, 10);
    run_comb(5, 1e-6f, 20, 1, 11);
    run_comb(7, 0.01f, 3, 2, 12);
    run_comb(300, 1e-6f, 20, 3, 13); /* threads over tokens */
}

Test(dsv4_hc_comb, many_iterations_approach_doubly_stochastic) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(14);
    struct ggml_tensor * mixes = rnd(&e, &rng, GGML_TYPE_F32, 24, 3, 1, 1, -2.0f, 2.0f);
    struct ggml_tensor * scale = rnd(&e, &rng, GGML_TYPE_F32, 3, 1, 1, 1, 0.5f, 1.0f);
    struct ggml_tensor * base  = rnd(&e, &rng, GGML_TYPE_F32, 24, 1, 1, 1, -0.5f, 0.5f);
    struct ggml_tensor * r = to_alloc(&e, ggml_dsv4_hc_comb(e.ctx, mixes, scale, base, 0.0f, 50));
    to_compute(&e, r, 1);
    for (int64_t t = 0; t < 3; t++) {
        for (int i = 0; i < 4; i++) {
            double row = 0, col = 0;
            for (int j = 0; j < 4; j++) {
                row += tu_get(r, i, j, t, 0);
                col += tu_get(r, j, i, t, 0);
            }
            cr_assert(fabs(row - 1) < 1e-5 && fabs(col - 1) < 1e-4, "token %lld line %d: sums %g %g", (long long) t, i,
                      row, col);
        }
    }
    to_end(&e);
}

Test(dsv4_hc_comb, rejects_bad_shapes) {
    for (int bad = 0; bad < 5; bad++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * mixes = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, bad == 0 ? 15 : 24, 3); /* 15: hc 3 */
        struct ggml_tensor * scale = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, bad == 1 ? 2 : 3);
        struct ggml_tensor * base  = ggml_new_tensor_1d(ctx, bad == 2 ? GGML_TYPE_F16 : GGML_TYPE_F32, 24);
        if (bad == 3) {
            base = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 23);
        }
        const int n_iter = bad == 4 ? 0 : 5;
        to_expect_rejected(ctx, ggml_dsv4_hc_comb(ctx, mixes, scale, base, 1e-6f, n_iter), "ggml_dsv4_hc_comb");
        ggml_free(ctx);
    }
}

/* ---- DSV4_HC_PRE, DSV4_HC_POST ------------------------------------------------------------- */

static void run_pre(int64_t n_embd, int64_t hc, int64_t n_tok, bool permuted, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * x = permuted ? to_new_transposed(&e, GGML_TYPE_F32, n_embd, hc, n_tok, 1)
                                      : to_new(&e, GGML_TYPE_F32, n_embd, hc, n_tok, 1);
    tu_fill(x, &rng, -1.0f, 1.0f);
    struct ggml_tensor * w = rnd(&e, &rng, GGML_TYPE_F32, hc, n_tok, 1, 1, 0.0f, 1.0f);
    struct ggml_tensor * r = ggml_dsv4_hc_pre(e.ctx, x, w);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == n_embd && r->ne[1] == n_tok && r->ne[2] == 1);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = malloc((size_t) ggml_nelements(r) * sizeof(double));
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t i = 0; i < n_embd; i++) {
            double sum = 0;
            for (int64_t h = 0; h < hc; h++) {
                sum += tu_get(x, i, h, t, 0) * tu_get(w, h, t, 0, 0);
            }
            want[t * n_embd + i] = sum;
        }
    }
    to_check(r, want, 1e-6, "dsv4_hc_pre");
    free(want);
    to_end(&e);
}

Test(dsv4_hc_pre, weighted_sum_over_streams) {
    run_pre(7, 4, 3, false, 1, 20);
    run_pre(1, 1, 1, false, 1, 21);
    run_pre(33, 3, 5, true, 2, 22); /* x stored transposed */
    run_pre(4097, 4, 2, false, 3, 23);
}

Test(dsv4_hc_pre, rejects_bad_shapes) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 4, 3);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 3);
    to_expect_rejected(ctx, ggml_dsv4_hc_pre(ctx, x, w), "ggml_dsv4_hc_pre");
    ggml_free(ctx);
    ctx = to_small_ctx();
    x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 3, 2);
    w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    to_expect_rejected(ctx, ggml_dsv4_hc_pre(ctx, x, w), "ggml_dsv4_hc_pre");
    ggml_free(ctx);
}

static void run_post(int64_t n_embd, int64_t hc, int64_t n_tok, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * x    = rnd(&e, &rng, GGML_TYPE_F32, n_embd, n_tok, 1, 1, -1.0f, 1.0f);
    struct ggml_tensor * res  = rnd(&e, &rng, GGML_TYPE_F32, n_embd, hc, n_tok, 1, -1.0f, 1.0f);
    struct ggml_tensor * post = rnd(&e, &rng, GGML_TYPE_F32, hc, n_tok, 1, 1, 0.0f, 2.0f);
    struct ggml_tensor * comb = rnd(&e, &rng, GGML_TYPE_F32, hc, hc, n_tok, 1, 0.0f, 1.0f);
    struct ggml_tensor * r = ggml_dsv4_hc_post(e.ctx, x, res, post, comb);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == n_embd && r->ne[1] == hc && r->ne[2] == n_tok);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = malloc((size_t) ggml_nelements(r) * sizeof(double));
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t d = 0; d < hc; d++) {
            for (int64_t i = 0; i < n_embd; i++) {
                double sum = tu_get(x, i, t, 0, 0) * tu_get(post, d, t, 0, 0);
                for (int64_t s = 0; s < hc; s++) {
                    sum += tu_get(res, i, s, t, 0) * tu_get(comb, d, s, t, 0);
                }
                want[to_index(r, i, d, t, 0)] = sum;
            }
        }
    }
    to_check(r, want, 1e-6, "dsv4_hc_post");
    free(want);
    to_end(&e);
}

Test(dsv4_hc_post, output_times_post_plus_mixed_residual) {
    run_post(7, 4, 3, 1, 30);
    run_post(1, 1, 1, 1, 31);
    run_post(1031, 4, 3, 3, 32);
}

Test(dsv4_hc_post, rejects_bad_shapes) {
    for (int bad = 0; bad < 4; bad++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * x    = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, bad == 0 ? 9 : 8, 3);
        struct ggml_tensor * res  = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 4, 3);
        struct ggml_tensor * post = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, bad == 1 ? 3 : 4, 3);
        struct ggml_tensor * comb = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 4, bad == 2 ? 2 : 3);
        if (bad == 3) {
            comb = ggml_new_tensor_3d(ctx, GGML_TYPE_I32, 4, 4, 3);
        }
        to_expect_rejected(ctx, ggml_dsv4_hc_post(ctx, x, res, post, comb), "ggml_dsv4_hc_post");
        ggml_free(ctx);
    }
}

/* the indexer's dot products exist per ISA; odd n_embd exercises their tails */
Test(lightning_indexer, every_isa_path) {
    const char * paths[] = { "portable", "avx2", "avx512" };
    for (int i = 0; i < 3; i++) {
        setenv("GGMLX_RECURRENT_KERNEL", paths[i], 1);
        run_indexer(GGML_TYPE_F32, 37, 3, 2, 9, 1, 1, 1, 70 + (uint64_t) i);
        run_indexer(GGML_TYPE_F32, 7, 2, 2, 5, 1, 1, 1, 80 + (uint64_t) i);
    }
}
