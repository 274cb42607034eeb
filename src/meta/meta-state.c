/*
 * meta-state.c -- how split states travel through ops: for a node whose sources are split a
 * certain way, where its result is and how each source must be handed to the devices' kernels.
 * A MIRRORED source can be handed as any split (each device looks at its part). PARTIAL sums
 * travel only through ops that are linear in them; anything else asks for a reduction first.
 * docs/multi-gpu.md lists the rules.
 */
#include "meta-impl.h"

#include <stdio.h>
#include <string.h>

bool ggmlx_meta_can_view_as(const struct ggml_tensor * t, const struct meta_split * have, const struct meta_split * want,
                            size_t n_devs) {
    if (ggmlx_meta_split_equal(have, want, n_devs)) {
        return true;
    }
    if (have->axis != GGML_BACKEND_SPLIT_AXIS_MIRRORED || !meta_split_is_axis(want) || want->n_seg != 1) {
        return false;
    }
    int64_t total = 0;
    for (size_t d = 0; d < n_devs; d++) {
        total += want->len[0][d];
    }
    return t->ne[want->axis] == total;
}

/*
 * How source t (split have) is given to an op whose result is split as lead, along the same
 * axis: as lead (its own split, or a view of each device's part of a mirrored tensor), or whole
 * when it is broadcast along that axis. False when neither works.
 */
static bool want_like(const struct ggml_tensor * t, const struct meta_split * have, const struct meta_split * lead,
                      size_t n_devs, struct meta_split * want) {
    if (!meta_split_is_axis(lead)) {
        if (have->axis != lead->axis) {
            return false;
        }
        *want = *have;
        return true;
    }
    if (ggmlx_meta_can_view_as(t, have, lead, n_devs)) {
        *want = *lead;
        return true;
    }
    if (have->axis == GGML_BACKEND_SPLIT_AXIS_MIRRORED && t->ne[lead->axis] == 1) {
        *want = *have; /* broadcast along the split axis: every device needs the whole (single) slice */
        return true;
    }
    return false;
}

static enum meta_rule refuse(struct meta_rule_result * r, const struct ggml_tensor * node, const char * what) {
    snprintf(r->why, sizeof r->why, "%s ('%s'): %s", ggml_op_desc(node), node->name, what);
    return META_RULE_REFUSE;
}

static enum meta_rule reduce_first(struct meta_rule_result * r, int j) {
    r->reduce_src = j;
    return META_RULE_REDUCE;
}

static bool is_partial(const struct meta_split * s) { return s != NULL && s->axis == GGML_BACKEND_SPLIT_AXIS_PARTIAL; }
static bool is_mirrored(const struct meta_split * s) { return s->axis == GGML_BACKEND_SPLIT_AXIS_MIRRORED; }

/* the result takes the split of the first source split along an axis; the others follow it */
static enum meta_rule follow_leader(const struct ggml_tensor * node, const struct meta_split * const * src,
                                    size_t n_devs, struct meta_rule_result * r) {
    const struct meta_split * lead = NULL;
    int lead_j = -1;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (src[j] != NULL && meta_split_is_axis(src[j])) {
            lead   = src[j];
            lead_j = j;
            break;
        }
    }
    if (lead == NULL) {
        ggmlx_meta_split_mirrored(&r->out);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            if (src[j] != NULL) {
                r->want[j] = *src[j];
            }
        }
        return META_RULE_OK;
    }
    if (node->src[lead_j]->ne[lead->axis] != node->ne[lead->axis] || lead->n_seg != 1) {
        return refuse(r, node, "a source split along an axis the result does not share");
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (src[j] != NULL && !want_like(node->src[j], src[j], lead, n_devs, &r->want[j])) {
            return refuse(r, node, "its sources are split in ways that do not match");
        }
    }
    r->out = *lead;
    return META_RULE_OK;
}

static bool row_op(enum ggml_op op) {
    switch (op) {
    case GGML_OP_NORM: case GGML_OP_RMS_NORM: case GGML_OP_L2_NORM: case GGML_OP_SOFT_MAX:
    case GGML_OP_ROPE: case GGML_OP_ARGSORT: case GGML_OP_TOP_K: case GGML_OP_SUM_ROWS: case GGML_OP_MEAN:
    case GGML_OP_ARGMAX: case GGML_OP_CUMSUM:
        return true;
    default:
        return false;
    }
}

