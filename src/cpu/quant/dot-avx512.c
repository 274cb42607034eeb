/*
 * dot-avx512.c -- the x86 kernels of dot-x86.h compiled for AVX-512 (F, BW, VL, VNNI), whose
 * vpdpbusd does each byte dot product in one instruction; 512-bit kernels of the legacy, K-quant,
 * IQ4 and FP4 types; with VBMI, kernels that gather four blocks per vector by byte permutes, and
 * the matrix-vector kernels (several weight rows per pass over the activations). Chosen at run
 * time only where the CPU has these (quant-traits-cpu.c).
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
 * The 32-element formats on 512-bit vectors, so that each instruction does twice the work of the
 * shared 256-bit kernels: two blocks in a vector, eight per iteration; for Q4_0 the sum of
 * products of the unsigned nibbles and y, less 8 times the sum of y (a second vpdpbusd), is the
 * signed sum (Q5_0 and the codebook formats likewise, with their own offsets).
 */
/*
 * The products of the block scales, eight blocks at a time: their halves gathered into one
 * vector and converted together (converting each alone cost more than the byte dot products).
 */
#    define QDOT_HALVES8(b, f)                                                                                     \
        _mm_setr_epi16((short)(b)[0].f, (short)(b)[1].f, (short)(b)[2].f, (short)(b)[3].f, (short)(b)[4].f,         \
                       (short)(b)[5].f, (short)(b)[6].f, (short)(b)[7].f)
#    define QDOT_SCALES8(xb, yb) _mm256_mul_ps(_mm256_cvtph_ps(QDOT_HALVES8(xb, d)), _mm256_cvtph_ps(QDOT_HALVES8(yb, d)))

/* MXFP4's eight E8M0 scales, halved (2^(e - 128), a subnormal below e = 2), times the activations' */
static inline __m256 scales8_mxfp4(const block_mxfp4 * x, const block_q8_0 * y) {
    const __m256i e     = _mm256_setr_epi32(x[0].e, x[1].e, x[2].e, x[3].e, x[4].e, x[5].e, x[6].e, x[7].e);
    const __m256i big   = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    const __m256i bits  = _mm256_blendv_epi8(big, small, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e));
    return _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_cvtph_ps(QDOT_HALVES8(y, d)));
}

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

/* the pair's 64 fifth bits, in the element order of nibbles_pair: a byte mask */
static inline __mmask64 qh_pair(const uint8_t * qh0, const uint8_t * qh1) {
    uint32_t a, b;
    memcpy(&a, qh0, sizeof(a));
    memcpy(&b, qh1, sizeof(b));
    return _cvtu64_mask64((uint64_t)a | ((uint64_t)b << 32));
}

static inline __m512i q5_0_pair(const block_q5_0 * x, const block_q8_0 * y) {
    const __m512i n  = nibbles_pair(x[0].qs, x[1].qs);
    const __m512i v  = _mm512_mask_add_epi8(n, qh_pair(x[0].qh, x[1].qh), n, _mm512_set1_epi8(16));
    const __m512i yv = y_pair(y);
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), v, yv),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(16), yv));
}

static inline __m512i q8_0_pair(const block_q8_0 * x, const block_q8_0 * y) {
    return dot_ss_zmm(y_pair(x), y_pair(y)); /* x has the same layout as y */
}

static inline __m512i y_pair_q8_1(const block_q8_1 * y) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[0].qs)),
                              _mm256_loadu_si256((const __m256i *)y[1].qs), 1);
}

/* Q4_1 / Q5_1 quants are unsigned: the minimum comes in through the activations' sums (MINS8) */
static inline __m512i q4_1_pair(const block_q4_1 * x, const block_q8_1 * y) {
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles_pair(x[0].qs, x[1].qs), y_pair_q8_1(y));
}

static inline __m512i q5_1_pair(const block_q5_1 * x, const block_q8_1 * y) {
    const __m512i n = nibbles_pair(x[0].qs, x[1].qs);
    const __m512i v = _mm512_mask_add_epi8(n, qh_pair(x[0].qh, x[1].qh), n, _mm512_set1_epi8(16));
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, y_pair_q8_1(y));
}

