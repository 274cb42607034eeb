/*
 * emu-runtime.cpp -- the runtime calls and cuBLAS GEMMs of the kernel emulator (the headers in
 * include/ say what each promises). Streams are tags: the work runs on the calling thread, in
 * the order it is issued, which is the order one CUDA stream guarantees.
 */
#include "cublas_v2.h"
#include "ggmlx-emu.h"

extern "C" {
#include "ggml-math.h"
}

#include <atomic>
#include <string.h>

namespace {

thread_local cudaError_t last_error = cudaSuccess;

std::atomic<uint64_t> n_gemm{ 0 };

struct ggmlx_emu_cublas_tag {
    int unused;
} the_handle;

} // namespace

std::atomic<uint64_t> ggmlx_emu_n_launches{ 0 }, ggmlx_emu_n_blocks{ 0 }, ggmlx_emu_n_threads{ 0 };

extern "C" void ggmlx_emu_set_error(cudaError_t e) {
    if (last_error == cudaSuccess) {
        last_error = e; /* the first error is the one reported, as on a device */
    }
}

extern "C" struct ggmlx_emu_counts ggmlx_emu_counts(void) {
    struct ggmlx_emu_counts c;
    c.launches   = ggmlx_emu_n_launches.load();
    c.blocks     = ggmlx_emu_n_blocks.load();
    c.threads    = ggmlx_emu_n_threads.load();
    c.gemm_calls = n_gemm.load();
    return c;
}

extern "C" cudaError_t cudaGetLastError(void) {
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

extern "C" cudaError_t cudaPeekAtLastError(void) {
    return last_error;
}

extern "C" const char * cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    }
    return "cudaErrorUnknown";
}

extern "C" const char * cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    }
    return "unknown error";
}

