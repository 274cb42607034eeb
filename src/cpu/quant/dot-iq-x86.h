/*
 * dot-iq-x86.h -- the codebook (IQ) formats' dot products on 256-bit vectors, compiled with
 * dot-x86.h (after it: it uses that file's helpers) for each x86 variant. A 32-element group is
 * four 8-value grid entries side by side; sign bits negate the activations instead of the grid
 * values, so the grid stays unsigned, and each group's integer sum is scaled by its 16-bit
 * sub-block scale in the multiply-add. (IQ1_S and IQ1_M are in dot-lowbit-x86.h.)
 *
 * Per block, what vectors can do for all eight groups at once is done before the group loop:
 * the sign bytes (with their parity bit) and the scales land in small arrays the loop reads back
 * with single loads; the block's integer sums meet their float scale in a vector accumulator, so
 * there is one horizontal sum per row, not one per block.
 */

/* the four 8-byte grid entries of a 32-element group, first entry in the low bytes */
static inline __m256i QX(grid4)(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3) {
    return _mm256_set_epi64x((long long)g3, (long long)g2, (long long)g1, (long long)g0);
}

/* y negated where the sign bits say so: bit j of byte l of `signs` is element 8 l + j */
static inline __m256i QX(apply_signs)(__m256i y, uint32_t signs) {
#if QX_VNNI
    /* the AVX-512 variant has BW/VL: the sign word is the mask of a negation */
    return _mm256_mask_sub_epi8(y, (__mmask32)signs, _mm256_setzero_si256(), y);
#else
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)signs),
                                               _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                                                 0x0101010101010101ll, 0x0000000000000000ll));
    const __m256i mask   = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i neg    = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
    return _mm256_sub_epi8(_mm256_xor_si256(y, neg), neg);
#endif
}

/*
 * Bytes below 128 with bit 7 set where the byte has an odd number of set bits: the 7-bit sign
 * indices of IQ2_XXS, IQ2_XS and IQ3_XXS become the sign bytes the table ggmlx_ksigns_iq2xs holds
 * (the eighth sign makes the count of negatives even), for 32 indices at once.
 */
static inline __m256i QX(with_parity)(__m256i b) {
    /* 0x80 for the nibbles with an odd number of set bits */
    const __m256i odd = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0, -128,
                                         -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i m4  = _mm256_set1_epi8(15);
    const __m256i par = _mm256_xor_si256(_mm256_shuffle_epi8(odd, _mm256_and_si256(b, m4)),
                                         _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(b, 4), m4)));
    return _mm256_or_si256(b, par);
}

/* four 7-bit indices in the low 28 bits of each 32-bit lane -> their four sign bytes */
static inline __m256i QX(ksigns8)(__m256i p) {
    __m256i b = _mm256_and_si256(p, _mm256_set1_epi32(0x7f));
    b = _mm256_or_si256(b, _mm256_and_si256(_mm256_slli_epi32(p, 1), _mm256_set1_epi32(0x7f00)));
    b = _mm256_or_si256(b, _mm256_and_si256(_mm256_slli_epi32(p, 2), _mm256_set1_epi32(0x7f0000)));
    b = _mm256_or_si256(b, _mm256_and_si256(_mm256_slli_epi32(p, 3), _mm256_set1_epi32(0x7f000000)));
    return QX(with_parity)(b);
}

/* the scales 2 s + 1 of the top nibbles of eight 32-bit lanes, as 32-bit lanes (low word read) */
static inline __m256i QX(top_scales8)(__m256i p) {
    return _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(p, 28), 1), _mm256_set1_epi32(1));
}

/*
 * IQ2_XS/IQ2_S: eight scale bytes, each two 4-bit scales (low nibble: group entries 0-1, high:
 * 2-3), as the 16 words 2 s + 1 in that order: group g's pair is words 2 g and 2 g + 1.
 */
