/*
 * test-meta-allreduce.c -- the generic all-reduce (ggmlx_meta_allreduce_generic) over 1 to 5 SIM
 * backends: every tensor ends as the element-wise sum, in F32, F16 and BF16, for power-of-two and
 * other counts; bad arguments are errors that change no tensor. Then a meta backend's events
 * (recorded after a computation, waited for by the CPU backend and by the host) and, through
 * small computations, the meta backend's reductions as its stats count them.
 */
#include "meta-fixture.h"

#include "ggml-cpu.h"

#include <math.h>
#include <stdlib.h>

#define N_SIMS 5

static void five_sims(void) {
    meta_configure(N_SIMS, 64 * MiB);
}

TestSuite(meta_allreduce, .init = five_sims, .timeout = 60);

/* ---- one tensor per backend ------------------------------------------------------------------------ */

struct per_dev {
    size_t                n;
    ggml_backend_t        be[N_SIMS];
    struct ggml_context * ctx[N_SIMS];
    ggml_backend_buffer_t buf[N_SIMS];
    struct ggml_tensor  * t[N_SIMS];
};

/* tensors [ne0, ne1] of type on SIM0..SIMn-1, each allocated by its own backend */
static void per_dev_new(struct per_dev * p, size_t n, enum ggml_type type, int64_t ne0, int64_t ne1) {
    memset(p, 0, sizeof *p);
    p->n = n;
    for (size_t i = 0; i < n; i++) {
        p->be[i] = sim_backend((int) i);
        p->ctx[i] = meta_ctx_new(4);
        p->t[i] = ggml_new_tensor_2d(p->ctx[i], type, ne0, ne1);
        ggml_format_name(p->t[i], "x%zu", i);
        p->buf[i] = ggml_backend_alloc_ctx_tensors(p->ctx[i], p->be[i]);
        cr_assert_not_null(p->buf[i], "SIM%zu: %s", i, last_err());
    }
}

static void per_dev_free(struct per_dev * p) {
    for (size_t i = 0; i < p->n; i++) {
        ggml_backend_buffer_free(p->buf[i]);
        ggml_free(p->ctx[i]);
        ggml_backend_free(p->be[i]);
    }
}

static void set_floats(struct ggml_tensor * t, const float * x) {
    const int64_t n = ggml_nelements(t);
    void * raw = malloc(ggml_nbytes(t));
    cr_assert_not_null(raw);
    switch (t->type) {
        case GGML_TYPE_F32: memcpy(raw, x, ggml_nbytes(t)); break;
        case GGML_TYPE_F16: ggml_fp32_to_fp16_row(x, raw, n); break;
        case GGML_TYPE_BF16: ggml_fp32_to_bf16_row_ref(x, raw, n); break;
        default: cr_assert_fail("type %s", ggml_type_name(t->type));
    }
    ggml_backend_tensor_set(t, raw, 0, ggml_nbytes(t));
    free(raw);
}

static float * get_floats(const struct ggml_tensor * t) {
    const int64_t n = ggml_nelements(t);
    void * raw = malloc(ggml_nbytes(t));
    float * x = malloc(sizeof(float) * (size_t) n);
    cr_assert(raw != NULL && x != NULL);
    ggml_backend_tensor_get(t, raw, 0, ggml_nbytes(t));
    switch (t->type) {
        case GGML_TYPE_F32: memcpy(x, raw, ggml_nbytes(t)); break;
        case GGML_TYPE_F16: ggml_fp16_to_fp32_row(raw, x, n); break;
        case GGML_TYPE_BF16: ggml_bf16_to_fp32_row(raw, x, n); break;
        default: cr_assert_fail("type %s", ggml_type_name(t->type));
    }
    free(raw);
    return x;
}

/*
 * Device i's value at j. F32: distinct fractions. F16/BF16: small integers, whose sums over five
 * devices are exact in both types, so the check can be exact there.
 */
static float value_of(enum ggml_type type, size_t i, int64_t j) {
    if (type == GGML_TYPE_F32) {
        return 0.37f * (float) (i + 1) + 0.011f * (float) j - 0.5f * (float) (j % 13) + (float) (i * 1000);
    }
    return (float) ((j * 7 + (int64_t) i * 3 + (int64_t) (i * i)) % 17) - 8.0f;
}

static void fill_all(struct per_dev * p) {
    const int64_t ne = ggml_nelements(p->t[0]);
    float * x = malloc(sizeof(float) * (size_t) ne);
    cr_assert_not_null(x);
    for (size_t i = 0; i < p->n; i++) {
        for (int64_t j = 0; j < ne; j++) {
            x[j] = value_of(p->t[i]->type, i, j);
        }
        set_floats(p->t[i], x);
    }
    free(x);
}

