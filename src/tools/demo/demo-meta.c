/*
 * demo-meta.c -- the demo's fifth check: tensor parallelism. A small decoder
 * (tests/meta-model.h) split across the CUDA devices (else the SIM devices, else the CPU
 * alone) as one meta device: attention heads and FFN columns divided between the devices,
 * partial sums reduced twice per layer. Compared with a CPU-only run of the unsplit model, then
 * timed; the note says how much of the weights each device holds and how it reduced.
 */
#include "demo-common.h"

#include "ggmlx-meta.h"

#include "../../../tests/meta-model.h"

#define DEMO_META_RUNS 16

static const struct mm_shape demo_meta_shape = {
    .d_model = 256, .n_head = 8, .d_ff = 512, .n_vocab = 256, .n_tokens = 32, .n_layers = 4,
};

/* the devices to split over: CUDA, else SIM, else the CPU alone (at most 4) */
static size_t demo_meta_devices(ggml_backend_dev_t * devs) {
    size_t n = 0;
    const char * regs[2] = { "CUDA", "SIM" };
    for (int r = 0; r < 2 && n == 0; r++) {
        ggml_backend_reg_t reg = ggml_backend_reg_by_name(regs[r]);
        for (size_t i = 0; reg != NULL && i < ggml_backend_reg_dev_count(reg) && n < 4; i++) {
            devs[n++] = ggml_backend_reg_dev_get(reg, i);
        }
    }
    if (n == 0 && (devs[0] = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) != NULL) {
        n = 1;
    }
    return n;
}

static void demo_meta_set(struct ggml_tensor * t, const float * v) {
    ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t));
}

/* One model on backend with buffers of buft: logits into out (n_vocab x n_tokens floats), and
 * the time of `runs` more computes. false with the error in res. */
