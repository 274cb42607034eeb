/*
 * ops-misc.cu -- ARANGE and TIMESTEP_EMBEDDING (generators, the element rules of
 * ggml-math-misc.h over the ELEM mapping), CUMSUM (F32 rows, one block per row scanning in
 * double as the CPU sums) and COUNT_EQUAL (I32 pairs counted into one I64).
 */
#include "kernels-common.cuh"

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_arange(const ggmlx_cuda_tdesc dst, float start, float step) {
    const int64_t sx = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < dst.ne[0]; i += sx) {
        *(float *)(dst.data + i * dst.nb[0]) = ggmlx_arange_f32(start, step, i);
    }
}

/* dst [dim, n]: row r embeds timestep src[r] */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_timestep_embedding(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst, int64_t dim, double lmax) {
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < dst.ne[1]; r += sy) {
        const float t = *(const float *)(src.data + r * src.nb[0]);
        char * pd = dst.data + r * dst.nb[1];
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < dst.ne[0]; i += sx) {
            *(float *)(pd + i * dst.nb[0]) = ggmlx_timestep_embedding_f32(t, i, dim, lmax);
        }
    }
}

/*
 * ROW mapping: the row goes by in chunks of blockDim.x elements; each chunk is scanned across
 * the block (warps, then the warp totals) and offset by the total of the chunks before it.
 */
__global__ void __launch_bounds__(GGMLX_CUDA_MAX_BLOCK)
k_cumsum(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc dst) {
    __shared__ double wsum[32];
    const int64_t ne0   = src.ne[0];
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const char * s = src.data + ggmlx_dev_row_offset(src, r);
        char       * d = dst.data + ggmlx_dev_row_offset(dst, r);
        double carry = 0.0;
        for (int64_t base = 0; base < ne0; base += blockDim.x) {
            const int64_t i = base + threadIdx.x;
            double v = i < ne0 ? (double)*(const float *)(s + i * src.nb[0]) : 0.0;
            for (int o = 1; o < 32; o <<= 1) {
                const double u = __shfl_up_sync(0xffffffffu, v, o);
                if (lane >= o) {
                    v += u;
                }
            }
            if (lane == 31) {
                wsum[warp] = v;
            }
            __syncthreads();
            if (warp == 0) {
                double w = lane < nw ? wsum[lane] : 0.0;
                for (int o = 1; o < 32; o <<= 1) {
                    const double u = __shfl_up_sync(0xffffffffu, w, o);
                    if (lane >= o) {
                        w += u;
                    }
                }
                if (lane < nw) {
                    wsum[lane] = w; /* inclusive: the total up to and including warp `lane` */
                }
            }
            __syncthreads();
            v += carry + (warp > 0 ? wsum[warp - 1] : 0.0);
            if (i < ne0) {
                *(float *)(d + i * dst.nb[0]) = (float)v;
            }
            carry += wsum[nw - 1];
            __syncthreads(); /* wsum is rewritten by the next chunk */
        }
    }
}

/* ELEM mapping over a; each warp adds its count to *out (zeroed before the launch) */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_count_equal(const ggmlx_cuda_tdesc a, const ggmlx_cuda_tdesc b, unsigned long long * out) {
    const int64_t ne0   = a.ne[0];
    const int64_t nrows = a.ne[1] * a.ne[2] * a.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    unsigned long long n = 0;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const char * pa = a.data + ggmlx_dev_row_offset(a, r);
        const char * pb = b.data + ggmlx_dev_row_offset(b, r);
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            n += *(const int32_t *)(pa + i0 * a.nb[0]) == *(const int32_t *)(pb + i0 * b.nb[0]);
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        n += __shfl_xor_sync(0xffffffffu, n, o);
    }
    if ((threadIdx.x + threadIdx.y * blockDim.x) % 32u == 0 && n != 0) {
        atomicAdd(out, n);
    }
}

static enum ggml_status launch_count_equal(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                           size_t err_size) {
    ggmlx_cuda_tdesc a, b;
    ggmlx_cuda_tdesc_of(node->src[0], &a);
    ggmlx_cuda_tdesc_of(node->src[1], &b);
    const cudaError_t e = cudaMemsetAsync(node->data, 0, sizeof(int64_t), ex->stream);
    if (e != cudaSuccess) {
        return ggmlx_fail(err, err_size, "count_equal: cudaMemsetAsync", cudaGetErrorString(e));
    }
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st =
        ggmlx_elem_launch(a.ne[0], a.ne[1] * a.ne[2] * a.ne[3], &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    k_count_equal<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(a, b, (unsigned long long *)node->data);
    return ggmlx_after_launch(err, err_size, "count_equal");
}

extern "C" enum ggml_status ggmlx_cuda_launch_misc(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                   char * err, size_t err_size) {
    if (node->op == GGML_OP_COUNT_EQUAL) {
        return launch_count_equal(ex, node, err, err_size);
    }
    ggmlx_cuda_tdesc dst;
    ggmlx_cuda_tdesc_of(node, &dst);
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (node->op == GGML_OP_CUMSUM) {
        ggmlx_cuda_tdesc src;
        ggmlx_cuda_tdesc_of(node->src[0], &src);
        if (!ggmlx_cuda_launch_row(&lim, src.ne[0], src.ne[1] * src.ne[2] * src.ne[3], 256, 0, &l)) {
            return ggmlx_fail(err, err_size, node->name, "no launch configuration for this shape");
        }
        k_cumsum<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst);
        return ggmlx_after_launch(err, err_size, "cumsum");
    }
    bool run;
    enum ggml_status st;
    if (node->op == GGML_OP_ARANGE) {
        float start, step;
        memcpy(&start, (const char *)node->op_params + 0, sizeof start);
        memcpy(&step, (const char *)node->op_params + 8, sizeof step);
        st = ggmlx_elem_launch(dst.ne[0], 1, &l, &run, err, err_size, node->name);
        if (st != GGML_STATUS_SUCCESS || !run) {
            return st;
        }
        k_arange<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(dst, start, step);
        return ggmlx_after_launch(err, err_size, "arange");
    }
    /* TIMESTEP_EMBEDDING */
    ggmlx_cuda_tdesc src;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    int32_t dim, max_period;
    memcpy(&dim, (const char *)node->op_params + 0, sizeof dim);
    memcpy(&max_period, (const char *)node->op_params + 4, sizeof max_period);
    st = ggmlx_elem_launch(dst.ne[0], dst.ne[1], &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    k_timestep_embedding<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, dst, (int64_t)dim,
                                                                           log((double)max_period));
    return ggmlx_after_launch(err, err_size, "timestep_embedding");
}
