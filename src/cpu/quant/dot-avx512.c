/*
 * dot-avx512.c -- the x86 kernels of dot-x86.h compiled for AVX-512 (F, BW, VL, VNNI), whose
 * vpdpbusd does each byte dot product in one instruction, and 512-bit kernels of the four types
 * that matter most. Chosen at run time only where the CPU has these (quant-traits-cpu.c).
 */
#include "qdot.h"

#include <math.h>
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
/* only the kernels get the target: the code that installs them runs on any x86-64 CPU */
#    if defined(__clang__)
#        include <immintrin.h>
#        pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))), \
                                     apply_to = function)
#    else
#        pragma GCC push_options
#        pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#        include <immintrin.h>
#    endif
#    define QX(name) name##_avx512
#    define QX_VNNI  1
#    include "dot-x86.h"
#    include "dot-iq-x86.h"

/*
 * Q4_0, Q8_0, Q4_K and Q6_K (the types matrix-vector products lean on most) on 512-bit vectors,
 * so that each instruction does twice the work of the shared 256-bit kernels. Q4_0 and Q8_0 put
 * two blocks in a vector and do four per iteration; for Q4_0 the sum of products of the unsigned
 * nibbles and y, less 8 times the sum of y (a second vpdpbusd), is the signed sum.
 */
/* [a x 8 | b x 8] (AVX-512F only: the float form of this insert needs DQ) */
static inline __m512 two_halves(float a, float b) {
    return _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_castps_si256(_mm256_set1_ps(a))),
                                                  _mm256_castps_si256(_mm256_set1_ps(b)), 1));
}

static inline __m512 q4_0_pair(const block_q4_0 * x, const block_q8_0 * y) {
    const __m256i q   = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x[1].qs), _mm_loadu_si128((const __m128i *)x[0].qs));
    /* [x0 low, x1 low, x0 high, x1 high] nibbles, reordered to the activations' [x0 | x1] order */
    __m512i       v   = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    v                 = _mm512_and_si512(v, _mm512_set1_epi8(15));
    v                 = _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
    const __m512i yv  = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                                           _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
    const __m512i p   = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, yv);
    const __m512i p8  = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), yv);
    const __m512  sc  = two_halves(_cvtsh_ss(x[0].d) * _cvtsh_ss(y[0].d), _cvtsh_ss(x[1].d) * _cvtsh_ss(y[1].d));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(p, p8)), sc);
}

static void vec_dot_q4_0_q8_0_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK4_0;
    __m512                      acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int                         i = 0;
    for (; i + 3 < nb; i += 4) {
        acc0 = _mm512_add_ps(acc0, q4_0_pair(x + i, y + i));
        acc1 = _mm512_add_ps(acc1, q4_0_pair(x + i + 2, y + i + 2));
    }
    float tail = 0.0f;
    if (i < nb) {
        vec_dot_q4_0_q8_0_avx512(n - i * QK4_0, &tail, bs, x + i, bx, y + i, by, nrc);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
}

static inline __m512 q8_0_pair(const block_q8_0 * x, const block_q8_0 * y) {
    const __m512i xv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x[0].qs)),
                                          _mm256_loadu_si256((const __m256i *)x[1].qs), 1);
    const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                                          _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
    /* |x| times y with x's sign (AVX-512 has no byte sign instruction: negate under a mask) */
    const __m512i sy = _mm512_mask_sub_epi8(yv, _mm512_movepi8_mask(xv), _mm512_setzero_si512(), yv);
    const __m512i p  = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(xv), sy);
    const __m512  sc = two_halves(_cvtsh_ss(x[0].d) * _cvtsh_ss(y[0].d), _cvtsh_ss(x[1].d) * _cvtsh_ss(y[1].d));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(p), sc);
}

static void vec_dot_q8_0_q8_0_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q8_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK8_0;
    __m512                      acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int                         i = 0;
    for (; i + 3 < nb; i += 4) {
        acc0 = _mm512_add_ps(acc0, q8_0_pair(x + i, y + i));
        acc1 = _mm512_add_ps(acc1, q8_0_pair(x + i + 2, y + i + 2));
    }
    float tail = 0.0f;
    if (i < nb) {
        vec_dot_q8_0_q8_0_avx512(n - i * QK8_0, &tail, bs, x + i, bx, y + i, by, nrc);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
}

