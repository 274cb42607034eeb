/*
 * ops-group-norm.cu -- GROUP_NORM on F32: the channels (dim 2) of each dim-3 slice split into
 * n_groups groups of ceil(ne2 / n_groups) (the last ones short or empty, as upstream), each group
 * normalised as a whole. One block per (group, slice) with the ROW mapping; sums in double as on
 * the CPU, because a group holds many elements and the mean is subtracted from values of
 * similar size.
 */
#include "kernels-common.cuh"

/* byte offset of element j of the group that starts at channel c0 of slice i3 */
static __device__ __forceinline__ int64_t gn_offset(const ggmlx_cuda_tdesc & t, int64_t j, int64_t c0, int64_t i3) {
    const int64_t i0 = j % t.ne[0];
    const int64_t q  = j / t.ne[0];
    const int64_t i1 = q % t.ne[1];
    const int64_t i2 = c0 + q / t.ne[1];
    return i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_group_norm(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int64_t n_groups, int64_t per_group, double eps) {
    __shared__ double buf[32];
    const int64_t ne2 = src.ne[2];
    for (int64_t r = blockIdx.x; r < n_groups * src.ne[3]; r += gridDim.x) {
        const int64_t g  = r % n_groups, i3 = r / n_groups;
        const int64_t c0 = g * per_group < ne2 ? g * per_group : ne2;
        const int64_t c1 = c0 + per_group < ne2 ? c0 + per_group : ne2;
        const int64_t n  = (c1 - c0) * src.ne[0] * src.ne[1];
        if (n == 0) {
            continue; /* the same for the whole block: no barrier is skipped by part of it */
        }
        double sum = 0.0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            sum += *(const float *)(src.data + gn_offset(src, j, c0, i3));
        }
        const double mean = ggmlx_block_sum_d(sum, buf) / (double)n;
        double sq = 0.0;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            const double v = (double)*(const float *)(src.data + gn_offset(src, j, c0, i3)) - mean;
            sq += v * v;
        }
        const double scale = 1.0 / sqrt(ggmlx_block_sum_d(sq, buf) / (double)n + eps);
        /* each thread writes only elements it read itself: in place is safe */
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            const float x = *(const float *)(src.data + gn_offset(src, j, c0, i3));
            *(float *)(dst.data + gn_offset(dst, j, c0, i3)) = (float)(((double)x - mean) * scale);
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_group_norm(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                         char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    int32_t n_groups;
    float eps;
    memcpy(&n_groups, (const char *)node->op_params + 0, sizeof n_groups);
    memcpy(&eps, (const char *)node->op_params + 4, sizeof eps);
    if (n_groups < 1) {
        return ggmlx_fail(err, err_size, node->name, "group_norm: n_groups must be >= 1");
    }
    const int64_t per_group = (src.ne[2] + n_groups - 1) / n_groups;
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_row(&lim, per_group * src.ne[0] * src.ne[1], (int64_t)n_groups * src.ne[3], 512, 0, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    k_group_norm<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, n_groups, per_group, (double)eps);
    return ggmlx_after_launch(err, err_size, "group_norm");
}