static bool elementwise_op(const struct ggml_tensor * node) {
    switch (node->op) {
    case GGML_OP_ADD: case GGML_OP_SUB: case GGML_OP_MUL: case GGML_OP_DIV: case GGML_OP_SCALE:
    case GGML_OP_UNARY: case GGML_OP_SQR: case GGML_OP_SQRT: case GGML_OP_LOG: case GGML_OP_SIN: case GGML_OP_COS:
    case GGML_OP_CLAMP: case GGML_OP_LEAKY_RELU: case GGML_OP_DUP: case GGML_OP_CONT: case GGML_OP_CPY:
        return true;
    case GGML_OP_GLU:
        return node->src[1] != NULL; /* the two-input form; the fused one splits each row in halves */
    default:
        return false;
    }
}

/* ops whose result is linear in a PARTIAL first source (with the other sources whole) */
static bool linear_in_src0(enum ggml_op op) {
    switch (op) {
    case GGML_OP_SCALE: case GGML_OP_DUP: case GGML_OP_CONT: case GGML_OP_CPY: case GGML_OP_MUL: case GGML_OP_DIV:
    case GGML_OP_GET_ROWS: case GGML_OP_MUL_MAT: case GGML_OP_SUM_ROWS: case GGML_OP_MEAN:
        return true;
    default:
        return false;
    }
}

static enum meta_rule rule_partial(const struct ggml_tensor * node, const struct meta_split * const * src,
                                   struct meta_rule_result * r) {
    /* ADD/SUB of two partial sums is a partial sum */
    if ((node->op == GGML_OP_ADD || node->op == GGML_OP_SUB) && is_partial(src[0]) && is_partial(src[1])) {
        ggmlx_meta_split_mirrored(&r->out);
        r->out.axis = GGML_BACKEND_SPLIT_AXIS_PARTIAL;
        r->want[0] = *src[0];
        r->want[1] = *src[1];
        return META_RULE_OK;
    }
    if (is_partial(src[0]) && linear_in_src0(node->op) && node->op != GGML_OP_MUL_MAT) {
        for (int j = 1; j < GGML_MAX_SRC; j++) {
            if (src[j] != NULL && !is_mirrored(src[j])) {
                return reduce_first(r, 0);
            }
            if (src[j] != NULL) {
                r->want[j] = *src[j];
            }
        }
        if (node->op == GGML_OP_CPY) {
            return reduce_first(r, 0); /* the destination tensor is not partial */
        }
        r->out     = *src[0];
        r->want[0] = *src[0];
        return META_RULE_OK;
    }
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (is_partial(src[j])) {
            return reduce_first(r, j);
        }
    }
    return META_RULE_REFUSE;
}

static void set_axis(struct meta_split * s, int axis, const struct meta_split * lens_from) {
    *s      = *lens_from;
    s->axis = axis;
}

