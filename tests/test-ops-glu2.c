/*
 * test-ops-glu2.c -- the named GLU helpers beyond geglu/swiglu (reglu, geglu_erf, geglu_quick,
 * each plain, _swapped and _split) and ggml_swiglu_oai, against double references: float types,
 * sizes, transposed and permuted inputs, threads, op_params as upstream, bad arguments.
 */
#include "test-ops-common.h"

#include "ggml-backend.h"

typedef struct ggml_tensor * (*glu1_fn)(struct ggml_context *, struct ggml_tensor *);
typedef struct ggml_tensor * (*glu2_fn)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);

static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double ref_relu(double x) { return x > 0 ? x : 0.0; }
static double ref_gelu_erf(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double ref_gelu_quick(double x) { return x * ref_sigmoid(1.702 * x); }

struct named {
    const char *     name;
    enum ggml_glu_op op;
    glu1_fn          plain, swapped;
    glu2_fn          split;
    double         (*act)(double);
};

static const struct named NAMED[] = {
    { "reglu",       GGML_GLU_OP_REGLU,       ggml_reglu,       ggml_reglu_swapped,       ggml_reglu_split,       ref_relu },
    { "geglu_erf",   GGML_GLU_OP_GEGLU_ERF,   ggml_geglu_erf,   ggml_geglu_erf_swapped,   ggml_geglu_erf_split,   ref_gelu_erf },
    { "geglu_quick", GGML_GLU_OP_GEGLU_QUICK, ggml_geglu_quick, ggml_geglu_quick_swapped, ggml_geglu_quick_split, ref_gelu_quick },
};
#define N_NAMED ((int) (sizeof NAMED / sizeof NAMED[0]))

static const enum ggml_type FTYPES[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_input(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* the activation (or for swiglu_oai, the whole gated value) of x with gate g */
struct glu_ref {
    const struct named * named; /* NULL: swiglu_oai with alpha, limit */
    float                alpha, limit;
};

static double ref_value(const struct glu_ref * f, double x, double g) {
    if (f->named != NULL) {
        return f->named->act(x) * g;
    }
    const double xc = fmin(x, f->limit);
    const double gc = fmax(fmin(g, f->limit), -f->limit);
    return xc * ref_sigmoid(f->alpha * xc) * (gc + 1.0);
}

/* form: 0 plain, 1 swapped, 2 split; a plain or swapped row has `extra` elements past its two halves */
static void run_rows(const struct glu_ref * f, enum ggml_type type, int64_t nc, int64_t extra, int64_t nr,
                     enum layout l, int form, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    const bool split = form == 2, swapped = form == 1;
    const int64_t ne_a[4] = { split ? nc : 2 * nc + extra, nr, 2, 1 };
    struct ggml_tensor * a = make_input(&e, l, type, ne_a);
    struct ggml_tensor * b = split ? make_input(&e, l, type, ne_a) : NULL;
    tu_fill(a, &rng, -5.0f, 5.0f);
    if (b) {
        tu_fill(b, &rng, -5.0f, 5.0f);
    }
    double * va = to_values(a);
    double * vb = b ? to_values(b) : NULL;

    struct ggml_tensor * r;
    if (f->named == NULL) {
        cr_assert(!swapped);
        r = ggml_swiglu_oai(e.ctx, a, b, f->alpha, f->limit);
    } else {
        r = split ? f->named->split(e.ctx, a, b) : swapped ? f->named->swapped(e.ctx, a) : f->named->plain(e.ctx, a);
    }
    const enum ggml_glu_op op = f->named ? f->named->op : GGML_GLU_OP_SWIGLU_OAI;
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_GLU);
    cr_assert_eq(ggml_get_glu_op(r), op);
    cr_assert_eq(r->op_params[1], swapped ? 1 : 0);
    if (f->named == NULL) {
        float p[2];
        memcpy(p, &r->op_params[2], sizeof p);
        cr_assert(p[0] == f->alpha && p[1] == f->limit, "op_params [2], [3] must be alpha, limit");
    }
    cr_assert(r->ne[0] == nc && r->ne[1] == nr && r->type == type);
    cr_assert(r->src[0] == a && r->src[1] == b);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);

    double * want = (double *) malloc((size_t) ggml_nelements(r) * sizeof(double));
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        double x, g;
        if (split) {
            x = va[to_index(a, i0, i1, i2, i3)];
            g = vb[to_index(b, i0, i1, i2, i3)];
        } else {
            const double lo = va[to_index(a, i0, i1, i2, i3)];
            const double hi = va[to_index(a, i0 + nc, i1, i2, i3)];
            x = swapped ? hi : lo;
            g = swapped ? lo : hi;
        }
        want[to_index(r, i0, i1, i2, i3)] = ref_value(f, x, g);
    }
    char what[128];
    snprintf(what, sizeof what, "%s %s nc %lld nr %lld layout %d form %d threads %d",
             f->named ? f->named->name : "swiglu_oai", ggml_type_name(type), (long long) nc, (long long) nr, (int) l,
             form, n_threads);
    /* values reach about 25 here; the tolerance is relative to them */
    to_check(r, want, type == GGML_TYPE_F32 ? 4e-6 : tu_tol(type), what);
    free(want);
    free(va);
    free(vb);
    to_end(&e);
}

