/*
 * test-context.c -- contexts: memory accounting, user buffers, no_alloc, reset, walking tensors,
 * and sizes so large that rounding them up would wrap past zero (refused, with a message).
 */
#include <criterion/criterion.h>

#include "test-errlog.h"
#include "test-util.h"
#include "ggml-impl.h"

#include <limits.h>

Test(context, init_and_free_own_memory) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    cr_assert_geq(ggml_get_mem_size(ctx), 1024 * 1024);
    cr_assert_eq(ggml_used_mem(ctx), 0);
    cr_assert_not_null(ggml_get_mem_buffer(ctx));
    ggml_free(ctx);
    ggml_free(NULL); /* allowed */
}

Test(context, used_mem_grows_by_at_most_overhead_plus_data) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    size_t before = ggml_used_mem(ctx);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100);
    cr_assert_not_null(t);
    size_t grew = ggml_used_mem(ctx) - before;
    cr_assert_geq(grew, 400);
    cr_assert_leq(grew, ggml_tensor_overhead() + 400 + GGML_MEM_ALIGN);
    ggml_free(ctx);
}

Test(context, n_tensors_fit_in_n_overheads_when_no_alloc) {
    const int n = 50;
    struct ggml_init_params p = { (size_t) n * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (int i = 0; i < n; i++) {
        struct ggml_tensor * t = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1000, 1000);
        cr_assert_not_null(t, "tensor %d: %s", i, ggmlx_last_error());
        cr_assert_null(t->data);
    }
    ggml_free(ctx);
}

Test(context, user_buffer_is_used_and_not_freed) {
    static unsigned char mem[64 * 1024 + 3];
    struct ggml_init_params p = { sizeof mem - 3, mem + 3, false }; /* deliberately unaligned */
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_eq(ggml_get_mem_buffer(ctx), mem + 3);
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    cr_assert_not_null(t);
    cr_assert((unsigned char *) t->data >= mem && (unsigned char *) t->data < mem + sizeof mem);
    cr_assert_eq(((uintptr_t) t->data) % 64, 0, "data should be cache-line aligned");
    ggml_free(ctx); /* must not free mem: a crash here would be the failure */
    mem[0] = 1;
}

Test(context, no_alloc_toggle) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not(ggml_get_no_alloc(ctx));
    ggml_set_no_alloc(ctx, true);
    cr_assert(ggml_get_no_alloc(ctx));
    cr_assert_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8)->data);
    ggml_set_no_alloc(ctx, false);
    cr_assert_not_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8)->data);
    ggml_free(ctx);
}

Test(context, reset_forgets_objects_and_failure) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    cr_assert_null(ggml_add(ctx, NULL, NULL));
    cr_assert(ggmlx_context_is_failed(ctx));
    ggml_reset(ctx);
    cr_assert_eq(ggml_used_mem(ctx), 0);
    cr_assert_null(ggml_get_first_tensor(ctx));
    cr_assert_not(ggmlx_context_is_failed(ctx));
    cr_assert_not_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8));
    ggml_free(ctx);
}

Test(context, walk_tensors_in_creation_order_and_find_by_name) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "a");
    ggml_new_buffer(ctx, 100); /* not a tensor: skipped by the walk */
    struct ggml_tensor * b = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4), "b");
    cr_assert_eq(ggml_get_first_tensor(ctx), a);
    cr_assert_eq(ggml_get_next_tensor(ctx, a), b);
    cr_assert_null(ggml_get_next_tensor(ctx, b));
    cr_assert_eq(ggml_get_tensor(ctx, "b"), b);
    cr_assert_null(ggml_get_tensor(ctx, "nope"));
    cr_assert_null(ggmlx_last_error(), "a missing name is not an error");
    ggml_free(ctx);
}

Test(context, max_tensor_size) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 10);
    ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 10, 30);
    ggml_new_tensor_1d(ctx, GGML_TYPE_I8, 7);
    cr_assert_eq(ggml_get_max_tensor_size(ctx), 600);
    ggml_free(ctx);
}

Test(context, out_of_memory_is_null_and_marks_context) {
    struct ggml_init_params p = { 4096, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * small = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
    cr_assert_not_null(small);
    size_t used = ggml_used_mem(ctx);
    cr_assert_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 100000));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "out of memory") != NULL, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_used_mem(ctx), used, "a failed allocation must not consume memory");
    cr_assert(ggmlx_context_is_failed(ctx));
    ggml_free(ctx);
}

