/*
 * meta-graph.c -- computing a graph on a meta backend. One pass over the nodes gives each its
 * split (meta-state.c) and builds, for every device, a graph of that device's part: the same
 * ops on tensors that point at the device's memory. Where a partial sum must become whole, the
 * devices' graphs so far are enqueued, the sum is reduced across devices, and a new piece starts.
 * Everything is enqueued on the devices' queues; nothing waits on the host.
 */
#include "meta-impl.h"
#include "ptr-map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what the pass knows of one meta tensor of the graph */
struct slot {
    const struct ggml_tensor * t;
    int32_t                    split; /* index into the split pool */
    bool                       node;  /* computed by this graph */
    bool                       used;  /* read by a later node of this graph */
    int32_t                    parent; /* view ops: the slot viewed (same memory), else -1 */
    struct ggml_tensor       * dev[META_MAX];
};

struct pass {
    struct meta_backend  * mb;
    size_t                 n;
    struct ggml_cgraph   * g;
    const char           * func;
    struct ggmlx_ptr_map   map;
    struct slot          * slots;
    size_t                 n_slots, cap_slots;
    struct meta_split    * pool;
    size_t                 n_pool, cap_pool;
    struct ggml_context  * ctx[META_MAX];
    struct ggml_cgraph   * dg[META_MAX]; /* the devices' graphs of the current piece */
    enum ggml_status       status;
};

static int32_t pool_add(struct pass * p, const struct meta_split * s) {
    if (p->n_pool == p->cap_pool) {
        const size_t cap = p->cap_pool ? 2 * p->cap_pool : 64;
        struct meta_split * grown = realloc(p->pool, cap * sizeof *grown);
        if (grown == NULL) {
            return -1;
        }
        p->pool     = grown;
        p->cap_pool = cap;
    }
    p->pool[p->n_pool] = *s;
    return (int32_t) p->n_pool++;
}

