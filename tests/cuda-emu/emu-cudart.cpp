/*
 * emu-cudart.cpp -- the CUDA runtime of the emulator: devices, memory, streams, events, host
 * functions, stream capture into graphs, and the one driver call the backend fetches
 * (cuStreamWaitValue64). Enough for cuda/'s host code (cuda-backend.c and the files it uses) to
 * run unchanged on the host.
 *
 * - Devices: GGMLX_EMU_GPUS of them (default 1), each with GGMLX_EMU_GPU_MEMORY bytes (default
 *   8 GiB) that cudaMalloc counts against, so running out of memory happens as on a GPU.
 *   "Device memory" is host memory: any pointer works anywhere.
 * - Streams: the default (NULL) and per-thread streams run work at once on the calling thread;
 *   a created stream is a worker thread draining its queue in order, so host code that forgets
 *   to synchronize reads stale data here too (and TSan sees the race).
 * - Errors: a call that fails sets the calling thread's last error; a kernel that fails on a
 *   stream's worker (a barrier that never opens) makes the error sticky for every later
 *   synchronizing call, as a device fault does.
 * - Capture: between cudaStreamBeginCapture and cudaStreamEndCapture, work for that stream
 *   (kernels, copies, memsets, cuBLAS calls, host functions) is recorded instead of run; a
 *   graph launch replays it in order. Synchronizing, querying, recording or waiting on an event
 *   with a capturing stream is refused and invalidates the capture, which is stricter than CUDA
 *   for events (the backend's design keeps them out of captures).
 */
#include "cublas_v2.h"
#include "cuda.h"
#include "cuda_runtime.h"
#include "ggmlx-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using ggmlx_emu::make_work;
using ggmlx_emu::work;

namespace {

thread_local cudaError_t last_error = cudaSuccess;
thread_local int         current_device = 0;
std::atomic<int>         sticky{ cudaSuccess };

cudaError_t ret(cudaError_t e) {
    if (e != cudaSuccess && last_error == cudaSuccess) {
        last_error = e;
    }
    return e;
}

/* ---- devices and memory ----------------------------------------------------------------------- */

struct device_table {
    int                      n = 1;
    size_t                   total = (size_t) 8 << 30;
    std::mutex               m;
    std::vector<size_t>      used;
    std::map<void *, std::pair<int, size_t>> allocs; /* pointer -> (device, size) */
    std::set<void *>         registered;
    std::map<const char *, size_t> pinned;           /* cudaMallocHost and registered ranges */
    std::map<const char *, size_t> device_ranges;    /* the allocations again, for lookups by address */

    device_table() {
        const char * g = getenv("GGMLX_EMU_GPUS");
        if (g != nullptr && atoi(g) >= 0 && atoi(g) <= 16) {
            n = atoi(g);
        }
        const char * mem = getenv("GGMLX_EMU_GPU_MEMORY");
        if (mem != nullptr && strtoull(mem, nullptr, 10) > 0) {
            total = (size_t) strtoull(mem, nullptr, 10);
        }
        used.assign((size_t) n, 0);
    }
};

device_table & devs() {
    static device_table t;
    return t;
}

void * dev_alloc(size_t size, int device, cudaError_t * err) {
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    if (device < 0 || device >= t.n) {
        *err = cudaErrorInvalidDevice;
        return nullptr;
    }
    if (size > t.total - t.used[(size_t) device]) {
        *err = cudaErrorMemoryAllocation;
        return nullptr;
    }
    void * p = aligned_alloc(256, (size ? size : 1) + 255 - ((size ? size : 1) + 255) % 256);
    if (p == nullptr) {
        *err = cudaErrorMemoryAllocation;
        return nullptr;
    }
    t.used[(size_t) device] += size;
    t.allocs[p] = { device, size };
    t.device_ranges[(const char *) p] = size;
    *err = cudaSuccess;
    return p;
}

cudaError_t dev_free(void * p) {
    if (p == nullptr) {
        return cudaSuccess;
    }
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    auto it = t.allocs.find(p);
    if (it == t.allocs.end()) {
        return cudaErrorInvalidValue;
    }
    t.used[(size_t) it->second.first] -= it->second.second;
    t.allocs.erase(it);
    t.device_ranges.erase((const char *) p);
    free(p);
    return cudaSuccess;
}

double now_ms() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec * 1e-6;
}

