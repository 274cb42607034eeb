/*
 * test-meta-buffer.c -- weights in a meta buffer (ggml_backend_alloc_ctx_tensors_from_buft with
 * a meta device's buffer type): the split callback is asked once per non-view tensor; each device
 * holds only its slices (ggmlx_meta_buffer_device_size against the bytes worked out here);
 * tensor_set/get round-trip exactly for every axis, mirrored, uneven and zero shares, two
 * segments, F32 and F16, whole and partial ranges; memset and clear; and every malformed split
 * state is an error for that allocation that leaves the tensors unallocated.
 */
#include "meta-fixture.h"
#include "ggml-cpu.h"

#include <stdlib.h>

static void two_sims(void) {
    meta_configure(2, 64 * MiB);
}

static void four_sims(void) {
    meta_configure(4, 64 * MiB);
}

TestSuite(meta_buffer, .init = two_sims, .timeout = 60);

/* one table per test process (Criterion forks every test), so the meta device's key stays put */
static struct split_table g_tab;

/* ---- host-side expectations --------------------------------------------------------------------- */

/* bytes of device d's dense piece of t */
static size_t slice_bytes(const struct ggml_tensor * t, const struct ggml_backend_meta_split_state * s, size_t n_devs, size_t d) {
    if (s->axis == GGML_BACKEND_SPLIT_AXIS_MIRRORED) {
        return ggml_nbytes(t);
    }
    int64_t ne[GGML_MAX_DIMS];
    memcpy(ne, t->ne, sizeof ne);
    ne[s->axis] = 0;
    for (uint32_t seg = 0; seg < s->n_segments; seg++) {
        ne[s->axis] += s->ne[seg * n_devs + d];
    }
    if (ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0) {
        return 0;
    }
    return ggml_row_size(t->type, ne[0]) * (size_t) (ne[1] * ne[2] * ne[3]);
}

static size_t dev_alignment(size_t d) {
    const size_t a = ggml_backend_buft_get_alignment(ggml_backend_dev_buffer_type(sim_dev((int) d)));
    cr_assert_gt(a, 0);
    return a;
}

/*
 * Device d holds exactly its slices, each padded to its buffer type's alignment at most: between
 * the exact sum and the exact sum plus one alignment per tensor.
 */
static void assert_device_sizes(ggml_backend_buffer_t buf, struct ggml_tensor * const * ts, size_t n_ts, size_t n_devs) {
    for (size_t d = 0; d < n_devs; d++) {
        const size_t align = dev_alignment(d);
        size_t exact = 0;
        for (size_t i = 0; i < n_ts; i++) {
            exact += slice_bytes(ts[i], split_table_find(&g_tab, ts[i]->name), n_devs, d);
        }
        const size_t got = ggmlx_meta_buffer_device_size(buf, d);
        cr_assert_geq(got, exact, "device %zu holds %zu bytes, less than its slices' %zu", d, got, exact);
        cr_assert_lt(got, exact + n_ts * align, "device %zu holds %zu bytes; its slices are %zu (+ %zu alignment each)", d,
                     got, exact, align);
    }
    cr_assert_eq(ggmlx_meta_buffer_device_size(buf, n_devs), 0, "device index out of range");
}

/* ---- data ---------------------------------------------------------------------------------------- */

static uint32_t mix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* a pattern that differs at every 4-byte word, so a piece put at the wrong place shows */
static void fill_pattern(uint8_t * p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) {
        const uint32_t w = mix32((uint32_t) (i / 4) * 2654435761U + seed * 0x9e3779b9U + 1);
        p[i] = (uint8_t) (w >> (8 * (i % 4)));
    }
}

static void assert_bytes_eq(const uint8_t * got, const uint8_t * want, size_t n, const struct ggml_tensor * t, const char * what) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            const size_t es = ggml_type_size(t->type);
            cr_assert_fail("%s: tensor %s, byte %zu (element %zu) is 0x%02x, want 0x%02x (last error: %s)", what, t->name, i,
                           i / es, got[i], want[i], last_err());
        }
    }
}

/* the whole tensor read back equals model */
static void assert_tensor_is(const struct ggml_tensor * t, const uint8_t * model, const char * what) {
    const size_t n = ggml_nbytes(t);
    uint8_t * got = malloc(n);
    cr_assert_not_null(got);
    memset(got, 0xee, n);
    ggml_backend_tensor_get(t, got, 0, n);
    assert_bytes_eq(got, model, n, t, what);
    free(got);
}

