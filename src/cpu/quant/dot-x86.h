/*
 * dot-x86.h -- the x86 kernels, written once on 256-bit vectors and compiled twice: by
 * dot-avx2.c (AVX2 + FMA + F16C) and by dot-avx512.c (adding AVX-512 VL/BW/VNNI, where the
 * byte dot products become single vpdpbusd instructions). The includer sets the target, QX(name)
 * (the variant's suffix) and QX_VNNI, and includes <immintrin.h> first.
 *
 * Signed weights meet signed activations through |w| (unsigned) times y with w's sign: exact as
 * long as the activations stay in [-127, 127], which the Q8 quantizers guarantee.
 */
#include "ggml-math.h"
#include "quant/quant-blocks.h"
#include "ggmlx-quant-tables.h"

#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */

static inline float QX(h2f)(ggmlx_half h) { return _cvtsh_ss(h); }

/* MXFP4's scale 2^(e - 128), inline (the out-of-line call cost a quarter of the loop) */
static inline float QX(e8m0_half)(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23);
    float          f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* acc + sums of u8 x s8 products in groups of four (pairs summed in 16 bits first without VNNI:
 * exact while |u| <= 128 and |s| <= 127) */
static inline __m256i QX(dpbusd)(__m256i acc, __m256i u, __m256i s) {
#if QX_VNNI
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

/* signed x signed bytes */
static inline __m256i QX(dot_ss)(__m256i acc, __m256i w, __m256i y) {
    return QX(dpbusd)(acc, _mm256_abs_epi8(w), _mm256_sign_epi8(y, w));
}

static inline float QX(hsum_ps)(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s        = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s        = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int QX(hsum_epi32)(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s         = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s         = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* 16 bytes of nibbles -> 32 bytes: the low nibbles (elements 0..15), then the high ones */
static inline __m256i QX(nibbles)(const uint8_t * qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* the 32 bits of qh as bytes of 0x10 (bit set) or 0 */
static inline __m256i QX(bit4_from_qh)(const uint8_t * qh) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof(bits));
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                                                 0x0101010101010101ll, 0x0000000000000000ll));
    const __m256i mask   = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i set    = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* ---- 32-element formats with Q8_0 / Q8_1 ---------------------------------------------------- */

static void QX(vec_dot_q4_0_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK4_0;
    const __m256i               k8 = _mm256_set1_epi8(8);
    __m256                      acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int                         i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i w0 = _mm256_sub_epi8(QX(nibbles)(x[i].qs), k8);
        const __m256i w1 = _mm256_sub_epi8(QX(nibbles)(x[i + 1].qs), k8);
        const __m256i p0 = QX(dot_ss)(_mm256_setzero_si256(), w0, _mm256_loadu_si256((const __m256i *)y[i].qs));
        const __m256i p1 = QX(dot_ss)(_mm256_setzero_si256(), w1, _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(QX(h2f)(x[i + 1].d) * QX(h2f)(y[i + 1].d)), acc1);
    }
    for (; i < nb; i++) {
        const __m256i w0 = _mm256_sub_epi8(QX(nibbles)(x[i].qs), k8);
        const __m256i p0 = QX(dot_ss)(_mm256_setzero_si256(), w0, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc0);
    }
    *s = QX(hsum_ps)(_mm256_add_ps(acc0, acc1));
}

static void QX(vec_dot_q8_0_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q8_0 * restrict x  = vx;
    const block_q8_0 * restrict y  = vy;
    const int                   nb = n / QK8_0;
    __m256                      acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int                         i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m256i p0 = QX(dot_ss)(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)x[i].qs),
                                      _mm256_loadu_si256((const __m256i *)y[i].qs));
        const __m256i p1 = QX(dot_ss)(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)x[i + 1].qs),
                                      _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(QX(h2f)(x[i + 1].d) * QX(h2f)(y[i + 1].d)), acc1);
    }
    for (; i < nb; i++) {
        const __m256i p0 = QX(dot_ss)(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)x[i].qs),
                                      _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc0);
    }
    *s = QX(hsum_ps)(_mm256_add_ps(acc0, acc1));
}

