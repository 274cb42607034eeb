/*
 * threadpool.c -- worker threads, futex waits, barrier, and the cache of pools that lets
 * ggml_graph_compute reuse threads across calls.
 */
#include "threadpool.h"
#include "ggml-impl.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#    include <immintrin.h>
#    define cpu_relax() _mm_pause()
#else
#    define cpu_relax() ((void) 0)
#endif

/* ---- futex --------------------------------------------------------------------------------- */

void ggmlx_futex_wait(atomic_uint * addr, unsigned val, int spins) {
    for (int i = 0; i < spins; i++) {
        if (atomic_load_explicit(addr, memory_order_acquire) != val) {
            return;
        }
        cpu_relax();
    }
    while (atomic_load_explicit(addr, memory_order_acquire) == val) {
        syscall(SYS_futex, (unsigned *) addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
    }
}

void ggmlx_futex_wake_all(atomic_uint * addr) {
    syscall(SYS_futex, (unsigned *) addr, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---- barrier ------------------------------------------------------------------------------- */

/*
 * Spin about this many pause instructions (tens of microseconds) before sleeping: long enough
 * to cover a short node on the other core, short enough not to starve a thread that shares
 * this vCPU. PAUSE costs from ~10 to ~150 cycles depending on the core, hence a modest count.
 */
#define GGMLX_SPINS 2000

void ggmlx_barrier_init(struct ggmlx_barrier * b, atomic_bool * cancel) {
    atomic_store(&b->n_arrived, 0);
    atomic_store(&b->phase, 0);
    b->cancel = cancel;
}

void ggmlx_barrier_wait(struct ggmlx_barrier * b, int n) {
    if (n <= 1) {
        return;
    }
    const unsigned phase = atomic_load_explicit(&b->phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&b->n_arrived, 1, memory_order_acq_rel) == n - 1) {
        atomic_store_explicit(&b->n_arrived, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->phase, 1, memory_order_acq_rel);
        ggmlx_futex_wake_all(&b->phase);
        return;
    }
    for (int i = 0; i < GGMLX_SPINS; i++) {
        if (atomic_load_explicit(&b->phase, memory_order_acquire) != phase) {
            return;
        }
        if (b->cancel && atomic_load_explicit(b->cancel, memory_order_acquire)) {
            return;
        }
        cpu_relax();
    }
    while (atomic_load_explicit(&b->phase, memory_order_acquire) == phase) {
        if (b->cancel && atomic_load_explicit(b->cancel, memory_order_acquire)) {
            return;
        }
        /* a bounded sleep, so a cancel (which does not bump the phase) is seen promptly */
        struct timespec ts = { 0, 200000 };
        syscall(SYS_futex, (unsigned *) &b->phase, FUTEX_WAIT_PRIVATE, phase, &ts, NULL, 0);
    }
}

/* ---- workers ------------------------------------------------------------------------------- */

struct worker_arg {
    struct ggml_threadpool * tp;
    int                      ith;
};

static void * worker_main(void * p) {
    struct worker_arg arg = *(struct worker_arg *) p;
    free(p);
    struct ggml_threadpool * tp = arg.tp;
    unsigned seen = 0;
    for (;;) {
        ggmlx_futex_wait(&tp->job_gen, seen, GGMLX_SPINS);
        if (atomic_load_explicit(&tp->stop, memory_order_acquire)) {
            return NULL;
        }
        seen = atomic_load_explicit(&tp->job_gen, memory_order_acquire);
        if (tp->job_fn != NULL && arg.ith < tp->n_run) {
            tp->job_fn(tp->job, arg.ith);
        }
        if (atomic_fetch_sub_explicit(&tp->n_active, 1, memory_order_acq_rel) == 1) {
            atomic_fetch_add_explicit(&tp->done_gen, 1, memory_order_acq_rel);
            ggmlx_futex_wake_all(&tp->done_gen);
        }
    }
}

struct ggml_threadpool * ggml_threadpool_new(struct ggml_threadpool_params * params) {
    if (params == NULL) {
        ggmlx_error(__func__, "params is NULL (see ggml_threadpool_params_default)");
        return NULL;
    }
    if (params->n_threads < 1 || params->n_threads > GGML_MAX_N_THREADS) {
        ggmlx_error(__func__, "n_threads = %d is out of range (1..%d)", params->n_threads, GGML_MAX_N_THREADS);
        return NULL;
    }
    struct ggml_threadpool * tp = calloc(1, sizeof *tp);
    if (tp == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    tp->n_threads = params->n_threads;
    atomic_store(&tp->paused, params->paused);
    pthread_mutex_init(&tp->busy, NULL);
    tp->workers = calloc((size_t) tp->n_threads, sizeof(pthread_t));
    if (tp->workers == NULL) {
        goto err_free_tp;
    }
    int started = 0;
    for (; started < tp->n_threads - 1; started++) {
        struct worker_arg * arg = malloc(sizeof *arg);
        if (arg == NULL) {
            goto err_stop_workers;
        }
        arg->tp  = tp;
        arg->ith = started + 1;
        if (pthread_create(&tp->workers[started], NULL, worker_main, arg) != 0) {
            free(arg);
            goto err_stop_workers;
        }
    }
    ggmlx_ok();
    return tp;

err_stop_workers:
    atomic_store(&tp->stop, true);
    atomic_fetch_add(&tp->job_gen, 1);
    ggmlx_futex_wake_all(&tp->job_gen);
    for (int i = 0; i < started; i++) {
        pthread_join(tp->workers[i], NULL);
    }
    free(tp->workers);
err_free_tp:
    pthread_mutex_destroy(&tp->busy);
    free(tp);
    ggmlx_error(__func__, "cannot start %d worker threads", params->n_threads - 1);
    return NULL;
}

void ggml_threadpool_free(struct ggml_threadpool * tp) {
    if (tp == NULL) {
        return;
    }
    atomic_store(&tp->stop, true);
    atomic_fetch_add(&tp->job_gen, 1);
    ggmlx_futex_wake_all(&tp->job_gen);
    for (int i = 0; i < tp->n_threads - 1; i++) {
        pthread_join(tp->workers[i], NULL);
    }
    free(tp->workers);
    pthread_mutex_destroy(&tp->busy);
    free(tp);
}

int ggml_threadpool_get_n_threads(struct ggml_threadpool * tp) {
    return tp ? tp->n_threads : 0;
}

/* Workers always sleep between jobs, so pausing only records the wish; a job resumes. */
void ggml_threadpool_pause(struct ggml_threadpool * tp) {
    if (tp == NULL) {
        ggmlx_error(__func__, "threadpool is NULL");
        return;
    }
    atomic_store(&tp->paused, true);
}

void ggml_threadpool_resume(struct ggml_threadpool * tp) {
    if (tp == NULL) {
        ggmlx_error(__func__, "threadpool is NULL");
        return;
    }
    atomic_store(&tp->paused, false);
}

void ggmlx_threadpool_run(struct ggml_threadpool * tp, int n, ggmlx_job_fn fn, void * job) {
    if (n <= 1 || tp->n_threads <= 1) {
        fn(job, 0);
        return;
    }
    atomic_store(&tp->paused, false);
    tp->job_fn = fn;
    tp->job    = job;
    tp->n_run  = n < tp->n_threads ? n : tp->n_threads;
    atomic_store_explicit(&tp->n_active, tp->n_threads - 1, memory_order_release);
    atomic_fetch_add_explicit(&tp->job_gen, 1, memory_order_acq_rel);
    ggmlx_futex_wake_all(&tp->job_gen);

    fn(job, 0);

    /*
     * The last worker to finish bumps done_gen and wakes us if we went to sleep. A bump can be
     * late (that worker lowered n_active for the previous job, we saw 0 and moved on), so only
     * n_active says the job is done: a wake-up is just a reason to look again.
     */
    for (;;) {
        const unsigned done = atomic_load_explicit(&tp->done_gen, memory_order_acquire);
        if (atomic_load_explicit(&tp->n_active, memory_order_acquire) <= 0) {
            break;
        }
        ggmlx_futex_wait(&tp->done_gen, done, GGMLX_SPINS);
    }
    tp->job_fn = NULL;
    tp->job    = NULL;
}

/* ---- cache --------------------------------------------------------------------------------- */

#define GGMLX_POOL_CACHE 4

static pthread_mutex_t          g_cache_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ggml_threadpool * g_cache[GGMLX_POOL_CACHE];

static void free_cached_pools(void) {
    for (int i = 0; i < GGMLX_POOL_CACHE; i++) {
        ggml_threadpool_free(g_cache[i]);
        g_cache[i] = NULL;
    }
}

struct ggml_threadpool * ggmlx_threadpool_acquire(int n_threads) {
    static bool registered = false;
    pthread_mutex_lock(&g_cache_mutex);
    if (!registered) {
        atexit(free_cached_pools);
        registered = true;
    }
    for (int i = 0; i < GGMLX_POOL_CACHE; i++) {
        if (g_cache[i] && g_cache[i]->n_threads == n_threads && pthread_mutex_trylock(&g_cache[i]->busy) == 0) {
            struct ggml_threadpool * tp = g_cache[i];
            pthread_mutex_unlock(&g_cache_mutex);
            return tp;
        }
    }
    struct ggml_threadpool_params params = ggml_threadpool_params_default(n_threads);
    struct ggml_threadpool * tp = ggml_threadpool_new(&params);
    if (tp != NULL) {
        pthread_mutex_lock(&tp->busy);
        for (int i = 0; i < GGMLX_POOL_CACHE; i++) {
            if (g_cache[i] == NULL) {
                g_cache[i] = tp;
                tp->cached = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&g_cache_mutex);
    return tp;
}

void ggmlx_threadpool_release(struct ggml_threadpool * tp) {
    if (tp == NULL) {
        return;
    }
    pthread_mutex_unlock(&tp->busy);
    if (!tp->cached) {
        ggml_threadpool_free(tp); /* the cache was full: this one was made for a single use */
    }
}
