/*
 * bench-quant-client.c -- quantized matrix products and quantization error, through the public
 * API only (ggml.h, ggml-backend.h, ggml-cpu.h), so that scripts/bench-upstream.sh can build it
 * against ggmlx and against upstream's ggml and compare the two on the same data.
 *
 *   bench-quant-client [--types a,b,...] [--threads N] [--runs N] [--rows N] [--cols N]
 *                      [--no-mm] [--no-rt] [--mem-read] [--dump DIR]
 *
 * For each quantized type: a rows x 4096 weight (default 16384 rows) is quantized with
 * ggml_quantize_chunk from Gaussian data (256 distinct rows, repeated: the timing only needs the
 * bytes, and quantizing 64M elements with the codebook formats would take minutes) and multiplied
 * on the CPU backend by one F32 column ("mv", reported as GB/s of weight bytes) and by `cols`
 * columns (default 512, "mm", GFLOP/s); the median of 4 x `runs` (mv) or min(runs, 3) (mm) timed
 * runs after a warm-up.
 * "rt": the relative RMS error sqrt(sum (dq(q(x)) - x)^2 / sum x^2) of a round trip through
 * ggml_quantize_chunk and to_float on 64 x 4096 Gaussian and Student-t(3) values, with an
 * importance matrix (the column means of x^2) for the types that cannot go without one; --dump
 * writes the quantized bytes to DIR/TYPE.DATA.bin.
 * "mem_read": the fastest streaming read this program knows (mem-read.h), the median and the best
 * of 4 x `runs` reads, of a buffer as large as the Q8_0 weight (the ceiling for that product:
 * repeated products, like repeated reads, find part of it still in the last-level cache) and of
 * 512 MiB (16x the 32 MiB L3 of the Zen 5 VM: the memory's own bandwidth).
 *
 * One result a line, for the script to parse:
 *   mv TYPE GBPS | mm TYPE GFLOPS | rt TYPE DATA RELRMS BYTES_HASH
 *   | mem_read THREADS MEDIAN_GBPS BEST_GBPS LOADS MIB
 *   | TYPE n/a REASON
 */
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include "mem-read.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Declared as upstream declares them and bound weakly: a library without them still links, and
 * the types that need them are reported n/a. */
size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix);
#pragma weak ggml_quantize_chunk

enum { K = 4096, UNIQ_ROWS = 256, RT_ROWS = 64 };

static const char * const k_mm_types[] = {
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq2_xxs", "iq2_xs", "iq2_s",
    "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl", "iq4_xs", "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0",
};
/* the types whose quantizer has no Python oracle: their error is compared with upstream's */
static const char * const k_rt_types[] = {
    "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s",
    "iq1_s", "iq1_m", "iq4_nl", "iq4_xs", "nvfp4", "q1_0", "q2_0",
};
/* ggml_quantize_requires_imatrix's list, fixed here so both libraries get the same inputs */
static const char * const k_need_imatrix[] = { "iq2_xxs", "iq2_xs", "iq1_s" };

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

struct opts {
    const char * types;
    const char * dump;
    int          threads, runs, rows, cols;
    bool         mm, rt, mem_read;
};

/* ---- data ------------------------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t * s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t * s) {
    return ((double) (splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double gaussian(uint64_t * s) {
    return sqrt(-2.0 * log(uniform01(s))) * cos(6.283185307179586 * uniform01(s));
}

/* Student-t with 3 degrees of freedom: heavy tails, as weights with outliers have */
static double student_t3(uint64_t * s) {
    const double z = gaussian(s), a = gaussian(s), b = gaussian(s), c = gaussian(s);
    return z / sqrt((a * a + b * b + c * c) / 3.0);
}

static void fill(float * x, size_t n, uint64_t seed, bool heavy) {
    for (size_t i = 0; i < n; i++) {
        x[i] = (float) (heavy ? student_t3(&seed) : gaussian(&seed));
    }
}

