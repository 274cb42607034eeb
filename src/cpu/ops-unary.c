/*
 * ops-unary.c -- UNARY (the ops ggml_unary accepts), SQR, SQRT and SCALE, elementwise over any
 * strides; src0 and dst share a float type. The math is in ggml-math-act.h (shared with CUDA).
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
    default:                     return NULL;
    }
}

void ggmlx_cpu_unary(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
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
            const float * s = (const float *) ps;
            for (int64_t i0 = 0; i0 < ne0; i0++) {
                d[i0] = f(s[i0]);
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], f(ggmlx_load_f(src->type, ps + i0 * src->nb[0])));
        }
    }
}

/* dst = src * op_params[0] + op_params[1] (the bias is 0 for ggml_scale) */
void ggmlx_cpu_scale(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const float s = ggmlx_get_op_params_f32(dst, 0);
    const float b = ggmlx_get_op_params_f32(dst, 1);
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
