/*
 * test-backend-buffer.c -- buffer types, buffers, multi-buffers and tensor data movement
 * (ggml-backend.h, the parts in libggml-base): the CPU buffer type's properties, zero-size and
 * wrapped buffers, placing tensors and views, set/get/memset/copy in 1-D and 2-D, and every
 * bad-input rule: refused whole, nothing written, a message in ggmlx_last_error().
 */
#include <criterion/criterion.h>

#include "test-errlog.h"

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggmlx.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- fixture: a no_alloc context, quiet logs that count errors ----------------------------- */

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    g_n_errors = 0;
    ggml_log_set(count_log, NULL);
}

static void teardown(void) {
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

static struct ggml_tensor * new_f32(int64_t n) {
    return ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
}

/* a CPU buffer holding t at the start, filled with 0xA5 */
static ggml_backend_buffer_t place(struct ggml_tensor * t, size_t extra) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), ggml_nbytes(t) + extra);
    cr_assert_not_null(b);
    ggml_backend_buffer_clear(b, 0xA5);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, ggml_backend_buffer_get_base(b)), GGML_STATUS_SUCCESS);
    return b;
}

static bool all_bytes(const void * p, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; i++) {
        if (((const uint8_t *) p)[i] != v) {
            return false;
        }
    }
    return true;
}

/* ---- a mock buffer type: counts calls, optionally not host, optionally failing ------------ */

struct mock {
    int  n_free, n_init, n_set, n_get, n_set_2d, n_get_2d, n_cpy, n_clear, n_reset, n_memset;
    bool host;
    bool has_2d;
    bool has_cpy;
    bool init_fails;
};

static struct mock g_mock;

static void mock_free(ggml_backend_buffer_t b) { g_mock.n_free++; free(b->context); }
static void * mock_base(ggml_backend_buffer_t b) { return b->context; }
static enum ggml_status mock_init(ggml_backend_buffer_t b, struct ggml_tensor * t) {
    (void) b; (void) t;
    g_mock.n_init++;
    return g_mock.init_fails ? GGML_STATUS_ALLOC_FAILED : GGML_STATUS_SUCCESS;
}
static void mock_memset(ggml_backend_buffer_t b, struct ggml_tensor * t, uint8_t v, size_t off, size_t n) {
    (void) b;
    g_mock.n_memset++;
    memset((char *) t->data + off, v, n);
}
static void mock_set(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n) {
    (void) b;
    g_mock.n_set++;
    memcpy((char *) t->data + off, d, n);
}
static void mock_get(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n) {
    (void) b;
    g_mock.n_get++;
    memcpy(d, (const char *) t->data + off, n);
}
static void mock_set_2d(ggml_backend_buffer_t b, struct ggml_tensor * t, const void * d, size_t off, size_t n,
                        size_t nc, size_t st, size_t sd) {
    (void) b;
    g_mock.n_set_2d++;
    for (size_t i = 0; i < nc; i++) {
        memcpy((char *) t->data + off + i * st, (const char *) d + i * sd, n);
    }
}
static void mock_get_2d(ggml_backend_buffer_t b, const struct ggml_tensor * t, void * d, size_t off, size_t n,
                        size_t nc, size_t st, size_t sd) {
    (void) b;
    g_mock.n_get_2d++;
    for (size_t i = 0; i < nc; i++) {
        memcpy((char *) d + i * sd, (const char *) t->data + off + i * st, n);
    }
}
static bool mock_cpy(ggml_backend_buffer_t b, const struct ggml_tensor * src, struct ggml_tensor * dst) {
    (void) b;
    g_mock.n_cpy++;
    memcpy(dst->data, src->data, ggml_nbytes(src));
    return true;
}
static void mock_clear(ggml_backend_buffer_t b, uint8_t v) { g_mock.n_clear++; memset(b->context, v, b->size); }
static void mock_reset(ggml_backend_buffer_t b) { (void) b; g_mock.n_reset++; }

static const char * mock_name(ggml_backend_buffer_type_t buft) { (void) buft; return "MOCK"; }
static size_t mock_align(ggml_backend_buffer_type_t buft) { (void) buft; return 16; }
static bool mock_is_host(ggml_backend_buffer_type_t buft) { (void) buft; return g_mock.host; }

static ggml_backend_buffer_t mock_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct ggml_backend_buffer_i i = {
        .free_buffer = mock_free, .get_base = mock_base, .init_tensor = mock_init, .memset_tensor = mock_memset,
        .set_tensor = mock_set, .get_tensor = mock_get,
        .set_tensor_2d = g_mock.has_2d ? mock_set_2d : NULL, .get_tensor_2d = g_mock.has_2d ? mock_get_2d : NULL,
        .cpy_tensor = g_mock.has_cpy ? mock_cpy : NULL, .clear = mock_clear, .reset = mock_reset,
    };
    return ggml_backend_buffer_init(buft, i, calloc(1, size), size);
}

static struct ggml_backend_buffer_type mock_buft = {
    .iface = { .get_name = mock_name, .alloc_buffer = mock_alloc, .get_alignment = mock_align, .is_host = mock_is_host },
};

/* a mock buffer of size bytes holding t at its start */
static ggml_backend_buffer_t mock_place(struct ggml_tensor * t, size_t size) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(&mock_buft, size);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, ggml_backend_buffer_get_base(b)), GGML_STATUS_SUCCESS);
    return b;
}

/* ==== the CPU buffer type =================================================================== */

TestSuite(cpu_buft, .init = setup, .fini = teardown);

Test(cpu_buft, is_named_CPU) {
    cr_assert_str_eq(ggml_backend_buft_name(ggml_backend_cpu_buffer_type()), "CPU");
}

Test(cpu_buft, alignment_is_upstreams_32) {
    cr_assert_eq(ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type()), 32);
}

