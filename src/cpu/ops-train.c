/*
 * ops-train.c -- the loss and the optimizer steps: CROSS_ENTROPY_LOSS (+ _BACK), OPT_STEP_ADAMW,
 * OPT_STEP_SGD, F32. The loss's row sums run in double and its per-thread partials are added in
 * thread order, so the loss does not depend on how rows were split beyond float rounding of each.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#include <math.h>

#define ELEM(p, i, nb0)        (*(float *)((char *)(p) + (i) * (nb0)))
#define CELEM(p, i, nb0)       (*(const float *)((const char *)(p) + (i) * (nb0)))

/* per thread, one cache line holding its partial sum */
#define PARTIAL_STRIDE 8

/* max and log(sum(exp(x - max))) of a row: log_softmax(x)_i = x_i - max - lse */
static void row_log_sum_exp(const char * x, int64_t n, size_t nb0, double * max_out, double * lse_out) {
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        const double v = CELEM(x, i, nb0);
        mx = v > mx ? v : mx;
    }
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) {
        s += exp((double) CELEM(x, i, nb0) - mx);
    }
    *max_out = mx;
    *lse_out = log(s);
}

void ggmlx_cpu_cross_entropy_loss(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * logits = dst->src[0];
    const struct ggml_tensor * labels = dst->src[1];
    const int64_t n = logits->ne[0];
    const int64_t nr = ggml_nrows(logits);
    double * partial = (double *) params->wdata;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, nr, &r0, &r1);
    double sum = 0.0;
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(logits, r, &i1, &i2, &i3);
        const char * x = ROW_PTR(logits, i1, i2, i3);
        const char * t = ROW_PTR(labels, i1, i2, i3);
        double mx, lse;
        row_log_sum_exp(x, n, logits->nb[0], &mx, &lse);
        for (int64_t i = 0; i < n; i++) {
            sum += ((double) CELEM(x, i, logits->nb[0]) - mx - lse) * CELEM(t, i, labels->nb[0]);
        }
    }
    partial[params->ith * PARTIAL_STRIDE] = sum;
    if (params->nth > 1) {
        ggmlx_cpu_barrier(params);
    }
    if (params->ith == 0) {
        double total = 0.0;
        for (int i = 0; i < params->nth; i++) {
            total += partial[i * PARTIAL_STRIDE];
        }
        *(float *) dst->data = (float) (-total / (double) nr);
    }
}

size_t ggmlx_cpu_cross_entropy_loss_work_size(int n_tasks) {
    return (size_t) n_tasks * PARTIAL_STRIDE * sizeof(double);
}

/* d loss / d logits = (softmax(logits) - labels) * grad / rows */
void ggmlx_cpu_cross_entropy_loss_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * grad   = dst->src[0];
    const struct ggml_tensor * logits = dst->src[1];
    const struct ggml_tensor * labels = dst->src[2];
    const int64_t n = logits->ne[0];
    const int64_t nr = ggml_nrows(logits);
    const double  k  = (double) *(const float *) grad->data / (double) nr;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, nr, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(logits, r, &i1, &i2, &i3);
        const char * x = ROW_PTR(logits, i1, i2, i3);
        const char * t = ROW_PTR(labels, i1, i2, i3);
        char *       d = ROW_PTR(dst, i1, i2, i3);
        double mx, lse;
        row_log_sum_exp(x, n, logits->nb[0], &mx, &lse);
        for (int64_t i = 0; i < n; i++) {
            const double p = exp((double) CELEM(x, i, logits->nb[0]) - mx - lse);
            ELEM(d, i, dst->nb[0]) = (float) ((p - CELEM(t, i, labels->nb[0])) * k);
        }
    }
}

/* w = w (1 - alpha wd) - alpha mhat / (sqrt(vhat) + eps), with m and v the moving moments; the
 * params tensor holds alpha, beta1, beta2, eps, wd, 1/(1-beta1^t), 1/(1-beta2^t) */
void ggmlx_cpu_opt_step_adamw(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * w = dst->src[0];
    const struct ggml_tensor * g = dst->src[1];
    const struct ggml_tensor * m = dst->src[2];
    const struct ggml_tensor * v = dst->src[3];
    const float * p = (const float *) dst->src[4]->data;
    const float alpha = p[0], beta1 = p[1], beta2 = p[2], eps = p[3], wd = p[4], beta1h = p[5], beta2h = p[6];
    const float keep = 1.0f - alpha * wd;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(w), &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(w, r, &i1, &i2, &i3);
        char *       pw = ROW_PTR(w, i1, i2, i3);
        const char * pg = ROW_PTR(g, i1, i2, i3);
        char *       pm = ROW_PTR(m, i1, i2, i3);
        char *       pv = ROW_PTR(v, i1, i2, i3);
        for (int64_t i = 0; i < w->ne[0]; i++) {
            const float gi = CELEM(pg, i, g->nb[0]);
            const float mi = ELEM(pm, i, m->nb[0]) * beta1 + gi * (1.0f - beta1);
            const float vi = ELEM(pv, i, v->nb[0]) * beta2 + gi * gi * (1.0f - beta2);
            ELEM(pm, i, m->nb[0]) = mi;
            ELEM(pv, i, v->nb[0]) = vi;
            const float mh = mi * beta1h;
            const float vh = sqrtf(vi * beta2h) + eps;
            ELEM(pw, i, w->nb[0]) = ELEM(pw, i, w->nb[0]) * keep - alpha * mh / vh;
        }
    }
}

/* w = w (1 - alpha wd) - alpha g; the params tensor holds alpha, wd */
void ggmlx_cpu_opt_step_sgd(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * w = dst->src[0];
    const struct ggml_tensor * g = dst->src[1];
    const float * p = (const float *) dst->src[2]->data;
    const float alpha = p[0], keep = 1.0f - p[0] * p[1];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(w), &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(w, r, &i1, &i2, &i3);
        char *       pw = ROW_PTR(w, i1, i2, i3);
        const char * pg = ROW_PTR(g, i1, i2, i3);
        for (int64_t i = 0; i < w->ne[0]; i++) {
            ELEM(pw, i, w->nb[0]) = ELEM(pw, i, w->nb[0]) * keep - alpha * CELEM(pg, i, g->nb[0]);
        }
    }
}
