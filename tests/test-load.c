/*
 * test-load.c -- backend modules (tests/modules/): a module built on its own loads, its device
 * joins the registry and leaves it on unload; a missing file, a library that is no backend, a
 * module built for another backend API version and a module that scores 0 each give NULL and a
 * message, and leave the registry as it was. Scanning a directory picks the scored module.
 *
 * Each Criterion test runs in its own process: every test starts with only the static backends.
 */
#include <criterion/criterion.h>

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggmlx.h"
#include "ggml/registry-impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef GGMLX_TESTMOD_DIR
#    error "GGMLX_TESTMOD_DIR must name the directory of the test modules (tests/CMakeLists.txt)"
#endif

#define TESTMOD     GGMLX_TESTMOD_DIR "/libggml-testmod.so"
#define BADVER      GGMLX_TESTMOD_DIR "/libggml-testmod-badver.so"
#define NOTABACKEND GGMLX_TESTMOD_DIR "/libggml-notabackend.so"
#define MISSING     GGMLX_TESTMOD_DIR "/libggml-no-such-module.so"

struct counts {
    size_t regs, devs;
};

static struct counts counts_now(void) {
    struct counts c = { ggml_backend_reg_count(), ggml_backend_dev_count() };
    return c;
}

static void expect_unchanged(struct counts before) {
    cr_assert_eq(ggml_backend_reg_count(), before.regs, "registries changed");
    cr_assert_eq(ggml_backend_dev_count(), before.devs, "devices changed");
    cr_assert_null(ggml_backend_dev_by_name("TESTMOD0"));
}

/* the last error mentions every one of the NULL-terminated words */
static void expect_error_with(const char * first, ...) {
    const char * e = ggmlx_last_error();
    cr_assert_not_null(e, "no error recorded");
    va_list ap;
    va_start(ap, first);
    for (const char * w = first; w != NULL; w = va_arg(ap, const char *)) {
        cr_assert(strstr(e, w) != NULL, "error '%s' does not mention '%s'", e, w);
    }
    va_end(ap);
}

/* ---- a module that loads ----------------------------------------------------------------------- */

Test(load, the_test_module_loads_and_its_device_joins_the_registry) {
    const struct counts before = counts_now();
    ggml_backend_reg_t reg = ggml_backend_load(TESTMOD);
    cr_assert_not_null(reg, "%s", ggmlx_last_error());
    cr_assert_null(ggmlx_last_error());
    cr_assert_str_eq(ggml_backend_reg_name(reg), "TESTMOD");
    cr_assert_eq(ggml_backend_reg_count(), before.regs + 1);
    cr_assert_eq(ggml_backend_dev_count(), before.devs + 1);
    cr_assert_eq(ggml_backend_reg_by_name("testmod"), reg);

    ggml_backend_dev_t dev = ggml_backend_dev_by_name("testmod0");
    cr_assert_not_null(dev);
    cr_assert_eq(ggml_backend_dev_by_name("TESTMOD0"), dev);
    cr_assert_eq(ggml_backend_reg_dev_get(reg, 0), dev);
    cr_assert_eq(ggml_backend_dev_backend_reg(dev), reg);
    cr_assert_eq(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_ACCEL), dev);
}

Test(load, the_module_device_answers_for_itself) {
    cr_assert_not_null(ggml_backend_load(TESTMOD));
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("TESTMOD0");
    cr_assert_not_null(dev);
    struct ggml_backend_dev_props p;
    ggml_backend_dev_get_props(dev, &p);
    cr_assert_str_eq(p.name, "TESTMOD0");
    cr_assert_eq(p.type, GGML_BACKEND_DEVICE_TYPE_ACCEL);
    cr_assert_eq(p.memory_total, (size_t) 64 << 20);
    cr_assert_eq(p.memory_free, (size_t) 32 << 20);
    cr_assert_str_eq(p.device_id, "testmod:0");
    cr_assert(strstr(ggml_backend_dev_description(dev), "test module") != NULL);
}

