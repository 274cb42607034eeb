/*
 * dot-lowbit-x86.h -- the dot products of the 1- to 2-bit formats (Q1_0, Q2_0, TQ1_0, TQ2_0,
 * IQ1_S, IQ1_M) on 256-bit vectors, compiled with dot-x86.h (after it: it uses that file's
 * helpers) for each x86 variant. With QX_VNNI (the AVX-512 build) the byte sums are vpdpbusd and
 * bit masks are mask registers; without it they go through 16-bit multiply-adds.
 *
 * The weights are turned into small unsigned bytes u (0..3) wherever the format allows, so that
 * the byte products take y as it is: a format whose values are u - 1 gets the activations' sum
 * subtracted once per block (Q8_K keeps it in bsums; for Q8_0 it is one more byte sum, lane by
 * lane). The bsums meet the products in other lanes than the ones they cancel, so the Q8_K
 * kernels add a block's lanes in integers before scaling: all-zero weights give exactly 0.
 */

/* ---- shared helpers ------------------------------------------------------------------------- */

/* the sums of u x y over each group of four bytes, u unsigned (<= 3), y signed */
static inline __m256i QX(lb_dot4)(__m256i u, __m256i y) {
#if QX_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
#endif
}

/* byte-wise x * 3 (mod 256) */
static inline __m256i QX(lb_times3)(__m256i x) { return _mm256_add_epi8(x, _mm256_add_epi8(x, x)); }

/* ---- Q1_0: 128 elements of +-d, four Q8_0 blocks -------------------------------------------- */

#if !QX_VNNI
/* y negated where the bits at p are set (bit j of byte l is element 8 l + j) */
static inline __m256i QX(lb_neg_where_set)(__m256i y, const uint8_t * p) {
    uint32_t bits;
    memcpy(&bits, p, sizeof(bits));
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                                                 0x0101010101010101ll, 0x0000000000000000ll));
    const __m256i sel    = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i neg    = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
    return _mm256_sub_epi8(_mm256_xor_si256(y, neg), neg);
}

/* a set bit is +1, a clear one -1: the sum is minus that of y negated where the bit is set */
static void QX(vec_dot_q1_0_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q1_0 * restrict x    = vx;
    const block_q8_0 * restrict y    = vy;
    const int                   nb   = n / QK1_0;
    const __m256i               ones = _mm256_set1_epi8(1);
    __m256                      acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const float                 dx = -QX(h2f)(x[i].d);
        const block_q8_0 * restrict yb = y + 4 * i;
        __m256i                     p[4];
        for (int b = 0; b < 4; b++) {
            p[b] = QX(lb_dot4)(ones, QX(lb_neg_where_set)(_mm256_loadu_si256((const __m256i *)yb[b].qs), x[i].qs + 4 * b));
        }
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[0]), _mm256_set1_ps(dx * QX(h2f)(yb[0].d)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[1]), _mm256_set1_ps(dx * QX(h2f)(yb[1].d)), acc1);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[2]), _mm256_set1_ps(dx * QX(h2f)(yb[2].d)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p[3]), _mm256_set1_ps(dx * QX(h2f)(yb[3].d)), acc1);
    }
    *s = QX(hsum_ps)(_mm256_add_ps(acc0, acc1));
}

#else
/*
 * The AVX-512 build: two Q8_0 blocks per 512-bit vector, negated under 64 bits of the block at
 * once (a mask register), each half scaled by its own product of scales.
 */
static void QX(vec_dot_q1_0_q8_0_zmm)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q1_0 * restrict x    = vx;
    const block_q8_0 * restrict y    = vy;
    const int                   nb   = n / QK1_0;
    const __m512i               ones = _mm512_set1_epi8(1);
    const __m512i               ix01 = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i               ix23 = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    __m512                      acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const block_q8_0 * restrict yb = y + 4 * i;
        /* minus the four products of scales (the sums below are of y negated where the bit is set) */
        const __m128 sc4 = _mm_mul_ps(_mm_cvtph_ps(_mm_setr_epi16((short)yb[0].d, (short)yb[1].d, (short)yb[2].d, (short)yb[3].d, 0, 0, 0, 0)),
                                      _mm_set1_ps(-QX(h2f)(x[i].d)));
        const __m512 scz = _mm512_castps128_ps512(sc4);
        uint64_t     m0, m1;
        memcpy(&m0, x[i].qs, sizeof(m0));
        memcpy(&m1, x[i].qs + 8, sizeof(m1));
        const __m512i ya = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)yb[0].qs)),
                                              _mm256_loadu_si256((const __m256i *)yb[1].qs), 1);
        const __m512i yc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)yb[2].qs)),
                                              _mm256_loadu_si256((const __m256i *)yb[3].qs), 1);
        const __m512i pa = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones,
                                               _mm512_mask_sub_epi8(ya, _cvtu64_mask64(m0), _mm512_setzero_si512(), ya));
        const __m512i pc = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones,
                                               _mm512_mask_sub_epi8(yc, _cvtu64_mask64(m1), _mm512_setzero_si512(), yc));
        acc0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pa), _mm512_permutexvar_ps(ix01, scz), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(pc), _mm512_permutexvar_ps(ix23, scz), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
