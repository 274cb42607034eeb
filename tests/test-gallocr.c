/*
 * test-gallocr.c -- the graph allocator: memory reuse between nodes, in-place reuse only where
 * it is safe, inputs/outputs/views protected, buffer sizes and chunks, several buffer types,
 * automatic re-reservation with one buffer and refusal with several (an error saying to call
 * ggml_gallocr_reserve_n), and failures (a device
 * out of memory, bad input) that leave the allocator usable and leak nothing.
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

#define N  1024          /* floats per tensor in most tests */
#define NB (N * 4)       /* their bytes: a multiple of every alignment used here */

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 16 * 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    g_n_errors = 0;
    ggml_log_set(count_log, NULL);
}

static void teardown(void) {
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

/* ---- helpers ------------------------------------------------------------------------------- */

static ggml_backend_buffer_type_t cpu(void) {
    return ggml_backend_cpu_buffer_type();
}

static struct ggml_tensor * vec(int64_t n, const char * name) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    ggml_set_name(t, name);
    return t;
}

static struct ggml_cgraph * graph_of(struct ggml_tensor * out) {
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    return g;
}

/* t[i] = base + i / 64 */
static void fill(struct ggml_tensor * t, float base) {
    const int64_t n = ggml_nelements(t);
    float * v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = base + (float) i / 64.0f;
    }
    ggml_backend_tensor_set(t, v, 0, (size_t) n * sizeof *v);
    free(v);
}

static float at(const struct ggml_tensor * t, int64_t i) {
    float v;
    ggml_backend_tensor_get(t, &v, (size_t) i * sizeof v, sizeof v);
    return v;
}

static bool overlap(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    const uintptr_t a0 = (uintptr_t) a->data, a1 = a0 + ggml_nbytes(a);
    const uintptr_t b0 = (uintptr_t) b->data, b1 = b0 + ggml_nbytes(b);
    return a0 < b1 && b0 < a1;
}

/* compute on the calling thread with the plain CPU executor */
static enum ggml_status run(struct ggml_cgraph * g) {
    struct ggml_cplan plan = ggml_graph_plan(g, 2, NULL);
    void * work = plan.work_size ? malloc(plan.work_size) : NULL;
    plan.work_data = work;
    enum ggml_status st = ggml_graph_compute(g, &plan);
    free(work);
    return st;
}

/* x -> cont -> cont -> ... (n copies); the last copy is returned */
static struct ggml_tensor * copy_chain(struct ggml_tensor * x, int n) {
    struct ggml_tensor * t = x;
    for (int i = 0; i < n; i++) {
        t = ggml_cont(ctx, t);
    }
    return t;
}

/* ---- bad input ----------------------------------------------------------------------------- */

TestSuite(gallocr_args, .init = setup, .fini = teardown);

Test(gallocr_args, new_with_null_buft_is_refused) {
    cr_assert_null(ggml_gallocr_new(NULL));
    ASSERT_ERROR();
}

Test(gallocr_args, new_n_with_a_bad_list_is_refused) {
    ggml_backend_buffer_type_t two[2] = { cpu(), NULL };
    cr_assert_null(ggml_gallocr_new_n(NULL, 1));
    ASSERT_ERROR();
    cr_assert_null(ggml_gallocr_new_n(two, 0));
    ASSERT_ERROR();
    cr_assert_null(ggml_gallocr_new_n(two, -1));
    ASSERT_ERROR();
    cr_assert_null(ggml_gallocr_new_n(two, 2));
    ASSERT_ERROR();
}

Test(gallocr_args, free_null_is_a_no_op) {
    ggml_gallocr_free(NULL);
    cr_assert_null(ggmlx_last_error());
}

Test(gallocr_args, null_handles_are_refused) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_cgraph * g = graph_of(ggml_cont(ctx, vec(N, "x")));
    size_t sizes[1] = { 77 };
    cr_assert_not(ggml_gallocr_reserve(NULL, g));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_reserve(ga, NULL));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_reserve_n(NULL, g, NULL, NULL));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_alloc_graph(NULL, g));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_alloc_graph(ga, NULL));
    ASSERT_ERROR();
    ggml_gallocr_reserve_n_size(ga, g, NULL, NULL, NULL);
    ASSERT_ERROR();
    ggml_gallocr_reserve_n_size(NULL, g, NULL, NULL, sizes);
    ASSERT_ERROR();
    ggml_gallocr_reserve_n_size(ga, NULL, NULL, NULL, sizes);
    ASSERT_ERROR();
    cr_assert_eq(sizes[0], 0, "sizes are zeroed when the graph is refused");
    cr_assert_eq(ggml_gallocr_get_buffer_size(NULL, 0), 0);
    ASSERT_ERROR();
    ggml_gallocr_free(ga);
}

Test(gallocr_args, buffer_id_out_of_range_is_refused) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 1), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, -1), 0);
    ASSERT_ERROR();
    ggml_gallocr_free(ga);
}

Test(gallocr_args, node_and_leaf_ids_out_of_range_are_refused_and_change_nothing) {
    static struct tb_buft ta, tb;
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&ta, 0, 0, 0), tb_init(&tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_cgraph * g = graph_of(copy_chain(x, 2));
    const int bad_nodes[2] = { 0, 2 }, good_nodes[2] = { 0, 1 };
    const int bad_leafs[1] = { -1 }, good_leafs[1] = { 0 };
    cr_assert_not(ggml_gallocr_reserve_n(ga, g, bad_nodes, good_leafs));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_reserve_n(ga, g, good_nodes, bad_leafs));
    ASSERT_ERROR();
    cr_assert_eq(ta.st.n_allocs + tb.st.n_allocs, 0, "nothing was allocated");
    cr_assert(ggml_gallocr_reserve_n(ga, g, good_nodes, good_leafs), "still usable");
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    ggml_gallocr_free(ga);
    cr_assert_eq(ta.st.live_bufs + tb.st.live_bufs, 0);
}

