/*
 * test-gguf-hostile.c -- a GGUF file is untrusted input. Each test crafts one file that breaks
 * one rule of the reader and checks that every way of reading it (from a path, from memory and
 * through the callback reader 3 bytes a call; each without a ggml context, with one and no_alloc,
 * with one and the data read) answers NULL, leaves *ctx NULL, logs an error and records a message
 * that names the field and the byte where it lies. Leaks are the sanitizer build's to find
 * (ASan's leak check runs at each test's exit).
 *
 * Each broken file differs from a good one by the one field its test is named for; the good one
 * is read in good_file_reads_every_way (and next to several rules), so a file is refused for the
 * field under test and not for something else wrong with it.
 */
#include <criterion/criterion.h>

#include "gguf-craft.h"
#include "test-errlog.h"

#include "ggml.h"
#include "gguf.h"
#include "ggmlx.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static void setup(void) {
    ggml_log_set(count_log, NULL);
}

TestSuite(gguf_hostile, .init = setup);

/* "byte N" in msg, N not followed by another digit */
static bool names_byte(const char * msg, uint64_t at) {
    char want[40];
    snprintf(want, sizeof want, "byte %llu", (unsigned long long) at);
    for (const char * p = strstr(msg, want); p != NULL; p = strstr(p + 1, want)) {
        if (!isdigit((unsigned char) p[strlen(want)])) {
            return true;
        }
    }
    return false;
}

enum how { FROM_FILE, FROM_BUFFER, FROM_CALLBACK };
static const char * how_name[] = { "file", "buffer", "callback" };

/* the callback reader over c, 3 bytes a call at most (so fields straddle calls) */
static size_t read_craft(void * ud, void * out, uint64_t offset, size_t len) {
    const struct craft * c = ud;
    if (offset >= c->n) {
        return 0;
    }
    size_t n = c->n - (size_t) offset < len ? c->n - (size_t) offset : len;
    memcpy(out, c->b + offset, n);
    return n;
}

static struct gguf_context * read_as(enum how how, const struct craft * c, const char * path, bool with_ctx,
                                     bool no_alloc, struct ggml_context ** gctx) {
    struct gguf_init_params p = { .no_alloc = no_alloc, .ctx = with_ctx ? gctx : NULL };
    switch (how) {
        case FROM_FILE: return gguf_init_from_file(path, p);
        case FROM_BUFFER: return gguf_init_from_buffer(c->b, c->n, p);
        case FROM_CALLBACK: return gguf_init_from_callback(read_craft, (void *) c, 3, c->n, p);
    }
    return NULL;
}

/*
 * Every way of reading c fails with a message holding word and, unless at is UINT64_MAX,
 * "byte <at>". Frees c.
 */
#define NO_OFFSET UINT64_MAX
static void expect_refused(struct craft * c, const char * word, uint64_t at) {
    char path[64];
    cr_assert_eq(craft_write_tmp(c, c->n, path), 0, "temporary file");
    static const struct { bool with_ctx, no_alloc; } modes[] = { { false, true }, { true, true }, { true, false } };
    for (int how = FROM_FILE; how <= FROM_CALLBACK; how++) {
        if (how == FROM_BUFFER && c->n == 0) {
            continue; /* an empty buffer is its own error ("size is 0") */
        }
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            struct ggml_context * gctx = (struct ggml_context *) &gctx; /* not NULL: must be reset */
            ggmlx_clear_last_error();
            g_n_errors = 0;
            struct gguf_context * g = read_as((enum how) how, c, path, modes[m].with_ctx, modes[m].no_alloc, &gctx);
            const char * how_s = how_name[how];
            if (g != NULL) {
                gguf_free(g);
                if (modes[m].with_ctx) {
                    ggml_free(gctx);
                }
                unlink(path);
                cr_assert_fail("%s, ctx %d, no_alloc %d: a file breaking the rule on '%s' was read", how_s,
                               modes[m].with_ctx, modes[m].no_alloc, word);
            }
            if (modes[m].with_ctx) {
                cr_assert_null(gctx, "%s: *params.ctx is NULL after a failure", how_s);
            }
            const char * msg = ggmlx_last_error();
            cr_assert_not_null(msg, "%s: an error is recorded", how_s);
            cr_assert_gt(g_n_errors, 0, "%s: the error is logged", how_s);
            cr_assert_not_null(strstr(msg, word), "%s: the message names '%s': %s", how_s, word, msg);
            if (at != NO_OFFSET) {
                cr_assert(names_byte(msg, at), "%s: the message names byte %llu: %s", how_s, (unsigned long long) at,
                          msg);
            }
        }
    }
    unlink(path);
    craft_free(c);
}