static inline void QX(nibble_scales16)(const uint8_t * scales, int16_t out[16]) {
    const __m128i v  = _mm_loadl_epi64((const __m128i *)scales);
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i b  = _mm_unpacklo_epi8(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
    const __m256i w  = _mm256_cvtepu8_epi16(b);
    _mm256_storeu_si256((__m256i *)out, _mm256_or_si256(_mm256_slli_epi16(w, 1), _mm256_set1_epi16(1)));
}

/* a group's two scales (words 2 g, 2 g + 1 of nibble_scales16) over the low and the high lane */
static inline __m256i QX(lane_scales)(const int16_t * pair) {
    int32_t two;
    memcpy(&two, pair, sizeof(two));
    return _mm256_shuffle_epi8(_mm256_set1_epi32(two), _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2,
                                                                        3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
}

static inline __m256 QX(block_acc)(__m256 acc, __m256i sumi, float d) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d), acc);
}

static void QX(vec_dot_iq2_xxs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    __m256                         acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        /* each group is a word of four grid indices, then a word of four sign indices and a scale */
        const __m256i lo = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i hi = _mm256_loadu_si256((const __m256i *)(x[i].qs + 16));
        const __m256i sw = _mm256_permute4x64_epi64(
            _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi), _MM_SHUFFLE(3, 1, 3, 1))),
            _MM_SHUFFLE(3, 1, 2, 0));
        uint32_t sg[8];
        int32_t  sc[8];
        _mm256_storeu_si256((__m256i *)sg, QX(ksigns8)(sw));
        _mm256_storeu_si256((__m256i *)sc, QX(top_scales8)(sw));
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            uint32_t a;
            memcpy(&a, x[i].qs + 4 * g, sizeof(a));
            const __m256i w  = QX(grid4)(ggmlx_iq2xxs_grid[a & 255], ggmlx_iq2xxs_grid[(a >> 8) & 255],
                                         ggmlx_iq2xxs_grid[(a >> 16) & 255], ggmlx_iq2xxs_grid[a >> 24]);
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg[g]);
            sumi = QX(dot_scaled)(sumi, w, yv, _mm256_set1_epi16((short)sc[g]));
        }
        acc = QX(block_acc)(acc, sumi, QX(h2f)(x[i].d) * y[i].d);
    }
    *s = 0.125f * QX(hsum_ps)(acc);
}

static void QX(vec_dot_iq2_xs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    __m256                        acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        /* a 16-bit entry: 9 bits of grid index, 7 of sign index */
        const __m256i lo = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)x[i].qs), 9);
        const __m256i hi = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(x[i].qs + 16)), 9);
        uint32_t      sg[8];
        int16_t       sc[16];
        _mm256_storeu_si256((__m256i *)sg,
                            QX(with_parity)(_mm256_permute4x64_epi64(_mm256_packus_epi16(lo, hi), _MM_SHUFFLE(3, 1, 2, 0))));
        QX(nibble_scales16)(x[i].scales, sc);
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint16_t * q  = x[i].qs + 4 * g;
            const __m256i    w  = QX(grid4)(ggmlx_iq2xs_grid[q[0] & 511], ggmlx_iq2xs_grid[q[1] & 511],
                                            ggmlx_iq2xs_grid[q[2] & 511], ggmlx_iq2xs_grid[q[3] & 511]);
            const __m256i    yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg[g]);
            sumi = QX(dot_scaled)(sumi, w, yv, QX(lane_scales)(sc + 2 * g));
        }
        acc = QX(block_acc)(acc, sumi, QX(h2f)(x[i].d) * y[i].d);
    }
    *s = 0.125f * QX(hsum_ps)(acc);
}

