/*
 * quant-iq-common.c -- what the codebook (IQ) quantizers share (quant-iq-impl.h).
 */
#include "quant-iq-impl.h"

#include "ggml-impl.h"
#include "quant-blocks.h"

#include <float.h>
#include <inttypes.h>

bool ggmlx_iq_check_rows(const char * func, const char * type_name, const float * src, const void * dst,
                         int64_t nrows, int64_t n_per_row, const float * imatrix, bool needs_imatrix) {
    if (nrows < 0 || n_per_row < 0) {
        ggmlx_error(func, "%s: negative row count or length (%" PRId64 " rows of %" PRId64 ")", type_name, nrows,
                    n_per_row);
        return false;
    }
    if (n_per_row % QK_K != 0) {
        ggmlx_error(func, "%s: row length %" PRId64 " is not a multiple of %d", type_name, n_per_row, QK_K);
        return false;
    }
    if (nrows > 0 && n_per_row > 0 && (!src || !dst)) {
        ggmlx_error(func, "%s: src or dst is NULL", type_name);
        return false;
    }
    if (needs_imatrix && !imatrix) {
        ggmlx_error(func, "%s needs an importance matrix (quant_weights, n_per_row floats); got NULL", type_name);
        return false;
    }
    return true;
}

uint8_t ggmlx_iq_fold_signs(const float * x, const float * w, float * xval, bool even_parity) {
    uint8_t signs = 0;
    int     nneg  = 0;
    for (int i = 0; i < 8; ++i) {
        if (x[i] >= 0) {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            signs |= (uint8_t) (1u << i);
            ++nneg;
        }
    }
    if (even_parity && (nneg & 1)) {
        /* the element that costs least to get wrong keeps its sign in the magnitude */
        int   imin = 0;
        float emin = w[0] * x[0] * x[0];
        for (int i = 1; i < 8; ++i) {
            const float e = w[i] * x[i] * x[i];
            if (e < emin) {
                emin = e;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        signs ^= (uint8_t) (1u << imin);
    }
    return even_parity ? (uint8_t) (signs & 127) : signs;
}

void ggmlx_iq_grid_levels(const struct ggmlx_iq_search * s, int g, int8_t * L) {
    const int8_t * p = s->pos + (size_t) g * s->dim;
    for (int i = 0; i < s->dim; ++i) {
        L[i] = (int8_t) ((p[i] - 1) / 2);
    }
}

int ggmlx_iq_grid_index(const struct ggmlx_iq_search * s, int8_t * L, const float * xval, const float * w,
                        float scale, bool * on_grid) {
    const int32_t m = s->map[ggmlx_iq_key(s, L)];
    if (m >= 0) {
        if (on_grid) {
            *on_grid = true;
        }
        return m;
    }
    if (on_grid) {
        *on_grid = false;
    }
    const uint16_t * list = ggmlx_iq_neighbours(s, m);
    int              best = list[1];
    float            emin = FLT_MAX;
    for (int j = 1; j <= list[0]; ++j) {
        const int8_t * p = s->pos + (size_t) list[j] * s->dim;
        float          e = 0;
        for (int i = 0; i < s->dim; ++i) {
            const float diff = scale * p[i] - xval[i];
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

float ggmlx_iq_fit_scale(int n, int nmax, const float * x, const float * w) {
    float max = 0;
    for (int i = 0; i < n; ++i) {
        max = x[i] > max ? x[i] : max;
    }
    if (max < 1e-15f || n > 32) {
        return 0.0f;
    }
    /* a value of x may be negative (a sign kept for parity): its level may then be too */
    int   L[32];
    float best_iscale = nmax / max;
    float best_err    = FLT_MAX;
    for (int is = -4; is <= 4; ++is) {
        const float iscale = (nmax + 0.1f * is) / max;
        const float scale  = 1 / iscale;
        float       err    = 0;
        for (int i = 0; i < n; ++i) {
            const int   l    = ggmlx_iq_round_clamp(iscale * x[i], -nmax, nmax);
            const float diff = x[i] - scale * l;
            err += w[i] * diff * diff;
        }
        if (err < best_err) {
            best_err    = err;
            best_iscale = iscale;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = ggmlx_iq_round_clamp(best_iscale * x[i], -nmax, nmax);
        sumlx += w[i] * x[i] * L[i];
        suml2 += w[i] * L[i] * L[i];
    }
    /* move single levels while that raises sumlx^2/suml2 (the fit's explained energy) */
    for (int pass = 0; pass < 5; ++pass) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            float slx = sumlx - w[i] * x[i] * L[i];
            float sl2 = suml2 - w[i] * L[i] * L[i];
            if (slx > 0 && sl2 > 0) {
                const int l = ggmlx_iq_round_clamp(x[i] * sl2 / slx, -nmax, nmax);
                if (l != L[i]) {
                    slx += w[i] * x[i] * l;
                    sl2 += w[i] * l * l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i]  = l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++changed;
                    }
                }
            }
        }
        if (!changed) {
            break;
        }
    }
    return suml2 > 0 ? sumlx / suml2 : 0.0f;
}
