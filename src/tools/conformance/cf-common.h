/*
 * cf-common.h -- what every part of the conformance runner shares: the seeded random numbers,
 * this runner's own F16/BF16 conversions (written independently of the library, so a wrong
 * conversion in ggmlx cannot hide behind the same code in the reference), element access in host
 * copies of device memory, and the result of one case.
 *
 * Included once, by src/tools/conformance/cf-run.c.
 */
#ifndef GGMLX_CF_COMMON_H
#define GGMLX_CF_COMMON_H

#include "../tool-rng.h"
#include "ggml.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CF_REASON_MAX   320
#define CF_PI           3.14159265358979323846

/* ---- results ------------------------------------------------------------------------------- */

enum cf_status { CF_OK, CF_FAIL, CF_SKIP };

struct cf_result {
    enum cf_status status;
    char           reason[CF_REASON_MAX]; /* FAIL: what went wrong; SKIP: why; OK: a short note or "" */
    double         err_ratio;             /* op cases: the largest |got - want| / tolerance (< 1 passes) */
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void cf_set(struct cf_result * r, enum cf_status st, const char * fmt, ...) {
    r->status    = st;
    r->err_ratio = 0.0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

/* The first failure of a case is the one reported; later ones are usually its consequences. */
#define CF_FAIL_IF(res, cond, ...)                                                                \
    do {                                                                                           \
        if ((cond) && (res)->status != CF_FAIL) {                                                  \
            cf_set((res), CF_FAIL, __VA_ARGS__);                                                   \
        }                                                                                          \
    } while (0)

/* ---- random numbers: splitmix64, the same on every platform -------------------------------- */

struct cf_rng {
    uint64_t s;
};

static struct cf_rng cf_rng_new(uint64_t seed, uint64_t stream) {
    struct cf_rng r = { tool_rng_seed(seed, stream) };
    return r;
}

static uint64_t cf_next(struct cf_rng * r) {
    return tool_rng_next(&r->s);
}

/* uniform in [lo, hi) */
static double cf_uniform(struct cf_rng * r, double lo, double hi) {
    return lo + (hi - lo) * tool_rng_unit(&r->s);
}

/* uniform integer in [lo, hi] */
static int64_t cf_int(struct cf_rng * r, int64_t lo, int64_t hi) {
    return lo + (int64_t) (cf_next(r) % (uint64_t) (hi - lo + 1));
}

/* a stable hash of a case name, so each case draws its own stream whatever else runs */
static uint64_t cf_hash(const char * s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char) *s) * 1099511628211ull;
    }
    return h;
}

/* ---- F16 / BF16, written here (not the library's) ------------------------------------------ */

static double cf_f16_to_double(uint16_t h) {
    const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0) {
        v = ldexp((double) mant, -24);
    } else if (exp == 31) {
        v = mant ? NAN : INFINITY;
    } else {
        v = ldexp((double) (mant + 1024), exp - 25);
    }
    return sign ? -v : v;
}

/* round to nearest even, from a double (so a double reference rounds exactly once) */
static uint16_t cf_double_to_f16(double d) {
    const uint16_t sign = signbit(d) ? 0x8000 : 0;
    if (isnan(d)) {
        return 0x7e00;
    }
    double a = fabs(d);
    if (a >= 65520.0) {
        return sign | 0x7c00; /* at or past the rounding midpoint above 65504 */
    }
    int e;
    (void) frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    /* quantum: 2^(e-11) for normals (11 significant bits), 2^-24 for subnormals */
    int qexp = e - 11;
    if (qexp < -24) {
        qexp = -24;
    }
    const double q = nearbyint(ldexp(a, -qexp)); /* default rounding mode: to nearest even */
    const double r = ldexp(q, qexp);
    if (r == 0.0) {
        return sign;
    }
    int re;
    (void) frexp(r, &re); /* r in [2^(re-1), 2^re) */
    if (re - 1 < -14) { /* subnormal: r = m * 2^-24 */
        return sign | (uint16_t) ldexp(r, 24);
    }
    const int biased = re - 1 + 15;
    const uint16_t mant = (uint16_t) (ldexp(r, 11 - re) - 1024.0);
    return sign | (uint16_t) (biased << 10) | mant;
}

static double cf_bf16_to_double(uint16_t b) {
    const uint32_t x = (uint32_t) b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* to float first (exactly representable values stay exact), then nearest even on the top half */
static uint16_t cf_double_to_bf16(double d) {
    const float f = (float) d;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if (isnan(f)) {
        return (uint16_t) ((x >> 16) | 0x40);
    }
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t) (x >> 16);
}

