/*
 * ops-norm.cu -- NORM, RMS_NORM and L2_NORM on F32 rows: one block per row (ROW mapping of
 * launch-config.h), sums reduced across the block. NORM subtracts the mean before squaring, in
 * a second pass, so the variance keeps its digits when the mean is large.
 */
#include "kernels-common.cuh"

__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_norm(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, float eps, int op) {
    __shared__ float buf[32];
    const int64_t ne0   = src.ne[0];
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const char * s = src.data + ggmlx_dev_row_offset(src, r);
        char       * d = dst.data + ggmlx_dev_row_offset(dst, r);
        float mean = 0.0f;
        if (op == GGML_OP_NORM) {
            float sum = 0.0f;
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
                sum += *(const float *)(s + i * src.nb[0]);
            }
            mean = ggmlx_block_sum(sum, buf) / (float)ne0;
        }
        float sq = 0.0f;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            const float v = *(const float *)(s + i * src.nb[0]) - mean;
            sq += v * v;
        }
        const float sum = ggmlx_block_sum(sq, buf);
        float scale;
        if (op == GGML_OP_L2_NORM) {
            const float norm = sqrtf(sum);
            scale = 1.0f / (norm > eps ? norm : eps); /* upstream: x / max(|x|, eps) */
        } else {
            scale = 1.0f / sqrtf(sum / (float)ne0 + eps);
        }
        /* each thread writes only elements it read itself: in place is safe */
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            *(float *)(d + i * dst.nb[0]) = (*(const float *)(s + i * src.nb[0]) - mean) * scale;
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_norm(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                   char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    float eps;
    memcpy(&eps, node->op_params, sizeof eps);
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    if (src.ne[0] == 0 || nrows == 0) {
        return GGML_STATUS_SUCCESS;
    }
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_row(&lim, src.ne[0], nrows, 512, 0, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    k_norm<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, eps, (int)node->op);
    return ggmlx_after_launch(err, err_size, "norm");
}
