/*
 * ops-reduce.c -- SUM, SUM_ROWS, MEAN, ARGMAX. Sums accumulate in double: a float running sum
 * over a 4097-element row already loses several digits, and the reference is exact-ish.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

/* sum of one row of n elements */
static double row_sum(const struct ggml_tensor * t, const char * p, int64_t n) {
    double acc = 0.0;
    if (t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float)) {
        for (int64_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, p + i * (int64_t) sizeof(float), sizeof f);
            acc += f;
        }
        return acc;
    }
    for (int64_t i = 0; i < n; i++) {
        acc += ggmlx_load_f(t->type, p + i * t->nb[0]);
    }
    return acc;
}

static double rows_sum(const struct ggml_tensor * src, int64_t r0, int64_t r1) {
    double acc = 0.0;
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(src, ir, &i1, &i2, &i3);
        acc += row_sum(src, (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3), src->ne[0]);
    }
    return acc;
}

#define GGMLX_SUM_SLOT 64 /* bytes per thread partial: one cache line, no false sharing */

/* Each thread sums its rows into its slot of wdata; thread 0 adds the slots in a fixed order. */
void ggmlx_cpu_sum(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t nr = ggml_nrows(src);
    const bool shared = params->nth > 1 && params->wdata != NULL &&
                        params->wsize >= (size_t) params->nth * GGMLX_SUM_SLOT;
    if (!shared) {
        /* no scratch to share partials through: thread 0 does it all */
        if (params->ith == 0) {
            ggmlx_store_f(dst->type, (char *) dst->data, (float) rows_sum(src, 0, nr));
        }
        return;
    }
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, nr, &r0, &r1);
    const double part = rows_sum(src, r0, r1);
    memcpy((char *) params->wdata + (size_t) params->ith * GGMLX_SUM_SLOT, &part, sizeof part);
    ggmlx_cpu_barrier(params);
    if (params->ith == 0) {
        double total = 0.0;
        for (int t = 0; t < params->nth; t++) {
            double p;
            memcpy(&p, (const char *) params->wdata + (size_t) t * GGMLX_SUM_SLOT, sizeof p);
            total += p;
        }
        ggmlx_store_f(dst->type, (char *) dst->data, (float) total);
    }
}

/* dst[0, i1, i2, i3] = sum (or mean) of src's row (i1, i2, i3) */
static void row_reduce(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool mean) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = src->ne[0];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(src), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(src, ir, &i1, &i2, &i3);
        double s = row_sum(src, (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3), ne0);
        if (mean) {
            s = ne0 > 0 ? s / (double) ne0 : (double) NAN;
        }
        ggmlx_store_f(dst->type, (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3), (float) s);
    }
}

void ggmlx_cpu_sum_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    row_reduce(params, dst, false);
}

void ggmlx_cpu_mean(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    row_reduce(params, dst, true);
}

/* the first index of each row's largest value; NaNs never win (unless the row is all NaN: 0) */
void ggmlx_cpu_argmax(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = src->ne[0];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1], &r0, &r1);
    for (int64_t i1 = r0; i1 < r1; i1++) {
        const char * p = (const char *) src->data + ggmlx_offset(src, 0, i1, 0, 0);
        int32_t best   = 0;
        float   best_v = 0.0f;
        bool    found  = false;
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            const float v = ggmlx_load_f(src->type, p + i0 * src->nb[0]);
            if (v == v && (!found || v > best_v)) {
                best   = (int32_t) i0;
                best_v = v;
                found  = true;
            }
        }
        memcpy((char *) dst->data + (size_t) i1 * dst->nb[0], &best, sizeof best);
    }
}
