/*
 * ggml-seed.c -- the example the project grew from (ggmlR's ggml_backend_graph_compute_async
 * page), in C: a CPU backend, a 16 MiB context, relu of 100 values computed asynchronously
 * while the host does other work, then synchronize and check.
 *
 * usage: ggml-seed      Exit status 0 when every value is right, 1 otherwise.
 */
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"

#include <stdio.h>

#define N_VALUES 100

static int fail(const char * what) {
    const char * why = ggmlx_last_error();
    fprintf(stderr, "ggml-seed: %s failed: %s\n", what, why ? why : "(no message)");
    return 1;
}

int main(void) {
    int rc = 1;

    ggml_backend_t cpu = ggml_backend_cpu_init();
    if (cpu == NULL) {
        return fail("ggml_backend_cpu_init");
    }
    printf("backend: %s\n", ggml_backend_name(cpu));

    /* an allocating context: the tensors live in its 16 MiB, which the CPU can compute on */
    struct ggml_init_params params = { 16u << 20, NULL, false };
    struct ggml_context * ctx = ggml_init(params);
    if (ctx == NULL) {
        fail("ggml_init");
        goto err_backend;
    }
    printf("context: %zu MiB\n", ggml_get_mem_size(ctx) >> 20);

    struct ggml_tensor * a  = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N_VALUES);
    struct ggml_tensor * b  = ggml_relu(ctx, a);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (gf == NULL) { /* a failed constructor marks the context, so ggml_new_graph fails too */
        fail("building the graph");
        goto err_ctx;
    }
    ggml_build_forward_expand(gf, b);

    /* values of both signs, so relu has something to do */
    for (int i = 0; i < N_VALUES; i++) {
        ggml_set_f32_1d(a, i, (float) (i - N_VALUES / 2) / 25.0f);
    }
    printf("graph: relu of %d F32 values, %d node\n", N_VALUES, ggml_graph_n_nodes(gf));

    const enum ggml_status st = ggml_backend_graph_compute_async(cpu, gf);
    if (st != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "ggml-seed: ggml_backend_graph_compute_async: %s\n", ggml_status_to_string(st));
        fail("ggml_backend_graph_compute_async");
        goto err_ctx;
    }
    printf("ggml_backend_graph_compute_async: enqueued\n");

    /* the host's own work while the backend computes: the expected results */
    float want[N_VALUES];
    int   positive = 0;
    for (int i = 0; i < N_VALUES; i++) {
        const float x = (float) (i - N_VALUES / 2) / 25.0f;
        want[i] = x > 0.0f ? x : 0.0f;
        positive += x > 0.0f;
    }
    printf("host: computed the reference meanwhile (%d positive inputs)\n", positive);

    ggml_backend_synchronize(cpu);
    const enum ggml_status done = ggmlx_backend_get_status(cpu);
    printf("ggml_backend_synchronize: done (%s)\n", ggml_status_to_string(done));
    if (done != GGML_STATUS_SUCCESS) {
        goto err_ctx;
    }

    int right = 0;
    for (int i = 0; i < N_VALUES; i++) {
        right += ggml_get_f32_1d(b, i) == want[i];
    }
    printf("check: %d of %d values right\n", right, N_VALUES);
    rc = right == N_VALUES ? 0 : 1;
    printf("%s\n", rc == 0 ? "seed example: OK" : "seed example: FAILED");

err_ctx:
    ggml_free(ctx);
err_backend:
    ggml_backend_free(cpu);
    return rc;
}
