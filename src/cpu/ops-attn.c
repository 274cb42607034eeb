/*
 * ops-attn.c -- FLASH_ATTN_EXT on the CPU: each output row is softmax(logits) V computed in one
 * pass over the cached tokens with a running maximum (online softmax), so memory does not grow
 * with n_q * n_kv.
 *
 * Work is cut into units of (query row, KV head, run of up to FA_HEADS query heads that share
 * that KV head): a unit reads each K and V row once and uses it for all of its heads, which for
 * grouped-query attention divides the K/V traffic by the group size. Tokens are taken in blocks
 * of FA_BLOCK: all logits of a block first, then one rescale of the accumulators per head, then
 * the V rows, each converted to F32 once and added into every head's accumulator (32 columns of
 * every accumulator held in registers across the block's rows). V rows are prefetched while the
 * block's logits are computed.
 *
 * Float K rows (F32, F16, BF16) meet the F32 query (never rounded), 16 values at a time in
 * registers for every head of the unit (AVX-512). A quantized K row meets the query quantized to
 * the K type's dot-product partner (Q8_0 for Q8_0 and Q4_0, Q8_K for the K-quants, ...) through
 * the matrix product's integer dot, as upstream's CPU backend does, so a quantized KV cache gives
 * upstream's logits (and the integer dot reads a Q8_0 row faster than converting it). V rows are
 * converted to F32 (in registers for F16, BF16, Q8_0 and Q4_0). Accumulation is F32 whatever the
 * precision hint. A row whose every logit is -INF (fully masked, no sinks) gives
 * zeros, as our soft_max does, rather than NaNs.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "ggml-math.h"
#include "quant/quant-blocks.h"

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
        const struct ggml_type_traits_cpu * tk = ggml_get_type_traits_cpu(k->type);
        if (tk == NULL || tk->vec_dot == NULL || ggml_get_type_traits_cpu(tk->vec_dot_type)->from_float == NULL) {
            return "the key type has no dot product with a quantized query";
        }
        if (k->ne[0] % ggml_blck_size(k->type) != 0 || k->ne[0] % ggml_blck_size(tk->vec_dot_type) != 0) {
            return "the key head size must be whole blocks of the key type and of its query type";
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
__attribute__((target("avx512f,f16c"))) static inline __m512 fa_load16(const void * row, enum ggml_type t, int64_t i) {
    switch (t) {
    case GGML_TYPE_F16:
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) ((const uint16_t *) row + i)));
    case GGML_TYPE_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *) ((const uint16_t *) row + i))), 16));
    case GGML_TYPE_Q8_0: {
        const block_q8_0 * b = (const block_q8_0 *) row + i / 32;
        const __m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) (b->qs + i % 32))));
        return _mm512_mul_ps(q, _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    case GGML_TYPE_Q4_0: {
        /* a block's 16 bytes hold elements 0-15 in their low nibbles, 16-31 in their high ones */
        const block_q4_0 * b = (const block_q4_0 *) row + i / 32;
        __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) b->qs));
        x = i % 32 ? _mm512_srli_epi32(x, 4) : x;
        x = _mm512_sub_epi32(_mm512_and_si512(x, _mm512_set1_epi32(15)), _mm512_set1_epi32(8));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    default:
        return _mm512_loadu_ps((const float *) row + i);
    }
}

__attribute__((target("avx512f,f16c"))) static void fa_to_f32_avx512(int64_t n, const void * row, enum ggml_type t,
                                                                        float * out) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(out + i, fa_load16(row, t, i));
    }
    for (; i < n; i++) {
        out[i] = fa_load(row, t, i);
    }
}

