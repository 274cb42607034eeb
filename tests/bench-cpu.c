/*
 * bench-cpu.c -- CPU throughput: matrix products and per-node overhead of the graph executor.
 *
 *   bench-cpu [--quick] [--json] [--runs N] [--only fma_peak|mul_mat|mul_mat_vec|mem_read|cpy|add_chain|conv]
 *
 * mul_mat: a (weights, F32/F16/BF16) [K=4096, N=4096] times b (F32) [K, M=512], 2*K*N*M flops,
 * on 1 and 2 threads; reported as GFLOP/s, best of a few runs after a warm-up. mul_mat_f32_pair:
 * two independent 1-thread F32 products of half the rows at once, the 2-thread run's ceiling.
 * mul_mat_vec: the same weights types [K=4096, N=16384] (larger than the last-level cache) times
 * one F32 column (batch 1, the token-generation case), on 1 and 2 threads; reported as GB/s of
 * weight bytes read, next to mem_read: a streaming read (four prefetched streams per thread, as a
 * GEMV walks four rows) of an equally large buffer, the bandwidth a kernel can hope for.
 * cpy: type conversions of 8M contiguous elements (F32 <-> F16, F32 -> BF16), as G elements/s.
 * fma_peak: independent F32 FMAs in registers (AVX-512 where the CPU has it, else AVX2+FMA) on 1
 * and 2 threads: what the cores deliver during this run, the ceiling for mul_mat (on a shared
 * or throttled machine it can be far below the data-sheet peak).
 * add chain: a graph of 2000 dependent ADDs of 16-element F32 vectors, built once and computed
 * repeatedly; reported as microseconds per node (what the executor costs beyond the kernels).
 * conv: a 3x3 convolution of a 64x64 image, 256 channels in and out (F32 kernel and data), as
 * upstream's im2col + mul_mat graph (ggml_conv_2d: F16 columns) and as the direct op
 * (ggml_conv_2d_direct), in GFLOP/s (2 * OW * OH * OC * IC * 9 per run), beside the F32 GEMM's.
 * --quick shrinks everything so CI can smoke-run it in a second or two; --json prints JSON
 * instead of the markdown table.
 */
#include "ggml.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct result {
    char   name[48];
    int    threads;
    double value;
    const char * unit;
    char   shape[64];
};

#define MAX_RESULTS 32

static struct result g_results[MAX_RESULTS];
static int           g_n_results;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void add_result(const char * name, int threads, double value, const char * unit, const char * shape) {
    if (g_n_results >= MAX_RESULTS) {
        return;
    }
    struct result * r = &g_results[g_n_results++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->threads = threads;
    r->value   = value;
    r->unit    = unit;
    snprintf(r->shape, sizeof r->shape, "%s", shape);
}

/* deterministic values in [-0.5, 0.5) */
static float next_value(uint64_t * s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) * (1.0 / 16777216.0)) - 0.5f;
}

static void fill(struct ggml_tensor * t, uint64_t seed) {
    const int64_t n = ggml_nelements(t);
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        const float v = next_value(&s);
        switch (t->type) {
        case GGML_TYPE_F32:  ((float *)t->data)[i] = v; break;
        case GGML_TYPE_F16:  ((ggml_fp16_t *)t->data)[i] = ggml_fp32_to_fp16(v); break;
        case GGML_TYPE_BF16: ((ggml_bf16_t *)t->data)[i] = ggml_fp32_to_bf16(v); break;
        default: break;
        }
    }
}

/* Best time of `runs` computations of gf on a pool of n_threads, after one warm-up; < 0 on failure. */
static double time_graph(struct ggml_cgraph * gf, int n_threads, int runs) {
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
    struct ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    if (tp == NULL) {
        fprintf(stderr, "ggml_threadpool_new failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        return -1.0;
    }
    struct ggml_cplan plan = ggml_graph_plan(gf, n_threads, tp);
    void * work = NULL;
    if (plan.work_size > 0) {
        work = malloc(plan.work_size);
        if (work == NULL) {
            ggml_threadpool_free(tp);
            return -1.0;
        }
        plan.work_data = (uint8_t *)work;
    }
    double best = -1.0;
    for (int r = -1; r < runs; r++) {
        const double t0 = now_s();
        const enum ggml_status st = ggml_graph_compute(gf, &plan);
        const double dt = now_s() - t0;
        if (st != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "ggml_graph_compute failed (%d): %s\n", (int)st,
                    ggmlx_last_error() ? ggmlx_last_error() : "?");
            best = -1.0;
            break;
        }
        if (r >= 0 && (best < 0.0 || dt < best)) {
            best = dt;
        }
    }
    free(work);
    ggml_threadpool_free(tp);
    return best;
}

