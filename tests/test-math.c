/*
 * test-math.c -- the shared per-element math (ggml-math.h): fp16 and bf16 conversions checked
 * exhaustively against references built from the format definitions (not from the code under
 * test), round-to-nearest-even at every midpoint, NaN/inf handling, the public conversion entry
 * points agreeing with the shared ones, and each activation against a double reference.
 */
#include <criterion/criterion.h>

#include "test-util.h"

#include <float.h>

/* ---- references from the format definitions ------------------------------------------------ */

/* value of a binary16 pattern, from sign, exponent and mantissa (NaN for NaN patterns) */
static double half_value(uint16_t h) {
    const int sign = (h >> 15) & 1;
    const int e    = (h >> 10) & 0x1f;
    const int m    = h & 0x3ff;
    double v;
    if (e == 0x1f) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp((double) m, -24);
    } else {
        v = ldexp((double) (1024 + m), e - 25);
    }
    return sign ? -v : v;
}

static double bf16_value(uint16_t b) {
    const int sign = (b >> 15) & 1;
    const int e    = (b >> 7) & 0xff;
    const int m    = b & 0x7f;
    double v;
    if (e == 0xff) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp((double) m, -133);
    } else {
        v = ldexp((double) (128 + m), e - 134);
    }
    return sign ? -v : v;
}

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- fp16 ---------------------------------------------------------------------------------- */

Test(fp16, to_fp32_is_exact_for_every_pattern) {
    for (uint32_t h = 0; h < 65536; h++) {
        const double want = half_value((uint16_t) h);
        const float  got  = ggmlx_fp16_to_fp32((uint16_t) h);
        if (isnan(want)) {
            cr_assert(isnan(got), "pattern 0x%04x must be NaN", h);
            cr_assert_eq(signbit(got) != 0, (h & 0x8000) != 0, "NaN 0x%04x keeps its sign", h);
        } else {
            cr_assert_eq((double) got, want, "pattern 0x%04x: got %.9g want %.9g", h, (double) got, want);
            cr_assert_eq(signbit(got) != 0, (h & 0x8000) != 0, "pattern 0x%04x sign", h);
        }
    }
}

Test(fp16, round_trip_of_every_pattern) {
    for (uint32_t h = 0; h < 65536; h++) {
        const uint16_t back = ggmlx_fp32_to_fp16(ggmlx_fp16_to_fp32((uint16_t) h));
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
            /* NaN: stays a NaN of the same sign (payloads need not survive) */
            cr_assert((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0, "NaN 0x%04x came back as 0x%04x", h, back);
            cr_assert_eq(back & 0x8000, h & 0x8000);
        } else {
            cr_assert_eq(back, h, "0x%04x came back as 0x%04x", h, back);
        }
    }
}

/*
 * Between each pair of neighbouring finite halves, the exact midpoint rounds to the one with an
 * even mantissa, and the floats just below and above it round down and up.
 */
Test(fp16, rounds_to_nearest_even_at_every_midpoint) {
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const uint16_t up = (uint16_t) (h + 1); /* 0x7c00 (inf) above the largest finite half */
        const double lo = half_value((uint16_t) h);
        const double hi = up == 0x7c00 ? 65536.0 : half_value(up); /* where the next binade would start */
        const float  mid = (float) ((lo + hi) / 2); /* exact: needs 12 significant bits */
        cr_assert_eq((double) mid, (lo + hi) / 2);
        const uint16_t even = (h & 1) ? up : (uint16_t) h;
        for (int s = 0; s < 2; s++) {
            const uint16_t sign = s ? 0x8000 : 0;
            const float m = s ? -mid : mid;
            cr_assert_eq(ggmlx_fp32_to_fp16(m), (uint16_t) (even | sign), "midpoint above 0x%04x", h);
            const float below = nextafterf(m, 0.0f);
            const float above = nextafterf(m, s ? -INFINITY : INFINITY);
            cr_assert_eq(ggmlx_fp32_to_fp16(below), (uint16_t) (h | sign), "just below the midpoint above 0x%04x", h);
            cr_assert_eq(ggmlx_fp32_to_fp16(above), (uint16_t) (up | sign), "just above the midpoint above 0x%04x", h);
        }
    }
}