Test(gallocr_args, a_failed_graph_is_refused) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_cont(ctx, vec(N, "x")));
    ggml_build_forward_expand(g, NULL); /* what a failed constructor would pass */
    ggmlx_clear_last_error();
    g_n_errors = 0;
    cr_assert_not(ggml_gallocr_reserve(ga, g));
    ASSERT_ERROR();
    cr_assert_not(ggml_gallocr_alloc_graph(ga, g));
    ASSERT_ERROR();
    ggml_gallocr_free(ga);
}

/* ---- memory reuse -------------------------------------------------------------------------- */

TestSuite(gallocr_reuse, .init = setup, .fini = teardown);

Test(gallocr_reuse, a_chain_of_ten_copies_needs_two_tensors_of_memory) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * y = copy_chain(x, 10);
    struct ggml_cgraph * g = graph_of(y);
    cr_assert_eq(ggml_graph_n_nodes(g), 10);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB, "11 tensors alive one or two at a time, not %zu bytes",
                 ggml_gallocr_get_buffer_size(ga, 0));
    fill(x, 3.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(y, 0), 3.0f, 0);
    cr_assert_float_eq(at(y, N - 1), 3.0f + (N - 1) / 64.0f, 0);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, a_chain_of_scales_runs_in_place) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * s[10];
    struct ggml_tensor * t = x;
    for (int i = 0; i < 10; i++) {
        t = s[i] = ggml_scale(ctx, t, 2.0f);
    }
    struct ggml_cgraph * g = graph_of(t);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_neq(s[0]->data, x->data, "never in place over a leaf");
    for (int i = 1; i < 10; i++) {
        cr_assert_eq(s[i]->data, s[0]->data, "scale %d reuses its source's memory", i);
    }
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB);
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(t, 5), 1024.0f * (1.0f + 5 / 64.0f), 1e-3);
    cr_assert_float_eq(at(x, 5), 1.0f + 5 / 64.0f, 0, "the leaf keeps its value");
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, never_in_place_over_an_output) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x  = vec(N, "x");
    struct ggml_tensor * a  = ggml_cont(ctx, x);
    struct ggml_tensor * s1 = ggml_scale(ctx, a, 2.0f);
    ggml_set_output(s1);
    struct ggml_tensor * s2 = ggml_scale(ctx, s1, 3.0f);
    struct ggml_cgraph * g = graph_of(s2);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(s1->data, a->data, "s1 itself may take a's memory");
    cr_assert_not(overlap(s2, s1), "s2 must not take the output's memory");
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(s1, 7), 2.0f * (1.0f + 7 / 64.0f), 1e-6);
    cr_assert_float_eq(at(s2, 7), 6.0f * (1.0f + 7 / 64.0f), 1e-5);
    ggml_gallocr_free(ga);
}

/*
 * An output that is a view (v of p) keeps the memory it views: after v's last consumer ran, p
 * is neither freed for a later node (r) nor taken over in place (w). Upstream frees p here.
 */
