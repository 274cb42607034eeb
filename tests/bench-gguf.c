/*
 * bench-gguf.c -- how long reading a model's GGUF metadata takes: a file with 2000 tensors and
 * a 150000-entry tokenizer (tokens, scores, token types), read with no_alloc (tensors made, data
 * not read), as a program loading a model does first. Prints the median of the runs:
 *
 *     bench-gguf: <impl> <ms> ms median (<runs> runs, <file>)
 *
 * Only the public gguf.h/ggml.h API, so the same file builds against upstream ggml for the
 * comparison (cc -O2 tests/bench-gguf.c -DBENCH_GGUF_IMPL='"upstream"' -I<ggml>/include
 * -L<ggml>/lib -lggml-base). Both read the same file: write it once with --write.
 *
 * usage: bench-gguf [--write] [--file PATH] [--runs N] [--quick]
 *   --write      (re)write the test file first (otherwise it is written only when missing)
 *   --file PATH  the test file (default: bench-gguf.gguf in the temporary directory)
 *   --runs N     timed reads (default 21; --quick: 3)
 */
#include "ggml.h"
#include "gguf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_GGUF_IMPL
#    define BENCH_GGUF_IMPL "ggmlx"
#endif

#define N_TENSORS 2000
#define N_VOCAB   150000

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double) ts.tv_sec + 1e-6 * (double) ts.tv_nsec;
}

static int cmp_double(const void * a, const void * b) {
    const double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* The test file: a llama-like set of keys, the tokenizer arrays and 2000 small F32/Q8_0 tensors. */
static bool write_file(const char * path) {
    bool                  ok   = false;
    struct gguf_context * g    = gguf_init_empty();
    char **               toks = calloc(N_VOCAB, sizeof *toks);
    float *               sc   = malloc(N_VOCAB * sizeof *sc);
    int32_t *             tt   = malloc(N_VOCAB * sizeof *tt);
    struct ggml_context * gctx = ggml_init((struct ggml_init_params) {
        .mem_size = N_TENSORS * (ggml_tensor_overhead() + 64 * 4 * sizeof(float) + 64) + (1 << 20),
    });
    if (g == NULL || toks == NULL || sc == NULL || tt == NULL || gctx == NULL) {
        fprintf(stderr, "bench-gguf: out of memory\n");
        goto out;
    }
    gguf_set_val_str(g, "general.architecture", "llama");
    gguf_set_val_str(g, "general.name", "bench-gguf");
    gguf_set_val_u32(g, "llama.block_count", N_TENSORS / 8);
    gguf_set_val_u32(g, "llama.context_length", 4096);
    gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
    for (int i = 0; i < N_VOCAB; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "\xe2\x96\x81tok%d", i); /* "▁tok<i>", as sentencepiece spells them */
        toks[i] = strdup(buf);
        if (toks[i] == NULL) {
            goto out;
        }
        sc[i] = -(float) i;
        tt[i] = 1;
    }
    gguf_set_arr_str(g, "tokenizer.ggml.tokens", (const char **) toks, N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, sc, N_VOCAB);
    gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, tt, N_VOCAB);
    for (int i = 0; i < N_TENSORS; i++) {
        struct ggml_tensor * t = i % 2 ? ggml_new_tensor_2d(gctx, GGML_TYPE_F32, 64, 4)
                                       : ggml_new_tensor_2d(gctx, GGML_TYPE_Q8_0, 64, 4);
        if (t == NULL) {
            goto out;
        }
        memset(t->data, 0, ggml_nbytes(t));
        char name[GGML_MAX_NAME];
        snprintf(name, sizeof name, "blk.%d.%s%d.weight", i / 8, i % 2 ? "attn_norm" : "ffn_up", i % 8);
        ggml_set_name(t, name);
        gguf_add_tensor(g, t);
    }
    ok = gguf_write_to_file(g, path, false);
    if (!ok) {
        fprintf(stderr, "bench-gguf: cannot write %s\n", path);
    }
out:
    if (toks != NULL) {
        for (int i = 0; i < N_VOCAB; i++) {
            free(toks[i]);
        }
    }
    free(toks);
    free(sc);
    free(tt);
    if (gctx != NULL) {
        ggml_free(gctx);
    }
    if (g != NULL) {
        gguf_free(g);
    }
    return ok;
}

int main(int argc, char ** argv) {
    bool         rewrite = false;
    int          runs    = 21;
    char         dflt[512];
    const char * tmp  = getenv("TMPDIR");
    snprintf(dflt, sizeof dflt, "%s/bench-gguf.gguf", tmp && *tmp ? tmp : "/tmp");
    const char * path = dflt;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0) {
            rewrite = true;
        } else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--quick") == 0) {
            runs = 3;
        } else {
            fprintf(stderr, "usage: bench-gguf [--write] [--file PATH] [--runs N] [--quick]\n");
            return 2;
        }
    }
    if (runs < 1) {
        runs = 1;
    }
    if ((rewrite || access(path, R_OK) != 0) && !write_file(path)) {
        return 1;
    }

    double * t = malloc((size_t) runs * sizeof *t);
    if (t == NULL) {
        return 1;
    }
    for (int r = 0; r < runs; r++) {
        struct ggml_context * gctx = NULL;
        const double          t0   = now_ms();
        struct gguf_context * g    = gguf_init_from_file(path, (struct gguf_init_params) { .no_alloc = true, .ctx = &gctx });
        t[r]                       = now_ms() - t0;
        if (g == NULL) {
            fprintf(stderr, "bench-gguf: cannot read %s\n", path);
            free(t);
            return 1;
        }
        /* what was read is what was written: a wrong file must not time well */
        const int64_t id = gguf_find_key(g, "tokenizer.ggml.tokens");
        if (gguf_get_n_tensors(g) != N_TENSORS || id < 0 || gguf_get_arr_n(g, id) != N_VOCAB) {
            fprintf(stderr, "bench-gguf: %s is not the test file (use --write)\n", path);
            free(t);
            return 1;
        }
        gguf_free(g);
        ggml_free(gctx);
    }
    qsort(t, (size_t) runs, sizeof *t, cmp_double);
    const double median = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    printf("bench-gguf: %s %.2f ms median (%d runs, min %.2f, max %.2f, %s)\n", BENCH_GGUF_IMPL, median, runs, t[0],
           t[runs - 1], path);
    free(t);
    return 0;
}
