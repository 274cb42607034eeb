/*
 * ops-shape.cu -- REPEAT (src tiled over dst's shape, same type, moved as bytes), CONCAT and
 * DIAG_MASK_INF / DIAG_MASK_ZERO (F32: row i1 keeps columns 0 .. n_past + i1, the rest become
 * -INF or 0). All use the ELEM mapping over dst.
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
k_diag_mask(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int64_t n_past, float fill) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const int64_t i1   = (int64_t)((uint64_t)r % (uint64_t)dst.ne[1]);
        const char *  ps   = src.data + ggmlx_dev_row_offset(src, r);
        char       *  pd   = dst.data + ggmlx_dev_row_offset(dst, r);
        const int64_t keep = n_past + i1 + 1;
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            *(float *)(pd + i0 * dst.nb[0]) = i0 < keep ? *(const float *)(ps + i0 * src.nb[0]) : fill;
        }
    }
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_concat(const ggmlx_cuda_tdesc a, const ggmlx_cuda_tdesc b, const ggmlx_cuda_tdesc dst, int dim, int es) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const uint64_t q = (uint64_t)r / (uint64_t)dst.ne[1];
        const int64_t r1 = (int64_t)((uint64_t)r - q * (uint64_t)dst.ne[1]);
        const int64_t r3 = (int64_t)(q / (uint64_t)dst.ne[2]);
        const int64_t r2 = (int64_t)(q - (uint64_t)r3 * (uint64_t)dst.ne[2]);
        char * pd = dst.data + r1 * dst.nb[1] + r2 * dst.nb[2] + r3 * dst.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            int64_t j0 = i0, j1 = r1, j2 = r2, j3 = r3;
            bool from_b = false;
            switch (dim) {
            case 0: from_b = j0 >= a.ne[0]; if (from_b) j0 -= a.ne[0]; break;
            case 1: from_b = j1 >= a.ne[1]; if (from_b) j1 -= a.ne[1]; break;
            case 2: from_b = j2 >= a.ne[2]; if (from_b) j2 -= a.ne[2]; break;
            default: from_b = j3 >= a.ne[3]; if (from_b) j3 -= a.ne[3]; break;
            }
            /* selected field by field: a reference to a parameter struct would copy it to the stack */
            const char * ps = from_b ? b.data + j0 * b.nb[0] + j1 * b.nb[1] + j2 * b.nb[2] + j3 * b.nb[3]
                                     : a.data + j0 * a.nb[0] + j1 * a.nb[1] + j2 * a.nb[2] + j3 * a.nb[3];
            ggmlx_dev_copy_elem(dst.type, ps, dst.type, pd + i0 * dst.nb[0], es);
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
    if (node->op == GGML_OP_CONCAT) {
        ggmlx_cuda_tdesc b;
        ggmlx_cuda_tdesc_of(node->src[1], &b);
        int32_t dim;
        memcpy(&dim, node->op_params, sizeof dim);
        k_concat<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, b, dst, dim, ggmlx_elem_size(dst.type));
        return ggmlx_after_launch(err, err_size, "concat");
    }
    if (node->op == GGML_OP_REPEAT) {
        k_repeat<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, ggmlx_elem_size(dst.type));
        return ggmlx_after_launch(err, err_size, "repeat");
    }
    int32_t n_past;
    memcpy(&n_past, node->op_params, sizeof n_past);
    const float fill = node->op == GGML_OP_DIAG_MASK_ZERO ? 0.0f : -INFINITY;
    k_diag_mask<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, (int64_t)n_past, fill);
    return ggmlx_after_launch(err, err_size, "diag_mask");
}
