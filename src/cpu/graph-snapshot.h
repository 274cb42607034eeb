/*
 * graph-snapshot.h -- what a queued computation needs from a graph, taken when it is enqueued
 * (docs/async.md rule 2).
 *
 * A snapshot owns copies of every computing node and of every tensor those nodes read (their
 * sources and the chains of tensors they view), with src[] and view_src pointing at the copies,
 * and the nodes in graph order. Data pointers are kept: the tensor *data* must stay valid until
 * the computation ran, but the graph, its context and the tensor structs may be changed or freed
 * as soon as the snapshot is taken. View nodes are left out (they compute nothing).
 */
#ifndef GGMLX_GRAPH_SNAPSHOT_H
#define GGMLX_GRAPH_SNAPSHOT_H

#include "ggml-impl.h"

struct ggmlx_graph_snapshot;

/* NULL (error recorded) when cgraph is NULL or the host is out of memory */
struct ggmlx_graph_snapshot * ggmlx_graph_snapshot_new(const struct ggml_cgraph * cgraph);
void                          ggmlx_graph_snapshot_free(struct ggmlx_graph_snapshot * snap); /* NULL allowed */

/* the snapshot as a graph the CPU executor can run (a view graph: it cannot be expanded) */
struct ggml_cgraph *          ggmlx_graph_snapshot_graph(struct ggmlx_graph_snapshot * snap);

/*
 * Every tensor copy the snapshot owns (nodes, sources and their view chains), *n of them, so a
 * backend can rewrite data pointers into the addresses its executing thread uses.
 */
struct ggml_tensor *          ggmlx_graph_snapshot_tensors(struct ggmlx_graph_snapshot * snap, int * n);

#endif /* GGMLX_GRAPH_SNAPSHOT_H */
