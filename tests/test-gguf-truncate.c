/*
 * test-gguf-truncate.c -- a GGUF file cut short anywhere is refused. A file with a key of every
 * value type, an array of every element type and three tensors is written by the library, then
 * read from each of its prefixes (0 .. size-1 bytes) every way: each read answers NULL with a
 * message and leaves *ctx NULL (and, under ASan, leaks nothing and reads nothing out of bounds).
 * The whole file reads back with every value intact.
 *
 * The last tensor is 32 bytes, a multiple of the alignment, so the file has no trailing padding:
 * every byte of it is needed (a file missing only its last tensor's padding is whole, see
 * test-gguf-hostile).
 */
#include <criterion/criterion.h>

#include "gguf-craft.h"
#include "test-errlog.h"

#include "ggml.h"
#include "gguf.h"
#include "ggmlx.h"

#include <inttypes.h>
#include <string.h>

static void setup(void) {
    ggml_log_set(count_log, NULL);
}

TestSuite(gguf_truncate, .init = setup);

static const uint8_t  ARR_U8[]   = { 1, 2, 255 };
static const int8_t   ARR_I8[]   = { -1, 0, 127 };
static const uint16_t ARR_U16[]  = { 1, 65535 };
static const int16_t  ARR_I16[]  = { -32768, 5 };
static const uint32_t ARR_U32[]  = { 7, 4000000000u };
static const int32_t  ARR_I32[]  = { -7, 2000000000 };
static const float    ARR_F32[]  = { 0.5f, -1e30f };
static const bool     ARR_BOOL[] = { true, false, true };
static const uint64_t ARR_U64[]  = { UINT64_MAX };
static const int64_t  ARR_I64[]  = { INT64_MIN, 3 };
static const double   ARR_F64[]  = { 3.25, -0.0 };
static const char *   ARR_STR[]  = { "alpha", "", "\xc3\xa9t\xc3\xa9" };

#define ARR(key, type, a) gguf_set_arr_data(g, key, type, a, sizeof a / sizeof a[0])

/* the file, written by the library into memory; n receives its size */
static uint8_t * make_file(size_t * n) {
    struct gguf_context * g = gguf_init_empty();
    cr_assert_not_null(g);
    gguf_set_val_u8(g, "u8", 200);
    gguf_set_val_i8(g, "i8", -100);
    gguf_set_val_u16(g, "u16", 60000);
    gguf_set_val_i16(g, "i16", -30000);
    gguf_set_val_u32(g, "u32", 4000000000u);
    gguf_set_val_i32(g, "i32", -2000000000);
    gguf_set_val_f32(g, "f32", 1.25f);
    gguf_set_val_bool(g, "bool", true);
    gguf_set_val_str(g, "str", "h\xc3\xa9llo");
    gguf_set_val_u64(g, "u64", UINT64_MAX - 1);
    gguf_set_val_i64(g, "i64", INT64_MIN + 1);
    gguf_set_val_f64(g, "f64", 6.5e300);
    ARR("arr.u8", GGUF_TYPE_UINT8, ARR_U8);
    ARR("arr.i8", GGUF_TYPE_INT8, ARR_I8);
    ARR("arr.u16", GGUF_TYPE_UINT16, ARR_U16);
    ARR("arr.i16", GGUF_TYPE_INT16, ARR_I16);
    ARR("arr.u32", GGUF_TYPE_UINT32, ARR_U32);
    ARR("arr.i32", GGUF_TYPE_INT32, ARR_I32);
    ARR("arr.f32", GGUF_TYPE_FLOAT32, ARR_F32);
    ARR("arr.bool", GGUF_TYPE_BOOL, ARR_BOOL);
    ARR("arr.u64", GGUF_TYPE_UINT64, ARR_U64);
    ARR("arr.i64", GGUF_TYPE_INT64, ARR_I64);
    ARR("arr.f64", GGUF_TYPE_FLOAT64, ARR_F64);
    gguf_set_arr_str(g, "arr.str", ARR_STR, sizeof ARR_STR / sizeof ARR_STR[0]);
    ASSERT_NO_ERROR();

    struct ggml_context * gctx = ggml_init((struct ggml_init_params) { .mem_size = 1 << 20 });
    cr_assert_not_null(gctx);
    struct ggml_tensor * ts[3] = {
        ggml_new_tensor_1d(gctx, GGML_TYPE_Q8_0, 64),    /* 68 bytes, padded to 96 */
        ggml_new_tensor_2d(gctx, GGML_TYPE_F16, 16, 2),  /* 64 */
        ggml_new_tensor_1d(gctx, GGML_TYPE_F32, 8),      /* 32: the file ends with it */
    };
    const char * names[3] = { "blk.0.q", "blk.0.h", "out" };
    for (int i = 0; i < 3; i++) {
        ggml_set_name(ts[i], names[i]);
        uint8_t * d = ts[i]->data;
        for (size_t b = 0; b < ggml_nbytes(ts[i]); b++) {
            d[b] = (uint8_t) (b * 7 + (size_t) i);
        }
        gguf_add_tensor(g, ts[i]);
    }
    ASSERT_NO_ERROR();

    char * buf = NULL;
    FILE * f   = open_memstream(&buf, n);
    cr_assert_not_null(f);
    cr_assert(gguf_write_to_file_ptr(g, f, false), "%s", ggmlx_last_error());
    cr_assert_eq(fclose(f), 0);
    gguf_free(g);
    ggml_free(gctx);
    return (uint8_t *) buf;
}

