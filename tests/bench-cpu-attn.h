/*
 * bench-cpu-attn.h -- bench-cpu's rows for attention and experts (included by bench-cpu.c):
 *   flash_attn_decode_T   1 query, 32 heads, 8 KV heads, head 128, 4096 cached tokens: GB/s of
 *                         K and V read (compare with mem_read)
 *   flash_attn_prefill / attn_unfused_prefill   512 queries over 512 tokens with a causal mask,
 *                         the fused op against mul_mat + soft_max_ext + mul_mat: GFLOP/s
 *   mul_mat_id_T / mul_mat_dense_T   8 of 64 experts, against one dense mul_mat over the same bytes
 *                         of weights: batch 1 (GB/s), the 8 used experts' rows times one vector;
 *                         batch 512 (GFLOP/s), every expert touched, so all 64 experts' rows times
 *                         the 64 rows each expert meets (the same flops)
 */
#ifndef GGMLX_BENCH_CPU_ATTN_H
#define GGMLX_BENCH_CPU_ATTN_H

#include <math.h>

/* fill any type: float types directly, quantized ones through ggml_quantize_chunk */
static int ba_fill(struct ggml_tensor * t, uint64_t seed) {
    if (!ggml_is_quantized(t->type)) {
        fill(t, seed);
        return 0;
    }
    const int64_t n = ggml_nelements(t);
    float * v = malloc((size_t) n * sizeof(float));
    if (v == NULL) {
        return 1;
    }
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        v[i] = next_value(&s);
    }
    ggml_quantize_chunk(t->type, v, t->data, 0, n / t->ne[0], t->ne[0], NULL);
    free(v);
    return 0;
}

static struct ggml_context * ba_ctx(size_t data_bytes) {
    struct ggml_init_params ip = { data_bytes + 64 * ggml_tensor_overhead() + ggml_graph_overhead() + (8u << 20),
                                   NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", data_bytes);
    }
    return ctx;
}

/* F16 mask [n_kv, n_q]: query i sees tokens 0 .. n_kv - n_q + i */
static void ba_causal(struct ggml_tensor * m) {
    const int64_t n_kv = m->ne[0], n_q = m->ne[1];
    for (int64_t i = 0; i < n_q; i++) {
        for (int64_t j = 0; j < n_kv; j++) {
            ((ggml_fp16_t *) m->data)[i * n_kv + j] = ggml_fp32_to_fp16(j <= n_kv - n_q + i ? 0.0f : -INFINITY);
        }
    }
}

static int bench_flash_attn_decode(enum ggml_type kv, int runs) {
    const int64_t D = 128, n_head = 32, n_head_kv = 8, n_kv = 4096;
    const size_t kv_bytes = 2 * ggml_row_size(kv, D) * (size_t) (n_kv * n_head_kv);
    struct ggml_context * ctx = ba_ctx(kv_bytes + (size_t) n_kv * 2 + (size_t) (D * n_head) * 8);
    if (ctx == NULL) {
        return 1;
    }
    struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, 1, n_head);
    struct ggml_tensor * k = ggml_new_tensor_3d(ctx, kv, D, n_kv, n_head_kv);
    struct ggml_tensor * v = ggml_new_tensor_3d(ctx, kv, D, n_kv, n_head_kv);
    struct ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, 1);
    struct ggml_tensor * o = ggml_flash_attn_ext(ctx, q, k, v, m, 0.088f, 0.0f, 0.0f);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    int rc = o == NULL || gf == NULL;
    if (!rc) {
        ggml_build_forward_expand(gf, o);
        fill(q, 11);
        rc |= ba_fill(k, 12) | ba_fill(v, 13);
        ba_causal(m);
        char name[48], shape[80];
        snprintf(name, sizeof name, "flash_attn_decode_%s", ggml_type_name(kv));
        snprintf(shape, sizeof shape, "1 q x %lld kv, %lld/%lld heads, d %lld (%.0f MiB KV)", (long long) n_kv,
                 (long long) n_head, (long long) n_head_kv, (long long) D, (double) kv_bytes / (1024.0 * 1024.0));
        rc |= time_rate(gf, runs, name, shape, (double) kv_bytes, "GB/s");
    }
    ggml_free(ctx);
    return rc;
}