static bool fail(struct pass * p, enum ggml_status st, const char * fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(struct pass * p, enum ggml_status st, const char * fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ggmlx_error(p->func, "%s: %s", p->mb->mdev->name, msg);
    p->status = st;
    return false;
}

/* a tensor in device d's context with the given layout, not computed by the device graph */
static struct ggml_tensor * dev_tensor(struct pass * p, size_t d, const struct ggml_tensor * like,
                                       const int64_t ne[GGML_MAX_DIMS], const size_t nb[GGML_MAX_DIMS], void * data,
                                       ggml_backend_buffer_t buffer) {
    struct ggml_tensor * t = ggml_new_tensor(p->ctx[d], like->type, GGML_MAX_DIMS, ne);
    if (t == NULL) {
        return NULL;
    }
    memcpy(t->nb, nb, sizeof t->nb);
    t->data   = data;
    t->buffer = buffer;
    memcpy(t->name, like->name, sizeof t->name);
    return t;
}

/* the slot of t, made for a tensor this graph did not compute (an input) when new */
static struct slot * slot_of(struct pass * p, const struct ggml_tensor * t) {
    const int32_t i = ggmlx_ptr_map_find(&p->map, t);
    if (i >= 0) {
        return &p->slots[i];
    }
    if (p->n_slots == p->cap_slots) {
        fail(p, GGML_STATUS_FAILED, "internal: more tensors than planned");
        return NULL;
    }
    struct meta_split s;
    if (!ggmlx_meta_buffer_get_split(t, &s)) {
        fail(p, GGML_STATUS_FAILED, "'%s' is not in a buffer of this meta device", t->name);
        return NULL;
    }
    if (t->view_src != NULL) {
        /* a view made outside the graph: fine into a whole (or partial) tensor only */
        struct meta_split rs;
        ggmlx_meta_buffer_get_split(t->view_src, &rs);
        if (meta_split_is_axis(&rs)) {
            fail(p, GGML_STATUS_FAILED, "input '%s' is a view into '%s', which is split along axis %d", t->name,
                 t->view_src->name, rs.axis);
            return NULL;
        }
        s = rs;
    }
    struct slot * sl = &p->slots[p->n_slots];
    memset(sl, 0, sizeof *sl);
    sl->t      = t;
    sl->parent = -1;
    sl->split  = pool_add(p, &s);
    if (sl->split < 0) {
        fail(p, GGML_STATUS_FAILED, "out of host memory");
        return NULL;
    }
    for (size_t d = 0; d < p->n; d++) {
        struct meta_dev_view v;
        if (!ggmlx_meta_buffer_dev_view(t, &s, d, &v)) {
            fail(p, GGML_STATUS_FAILED, "cannot place input '%s' on device %zu", t->name, d);
            return NULL;
        }
        sl->dev[d] = dev_tensor(p, d, t, v.ne, v.nb, v.data, v.buffer);
        if (sl->dev[d] == NULL) {
            fail(p, GGML_STATUS_FAILED, "out of host memory");
            return NULL;
        }
    }
    bool added;
    ggmlx_ptr_map_get_or_add(&p->map, t, (int32_t) p->n_slots, &added);
    p->n_slots++;
    return sl;
}

static struct slot * new_node_slot(struct pass * p, const struct ggml_tensor * t, const struct meta_split * s) {
    if (p->n_slots == p->cap_slots) {
        fail(p, GGML_STATUS_FAILED, "internal: more tensors than planned");
        return NULL;
    }
    struct slot * sl = &p->slots[p->n_slots];
    memset(sl, 0, sizeof *sl);
    sl->t      = t;
    sl->node   = true;
    sl->parent = -1;
    sl->split  = pool_add(p, s);
    if (sl->split < 0) {
        fail(p, GGML_STATUS_FAILED, "out of host memory");
        return NULL;
    }
    ggmlx_ptr_map_put(&p->map, t, (int32_t) p->n_slots);
    p->n_slots++;
    return sl;
}

/* device d's tensor of slot sl handed over as split want (a view of its part when mirrored) */
static struct ggml_tensor * dev_as(struct pass * p, struct slot * sl, const struct meta_split * want, size_t d) {
    const struct meta_split * have = &p->pool[sl->split];
    struct ggml_tensor * base = sl->dev[d];
    if (ggmlx_meta_split_equal(have, want, p->n) || !meta_split_is_axis(want)) {
        return base;
    }
    /* have is MIRRORED (ggmlx_meta_can_view_as): each device looks at its part of the whole */
    int64_t ne[GGML_MAX_DIMS];
    memcpy(ne, base->ne, sizeof ne);
    ne[want->axis] = want->len[0][d];
    char * data = (char *) base->data + meta_axis_bytes(base, want->axis, ggmlx_meta_split_start(want, p->n, 0, d));
    return dev_tensor(p, d, base, ne, base->nb, data, base->buffer);
}

/* ---- view ops: the same view taken on each device's part --------------------------------------- */

/*
 * A reshape or any other view of a tensor split along axis a (llama.cpp's K and V cache views,
 * which regroup a cache row into heads, and its "merge heads and head size" view of K and V
 * before they are stored): call the bytes from one index of the axes above a to the next its span. The split
 * carries over when one view axis kb covers exactly one span, every other view axis either stays
 * inside one step of kb or moves by whole spans, and each device's piece starts and ends on a
 * step of kb. The view is then split along kb, and each device takes the same view of its piece
 * with the moves by whole spans scaled to the piece's span.
 */
struct view_map {
    int     axis;                   /* kb */
    size_t  inner_off;              /* the view's offset within one span */
    int64_t outer_off;              /* and in whole spans */
    int64_t outer[GGML_MAX_DIMS];   /* spans a step of each view axis moves; 0 for inner axes */
};

/* bytes from one index of the axes above a to the next, when those axes are dense; 0 otherwise */
static size_t split_span(const struct ggml_tensor * t, int a) {
    size_t run = meta_axis_bytes(t, a, t->ne[a]);
    const size_t span = run;
    for (int j = a + 1; j < GGML_MAX_DIMS; j++) {
        if (t->ne[j] > 1 && t->nb[j] != run) {
            return 0;
        }
        run *= (size_t) t->ne[j];
    }
    return span;
}

static bool view_split(const struct ggml_tensor * src, const struct ggml_tensor * view, const struct meta_split * s,
                       size_t n, struct meta_split * out, struct view_map * m) {
    const int a = s->axis;
    const size_t W = split_span(src, a);
    if (s->n_seg != 1 || W == 0 || (const char *) view->data < (const char *) src->data) {
        return false;
    }
    const size_t o = (size_t) ((const char *) view->data - (const char *) src->data);
    memset(m, 0, sizeof *m);
    m->inner_off = o % W;
    m->outer_off = (int64_t) (o / W);
    m->axis      = -1;
    for (int k = 0; k < GGML_MAX_DIMS; k++) {
        if (view->ne[k] <= 1) {
            continue;
        }
        if (view->nb[k] >= W) {
            if (view->nb[k] % W != 0) {
                return false;
            }
            m->outer[k] = (int64_t) (view->nb[k] / W);
            continue;
        }
        const size_t reach = k == 0 ? ggml_row_size(view->type, view->ne[0]) : view->nb[k] * (size_t) view->ne[k];
        if (reach == W) {
            if (m->axis >= 0) {
                return false;
            }
            m->axis = k;
        }
    }
    if (m->axis < 0) {
        return false;
    }
    const int kb = m->axis;
    const size_t step = kb == 0 ? ggml_type_size(view->type) : view->nb[kb];
    /* how far the offset and the other inner axes reach: within one step of kb */
    size_t reach = m->inner_off + (kb == 0 ? step : ggml_row_size(view->type, view->ne[0]));
    for (int k = 1; k < GGML_MAX_DIMS; k++) {
        if (k != kb && view->ne[k] > 1 && m->outer[k] == 0) {
            reach += view->nb[k] * (size_t) (view->ne[k] - 1);
        }
    }
    if (kb == 0 && (m->inner_off != 0 || reach > step)) {
        return false;
    }
    if (kb != 0 && reach > step) {
        return false;
    }
    *out       = *s;
    out->axis  = kb;
    out->n_seg = 1;
    for (size_t d = 0; d < n; d++) {
        const size_t b_start = meta_axis_bytes(src, a, ggmlx_meta_split_start(s, n, 0, d));
        const size_t b_len   = meta_axis_bytes(src, a, s->len[0][d]);
        if (b_start % step != 0 || b_len % step != 0) {
            return false;
        }
        out->len[0][d] = (int64_t) (b_len / step) * (kb == 0 ? ggml_blck_size(view->type) : 1);
    }
    return true;
}

/* device d's view of its piece sd (of the source src) as m says; false when the piece is laid out otherwise */
static bool view_split_dev(const struct ggml_tensor * src, const struct ggml_tensor * sd, const struct ggml_tensor * view,
                           const struct meta_split * s, const struct view_map * m, int64_t len, int64_t ne[GGML_MAX_DIMS],
                           size_t nb[GGML_MAX_DIMS], char ** data) {
    const int a = s->axis;
    /* a piece is dense (a weight's) or keeps the whole tensor's strides (a compute buffer's): in
       both, the axes above a are dense among themselves and nb[a + 1] is the piece's span */
    const size_t W = a + 1 < GGML_MAX_DIMS ? sd->nb[a + 1] : meta_axis_bytes(sd, a, sd->ne[a]);
    for (int j = a + 2; j < GGML_MAX_DIMS; j++) {
        if (sd->ne[j] > 1 && sd->nb[j] != sd->nb[j - 1] * (size_t) sd->ne[j - 1]) {
            return false;
        }
    }
    for (int j = 0; j < GGML_MAX_DIMS; j++) {
        if (j != a && sd->ne[j] != src->ne[j]) {
            return false;
        }
        if (j >= 1 && j <= a && sd->nb[j] != src->nb[j]) {
            return false;
        }
    }
    for (int k = 0; k < GGML_MAX_DIMS; k++) {
        ne[k] = view->ne[k];
        nb[k] = m->outer[k] > 0 ? (size_t) m->outer[k] * W : view->nb[k];
    }
    ne[m->axis] = len;
    *data = (char *) sd->data + m->inner_off + (size_t) m->outer_off * W;
    return true;
}

static bool view_node(struct pass * p, const struct ggml_tensor * node) {
    struct slot * src = slot_of(p, node->src[0]);
    if (src == NULL) {
        return false;
    }
    /* a copy: new_node_slot below may grow (move) the pool */
    const struct meta_split have_split = p->pool[src->split];
    const struct meta_split * have = &have_split;
    struct meta_split out = *have;
    struct view_map vm;
    bool mapped = false, same = false;
    if (meta_split_is_axis(have)) {
        switch (node->op) {
        case GGML_OP_PERMUTE: {
            int axes[4];
            memcpy(axes, node->op_params, sizeof axes);
            out.axis = axes[have->axis];
            break;
        }
        case GGML_OP_TRANSPOSE:
            out.axis = have->axis == 0 ? 1 : have->axis == 1 ? 0 : have->axis;
            break;
        case GGML_OP_RESHAPE:
            if (!view_split(node->src[0], node, have, p->n, &out, &vm)) {
                return fail(p, GGML_STATUS_FAILED, "reshape '%s' %s cuts through the split of '%s' along axis %d",
                            node->name, GGMLX_SHAPE(node), node->src[0]->name, have->axis);
            }
            mapped = true;
            break;
        default: {
            /* a view keeping everything: the same split */
            const bool whole = node->data == node->src[0]->data && ggml_are_same_shape(node, node->src[0]) &&
                               memcmp(node->nb, node->src[0]->nb, sizeof node->nb) == 0;
            if (!whole && !view_split(node->src[0], node, have, p->n, &out, &vm)) {
                return fail(p, GGML_STATUS_FAILED, "view '%s' %s into '%s', which is split along axis %d, cuts through "
                            "the devices' pieces", node->name, GGMLX_SHAPE(node), node->src[0]->name, have->axis);
            }
            mapped = !whole;
            same   = whole;
        }
        }
    }
    struct slot * sl = new_node_slot(p, node, &out);
    if (sl == NULL) {
        return false;
    }
    sl->node   = false; /* nothing to compute: the devices' views are made right here */
    sl->parent = (int32_t) (src - p->slots);
    src->used  = true;
    for (size_t d = 0; d < p->n; d++) {
        const struct ggml_tensor * sd = src->dev[d];
        int64_t ne[GGML_MAX_DIMS];
        size_t  nb[GGML_MAX_DIMS];
        char  * data = sd->data;
        memcpy(ne, node->ne, sizeof ne);
        memcpy(nb, node->nb, sizeof nb);
        if (same) {
            /* each device's piece as it is: the view's own shape is the whole tensor's */
            memcpy(ne, sd->ne, sizeof ne);
            memcpy(nb, sd->nb, sizeof nb);
        } else if (mapped) {
            if (!view_split_dev(node->src[0], sd, node, have, &vm, out.len[0][d], ne, nb, &data)) {
                return fail(p, GGML_STATUS_FAILED, "view '%s' into '%s': device %zu's piece is not laid out as the view "
                            "needs", node->name, node->src[0]->name, d);
            }
        } else if (node->op == GGML_OP_PERMUTE || node->op == GGML_OP_TRANSPOSE) {
            int axes[4] = { 1, 0, 2, 3 };
            if (node->op == GGML_OP_PERMUTE) {
                memcpy(axes, node->op_params, sizeof axes);
            }
            for (int i = 0; i < GGML_MAX_DIMS; i++) {
                ne[axes[i]] = sd->ne[i];
                nb[axes[i]] = sd->nb[i];
            }
        } else if (!meta_split_is_axis(&out)) {
            /* whole on each device, laid out as in the meta buffer: the same offset from the source */
            data += (const char *) node->data - (const char *) node->src[0]->data;
            if (node->op == GGML_OP_RESHAPE && ggml_is_contiguous(sd) && sd->ne[0] != node->src[0]->ne[0]) {
                return fail(p, GGML_STATUS_FAILED, "internal: reshape of '%s'", node->name);
            }
        }
        sl->dev[d] = dev_tensor(p, d, node, ne, nb, data, sd->buffer);
        if (sl->dev[d] == NULL) {
            return fail(p, GGML_STATUS_FAILED, "out of host memory");
        }
    }
    return true;
}

/* ---- pieces and reductions --------------------------------------------------------------------- */

static bool flush(struct pass * p) {
    if (p->dg[0]->n_nodes == 0) {
        return true;
    }
    for (size_t d = 0; d < p->n; d++) {
        const enum ggml_status st = ggml_backend_graph_compute_async(p->mb->simple[d], p->dg[d]);
        if (st != GGML_STATUS_SUCCESS) {
            return fail(p, st, "device %s refused its part of the graph: %s", ggml_backend_name(p->mb->simple[d]),
                        ggmlx_last_error() ? ggmlx_last_error() : "?");
        }
        p->dg[d]->n_nodes = 0; /* the queue took what it needs (docs/async.md rule 2) */
        p->dg[d]->n_leafs = 0;
    }
    p->mb->stats.n_subgraphs++;
    return true;
}

/* grows the generic all-reduce's temporaries to at least size bytes on every device */
static bool tmp_reserve(struct meta_backend * mb, size_t size) {
    if (mb->tmp_size >= size) {
        return true;
    }
    for (size_t d = 0; d < mb->n; d++) {
        if (mb->tmp[d] != NULL) {
            ggml_backend_synchronize(mb->simple[d]); /* queued adds may still read the old one */
            ggml_backend_buffer_free(mb->tmp[d]);
            mb->tmp[d] = NULL;
        }
    }
    mb->tmp_size = 0;
    for (size_t d = 0; d < mb->n; d++) {
        mb->tmp[d] = ggml_backend_alloc_buffer(mb->simple[d], size);
        if (mb->tmp[d] == NULL) {
            return false;
        }
    }
    mb->tmp_size = size;
    return true;
}

static bool is_partial(const struct pass * p, const struct slot * s) {
    return p->pool[s->split].axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL;
}

/* true when s is root or views it through a chain of view ops */
static bool views_into(const struct pass * p, const struct slot * s, const struct slot * root) {
    for (;;) {
        if (s == root) {
            return true;
        }
        if (s->parent < 0) {
            return false;
        }
        s = &p->slots[s->parent];
    }
}

static bool reduce_slot(struct pass * p, struct slot * sl) {
    /*
     * A view of a partial sum is reduced through the tensor it views, all of it: reducing the
     * view alone would leave the other names of that memory partial, and a later reduction of
     * one of them would add the view's values up a second time.
     */
    while (sl->parent >= 0 && is_partial(p, &p->slots[sl->parent])) {
        sl = &p->slots[sl->parent];
    }
    if (!flush(p)) {
        return false;
    }
    struct meta_backend * mb = p->mb;
    struct ggml_tensor * x[META_MAX];
    for (size_t d = 0; d < p->n; d++) {
        x[d] = sl->dev[d];
        if (!ggml_is_contiguous(x[d])) {
            return fail(p, GGML_STATUS_FAILED, "partial sums of '%s' are not contiguous and cannot be reduced",
                        sl->t->name);
        }
    }
    const size_t bytes = ggml_nbytes(x[0]);
    if (mb->comm_allreduce != NULL && mb->comm_allreduce(mb->comm, x)) {
        mb->stats.n_allreduce_comm++;
    } else if (p->n > 1) {
        if (!tmp_reserve(mb, bytes)) {
            return fail(p, GGML_STATUS_ALLOC_FAILED, "no device memory for the %zu-byte temporaries of a reduction",
                        bytes);
        }
        struct ggml_tensor * tmp[META_MAX];
        for (size_t d = 0; d < p->n; d++) {
            tmp[d] = dev_tensor(p, d, x[d], x[d]->ne, x[d]->nb, ggml_backend_buffer_get_base(mb->tmp[d]), mb->tmp[d]);
            if (tmp[d] == NULL) {
                return fail(p, GGML_STATUS_FAILED, "out of host memory");
            }
        }
        const enum ggml_status st = ggmlx_meta_allreduce_enqueue(mb->simple, x, tmp, p->n);
        if (st != GGML_STATUS_SUCCESS) {
            return fail(p, st, "reducing '%s' failed: %s", sl->t->name, ggmlx_last_error() ? ggmlx_last_error() : "?");
        }
        mb->stats.n_allreduce_generic++;
    }
    mb->stats.bytes_reduced += bytes;
    struct meta_split m;
    memset(&m, 0, sizeof m);
    ggmlx_meta_split_mirrored(&m);
    const int32_t mi = pool_add(p, &m);
    if (mi < 0) {
        return fail(p, GGML_STATUS_FAILED, "out of host memory");
    }
    /* the memory is whole now, under every name of it: the parents that view all of it, and
     * every view made of it so far */
    for (struct slot * s = sl;; s = &p->slots[s->parent]) {
        s->split = mi;
        if (s->parent < 0 || ggml_nbytes(p->slots[s->parent].t) != ggml_nbytes(s->t)) {
            break;
        }
    }
    for (size_t i = 0; i < p->n_slots; i++) {
        if (is_partial(p, &p->slots[i]) && views_into(p, &p->slots[i], sl)) {
            p->slots[i].split = mi;
        }
    }
    return true;
}

/* ---- computing nodes ------------------------------------------------------------------------- */

static struct ggml_tensor * root_of(const struct ggml_tensor * t) {
    return t->view_src != NULL ? t->view_src : (struct ggml_tensor *) t;
}

static bool compute_node(struct pass * p, const struct ggml_tensor * node) {
    struct meta_rule_result r;
    struct slot * srcs[GGML_MAX_SRC] = { 0 };
    for (int tries = 0;; tries++) {
        const struct meta_split * ss[GGML_MAX_SRC] = { 0 };
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (node->src[j] == NULL) {
                continue;
            }
            srcs[j] = slot_of(p, node->src[j]);
            if (srcs[j] == NULL) {
                return false;
            }
            srcs[j]->used = true;
            ss[j] = &p->pool[srcs[j]->split];
        }
        const enum meta_rule rr = ggmlx_meta_rule_apply(node, ss, p->n, &r);
        if (rr == META_RULE_OK) {
            break;
        }
        if (rr == META_RULE_REFUSE || tries > GGML_MAX_SRC) {
            return fail(p, GGML_STATUS_FAILED, "%s", r.why[0] ? r.why : "unsupported split");
        }
        if (!reduce_slot(p, srcs[r.reduce_src])) {
            return false;
        }
    }

    /* a node writing into another tensor's memory must keep that tensor's split */
    const struct slot * alias = NULL;
    if (node->view_src != NULL) {
        for (int j = 0; j < GGML_MAX_SRC && alias == NULL; j++) {
            if (srcs[j] != NULL && root_of(node->src[j]) == node->view_src) {
                alias = srcs[j];
            }
        }
        if (alias == NULL) {
            return fail(p, GGML_STATUS_FAILED, "'%s' writes into '%s', which is none of its sources", node->name,
                        node->view_src->name);
        }
        if (!ggmlx_meta_split_equal(&p->pool[alias->split], &r.out, p->n)) {
            return fail(p, GGML_STATUS_FAILED, "'%s' would leave '%s' split as %s, but it is %s", node->name,
                        node->view_src->name, ggml_backend_meta_split_axis_name(r.out.axis),
                        ggml_backend_meta_split_axis_name(p->pool[alias->split].axis));
        }
    }

    struct slot * sl = new_node_slot(p, node, &r.out);
    if (sl == NULL) {
        return false;
    }
    for (size_t d = 0; d < p->n; d++) {
        struct meta_dev_view v;
        if (alias != NULL) {
            const struct ggml_tensor * ad = alias->dev[d];
            memcpy(v.ne, ad->ne, sizeof v.ne);
            memcpy(v.nb, ad->nb, sizeof v.nb);
            v.data   = (char *) ad->data + ((const char *) node->data - (const char *) alias->t->data);
            v.buffer = ad->buffer;
            if (!ggml_are_same_shape(node, alias->t)) {
                /* a CPY into part of a tensor: only whole (unsplit) tensors reach here */
                memcpy(v.ne, node->ne, sizeof v.ne);
                memcpy(v.nb, node->nb, sizeof v.nb);
            }
        } else if (!ggmlx_meta_buffer_dev_view(node, &r.out, d, &v)) {
            return fail(p, GGML_STATUS_FAILED, "cannot place '%s' on device %zu", node->name, d);
        }
        struct ggml_tensor * t = dev_tensor(p, d, node, v.ne, v.nb, v.data, v.buffer);
        if (t == NULL) {
            return fail(p, GGML_STATUS_FAILED, "out of host memory");
        }
        t->op = node->op;
        memcpy(t->op_params, node->op_params, sizeof t->op_params);
        t->flags = node->flags | GGML_TENSOR_FLAG_COMPUTE;
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (srcs[j] != NULL) {
                t->src[j] = dev_as(p, srcs[j], &r.want[j], d);
                if (t->src[j] == NULL) {
                    return fail(p, GGML_STATUS_FAILED, "out of host memory");
                }
            }
        }
        sl->dev[d] = t;
        struct ggml_cgraph * dg = p->dg[d];
        dg->nodes[dg->n_nodes++] = t;
    }
    return true;
}

