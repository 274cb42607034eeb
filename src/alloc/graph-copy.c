/*
 * graph-copy.c -- a graph and its data copied onto another backend, and the same graph run on
 * two backends side by side (what backend conformance tests are built on).
 */
#include "ggml-alloc.h"
#include "ggml-backend-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- tensor -> copy, in the order copies must be made --------------------------------------- */

struct copy_slot {
    const struct ggml_tensor * key;
    struct ggml_tensor       * copy;
};

struct copy_set {
    struct copy_slot          * slots; /* open addressing, power-of-two capacity */
    size_t                      cap;
    size_t                      n;
    const struct ggml_tensor ** order; /* every tensor after its view source and sources */
    size_t                      n_order;
};

static size_t slot_of(const struct copy_set * s, const struct ggml_tensor * t) {
    uint64_t x = (uint64_t) (uintptr_t) t;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    size_t i = (size_t) (x >> 17) & (s->cap - 1);
    while (s->slots[i].key != NULL && s->slots[i].key != t) {
        i = (i + 1) & (s->cap - 1);
    }
    return i;
}

static bool set_grow(struct copy_set * s) {
    const size_t cap = s->cap ? 2 * s->cap : 256;
    struct copy_slot * old = s->slots;
    const size_t old_cap = s->cap;
    s->slots = calloc(cap, sizeof *s->slots);
    if (s->slots == NULL) {
        s->slots = old;
        return false;
    }
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].key != NULL) {
            s->slots[slot_of(s, old[i].key)] = old[i];
        }
    }
    free(old);
    return true;
}

/* false when t was there already; *oom on host memory failure */
static bool set_add(struct copy_set * s, const struct ggml_tensor * t, bool * oom) {
    if (2 * (s->n + 1) > s->cap && !set_grow(s)) {
        *oom = true;
        return false;
    }
    const size_t i = slot_of(s, t);
    if (s->slots[i].key == t) {
        return false;
    }
    s->slots[i].key = t;
    s->n++;
    return true;
}

static struct ggml_tensor * copy_of(const struct copy_set * s, const struct ggml_tensor * t) {
    if (t == NULL || s->cap == 0) {
        return NULL;
    }
    const size_t i = slot_of(s, t);
    return s->slots[i].key == t ? s->slots[i].copy : NULL;
}

static void set_free(struct copy_set * s) {
    free(s->slots);
    free(s->order);
    memset(s, 0, sizeof *s);
}

/* the dependencies of t: its view source first, then its sources */
static const struct ggml_tensor * dep(const struct ggml_tensor * t, int k) {
    return k == 0 ? t->view_src : t->src[k - 1];
}

/* Adds root and everything it depends on to the order, dependencies first (no recursion). */
static bool collect(struct copy_set * s, const struct ggml_tensor * root, size_t * order_cap, const char * func) {
    struct frame { const struct ggml_tensor * t; int k; };
    bool oom = false;
    if (!set_add(s, root, &oom)) {
        goto done;
    }
    size_t cap = 64, top = 0;
    struct frame * stack = malloc(cap * sizeof *stack);
    if (stack == NULL) {
        oom = true;
        goto done;
    }
    stack[top++] = (struct frame) { root, 0 };
    while (top > 0 && !oom) {
        struct frame * f = &stack[top - 1];
        if (f->k <= GGML_MAX_SRC) {
            const struct ggml_tensor * d = dep(f->t, f->k++);
            if (d == NULL || !set_add(s, d, &oom)) {
                continue;
            }
            if (top == cap) {
                struct frame * bigger = realloc(stack, 2 * cap * sizeof *stack);
                if (bigger == NULL) {
                    oom = true;
                    break;
                }
                stack = bigger;
                cap *= 2;
            }
            stack[top++] = (struct frame) { d, 0 };
            continue;
        }
        if (s->n_order == *order_cap) {
            const size_t ncap = *order_cap ? 2 * *order_cap : 256;
            const struct ggml_tensor ** order = realloc(s->order, ncap * sizeof *order);
            if (order == NULL) {
                oom = true;
                break;
            }
            s->order   = order;
            *order_cap = ncap;
        }
        s->order[s->n_order++] = f->t;
        top--;
    }
    free(stack);
done:
    if (oom) {
        ggmlx_error(func, "out of host memory while walking the graph");
    }
    return !oom;
}

/* ---- graph copy ---------------------------------------------------------------------------- */

/* an unallocated tensor like src in ctx: same type, shape, strides, op, flags, name */
static struct ggml_tensor * dup_layout(struct ggml_context * ctx, const struct ggml_tensor * src) {
    struct ggml_tensor * t = ggml_new_tensor(ctx, src->type, GGML_MAX_DIMS, src->ne);
    if (t == NULL) {
        return NULL;
    }
    memcpy(t->nb, src->nb, sizeof t->nb);
    t->op    = src->op;
    t->flags = src->flags;
    memcpy(t->op_params, src->op_params, sizeof t->op_params);
    ggml_set_name(t, src->name);
    return t;
}

