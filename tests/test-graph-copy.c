/*
 * test-graph-copy.c -- ggml_backend_graph_copy(_free) and ggml_backend_compare_graph_backend:
 * the copy has the same nodes in the same order, its own memory with the same data, views
 * pointing into copied sources; comparing two backends calls back per node (or per listed node)
 * with equal results; failures give a NULL graph / false and leak nothing.
 */
#include <criterion/criterion.h>

#include "test-errlog.h"

#include "alloc-test-buft.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct ggml_context * ctx;
static ggml_backend_t backend;

static void setup(void) {
    struct ggml_init_params p = { 4 * 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    backend = ggml_backend_cpu_init();
    cr_assert_not_null(backend);
    g_n_errors = 0;
    ggml_log_set(count_log, NULL);
}

static void teardown(void) {
    ggml_backend_free(backend);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

/* ---- a small allocated and computed graph --------------------------------------------------- */

struct fixture {
    struct ggml_cgraph * g;
    ggml_gallocr_t       ga;
    struct ggml_tensor * a, * b, * c, * t, * e, * out;
};

/* a, b -> c = a + b -> transpose(reshape) -> cont -> scale -> soft_max (out) */
static struct fixture make(bool compute) {
    struct fixture f;
    f.a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 32);
    f.b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 32);
    ggml_set_name(f.a, "a");
    ggml_set_name(f.b, "b");
    ggml_set_input(f.a);
    ggml_set_input(f.b);
    f.c = ggml_add(ctx, f.a, f.b);
    ggml_set_output(f.c);
    f.t = ggml_transpose(ctx, ggml_reshape_2d(ctx, f.c, 8, 4));
    f.e = ggml_scale(ctx, ggml_cont(ctx, f.t), 0.25f);
    ggml_set_output(f.e);
    f.out = ggml_soft_max(ctx, f.e);
    ggml_set_name(f.out, "out");
    f.g = ggml_new_graph(ctx);
    ggml_build_forward_expand(f.g, f.out);
    f.ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    cr_assert(ggml_gallocr_alloc_graph(f.ga, f.g));
    float va[32], vb[32];
    for (int i = 0; i < 32; i++) {
        va[i] = sinf((float) i);
        vb[i] = 0.1f * (float) i;
    }
    ggml_backend_tensor_set(f.a, va, 0, sizeof va);
    ggml_backend_tensor_set(f.b, vb, 0, sizeof vb);
    if (compute) {
        cr_assert_eq(ggml_backend_graph_compute(backend, f.g), GGML_STATUS_SUCCESS);
    }
    return f;
}

static void release(struct fixture * f) {
    ggml_gallocr_free(f->ga);
}

static bool same_bytes(const struct ggml_tensor * x, const struct ggml_tensor * y) {
    const size_t n = ggml_nbytes(x);
    if (n != ggml_nbytes(y)) {
        return false;
    }
    char * bx = malloc(n), * by = malloc(n);
    ggml_backend_tensor_get(x, bx, 0, n);
    ggml_backend_tensor_get(y, by, 0, n);
    const bool same = memcmp(bx, by, n) == 0;
    free(bx);
    free(by);
    return same;
}

static bool in_context(struct ggml_context * c, const struct ggml_tensor * t) {
    for (struct ggml_tensor * x = ggml_get_first_tensor(c); x != NULL; x = ggml_get_next_tensor(c, x)) {
        if (x == t) {
            return true;
        }
    }
    return false;
}

static int node_index(struct ggml_cgraph * g, const struct ggml_tensor * t) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        if (ggml_graph_node(g, i) == t) {
            return i;
        }
    }
    return -1;
}

/* ---- graph copy ---------------------------------------------------------------------------- */

TestSuite(graph_copy, .init = setup, .fini = teardown, .timeout = 60);