/*
 * Whole-tensor set/get, then element-aligned ranges that start and end inside rows and cross row
 * and plane boundaries: each set lands only on its range, each get returns exactly its range.
 * Then memset of a range and a clear of the whole buffer.
 */
static void check_tensor_io(struct ggml_tensor * t, uint32_t seed) {
    /* es: an element, or a block of a quantized type (ranges never cut a block) */
    const size_t nb = ggml_nbytes(t), es = ggml_type_size(t->type);
    const size_t ne = nb / es;
    cr_assert_geq(ne, 8, "the ranges below need 8 elements (blocks)");
    uint8_t * model = malloc(nb), * tmp = malloc(nb);
    cr_assert(model != NULL && tmp != NULL);

    fill_pattern(model, nb, seed);
    ggml_backend_tensor_set(t, model, 0, nb);
    assert_tensor_is(t, model, "whole set/get");

    const size_t row = (size_t) (t->ne[0] / ggml_blck_size(t->type)); /* in units of es */
    const size_t straddle = row > 2 ? row - 2 : 1; /* 5 elements across the end of the first row */
    const size_t ranges[][2] = {
        /* first element, offset, count */
        { 0, 1 },
        { ne - 1, 1 },
        { 1, ne - 2 },
        { 3, ne / 2 },
        { ne / 3, ne / 3 },
        { row < ne ? row : 0, row < ne ? row : ne }, /* exactly the second row */
        { straddle, ne - straddle < 5 ? ne - straddle : 5 },
    };
    const size_t n_ranges = sizeof ranges / sizeof ranges[0];
    for (size_t k = 0; k < n_ranges; k++) {
        const size_t off = ranges[k][0] * es, size = ranges[k][1] * es;
        cr_assert_leq(off + size, nb);
        fill_pattern(tmp, size, seed * 131 + (uint32_t) k + 7);
        memcpy(model + off, tmp, size);
        ggml_backend_tensor_set(t, tmp, off, size);
        assert_tensor_is(t, model, "partial set");
    }
    for (size_t k = 0; k < n_ranges; k++) {
        const size_t off = ranges[k][0] * es, size = ranges[k][1] * es;
        memset(tmp, 0xee, size);
        ggml_backend_tensor_get(t, tmp, off, size);
        assert_bytes_eq(tmp, model + off, size, t, "partial get");
    }

    const size_t m_off = (ne / 4) * es, m_size = (ne / 2) * es;
    memset(model + m_off, 0xa5, m_size);
    ggml_backend_tensor_memset(t, 0xa5, m_off, m_size);
    assert_tensor_is(t, model, "memset of a range");
    memset(model, 0x5c, nb);
    ggml_backend_tensor_memset(t, 0x5c, 0, nb);
    assert_tensor_is(t, model, "memset of the whole tensor");

    free(tmp);
    free(model);
}

/* ---- one case: tensors with their states, allocated and checked --------------------------------- */

struct tdesc {
    const char                         * name;
    enum ggml_type                       type;
    int64_t                              ne[GGML_MAX_DIMS];
    struct ggml_backend_meta_split_state state;
};

#define MAX_T 16

struct allocated {
    ggml_backend_dev_t    meta;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * t[MAX_T];
    size_t                n;
};

static struct allocated alloc_case(size_t n_devs, const struct tdesc * td, size_t n) {
    cr_assert_leq(n, MAX_T);
    struct allocated a = { 0 };
    split_table_init(&g_tab);
    for (size_t i = 0; i < n; i++) {
        split_table_add(&g_tab, td[i].name, td[i].state);
    }
    a.meta = meta_over_sims(n_devs, &g_tab);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(a.meta);
    cr_assert_not_null(buft, "%s", last_err());
    a.ctx = meta_ctx_new(MAX_T);
    for (size_t i = 0; i < n; i++) {
        a.t[i] = ggml_new_tensor(a.ctx, td[i].type, GGML_MAX_DIMS, td[i].ne);
        ggml_set_name(a.t[i], td[i].name);
    }
    a.n = n;
    a.buf = ggml_backend_alloc_ctx_tensors_from_buft(a.ctx, buft);
    cr_assert_not_null(a.buf, "alloc_ctx_tensors_from_buft: %s", last_err());
    ASSERT_NO_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_type(a.buf), buft);
    cr_assert_eq(g_tab.n_calls, (int) n, "the split callback was called %d times for %zu tensors", g_tab.n_calls, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(g_tab.called[i], td[i].name, "call %zu", i);
        cr_assert_eq(a.t[i]->buffer, a.buf, "%s", td[i].name);
        cr_assert_not_null(a.t[i]->data, "%s", td[i].name);
    }
    return a;
}