#endif

/* ---- Q2_0: 64 elements of d (u - 1), u two bits, two Q8_0 blocks ---------------------------- */

/*
 * The 32 values of 8 bytes (four per byte, lowest bits first) as bytes in element order: each
 * 128-bit lane takes its four source bytes into all four dwords, dword k shifted right by 2 k,
 * so that byte i of dword k is element 4 i + k; a byte shuffle puts it at 4 i + k.
 */
static inline __m256i QX(lb_crumbs32)(__m256i q, __m256i pick) {
    const __m256i d = _mm256_permutevar8x32_epi32(q, pick);
    const __m256i t = _mm256_and_si256(_mm256_srlv_epi32(d, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)), _mm256_set1_epi8(3));
    return _mm256_shuffle_epi8(t, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5,
                                                   9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
}

static void QX(vec_dot_q2_0_q8_0)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_q2_0 * restrict x     = vx;
    const block_q8_0 * restrict y     = vy;
    const int                   nb    = n / QK2_0;
    const __m256i               ones  = _mm256_set1_epi8(1);
    const __m256i               pick0 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i               pick1 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
    __m256                      acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const float                 dx = QX(h2f)(x[i].d);
        const block_q8_0 * restrict yb = y + 2 * i;
        const __m256i               q  = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)x[i].qs));
        const __m256i               y0 = _mm256_loadu_si256((const __m256i *)yb[0].qs);
        const __m256i               y1 = _mm256_loadu_si256((const __m256i *)yb[1].qs);
        const __m256i p0 = _mm256_sub_epi32(QX(lb_dot4)(QX(lb_crumbs32)(q, pick0), y0), QX(lb_dot4)(ones, y0));
        const __m256i p1 = _mm256_sub_epi32(QX(lb_dot4)(QX(lb_crumbs32)(q, pick1), y1), QX(lb_dot4)(ones, y1));
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(dx * QX(h2f)(yb[0].d)), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(dx * QX(h2f)(yb[1].d)), acc1);
    }
    *s = QX(hsum_ps)(_mm256_add_ps(acc0, acc1));
}

/* ---- the Q8_K formats' kernels: per block a vector of 32-bit sums, added in integers ------- */

/* four blocks' lane sums added up, each block apart (exact), as floats */
static inline __m128 QX(lb_fold4)(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
    return _mm_cvtepi32_ps(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

/*
 * A kernel from BLOCK (a block's sums, as 32-bit lanes) and SCALE (the float it is multiplied
 * by): four blocks per step have their lanes added together by one fold, the rest one by one.
 */
#define QX_LB_Q8K_KERNEL(name, block_t, BLOCK, SCALE)                                                          \
    static void name(GGMLX_VEC_DOT_ARGS) {                                                                     \
        GGMLX_VEC_DOT_UNUSED;                                                                                  \
        const block_t * restrict    x    = vx;                                                                 \
        const block_q8_K * restrict y    = vy;                                                                 \
        const int                   nb   = n / QK_K;                                                           \
        __m128                      acc4 = _mm_setzero_ps();                                                   \
        float                       acc  = 0.0f;                                                               \
        int                         i    = 0;                                                                  \
        for (; i + 3 < nb; i += 4) {                                                                           \
            const __m128 t = QX(lb_fold4)(BLOCK(x + i, y + i), BLOCK(x + i + 1, y + i + 1), BLOCK(x + i + 2, y + i + 2), \
                                          BLOCK(x + i + 3, y + i + 3));                                        \
            acc4 = _mm_fmadd_ps(t, _mm_setr_ps(SCALE(x + i, y + i), SCALE(x + i + 1, y + i + 1), SCALE(x + i + 2, y + i + 2), \
                                               SCALE(x + i + 3, y + i + 3)), acc4);                            \
        }                                                                                                      \
        for (; i < nb; i++) {                                                                                  \
            acc += SCALE(x + i, y + i) * (float)QX(hsum_epi32)(BLOCK(x + i, y + i));                           \
        }                                                                                                      \
        acc4 = _mm_add_ps(acc4, _mm_movehl_ps(acc4, acc4));                                                    \
        acc4 = _mm_add_ss(acc4, _mm_movehdup_ps(acc4));                                                        \
        *s   = _mm_cvtss_f32(acc4) + acc;                                                                      \
    }

/* IQ1_M's super-block scale: the top nibbles of its four scale words */
static inline ggmlx_half QX(lb_iq1m_d)(const block_iq1_m * x) {
    uint64_t sc64;
    memcpy(&sc64, x->scales, sizeof(sc64));
    return (ggmlx_half)(((sc64 >> 12) & 0x000f) | ((sc64 >> 24) & 0x00f0) | ((sc64 >> 36) & 0x0f00) | ((sc64 >> 48) & 0xf000));
}

/* ---- TQ2_0 and TQ1_0: ternary d (u - 1), u in 0..2, with Q8_K -------------------------------- */

/* the block's sum of u x y less that of y, as 32-bit lanes; 16-bit partial sums without VNNI
 * (each u x y pair is at most 2 * 2 * 127, eight of them fit) */
#if QX_VNNI
#    define QX_LB_ACC_T          __m256i
#    define QX_LB_ACC(acc, u, y) ((acc) = _mm256_dpbusd_epi32((acc), (u), (y)))
#    define QX_LB_ACC_DONE(acc)  (acc)
#else
#    define QX_LB_ACC_T          __m256i
#    define QX_LB_ACC(acc, u, y) ((acc) = _mm256_add_epi16((acc), _mm256_maddubs_epi16((u), (y))))
#    define QX_LB_ACC_DONE(acc)  _mm256_madd_epi16((acc), _mm256_set1_epi16(1))
#endif

/* minus the sum of y, as 32-bit lanes, from the block's 16 sums */
static inline __m256i QX(lb_minus_ysum)(const int16_t * bsums) {
    return _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)bsums), _mm256_set1_epi16(-1));
}

