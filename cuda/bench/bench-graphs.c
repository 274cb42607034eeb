/*
 * bench-graphs.c -- launch overhead per node, with and without CUDA graphs.
 *
 *   bench-cuda-graphs [--nodes N] [--reps R] [--batch K] [--device NAME] [--json-out FILE]
 *
 * A chain of N (default 1000) adds on a 256-element F32 tensor: the kernels do next to nothing,
 * so the time per node is the cost of getting a kernel onto the GPU. Two backends of the same
 * device, one made with GGML_CUDA_DISABLE_GRAPHS set (one kernel launch per node) and one
 * without (after the warm-up and the capture, one cudaGraphLaunch per compute). Each figure is
 * the median over R batches of K computes and one synchronize, timed on the host, divided by
 * K * N: microseconds per node. The enqueue time alone (the graph_compute_async calls, before
 * the synchronize) is reported too. The chain's result is checked (x + N * y, exact in F32), and
 * the backends' counters must show replays with graphs and none without.
 *
 * On a device that is not CUDA (--device CPU) it runs the same computes without counters, which
 * is how it is exercised on a machine without a GPU.
 *
 * Exit status: 0 done and checked, 1 a failure (a compute, a wrong result, graphs not replayed),
 * 2 no such device.
 */
#include "bench-util.h"
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx.h"
#include "ggmlx-backend.h"

#include "graph-cache.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 200
#define N_ELEM   256

typedef bool (*graph_stats_fn)(ggml_backend_t backend, struct ggmlx_cuda_graph_stats * stats);

struct options {
    int          nodes;
    int          reps;
    int          batch;
    const char * device;
    const char * json_out;
};

struct result {
    const char * mode;
    double       us_per_node;    /* end to end: enqueue and run, per node */
    double       enqueue_us;     /* graph_compute_async calls alone, per node */
    struct ggmlx_cuda_graph_stats stats;
    bool         have_stats;
    const char * error;          /* NULL: ok */
};

static char g_err[2][512];

static const char * fail_msg(int slot, const char * what) {
    const char * e = ggmlx_last_error();
    snprintf(g_err[slot], sizeof g_err[slot], "%s: %s", what, e ? e : "no message");
    return g_err[slot];
}

/* one backend, one mode: build, check, time */
static void run_mode(ggml_backend_dev_t dev, bool graphs, const struct options * o, graph_stats_fn stats_fn,
                     struct result * r, int slot) {
    r->mode        = graphs ? "graphs" : "no graphs";
    r->us_per_node = NAN;
    r->enqueue_us  = NAN;
    /* read when the backend is made: set or unset just before */
    if (graphs) {
        unsetenv("GGML_CUDA_DISABLE_GRAPHS");
    } else {
        setenv("GGML_CUDA_DISABLE_GRAPHS", "1", 1);
    }
    ggml_backend_t backend = ggml_backend_dev_init(dev, NULL);
    unsetenv("GGML_CUDA_DISABLE_GRAPHS");
    if (backend == NULL) {
        r->error = fail_msg(slot, "backend");
        return;
    }
    struct ggml_init_params ip = {
        .mem_size   = (size_t) (o->nodes + 8) * ggml_tensor_overhead() + ggml_graph_overhead_custom((size_t) o->nodes + 8, false),
        .mem_buffer = NULL,
        .no_alloc   = true,
    };
    struct ggml_context * ctx = ggml_init(ip);
    ggml_backend_buffer_t buf = NULL;
    float * host = malloc(N_ELEM * sizeof *host);
    double * t_all = malloc(MAX_REPS * sizeof *t_all);
    double * t_enq = malloc(MAX_REPS * sizeof *t_enq);
    if (ctx == NULL || host == NULL || t_all == NULL || t_enq == NULL) {
        r->error = "out of host memory";
        goto done;
    }
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N_ELEM);
    struct ggml_tensor * y = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N_ELEM);
    struct ggml_tensor * z = x;
    for (int i = 0; i < o->nodes; i++) {
        z = ggml_add(ctx, z, y);
    }
    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, (size_t) o->nodes + 8, false);
    ggml_build_forward_expand(gf, z);
    buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (buf == NULL) {
        r->error = fail_msg(slot, "allocation");
        goto done;
    }
    for (int i = 0; i < N_ELEM; i++) {
        host[i] = (float) (i % 7);
    }
    ggml_backend_tensor_set(x, host, 0, N_ELEM * sizeof *host);
    for (int i = 0; i < N_ELEM; i++) {
        host[i] = 1.0f + (float) (i % 3);
    }
    ggml_backend_tensor_set(y, host, 0, N_ELEM * sizeof *host);

    /* warm-up: plain, capture, replay */
    for (int i = 0; i < 3; i++) {
        if (ggml_backend_graph_compute_async(backend, gf) != GGML_STATUS_SUCCESS) {
            r->error = fail_msg(slot, "compute");
            goto done;
        }
    }
    ggml_backend_synchronize(backend);
    if (ggmlx_backend_get_status(backend) != GGML_STATUS_SUCCESS) {
        r->error = fail_msg(slot, "compute");
        goto done;
    }
    for (int rep = 0; rep < o->reps; rep++) {
        const double t0 = bench_now_us();
        for (int i = 0; i < o->batch; i++) {
            if (ggml_backend_graph_compute_async(backend, gf) != GGML_STATUS_SUCCESS) {
                r->error = fail_msg(slot, "compute");
                goto done;
            }
        }
        const double t1 = bench_now_us();
        ggml_backend_synchronize(backend);
        const double t2 = bench_now_us();
        t_enq[rep] = (t1 - t0) / ((double) o->batch * o->nodes);
        t_all[rep] = (t2 - t0) / ((double) o->batch * o->nodes);
    }
    if (ggmlx_backend_get_status(backend) != GGML_STATUS_SUCCESS) {
        r->error = fail_msg(slot, "compute");
        goto done;
    }
    r->us_per_node = bench_median(t_all, o->reps);
    r->enqueue_us  = bench_median(t_enq, o->reps);

    /* z = x + nodes * y, exact in F32 for these small integers */
    ggml_backend_tensor_get(z, host, 0, N_ELEM * sizeof *host);
    for (int i = 0; i < N_ELEM; i++) {
        const float want = (float) (i % 7) + (float) o->nodes * (1.0f + (float) (i % 3));
        if (host[i] != want) {
            snprintf(g_err[slot], sizeof g_err[slot], "wrong result: element %d is %g, not %g", i, (double) host[i],
                     (double) want);
            r->error = g_err[slot];
            goto done;
        }
    }
    if (stats_fn != NULL) { /* found in the CUDA registry: the backend is a CUDA one */
        r->have_stats = stats_fn(backend, &r->stats);
        if (graphs && r->stats.n_replay == 0) {
            r->error = "CUDA graphs were never replayed";
        } else if (!graphs && (r->stats.n_replay != 0 || r->stats.n_capture != 0)) {
            r->error = "CUDA graphs were used with GGML_CUDA_DISABLE_GRAPHS set";
        }
    }