static void free_case(struct allocated * a) {
    ggml_backend_buffer_free(a->buf);
    ggml_free(a->ctx);
}

/* allocate, check sizes, round-trip every tensor, clear the buffer */
static void run_case(size_t n_devs, const struct tdesc * td, size_t n) {
    struct allocated a = alloc_case(n_devs, td, n);
    assert_device_sizes(a.buf, a.t, a.n, n_devs);
    for (size_t i = 0; i < n; i++) {
        check_tensor_io(a.t[i], (uint32_t) i + 1);
    }
    ggml_backend_buffer_clear(a.buf, 0x3c);
    for (size_t i = 0; i < n; i++) {
        const size_t nb = ggml_nbytes(a.t[i]);
        uint8_t * model = malloc(nb);
        cr_assert_not_null(model);
        memset(model, 0x3c, nb);
        assert_tensor_is(a.t[i], model, "buffer_clear");
        free(model);
    }
    free_case(&a);
}

static const char * const g_axis_tensor_names[4] = { "split.axis0", "split.axis1", "split.axis2", "split.axis3" };

/* one tensor of shape ne split along axis with lens (n_devs of them), plus a mirrored one */
static void run_axis_case(size_t n_devs, enum ggml_type type, const int64_t ne[4], int axis, const int64_t * lens) {
    struct tdesc td[2] = {
        { g_axis_tensor_names[axis], type, { ne[0], ne[1], ne[2], ne[3] }, split_list(axis, 1, lens, n_devs) },
        { "mirrored.bias", GGML_TYPE_F32, { 10, 1, 1, 1 }, split_mirrored() },
    };
    run_case(n_devs, td, 2);
}

/* ---- every axis, even and uneven, F32 and F16 ----------------------------------------------------- */

static const int64_t g_shape[4] = { 8, 6, 4, 2 };

Test(meta_buffer, axis_0_even_f32) {
    run_axis_case(2, GGML_TYPE_F32, g_shape, 0, (const int64_t[]) { 4, 4 });
}

Test(meta_buffer, axis_1_even_f32) {
    run_axis_case(2, GGML_TYPE_F32, g_shape, 1, (const int64_t[]) { 3, 3 });
}

Test(meta_buffer, axis_2_even_f32) {
    run_axis_case(2, GGML_TYPE_F32, g_shape, 2, (const int64_t[]) { 2, 2 });
}

Test(meta_buffer, axis_3_even_f32) {
    run_axis_case(2, GGML_TYPE_F32, g_shape, 3, (const int64_t[]) { 1, 1 });
}

Test(meta_buffer, every_axis_uneven_f32) {
    const int64_t shape[4] = { 7, 5, 3, 3 };
    for (int axis = 0; axis < 4; axis++) {
        const int64_t lens[2] = { 1, shape[axis] - 1 };
        run_axis_case(2, GGML_TYPE_F32, shape, axis, lens);
        const int64_t lens2[2] = { shape[axis] - 1, 1 };
        run_axis_case(2, GGML_TYPE_F32, shape, axis, lens2);
    }
}

Test(meta_buffer, every_axis_f16) {
    const int64_t shape[4] = { 9, 6, 4, 3 };
    for (int axis = 0; axis < 4; axis++) {
        const int64_t lens[2] = { (shape[axis] + 1) / 2, shape[axis] / 2 };
        run_axis_case(2, GGML_TYPE_F16, shape, axis, lens);
    }
}

Test(meta_buffer, mirrored_f32_and_f16) {
    struct tdesc td[2] = {
        { "m.f32", GGML_TYPE_F32, { 13, 5, 2, 1 }, split_mirrored() },
        { "m.f16", GGML_TYPE_F16, { 13, 5, 2, 1 }, split_mirrored() },
    };
    run_case(2, td, 2);
}

/* a device whose share is empty holds nothing of that tensor */
Test(meta_buffer, zero_share_on_one_of_two) {
    run_axis_case(2, GGML_TYPE_F32, g_shape, 0, (const int64_t[]) { 0, 8 });
    run_axis_case(2, GGML_TYPE_F32, g_shape, 1, (const int64_t[]) { 6, 0 });
}

