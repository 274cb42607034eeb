/*
 * ggml-build-info.c -- what the `ggml` library was built with, for tools and bug reports.
 */
#include "ggml-cpu.h"
#include "ggmlx.h"

#include <stdio.h>

const char * ggmlx_build_info(void) {
    static char info[256];
#ifdef GGML_BACKEND_DL
    /* the CPU's feature probes live in the libggml-cpu module, which libggml does not link */
    snprintf(info, sizeof info, "ggmlx %s (commit %s); CPU: loadable module; CUDA: %s; sanitizers: %s",
             ggml_version(), ggml_commit(),
#else
    snprintf(info, sizeof info, "ggmlx %s (commit %s); CPU: avx2=%d avx512=%d f16c=%d; CUDA: %s; sanitizers: %s",
             ggml_version(), ggml_commit(), ggml_cpu_has_avx2(), ggml_cpu_has_avx512(), ggml_cpu_has_f16c(),
#endif
#if defined(GGMLX_HAVE_CUDA)
             "compiled",
#elif defined(GGMLX_CUDA_MODULE)
             "loadable module",
#else
             "not compiled",
#endif
#if defined(__SANITIZE_ADDRESS__)
             "address"
#elif defined(__SANITIZE_THREAD__)
             "thread"
#else
             "none"
#endif
    );
    return info;
}
