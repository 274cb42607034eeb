/*
 * qgemm-kernel-avx512.c -- the AVX-512 VNNI micro-kernel of the quantized GEMM. A register tile
 * is the panel's 16 rows (one vector) by up to 8 rows of b: per 4 values of k, one load of the
 * panel and one vpdpbusd per row of b against its 4 bytes broadcast. Each block's integer dots
 * become float once per block (db * (sa * dot + ca * sum(q))); the float work goes to the other
 * vector port while vpdpbusd keeps its own busy.
 */
#include "qgemm-impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#    include <immintrin.h>
#    include <string.h>

#    define QG_MR 8 /* rows of b per register tile: 8 int + 8 float accumulators */

#    define QG_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

static inline QG_TARGET __m512i bcast4(const int8_t * p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

static inline QG_TARGET __attribute__((always_inline)) void tile(const struct qg_panel * p, __mmask16 mask,
                                                                  const struct qg_bview * b, int64_t j0, int mr,
                                                                  float * c, size_t ldc) {
    const int bk = p->bk;
    const int64_t nbb = p->k / b->qk;
    const int per_bb = b->qk / bk;
    const char * rows[QG_MR];
    const float * info[QG_MR];
    __m512 acc[QG_MR];
    for (int jj = 0; jj < mr; jj++) {
        rows[jj] = b->b + (size_t) (j0 + jj) * b->ldb + b->qs_off;
        info[jj] = b->info + (size_t) (j0 + jj) * (size_t) b->nblk * 2;
        acc[jj] = _mm512_setzero_ps();
    }
    const uint8_t * u = p->u;
    for (int64_t bb = 0; bb < nbb; bb++) {
        const size_t boff = (size_t) bb * b->bsize;
        for (int sb = 0; sb < per_bb; sb++) {
            const int64_t blk = bb * per_bb + sb;
            __m512i dot[QG_MR];
            for (int jj = 0; jj < mr; jj++) {
                dot[jj] = _mm512_setzero_si512();
            }
            for (int t = 0; t < bk / 4; t++) {
                const __m512i av = _mm512_loadu_si512((const void *) u);
                u += 64;
                for (int jj = 0; jj < mr; jj++) {
                    const int8_t * q = (const int8_t *) rows[jj] + boff + (size_t) (sb * bk + 4 * t);
                    dot[jj] = _mm512_dpbusd_epi32(dot[jj], av, bcast4(q));
                }
            }
            const __m512 sa = _mm512_loadu_ps(p->sa + blk * QG_NR);
            const __m512 ca = _mm512_loadu_ps(p->ca + blk * QG_NR);
            for (int jj = 0; jj < mr; jj++) {
                const __m512 d = _mm512_mul_ps(_mm512_cvtepi32_ps(dot[jj]), _mm512_set1_ps(info[jj][2 * blk]));
                acc[jj] = _mm512_fmadd_ps(sa, d, acc[jj]);
                acc[jj] = _mm512_fmadd_ps(ca, _mm512_set1_ps(info[jj][2 * blk + 1]), acc[jj]);
            }
        }
    }
    for (int jj = 0; jj < mr; jj++) {
        _mm512_mask_storeu_ps(c + (size_t) (j0 + jj) * ldc, mask, acc[jj]);
    }
}

QG_TARGET void ggmlx_qgemm_kernel_avx512(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m,
                                         float * c, size_t ldc) {
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1u);
    int64_t j0 = 0;
    for (; j0 + QG_MR <= m; j0 += QG_MR) {
        tile(p, mask, b, j0, QG_MR, c, ldc);
    }
    switch (m - j0) {
        case 1: tile(p, mask, b, j0, 1, c, ldc); break;
        case 2: tile(p, mask, b, j0, 2, c, ldc); break;
        case 3: tile(p, mask, b, j0, 3, c, ldc); break;
        case 4: tile(p, mask, b, j0, 4, c, ldc); break;
        case 5: tile(p, mask, b, j0, 5, c, ldc); break;
        case 6: tile(p, mask, b, j0, 6, c, ldc); break;
        case 7: tile(p, mask, b, j0, 7, c, ldc); break;
        default: break;
    }
}

#endif