static bool in_list(const char * name, const char * const * list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (strcasecmp(name, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* selected: comma-separated names, NULL for all */
static bool selected(const char * name, const char * sel) {
    if (sel == NULL) {
        return true;
    }
    const size_t n = strlen(name);
    for (const char * p = sel; *p;) {
        const char * e = strchr(p, ',');
        const size_t l = e ? (size_t) (e - p) : strlen(p);
        if (l == n && strncasecmp(p, name, n) == 0) {
            return true;
        }
        p += l + (e != NULL);
    }
    return false;
}

/* the type of that name in the library this was built against, or GGML_TYPE_COUNT */
static enum ggml_type type_by_name(const char * name) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const struct ggml_type_traits * tr = ggml_get_type_traits((enum ggml_type) t);
        if (tr != NULL && tr->type_name != NULL && tr->blck_size > 0 && strcasecmp(tr->type_name, name) == 0) {
            return (enum ggml_type) t;
        }
    }
    return GGML_TYPE_COUNT;
}

static float * make_imatrix(const float * x, int64_t nrows) {
    float * w = calloc(K, sizeof(float));
    if (w == NULL) {
        return NULL;
    }
    for (int64_t r = 0; r < nrows; r++) {
        for (int j = 0; j < K; j++) {
            w[j] += x[r * K + j] * x[r * K + j] / (float) nrows;
        }
    }
    return w;
}

/* quantizes nrows rows of K; NULL when the library cannot (message printed) */
static void * quantize(const char * name, enum ggml_type t, const float * x, int64_t nrows) {
    const size_t rs  = ggml_row_size(t, K);
    void *       q   = malloc(rs * (size_t) nrows);
    float *      imx = NULL;
    if (q == NULL) {
        printf("%s n/a out of memory\n", name);
        return NULL;
    }
    if (in_list(name, k_need_imatrix, COUNT_OF(k_need_imatrix))) {
        imx = make_imatrix(x, nrows);
        if (imx == NULL) {
            printf("%s n/a out of memory\n", name);
            goto err_q;
        }
    }
    if (&ggml_quantize_chunk == NULL) {
        printf("%s n/a no ggml_quantize_chunk\n", name);
        goto err_imx;
    }
    if (ggml_quantize_chunk(t, x, q, 0, nrows, K, imx) != rs * (size_t) nrows) {
        printf("%s n/a ggml_quantize_chunk does not take it\n", name);
        goto err_imx;
    }
    free(imx);
    return q;

err_imx:
    free(imx);
err_q:
    free(q);
    return NULL;
}

/* ---- timing ---------------------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static int cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* median seconds of `runs` computes after a warm-up; negative when the compute fails */
static double time_graph(ggml_backend_t be, struct ggml_cgraph * gf, int runs) {
    double t[64];
    if (runs > 64) {
        runs = 64;
    }
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
        return -1.0;
    }
    for (int r = 0; r < runs; r++) {
        const double t0 = now_s();
        if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
            return -1.0;
        }
        t[r] = now_s() - t0;
    }
    qsort(t, (size_t) runs, sizeof t[0], cmp_double);
    return runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
}

/* ---- mul_mat --------------------------------------------------------------------------------- */

