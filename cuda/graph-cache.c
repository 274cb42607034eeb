/*
 * graph-cache.c -- signatures of computes and the replay decision (graph-cache.h). Plain C: the
 * tests include this file directly.
 */
#include "graph-cache.h"

#include "ggml-impl.h"

#include <stdlib.h>
#include <string.h>

#define OP_PARAM_WORDS (GGML_MAX_OP_PARAMS / sizeof(uint64_t))
/* upper bound of the words one node adds */
#define NODE_WORDS     (3 + 2 * GGML_MAX_DIMS + OP_PARAM_WORDS + 1 + GGML_MAX_SRC * (2 + 2 * GGML_MAX_DIMS))

bool ggmlx_cuda_graphs_disabled(const char * env) {
    return env != NULL;
}

void ggmlx_cuda_graph_cache_init(struct ggmlx_cuda_graph_cache * c, void (*destroy)(void * exec, void * user),
                                 void * user) {
    memset(c, 0, sizeof *c);
    c->destroy = destroy;
    c->user    = user;
}

static void drop_exec(struct ggmlx_cuda_graph_cache * c, struct ggmlx_cuda_graph_entry * e) {
    if (e->exec != NULL && c->destroy != NULL) {
        c->destroy(e->exec, c->user);
    }
    e->exec  = NULL;
    e->ready = false;
}

void ggmlx_cuda_graph_cache_free(struct ggmlx_cuda_graph_cache * c) {
    for (int i = 0; i < GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        drop_exec(c, &c->entries[i]);
        free(c->entries[i].sig);
    }
    free(c->work);
    memset(c, 0, sizeof *c);
}

/* ---- signatures ---------------------------------------------------------------------------- */

static size_t put_shape(uint64_t * w, const struct ggml_tensor * t) {
    size_t n = 0;
    w[n++] = (uint64_t) (uintptr_t) t->data;
    w[n++] = (uint64_t) t->type;
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        w[n++] = (uint64_t) t->ne[d];
        w[n++] = (uint64_t) t->nb[d];
    }
    return n;
}

/*
 * Everything a launcher may read from a node to decide what to launch: whatever it reads is
 * baked into a captured graph, so all of it must be equal for a replay. The words are written
 * one by one, never as structs, so no padding byte takes part in the comparison.
 */
static size_t put_node(uint64_t * w, const struct ggml_tensor * t) {
    size_t n = put_shape(w, t);
    w[n++] = (uint64_t) t->op | (uint64_t) (uint32_t) t->flags << 32;
    uint64_t params[OP_PARAM_WORDS];
    memcpy(params, t->op_params, sizeof params);
    for (size_t i = 0; i < OP_PARAM_WORDS; i++) {
        w[n++] = params[i];
    }
    const size_t mask_at = n++;
    uint64_t     mask    = 0;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (t->src[j] != NULL) {
            mask |= (uint64_t) 1 << j;
            n += put_shape(w + n, t->src[j]);
        }
    }
    w[mask_at] = mask;
    return n;
}

/* false when there is no host memory for it */
static bool build_sig(struct ggmlx_cuda_graph_cache * c, const struct ggml_cgraph * g,
                      const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA], size_t * n_words) {
    const size_t need = GGMLX_CUDA_GRAPH_EXTRA + 1 + (size_t) g->n_nodes * NODE_WORDS;
    if (need > c->work_cap) {
        uint64_t * w = realloc(c->work, need * sizeof *w);
        if (w == NULL) {
            return false;
        }
        c->work     = w;
        c->work_cap = need;
    }
    size_t n = 0;
    for (int i = 0; i < GGMLX_CUDA_GRAPH_EXTRA; i++) {
        c->work[n++] = extra[i];
    }
    c->work[n++] = (uint64_t) g->n_nodes;
    for (int i = 0; i < g->n_nodes; i++) {
        n += put_node(c->work + n, g->nodes[i]);
    }
    *n_words = n;
    return true;
}

/* ---- lookup -------------------------------------------------------------------------------- */

