/*
 * cuda-graph.c -- capturing a compute into a CUDA graph and replaying it (cuda-graph.h).
 *
 * The capture runs in cudaStreamCaptureModeThreadLocal: a synchronizing or allocating call made
 * by this thread during the capture fails the capture instead of happening silently, which is
 * how the promise "no host sync, event or allocation inside a capture" is enforced; other
 * threads (other backends) are not restricted. Every failure on the way (begin, a launcher,
 * end, instantiate) drops the capture and launches the compute plainly, and that signature is
 * not captured again while it stays in the cache.
 */
#include "cuda-graph.h"

#include <stdint.h>
#include <stdlib.h>

static void destroy_exec(void * exec, void * user) {
    struct ggmlx_cuda_graphs * g = user;
    /* a failed device's context is gone, and its graphs with it */
    if (!atomic_load(&g->d->failed)) {
        ggmlx_cuda_check(g->d, cudaGraphExecDestroy((cudaGraphExec_t) exec), "ggml_backend_free",
                         "cudaGraphExecDestroy");
    }
}

void ggmlx_cuda_graphs_init(struct ggmlx_cuda_graphs * g, struct ggmlx_cuda_device * d) {
    g->d       = d;
    g->enabled = !ggmlx_cuda_graphs_disabled(getenv("GGML_CUDA_DISABLE_GRAPHS"));
    ggmlx_cuda_graph_cache_init(&g->cache, destroy_exec, g);
}

void ggmlx_cuda_graphs_free(struct ggmlx_cuda_graphs * g) {
    ggmlx_cuda_graph_cache_free(&g->cache);
}

/* the capture or replay of e did not work: a debug note, and plain launches for it from now */
static enum ggml_status fall_back(struct ggmlx_cuda_graphs * g, struct ggmlx_cuda_graph_entry * e, cudaError_t err,
                                  const char * what, ggmlx_cuda_launch_fn launch, void * user, const char * func) {
    (void) cudaGetLastError(); /* the capture's error is not the compute's */
    ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: %s: %s: %s; launching without a CUDA graph\n", func, g->d->name, what,
              cudaGetErrorName(err));
    ggmlx_cuda_graph_cache_failed(&g->cache, e);
    return launch(user);
}

/*
 * A launch that fails starts nothing of the graph, so the same work launched plainly gives the
 * same result; when the device itself is broken, the plain launches report it.
 */
static enum ggml_status launch_exec(struct ggmlx_cuda_graphs * g, struct ggmlx_cuda_graph_entry * e,
                                    cudaStream_t stream, ggmlx_cuda_launch_fn launch, void * user, const char * func) {
    const cudaError_t err = cudaGraphLaunch((cudaGraphExec_t) e->exec, stream);
    return err == cudaSuccess ? GGML_STATUS_SUCCESS : fall_back(g, e, err, "cudaGraphLaunch", launch, user, func);
}

static enum ggml_status capture(struct ggmlx_cuda_graphs * g, struct ggmlx_cuda_graph_entry * e, cudaStream_t stream,
                                ggmlx_cuda_launch_fn launch, void * user, const char * func) {
    cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess) {
        return fall_back(g, e, err, "cudaStreamBeginCapture", launch, user, func);
    }
    const enum ggml_status st = launch(user);
    cudaGraph_t graph = NULL;
    err = cudaStreamEndCapture(stream, &graph);
    if (st != GGML_STATUS_SUCCESS || err != cudaSuccess || graph == NULL) {
        if (graph != NULL) {
            ggmlx_cuda_check(g->d, cudaGraphDestroy(graph), func, "cudaGraphDestroy");
        }
        /* a launcher failing inside a capture may fail only there: the plain run says for sure */
        return fall_back(g, e, err != cudaSuccess ? err : cudaErrorStreamCaptureInvalidated, "stream capture", launch,
                         user, func);
    }
    /* an executable graph of an earlier signature is updated in place when the topology allows */
    cudaGraphExec_t exec = (cudaGraphExec_t) e->exec;
    if (exec != NULL) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(exec, graph, &info) != cudaSuccess) {
            (void) cudaGetLastError(); /* expected when the graphs differ in shape: instantiate anew */
            exec = NULL;
        }
    }
    if (exec == NULL) {
        err = cudaGraphInstantiateWithFlags(&exec, graph, 0);
        if (err != cudaSuccess) {
            ggmlx_cuda_check(g->d, cudaGraphDestroy(graph), func, "cudaGraphDestroy");
            return fall_back(g, e, err, "cudaGraphInstantiate", launch, user, func);
        }
    }
    ggmlx_cuda_check(g->d, cudaGraphDestroy(graph), func, "cudaGraphDestroy");
    ggmlx_cuda_graph_cache_captured(&g->cache, e, exec);
    return launch_exec(g, e, stream, launch, user, func);
}

enum ggml_status ggmlx_cuda_graphs_run(struct ggmlx_cuda_graphs * g, cudaStream_t stream,
                                       const struct ggml_cgraph * graph, const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA],
                                       ggmlx_cuda_launch_fn launch, void * user, const char * func) {
    if (!g->enabled) {
        return launch(user);
    }
    struct ggmlx_cuda_graph_entry * e = NULL;
    switch (ggmlx_cuda_graph_cache_lookup(&g->cache, graph, extra, &e)) {
    case GGMLX_CUDA_GRAPH_CAPTURE:
        return capture(g, e, stream, launch, user, func);
    case GGMLX_CUDA_GRAPH_REPLAY:
        return launch_exec(g, e, stream, launch, user, func);
    case GGMLX_CUDA_GRAPH_PLAIN:
    default:
        return launch(user);
    }
}