Test(fp16, overflow_underflow_inf_nan) {
    cr_assert_eq(ggmlx_fp32_to_fp16(65504.0f), 0x7bff);
    cr_assert_eq(ggmlx_fp32_to_fp16(65519.99f), 0x7bff);
    cr_assert_eq(ggmlx_fp32_to_fp16(65520.0f), 0x7c00);
    cr_assert_eq(ggmlx_fp32_to_fp16(1e10f), 0x7c00);
    cr_assert_eq(ggmlx_fp32_to_fp16(-1e10f), 0xfc00);
    cr_assert_eq(ggmlx_fp32_to_fp16(FLT_MAX), 0x7c00);
    cr_assert_eq(ggmlx_fp32_to_fp16(INFINITY), 0x7c00);
    cr_assert_eq(ggmlx_fp32_to_fp16(-INFINITY), 0xfc00);
    cr_assert_eq(ggmlx_fp32_to_fp16(0.0f), 0x0000);
    cr_assert_eq(ggmlx_fp32_to_fp16(-0.0f), 0x8000);
    /* 2^-25 is the midpoint between 0 and the smallest subnormal: ties to even (zero) */
    cr_assert_eq(ggmlx_fp32_to_fp16(ldexpf(1.0f, -25)), 0x0000);
    cr_assert_eq(ggmlx_fp32_to_fp16(nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    cr_assert_eq(ggmlx_fp32_to_fp16(ldexpf(1.0f, -30)), 0x0000);
    cr_assert_eq(ggmlx_fp32_to_fp16(-FLT_MIN), 0x8000);
    const float nans[] = { NAN, -NAN, bits_to_float(0x7f800001u), bits_to_float(0xffc00000u), bits_to_float(0x7fbfffffu) };
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        const uint16_t h = ggmlx_fp32_to_fp16(nans[i]);
        cr_assert((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0, "NaN %zu became 0x%04x (not a NaN)", i, h);
        cr_assert_eq((h & 0x8000) != 0, signbit(nans[i]) != 0);
    }
}

/* a float rounds to the nearest half: check by distance against the two neighbours */
Test(fp16, random_floats_round_to_nearest) {
    struct tu_rng rng = tu_rng_new(1);
    for (int i = 0; i < 200000; i++) {
        /* exponents across the half range and beyond */
        const float f = ldexpf(tu_uniform(&rng, -2.0f, 2.0f), (int) (tu_next(&rng) % 44) - 28);
        const uint16_t h = ggmlx_fp32_to_fp16(f);
        const double v = half_value(h);
        if (isinf(v)) {
            cr_assert_geq(fabs((double) f), 65520.0, "%.9g overflowed", (double) f);
            continue;
        }
        /* no other half is strictly closer */
        const uint16_t mag = h & 0x7fff;
        const double err = fabs(v - (double) f);
        if (mag < 0x7bff) {
            cr_assert_leq(err, fabs(half_value((uint16_t) ((h & 0x8000) | (mag + 1))) - (double) f), "%.9g", (double) f);
        }
        if (mag > 0) {
            cr_assert_leq(err, fabs(half_value((uint16_t) ((h & 0x8000) | (mag - 1))) - (double) f), "%.9g", (double) f);
        }
    }
}

/* ---- bf16 ---------------------------------------------------------------------------------- */

Test(bf16, to_fp32_is_exact_for_every_pattern) {
    for (uint32_t b = 0; b < 65536; b++) {
        const double want = bf16_value((uint16_t) b);
        const float  got  = ggmlx_bf16_to_fp32((uint16_t) b);
        if (isnan(want)) {
            cr_assert(isnan(got), "pattern 0x%04x must be NaN", b);
        } else {
            cr_assert_eq((double) got, want, "pattern 0x%04x", b);
        }
    }
}

Test(bf16, round_trip_and_midpoints_of_every_pattern) {
    for (uint32_t b = 0; b < 65536; b++) {
        const uint32_t e = (b >> 7) & 0xff;
        const uint16_t back = ggmlx_fp32_to_bf16(ggmlx_bf16_to_fp32((uint16_t) b));
        if (e == 0xff && (b & 0x7f)) {
            cr_assert((back & 0x7f80) == 0x7f80 && (back & 0x7f) != 0, "NaN 0x%04x came back as 0x%04x", b, back);
            continue;
        }
        cr_assert_eq(back, b, "0x%04x came back as 0x%04x", b, back);
        if (e == 0xff || (b & 0x7fff) == 0x7f7f) {
            continue; /* inf; the largest finite value's upper midpoint is checked below */
        }
        /* the exact midpoint to the next pattern away from zero, and its neighbours */
        const uint32_t mid_bits = (b << 16) | 0x8000u;
        const uint16_t up  = (uint16_t) (b + 1);
        const uint16_t even = (b & 1) ? up : (uint16_t) b;
        const float mid = bits_to_float(mid_bits);
        cr_assert_eq((double) mid, (bf16_value((uint16_t) b) + bf16_value(up)) / 2, "0x%04x", b);
        cr_assert_eq(ggmlx_fp32_to_bf16(mid), even, "midpoint above 0x%04x", b);
        cr_assert_eq(ggmlx_fp32_to_bf16(bits_to_float(mid_bits - 1)), (uint16_t) b, "below midpoint of 0x%04x", b);
        cr_assert_eq(ggmlx_fp32_to_bf16(bits_to_float(mid_bits + 1)), up, "above midpoint of 0x%04x", b);
    }
}

Test(bf16, overflow_inf_nan) {
    /* the midpoint above the largest finite bf16 rounds to even, which is infinity */
    cr_assert_eq(ggmlx_fp32_to_bf16(bits_to_float(0x7f7f8000u)), 0x7f80);
    cr_assert_eq(ggmlx_fp32_to_bf16(bits_to_float(0x7f7f7fffu)), 0x7f7f);
    cr_assert_eq(ggmlx_fp32_to_bf16(FLT_MAX), 0x7f80);
    cr_assert_eq(ggmlx_fp32_to_bf16(INFINITY), 0x7f80);
    cr_assert_eq(ggmlx_fp32_to_bf16(-INFINITY), 0xff80);
    cr_assert_eq(ggmlx_fp32_to_bf16(-0.0f), 0x8000);
    const uint32_t nans[] = { 0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu };
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        const uint16_t b = ggmlx_fp32_to_bf16(bits_to_float(nans[i]));
        cr_assert((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0, "NaN 0x%08x became 0x%04x (not a NaN)", nans[i], b);
        cr_assert_eq(b & 0x8000, (nans[i] >> 16) & 0x8000);
    }
}

/* ---- the public entry points use the same conversions -------------------------------------- */

Test(conversions, public_functions_agree_with_shared_math) {
    struct tu_rng rng = tu_rng_new(2);
    for (uint32_t h = 0; h < 65536; h++) {
        const float a = ggml_fp16_to_fp32((ggml_fp16_t) h), b = ggmlx_fp16_to_fp32((uint16_t) h);
        cr_assert(float_to_bits(a) == float_to_bits(b) || (isnan(a) && isnan(b)), "fp16 0x%04x", h);
        ggml_bf16_t bb = { (uint16_t) h };
        const float c = ggml_bf16_to_fp32(bb), d = ggmlx_bf16_to_fp32((uint16_t) h);
        cr_assert(float_to_bits(c) == float_to_bits(d) || (isnan(c) && isnan(d)), "bf16 0x%04x", h);
    }
    for (int i = 0; i < 100000; i++) {
        const float f = bits_to_float((uint32_t) tu_next(&rng));
        if (isnan(f)) {
            /* any NaN encoding will do */
            cr_assert(isnan(ggml_fp16_to_fp32(ggml_fp32_to_fp16(f))), "0x%08x", float_to_bits(f));
            cr_assert(isnan(ggml_bf16_to_fp32(ggml_fp32_to_bf16(f))), "0x%08x", float_to_bits(f));
            continue;
        }
        cr_assert_eq(ggml_fp32_to_fp16(f), ggmlx_fp32_to_fp16(f), "0x%08x", float_to_bits(f));
        cr_assert_eq(ggml_fp32_to_bf16(f).bits, ggmlx_fp32_to_bf16(f), "0x%08x", float_to_bits(f));
    }
    /* the row converters too */
    float in[37];
    uint16_t h[37], b[37];
    float out[37];
    for (int i = 0; i < 37; i++) {
        in[i] = tu_uniform(&rng, -1000.0f, 1000.0f);
    }
    ggml_fp32_to_fp16_row(in, h, 37);
    ggml_fp32_to_bf16_row(in, (ggml_bf16_t *) b, 37);
    for (int i = 0; i < 37; i++) {
        cr_assert_eq(h[i], ggmlx_fp32_to_fp16(in[i]));
        cr_assert_eq(b[i], ggmlx_fp32_to_bf16(in[i]));
    }
    ggml_fp16_to_fp32_row(h, out, 37);
    for (int i = 0; i < 37; i++) {
        cr_assert_eq(out[i], ggmlx_fp16_to_fp32(h[i]));
    }
}

/* ---- activations --------------------------------------------------------------------------- */

static double d_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* 0.5 (1 + tanh(y)) written as 1 / (1 + exp(-2y)): the reference itself must not cancel */
static double d_gelu(double x) {
    const double y = sqrt(2.0 / acos(-1.0)) * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * y));
}