/* one block's sums (lanes to be added); inlined, four times per step */
static inline __attribute__((always_inline)) __m256i QX(lb_block_tq2_0_q8_K)(const block_tq2_0 * restrict x, const block_q8_K * restrict y) {
    const __m256i                m3  = _mm256_set1_epi8(3);
    QX_LB_ACC_T a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (int g = 0; g < 2; g++) {
        const __m256i  q  = _mm256_loadu_si256((const __m256i *)(x[0].qs + 32 * g));
        const int8_t * yq = y[0].qs + 128 * g;
        QX_LB_ACC(a0, _mm256_and_si256(q, m3), _mm256_loadu_si256((const __m256i *)yq));
        QX_LB_ACC(a1, _mm256_and_si256(_mm256_srli_epi16(q, 2), m3), _mm256_loadu_si256((const __m256i *)(yq + 32)));
        QX_LB_ACC(a0, _mm256_and_si256(_mm256_srli_epi16(q, 4), m3), _mm256_loadu_si256((const __m256i *)(yq + 64)));
        QX_LB_ACC(a1, _mm256_and_si256(_mm256_srli_epi16(q, 6), m3), _mm256_loadu_si256((const __m256i *)(yq + 96)));
    }
    const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(QX_LB_ACC_DONE(a0), QX_LB_ACC_DONE(a1)),
                                          QX(lb_minus_ysum)(y[0].bsums));
    return sumi;
}

static inline float QX(lb_scale_tq2_0_q8_K)(const block_tq2_0 * restrict x, const block_q8_K * restrict y) { return QX(h2f)(x->d) * y->d; }

QX_LB_Q8K_KERNEL(QX(vec_dot_tq2_0_q8_K), block_tq2_0, QX(lb_block_tq2_0_q8_K), QX(lb_scale_tq2_0_q8_K))

/*
 * TQ1_0: qs[0..31] hold five trits each (elements 32 k + m), qs[32..47] five each (160 + 16 k + m)
 * and qh four each (240 + 4 k + m); trit k of a byte is the leading trit of the byte times 3^k
 * (mod 256). The products are formed by byte additions in the order the activations lie:
 * 32-byte vectors c0..c4 are qs[0..31] times 1 .. 81, c5 = [qs[32..47] | x3], c6 = [x9 | x27],
 * c7 = [x81 | qh x 1, 3, 9, 27].
 */
#if !QX_VNNI
/*
 * The leading trit of each byte b, floor(3 b / 256) = (b >= 86) + (b >= 171), from s = b + 128
 * (mod 256): no unsigned byte compare, but s compares signed as b does unsigned. The products
 * are kept with the offset: 3 (b + 128) = 3 b + 128 (mod 256), so one flip serves all five.
 */
static inline __m256i QX(lb_top_trit_flipped)(__m256i s) {
    const __m256i m1 = _mm256_cmpgt_epi8(s, _mm256_set1_epi8(85 - 128));
    const __m256i m2 = _mm256_cmpgt_epi8(s, _mm256_set1_epi8(170 - 128));
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(m1, m2));
}

