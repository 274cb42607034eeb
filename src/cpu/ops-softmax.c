/*
 * ops-softmax.c -- SOFT_MAX (scale, optional F16/F32 mask, ALiBi slopes) and DIAG_MASK_INF.
 *
 * A row whose every logit is -INF (fully masked) gives zeros rather than upstream's NaNs: there
 * is no distribution to normalise, and zeros keep a padded batch from poisoning what follows.
 */
#include "cpu-ops.h"
#include "ggml-math.h"

#include <math.h>


/* ALiBi slope of head h among n_head heads: geometric in h, as upstream defines it */
float ggmlx_cpu_alibi_slope(float max_bias, int64_t n_head, int64_t h) {
    if (!(max_bias > 0.0f)) {
        return 1.0f;
    }
    const int64_t n_head_log2 = n_head > 0 ? (int64_t)1 << (int)floor(log2((double)n_head)) : 1;
    const float   m0 = powf(2.0f, -max_bias / (float)n_head_log2);
    const float   m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n_head_log2);
    return h < n_head_log2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n_head_log2) + 1));
}

void ggmlx_cpu_soft_max(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src  = dst->src[0];
    const struct ggml_tensor * mask = dst->src[1];
    const struct ggml_tensor * sinks = dst->src[2]; /* ggml_soft_max_add_sinks: one logit per head, no output */
    const float   scale    = ggmlx_get_op_params_f32(dst, 0);
    const float   max_bias = ggmlx_get_op_params_f32(dst, 1);
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];
    const size_t  mnb0 = mask ? mask->nb[0] : 0;
    const bool    mask_f16 = mask && mask->type == GGML_TYPE_F16;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);

    int64_t slope_h = -1;
    float   slope   = 1.0f;

    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        const char * m = mask ? ROW_PTR(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3]) : NULL;

        if (i2 != slope_h) {
            slope   = ggmlx_cpu_alibi_slope(max_bias, ne2, i2);
            slope_h = i2;
        }

        /* logits go into dst first: it may be src itself (in place), element by element */
        float max = -INFINITY;
        for (int64_t i = 0; i < ne0; i++) {
            float w = *(const float *)(s + i * snb0) * scale;
            if (m) {
                const float mv = mask_f16 ? ggmlx_fp16_to_fp32(*(const uint16_t *)(m + i * mnb0))
                                          : *(const float *)(m + i * mnb0);
                w += slope * mv;
            }
            *(float *)(d + i * dnb0) = w;
            max = w > max ? w : max;
        }
        const float sink = sinks ? ((const float *) sinks->data)[i2] : -INFINITY;
        max = sink > max ? sink : max;
        if (max == -INFINITY) {
            for (int64_t i = 0; i < ne0; i++) {
                *(float *)(d + i * dnb0) = 0.0f;
            }
            continue;
        }
        double sum = sinks ? expf(sink - max) : 0.0;
        for (int64_t i = 0; i < ne0; i++) {
            float * p = (float *)(d + i * dnb0);
            const float e = expf(*p - max);
            *p = e;
            sum += e;
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < ne0; i++) {
            *(float *)(d + i * dnb0) *= inv;
        }
    }
}

/* rows keep columns 0 .. n_past + row; the rest become fill (DIAG_MASK_INF and DIAG_MASK_ZERO) */
void ggmlx_cpu_diag_mask(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, float fill) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t n_past = ggmlx_get_op_params_i32(dst, 0);
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        const int64_t keep = n_past + i1 + 1 < ne0 ? n_past + i1 + 1 : ne0;
        if (s != d || snb0 != dnb0) {
            for (int64_t i = 0; i < keep; i++) {
                *(float *)(d + i * dnb0) = *(const float *)(s + i * snb0);
            }
        }
        for (int64_t i = keep; i < ne0; i++) {
            *(float *)(d + i * dnb0) = fill;
        }
    }
}

void ggmlx_cpu_diag_mask_inf(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    ggmlx_cpu_diag_mask(params, dst, -INFINITY);
}