Test(cpu_buft, max_size_is_unlimited) {
    cr_assert_eq(ggml_backend_buft_get_max_size(ggml_backend_cpu_buffer_type()), SIZE_MAX);
}

Test(cpu_buft, is_host) {
    cr_assert(ggml_backend_buft_is_host(ggml_backend_cpu_buffer_type()));
}

Test(cpu_buft, has_no_device_as_upstream) {
    ggmlx_clear_last_error();
    cr_assert_null(ggml_backend_buft_get_device(ggml_backend_cpu_buffer_type()));
    ASSERT_NO_ERROR();
}

Test(cpu_buft, alloc_size_is_nbytes) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 7, 3);
    cr_assert_eq(ggml_backend_buft_get_alloc_size(ggml_backend_cpu_buffer_type(), t), ggml_nbytes(t));
}

Test(cpu_buft, is_the_same_object_every_call) {
    cr_assert_eq(ggml_backend_cpu_buffer_type(), ggml_backend_cpu_buffer_type());
}

/* ==== CPU buffers ============================================================================ */

TestSuite(cpu_buffer, .init = setup, .fini = teardown);

Test(cpu_buffer, alloc_gives_the_size_and_an_aligned_base) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 1000);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_size(b), 1000);
    void * base = ggml_backend_buffer_get_base(b);
    cr_assert_not_null(base);
    cr_assert_eq((uintptr_t) base % 32, 0);
    memset(base, 1, 1000); /* the whole size is usable (ASan checks) */
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, reports_its_type_name_and_host) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    cr_assert_eq(ggml_backend_buffer_get_type(b), ggml_backend_cpu_buffer_type());
    cr_assert_str_eq(ggml_backend_buffer_name(b), "CPU");
    cr_assert(ggml_backend_buffer_is_host(b));
    cr_assert_eq(ggml_backend_buffer_get_alignment(b), 32);
    cr_assert_eq(ggml_backend_buffer_get_max_size(b), SIZE_MAX);
    cr_assert_not(ggml_backend_buffer_is_multi_buffer(b));
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, alloc_size_goes_through_the_type) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    struct ggml_tensor * t = new_f32(5);
    cr_assert_eq(ggml_backend_buffer_get_alloc_size(b, t), 20);
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, clear_sets_every_byte) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 333);
    ggml_backend_buffer_clear(b, 0x5C);
    cr_assert(all_bytes(ggml_backend_buffer_get_base(b), 333, 0x5C));
    ggml_backend_buffer_clear(b, 0);
    cr_assert(all_bytes(ggml_backend_buffer_get_base(b), 333, 0));
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, usage_starts_any_and_round_trips) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    cr_assert_eq(ggml_backend_buffer_get_usage(b), GGML_BACKEND_BUFFER_USAGE_ANY);
    ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    cr_assert_eq(ggml_backend_buffer_get_usage(b), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    cr_assert_eq(ggml_backend_buffer_get_usage(b), GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, unknown_usage_is_refused_and_kept) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_set_usage(b, (enum ggml_backend_buffer_usage) 7);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_usage(b), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, reset_without_backend_state_is_harmless) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 64);
    ggmlx_clear_last_error();
    ggml_backend_buffer_reset(b);
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
    ggml_backend_buffer_free(b);
}

Test(cpu_buffer, huge_alloc_returns_null_with_an_error) {
    const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 10, SIZE_MAX / 2, (size_t) 1 << 62, (size_t) 1 << 50 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_assert_null(ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), sizes[i]), "size %zu", sizes[i]);
        ASSERT_ERROR();
    }
}

Test(cpu_buffer, free_null_is_a_no_op) {
    ggmlx_clear_last_error();
    ggml_backend_buffer_free(NULL);
    cr_assert_eq(g_n_errors, 0);
}

/* ==== zero-size buffers ====================================================================== */

TestSuite(zero_size, .init = setup, .fini = teardown);

Test(zero_size, is_a_valid_buffer_of_its_type) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_size(b), 0);
    cr_assert_eq(ggml_backend_buffer_get_type(b), ggml_backend_cpu_buffer_type());
    cr_assert_str_eq(ggml_backend_buffer_name(b), "CPU");
    cr_assert(ggml_backend_buffer_is_host(b));
    ggml_backend_buffer_free(b);
}

Test(zero_size, has_a_null_base_without_error) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0);
    cr_assert_null(ggml_backend_buffer_get_base(b));
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(b);
}

Test(zero_size, clear_and_reset_do_nothing) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0);
    ggml_backend_buffer_clear(b, 1);
    ggml_backend_buffer_reset(b);
    cr_assert_eq(g_n_errors, 0);
    ggml_backend_buffer_free(b);
}

Test(zero_size, never_reaches_the_backend) {
    memset(&g_mock, 0, sizeof g_mock);
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(&mock_buft, 0);
    cr_assert_not_null(b);
    ggml_backend_buffer_clear(b, 3);
    ggml_backend_buffer_reset(b);
    ggml_backend_buffer_free(b);
    cr_assert_eq(g_mock.n_clear + g_mock.n_reset + g_mock.n_free, 0, "the mock's functions were never called");
}

Test(zero_size, cannot_hold_a_tensor) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), 0);
    struct ggml_tensor * t = new_f32(1);
    char mem[64];
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, mem), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(t->buffer);
    cr_assert_null(t->data);
    ggml_backend_buffer_free(b);
}

/* ==== buffers over caller memory ============================================================= */

TestSuite(from_ptr, .init = setup, .fini = teardown);