/* one block's sums (lanes to be added); inlined, four times per step */
static inline __attribute__((always_inline)) __m256i QX(lb_block_tq1_0_q8_K)(const block_tq1_0 * restrict x, const block_q8_K * restrict y) {
    const int8_t * yq = y[0].qs;
    uint32_t       qh;
    memcpy(&qh, x[0].qh, sizeof(qh));
    QX_LB_ACC_T a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    __m256i       c    = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)x[0].qs), flip);
    QX_LB_ACC(a0, QX(lb_top_trit_flipped)(c), _mm256_loadu_si256((const __m256i *)yq));
    c = QX(lb_times3)(c);
    QX_LB_ACC(a1, QX(lb_top_trit_flipped)(c), _mm256_loadu_si256((const __m256i *)(yq + 32)));
    c = QX(lb_times3)(c);
    QX_LB_ACC(a0, QX(lb_top_trit_flipped)(c), _mm256_loadu_si256((const __m256i *)(yq + 64)));
    c = QX(lb_times3)(c);
    QX_LB_ACC(a1, QX(lb_top_trit_flipped)(c), _mm256_loadu_si256((const __m256i *)(yq + 96)));
    c = QX(lb_times3)(c);
    QX_LB_ACC(a0, QX(lb_top_trit_flipped)(c), _mm256_loadu_si256((const __m256i *)(yq + 128)));
    /* r = [qs[32..47] | qh in all four dwords], then its multiples by 3, 9, 27, 81 */
    const __m256i r1  = _mm256_xor_si256(_mm256_set_m128i(_mm_set1_epi32((int)qh), _mm_loadu_si128((const __m128i *)(x[0].qs + 32))), flip);
    const __m256i r3  = QX(lb_times3)(r1);
    const __m256i r9  = QX(lb_times3)(r3);
    const __m256i r27 = QX(lb_times3)(r9);
    const __m256i r81 = QX(lb_times3)(r27);
    const __m256i c5  = _mm256_permute2x128_si256(r1, r3, 0x20);
    const __m256i c6  = _mm256_permute2x128_si256(r9, r27, 0x20);
    /* the high lane: dword 4 of r1, 5 of r3, 6 of r9, 7 of r27 */
    const __m256i h   = _mm256_blend_epi32(_mm256_blend_epi32(r1, r3, 0x20), _mm256_blend_epi32(r9, r27, 0x80), 0xc0);
    const __m256i c7  = _mm256_blend_epi32(r81, h, 0xf0);
    QX_LB_ACC(a1, QX(lb_top_trit_flipped)(c5), _mm256_loadu_si256((const __m256i *)(yq + 160)));
    QX_LB_ACC(a0, QX(lb_top_trit_flipped)(c6), _mm256_loadu_si256((const __m256i *)(yq + 192)));
    QX_LB_ACC(a1, QX(lb_top_trit_flipped)(c7), _mm256_loadu_si256((const __m256i *)(yq + 224)));
    const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(QX_LB_ACC_DONE(a0), QX_LB_ACC_DONE(a1)),
                                          QX(lb_minus_ysum)(y[0].bsums));
    return sumi;
}
#else
/* the AVX-512 build: the same products four 64-byte vectors at a time, in the activations' order
 * [x1 | x3], [x9 | x27], [x81 | qs[32..47] x1, x3], [x9, x27 | x81, qh x 1, 3, 9, 27] */
static inline __m512i QX(lb_top_trit_zmm)(__m512i b) {
    const __m512i   one = _mm512_set1_epi8(1);
    const __mmask64 k1  = _mm512_cmpge_epu8_mask(b, _mm512_set1_epi8(86));
    const __mmask64 k2  = _mm512_cmpge_epu8_mask(b, _mm512_set1_epi8((char)171));
    const __m512i   t1  = _mm512_maskz_mov_epi8(k1, one);
    return _mm512_mask_add_epi8(t1, k2, t1, one);
}

static inline __m512i QX(lb_times3_zmm)(__m512i x) { return _mm512_add_epi8(x, _mm512_add_epi8(x, x)); }

static inline __attribute__((always_inline)) __m256i QX(lb_block_tq1_0_q8_K)(const block_tq1_0 * restrict x, const block_q8_K * restrict y) {
    uint32_t qh;
    memcpy(&qh, x->qh, sizeof(qh));
    const __m512i b   = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x->qs));
    const __m512i w0  = _mm512_mask_add_epi8(b, (__mmask64)0xffffffff00000000ull, b, _mm512_add_epi8(b, b));
    const __m512i w1  = QX(lb_times3_zmm)(QX(lb_times3_zmm)(w0));
    const __m512i t   = QX(lb_times3_zmm)(QX(lb_times3_zmm)(w1));
    const __m256i r1  = _mm256_set_m128i(_mm_set1_epi32((int)qh), _mm_loadu_si128((const __m128i *)(x->qs + 32)));
    const __m256i r3  = QX(lb_times3)(r1);
    const __m256i r9  = QX(lb_times3)(r3);
    const __m256i r27 = QX(lb_times3)(r9);
    const __m256i r81 = QX(lb_times3)(r27);
    const __m256i h   = _mm256_blend_epi32(_mm256_blend_epi32(r1, r3, 0x20), _mm256_blend_epi32(r9, r27, 0x80), 0xc0);
    const __m512i w2  = _mm512_inserti64x4(t, _mm256_permute2x128_si256(r1, r3, 0x20), 1);
    const __m512i w3  = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(r9, r27, 0x20)),
                                           _mm256_blend_epi32(r81, h, 0xf0), 1);
    __m512i       a   = _mm512_dpbusd_epi32(_mm512_setzero_si512(), QX(lb_top_trit_zmm)(w0), _mm512_loadu_si512(y->qs));
    a                 = _mm512_dpbusd_epi32(a, QX(lb_top_trit_zmm)(w1), _mm512_loadu_si512(y->qs + 64));
    a                 = _mm512_dpbusd_epi32(a, QX(lb_top_trit_zmm)(w2), _mm512_loadu_si512(y->qs + 128));
    a                 = _mm512_dpbusd_epi32(a, QX(lb_top_trit_zmm)(w3), _mm512_loadu_si512(y->qs + 192));
    return _mm256_add_epi32(_mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1)), QX(lb_minus_ysum)(y->bsums));
}
#endif

