/*
 * dot-avx512-vbmi.h -- the AVX-512 kernels that also need VBMI (byte permutes across a whole
 * vector): four blocks of a 32-element format per vector, gathered from whole-vector loads, and
 * the matrix-vector kernels that take four weight rows per pass over the activations. Included
 * once, by dot-avx512.c, after its 512-bit kernels (whose helpers and 256-bit tail kernels these
 * use); the functions carry their own target, outside that file's target region.
 */
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
