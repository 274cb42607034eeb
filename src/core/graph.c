/*
 * graph.c -- compute graphs: building them in dependency order, copying, viewing, printing.
 */
#include "ggml-impl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- hash set of tensor pointers ----------------------------------------------------------- */

size_t ggmlx_hash_size(size_t min_size) {
    /* odd numbers with no small factor are good enough for pointer keys and cheap to find */
    size_t n = min_size < 3 ? 3 : (min_size | 1);
    for (;; n += 2) {
        bool prime = true;
        for (size_t d = 3; d * d <= n && d < 1000; d += 2) {
            if (n % d == 0) {
                prime = false;
                break;
            }
        }
        if (prime) {
            return n;
        }
    }
}

static size_t hash_ptr(const struct ggml_tensor * p) {
    return (size_t) ((uintptr_t) p >> 4);
}

static bool slot_used(const struct ggmlx_hash_set * hs, size_t i) {
    return (hs->used[i / 32] >> (i % 32)) & 1u;
}

size_t ggmlx_hash_find(const struct ggmlx_hash_set * hs, const struct ggml_tensor * key) {
    const size_t h = hash_ptr(key) % hs->size;
    size_t i = h;
    do {
        if (!slot_used(hs, i) || hs->keys[i] == key) {
            return i;
        }
        i = (i + 1) % hs->size;
    } while (i != h);
    return GGMLX_HASH_FULL;
}

bool ggmlx_hash_contains(const struct ggmlx_hash_set * hs, const struct ggml_tensor * key) {
    const size_t i = ggmlx_hash_find(hs, key);
    return i != GGMLX_HASH_FULL && slot_used(hs, i);
}

size_t ggmlx_hash_insert(struct ggmlx_hash_set * hs, struct ggml_tensor * key) {
    const size_t i = ggmlx_hash_find(hs, key);
    if (i != GGMLX_HASH_FULL) {
        hs->used[i / 32] |= 1u << (i % 32);
        hs->keys[i] = key;
    }
    return i;
}

static size_t bitset_words(size_t n) {
    return (n + 31) / 32;
}

/* ---- creation ------------------------------------------------------------------------------ */

uint64_t ggmlx_next_graph_uid(void) {
    static atomic_uint_fast64_t next = 1;
    return (uint64_t) atomic_fetch_add(&next, 1);
}

/* Every node must fit in the hash set, and probing stays short below half load. */
static size_t graph_hash_size(size_t size) {
    return ggmlx_hash_size(size * 2);
}

static size_t graph_nbytes(size_t size, bool grads) {
    const size_t hsize = graph_hash_size(size);
    return sizeof(struct ggml_cgraph) + 2 * size * sizeof(struct ggml_tensor *) /* nodes, leafs */
           + (grads ? 3 : 1) * hsize * sizeof(struct ggml_tensor *) /* keys (, grads, grad_accs) */
           + bitset_words(hsize) * sizeof(uint32_t);
}

/* Node indices are ints, and graph_nbytes of this many cannot wrap. */
#define GRAPH_MAX_SIZE ((size_t) INT32_MAX / 4)

size_t ggml_graph_overhead_custom(size_t size, bool grads) {
    if (size > GRAPH_MAX_SIZE) {
        ggmlx_error(__func__, "graph size %zu is out of range (at most %zu)", size, GRAPH_MAX_SIZE);
        return 0;
    }
    return GGMLX_OBJECT_SIZE + (GGMLX_CTX_ALIGN - 1) + GGML_PAD(graph_nbytes(size, grads), GGML_MEM_ALIGN);
}

size_t ggml_graph_overhead(void) {
    return ggml_graph_overhead_custom(GGML_DEFAULT_GRAPH_SIZE, false);
}

struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, size > 0 && size <= GRAPH_MAX_SIZE, "graph size %zu is out of range (1..%zu)", size,
                  GRAPH_MAX_SIZE);

    struct ggml_object * obj = ggmlx_ctx_new_object(ctx, GGML_OBJECT_TYPE_GRAPH, graph_nbytes(size, grads));
    if (obj == NULL) {
        return NULL;
    }
    char * p = (char *) ctx->mem_buffer + obj->offs;
    struct ggml_cgraph * g = (struct ggml_cgraph *) p;
    const size_t hsize = graph_hash_size(size);
    p += sizeof *g;
    memset(g, 0, sizeof *g);
    g->size  = (int) size;
    g->nodes = (struct ggml_tensor **) p;
    p += size * sizeof(struct ggml_tensor *);
    g->leafs = (struct ggml_tensor **) p;
    p += size * sizeof(struct ggml_tensor *);
    g->visited.size = hsize;
    g->visited.keys = (struct ggml_tensor **) p;
    p += hsize * sizeof(struct ggml_tensor *);
    if (grads) {
        g->grads = (struct ggml_tensor **) p;
        p += hsize * sizeof(struct ggml_tensor *);
        g->grad_accs = (struct ggml_tensor **) p;
        p += hsize * sizeof(struct ggml_tensor *);
        memset(g->grads, 0, 2 * hsize * sizeof(struct ggml_tensor *));
    }
    g->visited.used = (uint32_t *) p;
    memset(g->visited.used, 0, bitset_words(hsize) * sizeof(uint32_t));
    g->uid = ggmlx_next_graph_uid();
    ggmlx_ok();
    return g;
}

struct ggml_cgraph * ggml_new_graph(struct ggml_context * ctx) {
    return ggml_new_graph_custom(ctx, GGML_DEFAULT_GRAPH_SIZE, false);
}

struct ggml_cgraph * ggmlx_graph_view(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int i0, int i1) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, cgraph != NULL, "cgraph is NULL");
    GGMLX_REQUIRE(ctx, 0 <= i0 && i0 <= i1 && i1 <= cgraph->n_nodes, "nodes [%d, %d) are not inside the graph's %d",
                  i0, i1, cgraph->n_nodes);
    struct ggml_object * obj = ggmlx_ctx_new_object(ctx, GGML_OBJECT_TYPE_GRAPH, sizeof(struct ggml_cgraph));
    if (obj == NULL) {
        return NULL;
    }
    struct ggml_cgraph * g = (struct ggml_cgraph *) ((char *) ctx->mem_buffer + obj->offs);
    memset(g, 0, sizeof *g);
    g->size    = i1 - i0;
    g->n_nodes = i1 - i0;
    g->nodes   = cgraph->nodes + i0;
    g->failed  = cgraph->failed;
    g->is_view = true;
    g->uid     = ggmlx_next_graph_uid();
    ggmlx_ok();
    return g;
}

/* ---- building ------------------------------------------------------------------------------ */

static bool graph_usable(const struct ggml_cgraph * g, const char * func) {
    if (g == NULL) {
        ggmlx_error(func, "cgraph is NULL");
        return false;
    }
    if (g->is_view) {
        ggmlx_error(func, "a graph view cannot be changed");
        return false;
    }
    return true;
}

static bool graph_fail(struct ggml_cgraph * g, const char * func, const char * what) {
    g->failed = true;
    ggmlx_error(func, "%s (graph size %d)", what, g->size);
    return false;
}

