/*
 * demo-ref.c -- the math of ggml-demo's models, written out plainly in double precision.
 *
 * Nothing here uses ggml: these loops are the independent reference the demo's graphs are
 * checked against. Arrays are row-major in ggml's order: a [ne0, ne1] tensor is ne1 rows of ne0
 * values, so a weight W of shape [n_in, n_out] has W[o * n_in + i], and a batch of tokens x of
 * shape [n_in, n_tok] has x[t * n_in + i].
 */
#include "demo-ref.h"

#include <math.h>
#include <stdlib.h>

/* y = W x for each of n_tok columns of x (ggml_mul_mat(W, x)) */
static void ref_linear(const double * w, const double * x, double * y, int n_in, int n_out, int n_tok) {
    for (int t = 0; t < n_tok; t++) {
        for (int o = 0; o < n_out; o++) {
            double acc = 0.0;
            for (int i = 0; i < n_in; i++) {
                acc += w[o * n_in + i] * x[t * n_in + i];
            }
            y[t * n_out + o] = acc;
        }
    }
}

/* x[t][i] += b[i] */
static void ref_add_bias(double * x, const double * b, int n, int n_tok) {
    for (int t = 0; t < n_tok; t++) {
        for (int i = 0; i < n; i++) {
            x[t * n + i] += b[i];
        }
    }
}

/* y = x / rms(x) * g, row by row */
static void ref_rms_norm(const double * x, const double * g, double * y, int n, int n_tok, double eps) {
    for (int t = 0; t < n_tok; t++) {
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            ss += x[t * n + i] * x[t * n + i];
        }
        const double inv = 1.0 / sqrt(ss / n + eps);
        for (int i = 0; i < n; i++) {
            y[t * n + i] = x[t * n + i] * inv * g[i];
        }
    }
}