/*
 * Codebook formats: the 16 signed values plus `off` (so that they are unsigned bytes) picked by
 * the nibbles, times y, less off times the sum of y: one vpdpbusd more instead of the sign
 * handling of signed x signed (three instructions).
 */
static inline __m512i lut_dot_zmm(__m512i lut_u, __m512i off, __m512i nib, __m512i yv) {
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_shuffle_epi8(lut_u, nib), yv),
                            _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, yv));
}

static inline __m512i lut_offset(const int8_t * lut, int off) {
    return _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)lut)), _mm512_set1_epi8((char)off));
}

static inline __m512i iq4_nl_pair(const block_iq4_nl * x, const block_q8_0 * y) {
    return lut_dot_zmm(lut_offset(ggmlx_kvalues_iq4nl, 128), _mm512_set1_epi8((char)128), nibbles_pair(x[0].qs, x[1].qs),
                       y_pair(y));
}

static inline __m512i mxfp4_pair(const block_mxfp4 * x, const block_q8_0 * y) {
    return lut_dot_zmm(lut_offset(ggmlx_kvalues_fp4, 16), _mm512_set1_epi8(16), nibbles_pair(x[0].qs, x[1].qs), y_pair(y));
}

/* the products of the minima of eight Q4_1 / Q5_1 blocks and their activations' scaled sums */
#    define QDOT_MINS8(xb, yb) _mm256_mul_ps(_mm256_cvtph_ps(QDOT_HALVES8(xb, m)), _mm256_cvtph_ps(QDOT_HALVES8(yb, s)))
#    define QDOT_NO_MINS8(xb, yb) _mm256_setzero_ps()

/*
 * Eight blocks per iteration: four pairs, each pair's sums scaled by its two scales (lanes 0-7 and
 * 8-15 of a permute of the eight products); what is left goes to the 256-bit kernel. MINS8 adds
 * the formats' offset terms (minimum times the activations' sum), eight at a time.
 */
#    define QDOT_PAIRS_KERNEL_Y(name, block_t, yblock_t, PAIR, SCALES8, MINS8, tail_fn)                          \
        static void name(GGMLX_VEC_DOT_ARGS) {                                                                   \
            GGMLX_VEC_DOT_UNUSED;                                                                                \
            const block_t * restrict  x    = vx;                                                                 \
            const yblock_t * restrict y    = vy;                                                                 \
            const int                 nb   = n / QK8_0;                                                          \
            __m512                    acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();                    \
            __m256                    accm = _mm256_setzero_ps();                                                \
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
                accm = _mm256_add_ps(accm, MINS8(x + i, y + i));                                                 \
            }                                                                                                    \
            float tail = 0.0f;                                                                                   \
            if (i < nb) {                                                                                        \
                tail_fn(n - i * QK8_0, &tail, bs, x + i, bx, y + i, by, nrc);                                    \
            }                                                                                                    \
            *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_zextps256_ps512(accm))) +  \
                 tail;                                                                                           \
        }
#    define QDOT_PAIRS_KERNEL(name, block_t, PAIR, SCALES8, tail_fn)                                             \
        QDOT_PAIRS_KERNEL_Y(name, block_t, block_q8_0, PAIR, SCALES8, QDOT_NO_MINS8, tail_fn)

QDOT_PAIRS_KERNEL(vec_dot_q4_0_q8_0_zmm, block_q4_0, q4_0_pair, QDOT_SCALES8, vec_dot_q4_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_q8_0_q8_0_zmm, block_q8_0, q8_0_pair, QDOT_SCALES8, vec_dot_q8_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_q5_0_q8_0_zmm, block_q5_0, q5_0_pair, QDOT_SCALES8, vec_dot_q5_0_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_iq4_nl_q8_0_zmm, block_iq4_nl, iq4_nl_pair, QDOT_SCALES8, vec_dot_iq4_nl_q8_0_avx512)
QDOT_PAIRS_KERNEL(vec_dot_mxfp4_q8_0_zmm, block_mxfp4, mxfp4_pair, scales8_mxfp4, vec_dot_mxfp4_q8_0_avx512)
QDOT_PAIRS_KERNEL_Y(vec_dot_q4_1_q8_1_zmm, block_q4_1, block_q8_1, q4_1_pair, QDOT_SCALES8, QDOT_MINS8,
                    vec_dot_q4_1_q8_1_avx512)
