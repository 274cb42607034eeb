/*
 * ops-rope-multi.c -- ROPE kernel for the multimodal modes of ggml_rope_multi (F32 and F16):
 * MROPE (sections t, h, w, e one after the other), IMROPE (t, h, w interleaved) and VISION
 * (two halves, each section's angles counted from its own start). Each token has four positions
 * (b[i2], b[i2 + ne2], b[i2 + 2 ne2], b[i2 + 3 ne2]); a pair's section picks which one turns it.
 * Pairs are NEOX-ordered: pair p rotates elements p and p + n_dims/2 (VISION: p + n_dims).
 * The angles of a token are computed once per thread into the work buffer and reused over heads.
 */
#include "cpu-ops.h"
#include "ops-elem.h"
#include "ggml-math.h"


struct mrope_args {
    int   mode, n_dims, sections[4];
    float freq_base, freq_scale, ext_factor, mscale;
    float corr_dims[2];
    const struct ggml_tensor * ff;
};

/* which position (0 t, 1 h, 2 w, 3 e) turns pair p, and the power of the frequency step it takes */
static void pair_section(const struct mrope_args * m, int64_t p, int * which, int64_t * step) {
    const int * s = m->sections;
    const int64_t n_sect = (int64_t) s[0] + s[1] + s[2] + s[3];
    const int64_t sector = p % n_sect;
    int w;
    if (m->mode == GGML_ROPE_TYPE_IMROPE) {
        if (sector % 3 == 1 && sector < 3 * (int64_t) s[1]) {
            w = 1;
        } else if (sector % 3 == 2 && sector < 3 * (int64_t) s[2]) {
            w = 2;
        } else if (sector % 3 == 0 && sector < 3 * (int64_t) s[0]) {
            w = 0;
        } else {
            w = 3;
        }
    } else {
        w = sector < s[0] ? 0 : sector < s[0] + s[1] ? 1 : sector < s[0] + s[1] + s[2] ? 2 : 3;
    }
    *which = w;
    if (m->mode == GGML_ROPE_TYPE_VISION) {
        int64_t start = 0;
        for (int i = 0; i < w; i++) {
            start += s[i];
        }
        *step = sector - start;
    } else {
        *step = p;
    }
}

static void token_angles(const struct mrope_args * m, const float pos[4], int64_t n_pairs, float * cs) {
    for (int64_t p = 0; p < n_pairs; p++) {
        int which;
        int64_t step;
        pair_section(m, p, &which, &step);
        const float ff = m->ff ? *(const float *) ((const char *) m->ff->data + p * m->ff->nb[0]) : 1.0f;
        const float extrap = pos[which] * ggmlx_rope_inv_freq(m->freq_base, m->n_dims, (int) step) / ff;
        const float interp = m->freq_scale * extrap;
        float theta = interp;
        if (m->ext_factor != 0.0f) {
            const float mix = ggmlx_rope_yarn_ramp(m->corr_dims[0], m->corr_dims[1], (int) p) * m->ext_factor;
            theta = interp * (1.0f - mix) + extrap * mix;
        }
        cs[2 * p]     = cosf(theta) * m->mscale;
        cs[2 * p + 1] = sinf(theta) * m->mscale;
    }
}

size_t ggmlx_cpu_rope_multi_work_size(const struct ggml_tensor * dst, int n_tasks) {
    /* one cos/sin table per thread, a cache line apart */
    return (size_t) n_tasks * ((size_t) dst->ne[0] + 16) * sizeof(float);
}

void ggmlx_cpu_rope_multi(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const struct ggml_tensor * pos = dst->src[1];

    struct mrope_args m;
    m.mode       = ggmlx_get_op_params_i32(dst, 2);
    m.n_dims     = ggmlx_get_op_params_i32(dst, 1);
    m.freq_base  = ggmlx_get_op_params_f32(dst, 5);
    m.freq_scale = ggmlx_get_op_params_f32(dst, 6);
    m.ext_factor = ggmlx_get_op_params_f32(dst, 7);
    m.mscale     = ggmlx_rope_mscale(ggmlx_get_op_params_f32(dst, 8), m.freq_scale, m.ext_factor);
    m.ff         = dst->src[2];
    for (int i = 0; i < 4; i++) {
        m.sections[i] = ggmlx_get_op_params_i32(dst, 11 + i);
    }
    ggmlx_rope_yarn_corr_dims(m.n_dims, ggmlx_get_op_params_i32(dst, 4), m.freq_base, ggmlx_get_op_params_f32(dst, 9),
                              ggmlx_get_op_params_f32(dst, 10), m.corr_dims);

    const int64_t ne0 = src->ne[0], ne1 = src->ne[1], ne2 = src->ne[2];
    const bool    vision  = m.mode == GGML_ROPE_TYPE_VISION;
    const int64_t n_pairs = vision ? ne0 / 2 : m.n_dims / 2;
    const int64_t partner = vision ? m.n_dims : m.n_dims / 2;
    const int64_t span    = vision ? 2 * (int64_t) m.n_dims : m.n_dims; /* the rotated channels */
    const int64_t n_offs  = ggmlx_get_op_params_i32(dst, 15);              /* ggml_rope_set_offset */
    if (n_offs < 0 || n_offs + span > ne0) {
        ggmlx_cpu_fail(params, "ggml_rope_multi: %lld channels from %lld do not fit rows of %lld", (long long) span,
                       (long long) n_offs, (long long) ne0);
        return;
    }
    const enum ggml_type ty = src->type;
    const size_t es = ggml_type_size(ty), snb0 = src->nb[0], dnb0 = dst->nb[0];
    /* ROPE_BACK rotates by -theta: the transpose of the forward rotation */
    const float sgn = dst->op == GGML_OP_ROPE_BACK ? -1.0f : 1.0f;
    float * cs = (float *) ((char *) params->wdata + (size_t) params->ith * ((size_t) ne0 + 16) * sizeof(float));

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ne1 * ne2 * src->ne[3], &r0, &r1);
    int64_t cached = -1;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        if (i2 != cached) {
            float p4[4];
            for (int k = 0; k < 4; k++) {
                p4[k] = (float) *(const int32_t *) ((const char *) pos->data + (i2 + k * ne2) * pos->nb[0]);
            }
            token_angles(&m, p4, n_pairs, cs);
            cached = i2;
        }
        const char * s0 = ROW_PTR(src, i1, i2, i3);
        char       * d0 = ROW_PTR(dst, i1, i2, i3);
        const char * s  = s0 + n_offs * (int64_t) snb0;
        char       * d  = d0 + n_offs * (int64_t) dnb0;
        for (int64_t p = 0; p < n_pairs; p++) {
            const float x0 = ggmlx_load_f(ty, s + p * snb0);
            const float x1 = ggmlx_load_f(ty, s + (p + partner) * snb0);
            const float c = cs[2 * p], sn = sgn * cs[2 * p + 1];
            ggmlx_store_f(ty, d + p * dnb0, x0 * c - x1 * sn);
            ggmlx_store_f(ty, d + (p + partner) * dnb0, x0 * sn + x1 * c);
        }
        /* the channels outside the rotated ones pass through (a no-op in place) */
        if (s != d || snb0 != dnb0) {
            for (int64_t i = 0; i < ne0; i++) {
                if (i == n_offs) {
                    i += span - 1;
                    continue;
                }
                memcpy(d0 + i * dnb0, s0 + i * snb0, es);
            }
        }
    }
}
