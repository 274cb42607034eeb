/*
 * test-meta-compute.c -- graphs on a meta backend: products split by rows (nothing to reduce)
 * and along K (partial sums, reduced before anything non-linear reads them, over 2 to 5 devices),
 * empty shares, a fused two-segment weight, the CPU as one of the devices, a graph rebuilt in
 * the memory of the last one, and views (reshape, permute, transpose) and row ops on a split
 * result. Values against double-precision references; reductions against the meta backend's
 * stats. Where the meta device may refuse a layout, a test accepts a clear error, never wrong
 * values.
 */
#include "meta-fixture.h"

#include "ggml-cpu.h"

#include <math.h>
#include <stdlib.h>

#define N_SIMS 5

static void five_sims(void) {
    meta_configure(N_SIMS, 64 * MiB);
}

TestSuite(meta_compute, .init = five_sims, .timeout = 60);

static struct split_table g_tab;

/*
 * y = w x with w [K=16, N=8] split along axis, x [K, 3] MIRRORED: a second weight (each device
 * computes from its own copy, so a copy that was not written shows) or a graph input. Split by
 * rows (axis 1) each device makes its own rows of y: nothing to reduce. Split along K (axis 0)
 * each device makes a partial sum of y; with sqr after it (not linear), the meta backend must
 * reduce before sqr runs.
 */
enum { MM_K = 16, MM_N = 8, MM_M = 3 };

struct mm_case {
    int     axis;
    bool    x_is_weight;
    bool    sqr_after;
    size_t  n_devs;                     /* 0: 2 */
    int64_t lens[N_SIMS];               /* the split of w; all 0: even */
    bool    poison;                     /* NaN in the product's memory before computing */
};

/* the weight and input of the product tests: short periodic patterns of values exact in binary */
static void mm_fill(float w[MM_K * MM_N], float x[MM_K * MM_M]) {
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 5) % 11) * 0.125f - 0.5f;
    }
    for (int i = 0; i < MM_K * MM_M; i++) {
        x[i] = (float) ((i * 3) % 7) * 0.25f - 0.75f;
    }
}

/* (w x)[n, m] in double precision */
static double mm_ref(const float * w, const float * x, int n, int m) {
    double acc = 0.0;
    for (int k = 0; k < MM_K; k++) {
        acc += (double) w[n * MM_K + k] * (double) x[m * MM_K + k];
    }
    return acc;
}

