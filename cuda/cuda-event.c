/*
 * cuda-event.c -- counter events of CUDA devices (docs/async.md rule 6), and a CUDA stream
 * waiting on a host queue's counter event.
 *
 * A CUDA event is a cudaEvent_t: a record enqueues cudaEventRecord, a wait cudaStreamWaitEvent,
 * which waits for the last record enqueued before it -- exactly the counter semantics, so the
 * record count kept here only tells a never-recorded event (done) from others.
 *
 * A stream waiting on a host counter event (CPU, SIM): the counter lives in host memory; the
 * page holding it is registered with the GPU (mapped, portable) and the stream is made to wait
 * with cuStreamWaitValue64(counter >= target). The driver function is fetched at run time
 * (the library never links libcuda). The host event is kept alive until the stream has passed
 * the wait. When any of this is impossible, the host waits instead, with a warning: stronger
 * ordering than asked for, never weaker.
 *
 * The reverse (a host queue waiting on a CUDA event) is the host queue's business: it blocks its
 * worker on ggml_backend_event_synchronize, which ends in cudaEventSynchronize here.
 */
#include "backend/host-queue.h"
#include "cuda-impl.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* first word of a CUDA event's context: anything but GGMLX_HOST_EVENT_MAGIC */
#define CUDA_EVENT_TAG 0x67786365u /* "gxce" */

struct cuda_event {
    uint32_t                   tag; /* must stay the first member (see host-queue.h) */
    struct ggmlx_cuda_device * d;
    cudaEvent_t                ev;
    atomic_uint_fast64_t       n_recorded;
    struct ggml_backend_event  handle;
};

static struct cuda_event * cuda_event_of(ggml_backend_event_t event) {
    if (event == NULL || event->context == NULL || ggmlx_cuda_device_of(event->device) == NULL) {
        return NULL;
    }
    struct cuda_event * e = event->context;
    return e->tag == CUDA_EVENT_TAG ? e : NULL;
}

ggml_backend_event_t ggmlx_cuda_event_new(struct ggmlx_cuda_device * d) {
    static const char * func = "ggml_backend_event_new";
    if (!ggmlx_cuda_set_device(d, func)) {
        return NULL;
    }
    struct cuda_event * e = calloc(1, sizeof *e);
    if (e == NULL) {
        ggmlx_error(func, "out of host memory");
        return NULL;
    }
    /* no timing: a timing event costs more to record and we never read times */
    if (!ggmlx_cuda_check(d, cudaEventCreateWithFlags(&e->ev, cudaEventDisableTiming), func, "cudaEventCreate")) {
        free(e);
        return NULL;
    }
    /* the twin host queues wait on (ggml-backend-impl.h): its records complete in stream order */
    ggml_backend_event_t twin = ggmlx_host_event_new(&d->dev);
    if (twin == NULL) {
        ggmlx_cuda_check(d, cudaEventDestroy(e->ev), func, "cudaEventDestroy");
        free(e);
        return NULL;
    }
    e->tag = CUDA_EVENT_TAG;
    e->d   = d;
    atomic_init(&e->n_recorded, 0);
    e->handle.device    = &d->dev;
    e->handle.context   = e;
    e->handle.host_twin = twin;
    return &e->handle;
}

void ggmlx_cuda_event_free(ggml_backend_event_t event) {
    struct cuda_event * e = cuda_event_of(event);
    if (e == NULL) {
        ggmlx_error("ggml_backend_event_free", "not a CUDA event");
        return;
    }
    /* the runtime releases an event still pending in a stream once it completes */
    ggmlx_cuda_check(e->d, cudaEventDestroy(e->ev), "ggml_backend_event_free", "cudaEventDestroy");
    ggmlx_host_event_free(e->handle.host_twin); /* a record still queued holds its own reference */
    e->tag = 0;
    free(e);
}

void ggmlx_cuda_event_synchronize(ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_synchronize";
    struct cuda_event * e = cuda_event_of(event);
    if (e == NULL) {
        ggmlx_error(func, "not a CUDA event");
        return;
    }
    if (ggmlx_cuda_alive(e->d, func)) {
        ggmlx_cuda_check(e->d, cudaEventSynchronize(e->ev), func, "cudaEventSynchronize");
    }
}

struct twin_record {
    struct ggmlx_host_event * twin;
    uint64_t                  target;
};

/* runs on a driver thread once the stream passed the record; must not call CUDA */
static void CUDART_CB twin_recorded(void * arg) {
    struct twin_record * r = arg;
    ggmlx_host_event_complete(r->twin, r->target);
    ggmlx_host_event_release(r->twin);
    free(r);
}

bool ggmlx_cuda_event_record(struct ggmlx_cuda_device * d, cudaStream_t stream, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_record";
    struct cuda_event * e = cuda_event_of(event);
    if (e == NULL || e->d != d) {
        ggmlx_error(func, "the event was not made by %s; a backend records only its own device's events", d->name);
        return false;
    }
    struct twin_record * r = malloc(sizeof *r);
    if (r == NULL) {
        ggmlx_error(func, "out of host memory; nothing recorded");
        return false;
    }
    if (!ggmlx_cuda_check(d, cudaEventRecord(e->ev, stream), func, "cudaEventRecord")) {
        free(r);
        return false;
    }
    atomic_fetch_add(&e->n_recorded, 1);
    r->twin   = ggmlx_host_event_of(e->handle.host_twin);
    r->target = ggmlx_host_event_begin_record(r->twin);
    ggmlx_host_event_retain(r->twin);
    if (!ggmlx_cuda_check(d, cudaLaunchHostFunc(stream, twin_recorded, r), func, "cudaLaunchHostFunc")) {
        /* waits may already count on the target: let them pass rather than hang (the device
         * has failed, and the backend says so) */
        twin_recorded(r);
        return false;
    }
    return true;
}

