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
};

#    if defined(__clang__)
#        pragma clang attribute pop
#    else
#        pragma GCC pop_options
#    endif

/*
 * With AVX-512 VBMI (most AVX-512 CPUs but the first ones), byte permutes pick the eight blocks'
 * scales (and below, their quants) out of whole-vector loads instead of inserts and unpacking.
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

/*
 * Q4_0 and IQ4_NL with VBMI, eight blocks a step and four per vector: byte permutes gather the 16
 * bytes of nibbles of four 18-byte blocks into one vector, whose low nibbles are elements 0-15 of
 * each block and high nibbles elements 16-31; the activations are gathered to match (elements
 * 0-15 of four blocks, then 16-31). That takes one permute for four blocks' weights instead of
 * the unpacking of each pair, and one vpdpbusd accumulates both halves of a block into the same
 * four lanes.
 */
#    define R16(b) (b), (b) + 1, (b) + 2, (b) + 3, (b) + 4, (b) + 5, (b) + 6, (b) + 7, (b) + 8, (b) + 9, (b) + 10, \
                   (b) + 11, (b) + 12, (b) + 13, (b) + 14, (b) + 15
/* blocks 0-3 from bytes 0-127; blocks 4-7 from bytes 64-127 and 80-143 (nothing past the eighth) */
static const uint8_t k_q4_x03[64] = { R16(2), R16(20), R16(38), R16(56) };
static const uint8_t k_q4_x47[64] = { R16(10), R16(28), R16(46), R16(64 + 48) };
/* Q8_0: elements 0-15 of four 34-byte blocks from bytes 0-127, elements 16-31 from bytes 8-135 */
static const uint8_t k_q8_lo[64] = { R16(2), R16(36), R16(70), R16(104) };
static const uint8_t k_q8_hi[64] = { R16(10), R16(44), R16(78), R16(112) };
#    undef R16

struct quad_idx {
    __m512i x03, x47, ylo, yhi, s03, s47;
};

QDOT_VBMI static inline struct quad_idx quad_idx_load(void) {
    struct quad_idx q;
    q.x03 = _mm512_loadu_si512(k_q4_x03);
    q.x47 = _mm512_loadu_si512(k_q4_x47);
    q.ylo = _mm512_loadu_si512(k_q8_lo);
    q.yhi = _mm512_loadu_si512(k_q8_hi);
    q.s03 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    q.s47 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    return q;
}

/* four blocks' weights (gathered nibbles) times their activations: 4 lanes a block; the values
 * are the nibbles, or (lut) the codebook's plus off; off times the sums of y comes off */
QDOT_VBMI static inline __m512i quad_dot(__m512i q, const uint8_t * yp, const struct quad_idx * ix, bool lut,
                                         __m512i lut_u, __m512i off) {
    const __m512i m4  = _mm512_set1_epi8(15);
    const __m512i ylo = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp), ix->ylo, _mm512_loadu_si512(yp + 64));
    const __m512i yhi = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 8), ix->yhi, _mm512_loadu_si512(yp + 72));
    __m512i       lo  = _mm512_and_si512(q, m4);
    __m512i       hi  = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
    if (lut) {
        lo = _mm512_shuffle_epi8(lut_u, lo);
        hi = _mm512_shuffle_epi8(lut_u, hi);
    }
    const __m512i d = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, ylo), hi, yhi);
    const __m512i c = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo), off, yhi);
    return _mm512_sub_epi32(d, c);
}

