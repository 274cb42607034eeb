/*
 * test-demo.c -- the demo program's three checks (relu, MLP, decoder block) pass on 1 and 2
 * threads, and can fail: a corrupted weight or input is caught, a context too small is reported
 * as an error with the library's message instead of crashing. The scheduler check pipelines over
 * two SIM devices, and the overlap it reports is computed right (demo-overlap.h). The checks are
 * the ones ggml-demo runs: both link the demo library (src/tools/demo/demo-run.h).
 */
#include <criterion/criterion.h>

#include "demo/demo-run.h"
#include "demo/demo-overlap.h"

#include "ggml-cpu.h"
#include "ggmlx.h"
#include "ggmlx-sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*demo_check_fn)(const struct demo_options *, struct demo_result *);

static struct demo_options options(int n_threads) {
    struct demo_options o = { 12345, n_threads, 0, NULL, NULL, NULL };
    const char * s = getenv("GGMLX_TEST_SEED");
    if (s != NULL) {
        o.seed = strtoull(s, NULL, 10);
    }
    return o;
}

static void expect_pass(demo_check_fn check, int n_threads) {
    const struct demo_options opt = options(n_threads);
    struct demo_result r;
    check(&opt, &r);
    cr_log_info("%s, seed %llu, %d threads: max|err| %g, rel %g", r.title, (unsigned long long) opt.seed, n_threads,
                r.max_abs_err, r.max_rel_err);
    cr_assert_eq(r.status, DEMO_PASSED, "%s on %d threads: status %s, max|err| %g, rel %g, error '%s'", r.title,
                 n_threads, demo_status_name(r.status), r.max_abs_err, r.max_rel_err, r.error);
}

Test(demo, relu_passes_on_1_and_2_threads) {
    expect_pass(demo_relu, 1);
    expect_pass(demo_relu, 2);
}

Test(demo, mlp_passes_on_1_and_2_threads) {
    expect_pass(demo_mlp, 1);
    expect_pass(demo_mlp, 2);
}

Test(demo, decoder_passes_on_1_and_2_threads) {
    expect_pass(demo_decoder, 1);
    expect_pass(demo_decoder, 2);
}

Test(demo, meta_check_passes) {
    expect_pass(demo_meta, 2);
}

Test(demo, results_do_not_depend_on_the_thread_count) {
    struct demo_options o1 = options(1), o2 = options(2);
    struct demo_result r1, r2;
    demo_decoder(&o1, &r1);
    demo_decoder(&o2, &r2);
    cr_assert_eq(r1.status, DEMO_PASSED);
    cr_assert_eq(r2.status, DEMO_PASSED);
    /* the same data on both runs (same seed), so the errors are of the same size */
    cr_assert_lt(fabs(r1.max_abs_err - r2.max_abs_err), 1e-4);
}

/* ---- the checks can fail --------------------------------------------------------------------------- */

struct corruption {
    const char * tensor; /* name in the check's context */
    int          index;  /* element, row-major */
    float        value;
    bool         found;
};

static void corrupt(struct ggml_context * ctx, void * data) {
    struct corruption * c = data;
    struct ggml_tensor * t = ggml_get_tensor(ctx, c->tensor);
    if (t != NULL) {
        ggml_set_f32_1d(t, c->index, c->value);
        c->found = true;
    }
}

static void expect_fail(demo_check_fn check, struct corruption * c) {
    struct demo_options opt = options(2);
    opt.tamper      = corrupt;
    opt.tamper_data = c;
    struct demo_result r;
    check(&opt, &r);
    cr_assert(c->found, "no tensor '%s' in the %s check", c->tensor, r.title);
    cr_assert_eq(r.status, DEMO_FAILED, "%s with %s[%d] = %g: status %s, max|err| %g, rel %g", r.title, c->tensor,
                 c->index, (double) c->value, demo_status_name(r.status), r.max_abs_err, r.max_rel_err);
    cr_assert_gt(r.limit_is_relative ? r.max_rel_err : r.max_abs_err, r.limit);
}

Test(demo, decoder_check_fails_on_a_corrupted_ffn_weight) {
    struct corruption c = { "ffn_down", 3 * DEMO_DECODER_N_FF + 17, 4.0f, false };
    expect_fail(demo_decoder, &c);
}

Test(demo, decoder_check_fails_on_a_corrupted_attention_weight) {
    struct corruption c = { "attn_k", 5 * DEMO_DECODER_N_EMBD + 2, -3.0f, false };
    expect_fail(demo_decoder, &c);
}

Test(demo, mlp_check_fails_on_a_corrupted_weight) {
    struct corruption c = { "fc2.weight", 7, 6.0f, false };
    expect_fail(demo_mlp, &c);
}

