/*
 * quant-iq1.c -- IQ1_S and IQ1_M quantization (upstream's algorithm).
 *
 * With only three levels (-1, 0, 1, shifted by +-delta) the best split of a group into the
 * three levels can be found exactly: sort the values, and for every pair of cut points the
 * weighted least-squares scale and its score follow from prefix sums. The chosen levels are then
 * moved onto the codebook (a point off the grid takes the best of its neighbour list), the group
 * scales become 3-bit codes against the block's largest, and the delta's sign is kept per group
 * (IQ1_S) or per 8 values (IQ1_M).
 */
#include "quant-iq.h"

#include "ggml-impl.h"
#include "ggml-math.h"
#include "quant-iq-impl.h"

#include <float.h>
#include <string.h>

#define IQ1S_GROUP   32
#define IQ1M_GROUP   16
#define IQ1_S_EPS    1e-12f
#define IQ1_M_EPS    1e-7f
#define IQ1_S_FUDGE  1.125f  /* upstream's empirical corrections of the super-scales */
#define IQ1_M_FUDGE  1.1125f

/* level values with the delta added (shift +1) or subtracted (shift -1) */
static const float k_x_p[3] = { -1 + IQ1S_DELTA, IQ1S_DELTA, 1 + IQ1S_DELTA };
static const float k_x_m[3] = { -1 - IQ1S_DELTA, -IQ1S_DELTA, 1 - IQ1S_DELTA };

/* order[] = the indices of x sorted by value; stable (ties keep index order), n <= 32 */
static void sort_indices(const float * x, int n, int * order) {
    for (int i = 0; i < n; ++i) {
        int j = i;
        while (j > 0 && x[order[j - 1]] > x[i]) {
            order[j] = order[j - 1];
            --j;
        }
        order[j] = i;
    }
}

/*
 * The grid entry for 8 levels L of signed values x at a given scale with level values xx: L on
 * the grid, or the neighbour with the least sum w*(scale*xx[l] - x)^2 (its levels replace L).
 */
static int iq1_grid_index(const struct ggmlx_iq_search * s, int8_t * L, const float * x, const float * w,
                          float scale, const float * xx, bool * on_grid) {
    const int32_t m = s->map[ggmlx_iq_key(s, L)];
    *on_grid        = m >= 0;
    if (m >= 0) {
        return m;
    }
    const uint16_t * list = ggmlx_iq_neighbours(s, m);
    int              best = list[1];
    float            emin = FLT_MAX;
    for (int j = 1; j <= list[0]; ++j) {
        const int8_t * p = s->pos + (size_t) list[j] * 8;
        float          e = 0;
        for (int i = 0; i < 8; ++i) {
            const float diff = scale * xx[(p[i] - 1) / 2] - x[i];
            e += w[i] * diff * diff;
        }
        if (e < emin) {
            emin = e;
            best = list[j];
        }
    }
    ggmlx_iq_grid_levels(s, best, L);
    return best;
}

/* the refit scale of grid entries idx[] with level values xx_of(k), kept when positive */
static float iq1_refit(const struct ggmlx_iq_search * s, const float * x, const float * w, const int * idx,
                       int nentries, const float * const * xx, float scale) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < nentries; ++k) {
        int8_t L[8];
        ggmlx_iq_grid_levels(s, idx[k], L);
        for (int j = 0; j < 8; ++j) {
            const float q = xx[k][L[j]];
            sumqx += w[8 * k + j] * q * x[8 * k + j];
            sumq2 += w[8 * k + j] * q * q;
        }
    }
    return sumqx > 0 && sumq2 > 0 ? sumqx / sumq2 : scale;
}

static float block_sigma2(const float * x) {
    float sumx2 = 0;
    for (int i = 0; i < QK_K; ++i) {
        sumx2 += x[i] * x[i];
    }
    return 2 * sumx2 / QK_K;
}

static float group_absmax(const float * x, int n) {
    float max = fabsf(x[0]);
    for (int i = 1; i < n; ++i) {
        max = fabsf(x[i]) > max ? fabsf(x[i]) : max;
    }
    return max;
}

/* levels from the cut points along the sorted order: below i1 -> 0, below i2 -> 1, rest -> 2 */
static void levels_from_cuts(const int * order, int n, int i1, int i2, int8_t * L) {
    for (int j = 0; j < n; ++j) {
        L[order[j]] = (int8_t) (j < i1 ? 0 : j < i2 ? 1 : 2);
    }
}

/* ---- IQ1_S ---- */

