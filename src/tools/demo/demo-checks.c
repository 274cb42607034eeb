/*
 * demo-checks.c -- the demo's first three checks: three small graphs on one backend, each
 * checked against a double-precision reference written independently (demo-ref.c).
 *
 *   relu     the classic first ggml program: 100 values through ggml_relu
 *   mlp      x [64, batch 8] -> 64x128 (F16 weights) + b1 -> GELU -> 128x10 (F32) + b2 -> softmax
 *   decoder  one llama-style transformer block: RMSNorm, Q/K/V projections, RoPE, causal
 *            multi-head attention, output projection, residual, RMSNorm, SwiGLU, residual
 */
#include "demo-common.h"
#include "demo-ref.h"

#include <math.h>
#include <stdio.h>

/* the MLP */
#define MLP_IN     64
#define MLP_HIDDEN 128
#define MLP_OUT    10
#define MLP_BATCH  8

/* the decoder block */
#define N_EMBD    DEMO_DECODER_N_EMBD
#define N_HEAD    4
#define HEAD_DIM  (N_EMBD / N_HEAD)
#define N_FF      DEMO_DECODER_N_FF
#define N_TOKENS  8
#define NORM_EPS  1e-5f
#define ROPE_BASE 10000.0f

/* ---- 1. relu: the project's seed example -------------------------------------------------------- */

void demo_relu(const struct demo_options * opt, struct demo_result * res) {
    demo_begin(res, "relu", "relu (100 values)", 0.0, false); /* max(x, 0) is exact */
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 1);

    struct ggml_tensor * x = demo_new(&dc, res, GGML_TYPE_F32, 100, 1, "x");
    if (x == NULL) {
        goto done;
    }
    demo_fill(&dc, x, &rng, -1.0f, 1.0f);

    struct ggml_tensor * y  = TRY(ggml_relu(dc.graph, x));
    struct ggml_cgraph * gf = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, y);

    double * want = demo_values(&dc, res, x);
    if (want == NULL) {
        goto done;
    }
    for (int i = 0; i < 100; i++) {
        want[i] = want[i] > 0.0 ? want[i] : 0.0;
    }
    demo_run(opt, res, &dc, gf, y, want);
done:
    demo_free(&dc);
}

/* ---- 2. a two-layer perceptron ------------------------------------------------------------------ */

struct mlp {
    struct ggml_tensor * w1; /* F16 [MLP_IN, MLP_HIDDEN] */
    struct ggml_tensor * b1; /* F32 [MLP_HIDDEN] */
    struct ggml_tensor * w2; /* F32 [MLP_HIDDEN, MLP_OUT] */
    struct ggml_tensor * b2; /* F32 [MLP_OUT] */
};

/* x: [MLP_IN, MLP_BATCH] -> class probabilities [MLP_OUT, MLP_BATCH] */
static struct ggml_tensor * mlp_forward(struct ggml_context * ctx, struct demo_result * res, const struct mlp * m,
                                        struct ggml_tensor * x) {
    struct ggml_tensor * h = TRY(ggml_mul_mat(ctx, m->w1, x));
    h = TRY(ggml_add(ctx, h, m->b1)); /* b1 is broadcast over the batch */
    h = TRY(ggml_gelu(ctx, h));

    struct ggml_tensor * logits = TRY(ggml_mul_mat(ctx, m->w2, h));
    logits = TRY(ggml_add(ctx, logits, m->b2));
    return TRY(ggml_soft_max(ctx, logits));
}

void demo_mlp(const struct demo_options * opt, struct demo_result * res) {
    /* fc1 has F16 weights: a GPU rounds the activations to F16 too, for its tensor cores (as
     * upstream's CUDA backend does; about 2^-11 relative per product), which the CPU does not */
    demo_begin(res, "mlp", "mlp 64-128-10 (batch 8)", 1e-4, false);
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 2);

    struct mlp m;
    struct ggml_tensor * x = demo_new(&dc, res, GGML_TYPE_F32, MLP_IN, MLP_BATCH, "x");
    m.w1 = demo_new(&dc, res, GGML_TYPE_F16, MLP_IN, MLP_HIDDEN, "fc1.weight");
    m.b1 = demo_new(&dc, res, GGML_TYPE_F32, MLP_HIDDEN, 1, "fc1.bias");
    m.w2 = demo_new(&dc, res, GGML_TYPE_F32, MLP_HIDDEN, MLP_OUT, "fc2.weight");
    m.b2 = demo_new(&dc, res, GGML_TYPE_F32, MLP_OUT, 1, "fc2.bias");
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    /* weights scaled by 1/sqrt(fan-in), so every layer's outputs stay of order 1 */
    demo_fill(&dc, x, &rng, -1.0f, 1.0f);
    demo_fill(&dc, m.w1, &rng, -0.125f, 0.125f);
    demo_fill(&dc, m.b1, &rng, -0.1f, 0.1f);
    demo_fill(&dc, m.w2, &rng, -0.25f, 0.25f);
    demo_fill(&dc, m.b2, &rng, -0.1f, 0.1f);

    struct ggml_tensor * probs = mlp_forward(dc.graph, res, &m, x);
    struct ggml_cgraph * gf    = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, probs);

    const struct ref_mlp ref = {
        MLP_IN, MLP_HIDDEN, MLP_OUT, MLP_BATCH,
        demo_values(&dc, res, m.w1), demo_values(&dc, res, m.b1),
        demo_values(&dc, res, m.w2), demo_values(&dc, res, m.b2),
    };
    const double * xs   = demo_values(&dc, res, x);
    double *       want = TRY(ggml_new_buffer(dc.host, MLP_OUT * MLP_BATCH * sizeof(double)));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    if (!ref_mlp_forward(&ref, xs, want)) {
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "out of memory for the reference");
        goto done;
    }
    demo_run(opt, res, &dc, gf, probs, want);
