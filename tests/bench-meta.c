/*
 * bench-meta.c -- the meta device's generic all-reduce (ggmlx_meta_allreduce_generic) on
 * simulated devices: what a tensor-parallel layer pays per reduction when no NCCL is there.
 *
 *   bench-meta [--quick] [--json] [--runs N]
 *
 * One F32 tensor of 1 MiB and one of 64 MiB per device, over 2 and 4 SIM devices (one compute
 * thread each). Each row: best and median of N runs (default 5) after one warm-up call, in ms,
 * and GB/s = bytes of one device's tensor / best time (the figure NCCL reports as "algbw").
 * The first call's result is checked against the sum, so a broken reduction is never timed.
 * ggmlx_meta_allreduce_generic allocates its scratch tensors on every call; the "meta graph" rows
 * show what a meta backend pays instead (scratch kept between graphs): a graph whose only work
 * is a product split along K (one column per device, so the product itself is cheap) and whose
 * output, a partial sum of the same size, is reduced at the end of the graph.
 * On this machine the SIM devices share 2 vCPUs with the caller: the numbers are the host's copy
 * and add bandwidth, not a GPU's. --quick uses 64 KiB and 1 MiB and one run (a smoke run);
 * --json prints JSON instead of the markdown table.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx.h"
#include "ggmlx-meta.h"
#include "ggmlx-sim.h"
#include "bench-util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 4
#define MAX_ROWS 16

struct row {
    const char * what;
    int    n_devs;
    size_t bytes;
    int    runs;
    double best_ms, median_ms, gbps;
};

static struct row g_rows[MAX_ROWS];
static int        g_n_rows;

static const char * err(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "?";
}

/* the value device d starts with at element j: small, so repeated sums stay finite */
static float start_value(int d, size_t j) {
    return 1e-3f * (float) (d + 1) + 1e-6f * (float) (j % 1000);
}

/* one row: n_devs tensors of bytes each, reduced runs times after a checked warm-up */
static int bench_allreduce(int n_devs, size_t bytes, int runs) {
    const int64_t ne = (int64_t) (bytes / sizeof(float));
    ggml_backend_t be[MAX_DEVS] = { 0 };
    struct ggml_context * ctx[MAX_DEVS] = { 0 };
    ggml_backend_buffer_t buf[MAX_DEVS] = { 0 };
    struct ggml_tensor * t[MAX_DEVS] = { 0 };
    float * host = malloc(bytes);
    double * times = malloc(sizeof(double) * (size_t) runs);
    int rc = 1;
    if (host == NULL || times == NULL) {
        fprintf(stderr, "out of host memory\n");
        goto err_free;
    }
    for (int d = 0; d < n_devs; d++) {
        char name[16];
        snprintf(name, sizeof name, "SIM%d", d);
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
        be[d] = dev ? ggml_backend_dev_init(dev, NULL) : NULL;
        if (be[d] == NULL) {
            fprintf(stderr, "%s: %s\n", name, err());
            goto err_free;
        }
        const struct ggml_init_params p = { 2 * ggml_tensor_overhead(), NULL, true };
        ctx[d] = ggml_init(p);
        if (ctx[d] == NULL) {
            fprintf(stderr, "ggml_init failed\n");
            goto err_free;
        }
        t[d] = ggml_new_tensor_1d(ctx[d], GGML_TYPE_F32, ne);
        buf[d] = ggml_backend_alloc_ctx_tensors(ctx[d], be[d]);
        if (buf[d] == NULL) {
            fprintf(stderr, "%s: allocating %zu bytes: %s\n", name, bytes, err());
            goto err_free;
        }
        for (int64_t j = 0; j < ne; j++) {
            host[j] = start_value(d, (size_t) j);
        }
        ggml_backend_tensor_set(t[d], host, 0, bytes);
    }

    /* warm-up, checked: every device holds the sum (scratch buffers get made here, too) */
    if (ggmlx_meta_allreduce_generic(be, t, (size_t) n_devs) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "allreduce over %d devices: %s\n", n_devs, err());
        goto err_free;
    }
    for (int d = 0; d < n_devs; d++) {
        ggml_backend_tensor_get(t[d], host, 0, bytes);
        const size_t probes[3] = { 0, (size_t) ne / 2, (size_t) ne - 1 };
        for (int k = 0; k < 3; k++) {
            double want = 0;
            for (int s = 0; s < n_devs; s++) {
                want += start_value(s, probes[k]);
            }
            if (fabs((double) host[probes[k]] - want) > 1e-5 * fabs(want)) {
                fprintf(stderr, "allreduce over %d devices: device %d element %zu is %g, want %g\n", n_devs, d, probes[k],
                        (double) host[probes[k]], want);
                goto err_free;
            }
        }
    }

    for (int r = 0; r < runs; r++) {
        const double t0 = bench_now_us();
        if (ggmlx_meta_allreduce_generic(be, t, (size_t) n_devs) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "allreduce over %d devices: %s\n", n_devs, err());
            goto err_free;
        }
        times[r] = bench_now_us() - t0;
    }
    const struct bench_stats st = bench_stats_of(times, runs);
    if (g_n_rows < MAX_ROWS) {
        struct row * row = &g_rows[g_n_rows++];
        row->what = "allreduce_generic_f32";
        row->n_devs = n_devs;
        row->bytes = bytes;
        row->runs = runs;
        row->best_ms = times[0] * 1e-3;
        row->median_ms = st.median * 1e-3;
        row->gbps = (double) bytes / (times[0] * 1e-6) / 1e9;
    }
    rc = 0;