Test(gallocr_reuse, an_output_view_keeps_the_memory_it_views) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    ggml_set_input(x);
    struct ggml_tensor * p = ggml_scale(ctx, x, 2.0f);
    struct ggml_tensor * v = ggml_view_2d(ctx, p, 8, 4, p->nb[1], 0);
    ggml_set_output(v);
    struct ggml_tensor * w = ggml_scale(ctx, v, 3.0f);
    struct ggml_tensor * r = ggml_cont(ctx, ggml_transpose(ctx, w));
    ggml_set_output(r);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, v);
    ggml_build_forward_expand(g, r);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(w, p), "w must not take over the memory the output v views");
    cr_assert_not(overlap(r, p), "r must not get the memory the output v views");
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    for (int64_t i = 0; i < 32; i += 5) {
        cr_assert_float_eq(at(v, i), 2.0f * (1.0f + (float) i / 64.0f), 1e-6, "v[%lld]", (long long) i);
    }
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, never_in_place_over_an_input) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    ggml_set_input(x);
    struct ggml_tensor * y = ggml_sqr(ctx, x);
    struct ggml_cgraph * g = graph_of(y);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(x, y));
    fill(x, 2.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(x, 0), 2.0f, 0, "the input keeps its value after the graph ran");
    cr_assert_float_eq(at(y, 0), 4.0f, 0);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, never_in_place_over_a_computed_input) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * a = ggml_cont(ctx, vec(N, "x"));
    ggml_set_input(a); /* unusual, but the caller said so: it may read it again */
    struct ggml_tensor * s = ggml_scale(ctx, a, 2.0f);
    cr_assert(ggml_gallocr_alloc_graph(ga, graph_of(s)));
    cr_assert_not(overlap(a, s));
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, not_in_place_while_the_source_has_other_consumers) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * a = ggml_cont(ctx, x);
    struct ggml_tensor * b = ggml_scale(ctx, a, 2.0f);
    struct ggml_tensor * c = ggml_add(ctx, a, b);
    struct ggml_cgraph * g = graph_of(c);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(a, b), "a is still needed by c when b runs");
    cr_assert(c->data == a->data || c->data == b->data, "c, the last consumer of both, runs in place");
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(c, 3), 3.0f * (1.0f + 3 / 64.0f), 1e-6);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, ops_outside_the_in_place_list_get_fresh_memory) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * a = ggml_cont(ctx, x);
    struct ggml_tensor * b = ggml_cont(ctx, a); /* CONT is not in the list */
    struct ggml_cgraph * g = graph_of(b);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(a, b));
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, in_place_only_over_a_source_of_the_same_layout) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * m = ggml_cont(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 32));
    struct ggml_tensor * r = ggml_cont(ctx, vec(32, "row"));
    struct ggml_tensor * s = ggml_add(ctx, m, r); /* m has s's layout, r does not */
    struct ggml_tensor * u = ggml_add(ctx, s, m); /* keeps m alive past s */
    struct ggml_cgraph * g = graph_of(u);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(s, m), "m has a later consumer");
    cr_assert_not(overlap(s, r), "r is consumed for the last time by s, but its layout differs");
    cr_assert(u->data == s->data || u->data == m->data);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, in_place_never_over_a_larger_source_of_another_type) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, N);
    struct ggml_tensor * y = vec(N, "y");
    struct ggml_tensor * a = ggml_cont(ctx, x);   /* f16, also read later */
    struct ggml_tensor * b = ggml_cont(ctx, y);   /* f32: room enough, but another layout */
    struct ggml_tensor * s = ggml_add(ctx, a, b); /* f16 */
    struct ggml_tensor * u = ggml_add(ctx, s, a);
    struct ggml_cgraph * g = graph_of(u);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(s->type, GGML_TYPE_F16);
    cr_assert_not(overlap(s, b), "writing f16 over the f32 source corrupts what is still to be read");
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, in_place_takes_the_source_with_the_same_layout) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * r = ggml_cont(ctx, vec(32, "row"));
    struct ggml_tensor * m = ggml_cont(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 32));
    struct ggml_tensor * s = ggml_add(ctx, m, r);
    struct ggml_cgraph * g = graph_of(s);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(s->data, m->data);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, views_keep_their_source_alive) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * y = vec(N, "y");
    struct ggml_tensor * a = ggml_cont(ctx, x);
    struct ggml_tensor * v = ggml_view_1d(ctx, a, N / 2, (N / 2) * sizeof(float));
    struct ggml_tensor * c[4];
    c[0] = ggml_cont(ctx, y);
    for (int i = 1; i < 4; i++) {
        c[i] = ggml_cont(ctx, c[i - 1]);
    }
    struct ggml_tensor * h = ggml_cont(ctx, ggml_view_1d(ctx, c[3], N / 2, 0));
    struct ggml_tensor * out = ggml_add(ctx, v, h);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, v); /* the view runs first, its consumer last */
    ggml_build_forward_expand(g, out);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq((char *) v->data, (char *) a->data + (N / 2) * sizeof(float));
    cr_assert_eq(v->buffer, a->buffer);
    for (int i = 0; i < 4; i++) {
        cr_assert_not(overlap(c[i], a), "copy %d must not take the memory a view still reads", i);
    }
    cr_assert_not(overlap(h, a));
    fill(x, 1.0f);
    fill(y, 10.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    for (int i = 0; i < N / 2; i += 37) {
        cr_assert_float_eq(at(out, i), (1.0f + (N / 2 + i) / 64.0f) + (10.0f + i / 64.0f), 1e-5);
    }
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, outputs_are_never_overwritten) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * o = ggml_cont(ctx, x);
    ggml_set_output(o);
    struct ggml_tensor * c[6];
    c[0] = ggml_cont(ctx, o);
    for (int i = 1; i < 6; i++) {
        c[i] = ggml_cont(ctx, c[i - 1]);
    }
    struct ggml_cgraph * g = graph_of(c[5]);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    for (int i = 0; i < 6; i++) {
        cr_assert_not(overlap(c[i], o), "node %d overwrites the output", i);
    }
    fill(x, 4.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(o, 100), 4.0f + 100 / 64.0f, 0);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, inputs_overlap_nothing_that_runs_before_they_are_read) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * c[5];
    c[0] = ggml_cont(ctx, x);
    for (int i = 1; i < 5; i++) {
        c[i] = ggml_cont(ctx, c[i - 1]);
    }
    struct ggml_tensor * in = vec(N, "in");
    ggml_set_input(in);
    struct ggml_tensor * out = ggml_add(ctx, c[4], in);
    struct ggml_cgraph * g = graph_of(out);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(in, x));
    for (int i = 0; i < 5; i++) {
        cr_assert_not(overlap(in, c[i]), "the input shares memory with node %d that runs before it is read", i);
    }
    fill(x, 1.0f);
    fill(in, 100.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(out, 64), (1.0f + 1.0f) + (100.0f + 1.0f), 1e-4);
    ggml_gallocr_free(ga);
}

