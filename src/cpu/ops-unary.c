/*
 * ops-unary.c -- UNARY (every ggml_unary_op), SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP and
 * LEAKY_RELU, elementwise over any strides; src0 and dst share a float type. The math is in
 * ggml-math-act.h (shared with CUDA).
 */
#include "cpu-ops.h"
#include "ops-elem.h"

typedef float (*unary_fn)(float);

static unary_fn unary_fn_for(const struct ggml_tensor * dst) {
    if (dst->op == GGML_OP_SQR) {
        return ggmlx_sqr_f32;
    }
    if (dst->op == GGML_OP_SQRT) {
        return ggmlx_sqrt_f32;
    }
    if (dst->op == GGML_OP_LOG) {
        return ggmlx_log_f32;
    }
    if (dst->op == GGML_OP_SIN) {
        return ggmlx_sin_f32;
    }
    if (dst->op == GGML_OP_COS) {
        return ggmlx_cos_f32;
    }
    switch ((enum ggml_unary_op) ggmlx_get_op_params_i32(dst, 0)) {
    case GGML_UNARY_OP_ABS:      return ggmlx_abs_f32;
    case GGML_UNARY_OP_NEG:      return ggmlx_neg_f32;
    case GGML_UNARY_OP_TANH:     return ggmlx_tanh_f32;
    case GGML_UNARY_OP_RELU:     return ggmlx_relu_f32;
    case GGML_UNARY_OP_SIGMOID:  return ggmlx_sigmoid_f32;
    case GGML_UNARY_OP_GELU:     return ggmlx_gelu_f32;
    case GGML_UNARY_OP_GELU_ERF: return ggmlx_gelu_erf_f32;
    case GGML_UNARY_OP_SILU:     return ggmlx_silu_f32;
    case GGML_UNARY_OP_EXP:      return ggmlx_exp_f32;
    case GGML_UNARY_OP_SGN:         return ggmlx_sgn_f32;
    case GGML_UNARY_OP_STEP:        return ggmlx_step_f32;
    case GGML_UNARY_OP_ELU:         return ggmlx_elu_f32;
    case GGML_UNARY_OP_GELU_QUICK:  return ggmlx_gelu_quick_f32;
    case GGML_UNARY_OP_HARDSWISH:   return ggmlx_hardswish_f32;
    case GGML_UNARY_OP_HARDSIGMOID: return ggmlx_hardsigmoid_f32;
    case GGML_UNARY_OP_EXPM1:       return ggmlx_expm1_f32;
    case GGML_UNARY_OP_SOFTPLUS:    return ggmlx_softplus_f32;
    case GGML_UNARY_OP_FLOOR:       return ggmlx_floor_f32;
    case GGML_UNARY_OP_CEIL:        return ggmlx_ceil_f32;
    case GGML_UNARY_OP_ROUND:       return ggmlx_round_f32;
    case GGML_UNARY_OP_TRUNC:       return ggmlx_trunc_f32;
    default:                     return NULL; /* XIELU has parameters: ggmlx_cpu_unary_param */
    }
}

/*
 * The F32 rows of every op above, each loop with its function inlined (no call per element, and
 * the simple ones vectorize); FAST_NONE falls back to the call.
 */
#define GGMLX_FAST_UNARY(X)                                                                       \
    X(sqr) X(sqrt) X(log) X(sin) X(cos) X(abs) X(neg) X(tanh) X(relu) X(sigmoid) X(gelu) X(gelu_erf) \
    X(silu) X(exp) X(sgn) X(step) X(elu) X(gelu_quick) X(hardswish) X(hardsigmoid) X(expm1)        \
    X(softplus) X(floor) X(ceil) X(round) X(trunc)

enum fast_kind {
#define X(name) FAST_##name,
    GGMLX_FAST_UNARY(X)
#undef X
    FAST_NONE
};

static enum fast_kind fast_kind_of(unary_fn f) {
#define X(name)                      \
    if (f == ggmlx_##name##_f32) {   \
        return FAST_##name;          \
    }
    GGMLX_FAST_UNARY(X)
#undef X
    return FAST_NONE;
}

static void unary_row_f32(enum fast_kind k, unary_fn f, float * d, const float * s, int64_t n) {
    switch (k) {
#define X(name)                                  \
    case FAST_##name:                            \
        for (int64_t i = 0; i < n; i++) {        \
            d[i] = ggmlx_##name##_f32(s[i]);     \
        }                                        \
        return;
        GGMLX_FAST_UNARY(X)
#undef X
    default:
        for (int64_t i = 0; i < n; i++) {
            d[i] = f(s[i]);
        }
        return;
    }
}

