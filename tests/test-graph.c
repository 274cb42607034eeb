/*
 * test-graph.c -- building graphs: order, leafs, the COMPUTE flag, sizes, copies, views, uid.
 */
#include <criterion/criterion.h>

#include "test-util.h"

#include <unistd.h>

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 16 * 1024 * 1024, NULL, false };
    ctx = ggml_init(p);
}

static void teardown(void) {
    ggml_free(ctx);
}

TestSuite(graph, .init = setup, .fini = teardown);

static int index_in(struct ggml_cgraph * g, struct ggml_tensor * t) {
    for (int i = 0; i < ggml_graph_n_nodes(g); i++) {
        if (ggml_graph_node(g, i) == t) {
            return i;
        }
    }
    return -1;
}

Test(graph, nodes_come_after_their_sources_each_once) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * s = ggml_add(ctx, a, b);
    struct ggml_tensor * m = ggml_mul(ctx, s, s);
    struct ggml_tensor * out = ggml_add(ctx, m, s);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    cr_assert_eq(ggml_graph_n_nodes(g), 3);
    cr_assert_lt(index_in(g, s), index_in(g, m));
    cr_assert_lt(index_in(g, m), index_in(g, out));
    cr_assert_eq(ggml_graph_node(g, -1), out);
    cr_assert_eq(ggml_graph_node(g, 0), s);
    cr_assert_eq(ggml_graph_nodes(g)[1], m);
    cr_assert_null(ggml_graph_node(g, 3));
    cr_assert_null(ggml_graph_node(g, -4));
    ggml_build_forward_expand(g, out); /* nothing new */
    cr_assert_eq(ggml_graph_n_nodes(g), 3);
}

Test(graph, compute_flag_on_nodes_not_leafs) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * r = ggml_relu(ctx, a);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, r);
    cr_assert(r->flags & GGML_TENSOR_FLAG_COMPUTE);
    cr_assert_eq(a->flags & GGML_TENSOR_FLAG_COMPUTE, 0);
    cr_assert_eq(ggml_graph_get_tensor(g, a->name), a, "leafs are named and findable");
    cr_assert_str_eq(a->name, "leaf_0");
}

Test(graph, param_tensors_are_nodes) {
    struct ggml_tensor * w = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_param(w);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ggml_scale(ctx, w, 2.0f));
    cr_assert_eq(ggml_graph_n_nodes(g), 2);
}

Test(graph, custom_size_limits_nodes_and_marks_failed) {
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 4, false);
    cr_assert_eq(ggml_graph_size(g), 4);
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    for (int i = 0; i < 6; i++) {
        x = ggml_relu(ctx, x);
    }
    ggml_build_forward_expand(g, x);
    cr_assert(ggmlx_graph_is_failed(g));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 1), GGML_STATUS_FAILED);
}

Test(graph, overhead_is_enough_for_a_graph) {
    const size_t size = 100;
    struct ggml_init_params p = { ggml_graph_overhead_custom(size, false), NULL, true };
    struct ggml_context * small = ggml_init(p);
    cr_assert_not_null(ggml_new_graph_custom(small, size, false));
    ggml_free(small);
    p.mem_size = ggml_graph_overhead();
    small = ggml_init(p);
    cr_assert_not_null(ggml_new_graph(small));
    ggml_free(small);
}

Test(graph, long_chain_does_not_overflow_the_stack) {
    const int n = 20000;
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, (size_t) n + 10, false);
    struct ggml_init_params p = { (size_t) n * ggml_tensor_overhead() + 1024, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    struct ggml_tensor * x = ggml_new_tensor_1d(meta, GGML_TYPE_F32, 1);
    for (int i = 0; i < n - 1; i++) {
        x = ggml_neg(meta, x);
    }
    ggml_build_forward_expand(g, x);
    cr_assert_eq(ggml_graph_n_nodes(g), n - 1);
    cr_assert_not(ggmlx_graph_is_failed(g));
    ggml_free(meta);
}

Test(graph, cpy_dup_clear_and_uid) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * out = ggml_sqr(ctx, ggml_relu(ctx, a));
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    uint64_t uid0 = ggmlx_graph_uid(g);
    ggml_build_forward_expand(g, out);
    uint64_t uid1 = ggmlx_graph_uid(g);
    cr_assert_neq(uid0, uid1, "adding nodes changes the uid");
    ggml_build_forward_expand(g, out);
    cr_assert_eq(ggmlx_graph_uid(g), uid1, "adding nothing keeps it");

    struct ggml_cgraph * d = ggml_graph_dup(ctx, g, false);
    cr_assert_eq(ggml_graph_n_nodes(d), 2);
    cr_assert_eq(ggml_graph_node(d, 1), out);
    ggml_build_forward_expand(d, out); /* the copy's visited set knows its nodes */
    cr_assert_eq(ggml_graph_n_nodes(d), 2);

    struct ggml_cgraph * tiny = ggml_new_graph_custom(ctx, 1, false);
    ggml_graph_cpy(g, tiny); /* too small: refused, tiny unchanged */
    cr_assert_eq(ggml_graph_n_nodes(tiny), 0);
    cr_assert_not_null(ggmlx_last_error());

    ggml_graph_clear(g);
    cr_assert_eq(ggml_graph_n_nodes(g), 0);
    cr_assert_neq(ggmlx_graph_uid(g), uid1);
    ggml_graph_add_node(g, out);
    cr_assert_eq(ggml_graph_n_nodes(g), 1);
    ggml_graph_reset(g);
}

Test(graph, view_of_a_graph) {
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * n1 = ggml_relu(ctx, x);
    struct ggml_tensor * n2 = ggml_neg(ctx, n1);
    struct ggml_tensor * n3 = ggml_abs(ctx, n2);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, n3);
    struct ggml_cgraph * v = ggmlx_graph_view(ctx, g, 1, 3);
    cr_assert_eq(ggml_graph_n_nodes(v), 2);
    cr_assert_eq(ggml_graph_node(v, 0), n2);
    cr_assert_eq(ggml_graph_node(v, -1), n3);
    ggml_build_forward_expand(v, n1); /* views cannot grow */
    cr_assert_eq(ggml_graph_n_nodes(v), 2);
    cr_assert_null(ggmlx_graph_view(ctx, g, 2, 9));
}

Test(graph, print_and_dump_dot) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    ggml_set_input(a);
    struct ggml_tensor * out = ggml_sum_rows(ctx, ggml_relu(ctx, a));
    ggml_set_output(out);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    ggml_graph_print(g);
    char path[] = "/tmp/ggmlx-test-dot-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    ggml_graph_dump_dot(NULL, g, path);
    FILE * f = fopen(path, "r");
    cr_assert_not_null(f);
    char buf[4096] = { 0 };
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    cr_assert_gt(n, 0);
    cr_assert(strstr(buf, "digraph") != NULL);
    cr_assert(strstr(buf, "SUM_ROWS") != NULL);
    cr_assert(strstr(buf, "->") != NULL);
}

Test(graph, copying_a_graph_onto_itself_keeps_it) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * out = ggml_neg(ctx, ggml_relu(ctx, a));
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    ggml_graph_cpy(g, g);
    cr_assert_eq(ggml_graph_n_nodes(g), 2);
    cr_assert_eq(ggml_graph_node(g, -1), out);
}
