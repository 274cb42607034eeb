/*
 * emu-scheduler.cpp -- runs a kernel launch on the host: blocks one after another, the threads
 * of a block as fibers (stack switching in a few instructions on x86-64, ucontext elsewhere).
 *
 * A fiber runs until it finishes or reaches a barrier. A block barrier (__syncthreads) opens
 * when every thread of the block that has not exited has arrived; a warp barrier (each half of a
 * shuffle) when all 32 lanes of the warp have. When no fiber can run and some have not finished,
 * the launch can never complete on a GPU either: the block is abandoned and the launch fails
 * with cudaErrorLaunchFailure, its reason kept for ggmlx_emu_last_failure().
 *
 * GGMLX_EMU_ORDER=reverse runs the runnable fibers of each step in reverse order, so a result
 * that depends on the order threads happen to run in (a missing barrier) changes.
 */
#include "cuda_runtime.h"
#include "ggmlx-emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <vector>

extern std::atomic<uint64_t> ggmlx_emu_n_launches, ggmlx_emu_n_blocks, ggmlx_emu_n_threads;

#if defined(__SANITIZE_THREAD__)
#    define GGMLX_EMU_TSAN 1
#elif defined(__has_feature)
#    if __has_feature(thread_sanitizer)
#        define GGMLX_EMU_TSAN 1
#    endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#    define GGMLX_EMU_ASAN 1
#elif defined(__has_feature)
#    if __has_feature(address_sanitizer)
#        define GGMLX_EMU_ASAN 1
#    endif
#endif

#ifdef GGMLX_EMU_TSAN
extern "C" {
void * __tsan_get_current_fiber(void);
void * __tsan_create_fiber(unsigned flags);
void   __tsan_destroy_fiber(void * fiber);
void   __tsan_switch_to_fiber(void * fiber, unsigned flags);
}
#endif
#ifdef GGMLX_EMU_ASAN
extern "C" {
void __sanitizer_start_switch_fiber(void ** fake_stack_save, const void * bottom, size_t size);
void __sanitizer_finish_switch_fiber(void * fake_stack_save, const void ** bottom_old, size_t * size_old);
void __asan_unpoison_memory_region(void const volatile * addr, size_t size);
}
#endif

#if defined(__x86_64__)
/* ggmlx_emu_switch(save, load): callee-saved registers, MXCSR and the x87 control word go on the
 * current stack, its pointer into *save; then the same come off the stack at load. */
extern "C" void ggmlx_emu_switch(void ** save, void * load);
extern "C" void ggmlx_emu_fiber_entry(void);
extern "C" [[noreturn]] void ggmlx_emu_fiber_main(void * fiber);
__asm__(".text\n"
        ".globl ggmlx_emu_switch\n"
        ".type ggmlx_emu_switch,@function\n"
        "ggmlx_emu_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size ggmlx_emu_switch,.-ggmlx_emu_switch\n"
        ".globl ggmlx_emu_fiber_entry\n"
        ".type ggmlx_emu_fiber_entry,@function\n"
        "ggmlx_emu_fiber_entry:\n"
        "    movq %r12, %rdi\n"
        "    call ggmlx_emu_fiber_main\n"
        "    ud2\n"
        ".size ggmlx_emu_fiber_entry,.-ggmlx_emu_fiber_entry\n");
#else
#    include <ucontext.h>
extern "C" [[noreturn]] void ggmlx_emu_fiber_main(void * fiber);
#endif

