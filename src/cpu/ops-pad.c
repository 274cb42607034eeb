/*
 * ops-pad.c -- PAD kernel: dst element (i0, i1, i2, i3) is src (i0 - lp0, ..., i3 - lp3) where
 * that lies inside src, else zero. Any type of one element per block (bytes copied as they
 * are; all-zero bytes are 0 in every such type). Split by rows of dst. PAD_REFLECT_1D: F32 rows
 * extended by their reflection.
 */
#include "cpu-ops.h"


void ggmlx_cpu_pad(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const size_t  es  = ggml_type_size(dst->type);
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const int64_t lp0 = ggmlx_get_op_params_i32(dst, 0);
    const int64_t lp1 = ggmlx_get_op_params_i32(dst, 2);
    const int64_t lp2 = ggmlx_get_op_params_i32(dst, 4);
    const int64_t lp3 = ggmlx_get_op_params_i32(dst, 6);
    const int64_t sn0 = src->ne[0];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        char * d = ROW_PTR(dst, i1, i2, i3);
        const int64_t s1 = i1 - lp1, s2 = i2 - lp2, s3 = i3 - lp3;
        const bool inside = s1 >= 0 && s1 < src->ne[1] && s2 >= 0 && s2 < src->ne[2] && s3 >= 0 && s3 < src->ne[3];
        if (dnb0 == es) {
            if (!inside) {
                memset(d, 0, (size_t) ne0 * es);
                continue;
            }
            const char * s = ROW_PTR(src, s1, s2, s3);
            memset(d, 0, (size_t) lp0 * es);
            if (snb0 == es) {
                memcpy(d + lp0 * es, s, (size_t) sn0 * es);
            } else {
                for (int64_t i = 0; i < sn0; i++) {
                    memcpy(d + (lp0 + i) * es, s + i * snb0, es);
                }
            }
            memset(d + (lp0 + sn0) * es, 0, (size_t) (ne0 - lp0 - sn0) * es);
        } else {
            const char * s = inside ? ROW_PTR(src, s1, s2, s3) : NULL;
            for (int64_t i = 0; i < ne0; i++) {
                const int64_t j = i - lp0;
                if (s != NULL && j >= 0 && j < sn0) {
                    memcpy(d + i * dnb0, s + j * snb0, es);
                } else {
                    memset(d + i * dnb0, 0, es);
                }
            }
        }
    }
}

/* dst row: src[p0], ..., src[1], src[0 .. ne0), src[ne0 - 2], ..., src[ne0 - 1 - p1] */
void ggmlx_cpu_pad_reflect_1d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 0);
    const int64_t p1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t sn0 = src->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i = 0; i < p0; i++) {
            *(float *)(d + i * dnb0) = *(const float *)(s + (p0 - i) * snb0);
        }
        for (int64_t i = 0; i < sn0; i++) {
            *(float *)(d + (p0 + i) * dnb0) = *(const float *)(s + i * snb0);
        }
        for (int64_t i = 0; i < p1; i++) {
            *(float *)(d + (p0 + sn0 + i) * dnb0) = *(const float *)(s + (sn0 - 2 - i) * snb0);
        }
    }
}

/* i wrapped into [0, n) (n > 0) */
static int64_t wrap_index(int64_t i, int64_t n) {
    const int64_t j = i % n;
    return j < 0 ? j + n : j;
}

/* PAD with op_params [8] = 1: dst element (i0, ..) is src ((i0 - lp0) mod ne0, ..) */
void ggmlx_cpu_pad_circular(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const size_t  es  = ggml_type_size(dst->type);
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const int64_t lp0 = ggmlx_get_op_params_i32(dst, 0);
    const int64_t lp1 = ggmlx_get_op_params_i32(dst, 2);
    const int64_t lp2 = ggmlx_get_op_params_i32(dst, 4);
    const int64_t lp3 = ggmlx_get_op_params_i32(dst, 6);

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        char * d = ROW_PTR(dst, i1, i2, i3);
        const char * s = ROW_PTR(src, wrap_index(i1 - lp1, src->ne[1]), wrap_index(i2 - lp2, src->ne[2]),
                                 wrap_index(i3 - lp3, src->ne[3]));
        for (int64_t i = 0; i < ne0; i++) {
            memcpy(d + i * dst->nb[0], s + wrap_index(i - lp0, src->ne[0]) * src->nb[0], es);
        }
    }
}
