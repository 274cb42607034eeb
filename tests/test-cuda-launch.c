/*
 * test-cuda-launch.c -- the CUDA kernels' launch configurations (cuda/launch-config.c, linked
 * as plain C: no CUDA toolkit or GPU needed). For sweeps of shapes from 1 to past every grid
 * limit, each configuration must respect the device's limits (grid y/z <= 65535, x <= 2^31-1,
 * block <= 1024 threads, shared memory within the per-block limit) and, replaying the kernels'
 * own loops with their 64-bit index arithmetic, reach every element exactly once.
 */
#include <criterion/criterion.h>

#include "launch-config.h"

#include <stdlib.h>
#include <string.h>

static const int64_t k_sizes[] = { 1, 2, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4097, 65535, 65536, 70000,
                                   4194304 + 3, (int64_t)1 << 31, ((int64_t)1 << 33) + 7 };
#define N_SIZES ((int)(sizeof k_sizes / sizeof k_sizes[0]))

/* beyond this many elements a dimension is checked by sampling rather than replayed in full */
#define REPLAY_MAX ((int64_t)1 << 22)

static void check_limits(const struct ggmlx_cuda_limits * lim, const struct ggmlx_cuda_launch * l) {
    for (int d = 0; d < 3; d++) {
        cr_assert(l->grid[d] >= 1 && l->grid[d] <= lim->max_grid[d], "grid[%d] = %u past %u", d, l->grid[d],
                  lim->max_grid[d]);
        cr_assert(l->block[d] >= 1, "block[%d] = 0", d);
    }
    const uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    cr_assert(threads <= (uint64_t)lim->max_threads_per_block && threads <= GGMLX_CUDA_MAX_BLOCK,
              "block of %llu threads", (unsigned long long)threads);
    cr_assert(l->shmem <= lim->max_shmem_per_block, "shared memory %zu past %zu", l->shmem, lim->max_shmem_per_block);
}

/*
 * One dimension of a grid-stride loop, as the kernels write it:
 *   for (int64_t i = (int64_t)b * B + t; i < n; i += (int64_t)G * B)
 * Replayed in full (each index counted) up to REPLAY_MAX, else sampled: each index's unique
 * (block, thread, step) must exist, and the largest index is reached.
 */
static void check_cover_1d(int64_t n, uint32_t G, uint32_t B) {
    const int64_t stride = (int64_t)G * (int64_t)B;
    cr_assert(stride > 0);
    if (n <= REPLAY_MAX) {
        uint8_t * seen = calloc((size_t)(n > 0 ? n : 1), 1);
        cr_assert_not_null(seen);
        for (uint32_t b = 0; b < G; b++) {
            for (uint32_t t = 0; t < B; t++) {
                for (int64_t i = (int64_t)b * B + t; i < n; i += stride) {
                    cr_assert(seen[i] == 0, "index %lld reached twice (G %u B %u)", (long long)i, G, B);
                    seen[i] = 1;
                }
            }
        }
        for (int64_t i = 0; i < n; i++) {
            cr_assert(seen[i] == 1, "index %lld of %lld never reached (G %u B %u)", (long long)i, (long long)n, G, B);
        }
        free(seen);
        return;
    }
    const int64_t probes[] = { 0, 1, n / 3, n / 2, n - stride, n - 2, n - 1 };
    for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
        const int64_t i = probes[p];
        if (i < 0 || i >= n) {
            continue;
        }
        const int64_t r = i % stride;
        const int64_t b = r / B, t = r % B, k = i / stride;
        cr_assert(b < G && t < B);
        cr_assert_eq(b * B + t + k * stride, i);
    }
}

