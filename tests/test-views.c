/*
 * test-views.c -- views, reshapes, permutes and transposes: metadata, shared memory, bounds,
 * and strides, offsets or shapes so large their byte or element counts would wrap (refused).
 */
#include <criterion/criterion.h>

#include "test-util.h"

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 4 * 1024 * 1024, NULL, false };
    ctx = ggml_init(p);
}

static void teardown(void) {
    ggml_free(ctx);
}

TestSuite(views, .init = setup, .fini = teardown);

Test(views, view_2d_points_into_source_with_given_stride) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * v = ggml_view_2d(ctx, a, 3, 2, a->nb[1], 2 * a->nb[1] + 4);
    cr_assert_not_null(v);
    cr_assert_eq(v->op, GGML_OP_VIEW);
    cr_assert_eq(v->src[0], a);
    cr_assert_eq(v->view_src, a);
    cr_assert_eq(v->view_offs, 2 * a->nb[1] + 4);
    cr_assert_eq((char *) v->data, (char *) a->data + 2 * a->nb[1] + 4);
    cr_assert_eq(v->nb[1], a->nb[1]);
    size_t off;
    memcpy(&off, v->op_params, sizeof off);
    cr_assert_eq(off, v->view_offs, "the offset is kept in op_params as upstream");
}

Test(views, view_of_view_points_at_the_owner) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    struct ggml_tensor * v1 = ggml_view_1d(ctx, a, 50, 40);
    struct ggml_tensor * v2 = ggml_view_1d(ctx, v1, 10, 8);
    cr_assert_eq(v2->view_src, a);
    cr_assert_eq(v2->view_offs, 48);
    cr_assert_eq((char *) v2->data, (char *) a->data + 48);
    cr_assert_eq(v2->src[0], v1);
}

Test(views, views_out_of_range_are_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    cr_assert_null(ggml_view_1d(ctx, a, 33, 0));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "ggml_view_1d") != NULL, "%s", ggmlx_last_error());
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    cr_assert_null(ggml_view_1d(ctx, a, 8, 100));
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    /* rows of 8 with a stride of 40 bytes: the 4th row would end past the data */
    cr_assert_null(ggml_view_2d(ctx, a, 8, 4, 40, 0));
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    cr_assert_not_null(ggml_view_2d(ctx, a, 8, 4, 32, 0), "exactly the whole tensor is fine");
}

Test(views, view_3d_and_4d_strides) {
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 4, 3, 2, 2);
    struct ggml_tensor * v3 = ggml_view_3d(ctx, a, 4, 3, 2, a->nb[1], a->nb[2], a->nb[3]);
    cr_assert_eq(v3->nb[2], a->nb[2]);
    cr_assert_eq((char *) v3->data, (char *) a->data + a->nb[3]);
    struct ggml_tensor * v4 = ggml_view_4d(ctx, a, 2, 3, 2, 2, a->nb[1], a->nb[2], a->nb[3], 8);
    cr_assert_eq(v4->ne[0], 2);
    cr_assert_eq(v4->nb[3], a->nb[3]);
}

Test(views, reshape_keeps_data_and_count) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4);
    struct ggml_tensor * r = ggml_reshape_3d(ctx, a, 2, 3, 4);
    cr_assert_eq(r->op, GGML_OP_RESHAPE);
    cr_assert_eq(r->data, a->data);
    cr_assert_eq(r->ne[1], 3);
    cr_assert_eq(r->nb[2], 24);
    cr_assert_not_null(ggml_reshape_1d(ctx, a, 24));
    cr_assert_not_null(ggml_reshape_4d(ctx, a, 1, 2, 3, 4));
    cr_assert_not_null(ggml_reshape(ctx, a, ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 12, 2)));
    cr_assert_null(ggml_reshape_2d(ctx, a, 5, 5));
}

Test(views, reshape_of_non_contiguous_is_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 6, 4);
    cr_assert_null(ggml_reshape_1d(ctx, ggml_transpose(ctx, a), 24));
    cr_assert(strstr(ggmlx_last_error(), "cont") != NULL, "message should suggest ggml_cont: %s", ggmlx_last_error());
}

Test(views, permute_moves_dims_to_their_new_axes) {
    struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 3, 4, 5);
    struct ggml_tensor * p = ggml_permute(ctx, a, 2, 0, 1, 3);
    cr_assert_eq(p->op, GGML_OP_PERMUTE);
    cr_assert_eq(p->ne[2], 2); cr_assert_eq(p->nb[2], a->nb[0]);
    cr_assert_eq(p->ne[0], 3); cr_assert_eq(p->nb[0], a->nb[1]);
    cr_assert_eq(p->ne[1], 4); cr_assert_eq(p->nb[1], a->nb[2]);
    cr_assert_eq(p->ne[3], 5);
    cr_assert_eq(p->op_params[0], 2);
    cr_assert_eq(p->data, a->data);
    cr_assert_null(ggml_permute(ctx, a, 0, 0, 1, 2));
}