namespace ggmlx_emu {

thread_local coords cur;

namespace {

enum state { RUNNABLE, AT_BLOCK, AT_WARP, DONE };

#if defined(GGMLX_EMU_ASAN) || defined(GGMLX_EMU_TSAN)
constexpr size_t STACK = 512 * 1024; /* instrumented frames are several times larger */
#else
constexpr size_t STACK = 128 * 1024;
#endif
constexpr unsigned MAX_THREADS = 1024;
constexpr size_t   MAX_SHMEM   = 48 * 1024;

struct fiber {
    unsigned index;
    state    st;
    char *   stack_lo; /* usable stack, above its guard page */
#if defined(__x86_64__)
    void * sp;
#else
    ucontext_t uc;
#endif
#ifdef GGMLX_EMU_TSAN
    void * tsan;
#endif
};

struct block_run {
    unsigned n;          /* threads in the block */
    unsigned live;       /* not yet exited */
    unsigned at_block;   /* waiting at the block barrier */
    unsigned at_warp[MAX_THREADS / 32];
    uint64_t slots[MAX_THREADS / 32][32];
    body_fn  body;
    void *   ctx;
    bool     stuck;
    bool     opened; /* a barrier opened since the scheduler last looked */
};

/* per host thread: the fibers' stacks (mapped once, guard page under each) and the scheduler */
struct engine {
    char *             map      = nullptr;
    size_t             map_size = 0;
    size_t             page     = 0;
    std::vector<fiber> fibers;
    fiber *            running  = nullptr;
    block_run *        blk      = nullptr;
    unsigned char      shmem[MAX_SHMEM] __attribute__((aligned(16)));
    bool               reverse  = false;
#if defined(__x86_64__)
    void * sched_sp = nullptr;
#else
    ucontext_t sched_uc;
#endif
#ifdef GGMLX_EMU_TSAN
    void * sched_tsan = nullptr;
#endif
#ifdef GGMLX_EMU_ASAN
    const void * sched_bottom = nullptr;
    size_t       sched_size   = 0;
#endif

    engine() {
        const char * o = getenv("GGMLX_EMU_ORDER");
        reverse = o != nullptr && strcmp(o, "reverse") == 0;
    }

    ~engine() {
#ifdef GGMLX_EMU_TSAN
        for (fiber & f : fibers) {
            __tsan_destroy_fiber(f.tsan);
        }
#endif
        if (map != nullptr) {
            munmap(map, map_size);
        }
    }

    bool reserve() {
        if (map != nullptr) {
            return true;
        }
        page     = (size_t) sysconf(_SC_PAGESIZE);
        map_size = (size_t) MAX_THREADS * (STACK + page);
        void * m = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            return false;
        }
        map = (char *) m;
        fibers.resize(MAX_THREADS);
        for (unsigned i = 0; i < MAX_THREADS; i++) {
            char * lo = map + (size_t) i * (STACK + page);
            mprotect(lo, page, PROT_NONE); /* an overflowing kernel faults instead of corrupting */
            fibers[i].index    = i;
            fibers[i].stack_lo = lo + page;
#ifdef GGMLX_EMU_TSAN
            fibers[i].tsan = __tsan_create_fiber(0);
#endif
        }
        return true;
    }

    void switch_to(fiber * f) {
        running = f;
#ifdef GGMLX_EMU_TSAN
        __tsan_switch_to_fiber(f->tsan, 0);
#endif
#ifdef GGMLX_EMU_ASAN
        void * fake = nullptr;
        __sanitizer_start_switch_fiber(&fake, f->stack_lo, STACK);
#endif
#if defined(__x86_64__)
        ggmlx_emu_switch(&sched_sp, f->sp);
#else
        swapcontext(&sched_uc, &f->uc);
#endif
#ifdef GGMLX_EMU_ASAN
        __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
        running = nullptr;
    }

    /* from a fiber back to the scheduler */
    void yield() {
        fiber * f = running;
#ifdef GGMLX_EMU_TSAN
        __tsan_switch_to_fiber(sched_tsan, 0);
#endif
#ifdef GGMLX_EMU_ASAN
        void * fake = nullptr;
        __sanitizer_start_switch_fiber(f->st == DONE ? nullptr : &fake, sched_bottom, sched_size);
#endif
#if defined(__x86_64__)
        ggmlx_emu_switch(&f->sp, sched_sp);
#else
        swapcontext(&f->uc, &sched_uc);
#endif
#ifdef GGMLX_EMU_ASAN
        __sanitizer_finish_switch_fiber(fake, &sched_bottom, &sched_size);
#endif
    }

