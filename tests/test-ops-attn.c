/*
 * test-ops-attn.c -- FLASH_ATTN_EXT against a double-precision reference written from its
 * definition (softmax(scale * K^T q + slope * mask, sinks) V, soft-capped logits, grouped-query
 * heads, permuted result) for every K/V cache type, and against the unfused graph (mul_mat,
 * soft_max_ext, mul_mat) on the same inputs; SOFT_MAX with sinks; the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <math.h>

struct fa_case {
    int64_t        DK, DV, n_q, n_kv, n_head, n_head_kv, ne3;
    enum ggml_type kt, vt;
    bool           mask;
    int64_t        mask_rows, mask_ne2, mask_ne3; /* 0: n_q, 1, 1 */
    bool           causal;    /* -INF above the diagonal (query i sees tokens 0 .. n_kv - n_q + i) */
    bool           mask_all0; /* query row 0 sees nothing */
    float          scale, max_bias, softcap;
    bool           sinks;
    int            n_threads;
    bool           unfused;   /* also compare with mul_mat + soft_max_ext + mul_mat */
    double         tol;
};

static double ref_slope(double max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0) {
        return 1.0;
    }
    const double n_log2 = pow(2.0, floor(log2((double) n_head)));
    const double m0 = pow(2.0, -max_bias / n_log2);
    const double m1 = pow(2.0, -(max_bias / 2.0) / n_log2);
    return (double) h < n_log2 ? pow(m0, (double) h + 1.0) : pow(m1, 2.0 * ((double) h - n_log2) + 1.0);
}

/* a [ne0, ne1, ne2, ne3] tensor of type t holding random values; vals gets them as stored (F32) */
static struct ggml_tensor * new_filled(struct to_env * e, enum ggml_type t, const int64_t ne[4], struct tu_rng * rng,
                                       float ** vals) {
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    float * src = malloc((size_t) n * sizeof(float));
    cr_assert_not_null(src);
    for (int64_t i = 0; i < n; i++) {
        src[i] = tu_uniform(rng, -1.0f, 1.0f);
    }
    struct ggml_tensor * x = to_new(e, t, ne[0], ne[1], ne[2], ne[3]);
    if (t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            tu_set(x, i % ne[0], (i / ne[0]) % ne[1], (i / (ne[0] * ne[1])) % ne[2], i / (ne[0] * ne[1] * ne[2]), src[i]);
            src[i] = (float) tu_get(x, i % ne[0], (i / ne[0]) % ne[1], (i / (ne[0] * ne[1])) % ne[2],
                                    i / (ne[0] * ne[1] * ne[2]));
        }
    } else {
        const int64_t rows = n / ne[0];
        cr_assert_eq(ggml_quantize_chunk(t, src, x->data, 0, rows, ne[0], NULL), ggml_nbytes(x));
        ggml_get_type_traits(t)->to_float(x->data, src, n);
    }
    *vals = src;
    return x;
}

/*
 * A quantized K row meets the query quantized to the type's dot-product partner (Q8_0 or Q8_1,
 * as in the matrix product): the query as those logits see it, one row of n values in place.
 */
static void query_as_quantized_k_sees_it(enum ggml_type kt, float * q, int64_t n) {
    const enum ggml_type vdt = ggml_get_type_traits_cpu(kt)->vec_dot_type;
    cr_assert(vdt == GGML_TYPE_Q8_0 || vdt == GGML_TYPE_Q8_1, "query type %s", ggml_type_name(vdt));
    uint8_t * blocks = malloc(ggml_row_size(vdt, n));
    cr_assert_not_null(blocks);
    ggml_get_type_traits_cpu(vdt)->from_float(q, blocks, n);
    /* both hold an F16 scale first and end with 32 signed bytes (Q8_1 has its sum between) */
    const size_t bs = ggml_type_size(vdt);
    for (int64_t i = 0; i < n; i++) {
        const uint8_t * b = blocks + (size_t) (i / 32) * bs;
        ggml_fp16_t d;
        memcpy(&d, b, sizeof d);
        q[i] = ggml_fp16_to_fp32(d) * (float) (int8_t) b[bs - 32 + (size_t) (i % 32)];
    }
    free(blocks);
}

static struct ggml_tensor * copy_in(struct ggml_context * ctx, const struct ggml_tensor * t) {
    if (t == NULL) {
        return NULL;
    }
    struct ggml_tensor * x = ggml_new_tensor(ctx, t->type, 4, t->ne);
    cr_assert_not_null(x);
    memcpy(x->data, t->data, ggml_nbytes(t));
    return x;
}