/* one row per thread count (1, 2): work units per run over the time, in billions of unit; 1 on failure */
static int time_rate(struct ggml_cgraph * gf, int runs, const char * name, const char * shape, double work,
                     const char * unit) {
    int rc = 0;
    for (int nt = 1; nt <= 2; nt++) {
        const double t = time_graph(gf, nt, runs);
        if (t <= 0.0) {
            rc = 1;
            continue;
        }
        add_result(name, nt, work / t * 1e-9, unit, shape);
    }
    return rc;
}

static int bench_mul_mat(enum ggml_type type, int64_t K, int64_t N, int64_t M, int runs) {
    const size_t mem = ggml_row_size(type, K) * (size_t)N + (size_t)(K + N) * (size_t)M * sizeof(float) +
                       16 * ggml_tensor_overhead() + ggml_graph_overhead() + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", mem);
        return 1;
    }
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, N);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    struct ggml_tensor * c = ggml_mul_mat(ctx, a, b);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (c == NULL || gf == NULL) {
        fprintf(stderr, "building the mul_mat graph failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, c);
    fill(a, 1);
    fill(b, 2);

    char name[48], shape[64];
    snprintf(name, sizeof name, "mul_mat_%s", ggml_type_name(type));
    snprintf(shape, sizeof shape, "%lldx%lld * %lldx%lld", (long long)N, (long long)K, (long long)K, (long long)M);
    const double flops = 2.0 * (double)K * (double)N * (double)M;
    int rc = time_rate(gf, runs, name, shape, flops, "GFLOP/s");
    ggml_free(ctx);
    return rc;
}

/*
 * The machine's ceiling for the 2-thread product: two independent single-threaded products, each
 * with half of a's rows (what each thread of the 2-thread run computes), on two threads at once.
 * On a shared VM, two busy cores each run slower than one busy core (cache and memory contention
 * from neighbours); this row separates that from the kernel's own scaling.
 */
struct pair_job {
    struct ggml_cgraph * gf;
    struct ggml_cplan    plan;
    double               seconds;
    enum ggml_status     status;
};

static void * pair_run(void * arg) {
    struct pair_job * j = (struct pair_job *)arg;
    const double t0 = now_s();
    j->status = ggml_graph_compute(j->gf, &j->plan);
    j->seconds = now_s() - t0;
    return NULL;
}

static int bench_mul_mat_pair(int64_t K, int64_t N, int64_t M, int runs) {
    const int64_t half = N / 2;
    const size_t mem = 2 * ((size_t)(K * half + (K + half) * M) * sizeof(float) + 8 * ggml_tensor_overhead() +
                            ggml_graph_overhead()) + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", mem);
        return 1;
    }
    struct pair_job jobs[2];
    void * work[2] = { NULL, NULL };
    int rc = 1;
    for (int i = 0; i < 2; i++) {
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, half);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
        struct ggml_tensor * c = ggml_mul_mat(ctx, a, b);
        jobs[i].gf = ggml_new_graph(ctx);
        if (c == NULL || jobs[i].gf == NULL) {
            fprintf(stderr, "building the mul_mat pair failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
            goto out;
        }
        ggml_build_forward_expand(jobs[i].gf, c);
        fill(a, 1 + (uint64_t)i);
        fill(b, 2);
        jobs[i].plan = ggml_graph_plan(jobs[i].gf, 1, NULL);
        work[i] = malloc(jobs[i].plan.work_size);
        if (work[i] == NULL) {
            goto out;
        }
        jobs[i].plan.work_data = (uint8_t *)work[i];
    }
    double best = -1.0;
    for (int r = -1; r < runs; r++) {
        pthread_t th;
        if (pthread_create(&th, NULL, pair_run, &jobs[1]) != 0) {
            goto out;
        }
        pair_run(&jobs[0]);
        pthread_join(th, NULL);
        if (jobs[0].status != GGML_STATUS_SUCCESS || jobs[1].status != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "mul_mat pair failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
            goto out;
        }
        const double t = jobs[0].seconds > jobs[1].seconds ? jobs[0].seconds : jobs[1].seconds;
        if (r >= 0 && (best < 0.0 || t < best)) {
            best = t;
        }
    }
    char shape[96];
    snprintf(shape, sizeof shape, "2 x (%lldx%lld * %lldx%lld), 1 thread each", (long long)half, (long long)K,
             (long long)K, (long long)M);
    add_result("mul_mat_f32_pair", 2, 2.0 * 2.0 * (double)K * (double)half * (double)M / best * 1e-9, "GFLOP/s", shape);
    rc = 0;
out:
    free(work[0]);
    free(work[1]);
    ggml_free(ctx);
    return rc;
}

