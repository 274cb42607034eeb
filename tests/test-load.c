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
#include "ggmlx-backend.h"
#include "ggmlx.h"
#include "ggml/registry-impl.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* ---- a backend that cannot be used here: one info line, and the reason kept ---------------------- */

/* every log line while a test runs: how many, at what levels, and their text */
static struct {
    int  n, n_info;
    char text[4096];
} g_log;

static void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    g_log.n++;
    g_log.n_info += level == GGML_LOG_LEVEL_INFO;
    strncat(g_log.text, text, sizeof g_log.text - strlen(g_log.text) - 1);
}

static void capture_start(void) {
    memset(&g_log, 0, sizeof g_log);
    ggml_log_set(capture_log, NULL);
}

/* the reason ggmlx_backend_unavailable gives for name, "" when it lists no such backend; and how often */
static int unavailable_reason(const char * name, char * why, size_t size) {
    char n[32], w[448];
    int  found = 0;
    why[0]     = '\0';
    for (size_t i = 0; ggmlx_backend_unavailable(i, n, sizeof n, w, sizeof w); i++) {
        if (strcmp(n, name) == 0) {
            snprintf(why, size, "%s", w);
            found++;
        }
    }
    cr_assert_null(ggmlx_last_error());
    return found;
}

Test(load, a_scan_whose_module_cannot_run_here_logs_one_info_line_with_its_reason) {
    const struct counts before = counts_now();
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    setenv("GGMLX_TESTMOD_REASON", "no TESTMOD device (testErrorNoHardware)", 1);
    capture_start();
    cr_assert_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR));
    ggml_log_set(NULL, NULL);
    cr_assert_eq(g_log.n, 1, "%d log lines:\n%s", g_log.n, g_log.text);
    cr_assert_eq(g_log.n_info, 1, "not at info level:\n%s", g_log.text);
    cr_assert(strstr(g_log.text, "ggml_backend_load_all: TESTMOD module not used: ") == g_log.text, "%s", g_log.text);
    cr_assert(strstr(g_log.text, "/libggml-testmod.so' is not supported on this machine: "
                                 "no TESTMOD device (testErrorNoHardware)\n") != NULL, "%s", g_log.text);
    expect_unchanged(before);

    char why[448];
    cr_assert_eq(unavailable_reason("TESTMOD", why, sizeof why), 1);
    cr_assert(strstr(why, "no TESTMOD device (testErrorNoHardware)") != NULL, "%s", why);
}

Test(load, a_module_scoring_zero_without_a_reason_says_what_it_scored) {
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    unsetenv("GGMLX_TESTMOD_REASON");
    capture_start();
    cr_assert_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR));
    ggml_log_set(NULL, NULL);
    cr_assert_eq(g_log.n, 1, "%s", g_log.text);
    cr_assert(strstr(g_log.text, "not supported on this machine (ggml_backend_score returned 0)") != NULL, "%s",
              g_log.text);
}

Test(load, loading_a_module_that_cannot_run_here_is_an_error_with_its_reason) {
    const struct counts before = counts_now();
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    setenv("GGMLX_TESTMOD_REASON", "no TESTMOD device (testErrorNoHardware)", 1);
    cr_assert_null(ggml_backend_load(TESTMOD));
    expect_error_with("ggml_backend_load", "libggml-testmod.so", "not supported on this machine",
                      "no TESTMOD device (testErrorNoHardware)", NULL);
    expect_unchanged(before);
}