/* every tensor holds the sum over the n devices */
static void assert_all_summed(const struct per_dev * p) {
    const enum ggml_type type = p->t[0]->type;
    const int64_t ne = ggml_nelements(p->t[0]);
    for (size_t i = 0; i < p->n; i++) {
        float * got = get_floats(p->t[i]);
        for (int64_t j = 0; j < ne; j++) {
            double want = 0, mag = 0;
            for (size_t k = 0; k < p->n; k++) {
                want += value_of(type, k, j);
                mag += fabs(value_of(type, k, j));
            }
            const double tol = type == GGML_TYPE_F32 ? 4e-7 * mag * (double) p->n + 1e-6 : 0.0;
            const double g = got[j];
            if (fabs(g - want) > tol) {
                free(got);
                cr_assert_fail("n=%zu %s: device %zu element %lld is %.9g, want %.9g", p->n, ggml_type_name(type), i,
                               (long long) j, g, want);
            }
        }
        free(got);
    }
}

/* every tensor holds n times the sum (after a second reduction of the reduced tensors) */
static void assert_all_summed_twice(const struct per_dev * p) {
    const enum ggml_type type = p->t[0]->type;
    const int64_t ne = ggml_nelements(p->t[0]);
    for (size_t i = 0; i < p->n; i++) {
        float * got = get_floats(p->t[i]);
        for (int64_t j = 0; j < ne; j++) {
            double once = 0;
            for (size_t k = 0; k < p->n; k++) {
                once += value_of(type, k, j);
            }
            /* F16/BF16: |n * sum| <= 5 * 40, an integer both types hold exactly */
            const double want = (double) p->n * once;
            const double tol = type == GGML_TYPE_F32 ? 1e-6 * fabs(want) * (double) p->n + 1e-5 : 0.0;
            const double g = got[j];
            if (fabs(g - want) > tol) {
                free(got);
                cr_assert_fail("second reduction, n=%zu %s: device %zu element %lld is %.9g, want %.9g", p->n,
                               ggml_type_name(type), i, (long long) j, g, want);
            }
        }
        free(got);
    }
}

static void check_sum(size_t n, enum ggml_type type, int64_t ne0, int64_t ne1) {
    struct per_dev p;
    per_dev_new(&p, n, type, ne0, ne1);
    fill_all(&p);
    const enum ggml_status st = ggmlx_meta_allreduce_generic(p.be, p.t, n);
    cr_assert_eq(st, GGML_STATUS_SUCCESS, "n=%zu %s: status %d: %s", n, ggml_type_name(type), (int) st, last_err());
    ASSERT_NO_ERROR();
    assert_all_summed(&p);
    /* again on the reduced tensors: nothing of the first run (scratch, pairing) may leak into it */
    cr_assert_eq(ggmlx_meta_allreduce_generic(p.be, p.t, n), GGML_STATUS_SUCCESS, "%s", last_err());
    assert_all_summed_twice(&p);
    per_dev_free(&p);
}

Test(meta_allreduce, f32_one_to_five_devices) {
    for (size_t n = 1; n <= N_SIMS; n++) {
        check_sum(n, GGML_TYPE_F32, 37, 3);
    }
}

Test(meta_allreduce, f16_one_to_five_devices) {
    for (size_t n = 1; n <= N_SIMS; n++) {
        check_sum(n, GGML_TYPE_F16, 41, 2);
    }
}

Test(meta_allreduce, bf16_one_to_five_devices) {
    for (size_t n = 1; n <= N_SIMS; n++) {
        check_sum(n, GGML_TYPE_BF16, 9, 5);
    }
}

/* more than fits a small scratch at once, over a power of two and an odd count */
Test(meta_allreduce, f32_larger_tensors) {
    check_sum(4, GGML_TYPE_F32, 1 << 16, 5);
    check_sum(3, GGML_TYPE_F32, 4099, 33);
}

Test(meta_allreduce, one_element) {
    check_sum(2, GGML_TYPE_F32, 1, 1);
    check_sum(5, GGML_TYPE_F16, 1, 1);
}

/* ---- bad arguments: an error status, a message, and no tensor changed ---------------------------- */

struct snapshot {
    size_t  n;
    float * v[N_SIMS];
};

static struct snapshot snap(const struct per_dev * p) {
    struct snapshot s = { p->n, { 0 } };
    for (size_t i = 0; i < p->n; i++) {
        s.v[i] = get_floats(p->t[i]);
    }
    return s;
}

