/*
 * quant-iq2.c -- IQ2_XXS, IQ2_XS and IQ2_S quantization (upstream's E8-lattice algorithm).
 *
 * Per group (32 values for IQ2_XXS, 16 for the others) the signs are folded out and a scan
 * over candidate scales rounds each 8 magnitudes to levels 0..2 (lattice 1, 3, 5); a point off
 * the grid is replaced by the best of its neighbour list. The best weighted fit wins, the
 * chosen points are refit at the final scale, and the group scales become 4-bit codes against
 * the block's largest.
 */
#include "quant-iq.h"

#include "ggml-impl.h"
#include "ggml-math.h"
#include "quant-iq-impl.h"

#include <string.h>

#define IQ2_KMAXQ      3
#define IQ2_MAX_GROUP  32
#define IQ2_XXS_EPS    1e-15f
#define IQ2_S_EPS      1e-8f
#define IQ2_S_FUDGE    0.9875f /* upstream's empirical correction of the IQ2_S super-scale */

struct iq2_group {
    int    n; /* 32 or 16 */
    float  xval[IQ2_MAX_GROUP];
    float  w[IQ2_MAX_GROUP];
    float  waux[IQ2_MAX_GROUP];
    float  scale;
    int8_t L[IQ2_MAX_GROUP];
    bool   on_grid[IQ2_MAX_GROUP / 8];
};

static float iq2_fit(const struct iq2_group * g, const int8_t * L, float * sumq2_out) {
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < g->n; ++i) {
        const float q = (float) (2 * L[i] + 1);
        sumqx += g->w[i] * g->xval[i] * q;
        sumq2 += g->w[i] * q * q;
    }
    *sumq2_out = sumq2;
    return sumqx;
}

static void iq2_round_entry(const struct ggmlx_iq_search * s, const struct iq2_group * g, int k, float id,
                            float scale, int8_t * L, bool * on_grid) {
    for (int i = 0; i < 8; ++i) {
        L[i] = (int8_t) ggmlx_iq_round_clamp(0.5f * (id * g->xval[8 * k + i] - 1), 0, IQ2_KMAXQ - 1);
    }
    ggmlx_iq_grid_index(s, L, g->xval + 8 * k, g->waux + 8 * k, scale, on_grid);
}

/* one scan step at inverse scale id: improves g->scale/L/on_grid when the fit is better than *best */
static void iq2_try_scale(const struct ggmlx_iq_search * s, struct iq2_group * g, float id, float * best) {
    int8_t Laux[IQ2_MAX_GROUP];
    bool   on_grid[IQ2_MAX_GROUP / 8];
    for (int k = 0; k < g->n / 8; ++k) {
        iq2_round_entry(s, g, k, id, 1 / id, Laux + 8 * k, &on_grid[k]);
    }
    float       sumq2;
    const float sumqx = iq2_fit(g, Laux, &sumq2);
    if (sumq2 > 0 && sumqx * sumqx > *best * sumq2) {
        g->scale = sumqx / sumq2;
        *best    = g->scale * sumqx;
        memcpy(g->L, Laux, (size_t) g->n);
        memcpy(g->on_grid, on_grid, sizeof on_grid);
    }
}

/* re-rounds entries at the final scale (all of them, or only those off the grid) and refits */
static void iq2_refine(const struct ggmlx_iq_search * s, struct iq2_group * g, bool all) {
    const float id = 1 / g->scale;
    for (int k = 0; k < g->n / 8; ++k) {
        if (all || !g->on_grid[k]) {
            iq2_round_entry(s, g, k, id, g->scale, g->L + 8 * k, NULL);
        }
    }
    float       sumq2;
    const float sumqx = iq2_fit(g, g->L, &sumq2);
    if (sumq2 > 0) {
        g->scale = sumqx / sumq2;
    }
}

static float iq2_max(const struct iq2_group * g) {
    float max = g->xval[0];
    for (int i = 1; i < g->n; ++i) {
        max = g->xval[i] > max ? g->xval[i] : max;
    }
    return max;
}

/* IQ2_XS and IQ2_S: a scan of 19 scales around 5 levels over the maximum, then a refit of the off-grid entries */
static void iq2_search_max(const struct ggmlx_iq_search * s, struct iq2_group * g, float max) {
    float best = 0;
    g->scale   = max / (2 * IQ2_KMAXQ - 1);
    for (int k = 0; k < g->n / 8; ++k) {
        g->on_grid[k] = true;
    }
    for (int is = -9; is <= 9; ++is) {
        iq2_try_scale(s, g, (2 * IQ2_KMAXQ - 1 + is * 0.1f) / max, &best);
    }
    bool any_off = false;
    for (int k = 0; k < g->n / 8; ++k) {
        any_off |= !g->on_grid[k];
    }
    if (any_off && g->scale > 0) {
        iq2_refine(s, g, false);
    }
}