static void quantize_block_iq1_s(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                 block_iq1_s * y) {
    float  scales[QK_K / IQ1S_GROUP];
    int    shifts[QK_K / IQ1S_GROUP];
    float  max_scale = 0;
    uint16_t qh[QK_K / IQ1S_GROUP] = { 0 };
    const float sigma2 = block_sigma2(xbl);

    memset(y, 0, sizeof *y);
    for (int ib = 0; ib < QK_K / IQ1S_GROUP; ++ib) {
        const float * xb = xbl + IQ1S_GROUP * ib;
        const float * qw = qwbl + IQ1S_GROUP * ib;
        float         w[IQ1S_GROUP];
        for (int i = 0; i < IQ1S_GROUP; ++i) {
            w[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
        }
        scales[ib] = 0;
        shifts[ib] = 1;
        if (!(group_absmax(xb, IQ1S_GROUP) >= IQ1_S_EPS)) {
            continue;
        }
        int   order[IQ1S_GROUP];
        float sumx[IQ1S_GROUP + 1], sumw[IQ1S_GROUP + 1];
        sort_indices(xb, IQ1S_GROUP, order);
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < IQ1S_GROUP; ++j) {
            sumx[j + 1] = sumx[j] + w[order[j]] * xb[order[j]];
            sumw[j + 1] = sumw[j] + w[order[j]];
        }
        /* exhaustive over the two cut points and the delta's sign */
        float best = -FLT_MAX, scale = 0;
        int   bi1 = -1, bi2 = -1, bshift = 0;
        for (int i1 = 0; i1 <= IQ1S_GROUP; ++i1) {
            for (int i2 = i1; i2 <= IQ1S_GROUP; ++i2) {
                const float sx[3] = { sumx[i1], sumx[i2] - sumx[i1], sumx[IQ1S_GROUP] - sumx[i2] };
                const float sw[3] = { sumw[i1], sumw[i2] - sumw[i1], sumw[IQ1S_GROUP] - sumw[i2] };
                for (int sh = 1; sh >= -1; sh -= 2) {
                    const float * xx    = sh == 1 ? k_x_p : k_x_m;
                    const float   sumqx = sx[0] * xx[0] + sx[1] * xx[1] + sx[2] * xx[2];
                    const float   sumq2 = sw[0] * xx[0] * xx[0] + sw[1] * xx[1] * xx[1] + sw[2] * xx[2] * xx[2];
                    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                        scale  = sumqx / sumq2;
                        best   = scale * sumqx;
                        bi1    = i1;
                        bi2    = i2;
                        bshift = sh;
                    }
                }
            }
        }
        if (bi1 < 0 || bshift == 0) {
            continue;
        }
        int8_t L[IQ1S_GROUP];
        levels_from_cuts(order, IQ1S_GROUP, bi1, bi2, L);
        if (scale < 0) {
            for (int j = 0; j < IQ1S_GROUP; ++j) {
                L[j] = (int8_t) (2 - L[j]);
            }
            scale  = -scale;
            bshift = -bshift;
        }
        const float * xx = bshift == 1 ? k_x_p : k_x_m;
        const float * xxs[IQ1S_GROUP / 8];
        int           idx[IQ1S_GROUP / 8];
        bool          all_on_grid = true;
        for (int k = 0; k < IQ1S_GROUP / 8; ++k) {
            bool on;
            idx[k] = iq1_grid_index(s, L + 8 * k, xb + 8 * k, w + 8 * k, scale, xx, &on);
            xxs[k] = xx;
            all_on_grid &= on;
        }
        if (!all_on_grid) {
            scale = iq1_refit(s, xb, w, idx, IQ1S_GROUP / 8, xxs, scale);
        }
        for (int k = 0; k < IQ1S_GROUP / 8; ++k) {
            y->qs[(IQ1S_GROUP / 8) * ib + k] = (uint8_t) idx[k];
            qh[ib] |= (uint16_t) ((idx[k] >> 8) << (3 * k));
        }
        scales[ib] = scale;
        shifts[ib] = bshift;
        max_scale  = scale > max_scale ? scale : max_scale;
    }

    if (max_scale > 0) {
        const float d  = max_scale / 15;
        const float id = 1 / d;
        y->d           = ggmlx_fp32_to_fp16(d * IQ1_S_FUDGE);
        for (int ib = 0; ib < QK_K / IQ1S_GROUP; ++ib) {
            int l = ggmlx_iq_round_clamp(0.5f * (id * scales[ib] - 1), 0, 7);
            if (shifts[ib] == -1) {
                l |= 8;
            }
            qh[ib] |= (uint16_t) (l << 12);
        }
    }
    for (int ib = 0; ib < QK_K / IQ1S_GROUP; ++ib) {
        ggmlx_iq_put_u16((uint8_t *) &y->qh[ib], qh[ib]);
    }
}