/* what storing d in a tensor of this type gives back */
static double cf_round_to(enum ggml_type type, double d) {
    switch (type) {
    case GGML_TYPE_F32: return (double) (float) d;
    case GGML_TYPE_F16: return cf_f16_to_double(cf_double_to_f16(d));
    case GGML_TYPE_BF16: return cf_bf16_to_double(cf_double_to_bf16(d));
    case GGML_TYPE_I32: {
        /* truncation toward zero, saturating, NaN to 0 (docs/deviations.md) */
        const float f = (float) d;
        if (isnan(f)) return 0;
        if (f >= 2147483648.0f) return 2147483647.0;
        if (f <= -2147483648.0f) return -2147483648.0;
        return trunc((double) f);
    }
    case GGML_TYPE_I64: return trunc(d);
    default: return ggml_is_quantized(type) ? d : NAN; /* only same-type copies of a block's own values */
    }
}

/* ulp of 1 in a type: what one rounding step can cost, relatively */
static double cf_eps(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F16: return 0x1.0p-10;
    case GGML_TYPE_BF16: return 0x1.0p-7;
    case GGML_TYPE_F32: return 0x1.0p-23;
    default: return 0.0;
    }
}

static const char * cf_type_name(enum ggml_type t) {
    switch (t) {
    case GGML_TYPE_F32: return "f32";
    case GGML_TYPE_F16: return "f16";
    case GGML_TYPE_BF16: return "bf16";
    case GGML_TYPE_I32: return "i32";
    case GGML_TYPE_I64: return "i64";
    default: return ggml_is_quantized(t) ? ggml_type_name(t) : "?";
    }
}

/* ---- element access in a host copy of memory --------------------------------------------- */

static double cf_load(enum ggml_type type, const unsigned char * p) {
    switch (type) {
    case GGML_TYPE_F32: {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    case GGML_TYPE_F16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return cf_f16_to_double(h);
    }
    case GGML_TYPE_BF16: {
        uint16_t h;
        memcpy(&h, p, sizeof h);
        return cf_bf16_to_double(h);
    }
    case GGML_TYPE_I32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case GGML_TYPE_I64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (double) v;
    }
    default: return NAN;
    }
}

/* stores d, rounded to the type */
static void cf_store(enum ggml_type type, unsigned char * p, double d) {
    switch (type) {
    case GGML_TYPE_F32: {
        const float f = (float) d;
        memcpy(p, &f, sizeof f);
        break;
    }
    case GGML_TYPE_F16: {
        const uint16_t h = cf_double_to_f16(d);
        memcpy(p, &h, sizeof h);
        break;
    }
    case GGML_TYPE_BF16: {
        const uint16_t h = cf_double_to_bf16(d);
        memcpy(p, &h, sizeof h);
        break;
    }
    case GGML_TYPE_I32: {
        const int32_t v = (int32_t) cf_round_to(GGML_TYPE_I32, d);
        memcpy(p, &v, sizeof v);
        break;
    }
    case GGML_TYPE_I64: {
        const int64_t v = (int64_t) d;
        memcpy(p, &v, sizeof v);
        break;
    }
    default: break;
    }
}

/*
 * One element of a quantized tensor: its block dequantized with the type's to_float. The last
 * block is kept, so walking a row dequantizes each block once; cf_load_quant_reset() forgets it
 * before memory that may hold other bytes at the same address is read (each case's host copies).
 */
static _Thread_local const unsigned char * cf_quant_last;
static _Thread_local enum ggml_type        cf_quant_last_type;
static _Thread_local float                 cf_quant_values[256];

static void cf_load_quant_reset(void) {
    cf_quant_last = NULL;
}

/* NaN for a type without to_float */
static double cf_load_quant(enum ggml_type type, const unsigned char * block, int64_t j) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(type);
    if (tr == NULL || tr->to_float == NULL || tr->blck_size > 256) {
        return NAN;
    }
    if (block != cf_quant_last || type != cf_quant_last_type) {
        tr->to_float(block, cf_quant_values, tr->blck_size);
        cf_quant_last      = block;
        cf_quant_last_type = type;
    }
    return cf_quant_values[j];
}

/* the byte pattern around every tensor: position-dependent, so a shifted copy is caught too */
static unsigned char cf_guard_byte(size_t i) {
    return (unsigned char) (0xA5u ^ (unsigned) ((i * 0x3Bu) & 0xFFu));
}

#endif /* GGMLX_CF_COMMON_H */
