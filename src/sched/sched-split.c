/*
 * sched-split.c -- which backend runs each node, and the splits that follow from it.
 *
 * Placement follows upstream's passes so that programs written for it land on the same
 * devices:
 *   1. tensors that decide for themselves: pinned by the user, pre-allocated in a buffer (its
 *      backend), graph inputs (the CPU), ops on weights (the weights' backend, or a device when
 *      op_offload moves an op on host weights);
 *   2. neighbours of assigned nodes follow them, first next to non-CPU nodes, then any;
 *   3. what is left goes where most of its sources are; a node moves up to a higher-priority
 *      backend with the same buffer type;
 *   4. views follow the tensor they view, sources their consumer; anything else the first
 *      backend that can run it.
 * Then consecutive nodes on one backend form a split, and every source a split needs from a
 * backend it cannot read gets a copy on the split's backend. The user's graph is not changed:
 * the sources are only redirected to the copies while the scheduler allocates and enqueues
 * (ggmlx_sched_apply_rewrites / restore_rewrites).
 */
#include "sched-impl.h"
#include "alloc/gallocr-impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- the tensor table ----------------------------------------------------------------------- */

static bool table_prepare(struct ggml_backend_sched * sched, size_t n) {
    struct sched_table * tb = &sched->table;
    if (!ggmlx_ptr_map_reset(&tb->map, n)) {
        return false;
    }
    if (n > tb->tinfo_cap) {
        struct sched_tinfo * tinfo = malloc(n * sizeof *tinfo);
        if (tinfo == NULL) {
            return false;
        }
        free(sched->tinfo);
        sched->tinfo  = tinfo;
        tb->tinfo_cap = n;
    }
    tb->n = 0;
    return true;
}

/* t's index, its entry made on first sight; the table is sized for every tensor the graph names */
static inline int32_t slot_of(struct ggml_backend_sched * sched, struct ggml_tensor * t) {
    struct sched_table * tb = &sched->table;
    bool added;
    const int32_t id = ggmlx_ptr_map_get_or_add(&tb->map, t, tb->n, &added);
    if (added) {
        tb->n++;
        struct sched_tinfo * ti = &sched->tinfo[id];
        memset(ti, 0, sizeof *ti);
        ti->backend    = -1;
        ti->last_write = -1;
    }
    return id;
}

int32_t ggmlx_sched_find(const struct ggml_backend_sched * sched, const struct ggml_tensor * t) {
    return t != NULL ? ggmlx_ptr_map_find(&sched->table.map, t) : -1;
}

static struct sched_tinfo * info(struct ggml_backend_sched * sched, struct ggml_tensor * t) {
    return &sched->tinfo[slot_of(sched, t)];
}

/* the entries of node i and of its sources, looked up once per split (node_slots) */
#define SLOTS_PER_NODE (2 + GGML_MAX_SRC) /* node, number of sources to look at, sources */
#define NODE_INFO(sched, i)   (&(sched)->tinfo[(sched)->node_slots[(size_t) (i) * SLOTS_PER_NODE]])
#define NSRC(sched, i)        ((sched)->node_slots[(size_t) (i) * SLOTS_PER_NODE + 1])
#define SRC_INFO(sched, i, j) (&(sched)->tinfo[(sched)->node_slots[(size_t) (i) * SLOTS_PER_NODE + 2 + (j)]])

int ggmlx_sched_tensor_backend_id(const struct ggml_backend_sched * sched, const struct ggml_tensor * t) {
    const int32_t i = sched->split_ok ? ggmlx_sched_find(sched, t) : -1;
    return i >= 0 ? sched->tinfo[i].backend : -1;
}

void ggmlx_sched_clear_assignments(struct ggml_backend_sched * sched) {
    ggmlx_sched_restore_rewrites(sched);
    sched->split_ok   = false;
    sched->n_splits   = 0;
    sched->n_inputs   = 0;
    sched->n_rewrites = 0;
}

static bool grow(void ** p, int * cap, int need, size_t elem);

/* ---- backend capabilities, straight through the vtables (called per node and pass) --------- */

