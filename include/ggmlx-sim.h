/*
 * ggmlx-sim.h -- simulated devices: multi-device code exercised without a GPU (docs/sim.md).
 *
 * N devices SIM0..SIMn-1 of type GPU, registered before the CPU. Each has private memory the
 * host cannot touch (tensor->data points into a PROT_NONE mapping, so a host read faults as it
 * would on a GPU; ggml_backend_tensor_set/get/copy work), a memory limit, its own queue thread,
 * counter events, queued copies to and from the CPU and other SIM devices, and the CPU kernels
 * for compute, minus a configurable list of refused ops (to force fallback splits).
 *
 * Devices are fixed at the registry's first use: configure them before it, with
 * ggmlx_sim_configure() or, when that is not called, with environment variables read then:
 *
 *   GGMLX_SIM_DEVICES=N          number of devices (default 0: none)
 *   GGMLX_SIM_MEMORY=BYTES       memory per device, optional K/M/G suffix (default 1G)
 *   GGMLX_SIM_THREADS=N          compute threads per device (default 1)
 *   GGMLX_SIM_REFUSE_OPS=A,B     ops every SIM device refuses, named as ggml_op_name() gives them
 *   GGMLX_SIM_CHAOS=SEED         random delays (0-200 us) before every queued task (soak tests)
 *
 * A malformed variable is reported (logged as an error) and no SIM device is registered.
 * Not available in a GGML_BACKEND_DL build (the CPU executor is a module there): the functions
 * below then fail or answer "none".
 */
#pragma once

#include "ggml-backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the most SIM devices one process may have */
#define GGMLX_SIM_MAX_DEVICES 16

struct ggmlx_sim_config {
    int                   n_devices;     /* 0 to GGMLX_SIM_MAX_DEVICES */
    size_t                memory_limit;  /* bytes per device; 0 = 1 GiB */
    int                   n_threads;     /* compute threads per device; 0 = 1 */
    const enum ggml_op  * refused_ops;   /* ops every SIM device refuses (copied); may be NULL when n is 0 */
    int                   n_refused_ops;
    uint64_t              chaos_seed;    /* 0 = off: random delays before queued tasks, for soak tests */
};

/*
 * Sets the SIM devices the registry will have. false (error recorded, nothing changed) when
 * cfg is NULL or invalid, or when the devices are already fixed (the registry or ggmlx_sim_reg
 * was used). May be called several times before that; the last call wins.
 */
GGML_API bool ggmlx_sim_configure(const struct ggmlx_sim_config * cfg);

/* true for a backend of a SIM device */
GGML_API bool ggmlx_backend_is_sim(ggml_backend_t backend);

/*
 * The "SIM" registry (fixes the configuration; 0 devices when none are configured). NULL in a
 * GGML_BACKEND_DL build.
 */
GGML_API ggml_backend_reg_t ggmlx_sim_reg(void);

#ifdef __cplusplus
}
#endif
