/*
 * ops-misc.c -- OUT_PROD, DIAG_MASK_ZERO, ARANGE, TIMESTEP_EMBEDDING, COUNT_EQUAL and CUMSUM
 * kernels. All split their work by rows of dst (COUNT_EQUAL: by rows of its inputs, with
 * per-thread partial counts in the work buffer).
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#include <math.h>


/* ---- OUT_PROD ------------------------------------------------------------------------------ */

#define OP_ROWS 8   /* dst rows updated together: each load of a row of a serves all of them */
#define OP_COLS 256 /* columns per pass, so the dst block (8 x 1 KiB) stays in L1 */

/* element (i1, k) of b for dst plane (i2, i3) */
static inline float op_b(const struct ggml_tensor * b, int64_t i1, int64_t k, int64_t i2, int64_t i3) {
    return *(const float *)((const char *)b->data + i1 * b->nb[0] + k * b->nb[1] + i2 * b->nb[2] + i3 * b->nb[3]);
}

/*
 * dst row (i1, i2, i3) = sum over k of b[i1, k, i2, i3] * a row (k, i2 / r2, i3 / r3). Rows are
 * taken OP_ROWS at a time (consecutive i1 of one plane) and columns OP_COLS at a time: for each
 * k, a chunk of a's row is loaded once and added, scaled, into every row of the block, so a is
 * read once per block instead of once per row.
 */
void ggmlx_cpu_out_prod(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const int64_t nk  = a->ne[1];
    const int64_t r2  = a->ne[2] > 0 ? dst->ne[2] / a->ne[2] : 1;
    const int64_t r3  = a->ne[3] > 0 ? dst->ne[3] / a->ne[3] : 1;
    const bool    fast = ggmlx_f32_rows(a) && dst->nb[0] == sizeof(float);
    const size_t  anb0 = a->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1;) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        /* a block: rows i1 .. i1 + nr - 1 of this plane, within this thread's range */
        int64_t nr = ne1 - i1 < OP_ROWS ? ne1 - i1 : OP_ROWS;
        nr = r1 - r < nr ? r1 - r : nr;
        const char * abase = (const char *)a->data + (i2 / r2) * a->nb[2] + (i3 / r3) * a->nb[3];
        char * d[OP_ROWS];
        for (int64_t j = 0; j < nr; j++) {
            d[j] = ROW_PTR(dst, i1 + j, i2, i3);
        }
        for (int64_t c0 = 0; c0 < ne0; c0 += OP_COLS) {
            const int64_t nc = ne0 - c0 < OP_COLS ? ne0 - c0 : OP_COLS;
            if (fast) {
                float acc[OP_ROWS][OP_COLS];
                for (int64_t j = 0; j < nr; j++) {
                    for (int64_t i = 0; i < nc; i++) {
                        acc[j][i] = 0.0f;
                    }
                }
                for (int64_t k = 0; k < nk; k++) {
                    const float * x = (const float *)(abase + k * a->nb[1]) + c0;
                    for (int64_t j = 0; j < nr; j++) {
                        const float w = op_b(b, i1 + j, k, i2, i3);
                        float * y = acc[j];
                        for (int64_t i = 0; i < nc; i++) {
                            y[i] += w * x[i];
                        }
                    }
                }
                for (int64_t j = 0; j < nr; j++) {
                    memcpy(d[j] + c0 * sizeof(float), acc[j], (size_t) nc * sizeof(float));
                }
            } else {
                for (int64_t j = 0; j < nr; j++) {
                    for (int64_t i = c0; i < c0 + nc; i++) {
                        *(float *)(d[j] + i * dnb0) = 0.0f;
                    }
                }
                for (int64_t k = 0; k < nk; k++) {
                    const char * x = abase + k * a->nb[1];
                    for (int64_t j = 0; j < nr; j++) {
                        const float w = op_b(b, i1 + j, k, i2, i3);
                        for (int64_t i = c0; i < c0 + nc; i++) {
                            *(float *)(d[j] + i * dnb0) += w * ggmlx_load_f(a->type, x + i * anb0);
                        }
                    }
                }
            }
        }
        r += nr;
    }
}