QDOT_VBMI static inline float quad_kernel_18(int n, const void * vx, const void * vy, bool lut, __m512i lut_u, __m512i off,
                                             int * done) {
    const uint8_t * restrict xp   = vx;
    const uint8_t * restrict yp   = vy;
    const int                nb   = n / QK8_0;
    const struct quad_idx    ix   = quad_idx_load();
    __m512                   acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int                      i    = 0;
    for (; i + 7 < nb; i += 8, xp += 8 * sizeof(block_q4_0), yp += 8 * sizeof(block_q8_0)) {
        const __m512 sc = _mm512_castps256_ps512(scales8_q4_0_vbmi(xp, yp));
        const __m512i xm = _mm512_loadu_si512(xp + 64);
        const __m512i q0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(xp), ix.x03, xm);
        const __m512i q1 = _mm512_permutex2var_epi8(xm, ix.x47, _mm512_loadu_si512(xp + 80));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(quad_dot(q0, yp, &ix, lut, lut_u, off)), _mm512_permutexvar_ps(ix.s03, sc), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(quad_dot(q1, yp + 4 * sizeof(block_q8_0), &ix, lut, lut_u, off)),
                               _mm512_permutexvar_ps(ix.s47, sc), acc1);
    }
    *done = i;
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

QDOT_VBMI static void vec_dot_q4_0_q8_0_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    int   i;
    float r = quad_kernel_18(n, vx, vy, false, _mm512_setzero_si512(), _mm512_set1_epi8(8), &i);
    if (i < n / QK8_0) {
        float tail;
        vec_dot_q4_0_q8_0_avx512(n - i * QK8_0, &tail, bs, (const block_q4_0 *)vx + i, bx, (const block_q8_0 *)vy + i, by, nrc);
        r += tail;
    }
    *s = r;
}

QDOT_VBMI static void vec_dot_iq4_nl_q8_0_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    int   i;
    float r = quad_kernel_18(n, vx, vy, true, lut_offset(ggmlx_kvalues_iq4nl, 128), _mm512_set1_epi8((char)128), &i);
    if (i < n / QK8_0) {
        float tail;
        vec_dot_iq4_nl_q8_0_avx512(n - i * QK8_0, &tail, bs, (const block_iq4_nl *)vx + i, bx, (const block_q8_0 *)vy + i,
                                   by, nrc);
        r += tail;
    }
    *s = r;
}
QDOT_VBMI QDOT_PAIRS_KERNEL(vec_dot_q8_0_q8_0_vbmi, block_q8_0, q8_0_pair, scales8_q8_0_vbmi, vec_dot_q8_0_q8_0_avx512)

/*
 * The matrix-vector form of the two: four weight rows per pass over the activations, so that the
 * activations' permutes, their offset sums and their scales are done once for four rows.
 */
QDOT_VBMI static inline void gemv4_18(int n, float * s, const uint8_t * x, size_t bx, const uint8_t * y, bool lut,
                                      __m512i lut_u, __m512i off) {
    const int             nb = n / QK8_0;
    const struct quad_idx ix = quad_idx_load();
    const __m512i         m4 = _mm512_set1_epi8(15);
    __m512                acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    int                   i = 0;
    for (; i + 7 < nb; i += 8) {
        const uint8_t * yp   = y + (size_t)i * sizeof(block_q8_0);
        const __m512i   ylo0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp), ix.ylo, _mm512_loadu_si512(yp + 64));
        const __m512i   yhi0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 8), ix.yhi, _mm512_loadu_si512(yp + 72));
        const __m512i   ylo1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 136), ix.ylo, _mm512_loadu_si512(yp + 200));
        const __m512i   yhi1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 144), ix.yhi, _mm512_loadu_si512(yp + 208));
        const __m512i   c0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo0), off, yhi0);
        const __m512i   c1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo1), off, yhi1);
        const __m256    dy = _mm256_cvtph_ps(halves8_stride34(yp));
        for (int r = 0; r < 4; r++) {
            const uint8_t * xp = x + (size_t)r * bx + (size_t)i * sizeof(block_q4_0);
            const __m512    sc = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtph_ps(halves8_stride18(xp)), dy));
            const __m512i   xm = _mm512_loadu_si512(xp + 64);
            const __m512i   q0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(xp), ix.x03, xm);
            const __m512i   q1 = _mm512_permutex2var_epi8(xm, ix.x47, _mm512_loadu_si512(xp + 80));
            __m512i lo0 = _mm512_and_si512(q0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);
            __m512i lo1 = _mm512_and_si512(q1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);
            if (lut) {
                lo0 = _mm512_shuffle_epi8(lut_u, lo0);
                hi0 = _mm512_shuffle_epi8(lut_u, hi0);
                lo1 = _mm512_shuffle_epi8(lut_u, lo1);
                hi1 = _mm512_shuffle_epi8(lut_u, hi1);
            }
            const __m512i d0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo0, ylo0), hi0, yhi0);
            const __m512i d1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo1, ylo1), hi1, yhi1);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d0, c0)), _mm512_permutexvar_ps(ix.s03, sc), acc[r]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d1, c1)), _mm512_permutexvar_ps(ix.s47, sc), acc[r]);
        }
    }
    for (int r = 0; r < 4; r++) {
        s[r] = _mm512_reduce_add_ps(acc[r]);
    }
    if (i < nb) {
        for (int r = 0; r < 4; r++) {
            float tail;
            const void * xr = x + (size_t)r * bx + (size_t)i * sizeof(block_q4_0);
            const void * yr = y + (size_t)i * sizeof(block_q8_0);
            if (lut) {
                vec_dot_iq4_nl_q8_0_avx512(n - i * QK8_0, &tail, 0, xr, 0, yr, 0, 1);
            } else {
                vec_dot_q4_0_q8_0_avx512(n - i * QK8_0, &tail, 0, xr, 0, yr, 0, 1);
            }
            s[r] += tail;
        }
    }
}