Test(from_ptr, wraps_the_memory_as_CPU_Mapped) {
    void * mem = aligned_alloc(64, 256);
    ggml_backend_buffer_t b = ggml_backend_cpu_buffer_from_ptr(mem, 256);
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_buffer_get_base(b), mem);
    cr_assert_eq(ggml_backend_buffer_get_size(b), 256);
    cr_assert_str_eq(ggml_backend_buffer_name(b), "CPU_Mapped");
    cr_assert(ggml_backend_buffer_is_host(b));
    cr_assert_geq(ggml_backend_buffer_get_alignment(b), 32);
    ggml_backend_buffer_free(b);
    free(mem);
}

Test(from_ptr, does_not_free_the_memory) {
    unsigned char * mem = aligned_alloc(64, 128);
    ggml_backend_buffer_t b = ggml_backend_cpu_buffer_from_ptr(mem, 128);
    ggml_backend_buffer_clear(b, 9);
    ggml_backend_buffer_free(b);
    /* still ours: ASan reports a use after free (and free() a double free) otherwise */
    cr_assert_eq(mem[127], 9);
    free(mem);
}

Test(from_ptr, tensors_in_it_read_and_write_the_memory) {
    float * mem = aligned_alloc(64, 64);
    memset(mem, 0, 64);
    ggml_backend_buffer_t b = ggml_backend_cpu_buffer_from_ptr(mem, 64);
    struct ggml_tensor * t = new_f32(4);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, mem + 4), GGML_STATUS_SUCCESS);
    const float v[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set(t, v, 0, sizeof v);
    cr_assert_eq(mem[4], 1.0f);
    cr_assert_eq(mem[7], 4.0f);
    ggml_backend_buffer_free(b);
    free(mem);
}

Test(from_ptr, null_ptr_is_refused) {
    cr_assert_null(ggml_backend_cpu_buffer_from_ptr(NULL, 64));
    ASSERT_ERROR();
}

Test(from_ptr, misaligned_ptr_is_refused) {
    char * mem = aligned_alloc(64, 128);
    cr_assert_null(ggml_backend_cpu_buffer_from_ptr(mem + 4, 64));
    ASSERT_ERROR();
    free(mem);
}

/* ==== multi-buffers ========================================================================== */

TestSuite(multi_buffer, .init = setup, .fini = teardown);

static ggml_backend_buffer_t cpu_buf(size_t n) {
    return ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), n);
}

Test(multi_buffer, size_is_the_sum_and_type_the_first_childs) {
    ggml_backend_buffer_t parts[3] = { cpu_buf(100), cpu_buf(200), cpu_buf(0) };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 3);
    cr_assert_not_null(m);
    cr_assert_eq(ggml_backend_buffer_get_size(m), 300);
    cr_assert_eq(ggml_backend_buffer_get_type(m), ggml_backend_cpu_buffer_type());
    cr_assert(ggml_backend_buffer_is_multi_buffer(m));
    ggml_backend_buffer_free(m);
}

Test(multi_buffer, has_no_base) {
    ggml_backend_buffer_t parts[1] = { cpu_buf(100) };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 1);
    cr_assert_null(ggml_backend_buffer_get_base(m));
    ASSERT_ERROR();
    ggml_backend_buffer_free(m);
}

Test(multi_buffer, clear_clears_every_child) {
    ggml_backend_buffer_t parts[2] = { cpu_buf(50), cpu_buf(70) };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 2);
    ggml_backend_buffer_clear(m, 0x42);
    cr_assert(all_bytes(ggml_backend_buffer_get_base(parts[0]), 50, 0x42));
    cr_assert(all_bytes(ggml_backend_buffer_get_base(parts[1]), 70, 0x42));
    ggml_backend_buffer_free(m);
}

