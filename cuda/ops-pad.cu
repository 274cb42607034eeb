/*
 * ops-pad.cu -- PAD (ggml_pad and ggml_pad_ext): dst element (i0, i1, i2, i3) is src's
 * (i0 - lp0, .., i3 - lp3) where that lies inside src, else zero; any type of 1, 2, 4 or 8
 * bytes per element, moved as bytes (all-zero bytes are 0 in each). PAD_REFLECT_1D: F32 rows
 * extended by their reflection. Both use the ELEM mapping over dst, any strides.
 */
#include "kernels-common.cuh"

struct pad_left {
    int64_t lp[4];
};

static __device__ __forceinline__ void zero_elem(char * p, int es) {
    switch (es) {
    case 1: *(uint8_t *)p = 0; break;
    case 2: *(uint16_t *)p = 0; break;
    case 4: *(uint32_t *)p = 0; break;
    default: *(uint64_t *)p = 0; break;
    }
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_pad(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, const pad_left pl, int es) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const ggmlx_row3 rc = ggmlx_dev_row_coords(dst, r);
        const int64_t i1 = rc.i1, i2 = rc.i2, i3 = rc.i3;
        char * pd = dst.data + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        const int64_t s1 = i1 - pl.lp[1], s2 = i2 - pl.lp[2], s3 = i3 - pl.lp[3];
        const bool row_in = s1 >= 0 && s1 < src.ne[1] && s2 >= 0 && s2 < src.ne[2] && s3 >= 0 && s3 < src.ne[3];
        const char * ps = row_in ? src.data + s1 * src.nb[1] + s2 * src.nb[2] + s3 * src.nb[3] : NULL;
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const int64_t s0 = i0 - pl.lp[0];
            if (row_in && s0 >= 0 && s0 < src.ne[0]) {
                ggmlx_dev_copy_elem(src.type, ps + s0 * src.nb[0], dst.type, pd + i0 * dst.nb[0], es);
            } else {
                zero_elem(pd + i0 * dst.nb[0], es);
            }
        }
    }
}

/* dst row: src[p0], .., src[1], src[0 .. n), src[n - 2], .., src[n - 1 - p1] (p0, p1 < n) */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_pad_reflect_1d(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int64_t p0) {
    const int64_t ne0   = dst.ne[0];
    const int64_t n     = src.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        char       * pd = dst.data + ggmlx_dev_row_offset(dst, r);
        const char * ps = src.data + ggmlx_dev_row_offset(src, r);
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const int64_t j = i0 - p0;
            const int64_t s = j < 0 ? -j : j < n ? j : 2 * (n - 1) - j;
            *(float *)(pd + i0 * dst.nb[0]) = *(const float *)(ps + s * src.nb[0]);
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_pad(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                  char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(dst.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    if (node->op == GGML_OP_PAD_REFLECT_1D) {
        int32_t p0;
        memcpy(&p0, node->op_params, sizeof p0);
        k_pad_reflect_1d<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, (int64_t)p0);
        return ggmlx_after_launch(err, err_size, "pad_reflect_1d");
    }
    pad_left pl;
    for (int d = 0; d < 4; d++) {
        int32_t v;
        memcpy(&v, (const char *)node->op_params + 8 * d, sizeof v); /* i32 [2d]: the left pad of dim d */
        pl.lp[d] = v;
    }
    k_pad<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, pl, ggmlx_elem_size(dst.type));
    return ggmlx_after_launch(err, err_size, "pad");
}
