/*
 * emu-module.c -- the entry points that make the emulated CUDA backend (ggmlx-cuda-emu-backend)
 * a loadable backend module, libggml-cuda-emu-module.so: a program linked against an installed
 * ggmlx (upstream's test-backend-ops built with LLAMA_USE_SYSTEM_GGML) gets the registry "CUDA"
 * with the emulated devices CUDA0.. (GGML_CUDA_DEVICES of them) by
 * GGML_BACKEND_PATH=.../libggml-cuda-emu-module.so, and tests them against its CPU.
 *
 * The same three exports as cuda/cuda-device.c gives the real module under GGML_BACKEND_DL; they
 * are here because the emulator's static libraries are compiled once, without GGML_BACKEND_DL,
 * for the test programs that link them.
 */
#define GGML_BACKEND_DL /* the export macros below are empty without it */
#include "ggml-backend-impl.h"
#include "ggml-cuda.h"

#include "cuda-impl.h"

#include <string.h>

static int emu_module_score(void) {
    return ggmlx_cuda_n_devices() > 0 ? 1 : 0;
}

/* the registry's own reason (cuda-device.c), asked under the name the loader uses */
static const char * emu_module_reason(void) {
    ggml_backend_reg_t                 reg = ggml_backend_cuda_reg();
    ggmlx_backend_unavailable_reason_t fn  = NULL;
    void * sym = reg->iface.get_proc_address(reg, GGMLX_BACKEND_UNAVAILABLE_REASON);
    /* a data pointer to a function pointer by copying, as the loader does with dlsym's */
    memcpy(&fn, &sym, sizeof fn);
    return fn != NULL ? fn() : NULL;
}

GGML_BACKEND_DL_IMPL(ggml_backend_cuda_reg)
GGML_BACKEND_DL_SCORE_IMPL(emu_module_score)
GGMLX_BACKEND_DL_REASON_IMPL(emu_module_reason)
