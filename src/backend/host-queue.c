/*
 * host-queue.c -- one worker thread draining a FIFO of tasks (the CPU and SIM backends' queue).
 *
 * Completion is counted, not flagged: every push takes a ticket (n_pushed) and the worker bumps
 * n_done after each task, so "everything pushed before me is done" is n_done >= my ticket,
 * whatever is pushed meanwhile. One mutex guards the FIFO, the counters, the hold flag and the
 * status; tasks run outside it.
 *
 * Both sides spin for a few microseconds before sleeping (the worker for the next task, a
 * syncing caller for completion): a condition-variable wake-up costs several microseconds, which
 * would dominate short computes, while the spin is short enough not to starve a thread that
 * shares the vCPU. The counters are atomics so the spins can read them without the mutex.
 */
#include "host-queue.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#    include <immintrin.h>
#    define cpu_relax() _mm_pause()
#else
#    define cpu_relax() ((void) 0)
#endif

/*
 * How long a thread spins before it sleeps: a caller in sync (it has nothing else to do), and
 * an idle worker (shorter: an idle backend should not hold a vCPU another thread needs).
 */
#define GGMLX_QUEUE_SPIN_NS  20000
#define GGMLX_WORKER_SPIN_NS 5000

struct ggmlx_queue {
    pthread_mutex_t     mutex;
    pthread_cond_t      work;      /* worker: a task arrived, the hold was lifted, or stop */
    pthread_cond_t      done;      /* syncers: n_done moved */

    struct ggmlx_task * ring;      /* FIFO: cap slots, head the oldest, count in use */
    size_t              cap;
    size_t              head;
    size_t              count;

    atomic_uint_fast64_t n_pushed;  /* written under the mutex, read by spins without it */
    atomic_uint_fast64_t n_done;
    bool                held;
    bool                stop;
    atomic_bool         waiting;   /* worker blocked in an event wait */

    enum ggml_status    status;    /* sticky: first error of queued work */
    char                error[512];

    uint64_t            chaos;     /* random state of chaos mode (0: off), under the mutex */

    pthread_t           thread;
    char                name[32];
};

/* grows the ring (mutex held); false when out of memory */
static bool ring_grow(struct ggmlx_queue * q) {
    const size_t cap = q->cap ? q->cap * 2 : 64;
    struct ggmlx_task * ring = malloc(cap * sizeof *ring);
    if (ring == NULL) {
        return false;
    }
    for (size_t i = 0; i < q->count; i++) {
        ring[i] = q->ring[(q->head + i) % q->cap];
    }
    free(q->ring);
    q->ring = ring;
    q->cap  = cap;
    q->head = 0;
    return true;
}

static void record_error(struct ggmlx_queue * q, enum ggml_status status, const char * msg) {
    if (q->status == GGML_STATUS_SUCCESS) {
        q->status = status;
        snprintf(q->error, sizeof q->error, "%s", msg && msg[0] ? msg : "a queued task failed");
    }
}

/* the queue whose worker this thread is (no shared state to race on, unlike a stored id) */
static _Thread_local struct ggmlx_queue * tl_queue;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Spins (bounded) until *counter >= target; true when it got there. Yields between short
 * bursts, so on an oversubscribed machine the thread being waited for gets the vCPU.
 */
static bool spin_until(atomic_uint_fast64_t * counter, uint64_t target, int64_t ns) {
    const int64_t end = now_ns() + ns;
    for (;;) {
        for (int i = 0; i < 16; i++) {
            if (atomic_load_explicit(counter, memory_order_acquire) >= target) {
                return true;
            }
            cpu_relax();
        }
        if (now_ns() >= end) {
            return false;
        }
        sched_yield();
    }
}

/* The next chaos delay in microseconds, 0 to 200 (mutex held). */
static unsigned chaos_delay_us(struct ggmlx_queue * q) {
    if (q->chaos == 0) {
        return 0;
    }
    /* xorshift64: never reaches 0 from a nonzero state */
    q->chaos ^= q->chaos << 13;
    q->chaos ^= q->chaos >> 7;
    q->chaos ^= q->chaos << 17;
    return (unsigned) (q->chaos % 201);
}

static void sleep_us(unsigned us) {
    const struct timespec ts = { 0, (long) us * 1000 };
    nanosleep(&ts, NULL);
}

