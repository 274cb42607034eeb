/*
 * test-ops-softmax.c -- SOFT_MAX (plain and _ext: scale, F16/F32 masks broadcast over dims 2 and
 * 3, ALiBi slopes, -INF masking) and DIAG_MASK_INF against a double reference, contiguous and
 * strided inputs, in place, several threads, and the error contract.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

enum layout { CONTIG, TRANSPOSED, PERMUTED };

static struct ggml_tensor * make_tensor(struct to_env * e, enum layout l, enum ggml_type type, const int64_t ne[4]) {
    switch (l) {
    case TRANSPOSED: return to_new_transposed(e, type, ne[0], ne[1], ne[2], ne[3]);
    case PERMUTED:   return to_new_permuted(e, type, ne[0], ne[1], ne[2], ne[3]);
    default:         return to_new(e, type, ne[0], ne[1], ne[2], ne[3]);
    }
}

/* ALiBi slope of head h of n_head, straight from the definition */
static double ref_slope(double max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0.0) {
        return 1.0;
    }
    const double n_log2 = pow(2.0, floor(log2((double) n_head)));
    const double m0 = pow(2.0, -max_bias / n_log2);
    const double m1 = pow(2.0, -(max_bias / 2.0) / n_log2);
    return (double) h < n_log2 ? pow(m0, (double) h + 1.0) : pow(m1, 2.0 * ((double) h - n_log2) + 1.0);
}

struct sm_case {
    int64_t        ne[4];
    enum layout    la;
    bool           use_mask;
    enum ggml_type mask_type;
    int64_t        mask_ne[4];
    enum layout    lm;
    float          scale;
    float          max_bias;
    bool           inplace;
    bool           ext; /* through ggml_soft_max_ext (else ggml_soft_max) */
    int            n_threads;
    int            neg_inf_every; /* put -INF in every k-th mask element (0: none) */
    bool           mask_row0;     /* mask out all of row 0 of the mask */
};

