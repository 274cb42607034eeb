/*
 * ops-shape.c -- REPEAT (tile a to a larger shape) and CONCAT (join along one dim).
 */
#include "ggml-impl.h"

/*
 * Any type of one element per block, as upstream's constructor takes (its test-backend-ops repeats
 * I16); a backend that cannot move a type says so in supports_op (the CPU: floats and I32).
 */
static bool repeat_type_ok(enum ggml_type t) {
    return t >= 0 && t < GGML_TYPE_COUNT && ggml_blck_size(t) == 1;
}

static struct ggml_tensor * repeat_impl(struct ggml_context * ctx, struct ggml_tensor * a, const int64_t ne[4],
                                        const char * func) {
    if (!repeat_type_ok(a->type)) {
        ggmlx_ctx_fail(ctx, func, "a %s: only types of one element per block can be repeated", GGMLX_SHAPE(a));
        return NULL;
    }
    const bool a_empty = ggml_nelements(a) == 0;
    bool ok = true;
    for (int i = 0; i < GGML_MAX_DIMS; i++) {
        if (ne[i] < 0) {
            ok = false;
        } else if (a_empty) {
            /* nothing to tile from: only an empty result makes sense */
            ok = ok && (ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0);
        } else if (ne[i] % a->ne[i] != 0) {
            ok = false;
        }
    }
    if (!ok) {
        ggmlx_ctx_fail(ctx, func, "a %s cannot be repeated to [%lld, %lld, %lld, %lld] (each dim must be a multiple of a's)",
                       GGMLX_SHAPE(a), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3]);
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, func);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_REPEAT;
    result->src[0] = a;
    return result;
}

struct ggml_tensor * ggml_repeat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    return repeat_impl(ctx, a, b->ne, __func__);
}

struct ggml_tensor * ggml_repeat_4d(struct ggml_context * ctx, struct ggml_tensor * a,
                                    int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    const int64_t ne[GGML_MAX_DIMS] = { ne0, ne1, ne2, ne3 };
    return repeat_impl(ctx, a, ne, __func__);
}

/* op_params[0] = dim, as upstream */
struct ggml_tensor * ggml_concat(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int dim) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    GGMLX_REQUIRE_TENSOR(ctx, b);
    GGMLX_REQUIRE(ctx, dim >= 0 && dim < GGML_MAX_DIMS, "dim %d out of range 0..%d", dim, GGML_MAX_DIMS - 1);
    GGMLX_REQUIRE(ctx, a->type == b->type, "a %s and b %s must have the same type", GGMLX_SHAPE(a), GGMLX_SHAPE(b));
    int64_t ne[GGML_MAX_DIMS];
    for (int d = 0; d < GGML_MAX_DIMS; d++) {
        GGMLX_REQUIRE(ctx, d == dim || a->ne[d] == b->ne[d],
                      "a %s and b %s differ in dim %d (only dim %d may differ)", GGMLX_SHAPE(a), GGMLX_SHAPE(b), d, dim);
        ne[d] = a->ne[d];
    }
    GGMLX_REQUIRE(ctx, !__builtin_add_overflow(a->ne[dim], b->ne[dim], &ne[dim]),
                  "a %s and b %s together have more than INT64_MAX elements in dim %d", GGMLX_SHAPE(a),
                  GGMLX_SHAPE(b), dim);
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, dim);
    result->op     = GGML_OP_CONCAT;
    result->src[0] = a;
    result->src[1] = b;
    return result;
}
