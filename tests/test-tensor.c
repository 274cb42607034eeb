/*
 * test-tensor.c -- tensor creation, strides, names, flags, element access and layout queries.
 */
#include <criterion/criterion.h>

#include "test-util.h"

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 16 * 1024 * 1024, NULL, false };
    ctx = ggml_init(p);
}

static void teardown(void) {
    ggml_free(ctx);
}

TestSuite(tensor, .init = setup, .fini = teardown);

Test(tensor, new_tensor_shapes_and_contiguous_strides) {
    struct ggml_tensor * t = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 5, 4, 3, 2);
    cr_assert_eq(t->ne[0], 5); cr_assert_eq(t->ne[3], 2);
    cr_assert_eq(t->nb[0], 2); cr_assert_eq(t->nb[1], 10); cr_assert_eq(t->nb[2], 40); cr_assert_eq(t->nb[3], 120);
    cr_assert_eq(ggml_nelements(t), 120);
    cr_assert_eq(ggml_nrows(t), 24);
    cr_assert_eq(ggml_nbytes(t), 240);
    cr_assert_eq(ggml_n_dims(t), 4);
    cr_assert(ggml_is_contiguous(t));
    cr_assert_eq(t->op, GGML_OP_NONE);
    const int64_t ne[2] = { 7, 3 };
    struct ggml_tensor * u = ggml_new_tensor(ctx, GGML_TYPE_I32, 2, ne);
    cr_assert_eq(u->ne[2], 1);
    cr_assert_eq(ggml_n_dims(u), 2);
    cr_assert_eq(ggml_element_size(u), 4);
}

Test(tensor, quantized_row_size_uses_blocks) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 3);
    cr_assert_not_null(t);
    cr_assert_eq(t->nb[0], 18);
    cr_assert_eq(t->nb[1], 36);
    cr_assert_eq(ggml_nbytes(t), 108);
    cr_assert_eq(ggml_row_size(GGML_TYPE_Q4_0, 64), 36);
    cr_assert_null(ggml_new_tensor_1d(ctx, GGML_TYPE_Q4_0, 33), "33 is not a whole number of blocks");
}

Test(tensor, dup_tensor_copies_shape_not_data_or_name) {
    struct ggml_tensor * a = ggml_set_name(ggml_new_tensor_3d(ctx, GGML_TYPE_BF16, 3, 4, 5), "a");
    struct ggml_tensor * d = ggml_dup_tensor(ctx, a);
    cr_assert(ggml_are_same_shape(a, d));
    cr_assert_eq(d->type, GGML_TYPE_BF16);
    cr_assert_neq(d->data, a->data);
    cr_assert_str_empty(d->name);
}

Test(tensor, names_truncate_and_format) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    char long_name[200];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    ggml_set_name(t, long_name);
    cr_assert_eq(strlen(ggml_get_name(t)), GGML_MAX_NAME - 1);
    ggml_format_name(t, "layer.%d.%s", 12, "wq");
    cr_assert_str_eq(t->name, "layer.12.wq");
}

Test(tensor, flags) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    ggml_set_input(t);
    ggml_set_output(t);
    ggml_set_param(t);
    ggml_set_loss(t);
    cr_assert_eq(t->flags, GGML_TENSOR_FLAG_INPUT | GGML_TENSOR_FLAG_OUTPUT | GGML_TENSOR_FLAG_PARAM | GGML_TENSOR_FLAG_LOSS);
    struct ggml_tensor * v = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_set_loss(v); /* not a scalar: refused */
    cr_assert_eq(v->flags & GGML_TENSOR_FLAG_LOSS, 0);
    cr_assert_not_null(ggmlx_last_error());
}

Test(tensor, set_and_get_elements_every_type) {
    const enum ggml_type types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32, GGML_TYPE_I16, GGML_TYPE_I8 };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        struct ggml_tensor * t = ggml_new_tensor_2d(ctx, types[k], 3, 2);
        ggml_set_f32(t, 2.0f);
        cr_assert_float_eq(ggml_get_f32_1d(t, 5), 2.0f, 0);
        ggml_set_i32_nd(t, 1, 1, 0, 0, 7);
        cr_assert_eq(ggml_get_i32_1d(t, 4), 7, "type %s", ggml_type_name(types[k]));
        ggml_set_f32_1d(t, 0, -3.0f);
        cr_assert_float_eq(ggml_get_f32_nd(t, 0, 0, 0, 0), -3.0f, 0);
        ggml_set_i32(t, 9);
        cr_assert_eq(ggml_get_i32_nd(t, 2, 1, 0, 0), 9);
    }
    struct ggml_tensor * big = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    ggml_set_i32_1d(big, 0, 16777217); /* not representable in float: must survive exactly */
    cr_assert_eq(ggml_get_i32_1d(big, 0), 16777217);
}

