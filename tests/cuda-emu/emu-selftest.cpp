/*
 * emu-selftest.cpp -- small kernels that check the emulator itself (tests/test-cuda-emu.c):
 * every thread of a 3-D grid runs once with its own coordinates, the block reductions of
 * kernels-common.cuh at every block size, a bad configuration and a barrier that can never open
 * are errors, and the thread order can be reversed so that a missing barrier shows.
 */
#include "kernels-common.cuh"
#include "ggmlx-emu.h"

#include <vector>

/* out[global linear id] = the id built from the coordinates; count[id] += 1 */
__global__ void k_coords(uint32_t * out, uint32_t * count) {
    const uint32_t bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const uint32_t tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const uint32_t id = bx * (blockDim.x * blockDim.y * blockDim.z) + tx;
    out[id] = id;
    atomicAdd(&count[id], 1u);
}

extern "C" cudaError_t ggmlx_emu_selftest_coords(const unsigned grid[3], const unsigned block[3], uint32_t * out,
                                                 uint32_t * count) {
    ggmlx_emu::launch(k_coords, dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]))(out, count);
    return cudaGetLastError();
}

/* each block sums v[0..n) with ggmlx_block_sum (float) and ggmlx_block_max */
__global__ void k_block_sum(const float * v, int n, float * sum, float * mx) {
    __shared__ float buf[32];
    float s = 0.0f, m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        s += v[i];
        m = v[i] > m ? v[i] : m;
    }
    s = ggmlx_block_sum(s, buf);
    m = ggmlx_block_max(m, buf);
    if (threadIdx.x == 0) {
        sum[blockIdx.x] = s;
        mx[blockIdx.x]  = m;
    }
}

extern "C" cudaError_t ggmlx_emu_selftest_block_sum(int threads, int blocks, const float * v, int n, float * sum,
                                                    float * mx) {
    ggmlx_emu::launch(k_block_sum, dim3((unsigned)blocks), dim3((unsigned)threads))(v, n, sum, mx);
    return cudaGetLastError();
}

/* a full-mask shuffle from `lanes` threads of a warp only: the others have returned */
__global__ void k_partial_shuffle(int lanes, float * out) {
    if ((int)threadIdx.x >= lanes) {
        return;
    }
    out[threadIdx.x] = ggmlx_warp_sum(1.0f);
}

extern "C" cudaError_t ggmlx_emu_selftest_partial_shuffle(int block, int lanes, float * out) {
    ggmlx_emu::launch(k_partial_shuffle, dim3(1), dim3((unsigned)block))(lanes, out);
    return cudaGetLastError();
}

/* each thread stores its index, then reads its right neighbour's: with or without the barrier */
__global__ void k_neighbour(int * out, bool barrier) {
    __shared__ int cell[1024];
    const int n = (int)blockDim.x, i = (int)threadIdx.x;
    cell[i] = -1;
    __syncthreads();
    cell[i] = i;
    if (barrier) {
        __syncthreads();
    }
    out[i] = cell[(i + 1) % n];
}

extern "C" cudaError_t ggmlx_emu_selftest_neighbour(int threads, bool barrier, int * out) {
    ggmlx_emu::launch(k_neighbour, dim3(1), dim3((unsigned)threads))(out, barrier);
    return cudaGetLastError();
}
