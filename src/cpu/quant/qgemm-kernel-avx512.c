/*
 * qgemm-kernel-avx512.c -- the AVX-512 VNNI micro-kernel of the quantized GEMM. A register tile
 * is the panel's 16 rows (one vector) by up to 8 rows of b: per 4 values of k, one load of the
 * panel and one vpdpbusd per row of b against its 4 bytes broadcast. Each block's integer dot
 * starts at b's offset correction (a broadcast load, no arithmetic) and becomes float once per
 * block: one convert and one multiply-add by the block's scales; the scale of b is applied once
 * per block of b. The block sizes and the tile height are constants in each variant, so the
 * compiler unrolls the k steps and keeps all 24 accumulators in registers.
 */
#include "qgemm-impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#    include <immintrin.h>
#    include <string.h>

#    define QG_MR QG_MG /* rows of b per register tile: one group of the per-row scalars */

#    define QG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

static inline QG_TARGET __m512i bcast4(const char * p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* rows [j0, j0 + mr) of b against the panel; bk, per (blocks of the panel per block of b) and has_min constant */
static inline QG_TARGET __attribute__((always_inline)) void tile(const struct qg_panel * p, __mmask16 mask,
                                                                  const struct qg_bview * b, int64_t j0, const int mr,
                                                                  const int bk, const int per, const bool has_min,
                                                                  float * c, size_t ldc) {
    const int64_t nbb = p->k / b->qk;
    const char * rows[QG_MR];
    __m512 acc[QG_MR];
    for (int jj = 0; jj < mr; jj++) {
        rows[jj] = b->b + (size_t) (j0 + jj) * b->ldb + b->qs_off;
        acc[jj] = _mm512_setzero_ps();
    }
    const uint8_t * u = p->u;
    const float * sa = p->sa;
    const float * ca = p->ca;
    /* the tile's rows lie in one group: each block's scalars for them are side by side */
    const int32_t * corr = b->corr + qg_at(j0, 0, b->nblk);
    const float * dbs = has_min ? b->dbs + qg_at(j0, 0, b->nblk) : NULL;
    const float * db = b->db + qg_at(j0, 0, b->nbb);
    for (int64_t bb = 0; bb < nbb; bb++) {
        const size_t boff = (size_t) bb * b->bsize;
        __m512 sum[QG_MR];
        for (int sb = 0; sb < per; sb++) {
            __m512i dot[QG_MR];
            for (int jj = 0; jj < mr; jj++) {
                dot[jj] = _mm512_set1_epi32(corr[jj]);
            }
#    pragma GCC unroll 8
            for (int t = 0; t < bk / 4; t++) {
                const __m512i av = _mm512_loadu_si512((const void *) (u + 64 * t));
                for (int jj = 0; jj < mr; jj++) {
                    dot[jj] = _mm512_dpbusd_epi32(dot[jj], av, bcast4(rows[jj] + boff + (size_t) (sb * bk + 4 * t)));
                }
            }
            u += (size_t) bk * QG_NR;
            corr += QG_MG;
            const __m512 s = _mm512_loadu_ps(sa);
            sa += QG_NR;
            for (int jj = 0; jj < mr; jj++) {
                const __m512 f = _mm512_cvtepi32_ps(dot[jj]);
                sum[jj] = sb == 0 ? _mm512_mul_ps(f, s) : _mm512_fmadd_ps(f, s, sum[jj]);
            }
            if (has_min) {
                const __m512 cv = _mm512_loadu_ps(ca);
                ca += QG_NR;
                for (int jj = 0; jj < mr; jj++) {
                    acc[jj] = _mm512_fmadd_ps(cv, _mm512_set1_ps(dbs[jj]), acc[jj]);
                }
                dbs += QG_MG;
            }
        }
        for (int jj = 0; jj < mr; jj++) {
            acc[jj] = _mm512_fmadd_ps(sum[jj], _mm512_set1_ps(db[jj]), acc[jj]);
        }
        db += QG_MG;
    }
    for (int jj = 0; jj < mr; jj++) {
        _mm512_mask_storeu_ps(c + (size_t) (j0 + jj) * ldc, mask, acc[jj]);
    }
}

/* all m rows of b: tiles of 8, then 4, 2, 1 for the rest */
#    define QG_VARIANT(name, bk, per, has_min)                                                                      \
        static QG_TARGET void name(const struct qg_panel * p, __mmask16 mask, const struct qg_bview * b, int64_t m, \
                                   float * c, size_t ldc) {                                                          \
            int64_t j0 = 0;                                                                                          \
            for (; j0 + QG_MR <= m; j0 += QG_MR) {                                                                   \
                tile(p, mask, b, j0, QG_MR, bk, per, has_min, c, ldc);                                               \
            }                                                                                                        \
            if (m - j0 >= 4) {                                                                                       \
                tile(p, mask, b, j0, 4, bk, per, has_min, c, ldc);                                                   \
                j0 += 4;                                                                                             \
            }                                                                                                        \
            if (m - j0 >= 2) {                                                                                       \
                tile(p, mask, b, j0, 2, bk, per, has_min, c, ldc);                                                   \
                j0 += 2;                                                                                             \
            }                                                                                                        \
            if (m - j0 >= 1) {                                                                                       \
                tile(p, mask, b, j0, 1, bk, per, has_min, c, ldc);                                                   \
            }                                                                                                        \
        }

QG_VARIANT(run_32_1, 32, 1, false)     /* Q4_0, Q5_0, Q8_0, IQ4_NL */
QG_VARIANT(run_32_1_min, 32, 1, true)  /* Q4_1, Q5_1 */
QG_VARIANT(run_32_8, 32, 8, false)     /* IQ4_XS */
QG_VARIANT(run_32_8_min, 32, 8, true)  /* Q4_K, Q5_K */
QG_VARIANT(run_16_16, 16, 16, false)   /* Q3_K, Q6_K */
QG_VARIANT(run_16_16_min, 16, 16, true) /* Q2_K */

/* the byte sums by vpsadbw on the values made unsigned (+128 each), the halves by F16C */
__attribute__((target("avx2,f16c"))) void ggmlx_qgemm_row_sums32_avx512(const char * row, int64_t nbb, size_t bsize,
                                                                         size_t qs_off, float * d, int32_t * sum) {
    const __m256i flip = _mm256_set1_epi8((char) 0x80);
    for (int64_t bb = 0; bb < nbb; bb++) {
        const char * blk = row + (size_t) bb * bsize;
        const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *) (blk + qs_off)), flip);
        const __m256i s4 = _mm256_sad_epu8(q, _mm256_setzero_si256());
        const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
        const __m128i s1 = _mm_add_epi64(s2, _mm_unpackhi_epi64(s2, s2));
        sum[bb] = _mm_cvtsi128_si32(s1) - 128 * 32;
        uint16_t h;
        memcpy(&h, blk, sizeof h);
        d[bb] = _cvtsh_ss(h);
    }
}

