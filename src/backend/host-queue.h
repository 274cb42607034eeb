/*
 * host-queue.h -- the in-order queue and counter events shared by the CPU and SIM backends.
 *
 * A queue is one worker thread draining a FIFO of tasks. Tasks run in enqueue order. A task
 * that fails makes the queue's status sticky (first error kept); later compute and copy tasks
 * are then skipped, but event records and waits still run, so no other queue waits forever on
 * an event this queue would never set.
 *
 * Counter events (docs/async.md rule 6): an event is a 64-bit counter. Recording enqueues
 * "set to N+1" where N counts the records made so far; waiting enqueues "wait until >= the
 * target at enqueue time"; an event never recorded counts as done. Any host queue may wait on
 * any host event, whatever device made it (CPU queue on a SIM event and the reverse).
 */
#ifndef GGMLX_HOST_QUEUE_H
#define GGMLX_HOST_QUEUE_H

#include "ggml-backend-impl.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct ggmlx_queue;

/* A task: run(arg) on the worker; release(arg) afterwards (also when skipped or on free). */
struct ggmlx_task {
    enum ggml_status (*run)(void * arg);
    void             (*release)(void * arg); /* opt */
    void             * arg;
    bool               always_run;           /* run even after an error (event records/waits) */
};

/* NULL when the thread cannot be started (error recorded). name: for the thread and messages. */
struct ggmlx_queue * ggmlx_queue_new(const char * name);
/*
 * Chaos mode for soak tests: with a seed other than 0 the worker sleeps a random 0-200 us
 * before each task (seeded per queue, so a run can be replayed); 0 turns it off. Set it before
 * pushing work.
 */
void                 ggmlx_queue_set_chaos(struct ggmlx_queue * q, uint64_t seed);
/* Runs what is queued, then joins the worker. NULL is allowed. */
void                 ggmlx_queue_free(struct ggmlx_queue * q);

/* false when out of memory (error recorded; nothing enqueued, release(arg) already called) */
bool             ggmlx_queue_push(struct ggmlx_queue * q, struct ggmlx_task task);
/* Blocks until everything pushed before the call has run (or been skipped). */
void             ggmlx_queue_sync(struct ggmlx_queue * q);
enum ggml_status ggmlx_queue_status(struct ggmlx_queue * q);
/* Also records the first error's message for ggmlx_queue_error(). */
void             ggmlx_queue_set_error(struct ggmlx_queue * q, enum ggml_status status, const char * msg);
const char *     ggmlx_queue_error(struct ggmlx_queue * q); /* "" when none */
void             ggmlx_queue_clear_status(struct ggmlx_queue * q);
void             ggmlx_queue_hold(struct ggmlx_queue * q, bool hold);
size_t           ggmlx_queue_pending(struct ggmlx_queue * q);
/* true on the queue's own worker thread (a task must never sync its own queue) */
bool             ggmlx_queue_is_worker(struct ggmlx_queue * q);
/*
 * true while the worker is blocked in an event wait. A test hook: with it a test tells a queue
 * that is stuck behind a wait from one that has run everything, without sleeping.
 */
bool             ggmlx_queue_waiting(struct ggmlx_queue * q);
/* for the event code: the worker of q is entering (true) or leaving (false) an event wait */
void             ggmlx_queue_mark_waiting(struct ggmlx_queue * q, bool waiting);

/* ---- counter events ------------------------------------------------------------------------ */

struct ggmlx_host_event {
    uint32_t             magic;      /* GGMLX_HOST_EVENT_MAGIC: tells host events from others */
    atomic_uint_fast64_t value;      /* completed records */
    atomic_uint_fast64_t n_recorded; /* records enqueued (the target of the next wait) */
    atomic_uint          wake;       /* futex word bumped on every completion */
};

#define GGMLX_HOST_EVENT_MAGIC 0x67787665u /* "gxve" */

/* event->context when the event is a host counter event, else NULL */
struct ggmlx_host_event * ggmlx_host_event_of(ggml_backend_event_t event);

ggml_backend_event_t ggmlx_host_event_new(ggml_backend_dev_t dev);
void                 ggmlx_host_event_free(ggml_backend_event_t event);
/*
 * enqueue "set to N+1" on q. q == NULL: a backend without a queue (CPU "sync" mode), whose
 * work is all done when it returns: the record completes at once.
 */
bool                 ggmlx_host_event_record(struct ggmlx_queue * q, ggml_backend_event_t event);
/*
 * enqueue "wait until >= current target" on q (the worker blocks, the host does not).
 * q == NULL: the caller blocks, as ggmlx_host_event_synchronize. Built with
 * GGMLX_DROP_EVENT_WAITS, does nothing at all (the async tests must then fail).
 */
bool                 ggmlx_host_event_wait(struct ggmlx_queue * q, ggml_backend_event_t event);
/* host blocks until every record enqueued before the call has completed */
void                 ggmlx_host_event_synchronize(ggml_backend_event_t event);
/*
 * Keep ev's counter alive while something outside the host queues still reads it (a CUDA stream
 * waiting on it with cuStreamWaitValue64), even if the event is freed meanwhile; release lets it
 * go. Release never calls into anything but free, so it may run on a driver callback thread.
 */
void                 ggmlx_host_event_retain(struct ggmlx_host_event * ev);
void                 ggmlx_host_event_release(struct ggmlx_host_event * ev);
/*
 * For a backend that mirrors its own event's records in a host event (host_twin in
 * ggml-backend-impl.h): begin_record, when a record is enqueued, returns its target (waits
 * enqueued from now on wait for it); complete(target), once the record has happened, from any
 * thread (a driver callback included: it touches only the counter and its futex).
 */
uint64_t             ggmlx_host_event_begin_record(struct ggmlx_host_event * ev);
void                 ggmlx_host_event_complete(struct ggmlx_host_event * ev, uint64_t target);

#endif /* GGMLX_HOST_QUEUE_H */
