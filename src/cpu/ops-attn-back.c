/*
 * ops-attn-back.c -- FLASH_ATTN_BACK: the gradients of causal or full attention with respect to
 * q, k and v, recomputing the attention weights per query (no n x n matrix kept). A thread owns a
 * key/value head (and batch): it alone adds into that head's dk and dv, and it computes dq for the
 * query heads of its group, so nothing is shared.
 */
#include "cpu-ops.h"

#include <math.h>
#include <stdlib.h>

#define EL(t, i0, i1, i2, i3) \
    (*(const float *) ((const char *) (t)->data + (i0) * (t)->nb[0] + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3]))

size_t ggmlx_cpu_flash_attn_back_work_size(const struct ggml_tensor * dst, int n_tasks) {
    const int64_t M = dst->src[1]->ne[1];
    return (size_t) n_tasks * (size_t) (2 * M) * sizeof(double);
}

void ggmlx_cpu_flash_attn_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * q = dst->src[0], * k = dst->src[1], * v = dst->src[2], * d = dst->src[3];
    const bool masked = ggmlx_get_op_params_i32(dst, 0) != 0;
    const int64_t D = q->ne[0], N = q->ne[1], M = k->ne[1], ne2 = q->ne[2], ne3 = q->ne[3], kv2 = k->ne[2];
    const int64_t group = ne2 / kv2, past = M - N;
    const double scale = 1.0 / sqrt((double) D);
    const size_t a = GGML_MEM_ALIGN;
    float * dq = (float *) dst->data;
    float * dk = (float *) ((char *) dq + GGML_PAD((size_t) ggml_nelements(q) * sizeof(float), a));
    float * dv = (float *) ((char *) dk + GGML_PAD((size_t) ggml_nelements(k) * sizeof(float), a));
    double * p  = (double *) params->wdata + (size_t) params->ith * (size_t) (2 * M);
    double * dp = p + M;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, kv2 * ne3, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t hk = r % kv2, i3 = r / kv2;
        float * dkh = dk + (i3 * kv2 + hk) * M * D; /* [D, M] */
        float * dvh = dv + (i3 * kv2 + hk) * D * M; /* [M, D] */
        memset(dkh, 0, (size_t) (M * D) * sizeof(float));
        memset(dvh, 0, (size_t) (M * D) * sizeof(float));
        for (int64_t h = hk * group; h < (hk + 1) * group; h++) {
            for (int64_t i = 0; i < N; i++) {
                const int64_t n_keys = masked ? past + i + 1 : M;
                double mx = -INFINITY;
                for (int64_t j = 0; j < n_keys; j++) {
                    double s = 0.0;
                    for (int64_t c = 0; c < D; c++) {
                        s += (double) EL(k, c, j, hk, i3) * EL(q, c, i, h, i3);
                    }
                    p[j] = s * scale;
                    mx   = p[j] > mx ? p[j] : mx;
                }
                double sum = 0.0;
                for (int64_t j = 0; j < n_keys; j++) {
                    p[j] = exp(p[j] - mx);
                    sum += p[j];
                }
                double pdp = 0.0;
                for (int64_t j = 0; j < n_keys; j++) {
                    p[j] /= sum;
                    double t = 0.0;
                    for (int64_t c = 0; c < D; c++) {
                        t += (double) EL(d, c, i, h, i3) * EL(v, j, c, hk, i3);
                    }
                    dp[j] = t;
                    pdp += p[j] * t;
                }
                float * dqi = dq + ((i3 * ne2 + h) * N + i) * D;
                for (int64_t c = 0; c < D; c++) {
                    double g = 0.0;
                    for (int64_t j = 0; j < n_keys; j++) {
                        g += p[j] * (dp[j] - pdp) * EL(k, c, j, hk, i3);
                    }
                    dqi[c] = (float) (g * scale);
                }
                for (int64_t j = 0; j < n_keys; j++) {
                    const double ds = p[j] * (dp[j] - pdp) * scale;
                    for (int64_t c = 0; c < D; c++) {
                        dkh[j * D + c] += (float) (ds * EL(q, c, i, h, i3));
                        dvh[c * M + j] += (float) (p[j] * EL(d, c, i, h, i3));
                    }
                }
            }
        }
    }
}