QDOT_PAIRS_KERNEL_Y(vec_dot_q5_1_q8_1_zmm, block_q5_1, block_q8_1, q5_1_pair, QDOT_SCALES8, QDOT_MINS8,
                    vec_dot_q5_1_q8_1_avx512)

/* word index vector: word w takes scale `first + w / per` */
static inline __m512i scale_index(int first, int per) {
    int16_t idx[32];
    for (int w = 0; w < 32; w++) {
        idx[w] = (int16_t)(first + w / per);
    }
    return _mm512_loadu_si512(idx);
}

/*
 * Q4_K / Q5_K: a 64-element chunk (two sub-blocks: the low and the high nibbles of 32 bytes)
 * fills one vector; its two scales reach their 16 words each through one word permute. Q5_K's
 * fifth bits (bit 2c of qh[j] for the low half of chunk c, 2c + 1 for the high) are rotated to
 * bit 4 of their byte, each half of the vector by its own count.
 */
static inline void q45_K_zmm(int n, float * s, const void * vx, const void * vy, bool five) {
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const size_t                bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const __m512i               m4  = _mm512_set1_epi8(15);
    const __m512i               ix[4] = { scale_index(0, 16), scale_index(2, 16), scale_index(4, 16), scale_index(6, 16) };
    const __m512i               nib_shift = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
    __m512                      acc = _mm512_setzero_ps();
    __m256                      accm = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const uint8_t * blk = (const uint8_t *)vx + (size_t)i * bsz;
        const uint8_t * qs  = five ? ((const block_q5_K *)blk)->qs : ((const block_q4_K *)blk)->qs;
        ggmlx_half      d, dmin;
        memcpy(&d, blk, sizeof(d));
        memcpy(&dmin, blk + 2, sizeof(dmin));
        __m128i sc8, mn;
        QX(k4_scale_min)(blk + 4, &sc8, &mn);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sc8));
        __m512i       hb   = _mm512_setzero_si512();
        if (five) {
            hb = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh));
        }
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            /* broadcast from memory, the high half shifted by 4: the low then the high nibbles */
            const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * c)));
            __m512i       v = _mm512_and_si512(_mm512_srlv_epi64(q, nib_shift), m4);
            if (five) {
                const long long rl = (4 - 2 * c) & 63, rh = (3 - 2 * c) & 63;
                const __m512i   r  = _mm512_set_epi64(rh, rh, rh, rh, rl, rl, rl, rl);
                v = _mm512_or_si512(v, _mm512_and_si512(_mm512_rolv_epi64(hb, r), _mm512_set1_epi8(16)));
            }
            const __m512i p = _mm512_maddubs_epi16(v, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi            = _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi16(ix[c], sc16));
        }
        const float   dy   = y[i].d;
        /* the minima times the 32-element sums of y (pairs of bsums) */
        const __m256i b    = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[i].bsums), _mm256_set1_epi16(1));
        const __m256i mins = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(mn), b);
        acc  = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(d) * dy), acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(_cvtsh_ss(dmin) * dy), accm);
    }
    *s = _mm512_reduce_add_ps(_mm512_sub_ps(acc, _mm512_zextps256_ps512(accm)));
}

static void vec_dot_q4_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    q45_K_zmm(n, s, vx, vy, false);
}

static void vec_dot_q5_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    q45_K_zmm(n, s, vx, vy, true);
}

/*
 * Q2_K / Q3_K: 32 bytes of qs hold four 32-element chunks (bit pairs 0-3); a vector takes two
 * chunks, 64 consecutive elements, from the 32 bytes broadcast to both halves and shifted by a
 * count per half. Q3_K's third bit (bit 4h + k of hmask[j]) is rotated to bit 2 the same way.
 */
static inline __m512i shift_pair(int lo, int hi) {
    return _mm512_set_epi64(hi, hi, hi, hi, lo, lo, lo, lo);
}

