/*
 * cuda-graph.h -- a CUDA backend's CUDA graphs (docs/architecture.md §7): a compute seen before is captured
 * once into a cudaGraph and replayed with one cudaGraphLaunch from then on. The decision is
 * graph-cache.c's; this file does the capturing and launching. GGML_CUDA_DISABLE_GRAPHS (set
 * to anything, as upstream) turns it off for backends made afterwards.
 */
#ifndef GGMLX_CUDA_GRAPH_H
#define GGMLX_CUDA_GRAPH_H

#include "cuda-impl.h"
#include "graph-cache.h"

struct ggmlx_cuda_graphs {
    struct ggmlx_cuda_device    * d;
    bool                          enabled;
    struct ggmlx_cuda_graph_cache cache;
};

/* enqueues a compute's kernels on the backend's stream; no host sync, event or allocation */
typedef enum ggml_status (*ggmlx_cuda_launch_fn)(void * user);

void ggmlx_cuda_graphs_init(struct ggmlx_cuda_graphs * g, struct ggmlx_cuda_device * d);
/* destroys the executable graphs (the device must be current, or failed) */
void ggmlx_cuda_graphs_free(struct ggmlx_cuda_graphs * g);

/*
 * Enqueue graph's compute on stream: launch(user) plainly, or inside a capture whose graph is
 * then launched, or a replay of an earlier capture. extra: the backend's words that captured
 * kernels depend on (its scratch block). A capture that fails for any reason is dropped and the
 * compute launched plainly, so the result is the same either way; an error is returned only
 * when launching fails.
 */
enum ggml_status ggmlx_cuda_graphs_run(struct ggmlx_cuda_graphs * g, cudaStream_t stream,
                                       const struct ggml_cgraph * graph, const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA],
                                       ggmlx_cuda_launch_fn launch, void * user, const char * func);

/*
 * ggmlx_backend_cuda_graph_stats, found with ggml_backend_reg_get_proc_address on the CUDA
 * registry: the counts of backend's computes by how they ran. false (error recorded) when
 * backend is not a CUDA backend.
 */
bool ggmlx_backend_cuda_graph_stats(ggml_backend_t backend, struct ggmlx_cuda_graph_stats * stats);

#endif /* GGMLX_CUDA_GRAPH_H */