done:
    demo_free(&dc);
}

/* ---- 3. a llama-style transformer decoder block -------------------------------------------------- */

struct block {
    struct ggml_tensor * attn_norm;          /* F32  [N_EMBD] */
    struct ggml_tensor * wq, * wk, * wv, * wo; /* F16  [N_EMBD, N_EMBD] */
    struct ggml_tensor * ffn_norm;           /* F32  [N_EMBD] */
    struct ggml_tensor * ffn_gate, * ffn_up; /* BF16 [N_EMBD, N_FF] */
    struct ggml_tensor * ffn_down;           /* BF16 [N_FF, N_EMBD] */
};

/*
 * x: [N_EMBD, N_TOKENS]; pos: I32 [N_TOKENS]; mask: F32 [N_TOKENS (keys), N_TOKENS (queries)],
 * 0 where a query may see a key and -INF where it may not.
 */
static struct ggml_tensor * block_forward(struct ggml_context * ctx, struct demo_result * res, const struct block * w,
                                          struct ggml_tensor * x, struct ggml_tensor * pos, struct ggml_tensor * mask) {
    struct ggml_tensor * cur = TRY(ggml_rms_norm(ctx, x, NORM_EPS));
    cur = TRY(ggml_mul(ctx, cur, w->attn_norm));

    struct ggml_tensor * q = TRY(ggml_mul_mat(ctx, w->wq, cur));
    struct ggml_tensor * k = TRY(ggml_mul_mat(ctx, w->wk, cur));
    struct ggml_tensor * v = TRY(ggml_mul_mat(ctx, w->wv, cur));

    /* split each token's row into heads: [HEAD_DIM, N_HEAD, N_TOKENS] */
    q = TRY(ggml_reshape_3d(ctx, q, HEAD_DIM, N_HEAD, N_TOKENS));
    k = TRY(ggml_reshape_3d(ctx, k, HEAD_DIM, N_HEAD, N_TOKENS));
    v = TRY(ggml_reshape_3d(ctx, v, HEAD_DIM, N_HEAD, N_TOKENS));

    /* no YaRN: freq_scale 1, ext_factor 0, attn_factor 1 */
    q = TRY(ggml_rope_ext(ctx, q, pos, NULL, HEAD_DIM, GGML_ROPE_TYPE_NEOX, 0, ROPE_BASE, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f));
    k = TRY(ggml_rope_ext(ctx, k, pos, NULL, HEAD_DIM, GGML_ROPE_TYPE_NEOX, 0, ROPE_BASE, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f));

    /* heads become the batch dim (views, nothing is copied): [HEAD_DIM, N_TOKENS, N_HEAD] */
    q = TRY(ggml_permute(ctx, q, 0, 2, 1, 3));
    k = TRY(ggml_permute(ctx, k, 0, 2, 1, 3));

    /* scores for every (key, query) pair of each head: [N_TOKENS, N_TOKENS, N_HEAD] */
    struct ggml_tensor * kq = TRY(ggml_mul_mat(ctx, k, q));
    kq = TRY(ggml_soft_max_ext(ctx, kq, mask, 1.0f / sqrtf((float) HEAD_DIM), 0.0f));

    /* V with the tokens along dim 0, [N_TOKENS, HEAD_DIM, N_HEAD], so mul_mat sums over keys */
    struct ggml_tensor * vt = TRY(ggml_permute(ctx, v, 1, 2, 0, 3));
    vt = TRY(ggml_cont(ctx, vt));
    struct ggml_tensor * kqv = TRY(ggml_mul_mat(ctx, vt, kq)); /* [HEAD_DIM, N_TOKENS, N_HEAD] */

    /* heads side by side again: [N_EMBD, N_TOKENS] */
    cur = TRY(ggml_permute(ctx, kqv, 0, 2, 1, 3));
    cur = TRY(ggml_cont_2d(ctx, cur, N_EMBD, N_TOKENS));
    cur = TRY(ggml_mul_mat(ctx, w->wo, cur));
    struct ggml_tensor * h = TRY(ggml_add(ctx, x, cur));

    cur = TRY(ggml_rms_norm(ctx, h, NORM_EPS));
    cur = TRY(ggml_mul(ctx, cur, w->ffn_norm));
    struct ggml_tensor * gate = TRY(ggml_mul_mat(ctx, w->ffn_gate, cur));
    struct ggml_tensor * up   = TRY(ggml_mul_mat(ctx, w->ffn_up, cur));
    cur = TRY(ggml_swiglu_split(ctx, gate, up)); /* silu(gate) * up */
    cur = TRY(ggml_mul_mat(ctx, w->ffn_down, cur));
    return TRY(ggml_add(ctx, h, cur));
}