static void QX(vec_dot_q4_1_q8_1)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q4_1 * restrict x   = vx;
    const block_q8_1 * restrict y   = vy;
    const int                   nb  = n / QK4_1;
    __m256                      acc = _mm256_setzero_ps();
    float                       mins = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256i p = QX(dpbusd)(_mm256_setzero_si256(), QX(nibbles)(x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc);
        mins += QX(h2f)(x[i].m) * QX(h2f)(y[i].s);
    }
    *s = QX(hsum_ps)(acc) + mins;
}

static void QX(vec_dot_q5_0_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q5_0 * restrict x   = vx;
    const block_q8_0 * restrict y   = vy;
    const int                   nb  = n / QK5_0;
    __m256                      acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256i w = _mm256_sub_epi8(_mm256_or_si256(QX(nibbles)(x[i].qs), QX(bit4_from_qh)(x[i].qh)), _mm256_set1_epi8(16));
        const __m256i p = QX(dot_ss)(_mm256_setzero_si256(), w, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc);
    }
    *s = QX(hsum_ps)(acc);
}

static void QX(vec_dot_q5_1_q8_1)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q5_1 * restrict x   = vx;
    const block_q8_1 * restrict y   = vy;
    const int                   nb  = n / QK5_1;
    __m256                      acc = _mm256_setzero_ps();
    float                       mins = 0.0f;
    for (int i = 0; i < nb; i++) {
        const __m256i u = _mm256_or_si256(QX(nibbles)(x[i].qs), QX(bit4_from_qh)(x[i].qh));
        const __m256i p = QX(dpbusd)(_mm256_setzero_si256(), u, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc);
        mins += QX(h2f)(x[i].m) * QX(h2f)(y[i].s);
    }
    *s = QX(hsum_ps)(acc) + mins;
}

static void QX(vec_dot_iq4_nl_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq4_nl * restrict x   = vx;
    const block_q8_0 * restrict   y   = vy;
    const int                     nb  = n / QK4_NL;
    const __m256i                 lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggmlx_kvalues_iq4nl));
    __m256                        acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256i w = _mm256_shuffle_epi8(lut, QX(nibbles)(x[i].qs));
        const __m256i p = QX(dot_ss)(_mm256_setzero_si256(), w, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(QX(h2f)(x[i].d) * QX(h2f)(y[i].d)), acc);
    }
    *s = QX(hsum_ps)(acc);
}

static void QX(vec_dot_mxfp4_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_mxfp4 * restrict x   = vx;
    const block_q8_0 * restrict  y   = vy;
    const int                    nb  = n / QK_MXFP4;
    const __m256i                lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggmlx_kvalues_fp4));
    __m256                       acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const __m256i w = _mm256_shuffle_epi8(lut, QX(nibbles)(x[i].qs));
        const __m256i p = QX(dot_ss)(_mm256_setzero_si256(), w, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(QX(e8m0_half)(x[i].e) * QX(h2f)(y[i].d)), acc);
    }
    *s = QX(hsum_ps)(acc);
}

/* NVFP4: per 32 elements, two 16-element sub-blocks, each 8 bytes of (low: j, high: j + 8) */
static void QX(vec_dot_nvfp4_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_nvfp4 * restrict x   = vx;
    const block_q8_0 * restrict  y   = vy;
    const int                    nb  = n / QK_NVFP4;
    const __m256i                lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggmlx_kvalues_fp4));
    const __m128i                m4  = _mm_set1_epi8(15);
    __m256                       acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        for (int h = 0; h < 2; h++) {
            const block_q8_0 * yb = &y[2 * i + h];
            const __m128i      t  = _mm_loadu_si128((const __m128i *)(x[i].qs + 16 * h));
            const __m128i      lo = _mm_and_si128(t, m4);
            const __m128i      hi = _mm_and_si128(_mm_srli_epi16(t, 4), m4);
            /* [sub-block 2h: low, high | sub-block 2h + 1: low, high], the activations' order */
            const __m256i      q  = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
            const __m256i      w  = _mm256_shuffle_epi8(lut, q);
            const __m256i      p  = QX(dot_ss)(_mm256_setzero_si256(), w, _mm256_loadu_si256((const __m256i *)yb->qs));
            const float        dy = QX(h2f)(yb->d);
            /* four lanes per sub-block */
            const __m256 sc = _mm256_set_m128(_mm_set1_ps(ggmlx_ue4m3_to_fp32(x[i].d[2 * h + 1]) * dy),
                                              _mm_set1_ps(ggmlx_ue4m3_to_fp32(x[i].d[2 * h]) * dy));
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), sc, acc);
        }
    }
    *s = QX(hsum_ps)(acc);
}