done:
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    free(host);
    free(t_all);
    free(t_enq);
    ggml_backend_free(backend);
}

static void print_json(FILE * f, const char * dev, const struct options * o, const struct result * r) {
    fprintf(f, "{\"device\": \"%s\", \"nodes\": %d, \"reps\": %d, \"batch\": %d, \"rows\": [", dev, o->nodes, o->reps,
            o->batch);
    for (int i = 0; i < 2; i++) {
        fprintf(f, "%s{\"mode\": \"%s\", ", i ? ", " : "", r[i].mode);
        if (isnan(r[i].us_per_node)) {
            fprintf(f, "\"us_per_node\": null, \"enqueue_us_per_node\": null, ");
        } else {
            fprintf(f, "\"us_per_node\": %.4f, \"enqueue_us_per_node\": %.4f, ", r[i].us_per_node, r[i].enqueue_us);
        }
        fprintf(f, "\"replays\": %llu, \"captures\": %llu, \"ok\": %s}", (unsigned long long) r[i].stats.n_replay,
                (unsigned long long) r[i].stats.n_capture, r[i].error ? "false" : "true");
    }
    fprintf(f, "]}\n");
}

static int parse_int(const char * s, int lo, int hi, int * out) {
    char * end = NULL;
    const long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return 0;
    }
    *out = (int) v;
    return 1;
}

int main(int argc, char ** argv) {
    struct options o = { .nodes = 1000, .reps = 15, .batch = 10, .device = "CUDA0", .json_out = NULL };
    for (int i = 1; i < argc; i++) {
        const bool has = i + 1 < argc;
        if (!strcmp(argv[i], "--nodes") && has && parse_int(argv[i + 1], 1, 100000, &o.nodes)) {
            i++;
        } else if (!strcmp(argv[i], "--reps") && has && parse_int(argv[i + 1], 1, MAX_REPS, &o.reps)) {
            i++;
        } else if (!strcmp(argv[i], "--batch") && has && parse_int(argv[i + 1], 1, 1000, &o.batch)) {
            i++;
        } else if (!strcmp(argv[i], "--device") && has) {
            o.device = argv[++i];
        } else if (!strcmp(argv[i], "--json-out") && has) {
            o.json_out = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--nodes N] [--reps R (1..%d)] [--batch K] [--device NAME] [--json-out FILE]\n",
                    argv[0], MAX_REPS);
            return 1;
        }
    }
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(o.device);
    if (dev == NULL) {
        fprintf(stderr, "bench-cuda-graphs: no device %s\n", o.device);
        return 2;
    }
    graph_stats_fn stats_fn = NULL;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    if (reg != NULL) {
        stats_fn = (graph_stats_fn) ggml_backend_reg_get_proc_address(reg, "ggmlx_backend_cuda_graph_stats");
    }
    struct result r[2];
    memset(r, 0, sizeof r);
    run_mode(dev, false, &o, stats_fn, &r[0], 0);
    run_mode(dev, true, &o, stats_fn, &r[1], 1);

    printf("| device | mode | us/node | enqueue us/node | captures | replays | check |\n");
    printf("|---|---|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < 2; i++) {
        printf("| %s | %s | %.3f | %.3f | %llu | %llu | %s |\n", o.device, r[i].mode, r[i].us_per_node, r[i].enqueue_us,
               (unsigned long long) r[i].stats.n_capture, (unsigned long long) r[i].stats.n_replay,
               r[i].error ? r[i].error : "ok");
    }
    const bool ok = r[0].error == NULL && r[1].error == NULL;
    printf("bench-cuda-graphs: %d-node graph on %s: %.3f us/node with graphs, %.3f without (%.1fx)%s\n", o.nodes,
           o.device, r[1].us_per_node, r[0].us_per_node, r[0].us_per_node / r[1].us_per_node,
           ok ? "" : "; FAILED");
    if (o.json_out != NULL) {
        FILE * f = fopen(o.json_out, "w");
        if (f == NULL) {
            fprintf(stderr, "bench-cuda-graphs: cannot write %s\n", o.json_out);
            return 1;
        }
        print_json(f, o.device, &o, r);
        fclose(f);
    }
    return ok ? 0 : 1;
}