static int bench_mm(ggml_backend_t be, const char * name, const struct opts * o) {
    const enum ggml_type t = type_by_name(name);
    if (t == GGML_TYPE_COUNT) {
        printf("%s n/a not a type of this library\n", name);
        return 0;
    }
    float * src = malloc(sizeof(float) * K * UNIQ_ROWS);
    if (src == NULL) {
        fprintf(stderr, "bench-quant-client: out of memory\n");
        return 1;
    }
    fill(src, (size_t) K * UNIQ_ROWS, 0x5EED0001u, false);
    void * q = quantize(name, t, src, UNIQ_ROWS);
    free(src);
    if (q == NULL) {
        return 0;
    }

    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    struct ggml_context *   ctx = ggml_init(ip);
    ggml_backend_buffer_t   buf = NULL;
    int                     rc  = 1;
    if (ctx == NULL) {
        goto err_q;
    }
    struct ggml_tensor * w   = ggml_new_tensor_2d(ctx, t, K, o->rows);
    struct ggml_tensor * x1  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, 1);
    struct ggml_tensor * xm  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, o->cols);
    if (w == NULL || x1 == NULL || xm == NULL) {
        goto err_ctx;
    }
    struct ggml_tensor * y1 = ggml_mul_mat(ctx, w, x1);
    struct ggml_tensor * ym = ggml_mul_mat(ctx, w, xm);
    if (y1 == NULL || ym == NULL) {
        /* a library that does not take this weight type refuses the op when it is built */
        printf("%s n/a ggml_mul_mat refuses it\n", name);
        rc = 0;
        goto err_ctx;
    }
    struct ggml_cgraph * g1 = ggml_new_graph(ctx);
    struct ggml_cgraph * gm = ggml_new_graph(ctx);
    if (g1 == NULL || gm == NULL) {
        goto err_ctx;
    }
    ggml_build_forward_expand(g1, y1);
    ggml_build_forward_expand(gm, ym);
    if (!ggml_backend_supports_op(be, y1) || !ggml_backend_supports_op(be, ym)) {
        printf("%s n/a the CPU backend does not support mul_mat with it\n", name);
        rc = 0;
        goto err_ctx;
    }
    buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    if (buf == NULL) {
        printf("%s n/a cannot allocate the tensors\n", name);
        rc = 0;
        goto err_ctx;
    }
    const size_t row_size = ggml_row_size(t, K);
    for (int r = 0; r < o->rows; r += UNIQ_ROWS) {
        const int n = o->rows - r < UNIQ_ROWS ? o->rows - r : UNIQ_ROWS;
        ggml_backend_tensor_set(w, q, (size_t) r * row_size, row_size * (size_t) n);
    }
    {
        float * x = malloc(sizeof(float) * K * (size_t) o->cols);
        if (x == NULL) {
            goto err_buf;
        }
        fill(x, (size_t) K * (size_t) o->cols, 0x5EED0002u, false);
        ggml_backend_tensor_set(x1, x, 0, sizeof(float) * K);
        ggml_backend_tensor_set(xm, x, 0, sizeof(float) * K * (size_t) o->cols);
        free(x);
    }
    /* a product with one column is short: more runs for the same confidence */
    const double tv = time_graph(be, g1, 4 * o->runs);
    if (tv > 0) {
        printf("mv %s %.3f\n", name, (double) ggml_nbytes(w) / tv * 1e-9);
    } else {
        printf("%s n/a mul_mat (1 column) failed\n", name);
    }
    fflush(stdout);
    const double tm = time_graph(be, gm, o->runs > 3 ? 3 : o->runs);
    if (tm > 0) {
        printf("mm %s %.3f\n", name, 2.0 * K * (double) o->rows * (double) o->cols / tm * 1e-9);
    } else {
        printf("%s n/a mul_mat (%d columns) failed\n", name, o->cols);
    }
    fflush(stdout);
    rc = 0;
err_buf:
    ggml_backend_buffer_free(buf);
err_ctx:
    ggml_free(ctx);
err_q:
    free(q);
    return rc;
}

/* ---- round-trip error ------------------------------------------------------------------------ */

/* DIR/TYPE.DATA.bin gets the quantized bytes, for the script to find where two libraries differ */
static int dump_bytes(const char * dir, const char * name, const char * data, const void * q, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s.bin", dir, name, data);
    FILE * f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "bench-quant-client: cannot create %s\n", path);
        return 1;
    }
    const bool ok = fwrite(q, 1, size, f) == size;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "bench-quant-client: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* dump: NULL or a folder for the quantized bytes */
static int bench_rt(const char * name, const char * dump) {
    const enum ggml_type t = type_by_name(name);
    if (t == GGML_TYPE_COUNT) {
        printf("%s n/a not a type of this library\n", name);
        return 0;
    }
    ggml_to_float_t to_float = ggml_get_type_traits(t)->to_float;
    if (to_float == NULL) {
        printf("%s n/a no to_float\n", name);
        return 0;
    }
    const size_t n = (size_t) K * RT_ROWS;
    float *      x = malloc(sizeof(float) * n);
    float *      y = malloc(sizeof(float) * n);
    int          rc = 1;
    if (x == NULL || y == NULL) {
        goto out;
    }
    for (int heavy = 0; heavy < 2; heavy++) {
        fill(x, n, heavy ? 0x5EED0004u : 0x5EED0003u, heavy);
        void * q = quantize(name, t, x, RT_ROWS);
        if (q == NULL) {
            rc = 0;
            goto out;
        }
        to_float(q, y, (int64_t) n);
        /* FNV-1a of the quantized bytes: equal hashes say the two libraries wrote the same bytes */
        uint64_t h = 0xCBF29CE484222325ull;
        for (size_t i = 0; i < ggml_row_size(t, K) * RT_ROWS; i++) {
            h = (h ^ ((const uint8_t *) q)[i]) * 0x100000001B3ull;
        }
        if (dump != NULL && dump_bytes(dump, name, heavy ? "student-t3" : "gaussian", q,
                                       ggml_row_size(t, K) * RT_ROWS) != 0) {
            free(q);
            goto out;
        }
        free(q);
        double e = 0.0, s = 0.0;
        for (size_t i = 0; i < n; i++) {
            e += ((double) y[i] - x[i]) * ((double) y[i] - x[i]);
            s += (double) x[i] * x[i];
        }
        printf("rt %s %s %.6e %016llx\n", name, heavy ? "student-t3" : "gaussian", sqrt(e / s),
               (unsigned long long) h);
        fflush(stdout);
    }
    rc = 0;
out:
    free(x);
    free(y);
    return rc;
}

