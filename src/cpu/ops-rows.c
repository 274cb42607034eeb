/*
 * ops-rows.c -- GET_ROWS and SET_ROWS. Indices are data: every one is checked before anything is
 * written, and one out of range fails the computation (GGML_STATUS_FAILED) with dst untouched.
 * Quantized rows are whole: GET_ROWS dequantizes the selected rows (to_float) into F32, SET_ROWS
 * quantizes each F32/F16 row (the CPU from_float of dst's type) into its place.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "ops-elem.h"

#include <inttypes.h>

static inline int64_t load_index(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2) {
    const char * p = (const char *) t->data + ggmlx_offset(t, i0, i1, i2, 0);
    if (t->type == GGML_TYPE_I64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/*
 * true when every index of idx (dims 0..2) is in [0, limit). Every thread scans all of them, so
 * all threads reach the same verdict without a barrier; thread 0 reports.
 */
static bool indices_ok(const struct ggmlx_cpu_params * params, const struct ggml_tensor * dst,
                       const struct ggml_tensor * idx, int64_t limit) {
    for (int64_t i2 = 0; i2 < idx->ne[2]; i2++) {
        for (int64_t i1 = 0; i1 < idx->ne[1]; i1++) {
            for (int64_t i0 = 0; i0 < idx->ne[0]; i0++) {
                const int64_t v = load_index(idx, i0, i1, i2);
                if (v < 0 || v >= limit) {
                    if (params->ith == 0) {
                        ggmlx_cpu_fail(params, "%s (%s): row index %" PRId64 " at [%" PRId64 ", %" PRId64 ", %" PRId64
                                       "] is out of range 0..%" PRId64, dst->name, ggml_op_name(dst->op), v, i0, i1, i2,
                                       limit - 1);
                    }
                    return false;
                }
            }
        }
    }
    return true;
}

#define ROWS_ALIGN 64

static size_t rows_scratch_row(const struct ggml_tensor * dst) {
    return ((size_t) dst->ne[0] * sizeof(float) + ROWS_ALIGN - 1) & ~(size_t) (ROWS_ALIGN - 1);
}

/* a quantized SET_ROWS converts F16 or strided rows to F32 first: one row per thread */
size_t ggmlx_cpu_set_rows_work_size(const struct ggml_tensor * dst, int n_tasks) {
    return ggml_is_quantized(dst->type) ? (size_t) (n_tasks < 1 ? 1 : n_tasks) * rows_scratch_row(dst) + ROWS_ALIGN : 0;
}

static float * rows_scratch(const struct ggmlx_cpu_params * params, const struct ggml_tensor * dst) {
    const size_t need = ggmlx_cpu_set_rows_work_size(dst, params->nth);
    if (params->wdata == NULL || params->wsize < need) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s (SET_ROWS): work buffer of %zu bytes is smaller than the %zu needed", dst->name,
                           params->wsize, need);
        }
        return NULL;
    }
    char * base = (char *) (((uintptr_t) params->wdata + ROWS_ALIGN - 1) & ~(uintptr_t) (ROWS_ALIGN - 1));
    return (float *) (base + (size_t) params->ith * rows_scratch_row(dst));
}

/* one row of n elements; same types move bytes, otherwise through float */
static void copy_row(enum ggml_type td, char * pd, size_t sd, enum ggml_type ts, const char * ps, size_t ss, int64_t n) {
    if (td == ts) {
        const size_t es = ggml_type_size(td);
        for (int64_t i = 0; i < n; i++) {
            memcpy(pd + i * sd, ps + i * ss, es);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        ggmlx_store_f(td, pd + i * sd, ggmlx_load_f(ts, ps + i * ss));
    }
}

/* dst[:, i10, i11, i12] = src0[:, src1[i10, i11, i12], i11, i12] */
void ggmlx_cpu_get_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const struct ggml_tensor * idx = dst->src[1];
    if (!indices_ok(params, dst, idx, src->ne[1])) {
        return;
    }
    const int64_t ne0 = dst->ne[0];
    const ggml_to_float_t dq = ggml_is_quantized(src->type) ? ggml_get_type_traits(src->type)->to_float : NULL;
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i10, i11, i12;
        ggmlx_row_coords(dst, ir, &i10, &i11, &i12);
        const int64_t row = load_index(idx, i10, i11, i12);
        if (dq != NULL) { /* the dispatch made sure dst is F32 with contiguous rows */
            dq((const char *) src->data + ggmlx_offset(src, 0, row, i11, i12),
               (float *) ((char *) dst->data + ggmlx_offset(dst, 0, i10, i11, i12)), ne0);
            continue;
        }
        copy_row(dst->type, (char *) dst->data + ggmlx_offset(dst, 0, i10, i11, i12), dst->nb[0],
                 src->type, (const char *) src->data + ggmlx_offset(src, 0, row, i11, i12), src->nb[0], ne0);
    }
}

/* dst[:, src1[i, i02 % n11, i03 % n12], i02, i03] = src0[:, i, i02, i03]; dst is a view of src2 */
void ggmlx_cpu_set_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const struct ggml_tensor * idx = dst->src[1];
    if (!indices_ok(params, dst, idx, dst->ne[1])) {
        return;
    }
    const int64_t ne0 = src->ne[0];
    const ggml_from_float_t q = ggml_is_quantized(dst->type) ? ggml_get_type_traits_cpu(dst->type)->from_float : NULL;
    float * tmp = NULL;
    if (q != NULL) {
        tmp = rows_scratch(params, dst);
        if (tmp == NULL) {
            return;
        }
    }
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(src), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i, i02, i03;
        ggmlx_row_coords(src, ir, &i, &i02, &i03);
        const int64_t row = load_index(idx, i, i02 % idx->ne[1], i03 % idx->ne[2]);
        if (q != NULL) {
            const char * ps = (const char *) src->data + ggmlx_offset(src, 0, i, i02, i03);
            const float * x = (const float *) ps;
            if (src->type != GGML_TYPE_F32 || src->nb[0] != sizeof(float) || (uintptr_t) ps % sizeof(float) != 0) {
                for (int64_t k = 0; k < ne0; k++) {
                    tmp[k] = ggmlx_load_f(src->type, ps + k * src->nb[0]);
                }
                x = tmp;
            }
            q(x, (char *) dst->data + ggmlx_offset(dst, 0, row, i02, i03), ne0);
            continue;
        }
        copy_row(dst->type, (char *) dst->data + ggmlx_offset(dst, 0, row, i02, i03), dst->nb[0],
                 src->type, (const char *) src->data + ggmlx_offset(src, 0, i, i02, i03), src->nb[0], ne0);
    }
}
