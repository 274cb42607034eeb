/*
 * ops-conv-avx512.c -- CONV_2D (direct) with unit stride along dim 0 on AVX-512: the data is
 * first copied, per channel and row, into zero-padded F32 rows and the kernel into blocks of 8
 * output channels (F16 kernels converted once), so the inner loop is 16 outputs of one row times
 * 8 output channels held in registers, one vector load of data per 8 FMAs and no bounds checks.
 * Other strides and CPUs without AVX-512 use the portable loops of ops-conv.c.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#define OCB 8  /* output channels per block (accumulator registers) */
#define OWV 16 /* outputs per vector */

struct conv_geom {
    int64_t KW, KH, IC, OC, IW, IH, N, OW, OH, IWP, n_ocb;
    int64_t s1, p0, p1, d0, d1;
};

static struct conv_geom geom_of(const struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    struct conv_geom g;
    g.KW = a->ne[0], g.KH = a->ne[1], g.IC = a->ne[2], g.OC = a->ne[3];
    g.IW = b->ne[0], g.IH = b->ne[1], g.N = b->ne[3];
    g.OW = dst->ne[0], g.OH = dst->ne[1];
    g.s1 = ggmlx_get_op_params_i32(dst, 1);
    g.p0 = ggmlx_get_op_params_i32(dst, 2), g.p1 = ggmlx_get_op_params_i32(dst, 3);
    g.d0 = ggmlx_get_op_params_i32(dst, 4), g.d1 = ggmlx_get_op_params_i32(dst, 5);
    /* room for every tap of every output: (OW - 1) + (KW - 1)*d0 + 1 columns, at least the data's */
    g.IWP = g.OW + (g.KW - 1) * g.d0;
    if (g.IWP < g.IW + g.p0) {
        g.IWP = g.IW + g.p0;
    }
    g.n_ocb = (g.OC + OCB - 1) / OCB;
    return g;
}

#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>

static bool has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

static bool fast_path(const struct ggml_tensor * dst) {
    /* unit stride along rows, padding that only adds zeros */
    return ggmlx_get_op_params_i32(dst, 0) == 1 && ggmlx_get_op_params_i32(dst, 2) >= 0 && has_avx512();
}

size_t ggmlx_cpu_conv_2d_work_size(const struct ggml_tensor * dst, int n_tasks) {
    (void) n_tasks;
    if (!fast_path(dst)) {
        return 0;
    }
    const struct conv_geom g = geom_of(dst);
    const size_t kernel = (size_t) (g.n_ocb * g.IC * g.KH * g.KW * OCB);
    const size_t data   = (size_t) (g.N * g.IC * g.IH * g.IWP);
    return (kernel + data) * sizeof(float) + 64;
}

/* 16 outputs (lanes in mask m) of row oh, channels ocb*8 .. +7, from the padded rows and packed kernel */
__attribute__((target("avx512f"))) static void conv_tile(const struct conv_geom * g, const float * xp,
                                                        const float * kp, int64_t oh, int64_t ow0, __mmask16 m,
                                                        __m512 acc[OCB]) {
    for (int j = 0; j < OCB; j++) {
        acc[j] = _mm512_setzero_ps();
    }
    for (int64_t ic = 0; ic < g->IC; ic++) {
        for (int64_t kh = 0; kh < g->KH; kh++) {
            const int64_t ih = oh * g->s1 + kh * g->d1 - g->p1;
            if (ih < 0 || ih >= g->IH) {
                continue;
            }
            const float * row = xp + (ic * g->IH + ih) * g->IWP + ow0;
            const float * w = kp + ((ic * g->KH + kh) * g->KW) * OCB;
            for (int64_t kw = 0; kw < g->KW; kw++, w += OCB) {
                const __m512 x = _mm512_maskz_loadu_ps(m, row + kw * g->d0);
                for (int j = 0; j < OCB; j++) {
                    acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), x, acc[j]);
                }
            }
        }
    }
}

__attribute__((target("avx512f"))) static void conv_compute(const struct ggmlx_cpu_params * params,
                                                           struct ggml_tensor * dst, const struct conv_geom * g,
                                                           const float * kpack, const float * xpad) {
    /* work items: (n, oh, output channel block) */
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, g->N * g->OH * g->n_ocb, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ocb = r % g->n_ocb, oh = (r / g->n_ocb) % g->OH, n = r / (g->n_ocb * g->OH);
        const float * xp = xpad + n * g->IC * g->IH * g->IWP;
        const float * kp = kpack + ocb * g->IC * g->KH * g->KW * OCB;
        for (int64_t ow0 = 0; ow0 < g->OW; ow0 += OWV) {
            const int64_t nv = g->OW - ow0 < OWV ? g->OW - ow0 : OWV;
            const __mmask16 m = (__mmask16) ((1u << nv) - 1u);
            __m512 acc[OCB];
            conv_tile(g, xp, kp, oh, ow0, m, acc);
            for (int j = 0; j < OCB && ocb * OCB + j < g->OC; j++) {
                float * out = (float *) (void *) ((char *) dst->data + oh * dst->nb[1] + (ocb * OCB + j) * dst->nb[2] +
                                                  n * dst->nb[3]) + ow0;
                _mm512_mask_storeu_ps(out, m, acc[j]);
            }
        }
    }
}

bool ggmlx_cpu_conv_2d_fast(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    if (params->wdata == NULL || !fast_path(dst) || params->wsize < ggmlx_cpu_conv_2d_work_size(dst, params->nth)) {
        return false;
    }
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const struct conv_geom g = geom_of(dst);
    float * kpack = (float *) params->wdata;
    float * xpad  = kpack + g.n_ocb * g.IC * g.KH * g.KW * OCB;

    /* every thread packs a share of the kernel blocks and of the padded rows, then all compute */
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, g.n_ocb * g.IC, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ocb = r / g.IC, ic = r % g.IC;
        float * o = kpack + (ocb * g.IC + ic) * g.KH * g.KW * OCB;
        for (int64_t kh = 0; kh < g.KH; kh++) {
            for (int64_t kw = 0; kw < g.KW; kw++, o += OCB) {
                for (int j = 0; j < OCB; j++) {
                    const int64_t oc = ocb * OCB + j;
                    o[j] = oc < g.OC ? ggmlx_load_f(a->type, (const char *) a->data + kw * a->nb[0] + kh * a->nb[1] +
                                                                 ic * a->nb[2] + oc * a->nb[3])
                                     : 0.0f;
                }
            }
        }
    }
    ggmlx_cpu_split_rows(params, g.N * g.IC * g.IH, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ih = r % g.IH, ic = (r / g.IH) % g.IC, n = r / (g.IH * g.IC);
        float * o = xpad + r * g.IWP;
        const char * s = (const char *) b->data + ih * b->nb[1] + ic * b->nb[2] + n * b->nb[3];
        memset(o, 0, (size_t) g.IWP * sizeof(float));
        for (int64_t iw = 0; iw < g.IW; iw++) {
            memcpy(o + g.p0 + iw, s + iw * b->nb[0], sizeof(float));
        }
    }
    if (params->nth > 1) {
        ggmlx_cpu_barrier(params);
    }
    conv_compute(params, dst, &g, kpack, xpad);
    return true;
}

#else

size_t ggmlx_cpu_conv_2d_work_size(const struct ggml_tensor * dst, int n_tasks) {
    (void) dst, (void) n_tasks;
    return 0;
}

bool ggmlx_cpu_conv_2d_fast(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    (void) params, (void) dst;
    return false;
}

#endif