static bool supports_op(const struct ggml_backend_sched * sched, int b, const struct ggml_tensor * t) {
    ggml_backend_dev_t dev = sched->backends[b]->device;
    return dev->iface.supports_op(dev, t);
}

static bool supports_buft(const struct ggml_backend_sched * sched, int b, ggml_backend_buffer_type_t buft) {
    ggml_backend_dev_t dev = sched->backends[b]->device;
    return dev->iface.supports_buft(dev, buft);
}

static bool offload_op(const struct ggml_backend_sched * sched, int b, const struct ggml_tensor * t) {
    ggml_backend_dev_t dev = sched->backends[b]->device;
    return dev->iface.offload_op != NULL && dev->iface.offload_op(dev, t);
}

static bool computes(const struct ggml_tensor * t) {
    return t->op != GGML_OP_NONE && !ggmlx_is_view_op(t->op);
}

/* the buffer a tensor lives in when it is not the scheduler's own (weights, caches, ...) */
static ggml_backend_buffer_t user_buffer(const struct ggml_backend_sched * sched, const struct ggml_tensor * t) {
    ggml_backend_buffer_t buf = ggmlx_tensor_buffer(t);
    return buf != NULL && !ggmlx_sched_owns_buffer(sched, buf) ? buf : NULL;
}

/* ---- forgetting the scheduler's own allocations of an earlier split -------------------------- */

static void unalloc(struct ggml_backend_sched * sched, struct ggml_tensor * t) {
    if (!(t->flags & GGMLX_TENSOR_FLAG_SCHED_ALLOC)) {
        return;
    }
    /* ours, or left by a scheduler since freed; another live scheduler's stays (pre-allocated) */
    if (ggmlx_sched_owns_buffer(sched, t->buffer) || !ggmlx_sched_buffer_is_live(t->buffer)) {
        t->data   = NULL;
        t->buffer = NULL;
        t->flags &= ~GGMLX_TENSOR_FLAG_SCHED_ALLOC;
    }
}

/* ---- pass 1 --------------------------------------------------------------------------------- */

/* highest-priority backend that can use buf's memory and run t; -1 none */
static int backend_of_buffer(const struct ggml_backend_sched * sched, ggml_backend_buffer_t buf, const struct ggml_tensor * t) {
    for (int b = 0; b < sched->n_backends; b++) {
        if (supports_buft(sched, b, buf->buft) && (!computes(t) || supports_op(sched, b, t))) {
            return b;
        }
    }
    return -1;
}

static int from_cur(struct ggml_backend_sched * sched, struct ggml_tensor * t, enum sched_cause * cause, const char * func) {
    ggml_backend_buffer_t buf = user_buffer(sched, t);
    if (buf != NULL) {
        const int b = backend_of_buffer(sched, buf, t);
        if (b < 0) {
            ggmlx_error(func, "tensor '%s' (%s) is in a %s buffer that no backend of the scheduler can run it with",
                        t->name, ggml_op_desc(t), ggml_backend_buft_name(buf->buft));
        }
        *cause = CAUSE_BUFFER;
        return b < 0 ? -2 : b;
    }
    if (t->flags & GGML_TENSOR_FLAG_INPUT) {
        *cause = CAUSE_INPUT;
        return sched->n_backends - 1;
    }
    /* rope's and attention's small side tensors (frequencies, sinks) do not decide placement */
    if (t->op == GGML_OP_ROPE || t->op == GGML_OP_FLASH_ATTN_EXT || !computes(t)) {
        return -1;
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const struct ggml_tensor * s = t->src[j];
        ggml_backend_buffer_t sb = s != NULL ? user_buffer(sched, s) : NULL;
        if (sb == NULL || ggml_backend_buffer_get_usage(sb) != GGML_BACKEND_BUFFER_USAGE_WEIGHTS) {
            continue;
        }
        const int b = backend_of_buffer(sched, sb, t);
        if (b < 0) {
            continue;
        }
        if (sched->op_offload && b == sched->n_backends - 1 && ggml_backend_buffer_is_host(sb)) {
            for (int o = 0; o < b; o++) {
                if (supports_op(sched, o, t) && offload_op(sched, o, t)) {
                    *cause = CAUSE_OFFLOAD;
                    return o;
                }
            }
        }
        *cause = CAUSE_WEIGHT;
        return b;
    }
    return -1;
}

