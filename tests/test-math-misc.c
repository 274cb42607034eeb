/*
 * test-math-misc.c -- the conversion, sort and generator rules of ggml-math-misc.h that the CPU
 * and CUDA kernels share: float -> I32 saturation at every edge, sort keys ordering every kind
 * of float (NaNs last, -0 equal to +0) and reversing for descending order, arange rounding as
 * two float operations, timestep embedding entries against a double reference.
 */
#include <criterion/criterion.h>

#include "ggml-math.h"

#include <float.h>
#include <math.h>

Test(f32_to_i32, truncates_and_saturates) {
    cr_assert_eq(ggmlx_f32_to_i32_sat(1.9999f), 1);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-1.5f), -1);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-0.0f), 0);
    cr_assert_eq(ggmlx_f32_to_i32_sat(2147483520.0f), 2147483520, "the largest float below 2^31 is exact");
    cr_assert_eq(ggmlx_f32_to_i32_sat(2147483648.0f), INT32_MAX);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-2147483648.0f), INT32_MIN);
    cr_assert_eq(ggmlx_f32_to_i32_sat(1e30f), INT32_MAX);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-1e30f), INT32_MIN);
    cr_assert_eq(ggmlx_f32_to_i32_sat(INFINITY), INT32_MAX);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-INFINITY), INT32_MIN);
    cr_assert_eq(ggmlx_f32_to_i32_sat(NAN), 0);
    cr_assert_eq(ggmlx_f32_to_i32_sat(-NAN), 0);
}

Test(sort_key, orders_every_kind_of_float) {
    /* ascending, -0 and +0 adjacent and equal, NaNs at the end */
    const float v[] = { -INFINITY, -FLT_MAX, -1.0f, -FLT_MIN, -1e-45f, -0.0f, 0.0f, 1e-45f, FLT_MIN, 1.0f,
                        1.0000001f, FLT_MAX, INFINITY };
    const int n = (int) (sizeof v / sizeof v[0]);
    for (int i = 1; i < n; i++) {
        const uint32_t a = ggmlx_sort_key(v[i - 1], 0), b = ggmlx_sort_key(v[i], 0);
        if (v[i - 1] == v[i]) {
            cr_assert_eq(a, b, "%g and %g must tie", (double) v[i - 1], (double) v[i]);
        } else {
            cr_assert_lt(a, b, "%g must sort before %g", (double) v[i - 1], (double) v[i]);
        }
        /* descending: the same pairs the other way round */
        const uint32_t ad = ggmlx_sort_key(v[i - 1], 1), bd = ggmlx_sort_key(v[i], 1);
        cr_assert(v[i - 1] == v[i] ? ad == bd : ad > bd);
    }
    const float nans[] = { NAN, -NAN, ggmlx_bits_f32(0x7f800001u), ggmlx_bits_f32(0xffc00123u) };
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(ggmlx_sort_key(nans[k], 0), 0xFFFFFFFFu, "every NaN sorts last ascending");
        cr_assert_eq(ggmlx_sort_key(nans[k], 1), 0u, "and first descending");
        cr_assert_gt(ggmlx_sort_key(nans[k], 0), ggmlx_sort_key(INFINITY, 0));
    }
}

Test(arange, rounds_the_product_then_the_sum) {
    const float start[] = { 0.0f, -3.0f, 2.0f, 1e7f };
    const float step[]  = { 1.0f, 0.5f, 0.3f, 0.1f };
    for (int k = 0; k < 4; k++) {
        for (int64_t i = 0; i < 5000; i += 7) {
            volatile float p = step[k] * (float) i; /* rounded on its own, as upstream's float code */
            const float want = start[k] + p;
            cr_assert_eq(ggmlx_arange_f32(start[k], step[k], i), want, "start %g step %g i %lld", (double) start[k],
                         (double) step[k], (long long) i);
        }
    }
}

Test(timestep_embedding, entries_match_a_double_reference) {
    const int64_t dims[] = { 1, 2, 7, 32, 33 };
    const float   ts[]   = { 0.0f, 1.0f, 17.5f, 999.0f };
    const double  lmax   = log(10000.0);
    for (int d = 0; d < 5; d++) {
        const int64_t dim = dims[d], half = dim / 2;
        for (int t = 0; t < 4; t++) {
            for (int64_t i = 0; i < dim; i++) {
                double want = 0.0;
                if (i < half) {
                    want = cos((double) ts[t] * pow(10000.0, -(double) i / (double) half));
                } else if (i < 2 * half) {
                    want = sin((double) ts[t] * pow(10000.0, -(double) (i - half) / (double) half));
                }
                const float got = ggmlx_timestep_embedding_f32(ts[t], i, dim, lmax);
                cr_assert(fabs((double) got - want) <= 1e-6 * (1.0 + fabs((double) ts[t]) * 1e-3),
                          "dim %lld t %g i %lld: got %.9g want %.9g", (long long) dim, (double) ts[t], (long long) i,
                          (double) got, want);
            }
        }
    }
    cr_assert_eq(ggmlx_timestep_embedding_f32(5.0f, 32, 33, lmax), 0.0f, "the odd dim's last entry is 0");
    cr_assert_eq(ggmlx_timestep_embedding_f32(5.0f, 0, 1, lmax), 0.0f, "dim 1 has no pair at all");
}
