/*
 * test-cuda-graph-run.c -- capturing and replaying CUDA graphs (cuda/cuda-graph.c, linked in
 * here over stub runtime functions, so no GPU is needed): the warm-up, capture and replay
 * sequence, the update of a stale executable graph, and that every failure on the way launches
 * the compute plainly with the same result. Needs only the CUDA headers; built without CUDA it
 * reports itself skipped.
 */
#include <criterion/criterion.h>

#if defined(GGMLX_TEST_CUDA_HEADERS)

#include "cuda-graph.h"
#include "ggml-impl.h"
#include "graph-cache.h"

#include <stdint.h>
#include <stdlib.h>

/* ---- stub runtime: counts calls, fails on request ------------------------------------------ */

static struct {
    int         begin, end, instantiate, update, graph_destroy, exec_destroy, graph_launch, check_failed;
    int         live_execs;
    bool        capturing;
    cudaError_t begin_err, end_err, update_err, instantiate_err, launch_err;
    void      * last_launched;
} g_rt;

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
    (void) stream;
    g_rt.begin++;
    cr_assert_eq(mode, cudaStreamCaptureModeThreadLocal, "a sync or allocation must fail the capture");
    if (g_rt.begin_err != cudaSuccess) {
        return g_rt.begin_err;
    }
    g_rt.capturing = true;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t * graph) {
    (void) stream;
    g_rt.end++;
    cr_assert(g_rt.capturing, "ended a capture never begun");
    g_rt.capturing = false;
    *graph = g_rt.end_err != cudaSuccess ? NULL : (cudaGraph_t) (uintptr_t) 0xa000;
    return g_rt.end_err;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    cr_assert_eq((uintptr_t) graph, 0xa000);
    g_rt.graph_destroy++;
    return cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph, cudaGraphExecUpdateResultInfo * info) {
    (void) exec, (void) graph, (void) info;
    g_rt.update++;
    return g_rt.update_err;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags) {
    (void) graph, (void) flags;
    g_rt.instantiate++;
    if (g_rt.instantiate_err != cudaSuccess) {
        return g_rt.instantiate_err;
    }
    *exec = (cudaGraphExec_t) (uintptr_t) (0x100 + g_rt.instantiate);
    g_rt.live_execs++;
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    (void) exec;
    g_rt.exec_destroy++;
    g_rt.live_execs--;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    (void) stream;
    cr_assert_not(g_rt.capturing, "a graph launched inside a capture");
    g_rt.graph_launch++;
    g_rt.last_launched = (void *) exec;
    return g_rt.launch_err;
}

cudaError_t cudaGetLastError(void) {
    return cudaSuccess;
}

const char * cudaGetErrorName(cudaError_t err) {
    (void) err;
    return "cudaErrorStub";
}

bool ggmlx_cuda_check(struct ggmlx_cuda_device * d, cudaError_t err, const char * func, const char * what) {
    (void) d, (void) func, (void) what;
    if (err != cudaSuccess) {
        g_rt.check_failed++;
    }
    return err == cudaSuccess;
}

/* ---- the compute: counts plain and captured launches --------------------------------------- */

struct launches {
    int  plain, captured;
    bool fail_in_capture; /* the launcher fails only inside a capture */
    bool fail_always;
};

static enum ggml_status launch(void * user) {
    struct launches * l = user;
    if (g_rt.capturing) {
        l->captured++;
        return l->fail_in_capture || l->fail_always ? GGML_STATUS_FAILED : GGML_STATUS_SUCCESS;
    }
    l->plain++;
    return l->fail_always ? GGML_STATUS_FAILED : GGML_STATUS_SUCCESS;
}

/* ---- fixture ------------------------------------------------------------------------------- */

static struct ggmlx_cuda_device  g_dev;
static struct ggmlx_cuda_graphs  g_graphs;
static struct ggml_context     * g_ctx;
static struct ggml_tensor      * g_a, * g_b, * g_c;
static struct ggml_cgraph      * g_graph;
static const uint64_t            k_extra[GGMLX_CUDA_GRAPH_EXTRA] = { 0x5000, 256 };
static cudaStream_t const        k_stream = (cudaStream_t) (uintptr_t) 0x77;