/* p lies in a range of the map (start -> size) */
template <typename K> bool in_ranges(const std::map<K, size_t> & m, const void * p) {
    auto it = m.upper_bound((K) p);
    if (it == m.begin()) {
        return false;
    }
    --it;
    return (const char *) p < (const char *) it->first + it->second;
}

/* A copy from pageable host memory to the device: CUDA stages the source before the call
 * returns, so the caller may reuse it at once (cuda-backend.c writes a compute's number from a
 * local variable that way). Pinned or device memory is read when the copy runs. */
bool staged_source(const void * src, enum cudaMemcpyKind kind) {
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDefault) {
        return false;
    }
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    return !in_ranges(t.pinned, src) && !in_ranges(t.device_ranges, src);
}

bool inline_stream(cudaStream_t s) {
    return s == nullptr || s == cudaStreamPerThread;
}

} // namespace

/* ---- streams -------------------------------------------------------------------------------------- */

struct ggmlx_emu_stream {
    std::mutex                          m;
    std::condition_variable             cv;
    std::deque<work *>                  q;
    bool                                busy = false;
    bool                                stop = false;
    bool                                capturing = false;
    bool                                invalidated = false;
    std::vector<std::shared_ptr<work>>  captured;
    std::thread                         th;

    void loop() {
        std::unique_lock<std::mutex> lk(m);
        for (;;) {
            cv.wait(lk, [&] { return stop || !q.empty(); });
            if (q.empty()) {
                return;
            }
            work * w = q.front();
            q.pop_front();
            busy = true;
            lk.unlock();
            (*w)();
            delete w;
            const cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) {
                int expected = cudaSuccess;
                sticky.compare_exchange_strong(expected, (int) e);
            }
            lk.lock();
            busy = false;
            cv.notify_all();
        }
    }

    void drain() {
        std::unique_lock<std::mutex> lk(m);
        cv.wait(lk, [&] { return q.empty() && !busy; });
    }

    bool idle() {
        std::lock_guard<std::mutex> lk(m);
        return q.empty() && !busy;
    }
};

void ggmlx_emu::submit(cudaStream_t s, work * w) {
    if (inline_stream(s)) {
        (*w)();
        delete w;
        return;
    }
    std::lock_guard<std::mutex> lk(s->m);
    if (s->capturing) {
        s->captured.emplace_back(w);
        return;
    }
    s->q.push_back(w);
    s->cv.notify_all();
}

/* a call that must not happen while s is being captured: invalidates the capture */
static bool refused_in_capture(cudaStream_t s) {
    if (inline_stream(s)) {
        return false;
    }
    std::lock_guard<std::mutex> lk(s->m);
    if (s->capturing) {
        s->invalidated = true;
        return true;
    }
    return false;
}

static cudaError_t sticky_or(cudaError_t e) {
    const int st = sticky.load();
    return st != cudaSuccess ? (cudaError_t) st : e;
}

/* ---- events ---------------------------------------------------------------------------------------- */

struct ggmlx_emu_event {
    std::mutex              m;
    std::condition_variable cv;
    uint64_t                recorded = 0; /* records enqueued */
    uint64_t                done     = 0; /* records the stream has passed */
    double                  t_ms     = 0;
    bool                    timing   = true;
    std::atomic<int>        refs{ 1 }; /* the handle, and each queued record or wait */

    void complete(uint64_t n) {
        std::lock_guard<std::mutex> lk(m);
        if (n > done) {
            done = n;
            t_ms = now_ms();
        }
        cv.notify_all();
    }

    void wait_for(uint64_t n) {
        std::unique_lock<std::mutex> lk(m);
        cv.wait(lk, [&] { return done >= n; });
    }
};

/* work queued on an event keeps it alive: CUDA lets an event be destroyed while still pending */
static void event_unref(ggmlx_emu_event * e) {
    if (e->refs.fetch_sub(1) == 1) {
        delete e;
    }
}

