/*
 * ops-sort.c -- ARGSORT and TOP_K kernels: I32 indices into each row (dim 0) of an F32 src.
 *
 * Both orders are stable (equal values keep their index order; -0 equals +0) and NaN counts as
 * larger than every number (last in ascending order, first in descending order and in top-k),
 * so results are the same on every run and thread count.
 *
 * Each value becomes a 32-bit key whose unsigned order is the wanted order (sign-magnitude
 * floats flipped into two's-complement order, NaN made the largest, all of it inverted for a
 * descending sort); a row is then sorted by a stable LSD radix sort of the keys (three passes
 * of 11 bits, a pass skipped when all keys share its digit), short rows by insertion. Top-k for
 * small k keeps a sorted list of the best k instead. Each thread works in its own part of the
 * work buffer: two key arrays and two index arrays of the row's length.
 */
#include "cpu-ops.h"
#include "ggml-math.h"


#define SORT_INSERT_MAX  64 /* rows up to this long: insertion sort */
#define TOP_K_INSERT_MAX 16 /* k up to this: keep a sorted list of the best k */
#define RADIX_BITS       11
#define RADIX_SIZE       (1 << RADIX_BITS)

static size_t thread_slot(int64_t ne0) {
    return GGML_PAD((size_t) ne0 * 2 * (sizeof(uint32_t) + sizeof(int32_t)), 64);
}

size_t ggmlx_cpu_sort_work_size(const struct ggml_tensor * dst, int n_tasks) {
    return (size_t) n_tasks * thread_slot(dst->src[0]->ne[0]);
}

/* (key, idx)[0..n) stably sorted by key, by insertion */
static void insertion_sort(uint32_t * key, int32_t * idx, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        const uint32_t k = key[i];
        const int32_t  x = idx[i];
        int64_t j = i;
        while (j > 0 && key[j - 1] > k) {
            key[j] = key[j - 1];
            idx[j] = idx[j - 1];
            j--;
        }
        key[j] = k;
        idx[j] = x;
    }
}

/* idx[0..n) stably sorted by key (index order within equal keys); returns the array holding it */
static int32_t * radix_sort(uint32_t * key, int32_t * idx, uint32_t * key2, int32_t * idx2, int64_t n) {
    for (int shift = 0; shift < 32; shift += RADIX_BITS) {
        uint32_t count[RADIX_SIZE];
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++) {
            count[(key[i] >> shift) & (RADIX_SIZE - 1)]++;
        }
        if (count[(key[0] >> shift) & (RADIX_SIZE - 1)] == (uint32_t) n) {
            continue; /* every key has this digit: the pass would change nothing */
        }
        uint32_t pos = 0;
        for (int d = 0; d < RADIX_SIZE; d++) {
            const uint32_t c = count[d];
            count[d] = pos;
            pos += c;
        }
        for (int64_t i = 0; i < n; i++) {
            const uint32_t o = count[(key[i] >> shift) & (RADIX_SIZE - 1)]++;
            key2[o] = key[i];
            idx2[o] = idx[i];
        }
        uint32_t * tk = key;
        key  = key2;
        key2 = tk;
        int32_t * ti = idx;
        idx  = idx2;
        idx2 = ti;
    }
    return idx;
}

/* the first k of the stable order of key[0..n), by insertion into a sorted list (best, bkey) */
static void top_k_insert(const uint32_t * key, int64_t n, int64_t k, int32_t * best, uint32_t * bkey) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t v = key[i];
        if (m == k && v >= bkey[m - 1]) {
            continue; /* equal to the worst kept: the earlier index stays */
        }
        int64_t j = m < k ? m++ : k - 1;
        while (j > 0 && bkey[j - 1] > v) {
            best[j] = best[j - 1];
            bkey[j] = bkey[j - 1];
            j--;
        }
        best[j] = (int32_t) i;
        bkey[j] = v;
    }
}

static void sort_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool top_k) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const int64_t k    = top_k ? dst->ne[0] : ne0;
    const bool    desc = top_k || ggmlx_get_op_params_i32(dst, 0) == GGML_SORT_ORDER_DESC;
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    char     * slot = (char *) params->wdata + (size_t) params->ith * thread_slot(ne0);
    uint32_t * key  = (uint32_t *) slot;
    uint32_t * key2 = key + ne0;
    int32_t  * idx  = (int32_t *) (key2 + ne0);
    int32_t  * idx2 = idx + ne0;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i = 0; i < ne0; i++) {
            key[i] = ggmlx_sort_key(*(const float *)(s + i * snb0), desc);
            idx[i] = (int32_t) i;
        }
        const int32_t * out = idx;
        if (top_k && k <= TOP_K_INSERT_MAX) {
            top_k_insert(key, ne0, k, idx2, key2);
            out = idx2;
        } else if (ne0 <= SORT_INSERT_MAX) {
            insertion_sort(key, idx, ne0);
        } else {
            out = radix_sort(key, idx, key2, idx2, ne0);
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
