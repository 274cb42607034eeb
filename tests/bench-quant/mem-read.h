/*
 * mem-read.h -- the streaming-read reference of the matrix-vector benchmarks: how fast this
 * machine reads a buffer far larger than its last-level cache, the ceiling for a product that
 * reads each weight byte once. Shared by bench-cpu and bench-quant-client (so it uses nothing
 * beyond C11, POSIX threads and GCC built-ins; the client is compiled on its own with plain -O2).
 *
 * The fastest read found on the Zen 5 VM: the widest vector loads the CPU has (picked at run time
 * with __builtin_cpu_supports, since -O2 alone gives SSE2), four streams per thread (a GEMV walks
 * several rows at once) each summed into its own accumulator, no software prefetch (the hardware
 * streamer does as well alone), the pages written before any timing, and the worker threads
 * started once, so the timed span is reads only.
 */
#ifndef GGMLX_BENCH_MEM_READ_H
#define GGMLX_BENCH_MEM_READ_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MEM_READ_STREAMS = 4, MEM_READ_MAX_THREADS = 16, MEM_READ_MAX_RUNS = 64 };

struct mem_read_stats {
    double      best_gbps, median_gbps;
    const char * isa; /* the loads used: "avx512", "avx2", "vec16" or "scalar" */
};

typedef uint64_t (*mem_read_fn)(const unsigned char * p, size_t n);

/*
 * One kernel per vector width: MEM_READ_STREAMS streams of n / MEM_READ_STREAMS bytes (the
 * part's quarters), two vectors from each per step. n is a multiple of
 * MEM_READ_STREAMS * 2 * the vector size and p is aligned to it (the caller sees to both).
 */
#if defined(__GNUC__)
#    define MEM_READ_KERNEL(NAME, ATTR, VT)                                                     \
        ATTR static uint64_t NAME(const unsigned char * p, size_t n) {                          \
            const size_t len = n / MEM_READ_STREAMS;                                            \
            VT           a[MEM_READ_STREAMS];                                                   \
            for (int s = 0; s < MEM_READ_STREAMS; s++) {                                        \
                a[s] = (VT){ 0 };                                                               \
            }                                                                                   \
            for (size_t o = 0; o < len; o += 2 * sizeof(VT)) {                                  \
                _Pragma("GCC unroll 4") for (int s = 0; s < MEM_READ_STREAMS; s++) {            \
                    const VT * q = (const VT *) (const void *) (p + (size_t) s * len + o);      \
                    a[s] += q[0] + q[1];                                                        \
                }                                                                               \
            }                                                                                   \
            VT       t = a[0] + a[1] + a[2] + a[3];                                             \
            uint64_t r = 0;                                                                     \
            for (size_t i = 0; i < sizeof(VT) / sizeof(uint64_t); i++) {                        \
                r += t[i];                                                                      \
            }                                                                                   \
            return r;                                                                           \
        }

typedef unsigned long long mem_read_v16 __attribute__((vector_size(16)));
/* no target: SSE2 on x86-64, NEON on AArch64, scalar code elsewhere */
MEM_READ_KERNEL(mem_read_vec16, , mem_read_v16)
#    if defined(__x86_64__)
typedef unsigned long long mem_read_v32 __attribute__((vector_size(32)));
typedef unsigned long long mem_read_v64 __attribute__((vector_size(64)));
MEM_READ_KERNEL(mem_read_avx2, __attribute__((target("avx2"))), mem_read_v32)
MEM_READ_KERNEL(mem_read_avx512, __attribute__((target("avx512f"))), mem_read_v64)
#    endif
#    undef MEM_READ_KERNEL
#else
static uint64_t mem_read_scalar(const unsigned char * p, size_t n) {
    const uint64_t * w = (const uint64_t *) (const void *) p;
    const size_t     q = n / sizeof(uint64_t) / MEM_READ_STREAMS;
    uint64_t         s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < q; i++) {
        s0 += w[i];
        s1 += w[q + i];
        s2 += w[2 * q + i];
        s3 += w[3 * q + i];
    }
    return s0 + s1 + s2 + s3;
}
#endif

static mem_read_fn mem_read_pick(const char ** isa) {
#if defined(__GNUC__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *isa = "avx512";
        return mem_read_avx512;
    }
    if (__builtin_cpu_supports("avx2")) {
        *isa = "avx2";
        return mem_read_avx2;
    }
#endif
#if defined(__GNUC__)
    *isa = "vec16";
    return mem_read_vec16;
#else
    *isa = "scalar";
    return mem_read_scalar;
#endif
}

static double mem_read_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