static void assert_unchanged(const struct per_dev * p, struct snapshot * s, const char * what) {
    for (size_t i = 0; i < p->n; i++) {
        float * now = get_floats(p->t[i]);
        cr_assert_arr_eq(now, s->v[i], sizeof(float) * (size_t) ggml_nelements(p->t[i]), "%s: tensor %zu changed", what, i);
        free(now);
        free(s->v[i]);
    }
}

static void assert_refused(enum ggml_status st, const char * what) {
    cr_assert_neq(st, GGML_STATUS_SUCCESS, "%s: accepted", what);
    cr_assert_not_null(ggmlx_last_error(), "%s: no error recorded", what);
    cr_assert_gt(g_n_errors, 0, "%s: the error is not logged", what);
    ggmlx_clear_last_error();
    g_n_errors = 0;
}

Test(meta_allreduce, bad_counts) {
    struct per_dev p;
    per_dev_new(&p, 2, GGML_TYPE_F32, 8, 2);
    fill_all(&p);
    struct snapshot s = snap(&p);
    assert_refused(ggmlx_meta_allreduce_generic(p.be, p.t, 0), "n = 0");

    ggml_backend_t be[GGML_BACKEND_META_MAX_DEVICES + 1];
    struct ggml_tensor * ts[GGML_BACKEND_META_MAX_DEVICES + 1];
    for (size_t i = 0; i < GGML_BACKEND_META_MAX_DEVICES + 1; i++) {
        be[i] = p.be[i % 2];
        ts[i] = p.t[i % 2];
    }
    assert_refused(ggmlx_meta_allreduce_generic(be, ts, GGML_BACKEND_META_MAX_DEVICES + 1), "n = 17");
    assert_unchanged(&p, &s, "bad counts");
    per_dev_free(&p);
}

Test(meta_allreduce, null_arguments) {
    struct per_dev p;
    per_dev_new(&p, 3, GGML_TYPE_F32, 8, 2);
    fill_all(&p);
    struct snapshot s = snap(&p);
    assert_refused(ggmlx_meta_allreduce_generic(NULL, p.t, 3), "backends NULL");
    assert_refused(ggmlx_meta_allreduce_generic(p.be, NULL, 3), "tensors NULL");
    struct ggml_tensor * with_null[3] = { p.t[0], p.t[1], NULL };
    assert_refused(ggmlx_meta_allreduce_generic(p.be, with_null, 3), "a NULL tensor");
    ggml_backend_t with_null_be[3] = { p.be[0], NULL, p.be[2] };
    assert_refused(ggmlx_meta_allreduce_generic(with_null_be, p.t, 3), "a NULL backend");
    assert_unchanged(&p, &s, "NULL arguments");
    per_dev_free(&p);
}

/* replaces device k's tensor by one of another shape or type on the same backend */
static struct ggml_tensor * odd_one(struct per_dev * p, size_t k, enum ggml_type type, int64_t ne0, int64_t ne1,
                                    struct ggml_context ** ctx, ggml_backend_buffer_t * buf) {
    *ctx = meta_ctx_new(2);
    struct ggml_tensor * t = ggml_new_tensor_2d(*ctx, type, ne0, ne1);
    ggml_set_name(t, "odd");
    *buf = ggml_backend_alloc_ctx_tensors(*ctx, p->be[k]);
    cr_assert_not_null(*buf, "%s", last_err());
    const int64_t ne = ggml_nelements(t);
    float * x = malloc(sizeof(float) * (size_t) ne);
    cr_assert_not_null(x);
    for (int64_t j = 0; j < ne; j++) {
        x[j] = (float) j;
    }
    set_floats(t, x);
    free(x);
    return t;
}

static void check_odd_one(enum ggml_type type, int64_t ne0, int64_t ne1, const char * what) {
    struct per_dev p;
    per_dev_new(&p, 3, GGML_TYPE_F32, 8, 4);
    fill_all(&p);
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * odd = odd_one(&p, 1, type, ne0, ne1, &ctx, &buf);
    float * odd_before = get_floats(odd);
    struct snapshot s = snap(&p);
    struct ggml_tensor * ts[3] = { p.t[0], odd, p.t[2] };
    assert_refused(ggmlx_meta_allreduce_generic(p.be, ts, 3), what);
    assert_unchanged(&p, &s, what);
    float * odd_after = get_floats(odd);
    cr_assert_arr_eq(odd_after, odd_before, sizeof(float) * (size_t) ggml_nelements(odd), "%s: the odd tensor changed", what);
    free(odd_before);
    free(odd_after);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    per_dev_free(&p);
}

