/*
 * fuzz-gguf.c -- libFuzzer target for the GGUF reader and writer (GGML_BUILD_FUZZ=ON, clang).
 *
 * Each input is read four ways (from memory without a ggml context, with one and no_alloc, with
 * one and the data section read; through the callback reader 7 bytes a call): all must agree on
 * whether the input is a GGUF file, and what they read must hold together (each tensor read with
 * its data holds its bytes of the input). A file that reads is then written back whole and read
 * again, and the second writing must give the same bytes as the first (the writer's output is a
 * fixed point of read-then-write), with gguf_get_meta_size/gguf_get_meta_data matching the
 * file's start.
 * Any disagreement aborts, which libFuzzer reports as a crash with the input saved.
 *
 *   fuzz-gguf -max_total_time=60 -dict=tests/fuzz/gguf.dict NEW_CORPUS_DIR tests/fuzz/corpus-gguf
 * (libFuzzer adds what it finds to the first directory: keep the seed corpus second)
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

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz-gguf: %s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    ggmlx_last_error() ? ggmlx_last_error() : "none");                        \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

/* the whole file g describes, with its tensors' data from gctx; NULL when the writer refuses */
static uint8_t * write_whole(struct gguf_context * g, struct ggml_context * gctx, size_t * n) {
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const char *         name = gguf_get_tensor_name(g, i);
        struct ggml_tensor * t    = ggml_get_tensor(gctx, name);
        CHECK(t != NULL);
        gguf_set_tensor_data(g, name, t->data);
    }
    char * buf = NULL;
    FILE * f   = open_memstream(&buf, n);
    CHECK(f != NULL);
    const bool ok = gguf_write_to_file_ptr(g, f, false);
    CHECK(fclose(f) == 0);
    if (!ok) {
        free(buf);
        return NULL;
    }
    /* the metadata alone is the file's start */
    const size_t meta = gguf_get_meta_size(g);
    CHECK(meta <= *n);
    uint8_t * m = malloc(meta ? meta : 1);
    CHECK(m != NULL);
    gguf_get_meta_data(g, m);
    CHECK(memcmp(m, buf, meta) == 0);
    free(m);
    return (uint8_t *) buf;
}

static void same_header(struct gguf_context * a, struct gguf_context * b) {
    CHECK(gguf_get_n_kv(a) == gguf_get_n_kv(b));
    CHECK(gguf_get_n_tensors(a) == gguf_get_n_tensors(b));
    CHECK(gguf_get_alignment(a) == gguf_get_alignment(b));
    for (int64_t i = 0; i < gguf_get_n_kv(a); i++) {
        CHECK(strcmp(gguf_get_key(a, i), gguf_get_key(b, i)) == 0);
        CHECK(gguf_get_kv_type(a, i) == gguf_get_kv_type(b, i));
    }
    for (int64_t i = 0; i < gguf_get_n_tensors(a); i++) {
        CHECK(strcmp(gguf_get_tensor_name(a, i), gguf_get_tensor_name(b, i)) == 0);
        CHECK(gguf_get_tensor_type(a, i) == gguf_get_tensor_type(b, i));
        CHECK(gguf_get_tensor_size(a, i) == gguf_get_tensor_size(b, i));
    }
}

/* the callback reader over the input, a few bytes a call, so reads that straddle chunks are tried */
struct chunks {
    const uint8_t * data;
    size_t          size;
};

static size_t read_chunk(void * ud, void * out, uint64_t offset, size_t len) {
    const struct chunks * c = ud;
    if (offset >= c->size) {
        return 0;
    }
    const size_t n = len < c->size - offset ? len : (size_t) (c->size - offset);
    memcpy(out, c->data + offset, n);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    static int once;
    if (!once) {
        ggml_log_set(quiet, NULL);
        once = 1;
    }
    if (size == 0) {
        return 0;
    }

    struct gguf_context * bare = gguf_init_from_buffer(data, size, (struct gguf_init_params) { .no_alloc = true });

    struct ggml_context * meta_ctx = NULL;
    struct gguf_context * meta     = gguf_init_from_buffer(data, size,
                                                           (struct gguf_init_params) { .no_alloc = true, .ctx = &meta_ctx });
    struct ggml_context * full_ctx = NULL;
    struct gguf_context * full     = gguf_init_from_buffer(data, size,
                                                           (struct gguf_init_params) { .no_alloc = false, .ctx = &full_ctx });

    struct chunks         src   = { data, size };
    struct gguf_context * chunk = gguf_init_from_callback(read_chunk, &src, 7, size,
                                                          (struct gguf_init_params) { .no_alloc = true });
    CHECK((bare != NULL) == (chunk != NULL));
    if (chunk != NULL) {
        same_header(bare, chunk);
        gguf_free(chunk);
    }
    CHECK((bare != NULL) == (meta != NULL));
    CHECK((bare != NULL) == (full != NULL));
    CHECK((meta_ctx != NULL) == (meta != NULL));
    CHECK((full_ctx != NULL) == (full != NULL));
    if (bare == NULL) {
        return 0;
    }
    same_header(bare, meta);
    same_header(bare, full);
    for (int64_t i = 0; i < gguf_get_n_tensors(meta); i++) {
        struct ggml_tensor * t = ggml_get_tensor(meta_ctx, gguf_get_tensor_name(meta, i));
        CHECK(t != NULL && t->data == NULL);
        CHECK(ggml_nbytes(t) == gguf_get_tensor_size(meta, i));
        const size_t at = gguf_get_data_offset(meta) + gguf_get_tensor_offset(meta, i);
        CHECK(at + ggml_nbytes(t) <= size);
        /* with the data read, each tensor holds its bytes of the input */
        const struct ggml_tensor * ft = ggml_get_tensor(full_ctx, gguf_get_tensor_name(meta, i));
        CHECK(ft != NULL && (ggml_nbytes(ft) == 0 || memcmp(ft->data, data + at, ggml_nbytes(ft)) == 0));
    }

    size_t    n1 = 0, n2 = 0;
    uint8_t * b1 = write_whole(full, full_ctx, &n1);
    CHECK(b1 != NULL); /* everything the reader accepts, the writer writes */

    struct ggml_context * again_ctx = NULL;
    struct gguf_context * again     = gguf_init_from_buffer(b1, n1,
                                                            (struct gguf_init_params) { .no_alloc = false, .ctx = &again_ctx });
    CHECK(again != NULL); /* the writer's output reads */
    same_header(full, again);
    uint8_t * b2 = write_whole(again, again_ctx, &n2);
    CHECK(b2 != NULL);
    CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0);

    free(b2);
    gguf_free(again);
    ggml_free(again_ctx);
    free(b1);
    gguf_free(full);
    ggml_free(full_ctx);
    gguf_free(meta);
    ggml_free(meta_ctx);
    gguf_free(bare);
    return 0;
}