/* out[j] = dot(k row, q + j * qs) for the unit's NH heads: each 16 values of k converted once */
__attribute__((target("avx512f,f16c"), always_inline)) static inline void
fa_dots_nh(int64_t n, const void * k, enum ggml_type t, const float * q, size_t qs, float * out, const int NH) {
    __m512 acc[FA_HEADS];
    for (int j = 0; j < NH; j++) {
        acc[j] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 kv = fa_load16(k, t, i);
        for (int j = 0; j < NH; j++) {
            acc[j] = _mm512_fmadd_ps(kv, _mm512_loadu_ps(q + j * qs + i), acc[j]);
        }
    }
    /* four sums at a time through a horizontal-add tree, cheaper than four reductions */
    int j = 0;
    for (; j + 4 <= NH; j += 4) {
        __m256 y[4];
        for (int i = 0; i < 4; i++) {
            y[i] = _mm256_add_ps(_mm512_castps512_ps256(acc[j + i]),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[j + i]), 1)));
        }
        const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(y[0], y[1]), _mm256_hadd_ps(y[2], y[3]));
        _mm_storeu_ps(out + j, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
    for (; j < NH; j++) {
        out[j] = _mm512_reduce_add_ps(acc[j]);
    }
}

/* acc + j * as += p[j] * v row, for NH heads: each 16 values of v converted once */
__attribute__((target("avx512f,f16c"), always_inline)) static inline void
fa_axpys_nh(int64_t n, const void * v, enum ggml_type t, float * acc, size_t as, const float * p, const int NH) {
    __m512 pv[FA_HEADS];
    for (int j = 0; j < NH; j++) {
        pv[j] = _mm512_set1_ps(p[j]);
    }
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 vv = fa_load16(v, t, i);
        for (int j = 0; j < NH; j++) {
            float * a = acc + j * as + i;
            _mm512_storeu_ps(a, _mm512_fmadd_ps(pv[j], vv, _mm512_loadu_ps(a)));
        }
    }
}

/*
 * The whole block of V rows into the NH accumulators, 32 columns at a time: the accumulators'
 * columns stay in registers across the block's tokens (loaded and stored once per block).
 */
__attribute__((target("avx512f,f16c"), always_inline)) static inline void
fa_vblock_nh(int64_t n, const char * v, size_t vnb, enum ggml_type t, int64_t nc, const float * w, float * acc,
             size_t as, const int NH) {
    for (int64_t i = 0; i < n; i += 32) {
        __m512 a0[FA_HEADS], a1[FA_HEADS];
        for (int j = 0; j < NH; j++) {
            a0[j] = _mm512_loadu_ps(acc + j * as + i);
            a1[j] = _mm512_loadu_ps(acc + j * as + i + 16);
        }
        for (int64_t c = 0; c < nc; c++) {
            const char * vr = v + c * vnb;
            const __m512 v0 = fa_load16(vr, t, i), v1 = fa_load16(vr, t, i + 16);
            for (int j = 0; j < NH; j++) {
                const __m512 p = _mm512_set1_ps(w[c * FA_HEADS + j]);
                a0[j] = _mm512_fmadd_ps(p, v0, a0[j]);
                a1[j] = _mm512_fmadd_ps(p, v1, a1[j]);
            }
        }
        for (int j = 0; j < NH; j++) {
            _mm512_storeu_ps(acc + j * as + i, a0[j]);
            _mm512_storeu_ps(acc + j * as + i + 16, a1[j]);
        }
    }
}

#define FA_NH_CASES(call) \
    switch (nh) {         \
    case 1: call(1); break; case 2: call(2); break; case 3: call(3); break; case 4: call(4); break; \
    case 5: call(5); break; case 6: call(6); break; case 7: call(7); break; default: call(8); break; }

__attribute__((target("avx512f,f16c"))) static void fa_dots_avx512(int64_t n, const void * k, enum ggml_type t,
                                                                 const float * q, size_t qs, int nh, float * out) {
#define FA_CALL(NH) fa_dots_nh(n, k, t, q, qs, out, NH)
    FA_NH_CASES(FA_CALL)
#undef FA_CALL
}

