/*
 * ops-cpy.cu -- DUP, CPY, CONT (and the operand conversions of mul_mat): src's elements in
 * row-major logical order into dst, any shapes and strides on both sides. Equal types move
 * bytes (any element size of 1, 2, 4 or 8); F32, F16 and BF16 convert through float with the
 * shared rounding of ggml-math.h; I32 converts to and from them as the CPU does. Tensors of the
 * same type (block-quantized too) that are both contiguous move as one run of bytes.
 */
#include "kernels-common.cuh"

/* ELEM mapping over dst; same_shape: src row coordinates are dst's, otherwise the flat index
 * of each element is split along src's shape */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_copy(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int es, bool same_shape) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        char * drow = dst.data + ggmlx_dev_row_offset(dst, r);
        if (same_shape) {
            const char * srow = src.data + ggmlx_dev_row_offset(src, r);
            for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
                ggmlx_dev_copy_elem(src.type, srow + i0 * src.nb[0], dst.type, drow + i0 * dst.nb[0], es);
            }
        } else {
            for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
                const int64_t flat = r * ne0 + i0;
                const int64_t j0 = flat % src.ne[0];
                const char * ps = src.data + ggmlx_dev_row_offset(src, flat / src.ne[0]) + j0 * src.nb[0];
                ggmlx_dev_copy_elem(src.type, ps, dst.type, drow + i0 * dst.nb[0], es);
            }
        }
    }
}

static bool contiguous(const ggmlx_cuda_tdesc & t, int64_t es) {
    int64_t want = es;
    for (int d = 0; d < 4; d++) {
        if (t.ne[d] != 1 && t.nb[d] != want) {
            return false;
        }
        want *= t.ne[d];
    }
    return true;
}

extern "C" enum ggml_status ggmlx_cuda_launch_copy(const struct ggmlx_cuda_exec * ex, const struct ggmlx_cuda_tdesc * src,
                                                   const struct ggmlx_cuda_tdesc * dst, char * err, size_t err_size) {
    const int64_t n = dst->ne[0] * dst->ne[1] * dst->ne[2] * dst->ne[3];
    if (n != src->ne[0] * src->ne[1] * src->ne[2] * src->ne[3]) {
        return ggmlx_fail(err, err_size, "copy", "source and destination differ in element count");
    }
    if (n == 0) {
        return GGML_STATUS_SUCCESS;
    }
    const int64_t es = ggmlx_elem_size(dst->type);
    if (es == 0 || (src->type != dst->type && ggmlx_elem_size(src->type) == 0)) {
        return ggmlx_fail(err, err_size, "copy", "unsupported type");
    }
    if (src->type == dst->type && contiguous(*src, es) && contiguous(*dst, es)) {
        if (src->data == dst->data) {
            return GGML_STATUS_SUCCESS; /* a tensor copied onto itself */
        }
        const cudaError_t e = cudaMemcpyAsync(dst->data, src->data, (size_t)(n * es), cudaMemcpyDeviceToDevice, ex->stream);
        if (e != cudaSuccess) {
            return ggmlx_fail(err, err_size, "copy: cudaMemcpyAsync", cudaGetErrorString(e));
        }
        return GGML_STATUS_SUCCESS;
    }
    bool same_shape = true;
    for (int d = 0; d < 4; d++) {
        same_shape = same_shape && src->ne[d] == dst->ne[d];
    }
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_elem(&lim, dst->ne[0], dst->ne[1] * dst->ne[2] * dst->ne[3], &l)) {
        return ggmlx_fail(err, err_size, "copy", "no launch configuration for this shape");
    }
    k_copy<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(*src, *dst, (int)es, same_shape);
    return ggmlx_after_launch(err, err_size, "copy");
}

extern "C" enum ggml_status ggmlx_cuda_launch_copy_bytes(const struct ggmlx_cuda_exec * ex, void * dst, const void * src,
                                                         size_t n, char * err, size_t err_size) {
    if (n == 0 || dst == src) {
        return GGML_STATUS_SUCCESS;
    }
    const cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, ex->stream);
    if (e != cudaSuccess) {
        return ggmlx_fail(err, err_size, "copy: cudaMemcpyAsync", cudaGetErrorString(e));
    }
    return GGML_STATUS_SUCCESS;
}