static void run_softmax(const struct sm_case * c, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, c->la, GGML_TYPE_F32, c->ne);
    tu_fill(a, &rng, -4.0f, 4.0f);
    struct ggml_tensor * mask = NULL;
    if (c->use_mask) {
        mask = make_tensor(&e, c->lm, c->mask_type, c->mask_ne);
        tu_fill(mask, &rng, -2.0f, 2.0f);
        int64_t k = 0;
        TU_FOR_EACH(mask, i0, i1, i2, i3) {
            if ((c->neg_inf_every > 0 && k % c->neg_inf_every == 0) || (c->mask_row0 && i1 == 0)) {
                tu_set(mask, i0, i1, i2, i3, -INFINITY);
            }
            k++;
        }
    }
    double * va = to_values(a);

    /* reference from the values as stored (mask rounded to its type) */
    const int64_t n = ggml_nelements(a);
    double * want = (double *) malloc((size_t) n * sizeof(double));
    double * w    = (double *) malloc((size_t) c->ne[0] * sizeof(double));
    const double scale = c->ext ? c->scale : 1.0;
    for (int64_t i3 = 0; i3 < c->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < c->ne[2]; i2++) {
            const double slope = c->ext ? ref_slope(c->max_bias, c->ne[2], i2) : 1.0;
            for (int64_t i1 = 0; i1 < c->ne[1]; i1++) {
                double max = -INFINITY;
                for (int64_t i0 = 0; i0 < c->ne[0]; i0++) {
                    double v = va[to_index(a, i0, i1, i2, i3)] * scale;
                    if (mask) {
                        v += slope * tu_get(mask, i0, i1, i2 % c->mask_ne[2], i3 % c->mask_ne[3]);
                    }
                    w[i0] = v;
                    max = v > max ? v : max;
                }
                double sum = 0.0;
                for (int64_t i0 = 0; i0 < c->ne[0]; i0++) {
                    w[i0] = max == -INFINITY ? 0.0 : exp(w[i0] - max);
                    sum += w[i0];
                }
                for (int64_t i0 = 0; i0 < c->ne[0]; i0++) {
                    want[to_index(a, i0, i1, i2, i3)] = sum > 0.0 ? w[i0] / sum : 0.0;
                }
            }
        }
    }
    free(w);

    struct ggml_tensor * r;
    if (c->ext) {
        r = c->inplace ? ggml_soft_max_ext_inplace(e.ctx, a, mask, c->scale, c->max_bias)
                       : ggml_soft_max_ext(e.ctx, a, mask, c->scale, c->max_bias);
    } else {
        r = c->inplace ? ggml_soft_max_inplace(e.ctx, a) : ggml_soft_max(e.ctx, a);
    }
    cr_assert_not_null(r, "soft_max: %s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_SOFT_MAX);
    cr_assert_eq(r->src[0], a);
    cr_assert_eq(r->src[1], mask);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 0), c->ext ? c->scale : 1.0f);
    cr_assert_eq(ggmlx_get_op_params_f32(r, 1), c->ext ? c->max_bias : 0.0f);
    if (c->inplace) {
        cr_assert_eq(r->data, a->data, "in-place result must share a's memory");
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, c->n_threads);

    char what[200];
    snprintf(what, sizeof what, "soft_max%s%s [%lld,%lld,%lld,%lld] layout %d mask %s [%lld,%lld,%lld,%lld] scale %g "
             "max_bias %g threads %d", c->ext ? "_ext" : "", c->inplace ? "_inplace" : "", (long long) c->ne[0],
             (long long) c->ne[1], (long long) c->ne[2], (long long) c->ne[3], (int) c->la,
             mask ? ggml_type_name(c->mask_type) : "none", (long long) c->mask_ne[0], (long long) c->mask_ne[1],
             (long long) c->mask_ne[2], (long long) c->mask_ne[3], (double) c->scale, (double) c->max_bias, c->n_threads);
    to_check(r, want, 1e-5, what);
    if (!c->inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

static struct sm_case plain(int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    struct sm_case c;
    memset(&c, 0, sizeof c);
    c.ne[0] = ne0; c.ne[1] = ne1; c.ne[2] = ne2; c.ne[3] = ne3;
    c.scale = 1.0f;
    c.n_threads = 1;
    return c;
}

static struct sm_case masked(int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, enum ggml_type mt, int64_t m1,
                             int64_t m2, int64_t m3, float scale, float max_bias) {
    struct sm_case c = plain(ne0, ne1, ne2, ne3);
    c.ext = true;
    c.use_mask = true;
    c.mask_type = mt;
    c.mask_ne[0] = ne0; c.mask_ne[1] = m1; c.mask_ne[2] = m2; c.mask_ne[3] = m3;
    c.scale = scale;
    c.max_bias = max_bias;
    return c;
}

Test(soft_max, plain_all_sizes) {
    for (int s = 0; s < TU_N_SIZES; s++) {
        struct sm_case c = plain(TU_SIZES[s], TU_SIZES[s] >= 1023 ? 2 : 3, 2, 1);
        run_softmax(&c, (uint64_t) s);
    }
}

Test(soft_max, ext_scale_without_mask) {
    struct sm_case c = plain(33, 4, 2, 2);
    c.ext = true;
    c.scale = 0.125f;
    run_softmax(&c, 10);
    c.scale = 3.0f;
    run_softmax(&c, 11);
}

Test(soft_max, mask_f32_and_f16_all_sizes) {
    const enum ggml_type mt[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        for (int s = 0; s < TU_N_SIZES; s++) {
            const int64_t rows = TU_SIZES[s] >= 1023 ? 1 : 3;
            struct sm_case c = masked(TU_SIZES[s], rows, 2, 1, mt[t], rows, 2, 1, 0.5f, 0.0f);
            run_softmax(&c, (uint64_t) (100 + t * 10 + s));
        }
    }
}

Test(soft_max, mask_with_extra_rows_and_broadcast_dims) {
    const enum ggml_type mt[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        /* mask ne1 larger than a's: rows are picked by a's row index */
        struct sm_case c = masked(32, 5, 4, 2, mt[t], 8, 4, 2, 1.0f, 0.0f);
        run_softmax(&c, (uint64_t) (200 + t));
        /* one mask for every head and batch */
        c = masked(31, 4, 6, 3, mt[t], 4, 1, 1, 0.7f, 0.0f);
        run_softmax(&c, (uint64_t) (210 + t));
        /* a mask per pair of heads: dim 2 repeats (6 % 2 == 0), dim 3 repeats (2 % 1 == 0) */
        c = masked(33, 3, 6, 2, mt[t], 3, 2, 1, 1.5f, 0.0f);
        run_softmax(&c, (uint64_t) (220 + t));
    }
}

Test(soft_max, alibi_slopes_per_head) {
    /* 6 heads: n_head_log2 = 4, so heads 4 and 5 take the second slope sequence */
    const enum ggml_type mt[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        struct sm_case c = masked(33, 4, 6, 1, mt[t], 4, 1, 1, 0.25f, 8.0f);
        run_softmax(&c, (uint64_t) (300 + t));
        c = masked(32, 3, 8, 2, mt[t], 5, 8, 1, 1.0f, 2.5f);
        run_softmax(&c, (uint64_t) (310 + t));
    }
}

Test(soft_max, neg_inf_mask_gives_exact_zeros) {
    const enum ggml_type mt[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        struct sm_case c = masked(33, 4, 2, 1, mt[t], 4, 2, 1, 1.0f, 0.0f);
        c.neg_inf_every = 3;
        run_softmax(&c, (uint64_t) (400 + t));
    }
}

Test(soft_max, fully_masked_row_gives_zeros_not_nan) {
    const enum ggml_type mt[] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        struct sm_case c = masked(31, 3, 2, 1, mt[t], 3, 1, 1, 1.0f, 0.0f);
        c.mask_row0 = true;
        run_softmax(&c, (uint64_t) (500 + t));
        c.max_bias = 4.0f; /* slope * -INF is still -INF */
        run_softmax(&c, (uint64_t) (510 + t));
    }
}

