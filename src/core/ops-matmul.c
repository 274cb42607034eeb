/*
 * ops-matmul.c -- MUL_MAT constructor and its precision hint.
 */
#include "ggml-impl.h"

/* b's dim d repeats a's a whole number of times (an empty a dim only fits an empty b dim) */
static bool broadcasts(int64_t na, int64_t nb) {
    return na == 0 ? nb == 0 : nb % na == 0;
}

struct ggml_tensor * ggml_mul_mat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16 || a->type == GGML_TYPE_BF16 ||
                       ggml_is_quantized(a->type),
                  "a must be F32, F16, BF16 or a quantized type, got %s", GGMLX_SHAPE(a));
    /* upstream's constructor takes an F16 b too (test-backend-ops builds it); the CPU computes F32 b only */
    GGMLX_REQUIRE(ctx, b->type == GGML_TYPE_F32 || b->type == GGML_TYPE_F16 || b->type == GGML_TYPE_BF16,
                  "b must be F32, F16 or BF16, got %s", GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, a->ne[0] == b->ne[0] && broadcasts(a->ne[2], b->ne[2]) && broadcasts(a->ne[3], b->ne[3]),
                  "shapes do not fit: a %s, b %s (need a ne0 == b ne0 and b ne2, ne3 whole multiples of a's)",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, !ggml_is_transposed(a), "a must not be transposed (nb0 > nb1): a %s; make it contiguous first",
                  GGMLX_SHAPE(a));

    const int64_t ne[4] = { a->ne[1], b->ne[1], b->ne[2], b->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_MUL_MAT;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

void ggml_mul_mat_set_prec(struct ggml_tensor * a, enum ggml_prec prec) {
    if (a == NULL) {
        ggmlx_error(__func__, "tensor argument 'a' is NULL");
        return;
    }
    if (a->op != GGML_OP_MUL_MAT) {
        ggmlx_error(__func__, "a must be a MUL_MAT result, got op %s", ggml_op_name(a->op));
        return;
    }
    if (prec != GGML_PREC_DEFAULT && prec != GGML_PREC_F32) {
        ggmlx_error(__func__, "unknown precision %d (GGML_PREC_DEFAULT or GGML_PREC_F32)", (int) prec);
        return;
    }
    ggmlx_set_op_params_i32(a, 0, (int32_t) prec);
    ggmlx_ok();
}

/* op_params i32 [1], as upstream; a hint only: every backend's result is the plain product */
void ggml_mul_mat_set_hint(struct ggml_tensor * a, enum ggml_op_hint hint) {
    if (a == NULL) {
        ggmlx_error(__func__, "tensor argument 'a' is NULL");
        return;
    }
    if (a->op != GGML_OP_MUL_MAT) {
        ggmlx_error(__func__, "a must be a MUL_MAT result, got op %s", ggml_op_name(a->op));
        return;
    }
    if (hint != GGML_HINT_NONE && hint != GGML_HINT_SRC0_IS_HADAMARD) {
        ggmlx_error(__func__, "unknown hint %d (GGML_HINT_NONE or GGML_HINT_SRC0_IS_HADAMARD)", (int) hint);
        return;
    }
    ggmlx_set_op_params_i32(a, 1, (int32_t) hint);
    ggmlx_ok();
}