/* the fused op and the three-op graph on copies of the same inputs, in a context with memory */
static void compare_unfused(const struct fa_case * c, const struct ggml_tensor * q0, const struct ggml_tensor * k0,
                            const struct ggml_tensor * v0, const struct ggml_tensor * mask0,
                            const struct ggml_tensor * sinks0) {
    struct ggml_init_params ip = { 256u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);
    struct ggml_tensor * q = copy_in(ctx, q0), * k = copy_in(ctx, k0), * v = copy_in(ctx, v0);
    struct ggml_tensor * mask = copy_in(ctx, mask0), * sinks = copy_in(ctx, sinks0);

    struct ggml_tensor * fa = ggml_flash_attn_ext(ctx, q, k, v, mask, c->scale, c->max_bias, 0.0f);
    ggml_flash_attn_ext_add_sinks(fa, sinks);
    struct ggml_tensor * kq = ggml_mul_mat(ctx, k, q);
    kq = ggml_soft_max_ext(ctx, kq, mask, c->scale, c->max_bias);
    ggml_soft_max_add_sinks(kq, sinks);
    struct ggml_tensor * vt  = ggml_cont(ctx, ggml_transpose(ctx, v));
    struct ggml_tensor * kqv = ggml_mul_mat(ctx, vt, kq);
    struct ggml_tensor * ref = ggml_cont(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3));
    cr_assert_not_null(fa);
    cr_assert_not_null(ref, "%s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, fa);
    ggml_build_forward_expand(gf, ref);
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, gf, c->n_threads), GGML_STATUS_SUCCESS, "%s",
                 ggmlx_last_error() ? ggmlx_last_error() : "?");
    cr_assert(ggml_are_same_shape(fa, ref));
    double * want = to_values(ref);
    to_check(fa, want, c->tol, "flash_attn_ext vs the unfused graph");
    free(want);
    ggml_free(ctx);
}

static void run_case(const struct fa_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    const int64_t qne[4] = { c->DK, c->n_q, c->n_head, c->ne3 };
    const int64_t kne[4] = { c->DK, c->n_kv, c->n_head_kv, c->ne3 };
    const int64_t vne[4] = { c->DV, c->n_kv, c->n_head_kv, c->ne3 };
    float * qv, * kv, * vv;
    struct ggml_tensor * q = new_filled(&e, GGML_TYPE_F32, qne, &rng, &qv);
    struct ggml_tensor * k = new_filled(&e, c->kt, kne, &rng, &kv);
    struct ggml_tensor * v = new_filled(&e, c->vt, vne, &rng, &vv);
    struct ggml_tensor * mask = NULL;
    const int64_t mr = c->mask_rows ? c->mask_rows : c->n_q;
    const int64_t m2 = c->mask_ne2 ? c->mask_ne2 : 1, m3 = c->mask_ne3 ? c->mask_ne3 : 1;
    if (c->mask) {
        mask = to_new(&e, GGML_TYPE_F16, c->n_kv, mr, m2, m3);
        TU_FOR_EACH(mask, i0, i1, i2, i3) {
            double x = tu_uniform(&rng, -1.0f, 1.0f);
            if ((c->causal && i0 > c->n_kv - c->n_q + i1) || (c->mask_all0 && i1 == 0)) {
                x = -INFINITY;
            }
            tu_set(mask, i0, i1, i2, i3, x);
        }
    }
    struct ggml_tensor * sinks = NULL;
    if (c->sinks) {
        sinks = to_new(&e, GGML_TYPE_F32, c->n_head, 1, 1, 1);
        tu_fill(sinks, &rng, -1.0f, 3.0f);
    }

    struct ggml_tensor * out = ggml_flash_attn_ext(e.ctx, q, k, v, mask, c->scale, c->max_bias, c->softcap);
    cr_assert_not_null(out, "%s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    cr_assert(out->type == GGML_TYPE_F32 && out->ne[0] == c->DV && out->ne[1] == c->n_head && out->ne[2] == c->n_q &&
              out->ne[3] == c->ne3, "result shape %s", GGMLX_SHAPE(out));
    ggml_flash_attn_ext_add_sinks(out, sinks);
    to_alloc(&e, out);
    to_compute(&e, out, c->n_threads);

    /* the reference, in double, from the stored (rounded or dequantized) values */
    const int64_t gq = c->n_head / c->n_head_kv;
    float * qk = malloc((size_t) ggml_nelements(q) * sizeof(float));
    cr_assert_not_null(qk);
    memcpy(qk, qv, (size_t) ggml_nelements(q) * sizeof(float));
    if (ggml_is_quantized(c->kt)) {
        for (int64_t r = 0; r < ggml_nrows(q); r++) {
            query_as_quantized_k_sees_it(c->kt, qk + r * c->DK, c->DK);
        }
    }
    double * want = calloc((size_t) ggml_nelements(out), sizeof(double));
    double * lg   = malloc((size_t) c->n_kv * sizeof(double));
    for (int64_t i3 = 0; i3 < c->ne3; i3++) {
        for (int64_t h = 0; h < c->n_head; h++) {
            const int64_t hk = h / gq;
            const double slope = ref_slope(c->max_bias, c->n_head, h);
            for (int64_t iq = 0; iq < c->n_q; iq++) {
                const float * qr = qk + ((i3 * c->n_head + h) * c->n_q + iq) * c->DK;
                double mx = c->sinks ? tu_get(sinks, h, 0, 0, 0) : -INFINITY;
                for (int64_t j = 0; j < c->n_kv; j++) {
                    const float * kr = kv + ((i3 * c->n_head_kv + hk) * c->n_kv + j) * c->DK;
                    double d = 0.0;
                    for (int64_t i = 0; i < c->DK; i++) {
                        d += (double) qr[i] * kr[i];
                    }
                    d *= c->scale;
                    if (c->softcap > 0.0f) {
                        d = c->softcap * tanh(d / c->softcap);
                    }
                    if (mask) {
                        const double mvv = tu_get(mask, j, iq, h % m2, i3 % m3);
                        d = mvv == -INFINITY ? -INFINITY : d + slope * mvv;
                    }
                    lg[j] = d;
                    mx = d > mx ? d : mx;
                }
                if (mx == -INFINITY) {
                    continue; /* nothing visible: zeros */
                }
                double sum = c->sinks ? exp(tu_get(sinks, h, 0, 0, 0) - mx) : 0.0;
                for (int64_t j = 0; j < c->n_kv; j++) {
                    lg[j] = exp(lg[j] - mx);
                    sum += lg[j];
                }
                for (int64_t j = 0; j < c->n_kv; j++) {
                    const float * vr = vv + ((i3 * c->n_head_kv + hk) * c->n_kv + j) * c->DV;
                    for (int64_t i = 0; i < c->DV; i++) {
                        want[to_index(out, i, h, iq, i3)] += lg[j] / sum * vr[i];
                    }
                }
            }
        }
    }
    to_check(out, want, c->tol, "flash_attn_ext vs reference");

    if (c->unfused) {
        compare_unfused(c, q, k, v, mask, sinks);
    }
    free(lg);
    free(want);
    free(qk);
    free(qv);
    free(kv);
    free(vv);
    to_end(&e);
}

