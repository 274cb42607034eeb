/*
 * ggmlx-emu.h -- the CUDA kernel emulator as the tests use it: cuda/'s kernels, dispatch and
 * cuBLAS plans compiled for the host (tests/cuda-emu/), behind a device "EMU0" that the
 * conformance runner treats like any other.
 *
 * What it shows: that the kernels compute the right values for every case, with their real
 * launch configurations, barriers and shuffles. What it cannot show: anything about a GPU's
 * memory model, timing, streams or the CUDA backend's own host code (cuda-backend.c and the
 * files it uses), which only a run on a GPU checks.
 */
#ifndef GGMLX_EMU_H
#define GGMLX_EMU_H

#include "cuda_runtime_api.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ggml_backend_device;

/* the emulated device (registered on first call); NULL with a message when it cannot be made */
struct ggml_backend_device * ggmlx_emu_device(void);

/* the sticky "last error" of the calling thread, as a failed launch leaves it */
void ggmlx_emu_set_error(cudaError_t e);

/* why the calling thread's last failed launch failed ("" before any) */
const char * ggmlx_emu_last_failure(void);

/* Threads of a block run in index order (false) or the reverse (true) from the next launch of
 * the calling thread on; GGMLX_EMU_ORDER=reverse sets true for every thread. */
void ggmlx_emu_set_reverse(bool reverse);

/* launches, blocks and threads run by every thread since the start (for the reports) */
struct ggmlx_emu_counts {
    uint64_t launches, blocks, threads, gemm_calls;
};
struct ggmlx_emu_counts ggmlx_emu_counts(void);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_EMU_H */