Test(demo, relu_check_fails_on_a_changed_input) {
    /* the reference saw x[11] as it was; 0.5 differs from any value relu can make of it
     * unless x[11] was exactly 0.5 */
    struct corruption c = { "x", 11, 0.5f, false };
    expect_fail(demo_relu, &c);
}

/* ---- errors are reported, not crashed on ----------------------------------------------------------- */

Test(demo, a_context_too_small_is_an_error_with_a_message) {
    demo_check_fn checks[3] = { demo_relu, demo_mlp, demo_decoder };
    for (int i = 0; i < 3; i++) {
        struct demo_options opt = options(2);
        opt.mem_size = 4096; /* room for a few tensor headers, not for the weights */
        struct demo_result r;
        checks[i](&opt, &r);
        cr_assert_eq(r.status, DEMO_ERROR, "%s: status %s", r.title, demo_status_name(r.status));
        cr_assert(strstr(r.error, "failed: ") != NULL, "%s: error '%s'", r.title, r.error);
        cr_assert_gt(strlen(r.error), strlen("failed: ") + 10, "%s: error '%s'", r.title, r.error);
    }
}

/* takes every byte left in the host context, so the result finds no room to come back to */
static void fill_context(struct ggml_context * ctx, void * data) {
    (void) data;
    size_t size = ggml_get_mem_size(ctx) - ggml_used_mem(ctx);
    while (size > 0 && ggml_new_buffer(ctx, size) == NULL) {
        size = size > 64 ? size - 64 : 0;
    }
}

Test(demo, no_room_for_the_result_is_an_error_with_a_message) {
    struct demo_options opt = options(2);
    opt.tamper = fill_context;
    struct demo_result r;
    demo_decoder(&opt, &r);
    cr_assert_eq(r.status, DEMO_ERROR, "status %s, error '%s'", demo_status_name(r.status), r.error);
    cr_assert(strstr(r.error, "ggml_new_buffer") != NULL, "error '%s'", r.error);
    cr_assert(strstr(r.error, "out of memory") != NULL, "error '%s'", r.error);
}

/* ---- the device ------------------------------------------------------------------------------------ */

Test(demo, checks_run_on_the_device_init_best_picks) {
    ggml_backend_t best = ggml_backend_init_best();
    cr_assert_not_null(best);
    const char * want = ggml_backend_dev_name(ggml_backend_get_device(best));
    struct demo_result r;
    struct demo_options opt = options(2);
    demo_relu(&opt, &r); /* starts its own backend */
    cr_assert_eq(r.status, DEMO_PASSED, "%s", r.error);
    cr_assert_str_eq(r.device, want);
    opt.backend = best; /* or uses the one it is given */
    demo_mlp(&opt, &r);
    cr_assert_eq(r.status, DEMO_PASSED, "%s", r.error);
    cr_assert_str_eq(r.device, want);
    ggml_backend_free(best);
}


/* ---- the scheduler check and its overlap -------------------------------------------------------- */

