/*
 * bench-sched.c -- what the backend scheduler costs and what its pipeline gains, on two
 * simulated devices (SIM0, SIM1, one compute thread each) and the CPU.
 *
 *   bench-sched [--quick] [--json] [--iters N]
 *
 * split + alloc: ggml_backend_sched_reset + ggml_backend_sched_alloc_graph of an unchanged
 * graph (placement, splits and allocation, nothing computed): the decoder of tests/sched-model.h
 * with its layers spread over SIM0, SIM1 and the CPU, the same decoder on the CPU alone, and a
 * chain of 2000 ADDs on the CPU alone (upstream's anchor on this kind of machine: ~270 us).
 * dispatch: a chain of tiny scale-by-1 nodes pinned in turn to SIM0, SIM1 and the CPU (one
 * split per node, one copy between devices per split) against the same chain on SIM0 alone;
 * (split - unsplit) / (extra splits) is what one split adds: a copy, its events, a hand-off.
 * pipeline: a compute-bound two-stage graph (matmuls; stage 1's weights on one device, stage 2's
 * on another) run with upstream's loop (reset, alloc_graph, set the input, compute_async, no
 * synchronize) K times in a row; 2 SIM devices against both stages on SIM0. The ideal is 2x;
 * this machine has 2 vCPUs for both SIM threads and the caller, so the measured number is
 * what those 2 vCPUs allow.
 * The ceiling is the same two stages as plain graphs on the devices' queues, no scheduler:
 * what two device threads get from the machine at all (on a 2-vCPU VM, AVX-512 matmuls on both
 * vCPUs at once may run far below 2x). Devices computing at once (from a trace of the run)
 * shows the overlap the scheduler reached, apart from how much of the cores the threads got.
 * (The pipeline code is in bench-sched-pipe.h.)
 * memory: ggml_backend_sched_get_buffer_size per backend with 1, 2 and 4 input copies.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "bench-util.h"
#include "sched-model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- results ------------------------------------------------------------------------------- */

struct result {
    const char * name;
    const char * config;
    int          iters;
    double       median_us, p10_us, p90_us;
    int          n_nodes, n_splits;
};

static struct result g_results[16];
static int           g_n_results;

struct derived {
    const char * name;
    double       value;
    const char * unit;
    const char * note;
};

static struct derived g_derived[12];
static int            g_n_derived;

struct memrow {
    const char * graph;
    int          n_copies;
    size_t       bytes[GGML_SCHED_MAX_BACKENDS];
    size_t       slot_bytes; /* every backend's input slots together */
};

static struct memrow g_mem[8];
static int           g_n_mem;
static const char *  g_mem_backends[GGML_SCHED_MAX_BACKENDS];
static int           g_n_mem_backends;

static void die(const char * what) {
    fprintf(stderr, "bench-sched: %s failed: %s\n", what, ggmlx_last_error() ? ggmlx_last_error() : "(no message)");
    exit(1);
}

static struct result * add_result(const char * name, const char * config, double * t, int n, int n_nodes,
                                  int n_splits) {
    const struct bench_stats st = bench_stats_of(t, n);
    struct result * r = &g_results[g_n_results++];
    *r = (struct result) { name, config, n, st.median, st.p10, st.p90, n_nodes, n_splits };
    return r;
}

static void add_derived(const char * name, double value, const char * unit, const char * note) {
    g_derived[g_n_derived++] = (struct derived) { name, value, unit, note };
}

/* ---- devices ------------------------------------------------------------------------------- */

static ggml_backend_t g_sim[2], g_cpu;

static ggml_backend_t sim_backend(int i) {
    char name[16];
    snprintf(name, sizeof name, "SIM%d", i);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
    ggml_backend_t b = dev ? ggml_backend_dev_init(dev, NULL) : NULL;
    if (b == NULL) {
        die(name);
    }
    return b;
}

