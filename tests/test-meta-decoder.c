/*
 * test-meta-decoder.c -- the meta device computes a tensor-parallel decoder (meta-model.h) over
 * 2, 3 and 4 SIM devices and gets what one CPU gets for the unsplit model; each device holds
 * only its share of the weights; partial sums are reduced exactly twice per layer.
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "ggmlx-meta.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "meta-model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGMLX_SIM_CHAOS, when set, is passed on: results must not depend on queue timing */
static void four_sims(void) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = { .n_devices = 4, .memory_limit = (size_t) 256 << 20, .n_threads = 1,
                                          .chaos_seed = chaos ? strtoull(chaos, NULL, 10) : 0 };
    cr_assert(ggmlx_sim_configure(&cfg), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
}

TestSuite(meta_decoder, .init = four_sims, .timeout = 60);

static const struct mm_shape SHAPE = { .d_model = 64, .n_head = 8, .d_ff = 96, .n_vocab = 40, .n_tokens = 5,
                                       .n_layers = 2 };

static void set_weight(struct ggml_tensor * t, const float * v) {
    ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t));
}

struct run {
    float * logits;
    size_t  weight_bytes[16];
    size_t  weight_total;
    struct ggmlx_meta_stats stats;
};

/* the decoder's logits computed on backend, its weights and compute buffers from buft */
static struct run run_model(ggml_backend_t backend, ggml_backend_buffer_type_t buft, const struct mm_shape * s,
                            size_t n_devs) {
    struct run out;
    memset(&out, 0, sizeof out);
    struct ggml_init_params wp = { 16 * (size_t) (s->n_layers + 2) * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * cw = ggml_init(wp);
    struct mm_weights w;
    mm_weights_new(cw, s, &w);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, buft);
    cr_assert_not_null(wbuf, "weights: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    mm_weights_fill(&w, set_weight);
    for (size_t d = 0; d < n_devs; d++) {
        out.weight_bytes[d] = ggmlx_meta_buffer_device_size(wbuf, d);
    }
    out.weight_total = ggml_backend_buffer_get_size(wbuf);

    struct ggml_init_params gp = { 2048 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * cg = ggml_init(gp);
    struct mm_inputs in;
    struct ggml_tensor * logits = mm_forward(cg, &w, &in);
    struct ggml_cgraph * gf = ggml_new_graph(cg);
    ggml_build_forward_expand(gf, logits);
    ggml_gallocr_t ga = ggml_gallocr_new(buft);
    cr_assert(ggml_gallocr_alloc_graph(ga, gf), "alloc: %s", ggmlx_last_error() ? ggmlx_last_error() : "");

    float * x = malloc((size_t) (s->d_model * s->n_tokens) * sizeof *x);
    int32_t * pos = malloc((size_t) s->n_tokens * sizeof *pos);
    float * mask = malloc((size_t) (s->n_tokens * s->n_tokens) * sizeof *mask);
    mm_inputs_fill(s, x, pos, mask);
    ggml_backend_tensor_set(in.x, x, 0, ggml_nbytes(in.x));
    ggml_backend_tensor_set(in.pos, pos, 0, ggml_nbytes(in.pos));
    ggml_backend_tensor_set(in.mask, mask, 0, ggml_nbytes(in.mask));

    const enum ggml_status st = ggml_backend_graph_compute(backend, gf);
    cr_assert_eq(st, GGML_STATUS_SUCCESS, "compute: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    out.logits = malloc(ggml_nbytes(logits));
    ggml_backend_tensor_get(logits, out.logits, 0, ggml_nbytes(logits));
    if (ggml_backend_is_meta(backend)) {
        cr_assert(ggmlx_meta_get_stats(backend, &out.stats));
    }
    free(x);
    free(pos);
    free(mask);
    ggml_gallocr_free(ga);
    ggml_free(cg);
    ggml_backend_buffer_free(wbuf);
    ggml_free(cw);
    return out;
}

static void sim_devices(ggml_backend_dev_t * devs, size_t n) {
    for (size_t d = 0; d < n; d++) {
        char name[32];
        snprintf(name, sizeof name, "SIM%zu", d);
        devs[d] = ggml_backend_dev_by_name(name);
        cr_assert_not_null(devs[d], "%s", name);
    }
}

static void check_split_run(size_t n_devs, const struct mm_shape * s) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    struct run ref = run_model(cpu, ggml_backend_get_default_buffer_type(cpu), s, 1);

    ggml_backend_dev_t devs[4];
    sim_devices(devs, n_devs);
    static struct mm_plan plan; /* the callback's userdata: part of the device's identity */
    mm_plan_even(&plan, s, n_devs);
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, n_devs, mm_split, &plan);
    cr_assert_not_null(meta, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_backend_t mb = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(mb, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    struct run got = run_model(mb, ggml_backend_dev_buffer_type(meta), s, n_devs);

    const int64_t n = s->n_vocab * s->n_tokens;
    double max_err = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double e = fabs((double) got.logits[i] - (double) ref.logits[i]) / (1.0 + fabs((double) ref.logits[i]));
        max_err = e > max_err ? e : max_err;
    }
    cr_expect_lt(max_err, 1e-4, "%zu-way split: logits differ from the CPU's by %g", n_devs, max_err);

    /* two reductions per layer (attention output, FFN output), none for the split logits */
    cr_expect_eq(got.stats.n_allreduce_generic + got.stats.n_allreduce_comm, n_devs > 1 ? (uint64_t) (2 * s->n_layers) : 0,
                 "%llu reductions", (unsigned long long) (got.stats.n_allreduce_generic + got.stats.n_allreduce_comm));
    cr_expect_eq(got.stats.n_graphs, 1);

    /* each device holds about 1/n of the weights (norms are mirrored and small) */
    size_t sum = 0;
    for (size_t d = 0; d < n_devs; d++) {
        sum += got.weight_bytes[d];
        cr_expect_lt((double) got.weight_bytes[d], 1.10 * (double) got.weight_total / (double) n_devs + 16384.0,
                     "device %zu holds %zu of %zu weight bytes", d, got.weight_bytes[d], got.weight_total);
    }
    cr_expect_gt(sum, got.weight_total * 95 / 100, "the devices together hold %zu of %zu bytes", sum, got.weight_total);

    free(ref.logits);
    free(got.logits);
    ggml_backend_free(mb);
    ggml_backend_free(cpu);
}

Test(meta_decoder, two_way_split_equals_the_unsplit_model) {
    check_split_run(2, &SHAPE);
}

Test(meta_decoder, four_way_split_equals_the_unsplit_model) {
    check_split_run(4, &SHAPE);
}

Test(meta_decoder, uneven_three_way_split_equals_the_unsplit_model) {
    /* 8 heads over 3 devices: 3, 3, 2; 96 FFN columns and 40 vocabulary rows likewise uneven */
    check_split_run(3, &SHAPE);
}

Test(meta_decoder, one_device_is_the_plain_model) {
    check_split_run(1, &SHAPE);
}

Test(meta_decoder, uneven_heads_over_two_devices) {
    struct mm_shape s = SHAPE;
    s.d_model = 56;
    s.n_head  = 7; /* 4 and 3 heads; 96 FFN columns, 40 vocabulary rows */
    check_split_run(2, &s);
}

Test(meta_decoder, three_way_split_of_six_heads_and_one_layer) {
    struct mm_shape s = SHAPE;
    s.d_model  = 48;
    s.n_head   = 6;
    s.n_layers = 1;
    check_split_run(3, &s);
}

/*
 * Through the scheduler: the meta backend next to the CPU. With head_on_cpu the output norm and
 * projection live in a CPU buffer, so the scheduler hands the hidden state from the meta device
 * to the CPU, twice (two computes, no synchronize in between).
 */
static void check_sched_run(size_t n_devs, bool head_on_cpu) {
    const struct mm_shape * s = &SHAPE;
    ggml_backend_t cpu = ggml_backend_cpu_init();
    struct run ref = run_model(cpu, ggml_backend_get_default_buffer_type(cpu), s, 1);

    ggml_backend_dev_t devs[4];
    sim_devices(devs, n_devs);
    static struct mm_plan plan;
    mm_plan_even(&plan, s, n_devs);
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, n_devs, mm_split, &plan);
    ggml_backend_t mb = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(mb);

    struct ggml_init_params wp = { 16 * (size_t) (s->n_layers + 2) * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * cw = ggml_init(wp);
    struct ggml_context * ch = ggml_init(wp);
    struct mm_weights w;
    mm_weights_new(head_on_cpu ? ch : cw, s, &w); /* the head goes to ch when it is to live on the CPU */
    if (head_on_cpu) {
        /* re-create the layers in cw, keeping the head's tensors in ch */
        struct ggml_tensor * on = w.out_norm, * wo = w.w_out;
        mm_weights_new(cw, s, &w);
        w.out_norm = on;
        w.w_out    = wo;
    }
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(wbuf, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_t hbuf = NULL;
    if (head_on_cpu) {
        hbuf = ggml_backend_alloc_ctx_tensors(ch, cpu);
        cr_assert_not_null(hbuf);
        ggml_backend_buffer_set_usage(hbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    }
    mm_weights_fill(&w, set_weight);

    ggml_backend_t bes[2] = { mb, cpu };
    ggml_backend_sched_t sched = ggml_backend_sched_new(bes, NULL, 2, 2048, false, true);
    cr_assert_not_null(sched, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");

    float * x = malloc((size_t) (s->d_model * s->n_tokens) * sizeof *x);
    int32_t * pos = malloc((size_t) s->n_tokens * sizeof *pos);
    float * mask = malloc((size_t) (s->n_tokens * s->n_tokens) * sizeof *mask);
    mm_inputs_fill(s, x, pos, mask);
    const int64_t n = s->n_vocab * s->n_tokens;
    float * got = malloc((size_t) n * sizeof *got);
    for (int rep = 0; rep < 2; rep++) {
        struct ggml_init_params gp = { 2048 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
        struct ggml_context * cg = ggml_init(gp);
        struct mm_inputs in;
        struct ggml_tensor * logits = mm_forward(cg, &w, &in);
        struct ggml_cgraph * gf = ggml_new_graph(cg);
        ggml_build_forward_expand(gf, logits);
        ggml_backend_sched_reset(sched);
        cr_assert(ggml_backend_sched_alloc_graph(sched, gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
        ggml_backend_tensor_set(in.x, x, 0, ggml_nbytes(in.x));
        ggml_backend_tensor_set(in.pos, pos, 0, ggml_nbytes(in.pos));
        ggml_backend_tensor_set(in.mask, mask, 0, ggml_nbytes(in.mask));
        cr_assert_eq(ggml_backend_sched_graph_compute_async(sched, gf), GGML_STATUS_SUCCESS, "%s",
                     ggmlx_last_error() ? ggmlx_last_error() : "");
        ggml_backend_sched_synchronize(sched);
        cr_expect_eq(ggml_backend_sched_get_tensor_backend(sched, logits), head_on_cpu ? cpu : mb);
        cr_expect_eq(ggml_backend_sched_get_n_splits(sched), head_on_cpu ? 2 : 1);
        ggml_backend_tensor_get(logits, got, 0, ggml_nbytes(logits));
        double max_err = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const double e = fabs((double) got[i] - (double) ref.logits[i]) / (1.0 + fabs((double) ref.logits[i]));
            max_err = e > max_err ? e : max_err;
        }
        cr_expect_lt(max_err, 1e-4, "%zu-way split in a scheduler: logits differ by %g (compute %d)", n_devs, max_err,
                     rep);
        ggml_free(cg);
    }
    /* hand-overs between the meta device and the CPU are queued, never a drain of both queues */
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(sched, &st));
    cr_expect_eq(st.n_sync_fallbacks, 0, "%llu synchronous copies", (unsigned long long) st.n_sync_fallbacks);
    if (head_on_cpu) {
        cr_expect_gt(st.n_async_copies, 0);
    }
    free(got);
    free(x);
    free(pos);
    free(mask);
    free(ref.logits);
    ggml_backend_sched_free(sched);
    ggml_backend_buffer_free(hbuf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(ch);
    ggml_free(cw);
    ggml_backend_free(mb);
    ggml_backend_free(cpu);
}

Test(meta_decoder, a_meta_backend_runs_inside_the_scheduler) {
    check_sched_run(2, false);
}

Test(meta_decoder, the_scheduler_hands_results_from_the_meta_device_to_the_cpu) {
    check_sched_run(4, true);
}

/* a row op over a tensor split along its rows' axis cannot run split: an error, nothing crashes */
Test(meta_decoder, a_split_the_ops_cannot_follow_is_an_error) {
    ggml_backend_dev_t devs[2];
    sim_devices(devs, 2);
    static struct mm_plan plan;
    mm_plan_even(&plan, &SHAPE, 2);
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, mm_split, &plan);
    ggml_backend_t mb = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(mb);

    struct ggml_init_params wp = { 8 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * cw = ggml_init(wp);
    struct ggml_tensor * wq = ggml_new_tensor_2d(cw, GGML_TYPE_F32, SHAPE.d_model, SHAPE.d_model);
    ggml_set_name(wq, "wq.0"); /* split along axis 1: the product is split along axis 0 */
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(wbuf);

    struct ggml_init_params gp = { 16 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    struct ggml_context * cg = ggml_init(gp);
    struct ggml_tensor * x = ggml_new_tensor_2d(cg, GGML_TYPE_F32, SHAPE.d_model, 3);
    struct ggml_tensor * y = ggml_rms_norm(cg, ggml_mul_mat(cg, wq, x), 1e-5f);
    ggml_set_name(y, "norm.0");
    struct ggml_cgraph * gf = ggml_new_graph(cg);
    ggml_build_forward_expand(gf, y);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(meta));
    cr_assert(ggml_gallocr_alloc_graph(ga, gf));
    cr_expect_eq(ggml_backend_graph_compute(mb, gf), GGML_STATUS_FAILED);
    const char * err = ggmlx_last_error();
    cr_assert_not_null(err);
    cr_expect(strstr(err, "norm.0") != NULL && strstr(err, "axis 0") != NULL, "message: %s", err);
    /* the backend is still usable: a graph it can split runs */
    struct ggml_cgraph * g2 = ggml_new_graph(cg);
    struct ggml_tensor * z = ggml_mul_mat(cg, wq, x);
    ggml_build_forward_expand(g2, z);
    ggml_gallocr_t ga2 = ggml_gallocr_new(ggml_backend_dev_buffer_type(meta));
    cr_assert(ggml_gallocr_alloc_graph(ga2, g2));
    cr_expect_eq(ggml_backend_graph_compute(mb, g2), GGML_STATUS_SUCCESS, "%s",
                 ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_gallocr_free(ga2);
    ggml_gallocr_free(ga);
    ggml_free(cg);
    ggml_backend_buffer_free(wbuf);
    ggml_free(cw);
    ggml_backend_free(mb);
}
