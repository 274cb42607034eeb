/*
 * ops-out-prod.cu -- OUT_PROD: dst[i0, i1, i2, i3] = sum over k of a[i0, k, i2 / r2, i3 / r3] *
 * b[i1, k, i2, i3], a F32/F16/BF16, b and dst F32, any strides. ELEM mapping over dst, each
 * thread summing its element's k terms in order, each product rounded before it is added: the
 * CPU's operations in the CPU's order, so both give the same bits. A direct loop, not a tiled
 * GEMM: right for the sizes graphs use it at now; cuBLAS can take it when a benchmark asks.
 */
#include "kernels-common.cuh"

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_out_prod(const ggmlx_cuda_tdesc a, const ggmlx_cuda_tdesc b, const ggmlx_cuda_tdesc dst, int64_t r2, int64_t r3) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t nk    = a.ne[1];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const ggmlx_row3 rc = ggmlx_dev_row_coords(dst, r);
        const int64_t i1 = rc.i1, i2 = rc.i2, i3 = rc.i3;
        char       * pd = dst.data + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        const char * pa = a.data + (i2 / r2) * a.nb[2] + (i3 / r3) * a.nb[3];
        const char * pb = b.data + i1 * b.nb[0] + i2 * b.nb[2] + i3 * b.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            float acc = 0.0f;
            for (int64_t k = 0; k < nk; k++) {
                const float w = *(const float *)(pb + k * b.nb[1]);
                const float x = ggmlx_dev_load(a.type, pa + i0 * a.nb[0] + k * a.nb[1]);
                acc = __fadd_rn(acc, __fmul_rn(w, x));
            }
            *(float *)(pd + i0 * dst.nb[0]) = acc;
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_out_prod(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                       char * err, size_t err_size) {
    ggmlx_cuda_tdesc a, b, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &a);
    ggmlx_cuda_tdesc_of(node->src[1], &b);
    ggmlx_cuda_tdesc_of(node, &dst);
    /* an empty a plane count only goes with an empty dst, which launches nothing */
    const int64_t r2 = a.ne[2] > 0 ? dst.ne[2] / a.ne[2] : 1;
    const int64_t r3 = a.ne[3] > 0 ? dst.ne[3] / a.ne[3] : 1;
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(dst.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    k_out_prod<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(a, b, dst, r2, r3);
    return ggmlx_after_launch(err, err_size, "out_prod");
}