static float block_sumx2(const float * x) {
    float sumx2 = 0;
    for (int i = 0; i < QK_K; ++i) {
        sumx2 += x[i] * x[i];
    }
    return sumx2;
}

static int iq2_scale_code(float id, float scale) {
    return ggmlx_iq_round_clamp(0.5f * (id * scale - 1), 0, 15);
}

/* grid indices of the group's entries (its levels are on the grid by now) */
static int iq2_entry_index(const struct ggmlx_iq_search * s, struct iq2_group * g, int k) {
    return ggmlx_iq_grid_index(s, g->L + 8 * k, g->xval + 8 * k, g->waux + 8 * k, g->scale, NULL);
}

static void quantize_block_iq2_xxs(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                   block_iq2_xxs * y) {
    uint32_t q2[2 * (QK_K / 32)] = { 0 };
    float    scales[QK_K / 32];
    float    max_scale = 0;
    const float sigma2 = block_sumx2(xbl) / QK_K;

    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const float *    xb = xbl + 32 * ib;
        const float *    qw = qwbl + 32 * ib;
        struct iq2_group g  = { .n = 32 };
        uint8_t          signs[4];
        for (int i = 0; i < 32; ++i) {
            g.w[i]    = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
            g.waux[i] = sqrtf(g.w[i]);
        }
        for (int k = 0; k < 4; ++k) {
            signs[k] = ggmlx_iq_fold_signs(xb + 8 * k, g.w + 8 * k, g.xval + 8 * k, true);
        }
        const float max = iq2_max(&g);
        if (!(max >= IQ2_XXS_EPS)) {
            scales[ib] = 0;
            continue;
        }
        /* the scan is centred on the plain 4-level fit of the magnitudes */
        const float eff_max = ggmlx_iq_fit_scale(32, IQ2_KMAXQ + 1, g.xval, g.w) * IQ2_KMAXQ;
        if (!(eff_max > 0)) {
            scales[ib] = 0;
            continue;
        }
        float best = 0;
        g.scale    = eff_max / IQ2_KMAXQ;
        for (int is = -6; is <= 6; ++is) {
            iq2_try_scale(s, &g, (2 * IQ2_KMAXQ - 1 + is * 0.1f) / eff_max, &best);
        }
        if (g.scale > 0) {
            iq2_refine(s, &g, true);
        }
        if (g.scale < 0) {
            g.scale = -g.scale;
            for (int k = 0; k < 4; ++k) {
                signs[k] = (uint8_t) (~signs[k] & 127);
            }
        }
        for (int k = 0; k < 4; ++k) {
            q2[2 * ib + 0] |= (uint32_t) iq2_entry_index(s, &g, k) << (8 * k);
            q2[2 * ib + 1] |= (uint32_t) signs[k] << (7 * k);
        }
        scales[ib] = g.scale;
        max_scale  = g.scale > max_scale ? g.scale : max_scale;
    }

    memset(y, 0, sizeof *y);
    if (!(max_scale > 0)) {
        return;
    }
    const float d  = max_scale / 31;
    const float id = 1 / d;
    y->d           = ggmlx_fp32_to_fp16(d);
    uint8_t * qs   = (uint8_t *) y->qs;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        q2[2 * ib + 1] |= (uint32_t) iq2_scale_code(id, scales[ib]) << 28;
        ggmlx_iq_put_u32(qs + 8 * ib + 0, q2[2 * ib + 0]);
        ggmlx_iq_put_u32(qs + 8 * ib + 4, q2[2 * ib + 1]);
    }
}