/* full 2-D replay of the ELEM mapping for shapes small enough, counting every (i0, row) */
static void replay_elem(int64_t ne0, int64_t nrows, const struct ggmlx_cuda_launch * l) {
    const size_t n = (size_t)(ne0 * nrows);
    uint8_t * seen = calloc(n > 0 ? n : 1, 1);
    cr_assert_not_null(seen);
    const int64_t sx = (int64_t)l->grid[0] * l->block[0], sy = (int64_t)l->grid[1] * l->block[1];
    for (uint32_t by = 0; by < l->grid[1]; by++) {
        for (uint32_t bx = 0; bx < l->grid[0]; bx++) {
            for (uint32_t ty = 0; ty < l->block[1]; ty++) {
                for (uint32_t tx = 0; tx < l->block[0]; tx++) {
                    for (int64_t r = (int64_t)by * l->block[1] + ty; r < nrows; r += sy) {
                        for (int64_t i0 = (int64_t)bx * l->block[0] + tx; i0 < ne0; i0 += sx) {
                            cr_assert(seen[r * ne0 + i0] == 0, "element (%lld, %lld) twice", (long long)i0, (long long)r);
                            seen[r * ne0 + i0] = 1;
                        }
                    }
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        cr_assert(seen[i] == 1, "element %zu of %lld x %lld never reached", i, (long long)ne0, (long long)nrows);
    }
    free(seen);
}

static void sweep_elem(const struct ggmlx_cuda_limits * lim) {
    for (int a = 0; a < N_SIZES; a++) {
        for (int b = 0; b < N_SIZES; b++) {
            const int64_t ne0 = k_sizes[a], nrows = k_sizes[b];
            struct ggmlx_cuda_launch l;
            cr_assert(ggmlx_cuda_launch_elem(lim, ne0, nrows, &l), "no config for %lld x %lld", (long long)ne0,
                      (long long)nrows);
            check_limits(lim, &l);
            cr_assert_eq(l.grid[2], 1);
            cr_assert_eq(l.block[2], 1);
            /* no warp split across rows unless the whole block is one row's worth */
            cr_assert(l.block[0] % (uint32_t)lim->warp_size == 0 || l.block[1] == 1);
            if (ne0 * (double)nrows <= (double)(1 << 20) && ne0 * nrows <= (1 << 20)) {
                replay_elem(ne0, nrows, &l);
            } else {
                check_cover_1d(ne0, l.grid[0], l.block[0]);
                check_cover_1d(nrows, l.grid[1], l.block[1]);
            }
        }
    }
}

Test(cuda_launch, elem_default_limits) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    sweep_elem(&lim);
}

Test(cuda_launch, elem_small_device) {
    /* a device with smaller limits than any real one: the loops take up what the grid cannot */
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    lim.max_threads_per_block = 128;
    lim.max_grid[0] = 1000, lim.max_grid[1] = 7, lim.max_grid[2] = 1;
    lim.max_shmem_per_block = 4096;
    sweep_elem(&lim);
}

static void sweep_row(const struct ggmlx_cuda_limits * lim) {
    const int caps[] = { 32, 256, 512, 1024, 4096 };
    for (int c = 0; c < 5; c++) {
        for (int a = 0; a < N_SIZES; a++) {
            for (int b = 0; b < N_SIZES; b++) {
                const int64_t ne0 = k_sizes[a], nrows = k_sizes[b];
                struct ggmlx_cuda_launch l;
                cr_assert(ggmlx_cuda_launch_row(lim, ne0, nrows, caps[c], 0, &l));
                check_limits(lim, &l);
                cr_assert(l.block[0] % (uint32_t)lim->warp_size == 0, "block %u not whole warps", l.block[0]);
                cr_assert(l.block[0] <= (uint32_t)caps[c]);
                cr_assert_eq(l.block[1], 1);
                cr_assert_eq(l.grid[1], 1);
                /* rows: blockIdx.x stepping gridDim.x; elements: threadIdx.x stepping blockDim.x */
                check_cover_1d(nrows, l.grid[0], 1);
                check_cover_1d(ne0, 1, l.block[0]);
            }
        }
    }
}

Test(cuda_launch, row_default_limits) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    sweep_row(&lim);
}

Test(cuda_launch, row_small_device) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    lim.max_threads_per_block = 96;
    lim.max_grid[0] = 65535;
    sweep_row(&lim);
}