static void vec_dot_q2_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q2_K * restrict x    = vx;
    const block_q8_K * restrict y    = vy;
    const int                   nb   = n / QK_K;
    const __m512i               m3   = _mm512_set1_epi8(3);
    const __m512i               sh[2] = { shift_pair(0, 2), shift_pair(4, 6) };
    const __m512i               ix[4] = { scale_index(0, 8), scale_index(4, 8), scale_index(8, 8), scale_index(12, 8) };
    __m512                      acc  = _mm512_setzero_ps();
    __m256                      accm = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m128i sc   = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sc, _mm_set1_epi8(15))));
        const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15)));
        __m512i       sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m512i q = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * (c / 2))));
            const __m512i u = _mm512_and_si512(_mm512_srlv_epi64(q, sh[c % 2]), m3);
            const __m512i p = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi            = _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi16(ix[c], sc16));
        }
        const __m256i mins = _mm256_madd_epi16(mn16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        acc  = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(x[i].d) * y[i].d), acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(_cvtsh_ss(x[i].dmin) * y[i].d), accm);
    }
    *s = _mm512_reduce_add_ps(_mm512_sub_ps(acc, _mm512_zextps256_ps512(accm)));
}

static void vec_dot_q3_K_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q3_K * restrict x    = vx;
    const block_q8_K * restrict y    = vy;
    const int                   nb   = n / QK_K;
    const __m512i               m3   = _mm512_set1_epi8(3);
    const __m512i               b2   = _mm512_set1_epi8(4);
    const __m512i               sh[2] = { shift_pair(0, 2), shift_pair(4, 6) };
    /* hmask bit 4h + k to bit 2: chunk pair c has k = 2 (c % 2) and one more, h = c / 2 */
    const __m512i rot[4] = { shift_pair(2, 1), shift_pair(0, 63), shift_pair(62, 61), shift_pair(60, 59) };
    const __m512i ix[4]  = { scale_index(0, 8), scale_index(4, 8), scale_index(8, 8), scale_index(12, 8) };
    __m512        acc    = _mm512_setzero_ps();
    for (int i = 0; i < nb; i++) {
        uint32_t a[3], w[4];
        memcpy(a, x[i].scales, sizeof(a));
        w[0] = (a[0] & 0x0f0f0f0fu) | ((a[2] & 0x03030303u) << 4);
        w[1] = (a[1] & 0x0f0f0f0fu) | (((a[2] >> 2) & 0x03030303u) << 4);
        w[2] = ((a[0] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 4) & 0x03030303u) << 4);
        w[3] = ((a[1] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 6) & 0x03030303u) << 4);
        const __m128i sc8  = _mm_sub_epi8(_mm_set_epi32((int)w[3], (int)w[2], (int)w[1], (int)w[0]), _mm_set1_epi8(32));
        const __m256i s16  = _mm256_cvtepi8_epi16(sc8);
        const __m512i sc16 = _mm512_castsi256_si512(s16);
        const __m512i hm   = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x[i].hmask));
        /* the quants are stored + 4: take 4 * sum(scale * block sum) back off, in the vector */
        __m512i sumi = _mm512_zextsi256_si512(
            _mm256_slli_epi32(_mm256_madd_epi16(s16, _mm256_loadu_si256((const __m256i *)y[i].bsums)), 2));
        sumi = _mm512_sub_epi32(_mm512_setzero_si512(), sumi);
        for (int c = 0; c < 4; c++) {
            const __m512i q  = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * (c / 2))));
            const __m512i hb = _mm512_and_si512(_mm512_rolv_epi64(hm, rot[c]), b2);
            const __m512i u  = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi64(q, sh[c % 2]), m3), hb);
            const __m512i p  = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[i].qs + 64 * c));
            sumi             = _mm512_dpwssd_epi32(sumi, p, _mm512_permutexvar_epi16(ix[c], sc16));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(x[i].d) * y[i].d), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/*
 * IQ4_XS: two 32-element sub-blocks per vector (their 16 bytes of nibbles in element order as
 * for Q4_0), codebook values + 128 times y by vpdpbusd; each lane's sum times its sub-block's
 * scale, and the 128 times the sums of y (from bsums) taken off once per block.
 */