Test(meta_allreduce, mismatched_element_count) {
    check_odd_one(GGML_TYPE_F32, 8, 5, "[8,4] with [8,5]");
}

Test(meta_allreduce, mismatched_shape_same_count) {
    check_odd_one(GGML_TYPE_F32, 4, 8, "[8,4] with [4,8]");
}

Test(meta_allreduce, mismatched_type) {
    check_odd_one(GGML_TYPE_F16, 8, 4, "F32 with F16");
}

Test(meta_allreduce, non_float_type) {
    struct per_dev p;
    per_dev_new(&p, 2, GGML_TYPE_I32, 8, 2);
    int32_t a[16], b[16], got[16];
    for (int j = 0; j < 16; j++) {
        a[j] = j;
        b[j] = 100 + j;
    }
    ggml_backend_tensor_set(p.t[0], a, 0, sizeof a);
    ggml_backend_tensor_set(p.t[1], b, 0, sizeof b);
    assert_refused(ggmlx_meta_allreduce_generic(p.be, p.t, 2), "I32");
    ggml_backend_tensor_get(p.t[0], got, 0, sizeof got);
    cr_assert_arr_eq(got, a, sizeof a);
    ggml_backend_tensor_get(p.t[1], got, 0, sizeof got);
    cr_assert_arr_eq(got, b, sizeof b);
    per_dev_free(&p);
}

Test(meta_allreduce, tensor_not_on_its_backends_device) {
    struct per_dev p;
    per_dev_new(&p, 3, GGML_TYPE_F32, 8, 2);
    fill_all(&p);
    struct snapshot s = snap(&p);
    struct ggml_tensor * swapped[3] = { p.t[1], p.t[0], p.t[2] };
    assert_refused(ggmlx_meta_allreduce_generic(p.be, swapped, 3), "tensors 0 and 1 swapped");
    /* a CPU backend cannot reach SIM memory either */
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    ggml_backend_t with_cpu[3] = { p.be[0], cpu, p.be[2] };
    assert_refused(ggmlx_meta_allreduce_generic(with_cpu, p.t, 3), "a CPU backend for a SIM tensor");
    assert_unchanged(&p, &s, "misplaced tensors");
    ggml_backend_free(cpu);
    per_dev_free(&p);
}

Test(meta_allreduce, non_contiguous_tensors) {
    struct per_dev p;
    memset(&p, 0, sizeof p);
    p.n = 2;
    struct ggml_tensor * tr[2];
    for (size_t i = 0; i < 2; i++) {
        p.be[i] = sim_backend((int) i);
        p.ctx[i] = meta_ctx_new(4);
        p.t[i] = ggml_new_tensor_2d(p.ctx[i], GGML_TYPE_F32, 8, 4);
        tr[i] = ggml_transpose(p.ctx[i], p.t[i]);
        p.buf[i] = ggml_backend_alloc_ctx_tensors(p.ctx[i], p.be[i]);
        cr_assert_not_null(p.buf[i], "%s", last_err());
        cr_assert_not(ggml_is_contiguous(tr[i]));
    }
    fill_all(&p);
    struct snapshot s = snap(&p);
    assert_refused(ggmlx_meta_allreduce_generic(p.be, tr, 2), "transposed views");
    assert_unchanged(&p, &s, "transposed views");
    per_dev_free(&p);
}

Test(meta_allreduce, unallocated_tensor) {
    struct per_dev p;
    per_dev_new(&p, 2, GGML_TYPE_F32, 8, 2);
    fill_all(&p);
    struct snapshot s = snap(&p);
    struct ggml_context * ctx = meta_ctx_new(1);
    struct ggml_tensor * bare = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 2);
    struct ggml_tensor * ts[2] = { p.t[0], bare };
    assert_refused(ggmlx_meta_allreduce_generic(p.be, ts, 2), "an unallocated tensor");
    assert_unchanged(&p, &s, "an unallocated tensor");
    ggml_free(ctx);
    per_dev_free(&p);
}

/* ---- a meta backend: events and reductions -------------------------------------------------------- */

static struct split_table g_tab;

/* x [16, 6] F32 in a meta weight buffer split as state; y = op(x) on the meta backend */
struct meta_run {
    ggml_backend_dev_t    meta;
    ggml_backend_t        be;
    struct ggml_context * wctx, * gctx;
    ggml_backend_buffer_t wbuf;
    struct ggml_tensor  * w;
    struct ggml_cgraph  * gf;
    ggml_gallocr_t        ga;
};

