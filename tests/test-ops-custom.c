/*
 * test-ops-custom.c -- the custom ops (map_custom1/2/3 and _inplace, custom_4d, custom_inplace):
 * the callback's thread index and count, userdata and sources; the graph utilities
 * (build_forward_select, build_forward_order, mul_mat_set_hint) and the tensor predicates
 * (is_view, is_contiguous_to_1/2/3); every refused argument.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <stdatomic.h>

struct seen {
    atomic_int calls;
    atomic_int mask; /* bit ith set by each call */
    atomic_int nth;
    int        magic;
};

/* dst = 2 a, rows split as ith/nth say */
static void twice(struct ggml_tensor * dst, const struct ggml_tensor * a, int ith, int nth, void * ud) {
    struct seen * s = (struct seen *) ud;
    cr_assert_eq(s->magic, 1234);
    atomic_fetch_add(&s->calls, 1);
    atomic_fetch_or(&s->mask, 1 << ith);
    atomic_store(&s->nth, nth);
    const int64_t n = ggml_nelements(dst);
    for (int64_t i = ith; i < n; i += nth) {
        ((float *) dst->data)[i] = 2.0f * ((const float *) a->data)[i];
    }
}

static void sum2(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b, int ith, int nth,
                 void * ud) {
    (void) ud;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) {
        ((float *) dst->data)[i] = ((const float *) a->data)[i] + ((const float *) b->data)[i];
    }
}

static void fma3(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b,
                 const struct ggml_tensor * c, int ith, int nth, void * ud) {
    (void) ud;
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) {
        ((float *) dst->data)[i] = ((const float *) a->data)[i] * ((const float *) b->data)[i] + ((const float *) c->data)[i];
    }
}

/* dst[i] = sum of the sources' element i, plus i */
static void gather(struct ggml_tensor * dst, int ith, int nth, void * ud) {
    struct seen * s = (struct seen *) ud;
    atomic_fetch_add(&s->calls, 1);
    atomic_store(&s->nth, nth);
    for (int64_t i = ith; i < ggml_nelements(dst); i += nth) {
        float v = (float) i;
        for (int k = 0; k < GGML_MAX_SRC && dst->src[k]; k++) {
            v += ((const float *) dst->src[k]->data)[i];
        }
        ((float *) dst->data)[i] = v;
    }
}

static struct ggml_tensor * filled(struct to_env * e, int64_t n, float base) {
    struct ggml_tensor * t = to_new(e, GGML_TYPE_F32, n, 1, 1, 1);
    for (int64_t i = 0; i < n; i++) {
        ((float *) t->data)[i] = base + (float) i;
    }
    return t;
}

static void run_custom1(int n_tasks, int n_threads, int want_nth, bool inplace) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = filled(&e, 5000, 1.0f);
    struct seen s = { .magic = 1234 };
    struct ggml_tensor * r = inplace ? ggml_map_custom1_inplace(e.ctx, a, twice, n_tasks, &s)
                                     : ggml_map_custom1(e.ctx, a, twice, n_tasks, &s);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_MAP_CUSTOM1);
    if (!inplace) {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    cr_assert_eq(atomic_load(&s.calls), want_nth, "calls %d, want %d", atomic_load(&s.calls), want_nth);
    cr_assert_eq(atomic_load(&s.nth), want_nth);
    cr_assert_eq(atomic_load(&s.mask), (1 << want_nth) - 1);
    double * w = (double *) malloc(5000 * sizeof(double));
    for (int i = 0; i < 5000; i++) {
        w[i] = 2.0 * (1.0 + i);
    }
    to_check(r, w, 0.0, "custom1");
    free(w);
    to_end(&e);
}

Test(custom, map_custom1_runs_on_every_thread_for_n_tasks_max) { run_custom1(GGML_N_TASKS_MAX, 3, 3, false); }
Test(custom, map_custom1_runs_on_n_tasks_threads) { run_custom1(2, 3, 2, false); run_custom1(1, 3, 1, true); }
Test(custom, map_custom1_gets_at_most_the_threads_there_are) { run_custom1(8, 2, 2, false); }