QDOT_VBMI static void gemv_q4_0_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                     const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        gemv4_18(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, false, _mm512_setzero_si512(), _mm512_set1_epi8(8));
    }
    for (; r < nr; r++) {
        vec_dot_q4_0_q8_0_vbmi(n, s + r, 0, (const uint8_t *)vx + (size_t)r * bx, 0, vy, 0, 1);
    }
}

QDOT_VBMI static void gemv_iq4_nl_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                       const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        gemv4_18(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, true, lut_offset(ggmlx_kvalues_iq4nl, 128),
                 _mm512_set1_epi8((char)128));
    }
    for (; r < nr; r++) {
        vec_dot_iq4_nl_q8_0_vbmi(n, s + r, 0, (const uint8_t *)vx + (size_t)r * bx, 0, vy, 0, 1);
    }
}

/*
 * Q4_1 and Q5_1 (with Q8_1) the same way: four blocks per vector, gathered by byte permutes, and
 * 1 to 4 weight rows per pass over the activations (1 for vec_dot, 4 for the matrix-vector
 * kernel). Their quants are unsigned, so there is no offset to take off; the minima meet the
 * activations' stored sums, eight blocks at a time. Q5_1's fifth bits become byte masks: bits
 * 0-15 of each block's qh for its elements 0-15, bits 16-31 for 16-31.
 */
#    define R16(b) (b), (b) + 1, (b) + 2, (b) + 3, (b) + 4, (b) + 5, (b) + 6, (b) + 7, (b) + 8, (b) + 9, (b) + 10, \
                   (b) + 11, (b) + 12, (b) + 13, (b) + 14, (b) + 15
/* the nibbles of blocks 0-3 from bytes 0-127, of blocks 4-7 from two loads that end at the
 * eighth block's end (a block's 16 bytes never straddle the two) */