static void meta_run_weights(struct meta_run * r, size_t n_devs, struct ggml_backend_meta_split_state state, int64_t ne0,
                             int64_t ne1, const float * w) {
    memset(r, 0, sizeof *r);
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", state);
    r->meta = meta_over_sims(n_devs, &g_tab);
    r->be = ggml_backend_dev_init(r->meta, NULL);
    cr_assert_not_null(r->be, "%s", last_err());
    r->wctx = meta_ctx_new(2);
    r->w = ggml_new_tensor_2d(r->wctx, GGML_TYPE_F32, ne0, ne1);
    ggml_set_name(r->w, "w");
    r->wbuf = ggml_backend_alloc_ctx_tensors_from_buft(r->wctx, ggml_backend_dev_buffer_type(r->meta));
    cr_assert_not_null(r->wbuf, "%s", last_err());
    ggml_backend_buffer_set_usage(r->wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_tensor_set(r->w, w, 0, ggml_nbytes(r->w));
    r->gctx = meta_ctx_new(16);
}

/* allocates gf (built by the caller in r->gctx) in a meta compute buffer */
static void meta_run_alloc(struct meta_run * r, struct ggml_tensor * out) {
    ggml_set_output(out);
    r->gf = ggml_new_graph(r->gctx);
    ggml_build_forward_expand(r->gf, out);
    r->ga = ggml_gallocr_new(ggml_backend_dev_buffer_type(r->meta));
    cr_assert_not_null(r->ga);
    cr_assert(ggml_gallocr_alloc_graph(r->ga, r->gf), "gallocr: %s", last_err());
}

static void meta_run_free(struct meta_run * r) {
    ggml_gallocr_free(r->ga);
    ggml_free(r->gctx);
    ggml_backend_buffer_free(r->wbuf);
    ggml_free(r->wctx);
    ggml_backend_free(r->be);
}

static void check_event_after_compute(struct ggml_backend_meta_split_state state) {
    enum { NE0 = 16, NE1 = 6 };
    float w[NE0 * NE1], y[NE0 * NE1];
    for (int i = 0; i < NE0 * NE1; i++) {
        w[i] = 0.25f * (float) i - 7.0f;
    }
    struct meta_run r;
    meta_run_weights(&r, 2, state, NE0, NE1, w);
    struct ggml_tensor * out = ggml_scale(r.gctx, r.w, 3.0f);
    meta_run_alloc(&r, out);

    ggml_backend_event_t ev = ggml_backend_event_new(r.meta);
    cr_assert_not_null(ev, "every device of the meta device has events: %s", last_err());
    struct ggml_backend_dev_props props;
    ggml_backend_dev_get_props(r.meta, &props);
    cr_assert(props.caps.events, "event_new works, so caps.events must say so");

    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    cr_assert_eq(ggml_backend_graph_compute_async(r.be, r.gf), GGML_STATUS_SUCCESS, "%s", last_err());
    ggml_backend_event_record(ev, r.be);
    ggml_backend_event_wait(cpu, ev);
    ggml_backend_synchronize(cpu);
    ggml_backend_event_synchronize(ev);
    /* no synchronize of the meta backend: the event must have covered every device's queue */
    ggml_backend_tensor_get(out, y, 0, sizeof y);
    for (int i = 0; i < NE0 * NE1; i++) {
        cr_assert_float_eq(y[i], 3.0f * w[i], 1e-6, "element %d", i);
    }
    ASSERT_NO_ERROR();
    ggml_backend_event_free(ev);
    ggml_backend_free(cpu);
    meta_run_free(&r);
}

Test(meta_allreduce, event_after_a_mirrored_computation) {
    check_event_after_compute(split_mirrored());
}

Test(meta_allreduce, event_after_a_split_computation) {
    check_event_after_compute(split_even(1, 2, 6));
}

/*
 * The event must stand for every device's work, not the first's: device 1 gets nearly all rows
 * of a large product (tens of ms on one SIM thread), device 0 one row. The output is filled with a NaN pattern
 * first and read with no synchronize of the meta backend (buffer reads do not wait, rule 5), so
 * a wait that covered only device 0 reads NaNs.
 */
enum { EV_K = 1024, EV_N = 1024, EV_M = 768 };

static float ev_w(int n, int k) {
    return (float) ((n * 7 + k * 3) % 13) * 0.0625f - 0.375f;
}

static float ev_x(int k, int m) {
    return (float) ((k * 5 + m) % 9) * 0.125f - 0.5f;
}

static void check_event_covers_every_device(bool wait_on_cpu) {
    float * w = malloc(sizeof(float) * EV_K * EV_N);
    float * x = malloc(sizeof(float) * EV_K * EV_M);
    float * y = malloc(sizeof(float) * EV_N * EV_M);
    cr_assert(w != NULL && x != NULL && y != NULL);
    for (int n = 0; n < EV_N; n++) {
        for (int k = 0; k < EV_K; k++) {
            w[n * EV_K + k] = ev_w(n, k);
        }
    }
    for (int m = 0; m < EV_M; m++) {
        for (int k = 0; k < EV_K; k++) {
            x[m * EV_K + k] = ev_x(k, m);
        }
    }
    struct meta_run r;
    meta_run_weights(&r, 2, split_list(1, 1, (const int64_t[]) { 1, EV_N - 1 }, 2), EV_K, EV_N, w);
    struct ggml_tensor * xt = ggml_new_tensor_2d(r.gctx, GGML_TYPE_F32, EV_K, EV_M);
    ggml_set_input(xt);
    struct ggml_tensor * out = ggml_mul_mat(r.gctx, r.w, xt);
    meta_run_alloc(&r, out);
    ggml_backend_tensor_set(xt, x, 0, sizeof(float) * EV_K * EV_M);
    ggml_backend_tensor_memset(out, 0xff, 0, ggml_nbytes(out)); /* NaN */

    ggml_backend_event_t ev = ggml_backend_event_new(r.meta);
    cr_assert_not_null(ev, "%s", last_err());
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    cr_assert_eq(ggml_backend_graph_compute_async(r.be, r.gf), GGML_STATUS_SUCCESS, "%s", last_err());
    ggml_backend_event_record(ev, r.be);
    if (wait_on_cpu) {
        ggml_backend_event_wait(cpu, ev);
        ggml_backend_synchronize(cpu);
    } else {
        ggml_backend_event_synchronize(ev);
    }
    ggml_backend_tensor_get(out, y, 0, sizeof(float) * EV_N * EV_M);
    for (int i = 0; i < EV_N * EV_M; i++) {
        cr_assert(isfinite(y[i]), "%s: y[%d, %d] is not computed yet", wait_on_cpu ? "event_wait on the CPU" : "event_synchronize",
                  i % EV_N, i / EV_N);
    }
    for (int i = 0; i < EV_N * EV_M; i += 97) {
        const int n = i % EV_N, m = i / EV_N;
        double want = 0;
        for (int k = 0; k < EV_K; k++) {
            want += (double) ev_w(n, k) * (double) ev_x(k, m);
        }
        cr_assert_float_eq(y[i], want, 1e-3, "y[%d, %d]", n, m);
    }
    ggml_backend_event_free(ev);
    ggml_backend_free(cpu);
    meta_run_free(&r);
    free(y);
    free(x);
    free(w);
}

Test(meta_allreduce, event_wait_on_the_cpu_covers_every_device) {
    check_event_covers_every_device(true);
}

Test(meta_allreduce, event_synchronize_covers_every_device) {
    check_event_covers_every_device(false);
}

/* an event never recorded counts as done */
Test(meta_allreduce, unrecorded_meta_event_is_done) {
    split_table_init(&g_tab);
    ggml_backend_dev_t meta = meta_over_sims(3, &g_tab);
    ggml_backend_event_t ev = ggml_backend_event_new(meta);
    cr_assert_not_null(ev, "%s", last_err());
    ggml_backend_event_synchronize(ev);
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_event_wait(cpu, ev);
    ggml_backend_synchronize(cpu);
    ggml_backend_event_free(ev);
    ggml_backend_free(cpu);
}

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

static struct ggmlx_meta_stats run_mul_mat(struct mm_case c) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 5) % 11) * 0.125f - 0.5f;
    }
    for (int i = 0; i < MM_K * MM_M; i++) {
        x[i] = (float) ((i * 3) % 7) * 0.25f - 0.75f;
    }
    struct meta_run r;
    const size_t n_devs = c.n_devs ? c.n_devs : 2;
    const int64_t extent = c.axis == 0 ? MM_K : MM_N;
    bool given = false;
    for (size_t d = 0; d < n_devs; d++) {
        given = given || c.lens[d] != 0;
    }
    meta_run_weights(&r, n_devs, given ? split_list(c.axis, 1, c.lens, n_devs) : split_even(c.axis, n_devs, extent), MM_K,
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
            double want = 0;
            for (int k = 0; k < MM_K; k++) {
                want += (double) w[n * MM_K + k] * (double) x[m * MM_K + k];
            }
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

Test(meta_allreduce, mul_mat_split_by_rows_needs_no_reduction) {
    const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 1, .x_is_weight = true });
    cr_assert_eq(st.n_allreduce_comm + st.n_allreduce_generic, 0, "rows split: nothing to reduce");
    cr_assert_eq(st.bytes_reduced, 0);
    const struct ggmlx_meta_stats st2 = run_mul_mat((struct mm_case) { .axis = 1, .x_is_weight = false, .sqr_after = true });
    cr_assert_eq(st2.n_allreduce_comm + st2.n_allreduce_generic, 0, "rows split, sqr per element: nothing to reduce");
}