static bool assign_pass1(struct ggml_backend_sched * sched, struct ggml_tensor * t, const char * func) {
    struct sched_tinfo * ti = info(sched, t);
    if (ti->backend >= 0) {
        return true;
    }
    enum sched_cause cause = CAUSE_NONE;
    const int b = from_cur(sched, t, &cause, func);
    if (b == -2) {
        return false;
    }
    ti->backend = (int8_t) b;
    ti->cause   = (int8_t) (b >= 0 ? cause : CAUSE_NONE);
    return true;
}

/* ---- pass 2: expansion ---------------------------------------------------------------------- */

static void expand(struct ggml_backend_sched * sched, struct ggml_cgraph * g, bool forward, bool gpu_only) {
    const int cpu = sched->n_backends - 1;
    int cur = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const int i = forward ? k : g->n_nodes - 1 - k;
        struct ggml_tensor * node = g->nodes[i];
        if (!computes(node)) {
            continue;
        }
        struct sched_tinfo * ti = NODE_INFO(sched, i);
        if (ti->backend >= 0) {
            cur = gpu_only && ti->backend == cpu ? -1 : ti->backend;
        } else if (cur >= 0 && supports_op(sched, cur, node)) {
            ti->backend = (int8_t) cur;
            ti->cause   = gpu_only ? CAUSE_EXPAND_GPU : CAUSE_EXPAND;
        }
    }
}

/* ---- pass 3 --------------------------------------------------------------------------------- */

/* can backend b read s where it is (its own buffer, or the buffer type of its backend)? */
static bool can_read(struct ggml_backend_sched * sched, struct ggml_tensor * s, int b) {
    ggml_backend_buffer_t buf = user_buffer(sched, s);
    if (buf != NULL) {
        return supports_buft(sched, b, buf->buft);
    }
    const int sb = info(sched, s->view_src ? s->view_src : s)->backend;
    return sb < 0 || sb == b || supports_buft(sched, b, sched->bufts[sb]);
}

static void pass3(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (!computes(node)) {
            continue;
        }
        struct sched_tinfo * ti = NODE_INFO(sched, i);
        if (ti->backend < 0) {
            int best = -1, best_n = -1;
            for (int b = 0; b < sched->n_backends; b++) {
                if (!supports_op(sched, b, node)) {
                    continue;
                }
                int n = 0;
                for (int j = 0; j < NSRC(sched, i); j++) {
                    if (node->src[j] != NULL && SRC_INFO(sched, i, j)->backend == b) {
                        n++;
                    }
                }
                if (n > best_n) {
                    best   = b;
                    best_n = n;
                }
            }
            if (best >= 0) {
                ti->backend = (int8_t) best;
                ti->cause   = CAUSE_SOURCES;
            }
        } else if (!ti->user && ti->cause != CAUSE_BUFFER) {
            /* same memory, higher priority (a BLAS backend next to the CPU, say) */
            for (int b = 0; b < ti->backend; b++) {
                if (sched->bufts[b] != sched->bufts[ti->backend] || !supports_op(sched, b, node)) {
                    continue;
                }
                bool ok = true;
                for (int j = 0; j < NSRC(sched, i) && ok; j++) {
                    ok = node->src[j] == NULL || can_read(sched, node->src[j], b);
                }
                if (ok) {
                    ti->backend = (int8_t) b;
                    ti->cause   = CAUSE_UPGRADE;
                    break;
                }
            }
        }
    }
}

/* ---- pass 4 --------------------------------------------------------------------------------- */

/*
 * An AdamW step updates its moments (sources 2 and 3) in place, besides the parameter it is a
 * view of. A moment the step's backend cannot use where it lives would be copied in and the
 * update lost at every step, silently: refuse the graph instead.
 */
