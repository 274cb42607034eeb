/*
 * cuda_runtime_api.h (kernel emulator) -- the part of the CUDA runtime API that cuda/'s kernels
 * and dispatch call, declared for a build with no CUDA toolkit: "device memory" is host memory,
 * a stream is a tag (work runs at once on the calling thread), and errors are kept per thread
 * as cudaGetLastError reports them. Values of the enums are the real runtime's, so a plan or
 * message made here means what it means on a GPU.
 *
 * Only tests/cuda-emu/ puts this directory on an include path; nothing installed sees it.
 */
#ifndef GGMLX_EMU_CUDA_RUNTIME_API_H
#define GGMLX_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess                    = 0,
    cudaErrorInvalidValue          = 1,
    cudaErrorMemoryAllocation      = 2,
    cudaErrorInvalidConfiguration  = 9,
    cudaErrorLaunchFailure         = 719,
    cudaErrorLaunchOutOfResources  = 701,
    cudaErrorIllegalAddress        = 700,
} cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost     = 0,
    cudaMemcpyHostToDevice   = 1,
    cudaMemcpyDeviceToHost   = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault        = 4,
};

typedef struct ggmlx_emu_stream * cudaStream_t;

cudaError_t  cudaGetLastError(void);
cudaError_t  cudaPeekAtLastError(void);
const char * cudaGetErrorString(cudaError_t error);
const char * cudaGetErrorName(cudaError_t error);
cudaError_t  cudaMemcpyAsync(void * dst, const void * src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t  cudaMemsetAsync(void * dst, int value, size_t count, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_EMU_CUDA_RUNTIME_API_H */
