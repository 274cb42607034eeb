/*
 * test-cuda-marks.c -- time stamps timed on a CUDA stream (ggmlx_backend_queue_mark on a CUDA
 * backend, cuda/cuda-marks.h). GPU-only: skipped, never passed, without a device, unless
 * GGMLX_TEST_REQUIRE_CUDA is set (then a missing device fails). On a GPU machine run
 * bin/test-cuda-marks (scripts/gpu-check.sh does not run the Criterion suites).
 *
 * Only orders are asserted. A mark's time is the host clock at a reference event minus the
 * GPU's elapsed time to it, so it can never be earlier than the host time taken before it was
 * enqueued; the upper bound allows for cudaEventElapsedTime's resolution (about 0.5 us).
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cuda.h"
#include "ggmlx.h"

#include <stdlib.h>
#include <string.h>

#define SLACK_NS 2000u /* elapsed-time resolution, not a duration */

static ggml_backend_t gpu(void) {
    if (ggml_backend_cuda_get_device_count() <= 0) {
        const char * req = getenv("GGMLX_TEST_REQUIRE_CUDA");
        cr_assert(req == NULL || req[0] == '\0' || strcmp(req, "0") == 0, "GGMLX_TEST_REQUIRE_CUDA: no CUDA device");
        cr_skip_test("no CUDA device (GPU-only check)");
    }
    ggml_backend_t b = ggml_backend_cuda_init(0);
    cr_assert_not_null(b, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return b;
}

Test(cuda_marks, marks_bracket_queued_work_in_order) {
    ggml_backend_t b = gpu();
    const int n = 1024;
    struct ggml_init_params p = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, n);
    struct ggml_tensor * y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, n);
    struct ggml_tensor * z = ggml_mul_mat(ctx, x, y);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, z);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, b);
    cr_assert_not_null(buf);
    float * v = malloc((size_t) n * n * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < (size_t) n * n; i++) {
        v[i] = (float) (i % 7) * 0.25f;
    }
    ggml_backend_tensor_set(x, v, 0, ggml_nbytes(x));
    ggml_backend_tensor_set(y, v, 0, ggml_nbytes(y));
    ggml_backend_synchronize(b);

    uint64_t m[3] = { 0, 0, 0 };
    ggmlx_clear_last_error();
    const uint64_t t0 = ggmlx_time_ns();
    cr_assert(ggmlx_backend_queue_mark(b, &m[0]), "CUDA stamps on its stream");
    cr_assert_eq(ggml_backend_graph_compute_async(b, g), GGML_STATUS_SUCCESS);
    ggmlx_backend_queue_mark(b, &m[1]);
    ggmlx_backend_queue_mark(b, &m[2]);
    ggml_backend_synchronize(b);
    const uint64_t t1 = ggmlx_time_ns();
    cr_assert_null(ggmlx_last_error(), "%s", ggmlx_last_error());
    cr_assert_geq(m[0], t0, "the first mark is not before it was enqueued");
    cr_assert_gt(m[1], m[0], "the matmul between the marks ran on the GPU");
    cr_assert_geq(m[2], m[1], "marks keep stream order");
    cr_assert_leq(m[2], t1 + SLACK_NS, "the last mark is not after synchronize returned");
    free(v);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(b);
}

Test(cuda_marks, many_marks_resolve_and_events_are_reused) {
    ggml_backend_t b = gpu();
    enum { N_MARKS = 300 }; /* more than the first capacity of the pending and spare lists */
    static uint64_t m[2][N_MARKS];
    for (int round = 0; round < 2; round++) {
        const uint64_t t0 = ggmlx_time_ns();
        for (int i = 0; i < N_MARKS; i++) {
            ggmlx_backend_queue_mark(b, &m[round][i]);
        }
        ggml_backend_synchronize(b);
        const uint64_t t1 = ggmlx_time_ns();
        for (int i = 0; i < N_MARKS; i++) {
            cr_assert(m[round][i] >= t0 && m[round][i] <= t1 + SLACK_NS, "round %d mark %d within the round", round, i);
            if (i > 0) {
                cr_assert_geq(m[round][i], m[round][i - 1], "round %d: mark %d after mark %d", round, i, i - 1);
            }
        }
    }
    cr_assert_geq(m[1][0], m[0][N_MARKS - 1], "the second round after the first");
    ggml_backend_free(b);
}

Test(cuda_marks, unresolved_marks_are_dropped_when_the_backend_is_freed) {
    ggml_backend_t b = gpu();
    uint64_t * m = malloc(sizeof *m);
    cr_assert_not_null(m);
    *m = 7;
    ggmlx_backend_queue_mark(b, m);
    ggml_backend_free(b); /* must not write *m later (nor now, once freed below) */
    cr_assert_eq(*m, 7, "never resolved: left untouched");
    free(m);
}
