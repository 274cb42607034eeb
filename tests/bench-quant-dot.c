/*
 * bench-quant-dot.c -- how fast each type's CPU dot product (ggml_get_type_traits_cpu()->vec_dot)
 * streams its weights: one thread runs vec_dot of every row of a 16384 x 4096 matrix with one
 * activation row, and the result is the weight bytes read per second (the median of the passes).
 * Each kernel variant is forced through GGMLX_MATMUL_KERNEL (portable, avx2, avx512).
 *
 *   bench-quant-dot [--quick] [--iters N] [--rows N] [--type NAME] [--path NAME]
 *
 * The weights are random bytes with every byte below 0x3c, so that each half-precision field is
 * a finite number (and MXFP4's exponents are set near 2^0, as subnormal scales would be slow):
 * the kernels' time does not otherwise depend on the values.
 */
#include "ggml.h"
#include "ggml-cpu.h"

#include "bench-util.h"

#include <stdint.h>

#define BQ_COLS 4096

static uint64_t bq_next(uint64_t * s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double bq_pass_s(ggml_vec_dot_t dot, const uint8_t * w, size_t row_bytes, int rows, const void * act,
                        float * out) {
    const double t0 = bench_now_us();
    for (int r = 0; r < rows; r++) {
        dot(BQ_COLS, &out[r], 0, w + (size_t)r * row_bytes, 0, act, 0, 1);
    }
    return (bench_now_us() - t0) * 1e-6;
}

int main(int argc, char ** argv) {
    int          iters = 3, rows = 16384;
    const char * only_type = NULL;
    const char * only_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            iters = 1;
            rows  = 2048;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
            rows = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
            only_type = argv[++i];
        } else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc) {
            only_path = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--quick] [--iters N] [--rows N] [--type NAME] [--path portable|avx2|avx512]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1 || rows < 1) {
        fprintf(stderr, "%s: --iters and --rows must be positive\n", argv[0]);
        return 2;
    }

    const char * paths[3] = { "portable", "avx2", "avx512" };
    const bool   have[3]  = { true, ggml_cpu_has_avx2() && ggml_cpu_has_fma(), ggml_cpu_has_avx512() != 0 };

    float * act_f = malloc(sizeof(float) * BQ_COLS);
    float * out   = malloc(sizeof(float) * (size_t)rows);
    if (act_f == NULL || out == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    uint64_t seed = 12345;
    for (int i = 0; i < BQ_COLS; i++) {
        act_f[i] = (float)((int64_t)(bq_next(&seed) >> 40) - (1 << 23)) / (float)(1 << 23);
    }

    printf("vec_dot over %d x %d weights, 1 thread, median of %d passes (GB/s of weight bytes)\n", rows, BQ_COLS, iters);
    printf("%-10s %10s %10s %10s\n", "type", paths[0], paths[1], paths[2]);
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const enum ggml_type type = (enum ggml_type)t;
        if (!ggml_is_quantized(type) || ggml_blck_size(type) == 0 || BQ_COLS % ggml_blck_size(type) != 0) {
            continue;
        }
        if (only_type != NULL && strcmp(only_type, ggml_type_name(type)) != 0) {
            continue;
        }
        unsetenv("GGMLX_MATMUL_KERNEL");
        const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu(type);
        if (tc == NULL || tc->vec_dot == NULL) {
            continue;
        }
        const size_t row_bytes = ggml_row_size(type, BQ_COLS);
        uint8_t *    w         = malloc(row_bytes * (size_t)rows);
        void *       act       = malloc(ggml_row_size(tc->vec_dot_type, BQ_COLS));
        if (w == NULL || act == NULL) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (size_t k = 0; k < row_bytes * (size_t)rows; k++) {
            w[k] = (uint8_t)(bq_next(&seed) % 0x3c);
        }
        if (type == GGML_TYPE_MXFP4) { /* its E8M0 exponent byte: a scale near 1, not a subnormal one */
            for (size_t b = 0; b < row_bytes * (size_t)rows; b += ggml_type_size(type)) {
                w[b] = 120 + (uint8_t)(bq_next(&seed) % 8);
            }
        }
        ggml_get_type_traits_cpu(tc->vec_dot_type)->from_float(act_f, act, BQ_COLS);

        printf("%-10s", ggml_type_name(type));
        for (int p = 0; p < 3; p++) {
            if (!have[p] || (only_path != NULL && strcmp(only_path, paths[p]) != 0)) {
                printf(" %10s", "-");
                continue;
            }
            setenv("GGMLX_MATMUL_KERNEL", paths[p], 1);
            const ggml_vec_dot_t dot = ggml_get_type_traits_cpu(type)->vec_dot;
            double               times[64];
            const int            n_t = iters < 64 ? iters : 64;
            (void)bq_pass_s(dot, w, row_bytes, rows, act, out); /* warm-up: page faults, caches */
            for (int k = 0; k < n_t; k++) {
                times[k] = bq_pass_s(dot, w, row_bytes, rows, act, out);
            }
            const double med = bench_median(times, n_t);
            printf(" %10.2f", (double)row_bytes * rows / med * 1e-9);
            fflush(stdout);
        }
        printf("\n");
        free(w);
        free(act);
    }
    unsetenv("GGMLX_MATMUL_KERNEL");
    free(act_f);
    free(out);
    return 0;
}
