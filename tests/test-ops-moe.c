/*
 * test-ops-moe.c -- MUL_MAT_ID (float and quantized experts, ids laid out as upstream: I32
 * [n_used, n_tokens], b shared by all used experts or one row each), ADD_ID, ARGSORT_TOP_K
 * against references from their definitions, against the dense mul_mat on the same weights,
 * and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"
#include "ggml-cpu.h"
#include "quant/quant-blocks.h"

#include <math.h>

struct mi_case {
    enum ggml_type t;
    int64_t        K, N, n_exp, n_used, n_tok, n_b;
    int            n_threads;
    bool           b_strided; /* b stored transposed-in-memory (elements not contiguous) */
    double         tol;
};

/* expert weights of type t with random values; w gets them as stored, in F32 */
static struct ggml_tensor * new_experts(struct to_env * e, const struct mi_case * c, struct tu_rng * rng, float ** w) {
    const int64_t n = c->K * c->N * c->n_exp;
    float * v = malloc((size_t) n * sizeof(float));
    cr_assert_not_null(v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = tu_uniform(rng, -1.0f, 1.0f);
    }
    struct ggml_tensor * as = to_new(e, c->t, c->K, c->N, c->n_exp, 1);
    if (ggml_is_quantized(c->t)) {
        cr_assert_eq(ggml_quantize_chunk(c->t, v, as->data, 0, c->N * c->n_exp, c->K, NULL), ggml_nbytes(as));
        ggml_get_type_traits(c->t)->to_float(as->data, v, n);
    } else {
        TU_FOR_EACH(as, i0, i1, i2, i3) {
            const int64_t i = (i2 * c->N + i1) * c->K + i0;
            tu_set(as, i0, i1, i2, i3, v[i]);
            v[i] = (float) tu_get(as, i0, i1, i2, i3);
        }
    }
    *w = v;
    return as;
}

/* ids: each token's experts distinct, drawn at random (some experts left unused, some shared) */
static void fill_ids(struct ggml_tensor * ids, int64_t n_exp, struct tu_rng * rng) {
    for (int64_t t = 0; t < ids->ne[1]; t++) {
        for (int64_t e = 0; e < ids->ne[0]; e++) {
            int32_t x;
            bool dup;
            do {
                x = (int32_t) (tu_next(rng) % (uint64_t) n_exp);
                dup = false;
                for (int64_t j = 0; j < e; j++) {
                    dup |= (int32_t) tu_get(ids, j, t, 0, 0) == x;
                }
            } while (dup);
            tu_set(ids, e, t, 0, 0, x);
        }
    }
}