static void run(const struct glu_ref * f, enum ggml_type type, int64_t nc, int64_t nr, enum layout l, int form,
                int n_threads, uint64_t salt) {
    run_rows(f, type, nc, 0, nr, l, form, n_threads, salt);
}

/* upstream's test-backend-ops gives rows of 5: the halves are [0, 2) and [2, 4), the last one unused */
Test(glu2, odd_rows_leave_the_last_element_out) {
    for (int k = 0; k < N_NAMED; k++) {
        const struct glu_ref f = { &NAMED[k], 0, 0 };
        run_rows(&f, GGML_TYPE_F32, 2, 1, 7, CONTIG, 0, 1, (uint64_t) (6000 + k));
        run_rows(&f, GGML_TYPE_F16, 16, 1, 3, CONTIG, 1, 2, (uint64_t) (6100 + k));
    }
    const struct glu_ref oai = { NULL, 1.702f, 7.0f };
    run_rows(&oai, GGML_TYPE_F32, 3, 1, 5, CONTIG, 0, 1, 6200);
}

Test(glu2, named_helpers_all_sizes) {
    for (int k = 0; k < N_NAMED; k++) {
        const struct glu_ref f = { &NAMED[k], 0, 0 };
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t nr = TU_SIZES[s] >= 1023 ? 1 : 3;
            for (int form = 0; form < 3; form++) {
                run(&f, GGML_TYPE_F32, TU_SIZES[s], nr, CONTIG, form, s == TU_N_SIZES - 1 ? 4 : 1,
                    (uint64_t) (k * 100 + s * 3 + form));
            }
        }
    }
}

Test(glu2, named_helpers_types_and_layouts) {
    for (int k = 0; k < N_NAMED; k++) {
        const struct glu_ref f = { &NAMED[k], 0, 0 };
        for (int t = 0; t < 3; t++) {
            for (int form = 0; form < 3; form++) {
                run(&f, FTYPES[t], 33, 4, CONTIG, form, 1, (uint64_t) (1000 + k * 30 + t * 3 + form));
                run(&f, FTYPES[t], 31, 33, TRANSPOSED, form, 2, (uint64_t) (2000 + k * 30 + t * 3 + form));
                run(&f, FTYPES[t], 31, 5, PERMUTED, form, 1, (uint64_t) (3000 + k * 30 + t * 3 + form));
            }
        }
    }
}

static const struct glu_ref OAI[] = {
    { NULL, 1.702f, 7.0f }, /* gpt-oss */
    { NULL, 1.0f, 2.0f },   /* clipping both x and the gate within the inputs' range */
    { NULL, 0.5f, 0.0f },   /* limit 0: x <= 0 and the gate 0 */
};

Test(glu2, swiglu_oai_split_and_packed) {
    for (int k = 0; k < 3; k++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t nr = TU_SIZES[s] >= 1023 ? 1 : 3;
            const int nt = s == TU_N_SIZES - 1 ? 4 : 1;
            run(&OAI[k], GGML_TYPE_F32, TU_SIZES[s], nr, CONTIG, 2, nt, (uint64_t) (4000 + k * 20 + s));
            run(&OAI[k], GGML_TYPE_F32, TU_SIZES[s], nr, CONTIG, 0, nt, (uint64_t) (4100 + k * 20 + s));
        }
    }
}

Test(glu2, swiglu_oai_types_and_layouts) {
    for (int k = 0; k < 3; k++) {
        for (int t = 0; t < 3; t++) {
            run(&OAI[k], FTYPES[t], 33, 4, CONTIG, 2, 1, (uint64_t) (5000 + k * 10 + t));
            run(&OAI[k], FTYPES[t], 31, 33, TRANSPOSED, 2, 3, (uint64_t) (5100 + k * 10 + t));
            run(&OAI[k], FTYPES[t], 31, 5, PERMUTED, 0, 1, (uint64_t) (5200 + k * 10 + t));
        }
    }
}