/*
 * No hash of the signature: with a few entries a plain comparison (memcmp, which stops at the
 * first difference) costs less than hashing every word on every compute.
 */
static bool same(const struct ggmlx_cuda_graph_entry * e, const uint64_t key[3], const uint64_t * sig, size_t n) {
    return e->last_use != 0 && e->key[0] == key[0] && e->key[1] == key[1] && e->key[2] == key[2] && e->n_sig == n &&
           memcmp(e->sig, sig, n * sizeof *sig) == 0;
}

/* a free entry, else the least recently used */
static struct ggmlx_cuda_graph_entry * victim(struct ggmlx_cuda_graph_cache * c) {
    struct ggmlx_cuda_graph_entry * v = &c->entries[0];
    for (int i = 0; i < GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        struct ggmlx_cuda_graph_entry * e = &c->entries[i];
        if (e->last_use < v->last_use) {
            v = e;
        }
    }
    return v;
}

enum ggmlx_cuda_graph_action ggmlx_cuda_graph_cache_lookup(struct ggmlx_cuda_graph_cache * c,
                                                           const struct ggml_cgraph * graph,
                                                           const uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA],
                                                           struct ggmlx_cuda_graph_entry ** entry) {
    *entry = NULL;
    size_t n = 0;
    if (graph->n_nodes <= 0 || !build_sig(c, graph, extra, &n)) {
        c->stats.n_plain++;
        return GGMLX_CUDA_GRAPH_PLAIN;
    }
    /* not the graph's uid: a caller rebuilding the same graph each step gets a new uid each time */
    const uint64_t key[3] = { (uint64_t) (uintptr_t) graph->nodes[0],
                              (uint64_t) (uintptr_t) graph->nodes[graph->n_nodes - 1], (uint64_t) graph->n_nodes };
    for (int i = 0; i < GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        struct ggmlx_cuda_graph_entry * e = &c->entries[i];
        if (!same(e, key, c->work, n)) {
            continue;
        }
        e->last_use = ++c->tick;
        *entry      = e;
        if (e->failed) {
            c->stats.n_plain++;
            return GGMLX_CUDA_GRAPH_PLAIN;
        }
        if (e->ready) {
            c->stats.n_replay++;
            return GGMLX_CUDA_GRAPH_REPLAY;
        }
        if (++e->seen > GGMLX_CUDA_GRAPH_WARMUP) {
            c->stats.n_capture++;
            return GGMLX_CUDA_GRAPH_CAPTURE;
        }
        c->stats.n_plain++;
        return GGMLX_CUDA_GRAPH_PLAIN;
    }
    /*
     * A new signature takes an entry; the work buffer becomes its signature (and the entry's old
     * one the next work buffer), so nothing is copied. An executable graph it held stays as a
     * stale one: updating it with the next capture is cheaper than instantiating anew.
     */
    struct ggmlx_cuda_graph_entry * e = victim(c);
    uint64_t * old     = e->sig;
    const size_t ocap  = e->cap_sig;
    e->sig             = c->work;
    e->cap_sig         = c->work_cap;
    e->n_sig           = n;
    c->work            = old;
    c->work_cap        = ocap;
    e->key[0]          = key[0];
    e->key[1]          = key[1];
    e->key[2]          = key[2];
    e->last_use        = ++c->tick;
    e->seen            = 1;
    e->failed          = false;
    e->ready           = false;
    *entry             = e;
    c->stats.n_plain++;
    return GGMLX_CUDA_GRAPH_PLAIN;
}

void ggmlx_cuda_graph_cache_captured(struct ggmlx_cuda_graph_cache * c, struct ggmlx_cuda_graph_entry * e,
                                     void * exec) {
    if (e->exec != exec) {
        drop_exec(c, e);
    }
    e->exec  = exec;
    e->ready = exec != NULL;
}

void ggmlx_cuda_graph_cache_failed(struct ggmlx_cuda_graph_cache * c, struct ggmlx_cuda_graph_entry * e) {
    drop_exec(c, e);
    e->failed = true;
    c->stats.n_failed++;
}
