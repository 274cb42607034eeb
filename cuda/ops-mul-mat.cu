/*
 * ops-mul-mat.cu -- MUL_MAT through cuBLAS, exactly as mul-mat-plan.c describes it: operands
 * that cuBLAS cannot read in place are first copied into scratch (b converted to a's type, so
 * F16/BF16 weights run on tensor cores with F32 accumulation), pointer arrays for a batched call
 * are filled on the device, then one cuBLAS call per planned call. Every call is checked.
 */
#include "kernels-common.cuh"

#include <cublas_v2.h>
#include <library_types.h>

static_assert(GGMLX_MM_R_32F == (int)CUDA_R_32F, "plan type values are cudaDataType_t's");
static_assert(GGMLX_MM_R_16F == (int)CUDA_R_16F, "plan type values are cudaDataType_t's");
static_assert(GGMLX_MM_R_16BF == (int)CUDA_R_16BF, "plan type values are cudaDataType_t's");
static_assert(GGMLX_MM_OP_N == (int)CUBLAS_OP_N && GGMLX_MM_OP_T == (int)CUBLAS_OP_T, "plan op values are cuBLAS's");
static_assert(GGMLX_MM_COMPUTE_32F == (int)CUBLAS_COMPUTE_32F, "plan compute type is cuBLAS's");

/* the three pointer arrays of a batched call; ELEM mapping over the batch index */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_mm_pointers(const __grid_constant__ ggmlx_mm_plan p, const char * a, const char * b, char * c, int esa, int esb,
              const void ** pa, const void ** pb, void ** pc) {
    const int64_t sx = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.batch; i += sx) {
        int64_t oa, ob, oc;
        ggmlx_mm_batch_offsets(&p, i, &oa, &ob, &oc);
        pa[i] = a + oa * esa;
        pb[i] = b + ob * esb;
        pc[i] = c + oc * (int64_t)sizeof(float);
    }
}

static enum ggml_status cublas_fail(char * err, size_t err_size, const char * what, cublasStatus_t st) {
    if (err != NULL && err_size > 0) {
        snprintf(err, err_size, "mul_mat: %s failed: %s", what, cublasGetStatusString(st));
    }
    return GGML_STATUS_FAILED;
}

/* t copied, contiguous and of type `type`, into scratch at offset */
static enum ggml_status convert_operand(const ggmlx_cuda_exec * ex, const ggml_tensor * t, const ggmlx_mm_conv & cv,
                                        char * err, size_t err_size) {
    ggmlx_cuda_tdesc s, d;
    ggmlx_cuda_tdesc_of(t, &s);
    d.data = (char *)ex->scratch + cv.offset;
    d.type = cv.type;
    int64_t nb = ggmlx_elem_size(cv.type);
    for (int i = 0; i < 4; i++) {
        d.ne[i] = t->ne[i];
        d.nb[i] = nb;
        nb *= t->ne[i];
    }
    return ggmlx_cuda_launch_copy(ex, &s, &d, err, err_size);
}