/* ---- graphs ---------------------------------------------------------------------------------------- */

struct ggmlx_emu_graph {
    std::vector<std::shared_ptr<work>> ops;
};

struct ggmlx_emu_exec {
    std::vector<std::shared_ptr<work>> ops;
};

/* ---- the C API ------------------------------------------------------------------------------------- */

extern "C" {

void ggmlx_emu_set_error(cudaError_t e) {
    ret(e);
}

cudaError_t cudaGetLastError(void) {
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return sticky_or(e);
}

cudaError_t cudaPeekAtLastError(void) {
    return sticky_or(last_error);
}

const char * cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
    default: return "cudaErrorUnknown";
    }
}

const char * cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    default: return "unknown error";
    }
}

cudaError_t cudaGetDeviceCount(int * count) {
    *count = devs().n;
    return devs().n > 0 ? cudaSuccess : ret(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= devs().n) {
        return ret(cudaErrorInvalidDevice);
    }
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int * device) {
    *device = current_device;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp * prop, int device) {
    if (device < 0 || device >= devs().n) {
        return ret(cudaErrorInvalidDevice);
    }
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "ggmlx emulated GPU %d (host fibers)", device);
    prop->totalGlobalMem      = devs().total;
    prop->major               = 9;
    prop->minor               = 0;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int * value, enum cudaDeviceAttr attr, int device) {
    if (device < 0 || device >= devs().n) {
        return ret(cudaErrorInvalidDevice);
    }
    *value = attr == cudaDevAttrMemoryPoolsSupported ? 1 : 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char * bus_id, int len, int device) {
    if (device < 0 || device >= devs().n || len <= 0) {
        return ret(cudaErrorInvalidValue);
    }
    snprintf(bus_id, (size_t) len, "0000:e%d:00.0", device);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t * free_bytes, size_t * total_bytes) {
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    *total_bytes = t.total;
    *free_bytes  = t.total - t.used[(size_t) current_device];
    return cudaSuccess;
}