static enum meta_rule rule_mul_mat(const struct ggml_tensor * node, const struct meta_split * const * src,
                                   size_t n_devs, struct meta_rule_result * r) {
    const struct ggml_tensor * a = node->src[0], * b = node->src[1];
    const struct meta_split * sa = src[0], * sb = src[1];
    if (is_partial(sa) || is_partial(sb)) {
        const struct meta_split * other = is_partial(sa) ? sb : sa;
        if (is_partial(sa) && is_partial(sb)) {
            return reduce_first(r, 1);
        }
        if (!is_mirrored(other)) {
            return reduce_first(r, is_partial(sa) ? 0 : 1);
        }
        r->want[0] = *sa;
        r->want[1] = *sb;
        ggmlx_meta_split_mirrored(&r->out);
        r->out.axis = GGML_BACKEND_SPLIT_AXIS_PARTIAL;
        return META_RULE_OK;
    }
    if (is_mirrored(sa) && is_mirrored(sb)) {
        r->want[0] = *sa;
        r->want[1] = *sb;
        r->out     = *sa;
        return META_RULE_OK;
    }
    if ((meta_split_is_axis(sa) && sa->n_seg != 1) || (meta_split_is_axis(sb) && sb->n_seg != 1)) {
        return refuse(r, node, "a source split in several segments (only weights used by a mirrored product may be)");
    }
    /* split along the summed axis 0: each device's product is a partial sum */
    if (sa->axis == 0 || sb->axis == 0) {
        const struct meta_split * lead = sa->axis == 0 ? sa : sb;
        if (!ggmlx_meta_can_view_as(a, sa, lead, n_devs) || !ggmlx_meta_can_view_as(b, sb, lead, n_devs)) {
            return refuse(r, node, "its sources are split differently along the summed axis");
        }
        r->want[0] = *lead;
        r->want[1] = *lead;
        ggmlx_meta_split_mirrored(&r->out);
        r->out.axis = GGML_BACKEND_SPLIT_AXIS_PARTIAL;
        return META_RULE_OK;
    }
    /* a's rows become the result's axis 0, b's rows its axis 1 */
    if (sa->axis == 1 && is_mirrored(sb)) {
        r->want[0] = *sa;
        r->want[1] = *sb;
        set_axis(&r->out, 0, sa);
        return META_RULE_OK;
    }
    if (sb->axis == 1 && is_mirrored(sa)) {
        r->want[0] = *sa;
        r->want[1] = *sb;
        set_axis(&r->out, 1, sb);
        return META_RULE_OK;
    }
    /* batch axes: b's batch i uses a's batch i / ratio, so a device's share of a scales by the ratio */
    for (int ax = 2; ax <= 3; ax++) {
        if (sa->axis != ax && sb->axis != ax) {
            continue;
        }
        const int64_t ratio = a->ne[ax] > 0 ? b->ne[ax] / a->ne[ax] : 0;
        if (ratio < 1) {
            return refuse(r, node, "a batch split with no whole ratio between the sources");
        }
        struct meta_split lead_b, lead_a;
        if (sb->axis == ax) {
            lead_b = *sb;
        } else {
            lead_b = *sa;
            for (size_t d = 0; d < n_devs; d++) {
                lead_b.len[0][d] = sa->len[0][d] * ratio;
            }
        }
        lead_a = lead_b;
        for (size_t d = 0; d < n_devs; d++) {
            if (lead_b.len[0][d] % ratio != 0) {
                return refuse(r, node, "a batch split that cuts through a broadcast group");
            }
            lead_a.len[0][d] = lead_b.len[0][d] / ratio;
        }
        const bool a_ok = ggmlx_meta_can_view_as(a, sa, &lead_a, n_devs) || (is_mirrored(sa) && a->ne[ax] == 1);
        const bool b_ok = ggmlx_meta_can_view_as(b, sb, &lead_b, n_devs);
        if (!a_ok || !b_ok) {
            return refuse(r, node, "its sources are split differently along a batch axis");
        }
        r->want[0] = is_mirrored(sa) && a->ne[ax] == 1 ? *sa : lead_a;
        r->want[1] = lead_b;
        r->out     = lead_b;
        return META_RULE_OK;
    }
    return refuse(r, node, "this combination of source splits is not supported");
}

/*
 * Attention split by head (q, k and v split along axis 2, as llama.cpp's tensor split mode
 * does): each device attends with its own query heads over its own K/V heads, so every
 * device's query heads must be a whole group of its K/V heads, in order. The result has its
 * heads along axis 1. The mask goes whole; the sinks (one per query head) follow the query
 * heads. ALiBi slopes depend on the global head index, so a split with max_bias is refused.
 */
static enum meta_rule rule_flash_attn(const struct ggml_tensor * node, const struct meta_split * const * src,
                                      size_t n_devs, struct meta_rule_result * r) {
    const struct meta_split * sq = src[0], * sk = src[1], * sv = src[2];
    if (!meta_split_is_axis(sq) && !meta_split_is_axis(sk) && !meta_split_is_axis(sv)) {
        return META_RULE_REFUSE; /* all whole: the generic rule */
    }
    float max_bias;
    memcpy(&max_bias, (const float *) node->op_params + 1, sizeof max_bias);
    if (sq->axis != 2 || sk->axis != 2 || sv->axis != 2 || sq->n_seg != 1 || sk->n_seg != 1 || sv->n_seg != 1 ||
        !ggmlx_meta_split_equal(sk, sv, n_devs)) {
        return refuse(r, node, "q, k and v can be split only along axis 2 (by head), k and v alike");
    }
    if (max_bias != 0.0f) {
        return refuse(r, node, "ALiBi slopes depend on the global head index; split by head it would change them");
    }
    const int64_t group = node->src[1]->ne[2] > 0 ? node->src[0]->ne[2] / node->src[1]->ne[2] : 0;
    for (size_t d = 0; d < n_devs; d++) {
        if (sq->len[0][d] != group * sk->len[0][d]) {
            return refuse(r, node, "a device's query heads are not the groups of its K/V heads");
        }
    }
    r->want[0] = *sq;
    r->want[1] = *sk;
    r->want[2] = *sv;
    if (src[3] != NULL) {
        if (!is_mirrored(src[3]) || (node->src[3]->ne[2] != 1)) {
            return refuse(r, node, "the mask must be whole and the same for every head");
        }
        r->want[3] = *src[3];
    }
    if (src[4] != NULL) {
        struct meta_split want;
        set_axis(&want, 0, sq);
        if (!ggmlx_meta_can_view_as(node->src[4], src[4], &want, n_devs)) {
            return refuse(r, node, "the sinks are not split as the query heads");
        }
        r->want[4] = want;
    }
    set_axis(&r->out, 1, sq);
    return META_RULE_OK;
}