Test(multi_buffer, set_usage_reaches_every_child) {
    ggml_backend_buffer_t parts[2] = { cpu_buf(50), cpu_buf(70) };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 2);
    ggml_backend_buffer_set_usage(m, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    cr_assert_eq(ggml_backend_buffer_get_usage(m), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    cr_assert_eq(ggml_backend_buffer_get_usage(parts[0]), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    cr_assert_eq(ggml_backend_buffer_get_usage(parts[1]), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_multi_buffer_set_usage(m, GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    cr_assert_eq(ggml_backend_buffer_get_usage(m), GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    cr_assert_eq(ggml_backend_buffer_get_usage(parts[1]), GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    ggml_backend_buffer_free(m);
}

Test(multi_buffer, free_and_reset_reach_every_child) {
    memset(&g_mock, 0, sizeof g_mock);
    ggml_backend_buffer_t parts[3] = {
        ggml_backend_buft_alloc_buffer(&mock_buft, 8), ggml_backend_buft_alloc_buffer(&mock_buft, 8),
        ggml_backend_buft_alloc_buffer(&mock_buft, 8),
    };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 3);
    ggml_backend_buffer_reset(m);
    cr_assert_eq(g_mock.n_reset, 3);
    ggml_backend_buffer_free(m);
    cr_assert_eq(g_mock.n_free, 3);
}

Test(multi_buffer, set_usage_on_a_plain_buffer_is_refused) {
    ggml_backend_buffer_t b = cpu_buf(16);
    ggml_backend_multi_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_usage(b), GGML_BACKEND_BUFFER_USAGE_ANY);
    ggml_backend_buffer_free(b);
}

Test(multi_buffer, bad_lists_are_refused_and_children_kept) {
    ggml_backend_buffer_t a = cpu_buf(16);
    ggml_backend_buffer_t with_null[2] = { a, NULL };
    ggml_backend_buffer_t twice[2] = { a, a };
    cr_assert_null(ggml_backend_multi_buffer_alloc_buffer(NULL, 2));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_multi_buffer_alloc_buffer(with_null, 0));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_multi_buffer_alloc_buffer(with_null, 2));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_multi_buffer_alloc_buffer(twice, 2));
    ASSERT_ERROR();
    ggml_backend_buffer_free(a); /* still the caller's after a refusal */
}

Test(multi_buffer, is_multi_buffer_of_null_is_false) {
    cr_assert_not(ggml_backend_buffer_is_multi_buffer(NULL));
    ASSERT_ERROR();
}

/* ==== placing tensors: tensor_alloc and view_init ============================================ */

TestSuite(tensor_alloc, .init = setup, .fini = teardown);

Test(tensor_alloc, sets_buffer_and_data) {
    ggml_backend_buffer_t b = cpu_buf(256);
    struct ggml_tensor * t = new_f32(8);
    char * addr = (char *) ggml_backend_buffer_get_base(b) + 64;
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, addr), GGML_STATUS_SUCCESS);
    cr_assert_eq(t->buffer, b);
    cr_assert_eq(t->data, addr);
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, calls_init_tensor) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * t = new_f32(8);
    ggml_backend_buffer_t b = mock_place(t, 64);
    cr_assert_eq(g_mock.n_init, 1);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, failed_init_tensor_leaves_the_tensor_unallocated) {
    memset(&g_mock, 0, sizeof g_mock);
    g_mock.init_fails = true;
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(&mock_buft, 64);
    struct ggml_tensor * t = new_f32(8);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, ggml_backend_buffer_get_base(b)), GGML_STATUS_ALLOC_FAILED);
    ASSERT_ERROR();
    cr_assert_null(t->buffer);
    cr_assert_null(t->data);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, exactly_filling_the_buffer_fits) {
    ggml_backend_buffer_t b = cpu_buf(64);
    struct ggml_tensor * t = new_f32(8);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, (char *) ggml_backend_buffer_get_base(b) + 32), GGML_STATUS_SUCCESS);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, past_the_end_is_refused) {
    ggml_backend_buffer_t b = cpu_buf(64);
    struct ggml_tensor * t = new_f32(8);
    char * base = ggml_backend_buffer_get_base(b);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, base + 33), GGML_STATUS_FAILED, "straddles the end");
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, base + 64), GGML_STATUS_FAILED, "starts at the end");
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, base + 4096), GGML_STATUS_FAILED, "far past the end");
    ASSERT_ERROR();
    cr_assert_null(t->data);
    cr_assert_null(t->buffer);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, before_the_base_is_refused) {
    char other[64];
    ggml_backend_buffer_t b = cpu_buf(64);
    struct ggml_tensor * t = new_f32(1);
    char * base = ggml_backend_buffer_get_base(b);
    void * below = (void *) ((uintptr_t) base - 16);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, below), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    if ((uintptr_t) other < (uintptr_t) base || (uintptr_t) other >= (uintptr_t) base + 64) {
        cr_assert_eq(ggml_backend_tensor_alloc(b, t, other), GGML_STATUS_FAILED, "memory of another object");
        ASSERT_ERROR();
    }
    cr_assert_null(t->data);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, an_allocated_tensor_is_refused) {
    ggml_backend_buffer_t b = cpu_buf(128);
    struct ggml_tensor * t = new_f32(8);
    char * base = ggml_backend_buffer_get_base(b);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, base), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, base + 64), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(t->data, base, "unchanged");
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, a_view_is_refused) {
    ggml_backend_buffer_t b = cpu_buf(128);
    struct ggml_tensor * t = new_f32(8);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    cr_assert_eq(ggml_backend_tensor_alloc(b, v, ggml_backend_buffer_get_base(b)), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(v->data);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, null_arguments_are_refused) {
    ggml_backend_buffer_t b = cpu_buf(128);
    struct ggml_tensor * t = new_f32(8);
    cr_assert_eq(ggml_backend_tensor_alloc(NULL, t, ggml_backend_buffer_get_base(b)), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_tensor_alloc(b, NULL, ggml_backend_buffer_get_base(b)), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_tensor_alloc(b, t, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(t->data);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, into_a_multi_buffer_is_refused) {
    ggml_backend_buffer_t parts[1] = { cpu_buf(128) };
    ggml_backend_buffer_t m = ggml_backend_multi_buffer_alloc_buffer(parts, 1);
    struct ggml_tensor * t = new_f32(8);
    cr_assert_eq(ggml_backend_tensor_alloc(m, t, ggml_backend_buffer_get_base(parts[0])), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_buffer_free(m);
}

Test(tensor_alloc, view_init_points_into_the_source) {
    struct ggml_tensor * t = new_f32(16);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 8 * sizeof(float));
    ggml_backend_buffer_t b = place(t, 0);
    cr_assert_null(v->buffer, "made before the source was placed");
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_SUCCESS);
    cr_assert_eq(v->buffer, b);
    cr_assert_eq(v->data, (char *) t->data + 32);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, view_init_calls_init_tensor) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * t = new_f32(16);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    ggml_backend_buffer_t b = mock_place(t, 64);
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_SUCCESS);
    cr_assert_eq(g_mock.n_init, 2);
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, view_init_of_an_unallocated_source_is_refused) {
    struct ggml_tensor * t = new_f32(16);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(v->buffer);
    cr_assert_null(v->data);
}

