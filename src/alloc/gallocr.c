/*
 * gallocr.c -- the graph allocator: buffers sized by a plan (gallocr-plan.c), and tensors placed
 * from it.
 *
 * Failure never costs the caller what it had: a reserve that cannot get its buffers keeps the
 * previous plan and buffers, so graphs that fitted before still fit.
 */
#include "gallocr-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- buffers ------------------------------------------------------------------------------- */

static size_t vbuf_chunk_size(const struct ggmlx_vbuffer * v, int c) {
    return (c < v->n_chunks && v->chunks[c] != NULL) ? ggml_backend_buffer_get_size(v->chunks[c]) : 0;
}

static size_t vbuf_size(const struct ggmlx_vbuffer * v) {
    size_t size = 0;
    for (int c = 0; c < v->n_chunks; c++) {
        size += vbuf_chunk_size(v, c);
    }
    return size;
}

static void vbuf_free(struct ggmlx_vbuffer * v) {
    for (int c = 0; c < v->n_chunks; c++) {
        ggml_backend_buffer_free(v->chunks[c]);
    }
    memset(v, 0, sizeof *v);
}

static ggml_backend_buffer_t alloc_chunk(ggml_backend_buffer_type_t buft, size_t size) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, size);
    if (buf != NULL) {
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    }
    return buf;
}

/*
 * Grow every chunk of v that is smaller than the allocator says it must be. Chunks only ever
 * grow, so a plan that fitted the old chunks fits the new ones. A chunk that cannot grow is put
 * back at its old size; false then, and *lost is set if even that failed.
 */
static bool vbuf_grow(struct ggmlx_vbuffer * v, ggml_backend_buffer_type_t buft, const struct ggmlx_dyn_tallocr * ta,
                      bool * lost, const char * func) {
    for (int c = 0; c < ta->n_chunks; c++) {
        const size_t need = ggmlx_dyn_tallocr_chunk_size(ta, c);
        const size_t have = vbuf_chunk_size(v, c);
        if (c < v->n_chunks && v->chunks[c] != NULL && need <= have) {
            continue;
        }
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: %s chunk %d: %zu -> %zu bytes\n", func, ggml_backend_buft_name(buft), c,
                  have, need);
        /* the old memory goes first: a device near its limit may have room for the new size only */
        ggml_backend_buffer_free(c < v->n_chunks ? v->chunks[c] : NULL);
        if (c < v->n_chunks) {
            v->chunks[c] = NULL;
        }
        ggml_backend_buffer_t buf = alloc_chunk(buft, need);
        if (buf == NULL) {
            if (have > 0) {
                v->chunks[c] = alloc_chunk(buft, have);
                *lost = *lost || v->chunks[c] == NULL;
            }
            /* after the put-back, whose success would clear the thread's error */
            ggmlx_error(func, "cannot allocate a %s buffer of %zu bytes (chunk %d of the graph's memory)%s",
                        ggml_backend_buft_name(buft), need, c,
                        *lost ? "; the previous buffer could not be restored either" : "");
            return false;
        }
        v->chunks[c] = buf;
        if (c >= v->n_chunks) {
            v->n_chunks = c + 1;
        }
    }
    return true;
}

/* ---- life cycle ---------------------------------------------------------------------------- */

