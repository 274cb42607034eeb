/*
 * ops-rows.c -- GET_ROWS and SET_ROWS. Indices are data: every one is checked before anything is
 * written, and one out of range fails the computation (GGML_STATUS_FAILED) with dst untouched.
 */
#include "cpu-ops.h"
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
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i10, i11, i12;
        ggmlx_row_coords(dst, ir, &i10, &i11, &i12);
        const int64_t row = load_index(idx, i10, i11, i12);
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
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(src), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i, i02, i03;
        ggmlx_row_coords(src, ir, &i, &i02, &i03);
        const int64_t row = load_index(idx, i, i02 % idx->ne[1], i03 % idx->ne[2]);
        copy_row(dst->type, (char *) dst->data + ggmlx_offset(dst, 0, row, i02, i03), dst->nb[0],
                 src->type, (const char *) src->data + ggmlx_offset(src, 0, i, i02, i03), src->nb[0], ne0);
    }
}