Test(meta_buffer, four_devices_uneven_with_a_zero_share, .init = four_sims) {
    const int64_t shape[4] = { 10, 9, 3, 2 };
    run_axis_case(4, GGML_TYPE_F32, shape, 1, (const int64_t[]) { 3, 0, 2, 4 });
    run_axis_case(4, GGML_TYPE_F16, shape, 0, (const int64_t[]) { 1, 5, 4, 0 });
}

/* fused tensors (e.g. QKV): each segment split over the devices in order */
Test(meta_buffer, two_segments) {
    const int64_t shape[4] = { 6, 10, 3, 1 };
    struct tdesc td[2] = {
        { "qkv.rows", GGML_TYPE_F32, { shape[0], shape[1], shape[2], shape[3] },
          split_list(1, 2, (const int64_t[]) { 3, 2, 1, 4 }, 4) },
        { "qkv.cols", GGML_TYPE_F16, { 10, 4, 3, 1 }, split_list(0, 2, (const int64_t[]) { 2, 2, 5, 1 }, 4) },
    };
    run_case(2, td, 2);
}

Test(meta_buffer, two_segments_over_four_devices, .init = four_sims) {
    struct tdesc td[1] = {
        { "qkv", GGML_TYPE_F32, { 16, 3, 2, 1 }, split_list(0, 2, (const int64_t[]) { 2, 2, 2, 2, 1, 3, 0, 4 }, 8) },
    };
    run_case(4, td, 1);
}

/* nr entries of 1 (no repetition) are accepted like 0 */
Test(meta_buffer, repetition_count_one_is_accepted) {
    struct ggml_backend_meta_split_state s = split_list(1, 2, (const int64_t[]) { 2, 2, 1, 1 }, 4);
    s.nr[0] = 1;
    s.nr[1] = 1;
    struct tdesc td[1] = { { "nr.one", GGML_TYPE_F32, { 5, 6, 1, 1 }, s } };
    run_case(2, td, 1);
}

/* many tensors, each with its own state, in one buffer */
Test(meta_buffer, mixed_states_in_one_buffer, .init = four_sims) {
    struct tdesc td[6] = {
        { "w0", GGML_TYPE_F32, { 32, 12, 1, 1 }, split_even(1, 4, 12) },
        { "w1", GGML_TYPE_F16, { 32, 12, 1, 1 }, split_even(0, 4, 32) },
        { "w2", GGML_TYPE_F32, { 7, 2, 1, 1 }, split_mirrored() },
        { "w3", GGML_TYPE_F32, { 5, 3, 9, 1 }, split_even(2, 4, 9) },
        { "w4", GGML_TYPE_F16, { 3, 3, 3, 6 }, split_even(3, 4, 6) },
        { "w5", GGML_TYPE_F32, { 17, 11, 1, 1 }, split_list(1, 1, (const int64_t[]) { 11, 0, 0, 0 }, 4) },
    };
    run_case(4, td, 6);
}

/* quantized weights: rows of blocks split along axis 1, and mirrored */
Test(meta_buffer, quantized_split_by_rows) {
    struct tdesc td[3] = {
        { "q4.rows", GGML_TYPE_Q4_0, { 64, 6, 1, 1 }, split_list(1, 1, (const int64_t[]) { 2, 4 }, 2) },
        { "q8.rows", GGML_TYPE_Q8_0, { 32, 9, 2, 1 }, split_list(2, 1, (const int64_t[]) { 1, 1 }, 2) },
        { "q8.mirrored", GGML_TYPE_Q8_0, { 64, 5, 1, 1 }, split_mirrored() },
    };
    run_case(2, td, 3);
}

/* along axis 0 each device's share is whole blocks (ffn_down, attn_output of a quantized model) */
Test(meta_buffer, quantized_split_along_axis_0) {
    struct tdesc td[2] = {
        { "q4.cols", GGML_TYPE_Q4_0, { 128, 4, 1, 1 }, split_list(0, 1, (const int64_t[]) { 32, 96 }, 2) },
        { "q8.cols", GGML_TYPE_Q8_0, { 96, 3, 1, 1 }, split_list(0, 2, (const int64_t[]) { 32, 0, 32, 32 }, 4) },
    };
    run_case(2, td, 2);
}

Test(meta_buffer, quantized_axis_0_share_must_be_whole_blocks) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "q4.bad", split_list(0, 1, (const int64_t[]) { 16, 48 }, 2));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    struct ggml_context * ctx = meta_ctx_new(2);
    struct ggml_tensor * q = ggml_new_tensor_2d(ctx, GGML_TYPE_Q4_0, 64, 4);
    ggml_set_name(q, "q4.bad");
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta)));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not_null(strstr(ggmlx_last_error(), "q4.bad"), "%s", ggmlx_last_error());
    ASSERT_ERROR();
    cr_assert_null(q->data);
    ggml_free(ctx);
}