static ggml_backend_sched_t new_sched(ggml_backend_t * backends, int n, size_t graph_size, bool parallel) {
    ggml_backend_sched_t s = ggml_backend_sched_new(backends, NULL, n, graph_size, parallel, true);
    if (s == NULL) {
        die("ggml_backend_sched_new");
    }
    return s;
}

static struct ggml_context * new_ctx(size_t n_tensors, size_t graph_size) {
    struct ggml_init_params p = { n_tensors * ggml_tensor_overhead() + ggml_graph_overhead_custom(graph_size, false),
                                  NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    if (ctx == NULL) {
        die("ggml_init");
    }
    return ctx;
}

/* ---- (a) split + alloc --------------------------------------------------------------------- */

static void time_split_alloc(const char * name, const char * config, ggml_backend_t * backends, int n_backends,
                             struct ggml_cgraph * g, int iters) {
    ggml_backend_sched_t s = new_sched(backends, n_backends, 8192, false);
    double * t = malloc(sizeof *t * (size_t) iters);
    for (int i = 0; i < iters / 10 + 2; i++) {
        ggml_backend_sched_reset(s);
        if (!ggml_backend_sched_alloc_graph(s, g)) {
            die("ggml_backend_sched_alloc_graph");
        }
    }
    for (int i = 0; i < iters; i++) {
        const double t0 = bench_now_us();
        ggml_backend_sched_reset(s);
        const bool ok = ggml_backend_sched_alloc_graph(s, g);
        t[i] = bench_now_us() - t0;
        if (!ok) {
            die("ggml_backend_sched_alloc_graph");
        }
    }
    add_result(name, config, t, iters, ggml_graph_n_nodes(g), ggml_backend_sched_get_n_splits(s));
    free(t);
    ggml_backend_sched_free(s);
}

/* the decoder with n_layer layers, layer i on layer_backends[i * n / n_layer], the rest on the CPU */
struct decoder {
    struct sm_config cfg;
    struct sm_model  m;
    struct sm_graph  g;
};

static void decoder_init(struct decoder * d, int n_layer, ggml_backend_t * layer_backends, int n) {
    d->cfg         = sm_config_default();
    d->cfg.n_layer = n_layer;
    ggml_backend_buffer_type_t bufts[SM_MAX_LAYERS];
    sm_spread_layers(bufts, layer_backends, n, n_layer);
    if (!sm_model_init(&d->m, &d->cfg) || !sm_model_alloc(&d->m, ggml_backend_cpu_buffer_type(), bufts) ||
        !sm_graph_build(&d->g, &d->m, d->cfg.n_tokens)) {
        die("the decoder of sched-model.h");
    }
}

static void decoder_free(struct decoder * d) {
    sm_graph_free(&d->g);
    sm_model_free(&d->m);
}

static void bench_split_alloc(int iters) {
    ggml_backend_t three[3] = { g_sim[0], g_sim[1], g_cpu };
    struct decoder d3, d1;
    /* the most layers sched-model.h builds: as close to 2000 nodes as it goes */
    decoder_init(&d3, SM_MAX_LAYERS, three, 3);
    decoder_init(&d1, SM_MAX_LAYERS, &g_cpu, 1);
    time_split_alloc("decoder, reset + alloc_graph", "SIM0 + SIM1 + CPU", three, 3, d3.g.gf, iters);
    time_split_alloc("decoder, reset + alloc_graph", "CPU", &g_cpu, 1, d1.g.gf, iters);
    decoder_free(&d3);
    decoder_free(&d1);

    enum { CHAIN = 2000 };
    struct ggml_context * leaf = new_ctx(1, 0);
    struct ggml_tensor * c = ggml_new_tensor_1d(leaf, GGML_TYPE_F32, 16);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(leaf, g_cpu);
    if (buf == NULL) {
        die("ggml_backend_alloc_ctx_tensors");
    }
    ggml_backend_buffer_clear(buf, 0);
    struct ggml_context * ctx = new_ctx(CHAIN + 8, 4096);
    struct ggml_tensor * acc = c;
    for (int i = 0; i < CHAIN; i++) {
        acc = ggml_add(ctx, acc, c);
    }
    struct ggml_cgraph * chain = ggml_new_graph_custom(ctx, 4096, false);
    ggml_build_forward_expand(chain, acc);
    time_split_alloc("2000-node ADD chain, reset + alloc_graph", "CPU", &g_cpu, 1, chain, iters);
    ggml_free(ctx);
    ggml_backend_buffer_free(buf);
    ggml_free(leaf);
}

/* ---- (b) dispatch overhead per split ------------------------------------------------------- */

enum { DISPATCH_NODES = 300, DISPATCH_NE = 16 };

/* compute the chain (pinned round robin over n_pin backends) repeatedly; x's values must come out */
static void time_dispatch(ggml_backend_sched_t s, const char * config, ggml_backend_t * pin, int n_pin,
                          struct ggml_cgraph * g, struct ggml_tensor * out, int iters, double * per_compute_us,
                          int * n_splits) {
    ggml_backend_sched_reset(s);
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        ggml_backend_sched_set_tensor_backend(s, ggml_graph_node(g, i), pin[i % n_pin]);
    }
    if (!ggml_backend_sched_alloc_graph(s, g)) {
        die("ggml_backend_sched_alloc_graph (dispatch)");
    }
    double * t = malloc(sizeof *t * (size_t) iters);
    for (int i = 0; i < iters / 10 + 2; i++) {
        if (ggml_backend_sched_graph_compute(s, g) != GGML_STATUS_SUCCESS) {
            die("ggml_backend_sched_graph_compute (dispatch)");
        }
    }
    ggmlx_sched_reset_stats(s);
    for (int i = 0; i < iters; i++) {
        const double t0 = bench_now_us();
        const enum ggml_status st = ggml_backend_sched_graph_compute(s, g);
        t[i] = bench_now_us() - t0;
        if (st != GGML_STATUS_SUCCESS) {
            die("ggml_backend_sched_graph_compute (dispatch)");
        }
    }
    float got[DISPATCH_NE];
    ggml_backend_tensor_get(out, got, 0, sizeof got);
    for (int i = 0; i < DISPATCH_NE; i++) {
        if (got[i] != (float) (i + 1)) {
            fprintf(stderr, "bench-sched: dispatch chain (%s) computed %g at %d, want %d\n", config, (double) got[i], i,
                    i + 1);
            exit(1);
        }
    }
    struct ggmlx_sched_stats stats;
    ggmlx_sched_get_stats(s, &stats);
    *n_splits = ggml_backend_sched_get_n_splits(s);
    struct result * r = add_result("scale-by-1 chain, graph_compute", config, t, iters, ggml_graph_n_nodes(g), *n_splits);
    *per_compute_us = r->median_us;
    if (stats.n_sync_fallbacks > 0 || stats.n_host_waits > (uint64_t) iters) {
        fprintf(stderr, "bench-sched: note (%s): %llu synchronous copies, %llu host waits in %d computes\n", config,
                (unsigned long long) stats.n_sync_fallbacks, (unsigned long long) stats.n_host_waits, iters);
    }
    free(t);
}

