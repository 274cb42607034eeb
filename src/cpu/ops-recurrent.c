/*
 * ops-recurrent.c -- SSM_CONV, SSM_SCAN, RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7 and
 * GATED_DELTA_NET on F32.
 *
 * Every scan is sequential in time but independent per (sequence, head), so threads take whole
 * heads (and sequences): each owns its heads' outputs and states and needs no barrier. Each
 * kernel first copies its heads' incoming state into dst's state area and then updates that copy
 * in place, token by token, so the state dst ends with is exactly the one the next call takes.
 * The row loops are vectorized per instruction set (ops-recurrent-rows.h), picked at run time;
 * GGMLX_RECURRENT_KERNEL=portable|avx2|avx512 forces one (an ISA the CPU lacks falls back to the
 * best it has) so that tests check every path.
 */
#include "cpu-ops.h"
#include "ops-recurrent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the row loops, once for the baseline ISA and, on x86, for AVX2 and AVX-512 (picked at run time) */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#define RR(name) name##_base
#define RR_ATTR
#define RR_ISA 0
#include "ops-recurrent-rows.h"
#undef RR
#undef RR_ATTR
#undef RR_ISA

#if defined(__x86_64__) && defined(__GNUC__)
#define RR(name) name##_avx2
#define RR_ATTR __attribute__((target("avx2,fma")))
#define RR_ISA 1
#include "ops-recurrent-rows.h"
#undef RR
#undef RR_ATTR
#undef RR_ISA
#define RR(name) name##_avx512
#define RR_ATTR __attribute__((target("avx512f,avx512vl,avx2,fma")))
#define RR_ISA 2
#include "ops-recurrent-rows.h"
#undef RR
#undef RR_ATTR
#undef RR_ISA
#define RR_TABLE(suf) { dot##suf, gdn_decay_dot##suf, gdn_update_dot##suf, wkv6_row##suf, gla_row##suf, wkv7_row##suf, \
                        ssm2_row##suf }

const struct ggmlx_rr_rows * ggmlx_cpu_rr_rows(void) {
    static const struct ggmlx_rr_rows base = RR_TABLE(_base), avx2 = RR_TABLE(_avx2), avx512 = RR_TABLE(_avx512);
    const char * want = getenv("GGMLX_RECURRENT_KERNEL");
    if ((want != NULL && strcmp(want, "portable") == 0) || !__builtin_cpu_supports("avx2") ||
        !__builtin_cpu_supports("fma")) {
        return &base;
    }
    const bool force_avx2 = want != NULL && strcmp(want, "avx2") == 0;
    return !force_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") ? &avx512 : &avx2;
}
#else
const struct ggmlx_rr_rows * ggmlx_cpu_rr_rows(void) {
    static const struct ggmlx_rr_rows base = { dot_base, gdn_decay_dot_base, gdn_update_dot_base, wkv6_row_base,
                                               gla_row_base, wkv7_row_base, ssm2_row_base };
    return &base;
}
#endif

static inline float softplus(float x) {
    /* large arguments: log(1 + e^x) == x in float, and e^x would overflow */
    return x > 20.0f ? x : logf(1.0f + expf(x));
}

#define F32_AT(t, off) ((float *) ((char *) (t)->data + (off)))

/* ---- SSM_CONV ------------------------------------------------------------------------------ */

/* dst[c, t, s] = sum_k sx[t + k, c, s] * w[k, c]: a causal depthwise conv over each channel's window */
void ggmlx_cpu_ssm_conv(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * sx = dst->src[0];
    const struct ggml_tensor * w  = dst->src[1];
    const int64_t nc = w->ne[0];
    int64_t c0, c1;
    ggmlx_cpu_split_rows(params, dst->ne[0], &c0, &c1);
    for (int64_t s = 0; s < dst->ne[2]; s++) {
        for (int64_t t = 0; t < dst->ne[1]; t++) {
            float * out = F32_AT(dst, t * dst->nb[1] + s * dst->nb[2]);
            for (int64_t c = c0; c < c1; c++) {
                const float * win = F32_AT(sx, t * sizeof(float) + c * sx->nb[1] + s * sx->nb[2]);
                const float * wc  = F32_AT(w, c * w->nb[1]);
                float sum = 0.0f;
                for (int64_t k = 0; k < nc; k++) {
                    sum += win[k] * wc[k];
                }
                out[c] = sum;
            }
        }
    }
}

/* ---- SSM_SCAN ------------------------------------------------------------------------------ */