/* ---- values -------------------------------------------------------------------------------- */

/* the common case, which each test changes */
static struct fa_case base(void) {
    return (struct fa_case){ .DK = 64, .DV = 64, .n_q = 3, .n_kv = 70, .n_head = 4, .n_head_kv = 2, .ne3 = 1,
                             .kt = GGML_TYPE_F16, .vt = GGML_TYPE_F16, .mask = true, .scale = 0.125f, .n_threads = 2,
                             .tol = 1e-4 };
}

Test(flash_attn, decode_one_query_gqa_f16) {
    struct fa_case c = base();
    c.n_q = 1;
    c.n_head = 8;
    c.n_head_kv = 2;
    c.DK = 128;
    c.DV = 128;
    c.n_kv = 300;
    c.unfused = true;
    run_case(&c, 1);
}

Test(flash_attn, prefill_causal_mask_f32) {
    struct fa_case c = base();
    c.kt = GGML_TYPE_F32;
    c.vt = GGML_TYPE_F32;
    c.n_q = 17;
    c.n_kv = 40;
    c.causal = true;
    c.unfused = true;
    run_case(&c, 2);
}

Test(flash_attn, no_mask) {
    struct fa_case c = base();
    c.mask = false;
    c.unfused = true;
    run_case(&c, 3);
}

Test(flash_attn, kv_bf16) {
    struct fa_case c = base();
    c.kt = GGML_TYPE_BF16;
    c.vt = GGML_TYPE_BF16;
    c.unfused = true;
    run_case(&c, 4);
}

/* every quantized K/V cache type: K meets q quantized as the matrix product quantizes it, V is read as F32 */
Test(flash_attn, kv_quantized_types) {
    const enum ggml_type types[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_IQ4_NL };
    for (int i = 0; i < (int) (sizeof types / sizeof types[0]); i++) {
        struct fa_case c = base();
        c.kt  = types[i];
        c.vt  = types[i];
        c.tol = 1e-4;
        run_case(&c, (uint64_t) (5 + i));
    }
}

