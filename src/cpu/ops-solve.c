/*
 * ops-solve.c -- SOLVE_TRI kernel: X with A X = B by forward substitution, A lower triangular
 * [n, n] (row i1, column i0), B and X [k, n], F32, contiguous (the constructor's rules). Work is
 * split into (batch, block of columns of X): the rows of a block are found one after the other,
 * each from the ones above it, with contiguous inner loops over the block's columns.
 */
#include "cpu-ops.h"

#define COLS_PER_TASK 64

void ggmlx_cpu_solve_tri(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t n = a->ne[0], k = b->ne[0];
    const int64_t n_blocks = (k + COLS_PER_TASK - 1) / COLS_PER_TASK;
    const int64_t n_batch  = b->ne[2] * b->ne[3];

    int64_t t0, t1;
    ggmlx_cpu_split_rows(params, n_batch * n_blocks, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        const int64_t ib = t / n_blocks, j0 = (t % n_blocks) * COLS_PER_TASK;
        const int64_t j1 = j0 + COLS_PER_TASK < k ? j0 + COLS_PER_TASK : k;
        const int64_t i2 = ib % b->ne[2], i3 = ib / b->ne[2];
        const float * A = (const float *) ((const char *) a->data + i2 * a->nb[2] + i3 * a->nb[3]);
        const float * B = (const float *) ((const char *) b->data + i2 * b->nb[2] + i3 * b->nb[3]);
        float       * X = (float *) ((char *) dst->data + i2 * dst->nb[2] + i3 * dst->nb[3]);
        for (int64_t i = 0; i < n; i++) {
            float acc[COLS_PER_TASK];
            for (int64_t j = j0; j < j1; j++) {
                acc[j - j0] = B[i * k + j];
            }
            for (int64_t r = 0; r < i; r++) {
                const float air = A[i * n + r];
                const float * xr = X + r * k;
                for (int64_t j = j0; j < j1; j++) {
                    acc[j - j0] -= air * xr[j];
                }
            }
            const float inv = 1.0f / A[i * n + i];
            for (int64_t j = j0; j < j1; j++) {
                X[i * k + j] = acc[j - j0] * inv;
            }
        }
    }
}
