/*
 * ops-rope.c -- ROPE kernel, F32 and F16, normal (adjacent pairs) and NEOX (halves) layouts.
 *
 * Angles depend on the token (dim 2) and the pair, not on the head (dim 1): rows are visited
 * heads-fastest, so a small per-thread table of cos/sin is reused across the heads of a token.
 */
#include "cpu-ops.h"
#include "ggml-math.h"


/* pairs whose angles are cached; rows with more pairs compute the rest on the fly */
#define ROPE_CACHE_PAIRS 512

struct rope_args {
    int    n_dims;
    bool   neox;
    float  freq_base, freq_scale, ext_factor, mscale;
    float  corr_dims[2];
    const struct ggml_tensor * ff; /* optional frequency factors */
};

static float load_elem(const char * p, bool f16) {
    return f16 ? ggmlx_fp16_to_fp32(*(const uint16_t *)p) : *(const float *)p;
}

static void store_elem(char * p, bool f16, float v) {
    if (f16) {
        *(uint16_t *)p = ggmlx_fp32_to_fp16(v);
    } else {
        *(float *)p = v;
    }
}

static void pair_cos_sin(const struct rope_args * ra, float pos, int pair, float * c, float * s) {
    const float ff = ra->ff ? *(const float *)((const char *)ra->ff->data + pair * ra->ff->nb[0]) : 1.0f;
    ggmlx_rope_cos_sin(pos, pair, ra->n_dims, ra->freq_base, ra->freq_scale, ff, ra->ext_factor, ra->corr_dims,
                       ra->mscale, c, s);
}

void ggmlx_cpu_rope(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const struct ggml_tensor * pos = dst->src[1];

    struct rope_args ra;
    ra.n_dims     = ggmlx_get_op_params_i32(dst, 1);
    ra.neox       = (ggmlx_get_op_params_i32(dst, 2) & GGML_ROPE_TYPE_NEOX) != 0;
    ra.freq_base  = ggmlx_get_op_params_f32(dst, 5);
    ra.freq_scale = ggmlx_get_op_params_f32(dst, 6);
    ra.ext_factor = ggmlx_get_op_params_f32(dst, 7);
    ra.mscale     = ggmlx_rope_mscale(ggmlx_get_op_params_f32(dst, 8), ra.freq_scale, ra.ext_factor);
    ra.ff         = dst->src[2];
    ggmlx_rope_yarn_corr_dims(ra.n_dims, ggmlx_get_op_params_i32(dst, 4), ra.freq_base,
                              ggmlx_get_op_params_f32(dst, 9), ggmlx_get_op_params_f32(dst, 10), ra.corr_dims);

    const int     mode    = ggmlx_get_op_params_i32(dst, 2);
    const int64_t ne0     = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const int     n_pairs = ra.n_dims / 2;
    if (mode != GGML_ROPE_TYPE_NORMAL && mode != GGML_ROPE_TYPE_NEOX) {
        ggmlx_cpu_fail(params, "ggml_rope: mode %d is not supported by the CPU kernel", mode);
        return;
    }
    /* ggml_rope_set_offset: the rotated dims start at channel n_offs (op_params [15]) */
    const int64_t n_offs = ggmlx_get_op_params_i32(dst, 15);
    if (ra.n_dims <= 0 || ra.n_dims % 2 != 0 || n_offs < 0 || n_offs + ra.n_dims > ne0) {
        ggmlx_cpu_fail(params, "ggml_rope: n_dims %d from channel %lld does not fit rows of %lld", ra.n_dims,
                       (long long) n_offs, (long long)ne0);
        return;
    }
    const bool    f16  = src->type == GGML_TYPE_F16;
    /* ROPE_BACK rotates by -theta: the transpose of the forward rotation */
    const float   sgn  = dst->op == GGML_OP_ROPE_BACK ? -1.0f : 1.0f;
    const size_t  snb0 = src->nb[0], dnb0 = dst->nb[0];
    /* the partner of pair i: the next element (normal) or the one half the rotated dims away (NEOX) */
    const int64_t step = ra.neox ? n_pairs : 1;

    float   cache_c[ROPE_CACHE_PAIRS], cache_s[ROPE_CACHE_PAIRS];
    const int n_cached = n_pairs < ROPE_CACHE_PAIRS ? n_pairs : ROPE_CACHE_PAIRS;
    int64_t cached_token = -1, cached_i3 = -1;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, src->ne[1] * src->ne[2] * src->ne[3], &r0, &r1);

    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        const char * s = ROW_PTR(src, i1, i2, i3) + n_offs * (int64_t) snb0;
        char       * d = ROW_PTR(dst, i1, i2, i3) + n_offs * (int64_t) dnb0;
        const float  p = (float)*(const int32_t *)((const char *)pos->data + i2 * pos->nb[0]);

        if (i2 != cached_token || i3 != cached_i3) {
            for (int i = 0; i < n_cached; i++) {
                pair_cos_sin(&ra, p, i, &cache_c[i], &cache_s[i]);
            }
            cached_token = i2;
            cached_i3    = i3;
        }
        for (int i = 0; i < n_pairs; i++) {
            float c, sn;
            if (i < n_cached) {
                c  = cache_c[i];
                sn = cache_s[i];
            } else {
                pair_cos_sin(&ra, p, i, &c, &sn);
            }
            sn *= sgn;
            const int64_t j0 = ra.neox ? i : 2 * (int64_t)i;
            const int64_t j1 = j0 + step;
            const float x0 = load_elem(s + j0 * snb0, f16);
            const float x1 = load_elem(s + j1 * snb0, f16);
            store_elem(d + j0 * dnb0, f16, x0 * c - x1 * sn);
            store_elem(d + j1 * dnb0, f16, x0 * sn + x1 * c);
        }
        /* the dims outside the rotated ones pass through (a no-op when computing in place) */
        if (s != d || snb0 != dnb0) {
            const char * s0 = ROW_PTR(src, i1, i2, i3);
            char       * d0 = ROW_PTR(dst, i1, i2, i3);
            const size_t es = f16 ? sizeof(uint16_t) : sizeof(float);
            for (int64_t i = 0; i < ne0; i++) {
                if (i == n_offs) {
                    i += ra.n_dims - 1;
                    continue;
                }
                memcpy(d0 + i * dnb0, s0 + i * snb0, es);
            }
        }
    }
}