/* ---- K-quants with Q8_K --------------------------------------------------------------------- */

/* bytes (unsigned, <= 127) times y, each 16-element half scaled by its own 16-bit scale */
static inline __m256i QX(dot_scaled)(__m256i acc, __m256i u, __m256i y, __m256i sc16) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), sc16));
}

/*
 * The 12 scale bytes as three words a0, a1, a2 (four sub-blocks per byte lane): scales 0-3 and
 * minima 0-3 are the low 6 bits of a0 and a1; scales 4-7 take their low nibbles from a2 and their
 * top 2 bits from the top of a0, minima 4-7 the high nibbles of a2 and the top of a1.
 */
static inline void QX(k4_scale_min)(const uint8_t * q, __m128i * sc, __m128i * mn) {
    uint32_t a[3];
    memcpy(a, q, sizeof(a));
    const uint32_t s_lo = a[0] & 0x3f3f3f3fu;
    const uint32_t m_lo = a[1] & 0x3f3f3f3fu;
    const uint32_t s_hi = (a[2] & 0x0f0f0f0fu) | (((a[0] >> 6) & 0x03030303u) << 4);
    const uint32_t m_hi = ((a[2] >> 4) & 0x0f0f0f0fu) | (((a[1] >> 6) & 0x03030303u) << 4);
    /* built in registers: storing the words and loading them as a vector stalls store forwarding */
    *sc = _mm_set_epi32(0, 0, (int)s_hi, (int)s_lo);
    *mn = _mm_set_epi32(0, 0, (int)m_hi, (int)m_lo);
}

static inline int QX(mins_dot)(__m128i mn, const int16_t * bsums) {
    const __m128i b0 = _mm_loadu_si128((const __m128i *)bsums);
    const __m128i b1 = _mm_loadu_si128((const __m128i *)(bsums + 8));
    /* pairs of bsums belong to one 32-element sub-block */
    const __m128i pair = _mm_hadd_epi16(b0, b1);
    const __m128i m16  = _mm_cvtepu8_epi16(mn);
    __m128i       p    = _mm_madd_epi16(pair, m16);
    p                  = _mm_add_epi32(p, _mm_shuffle_epi32(p, _MM_SHUFFLE(1, 0, 3, 2)));
    p                  = _mm_add_epi32(p, _mm_shuffle_epi32(p, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(p);
}

static inline void QX(q45_K)(int n, float * s, const void * vx, const void * vy, bool five) {
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const size_t                bsz = five ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const __m256i               m4  = _mm256_set1_epi8(15);
    __m256                      acc = _mm256_setzero_ps();
    float                       acc_min = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t *  blk = (const uint8_t *)vx + (size_t)i * bsz;
        const ggmlx_half d = (ggmlx_half)(blk[0] | (blk[1] << 8)), dmin = (ggmlx_half)(blk[2] | (blk[3] << 8));
        const uint8_t *  qs  = five ? ((const block_q5_K *)blk)->qs : ((const block_q4_K *)blk)->qs;
        __m128i          sc8, mn;
        QX(k4_scale_min)(blk + 4, &sc8, &mn);
        uint8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, sc8);
        __m256i       sumi = _mm256_setzero_si256();
        const int8_t * yq  = y[i].qs;
        __m256i       hb   = _mm256_setzero_si256();
        if (five) {
            hb = _mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh);
        }
        for (int c = 0; c < 4; c++) {
            const __m256i q  = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
            __m256i       lo = _mm256_and_si256(q, m4);
            __m256i       hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (five) {
                const __m256i one = _mm256_set1_epi8(1);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
            }
            sumi = QX(dot_scaled)(sumi, lo, _mm256_loadu_si256((const __m256i *)(yq + 64 * c)), _mm256_set1_epi16(sc[2 * c]));
            sumi = QX(dot_scaled)(sumi, hi, _mm256_loadu_si256((const __m256i *)(yq + 64 * c + 32)),
                                  _mm256_set1_epi16(sc[2 * c + 1]));
        }
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(QX(h2f)(d) * y[i].d), acc);
        acc_min += QX(h2f)(dmin) * y[i].d * (float)QX(mins_dot)(mn, y[i].bsums);
    }
    *s = QX(hsum_ps)(acc) - acc_min;
}