/* Adds t after everything it depends on. Iterative, so long chains cannot overflow the stack. */
static bool visit(struct ggml_cgraph * g, struct ggml_tensor * root, const char * func) {
    struct frame { struct ggml_tensor * t; int next_src; };
    size_t cap = 64, top = 0;
    struct frame * stack = malloc(cap * sizeof *stack);
    if (stack == NULL) {
        return graph_fail(g, func, "out of host memory while walking the graph");
    }
    bool ok = true;

    if (ggmlx_hash_contains(&g->visited, root)) {
        goto done;
    }
    if (ggmlx_hash_insert(&g->visited, root) == GGMLX_HASH_FULL) {
        ok = graph_fail(g, func, "graph is full");
        goto done;
    }
    stack[top++] = (struct frame) { root, 0 };

    while (top > 0) {
        struct frame * f = &stack[top - 1];
        if (f->next_src < GGML_MAX_SRC) {
            struct ggml_tensor * s = f->t->src[f->next_src++];
            if (s == NULL || ggmlx_hash_contains(&g->visited, s)) {
                continue;
            }
            if (ggmlx_hash_insert(&g->visited, s) == GGMLX_HASH_FULL) {
                ok = graph_fail(g, func, "graph is full");
                goto done;
            }
            if (top == cap) {
                cap *= 2;
                struct frame * bigger = realloc(stack, cap * sizeof *stack);
                if (bigger == NULL) {
                    ok = graph_fail(g, func, "out of host memory while walking the graph");
                    goto done;
                }
                stack = bigger;
            }
            stack[top++] = (struct frame) { s, 0 };
            continue;
        }
        /* every source is placed: place the tensor itself */
        struct ggml_tensor * t = f->t;
        top--;
        if (t->op == GGML_OP_NONE && !(t->flags & GGML_TENSOR_FLAG_PARAM)) {
            if (g->n_leafs >= g->size) {
                ok = graph_fail(g, func, "too many leafs for the graph");
                goto done;
            }
            if (t->name[0] == '\0') {
                ggml_format_name(t, "leaf_%d", g->n_leafs);
            }
            g->leafs[g->n_leafs++] = t;
        } else {
            if (g->n_nodes >= g->size) {
                ok = graph_fail(g, func, "too many nodes for the graph");
                goto done;
            }
            if (t->name[0] == '\0') {
                ggml_format_name(t, "node_%d", g->n_nodes);
            }
            t->flags |= GGML_TENSOR_FLAG_COMPUTE;
            g->nodes[g->n_nodes++] = t;
        }
    }
done:
    free(stack);
    return ok;
}

void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor) {
    if (!graph_usable(cgraph, __func__)) {
        return;
    }
    if (tensor == NULL) {
        /* the NULL of a failed constructor: computing this graph must not look like success */
        graph_fail(cgraph, __func__, "tensor is NULL (did an op constructor fail?); graph marked failed");
        return;
    }
    const int n_before = cgraph->n_nodes + cgraph->n_leafs;
    if (visit(cgraph, tensor, __func__)) {
        ggmlx_ok();
    }
    if (cgraph->n_nodes + cgraph->n_leafs != n_before) {
        cgraph->uid = ggmlx_next_graph_uid();
    }
}

void ggml_graph_add_node(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor) {
    if (!graph_usable(cgraph, __func__)) {
        return;
    }
    if (tensor == NULL) {
        graph_fail(cgraph, __func__, "tensor is NULL; graph marked failed");
        return;
    }
    if (cgraph->n_nodes >= cgraph->size) {
        graph_fail(cgraph, __func__, "graph is full");
        return;
    }
    cgraph->nodes[cgraph->n_nodes++] = tensor;
    ggmlx_hash_insert(&cgraph->visited, tensor);
    cgraph->uid = ggmlx_next_graph_uid();
    ggmlx_ok();
}

void ggml_graph_cpy(struct ggml_cgraph * src, struct ggml_cgraph * dst) {
    if (src == NULL) {
        ggmlx_error(__func__, "src is NULL");
        return;
    }
    if (!graph_usable(dst, __func__)) {
        return;
    }
    if (src == dst) {
        ggmlx_ok(); /* already a copy of itself: clearing first would empty it */
        return;
    }
    if (src->grads != NULL && dst->grads == NULL) {
        ggmlx_error(__func__, "src has gradients and dst has no room for them (ggml_new_graph_custom(..., true))");
        return;
    }
    if (dst->size < src->n_nodes || dst->size < src->n_leafs) {
        ggmlx_error(__func__, "dst (size %d) is smaller than src (%d nodes, %d leafs)", dst->size, src->n_nodes,
                    src->n_leafs);
        return;
    }
    ggml_graph_clear(dst);
    dst->n_nodes = src->n_nodes;
    dst->n_leafs = src->n_leafs;
    for (int i = 0; i < src->n_nodes; i++) {
        dst->nodes[i] = src->nodes[i];
        ggmlx_hash_insert(&dst->visited, src->nodes[i]);
    }
    for (int i = 0; i < src->n_leafs; i++) {
        dst->leafs[i] = src->leafs[i];
        ggmlx_hash_insert(&dst->visited, src->leafs[i]);
    }
    if (src->grads != NULL && dst->grads != NULL) {
        for (int i = 0; i < src->n_nodes; i++) {
            const size_t is = ggmlx_hash_find(&src->visited, src->nodes[i]);
            const size_t id = ggmlx_hash_find(&dst->visited, src->nodes[i]);
            dst->grads[id]     = src->grads[is];
            dst->grad_accs[id] = src->grad_accs[is];
        }
    }
    dst->failed = src->failed;
    dst->uid    = src->uid;
    ggmlx_ok();
}

