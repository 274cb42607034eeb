/*
 * ops-conv.c -- convolution kernels: IM2COL and IM2COL_3D (F32 data into F32 or F16 columns),
 * COL2IM_1D (F32/F16/BF16), direct CONV_2D, CONV_2D_DW and CONV_3D (F32 or F16 kernel, F32 data),
 * CONV_TRANSPOSE_1D and CONV_TRANSPOSE_2D (F32 or F16 kernel, F32 data). Every input is read
 * through its strides (permuted views work). Each thread computes whole rows of dst, so no
 * scratch and no barrier are needed; sums are kept in float, as upstream's.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#define AT(t, i0, i1, i2, i3) \
    ((const char *) (t)->data + (i0) * (t)->nb[0] + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])
#define DST_ROW(t, i1, i2, i3) ((char *) (t)->data + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])

static inline float ld_f32(const char * p) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

/* the ow range [*lo, *hi) whose input column ow*s + off falls inside [0, in) */
static inline void valid_range(int64_t n_out, int64_t in, int64_t s, int64_t off, int64_t * lo, int64_t * hi) {
    const int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
    const int64_t b = in - 1 - off < 0 ? 0 : (in - 1 - off) / s + 1;
    *lo = a < n_out ? a : n_out;
    *hi = b < n_out ? b : n_out;
    if (*hi < *lo) {
        *hi = *lo;
    }
}

/* acc[ow] += w * src[ow*s + off] for ow in [lo, hi): the inner loop of every direct convolution */
static inline void axpy_strided(float * acc, const char * src, size_t nb0, int64_t s, int64_t off, int64_t lo,
                                int64_t hi, float w) {
    if (nb0 == sizeof(float) && s == 1) {
        const float * x = (const float *) (const void *) src + off;
        for (int64_t o = lo; o < hi; o++) {
            acc[o] += w * x[o];
        }
        return;
    }
    for (int64_t o = lo; o < hi; o++) {
        acc[o] += w * ld_f32(src + (o * s + off) * (int64_t) nb0);
    }
}

void ggmlx_cpu_im2col(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0), s1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 2), p1 = ggmlx_get_op_params_i32(dst, 3);
    const int64_t d0 = ggmlx_get_op_params_i32(dst, 4), d1 = ggmlx_get_op_params_i32(dst, 5);
    const bool is_2D = ggmlx_get_op_params_i32(dst, 6) == 1;
    const int64_t KW = a->ne[0], KH = is_2D ? a->ne[1] : 1;
    const int64_t IC = is_2D ? b->ne[2] : b->ne[1];
    const int64_t IW = b->ne[0], IH = is_2D ? b->ne[1] : 1;
    const size_t  es = ggml_type_size(dst->type);
    const bool    f16 = dst->type == GGML_TYPE_F16;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t ow, i2, i3;
        ggmlx_row_coords(dst, r, &ow, &i2, &i3);
        const int64_t n = is_2D ? i3 : i2, oh = is_2D ? i2 : 0;
        char * d = DST_ROW(dst, ow, i2, i3);
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = oh * s1 + kh * d1 - p1;
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t iw = ow * s0 + kw * d0 - p0;
                    float v = 0.0f;
                    if (ih >= 0 && ih < IH && iw >= 0 && iw < IW) {
                        v = is_2D ? ld_f32(AT(b, iw, ih, ic, n)) : ld_f32(AT(b, iw, ic, n, 0));
                    }
                    char * q = d + ((ic * KH + kh) * KW + kw) * (int64_t) es;
                    if (f16) {
                        const uint16_t h = ggmlx_fp32_to_fp16(v);
                        memcpy(q, &h, sizeof h);
                    } else {
                        memcpy(q, &v, sizeof v);
                    }
                }
            }
        }
    }
}

void ggmlx_cpu_im2col_3d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    int64_t s[3], p[3], dl[3];
    for (int i = 0; i < 3; i++) {
        s[i]  = ggmlx_get_op_params_i32(dst, i);
        p[i]  = ggmlx_get_op_params_i32(dst, 3 + i);
        dl[i] = ggmlx_get_op_params_i32(dst, 6 + i);
    }
    const int64_t IC = ggmlx_get_op_params_i32(dst, 9);
    const int64_t KW = a->ne[0], KH = a->ne[1], KD = a->ne[2];
    const int64_t IW = b->ne[0], IH = b->ne[1], ID = b->ne[2];
    const int64_t N = b->ne[3] / IC;
    if (N == 0) {
        return; /* fewer channels than IC: an empty result (upstream's rounding) */
    }
    const int64_t OD = dst->ne[3] / N;
    const size_t  es = ggml_type_size(dst->type);

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t ow, oh, i3;
        ggmlx_row_coords(dst, r, &ow, &oh, &i3);
        const int64_t n = i3 / OD, od = i3 % OD;
        char * d = DST_ROW(dst, ow, oh, i3);
        int64_t k = 0;
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t kd = 0; kd < KD; kd++) {
                const int64_t id = od * s[2] + kd * dl[2] - p[2];
                for (int64_t kh = 0; kh < KH; kh++) {
                    const int64_t ih = oh * s[1] + kh * dl[1] - p[1];
                    for (int64_t kw = 0; kw < KW; kw++, k++) {
                        const int64_t iw = ow * s[0] + kw * dl[0] - p[0];
                        const bool in = id >= 0 && id < ID && ih >= 0 && ih < IH && iw >= 0 && iw < IW;
                        ggmlx_store_f(dst->type, d + k * (int64_t) es, in ? ld_f32(AT(b, iw, ih, id, n * IC + ic)) : 0.0f);
                    }
                }
            }
        }
    }
}

