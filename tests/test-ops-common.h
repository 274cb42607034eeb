/*
 * test-ops-common.h -- helpers shared by the op suites (binary, unary, copy, shape, reduce):
 * a no_alloc context whose tensors each get their own guarded memory, so that a kernel writing
 * outside its destination (or into an input) is caught; reference arrays in double; and checks
 * of the error contract for bad constructor arguments.
 */
#ifndef GGMLX_TEST_OPS_COMMON_H
#define GGMLX_TEST_OPS_COMMON_H

#include <criterion/criterion.h>

#include "test-util.h"

#include <stdbool.h>
#include <string.h>

#define TO_MAX_GUARDED 64

/* a context for one case; metadata, graphs and the work buffer come from its memory */
struct to_env {
    struct ggml_context * ctx;
    struct ggml_tensor  * guarded[TO_MAX_GUARDED];
    int                   n;
};

static inline void to_begin(struct to_env * e) {
    struct ggml_init_params p = { 8u * 1024 * 1024, NULL, true };
    e->ctx = ggml_init(p);
    e->n   = 0;
    cr_assert_not_null(e->ctx, "ggml_init failed: %s", ggmlx_last_error() ? ggmlx_last_error() : "?");
}

/* give t (made in e->ctx) guarded memory; views of t made afterwards point into it */
static inline struct ggml_tensor * to_alloc(struct to_env * e, struct ggml_tensor * t) {
    cr_assert_not_null(t, "tensor creation failed: %s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    cr_assert_lt(e->n, TO_MAX_GUARDED);
    tu_guard_alloc(t);
    e->guarded[e->n++] = t;
    return t;
}

static inline struct ggml_tensor * to_new(struct to_env * e, enum ggml_type type, int64_t ne0, int64_t ne1,
                                          int64_t ne2, int64_t ne3) {
    return to_alloc(e, ggml_new_tensor_4d(e->ctx, type, ne0, ne1, ne2, ne3));
}

/* a tensor of the given logical shape whose memory is laid out transposed (dims 0 and 1 swapped) */
static inline struct ggml_tensor * to_new_transposed(struct to_env * e, enum ggml_type type, int64_t ne0, int64_t ne1,
                                                     int64_t ne2, int64_t ne3) {
    struct ggml_tensor * base = to_new(e, type, ne1, ne0, ne2, ne3);
    struct ggml_tensor * t = ggml_transpose(e->ctx, base);
    cr_assert_not_null(t);
    return t;
}

/* a tensor of the given logical shape stored with its dims permuted (memory order 2, 0, 3, 1) */
static inline struct ggml_tensor * to_new_permuted(struct to_env * e, enum ggml_type type, int64_t ne0, int64_t ne1,
                                                   int64_t ne2, int64_t ne3) {
    /* base dim k becomes logical dim axis_k: base = [ne1, ne3, ne0, ne2] with axes (1, 3, 0, 2) */
    struct ggml_tensor * base = to_new(e, type, ne1, ne3, ne0, ne2);
    struct ggml_tensor * t = ggml_permute(e->ctx, base, 1, 3, 0, 2);
    cr_assert_not_null(t);
    cr_assert(t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == ne2 && t->ne[3] == ne3);
    return t;
}

static inline void to_end(struct to_env * e) {
    for (int i = 0; i < e->n; i++) {
        cr_expect(tu_guard_ok(e->guarded[i]), "guard bytes around tensor %d (%s) were overwritten", i,
                  e->guarded[i]->name);
        tu_guard_free(e->guarded[i]);
    }
    ggml_free(e->ctx);
    e->ctx = NULL;
    e->n   = 0;
}

static inline void to_compute(struct to_env * e, struct ggml_tensor * out, int n_threads) {
    cr_assert_not_null(out, "constructor failed: %s", ggmlx_last_error() ? ggmlx_last_error() : "?");
    const enum ggml_status st = tu_compute(e->ctx, out, n_threads);
    cr_assert_eq(st, GGML_STATUS_SUCCESS, "compute failed (%d): %s", (int) st,
                 ggmlx_last_error() ? ggmlx_last_error() : "?");
}

/* ---- reference values ---------------------------------------------------------------------- */

static inline size_t to_index(const struct ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (size_t) (((i3 * t->ne[2] + i2) * t->ne[1] + i1) * t->ne[0] + i0);
}

/* t's values, in logical row-major order, as doubles (caller frees) */
static inline double * to_values(const struct ggml_tensor * t) {
    const size_t n = (size_t) ggml_nelements(t);
    double * v = (double *) malloc((n ? n : 1) * sizeof(double));
    cr_assert_not_null(v);
    TU_FOR_EACH(t, i0, i1, i2, i3) {
        v[to_index(t, i0, i1, i2, i3)] = tu_get(t, i0, i1, i2, i3);
    }
    return v;
}

/*
 * Every element of t against want (logical order) within tol (relative plus absolute, tu_close).
 * One assertion per tensor, naming the first mismatch.
 */
static inline void to_check(const struct ggml_tensor * t, const double * want, double tol, const char * what) {
    int64_t bad = 0;
    int64_t f0 = 0, f1 = 0, f2 = 0, f3 = 0;
    double  fgot = 0, fwant = 0;
    TU_FOR_EACH(t, i0, i1, i2, i3) {
        const double got = tu_get(t, i0, i1, i2, i3);
        const double w   = want[to_index(t, i0, i1, i2, i3)];
        if (!tu_close(got, w, tol)) {
            if (bad == 0) {
                f0 = i0; f1 = i1; f2 = i2; f3 = i3;
                fgot = got; fwant = w;
            }
            bad++;
        }
    }
    cr_assert_eq(bad, 0, "%s: %lld of %lld elements wrong; first at [%lld, %lld, %lld, %lld]: got %.9g, want %.9g (tol %g)",
                 what, (long long) bad, (long long) ggml_nelements(t), (long long) f0, (long long) f1, (long long) f2,
                 (long long) f3, fgot, fwant, tol);
}

/* ---- the error contract -------------------------------------------------------------------- */

/* a fresh small allocating context for constructor checks */
static inline struct ggml_context * to_small_ctx(void) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

/* r came from a constructor given bad arguments: NULL, an error naming func, ctx failed */
static inline void to_expect_rejected(struct ggml_context * ctx, const struct ggml_tensor * r, const char * func) {
    cr_assert_null(r, "%s accepted bad arguments", func);
    const char * err = ggmlx_last_error();
    cr_assert_not_null(err, "%s: no error recorded", func);
    cr_assert_not_null(strstr(err, func), "%s: error does not name the function: %s", func, err);
    cr_assert(ggmlx_context_is_failed(ctx), "%s: context not marked failed", func);
}

#endif /* GGMLX_TEST_OPS_COMMON_H */