    void start(fiber * f) {
        f->st = RUNNABLE;
#ifdef GGMLX_EMU_ASAN
        __asan_unpoison_memory_region(f->stack_lo, STACK); /* an abandoned fiber leaves poisoned frames */
#endif
#if defined(__x86_64__)
        /* what ggmlx_emu_switch pops: MXCSR/x87 word, r15, r14, r13, r12 = f, rbx, rbp, return
         * address; after the ret the stack is 16-byte aligned for the call in the entry */
        uint64_t * sp = (uint64_t *) (f->stack_lo + STACK - 128);
        uint32_t   csr[2];
        __asm__ volatile("stmxcsr %0" : "=m"(csr[0]));
        __asm__ volatile("fnstcw %0" : "=m"(csr[1]));
        memcpy(&sp[0], csr, sizeof csr);
        sp[1] = 0;
        sp[2] = 0;
        sp[3] = 0;
        sp[4] = (uint64_t) (uintptr_t) f;
        sp[5] = 0;
        sp[6] = 0;
        sp[7] = (uint64_t) (uintptr_t) &ggmlx_emu_fiber_entry;
        f->sp = sp;
#else
        getcontext(&f->uc);
        f->uc.uc_stack.ss_sp   = f->stack_lo;
        f->uc.uc_stack.ss_size = STACK;
        f->uc.uc_link          = nullptr;
        makecontext(&f->uc, (void (*)(void)) ggmlx_emu_fiber_main, 1, f);
#endif
    }

    void set_coords(unsigned i) {
        const dim3 & b = cur.block_dim;
        cur.linear   = i;
        cur.thread.x = i % b.x;
        cur.thread.y = (i / b.x) % b.y;
        cur.thread.z = i / (b.x * b.y);
    }

    /* one block to the end; false when it got stuck at a barrier */
    bool run_block(block_run & br) {
        blk = &br;
        for (unsigned i = 0; i < br.n; i++) {
            start(&fibers[i]);
        }
        /* The first runnable fiber in order runs; after a barrier opens the scan starts over,
         * so the first warp runs up to its next block barrier before the next warp starts: the
         * warps drift as far apart as a GPU lets them, and a missing __syncthreads between
         * warps shows in one order or the other. */
        unsigned k = 0;
        while (br.live > 0) {
            if (k == br.n) {
                br.stuck = true; /* nothing can run, yet some threads have not finished */
                break;
            }
            fiber * f = &fibers[reverse ? br.n - 1 - k : k];
            if (f->st != RUNNABLE) {
                k++;
                continue;
            }
            set_coords(f->index);
            switch_to(f);
            if (br.opened) {
                br.opened = false;
                k         = 0;
            }
        }
        blk = nullptr;
        return !br.stuck;
    }

    void release(state waiting, unsigned first, unsigned count) {
        blk->opened = true;
        for (unsigned i = first; i < first + count && i < blk->n; i++) {
            if (fibers[i].st == waiting) {
                fibers[i].st = RUNNABLE;
            }
        }
    }

    /* the block barrier opens when the last live thread arrives (exits count as arrivals) */
    void check_block_barrier() {
        if (blk->at_block > 0 && blk->at_block == blk->live) {
            blk->at_block = 0;
            release(AT_BLOCK, 0, blk->n);
        }
    }
};

thread_local engine eng;
thread_local char   failure[256];

void fail(const char * why) {
    snprintf(failure, sizeof failure, "%s", why);
}

} // namespace

void sync_block() {
    engine & e = eng;
    fiber *  f = e.running;
    f->st = AT_BLOCK;
    e.blk->at_block++;
    e.check_block_barrier();
    if (f->st == AT_BLOCK) {
        e.yield();
    }
}

