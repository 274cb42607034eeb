/*
 * sched-model.h -- a small llama-like decoder for exercising the backend scheduler: weights
 * placed layer by layer on chosen buffer types, deterministic values, and a CPU-only reference
 * run of the same model. Header-only (static inline functions), no Criterion: tests and
 * benchmarks both include it.
 *
 * API:
 *   struct sm_config cfg = sm_config_default();     // then change fields (n_layer, seed, ...)
 *   struct sm_model m;
 *   sm_model_init(&m, &cfg);                        // weight tensors, no memory yet
 *   sm_model_alloc(&m, io_buft, layer_bufts);       // one WEIGHTS buffer per layer (+ one for
 *                                                   // tok_embd, one for out_norm/output), values
 *                                                   // filled; layer_bufts NULL: every layer on io_buft
 *   sm_model_alloc_staged(&m, in_buft, out_buft, layer_bufts);  // the same, with out_norm/output
 *                                                   // on out_buft (a pipeline's last stage)
 *   sm_spread_layers(bufts, backends, n, n_layer);  // layer i on backends[i * n / n_layer]
 *   struct sm_graph g;
 *   sm_graph_build(&g, &m, n_tokens);               // g.inp/pos/mask flagged INPUT, g.out OUTPUT
 *   ... ggml_backend_sched_alloc_graph(sched, g.gf);
 *   sm_graph_set_inputs(&g, &cfg, input_seed);      // ggml_backend_tensor_set: any device
 *   ... compute; ggml_backend_tensor_get(g.out, ...) gives sm_out_count(&cfg, n_tokens) floats
 *   sm_reference(&cfg, n_tokens, input_seed, want, NULL);  // same model, CPU backend + gallocr
 *   sm_graph_free(&g); sm_model_free(&m);
 *
 * Every weight's values depend only on (cfg.seed, layer, tensor), and the inputs only on
 * (cfg.seed, input_seed, n_tokens), so a model allocated anywhere computes the same thing.
 * sm_reference can also keep every node's values (struct sm_ref_nodes) in graph order: the
 * graph sm_graph_build makes for the same cfg and n_tokens has the same nodes in the same order.
 * Nodes are named "l<layer>.<what>" (e.g. "l0.q", "l2.ffn_out") and "out".
 */
#ifndef GGMLX_SCHED_MODEL_H
#define GGMLX_SCHED_MODEL_H

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM_MAX_LAYERS 72
#define SM_LAYER_TENSORS 9

struct sm_config {
    int            n_vocab;    /* token ids in [0, n_vocab); also the logits per token */
    int            n_embd;
    int            n_head;     /* n_embd % n_head == 0, head size even (RoPE) */
    int            n_ff;
    int            n_layer;    /* 1..SM_MAX_LAYERS */
    int            n_tokens;   /* the default and largest batch sm_graph_build is asked for */
    bool           embd_input; /* input F32 [n_embd, n_tokens] instead of I32 ids + get_rows */
    enum ggml_type wtype;      /* matrices' type: F32 or F16 (norms stay F32) */
    float          norm_eps;
    float          rope_base;
    uint64_t       seed;
};

static inline struct sm_config sm_config_default(void) {
    struct sm_config c = {
        .n_vocab = 64, .n_embd = 32, .n_head = 4, .n_ff = 64, .n_layer = 4, .n_tokens = 8,
        .embd_input = false, .wtype = GGML_TYPE_F32, .norm_eps = 1e-5f, .rope_base = 10000.0f,
        .seed = 42,
    };
    return c;
}

struct sm_layer {
    struct ggml_tensor * attn_norm, * wq, * wk, * wv, * wo;
    struct ggml_tensor * ffn_norm, * ffn_gate, * ffn_up, * ffn_down;
};

struct sm_model {
    struct sm_config      cfg;
    struct ggml_context * ctx_io;                 /* tok_embd */
    ggml_backend_buffer_t buf_io;
    struct ggml_context * ctx_out;                /* out_norm, output */
    ggml_backend_buffer_t buf_out;
    struct ggml_tensor  * tok_embd, * out_norm, * output;
    struct ggml_context * ctx_layer[SM_MAX_LAYERS];
    ggml_backend_buffer_t buf_layer[SM_MAX_LAYERS];
    struct sm_layer       layer[SM_MAX_LAYERS];
};