static struct ggmlx_meta_stats run_mul_mat(struct mm_case c) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    mm_fill(w, x);
    struct meta_run r;
    const size_t n_devs = c.n_devs ? c.n_devs : 2;
    const int64_t extent = c.axis == 0 ? MM_K : MM_N;
    bool given = false;
    for (size_t d = 0; d < n_devs; d++) {
        given = given || c.lens[d] != 0;
    }
    meta_run_weights(&r, n_devs, &g_tab, given ? split_list(c.axis, 1, c.lens, n_devs) : split_even(c.axis, n_devs, extent), MM_K,
                     MM_N, w);
    struct ggml_tensor * xt;
    struct ggml_context * xctx = NULL;
    ggml_backend_buffer_t xbuf = NULL;
    if (c.x_is_weight) {
        /* not in the table: the callback's fallback, MIRRORED */
        xctx = meta_ctx_new(1);
        xt = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, MM_K, MM_M);
        ggml_set_name(xt, "x");
        xbuf = ggml_backend_alloc_ctx_tensors_from_buft(xctx, ggml_backend_dev_buffer_type(r.meta));
        cr_assert_not_null(xbuf, "%s", last_err());
        ggml_backend_tensor_set(xt, x, 0, sizeof x);
    } else {
        xt = ggml_new_tensor_2d(r.gctx, GGML_TYPE_F32, MM_K, MM_M);
        ggml_set_name(xt, "x");
        ggml_set_input(xt);
    }
    struct ggml_tensor * prod = ggml_mul_mat(r.gctx, r.w, xt);
    struct ggml_tensor * out = c.sqr_after ? ggml_sqr(r.gctx, prod) : prod;
    meta_run_alloc(&r, out);
    if (!c.x_is_weight) {
        ggml_backend_tensor_set(xt, x, 0, sizeof x);
    }
    if (c.poison) {
        /* a device whose share is empty must still contribute zeros, not what the memory held */
        ggml_backend_tensor_memset(prod, 0xff, 0, ggml_nbytes(prod));
        ggml_backend_tensor_memset(out, 0xff, 0, ggml_nbytes(out));
    }
    ggmlx_meta_reset_stats(r.be);
    cr_assert_eq(ggml_backend_graph_compute(r.be, r.gf), GGML_STATUS_SUCCESS, "%s", last_err());
    ggml_backend_tensor_get(out, y, 0, sizeof y);
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            double want = mm_ref(w, x, n, m);
            if (c.sqr_after) {
                want *= want;
            }
            cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "%zu devices, axis %d, x %s%s: y[%d, %d]", n_devs, c.axis,
                               c.x_is_weight ? "a weight" : "an input", c.sqr_after ? ", sqr" : "", n, m);
        }
    }
    struct ggmlx_meta_stats st;
    cr_assert(ggmlx_meta_get_stats(r.be, &st), "%s", last_err());
    cr_assert_eq(st.n_graphs, 1);
    cr_assert_geq(st.n_subgraphs, 1);
    ggmlx_meta_reset_stats(r.be);
    struct ggmlx_meta_stats zero;
    cr_assert(ggmlx_meta_get_stats(r.be, &zero));
    cr_assert_eq(zero.n_graphs + zero.n_subgraphs + zero.n_allreduce_comm + zero.n_allreduce_generic + zero.bytes_reduced, 0,
                 "reset_stats zeroes every count");
    ggml_backend_buffer_free(xbuf);
    ggml_free(xctx);
    meta_run_free(&r);
    return st;
}

Test(meta_compute, mul_mat_split_by_rows_needs_no_reduction) {
    const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 1, .x_is_weight = true });
    cr_assert_eq(st.n_allreduce_comm + st.n_allreduce_generic, 0, "rows split: nothing to reduce");
    cr_assert_eq(st.bytes_reduced, 0);
    const struct ggmlx_meta_stats st2 = run_mul_mat((struct mm_case) { .axis = 1, .x_is_weight = false, .sqr_after = true });
    cr_assert_eq(st2.n_allreduce_comm + st2.n_allreduce_generic, 0, "rows split, sqr per element: nothing to reduce");
}

/* a partial result read directly: the value read is the sum, however the backend gets there */
Test(meta_compute, mul_mat_split_along_k_reads_the_sum) {
    run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = false });
    run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = true });
}

Test(meta_compute, mul_mat_split_along_k_is_reduced_before_a_nonlinear_op) {
    const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = false, .sqr_after = true });
    cr_assert_geq(st.n_allreduce_generic, 1, "sqr of a partial sum needs a reduction first");
    cr_assert_eq(st.n_allreduce_comm, 0, "SIM devices offer no comm functions");
    cr_assert_geq(st.n_subgraphs, 2, "the graph is cut at the reduction");
    cr_assert_geq(st.bytes_reduced, sizeof(float) * MM_N * MM_M, "at least y's bytes were reduced, %llu counted",
                  (unsigned long long) st.bytes_reduced);
}

/* reductions inside a graph over 3, 4 and 5 devices (folded in when not a power of two) */
Test(meta_compute, mul_mat_along_k_over_three_to_five_devices) {
    for (size_t n = 3; n <= N_SIMS; n++) {
        const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 0, .sqr_after = true, .n_devs = n });
        cr_assert_geq(st.n_allreduce_generic, 1, "%zu devices", n);
    }
}

