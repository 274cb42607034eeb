/*
 * ops-reduce.cu -- SUM, SUM_ROWS, MEAN and ARGMAX. Sums accumulate in double, as the CPU's do,
 * so both backends agree to the last float rounding or so. SUM_ROWS/MEAN/ARGMAX: one block per
 * row (ROW mapping); SUM: a single block walks every row (fine for the sizes graphs reduce to
 * one value; a two-pass version can come when a benchmark asks for it).
 */
#include "kernels-common.cuh"

/* mode 0: SUM_ROWS, 1: MEAN (one block per row), 2: SUM (one block, every row) */
__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_reduce(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int mode) {
    __shared__ double buf[32];
    const int64_t ne0   = src.ne[0];
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    if (mode == 2) {
        double acc = 0.0;
        for (int64_t r = 0; r < nrows; r++) {
            const char * s = src.data + ggmlx_dev_row_offset(src, r);
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
                acc += ggmlx_dev_load(src.type, s + i * src.nb[0]);
            }
        }
        acc = ggmlx_block_sum_d(acc, buf);
        if (threadIdx.x == 0) {
            ggmlx_dev_store(dst.type, dst.data, (float)acc);
        }
        return;
    }
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const char * s = src.data + ggmlx_dev_row_offset(src, r);
        double acc = 0.0;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            acc += ggmlx_dev_load(src.type, s + i * src.nb[0]);
        }
        acc = ggmlx_block_sum_d(acc, buf);
        if (mode == 1) {
            acc = ne0 > 0 ? acc / (double)ne0 : (double)NAN;
        }
        if (threadIdx.x == 0) {
            ggmlx_dev_store(dst.type, dst.data + ggmlx_dev_row_offset(dst, r), (float)acc);
        }
    }
}

/* a candidate for argmax: the first index of the largest non-NaN value; idx < 0 means none */
struct best {
    float   v;
    int64_t idx;
};

static __device__ __forceinline__ best better(best a, best b) {
    if (a.idx < 0) return b;
    if (b.idx < 0) return a;
    if (a.v > b.v || (a.v == b.v && a.idx < b.idx)) return a;
    return b;
}

__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_argmax(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst) {
    __shared__ float   bv[32];
    __shared__ int64_t bi[32];
    const int64_t ne0 = src.ne[0];
    for (int64_t r = blockIdx.x; r < src.ne[1]; r += gridDim.x) {
        const char * s = src.data + r * src.nb[1];
        best b = { 0.0f, -1 };
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            const float v = ggmlx_dev_load(src.type, s + i * src.nb[0]);
            if (v == v) {
                b = better(b, best{ v, i });
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            const best other = { __shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.idx, o) };
            b = better(b, other);
        }
        const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
        __syncthreads();
        if (lane == 0) {
            bv[warp] = b.v;
            bi[warp] = b.idx;
        }
        __syncthreads();
        if (warp == 0) {
            b = lane < nw ? best{ bv[lane], bi[lane] } : best{ 0.0f, -1 };
            for (int o = 16; o > 0; o >>= 1) {
                const best other = { __shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.idx, o) };
                b = better(b, other);
            }
            if (lane == 0) {
                *(int32_t *)(dst.data + r * dst.nb[0]) = b.idx < 0 ? 0 : (int32_t)b.idx;
            }
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_reduce(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                     char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (node->op == GGML_OP_ARGMAX) {
        if (!ggmlx_cuda_launch_row(&lim, src.ne[0], src.ne[1], 256, 0, &l)) {
            return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
        }
        k_argmax<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst);
        return ggmlx_after_launch(err, err_size, "argmax");
    }
    const int mode = node->op == GGML_OP_SUM_ROWS ? 0 : node->op == GGML_OP_MEAN ? 1 : 2;
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    if (!ggmlx_cuda_launch_row(&lim, src.ne[0], mode == 2 ? 1 : nrows, mode == 2 ? 1024 : 256, 0, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    k_reduce<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, mode);
    return ggmlx_after_launch(err, err_size, "reduce");
}
