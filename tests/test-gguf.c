/*
 * test-gguf.c -- GGUF files: writing a context and reading it back (every value type, arrays,
 * tensors with data at several alignments, no_alloc both ways), the metadata-only paths, editing,
 * and the getters' answers to bad ids. The crafted hostile files have their own suite.
 */
#include <criterion/criterion.h>

#include "gguf.h"
#include "ggml.h"
#include "ggmlx.h"
#include "test-errlog.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void setup(void) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

TestSuite(gguf, .init = setup);

/* a fresh file name (the file exists, empty) */
static void tmp_path(char * buf, size_t n) {
    snprintf(buf, n, "/tmp/test-gguf-XXXXXX");
    int fd = mkstemp(buf);
    cr_assert_geq(fd, 0);
    close(fd);
}

static long file_size(const char * path) {
    FILE * f = fopen(path, "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static uint8_t * file_bytes(const char * path, size_t * n) {
    *n = (size_t) file_size(path);
    uint8_t * p = malloc(*n);
    FILE * f = fopen(path, "rb");
    cr_assert_eq(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static struct gguf_context * write_and_read(struct gguf_context * ctx, char * path, size_t n,
                                            struct ggml_context ** gctx, bool no_alloc) {
    tmp_path(path, n);
    cr_assert(gguf_write_to_file(ctx, path, false), "write: %s", ggmlx_last_error());
    ASSERT_NO_ERROR();
    struct gguf_context * back = gguf_init_from_file(path, (struct gguf_init_params) { no_alloc, gctx });
    cr_assert_not_null(back, "read: %s", ggmlx_last_error());
    ASSERT_NO_ERROR();
    return back;
}

Test(gguf, empty_context_round_trip) {
    struct gguf_context * ctx = gguf_init_empty();
    cr_assert_eq(gguf_get_version(ctx), 3);
    cr_assert_eq(gguf_get_alignment(ctx), GGUF_DEFAULT_ALIGNMENT);
    cr_assert_eq(gguf_get_n_kv(ctx), 0);
    cr_assert_eq(gguf_get_n_tensors(ctx), 0);
    cr_assert_eq(gguf_get_data_offset(ctx), 0);
    /* magic, version, two counts: 24 bytes, unpadded (no data section to align) */
    cr_assert_eq(gguf_get_meta_size(ctx), 24);

    char path[64];
    struct gguf_context * back = write_and_read(ctx, path, sizeof path, NULL, true);
    cr_assert_eq(file_size(path), 24);
    cr_assert_eq(gguf_get_version(back), 3);
    cr_assert_eq(gguf_get_n_kv(back), 0);
    cr_assert_eq(gguf_get_n_tensors(back), 0);
    /* no tensors: the data offset is the end of the metadata, unpadded (as upstream) */
    cr_assert_eq(gguf_get_data_offset(back), 24);
    gguf_free(back);
    gguf_free(ctx);
    unlink(path);
}

Test(gguf, every_value_type_and_arrays_round_trip) {
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_u8(ctx, "u8", 200);
    gguf_set_val_i8(ctx, "i8", -100);
    gguf_set_val_u16(ctx, "u16", 60000);
    gguf_set_val_i16(ctx, "i16", -30000);
    gguf_set_val_u32(ctx, "u32", 4000000000u);
    gguf_set_val_i32(ctx, "i32", -2000000000);
    gguf_set_val_f32(ctx, "f32", 1.5f);
    gguf_set_val_u64(ctx, "u64", UINT64_C(18000000000000000000));
    gguf_set_val_i64(ctx, "i64", INT64_C(-9000000000000000000));
    gguf_set_val_f64(ctx, "f64", -2.25);
    gguf_set_val_bool(ctx, "bool", true);
    gguf_set_val_str(ctx, "str", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac");
    const int32_t ai32[5] = { 1, -2, 3, -4, 5 };
    const float af32[3] = { 0.5f, -1.0f, 3.25f };
    const double af64[2] = { 1e300, -1e-300 };
    const uint8_t abool[4] = { 1, 0, 1, 1 };
    const uint16_t au16[2] = { 1, 65535 };
    const int64_t ai64[2] = { INT64_MIN, INT64_MAX };
    gguf_set_arr_data(ctx, "arr.i32", GGUF_TYPE_INT32, ai32, 5);
    gguf_set_arr_data(ctx, "arr.f32", GGUF_TYPE_FLOAT32, af32, 3);
    gguf_set_arr_data(ctx, "arr.f64", GGUF_TYPE_FLOAT64, af64, 2);
    gguf_set_arr_data(ctx, "arr.bool", GGUF_TYPE_BOOL, abool, 4);
    gguf_set_arr_data(ctx, "arr.u16", GGUF_TYPE_UINT16, au16, 2);
    gguf_set_arr_data(ctx, "arr.i64", GGUF_TYPE_INT64, ai64, 2);
    gguf_set_arr_data(ctx, "arr.empty", GGUF_TYPE_UINT8, NULL, 0);
    const char * strs[3] = { "a", "", "\xe6\x97\xa5\xe6\x9c\xac" };
    gguf_set_arr_str(ctx, "arr.str", strs, 3);
    ASSERT_NO_ERROR();
    cr_assert_eq(gguf_get_n_kv(ctx), 20);

    char path[64];
    struct gguf_context * b = write_and_read(ctx, path, sizeof path, NULL, true);
    cr_assert_eq(gguf_get_n_kv(b), 20);
    for (int64_t i = 0; i < 20; i++) {
        cr_assert_str_eq(gguf_get_key(b, i), gguf_get_key(ctx, i), "keys keep their order");
        cr_assert_eq(gguf_get_kv_type(b, i), gguf_get_kv_type(ctx, i));
    }
    cr_assert_eq(gguf_get_val_u8(b, gguf_find_key(b, "u8")), 200);
    cr_assert_eq(gguf_get_val_i8(b, gguf_find_key(b, "i8")), -100);
    cr_assert_eq(gguf_get_val_u16(b, gguf_find_key(b, "u16")), 60000);
    cr_assert_eq(gguf_get_val_i16(b, gguf_find_key(b, "i16")), -30000);
    cr_assert_eq(gguf_get_val_u32(b, gguf_find_key(b, "u32")), 4000000000u);
    cr_assert_eq(gguf_get_val_i32(b, gguf_find_key(b, "i32")), -2000000000);
    cr_assert_eq(gguf_get_val_f32(b, gguf_find_key(b, "f32")), 1.5f);
    cr_assert_eq(gguf_get_val_u64(b, gguf_find_key(b, "u64")), UINT64_C(18000000000000000000));
    cr_assert_eq(gguf_get_val_i64(b, gguf_find_key(b, "i64")), INT64_C(-9000000000000000000));
    cr_assert_eq(gguf_get_val_f64(b, gguf_find_key(b, "f64")), -2.25);
    cr_assert_eq(gguf_get_val_bool(b, gguf_find_key(b, "bool")), true);
    cr_assert_str_eq(gguf_get_val_str(b, gguf_find_key(b, "str")), "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac");
    cr_assert_eq(*(const uint32_t *) gguf_get_val_data(b, gguf_find_key(b, "u32")), 4000000000u);

    int64_t id = gguf_find_key(b, "arr.i32");
    cr_assert_eq(gguf_get_kv_type(b, id), GGUF_TYPE_ARRAY);
    cr_assert_eq(gguf_get_arr_type(b, id), GGUF_TYPE_INT32);
    cr_assert_eq(gguf_get_arr_n(b, id), 5);
    cr_assert_arr_eq(gguf_get_arr_data(b, id), ai32, sizeof ai32);
    id = gguf_find_key(b, "arr.f32");
    cr_assert_arr_eq(gguf_get_arr_data(b, id), af32, sizeof af32);
    id = gguf_find_key(b, "arr.f64");
    cr_assert_arr_eq(gguf_get_arr_data(b, id), af64, sizeof af64);
    id = gguf_find_key(b, "arr.bool");
    cr_assert_eq(gguf_get_arr_type(b, id), GGUF_TYPE_BOOL);
    cr_assert_arr_eq(gguf_get_arr_data(b, id), abool, sizeof abool);
    id = gguf_find_key(b, "arr.u16");
    cr_assert_arr_eq(gguf_get_arr_data(b, id), au16, sizeof au16);
    id = gguf_find_key(b, "arr.i64");
    cr_assert_arr_eq(gguf_get_arr_data(b, id), ai64, sizeof ai64);
    id = gguf_find_key(b, "arr.empty");
    cr_assert_eq(gguf_get_arr_n(b, id), 0);
    id = gguf_find_key(b, "arr.str");
    cr_assert_eq(gguf_get_arr_type(b, id), GGUF_TYPE_STRING);
    cr_assert_eq(gguf_get_arr_n(b, id), 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(gguf_get_arr_str(b, id, i), strs[i]);
    }
    ASSERT_NO_ERROR();

    /* the file written again from what was read is the same, byte for byte */
    char path2[64];
    tmp_path(path2, sizeof path2);
    cr_assert(gguf_write_to_file(b, path2, false));
    size_t n1, n2;
    uint8_t * f1 = file_bytes(path, &n1);
    uint8_t * f2 = file_bytes(path2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_arr_eq(f1, f2, n1);
    free(f1);
    free(f2);
    gguf_free(b);
    gguf_free(ctx);
    unlink(path);
    unlink(path2);
}

/* Three tensors with known data, written at an alignment and read back both ways. */
static void tensors_round_trip(uint32_t alignment) {
    struct ggml_context * src = ggml_init((struct ggml_init_params) { 1 << 20, NULL, false });
    struct ggml_tensor * a = ggml_new_tensor_2d(src, GGML_TYPE_F32, 5, 3);
    struct ggml_tensor * h = ggml_new_tensor_1d(src, GGML_TYPE_F16, 7);
    struct ggml_tensor * s = ggml_new_tensor_1d(src, GGML_TYPE_F32, 1);
    ggml_set_name(a, "blk.0.attn_q.weight");
    ggml_set_name(h, "half");
    ggml_set_name(s, "scalar");
    for (int i = 0; i < 15; i++) {
        ((float *) a->data)[i] = (float) i * 0.25f - 1.0f;
    }
    for (int i = 0; i < 7; i++) {
        ((ggml_fp16_t *) h->data)[i] = ggml_fp32_to_fp16((float) i - 3.0f);
    }
    ((float *) s->data)[0] = 42.0f;

    struct gguf_context * ctx = gguf_init_empty();
    if (alignment != GGUF_DEFAULT_ALIGNMENT) {
        gguf_set_val_u32(ctx, GGUF_KEY_GENERAL_ALIGNMENT, alignment);
    }
    gguf_set_val_str(ctx, "general.architecture", "test");
    gguf_add_tensor(ctx, a);
    gguf_add_tensor(ctx, h);
    gguf_add_tensor(ctx, s);
    ASSERT_NO_ERROR();
    cr_assert_eq(gguf_get_alignment(ctx), alignment);
    cr_assert_eq(gguf_get_tensor_offset(ctx, 0), 0);
    cr_assert_eq(gguf_get_tensor_offset(ctx, 1), GGML_PAD(60, alignment));
    cr_assert_eq(gguf_get_tensor_offset(ctx, 2), GGML_PAD(60, alignment) + GGML_PAD(14, alignment));

    char path[64];
    struct ggml_context * g = NULL;
    struct gguf_context * b = write_and_read(ctx, path, sizeof path, &g, false);
    cr_assert_eq(gguf_get_alignment(b), alignment);
    cr_assert_eq(gguf_get_data_offset(b) % alignment, 0);
    cr_assert_eq(gguf_get_n_tensors(b), 3);
    const size_t data_end = gguf_get_data_offset(b) + gguf_get_tensor_offset(b, 2) + GGML_PAD(4, alignment);
    cr_assert_eq((size_t) file_size(path), data_end, "the file ends with the padded last tensor");
    for (int64_t i = 0; i < 3; i++) {
        cr_assert_str_eq(gguf_get_tensor_name(b, i), gguf_get_tensor_name(ctx, i));
        cr_assert_eq(gguf_get_tensor_type(b, i), gguf_get_tensor_type(ctx, i));
        cr_assert_eq(gguf_get_tensor_offset(b, i), gguf_get_tensor_offset(ctx, i));
        cr_assert_eq(gguf_get_tensor_size(b, i), gguf_get_tensor_size(ctx, i));
        cr_assert_eq(gguf_get_tensor_offset(b, i) % alignment, 0);
        cr_assert_arr_eq(gguf_get_tensor_ne(b, i), gguf_get_tensor_ne(ctx, i), 4 * sizeof(int64_t));
    }
    cr_assert_eq(gguf_get_tensor_ne(b, 0)[1], 3);
    cr_assert_eq(gguf_get_tensor_ne(b, 0)[2], 1);

    /* the ggml context: the blob first, then the tensors, whose data point into it */
    cr_assert_not_null(g);
    struct ggml_tensor * blob = ggml_get_first_tensor(g);
    cr_assert_str_eq(blob->name, "GGUF tensor data binary blob");
    cr_assert_eq(ggml_nbytes(blob), data_end - gguf_get_data_offset(b));
    struct ggml_tensor * ra = ggml_get_tensor(g, "blk.0.attn_q.weight");
    struct ggml_tensor * rh = ggml_get_tensor(g, "half");
    struct ggml_tensor * rs = ggml_get_tensor(g, "scalar");
    cr_assert(ra && rh && rs);
    cr_assert_eq(ra->ne[0], 5);
    cr_assert_eq(ra->ne[1], 3);
    cr_assert_eq(rh->type, GGML_TYPE_F16);
    cr_assert_eq((char *) ra->data, (char *) blob->data);
    cr_assert_arr_eq(ra->data, a->data, 60);
    cr_assert_arr_eq(rh->data, h->data, 14);
    cr_assert_eq(((float *) rs->data)[0], 42.0f);
    ggml_free(g);
    gguf_free(b);

    /* no_alloc: the same tensors, without data and without a blob */
    g = NULL;
    b = gguf_init_from_file(path, (struct gguf_init_params) { true, &g });
    cr_assert_not_null(b);
    cr_assert_not_null(g);
    int n = 0;
    for (struct ggml_tensor * t = ggml_get_first_tensor(g); t; t = ggml_get_next_tensor(g, t)) {
        cr_assert_null(t->data);
        cr_assert_str_eq(t->name, gguf_get_tensor_name(b, n));
        n++;
    }
    cr_assert_eq(n, 3);
    ggml_free(g);
    gguf_free(b);

    /* from memory too: the same answers */
    size_t nbytes;
    uint8_t * bytes = file_bytes(path, &nbytes);
    g = NULL;
    b = gguf_init_from_buffer(bytes, nbytes, (struct gguf_init_params) { false, &g });
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert_arr_eq(ggml_get_tensor(g, "blk.0.attn_q.weight")->data, a->data, 60);
    free(bytes);
    ggml_free(g);
    gguf_free(b);

    gguf_free(ctx);
    ggml_free(src);
    unlink(path);
}

Test(gguf, tensors_f32_f16_alignment_32) {
    tensors_round_trip(32);
}

Test(gguf, tensors_f32_f16_alignment_64) {
    tensors_round_trip(64);
}

/* a data section whose size is not a multiple of the ggml context's own alignment */
Test(gguf, tensors_f32_f16_alignment_8) {
    tensors_round_trip(8);
}

Test(gguf, meta_size_and_data_are_the_head_of_the_file) {
    struct ggml_context * src = ggml_init((struct ggml_init_params) { 1 << 16, NULL, false });
    struct ggml_tensor * a = ggml_new_tensor_1d(src, GGML_TYPE_F32, 10);
    ggml_set_name(a, "a");
    memset(a->data, 0x3f, 40);
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_str(ctx, "name", "x");
    gguf_add_tensor(ctx, a);

    const size_t meta = gguf_get_meta_size(ctx);
    cr_assert_eq(meta % GGUF_DEFAULT_ALIGNMENT, 0);
    uint8_t * buf = malloc(meta);
    gguf_get_meta_data(ctx, buf);

    char path[64], meta_path[64];
    tmp_path(path, sizeof path);
    tmp_path(meta_path, sizeof meta_path);
    cr_assert(gguf_write_to_file(ctx, path, false));
    cr_assert(gguf_write_to_file(ctx, meta_path, true));
    size_t n, nm;
    uint8_t * whole = file_bytes(path, &n);
    uint8_t * only  = file_bytes(meta_path, &nm);
    cr_assert_eq(n, meta + GGML_PAD(40, 32));
    cr_assert_eq(nm, meta);
    cr_assert_arr_eq(whole, buf, meta);
    cr_assert_arr_eq(only, buf, meta);
    cr_assert_arr_eq(whole + meta, a->data, 40);

    /* the metadata alone names a tensor whose bytes are not there: refused */
    cr_assert_null(gguf_init_from_file(meta_path, (struct gguf_init_params) { true, NULL }));
    cr_assert_not_null(strstr(ggmlx_last_error(), "outside the data section"), "%s", ggmlx_last_error());
    ASSERT_ERROR();

    free(whole);
    free(only);
    free(buf);
    gguf_free(ctx);
    ggml_free(src);
    unlink(path);
    unlink(meta_path);
}

Test(gguf, setting_a_key_again_moves_it_to_the_back) {
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_u32(ctx, "a", 1);
    gguf_set_val_u32(ctx, "b", 2);
    gguf_set_val_str(ctx, "a", "now a string");
    cr_assert_eq(gguf_get_n_kv(ctx), 2);
    cr_assert_str_eq(gguf_get_key(ctx, 0), "b");
    cr_assert_str_eq(gguf_get_key(ctx, 1), "a");
    cr_assert_str_eq(gguf_get_val_str(ctx, 1), "now a string");
    /* a value read from the pair it replaces */
    gguf_set_val_str(ctx, gguf_get_key(ctx, 1), gguf_get_val_str(ctx, 1));
    cr_assert_str_eq(gguf_get_val_str(ctx, gguf_find_key(ctx, "a")), "now a string");
    cr_assert_eq(gguf_remove_key(ctx, "b"), 0);
    cr_assert_eq(gguf_remove_key(ctx, "b"), -1);
    cr_assert_eq(gguf_get_n_kv(ctx), 1);
    cr_assert_eq(gguf_find_key(ctx, "a"), 0);
    ASSERT_NO_ERROR();

    struct gguf_context * other = gguf_init_empty();
    gguf_set_val_i32(other, "x", -5);
    gguf_set_kv(other, ctx);
    cr_assert_eq(gguf_get_n_kv(other), 2);
    cr_assert_str_eq(gguf_get_val_str(other, 1), "now a string");
    gguf_free(other);
    gguf_free(ctx);
}

Test(gguf, bad_ids_and_wrong_types_fail_without_aborting) {
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_u32(ctx, "u", 7);
    const int32_t arr[2] = { 1, 2 };
    gguf_set_arr_data(ctx, "arr", GGUF_TYPE_INT32, arr, 2);

    cr_assert_null(gguf_get_key(ctx, 2));
    ASSERT_ERROR();
    cr_assert_null(gguf_get_key(ctx, -1));
    ASSERT_ERROR();
    cr_assert_eq(gguf_get_val_i32(ctx, 0), 0, "u32 is not i32");
    ASSERT_ERROR();
    cr_assert_eq(gguf_get_val_i32(ctx, 1), 0, "an array of two is not one value");
    ASSERT_ERROR();
    cr_assert_null(gguf_get_val_str(ctx, 0));
    ASSERT_ERROR();
    cr_assert_eq((int) gguf_get_arr_type(ctx, 0), -1, "not an array");
    ASSERT_ERROR();
    cr_assert_null(gguf_get_arr_str(ctx, 1, 0));
    ASSERT_ERROR();
    cr_assert_null(gguf_get_tensor_name(ctx, 0));
    ASSERT_ERROR();
    cr_assert_null(gguf_get_tensor_ne(ctx, 0));
    ASSERT_ERROR();
    cr_assert_eq(gguf_find_key(ctx, "missing"), -1);
    ASSERT_NO_ERROR();
    cr_assert_eq(gguf_find_tensor(ctx, "missing"), -1);
    ASSERT_NO_ERROR();

    /* the alignment key takes a u32 power of two only; the context keeps its pairs */
    gguf_set_val_u32(ctx, GGUF_KEY_GENERAL_ALIGNMENT, 48);
    ASSERT_ERROR();
    gguf_set_val_i32(ctx, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    ASSERT_ERROR();
    cr_assert_eq(gguf_get_n_kv(ctx), 2);
    cr_assert_eq(gguf_get_alignment(ctx), 32);
    gguf_set_arr_data(ctx, "nested", GGUF_TYPE_ARRAY, arr, 1);
    ASSERT_ERROR();
    gguf_set_val_u8(ctx, "", 1);
    ASSERT_ERROR();
    cr_assert_eq(gguf_get_n_kv(ctx), 2);
    cr_assert_null(gguf_type_name((enum gguf_type) 99));
    cr_assert_str_eq(gguf_type_name(GGUF_TYPE_FLOAT32), "f32");
    gguf_free(ctx);
}

Test(gguf, tensor_edits_lay_the_data_out_again) {
    struct ggml_context * src = ggml_init((struct ggml_init_params) { 1 << 16, NULL, true });
    struct ggml_tensor * a = ggml_new_tensor_2d(src, GGML_TYPE_F32, 64, 2);
    struct ggml_tensor * b = ggml_new_tensor_1d(src, GGML_TYPE_F32, 8);
    ggml_set_name(a, "a");
    ggml_set_name(b, "b");
    struct gguf_context * ctx = gguf_init_empty();
    gguf_add_tensor(ctx, a);
    gguf_add_tensor(ctx, b);
    cr_assert_eq(gguf_get_tensor_offset(ctx, 1), 512);
    gguf_add_tensor(ctx, a);
    ASSERT_ERROR(); /* duplicate name */
    cr_assert_eq(gguf_get_n_tensors(ctx), 2);

    gguf_set_tensor_type(ctx, "a", GGML_TYPE_F16);
    cr_assert_eq(gguf_get_tensor_size(ctx, 0), 256);
    cr_assert_eq(gguf_get_tensor_offset(ctx, 1), 256);
    gguf_set_tensor_type(ctx, "a", GGML_TYPE_Q8_0);
    cr_assert_eq(gguf_get_tensor_size(ctx, 0), 2 * 2 * 34);
    cr_assert_eq(gguf_get_tensor_offset(ctx, 1), GGML_PAD(136, 32));
    gguf_set_tensor_type(ctx, "b", GGML_TYPE_Q4_K); /* 8 is not a multiple of 256 */
    ASSERT_ERROR();
    cr_assert_eq(gguf_get_tensor_type(ctx, 1), GGML_TYPE_F32);
    gguf_set_tensor_type(ctx, "nope", GGML_TYPE_F16);
    ASSERT_ERROR();

    /* a tensor without data cannot be written in full, only its metadata */
    char path[64];
    tmp_path(path, sizeof path);
    cr_assert_not(gguf_write_to_file(ctx, path, false));
    ASSERT_ERROR();
    cr_assert(gguf_write_to_file(ctx, path, true));
    float data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint8_t qa[136] = { 0 };
    gguf_set_tensor_data(ctx, "a", qa);
    gguf_set_tensor_data(ctx, "b", data);
    cr_assert(gguf_write_to_file(ctx, path, false), "%s", ggmlx_last_error());
    struct ggml_context * g = NULL;
    struct gguf_context * back = gguf_init_from_file(path, (struct gguf_init_params) { false, &g });
    cr_assert_not_null(back, "%s", ggmlx_last_error());
    cr_assert_eq(gguf_get_tensor_type(back, 0), GGML_TYPE_Q8_0);
    cr_assert_arr_eq(ggml_get_tensor(g, "b")->data, data, sizeof data);
    ggml_free(g);
    gguf_free(back);
    gguf_free(ctx);
    ggml_free(src);
    unlink(path);
}

Test(gguf, huge_counts_in_a_tiny_file_fail_at_once) {
    uint8_t f[100] = { 'G', 'G', 'U', 'F', 3, 0, 0, 0 };
    const int64_t n_tensors = 0, n_kv = INT64_C(1) << 60;
    memcpy(f + 8, &n_tensors, 8);
    memcpy(f + 16, &n_kv, 8);
    struct ggml_context * g = (struct ggml_context *) 1;
    cr_assert_null(gguf_init_from_buffer(f, sizeof f, (struct gguf_init_params) { false, &g }));
    cr_assert_null(g, "*params.ctx is NULL after a failure");
    cr_assert_not_null(strstr(ggmlx_last_error(), "key count"), "%s", ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "at byte 16"), "%s", ggmlx_last_error());
    ASSERT_ERROR();
}

struct chunked {
    const uint8_t * data;
    size_t          size;
    size_t          max_len; /* the largest len the reader asked for */
};

static size_t chunked_read(void * ud, void * out, uint64_t offset, size_t len) {
    struct chunked * c = ud;
    if (len > c->max_len) {
        c->max_len = len;
    }
    if (offset >= c->size) {
        return 0;
    }
    const size_t n = len < c->size - offset ? len : (size_t) (c->size - offset);
    memcpy(out, c->data + offset, n);
    return n;
}

/* a file with a tensor, its bytes, and a reader through a callback and through a FILE at an offset */
Test(gguf, callback_and_file_ptr_readers_agree) {
    struct ggml_context * src = ggml_init((struct ggml_init_params) { 1 << 16, NULL, false });
    struct ggml_tensor * a = ggml_new_tensor_1d(src, GGML_TYPE_F32, 33);
    ggml_set_name(a, "a");
    for (int i = 0; i < 33; i++) {
        ((float *) a->data)[i] = (float) i;
    }
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_str(ctx, "k", "v");
    gguf_add_tensor(ctx, a);
    char path[64];
    tmp_path(path, sizeof path);
    cr_assert(gguf_write_to_file(ctx, path, false));
    size_t n;
    uint8_t * bytes = file_bytes(path, &n);

    struct chunked c = { bytes, n, 0 };
    struct ggml_context * g = NULL;
    struct gguf_context * b = gguf_init_from_callback(chunked_read, &c, 7, n, (struct gguf_init_params) { false, &g });
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert_leq(c.max_len, 7, "no read larger than max_chunk_read");
    cr_assert_str_eq(gguf_get_val_str(b, 0), "v");
    cr_assert_arr_eq(ggml_get_tensor(g, "a")->data, a->data, 33 * sizeof(float));
    ggml_free(g);
    gguf_free(b);

    /* told a size one byte short, the callback reader refuses the file */
    c.max_len = 0;
    cr_assert_null(gguf_init_from_callback(chunked_read, &c, 0, gguf_get_meta_size(ctx) - 1,
                                           (struct gguf_init_params) { true, NULL }));
    ASSERT_ERROR();

    /* a GGUF stream that starts 100 bytes into a file: offsets count from where reading started */
    FILE * f = tmpfile();
    cr_assert_not_null(f);
    uint8_t junk[100];
    memset(junk, 0xAB, sizeof junk);
    cr_assert_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    cr_assert_eq(fwrite(bytes, 1, n, f), n);
    cr_assert_eq(fseek(f, 100, SEEK_SET), 0);
    g = NULL;
    b = gguf_init_from_file_ptr(f, (struct gguf_init_params) { false, &g });
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert_eq(gguf_get_data_offset(b), gguf_get_meta_size(ctx));
    cr_assert_arr_eq(ggml_get_tensor(g, "a")->data, a->data, 33 * sizeof(float));
    fclose(f);
    ggml_free(g);
    gguf_free(b);

    cr_assert_null(gguf_init_from_file("/nonexistent/dir/x.gguf", (struct gguf_init_params) { true, NULL }));
    ASSERT_ERROR();
    free(bytes);
    gguf_free(ctx);
    ggml_free(src);
    unlink(path);
}

/* every function that takes a context answers a NULL one with an error, never a crash */
Test(gguf, null_context_everywhere) {
    const struct gguf_context * c = NULL;
    struct gguf_context * m = NULL;
    struct gguf_init_params p = { true, NULL };
#define NULL_ERR(expr)                                                                        \
    do {                                                                                      \
        expr;                                                                                 \
        cr_assert_not_null(ggmlx_last_error(), "%s records an error", #expr);                 \
        ggmlx_clear_last_error();                                                             \
    } while (0)
    NULL_ERR(cr_assert_null(gguf_init_from_file_ptr(NULL, p)));
    NULL_ERR(cr_assert_null(gguf_init_from_file(NULL, p)));
    NULL_ERR(cr_assert_null(gguf_init_from_buffer(NULL, 10, p)));
    NULL_ERR(cr_assert_null(gguf_init_from_buffer("GGUF", 0, p)));
    NULL_ERR(cr_assert_null(gguf_init_from_callback(NULL, NULL, 0, 100, p)));
    gguf_free(NULL);
    NULL_ERR(cr_assert_eq(gguf_get_version(c), 0));
    NULL_ERR(cr_assert_eq(gguf_get_alignment(c), 0));
    NULL_ERR(cr_assert_eq(gguf_get_data_offset(c), 0));
    NULL_ERR(cr_assert_eq(gguf_get_n_kv(c), 0));
    NULL_ERR(cr_assert_eq(gguf_find_key(c, "k"), -1));
    NULL_ERR(cr_assert_null(gguf_get_key(c, 0)));
    NULL_ERR((void) gguf_get_kv_type(c, 0));
    NULL_ERR((void) gguf_get_arr_type(c, 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_u8(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_i8(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_u16(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_i16(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_u32(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_i32(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_f32(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_u64(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_i64(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_get_val_f64(c, 0), 0));
    NULL_ERR(cr_assert_not(gguf_get_val_bool(c, 0)));
    NULL_ERR(cr_assert_null(gguf_get_val_str(c, 0)));
    NULL_ERR(cr_assert_null(gguf_get_val_data(c, 0)));
    NULL_ERR(cr_assert_eq(gguf_get_arr_n(c, 0), 0));
    NULL_ERR(cr_assert_null(gguf_get_arr_data(c, 0)));
    NULL_ERR(cr_assert_null(gguf_get_arr_str(c, 0, 0)));
    NULL_ERR(cr_assert_eq(gguf_get_n_tensors(c), 0));
    NULL_ERR(cr_assert_eq(gguf_find_tensor(c, "t"), -1));
    NULL_ERR(cr_assert_eq(gguf_get_tensor_offset(c, 0), 0));
    NULL_ERR(cr_assert_null(gguf_get_tensor_name(c, 0)));
    NULL_ERR(cr_assert_null(gguf_get_tensor_ne(c, 0)));
    NULL_ERR((void) gguf_get_tensor_type(c, 0));
    NULL_ERR(cr_assert_eq(gguf_get_tensor_size(c, 0), 0));
    NULL_ERR(cr_assert_eq(gguf_remove_key(m, "k"), -1));
    NULL_ERR(gguf_set_val_u8(m, "k", 1));
    NULL_ERR(gguf_set_val_i8(m, "k", 1));
    NULL_ERR(gguf_set_val_u16(m, "k", 1));
    NULL_ERR(gguf_set_val_i16(m, "k", 1));
    NULL_ERR(gguf_set_val_u32(m, "k", 1));
    NULL_ERR(gguf_set_val_i32(m, "k", 1));
    NULL_ERR(gguf_set_val_f32(m, "k", 1));
    NULL_ERR(gguf_set_val_u64(m, "k", 1));
    NULL_ERR(gguf_set_val_i64(m, "k", 1));
    NULL_ERR(gguf_set_val_f64(m, "k", 1));
    NULL_ERR(gguf_set_val_bool(m, "k", true));
    NULL_ERR(gguf_set_val_str(m, "k", "v"));
    NULL_ERR(gguf_set_arr_data(m, "k", GGUF_TYPE_UINT8, "x", 1));
    NULL_ERR(gguf_set_arr_str(m, "k", NULL, 0));
    NULL_ERR(gguf_set_kv(m, c));
    NULL_ERR(gguf_add_tensor(m, NULL));
    NULL_ERR(gguf_set_tensor_type(m, "t", GGML_TYPE_F32));
    NULL_ERR(gguf_set_tensor_data(m, "t", NULL));
    NULL_ERR(cr_assert_not(gguf_write_to_file_ptr(c, stdout, false)));
    NULL_ERR(cr_assert_not(gguf_write_to_file(c, "/tmp/never-written.gguf", false)));
    NULL_ERR(cr_assert_eq(gguf_get_meta_size(c), 0));
    NULL_ERR(gguf_get_meta_data(c, NULL));
#undef NULL_ERR
}

/* read with its data, the context writes the same file again, byte for byte */
Test(gguf, a_context_read_with_data_writes_the_same_file) {
    struct ggml_context * src = ggml_init((struct ggml_init_params) { 1 << 16, NULL, false });
    struct ggml_tensor * a = ggml_new_tensor_2d(src, GGML_TYPE_F16, 6, 5);
    struct ggml_tensor * b = ggml_new_tensor_1d(src, GGML_TYPE_F32, 3);
    ggml_set_name(a, "a");
    ggml_set_name(b, "b");
    for (size_t i = 0; i < ggml_nbytes(a); i++) {
        ((uint8_t *) a->data)[i] = (uint8_t) (i * 7);
    }
    for (size_t i = 0; i < ggml_nbytes(b); i++) {
        ((uint8_t *) b->data)[i] = (uint8_t) (i * 13 + 1);
    }
    struct gguf_context * ctx = gguf_init_empty();
    gguf_set_val_u32(ctx, GGUF_KEY_GENERAL_ALIGNMENT, 64);
    gguf_add_tensor(ctx, a);
    gguf_add_tensor(ctx, b);
    char path[64], path2[64];
    struct ggml_context * g = NULL;
    struct gguf_context * back = write_and_read(ctx, path, sizeof path, &g, false);
    tmp_path(path2, sizeof path2);
    cr_assert(gguf_write_to_file(back, path2, false), "%s", ggmlx_last_error());
    size_t n1, n2;
    uint8_t * f1 = file_bytes(path, &n1);
    uint8_t * f2 = file_bytes(path2, &n2);
    cr_assert_eq(n1, n2);
    cr_assert_arr_eq(f1, f2, n1);
    free(f1);
    free(f2);
    ggml_free(g);
    gguf_free(back);
    gguf_free(ctx);
    ggml_free(src);
    unlink(path);
    unlink(path2);
}
