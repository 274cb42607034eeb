/*
 * backend-cpu.h -- what the CPU backend's two halves share: the backend (backend-cpu.c) and
 * its device and registry (backend-cpu-device.c). Internal to libggml-cpu, and to tests that
 * need the queue itself.
 */
#ifndef GGMLX_BACKEND_CPU_H
#define GGMLX_BACKEND_CPU_H

#include "ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "host-queue.h"

/* how a CPU backend is made: parsed from the device's init parameters */
struct ggmlx_cpu_backend_params {
    bool sync;      /* compute on the caller's thread, no queue */
    int  n_threads; /* including the queue's worker */
};

/* NULL (error recorded) when the worker cannot be started or memory is short */
ggml_backend_t ggmlx_cpu_backend_new(ggml_backend_dev_t dev, const struct ggmlx_cpu_backend_params * params);

/* the queue of a CPU backend, NULL in sync mode or for another backend (a test hook) */
struct ggmlx_queue * ggmlx_backend_cpu_queue(ggml_backend_t backend);

/*
 * n_threads as the work queued so far sees it (test hook: read it from a queued task or after
 * synchronizing, when the worker is not changing it)
 */
int ggmlx_backend_cpu_run_n_threads(ggml_backend_t backend);

/* the one CPU device */
ggml_backend_dev_t ggmlx_cpu_device(void);

#endif /* GGMLX_BACKEND_CPU_H */
