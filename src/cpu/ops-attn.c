/*
 * ops-attn.c -- FLASH_ATTN_EXT on the CPU: each output row is softmax(logits) V computed in one
 * pass over the cached tokens with a running maximum (online softmax), so memory does not grow
 * with n_q * n_kv.
 *
 * Work is cut into units of (query row, KV head, run of up to FA_HEADS query heads that share
 * that KV head): a unit reads each K and V row once and uses it for all of its heads, which for
 * grouped-query attention divides the K/V traffic by the group size. Tokens are taken in blocks
 * of FA_BLOCK: all logits of a block first, then one rescale of the accumulators per head, then
 * the V rows, each converted to F32 once and added into every head's accumulator.
 *
 * K rows meet q in F32 for F32, F16 and BF16 keys (q is not rounded); quantized keys meet q
 * quantized to the key type's vec_dot_type, through the type's CPU vec_dot. Accumulation is F32
 * whatever the precision hint. A row whose every logit is -INF (fully masked, no sinks) gives
 * zeros, as our soft_max does, rather than NaNs.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "ggml-math.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define FA_HEADS 8  /* query heads per unit (sharing one K/V read) */
#define FA_BLOCK 32 /* tokens per block of logits */
#define FA_ALIGN 64

static size_t fa_align(size_t x) { return (x + FA_ALIGN - 1) & ~(size_t) (FA_ALIGN - 1); }

static bool fa_float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

const char * ggmlx_cpu_flash_attn_refusal(const struct ggml_tensor * dst) {
    const struct ggml_tensor * k = dst->src[1];
    const struct ggml_tensor * v = dst->src[2];
    if (!fa_float_type(k->type)) {
        const struct ggml_type_traits_cpu * tr = ggml_get_type_traits_cpu(k->type);
        if (tr == NULL || tr->vec_dot == NULL) {
            return "the key type has no CPU dot product kernel";
        }
        const struct ggml_type_traits_cpu * tv = ggml_get_type_traits_cpu(tr->vec_dot_type);
        if (tv == NULL || tv->from_float == NULL) {
            return "the key type's query type has no CPU quantizer";
        }
        if (k->ne[0] % ggml_blck_size(tr->vec_dot_type) != 0 || k->ne[0] % ggml_blck_size(k->type) != 0) {
            return "the key head size must be whole blocks of the key type";
        }
    }
    if (!fa_float_type(v->type)) {
        const struct ggml_type_traits * tr = ggml_get_type_traits(v->type);
        if (tr == NULL || tr->to_float == NULL) {
            return "the value type has no dequantizer";
        }
        if (v->ne[0] % ggml_blck_size(v->type) != 0) {
            return "the value head size must be whole blocks of the value type";
        }
    }
    if (k->nb[0] != ggml_type_size(k->type) || v->nb[0] != ggml_type_size(v->type)) {
        return "the elements (blocks) of each K and V row must be contiguous";
    }
    if (dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float)) {
        return "the result must be F32 with contiguous rows";
    }
    return NULL;
}

/* ---- row kernels --------------------------------------------------------------------------- */

static float fa_load(const void * row, enum ggml_type t, int64_t i) {
    switch (t) {
    case GGML_TYPE_F16:  return ggmlx_fp16_to_fp32(((const uint16_t *) row)[i]);
    case GGML_TYPE_BF16: return ggmlx_bf16_to_fp32(((const uint16_t *) row)[i]);
    default:             return ((const float *) row)[i];
    }
}

static float fa_dot_portable(int64_t n, const void * k, enum ggml_type t, const float * q) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        s += fa_load(k, t, i) * q[i];
    }
    return s;
}

/* acc[i] += p * v[i] for n floats of v (already F32) */
static void fa_axpy_portable(int64_t n, float * restrict acc, float p, const float * restrict v) {
    for (int64_t i = 0; i < n; i++) {
        acc[i] += p * v[i];
    }
}