static const uint8_t k_q41_x03[64] = { R16(4), R16(24), R16(44), R16(64) };
static const uint8_t k_q41_x47[64] = { R16(4), R16(24), R16(44), R16(64 + 48) }; /* bytes 80-143, 96-159 */
static const uint8_t k_q51_x03[64] = { R16(8), R16(32), R16(56), R16(80) };
static const uint8_t k_q51_x47[64] = { R16(40), R16(64), R16(88), R16(112) };     /* bytes 64-191 */
/* Q8_1: elements 0-15 of four blocks from bytes 0-127, elements 16-31 from bytes 16-143 */
static const uint8_t k_q81_y[64]   = { R16(4), R16(40), R16(76), R16(112) };
#    undef R16
/* d then m of blocks 0-3 (from the loads at 0 and 64) and of blocks 4-7 (from the two q47 loads) */
static const uint8_t k_q41_dm03[64] = { 0, 1, 20, 21, 40, 41, 60, 61, 2, 3, 22, 23, 42, 43, 62, 63 };
static const uint8_t k_q41_dm47[64] = { 0, 1, 20, 21, 40, 41, 108, 109, 2, 3, 22, 23, 42, 43, 110, 111 };
/* Q5_1: bytes 16-31 take the fifth bits, the low halves of the four qh words then the high ones */
static const uint8_t k_q51_dm03[64] = { 0,  1,  24, 25, 48, 49, 72, 73, 2,  3,  26, 27, 50, 51, 74, 75,
                                        4,  5,  28, 29, 52, 53, 76, 77, 6,  7,  30, 31, 54, 55, 78, 79 };
static const uint8_t k_q51_dm47[64] = { 32, 33, 56, 57, 80,  81,  104, 105, 34, 35, 58, 59, 82,  83,  106, 107,
                                        36, 37, 60, 61, 84,  85,  108, 109, 38, 39, 62, 63, 86,  87,  110, 111 };
/* Q8_1's d then s of four blocks, from its loads at 0 and 64 (and at 144 and 208) */
static const uint8_t k_q81_ds[64]   = { 0, 1, 36, 37, 72, 73, 108, 109, 2, 3, 38, 39, 74, 75, 110, 111 };