/* as the scheduler does with the copies of a split's inputs: an input listed among the nodes */
Test(gallocr_reuse, inputs_among_the_nodes_get_memory_before_anything_runs) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * c[5];
    c[0] = ggml_cont(ctx, x);
    for (int i = 1; i < 5; i++) {
        c[i] = ggml_cont(ctx, c[i - 1]);
    }
    struct ggml_tensor * in = vec(N, "in");
    ggml_set_input(in);
    struct ggml_cgraph * g = graph_of(c[4]);
    ggml_graph_add_node(g, in);
    struct ggml_tensor * out = ggml_add(ctx, c[4], in);
    ggml_build_forward_expand(g, out);
    cr_assert_eq(ggml_graph_node(g, 5), in);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    for (int i = 0; i < 5; i++) {
        cr_assert_not(overlap(in, c[i]), "the input shares memory with node %d that runs before it is read", i);
    }
    fill(x, 1.0f);
    fill(in, 100.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(out, 64), (1.0f + 1.0f) + (100.0f + 1.0f), 1e-4);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, pre_allocated_tensors_are_left_alone) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * wctx = ggml_init(p);
    struct ggml_tensor * w = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, N);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, cpu());
    cr_assert_not_null(wbuf);
    void * wdata = w->data;
    fill(w, 5.0f);

    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * a = ggml_add(ctx, ggml_cont(ctx, x), w);
    struct ggml_cgraph * g = graph_of(a);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(w->data, wdata);
    cr_assert_eq(w->buffer, wbuf);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB, "x and its copy only: the weight has memory");
    cr_assert_neq(a->data, w->data, "never in place over memory that is not the allocator's");
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(a, 0), 6.0f, 0);
    cr_assert_float_eq(at(w, 0), 5.0f, 0);
    ggml_gallocr_free(ga);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
}

Test(gallocr_reuse, views_made_before_allocation_are_initialised) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * a = ggml_cont(ctx, vec(N, "x"));
    struct ggml_tensor * v = ggml_view_1d(ctx, a, 16, 64 * sizeof(float));
    struct ggml_tensor * s = ggml_sqr(ctx, v);
    struct ggml_cgraph * g = graph_of(s);
    cr_assert_null(v->data);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq((char *) v->data, (char *) a->data + 64 * sizeof(float));
    cr_assert_eq(v->buffer, a->buffer);
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, allocating_the_same_graph_again_keeps_every_address) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * y = copy_chain(x, 4);
    struct ggml_cgraph * g = graph_of(y);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    void * before[4];
    for (int i = 0; i < 4; i++) {
        before[i] = ggml_graph_node(g, i)->data;
    }
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ggml_graph_node(g, i)->data, before[i]);
    }
    ggml_gallocr_free(ga);
}

Test(gallocr_reuse, an_empty_graph_needs_no_memory) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    cr_assert(ggml_gallocr_reserve(ga, g));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 0);
    ggml_gallocr_free(ga);
}

/* ---- results -------------------------------------------------------------------------------- */

struct net {
    struct ggml_tensor * x, * w, * b, * gm, * pos, * out;
};

/* a small transformer-ish block touching most in-place ops, views and a multi-consumer tensor */
static struct net build_net(struct ggml_context * c) {
    struct net n;
    n.x   = ggml_new_tensor_2d(c, GGML_TYPE_F32, 16, 8);
    n.w   = ggml_new_tensor_2d(c, GGML_TYPE_F32, 16, 16);
    n.b   = ggml_new_tensor_1d(c, GGML_TYPE_F32, 16);
    n.gm  = ggml_new_tensor_1d(c, GGML_TYPE_F32, 16);
    n.pos = ggml_new_tensor_1d(c, GGML_TYPE_I32, 8);
    ggml_set_input(n.x);
    ggml_set_input(n.pos);
    struct ggml_tensor * h = ggml_mul_mat(c, n.w, n.x);
    h = ggml_add(c, h, n.b);
    h = ggml_rms_norm(c, h, 1e-5f);
    h = ggml_mul(c, h, n.gm);
    struct ggml_tensor * s = ggml_soft_max(c, h);
    struct ggml_tensor * u = ggml_gelu(c, h);
    struct ggml_tensor * y = ggml_add(c, s, u);
    y = ggml_scale(c, y, 0.5f);
    y = ggml_silu(c, y);
    struct ggml_tensor * r = ggml_rope(c, ggml_reshape_3d(c, y, 16, 1, 8), n.pos, 16, 0);
    r = ggml_reshape_2d(c, r, 16, 8);
    struct ggml_tensor * t = ggml_cont(c, ggml_transpose(c, r));
    t = ggml_diag_mask_inf(c, ggml_cont(c, ggml_view_2d(c, t, 8, 8, t->nb[1], 0)), 0);
    t = ggml_soft_max(c, t);
    n.out = ggml_sqrt(c, ggml_add(c, ggml_sqr(c, t), ggml_sum_rows(c, t)));
    return n;
}

static void fill_net(struct net * n, void (*set)(struct ggml_tensor *, const void *, size_t)) {
    float x[16 * 8], w[16 * 16], b[16], gm[16];
    int32_t pos[8];
    for (int i = 0; i < 16 * 8; i++) x[i] = sinf(0.37f * (float) i);
    for (int i = 0; i < 16 * 16; i++) w[i] = cosf(0.11f * (float) i) * 0.3f;
    for (int i = 0; i < 16; i++) b[i] = 0.05f * (float) i - 0.4f;
    for (int i = 0; i < 16; i++) gm[i] = 1.0f + 0.02f * (float) i;
    for (int i = 0; i < 8; i++) pos[i] = i * 3;
    set(n->x, x, sizeof x);
    set(n->w, w, sizeof w);
    set(n->b, b, sizeof b);
    set(n->gm, gm, sizeof gm);
    set(n->pos, pos, sizeof pos);
}

static void set_host(struct ggml_tensor * t, const void * d, size_t n) {
    memcpy(t->data, d, n);
}

static void set_backend(struct ggml_tensor * t, const void * d, size_t n) {
    ggml_backend_tensor_set(t, d, 0, n);
}

