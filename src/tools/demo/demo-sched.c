/*
 * demo-sched.c -- the demo's fourth check: a small llama-like decoder (random weights,
 * tests/sched-model.h) through the backend scheduler over every device there is: the CUDA
 * devices when the registry has any, else the SIM devices when GGMLX_SIM_DEVICES is set, and
 * the CPU last.
 *
 * Placement is a pipeline: the layers go in contiguous stages to the devices in front of the
 * CPU (one WEIGHTS buffer per layer pins the layer's ops), the embeddings stay on the CPU and
 * the output norm and output layer go to the last stage's device. So every batch passes each
 * device once, CPU -> SIM0 -> SIM1, and SIM0 can take batch k + 1 while SIM1 still has batch k.
 * (With the output layer back on SIM0, batch k + 1 would queue on SIM0 behind batch k's output
 * layer, which waits for SIM1: the devices would take turns.) The scheduler keeps one input
 * slot per stage plus one, so the host can set up the next batch while every stage is busy.
 *
 * The result is compared with a CPU-only run of the same model (plain graph allocator, no
 * scheduler). Then upstream's loop (reset, alloc_graph, set inputs, compute_async, no
 * synchronize) runs DEMO_SCHED_RUNS batches, which gives tokens per second, and the last batch
 * is checked too. That timed loop is traced (ggmlx_sched_set_trace) and the trace is read back
 * (demo-overlap.h): the check reports the share of the run during which two or more stage
 * devices (not the CPU) had a split computing, measured on the queues. The trace goes to the
 * file GGMLX_SCHED_TRACE names, else to the one demo_set_trace_path names, else to a temporary
 * file removed after.
 */
#include "demo-common.h"
#include "demo-overlap.h"

#include "ggml-alloc.h"
#include "ggmlx-sched.h"

#include "../../../tests/sched-model.h"

#include <errno.h>
#include <unistd.h>

#define DEMO_SCHED_RUNS 32 /* batches in the timed loop */

/* the trace file (ggml-demo's --trace); NULL: a temporary one, read back and removed */
static const char * demo_sched_trace_path = NULL;

void demo_set_trace_path(const char * path) {
    demo_sched_trace_path = path;
}

static struct sm_config demo_sched_config(uint64_t seed) {
    struct sm_config c = sm_config_default();
    c.n_vocab  = 256;
    c.n_embd   = 128;
    c.n_head   = 4;
    c.n_ff     = 256;
    c.n_layer  = 8;
    c.n_tokens = 32;
    c.seed     = seed;
    return c;
}

/*
 * The CUDA devices, else the SIM devices, then the CPU. (The CPU device is looked up by type,
 * so a GGML_BACKEND_DL build, whose CPU is a loaded module, finds it too.)
 */
static int demo_sched_devices(ggml_backend_dev_t * devs) {
    int n = 0;
    const char * regs[2] = { "CUDA", "SIM" };
    for (int r = 0; r < 2 && n == 0; r++) {
        ggml_backend_reg_t reg = ggml_backend_reg_by_name(regs[r]);
        for (size_t i = 0; reg != NULL && i < ggml_backend_reg_dev_count(reg) && n < GGML_SCHED_MAX_BACKENDS - 1; i++) {
            devs[n++] = ggml_backend_reg_dev_get(reg, i);
        }
    }
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu != NULL) {
        devs[n++] = cpu;
    }
    return n;
}

/*
 * The CPU-only reference: the same model and inputs on the CPU backend with a graph allocator.
 * (sm_reference does the same through ggml_backend_cpu_init, which a GGML_BACKEND_DL build of
 * the demo cannot link.) false with the error in res.
 */
static bool demo_sched_reference(struct demo_result * res, ggml_backend_t cpu, const struct sm_config * cfg,
                                 uint64_t input_seed, float * want) {
    struct sm_model m;
    struct sm_graph g;
    memset(&g, 0, sizeof g);
    ggml_gallocr_t ga = NULL;
    bool ok = sm_model_init(&m, cfg);
    ok = ok && sm_model_alloc(&m, ggml_backend_cpu_buffer_type(), NULL) && sm_graph_build(&g, &m, cfg->n_tokens);
    ok = ok && (ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type())) != NULL && ggml_gallocr_alloc_graph(ga, g.gf) &&
         sm_graph_set_inputs(&g, cfg, input_seed);
    enum ggml_status st = ok ? ggml_backend_graph_compute(cpu, g.gf) : GGML_STATUS_FAILED;
    if (st == GGML_STATUS_SUCCESS) {
        ggml_backend_tensor_get(g.out, want, 0, ggml_nbytes(g.out));
    } else {
        demo_error(res, "the CPU-only reference run", st);
    }
    if (ga != NULL) {
        ggml_gallocr_free(ga);
    }
    sm_graph_free(&g);
    sm_model_free(&m);
    return st == GGML_STATUS_SUCCESS;
}