static inline float QX(lb_scale_tq1_0_q8_K)(const block_tq1_0 * restrict x, const block_q8_K * restrict y) { return QX(h2f)(x->d) * y->d; }

QX_LB_Q8K_KERNEL(QX(vec_dot_tq1_0_q8_K), block_tq1_0, QX(lb_block_tq1_0_q8_K), QX(lb_scale_tq1_0_q8_K))

#undef QX_LB_ACC_T
#undef QX_LB_ACC
#undef QX_LB_ACC_DONE

/* ---- IQ1_S and IQ1_M: 8-value grid entries of -1, 0, 1 plus a signed delta of 1/8 ----------- */

static inline __m256i QX(lb_grid4)(int i0, int i1, int i2, int i3) {
    return _mm256_set_epi64x((long long)ggmlx_iq1s_grid[i3], (long long)ggmlx_iq1s_grid[i2],
                             (long long)ggmlx_iq1s_grid[i1], (long long)ggmlx_iq1s_grid[i0]);
}

#if !QX_VNNI
/* (the AVX-512 build has its own, below) */
/* the 16-bit products of grid values w (-1, 0, 1) with y, summed in pairs */
static inline __m256i QX(lb_grid_pairs)(__m256i w, __m256i y) {
    return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(y, w));
}

/*
 * IQ1_S: per 32-element group, an odd scale ls and a delta sign in qh[g]. The grid products,
 * times 8 ls, and the delta's ls times +-1 times the group's activation sum (two bsums) give the
 * block's sum times 8 in integers.
 */
/* one block's sums (lanes to be added); inlined, four times per step */
static inline __attribute__((always_inline)) __m256i QX(lb_block_iq1_s_q8_K)(const block_iq1_s * restrict x, const block_q8_K * restrict y) {
    /* the eight scales (2 ls) and the bsums' weights: +-ls, each twice */
    const __m128i qh   = _mm_loadu_si128((const __m128i *)x[0].qh);
    const __m128i ls   = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7)), 1),
                                      _mm_set1_epi16(1));
    const __m128i neg  = _mm_srai_epi16(qh, 15);
    const __m128i sls  = _mm_sub_epi16(_mm_xor_si128(ls, neg), neg);
    const __m256i wsum = _mm256_set_m128i(_mm_unpackhi_epi16(sls, sls), _mm_unpacklo_epi16(sls, sls));
    const __m256i ls16 = _mm256_slli_epi16(_mm256_broadcastsi128_si256(ls), 3);
    __m256i       sumi = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[0].bsums), wsum);
    for (int g = 0; g < QK_K / 32; g++) {
        const uint8_t * q  = x[0].qs + 4 * g;
        const int       h  = x[0].qh[g];
        const __m256i   w  = QX(lb_grid4)(q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700), q[2] | ((h << 2) & 0x700),
                                          q[3] | ((h >> 1) & 0x700));
        /* word g of the scales in every word */
        const __m256i   sc = _mm256_shuffle_epi8(ls16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * g)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(QX(lb_grid_pairs)(w, _mm256_loadu_si256((const __m256i *)(y[0].qs + 32 * g))), sc));
    }
    return sumi;
}

static inline float QX(lb_scale_iq1_s_q8_K)(const block_iq1_s * restrict x, const block_q8_K * restrict y) { return 0.125f * QX(h2f)(x->d) * y->d; }

QX_LB_Q8K_KERNEL(QX(vec_dot_iq1_s_q8_K), block_iq1_s, QX(lb_block_iq1_s_q8_K), QX(lb_scale_iq1_s_q8_K))

/*
 * IQ1_M: each 8-value entry has its own delta sign (bit 3 of its qh nibble) and each 16 values
 * their own scale; 8 w + delta sign is in -9 .. 9, so one product per byte carries both parts.
 * The 16 scales: word g of the low lane is half 2 g's, of the high lane half 2 g + 1's, so that
 * one in-lane shuffle gives a group both of its scales.
 */
