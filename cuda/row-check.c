/*
 * row-check.c -- remembering enqueued rows nodes and decoding the error word (row-check.h).
 */
#include "row-check.h"

#include "ggml-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void ggmlx_row_check_reset(struct ggmlx_row_check * rc) {
    rc->epoch   = 0;
    rc->n_nodes = 0;
}

static bool is_rows(const struct ggml_tensor * node) {
    return (node->op == GGML_OP_GET_ROWS || node->op == GGML_OP_SET_ROWS) && !ggml_is_empty(node);
}

/* the bound the kernels check indices against: the rows of what is read or written */
static int64_t row_limit(const struct ggml_tensor * node) {
    return node->op == GGML_OP_GET_ROWS ? node->src[0]->ne[1] : node->ne[1];
}

int ggmlx_row_check_add(struct ggmlx_row_check * rc, const struct ggml_cgraph * graph) {
    bool any = false;
    for (int i = 0; i < graph->n_nodes; i++) {
        const struct ggml_tensor * node = graph->nodes[i];
        if (!is_rows(node)) {
            continue;
        }
        if (!any) {
            any = true;
            rc->epoch++;
        }
        /* a full table still counts the epoch: the record then lacks only the name */
        if (rc->n_nodes < GGMLX_ROW_CHECK_NODES) {
            struct ggmlx_row_node * e = &rc->nodes[rc->n_nodes++];
            e->epoch = rc->epoch;
            e->node  = i;
            e->op    = node->op;
            e->limit = row_limit(node);
            snprintf(e->name, sizeof e->name, "%s", node->name);
        }
    }
    return any ? rc->epoch : 0;
}

bool ggmlx_row_check_pending(const struct ggmlx_row_check * rc) {
    return rc->epoch > 0;
}

static const struct ggmlx_row_node * find(const struct ggmlx_row_check * rc, int64_t epoch, int64_t node) {
    for (int i = 0; i < rc->n_nodes; i++) {
        if (rc->nodes[i].epoch == epoch && rc->nodes[i].node == node) {
            return &rc->nodes[i];
        }
    }
    return NULL;
}

bool ggmlx_row_check_decode(const struct ggmlx_row_check * rc, const int64_t word[GGMLX_ROW_ERR_SLOTS], char * msg,
                            size_t msg_size) {
    if (word[GGMLX_ROW_ERR_CLAIM] == 0) {
        return false;
    }
    const int64_t v = word[GGMLX_ROW_ERR_VALUE];
    const int64_t p0 = word[GGMLX_ROW_ERR_POS0], p1 = word[GGMLX_ROW_ERR_POS1], p2 = word[GGMLX_ROW_ERR_POS2];
    const struct ggmlx_row_node * e = find(rc, word[GGMLX_ROW_ERR_AT], word[GGMLX_ROW_ERR_NODE]);
    if (e == NULL) {
        snprintf(msg, msg_size, "node %" PRId64 " of the compute %" PRId64 " since the last synchronize (name not kept: "
                 "more than %d rows nodes were queued): row index %" PRId64 " at [%" PRId64 ", %" PRId64 ", %" PRId64
                 "] is out of range", word[GGMLX_ROW_ERR_NODE], word[GGMLX_ROW_ERR_AT], GGMLX_ROW_CHECK_NODES, v, p0,
                 p1, p2);
        return true;
    }
    snprintf(msg, msg_size, "%s (%s): row index %" PRId64 " at [%" PRId64 ", %" PRId64 ", %" PRId64
             "] is out of range 0..%" PRId64, e->name, ggml_op_name(e->op), v, p0, p1, p2, e->limit - 1);
    return true;
}