__attribute__((target("avx512f,f16c"))) static void fa_axpys_avx512(int64_t n, const void * v, enum ggml_type t,
                                                                  float * acc, size_t as, const float * p, int nh) {
#define FA_CALL(NH) fa_axpys_nh(n, v, t, acc, as, p, NH)
    FA_NH_CASES(FA_CALL)
#undef FA_CALL
}

__attribute__((target("avx512f,f16c"))) static void fa_vblock_avx512(int64_t n, const char * v, size_t vnb,
                                                                        enum ggml_type t, int64_t nc, const float * w,
                                                                        float * acc, size_t as, int nh) {
#define FA_CALL(NH) fa_vblock_nh(n, v, vnb, t, nc, w, acc, as, NH)
    FA_NH_CASES(FA_CALL)
#undef FA_CALL
}

/* e^x for x <= 0 (and -INF, giving 0): 2^n * e^r with |r| <= ln2/2, degree-6 polynomial */
__attribute__((target("avx512f,f16c"))) static inline __m512 fa_exp512(__m512 x) {
    const __mmask16 ninf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 y = _mm512_set1_ps(1.0f / 720.0f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 120.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 24.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f / 6.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(0.5f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    return _mm512_maskz_mov_ps((__mmask16) ~ninf, _mm512_scalef_ps(y, n));
}

/*
 * A block of logits s[c * FA_HEADS + j] (nc tokens, rows past nc and heads past nh hold -INF)
 * into weights, updating each head's maximum M and sum S; r[j] is the factor the head's
 * accumulator must be scaled by. Two tokens of all FA_HEADS heads fill one vector.
 */
__attribute__((target("avx512f,f16c"))) static void fa_block_avx512(float * s, int64_t nc, int64_t nh, float * M, float * S,
                                                                  float * r) {
    const int64_t npair = (nc + 1) / 2;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < npair; i++) {
        mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + i * 16));
    }
    float m16[16], base[16];
    _mm512_storeu_ps(m16, mx);
    for (int64_t j = 0; j < FA_HEADS; j++) {
        float m = j < nh ? (m16[j] > m16[j + 8] ? m16[j] : m16[j + 8]) : -INFINITY;
        m = j < nh && M[j] > m ? M[j] : m;
        r[j] = 1.0f;
        if (j < nh && m != M[j]) {
            r[j] = M[j] == -INFINITY ? 0.0f : expf(M[j] - m);
            S[j] *= r[j];
            M[j] = m;
        }
        base[j] = base[j + 8] = m == -INFINITY ? 0.0f : m; /* all -INF: weights 0, no NaN from -INF - -INF */
    }
    const __m512 mv = _mm512_loadu_ps(base);
    __m512 sum = _mm512_setzero_ps();
    for (int64_t i = 0; i < npair; i++) {
        const __m512 e = fa_exp512(_mm512_sub_ps(_mm512_loadu_ps(s + i * 16), mv));
        _mm512_storeu_ps(s + i * 16, e);
        sum = _mm512_add_ps(sum, e);
    }
    float s16[16];
    _mm512_storeu_ps(s16, sum);
    for (int64_t j = 0; j < nh; j++) {
        S[j] += s16[j] + s16[j + 8];
    }
}

__attribute__((target("avx512f,f16c"))) static float fa_dot_avx512(int64_t n, const void * k, enum ggml_type t,
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

#endif

/* dot of n elements of an F32, F16 or BF16 row with F32 y (also used by MUL_MAT_ID's float experts) */
float ggmlx_cpu_dot_float_row(int64_t n, const void * row, enum ggml_type t, const float * y) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c")) {
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
    size_t  DKa, DVa;   /* floats per query / accumulator, padded to FA_ALIGN bytes */
    size_t  per_thread; /* bytes of scratch per thread */
    bool    avx512;
    bool    fast_k, fast_v; /* rows converted in registers (AVX-512) */
    ggml_to_float_t v_to_float; /* quantized V rows without the fast path */
    /* quantized K: the query is quantized to kq_type once per unit and dotted by kq_dot */
    ggml_from_float_t kq_from_float;
    ggml_vec_dot_t    kq_dot;
    size_t  kq_row;     /* bytes of one quantized query, padded to FA_ALIGN */
    size_t  v_row_bytes;
};