/* Every way of reading c succeeds; returns a context read from the buffer without a ggml one. */
static struct gguf_context * expect_read(const struct craft * c) {
    char path[64];
    cr_assert_eq(craft_write_tmp(c, c->n, path), 0, "temporary file");
    for (int how = FROM_FILE; how <= FROM_CALLBACK; how++) {
        for (int na = 0; na <= 1; na++) {
            struct ggml_context * gctx = NULL;
            struct gguf_context * g    = read_as((enum how) how, c, path, true, na, &gctx);
            cr_assert_not_null(g, "read (%s, no_alloc %d): %s", how_name[how], na,
                               ggmlx_last_error());
            cr_assert_not_null(gctx);
            gguf_free(g);
            ggml_free(gctx);
        }
    }
    unlink(path);
    struct gguf_context * g = gguf_init_from_buffer(c->b, c->n, (struct gguf_init_params) { .no_alloc = true });
    cr_assert_not_null(g, "%s", ggmlx_last_error());
    ASSERT_NO_ERROR();
    return g;
}

/* ---- files with one tensor ----------------------------------------------------------------- */

struct one_tensor {
    const char * name;
    uint32_t     n_dims;
    int64_t      ne[8];
    int32_t      type;
    uint64_t     offset;
    size_t       data;       /* bytes of data section written after the padding */
    bool         no_padding; /* end the file right after the infos */
    uint64_t     at_ndims, at_ne, at_type, at_offset; /* filled in: where those fields lie */
};

static void craft_one_tensor(struct craft * c, struct one_tensor * t) {
    craft_header(c, 3, 1, 0);
    craft_str(c, t->name);
    t->at_ndims = craft_at(c);
    craft_u32(c, t->n_dims);
    t->at_ne = craft_at(c);
    for (uint32_t i = 0; i < t->n_dims; i++) {
        craft_i64(c, t->ne[i]);
    }
    t->at_type = craft_at(c);
    craft_i32(c, t->type);
    t->at_offset = craft_at(c);
    craft_u64(c, t->offset);
    if (!t->no_padding) {
        craft_pad(c, 32);
        craft_fill(c, t->data, 0x3c);
    }
}

/* ---- the good file, and the header --------------------------------------------------------- */

Test(gguf_hostile, good_file_reads_every_way) {
    struct craft c = { 0 };
    craft_header(&c, 3, 2, 2);
    craft_kv_u32(&c, "general.alignment", 64);
    craft_kv_arr(&c, "tokens", CT_STR, 2);
    craft_str(&c, "a");
    craft_str(&c, "\xff\xfe not UTF-8 in a value is read"); /* vocabularies hold raw bytes */
    craft_info(&c, "w", 2, (int64_t[]) { 4, 2 }, GGML_TYPE_F32, 0);
    craft_info(&c, "b", 1, (int64_t[]) { 32 }, GGML_TYPE_Q8_0, 64);
    craft_pad(&c, 64);
    craft_fill(&c, 64 + 34, 1);
    struct gguf_context * g = expect_read(&c);
    cr_assert_eq(gguf_get_alignment(g), 64);
    cr_assert_eq(gguf_get_n_tensors(g), 2);
    cr_assert_eq(gguf_get_tensor_offset(g, 1), 64);
    cr_assert_eq(gguf_get_arr_n(g, 1), 2);
    gguf_free(g);
    craft_free(&c);
}

Test(gguf_hostile, bad_magic) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 0);
    memcpy(c.b, "GGML", 4);
    expect_refused(&c, "magic", 0);
}