static void run_mi(const struct mi_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    float * w;
    struct ggml_tensor * as = new_experts(&e, c, &rng, &w);
    struct ggml_tensor * b = c->b_strided ? to_new_transposed(&e, GGML_TYPE_F32, c->K, c->n_b, c->n_tok, 1)
                                          : to_new(&e, GGML_TYPE_F32, c->K, c->n_b, c->n_tok, 1);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * ids = to_new(&e, GGML_TYPE_I32, c->n_used, c->n_tok, 1, 1);
    fill_ids(ids, c->n_exp, &rng);

    struct ggml_tensor * out = ggml_mul_mat_id(e.ctx, as, b, ids);
    cr_assert_not_null(out, "%s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    cr_assert(out->ne[0] == c->N && out->ne[1] == c->n_used && out->ne[2] == c->n_tok && out->ne[3] == 1);
    to_alloc(&e, out);
    to_compute(&e, out, c->n_threads);

    /* quantized experts meet the activations rounded to their vec_dot_type: so does the reference */
    float * bv = malloc((size_t) (c->K * c->n_b * c->n_tok) * sizeof(float));
    TU_FOR_EACH(b, i0, i1, i2, i3) {
        bv[(i2 * c->n_b + i1) * c->K + i0] = (float) tu_get(b, i0, i1, i2, i3);
    }
    if (ggml_is_quantized(c->t)) {
        const enum ggml_type vt = ggml_get_type_traits_cpu(c->t)->vec_dot_type;
        void * tmp = malloc(ggml_row_size(vt, c->K));
        for (int64_t r = 0; r < c->n_b * c->n_tok; r++) {
            ggml_get_type_traits_cpu(vt)->from_float(bv + r * c->K, tmp, c->K);
            if (vt == GGML_TYPE_Q8_K) { /* activation-only type: no to_float of its own */
                const block_q8_K * qb = tmp;
                for (int64_t i = 0; i < c->K; i++) {
                    bv[r * c->K + i] = qb[i / QK_K].d * qb[i / QK_K].qs[i % QK_K];
                }
            } else {
                ggml_get_type_traits(vt)->to_float(tmp, bv + r * c->K, c->K);
            }
        }
        free(tmp);
    }
    double * want = malloc((size_t) ggml_nelements(out) * sizeof(double));
    for (int64_t t = 0; t < c->n_tok; t++) {
        for (int64_t u = 0; u < c->n_used; u++) {
            const int64_t x = (int64_t) tu_get(ids, u, t, 0, 0);
            for (int64_t n = 0; n < c->N; n++) {
                double s = 0.0;
                for (int64_t k = 0; k < c->K; k++) {
                    s += (double) w[(x * c->N + n) * c->K + k] * bv[(t * c->n_b + u % c->n_b) * c->K + k];
                }
                want[to_index(out, n, u, t, 0)] = s;
            }
        }
    }
    to_check(out, want, c->tol, "mul_mat_id vs reference");
    free(want);
    free(bv);
    free(w);
    to_end(&e);
}

static struct mi_case mi_base(enum ggml_type t) {
    const bool q = ggml_is_quantized(t);
    return (struct mi_case){ .t = t, .K = 256, .N = 40, .n_exp = 8, .n_used = 3, .n_tok = 5, .n_b = 1,
                             .n_threads = 2, .tol = q ? 1e-4 : t == GGML_TYPE_F32 ? 1e-5 : 1e-4 };
}

Test(mul_mat_id, f32_experts) { struct mi_case c = mi_base(GGML_TYPE_F32); run_mi(&c, 1); }
Test(mul_mat_id, f16_experts) { struct mi_case c = mi_base(GGML_TYPE_F16); run_mi(&c, 2); }
Test(mul_mat_id, bf16_experts) { struct mi_case c = mi_base(GGML_TYPE_BF16); run_mi(&c, 3); }
Test(mul_mat_id, q8_0_experts) { struct mi_case c = mi_base(GGML_TYPE_Q8_0); run_mi(&c, 4); }
Test(mul_mat_id, q4_0_experts) { struct mi_case c = mi_base(GGML_TYPE_Q4_0); run_mi(&c, 5); }
Test(mul_mat_id, q4_k_experts) { struct mi_case c = mi_base(GGML_TYPE_Q4_K); run_mi(&c, 6); }
Test(mul_mat_id, iq4_nl_experts) { struct mi_case c = mi_base(GGML_TYPE_IQ4_NL); run_mi(&c, 7); }

Test(mul_mat_id, one_b_row_per_used_expert) {
    struct mi_case c = mi_base(GGML_TYPE_F16);
    c.n_b = c.n_used;
    run_mi(&c, 8);
}

Test(mul_mat_id, single_token) {
    struct mi_case c = mi_base(GGML_TYPE_Q8_0);
    c.n_tok = 1;
    c.n_used = 4;
    run_mi(&c, 9);
}

/* many tokens per expert: the quantized tiles go through the batched kernel */
Test(mul_mat_id, many_tokens_batched_kernel) {
    struct mi_case c = mi_base(GGML_TYPE_Q4_0);
    c.n_tok = 300;
    c.n_exp = 4;
    c.n_used = 2;
    c.N = 70;
    run_mi(&c, 10);
}

Test(mul_mat_id, strided_activations) {
    struct mi_case c = mi_base(GGML_TYPE_Q8_0);
    c.b_strided = true;
    c.n_b = 3;
    run_mi(&c, 11);
    c = mi_base(GGML_TYPE_F32);
    c.b_strided = true;
    run_mi(&c, 12);
}

Test(mul_mat_id, one_and_many_threads) {
    for (int nt = 1; nt <= 5; nt += 2) {
        struct mi_case c = mi_base(GGML_TYPE_Q4_0);
        c.n_threads = nt;
        run_mi(&c, 13);
    }
}

/* each used expert's rows equal a dense mul_mat of that expert's matrix with the same row */
Test(mul_mat_id, matches_dense_mul_mat) {
    struct ggml_init_params ip = { 64u * 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    struct tu_rng rng = tu_rng_new(14);
    const int64_t K = 128, N = 48, n_exp = 4, n_tok = 6;
    struct ggml_tensor * f = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, N, n_exp);
    tu_fill(f, &rng, -1.0f, 1.0f);
    struct ggml_tensor * as = ggml_new_tensor_3d(ctx, GGML_TYPE_Q8_0, K, N, n_exp);
    ggml_quantize_chunk(GGML_TYPE_Q8_0, f->data, as->data, 0, N * n_exp, K, NULL);
    struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 1, n_tok);
    tu_fill(b, &rng, -1.0f, 1.0f);
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 1, n_tok);
    for (int64_t t = 0; t < n_tok; t++) {
        tu_set(ids, 0, t, 0, 0, (double) ((t * 3) % n_exp));
    }
    struct ggml_tensor * out = ggml_mul_mat_id(ctx, as, b, ids);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    struct ggml_tensor * dense[6];
    for (int64_t t = 0; t < n_tok; t++) {
        const int64_t x = (t * 3) % n_exp;
        struct ggml_tensor * wx = ggml_view_2d(ctx, as, K, N, as->nb[1], (size_t) x * as->nb[2]);
        struct ggml_tensor * bt = ggml_view_2d(ctx, b, K, 1, b->nb[1], (size_t) t * b->nb[2]);
        dense[t] = ggml_mul_mat(ctx, wx, bt);
        ggml_build_forward_expand(gf, dense[t]);
    }
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, gf, 2), GGML_STATUS_SUCCESS);
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t n = 0; n < N; n++) {
            cr_assert(tu_close(tu_get(out, n, 0, t, 0), tu_get(dense[t], n, 0, 0, 0), 1e-5),
                      "token %lld row %lld: %g vs dense %g", (long long) t, (long long) n, tu_get(out, n, 0, t, 0),
                      tu_get(dense[t], n, 0, 0, 0));
        }
    }
    ggml_free(ctx);
}