static bool fa_fast_type(enum ggml_type t, int64_t n) {
    return (fa_float_type(t) && n % 16 == 0) || t == GGML_TYPE_Q8_0 || t == GGML_TYPE_Q4_0;
}

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
    p->v_row_bytes = ggml_row_size(v->type, v->ne[0]);
    p->v_to_float = fa_float_type(v->type) ? NULL : ggml_get_type_traits(v->type)->to_float;
    if (!fa_float_type(k->type)) {
        const struct ggml_type_traits_cpu * tk = ggml_get_type_traits_cpu(k->type);
        const struct ggml_type_traits_cpu * tq = ggml_get_type_traits_cpu(tk->vec_dot_type);
        p->kq_dot        = tk->vec_dot;
        p->kq_from_float = tq->from_float;
        p->kq_row        = fa_align(ggml_row_size(tk->vec_dot_type, p->DK));
    }
#if defined(__x86_64__)
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c");
    p->avx512 = avx512;
    p->fast_k = avx512 && fa_float_type(k->type) && fa_fast_type(k->type, p->DK);
    p->fast_v = avx512 && fa_fast_type(v->type, p->DV);
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
    p->DKa       = fa_align((size_t) p->DK * sizeof(float)) / sizeof(float);
    p->DVa       = fa_align((size_t) p->DV * sizeof(float)) / sizeof(float);
    p->per_thread = sizeof(float) * (p->DKa * FA_HEADS   /* queries, scaled */
                                     + p->DVa * FA_HEADS /* accumulators */
                                     + p->DVa            /* one V row in F32 */
                                     + FA_BLOCK * FA_HEADS    /* logits of a block */
                                     + FA_BLOCK * FA_HEADS)   /* mask values of a block */
                    + p->kq_row * FA_HEADS;                           /* quantized queries */
}

size_t ggmlx_cpu_flash_attn_work_size(const struct ggml_tensor * dst, int n_tasks) {
    struct fa_plan p;
    fa_make_plan(dst, n_tasks, &p);
    return (size_t) (n_tasks < 1 ? 1 : n_tasks) * p.per_thread + FA_ALIGN;
}

/* ---- one unit ------------------------------------------------------------------------------ */

struct fa_scratch {
    float * q;   /* FA_HEADS queries, DKa apart */
    float * acc; /* FA_HEADS accumulators, DVa apart */
    float * vf;  /* one V row in F32 */
    float * s;   /* logits, then weights: [token in block][head] */
    float * mf;  /* a block of mask values in F32 (with the slope), per head or shared */
    char  * qq;  /* FA_HEADS quantized queries, kq_row apart (quantized K) */
};

/* a row as F32 (types without the fast path) */
static const float * fa_row_f32(const char * row, enum ggml_type t, ggml_to_float_t deq, int64_t n, float * tmp) {
    if (t == GGML_TYPE_F32) {
        return (const float *) row;
    }
    if (deq != NULL) {
        deq(row, tmp, n);
    } else {
        fa_to_f32_portable(n, row, t, tmp);
    }
    return tmp;
}