struct sm_graph {
    struct ggml_context * ctx;
    struct ggml_cgraph  * gf;
    int                   n_tokens;
    struct ggml_tensor  * inp;  /* I32 [n_tokens] ids, or F32 [n_embd, n_tokens] with embd_input */
    struct ggml_tensor  * pos;  /* I32 [n_tokens]: 0..n_tokens-1 */
    struct ggml_tensor  * mask; /* F32 [n_tokens, n_tokens]: 0 where a query sees a key, -INF not */
    struct ggml_tensor  * out;  /* F32 [n_vocab, n_tokens] logits */
};

/* ---- deterministic values ------------------------------------------------------------------ */

struct sm_rng { uint64_t s; };

static inline struct sm_rng sm_rng_new(uint64_t seed, uint64_t a, uint64_t b) {
    struct sm_rng r = { seed * 0x9e3779b97f4a7c15ull ^ (a + 1) * 0xbf58476d1ce4e5b9ull ^ (b + 7) * 0x94d049bb133111ebull };
    return r;
}

static inline uint64_t sm_next(struct sm_rng * r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline float sm_uniform(struct sm_rng * r, float lo, float hi) {
    return lo + (hi - lo) * (float) ((sm_next(r) >> 40) * (1.0 / 16777216.0));
}

/* Fill t (allocated anywhere) through ggml_backend_tensor_set: values in [center-amp, center+amp). */
static inline bool sm_fill(struct ggml_tensor * t, uint64_t seed, uint64_t a, uint64_t b, float center, float amp) {
    const int64_t n = ggml_nelements(t);
    float * v = (float *) malloc(sizeof(float) * (size_t) n);
    if (v == NULL) {
        return false;
    }
    struct sm_rng r = sm_rng_new(seed, a, b);
    for (int64_t i = 0; i < n; i++) {
        v[i] = center + sm_uniform(&r, -amp, amp);
    }
    bool ok = true;
    if (t->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t));
    } else if (t->type == GGML_TYPE_F16) {
        ggml_fp16_t * h = (ggml_fp16_t *) malloc(sizeof(ggml_fp16_t) * (size_t) n);
        ok = h != NULL;
        if (ok) {
            ggml_fp32_to_fp16_row(v, h, n);
            ggml_backend_tensor_set(t, h, 0, ggml_nbytes(t));
            free(h);
        }
    } else {
        ok = false;
    }
    free(v);
    return ok;
}

/* ---- the model ----------------------------------------------------------------------------- */

static inline struct ggml_context * sm_ctx_new(size_t n_tensors, size_t graph_size) {
    struct ggml_init_params p = {
        n_tensors * ggml_tensor_overhead() + (graph_size ? ggml_graph_overhead_custom(graph_size, false) : 0), NULL, true
    };
    return ggml_init(p);
}

static inline struct ggml_tensor * sm_weight(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                             const char * name) {
    struct ggml_tensor * t = ne1 > 0 ? ggml_new_tensor_2d(ctx, type, ne0, ne1) : ggml_new_tensor_1d(ctx, type, ne0);
    if (t != NULL) {
        ggml_set_name(t, name);
    }
    return t;
}

static inline void sm_model_free(struct sm_model * m) {
    for (int il = 0; il < SM_MAX_LAYERS; il++) {
        if (m->buf_layer[il]) {
            ggml_backend_buffer_free(m->buf_layer[il]);
        }
        if (m->ctx_layer[il]) {
            ggml_free(m->ctx_layer[il]);
        }
    }
    if (m->buf_io) {
        ggml_backend_buffer_free(m->buf_io);
    }
    if (m->ctx_io) {
        ggml_free(m->ctx_io);
    }
    if (m->buf_out) {
        ggml_backend_buffer_free(m->buf_out);
    }
    if (m->ctx_out) {
        ggml_free(m->ctx_out);
    }
    memset(m, 0, sizeof *m);
}