/* a partial result read directly: the value read is the sum, however the backend gets there */
Test(meta_allreduce, mul_mat_split_along_k_reads_the_sum) {
    run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = false });
    run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = true });
}

Test(meta_allreduce, mul_mat_split_along_k_is_reduced_before_a_nonlinear_op) {
    const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 0, .x_is_weight = false, .sqr_after = true });
    cr_assert_geq(st.n_allreduce_generic, 1, "sqr of a partial sum needs a reduction first");
    cr_assert_eq(st.n_allreduce_comm, 0, "SIM devices offer no comm functions");
    cr_assert_geq(st.n_subgraphs, 2, "the graph is cut at the reduction");
    cr_assert_geq(st.bytes_reduced, sizeof(float) * MM_N * MM_M, "at least y's bytes were reduced, %llu counted",
                  (unsigned long long) st.bytes_reduced);
}

/* reductions inside a graph over 3, 4 and 5 devices (folded in when not a power of two) */
Test(meta_allreduce, mul_mat_along_k_over_three_to_five_devices) {
    for (size_t n = 3; n <= N_SIMS; n++) {
        const struct ggmlx_meta_stats st = run_mul_mat((struct mm_case) { .axis = 0, .sqr_after = true, .n_devs = n });
        cr_assert_geq(st.n_allreduce_generic, 1, "%zu devices", n);
    }
}