/*
 * Mamba's selective scan, per head h (group g = h / (n_head / n_group)), channel d, state n:
 *   dt' = softplus(dt[h]),  s[n, d] = s[n, d] * exp(dt' * A[n or 0, h]) + B[n, g] * x[d, h] * dt',
 *   y[d, h] = sum_n s[n, d] * C[n, g].
 * dst: y [head_dim, n_head, n_tok, n_seqs], then K state slots of [d_state, head_dim, n_head, n_seqs]:
 * slot 0 the final state, slot k the state k tokens before the end (only slots < n_tok are written).
 */
void ggmlx_cpu_ssm_scan(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src_s = dst->src[0];
    const struct ggml_tensor * src_x = dst->src[1];
    const struct ggml_tensor * src_dt = dst->src[2];
    const struct ggml_tensor * src_A = dst->src[3];
    const struct ggml_tensor * src_B = dst->src[4];
    const struct ggml_tensor * src_C = dst->src[5];
    const int32_t * ids = (const int32_t *) dst->src[6]->data;

    const int64_t nc = src_s->ne[0];
    const int64_t nr = src_x->ne[0];
    const int64_t nh = src_x->ne[1];
    const int64_t nt = src_x->ne[2];
    const int64_t ns = src_x->ne[3];
    const int64_t ng = src_B->ne[1];
    const int64_t K  = ggmlx_get_op_params_i32(dst, 0);
    const bool scalar_a = src_A->ne[0] == 1;
    const size_t y_bytes  = (size_t) ggml_nelements(src_x) * sizeof(float);
    const size_t seq_state = src_s->nb[3];
    const size_t head_state = src_s->nb[2];

    for (int64_t i = 0; i < ns; i++) { /* every thread checks all, so none writes before failing */
        if (ids[i] < 0 || ids[i] >= src_s->ne[3]) {
            ggmlx_cpu_fail(params, "ssm_scan: ids[%lld] = %d is not a state row (s has %lld)", (long long) i,
                           (int) ids[i], (long long) src_s->ne[3]);
            return;
        }
    }
    int64_t h0, h1;
    ggmlx_cpu_split_rows(params, nh, &h0, &h1);
    const float * A = (const float *) src_A->data;
    const struct ggmlx_rr_rows * rows = ggmlx_cpu_rr_rows();

    for (int64_t q = 0; q < ns; q++) {
        float * st = F32_AT(dst, y_bytes + q * seq_state);
        memcpy((char *) st + h0 * head_state, (const char *) src_s->data + ids[q] * seq_state + h0 * head_state,
               (size_t) (h1 - h0) * head_state);
        for (int64_t t = 0; t < nt; t++) {
            const float * x  = F32_AT(src_x, t * src_x->nb[2] + q * src_x->nb[3]);
            const float * dt = F32_AT(src_dt, t * src_dt->nb[1] + q * src_dt->nb[2]);
            const float * B  = F32_AT(src_B, t * src_B->nb[2] + q * src_B->nb[3]);
            const float * C  = F32_AT(src_C, t * src_C->nb[2] + q * src_C->nb[3]);
            float * y = F32_AT(dst, ((q * nt + t) * nh * nr) * sizeof(float));
            for (int64_t h = h0; h < h1; h++) {
                const float dtp = softplus(dt[h]);
                const float dA  = scalar_a ? expf(dtp * A[h]) : 0.0f;
                const float * Bg = B + (h / (nh / ng)) * nc;
                const float * Cg = C + (h / (nh / ng)) * nc;
                const float * Ah = A + h * nc;
                for (int64_t d = 0; d < nr; d++) {
                    const int64_t ii = d + h * nr;
                    const float xdt = x[ii] * dtp;
                    float * srow = st + ii * nc;
                    float sum = 0.0f;
                    if (scalar_a) {
                        sum = rows->ssm2_row(nc, srow, Bg, Cg, dA, xdt);
                    } else {
                        for (int64_t n = 0; n < nc; n++) {
                            const float v = srow[n] * expf(dtp * Ah[n]) + Bg[n] * xdt;
                            sum += v * Cg[n];
                            srow[n] = v;
                        }
                    }
                    y[ii] = sum;
                }
            }
            const int64_t slot = nt - 1 - t;
            if (slot > 0 && slot < K) {
                char * snap = (char *) dst->data + y_bytes + (slot * ns + q) * seq_state;
                memcpy(snap + h0 * head_state, (const char *) st + h0 * head_state, (size_t) (h1 - h0) * head_state);
            }
        }
    }
}

/* ---- RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7 ------------------------------------------------- */

/*
 * Shared layout: inputs [S, H, T] (T = every sequence's tokens, n_seqs equal consecutive shares),
 * state and dst's state area [S (j), S (i), H, n_seqs]; dst's first T rows the outputs [S*H, T].
 * A thread owns (sequence, head) pairs.
 */