static void bench_dispatch(int iters) {
    struct ggml_context * leaf = new_ctx(1, 0);
    struct ggml_tensor * x = ggml_new_tensor_1d(leaf, GGML_TYPE_F32, DISPATCH_NE);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(leaf, g_cpu);
    if (buf == NULL) {
        die("ggml_backend_alloc_ctx_tensors");
    }
    float v[DISPATCH_NE];
    for (int i = 0; i < DISPATCH_NE; i++) {
        v[i] = (float) (i + 1);
    }
    ggml_backend_tensor_set(x, v, 0, sizeof v);
    struct ggml_context * ctx = new_ctx(DISPATCH_NODES + 8, 1024);
    struct ggml_tensor * acc = x;
    for (int i = 0; i < DISPATCH_NODES; i++) {
        acc = ggml_scale(ctx, acc, 1.0f);
    }
    ggml_set_output(acc);
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 1024, false);
    ggml_build_forward_expand(g, acc);

    ggml_backend_t rr[3] = { g_sim[0], g_sim[1], g_cpu };
    double t_split, t_one;
    int s_split, s_one;
    /* one scheduler for both: the graph's tensors keep the memory it gave them until its next alloc */
    ggml_backend_sched_t s = new_sched(rr, 3, 4096, false);
    time_dispatch(s, "split: SIM0, SIM1, CPU in turn", rr, 3, g, acc, iters, &t_split, &s_split);
    time_dispatch(s, "unsplit: all on SIM0", rr, 1, g, acc, iters, &t_one, &s_one);
    ggml_backend_sched_free(s);
    if (s_split > s_one) {
        add_derived("dispatch overhead per split", (t_split - t_one) / (double) (s_split - s_one), "us",
                    "(split - unsplit) / extra splits: one copy between devices, its events, one hand-off");
    }
    ggml_free(ctx);
    ggml_backend_buffer_free(buf);
    ggml_free(leaf);
}