/* a device with nothing to do along K adds zeros; one with no rows makes none */
Test(meta_allreduce, mul_mat_with_an_empty_share) {
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
Test(meta_allreduce, mul_mat_with_a_two_segment_weight_is_right_or_refused) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 5) % 11) * 0.125f - 0.5f;
    }
    for (int i = 0; i < MM_K * MM_M; i++) {
        x[i] = (float) ((i * 3) % 7) * 0.25f - 0.75f;
    }
    struct meta_run r;
    meta_run_weights(&r, 2, split_list(1, 2, (const int64_t[]) { 3, 1, 2, 2 }, 4), MM_K, MM_N, w);
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
            double want = 0;
            for (int k = 0; k < MM_K; k++) {
                want += (double) w[n * MM_K + k] * (double) x[m * MM_K + k];
            }
            cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "y[%d, %d]", n, m);
        }
    }
    meta_run_free(&r);
}

/* the CPU as one of the devices: its part computes on the host, reductions copy to and from it */
Test(meta_allreduce, sim_and_cpu_device_reduce) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 5) % 11) * 0.125f - 0.5f;
    }
    for (int i = 0; i < MM_K * MM_M; i++) {
        x[i] = (float) ((i * 3) % 7) * 0.25f - 0.75f;
    }
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
            double want = 0;
            for (int k = 0; k < MM_K; k++) {
                want += (double) w[n * MM_K + k] * (double) x[m * MM_K + k];
            }
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

/* ---- limits: 16 devices, and a device out of memory ----------------------------------------------- */

static void sixteen_sims(void) {
    meta_configure(GGML_BACKEND_META_MAX_DEVICES, 8 * MiB);
}

