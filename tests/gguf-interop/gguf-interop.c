/*
 * gguf-interop.c -- ggmlx's side of the GGUF interop test with the PyPI package gguf (run.py).
 *
 *   gguf-interop dump FILE    prints what ggmlx reads from FILE, as JSON in spec.py's canonical
 *                             form (every value, every tensor's bytes), for comparison with what
 *                             gguf.GGUFWriter meant to write
 *   gguf-interop write FILE   writes spec.py's content (alignment 32) through ggmlx's writer, for
 *                             gguf.GGUFReader to read back
 *
 * Exit status 1 with a message on any error.
 */
#include "ggml.h"
#include "gguf.h"
#include "ggmlx.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dump ------------------------------------------------------------------------------------ */

static void put_str(const char * s) {
    putchar('"');
    for (const unsigned char * p = (const unsigned char *) s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
        } else if (*p < 0x20) {
            printf("\\u%04x", *p);
        } else {
            putchar(*p); /* UTF-8 passes through */
        }
    }
    putchar('"');
}

/* element i of an array (or the single value) of type t at data */
static void put_value(enum gguf_type t, const void * data, size_t i) {
    const uint8_t * b = data;
    switch (t) {
        case GGUF_TYPE_UINT8: printf("%u", (unsigned) b[i]); break;
        case GGUF_TYPE_INT8: printf("%d", (int) ((const int8_t *) data)[i]); break;
        case GGUF_TYPE_UINT16: printf("%u", (unsigned) ((const uint16_t *) data)[i]); break;
        case GGUF_TYPE_INT16: printf("%d", (int) ((const int16_t *) data)[i]); break;
        case GGUF_TYPE_UINT32: printf("%" PRIu32, ((const uint32_t *) data)[i]); break;
        case GGUF_TYPE_INT32: printf("%" PRId32, ((const int32_t *) data)[i]); break;
        case GGUF_TYPE_FLOAT32: printf("%.17g", (double) ((const float *) data)[i]); break;
        case GGUF_TYPE_BOOL: printf("%s", b[i] ? "true" : "false"); break;
        case GGUF_TYPE_UINT64: printf("%" PRIu64, ((const uint64_t *) data)[i]); break;
        case GGUF_TYPE_INT64: printf("%" PRId64, ((const int64_t *) data)[i]); break;
        case GGUF_TYPE_FLOAT64: printf("%.17g", ((const double *) data)[i]); break;
        default: printf("null"); break;
    }
}

static int dump(const char * path) {
    struct ggml_context * gctx = NULL;
    struct gguf_context * g    = gguf_init_from_file(path, (struct gguf_init_params) { .no_alloc = false, .ctx = &gctx });
    if (g == NULL) {
        fprintf(stderr, "gguf-interop: %s\n", ggmlx_last_error());
        return 1;
    }
    printf("{\"version\": %" PRIu32 ", \"alignment\": %zu, \"kv\": [", gguf_get_version(g), gguf_get_alignment(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        printf("%s\n [", i ? "," : "");
        put_str(gguf_get_key(g, i));
        const enum gguf_type t = gguf_get_kv_type(g, i);
        if (t == GGUF_TYPE_ARRAY) {
            const enum gguf_type et = gguf_get_arr_type(g, i);
            printf(", \"arr\", \"%s\", [", gguf_type_name(et));
            for (size_t j = 0; j < gguf_get_arr_n(g, i); j++) {
                printf("%s", j ? ", " : "");
                if (et == GGUF_TYPE_STRING) {
                    put_str(gguf_get_arr_str(g, i, j));
                } else {
                    put_value(et, gguf_get_arr_data(g, i), j);
                }
            }
            printf("]]");
        } else {
            printf(", \"%s\", ", gguf_type_name(t));
            if (t == GGUF_TYPE_STRING) {
                put_str(gguf_get_val_str(g, i));
            } else {
                put_value(t, gguf_get_val_data(g, i), 0);
            }
            printf("]");
        }
    }
    printf("],\n\"tensors\": [");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const int64_t *            ne = gguf_get_tensor_ne(g, i);
        const struct ggml_tensor * t  = ggml_get_tensor(gctx, gguf_get_tensor_name(g, i));
        printf("%s\n [", i ? "," : "");
        put_str(gguf_get_tensor_name(g, i));
        printf(", %d, [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "], %zu, \"", (int) gguf_get_tensor_type(g, i),
               ne[0], ne[1], ne[2], ne[3], gguf_get_tensor_offset(g, i));
        for (size_t b = 0; b < ggml_nbytes(t); b++) {
            printf("%02x", ((const uint8_t *) t->data)[b]);
        }
        printf("\"]");
    }
    printf("]}\n");
    gguf_free(g);
    ggml_free(gctx);
    return 0;
}

/* ---- write: spec.py's content ----------------------------------------------------------------- */