Test(gguf_truncate, the_whole_file_reads_back) {
    size_t    n;
    uint8_t * file = make_file(&n);
    cr_assert_gt(n, 500);
    cr_assert_eq(n % 32, 0);

    struct ggml_context * gctx = NULL;
    struct gguf_context * g    = gguf_init_from_buffer(file, n, (struct gguf_init_params) { .ctx = &gctx });
    cr_assert_not_null(g, "%s", ggmlx_last_error());
    cr_assert_eq(gguf_get_n_kv(g), 24);
    cr_assert_eq(gguf_get_val_u8(g, gguf_find_key(g, "u8")), 200);
    cr_assert_eq(gguf_get_val_i8(g, gguf_find_key(g, "i8")), -100);
    cr_assert_eq(gguf_get_val_u16(g, gguf_find_key(g, "u16")), 60000);
    cr_assert_eq(gguf_get_val_i16(g, gguf_find_key(g, "i16")), -30000);
    cr_assert_eq(gguf_get_val_u32(g, gguf_find_key(g, "u32")), 4000000000u);
    cr_assert_eq(gguf_get_val_i32(g, gguf_find_key(g, "i32")), -2000000000);
    cr_assert_eq(gguf_get_val_f32(g, gguf_find_key(g, "f32")), 1.25f);
    cr_assert_eq(gguf_get_val_bool(g, gguf_find_key(g, "bool")), true);
    cr_assert_str_eq(gguf_get_val_str(g, gguf_find_key(g, "str")), "h\xc3\xa9llo");
    cr_assert_eq(gguf_get_val_u64(g, gguf_find_key(g, "u64")), UINT64_MAX - 1);
    cr_assert_eq(gguf_get_val_i64(g, gguf_find_key(g, "i64")), INT64_MIN + 1);
    cr_assert_eq(gguf_get_val_f64(g, gguf_find_key(g, "f64")), 6.5e300);

    const struct { const char * key; enum gguf_type type; const void * data; size_t n, size; } arrs[] = {
        { "arr.u8", GGUF_TYPE_UINT8, ARR_U8, 3, 1 },       { "arr.i8", GGUF_TYPE_INT8, ARR_I8, 3, 1 },
        { "arr.u16", GGUF_TYPE_UINT16, ARR_U16, 2, 2 },    { "arr.i16", GGUF_TYPE_INT16, ARR_I16, 2, 2 },
        { "arr.u32", GGUF_TYPE_UINT32, ARR_U32, 2, 4 },    { "arr.i32", GGUF_TYPE_INT32, ARR_I32, 2, 4 },
        { "arr.f32", GGUF_TYPE_FLOAT32, ARR_F32, 2, 4 },   { "arr.bool", GGUF_TYPE_BOOL, ARR_BOOL, 3, 1 },
        { "arr.u64", GGUF_TYPE_UINT64, ARR_U64, 1, 8 },    { "arr.i64", GGUF_TYPE_INT64, ARR_I64, 2, 8 },
        { "arr.f64", GGUF_TYPE_FLOAT64, ARR_F64, 2, 8 },
    };
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        const int64_t id = gguf_find_key(g, arrs[i].key);
        cr_assert_geq(id, 0, "%s", arrs[i].key);
        cr_assert_eq(gguf_get_kv_type(g, id), GGUF_TYPE_ARRAY);
        cr_assert_eq(gguf_get_arr_type(g, id), arrs[i].type, "%s", arrs[i].key);
        cr_assert_eq(gguf_get_arr_n(g, id), arrs[i].n, "%s", arrs[i].key);
        cr_assert_eq(memcmp(gguf_get_arr_data(g, id), arrs[i].data, arrs[i].n * arrs[i].size), 0, "%s", arrs[i].key);
    }
    const int64_t sid = gguf_find_key(g, "arr.str");
    cr_assert_eq(gguf_get_arr_n(g, sid), 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(gguf_get_arr_str(g, sid, i), ARR_STR[i]);
    }

    cr_assert_eq(gguf_get_n_tensors(g), 3);
    const size_t offsets[3] = { 0, 96, 160 };
    for (int64_t i = 0; i < 3; i++) {
        cr_assert_eq(gguf_get_tensor_offset(g, i), offsets[i]);
        const struct ggml_tensor * t = ggml_get_tensor(gctx, gguf_get_tensor_name(g, i));
        cr_assert_not_null(t);
        const uint8_t * d = t->data;
        for (size_t b = 0; b < ggml_nbytes(t); b++) {
            cr_assert_eq(d[b], (uint8_t) (b * 7 + (size_t) i), "tensor %" PRId64 " byte %zu", i, b);
        }
    }
    cr_assert_eq(gguf_get_data_offset(g) + 192, n);
    gguf_free(g);
    ggml_free(gctx);
    free(file);
}

