/*
 * bench-mulmat-quant.c -- mul_mat of quantized 4096x4096 weights by 512 F32 columns through the
 * public API only (ggml.h, ggml-alloc.h, ggml-backend.h, ggml-cpu.h), so that the same program
 * times upstream ggml and ggmlx. The weights go in the CPU buffer, or with --repack in the CPU
 * backend's CPU_REPACK extra buffer type where the library has one (upstream repacks some types
 * into interleaved layouts there). Prints the best of 5: wall GFLOP/s and GFLOP per CPU second.
 *
 * Build against an installed ggml (PREFIX: upstream's or ggmlx's install prefix):
 *   cc -O2 -I$PREFIX/include scripts/bench-mulmat-quant.c -L$PREFIX/lib -Wl,-rpath,$PREFIX/lib \
 *      -lggml -lggml-base -lggml-cpu -o bench-mulmat-quant
 * Usage: bench-mulmat-quant TYPE THREADS [--repack]
 * Use --repack only for types the library repacks (upstream: Q4_0, IQ4_NL, Q4_K, Q2_K on an
 * AVX-512 x86): upstream's CPU_REPACK buffer crashes on the others.
 */
#define _POSIX_C_SOURCE 200809L

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static ggml_backend_buffer_type_t repack_buft(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_dev_get_extra_bufts_t get =
        (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    for (ggml_backend_buffer_type_t * e = get != NULL ? get(dev) : NULL; e != NULL && *e != NULL; e++) {
        if (strcmp(ggml_backend_buft_name(*e), "CPU_REPACK") == 0) {
            return *e;
        }
    }
    return NULL;
}

int main(int argc, char ** argv) {
    const int64_t K = 4096, N = 4096, M = 512;
    if (argc < 3) {
        fprintf(stderr, "usage: %s TYPE THREADS [--repack]\n", argv[0]);
        return 2;
    }
    enum ggml_type type = GGML_TYPE_COUNT;
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        const char * name = ggml_type_name((enum ggml_type) i);
        if (name != NULL && strcmp(name, argv[1]) == 0) {
            type = (enum ggml_type) i;
        }
    }
    const int nth = atoi(argv[2]);
    const bool repack = argc > 3 && strcmp(argv[3], "--repack") == 0;
    if (type == GGML_TYPE_COUNT || nth < 1) {
        fprintf(stderr, "unknown type %s or bad thread count\n", argv[1]);
        return 2;
    }
    int rc = 1;
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, nth);
    ggml_backend_buffer_type_t buft = ggml_backend_cpu_buffer_type();
    if (repack) {
        buft = repack_buft(ggml_backend_get_device(be));
        if (buft == NULL) {
            printf("%s: no CPU_REPACK buffer type\n", argv[1]);
            ggml_backend_free(be);
            return 0;
        }
    }
    const struct ggml_init_params ip = { ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true };
    struct ggml_context * cw = ggml_init(ip);
    struct ggml_context * cx = ggml_init(ip);
    float * f = malloc(sizeof(float) * (size_t) (K * N));
    void * q = malloc(ggml_row_size(type, K) * (size_t) N);
    ggml_backend_buffer_t bw = NULL, bx = NULL;
    if (cw == NULL || cx == NULL || f == NULL || q == NULL) {
        goto err_free;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < K * N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        f[i] = (float) (s >> 40) / (float) (1 << 24) - 0.5f;
    }
    struct ggml_tensor * a = ggml_new_tensor_2d(cw, type, K, N);
    bw = ggml_backend_alloc_ctx_tensors_from_buft(cw, buft);
    if (bw == NULL || ggml_quantize_chunk(type, f, q, 0, N, K, NULL) == 0) {
        fprintf(stderr, "%s: no weights\n", argv[1]);
        goto err_free;
    }
    ggml_backend_tensor_set(a, q, 0, ggml_nbytes(a));
    struct ggml_tensor * b = ggml_new_tensor_2d(cx, GGML_TYPE_F32, K, M);
    struct ggml_tensor * c = ggml_mul_mat(cx, a, b);
    struct ggml_cgraph * gf = ggml_new_graph(cx);
    ggml_build_forward_expand(gf, c);
    bx = ggml_backend_alloc_ctx_tensors(cx, be);
    if (bx == NULL) {
        goto err_free;
    }
    ggml_backend_tensor_set(b, f, 0, ggml_nbytes(b));
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "%s: compute failed\n", argv[1]);
            goto err_free;
        }
        const double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        best = dt < best ? dt : best;
        best_cpu = dc < best_cpu ? dc : best_cpu;
    }
    const double flop = 2.0 * (double) K * (double) N * (double) M;
    printf("%-7s %-7s threads %d: %8.2f ms %7.1f GFLOP/s %7.1f GFLOP/cpu-s\n", argv[1], repack ? "repack" : "plain",
           nth, best * 1e3, flop / best / 1e9, flop / best_cpu / 1e9);
    rc = 0;
err_free:
    if (bx != NULL) {
        ggml_backend_buffer_free(bx);
    }
    if (bw != NULL) {
        ggml_backend_buffer_free(bw);
    }
    free(q);
    free(f);
    if (cx != NULL) {
        ggml_free(cx);
    }
    if (cw != NULL) {
        ggml_free(cw);
    }
    ggml_backend_free(be);
    return rc;
}