static void QX(vec_dot_q4_K_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    QX(q45_K)(n, s, vx, vy, false);
}

static void QX(vec_dot_q5_K_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    QX(q45_K)(n, s, vx, vy, true);
}

/* byte shuffle that repeats word 2k across the low lane and word 2k + 1 across the high lane */
static inline __m256i QX(pick)(int k) {
    const char lo0 = (char)(4 * k), lo1 = (char)(4 * k + 1), hi0 = (char)(4 * k + 2), hi1 = (char)(4 * k + 3);
    return _mm256_setr_epi8(lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1,
                            hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1);
}

/* sum over 16 sub-blocks of scale[j] * bsums[j] (16-bit scales) */
static inline int QX(scale_bsums)(__m256i sc16, const int16_t * bsums) {
    return QX(hsum_epi32)(_mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)bsums)));
}

static void QX(vec_dot_q6_K_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q6_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const __m256i               m4  = _mm256_set1_epi8(15);
    const __m256i               m3  = _mm256_set1_epi8(3);
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const int8_t * sc   = x[i].scales;
        __m256i        sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t * ql  = x[i].ql + 64 * h;
            const int8_t *  yq  = y[i].qs + 128 * h;
            const __m256i   ql0 = _mm256_loadu_si256((const __m256i *)ql);
            const __m256i   ql1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            const __m256i   qh  = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h));
            const __m256i   q1 = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
            const __m256i   q2 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
            const __m256i   q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
            const __m256i   q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
            /* this half's 8 scales as words in both lanes; each 32-element chunk k takes scale
             * 2k in its low lane and 2k + 1 in its high lane */
            const __m256i s8 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(sc + 8 * h))));
            sumi = QX(dot_scaled)(sumi, q1, _mm256_loadu_si256((const __m256i *)yq), _mm256_shuffle_epi8(s8, QX(pick)(0)));
            sumi = QX(dot_scaled)(sumi, q2, _mm256_loadu_si256((const __m256i *)(yq + 32)), _mm256_shuffle_epi8(s8, QX(pick)(1)));
            sumi = QX(dot_scaled)(sumi, q3, _mm256_loadu_si256((const __m256i *)(yq + 64)), _mm256_shuffle_epi8(s8, QX(pick)(2)));
            sumi = QX(dot_scaled)(sumi, q4, _mm256_loadu_si256((const __m256i *)(yq + 96)), _mm256_shuffle_epi8(s8, QX(pick)(3)));
        }
        /* the stored quants are q + 32: take 32 * sum(scale * block sum) back off */
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        const int     tot  = QX(hsum_epi32)(sumi) - 32 * QX(scale_bsums)(sc16, y[i].bsums);
        acc += QX(h2f)(x[i].d) * y[i].d * (float)tot;
    }
    *s = acc;
}

static void QX(vec_dot_q2_K_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q2_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const __m256i               m3  = _mm256_set1_epi8(3);
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t * sc   = x[i].scales;
        __m256i         sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q  = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            /* this half's 8 scales (low nibbles) as words in both lanes */
            const __m256i s8 = _mm256_broadcastsi128_si256(
                _mm_cvtepu8_epi16(_mm_and_si128(_mm_loadl_epi64((const __m128i *)(sc + 8 * h)), _mm_set1_epi8(15))));
            for (int k = 0; k < 4; k++) {
                const __m256i qv = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m3);
                sumi = QX(dot_scaled)(sumi, qv, _mm256_loadu_si256((const __m256i *)(y[i].qs + 128 * h + 32 * k)),
                                      _mm256_shuffle_epi8(s8, QX(pick)(k)));
            }
        }
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_and_si128(_mm_loadu_si128((const __m128i *)sc),
                                                                               _mm_set1_epi8((char)0xf0)), 4));
        const int     smin = QX(scale_bsums)(mins, y[i].bsums);
        acc += y[i].d * (QX(h2f)(x[i].d) * (float)QX(hsum_epi32)(sumi) - QX(h2f)(x[i].dmin) * (float)smin);
    }
    *s = acc;
}

