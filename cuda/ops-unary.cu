/*
 * ops-unary.cu -- UNARY (every ggml_unary_op, xielu with its parameters), SQR, SQRT, LOG, SIN,
 * COS, CLAMP, LEAKY_RELU, SCALE (with bias) and ADD1, elementwise over any strides; src and dst
 * share a float type (ADD1's scalar may be any float type). The math is ggml-math-act.h's, the
 * very functions the CPU backend calls.
 */
#include "kernels-common.cuh"

/* which function: the ggml_unary_op value, or one of these for the ops outside UNARY */
enum {
    UN_SQR = 1000,
    UN_SQRT,
    UN_LOG,
    UN_SIN,
    UN_COS,
    UN_CLAMP,
    UN_LEAKY_RELU,
    UN_SCALE,
    UN_ADD1,
};

/*
 * Parameters by value: p as op_params (clamp: min, max; leaky_relu: slope; xielu: p[1..4];
 * scale: scale, bias); ADD1 reads its scalar from the device pointer add.
 */
struct un_params {
    float        p[5];
    const char * add;
    int          add_type;
};

static __device__ __forceinline__ float apply(int fn, float x, const un_params & q, float s, float b) {
    switch (fn) {
    case GGML_UNARY_OP_ABS:         return ggmlx_abs_f32(x);
    case GGML_UNARY_OP_SGN:         return ggmlx_sgn_f32(x);
    case GGML_UNARY_OP_NEG:         return ggmlx_neg_f32(x);
    case GGML_UNARY_OP_STEP:        return ggmlx_step_f32(x);
    case GGML_UNARY_OP_TANH:        return ggmlx_tanh_f32(x);
    case GGML_UNARY_OP_ELU:         return ggmlx_elu_f32(x);
    case GGML_UNARY_OP_RELU:        return ggmlx_relu_f32(x);
    case GGML_UNARY_OP_SIGMOID:     return ggmlx_sigmoid_f32(x);
    case GGML_UNARY_OP_GELU:        return ggmlx_gelu_f32(x);
    case GGML_UNARY_OP_GELU_QUICK:  return ggmlx_gelu_quick_f32(x);
    case GGML_UNARY_OP_SILU:        return ggmlx_silu_f32(x);
    case GGML_UNARY_OP_HARDSWISH:   return ggmlx_hardswish_f32(x);
    case GGML_UNARY_OP_HARDSIGMOID: return ggmlx_hardsigmoid_f32(x);
    case GGML_UNARY_OP_EXP:         return ggmlx_exp_f32(x);
    case GGML_UNARY_OP_EXPM1:       return ggmlx_expm1_f32(x);
    case GGML_UNARY_OP_SOFTPLUS:    return ggmlx_softplus_f32(x);
    case GGML_UNARY_OP_GELU_ERF:    return ggmlx_gelu_erf_f32(x);
    case GGML_UNARY_OP_XIELU:       return ggmlx_xielu_f32(x, q.p[1], q.p[2], q.p[3], q.p[4]);
    case GGML_UNARY_OP_FLOOR:       return ggmlx_floor_f32(x);
    case GGML_UNARY_OP_CEIL:        return ggmlx_ceil_f32(x);
    case GGML_UNARY_OP_ROUND:       return ggmlx_round_f32(x);
    case GGML_UNARY_OP_TRUNC:       return ggmlx_trunc_f32(x);
    case UN_SQR:                    return ggmlx_sqr_f32(x);
    case UN_SQRT:                   return ggmlx_sqrt_f32(x);
    case UN_LOG:                    return ggmlx_log_f32(x);
    case UN_SIN:                    return ggmlx_sin_f32(x);
    case UN_COS:                    return ggmlx_cos_f32(x);
    case UN_CLAMP:                  return ggmlx_clamp_f32(x, q.p[0], q.p[1]);
    case UN_LEAKY_RELU:             return ggmlx_leaky_relu_f32(x, q.p[0]);
    /* UN_SCALE, UN_ADD1: rounded after the product as the CPU (no fused multiply-add) */
    default:                        return __fadd_rn(__fmul_rn(x, s), b);
    }
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_unary(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int fn, const un_params q) {
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    const float s = fn == UN_SCALE ? q.p[0] : 1.0f;
    const float b = fn == UN_SCALE ? q.p[1] : fn == UN_ADD1 ? ggmlx_dev_load(q.add_type, q.add) : 0.0f;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        char       * drow = dst.data + ggmlx_dev_row_offset(dst, r);
        const char * srow = src.data + ggmlx_dev_row_offset(src, r);
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            const float x = ggmlx_dev_load(src.type, srow + i0 * src.nb[0]);
            ggmlx_dev_store(dst.type, drow + i0 * dst.nb[0], apply(fn, x, q, s, b));
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_unary(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                    char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    un_params q;
    memcpy(q.p, node->op_params, sizeof q.p);
    q.add      = NULL;
    q.add_type = GGML_TYPE_F32;
    int fn;
    switch (node->op) {
    case GGML_OP_SQR:        fn = UN_SQR; break;
    case GGML_OP_SQRT:       fn = UN_SQRT; break;
    case GGML_OP_LOG:        fn = UN_LOG; break;
    case GGML_OP_SIN:        fn = UN_SIN; break;
    case GGML_OP_COS:        fn = UN_COS; break;
    case GGML_OP_CLAMP:      fn = UN_CLAMP; break;
    case GGML_OP_LEAKY_RELU: fn = UN_LEAKY_RELU; break;
    case GGML_OP_SCALE:      fn = UN_SCALE; break;
    case GGML_OP_ADD1:
        fn         = UN_ADD1;
        q.add      = (const char *)node->src[1]->data;
        q.add_type = (int)node->src[1]->type;
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
    k_unary<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, fn, q);
    return ggmlx_after_launch(err, err_size, "unary");
}