static void fa_to_f32_portable(int64_t n, const void * row, enum ggml_type t, float * out) {
    for (int64_t i = 0; i < n; i++) {
        out[i] = fa_load(row, t, i);
    }
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static inline __m512 fa_load16(const void * row, enum ggml_type t, int64_t i) {
    switch (t) {
    case GGML_TYPE_F16:
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) ((const uint16_t *) row + i)));
    case GGML_TYPE_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) ((const uint16_t *) row + i))), 16));
    default:
        return _mm512_loadu_ps((const float *) row + i);
    }
}

__attribute__((target("avx512f"))) static float fa_dot_avx512(int64_t n, const void * k, enum ggml_type t,
                                                                 const float * q) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(fa_load16(k, t, i), _mm512_loadu_ps(q + i), s0);
        s1 = _mm512_fmadd_ps(fa_load16(k, t, i + 16), _mm512_loadu_ps(q + i + 16), s1);
    }
    for (; i + 16 <= n; i += 16) {
        s0 = _mm512_fmadd_ps(fa_load16(k, t, i), _mm512_loadu_ps(q + i), s0);
    }
    float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < n; i++) {
        s += fa_load(k, t, i) * q[i];
    }
    return s;
}

__attribute__((target("avx512f"))) static void fa_axpy_avx512(int64_t n, float * restrict acc, float p,
                                                                 const float * restrict v) {
    const __m512 vp = _mm512_set1_ps(p);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(vp, _mm512_loadu_ps(v + i), _mm512_loadu_ps(acc + i)));
    }
    for (; i < n; i++) {
        acc[i] += p * v[i];
    }
}

__attribute__((target("avx512f"))) static void fa_to_f32_avx512(int64_t n, const void * row, enum ggml_type t,
                                                                   float * out) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(out + i, fa_load16(row, t, i));
    }
    for (; i < n; i++) {
        out[i] = fa_load(row, t, i);
    }
}
#endif

/* dot of n elements of an F32, F16 or BF16 row with F32 y (also used by MUL_MAT_ID's float experts) */
float ggmlx_cpu_dot_float_row(int64_t n, const void * row, enum ggml_type t, const float * y) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) {
        return fa_dot_avx512(n, row, t, y);
    }
#endif
    return fa_dot_portable(n, row, t, y);
}

/* ---- the plan ------------------------------------------------------------------------------ */

struct fa_plan {
    int64_t DK, DV, n_q, n_kv, n_head, n_head_kv, ne3, group;
    int64_t heads;      /* query heads per unit */
    int64_t head_runs;  /* units per (query row, KV head) */
    int64_t units;
    size_t  q_row;      /* bytes of one converted query */
    size_t  per_thread; /* bytes of scratch per thread */
    bool    k_float, v_float, avx512;
    const struct ggml_type_traits_cpu * ktr;
    ggml_to_float_t                     v_to_float;
};