/* the tanh approximation of GELU, as ggml_gelu defines it */
static double ref_gelu(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535588;
    return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

static double ref_silu(double x) {
    return x / (1.0 + exp(-x));
}

/* in place, over n values; -INFINITY entries get probability 0 */
static void ref_softmax(double * x, int n) {
    double max = -INFINITY, sum = 0.0;
    for (int i = 0; i < n; i++) {
        max = x[i] > max ? x[i] : max;
    }
    for (int i = 0; i < n; i++) {
        x[i] = exp(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) {
        x[i] /= sum;
    }
}

/*
 * NEOX-style rotary embedding, in place on x [head_dim, n_head, n_tok]: value i of a head pairs
 * with value i + head_dim/2 and the pair turns by pos[t] * base^(-2i / head_dim).
 */
static void ref_rope_neox(double * x, const int * pos, int head_dim, int n_head, int n_tok, double base) {
    const int half = head_dim / 2;
    for (int t = 0; t < n_tok; t++) {
        for (int h = 0; h < n_head; h++) {
            double * v = x + ((size_t) t * n_head + h) * head_dim;
            for (int i = 0; i < half; i++) {
                const double theta = pos[t] * pow(base, -2.0 * i / head_dim);
                const double a = v[i], b = v[i + half];
                v[i]        = a * cos(theta) - b * sin(theta);
                v[i + half] = a * sin(theta) + b * cos(theta);
            }
        }
    }
}

#define REF_MAX_TOKENS 256

/*
 * Causal multi-head attention: q, k, v and out are [head_dim, n_head, n_tok] (heads side by side
 * in each token's row); token t attends to tokens 0..t with weights softmax(q.k / sqrt(head_dim)).
 */
static void ref_causal_attention(const double * q, const double * k, const double * v, double * out,
                                 int head_dim, int n_head, int n_tok) {
    const int row = head_dim * n_head;
    double w[REF_MAX_TOKENS];
    if (n_tok > REF_MAX_TOKENS) {
        for (int i = 0; i < row * n_tok; i++) {
            out[i] = NAN; /* fails the comparison instead of leaving garbage */
        }
        return;
    }
    for (int h = 0; h < n_head; h++) {
        for (int tq = 0; tq < n_tok; tq++) {
            for (int tk = 0; tk < n_tok; tk++) {
                double dot = 0.0;
                for (int d = 0; d < head_dim; d++) {
                    dot += q[tq * row + h * head_dim + d] * k[tk * row + h * head_dim + d];
                }
                w[tk] = tk <= tq ? dot / sqrt((double) head_dim) : -INFINITY;
            }
            ref_softmax(w, n_tok);
            for (int d = 0; d < head_dim; d++) {
                double acc = 0.0;
                for (int tk = 0; tk < n_tok; tk++) {
                    acc += w[tk] * v[tk * row + h * head_dim + d];
                }
                out[tq * row + h * head_dim + d] = acc;
            }
        }
    }
}

/* ---- the demo's two models, composed from the pieces above ---------------------------------- */

bool ref_mlp_forward(const struct ref_mlp * m, const double * x, double * probs) {
    double * h = malloc(sizeof(double) * m->n_hidden * m->n_batch);
    if (h == NULL) {
        return false;
    }
    ref_linear(m->w1, x, h, m->n_in, m->n_hidden, m->n_batch);
    ref_add_bias(h, m->b1, m->n_hidden, m->n_batch);
    for (int i = 0; i < m->n_hidden * m->n_batch; i++) {
        h[i] = ref_gelu(h[i]);
    }
    ref_linear(m->w2, h, probs, m->n_hidden, m->n_out, m->n_batch);
    ref_add_bias(probs, m->b2, m->n_out, m->n_batch);
    for (int t = 0; t < m->n_batch; t++) {
        ref_softmax(probs + t * m->n_out, m->n_out);
    }
    free(h);
    return true;
}

bool ref_block_forward(const struct ref_block * b, const double * x, double * out) {
    const int ne = b->n_embd * b->n_tok, nf = b->n_ff * b->n_tok;
    const int head_dim = b->n_embd / b->n_head;
    double * buf = malloc(sizeof(double) * (6 * (size_t) ne + 2 * (size_t) nf));
    if (buf == NULL) {
        return false;
    }
    double * n = buf, * q = n + ne, * k = q + ne, * v = k + ne, * att = v + ne, * h = att + ne;
    double * gate = h + ne, * up = gate + nf;

    ref_rms_norm(x, b->attn_norm, n, b->n_embd, b->n_tok, b->norm_eps);
    ref_linear(b->wq, n, q, b->n_embd, b->n_embd, b->n_tok);
    ref_linear(b->wk, n, k, b->n_embd, b->n_embd, b->n_tok);
    ref_linear(b->wv, n, v, b->n_embd, b->n_embd, b->n_tok);
    ref_rope_neox(q, b->pos, head_dim, b->n_head, b->n_tok, b->rope_base);
    ref_rope_neox(k, b->pos, head_dim, b->n_head, b->n_tok, b->rope_base);
    ref_causal_attention(q, k, v, att, head_dim, b->n_head, b->n_tok);
    ref_linear(b->wo, att, h, b->n_embd, b->n_embd, b->n_tok);
    for (int i = 0; i < ne; i++) {
        h[i] += x[i];
    }

    ref_rms_norm(h, b->ffn_norm, n, b->n_embd, b->n_tok, b->norm_eps);
    ref_linear(b->w_gate, n, gate, b->n_embd, b->n_ff, b->n_tok);
    ref_linear(b->w_up, n, up, b->n_embd, b->n_ff, b->n_tok);
    for (int i = 0; i < nf; i++) {
        gate[i] = ref_silu(gate[i]) * up[i];
    }
    ref_linear(b->w_down, gate, out, b->n_ff, b->n_embd, b->n_tok);
    for (int i = 0; i < ne; i++) {
        out[i] += h[i];
    }
    free(buf);
    return true;
}