static bool make_copies(struct copy_set * s, struct ggml_context * ctx_alloc, struct ggml_context * ctx_unalloc,
                        const char * func) {
    for (size_t i = 0; i < s->n_order; i++) {
        const struct ggml_tensor * src = s->order[i];
        if (src->data == NULL || ggmlx_tensor_buffer(src) == NULL) {
            ggmlx_error(func, "tensor '%s' is not allocated in a backend buffer (allocate the graph first)", src->name);
            return false;
        }
        struct ggml_tensor * t = dup_layout(src->view_src ? ctx_unalloc : ctx_alloc, src);
        if (t == NULL) {
            ggmlx_error(func, "cannot make a copy of tensor '%s'", src->name);
            return false;
        }
        if (src->view_src != NULL) {
            t->view_src  = copy_of(s, src->view_src);
            t->view_offs = src->view_offs;
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            t->src[j] = copy_of(s, src->src[j]);
        }
        s->slots[slot_of(s, src)].copy = t;
    }
    return true;
}

/* data of every non-view copied over; views pointed into their (copied) sources */
static bool fill_copies(const struct copy_set * s, const char * func) {
    for (size_t i = 0; i < s->n_order; i++) {
        const struct ggml_tensor * src = s->order[i];
        struct ggml_tensor * t = copy_of(s, src);
        if (t->view_src != NULL) {
            if (ggml_backend_view_init(t) != GGML_STATUS_SUCCESS) {
                return false;
            }
            continue;
        }
        ggmlx_clear_last_error();
        ggml_backend_tensor_copy(src, t);
        if (ggmlx_last_error() != NULL) {
            ggmlx_error(func, "cannot copy the data of tensor '%s'", src->name);
            return false;
        }
    }
    return true;
}

static struct ggml_cgraph * build_graph(const struct copy_set * s, struct ggml_context * ctx, struct ggml_cgraph * graph) {
    int size = graph->size;
    size = size > graph->n_nodes ? size : graph->n_nodes;
    size = size > graph->n_leafs ? size : graph->n_leafs;
    size = size > 0 ? size : 1;
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, (size_t) size, false);
    if (g == NULL) {
        return NULL;
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        g->leafs[i] = copy_of(s, graph->leafs[i]);
        ggmlx_hash_insert(&g->visited, g->leafs[i]);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        g->nodes[i] = copy_of(s, graph->nodes[i]);
        ggmlx_hash_insert(&g->visited, g->nodes[i]);
    }
    g->n_leafs = graph->n_leafs;
    g->n_nodes = graph->n_nodes;
    return g;
}

struct ggml_backend_graph_copy ggml_backend_graph_copy(ggml_backend_t backend, struct ggml_cgraph * graph) {
    struct ggml_backend_graph_copy copy = { NULL, NULL, NULL, NULL };
    struct copy_set s = { 0 };
    if (backend == NULL || graph == NULL) {
        ggmlx_error(__func__, "%s is NULL", backend == NULL ? "backend" : "graph");
        return copy;
    }
    if (ggmlx_graph_is_failed(graph)) {
        ggmlx_error(__func__, "graph is failed (a NULL or failed tensor was added to it)");
        return copy;
    }