/* ---- each device holds only its slice ------------------------------------------------------------ */

static size_t full_bytes(const struct allocated * a) {
    size_t s = 0;
    for (size_t i = 0; i < a->n; i++) {
        s += ggml_nbytes(a->t[i]);
    }
    return s;
}

static void assert_holds_fraction(size_t n_devs) {
    struct tdesc td[3] = {
        { "ffn_up", GGML_TYPE_F32, { 256, 64, 1, 1 }, split_even(1, n_devs, 64) },
        { "ffn_down", GGML_TYPE_F32, { 64, 256, 1, 1 }, split_even(0, n_devs, 64) },
        { "attn_q", GGML_TYPE_F16, { 128, 128, 1, 1 }, split_even(1, n_devs, 128) },
    };
    struct allocated a = alloc_case(n_devs, td, 3);
    const size_t full = full_bytes(&a);
    assert_device_sizes(a.buf, a.t, a.n, n_devs);
    for (size_t d = 0; d < n_devs; d++) {
        const size_t got = ggmlx_meta_buffer_device_size(a.buf, d);
        cr_assert_geq(got, full / n_devs);
        cr_assert_leq(got, full / n_devs + a.n * dev_alignment(d), "device %zu holds %zu bytes of %zu (1/%zu expected)", d, got,
                      full, n_devs);
    }
    free_case(&a);
}

Test(meta_buffer, even_split_holds_half) {
    assert_holds_fraction(2);
}

Test(meta_buffer, even_split_holds_a_quarter, .init = four_sims) {
    assert_holds_fraction(4);
}

Test(meta_buffer, mirrored_holds_everything) {
    struct tdesc td[2] = {
        { "m0", GGML_TYPE_F32, { 256, 64, 1, 1 }, split_mirrored() },
        { "m1", GGML_TYPE_F16, { 100, 3, 1, 1 }, split_mirrored() },
    };
    struct allocated a = alloc_case(2, td, 2);
    assert_device_sizes(a.buf, a.t, a.n, 2);
    for (size_t d = 0; d < 2; d++) {
        cr_assert_geq(ggmlx_meta_buffer_device_size(a.buf, d), full_bytes(&a));
    }
    free_case(&a);
}

Test(meta_buffer, device_size_of_other_buffers_is_zero) {
    struct ggml_context * ctx = meta_ctx_new(1);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 64);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(sim_dev(0)));
    cr_assert_not_null(buf, "%s", last_err());
    cr_assert_eq(ggmlx_meta_buffer_device_size(buf, 0), 0);
    cr_assert_eq(ggmlx_meta_buffer_device_size(NULL, 0), 0);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* ---- the callback: once per non-view tensor, per allocation --------------------------------------- */

Test(meta_buffer, callback_skips_views_and_views_read_their_source) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "split", split_even(1, 2, 6));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    struct ggml_context * ctx = meta_ctx_new(8);
    struct ggml_tensor * m = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_name(m, "mirror");
    struct ggml_tensor * s = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 6);
    ggml_set_name(s, "split");
    struct ggml_tensor * v = ggml_view_1d(ctx, m, 8, 4 * sizeof(float));
    ggml_set_name(v, "mirror.view");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(buf, "%s", last_err());
    cr_assert_eq(g_tab.n_calls, 2, "asked %d times for 2 tensors and a view", g_tab.n_calls);
    cr_assert_eq(g_tab.n_view_calls, 0, "asked about a view");
    cr_assert_str_eq(g_tab.called[0], "mirror");
    cr_assert_str_eq(g_tab.called[1], "split");
    cr_assert_eq(v->buffer, buf);
    cr_assert_not_null(v->data);

    float x[16], y[8];
    for (int i = 0; i < 16; i++) {
        x[i] = 0.5f * (float) i - 3.0f;
    }
    ggml_backend_tensor_set(m, x, 0, sizeof x);
    ggml_backend_tensor_get(v, y, 0, sizeof y);
    cr_assert_arr_eq(y, x + 4, sizeof y, "a view of a mirrored weight reads its source's elements");

    /* a second allocation asks again, once per tensor */
    struct ggml_context * ctx2 = meta_ctx_new(2);
    ggml_set_name(ggml_new_tensor_1d(ctx2, GGML_TYPE_F32, 4), "second");
    ggml_backend_buffer_t buf2 = ggml_backend_alloc_ctx_tensors_from_buft(ctx2, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(buf2, "%s", last_err());
    cr_assert_eq(g_tab.n_calls, 3);
    cr_assert_str_eq(g_tab.called[2], "second");

    ggml_backend_buffer_free(buf2);
    ggml_free(ctx2);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* through the meta backend's default buffer type */
Test(meta_buffer, alloc_through_the_meta_backend) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_even(1, 2, 6));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    ggml_backend_t be = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(be, "%s", last_err());
    struct ggml_context * ctx = meta_ctx_new(2);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 6);
    ggml_set_name(w, "w");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    cr_assert_not_null(buf, "%s", last_err());
    cr_assert_eq(g_tab.n_calls, 1);
    cr_assert_eq(ggml_backend_buffer_get_type(buf), ggml_backend_dev_buffer_type(meta));
    assert_device_sizes(buf, &w, 1, 2);
    check_tensor_io(w, 99);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(be);
}