/* the scalar twin of fa_block_avx512 */
static void fa_block_portable(float * s, int64_t nc, int64_t nh, float * M, float * S, float * r) {
    for (int64_t j = 0; j < nh; j++) {
        float mx = M[j];
        for (int64_t c = 0; c < nc; c++) {
            mx = s[c * FA_HEADS + j] > mx ? s[c * FA_HEADS + j] : mx;
        }
        r[j] = 1.0f;
        if (mx != M[j]) {
            r[j] = M[j] == -INFINITY ? 0.0f : expf(M[j] - mx);
            S[j] *= r[j];
            M[j] = mx;
        }
        for (int64_t c = 0; c < nc; c++) {
            float * x = &s[c * FA_HEADS + j];
            *x = *x == -INFINITY ? 0.0f : expf(*x - mx);
            S[j] += *x;
        }
    }
}

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

    float        slope[FA_HEADS], M[FA_HEADS], S[FA_HEADS], r[FA_HEADS], d[FA_HEADS];
    const char * mrow[FA_HEADS];
    for (int64_t j = 0; j < nh; j++) {
        const int64_t h = h0 + j;
        slope[j] = ggmlx_cpu_alibi_slope(max_bias, p->n_head, h);
        M[j]     = -INFINITY;
        S[j]     = 0.0f;
        mrow[j]  = mask ? (const char *) mask->data + iq1 * mask->nb[1] + (h % mask->ne[2]) * mask->nb[2] +
                          (iq3 % mask->ne[3]) * mask->nb[3]
                        : NULL;
        memset(w->acc + j * p->DVa, 0, (size_t) p->DV * sizeof(float));
        /* the query, scaled in advance (softcap needs the plain scaled logit) */
        const char * qr = (const char *) q->data + iq1 * q->nb[1] + h * q->nb[2] + iq3 * q->nb[3];
        float * qd = w->q + j * p->DKa;
        /* a quantized K meets the unscaled query (its block scales then round as upstream's do) */
        const float qscale = p->kq_dot != NULL ? 1.0f : scale;
        for (int64_t i = 0; i < p->DK; i++) {
            qd[i] = *(const float *) (qr + i * q->nb[0]) * qscale;
        }
        if (p->kq_dot != NULL) {
            p->kq_from_float(qd, w->qq + j * p->kq_row, p->DK);
        }
    }
    const bool   mask_f16 = mask && mask->type == GGML_TYPE_F16;
    const char * kbase = (const char *) k->data + ik2 * k->nb[2] + iq3 * k->nb[3];
    const char * vbase = (const char *) v->data + ik2 * v->nb[2] + iq3 * v->nb[3];

    /* heads reading the same mask row with the same slope share one converted copy */
    const int64_t n_mrows = mask == NULL ? 0 : mask->ne[2] == 1 && !(max_bias > 0.0f) ? 1 : nh;
    for (int64_t c0 = 0; c0 < p->n_kv; c0 += FA_BLOCK) {
        const int64_t nc = p->n_kv - c0 < FA_BLOCK ? p->n_kv - c0 : FA_BLOCK;
        bool any = false;
        for (int64_t j = 0; j < n_mrows; j++) {
            float * mf = w->mf + j * FA_BLOCK;
            if (mask_f16) {
#if defined(__x86_64__)
                if (p->avx512) {
                    fa_to_f32_avx512(nc, mrow[j] + c0 * sizeof(uint16_t), GGML_TYPE_F16, mf);
                } else
#endif
                {
                    fa_to_f32_portable(nc, mrow[j] + c0 * sizeof(uint16_t), GGML_TYPE_F16, mf);
                }
            } else {
                memcpy(mf, mrow[j] + c0 * sizeof(float), (size_t) nc * sizeof(float));
            }
            for (int64_t c = 0; c < nc && slope[j] != 1.0f; c++) {
                mf[c] = mf[c] == -INFINITY ? mf[c] : slope[j] * mf[c];
            }
        }
        /* logits of the block; -INF where masked (and in the unused heads and the odd last row) */
        for (int64_t c = 0; c < nc + (nc & 1); c++) {
            float * sc = w->s + c * FA_HEADS;
            for (int64_t j = 0; j < FA_HEADS; j++) {
                sc[j] = -INFINITY;
            }
            if (c == nc) {
                break;
            }
            const int64_t ic = c0 + c;
            bool live = false;
            for (int64_t j = 0; j < nh; j++) {
                const float mv = n_mrows == 0 ? 0.0f : w->mf[(n_mrows == 1 ? 0 : j) * FA_BLOCK + c];
                sc[j] = mv;
                live |= mv != -INFINITY;
            }
            if (!live) {
                continue;
            }
            any = true;
            const char * kr = kbase + ic * k->nb[1];
            /* the V row is read after the whole block's logits: start fetching it now */
            const char * vr_next = vbase + ic * v->nb[1];
            for (size_t o = 0; o < p->v_row_bytes; o += 64) {
                __builtin_prefetch(vr_next + o, 0, 3);
            }
#if defined(__x86_64__)
            if (p->fast_k) {
                fa_dots_avx512(p->DK, kr, k->type, w->q, p->DKa, (int) nh, d);
            } else
#endif
            if (p->kq_dot != NULL) {
                for (int64_t j = 0; j < nh; j++) {
                    p->kq_dot((int) p->DK, &d[j], 0, kr, 0, w->qq + j * p->kq_row, 0, 1);
                    d[j] *= scale;
                }
            } else {
                for (int64_t j = 0; j < nh; j++) {
                    d[j] = ggmlx_cpu_dot_float_row(p->DK, kr, k->type, w->q + j * p->DKa);
                }
            }
            for (int64_t j = 0; j < nh; j++) {
                if (sc[j] != -INFINITY) {
                    sc[j] += softcap != 0.0f ? softcap * tanhf(d[j]) : d[j];
                }
            }
        }
        if (!any) {
            continue;
        }
        /* new maxima, rescale what is accumulated, turn logits into weights */
#if defined(__x86_64__)
        if (p->avx512) {
            fa_block_avx512(w->s, nc, nh, M, S, r);
        } else
#endif
        {
            fa_block_portable(w->s, nc, nh, M, S, r);
        }
        for (int64_t j = 0; j < nh; j++) {
            if (r[j] != 1.0f) {
                float * a = w->acc + j * p->DVa;
                for (int64_t i = 0; i < p->DV; i++) {
                    a[i] *= r[j];
                }
            }
        }
        /* values: each row converted once, added into every head that weighs it */
#if defined(__x86_64__)
        if (p->fast_v && p->DV % 32 == 0) {
            fa_vblock_avx512(p->DV, vbase + c0 * v->nb[1], v->nb[1], v->type, nc, w->s, w->acc, p->DVa, (int) nh);
            continue;
        }
#endif
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
#if defined(__x86_64__)
            if (p->fast_v) {
                fa_axpys_avx512(p->DV, vr, v->type, w->acc, p->DVa, sc, (int) nh);
                continue;
            }
#endif
            const float * vf = fa_row_f32(vr, v->type, p->v_to_float, p->DV, w->vf);
            for (int64_t j = 0; j < nh; j++) {
                if (sc[j] != 0.0f) {
                    fa_axpy_portable(p->DV, w->acc + j * p->DVa, sc[j], vf);
                }
            }
        }
    }

    for (int64_t j = 0; j < nh; j++) {
        const int64_t h = h0 + j;
        float * a = w->acc + j * p->DVa;
        if (sinks != NULL) {
            /* the sink joins the normaliser only */
            const float sk = ((const float *) sinks->data)[h];
            if (sk > M[j]) {
                const float f = M[j] == -INFINITY ? 0.0f : expf(M[j] - sk);
                for (int64_t i = 0; i < p->DV; i++) {
                    a[i] *= f;
                }
                S[j] = S[j] * f + 1.0f;
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
    float * base = (float *) ((((uintptr_t) params->wdata + FA_ALIGN - 1) & ~(uintptr_t) (FA_ALIGN - 1)) +
                              (size_t) params->ith * p.per_thread);
    struct fa_scratch w;
    w.q   = base;
    w.acc = w.q + p.DKa * FA_HEADS;
    w.vf  = w.acc + p.DVa * FA_HEADS;
    w.s   = w.vf + p.DVa;
    w.mf  = w.s + FA_BLOCK * FA_HEADS;
    w.qq  = (char *) (w.mf + FA_BLOCK * FA_HEADS);

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