Test(gguf_hostile, an_empty_file_is_refused) {
    struct craft c = { 0 };
    expect_refused(&c, "truncated", 0);
}

Test(gguf_hostile, a_file_shorter_than_the_magic_is_refused) {
    struct craft c = { 0 };
    craft_bytes(&c, "GGU", 3);
    expect_refused(&c, "magic", 0);
}

Test(gguf_hostile, version_0_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 0, 0, 0);
    expect_refused(&c, "version", 4);
}

Test(gguf_hostile, version_1_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 1, 0, 0);
    expect_refused(&c, "version", 4);
}

Test(gguf_hostile, a_future_version_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 4, 0, 0);
    expect_refused(&c, "version", 4);
    craft_header(&c, 0xFFFF, 0, 0);
    expect_refused(&c, "version", 4);
}

Test(gguf_hostile, a_byte_swapped_version_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 0x03000000, 0, 0);
    expect_refused(&c, "byte-swapped", 4);
}

Test(gguf_hostile, versions_2_and_3_are_read) {
    for (uint32_t v = 2; v <= 3; v++) {
        struct craft c = { 0 };
        craft_header(&c, v, 0, 0);
        struct gguf_context * g = expect_read(&c);
        cr_assert_eq(gguf_get_version(g), v);
        gguf_free(g);
        craft_free(&c);
    }
}

Test(gguf_hostile, a_header_cut_short_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 0);
    c.n = 20; /* the key count has 4 of its 8 bytes */
    expect_refused(&c, "key count", 16);
}

Test(gguf_hostile, a_negative_tensor_count_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, -1, 0);
    expect_refused(&c, "is negative", 8); /* not merely "does not fit", which -1 as unsigned would */
}

Test(gguf_hostile, tensor_count_overflow) {
    /* times sizeof(struct gguf_tensor_info) these overflow size_t */
    const int64_t counts[] = { INT64_MAX, (int64_t) 1 << 59, (int64_t) 1 << 40 };
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        struct craft c = { 0 };
        craft_header(&c, 3, counts[i], 0);
        craft_fill(&c, 100, 0);
        expect_refused(&c, "tensor count", 8);
    }
}

Test(gguf_hostile, a_negative_kv_count_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, INT64_MIN);
    expect_refused(&c, "is negative", 16);
}

Test(gguf_hostile, a_kv_count_larger_than_the_file_is_refused_before_allocating) {
    /* 2^40 pairs would be terabytes of gguf_kv: ASan aborts on such a malloc, so reaching the
     * message at all shows nothing was allocated from the count */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, (int64_t) 1 << 40);
    craft_kv_u32(&c, "a", 1);
    expect_refused(&c, "key count", 16);
}

Test(gguf_hostile, counts_that_only_fit_together_are_refused) {
    /* each count alone fits in the 200 bytes left, both together do not */
    struct craft c = { 0 };
    craft_header(&c, 3, 8, 10);
    craft_fill(&c, 200, 0);
    expect_refused(&c, "key count", 16);
}

/* ---- keys and values ------------------------------------------------------------------------ */

Test(gguf_hostile, a_string_length_past_the_end_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_u64(&c, 1000);
    craft_fill(&c, 40, 'a');
    expect_refused(&c, "string length", 24);
}

Test(gguf_hostile, a_string_length_near_uint64_max_is_refused) {
    /* length + 1 (for the NUL) would wrap to 0 */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_u64(&c, UINT64_MAX);
    craft_fill(&c, 16, 'a');
    expect_refused(&c, "string length", 24);
}

Test(gguf_hostile, an_empty_key_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_u32(&c, "", 7);
    expect_refused(&c, "empty key", 24);
}

Test(gguf_hostile, a_key_with_a_nul_byte_is_refused) {
    /* "a\0b" and "a\0c" would be one key to strcmp */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_strn(&c, "a\0b", 3);
    craft_i32(&c, CT_U8);
    craft_u8(&c, 1);
    expect_refused(&c, "NUL byte", 24);
}