static void QX(vec_dot_q3_K_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q3_K * restrict x   = vx;
    const block_q8_K * restrict y   = vy;
    const int                   nb  = n / QK_K;
    const __m256i               m3  = _mm256_set1_epi8(3);
    const __m256i               one = _mm256_set1_epi8(1);
    float                       acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        /*
         * The 16 six-bit scales, four per 32-bit word: low nibbles from bytes 0-7 (scales 0-7) and
         * their high nibbles (8-15); the top two bits from bytes 8-11, two bits per group of four.
         */
        uint32_t a[3], w[4];
        memcpy(a, x[i].scales, sizeof(a));
        w[0] = (a[0] & 0x0f0f0f0fu) | ((a[2] & 0x03030303u) << 4);
        w[1] = (a[1] & 0x0f0f0f0fu) | (((a[2] >> 2) & 0x03030303u) << 4);
        w[2] = ((a[0] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 4) & 0x03030303u) << 4);
        w[3] = ((a[1] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 6) & 0x03030303u) << 4);
        const __m128i sc8 = _mm_sub_epi8(_mm_set_epi32((int)w[3], (int)w[2], (int)w[1], (int)w[0]), _mm_set1_epi8(32));
        const __m256i hm   = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        __m256i       sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i q  = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * h));
            const __m256i s8 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h ? _mm_srli_si128(sc8, 8) : sc8));
            for (int k = 0; k < 4; k++) {
                /* value + 4 in 0..7: the two bits, plus 4 where the high mask bit is set */
                const __m256i hb = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one), 2);
                const __m256i u  = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m3), hb);
                sumi = QX(dot_scaled)(sumi, u, _mm256_loadu_si256((const __m256i *)(y[i].qs + 128 * h + 32 * k)),
                                      _mm256_shuffle_epi8(s8, QX(pick)(k)));
            }
        }
        const int tot = QX(hsum_epi32)(sumi) - 4 * QX(scale_bsums)(_mm256_cvtepi8_epi16(sc8), y[i].bsums);
        acc += QX(h2f)(x[i].d) * y[i].d * (float)tot;
    }
    *s = acc;
}

static void QX(vec_dot_iq4_xs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq4_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    const __m256i                 lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)ggmlx_kvalues_iq4nl));
    float                         acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const int ls = (((x[i].scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((x[i].scales_h >> (2 * g)) & 3) << 4)) - 32;
            const __m256i w  = _mm256_shuffle_epi8(lut, QX(nibbles)(x[i].qs + 16 * g));
            const __m256i yv = _mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g));
            sumi = QX(dot_scaled)(sumi, _mm256_abs_epi8(w), _mm256_sign_epi8(yv, w), _mm256_set1_epi16((short)ls));
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = acc;
}

/* ---- activation quantizers (byte-identical to the portable ones) --------------------------- */

/* roundf: truncate, then step away from zero where the dropped part is at least one half */
static inline __m256 QX(round_away)(__m256 v) {
    const __m256 t    = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
    const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
    const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), _mm256_set1_ps(1.0f));
    return _mm256_add_ps(t, _mm256_or_ps(step, sign));
}

