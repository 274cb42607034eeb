/*
 * test-conformance.c -- the conformance runner (src/tools/conformance/cf-run.h) in-process: every
 * backend rule and op case passes on every device the registry finds, and the runner can fail:
 * a wrong reference, a broken guard byte, a missing CUDA device under GGMLX_TEST_REQUIRE_CUDA
 * are each reported as failures.
 */
#include <criterion/criterion.h>

#include "tools/conformance/cf-run.h"

#include "ggml-cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fewer would mean cases silently went missing from the list */
#define MIN_CASES_PER_DEVICE 400

Test(conformance, every_case_passes_on_every_device) {
    struct cf_options opt = cf_test_options();
    struct cf_summary sum;
    cr_log_info("seed %llu", (unsigned long long) opt.seed);
    const int failed = cf_run(&opt, &sum);
    cr_assert_eq(failed, 0, "%d case(s) failed (see the FAIL lines above)", failed);
    cr_assert_eq(sum.failed, 0);
    cr_assert_geq(sum.n_devices, 1, "the registry found no device");
    cr_assert_geq(sum.n_cases, MIN_CASES_PER_DEVICE, "only %d cases per device", sum.n_cases);
    cr_assert_geq(sum.passed, MIN_CASES_PER_DEVICE, "only %d passed (%d skipped)", sum.passed, sum.skipped);
}

/*
 * The quantized type a case's name mentions (as "q4_K", "f32>q8_0" or "q4_1 idx:..."), when this
 * build lacks one of its CPU kernels (dequantizer, dot product, quantizer): its cases may be
 * skipped until the kernel exists. NULL otherwise.
 */
static const char * type_without_cpu_kernels(const char * line) {
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        if (!ggml_is_quantized((enum ggml_type) t)) {
            continue;
        }
        const char * name = ggml_type_name((enum ggml_type) t);
        const size_t n = strlen(name);
        for (const char * p = strstr(line, name); p != NULL; p = strstr(p + 1, name)) {
            const bool starts = p > line && (p[-1] == ' ' || p[-1] == '>');
            const bool ends   = p[n] == ' ' || p[n] == '>';
            if (!starts || !ends) {
                continue;
            }
            const struct ggml_type_traits * tr = ggml_get_type_traits((enum ggml_type) t);
            const struct ggml_type_traits_cpu * tc = ggml_get_type_traits_cpu((enum ggml_type) t);
            if (tr->to_float == NULL || tc == NULL || tc->vec_dot == NULL || tc->from_float == NULL) {
                return name;
            }
        }
    }
    return NULL;
}

Test(conformance, the_cpu_skips_nothing_it_has_kernels_for) {
    struct cf_options opt = cf_test_options();
    char * text = NULL;
    size_t size = 0;
    opt.device = "CPU";
    opt.out    = open_memstream(&text, &size);
    cr_assert_not_null(opt.out);
    struct cf_summary sum;
    cf_run(&opt, &sum);
    fclose(opt.out);
    cr_assert_eq(sum.n_devices, 1);
    cr_assert_eq(sum.failed, 0);
    int allowed = 0;
    for (char * line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, "skip ", 5) != 0) {
            continue;
        }
        cr_assert_not_null(type_without_cpu_kernels(line), "skipped on the CPU: %s", line);
        allowed++;
    }
    cr_assert_eq(sum.skipped, allowed, "%d cases skipped on the CPU, %d for types without CPU kernels", sum.skipped,
                 allowed);
    free(text);
}

Test(conformance, every_case_passes_with_the_cpu_in_sync_mode) {
    setenv("GGMLX_CPU_SYNC", "1", 1); /* read when the backends are made (each test is its own process) */
    struct cf_options opt = cf_test_options();
    opt.device = "CPU";
    opt.out    = NULL;
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    unsetenv("GGMLX_CPU_SYNC");
    cr_assert_eq(failed, 0, "%d case(s) failed in sync mode", failed);
    cr_assert_geq(sum.passed, MIN_CASES_PER_DEVICE);
}

