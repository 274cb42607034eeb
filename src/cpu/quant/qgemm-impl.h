/*
 * qgemm-impl.h -- what the parts of the quantized GEMM share: the unpacked panel of a, the view
 * of b, and the micro-kernels that multiply them.
 *
 * Every supported weight format becomes the same thing: unsigned 8-bit values u and, per block
 * of bk elements (32, or 16 for the formats with 16-element sub-blocks), two floats sa and ca
 * with  value = sa * u + ca  for every element of the block. An activation block is
 * db * q (q signed 8-bit), so a block's share of a dot product is
 *     db * (sa * sum(u * q) + ca * sum(q)),
 * one unsigned-by-signed byte dot (what vpdpbusd computes) and two scalars per block of b.
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
};

/*
 * The m rows of b: element kk of row j is the byte at
 *   b + j * ldb + (kk / qk) * bsize + qs_off + kk % qk.
 * info[(j * nblk + blk) * 2 + {0, 1}] = db and db * sum(q) for each block of bk elements.
 */
struct qg_bview {
    const char *  b;
    size_t        ldb;
    size_t        bsize;
    size_t        qs_off;
    int           qk;
    int64_t       nblk;
    const float * info;
};

/*
 * c[j * ldc + r] for r < nr, j < m: the products of the panel with every row of b. nr <= QG_NR
 * (the panel's valid rows; only those are written).
 */
typedef void (*qg_kernel_fn)(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                             size_t ldc);

void ggmlx_qgemm_kernel_portable(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                                 size_t ldc);
#if defined(__x86_64__) && defined(__GNUC__)
void ggmlx_qgemm_kernel_avx512(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                               size_t ldc);
#endif

/* the block size bk in elements that type t unpacks to (0: not supported) */
int ggmlx_qgemm_unpack_bk(enum ggml_type t);

/* the elements per block of t (32 or 256) */
int ggmlx_qgemm_unpack_qk(enum ggml_type t);

/*
 * One row of k elements of type t into u[0..k) and the block scalars sa/ca[blk * stride]
 * (k a multiple of the type's block size; t one ggmlx_qgemm_unpack_bk supports).
 */
void ggmlx_qgemm_unpack_row(enum ggml_type t, const void * row, int64_t k, uint8_t * u, float * sa, float * ca,
                            size_t stride);

#endif