struct rwkv_geom {
    int64_t S, H, T, n_seqs, L; /* L: tokens per sequence */
};

static struct rwkv_geom rwkv_geom_of(const struct ggml_tensor * dst, const struct ggml_tensor * state) {
    struct rwkv_geom g;
    g.S      = dst->src[0]->ne[0];
    g.H      = dst->src[0]->ne[1];
    g.T      = dst->src[0]->ne[2];
    g.n_seqs = state->ne[1];
    g.L      = g.T / g.n_seqs;
    return g;
}

/* this pair's state in dst (filled from the incoming state) */
static float * rwkv_state_init(const struct rwkv_geom * g, struct ggml_tensor * dst, const struct ggml_tensor * state,
                               int64_t seq, int64_t h) {
    const size_t off = (size_t) ((seq * g->H + h) * g->S * g->S);
    float * st = (float *) dst->data + g->S * g->H * g->T + off;
    memcpy(st, (const float *) state->data + off, (size_t) (g->S * g->S) * sizeof(float));
    return st;
}

/*
 * wkv6 (k, v, r, u = tf, w = td): out[j] = sum_i r[i] * (u[i] k[i] v[j] + s[i][j]);
 * s[i][j] = s[i][j] w[i] + k[i] v[j].  GLA (k, v, q, g, scale): s[i][j] = s[i][j] g[i] + k[i] v[j];
 * out[j] = sum_i (q[i] scale) s[i][j].
 */
static void rwkv6_or_gla(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool gla) {
    const struct ggml_tensor * state = dst->src[gla ? 4 : 5];
    const struct rwkv_geom g = rwkv_geom_of(dst, state);
    const float * k  = (const float *) dst->src[0]->data;
    const float * v  = (const float *) dst->src[1]->data;
    const float * rq = (const float *) dst->src[2]->data;
    const float * u  = gla ? NULL : (const float *) dst->src[3]->data;
    const float * w  = (const float *) dst->src[gla ? 3 : 4]->data;
    const float scale = gla ? ggmlx_get_op_params_f32(dst, 0) : 1.0f;
    const int64_t S = g.S, C = g.S * g.H;
    const struct ggmlx_rr_rows * rows = ggmlx_cpu_rr_rows();
    int64_t p0, p1;
    ggmlx_cpu_split_rows(params, g.n_seqs * g.H, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) {
        const int64_t seq = p / g.H, h = p % g.H;
        float * st = rwkv_state_init(&g, dst, state, seq, h);
        for (int64_t t = seq * g.L; t < (seq + 1) * g.L; t++) {
            const int64_t base = t * C + h * S;
            float * out = (float *) dst->data + base;
            memset(out, 0, (size_t) S * sizeof(float));
            for (int64_t i = 0; i < S; i++) {
                const float ki = k[base + i], ri = rq[base + i] * scale, wi = w[base + i];
                if (gla) {
                    rows->gla_row(S, out, st + i * S, v + base, ki, ri, wi);
                } else {
                    rows->wkv6_row(S, out, st + i * S, v + base, ki, ri, u[h * S + i], wi);
                }
            }
        }
    }
}

void ggmlx_cpu_rwkv_wkv6(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    rwkv6_or_gla(params, dst, false);
}

void ggmlx_cpu_gated_linear_attn(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    rwkv6_or_gla(params, dst, true);
}

/*
 * wkv7 (r, w, k, v, a, b), state s[i][j] with i over v, j over k:
 *   sa = sum_j a[j] s[i][j];  s[i][j] = s[i][j] w[j] + v[i] k[j] + sa b[j];  out[i] = sum_j s[i][j] r[j].
 */
void ggmlx_cpu_rwkv_wkv7(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * state = dst->src[6];
    const struct rwkv_geom g = rwkv_geom_of(dst, state);
    const float * r = (const float *) dst->src[0]->data;
    const float * w = (const float *) dst->src[1]->data;
    const float * k = (const float *) dst->src[2]->data;
    const float * v = (const float *) dst->src[3]->data;
    const float * a = (const float *) dst->src[4]->data;
    const float * b = (const float *) dst->src[5]->data;
    const int64_t S = g.S, C = g.S * g.H;
    const struct ggmlx_rr_rows * rows = ggmlx_cpu_rr_rows();
    int64_t p0, p1;
    ggmlx_cpu_split_rows(params, g.n_seqs * g.H, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) {
        const int64_t seq = p / g.H, h = p % g.H;
        float * st = rwkv_state_init(&g, dst, state, seq, h);
        for (int64_t t = seq * g.L; t < (seq + 1) * g.L; t++) {
            const int64_t base = t * C + h * S;
            float * out = (float *) dst->data + base;
            for (int64_t i = 0; i < S; i++) {
                float * srow = st + i * S;
                const float sa = rows->dot(S, a + base, srow);
                out[i] = rows->wkv7_row(S, srow, w + base, k + base, v[base + i], sa, b + base, r + base);
            }
        }
    }
}