/* the reference: the same block in a context with memory, computed by ggml_graph_compute_with_ctx */
static void reference(float * out, size_t n) {
    struct ggml_init_params p = { 8 * 1024 * 1024, NULL, false };
    struct ggml_context * rc = ggml_init(p);
    struct net rn = build_net(rc);
    fill_net(&rn, set_host);
    struct ggml_cgraph * rg = ggml_new_graph(rc);
    ggml_build_forward_expand(rg, rn.out);
    cr_assert_eq(ggml_graph_compute_with_ctx(rc, rg, 2), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_nbytes(rn.out), n * sizeof(float));
    memcpy(out, rn.out->data, n * sizeof(float));
    ggml_free(rc);
}

static void check_net_on(ggml_backend_t backend) {
    float want[64], got[64];
    reference(want, 64);

    struct net n = build_net(ctx);
    struct ggml_cgraph * g = graph_of(n.out);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    fill_net(&n, set_backend);
    cr_assert_eq(ggml_backend_graph_compute(backend, g), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(n.out, got, 0, sizeof got);
    for (int i = 0; i < 64; i++) {
        cr_assert(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])), "out[%d] = %g, want %g", i, got[i],
                  want[i]);
    }
    /* less memory than one tensor each */
    size_t naive = 0;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor * t = ggml_graph_node(g, i);
        naive += t->view_src ? 0 : GGML_PAD(ggml_nbytes(t), 32);
    }
    cr_assert_lt(ggml_gallocr_get_buffer_size(ga, 0), naive);
    ggml_gallocr_free(ga);
}

TestSuite(gallocr_results, .init = setup, .fini = teardown, .timeout = 60);

Test(gallocr_results, cpu_backend_matches_graph_compute_with_ctx) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    cr_assert_not_null(backend);
    check_net_on(backend);
    ggml_backend_free(backend);
}

Test(gallocr_results, sync_cpu_backend_matches_graph_compute_with_ctx) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_not_null(dev);
    ggml_backend_t backend = ggml_backend_dev_init(dev, "sync");
    cr_assert_not_null(backend);
    check_net_on(backend);
    ggml_backend_free(backend);
}

/* ---- sizes, buffers and chunks ------------------------------------------------------------- */

TestSuite(gallocr_buffers, .init = setup, .fini = teardown);

Test(gallocr_buffers, size_is_the_aligned_sum_of_what_is_alive_together) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x = vec(100, "x"); /* 400 bytes, 416 at alignment 32 */
    struct ggml_cgraph * g = graph_of(ggml_cont(ctx, x));
    cr_assert(ggml_gallocr_reserve(ga, g));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * 416);
    ggml_gallocr_free(ga);
}

Test(gallocr_buffers, offsets_follow_the_buffer_types_alignment) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 0, 0, 256));
    struct ggml_tensor * t[6];
    t[0] = vec(3, "x");
    ggml_set_input(t[0]);
    for (int i = 1; i < 6; i++) {
        t[i] = ggml_add(ctx, ggml_cont(ctx, t[i - 1]), t[0]);
    }
    struct ggml_cgraph * g = graph_of(t[5]);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        struct ggml_tensor * n = ggml_graph_node(g, i);
        const size_t off = (size_t) ((char *) n->data - (char *) ggml_backend_buffer_get_base(n->buffer));
        cr_assert_eq(off % 256, 0, "node %d at offset %zu", i, off);
    }
    ggml_gallocr_free(ga);
}

Test(gallocr_buffers, compute_buffers_are_marked_compute) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * y = ggml_cont(ctx, vec(N, "x"));
    cr_assert(ggml_gallocr_alloc_graph(ga, graph_of(y)));
    cr_assert_eq(ggml_backend_buffer_get_usage(y->buffer), GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    ggml_gallocr_free(ga);
}

Test(gallocr_buffers, one_buffer_grows_for_a_larger_graph_and_never_shrinks) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 0, 0, 0));
    struct ggml_cgraph * small = graph_of(copy_chain(vec(N / 4, "xs"), 3));
    struct ggml_cgraph * large = graph_of(copy_chain(vec(N, "xl"), 3));
    cr_assert(ggml_gallocr_alloc_graph(ga, small));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB / 4);
    cr_assert_eq(tb.st.n_allocs, 1);
    cr_assert(ggml_gallocr_alloc_graph(ga, large), "a larger graph is reserved automatically");
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB);
    cr_assert_eq(tb.st.n_allocs, 2);
    cr_assert_eq(tb.st.live_bufs, 1, "the old buffer was freed");
    struct ggml_cgraph * small2 = graph_of(copy_chain(vec(N / 4, "xs2"), 3));
    cr_assert(ggml_gallocr_alloc_graph(ga, small2));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB);
    cr_assert_eq(tb.st.n_allocs, 2, "a smaller graph fits the buffer it has");
    ggml_gallocr_free(ga);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(gallocr_buffers, reserving_the_worst_case_avoids_reallocation) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 0, 0, 0));
    cr_assert(ggml_gallocr_reserve(ga, graph_of(copy_chain(vec(N, "big"), 5))));
    cr_assert_eq(tb.st.n_allocs, 1);
    for (int i = 1; i <= 4; i++) {
        struct ggml_tensor * x = vec(N / i, "x");
        struct ggml_cgraph * g = graph_of(copy_chain(x, 5));
        cr_assert(ggml_gallocr_alloc_graph(ga, g));
        fill(x, (float) i);
        cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
        cr_assert_float_eq(at(ggml_graph_node(g, 4), 1), (float) i + 1 / 64.0f, 0);
    }
    cr_assert_eq(tb.st.n_allocs, 1, "every smaller graph used the reserved buffer");
    ggml_gallocr_free(ga);
}