struct ggml_cgraph * ggml_graph_dup(struct ggml_context * ctx, struct ggml_cgraph * cgraph, bool force_grads) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, cgraph != NULL, "cgraph is NULL");
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, (size_t) cgraph->size, cgraph->grads != NULL || force_grads);
    if (g == NULL) {
        return NULL;
    }
    ggml_graph_cpy(cgraph, g);
    return g;
}

void ggml_graph_clear(struct ggml_cgraph * cgraph) {
    if (!graph_usable(cgraph, __func__)) {
        return;
    }
    cgraph->n_nodes = 0;
    cgraph->n_leafs = 0;
    cgraph->failed  = false;
    memset(cgraph->visited.used, 0, bitset_words(cgraph->visited.size) * sizeof(uint32_t));
    if (cgraph->grads != NULL) { /* a slot's next tensor must not inherit the last one's gradient */
        memset(cgraph->grads, 0, cgraph->visited.size * sizeof(struct ggml_tensor *));
        memset(cgraph->grad_accs, 0, cgraph->visited.size * sizeof(struct ggml_tensor *));
    }
    cgraph->uid = ggmlx_next_graph_uid();
}

/* ---- queries ------------------------------------------------------------------------------- */

int ggml_graph_size(struct ggml_cgraph * cgraph) {
    return cgraph ? cgraph->size : 0;
}

struct ggml_tensor * ggml_graph_node(struct ggml_cgraph * cgraph, int i) {
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return NULL;
    }
    const int j = i < 0 ? cgraph->n_nodes + i : i;
    if (j < 0 || j >= cgraph->n_nodes) {
        ggmlx_error(__func__, "node %d is out of range (graph has %d nodes)", i, cgraph->n_nodes);
        return NULL;
    }
    return cgraph->nodes[j];
}

struct ggml_tensor ** ggml_graph_nodes(struct ggml_cgraph * cgraph) {
    return cgraph ? cgraph->nodes : NULL;
}

int ggml_graph_n_nodes(struct ggml_cgraph * cgraph) {
    return cgraph ? cgraph->n_nodes : 0;
}

struct ggml_tensor * ggml_graph_get_tensor(const struct ggml_cgraph * cgraph, const char * name) {
    if (cgraph == NULL || name == NULL) {
        ggmlx_error(__func__, "cgraph or name is NULL");
        return NULL;
    }
    for (int i = 0; i < cgraph->n_leafs; i++) {
        if (strcmp(cgraph->leafs[i]->name, name) == 0) {
            return cgraph->leafs[i];
        }
    }
    for (int i = 0; i < cgraph->n_nodes; i++) {
        if (strcmp(cgraph->nodes[i]->name, name) == 0) {
            return cgraph->nodes[i];
        }
    }
    return NULL;
}

static struct ggml_tensor * grad_slot(const struct ggml_cgraph * g, struct ggml_tensor * const * arr,
                                      const struct ggml_tensor * node) {
    if (g == NULL || node == NULL || arr == NULL) {
        return NULL;
    }
    const size_t i = ggmlx_hash_find(&g->visited, node);
    return i != GGMLX_HASH_FULL && slot_used(&g->visited, i) ? arr[i] : NULL;
}

struct ggml_tensor * ggml_graph_get_grad(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node) {
    return grad_slot(cgraph, cgraph ? cgraph->grads : NULL, node);
}

struct ggml_tensor * ggml_graph_get_grad_acc(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node) {
    return grad_slot(cgraph, cgraph ? cgraph->grad_accs : NULL, node);
}