/* one block's sums (lanes to be added); inlined, four times per step */
static inline __attribute__((always_inline)) __m256i QX(lb_block_iq1_m_q8_K)(const block_iq1_m * restrict x, const block_q8_K * restrict y) {
    const __m256i                f8   = _mm256_set1_epi8((char)0xf8);
    const __m256i                ones = _mm256_set1_epi8(1);
    /* delta bits: entries 0-1 of a group in the low lane (bits 3, 7 of the first qh byte), 2-3 high */
    const __m256i dsel  = _mm256_setr_epi64x(0x0808080808080808ll, (long long)0x8080808080808080ull, 0x0808080808080808ll,
                                             (long long)0x8080808080808080ull);
    /* the scale words: sc[g / 2] >> (6 (g % 2)) low, >> (6 (g % 2) + 3) high, via x 2^(9 - shift) >> 9 */
    const __m256i spick = _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4,
                                           5, 6, 7, 6, 7);
    const __m256i smul  = _mm256_setr_epi16(512, 8, 512, 8, 512, 8, 512, 8, 64, 1, 64, 1, 64, 1, 64, 1);
    uint64_t sc64;
    memcpy(&sc64, x[0].scales, sizeof(sc64));
    const __m256i  s3    = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)sc64), spick);
    const __m256i  s7    = _mm256_and_si256(_mm256_srli_epi16(_mm256_mullo_epi16(s3, smul), 9), _mm256_set1_epi16(7));
    const __m256i  ls16  = _mm256_or_si256(_mm256_slli_epi16(s7, 1), _mm256_set1_epi16(1));
    const __m256i  qhb   = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)x[0].qh));
    __m256i        sumi  = _mm256_setzero_si256();
    for (int g = 0; g < QK_K / 32; g++) {
        const uint8_t * q  = x[0].qs + 4 * g;
        const int       h0 = x[0].qh[2 * g], h1 = x[0].qh[2 * g + 1];
        const __m256i   w  = QX(lb_grid4)(q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700), q[2] | ((h1 << 8) & 0x700),
                                          q[3] | ((h1 << 4) & 0x700));
        /* qh byte 2 g in the low lane, 2 g + 1 in the high one; 8 w, then +-1 per entry (-1 where
         * its delta bit is set) */
        const __m256i   hb = _mm256_shuffle_epi8(qhb, _mm256_setr_epi64x(0x0101010101010101ll * (2 * g), 0x0101010101010101ll * (2 * g),
                                                                         0x0101010101010101ll * (2 * g + 1),
                                                                         0x0101010101010101ll * (2 * g + 1)));
        const __m256i   w8 = _mm256_and_si256(_mm256_slli_epi16(w, 3), f8);
#if QX_VNNI
        const __mmask32 kd = _mm256_test_epi8_mask(hb, dsel);
        const __m256i   wd = _mm256_mask_sub_epi8(_mm256_add_epi8(w8, ones), kd, w8, ones);
#else
        const __m256i   wd = _mm256_add_epi8(w8, _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, dsel), dsel), ones));
#endif
        const __m256i   sc = _mm256_shuffle_epi8(ls16, _mm256_set1_epi16((short)(0x0100 + 0x0202 * g)));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(QX(lb_grid_pairs)(wd, _mm256_loadu_si256((const __m256i *)(y[0].qs + 32 * g))), sc));
    }
    return sumi;
}

static inline float QX(lb_scale_iq1_m_q8_K)(const block_iq1_m * restrict x, const block_q8_K * restrict y) {
    return 0.125f * QX(h2f)(QX(lb_iq1m_d)(x)) * y->d;
}

QX_LB_Q8K_KERNEL(QX(vec_dot_iq1_m_q8_K), block_iq1_m, QX(lb_block_iq1_m_q8_K), QX(lb_scale_iq1_m_q8_K))

#else
/*
 * The AVX-512 build does two groups per 512-bit vector. Without a byte sign instruction at that
 * width the grid values go in as w + 1 (IQ1_S) or 8 w + delta + 9 (IQ1_M), unsigned, and the
 * offset comes back through the bsums, which have the 16-element granularity of the scales.
 */
static inline __m512i QX(lb_grid8)(const int * e) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(QX(lb_grid4)(e[0], e[1], e[2], e[3])), QX(lb_grid4)(e[4], e[5], e[6], e[7]), 1);
}

/* word index vector: word w takes scale `first + w / per` */
static inline __m512i QX(lb_word_index)(int first, int per) {
    int16_t idx[32];
    for (int w = 0; w < 32; w++) {
        idx[w] = (int16_t)(first + w / per);
    }
    return _mm512_loadu_si512(idx);
}

