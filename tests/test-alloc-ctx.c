/*
 * test-alloc-ctx.c -- ggml_backend_alloc_ctx_tensors(_from_buft)(_size): every unallocated
 * tensor of a no_alloc context in one buffer (several, wrapped in a multi-buffer, past the
 * type's max size), views initialised, nothing to do is NULL without an error, and a failure
 * leaves every tensor unallocated and leaks nothing.
 */
#include <criterion/criterion.h>

#include "test-errlog.h"

#include "alloc-test-buft.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
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

static struct ggml_tensor * f32(int64_t n) {
    return ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
}

static bool inside(const struct ggml_tensor * t, ggml_backend_buffer_t b) {
    const char * base = ggml_backend_buffer_get_base(b);
    return (const char *) t->data >= base && (const char *) t->data + ggml_nbytes(t) <= base + ggml_backend_buffer_get_size(b);
}

TestSuite(alloc_ctx, .init = setup, .fini = teardown);

Test(alloc_ctx, every_tensor_gets_memory_in_one_buffer) {
    struct ggml_tensor * a = f32(10); /* 40 -> 64 bytes */
    struct ggml_tensor * b = f32(32); /* 128 */
    struct ggml_tensor * c = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 3, 3); /* 18 -> 32 */
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(buf);
    cr_assert_null(ggmlx_last_error());
    cr_assert_not(ggml_backend_buffer_is_multi_buffer(buf));
    cr_assert_eq(ggml_backend_buffer_get_size(buf), 64 + 128 + 32);
    const struct ggml_tensor * ts[3] = { a, b, c };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ts[i]->buffer, buf);
        cr_assert(inside(ts[i], buf));
        cr_assert_eq((uintptr_t) ts[i]->data % 32, 0);
    }
    cr_assert_eq((char *) b->data - (char *) a->data, 64, "packed in creation order");
    ggml_backend_buffer_free(buf);
}

Test(alloc_ctx, the_size_call_gives_what_would_be_allocated) {
    f32(10);
    f32(100);
    ggml_view_1d(ctx, f32(8), 4, 0);
    const size_t size = ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_eq(size, 64 + 416 + 32);
    cr_assert_null(ggml_get_first_tensor(ctx)->data, "the size call allocates nothing");
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_eq(ggml_backend_buffer_get_size(buf), size);
    ggml_backend_buffer_free(buf);
}

Test(alloc_ctx, views_are_initialised_into_their_source) {
    struct ggml_tensor * t = f32(64);
    struct ggml_tensor * v = ggml_view_1d(ctx, t, 16, 8 * sizeof(float));
    struct ggml_tensor * vv = ggml_view_1d(ctx, v, 4, 4 * sizeof(float));
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(buf);
    cr_assert_eq(ggml_backend_buffer_get_size(buf), 256, "views take no memory");
    cr_assert_eq((char *) v->data, (char *) t->data + 32);
    cr_assert_eq((char *) vv->data, (char *) t->data + 48);
    cr_assert_eq(v->buffer, buf);
    cr_assert_eq(vv->buffer, buf);
    ggml_backend_buffer_free(buf);
}

Test(alloc_ctx, views_of_tensors_allocated_elsewhere_are_initialised) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * other = ggml_init(p);
    struct ggml_tensor * w = ggml_new_tensor_1d(other, GGML_TYPE_F32, 64);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(other, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(wbuf);

    struct ggml_tensor * v = ggml_view_1d(ctx, w, 8, 0);
    struct ggml_tensor * t = f32(8);
    v->buffer = NULL; /* as a view made before w had memory would be */
    v->data   = NULL;
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(buf);
    cr_assert_eq(v->data, w->data);
    cr_assert_eq(v->buffer, wbuf);
    cr_assert_eq(t->buffer, buf);
    ggml_backend_buffer_free(buf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(other);
}

Test(alloc_ctx, views_are_initialised_even_when_nothing_needs_a_buffer) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * other = ggml_init(p);
    struct ggml_tensor * w = ggml_new_tensor_1d(other, GGML_TYPE_F32, 64);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(other, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(wbuf);
    struct ggml_tensor * v = ggml_view_1d(ctx, w, 8, 16 * sizeof(float));
    v->buffer = NULL;
    v->data   = NULL;
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()));
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq((char *) v->data, (char *) w->data + 64);
    cr_assert_eq(v->buffer, wbuf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(other);
}

Test(alloc_ctx, a_view_of_a_source_with_no_memory_is_refused) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * other = ggml_init(p);
    struct ggml_tensor * w = ggml_new_tensor_1d(other, GGML_TYPE_F32, 64);
    ggml_view_1d(ctx, w, 8, 0);
    struct ggml_tensor * t = f32(8);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()));
    ASSERT_ERROR();
    cr_assert_null(t->data, "nothing is left half done");
    ggml_free(other);
}

Test(alloc_ctx, only_unallocated_tensors_are_placed) {
    struct ggml_tensor * a = f32(8);
    ggml_backend_buffer_t first = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(first);
    void * a_data = a->data;
    struct ggml_tensor * b = f32(16);
    ggml_backend_buffer_t second = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(second);
    cr_assert_eq(a->data, a_data);
    cr_assert_eq(a->buffer, first);
    cr_assert_eq(b->buffer, second);
    cr_assert_eq(ggml_backend_buffer_get_size(second), 64);
    ggml_backend_buffer_free(second);
    ggml_backend_buffer_free(first);
}