static inline float QX(amax32)(const float * x, int count) {
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < count; j += 8) {
        m = _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x + j)), m);
    }
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    r        = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r        = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* four vectors of 8 int32 (each in [-127, 127]) to 32 bytes in order */
static inline __m256i QX(pack32)(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i v  = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline int QX(q8_block)(const float * x, int8_t * qs, float * d_out) {
    const float  amax = QX(amax32)(x, 32);
    const float  d    = amax / 127.0f;
    const float  id   = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid  = _mm256_set1_ps(id);
    __m256i      q[4];
    for (int k = 0; k < 4; k++) {
        /* NaN (from non-finite input) converts to INT32_MIN: clamp it to the -128 the byte gets */
        q[k] = _mm256_max_epi32(_mm256_cvttps_epi32(QX(round_away)(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid))),
                                _mm256_set1_epi32(-128));
    }
    _mm256_storeu_si256((__m256i *)qs, QX(pack32)(q[0], q[1], q[2], q[3]));
    *d_out = d;
    return QX(hsum_epi32)(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
}

static void QX(quantize_row_q8_0)(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_0 * restrict y = vy;
    for (int64_t i = 0; i < k / QK8_0; i++) {
        float d;
        (void)QX(q8_block)(x + i * QK8_0, y[i].qs, &d);
        y[i].d = ggmlx_fp32_to_fp16(d);
    }
}

static void QX(quantize_row_q8_1)(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_1 * restrict y = vy;
    for (int64_t i = 0; i < k / QK8_1; i++) {
        float     d;
        const int sum = QX(q8_block)(x + i * QK8_1, y[i].qs, &d);
        y[i].d        = ggmlx_fp32_to_fp16(d);
        y[i].s        = ggmlx_fp32_to_fp16((float)sum * d);
    }
}

static void QX(quantize_row_q8_K)(const float * restrict x, void * restrict vy, int64_t k) {
    block_q8_K * restrict y = vy;
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float * xb   = x + i * QK_K;
        const float   amax = QX(amax32)(xb, QK_K);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        int j = 0;
        while (fabsf(xb[j]) != amax) { /* the first element of largest magnitude gives the sign */
            j++;
        }
        const float  iscale = -127.0f / xb[j];
        const __m256 vis    = _mm256_set1_ps(iscale);
        const __m256i top   = _mm256_set1_epi32(127);
        for (int b = 0; b < QK_K; b += 32) {
            __m256i q[4];
            for (int c = 0; c < 4; c++) {
                /* the default rounding mode is to nearest even, as the reference's rounding */
                q[c] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(xb + b + 8 * c), vis)), top);
                q[c] = _mm256_max_epi32(q[c], _mm256_set1_epi32(-128)); /* NaN: as in q8_block */
            }
            _mm256_storeu_si256((__m256i *)(y[i].qs + b), QX(pack32)(q[0], q[1], q[2], q[3]));
            y[i].bsums[b / 16]     = (int16_t)QX(hsum_epi32)(_mm256_add_epi32(q[0], q[1]));
            y[i].bsums[b / 16 + 1] = (int16_t)QX(hsum_epi32)(_mm256_add_epi32(q[2], q[3]));
        }
        y[i].d = 1.0f / iscale;
    }
}

/* the kernels above, for the table (applied outside the target region: see ggmlx_qdot_apply) */
static const struct ggmlx_qdot_entry QX(entries)[] = {
    { GGML_TYPE_Q8_0, QX(quantize_row_q8_0), QX(vec_dot_q8_0_q8_0) },
    { GGML_TYPE_Q8_1, QX(quantize_row_q8_1), NULL },
    { GGML_TYPE_Q8_K, QX(quantize_row_q8_K), NULL },
    { GGML_TYPE_Q4_0, NULL, QX(vec_dot_q4_0_q8_0) },
    { GGML_TYPE_Q4_1, NULL, QX(vec_dot_q4_1_q8_1) },
    { GGML_TYPE_Q5_0, NULL, QX(vec_dot_q5_0_q8_0) },
    { GGML_TYPE_Q5_1, NULL, QX(vec_dot_q5_1_q8_1) },
    { GGML_TYPE_IQ4_NL, NULL, QX(vec_dot_iq4_nl_q8_0) },
    { GGML_TYPE_MXFP4, NULL, QX(vec_dot_mxfp4_q8_0) },
    { GGML_TYPE_NVFP4, NULL, QX(vec_dot_nvfp4_q8_0) },
    { GGML_TYPE_Q2_K, NULL, QX(vec_dot_q2_K_q8_K) },
    { GGML_TYPE_Q3_K, NULL, QX(vec_dot_q3_K_q8_K) },
    { GGML_TYPE_Q4_K, NULL, QX(vec_dot_q4_K_q8_K) },
    { GGML_TYPE_Q5_K, NULL, QX(vec_dot_q5_K_q8_K) },
    { GGML_TYPE_Q6_K, NULL, QX(vec_dot_q6_K_q8_K) },
    { GGML_TYPE_IQ4_XS, NULL, QX(vec_dot_iq4_xs_q8_K) },
};