Test(gguf_hostile, a_key_that_is_not_utf8_is_refused) {
    static const char * bad[] = {
        "a\xff",          /* never valid */
        "\xc0\xaf",       /* overlong '/' */
        "\xed\xa0\x80",   /* a surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "ab\xe2\x82",     /* cut in the middle of a sequence */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct craft c = { 0 };
        craft_header(&c, 3, 0, 1);
        craft_kv_u32(&c, bad[i], 1);
        expect_refused(&c, "invalid UTF-8", 24);
    }
    struct craft ok = { 0 };
    craft_header(&ok, 3, 0, 1);
    craft_kv_u32(&ok, "cl\xc3\xa9.\xe2\x82\xac.\xf0\x9f\x98\x80", 1); /* é, €, an emoji */
    struct gguf_context * g = expect_read(&ok);
    cr_assert_str_eq(gguf_get_key(g, 0), "cl\xc3\xa9.\xe2\x82\xac.\xf0\x9f\x98\x80");
    gguf_free(g);
    craft_free(&ok);
}

Test(gguf_hostile, duplicate_keys_are_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 3);
    craft_kv_u32(&c, "a", 1);
    craft_kv_str(&c, "b", "x");
    const uint64_t at = craft_at(&c);
    craft_key(&c, "a", CT_U8);
    craft_u8(&c, 2);
    expect_refused(&c, "duplicate key", at);
}

Test(gguf_hostile, an_unknown_gguf_type_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_key(&c, "a", 13); /* GGUF_TYPE_COUNT */
    craft_u32(&c, 0);
    expect_refused(&c, "unknown value type", 24 + 8 + 1);
}

Test(gguf_hostile, a_negative_gguf_type_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_key(&c, "a", -1);
    craft_u32(&c, 0);
    expect_refused(&c, "unknown value type", 24 + 8 + 1);
}

Test(gguf_hostile, a_nested_array_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", CT_ARR, 1);
    craft_i32(&c, CT_U8);
    craft_u64(&c, 1);
    craft_u8(&c, 1);
    expect_refused(&c, "nested array", 24 + 8 + 1 + 4);
}

Test(gguf_hostile, an_array_of_an_unknown_type_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", 99, 1);
    craft_u64(&c, 0);
    expect_refused(&c, "unknown value type", 24 + 8 + 1 + 4);
}

Test(gguf_hostile, array_count_times_size_overflow) {
    /* 2^61 + 1 u64 elements: n * 8 wraps to 8, which the 8 bytes present would satisfy */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", CT_U64, ((uint64_t) 1 << 61) + 1);
    craft_u64(&c, 42);
    expect_refused(&c, "array count", 24 + 8 + 1 + 4 + 4);
}

Test(gguf_hostile, an_array_count_huge_with_tiny_elements_is_refused_at_once) {
    /* the 43-byte kind of file that keeps PyPI gguf's reader busy: a u8 array of 2^62 elements
     * in a file of a few dozen bytes; refused from the count, without looping over elements */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", CT_U8, (uint64_t) 1 << 62);
    craft_u8(&c, 0);
    cr_assert_lt(c.n, 64);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_refused(&c, "array count", 24 + 8 + 1 + 4 + 4);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 5, "refused at once");
}

Test(gguf_hostile, a_string_array_longer_than_the_file_is_refused) {
    /* each string takes at least its 8-byte length: 1000 cannot fit in 16 bytes */
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", CT_STR, 1000);
    craft_str(&c, "x");
    craft_str(&c, "");
    expect_refused(&c, "array count", 24 + 8 + 1 + 4 + 4);
}

Test(gguf_hostile, a_string_in_an_array_running_past_the_end_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "a", CT_STR, 2);
    craft_str(&c, "ab");
    const uint64_t at = craft_at(&c);
    craft_u64(&c, 100);
    craft_fill(&c, 10, 'z');
    expect_refused(&c, "string length", at);
}

Test(gguf_hostile, a_value_cut_short_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_key(&c, "a", CT_U64);
    craft_u32(&c, 7); /* 4 of the value's 8 bytes */
    expect_refused(&c, "truncated", 24 + 8 + 1 + 4);
}

/* ---- the alignment -------------------------------------------------------------------------- */

