/*
 * ops-backward.c -- the kernels of the backward ops (REPEAT_BACK, SILU_BACK, RMS_NORM_BACK,
 * SOFT_MAX_BACK, GET_ROWS_BACK), F32, any row strides. Sums run in double: a gradient is checked
 * against finite differences, and float sums of long rows would dominate that error.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#include <math.h>

#define ELEM(p, i, nb0)        (*(float *)((char *)(p) + (i) * (nb0)))
#define CELEM(p, i, nb0)       (*(const float *)((const char *)(p) + (i) * (nb0)))

/* Each output row sums the rows of a that repeat it (dims 1..3), each of those over the copies
 * along dim 0: an output row is owned by one thread, so no atomics. */
void ggmlx_cpu_repeat_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const int64_t n0 = dst->ne[0], n1 = dst->ne[1], n2 = dst->ne[2];
    const int64_t r0n = a->ne[0] / n0, r1n = a->ne[1] / n1, r2n = a->ne[2] / n2, r3n = a->ne[3] / dst->ne[3];
    double * acc = (double *) params->wdata + (size_t) params->ith * (size_t) n0;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t j1, j2, j3;
        ggmlx_row_coords(dst, r, &j1, &j2, &j3);
        memset(acc, 0, (size_t) n0 * sizeof *acc);
        for (int64_t k3 = 0; k3 < r3n; k3++) {
            for (int64_t k2 = 0; k2 < r2n; k2++) {
                for (int64_t k1 = 0; k1 < r1n; k1++) {
                    const char * s = ROW_PTR(a, j1 + k1 * n1, j2 + k2 * n2, j3 + k3 * dst->ne[3]);
                    for (int64_t k0 = 0; k0 < r0n; k0++) {
                        for (int64_t i = 0; i < n0; i++) {
                            acc[i] += CELEM(s, k0 * n0 + i, a->nb[0]);
                        }
                    }
                }
            }
        }
        char * d = ROW_PTR(dst, j1, j2, j3);
        for (int64_t i = 0; i < n0; i++) {
            ELEM(d, i, dst->nb[0]) = (float) acc[i];
        }
    }
}

size_t ggmlx_cpu_repeat_back_work_size(const struct ggml_tensor * dst, int n_tasks) {
    return (size_t) n_tasks * (size_t) dst->ne[0] * sizeof(double);
}

/* d/dx silu(x) = s (1 + x (1 - s)), s = sigmoid(x); src0 the incoming gradient, src1 x */
void ggmlx_cpu_silu_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * dy = dst->src[0];
    const struct ggml_tensor * x  = dst->src[1];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, r, &i1, &i2, &i3);
        const char * pg = ROW_PTR(dy, i1, i2, i3);
        const char * px = ROW_PTR(x, i1, i2, i3);
        char *       pd = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i = 0; i < dst->ne[0]; i++) {
            const float v = CELEM(px, i, x->nb[0]);
            const float s = 1.0f / (1.0f + expf(-v));
            ELEM(pd, i, dst->nb[0]) = CELEM(pg, i, dy->nb[0]) * s * (1.0f + v * (1.0f - s));
        }
    }
}

/* y = x r, r = (mean(x^2) + eps)^-1/2: dx = r (dy - x sum(x dy) / (n (mean(x^2) + eps))) */
void ggmlx_cpu_rms_norm_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * dy = dst->src[0];
    const struct ggml_tensor * x  = dst->src[1];
    const double  eps = (double) ggmlx_get_op_params_f32(dst, 0);
    const int64_t n = dst->ne[0];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, r, &i1, &i2, &i3);
        const char * pg = ROW_PTR(dy, i1, i2, i3);
        const char * px = ROW_PTR(x, i1, i2, i3);
        char *       pd = ROW_PTR(dst, i1, i2, i3);
        double sxx = 0.0, sxg = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const double v = CELEM(px, i, x->nb[0]);
            sxx += v * v;
            sxg += v * CELEM(pg, i, dy->nb[0]);
        }
        const double ms = sxx / (double) n + eps;
        const double rr = 1.0 / sqrt(ms);
        const double k  = sxg / ((double) n * ms);
        for (int64_t i = 0; i < n; i++) {
            const double g = CELEM(pg, i, dy->nb[0]), v = CELEM(px, i, x->nb[0]);
            ELEM(pd, i, dst->nb[0]) = (float) (rr * (g - v * k));
        }
    }
}

/* y = softmax(scale x + mask): dx = scale y (dy - dot(y, dy)); src0 dy, src1 y */
void ggmlx_cpu_soft_max_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * dy = dst->src[0];
    const struct ggml_tensor * y  = dst->src[1];
    const float   scale = ggmlx_get_op_params_f32(dst, 0);
    const int64_t n = dst->ne[0];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, r, &i1, &i2, &i3);
        const char * pg = ROW_PTR(dy, i1, i2, i3);
        const char * py = ROW_PTR(y, i1, i2, i3);
        char *       pd = ROW_PTR(dst, i1, i2, i3);
        double dot = 0.0;
        for (int64_t i = 0; i < n; i++) {
            dot += (double) CELEM(py, i, y->nb[0]) * CELEM(pg, i, dy->nb[0]);
        }
        /* in place (dst aliases dy) is fine: each element is read before it is written */
        for (int64_t i = 0; i < n; i++) {
            const double g = CELEM(pg, i, dy->nb[0]);
            ELEM(pd, i, dst->nb[0]) = (float) ((double) scale * CELEM(py, i, y->nb[0]) * (g - dot));
        }
    }
}

/* dst [n_embd, n_rows] = 0, then row idx[i] += a's row i. One thread: rows may repeat in idx, and
 * the sums must not depend on the thread count. */
void ggmlx_cpu_get_rows_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a   = dst->src[0];
    const struct ggml_tensor * idx = dst->src[1];
    if (params->ith != 0) {
        return;
    }
    for (int64_t r = 0; r < idx->ne[0]; r++) {
        const int32_t j = *(const int32_t *) ((const char *) idx->data + r * idx->nb[0]);
        if (j < 0 || j >= dst->ne[1]) {
            ggmlx_cpu_fail(params, "ggml_get_rows_back: index %d at %lld is outside [0, %lld)", j, (long long) r,
                           (long long) dst->ne[1]);
            return;
        }
    }
    for (int64_t r = 0; r < dst->ne[1]; r++) {
        char * d = ROW_PTR(dst, r, 0, 0);
        for (int64_t i = 0; i < dst->ne[0]; i++) {
            ELEM(d, i, dst->nb[0]) = 0.0f;
        }
    }
    for (int64_t r = 0; r < idx->ne[0]; r++) {
        const int32_t j = *(const int32_t *) ((const char *) idx->data + r * idx->nb[0]);
        const char * s = ROW_PTR(a, r, 0, 0);
        char *       d = ROW_PTR(dst, j, 0, 0);
        for (int64_t i = 0; i < dst->ne[0]; i++) {
            ELEM(d, i, dst->nb[0]) += CELEM(s, i, a->nb[0]);
        }
    }
}