Test(load, the_module_device_starts_a_backend_by_name) {
    cr_assert_not_null(ggml_backend_load(TESTMOD));
    ggml_backend_t b = ggml_backend_init_by_name("testmod0", NULL);
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert_str_eq(ggml_backend_name(b), "TESTMOD");
    cr_assert_eq(ggml_backend_get_device(b), ggml_backend_dev_by_name("TESTMOD0"));
    ggml_backend_free(b);
}

Test(load, an_accelerator_module_does_not_change_the_best_backend) {
    ggml_backend_t before = ggml_backend_init_best();
    cr_assert_not_null(before);
    ggml_backend_dev_t want = ggml_backend_get_device(before);
    ggml_backend_free(before);
    cr_assert_not_null(ggml_backend_load(TESTMOD));
    ggml_backend_t after = ggml_backend_init_best();
    cr_assert_not_null(after);
    cr_assert_eq(ggml_backend_get_device(after), want);
    ggml_backend_free(after);
}

Test(load, loading_twice_registers_once) {
    const struct counts before = counts_now();
    ggml_backend_reg_t a = ggml_backend_load(TESTMOD);
    ggml_backend_reg_t b = ggml_backend_load(TESTMOD);
    cr_assert_not_null(a);
    cr_assert_eq(a, b);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(ggml_backend_reg_count(), before.regs + 1);
    cr_assert_eq(ggml_backend_dev_count(), before.devs + 1);
}

/* ---- unloading ------------------------------------------------------------------------------------ */

Test(load, unload_removes_the_registry_and_its_devices) {
    const struct counts before = counts_now();
    ggml_backend_reg_t reg = ggml_backend_load(TESTMOD);
    cr_assert_not_null(reg);
    ggml_backend_unload(reg);
    cr_assert_null(ggmlx_last_error());
    expect_unchanged(before);
    cr_assert_null(ggml_backend_reg_by_name("TESTMOD"));
    cr_assert_null(ggml_backend_init_by_name("TESTMOD0", NULL));
}

Test(load, a_module_loads_again_after_unload) {
    ggml_backend_reg_t reg = ggml_backend_load(TESTMOD);
    cr_assert_not_null(reg);
    ggml_backend_unload(reg);
    cr_assert_eq(ggml_backend_load(TESTMOD), reg, "the module stayed mapped: the same registry comes back");
    cr_assert_not_null(ggml_backend_dev_by_name("TESTMOD0"));
}

Test(load, a_backend_of_an_unloaded_module_still_works) {
    cr_assert_not_null(ggml_backend_load(TESTMOD));
    ggml_backend_t b = ggml_backend_init_by_name("TESTMOD0", NULL);
    cr_assert_not_null(b);
    ggml_backend_unload(ggml_backend_reg_by_name("TESTMOD"));
    /* the module's code is still mapped: calls on the backend land in it */
    cr_assert_str_eq(ggml_backend_name(b), "TESTMOD");
    ggml_backend_free(b);
}

Test(load, unload_of_null_or_of_an_unregistered_registry_is_an_error) {
    const struct counts before = counts_now();
    ggml_backend_unload(NULL);
    expect_error_with("ggml_backend_unload", "NULL", NULL);
    ggml_backend_reg_t reg = ggml_backend_load(TESTMOD);
    ggml_backend_unload(reg);
    ggml_backend_unload(reg);
    expect_error_with("ggml_backend_unload", "not registered", NULL);
    expect_unchanged(before);
}

/* ---- what is refused ------------------------------------------------------------------------------ */

Test(load, a_missing_file_gives_null_and_the_loader_message) {
    const struct counts before = counts_now();
    cr_assert_null(ggml_backend_load(MISSING));
    expect_error_with("ggml_backend_load", "libggml-no-such-module.so", "No such file", NULL);
    expect_unchanged(before);
}

Test(load, a_library_that_is_no_backend_is_refused) {
    const struct counts before = counts_now();
    cr_assert_null(ggml_backend_load(NOTABACKEND));
    expect_error_with("ggml_backend_load", "libggml-notabackend.so", "not a ggml backend module", NULL);
    expect_unchanged(before);
}