Test(graph_copy, has_the_same_nodes_in_the_same_order) {
    struct fixture f = make(true);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, f.g);
    cr_assert_not_null(cp.graph);
    cr_assert_not_null(cp.buffer);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(ggml_graph_n_nodes(cp.graph), ggml_graph_n_nodes(f.g));
    for (int i = 0; i < ggml_graph_n_nodes(f.g); i++) {
        const struct ggml_tensor * s = ggml_graph_node(f.g, i);
        const struct ggml_tensor * d = ggml_graph_node(cp.graph, i);
        cr_assert_neq(s, d);
        cr_assert_eq(s->op, d->op, "node %d", i);
        cr_assert_eq(s->type, d->type);
        cr_assert_str_eq(s->name, d->name);
        cr_assert_eq(s->flags, d->flags);
        cr_assert_arr_eq(s->ne, d->ne, sizeof s->ne);
        cr_assert_arr_eq(s->nb, d->nb, sizeof s->nb);
        cr_assert_arr_eq(s->op_params, d->op_params, sizeof s->op_params);
        for (int j = 0; j < GGML_MAX_SRC; j++) {
            cr_assert_eq(s->src[j] == NULL, d->src[j] == NULL);
            const int k = s->src[j] ? node_index(f.g, s->src[j]) : -1;
            if (k >= 0) {
                cr_assert_eq(d->src[j], ggml_graph_node(cp.graph, k), "node %d src %d is the copy of node %d", i, j, k);
            }
        }
    }
    ggml_backend_graph_copy_free(cp);
    release(&f);
}

Test(graph_copy, copies_the_data_into_memory_of_its_own) {
    struct fixture f = make(true);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, f.g);
    cr_assert_not_null(cp.graph);
    for (int i = 0; i < ggml_graph_n_nodes(f.g); i++) {
        const struct ggml_tensor * s = ggml_graph_node(f.g, i);
        const struct ggml_tensor * d = ggml_graph_node(cp.graph, i);
        cr_assert_neq(d->data, s->data);
        if (s->view_src == NULL) {
            cr_assert_eq(d->buffer, cp.buffer);
            cr_assert(in_context(cp.ctx_allocated, d));
        }
        cr_assert(same_bytes(s, d), "node %d (%s) differs", i, s->name);
    }
    /* the copy is independent of the original */
    struct ggml_tensor * ca = ggml_graph_get_tensor(cp.graph, "a");
    cr_assert_not_null(ca);
    float before, after;
    ggml_backend_tensor_get(f.a, &before, sizeof before, sizeof before);
    const float other[32] = { 0 };
    ggml_backend_tensor_set(ca, other, 0, sizeof other);
    ggml_backend_tensor_get(f.a, &after, sizeof after, sizeof after);
    cr_assert_float_eq(after, before, 0);
    ggml_backend_graph_copy_free(cp);
    release(&f);
}

Test(graph_copy, views_point_into_their_copied_source) {
    struct fixture f = make(true);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, f.g);
    cr_assert_not_null(cp.graph);
    const int it = node_index(f.g, f.t);
    cr_assert_geq(it, 0);
    const struct ggml_tensor * t = ggml_graph_node(cp.graph, it);
    cr_assert_not_null(t->view_src);
    cr_assert_eq(t->view_src, ggml_graph_node(cp.graph, node_index(f.g, f.c)), "views always point at the owner");
    cr_assert_eq(t->view_offs, f.t->view_offs);
    cr_assert_eq((char *) t->data, (char *) t->view_src->data + t->view_offs);
    cr_assert_eq(t->buffer, cp.buffer);
    cr_assert(in_context(cp.ctx_unallocated, t));
    cr_assert_not(in_context(cp.ctx_allocated, t));
    ggml_backend_graph_copy_free(cp);
    release(&f);
}

Test(graph_copy, the_copy_computes_the_same_results) {
    /* copied before computing: the allocator reuses the inputs' memory once they are read */
    struct fixture f = make(false);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, f.g);
    cr_assert_not_null(cp.graph);
    cr_assert_eq(ggml_backend_graph_compute(backend, f.g), GGML_STATUS_SUCCESS);
    struct ggml_tensor * out = ggml_graph_get_tensor(cp.graph, "out");
    cr_assert_eq(ggml_backend_graph_compute(backend, cp.graph), GGML_STATUS_SUCCESS);
    float v[32];
    ggml_backend_tensor_get(out, v, 0, sizeof v);
    float sum = 0;
    for (int i = 0; i < 32; i++) {
        sum += v[i];
    }
    cr_assert_float_eq(sum, 8.0f, 1e-5, "soft_max rows (8 of them) each sum to 1");
    cr_assert(same_bytes(out, f.out));
    cr_assert(same_bytes(out, f.out));
    ggml_backend_graph_copy_free(cp);
    release(&f);
}

Test(graph_copy, leafs_are_copied_too) {
    struct fixture f = make(false);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, f.g);
    cr_assert_not_null(cp.graph);
    struct ggml_tensor * a = ggml_graph_get_tensor(cp.graph, "a");
    cr_assert_not_null(a, "leafs are in the copied graph");
    cr_assert_neq(a, f.a);
    cr_assert(same_bytes(a, f.a));
    ggml_backend_graph_copy_free(cp);
    release(&f);
}