QDOT_VBMI static inline void rows_q8_1_family(int n, float * s, const uint8_t * x, size_t bx, const uint8_t * y, int R,
                                              bool five) {
    const size_t  xs  = five ? sizeof(block_q5_1) : sizeof(block_q4_1);
    const size_t  a47 = five ? 64 : 80, b47 = five ? 128 : 96; /* the loads of blocks 4-7 */
    const int     nb  = n / QK8_1;
    const __m512i ix03 = _mm512_loadu_si512(five ? k_q51_x03 : k_q41_x03);
    const __m512i ix47 = _mm512_loadu_si512(five ? k_q51_x47 : k_q41_x47);
    const __m512i idm03 = _mm512_loadu_si512(five ? k_q51_dm03 : k_q41_dm03);
    const __m512i idm47 = _mm512_loadu_si512(five ? k_q51_dm47 : k_q41_dm47);
    const __m512i iy  = _mm512_loadu_si512(k_q81_y);
    const __m512i ids = _mm512_loadu_si512(k_q81_ds);
    const __m512i s03 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i s47 = _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m512i m4  = _mm512_set1_epi8(15);
    const __m512i b4  = _mm512_set1_epi8(16);
    __m512        acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    __m256        accm[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    int           i = 0;
    for (; i + 7 < nb; i += 8) {
        const uint8_t * yp  = y + (size_t)i * sizeof(block_q8_1);
        const __m512i   y0  = _mm512_loadu_si512(yp), y1 = _mm512_loadu_si512(yp + 64);
        const __m512i   y4  = _mm512_loadu_si512(yp + 144), y5 = _mm512_loadu_si512(yp + 208);
        const __m512i   ylo0 = _mm512_permutex2var_epi8(y0, iy, y1);
        const __m512i   yhi0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 16), iy, _mm512_loadu_si512(yp + 80));
        const __m512i   ylo1 = _mm512_permutex2var_epi8(y4, iy, y5);
        const __m512i   yhi1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 160), iy, _mm512_loadu_si512(yp + 224));
        const __m128i   ds03 = _mm512_castsi512_si128(_mm512_permutex2var_epi8(y0, ids, y1));
        const __m128i   ds47 = _mm512_castsi512_si128(_mm512_permutex2var_epi8(y4, ids, y5));
        const __m256    dy   = _mm256_cvtph_ps(_mm_unpacklo_epi64(ds03, ds47));
        const __m256    sy   = _mm256_cvtph_ps(_mm_unpackhi_epi64(ds03, ds47));
        for (int r = 0; r < R; r++) {
            const uint8_t * xp = x + (size_t)r * bx + (size_t)i * xs;
            const __m512i   xa = _mm512_loadu_si512(xp), xb = _mm512_loadu_si512(xp + 64);
            const __m512i   xc = _mm512_loadu_si512(xp + a47), xd = _mm512_loadu_si512(xp + b47);
            const __m512i   p03  = _mm512_permutex2var_epi8(xa, idm03, xb);
            const __m512i   p47  = _mm512_permutex2var_epi8(xc, idm47, xd);
            const __m128i   dm03 = _mm512_castsi512_si128(p03), dm47 = _mm512_castsi512_si128(p47);
            const __m512    sc   = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtph_ps(_mm_unpacklo_epi64(dm03, dm47)), dy));
            accm[r] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_unpackhi_epi64(dm03, dm47)), sy, accm[r]);
            const __m512i q0 = _mm512_permutex2var_epi8(xa, ix03, xb);
            const __m512i q1 = _mm512_permutex2var_epi8(xc, ix47, xd);
            __m512i lo0 = _mm512_and_si512(q0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);
            __m512i lo1 = _mm512_and_si512(q1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);
            if (five) {
                const __m128i h03 = _mm512_extracti32x4_epi32(p03, 1), h47 = _mm512_extracti32x4_epi32(p47, 1);
                lo0 = _mm512_mask_add_epi8(lo0, _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(h03)), lo0, b4);
                hi0 = _mm512_mask_add_epi8(hi0, _cvtu64_mask64((uint64_t)_mm_extract_epi64(h03, 1)), hi0, b4);
                lo1 = _mm512_mask_add_epi8(lo1, _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(h47)), lo1, b4);
                hi1 = _mm512_mask_add_epi8(hi1, _cvtu64_mask64((uint64_t)_mm_extract_epi64(h47, 1)), hi1, b4);
            }
            const __m512i d0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo0, ylo0), hi0, yhi0);
            const __m512i d1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo1, ylo1), hi1, yhi1);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_permutexvar_ps(s03, sc), acc[r]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_permutexvar_ps(s47, sc), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        s[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r], _mm512_zextps256_ps512(accm[r])));
        if (i < nb) {
            float        tail;
            const void * xr = x + (size_t)r * bx + (size_t)i * xs;
            const void * yr = y + (size_t)i * sizeof(block_q8_1);
            if (five) {
                vec_dot_q5_1_q8_1_avx512(n - i * QK8_1, &tail, 0, xr, 0, yr, 0, 1);
            } else {
                vec_dot_q4_1_q8_1_avx512(n - i * QK8_1, &tail, 0, xr, 0, yr, 0, 1);
            }
            s[r] += tail;
        }
    }
}

QDOT_VBMI static void vec_dot_q4_1_q8_1_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    rows_q8_1_family(n, s, vx, 0, vy, 1, false);
}

QDOT_VBMI static void vec_dot_q5_1_q8_1_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    rows_q8_1_family(n, s, vx, 0, vy, 1, true);
}

QDOT_VBMI static void gemv_q4_1_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                     const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        rows_q8_1_family(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 4, false);
    }
    for (; r < nr; r++) {
        rows_q8_1_family(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 1, false);
    }
}

QDOT_VBMI static void gemv_q5_1_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                     const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        rows_q8_1_family(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 4, true);
    }
    for (; r < nr; r++) {
        rows_q8_1_family(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 1, true);
    }
}

/*
 * Q5_0 (22-byte blocks) with Q8_0 the same way, 1 to 4 rows per pass: blocks 4-7 come from two
 * overlapping loads that end at the eighth block's end; the scales and fifth bits (low then high
 * halves of the qh words, bytes 16-31) from the same loads by one permute per four blocks.
 */
