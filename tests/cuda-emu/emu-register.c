/*
 * emu-register.c -- linked into a program that was written for a CUDA build (ggml-demo), so that
 * its registry has the emulated CUDA devices as a CUDA build's has the real ones: registered
 * before main, after the environment (GGML_CUDA_DEVICES) is in place.
 */
#include "ggml-backend.h"
#include "ggml-cuda.h"

__attribute__((constructor)) static void ggmlx_emu_register_cuda(void) {
    ggml_backend_register(ggml_backend_cuda_reg());
}