static void fa_make_plan(const struct ggml_tensor * dst, int nth, struct fa_plan * p) {
    const struct ggml_tensor * q = dst->src[0];
    const struct ggml_tensor * k = dst->src[1];
    const struct ggml_tensor * v = dst->src[2];
    memset(p, 0, sizeof *p);
    p->DK        = q->ne[0];
    p->DV        = v->ne[0];
    p->n_q       = q->ne[1];
    p->n_head    = q->ne[2];
    p->ne3       = q->ne[3];
    p->n_kv      = k->ne[1];
    p->n_head_kv = k->ne[2];
    p->group     = p->n_head_kv > 0 ? p->n_head / p->n_head_kv : 1;
    p->k_float   = fa_float_type(k->type);
    p->v_float   = fa_float_type(v->type);
    p->ktr       = ggml_get_type_traits_cpu(k->type);
    p->v_to_float = p->v_float ? NULL : ggml_get_type_traits(v->type)->to_float;
#if defined(__x86_64__)
    p->avx512 = __builtin_cpu_supports("avx512f");
#endif
    if (nth < 1) {
        nth = 1;
    }
    /* whole groups per unit unless that leaves threads idle; then thinner runs of heads */
    int64_t heads = p->group < FA_HEADS ? p->group : FA_HEADS;
    const int64_t base = p->n_q * p->n_head_kv * p->ne3;
    while (heads > 1 && base * ((p->group + heads - 1) / heads) < nth) {
        heads = (heads + 1) / 2;
    }
    p->heads     = heads < 1 ? 1 : heads;
    p->head_runs = (p->group + p->heads - 1) / p->heads;
    p->units     = base * p->head_runs;

    p->q_row = p->k_float ? (size_t) p->DK * sizeof(float)
                          : (size_t) (p->DK / ggml_blck_size(p->ktr->vec_dot_type)) *
                                ggml_type_size(p->ktr->vec_dot_type);
    p->per_thread = fa_align(p->q_row) * FA_HEADS                  /* queries (converted) */
                  + fa_align((size_t) p->DK * sizeof(float))        /* one query in F32 */
                  + fa_align((size_t) p->DV * sizeof(float)) * FA_HEADS /* accumulators */
                  + fa_align((size_t) p->DV * sizeof(float))        /* one V row in F32 */
                  + fa_align((size_t) FA_BLOCK * FA_HEADS * sizeof(float));  /* logits of a block */
}

size_t ggmlx_cpu_flash_attn_work_size(const struct ggml_tensor * dst, int n_tasks) {
    struct fa_plan p;
    fa_make_plan(dst, n_tasks, &p);
    return (size_t) (n_tasks < 1 ? 1 : n_tasks) * p.per_thread + FA_ALIGN;
}

/* ---- one unit ------------------------------------------------------------------------------ */

struct fa_scratch {
    char  * qc;   /* FA_HEADS converted queries, fa_align(q_row) apart */
    float * qf;   /* one query in F32 */
    float * acc;  /* FA_HEADS accumulators, DVa floats apart */
    float * vf;   /* one V row in F32 */
    float * s;    /* logits: [token in block][head] */
    size_t  qstride, DVa;
};

