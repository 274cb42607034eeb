/*
 * ops-norm.c -- NORM and RMS_NORM kernels: each row (dim 0) normalised on its own.
 *
 * Sums are kept in double: a row can be long (thousands of elements) and the mean is subtracted
 * from values of similar size, where float sums would lose most of the variance's digits.
 */
#include "cpu-ops.h"

#include <math.h>

/* element i0 of row (i1, i2, i3) */
#define ROW_PTR(t, i1, i2, i3) ((char *)(t)->data + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])

static void norm_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool rms) {
    const struct ggml_tensor * src = dst->src[0];
    const float   eps  = ggmlx_get_op_params_f32(dst, 0);
    const int64_t ne0  = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];
    const bool    fast = snb0 == sizeof(float) && dnb0 == sizeof(float);

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);

        double mean = 0.0;
        if (!rms) {
            double sum = 0.0;
            for (int64_t i = 0; i < ne0; i++) {
                sum += *(const float *)(s + i * snb0);
            }
            mean = ne0 > 0 ? sum / (double)ne0 : 0.0;
        }
        double sq = 0.0;
        for (int64_t i = 0; i < ne0; i++) {
            const double v = (double)*(const float *)(s + i * snb0) - mean;
            sq += v * v;
        }
        const double var   = ne0 > 0 ? sq / (double)ne0 : 0.0;
        const double scale = 1.0 / sqrt(var + (double)eps);

        /* the mean stays in double: rounded to float it could be off by more than the spread */
        if (fast) {
            const float * x = (const float *)s;
            float       * y = (float *)d;
            for (int64_t i = 0; i < ne0; i++) {
                y[i] = (float)(((double)x[i] - mean) * scale);
            }
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                *(float *)(d + i * dnb0) = (float)(((double)*(const float *)(s + i * snb0) - mean) * scale);
            }
        }
    }
}

void ggmlx_cpu_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    norm_rows(params, dst, false);
}

void ggmlx_cpu_rms_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    norm_rows(params, dst, true);
}