Test(graph_copy, an_unallocated_graph_is_refused) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_sqr(ctx, x));
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(backend, g);
    ASSERT_ERROR();
    cr_assert_null(cp.graph);
    cr_assert_null(cp.buffer);
    cr_assert_null(cp.ctx_allocated);
    cr_assert_null(cp.ctx_unallocated);
    ggml_backend_graph_copy_free(cp); /* freeing the empty result is harmless */
}

Test(graph_copy, null_and_failed_arguments_are_refused) {
    struct fixture f = make(false);
    cr_assert_null(ggml_backend_graph_copy(NULL, f.g).graph);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_graph_copy(backend, NULL).graph);
    ASSERT_ERROR();
    struct ggml_cgraph * bad = ggml_new_graph(ctx);
    ggml_build_forward_expand(bad, NULL);
    ggmlx_clear_last_error();
    g_n_errors = 0;
    cr_assert_null(ggml_backend_graph_copy(backend, bad).graph);
    ASSERT_ERROR();
    release(&f);
}

/* a backend whose only buffer type is a test type with a byte limit (and optionally failing computes) */
static struct tb_buft g_tb;
static bool g_fail_compute;

static const char * fake_name(ggml_backend_t b) { (void) b; return "FAKE"; }
static void fake_free(ggml_backend_t b) { (void) b; }
static enum ggml_status fake_compute(ggml_backend_t b, struct ggml_cgraph * g) {
    (void) b;
    if (g_fail_compute) {
        return GGML_STATUS_FAILED;
    }
    struct ggml_cplan plan = ggml_graph_plan(g, 1, NULL);
    void * work = plan.work_size ? malloc(plan.work_size) : NULL;
    plan.work_data = work;
    const enum ggml_status st = ggml_graph_compute(g, &plan);
    free(work);
    return st;
}
static ggml_backend_buffer_type_t fake_buft(ggml_backend_dev_t d) { (void) d; return &g_tb.buft; }

static struct ggml_backend_device g_fake_dev = { .iface = { .get_buffer_type = fake_buft } };
static struct ggml_backend g_fake = {
    .iface  = { .get_name = fake_name, .free = fake_free, .graph_compute = fake_compute },
    .device = &g_fake_dev,
};

Test(graph_copy, a_backend_out_of_memory_gives_a_null_graph_and_leaks_nothing) {
    struct fixture f = make(true);
    tb_init(&g_tb, 64, 0, 0);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(&g_fake, f.g);
    ASSERT_ERROR();
    cr_assert_null(cp.graph);
    cr_assert_null(cp.buffer);
    cr_assert_null(cp.ctx_allocated);
    cr_assert_gt(g_tb.st.n_refused, 0);
    cr_assert_eq(g_tb.st.live_bufs, 0);
    release(&f);
}

Test(graph_copy, a_failure_after_allocating_frees_the_copys_buffer) {
    struct fixture f = make(true);
    tb_init(&g_tb, 0, 0, 0);
    g_tb.st.fail_views = true; /* the copy's views cannot be initialised */
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(&g_fake, f.g);
    ASSERT_ERROR();
    cr_assert_null(cp.graph);
    cr_assert_eq(g_tb.st.n_allocs, 1, "the copy's buffer was made ...");
    cr_assert_eq(g_tb.st.live_bufs, 0, "... and freed again");
    release(&f);
}

Test(graph_copy, copies_onto_another_buffer_type) {
    struct fixture f = make(true);
    tb_init(&g_tb, 0, 0, 0);
    struct ggml_backend_graph_copy cp = ggml_backend_graph_copy(&g_fake, f.g);
    cr_assert_not_null(cp.graph);
    cr_assert_eq(ggml_backend_buffer_get_type(cp.buffer), &g_tb.buft);
    cr_assert_eq(g_tb.st.live_bufs, 1);
    ggml_backend_graph_copy_free(cp);
    cr_assert_eq(g_tb.st.live_bufs, 0);
    release(&f);
}

/* ---- comparing backends -------------------------------------------------------------------- */

struct calls {
    int  n;
    int  index[64];
    bool equal[64];
    const struct ggml_tensor * t1[64];
    int  stop_after; /* return false on this call (1-based); 0: never */
};

static bool record(int i, struct ggml_tensor * t1, struct ggml_tensor * t2, void * user_data) {
    struct calls * c = user_data;
    if (c->n < 64) {
        c->index[c->n] = i;
        c->equal[c->n] = t1 != t2 && same_bytes(t1, t2);
        c->t1[c->n]    = t1;
    }
    c->n++;
    return c->stop_after == 0 || c->n < c->stop_after;
}