/* dst (t, oc) = sum of the columns (oc*K + k, t_in) with t_in*s0 + k == t + p0 */
void ggmlx_cpu_col2im_1d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0);
    const int64_t OC = ggmlx_get_op_params_i32(dst, 1);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 2);
    const int64_t K = src->ne[0] / OC, T_in = src->ne[1], T_out = dst->ne[0];
    const enum ggml_type ty = src->type;

    /* split over time: balanced whatever the channel count */
    int64_t t0, t1;
    ggmlx_cpu_split_rows(params, T_out, &t0, &t1);
    for (int64_t oc = 0; oc < OC; oc++) {
        for (int64_t t = t0; t < t1; t++) {
            const int64_t ta = t + p0;
            int64_t lo = ta - K + 1 <= 0 ? 0 : (ta - K + 1 + s0 - 1) / s0;
            int64_t hi = ta / s0;
            if (hi > T_in - 1) {
                hi = T_in - 1;
            }
            float sum = 0.0f;
            for (int64_t ti = lo; ti <= hi; ti++) {
                const int64_t k = ta - ti * s0;
                sum += ggmlx_load_f(ty, AT(src, oc * K + k, ti, 0, 0));
            }
            ggmlx_store_f(dst->type, DST_ROW(dst, oc, 0, 0) + t * (int64_t) dst->nb[0], sum);
        }
    }
}

/* CONV_2D: dst row (oh, oc, n) = sum over ic, kh, kw of kernel (kw, kh, ic, oc) * b (ow*s0 + kw*d0 - p0, ...) */
void ggmlx_cpu_conv_2d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0), s1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 2), p1 = ggmlx_get_op_params_i32(dst, 3);
    const int64_t d0 = ggmlx_get_op_params_i32(dst, 4), d1 = ggmlx_get_op_params_i32(dst, 5);
    const int64_t KW = a->ne[0], KH = a->ne[1], IC = a->ne[2];
    const int64_t IW = b->ne[0], IH = b->ne[1], OW = dst->ne[0];
    if (ggmlx_cpu_conv_2d_fast(params, dst)) {
        return;
    }

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t oh, oc, n;
        ggmlx_row_coords(dst, r, &oh, &oc, &n);
        float * acc = (float *) (void *) DST_ROW(dst, oh, oc, n); /* a new, contiguous F32 tensor */
        memset(acc, 0, (size_t) OW * sizeof(float));
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = oh * s1 + kh * d1 - p1;
                if (ih < 0 || ih >= IH) {
                    continue;
                }
                const char * row = AT(b, 0, ih, ic, n);
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float w = ggmlx_load_f(a->type, AT(a, kw, kh, ic, oc));
                    const int64_t off = kw * d0 - p0;
                    int64_t lo, hi;
                    valid_range(OW, IW, s0, off, &lo, &hi);
                    axpy_strided(acc, row, b->nb[0], s0, off, lo, hi, w);
                }
            }
        }
    }
}