Test(custom, map_custom2_and_3_see_their_sources) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = filled(&e, 100, 1.0f), * b = filled(&e, 100, 2.0f), * c = filled(&e, 100, 3.0f);
    struct ggml_tensor * r2 = ggml_map_custom2(e.ctx, a, b, sum2, GGML_N_TASKS_MAX, NULL);
    struct ggml_tensor * r3 = ggml_map_custom3(e.ctx, a, b, c, fma3, 2, NULL);
    cr_assert_not_null(r2);
    cr_assert_not_null(r3);
    to_alloc(&e, r2);
    to_alloc(&e, r3);
    to_compute(&e, r2, 2);
    to_compute(&e, r3, 2);
    double w2[100], w3[100];
    for (int i = 0; i < 100; i++) {
        w2[i] = (1.0 + i) + (2.0 + i);
        w3[i] = (1.0 + i) * (2.0 + i) + (3.0 + i);
    }
    to_check(r2, w2, 0.0, "custom2");
    to_check(r3, w3, 0.0, "custom3");
    struct ggml_tensor * i2 = ggml_map_custom2_inplace(e.ctx, a, b, sum2, 1, NULL);
    struct ggml_tensor * i3 = ggml_map_custom3_inplace(e.ctx, a, b, c, fma3, 1, NULL);
    cr_assert(i2 != NULL && i2->view_src == a && i3 != NULL && i3->view_src == a);
    to_end(&e);
}

Test(custom, custom_4d_makes_a_new_tensor_from_its_args) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * args[2] = { filled(&e, 24, 1.0f), filled(&e, 24, 10.0f) };
    struct seen s = { .magic = 1234 };
    struct ggml_tensor * r = ggml_custom_4d(e.ctx, GGML_TYPE_F32, 2, 3, 4, 1, args, 2, gather, GGML_N_TASKS_MAX, &s);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->op == GGML_OP_CUSTOM && r->ne[0] == 2 && r->ne[1] == 3 && r->ne[2] == 4);
    cr_assert(r->src[0] == args[0] && r->src[1] == args[1] && r->src[2] == NULL);
    to_alloc(&e, r);
    to_compute(&e, r, 2);
    cr_assert_eq(atomic_load(&s.nth), 2);
    double w[24];
    for (int i = 0; i < 24; i++) {
        w[i] = (1.0 + i) + (10.0 + i) + i;
    }
    to_check(r, w, 0.0, "custom_4d");
    to_end(&e);
}

Test(custom, custom_inplace_writes_into_a) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * a = filled(&e, 8, 0.0f);
    struct ggml_tensor * args[1] = { filled(&e, 8, 5.0f) };
    struct seen s = { .magic = 1234 };
    struct ggml_tensor * r = ggml_custom_inplace(e.ctx, a, args, 1, gather, 1, &s);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->view_src == a && r->src[0] == a && r->src[1] == args[0]);
    to_compute(&e, r, 2);
    cr_assert_eq(atomic_load(&s.calls), 1);
    /* the callback reads src[0] (a) and src[1] and writes a itself */
    double w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (double) i + (5.0 + i) + i;
    }
    to_check(a, w, 0.0, "custom_inplace");
    to_end(&e);
}

Test(custom, refuses_a_null_callback) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_map_custom1(ctx, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), NULL, 1, NULL),
                       "ggml_map_custom1");
    ggml_free(ctx);
}

Test(custom, refuses_zero_tasks) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    to_expect_rejected(ctx, ggml_map_custom2(ctx, a, a, sum2, 0, NULL), "ggml_map_custom2");
    ggml_free(ctx);
}

Test(custom, refuses_too_many_args) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * args[GGML_MAX_SRC] = { 0 };
    for (int i = 0; i < GGML_MAX_SRC; i++) {
        args[i] = a;
    }
    to_expect_rejected(ctx, ggml_custom_inplace(ctx, a, args, GGML_MAX_SRC, gather, 1, NULL), "ggml_custom_inplace");
    ggml_free(ctx);
}

Test(custom, refuses_a_null_arg) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * args[2] = { ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), NULL };
    to_expect_rejected(ctx, ggml_custom_4d(ctx, GGML_TYPE_F32, 4, 1, 1, 1, args, 2, gather, 1, NULL), "ggml_custom_4d");
    ggml_free(ctx);
}

/* ---- graph utilities ----------------------------------------------------------------------- */

Test(graph, build_forward_select_computes_only_the_chosen_branch) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * x = filled(&e, 4, 1.0f);
    struct ggml_tensor * br[3] = { ggml_scale(e.ctx, x, 2.0f), ggml_scale(e.ctx, x, 3.0f), ggml_scale(e.ctx, x, 4.0f) };
    for (int i = 0; i < 3; i++) {
        to_alloc(&e, br[i]);
        memset(br[i]->data, 0, ggml_nbytes(br[i]));
    }
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    struct ggml_tensor * out = ggml_build_forward_select(gf, br, 3, 1);
    cr_assert_eq(out, br[1]);
    cr_assert_eq(ggml_graph_n_nodes(gf), 3, "every branch is in the graph");
    cr_assert(!(br[0]->flags & GGML_TENSOR_FLAG_COMPUTE) && (br[1]->flags & GGML_TENSOR_FLAG_COMPUTE) &&
              !(br[2]->flags & GGML_TENSOR_FLAG_COMPUTE));
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 1), GGML_STATUS_SUCCESS);
    const double w1[4] = { 3, 6, 9, 12 }, zero[4] = { 0, 0, 0, 0 };
    to_check(br[1], w1, 0.0, "chosen branch");
    to_check(br[0], zero, 0.0, "branch 0 not computed");
    to_check(br[2], zero, 0.0, "branch 2 not computed");
    to_end(&e);
}