/* matrix-vector product: GB/s of weight bytes streamed */
static int bench_mul_mat_vec(enum ggml_type type, int64_t K, int64_t N, int runs) {
    const size_t wbytes = ggml_row_size(type, K) * (size_t)N;
    const size_t mem = wbytes + (size_t)(K + N) * sizeof(float) + 16 * ggml_tensor_overhead() +
                       ggml_graph_overhead() + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", mem);
        return 1;
    }
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, N);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, K);
    struct ggml_tensor * c = ggml_mul_mat(ctx, a, b);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (c == NULL || gf == NULL) {
        fprintf(stderr, "building the mul_mat_vec graph failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, c);
    fill(a, 5);
    fill(b, 6);

    char name[48], shape[64];
    snprintf(name, sizeof name, "mul_mat_vec_%s", ggml_type_name(type));
    snprintf(shape, sizeof shape, "%lldx%lld * %lldx1 (%.0f MiB)", (long long)N, (long long)K, (long long)K,
             (double)wbytes / (1024.0 * 1024.0));
    int rc = time_rate(gf, runs, name, shape, (double)wbytes, "GB/s");
    ggml_free(ctx);
    return rc;
}

struct read_job {
    const uint64_t * p;
    size_t           n;
    uint64_t         sum;
};

/* four streams (the part's quarters) read at once, prefetched ahead: how a GEMV walks rows */
static void * read_part(void * arg) {
    struct read_job * j = (struct read_job *)arg;
    const size_t     q = j->n / 4;
    const uint64_t * p0 = j->p, * p1 = p0 + q, * p2 = p1 + q, * p3 = p2 + q;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < q; i += 8) {
        __builtin_prefetch(p0 + i + 128);
        __builtin_prefetch(p1 + i + 128);
        __builtin_prefetch(p2 + i + 128);
        __builtin_prefetch(p3 + i + 128);
        for (size_t k = i; k < i + 8 && k < q; k++) {
            s0 += p0[k];
            s1 += p1[k];
            s2 += p2[k];
            s3 += p3[k];
        }
    }
    for (size_t i = 4 * q; i < j->n; i++) {
        s0 += j->p[i];
    }
    j->sum = s0 + s1 + s2 + s3;
    return NULL;
}

/* the bandwidth ceiling: sum a buffer of `bytes` split between n threads, best of runs */
static int bench_mem_read(size_t bytes, int runs) {
    const size_t n = bytes / sizeof(uint64_t);
    uint64_t * buf = (uint64_t *)malloc(n * sizeof(uint64_t));
    if (buf == NULL) {
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        buf[i] = i;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "%.0f MiB", (double)bytes / (1024.0 * 1024.0));
    uint64_t check = 0;
    for (int nt = 1; nt <= 2; nt++) {
        double best = -1.0;
        for (int r = -1; r < runs; r++) {
            struct read_job jobs[2];
            pthread_t       th[2];
            const double    t0 = now_s();
            for (int i = 0; i < nt; i++) {
                jobs[i].p = buf + n / (size_t)nt * (size_t)i;
                jobs[i].n = i + 1 < nt ? n / (size_t)nt : n - n / (size_t)nt * (size_t)i;
                if (i > 0 && pthread_create(&th[i], NULL, read_part, &jobs[i]) != 0) {
                    free(buf);
                    return 1;
                }
            }
            read_part(&jobs[0]);
            for (int i = 1; i < nt; i++) {
                pthread_join(th[i], NULL);
            }
            const double dt = now_s() - t0;
            for (int i = 0; i < nt; i++) {
                check += jobs[i].sum;
            }
            if (r >= 0 && (best < 0.0 || dt < best)) {
                best = dt;
            }
        }
        add_result("mem_read", nt, (double)bytes / best * 1e-9, "GB/s", shape);
    }
    free(buf);
    return check == 0 ? 1 : 0;
}

/* a contiguous conversion ts -> td of n elements: G elements/s */
static int bench_cpy(enum ggml_type ts, enum ggml_type td, int64_t n, int runs) {
    const size_t mem = ggml_row_size(ts, n) + ggml_row_size(td, n) + 16 * ggml_tensor_overhead() +
                       ggml_graph_overhead() + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        return 1;
    }
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, ts, n);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, td, n);
    struct ggml_tensor * c = ggml_cpy(ctx, a, b);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (c == NULL || gf == NULL) {
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, c);
    fill(a, 7);
    char name[48], shape[64];
    snprintf(name, sizeof name, "cpy_%s_%s", ggml_type_name(ts), ggml_type_name(td));
    snprintf(shape, sizeof shape, "%lld elements", (long long)n);
    int rc = time_rate(gf, runs, name, shape, (double)n, "Gelem/s");
    ggml_free(ctx);
    return rc;
}