static CUresult emu_stream_wait_value64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags) {
    if (flags != CU_STREAM_WAIT_VALUE_GEQ || addr == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const uint64_t * p = (const uint64_t *) (uintptr_t) addr;
    ggmlx_emu::submit(stream, make_work([p, value] {
        while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < value) {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }));
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char * symbol, void ** fn, unsigned int version,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult * status) {
    (void) version;
    (void) flags;
    if (strcmp(symbol, "cuStreamWaitValue64") == 0) {
        *fn = (void *) &emu_stream_wait_value64;
        *status = cudaDriverEntryPointSuccess;
    } else {
        *fn = nullptr;
        *status = cudaDriverEntryPointSymbolNotFound;
    }
    return cudaSuccess;
}

cudaError_t cudaMalloc(void ** ptr, size_t size) {
    cudaError_t e;
    *ptr = dev_alloc(size, current_device, &e);
    return ret(e);
}

cudaError_t cudaFree(void * ptr) {
    return ret(dev_free(ptr));
}

cudaError_t cudaMallocAsync(void ** ptr, size_t size, cudaStream_t stream) {
    (void) stream; /* usable in stream order from now on: allocating at once is one valid order */
    return cudaMalloc(ptr, size);
}

cudaError_t cudaFreeAsync(void * ptr, cudaStream_t stream) {
    if (ptr == nullptr) {
        return cudaSuccess;
    }
    ggmlx_emu::submit(stream, make_work([ptr] { dev_free(ptr); }));
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void ** ptr, size_t size) {
    *ptr = aligned_alloc(4096, (size + 4095) / 4096 * 4096 + (size == 0 ? 4096 : 0));
    if (*ptr == nullptr) {
        return ret(cudaErrorMemoryAllocation);
    }
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    t.pinned[(const char *) *ptr] = size;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void * ptr) {
    device_table & t = devs();
    {
        std::lock_guard<std::mutex> lk(t.m);
        t.pinned.erase((const char *) ptr);
    }
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void * ptr, size_t size, unsigned int flags) {
    (void) flags;
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    if (!t.registered.insert(ptr).second) {
        return ret(cudaErrorHostMemoryAlreadyRegistered);
    }
    t.pinned[(const char *) ptr] = size;
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void * ptr) {
    device_table & t = devs();
    std::lock_guard<std::mutex> lk(t.m);
    if (t.registered.erase(ptr) != 1) {
        return ret(cudaErrorHostMemoryNotRegistered);
    }
    t.pinned.erase((const char *) ptr);
    return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void ** dev_ptr, void * host_ptr, unsigned int flags) {
    (void) flags;
    *dev_ptr = host_ptr;
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void * dst, const void * src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream) {
    if ((int) kind < cudaMemcpyHostToHost || (int) kind > cudaMemcpyDefault || (count > 0 && (dst == nullptr || src == nullptr))) {
        return ret(cudaErrorInvalidValue);
    }
    if (count == 0) {
        return cudaSuccess;
    }
    if (!inline_stream(stream) && staged_source(src, kind)) {
        std::shared_ptr<std::vector<char>> copy = std::make_shared<std::vector<char>>((const char *) src,
                                                                                      (const char *) src + count);
        ggmlx_emu::submit(stream, make_work([dst, copy] { memcpy(dst, copy->data(), copy->size()); }));
        return cudaSuccess;
    }
    ggmlx_emu::submit(stream, make_work([dst, src, count] { memmove(dst, src, count); }));
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void * dst, size_t dpitch, const void * src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream) {
    if (width > dpitch || width > spitch || (int) kind < 0 || (int) kind > cudaMemcpyDefault) {
        return ret(cudaErrorInvalidValue);
    }
    if (!inline_stream(stream) && height > 0 && staged_source(src, kind)) {
        std::shared_ptr<std::vector<char>> copy = std::make_shared<std::vector<char>>(width * height);
        for (size_t i = 0; i < height; i++) {
            memcpy(copy->data() + i * width, (const char *) src + i * spitch, width);
        }
        ggmlx_emu::submit(stream, make_work([dst, dpitch, width, height, copy] {
            for (size_t i = 0; i < height; i++) {
                memcpy((char *) dst + i * dpitch, copy->data() + i * width, width);
            }
        }));
        return cudaSuccess;
    }
    ggmlx_emu::submit(stream, make_work([=] {
        for (size_t i = 0; i < height; i++) {
            memmove((char *) dst + i * dpitch, (const char *) src + i * spitch, width);
        }
    }));
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void * dst, int dst_device, const void * src, int src_device, size_t count,
                                cudaStream_t stream) {
    if (dst_device < 0 || dst_device >= devs().n || src_device < 0 || src_device >= devs().n) {
        return ret(cudaErrorInvalidDevice);
    }
    return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, stream);
}

cudaError_t cudaMemsetAsync(void * dst, int value, size_t count, cudaStream_t stream) {
    if (count > 0 && dst == nullptr) {
        return ret(cudaErrorInvalidValue);
    }
    if (count > 0) {
        ggmlx_emu::submit(stream, make_work([dst, value, count] { memset(dst, value, count); }));
    }
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t * stream, unsigned int flags) {
    (void) flags;
    ggmlx_emu_stream * s = new ggmlx_emu_stream;
    s->th = std::thread([s] { s->loop(); });
    *stream = s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (inline_stream(s)) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    {
        std::lock_guard<std::mutex> lk(s->m);
        s->stop = true;
        s->cv.notify_all();
    }
    s->th.join(); /* CUDA lets queued work finish first, as this does */
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (refused_in_capture(s)) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    if (!inline_stream(s)) {
        s->drain();
    }
    return ret(sticky_or(cudaSuccess));
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
    if (refused_in_capture(s)) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    if (!inline_stream(s) && !s->idle()) {
        return ret(cudaErrorNotReady);
    }
    return ret(sticky_or(cudaSuccess));
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
    (void) flags;
    if (e == nullptr) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (refused_in_capture(s)) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    uint64_t target;
    {
        std::lock_guard<std::mutex> lk(e->m);
        target = e->recorded; /* the record last enqueued before this call */
    }
    e->refs++;
    ggmlx_emu::submit(s, make_work([e, target] {
        e->wait_for(target);
        event_unref(e);
    }));
    return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void * user_data) {
    ggmlx_emu::submit(s, make_work([fn, user_data] { fn(user_data); }));
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t * event) {
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t * event, unsigned int flags) {
    ggmlx_emu_event * e = new ggmlx_emu_event;
    e->timing = (flags & cudaEventDisableTiming) == 0;
    *event = e;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (e == nullptr) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    event_unref(e); /* returns at once; queued records and waits still hold it */
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (e == nullptr) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    if (refused_in_capture(s)) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    uint64_t n;
    {
        std::lock_guard<std::mutex> lk(e->m);
        n = ++e->recorded;
    }
    e->refs++;
    ggmlx_emu::submit(s, make_work([e, n] {
        e->complete(n);
        event_unref(e);
    }));
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (e == nullptr) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    uint64_t n;
    {
        std::lock_guard<std::mutex> lk(e->m);
        n = e->recorded;
    }
    e->wait_for(n);
    return ret(sticky_or(cudaSuccess));
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
    std::lock_guard<std::mutex> lk(e->m);
    return e->done >= e->recorded ? cudaSuccess : ret(cudaErrorNotReady);
}