Test(load, a_module_built_for_another_api_version_is_refused) {
    const struct counts before = counts_now();
    cr_assert_null(ggml_backend_load(BADVER));
    char needs[64];
    snprintf(needs, sizeof needs, "this library needs %d", GGML_BACKEND_API_VERSION);
    expect_error_with("ggml_backend_load", "libggml-testmod-badver.so", "built for backend API version 2", needs, NULL);
    expect_unchanged(before);
}

Test(load, a_module_scoring_zero_is_not_supported_here) {
    const struct counts before = counts_now();
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    cr_assert_null(ggml_backend_load(TESTMOD));
    expect_error_with("ggml_backend_load", "not supported on this machine", NULL);
    expect_unchanged(before);
}

Test(load, null_and_empty_paths_are_errors) {
    const struct counts before = counts_now();
    cr_assert_null(ggml_backend_load(NULL));
    expect_error_with("ggml_backend_load", "NULL", NULL);
    cr_assert_null(ggml_backend_load(""));
    expect_error_with("ggml_backend_load", "empty", NULL);
    expect_unchanged(before);
}

/* ---- scanning ------------------------------------------------------------------------------------- */

Test(load, a_scan_takes_the_scored_module_and_passes_over_the_unscored_one) {
    /* the directory holds libggml-testmod.so (score 1) and libggml-testmod-badver.so (no score) */
    ggml_backend_reg_t reg = ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR);
    cr_assert_not_null(reg);
    cr_assert_str_eq(ggml_backend_reg_name(reg), "TESTMOD");
    cr_assert_not_null(ggml_backend_dev_by_name("TESTMOD0"));
}

Test(load, a_scan_loads_nothing_when_every_candidate_scores_zero) {
    const struct counts before = counts_now();
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    cr_assert_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR));
    expect_unchanged(before);
}

Test(load, load_all_from_a_directory_without_known_backends_loads_nothing) {
    const struct counts before = counts_now();
    unsetenv("GGML_BACKEND_PATH");
    ggml_backend_load_all_from_path(GGMLX_TESTMOD_DIR);
    cr_assert_null(ggmlx_last_error());
    expect_unchanged(before);
}

Test(load, load_all_also_loads_the_module_named_by_GGML_BACKEND_PATH) {
    const struct counts before = counts_now();
    setenv("GGML_BACKEND_PATH", TESTMOD, 1);
    ggml_backend_load_all_from_path(GGMLX_TESTMOD_DIR);
    cr_assert_eq(ggml_backend_reg_count(), before.regs + 1);
    cr_assert_not_null(ggml_backend_dev_by_name("TESTMOD0"));
    /* a second time finds it registered already */
    ggml_backend_load_all();
    cr_assert_eq(ggml_backend_reg_count(), before.regs + 1);
}

Test(load, load_all_survives_a_bad_GGML_BACKEND_PATH) {
    const struct counts before = counts_now();
    setenv("GGML_BACKEND_PATH", BADVER, 1);
    ggml_backend_load_all_from_path(GGMLX_TESTMOD_DIR);
    expect_unchanged(before);
}

Test(load, load_all_from_a_missing_directory_is_an_error) {
    const struct counts before = counts_now();
    ggml_backend_load_all_from_path(GGMLX_TESTMOD_DIR "/no-such-dir");
    expect_error_with("ggml_backend_load_all_from_path", "no-such-dir", NULL);
    expect_unchanged(before);
}

/* ---- threads ---------------------------------------------------------------------------------------- */

#define N_THREADS 6

static void * load_it(void * arg) {
    (void) arg;
    return ggml_backend_load(TESTMOD);
}

Test(load, threads_loading_the_same_module_get_one_registry) {
    const struct counts before = counts_now();
    pthread_t th[N_THREADS];
    void *    got[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, load_it, NULL), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], &got[i]);
        cr_assert_not_null(got[i]);
        cr_assert_eq(got[i], got[0]);
    }
    cr_assert_eq(ggml_backend_reg_count(), before.regs + 1);
    cr_assert_eq(ggml_backend_dev_count(), before.devs + 1);
}