/*
 * The panel layout is a transpose of 4-byte words: 16 rows of 16 words (64 bytes of k each)
 * become 16 vectors of one word per row. Three rounds of unpacks and lane shuffles do it in
 * registers.
 */
QG_TARGET void ggmlx_qgemm_interleave_avx512(const uint8_t * rows, int64_t k, uint8_t * u) {
    int64_t t0 = 0;
    for (; t0 + 16 <= k / 4; t0 += 16) {
        __m512i r[16], x[16];
        for (int i = 0; i < 16; i++) {
            r[i] = _mm512_loadu_si512((const void *) (rows + (size_t) i * (size_t) k + 4 * t0));
        }
        /* pairs of rows: words 4l + {0,1} and 4l + {2,3} of each 128-bit lane l */
        for (int i = 0; i < 16; i += 2) {
            x[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
            x[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
        }
        /* quads of rows: r[4g + w] holds word 4l + w of rows 4g..4g+3 in lane l */
        for (int g = 0; g < 4; g++) {
            r[4 * g + 0] = _mm512_unpacklo_epi64(x[4 * g], x[4 * g + 2]);
            r[4 * g + 1] = _mm512_unpackhi_epi64(x[4 * g], x[4 * g + 2]);
            r[4 * g + 2] = _mm512_unpacklo_epi64(x[4 * g + 1], x[4 * g + 3]);
            r[4 * g + 3] = _mm512_unpackhi_epi64(x[4 * g + 1], x[4 * g + 3]);
        }
        /* gather lane l of the four quads: word 4l + w of all 16 rows */
        for (int w = 0; w < 4; w++) {
            const __m512i ab02 = _mm512_shuffle_i32x4(r[w], r[4 + w], 0x88);
            const __m512i ab13 = _mm512_shuffle_i32x4(r[w], r[4 + w], 0xdd);
            const __m512i cd02 = _mm512_shuffle_i32x4(r[8 + w], r[12 + w], 0x88);
            const __m512i cd13 = _mm512_shuffle_i32x4(r[8 + w], r[12 + w], 0xdd);
            _mm512_storeu_si512((void *) (u + (size_t) (t0 + 0 + w) * 64), _mm512_shuffle_i32x4(ab02, cd02, 0x88));
            _mm512_storeu_si512((void *) (u + (size_t) (t0 + 8 + w) * 64), _mm512_shuffle_i32x4(ab02, cd02, 0xdd));
            _mm512_storeu_si512((void *) (u + (size_t) (t0 + 4 + w) * 64), _mm512_shuffle_i32x4(ab13, cd13, 0x88));
            _mm512_storeu_si512((void *) (u + (size_t) (t0 + 12 + w) * 64), _mm512_shuffle_i32x4(ab13, cd13, 0xdd));
        }
    }
    for (; t0 < k / 4; t0++) {
        for (int i = 0; i < 16; i++) {
            memcpy(u + (size_t) t0 * 64 + (size_t) i * 4, rows + (size_t) i * (size_t) k + 4 * t0, 4);
        }
    }
}

QG_TARGET void ggmlx_qgemm_kernel_avx512(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m,
                                         float * c, size_t ldc) {
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1u);
    const int per = b->qk / p->bk;
    if (p->bk == 32 && per == 1) {
        (p->has_min ? run_32_1_min : run_32_1)(p, mask, b, m, c, ldc);
    } else if (p->bk == 32 && per == 8) {
        (p->has_min ? run_32_8_min : run_32_8)(p, mask, b, m, c, ldc);
    } else if (p->bk == 16 && per == 16) {
        (p->has_min ? run_16_16_min : run_16_16)(p, mask, b, m, c, ldc);
    } else {
        ggmlx_qgemm_kernel_portable(p, nr, b, m, c, ldc);
    }
}

#endif
