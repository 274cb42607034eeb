/*
 * comm-check.c -- cuda-comm-check: the CUDA registry's NCCL all-reduce on a real GPU, for a
 * machine without Criterion (scripts/gpu-check.sh runs it; tests/test-cuda-comm.c holds the
 * same checks as a Criterion suite).
 *
 *   cuda-comm-check
 *
 * Reaches the functions as the meta device does, through the registry's proc addresses:
 * a 1-rank communicator on CUDA0 must leave F32, F16 and BF16 tensors exactly as they were;
 * two backends on one GPU and GGML_CUDA_ALLREDUCE=none must give no communicator; an I32 or
 * host tensor must be refused with nothing enqueued; with two GPUs or more every rank must end
 * with the exact sum, and the time of a 64 MiB F32 all-reduce over them is printed.
 *
 * Exit status: 0 every check passed, 1 one failed, 2 no CUDA device, 3 no NCCL library (the
 * reason is printed; GGMLX_NCCL_LIBRARY names one).
 */
#include "cuda-nccl.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-cuda.h"
#include "ggml.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 8

static ggml_backend_comm_init_t             comm_init;
static ggml_backend_comm_free_t             comm_free;
static ggml_backend_comm_allreduce_tensor_t comm_allreduce;

static int g_passed, g_failed;

static void check(bool ok, const char * what) {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, ok || !ggmlx_last_error() ? "" : ": ",
           ok || !ggmlx_last_error() ? "" : ggmlx_last_error());
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
    }
}

/* a 1-d tensor of n elements in b's memory; its context and buffer go to *ctx and *buf */
static struct ggml_tensor * tensor_on(ggml_backend_t b, enum ggml_type type, int64_t n, struct ggml_context ** ctx,
                                      ggml_backend_buffer_t * buf) {
    struct ggml_init_params p = { ggml_tensor_overhead(), NULL, true };
    *ctx = ggml_init(p);
    struct ggml_tensor * t = *ctx ? ggml_new_tensor_1d(*ctx, type, n) : NULL;
    *buf = t ? ggml_backend_alloc_ctx_tensors(*ctx, b) : NULL;
    if (*buf == NULL) {
        ggml_free(*ctx);
        *ctx = NULL;
        return NULL;
    }
    return t;
}

static void release(struct ggml_context * ctx, ggml_backend_buffer_t buf) {
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* multiples of 1/8 of small size: exact in F16 and BF16, and any order of adding them is exact */
static float pattern(size_t i, size_t rank) {
    return (float) ((int) ((i * 7 + rank * 3) % 61) - 30) * 0.125f + (float) (rank + 1) * 0.5f;
}

static bool fill(struct ggml_tensor * t, size_t rank) {
    const size_t n = (size_t) ggml_nelements(t);
    void * host = malloc(ggml_nbytes(t));
    if (host == NULL) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = pattern(i, rank);
        if (t->type == GGML_TYPE_F32) {
            ((float *) host)[i] = v;
        } else if (t->type == GGML_TYPE_F16) {
            ((ggml_fp16_t *) host)[i] = ggml_fp32_to_fp16(v);
        } else {
            ((ggml_bf16_t *) host)[i] = ggml_fp32_to_bf16(v);
        }
    }
    ggml_backend_tensor_set(t, host, 0, ggml_nbytes(t));
    free(host);
    return true;
}

static void one_rank_keeps_values(ggml_backend_t b, void * comm, enum ggml_type type, int64_t n) {
    char what[128];
    snprintf(what, sizeof what, "1-rank all-reduce leaves %lld %s as they were", (long long) n, ggml_type_name(type));
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * t = tensor_on(b, type, n, &ctx, &buf);
    void * before = t ? malloc(ggml_nbytes(t)) : NULL;
    void * after  = t ? malloc(ggml_nbytes(t)) : NULL;
    bool ok = before && after && fill(t, 0);
    if (ok) {
        ggml_backend_tensor_get(t, before, 0, ggml_nbytes(t));
        struct ggml_tensor * ts[1] = { t };
        ok = comm_allreduce(comm, ts);
        ggml_backend_synchronize(b);
        ok = ok && ggmlx_backend_get_status(b) == GGML_STATUS_SUCCESS;
        ggml_backend_tensor_get(t, after, 0, ggml_nbytes(t));
        ok = ok && memcmp(before, after, ggml_nbytes(t)) == 0;
    }
    check(ok, what);
    free(before);
    free(after);
    if (t) {
        release(ctx, buf);
    }
}

