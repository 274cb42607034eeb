/*
 * test-context.c -- contexts: memory accounting, user buffers, no_alloc, reset, walking tensors.
 */
#include <criterion/criterion.h>

#include "test-util.h"
#include "ggml-impl.h"

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