Test(flash_attn, k_q8_0_v_f16_matches_unfused) {
    struct fa_case c = base();
    c.kt = GGML_TYPE_Q8_0;
    c.vt = GGML_TYPE_F16;
    c.tol = 1e-4; /* both round q to Q8_0 */
    c.unfused = true;
    run_case(&c, 11);
}

Test(flash_attn, mask_broadcast_over_heads_and_sequences) {
    struct fa_case c = base();
    c.n_head = 4;
    c.n_head_kv = 1;
    c.ne3 = 2;
    c.mask_ne2 = 2;
    c.mask_ne3 = 1;
    c.unfused = true;
    run_case(&c, 12);
}

Test(flash_attn, mask_padded_rows) {
    struct fa_case c = base();
    c.n_q = 5;
    c.mask_rows = 64;
    c.unfused = true;
    run_case(&c, 13);
}

Test(flash_attn, alibi_max_bias) {
    struct fa_case c = base();
    c.n_head = 6;
    c.n_head_kv = 3;
    c.max_bias = 8.0f;
    c.unfused = true;
    run_case(&c, 14);
}

Test(flash_attn, logit_softcap) {
    struct fa_case c = base();
    c.scale = 1.0f;
    c.softcap = 2.5f;
    run_case(&c, 15);
}

Test(flash_attn, sinks) {
    struct fa_case c = base();
    c.sinks = true;
    c.unfused = true;
    run_case(&c, 16);
}

Test(flash_attn, fully_masked_row_gives_zeros) {
    struct fa_case c = base();
    c.mask_all0 = true;
    run_case(&c, 17);
}

Test(flash_attn, head_size_40) {
    struct fa_case c = base();
    c.DK = 40;
    c.DV = 40;
    c.unfused = true;
    run_case(&c, 18);
}

/* 80 is whole vectors of 16 but not of 32 (the row-at-a-time value path) */
Test(flash_attn, head_size_80) {
    struct fa_case c = base();
    c.DK = 80;
    c.DV = 80;
    c.unfused = true;
    run_case(&c, 22);
    c.kt = GGML_TYPE_F32;
    c.vt = GGML_TYPE_BF16;
    run_case(&c, 23);
}

Test(flash_attn, head_size_256) {
    struct fa_case c = base();
    c.DK = 256;
    c.DV = 256;
    c.n_kv = 33;
    run_case(&c, 19);
}

Test(flash_attn, head_sizes_576_512_differ) {
    struct fa_case c = base();
    c.DK = 576;
    c.DV = 512;
    c.n_head = 2;
    c.n_head_kv = 1;
    c.n_kv = 33;
    c.unfused = true;
    run_case(&c, 20);
}

Test(flash_attn, one_and_many_threads) {
    for (int nt = 1; nt <= 5; nt += 2) {
        struct fa_case c = base();
        c.n_head = 8;
        c.n_head_kv = 1;
        c.n_q = 2;
        c.n_threads = nt;
        run_case(&c, 21);
    }
}

/* ---- precision hint and sinks -------------------------------------------------------------- */

Test(flash_attn, prec_round_trip) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 1, 2);
    struct ggml_tensor * k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 64, 8, 1);
    struct ggml_tensor * r = ggml_flash_attn_ext(ctx, q, k, k, NULL, 1.0f, 0.0f, 0.0f);
    cr_assert_not_null(r);
    cr_assert_eq(ggml_flash_attn_ext_get_prec(r), GGML_PREC_DEFAULT);
    ggml_flash_attn_ext_set_prec(r, GGML_PREC_F32);
    cr_assert_eq(ggml_flash_attn_ext_get_prec(r), GGML_PREC_F32);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 3), GGML_PREC_F32, "op_params[3] holds the precision, as upstream");
    cr_assert_float_eq(ggmlx_get_op_params_f32(r, 0), 1.0f, 0.0f);
    ggml_free(ctx);
}

Test(flash_attn, set_prec_refuses_other_ops) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_flash_attn_ext_set_prec(a, GGML_PREC_F32);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_flash_attn_ext_set_prec"));
    cr_assert_eq(a->op_params[3], 0);
    ggml_free(ctx);
}

Test(flash_attn, add_sinks_refuses_wrong_length) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 1, 4);
    struct ggml_tensor * k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 64, 8, 1);
    struct ggml_tensor * r = ggml_flash_attn_ext(ctx, q, k, k, NULL, 1.0f, 0.0f, 0.0f);
    struct ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_flash_attn_ext_add_sinks(r, s);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_flash_attn_ext_add_sinks"));
    cr_assert_null(r->src[4]);
    ggml_free(ctx);
}