Test(alloc_ctx, nothing_to_allocate_is_null_without_an_error) {
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()), "empty context");
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(g_n_errors, 0);
    f32(4);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(buf);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()), "all placed already");
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(g_n_errors, 0);
    cr_assert_eq(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, ggml_backend_cpu_buffer_type()), 0);
    ggml_backend_buffer_free(buf);
}

Test(alloc_ctx, tensors_past_max_size_go_to_a_multi_buffer) {
    static struct tb_buft tb;
    ggml_backend_buffer_type_t buft = tb_init(&tb, 0, 1024, 0);
    struct ggml_tensor * t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = f32(128); /* 512 bytes: two per buffer */
    }
    cr_assert_eq(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, buft), 5 * 512);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    cr_assert_not_null(buf);
    cr_assert(ggml_backend_buffer_is_multi_buffer(buf));
    cr_assert_eq(ggml_backend_buffer_get_size(buf), 5 * 512);
    cr_assert_eq(tb.st.live_bufs, 3);
    cr_assert_eq(t[0]->buffer, t[1]->buffer);
    cr_assert_neq(t[1]->buffer, t[2]->buffer);
    cr_assert_eq(t[2]->buffer, t[3]->buffer);
    for (int i = 0; i < 5; i++) {
        cr_assert_leq(ggml_backend_buffer_get_size(t[i]->buffer), 1024);
        cr_assert(inside(t[i], t[i]->buffer));
    }
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    cr_assert_eq(ggml_backend_buffer_get_usage(t[4]->buffer), GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    ggml_backend_buffer_free(buf);
    cr_assert_eq(tb.st.live_bufs, 0, "freeing the multi-buffer frees every part");
}

Test(alloc_ctx, a_tensor_larger_than_max_size_gets_a_buffer_of_its_own) {
    static struct tb_buft tb;
    ggml_backend_buffer_type_t buft = tb_init(&tb, 0, 1024, 0);
    struct ggml_tensor * small = f32(16);
    struct ggml_tensor * big   = f32(1024); /* 4096 bytes */
    struct ggml_tensor * last  = f32(16);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    cr_assert_not_null(buf);
    cr_assert_eq(tb.st.live_bufs, 3);
    cr_assert_eq(ggml_backend_buffer_get_size(big->buffer), 4096);
    cr_assert_neq(small->buffer, big->buffer);
    cr_assert_neq(last->buffer, big->buffer);
    ggml_backend_buffer_free(buf);
    cr_assert_eq(tb.st.live_bufs, 0);
}

Test(alloc_ctx, a_failed_buffer_leaves_every_tensor_unallocated) {
    static struct tb_buft tb;
    ggml_backend_buffer_type_t buft = tb_init(&tb, 1536, 1024, 0); /* room for the first buffer only */
    struct ggml_tensor * t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = f32(128);
    }
    struct ggml_tensor * v = ggml_view_1d(ctx, t[0], 4, 0);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft));
    ASSERT_ERROR();
    cr_assert_eq(tb.st.n_allocs, 1, "the first buffer was made ...");
    cr_assert_eq(tb.st.n_refused, 1);
    cr_assert_eq(tb.st.live_bufs, 0, "... and freed again");
    for (int i = 0; i < 4; i++) {
        cr_assert_null(t[i]->data, "tensor %d points into freed memory", i);
        cr_assert_null(t[i]->buffer);
    }
    cr_assert_null(v->data);
    cr_assert_null(v->buffer);

    tb.st.limit = 0; /* the device has room again: the same context allocates */
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, buft);
    cr_assert_not_null(buf);
    cr_assert_eq(v->data, t[0]->data);
    ggml_backend_buffer_free(buf);
}

Test(alloc_ctx, a_huge_tensor_fails_without_aborting) {
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t) 1 << 58);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type()));
    ASSERT_ERROR();
    cr_assert_null(ggml_get_first_tensor(ctx)->data);
}

Test(alloc_ctx, a_context_with_its_own_memory_is_refused) {
    struct ggml_init_params p = { 64 * 1024, NULL, false };
    struct ggml_context * c = ggml_init(p);
    ggml_new_tensor_1d(c, GGML_TYPE_F32, 16);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(c, ggml_backend_cpu_buffer_type()));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_alloc_ctx_tensors_from_buft_size(c, ggml_backend_cpu_buffer_type()), 0);
    ASSERT_ERROR();
    ggml_free(c);
}

Test(alloc_ctx, null_arguments_are_refused) {
    f32(4);
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(NULL, ggml_backend_cpu_buffer_type()));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_alloc_ctx_tensors_from_buft(ctx, NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_alloc_ctx_tensors_from_buft_size(NULL, ggml_backend_cpu_buffer_type()), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_alloc_ctx_tensors_from_buft_size(ctx, NULL), 0);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_alloc_ctx_tensors(ctx, NULL));
    ASSERT_ERROR();
    cr_assert_null(ggml_get_first_tensor(ctx)->data);
}

Test(alloc_ctx, with_a_backend_uses_its_default_buffer_type) {
    ggml_backend_t backend = ggml_backend_cpu_init();
    cr_assert_not_null(backend);
    struct ggml_tensor * t = f32(16);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    cr_assert_not_null(buf);
    cr_assert_eq(ggml_backend_buffer_get_type(buf), ggml_backend_get_default_buffer_type(backend));
    cr_assert_eq(t->buffer, buf);
    ggml_backend_buffer_free(buf);
    ggml_backend_free(backend);
}