Test(demo, scheduler_check_pipelines_over_two_sim_devices) {
    const struct ggmlx_sim_config sim = { .n_devices = 2 };
    cr_assert(ggmlx_sim_configure(&sim), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    const struct demo_options opt = options(2);
    struct demo_result r;
    demo_sched(&opt, &r);
    cr_assert_eq(r.status, DEMO_PASSED, "status %s, rel %g, error '%s'", demo_status_name(r.status), r.max_rel_err,
                 r.error);
    cr_assert_str_eq(r.device, "SIM0+SIM1+CPU");
    cr_assert(strstr(r.note, "8 layers in 2 stages, 3 splits") != NULL,
              "CPU, then each SIM device once (the output layer with the last stage): %s", r.note);
    cr_assert(r.has_overlap, "the trace of the timed run was read back: %s", r.note);
    cr_log_info("two SIM devices computing at once %.1f%% of %.1f ms", 100.0 * r.overlap_share, r.run_ms);
    /* no timing in it: with the output layer back on SIM0 the stages take turns, and this is 0 */
    cr_assert_gt(r.overlap_share, 0.0, "SIM0 takes batch k + 1 while SIM1 has batch k: %s", r.note);
    cr_assert_leq(r.overlap_share, 1.0);
    cr_assert_float_eq(r.overlap_ms, r.overlap_share * r.run_ms, 1e-9 * r.run_ms + 1e-12);
    cr_assert(strstr(r.note, "trace: none kept") != NULL, "no trace file was asked for: %s", r.note);
}

static struct demo_overlap overlap_of(const struct demo_span * spans, int n) {
    struct demo_overlap ov;
    cr_assert(demo_overlap_of(spans, n, &ov));
    return ov;
}

Test(demo, overlap_is_the_time_two_or_more_tracks_have_a_span_open) {
    /* tracks 0 and 1 overlap on [5, 10] and [12, 15]; the run is [0, 20] */
    const struct demo_span two[] = { { 0, 0, 10 }, { 1, 5, 15 }, { 0, 12, 20 } };
    struct demo_overlap ov = overlap_of(two, 3);
    cr_assert_eq(ov.n_tracks, 2);
    cr_assert_float_eq(ov.shared_us, 8.0, 1e-12);
    cr_assert_float_eq(ov.run_us, 20.0, 1e-12);
    cr_assert_float_eq(ov.share, 0.4, 1e-12);

    /* three tracks at once count once, not twice; track 7 alone later counts nothing */
    const struct demo_span three[] = { { 2, 0, 10 }, { 4, 0, 10 }, { 3, 0, 10 }, { 7, 10, 40 } };
    ov = overlap_of(three, 4);
    cr_assert_eq(ov.n_tracks, 4);
    cr_assert_float_eq(ov.shared_us, 10.0, 1e-12);
    cr_assert_float_eq(ov.share, 0.25, 1e-12);
}

Test(demo, spans_that_touch_or_share_a_track_are_no_overlap) {
    /* one after the other on two tracks: an end and a start at the same time */
    const struct demo_span turns[] = { { 0, 0, 5 }, { 1, 5, 10 }, { 0, 10, 15 } };
    struct demo_overlap ov = overlap_of(turns, 3);
    cr_assert_float_eq(ov.shared_us, 0.0, 1e-12);
    cr_assert_float_eq(ov.share, 0.0, 1e-12);
    /* spans of one track over each other: still one device */
    const struct demo_span one[] = { { 3, 0, 10 }, { 3, 2, 4 }, { 3, 2, 4 } };
    ov = overlap_of(one, 3);
    cr_assert_eq(ov.n_tracks, 1);
    cr_assert_float_eq(ov.shared_us, 0.0, 1e-12);
    /* no spans: a share of 0, not NaN */
    ov = overlap_of(NULL, 0);
    cr_assert_eq(ov.share, 0.0);
    cr_assert_eq(ov.run_us, 0.0);
}

/* one complete event as ggmlx's trace writer puts it (name is written as given: already escaped) */
static void put_event(FILE * f, const char * name, const char * cat, int tid, double ts, double dur) {
    fprintf(f,
            ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
            "\"args\":{\"split\":0,\"slot\":0}}",
            name, cat, tid, ts, dur);
}

Test(demo, overlap_is_read_from_compute_spans_of_the_stage_tracks) {
    char path[256];
    const char * dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/ggmlx-demo-overlap-%ld.json", dir && dir[0] ? dir : "/tmp", (long) getpid());
    FILE * f = fopen(path, "w");
    cr_assert_not_null(f);
    /* tracks 0 and 1 are stages, 2 the CPU, 3 the host */
    fputs("{\"traceEvents\":[\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
          "\"args\":{\"name\":\"SIM0\"}}",
          f);
    put_event(f, "split 1: SIM0", "compute", 0, 0.0, 10.0);
    put_event(f, "copy \\\"cat\\\":\\\"compute\\\"", "copy", 1, 0.0, 4.0); /* named like a compute */
    put_event(f, "wait for SIM0", "wait", 1, 4.0, 2.0);
    put_event(f, "split 2: SIM1", "compute", 1, 6.0, 14.0);
    put_event(f, "split 0: CPU", "compute", 2, 12.0, 30.0);
    put_event(f, "alloc", "host", 3, 0.0, 50.0);
    fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
    cr_assert_eq(fclose(f), 0);
    struct demo_overlap ov;
    cr_assert(demo_trace_overlap(path, 2, &ov));
    cr_assert_eq(ov.n_spans, 2, "the two stage computes; not the copy named like one, the CPU or the host");
    cr_assert_float_eq(ov.shared_us, 4.0, 1e-9); /* [6, 10] */
    cr_assert_float_eq(ov.run_us, 20.0, 1e-9);
    cr_assert_float_eq(ov.share, 0.2, 1e-9);
    cr_assert(demo_trace_overlap(path, 3, &ov), "with the CPU's track");
    cr_assert_eq(ov.n_spans, 3);
    cr_assert_float_eq(ov.shared_us, 12.0, 1e-9); /* [6, 20] less [10, 12] */
    cr_assert_float_eq(ov.run_us, 42.0, 1e-9);
    unlink(path);
    cr_assert_not(demo_trace_overlap(path, 2, &ov), "no file: nothing measured");
    cr_assert_eq(ov.n_spans, 0);
}
