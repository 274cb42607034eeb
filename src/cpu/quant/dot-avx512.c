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
#    include "dot-lowbit-x86.h"

/*
 * Q4_0, Q8_0, Q4_K and Q6_K (the types matrix-vector products lean on most) on 512-bit vectors,
 * so that each instruction does twice the work of the shared 256-bit kernels. Q4_0 and Q8_0 put
 * two blocks in a vector and do eight per iteration; for Q4_0 the sum of products of the unsigned
 * nibbles and y, less 8 times the sum of y (a second vpdpbusd), is the signed sum.
 */
/*
 * The products of the block scales, eight blocks at a time: their halves gathered into one
 * vector and converted together (converting each alone cost more than the byte dot products).
 */
#    define QDOT_SCALES8(xb, yb)                                                                                    \
        _mm256_mul_ps(_mm256_cvtph_ps(_mm_setr_epi16((short)(xb)[0].d, (short)(xb)[1].d, (short)(xb)[2].d,       \
                                                     (short)(xb)[3].d, (short)(xb)[4].d, (short)(xb)[5].d,       \
                                                     (short)(xb)[6].d, (short)(xb)[7].d)),                       \
                      _mm256_cvtph_ps(_mm_setr_epi16((short)(yb)[0].d, (short)(yb)[1].d, (short)(yb)[2].d,       \
                                                     (short)(yb)[3].d, (short)(yb)[4].d, (short)(yb)[5].d,       \
                                                     (short)(yb)[6].d, (short)(yb)[7].d)))

/* lanes 0-7 take scale 2k, lanes 8-15 scale 2k + 1 */
static inline __m512i pair_index(int k) {
    return _mm512_set_epi32(2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1,
                            2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k);
}

/* two blocks' 32 nibbles each, in element order: [x0 (low, high) | x1 (low, high)] */
static inline __m512i nibbles_pair(const uint8_t * qs0, const uint8_t * qs1) {
    const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)qs1), _mm_loadu_si128((const __m128i *)qs0));
    __m512i       v = _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1);
    v               = _mm512_and_si512(v, _mm512_set1_epi8(15));
    return _mm512_shuffle_i64x2(v, v, _MM_SHUFFLE(3, 1, 2, 0));
}

static inline __m512i y_pair(const block_q8_0 * y) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                              _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
}

/* signed bytes times signed bytes: |w| times y with w's sign (no byte sign instruction: a masked negate) */
static inline __m512i dot_ss_zmm(__m512i w, __m512i yv) {
    const __m512i sy = _mm512_mask_sub_epi8(yv, _mm512_movepi8_mask(w), _mm512_setzero_si512(), yv);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), sy);
}

/* the integer dot products of two Q4_0 blocks with their Q8_0 blocks, 8 lanes each */
static inline __m512i q4_0_pair(const block_q4_0 * x, const block_q8_0 * y) {
    const __m512i yv = y_pair(y);
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles_pair(x[0].qs, x[1].qs), yv),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), yv));
}

static inline __m512i q5_0_pair(const block_q5_0 * x, const block_q8_0 * y) {
    const __m512i hb = _mm512_inserti64x4(_mm512_castsi256_si512(QX(bit4_from_qh)(x[0].qh)), QX(bit4_from_qh)(x[1].qh), 1);
    const __m512i v  = _mm512_or_si512(nibbles_pair(x[0].qs, x[1].qs), hb);
    const __m512i yv = y_pair(y);
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), v, yv),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(16), yv));
}

static inline __m512i iq4_nl_pair(const block_iq4_nl * x, const block_q8_0 * y) {
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)ggmlx_kvalues_iq4nl));
    return dot_ss_zmm(_mm512_shuffle_epi8(lut, nibbles_pair(x[0].qs, x[1].qs)), y_pair(y));
}

static inline __m512i q8_0_pair(const block_q8_0 * x, const block_q8_0 * y) {
    return dot_ss_zmm(y_pair(x), y_pair(y)); /* x has the same layout as y */
}

/*
 * Eight blocks per iteration: four pairs, each pair's sums scaled by its two scales (lanes 0-7 and
 * 8-15 of a permute of the eight products); what is left goes to the 256-bit kernel.
 */
