/*
 * test-demo.c -- the demo program's three checks (relu, MLP, decoder block) pass on 1 and 2
 * threads, and can fail: a corrupted weight or input is caught, a context too small is reported
 * as an error with the library's message instead of crashing.
 */
#include <criterion/criterion.h>

#define GGMLX_DEMO_NO_MAIN
#include "../src/tools/ggml-demo.c"

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
    struct corruption c = { "ffn_down", 3 * N_FF + 17, 4.0f, false };
    expect_fail(demo_decoder, &c);
}

Test(demo, decoder_check_fails_on_a_corrupted_attention_weight) {
    struct corruption c = { "attn_k", 5 * N_EMBD + 2, -3.0f, false };
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