Test(gallocr_buffers, memory_past_max_size_is_split_into_chunks) {
    static struct tb_buft tb;
    const size_t max = 3 * NB;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 0, max, 0));
    struct ggml_tensor * in[8];
    struct ggml_tensor * sum = NULL;
    for (int i = 0; i < 8; i++) {
        in[i] = vec(N, "in");
        ggml_set_input(in[i]); /* all alive from the start: 8 tensors of memory at once */
        sum = sum ? ggml_add(ctx, sum, in[i]) : ggml_cont(ctx, in[i]);
    }
    struct ggml_cgraph * g = graph_of(sum);
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_gt(tb.st.live_bufs, 2, "8 tensors of %d bytes cannot share buffers of at most %zu", NB, max);
    cr_assert_leq(tb.st.live_bufs, 4);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), tb.st.live_bytes);
    for (int i = 0; i < 8; i++) {
        cr_assert_leq(ggml_backend_buffer_get_size(in[i]->buffer), max);
        for (int j = 0; j < i; j++) {
            cr_assert_not(overlap(in[i], in[j]));
        }
    }
    for (int i = 0; i < 8; i++) {
        fill(in[i], (float) i);
    }
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(sum, 64), 28.0f + 8.0f, 1e-4);
    ggml_gallocr_free(ga);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(gallocr_buffers, a_tensor_larger_than_max_size_gets_a_chunk_of_its_own) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 0, 1024, 0));
    struct ggml_tensor * x = vec(N, "x"); /* 4096 bytes > 1024 */
    struct ggml_tensor * y = ggml_cont(ctx, x);
    cr_assert(ggml_gallocr_alloc_graph(ga, graph_of(y)));
    cr_assert_eq(tb.st.live_bufs, 2);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB);
    cr_assert_neq(x->buffer, y->buffer);
    ggml_gallocr_free(ga);
}

/* ---- several buffer types ------------------------------------------------------------------ */

TestSuite(gallocr_multi, .init = setup, .fini = teardown);

static struct tb_buft g_ta, g_tb;

/* x -> c1 -> c2 -> c3 -> c4, nodes alternating between buffers 1 and 0, x in buffer 0 */
static struct ggml_cgraph * alternating(int64_t n, struct ggml_tensor ** nodes) {
    struct ggml_tensor * t = vec(n, "x");
    for (int i = 0; i < 4; i++) {
        t = nodes[i] = ggml_cont(ctx, t);
    }
    return graph_of(t);
}

static const int g_node_ids[4] = { 1, 0, 1, 0 };
static const int g_leaf_ids[1] = { 0 };

Test(gallocr_multi, reserve_n_places_every_tensor_in_its_buffer) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * nodes[4];
    struct ggml_cgraph * g = alternating(N, nodes);
    cr_assert(ggml_gallocr_reserve_n(ga, g, g_node_ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(ggml_backend_buffer_get_type(ggml_graph_get_tensor(g, "x")->buffer), bufts[0]);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(ggml_backend_buffer_get_type(nodes[i]->buffer), bufts[g_node_ids[i]], "node %d", i);
    }
    /* x, c2, c4 follow each other in buffer 0 as c1, c3 do in buffer 1: one tensor each */
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), NB);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 1), NB);
    ggml_gallocr_free(ga);
    cr_assert_eq(g_ta.st.live_bufs + g_tb.st.live_bufs, 0);
}

Test(gallocr_multi, in_place_never_crosses_buffers) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * a = ggml_cont(ctx, vec(N, "x"));
    struct ggml_tensor * s = ggml_scale(ctx, a, 2.0f);
    struct ggml_cgraph * g = graph_of(s);
    const int ids[2] = { 1, 0 };
    cr_assert(ggml_gallocr_reserve_n(ga, g, ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(ggml_backend_buffer_get_type(s->buffer), bufts[0]);
    cr_assert_eq(ggml_backend_buffer_get_type(a->buffer), bufts[1]);
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, in_place_never_takes_an_address_of_another_buffer) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * x = vec(N, "x");
    struct ggml_tensor * a = ggml_cont(ctx, x);         /* buffer 1 */
    struct ggml_tensor * s = ggml_scale(ctx, a, 2.0f);  /* buffer 0 */
    struct ggml_tensor * o = ggml_add(ctx, s, x);       /* buffer 0; x is alive until here */
    struct ggml_cgraph * g = graph_of(o);
    const int ids[3] = { 1, 0, 0 };
    cr_assert(ggml_gallocr_reserve_n(ga, g, ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not(overlap(s, x), "a's offset in buffer 1 means nothing in buffer 0");
    fill(x, 1.0f);
    cr_assert_eq(run(g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(o, 64), 3.0f * 2.0f, 1e-5);
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, reserve_n_size_gives_the_sizes_without_allocating) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * nodes[4];
    struct ggml_cgraph * g = alternating(N, nodes);
    size_t sizes[2] = { 1, 1 };
    ggml_gallocr_reserve_n_size(ga, g, g_node_ids, g_leaf_ids, sizes);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(g_ta.st.n_allocs + g_tb.st.n_allocs, 0);
    cr_assert_null(nodes[0]->data);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 0);
    cr_assert(ggml_gallocr_reserve_n(ga, g, g_node_ids, g_leaf_ids));
    cr_assert_eq(sizes[0], ggml_gallocr_get_buffer_size(ga, 0));
    cr_assert_eq(sizes[1], ggml_gallocr_get_buffer_size(ga, 1));
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, reserve_n_size_leaves_the_reserved_plan_alone) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * small_nodes[4], * large_nodes[4];
    struct ggml_cgraph * small = alternating(N / 4, small_nodes);
    struct ggml_cgraph * large = alternating(N, large_nodes);
    cr_assert(ggml_gallocr_reserve_n(ga, small, g_node_ids, g_leaf_ids));
    size_t sizes[2];
    ggml_gallocr_reserve_n_size(ga, large, g_node_ids, g_leaf_ids, sizes);
    cr_assert_eq(sizes[0], NB);
    cr_assert_eq(sizes[1], NB);
    cr_assert(ggml_gallocr_alloc_graph(ga, small), "the plan for the small graph still holds");
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), NB / 4);
    cr_assert_eq(g_ta.st.n_allocs + g_tb.st.n_allocs, 2);
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, a_buffer_type_listed_twice_is_one_buffer) {
    ggml_backend_buffer_type_t a = tb_init(&g_ta, 0, 0, 0);
    ggml_backend_buffer_type_t bufts[2] = { a, a };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * nodes[4];
    struct ggml_cgraph * g = alternating(N, nodes);
    size_t sizes[2];
    ggml_gallocr_reserve_n_size(ga, g, g_node_ids, g_leaf_ids, sizes);
    cr_assert(ggml_gallocr_reserve_n(ga, g, g_node_ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_eq(g_ta.st.live_bufs, 1);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB, "one chain in one buffer needs two tensors");
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 1), 0, "the shared buffer is counted once");
    cr_assert_eq(sizes[0], 2 * NB);
    cr_assert_eq(sizes[1], 0);
    for (int i = 1; i < 4; i++) {
        cr_assert_eq(nodes[i]->buffer, nodes[0]->buffer);
    }
    ggml_gallocr_free(ga);
    cr_assert_eq(g_ta.st.live_bufs, 0);
}