ggml_gallocr_t ggml_gallocr_new_n(ggml_backend_buffer_type_t * bufts, int n_bufs) {
    if (bufts == NULL || n_bufs <= 0) {
        ggmlx_error(__func__, "need at least one buffer type (bufts %s, n_bufs %d)", bufts ? "given" : "NULL", n_bufs);
        return NULL;
    }
    for (int i = 0; i < n_bufs; i++) {
        if (bufts[i] == NULL) {
            ggmlx_error(__func__, "bufts[%d] is NULL", i);
            return NULL;
        }
        const size_t align = ggml_backend_buft_get_alignment(bufts[i]);
        if (align == 0 || (align & (align - 1)) != 0) {
            ggmlx_error(__func__, "buffer type %s has alignment %zu, not a power of two", ggml_backend_buft_name(bufts[i]),
                        align);
            return NULL;
        }
    }
    struct ggml_gallocr * g = calloc(1, sizeof *g);
    if (g == NULL) {
        goto err_oom;
    }
    g->n_bufs  = n_bufs;
    g->bufts   = calloc((size_t) n_bufs, sizeof *g->bufts);
    g->owner   = calloc((size_t) n_bufs, sizeof *g->owner);
    g->tallocs = calloc((size_t) n_bufs, sizeof *g->tallocs);
    g->vbufs   = calloc((size_t) n_bufs, sizeof *g->vbufs);
    if (g->bufts == NULL || g->owner == NULL || g->tallocs == NULL || g->vbufs == NULL) {
        goto err_free;
    }
    for (int i = 0; i < n_bufs; i++) {
        g->bufts[i] = bufts[i];
        g->owner[i] = i;
        /* a buffer type listed twice is one allocator and one buffer */
        for (int j = 0; j < i; j++) {
            if (bufts[j] == bufts[i]) {
                g->owner[i] = j;
                break;
            }
        }
        if (g->owner[i] == i) {
            ggmlx_dyn_tallocr_init(&g->tallocs[i], ggml_backend_buft_get_alignment(bufts[i]),
                                   ggml_backend_buft_get_max_size(bufts[i]));
        }
    }
    ggmlx_ok();
    return g;

err_free:
    free(g->bufts);
    free(g->owner);
    free(g->tallocs);
    free(g->vbufs);
    free(g);
err_oom:
    ggmlx_error(__func__, "out of host memory");
    return NULL;
}

ggml_gallocr_t ggml_gallocr_new(ggml_backend_buffer_type_t buft) {
    return ggml_gallocr_new_n(&buft, 1);
}

void ggml_gallocr_free(ggml_gallocr_t galloc) {
    if (galloc == NULL) {
        return;
    }
    for (int i = 0; i < galloc->n_bufs; i++) {
        if (galloc->owner[i] == i) {
            vbuf_free(&galloc->vbufs[i]);
            ggmlx_dyn_tallocr_release(&galloc->tallocs[i]);
        }
    }
    ggmlx_gplan_free(&galloc->plan);
    free(galloc->map.slots);
    ggmlx_ptr_map_free(&galloc->fmap);
    free(galloc->bufts);
    free(galloc->owner);
    free(galloc->tallocs);
    free(galloc->vbufs);
    free(galloc);
}

/* ---- reserving ----------------------------------------------------------------------------- */

static bool args_ok(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const char * func) {
    if (galloc == NULL || graph == NULL) {
        ggmlx_error(func, "%s is NULL", galloc == NULL ? "galloc" : "graph");
        return false;
    }
    if (ggmlx_graph_is_failed(graph)) {
        ggmlx_error(func, "graph is failed (a NULL or failed tensor was added to it)");
        return false;
    }
    return true;
}

static bool reserve_impl(ggml_gallocr_t g, struct ggml_cgraph * graph, const int * node_ids, const int * leaf_ids,
                         const char * func) {
    struct ggmlx_gplan plan;
    if (!ggmlx_gallocr_plan(g, graph, node_ids, leaf_ids, &plan, func)) {
        return false;
    }
    bool ok = true, lost = false;
    for (int i = 0; i < g->n_bufs && ok; i++) {
        if (g->owner[i] == i) {
            ok = vbuf_grow(&g->vbufs[i], g->bufts[i], &g->tallocs[i], &lost, func);
        }
    }
    if (!ok) {
        ggmlx_gplan_free(&plan);
        if (lost) {
            g->planned = false; /* memory of the old plan is gone too: the next graph plans anew */
        }
        return false;
    }
    ggmlx_gplan_free(&g->plan);
    g->plan    = plan;
    g->planned = true;
    ggmlx_ok();
    return true;
}

bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids) {
    if (!args_ok(galloc, graph, __func__)) {
        return false;
    }
    return reserve_impl(galloc, graph, node_buffer_ids, leaf_buffer_ids, __func__);
}