enum meta_rule ggmlx_meta_rule_apply(const struct ggml_tensor * node, const struct meta_split * const * src, size_t n_devs,
                                     struct meta_rule_result * r) {
    memset(r->why, 0, sizeof r->why);
    r->reduce_src = -1;
    bool any_partial = false;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        any_partial |= is_partial(src[j]);
    }
    if (node->op == GGML_OP_MUL_MAT) {
        return rule_mul_mat(node, src, n_devs, r);
    }
    if (node->op == GGML_OP_FLASH_ATTN_EXT && !any_partial) {
        const enum meta_rule rr = rule_flash_attn(node, src, n_devs, r);
        if (rr != META_RULE_REFUSE || r->why[0] != '\0') {
            return rr;
        }
    }
    if (any_partial) {
        const enum meta_rule rr = rule_partial(node, src, r);
        return rr == META_RULE_REFUSE ? refuse(r, node, "partial sums cannot go through this op") : rr;
    }
    if (elementwise_op(node)) {
        return follow_leader(node, src, n_devs, r);
    }
    if (node->op == GGML_OP_GLU || row_op(node->op)) {
        if (src[0]->axis == 0) {
            return refuse(r, node, "it works on whole rows, and its source is split along axis 0");
        }
        if (node->op == GGML_OP_ROPE && src[0]->axis == 2) {
            return refuse(r, node, "positions are per axis-2 element, and its source is split along axis 2");
        }
        if (meta_split_is_axis(src[0]) && node->ne[src[0]->axis] != node->src[0]->ne[src[0]->axis]) {
            return refuse(r, node, "the result does not keep the split axis");
        }
        /* secondary sources (masks, positions, factors) go whole unless they match the split */
        for (int j = 1; j < GGML_MAX_SRC; j++) {
            if (src[j] == NULL) {
                continue;
            }
            if (node->op == GGML_OP_ROPE || !meta_split_is_axis(src[0])) {
                if (!is_mirrored(src[j])) {
                    return refuse(r, node, "a secondary source is split");
                }
                r->want[j] = *src[j];
            } else if (!want_like(node->src[j], src[j], src[0], n_devs, &r->want[j])) {
                return refuse(r, node, "a secondary source does not match the split");
            }
        }
        r->want[0] = *src[0];
        r->out     = *src[0];
        return META_RULE_OK;
    }
    if (node->op == GGML_OP_GET_ROWS) {
        if (!is_mirrored(src[1]) || (meta_split_is_axis(src[0]) && src[0]->axis != 0)) {
            return refuse(r, node, "rows can be taken from a table split along axis 0 or whole, by whole indices");
        }
        r->want[0] = *src[0];
        r->want[1] = *src[1];
        r->out     = *src[0];
        return META_RULE_OK;
    }
    if (node->op == GGML_OP_SET_ROWS && src[2] != NULL && (meta_split_is_axis(src[0]) || meta_split_is_axis(src[2]))) {
        /* rows (source 0, by the whole indices of source 1) written into the table (source 2)
           split within its rows, as llama.cpp's KV cache is split by head: each device writes
           its part of every row. Whole rows are handed as the table's split, like any mirrored
           source; a table split by rows would need the indices sorted out per device. */
        if (src[2]->axis != 0 || src[2]->n_seg != 1 || !is_mirrored(src[1]) ||
            !ggmlx_meta_can_view_as(node->src[0], src[0], src[2], n_devs)) {
            return refuse(r, node, "a table can be written split only along axis 0, from rows split as it or whole, "
                                   "by whole indices");
        }
        r->want[0] = *src[2];
        r->want[1] = *src[1];
        r->want[2] = *src[2];
        r->out     = *src[2];
        return META_RULE_OK;
    }
    /* anything else runs on every device with whole sources */
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (src[j] != NULL && !is_mirrored(src[j])) {
            return refuse(r, node, "this op runs split only with whole (mirrored) sources");
        }
        if (src[j] != NULL) {
            r->want[j] = *src[j];
        }
    }
    ggmlx_meta_split_mirrored(&r->out);
    return META_RULE_OK;
}