bool ggmlx_graph_is_failed(const struct ggml_cgraph * cgraph) {
    return cgraph == NULL || cgraph->failed;
}

uint64_t ggmlx_graph_uid(const struct ggml_cgraph * cgraph) {
    return cgraph ? cgraph->uid : 0;
}

/* ---- printing ------------------------------------------------------------------------------ */

void ggml_graph_print(const struct ggml_cgraph * cgraph) {
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return;
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, "=== GRAPH ===\n");
    ggmlx_log(GGML_LOG_LEVEL_INFO, "n_nodes = %d\n", cgraph->n_nodes);
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * t = cgraph->nodes[i];
        ggmlx_log(GGML_LOG_LEVEL_INFO, " - %3d: [ %5lld, %5lld, %5lld, %5lld] %16s %s\n", i, (long long) t->ne[0],
                  (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3], ggml_op_desc(t), t->name);
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, "n_leafs = %d\n", cgraph->n_leafs);
    for (int i = 0; i < cgraph->n_leafs; i++) {
        const struct ggml_tensor * t = cgraph->leafs[i];
        ggmlx_log(GGML_LOG_LEVEL_INFO, " - %3d: [ %5lld, %5lld] %8s %16s\n", i, (long long) t->ne[0],
                  (long long) t->ne[1], ggml_op_name(t->op), t->name);
    }
    ggmlx_log(GGML_LOG_LEVEL_INFO, "========================================\n");
}

static int index_of(const struct ggml_cgraph * g, const struct ggml_tensor * t, bool * is_leaf) {
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i] == t) {
            *is_leaf = false;
            return i;
        }
    }
    for (int i = 0; i < g->n_leafs; i++) {
        if (g->leafs[i] == t) {
            *is_leaf = true;
            return i;
        }
    }
    return -1;
}

void ggml_graph_dump_dot(const struct ggml_cgraph * gb, const struct ggml_cgraph * cgraph, const char * filename) {
    (void) gb; /* the backward graph upstream colours gradients with; ggmlx has none */
    if (cgraph == NULL || filename == NULL) {
        ggmlx_error(__func__, "cgraph or filename is NULL");
        return;
    }
    FILE * fp = fopen(filename, "w");
    if (fp == NULL) {
        ggmlx_error(__func__, "cannot open '%s' for writing", filename);
        return;
    }
    fprintf(fp, "digraph G {\n  newrank = true;\n  rankdir = TB;\n");
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * t = cgraph->nodes[i];
        fprintf(fp, "  \"n%d\" [shape = record; style = filled; fillcolor = %s; label = \"%s|%s|[%lld, %lld, %lld, %lld]\"];\n",
                i, (t->flags & GGML_TENSOR_FLAG_OUTPUT) ? "lightpink" : "white", t->name, ggml_op_desc(t),
                (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3]);
    }
    for (int i = 0; i < cgraph->n_leafs; i++) {
        const struct ggml_tensor * t = cgraph->leafs[i];
        fprintf(fp, "  \"l%d\" [shape = record; style = filled; fillcolor = %s; label = \"%s|%s|[%lld, %lld]\"];\n", i,
                (t->flags & GGML_TENSOR_FLAG_INPUT) ? "lightblue" : "lightgrey", t->name, ggml_type_name(t->type),
                (long long) t->ne[0], (long long) t->ne[1]);
    }
    for (int i = 0; i < cgraph->n_nodes; i++) {
        const struct ggml_tensor * t = cgraph->nodes[i];
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j] == NULL || t->src[j] == t) {
                continue;
            }
            bool leaf = false;
            const int k = index_of(cgraph, t->src[j], &leaf);
            if (k >= 0) {
                fprintf(fp, "  \"%c%d\" -> \"n%d\" [label = \"src%d\"];\n", leaf ? 'l' : 'n', k, i, j);
            }
        }
    }
    fprintf(fp, "}\n");
    fclose(fp);
    ggmlx_log(GGML_LOG_LEVEL_INFO, "%s: dot -Tpng %s -o %s.png && open %s.png\n", __func__, filename, filename, filename);
}