extern "C" enum ggml_status ggmlx_cuda_launch_mul_mat(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                      const struct ggmlx_mm_plan * p, char * err, size_t err_size) {
    if (p->scratch_size > 0 && (ex->scratch == NULL || ex->scratch_size < p->scratch_size)) {
        return ggmlx_fail(err, err_size, node->name, "mul_mat: scratch smaller than ggmlx_cuda_scratch_size()");
    }
    if (p->k == 0) {
        /* an empty sum: dst is zeros (dst of mul_mat is always contiguous) */
        const cudaError_t e = cudaMemsetAsync(node->data, 0, ggml_nbytes(node), ex->stream);
        return e == cudaSuccess ? GGML_STATUS_SUCCESS : ggmlx_fail(err, err_size, "mul_mat: cudaMemsetAsync", cudaGetErrorString(e));
    }
    const int esa = p->a_type == GGMLX_MM_R_32F ? 4 : 2;
    const int esb = p->b_type == GGMLX_MM_R_32F ? 4 : 2;
    const char * A = (const char *)node->src[0]->data;
    const char * B = (const char *)node->src[1]->data;
    char       * C = (char *)node->data;
    /* checked before anything is enqueued; copies into scratch are aligned by the plan */
    if ((!p->conv_a.needed && (uintptr_t)A % (uintptr_t)esa != 0) || (!p->conv_b.needed && (uintptr_t)B % (uintptr_t)esb != 0) ||
        (uintptr_t)C % sizeof(float) != 0) {
        return ggmlx_fail(err, err_size, node->name, "mul_mat: an operand is not aligned to its element size");
    }
    enum ggml_status st;
    if (p->conv_a.needed) {
        if ((st = convert_operand(ex, node->src[0], p->conv_a, err, err_size)) != GGML_STATUS_SUCCESS) {
            return st;
        }
        A = (const char *)ex->scratch + p->conv_a.offset;
    }
    if (p->conv_b.needed) {
        if ((st = convert_operand(ex, node->src[1], p->conv_b, err, err_size)) != GGML_STATUS_SUCCESS) {
            return st;
        }
        B = (const char *)ex->scratch + p->conv_b.offset;
    }

    const float alpha = 1.0f, beta = 0.0f; /* read at call time: host pointer mode */
    const cublasOperation_t ta = (cublasOperation_t)p->transa, tb = (cublasOperation_t)p->transb;
    const cudaDataType_t at = (cudaDataType_t)p->a_type, bt = (cudaDataType_t)p->b_type, ct = (cudaDataType_t)p->c_type;
    const cublasComputeType_t comp = (cublasComputeType_t)p->compute_type;
    cublasStatus_t cs;

    if (p->api == GGMLX_MM_API_BATCHED) {
        char * base = (char *)ex->scratch + p->ptr_offset;
        const void ** pa = (const void **)base;
        const void ** pb = pa + p->batch;
        void       ** pc = (void **)(pb + p->batch);
        const ggmlx_cuda_limits lim = ggmlx_limits();
        ggmlx_cuda_launch l;
        if (!ggmlx_cuda_launch_1d(&lim, p->batch, &l)) {
            return ggmlx_fail(err, err_size, node->name, "mul_mat: no launch configuration for the pointer arrays");
        }
        k_mm_pointers<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(*p, A, B, C, esa, esb, pa, pb, pc);
        if ((st = ggmlx_after_launch(err, err_size, "mul_mat pointers")) != GGML_STATUS_SUCCESS) {
            return st;
        }
        cs = cublasGemmBatchedEx(ex->cublas, ta, tb, p->m, p->n, p->k, &alpha, (const void * const *)pa, at, p->lda,
                                 (const void * const *)pb, bt, p->ldb, &beta, (void * const *)pc, ct, p->ldc, p->batch,
                                 comp, CUBLAS_GEMM_DEFAULT);
        return cs == CUBLAS_STATUS_SUCCESS ? GGML_STATUS_SUCCESS : cublas_fail(err, err_size, "cublasGemmBatchedEx", cs);
    }
    for (int c = 0; c < p->n_calls; c++) {
        int64_t oa, ob, oc;
        ggmlx_mm_call_offsets(p, c, &oa, &ob, &oc);
        const char * a = A + oa * esa;
        const char * b = B + ob * esb;
        char       * cc = C + oc * (int64_t)sizeof(float);
        if (p->api == GGMLX_MM_API_GEMM) {
            cs = cublasGemmEx(ex->cublas, ta, tb, p->m, p->n, p->k, &alpha, a, at, p->lda, b, bt, p->ldb, &beta, cc, ct,
                              p->ldc, comp, CUBLAS_GEMM_DEFAULT);
            if (cs != CUBLAS_STATUS_SUCCESS) {
                return cublas_fail(err, err_size, "cublasGemmEx", cs);
            }
        } else {
            cs = cublasGemmStridedBatchedEx(ex->cublas, ta, tb, p->m, p->n, p->k, &alpha, a, at, p->lda, p->stride_a, b, bt,
                                            p->ldb, p->stride_b, &beta, cc, ct, p->ldc, p->stride_c, p->batch, comp,
                                            CUBLAS_GEMM_DEFAULT);
            if (cs != CUBLAS_STATUS_SUCCESS) {
                return cublas_fail(err, err_size, "cublasGemmStridedBatchedEx", cs);
            }
        }
    }
    return GGML_STATUS_SUCCESS;
}
