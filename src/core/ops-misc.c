/*
 * ops-misc.c -- OUT_PROD, DIAG_MASK_ZERO, ARANGE, TIMESTEP_EMBEDDING, COUNT_EQUAL and CUMSUM
 * constructors (shapes, types and op_params as upstream).
 */
#include "ggml-impl.h"

#include <math.h>

/* b's dim repeats a's a whole number of times (an empty a dim only fits an empty b dim) */
static bool broadcasts(int64_t na, int64_t nb) {
    return na == 0 ? nb == 0 : nb % na == 0;
}

/* result[i0, i1, i2, i3] = sum over k of a[i0, k, i2 / r2, i3 / r3] * b[i1, k, i2, i3] */
struct ggml_tensor * ggml_out_prod(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    /*
     * Any types, as upstream's constructor takes them (its test-backend-ops builds quantized a and
     * F16 b); the backends say in supports_op which they compute (the CPU: a float, b F32).
     */
    GGMLX_REQUIRE(ctx, a->ne[1] == b->ne[1] && broadcasts(a->ne[2], b->ne[2]) && broadcasts(a->ne[3], b->ne[3]),
                  "shapes do not fit: a %s, b %s (need a ne1 == b ne1 and b ne2, ne3 whole multiples of a's)",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, !ggml_is_transposed(a), "a must not be transposed (nb0 > nb1): a %s; make it contiguous first",
                  GGMLX_SHAPE(a));

    const int64_t ne[4] = { a->ne[0], b->ne[0], b->ne[2], b->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_OUT_PROD;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

struct ggml_tensor * ggml_diag_mask_zero(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    GGMLX_CTX_CHECK(ctx);
    return ggmlx_diag_mask_impl(ctx, a, n_past, GGML_OP_DIAG_MASK_ZERO, false, __func__);
}

struct ggml_tensor * ggml_diag_mask_zero_inplace(struct ggml_context * ctx, struct ggml_tensor * a, int n_past) {
    GGMLX_CTX_CHECK(ctx);
    return ggmlx_diag_mask_impl(ctx, a, n_past, GGML_OP_DIAG_MASK_ZERO, true, __func__);
}

/* F32 [ceil((stop - start) / step)]; op_params f32 [0] start, [1] stop, [2] step, as upstream */
struct ggml_tensor * ggml_arange(struct ggml_context * ctx, float start, float stop, float step) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE(ctx, isfinite(start) && isfinite(stop) && isfinite(step),
                  "start, stop and step must be finite, got %g, %g, %g", (double) start, (double) stop, (double) step);
    GGMLX_REQUIRE(ctx, stop > start, "stop must be > start, got start %g, stop %g", (double) start, (double) stop);
    GGMLX_REQUIRE(ctx, step > 0.0f, "step must be > 0, got %g", (double) step);
    const double steps = ceil(((double) stop - (double) start) / (double) step);
    GGMLX_REQUIRE(ctx, steps <= (double) INT32_MAX, "too many elements: %g", steps);

    /* the count as upstream computes it, in float */
    const int64_t ne[1] = { (int64_t) ceilf((stop - start) / step) };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 1, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, start);
    ggmlx_set_op_params_f32(result, 1, stop);
    ggmlx_set_op_params_f32(result, 2, step);
    result->op = GGML_OP_ARANGE;
    return result;
}

/* F32 [dim, n] from F32 timesteps [n]; op_params i32 [0] dim, [1] max_period, as upstream */
struct ggml_tensor * ggml_timestep_embedding(struct ggml_context * ctx, struct ggml_tensor * timesteps, int dim,
                                             int max_period) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, timesteps);
    GGMLX_REQUIRE(ctx, timesteps->type == GGML_TYPE_F32, "timesteps must be F32, got %s", GGMLX_SHAPE(timesteps));
    GGMLX_REQUIRE(ctx, timesteps->ne[1] == 1 && timesteps->ne[2] == 1 && timesteps->ne[3] == 1,
                  "timesteps must be 1-D, got %s", GGMLX_SHAPE(timesteps));
    GGMLX_REQUIRE(ctx, dim >= 1, "dim must be >= 1, got %d", dim);
    GGMLX_REQUIRE(ctx, max_period >= 1, "max_period must be >= 1, got %d", max_period);

    const int64_t ne[2] = { dim, timesteps->ne[0] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 2, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, dim);
    ggmlx_set_op_params_i32(result, 1, max_period);
    result->op     = GGML_OP_TIMESTEP_EMBEDDING;
    result->src[0] = timesteps;
    return result;
}

/* I64 [1]: how many elements of a and b are equal */
struct ggml_tensor * ggml_count_equal(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_I32 && b->type == GGML_TYPE_I32, "a and b must be I32, got a %s, b %s",
                  GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(a, b), "a and b must have the same shape, got a %s, b %s", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b));
    const int64_t ne[1] = { 1 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_I64, 1, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_COUNT_EQUAL;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}

/* like a: running sums along each row */
struct ggml_tensor * ggml_cumsum(struct ggml_context * ctx, struct ggml_tensor * a) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE(ctx, a->type == GGML_TYPE_F32, "a must be F32, got %s", GGMLX_SHAPE(a));
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, false, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_CUMSUM;
    result->src[0] = a;
    return result;
}
