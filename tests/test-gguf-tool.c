/*
 * test-gguf-tool.c -- the program ggml-gguf, run as a user would run it on crafted files: the
 * header, the key/values with a long array abbreviated, the tensors, --json, and a bad file
 * (exit status 1, the reason with its byte offset). The build passes the program's directory
 * (GGMLX_BIN_DIR); without GGML_BUILD_TOOLS the tests skip.
 */
#include <criterion/criterion.h>

#include "gguf-craft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

struct run {
    int  status;
    char out[32768]; /* stdout and stderr together */
};

static void run_tool(struct run * r, const char * args, const char * path) {
#ifndef GGMLX_BIN_DIR
    (void) r;
    (void) args;
    (void) path;
    cr_skip_test("ggml-gguf is not built (GGML_BUILD_TOOLS=OFF)");
#else
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s'/ggml-gguf %s '%s' 2>&1", GGMLX_BIN_DIR, args, path);
    FILE * p = popen(cmd, "r");
    cr_assert_not_null(p, "popen(%s)", cmd);
    size_t n = fread(r->out, 1, sizeof r->out - 1, p);
    r->out[n] = '\0';
    for (char sink[4096]; fread(sink, 1, sizeof sink, p) > 0;) {
    }
    const int ws = pclose(p);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
#endif
}

static void expect_in(const struct run * r, const char * what) {
    cr_assert(strstr(r->out, what) != NULL, "output lacks '%s':\n%s", what, r->out);
}

/* 3 keys (one a 20-element array, one a string that is not UTF-8) and 2 tensors */
static void craft_model(struct craft * c) {
    craft_header(c, 3, 2, 3);
    craft_kv_str(c, "general.architecture", "llama");
    craft_kv_arr(c, "tokenizer.ggml.scores", 6 /* f32 */, 20);
    for (int i = 0; i < 20; i++) {
        craft_f32(c, (float) i * 0.5f);
    }
    craft_kv_str(c, "raw", "a\xff\"b");
    craft_info(c, "token_embd.weight", 2, (int64_t[]) { 64, 3 }, 8 /* q8_0 */, 0);
    craft_info(c, "output_norm.weight", 1, (int64_t[]) { 64 }, 0 /* f32 */, 224);
    craft_pad(c, 32);
    craft_fill(c, 224 + 256, 0);
}

static void with_file(void (*craft_fn)(struct craft *), char * path) {
    struct craft c = { 0 };
    craft_fn(&c);
    cr_assert_eq(craft_write_tmp(&c, c.n, path), 0);
    craft_free(&c);
}

Test(gguf_tool, prints_the_header_the_key_values_and_the_tensors) {
    static struct run r;
    char path[64];
    with_file(craft_model, path);
    run_tool(&r, "", path);
    unlink(path);
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "GGUF version 3");
    expect_in(&r, "  tensors      2\n");
    expect_in(&r, "  key/values   3\n");
    expect_in(&r, "  alignment    32\n");
    expect_in(&r, "  data offset  352\n");
    expect_in(&r, "\"llama\"");
    expect_in(&r, "arr[f32,20]");
    expect_in(&r, "[0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, ... (12 more)]");
    expect_in(&r, "\"a\\xff\\\"b\"");
    cr_assert(strstr(r.out, "4.5") == NULL, "only the first 8 elements are shown:\n%s", r.out);
    expect_in(&r, "token_embd.weight");
    expect_in(&r, "q8_0   [64, 3]");
    expect_in(&r, "           0          204\n");
    expect_in(&r, "output_norm.weight");
    expect_in(&r, "         224          256\n");
}

Test(gguf_tool, json_holds_the_same) {
    static struct run r;
    char path[64];
    with_file(craft_model, path);
    run_tool(&r, "--json", path);
    unlink(path);
    cr_assert_eq(r.status, 0, "%s", r.out);
    expect_in(&r, "\"version\": 3, \"n_tensors\": 2, \"n_kv\": 3, \"alignment\": 32, \"data_offset\": 352");
    expect_in(&r, "{\"key\": \"general.architecture\", \"type\": \"str\", \"value\": \"llama\"}");
    expect_in(&r, "\"type\": \"arr\", \"element_type\": \"f32\", \"n\": 20, \"values\": [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5]}");
    expect_in(&r, "\"value\": \"a\\ufffd\\\"b\"");
    expect_in(&r, "{\"name\": \"token_embd.weight\", \"type\": \"q8_0\", \"ne\": [64, 3], \"offset\": 0, \"bytes\": 204}");
    expect_in(&r, "{\"name\": \"output_norm.weight\", \"type\": \"f32\", \"ne\": [64], \"offset\": 224, \"bytes\": 256}");
    int depth = 0;
    for (const char * c = r.out; *c; c++) {
        depth += (*c == '{' || *c == '[') - (*c == '}' || *c == ']');
        cr_assert_geq(depth, 0);
    }
    cr_assert_eq(depth, 0, "the JSON is whole:\n%s", r.out);
}

static void craft_bad(struct craft * c) {
    craft_header(c, 3, 0, 1);
    craft_kv_arr(c, "a", 0, (uint64_t) 1 << 62);
}

Test(gguf_tool, a_bad_file_prints_the_error_and_exits_1) {
    static struct run r;
    char path[64];
    with_file(craft_bad, path);
    run_tool(&r, "", path);
    unlink(path);
    cr_assert_eq(r.status, 1, "%s", r.out);
    expect_in(&r, "ggml-gguf: ");
    expect_in(&r, "array count");
    expect_in(&r, "at byte 41");
}

Test(gguf_tool, a_missing_file_exits_1_and_no_file_is_a_usage_error) {
    static struct run r;
    run_tool(&r, "", "/nonexistent/model.gguf");
    cr_assert_eq(r.status, 1, "%s", r.out);
    expect_in(&r, "cannot open");
    run_tool(&r, "--bogus", "x");
    cr_assert_eq(r.status, 2, "%s", r.out);
    expect_in(&r, "usage: ggml-gguf");
}