/* BMI2's pdep spreads four entries' index bits at once; every AVX-512 CPU has it */
#    define QX_LB_BMI2 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,bmi2")))

/* the four grid indices of a group as 16-bit fields: qs bytes in bits 0-7, qh nibbles' low 3 in 8-10 */
QX_LB_BMI2 static inline uint64_t QX(lb_iq1m_index4)(const uint8_t * q, const uint8_t * h) {
    uint32_t q4;
    uint16_t h2;
    memcpy(&q4, q, sizeof(q4));
    memcpy(&h2, h, sizeof(h2));
    return _pdep_u64(q4, 0x00ff00ff00ff00ffull) | _pdep_u64(h2 & 0x7777u, 0x0f000f000f000f00ull);
}

/* the same for IQ1_S: the group's 12 low bits of qh, three per entry */
QX_LB_BMI2 static inline uint64_t QX(lb_iq1s_index4)(const uint8_t * q, uint16_t h) {
    uint32_t q4;
    memcpy(&q4, q, sizeof(q4));
    return _pdep_u64(q4, 0x00ff00ff00ff00ffull) | _pdep_u64(h, 0x0700070007000700ull);
}

/* one block's sums (lanes to be added); inlined, four times per step */
QX_LB_BMI2 static inline __attribute__((always_inline)) __m256i QX(lb_block_iq1_s_q8_K_zmm)(const block_iq1_s * restrict x, const block_q8_K * restrict y) {
    const __m512i                ones = _mm512_set1_epi8(1);
    const __m512i                ix[4] = { QX(lb_word_index)(0, 16), QX(lb_word_index)(2, 16), QX(lb_word_index)(4, 16),
                                           QX(lb_word_index)(6, 16) };
    /* 8 ls per group for the products of w + 1; the bsums' weights ls (+-1 - 8), each twice */
    const __m128i qh   = _mm_loadu_si128((const __m128i *)x[0].qh);
    const __m128i ls   = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7)), 1),
                                      _mm_set1_epi16(1));
    const __m128i neg  = _mm_srai_epi16(qh, 15);
    const __m128i sls  = _mm_sub_epi16(_mm_sub_epi16(_mm_xor_si128(ls, neg), neg), _mm_slli_epi16(ls, 3));
    const __m256i wsum = _mm256_set_m128i(_mm_unpackhi_epi16(sls, sls), _mm_unpacklo_epi16(sls, sls));
    const __m512i ls8  = _mm512_castsi128_si512(_mm_slli_epi16(ls, 3));
    __m512i       sumi = _mm512_castsi256_si512(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[0].bsums), wsum));
    sumi               = _mm512_maskz_mov_epi32(0x00ff, sumi);
    for (int p = 0; p < 4; p++) {
        const uint8_t * q  = x[0].qs + 8 * p;
        const uint64_t  a  = QX(lb_iq1s_index4)(q, x[0].qh[2 * p]), b = QX(lb_iq1s_index4)(q + 4, x[0].qh[2 * p + 1]);
        const int       e[8] = { (int)(a & 0xffff), (int)((a >> 16) & 0xffff), (int)((a >> 32) & 0xffff), (int)(a >> 48),
                                 (int)(b & 0xffff), (int)((b >> 16) & 0xffff), (int)((b >> 32) & 0xffff), (int)(b >> 48) };
        const __m512i   u  = _mm512_add_epi8(QX(lb_grid8)(e), ones);
        const __m512i   pr = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[0].qs + 64 * p));
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(pr, _mm512_permutexvar_epi16(ix[p], ls8)));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
}

QX_LB_BMI2 static inline float QX(lb_scale_iq1_s_q8_K_zmm)(const block_iq1_s * restrict x, const block_q8_K * restrict y) { return 0.125f * QX(h2f)(x->d) * y->d; }

QX_LB_BMI2 QX_LB_Q8K_KERNEL(QX(vec_dot_iq1_s_q8_K_zmm), block_iq1_s, QX(lb_block_iq1_s_q8_K_zmm), QX(lb_scale_iq1_s_q8_K_zmm))

