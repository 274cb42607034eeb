/*
 * A program that uses an installed ggmlx the way an outside project would: it
 * sees only the installed headers and libraries (found with find_package(ggml)
 * or pkg-config). relu([-1.5, 2.0]) must be [0.0, 2.0], and a GGUF key written to
 * memory must read back. Exit status 0 on success.
 */
#include "ggml.h"
#include "ggml-cpu.h"
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>

/* gguf.h is installed and linked: a key survives a trip through memory */
static int gguf_round_trip(void) {
    struct gguf_context * ctx = gguf_init_empty();
    if (ctx == NULL) {
        return 0;
    }
    gguf_set_val_u32(ctx, "consumer.answer", 42);
    const size_t n = gguf_get_meta_size(ctx);
    void * buf = malloc(n);
    int ok = 0;
    if (buf != NULL) {
        gguf_get_meta_data(ctx, buf);
        struct gguf_init_params params = { true, NULL };
        struct gguf_context * back = gguf_init_from_buffer(buf, n, params);
        ok = back != NULL && gguf_get_val_u32(back, gguf_find_key(back, "consumer.answer")) == 42;
        gguf_free(back);
        free(buf);
    }
    gguf_free(ctx);
    printf("consumer: gguf round trip %s\n", ok ? "ok" : "WRONG");
    return ok;
}

int main(void) {
    struct ggml_init_params params = {
        /* .mem_size   = */ 1024 * 1024,
        /* .mem_buffer = */ NULL,
        /* .no_alloc   = */ false,
    };
    struct ggml_context * ctx = ggml_init(params);
    if (ctx == NULL) {
        fprintf(stderr, "consumer: ggml_init failed\n");
        return 1;
    }

    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2);
    if (a == NULL) {
        fprintf(stderr, "consumer: ggml_new_tensor_1d failed\n");
        ggml_free(ctx);
        return 1;
    }
    float * in = ggml_get_data_f32(a);
    in[0] = -1.5f;
    in[1] = 2.0f;

    struct ggml_tensor * r  = ggml_relu(ctx, a);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (r == NULL || gf == NULL) {
        fprintf(stderr, "consumer: building the graph failed\n");
        ggml_free(ctx);
        return 1;
    }
    ggml_build_forward_expand(gf, r);

    enum ggml_status st = ggml_graph_compute_with_ctx(ctx, gf, 1);
    if (st != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "consumer: ggml_graph_compute_with_ctx returned %d\n", (int) st);
        ggml_free(ctx);
        return 1;
    }

    const float * out = ggml_get_data_f32(r);
    const int ok = out[0] == 0.0f && out[1] == 2.0f;
    printf("consumer: relu([-1.5, 2]) = [%g, %g] %s\n", (double) out[0], (double) out[1],
           ok ? "ok" : "WRONG");
    ggml_free(ctx);
    return ok && gguf_round_trip() ? 0 : 1;
}