/* ---- malformed states ------------------------------------------------------------------------------- */

#define BAD_NAME "blk.7.attn_qkv.weight"

struct bad_case {
    const char                         * what;
    struct ggml_backend_meta_split_state state;
};

static struct ggml_backend_meta_split_state with_axis(int axis) {
    struct ggml_backend_meta_split_state s = split_list(0, 1, (const int64_t[]) { 4, 4 }, 2);
    s.axis = (enum ggml_backend_meta_split_axis) axis;
    return s;
}

static struct ggml_backend_meta_split_state with_segments(uint32_t n) {
    /* the lengths alone would be valid: 8 ones in (segment, device) order */
    struct ggml_backend_meta_split_state s = split_list(0, n, (const int64_t[]) { 1, 1, 1, 1, 1, 1, 1, 1 }, 8);
    return s;
}

static struct ggml_backend_meta_split_state with_nr(uint32_t seg, uint32_t nr) {
    struct ggml_backend_meta_split_state s = split_list(0, 2, (const int64_t[]) { 2, 2, 2, 2 }, 4);
    s.nr[seg] = nr;
    return s;
}

/* BAD_NAME is [8, 6] F32 over two devices */
static void bad_cases(struct bad_case * c, size_t * n) {
    size_t k = 0;
    c[k++] = (struct bad_case) { "axis 1 lengths sum to 5, not 6", split_list(1, 1, (const int64_t[]) { 3, 2 }, 2) };
    c[k++] = (struct bad_case) { "axis 1 lengths sum to 7, not 6", split_list(1, 1, (const int64_t[]) { 4, 3 }, 2) };
    c[k++] = (struct bad_case) { "axis 0 lengths sum to 9, not 8", split_list(0, 1, (const int64_t[]) { 4, 5 }, 2) };
    c[k++] = (struct bad_case) { "a negative length that still sums right",
                                 split_list(0, 1, (const int64_t[]) { 10, -2 }, 2) };
    c[k++] = (struct bad_case) { "two segments summing to 7", split_list(0, 2, (const int64_t[]) { 2, 2, 2, 1 }, 4) };
    c[k++] = (struct bad_case) { "axis PARTIAL", with_axis(GGML_BACKEND_SPLIT_AXIS_PARTIAL) };
    c[k++] = (struct bad_case) { "axis NONE", with_axis(GGML_BACKEND_SPLIT_AXIS_NONE) };
    c[k++] = (struct bad_case) { "axis UNKNOWN", with_axis(GGML_BACKEND_SPLIT_AXIS_UNKNOWN) };
    c[k++] = (struct bad_case) { "axis 7", with_axis(7) };
    c[k++] = (struct bad_case) { "axis 4 (GGML_MAX_DIMS)", with_axis(4) };
    c[k++] = (struct bad_case) { "axis -1", with_axis(-1) };
    c[k++] = (struct bad_case) { "0 segments", with_segments(0) };
    c[k++] = (struct bad_case) { "17 segments", with_segments(17) };
    c[k++] = (struct bad_case) { "nr[0] = 2", with_nr(0, 2) };
    c[k++] = (struct bad_case) { "nr[1] = 3", with_nr(1, 3) };
    *n = k;
}

