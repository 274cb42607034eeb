/*
 * sim-impl.h -- what the simulated devices' files share (docs/sim.md): the fixed settings
 * (sim-config.c), a device (sim-device.c) and its private-memory buffers (sim-buffer.c).
 *
 * Not built in a GGML_BACKEND_DL build: SIM devices compute with the CPU executor, which lives
 * in libggml-cpu, and there libggml-cpu is a module that libggml does not link (sim-dl.c then
 * provides answers that say so).
 */
#ifndef GGMLX_SIM_IMPL_H
#define GGMLX_SIM_IMPL_H

#include "ggml-backend-impl.h"
#include "ggmlx-sim.h"

#include <pthread.h>
#include <stdatomic.h>

/* Above this the two views of every buffer could not fit a 47-bit address space. */
#define GGMLX_SIM_MAX_MEMORY ((size_t) 1 << 44)

/* tensors in SIM memory are aligned to a cache line, as CPU kernels like */
#define GGMLX_SIM_ALIGN 64

/* the configuration, resolved (defaults filled in) and fixed once devices exist */
struct ggmlx_sim_settings {
    int      n_devices;
    size_t   memory_limit;
    int      n_threads;
    bool     refused[GGML_OP_COUNT];
    uint64_t chaos_seed;
};

/*
 * Fixes the settings (from ggmlx_sim_configure, else the environment) on first call and
 * returns them; they never change afterwards, so readers need no lock.
 */
const struct ggmlx_sim_settings * ggmlx_sim_settings_fix(void);

struct ggmlx_sim_device {
    int                              index;
    char                             name[16];  /* "SIM0" */
    char                             desc[128];
    size_t                           limit;     /* bytes */
    pthread_mutex_t                  mem_lock;
    size_t                           used;      /* bytes held by live buffers */
    atomic_uint                      n_backends;/* made so far: seeds chaos per queue */
    const struct ggmlx_sim_settings * settings;
    struct ggml_backend_buffer_type  buft;
    struct ggml_backend_device       dev;
};

/* fills sd->buft (sd->dev and sd->limit set first) */
void ggmlx_sim_buft_init(struct ggmlx_sim_device * sd);

#endif /* GGMLX_SIM_IMPL_H */