static void * worker_main(void * arg) {
    struct ggmlx_queue * q = arg;
    tl_queue = q;
    pthread_mutex_lock(&q->mutex);
    for (;;) {
        if (q->count == 0 && !q->stop) {
            /* likely more soon (a caller computing step by step): look before sleeping */
            const uint64_t next = atomic_load_explicit(&q->n_pushed, memory_order_relaxed) + 1;
            pthread_mutex_unlock(&q->mutex);
            spin_until(&q->n_pushed, next, GGMLX_WORKER_SPIN_NS);
            pthread_mutex_lock(&q->mutex);
        }
        while (!q->stop && (q->count == 0 || q->held)) {
            pthread_cond_wait(&q->work, &q->mutex);
        }
        if (q->count == 0) {
            break; /* stop asked and nothing left */
        }
        const struct ggmlx_task task = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
        const bool     skip  = q->status != GGML_STATUS_SUCCESS && !task.always_run;
        const unsigned delay = chaos_delay_us(q);
        pthread_mutex_unlock(&q->mutex);

        if (delay > 0) {
            sleep_us(delay);
        }

        enum ggml_status st = GGML_STATUS_SUCCESS;
        if (!skip) {
            ggmlx_clear_last_error();
            st = task.run(task.arg);
        }
        const char * msg = st != GGML_STATUS_SUCCESS ? ggmlx_last_error() : NULL;
        char copy[sizeof q->error];
        snprintf(copy, sizeof copy, "%s", msg ? msg : "");
        if (task.release) {
            task.release(task.arg);
        }

        pthread_mutex_lock(&q->mutex);
        if (st != GGML_STATUS_SUCCESS) {
            record_error(q, st, copy);
        }
        atomic_store_explicit(&q->n_done, atomic_load_explicit(&q->n_done, memory_order_relaxed) + 1,
                              memory_order_release);
        pthread_cond_broadcast(&q->done);
    }
    pthread_mutex_unlock(&q->mutex);
    return NULL;
}

struct ggmlx_queue * ggmlx_queue_new(const char * name) {
    struct ggmlx_queue * q = calloc(1, sizeof *q);
    if (q == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    snprintf(q->name, sizeof q->name, "%s", name ? name : "queue");
    q->status = GGML_STATUS_SUCCESS;
    atomic_init(&q->n_pushed, 0);
    atomic_init(&q->n_done, 0);
    atomic_init(&q->waiting, false);
    if (pthread_mutex_init(&q->mutex, NULL) != 0) {
        goto err_free;
    }
    if (pthread_cond_init(&q->work, NULL) != 0) {
        goto err_mutex;
    }
    if (pthread_cond_init(&q->done, NULL) != 0) {
        goto err_work;
    }
    if (pthread_create(&q->thread, NULL, worker_main, q) != 0) {
        ggmlx_error(__func__, "%s: cannot start the worker thread", q->name);
        goto err_done;
    }
    char tname[16];
    snprintf(tname, sizeof tname, "ggmlx-%.9s", q->name); /* 15 characters at most */
    pthread_setname_np(q->thread, tname);
    return q;

err_done:
    pthread_cond_destroy(&q->done);
err_work:
    pthread_cond_destroy(&q->work);
err_mutex:
    pthread_mutex_destroy(&q->mutex);
err_free:
    free(q);
    return NULL;
}

void ggmlx_queue_set_chaos(struct ggmlx_queue * q, uint64_t seed) {
    if (q == NULL) {
        return;
    }
    /* splitmix64 of the seed: nearby seeds give unrelated sequences, and 0 stays "off" */
    uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    pthread_mutex_lock(&q->mutex);
    q->chaos = seed == 0 ? 0 : (z != 0 ? z : 1);
    pthread_mutex_unlock(&q->mutex);
}

void ggmlx_queue_free(struct ggmlx_queue * q) {
    if (q == NULL) {
        return;
    }
    if (ggmlx_queue_is_worker(q)) {
        ggmlx_error(__func__, "%s: a task cannot free its own queue", q->name);
        return;
    }
    pthread_mutex_lock(&q->mutex);
    q->stop = true;
    q->held = false; /* a held queue would never drain */
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mutex);
    pthread_join(q->thread, NULL);

