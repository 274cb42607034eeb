/*
 * ops-write.c -- kernels of the ops that write into a tensor: SET and ACC (a copied, then b
 * written or added into the view op_params describe), FILL, TRI, DIAG, ROLL.
 */
#include "cpu-ops.h"
#include "ops-elem.h"


/*
 * dst = a (a contiguous, so is dst), then b's rows into the view. The copy is split by bytes and
 * finished by every thread before any of b lands, so no thread's copy overwrites another's write.
 */
static void set_or_acc(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, bool acc) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const size_t nb1 = (size_t) ggmlx_get_op_params_i32(dst, 0);
    const size_t nb2 = (size_t) ggmlx_get_op_params_i32(dst, 1);
    const size_t nb3 = (size_t) ggmlx_get_op_params_i32(dst, 2);
    const size_t off = (size_t) ggmlx_get_op_params_i32(dst, 3);

    if (dst->data != a->data) {
        const size_t n     = ggml_nbytes(dst);
        const size_t chunk = (n + (size_t) params->nth - 1) / (size_t) params->nth;
        const size_t c0    = chunk * (size_t) params->ith < n ? chunk * (size_t) params->ith : n;
        const size_t c1    = c0 + chunk < n ? c0 + chunk : n;
        memcpy((char *) dst->data + c0, (const char *) a->data + c0, c1 - c0);
        if (params->nth > 1) {
            ggmlx_cpu_barrier(params);
        }
    }

    const size_t  es = ggml_type_size(dst->type);
    const bool    same = b->type == dst->type;
    const int64_t ne0 = b->ne[0], ne1 = b->ne[1], ne2 = b->ne[2];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, b->ne[1] * b->ne[2] * b->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(b, i1, i2, i3);
        char       * d = (char *) dst->data + off + (size_t) i1 * nb1 + (size_t) i2 * nb2 + (size_t) i3 * nb3;
        if (acc) {
            for (int64_t i = 0; i < ne0; i++) {
                float * p = (float *) (d + i * es);
                *p += *(const float *) (s + i * b->nb[0]);
            }
        } else if (same) {
            if (b->nb[0] == es) {
                memcpy(d, s, (size_t) ne0 * es);
            } else {
                for (int64_t i = 0; i < ne0; i++) {
                    memcpy(d + i * es, s + i * b->nb[0], es);
                }
            }
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                ggmlx_store_f(dst->type, d + i * es, ggmlx_load_f(b->type, s + i * b->nb[0]));
            }
        }
    }
}

void ggmlx_cpu_set(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    set_or_acc(params, dst, false);
}

void ggmlx_cpu_acc(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    set_or_acc(params, dst, true);
}

void ggmlx_cpu_fill(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const float c = ggmlx_get_op_params_f32(dst, 0);
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    char bytes[4];
    ggmlx_store_f(dst->type, bytes, c);
    const size_t es = ggml_type_size(dst->type);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        char * d = ROW_PTR(dst, r % ne1, (r / ne1) % ne2, r / (ne1 * ne2));
        if (dst->type == GGML_TYPE_F32 && dst->nb[0] == sizeof(float)) {
            float * f = (float *) d;
            for (int64_t i = 0; i < ne0; i++) {
                f[i] = c;
            }
        } else {
            for (int64_t i = 0; i < ne0; i++) {
                memcpy(d + i * dst->nb[0], bytes, es);
            }
        }
    }
}

/* whether column i0 of row i1 lies in the kept triangle */
static bool tri_keeps(enum ggml_tri_type type, int64_t i0, int64_t i1) {
    switch (type) {
    case GGML_TRI_TYPE_LOWER:      return i0 < i1;
    case GGML_TRI_TYPE_LOWER_DIAG: return i0 <= i1;
    case GGML_TRI_TYPE_UPPER:      return i0 > i1;
    default:                       return i0 >= i1; /* UPPER_DIAG */
    }
}

void ggmlx_cpu_tri(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const enum ggml_tri_type type = (enum ggml_tri_type) ggmlx_get_op_params_i32(dst, 0);
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const size_t es = ggml_type_size(dst->type);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3);
        char       * d = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            if (tri_keeps(type, i0, i1)) {
                memcpy(d + i0 * dst->nb[0], s + i0 * src->nb[0], es);
            } else {
                memset(d + i0 * dst->nb[0], 0, es); /* all-zero bytes are 0 in F32, F16 and BF16 */
            }
        }
    }
}

void ggmlx_cpu_diag(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    const size_t es = ggml_type_size(dst->type);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        char * d = ROW_PTR(dst, i1, i2, i3);
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            memset(d + i0 * dst->nb[0], 0, es);
        }
        memcpy(d + i1 * dst->nb[0], ROW_PTR(src, 0, i2, i3) + i1 * src->nb[0], es);
    }
}

/* i - shift wrapped into [0, n) */
static int64_t wrap(int64_t i, int64_t n) {
    const int64_t j = i % n;
    return j < 0 ? j + n : j;
}

void ggmlx_cpu_roll(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0), s1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t s2 = ggmlx_get_op_params_i32(dst, 2), s3 = ggmlx_get_op_params_i32(dst, 3);
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2], ne3 = dst->ne[3];
    const size_t es = ggml_type_size(dst->type);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ne1 * ne2 * ne3, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, wrap(i1 - s1, ne1), wrap(i2 - s2, ne2), wrap(i3 - s3, ne3));
        char       * d = ROW_PTR(dst, i1, i2, i3);
        /* dst[i0] = s[i0 - s0]: two contiguous runs when both rows are packed */
        const int64_t k = wrap(-s0, ne0);
        if (dst->nb[0] == es && src->nb[0] == es) {
            memcpy(d, s + k * es, (size_t) (ne0 - k) * es);
            memcpy(d + (ne0 - k) * es, s, (size_t) k * es);
        } else {
            for (int64_t i0 = 0; i0 < ne0; i0++) {
                memcpy(d + i0 * dst->nb[0], s + wrap(i0 + k, ne0) * src->nb[0], es);
            }
        }
    }
}