Test(views, permute_rejects_bad_axes) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2, 3);
    cr_assert_null(ggml_permute(ctx, a, 0, 1, 2, 4));
    cr_assert(ggmlx_context_is_failed(ctx));
}

Test(views, transpose_swaps_first_two_dims) {
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 2, 3, 4);
    struct ggml_tensor * t = ggml_transpose(ctx, a);
    cr_assert_eq(t->ne[0], 3); cr_assert_eq(t->ne[1], 2);
    cr_assert_eq(t->nb[0], a->nb[1]); cr_assert_eq(t->nb[1], a->nb[0]);
    cr_assert_eq(t->op, GGML_OP_TRANSPOSE);
}

Test(views, copies_have_the_right_metadata) {
    struct ggml_tensor * a = ggml_set_name(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2), "a");
    struct ggml_tensor * b = ggml_set_name(ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 2, 3), "b");
    struct ggml_tensor * c = ggml_cpy(ctx, a, b);
    cr_assert_eq(c->op, GGML_OP_CPY);
    cr_assert_eq(c->src[0], a); cr_assert_eq(c->src[1], b);
    cr_assert_eq(c->view_src, b);
    cr_assert_str_eq(c->name, "b (copy of a)");
    struct ggml_tensor * k = ggml_cast(ctx, a, GGML_TYPE_BF16);
    cr_assert_eq(k->type, GGML_TYPE_BF16);
    cr_assert_eq(k->src[1], k);
    struct ggml_tensor * ct = ggml_cont_2d(ctx, ggml_transpose(ctx, a), 1, 6);
    cr_assert_eq(ct->op, GGML_OP_CONT);
    cr_assert_eq(ct->ne[1], 6);
    cr_assert_null(ggml_cont_2d(ctx, a, 4, 2));
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    cr_assert_null(ggml_cpy(ctx, a, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5)));
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    struct ggml_tensor * d = ggml_dup_inplace(ctx, a);
    cr_assert_eq(d->view_src, a);
    cr_assert_eq(d->op, GGML_OP_DUP);
}

/* ---- sizes that wrap: refused, not wrapped into bounds ------------------------------------- */

/* r came from a view or reshape of a that had to be refused: NULL, why, nothing taken */
static void assert_refused(const struct ggml_tensor * r, const char * func, const char * why, size_t used) {
    cr_assert_null(r, "%s accepted it", func);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), func) != NULL && strstr(ggmlx_last_error(), why) != NULL,
              "%s: says '%s': %s", func, why, ggmlx_last_error());
    cr_assert(ggmlx_context_is_failed(ctx));
    cr_assert_eq(ggml_used_mem(ctx), used, "%s: nothing taken from the context", func);
}

Test(views, a_view_whose_strides_overflow_is_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    const size_t used = ggml_used_mem(ctx);
    /* (2 - 1) * SIZE_MAX + the rest wrapped to a span inside a: this view was accepted */
    assert_refused(ggml_view_4d(ctx, a, 1, 1, 1, 2, 4, 4, SIZE_MAX, 0), "ggml_view_4d", "more bytes than memory", used);
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    assert_refused(ggml_view_3d(ctx, a, 1, 3, 1, SIZE_MAX / 2 + 1, 4, 0), "ggml_view_3d", "more bytes than memory",
                   ggml_used_mem(ctx));
}

Test(views, a_view_of_a_view_whose_offset_overflows_is_refused) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    struct ggml_tensor * v = ggml_view_1d(ctx, a, 4, 16);
    const size_t used = ggml_used_mem(ctx);
    /* 16 + (SIZE_MAX - 8) wraps to 7: this view landed inside a */
    assert_refused(ggml_view_1d(ctx, v, 1, SIZE_MAX - 8), "ggml_view_1d", "overflows", used);
}

Test(views, a_reshape_or_cont_to_more_than_int64_elements_is_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    const int64_t big = (int64_t) 1 << 32;
    const size_t used = ggml_used_mem(ctx);
    /* 2^32 * 2^32 * 2^16 * 2^16 overflowed int64 (undefined behaviour) before it was compared */
    assert_refused(ggml_reshape_4d(ctx, a, big, big, 1 << 16, 1 << 16), "ggml_reshape_4d", "INT64_MAX", used);
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    assert_refused(ggml_cont_4d(ctx, a, big, big, 1 << 16, 1 << 16), "ggml_cont_4d", "8 elements", ggml_used_mem(ctx));
    ggml_reset(ctx);
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    assert_refused(ggml_reshape_2d(ctx, a, -4, -2), "ggml_reshape_2d", "negative", ggml_used_mem(ctx));
}
