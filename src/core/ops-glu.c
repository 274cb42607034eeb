/*
 * ops-glu.c -- gated linear units (GGML_OP_GLU).
 *
 * op_params as upstream: [0] the ggml_glu_op, [1] swapped (0/1), and for SWIGLU_OAI [2] alpha,
 * [3] limit (floats). Without b, each row of a holds the activated half and the gate; with b
 * (split), a is activated and b is the gate.
 */
#include "ggml-impl.h"

static bool glu_op_implemented(enum ggml_glu_op op) {
    switch (op) {
    case GGML_GLU_OP_REGLU:
    case GGML_GLU_OP_GEGLU:
    case GGML_GLU_OP_SWIGLU:
    case GGML_GLU_OP_GEGLU_ERF:
    case GGML_GLU_OP_GEGLU_QUICK:
        return true;
    default:
        /* SWIGLU_OAI needs alpha and limit, which only ggml_swiglu_oai sets (see glu_make) */
        return false;
    }
}

/* oai: the caller is ggml_swiglu_oai, which sets alpha and limit (the only maker of SWIGLU_OAI) */
static struct ggml_tensor * glu_make(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     bool split, enum ggml_glu_op op, bool swapped, bool oai, const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (ctx->failed) {
        ggmlx_error(func, "context already failed by an earlier op (see the first error)");
        return NULL;
    }
    if (a == NULL || (split && b == NULL)) {
        ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", a == NULL ? "a" : "b");
        return NULL;
    }
    if (!glu_op_implemented(op) && !(op == GGML_GLU_OP_SWIGLU_OAI && oai)) {
        const char * name = (int) op >= 0 && op < GGML_GLU_OP_COUNT ? ggml_glu_op_name(op) : "(out of range)";
        if (op == GGML_GLU_OP_SWIGLU_OAI) {
            ggmlx_ctx_fail(ctx, func, "glu op SWIGLU_OAI is not implemented through %s: it needs the alpha and "
                           "limit that ggml_swiglu_oai sets", func);
        } else {
            ggmlx_ctx_fail(ctx, func, "glu op %d (%s) is not implemented in ggmlx yet", (int) op, name ? name : "?");
        }
        return NULL;
    }
    if (a->type != GGML_TYPE_F32 && a->type != GGML_TYPE_F16 && a->type != GGML_TYPE_BF16) {
        ggmlx_ctx_fail(ctx, func, "a %s: only F32, F16 and BF16 are supported", GGMLX_SHAPE(a));
        return NULL;
    }
    int64_t ne[GGML_MAX_DIMS];
    if (split) {
        if (b->type != a->type || !ggml_are_same_shape(a, b)) {
            ggmlx_ctx_fail(ctx, func, "a %s and gate b %s must have the same shape and type",
                           GGMLX_SHAPE(a), GGMLX_SHAPE(b));
            return NULL;
        }
        memcpy(ne, a->ne, sizeof ne);
    } else {
        /* an odd row's last element belongs to neither half and is left out, as upstream does */
        memcpy(ne, a->ne, sizeof ne);
        ne[0] = a->ne[0] / 2;
    }
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, a->type, GGML_MAX_DIMS, ne, NULL, 0, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) op);
    ggmlx_set_op_params_i32(result, 1, swapped ? 1 : 0);
    result->op     = GGML_OP_GLU;
    result->src[0] = a;
    result->src[1] = split ? b : NULL;
    return result;
}

static struct ggml_tensor * glu_impl(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     bool split, enum ggml_glu_op op, bool swapped, const char * func) {
    return glu_make(ctx, a, b, split, op, swapped, false, func);
}

struct ggml_tensor * ggml_glu(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_glu_op op, bool swapped) {
    return glu_impl(ctx, a, NULL, false, op, swapped, __func__);
}

struct ggml_tensor * ggml_glu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    enum ggml_glu_op op) {
    return glu_impl(ctx, a, b, true, op, false, __func__);
}

struct ggml_tensor * ggml_geglu(struct ggml_context * ctx, struct ggml_tensor * a) {
    return glu_impl(ctx, a, NULL, false, GGML_GLU_OP_GEGLU, false, __func__);
}

struct ggml_tensor * ggml_geglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a) {
    return glu_impl(ctx, a, NULL, false, GGML_GLU_OP_GEGLU, true, __func__);
}

struct ggml_tensor * ggml_geglu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return glu_impl(ctx, a, b, true, GGML_GLU_OP_GEGLU, false, __func__);
}

struct ggml_tensor * ggml_swiglu(struct ggml_context * ctx, struct ggml_tensor * a) {
    return glu_impl(ctx, a, NULL, false, GGML_GLU_OP_SWIGLU, false, __func__);
}

struct ggml_tensor * ggml_swiglu_swapped(struct ggml_context * ctx, struct ggml_tensor * a) {
    return glu_impl(ctx, a, NULL, false, GGML_GLU_OP_SWIGLU, true, __func__);
}

struct ggml_tensor * ggml_swiglu_split(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b) {
    return glu_impl(ctx, a, b, true, GGML_GLU_OP_SWIGLU, false, __func__);
}

#define GGMLX_DEFINE_GLU(name, gop)                                                                   \
    struct ggml_tensor * ggml_##name(struct ggml_context * ctx, struct ggml_tensor * a) {              \
        return glu_impl(ctx, a, NULL, false, gop, false, __func__);                                    \
    }                                                                                                  \
    struct ggml_tensor * ggml_##name##_swapped(struct ggml_context * ctx, struct ggml_tensor * a) {    \
        return glu_impl(ctx, a, NULL, false, gop, true, __func__);                                     \
    }                                                                                                  \
    struct ggml_tensor * ggml_##name##_split(struct ggml_context * ctx, struct ggml_tensor * a,        \
                                             struct ggml_tensor * b) {                                 \
        return glu_impl(ctx, a, b, true, gop, false, __func__);                                        \
    }

GGMLX_DEFINE_GLU(reglu,       GGML_GLU_OP_REGLU)
GGMLX_DEFINE_GLU(geglu_erf,   GGML_GLU_OP_GEGLU_ERF)
GGMLX_DEFINE_GLU(geglu_quick, GGML_GLU_OP_GEGLU_QUICK)

#undef GGMLX_DEFINE_GLU

/*
 * As upstream, b may be NULL (then each row of a holds x and the gate, not swapped). alpha and
 * limit are taken as given (upstream checks neither).
 */
struct ggml_tensor * ggml_swiglu_oai(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                     float alpha, float limit) {
    struct ggml_tensor * result = glu_make(ctx, a, b, b != NULL, GGML_GLU_OP_SWIGLU_OAI, false, true, __func__);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 2, alpha);
        ggmlx_set_op_params_f32(result, 3, limit);
    }
    return result;
}
