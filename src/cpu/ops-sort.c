/*
 * ops-sort.c -- ARGSORT and TOP_K kernels: I32 indices into each row (dim 0) of an F32 src.
 *
 * Both orders are stable (equal values keep their index order) and NaN counts as larger than
 * every number (last in ascending order, first in descending order and in top-k), so results
 * are the same on every run and thread count. Each thread sorts its rows in its own part of
 * the work buffer: the row's keys, and two index arrays for a bottom-up merge sort.
 */
#include "cpu-ops.h"

#include <math.h>

#define ROW_PTR(t, i1, i2, i3) ((char *)(t)->data + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])

/* top-k below this k keeps a sorted list of the best k; above, the whole row is sorted */
#define TOP_K_INSERT_MAX 32

/* x goes before y in the order (desc: larger first); NaN is the largest value */
static inline bool before(float x, float y, bool desc) {
    if (desc) {
        return isnan(x) ? !isnan(y) : (!isnan(y) && x > y);
    }
    return !isnan(x) && (isnan(y) || x < y);
}

static size_t thread_slot(int64_t ne0) {
    return GGML_PAD((size_t) ne0 * (sizeof(float) + 2 * sizeof(int32_t)), 64);
}

size_t ggmlx_cpu_sort_work_size(const struct ggml_tensor * dst, int n_tasks) {
    return (size_t) n_tasks * thread_slot(dst->src[0]->ne[0]);
}

/* idx[0..n) sorted by key, stably; tmp is scratch of n; the result may end in either array */
static int32_t * merge_sort(const float * key, int32_t * idx, int32_t * tmp, int64_t n, bool desc) {
    for (int64_t i = 0; i < n; i++) {
        idx[i] = (int32_t) i;
    }
    /* runs of 8 by insertion first: fewer passes over short rows */
    const int64_t run = 8;
    for (int64_t lo = 0; lo < n; lo += run) {
        const int64_t hi = lo + run < n ? lo + run : n;
        for (int64_t i = lo + 1; i < hi; i++) {
            const int32_t v = idx[i];
            int64_t j = i;
            while (j > lo && before(key[v], key[idx[j - 1]], desc)) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
    }
    int32_t * src = idx, * dst = tmp;
    for (int64_t width = run; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            const int64_t mid = lo + width < n ? lo + width : n;
            const int64_t hi  = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                /* the right run's element only goes first when strictly before: stable */
                dst[o++] = before(key[src[j]], key[src[i]], desc) ? src[j++] : src[i++];
            }
            while (i < mid) {
                dst[o++] = src[i++];
            }
            while (j < hi) {
                dst[o++] = src[j++];
            }
        }
        int32_t * t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* the first k of the stable descending order, by insertion into a sorted list of k */
static void top_k_insert(const float * key, int64_t n, int64_t k, int32_t * best) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = key[i];
        if (m == k && !before(v, key[best[m - 1]], true)) {
            continue;
        }
        int64_t j = m < k ? m++ : k - 1;
        while (j > 0 && before(v, key[best[j - 1]], true)) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = (int32_t) i;
    }
}

static void sort_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool top_k) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const int64_t k    = top_k ? dst->ne[0] : ne0;
    const bool    desc = top_k || ggmlx_get_op_params_i32(dst, 0) == GGML_SORT_ORDER_DESC;
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    char    * slot = (char *) params->wdata + (size_t) params->ith * thread_slot(ne0);
    float   * key  = (float *) slot;
    int32_t * idx  = (int32_t *) (key + ne0);
    int32_t * tmp  = idx + ne0;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i = 0; i < ne0; i++) {
            key[i] = *(const float *)(s + i * snb0);
        }
        const int32_t * out;
        if (top_k && k <= TOP_K_INSERT_MAX) {
            top_k_insert(key, ne0, k, idx);
            out = idx;
        } else {
            out = merge_sort(key, idx, tmp, ne0, desc);
        }
        for (int64_t i = 0; i < k; i++) {
            *(int32_t *)(d + i * dnb0) = out[i];
        }
    }
}

void ggmlx_cpu_argsort(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    sort_rows(params, dst, false);
}

void ggmlx_cpu_top_k(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    sort_rows(params, dst, true);
}