static void setup(void) {
    memset(&g_rt, 0, sizeof g_rt);
    memset(&g_dev, 0, sizeof g_dev);
    snprintf(g_dev.name, sizeof g_dev.name, "CUDA0");
    atomic_init(&g_dev.failed, false);
    unsetenv("GGML_CUDA_DISABLE_GRAPHS");
    ggmlx_cuda_graphs_init(&g_graphs, &g_dev);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    g_ctx = ggml_init(ip);
    cr_assert_not_null(g_ctx);
    g_a = ggml_new_tensor_1d(g_ctx, GGML_TYPE_F32, 64);
    g_b = ggml_new_tensor_1d(g_ctx, GGML_TYPE_F32, 64);
    g_c = ggml_add(g_ctx, g_a, g_b);
    g_a->data = (void *) 0x10000;
    g_b->data = (void *) 0x20000;
    g_c->data = (void *) 0x30000;
    g_graph = ggml_new_graph(g_ctx);
    ggml_build_forward_expand(g_graph, g_c);
}

static void teardown(void) {
    ggmlx_cuda_graphs_free(&g_graphs);
    cr_assert_eq(g_rt.live_execs, 0, "every executable graph is destroyed with the backend");
    ggml_free(g_ctx);
}

TestSuite(cuda_graph_run, .init = setup, .fini = teardown, .timeout = 60);

static enum ggml_status run(struct launches * l) {
    return ggmlx_cuda_graphs_run(&g_graphs, k_stream, g_graph, k_extra, launch, l, "test");
}

Test(cuda_graph_run, warm_up_capture_replay) {
    struct launches l = { 0 };
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 1, "the first run is plain");
    cr_assert_eq(g_rt.begin, 0);

    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.captured, 1, "the second is captured");
    cr_assert_eq(l.plain, 1);
    cr_assert_eq(g_rt.end, 1);
    cr_assert_eq(g_rt.instantiate, 1);
    cr_assert_eq(g_rt.graph_destroy, 1, "the captured graph is released once instantiated");
    cr_assert_eq(g_rt.graph_launch, 1, "and what was captured is launched: the compute runs");

    for (int i = 0; i < 5; i++) {
        cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    }
    cr_assert_eq(l.plain + l.captured, 2, "replays launch no kernel one by one");
    cr_assert_eq(g_rt.graph_launch, 6);
    cr_assert_eq(g_rt.instantiate, 1);
    cr_assert_eq(g_graphs.cache.stats.n_replay, 5);
    cr_assert_eq(g_rt.check_failed, 0);
}

Test(cuda_graph_run, disabled_by_the_variable) {
    ggmlx_cuda_graphs_free(&g_graphs);
    setenv("GGML_CUDA_DISABLE_GRAPHS", "1", 1);
    ggmlx_cuda_graphs_init(&g_graphs, &g_dev);
    unsetenv("GGML_CUDA_DISABLE_GRAPHS");
    struct launches l = { 0 };
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    }
    cr_assert_eq(l.plain, 4);
    cr_assert_eq(g_rt.begin + g_rt.graph_launch, 0);
}

Test(cuda_graph_run, a_change_is_launched_plainly_then_captured) {
    struct launches l = { 0 };
    for (int i = 0; i < 3; i++) {
        run(&l);
    }
    g_b->data = (void *) 0x40000; /* new input pointer: the captured graph would read the old one */
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 2, "the changed compute is plain first");
    cr_assert_eq(g_rt.graph_launch, 2, "and not a replay");
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.captured, 2, "then captured as its own entry");
    g_b->data = (void *) 0x20000;
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(g_rt.last_launched, (void *) (uintptr_t) 0x101, "the first graph again");
}

Test(cuda_graph_run, failed_begin_launches_plainly) {
    g_rt.begin_err = cudaErrorStreamCaptureUnsupported;
    struct launches l = { 0 };
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    }
    cr_assert_eq(l.plain, 4, "every run launched its kernels");
    cr_assert_eq(g_rt.begin, 1, "no second try at the same compute");
    cr_assert_eq(g_graphs.cache.stats.n_failed, 1);
}