Test(context, new_buffer_and_print_objects) {
    struct ggml_init_params p = { 64 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    void * buf = ggml_new_buffer(ctx, 1000);
    cr_assert_not_null(buf);
    memset(buf, 0x5a, 1000);
    ggml_print_objects(ctx);
    cr_assert_null(ggml_new_buffer(ctx, 1u << 30));
    ggml_free(ctx);
}

/* ---- sizes near SIZE_MAX: refused before any padding can wrap them ------------------------- */

static void assert_refused_once(const char * func, const char * why) {
    cr_assert_eq(g_n_errors, 1, "%s: logged once", func);
    cr_assert_not_null(ggmlx_last_error(), "%s: error recorded", func);
    cr_assert(strstr(ggmlx_last_error(), func) != NULL && strstr(ggmlx_last_error(), why) != NULL,
              "%s: says '%s': %s", func, why, ggmlx_last_error());
    ggmlx_clear_last_error();
    g_n_errors = 0;
}

Test(context, init_with_mem_size_near_size_max_fails_instead_of_wrapping) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
    /* GGML_PAD(SIZE_MAX - k, 64) is 0 for k < 63: this was a 0-byte context and no error */
    const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 62, SIZE_MAX - 63, (size_t) PTRDIFF_MAX + 1,
                             (size_t) 1 << 62 /* more than any machine has: refused, not asked of malloc */ };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct ggml_init_params p = { sizes[i], NULL, false };
        cr_assert_null(ggml_init(p), "mem_size %zu", sizes[i]);
        assert_refused_once("ggml_init", "more memory than this machine has");
        p.no_alloc = true; /* the context's own memory is allocated either way */
        cr_assert_null(ggml_init(p), "mem_size %zu, no_alloc", sizes[i]);
        assert_refused_once("ggml_init", "mem_size");
    }
    /* still usable, and the next success clears the error (the leak check of a sanitizer
     * build fails this test if a refused init kept its header) */
    struct ggml_init_params ok = { 1024, NULL, false };
    cr_assert_null(ggml_init((struct ggml_init_params) { SIZE_MAX, NULL, false }));
    struct ggml_context * ctx = ggml_init(ok);
    cr_assert_not_null(ctx);
    ASSERT_NO_ERROR();
    cr_assert_geq(ggml_get_mem_size(ctx), 1024);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

Test(context, init_with_a_user_buffer_past_the_address_space_fails) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
    static unsigned char mem[256];
    memset(mem, 0xa5, sizeof mem);
    const size_t sizes[] = { SIZE_MAX, (size_t) PTRDIFF_MAX + 1, SIZE_MAX - (uintptr_t) mem + 1 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct ggml_init_params p = { sizes[i], mem, false };
        cr_assert_null(ggml_init(p), "mem_size %zu", sizes[i]);
        assert_refused_once("ggml_init", "past the end of the address space");
    }
    for (size_t i = 0; i < sizeof mem; i++) {
        cr_assert_eq(mem[i], 0xa5, "the caller's buffer is untouched (byte %zu)", i);
    }
    ggml_log_set(NULL, NULL);
}

Test(context, an_object_near_size_max_is_out_of_memory_with_the_size_asked) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
    struct ggml_init_params p = { 64 * 1024, NULL, false };
    struct ggml_context * ctx = ggml_init(p);
    void * keep = ggml_new_buffer(ctx, 100);
    const size_t used = ggml_used_mem(ctx);
    /* padded to 16 these wrap to 0 bytes */
    const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 7, SIZE_MAX - 14 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_assert_null(ggml_new_buffer(ctx, sizes[i]));
        char want[64];
        snprintf(want, sizeof want, "%zu bytes asked for", sizes[i]);
        assert_refused_once("ggml_new_object", want);
        cr_assert_eq(ggml_used_mem(ctx), used, "nothing taken");
        ggml_reset(ctx);
        keep = ggml_new_buffer(ctx, 100);
    }
    cr_assert_not_null(keep);
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

Test(context, graph_size_out_of_range_is_refused_before_its_bytes_can_wrap) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
    const size_t bad[] = { SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / 8 + 1, (size_t) INT32_MAX, (size_t) INT32_MAX / 4 + 1 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(ggml_graph_overhead_custom(bad[i], false), 0, "size %zu", bad[i]);
        assert_refused_once("ggml_graph_overhead_custom", "out of range");
    }
    /* the largest size allowed: its overhead is a real byte count, larger than its node arrays */
    const size_t max = (size_t) INT32_MAX / 4;
    cr_assert_gt(ggml_graph_overhead_custom(max, false), 2 * max * sizeof(struct ggml_tensor *));
    ASSERT_NO_ERROR();

    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(ggml_new_graph_custom(ctx, bad[i], false), "size %zu", bad[i]);
        assert_refused_once("ggml_new_graph_custom", "out of range");
        cr_assert_eq(ggml_used_mem(ctx), 0, "nothing taken");
        ggml_reset(ctx);
    }
    cr_assert_null(ggml_new_graph_custom(ctx, 0, false));
    assert_refused_once("ggml_new_graph_custom", "out of range");
    ggml_reset(ctx);
    /* too big for this context, but a valid size: an ordinary out of memory */
    cr_assert_null(ggml_new_graph_custom(ctx, max, false));
    assert_refused_once("ggml_new_object", "out of memory");
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}