/* a device with nothing to do along K adds zeros; one with no rows makes none */
Test(meta_compute, mul_mat_with_an_empty_share) {
    run_mul_mat((struct mm_case) { .axis = 0, .sqr_after = true, .lens = { 0, MM_K }, .poison = true });
    run_mul_mat((struct mm_case) { .axis = 0, .sqr_after = true, .n_devs = 3, .lens = { 6, 0, 10 }, .poison = true });
    run_mul_mat((struct mm_case) { .axis = 1, .sqr_after = true, .lens = { 0, MM_N }, .poison = true });
    run_mul_mat((struct mm_case) { .axis = 1, .x_is_weight = true, .n_devs = 3, .lens = { 3, 5, 0 }, .poison = true });
}

/*
 * A fused weight: two segments along its output rows, so each device has rows of both. Upstream
 * computes this (fused QKV); here it may also be refused, but only with an error status and a
 * message, never with wrong values.
 */
Test(meta_compute, mul_mat_with_a_two_segment_weight_is_right_or_refused) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    mm_fill(w, x);
    struct meta_run r;
    meta_run_weights(&r, 2, &g_tab, split_list(1, 2, (const int64_t[]) { 3, 1, 2, 2 }, 4), MM_K, MM_N, w);
    struct ggml_tensor * xt = ggml_new_tensor_2d(r.gctx, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_input(xt);
    struct ggml_tensor * out = ggml_mul_mat(r.gctx, r.w, xt);
    meta_run_alloc(&r, out);
    ggml_backend_tensor_set(xt, x, 0, sizeof x);
    g_n_errors = 0;
    const enum ggml_status st = ggml_backend_graph_compute(r.be, r.gf);
    if (st != GGML_STATUS_SUCCESS) {
        cr_log_info("two-segment weight in a split product refused: %s", last_err());
        ASSERT_ERROR();
        meta_run_free(&r);
        return;
    }
    ggml_backend_tensor_get(out, y, 0, sizeof y);
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            const double want = mm_ref(w, x, n, m);
            cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "y[%d, %d]", n, m);
        }
    }
    meta_run_free(&r);
}

/* the CPU as one of the devices: its part computes on the host, reductions copy to and from it */
Test(meta_compute, sim_and_cpu_device_reduce) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    mm_fill(w, x);
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_list(0, 1, (const int64_t[]) { 6, 10 }, 2));
    ggml_backend_dev_t devs[2] = { sim_dev(0), ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) };
    cr_assert_not_null(devs[1]);
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, split_from_table, &g_tab);
    cr_assert_not_null(meta, "%s", last_err());
    ggml_backend_t be = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(be, "%s", last_err());
    struct ggml_context * wctx = meta_ctx_new(2), * gctx = meta_ctx_new(8);
    struct ggml_tensor * wt = ggml_new_tensor_2d(wctx, GGML_TYPE_F32, MM_K, MM_N);
    ggml_set_name(wt, "w");
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(wbuf, "%s", last_err());
    ggml_backend_tensor_set(wt, w, 0, sizeof w);
    struct ggml_tensor * xt = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_input(xt);
    struct ggml_tensor * out = ggml_sqr(gctx, ggml_mul_mat(gctx, wt, xt));
    ggml_set_output(out);
    struct ggml_cgraph * gf = ggml_new_graph(gctx);
    ggml_build_forward_expand(gf, out);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(meta));
    cr_assert(ggml_gallocr_alloc_graph(ga, gf), "%s", last_err());
    ggml_backend_tensor_set(xt, x, 0, sizeof x);
    cr_assert_eq(ggml_backend_graph_compute(be, gf), GGML_STATUS_SUCCESS, "%s", last_err());
    ggml_backend_tensor_get(out, y, 0, sizeof y);
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            const double want = mm_ref(w, x, n, m);
            cr_assert_float_eq(y[m * MM_N + n], want * want, 1e-5, "y[%d, %d]", n, m);
        }
    }
    struct ggmlx_meta_stats st;
    cr_assert(ggmlx_meta_get_stats(be, &st));
    cr_assert_geq(st.n_allreduce_generic, 1);
    ggml_gallocr_free(ga);
    ggml_backend_buffer_free(wbuf);
    ggml_free(gctx);
    ggml_free(wctx);
    ggml_backend_free(be);
}

