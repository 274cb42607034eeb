/*
 * ops-softmax.cu -- SOFT_MAX with scale, an optional F16/F32 mask (broadcast over dims 2 and 3)
 * and ALiBi slopes, on F32 rows, as src/cpu/ops-softmax.c computes it: a row whose every logit
 * is -INF gives zeros. One block per row; the row of logits is kept in shared memory when it
 * fits (variant 1), otherwise it goes through dst.
 */
#include "kernels-common.cuh"

#include <math.h>

struct softmax_args {
    float scale, max_bias, m0, m1;
    int   n_head_log2;
};

__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_soft_max(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc mask, const ggmlx_cuda_tdesc dst,
           const softmax_args a, bool cache) {
    extern __shared__ float row[];
    __shared__ float buf[32];
    const int64_t ne0 = src.ne[0], ne1 = src.ne[1], ne2 = src.ne[2];
    const int64_t nrows = ne1 * ne2 * src.ne[3];
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        /* unsigned: the signed 64-bit division helpers spill registers in this kernel */
        const uint64_t q  = (uint64_t)r / (uint64_t)ne1;
        const int64_t  i1 = (int64_t)((uint64_t)r - q * (uint64_t)ne1);
        const int64_t  i3 = (int64_t)(q / (uint64_t)ne2);
        const int64_t  i2 = (int64_t)(q - (uint64_t)i3 * (uint64_t)ne2);
        const char * s = src.data + i1 * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3];
        char       * d = dst.data + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        const char * m = mask.data == nullptr ? nullptr
                       : mask.data + i1 * mask.nb[1] + (int64_t)((uint64_t)i2 % (uint64_t)mask.ne[2]) * mask.nb[2] +
                                        (int64_t)((uint64_t)i3 % (uint64_t)mask.ne[3]) * mask.nb[3];
        float slope = 1.0f;
        if (a.max_bias > 0.0f) {
            slope = i2 < a.n_head_log2 ? powf(a.m0, (float)(i2 + 1)) : powf(a.m1, (float)(2 * (i2 - a.n_head_log2) + 1));
        }

        float mx = -INFINITY;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            float w = *(const float *)(s + i * src.nb[0]) * a.scale;
            if (m != nullptr) {
                w += slope * ggmlx_dev_load(mask.type, m + i * mask.nb[0]);
            }
            if (cache) {
                row[i] = w;
            } else {
                *(float *)(d + i * dst.nb[0]) = w;
            }
            mx = w > mx ? w : mx;
        }
        mx = ggmlx_block_max(mx, buf);
        if (mx == -INFINITY) {
            /* fully masked: no distribution to normalise (block-uniform branch) */
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
                *(float *)(d + i * dst.nb[0]) = 0.0f;
            }
            continue;
        }
        float sum = 0.0f;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            float * p = cache ? &row[i] : (float *)(d + i * dst.nb[0]);
            const float e = expf(*p - mx);
            *p = e;
            sum += e;
        }
        const float inv = 1.0f / ggmlx_block_sum(sum, buf);
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) {
            float * p = (float *)(d + i * dst.nb[0]);
            *p = (cache ? row[i] : *p) * inv;
        }
        if (cache) {
            __syncthreads(); /* the next row reuses row[] */
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_soft_max(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                       char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, mask, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node, &dst);
    if (node->src[1] != NULL) {
        ggmlx_cuda_tdesc_of(node->src[1], &mask);
    } else {
        memset(&mask, 0, sizeof mask);
        mask.type = GGML_TYPE_F32;
        for (int d = 0; d < 4; d++) {
            mask.ne[d] = 1;
        }
    }
    softmax_args a;
    memcpy(&a.scale, (const char *)node->op_params + 0, sizeof a.scale);
    memcpy(&a.max_bias, (const char *)node->op_params + 4, sizeof a.max_bias);
    /* the ALiBi bases, computed as the CPU computes them */
    const int64_t n_head = src.ne[2];
    const int64_t nhl2   = n_head > 0 ? (int64_t)1 << (int)floor(log2((double)n_head)) : 1;
    a.n_head_log2 = (int)nhl2;
    a.m0 = powf(2.0f, -a.max_bias / (float)nhl2);
    a.m1 = powf(2.0f, -(a.max_bias / 2.0f) / (float)nhl2);

    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    if (src.ne[0] == 0 || nrows == 0) {
        return GGML_STATUS_SUCCESS;
    }
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_softmax(&lim, src.ne[0], nrows, &l)) {
        return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
    }
    k_soft_max<<<ggmlx_grid(l), ggmlx_block(l), l.shmem, ex->stream>>>(src, mask, dst, a, l.variant == 1);
    return ggmlx_after_launch(err, err_size, "soft_max");
}
