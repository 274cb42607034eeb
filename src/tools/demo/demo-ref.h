/*
 * demo-ref.h -- the double-precision references of the demo's MLP and decoder block checks
 * (demo-ref.c), written without ggml. Arrays are row-major in ggml's order: a [ne0, ne1]
 * tensor is ne1 rows of ne0 values.
 */
#ifndef GGMLX_DEMO_REF_H
#define GGMLX_DEMO_REF_H

#include <stdbool.h>

/* softmax(w2 gelu(w1 x + b1) + b2) for each of the n_batch columns of x */
struct ref_mlp {
    int n_in, n_hidden, n_out, n_batch;
    const double * w1, * b1; /* [n_in, n_hidden], [n_hidden] */
    const double * w2, * b2; /* [n_hidden, n_out], [n_out] */
};

/*
 * One llama-style decoder block over n_tok tokens:
 *     h   = x + wo attention(rope(wq n1), rope(wk n1), wv n1)     n1 = rms_norm(x) * attn_norm
 *     out = h + w_down (silu(w_gate n2) * (w_up n2))              n2 = rms_norm(h) * ffn_norm
 */
struct ref_block {
    int n_embd, n_head, n_ff, n_tok;
    double norm_eps, rope_base;
    const int * pos;                          /* [n_tok] */
    const double * attn_norm;                 /* [n_embd] */
    const double * wq, * wk, * wv, * wo;      /* [n_embd, n_embd] */
    const double * ffn_norm;                  /* [n_embd] */
    const double * w_gate, * w_up;            /* [n_embd, n_ff] */
    const double * w_down;                    /* [n_ff, n_embd] */
};

/* the class probabilities [n_out, n_batch] of x; false when out of memory */
bool ref_mlp_forward(const struct ref_mlp * m, const double * x, double * probs);

/* the block's output [n_embd, n_tok] for x; false when out of memory */
bool ref_block_forward(const struct ref_block * b, const double * x, double * out);

#endif /* GGMLX_DEMO_REF_H */