static int bench_flash_attn_prefill(enum ggml_type kv, int runs) {
    const int64_t D = 128, n_head = 32, n_head_kv = 8, n_q = 512, n_kv = 512;
    const size_t bytes = 2 * ggml_row_size(kv, D) * (size_t) (n_kv * n_head_kv) + (size_t) (D * n_q * n_head) * 12 +
                         (size_t) (n_q * n_kv * n_head) * 8 + (size_t) (n_kv * D * n_head_kv) * 4;
    struct ggml_context * ctx = ba_ctx(bytes);
    if (ctx == NULL) {
        return 1;
    }
    struct ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, D, n_q, n_head);
    struct ggml_tensor * k = ggml_new_tensor_3d(ctx, kv, D, n_kv, n_head_kv);
    struct ggml_tensor * v = ggml_new_tensor_3d(ctx, kv, D, n_kv, n_head_kv);
    struct ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, n_q);
    struct ggml_tensor * o = ggml_flash_attn_ext(ctx, q, k, v, m, 0.088f, 0.0f, 0.0f);
    /* the same attention unfused, as llama.cpp builds it without flash attention */
    struct ggml_tensor * kq = ggml_soft_max_ext(ctx, ggml_mul_mat(ctx, k, q), m, 0.088f, 0.0f);
    struct ggml_tensor * vt = ggml_cont(ctx, ggml_transpose(ctx, v));
    struct ggml_tensor * u  = ggml_cont(ctx, ggml_permute(ctx, ggml_mul_mat(ctx, vt, kq), 0, 2, 1, 3));
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    struct ggml_cgraph * gu = ggml_new_graph(ctx);
    int rc = o == NULL || u == NULL || gf == NULL || gu == NULL;
    if (!rc) {
        ggml_build_forward_expand(gf, o);
        ggml_build_forward_expand(gu, u);
        fill(q, 21);
        rc |= ba_fill(k, 22) | ba_fill(v, 23);
        ba_causal(m);
        char name[48], shape[80];
        snprintf(shape, sizeof shape, "%lld q x %lld kv causal, %lld/%lld heads, d %lld", (long long) n_q,
                 (long long) n_kv, (long long) n_head, (long long) n_head_kv, (long long) D);
        const double flops = 4.0 * (double) (n_q * n_kv * n_head * D); /* both products, unmasked */
        snprintf(name, sizeof name, "flash_attn_prefill_%s", ggml_type_name(kv));
        rc |= time_rate(gf, runs, name, shape, flops, "GFLOP/s");
        snprintf(name, sizeof name, "attn_unfused_prefill_%s", ggml_type_name(kv));
        rc |= time_rate(gu, runs, name, shape, flops, "GFLOP/s");
    }
    ggml_free(ctx);
    return rc;
}

static int bench_mul_mat_id(enum ggml_type t, int64_t n_tok, int runs) {
    const int64_t K = 2048, N = 768, n_exp = 64, n_used = 8;
    const size_t wbytes = ggml_row_size(t, K) * (size_t) (N * n_exp);
    const bool    vec    = n_tok == 1;
    const int64_t d_rows = vec ? N * n_used : N * n_exp;             /* the weights read */
    const int64_t d_m    = vec ? 1 : n_tok * n_used / n_exp;         /* rows per expert */
    const size_t  dbytes = ggml_row_size(t, K) * (size_t) d_rows;
    struct ggml_context * ctx = ba_ctx(wbytes + dbytes + (size_t) (K + N * n_used) * (size_t) n_tok * 8 +
                                       (size_t) (n_used * n_tok) * 4);
    if (ctx == NULL) {
        return 1;
    }
    struct ggml_tensor * as  = ggml_new_tensor_3d(ctx, t, K, N, n_exp);
    struct ggml_tensor * b   = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, 1, n_tok);
    struct ggml_tensor * ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, n_used, n_tok);
    struct ggml_tensor * o   = ggml_mul_mat_id(ctx, as, b, ids);
    struct ggml_tensor * w   = ggml_new_tensor_2d(ctx, t, K, d_rows);
    struct ggml_tensor * bd  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, d_m);
    struct ggml_tensor * d   = ggml_mul_mat(ctx, w, bd);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    struct ggml_cgraph * gd = ggml_new_graph(ctx);
    int rc = o == NULL || d == NULL || gf == NULL || gd == NULL;
    if (!rc) {
        ggml_build_forward_expand(gf, o);
        ggml_build_forward_expand(gd, d);
        rc |= ba_fill(as, 31) | ba_fill(w, 32);
        fill(b, 33);
        fill(bd, 34);
        /* each token picks n_used distinct experts, spread evenly over all of them */
        for (int64_t i = 0; i < n_tok; i++) {
            for (int64_t e = 0; e < n_used; e++) {
                ((int32_t *) ids->data)[i * n_used + e] = (int32_t) ((i * 13 + e * (n_exp / n_used)) % n_exp);
            }
        }
        char name[48], shape[80];
        snprintf(shape, sizeof shape, "%lld of %lld experts %lldx%lld, batch %lld", (long long) n_used,
                 (long long) n_exp, (long long) N, (long long) K, (long long) n_tok);
        const double work = vec ? (double) dbytes : 2.0 * (double) (K * N * n_used * n_tok);
        char dshape[80];
        snprintf(dshape, sizeof dshape, "%lldx%lld * %lldx%lld", (long long) d_rows, (long long) K, (long long) K,
                 (long long) d_m);
        snprintf(name, sizeof name, "mul_mat_id_%s%s", ggml_type_name(t), vec ? "_vec" : "");
        rc |= time_rate(gf, runs, name, shape, work, vec ? "GB/s" : "GFLOP/s");
        snprintf(name, sizeof name, "mul_mat_dense_%s%s", ggml_type_name(t), vec ? "_vec" : "");
        rc |= time_rate(gd, runs, name, dshape, work, vec ? "GB/s" : "GFLOP/s");
    }
    ggml_free(ctx);
    return rc;
}

/* every row of this family (--only attn) */
static int bench_attn_rows(bool quick, int runs) {
    int rc = 0;
    rc |= bench_flash_attn_decode(GGML_TYPE_F16, quick ? 2 : 10);
    rc |= bench_flash_attn_decode(GGML_TYPE_Q8_0, quick ? 2 : 10);
    rc |= bench_flash_attn_prefill(GGML_TYPE_F16, quick ? 1 : runs);
    rc |= bench_mul_mat_id(GGML_TYPE_Q4_0, 1, quick ? 2 : 10);
    rc |= bench_mul_mat_id(GGML_TYPE_Q4_0, quick ? 64 : 512, quick ? 1 : runs);
    rc |= bench_mul_mat_id(GGML_TYPE_F16, 1, quick ? 2 : 10);
    return rc;
}

#endif /* GGMLX_BENCH_CPU_ATTN_H */