/*
 * Graphs are rebuilt every step, often in the same context memory, so a tensor struct of the next
 * graph can sit where a split result of the last one sat. What the meta buffer remembers about
 * the old tensor must not apply to the new one: here an input of graph 2 takes the place of
 * graph 1's row-split product, and is then used whole.
 */
Test(meta_compute, a_new_graph_in_reused_context_memory_starts_clean) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    mm_fill(w, x);
    struct meta_run r;
    meta_run_weights(&r, 2, &g_tab, split_even(1, 2, MM_N), MM_K, MM_N, w);
    static uint8_t mem[64 * 1024];
    const struct ggml_init_params ip = { sizeof mem, mem, true };
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(r.meta));
    cr_assert_not_null(ga);

    /* graph 1: y = w x, y split by rows */
    struct ggml_context * c1 = ggml_init(ip);
    struct ggml_tensor * x1 = ggml_new_tensor_2d(c1, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_input(x1);
    struct ggml_tensor * y1 = ggml_mul_mat(c1, r.w, x1);
    ggml_set_output(y1);
    /* a large second input, so that graph 2 fits in the same compute buffer */
    struct ggml_tensor * big = ggml_new_tensor_2d(c1, GGML_TYPE_F32, 256, 64);
    ggml_set_input(big);
    struct ggml_tensor * s1 = ggml_sum(c1, big);
    ggml_set_output(s1);
    struct ggml_cgraph * g1 = ggml_new_graph_custom(c1, 16, false);
    ggml_build_forward_expand(g1, y1);
    ggml_build_forward_expand(g1, s1);
    cr_assert(ggml_gallocr_alloc_graph(ga, g1), "%s", last_err());
    const size_t size1 = ggml_gallocr_get_buffer_size(ga, 0);
    ggml_backend_tensor_set(x1, x, 0, sizeof x);
    ggml_backend_tensor_memset(big, 0, 0, ggml_nbytes(big));
    cr_assert_eq(ggml_backend_graph_compute(r.be, g1), GGML_STATUS_SUCCESS, "%s", last_err());
    const struct ggml_tensor * old_y = y1;
    ggml_free(c1);

    /* graph 2 in the same memory: a first input, then u where y was, then z = w u */
    struct ggml_context * c2 = ggml_init(ip);
    struct ggml_tensor * a2 = ggml_new_tensor_2d(c2, GGML_TYPE_F32, MM_N, MM_M);
    ggml_set_input(a2);
    struct ggml_tensor * u2 = ggml_new_tensor_2d(c2, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_input(u2);
    cr_assert_eq((const void *) u2, (const void *) old_y, "the test needs u to take y's place");
    struct ggml_tensor * z2 = ggml_add(c2, ggml_mul_mat(c2, r.w, u2), a2);
    ggml_set_output(z2);
    struct ggml_cgraph * g2 = ggml_new_graph_custom(c2, 16, false);
    ggml_build_forward_expand(g2, z2);
    cr_assert(ggml_gallocr_alloc_graph(ga, g2), "%s", last_err());
    cr_assert_eq(ggml_gallocr_get_buffer_size(ga, 0), size1, "graph 2 must reuse graph 1's compute buffer");
    float a[MM_N * MM_M];
    for (int i = 0; i < MM_N * MM_M; i++) {
        a[i] = 0.5f * (float) (i % 5);
    }
    ggml_backend_tensor_set(a2, a, 0, sizeof a);
    ggml_backend_tensor_set(u2, x, 0, sizeof x);
    cr_assert_eq(ggml_backend_graph_compute(r.be, g2), GGML_STATUS_SUCCESS, "%s", last_err());
    ggml_backend_tensor_get(z2, y, 0, sizeof y);
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            const double want = a[m * MM_N + n] + mm_ref(w, x, n, m);
            cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "z[%d, %d]", n, m);
        }
    }
    ggml_free(c2);
    ggml_gallocr_free(ga);
    meta_run_free(&r);
}