#    define QDOT_PAIRS_KERNEL(name, block_t, PAIR, SCALES8, tail_fn)                                             \
        static void name(GGMLX_VEC_DOT_ARGS) {                                                                   \
            GGMLX_VEC_DOT_UNUSED;                                                                                \
            const block_t * restrict    x    = vx;                                                               \
            const block_q8_0 * restrict y    = vy;                                                               \
            const int                   nb   = n / QK8_0;                                                        \
            __m512                      acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();                  \
            const __m512i ix0 = pair_index(0), ix1 = pair_index(1), ix2 = pair_index(2), ix3 = pair_index(3);    \
            int           i   = 0;                                                                               \
            for (; i + 7 < nb; i += 8) {                                                                         \
                const __m512 sc = _mm512_castps256_ps512(SCALES8(x + i, y + i));                                 \
                acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(PAIR(x + i, y + i)), _mm512_permutexvar_ps(ix0, sc), acc0); \
                acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(PAIR(x + i + 2, y + i + 2)), _mm512_permutexvar_ps(ix1, sc), \
                                       acc1);                                                                    \
                acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(PAIR(x + i + 4, y + i + 4)), _mm512_permutexvar_ps(ix2, sc), \
                                       acc0);                                                                    \
                acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(PAIR(x + i + 6, y + i + 6)), _mm512_permutexvar_ps(ix3, sc), \
                                       acc1);                                                                    \
            }                                                                                                    \
            float tail = 0.0f;                                                                                   \
            if (i < nb) {                                                                                        \
                tail_fn(n - i * QK8_0, &tail, bs, x + i, bx, y + i, by, nrc);                                    \
            }                                                                                                    \
            *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;                                         \
        }

QDOT_PAIRS_KERNEL(vec_dot_q4_0_q8_0_zmm, block_q4_0, q4_0_pair, QDOT_SCALES8, vec_dot_q4_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_q8_0_q8_0_zmm, block_q8_0, q8_0_pair, QDOT_SCALES8, vec_dot_q8_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_q5_0_q8_0_zmm, block_q5_0, q5_0_pair, QDOT_SCALES8, vec_dot_q5_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_iq4_nl_q8_0_zmm, block_iq4_nl, iq4_nl_pair, QDOT_SCALES8, vec_dot_iq4_nl_q8_0_avx512)

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

/*
 * IQ2_S: two 32-element groups per vector. The eight grid entries come by one 512-bit gather
 * (tried at 256 bits it lost to scalar loads; eight entries at a time it wins), the sign bits
 * of both groups are one 64-bit mask, and word permutes spread the four 4-bit scales.
 */
static void vec_dot_iq2_s_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_s * restrict x     = vx;
    const block_q8_K * restrict  y     = vy;
    const int                    nb    = n / QK_K;
    const __m512i                ix[4] = { scale_index(0, 8), scale_index(4, 8), scale_index(8, 8), scale_index(12, 8) };
    __m512                       acc   = _mm512_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const uint8_t * signs = x[i].qs + QK_K / 8;
        int16_t         sc[16];
        nibble_scales16_avx512(x[i].scales, sc);
        const __m512i sc16 = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)sc));
        __m512i       sumi = _mm512_setzero_si512();
        for (int p = 0; p < 4; p++) {
            const uint8_t * q = x[i].qs + 8 * p;
            const int       h0 = x[i].qh[2 * p], h1 = x[i].qh[2 * p + 1];
            const __m256i   w0 = grid4_avx512(ggmlx_iq2s_grid[q[0] | ((h0 << 8) & 0x300)], ggmlx_iq2s_grid[q[1] | ((h0 << 6) & 0x300)],
                                              ggmlx_iq2s_grid[q[2] | ((h0 << 4) & 0x300)], ggmlx_iq2s_grid[q[3] | ((h0 << 2) & 0x300)]);
            const __m256i   w1 = grid4_avx512(ggmlx_iq2s_grid[q[4] | ((h1 << 8) & 0x300)], ggmlx_iq2s_grid[q[5] | ((h1 << 6) & 0x300)],
                                              ggmlx_iq2s_grid[q[6] | ((h1 << 4) & 0x300)], ggmlx_iq2s_grid[q[7] | ((h1 << 2) & 0x300)]);
            const __m512i   w  = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
            uint64_t      sg;
            memcpy(&sg, signs + 8 * p, sizeof(sg));
            const __m512i yv = _mm512_loadu_si512(y[i].qs + 64 * p);
            const __m512i ys = _mm512_mask_sub_epi8(yv, (__mmask64)sg, _mm512_setzero_si512(), yv);
            sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(_mm512_maddubs_epi16(w, ys), _mm512_permutexvar_epi16(ix[p], sc16)));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(x[i].d) * y[i].d), acc);
    }
    *s = 0.125f * _mm512_reduce_add_ps(acc);
}

static const struct ggmlx_qdot_entry entries_zmm[] = {
    { GGML_TYPE_Q4_0, NULL, vec_dot_q4_0_q8_0_zmm },
    { GGML_TYPE_Q8_0, NULL, vec_dot_q8_0_q8_0_zmm },
    { GGML_TYPE_Q5_0, NULL, vec_dot_q5_0_q8_0_zmm },
    { GGML_TYPE_IQ4_NL, NULL, vec_dot_iq4_nl_q8_0_zmm },
    { GGML_TYPE_Q4_K, NULL, vec_dot_q4_K_q8_K_zmm },
    { GGML_TYPE_Q6_K, NULL, vec_dot_q6_K_q8_K_zmm },
    { GGML_TYPE_IQ2_S, NULL, vec_dot_iq2_s_q8_K_zmm },
};