Test(gallocr_multi, alloc_graph_beyond_the_reservation_fails_saying_call_reserve_n) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * n1[4], * n2[4];
    struct ggml_cgraph * g1 = alternating(N / 2, n1);
    struct ggml_cgraph * g2 = alternating(N, n2);
    cr_assert(ggml_gallocr_reserve_n(ga, g1, g_node_ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g1));
    const int allocs = g_ta.st.n_allocs + g_tb.st.n_allocs;
    void * const g1_data = n1[3]->data;
    g_n_errors = 0;
    cr_assert_not(ggml_gallocr_alloc_graph(ga, g2), "several buffers: the caller must reserve_n");
    cr_assert_eq(g_n_errors, 1, "logged once");
    const char * msg = ggmlx_last_error();
    cr_assert_not_null(msg);
    cr_assert(strstr(msg, "ggml_gallocr_alloc_graph") && strstr(msg, "not the one reserved") &&
                  strstr(msg, "call ggml_gallocr_reserve_n") && strstr(msg, "ggml_gallocr_reserve_n_size"),
              "says what to do: %s", msg);
    /* nothing changed: no tensor placed, no buffer allocated, the old placement still holds */
    for (int i = 0; i < 4; i++) {
        cr_assert_null(n2[i]->data);
        cr_assert_null(n2[i]->buffer);
    }
    cr_assert_eq(g_ta.st.n_allocs + g_tb.st.n_allocs, allocs);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), NB / 2);
    cr_assert(ggml_gallocr_alloc_graph(ga, g1), "the reserved graph is still placed");
    cr_assert_eq(n1[3]->data, g1_data);
    cr_assert(ggml_gallocr_reserve_n(ga, g2, g_node_ids, g_leaf_ids));
    cr_assert(ggml_gallocr_alloc_graph(ga, g2));
    ASSERT_NO_ERROR();
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, alloc_graph_with_nothing_reserved_fails_saying_call_reserve_n) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * nodes[4];
    struct ggml_cgraph * g = alternating(N, nodes);
    cr_assert_not(ggml_gallocr_alloc_graph(ga, g));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "nothing is reserved yet") &&
                  strstr(ggmlx_last_error(), "call ggml_gallocr_reserve_n"), "%s", ggmlx_last_error());
    ASSERT_ERROR();
    cr_assert_null(nodes[0]->data);
    cr_assert_eq(g_ta.st.n_allocs + g_tb.st.n_allocs, 0);
    ggml_gallocr_free(ga);
}

/* x, y -> a = cont(x), b = cont(y), c = add(a, b)  versus  a = cont(x), b = cont(a), c = add(b, y) */
static struct ggml_cgraph * wired(bool chain, struct ggml_tensor ** x, struct ggml_tensor ** y) {
    *x = vec(N, "x");
    *y = vec(N, "y");
    struct ggml_tensor * a = ggml_cont(ctx, *x);
    struct ggml_tensor * b = ggml_cont(ctx, chain ? a : *y);
    struct ggml_tensor * c = chain ? ggml_add(ctx, b, *y) : ggml_add(ctx, a, b);
    return graph_of(c);
}

Test(gallocr_multi, alloc_graph_is_false_when_the_wiring_changed) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 0, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * x, * y;
    struct ggml_cgraph * g1 = wired(false, &x, &y);
    struct ggml_cgraph * g2 = wired(true, &x, &y);
    cr_assert_eq(ggml_graph_n_nodes(g1), ggml_graph_n_nodes(g2));
    cr_assert(ggml_gallocr_reserve_n(ga, g1, NULL, NULL));
    cr_assert(ggml_gallocr_alloc_graph(ga, g1));
    cr_assert_not(ggml_gallocr_alloc_graph(ga, g2), "same counts and sizes, but another graph");
    cr_assert(strstr(ggmlx_last_error(), "not the one reserved") != NULL, "%s", ggmlx_last_error());
    ASSERT_ERROR();
    ggml_gallocr_free(ga);
}

