/*
 * emu-cublas.cpp -- cuBLAS for the emulator: handles bound to a stream, the three GEMMs the plans
 * of mul-mat-plan.c use (include/cublas_v2.h says what each promises), queued on the handle's
 * stream like any other work; and the emulator's counters.
 */
#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "ggmlx-emu.h"

extern "C" {
#include "ggml-math.h"
}

#include <atomic>
#include <string.h>
#include <vector>

namespace {

std::atomic<uint64_t> n_gemm{ 0 };

} // namespace

/* a handle: its stream, and the magic that tells a live one from anything else */
struct ggmlx_emu_cublas {
    uint32_t     magic;
    cudaStream_t stream;
    void *       workspace;
    size_t       workspace_size;
};

#define EMU_CUBLAS_MAGIC 0x63626c73u /* "cbls" */

static ggmlx_emu_cublas default_handle = { EMU_CUBLAS_MAGIC, nullptr, nullptr, 0 };

std::atomic<uint64_t> ggmlx_emu_n_launches{ 0 }, ggmlx_emu_n_blocks{ 0 }, ggmlx_emu_n_threads{ 0 };

extern "C" struct ggmlx_emu_counts ggmlx_emu_counts(void) {
    struct ggmlx_emu_counts c;
    c.launches   = ggmlx_emu_n_launches.load();
    c.blocks     = ggmlx_emu_n_blocks.load();
    c.threads    = ggmlx_emu_n_threads.load();
    c.gemm_calls = n_gemm.load();
    return c;
}

/* ---- cuBLAS -------------------------------------------------------------------------------- */

extern "C" cublasHandle_t ggmlx_emu_cublas_handle(void) {
    return &default_handle;
}

extern "C" cublasStatus_t cublasCreate(cublasHandle_t * handle) {
    *handle = new ggmlx_emu_cublas{ EMU_CUBLAS_MAGIC, nullptr, nullptr, 0 };
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    if (handle == nullptr || handle->magic != EMU_CUBLAS_MAGIC || handle == &default_handle) {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    handle->magic = 0;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
    if (handle == nullptr || handle->magic != EMU_CUBLAS_MAGIC) {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void * workspace, size_t size) {
    if (handle == nullptr || handle->magic != EMU_CUBLAS_MAGIC) {
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    handle->workspace      = workspace;
    handle->workspace_size = size;
    return CUBLAS_STATUS_SUCCESS;
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
    if (h == nullptr || h->magic != EMU_CUBLAS_MAGIC) {
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
    const float al = *(const float *) alpha, be = *(const float *) beta; /* host pointer mode: read now */
    ggmlx_emu::submit(handle->stream, ggmlx_emu::make_work([=] {
        gemm(transa, transb, m, n, k, al, A, Atype, lda, B, Btype, ldb, be, static_cast<float *>(C), ldc);
    }));
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
    const float al = *(const float *) alpha, be = *(const float *) beta;
    ggmlx_emu::submit(handle->stream, ggmlx_emu::make_work([=] {
        for (int b = 0; b < batchCount; b++) {
            gemm(transa, transb, m, n, k, al, static_cast<const char *>(A) + b * strideA * (long long) elem_size(Atype),
                 Atype, lda, static_cast<const char *>(B) + b * strideB * (long long) elem_size(Btype), Btype, ldb, be,
                 static_cast<float *>(C) + b * strideC, ldc);
        }
    }));
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
    const float al = *(const float *) alpha, be = *(const float *) beta;
    /* the pointer arrays are device memory, filled by a kernel queued before: read when run */
    ggmlx_emu::submit(handle->stream, ggmlx_emu::make_work([=] {
        for (int b = 0; b < batchCount; b++) {
            gemm(transa, transb, m, n, k, al, Aarray[b], Atype, lda, Barray[b], Btype, ldb, be,
                 static_cast<float *>(Carray[b]), ldc);
        }
    }));
    return CUBLAS_STATUS_SUCCESS;
}