    pthread_cond_destroy(&q->done);
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mutex);
    free(q->ring);
    free(q);
}

bool ggmlx_queue_push(struct ggmlx_queue * q, struct ggmlx_task task) {
    if (q == NULL || task.run == NULL) {
        ggmlx_error(__func__, "queue or task is NULL");
        goto err_release;
    }
    pthread_mutex_lock(&q->mutex);
    if (q->stop) {
        pthread_mutex_unlock(&q->mutex);
        ggmlx_error(__func__, "%s: the queue is being freed", q->name);
        goto err_release;
    }
    if (q->count == q->cap && !ring_grow(q)) {
        pthread_mutex_unlock(&q->mutex);
        ggmlx_error(__func__, "%s: out of host memory", q->name);
        goto err_release;
    }
    q->ring[(q->head + q->count) % q->cap] = task;
    q->count++;
    atomic_store_explicit(&q->n_pushed, atomic_load_explicit(&q->n_pushed, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mutex);
    return true;

err_release:
    if (task.release) {
        task.release(task.arg);
    }
    return false;
}

void ggmlx_queue_sync(struct ggmlx_queue * q) {
    if (q == NULL) {
        return;
    }
    if (ggmlx_queue_is_worker(q)) {
        ggmlx_error(__func__, "%s: a task cannot wait for its own queue", q->name);
        return;
    }
    /* this thread's own pushes are already counted: no lock needed to take the ticket */
    const uint64_t ticket = atomic_load_explicit(&q->n_pushed, memory_order_acquire);
    if (spin_until(&q->n_done, ticket, GGMLX_QUEUE_SPIN_NS)) {
        return;
    }
    pthread_mutex_lock(&q->mutex);
    while (atomic_load_explicit(&q->n_done, memory_order_relaxed) < ticket) {
        pthread_cond_wait(&q->done, &q->mutex);
    }
    pthread_mutex_unlock(&q->mutex);
}

enum ggml_status ggmlx_queue_status(struct ggmlx_queue * q) {
    if (q == NULL) {
        return GGML_STATUS_SUCCESS;
    }
    pthread_mutex_lock(&q->mutex);
    const enum ggml_status st = q->status;
    pthread_mutex_unlock(&q->mutex);
    return st;
}

void ggmlx_queue_set_error(struct ggmlx_queue * q, enum ggml_status status, const char * msg) {
    if (q == NULL || status == GGML_STATUS_SUCCESS) {
        return;
    }
    pthread_mutex_lock(&q->mutex);
    record_error(q, status, msg);
    pthread_mutex_unlock(&q->mutex);
}

const char * ggmlx_queue_error(struct ggmlx_queue * q) {
    if (q == NULL) {
        return "";
    }
    pthread_mutex_lock(&q->mutex);
    /* stable until clear_status: only the first error is ever written */
    const char * msg = q->status == GGML_STATUS_SUCCESS ? "" : q->error;
    pthread_mutex_unlock(&q->mutex);
    return msg;
}

void ggmlx_queue_clear_status(struct ggmlx_queue * q) {
    if (q == NULL) {
        return;
    }
    pthread_mutex_lock(&q->mutex);
    q->status   = GGML_STATUS_SUCCESS;
    q->error[0] = '\0';
    pthread_mutex_unlock(&q->mutex);
}

void ggmlx_queue_hold(struct ggmlx_queue * q, bool hold) {
    if (q == NULL) {
        return;
    }
    pthread_mutex_lock(&q->mutex);
    q->held = hold;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mutex);
}

size_t ggmlx_queue_pending(struct ggmlx_queue * q) {
    if (q == NULL) {
        return 0;
    }
    pthread_mutex_lock(&q->mutex);
    const size_t n = (size_t) (atomic_load(&q->n_pushed) - atomic_load(&q->n_done));
    pthread_mutex_unlock(&q->mutex);
    return n;
}

bool ggmlx_queue_is_worker(struct ggmlx_queue * q) {
    return q != NULL && tl_queue == q;
}

bool ggmlx_queue_waiting(struct ggmlx_queue * q) {
    return q != NULL && atomic_load(&q->waiting);
}

void ggmlx_queue_mark_waiting(struct ggmlx_queue * q, bool waiting) {
    if (q != NULL) {
        atomic_store(&q->waiting, waiting);
    }
}
