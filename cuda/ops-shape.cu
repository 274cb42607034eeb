/*
 * ops-shape.cu -- REPEAT (src tiled over dst's shape, same type, moved as bytes) and
 * DIAG_MASK_INF (F32: row i1 keeps columns 0 .. n_past + i1, the rest become -INF).
 * Both use the ELEM mapping over dst.
 */
#include "kernels-common.cuh"

#include <math.h>

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_repeat(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int es) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const uint64_t q  = (uint64_t)r / (uint64_t)dst.ne[1];
        const uint64_t i1 = (uint64_t)r - q * (uint64_t)dst.ne[1];
        const uint64_t i3 = q / (uint64_t)dst.ne[2];
        const uint64_t i2 = q - i3 * (uint64_t)dst.ne[2];
        char       * pd = dst.data + (int64_t)i1 * dst.nb[1] + (int64_t)i2 * dst.nb[2] + (int64_t)i3 * dst.nb[3];
        const char * ps = src.data + (int64_t)(i1 % (uint64_t)src.ne[1]) * src.nb[1] +
                          (int64_t)(i2 % (uint64_t)src.ne[2]) * src.nb[2] + (int64_t)(i3 % (uint64_t)src.ne[3]) * src.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const int64_t j0 = (int64_t)((uint64_t)i0 % (uint64_t)src.ne[0]);
            ggmlx_dev_copy_elem(src.type, ps + j0 * src.nb[0], dst.type, pd + i0 * dst.nb[0], es);
        }
    }
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_diag_mask_inf(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int64_t n_past) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const int64_t i1   = (int64_t)((uint64_t)r % (uint64_t)dst.ne[1]);
        const char *  ps   = src.data + ggmlx_dev_row_offset(src, r);
        char       *  pd   = dst.data + ggmlx_dev_row_offset(dst, r);
        const int64_t keep = n_past + i1 + 1;
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            *(float *)(pd + i0 * dst.nb[0]) = i0 < keep ? *(const float *)(ps + i0 * src.nb[0]) : -INFINITY;
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_shape(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                    char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_elem(&lim, dst.ne[0], nrows, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    if (node->op == GGML_OP_REPEAT) {
        k_repeat<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, ggmlx_elem_size(dst.type));
        return ggmlx_after_launch(err, err_size, "repeat");
    }
    int32_t n_past;
    memcpy(&n_past, node->op_params, sizeof n_past);
    k_diag_mask_inf<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, (int64_t)n_past);
    return ggmlx_after_launch(err, err_size, "diag_mask_inf");
}
