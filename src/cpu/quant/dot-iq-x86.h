/*
 * dot-iq-x86.h -- the codebook (IQ) formats' dot products on 256-bit vectors, compiled with
 * dot-x86.h (after it: it uses that file's helpers) for each x86 variant. A 32-element group is
 * four 8-value grid entries side by side; sign bits negate the activations instead of the grid
 * values, so the grid stays unsigned, and each group's integer sum is scaled by its 16-bit
 * sub-block scale in the multiply-add. (IQ1_S and IQ1_M are in dot-lowbit-x86.h.)
 */

/* the four 8-byte grid entries of a 32-element group, first entry in the low bytes */
static inline __m256i QX(grid4)(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3) {
    return _mm256_set_epi64x((long long)g3, (long long)g2, (long long)g1, (long long)g0);
}

/* y negated where the sign bits say so: bit j of byte l of `signs` is element 8 l + j */
static inline __m256i QX(apply_signs)(__m256i y, uint32_t signs) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)signs),
                                               _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll,
                                                                 0x0101010101010101ll, 0x0000000000000000ll));
    const __m256i mask   = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i neg    = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
    return _mm256_sub_epi8(_mm256_xor_si256(y, neg), neg);
}

static inline uint32_t QX(ksigns4)(uint32_t packed) {
    return (uint32_t)ggmlx_ksigns_iq2xs[packed & 127] | ((uint32_t)ggmlx_ksigns_iq2xs[(packed >> 7) & 127] << 8) |
           ((uint32_t)ggmlx_ksigns_iq2xs[(packed >> 14) & 127] << 16) | ((uint32_t)ggmlx_ksigns_iq2xs[(packed >> 21) & 127] << 24);
}

static void QX(vec_dot_iq2_xxs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    float                          acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            uint32_t a[2];
            memcpy(a, x[i].qs + 4 * g, sizeof(a));
            const __m256i w  = QX(grid4)(ggmlx_iq2xxs_grid[a[0] & 255], ggmlx_iq2xxs_grid[(a[0] >> 8) & 255],
                                         ggmlx_iq2xxs_grid[(a[0] >> 16) & 255], ggmlx_iq2xxs_grid[a[0] >> 24]);
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), QX(ksigns4)(a[1]));
            sumi = QX(dot_scaled)(sumi, w, yv, _mm256_set1_epi16((short)(2 * (a[1] >> 28) + 1)));
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = 0.125f * acc;
}

static void QX(vec_dot_iq2_xs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_xs * restrict x   = vx;
    const block_q8_K * restrict   y   = vy;
    const int                     nb  = n / QK_K;
    float                         acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint16_t * q  = x[i].qs + 4 * g;
            const __m256i    w  = QX(grid4)(ggmlx_iq2xs_grid[q[0] & 511], ggmlx_iq2xs_grid[q[1] & 511],
                                            ggmlx_iq2xs_grid[q[2] & 511], ggmlx_iq2xs_grid[q[3] & 511]);
            const uint32_t   sg = (uint32_t)ggmlx_ksigns_iq2xs[q[0] >> 9] | ((uint32_t)ggmlx_ksigns_iq2xs[q[1] >> 9] << 8) |
                                ((uint32_t)ggmlx_ksigns_iq2xs[q[2] >> 9] << 16) | ((uint32_t)ggmlx_ksigns_iq2xs[q[3] >> 9] << 24);
            const __m256i    yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg);
            /* entries 0-1 (the low lane) take the low nibble's scale, 2-3 the high one's */
            const __m256i    sc = _mm256_set_m128i(_mm_set1_epi16((short)(2 * (x[i].scales[g] >> 4) + 1)),
                                                   _mm_set1_epi16((short)(2 * (x[i].scales[g] & 15) + 1)));
            sumi = QX(dot_scaled)(sumi, w, yv, sc);
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = 0.125f * acc;
}