Test(cuda_launch, row_shared_memory) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    struct ggmlx_cuda_launch l;
    cr_assert(ggmlx_cuda_launch_row(&lim, 100, 10, 256, lim.max_shmem_per_block, &l));
    cr_assert_eq(l.shmem, lim.max_shmem_per_block);
    cr_assert_not(ggmlx_cuda_launch_row(&lim, 100, 10, 256, lim.max_shmem_per_block + 1, &l));
    cr_assert_not(ggmlx_cuda_launch_row(&lim, 100, 10, 16, 0, &l), "less than a warp");
}

Test(cuda_launch, softmax_cache) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    for (int a = 0; a < N_SIZES; a++) {
        struct ggmlx_cuda_launch l;
        const int64_t ne0 = k_sizes[a];
        cr_assert(ggmlx_cuda_launch_softmax(&lim, ne0, 70000, &l));
        check_limits(&lim, &l);
        /* the static reduction buffer (32 floats) must fit next to the cached row */
        cr_assert(l.shmem + 32 * sizeof(float) <= lim.max_shmem_per_block);
        if (l.variant == 1) {
            cr_assert_eq(l.shmem, (size_t)ne0 * sizeof(float));
        } else {
            cr_assert_eq(l.shmem, 0);
            cr_assert(ne0 * sizeof(float) > lim.max_shmem_per_block - 64 * sizeof(float));
        }
    }
    struct ggmlx_cuda_launch l;
    cr_assert(ggmlx_cuda_launch_softmax(&lim, 4097, 1, &l));
    cr_assert_eq(l.variant, 1, "a 4097-float row fits in 48 KiB");
    cr_assert(ggmlx_cuda_launch_softmax(&lim, 12288, 1, &l));
    cr_assert_eq(l.variant, 0, "a 48 KiB row leaves no room for the reduction buffer");
    lim.max_shmem_per_block = 0;
    cr_assert(ggmlx_cuda_launch_softmax(&lim, 1, 1, &l));
    cr_assert_eq(l.variant, 0);
    cr_assert_eq(l.shmem, 0);
}

/* replays the bitonic network of ops-sort.cu on the configuration's padded length and block */
static void replay_bitonic(const struct ggmlx_cuda_launch * l, int64_t ne0) {
    const int npad = l->variant, half = npad / 2;
    uint32_t * key = malloc((size_t)npad * sizeof *key);
    uint16_t * idx = malloc((size_t)npad * sizeof *idx);
    cr_assert(key != NULL && idx != NULL);
    /* few distinct keys, so the index tie-break decides most places */
    for (int i = 0; i < npad; i++) {
        key[i] = i < ne0 ? (uint32_t)((i * 7919u) % 5u) : 0xFFFFFFFFu;
        idx[i] = (uint16_t)i;
    }
    for (int k = 2; k <= npad; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (uint32_t t = 0; t < l->block[0]; t++) {
                for (int p = (int)t; p < half; p += (int)l->block[0]) {
                    const int i = ((p & ~(j - 1)) << 1) | (p & (j - 1));
                    const int m = i + j;
                    const bool up = (i & k) == 0;
                    const bool after = key[i] > key[m] || (key[i] == key[m] && idx[i] > idx[m]);
                    if (after == up) {
                        const uint32_t tk = key[i];
                        key[i] = key[m], key[m] = tk;
                        const uint16_t ti = idx[i];
                        idx[i] = idx[m], idx[m] = ti;
                    }
                }
            }
        }
    }
    for (int i = 1; i < npad; i++) {
        cr_assert(key[i - 1] < key[i] || (key[i - 1] == key[i] && idx[i - 1] < idx[i]),
                  "padded length %d: places %d and %d out of order", npad, i - 1, i);
    }
    free(key);
    free(idx);
}