#    define R16(b) (b), (b) + 1, (b) + 2, (b) + 3, (b) + 4, (b) + 5, (b) + 6, (b) + 7, (b) + 8, (b) + 9, (b) + 10, \
                   (b) + 11, (b) + 12, (b) + 13, (b) + 14, (b) + 15
static const uint8_t k_q50_x03[64] = { R16(6), R16(28), R16(50), R16(72) };              /* bytes 0-127 */
static const uint8_t k_q50_x47[64] = { R16(30), R16(64 + 4), R16(64 + 26), R16(64 + 48) }; /* 64-127, 112-175 */
#    undef R16
static const uint8_t k_q50_dh03[64] = { 0, 1, 22, 23, 44, 45, 66, 67, 0,  0,  0,  0,  0,  0,  0,  0,
                                        2, 3, 24, 25, 46, 47, 68, 69, 4,  5,  26, 27, 48, 49, 70, 71 };
static const uint8_t k_q50_dh47[64] = { 24, 25, 46, 47, 84, 85, 106, 107, 0,  0,  0,  0,  0,  0,  0,   0,
                                        26, 27, 48, 49, 86, 87, 108, 109, 28, 29, 50, 51, 88, 89, 110, 111 };

QDOT_VBMI static inline void rows_q5_0(int n, float * s, const uint8_t * x, size_t bx, const uint8_t * y, int R) {
    const size_t          xs   = sizeof(block_q5_0);
    const int             nb   = n / QK8_0;
    const struct quad_idx ix   = quad_idx_load();
    const __m512i         ix03 = _mm512_loadu_si512(k_q50_x03), ix47 = _mm512_loadu_si512(k_q50_x47);
    const __m512i         id03 = _mm512_loadu_si512(k_q50_dh03), id47 = _mm512_loadu_si512(k_q50_dh47);
    const __m512i         m4 = _mm512_set1_epi8(15), b4 = _mm512_set1_epi8(16);
    __m512                acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    int                   i = 0;
    for (; i + 7 < nb; i += 8) {
        const uint8_t * yp   = y + (size_t)i * sizeof(block_q8_0);
        const __m512i   ylo0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp), ix.ylo, _mm512_loadu_si512(yp + 64));
        const __m512i   yhi0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 8), ix.yhi, _mm512_loadu_si512(yp + 72));
        const __m512i   ylo1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 136), ix.ylo, _mm512_loadu_si512(yp + 200));
        const __m512i   yhi1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 144), ix.yhi, _mm512_loadu_si512(yp + 208));
        const __m512i   c0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), b4, ylo0), b4, yhi0);
        const __m512i   c1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), b4, ylo1), b4, yhi1);
        const __m256    dy = _mm256_cvtph_ps(halves8_stride34(yp));
        for (int r = 0; r < R; r++) {
            const uint8_t * xp  = x + (size_t)r * bx + (size_t)i * xs;
            const __m512i   xa  = _mm512_loadu_si512(xp), xb = _mm512_loadu_si512(xp + 64), xc = _mm512_loadu_si512(xp + 112);
            const __m512i   p03 = _mm512_permutex2var_epi8(xa, id03, xb);
            const __m512i   p47 = _mm512_permutex2var_epi8(xb, id47, xc);
            const __m256    dx  = _mm256_cvtph_ps(_mm_unpacklo_epi64(_mm512_castsi512_si128(p03), _mm512_castsi512_si128(p47)));
            const __m512    sc  = _mm512_castps256_ps512(_mm256_mul_ps(dx, dy));
            const __m128i   h03 = _mm512_extracti32x4_epi32(p03, 1), h47 = _mm512_extracti32x4_epi32(p47, 1);
            const __m512i   q0  = _mm512_permutex2var_epi8(xa, ix03, xb);
            const __m512i   q1  = _mm512_permutex2var_epi8(xb, ix47, xc);
            __m512i lo0 = _mm512_and_si512(q0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);
            __m512i lo1 = _mm512_and_si512(q1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);
            lo0 = _mm512_mask_add_epi8(lo0, _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(h03)), lo0, b4);
            hi0 = _mm512_mask_add_epi8(hi0, _cvtu64_mask64((uint64_t)_mm_extract_epi64(h03, 1)), hi0, b4);
            lo1 = _mm512_mask_add_epi8(lo1, _cvtu64_mask64((uint64_t)_mm_cvtsi128_si64(h47)), lo1, b4);
            hi1 = _mm512_mask_add_epi8(hi1, _cvtu64_mask64((uint64_t)_mm_extract_epi64(h47, 1)), hi1, b4);
            const __m512i d0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo0, ylo0), hi0, yhi0);
            const __m512i d1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo1, ylo1), hi1, yhi1);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d0, c0)), _mm512_permutexvar_ps(ix.s03, sc), acc[r]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d1, c1)), _mm512_permutexvar_ps(ix.s47, sc), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        s[r] = _mm512_reduce_add_ps(acc[r]);
        if (i < nb) {
            float tail;
            vec_dot_q5_0_q8_0_avx512(n - i * QK8_0, &tail, 0, x + (size_t)r * bx + (size_t)i * xs, 0,
                                     y + (size_t)i * sizeof(block_q8_0), 0, 1);
            s[r] += tail;
        }
    }
}