/* CONV_3D: kernel (kw, kh, kd, oc*IC + ic), data (iw, ih, id, n*IC + ic), dst (ow, oh, od, n*OC + oc) */
void ggmlx_cpu_conv_3d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    int64_t s[3], p[3], dl[3];
    for (int i = 0; i < 3; i++) {
        s[i]  = ggmlx_get_op_params_i32(dst, i);
        p[i]  = ggmlx_get_op_params_i32(dst, 3 + i);
        dl[i] = ggmlx_get_op_params_i32(dst, 6 + i);
    }
    const int64_t IC = ggmlx_get_op_params_i32(dst, 9), OC = ggmlx_get_op_params_i32(dst, 11);
    const int64_t KW = a->ne[0], KH = a->ne[1], KD = a->ne[2];
    const int64_t IW = b->ne[0], IH = b->ne[1], ID = b->ne[2], OW = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t oh, od, i3;
        ggmlx_row_coords(dst, r, &oh, &od, &i3);
        const int64_t n = i3 / OC, oc = i3 % OC;
        float * acc = (float *) (void *) DST_ROW(dst, oh, od, i3);
        memset(acc, 0, (size_t) OW * sizeof(float));
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t kd = 0; kd < KD; kd++) {
                const int64_t id = od * s[2] + kd * dl[2] - p[2];
                if (id < 0 || id >= ID) {
                    continue;
                }
                for (int64_t kh = 0; kh < KH; kh++) {
                    const int64_t ih = oh * s[1] + kh * dl[1] - p[1];
                    if (ih < 0 || ih >= IH) {
                        continue;
                    }
                    const char * row = AT(b, 0, ih, id, n * IC + ic);
                    for (int64_t kw = 0; kw < KW; kw++) {
                        const float w = ggmlx_load_f(a->type, AT(a, kw, kh, kd, oc * IC + ic));
                        const int64_t off = kw * dl[0] - p[0];
                        int64_t lo, hi;
                        valid_range(OW, IW, s[0], off, &lo, &hi);
                        axpy_strided(acc, row, b->nb[0], s[0], off, lo, hi, w);
                    }
                }
            }
        }
    }
}

/* CONV_2D_DW: one kernel (kw, kh, 0, c) per channel; dst may be channels-innermost, so written by strides */
void ggmlx_cpu_conv_2d_dw(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0), s1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 2), p1 = ggmlx_get_op_params_i32(dst, 3);
    const int64_t d0 = ggmlx_get_op_params_i32(dst, 4), d1 = ggmlx_get_op_params_i32(dst, 5);
    const int64_t KW = a->ne[0], KH = a->ne[1], IW = b->ne[0], IH = b->ne[1], OW = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t oh, c, n;
        ggmlx_row_coords(dst, r, &oh, &c, &n);
        char * d = DST_ROW(dst, oh, c, n);
        for (int64_t ow = 0; ow < OW; ow++) {
            float sum = 0.0f;
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t ih = oh * s1 + kh * d1 - p1;
                if (ih < 0 || ih >= IH) {
                    continue;
                }
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t iw = ow * s0 + kw * d0 - p0;
                    if (iw >= 0 && iw < IW) {
                        sum += ggmlx_load_f(a->type, AT(a, kw, kh, 0, c)) * ld_f32(AT(b, iw, ih, c, n));
                    }
                }
            }
            memcpy(d + ow * (int64_t) dst->nb[0], &sum, sizeof sum);
        }
    }
}

/* CONV_TRANSPOSE_1D: dst (l*s0 + k, oc) += kernel (k, oc, ic) * b (l, ic); each thread owns whole rows oc */
void ggmlx_cpu_conv_transpose_1d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0);
    const int64_t K = a->ne[0], IC = a->ne[2], L = b->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1], &r0, &r1);
    for (int64_t oc = r0; oc < r1; oc++) {
        float * acc = (float *) (void *) DST_ROW(dst, oc, 0, 0);
        memset(acc, 0, (size_t) dst->ne[0] * sizeof(float));
        for (int64_t ic = 0; ic < IC; ic++) {
            for (int64_t k = 0; k < K; k++) {
                const float w = ggmlx_load_f(a->type, AT(a, k, oc, ic, 0));
                for (int64_t l = 0; l < L; l++) {
                    acc[l * s0 + k] += w * ld_f32(AT(b, l, ic, 0, 0));
                }
            }
        }
    }
}

/* CONV_TRANSPOSE_2D: dst (x*s + kx, y*s + ky, oc, n) += kernel (kx, ky, oc, ic) * b (x, y, ic, n) */
void ggmlx_cpu_conv_transpose_2d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int64_t st = ggmlx_get_op_params_i32(dst, 0);
    const int64_t KW = a->ne[0], KH = a->ne[1], IC = a->ne[3], W = b->ne[0], H = b->ne[1], OW = dst->ne[0];

    /* each thread owns whole output rows (oy, oc, n) and gathers what lands on them */
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t oy, oc, n;
        ggmlx_row_coords(dst, r, &oy, &oc, &n);
        float * acc = (float *) (void *) DST_ROW(dst, oy, oc, n);
        memset(acc, 0, (size_t) OW * sizeof(float));
        for (int64_t ky = oy % st; ky < KH; ky += st) {
            const int64_t y = (oy - ky) / st;
            if (y < 0 || y >= H) {
                continue;
            }
            for (int64_t ic = 0; ic < IC; ic++) {
                const char * row = AT(b, 0, y, ic, n);
                for (int64_t kx = 0; kx < KW; kx++) {
                    const float w = ggmlx_load_f(a->type, AT(a, kx, ky, oc, ic));
                    for (int64_t x = 0; x < W; x++) {
                        acc[x * st + kx] += w * ld_f32(row + x * (int64_t) b->nb[0]);
                    }
                }
            }
        }
    }
}
