/*
 * test-tensor-locals.c -- the GGML_TENSOR_*_LOCALS macros give the shapes and strides of a
 * kernel's tensors as locals under upstream's names (llama.cpp's test-backend-ops uses them).
 */
#include <criterion/criterion.h>

#include "ggml.h"

static struct ggml_context * ctx_new(void) {
    struct ggml_init_params ip = { 1 << 20, NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);
    return ctx;
}

Test(tensor_locals, binary_op_locals_name_each_tensor_s_shape_and_strides) {
    struct ggml_context * ctx = ctx_new();
    const struct ggml_tensor * src0 = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2, 3, 4, 5);
    const struct ggml_tensor * src1 = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 7, 1, 4);
    const struct ggml_tensor * dst  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 9, 6);
    GGML_TENSOR_BINARY_OP_LOCALS
    cr_assert_eq(ne00 * ne01 * ne02 * ne03, 120);
    cr_assert_eq(ne03, 5);
    cr_assert_eq(nb01, 2 * sizeof(float));
    cr_assert_eq(ne10, 7);
    cr_assert_eq(nb11, 7 * sizeof(ggml_fp16_t));
    cr_assert_eq(ne13, 1);
    cr_assert_eq(ne0, 9);
    cr_assert_eq(ne1, 6);
    cr_assert_eq(nb1, 9 * sizeof(float));
    ggml_free(ctx);
}

Test(tensor_locals, a_null_tensor_gives_zeros) {
    struct ggml_context * ctx = ctx_new();
    const struct ggml_tensor * src0 = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    const struct ggml_tensor * src1 = NULL;
    const struct ggml_tensor * src2 = NULL;
    const struct ggml_tensor * dst  = src0;
    GGML_TENSOR_TERNARY_OP_LOCALS
    cr_assert_eq(ne00, 4);
    cr_assert_eq(ne10 + ne11 + ne12 + ne13, 0);
    cr_assert_eq(nb20 + nb21 + nb22 + nb23, 0);
    cr_assert_eq(ne0, 4);
    ggml_free(ctx);
}

Test(tensor_locals, unary_op_locals) {
    struct ggml_context * ctx = ctx_new();
    const struct ggml_tensor * src0 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 8);
    const struct ggml_tensor * dst  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
    GGML_TENSOR_UNARY_OP_LOCALS
    cr_assert_eq(ne01, 8);
    cr_assert_eq(ne0, 8);
    cr_assert_eq(nb1, 8 * sizeof(float));
    ggml_free(ctx);
}