void sync_warp() {
    engine &       e = eng;
    fiber *        f = e.running;
    const unsigned w = f->index / 32;
    f->st = AT_WARP;
    if (++e.blk->at_warp[w] == 32) {
        e.blk->at_warp[w] = 0;
        e.release(AT_WARP, w * 32, 32);
    }
    if (f->st == AT_WARP) {
        e.yield();
    }
}

uint64_t * warp_slots() {
    return eng.blk->slots[eng.running->index / 32];
}

void * dyn_shmem() {
    return eng.shmem;
}

bool check_launch(dim3 grid, dim3 block, size_t shmem) {
    const uint64_t nthreads = (uint64_t) block.x * block.y * block.z;
    if (nthreads == 0 || nthreads > MAX_THREADS || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
        fail("grid or block dimensions outside the device limits");
        ggmlx_emu_set_error(cudaErrorInvalidConfiguration);
        return false;
    }
    if (shmem > MAX_SHMEM) {
        fail("more dynamic shared memory than a block may have without opt-in (48 KiB)");
        ggmlx_emu_set_error(cudaErrorInvalidValue);
        return false;
    }
    return true;
}

void run(dim3 grid, dim3 block, body_fn body, void * ctx) {
    engine & e = eng;
    const uint64_t nthreads = (uint64_t) block.x * block.y * block.z;
    if (e.blk != nullptr) {
        fail("a launch from inside a kernel (dynamic parallelism is not used here)");
        ggmlx_emu_set_error(cudaErrorLaunchFailure);
        return;
    }
    if (!e.reserve()) {
        fail("no memory for the fibers' stacks");
        ggmlx_emu_set_error(cudaErrorMemoryAllocation);
        return;
    }
#ifdef GGMLX_EMU_TSAN
    e.sched_tsan = __tsan_get_current_fiber();
#endif
    const uint64_t nblocks = (uint64_t) grid.x * grid.y * grid.z;
    ggmlx_emu_n_launches++;
    ggmlx_emu_n_blocks += nblocks;
    ggmlx_emu_n_threads += nblocks * nthreads;
    const coords saved = cur;
    cur.block_dim = block;
    cur.grid_dim  = grid;
    static thread_local block_run br;
    for (unsigned bz = 0; bz < grid.z; bz++) {
        for (unsigned by = 0; by < grid.y; by++) {
            for (unsigned bx = 0; bx < grid.x; bx++) {
                memset(&br, 0, sizeof br);
                br.n    = (unsigned) nthreads;
                br.live = br.n;
                br.body = body;
                br.ctx  = ctx;
                cur.block = uint3{ bx, by, bz };
                if (!e.run_block(br)) {
                    snprintf(failure, sizeof failure,
                             "block (%u, %u, %u): %u of %u threads wait at a barrier that can never open "
                             "(a __syncthreads not reached by every thread, or a full-mask shuffle in a warp "
                             "missing lanes)", bx, by, bz, br.live, br.n);
                    ggmlx_emu_set_error(cudaErrorLaunchFailure);
                    cur = saved;
                    return;
                }
            }
        }
    }
    cur = saved;
}

} // namespace ggmlx_emu

using ggmlx_emu::eng;

extern "C" [[noreturn]] void ggmlx_emu_fiber_main(void * p) {
    ggmlx_emu::fiber * f = static_cast<ggmlx_emu::fiber *>(p);
#ifdef GGMLX_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &eng.sched_bottom, &eng.sched_size);
#endif
    eng.blk->body(eng.blk->ctx);
    f->st = ggmlx_emu::DONE;
    eng.blk->live--;
    eng.check_block_barrier();
    eng.yield();
    abort(); /* a finished fiber is never switched to again */
}

extern "C" void ggmlx_emu_set_reverse(bool reverse) {
    eng.reverse = reverse;
}

extern "C" const char * ggmlx_emu_last_failure(void) {
    return ggmlx_emu::failure;
}