bool ggml_gallocr_reserve(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (!args_ok(galloc, graph, __func__)) {
        return false;
    }
    return reserve_impl(galloc, graph, NULL, NULL, __func__);
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                 const int * leaf_buffer_ids, size_t * sizes) {
    if (sizes == NULL) {
        ggmlx_error(__func__, "sizes is NULL");
        return;
    }
    if (galloc != NULL) {
        memset(sizes, 0, (size_t) galloc->n_bufs * sizeof *sizes);
    }
    if (!args_ok(galloc, graph, __func__)) {
        return;
    }
    struct ggmlx_gplan plan;
    if (!ggmlx_gallocr_plan(galloc, graph, node_buffer_ids, leaf_buffer_ids, &plan, __func__)) {
        return;
    }
    ggmlx_gplan_free(&plan);
    /* a shared buffer is counted once, at the first id of its type (as get_buffer_size does) */
    for (int i = 0; i < galloc->n_bufs; i++) {
        if (galloc->owner[i] != i) {
            continue;
        }
        const struct ggmlx_dyn_tallocr * ta = &galloc->tallocs[i];
        for (int c = 0; c < ta->n_chunks; c++) {
            sizes[i] += ggmlx_dyn_tallocr_chunk_size(ta, c);
        }
    }
    ggmlx_ok();
}

/* ---- allocating a graph -------------------------------------------------------------------- */

static bool fits(ggml_gallocr_t g, const struct ggml_tensor * t, const struct ggmlx_tensor_plan * p) {
    if (t == NULL || t->data != NULL || t->view_src != NULL) {
        return true;
    }
    if (p->buffer_id < 0) {
        return false; /* it had memory of its own when planned, and has none now */
    }
    return ggml_backend_buft_get_alloc_size(g->bufts[p->buffer_id], t) <= p->size_max;
}

/* false when graph is not the graph the buffers were planned for, or does not fit them */
static bool plan_matches(ggml_gallocr_t g, struct ggml_cgraph * graph) {
    const struct ggmlx_gplan * p = &g->plan;
    if (!g->planned || p->n_nodes != graph->n_nodes || p->n_leafs != graph->n_leafs) {
        return false;
    }
    uint64_t fp;
    if (!ggmlx_gallocr_fingerprint(g, graph, &fp) || fp != p->fingerprint) {
        return false;
    }
    for (int i = 0; i < graph->n_leafs; i++) {
        if (!fits(g, graph->leafs[i], &p->leafs[i])) {
            return false;
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor * node = graph->nodes[i];
        if (!fits(g, node, &p->nodes[i].dst)) {
            return false;
        }
        /* sources that are nodes or leafs were checked as such */
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s != NULL && s->data == NULL && g->fp_override == 0 && !ggmlx_gallocr_in_fingerprint(g, s) &&
                !fits(g, s, &p->nodes[i].src[j])) {
                return false;
            }
        }
    }
    return true;
}

static bool init_tensor(ggml_gallocr_t g, struct ggml_tensor * t, const struct ggmlx_tensor_plan * p, const char * func) {
    if (t->view_src != NULL) {
        /* a view made before its source had memory gets it now; one of foreign memory is left alone */
        if (t->buffer == NULL && t->view_src->buffer != NULL && t->view_src->data != NULL) {
            return ggml_backend_view_init(t) == GGML_STATUS_SUCCESS;
        }
        return true;
    }
    if (t->data != NULL) {
        return true;
    }
    if (p->buffer_id < 0 || p->buffer_id >= g->n_bufs) {
        ggmlx_error(func, "tensor '%s' has no place in the reserved plan", t->name);
        return false;
    }
    const struct ggmlx_vbuffer * v = &g->vbufs[g->owner[p->buffer_id]];
    ggml_backend_buffer_t buf = p->addr.chunk < v->n_chunks ? v->chunks[p->addr.chunk] : NULL;
    char * base = buf ? ggml_backend_buffer_get_base(buf) : NULL;
    if (base == NULL) {
        ggmlx_error(func, "no memory planned for tensor '%s' (buffer %d, chunk %d)", t->name, p->buffer_id, p->addr.chunk);
        return false;
    }
    /* the plan placed it inside the chunk; a failing init_tensor is the only way this can fail */
    const enum ggml_status st = ggmlx_tensor_place(buf, t, base + p->addr.offset);
    if (st != GGML_STATUS_SUCCESS) {
        ggmlx_error(func, "buffer %s refused tensor '%s' (status %d)", ggml_backend_buffer_name(buf), t->name, (int) st);
        return false;
    }
    return true;
}

