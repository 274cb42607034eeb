/*
 * gallocr-plan.c -- deciding where every tensor of a graph lives.
 *
 * The graph is walked in execution order against the offset allocators: leafs and inputs get
 * their memory before any node runs (so no node can overwrite them before they are read), each
 * node gets memory just before it runs, and a tensor's memory goes back to the free list once
 * its last consumer (and the last consumer of every view of it) has run. An element-wise node may
 * take over the memory of a source it is the last consumer of. Nothing is allocated here: the
 * result is a plan, and the allocators' chunk sizes say how large the buffers must be.
 */
#include "gallocr-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tensor table ---------------------------------------------------------------------- */

static size_t hash_ptr(const struct ggml_tensor * t) {
    uint64_t x = (uint64_t) (uintptr_t) t;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return (size_t) x;
}

/* room for n tensors at half load, all slots empty */
static bool map_prepare(struct ggmlx_sim_map * m, size_t n) {
    size_t cap = 64;
    while (cap < 2 * n) {
        cap *= 2;
    }
    if (cap > m->cap) {
        struct ggmlx_sim_entry * slots = malloc(cap * sizeof *slots);
        if (slots == NULL) {
            return false;
        }
        free(m->slots);
        m->slots = slots;
        m->cap   = cap;
    }
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    return true;
}

static struct ggmlx_sim_entry * map_find(const struct ggmlx_sim_map * m, const struct ggml_tensor * t) {
    const size_t mask = m->cap - 1;
    for (size_t i = hash_ptr(t) & mask, n = 0; n < m->cap; i = (i + 1) & mask, n++) {
        if (m->slots[i].key == t) {
            return &m->slots[i];
        }
        if (m->slots[i].key == NULL) {
            return NULL;
        }
    }
    return NULL;
}

/* the entry of t, added when missing; NULL only when the table is full */
static struct ggmlx_sim_entry * map_get(struct ggmlx_sim_map * m, const struct ggml_tensor * t) {
    const size_t mask = m->cap - 1;
    for (size_t i = hash_ptr(t) & mask, n = 0; n < m->cap; i = (i + 1) & mask, n++) {
        struct ggmlx_sim_entry * e = &m->slots[i];
        if (e->key == t) {
            return e;
        }
        if (e->key == NULL) {
            e->key       = t;
            e->buffer_id = -1;
            e->addr      = (struct ggmlx_addr) { -1, 0 };
            return e;
        }
    }
    return NULL;
}

/* ---- the walk ------------------------------------------------------------------------------ */

struct sim {
    struct ggml_gallocr  * g;
    struct ggmlx_sim_map * map;
    struct ggmlx_sim_entry dummy; /* stands in when the table is full (failed is set) */
    bool                   failed;
    const char           * func;
};

static struct ggmlx_sim_entry * ent(struct sim * s, const struct ggml_tensor * t) {
    struct ggmlx_sim_entry * e = map_get(s->map, t);
    if (e == NULL) {
        s->failed = true;
        memset(&s->dummy, 0, sizeof s->dummy);
        return &s->dummy;
    }
    return e;
}

/* ops whose kernels read each element before writing the same element of the result */
static bool op_can_inplace(enum ggml_op op) {
    switch (op) {
    case GGML_OP_FILL:
    case GGML_OP_SCALE:
    case GGML_OP_DIAG_MASK_ZERO:
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_ADD:
    case GGML_OP_ADD_ID:
    case GGML_OP_ADD1:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_UNARY:
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK:
    case GGML_OP_SILU_BACK:
    case GGML_OP_RMS_NORM:
    case GGML_OP_RMS_NORM_BACK:
    case GGML_OP_SOFT_MAX:
    case GGML_OP_SOFT_MAX_BACK:
        return true;
    default:
        return false;
    }
}

static bool same_layout(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    if (a->type != b->type) {
        return false;
    }
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (a->ne[i] != b->ne[i] || a->nb[i] != b->nb[i]) {
            return false;
        }
    }
    return true;
}

static bool is_external(const struct ggml_tensor * t) {
    return t->data != NULL || t->view_src != NULL;
}

/* the parent whose memory node may take over, or NULL */
static struct ggmlx_sim_entry * inplace_parent(struct sim * s, const struct ggml_tensor * node, int buffer_id, size_t size) {
    if (!op_can_inplace(node->op)) {
        return NULL;
    }
    const int owner = s->g->owner[buffer_id];
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const struct ggml_tensor * p = node->src[j];
        if (p == NULL || is_external(p)) {
            continue;
        }
        /* leafs and inputs are set by the caller and may be read again; outputs are kept */
        if (p->op == GGML_OP_NONE || (p->flags & (GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT))) {
            continue;
        }
        struct ggmlx_sim_entry * pe = ent(s, p);
        if (!pe->own || pe->n_children != 1 || pe->n_views != 0 || s->g->owner[pe->buffer_id] != owner) {
            continue;
        }
        if (!same_layout(node, p) || pe->size < size) {
            continue;
        }
        return pe;
    }
    return NULL;
}

