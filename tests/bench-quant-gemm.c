/*
 * bench-quant-gemm.c -- GFLOP/s of ggmlx_qgemm (the quantized batched GEMM of mul_mat):
 * 4096 x 4096 weights times 512 activation rows (a prompt batch), per weight type, kernel path
 * (GGMLX_MATMUL_KERNEL: amx where usable, avx512, portable) and thread count (1 or 2, the weights' rows split between pthreads as
 * mul_mat splits them). The data are random blocks with sane scales: speed does not depend on
 * the values. The portable path runs on 1/8 of the rows (it is ~50x slower); GFLOP/s counts
 * what it ran. --quick: 1024 weight rows and one timed run; --type NAME: that type only. The
 * best of --iters runs is reported (the machine may be shared), with the flops per CPU second
 * of the process (per core: threads x that is what the cores would do alone).
 */
#include "bench-util.h"
#include "ggml-math.h"
#include "quant/qgemm-impl.h"
#include "quant/qgemm.h"
#include "quant/quant-blocks.h"

#include <pthread.h>
#include <stdint.h>

struct job {
    enum ggml_type t;
    int64_t k, n, m;
    const char * a;
    size_t lda;
    const char * b;
    size_t ldb;
    float * c;
    size_t ldc;
    bool ok;
};

static void * job_run(void * p) {
    struct job * j = p;
    j->ok = ggmlx_qgemm(j->t, j->k, j->a, j->lda, j->n, j->b, j->ldb, j->m, j->c, j->ldc);
    return NULL;
}

/* CPU seconds of the whole process: with other programs on the machine, flops per CPU second
 * stays meaningful when wall time does not */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static uint64_t rng = 0x1234567;

static uint8_t rnd8(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t) (rng >> 56);
}

/* random bytes, then every half-precision field a plausible scale (0.01): the kernels never branch on values */
static void fill(char * p, size_t size) {
    for (size_t i = 0; i < size; i++) {
        p[i] = (char) rnd8();
    }
}

static void fix_scales(enum ggml_type t, char * a, size_t nblocks, size_t bsize) {
    const ggmlx_half h = ggmlx_fp32_to_fp16(0.01f);
    for (size_t i = 0; i < nblocks; i++) {
        char * x = a + i * bsize;
        switch (t) {
            case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q8_0: case GGML_TYPE_IQ4_NL:
            case GGML_TYPE_IQ4_XS:
                memcpy(x, &h, 2);
                break;
            case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K:
                memcpy(x, &h, 2);
                memcpy(x + 2, &h, 2);
                break;
            case GGML_TYPE_Q2_K: memcpy(x + bsize - 4, &h, 2); memcpy(x + bsize - 2, &h, 2); break;
            case GGML_TYPE_Q3_K: case GGML_TYPE_Q6_K: memcpy(x + bsize - 2, &h, 2); break;
            case GGML_TYPE_Q8_K: { const float d = 0.01f; memcpy(x, &d, 4); break; }
            default: break;
        }
    }
}

int main(int argc, char ** argv) {
    bool json = false, quick = false;
    int iters = 3;
    const char * only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
            iters = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--quick] [--json] [--iters N (best of N, default 3)] [--type NAME]\n", argv[0]);
            return 2;
        }
    }
    iters = iters < 1 ? 1 : iters;
    const int64_t K = 4096, M = 512, N = quick ? 1024 : 4096;
    static const enum ggml_type types[] = {
        GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
        GGML_TYPE_Q5_1, GGML_TYPE_Q5_K, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
    };
    static const char * paths[] = { "amx", "avx512", "portable" };
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    const bool amx = ggmlx_qgemm_amx_available();
#else
    const bool amx = false;