QDOT_VBMI static void vec_dot_q5_0_q8_0_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    rows_q5_0(n, s, vx, 0, vy, 1);
}

QDOT_VBMI static void gemv_q5_0_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                     const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        rows_q5_0(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 4);
    }
    for (; r < nr; r++) {
        rows_q5_0(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 1);
    }
}

/*
 * MXFP4 (17-byte blocks) the same way, 1 to 4 rows per pass: the codebook values + 16 by nibble,
 * 16 times the sums of y taken off, and the eight E8M0 exponents gathered by one more permute.
 */
#    define R16(b) (b), (b) + 1, (b) + 2, (b) + 3, (b) + 4, (b) + 5, (b) + 6, (b) + 7, (b) + 8, (b) + 9, (b) + 10, \
                   (b) + 11, (b) + 12, (b) + 13, (b) + 14, (b) + 15
static const uint8_t k_mx_x03[64] = { R16(1), R16(18), R16(35), R16(52) };               /* bytes 0-127 */
static const uint8_t k_mx_x47[64] = { R16(5), R16(22), R16(39), R16(64 + 48) };          /* 64-127, 72-135 */
#    undef R16
static const uint8_t k_mx_e[64] = { 0, 17, 34, 51, 64 + 4, 64 + 21, 64 + 38, 64 + 55 };  /* bytes 0-127 */