Test(tensor_alloc, view_init_of_a_non_view_is_refused) {
    struct ggml_tensor * t = new_f32(16);
    cr_assert_eq(ggml_backend_view_init(t), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_view_init(NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
}

Test(tensor_alloc, view_init_twice_is_refused) {
    struct ggml_tensor * t = new_f32(16);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    ggml_backend_buffer_t b = place(t, 0);
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}

Test(tensor_alloc, view_init_outside_the_source_is_refused) {
    struct ggml_tensor * t = new_f32(16);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    ggml_backend_buffer_t b = place(t, 64);
    v->view_offs = 14 * sizeof(float); /* corrupted metadata: 2 of its 4 floats past the source */
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(v->data);
    ggml_backend_buffer_free(b);
}

/* ==== tensor set / get / memset ============================================================= */

TestSuite(tensor_io, .init = setup, .fini = teardown);

Test(tensor_io, set_then_get_round_trips) {
    struct ggml_tensor * t = new_f32(6);
    ggml_backend_buffer_t b = place(t, 0);
    const float in[6] = { 1, -2, 3.5f, 4, 5, 6 };
    float out[6] = { 0 };
    ggml_backend_tensor_set(t, in, 0, sizeof in);
    ggml_backend_tensor_get(t, out, 0, sizeof out);
    cr_assert_arr_eq(in, out, sizeof in);
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(b);
}

Test(tensor_io, set_at_an_offset_touches_only_that_range) {
    struct ggml_tensor * t = new_f32(8);
    ggml_backend_buffer_t b = place(t, 0);
    const float v[2] = { 7, 8 };
    ggml_backend_tensor_set(t, v, 3 * sizeof(float), sizeof v);
    const float * d = t->data;
    cr_assert_eq(d[3], 7.0f);
    cr_assert_eq(d[4], 8.0f);
    cr_assert(all_bytes(d, 12, 0xA5), "bytes before the range unchanged");
    cr_assert(all_bytes(d + 5, 12, 0xA5), "bytes after the range unchanged");
    ggml_backend_buffer_free(b);
}

Test(tensor_io, get_at_an_offset) {
    struct ggml_tensor * t = new_f32(8);
    ggml_backend_buffer_t b = place(t, 0);
    float * d = t->data;
    for (int i = 0; i < 8; i++) {
        d[i] = (float) i;
    }
    float out[3];
    ggml_backend_tensor_get(t, out, 5 * sizeof(float), sizeof out);
    cr_assert_eq(out[0], 5.0f);
    cr_assert_eq(out[2], 7.0f);
    ggml_backend_buffer_free(b);
}

Test(tensor_io, size_zero_is_a_no_op) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 0);
    ggml_backend_tensor_set(t, NULL, 0, 0);
    ggml_backend_tensor_get(t, NULL, 16, 0);
    ggml_backend_tensor_memset(t, 0, 999, 0);
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
    cr_assert(all_bytes(t->data, 16, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, set_past_the_end_is_refused_whole) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 64); /* room after the tensor: a partial write would land */
    const float v[5] = { 1, 2, 3, 4, 5 };
    ggml_backend_tensor_set(t, v, 0, sizeof v);
    ASSERT_ERROR();
    ggml_backend_tensor_set(t, v, 2 * sizeof(float), 3 * sizeof(float));
    ASSERT_ERROR();
    ggml_backend_tensor_set(t, v, 16, 1);
    ASSERT_ERROR();
    cr_assert(all_bytes(ggml_backend_buffer_get_base(b), 16 + 64, 0xA5), "nothing written, in or after the tensor");
    ggml_backend_buffer_free(b);
}

Test(tensor_io, overflowing_offset_is_refused) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 0);
    const float v[2] = { 1, 2 };
    ggml_backend_tensor_set(t, v, SIZE_MAX - 3, sizeof v); /* offset + size wraps to a small number */
    ASSERT_ERROR();
    ggml_backend_tensor_set(t, v, 0, SIZE_MAX);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 16, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, get_past_the_end_is_refused_whole) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 64);
    unsigned char out[32];
    memset(out, 0x3C, sizeof out);
    ggml_backend_tensor_get(t, out, 0, 20);
    ASSERT_ERROR();
    ggml_backend_tensor_get(t, out, 8, 9);
    ASSERT_ERROR();
    cr_assert(all_bytes(out, sizeof out, 0x3C), "host memory unchanged");
    ggml_backend_buffer_free(b);
}

Test(tensor_io, memset_sets_the_range) {
    struct ggml_tensor * t = new_f32(8);
    ggml_backend_buffer_t b = place(t, 0);
    ggml_backend_tensor_memset(t, 0x11, 4, 8);
    const unsigned char * d = t->data;
    cr_assert(all_bytes(d, 4, 0xA5));
    cr_assert(all_bytes(d + 4, 8, 0x11));
    cr_assert(all_bytes(d + 12, 20, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, memset_past_the_end_is_refused_whole) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 64);
    ggml_backend_tensor_memset(t, 0, 8, 9);
    ASSERT_ERROR();
    cr_assert(all_bytes(ggml_backend_buffer_get_base(b), 80, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, a_view_writes_into_its_source) {
    struct ggml_tensor * t = new_f32(8);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 2, 4 * sizeof(float));
    ggml_backend_buffer_t b = place(t, 0);
    cr_assert_eq(ggml_backend_view_init(v), GGML_STATUS_SUCCESS);
    const float in[2] = { 9, 10 };
    ggml_backend_tensor_set(v, in, 0, sizeof in);
    cr_assert_eq(((float *) t->data)[4], 9.0f);
    cr_assert_eq(((float *) t->data)[5], 10.0f);
    float out[1];
    ggml_backend_tensor_get(v, out, sizeof(float), sizeof out);
    cr_assert_eq(out[0], 10.0f);
    ggml_backend_buffer_free(b);
}

Test(tensor_io, a_view_is_bounded_by_its_own_size) {
    struct ggml_tensor * t = new_f32(8);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 2, 0);
    ggml_backend_buffer_t b = place(t, 0);
    ggml_backend_view_init(v);
    const float in[3] = { 1, 2, 3 };
    ggml_backend_tensor_set(v, in, 0, sizeof in);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 32, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, a_view_initialised_through_its_source_buffer) {
    /* a view made after its source was placed gets the buffer at creation */
    struct ggml_tensor * t = new_f32(8);
    ggml_backend_buffer_t b = place(t, 0);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 2, 8);
    const float in[2] = { 5, 6 };
    ggml_backend_tensor_set(v, in, 0, sizeof in);
    ASSERT_NO_ERROR();
    cr_assert_eq(((float *) t->data)[2], 5.0f);
    ggml_backend_buffer_free(b);
}

