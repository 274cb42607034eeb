/*
 * host-event.c -- counter events of the host queues (docs/async.md rule 6).
 *
 * An event's target is fixed when a record or a wait is enqueued, never when it runs, so a
 * wait means "the records enqueued before me", however the queues interleave later. The
 * counter block is reference counted: queued records and waits keep it alive, so freeing an
 * event while work that uses it is still queued is safe.
 */
#include "host-queue.h"

#include <linux/futex.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#    include <immintrin.h>
#    define cpu_relax() _mm_pause()
#else
#    define cpu_relax() ((void) 0)
#endif

/*
 * A short spin before sleeping (a hop between two queues is often a few microseconds), with
 * yields between bursts so that on an oversubscribed machine the recording thread can run.
 */
#define GGMLX_EVENT_SPIN_NS 20000

struct host_event_block {
    struct ggmlx_host_event   ev;     /* handle.context points here */
    atomic_int                refs;   /* the user's handle + one per queued record/wait */
    struct ggml_backend_event handle;
};

struct event_op {
    struct host_event_block * block;
    uint64_t                  target;
    struct ggmlx_queue      * queue;
};

static struct host_event_block * block_of(struct ggmlx_host_event * ev) {
    return (struct host_event_block *) ((char *) ev - offsetof(struct host_event_block, ev));
}

static void unref(struct host_event_block * b) {
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) {
        b->ev.magic = 0;
        free(b);
    }
}

struct ggmlx_host_event * ggmlx_host_event_of(ggml_backend_event_t event) {
    if (event == NULL || event->context == NULL) {
        return NULL;
    }
    struct ggmlx_host_event * ev = event->context;
    return ev->magic == GGMLX_HOST_EVENT_MAGIC ? ev : NULL;
}

