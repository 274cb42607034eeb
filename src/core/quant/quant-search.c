/*
 * quant-search.c -- scale searches for the quantizers (quant-search.h).
 *
 * The float expressions keep upstream's association order, (w * x) * l and so on: the searches
 * compare sums that differ in the last bits, so a regrouped product could pick another scale
 * and change the bytes written. For the same reason nothing may fuse a * b + c into one FMA
 * rounding: the project builds as ISO C11, where GCC's default is -ffp-contract=off.
 */
#include "quant-search.h"

#include <math.h>

/* ---- used by the legacy formats (Q4_0, Q4_1, Q5_0, Q5_1 with an importance matrix) ---------- */

static inline int clamp_int(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

static inline float qx_weight(const float * qw, int rmse_type, const float * x, int i) {
    if (qw != NULL) {
        return qw[i];
    }
    switch (rmse_type) {
    case 1: return x[i] * x[i];
    case 2: return 1.0f;
    case 3: return fabsf(x[i]);
    default: return sqrtf(fabsf(x[i]));
    }
}

float ggmlx_make_qx_quants(int n, int nmax, const float * x, int8_t * L, int rmse_type, const float * qw) {
    float amax = 0.0f;
    float max  = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max  = x[i];
        }
    }
    if (amax < GGMLX_GROUP_MAX_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }

    float iscale = (float) -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; i++) {
            L[i] = (int8_t) (nmax + clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1));
        }
        return 1.0f / iscale;
    }
    const bool stop_early = rmse_type < 0;
    if (stop_early) {
        rmse_type = -rmse_type;
    }

    float sumlx = 0.0f;
    float suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t) (l + nmax);
        const float w = qx_weight(qw, rmse_type, x, i);
        sumlx += w * x[i] * (float) l;
        suml2 += w * (float) l * (float) l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    if (stop_early) {
        return suml2 > 0.0f ? 0.5f * (scale + 1.0f / iscale) : 1.0f / iscale;
    }

    float best = scale * sumlx;
    for (int step = -9; step <= 9; step++) {
        if (step == 0) {
            continue;
        }
        iscale = -((float) nmax + 0.1f * (float) step) / max;
        sumlx = 0.0f;
        suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = qx_weight(qw, rmse_type, x, i);
            sumlx += w * x[i] * (float) l;
            suml2 += w * (float) l * (float) l;
        }
        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                L[i] = (int8_t) (nmax + clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1));
            }
            scale = sumlx / suml2;
            best  = scale * sumlx;
        }
    }
    return scale;
}

static inline float qkx3_weight(const float * weights, const float * x, int i) {
    return weights != NULL ? weights[i] : x[i] * x[i];
}

static inline float qkx3_error(float diff, bool use_mad) {
    return use_mad ? fabsf(diff) : diff * diff;
}