void demo_decoder(const struct demo_options * opt, struct demo_result * res) {
    /* F16 weights, activations rounded to F16 on a GPU (see demo_mlp): the scheduler's limit */
    demo_begin(res, "decoder", "decoder block (8 tokens)", 1e-3, true);
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 3);

    struct block w;
    struct ggml_tensor * x    = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, N_TOKENS, "x");
    struct ggml_tensor * pos  = demo_new(&dc, res, GGML_TYPE_I32, N_TOKENS, 1, "pos");
    struct ggml_tensor * mask = demo_new(&dc, res, GGML_TYPE_F32, N_TOKENS, N_TOKENS, "kq_mask");
    w.attn_norm = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, 1, "attn_norm");
    w.wq        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_q");
    w.wk        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_k");
    w.wv        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_v");
    w.wo        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_output");
    w.ffn_norm  = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, 1, "ffn_norm");
    w.ffn_gate  = demo_new(&dc, res, GGML_TYPE_BF16, N_EMBD, N_FF, "ffn_gate");
    w.ffn_up    = demo_new(&dc, res, GGML_TYPE_BF16, N_EMBD, N_FF, "ffn_up");
    w.ffn_down  = demo_new(&dc, res, GGML_TYPE_BF16, N_FF, N_EMBD, "ffn_down");
    if (res->status == DEMO_ERROR) {
        goto done;
    }

    demo_fill(&dc, x, &rng, -1.0f, 1.0f);
    int positions[N_TOKENS];
    for (int t = 0; t < N_TOKENS; t++) {
        positions[t] = t;
        ((int32_t *) ggml_get_data(demo_host(&dc, pos)))[t] = t;
        for (int j = 0; j < N_TOKENS; j++) { /* causal: query t sees keys 0..t */
            demo_set(demo_host(&dc, mask), (int64_t) t * N_TOKENS + j, j <= t ? 0.0f : -INFINITY);
        }
    }
    demo_fill(&dc, w.attn_norm, &rng, 0.8f, 1.2f);
    demo_fill(&dc, w.wq, &rng, -0.25f, 0.25f); /* larger than 1/sqrt(fan-in): sharper attention */
    demo_fill(&dc, w.wk, &rng, -0.25f, 0.25f);
    demo_fill(&dc, w.wv, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.wo, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_norm, &rng, 0.8f, 1.2f);
    demo_fill(&dc, w.ffn_gate, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_up, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_down, &rng, -0.09f, 0.09f);

    struct ggml_tensor * out = block_forward(dc.graph, res, &w, x, pos, mask);
    struct ggml_cgraph * gf  = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, out);

    const struct ref_block ref = {
        N_EMBD, N_HEAD, N_FF, N_TOKENS, NORM_EPS, ROPE_BASE, positions,
        demo_values(&dc, res, w.attn_norm),
        demo_values(&dc, res, w.wq), demo_values(&dc, res, w.wk),
        demo_values(&dc, res, w.wv), demo_values(&dc, res, w.wo),
        demo_values(&dc, res, w.ffn_norm),
        demo_values(&dc, res, w.ffn_gate), demo_values(&dc, res, w.ffn_up),
        demo_values(&dc, res, w.ffn_down),
    };
    const double * xs   = demo_values(&dc, res, x);
    double *       want = TRY(ggml_new_buffer(dc.host, N_EMBD * N_TOKENS * sizeof(double)));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    if (!ref_block_forward(&ref, xs, want)) {
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "out of memory for the reference");
        goto done;
    }
    demo_run(opt, res, &dc, gf, out, want);
done:
    demo_free(&dc);
}
