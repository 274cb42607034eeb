/*
 * ops-sort.cu -- ARGSORT and TOP_K on F32 rows: I32 indices, one block per row.
 *
 * The row becomes (key, index) pairs, key the ggmlx_sort_key of ggml-math-misc.h (the CPU's),
 * padded to a power of two with the largest pair, and sorted by a bitonic network in shared
 * memory. Pairs compare by key, then by index: the order is total, so the result is the stable
 * order the CPU's sort gives, NaNs and -0 included. TOP_K sorts descending and keeps the first k.
 * Rows longer than launch-config.h's sort limit are refused by supports_op.
 */
#include "kernels-common.cuh"

/* the pair at a goes after the pair at b */
static __device__ __forceinline__ bool after(uint32_t ka, uint16_t ia, uint32_t kb, uint16_t ib) {
    return ka > kb || (ka == kb && ia > ib);
}

__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_sort(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int desc, int npad) {
    extern __shared__ uint32_t sort_smem[];
    uint32_t * key = sort_smem;
    uint16_t * idx = (uint16_t *)(sort_smem + npad);
    const int64_t ne0   = src.ne[0];
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    const int     half  = npad / 2;
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const char * s = src.data + ggmlx_dev_row_offset(src, r);
        for (int i = threadIdx.x; i < npad; i += blockDim.x) {
            key[i] = i < ne0 ? ggmlx_sort_key(*(const float *)(s + i * src.nb[0]), desc) : 0xFFFFFFFFu;
            idx[i] = (uint16_t)i;
        }
        __syncthreads();
        for (int k = 2; k <= npad; k <<= 1) {
            for (int j = k >> 1; j > 0; j >>= 1) {
                /* pair p joins i (bit j clear) with i + j; the block of k it lies in says which way */
                for (int p = threadIdx.x; p < half; p += blockDim.x) {
                    const int i  = ((p & ~(j - 1)) << 1) | (p & (j - 1));
                    const int m  = i + j;
                    const bool up = (i & k) == 0;
                    const uint32_t ki = key[i], km = key[m];
                    const uint16_t ii = idx[i], im = idx[m];
                    if (after(ki, ii, km, im) == up) {
                        key[i] = km, key[m] = ki;
                        idx[i] = im, idx[m] = ii;
                    }
                }
                __syncthreads();
            }
        }
        char * d = dst.data + ggmlx_dev_row_offset(dst, r);
        for (int64_t i = threadIdx.x; i < dst.ne[0]; i += blockDim.x) {
            *(int32_t *)(d + i * dst.nb[0]) = (int32_t)idx[i];
        }
        __syncthreads(); /* the next row overwrites key and idx */
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_argsort(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                      char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    int desc = 1; /* TOP_K: the largest first */
    if (node->op == GGML_OP_ARGSORT) {
        int32_t order;
        memcpy(&order, node->op_params, sizeof order);
        desc = order == GGML_SORT_ORDER_DESC;
    }
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_sort(&lim, src.ne[0], src.ne[1] * src.ne[2] * src.ne[3], &l)) {
        return ggmlx_fail(err, err_size, node->name, "sort: the row is too long for the shared-memory sort");
    }
    k_sort<<<ggmlx_grid(l), ggmlx_block(l), l.shmem, ex->stream>>>(src, dst, desc, l.variant);
    return ggmlx_after_launch(err, err_size, node->op == GGML_OP_TOP_K ? "top_k" : "argsort");
}