static double d_gelu_erf(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double d_gelu_quick(double x) { return x * d_sigmoid(1.702 * x); }
static double d_silu(double x) { return x * d_sigmoid(x); }
static double d_relu(double x) { return x > 0 ? x : 0; }

static float f_relu(float x) { return ggmlx_relu_f32(x); }
static float f_sigmoid(float x) { return ggmlx_sigmoid_f32(x); }
static float f_gelu(float x) { return ggmlx_gelu_f32(x); }
static float f_gelu_erf(float x) { return ggmlx_gelu_erf_f32(x); }
static float f_gelu_quick(float x) { return ggmlx_gelu_quick_f32(x); }
static float f_silu(float x) { return ggmlx_silu_f32(x); }
static float f_tanh(float x) { return ggmlx_tanh_f32(x); }
static float f_exp(float x) { return ggmlx_exp_f32(x); }

struct act {
    const char * name;
    float      (*f)(float);
    double     (*ref)(double);
    float        lo, hi;
    double       rel;  /* allowed relative error */
};

/*
 * Checked over a grid and random points of [lo, hi], including the far negative tails where the
 * naive formulas cancel: the relative error must stay small there too (with a tiny absolute
 * floor for results that underflow). In those tails the result is exp(-z) of a z computed in
 * float, so its relative error is about z times float epsilon: the bounds for the GELUs allow that.
 */
static void check_act(const struct act * a) {
    struct tu_rng rng = tu_rng_new(3);
    double worst = 0.0, worst_x = 0.0;
    for (int i = 0; i < 60000; i++) {
        const float x = i < 20001 ? a->lo + (a->hi - a->lo) * (float) i / 20000.0f : tu_uniform(&rng, a->lo, a->hi);
        const double want = a->ref((double) x);
        const double got  = (double) a->f(x);
        const double err  = fabs(got - want) / (fabs(want) + 1e-30);
        if (fabs(got - want) > 1e-37 && err > worst) {
            worst = err;
            worst_x = x;
        }
    }
    cr_assert_leq(worst, a->rel, "%s: relative error %.3g at x = %.9g", a->name, worst, worst_x);
}

Test(activations, match_double_references) {
    const struct act acts[] = {
        { "relu",       f_relu,       d_relu,       -10, 10, 0.0 },
        { "tanh",       f_tanh,       tanh,         -10, 10, 4e-7 },
        { "exp",        f_exp,        exp,          -80, 80, 4e-7 },
        { "sigmoid",    f_sigmoid,    d_sigmoid,    -80, 80, 1e-6 },
        { "silu",       f_silu,       d_silu,       -80, 80, 1e-6 },
        { "gelu",       f_gelu,       d_gelu,       -9,  9,  3e-5 },
        { "gelu_erf",   f_gelu_erf,   d_gelu_erf,   -12, 12, 3e-5 },
        { "gelu_quick", f_gelu_quick, d_gelu_quick, -40, 40, 1e-5 },
    };
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        check_act(&acts[k]);
    }
}