Test(meta_buffer, malformed_states_are_errors_for_that_allocation) {
    struct bad_case cases[32];
    size_t n_cases = 0;
    bad_cases(cases, &n_cases);
    for (size_t i = 0; i < n_cases; i++) {
        /* a fresh device per case: the table's address is the cache key, so use another table */
        static struct split_table tabs[32];
        split_table_init(&tabs[i]);
        split_table_add(&tabs[i], BAD_NAME, cases[i].state);
        ggml_backend_dev_t meta = meta_over_sims(2, &tabs[i]);

        struct ggml_context * ctx = meta_ctx_new(4);
        struct ggml_tensor * good = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6);
        ggml_set_name(good, "good.weight");
        struct ggml_tensor * bad = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6);
        ggml_set_name(bad, BAD_NAME);
        struct ggml_tensor * after = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
        ggml_set_name(after, "after.weight");

        g_n_errors = 0;
        ggmlx_clear_last_error();
        ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta));
        cr_assert_null(buf, "%s: the allocation succeeded", cases[i].what);
        cr_assert_not_null(ggmlx_last_error(), "%s: no error recorded", cases[i].what);
        cr_assert_not_null(strstr(ggmlx_last_error(), BAD_NAME), "%s: the error does not name the tensor: %s", cases[i].what,
                           ggmlx_last_error());
        cr_assert_gt(g_n_errors, 0, "%s: the error is not logged", cases[i].what);
        struct ggml_tensor * ts[3] = { good, bad, after };
        for (int j = 0; j < 3; j++) {
            cr_assert_null(ts[j]->data, "%s: %s was left allocated", cases[i].what, ts[j]->name);
            cr_assert_null(ts[j]->buffer, "%s: %s was left in a buffer", cases[i].what, ts[j]->name);
        }
        ggml_free(ctx);
    }
    /* nothing got stuck: a valid allocation on the same kind of device still works */
    run_axis_case(2, GGML_TYPE_F32, g_shape, 1, (const int64_t[]) { 2, 4 });
}

/* a failed allocation can be retried on the same device once the callback answers right */
Test(meta_buffer, retry_after_a_malformed_state) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_list(1, 1, (const int64_t[]) { 1, 1 }, 2));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    struct ggml_context * ctx = meta_ctx_new(2);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 6);
    ggml_set_name(w, "w");
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta)));
    ASSERT_ERROR();
    cr_assert_null(w->data);
    g_tab.e[0].state = split_list(1, 1, (const int64_t[]) { 1, 5 }, 2);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(buf, "%s", last_err());
    check_tensor_io(w, 5);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* ---- queued I/O, copies to and from other buffers, views ------------------------------------------ */

/* set_async/get_async through the meta backend: each device's part on its own queue */
Test(meta_buffer, async_set_and_get_through_the_meta_backend, .init = four_sims) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_list(1, 2, (const int64_t[]) { 2, 1, 0, 3, 1, 1, 2, 2 }, 8));
    ggml_backend_dev_t meta = meta_over_sims(4, &g_tab);
    ggml_backend_t be = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(be, "%s", last_err());
    struct ggml_context * ctx = meta_ctx_new(2);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 10, 12);
    ggml_set_name(w, "w");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    cr_assert_not_null(buf, "%s", last_err());
    const size_t nb = ggml_nbytes(w);
    uint8_t * src = malloc(nb), * model = malloc(nb), * got = malloc(nb);
    cr_assert(src != NULL && model != NULL && got != NULL);
    fill_pattern(src, nb, 11);
    memcpy(model, src, nb);
    ggml_backend_tensor_set_async(be, w, src, 0, nb);
    /* a range from the middle of row 1 to the middle of row 9, queued behind the whole write;
     * src and got are read when the copies run (rule 4), so the expected bytes live in model */
    const size_t off = 15 * sizeof(float), size = 78 * sizeof(float);
    fill_pattern(got, size, 12);
    memcpy(model + off, got, size);
    ggml_backend_tensor_set_async(be, w, got, off, size);
    ggml_backend_synchronize(be);
    memset(got, 0xee, nb);
    ggml_backend_tensor_get_async(be, w, got, 0, nb);
    ggml_backend_synchronize(be);
    assert_bytes_eq(got, model, nb, w, "set_async/get_async");
    memset(got, 0xee, nb);
    ggml_backend_tensor_get_async(be, w, got, off, size);
    ggml_backend_synchronize(be);
    assert_bytes_eq(got, model + off, size, w, "get_async of a range");
    ASSERT_NO_ERROR();
    free(got);
    free(model);
    free(src);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(be);
}