/* ---- memory bandwidth ------------------------------------------------------------------------ */

static int bench_mem_read(size_t bytes, int threads, int runs) {
    struct mem_read_stats st;
    if (mem_read_measure(bytes, threads, runs, &st) != 0) {
        fprintf(stderr, "bench-quant-client: mem_read failed\n");
        return 1;
    }
    printf("mem_read %d %.3f %.3f %s %.0f\n", threads, st.median_gbps, st.best_gbps, st.isa,
           (double) bytes / (1024.0 * 1024.0));
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static int parse_int(const char * s, int lo, int * out) {
    char * e;
    long   v = strtol(s, &e, 10);
    if (*s == '\0' || *e != '\0' || v < lo || v > 1 << 20) {
        fprintf(stderr, "bench-quant-client: bad number %s\n", s);
        return 1;
    }
    *out = (int) v;
    return 0;
}

int main(int argc, char ** argv) {
    struct opts o = { NULL, NULL, 2, 5, 16384, 512, true, true, false };
    for (int i = 1; i < argc; i++) {
        const bool more = i + 1 < argc;
        if (strcmp(argv[i], "--types") == 0 && more) {
            o.types = argv[++i];
        } else if (strcmp(argv[i], "--dump") == 0 && more) {
            o.dump = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && more) {
            if (parse_int(argv[++i], 1, &o.threads)) return 1;
        } else if (strcmp(argv[i], "--runs") == 0 && more) {
            if (parse_int(argv[++i], 1, &o.runs)) return 1;
        } else if (strcmp(argv[i], "--rows") == 0 && more) {
            if (parse_int(argv[++i], UNIQ_ROWS, &o.rows)) return 1;
        } else if (strcmp(argv[i], "--cols") == 0 && more) {
            if (parse_int(argv[++i], 1, &o.cols)) return 1;
        } else if (strcmp(argv[i], "--no-mm") == 0) {
            o.mm = false;
        } else if (strcmp(argv[i], "--no-rt") == 0) {
            o.rt = false;
        } else if (strcmp(argv[i], "--mem-read") == 0) {
            o.mem_read = true;
        } else {
            fprintf(stderr, "usage: bench-quant-client [--types a,b] [--threads N] [--runs N] [--rows N] "
                            "[--cols N] [--no-mm] [--no-rt] [--mem-read] [--dump DIR]\n");
            return 1;
        }
    }
    if (o.mem_read && (bench_mem_read((size_t) o.rows * ggml_row_size(GGML_TYPE_Q8_0, K), o.threads, 4 * o.runs) ||
                       bench_mem_read((size_t) 512 << 20, o.threads, 4 * o.runs))) {
        return 1;
    }
    if (o.rt) {
        for (size_t i = 0; i < COUNT_OF(k_rt_types); i++) {
            if (selected(k_rt_types[i], o.types) && bench_rt(k_rt_types[i], o.dump)) {
                return 1;
            }
        }
    }
    if (o.mm) {
        ggml_backend_t be = ggml_backend_cpu_init();
        if (be == NULL) {
            fprintf(stderr, "bench-quant-client: no CPU backend\n");
            return 1;
        }
        ggml_backend_cpu_set_n_threads(be, o.threads);
        for (size_t i = 0; i < COUNT_OF(k_mm_types); i++) {
            if (selected(k_mm_types[i], o.types) && bench_mm(be, k_mm_types[i], &o)) {
                ggml_backend_free(be);
                return 1;
            }
        }
        ggml_backend_free(be);
    }
    return 0;
}
