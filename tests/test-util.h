/*
 * test-util.h -- shared helpers for the Criterion suites: seeded random numbers, tensors with
 * guard bytes around their data (a kernel writing out of bounds is caught), element access by
 * coordinates for any float type, and tolerance checks.
 */
#ifndef GGMLX_TEST_UTIL_H
#define GGMLX_TEST_UTIL_H

#include "ggml.h"
#include "ggml-cpu.h"
#include "ggmlx.h"
#include "ggml-math.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- seeds and random numbers -------------------------------------------------------------- */

/* The suite's seed: GGMLX_TEST_SEED, or 12345. Printed once so a failure can be replayed. */
static inline uint64_t tu_seed(void) {
    static uint64_t seed = 0;
    if (seed == 0) {
        const char * s = getenv("GGMLX_TEST_SEED");
        seed = s ? strtoull(s, NULL, 10) : 12345u;
        if (seed == 0) {
            seed = 1;
        }
        fprintf(stderr, "test seed: %llu (set GGMLX_TEST_SEED to replay)\n", (unsigned long long) seed);
    }
    return seed;
}

struct tu_rng { uint64_t s; };

static inline struct tu_rng tu_rng_new(uint64_t salt) {
    struct tu_rng r = { tu_seed() * 0x9e3779b97f4a7c15ull + salt * 0xbf58476d1ce4e5b9ull + 1 };
    return r;
}

static inline uint64_t tu_next(struct tu_rng * r) { /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline float tu_uniform(struct tu_rng * r, float lo, float hi) {
    return lo + (hi - lo) * (float)((tu_next(r) >> 40) * (1.0 / 16777216.0));
}

/* ---- element access by coordinates, any float type or I32 ---------------------------------- */

static inline double tu_get(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char * p = (const char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
    switch (t->type) {
    case GGML_TYPE_F32:  return *(const float *) p;
    case GGML_TYPE_F16:  return ggmlx_fp16_to_fp32(*(const uint16_t *) p);
    case GGML_TYPE_BF16: return ggmlx_bf16_to_fp32(*(const uint16_t *) p);
    case GGML_TYPE_I32:  return *(const int32_t *) p;
    case GGML_TYPE_I64:  return (double) *(const int64_t *) p;
    default: abort();
    }
}

static inline void tu_set(struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    char * p = (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
    switch (t->type) {
    case GGML_TYPE_F32:  *(float *) p = (float) v; break;
    case GGML_TYPE_F16:  *(uint16_t *) p = ggmlx_fp32_to_fp16((float) v); break;
    case GGML_TYPE_BF16: *(uint16_t *) p = ggmlx_fp32_to_bf16((float) v); break;
    case GGML_TYPE_I32:  *(int32_t *) p = (int32_t) v; break;
    case GGML_TYPE_I64:  *(int64_t *) p = (int64_t) v; break;
    default: abort();
    }
}

#define TU_FOR_EACH(t, i0, i1, i2, i3)                     \
    for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++)            \
    for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++)            \
    for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++)            \
    for (int64_t i0 = 0; i0 < (t)->ne[0]; i0++)

/* fill with uniform values in [lo, hi), rounded to the tensor's type */
static inline void tu_fill(struct ggml_tensor * t, struct tu_rng * r, float lo, float hi) {
    TU_FOR_EACH(t, i0, i1, i2, i3) {
        tu_set(t, i0, i1, i2, i3, tu_uniform(r, lo, hi));
    }
}

/* ---- guarded data -------------------------------------------------------------------------- */

#define TU_GUARD_BYTES 64
#define TU_GUARD_BYTE  0xA5

/*
 * Give a tensor made in a no_alloc context its own memory with TU_GUARD_BYTES of a known
 * pattern before and after. Free with tu_guard_free() after checking tu_guard_ok().
 */
static inline void tu_guard_alloc(struct ggml_tensor * t) {
    const size_t n = ggml_nbytes(t);
    unsigned char * raw = (unsigned char *) malloc(n + 2 * TU_GUARD_BYTES);
    memset(raw, TU_GUARD_BYTE, n + 2 * TU_GUARD_BYTES);
    t->data = raw + TU_GUARD_BYTES;
}

static inline int tu_guard_ok(const struct ggml_tensor * t) {
    const size_t n = ggml_nbytes(t);
    const unsigned char * raw = (const unsigned char *) t->data - TU_GUARD_BYTES;
    for (size_t i = 0; i < TU_GUARD_BYTES; i++) {
        if (raw[i] != TU_GUARD_BYTE || raw[TU_GUARD_BYTES + n + i] != TU_GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}

static inline void tu_guard_free(struct ggml_tensor * t) {
    free((unsigned char *) t->data - TU_GUARD_BYTES);
    t->data = NULL;
}

/* ---- tolerances ---------------------------------------------------------------------------- */

/* relative-plus-absolute tolerance suited to values of the given type */
static inline double tu_tol(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F16:  return 2e-3;
    case GGML_TYPE_BF16: return 1.6e-2;
    default:             return 1e-5;
    }
}

static inline int tu_close(double got, double want, double tol) {
    if (isnan(want)) {
        return isnan(got);
    }
    if (isinf(want)) {
        return got == want;
    }
    return fabs(got - want) <= tol * (1.0 + fabs(want));
}

/* ---- computing ----------------------------------------------------------------------------- */

/* Build and compute out's graph on n_threads; returns the status. */
static inline enum ggml_status tu_compute(struct ggml_context * ctx, struct ggml_tensor * out, int n_threads) {
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (gf == NULL) {
        return GGML_STATUS_FAILED;
    }
    ggml_build_forward_expand(gf, out);
    return ggml_graph_compute_with_ctx(ctx, gf, n_threads);
}

/* the sizes every op is checked over (issue: 1, 31, 32, 33, 1023, 4097) */
static const int64_t TU_SIZES[] = { 1, 31, 32, 33, 1023, 4097 };
#define TU_N_SIZES ((int)(sizeof(TU_SIZES) / sizeof(TU_SIZES[0])))

#endif /* GGMLX_TEST_UTIL_H */
