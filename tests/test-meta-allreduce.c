/*
 * test-meta-allreduce.c -- the generic all-reduce (ggmlx_meta_allreduce_generic) over 1 to 5 SIM
 * backends: every tensor ends as the element-wise sum, in F32, F16 and BF16, for power-of-two and
 * other counts, up to 16 devices; bad arguments are errors that change no tensor, and a device
 * without room for the scratch is ALLOC_FAILED. Then a meta backend's events: recorded after a
 * computation, waited for by the CPU backend and by the host, covering every device. Graphs and
 * the reductions inside them are in test-meta-compute.c.
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

/*
 * every tensor holds rounds == 1: the sum over the n devices; rounds == 2: n times it (a second
 * reduction of the reduced tensors). F16/BF16 values are small integers, so their sums are exact.
 */
static void assert_all_summed(const struct per_dev * p, int rounds) {
    const enum ggml_type type = p->t[0]->type;
    const int64_t ne = ggml_nelements(p->t[0]);
    for (size_t i = 0; i < p->n; i++) {
        float * got = get_floats(p->t[i]);
        for (int64_t j = 0; j < ne; j++) {
            double once = 0, mag = 0;
            for (size_t k = 0; k < p->n; k++) {
                once += value_of(type, k, j);
                mag += fabs(value_of(type, k, j));
            }
            /* F16/BF16: |n * sum| <= 5 * 40, an integer both types hold exactly */
            const double want = rounds == 1 ? once : (double) p->n * once;
            const double tol = type != GGML_TYPE_F32 ? 0.0
                               : rounds == 1     ? 4e-7 * mag * (double) p->n + 1e-6
                                                 : 1e-6 * fabs(want) * (double) p->n + 1e-5;
            const double g = got[j];
            if (fabs(g - want) > tol) {
                free(got);
                cr_assert_fail("reduction %d, n=%zu %s: device %zu element %lld is %.9g, want %.9g", rounds, p->n,
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
    assert_all_summed(&p, 1);
    /* again on the reduced tensors: nothing of the first run (scratch, pairing) may leak into it */
    cr_assert_eq(ggmlx_meta_allreduce_generic(p.be, p.t, n), GGML_STATUS_SUCCESS, "%s", last_err());
    assert_all_summed(&p, 2);
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

/* ---- a meta backend's events ---------------------------------------------------------------------- */

static struct split_table g_tab;

static void check_event_after_compute(struct ggml_backend_meta_split_state state) {
    enum { NE0 = 16, NE1 = 6 };
    float w[NE0 * NE1], y[NE0 * NE1];
    for (int i = 0; i < NE0 * NE1; i++) {
        w[i] = 0.25f * (float) i - 7.0f;
    }
    struct meta_run r;
    meta_run_weights(&r, 2, &g_tab, state, NE0, NE1, w);
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
    meta_run_weights(&r, 2, &g_tab, split_list(1, 1, (const int64_t[]) { 1, EV_N - 1 }, 2), EV_K, EV_N, w);
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