/* The weight tensors, without memory. false on a bad config or out of memory. */
static inline bool sm_model_init(struct sm_model * m, const struct sm_config * cfg) {
    memset(m, 0, sizeof *m);
    if (cfg->n_layer < 1 || cfg->n_layer > SM_MAX_LAYERS || cfg->n_head < 1 || cfg->n_embd % cfg->n_head != 0 ||
        (cfg->n_embd / cfg->n_head) % 2 != 0 || cfg->n_vocab < 1 || cfg->n_ff < 1 || cfg->n_tokens < 1) {
        return false;
    }
    m->cfg = *cfg;
    const enum ggml_type wt = cfg->wtype;
    m->ctx_io  = sm_ctx_new(1, 0);
    m->ctx_out = sm_ctx_new(2, 0);
    if (m->ctx_io == NULL || m->ctx_out == NULL) {
        sm_model_free(m);
        return false;
    }
    m->tok_embd = sm_weight(m->ctx_io, wt, cfg->n_embd, cfg->n_vocab, "tok_embd");
    m->out_norm = sm_weight(m->ctx_out, GGML_TYPE_F32, cfg->n_embd, 0, "out_norm");
    m->output   = sm_weight(m->ctx_out, wt, cfg->n_embd, cfg->n_vocab, "output");
    bool ok = m->tok_embd && m->out_norm && m->output;
    for (int il = 0; ok && il < cfg->n_layer; il++) {
        struct ggml_context * c = m->ctx_layer[il] = sm_ctx_new(SM_LAYER_TENSORS, 0);
        if (c == NULL) {
            ok = false;
            break;
        }
        struct sm_layer * L = &m->layer[il];
        char nm[GGML_MAX_NAME];
#define SM_W(field, type, ne0, ne1)                                                            \
        snprintf(nm, sizeof nm, "l%d." #field, il);                                           \
        L->field = sm_weight(c, type, ne0, ne1, nm);                                          \
        ok = ok && L->field != NULL;
        SM_W(attn_norm, GGML_TYPE_F32, cfg->n_embd, 0)
        SM_W(wq, wt, cfg->n_embd, cfg->n_embd)
        SM_W(wk, wt, cfg->n_embd, cfg->n_embd)
        SM_W(wv, wt, cfg->n_embd, cfg->n_embd)
        SM_W(wo, wt, cfg->n_embd, cfg->n_embd)
        SM_W(ffn_norm, GGML_TYPE_F32, cfg->n_embd, 0)
        SM_W(ffn_gate, wt, cfg->n_embd, cfg->n_ff)
        SM_W(ffn_up, wt, cfg->n_embd, cfg->n_ff)
        SM_W(ffn_down, wt, cfg->n_ff, cfg->n_embd)
#undef SM_W
    }
    if (!ok) {
        sm_model_free(m);
    }
    return ok;
}

/* bufts[i] = the default buffer type of the backend layer i goes to (layers spread evenly) */
static inline void sm_spread_layers(ggml_backend_buffer_type_t * bufts, ggml_backend_t * backends, int n_backends,
                                    int n_layer) {
    for (int il = 0; il < n_layer; il++) {
        bufts[il] = ggml_backend_get_default_buffer_type(backends[(size_t) il * n_backends / n_layer]);
    }
}

static inline ggml_backend_buffer_t sm_alloc_weights(struct ggml_context * ctx, ggml_backend_buffer_type_t buft) {
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    if (buf != NULL) {
        /* WEIGHTS pins the ops reading these tensors to the buffer's backend in the scheduler */
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    return buf;
}

/*
 * Give every weight memory and its values: tok_embd on in_buft, out_norm/output on out_buft,
 * layer il on layer_bufts[il] (in_buft when layer_bufts is NULL). false when a buffer cannot be
 * allocated. With the output on the last layer's device, each batch passes through the devices
 * once (in_buft's, then the layers' in order), so one device takes batch k + 1 while the next
 * still has batch k; an output back on an earlier device would queue batch k + 1 behind it.
 */
static inline bool sm_model_alloc_staged(struct sm_model * m, ggml_backend_buffer_type_t in_buft,
                                         ggml_backend_buffer_type_t out_buft,
                                         const ggml_backend_buffer_type_t * layer_bufts) {
    const struct sm_config * c = &m->cfg;
    m->buf_io  = sm_alloc_weights(m->ctx_io, in_buft);
    m->buf_out = m->buf_io != NULL ? sm_alloc_weights(m->ctx_out, out_buft) : NULL;
    if (m->buf_out == NULL) {
        return false;
    }
    bool ok = sm_fill(m->tok_embd, c->seed, 1000, 0, 0.0f, 1.0f) && sm_fill(m->out_norm, c->seed, 1000, 1, 1.0f, 0.2f) &&
              sm_fill(m->output, c->seed, 1000, 2, 0.0f, 1.0f / sqrtf((float) c->n_embd));
    for (int il = 0; ok && il < c->n_layer; il++) {
        m->buf_layer[il] = sm_alloc_weights(m->ctx_layer[il], layer_bufts ? layer_bufts[il] : in_buft);
        if (m->buf_layer[il] == NULL) {
            return false;
        }
        struct sm_layer * L = &m->layer[il];
        struct ggml_tensor * ws[SM_LAYER_TENSORS] = { L->attn_norm, L->wq, L->wk, L->wv, L->wo,
                                                      L->ffn_norm, L->ffn_gate, L->ffn_up, L->ffn_down };
        for (int j = 0; ok && j < SM_LAYER_TENSORS; j++) {
            const bool norm = ws[j] == L->attn_norm || ws[j] == L->ffn_norm;
            ok = sm_fill(ws[j], c->seed, (uint64_t) il, (uint64_t) j, norm ? 1.0f : 0.0f,
                         norm ? 0.2f : 1.0f / sqrtf((float) ws[j]->ne[0]));
        }
    }
    return ok;
}

/* every weight on io_buft but the layers given in layer_bufts (see sm_model_alloc_staged) */
static inline bool sm_model_alloc(struct sm_model * m, ggml_backend_buffer_type_t io_buft,
                                  const ggml_backend_buffer_type_t * layer_bufts) {
    return sm_model_alloc_staged(m, io_buft, io_buft, layer_bufts);
}

/* ---- the graph ----------------------------------------------------------------------------- */

static inline struct ggml_tensor * sm_named(struct ggml_tensor * t, int il, const char * what) {
    if (t != NULL) {
        if (il >= 0) {
            ggml_format_name(t, "l%d.%s", il, what);
        } else {
            ggml_set_name(t, what);
        }
    }
    return t;
}

/* nodes per graph are well under this (about 35 per layer) */
static inline size_t sm_graph_size(const struct sm_config * c) {
    return 64 + 48 * (size_t) c->n_layer;
}

static inline void sm_graph_free(struct sm_graph * g) {
    if (g->ctx) {
        ggml_free(g->ctx);
    }
    memset(g, 0, sizeof *g);
}

/* The forward graph over n_tokens (1..cfg.n_tokens) tokens, in a new no_alloc context. */
static inline bool sm_graph_build(struct sm_graph * g, const struct sm_model * m, int n_tokens) {
    const struct sm_config * c = &m->cfg;
    memset(g, 0, sizeof *g);
    if (n_tokens < 1 || n_tokens > c->n_tokens) {
        return false;
    }
    const size_t gsize = sm_graph_size(c);
    g->ctx = sm_ctx_new(gsize + 8, gsize);
    if (g->ctx == NULL) {
        return false;
    }
    struct ggml_context * ctx = g->ctx;
    const int hd = c->n_embd / c->n_head, T = n_tokens;
    g->n_tokens = T;

    g->inp = c->embd_input ? ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c->n_embd, T) : ggml_new_tensor_1d(ctx, GGML_TYPE_I32, T);
    g->pos  = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, T);
    g->mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, T);
    ggml_set_name(g->inp, "inp");
    ggml_set_name(g->pos, "pos");
    ggml_set_name(g->mask, "mask");
    ggml_set_input(g->inp);
    ggml_set_input(g->pos);
    ggml_set_input(g->mask);

    struct ggml_tensor * x = c->embd_input ? g->inp : sm_named(ggml_get_rows(ctx, m->tok_embd, g->inp), -1, "embd");
    for (int il = 0; il < c->n_layer; il++) {
        const struct sm_layer * L = &m->layer[il];
        struct ggml_tensor * cur = ggml_mul(ctx, ggml_rms_norm(ctx, x, c->norm_eps), L->attn_norm);
        sm_named(cur, il, "attn_in");
        struct ggml_tensor * q = sm_named(ggml_mul_mat(ctx, L->wq, cur), il, "q");
        struct ggml_tensor * k = sm_named(ggml_mul_mat(ctx, L->wk, cur), il, "k");
        struct ggml_tensor * v = sm_named(ggml_mul_mat(ctx, L->wv, cur), il, "v");
        q = ggml_reshape_3d(ctx, q, hd, c->n_head, T);
        k = ggml_reshape_3d(ctx, k, hd, c->n_head, T);
        v = ggml_reshape_3d(ctx, v, hd, c->n_head, T);
        q = sm_named(ggml_rope_ext(ctx, q, g->pos, NULL, hd, GGML_ROPE_TYPE_NEOX, 0, c->rope_base, 1.0f, 0.0f, 1.0f,
                                   32.0f, 1.0f), il, "q_rope");
        k = sm_named(ggml_rope_ext(ctx, k, g->pos, NULL, hd, GGML_ROPE_TYPE_NEOX, 0, c->rope_base, 1.0f, 0.0f, 1.0f,
                                   32.0f, 1.0f), il, "k_rope");
        /* heads as the batch dimension: [hd, T, n_head] views */
        q = ggml_permute(ctx, q, 0, 2, 1, 3);
        k = ggml_permute(ctx, k, 0, 2, 1, 3);
        struct ggml_tensor * kq = sm_named(ggml_mul_mat(ctx, k, q), il, "kq"); /* [T keys, T queries, n_head] */
        kq = sm_named(ggml_soft_max_ext(ctx, kq, g->mask, 1.0f / sqrtf((float) hd), 0.0f), il, "kq_soft");
        struct ggml_tensor * vt = sm_named(ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3)), il, "vt"); /* [T, hd, n_head] */
        struct ggml_tensor * kqv = sm_named(ggml_mul_mat(ctx, vt, kq), il, "kqv");               /* [hd, T, n_head] */
        cur = ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), c->n_embd, T);
        cur = sm_named(ggml_mul_mat(ctx, L->wo, cur), il, "attn_out");
        struct ggml_tensor * h = sm_named(ggml_add(ctx, x, cur), il, "attn_res");

        cur = sm_named(ggml_mul(ctx, ggml_rms_norm(ctx, h, c->norm_eps), L->ffn_norm), il, "ffn_in");
        struct ggml_tensor * gate = sm_named(ggml_mul_mat(ctx, L->ffn_gate, cur), il, "gate");
        struct ggml_tensor * up   = sm_named(ggml_mul_mat(ctx, L->ffn_up, cur), il, "up");
        cur = sm_named(ggml_swiglu_split(ctx, gate, up), il, "swiglu");
        cur = sm_named(ggml_mul_mat(ctx, L->ffn_down, cur), il, "ffn_out");
        x = sm_named(ggml_add(ctx, h, cur), il, "out");
        if (x == NULL) {
            sm_graph_free(g);
            return false;
        }
    }
    x = ggml_mul(ctx, ggml_rms_norm(ctx, x, c->norm_eps), m->out_norm);
    g->out = sm_named(ggml_mul_mat(ctx, m->output, x), -1, "out");
    if (g->out == NULL) {
        sm_graph_free(g);
        return false;
    }
    ggml_set_output(g->out);
    g->gf = ggml_new_graph_custom(ctx, gsize, false);
    if (g->gf == NULL) {
        sm_graph_free(g);
        return false;
    }
    ggml_build_forward_expand(g->gf, g->out);
    return true;
}