static void place(struct sim * s, const struct ggml_tensor * t, int buffer_id) {
    if (is_external(t)) {
        return;
    }
    struct ggmlx_sim_entry * e = ent(s, t);
    if (e->placed) {
        return;
    }
    const ggml_backend_buffer_type_t buft = s->g->bufts[buffer_id];
    struct ggmlx_dyn_tallocr * ta = &s->g->tallocs[s->g->owner[buffer_id]];
    const size_t size = ggmlx_dyn_tallocr_round(ta, ggml_backend_buft_get_alloc_size(buft, t));

    e->placed    = true;
    e->own       = true;
    e->buffer_id = buffer_id;

    struct ggmlx_sim_entry * pe = inplace_parent(s, t, buffer_id, size);
    if (pe != NULL) {
        e->addr  = pe->addr;
        e->size  = pe->size;
        pe->own  = false; /* the memory is the child's now: never freed on the parent's account */
        return;
    }
    e->addr = ggmlx_dyn_tallocr_alloc(ta, size);
    e->size = size;
    if (e->addr.chunk < 0) {
        e->own = false;
        if (!s->failed) {
            ggmlx_error(s->func, "cannot plan %zu bytes for tensor '%s' in buffer %d (%s): out of chunks or host memory",
                        size, t->name, buffer_id, ggml_backend_buft_name(buft));
        }
        s->failed = true;
    }
}

static void release(struct sim * s, const struct ggml_tensor * t) {
    if (t->flags & GGML_TENSOR_FLAG_OUTPUT) {
        return; /* outputs are read after the graph ran */
    }
    struct ggmlx_sim_entry * e = ent(s, t);
    if (!e->own) {
        return;
    }
    e->own = false;
    if (!ggmlx_dyn_tallocr_free(&s->g->tallocs[s->g->owner[e->buffer_id]], e->addr, e->size)) {
        ggmlx_error(s->func, "out of host memory while planning");
        s->failed = true;
    }
}

/* node has run: sources it was the last consumer of (directly or through a view) are released */
static void consumed(struct sim * s, const struct ggml_tensor * node) {
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const struct ggml_tensor * p = node->src[j];
        if (p == NULL) {
            continue;
        }
        struct ggmlx_sim_entry * pe = ent(s, p);
        pe->n_children--;
        if (pe->n_children != 0 || pe->n_views != 0) {
            continue;
        }
        if (p->view_src == NULL) {
            release(s, p);
            continue;
        }
        /* an output view is read after the graph ran: it holds what it views to the end */
        if (!pe->view_counted || (p->flags & GGML_TENSOR_FLAG_OUTPUT)) {
            continue;
        }
        pe->view_counted = false;
        struct ggmlx_sim_entry * ve = ent(s, p->view_src);
        ve->n_views--;
        if (ve->n_views == 0 && ve->n_children == 0) {
            release(s, p->view_src);
        }
    }
}

static int id_at(const int * ids, int i) {
    return ids ? ids[i] : 0;
}

static bool ids_valid(const struct ggml_gallocr * g, const int * ids, int n, const char * what, const char * func) {
    for (int i = 0; ids != NULL && i < n; i++) {
        if (ids[i] < 0 || ids[i] >= g->n_bufs) {
            ggmlx_error(func, "%s_buffer_ids[%d] = %d is not a buffer of this allocator (0..%d)", what, i, ids[i],
                        g->n_bufs - 1);
            return false;
        }
    }
    return true;
}

/* an upper bound on the tensors the walk touches, to size the table once */
static size_t count_tensors(const struct ggml_cgraph * graph) {
    size_t n = 0;
    for (int i = 0; i < graph->n_leafs; i++) {
        n += 1 + (graph->leafs[i]->view_src != NULL);
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor * t = graph->nodes[i];
        n += 1 + (t->view_src != NULL);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j] != NULL) {
                n += 1 + (t->src[j]->view_src != NULL);
            }
        }
    }
    return n;
}

static void walk(struct sim * s, struct ggml_cgraph * graph, const int * node_ids, const int * leaf_ids) {
    for (int i = 0; i < graph->n_leafs; i++) {
        place(s, graph->leafs[i], id_at(leaf_ids, i));
    }
    /* count consumers and views; inputs get their memory before anything runs */
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        /* NONE nodes only carry dependencies (the scheduler adds them): not real views */
        if (node->view_src != NULL && node->op != GGML_OP_NONE) {
            struct ggmlx_sim_entry * e = ent(s, node);
            if (!e->view_counted) {
                e->view_counted = true;
                ent(s, node->view_src)->n_views++;
            }
        }
        if (node->flags & GGML_TENSOR_FLAG_INPUT) {
            place(s, node, id_at(node_ids, i));
        }
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            struct ggml_tensor * src = node->src[j];
            if (src == NULL) {
                continue;
            }
            ent(s, src)->n_children++;
            if (src->flags & GGML_TENSOR_FLAG_INPUT) {
                place(s, src, id_at(node_ids, i));
            }
        }
    }
    for (int i = 0; i < graph->n_nodes && !s->failed; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        const int id = id_at(node_ids, i);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL) {
                place(s, node->src[j], id);
            }
        }
        place(s, node, id);
        consumed(s, node);
    }
}