static const uint8_t  A_U8[]   = { 1, 2, 255 };
static const int8_t   A_I8[]   = { -1, 0, 127 };
static const uint16_t A_U16[]  = { 1, 65535 };
static const int16_t  A_I16[]  = { -32768, 5 };
static const uint32_t A_U32[]  = { 7, 4000000000u };
static const int32_t  A_I32[]  = { -7, 2000000000 };
static const float    A_F32[]  = { 0.5f, -1e30f };
static const bool     A_BOOL[] = { true, false, true };
static const uint64_t A_U64[]  = { UINT64_MAX };
static const int64_t  A_I64[]  = { INT64_MIN, 3 };
static const double   A_F64[]  = { 3.25, -0.5 };
static const char *   A_STR[]  = { "alpha", "", "\xc3\xa9t\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int write_spec(const char * path) {
    struct gguf_context * g = gguf_init_empty();
    if (g == NULL) {
        return 1;
    }
    gguf_set_val_str(g, "general.architecture", "interop");
    gguf_set_val_u8(g, "t.u8", 200);
    gguf_set_val_i8(g, "t.i8", -100);
    gguf_set_val_u16(g, "t.u16", 60000);
    gguf_set_val_i16(g, "t.i16", -30000);
    gguf_set_val_u32(g, "t.u32", 4000000000u);
    gguf_set_val_i32(g, "t.i32", -2000000000);
    gguf_set_val_f32(g, "t.f32", 1.25f);
    gguf_set_val_bool(g, "t.bool", true);
    gguf_set_val_str(g, "t.str", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80");
    gguf_set_val_u64(g, "t.u64", UINT64_MAX - 1);
    gguf_set_val_i64(g, "t.i64", INT64_MIN + 1);
    gguf_set_val_f64(g, "t.f64", 6.5e300);
    gguf_set_arr_data(g, "a.u8", GGUF_TYPE_UINT8, A_U8, N(A_U8));
    gguf_set_arr_data(g, "a.i8", GGUF_TYPE_INT8, A_I8, N(A_I8));
    gguf_set_arr_data(g, "a.u16", GGUF_TYPE_UINT16, A_U16, N(A_U16));
    gguf_set_arr_data(g, "a.i16", GGUF_TYPE_INT16, A_I16, N(A_I16));
    gguf_set_arr_data(g, "a.u32", GGUF_TYPE_UINT32, A_U32, N(A_U32));
    gguf_set_arr_data(g, "a.i32", GGUF_TYPE_INT32, A_I32, N(A_I32));
    gguf_set_arr_data(g, "a.f32", GGUF_TYPE_FLOAT32, A_F32, N(A_F32));
    gguf_set_arr_data(g, "a.bool", GGUF_TYPE_BOOL, A_BOOL, N(A_BOOL));
    gguf_set_arr_data(g, "a.u64", GGUF_TYPE_UINT64, A_U64, N(A_U64));
    gguf_set_arr_data(g, "a.i64", GGUF_TYPE_INT64, A_I64, N(A_I64));
    gguf_set_arr_data(g, "a.f64", GGUF_TYPE_FLOAT64, A_F64, N(A_F64));
    gguf_set_arr_str(g, "a.str", A_STR, N(A_STR));

    int                   rc   = 1;
    struct ggml_context * gctx = ggml_init((struct ggml_init_params) { .mem_size = 1 << 16 });
    if (gctx == NULL) {
        goto err_g;
    }
    /* spec.TENSORS: numpy shapes (3,2), (8,), (2,32), (1,4) are ne [2,3], [8], [32,2], [4,1] */
    struct ggml_tensor * ts[] = {
        ggml_new_tensor_2d(gctx, GGML_TYPE_F32, 2, 3),
        ggml_new_tensor_1d(gctx, GGML_TYPE_F16, 8),
        ggml_new_tensor_2d(gctx, GGML_TYPE_Q8_0, 32, 2),
        ggml_new_tensor_2d(gctx, GGML_TYPE_I32, 4, 1),
    };
    const char * names[] = { "tok.f32", "blk.f16", "blk.q8_0", "out.i32" };
    for (size_t k = 0; k < N(ts); k++) {
        if (ts[k] == NULL) {
            goto err_gctx;
        }
        ggml_set_name(ts[k], names[k]);
        uint8_t * d = ts[k]->data;
        for (size_t i = 0; i < ggml_nbytes(ts[k]); i++) {
            d[i] = (uint8_t) ((i * 7 + k * 13 + 1) & 0xFF); /* spec.tensor_bytes */
        }
        gguf_add_tensor(g, ts[k]);
    }
    if (ggmlx_last_error() != NULL) {
        fprintf(stderr, "gguf-interop: %s\n", ggmlx_last_error());
        goto err_gctx;
    }
    if (!gguf_write_to_file(g, path, false)) {
        fprintf(stderr, "gguf-interop: %s\n", ggmlx_last_error());
        goto err_gctx;
    }
    rc = 0;

err_gctx:
    ggml_free(gctx);
err_g:
    gguf_free(g);
    return rc;
}

int main(int argc, char ** argv) {
    if (argc == 3 && strcmp(argv[1], "dump") == 0) {
        return dump(argv[2]);
    }
    if (argc == 3 && strcmp(argv[1], "write") == 0) {
        return write_spec(argv[2]);
    }
    fprintf(stderr, "usage: gguf-interop dump FILE | write FILE\n");
    return 2;
}
