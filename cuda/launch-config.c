/*
 * launch-config.c -- see launch-config.h. Plain C11: compiled into libggml-cuda and, as the object
 * library ggmlx-cuda-plain (tests/CMakeLists.txt), into its tests.
 */
#include "launch-config.h"

void ggmlx_cuda_limits_default(struct ggmlx_cuda_limits * lim) {
    lim->max_threads_per_block = 1024;
    lim->max_grid[0]           = 2147483647u;
    lim->max_grid[1]           = 65535u;
    lim->max_grid[2]           = 65535u;
    lim->max_shmem_per_block   = 48u * 1024u;
    lim->warp_size             = 32;
}

static int64_t lc_ceil_div(int64_t x, int64_t y) {
    return (x + y - 1) / y;
}

static uint32_t lc_clamp(int64_t v, uint32_t hi) {
    if (v < 1) {
        return 1;
    }
    return v > (int64_t)hi ? hi : (uint32_t)v;
}

static bool lc_limits_ok(const struct ggmlx_cuda_limits * lim) {
    return lim != NULL && lim->warp_size > 0 && lim->max_threads_per_block >= lim->warp_size &&
           lim->max_grid[0] >= 1 && lim->max_grid[1] >= 1 && lim->max_grid[2] >= 1;
}

/* largest power of two <= v (v >= 1) */
static int64_t lc_floor_pow2(int64_t v) {
    int64_t p = 1;
    while (p * 2 <= v) {
        p *= 2;
    }
    return p;
}

bool ggmlx_cuda_launch_elem(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                            struct ggmlx_cuda_launch * out) {
    if (!lc_limits_ok(lim) || out == NULL || ne0 < 0 || nrows < 0) {
        return false;
    }
    int64_t threads = GGMLX_CUDA_ELEM_THREADS;
    if (threads > lim->max_threads_per_block) {
        threads = lc_floor_pow2(lim->max_threads_per_block);
    }
    /* Short rows would leave most of a block idle along x: give the rest of the block to rows
     * (block[0] a power of two >= the row, at least a warp unless the block is smaller). */
    int64_t bx = threads;
    while (bx / 2 >= ne0 && bx / 2 >= lim->warp_size) {
        bx /= 2;
    }
    const int64_t by = threads / bx;

    /* Rows beyond 65535 * by are looped over rather than spread wider: grid y is the small
     * dimension on every GPU. Along x, a block count past the limit is looped over as well. */
    out->grid[0]  = lc_clamp(lc_ceil_div(ne0, bx), lim->max_grid[0]);
    out->grid[1]  = lc_clamp(lc_ceil_div(nrows, by), lim->max_grid[1]);
    out->grid[2]  = 1;
    out->block[0] = (uint32_t)bx;
    out->block[1] = (uint32_t)by;
    out->block[2] = 1;
    out->shmem    = 0;
    out->variant  = 0;
    return true;
}

bool ggmlx_cuda_launch_row(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows, int max_threads,
                           size_t shmem, struct ggmlx_cuda_launch * out) {
    if (!lc_limits_ok(lim) || out == NULL || ne0 < 0 || nrows < 0 || max_threads < lim->warp_size ||
        shmem > lim->max_shmem_per_block) {
        return false;
    }
    int64_t cap = max_threads < lim->max_threads_per_block ? max_threads : lim->max_threads_per_block;
    if (cap > GGMLX_CUDA_MAX_BLOCK) {
        cap = GGMLX_CUDA_MAX_BLOCK;
    }
    cap -= cap % lim->warp_size;
    /* enough warps for one element per thread, up to the cap */
    int64_t threads = lc_ceil_div(ne0 > 0 ? ne0 : 1, lim->warp_size) * lim->warp_size;
    if (threads > cap) {
        threads = cap;
    }
    out->grid[0]  = lc_clamp(nrows, lim->max_grid[0]);
    out->grid[1]  = 1;
    out->grid[2]  = 1;
    out->block[0] = (uint32_t)threads;
    out->block[1] = 1;
    out->block[2] = 1;
    out->shmem    = shmem;
    out->variant  = 0;
    return true;
}

bool ggmlx_cuda_launch_softmax(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                               struct ggmlx_cuda_launch * out) {
    if (!lc_limits_ok(lim) || ne0 < 0) {
        return false;
    }
    /* the row costs ne0 floats; the cross-warp reduction uses static shared memory (32 floats)
     * which is kept out of the dynamic budget by leaving that much room */
    const size_t reserve = 64 * sizeof(float);
    const bool cache = lim->max_shmem_per_block > reserve &&
                       (uint64_t)ne0 <= (lim->max_shmem_per_block - reserve) / sizeof(float);
    if (!ggmlx_cuda_launch_row(lim, ne0, nrows, 1024, cache ? (size_t)ne0 * sizeof(float) : 0, out)) {
        return false;
    }
    out->variant = cache ? 1 : 0;
    return true;
}

bool ggmlx_cuda_launch_sort(const struct ggmlx_cuda_limits * lim, int64_t ne0, int64_t nrows,
                            struct ggmlx_cuda_launch * out) {
    if (!lc_limits_ok(lim) || out == NULL || ne0 < 0 || nrows < 0) {
        return false;
    }
    int64_t npad = 1;
    while (npad < ne0) {
        npad *= 2;
    }
    /* indices are 16-bit, the padding included (a pad slot's index is its position) */
    if (npad > 65536 || (uint64_t)npad * GGMLX_CUDA_SORT_ELEM_BYTES > lim->max_shmem_per_block) {
        return false;
    }
    /* a thread per compare-exchange pair, at least a warp (the kernel waits at block barriers) */
    struct ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_row(lim, npad / 2, nrows, GGMLX_CUDA_MAX_BLOCK, (size_t)npad * GGMLX_CUDA_SORT_ELEM_BYTES,
                               &l)) {
        return false;
    }
    l.variant = (int)npad;
    *out      = l;
    return true;
}

bool ggmlx_cuda_launch_1d(const struct ggmlx_cuda_limits * lim, int64_t n, struct ggmlx_cuda_launch * out) {
    if (!ggmlx_cuda_launch_elem(lim, n, 1, out)) {
        return false;
    }
    return true;
}
