/*
 * meta-fixture.h -- what the meta device suites (test-meta-api.c, test-meta-buffer.c,
 * test-meta-allreduce.c) share: SIM set-ups for a test's .init, device lookup, and a split
 * callback driven by a table (tensor name -> split state) that counts its calls, so a test can
 * check how often the meta device asked and about which tensors.
 */
#ifndef GGMLX_META_FIXTURE_H
#define GGMLX_META_FIXTURE_H

#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx-meta.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "test-errlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t) 1 << 20)

static inline const char * last_err(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "(none)";
}

/* GGMLX_SIM_CHAOS, when set, is passed on: results must not depend on queue timing */
static inline void meta_configure(int n_devices, size_t memory) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = {
        .n_devices = n_devices, .memory_limit = memory, .n_threads = 1,
        .chaos_seed = chaos ? strtoull(chaos, NULL, 10) : 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", last_err());
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

static inline ggml_backend_dev_t sim_dev(int i) {
    char name[16];
    snprintf(name, sizeof name, "SIM%d", i);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
    cr_assert_not_null(dev, "no device %s", name);
    return dev;
}

static inline ggml_backend_t sim_backend(int i) {
    ggml_backend_t b = ggml_backend_dev_init(sim_dev(i), NULL);
    cr_assert_not_null(b, "SIM%d: %s", i, last_err());
    return b;
}

/* ---- split states ------------------------------------------------------------------------------- */

static inline struct ggml_backend_meta_split_state split_mirrored(void) {
    struct ggml_backend_meta_split_state s;
    memset(&s, 0, sizeof s);
    s.axis = GGML_BACKEND_SPLIT_AXIS_MIRRORED;
    s.n_segments = 1;
    return s;
}

/* axis split with the n_ne lengths given in (segment, device) order */
static inline struct ggml_backend_meta_split_state split_list(int axis, uint32_t n_segments, const int64_t * ne, size_t n_ne) {
    struct ggml_backend_meta_split_state s;
    memset(&s, 0, sizeof s);
    s.axis = (enum ggml_backend_meta_split_axis) axis;
    s.n_segments = n_segments;
    for (size_t i = 0; i < n_ne; i++) {
        s.ne[i] = ne[i];
    }
    return s;
}

/* one segment, total split as evenly as possible, the first devices taking the remainder */
static inline struct ggml_backend_meta_split_state split_even(int axis, size_t n_devs, int64_t total) {
    int64_t ne[GGML_BACKEND_META_MAX_DEVICES];
    for (size_t d = 0; d < n_devs; d++) {
        ne[d] = total / (int64_t) n_devs + ((int64_t) d < total % (int64_t) n_devs ? 1 : 0);
    }
    return split_list(axis, 1, ne, n_devs);
}

/* ---- the table-driven callback ------------------------------------------------------------------ */

#define SPLIT_TABLE_MAX 32

struct split_table {
    int n;
    struct {
        const char                         * name;
        struct ggml_backend_meta_split_state state;
    } e[SPLIT_TABLE_MAX];
    struct ggml_backend_meta_split_state fallback; /* for names not in the table */
    int  n_calls;
    int  n_view_calls;                             /* calls about views: there must be none */
    char called[SPLIT_TABLE_MAX][GGML_MAX_NAME];   /* names asked about, in order */
};

static inline void split_table_init(struct split_table * t) {
    memset(t, 0, sizeof *t);
    t->fallback = split_mirrored();
}

static inline void split_table_add(struct split_table * t, const char * name, struct ggml_backend_meta_split_state s) {
    cr_assert_lt(t->n, SPLIT_TABLE_MAX);
    t->e[t->n].name = name;
    t->e[t->n].state = s;
    t->n++;
}

/* the state the table gives name, without counting a call */
static inline const struct ggml_backend_meta_split_state * split_table_find(const struct split_table * t, const char * name) {
    for (int i = 0; i < t->n; i++) {
        if (strcmp(t->e[i].name, name) == 0) {
            return &t->e[i].state;
        }
    }
    return &t->fallback;
}

static inline struct ggml_backend_meta_split_state split_from_table(const struct ggml_tensor * tensor, void * ud) {
    struct split_table * t = ud;
    const int k = __atomic_fetch_add(&t->n_calls, 1, __ATOMIC_RELAXED);
    if (k < SPLIT_TABLE_MAX) {
        snprintf(t->called[k], sizeof t->called[k], "%s", tensor->name);
    }
    if (tensor->view_src != NULL) {
        __atomic_fetch_add(&t->n_view_calls, 1, __ATOMIC_RELAXED);
    }
    return *split_table_find(t, tensor->name);
}

/* the meta device over SIM0..SIMn-1 whose splits come from table */
static inline ggml_backend_dev_t meta_over_sims(size_t n, struct split_table * table) {
    ggml_backend_dev_t devs[GGML_BACKEND_META_MAX_DEVICES];
    for (size_t i = 0; i < n; i++) {
        devs[i] = sim_dev((int) i);
    }
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, n, split_from_table, table);
    cr_assert_not_null(meta, "ggml_backend_meta_device: %s", last_err());
    return meta;
}

static inline struct ggml_context * meta_ctx_new(size_t n_tensors) {
    struct ggml_init_params p = { n_tensors * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

/* ---- a weight on a meta backend and a graph using it ------------------------------------------- */

/* w [ne0, ne1] F32 in a meta weight buffer, split as state (table's entry "w"); graphs in gctx */
struct meta_run {
    ggml_backend_dev_t    meta;
    ggml_backend_t        be;
    struct ggml_context * wctx, * gctx;
    ggml_backend_buffer_t wbuf;
    struct ggml_tensor  * w;
    struct ggml_cgraph  * gf;
    ggml_gallocr_t        ga;
};

static inline void meta_run_weights(struct meta_run * r, size_t n_devs, struct split_table * tab,
                                    struct ggml_backend_meta_split_state state, int64_t ne0, int64_t ne1, const float * w) {
    memset(r, 0, sizeof *r);
    split_table_init(tab);
    split_table_add(tab, "w", state);
    r->meta = meta_over_sims(n_devs, tab);
    r->be = ggml_backend_dev_init(r->meta, NULL);
    cr_assert_not_null(r->be, "%s", last_err());
    r->wctx = meta_ctx_new(2);
    r->w = ggml_new_tensor_2d(r->wctx, GGML_TYPE_F32, ne0, ne1);
    ggml_set_name(r->w, "w");
    r->wbuf = ggml_backend_alloc_ctx_tensors_from_buft(r->wctx, ggml_backend_dev_buffer_type(r->meta));
    cr_assert_not_null(r->wbuf, "%s", last_err());
    ggml_backend_buffer_set_usage(r->wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_tensor_set(r->w, w, 0, ggml_nbytes(r->w));
    r->gctx = meta_ctx_new(16);
}

/* allocates gf (built by the caller in r->gctx) in a meta compute buffer */
static inline void meta_run_alloc(struct meta_run * r, struct ggml_tensor * out) {
    ggml_set_output(out);
    r->gf = ggml_new_graph(r->gctx);
    ggml_build_forward_expand(r->gf, out);
    r->ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(r->meta));
    cr_assert_not_null(r->ga);
    cr_assert(ggml_gallocr_alloc_graph(r->ga, r->gf), "gallocr: %s", last_err());
}

static inline void meta_run_free(struct meta_run * r) {
    ggml_gallocr_free(r->ga);
    ggml_free(r->gctx);
    ggml_backend_buffer_free(r->wbuf);
    ggml_free(r->wctx);
    ggml_backend_free(r->be);
}

#endif /* GGMLX_META_FIXTURE_H */
