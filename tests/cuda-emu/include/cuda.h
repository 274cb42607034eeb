/*
 * cuda.h (kernel emulator) -- the driver types of the one driver call the backend makes
 * (cuStreamWaitValue64, fetched with cudaGetDriverEntryPointByVersion).
 */
#ifndef GGMLX_EMU_CUDA_H
#define GGMLX_EMU_CUDA_H

#include <stdint.h>

typedef enum cudaError_enum {
    CUDA_SUCCESS             = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
} CUresult;

typedef struct ggmlx_emu_stream * CUstream;
typedef unsigned long long        CUdeviceptr;
typedef uint64_t                  cuuint64_t;

#define CU_STREAM_WAIT_VALUE_GEQ 0x0

#endif /* GGMLX_EMU_CUDA_H */