Test(tensor_io, a_tensor_without_a_buffer_is_refused) {
    struct ggml_init_params p = { 4096, NULL, false };
    struct ggml_context * c = ggml_init(p);
    struct ggml_tensor * t = ggml_new_tensor_1d(c, GGML_TYPE_F32, 4); /* context memory, no buffer */
    memset(t->data, 0x77, 16);
    const float in[4] = { 1, 2, 3, 4 };
    float out[4] = { 0 };
    ggml_backend_tensor_set(t, in, 0, sizeof in);
    ASSERT_ERROR();
    ggml_backend_tensor_get(t, out, 0, sizeof out);
    ASSERT_ERROR();
    ggml_backend_tensor_memset(t, 0, 0, 16);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 16, 0x77));
    cr_assert(all_bytes(out, 16, 0));
    ggml_free(c);
}

Test(tensor_io, an_unallocated_tensor_is_refused) {
    struct ggml_tensor * t = new_f32(4);
    const float in[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set(t, in, 0, sizeof in);
    ASSERT_ERROR();
}

Test(tensor_io, a_buffer_without_data_is_refused) {
    /* a buffer set but data NULL (corrupted or half-done placement) */
    ggml_backend_buffer_t b = cpu_buf(64);
    struct ggml_tensor * t = new_f32(4);
    t->buffer = b;
    const float in[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set(t, in, 0, sizeof in);
    ASSERT_ERROR();
    t->buffer = NULL;
    ggml_backend_buffer_free(b);
}

Test(tensor_io, null_tensor_and_null_data_are_refused) {
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = place(t, 0);
    float v[4] = { 0 };
    ggml_backend_tensor_set(NULL, v, 0, 4);
    ASSERT_ERROR();
    ggml_backend_tensor_get(NULL, v, 0, 4);
    ASSERT_ERROR();
    ggml_backend_tensor_memset(NULL, 0, 0, 4);
    ASSERT_ERROR();
    ggml_backend_tensor_set(t, NULL, 0, 4);
    ASSERT_ERROR();
    ggml_backend_tensor_get(t, NULL, 0, 4);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 16, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, a_buffer_without_memset_is_refused) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * t = new_f32(4);
    ggml_backend_buffer_t b = mock_place(t, 16);
    b->iface.memset_tensor = NULL;
    ggml_backend_tensor_memset(t, 1, 0, 16);
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 16, 0));
    ggml_backend_buffer_free(b);
}

Test(tensor_io, set_goes_through_the_owning_buffer) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * t = new_f32(4);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 2, 0);
    ggml_backend_buffer_t b = mock_place(t, 16);
    ggml_backend_view_init(v);
    const float in[2] = { 1, 2 };
    float out[2];
    ggml_backend_tensor_set(v, in, 0, sizeof in);
    ggml_backend_tensor_get(v, out, 0, sizeof out);
    ggml_backend_tensor_memset(v, 0, 0, 4);
    cr_assert_eq(g_mock.n_set, 1);
    cr_assert_eq(g_mock.n_get, 1);
    cr_assert_eq(g_mock.n_memset, 1);
    ggml_backend_buffer_free(b);
}

/* ==== 2-D forms ============================================================================== */

TestSuite(tensor_io_2d, .init = setup, .fini = teardown);

/* a 4x5 F32 matrix: rows of 16 bytes */
Test(tensor_io_2d, set_writes_rows_at_both_strides) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 0);
    /* host rows 3 floats apart; write the first 2 floats of rows 1, 2, 3 */
    const float host[9] = { 1, 2, -1, 3, 4, -1, 5, 6, -1 };
    ggml_backend_tensor_set_2d(t, host, t->nb[1], 2 * sizeof(float), 3, t->nb[1], 3 * sizeof(float));
    ASSERT_NO_ERROR();
    const float * d = t->data;
    cr_assert_eq(d[4], 1.0f);
    cr_assert_eq(d[5], 2.0f);
    cr_assert_eq(d[8], 3.0f);
    cr_assert_eq(d[13], 6.0f);
    cr_assert(all_bytes(d + 6, 8, 0xA5), "the rest of row 1 unchanged");
    cr_assert(all_bytes(d, 16, 0xA5), "row 0 unchanged");
    cr_assert(all_bytes(d + 16, 16, 0xA5), "row 4 unchanged");
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, get_reads_rows_at_both_strides) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 0);
    float * d = t->data;
    for (int i = 0; i < 20; i++) {
        d[i] = (float) i;
    }
    float host[8];
    memset(host, 0, sizeof host);
    /* column 1 of every other row, into a packed array */
    ggml_backend_tensor_get_2d(t, host, sizeof(float), sizeof(float), 3, 2 * t->nb[1], sizeof(float));
    cr_assert_eq(host[0], 1.0f);
    cr_assert_eq(host[1], 9.0f);
    cr_assert_eq(host[2], 17.0f);
    cr_assert_eq(host[3], 0.0f, "nothing past the last row");
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, last_row_past_the_end_is_refused_whole) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 64);
    float host[24] = { 0 };
    /* rows 2, 3, 4 fit; a 4th row at 5 does not */
    ggml_backend_tensor_set_2d(t, host, 2 * t->nb[1], 16, 4, t->nb[1], 16);
    ASSERT_ERROR();
    /* the last row runs 4 bytes past the end */
    ggml_backend_tensor_set_2d(t, host, 4, 16, 5, t->nb[1], 16);
    ASSERT_ERROR();
    cr_assert(all_bytes(ggml_backend_buffer_get_base(b), 80 + 64, 0xA5), "no row written");
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, get_past_the_end_is_refused_whole) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 64);
    unsigned char host[128];
    memset(host, 0x3C, sizeof host);
    ggml_backend_tensor_get_2d(t, host, 0, 16, 6, 16, 16);
    ASSERT_ERROR();
    cr_assert(all_bytes(host, sizeof host, 0x3C));
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, overflowing_strides_are_refused) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 0);
    float host[8] = { 0 };
    ggml_backend_tensor_set_2d(t, host, 0, 4, 3, SIZE_MAX / 2 + 1, 4); /* (n-1)*stride wraps */
    ASSERT_ERROR();
    ggml_backend_tensor_set_2d(t, host, 0, 4, 2, 4, SIZE_MAX); /* host rows wrap */
    ASSERT_ERROR();
    cr_assert(all_bytes(t->data, 80, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, zero_rows_or_bytes_are_a_no_op) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = place(t, 0);
    ggml_backend_tensor_set_2d(t, NULL, 0, 16, 0, 16, 16);
    ggml_backend_tensor_get_2d(t, NULL, 0, 0, 3, 16, 16);
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
    cr_assert(all_bytes(t->data, 80, 0xA5));
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, uses_the_buffers_2d_entry) {
    memset(&g_mock, 0, sizeof g_mock);
    g_mock.has_2d = true;
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = mock_place(t, 80);
    float host[20] = { 0 };
    ggml_backend_tensor_set_2d(t, host, 0, 16, 5, 16, 16);
    ggml_backend_tensor_get_2d(t, host, 0, 16, 5, 16, 16);
    cr_assert_eq(g_mock.n_set_2d, 1);
    cr_assert_eq(g_mock.n_get_2d, 1);
    cr_assert_eq(g_mock.n_set + g_mock.n_get, 0);
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, falls_back_to_rows_without_a_2d_entry) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    ggml_backend_buffer_t b = mock_place(t, 80);
    float in[10], out[10];
    for (int i = 0; i < 10; i++) {
        in[i] = (float) (i + 1);
    }
    ggml_backend_tensor_set_2d(t, in, 0, 8, 5, 16, 8);
    ggml_backend_tensor_get_2d(t, out, 0, 8, 5, 16, 8);
    cr_assert_eq(g_mock.n_set, 5);
    cr_assert_eq(g_mock.n_get, 5);
    cr_assert_arr_eq(in, out, sizeof in);
    cr_assert_eq(((float *) t->data)[4], 3.0f);
    ggml_backend_buffer_free(b);
}

