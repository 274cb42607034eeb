/*
 * meta-model.h -- a small decoder laid out for tensor parallelism (Megatron style), shared by
 * the meta device's tests and benchmark: attention heads and FFN columns split across devices,
 * the output projections split along their summed axis (each device a partial sum, reduced
 * before the residual add), norms mirrored. mm_split() is the get_split_state callback.
 */
#ifndef GGMLX_META_MODEL_H
#define GGMLX_META_MODEL_H

#include "ggml-backend.h"
#include "ggml.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MM_MAX_LAYERS 8

struct mm_shape {
    int64_t d_model, n_head, d_ff, n_vocab, n_tokens;
    int     n_layers;
};

struct mm_layer {
    struct ggml_tensor * attn_norm, * wq, * wk, * wv, * wo, * ffn_norm, * wg, * wu, * wd;
};

struct mm_weights {
    struct mm_shape      s;
    struct mm_layer      l[MM_MAX_LAYERS];
    struct ggml_tensor * out_norm, * w_out;
};

/* how the callback splits: per device, heads and FFN columns (filled by mm_plan_even) */
struct mm_plan {
    struct mm_shape s;
    size_t          n_devs;
    int64_t         heads[16];
    int64_t         ff[16];
    int64_t         vocab[16];
};

static inline void mm_share(int64_t total, size_t n, int64_t quantum, int64_t out[]) {
    const int64_t units = total / quantum;
    for (size_t d = 0; d < n; d++) {
        out[d] = (int64_t) (units / (int64_t) n + ((int64_t) d < units % (int64_t) n ? 1 : 0)) * quantum;
    }
}

static inline void mm_plan_even(struct mm_plan * p, const struct mm_shape * s, size_t n_devs) {
    memset(p, 0, sizeof *p);
    p->s      = *s;
    p->n_devs = n_devs;
    mm_share(s->n_head, n_devs, 1, p->heads);
    mm_share(s->d_ff, n_devs, 1, p->ff);
    mm_share(s->n_vocab, n_devs, 1, p->vocab);
}

static inline int mm_name_is(const struct ggml_tensor * t, const char * prefix) {
    return strncmp(t->name, prefix, strlen(prefix)) == 0;
}

/* the get_split_state callback; userdata is a struct mm_plan */
static inline struct ggml_backend_meta_split_state mm_split(const struct ggml_tensor * t, void * userdata) {
    const struct mm_plan * p = userdata;
    struct ggml_backend_meta_split_state st;
    memset(&st, 0, sizeof st);
    st.n_segments = 1;
    st.axis       = GGML_BACKEND_SPLIT_AXIS_MIRRORED;
    const int64_t hd = p->s.d_model / p->s.n_head;
    if (mm_name_is(t, "wq") || mm_name_is(t, "wk") || mm_name_is(t, "wv")) {
        st.axis = GGML_BACKEND_SPLIT_AXIS_1; /* rows = output features, head by head */
        for (size_t d = 0; d < p->n_devs; d++) {
            st.ne[d] = p->heads[d] * hd;
        }
    } else if (mm_name_is(t, "wo")) {
        st.axis = GGML_BACKEND_SPLIT_AXIS_0; /* the summed axis: partial sums */
        for (size_t d = 0; d < p->n_devs; d++) {
            st.ne[d] = p->heads[d] * hd;
        }
    } else if (mm_name_is(t, "wg") || mm_name_is(t, "wu")) {
        st.axis = GGML_BACKEND_SPLIT_AXIS_1;
        memcpy(st.ne, p->ff, p->n_devs * sizeof p->ff[0]);
    } else if (mm_name_is(t, "wd")) {
        st.axis = GGML_BACKEND_SPLIT_AXIS_0;
        memcpy(st.ne, p->ff, p->n_devs * sizeof p->ff[0]);
    } else if (mm_name_is(t, "w_out")) {
        st.axis = GGML_BACKEND_SPLIT_AXIS_1;
        memcpy(st.ne, p->vocab, p->n_devs * sizeof p->vocab[0]);
    }
    return st;
}

/* weight tensors in ctx (no_alloc), named for mm_split */
static inline void mm_weights_new(struct ggml_context * ctx, const struct mm_shape * s, struct mm_weights * w) {
    memset(w, 0, sizeof *w);
    w->s = *s;
    for (int i = 0; i < s->n_layers; i++) {
        struct mm_layer * l = &w->l[i];
        l->attn_norm = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s->d_model);
        l->wq        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_model);
        l->wk        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_model);
        l->wv        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_model);
        l->wo        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_model);
        l->ffn_norm  = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s->d_model);
        l->wg        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_ff);
        l->wu        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->d_ff);
        l->wd        = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_ff, s->d_model);
        ggml_format_name(l->attn_norm, "attn_norm.%d", i);
        ggml_format_name(l->wq, "wq.%d", i);
        ggml_format_name(l->wk, "wk.%d", i);
        ggml_format_name(l->wv, "wv.%d", i);
        ggml_format_name(l->wo, "wo.%d", i);
        ggml_format_name(l->ffn_norm, "ffn_norm.%d", i);
        ggml_format_name(l->wg, "wg.%d", i);
        ggml_format_name(l->wu, "wu.%d", i);
        ggml_format_name(l->wd, "wd.%d", i);
    }
    w->out_norm = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, s->d_model);
    w->w_out    = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, s->n_vocab);
    ggml_set_name(w->out_norm, "out_norm");
    ggml_set_name(w->w_out, "w_out");
}