/* ---- FMA throughput: 24 independent accumulators, nothing from memory ---- */

struct fma_job {
    long   iters;
    double flops;
    float  sink;
};

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void fma_avx512(struct fma_job * j) {
    __m512 c[24];
    for (int i = 0; i < 24; i++) {
        c[i] = _mm512_set1_ps((float)i);
    }
    const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    for (long k = 0; k < j->iters; k++) {
#    pragma GCC unroll 24
        for (int i = 0; i < 24; i++) {
            c[i] = _mm512_fmadd_ps(a, c[i], b);
        }
    }
    float s = 0.0f;
    for (int i = 0; i < 24; i++) {
        s += _mm512_reduce_add_ps(c[i]);
    }
    j->sink  = s;
    j->flops = (double)j->iters * 24.0 * 32.0;
}

__attribute__((target("avx2,fma"))) static void fma_avx2(struct fma_job * j) {
    __m256 c[12];
    for (int i = 0; i < 12; i++) {
        c[i] = _mm256_set1_ps((float)i);
    }
    const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    for (long k = 0; k < j->iters; k++) {
#    pragma GCC unroll 12
        for (int i = 0; i < 12; i++) {
            c[i] = _mm256_fmadd_ps(a, c[i], b);
        }
    }
    float s = 0.0f;
    for (int i = 0; i < 12; i++) {
        float v[8];
        _mm256_storeu_ps(v, c[i]);
        for (int q = 0; q < 8; q++) {
            s += v[q];
        }
    }
    j->sink  = s;
    j->flops = (double)j->iters * 12.0 * 16.0;
}
#endif

static void * fma_run(void * arg) {
    struct fma_job * j = (struct fma_job *)arg;
    j->flops = 0.0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (ggml_cpu_has_avx512()) {
        fma_avx512(j);
    } else if (ggml_cpu_has_avx2() && ggml_cpu_has_fma()) {
        fma_avx2(j);
    }
#endif
    return NULL;
}

static int bench_fma_peak(long iters, int runs) {
    for (int nt = 1; nt <= 2; nt++) {
        double best = -1.0;
        for (int r = 0; r < runs; r++) {
            struct fma_job jobs[2] = { { iters, 0.0, 0.0f }, { iters, 0.0, 0.0f } };
            pthread_t      th;
            const double   t0 = now_s();
            if (nt > 1 && pthread_create(&th, NULL, fma_run, &jobs[1]) != 0) {
                return 1;
            }
            fma_run(&jobs[0]);
            if (nt > 1) {
                pthread_join(th, NULL);
            }
            const double dt = now_s() - t0;
            const double rate = (jobs[0].flops + (nt > 1 ? jobs[1].flops : 0.0)) / dt * 1e-9;
            if (rate > best) {
                best = rate;
            }
        }
        if (best <= 0.0) {
            return 0; /* no vector FMA on this CPU: no row */
        }
        add_result("fma_peak", nt, best, "GFLOP/s", ggml_cpu_has_avx512() ? "avx512 f32" : "avx2 f32");
    }
    return 0;
}

