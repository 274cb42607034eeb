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
#define MAX_ROWS 8

struct row {
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

static void size_label(char * out, size_t n, size_t bytes) {
    if (bytes >= ((size_t) 1 << 20)) {
        snprintf(out, n, "%zu MiB", bytes >> 20);
    } else {
        snprintf(out, n, "%zu KiB", bytes >> 10);
    }
}

static void print_markdown(void) {
    printf("| all-reduce (generic, F32) | devices | size | best ms | median ms | GB/s |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_n_rows; i++) {
        const struct row * r = &g_rows[i];
        char size[32];
        size_label(size, sizeof size, r->bytes);
        printf("| SIM x%d | %d | %s | %.3f | %.3f | %.2f |\n", r->n_devs, r->n_devs, size, r->best_ms, r->median_ms, r->gbps);
    }
}

static void print_json(void) {
    printf("{\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_rows; i++) {
        const struct row * r = &g_rows[i];
        printf("    {\"name\": \"allreduce_generic_f32\", \"devices\": %d, \"bytes\": %zu, \"runs\": %d, \"best_ms\": %.6g, "
               "\"median_ms\": %.6g, \"gb_per_s\": %.6g}%s\n",
               r->n_devs, r->bytes, r->runs, r->best_ms, r->median_ms, r->gbps, i + 1 < g_n_rows ? "," : "");
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
    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    return rc;
}