static bool inplace_sources_reachable(struct ggml_backend_sched * sched, struct ggml_cgraph * g, const char * func) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (node->op != GGML_OP_OPT_STEP_ADAMW) {
            continue;
        }
        const int b = NODE_INFO(sched, i)->backend;
        for (int j = 2; j <= 3; j++) {
            struct ggml_tensor * s = node->src[j];
            if (s != NULL && !can_read(sched, s, b)) {
                ggmlx_error(func, "node %d ('%s') updates '%s' in place, but it lives in memory backend %s cannot use: "
                            "keep the optimizer's moments in the parameter's buffer type", i, node->name, s->name,
                            ggml_backend_name(sched->backends[b]));
                return false;
            }
        }
    }
    return true;
}

static bool pass4(struct ggml_backend_sched * sched, struct ggml_cgraph * g, const char * func) {
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        struct sched_tinfo * ti   = NODE_INFO(sched, i);
        if (ti->backend < 0 && node->view_src != NULL) {
            ti->backend = info(sched, node->view_src)->backend;
            ti->cause   = CAUSE_VIEW;
        }
        if (ti->backend < 0) {
            for (int b = 0; b < sched->n_backends; b++) {
                if (!computes(node) || supports_op(sched, b, node)) {
                    ti->backend = (int8_t) b;
                    ti->cause   = CAUSE_FALLBACK;
                    break;
                }
            }
        }
        if (ti->backend < 0) {
            ggmlx_error(func, "no backend of the scheduler can run %s (node %d, '%s' %s)", ggml_op_desc(node), i,
                        node->name, GGMLX_SHAPE(node));
            return false;
        }
        for (int j = 0; j < NSRC(sched, i); j++) {
            struct ggml_tensor * s = node->src[j];
            if (s == NULL) {
                continue;
            }
            struct sched_tinfo * si = SRC_INFO(sched, i, j);
            if (si->backend < 0) {
                si->backend = s->view_src != NULL ? info(sched, s->view_src)->backend : ti->backend;
                if (si->backend < 0) {
                    si->backend = ti->backend;
                }
                si->cause = CAUSE_VIEW;
            }
        }
    }
    for (int i = 0; i < g->n_leafs; i++) {
        struct sched_tinfo * li = info(sched, g->leafs[i]);
        if (li->backend < 0) {
            li->backend = (int8_t) (sched->n_backends - 1);
            li->cause   = CAUSE_FALLBACK;
        }
    }
    return inplace_sources_reachable(sched, g, func);
}

/* ---- growable arrays ------------------------------------------------------------------------ */

static bool grow(void ** p, int * cap, int need, size_t elem) {
    if (need <= *cap) {
        return true;
    }
    int n = *cap ? *cap : 16;
    while (n < need) {
        n *= 2;
    }
    void * q = realloc(*p, (size_t) n * elem);
    if (q == NULL) {
        return false;
    }
    *p   = q;
    *cap = n;
    return true;
}

#define GROW(arr, cap, need) grow((void **) &(arr), &(cap), (need), sizeof *(arr))

/* ---- pass 5: splits and copies -------------------------------------------------------------- */

static struct ggml_tensor * root_of(struct ggml_tensor * t) {
    while (t->view_src != NULL) {
        t = t->view_src;
    }
    return t;
}

/* a source the split reads in place on another backend: the split must wait for that backend */
static void read_in_place(struct ggml_backend_sched * sched, struct sched_split * sp, struct ggml_tensor * s, int sb) {
    if (info(sched, root_of(s))->written || user_buffer(sched, s) == NULL) {
        sp->reads_from |= 1u << sb;
    }
}

/*
 * Route node->src[j] to a copy on the split's backend: one copy per source and backend for the
 * whole graph, unless a node wrote the source's memory after the copy was made.
 */