/* word index vector: word w takes scale `first + w / per` */
static inline __m512i scale_index(int first, int per) {
    int16_t idx[32];
    for (int w = 0; w < 32; w++) {
        idx[w] = (int16_t)(first + w / per);
    }
    return _mm512_loadu_si512(idx);
}

/*
 * Q4_K: a 64-element chunk (two sub-blocks: the low and the high nibbles of 32 bytes) fills one
 * vector; its two scales reach their 16 words each through one word permute.
 */
static void vec_dot_q4_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const __m512i               m4  = _mm512_set1_epi8(15);
    const __m512i               ix[4] = { scale_index(0, 16), scale_index(2, 16), scale_index(4, 16), scale_index(6, 16) };
    __m512                      acc = _mm512_setzero_ps();
    float                       acc_min = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m128i sc8, mn;
        QX(k4_scale_min)(x[i].scales, &sc8, &mn);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sc8));
        __m512i       sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            const __m512i v = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1), m4);
            const __m512i p = _mm512_maddubs_epi16(v, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi            = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(ix[c], sc16)));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(x[i].d) * y[i].d), acc);
        acc_min += _cvtsh_ss(x[i].dmin) * y[i].d * (float)QX(mins_dot)(mn, y[i].bsums);
    }
    *s = _mm512_reduce_add_ps(acc) - acc_min;
}

/*
 * Q6_K: 64 elements per vector. ql[0..63] holds the low nibbles of elements 0..63 of a half and
 * the high nibbles of 64..127; qh's bit pairs 0, 1, 2, 3 give the top bits of the four 32-element
 * quarters. Four 16-element sub-blocks (four scales) per vector.
 */
static void vec_dot_q6_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q6_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const __m512i               m4  = _mm512_set1_epi8(15);
    const __m512i               m3  = _mm512_set1_epi8(3);
    const __m512i               ix[4] = { scale_index(0, 8), scale_index(4, 8), scale_index(8, 8), scale_index(12, 8) };
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256i s16  = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i sc16 = _mm512_castsi256_si512(s16);
        __m512i       sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m512i l  = _mm512_loadu_si512(x[i].ql + 64 * h);
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h));
            const __m512i hh = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
            const __m512i a  = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(hh, m3), 4));
            const __m512i b  = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                               _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hh, 4), m3), 4));
            const __m512i pa = _mm512_maddubs_epi16(a, _mm512_loadu_si512(y[i].qs + 128 * h));
            const __m512i pb = _mm512_maddubs_epi16(b, _mm512_loadu_si512(y[i].qs + 128 * h + 64));
            sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(pa, _mm512_permutexvar_epi16(ix[2 * h], sc16)));
            sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(pb, _mm512_permutexvar_epi16(ix[2 * h + 1], sc16)));
        }
        /* the stored quants are q + 32 */
        const int tot = _mm512_reduce_add_epi32(sumi) - 32 * QX(scale_bsums)(s16, y[i].bsums);
        acc += _cvtsh_ss(x[i].d) * y[i].d * (float)tot;
    }
    *s = acc;
}

static const struct ggmlx_qdot_entry entries_zmm[] = {
    { GGML_TYPE_Q4_0, NULL, vec_dot_q4_0_q8_0_zmm },
    { GGML_TYPE_Q8_0, NULL, vec_dot_q8_0_q8_0_zmm },
    { GGML_TYPE_Q4_K, NULL, vec_dot_q4_K_q8_K_zmm },
    { GGML_TYPE_Q6_K, NULL, vec_dot_q6_K_q8_K_zmm },
};

#    if defined(__clang__)
#        pragma clang attribute pop
#    else
#        pragma GCC pop_options
#    endif

void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) {
    ggmlx_qdot_apply(t, entries_avx512, sizeof(entries_avx512) / sizeof(entries_avx512[0]));
    ggmlx_qdot_apply(t, iq_entries_avx512, sizeof(iq_entries_avx512) / sizeof(iq_entries_avx512[0]));
    ggmlx_qdot_apply(t, entries_zmm, sizeof(entries_zmm) / sizeof(entries_zmm[0]));
}
#else
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { (void)t; }
#endif