ggml_backend_event_t ggmlx_host_event_new(ggml_backend_dev_t dev) {
    struct host_event_block * b = calloc(1, sizeof *b);
    if (b == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    b->ev.magic = GGMLX_HOST_EVENT_MAGIC;
    atomic_init(&b->ev.value, 0);
    atomic_init(&b->ev.n_recorded, 0);
    atomic_init(&b->ev.wake, 0);
    atomic_init(&b->refs, 1);
    b->handle.device  = dev;
    b->handle.context = &b->ev;
    return &b->handle;
}

void ggmlx_host_event_free(ggml_backend_event_t event) {
    struct ggmlx_host_event * ev = ggmlx_host_event_of(event);
    if (ev == NULL) {
        if (event != NULL) {
            ggmlx_error(__func__, "not a host event");
        }
        return;
    }
    unref(block_of(ev));
}

/* ---- completing and waiting ---------------------------------------------------------------- */

static void complete(struct ggmlx_host_event * ev, uint64_t target) {
    /* records of one event on two queues may finish out of order: the counter never goes back */
    uint_fast64_t cur = atomic_load_explicit(&ev->value, memory_order_relaxed);
    while (cur < target &&
           !atomic_compare_exchange_weak_explicit(&ev->value, &cur, target, memory_order_release, memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&ev->wake, 1, memory_order_release);
    syscall(SYS_futex, (unsigned *) &ev->wake, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static bool reached(struct ggmlx_host_event * ev, uint64_t target) {
    return atomic_load_explicit(&ev->value, memory_order_acquire) >= target;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* blocks the calling thread until ev reaches target; q (may be NULL) is marked as waiting */
static void block_until(struct ggmlx_host_event * ev, uint64_t target, struct ggmlx_queue * q) {
    const int64_t end = now_ns() + GGMLX_EVENT_SPIN_NS;
    for (;;) {
        for (int i = 0; i < 16; i++) {
            if (reached(ev, target)) {
                return;
            }
            cpu_relax();
        }
        if (now_ns() >= end) {
            break;
        }
        sched_yield();
    }
    for (;;) {
        /* read the wake word before the counter: a completion in between changes the word */
        const unsigned w = atomic_load_explicit(&ev->wake, memory_order_acquire);
        if (reached(ev, target)) {
            break;
        }
        ggmlx_queue_mark_waiting(q, true);
        syscall(SYS_futex, (unsigned *) &ev->wake, FUTEX_WAIT_PRIVATE, w, NULL, NULL, 0);
    }
    ggmlx_queue_mark_waiting(q, false);
}

static enum ggml_status run_record(void * arg) {
    struct event_op * op = arg;
    complete(&op->block->ev, op->target);
    return GGML_STATUS_SUCCESS;
}

#ifndef GGMLX_DROP_EVENT_WAITS
static enum ggml_status run_wait(void * arg) {
    struct event_op * op = arg;
    block_until(&op->block->ev, op->target, op->queue);
    return GGML_STATUS_SUCCESS;
}
#endif

static void release_op(void * arg) {
    struct event_op * op = arg;
    unref(op->block);
    free(op);
}

/* push run(op) on q; the op holds a reference to the counter block */
static bool push_op(struct ggmlx_queue * q, struct ggmlx_host_event * ev, uint64_t target,
                    enum ggml_status (*run)(void *)) {
    struct event_op * op = malloc(sizeof *op);
    if (op == NULL) {
        ggmlx_error("ggml_backend_event", "out of host memory");
        return false;
    }
    op->block  = block_of(ev);
    op->target = target;
    op->queue  = q;
    atomic_fetch_add_explicit(&op->block->refs, 1, memory_order_relaxed);
    const struct ggmlx_task task = { run, release_op, op, true };
    return ggmlx_queue_push(q, task); /* on failure release_op already ran */
}

bool ggmlx_host_event_record(struct ggmlx_queue * q, ggml_backend_event_t event) {
    struct ggmlx_host_event * ev = ggmlx_host_event_of(event);
    if (ev == NULL) {
        ggmlx_error(__func__, "not a host event");
        return false;
    }
    const uint64_t target = ggmlx_host_event_begin_record(ev);
    if (q == NULL) {
        complete(ev, target);
        return true;
    }
    if (!push_op(q, ev, target, run_record)) {
        /* the target is taken and waits may already count on it: keep them correct, if slower */
        ggmlx_queue_sync(q);
        complete(ev, target);
        return false;
    }
    return true;
}

bool ggmlx_host_event_wait(struct ggmlx_queue * q, ggml_backend_event_t event) {
#ifdef GGMLX_DROP_EVENT_WAITS
    /* the testing switch: ordering deliberately broken, so the async suite must fail */
    (void) q;
    (void) event;
    return true;
#else
    struct ggmlx_host_event * ev = ggmlx_host_event_of(event);
    if (ev == NULL) {
        ggmlx_error(__func__, "not a host event");
        return false;
    }
    const uint64_t target = (uint64_t) atomic_load(&ev->n_recorded);
    if (reached(ev, target)) {
        return true; /* never recorded, or every record already done: nothing to wait for */
    }
    if (q == NULL) {
        block_until(ev, target, NULL);
        return true;
    }
    if (!push_op(q, ev, target, run_wait)) {
        /* stronger ordering rather than none: everything queued so far, then the event */
        ggmlx_queue_sync(q);
        block_until(ev, target, NULL);
        return false;
    }
    return true;
#endif
}

void ggmlx_host_event_synchronize(ggml_backend_event_t event) {
    struct ggmlx_host_event * ev = ggmlx_host_event_of(event);
    if (ev == NULL) {
        ggmlx_error(__func__, "not a host event");
        return;
    }
    block_until(ev, (uint64_t) atomic_load(&ev->n_recorded), NULL);
}

uint64_t ggmlx_host_event_begin_record(struct ggmlx_host_event * ev) {
    return (uint64_t) atomic_fetch_add_explicit(&ev->n_recorded, 1, memory_order_acq_rel) + 1;
}

void ggmlx_host_event_complete(struct ggmlx_host_event * ev, uint64_t target) {
    complete(ev, target);
}

void ggmlx_host_event_retain(struct ggmlx_host_event * ev) {
    atomic_fetch_add_explicit(&block_of(ev)->refs, 1, memory_order_relaxed);
}

void ggmlx_host_event_release(struct ggmlx_host_event * ev) {
    unref(block_of(ev));
}