err_free:
    for (int d = 0; d < n_devs; d++) {
        ggml_backend_buffer_free(buf[d]);
        ggml_free(ctx[d]);
        ggml_backend_free(be[d]);
    }
    free(times);
    free(host);
    return rc;
}

/* the meta device's split: w (K = n_devs columns) one column per device, everything else mirrored */
static struct ggml_backend_meta_split_state split_w_along_k(const struct ggml_tensor * t, void * ud) {
    const int n_devs = *(const int *) ud;
    struct ggml_backend_meta_split_state s;
    memset(&s, 0, sizeof s);
    s.n_segments = 1;
    s.axis = GGML_BACKEND_SPLIT_AXIS_MIRRORED;
    if (strcmp(t->name, "w") == 0) {
        s.axis = GGML_BACKEND_SPLIT_AXIS_0;
        for (int d = 0; d < n_devs; d++) {
            s.ne[d] = 1;
        }
    }
    return s;
}

/* y [1024, M] = w [n_devs, 1024]^T x [n_devs, M] on a meta backend: y is a partial sum, reduced */
static int bench_meta_graph(int n_devs, size_t bytes, int runs) {
    static int n_of[MAX_DEVS + 1] = { 0, 1, 2, 3, 4 };
    const int64_t N = 1024, M = (int64_t) (bytes / sizeof(float)) / N, K = n_devs;
    ggml_backend_dev_t devs[MAX_DEVS];
    for (int d = 0; d < n_devs; d++) {
        char name[16];
        snprintf(name, sizeof name, "SIM%d", d);
        devs[d] = ggml_backend_dev_by_name(name);
    }
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, (size_t) n_devs, split_w_along_k, &n_of[n_devs]);
    ggml_backend_t be = meta ? ggml_backend_dev_init(meta, NULL) : NULL;
    struct ggml_context * wctx = NULL, * gctx = NULL;
    ggml_backend_buffer_t wbuf = NULL;
    ggml_gallocr_t ga = NULL;
    float * host = malloc(sizeof(float) * (size_t) (K * (N > M ? N : M)));
    double * times = malloc(sizeof(double) * (size_t) runs);
    int rc = 1;
    if (be == NULL || host == NULL || times == NULL) {
        fprintf(stderr, "meta backend over %d devices: %s\n", n_devs, err());
        goto err_free;
    }
    const struct ggml_init_params wp = { 2 * ggml_tensor_overhead(), NULL, true };
    const struct ggml_init_params gp = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    wctx = ggml_init(wp);
    gctx = ggml_init(gp);
    if (wctx == NULL || gctx == NULL) {
        fprintf(stderr, "ggml_init failed\n");
        goto err_free;
    }
    struct ggml_tensor * w = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, K, N);
    ggml_set_name(w, "w");
    wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_dev_buffer_type(meta));
    if (wbuf == NULL) {
        fprintf(stderr, "meta weights: %s\n", err());
        goto err_free;
    }
    for (int64_t i = 0; i < K * N; i++) {
        host[i] = 1.0f; /* y[n, m] = sum over k of x[k, m] */
    }
    ggml_backend_tensor_set(w, host, 0, ggml_nbytes(w));
    struct ggml_tensor * x = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, K, M);
    ggml_set_input(x);
    struct ggml_tensor * y = ggml_mul_mat(gctx, w, x);
    ggml_set_output(y);
    struct ggml_cgraph * gf = ggml_new_graph(gctx);
    ggml_build_forward_expand(gf, y);
    ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(meta));
    if (ga == NULL || !ggml_gallocr_alloc_graph(ga, gf)) {
        fprintf(stderr, "meta compute buffer (%zu bytes on each device): %s\n", bytes, err());
        goto err_free;
    }
    for (int64_t m = 0; m < M; m++) {
        for (int64_t k = 0; k < K; k++) {
            host[m * K + k] = 0.25f * (float) (k + 1);
        }
    }
    ggml_backend_tensor_set(x, host, 0, ggml_nbytes(x));

    /* warm-up, checked: every y is the sum of a column of x, and it was reduced on the devices */
    ggmlx_meta_reset_stats(be);
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "meta graph over %d devices: %s\n", n_devs, err());
        goto err_free;
    }
    struct ggmlx_meta_stats st;
    const float want = 0.25f * (float) (K * (K + 1) / 2);
    float probe[2];
    ggml_backend_tensor_get(y, &probe[0], 0, sizeof(float));
    ggml_backend_tensor_get(y, &probe[1], ggml_nbytes(y) - sizeof(float), sizeof(float));
    if (!ggmlx_meta_get_stats(be, &st) || st.n_allreduce_generic + st.n_allreduce_comm < 1 || probe[0] != want ||
        probe[1] != want) {
        fprintf(stderr, "meta graph over %d devices: y = %g, %g (want %g), %llu reductions\n", n_devs, (double) probe[0],
                (double) probe[1], (double) want, (unsigned long long) (st.n_allreduce_generic + st.n_allreduce_comm));
        goto err_free;
    }

    for (int r = 0; r < runs; r++) {
        const double t0 = bench_now_us();
        if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "meta graph over %d devices: %s\n", n_devs, err());
            goto err_free;
        }
        times[r] = bench_now_us() - t0;
    }
    const struct bench_stats bs = bench_stats_of(times, runs);
    if (g_n_rows < MAX_ROWS) {
        struct row * row = &g_rows[g_n_rows++];
        row->what = "meta_graph_partial_f32";
        row->n_devs = n_devs;
        row->bytes = (size_t) (N * M) * sizeof(float);
        row->runs = runs;
        row->best_ms = times[0] * 1e-3;
        row->median_ms = bs.median * 1e-3;
        row->gbps = (double) row->bytes / (times[0] * 1e-6) / 1e9;
    }
    rc = 0;

