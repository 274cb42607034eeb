/*
 * graph-snapshot.c -- copying a graph's execution list at enqueue time.
 *
 * Two passes: collect the distinct tensors reachable from the computing nodes (a node, its
 * sources, and whatever each of those views, transitively) in a pointer map, then copy them
 * all into one allocation and rewire their pointers through the map. A pointer to a tensor
 * outside the snapshot (the source of a source) becomes NULL: no kernel reads that far, and a
 * dangling pointer into a freed context is worse than none.
 */
#include "graph-snapshot.h"

#include <stdalign.h>
#include <stdlib.h>

struct ggmlx_graph_snapshot {
    struct ggml_cgraph    graph;
    int                   n_tensors;
    struct ggml_tensor  * tensors; /* copies */
    struct ggml_tensor ** nodes;
};

/* ---- pointer map: original tensor -> index of its copy ------------------------------------- */

struct ptr_map {
    const struct ggml_tensor ** keys;   /* cap slots, NULL = free */
    int                        * vals;
    size_t                       cap;   /* a power of two, 2^bits */
    int                          bits;
    const struct ggml_tensor ** order;  /* keys in insertion order */
    int                          n;
    int                          order_cap;
};

/*
 * Fibonacci hashing: the product's high bits. Tensors sit at a fixed stride in a context, so
 * the low bits of their addresses (and of any product of them) repeat and would cluster.
 */
static size_t slot_of(const struct ptr_map * m, const struct ggml_tensor * t) {
    size_t i = (size_t) (((uint64_t) (uintptr_t) t * 0x9e3779b97f4a7c15ull) >> (64 - m->bits));
    while (m->keys[i] != NULL && m->keys[i] != t) {
        i = (i + 1) & (m->cap - 1);
    }
    return i;
}

static bool map_alloc(struct ptr_map * m, int bits) {
    const size_t cap = (size_t) 1 << bits;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = malloc(cap * sizeof *m->vals);
    m->cap  = cap;
    m->bits = bits;
    return m->keys != NULL && m->vals != NULL;
}

static bool map_grow(struct ptr_map * m) {
    struct ptr_map old = *m;
    if (!map_alloc(m, old.bits + 1)) {
        free(m->keys);
        free(m->vals);
        *m = old;
        return false;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (old.keys[i] != NULL) {
            const size_t s = slot_of(m, old.keys[i]);
            m->keys[s] = old.keys[i];
            m->vals[s] = old.vals[i];
        }
    }
    free(old.keys);
    free(old.vals);
    return true;
}

/* adds t (not NULL) unless present; false when out of memory */
static bool map_add(struct ptr_map * m, const struct ggml_tensor * t) {
    size_t s = slot_of(m, t);
    if (m->keys[s] == t) {
        return true;
    }
    if ((size_t) (m->n + 1) * 2 > m->cap) {
        if (!map_grow(m)) {
            return false;
        }
        s = slot_of(m, t);
    }
    if (m->n == m->order_cap) {
        const int cap = m->order_cap ? m->order_cap * 2 : 64;
        const struct ggml_tensor ** order = realloc(m->order, (size_t) cap * sizeof *order);
        if (order == NULL) {
            return false;
        }
        m->order     = order;
        m->order_cap = cap;
    }
    m->keys[s]        = t;
    m->vals[s]        = m->n;
    m->order[m->n++]  = t;
    return true;
}

static int map_get(const struct ptr_map * m, const struct ggml_tensor * t) {
    if (t == NULL) {
        return -1;
    }
    const size_t s = slot_of(m, t);
    return m->keys[s] == t ? m->vals[s] : -1;
}

static void map_free(struct ptr_map * m) {
    free(m->keys);
    free(m->vals);
    free(m->order);
}

/* t and everything it views */
static bool add_with_views(struct ptr_map * m, const struct ggml_tensor * t) {
    for (; t != NULL; t = t->view_src) {
        if (map_get(m, t) >= 0) {
            return true; /* its view chain is already in */
        }
        if (!map_add(m, t)) {
            return false;
        }
    }
    return true;
}

/* ---- snapshot ------------------------------------------------------------------------------ */

static size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

struct ggmlx_graph_snapshot * ggmlx_graph_snapshot_new(const struct ggml_cgraph * cgraph) {
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return NULL;
    }
    struct ptr_map m = { 0 };
    struct ggmlx_graph_snapshot * snap = NULL;
    int bits = 8; /* room for every node and two sources each at half load, to start with */
    while (bits < 30 && ((size_t) 1 << bits) < (size_t) cgraph->n_nodes * 6) {
        bits++;
    }
    if (!map_alloc(&m, bits)) {
        goto err_oom;
    }

    int n_nodes = 0;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * node = cgraph->nodes[i];
        if (node == NULL || ggmlx_op_is_view(node->op)) {
            continue;
        }
        n_nodes++;
        if (!add_with_views(&m, node)) {
            goto err_oom;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL && !add_with_views(&m, node->src[j])) {
                goto err_oom;
            }
        }
    }

    const size_t off_nodes   = align_up(sizeof *snap, alignof(struct ggml_tensor *));
    const size_t off_tensors = align_up(off_nodes + (size_t) n_nodes * sizeof(struct ggml_tensor *),
                                        alignof(struct ggml_tensor));
    const size_t total       = off_tensors + (size_t) m.n * sizeof(struct ggml_tensor);
    char * mem = malloc(total);
    if (mem == NULL) {
        goto err_oom;
    }
    snap = (struct ggmlx_graph_snapshot *) mem;
    memset(snap, 0, sizeof *snap);
    snap->n_tensors = m.n;
    snap->nodes     = (struct ggml_tensor **) (mem + off_nodes);
    snap->tensors   = (struct ggml_tensor *) (mem + off_tensors);

    for (int k = 0; k < m.n; k++) {
        struct ggml_tensor * c = &snap->tensors[k];
        *c = *m.order[k];
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const int idx = map_get(&m, c->src[j]);
            c->src[j] = idx >= 0 ? &snap->tensors[idx] : NULL;
        }
        const int v = map_get(&m, c->view_src);
        c->view_src = v >= 0 ? &snap->tensors[v] : NULL;
    }
    int k = 0;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * node = cgraph->nodes[i];
        if (node != NULL && !ggmlx_op_is_view(node->op)) {
            snap->nodes[k++] = &snap->tensors[map_get(&m, node)];
        }
    }

    snap->graph.size    = n_nodes;
    snap->graph.n_nodes = n_nodes;
    snap->graph.nodes   = snap->nodes;
    snap->graph.is_view = true;
    snap->graph.uid     = cgraph->uid;
    map_free(&m);
    return snap;

err_oom:
    map_free(&m);
    ggmlx_error(__func__, "out of host memory");
    return NULL;
}

void ggmlx_graph_snapshot_free(struct ggmlx_graph_snapshot * snap) {
    free(snap);
}

struct ggml_cgraph * ggmlx_graph_snapshot_graph(struct ggmlx_graph_snapshot * snap) {
    return snap ? &snap->graph : NULL;
}

struct ggml_tensor * ggmlx_graph_snapshot_tensors(struct ggmlx_graph_snapshot * snap, int * n) {
    *n = snap ? snap->n_tensors : 0;
    return snap ? snap->tensors : NULL;
}