/* ---- GATED_DELTA_NET ----------------------------------------------------------------------- */

/* KDA's per-column decays, one vector per thread, a cache line apart */
#define GDN_PAD 16

size_t ggmlx_cpu_gated_delta_net_work_size(const struct ggml_tensor * dst, int n_tasks) {
    return (size_t) n_tasks * (size_t) (dst->src[2]->ne[0] + GDN_PAD) * sizeof(float);
}

/*
 * Per (sequence, head), state s[j][i] (row j over v, column i over k), per token:
 *   s *= exp(g) (scalar g, or column i by exp(g[i]) for KDA);
 *   d[j] = (v[j] - s[j] . k) * beta;  s[j] += d[j] k;  out[j] = (s[j] . q) / sqrt(S_v).
 * dst: out [S_v, H, n_tokens, n_seqs], then K slots [S_v, S_v, H, n_seqs] as ssm_scan's.
 */
void ggmlx_cpu_gated_delta_net(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * q  = dst->src[0];
    const struct ggml_tensor * k  = dst->src[1];
    const struct ggml_tensor * v  = dst->src[2];
    const struct ggml_tensor * gt = dst->src[3];
    const struct ggml_tensor * bt = dst->src[4];
    const struct ggml_tensor * s0 = dst->src[5];
    const int64_t S = v->ne[0], H = v->ne[1], T = v->ne[2], N = v->ne[3];
    const int64_t K = ggmlx_get_op_params_i32(dst, 0);
    const bool kda = gt->ne[0] == S;
    const float scale = 1.0f / sqrtf((float) S);
    const int64_t snap = S * S * H * N;
    float * states = (float *) dst->data + S * H * T * N;
    float * colw = (float *) params->wdata + (size_t) params->ith * (size_t) (S + GDN_PAD);
    const struct ggmlx_rr_rows * rows = ggmlx_cpu_rr_rows();

    int64_t p0, p1;
    ggmlx_cpu_split_rows(params, N * H, &p0, &p1);
    for (int64_t p = p0; p < p1; p++) {
        const int64_t seq = p / H, h = p % H;
        const int64_t hq = h % q->ne[1], sq = seq / (N / q->ne[3]);
        const int64_t hk = h % k->ne[1], sk = seq / (N / k->ne[3]);
        float * st = states + (seq * H + h) * S * S;
        memcpy(st, F32_AT(s0, seq * s0->nb[3] + h * s0->nb[2]), (size_t) (S * S) * sizeof(float));
        for (int64_t t = 0; t < T; t++) {
            const float * qd = F32_AT(q, hq * q->nb[1] + t * q->nb[2] + sq * q->nb[3]);
            const float * kd = F32_AT(k, hk * k->nb[1] + t * k->nb[2] + sk * k->nb[3]);
            const float * vd = F32_AT(v, h * v->nb[1] + t * v->nb[2] + seq * v->nb[3]);
            const float * gd = F32_AT(gt, h * gt->nb[1] + t * gt->nb[2] + seq * gt->nb[3]);
            const float beta = *F32_AT(bt, h * bt->nb[1] + t * bt->nb[2] + seq * bt->nb[3]);
            const float * decay = NULL;
            const float d0 = kda ? 0.0f : expf(gd[0]);
            if (kda) {
                for (int64_t i = 0; i < S; i++) {
                    colw[i] = expf(gd[i]);
                }
                decay = colw;
            }
            float * out = (float *) dst->data + ((seq * T + t) * H + h) * S;
            for (int64_t j = 0; j < S; j++) { /* out as scratch: decay must survive every row */
                out[j] = (vd[j] - rows->gdn_decay_dot(S, st + j * S, decay, d0, kd)) * beta; /* row j's correction */
            }
            for (int64_t j = 0; j < S; j++) {
                out[j] = rows->gdn_update_dot(S, st + j * S, kd, out[j], qd) * scale;
            }
            const int64_t slot = T - 1 - t;
            if (slot > 0 && slot < K) {
                memcpy(states + slot * snap + (seq * H + h) * S * S, st, (size_t) (S * S) * sizeof(float));
            }
        }
    }
}