Test(soft_max, transposed_and_permuted_inputs) {
    struct sm_case c = plain(33, 31, 2, 3);
    c.la = TRANSPOSED;
    run_softmax(&c, 600);
    c.la = PERMUTED;
    c.n_threads = 2;
    run_softmax(&c, 601);
    c = masked(32, 33, 4, 1, GGML_TYPE_F32, 33, 2, 1, 0.5f, 1.0f);
    c.la = PERMUTED;
    c.lm = TRANSPOSED;
    run_softmax(&c, 602);
}

Test(soft_max, inplace_and_threads) {
    struct sm_case c = plain(1023, 6, 1, 1);
    c.inplace = true;
    c.n_threads = 2;
    run_softmax(&c, 700);
    c = masked(4097, 2, 2, 1, GGML_TYPE_F16, 2, 1, 1, 0.3f, 0.0f);
    c.inplace = true;
    c.n_threads = 3;
    run_softmax(&c, 701);
    c = masked(32, 8, 4, 1, GGML_TYPE_F32, 8, 4, 1, 1.0f, 0.0f);
    c.la = TRANSPOSED;
    c.inplace = true;
    run_softmax(&c, 702);
}

/* ---- diag_mask_inf ----------------------------------------------------------------------------- */

static void run_diag(const int64_t ne[4], int n_past, enum layout l, bool inplace, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * a = make_tensor(&e, l, GGML_TYPE_F32, ne);
    tu_fill(a, &rng, -2.0f, 2.0f);
    double * va = to_values(a);
    double * want = (double *) malloc((size_t) ggml_nelements(a) * sizeof(double));
    TU_FOR_EACH(a, i0, i1, i2, i3) {
        const size_t k = to_index(a, i0, i1, i2, i3);
        want[k] = i0 > n_past + i1 ? -INFINITY : va[k];
    }
    struct ggml_tensor * r = inplace ? ggml_diag_mask_inf_inplace(e.ctx, a, n_past) : ggml_diag_mask_inf(e.ctx, a, n_past);
    cr_assert_not_null(r, "diag_mask_inf: %s", ggmlx_last_error());
    cr_assert_eq(r->op, GGML_OP_DIAG_MASK_INF);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), n_past);
    if (inplace) {
        cr_assert_eq(r->data, a->data);
    } else {
        to_alloc(&e, r);
    }
    to_compute(&e, r, n_threads);
    char what[128];
    snprintf(what, sizeof what, "diag_mask_inf%s [%lld,%lld,%lld,%lld] n_past %d layout %d threads %d",
             inplace ? "_inplace" : "", (long long) ne[0], (long long) ne[1], (long long) ne[2], (long long) ne[3], n_past,
             (int) l, n_threads);
    to_check(r, want, 0.0, what);
    if (!inplace) {
        to_check(a, va, 0.0, "input must be unchanged");
    }
    free(want);
    free(va);
    to_end(&e);
}

Test(diag_mask_inf, all_sizes_and_n_past) {
    const int n_past[] = { 0, 1, 5, 40 };
    for (int s = 0; s < TU_N_SIZES; s++) {
        for (int p = 0; p < 4; p++) {
            const int64_t ne[4] = { TU_SIZES[s], TU_SIZES[s] >= 1023 ? 2 : 33, 2, 1 };
            run_diag(ne, n_past[p], CONTIG, false, 1, (uint64_t) (s * 10 + p));
        }
    }
}

