/*
 * ops-unary.cu -- UNARY (abs, neg, tanh, relu, sigmoid, gelu, gelu_erf, gelu_quick, silu, exp),
 * SQR, SQRT and SCALE, elementwise over any strides; src and dst share a float type. The math
 * is ggml-math-act.h's, the very functions the CPU backend calls.
 */
#include "kernels-common.cuh"

/* which function: the ggml_unary_op value, or one of these for the ops outside UNARY */
#define UN_SQR   1000
#define UN_SQRT  1001
#define UN_SCALE 1002

static __device__ __forceinline__ float apply(int fn, float x, float s, float b) {
    switch (fn) {
    case GGML_UNARY_OP_ABS:        return ggmlx_abs_f32(x);
    case GGML_UNARY_OP_NEG:        return ggmlx_neg_f32(x);
    case GGML_UNARY_OP_TANH:       return ggmlx_tanh_f32(x);
    case GGML_UNARY_OP_RELU:       return ggmlx_relu_f32(x);
    case GGML_UNARY_OP_SIGMOID:    return ggmlx_sigmoid_f32(x);
    case GGML_UNARY_OP_GELU:       return ggmlx_gelu_f32(x);
    case GGML_UNARY_OP_GELU_ERF:   return ggmlx_gelu_erf_f32(x);
    case GGML_UNARY_OP_GELU_QUICK: return ggmlx_gelu_quick_f32(x);
    case GGML_UNARY_OP_SILU:       return ggmlx_silu_f32(x);
    case GGML_UNARY_OP_EXP:        return ggmlx_exp_f32(x);
    case UN_SQR:                   return ggmlx_sqr_f32(x);
    case UN_SQRT:                  return ggmlx_sqrt_f32(x);
    default:                       return x * s + b; /* UN_SCALE */
    }
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_unary(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int fn, float s, float b) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        char       * drow = dst.data + ggmlx_dev_row_offset(dst, r);
        const char * srow = src.data + ggmlx_dev_row_offset(src, r);
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const float x = ggmlx_dev_load(src.type, srow + i0 * src.nb[0]);
            ggmlx_dev_store(dst.type, drow + i0 * dst.nb[0], apply(fn, x, s, b));
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_unary(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                    char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    int fn;
    float s = 1.0f, b = 0.0f;
    switch (node->op) {
    case GGML_OP_SQR:  fn = UN_SQR; break;
    case GGML_OP_SQRT: fn = UN_SQRT; break;
    case GGML_OP_SCALE:
        fn = UN_SCALE;
        memcpy(&s, (const char *)node->op_params + 0, sizeof s);
        memcpy(&b, (const char *)node->op_params + 4, sizeof b);
        break;
    default:
        memcpy(&fn, node->op_params, sizeof fn);
        if (!ggmlx_cuda_unary_supported(fn)) {
            return ggmlx_fail(err, err_size, node->name, "unary op not implemented on CUDA");
        }
        break;
    }
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(dst.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    k_unary<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, fn, s, b);
    return ggmlx_after_launch(err, err_size, "unary");
}