static bool is_view_op(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE;
}

enum ggml_status ggmlx_meta_graph_compute(struct meta_backend * mb, struct ggml_cgraph * g) {
    struct pass p;
    memset(&p, 0, sizeof p);
    p.mb     = mb;
    p.n      = mb->n;
    p.g      = g;
    p.func   = "ggml_backend_graph_compute";
    p.status = GGML_STATUS_SUCCESS;

    size_t refs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            refs += g->nodes[i]->src[j] != NULL;
        }
    }
    p.cap_slots = (size_t) g->n_nodes + refs + 1;
    p.slots = malloc(p.cap_slots * sizeof *p.slots);
    if (p.slots == NULL || !ggmlx_ptr_map_reset(&p.map, p.cap_slots)) {
        fail(&p, GGML_STATUS_FAILED, "out of host memory");
        goto out;
    }
    const size_t mem = ((size_t) g->n_nodes * 2 + 2 * refs + 64) * ggml_tensor_overhead() +
                       ggml_graph_overhead_custom((size_t) g->n_nodes + 1, false);
    for (size_t d = 0; d < p.n; d++) {
        struct ggml_init_params ip = { mem, NULL, true };
        p.ctx[d] = ggml_init(ip);
        p.dg[d]  = p.ctx[d] ? ggml_new_graph_custom(p.ctx[d], (size_t) g->n_nodes + 1, false) : NULL;
        if (p.dg[d] == NULL) {
            fail(&p, GGML_STATUS_FAILED, "out of host memory");
            goto out;
        }
    }

    for (int i = 0; i < g->n_nodes; i++) {
        const struct ggml_tensor * node = g->nodes[i];
        if (ggml_is_empty(node) || node->op == GGML_OP_NONE) {
            continue;
        }
        const bool ok = is_view_op(node->op) ? view_node(&p, node) : compute_node(&p, node);
        if (!ok) {
            goto out;
        }
    }
    /* partial sums nobody in this graph consumed are results: make them whole */
    for (size_t k = 0; k < p.n_slots; k++) {
        struct slot * sl = &p.slots[k];
        if (sl->node && p.pool[sl->split].axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL &&
            (!sl->used || (sl->t->flags & GGML_TENSOR_FLAG_OUTPUT))) {
            if (!reduce_slot(&p, sl)) {
                goto out;
            }
        }
    }
    if (!flush(&p)) {
        goto out;
    }
    /* remember where the results are, for reads and for the next graph */
    for (size_t k = 0; k < p.n_slots; k++) {
        const struct slot * sl = &p.slots[k];
        if (sl->node && sl->t->view_src == NULL && !ggmlx_meta_buffer_set_split(sl->t, &p.pool[sl->split])) {
            fail(&p, GGML_STATUS_FAILED, "out of host memory");
            goto out;
        }
    }
    mb->stats.n_graphs++;
out:
    for (size_t d = 0; d < p.n; d++) {
        ggml_free(p.ctx[d]);
    }
    free(p.slots);
    free(p.pool);
    ggmlx_ptr_map_free(&p.map);
    return p.status;
}