static int non_view_nodes(struct ggml_cgraph * g) {
    int n = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        const enum ggml_op op = ggml_graph_node(g, i)->op;
        n += !(op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE);
    }
    return n;
}

static void check_every_node(ggml_backend_t b2) {
    struct fixture f = make(false);
    struct calls c = { 0 };
    cr_assert(ggml_backend_compare_graph_backend(backend, b2, f.g, record, &c, NULL, 0));
    cr_assert_eq(c.n, non_view_nodes(f.g), "one call per computed node (views skipped)");
    cr_assert_lt(c.n, ggml_graph_n_nodes(f.g), "the fixture has views");
    for (int k = 0; k < c.n; k++) {
        cr_assert_eq(c.t1[k], ggml_graph_node(f.g, c.index[k]));
        cr_assert(c.equal[k], "node %d differs between the backends", c.index[k]);
        if (k > 0) {
            cr_assert_gt(c.index[k], c.index[k - 1], "in graph order");
        }
    }
    release(&f);
}

Test(graph_copy, compare_calls_back_for_every_computed_node) {
    check_every_node(backend);
}

Test(graph_copy, compare_with_a_sync_cpu_backend) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_not_null(dev);
    ggml_backend_t sync = ggml_backend_dev_init(dev, "sync");
    cr_assert_not_null(sync);
    check_every_node(sync);
    ggml_backend_free(sync);
}

Test(graph_copy, compare_with_another_buffer_type) {
    tb_init(&g_tb, 0, 0, 0);
    g_fail_compute = false;
    check_every_node(&g_fake);
    cr_assert_eq(g_tb.st.live_bufs, 0);
}

Test(graph_copy, compare_stops_when_the_callback_says_so) {
    struct fixture f = make(false);
    struct calls c = { .stop_after = 2 };
    cr_assert(ggml_backend_compare_graph_backend(backend, backend, f.g, record, &c, NULL, 0));
    cr_assert_eq(c.n, 2);
    release(&f);
}

Test(graph_copy, compare_with_test_nodes_calls_back_for_those_only) {
    struct fixture f = make(false);
    struct calls c = { 0 };
    const struct ggml_tensor * const list[2] = { f.e, f.out };
    cr_assert(ggml_backend_compare_graph_backend(backend, backend, f.g, record, &c, list, 2));
    cr_assert_eq(c.n, 2);
    cr_assert_eq(c.t1[0], f.e);
    cr_assert_eq(c.index[0], node_index(f.g, f.e));
    cr_assert_eq(c.t1[1], f.out);
    cr_assert(c.equal[0] && c.equal[1]);
    release(&f);
}

Test(graph_copy, compare_with_test_nodes_outside_the_graph_fails) {
    struct fixture f = make(false);
    struct calls c = { 0 };
    struct ggml_tensor * stranger = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    const struct ggml_tensor * const list[1] = { stranger };
    cr_assert_not(ggml_backend_compare_graph_backend(backend, backend, f.g, record, &c, list, 1));
    ASSERT_ERROR();
    cr_assert_eq(c.n, 0);
    release(&f);
}

Test(graph_copy, compare_reports_a_failed_computation) {
    struct fixture f = make(false);
    tb_init(&g_tb, 0, 0, 0);
    g_fail_compute = true;
    struct calls c = { 0 };
    cr_assert_not(ggml_backend_compare_graph_backend(backend, &g_fake, f.g, record, &c, NULL, 0));
    ASSERT_ERROR();
    cr_assert_eq(c.n, 0);
    cr_assert_eq(g_tb.st.live_bufs, 0, "the copy was freed");
    g_fail_compute = false;
    release(&f);
}

Test(graph_copy, compare_refuses_bad_arguments) {
    struct fixture f = make(false);
    struct calls c = { 0 };
    cr_assert_not(ggml_backend_compare_graph_backend(NULL, backend, f.g, record, &c, NULL, 0));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_compare_graph_backend(backend, NULL, f.g, record, &c, NULL, 0));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_compare_graph_backend(backend, backend, NULL, record, &c, NULL, 0));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_compare_graph_backend(backend, backend, f.g, NULL, &c, NULL, 0));
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_compare_graph_backend(backend, backend, f.g, record, &c, NULL, 3));
    ASSERT_ERROR();
    cr_assert_eq(c.n, 0);
    release(&f);
}