/* IQ2_XS and IQ2_S share the 16-value search; they differ in weights, sign coding and packing */
static void quantize_block_iq2_16(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                  bool is_xs, void * vy) {
    float       scales[QK_K / 16];
    float       max_scale = 0;
    uint16_t    q2[QK_K / 8] = { 0 };
    const float sumx2 = block_sumx2(xbl);
    /* IQ2_XS: sigma2 as IQ2_XXS; IQ2_S weighs the spread twice (upstream's choice) */
    const float sigma2 = (is_xs ? 1 : 2) * sumx2 / QK_K;

    block_iq2_xs * yxs = vy;
    block_iq2_s *  ys  = vy;
    memset(vy, 0, is_xs ? sizeof *yxs : sizeof *ys);

    for (int ib = 0; ib < QK_K / 16; ++ib) {
        const float *    xb = xbl + 16 * ib;
        struct iq2_group g  = { .n = 16 };
        uint8_t          signs[2];
        for (int i = 0; i < 16; ++i) {
            if (qwbl) {
                g.w[i] = qwbl[16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            } else {
                g.w[i] = 0.25f * sigma2 + xb[i] * xb[i];
            }
            g.waux[i] = sqrtf(g.w[i]);
        }
        for (int k = 0; k < 2; ++k) {
            signs[k] = ggmlx_iq_fold_signs(xb + 8 * k, g.w + 8 * k, g.xval + 8 * k, is_xs);
        }
        const float max = iq2_max(&g);
        if (!(max >= (is_xs ? IQ2_XXS_EPS : IQ2_S_EPS))) {
            scales[ib] = 0;
            continue;
        }
        iq2_search_max(s, &g, max);
        if (g.scale < 0) {
            g.scale = -g.scale;
            for (int k = 0; k < 2; ++k) {
                signs[k] = (uint8_t) (is_xs ? ~signs[k] & 127 : ~signs[k]);
            }
        }
        for (int k = 0; k < 2; ++k) {
            const int idx = iq2_entry_index(s, &g, k);
            const int i8  = 2 * ib + k;
            if (is_xs) {
                q2[i8] = (uint16_t) (idx | (signs[k] << 9));
            } else {
                ys->qs[i8] = (uint8_t) idx;
                ys->qh[i8 / 4] |= (uint8_t) ((idx >> 8) << (2 * (i8 % 4)));
                ys->qs[QK_K / 8 + i8] = signs[k];
            }
        }
        scales[ib] = g.scale;
        max_scale  = g.scale > max_scale ? g.scale : max_scale;
    }

    if (!(max_scale > 0)) {
        return;
    }
    const float d      = max_scale / 31;
    const float id     = 1 / d;
    uint8_t *   sc     = is_xs ? yxs->scales : ys->scales;
    const uint16_t dh  = ggmlx_fp32_to_fp16(is_xs ? d : d * IQ2_S_FUDGE);
    if (is_xs) {
        yxs->d = dh;
        for (int i = 0; i < QK_K / 8; ++i) {
            ggmlx_iq_put_u16((uint8_t *) yxs->qs + 2 * i, q2[i]);
        }
    } else {
        ys->d = dh;
    }
    for (int ib = 0; ib < QK_K / 16; ib += 2) {
        sc[ib / 2] = (uint8_t) (iq2_scale_code(id, scales[ib]) | (iq2_scale_code(id, scales[ib + 1]) << 4));
    }
}

typedef void (*iq2_block_fn)(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl, void * y);

static void block_xxs(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl, void * y) {
    quantize_block_iq2_xxs(s, xbl, qwbl, y);
}

static void block_xs(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl, void * y) {
    quantize_block_iq2_16(s, xbl, qwbl, true, y);
}

static void block_s(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl, void * y) {
    quantize_block_iq2_16(s, xbl, qwbl, false, y);
}

static size_t iq2_rows(const char * func, const char * name, enum ggmlx_iq_set set, bool needs_imatrix,
                       size_t block_size, iq2_block_fn fn, const float * src, void * dst, int64_t nrows,
                       int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_iq_check_rows(func, name, src, dst, nrows, n_per_row, imatrix, needs_imatrix)) {
        return 0;
    }
    const struct ggmlx_iq_search * s = ggmlx_iq_search_get(set, func);
    if (!s) {
        return 0;
    }
    const int64_t nb = n_per_row / QK_K;
    for (int64_t r = 0; r < nrows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            fn(s, src + r * n_per_row + i * QK_K, imatrix ? imatrix + i * QK_K : NULL,
               (char *) dst + (size_t) (r * nb + i) * block_size);
        }
    }
    return (size_t) (nrows * nb) * block_size;
}

size_t ggmlx_quantize_iq2_xxs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    return iq2_rows(__func__, "IQ2_XXS", GGMLX_IQ_SET_IQ2_XXS, true, sizeof(block_iq2_xxs), block_xxs, src, dst,
                    nrows, n_per_row, imatrix);
}

size_t ggmlx_quantize_iq2_xs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    return iq2_rows(__func__, "IQ2_XS", GGMLX_IQ_SET_IQ2_XS, true, sizeof(block_iq2_xs), block_xs, src, dst, nrows,
                    n_per_row, imatrix);
}

size_t ggmlx_quantize_iq2_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    return iq2_rows(__func__, "IQ2_S", GGMLX_IQ_SET_IQ2_S, false, sizeof(block_iq2_s), block_s, src, dst, nrows,
                    n_per_row, imatrix);
}

/* from_float_ref cannot report failure: on a refusal the row is left as zero blocks */
void ggmlx_quantize_row_iq2_s_ref(const float * restrict x, void * restrict y, int64_t k) {
    if (ggmlx_quantize_iq2_s(x, y, 1, k, NULL) == 0 && k > 0 && k % QK_K == 0 && y) {
        memset(y, 0, (size_t) (k / QK_K) * sizeof(block_iq2_s));
    }
}
