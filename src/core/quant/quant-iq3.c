/*
 * quant-iq3.c -- IQ3_XXS and IQ3_S quantization (upstream's D4-lattice algorithm).
 *
 * Per 32 values: weights (importance times sqrt(sigma2 + x^2), or x^2 without an importance
 * matrix), the signs folded out, then a scan over candidate scales; at each scale every 4
 * magnitudes round to levels 0..7 and, when that point is off the grid, the best point of its
 * neighbour list is taken. The scale with the best weighted fit wins; the per-group scales are
 * finally quantized to 4 bits against the block's largest.
 */
#include "quant-iq.h"

#include "ggml-impl.h"
#include "ggml-math.h"
#include "quant-iq-impl.h"

#include <string.h>

#define IQ3_GROUP     32
#define IQ3_KMAXQ     8
#define IQ3_XXS_EPS   1e-8f
#define IQ3_XXS_FUDGE 1.0125f /* upstream's empirical correction of the super-scale */
#define IQ3_S_FUDGE   1.033f

struct iq3_group_fit {
    float  scale;
    int8_t L[IQ3_GROUP];
    bool   on_grid[IQ3_GROUP / 4];
};

/* sum w*x*q and sum w*q^2 with q = 2l+1 */
static float iq3_fit(const float * xval, const float * w, const int8_t * L, float * sumq2_out) {
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < IQ3_GROUP; ++i) {
        const float q = (float) (2 * L[i] + 1);
        sumqx += w[i] * xval[i] * q;
        sumq2 += w[i] * q * q;
    }
    *sumq2_out = sumq2;
    return sumqx;
}

/* levels of the 4 magnitudes at inverse scale id, then the grid point for them */
static void iq3_round_entry(const struct ggmlx_iq_search * s, float id, float scale, const float * xval,
                            const float * waux, int8_t * L, bool * on_grid) {
    for (int i = 0; i < 4; ++i) {
        L[i] = (int8_t) ggmlx_iq_round_clamp(0.5f * (id * xval[i] - 1), 0, IQ3_KMAXQ - 1);
    }
    ggmlx_iq_grid_index(s, L, xval, waux, scale, on_grid);
}

/*
 * The scale scan of one group; `nscan` steps of 0.2 either side of 2*kmaxq-1 levels over the
 * maximum. Returns false for a group too small to quantize (fit->scale 0, levels 0).
 */
static bool iq3_search(const struct ggmlx_iq_search * s, const float * xval, const float * w, const float * waux,
                       int nscan, float eps, bool initially_on_grid, struct iq3_group_fit * fit) {
    float max = xval[0];
    for (int i = 1; i < IQ3_GROUP; ++i) {
        max = xval[i] > max ? xval[i] : max;
    }
    memset(fit->L, 0, sizeof fit->L);
    if (!(max >= eps) || max == 0) {
        fit->scale = 0;
        return false;
    }
    float best  = 0;
    fit->scale  = max / (2 * IQ3_KMAXQ - 1);
    for (int k = 0; k < IQ3_GROUP / 4; ++k) {
        fit->on_grid[k] = initially_on_grid;
    }
    for (int is = -nscan; is <= nscan; ++is) {
        const float id    = (2 * IQ3_KMAXQ - 1 + is * 0.2f) / max;
        const float scale = 1 / id;
        int8_t      Laux[IQ3_GROUP];
        bool        on_grid[IQ3_GROUP / 4];
        for (int k = 0; k < IQ3_GROUP / 4; ++k) {
            iq3_round_entry(s, id, scale, xval + 4 * k, waux + 4 * k, Laux + 4 * k, &on_grid[k]);
        }
        float       sumq2;
        const float sumqx = iq3_fit(xval, w, Laux, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            fit->scale = sumqx / sumq2;
            best       = fit->scale * sumqx;
            memcpy(fit->L, Laux, sizeof Laux);
            memcpy(fit->on_grid, on_grid, sizeof on_grid);
        }
    }
    return true;
}