/* ---- (c) pipeline -------------------------------------------------------------------------- */

#include "bench-sched-pipe.h"

enum { PIPE_RUNS = 3 };

static void bench_pipeline(bool quick) {
    const int K = quick ? 8 : 24, reps = quick ? 3 : 9;
    float * in = malloc(sizeof(float) * 2 * PIPE_D * PIPE_B);
    struct sm_rng rng = sm_rng_new(11, 0, 0);
    for (size_t i = 0; i < 2 * (size_t) PIPE_D * PIPE_B; i++) {
        in[i] = sm_uniform(&rng, -1.0f, 1.0f);
    }
    ggml_backend_t backends[3] = { g_sim[0], g_sim[1], g_cpu };
    ggml_backend_t one[2] = { g_sim[0], g_sim[0] }, two[2] = { g_sim[0], g_sim[1] };
    struct {
        const char *     config;
        ggml_backend_t * stages;
        int              n_copies;
    } runs[PIPE_RUNS] = {
        { "1 SIM (both stages on SIM0), 2 input copies", one, 2 },
        { "2 SIM (stage 1 on SIM0, stage 2 on SIM1), 2 input copies", two, 2 },
        { "2 SIM, 1 input copy (no overlap possible)", two, 1 },
    };
    struct pipe p[PIPE_RUNS];
    ggml_backend_sched_t s[PIPE_RUNS];
    double * t[PIPE_RUNS], * td[2];
    for (int i = 0; i < PIPE_RUNS; i++) {
        pipe_init(&p[i], runs[i].stages);
        s[i] = new_sched(backends, 3, 256, true);
        if (!ggmlx_sched_set_n_copies(s[i], runs[i].n_copies)) {
            die("ggmlx_sched_set_n_copies");
        }
        t[i] = malloc(sizeof *t[i] * (size_t) reps);
    }
    td[0] = malloc(sizeof *td[0] * (size_t) reps);
    td[1] = malloc(sizeof *td[1] * (size_t) reps);
    /* the runs take turns, so a burst of load from elsewhere hits them alike; rep 0 warms up */
    for (int r = 0; r <= reps; r++) {
        for (int i = 0; i < PIPE_RUNS; i++) {
            if (r == 1) {
                ggmlx_sched_reset_stats(s[i]);
            }
            const double per = pipe_run(&p[i], s[i], in, K);
            if (r > 0) {
                t[i][r - 1] = per;
            }
        }
        /* the machine's own ceiling: the same two stages with no scheduler, on one device or two */
        for (int i = 0; i < 2; i++) {
            const double per = stages_run(&p[i], K);
            if (r > 0) {
                td[i][r - 1] = per;
            }
        }
    }
    const char * direct[2] = { "no scheduler: the two stage graphs one after the other on SIM0",
                               "no scheduler: stage 1 on SIM0 and stage 2 on SIM1 at once" };
    double dmed[2];
    for (int i = 0; i < 2; i++) {
        struct result * r = add_result("two stage graphs, per pair", direct[i], td[i], reps, 2 * PIPE_L, 0);
        r->iters = reps * K;
        dmed[i]  = r->median_us;
        free(td[i]);
    }
    double med[PIPE_RUNS], best[PIPE_RUNS];
    float * result[PIPE_RUNS];
    for (int i = 0; i < PIPE_RUNS; i++) {
        struct ggmlx_sched_stats st;
        ggmlx_sched_get_stats(s[i], &st);
        struct result * r = add_result("two-stage matmul pipeline, per compute", runs[i].config, t[i], reps,
                                       ggml_graph_n_nodes(p[i].g), ggml_backend_sched_get_n_splits(s[i]));
        r->iters = reps * K;
        med[i]   = r->median_us;
        best[i]  = t[i][0]; /* sorted by add_result */
        fprintf(stderr, "bench-sched: pipeline (%s): %llu computes, %llu host waits, %llu sync fallbacks, "
                        "%llu async copies\n", runs[i].config, (unsigned long long) st.n_computes,
                (unsigned long long) st.n_host_waits, (unsigned long long) st.n_sync_fallbacks,
                (unsigned long long) st.n_async_copies);
        result[i] = malloc(ggml_nbytes(p[i].out));
        ggml_backend_tensor_get(p[i].out, result[i], 0, ggml_nbytes(p[i].out));
    }
    for (int i = 1; i < PIPE_RUNS; i++) {
        const double e = sm_max_rel_err(result[i], result[0], (size_t) PIPE_D * PIPE_B);
        if (!(e <= 1e-5)) {
            fprintf(stderr, "bench-sched: pipeline (%s) differs from one device: rel err %g\n", runs[i].config, e);
            exit(1);
        }
    }
    const double overlap1 = pipe_overlap(&p[0], s[0], in, K), overlap2 = pipe_overlap(&p[1], s[1], in, K);
    pipe_memory(&p[1], s[1], backends);
    add_derived("pipeline speed-up, 2 SIM over 1 (medians)", med[0] / med[1], "x",
                "ideal 2x; SIM devices compute with 1 thread each, on 2 vCPUs shared with the caller");
    add_derived("pipeline speed-up, 2 SIM over 1 (best runs)", best[0] / best[1], "x",
                "the fastest of the repetitions of each: the least disturbed by other load");
    add_derived("ceiling: 2 SIM over 1 without a scheduler (medians)", dmed[0] / dmed[1], "x",
                "what this machine gives two device threads doing independent matmuls at once");
    add_derived("pipeline speed-up over the ceiling (medians)", (med[0] / med[1]) / (dmed[0] / dmed[1]), "",
                "1.0: the scheduler's pipeline overlaps as well as independent work does");
    add_derived("pipeline speed-up, 2 SIM with 1 input copy over 1 SIM (medians)", med[0] / med[2], "x",
                "one input copy: each compute waits for the previous one, so no overlap");
    add_derived("devices computing at once, 2 SIM (traced run)", overlap2, "of 2",
                "compute time of both devices over the run's span: the overlap the pipeline reached");
    add_derived("devices computing at once, 1 SIM (traced run)", overlap1, "of 1",
                "the same for one device: how much of the run it computed");
    for (int i = 0; i < PIPE_RUNS; i++) {
        ggml_backend_sched_free(s[i]);
        pipe_free(&p[i]);
        free(result[i]);
        free(t[i]);
    }
    free(in);
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_markdown(void) {
    printf("| operation | backends | nodes | splits | iterations | median (us) | p10 (us) | p90 (us) |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("| %s | %s | %d | %d | %d | %.1f | %.1f | %.1f |\n", r->name, r->config, r->n_nodes, r->n_splits,
               r->iters, r->median_us, r->p10_us, r->p90_us);
    }
    printf("\n| derived | value | note |\n|---|---:|---|\n");
    for (int i = 0; i < g_n_derived; i++) {
        printf("| %s | %.2f %s | %s |\n", g_derived[i].name, g_derived[i].value, g_derived[i].unit, g_derived[i].note);
    }
    printf("\n| compute buffers | input copies |");
    for (int b = 0; b < g_n_mem_backends; b++) {
        printf(" %s (KiB) |", g_mem_backends[b]);
    }
    printf(" input slots, all backends (KiB) |\n|---|---:|");
    for (int b = 0; b < g_n_mem_backends; b++) {
        printf("---:|");
    }
    printf("---:|\n");
    for (int i = 0; i < g_n_mem; i++) {
        printf("| %s | %d |", g_mem[i].graph, g_mem[i].n_copies);
        for (int b = 0; b < g_n_mem_backends; b++) {
            printf(" %.1f |", (double) g_mem[i].bytes[b] / 1024.0);
        }
        printf(" %.1f |\n", (double) g_mem[i].slot_bytes / 1024.0);
    }
}