Test(graph, build_forward_order_adds_without_computing_until_expanded) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * x = filled(&e, 4, 1.0f);
    struct ggml_tensor * y = ggml_scale(e.ctx, x, 2.0f);
    struct ggml_tensor * z = ggml_scale(e.ctx, y, 5.0f);
    to_alloc(&e, y);
    to_alloc(&e, z);
    struct ggml_cgraph * gf = ggml_new_graph(e.ctx);
    ggml_build_forward_order(gf, z);
    cr_assert_eq(ggml_graph_n_nodes(gf), 2);
    cr_assert(!(y->flags & GGML_TENSOR_FLAG_COMPUTE) && !(z->flags & GGML_TENSOR_FLAG_COMPUTE));
    ggml_build_forward_expand(gf, z);
    cr_assert_eq(ggml_graph_n_nodes(gf), 2, "expanding again adds nothing");
    cr_assert((y->flags & GGML_TENSOR_FLAG_COMPUTE) && (z->flags & GGML_TENSOR_FLAG_COMPUTE),
              "the expand marks the ordered nodes and their sources");
    cr_assert_eq(ggml_graph_compute_with_ctx(e.ctx, gf, 1), GGML_STATUS_SUCCESS);
    const double w[4] = { 10, 20, 30, 40 };
    to_check(z, w, 0.0, "ordered then expanded");
    to_end(&e);
}

Test(graph, build_forward_select_refuses_an_index_out_of_range) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * br[1] = { ggml_scale(ctx, t, 1.0f) };
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    cr_assert_null(ggml_build_forward_select(gf, br, 1, 1));
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_build_forward_select"));
    ggml_free(ctx);
}

Test(graph, mul_mat_set_hint_sets_op_param_1) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * m = ggml_mul_mat(ctx, a, a);
    ggml_mul_mat_set_hint(m, GGML_HINT_SRC0_IS_HADAMARD);
    cr_assert_eq(ggmlx_get_op_params_i32(m, 1), (int32_t) GGML_HINT_SRC0_IS_HADAMARD);
    cr_assert_null(ggmlx_last_error());
    ggml_mul_mat_set_hint(a, GGML_HINT_NONE);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_mul_mat_set_hint"));
    ggml_mul_mat_set_hint(m, (enum ggml_op_hint) 9);
    cr_assert_eq(ggmlx_get_op_params_i32(m, 1), (int32_t) GGML_HINT_SRC0_IS_HADAMARD, "a bad hint changes nothing");
    ggml_free(ctx);
}

Test(tensor, is_view_tells_views_from_tensors) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    cr_assert(!ggml_is_view(a));
    cr_assert(ggml_is_view(ggml_view_1d(ctx, a, 2, 0)));
    cr_assert(ggml_is_view(ggml_transpose(ctx, a)));
    cr_assert(ggml_is_view(ggml_scale_inplace(ctx, a, 2.0f)));
    cr_assert(!ggml_is_view(ggml_scale(ctx, a, 2.0f)));
    cr_assert(!ggml_is_view(NULL));
    ggml_free(ctx);
}

Test(tensor, is_contiguous_to_checks_the_low_dims_only) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 2);
    cr_assert(ggml_is_contiguous_to_1(a) && ggml_is_contiguous_to_2(a) && ggml_is_contiguous_to_3(a));
    /* dims 2 and 3 swapped: the first two dims stay packed, the third does not */
    struct ggml_tensor * p = ggml_permute(ctx, a, 0, 1, 3, 2);
    cr_assert(ggml_is_contiguous_to_1(p) && ggml_is_contiguous_to_2(p) && !ggml_is_contiguous_to_3(p));
    /* every other row: dim 0 packed, dims 0-1 not */
    struct ggml_tensor * v = ggml_view_3d(ctx, a, 4, 1, 2, 2 * a->nb[1], a->nb[2], 0);
    cr_assert(ggml_is_contiguous_to_1(v) && ggml_is_contiguous_to_2(v));
    struct ggml_tensor * v2 = ggml_view_2d(ctx, a, 4, 2, 2 * a->nb[1], 0);
    cr_assert(ggml_is_contiguous_to_1(v2) && !ggml_is_contiguous_to_2(v2));
    struct ggml_tensor * t = ggml_transpose(ctx, a);
    cr_assert(!ggml_is_contiguous_to_1(t) && !ggml_is_contiguous_to_2(t) && !ggml_is_contiguous_to_3(t));
    ggml_free(ctx);
}
