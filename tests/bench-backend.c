/*
 * bench-backend.c -- what the CPU backend's queue costs, in microseconds per operation.
 *
 *   bench-backend [--quick] [--json] [--iters N]
 *
 * empty round trip: graph_compute_async of a graph with no nodes, then synchronize (the
 * queue's fixed cost: snapshot, hand-off to the worker, wake-up of the caller).
 * event hop: event_record on backend A, event_wait on backend B, synchronize B (one hop of a
 * cross-queue dependency, as the scheduler makes between splits).
 * small compute: a 1024-element scale through the queue, and the same in "sync" mode (no
 * queue) for comparison.
 * long graph: 2000 dependent ADDs of 16-element vectors through the queue and in sync mode:
 * the difference is mostly the snapshot a queued compute takes of the graph (docs/async.md rule 2).
 * Each is timed per iteration after a warm-up; the table shows the median, the 10th and 90th
 * percentiles. --quick runs few iterations (a smoke run); --json prints JSON instead.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx.h"
#include "bench-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct result {
    const char * name;
    const char * mode;
    int          iters;
    double       median_us, p10_us, p90_us;
};

static struct result g_results[16];
static int           g_n_results;

static void add_result(const char * name, const char * mode, double * t, int n) {
    const struct bench_stats st = bench_stats_of(t, n);
    struct result * r = &g_results[g_n_results++];
    r->name      = name;
    r->mode      = mode;
    r->iters     = n;
    r->median_us = st.median;
    r->p10_us    = st.p10;
    r->p90_us    = st.p90;
}

static ggml_backend_t cpu(const char * params) {
    ggml_backend_t b = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), params);
    if (b == NULL) {
        fprintf(stderr, "cannot make a CPU backend (%s): %s\n", params ? params : "default",
                ggmlx_last_error() ? ggmlx_last_error() : "?");
        exit(1);
    }
    return b;
}

typedef void (*op_fn)(void * arg);

/* per-iteration times of fn(arg), after warm-up iterations */
static void time_op(const char * name, const char * mode, op_fn fn, void * arg, int iters) {
    double * t = malloc((size_t) iters * sizeof *t);
    for (int i = 0; i < iters / 10 + 1; i++) {
        fn(arg);
    }
    for (int i = 0; i < iters; i++) {
        const double t0 = bench_now_us();
        fn(arg);
        t[i] = bench_now_us() - t0;
    }
    add_result(name, mode, t, iters);
    free(t);
}

struct compute_arg {
    ggml_backend_t       backend;
    struct ggml_cgraph * graph;
};

static void compute_round_trip(void * p) {
    struct compute_arg * a = p;
    if (ggml_backend_graph_compute_async(a->backend, a->graph) != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "graph_compute_async failed: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        exit(1);
    }
    ggml_backend_synchronize(a->backend);
}

struct hop_arg {
    ggml_backend_t       a, b;
    ggml_backend_event_t ev;
};

static void event_hop(void * p) {
    struct hop_arg * h = p;
    ggml_backend_event_record(h->ev, h->a);
    ggml_backend_event_wait(h->b, h->ev);
    ggml_backend_synchronize(h->b);
}

static void print_markdown(void) {
    printf("| operation | CPU backend | iterations | median (us) | p10 (us) | p90 (us) |\n");
    printf("|---|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("| %s | %s | %d | %.2f | %.2f | %.2f |\n", r->name, r->mode, r->iters, r->median_us, r->p10_us,
               r->p90_us);
    }
}

static void print_json(void) {
    printf("{\n  \"benchmark\": \"bench-backend\",\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("    {\"name\": \"%s\", \"mode\": \"%s\", \"iterations\": %d, \"median_us\": %.3f, \"p10_us\": %.3f, "
               "\"p90_us\": %.3f}%s\n", r->name, r->mode, r->iters, r->median_us, r->p10_us, r->p90_us,
               i + 1 < g_n_results ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char ** argv) {
    bool json = false;
    int iters = 20000;
    if (!bench_parse_args(argc, argv, &json, &iters)) {
        return 2;
    }

    enum { CHAIN = 2000 };
    struct ggml_init_params p = { (CHAIN + 16) * ggml_tensor_overhead() + 4 * ggml_graph_overhead_custom(4096, false),
                                  NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_cgraph * empty = ggml_new_graph(ctx);
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1024);
    struct ggml_cgraph * small = ggml_new_graph(ctx);
    ggml_build_forward_expand(small, ggml_scale(ctx, x, 2.0f));
    struct ggml_tensor * c = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    struct ggml_tensor * acc = c;
    for (int i = 0; i < CHAIN; i++) {
        acc = ggml_add(ctx, acc, c);
    }
    struct ggml_cgraph * chain = ggml_new_graph_custom(ctx, 4096, false);
    ggml_build_forward_expand(chain, acc);

    ggml_backend_t a = cpu("n_threads=1");
    ggml_backend_t b = cpu("n_threads=1");
    ggml_backend_t s = cpu("sync,n_threads=1");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, a);
    if (buf == NULL) {
        fprintf(stderr, "cannot allocate: %s\n", ggmlx_last_error() ? ggmlx_last_error() : "?");
        return 1;
    }
    ggml_backend_buffer_clear(buf, 0);

    struct compute_arg ce = { a, empty }, cs = { a, small }, ss = { s, small }, cc = { a, chain }, sc = { s, chain };
    struct hop_arg hop = { a, b, ggml_backend_event_new(ggml_backend_get_device(a)) };
    time_op("empty graph_compute_async + synchronize", "queue", compute_round_trip, &ce, iters);
    time_op("event record (A) -> wait (B) -> synchronize (B)", "queue", event_hop, &hop, iters);
    time_op("1024-element scale, compute_async + synchronize", "queue", compute_round_trip, &cs, iters);
    time_op("1024-element scale, compute_async + synchronize", "sync", compute_round_trip, &ss, iters);
    time_op("2000-node ADD chain, compute_async + synchronize", "queue", compute_round_trip, &cc, iters / 20 + 10);
    time_op("2000-node ADD chain, compute_async + synchronize", "sync", compute_round_trip, &sc, iters / 20 + 10);

    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    ggml_backend_event_free(hop.ev);
    ggml_backend_free(a);
    ggml_backend_free(b);
    ggml_backend_free(s);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    return 0;
}
