/*
 * test-tools.c -- the programs ggml-devices and ggml-seed, run as a user would run them: exit
 * status and output. The build passes their directory (GGMLX_BIN_DIR) and the test modules'
 * (GGMLX_TESTMOD_DIR); without GGML_BUILD_TOOLS there is nothing to run and the tests skip.
 */
#include <criterion/criterion.h>

#include "ggml-backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef GGMLX_TESTMOD_DIR
#    error "GGMLX_TESTMOD_DIR must name the directory of the test modules (tests/CMakeLists.txt)"
#endif

struct run {
    int  status; /* exit status, -1 when the program did not exit normally */
    char out[16384]; /* stdout and stderr together */
};

/* Runs "<bin dir>/<args>" with stderr joined to stdout. */
static void run_tool(struct run * r, const char * args) {
#ifndef GGMLX_BIN_DIR
    (void) r;
    (void) args;
    cr_skip_test("the programs are not built (GGML_BUILD_TOOLS=OFF)");
#else
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s'/%s 2>&1", GGMLX_BIN_DIR, args);
    FILE * p = popen(cmd, "r");
    cr_assert_not_null(p, "popen(%s)", cmd);
    size_t n = fread(r->out, 1, sizeof r->out - 1, p);
    r->out[n] = '\0';
    /* drain what did not fit, so the program never blocks on a full pipe */
    for (char sink[4096]; fread(sink, 1, sizeof sink, p) > 0;) {
    }
    const int ws = pclose(p);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
#endif
}

static void expect_in(const struct run * r, const char * what) {
    cr_assert(strstr(r->out, what) != NULL, "output lacks '%s':\n%s", what, r->out);
}

/* ---- ggml-devices ------------------------------------------------------------------------------- */

Test(tools, devices_lists_the_cpu_in_a_table) {
    static struct run r;
    run_tool(&r, "ggml-devices");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "registry");
    expect_in(&r, "device_id");
    expect_in(&r, "description");
    expect_in(&r, "  CPU ");
}

Test(tools, devices_json_lists_registries_and_devices_with_props) {
    static struct run r;
    run_tool(&r, "ggml-devices --json");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "\"registries\": [");
    expect_in(&r, "\"unavailable\": ["); /* backends there but not usable, with the reason */
    expect_in(&r, "{\"name\": \"CPU\", \"devices\": [\"CPU\"]}");
    expect_in(&r, "\"name\": \"CPU\", \"registry\": \"CPU\", \"type\": \"CPU\"");
    expect_in(&r, "\"memory_total\": ");
    expect_in(&r, "\"caps\": {\"async\": ");
    expect_in(&r, "\"device_id\": ");
    /* braces and brackets balance (a cheap check that the JSON is whole) */
    int depth = 0;
    for (const char * c = r.out; *c; c++) {
        depth += (*c == '{' || *c == '[') - (*c == '}' || *c == ']');
        cr_assert_geq(depth, 0);
    }
    cr_assert_eq(depth, 0, "%s", r.out);
}

Test(tools, devices_shows_the_device_of_a_loaded_module) {
    static struct run r;
    run_tool(&r, "ggml-devices --json --load '" GGMLX_TESTMOD_DIR "/libggml-testmod.so'");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "{\"name\": \"TESTMOD\", \"devices\": [\"TESTMOD0\"]}");
    expect_in(&r, "\"name\": \"TESTMOD0\", \"registry\": \"TESTMOD\", \"type\": \"ACCEL\"");
    expect_in(&r, "\"memory_free\": 33554432, \"memory_total\": 67108864, \"device_id\": \"testmod:0\"");
}

Test(tools, devices_table_shows_a_loaded_module) {
    static struct run r;
    run_tool(&r, "ggml-devices --load '" GGMLX_TESTMOD_DIR "/libggml-testmod.so'");
    cr_assert_eq(r.status, 0, "%s", r.out);
    /* the statically linked registries (SIM, with or without devices, and the CPU) plus the module */
    char want[64];
    snprintf(want, sizeof want, "%zu backend registries", ggml_backend_reg_count() + 1);
    expect_in(&r, want);
    expect_in(&r, "TESTMOD0");
    expect_in(&r, "ACCEL");
    expect_in(&r, "32 / 64");
    expect_in(&r, "testmod:0");
}

Test(tools, devices_load_all_takes_the_module_named_by_GGML_BACKEND_PATH) {
    static struct run r;
    setenv("GGML_BACKEND_PATH", GGMLX_TESTMOD_DIR "/libggml-testmod.so", 1);
    run_tool(&r, "ggml-devices --load-all --json");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "{\"name\": \"TESTMOD\", \"devices\": [\"TESTMOD0\"]}");
    expect_in(&r, "{\"name\": \"CPU\", \"devices\": [\"CPU\"]}");
}

Test(tools, devices_load_all_without_modules_lists_the_static_backends) {
    static struct run r;
    unsetenv("GGML_BACKEND_PATH");
    run_tool(&r, "ggml-devices --load-all");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "  CPU ");
    cr_assert(strstr(r.out, "TESTMOD") == NULL, "%s", r.out);
}

Test(tools, devices_fails_with_the_reason_when_a_module_cannot_be_loaded) {
    static struct run r;
    run_tool(&r, "ggml-devices --load '" GGMLX_TESTMOD_DIR "/libggml-notabackend.so'");
    cr_assert_eq(r.status, 1, "%s", r.out);
    expect_in(&r, "not a ggml backend module");
    expect_in(&r, "  CPU "); /* and still lists what there is */
}

Test(tools, devices_refuses_a_bad_argument_with_usage) {
    static struct run r;
    run_tool(&r, "ggml-devices --frobnicate");
    cr_assert_eq(r.status, 2, "%s", r.out);
    expect_in(&r, "bad argument '--frobnicate'");
    expect_in(&r, "usage: ggml-devices");
    run_tool(&r, "ggml-devices --load");
    cr_assert_eq(r.status, 2, "%s", r.out);
    expect_in(&r, "missing PATH");
}

/* ---- ggml-seed ---------------------------------------------------------------------------------- */

Test(tools, seed_example_computes_relu_asynchronously_and_checks_it) {
    static struct run r;
    run_tool(&r, "ggml-seed");
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "backend: CPU");
    expect_in(&r, "context: 16 MiB");
    expect_in(&r, "ggml_backend_graph_compute_async: enqueued");
    expect_in(&r, "ggml_backend_synchronize: done");
    expect_in(&r, "check: 100 of 100 values right");
    expect_in(&r, "seed example: OK");
}

Test(tools, seed_example_in_sync_mode_gives_the_same_answer) {
    setenv("GGMLX_CPU_SYNC", "1", 1);
    static struct run s;
    run_tool(&s, "ggml-seed");
    cr_assert_eq(s.status, 0, "%s", s.out);
    expect_in(&s, "check: 100 of 100 values right");
}