static void QX(vec_dot_iq2_s_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    __m256                       acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        const uint8_t * signs = x[i].qs + QK_K / 8;
        int16_t         sc[16];
        QX(nibble_scales16)(x[i].scales, sc);
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q  = x[i].qs + 4 * g;
            const int       qh = x[i].qh[g];
            const __m256i   w  = QX(grid4)(ggmlx_iq2s_grid[q[0] | ((qh << 8) & 0x300)], ggmlx_iq2s_grid[q[1] | ((qh << 6) & 0x300)],
                                           ggmlx_iq2s_grid[q[2] | ((qh << 4) & 0x300)], ggmlx_iq2s_grid[q[3] | ((qh << 2) & 0x300)]);
            uint32_t        sg;
            memcpy(&sg, signs + 4 * g, sizeof(sg));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg);
            sumi = QX(dot_scaled)(sumi, w, yv, QX(lane_scales)(sc + 2 * g));
        }
        acc = QX(block_acc)(acc, sumi, QX(h2f)(x[i].d) * y[i].d);
    }
    *s = 0.125f * QX(hsum_ps)(acc);
}

/* two 4-value IQ3 grid entries as one 8-value entry */
static inline uint64_t QX(pair3)(uint32_t a, uint32_t b) { return (uint64_t)a | ((uint64_t)b << 32); }

static void QX(vec_dot_iq3_xxs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    __m256                         acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        /* after the 64 grid indices, one word per group: four sign indices and a scale */
        const __m256i sw = _mm256_loadu_si256((const __m256i *)(x[i].qs + QK_K / 4));
        uint32_t      sg[8];
        int32_t       sc[8];
        _mm256_storeu_si256((__m256i *)sg, QX(ksigns8)(sw));
        _mm256_storeu_si256((__m256i *)sc, QX(top_scales8)(sw));
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q = x[i].qs + 8 * g;
            const __m256i w  = QX(grid4)(QX(pair3)(ggmlx_iq3xxs_grid[q[0]], ggmlx_iq3xxs_grid[q[1]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[2]], ggmlx_iq3xxs_grid[q[3]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[4]], ggmlx_iq3xxs_grid[q[5]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[6]], ggmlx_iq3xxs_grid[q[7]]));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg[g]);
            sumi = QX(dot_scaled)(sumi, w, yv, _mm256_set1_epi16((short)sc[g]));
        }
        acc = QX(block_acc)(acc, sumi, QX(h2f)(x[i].d) * y[i].d);
    }
    *s = 0.25f * QX(hsum_ps)(acc);
}

/*
 * bit l of qh as bit 8 of lane l. IQ3_S's grid entries come by gather: its indices need a bit of
 * qh each, and the gather took less than eight scalar loads with their shifts and inserts.
 */
static inline __m256i QX(qh_bit8)(int qh) {
    return _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(qh), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                            _mm256_set1_epi32(256));
}

static void QX(vec_dot_iq3_s_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    __m256                       acc = _mm256_setzero_ps();
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q  = x[i].qs + 8 * g;
            const int       qh = x[i].qh[g];
            /* eight 4-byte entries, each index's ninth bit from qh */
            const __m256i   idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q)), QX(qh_bit8)(qh));
            const __m256i   w   = _mm256_i32gather_epi32((const int *)ggmlx_iq3s_grid, idx, 4);
            uint32_t sg;
            memcpy(&sg, x[i].signs + 4 * g, sizeof(sg));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg);
            const int     nib = (x[i].scales[g / 2] >> (4 * (g % 2))) & 15;
            sumi = QX(dot_scaled)(sumi, w, yv, _mm256_set1_epi16((short)(2 * nib + 1)));
        }
        acc = QX(block_acc)(acc, sumi, QX(h2f)(x[i].d) * y[i].d);
    }
    *s = QX(hsum_ps)(acc);
}

static const struct ggmlx_qdot_entry QX(iq_entries)[] = {
    { GGML_TYPE_IQ2_XXS, NULL, QX(vec_dot_iq2_xxs_q8_K) }, { GGML_TYPE_IQ2_XS, NULL, QX(vec_dot_iq2_xs_q8_K) },
    { GGML_TYPE_IQ2_S, NULL, QX(vec_dot_iq2_s_q8_K) },     { GGML_TYPE_IQ3_XXS, NULL, QX(vec_dot_iq3_xxs_q8_K) },
    { GGML_TYPE_IQ3_S, NULL, QX(vec_dot_iq3_s_q8_K) },
};