Test(cuda_launch, sort_rows) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    for (int a = 0; a < N_SIZES; a++) {
        const int64_t ne0 = k_sizes[a];
        struct ggmlx_cuda_launch l;
        const bool ok = ggmlx_cuda_launch_sort(&lim, ne0, 70000, &l);
        /* keys and 16-bit indices padded to a power of two: 8192 of them fill 48 KiB */
        cr_assert_eq(ok, ne0 <= 8192, "rows of %lld", (long long)ne0);
        if (!ok) {
            continue;
        }
        check_limits(&lim, &l);
        cr_assert(l.variant >= ne0 && l.variant < 2 * (ne0 > 1 ? ne0 : 1), "padded %d for %lld", l.variant,
                  (long long)ne0);
        cr_assert_eq(l.variant & (l.variant - 1), 0, "padded length %d not a power of two", l.variant);
        cr_assert_eq(l.shmem, (size_t)l.variant * GGMLX_CUDA_SORT_ELEM_BYTES);
        cr_assert(l.block[0] % (uint32_t)lim.warp_size == 0);
        check_cover_1d(70000, l.grid[0], 1);
        replay_bitonic(&l, ne0);
    }
    const int64_t lens[] = { 4096, 4097, 8191, 8192 };
    for (int a = 0; a < 4; a++) {
        struct ggmlx_cuda_launch l;
        cr_assert(ggmlx_cuda_launch_sort(&lim, lens[a], 3, &l));
        check_limits(&lim, &l);
        replay_bitonic(&l, lens[a]);
    }
    /* a device with less shared memory takes shorter rows only; 16-bit indices cap any device */
    struct ggmlx_cuda_launch l;
    lim.max_shmem_per_block = 6 * 1024;
    cr_assert(ggmlx_cuda_launch_sort(&lim, 1024, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_sort(&lim, 1025, 1, &l));
    lim.max_shmem_per_block = 1024 * 1024;
    cr_assert(ggmlx_cuda_launch_sort(&lim, 65536, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_sort(&lim, 65537, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_sort(&lim, -1, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_sort(NULL, 1, 1, &l));
}

Test(cuda_launch, one_dimensional) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    for (int a = 0; a < N_SIZES; a++) {
        struct ggmlx_cuda_launch l;
        cr_assert(ggmlx_cuda_launch_1d(&lim, k_sizes[a], &l));
        check_limits(&lim, &l);
        check_cover_1d(k_sizes[a], l.grid[0], l.block[0]);
    }
}

Test(cuda_launch, bad_input) {
    struct ggmlx_cuda_limits lim;
    ggmlx_cuda_limits_default(&lim);
    struct ggmlx_cuda_launch l;
    memset(&l, 0x5a, sizeof l);
    cr_assert_not(ggmlx_cuda_launch_elem(&lim, -1, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_elem(&lim, 1, -1, &l));
    cr_assert_not(ggmlx_cuda_launch_elem(NULL, 1, 1, &l));
    cr_assert_not(ggmlx_cuda_launch_elem(&lim, 1, 1, NULL));
    cr_assert_not(ggmlx_cuda_launch_row(&lim, -5, 1, 256, 0, &l));
    cr_assert_not(ggmlx_cuda_launch_softmax(&lim, -5, 1, &l));
    cr_assert_eq(l.grid[0], 0x5a5a5a5au, "a refused request leaves out untouched");
    lim.max_threads_per_block = 8; /* less than a warp */
    cr_assert_not(ggmlx_cuda_launch_elem(&lim, 1, 1, &l));
    /* empty shapes: a valid launch that the kernels' loops skip */
    ggmlx_cuda_limits_default(&lim);
    cr_assert(ggmlx_cuda_launch_elem(&lim, 0, 0, &l));
    check_limits(&lim, &l);
}