Test(meta_allreduce, sixteen_devices, .init = sixteen_sims) {
    ggml_backend_t be[GGML_BACKEND_META_MAX_DEVICES];
    struct ggml_context * ctx[GGML_BACKEND_META_MAX_DEVICES];
    ggml_backend_buffer_t buf[GGML_BACKEND_META_MAX_DEVICES];
    struct ggml_tensor * t[GGML_BACKEND_META_MAX_DEVICES];
    enum { NE = 1000 };
    float x[NE];
    for (int d = 0; d < GGML_BACKEND_META_MAX_DEVICES; d++) {
        be[d] = sim_backend(d);
        ctx[d] = meta_ctx_new(1);
        t[d] = ggml_new_tensor_1d(ctx[d], GGML_TYPE_F32, NE);
        buf[d] = ggml_backend_alloc_ctx_tensors(ctx[d], be[d]);
        cr_assert_not_null(buf[d], "%s", last_err());
        for (int j = 0; j < NE; j++) {
            x[j] = (float) (d * NE + j);
        }
        ggml_backend_tensor_set(t[d], x, 0, sizeof x);
    }
    cr_assert_eq(ggmlx_meta_allreduce_generic(be, t, GGML_BACKEND_META_MAX_DEVICES), GGML_STATUS_SUCCESS, "%s", last_err());
    for (int d = 0; d < GGML_BACKEND_META_MAX_DEVICES; d++) {
        ggml_backend_tensor_get(t[d], x, 0, sizeof x);
        for (int j = 0; j < NE; j++) {
            /* sum over d' of d' NE + j = 120 NE + 16 j, exact in F32 */
            cr_assert_eq(x[j], (float) (120 * NE + 16 * j), "device %d element %d: %g", d, j, (double) x[j]);
        }
    }
    for (int d = 0; d < GGML_BACKEND_META_MAX_DEVICES; d++) {
        ggml_backend_buffer_free(buf[d]);
        ggml_free(ctx[d]);
        ggml_backend_free(be[d]);
    }
}

static void tiny_sims(void) {
    meta_configure(2, 1 * MiB);
}

/* a 640 KiB tensor fills a 1 MiB device: no room for the scratch copy */
Test(meta_allreduce, out_of_device_memory_is_alloc_failed, .init = tiny_sims) {
    struct per_dev p;
    per_dev_new(&p, 2, GGML_TYPE_F32, 1024, 160);
    fill_all(&p);
    struct snapshot s = snap(&p);
    const enum ggml_status st = ggmlx_meta_allreduce_generic(p.be, p.t, 2);
    cr_assert_eq(st, GGML_STATUS_ALLOC_FAILED, "status %d: %s", (int) st, last_err());
    ASSERT_ERROR();
    assert_unchanged(&p, &s, "out of memory");
    per_dev_free(&p);
}

/* only a backend of the event's device may record it (docs/async.md rule 6) */
Test(meta_allreduce, recording_on_the_wrong_backend_is_an_error) {
    split_table_init(&g_tab);
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    ggml_backend_t mbe = ggml_backend_dev_init(meta, NULL);
    ggml_backend_t sim = sim_backend(0);
    cr_assert_not_null(mbe, "%s", last_err());
    ggml_backend_event_t mev = ggml_backend_event_new(meta);
    ggml_backend_event_t sev = ggml_backend_event_new(sim_dev(0));
    cr_assert(mev != NULL && sev != NULL, "%s", last_err());
    ggml_backend_event_record(mev, sim);
    ASSERT_ERROR();
    ggml_backend_event_record(sev, mbe);
    ASSERT_ERROR();
    /* the right pairings still work, and a meta backend can wait for a plain event */
    ggml_backend_event_record(sev, sim);
    ggml_backend_event_wait(mbe, sev);
    ggml_backend_event_record(mev, mbe);
    ggml_backend_event_wait(sim, mev);
    ggml_backend_synchronize(sim);
    ggml_backend_synchronize(mbe);
    ggml_backend_event_synchronize(mev);
    ASSERT_NO_ERROR();
    ggml_backend_event_free(sev);
    ggml_backend_event_free(mev);
    ggml_backend_free(sim);
    ggml_backend_free(mbe);
}

/*
 * Graphs are rebuilt every step, often in the same context memory, so a tensor struct of the next
 * graph can sit where a split result of the last one sat. What the meta buffer remembers about
 * the old tensor must not apply to the new one: here an input of graph 2 takes the place of
 * graph 1's row-split product, and is then used whole.
 */
Test(meta_allreduce, a_new_graph_in_reused_context_memory_starts_clean) {
    float w[MM_K * MM_N], x[MM_K * MM_M], y[MM_N * MM_M];
    for (int i = 0; i < MM_K * MM_N; i++) {
        w[i] = (float) ((i * 5) % 11) * 0.125f - 0.5f;
    }
    for (int i = 0; i < MM_K * MM_M; i++) {
        x[i] = (float) ((i * 3) % 7) * 0.25f - 0.75f;
    }
    struct meta_run r;
    meta_run_weights(&r, 2, split_even(1, 2, MM_N), MM_K, MM_N, w);
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
            double want = a[m * MM_N + n];
            for (int k = 0; k < MM_K; k++) {
                want += (double) w[n * MM_K + k] * (double) x[m * MM_K + k];
            }
            cr_assert_float_eq(y[m * MM_N + n], want, 1e-5, "z[%d, %d]", n, m);
        }
    }
    ggml_free(c2);
    ggml_gallocr_free(ga);
    meta_run_free(&r);
}