static void craft_alignment_file(struct craft * c, uint32_t align) {
    craft_header(c, 3, 0, 1);
    craft_kv_u32(c, "general.alignment", align);
}

Test(gguf_hostile, alignment_not_a_power_of_two_is_refused) {
    const uint32_t bad[] = { 48, 3, 0xFFFFFFFF };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct craft c = { 0 };
        craft_alignment_file(&c, bad[i]);
        expect_refused(&c, "power of two", 24);
    }
    struct craft ok = { 0 };
    craft_alignment_file(&ok, 16);
    struct gguf_context * g = expect_read(&ok);
    cr_assert_eq(gguf_get_alignment(g), 16);
    gguf_free(g);
    craft_free(&ok);
}

Test(gguf_hostile, an_alignment_of_zero_is_refused) {
    /* padding to a multiple of 0 would divide by zero */
    struct craft c = { 0 };
    craft_alignment_file(&c, 0);
    expect_refused(&c, "power of two", 24);
}

Test(gguf_hostile, alignment_of_the_wrong_type_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_key(&c, "general.alignment", CT_U64);
    craft_u64(&c, 32);
    expect_refused(&c, "must be a u32", 24);

    craft_header(&c, 3, 0, 1);
    craft_kv_str(&c, "general.alignment", "32");
    expect_refused(&c, "must be a u32", 24);
}

Test(gguf_hostile, an_alignment_array_is_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 0, 1);
    craft_kv_arr(&c, "general.alignment", CT_U32, 1);
    craft_u32(&c, 32);
    expect_refused(&c, "must be a u32", 24);
}

Test(gguf_hostile, alignment_overflow_is_refused) {
    /* GHSA-96jg-mvhq-q7q7 kind: the largest u32 power of two; the infos' end padded to it lies
     * far past this small file, and must not wrap around or be read from */
    struct craft c = { 0 };
    craft_header(&c, 3, 1, 1);
    craft_kv_u32(&c, "general.alignment", 0x80000000u);
    craft_info(&c, "t", 1, (int64_t[]) { 8 }, GGML_TYPE_F32, 0);
    const uint64_t end = craft_at(&c);
    craft_fill(&c, 64, 0);
    expect_refused(&c, "data section starts", end);
}

/* ---- tensor infos --------------------------------------------------------------------------- */

Test(gguf_hostile, a_data_section_start_past_the_end_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 0 }, .type = GGML_TYPE_F32, .no_padding = true };
    craft_one_tensor(&c, &t);
    cr_assert_neq(c.n % 32, 0);
    expect_refused(&c, "data section starts", c.n);
}

Test(gguf_hostile, a_zero_dim_is_read_as_an_empty_tensor) {
    /* as upstream: a dimension of 0 is an empty tensor, not an error */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 2, .ne = { 4, 0 }, .type = GGML_TYPE_F32 };
    craft_one_tensor(&c, &t);
    struct gguf_context * g = expect_read(&c);
    cr_assert_eq(gguf_get_tensor_size(g, 0), 0);
    gguf_free(g);
    craft_free(&c);
}

Test(gguf_hostile, a_tensor_name_of_64_bytes_is_refused) {
    char name[65];
    memset(name, 'n', 64);
    name[64] = '\0';
    struct craft c = { 0 };
    struct one_tensor t = { .name = name, .n_dims = 1, .ne = { 8 }, .type = GGML_TYPE_F32, .data = 32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "name too long", 24);

    name[63] = '\0'; /* the longest name that fits GGML_MAX_NAME with its NUL */
    struct one_tensor ok = { .name = name, .n_dims = 1, .ne = { 8 }, .type = GGML_TYPE_F32, .data = 32 };
    craft_one_tensor(&c, &ok);
    struct gguf_context * g = expect_read(&c);
    cr_assert_str_eq(gguf_get_tensor_name(g, 0), name);
    gguf_free(g);
    craft_free(&c);
}

Test(gguf_hostile, a_tensor_name_that_is_not_utf8_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "w\xc3", .n_dims = 1, .ne = { 8 }, .type = GGML_TYPE_F32, .data = 32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "invalid UTF-8", 24);
}