static void fa_unit(const struct fa_plan * p, const struct ggml_tensor * dst, const struct fa_scratch * w,
                    int64_t iq1, int64_t ik2, int64_t h0, int64_t nh, int64_t iq3) {
    const struct ggml_tensor * q     = dst->src[0];
    const struct ggml_tensor * k     = dst->src[1];
    const struct ggml_tensor * v     = dst->src[2];
    const struct ggml_tensor * mask  = dst->src[3];
    const struct ggml_tensor * sinks = dst->src[4];
    float       scale    = ggmlx_get_op_params_f32(dst, 0);
    const float max_bias = ggmlx_get_op_params_f32(dst, 1);
    const float softcap  = ggmlx_get_op_params_f32(dst, 2);
    if (softcap != 0.0f) {
        scale /= softcap;
    }

    float        slope[FA_HEADS], M[FA_HEADS], S[FA_HEADS];
    const char * mrow[FA_HEADS];
    for (int64_t j = 0; j < nh; j++) {
        const int64_t h = h0 + j;
        slope[j] = ggmlx_cpu_alibi_slope(max_bias, p->n_head, h);
        M[j]     = -INFINITY;
        S[j]     = 0.0f;
        mrow[j]  = mask ? (const char *) mask->data + iq1 * mask->nb[1] + (h % mask->ne[2]) * mask->nb[2] +
                          (iq3 % mask->ne[3]) * mask->nb[3]
                        : NULL;
        memset(w->acc + j * w->DVa, 0, (size_t) p->DV * sizeof(float));

        /* the query, scaled in advance (softcap needs the plain scaled logit) */
        const char * qr = (const char *) q->data + iq1 * q->nb[1] + h * q->nb[2] + iq3 * q->nb[3];
        float * qd = p->k_float ? (float *) (w->qc + j * w->qstride) : w->qf;
        for (int64_t i = 0; i < p->DK; i++) {
            qd[i] = *(const float *) (qr + i * q->nb[0]) * scale;
        }
        if (!p->k_float) {
            ggml_get_type_traits_cpu(p->ktr->vec_dot_type)->from_float(w->qf, w->qc + j * w->qstride, p->DK);
        }
    }
    const bool mask_f16 = mask && mask->type == GGML_TYPE_F16;
    const char * kbase = (const char *) k->data + ik2 * k->nb[2] + iq3 * k->nb[3];
    const char * vbase = (const char *) v->data + ik2 * v->nb[2] + iq3 * v->nb[3];

    for (int64_t c0 = 0; c0 < p->n_kv; c0 += FA_BLOCK) {
        const int64_t nc = p->n_kv - c0 < FA_BLOCK ? p->n_kv - c0 : FA_BLOCK;
        bool any = false;
        /* logits of the block; -INF where masked */
        for (int64_t c = 0; c < nc; c++) {
            const int64_t ic = c0 + c;
            float * sc = w->s + c * FA_HEADS;
            bool live = false;
            for (int64_t j = 0; j < nh; j++) {
                float mv = 0.0f;
                if (mrow[j]) {
                    mv = mask_f16 ? ggmlx_fp16_to_fp32(((const uint16_t *) mrow[j])[ic]) : ((const float *) mrow[j])[ic];
                    mv = mv == -INFINITY ? mv : slope[j] * mv;
                }
                sc[j] = mv;
                live |= mv != -INFINITY;
            }
            if (!live) {
                continue;
            }
            any = true;
            const char * kr = kbase + ic * k->nb[1];
            for (int64_t j = 0; j < nh; j++) {
                if (sc[j] == -INFINITY) {
                    continue;
                }
                float d;
                if (p->k_float) {
                    const float * qd = (const float *) (w->qc + j * w->qstride);
#if defined(__x86_64__)
                    d = p->avx512 ? fa_dot_avx512(p->DK, kr, k->type, qd) : fa_dot_portable(p->DK, kr, k->type, qd);
#else
                    d = fa_dot_portable(p->DK, kr, k->type, qd);
#endif
                } else {
                    p->ktr->vec_dot((int) p->DK, &d, 0, kr, 0, w->qc + j * w->qstride, 0, 1);
                }
                if (softcap != 0.0f) {
                    d = softcap * tanhf(d);
                }
                sc[j] += d;
            }
        }
        if (!any) {
            continue;
        }
        /* new maxima, rescale what is accumulated, turn logits into weights */
        for (int64_t j = 0; j < nh; j++) {
            float mx = M[j];
            for (int64_t c = 0; c < nc; c++) {
                const float x = w->s[c * FA_HEADS + j];
                mx = x > mx ? x : mx;
            }
            if (mx == -INFINITY) {
                continue;
            }
            if (mx > M[j]) {
                const float r = M[j] == -INFINITY ? 0.0f : expf(M[j] - mx);
                if (r != 1.0f) {
                    float * a = w->acc + j * w->DVa;
                    for (int64_t i = 0; i < p->DV; i++) {
                        a[i] *= r;
                    }
                }
                S[j] *= r;
                M[j] = mx;
            }
            for (int64_t c = 0; c < nc; c++) {
                float * x = &w->s[c * FA_HEADS + j];
                *x = *x == -INFINITY ? 0.0f : expf(*x - mx);
                S[j] += *x;
            }
        }
        /* values: each row converted once, added into every head that weighs it */
        for (int64_t c = 0; c < nc; c++) {
            const float * sc = w->s + c * FA_HEADS;
            bool live = false;
            for (int64_t j = 0; j < nh; j++) {
                live |= sc[j] != 0.0f;
            }
            if (!live) {
                continue;
            }
            const char * vr = vbase + (c0 + c) * v->nb[1];
            const float * vf = w->vf;
            if (v->type == GGML_TYPE_F32) {
                vf = (const float *) vr;
            } else if (p->v_float) {
#if defined(__x86_64__)
                if (p->avx512) {
                    fa_to_f32_avx512(p->DV, vr, v->type, w->vf);
                } else {
                    fa_to_f32_portable(p->DV, vr, v->type, w->vf);
                }
#else
                fa_to_f32_portable(p->DV, vr, v->type, w->vf);
#endif
            } else {
                p->v_to_float(vr, w->vf, p->DV);
            }
            for (int64_t j = 0; j < nh; j++) {
                if (sc[j] == 0.0f) {
                    continue;
                }
#if defined(__x86_64__)
                if (p->avx512) {
                    fa_axpy_avx512(p->DV, w->acc + j * w->DVa, sc[j], vf);
                    continue;
                }
#endif
                fa_axpy_portable(p->DV, w->acc + j * w->DVa, sc[j], vf);
            }
        }
    }

    for (int64_t j = 0; j < nh; j++) {
        const int64_t h = h0 + j;
        float * a = w->acc + j * w->DVa;
        if (sinks != NULL) {
            /* the sink joins the normaliser only */
            const float sk = ((const float *) sinks->data)[h];
            if (sk > M[j]) {
                const float r = M[j] == -INFINITY ? 0.0f : expf(M[j] - sk);
                for (int64_t i = 0; i < p->DV; i++) {
                    a[i] *= r;
                }
                S[j] = S[j] * r + 1.0f;
            } else {
                S[j] += expf(sk - M[j]);
            }
        }
        const float inv = S[j] > 0.0f ? 1.0f / S[j] : 0.0f;
        float * out = (float *) ((char *) dst->data + h * dst->nb[1] + iq1 * dst->nb[2] + iq3 * dst->nb[3]);
        for (int64_t i = 0; i < p->DV; i++) {
            out[i] = a[i] * inv;
        }
    }
}

