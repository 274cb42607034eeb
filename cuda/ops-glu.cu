/*
 * ops-glu.cu -- GLU: dst = act(x) * g per element (SWIGLU_OAI: its clipped form with alpha and
 * limit), x and g the two halves of each src0 row (swapped on request) or src0 and src1; float
 * types, any strides. The activations are ggml-math-act.h's, shared with the CPU.
 */
#include "kernels-common.cuh"

static __device__ __forceinline__ float glu_apply(int op, float x, float g, float alpha, float limit) {
    switch (op) {
    case GGML_GLU_OP_REGLU:       return ggmlx_relu_f32(x) * g;
    case GGML_GLU_OP_GEGLU:       return ggmlx_gelu_f32(x) * g;
    case GGML_GLU_OP_SWIGLU:      return ggmlx_silu_f32(x) * g;
    case GGML_GLU_OP_SWIGLU_OAI:  return ggmlx_swiglu_oai_f32(x, g, alpha, limit);
    case GGML_GLU_OP_GEGLU_ERF:   return ggmlx_gelu_erf_f32(x) * g;
    default:                      return ggmlx_gelu_quick_f32(x) * g; /* GEGLU_QUICK */
    }
}

/* off_x, off_g: element offsets along dim 0 of the activated part and of the gate */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_glu(const ggmlx_cuda_tdesc xs, const ggmlx_cuda_tdesc gs, const ggmlx_cuda_tdesc dst, int op, int64_t off_x,
      int64_t off_g, float alpha, float limit) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        char       * pd = dst.data + ggmlx_dev_row_offset(dst, r);
        const char * px = xs.data + ggmlx_dev_row_offset(xs, r) + off_x * xs.nb[0];
        const char * pg = gs.data + ggmlx_dev_row_offset(gs, r) + off_g * gs.nb[0];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const float x = ggmlx_dev_load(xs.type, px + i0 * xs.nb[0]);
            const float g = ggmlx_dev_load(gs.type, pg + i0 * gs.nb[0]);
            ggmlx_dev_store(dst.type, pd + i0 * dst.nb[0], glu_apply(op, x, g, alpha, limit));
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_glu(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                  char * err, size_t err_size) {
    ggmlx_cuda_tdesc xs, gs, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &xs);
    ggmlx_cuda_tdesc_of(node->src[1] != NULL ? node->src[1] : node->src[0], &gs);
    ggmlx_cuda_tdesc_of(node, &dst);
    int32_t op, swapped;
    memcpy(&op, (const char *)node->op_params + 0, sizeof op);
    memcpy(&swapped, (const char *)node->op_params + 4, sizeof swapped);
    float alpha, limit;
    memcpy(&alpha, (const char *)node->op_params + 8, sizeof alpha);
    memcpy(&limit, (const char *)node->op_params + 12, sizeof limit);
    const bool split = node->src[1] != NULL;
    const int64_t nc = dst.ne[0];
    /* the row coordinates of x and g are dst's: describe them with dst's shape */
    for (int d = 1; d < 4; d++) {
        xs.ne[d] = dst.ne[d];
        gs.ne[d] = dst.ne[d];
    }
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_elem(&lim, nc, nrows, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    k_glu<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(xs, gs, dst, op, !split && swapped ? nc : 0,
                                                            !split && !swapped ? nc : 0, alpha, limit);
    return ggmlx_after_launch(err, err_size, "glu");
}