#undef GGMLX_FAST_UNARY

void ggmlx_cpu_unary(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    if (dst->op == GGML_OP_UNARY) {
        switch ((enum ggml_unary_op) ggmlx_get_op_params_i32(dst, 0)) {
        case GGML_UNARY_OP_XIELU: /* four float parameters */
            ggmlx_cpu_unary_param(params, dst);
            return;
        default:
            break;
        }
    }
    const unary_fn f = unary_fn_for(dst);
    if (f == NULL) {
        /* a graph built by hand (or by a newer ggml) with an op this build cannot compute */
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: unary op %d is not implemented in ggmlx yet", dst->name,
                           (int) ggmlx_get_op_params_i32(dst, 0));
        }
        return;
    }
    const bool fast = ggmlx_f32_rows(dst) && ggmlx_f32_rows(src);
    const enum fast_kind kind = fast_kind_of(f);
    const int64_t ne0 = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char       * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * ps = (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3);
        if (fast) {
            unary_row_f32(kind, f, (float *) pd, (const float *) ps, ne0);
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], f(ggmlx_load_f(src->type, ps + i0 * src->nb[0])));
        }
    }
}

void ggmlx_cpu_affine(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, const struct ggml_tensor * src,
                      float s, float b) {
    const bool fast = ggmlx_f32_rows(dst) && ggmlx_f32_rows(src);
    const int64_t ne0 = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char       * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * ps = (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3);
        if (fast) {
            float * d = (float *) pd;
            const float * x = (const float *) ps;
            for (int64_t i0 = 0; i0 < ne0; i0++) {
                d[i0] = x[i0] * s + b;
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            const float x = ggmlx_load_f(src->type, ps + i0 * src->nb[0]);
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], x * s + b);
        }
    }
}

/* dst = src * op_params[0] + op_params[1] (the bias is 0 for ggml_scale) */
void ggmlx_cpu_scale(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    ggmlx_cpu_affine(params, dst, dst->src[0], ggmlx_get_op_params_f32(dst, 0), ggmlx_get_op_params_f32(dst, 1));
}

/* ---- the ops with float parameters: CLAMP, LEAKY_RELU, UNARY XIELU -------------------------- */

enum param_kind { PARAM_CLAMP, PARAM_LEAKY_RELU, PARAM_XIELU };

static inline float param_apply(enum param_kind k, const float * p, float x) {
    switch (k) {
    case PARAM_CLAMP:      return ggmlx_clamp_f32(x, p[0], p[1]);
    case PARAM_LEAKY_RELU: return ggmlx_leaky_relu_f32(x, p[0]);
    default:               return ggmlx_xielu_f32(x, p[1], p[2], p[3], p[4]);
    }
}

void ggmlx_cpu_unary_param(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const enum param_kind k = dst->op == GGML_OP_CLAMP ? PARAM_CLAMP : dst->op == GGML_OP_LEAKY_RELU ? PARAM_LEAKY_RELU
                                                                                                     : PARAM_XIELU;
    float p[5];
    for (int i = 0; i < 5; i++) {
        p[i] = ggmlx_get_op_params_f32(dst, i);
    }
    const bool fast = ggmlx_f32_rows(dst) && ggmlx_f32_rows(src);
    const int64_t ne0 = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char       * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * ps = (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3);
        if (fast) {
            float * d = (float *) pd;
            const float * x = (const float *) ps;
            switch (k) {
            case PARAM_CLAMP:
                for (int64_t i0 = 0; i0 < ne0; i0++) {
                    d[i0] = ggmlx_clamp_f32(x[i0], p[0], p[1]);
                }
                break;
            case PARAM_LEAKY_RELU:
                for (int64_t i0 = 0; i0 < ne0; i0++) {
                    d[i0] = ggmlx_leaky_relu_f32(x[i0], p[0]);
                }
                break;
            default:
                for (int64_t i0 = 0; i0 < ne0; i0++) {
                    d[i0] = ggmlx_xielu_f32(x[i0], p[1], p[2], p[3], p[4]);
                }
                break;
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            const float x = ggmlx_load_f(src->type, ps + i0 * src->nb[0]);
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], param_apply(k, p, x));
        }
    }
}