void demo_sched(const struct demo_options * opt, struct demo_result * res) {
    demo_begin(res, "scheduler", "decoder via the scheduler", 1e-3, true);
    const struct sm_config cfg = demo_sched_config(opt->seed);
    const size_t n_out = sm_out_count(&cfg, cfg.n_tokens);

    ggml_backend_dev_t devs[GGML_SCHED_MAX_BACKENDS];
    ggml_backend_t backends[GGML_SCHED_MAX_BACKENDS] = { NULL };
    const int n = demo_sched_devices(devs);
    if (n == 0) {
        snprintf(res->error, sizeof res->error, "no CPU device in the registry");
        res->status = DEMO_ERROR;
        return;
    }
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        backends[i] = TRY(ggml_backend_dev_init(devs[i], NULL));
        if (backends[i] == NULL) {
            goto out_backends;
        }
        len += (size_t) snprintf(res->device + len, len < sizeof res->device ? sizeof res->device - len : 0, "%s%s",
                                 i ? "+" : "", ggml_backend_dev_name(devs[i]));
        len = len < sizeof res->device ? len : sizeof res->device;
    }
    ggml_backend_t cpu = backends[n - 1];
    demo_set_threads(cpu, opt->n_threads);

    /* layers in contiguous stages over the devices in front of the CPU (the CPU alone when
     * there are none), the output layer with the last stage */
    const int n_dev = n > 1 ? n - 1 : 1;
    ggml_backend_buffer_type_t layer_bufts[SM_MAX_LAYERS];
    sm_spread_layers(layer_bufts, backends, n_dev, cfg.n_layer);
    const int n_copies = n_dev + 1 < GGMLX_SCHED_MAX_COPIES ? n_dev + 1 : GGMLX_SCHED_MAX_COPIES;

    float * want = malloc(sizeof(float) * n_out), * want_last = malloc(sizeof(float) * n_out),
          * got  = malloc(sizeof(float) * n_out);
    if (want == NULL || want_last == NULL || got == NULL) {
        snprintf(res->error, sizeof res->error, "out of memory for the results");
        res->status = DEMO_ERROR;
        goto out_buffers;
    }
    if (!demo_sched_reference(res, cpu, &cfg, 0, want) ||
        !demo_sched_reference(res, cpu, &cfg, DEMO_SCHED_RUNS - 1, want_last)) {
        goto out_buffers;
    }

    struct sm_model m;
    struct sm_graph g;
    memset(&g, 0, sizeof g);
    if (!sm_model_init(&m, &cfg) ||
        !sm_model_alloc_staged(&m, ggml_backend_cpu_buffer_type(), layer_bufts[cfg.n_layer - 1], layer_bufts) ||
        !sm_graph_build(&g, &m, cfg.n_tokens)) {
        demo_error(res, "building the decoder (tests/sched-model.h)", GGML_STATUS_ALLOC_FAILED);
        goto out_model;
    }
    /* parallel, with n_copies input slots: that many batches in flight */
    ggml_backend_sched_t sched = TRY(ggml_backend_sched_new(backends, NULL, n, 2 * sm_graph_size(&cfg), true, true));
    if (sched == NULL) {
        goto out_model;
    }
    if (!ggmlx_sched_set_n_copies(sched, n_copies)) {
        demo_error(res, "ggmlx_sched_set_n_copies", GGML_STATUS_FAILED);
        goto out_sched;
    }

    /* one batch, checked */
    ggml_backend_sched_reset(sched);
    if (!ggml_backend_sched_alloc_graph(sched, g.gf)) {
        demo_error(res, "ggml_backend_sched_alloc_graph", GGML_STATUS_ALLOC_FAILED);
        goto out_sched;
    }
    sm_graph_set_inputs(&g, &cfg, 0);
    enum ggml_status st = ggml_backend_sched_graph_compute(sched, g.gf);
    if (st != GGML_STATUS_SUCCESS) {
        demo_error(res, "ggml_backend_sched_graph_compute", st);
        goto out_sched;
    }
    ggml_backend_tensor_get(g.out, got, 0, ggml_nbytes(g.out));
    demo_compare(res, got, want, n_out);
    const int n_splits = ggml_backend_sched_get_n_splits(sched);

    /* the trace of the timed loop alone: the file asked for, else a temporary one */
    const char * env_trace = getenv("GGMLX_SCHED_TRACE");
    const char * trace     = env_trace != NULL && env_trace[0] != '\0' ? env_trace : demo_sched_trace_path;
    char         temp_trace[256] = "";
    if (trace == NULL) {
        const char * dir = getenv("TMPDIR");
        snprintf(temp_trace, sizeof temp_trace, "%s/ggml-demo-trace-XXXXXX", dir != NULL && dir[0] ? dir : "/tmp");
        const int fd = mkstemp(temp_trace);
        if (fd < 0) {
            snprintf(res->error, sizeof res->error, "a temporary trace file %s: %s", temp_trace, strerror(errno));
            res->status = DEMO_ERROR;
            goto out_sched;
        }
        close(fd);
        trace = temp_trace;
    }
    /* (a trace GGMLX_SCHED_TRACE started with the scheduler is written here, then restarted) */
    if (!ggmlx_sched_set_trace(sched, trace)) {
        demo_error(res, "ggmlx_sched_set_trace", GGML_STATUS_FAILED);
        goto out_trace;
    }

    /* upstream's loop, no synchronize until the end: batches overlap across devices */
    ggmlx_sched_reset_stats(sched);
    const int64_t t0 = ggml_time_us();
    for (int k = 0; k < DEMO_SCHED_RUNS; k++) {
        ggml_backend_sched_reset(sched);
        if (!ggml_backend_sched_alloc_graph(sched, g.gf)) {
            demo_error(res, "ggml_backend_sched_alloc_graph (loop)", GGML_STATUS_ALLOC_FAILED);
            goto out_trace;
        }
        sm_graph_set_inputs(&g, &cfg, (uint64_t) k);
        st = ggml_backend_sched_graph_compute_async(sched, g.gf);
        if (st != GGML_STATUS_SUCCESS) {
            demo_error(res, "ggml_backend_sched_graph_compute_async", st);
            goto out_trace;
        }
    }
    ggml_backend_sched_synchronize(sched);
    const double sec = (double) (ggml_time_us() - t0) / 1e6;
    res->ms = 1000.0 * sec / DEMO_SCHED_RUNS;
    res->tokens_per_s = sec > 0.0 ? (double) DEMO_SCHED_RUNS * cfg.n_tokens / sec : 0.0;
    ggml_backend_tensor_get(g.out, got, 0, ggml_nbytes(g.out));
    demo_compare(res, got, want_last, n_out);

    struct ggmlx_sched_stats stats;
    ggmlx_sched_get_stats(sched, &stats);
    if (!ggmlx_sched_set_trace(sched, NULL)) {
        demo_error(res, "writing the trace", GGML_STATUS_FAILED);
        goto out_trace;
    }
    struct demo_overlap ov;
    res->has_overlap = demo_trace_overlap(trace, n_dev, &ov); /* the stages' tracks, not the CPU's */
    if (res->has_overlap) {
        res->overlap_share = ov.share;
        res->overlap_ms    = ov.shared_us / 1000.0;
        res->run_ms        = ov.run_us / 1000.0;
    }
    char overlap[128] = "stages computing at once: not measured (the trace could not be read)";
    if (res->has_overlap && n_dev == 1) {
        snprintf(overlap, sizeof overlap, "one stage, nothing to overlap");
    } else if (res->has_overlap) {
        snprintf(overlap, sizeof overlap, "two or more stages computing %.0f%% of the time (%.1f of %.1f ms, traced)",
                 100.0 * res->overlap_share, res->overlap_ms, res->run_ms);
    }
    const int note_len =
        snprintf(res->note, sizeof res->note,
                 "%d layers in %d stage%s, %d split%s, %.0f tokens/s (%d batches of %d, %d input copies); %s; "
                 "%llu host waits, %llu synchronous copies; trace: %s",
                 cfg.n_layer, n_dev, n_dev == 1 ? "" : "s", n_splits, n_splits == 1 ? "" : "s", res->tokens_per_s,
                 DEMO_SCHED_RUNS, cfg.n_tokens, n_copies, overlap, (unsigned long long) stats.n_host_waits,
                 (unsigned long long) stats.n_sync_fallbacks, temp_trace[0] ? "none kept" : trace);
    if (note_len >= (int) sizeof res->note) {
        memcpy(res->note + sizeof res->note - 4, "...", 4); /* a long trace path: cut, and says so */
    }
out_trace:
    if (temp_trace[0] != '\0') {
        ggmlx_sched_set_trace(sched, NULL);
        unlink(temp_trace);
    }
out_sched:
    ggml_backend_sched_free(sched);
out_model:
    sm_graph_free(&g);
    sm_model_free(&m);
out_buffers:
    free(want);
    free(want_last);
    free(got);
out_backends:
    for (int i = 0; i < n; i++) {
        if (backends[i] != NULL) {
            ggml_backend_free(backends[i]);
        }
    }
}