Test(mul_mat_id, bad_expert_id_fails_compute) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * as = to_new(&e, GGML_TYPE_F32, 32, 4, 3, 1);
    struct ggml_tensor * b  = to_new(&e, GGML_TYPE_F32, 32, 1, 2, 1);
    struct ggml_tensor * ids = to_new(&e, GGML_TYPE_I32, 2, 2, 1, 1);
    memset(as->data, 0, ggml_nbytes(as));
    memset(b->data, 0, ggml_nbytes(b));
    tu_set(ids, 0, 0, 0, 0, 1);
    tu_set(ids, 1, 0, 0, 0, 2);
    tu_set(ids, 0, 1, 0, 0, 0);
    tu_set(ids, 1, 1, 0, 0, 3);
    struct ggml_tensor * out = to_alloc(&e, ggml_mul_mat_id(e.ctx, as, b, ids));
    cr_assert_eq(tu_compute(e.ctx, out, 2), GGML_STATUS_FAILED);
    cr_assert_not_null(strstr(ggmlx_last_error(), "expert id 3"), "%s", ggmlx_last_error());
    to_end(&e);
}

static void mi_refused(enum ggml_type idt, const int64_t asne[4], const int64_t bne[4], const int64_t idne[4]) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * as  = ggml_new_tensor(ctx, GGML_TYPE_F16, 4, asne);
    struct ggml_tensor * b   = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, bne);
    struct ggml_tensor * ids = ggml_new_tensor(ctx, idt, 4, idne);
    to_expect_rejected(ctx, ggml_mul_mat_id(ctx, as, b, ids), "ggml_mul_mat_id");
    ggml_free(ctx);
}

Test(mul_mat_id_refuses, ids_not_i32) {
    mi_refused(GGML_TYPE_F32, (int64_t[4]){ 32, 8, 4, 1 }, (int64_t[4]){ 32, 1, 5, 1 }, (int64_t[4]){ 2, 5, 1, 1 });
}
Test(mul_mat_id_refuses, experts_not_3d) {
    mi_refused(GGML_TYPE_I32, (int64_t[4]){ 32, 8, 4, 2 }, (int64_t[4]){ 32, 1, 5, 1 }, (int64_t[4]){ 2, 5, 1, 1 });
}
Test(mul_mat_id_refuses, row_lengths_differ) {
    mi_refused(GGML_TYPE_I32, (int64_t[4]){ 32, 8, 4, 1 }, (int64_t[4]){ 16, 1, 5, 1 }, (int64_t[4]){ 2, 5, 1, 1 });
}
Test(mul_mat_id_refuses, token_counts_differ) {
    mi_refused(GGML_TYPE_I32, (int64_t[4]){ 32, 8, 4, 1 }, (int64_t[4]){ 32, 1, 5, 1 }, (int64_t[4]){ 2, 4, 1, 1 });
}
Test(mul_mat_id_refuses, used_not_multiple_of_b_rows) {
    mi_refused(GGML_TYPE_I32, (int64_t[4]){ 32, 8, 4, 1 }, (int64_t[4]){ 32, 2, 5, 1 }, (int64_t[4]){ 3, 5, 1, 1 });
}