/* ---- waiting on a host counter event ------------------------------------------------------- */

typedef CUresult (*wait_value64_fn)(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);

static pthread_once_t  g_wait_once = PTHREAD_ONCE_INIT;
static wait_value64_fn g_wait_value64;

static void find_wait_value64(void) {
    void * fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess) {
        g_wait_value64 = (wait_value64_fn) fn;
    } else {
        (void) cudaGetLastError();
    }
}

/*
 * Pages registered for counters. Never unregistered: a page may hold several counters, and the
 * host allocator may reuse a freed counter's memory for a new one at any time.
 */
static pthread_mutex_t g_pages_mutex = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t     * g_pages;
static size_t          g_n_pages, g_cap_pages;

static bool page_registered(uintptr_t page) {
    for (size_t i = 0; i < g_n_pages; i++) {
        if (g_pages[i] == page) {
            return true;
        }
    }
    return false;
}

/* the device address of a host counter, 0 when the GPU cannot read it */
static CUdeviceptr counter_device_address(volatile void * counter) {
    const long ps = sysconf(_SC_PAGESIZE);
    const uintptr_t size = ps > 0 ? (uintptr_t) ps : 4096;
    const uintptr_t page = (uintptr_t) counter & ~(size - 1);
    pthread_mutex_lock(&g_pages_mutex);
    bool ok = page_registered(page);
    if (!ok) {
        const cudaError_t err = cudaHostRegister((void *) page, size, cudaHostRegisterMapped | cudaHostRegisterPortable);
        /* already registered by someone else (ggml_backend_cuda_register_host_buffer): usable as is */
        ok = err == cudaSuccess || err == cudaErrorHostMemoryAlreadyRegistered;
        (void) cudaGetLastError();
        if (ok && g_n_pages == g_cap_pages) {
            const size_t cap = g_cap_pages ? 2 * g_cap_pages : 16;
            uintptr_t * p = realloc(g_pages, cap * sizeof *p);
            if (p != NULL) {
                g_pages     = p;
                g_cap_pages = cap;
            }
        }
        if (ok && g_n_pages < g_cap_pages) {
            g_pages[g_n_pages++] = page;
        }
    }
    pthread_mutex_unlock(&g_pages_mutex);
    if (!ok) {
        return 0;
    }
    void * dptr = NULL;
    if (cudaHostGetDevicePointer(&dptr, (void *) counter, 0) != cudaSuccess) {
        (void) cudaGetLastError();
        return 0;
    }
    return (CUdeviceptr) (uintptr_t) dptr;
}

/* runs on a driver thread once the stream passed the wait; must not call CUDA */
static void CUDART_CB release_host_event(void * arg) {
    ggmlx_host_event_release(arg);
}

static void warn_host_wait(struct ggmlx_cuda_device * d, const char * why) {
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&warned)) {
        ggmlx_log(GGML_LOG_LEVEL_WARN,
                  "ggml_backend_event_wait: %s cannot wait on a host event in its stream (%s); the host waits "
                  "instead\n", d->name, why);
    }
}

static bool wait_host_event(struct ggmlx_cuda_device * d, cudaStream_t stream, ggml_backend_event_t event,
                            struct ggmlx_host_event * hev) {
    static const char * func = "ggml_backend_event_wait";
    const uint64_t target = (uint64_t) atomic_load(&hev->n_recorded);
    if ((uint64_t) atomic_load(&hev->value) >= target) {
        return true; /* never recorded, or every record already done */
    }
    pthread_once(&g_wait_once, find_wait_value64);
    const char * why = NULL;
    CUdeviceptr addr = 0;
    if (g_wait_value64 == NULL) {
        why = "the driver has no cuStreamWaitValue64";
    } else if ((addr = counter_device_address(&hev->value)) == 0) {
        why = "the counter's memory cannot be registered with the GPU";
    }
    if (why == NULL) {
        /* the counter must outlive the queued wait even if the event is freed meanwhile */
        ggmlx_host_event_retain(hev);
        const CUresult r = g_wait_value64((CUstream) stream, addr, (cuuint64_t) target, CU_STREAM_WAIT_VALUE_GEQ);
        if (r != CUDA_SUCCESS) {
            ggmlx_host_event_release(hev);
            why = "cuStreamWaitValue64 failed";
        } else if (!ggmlx_cuda_check(d, cudaLaunchHostFunc(stream, release_host_event, hev), func,
                                     "cudaLaunchHostFunc")) {
            ggmlx_host_event_release(hev); /* the wait is queued; only the release could not be */
            return false;
        } else {
            return true;
        }
    }
    warn_host_wait(d, why);
    ggmlx_host_event_synchronize(event);
    return true;
}

bool ggmlx_cuda_event_wait(struct ggmlx_cuda_device * d, cudaStream_t stream, ggml_backend_event_t event) {
    static const char * func = "ggml_backend_event_wait";
    struct ggmlx_host_event * hev = ggmlx_host_event_of(event);
    if (hev != NULL) {
        return wait_host_event(d, stream, event, hev);
    }
    struct cuda_event * e = cuda_event_of(event);
    if (e == NULL) {
        /* an event of some other kind: its own device can block the host until it is done */
        warn_host_wait(d, "an event of another kind");
        ggml_backend_event_synchronize(event);
        return true;
    }
    if (atomic_load(&e->n_recorded) == 0) {
        return true; /* never recorded counts as done */
    }
    /* waits for the record last enqueued before this call, on whatever device made it */
    return ggmlx_cuda_check(d, cudaStreamWaitEvent(stream, e->ev, 0), func, "cudaStreamWaitEvent");
}