Test(conformance, a_wrong_reference_fails_every_op_case) {
    struct cf_options opt = cf_test_options();
    opt.device          = "CPU";
    opt.filter          = " f32 ";
    opt.out             = NULL;
    opt.wrong_reference = true;
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    cr_assert_gt(sum.n_cases, 50);
    cr_assert_eq(failed, sum.n_cases, "%d of %d cases failed with a wrong reference", failed, sum.n_cases);
    cr_assert_eq(sum.passed, 0);
}

Test(conformance, a_wrong_reference_fails_exact_and_tolerant_cases) {
    /* one exact case (a copy) and one with a tolerance (a long reduction) */
    const char * names[] = { "cpy f16>bf16 [33,3,2,1] contig", "mul_mat f32 [4097,5,1,1] contig" };
    for (int i = 0; i < 2; i++) {
        struct cf_options opt = cf_test_options();
        opt.device = "CPU";
        opt.filter = names[i];
        opt.out    = NULL;
        struct cf_summary sum;
        cr_assert_eq(cf_run(&opt, &sum), 0, "%s fails with the right reference", names[i]);
        cr_assert_eq(sum.passed, 1, "%s: no such case", names[i]);
        opt.wrong_reference = true;
        cr_assert_eq(cf_run(&opt, &sum), 1, "%s passes with a wrong reference", names[i]);
    }
}

Test(conformance, an_overwritten_guard_byte_fails_the_case) {
    struct cf_options opt = cf_test_options();
    opt.device      = "CPU";
    opt.filter      = "add f32 [33,3,2,1] contig";
    opt.out         = NULL;
    opt.break_guard = true;
    struct cf_summary sum;
    cr_assert_eq(cf_run(&opt, &sum), 1);
    cr_assert_eq(sum.passed, 0);
}

Test(conformance, a_failure_names_the_case_and_the_last_line_counts) {
    char * text = NULL;
    size_t len = 0;
    FILE * f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    struct cf_options opt = cf_test_options();
    opt.device          = "CPU";
    opt.filter          = "sqr f32 [31,3,1,1]";
    opt.out             = f;
    opt.wrong_reference = true;
    struct cf_summary sum;
    cf_run(&opt, &sum);
    fclose(f);
    cr_assert_not_null(strstr(text, "FAIL CPU  sqr f32 [31,3,1,1] contig: 1 of 93 elements wrong"), "%s", text);
    const char * last = text + len - 1;
    while (last > text && last[-1] != '\n') {
        last--;
    }
    cr_assert_str_eq(last, "0 passed, 1 failed\n");
    free(text);
}

Test(conformance, json_has_the_counts) {
    char * text = NULL;
    size_t len = 0;
    FILE * f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    struct cf_options opt = cf_test_options();
    opt.filter = "rule: buffer clear";
    opt.out    = f;
    opt.json   = true;
    struct cf_summary sum;
    cf_run(&opt, &sum);
    fclose(f);
    cr_assert_not_null(strstr(text, "\"status\": \"ok\""), "%s", text);
    cr_assert_not_null(strstr(text, "\"failed\": 0\n}"), "%s", text);
    cr_assert_not_null(strstr(text, "\"seed\": "), "%s", text);
    free(text);
}

Test(conformance, requiring_cuda_without_a_cuda_device_fails) {
    bool have_cuda = false;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        have_cuda = have_cuda || cf_device_is_cuda(ggml_backend_dev_get(i));
    }
    if (have_cuda) {
        cr_skip_test("a CUDA device is present");
    }
    struct cf_options opt = cf_test_options();
    opt.filter       = "rule: buffer clear";
    opt.out          = NULL;
    opt.require_cuda = true;
    struct cf_summary sum;
    cr_assert_eq(cf_run(&opt, &sum), 1);
}

Test(conformance, an_unknown_device_fails) {
    struct cf_options opt = cf_test_options();
    opt.device = "no-such-device";
    opt.out    = NULL;
    struct cf_summary sum;
    cr_assert_eq(cf_run(&opt, &sum), 1);
    cr_assert_eq(sum.n_devices, 0);
}