static struct ggmlx_tensor_plan plan_of(struct sim * s, const struct ggml_tensor * t) {
    struct ggmlx_tensor_plan p = { -1, { -1, 0 }, 0 };
    if (t == NULL || is_external(t)) {
        return p;
    }
    const struct ggmlx_sim_entry * e = map_find(s->map, t);
    if (e != NULL && e->placed) {
        p.buffer_id = e->buffer_id;
        p.addr      = e->addr;
        p.size_max  = e->size;
    }
    return p;
}

bool ggmlx_gallocr_plan(struct ggml_gallocr * g, struct ggml_cgraph * graph, const int * node_ids,
                        const int * leaf_ids, struct ggmlx_gplan * out, const char * func) {
    memset(out, 0, sizeof *out);
    if (!ids_valid(g, node_ids, graph->n_nodes, "node", func) || !ids_valid(g, leaf_ids, graph->n_leafs, "leaf", func)) {
        return false;
    }
    if (!map_prepare(&g->map, count_tensors(graph))) {
        goto err_oom;
    }
    out->nodes = calloc(graph->n_nodes ? (size_t) graph->n_nodes : 1, sizeof *out->nodes);
    out->leafs = calloc(graph->n_leafs ? (size_t) graph->n_leafs : 1, sizeof *out->leafs);
    if (out->nodes == NULL || out->leafs == NULL) {
        goto err_oom;
    }
    for (int i = 0; i < g->n_bufs; i++) {
        if (g->owner[i] == i) {
            ggmlx_dyn_tallocr_reset(&g->tallocs[i]);
        }
    }

    struct sim s = { .g = g, .map = &g->map, .func = func };
    walk(&s, graph, node_ids, leaf_ids);
    if (s.failed) {
        goto err; /* place() or release() said why */
    }

    out->n_nodes = graph->n_nodes;
    out->n_leafs = graph->n_leafs;
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor * node = graph->nodes[i];
        out->nodes[i].dst = plan_of(&s, node);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            out->nodes[i].src[j] = plan_of(&s, node->src[j]);
        }
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        out->leafs[i] = plan_of(&s, graph->leafs[i]);
    }
    if (!ggmlx_gallocr_fingerprint(g, graph, &out->fingerprint)) {
        goto err_oom;
    }
    return true;

err_oom:
    ggmlx_error(func, "out of host memory while planning a graph of %d nodes", graph->n_nodes);
err:
    ggmlx_gplan_free(out);
    return false;
}

void ggmlx_gplan_free(struct ggmlx_gplan * plan) {
    free(plan->nodes);
    free(plan->leafs);
    memset(plan, 0, sizeof *plan);
}

/* ---- recognising a graph ------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    return (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

/* position of t in the graph (leaf or node), or 1 when it is not part of it */
static uint64_t code_of(const struct ggmlx_ptr_map * m, const struct ggml_tensor * t) {
    if (t == NULL) {
        return 0;
    }
    const int32_t v = ggmlx_ptr_map_find(m, t);
    return v >= 0 ? (uint64_t) v : 1;
}

uint32_t ggmlx_gallocr_inplace_bits(const struct ggml_tensor * t) {
    uint32_t same = 0;
    if (op_can_inplace(t->op)) {
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j] != NULL && same_layout(t, t->src[j])) {
                same |= 1u << j;
            }
        }
    }
    return same;
}

bool ggmlx_gallocr_in_fingerprint(const struct ggml_gallocr * g, const struct ggml_tensor * t) {
    return code_of(&g->fmap, t) != 1;
}

bool ggmlx_gallocr_fingerprint(struct ggml_gallocr * g, struct ggml_cgraph * graph, uint64_t * out) {
    if (g->fp_override != 0) {
        *out = g->fp_override;
        return true;
    }
    const int32_t keep = GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT;
    struct ggmlx_ptr_map * m = &g->fmap;
    if (!ggmlx_ptr_map_reset(m, (size_t) graph->n_nodes + (size_t) graph->n_leafs)) {
        return false;
    }
    uint64_t h = mix(mix(0xcbf29ce484222325ull, (uint64_t) graph->n_nodes), (uint64_t) graph->n_leafs);
    for (int i = 0; i < graph->n_leafs; i++) {
        ggmlx_ptr_map_put(m, graph->leafs[i], 2 * i + 2);
        h = mix(h, (uint64_t) (graph->leafs[i]->flags & keep));
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor * t = graph->nodes[i];
        h = mix(h, (uint64_t) t->op);
        h = mix(h, (uint64_t) (t->flags & keep));
        h = mix(h, code_of(m, t->view_src));
        uint64_t same = 0; /* which sources an in-place op could share memory with */
        const bool inplace = op_can_inplace(t->op);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (t->src[j] == NULL) {
                continue;
            }
            h = mix(h, code_of(m, t->src[j]) * GGML_MAX_SRC + (uint64_t) j);
            if (inplace && same_layout(t, t->src[j])) {
                same |= 1u << j;
            }
        }
        h = mix(h, same);
        ggmlx_ptr_map_put(m, t, 2 * i + 3);
    }
    *out = h;
    return true;
}