/* ---- IQ1_M ---- */

/*
 * shift k of an IQ1_M group of 16: bit 1 set = the first 8 values use -delta, bit 0 set = the
 * second 8 do; the block stores those as qh bits 0x08 and 0x80
 */
static const float * iq1m_xx(int k, int half) {
    const int minus = half == 0 ? (k >> 1) & 1 : k & 1;
    return minus ? k_x_m : k_x_p;
}

static const uint8_t k_iq1m_masks[4] = { 0x00, 0x80, 0x08, 0x88 };

static void iq1m_weights(const float * xb, const float * qw, float sigma2, float * w) {
    for (int i = 0; i < IQ1M_GROUP; ++i) {
        w[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
    }
}

static void quantize_block_iq1_m(const struct ggmlx_iq_search * s, const float * xbl, const float * qwbl,
                                 block_iq1_m * y) {
    float       scales[QK_K / IQ1M_GROUP];
    int         shifts[QK_K / IQ1M_GROUP];
    float       max_scale = 0;
    const float sigma2    = block_sigma2(xbl);

    memset(y, 0, sizeof *y);
    for (int ib = 0; ib < QK_K / IQ1M_GROUP; ++ib) {
        const float * xb = xbl + IQ1M_GROUP * ib;
        float         w[IQ1M_GROUP];
        iq1m_weights(xb, qwbl ? qwbl + IQ1M_GROUP * ib : NULL, sigma2, w);
        scales[ib] = 0;
        shifts[ib] = 0;
        if (!(group_absmax(xb, IQ1M_GROUP) >= IQ1_M_EPS)) {
            continue;
        }
        int order[IQ1M_GROUP];
        sort_indices(xb, IQ1M_GROUP, order);
        /* prefix sums along the sorted order, separately for the two halves */
        float sx[2][IQ1M_GROUP + 1], sw[2][IQ1M_GROUP + 1];
        sx[0][0] = sx[1][0] = sw[0][0] = sw[1][0] = 0;
        for (int j = 0; j < IQ1M_GROUP; ++j) {
            const int i = order[j], h = i >= IQ1M_GROUP / 2;
            for (int hh = 0; hh < 2; ++hh) {
                sx[hh][j + 1] = sx[hh][j] + (hh == h ? w[i] * xb[i] : 0.0f);
                sw[hh][j + 1] = sw[hh][j] + (hh == h ? w[i] : 0.0f);
            }
        }
        float best = -FLT_MAX, scale = 0;
        int   bi1 = -1, bi2 = -1, bk = -1;
        for (int i1 = 0; i1 <= IQ1M_GROUP; ++i1) {
            for (int i2 = i1; i2 <= IQ1M_GROUP; ++i2) {
                for (int k = 0; k < 4; ++k) {
                    float sumqx = 0, sumq2 = 0;
                    for (int h = 0; h < 2; ++h) {
                        const float * xx   = iq1m_xx(k, h);
                        const float   s0x = sx[h][i1], s1x = sx[h][i2] - sx[h][i1], s2x = sx[h][IQ1M_GROUP] - sx[h][i2];
                        const float   s0w = sw[h][i1], s1w = sw[h][i2] - sw[h][i1], s2w = sw[h][IQ1M_GROUP] - sw[h][i2];
                        sumqx += s0x * xx[0] + s1x * xx[1] + s2x * xx[2];
                        sumq2 += s0w * xx[0] * xx[0] + s1w * xx[1] * xx[1] + s2w * xx[2] * xx[2];
                    }
                    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                        scale = sumqx / sumq2;
                        best  = scale * sumqx;
                        bi1   = i1;
                        bi2   = i2;
                        bk    = k;
                    }
                }
            }
        }
        if (bi1 < 0 || bk < 0) {
            continue;
        }
        int8_t L[IQ1M_GROUP];
        levels_from_cuts(order, IQ1M_GROUP, bi1, bi2, L);
        if (scale < 0) {
            for (int j = 0; j < IQ1M_GROUP; ++j) {
                L[j] = (int8_t) (2 - L[j]);
            }
            scale = -scale;
            bk    = 3 - bk; /* both halves' delta signs flip */
        }
        const float * xxs[2] = { iq1m_xx(bk, 0), iq1m_xx(bk, 1) };
        int           idx[2];
        bool          all_on_grid = true;
        for (int k = 0; k < 2; ++k) {
            bool on;
            idx[k] = iq1_grid_index(s, L + 8 * k, xb + 8 * k, w + 8 * k, scale, xxs[k], &on);
            all_on_grid &= on;
        }
        if (!all_on_grid) {
            scale = iq1_refit(s, xb, w, idx, 2, xxs, scale);
        }
        y->qs[2 * ib + 0] = (uint8_t) idx[0];
        y->qs[2 * ib + 1] = (uint8_t) idx[1];
        y->qh[ib]         = (uint8_t) ((idx[0] >> 8) | ((idx[1] >> 8) << 4));
        scales[ib]        = scale;
        shifts[ib]        = bk;
        max_scale         = scale > max_scale ? scale : max_scale;
    }

    if (!(max_scale > 0)) {
        return;
    }
    /* 3-bit group scales against max/15, then the super-scale refit over the whole block */
    uint16_t sc[4] = { 0 };
    float    d     = max_scale / 15;
    const float id = 1 / d;
    float    sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < QK_K / IQ1M_GROUP; ++ib) {
        const int l = ggmlx_iq_round_clamp(0.5f * (id * scales[ib] - 1), 0, 7);
        sc[ib / 4] |= (uint16_t) (l << (3 * (ib % 4)));
        y->qh[ib] |= k_iq1m_masks[shifts[ib]];
        const float * xb = xbl + IQ1M_GROUP * ib;
        float         w[IQ1M_GROUP];
        iq1m_weights(xb, qwbl ? qwbl + IQ1M_GROUP * ib : NULL, sigma2, w);
        for (int k = 0; k < 2; ++k) {
            const float * xx = iq1m_xx(shifts[ib], k);
            int8_t        L[8];
            ggmlx_iq_grid_levels(s, y->qs[2 * ib + k] | (((y->qh[ib] >> (4 * k)) & 7) << 8), L);
            for (int j = 0; j < 8; ++j) {
                const float q = xx[L[j]] * (float) (2 * l + 1);
                sumqx += w[8 * k + j] * q * xb[8 * k + j];
                sumq2 += w[8 * k + j] * q * q;
            }
        }
    }
    if (sumq2 > 0) {
        d = sumqx / sumq2;
    }
    const uint16_t dh = ggmlx_fp32_to_fp16(d * IQ1_M_FUDGE);
    sc[0] |= (uint16_t) ((dh & 0x000f) << 12);
    sc[1] |= (uint16_t) ((dh & 0x00f0) << 8);
    sc[2] |= (uint16_t) ((dh & 0x0f00) << 4);
    sc[3] |= (uint16_t) (dh & 0xf000);
    for (int i = 0; i < 4; ++i) {
        ggmlx_iq_put_u16(y->scales + 2 * i, sc[i]);
    }
}