/* re-rounds the chosen group(s) at the final scale and refits it; all: every entry, not only off-grid ones */
static void iq3_refine(const struct ggmlx_iq_search * s, const float * xval, const float * w, const float * waux,
                       bool all, struct iq3_group_fit * fit) {
    int n_off = 0;
    for (int k = 0; k < IQ3_GROUP / 4; ++k) {
        n_off += !fit->on_grid[k];
    }
    if (n_off == 0 || !(fit->scale > 0)) {
        return;
    }
    const float id = 1 / fit->scale;
    for (int k = 0; k < IQ3_GROUP / 4; ++k) {
        if (!all && fit->on_grid[k]) {
            continue;
        }
        iq3_round_entry(s, id, fit->scale, xval + 4 * k, waux + 4 * k, fit->L + 4 * k, NULL);
    }
    float       sumq2;
    const float sumqx = iq3_fit(xval, w, fit->L, &sumq2);
    if (sumq2 > 0) {
        fit->scale = sumqx / sumq2;
    }
}

static void iq3_weights(const float * xb, const float * qw, float sigma2, float * w, float * waux) {
    for (int i = 0; i < IQ3_GROUP; ++i) {
        w[i]    = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
        waux[i] = sqrtf(w[i]);
    }
}

static float block_sigma2(const float * x) {
    float sumx2 = 0;
    for (int i = 0; i < QK_K; ++i) {
        sumx2 += x[i] * x[i];
    }
    return 2 * sumx2 / QK_K;
}

/* the 4-bit code of a group scale against the super-scale d: scale ~ d*(2l+1) */
static int iq3_scale_code(float id, float scale) {
    return ggmlx_iq_round_clamp(0.5f * (id * scale - 1), 0, 15);
}

static void quantize_block_iq3_xxs(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                   block_iq3_xxs * y) {
    uint8_t  idx[QK_K / 4] = { 0 };
    uint32_t aux[QK_K / 32] = { 0 };
    float    scales[QK_K / 32];
    float    max_scale = 0;
    const float sigma2 = block_sigma2(xbl);

    for (int ib = 0; ib < QK_K / 32; ++ib) {
        const float * xb = xbl + IQ3_GROUP * ib;
        float         w[IQ3_GROUP], waux[IQ3_GROUP], xval[IQ3_GROUP];
        uint8_t       signs[4];
        iq3_weights(xb, qwbl ? qwbl + IQ3_GROUP * ib : NULL, sigma2, w, waux);
        for (int k = 0; k < 4; ++k) {
            signs[k] = ggmlx_iq_fold_signs(xb + 8 * k, w + 8 * k, xval + 8 * k, true);
        }
        struct iq3_group_fit fit;
        if (!iq3_search(s, xval, w, waux, 15, IQ3_XXS_EPS, true, &fit)) {
            scales[ib] = 0;
            continue;
        }
        iq3_refine(s, xval, w, waux, false, &fit);
        if (fit.scale < 0) {
            fit.scale = -fit.scale;
            for (int k = 0; k < 4; ++k) {
                signs[k] = (uint8_t) (~signs[k] & 127);
            }
        }
        for (int k = 0; k < IQ3_GROUP / 4; ++k) {
            const int g     = ggmlx_iq_grid_index(s, fit.L + 4 * k, xval + 4 * k, waux + 4 * k, fit.scale, NULL);
            idx[8 * ib + k] = (uint8_t) g;
        }
        aux[ib]    = signs[0] | ((uint32_t) signs[1] << 7) | ((uint32_t) signs[2] << 14) | ((uint32_t) signs[3] << 21);
        scales[ib] = fit.scale;
        max_scale  = fit.scale > max_scale ? fit.scale : max_scale;
    }

    memset(y, 0, sizeof *y);
    if (!(max_scale > 0)) {
        return;
    }
    const float d  = max_scale / 31;
    const float id = 1 / d;
    y->d           = ggmlx_fp32_to_fp16(d * IQ3_XXS_FUDGE);
    memcpy(y->qs, idx, sizeof idx);
    for (int ib = 0; ib < QK_K / 32; ++ib) {
        aux[ib] |= (uint32_t) iq3_scale_code(id, scales[ib]) << 28;
        ggmlx_iq_put_u32(y->qs + QK_K / 4 + 4 * ib, aux[ib]);
    }
}