static bool add_input(struct ggml_backend_sched * sched, struct sched_split * sp, int i, int j, int sb) {
    struct ggml_tensor * node = sched->graph->nodes[i];
    struct ggml_tensor * s    = node->src[j];
    const int last_write      = info(sched, root_of(s))->last_write;
    int k = 0;
    for (; k < sched->n_inputs; k++) {
        const struct sched_input * in = &sched->inputs[k];
        if (in->src == s && in->dst_backend == sp->backend && (k >= sp->input_begin || last_write < in->first_node)) {
            break;
        }
    }
    if (k == sched->n_inputs) {
        if (!GROW(sched->inputs, sched->inputs_cap, sched->n_inputs + 1)) {
            return false;
        }
        sched->inputs[sched->n_inputs++] = (struct sched_input){ s, NULL, sb, sp->backend, i, false, false };
        sp->n_inputs++;
    }
    if (!GROW(sched->rewrites, sched->rewrites_cap, sched->n_rewrites + 1)) {
        return false;
    }
    /* the copy tensor is made once the number of inputs is known (make_tensors) */
    sched->rewrites[sched->n_rewrites++] = (struct sched_rewrite){ node, j, s, (struct ggml_tensor *) (intptr_t) k };
    return true;
}

static bool note_graph_input(struct ggml_backend_sched * sched, struct ggml_tensor * t) {
    if (!(t->flags & GGML_TENSOR_FLAG_INPUT) || t->view_src != NULL || t->data != NULL) {
        return true;
    }
    struct sched_tinfo * ti = info(sched, t);
    if (ti->graph_input) {
        return true;
    }
    if (!GROW(sched->graph_inputs, sched->graph_inputs_cap, sched->n_graph_inputs + 1)) {
        return false;
    }
    ti->graph_input = true;
    sched->graph_inputs[sched->n_graph_inputs++] = t;
    return true;
}

/*
 * The tensors copied to another backend get slot memory too, like the graph inputs: compute
 * k + 1 then writes its own copy of them while compute k's copy out of them may still be queued
 * behind the destination's earlier work, so the source backend never waits for that copy and
 * the devices of a pipeline do not run in lockstep. Only memory the scheduler hands out is
 * moved (pre-allocated sources, such as a cache, stay where they are and are ordered by events).
 */
static bool slot_copy_sources(struct ggml_backend_sched * sched) {
    for (int k = 0; k < sched->n_inputs; k++) {
        struct sched_input * in = &sched->inputs[k];
        struct ggml_tensor * r  = root_of(in->src);
        struct sched_tinfo * ri = info(sched, r);
        /* the caller may rewrite it as soon as compute returns (upstream copies it synchronously) */
        in->from_caller = !ri->graph_input && !ri->written &&
                          (ggmlx_sched_is_caller_input(r) || ggmlx_sched_is_caller_input(in->src));
        if (!ri->graph_input) {
            if (!ri->allocated || r->data != NULL || r->view_src != NULL) {
                continue;
            }
            if (!GROW(sched->graph_inputs, sched->graph_inputs_cap, sched->n_graph_inputs + 1)) {
                return false;
            }
            ri->graph_input = true;
            sched->graph_inputs[sched->n_graph_inputs++] = r;
        }
        in->slotted = true;
    }
    return true;
}

