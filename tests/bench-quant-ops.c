/*
 * bench-quant-ops.c -- MUL_MAT with quantized weights on the CPU, through ggml_graph_compute:
 *
 *   bench-quant-ops [--quick] [--runs N] [--type NAME]...
 *
 * mul_mat_vec: weights [K=4096, N=16384] (larger than the last-level cache) times one F32 vector,
 * reported as GB/s of weight bytes (the product streams the weights once); mul_mat: weights
 * [4096, 4096] times 512 F32 rows, as GFLOP/s (2*K*N*M). Each on 1 and 2 threads, best of a few
 * runs after a warm-up. F16 weights run too, as the float baseline. Prints a markdown table.
 */
#include "ggml-cpu.h"
#include "ggml.h"
#include "ggmlx.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* F32 values in [-0.5, 0.5) into t (F32 or F16 as they are, a quantized type through its reference quantizer) */
static int fill(struct ggml_tensor * t, uint64_t seed) {
    const int64_t n = ggml_nelements(t);
    float * v = malloc((size_t) n * sizeof *v);
    if (v == NULL) {
        return 1;
    }
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float) ((s >> 40) * (1.0 / 16777216.0)) - 0.5f;
    }
    if (t->type == GGML_TYPE_F32) {
        memcpy(t->data, v, (size_t) n * sizeof *v);
    } else if (t->type == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(v, t->data, n);
    } else {
        ggml_get_type_traits(t->type)->from_float_ref(v, t->data, n);
    }
    free(v);
    return 0;
}

/* best time of runs computations on n_threads, after a warm-up; < 0 on failure */
static double time_graph(struct ggml_cgraph * gf, int n_threads, int runs) {
    struct ggml_cplan plan = ggml_graph_plan(gf, n_threads, NULL);
    void * work = plan.work_size > 0 ? malloc(plan.work_size) : NULL;
    if (plan.work_size > 0 && work == NULL) {
        return -1.0;
    }
    plan.work_data = work;
    double best = -1.0;
    for (int r = -1; r < runs; r++) {
        const double t0 = now_s();
        if (ggml_graph_compute(gf, &plan) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "ggml_graph_compute: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
            best = -1.0;
            break;
        }
        const double dt = now_s() - t0;
        if (r >= 0 && (best < 0.0 || dt < best)) {
            best = dt;
        }
    }
    free(work);
    return best;
}

/* one table row per thread count; 1 on failure */
static int bench(enum ggml_type type, int64_t K, int64_t N, int64_t M, int runs) {
    const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(type);
    if (type != GGML_TYPE_F16 && (ggml_get_type_traits(type)->from_float_ref == NULL || tc == NULL || tc->vec_dot == NULL)) {
        printf("| mul_mat_%s | - | no quantizer or dot product in this build | |\n", ggml_type_name(type));
        return 0;
    }
    const size_t wbytes = ggml_row_size(type, K) * (size_t) N;
    const size_t mem = wbytes + (size_t) (K * M + N * M) * sizeof(float) + 8 * ggml_tensor_overhead() +
                       ggml_graph_overhead() + (1u << 20);
    struct ggml_init_params ip = { mem, NULL, false };
    struct ggml_context * ctx = ggml_init(ip);
    if (ctx == NULL) {
        return 1;
    }
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, type, K, N);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    struct ggml_tensor * c = ggml_mul_mat(ctx, a, b);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (c == NULL || gf == NULL || fill(a, 5) != 0 || fill(b, 6) != 0) {
        fprintf(stderr, "building mul_mat %s failed: %s\n", ggml_type_name(type),
                ggmlx_last_error() ? ggmlx_last_error() : "?");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, c);
    int rc = 0;
    for (int nt = 1; nt <= 2; nt++) {
        const double t = time_graph(gf, nt, runs);
        if (t <= 0.0) {
            rc = 1;
            continue;
        }
        if (M == 1) {
            printf("| mul_mat_vec_%s | %d | %.2f GB/s | %lldx%lld * %lldx1 (%.0f MiB) |\n", ggml_type_name(type), nt,
                   (double) wbytes / t * 1e-9, (long long) N, (long long) K, (long long) K,
                   (double) wbytes / (1024.0 * 1024.0));
        } else {
            printf("| mul_mat_%s | %d | %.1f GFLOP/s | %lldx%lld * %lldx%lld |\n", ggml_type_name(type), nt,
                   2.0 * (double) K * (double) N * (double) M / t * 1e-9, (long long) N, (long long) K, (long long) K,
                   (long long) M);
        }
        fflush(stdout);
    }
    ggml_free(ctx);
    return rc;
}

int main(int argc, char ** argv) {
    bool quick = false;
    int  runs  = 5;
    enum ggml_type types[16];
    int  n_types = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
            runs = runs < 1 ? 1 : runs;
        } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc && n_types < 16) {
            const char * name = argv[++i];
            int t = 0;
            while (t < GGML_TYPE_COUNT && strcmp(ggml_type_name((enum ggml_type) t), name) != 0) {
                t++;
            }
            if (t == GGML_TYPE_COUNT) {
                fprintf(stderr, "unknown type %s\n", name);
                return 2;
            }
            types[n_types++] = (enum ggml_type) t;
        } else {
            fprintf(stderr, "usage: %s [--quick] [--runs N] [--type NAME]...\n", argv[0]);
            return 2;
        }
    }
    if (n_types == 0) {
        types[n_types++] = GGML_TYPE_F16;
        types[n_types++] = GGML_TYPE_Q4_0;
        types[n_types++] = GGML_TYPE_Q8_0;
    }
    ggml_cpu_init();
    const int64_t K = quick ? 256 : 4096, N = quick ? 256 : 4096, M = quick ? 64 : 512, VN = quick ? 1024 : 16384;
    printf("| bench | threads | rate | shape |\n| --- | ---: | ---: | --- |\n");
    int rc = 0;
    for (int i = 0; i < n_types; i++) {
        rc |= bench(types[i], K, VN, 1, quick ? 2 : 10);
    }
    for (int i = 0; i < n_types; i++) {
        rc |= bench(types[i], K, N, M, quick ? 2 : runs);
    }
    return rc;
}