static void vec_dot_iq4_xs_q8_K_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq4_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    const __m512i                 lut = lut_offset(ggmlx_kvalues_iq4nl, 128);
    const __m256i                 shl = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i                 shh = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m512                        acc = _mm512_setzero_ps();
    for (int i = 0; i < nb; i++) {
        uint32_t sl;
        memcpy(&sl, x[i].scales_l, sizeof(sl));
        const __m256i lo  = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)sl), shl), _mm256_set1_epi32(15));
        const __m256i hi  = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[i].scales_h), shh), _mm256_set1_epi32(3));
        const __m256i ls  = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        const __m512i ls2 = _mm512_castsi256_si512(ls);
        const __m256i sy  = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[i].bsums), _mm256_set1_epi16(1));
        __m512i       sumi = _mm512_zextsi256_si512(_mm256_slli_epi32(_mm256_mullo_epi32(ls, sy), 7));
        sumi               = _mm512_sub_epi32(_mm512_setzero_si512(), sumi);
        for (int p = 0; p < 4; p++) {
            const __m512i v = _mm512_shuffle_epi8(lut, nibbles_pair(x[i].qs + 32 * p, x[i].qs + 32 * p + 16));
            const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), v, _mm512_loadu_si512(y[i].qs + 64 * p));
            sumi            = _mm512_add_epi32(sumi, _mm512_mullo_epi32(d, _mm512_permutexvar_epi32(pair_index(p), ls2)));
        }
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(_cvtsh_ss(x[i].d) * y[i].d), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}

/*
 * NVFP4's eight UE4M3 scales of two blocks, decoded in a vector as ggmlx_ue4m3_to_fp32 does one:
 * normal codes from their bits (exponent + 119, halved), subnormal ones as the code with exponent
 * 1 less 2^-7, and the NaN code 0x7F as 0.
 */
static inline __m256 ue4m3x8(const uint8_t * d0, const uint8_t * d1) {
    uint32_t a, b;
    memcpy(&a, d0, sizeof(a));
    memcpy(&b, d1, sizeof(b));
    const __m256i u    = _mm256_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi32_si128((int)a), (int)b, 1));
    const __m256i sub  = _mm256_cmpeq_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x78)), _mm256_setzero_si256());
    const __m256i nan  = _mm256_cmpeq_epi32(u, _mm256_set1_epi32(0x7f));
    __m256i       bits = _mm256_add_epi32(_mm256_slli_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7f)), 20),
                                          _mm256_set1_epi32(119 << 23));
    bits               = _mm256_add_epi32(bits, _mm256_and_si256(sub, _mm256_set1_epi32(1 << 23)));
    const __m256 f     = _mm256_sub_ps(_mm256_castsi256_ps(bits), _mm256_and_ps(_mm256_castsi256_ps(sub), _mm256_set1_ps(0.0078125f)));
    return _mm256_andnot_ps(_mm256_castsi256_ps(nan), f);
}

/* NVFP4: one 64-element block per vector, its four 16-element sub-blocks (8 bytes: low nibbles
 * j, high j + 8) put in element order by a qword permute; two blocks a step for the scales */
static inline __m512i nvfp4_block(const block_nvfp4 * x, const block_q8_0 * y, __m512i lut) {
    const __m256i q   = _mm256_loadu_si256((const __m256i *)x->qs);
    const __m512i v   = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1),
                                         _mm512_set1_epi8(15));
    const __m512i ord = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), v);
    return lut_dot_zmm(lut, _mm512_set1_epi8(16), ord, y_pair(y));
}

