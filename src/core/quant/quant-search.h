/*
 * quant-search.h -- the scale searches shared by the quantizers that take an importance matrix
 * (and by the K-quants). Each one picks a block scale (and, for the asymmetric ones, a minimum)
 * together with the integer levels L that go with it, trying a few scales around the obvious
 * one and keeping the one with the least weighted squared error. The exact arithmetic (f32,
 * the order of the sums, the candidate scales) is upstream's, so the bytes written match.
 */
#ifndef GGMLX_QUANT_SEARCH_H
#define GGMLX_QUANT_SEARCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* below this largest magnitude a group counts as all zeros */
#define GGMLX_GROUP_MAX_EPS 1e-15f

/*
 * Round to nearest, ties to even, through the float adder: adding 1.5 * 2^23 leaves the integer
 * in the low mantissa bits. Valid for |x| <= 2^22 - 1, which every caller's scaled value is.
 */
static inline int ggmlx_nearest_int(float x) {
    float v = x + 12582912.0f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/*
 * Symmetric levels in [0, 2*nmax) (stored as L = l + nmax, l in [-nmax, nmax-1]) for n values.
 * The scale maps the signed value of largest magnitude to -nmax. rmse_type 0 returns that scale
 * as is; otherwise the weights are qw when given, else (1: x^2, 2: 1, 3: |x|, other: sqrt|x|),
 * the least-squares scale is refined over 18 nearby candidates, and a negative rmse_type stops
 * before the search and returns the mean of the least-squares and initial scales.
 * An all-zero group (max |x| < GGMLX_GROUP_MAX_EPS) gives L = 0 and scale 0.
 */
float ggmlx_make_qx_quants(int n, int nmax, const float * x, int8_t * L, int rmse_type, const float * qw);

/*
 * Asymmetric levels in [0, nmax]: x ~ scale * L - *the_min (the_min >= 0, the minimum is never
 * above 0). weights NULL means x^2. Tries nstep+1 scales (rmin + rdelta*is + nmax)/(max - min),
 * fits scale and minimum by weighted least squares for each, and keeps the one with the least
 * weighted error (|diff| if use_mad, else diff^2). Laux is scratch of n bytes.
 */
float ggmlx_make_qkx3_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L,
                             float * the_min, uint8_t * Laux, float rmin, float rdelta, int nstep,
                             bool use_mad);

/* ---- K-quant helpers ---- */

/*
 * Asymmetric levels in [0, nmax] with explicit weights (never NULL): like ggmlx_make_qkx3_quants,
 * but an all-equal group (max == min after the minimum is clamped to <= 0) is what counts as
 * empty. The reference K-quantizers (Q2_K, Q4_K, Q5_K) use this one.
 */
float ggmlx_make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L,
                             float * the_min, uint8_t * Laux, float rmin, float rdelta, int nstep,
                             bool use_mad);

/*
 * Symmetric levels for Q3_K's reference quantizer, L in [0, 2*nmax): the scale maps the signed
 * value of largest magnitude to -nmax; with do_rmse the levels are then improved one at a time
 * (weights x^2, at most 5 passes) while that raises (sum w x l)^2 / sum w l^2, and the
 * least-squares scale is returned.
 */
float ggmlx_make_q3_quants(int n, int nmax, const float * x, int8_t * L, bool do_rmse);

/*
 * Non-negative x (sub-block scales or minimums) to levels L in [0, nmax] with weights qw: the
 * scale nmax/max is tried against 8 nearby ones, then single levels are improved as in
 * ggmlx_make_q3_quants. Returns the least-squares scale (0 for an all-zero group).
 */
float ggmlx_make_qp_quants(int n, int nmax, const float * x, uint8_t * L, const float * qw);

#endif
