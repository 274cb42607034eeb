/*
 * fuzz-gguf-edit.c -- libFuzzer target for the GGUF editor: the input is a program of edits
 * (set a value of any type, set an array, remove a key, add a tensor, change a tensor's type,
 * copy every pair into a second context, set general.alignment) on a context from
 * gguf_init_empty. Whatever the edits, nothing may crash, leak or abort; refused edits leave an
 * error. The context is then written whole, read back, and must hold exactly what it held:
 * every key, type, value and tensor (name, type, shape, offset, bytes).
 *
 *   fuzz-gguf-edit -max_total_time=60 NEW_CORPUS_DIR
 */
#include "ggml.h"
#include "gguf.h"
#include "ggmlx.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) text;
    (void) user_data;
}

#define CHECK(cond)                                                                                      \
    do {                                                                                                 \
        if (!(cond)) {                                                                                   \
            fprintf(stderr, "fuzz-gguf-edit: %s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, ggmlx_last_error() ? ggmlx_last_error() : "none");                           \
            abort();                                                                                     \
        }                                                                                                \
    } while (0)

/* the input, consumed a byte at a time (zeros once it runs out) */
struct prog {
    const uint8_t * p;
    size_t          n;
};

static uint8_t next(struct prog * pr) {
    if (pr->n == 0) {
        return 0;
    }
    pr->n--;
    return *pr->p++;
}

static const char * KEYS[] = { "a", "b", "general.alignment", "general.name", "k.\xc3\xa9", "x.y.z", "", "t" };
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])
#define N_TENSORS 6

static const char * STRS[] = { "", "one", "t\xc3\xa9", "\xff\xfe", "a longer string value" };

/* the values of key id of a and b are the same */
static void same_kv(const struct gguf_context * a, int64_t ia, const struct gguf_context * b, int64_t ib) {
    CHECK(strcmp(gguf_get_key(a, ia), gguf_get_key(b, ib)) == 0);
    const enum gguf_type t = gguf_get_kv_type(a, ia);
    CHECK(t == gguf_get_kv_type(b, ib));
    if (t == GGUF_TYPE_ARRAY) {
        const enum gguf_type et = gguf_get_arr_type(a, ia);
        CHECK(et == gguf_get_arr_type(b, ib));
        const size_t n = gguf_get_arr_n(a, ia);
        CHECK(n == gguf_get_arr_n(b, ib));
        for (size_t j = 0; et == GGUF_TYPE_STRING && j < n; j++) {
            CHECK(strcmp(gguf_get_arr_str(a, ia, j), gguf_get_arr_str(b, ib, j)) == 0);
        }
        if (et != GGUF_TYPE_STRING && n > 0) {
            size_t size = 0;
            switch (et) {
                case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: size = 1; break;
                case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: size = 2; break;
                case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: size = 4; break;
                default: size = 8; break;
            }
            CHECK(memcmp(gguf_get_arr_data(a, ia), gguf_get_arr_data(b, ib), n * size) == 0);
        }
    } else if (t == GGUF_TYPE_STRING) {
        CHECK(strcmp(gguf_get_val_str(a, ia), gguf_get_val_str(b, ib)) == 0);
    } else {
        const size_t size = t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_INT8 || t == GGUF_TYPE_BOOL ? 1
                          : t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_INT16                     ? 2
                          : t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64 || t == GGUF_TYPE_FLOAT64 ? 8
                                                                                                 : 4;
        CHECK(memcmp(gguf_get_val_data(a, ia), gguf_get_val_data(b, ib), size) == 0);
    }
}

static void edit(struct gguf_context * g, struct ggml_tensor ** ts, struct prog * pr) {
    const uint8_t op  = next(pr) % 10;
    const char *  key = KEYS[next(pr) % N_KEYS];
    uint8_t       raw[8 * 16];
    for (size_t i = 0; i < 8; i++) {
        raw[i] = next(pr);
    }
    switch (op) {
        case 0: gguf_set_val_u8(g, key, raw[0]); break;
        case 1: gguf_set_val_u32(g, key, (uint32_t) raw[0] << (raw[1] % 12)); break; /* alignments up to 2^18 */
        case 2: {
            int64_t v;
            memcpy(&v, raw, 8);
            if (raw[2] & 1) {
                gguf_set_val_i64(g, key, v);
            } else {
                double d;
                memcpy(&d, raw, 8);
                gguf_set_val_f64(g, key, d);
            }
            break;
        }
        case 3: gguf_set_val_bool(g, key, raw[0] & 1); break;
        case 4: gguf_set_val_str(g, key, STRS[raw[0] % 5]); break;
        case 5: {
            /* an array of any type (also STRING and ARRAY, which must be refused) */
            const enum gguf_type t = (enum gguf_type) (raw[0] % (GGUF_TYPE_COUNT + 1));
            const size_t         n = raw[1] % 17;
            for (size_t i = 8; i < sizeof raw; i++) {
                raw[i] = (uint8_t) (raw[2] + i);
            }
            gguf_set_arr_data(g, key, t, raw, n);
            break;
        }
        case 6: {
            const char * s[4] = { STRS[raw[0] % 5], STRS[raw[1] % 5], STRS[raw[2] % 5], STRS[raw[3] % 5] };
            gguf_set_arr_str(g, key, s, raw[4] % 5);
            break;
        }
        case 7: gguf_remove_key(g, key); break;
        case 8: gguf_add_tensor(g, ts[raw[0] % N_TENSORS]); break; /* twice: refused */
        case 9: {
            /* F32 -> F16 or Q8_0 (smaller, so the F32 data stays enough), or an invalid type */
            static const int types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0, 4, GGML_TYPE_COUNT };
            gguf_set_tensor_type(g, ggml_get_name(ts[raw[0] % N_TENSORS]), (enum ggml_type) types[raw[1] % 5]);
            break;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static int once;
    if (!once) {
        ggml_log_set(quiet, NULL);
        once = 1;
    }
    struct ggml_context * tctx = ggml_init((struct ggml_init_params) { .mem_size = 1 << 20 });
    CHECK(tctx != NULL);
    struct ggml_tensor * ts[N_TENSORS];
    for (int i = 0; i < N_TENSORS; i++) {
        /* shapes whose first dimension is a multiple of 32 (Q8_0) except tensor 5 */
        ts[i] = ggml_new_tensor_2d(tctx, GGML_TYPE_F32, i == 5 ? 33 : 32 * (i + 1), i % 3 + 1);
        CHECK(ts[i] != NULL);
        ggml_format_name(ts[i], "t%d", i);
        for (size_t b = 0; b < ggml_nbytes(ts[i]); b++) {
            ((uint8_t *) ts[i]->data)[b] = (uint8_t) (b * 31 + (size_t) i);
        }
    }

    struct gguf_context * g  = gguf_init_empty();
    struct prog           pr = { data, size };
    CHECK(g != NULL);
    for (int steps = 0; pr.n > 0 && steps < 64; steps++) {
        edit(g, ts, &pr);
    }

    /* a copy of every pair through gguf_set_kv holds the same */
    struct gguf_context * copy = gguf_init_empty();
    CHECK(copy != NULL);
    gguf_set_kv(copy, g);
    CHECK(gguf_get_n_kv(copy) == gguf_get_n_kv(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        same_kv(g, i, copy, i);
    }
    gguf_free(copy);

    char * buf = NULL;
    size_t n   = 0;
    FILE * f   = open_memstream(&buf, &n);
    CHECK(f != NULL);
    const bool written = gguf_write_to_file_ptr(g, f, false);
    CHECK(fclose(f) == 0);
    CHECK(written);
    CHECK(gguf_get_meta_size(g) <= n);

    struct ggml_context * rctx = NULL;
    struct gguf_context * r    = gguf_init_from_buffer(buf, n, (struct gguf_init_params) { .no_alloc = false, .ctx = &rctx });
    CHECK(r != NULL);
    CHECK(gguf_get_n_kv(r) == gguf_get_n_kv(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        same_kv(g, i, r, i);
    }
    CHECK(gguf_get_alignment(r) == gguf_get_alignment(g));
    CHECK(gguf_get_n_tensors(r) == gguf_get_n_tensors(g));
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char * name = gguf_get_tensor_name(g, i);
        CHECK(strcmp(name, gguf_get_tensor_name(r, i)) == 0);
        CHECK(gguf_get_tensor_type(g, i) == gguf_get_tensor_type(r, i));
        CHECK(gguf_get_tensor_offset(g, i) == gguf_get_tensor_offset(r, i));
        CHECK(gguf_get_tensor_size(g, i) == gguf_get_tensor_size(r, i));
        CHECK(memcmp(gguf_get_tensor_ne(g, i), gguf_get_tensor_ne(r, i), 4 * sizeof(int64_t)) == 0);
        const struct ggml_tensor * src = ggml_get_tensor(tctx, name);
        const struct ggml_tensor * got = ggml_get_tensor(rctx, name);
        CHECK(src != NULL && got != NULL);
        CHECK(memcmp(src->data, got->data, gguf_get_tensor_size(g, i)) == 0);
    }

    gguf_free(r);
    ggml_free(rctx);
    free(buf);
    gguf_free(g);
    ggml_free(tctx);
    return 0;
}