Test(activations, simple_ones_are_exact) {
    const float xs[] = { 0.0f, -0.0f, 1.5f, -2.25f, 1e-30f, -1e30f, INFINITY, -INFINITY };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        const float x = xs[i];
        cr_assert_eq(ggmlx_abs_f32(x), fabsf(x));
        cr_assert_eq(ggmlx_neg_f32(x), -x);
        cr_assert_eq(ggmlx_sqr_f32(x), x * x);
        cr_assert_eq(ggmlx_relu_f32(x), x > 0 ? x : 0.0f);
        if (x >= 0) {
            cr_assert_eq(ggmlx_sqrt_f32(x), sqrtf(x));
        }
    }
    cr_assert(isnan(ggmlx_sqrt_f32(-1.0f)));
    cr_assert(isnan(ggmlx_relu_f32(NAN)) || ggmlx_relu_f32(NAN) == 0.0f);
}

Test(activations, limits_and_special_values) {
    cr_assert_eq(ggmlx_sigmoid_f32(0.0f), 0.5f);
    cr_assert_eq(ggmlx_sigmoid_f32(INFINITY), 1.0f);
    cr_assert_eq(ggmlx_sigmoid_f32(-INFINITY), 0.0f);
    cr_assert_eq(ggmlx_sigmoid_f32(1000.0f), 1.0f);
    cr_assert_eq(ggmlx_sigmoid_f32(-1000.0f), 0.0f);
    cr_assert(isnan(ggmlx_sigmoid_f32(NAN)));
    cr_assert_eq(ggmlx_silu_f32(0.0f), 0.0f);
    cr_assert_eq(ggmlx_silu_f32(1000.0f), 1000.0f);
    cr_assert_eq(ggmlx_silu_f32(-1000.0f), 0.0f);
    cr_assert_eq(ggmlx_gelu_f32(0.0f), 0.0f);
    cr_assert_eq(ggmlx_gelu_f32(100.0f), 100.0f);
    cr_assert_eq(ggmlx_gelu_f32(-100.0f), 0.0f);
    cr_assert_eq(ggmlx_gelu_f32(INFINITY), INFINITY);
    cr_assert_eq(ggmlx_gelu_erf_f32(0.0f), 0.0f);
    cr_assert_eq(ggmlx_gelu_erf_f32(100.0f), 100.0f);
    cr_assert_eq(ggmlx_gelu_erf_f32(-100.0f), 0.0f);
    cr_assert_eq(ggmlx_tanh_f32(INFINITY), 1.0f);
    cr_assert_eq(ggmlx_exp_f32(-INFINITY), 0.0f);
    cr_assert_eq(ggmlx_exp_f32(100.0f), INFINITY);
    cr_assert(isnan(ggmlx_gelu_f32(NAN)) && isnan(ggmlx_silu_f32(NAN)) && isnan(ggmlx_tanh_f32(NAN)));
}