Test(gguf_hostile, duplicate_tensor_names_are_refused) {
    struct craft c = { 0 };
    craft_header(&c, 3, 2, 0);
    craft_info(&c, "w", 1, (int64_t[]) { 8 }, GGML_TYPE_F32, 0);
    const uint64_t at = craft_at(&c);
    craft_info(&c, "w", 1, (int64_t[]) { 8 }, GGML_TYPE_F32, 32);
    craft_pad(&c, 32);
    craft_fill(&c, 64, 0);
    expect_refused(&c, "duplicate tensor name", at);
}

Test(gguf_hostile, more_than_4_dims_is_refused) {
    const uint32_t bad[] = { 5, 0xFFFFFFFF };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct craft c = { 0 };
        struct one_tensor t = { .name = "t", .n_dims = bad[i] == 5 ? 5 : 0, .ne = { 1, 1, 1, 1, 8 },
                                .type = GGML_TYPE_F32, .data = 32 };
        craft_one_tensor(&c, &t);
        memcpy(c.b + t.at_ndims, &bad[i], 4); /* little-endian hosts only, as the reader */
        expect_refused(&c, "n_dims", t.at_ndims);
    }
}

Test(gguf_hostile, a_negative_dim_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 2, .ne = { 8, -1 }, .type = GGML_TYPE_F32, .data = 32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "negative", t.at_ne + 8);
}

Test(gguf_hostile, dims_whose_product_overflows_are_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 3, .ne = { 32, (int64_t) 1 << 31, (int64_t) 1 << 32 },
                            .type = GGML_TYPE_F32, .data = 32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "element count overflows", t.at_ne + 16);
}

Test(gguf_hostile, a_byte_size_that_overflows_is_refused) {
    /* GHSA-vgg9-87g3-85w8 kind: the element count fits int64, the bytes do not fit size_t */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { (int64_t) 1 << 62 }, .type = GGML_TYPE_F32,
                            .data = 32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "byte size overflows", t.at_ndims);

    /* 2^60 F64 elements are 2^63 bytes: past INT64_MAX, which ggml_nbytes returns */
    struct one_tensor t3 = { .name = "t", .n_dims = 1, .ne = { (int64_t) 1 << 60 }, .type = GGML_TYPE_F64,
                             .data = 32 };
    craft_one_tensor(&c, &t3);
    expect_refused(&c, "byte size overflows", t3.at_ndims);
}

Test(gguf_hostile, an_unknown_ggml_type_is_refused) {
    const int32_t bad[] = { GGML_TYPE_COUNT, 1000, INT32_MAX };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct craft c = { 0 };
        struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 32 }, .type = bad[i], .data = 128 };
        craft_one_tensor(&c, &t);
        expect_refused(&c, "unknown ggml type", t.at_type);
    }
}

Test(gguf_hostile, a_negative_ggml_type_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 32 }, .type = -1, .data = 128 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "unknown ggml type", t.at_type);
}

Test(gguf_hostile, a_removed_ggml_type_is_refused) {
    /* ids 4 and 5 (Q4_2, Q4_3) were removed: their block size is 0 */
    const int32_t removed[] = { 4, 5 };
    for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
        struct craft c = { 0 };
        struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 32 }, .type = removed[i], .data = 128 };
        craft_one_tensor(&c, &t);
        expect_refused(&c, "unknown ggml type", t.at_type);
    }
}

Test(gguf_hostile, a_row_not_a_multiple_of_the_block_size_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 2, .ne = { 33, 2 }, .type = GGML_TYPE_Q8_0, .data = 128 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "block size", t.at_type);

    struct one_tensor ok = { .name = "t", .n_dims = 2, .ne = { 64, 2 }, .type = GGML_TYPE_Q8_0, .data = 4 * 34 };
    craft_one_tensor(&c, &ok);
    struct gguf_context * g = expect_read(&c);
    cr_assert_eq(gguf_get_tensor_size(g, 0), 4 * 34);
    gguf_free(g);
    craft_free(&c);
}