/* ggml_backend_tensor_copy between a split weight and a CPU tensor, both ways */
Test(meta_buffer, copy_to_and_from_a_cpu_tensor) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_list(0, 1, (const int64_t[]) { 3, 5 }, 2));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    struct ggml_context * mctx = meta_ctx_new(2), * cctx = meta_ctx_new(2);
    struct ggml_tensor * w = ggml_new_tensor_2d(mctx, GGML_TYPE_F32, 8, 6);
    ggml_set_name(w, "w");
    struct ggml_tensor * h = ggml_new_tensor_2d(cctx, GGML_TYPE_F32, 8, 6);
    ggml_set_name(h, "h");
    ggml_backend_buffer_t mbuf = ggml_backend_alloc_ctx_tensors_from_buft(mctx, ggml_backend_dev_buffer_type(meta));
    ggml_backend_buffer_t cbuf = ggml_backend_alloc_ctx_tensors_from_buft(cctx, ggml_backend_cpu_buffer_type());
    cr_assert(mbuf != NULL && cbuf != NULL, "%s", last_err());
    const size_t nb = ggml_nbytes(w);
    uint8_t model[8 * 6 * 4], got[8 * 6 * 4] = { 0 };
    fill_pattern(model, nb, 21);
    ggml_backend_tensor_set(w, model, 0, nb);
    ggml_backend_tensor_copy(w, h);
    memcpy(got, h->data, nb); /* host memory */
    assert_bytes_eq(got, model, nb, h, "meta -> CPU");
    fill_pattern(model, nb, 22);
    memcpy(h->data, model, nb);
    ggml_backend_tensor_copy(h, w);
    assert_tensor_is(w, model, "CPU -> meta");
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(cbuf);
    ggml_backend_buffer_free(mbuf);
    ggml_free(cctx);
    ggml_free(mctx);
}

/* a view of part of a split weight cannot be read piecewise here: an error, not a crash or junk */
Test(meta_buffer, partial_view_of_a_split_weight_is_an_error_or_right) {
    split_table_init(&g_tab);
    split_table_add(&g_tab, "w", split_list(1, 1, (const int64_t[]) { 2, 4 }, 2));
    ggml_backend_dev_t meta = meta_over_sims(2, &g_tab);
    struct ggml_context * ctx = meta_ctx_new(4);
    struct ggml_tensor * w = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 6);
    ggml_set_name(w, "w");
    struct ggml_tensor * row3 = ggml_view_1d(ctx, w, 8, 3 * w->nb[1]);
    ggml_set_name(row3, "w.row3");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(meta));
    cr_assert_not_null(buf, "%s", last_err());
    float x[48], y[8];
    for (int i = 0; i < 48; i++) {
        x[i] = (float) i;
    }
    ggml_backend_tensor_set(w, x, 0, sizeof x);
    for (int i = 0; i < 8; i++) {
        y[i] = -1.0f;
    }
    g_n_errors = 0;
    ggmlx_clear_last_error();
    ggml_backend_tensor_get(row3, y, 0, sizeof y);
    if (ggmlx_last_error() != NULL) {
        cr_log_info("a partial view of a split weight is refused: %s", ggmlx_last_error());
        ASSERT_ERROR();
    } else {
        cr_assert_arr_eq(y, x + 24, sizeof y, "a view's read, when it is allowed, gives its elements");
    }
    /* the weight itself is untouched either way */
    float z[48];
    ggml_backend_tensor_get(w, z, 0, sizeof z);
    cr_assert_arr_eq(z, x, sizeof x);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

static void sixteen_sims(void) {
    meta_configure(GGML_BACKEND_META_MAX_DEVICES, 8 * MiB);
}

/* the most devices a meta device may have, some with empty shares */
Test(meta_buffer, sixteen_devices, .init = sixteen_sims) {
    int64_t lens[GGML_BACKEND_META_MAX_DEVICES];
    for (int d = 0; d < GGML_BACKEND_META_MAX_DEVICES; d++) {
        lens[d] = d % 5 == 4 ? 0 : 2; /* 13 devices with 2 rows, 3 with none: 26 rows */
    }
    struct tdesc td[2] = {
        { "w16", GGML_TYPE_F32, { 9, 26, 1, 1 }, split_list(1, 1, lens, GGML_BACKEND_META_MAX_DEVICES) },
        { "m16", GGML_TYPE_F16, { 12, 2, 1, 1 }, split_mirrored() },
    };
    run_case(GGML_BACKEND_META_MAX_DEVICES, td, 2);
}
