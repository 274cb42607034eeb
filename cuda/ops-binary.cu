/*
 * ops-binary.cu -- ADD, SUB, MUL, DIV: dst = src0 (op) src1, src1 repeated over src0's shape
 * (each of its dims divides src0's), any float type for each operand, any strides; arithmetic
 * in float as on the CPU.
 */
#include "kernels-common.cuh"

template <int OP>
static __device__ __forceinline__ float bin(float x, float y) {
    if (OP == GGML_OP_ADD) return x + y;
    if (OP == GGML_OP_SUB) return x - y;
    if (OP == GGML_OP_MUL) return x * y;
    return x / y;
}

template <int OP>
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_binary(const ggmlx_cuda_tdesc a, const ggmlx_cuda_tdesc b, const ggmlx_cuda_tdesc dst) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    const int64_t ne10 = b.ne[0];
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const ggmlx_row3 rc = ggmlx_dev_row_coords(dst, r);
        const int64_t i1 = rc.i1, i2 = rc.i2, i3 = rc.i3;
        char       * pd = dst.data + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        const char * pa = a.data + i1 * a.nb[1] + i2 * a.nb[2] + i3 * a.nb[3];
        const char * pb = b.data + (i1 % b.ne[1]) * b.nb[1] + (i2 % b.ne[2]) * b.nb[2] + (i3 % b.ne[3]) * b.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const int64_t j0 = ne10 == ne0 ? i0 : i0 % ne10;
            const float x = ggmlx_dev_load(a.type, pa + i0 * a.nb[0]);
            const float y = ggmlx_dev_load(b.type, pb + j0 * b.nb[0]);
            ggmlx_dev_store(dst.type, pd + i0 * dst.nb[0], bin<OP>(x, y));
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_binary(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                     char * err, size_t err_size) {
    ggmlx_cuda_tdesc a, b, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &a);
    ggmlx_cuda_tdesc_of(node->src[1], &b);
    ggmlx_cuda_tdesc_of(node, &dst);
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(dst.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    const dim3 g = ggmlx_grid(l), t = ggmlx_block(l);
    switch (node->op) {
    case GGML_OP_ADD: k_binary<GGML_OP_ADD><<<g, t, 0, ex->stream>>>(a, b, dst); break;
    case GGML_OP_SUB: k_binary<GGML_OP_SUB><<<g, t, 0, ex->stream>>>(a, b, dst); break;
    case GGML_OP_MUL: k_binary<GGML_OP_MUL><<<g, t, 0, ex->stream>>>(a, b, dst); break;
    case GGML_OP_DIV: k_binary<GGML_OP_DIV><<<g, t, 0, ex->stream>>>(a, b, dst); break;
    default: return ggmlx_fail(err, err_size, node->name, "not a binary op");
    }
    return ggmlx_after_launch(err, err_size, "binary");
}