Test(cuda_graph_run, launcher_failing_inside_the_capture_only) {
    struct launches l = { .fail_in_capture = true };
    run(&l);
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS, "the plain launches after the capture worked");
    cr_assert_eq(l.captured, 1);
    cr_assert_eq(l.plain, 2);
    cr_assert_eq(g_rt.end, 1, "the capture was ended");
    cr_assert_eq(g_rt.instantiate, 0);
    cr_assert_eq(g_rt.graph_launch, 0);
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 3);
    cr_assert_eq(l.captured, 1, "not captured again");
}

Test(cuda_graph_run, launcher_failing_everywhere_is_an_error) {
    struct launches l = { .fail_always = true };
    cr_assert_eq(run(&l), GGML_STATUS_FAILED);
    cr_assert_eq(run(&l), GGML_STATUS_FAILED, "a real failure is returned, not hidden by the capture");
    cr_assert_eq(l.plain, 2);
    cr_assert_eq(g_rt.capturing, false);
}

Test(cuda_graph_run, failed_end_or_instantiate_launches_plainly) {
    g_rt.end_err = cudaErrorStreamCaptureInvalidated;
    struct launches l = { 0 };
    run(&l);
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 2, "the invalidated capture ran nothing: launched plainly");
    cr_assert_eq(g_rt.graph_destroy, 0, "no graph came back");

    g_rt.end_err         = cudaSuccess;
    g_rt.instantiate_err = cudaErrorInvalidValue;
    g_b->data = (void *) 0x50000; /* another compute */
    run(&l);
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 4);
    cr_assert_eq(g_rt.graph_destroy, 1, "the captured graph is released");
    cr_assert_eq(g_rt.graph_launch, 0);
}

Test(cuda_graph_run, failed_replay_launches_plainly) {
    struct launches l = { 0 };
    run(&l);
    run(&l);
    g_rt.launch_err = cudaErrorInvalidValue;
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 2, "the failed replay is launched plainly");
    cr_assert_eq(g_rt.exec_destroy, 1, "and its graph dropped");
    g_rt.launch_err = cudaSuccess;
    cr_assert_eq(run(&l), GGML_STATUS_SUCCESS);
    cr_assert_eq(l.plain, 3, "plain from then on");
}

/* fill the cache with other computes until the captured one is evicted, then capture a new one */
static void evict_and_recapture(struct launches * l) {
    run(l);
    run(l); /* captured: exec 0x101 */
    for (int i = 1; i <= GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        g_c->data = (void *) (uintptr_t) (0x100000 * (uintptr_t) i);
        run(l); /* the last of these takes the captured compute's entry */
    }
    run(l); /* the same again: captured, over the stale executable graph */
}

Test(cuda_graph_run, evicted_graph_is_updated_in_place) {
    struct launches l = { 0 };
    evict_and_recapture(&l);
    cr_assert_eq(g_rt.update, 1, "the stale graph is updated");
    cr_assert_eq(g_rt.instantiate, 1, "not instantiated anew");
    cr_assert_eq(g_rt.exec_destroy, 0);
    cr_assert_eq(g_rt.last_launched, (void *) (uintptr_t) 0x101);
}

Test(cuda_graph_run, evicted_graph_that_cannot_be_updated_is_replaced) {
    g_rt.update_err = cudaErrorGraphExecUpdateFailure;
    struct launches l = { 0 };
    evict_and_recapture(&l);
    cr_assert_eq(g_rt.update, 1);
    cr_assert_eq(g_rt.instantiate, 2, "instantiated anew");
    cr_assert_eq(g_rt.exec_destroy, 1, "and the stale one destroyed");
    cr_assert_eq(g_rt.last_launched, (void *) (uintptr_t) 0x102);
}

Test(cuda_graph_run, failed_device_keeps_its_graphs) {
    struct launches l = { 0 };
    run(&l);
    run(&l);
    atomic_store(&g_dev.failed, true);
    ggmlx_cuda_graphs_free(&g_graphs);
    cr_assert_eq(g_rt.exec_destroy, 0, "a failed device's context is gone with its graphs");
    g_rt.live_execs = 0;
    ggmlx_cuda_graphs_init(&g_graphs, &g_dev);
}

#else

Test(cuda_graph_run, skipped_without_cuda_headers) {
    cr_skip_test("built without the CUDA headers");
}

#endif
