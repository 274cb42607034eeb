/*
 * ops-norm.c -- NORM, RMS_NORM and L2_NORM kernels: each row (dim 0) normalised on its own;
 * GROUP_NORM: each group of channels (dim 2) of each dim-3 slice normalised as a whole.
 *
 * Sums are kept in double: a row can be long (thousands of elements) and the mean is subtracted
 * from values of similar size, where float sums would lose most of the variance's digits.
 */
#include "cpu-ops.h"

#include <math.h>

/* element i0 of row (i1, i2, i3) */

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

void ggmlx_cpu_l2_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const double  eps  = (double) ggmlx_get_op_params_f32(dst, 0);
    const int64_t ne0  = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        double sq = 0.0;
        for (int64_t i = 0; i < ne0; i++) {
            const double v = *(const float *)(s + i * snb0);
            sq += v * v;
        }
        /* upstream: x / max(|x|, eps) */
        const double norm  = sqrt(sq);
        const double scale = 1.0 / (norm > eps ? norm : eps);
        for (int64_t i = 0; i < ne0; i++) {
            *(float *)(d + i * dnb0) = (float)((double)*(const float *)(s + i * snb0) * scale);
        }
    }
}

/* sum of a row of n floats (stride in bytes), or of squared differences from mean; four
 * independent double accumulators so that the adds do not wait on each other */
static double row_sum(const char * s, int64_t n, size_t stride, bool squares, double mean) {
    double acc[4] = { 0.0, 0.0, 0.0, 0.0 };
    int64_t i = 0;
    if (stride == sizeof(float)) {
        const float * x = (const float *) s;
        for (; i + 4 <= n; i += 4) {
            for (int j = 0; j < 4; j++) {
                const double v = (double) x[i + j] - mean;
                acc[j] += squares ? v * v : v;
            }
        }
    }
    for (; i < n; i++) {
        const double v = (double) *(const float *)(s + i * stride) - mean;
        acc[0] += squares ? v * v : v;
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

void ggmlx_cpu_group_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t n_groups = ggmlx_get_op_params_i32(dst, 0);
    const double  eps      = (double) ggmlx_get_op_params_f32(dst, 1);
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];
    /* as upstream: groups of ceil(ne2 / n_groups) channels, the last ones possibly short or empty */
    const int64_t per_group = (ne2 + n_groups - 1) / n_groups;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, n_groups * src->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1; r++) {
        const int64_t g = r % n_groups, i3 = r / n_groups;
        const int64_t c0 = g * per_group < ne2 ? g * per_group : ne2;
        const int64_t c1 = c0 + per_group < ne2 ? c0 + per_group : ne2;
        const int64_t n  = (c1 - c0) * ne0 * ne1;
        if (n == 0) {
            continue;
        }
        /* the group's rows: (i1, i2) for i2 in [c0, c1) */
        double sum = 0.0;
        for (int64_t i2 = c0; i2 < c1; i2++) {
            for (int64_t i1 = 0; i1 < ne1; i1++) {
                sum += row_sum(ROW_PTR(src, i1, i2, i3), ne0, snb0, false, 0.0);
            }
        }
        const double mean = sum / (double) n;
        double sq = 0.0;
        for (int64_t i2 = c0; i2 < c1; i2++) {
            for (int64_t i1 = 0; i1 < ne1; i1++) {
                sq += row_sum(ROW_PTR(src, i1, i2, i3), ne0, snb0, true, mean);
            }
        }
        const double scale = 1.0 / sqrt(sq / (double) n + eps);
        for (int64_t i2 = c0; i2 < c1; i2++) {
            for (int64_t i1 = 0; i1 < ne1; i1++) {
                const char * s = ROW_PTR(src, i1, i2, i3);
                char       * d = ROW_PTR(dst, i1, i2, i3);
                if (snb0 == sizeof(float) && dnb0 == sizeof(float)) {
                    const float * x = (const float *) s;
                    float       * y = (float *) d;
                    for (int64_t i0 = 0; i0 < ne0; i0++) {
                        y[i0] = (float) (((double) x[i0] - mean) * scale);
                    }
                } else {
                    for (int64_t i0 = 0; i0 < ne0; i0++) {
                        *(float *)(d + i0 * dnb0) = (float) (((double) *(const float *)(s + i0 * snb0) - mean) * scale);
                    }
                }
            }
        }
    }
}
