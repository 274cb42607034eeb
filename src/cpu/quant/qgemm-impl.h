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

/* rows of b per group of the per-row scalars: the tallest register tile */
#define QG_MG 8

static inline size_t qg_at(int64_t j, int64_t x, int64_t n) {
    return (size_t) (((j / QG_MG) * n + x) * QG_MG + j % QG_MG);
}

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
 * Per row j, stored by groups of QG_MG rows so that a tile of rows reads them side by side and
 * one block after the other: with at(j, x, n) = ((j / QG_MG) * n + x) * QG_MG + j % QG_MG,
 * corr[at(j, blk, nblk)] = -o * sum(q) and dbs[at(j, blk, nblk)] = db * sum(q) over each
 * bk-block (dbs only for the formats with a minimum), db[at(j, bb, nbb)] the scale of each
 * block of b.
 */
struct qg_bview {
    const char *    b;
    size_t          ldb;
    size_t          bsize;
    size_t          qs_off;
    int             qk;
    int64_t         nblk;
    int64_t         nbb;
    const int32_t * corr;
    const float *   dbs;
    const float *   db;
};

/*
 * c[j * ldc + r] for r < nr, j < m: the products of the panel with rows [0, m) of
 * b. nr <= QG_NR (the panel's valid rows; only those are written).
 */
typedef void (*qg_kernel_fn)(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                             size_t ldc);

void ggmlx_qgemm_kernel_portable(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                                 size_t ldc);
/* d[bb] and the sum of the 32 values of each of the nbb blocks of one Q8_0 / Q8_1 row (scale: a half at offset 0) */
typedef void (*qg_row_sums32_fn)(const char * row, int64_t nbb, size_t bsize, size_t qs_off, float * d, int32_t * sum);

#if defined(__x86_64__) && defined(__GNUC__)
void ggmlx_qgemm_row_sums32_avx512(const char * row, int64_t nbb, size_t bsize, size_t qs_off, float * d,
                                   int32_t * sum);
void ggmlx_qgemm_kernel_avx512(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                               size_t ldc);
#    if defined(__linux__)
/* whether this process may use the AMX kernel (checked once: CPUID, the OS's permission, a probe) */
bool ggmlx_qgemm_amx_available(void);
void ggmlx_qgemm_kernel_amx(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m, float * c,
                            size_t ldc);
#    endif
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
