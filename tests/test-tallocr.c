/*
 * test-tallocr.c -- the linear allocator (ggml_tallocr_new / ggml_tallocr_alloc): tensors one
 * after the other at the buffer's alignment; a full buffer is GGML_STATUS_ALLOC_FAILED with the
 * allocator unchanged; bad input is refused without aborting.
 */
#include <criterion/criterion.h>

#include "test-errlog.h"

#include "alloc-test-buft.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx.h"

#include <stdint.h>

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

static ggml_backend_buffer_t cpu_buffer(size_t size) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
    cr_assert_not_null(b);
    return b;
}

static struct ggml_tensor * f32(int64_t n) {
    return ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
}

TestSuite(tallocr, .init = setup, .fini = teardown);

Test(tallocr, new_takes_the_buffers_base_and_alignment) {
    ggml_backend_buffer_t b = cpu_buffer(1024);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    cr_assert_eq(ta.buffer, b);
    cr_assert_eq(ta.base, ggml_backend_buffer_get_base(b));
    cr_assert_eq(ta.alignment, ggml_backend_buffer_get_alignment(b));
    cr_assert_eq(ta.offset, 0, "a CPU buffer's base is aligned, so the first tensor starts at it");
    ggml_backend_buffer_free(b);
}

Test(tallocr, tensors_follow_each_other_at_the_alignment) {
    ggml_backend_buffer_t b = cpu_buffer(1024);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    struct ggml_tensor * t0 = f32(10); /* 40 bytes, padded to 64 */
    struct ggml_tensor * t1 = f32(8);  /* 32 bytes */
    struct ggml_tensor * t2 = f32(1);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t0), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t1), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t2), GGML_STATUS_SUCCESS);
    char * base = ggml_backend_buffer_get_base(b);
    cr_assert_eq((char *) t0->data, base);
    cr_assert_eq((char *) t1->data, base + 64);
    cr_assert_eq((char *) t2->data, base + 96);
    cr_assert_eq(ta.offset, 128);
    cr_assert_eq(t0->buffer, b);
    cr_assert_eq(t2->buffer, b);
    ggml_backend_buffer_free(b);
}

Test(tallocr, follows_a_larger_alignment_of_the_buffer_type) {
    static struct tb_buft tb;
    ggml_backend_buffer_type_t buft = tb_init(&tb, 0, 0, 256);
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(buft, 4096);
    cr_assert_not_null(b);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    cr_assert_eq(ta.alignment, 256);
    struct ggml_tensor * t0 = f32(3);
    struct ggml_tensor * t1 = f32(3);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t0), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t1), GGML_STATUS_SUCCESS);
    cr_assert_eq((char *) t1->data - (char *) t0->data, 256);
    cr_assert_eq(ta.offset - (size_t) ((char *) t0->data - (char *) ta.base), 512);
    ggml_backend_buffer_free(b);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(tallocr, placed_tensors_hold_their_data) {
    ggml_backend_buffer_t b = cpu_buffer(256);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    struct ggml_tensor * t0 = f32(4);
    struct ggml_tensor * t1 = f32(4);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t0), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t1), GGML_STATUS_SUCCESS);
    const float a[4] = { 1, 2, 3, 4 }, c[4] = { -1, -2, -3, -4 };
    ggml_backend_tensor_set(t0, a, 0, sizeof a);
    ggml_backend_tensor_set(t1, c, 0, sizeof c);
    float got[4];
    ggml_backend_tensor_get(t0, got, 0, sizeof got);
    cr_assert_arr_eq(got, a, sizeof a);
    ggml_backend_tensor_get(t1, got, 0, sizeof got);
    cr_assert_arr_eq(got, c, sizeof c);
    ggml_backend_buffer_free(b);
}

Test(tallocr, a_tensor_that_exactly_fills_the_buffer_fits) {
    ggml_backend_buffer_t b = cpu_buffer(128);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    cr_assert_eq(ggml_tallocr_alloc(&ta, f32(16)), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_tallocr_alloc(&ta, f32(16)), GGML_STATUS_SUCCESS);
    cr_assert_eq(ta.offset, 128);
    ggml_backend_buffer_free(b);
}

Test(tallocr, full_buffer_is_alloc_failed_and_changes_nothing) {
    ggml_backend_buffer_t b = cpu_buffer(128);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    cr_assert_eq(ggml_tallocr_alloc(&ta, f32(24)), GGML_STATUS_SUCCESS); /* 96 bytes */
    const struct ggml_tallocr before = ta;
    struct ggml_tensor * big = f32(9);                                    /* 36 > 32 left */
    cr_assert_eq(ggml_tallocr_alloc(&ta, big), GGML_STATUS_ALLOC_FAILED);
    ASSERT_ERROR();
    cr_assert_null(big->data);
    cr_assert_null(big->buffer);
    cr_assert_eq(ta.offset, before.offset);
    /* what still fits, fits */
    struct ggml_tensor * small = f32(8);
    cr_assert_eq(ggml_tallocr_alloc(&ta, small), GGML_STATUS_SUCCESS);
    cr_assert_eq((char *) small->data, (char *) ta.base + 96);
    ggml_backend_buffer_free(b);
}

Test(tallocr, an_empty_tensor_takes_no_room) {
    ggml_backend_buffer_t b = cpu_buffer(64);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    struct ggml_tensor * e = f32(0);
    cr_assert_eq(ggml_tallocr_alloc(&ta, e), GGML_STATUS_SUCCESS);
    cr_assert_not_null(e->data);
    cr_assert_eq(ta.offset, 0);
    ggml_backend_buffer_free(b);
}

Test(tallocr, new_with_null_buffer_is_refused) {
    struct ggml_tallocr ta = ggml_tallocr_new(NULL);
    ASSERT_ERROR();
    cr_assert_null(ta.buffer);
    cr_assert_eq(ggml_tallocr_alloc(&ta, f32(4)), GGML_STATUS_FAILED, "an allocator made from NULL places nothing");
    ASSERT_ERROR();
}

Test(tallocr, null_arguments_are_refused) {
    ggml_backend_buffer_t b = cpu_buffer(64);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    cr_assert_eq(ggml_tallocr_alloc(NULL, f32(4)), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_tallocr_alloc(&ta, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ta.offset, 0);
    ggml_backend_buffer_free(b);
}

Test(tallocr, an_allocated_tensor_is_refused_and_keeps_its_memory) {
    ggml_backend_buffer_t b = cpu_buffer(256);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    struct ggml_tensor * t = f32(4);
    cr_assert_eq(ggml_tallocr_alloc(&ta, t), GGML_STATUS_SUCCESS);
    void * data = t->data;
    const size_t offset = ta.offset;
    cr_assert_eq(ggml_tallocr_alloc(&ta, t), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(t->data, data);
    cr_assert_eq(ta.offset, offset);
    ggml_backend_buffer_free(b);
}

Test(tallocr, a_view_is_refused) {
    ggml_backend_buffer_t b = cpu_buffer(256);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    struct ggml_tensor * t = f32(8);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 4, 0);
    cr_assert_eq(ggml_tallocr_alloc(&ta, v), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_null(v->data);
    cr_assert_eq(ta.offset, 0);
    ggml_backend_buffer_free(b);
}

Test(tallocr, an_allocator_with_a_broken_alignment_is_refused) {
    ggml_backend_buffer_t b = cpu_buffer(256);
    struct ggml_tallocr ta = ggml_tallocr_new(b);
    ta.alignment = 48;
    cr_assert_eq(ggml_tallocr_alloc(&ta, f32(4)), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_buffer_free(b);
}