/*
 * Forgetting a tensor's split must leave every other recorded split in place. Round after round
 * a graph is rebuilt in the same memory with a shifting number of padding inputs in front, so
 * old row-split products' addresses land on new inputs and products alike, and the table drops
 * entries among live ones. Every value is checked against a double-precision reference.
 */
Test(meta_compute, many_graphs_in_reused_memory_keep_each_products_split) {
    enum { N_PROD = 24, N_ROUNDS = 24 };
    float w[MM_K * MM_N], x[N_PROD][MM_K * MM_M], y[MM_N * MM_M];
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 7) % 13) * 0.125f - 0.75f;
    }
    struct meta_run r;
    meta_run_weights(&r, 2, &g_tab, split_even(1, 2, MM_N), MM_K, MM_N, w);
    static uint8_t mem[64 * 1024];
    const struct ggml_init_params ip = { sizeof mem, mem, true };
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(r.meta));
    cr_assert_not_null(ga);
    for (int round = 0; round < N_ROUNDS; round++) {
        struct ggml_context * c = ggml_init(ip);
        for (int p = 0; p < round % 3; p++) {
            ggml_set_input(ggml_new_tensor_1d(c, GGML_TYPE_F32, 4));
        }
        struct ggml_cgraph * g = ggml_new_graph_custom(c, 4 * N_PROD, false);
        struct ggml_tensor * xt[N_PROD], * yt[N_PROD];
        for (int i = 0; i < N_PROD; i++) {
            xt[i] = ggml_new_tensor_2d(c, GGML_TYPE_F32, MM_K, MM_M);
            ggml_set_input(xt[i]);
            yt[i] = ggml_mul_mat(c, r.w, xt[i]);
            ggml_set_output(yt[i]);
            ggml_build_forward_expand(g, yt[i]);
        }
        cr_assert(ggml_gallocr_alloc_graph(ga, g), "round %d: %s", round, last_err());
        for (int i = 0; i < N_PROD; i++) {
            for (int j = 0; j < MM_K * MM_M; j++) {
                x[i][j] = (float) ((j * 3 + i * 5 + round) % 9) * 0.25f - 1.0f;
            }
            ggml_backend_tensor_set(xt[i], x[i], 0, sizeof x[i]);
        }
        cr_assert_eq(ggml_backend_graph_compute(r.be, g), GGML_STATUS_SUCCESS, "round %d: %s", round, last_err());
        for (int i = 0; i < N_PROD; i++) {
            ggml_backend_tensor_get(yt[i], y, 0, sizeof y);
            for (int m = 0; m < MM_M; m++) {
                for (int n = 0; n < MM_N; n++) {
                    const double want = mm_ref(w, x[i], n, m);
                    cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "round %d, product %d, y[%d, %d]", round, i, n, m);
                }
            }
        }
        ggml_free(c);
    }
    ggml_gallocr_free(ga);
    meta_run_free(&r);
}

/* ---- views and row ops on a split result ------------------------------------------------------------ */

/* y = w x split by rows (axis 0 of y), then op; the result read whole against ref */
typedef struct ggml_tensor * (*after_fn)(struct ggml_context * ctx, struct ggml_tensor * y);

/* reference of what after_fn computes, from y (MM_N x MM_M, row-major by column m) */
typedef void (*after_ref_fn)(const double * y, double * out);