/* one block's sums (lanes to be added); inlined, four times per step */
QX_LB_BMI2 static inline __attribute__((always_inline)) __m256i QX(lb_block_iq1_m_q8_K_zmm)(const block_iq1_m * restrict x, const block_q8_K * restrict y) {
    const __m512i                f8  = _mm512_set1_epi8((char)0xf8);
    const __m512i                c8  = _mm512_set1_epi8(8);
    const __m512i                c10 = _mm512_set1_epi8(10);
    /* per 128-bit lane (one qh byte): entry bits 3 and 7 */
    const __m512i sel  = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)0x8080808080808080ull, 0x0808080808080808ll));
    const __m512i ix[4] = { QX(lb_word_index)(0, 8), QX(lb_word_index)(4, 8), QX(lb_word_index)(8, 8), QX(lb_word_index)(12, 8) };
    const __m256i spick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6,
                                           7, 6, 7, 6, 7);
    const __m256i sshift = _mm256_setr_epi16(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9);
    uint64_t sc64;
    memcpy(&sc64, x[0].scales, sizeof(sc64));
    /* the 16 scales in order (half j: bits 3 (j % 4) of word j / 4) */
    const __m256i  s7  = _mm256_and_si256(_mm256_srlv_epi16(_mm256_shuffle_epi8(_mm256_set1_epi64x((long long)sc64), spick), sshift),
                                          _mm256_set1_epi16(7));
    const __m256i  ls  = _mm256_or_si256(_mm256_slli_epi16(s7, 1), _mm256_set1_epi16(1));
    const __m512i  lsz = _mm512_castsi256_si512(ls);
    const __m512i  qhb = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)x[0].qh));
    /* the products below carry 9 ls times each half's activation sum too */
    __m512i        sumi = _mm512_castsi256_si512(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[0].bsums),
                                                                   _mm256_mullo_epi16(ls, _mm256_set1_epi16(-9))));
    sumi               = _mm512_maskz_mov_epi32(0x00ff, sumi);
    for (int p = 0; p < 4; p++) {
        const uint8_t * q  = x[0].qs + 8 * p;
        const uint8_t * h  = x[0].qh + 4 * p;
        const uint64_t  a  = QX(lb_iq1m_index4)(q, h), b = QX(lb_iq1m_index4)(q + 4, h + 2);
        const int       e[8] = { (int)(a & 0xffff), (int)((a >> 16) & 0xffff), (int)((a >> 32) & 0xffff), (int)(a >> 48),
                                 (int)(b & 0xffff), (int)((b >> 16) & 0xffff), (int)((b >> 32) & 0xffff), (int)(b >> 48) };
        /* lane j of hb: qh byte 4 p + j, whose bits 3 and 7 are the deltas of entries 2 j, 2 j + 1 */
        const __m512i   hb = _mm512_shuffle_epi8(qhb, _mm512_set_epi64(0x0303030303030303ll + 0x0404040404040404ll * p,
                                                                       0x0303030303030303ll + 0x0404040404040404ll * p,
                                                                       0x0202020202020202ll + 0x0404040404040404ll * p,
                                                                       0x0202020202020202ll + 0x0404040404040404ll * p,
                                                                       0x0101010101010101ll + 0x0404040404040404ll * p,
                                                                       0x0101010101010101ll + 0x0404040404040404ll * p,
                                                                       0x0404040404040404ll * p, 0x0404040404040404ll * p));
        const __mmask64 kd = _mm512_test_epi8_mask(hb, sel);
        const __m512i   w8 = _mm512_and_si512(_mm512_slli_epi16(QX(lb_grid8)(e), 3), f8);
        /* 8 w + 9 + (delta sign: -1 where the bit is set) */
        const __m512i   u  = _mm512_mask_add_epi8(_mm512_add_epi8(w8, c10), kd, w8, c8);
        const __m512i   pr = _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[0].qs + 64 * p));
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(pr, _mm512_permutexvar_epi16(ix[p], lsz)));
    }
    return _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
}

QX_LB_BMI2 static inline float QX(lb_scale_iq1_m_q8_K_zmm)(const block_iq1_m * restrict x, const block_q8_K * restrict y) {
    return 0.125f * QX(h2f)(QX(lb_iq1m_d)(x)) * y->d;
}

QX_LB_BMI2 QX_LB_Q8K_KERNEL(QX(vec_dot_iq1_m_q8_K_zmm), block_iq1_m, QX(lb_block_iq1_m_q8_K_zmm), QX(lb_scale_iq1_m_q8_K_zmm))
#endif

static const struct ggmlx_qdot_entry QX(lowbit_entries)[] = {
#if QX_VNNI
    { GGML_TYPE_Q1_0, NULL, QX(vec_dot_q1_0_q8_0_zmm) },
#else
    { GGML_TYPE_Q1_0, NULL, QX(vec_dot_q1_0_q8_0) },
#endif
    { GGML_TYPE_Q2_0, NULL, QX(vec_dot_q2_0_q8_0) },
    { GGML_TYPE_TQ1_0, NULL, QX(vec_dot_tq1_0_q8_K) }, { GGML_TYPE_TQ2_0, NULL, QX(vec_dot_tq2_0_q8_K) },
#if QX_VNNI
    { GGML_TYPE_IQ1_S, NULL, QX(vec_dot_iq1_s_q8_K_zmm) }, { GGML_TYPE_IQ1_M, NULL, QX(vec_dot_iq1_m_q8_K_zmm) },
#else
    { GGML_TYPE_IQ1_S, NULL, QX(vec_dot_iq1_s_q8_K) }, { GGML_TYPE_IQ1_M, NULL, QX(vec_dot_iq1_m_q8_K) },
#endif
};

#undef QX_LB_Q8K_KERNEL