/* ---- DIAG_MASK_ZERO ------------------------------------------------------------------------ */

void ggmlx_cpu_diag_mask_zero(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    ggmlx_cpu_diag_mask(params, dst, 0.0f);
}

/* ---- ARANGE -------------------------------------------------------------------------------- */

void ggmlx_cpu_arange(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const float start = ggmlx_get_op_params_f32(dst, 0);
    const float step  = ggmlx_get_op_params_f32(dst, 2);
    int64_t i0, i1;
    ggmlx_cpu_split_rows(params, dst->ne[0], &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        /* in float, as upstream computes it */
        *(float *)((char *)dst->data + i * dst->nb[0]) = ggmlx_arange_f32(start, step, i);
    }
}

/* ---- TIMESTEP_EMBEDDING -------------------------------------------------------------------- */

/* row r: the embedding of timestep r, element by element as ggml-math-misc.h defines it */
void ggmlx_cpu_timestep_embedding(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t dim  = ggmlx_get_op_params_i32(dst, 0);
    const double  lmax = log((double) ggmlx_get_op_params_i32(dst, 1));
    const size_t  dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float t = *(const float *)((const char *)src->data + r * src->nb[0]);
        char * d = (char *)dst->data + r * dst->nb[1];
        for (int64_t i = 0; i < dim; i++) {
            *(float *)(d + i * dnb0) = ggmlx_timestep_embedding_f32(t, i, dim, lmax);
        }
    }
}

/* ---- COUNT_EQUAL --------------------------------------------------------------------------- */

#define COUNT_SLOT 64 /* one cache line per thread's partial count */

static int64_t count_rows(const struct ggml_tensor * a, const struct ggml_tensor * b, int64_t r0, int64_t r1) {
    const int64_t ne0 = a->ne[0], ne1 = a->ne[1], ne2 = a->ne[2];
    int64_t n = 0;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * x = ROW_PTR(a, i1, i2, i3);
        const char * y = ROW_PTR(b, i1, i2, i3);
        for (int64_t i = 0; i < ne0; i++) {
            n += *(const int32_t *)(x + i * a->nb[0]) == *(const int32_t *)(y + i * b->nb[0]);
        }
    }
    return n;
}

size_t ggmlx_cpu_count_equal_work_size(int n_tasks) {
    return (size_t) n_tasks * COUNT_SLOT;
}

void ggmlx_cpu_count_equal(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t nr = a->ne[1] * a->ne[2] * a->ne[3];
    const bool shared = params->nth > 1 && params->wdata != NULL && params->wsize >= (size_t) params->nth * COUNT_SLOT;
    if (!shared) {
        if (params->ith == 0) {
            *(int64_t *) dst->data = count_rows(a, b, 0, nr);
        }
        return;
    }
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, nr, &r0, &r1);
    const int64_t part = count_rows(a, b, r0, r1);
    memcpy((char *) params->wdata + (size_t) params->ith * COUNT_SLOT, &part, sizeof part);
    ggmlx_cpu_barrier(params);
    if (params->ith == 0) {
        int64_t total = 0;
        for (int t = 0; t < params->nth; t++) {
            int64_t p;
            memcpy(&p, (const char *) params->wdata + (size_t) t * COUNT_SLOT, sizeof p);
            total += p;
        }
        *(int64_t *) dst->data = total;
    }
}

/* ---- CUMSUM -------------------------------------------------------------------------------- */

/* running sums kept in double: a long row's last elements would otherwise carry its rounding */
void ggmlx_cpu_cumsum(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        double acc = 0.0;
        for (int64_t i = 0; i < ne0; i++) {
            acc += *(const float *)(s + i * snb0);
            *(float *)(d + i * dnb0) = (float) acc;
        }
    }
}