static void print_json(void) {
    printf("{\n  \"benchmark\": \"bench-sched\",\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("    {\"name\": \"%s\", \"backends\": \"%s\", \"nodes\": %d, \"splits\": %d, \"iterations\": %d, "
               "\"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f}%s\n", r->name, r->config, r->n_nodes,
               r->n_splits, r->iters, r->median_us, r->p10_us, r->p90_us, i + 1 < g_n_results ? "," : "");
    }
    printf("  ],\n  \"derived\": [\n");
    for (int i = 0; i < g_n_derived; i++) {
        printf("    {\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\"}%s\n", g_derived[i].name, g_derived[i].value,
               g_derived[i].unit, i + 1 < g_n_derived ? "," : "");
    }
    printf("  ],\n  \"memory\": [\n");
    for (int i = 0; i < g_n_mem; i++) {
        printf("    {\"graph\": \"%s\", \"n_copies\": %d, \"buffer_bytes\": {", g_mem[i].graph, g_mem[i].n_copies);
        for (int b = 0; b < g_n_mem_backends; b++) {
            printf("\"%s\": %zu%s", g_mem_backends[b], g_mem[i].bytes[b], b + 1 < g_n_mem_backends ? ", " : "");
        }
        printf("}, \"input_slot_bytes\": %zu}%s\n", g_mem[i].slot_bytes, i + 1 < g_n_mem ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char ** argv) {
    bool json = false;
    int iters = 1000;
    if (!bench_parse_args(argc, argv, &json, &iters)) {
        return 2;
    }
    const bool quick = iters < 1000;
    const struct ggmlx_sim_config sim = { .n_devices = 2, .memory_limit = (size_t) 1 << 30, .n_threads = 1 };
    if (!ggmlx_sim_configure(&sim)) {
        die("ggmlx_sim_configure");
    }
    g_sim[0] = sim_backend(0);
    g_sim[1] = sim_backend(1);
    g_cpu    = ggml_backend_cpu_init();
    if (g_cpu == NULL) {
        die("ggml_backend_cpu_init");
    }
    ggml_backend_cpu_set_n_threads(g_cpu, 1);

    bench_split_alloc(iters);
    bench_dispatch(iters / 5 + 10);
    bench_pipeline(quick);

    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    ggml_backend_free(g_sim[0]);
    ggml_backend_free(g_sim[1]);
    ggml_backend_free(g_cpu);
    return 0;
}