Test(diag_mask_inf, strided_inplace_and_threads) {
    const int64_t ne[4] = { 31, 33, 3, 2 };
    run_diag(ne, 2, TRANSPOSED, false, 1, 800);
    run_diag(ne, 0, PERMUTED, false, 2, 801);
    run_diag(ne, 3, CONTIG, true, 2, 802);
    run_diag(ne, 1, TRANSPOSED, true, 1, 803);
    const int64_t big[4] = { 1023, 64, 1, 1 };
    run_diag(big, 7, CONTIG, false, 4, 804);
}

Test(diag_mask_inf, masked_softmax_matches_ext_with_causal_mask) {
    /* the classic pipeline: scale, diag_mask_inf, soft_max, every row normalised over its past */
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(900);
    struct ggml_tensor * a = to_new(&e, GGML_TYPE_F32, 16, 16, 2, 1);
    tu_fill(a, &rng, -3.0f, 3.0f);
    struct ggml_tensor * m = ggml_diag_mask_inf(e.ctx, a, 0);
    to_alloc(&e, m);
    struct ggml_tensor * r = ggml_soft_max(e.ctx, m);
    to_alloc(&e, r);
    to_compute(&e, r, 2);
    TU_FOR_EACH(r, i0, i1, i2, i3) {
        if (i0 > i1) {
            cr_assert_eq(tu_get(r, i0, i1, i2, i3), 0.0, "future position [%lld, %lld] not zero", (long long) i0,
                         (long long) i1);
        }
    }
    for (int64_t i2 = 0; i2 < 2; i2++) {
        for (int64_t i1 = 0; i1 < 16; i1++) {
            double s = 0.0;
            for (int64_t i0 = 0; i0 < 16; i0++) {
                s += tu_get(r, i0, i1, i2, 0);
            }
            cr_assert(fabs(s - 1.0) < 1e-5, "row %lld sums to %g", (long long) i1, s);
        }
    }
    to_end(&e);
}

/* ---- the error contract -------------------------------------------------------------------- */

Test(soft_max, rejects_null_and_bad_types) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_soft_max(ctx, NULL), "ggml_soft_max");
    ggml_free(ctx);

    ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_soft_max_ext(ctx, NULL, NULL, 1.0f, 0.0f), "ggml_soft_max_ext");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a16 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 4);
    to_expect_rejected(ctx, ggml_soft_max_inplace(ctx, a16), "ggml_soft_max_inplace");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * mi = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 8, 4);
    to_expect_rejected(ctx, ggml_soft_max_ext(ctx, a, mi, 1.0f, 0.0f), "ggml_soft_max_ext");
    ggml_free(ctx);

    cr_assert_null(ggml_soft_max(NULL, NULL));
    cr_assert_not_null(ggmlx_last_error());
}

Test(soft_max, rejects_masks_that_do_not_fit) {
    const int64_t bad[][4] = {
        { 7, 4, 1, 1 },  /* ne0 differs */
        { 8, 3, 1, 1 },  /* fewer rows than a */
        { 8, 4, 4, 1 },  /* a's 6 heads are not a multiple of 4 */
        { 8, 4, 1, 2 },  /* a's 3 batches are not a multiple of 2 */
    };
    for (int k = 0; k < 4; k++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * a = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 6, 3);
        struct ggml_tensor * m = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, bad[k][0], bad[k][1], bad[k][2], bad[k][3]);
        to_expect_rejected(ctx, ggml_soft_max_ext(ctx, a, m, 1.0f, 0.0f), "ggml_soft_max_ext");
        ggml_free(ctx);
    }
}

Test(soft_max, rejects_alibi_without_mask) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 8, 4, 4);
    to_expect_rejected(ctx, ggml_soft_max_ext_inplace(ctx, a, NULL, 1.0f, 8.0f), "ggml_soft_max_ext_inplace");
    ggml_free(ctx);
}

Test(diag_mask_inf, rejects_bad_arguments) {
    struct ggml_context * ctx = to_small_ctx();
    to_expect_rejected(ctx, ggml_diag_mask_inf(ctx, NULL, 0), "ggml_diag_mask_inf");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 8);
    to_expect_rejected(ctx, ggml_diag_mask_inf_inplace(ctx, a, -1), "ggml_diag_mask_inf_inplace");
    ggml_free(ctx);

    ctx = to_small_ctx();
    struct ggml_tensor * a16 = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 8, 8);
    to_expect_rejected(ctx, ggml_diag_mask_inf(ctx, a16, 0), "ggml_diag_mask_inf");
    ggml_free(ctx);

    cr_assert_null(ggml_diag_mask_inf(NULL, NULL, 0));
    cr_assert_not_null(ggmlx_last_error());
}
