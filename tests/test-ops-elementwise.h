/*
 * test-ops-elementwise.h -- what the element-wise op suites (unary, elem2, elem3, glu2) share:
 * input layouts, tolerances, and one run of a one-input op through its constructor, its
 * _inplace form or ggml_unary(_inplace), checked against a double reference.
 */
#ifndef GGMLX_TEST_OPS_ELEMENTWISE_H
#define GGMLX_TEST_OPS_ELEMENTWISE_H

#include "test-ops-common.h"

typedef struct ggml_tensor * (*unary_ctor)(struct ggml_context *, struct ggml_tensor *);

static const enum ggml_type FTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static inline double ref_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

static inline struct ggml_tensor * make_input(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/*
 * The float kernel rounds its result to the type; the reference is the exact function of the
 * stored input. F32 allows a few float ulps of the function itself.
 */
static inline double tol_for(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? 2e-6 : tu_tol(t);
}

/* A one-input op and its double reference. */
struct unary_case {
    const char *        name;
    enum ggml_unary_op  uop;          /* GGML_UNARY_OP_COUNT: not a GGML_OP_UNARY op */
    enum ggml_op        op;
    unary_ctor          make;
    unary_ctor          make_inplace; /* NULL where upstream has none */
    double            (*ref)(double);
    float               lo, hi;       /* input range */
};

/* how: 0 ggml_<op>, 1 ggml_<op>_inplace, 2 ggml_unary, 3 ggml_unary_inplace */
static inline void run_unary_case(const struct unary_case * u, enum ggml_type type, const int64_t ne[4], enum layout l,
                                  int how, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_input(&e, l, type, ne);
    tu_fill(a, &rng, u->lo, u->hi);
    double * va = to_values(a);

    struct ggml_tensor * r;
    if (how == 2 || how == 3) {
        r = how == 2 ? ggml_unary(e.ctx, a, u->uop) : ggml_unary_inplace(e.ctx, a, u->uop);
    } else {
        r = how == 0 ? u->make(e.ctx, a) : u->make_inplace(e.ctx, a);
    }
    cr_assert_not_null(r, "%s: %s", u->name, ggmlx_last_error());
    cr_assert_eq(r->op, u->op, "%s: op %s", u->name, ggml_op_name(r->op));
    cr_assert_eq(r->type, type);
    cr_assert_eq(r->src[0], a);
    if (u->op == GGML_OP_UNARY) {
        cr_assert_eq(r->op_params[0], (int32_t) u->uop, "op_params[0] must hold the unary op");
        cr_assert_eq(ggml_get_unary_op(r), u->uop);
    }
    const bool inplace = how == 1 || how == 3;
    if (inplace) {
        cr_assert_eq(r->data, a->data);
        cr_assert_eq(r->view_src, a->view_src != NULL ? a->view_src : a);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);

    const size_t n = (size_t) ggml_nelements(r);
    double * want = (double *) malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        want[i] = u->ref(va[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s [%lld,%lld,%lld,%lld] layout %d how %d threads %d", u->name,
             ggml_type_name(type), (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], (int) l,
             how, n_threads);
    to_check(r, want, tol_for(type), what);
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

#endif /* GGMLX_TEST_OPS_ELEMENTWISE_H */
