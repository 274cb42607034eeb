/*
 * launch-config.h -- grid and block dimensions for every CUDA kernel family, computed in plain
 * C11 (no CUDA header) so that tests on a machine without a GPU can sweep shapes against device
 * limits and replay the index mapping the kernels use.
 *
 * Two mappings, both loops with 64-bit indices so that no shape overflows 32-bit arithmetic
 * and no grid dimension has to grow past its limit:
 *
 *  ELEM (elementwise over rows): a thread is (bx, by, tx, ty) with
 *      i0  = bx * block[0] + tx, then += grid[0] * block[0] while i0 < ne0
 *      row = by * block[1] + ty, then += grid[1] * block[1] while row < nrows
 *  ROW (one block per row, e.g. norms and softmax):
 *      row = bx, then += grid[0] while row < nrows
 *      i0  = tx, then += block[0] while i0 < ne0
 */
#ifndef GGMLX_CUDA_LAUNCH_CONFIG_H
#define GGMLX_CUDA_LAUNCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a device allows; filled from cudaDeviceProp on the GPU, by hand in the tests. */
struct ggmlx_cuda_limits {
    int      max_threads_per_block; /* 1024 on every GPU since Fermi */
    uint32_t max_grid[3];           /* 2^31-1, 65535, 65535 */
    size_t   max_shmem_per_block;   /* without opt-in: 48 KiB */
    int      warp_size;             /* 32 */
};

/* The limits every GPU since compute capability 3.0 meets. */
void ggmlx_cuda_limits_default(struct ggmlx_cuda_limits * lim);

struct ggmlx_cuda_launch {
    uint32_t grid[3];
    uint32_t block[3];
    size_t   shmem;   /* dynamic shared memory, bytes */
    int      variant; /* kernel-specific choice (softmax: 1 = row cached in shared memory) */
};

/* Largest block any kernel here is compiled for (__launch_bounds__). */
#define GGMLX_CUDA_MAX_BLOCK 1024
/* Threads per block of the elementwise kernels. */
#define GGMLX_CUDA_ELEM_THREADS 256

/*
 * ELEM mapping over ne0 elements of nrows rows. Returns false (out untouched) for a negative
 * size or limits that allow no launch; an empty shape gives a valid 1-block launch that does
 * nothing (callers normally skip it).
 */
bool ggmlx_cuda_launch_elem(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                            struct ggmlx_cuda_launch * out);

/*
 * ROW mapping: one block per row, block a multiple of the warp size (the kernels reduce across
 * warps), at most max_threads. shmem_per_row is dynamic shared memory the kernel wants for a row
 * (0 for none); false when it does not fit.
 */
bool ggmlx_cuda_launch_row(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows, int max_threads,
                           size_t shmem, struct ggmlx_cuda_launch * out);

/* softmax: ROW mapping, caching the row of logits in shared memory when it fits (variant 1). */
bool ggmlx_cuda_launch_softmax(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                               struct ggmlx_cuda_launch * out);

/*
 * ARGSORT / TOP_K: one block per row (ROW mapping), the row's 32-bit keys and 16-bit indices
 * padded to a power of two (variant: that padded length) and sorted in shared memory. False
 * when the padded row does not fit the shared memory or 16-bit indices (supports_op then says
 * no); an empty row gives a padded length of 1.
 */
#define GGMLX_CUDA_SORT_ELEM_BYTES 6
bool ggmlx_cuda_launch_sort(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                            struct ggmlx_cuda_launch * out);

/* A 1-D ELEM launch over n entries (pointer arrays of batched GEMM, the row-index check). */
bool ggmlx_cuda_launch_1d(const struct ggmlx_cuda_limits * lim, int64_t n, struct ggmlx_cuda_launch * out);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_CUDA_LAUNCH_CONFIG_H */