Test(gallocr_multi, one_buffer_plans_anew_when_the_wiring_changed) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * x1, * y1, * x2, * y2;
    struct ggml_cgraph * g1 = wired(false, &x1, &y1);
    struct ggml_cgraph * g2 = wired(true, &x2, &y2);
    cr_assert(ggml_gallocr_alloc_graph(ga, g1));
    cr_assert(ggml_gallocr_alloc_graph(ga, g2));
    fill(x2, 1.0f);
    fill(y2, 2.0f);
    cr_assert_eq(run(g2), GGML_STATUS_SUCCESS);
    struct ggml_tensor * c = ggml_graph_node(g2, 2);
    cr_assert_float_eq(at(c, 128), (1.0f + 2.0f) + (2.0f + 2.0f), 1e-5);
    ggml_gallocr_free(ga);
}

/* ---- failures ------------------------------------------------------------------------------ */

TestSuite(gallocr_fail, .init = setup, .fini = teardown);

Test(gallocr_fail, reserve_over_the_device_limit_fails_and_keeps_the_old_buffer) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 3 * NB, 0, 0));
    struct ggml_tensor * xs = vec(N, "xs");
    struct ggml_cgraph * small = graph_of(copy_chain(xs, 3));
    cr_assert(ggml_gallocr_reserve(ga, small));
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB);

    struct ggml_cgraph * large = graph_of(copy_chain(vec(4 * N, "xl"), 3));
    cr_assert_not(ggml_gallocr_reserve(ga, large));
    ASSERT_ERROR();
    cr_assert_gt(tb.st.n_refused, 0);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 2 * NB, "the previous size is kept");
    cr_assert_eq(tb.st.live_bufs, 1);
    cr_assert_eq(tb.st.live_bytes, 2 * NB);

    cr_assert(ggml_gallocr_alloc_graph(ga, small), "the previous graph still fits");
    fill(xs, 7.0f);
    cr_assert_eq(run(small), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(ggml_graph_node(small, 2), 10), 7.0f + 10 / 64.0f, 0);
    ggml_gallocr_free(ga);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(gallocr_fail, alloc_graph_over_the_limit_fails_and_the_allocator_stays_usable) {
    static struct tb_buft tb;
    ggml_gallocr_t ga = ggml_gallocr_new(tb_init(&tb, 3 * NB, 0, 0));
    struct ggml_tensor * xl = vec(4 * N, "xl");
    struct ggml_cgraph * large = graph_of(copy_chain(xl, 3));
    cr_assert_not(ggml_gallocr_alloc_graph(ga, large));
    ASSERT_ERROR();
    cr_assert_null(xl->data, "nothing placed");
    cr_assert_eq(tb.st.live_bufs, 0);
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), 0);

    struct ggml_tensor * xs = vec(N, "xs");
    struct ggml_cgraph * small = graph_of(copy_chain(xs, 3));
    cr_assert(ggml_gallocr_alloc_graph(ga, small));
    fill(xs, 2.0f);
    cr_assert_eq(run(small), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(ggml_graph_node(small, 2), 3), 2.0f + 3 / 64.0f, 0);
    ggml_gallocr_free(ga);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(gallocr_fail, a_graph_too_large_for_host_memory_fails_without_aborting) {
    ggml_gallocr_t ga = ggml_gallocr_new(cpu());
    struct ggml_tensor * huge = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t) 1 << 58);
    cr_assert_not_null(huge);
    cr_assert_not(ggml_gallocr_alloc_graph(ga, graph_of(ggml_scale(ctx, huge, 2.0f))));
    ASSERT_ERROR();
    struct ggml_tensor * x = vec(N, "x");
    cr_assert(ggml_gallocr_alloc_graph(ga, graph_of(ggml_cont(ctx, x))), "still usable");
    ggml_gallocr_free(ga);
}

Test(gallocr_fail, several_buffers_keep_the_previous_plan_when_one_cannot_grow) {
    ggml_backend_buffer_type_t bufts[2] = { tb_init(&g_ta, 3 * NB, 0, 0), tb_init(&g_tb, 0, 0, 0) };
    ggml_gallocr_t ga = ggml_gallocr_new_n(bufts, 2);
    struct ggml_tensor * n1[4], * n2[4];
    struct ggml_cgraph * g1 = alternating(N, n1);
    struct ggml_cgraph * g2 = alternating(4 * N, n2);
    cr_assert(ggml_gallocr_reserve_n(ga, g1, g_node_ids, g_leaf_ids));
    cr_assert_not(ggml_gallocr_reserve_n(ga, g2, g_node_ids, g_leaf_ids));
    ASSERT_ERROR();
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), NB);
    cr_assert(ggml_gallocr_alloc_graph(ga, g1), "the graph reserved before is still placed");
    struct ggml_tensor * x = ggml_graph_get_tensor(g1, "x");
    fill(x, 9.0f);
    cr_assert_eq(run(g1), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(at(n1[3], 2), 9.0f + 2 / 64.0f, 0);
    ggml_gallocr_free(ga);
    cr_assert_eq(g_ta.st.live_bufs + g_tb.st.live_bufs, 0);
}
