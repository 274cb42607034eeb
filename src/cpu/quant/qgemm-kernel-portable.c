/*
 * qgemm-kernel-portable.c -- the plain C micro-kernel of the quantized GEMM: the reference the
 * SIMD kernels are tested against, and the kernel where no SIMD one applies. Same panel and
 * same arithmetic as the SIMD kernels (see qgemm-impl.h).
 */
#include "qgemm-impl.h"

void ggmlx_qgemm_kernel_portable(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                                 size_t ldc) {
    const int bk = p->bk;
    const int64_t nbb = p->k / b->qk; /* blocks of b per row */
    const int per_bb = b->qk / bk;    /* unpacked blocks per block of b */
    for (int64_t j = 0; j < m; j++) {
        const char * row = b->b + (size_t) j * b->ldb;
        float acc[QG_NR] = { 0 };
        for (int64_t bb = 0; bb < nbb; bb++) {
            const int8_t * q = (const int8_t *) (row + (size_t) bb * b->bsize + b->qs_off);
            float sum[QG_NR] = { 0 };
            for (int sb = 0; sb < per_bb; sb++) {
                const int64_t blk = bb * per_bb + sb;
                const uint8_t * u = p->u + (size_t) blk * (size_t) bk * QG_NR;
                int32_t dot[QG_NR];
                for (int r = 0; r < QG_NR; r++) {
                    dot[r] = b->corr[qg_at(j, blk, b->nblk)];
                }
                for (int t = 0; t < bk / 4; t++) {
                    for (int r = 0; r < QG_NR; r++) {
                        for (int e = 0; e < 4; e++) {
                            dot[r] += (int32_t) u[(t * QG_NR + r) * 4 + e] * (int32_t) q[sb * bk + 4 * t + e];
                        }
                    }
                }
                for (int r = 0; r < QG_NR; r++) {
                    sum[r] += p->sa[blk * QG_NR + r] * (float) dot[r];
                }
                if (p->has_min) {
                    for (int r = 0; r < QG_NR; r++) {
                        acc[r] += p->ca[blk * QG_NR + r] * b->dbs[qg_at(j, blk, b->nblk)];
                    }
                }
            }
            for (int r = 0; r < QG_NR; r++) {
                acc[r] += sum[r] * b->db[qg_at(j, bb, b->nbb)];
            }
        }
        for (int r = 0; r < nr; r++) {
            c[(size_t) j * ldc + (size_t) r] = acc[r];
        }
    }
}
