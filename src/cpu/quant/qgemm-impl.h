/*
 * qgemm-impl.h -- what the parts of the quantized GEMM share: the unpacked panel of a, the view
 * of b, and the micro-kernels that multiply them.
 *
 * Every supported weight format becomes the same thing: unsigned 8-bit values u = q + o (o the
 * type's fixed offset, 0 for the formats with a minimum) and, per block of bk elements (32, or
 * 16 for the formats with 16-element sub-blocks), two floats sa and ca with
 *     value = sa * (u - o) + ca.
 * An activation block is db * q (q signed 8-bit, db per block of qk = 32 or 256 elements), so
 * a block's share of a dot product is
 *     db * sa * (sum(u * q) - o * sum(q))  +  ca * db * sum(q):
 * one unsigned-by-signed byte dot (what vpdpbusd computes) started at the integer -o * sum(q),
 * then one multiply-add by sa; db multiplies once per block of b (once per 256 for Q8_K), and
 * the ca term exists only for the formats with a minimum.
 */
#ifndef GGMLX_CPU_QUANT_QGEMM_IMPL_H
#define GGMLX_CPU_QUANT_QGEMM_IMPL_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* rows of a per panel: the 16 float lanes of one AVX-512 register */
#define QG_NR 16

/*
 * QG_NR rows of a over all k: u[(kk / 4) * 64 + r * 4 + kk % 4] is element kk of row r (four
 * consecutive k of the 16 rows fill one 64-byte vector); sa/ca[blk * QG_NR + r] are row r's
 * block scalars. Rows past the end of a are zero (u = 0, sa = ca = 0) and add nothing.
 */
struct qg_panel {
    uint8_t * u;
    float *   sa;
    float *   ca;
    int64_t   k;
    int       bk;
    bool      has_min; /* ca is not all zero */
};

/*
 * The m rows of b: element kk of row j is the byte at
 *   b + j * ldb + (kk / qk) * bsize + qs_off + kk % qk.
 * Per row j, stored row-fastest so that a tile of consecutive rows reads them side by side:
 * corr[blk * m + j] = -o * sum(q) and dbs[blk * m + j] = db * sum(q) over each bk-block (dbs
 * only for the formats with a minimum), db[bb * m + j] the scale of each block of b.
 */
struct qg_bview {
    const char *    b;
    size_t          ldb;
    size_t          bsize;
    size_t          qs_off;
    int             qk;
    int64_t         m;
    const int32_t * corr;
    const float *   dbs;
    const float *   db;
};

/*
 * c[j * ldc + r] for r < nr, j < m (m <= b->m): the products of the panel with rows [0, m) of
 * b. nr <= QG_NR (the panel's valid rows; only those are written).
 */
typedef void (*qg_kernel_fn)(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                             size_t ldc);

void ggmlx_qgemm_kernel_portable(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                                 size_t ldc);
#if defined(__x86_64__) && defined(__GNUC__)
void ggmlx_qgemm_kernel_avx512(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                               size_t ldc);
/* QG_NR rows of k bytes each (row r at rows + r * k) into the panel layout of u */
void ggmlx_qgemm_interleave_avx512(const uint8_t * rows, int64_t k, uint8_t * u);
#endif

/* the block size bk in elements that type t unpacks to (0: not supported) */
int ggmlx_qgemm_unpack_bk(enum ggml_type t);

/* the offset o added to t's signed values (0 for the formats with a minimum) */
int ggmlx_qgemm_unpack_offset(enum ggml_type t);

/* the elements per block of t (32 or 256) */
int ggmlx_qgemm_unpack_qk(enum ggml_type t);

/*
 * One row of k elements of type t into u[0..k) and the block scalars sa/ca[blk * stride]
 * (k a multiple of the type's block size; t one ggmlx_qgemm_unpack_bk supports).
 */
void ggmlx_qgemm_unpack_row(enum ggml_type t, const void * row, int64_t k, uint8_t * u, float * sa, float * ca,
                            size_t stride);

#endif