Test(tensor_io_2d, unallocated_and_null_are_refused) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    float host[20] = { 0 };
    ggml_backend_tensor_set_2d(t, host, 0, 16, 2, 16, 16);
    ASSERT_ERROR();
    ggml_backend_tensor_get_2d(NULL, host, 0, 16, 2, 16, 16);
    ASSERT_ERROR();
    ggml_backend_buffer_t b = place(t, 0);
    ggml_backend_tensor_get_2d(t, NULL, 0, 16, 2, 16, 16);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}

/* ==== copies between tensors ================================================================= */

TestSuite(tensor_copy, .init = setup, .fini = teardown);

static void fill_seq(struct ggml_tensor * t) {
    float * d = t->data;
    for (int64_t i = 0; i < ggml_nelements(t); i++) {
        d[i] = (float) i + 0.5f;
    }
}

Test(tensor_copy, host_to_host) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    ggml_backend_buffer_t ba = place(a, 0), bc = place(c, 0);
    fill_seq(a);
    ggml_backend_tensor_copy(a, c);
    ASSERT_NO_ERROR();
    cr_assert_arr_eq(a->data, c->data, ggml_nbytes(a));
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, host_source_writes_through_the_destination_buffer) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = place(a, 0), bc = mock_place(c, 32);
    fill_seq(a);
    ggml_backend_tensor_copy(a, c);
    cr_assert_eq(g_mock.n_set, 1);
    cr_assert_arr_eq(a->data, c->data, 32);
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, host_destination_reads_through_the_source_buffer) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = mock_place(a, 32), bc = place(c, 0);
    fill_seq(a);
    ggml_backend_tensor_copy(a, c);
    cr_assert_eq(g_mock.n_get, 1);
    cr_assert_arr_eq(a->data, c->data, 32);
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, device_to_device_uses_cpy_tensor) {
    memset(&g_mock, 0, sizeof g_mock);
    g_mock.has_cpy = true;
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = mock_place(a, 32), bc = mock_place(c, 32);
    fill_seq(a);
    ggml_backend_tensor_copy(a, c);
    cr_assert_eq(g_mock.n_cpy, 1);
    cr_assert_eq(g_mock.n_get + g_mock.n_set, 0);
    cr_assert_arr_eq(a->data, c->data, 32);
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, device_to_device_bounces_without_cpy_tensor) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = mock_place(a, 32), bc = mock_place(c, 32);
    fill_seq(a);
    ggml_backend_tensor_copy(a, c);
    cr_assert_eq(g_mock.n_get, 1);
    cr_assert_eq(g_mock.n_set, 1);
    cr_assert_arr_eq(a->data, c->data, 32);
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, different_layouts_are_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3, 4);
    struct ggml_tensor * s = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3); /* shape */
    struct ggml_tensor * y = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 3, 4); /* type */
    struct ggml_tensor * tr = ggml_transpose(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3)); /* strides */
    ggml_backend_buffer_t ba = place(a, 0), bs = place(s, 0), by = place(y, 0), bt = place(tr->view_src, 0);
    ggml_backend_view_init(tr);
    fill_seq(a);
    ggml_backend_tensor_copy(a, s);
    ASSERT_ERROR();
    ggml_backend_tensor_copy(a, y);
    ASSERT_ERROR();
    ggml_backend_tensor_copy(a, tr);
    ASSERT_ERROR();
    cr_assert(all_bytes(s->data, 48, 0xA5));
    cr_assert(all_bytes(y->data, 48, 0xA5));
    cr_assert(all_bytes(tr->view_src->data, 48, 0xA5));
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bs);
    ggml_backend_buffer_free(by);
    ggml_backend_buffer_free(bt);
}