static void check_after_rows_split(after_fn fn, after_ref_fn ref, const char * what) {
    float w[MM_K * MM_N], x[MM_K * MM_M];
    double yr[MM_N * MM_M], want[MM_N * MM_M];
    mm_fill(w, x);
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            yr[m * MM_N + n] = mm_ref(w, x, n, m);
        }
    }
    ref(yr, want);
    struct meta_run r;
    meta_run_weights(&r, 2, &g_tab, split_even(1, 2, MM_N), MM_K, MM_N, w);
    struct ggml_tensor * xt = ggml_new_tensor_2d(r.gctx, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_input(xt);
    struct ggml_tensor * out = fn(r.gctx, ggml_mul_mat(r.gctx, r.w, xt));
    cr_assert_eq(ggml_nelements(out), MM_N * MM_M);
    meta_run_alloc(&r, out);
    ggml_backend_tensor_set(xt, x, 0, sizeof x);
    g_n_errors = 0;
    const enum ggml_status st = ggml_backend_graph_compute(r.be, r.gf);
    if (st != GGML_STATUS_SUCCESS) {
        cr_log_info("%s on a row-split result refused: %s", what, last_err());
        ASSERT_ERROR();
    } else {
        float got[MM_N * MM_M];
        cr_assert(ggml_is_contiguous(out));
        ggml_backend_tensor_get(out, got, 0, sizeof got);
        for (int i = 0; i < MM_N * MM_M; i++) {
            cr_assert_float_eq(got[i], want[i], 1e-5, "%s: element %d", what, i);
        }
    }
    meta_run_free(&r);
}

/* y [8, 3] -> [2, 4, 3] -> permute to [4, 3, 2] (new axes of 0, 1, 2: 2, 0, 1) -> cont */
static struct ggml_tensor * reshape_permute_cont(struct ggml_context * ctx, struct ggml_tensor * y) {
    struct ggml_tensor * t = ggml_reshape_3d(ctx, y, 2, MM_N / 2, MM_M);
    return ggml_cont(ctx, ggml_permute(ctx, t, 2, 0, 1, 3));
}

static void reshape_permute_cont_ref(const double * y, double * out) {
    /* t[a, b, m] = y[a + 2 b, m]; out[b, m, a] = t[a, b, m] with out laid out [4, 3, 2] */
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < MM_N / 2; b++) {
            for (int m = 0; m < MM_M; m++) {
                out[b + (MM_N / 2) * (m + MM_M * a)] = y[(a + 2 * b) + MM_N * m];
            }
        }
    }
}

Test(meta_compute, reshape_permute_cont_of_a_row_split_result) {
    check_after_rows_split(reshape_permute_cont, reshape_permute_cont_ref, "reshape, permute, cont");
}

/* softmax along axis 0, the split axis: each row is spread over both devices */
static struct ggml_tensor * softmax_rows(struct ggml_context * ctx, struct ggml_tensor * y) {
    return ggml_soft_max(ctx, y);
}

static void softmax_rows_ref(const double * y, double * out) {
    for (int m = 0; m < MM_M; m++) {
        double mx = -INFINITY, s = 0;
        for (int n = 0; n < MM_N; n++) {
            mx = fmax(mx, y[m * MM_N + n]);
        }
        for (int n = 0; n < MM_N; n++) {
            s += exp(y[m * MM_N + n] - mx);
        }
        for (int n = 0; n < MM_N; n++) {
            out[m * MM_N + n] = exp(y[m * MM_N + n] - mx) / s;
        }
    }
}

Test(meta_compute, softmax_across_the_split_axis_is_right_or_refused) {
    check_after_rows_split(softmax_rows, softmax_rows_ref, "softmax");
}

/* a transposed copy is split along axis 1; scaled there and transposed back, the split returns to axis 0 */
static struct ggml_tensor * transpose_scale_back(struct ggml_context * ctx, struct ggml_tensor * y) {
    struct ggml_tensor * t = ggml_cont(ctx, ggml_transpose(ctx, y)); /* [3, 8], split along axis 1 */
    return ggml_cont(ctx, ggml_transpose(ctx, ggml_scale(ctx, t, 2.0f)));
}

static void transpose_scale_back_ref(const double * y, double * out) {
    for (int i = 0; i < MM_N * MM_M; i++) {
        out[i] = 2.0 * y[i];
    }
}