err_free:
    ggml_gallocr_free(ga);
    ggml_backend_buffer_free(wbuf);
    ggml_free(gctx);
    ggml_free(wctx);
    ggml_backend_free(be);
    free(times);
    free(host);
    return rc;
}

static void size_label(char * out, size_t n, size_t bytes) {
    if (bytes >= ((size_t) 1 << 20)) {
        snprintf(out, n, "%zu MiB", bytes >> 20);
    } else {
        snprintf(out, n, "%zu KiB", bytes >> 10);
    }
}

static void print_markdown(void) {
    printf("| reduction (F32, SIM devices) | devices | size | best ms | median ms | GB/s |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_n_rows; i++) {
        const struct row * r = &g_rows[i];
        char size[32];
        size_label(size, sizeof size, r->bytes);
        printf("| %s | %d | %s | %.3f | %.3f | %.2f |\n", r->what, r->n_devs, size, r->best_ms, r->median_ms, r->gbps);
    }
}

static void print_json(void) {
    printf("{\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_rows; i++) {
        const struct row * r = &g_rows[i];
        printf("    {\"name\": \"%s\", \"devices\": %d, \"bytes\": %zu, \"runs\": %d, \"best_ms\": %.6g, "
               "\"median_ms\": %.6g, \"gb_per_s\": %.6g}%s\n",
               r->what, r->n_devs, r->bytes, r->runs, r->best_ms, r->median_ms, r->gbps, i + 1 < g_n_rows ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char ** argv) {
    bool quick = false, json = false;
    int runs = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1) {
                runs = 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--quick] [--json] [--runs N]\n", argv[0]);
            return 2;
        }
    }
    if (quick) {
        runs = 1;
    }
    const size_t small = quick ? (size_t) 64 << 10 : (size_t) 1 << 20;
    const size_t large = quick ? (size_t) 1 << 20 : (size_t) 64 << 20;
    /* the tensor and the reduction's scratch of the same size, with room to spare */
    const struct ggmlx_sim_config sim = { .n_devices = MAX_DEVS, .memory_limit = 4 * large + (64 << 20), .n_threads = 1 };
    if (!ggmlx_sim_configure(&sim)) {
        fprintf(stderr, "ggmlx_sim_configure: %s\n", err());
        return 1;
    }
    int rc = 0;
    const int n_devs[2] = { 2, 4 };
    for (int i = 0; i < 2; i++) {
        rc |= bench_allreduce(n_devs[i], small, runs);
        rc |= bench_allreduce(n_devs[i], large, runs);
    }
    for (int i = 0; i < 2; i++) {
        rc |= bench_meta_graph(n_devs[i], small, runs);
        rc |= bench_meta_graph(n_devs[i], large, runs);
    }
    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    return rc;
}