/* ---- whole rows ---- */

size_t ggmlx_quantize_iq1_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_iq_check_rows(__func__, "IQ1_S", src, dst, nrows, n_per_row, imatrix, true)) {
        return 0;
    }
    const struct ggmlx_iq_search * s = ggmlx_iq_search_get(GGMLX_IQ_SET_IQ1, __func__);
    if (!s) {
        return 0;
    }
    const int64_t nb = n_per_row / QK_K;
    block_iq1_s * y  = dst;
    for (int64_t r = 0; r < nrows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            quantize_block_iq1_s(s, src + r * n_per_row + i * QK_K, imatrix + i * QK_K, y + r * nb + i);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq1_s);
}

size_t ggmlx_quantize_iq1_m(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_iq_check_rows(__func__, "IQ1_M", src, dst, nrows, n_per_row, imatrix, false)) {
        return 0;
    }
    const struct ggmlx_iq_search * s = ggmlx_iq_search_get(GGMLX_IQ_SET_IQ1, __func__);
    if (!s) {
        return 0;
    }
    const int64_t nb = n_per_row / QK_K;
    block_iq1_m * y  = dst;
    for (int64_t r = 0; r < nrows; ++r) {
        for (int64_t i = 0; i < nb; ++i) {
            quantize_block_iq1_m(s, src + r * n_per_row + i * QK_K, imatrix ? imatrix + i * QK_K : NULL,
                                 y + r * nb + i);
        }
    }
    return (size_t) (nrows * nb) * sizeof(block_iq1_m);
}