/* ---- where the tensors lie ------------------------------------------------------------------ */

Test(gguf_hostile, a_tensor_offset_not_aligned_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 8 }, .type = GGML_TYPE_F32, .offset = 8, .data = 64 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "not a multiple of the alignment", t.at_offset);
}

/* two F32 tensors of 16 elements (64 bytes each); the second at offset off */
static uint64_t craft_two_tensors(struct craft * c, uint64_t off, size_t data) {
    craft_header(c, 3, 2, 0);
    craft_info(c, "a", 1, (int64_t[]) { 16 }, GGML_TYPE_F32, 0);
    craft_str(c, "b");
    craft_u32(c, 1);
    craft_i64(c, 16);
    craft_i32(c, GGML_TYPE_F32);
    const uint64_t at = craft_at(c);
    craft_u64(c, off);
    craft_pad(c, 32);
    craft_fill(c, data, 7);
    return at;
}

Test(gguf_hostile, overlapping_tensors_are_refused) {
    struct craft c = { 0 };
    uint64_t at = craft_two_tensors(&c, 32, 256);
    expect_refused(&c, "overlaps", at);
    at = craft_two_tensors(&c, 0, 256); /* the same bytes twice */
    expect_refused(&c, "overlaps", at);
    craft_two_tensors(&c, 64, 128);
    struct gguf_context * g = expect_read(&c);
    gguf_free(g);
    craft_free(&c);
}

Test(gguf_hostile, a_gap_between_tensors_is_refused) {
    /* upstream's reader demands the tensors back to back (each padded), and so do we */
    struct craft c = { 0 };
    const uint64_t at = craft_two_tensors(&c, 128, 256);
    expect_refused(&c, "gap", at);
}

Test(gguf_hostile, a_tensor_past_the_data_section_is_refused) {
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 64 }, .type = GGML_TYPE_F32, .data = 255 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "outside the data section", t.at_offset);
}

Test(gguf_hostile, a_tensor_offset_near_uint64_max_is_refused) {
    /* offset + bytes wraps around to a small number */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 8 }, .type = GGML_TYPE_F32,
                            .offset = UINT64_MAX - 31, .data = 64 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "outside the data section", t.at_offset);
}

Test(gguf_hostile, a_160_byte_file_asking_for_huge_memory_is_refused) {
    /* a tensor of 2^44 bytes in a file of about 160: reading it must not allocate its size */
    struct craft c = { 0 };
    craft_header(&c, 3, 1, 1);
    craft_kv_str(&c, "general.architecture", "llama");
    craft_str(&c, "token_embd.weight");
    craft_u32(&c, 3);
    craft_i64(&c, (int64_t) 1 << 20);
    craft_i64(&c, (int64_t) 1 << 20);
    craft_i64(&c, 1 << 2);
    craft_i32(&c, GGML_TYPE_F32);
    const uint64_t at = craft_at(&c);
    craft_u64(&c, 0);
    craft_pad(&c, 32);
    craft_fill(&c, 160 - c.n, 0);
    cr_assert_eq(c.n, 160);
    expect_refused(&c, "outside the data section", at);
}

Test(gguf_hostile, the_last_tensor_may_lack_its_padding) {
    /* writers pad the last tensor, but a file that ends with its last byte of data is whole */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 1, .ne = { 3 }, .type = GGML_TYPE_F32, .data = 12 };
    craft_one_tensor(&c, &t);
    struct gguf_context * g = expect_read(&c);
    cr_assert_eq(gguf_get_tensor_size(g, 0), 12);
    gguf_free(g);
    craft_free(&c);
}

