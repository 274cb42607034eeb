/*
 * host-backend.h -- a backend whose work runs on the host: one host queue (or none, in "sync"
 * mode) whose worker computes snapshots of graphs with the CPU executor (docs/async.md).
 *
 * The CPU backend is one; each simulated device's backend (src/sim) is another. They differ in
 * where a tensor's memory is reached: the CPU uses tensor->data in host memory, a SIM backend
 * translates the PROT_NONE address of its own device's memory into the read-write view. That
 * difference is the address hook; everything else (queued computes, copies, events, plans,
 * sticky status, hold/release) is shared here. Copies between any two host backends are queued
 * on the destination behind an event recorded on the source (rule 7), reading a source in a
 * device's private memory through its read-write view (host-alias.h).
 */
#ifndef GGMLX_HOST_BACKEND_H
#define GGMLX_HOST_BACKEND_H

#include "ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "host-queue.h"

/*
 * What the executing thread uses. Two copies exist because two threads use them: the caller's
 * (what it last set; plans read it on the caller's thread) and the executing thread's, which a
 * queued task updates, so a change applies exactly to the work enqueued after it.
 */
struct ggmlx_host_settings {
    int                      n_threads;      /* including the executing thread */
    struct ggml_threadpool * threadpool;     /* the caller's pool, or NULL for the backend's own */
    ggml_abort_callback      abort_callback;
    void                   * abort_data;
    bool                     use_ref;
};

/*
 * The address through which the executing thread reaches the memory at t->data (t is
 * allocated), or NULL when this backend cannot compute on or write t. Called on the caller's
 * thread when work is enqueued, never by the worker.
 */
typedef void * (*ggmlx_host_address_fn)(void * ctx, const struct ggml_tensor * t);

/*
 * Computes a graph (its data pointers already translated) on the executing thread in place of
 * the CPU executor: how the CUDA kernel emulator of the tests (tests/cuda-emu/) reuses the
 * queue, events and copies of a host backend. Returns the status the compute ends with, after
 * recording a message for a failure.
 */
typedef enum ggml_status (*ggmlx_host_compute_fn)(void * ctx, struct ggml_cgraph * graph);

struct ggmlx_host_backend_params {
    const char *          name;        /* the backend's name; must outlive the backend */
    ggml_guid_t           guid;
    ggml_backend_dev_t    device;
    bool                  sync;        /* no queue: everything runs on the caller's thread */
    int                   n_threads;
    uint64_t              chaos_seed;  /* 0: off; else random delays before each task */
    ggmlx_host_address_fn address;     /* NULL: tensors in host memory, used as they are */
    void                * address_ctx;
    ggmlx_host_compute_fn compute;     /* NULL: the CPU executor */
    void                * compute_ctx;
};

struct ggmlx_host_backend;

/* NULL (error recorded) when the worker cannot be started or memory is short */
ggml_backend_t              ggmlx_host_backend_new(const struct ggmlx_host_backend_params * params);

/* the host backend behind backend, NULL for any other kind (CUDA, a test's fake) */
struct ggmlx_host_backend * ggmlx_host_backend_of(ggml_backend_t backend);

/* its queue, NULL in sync mode */
struct ggmlx_queue *        ggmlx_host_backend_queue(const struct ggmlx_host_backend * hb);

/* the settings as the caller last set them */
struct ggmlx_host_settings  ggmlx_host_backend_settings(const struct ggmlx_host_backend * hb);

/* new settings for the work enqueued from now on (checked by the caller) */
void                        ggmlx_host_backend_update(struct ggmlx_host_backend * hb,
                                                      const struct ggmlx_host_settings * s);

/* the settings as the executing thread sees them (a test hook: read after synchronizing) */
struct ggmlx_host_settings  ggmlx_host_backend_run_settings(const struct ggmlx_host_backend * hb);

#endif /* GGMLX_HOST_BACKEND_H */