float ggmlx_make_qkx3_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L,
                             float * the_min, uint8_t * Laux, float rmin, float rdelta, int nstep,
                             bool use_mad) {
    float min   = x[0];
    float max   = x[0];
    float sum_w = qkx3_weight(weights, x, 0);
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) {
            min = x[i];
        }
        if (x[i] > max) {
            max = x[i];
        }
        const float w = qkx3_weight(weights, x, i);
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0.0f) {
        min = 0.0f;
    }
    if (max <= min) {
        memset(L, 0, (size_t) n);
        *the_min = -min;
        return 0.0f;
    }

    float iscale = (float) nmax / (max - min);
    float scale  = 1.0f / iscale;
    float best   = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t) clamp_int(ggmlx_nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * (float) L[i] + min - x[i];
        best += qkx3_weight(weights, x, i) * qkx3_error(diff, use_mad);
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }

    for (int step = 0; step <= nstep; step++) {
        iscale = (rmin + rdelta * (float) step + (float) nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = clamp_int(ggmlx_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t) l;
            const float w = qkx3_weight(weights, x, i);
            sum_l  += w * (float) l;
            sum_l2 += w * (float) l * (float) l;
            sum_xl += w * (float) l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min   = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min   = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * (float) Laux[i] + this_min - x[i];
                err += qkx3_weight(weights, x, i) * qkx3_error(diff, use_mad);
            }
            if (err < best) {
                memcpy(L, Laux, (size_t) n);
                best  = err;
                scale = this_scale;
                min   = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* ---- K-quant helpers ---- */

/*
 * The sums below keep upstream's grouping too: (w * x) * l, (w * l) * l, (w * l) * x. A level L
 * read back from a uint8_t array goes into the sums as the byte it was stored as, as upstream's.
 */

float ggmlx_make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L,
                             float * the_min, uint8_t * Laux, float rmin, float rdelta, int nstep,
                             bool use_mad) {
    float min   = x[0];
    float max   = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) {
            min = x[i];
        }
        if (x[i] > max) {
            max = x[i];
        }
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0.0f) {
        min = 0.0f;
    }
    if (max == min) {
        memset(L, 0, (size_t) n);
        *the_min = -min;
        return 0.0f;
    }

    float iscale = (float) nmax / (max - min);
    float scale  = 1.0f / iscale;
    float best   = 0.0f;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t) clamp_int(ggmlx_nearest_int(iscale * (x[i] - min)), 0, nmax);
        const float diff = scale * (float) L[i] + min - x[i];
        best += weights[i] * qkx3_error(diff, use_mad);
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }

    for (int step = 0; step <= nstep; step++) {
        iscale = (rmin + rdelta * (float) step + (float) nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = clamp_int(ggmlx_nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t) l;
            const float w = weights[i];
            sum_l  += w * (float) l;
            sum_l2 += w * (float) l * (float) l;
            sum_xl += w * (float) l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0.0f) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min   = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0.0f) {
                this_min   = 0.0f;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0.0f;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * (float) Laux[i] + this_min - x[i];
                err += weights[i] * qkx3_error(diff, use_mad);
            }
            if (err < best) {
                memcpy(L, Laux, (size_t) n);
                best  = err;
                scale = this_scale;
                min   = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

float ggmlx_make_q3_quants(int n, int nmax, const float * x, int8_t * L, bool do_rmse) {
    float amax = 0.0f;
    float max  = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max  = x[i];
        }
    }
    if (amax < GGMLX_GROUP_MAX_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }

    const float iscale = (float) -nmax / max;
    if (!do_rmse) {
        for (int i = 0; i < n; i++) {
            L[i] = (int8_t) (nmax + clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1));
        }
        return 1.0f / iscale;
    }

    /* signed levels while refining; shifted by nmax at the end */
    float sumlx = 0.0f;
    float suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = clamp_int(ggmlx_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t) l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float) l;
        suml2 += w * (float) l * (float) l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * (float) L[i];
            if (slx > 0.0f) {
                float sl2 = suml2 - w * (float) L[i] * (float) L[i];
                const int new_l = clamp_int(ggmlx_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float) new_l;
                    sl2 += w * (float) new_l * (float) new_l;
                    if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i]  = (int8_t) new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (changed == 0) {
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        L[i] = (int8_t) (L[i] + nmax);
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static inline int min_int(int a, int b) {
    return a < b ? a : b;
}

float ggmlx_make_qp_quants(int n, int nmax, const float * x, uint8_t * L, const float * qw) {
    float max = 0.0f;
    for (int i = 0; i < n; i++) {
        max = max > x[i] ? max : x[i];
    }
    if (max < GGMLX_GROUP_MAX_EPS) {
        memset(L, 0, (size_t) n);
        return 0.0f;
    }

    /* the first levels are not clamped (x <= max keeps them <= nmax); the stored byte is used */
    float iscale = (float) nmax / max;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t) ggmlx_nearest_int(iscale * x[i]);
    }
    const float scale = 1.0f / iscale;
    float best = 0.0f;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * (float) L[i];
        best += qw[i] * diff * diff;
    }
    for (int step = -4; step <= 4; step++) {
        if (step == 0) {
            continue;
        }
        const float iscale_step = (0.1f * (float) step + (float) nmax) / max;
        const float scale_step  = 1.0f / iscale_step;
        float err = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = min_int(nmax, ggmlx_nearest_int(iscale_step * x[i]));
            const float diff = x[i] - scale_step * (float) l;
            err += qw[i] * diff * diff;
        }
        if (err < best) {
            best   = err;
            iscale = iscale_step;
        }
    }

    float sumlx = 0.0f;
    float suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = min_int(nmax, ggmlx_nearest_int(iscale * x[i]));
        L[i] = (uint8_t) l;
        sumlx += qw[i] * x[i] * (float) l;
        suml2 += qw[i] * (float) l * (float) l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = qw[i];
            float slx = sumlx - w * x[i] * (float) L[i];
            float sl2 = suml2 - w * (float) L[i] * (float) L[i];
            if (slx > 0.0f && sl2 > 0.0f) {
                const int new_l = min_int(nmax, ggmlx_nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * (float) new_l;
                    sl2 += w * (float) new_l * (float) new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i]  = (uint8_t) new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (changed == 0) {
            break;
        }
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}