extern "C" cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t count, enum cudaMemcpyKind kind,
                                       cudaStream_t stream) {
    (void) stream;
    if ((int) kind < cudaMemcpyHostToHost || (int) kind > cudaMemcpyDefault || (count > 0 && (dst == nullptr || src == nullptr))) {
        return cudaErrorInvalidValue;
    }
    if (count > 0) {
        memmove(dst, src, count);
    }
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemsetAsync(void * dst, int value, size_t count, cudaStream_t stream) {
    (void) stream;
    if (count > 0 && dst == nullptr) {
        return cudaErrorInvalidValue;
    }
    if (count > 0) {
        memset(dst, value, count);
    }
    return cudaSuccess;
}

/* ---- cuBLAS -------------------------------------------------------------------------------- */

extern "C" cublasHandle_t ggmlx_emu_cublas_handle(void) {
    return reinterpret_cast<cublasHandle_t>(&the_handle);
}

extern "C" const char * cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

namespace {

float load(cudaDataType_t t, const void * base, long long i) {
    switch (t) {
    case CUDA_R_16F: return ggmlx_fp16_to_fp32(static_cast<const uint16_t *>(base)[i]);
    case CUDA_R_16BF: return ggmlx_bf16_to_fp32(static_cast<const uint16_t *>(base)[i]);
    default: return static_cast<const float *>(base)[i];
    }
}

bool known(cudaDataType_t t) {
    return t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF;
}

/* cuBLAS's own argument checks: sizes, leading dimensions against the stored shapes, types */
cublasStatus_t check(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                     const void * alpha, cudaDataType_t at, int lda, cudaDataType_t bt, int ldb, const void * beta,
                     cudaDataType_t ct, int ldc, int batch, cublasComputeType_t comp) {
    if (h != ggmlx_emu_cublas_handle()) {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    const bool ops_ok = (ta == CUBLAS_OP_N || ta == CUBLAS_OP_T) && (tb == CUBLAS_OP_N || tb == CUBLAS_OP_T);
    const int  a_rows = ta == CUBLAS_OP_N ? m : k;
    const int  b_rows = tb == CUBLAS_OP_N ? k : n;
    if (!ops_ok || m < 0 || n < 0 || k < 0 || batch < 0 || alpha == nullptr || beta == nullptr ||
        lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    /* A and B of one type, C F32, F32 compute: the combinations the plan uses */
    if (!known(at) || at != bt || ct != CUDA_R_32F || comp != CUBLAS_COMPUTE_32F) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const void * A,
          cudaDataType_t at, int lda, const void * B, cudaDataType_t bt, int ldb, float beta, float * C, int ldc) {
    n_gemm++;
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0.0f;
            for (int l = 0; l < k; l++) {
                const long long ia = ta == CUBLAS_OP_N ? i + (long long) l * lda : l + (long long) i * lda;
                const long long ib = tb == CUBLAS_OP_N ? l + (long long) j * ldb : j + (long long) l * ldb;
                acc += load(at, A, ia) * load(bt, B, ib);
            }
            float & c = C[i + (long long) j * ldc];
            /* beta 0: C is not read, so whatever it held (NaN included) does not matter */
            c = beta == 0.0f ? alpha * acc : alpha * acc + beta * c;
        }
    }
}

size_t elem_size(cudaDataType_t t) {
    return t == CUDA_R_32F ? 4 : 2;
}

} // namespace

extern "C" cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                       int n, int k, const void * alpha, const void * A, cudaDataType_t Atype, int lda,
                                       const void * B, cudaDataType_t Btype, int ldb, const void * beta, void * C,
                                       cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType,
                                       cublasGemmAlgo_t algo) {
    (void) algo;
    const cublasStatus_t s = check(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc, 1,
                                   computeType);
    if (s != CUBLAS_STATUS_SUCCESS) {
        return s;
    }
    gemm(transa, transb, m, n, k, *(const float *) alpha, A, Atype, lda, B, Btype, ldb, *(const float *) beta,
         static_cast<float *>(C), ldc);
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                     cublasOperation_t transb, int m, int n, int k, const void * alpha,
                                                     const void * A, cudaDataType_t Atype, int lda, long long strideA,
                                                     const void * B, cudaDataType_t Btype, int ldb, long long strideB,
                                                     const void * beta, void * C, cudaDataType_t Ctype, int ldc,
                                                     long long strideC, int batchCount, cublasComputeType_t computeType,
                                                     cublasGemmAlgo_t algo) {
    (void) algo;
    const cublasStatus_t s = check(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
                                   batchCount, computeType);
    if (s != CUBLAS_STATUS_SUCCESS) {
        return s;
    }
    for (int b = 0; b < batchCount; b++) {
        gemm(transa, transb, m, n, k, *(const float *) alpha,
             static_cast<const char *>(A) + b * strideA * (long long) elem_size(Atype), Atype, lda,
             static_cast<const char *>(B) + b * strideB * (long long) elem_size(Btype), Btype, ldb,
             *(const float *) beta, static_cast<float *>(C) + b * strideC, ldc);
    }
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                              int m, int n, int k, const void * alpha, const void * const Aarray[],
                                              cudaDataType_t Atype, int lda, const void * const Barray[],
                                              cudaDataType_t Btype, int ldb, const void * beta, void * const Carray[],
                                              cudaDataType_t Ctype, int ldc, int batchCount,
                                              cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    (void) algo;
    const cublasStatus_t s = check(handle, transa, transb, m, n, k, alpha, Atype, lda, Btype, ldb, beta, Ctype, ldc,
                                   batchCount, computeType);
    if (s != CUBLAS_STATUS_SUCCESS) {
        return s;
    }
    if (batchCount > 0 && (Aarray == nullptr || Barray == nullptr || Carray == nullptr)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int b = 0; b < batchCount; b++) {
        gemm(transa, transb, m, n, k, *(const float *) alpha, Aarray[b], Atype, lda, Barray[b], Btype, ldb,
             *(const float *) beta, static_cast<float *>(Carray[b]), ldc);
    }
    return CUBLAS_STATUS_SUCCESS;
}