Test(tensor, element_access_out_of_range_is_refused) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    ggml_set_f32(t, 1.0f);
    ggml_set_f32_1d(t, 6, 5.0f);
    cr_assert_not_null(ggmlx_last_error());
    ggml_set_f32_nd(t, 0, 2, 0, 0, 5.0f);
    cr_assert_not_null(ggmlx_last_error());
    ggml_set_f32_1d(t, -1, 5.0f);
    for (int i = 0; i < 6; i++) {
        cr_assert_float_eq(ggml_get_f32_1d(t, i), 1.0f, 0, "element %d changed", i);
    }
    cr_assert_float_eq(ggml_get_f32_1d(t, 100), 0.0f, 0);
    cr_assert_not_null(ggmlx_last_error());
}

/* a float out of an integer type's range was converted with undefined behaviour (INT_MIN on x86) */
Test(tensor, element_access_saturates_floats_into_integer_types) {
    struct ggml_tensor * i32 = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    struct ggml_tensor * i16 = ggml_new_tensor_1d(ctx, GGML_TYPE_I16, 4);
    struct ggml_tensor * i8  = ggml_new_tensor_1d(ctx, GGML_TYPE_I8, 4);
    cr_assert_eq(ggml_set_f32(i32, 1e30f), i32);
    cr_assert_eq(ggml_get_i32_1d(i32, 3), INT32_MAX);
    ggml_set_f32_1d(i32, 0, -1e30f);
    ggml_set_f32_1d(i32, 1, NAN);
    ggml_set_f32_1d(i32, 2, -7.9f);
    cr_assert_eq(ggml_get_i32_1d(i32, 0), INT32_MIN);
    cr_assert_eq(ggml_get_i32_1d(i32, 1), 0, "NaN becomes 0");
    cr_assert_eq(ggml_get_i32_1d(i32, 2), -7, "truncated toward zero");
    ggml_set_f32(i16, -1e9f);
    ggml_set_f32_1d(i16, 1, 40000.0f);
    cr_assert_eq(ggml_get_i32_1d(i16, 0), INT16_MIN);
    cr_assert_eq(ggml_get_i32_1d(i16, 1), INT16_MAX);
    ggml_set_f32_nd(i8, 2, 0, 0, 0, 300.0f);
    ggml_set_f32_nd(i8, 3, 0, 0, 0, -300.0f);
    cr_assert_eq(ggml_get_i32_1d(i8, 2), INT8_MAX);
    cr_assert_eq(ggml_get_i32_1d(i8, 3), INT8_MIN);
    /* reading a float tensor as an integer saturates the same way */
    struct ggml_tensor * f = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggml_set_f32_1d(f, 0, 3e38f);
    ggml_set_f32_1d(f, 1, -INFINITY);
    ggml_set_f32_1d(f, 2, NAN);
    cr_assert_eq(ggml_get_i32_1d(f, 0), INT32_MAX);
    cr_assert_eq(ggml_get_i32_nd(f, 1, 0, 0, 0), INT32_MIN);
    cr_assert_eq(ggml_get_i32_1d(f, 2), 0);
    cr_assert_null(ggmlx_last_error(), "a saturated value is no error: %s", ggmlx_last_error());
}

Test(tensor, element_access_follows_strides_of_views) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 2);
    for (int i = 0; i < 6; i++) {
        ggml_set_f32_1d(t, i, (float) i);
    }
    struct ggml_tensor * tt = ggml_transpose(ctx, t); /* [2, 3] */
    cr_assert_float_eq(ggml_get_f32_nd(tt, 1, 0, 0, 0), 3.0f, 0);
    cr_assert_float_eq(ggml_get_f32_1d(tt, 1), 3.0f, 0);
    cr_assert_float_eq(ggml_get_f32_1d(tt, 2), 1.0f, 0);
}

Test(tensor, new_scalars) {
    cr_assert_eq(ggml_get_i32_1d(ggml_new_i32(ctx, -42), 0), -42);
    cr_assert_float_eq(ggml_get_f32_1d(ggml_new_f32(ctx, 1.5f), 0), 1.5f, 0);
}

Test(tensor, set_zero_and_data_accessors) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 10);
    ggml_set_f32(t, 3.0f);
    cr_assert_eq(ggml_set_zero(t), t);
    for (int i = 0; i < 10; i++) {
        cr_assert_float_eq(ggml_get_data_f32(t)[i], 0.0f, 0);
    }
    cr_assert_eq(ggml_get_data(t), t->data);
    cr_assert_null(ggml_get_data_f32(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1)));
}

Test(tensor, unravel_index) {
    struct ggml_tensor * t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 3, 4, 5);
    int64_t i0, i1, i2, i3;
    ggml_unravel_index(t, 1 + 2 * 2 + 3 * 6 + 4 * 24, &i0, &i1, &i2, &i3);
    cr_assert_eq(i0, 1); cr_assert_eq(i1, 2); cr_assert_eq(i2, 3); cr_assert_eq(i3, 4);
}

/* an empty tensor has no index to unravel: an error, not a division by zero (SIGFPE) */
Test(tensor, unravel_index_of_empty_tensor_is_an_error) {
    struct ggml_tensor * t = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 0, 4, 5);
    int64_t i0 = -1, i1 = -1, i2 = -1, i3 = -1;
    ggml_unravel_index(t, 0, &i0, &i1, &i2, &i3);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(i0, -1);
    cr_assert_eq(i3, -1);
}