static bool demo_meta_run(struct demo_result * res, ggml_backend_t backend, ggml_backend_buffer_type_t buft, int runs,
                          float * out, double * sec, size_t * dev_bytes, size_t n_devs, size_t * total) {
    const struct mm_shape * s = &demo_meta_shape;
    bool ok = false;
    struct ggml_init_params wp = { 16 * (size_t) (s->n_layers + 2) * ggml_tensor_overhead(), NULL, true };
    struct ggml_init_params gp = { 1024 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * cw = TRY(ggml_init(wp));
    struct ggml_context * cg = TRY(ggml_init(gp));
    ggml_backend_buffer_t wbuf = NULL;
    ggml_gallocr_t ga = NULL;
    float * x = malloc((size_t) (s->d_model * s->n_tokens) * sizeof *x);
    int32_t * pos = malloc((size_t) s->n_tokens * sizeof *pos);
    float * mask = malloc((size_t) (s->n_tokens * s->n_tokens) * sizeof *mask);
    if (cw == NULL || cg == NULL || x == NULL || pos == NULL || mask == NULL) {
        goto out;
    }
    struct mm_weights w;
    mm_weights_new(cw, s, &w);
    wbuf = TRY(ggml_backend_alloc_ctx_tensors_from_buft(cw, buft));
    if (wbuf == NULL) {
        goto out;
    }
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    mm_weights_fill(&w, demo_meta_set);
    *total = ggml_backend_buffer_get_size(wbuf);
    for (size_t d = 0; d < n_devs; d++) {
        dev_bytes[d] = ggmlx_meta_buffer_device_size(wbuf, d);
    }
    struct mm_inputs in;
    struct ggml_tensor * logits = mm_forward(cg, &w, &in);
    struct ggml_cgraph * gf = TRY(ggml_new_graph(cg));
    if (gf == NULL || logits == NULL) {
        goto out;
    }
    ggml_build_forward_expand(gf, logits);
    ga = TRY(ggml_gallocr_new(buft));
    if (ga == NULL || !ggml_gallocr_alloc_graph(ga, gf)) {
        demo_error(res, "ggml_gallocr_alloc_graph", GGML_STATUS_ALLOC_FAILED);
        goto out;
    }
    mm_inputs_fill(s, x, pos, mask);
    ggml_backend_tensor_set(in.x, x, 0, ggml_nbytes(in.x));
    ggml_backend_tensor_set(in.pos, pos, 0, ggml_nbytes(in.pos));
    ggml_backend_tensor_set(in.mask, mask, 0, ggml_nbytes(in.mask));
    enum ggml_status st = ggml_backend_graph_compute(backend, gf);
    if (st != GGML_STATUS_SUCCESS) {
        demo_error(res, "ggml_backend_graph_compute", st);
        goto out;
    }
    ggml_backend_tensor_get(logits, out, 0, ggml_nbytes(logits));
    const int64_t t0 = ggml_time_us();
    for (int k = 0; k < runs && st == GGML_STATUS_SUCCESS; k++) {
        st = ggml_backend_graph_compute_async(backend, gf);
    }
    ggml_backend_synchronize(backend);
    *sec = (double) (ggml_time_us() - t0) / 1e6;
    if (st != GGML_STATUS_SUCCESS) {
        demo_error(res, "ggml_backend_graph_compute_async (loop)", st);
        goto out;
    }
    ok = true;
out:
    if (ga != NULL) {
        ggml_gallocr_free(ga);
    }
    if (wbuf != NULL) {
        ggml_backend_buffer_free(wbuf);
    }
    if (cg != NULL) {
        ggml_free(cg);
    }
    if (cw != NULL) {
        ggml_free(cw);
    }
    free(x);
    free(pos);
    free(mask);
    return ok;
}

void demo_meta(const struct demo_options * opt, struct demo_result * res) {
    demo_begin(res, "meta", "decoder split over devices", 1e-3, true);
    const struct mm_shape * s = &demo_meta_shape;
    const size_t n_out = (size_t) (s->n_vocab * s->n_tokens);
    ggml_backend_dev_t devs[4];
    const size_t n = demo_meta_devices(devs);
    ggml_backend_dev_t cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (n == 0 || cpu_dev == NULL) {
        snprintf(res->error, sizeof res->error, "no devices in the registry");
        res->status = DEMO_ERROR;
        return;
    }
    static struct mm_plan plan; /* the split callback's userdata: lives as long as the device */
    mm_plan_even(&plan, s, n);
    ggml_backend_dev_t meta = TRY(ggml_backend_meta_device(devs, n, mm_split, &plan));
    ggml_backend_t mb = meta ? TRY(ggml_backend_dev_init(meta, NULL)) : NULL;
    ggml_backend_t cpu = TRY(ggml_backend_dev_init(cpu_dev, NULL));
    float * want = malloc(n_out * sizeof *want), * got = malloc(n_out * sizeof *got);
    if (mb == NULL || cpu == NULL || want == NULL || got == NULL) {
        if (res->status == DEMO_PASSED) {
            snprintf(res->error, sizeof res->error, "out of memory");
            res->status = DEMO_ERROR;
        }
        goto out;
    }
    snprintf(res->device, sizeof res->device, "%s", ggml_backend_dev_name(meta));
    demo_set_threads(cpu, opt->n_threads);
    double sec_ref = 0.0, sec = 0.0;
    size_t bytes[4] = { 0 }, ref_bytes[4] = { 0 }, total = 0, ref_total = 0;
    if (!demo_meta_run(res, cpu, ggml_backend_get_default_buffer_type(cpu), 0, want, &sec_ref, ref_bytes, 0,
                       &ref_total) ||
        !demo_meta_run(res, mb, ggml_backend_dev_buffer_type(meta), DEMO_META_RUNS, got, &sec, bytes, n, &total)) {
        goto out;
    }
    demo_compare(res, got, want, n_out);
    res->ms = sec > 0.0 ? 1000.0 * sec / DEMO_META_RUNS : 0.0;
    res->tokens_per_s = sec > 0.0 ? (double) DEMO_META_RUNS * (double) s->n_tokens / sec : 0.0;
    struct ggmlx_meta_stats st;
    ggmlx_meta_get_stats(mb, &st);
    const double graphs = st.n_graphs > 0 ? (double) st.n_graphs : 1.0;
    snprintf(res->note, sizeof res->note,
             "%d layers split over %zu device%s, %.0f tokens/s; each device holds %.0f%% of the %.1f MiB of weights "
             "(device 0: %.2f MiB); %.0f reductions per graph (%s)",
             s->n_layers, n, n == 1 ? "" : "s", res->tokens_per_s, 100.0 * (double) bytes[0] / (double) total,
             (double) total / 1048576.0, (double) bytes[0] / 1048576.0,
             (double) (st.n_allreduce_comm + st.n_allreduce_generic) / graphs,
             st.n_allreduce_comm > 0 ? "NCCL" : n > 1 ? "pairwise copies and adds" : "one device: none");
out:
    free(want);
    free(got);
    if (mb != NULL) {
        ggml_backend_free(mb);
    }
    if (cpu != NULL) {
        ggml_backend_free(cpu);
    }
}