Test(gguf_truncate, every_prefix_is_refused, .timeout = 300) {
    size_t    n;
    uint8_t * file = make_file(&n);
    struct craft c = { .b = file, .n = n, .cap = n };
    char path[64];
    for (size_t len = 0; len < n; len++) {
        cr_assert_eq(craft_write_tmp(&c, len, path), 0);
        for (int mode = 0; mode < 3; mode++) {
            struct ggml_context * gctx = (struct ggml_context *) &gctx;
            struct gguf_init_params p  = { .no_alloc = mode != 2, .ctx = mode == 0 ? NULL : &gctx };
            ggmlx_clear_last_error();
            g_n_errors = 0;
            struct gguf_context * g = gguf_init_from_file(path, p);
            cr_assert_null(g, "a prefix of %zu of %zu bytes (mode %d) was read", len, n, mode);
            cr_assert(mode == 0 || gctx == NULL);
            cr_assert_not_null(ggmlx_last_error(), "prefix %zu: a message", len);
            cr_assert_gt(g_n_errors, 0);
            if (len > 0) {
                g = gguf_init_from_buffer(file, len, p);
                cr_assert_null(g, "a prefix of %zu bytes read from memory", len);
                cr_assert_not_null(ggmlx_last_error());
            }
        }
        unlink(path);
    }
    free(file);
}