/* ---- soft_max with sinks ------------------------------------------------------------------- */

Test(soft_max_sinks, values) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(30);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 7, 3, 2, 1);
    struct ggml_tensor * s = to_new(&e, GGML_TYPE_F32, 2, 1, 1, 1);
    tu_fill(a, &rng, -3.0f, 3.0f);
    tu_fill(s, &rng, -1.0f, 4.0f);
    struct ggml_tensor * r = ggml_soft_max_ext(e.ctx, a, NULL, 0.5f, 0.0f);
    ggml_soft_max_add_sinks(r, s);
    to_alloc(&e, r);
    to_compute(&e, r, 1);
    double want[42];
    for (int64_t i2 = 0; i2 < 2; i2++) {
        for (int64_t i1 = 0; i1 < 3; i1++) {
            const double sk = tu_get(s, i2, 0, 0, 0);
            double mx = sk, sum = 0.0;
            for (int64_t i0 = 0; i0 < 7; i0++) {
                mx = fmax(mx, 0.5 * tu_get(a, i0, i1, i2, 0));
            }
            sum = exp(sk - mx);
            for (int64_t i0 = 0; i0 < 7; i0++) {
                sum += exp(0.5 * tu_get(a, i0, i1, i2, 0) - mx);
            }
            for (int64_t i0 = 0; i0 < 7; i0++) {
                want[to_index(r, i0, i1, i2, 0)] = exp(0.5 * tu_get(a, i0, i1, i2, 0) - mx) / sum;
            }
        }
    }
    to_check(r, want, 1e-6, "soft_max with sinks");
    to_end(&e);
}

Test(soft_max_sinks, refuses_non_softmax_and_wrong_length) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 5, 2, 3);
    struct ggml_tensor * s = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    ggml_soft_max_add_sinks(a, s);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_soft_max_add_sinks"));
    struct ggml_tensor * r = ggml_soft_max(ctx, a);
    ggml_soft_max_add_sinks(r, s);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_soft_max_add_sinks"));
    cr_assert_null(r->src[2]);
    ggml_free(ctx);
}

/* ---- refused shapes ------------------------------------------------------------------------ */

struct bad_fa {
    int64_t qne[4], kne[4], vne[4], mne[4];
    enum ggml_type qt;
    bool mask;
    float max_bias;
};

static void expect_refused(const struct bad_fa * b) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * q = ggml_new_tensor(ctx, b->qt, 4, b->qne);
    struct ggml_tensor * k = ggml_new_tensor(ctx, GGML_TYPE_F16, 4, b->kne);
    struct ggml_tensor * v = ggml_new_tensor(ctx, GGML_TYPE_F16, 4, b->vne);
    struct ggml_tensor * m = b->mask ? ggml_new_tensor(ctx, GGML_TYPE_F16, 4, b->mne) : NULL;
    struct ggml_tensor * r = ggml_flash_attn_ext(ctx, q, k, v, m, 1.0f, b->max_bias, 0.0f);
    to_expect_rejected(ctx, r, "ggml_flash_attn_ext");
    ggml_free(ctx);
}

#define OKQ { 64, 4, 4, 1 }
#define OKK { 64, 16, 2, 1 }
#define OKM { 16, 4, 1, 1 }

Test(flash_attn_refuses, q_not_f32) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, OKK, OKM, GGML_TYPE_F16, true, 0.0f });
}
Test(flash_attn_refuses, key_size_differs_from_query) {
    expect_refused(&(struct bad_fa){ { 32, 4, 4, 1 }, OKK, OKK, OKM, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, k_and_v_token_counts_differ) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, { 64, 15, 2, 1 }, OKM, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, heads_not_multiple_of_kv_heads) {
    expect_refused(&(struct bad_fa){ { 64, 4, 3, 1 }, OKK, OKK, OKM, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, ne3_differs) {
    expect_refused(&(struct bad_fa){ { 64, 4, 4, 2 }, OKK, OKK, OKM, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, mask_too_few_rows) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, OKK, { 16, 3, 1, 1 }, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, mask_row_not_n_kv) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, OKK, { 17, 4, 1, 1 }, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, mask_heads_do_not_divide) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, OKK, { 16, 4, 3, 1 }, GGML_TYPE_F32, true, 0.0f });
}
Test(flash_attn_refuses, alibi_without_mask) {
    expect_refused(&(struct bad_fa){ OKQ, OKK, OKK, OKM, GGML_TYPE_F32, false, 8.0f });
}
