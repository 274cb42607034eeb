/*
 * ops-dsv4.c -- LIGHTNING_INDEXER (K in any type with a to_float) and the DeepSeek V4
 * hyper-connection ops DSV4_HC_COMB, DSV4_HC_PRE, DSV4_HC_POST, on F32.
 */
#include "cpu-ops.h"
#include "ops-recurrent.h"

#include "ggml-math.h"

#include <math.h>

#define F32_AT(t, off) ((float *) ((char *) (t)->data + (off)))

/* ---- LIGHTNING_INDEXER --------------------------------------------------------------------- */

#define LI_PAD 16 /* floats between the threads' converted K rows */

size_t ggmlx_cpu_lightning_indexer_work_size(const struct ggml_tensor * dst, int n_tasks) {
    const struct ggml_tensor * k = dst->src[1];
    return k->type == GGML_TYPE_F32 ? 0 : (size_t) n_tasks * (size_t) (k->ne[0] + LI_PAD) * sizeof(float);
}

/*
 * dst[j, t, 0, s] = sum_h max(q[:, h, t, s] . k[:, 0, j, s], 0) * w[h, t, 0, s] + mask[j, t, 0, s % ne33].
 * Threads take K rows j, each converted once and scored against every query.
 */
void ggmlx_cpu_lightning_indexer(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * q = dst->src[0];
    const struct ggml_tensor * k = dst->src[1];
    const struct ggml_tensor * w = dst->src[2];
    const struct ggml_tensor * m = dst->src[3];
    const int64_t n_embd = q->ne[0], n_head = q->ne[1], n_tok = q->ne[2], n_str = q->ne[3];
    const ggml_to_float_t to_float = k->type == GGML_TYPE_F32 ? NULL : ggml_get_type_traits(k->type)->to_float;
    float * buf = to_float ? (float *) params->wdata + (size_t) params->ith * (size_t) (n_embd + LI_PAD) : NULL;
    int64_t j0, j1;
    ggmlx_cpu_split_rows(params, k->ne[2], &j0, &j1);
    const struct ggmlx_rr_rows * rows = ggmlx_cpu_rr_rows();
    for (int64_t s = 0; s < n_str; s++) {
        for (int64_t j = j0; j < j1; j++) {
            const void * kraw = (const char *) k->data + j * k->nb[2] + s * k->nb[3];
            const float * kr = (const float *) kraw;
            if (to_float) {
                to_float(kraw, buf, n_embd);
                kr = buf;
            }
            for (int64_t t = 0; t < n_tok; t++) {
                const float * wr = F32_AT(w, t * w->nb[1] + s * w->nb[3]);
                float score = 0.0f;
                for (int64_t h = 0; h < n_head; h++) {
                    const float * qr = F32_AT(q, h * q->nb[1] + t * q->nb[2] + s * q->nb[3]);
                    const float dot = rows->dot(n_embd, qr, kr);
                    score += (dot > 0.0f ? dot : 0.0f) * wr[h];
                }
                const uint16_t mv = *(const uint16_t *) ((const char *) m->data + j * m->nb[0] + t * m->nb[1] +
                                                         (s % m->ne[3]) * m->nb[3]);
                *F32_AT(dst, j * dst->nb[0] + t * dst->nb[1] + s * dst->nb[3]) = score + ggmlx_fp16_to_fp32(mv);
            }
        }
    }
}

/* ---- DSV4_HC_COMB -------------------------------------------------------------------------- */

#define HC 4

/* m[dst + HC*src]: make every destination's column over sources sum to 1 (eps keeps it finite) */
static void hc_norm_over_src(float * m, float eps) {
    for (int d = 0; d < HC; d++) {
        float sum = eps;
        for (int s = 0; s < HC; s++) {
            sum += m[d + HC * s];
        }
        const float inv = 1.0f / sum;
        for (int s = 0; s < HC; s++) {
            m[d + HC * s] *= inv;
        }
    }
}

static void hc_norm_over_dst(float * m, float eps) {
    for (int s = 0; s < HC; s++) {
        float sum = eps;
        for (int d = 0; d < HC; d++) {
            sum += m[d + HC * s];
        }
        const float inv = 1.0f / sum;
        for (int d = 0; d < HC; d++) {
            m[d + HC * s] *= inv;
        }
    }
}