static bool pass5(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    struct sched_split * sp = NULL;
    for (int i = 0; i < g->n_leafs; i++) {
        if (!note_graph_input(sched, g->leafs[i])) {
            return false;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        const int b = NODE_INFO(sched, i)->backend;
        if (sp == NULL || (computes(node) && b != sp->backend)) {
            if (sp != NULL) {
                sp->i_end = i;
            }
            if (!GROW(sched->splits, sched->splits_cap, sched->n_splits + 1)) {
                return false;
            }
            sp = &sched->splits[sched->n_splits++];
            memset(sp, 0, sizeof *sp);
            /* leading views join the first computing node's split */
            sp->backend     = b;
            sp->i_start     = sched->n_splits == 1 ? 0 : i;
            sp->input_begin = sched->n_inputs;
            if (sched->n_splits == 1 && !computes(node)) {
                int k = i;
                while (k < g->n_nodes && !computes(g->nodes[k])) {
                    k++;
                }
                sp->backend = k < g->n_nodes ? NODE_INFO(sched, k)->backend : b;
            }
        }
        if (!computes(node)) {
            continue;
        }
        for (int j = 0; j < NSRC(sched, i); j++) {
            struct ggml_tensor * s = node->src[j];
            if (s == NULL) {
                continue;
            }
            if (!note_graph_input(sched, s)) {
                return false;
            }
            const int sb = SRC_INFO(sched, i, j)->backend;
            if (sb == sp->backend || sb < 0) {
                continue;
            }
            if (can_read(sched, s, sp->backend)) {
                read_in_place(sched, sp, s, sb);
            } else if (!add_input(sched, sp, i, j, sb)) {
                return false;
            }
        }
    }
    if (sp != NULL) {
        sp->i_end = g->n_nodes;
    }
    return true;
}

/* ---- the context of copies and views, and the allocator's graph ----------------------------- */

static bool make_context(struct ggml_backend_sched * sched, int alloc_size) {
    const size_t need = (size_t) (2 * sched->n_inputs + 8) * ggml_tensor_overhead() +
                        (size_t) (sched->n_splits + 1) * ggml_graph_overhead_custom(1, false) +
                        ggml_graph_overhead_custom((size_t) alloc_size, false);
    ggml_free(sched->ctx);
    sched->ctx = NULL;
    if (need > sched->ctx_mem_size) {
        void * mem = malloc(need);
        if (mem == NULL) {
            return false;
        }
        free(sched->ctx_mem);
        sched->ctx_mem      = mem;
        sched->ctx_mem_size = need;
    }
    struct ggml_init_params params = { sched->ctx_mem_size, sched->ctx_mem, true };
    sched->ctx = ggml_init(params);
    return sched->ctx != NULL;
}

static struct ggml_tensor * new_like(struct ggml_context * ctx, const struct ggml_tensor * s) {
    struct ggml_tensor * t = ggml_new_tensor(ctx, s->type, GGML_MAX_DIMS, s->ne);
    if (t != NULL) {
        for (int d = 0; d < GGML_MAX_DIMS; d++) {
            t->nb[d] = s->nb[d]; /* same layout, so a copy is one block of ggml_nbytes */
        }
    }
    return t;
}

static bool push(struct ggml_backend_sched * sched, struct ggml_tensor * t, int backend) {
    struct ggml_cgraph * a = sched->alloc_graph;
    if (a->n_nodes >= a->size) {
        return false;
    }
    sched->node_ids[a->n_nodes] = backend;
    a->nodes[a->n_nodes++]      = t;
    return true;
}

static bool build_alloc_graph(struct ggml_backend_sched * sched, struct ggml_cgraph * g, const char * func) {
    const int n_alloc = g->n_nodes + 2 * sched->n_inputs;
    const int size    = n_alloc > g->n_leafs ? n_alloc : g->n_leafs;
    if (!make_context(sched, size) || !GROW(sched->node_ids, sched->ids_cap, size) ||
        !GROW(sched->leaf_ids, sched->leaf_ids_cap, size)) {
        ggmlx_error(func, "out of host memory");
        return false;
    }
    sched->alloc_graph = ggml_new_graph_custom(sched->ctx, (size_t) size, false);
    if (sched->alloc_graph == NULL) {
        return false;
    }
    for (int k = 0; k < sched->n_inputs; k++) {
        struct sched_input * in = &sched->inputs[k];
        in->dst = new_like(sched->ctx, in->src);
        if (in->dst == NULL) {
            return false;
        }
        ggml_format_name(in->dst, "%s#%s", ggml_backend_name(sched->backends[in->dst_backend]), in->src->name);
    }
    for (int r = 0; r < sched->n_rewrites; r++) {
        sched->rewrites[r].copy = sched->inputs[(intptr_t) sched->rewrites[r].copy].dst;
    }
    for (int s = 0; s < sched->n_splits; s++) {
        struct sched_split * sp = &sched->splits[s];
        for (int k = sp->input_begin; k < sp->input_begin + sp->n_inputs; k++) {
            struct sched_input * in = &sched->inputs[k];
            /* keeps the source's memory until its copy is made, then the copy's until the split ran */
            struct ggml_tensor * dep = ggml_new_tensor(sched->ctx, in->src->type, GGML_MAX_DIMS, in->src->ne);
            if (dep == NULL) {
                return false;
            }
            dep->view_src = in->src;
            dep->src[0]   = in->src;
            if (!push(sched, dep, in->src_backend) || !push(sched, in->dst, in->dst_backend)) {
                return false;
            }
        }
        for (int i = sp->i_start; i < sp->i_end; i++) {
            const int b = NODE_INFO(sched, i)->backend;
            if (!push(sched, g->nodes[i], b >= 0 ? b : sp->backend)) {
                return false;
            }
        }
        sp->graph = ggmlx_graph_view(sched->ctx, g, sp->i_start, sp->i_end);
        if (sp->graph == NULL) {
            return false;
        }
    }
    struct ggml_cgraph * a = sched->alloc_graph;
    for (int i = 0; i < g->n_leafs; i++) {
        sched->leaf_ids[a->n_leafs] = info(sched, g->leafs[i])->backend;
        a->leafs[a->n_leafs++]      = g->leafs[i];
    }
    return true;
}

/* ---- the allocator's fingerprint --------------------------------------------------------------- */

static inline uint64_t mix(uint64_t h, uint64_t v) {
    return (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
}

/*
 * What the allocator's plan depends on, taken from the split's own tables (dense tensor ids are
 * handed out in graph order, so equal structures give equal ids): sizes, every node's op, flags,
 * sources, in-place bits and backend, and the copies. Shapes are not in it: the allocator checks
 * that every tensor still fits its planned place.
 */
static void fingerprint(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    const int32_t keep = GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT;
    uint64_t h = mix(mix(mix(0xcbf29ce484222325ull, (uint64_t) g->n_nodes), (uint64_t) g->n_leafs),
                     (uint64_t) sched->n_inputs);
    for (int i = 0; i < g->n_leafs; i++) {
        h = mix(h, (uint64_t) (g->leafs[i]->flags & keep) << 8 | (uint64_t) info(sched, g->leafs[i])->backend);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        h = mix(h, (uint64_t) node->op << 32 | (uint64_t) (node->flags & keep) << 8 | (uint8_t) NODE_INFO(sched, i)->backend);
        h = mix(h, node->view_src ? (uint64_t) slot_of(sched, node->view_src) + 1 : 0);
        const int32_t * srcs = &sched->node_slots[(size_t) i * SLOTS_PER_NODE + 2];
        for (int j = 0; j < NSRC(sched, i); j++) {
            h = mix(h, (uint64_t) (srcs[j] + 1) << 4 | (uint64_t) j);
        }
        h = mix(h, ggmlx_gallocr_inplace_bits(node));
    }
    for (int k = 0; k < sched->n_inputs; k++) {
        const struct sched_input * in = &sched->inputs[k];
        h = mix(h, (uint64_t) slot_of(sched, in->src) << 16 | (uint64_t) in->dst_backend << 8 | (uint64_t) in->src_backend);
        h = mix(h, (uint64_t) in->first_node);
    }
    for (int r = 0; r < sched->n_rewrites; r++) {
        h = mix(h, (uint64_t) (sched->rewrites[r].j) << 32 | (uint64_t) slot_of(sched, sched->rewrites[r].node));
    }
    for (int s = 0; s < sched->n_splits; s++) {
        h = mix(h, (uint64_t) sched->splits[s].i_start << 32 | (uint64_t) sched->splits[s].n_inputs);
    }
    sched->fingerprint = h != 0 ? h : 1;
}

/* ---- rewrites ------------------------------------------------------------------------------- */

void ggmlx_sched_apply_rewrites(struct ggml_backend_sched * sched) {
    if (sched->rewritten) {
        return;
    }
    for (int r = 0; r < sched->n_rewrites; r++) {
        sched->rewrites[r].node->src[sched->rewrites[r].j] = sched->rewrites[r].copy;
    }
    sched->rewritten = true;
}

void ggmlx_sched_restore_rewrites(struct ggml_backend_sched * sched) {
    if (!sched->rewritten) {
        return;
    }
    for (int r = sched->n_rewrites - 1; r >= 0; r--) {
        sched->rewrites[r].node->src[sched->rewrites[r].j] = sched->rewrites[r].original;
    }
    sched->rewritten = false;
}

/* ---- the whole ------------------------------------------------------------------------------ */

static void mark_written(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_nodes; i++) {
        if (computes(g->nodes[i])) {
            struct sched_tinfo * r = info(sched, root_of(g->nodes[i]));
            r->written    = true;
            r->last_write = i;
        }
    }
}

static void forget_own_memory(struct ggml_backend_sched * sched, struct ggml_cgraph * g) {
    for (int i = 0; i < g->n_leafs; i++) {
        unalloc(sched, g->leafs[i]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        unalloc(sched, node);
        for (int j = 0; j < NSRC(sched, i); j++) {
            if (node->src[j] != NULL) {
                unalloc(sched, node->src[j]);
            }
        }
    }
}

bool ggmlx_sched_split(struct ggml_backend_sched * sched, struct ggml_cgraph * g, const char * func) {
    ggmlx_sched_clear_assignments(sched);
    sched->graph          = g;
    sched->n_graph_inputs = 0;
    if (!grow((void **) &sched->node_slots, &sched->node_slots_cap, g->n_nodes * SLOTS_PER_NODE,
              sizeof *sched->node_slots)) {
        ggmlx_error(func, "out of host memory");
        return false;
    }
    /* every tensor the graph names: nodes, leafs, sources and the roots of views */
    size_t n = (size_t) g->n_nodes + (size_t) g->n_leafs + (size_t) sched->n_pins;
    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        int last = 0;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] != NULL) {
                n++;
                last = j + 1;
            }
        }
        NSRC(sched, i) = last;
        n += node->view_src != NULL;
    }
    if (!table_prepare(sched, n)) {
        ggmlx_error(func, "out of host memory");
        return false;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        int32_t * slots = &sched->node_slots[(size_t) i * SLOTS_PER_NODE];
        slots[0] = slot_of(sched, node);
        for (int j = 0; j < slots[1]; j++) {
            slots[2 + j] = node->src[j] != NULL ? slot_of(sched, node->src[j]) : -1;
        }
    }
    forget_own_memory(sched, g);
    for (int i = 0; i < g->n_leafs; i++) {
        info(sched, g->leafs[i])->allocated = g->leafs[i]->data == NULL && g->leafs[i]->view_src == NULL;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        NODE_INFO(sched, i)->allocated = g->nodes[i]->data == NULL;
    }
    for (int p = 0; p < sched->n_pins; p++) {
        struct sched_tinfo * ti = info(sched, sched->pins[p].tensor);
        ti->backend = (int8_t) sched->pins[p].backend;
        ti->cause   = CAUSE_USER;
        ti->user    = true;
    }
    mark_written(sched, g);

    for (int i = 0; i < g->n_leafs; i++) {
        if (!assign_pass1(sched, g->leafs[i], func)) {
            return false;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (!assign_pass1(sched, g->nodes[i], func)) {
            return false;
        }
    }
    expand(sched, g, true, true);
    expand(sched, g, false, true);
    expand(sched, g, true, false);
    expand(sched, g, false, false);
    pass3(sched, g);
    if (!pass4(sched, g, func)) {
        return false;
    }
    if (!pass5(sched, g) || !slot_copy_sources(sched) || !build_alloc_graph(sched, g, func)) {
        if (ggmlx_last_error() == NULL) {
            ggmlx_error(func, "out of host memory while splitting the graph");
        }
        return false;
    }
    fingerprint(sched, g);
    sched->split_ok = true;
    if (sched->debug > 0) {
        ggmlx_sched_print_splits(sched);
    }
    return true;
}