/* ---- add_id -------------------------------------------------------------------------------- */

Test(add_id, values) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(20);
    struct ggml_tensor * a   = to_new(&e, GGML_TYPE_F32, 9, 3, 4, 1);
    struct ggml_tensor * b   = to_new(&e, GGML_TYPE_F32, 9, 5, 1, 1);
    struct ggml_tensor * ids = to_new(&e, GGML_TYPE_I32, 3, 4, 1, 1);
    tu_fill(a, &rng, -1.0f, 1.0f);
    tu_fill(b, &rng, -1.0f, 1.0f);
    fill_ids(ids, 5, &rng);
    struct ggml_tensor * r = to_alloc(&e, ggml_add_id(e.ctx, a, b, ids));
    to_compute(&e, r, 2);
    double want[108];
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        want[to_index(r, i0, i1, i2, i3)] = tu_get(a, i0, i1, i2, 0) + tu_get(b, i0, (int64_t) tu_get(ids, i1, i2, 0, 0), 0, 0);
    }
    to_check(r, want, 1e-6, "add_id");
    to_end(&e);
}

Test(add_id, bad_id_fails_compute) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a   = to_new(&e, GGML_TYPE_F32, 4, 1, 1, 1);
    struct ggml_tensor * b   = to_new(&e, GGML_TYPE_F32, 4, 2, 1, 1);
    struct ggml_tensor * ids = to_new(&e, GGML_TYPE_I32, 1, 1, 1, 1);
    memset(a->data, 0, ggml_nbytes(a));
    memset(b->data, 0, ggml_nbytes(b));
    tu_set(ids, 0, 0, 0, 0, -1);
    struct ggml_tensor * r = to_alloc(&e, ggml_add_id(e.ctx, a, b, ids));
    cr_assert_eq(tu_compute(e.ctx, r, 1), GGML_STATUS_FAILED);
    to_end(&e);
}

Test(add_id_refuses, shapes_do_not_fit) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a   = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    struct ggml_tensor * b   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 6);
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 2);
    to_expect_rejected(ctx, ggml_add_id(ctx, a, b, ids), "ggml_add_id");
    ggml_free(ctx);
}

Test(add_id_refuses, ids_not_i32) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a   = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    struct ggml_tensor * b   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 6);
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    to_expect_rejected(ctx, ggml_add_id(ctx, a, b, ids), "ggml_add_id");
    ggml_free(ctx);
}

/* ---- argsort_top_k ------------------------------------------------------------------------- */

Test(argsort_top_k, largest_first) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 6, 2, 1, 1);
    const float v[12] = { 0.1f, 0.9f, -2.0f, 0.5f, 3.0f, 0.2f,   -1.0f, -0.5f, -3.0f, 7.0f, 0.0f, 1.0f };
    memcpy(a->data, v, sizeof v);
    struct ggml_tensor * r = ggml_argsort_top_k(e.ctx, a, 3);
    cr_assert_not_null(r);
    cr_assert(r->type == GGML_TYPE_I32 && r->ne[0] == 3 && r->ne[1] == 2);
    cr_assert_not_null(r->view_src, "a view of the argsort, as upstream");
    to_alloc(&e, r->view_src);
    r->data = (char *) r->view_src->data + r->view_offs;
    struct ggml_tensor * c = to_alloc(&e, ggml_cont(e.ctx, r));
    to_compute(&e, c, 1);
    const int32_t want[6] = { 4, 1, 3,   3, 5, 4 };
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(((const int32_t *) c->data)[i], want[i], "element %d: %d, want %d", i,
                     ((const int32_t *) c->data)[i], want[i]);
    }
    to_end(&e);
}

Test(argsort_top_k_refuses, k_out_of_range) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 2);
    to_expect_rejected(ctx, ggml_argsort_top_k(ctx, a, 7), "ggml_argsort_top_k");
    ggml_free(ctx);
}
