/*
 * sim-dl.c -- SIM devices in a GGML_BACKEND_DL build: there are none.
 *
 * SIM devices compute with the CPU executor in libggml-cpu, and in that build libggml-cpu is a
 * module that libggml does not link, so the simulated devices are left out. The public
 * functions stay, so a program written for them still links, and say so.
 */
#ifdef GGML_BACKEND_DL

#include "ggmlx-sim.h"

#include "ggml-impl.h"

bool ggmlx_sim_configure(const struct ggmlx_sim_config * cfg) {
    (void) cfg;
    ggmlx_error(__func__, "SIM devices are not available in a GGML_BACKEND_DL build");
    return false;
}

bool ggmlx_backend_is_sim(ggml_backend_t backend) {
    (void) backend;
    return false;
}

ggml_backend_reg_t ggmlx_sim_reg(void) {
    ggmlx_error(__func__, "SIM devices are not available in a GGML_BACKEND_DL build");
    return NULL;
}

#endif /* GGML_BACKEND_DL */