#    if defined(__clang__)
#        pragma clang attribute pop
#    else
#        pragma GCC pop_options
#    endif

/*
 * With AVX-512 VBMI (most AVX-512 CPUs but the first ones), byte permutes pick the eight blocks'
 * scales out of whole-vector loads instead of eight word inserts each: about 10% more for Q4_0.
 * Targeted on their own, outside the region above, and installed only where the CPU has VBMI.
 */
#    define QDOT_VBMI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

/* the halves at the start of eight 18-byte blocks (Q4_0): bytes 0-127 hold them all */
QDOT_VBMI static inline __m128i halves8_stride18(const uint8_t * p) {
    static const uint8_t k[64] = { 0, 1, 18, 19, 36, 37, 54, 55, 72, 73, 90, 91, 108, 109, 126, 127 };
    return _mm512_castsi512_si128(_mm512_permutex2var_epi8(_mm512_loadu_si512(p), _mm512_loadu_si512(k), _mm512_loadu_si512(p + 64)));
}

/* the same for 34-byte blocks (Q8_0): four in bytes 0-101, four at 8 + 34 k of bytes 128-255 */
QDOT_VBMI static inline __m128i halves8_stride34(const uint8_t * p) {
    static const uint8_t k[64] = { 0, 1, 34, 35, 68, 69, 102, 103, 8, 9, 42, 43, 76, 77, 110, 111 };
    const __m512i        idx = _mm512_loadu_si512(k);
    const __m512i        lo  = _mm512_permutex2var_epi8(_mm512_loadu_si512(p), idx, _mm512_loadu_si512(p + 64));
    const __m512i        hi  = _mm512_permutex2var_epi8(_mm512_loadu_si512(p + 128), idx, _mm512_loadu_si512(p + 192));
    return _mm_unpacklo_epi64(_mm512_castsi512_si128(lo), _mm_srli_si128(_mm512_castsi512_si128(hi), 8));
}

QDOT_VBMI static inline __m256 scales8_q4_0_vbmi(const void * xb, const void * yb) {
    return _mm256_mul_ps(_mm256_cvtph_ps(halves8_stride18(xb)), _mm256_cvtph_ps(halves8_stride34(yb)));
}

QDOT_VBMI static inline __m256 scales8_q8_0_vbmi(const void * xb, const void * yb) {
    return _mm256_mul_ps(_mm256_cvtph_ps(halves8_stride34(xb)), _mm256_cvtph_ps(halves8_stride34(yb)));
}

QDOT_VBMI QDOT_PAIRS_KERNEL(vec_dot_q4_0_q8_0_vbmi, block_q4_0, q4_0_pair, scales8_q4_0_vbmi, vec_dot_q4_0_q8_0_avx512)
QDOT_VBMI QDOT_PAIRS_KERNEL(vec_dot_q8_0_q8_0_vbmi, block_q8_0, q8_0_pair, scales8_q8_0_vbmi, vec_dot_q8_0_q8_0_avx512)
/* IQ4_NL blocks are Q4_0's size: the same scale positions */
QDOT_VBMI QDOT_PAIRS_KERNEL(vec_dot_iq4_nl_q8_0_vbmi, block_iq4_nl, iq4_nl_pair, scales8_q4_0_vbmi, vec_dot_iq4_nl_q8_0_avx512)

static const struct ggmlx_qdot_entry entries_vbmi[] = {
    { GGML_TYPE_Q4_0, NULL, vec_dot_q4_0_q8_0_vbmi },
    { GGML_TYPE_Q8_0, NULL, vec_dot_q8_0_q8_0_vbmi },
    { GGML_TYPE_IQ4_NL, NULL, vec_dot_iq4_nl_q8_0_vbmi },
};

void ggmlx_qdot_fill_avx512_base(ggmlx_qdot_table t) {
    ggmlx_qdot_apply(t, entries_avx512, sizeof(entries_avx512) / sizeof(entries_avx512[0]));
    ggmlx_qdot_apply(t, iq_entries_avx512, sizeof(iq_entries_avx512) / sizeof(iq_entries_avx512[0]));
    ggmlx_qdot_apply(t, lowbit_entries_avx512, sizeof(lowbit_entries_avx512) / sizeof(lowbit_entries_avx512[0]));
    ggmlx_qdot_apply(t, entries_zmm, sizeof(entries_zmm) / sizeof(entries_zmm[0]));
}

void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) {
    ggmlx_qdot_fill_avx512_base(t);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vbmi")) {
        ggmlx_qdot_apply(t, entries_vbmi, sizeof(entries_vbmi) / sizeof(entries_vbmi[0]));
    }
}
#else
void ggmlx_qdot_fill_avx512_base(ggmlx_qdot_table t) { (void)t; }
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { (void)t; }
#endif