Test(load, a_module_file_that_does_not_load_costs_one_info_line_naming_the_loader_error) {
    /* a module whose library cannot be opened (as libggml-cuda.so without libcublas): here not ELF */
    char dir[] = "/tmp/ggmlx-test-load-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[sizeof dir + 32];
    snprintf(path, sizeof path, "%s/libggml-broken.so", dir);
    FILE * f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("not a shared library\n", f);
    fclose(f);

    const struct counts before = counts_now();
    capture_start();
    ggml_backend_reg_t reg = ggmlx_backend_load_best("broken", dir);
    ggml_log_set(NULL, NULL);
    unlink(path);
    rmdir(dir);
    cr_assert_null(reg);
    cr_assert_eq(g_log.n, 1, "%d log lines:\n%s", g_log.n, g_log.text);
    cr_assert_eq(g_log.n_info, 1, "%s", g_log.text);
    cr_assert(strstr(g_log.text, "ggml_backend_load_all: BROKEN module not used: cannot load '") != NULL, "%s",
              g_log.text);
    cr_assert(strstr(g_log.text, "libggml-broken.so") != NULL, "%s", g_log.text);
    expect_unchanged(before);

    char why[448];
    cr_assert_eq(unavailable_reason("BROKEN", why, sizeof why), 1);
    cr_assert(strstr(why, "cannot load '") == why, "%s", why);
}

Test(load, a_second_scan_logs_no_second_line_and_the_note_goes_once_the_backend_loads) {
    setenv("GGMLX_TESTMOD_SCORE", "0", 1);
    setenv("GGMLX_TESTMOD_REASON", "no TESTMOD device yet", 1);
    capture_start();
    cr_assert_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR));
    cr_assert_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR)); /* a second scan: no second line */
    ggml_log_set(NULL, NULL);
    cr_assert_eq(g_log.n_info, 1, "%s", g_log.text);
    char why[448];
    cr_assert_eq(unavailable_reason("TESTMOD", why, sizeof why), 1);

    setenv("GGMLX_TESTMOD_SCORE", "1", 1);
    cr_assert_not_null(ggmlx_backend_load_best("testmod", GGMLX_TESTMOD_DIR));
    cr_assert_eq(unavailable_reason("TESTMOD", why, sizeof why), 0, "still listed: %s", why);
}

/* a linked registry with no device, like CUDA on a machine without a GPU, that can say why */
static const char * nodev_name(ggml_backend_reg_t reg) {
    (void) reg;
    return "NODEV";
}

static size_t nodev_count(ggml_backend_reg_t reg) {
    (void) reg;
    return 0;
}

static ggml_backend_dev_t nodev_get(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    (void) index;
    return NULL;
}

static const char * nodev_reason(void) {
    return "no NODEV device (testErrorInsufficientDriver)";
}

static void * nodev_proc(ggml_backend_reg_t reg, const char * name) {
    (void) reg;
    return strcmp(name, GGMLX_BACKEND_UNAVAILABLE_REASON) == 0 ? (void *) nodev_reason : NULL;
}

static struct ggml_backend_reg g_nodev_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface       = { .get_name = nodev_name, .get_device_count = nodev_count, .get_device = nodev_get,
                     .get_proc_address = nodev_proc },
};

Test(load, a_registered_registry_without_devices_is_listed_with_its_reason) {
    char why[448];
    cr_assert_eq(unavailable_reason("NODEV", why, sizeof why), 0);
    ggml_backend_register(&g_nodev_reg);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(unavailable_reason("NODEV", why, sizeof why), 1);
    cr_assert_str_eq(why, "no NODEV device (testErrorInsufficientDriver)");
}

Test(load, a_registry_without_devices_or_a_reason_is_not_listed) {
    static struct ggml_backend_reg quiet;
    quiet                        = g_nodev_reg;
    quiet.iface.get_proc_address = NULL;
    ggml_backend_register(&quiet);
    char why[448];
    cr_assert_eq(unavailable_reason("NODEV", why, sizeof why), 0, "%s", why);
}

Test(load, unavailable_needs_buffers_with_room) {
    char name[32], why[64];
    cr_assert_not(ggmlx_backend_unavailable(0, NULL, 0, why, sizeof why));
    expect_error_with("ggmlx_backend_unavailable", "buffers", NULL);
    cr_assert_not(ggmlx_backend_unavailable(0, name, sizeof name, why, 0));
    expect_error_with("ggmlx_backend_unavailable", "buffers", NULL);
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