cudaError_t cudaEventElapsedTime(float * ms, cudaEvent_t start, cudaEvent_t end) {
    if (start == nullptr || end == nullptr || !start->timing || !end->timing) {
        return ret(cudaErrorInvalidResourceHandle);
    }
    std::lock_guard<std::mutex> l1(start->m);
    std::lock_guard<std::mutex> l2(end->m);
    if (start->done == 0 || end->done == 0 || start->done < start->recorded || end->done < end->recorded) {
        return ret(cudaErrorNotReady);
    }
    *ms = (float) (end->t_ms - start->t_ms);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    (void) mode;
    if (inline_stream(s)) {
        return ret(cudaErrorStreamCaptureUnsupported); /* the legacy stream cannot be captured */
    }
    std::lock_guard<std::mutex> lk(s->m);
    if (s->capturing) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    s->capturing   = true;
    s->invalidated = false;
    s->captured.clear();
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t * graph) {
    *graph = nullptr;
    if (inline_stream(s)) {
        return ret(cudaErrorStreamCaptureUnmatched);
    }
    std::lock_guard<std::mutex> lk(s->m);
    if (!s->capturing) {
        return ret(cudaErrorStreamCaptureUnmatched);
    }
    s->capturing = false;
    if (s->invalidated) {
        s->captured.clear();
        return ret(cudaErrorStreamCaptureInvalidated);
    }
    ggmlx_emu_graph * g = new ggmlx_emu_graph;
    g->ops.swap(s->captured);
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags) {
    (void) flags;
    if (graph == nullptr) {
        return ret(cudaErrorInvalidValue);
    }
    ggmlx_emu_exec * x = new ggmlx_emu_exec;
    x->ops = graph->ops;
    *exec = x;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags) {
    return cudaGraphInstantiateWithFlags(exec, graph, flags);
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo * info) {
    if (exec == nullptr || graph == nullptr) {
        return ret(cudaErrorInvalidValue);
    }
    /* CUDA updates in place only a graph of the same topology: the same number of nodes here */
    if (exec->ops.size() != graph->ops.size()) {
        if (info != nullptr) {
            info->result = cudaGraphExecUpdateError;
        }
        return ret(cudaErrorGraphExecUpdateFailure);
    }
    exec->ops = graph->ops;
    if (info != nullptr) {
        info->result = cudaGraphExecUpdateSuccess;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    if (exec == nullptr) {
        return ret(cudaErrorInvalidValue);
    }
    if (refused_in_capture(s)) {
        return ret(cudaErrorStreamCaptureUnsupported);
    }
    std::vector<std::shared_ptr<work>> ops = exec->ops;
    ggmlx_emu::submit(s, make_work([ops] {
        for (const std::shared_ptr<work> & w : ops) {
            (*w)();
        }
    }));
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    delete exec;
    return cudaSuccess;
}

} // extern "C"