Test(meta_compute, transpose_there_and_back) {
    check_after_rows_split(transpose_scale_back, transpose_scale_back_ref, "transpose, scale, transpose");
}

/*
 * Two names of one partial sum P = w x (w split along K): a view V of P made before P is
 * reduced. Whichever is reduced first, the other must not be reduced again (its values would
 * be added up n times over): (a) V = P as one row, sqr(P) then sqr(V); (b) V = the first half of
 * P's columns, sqr(V) then sqr(P). One reduction of all of P, and both results are the squares.
 */
static void check_two_names_of_a_partial_sum(size_t n_devs, bool half_view_first) {
    float w[MM_K * MM_N], x[MM_K * MM_M];
    mm_fill(w, x);
    struct meta_run r;
    meta_run_weights(&r, n_devs, &g_tab, split_even(0, n_devs, MM_K), MM_K, MM_N, w);
    struct ggml_tensor * xt = ggml_new_tensor_2d(r.gctx, GGML_TYPE_F32, MM_K, MM_M);
    ggml_set_name(xt, "x");
    ggml_set_input(xt);
    struct ggml_tensor * prod = ggml_mul_mat(r.gctx, r.w, xt);
    struct ggml_tensor * v = half_view_first ? ggml_view_2d(r.gctx, prod, MM_N, 1, prod->nb[1], 0)
                                             : ggml_reshape_1d(r.gctx, prod, MM_N * MM_M);
    struct ggml_tensor * sq_p = ggml_sqr(r.gctx, prod);
    struct ggml_tensor * sq_v = ggml_sqr(r.gctx, v);
    ggml_set_output(sq_p);
    ggml_set_output(sq_v);
    r.gf = ggml_new_graph(r.gctx);
    ggml_build_forward_expand(r.gf, v); /* V's node comes before any reduction */
    ggml_build_forward_expand(r.gf, half_view_first ? sq_v : sq_p);
    ggml_build_forward_expand(r.gf, half_view_first ? sq_p : sq_v);
    r.ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(r.meta));
    cr_assert(ggml_gallocr_alloc_graph(r.ga, r.gf), "gallocr: %s", last_err());
    ggml_backend_tensor_set(xt, x, 0, sizeof x);
    ggmlx_meta_reset_stats(r.be);
    cr_assert_eq(ggml_backend_graph_compute(r.be, r.gf), GGML_STATUS_SUCCESS, "%s", last_err());
    float yp[MM_N * MM_M], yv[MM_N * MM_M];
    ggml_backend_tensor_get(sq_p, yp, 0, ggml_nbytes(sq_p));
    ggml_backend_tensor_get(sq_v, yv, 0, ggml_nbytes(sq_v));
    for (int m = 0; m < MM_M; m++) {
        for (int n = 0; n < MM_N; n++) {
            const double y = mm_ref(w, x, n, m);
            cr_assert_float_eq(yp[m * MM_N + n], y * y, 1e-5, "%zu devices, sqr(P)[%d, %d]", n_devs, n, m);
            if (!half_view_first || m == 0) {
                cr_assert_float_eq(yv[m * MM_N + n], y * y, 1e-5, "%zu devices, sqr(V)[%d, %d]", n_devs, n, m);
            }
        }
    }
    struct ggmlx_meta_stats st;
    cr_assert(ggmlx_meta_get_stats(r.be, &st), "%s", last_err());
    cr_assert_eq(st.n_allreduce_generic, 1, "%zu devices: P is reduced once, all of it", n_devs);
    cr_assert_eq(st.bytes_reduced, sizeof(float) * MM_N * MM_M);
    meta_run_free(&r);
}

Test(meta_compute, a_view_of_a_partial_sum_is_not_reduced_twice) {
    for (size_t n = 2; n <= 3; n++) {
        check_two_names_of_a_partial_sum(n, false);
        check_two_names_of_a_partial_sum(n, true);
    }
}