Test(gguf_hostile, a_file_read_from_its_position_counts_bytes_from_there) {
    /* gguf_init_from_file_ptr reads from the current position to the end: 100 bytes of junk
     * before a file with a bad key count change neither the verdict nor the byte named */
    struct craft c = { 0 };
    craft_fill(&c, 100, 0xAA);
    craft_header(&c, 3, 0, (int64_t) 1 << 40);
    char path[64];
    cr_assert_eq(craft_write_tmp(&c, c.n, path), 0);
    FILE * f = fopen(path, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 100, SEEK_SET), 0);
    struct ggml_context * gctx = NULL;
    cr_assert_null(gguf_init_from_file_ptr(f, (struct gguf_init_params) { .no_alloc = true, .ctx = &gctx }));
    cr_assert_null(gctx);
    cr_assert(names_byte(ggmlx_last_error(), 16), "%s", ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "key count"));
    fclose(f);
    unlink(path);
    craft_free(&c);

    craft_fill(&c, 100, 0xAA);
    craft_header(&c, 3, 0, 1);
    craft_kv_u32(&c, "k", 5);
    cr_assert_eq(craft_write_tmp(&c, c.n, path), 0);
    f = fopen(path, "rb");
    cr_assert_eq(fseek(f, 100, SEEK_SET), 0);
    struct gguf_context * g = gguf_init_from_file_ptr(f, (struct gguf_init_params) { .no_alloc = true });
    cr_assert_not_null(g, "%s", ggmlx_last_error());
    cr_assert_eq(gguf_get_val_u32(g, 0), 5);
    gguf_free(g);
    fclose(f);
    unlink(path);
    craft_free(&c);
}

/* ---- found by fuzz-gguf ------------------------------------------------------------------------ */

Test(gguf_hostile, an_empty_tensor_keeps_its_shape_through_the_writer) {
    /* [4, 0] has no elements; the writer once wrote n_dims = ggml_n_dims = 1, i.e. [4]: 16 bytes
     * the data section does not have, so its own output did not read back (found by fuzz-gguf) */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "t", .n_dims = 2, .ne = { 4, 0 }, .type = GGML_TYPE_F32 };
    craft_one_tensor(&c, &t);
    struct gguf_context * g = expect_read(&c);
    char * buf = NULL;
    size_t n   = 0;
    FILE * f   = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert(gguf_write_to_file_ptr(g, f, false), "%s", ggmlx_last_error());
    fclose(f);
    struct gguf_context * again = gguf_init_from_buffer(buf, n, (struct gguf_init_params) { .no_alloc = true });
    cr_assert_not_null(again, "the writer's own output reads: %s", ggmlx_last_error());
    const int64_t * ne = gguf_get_tensor_ne(again, 0);
    cr_assert(ne[0] == 4 && ne[1] == 0, "the shape survives: [%lld, %lld]", (long long) ne[0], (long long) ne[1]);
    gguf_free(again);
    gguf_free(g);
    free(buf);
    craft_free(&c);
}

Test(gguf_hostile, an_empty_tensor_whose_row_overflows_is_refused) {
    /* [2954361355555045380, 0] f32: no elements, so no bytes, but a row of 2^63.4 bytes. It once
     * read without a ggml context and was refused with one ("too large"): one file, two answers
     * (found by fuzz-gguf). Now every way refuses it. */
    struct craft c = { 0 };
    struct one_tensor t = { .name = "z", .n_dims = 2, .ne = { 2954361355555045380LL, 0 }, .type = GGML_TYPE_F32 };
    craft_one_tensor(&c, &t);
    expect_refused(&c, "byte size overflows", t.at_ndims);
}

Test(gguf_hostile, a_small_file_without_tensors_writes_back_small) {
    /* no tensors, so no data section for the alignment to pad: the reader puts the data offset at
     * the end of the metadata, but the writer once padded the metadata to the alignment anyway (as
     * upstream does), so a 60-byte file read and written back took 2^29 bytes (2 GiB with 2^31).
     * Either the reader refuses such a file or what it read writes back small. */
    struct craft c = { 0 };
    craft_alignment_file(&c, 1u << 29);
    struct gguf_context * g = gguf_init_from_buffer(c.b, c.n, (struct gguf_init_params) { .no_alloc = true });
    craft_free(&c);
    if (g == NULL) {
        cr_assert_not_null(ggmlx_last_error());
        return;
    }
    const size_t meta = gguf_get_meta_size(g);
    gguf_free(g);
    cr_assert_lt(meta, 4096, "a file without tensors and a huge general.alignment: the metadata of a 60-byte file "
                             "takes %zu bytes", meta);
}
