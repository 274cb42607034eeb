/*
 * bench-util.h -- what the benchmark programs share: a clock, order statistics of repeated
 * timings, and the common command line (--quick, --json, --iters N).
 */
#ifndef GGMLX_BENCH_UTIL_H
#define GGMLX_BENCH_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double) ts.tv_sec + 1e-3 * (double) ts.tv_nsec;
}

static inline int bench_cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* the median of n > 0 timings, the mean of the middle two for even n (t is sorted in place) */
static inline double bench_median(double * t, int n) {
    qsort(t, (size_t) n, sizeof *t, bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* median, 10th and 90th percentile of n timings (t is sorted in place) */
struct bench_stats {
    double median, p10, p90;
};

static inline struct bench_stats bench_stats_of(double * t, int n) {
    qsort(t, (size_t) n, sizeof *t, bench_cmp_double);
    const struct bench_stats s = { t[n / 2], t[n / 10], t[(n * 9) / 10] };
    return s;
}

/* --quick, --json, --iters N; false (usage printed) on anything else */
static inline bool bench_parse_args(int argc, char ** argv, bool * json, int * iters) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            *iters = 200;
        } else if (strcmp(argv[i], "--json") == 0) {
            *json = true;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
            *iters = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--quick] [--json] [--iters N]\n", argv[0]);
            return false;
        }
    }
    if (*iters < 10) {
        *iters = 10;
    }
    return true;
}

#endif /* GGMLX_BENCH_UTIL_H */
