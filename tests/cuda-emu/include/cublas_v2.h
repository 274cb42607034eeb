/*
 * cublas_v2.h (kernel emulator) -- the three GEMM entry points ops-mul-mat.cu calls, computed on
 * the host in column-major order exactly as cuBLAS defines them (op(A) is m x k, op(B) k x n,
 * C m x n, leading dimensions in elements), F32 accumulation, alpha and beta read from host
 * pointers. Arguments cuBLAS would refuse are refused here with its status values.
 */
#ifndef GGMLX_EMU_CUBLAS_V2_H
#define GGMLX_EMU_CUBLAS_V2_H

#include "cuda_runtime_api.h"
#include "library_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    CUBLAS_STATUS_SUCCESS          = 0,
    CUBLAS_STATUS_NOT_INITIALIZED  = 1,
    CUBLAS_STATUS_INVALID_VALUE    = 7,
    CUBLAS_STATUS_NOT_SUPPORTED    = 15,
} cublasStatus_t;

typedef enum {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
} cublasOperation_t;

typedef enum {
    CUBLAS_COMPUTE_32F = 68,
} cublasComputeType_t;

typedef enum {
    CUBLAS_GEMM_DEFAULT = -1,
} cublasGemmAlgo_t;

typedef struct ggmlx_emu_cublas * cublasHandle_t;

/* a handle on the default stream, for EMU0; calls with NULL are refused as on a GPU */
cublasHandle_t ggmlx_emu_cublas_handle(void);

cublasStatus_t cublasCreate(cublasHandle_t * handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void * workspace, size_t size);

const char * cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void * alpha, const void * A, cudaDataType_t Atype, int lda, const void * B,
                            cudaDataType_t Btype, int ldb, const void * beta, void * C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo);

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void * alpha, const void * A, cudaDataType_t Atype,
                                          int lda, long long strideA, const void * B, cudaDataType_t Btype, int ldb,
                                          long long strideB, const void * beta, void * C, cudaDataType_t Ctype, int ldc,
                                          long long strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo);

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void * alpha, const void * const Aarray[], cudaDataType_t Atype,
                                   int lda, const void * const Barray[], cudaDataType_t Btype, int ldb,
                                   const void * beta, void * const Carray[], cudaDataType_t Ctype, int ldc,
                                   int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_EMU_CUBLAS_V2_H */