static inline size_t sm_out_count(const struct sm_config * c, int n_tokens) {
    return (size_t) c->n_vocab * (size_t) n_tokens;
}

/*
 * Write the inputs of an allocated graph (host or device memory alike). false when out of
 * memory. The values depend on (cfg->seed, input_seed, n_tokens) only.
 */
static inline bool sm_graph_set_inputs(const struct sm_graph * g, const struct sm_config * c, uint64_t input_seed) {
    const int T = g->n_tokens;
    int32_t * ids = (int32_t *) malloc(sizeof(int32_t) * (size_t) T);
    float * mask = (float *) malloc(sizeof(float) * (size_t) T * (size_t) T);
    bool ok = ids != NULL && mask != NULL;
    if (ok) {
        for (int t = 0; t < T; t++) {
            ids[t] = t;
        }
        ggml_backend_tensor_set(g->pos, ids, 0, ggml_nbytes(g->pos));
        for (int q = 0; q < T; q++) {
            for (int k = 0; k < T; k++) {
                mask[q * T + k] = k <= q ? 0.0f : -INFINITY;
            }
        }
        ggml_backend_tensor_set(g->mask, mask, 0, ggml_nbytes(g->mask));
        if (c->embd_input) {
            ok = sm_fill(g->inp, c->seed ^ 0x5eedull, input_seed, (uint64_t) T, 0.0f, 1.0f);
        } else {
            struct sm_rng r = sm_rng_new(c->seed ^ 0x5eedull, input_seed, (uint64_t) T);
            for (int t = 0; t < T; t++) {
                ids[t] = (int32_t) (sm_next(&r) % (uint64_t) c->n_vocab);
            }
            ggml_backend_tensor_set(g->inp, ids, 0, ggml_nbytes(g->inp));
        }
    }
    free(ids);
    free(mask);
    return ok;
}