struct mem_read_worker {
    mem_read_fn         fn;
    const unsigned char * p;
    size_t              n;
    int                 runs;
    pthread_barrier_t * bar;
    pthread_mutex_t *   gate;
    const int *         abort;
    double              t0[MEM_READ_MAX_RUNS + 1], t1[MEM_READ_MAX_RUNS + 1];
    uint64_t            sum;
};

/*
 * Every run starts at a barrier; each thread notes when its own read began and ended, and a run
 * lasts from the first start to the last end: waking the sleeping threads is not counted (a spin
 * barrier would avoid the wake-up, but on a shared machine a spinning thread can hold the core its
 * partner needs).
 */
static void * mem_read_thread(void * arg) {
    struct mem_read_worker * w = (struct mem_read_worker *) arg;
    /* the gate opens once every thread exists, or with *abort set if one could not be made */
    pthread_mutex_lock(w->gate);
    pthread_mutex_unlock(w->gate);
    if (*w->abort) {
        return NULL;
    }
    for (int r = 0; r <= w->runs; r++) {
        pthread_barrier_wait(w->bar);
        w->t0[r] = mem_read_now();
        w->sum += w->fn(w->p, w->n);
        w->t1[r] = mem_read_now();
    }
    return NULL;
}

static int mem_read_cmp(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/*
 * Reads `bytes` (rounded down to whole steps), split evenly between `threads`, `runs` timed times
 * after one untimed pass; 0 and *out filled, or 1 (no memory, no threads, bad arguments).
 */
static int mem_read_measure(size_t bytes, int threads, int runs, struct mem_read_stats * out) {
    const size_t unit = (size_t) MEM_READ_STREAMS * 2 * 64 * (size_t) threads;
    struct mem_read_worker * w = NULL;
    pthread_t                th[MEM_READ_MAX_THREADS];
    pthread_barrier_t        bar;
    pthread_mutex_t          gate = PTHREAD_MUTEX_INITIALIZER;
    int                      abort_run = 0;
    unsigned char *          buf = NULL;
    double                   t[MEM_READ_MAX_RUNS];
    uint64_t                 check = 0;
    int                      started = 1, rc = 1;

    if (threads < 1 || threads > MEM_READ_MAX_THREADS || runs < 1 || bytes < unit) {
        return 1;
    }
    runs  = runs > MEM_READ_MAX_RUNS ? MEM_READ_MAX_RUNS : runs;
    bytes = bytes / unit * unit;
    /* page-aligned, and every page written now: the first timed pass sees no page faults */
    if (posix_memalign((void **) &buf, 4096, bytes) != 0) {
        return 1;
    }
    memset(buf, 1, bytes);
    w = (struct mem_read_worker *) calloc((size_t) threads, sizeof *w);
    if (w == NULL) {
        goto err_buf;
    }
    if (pthread_barrier_init(&bar, NULL, (unsigned) threads) != 0) {
        goto err_w;
    }
    const mem_read_fn fn = mem_read_pick(&out->isa);
    for (int i = 0; i < threads; i++) {
        w[i].fn   = fn;
        w[i].p    = buf + bytes / (size_t) threads * (size_t) i;
        w[i].n    = bytes / (size_t) threads;
        w[i].runs = runs;
        w[i].bar  = &bar;
        w[i].gate = &gate;
        w[i].abort = &abort_run;
    }
    pthread_mutex_lock(&gate);
    for (; started < threads; started++) {
        if (pthread_create(&th[started], NULL, mem_read_thread, &w[started]) != 0) {
            break;
        }
    }
    abort_run = started < threads;
    pthread_mutex_unlock(&gate);
    if (abort_run) {
        for (int i = 1; i < started; i++) {
            pthread_join(th[i], NULL);
        }
        goto err_bar;
    }
    mem_read_thread(&w[0]);
    for (int i = 1; i < threads; i++) {
        pthread_join(th[i], NULL);
    }
    for (int r = 1; r <= runs; r++) {
        double a = w[0].t0[r], b = w[0].t1[r];
        for (int i = 1; i < threads; i++) {
            a = w[i].t0[r] < a ? w[i].t0[r] : a;
            b = w[i].t1[r] > b ? w[i].t1[r] : b;
        }
        t[r - 1] = b - a;
    }
    for (int i = 0; i < threads; i++) {
        check += w[i].sum;
    }
    qsort(t, (size_t) runs, sizeof t[0], mem_read_cmp);
    out->best_gbps   = (double) bytes / t[0] * 1e-9;
    out->median_gbps = (double) bytes / (runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2])) * 1e-9;
    /* the sums are used, so no compiler can drop the reads */
    rc = check == 0;
err_bar:
    pthread_barrier_destroy(&bar);
err_w:
    free(w);
err_buf:
    free(buf);
    return rc;
}

#endif /* GGMLX_BENCH_MEM_READ_H */
