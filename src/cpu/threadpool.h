/*
 * threadpool.h -- the CPU thread pool: workers that sleep between jobs, and a barrier that
 * spins briefly and then sleeps (2 vCPUs may be shared by the pool, queue workers and caller).
 */
#ifndef GGMLX_CPU_THREADPOOL_H
#define GGMLX_CPU_THREADPOOL_H

#include "ggml-cpu.h"

#include <pthread.h>
#include <stdatomic.h>

/* One job: the same function run by every thread of the pool, thread 0 being the caller. */
typedef void (*ggmlx_job_fn)(void * job, int ith);

struct ggml_threadpool {
    int             n_threads;       /* including the caller */
    pthread_t     * workers;         /* n_threads - 1 */
    atomic_uint     job_gen;         /* bumped to hand out a job; workers sleep on it */
    atomic_int      n_active;        /* workers still running the current job */
    atomic_uint     done_gen;        /* bumped by the last worker to finish a job */
    atomic_bool     stop;
    atomic_bool     paused;
    ggmlx_job_fn    job_fn;
    void          * job;
    int             n_run;           /* threads taking part in the current job */
    pthread_mutex_t busy;            /* held by the caller running a job on this pool */
    bool            cached;          /* owned by the library's cache, not the user */
};

/* Run fn(job, ith) on threads 0..n-1 (n <= pool size); returns when all are done. */
void ggmlx_threadpool_run(struct ggml_threadpool * tp, int n, ggmlx_job_fn fn, void * job);

/* A pool of n threads that nobody else is using, from the library's cache; release after use. */
struct ggml_threadpool * ggmlx_threadpool_acquire(int n_threads);
void                     ggmlx_threadpool_release(struct ggml_threadpool * tp);

/* ---- barrier ------------------------------------------------------------------------------- */

struct ggmlx_barrier {
    atomic_int   n_arrived;
    atomic_uint  phase;
    atomic_bool * cancel; /* when set, waiting threads leave at once */
};

void ggmlx_barrier_init(struct ggmlx_barrier * b, atomic_bool * cancel);
void ggmlx_barrier_wait(struct ggmlx_barrier * b, int n);

/* Sleep while *addr == val (or until woken); spins first. */
void ggmlx_futex_wait(atomic_uint * addr, unsigned val, int spins);
void ggmlx_futex_wake_all(atomic_uint * addr);

#endif