/* deterministic values for every weight, by name, scaled so activations stay near 1 */
static inline void mm_weights_fill(const struct mm_weights * w, void (*set)(struct ggml_tensor *, const float *)) {
    struct ggml_tensor * all[MM_MAX_LAYERS * 9 + 2];
    int n = 0;
    for (int i = 0; i < w->s.n_layers; i++) {
        const struct mm_layer * l = &w->l[i];
        struct ggml_tensor * ts[9] = { l->attn_norm, l->wq, l->wk, l->wv, l->wo, l->ffn_norm, l->wg, l->wu, l->wd };
        for (int k = 0; k < 9; k++) {
            all[n++] = ts[k];
        }
    }
    all[n++] = w->out_norm;
    all[n++] = w->w_out;
    for (int k = 0; k < n; k++) {
        struct ggml_tensor * t = all[k];
        const int64_t ne = ggml_nelements(t);
        float * v = malloc((size_t) ne * sizeof *v);
        uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t) (k + 1);
        const float scale = t->ne[1] > 1 ? 1.0f / sqrtf((float) t->ne[0]) : 0.2f;
        for (int64_t i = 0; i < ne; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const float r = (float) ((x >> 40) * (1.0 / 16777216.0)) - 0.5f;
            v[i] = t->ne[1] > 1 ? 2.0f * r * scale : 1.0f + r * scale;
        }
        set(t, v);
        free(v);
    }
}

struct mm_inputs {
    struct ggml_tensor * x, * pos, * mask;
};

/* logits [n_vocab, n_tokens] of the decoder on inputs (x [d_model, T], positions, causal mask) */
static inline struct ggml_tensor * mm_forward(struct ggml_context * ctx, const struct mm_weights * w,
                                              struct mm_inputs * in) {
    const struct mm_shape * s = &w->s;
    const int64_t hd = s->d_model / s->n_head, T = s->n_tokens;
    in->x    = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s->d_model, T);
    in->pos  = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, T);
    in->mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, T);
    ggml_set_name(in->x, "x");
    ggml_set_name(in->pos, "pos");
    ggml_set_name(in->mask, "mask");
    ggml_set_input(in->x);
    ggml_set_input(in->pos);
    ggml_set_input(in->mask);
    struct ggml_tensor * x = in->x;
    const float kq_scale = 1.0f / sqrtf((float) hd);
    for (int i = 0; i < s->n_layers; i++) {
        const struct mm_layer * l = &w->l[i];
        struct ggml_tensor * h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), l->attn_norm);
        struct ggml_tensor * q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l->wq, h), hd, s->n_head, T);
        struct ggml_tensor * k = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l->wk, h), hd, s->n_head, T);
        struct ggml_tensor * v = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, l->wv, h), hd, s->n_head, T);
        q = ggml_rope_ext(ctx, q, in->pos, NULL, (int) hd, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
        k = ggml_rope_ext(ctx, k, in->pos, NULL, (int) hd, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
        q = ggml_permute(ctx, q, 0, 2, 1, 3);                         /* [hd, T, heads] */
        k = ggml_permute(ctx, k, 0, 2, 1, 3);
        struct ggml_tensor * vt = ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3)); /* [T, hd, heads] */
        struct ggml_tensor * kq = ggml_mul_mat(ctx, k, q);            /* [T, T, heads] */
        kq = ggml_soft_max_ext(ctx, kq, in->mask, kq_scale, 0.0f);
        struct ggml_tensor * kqv = ggml_mul_mat(ctx, vt, kq);         /* [hd, T, heads] */
        struct ggml_tensor * merged = ggml_cont(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3)); /* [hd, heads, T] */
        merged = ggml_reshape_2d(ctx, merged, s->d_model, T);
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, l->wo, merged));
        h = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), l->ffn_norm);
        struct ggml_tensor * a = ggml_swiglu_split(ctx, ggml_mul_mat(ctx, l->wg, h), ggml_mul_mat(ctx, l->wu, h));
        x = ggml_add(ctx, x, ggml_mul_mat(ctx, l->wd, a));
    }
    x = ggml_mul(ctx, ggml_rms_norm(ctx, x, 1e-5f), w->out_norm);
    struct ggml_tensor * logits = ggml_mul_mat(ctx, w->w_out, x);
    ggml_set_name(logits, "logits");
    ggml_set_output(logits);
    return logits;
}

/* host values of the inputs: x, positions 0.., and a causal mask */
static inline void mm_inputs_fill(const struct mm_shape * s, float * x, int32_t * pos, float * mask) {
    uint64_t r = 12345;
    for (int64_t i = 0; i < s->d_model * s->n_tokens; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float) ((r >> 40) * (1.0 / 16777216.0)) - 0.5f;
    }
    for (int64_t t = 0; t < s->n_tokens; t++) {
        pos[t] = (int32_t) t;
        for (int64_t j = 0; j < s->n_tokens; j++) {
            mask[t * s->n_tokens + j] = j <= t ? 0.0f : -INFINITY;
        }
    }
}

#endif /* GGMLX_META_MODEL_H */