/*
 * Per token: logits[d, s] = mixes[2 HC + d + HC s] * scale[2] + base[2 HC + d + HC s]; softmax over
 * d (+ eps); normalize over s; then n_iter - 1 Sinkhorn rounds (over d, then over s).
 */
void ggmlx_cpu_dsv4_hc_comb(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * mixes = dst->src[0];
    const struct ggml_tensor * scale = dst->src[1];
    const struct ggml_tensor * base  = dst->src[2];
    const float eps   = ggmlx_get_op_params_f32(dst, 0);
    const int   iters = ggmlx_get_op_params_i32(dst, 1);
    const float sc    = *F32_AT(scale, 2 * scale->nb[0]);
    int64_t t0, t1;
    ggmlx_cpu_split_rows(params, mixes->ne[1], &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        float m[HC * HC];
        for (int s = 0; s < HC; s++) {
            float mx = -INFINITY;
            for (int d = 0; d < HC; d++) {
                const int64_t idx = 2 * HC + d + HC * s;
                const float v = *F32_AT(mixes, idx * mixes->nb[0] + t * mixes->nb[1]) * sc +
                                *F32_AT(base, idx * base->nb[0]);
                m[d + HC * s] = v;
                mx = v > mx ? v : mx;
            }
            float sum = 0.0f;
            for (int d = 0; d < HC; d++) {
                m[d + HC * s] = expf(m[d + HC * s] - mx);
                sum += m[d + HC * s];
            }
            const float inv = 1.0f / sum;
            for (int d = 0; d < HC; d++) {
                m[d + HC * s] = m[d + HC * s] * inv + eps;
            }
        }
        hc_norm_over_src(m, eps);
        for (int it = 1; it < iters; it++) {
            hc_norm_over_dst(m, eps);
            hc_norm_over_src(m, eps);
        }
        for (int s = 0; s < HC; s++) {
            for (int d = 0; d < HC; d++) {
                *F32_AT(dst, d * dst->nb[0] + s * dst->nb[1] + t * dst->nb[2]) = m[d + HC * s];
            }
        }
    }
}

/* ---- DSV4_HC_PRE, DSV4_HC_POST ------------------------------------------------------------- */

/* dst[i, t] = sum_h x[i, h, t] * w[h, t]; threads take spans of the flattened (i, t) */
void ggmlx_cpu_dsv4_hc_pre(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * x = dst->src[0];
    const struct ggml_tensor * w = dst->src[1];
    const int64_t n = x->ne[0], hc = x->ne[1];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, n * x->ne[2], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n, t = r / n;
        float sum = 0.0f;
        for (int64_t h = 0; h < hc; h++) {
            sum += *F32_AT(x, i * x->nb[0] + h * x->nb[1] + t * x->nb[2]) * *F32_AT(w, h * w->nb[0] + t * w->nb[1]);
        }
        *F32_AT(dst, i * dst->nb[0] + t * dst->nb[1]) = sum;
    }
}

/* dst[i, d, t] = x[i, t] * post[d, t] + sum_s residual[i, s, t] * comb[d, s, t] */
void ggmlx_cpu_dsv4_hc_post(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * x    = dst->src[0];
    const struct ggml_tensor * res  = dst->src[1];
    const struct ggml_tensor * post = dst->src[2];
    const struct ggml_tensor * comb = dst->src[3];
    const int64_t n = x->ne[0], hc = res->ne[1];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, n * hc * x->ne[1], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i = r % n, d = (r / n) % hc, t = r / (n * hc);
        float sum = *F32_AT(x, i * x->nb[0] + t * x->nb[1]) * *F32_AT(post, d * post->nb[0] + t * post->nb[1]);
        for (int64_t s = 0; s < hc; s++) {
            sum += *F32_AT(res, i * res->nb[0] + s * res->nb[1] + t * res->nb[2]) *
                   *F32_AT(comb, d * comb->nb[0] + s * comb->nb[1] + t * comb->nb[2]);
        }
        *F32_AT(dst, i * dst->nb[0] + d * dst->nb[1] + t * dst->nb[2]) = sum;
    }
}