static void vec_dot_nvfp4_q8_0_zmm(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_nvfp4 * restrict x    = vx;
    const block_q8_0 * restrict  y    = vy;
    const int                    nb   = n / QK_NVFP4;
    const __m512i                lut  = lut_offset(ggmlx_kvalues_fp4, 16);
    const __m512i                ix0  = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i                ix1  = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    __m512                       acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int                          i    = 0;
    for (; i + 1 < nb; i += 2) {
        const block_q8_0 * yb = y + 2 * i;
        const __m128i dy = _mm_setr_epi16((short)yb[0].d, (short)yb[0].d, (short)yb[1].d, (short)yb[1].d, (short)yb[2].d,
                                          (short)yb[2].d, (short)yb[3].d, (short)yb[3].d);
        const __m512  sc = _mm512_castps256_ps512(_mm256_mul_ps(ue4m3x8(x[i].d, x[i + 1].d), _mm256_cvtph_ps(dy)));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(nvfp4_block(x + i, yb, lut)), _mm512_permutexvar_ps(ix0, sc), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(nvfp4_block(x + i + 1, yb + 2, lut)), _mm512_permutexvar_ps(ix1, sc), acc1);
    }
    float tail = 0.0f;
    if (i < nb) {
        vec_dot_nvfp4_q8_0_avx512(n - i * QK_NVFP4, &tail, bs, x + i, bx, y + 2 * i, by, nrc);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + tail;
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
    const __m512i               qh_shift = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256i s16  = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i sc16 = _mm512_castsi256_si512(s16);
        __m512i       sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m512i l  = _mm512_loadu_si512(x[i].ql + 64 * h);
            const __m512i hh = _mm512_srlv_epi64(_mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h))),
                                                 qh_shift);
            const __m512i a  = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_slli_epi16(_mm512_and_si512(hh, m3), 4));
            const __m512i b  = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                               _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hh, 4), m3), 4));
            const __m512i pa = _mm512_maddubs_epi16(a, _mm512_loadu_si512(y[i].qs + 128 * h));
            const __m512i pb = _mm512_maddubs_epi16(b, _mm512_loadu_si512(y[i].qs + 128 * h + 64));
            sumi = _mm512_dpwssd_epi32(sumi, pa, _mm512_permutexvar_epi16(ix[2 * h], sc16));
            sumi = _mm512_dpwssd_epi32(sumi, pb, _mm512_permutexvar_epi16(ix[2 * h + 1], sc16));
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
    { GGML_TYPE_MXFP4, NULL, vec_dot_mxfp4_q8_0_zmm },
    { GGML_TYPE_Q4_1, NULL, vec_dot_q4_1_q8_1_zmm },
    { GGML_TYPE_Q5_1, NULL, vec_dot_q5_1_q8_1_zmm },
    { GGML_TYPE_Q4_K, NULL, vec_dot_q4_K_q8_K_zmm },
    { GGML_TYPE_Q5_K, NULL, vec_dot_q5_K_q8_K_zmm },
    { GGML_TYPE_Q6_K, NULL, vec_dot_q6_K_q8_K_zmm },
    { GGML_TYPE_Q2_K, NULL, vec_dot_q2_K_q8_K_zmm },
    { GGML_TYPE_Q3_K, NULL, vec_dot_q3_K_q8_K_zmm },
    { GGML_TYPE_IQ4_XS, NULL, vec_dot_iq4_xs_q8_K_zmm },
    { GGML_TYPE_NVFP4, NULL, vec_dot_nvfp4_q8_0_zmm },
    { GGML_TYPE_IQ2_S, NULL, vec_dot_iq2_s_q8_K_zmm },
};

#    if defined(__clang__)
#        pragma clang attribute pop
#    else
#        pragma GCC pop_options
#    endif

#    include "dot-avx512-vbmi.h"

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

void ggmlx_qdot_fill_gemv_avx512(ggmlx_gemv_table g) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("avx2")) {
        g[GGML_TYPE_Q4_0]   = gemv_q4_0_vbmi;
        g[GGML_TYPE_IQ4_NL] = gemv_iq4_nl_vbmi;
        g[GGML_TYPE_Q4_1]   = gemv_q4_1_vbmi;
        g[GGML_TYPE_Q5_1]   = gemv_q5_1_vbmi;
        g[GGML_TYPE_Q5_0]   = gemv_q5_0_vbmi;
        g[GGML_TYPE_MXFP4]  = gemv_mxfp4_vbmi;
    }
}
#else
void ggmlx_qdot_fill_gemv_avx512(ggmlx_gemv_table g) { (void)g; }
void ggmlx_qdot_fill_avx512_base(ggmlx_qdot_table t) { (void)t; }
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { (void)t; }
#endif