Test(tensor, layout_queries) {
    struct ggml_tensor * m = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    cr_assert(ggml_is_3d(m)); cr_assert_not(ggml_is_matrix(m)); cr_assert_not(ggml_is_vector(m));
    cr_assert(ggml_is_scalar(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1)));
    cr_assert(ggml_is_empty(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 0)));
    struct ggml_tensor * tr = ggml_transpose(ctx, m);
    cr_assert(ggml_is_transposed(tr)); cr_assert(ggml_is_permuted(tr));
    cr_assert_not(ggml_is_contiguous(tr));
    cr_assert(ggml_is_contiguously_allocated(tr));
    struct ggml_tensor * p = ggml_permute(ctx, m, 0, 2, 1, 3); /* rows stay contiguous */
    cr_assert_not(ggml_is_contiguous(p));
    cr_assert(ggml_is_contiguous_rows(p));
    cr_assert(ggml_is_contiguous_1(ggml_view_2d(ctx, m, 2, 3, m->nb[1], 0)));
    cr_assert_not(ggml_is_contiguous(ggml_view_2d(ctx, m, 2, 3, m->nb[1], 0)));
    cr_assert(ggml_are_same_shape(m, ggml_dup_tensor(ctx, m)));
    cr_assert(ggml_are_same_stride(m, ggml_dup_tensor(ctx, m)));
    cr_assert(ggml_can_repeat(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), m));
    cr_assert_not(ggml_can_repeat(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3), m));
}

Test(tensor, type_traits_and_conversions) {
    cr_assert_str_eq(ggml_type_name(GGML_TYPE_Q4_K), "q4_K");
    cr_assert_eq(ggml_blck_size(GGML_TYPE_Q4_K), 256);
    cr_assert_eq(ggml_type_size(GGML_TYPE_Q4_K), 144);
    cr_assert(ggml_is_quantized(GGML_TYPE_Q8_0));
    cr_assert_not(ggml_is_quantized(GGML_TYPE_BF16));
    const struct ggml_type_traits * tr = ggml_get_type_traits(GGML_TYPE_F16);
    float in[3] = { 1.5f, -2.25f, 65504.0f }, out[3];
    uint16_t h[3];
    tr->from_float_ref(in, h, 3);
    tr->to_float(h, out, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_float_eq(out[i], in[i], 0);
    }
    cr_assert_float_eq(ggml_bf16_to_fp32(ggml_fp32_to_bf16(3.0f)), 3.0f, 0);
    cr_assert_float_eq(ggml_fp16_to_fp32(ggml_fp32_to_fp16(0.1f)), 0.0999755859375f, 0);
    cr_assert_str_eq(ggml_op_name(GGML_OP_MUL_MAT), "MUL_MAT");
    cr_assert_str_eq(ggml_unary_op_name(GGML_UNARY_OP_SILU), "SILU");
    cr_assert_str_eq(ggml_glu_op_name(GGML_GLU_OP_SWIGLU), "SWIGLU");
    cr_assert_eq(ggml_ftype_to_ggml_type(GGML_FTYPE_MOSTLY_Q4_0), GGML_TYPE_Q4_0);
    cr_assert_null(ggml_get_type_traits((enum ggml_type) 999));
    cr_assert_str_eq(ggml_type_name((enum ggml_type) 999), "NONE");
}

Test(tensor, validate_row_data_finds_non_finite_values) {
    float ok[4] = { 1, 2, 3, 4 }, bad[4] = { 1, 2, INFINITY, 4 };
    cr_assert(ggml_validate_row_data(GGML_TYPE_F32, ok, sizeof ok));
    cr_assert_not(ggml_validate_row_data(GGML_TYPE_F32, bad, sizeof bad));
    uint16_t h[2] = { 0x3c00, 0x7e00 };
    cr_assert_not(ggml_validate_row_data(GGML_TYPE_F16, h, sizeof h));
    cr_assert_not(ggml_validate_row_data(GGML_TYPE_F32, ok, 3), "not a whole number of values");
}

Test(tensor, version_and_status_strings) {
    cr_assert_str_not_empty(ggml_version());
    cr_assert_str_not_empty(ggml_commit());
    cr_assert(strstr(ggml_status_to_string(GGML_STATUS_ALLOC_FAILED), "allocate") != NULL);
    cr_assert(strstr(ggml_status_to_string(GGML_STATUS_SUCCESS), "success") != NULL);
    int64_t t0 = ggml_time_us();
    cr_assert_geq(ggml_time_us(), t0);
    cr_assert_gt(ggml_time_ms(), 0);
    ggml_guid a = { 1, 2, 3 }, b = { 1, 2, 3 }, c = { 9 };
    cr_assert(ggml_guid_matches(&a, &b));
    cr_assert_not(ggml_guid_matches(&a, &c));
}
