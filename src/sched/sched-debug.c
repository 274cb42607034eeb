/*
 * sched-debug.c -- GGML_SCHED_DEBUG printing: =1 one line per split with the inputs it copies,
 * =2 also every node with its backend and why it went there (enum sched_cause).
 *
 * Printed at INFO so the default logger shows it; a long line goes out as one INFO piece and
 * CONT pieces, because the logger cuts a single message at 1 KiB.
 */
#include "sched-impl.h"
#include "ggml-impl.h"

const char * ggmlx_sched_cause_name(enum sched_cause cause) {
    switch (cause) {
        case CAUSE_NONE:       return "none";
        case CAUSE_USER:       return "user";
        case CAUSE_BUFFER:     return "buffer";
        case CAUSE_INPUT:      return "input";
        case CAUSE_WEIGHT:     return "weight";
        case CAUSE_OFFLOAD:    return "offload";
        case CAUSE_EXPAND_GPU: return "expand-gpu";
        case CAUSE_EXPAND:     return "expand";
        case CAUSE_SOURCES:    return "sources";
        case CAUSE_UPGRADE:    return "upgrade";
        case CAUSE_VIEW:       return "view";
        case CAUSE_FALLBACK:   return "fallback";
    }
    return "?";
}

static const char * backend_name(const struct ggml_backend_sched * sched, int id) {
    if (id < 0 || id >= sched->n_backends || sched->backends[id] == NULL) {
        return "-";
    }
    return ggml_backend_name(sched->backends[id]);
}

/* "512B", "4.0K", "3.2M", "1.5G": short enough for a column */
static const char * fmt_size(size_t n, char * buf, size_t size) {
    static const char units[] = "BKMGT";
    double v = (double) n;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) {
        snprintf(buf, size, "%zuB", n);
    } else {
        snprintf(buf, size, "%.1f%c", v, units[u]);
    }
    return buf;
}

/* the split state of t, NULL when t was not part of the graph last split */
static const struct sched_tinfo * tinfo_of(const struct ggml_backend_sched * sched, const struct ggml_tensor * t) {
    const int32_t slot = sched->tinfo != NULL ? ggmlx_sched_find(sched, t) : -1;
    if (slot < 0) {
        return NULL;
    }
    return &sched->tinfo[slot];
}

static const char * tensor_name(const struct ggml_tensor * t) {
    return t != NULL && t->name[0] != '\0' ? t->name : "(unnamed)";
}

static void print_split(const struct ggml_backend_sched * sched, int i) {
    const struct sched_split * sp = &sched->splits[i];
    char size[32];
    ggmlx_log(GGML_LOG_LEVEL_INFO, "## SPLIT #%d: %s # %d inputs, nodes %d..%d", i, backend_name(sched, sp->backend),
              sp->n_inputs, sp->i_start, sp->i_end - 1);
    if (sched->inputs != NULL && sp->input_begin >= 0 && sp->input_begin + sp->n_inputs <= sched->n_inputs) {
        for (int k = 0; k < sp->n_inputs; k++) {
            const struct sched_input * in = &sched->inputs[sp->input_begin + k];
            const struct ggml_tensor * t = in->src != NULL ? in->src : in->dst;
            ggmlx_log(GGML_LOG_LEVEL_CONT, "%s[%s (%s) from %s]", k == 0 ? ": " : " ", tensor_name(t),
                      t != NULL ? fmt_size(ggml_nbytes(t), size, sizeof size) : "?", backend_name(sched, in->src_backend));
        }
    }
    ggmlx_log(GGML_LOG_LEVEL_CONT, "\n");
}

static void print_node(const struct ggml_backend_sched * sched, int i, const struct ggml_tensor * node) {
    const struct sched_tinfo * ti = tinfo_of(sched, node);
    const int id = ggmlx_sched_tensor_backend_id(sched, node);
    ggmlx_log(GGML_LOG_LEVEL_INFO, "node #%3d (%10.10s) %-20.20s: %-8s [%s]", i, ggml_op_desc(node), tensor_name(node),
              backend_name(sched, id), ti != NULL ? ggmlx_sched_cause_name((enum sched_cause) ti->cause) : "-");
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        const struct ggml_tensor * s = node->src[j];
        if (s == NULL) {
            continue;
        }
        const struct sched_tinfo * si = tinfo_of(sched, s);
        ggmlx_log(GGML_LOG_LEVEL_CONT, " %s [%s %s]", tensor_name(s),
                  backend_name(sched, ggmlx_sched_tensor_backend_id(sched, s)),
                  si != NULL ? ggmlx_sched_cause_name((enum sched_cause) si->cause) : "-");
    }
    ggmlx_log(GGML_LOG_LEVEL_CONT, "\n");
}

void ggmlx_sched_print_splits(const struct ggml_backend_sched * sched) {
    if (sched == NULL || sched->splits == NULL || sched->n_splits <= 0) {
        return;
    }
    const struct ggml_cgraph * g = sched->graph;
    for (int i = 0; i < sched->n_splits; i++) {
        print_split(sched, i);
        if (sched->debug < 2 || g == NULL) {
            continue;
        }
        const struct sched_split * sp = &sched->splits[i];
        for (int n = sp->i_start < 0 ? 0 : sp->i_start; n < sp->i_end && n < g->n_nodes; n++) {
            if (g->nodes[n] != NULL) {
                print_node(sched, n, g->nodes[n]);
            }
        }
    }
}