Test(tensor_copy, unallocated_or_null_is_refused) {
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = place(a, 0);
    ggml_backend_tensor_copy(a, c);
    ASSERT_ERROR();
    ggml_backend_tensor_copy(c, a);
    ASSERT_ERROR();
    ggml_backend_tensor_copy(NULL, a);
    ASSERT_ERROR();
    ggml_backend_tensor_copy(a, NULL);
    ASSERT_ERROR();
    cr_assert(all_bytes(a->data, 32, 0xA5));
    ggml_backend_buffer_free(ba);
}

Test(tensor_copy, onto_itself_is_a_no_op) {
    struct ggml_tensor * a = new_f32(8);
    ggml_backend_buffer_t ba = place(a, 0);
    ggml_backend_tensor_copy(a, a);
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(ba);
}

Test(tensor_copy, buffer_copy_tensor_is_false_without_cpy_tensor) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * a = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t ba = mock_place(a, 32), bc = mock_place(c, 32);
    cr_assert_not(ggml_backend_buffer_copy_tensor(a, c));
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bc);
}

Test(tensor_copy, cpu_cpy_tensor_takes_only_host_sources) {
    memset(&g_mock, 0, sizeof g_mock);
    struct ggml_tensor * h = new_f32(8);
    struct ggml_tensor * m = new_f32(8);
    struct ggml_tensor * c = new_f32(8);
    ggml_backend_buffer_t bh = place(h, 0), bm = mock_place(m, 32), bc = place(c, 0);
    fill_seq(h);
    cr_assert(ggml_backend_buffer_copy_tensor(h, c));
    cr_assert_arr_eq(h->data, c->data, 32);
    cr_assert_not(ggml_backend_buffer_copy_tensor(m, c), "the mock is not host memory");
    ggml_backend_buffer_free(bh);
    ggml_backend_buffer_free(bm);
    ggml_backend_buffer_free(bc);
}

/* ==== NULL handles =========================================================================== */

TestSuite(null_handles, .init = setup, .fini = teardown);

Test(null_handles, buffer_type_calls) {
    struct ggml_tensor * t = new_f32(4);
    cr_assert_null(ggml_backend_buft_name(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_buft_alloc_buffer(NULL, 16));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buft_get_alignment(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buft_get_max_size(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buft_get_alloc_size(NULL, t), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buft_get_alloc_size(ggml_backend_cpu_buffer_type(), NULL), 0);
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_buft_is_host(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_buft_get_device(NULL));
    ASSERT_ERROR();
}

Test(null_handles, buffer_calls) {
    struct ggml_tensor * t = new_f32(4);
    cr_assert_null(ggml_backend_buffer_name(NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_buffer_get_base(NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_size(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_init_tensor(NULL, t), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_alignment(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_max_size(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_alloc_size(NULL, t), 0);
    ASSERT_ERROR();
    ggml_backend_buffer_clear(NULL, 0);
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_buffer_is_host(NULL));
    ASSERT_ERROR();
    ggml_backend_buffer_set_usage(NULL, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_buffer_get_usage(NULL), GGML_BACKEND_BUFFER_USAGE_ANY);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_buffer_get_type(NULL));
    ASSERT_ERROR();
    ggml_backend_buffer_reset(NULL);
    ASSERT_ERROR();
    ggml_backend_multi_buffer_set_usage(NULL, GGML_BACKEND_BUFFER_USAGE_ANY);
    ASSERT_ERROR();
}

Test(null_handles, init_tensor_with_a_null_tensor) {
    ggml_backend_buffer_t b = cpu_buf(16);
    cr_assert_eq(ggml_backend_buffer_init_tensor(b, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}

/* ==== buffer types of other backends: defaults and broken answers ============================ */

TestSuite(buft_defaults, .init = setup, .fini = teardown);

Test(buft_defaults, missing_optional_entries_take_upstream_defaults) {
    struct ggml_tensor * t = new_f32(5);
    struct ggml_backend_buffer_type bare = {
        .iface = { .get_name = mock_name, .alloc_buffer = mock_alloc, .get_alignment = mock_align },
    };
    cr_assert_eq(ggml_backend_buft_get_max_size(&bare), SIZE_MAX);
    cr_assert_eq(ggml_backend_buft_get_alloc_size(&bare, t), ggml_nbytes(t));
    cr_assert_not(ggml_backend_buft_is_host(&bare));
    ASSERT_NO_ERROR();
}

static size_t too_small(ggml_backend_buffer_type_t buft, const struct ggml_tensor * t) {
    (void) buft;
    return ggml_nbytes(t) / 2;
}

Test(buft_defaults, alloc_size_below_nbytes_is_corrected) {
    struct ggml_tensor * t = new_f32(8);
    struct ggml_backend_buffer_type broken = {
        .iface = { .get_name = mock_name, .alloc_buffer = mock_alloc, .get_alignment = mock_align,
                   .get_alloc_size = too_small },
    };
    cr_assert_eq(ggml_backend_buft_get_alloc_size(&broken, t), 32);
    ASSERT_ERROR();
}

static ggml_backend_buffer_t alloc_fails_silently(ggml_backend_buffer_type_t buft, size_t size) {
    (void) buft;
    (void) size;
    return NULL;
}

Test(buft_defaults, a_failed_alloc_always_leaves_a_message) {
    struct ggml_backend_buffer_type silent = {
        .iface = { .get_name = mock_name, .alloc_buffer = alloc_fails_silently, .get_alignment = mock_align },
    };
    cr_assert_null(ggml_backend_buft_alloc_buffer(&silent, 100));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "MOCK") != NULL, "%s", ggmlx_last_error());
}
