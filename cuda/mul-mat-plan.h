/*
 * mul-mat-plan.h -- how a MUL_MAT node becomes cuBLAS calls, described in plain C11 (no CUDA
 * header) so that tests without a GPU can replay the description through a GEMM emulator.
 *
 * ggml's dst[n, m, i2, i3] = sum_k a[k, n, i2 / r2, i3 / r3] * b[k, m, i2, i3] is, column-major,
 * C = A^T B with A the K x N matrix whose columns are a's rows, B the K x M matrix of b's rows
 * and C (N x M) dst's rows. A transposed-view b (its rows strided, its columns contiguous) is
 * read as B^T without a copy. Dims 2 and 3 become one GEMM (folded into columns), a strided
 * batch (possibly looped over dim 3), or a pointer-array batch for the broadcasts no stride
 * can express.
 *
 * Enums are plain ints with cuBLAS's own values; ops-mul-mat.cu checks them at compile time.
 */
#ifndef GGMLX_CUDA_MUL_MAT_PLAN_H
#define GGMLX_CUDA_MUL_MAT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#    define GGMLX_MM_HD __host__ __device__
#else
#    define GGMLX_MM_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* cudaDataType_t values */
#define GGMLX_MM_R_32F  0
#define GGMLX_MM_R_16F  2
#define GGMLX_MM_R_16BF 14
/* cublasOperation_t values */
#define GGMLX_MM_OP_N 0
#define GGMLX_MM_OP_T 1
/* cublasComputeType_t: CUBLAS_COMPUTE_32F (F32 accumulation; tensor cores for 16-bit inputs) */
#define GGMLX_MM_COMPUTE_32F 68

enum ggmlx_mm_api {
    GGMLX_MM_API_GEMM    = 0, /* cublasGemmEx */
    GGMLX_MM_API_STRIDED = 1, /* cublasGemmStridedBatchedEx */
    GGMLX_MM_API_BATCHED = 2, /* cublasGemmBatchedEx, pointer arrays in scratch */
};

/* A tensor as the plan sees it: ggml type (enum ggml_type value), shape and byte strides. */
struct ggmlx_mm_tensor {
    int     type;
    int64_t ne[4];
    size_t  nb[4];
};

/*
 * An operand copied into scratch before the GEMM: all of it, contiguous in ggml order
 * [ne0, ne1, ne2, ne3], converted to `type` (a ggml type).
 */
struct ggmlx_mm_conv {
    bool   needed;
    int    type;
    size_t offset; /* bytes into scratch */
    size_t size;
};

struct ggmlx_mm_plan {
    int api;
    int transa, transb;
    int m, n, k;
    int a_type, b_type, c_type; /* cudaDataType_t */
    int compute_type;           /* cublasComputeType_t */
    int lda, ldb, ldc;
    /* strided batch: element strides between consecutive matrices of one call */
    long long stride_a, stride_b, stride_c;
    int batch;   /* matrices per call (1 for GEMM) */
    int n_calls; /* calls made in a loop; call c starts at these element offsets: */
    int64_t call_div_a, call_step_a, call_step_b, call_step_c; /* A: (c / div) * step; B, C: c * step */
    /*
     * Pointer-array batch (and the reference for every other form): matrix i of B2 * B3 is
     * i2 = i % bne2, i3 = i / bne2, and starts at these element offsets:
     *   A: (i2 / r2) * sa2 + (i3 / r3) * sa3,  B: i2 * sb2 + i3 * sb3,  C: i2 * sc2 + i3 * sc3
     */
    int64_t bne2, r2, r3, sa2, sa3, sb2, sb3, sc2, sc3;
    size_t  ptr_offset; /* BATCHED: three arrays of `batch` device pointers (A, B, C) in scratch */
    struct ggmlx_mm_conv conv_a; /* src0 copied (same type) when its layout is not one cuBLAS reads */
    struct ggmlx_mm_conv conv_b; /* src1 converted to a's type and made contiguous */
    size_t scratch_size;
};

/* Scratch offsets are multiples of this (cuBLAS and vector loads like aligned operands). */
#define GGMLX_MM_SCRATCH_ALIGN 256

/*
 * Plans dst = mul_mat(a, b). false (with a reason in why) when the node cannot go to cuBLAS
 * (types, a dimension past INT_MAX, dst not F32 with unit element stride, shapes that do not fit).
 */
bool ggmlx_mm_plan_make(const struct ggmlx_mm_tensor * a, const struct ggmlx_mm_tensor * b,
                        const struct ggmlx_mm_tensor * dst, struct ggmlx_mm_plan * plan, char * why, size_t why_size);

/* Element offsets of matrix i in the pointer-array form (see the struct). */
static inline GGMLX_MM_HD void ggmlx_mm_batch_offsets(const struct ggmlx_mm_plan * p, int64_t i, int64_t * oa,
                                                      int64_t * ob, int64_t * oc) {
    const int64_t i2 = i % p->bne2, i3 = i / p->bne2;
    *oa = (i2 / p->r2) * p->sa2 + (i3 / p->r3) * p->sa3;
    *ob = i2 * p->sb2 + i3 * p->sb3;
    *oc = i2 * p->sc2 + i3 * p->sc3;
}

/* Element offsets where call c of n_calls starts. */
static inline GGMLX_MM_HD void ggmlx_mm_call_offsets(const struct ggmlx_mm_plan * p, int64_t c, int64_t * oa,
                                                     int64_t * ob, int64_t * oc) {
    *oa = (c / p->call_div_a) * p->call_step_a;
    *ob = c * p->call_step_b;
    *oc = c * p->call_step_c;
}

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_CUDA_MUL_MAT_PLAN_H */