    size_t order_cap = 0;
    for (int i = 0; i < graph->n_leafs; i++) {
        if (!collect(&s, graph->leafs[i], &order_cap, __func__)) {
            goto err;
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        if (!collect(&s, graph->nodes[i], &order_cap, __func__)) {
            goto err;
        }
    }

    const size_t graph_size = (size_t) (graph->size > graph->n_nodes ? graph->size : graph->n_nodes) + (size_t) graph->n_leafs + 1;
    struct ggml_init_params params = {
        .mem_size   = ggml_tensor_overhead() * (s.n_order + 1) + ggml_graph_overhead_custom(graph_size, false),
        .mem_buffer = NULL,
        .no_alloc   = true,
    };
    copy.ctx_allocated   = ggml_init(params);
    copy.ctx_unallocated = ggml_init(params);
    if (copy.ctx_allocated == NULL || copy.ctx_unallocated == NULL) {
        ggmlx_error(__func__, "cannot create the contexts for the copy (out of host memory)");
        goto err;
    }
    if (!make_copies(&s, copy.ctx_allocated, copy.ctx_unallocated, __func__)) {
        goto err;
    }
    if (ggml_get_first_tensor(copy.ctx_allocated) != NULL) {
        copy.buffer = ggml_backend_alloc_ctx_tensors(copy.ctx_allocated, backend);
        if (copy.buffer == NULL) {
            ggmlx_error(__func__, "cannot allocate the copy's tensors on backend %s", ggml_backend_name(backend));
            goto err;
        }
    }
    if (!fill_copies(&s, __func__)) {
        goto err;
    }
    copy.graph = build_graph(&s, copy.ctx_allocated, graph);
    if (copy.graph == NULL) {
        goto err;
    }
    set_free(&s);
    ggmlx_ok();
    return copy;

err:
    set_free(&s);
    ggml_backend_buffer_free(copy.buffer);
    ggml_free(copy.ctx_allocated);
    ggml_free(copy.ctx_unallocated);
    return (struct ggml_backend_graph_copy) { NULL, NULL, NULL, NULL };
}

void ggml_backend_graph_copy_free(struct ggml_backend_graph_copy copy) {
    ggml_backend_buffer_free(copy.buffer);
    ggml_free(copy.ctx_allocated);
    ggml_free(copy.ctx_unallocated);
}

/* ---- comparing two backends ---------------------------------------------------------------- */

static bool op_is_view(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

static bool compute_both(ggml_backend_t b1, struct ggml_cgraph * g1, ggml_backend_t b2, struct ggml_cgraph * g2,
                         const char * func) {
    enum ggml_status st = ggml_backend_graph_compute(b1, g1);
    if (st == GGML_STATUS_SUCCESS) {
        st = ggml_backend_graph_compute(b2, g2);
    }
    if (st != GGML_STATUS_SUCCESS) {
        ggmlx_error(func, "computing the graph failed (%s)", ggml_status_to_string(st));
        return false;
    }
    return true;
}

static bool compare_listed(ggml_backend_t b1, ggml_backend_t b2, struct ggml_cgraph * g1, struct ggml_cgraph * g2,
                           ggml_backend_eval_callback callback, void * user_data,
                           struct ggml_tensor const * const * test_nodes, size_t num_test_nodes, const char * func) {
    if (!compute_both(b1, g1, b2, g2, func)) {
        return false;
    }
    bool found = false;
    for (int i = 0; i < g1->n_nodes; i++) {
        for (size_t j = 0; j < num_test_nodes; j++) {
            if (g1->nodes[i] == test_nodes[j]) {
                callback(i, g1->nodes[i], g2->nodes[i], user_data);
                found = true;
            }
        }
    }
    if (!found) {
        ggmlx_error(func, "none of the %zu test nodes is a node of the graph", num_test_nodes);
    }
    return found;
}

static bool compare_each(ggml_backend_t b1, ggml_backend_t b2, struct ggml_cgraph * g1, struct ggml_cgraph * g2,
                         ggml_backend_eval_callback callback, void * user_data, const char * func) {
    /* room for the two one-node graph views made per step (the context is reset every step) */
    struct ggml_init_params params = {
        .mem_size   = 4 * (sizeof(struct ggml_cgraph) + GGMLX_OBJECT_SIZE + GGMLX_CTX_ALIGN),
        .mem_buffer = NULL,
        .no_alloc   = true,
    };
    struct ggml_context * ctx = ggml_init(params);
    if (ctx == NULL) {
        ggmlx_error(func, "out of host memory");
        return false;
    }
    bool ok = true;
    for (int i = 0; i < g1->n_nodes && ok; i++) {
        ggml_reset(ctx);
        struct ggml_cgraph * v1 = ggmlx_graph_view(ctx, g1, i, i + 1);
        struct ggml_cgraph * v2 = ggmlx_graph_view(ctx, g2, i, i + 1);
        if (v1 == NULL || v2 == NULL || !compute_both(b1, v1, b2, v2, func)) {
            ok = false;
            break;
        }
        if (op_is_view(g1->nodes[i]->op)) {
            continue;
        }
        if (!callback(i, g1->nodes[i], g2->nodes[i], user_data)) {
            break;
        }
    }
    ggml_free(ctx);
    return ok;
}

bool ggml_backend_compare_graph_backend(ggml_backend_t backend1, ggml_backend_t backend2, struct ggml_cgraph * graph,
                                        ggml_backend_eval_callback callback, void * user_data,
                                        struct ggml_tensor const * const * test_nodes, size_t num_test_nodes) {
    if (backend1 == NULL || backend2 == NULL || graph == NULL || callback == NULL) {
        ggmlx_error(__func__, "%s is NULL", backend1 == NULL ? "backend1" : backend2 == NULL ? "backend2" :
                                            graph == NULL ? "graph" : "callback");
        return false;
    }
    if (num_test_nodes > 0 && test_nodes == NULL) {
        ggmlx_error(__func__, "test_nodes is NULL but num_test_nodes is %zu", num_test_nodes);
        return false;
    }
    struct ggml_backend_graph_copy copy = ggml_backend_graph_copy(backend2, graph);
    if (copy.graph == NULL) {
        return false;
    }
    const bool ok = num_test_nodes > 0
        ? compare_listed(backend1, backend2, graph, copy.graph, callback, user_data, test_nodes, num_test_nodes, __func__)
        : compare_each(backend1, backend2, graph, copy.graph, callback, user_data, __func__);
    ggml_backend_graph_copy_free(copy);
    if (ok) {
        ggmlx_ok();
    }
    return ok;
}
