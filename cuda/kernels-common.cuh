/*
 * kernels-common.cuh -- what every ops-*.cu shares: typed element access through the shared
 * math (so the GPU rounds exactly as the CPU), launch geometry from launch-config.c, and the
 * check after every launch.
 */
#ifndef GGMLX_CUDA_KERNELS_COMMON_CUH
#define GGMLX_CUDA_KERNELS_COMMON_CUH

#include "cuda-kernels.h"
#include "launch-config.h"
#include "ggml-math.h"

#include <cuda_runtime.h>
#include <stdio.h>

/* one F32/F16/BF16 (or I32, for conversions) element as float; the dispatch rules out others */
static __device__ __forceinline__ float ggmlx_dev_load(int type, const char * p) {
    if (type == GGML_TYPE_F16) {
        return ggmlx_fp16_to_fp32(*(const uint16_t *)p);
    }
    if (type == GGML_TYPE_BF16) {
        return ggmlx_bf16_to_fp32(*(const uint16_t *)p);
    }
    if (type == GGML_TYPE_I32) {
        return (float)*(const int32_t *)p;
    }
    return *(const float *)p;
}

static __device__ __forceinline__ void ggmlx_dev_store(int type, char * p, float v) {
    if (type == GGML_TYPE_F16) {
        *(uint16_t *)p = ggmlx_fp32_to_fp16(v);
    } else if (type == GGML_TYPE_BF16) {
        *(uint16_t *)p = ggmlx_fp32_to_bf16(v);
    } else if (type == GGML_TYPE_I32) {
        *(int32_t *)p = ggmlx_f32_to_i32_sat(v);
    } else {
        *(float *)p = v;
    }
}

/* coordinates along dims 1..3 of row r, the rows of a tensor numbered flat */
struct ggmlx_row3 {
    int64_t i1, i2, i3;
};

static __device__ __forceinline__ ggmlx_row3 ggmlx_dev_row_coords(const ggmlx_cuda_tdesc & t, int64_t r) {
    const int64_t q = r / t.ne[1];
    ggmlx_row3 c;
    c.i1 = r % t.ne[1];
    c.i2 = q % t.ne[2];
    c.i3 = q / t.ne[2];
    return c;
}

/* byte offset of row r (flat over dims 1..3) of a tensor */
static __device__ __forceinline__ int64_t ggmlx_dev_row_offset(const ggmlx_cuda_tdesc & t, int64_t r) {
    const ggmlx_row3 c = ggmlx_dev_row_coords(t, r);
    return c.i1 * t.nb[1] + c.i2 * t.nb[2] + c.i3 * t.nb[3];
}

/* one element from ps (type ts) to pd (type td): equal types move es bytes, others convert */
static __device__ __forceinline__ void ggmlx_dev_copy_elem(int ts, const char * ps, int td, char * pd, int es) {
    if (ts == td) {
        switch (es) {
        case 1: *(uint8_t *)pd = *(const uint8_t *)ps; break;
        case 2: *(uint16_t *)pd = *(const uint16_t *)ps; break;
        case 4: *(uint32_t *)pd = *(const uint32_t *)ps; break;
        default: *(uint64_t *)pd = *(const uint64_t *)ps; break;
        }
        return;
    }
    ggmlx_dev_store(td, pd, ggmlx_dev_load(ts, ps));
}

/* bytes per element of the types kernels move (0: not one of them) */
static inline __host__ __device__ int ggmlx_elem_size(int type) {
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_I32: return 4;
    case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_I16: return 2;
    case GGML_TYPE_I8: return 1;
    case GGML_TYPE_F64: case GGML_TYPE_I64: return 8;
    default: return 0;
    }
}

/* Sums (and maxima) across a block whose size is a multiple of 32; every thread gets the
 * result. buf holds 32 floats; the first barrier lets a previous reduction finish reading it. */
static __device__ __forceinline__ float ggmlx_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

static __device__ __forceinline__ float ggmlx_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

static __device__ __forceinline__ float ggmlx_block_sum(float v, float * buf) {
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    v = ggmlx_warp_sum(v);
    __syncthreads();
    if (lane == 0) {
        buf[warp] = v;
    }
    __syncthreads();
    return ggmlx_warp_sum(lane < nw ? buf[lane] : 0.0f);
}

static __device__ __forceinline__ float ggmlx_block_max(float v, float * buf) {
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    v = ggmlx_warp_max(v);
    __syncthreads();
    if (lane == 0) {
        buf[warp] = v;
    }
    __syncthreads();
    return ggmlx_warp_max(lane < nw ? buf[lane] : -INFINITY);
}

static __device__ __forceinline__ double ggmlx_warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

/* as ggmlx_block_sum, in double (buf: 32 doubles) */
static __device__ __forceinline__ double ggmlx_block_sum_d(double v, double * buf) {
    const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    v = ggmlx_warp_sum_d(v);
    __syncthreads();
    if (lane == 0) {
        buf[warp] = v;
    }
    __syncthreads();
    return ggmlx_warp_sum_d(lane < nw ? buf[lane] : 0.0);
}

static inline dim3 ggmlx_grid(const ggmlx_cuda_launch & l) {
    return dim3(l.grid[0], l.grid[1], l.grid[2]);
}

static inline dim3 ggmlx_block(const ggmlx_cuda_launch & l) {
    return dim3(l.block[0], l.block[1], l.block[2]);
}

/* Limits valid on every GPU this backend runs on (sm_50 and later). */
static inline ggmlx_cuda_limits ggmlx_limits(void) {
    ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    return lim;
}

static inline enum ggml_status ggmlx_fail(char * err, size_t err_size, const char * what, const char * detail) {
    if (err != NULL && err_size > 0) {
        snprintf(err, err_size, "%s: %s", what, detail);
    }
    return GGML_STATUS_FAILED;
}

/*
 * The launch of an element kernel over cols x rows: *run false (and success) when there is
 * nothing to compute; a failure naming `what` when no configuration fits the device limits.
 */
static inline enum ggml_status ggmlx_elem_launch(int64_t cols, int64_t rows, ggmlx_cuda_launch * l, bool * run,
                                                 char * err, size_t err_size, const char * what) {
    *run = cols != 0 && rows != 0;
    if (!*run) {
        return GGML_STATUS_SUCCESS;
    }
    const ggmlx_cuda_limits lim = ggmlx_limits();
    if (!ggmlx_cuda_launch_elem(&lim, cols, rows, l)) {
        *run = false;
        return ggmlx_fail(err, err_size, what, "no launch configuration for this shape");
    }
    return GGML_STATUS_SUCCESS;
}

/* The check right after a launch: a bad configuration or a sticky error from earlier work. */
static inline enum ggml_status ggmlx_after_launch(char * err, size_t err_size, const char * what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        if (err != NULL && err_size > 0) {
            snprintf(err, err_size, "%s: launch failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
        }
        return GGML_STATUS_FAILED;
    }
    return GGML_STATUS_SUCCESS;
}

#endif /* GGMLX_CUDA_KERNELS_COMMON_CUH */