bool ggml_gallocr_alloc_graph(ggml_gallocr_t galloc, struct ggml_cgraph * graph) {
    if (!args_ok(galloc, graph, __func__)) {
        return false;
    }
    if (!plan_matches(galloc, graph)) {
        if (galloc->no_auto_reserve) {
            /* the scheduler's question "is it planned?": it plans and grows itself, not an error */
            ggmlx_ok();
            return false;
        }
        if (galloc->n_bufs > 1) {
            /* only reserve_n knows which of the buffers each tensor goes to */
            ggmlx_error(__func__, "%s; with %d buffers the allocator cannot place a graph itself: call "
                        "ggml_gallocr_reserve_n with this graph and its buffer ids first "
                        "(ggml_gallocr_reserve_n_size gives the bytes each buffer needs); nothing was allocated",
                        galloc->planned ? "graph is not the one reserved, or outgrew it" : "nothing is reserved yet",
                        galloc->n_bufs);
            return false;
        }
        if (!reserve_impl(galloc, graph, NULL, NULL, __func__)) {
            return false;
        }
    }
    for (int i = 0; i < galloc->n_bufs; i++) {
        if (galloc->owner[i] != i) {
            continue;
        }
        for (int c = 0; c < galloc->vbufs[i].n_chunks; c++) {
            ggml_backend_buffer_reset(galloc->vbufs[i].chunks[c]);
        }
    }
    const struct ggmlx_gplan * p = &galloc->plan;
    for (int i = 0; i < graph->n_leafs; i++) {
        if (!init_tensor(galloc, graph->leafs[i], &p->leafs[i], __func__)) {
            return false;
        }
    }
    for (int i = 0; i < graph->n_nodes; i++) {
        struct ggml_tensor * node = graph->nodes[i];
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL && !init_tensor(galloc, node->src[j], &p->nodes[i].src[j], __func__)) {
                return false;
            }
        }
        if (!init_tensor(galloc, node, &p->nodes[i].dst, __func__)) {
            return false;
        }
    }
    ggmlx_ok();
    return true;
}

size_t ggml_gallocr_get_buffer_size(ggml_gallocr_t galloc, int buffer_id) {
    if (galloc == NULL) {
        ggmlx_error(__func__, "galloc is NULL");
        return 0;
    }
    if (buffer_id < 0 || buffer_id >= galloc->n_bufs) {
        ggmlx_error(__func__, "buffer_id %d is out of range (0..%d)", buffer_id, galloc->n_bufs - 1);
        return 0;
    }
    ggmlx_ok();
    /* a buffer shared by several ids is counted at the first of them only */
    if (galloc->owner[buffer_id] != buffer_id) {
        return 0;
    }
    return vbuf_size(&galloc->vbufs[buffer_id]);
}

/* ---- for the scheduler ---------------------------------------------------------------------- */

bool ggmlx_gallocr_plan_in_place(struct ggml_gallocr * g, struct ggml_cgraph * graph, const int * node_ids,
                                 const int * leaf_ids, bool * fits, const char * func) {
    *fits = false;
    struct ggmlx_gplan plan;
    if (!ggmlx_gallocr_plan(g, graph, node_ids, leaf_ids, &plan, func)) {
        return false;
    }
    bool ok = true;
    for (int i = 0; i < g->n_bufs && ok; i++) {
        if (g->owner[i] != i) {
            continue;
        }
        const struct ggmlx_dyn_tallocr * ta = &g->tallocs[i];
        for (int c = 0; c < ta->n_chunks && ok; c++) {
            const struct ggmlx_vbuffer * v = &g->vbufs[i];
            ok = c < v->n_chunks && v->chunks[c] != NULL && ggmlx_dyn_tallocr_chunk_size(ta, c) <= vbuf_chunk_size(v, c);
        }
    }
    if (!ok) {
        ggmlx_gplan_free(&plan);
        return true;
    }
    ggmlx_gplan_free(&g->plan);
    g->plan    = plan;
    g->planned = true;
    *fits      = true;
    return true;
}

void ggmlx_gallocr_foreach_buffer(const struct ggml_gallocr * g, void (*fn)(ggml_backend_buffer_t, void *), void * user) {
    for (int i = 0; i < g->n_bufs; i++) {
        if (g->owner[i] != i) {
            continue;
        }
        for (int c = 0; c < g->vbufs[i].n_chunks; c++) {
            if (g->vbufs[i].chunks[c] != NULL) {
                fn(g->vbufs[i].chunks[c], user);
            }
        }
    }
}
