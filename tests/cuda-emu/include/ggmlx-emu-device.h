/*
 * ggmlx-emu-device.h -- the device side of CUDA C++ on the host, enough to run cuda/'s kernels
 * unchanged: qualifiers, the index built-ins, __syncthreads, warp shuffles, atomics, dynamic
 * shared memory and the launch (the <<<...>>> syntax is rewritten into ggmlx_emu::launch(...) by
 * tests/cuda-emu/rewrite-cu.cmake).
 *
 * Semantics (emu-scheduler.cpp): the blocks of a launch run one after another on the thread
 * that runs the launch (the caller for the default stream, a stream's worker otherwise); the
 * threads of a block are fibers that run until they reach a barrier, so a __syncthreads is a
 * real rendezvous of every live thread of the block (exited threads count as arrived, as on
 * Volta and later) and a shuffle one of the 32 lanes of its warp. A barrier that can never
 * complete (threads at a __syncthreads while others wait in a shuffle, a full-mask shuffle in a
 * partial warp or after a lane exited) ends the launch with cudaErrorLaunchFailure instead of
 * hanging. __shared__ variables are static thread_local: one copy per host thread, and a host
 * thread runs one block at a time, so every block sees its own.
 */
#ifndef GGMLX_EMU_DEVICE_H
#define GGMLX_EMU_DEVICE_H

#include "cuda_runtime_api.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

#define __global__ static
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static thread_local

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};

namespace ggmlx_emu {

/* the running thread's coordinates, set by the scheduler before it switches to a fiber */
struct coords {
    uint3    thread;
    uint3    block;
    dim3     block_dim;
    dim3     grid_dim;
    unsigned linear; /* thread.x + block_dim.x * (thread.y + block_dim.y * thread.z) */
};
extern thread_local coords cur;

void       sync_block();
/* every lane of the caller's warp has stored its value in slots()[lane]; the second call lets
 * them all read before any overwrites */
void       sync_warp();
uint64_t * warp_slots();
void *     dyn_shmem();

typedef void (*body_fn)(void * ctx);
/* false (the last error set, the reason kept) when the configuration is outside the limits */
bool check_launch(dim3 grid, dim3 block, size_t shmem);
/* runs body(ctx) as every thread of the grid (checked already); a barrier that can never open
 * is a launch failure: the last error of the running thread */
void run(dim3 grid, dim3 block, body_fn body, void * ctx);

/* work for a stream (emu-cudart.cpp): run now on the default and per-thread streams, queued on
 * a created stream, or recorded while that stream is being captured */
struct work {
    virtual ~work() {}
    virtual void operator()() = 0;
};
void submit(cudaStream_t stream, work * w); /* takes w */

template <typename F> struct fn_work : work {
    F f;
    explicit fn_work(F fn) : f(fn) {}
    void operator()() override { f(); }
};

/* a callable as work: what it captures is copied now, as CUDA copies a call's arguments */
template <typename F> static inline work * make_work(F f) {
    return new fn_work<F>(f);
}

template <typename T> static inline uint64_t to_bits(T v) {
    static_assert(sizeof(T) <= sizeof(uint64_t), "a shuffled value fits 64 bits");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof v);
    return b;
}

template <typename T> static inline T from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof v);
    return v;
}

template <typename T> static inline T shfl_from(T v, int src_lane, bool keep_own) {
    uint64_t * s    = warp_slots();
    const int  lane = (int)(cur.linear & 31u);
    s[lane] = to_bits(v);
    sync_warp();
    const uint64_t got = s[src_lane & 31];
    sync_warp();
    return keep_own ? v : from_bits<T>(got);
}

/* The arguments are converted to the kernel's parameter types at the launch, as CUDA copies
 * them; every thread then calls the kernel with its own copy. */
template <typename... P> struct launcher {
    void (*kernel)(P...);
    dim3         grid, block;
    size_t       shmem;
    cudaStream_t stream;

    struct job : work {
        void (*kernel)(P...);
        dim3 grid, block;
        std::tuple<typename std::decay<P>::type...> args;
        template <typename... A>
        job(void (*k)(P...), dim3 g, dim3 b, A &&... a) : kernel(k), grid(g), block(b), args(std::forward<A>(a)...) {}
        void operator()() override {
            run(grid, block, [](void * ctx) {
                job * j = static_cast<job *>(ctx);
                std::apply(j->kernel, j->args);
            }, this);
        }
    };

    template <typename... A> void operator()(A &&... a) const {
        if (check_launch(grid, block, shmem)) {
            submit(stream, new job(kernel, grid, block, std::forward<A>(a)...));
        }
    }
};

template <typename... P>
static inline launcher<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shmem = 0,
                                    cudaStream_t stream = nullptr) {
    return launcher<P...>{ kernel, grid, block, shmem, stream };
}

} // namespace ggmlx_emu

#define threadIdx (ggmlx_emu::cur.thread)
#define blockIdx  (ggmlx_emu::cur.block)
#define blockDim  (ggmlx_emu::cur.block_dim)
#define gridDim   (ggmlx_emu::cur.grid_dim)

static inline void __syncthreads(void) {
    ggmlx_emu::sync_block();
}

template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    (void) mask;
    (void) width;
    return ggmlx_emu::shfl_from(v, (int)(ggmlx_emu::cur.linear & 31u) ^ lane_mask, false);
}

template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    (void) mask;
    (void) width;
    const int lane = (int)(ggmlx_emu::cur.linear & 31u);
    return ggmlx_emu::shfl_from(v, lane - (int)delta, lane < (int)delta);
}

/* one host thread runs a launch's blocks one at a time, so within a launch a read-modify-write
 * cannot interleave (two launches on two streams updating one word at once are not modelled) */
template <typename T, typename U> static inline T atomicAdd(T * p, U v) {
    const T old = *p;
    *p = (T)(old + (T)v);
    return old;
}

template <typename T, typename U, typename V> static inline T atomicCAS(T * p, U compare, V v) {
    const T old = *p;
    if (old == (T)compare) {
        *p = (T)v;
    }
    return old;
}

/* rounded as written: the emulator is compiled without contraction into fused multiply-adds */
static inline float __fadd_rn(float a, float b) {
    return a + b;
}

static inline float __fmul_rn(float a, float b) {
    return a * b;
}

#endif /* GGMLX_EMU_DEVICE_H */