static void refusals(ggml_backend_t b, void * comm) {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * t = tensor_on(b, GGML_TYPE_I32, 64, &ctx, &buf);
    struct ggml_tensor * ts[1] = { t };
    ggmlx_clear_last_error();
    check(t && !comm_allreduce(comm, ts) && ggmlx_last_error() == NULL, "an I32 tensor is refused without an error");
    if (t) {
        release(ctx, buf);
    }
    ggml_backend_t cpu = ggml_backend_cpu_init();
    t = cpu ? tensor_on(cpu, GGML_TYPE_F32, 64, &ctx, &buf) : NULL;
    ts[0] = t;
    check(t && !comm_allreduce(comm, ts) && ggmlx_last_error() != NULL, "a tensor in host memory is an error");
    ggmlx_clear_last_error();
    if (t) {
        release(ctx, buf);
    }
    ggml_backend_free(cpu);
    check(ggmlx_backend_get_status(b) == GGML_STATUS_SUCCESS, "refusals leave the queue without an error");
}

static void no_communicator(ggml_backend_t a) {
    ggml_backend_t b = ggml_backend_cuda_init(0);
    ggml_backend_t shared[2] = { a, b };
    void * c = b ? comm_init(shared, 2) : NULL;
    check(b != NULL && c == NULL && ggmlx_last_error() == NULL, "two backends on one GPU: no communicator, no error");
    comm_free(c);
    ggml_backend_free(b);
    ggml_backend_t one[1] = { a };
    setenv("GGML_CUDA_ALLREDUCE", "none", 1);
    c = comm_init(one, 1);
    check(c == NULL && ggmlx_last_error() == NULL, "GGML_CUDA_ALLREDUCE=none: no communicator");
    comm_free(c);
    unsetenv("GGML_CUDA_ALLREDUCE");
}

/* every rank gets the exact sum; then the time of a 64 MiB reduction */
static void several_gpus(int n) {
    ggml_backend_t bs[MAX_RANKS] = { 0 };
    struct ggml_context * ctx[MAX_RANKS] = { 0 };
    ggml_backend_buffer_t buf[MAX_RANKS] = { 0 };
    struct ggml_tensor * ts[MAX_RANKS] = { 0 };
    const int64_t ne = 4099, big = (int64_t) 16 << 20;
    bool ok = true;
    for (int r = 0; r < n && ok; r++) {
        bs[r] = ggml_backend_cuda_init(r);
        ts[r] = bs[r] ? tensor_on(bs[r], GGML_TYPE_F32, ne, &ctx[r], &buf[r]) : NULL;
        ok = ts[r] && fill(ts[r], (size_t) r);
    }
    void * comm = ok ? comm_init(bs, (size_t) n) : NULL;
    char what[128];
    snprintf(what, sizeof what, "a communicator over %d GPUs", n);
    check(comm != NULL, what);
    float * got = malloc((size_t) ne * sizeof *got);
    if (comm != NULL && got != NULL) {
        ok = comm_allreduce(comm, ts);
        for (int r = 0; r < n && ok; r++) {
            ggml_backend_synchronize(bs[r]);
            ggml_backend_tensor_get(ts[r], got, 0, ggml_nbytes(ts[r]));
            for (int64_t i = 0; i < ne && ok; i++) {
                float want = 0.0f;
                for (int q = 0; q < n; q++) {
                    want += pattern((size_t) i, (size_t) q);
                }
                ok = got[i] == want;
            }
        }
        snprintf(what, sizeof what, "every one of %d ranks holds the exact sum of %lld F32", n, (long long) ne);
        check(ok, what);
        for (int r = 0; r < n; r++) {
            release(ctx[r], buf[r]);
            ts[r] = tensor_on(bs[r], GGML_TYPE_F32, big, &ctx[r], &buf[r]);
            ok = ok && ts[r] != NULL;
        }
        const int reps = 10;
        int64_t t0 = 0;
        for (int k = -1; k < reps && ok; k++) {
            if (k == 0) {
                for (int r = 0; r < n; r++) {
                    ggml_backend_synchronize(bs[r]);
                }
                t0 = ggml_time_us(); /* the first reduction warms NCCL up and is not timed */
            }
            ok = comm_allreduce(comm, ts);
        }
        for (int r = 0; r < n; r++) {
            ggml_backend_synchronize(bs[r]);
            ok = ok && ggmlx_backend_get_status(bs[r]) == GGML_STATUS_SUCCESS;
        }
        const double ms = (double) (ggml_time_us() - t0) / 1e3 / reps;
        printf("     64 MiB F32 all-reduce over %d GPUs: %.3f ms (%.1f GB/s algorithm bandwidth)\n", n, ms,
               (double) big * 4 / (ms * 1e6));
        check(ok, "timed 64 MiB all-reduces ran without an error");
    }
    free(got);
    comm_free(comm);
    for (int r = 0; r < n; r++) {
        if (ts[r]) {
            release(ctx[r], buf[r]);
        }
        ggml_backend_free(bs[r]);
    }
}