static void QX(vec_dot_iq2_s_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq2_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        const uint8_t * signs = x[i].qs + QK_K / 8;
        __m256i         sumi  = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q  = x[i].qs + 4 * g;
            const int       qh = x[i].qh[g];
            const __m256i   w  = QX(grid4)(ggmlx_iq2s_grid[q[0] | ((qh << 8) & 0x300)], ggmlx_iq2s_grid[q[1] | ((qh << 6) & 0x300)],
                                           ggmlx_iq2s_grid[q[2] | ((qh << 4) & 0x300)], ggmlx_iq2s_grid[q[3] | ((qh << 2) & 0x300)]);
            uint32_t        sg;
            memcpy(&sg, signs + 4 * g, sizeof(sg));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg);
            const __m256i sc = _mm256_set_m128i(_mm_set1_epi16((short)(2 * (x[i].scales[g] >> 4) + 1)),
                                                _mm_set1_epi16((short)(2 * (x[i].scales[g] & 15) + 1)));
            sumi = QX(dot_scaled)(sumi, w, yv, sc);
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = 0.125f * acc;
}

/* two 4-value IQ3 grid entries as one 8-value entry */
static inline uint64_t QX(pair3)(uint32_t a, uint32_t b) { return (uint64_t)a | ((uint64_t)b << 32); }

static void QX(vec_dot_iq3_xxs_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_xxs * restrict x   = vx;
    const block_q8_K * restrict    y   = vy;
    const int                      nb  = n / QK_K;
    float                          acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q = x[i].qs + 8 * g;
            uint32_t        w32;
            memcpy(&w32, x[i].qs + QK_K / 4 + 4 * g, sizeof(w32));
            const __m256i w  = QX(grid4)(QX(pair3)(ggmlx_iq3xxs_grid[q[0]], ggmlx_iq3xxs_grid[q[1]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[2]], ggmlx_iq3xxs_grid[q[3]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[4]], ggmlx_iq3xxs_grid[q[5]]),
                                         QX(pair3)(ggmlx_iq3xxs_grid[q[6]], ggmlx_iq3xxs_grid[q[7]]));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), QX(ksigns4)(w32));
            sumi = QX(dot_scaled)(sumi, w, yv, _mm256_set1_epi16((short)(2 * (w32 >> 28) + 1)));
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = 0.25f * acc;
}

static void QX(vec_dot_iq3_s_q8_K)(GGMLX_VEC_DOT_ARGS) {
    GGMLX_VEC_DOT_UNUSED;
    const block_iq3_s * restrict x   = vx;
    const block_q8_K * restrict  y   = vy;
    const int                    nb  = n / QK_K;
    float                        acc = 0.0f;
    for (int i = 0; i < nb; i++) {
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < QK_K / 32; g++) {
            const uint8_t * q  = x[i].qs + 8 * g;
            const int       qh = x[i].qh[g];
            uint64_t        e[4];
            for (int l = 0; l < 4; l++) {
                e[l] = QX(pair3)(ggmlx_iq3s_grid[q[2 * l] | ((qh << (8 - 2 * l)) & 256)],
                                 ggmlx_iq3s_grid[q[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)]);
            }
            uint32_t sg;
            memcpy(&sg, x[i].signs + 4 * g, sizeof(sg));
            const __m256i yv = QX(apply_signs)(_mm256_loadu_si256((const __m256i *)(y[i].qs + 32 * g)), sg);
            const int     nib = (x[i].scales[g / 2] >> (4 * (g % 2))) & 15;
            sumi = QX(dot_scaled)(sumi, QX(grid4)(e[0], e[1], e[2], e[3]), yv, _mm256_set1_epi16((short)(2 * nib + 1)));
        }
        acc += QX(h2f)(x[i].d) * y[i].d * (float)QX(hsum_epi32)(sumi);
    }
    *s = acc;
}

static const struct ggmlx_qdot_entry QX(iq_entries)[] = {
    { GGML_TYPE_IQ2_XXS, NULL, QX(vec_dot_iq2_xxs_q8_K) }, { GGML_TYPE_IQ2_XS, NULL, QX(vec_dot_iq2_xs_q8_K) },
    { GGML_TYPE_IQ2_S, NULL, QX(vec_dot_iq2_s_q8_K) },     { GGML_TYPE_IQ3_XXS, NULL, QX(vec_dot_iq3_xxs_q8_K) },
    { GGML_TYPE_IQ3_S, NULL, QX(vec_dot_iq3_s_q8_K) },
};
