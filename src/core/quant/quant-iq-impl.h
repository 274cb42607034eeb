/*
 * quant-iq-impl.h -- pieces the codebook (IQ) quantizers share (quant-iq-common.c): rounding,
 * argument checks, sign folding and the grid-point search.
 */
#ifndef GGMLX_QUANT_IQ_IMPL_H
#define GGMLX_QUANT_IQ_IMPL_H

#include "quant-iq-search.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* round half to even (as upstream's nearest_int), then clamp; NaN lands on lo */
static inline int ggmlx_iq_round_clamp(float x, int lo, int hi) {
    if (!(x >= (float) lo)) {
        return lo;
    }
    if (x >= (float) hi) {
        return hi;
    }
    return (int) lrintf(x);
}

/* round half to even with no range limit other than int's (a scale index, checked after) */
static inline int ggmlx_iq_round(float x) {
    return ggmlx_iq_round_clamp(x, INT_MIN / 2, INT_MAX / 2);
}

static inline void ggmlx_iq_put_u16(uint8_t * p, uint16_t v) {
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}

static inline void ggmlx_iq_put_u32(uint8_t * p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}

/*
 * Checks a whole-rows call; false (with an error naming func) for a bad argument, or when the
 * format needs an importance matrix and got none.
 */
bool ggmlx_iq_check_rows(const char * func, const char * type_name, const float * src, const void * dst,
                         int64_t nrows, int64_t n_per_row, const float * imatrix, bool needs_imatrix);

/*
 * Folds the signs of 8 values out: xval = |x|, and the returned 8 bits mark the negatives. With
 * even_parity, an odd count of negatives is made even by keeping the element of least w*x^2
 * negative in xval (its bit cleared), so that 7 bits carry the signs; the result is then < 128.
 */
uint8_t ggmlx_iq_fold_signs(const float * x, const float * w, float * xval, bool even_parity);

/* the key of dim levels L */
static inline int ggmlx_iq_key(const struct ggmlx_iq_search * s, const int8_t * L) {
    int key = 0;
    for (int i = 0; i < s->dim; ++i) {
        key |= L[i] << (s->bits * i);
    }
    return key;
}

/*
 * The grid entry for levels L: L itself when it is on the grid (*on_grid true), otherwise the
 * entry of its neighbour list with the least sum w*(scale*(2l+1) - xval)^2, whose levels then
 * replace L. Always a valid index.
 */
int ggmlx_iq_grid_index(const struct ggmlx_iq_search * s, int8_t * L, const float * xval, const float * w,
                        float scale, bool * on_grid);

/* the levels (coordinate (2l+1) -> l) of grid entry g */
void ggmlx_iq_grid_levels(const struct ggmlx_iq_search * s, int g, int8_t * L);

/*
 * The scale-only fit K-quants use (upstream's make_qp_quants) for n <= 32 values: the scale s
 * that makes the levels round(x/s), at most nmax, fit x best in the weighted least-squares
 * sense, found by a small scan and a few coordinate-descent passes; 0 for an all-zero x.
 */
float ggmlx_iq_fit_scale(int n, int nmax, const float * x, const float * w);

#endif