int main(void) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CUDA");
    if (reg == NULL || ggml_backend_reg_dev_count(reg) == 0) {
        fprintf(stderr, "cuda-comm-check: no CUDA device\n");
        return 2;
    }
    void * p_init = ggml_backend_reg_get_proc_address(reg, "ggml_backend_comm_init");
    void * p_free = ggml_backend_reg_get_proc_address(reg, "ggml_backend_comm_free");
    void * p_reduce = ggml_backend_reg_get_proc_address(reg, "ggml_backend_comm_allreduce_tensor");
    check(p_init && p_free && p_reduce, "the CUDA registry offers the three comm functions");
    if (!(p_init && p_free && p_reduce)) {
        return 1;
    }
    /* object to function pointers by copying: ISO C leaves the cast undefined */
    memcpy(&comm_init, &p_init, sizeof comm_init);
    memcpy(&comm_free, &p_free, sizeof comm_free);
    memcpy(&comm_allreduce, &p_reduce, sizeof comm_allreduce);

    char why[768];
    if (!ggmlx_nccl_load(why, sizeof why)) {
        printf("cuda-comm-check: no NCCL library: %s\n", why);
        return 3;
    }
    const int v = ggmlx_nccl_version();
    printf("     NCCL %d.%d.%d, %zu CUDA device%s\n", v / 10000, v / 100 % 100, v % 100, ggml_backend_reg_dev_count(reg),
           ggml_backend_reg_dev_count(reg) == 1 ? "" : "s");

    ggml_backend_t b = ggml_backend_cuda_init(0);
    check(b != NULL, "a backend on CUDA0");
    if (b == NULL) {
        return 1;
    }
    ggml_backend_t one[1] = { b };
    void * comm = comm_init(one, 1);
    check(comm != NULL, "a 1-rank communicator on CUDA0");
    if (comm != NULL) {
        const enum ggml_type types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
        const int64_t sizes[] = { 1, 1031, (int64_t) 1 << 22 };
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                one_rank_keeps_values(b, comm, types[k], sizes[s]);
            }
        }
        refusals(b, comm);
        comm_free(comm);
    }
    no_communicator(b);
    ggml_backend_free(b);

    const size_t n = ggml_backend_reg_dev_count(reg);
    if (n >= 2) {
        several_gpus(n < MAX_RANKS ? (int) n : MAX_RANKS);
    } else {
        printf("skip several GPUs: this machine has one\n");
    }
    printf("cuda-comm-check: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