static int bench_add_chain(int n_nodes, int64_t n_elems, int runs) {
    const size_t mem = (size_t)(n_nodes + 4) * (ggml_tensor_overhead() + (size_t)n_elems * sizeof(float) + 64) +
                       ggml_graph_overhead_custom((size_t)n_nodes + 16, false) + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", mem);
        return 1;
    }
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_elems);
    struct ggml_tensor * y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n_elems);
    fill(x, 3);
    fill(y, 4);
    struct ggml_tensor * cur = x;
    for (int i = 0; i < n_nodes && cur != NULL; i++) {
        cur = ggml_add(ctx, cur, y);
    }
    struct ggml_cgraph * gf = cur ? ggml_new_graph_custom(ctx, (size_t)n_nodes + 16, false) : NULL;
    if (gf == NULL) {
        fprintf(stderr, "building the add chain failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, cur);

    char shape[64];
    snprintf(shape, sizeof shape, "%d nodes x %lld f32", n_nodes, (long long)n_elems);
    int rc = 0;
    for (int nt = 1; nt <= 2; nt++) {
        const double t = time_graph(gf, nt, runs);
        if (t <= 0.0) {
            rc = 1;
            continue;
        }
        add_result("add_chain", nt, t / (double)n_nodes * 1e6, "us/node", shape);
    }
    ggml_free(ctx);
    return rc;
}

static int bench_conv(bool direct, int64_t C, int64_t HW, int runs) {
    const size_t mem = (size_t) (9 * C * C + HW * HW * C * 4) * sizeof(float) + (size_t) (HW * HW * 9 * C) * 2 +
                       64 * ggml_tensor_overhead() + ggml_graph_overhead() + (4u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        fprintf(stderr, "ggml_init(%zu bytes) failed\n", mem);
        return 1;
    }
    struct ggml_tensor * k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 3, 3, C, C);
    struct ggml_tensor * x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, HW, HW, C, 1);
    struct ggml_tensor * y = direct ? ggml_conv_2d_direct(ctx, k, x, 1, 1, 1, 1, 1, 1)
                                    : ggml_conv_2d(ctx, k, x, 1, 1, 1, 1, 1, 1);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (y == NULL || gf == NULL) {
        fprintf(stderr, "building the conv graph failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, y);
    fill(k, 3);
    fill(x, 4);
    char shape[64];
    snprintf(shape, sizeof shape, "3x3, %lld ch, %lldx%lld", (long long) C, (long long) HW, (long long) HW);
    const double flops = 2.0 * (double) (HW * HW) * (double) C * (double) C * 9.0;
    int rc = time_rate(gf, runs, direct ? "conv_2d_direct_f32" : "conv_2d_im2col_f32", shape, flops, "GFLOP/s");
    ggml_free(ctx);
    return rc;
}

static void print_markdown(void) {
    printf("| benchmark | shape | threads | result |\n");
    printf("|---|---|---:|---:|\n");
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("| %s | %s | %d | %.3f %s |\n", r->name, r->shape, r->threads, r->value, r->unit);
    }
}

static void print_json(void) {
    printf("{\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("    {\"name\": \"%s\", \"shape\": \"%s\", \"threads\": %d, \"value\": %.6g, \"unit\": \"%s\"}%s\n", r->name,
               r->shape, r->threads, r->value, r->unit, i + 1 < g_n_results ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char ** argv) {
    bool quick = false, json = false;
    const char * only = NULL;
    int  runs  = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1) {
                runs = 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--json] [--runs N] [--only GROUP]\n", argv[0]);
            return 2;
        }
    }
    ggml_cpu_init();

    const int64_t K = quick ? 256 : 4096, N = quick ? 256 : 4096, M = quick ? 64 : 512;
    const int     chain = quick ? 200 : 2000;
    if (quick) {
        runs = runs < 3 ? runs : 3;
    }
    int rc = 0;
    const enum ggml_type types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
#define WANT(group) (only == NULL || strcmp(only, group) == 0)
    if (WANT("fma_peak")) {
        rc |= bench_fma_peak(quick ? 100000L : 4000000L, 3);
    }
    for (size_t i = 0; WANT("mul_mat") && i < sizeof types / sizeof types[0]; i++) {
        rc |= bench_mul_mat(types[i], K, N, M, runs);
    }
    if (WANT("mul_mat")) {
        rc |= bench_mul_mat_pair(K, N, M, runs);
    }
    const int64_t vn = quick ? 1024 : 16384;
    for (size_t i = 0; WANT("mul_mat_vec") && i < sizeof types / sizeof types[0]; i++) {
        rc |= bench_mul_mat_vec(types[i], K, vn, quick ? 2 : 10);
    }
    if (WANT("mem_read")) {
        rc |= bench_mem_read(ggml_row_size(GGML_TYPE_F32, K) * (size_t)vn, quick ? 2 : 10);
    }
    if (WANT("cpy")) {
        const int64_t cn = quick ? 65536 : 8 << 20;
        rc |= bench_cpy(GGML_TYPE_F32, GGML_TYPE_F16, cn, quick ? 2 : 5);
        rc |= bench_cpy(GGML_TYPE_F16, GGML_TYPE_F32, cn, quick ? 2 : 5);
        rc |= bench_cpy(GGML_TYPE_F32, GGML_TYPE_BF16, cn, quick ? 2 : 5);
    }
    if (WANT("add_chain")) {
        rc |= bench_add_chain(chain, 16, quick ? 3 : 20);
    }
    if (WANT("conv")) {
        rc |= bench_conv(false, quick ? 32 : 256, quick ? 16 : 64, quick ? 2 : 3);
        rc |= bench_conv(true, quick ? 32 : 256, quick ? 16 : 64, quick ? 2 : 3);
    }
#undef WANT

    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    return rc;
}