static void quantize_block_iq3_s(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                 block_iq3_s * y) {
    float scales[QK_K / IQ3_GROUP];
    float max_scale = 0;
    const float sigma2 = block_sigma2(xbl);

    memset(y, 0, sizeof *y);
    for (int ib = 0; ib < QK_K / IQ3_GROUP; ++ib) {
        const float * xb = xbl + IQ3_GROUP * ib;
        float         w[IQ3_GROUP], waux[IQ3_GROUP], xval[IQ3_GROUP];
        uint8_t       signs[IQ3_GROUP / 8];
        iq3_weights(xb, qwbl ? qwbl + IQ3_GROUP * ib : NULL, sigma2, w, waux);
        for (int k = 0; k < IQ3_GROUP / 8; ++k) {
            signs[k] = ggmlx_iq_fold_signs(xb + 8 * k, w + 8 * k, xval + 8 * k, false);
        }
        struct iq3_group_fit fit;
        /* upstream starts IQ3_S off the grid, so a group no scan step improved is refit */
        if (!iq3_search(s, xval, w, waux, 9, 0.0f, false, &fit)) {
            scales[ib] = 0;
            continue;
        }
        iq3_refine(s, xval, w, waux, true, &fit);
        if (fit.scale < 0) {
            fit.scale = -fit.scale;
            for (int k = 0; k < IQ3_GROUP / 8; ++k) {
                signs[k] = (uint8_t) ~signs[k];
            }
        }
        for (int k = 0; k < IQ3_GROUP / 4; ++k) {
            const int g = ggmlx_iq_grid_index(s, fit.L + 4 * k, xval + 4 * k, waux + 4 * k, fit.scale, NULL);
            y->qs[8 * ib + k] = (uint8_t) g;
            y->qh[ib] |= (uint8_t) ((g >> 8) << k);
        }
        memcpy(y->signs + 4 * ib, signs, sizeof signs);
        scales[ib] = fit.scale;
        max_scale  = fit.scale > max_scale ? fit.scale : max_scale;
    }

    if (!(max_scale > 0)) {
        return;
    }
    const float d  = max_scale / 31;
    const float id = 1 / d;
    y->d           = ggmlx_fp32_to_fp16(d * IQ3_S_FUDGE);
    for (int ib = 0; ib < QK_K / IQ3_GROUP; ib += 2) {
        y->scales[ib / 2] = (uint8_t) (iq3_scale_code(id, scales[ib]) | (iq3_scale_code(id, scales[ib + 1]) << 4));
    }
}

size_t ggmlx_quantize_iq3_xxs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_iq_check_rows(__func__, "IQ3_XXS", src, dst, nrows, n_per_row, imatrix, false)) {
        return 0;
    }
    const struct ggmlx_iq_search * s = ggmlx_iq_search_get(GGMLX_IQ_SET_IQ3_XXS, __func__);
    if (!s) {
        return 0;
    }
    const int64_t   nb = n_per_row / QK_K;
    block_iq3_xxs * y  = dst;
    for (int64_t r = 0; r < nrows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            quantize_block_iq3_xxs(s, src + r * n_per_row + i * QK_K, imatrix ? imatrix + i * QK_K : NULL,
                                   y + r * nb + i);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq3_xxs);
}

size_t ggmlx_quantize_iq3_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_iq_check_rows(__func__, "IQ3_S", src, dst, nrows, n_per_row, imatrix, false)) {
        return 0;
    }
    const struct ggmlx_iq_search * s = ggmlx_iq_search_get(GGMLX_IQ_SET_IQ3_S, __func__);
    if (!s) {
        return 0;
    }
    const int64_t nb = n_per_row / QK_K;
    block_iq3_s * y  = dst;
    for (int64_t r = 0; r < nrows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            quantize_block_iq3_s(s, src + r * n_per_row + i * QK_K, imatrix ? imatrix + i * QK_K : NULL,
                                 y + r * nb + i);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq3_s);
}

/* from_float_ref cannot report failure: on a refusal the row is left as zero blocks */
void ggmlx_quantize_row_iq3_xxs_ref(const float * restrict x, void * restrict y, int64_t k) {
    if (ggmlx_quantize_iq3_xxs(x, y, 1, k, NULL) == 0 && k > 0 && k % QK_K == 0 && y) {
        memset(y, 0, (size_t) (k / QK_K) * sizeof(block_iq3_xxs));
    }
}

void ggmlx_quantize_row_iq3_s_ref(const float * restrict x, void * restrict y, int64_t k) {
    if (ggmlx_quantize_iq3_s(x, y, 1, k, NULL) == 0 && k > 0 && k % QK_K == 0 && y) {
        memset(y, 0, (size_t) (k / QK_K) * sizeof(block_iq3_s));
    }
}