QDOT_VBMI static inline void rows_mxfp4(int n, float * s, const uint8_t * x, size_t bx, const uint8_t * y, int R) {
    const size_t          xs   = sizeof(block_mxfp4);
    const int             nb   = n / QK_MXFP4;
    const struct quad_idx ix   = quad_idx_load();
    const __m512i         ix03 = _mm512_loadu_si512(k_mx_x03), ix47 = _mm512_loadu_si512(k_mx_x47);
    const __m512i         ie   = _mm512_loadu_si512(k_mx_e);
    const __m512i         lut  = lut_offset(ggmlx_kvalues_fp4, 16);
    const __m512i         m4 = _mm512_set1_epi8(15), off = _mm512_set1_epi8(16);
    __m512                acc[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    int                   i = 0;
    for (; i + 7 < nb; i += 8) {
        const uint8_t * yp   = y + (size_t)i * sizeof(block_q8_0);
        const __m512i   ylo0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp), ix.ylo, _mm512_loadu_si512(yp + 64));
        const __m512i   yhi0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 8), ix.yhi, _mm512_loadu_si512(yp + 72));
        const __m512i   ylo1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 136), ix.ylo, _mm512_loadu_si512(yp + 200));
        const __m512i   yhi1 = _mm512_permutex2var_epi8(_mm512_loadu_si512(yp + 144), ix.yhi, _mm512_loadu_si512(yp + 208));
        const __m512i   c0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo0), off, yhi0);
        const __m512i   c1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), off, ylo1), off, yhi1);
        const __m256    dy = _mm256_cvtph_ps(halves8_stride34(yp));
        for (int r = 0; r < R; r++) {
            const uint8_t * xp = x + (size_t)r * bx + (size_t)i * xs;
            const __m512i   xa = _mm512_loadu_si512(xp), xb = _mm512_loadu_si512(xp + 64), xc = _mm512_loadu_si512(xp + 72);
            /* 2^(e - 128): from the bits (e - 1) << 23, or a subnormal below e = 2 */
            const __m256i e     = _mm256_cvtepu8_epi32(_mm512_castsi512_si128(_mm512_permutex2var_epi8(xa, ie, xb)));
            const __m256i big   = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
            const __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
            const __m256i bits  = _mm256_blendv_epi8(big, small, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e));
            const __m512  sc    = _mm512_castps256_ps512(_mm256_mul_ps(_mm256_castsi256_ps(bits), dy));
            const __m512i q0    = _mm512_permutex2var_epi8(xa, ix03, xb);
            const __m512i q1    = _mm512_permutex2var_epi8(xb, ix47, xc);
            const __m512i lo0 = _mm512_shuffle_epi8(lut, _mm512_and_si512(q0, m4));
            const __m512i hi0 = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4));
            const __m512i lo1 = _mm512_shuffle_epi8(lut, _mm512_and_si512(q1, m4));
            const __m512i hi1 = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4));
            const __m512i d0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo0, ylo0), hi0, yhi0);
            const __m512i d1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo1, ylo1), hi1, yhi1);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d0, c0)), _mm512_permutexvar_ps(ix.s03, sc), acc[r]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(d1, c1)), _mm512_permutexvar_ps(ix.s47, sc), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        s[r] = _mm512_reduce_add_ps(acc[r]);
        if (i < nb) {
            float tail;
            vec_dot_mxfp4_q8_0_avx512(n - i * QK_MXFP4, &tail, 0, x + (size_t)r * bx + (size_t)i * xs, 0,
                                      y + (size_t)i * sizeof(block_q8_0), 0, 1);
            s[r] += tail;
        }
    }
}

QDOT_VBMI static void vec_dot_mxfp4_q8_0_vbmi(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    rows_mxfp4(n, s, vx, 0, vy, 1);
}

QDOT_VBMI static void gemv_mxfp4_vbmi(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                                      const void * restrict vy) {
    int r = 0;
    for (; r + 3 < nr; r += 4) {
        rows_mxfp4(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 4);
    }
    for (; r < nr; r++) {
        rows_mxfp4(n, s + r, (const uint8_t *)vx + (size_t)r * bx, bx, vy, 1);
    }
}

static const struct ggmlx_qdot_entry entries_vbmi[] = {
    { GGML_TYPE_Q4_0, NULL, vec_dot_q4_0_q8_0_vbmi },
    { GGML_TYPE_Q8_0, NULL, vec_dot_q8_0_q8_0_vbmi },
    { GGML_TYPE_IQ4_NL, NULL, vec_dot_iq4_nl_q8_0_vbmi },
    { GGML_TYPE_Q4_1, NULL, vec_dot_q4_1_q8_1_vbmi },
    { GGML_TYPE_Q5_1, NULL, vec_dot_q5_1_q8_1_vbmi },
    { GGML_TYPE_Q5_0, NULL, vec_dot_q5_0_q8_0_vbmi },
    { GGML_TYPE_MXFP4, NULL, vec_dot_mxfp4_q8_0_vbmi },
};

void ggmlx_qdot_fill_avx512_base(ggmlx_qdot_table t) {
    ggmlx_qdot_apply(t, entries_avx512, sizeof(entries_avx512) / sizeof(entries_avx512[0]));
    ggmlx_qdot_apply(t, iq_entries_avx512, sizeof(iq_entries_avx512) / sizeof(iq_entries_avx512[0]));
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
