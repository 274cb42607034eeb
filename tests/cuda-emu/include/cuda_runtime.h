/*
 * cuda_runtime.h (kernel emulator) -- what a .cu file of cuda/ sees when tests/cuda-emu/ compiles
 * it as plain C++ for the host: the runtime API, and in C++ the device side (ggmlx-emu-device.h).
 */
#ifndef GGMLX_EMU_CUDA_RUNTIME_H
#define GGMLX_EMU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
#    include "ggmlx-emu-device.h"
#endif

#endif /* GGMLX_EMU_CUDA_RUNTIME_H */
