/*
 * quant-oracle.c -- ggmlx's side of the quantized-format oracle test (run.py), through the public
 * API only, so it can be built against any ggml:
 *
 *   quant-oracle dequant TYPE IN OUT          IN holds whole blocks of type TYPE (its enum value);
 *                                             OUT gets ggml_get_type_traits(TYPE)->to_float of them
 *   quant-oracle quant TYPE N_PER_ROW IN OUT  IN holds float32 rows of N_PER_ROW; OUT gets
 *                                             ggml_quantize_chunk of them (no importance matrix)
 *   quant-oracle quant-ref TYPE IN OUT        the same through the type's from_float_ref
 *
 * Exit status: 0 done, 2 the library lacks that conversion for TYPE (the message says "not
 * implemented"), 1 any other error.
 */
#include "ggml.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Declared here as upstream declares it and bound weakly, so that a library still without it
 * links and is reported as lacking it instead of failing the build. */
size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix);
#pragma weak ggml_quantize_chunk

enum { EXIT_NOT_IMPLEMENTED = 2 };

static void * read_all(const char * path, size_t * size) {
    FILE * f   = fopen(path, "rb");
    char * buf = NULL;
    long   len;

    if (f == NULL) {
        fprintf(stderr, "quant-oracle: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "quant-oracle: cannot size %s\n", path);
        goto err_close;
    }
    buf = malloc(len > 0 ? (size_t) len : 1);
    if (buf == NULL) {
        fprintf(stderr, "quant-oracle: out of memory for %s\n", path);
        goto err_close;
    }
    if (fread(buf, 1, (size_t) len, f) != (size_t) len) {
        fprintf(stderr, "quant-oracle: short read on %s\n", path);
        goto err_free;
    }
    fclose(f);
    *size = (size_t) len;
    return buf;

err_free:
    free(buf);
err_close:
    fclose(f);
    return NULL;
}

static int write_all(const char * path, const void * data, size_t size) {
    FILE * f = fopen(path, "wb");
    if (f == NULL) {
        fprintf(stderr, "quant-oracle: cannot create %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (fwrite(data, 1, size, f) != size) {
        fprintf(stderr, "quant-oracle: short write on %s\n", path);
        fclose(f);
        return 1;
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "quant-oracle: cannot close %s\n", path);
        return 1;
    }
    return 0;
}

static int parse_type(const char * s, enum ggml_type * type) {
    char * end;
    long   v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < 0 || v >= GGML_TYPE_COUNT) {
        fprintf(stderr, "quant-oracle: bad type %s\n", s);
        return 1;
    }
    *type = (enum ggml_type) v;
    return 0;
}

static int dequant(enum ggml_type type, const char * in, const char * out) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(type);
    size_t  size;
    void *  src;
    float * dst;
    int     rc = 1;

    if (tr->to_float == NULL || tr->type_size == 0) {
        printf("not implemented: to_float of %s\n", tr->type_name ? tr->type_name : "?");
        return EXIT_NOT_IMPLEMENTED;
    }
    src = read_all(in, &size);
    if (src == NULL) {
        return 1;
    }
    if (size % tr->type_size != 0) {
        fprintf(stderr, "quant-oracle: %s is not whole %s blocks\n", in, tr->type_name);
        goto err_src;
    }
    const int64_t n = (int64_t) (size / tr->type_size) * tr->blck_size;
    dst             = malloc(n > 0 ? (size_t) n * sizeof(float) : 1);
    if (dst == NULL) {
        fprintf(stderr, "quant-oracle: out of memory\n");
        goto err_src;
    }
    tr->to_float(src, dst, n);
    rc = write_all(out, dst, (size_t) n * sizeof(float));
    free(dst);
err_src:
    free(src);
    return rc;
}

/* by_ref: quantize through the type's from_float_ref instead of ggml_quantize_chunk */
static int quant(enum ggml_type type, int64_t n_per_row, const char * in, const char * out, int by_ref) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(type);
    size_t  size;
    float * src;
    void *  dst;
    int     rc = 1;

    if (by_ref ? tr->from_float_ref == NULL : &ggml_quantize_chunk == NULL) {
        printf("not implemented: %s of %s\n", by_ref ? "from_float_ref" : "ggml_quantize_chunk",
               tr->type_name ? tr->type_name : "?");
        return EXIT_NOT_IMPLEMENTED;
    }
    if (tr->blck_size <= 0 || n_per_row <= 0 || n_per_row % tr->blck_size != 0) {
        fprintf(stderr, "quant-oracle: row length %lld is not whole %s blocks\n", (long long) n_per_row,
                tr->type_name ? tr->type_name : "?");
        return 1;
    }
    src = read_all(in, &size);
    if (src == NULL) {
        return 1;
    }
    if (size % ((size_t) n_per_row * sizeof(float)) != 0) {
        fprintf(stderr, "quant-oracle: %s is not whole rows of %lld floats\n", in, (long long) n_per_row);
        goto err_src;
    }
    const int64_t nrows    = (int64_t) (size / ((size_t) n_per_row * sizeof(float)));
    const size_t  row_size = (size_t) (n_per_row / tr->blck_size) * tr->type_size;
    const size_t  want     = (size_t) nrows * row_size;
    dst                    = calloc(want > 0 ? want : 1, 1);
    if (dst == NULL) {
        fprintf(stderr, "quant-oracle: out of memory\n");
        goto err_src;
    }
    if (by_ref) {
        tr->from_float_ref(src, dst, nrows * n_per_row);
    } else {
        const size_t got = ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL);
        if (got == 0) {
            printf("not implemented: ggml_quantize_chunk of %s returned 0\n", tr->type_name);
            rc = EXIT_NOT_IMPLEMENTED;
            goto err_dst;
        }
        if (got != want) {
            fprintf(stderr, "quant-oracle: ggml_quantize_chunk of %s wrote %zu bytes, not %zu\n", tr->type_name,
                    got, want);
            goto err_dst;
        }
    }
    rc = write_all(out, dst, want);
err_dst:
    free(dst);
err_src:
    free(src);
    return rc;
}

int main(int argc, char ** argv) {
    enum ggml_type type;

    if (argc == 5 && strcmp(argv[1], "dequant") == 0) {
        return parse_type(argv[2], &type) ? 1 : dequant(type, argv[3], argv[4]);
    }
    if (argc == 6 && strcmp(argv[1], "quant") == 0) {
        char *    end;
        long long n = strtoll(argv[3], &end, 10);
        if (*end != '\0') {
            fprintf(stderr, "quant-oracle: bad row length %s\n", argv[3]);
            return 1;
        }
        return parse_type(argv[2], &type) ? 1 : quant(type, n, argv[4], argv[5], 0);
    }
    if (argc == 5 && strcmp(argv[1], "quant-ref") == 0) {
        /* from_float_ref takes a flat run of blocks; one block-sized row is as good as any */
        if (parse_type(argv[2], &type)) {
            return 1;
        }
        return quant(type, ggml_get_type_traits(type)->blck_size, argv[3], argv[4], 1);
    }
    fprintf(stderr, "usage: quant-oracle dequant TYPE IN OUT | quant TYPE N_PER_ROW IN OUT | quant-ref TYPE IN OUT\n");
    return 1;
}