/* ---- bad input ----------------------------------------------------------------------------- */

Test(glu2, named_helpers_reject_bad_arguments) {
    for (int k = 0; k < N_NAMED; k++) {
        char n_plain[48], n_swapped[48], n_split[48];
        snprintf(n_plain, sizeof n_plain, "ggml_%s", NAMED[k].name);
        snprintf(n_swapped, sizeof n_swapped, "ggml_%s_swapped", NAMED[k].name);
        snprintf(n_split, sizeof n_split, "ggml_%s_split", NAMED[k].name);

        struct ggml_context * ctx = to_small_ctx();
        to_expect_rejected(ctx, NAMED[k].plain(ctx, NULL), n_plain);
        ggml_free(ctx);

        ctx = to_small_ctx();
        struct ggml_tensor * i32 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2);
        to_expect_rejected(ctx, NAMED[k].plain(ctx, i32), n_plain);
        ggml_free(ctx);

        ctx = to_small_ctx();
        i32 = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2);
        to_expect_rejected(ctx, NAMED[k].swapped(ctx, i32), n_swapped);
        ggml_free(ctx);

        ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        to_expect_rejected(ctx, NAMED[k].split(ctx, a, NULL), n_split);
        ggml_free(ctx);

        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 3);
        to_expect_rejected(ctx, NAMED[k].split(ctx, a, b), n_split);
        ggml_free(ctx);

        ctx = to_small_ctx();
        a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
        b = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, 8, 2);
        to_expect_rejected(ctx, NAMED[k].split(ctx, a, b), n_split);
        ggml_free(ctx);

        cr_assert_null(NAMED[k].plain(NULL, NULL));
    }
}

Test(glu2, swiglu_oai_rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_swiglu_oai(ctx, NULL, NULL, 1.702f, 7.0f), "ggml_swiglu_oai");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    to_expect_rejected(ctx, ggml_swiglu_oai(ctx, a, b, 1.702f, 7.0f), "ggml_swiglu_oai");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 2);
    b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    to_expect_rejected(ctx, ggml_swiglu_oai(ctx, a, b, 1.702f, 7.0f), "ggml_swiglu_oai");
    ggml_free(ctx);

    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 2);
    to_expect_rejected(ctx, ggml_swiglu_oai(ctx, a, NULL, 1.702f, 7.0f), "ggml_swiglu_oai");
    ggml_free(ctx);

    cr_assert_null(ggml_swiglu_oai(NULL, NULL, NULL, 1.0f, 1.0f));
}

/* through ggml_glu / ggml_glu_split, SWIGLU_OAI would have no alpha and limit: refused, by name */
Test(glu2, generic_glu_refuses_swiglu_oai) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    to_expect_rejected(ctx, ggml_glu(ctx, a, GGML_GLU_OP_SWIGLU_OAI, false), "ggml_glu");
    cr_assert_not_null(strstr(ggmlx_last_error(), "ggml_swiglu_oai"), "%s", ggmlx_last_error());
    ggml_free(ctx);
    ctx = to_small_ctx();
    a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    to_expect_rejected(ctx, ggml_glu_split(ctx, a, b, GGML_GLU_OP_SWIGLU_OAI), "ggml_glu_split");
    ggml_free(ctx);
}

Test(glu2, cpu_supports_op) {
    ggml_backend_t be = ggml_backend_cpu_init();
    cr_assert_not_null(be);
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (int t = 0; t < 3; t++) {
        struct ggml_tensor * a = ggml_new_tensor_2d(ctx, FTYPES[t], 8, 2);
        struct ggml_tensor * b = ggml_new_tensor_2d(ctx, FTYPES[t], 8, 2);
        for (int k = 0; k < N_NAMED; k++) {
            cr_expect(ggml_backend_supports_op(be, NAMED[k].plain(ctx, a)), "%s", NAMED[k].name);
            cr_expect(ggml_backend_supports_op(be, NAMED[k].split(ctx, a, b)), "%s_split", NAMED[k].name);
        }
        cr_expect(ggml_backend_supports_op(be, ggml_swiglu_oai(ctx, a, b, 1.702f, 7.0f)), "swiglu_oai");
    }
    ggml_free(ctx);
    ggml_backend_free(be);
}