/* ---- the CPU-only reference ---------------------------------------------------------------- */

/* every node's values of a reference run, in graph order (values[i]: ggml_nelements floats) */
struct sm_ref_nodes {
    int      n_nodes;
    char  (* names)[GGML_MAX_NAME];
    float ** values;
};

static inline void sm_ref_nodes_free(struct sm_ref_nodes * r) {
    for (int i = 0; r->values && i < r->n_nodes; i++) {
        free(r->values[i]);
    }
    free(r->values);
    free(r->names);
    memset(r, 0, sizeof *r);
}

/* index of the node named name in r, -1 none */
static inline int sm_ref_find(const struct sm_ref_nodes * r, const char * name) {
    for (int i = 0; i < r->n_nodes; i++) {
        if (strcmp(r->names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

/* Read a tensor's values (any memory) as F32; NULL when out of memory or not F32/F16. */
static inline float * sm_read(const struct ggml_tensor * t) {
    const int64_t n = ggml_nelements(t);
    float * v = (float *) malloc(sizeof(float) * (size_t) (n > 0 ? n : 1));
    if (v == NULL || !ggml_is_contiguous(t) || (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16)) {
        free(v);
        return NULL;
    }
    if (t->type == GGML_TYPE_F32) {
        ggml_backend_tensor_get(t, v, 0, ggml_nbytes(t));
    } else {
        ggml_fp16_t * h = (ggml_fp16_t *) malloc(ggml_nbytes(t));
        if (h == NULL) {
            free(v);
            return NULL;
        }
        ggml_backend_tensor_get(t, h, 0, ggml_nbytes(t));
        ggml_fp16_to_fp32_row(h, v, n);
        free(h);
    }
    return v;
}

/*
 * The same model and inputs on one CPU backend with a graph allocator: out gets the logits
 * (sm_out_count floats). nodes, when not NULL, gets every contiguous F32/F16 node's values
 * (others NULL); every node is then flagged output so the allocator keeps it. false on failure.
 */
static inline bool sm_reference(const struct sm_config * c, int n_tokens, uint64_t input_seed, float * out,
                                struct sm_ref_nodes * nodes) {
    struct sm_model m;
    struct sm_graph g;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_gallocr_t ga = NULL;
    bool ok = cpu != NULL && sm_model_init(&m, c);
    if (!ok) {
        if (cpu) {
            ggml_backend_free(cpu);
        }
        return false;
    }
    memset(&g, 0, sizeof g);
    ok = sm_model_alloc(&m, ggml_backend_cpu_buffer_type(), NULL) && sm_graph_build(&g, &m, n_tokens);
    if (ok && nodes != NULL) {
        for (int i = 0; i < ggml_graph_n_nodes(g.gf); i++) {
            ggml_set_output(ggml_graph_node(g.gf, i));
        }
    }
    if (ok) {
        ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        ok = ga != NULL && ggml_gallocr_alloc_graph(ga, g.gf) && sm_graph_set_inputs(&g, c, input_seed) &&
             ggml_backend_graph_compute(cpu, g.gf) == GGML_STATUS_SUCCESS;
    }
    if (ok && out != NULL) {
        ggml_backend_tensor_get(g.out, out, 0, ggml_nbytes(g.out));
    }
    if (ok && nodes != NULL) {
        memset(nodes, 0, sizeof *nodes);
        const int n = ggml_graph_n_nodes(g.gf);
        nodes->names = calloc((size_t) n, sizeof *nodes->names);
        nodes->values = (float **) calloc((size_t) n, sizeof(float *));
        ok = nodes->names != NULL && nodes->values != NULL;
        nodes->n_nodes = ok ? n : 0;
        for (int i = 0; ok && i < n; i++) {
            struct ggml_tensor * t = ggml_graph_node(g.gf, i);
            snprintf(nodes->names[i], GGML_MAX_NAME, "%s", ggml_get_name(t));
            nodes->values[i] = sm_read(t);
        }
        if (!ok) {
            sm_ref_nodes_free(nodes);
        }
    }
    if (ga) {
        ggml_gallocr_free(ga);
    }
    sm_graph_free(&g);
    sm_model_free(&m);
    ggml_backend_free(cpu);
    return ok;
}

/* largest |got - want| / (1 + |want|) over n values (NaN when either has a NaN) */
static inline double sm_max_rel_err(const float * got, const float * want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double) got[i] - (double) want[i]) / (1.0 + fabs((double) want[i]));
        if (isnan(e)) {
            return NAN;
        }
        worst = e > worst ? e : worst;
    }
    return worst;
}

#endif /* GGMLX_SCHED_MODEL_H */