void ggmlx_cpu_flash_attn(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    struct fa_plan p;
    fa_make_plan(dst, params->nth, &p);
    const size_t need = (size_t) params->nth * p.per_thread + FA_ALIGN;
    if (params->wdata == NULL || params->wsize < need) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "ggml_flash_attn_ext: work buffer of %zu bytes is smaller than the %zu needed",
                           params->wsize, need);
        }
        return;
    }
    char * base = (char *) (((uintptr_t) params->wdata + FA_ALIGN - 1) & ~(uintptr_t) (FA_ALIGN - 1));
    base += (size_t) params->ith * p.per_thread;
    struct fa_scratch w;
    w.qstride = fa_align(p.q_row);
    w.DVa     = fa_align((size_t) p.DV * sizeof(float)) / sizeof(float);
    w.qc      = base;
    base     += w.qstride * FA_HEADS;
    w.qf      = (float *) base;
    base     += fa_align((size_t) p.DK * sizeof(float));
    w.acc     = (float *) base;
    base     += w.DVa * sizeof(float) * FA_HEADS;
    w.vf      = (float *) base;
    base     += fa_align((size_t) p.DV * sizeof(float));
    w.s       = (float *) base;

    int64_t u0, u1;
    ggmlx_cpu_split_rows(params, p.units, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        /* heads fastest, then query rows: neighbouring units share K/V rows in cache */
        const int64_t run = u % p.head_runs;
        const int64_t ik2 = (u / p.head_runs) % p.n_head_kv;
        const int64_t iq1 = (u / (p.head_runs * p.n_head_kv)) % p.n_q;
        const int64_t iq3 = u / (p.head_runs * p.n_head_kv * p.n_q);
        const int64_t h0  = ik2 * p.group + run * p.heads;
        const int64_t nh  = p.group - run * p.heads < p.heads ? p.group - run * p.heads : p.heads;
        fa_unit(&p, dst, &w, iq1, ik2, h0, nh, iq3);
    }
}