#endif
    if (!amx && !json) {
        printf("(amx: not usable on this machine, not timed)\n");
    }
    float * c = malloc(sizeof(float) * (size_t) (N * M));
    if (c == NULL) {
        return 1;
    }
    if (!json) {
        printf("%-8s %-9s %8s %10s %8s %12s\n", "type", "path", "threads", "ms", "GFLOP/s", "GFLOP/cpu-s");
    }
    for (size_t it = 0; it < sizeof types / sizeof types[0]; it++) {
        const enum ggml_type t = types[it];
        if (only != NULL && strcmp(only, ggml_type_name(t)) != 0) {
            continue;
        }
        const enum ggml_type bt = ggml_get_type_traits(t)->blck_size == QK_K ? GGML_TYPE_Q8_K
                                  : (t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_1) ? GGML_TYPE_Q8_1
                                                                                : GGML_TYPE_Q8_0;
        const size_t lda = ggml_row_size(t, K), ldb = ggml_row_size(bt, K);
        char * a = malloc(lda * (size_t) N);
        char * b = malloc(ldb * (size_t) M);
        if (a == NULL || b == NULL) {
            return 1;
        }
        fill(a, lda * (size_t) N);
        fix_scales(t, a, lda * (size_t) N / ggml_type_size(t), ggml_type_size(t));
        fill(b, ldb * (size_t) M);
        fix_scales(bt, b, ldb * (size_t) M / ggml_type_size(bt), ggml_type_size(bt));
        for (size_t ip = 0; ip < sizeof paths / sizeof paths[0]; ip++) {
            if (strcmp(paths[ip], "amx") == 0 && !amx) {
                continue;
            }
            setenv("GGMLX_MATMUL_KERNEL", paths[ip], 1);
            const int64_t n = strcmp(paths[ip], "portable") == 0 ? N / 8 : N;
            for (int nth = 1; nth <= 2; nth++) {
                double best = 1e30, best_cpu = 1e30;
                bool ok = true;
                for (int rep = 0; rep < iters; rep++) {
                    struct job jobs[2];
                    pthread_t th[2];
                    /* split at a multiple of 16 rows: the kernels' panel height */
                    const int64_t split = nth == 1 ? n : (n / 2 + 15) / 16 * 16;
                    const double t0 = bench_now_us(), c0 = cpu_s();
                    for (int i = 0; i < nth; i++) {
                        const int64_t i0 = i == 0 ? 0 : split, i1 = i == 0 ? split : n;
                        jobs[i] = (struct job) { t, K, i1 - i0, M, a + (size_t) i0 * lda, lda, b, ldb, c + i0, (size_t) N, false };
                        pthread_create(&th[i], NULL, job_run, &jobs[i]);
                    }
                    for (int i = 0; i < nth; i++) {
                        pthread_join(th[i], NULL);
                        ok &= jobs[i].ok;
                    }
                    const double dt = bench_now_us() - t0, dc = cpu_s() - c0;
                    best = dt < best ? dt : best;
                    best_cpu = dc < best_cpu ? dc : best_cpu;
                }
                const double flop = 2.0 * (double) n * (double) M * (double) K;
                const double gflops = ok ? flop / (best * 1e3) : 0.0, gflops_cpu = ok ? flop / (best_cpu * 1e9) : 0.0;
                if (json) {
                    printf("{\"type\":\"%s\",\"path\":\"%s\",\"threads\":%d,\"ms\":%.3f,\"gflops\":%.1f,"
                           "\"gflops_per_cpu_s\":%.1f,\"ok\":%s}\n",
                           ggml_type_name(t), paths[ip], nth, best / 1e3, gflops, gflops_cpu, ok ? "true" : "false");
                } else {
                    printf("%-8s %-9s %8d %10.2f %8.1f %12.1f%s\n", ggml_type_name(t), paths[ip], nth, best / 1e3, gflops,
                           gflops_cpu, ok ? "" : "  (declined)");
                }
                fflush(stdout);
            }
        }
        free(a);
        free(b);
    }
    free(c);
    return 0;
}
