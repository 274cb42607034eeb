/*
 * test-errors.c -- the error contract (docs/architecture.md §4, docs/errors.md): bad input never aborts; it
 * gives NULL or an error status, a message through the log callback and ggmlx_last_error(),
 * marks the context or graph failed, and changes nothing else.
 */
#include <criterion/criterion.h>

#include "test-util.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 4 * 1024 * 1024, NULL, false };
    ctx = ggml_init(p);
}

static void teardown(void) {
    ggml_free(ctx);
    ggml_log_set(NULL, NULL);
}

TestSuite(errors, .init = setup, .fini = teardown);

static char g_logged[1024];
static int  g_n_errors;

static void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        g_n_errors++;
        snprintf(g_logged, sizeof g_logged, "%s", text);
    }
}

Test(errors, bad_shapes_give_null_message_and_failed_context) {
    ggml_log_set(capture_log, NULL);
    g_n_errors = 0;
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 5, 3);
    cr_assert_null(ggml_add(ctx, a, b));
    cr_assert_eq(g_n_errors, 1);
    cr_assert(strstr(g_logged, "ggml_add") != NULL, "log names the function: %s", g_logged);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "ggml_add") != NULL);
    cr_assert(ggmlx_context_is_failed(ctx));
}

Test(errors, mismatched_types_are_refused) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    struct ggml_tensor * i = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 3);
    cr_assert_null(ggml_get_rows(ctx, a, i), "row indices must be I32");
    cr_assert(ggmlx_context_is_failed(ctx));
}

Test(errors, null_inputs_are_refused) {
    cr_assert_null(ggml_relu(ctx, NULL));
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_null(ggml_relu(NULL, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 2)));
    cr_assert_null(ggml_mul_mat(ctx, NULL, NULL));
    cr_assert_null(ggml_view_1d(ctx, NULL, 1, 0));
}

Test(errors, later_constructors_fail_after_a_failure) {
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    cr_assert_null(ggml_add(ctx, a, ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3)));
    cr_assert_null(ggml_relu(ctx, a), "a valid op on a failed context still fails");
    cr_assert(strstr(ggmlx_last_error(), "already failed") != NULL, "%s", ggmlx_last_error());
    cr_assert_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4));
    cr_assert_null(ggml_new_graph(ctx));
}

Test(errors, failed_optional_argument_is_not_taken_for_none) {
    /* soft_max_ext's mask may be NULL ("none"); a mask from a failed constructor must not
     * silently become "no mask": the context is failed, so the soft_max itself fails */
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 8);
    struct ggml_tensor * bad_mask = ggml_view_2d(ctx, x, 8, 9, x->nb[1], 0); /* out of range */
    cr_assert_null(bad_mask);
    cr_assert_null(ggml_soft_max_ext(ctx, x, bad_mask, 1.0f, 0.0f));
}

Test(errors, graph_with_null_tensor_fails_to_compute) {
    struct ggml_init_params p = { 1024 * 1024, NULL, false };
    struct ggml_context * other = ggml_init(p);
    struct ggml_cgraph * g = ggml_new_graph(other);
    struct ggml_tensor * ok = ggml_relu(other, ggml_new_tensor_1d(other, GGML_TYPE_F32, 4));
    ggml_build_forward_expand(g, ok);
    ggml_build_forward_expand(g, NULL);
    cr_assert(ggmlx_graph_is_failed(g));
    cr_assert_eq(ggml_graph_compute_with_ctx(other, g, 1), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    ggml_free(other);
}

Test(errors, success_clears_last_error) {
    cr_assert_null(ggml_relu(ctx, NULL));
    cr_assert_not_null(ggmlx_last_error());
    ggml_reset(ctx);
    cr_assert_not_null(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1));
    cr_assert_null(ggmlx_last_error());
    cr_assert_null(ggml_relu(ctx, NULL));
    ggmlx_clear_last_error();
    cr_assert_null(ggmlx_last_error());
}

static void * fail_on_other_thread(void * arg) {
    (void) arg;
    ggml_relu(NULL, NULL);
    return (void *) (ggmlx_last_error() != NULL ? (intptr_t) 1 : (intptr_t) 0);
}

Test(errors, last_error_is_per_thread) {
    ggmlx_clear_last_error();
    pthread_t th;
    void * had_error = NULL;
    pthread_create(&th, NULL, fail_on_other_thread, NULL);
    pthread_join(th, &had_error);
    cr_assert_eq((intptr_t) had_error, 1);
    cr_assert_null(ggmlx_last_error(), "another thread's error is not ours");
}

Test(errors, bad_tensor_creation_arguments) {
    cr_assert_null(ggml_new_tensor_1d(ctx, (enum ggml_type) 4, 8), "removed type");
    ggml_reset(ctx);
    cr_assert_null(ggml_new_tensor_1d(ctx, GGML_TYPE_COUNT, 8));
    ggml_reset(ctx);
    cr_assert_null(ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, -1));
    ggml_reset(ctx);
    const int64_t ne[5] = { 1, 1, 1, 1, 1 };
    cr_assert_null(ggml_new_tensor(ctx, GGML_TYPE_F32, 5, ne));
    ggml_reset(ctx);
    cr_assert_null(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, INT64_MAX / 2, 4, 4, 4), "size overflow");
}

/* ne0 times the element size alone overflows 64 bits (4 * 2^62 wraps to 0 bytes) */
Test(errors, tensor_size_overflow_in_dim0_is_refused) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    cr_assert_null(ggml_new_tensor_1d(meta, GGML_TYPE_F32, (int64_t) 1 << 62), "4 * 2^62 bytes wraps to 0");
    ggml_reset(meta);
    cr_assert_null(ggml_new_tensor_1d(meta, GGML_TYPE_F32, INT64_MAX / 2));
    ggml_free(meta);
}

Test(errors, context_out_of_memory_keeps_earlier_tensors_intact) {
    struct ggml_init_params p = { 8192, NULL, false };
    struct ggml_context * small = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_1d(small, GGML_TYPE_F32, 16);
    ggml_set_f32(a, 4.0f);
    cr_assert_null(ggml_new_tensor_1d(small, GGML_TYPE_F32, 4096));
    for (int i = 0; i < 16; i++) {
        cr_assert_float_eq(ggml_get_f32_1d(a, i), 4.0f, 0);
    }
    ggml_free(small);
}

Test(errors, unsupported_op_fails_compute_without_writing) {
    /* a copy into a codebook type is a valid graph the CPU kernels do not compute (no quantizer from F32) */
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 256);
    struct ggml_tensor * first = ggml_scale(ctx, x, 2.0f);
    struct ggml_tensor * q = ggml_cast(ctx, first, GGML_TYPE_IQ2_XXS);
    cr_assert_not_null(q);
    ggml_set_f32(x, 1.0f);
    ggml_set_f32(first, 7.0f);
    cr_assert_eq(tu_compute(ctx, q, 1), GGML_STATUS_FAILED);
    cr_assert(strstr(ggmlx_last_error(), "not supported") != NULL, "%s", ggmlx_last_error());
    cr_assert_float_eq(ggml_get_f32_1d(first, 0), 7.0f, 0, "nothing ran: the failure was found before computing");
}

Test(errors, unallocated_tensor_fails_compute) {
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    struct ggml_tensor * x = ggml_new_tensor_1d(meta, GGML_TYPE_F32, 4);
    struct ggml_tensor * y = ggml_relu(meta, x);
    struct ggml_cgraph * g = ggml_new_graph(meta);
    ggml_build_forward_expand(g, y);
    cr_assert_eq(ggml_graph_compute_with_ctx(meta, g, 1), GGML_STATUS_FAILED);
    cr_assert(strstr(ggmlx_last_error(), "no data") != NULL, "%s", ggmlx_last_error());
    ggml_free(meta);
}

Test(errors, plan_without_work_buffer_fails) {
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 64, 64);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, 64);
    struct ggml_tensor * c = ggml_sum(ctx, ggml_mul_mat(ctx, a, b));
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, c);
    struct ggml_cplan plan = ggml_graph_plan(g, 2, NULL);
    if (plan.work_size == 0) {
        cr_skip_test("this graph needs no work buffer with the current kernels");
    }
    cr_assert_eq(ggml_graph_compute(g, &plan), GGML_STATUS_FAILED);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(ggml_graph_compute(NULL, &plan), GGML_STATUS_FAILED);
    cr_assert_eq(ggml_graph_compute(g, NULL), GGML_STATUS_FAILED);
}

Test(errors, null_handles_in_queries_do_not_crash) {
    cr_assert_eq(ggml_nelements(NULL), 0);
    cr_assert_eq(ggml_nbytes(NULL), 0);
    cr_assert_null(ggml_get_name(NULL));
    cr_assert_eq(ggml_graph_n_nodes(NULL), 0);
    cr_assert_null(ggml_graph_node(NULL, 0));
    cr_assert_null(ggml_get_tensor(NULL, "x"));
    cr_assert_null(ggml_set_zero(NULL));
    cr_assert_null(ggml_set_name(NULL, "x"));
    ggml_set_input(NULL);
    ggml_build_forward_expand(NULL, NULL);
    ggml_graph_print(NULL);
    cr_assert_eq(ggml_used_mem(NULL), 0);
    ggml_reset(NULL);
}

/* a failed setter returns NULL like every pointer function, not its (unchanged) tensor */
static void assert_refused(const char * func, const char * why) {
    cr_assert_eq(g_n_errors, 1, "%s: logged once", func);
    cr_assert(strstr(g_logged, func) != NULL, "log names %s: %s", func, g_logged);
    cr_assert_not_null(ggmlx_last_error(), "%s: error recorded", func);
    cr_assert(strstr(ggmlx_last_error(), func) != NULL && strstr(ggmlx_last_error(), why) != NULL,
              "%s: says '%s': %s", func, why, ggmlx_last_error());
    ggmlx_clear_last_error();
    g_n_errors = 0;
}

Test(errors, a_failing_pointer_setter_returns_null_and_changes_nothing) {
    ggml_log_set(capture_log, NULL);
    g_n_errors = 0;
    struct ggml_tensor * t = ggml_set_name(ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4), "keep");
    cr_assert_not_null(t);
    ggml_set_f32(t, 3.0f);

    cr_assert_null(ggml_set_name(t, NULL));
    assert_refused("ggml_set_name", "name is NULL");
    cr_assert_null(ggml_set_name(NULL, "x"));
    assert_refused("ggml_set_name", "tensor is NULL");
    cr_assert_null(ggml_format_name(t, NULL));
    assert_refused("ggml_format_name", "fmt is NULL");
    cr_assert_null(ggml_format_name(NULL, "x%d", 1));
    assert_refused("ggml_format_name", "tensor is NULL");
    cr_assert_str_eq(ggml_get_name(t), "keep");

    struct ggml_tensor * q = ggml_new_tensor_1d(ctx, GGML_TYPE_Q8_0, 32);
    cr_assert_null(ggml_set_f32(q, 1.0f));
    assert_refused("ggml_set_f32", "not supported");
    cr_assert_null(ggml_set_i32(NULL, 1));
    assert_refused("ggml_set_i32", "tensor is NULL");

    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    struct ggml_tensor * unalloc = ggml_new_tensor_1d(meta, GGML_TYPE_F32, 4);
    cr_assert_null(ggml_set_zero(unalloc));
    assert_refused("ggml_set_zero", "has no data");
    cr_assert_null(ggml_set_f32(unalloc, 1.0f));
    assert_refused("ggml_set_f32", "has no data");
    ggml_free(meta);

    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(ggml_get_f32_1d(t, i), 3.0f, 0, "the data is untouched");
    }
    cr_assert_not(ggmlx_context_is_failed(ctx), "a setter is no constructor: the context stays usable");
    cr_assert_eq(ggml_set_name(t, "renamed"), t, "success still returns the tensor");
    cr_assert_eq(ggml_format_name(t, "n%d", 7), t);
    cr_assert_str_eq(ggml_get_name(t), "n7");
    cr_assert_eq(ggml_set_f32(t, 5.0f), t);
    cr_assert_eq(ggml_set_zero(t), t);
    cr_assert_eq(g_n_errors, 0);
}

/* ggml_set_name(ggml_add(...), "x") is how most code names tensors: the add's reason survives */
Test(errors, naming_the_null_of_a_failed_constructor_keeps_its_reason) {
    ggml_log_set(capture_log, NULL);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 3);
    ggmlx_clear_last_error();
    cr_assert_null(ggml_set_name(ggml_add(ctx, a, b), "sum"));
    const char * msg = ggmlx_last_error();
    cr_assert(strstr(msg, "ggml_set_name: tensor is NULL, after: ggml_add:") && strstr(msg, "cannot be broadcast"),
              "%s", msg);
    cr_assert_null(ggml_format_name(ggml_relu(ctx, a), "r%d", 1), "the context is failed");
    msg = ggmlx_last_error();
    cr_assert(strstr(msg, "ggml_format_name") && strstr(msg, "ggml_relu") && strstr(msg, "already failed"), "%s", msg);
    ggmlx_clear_last_error();
    cr_assert_null(ggml_set_name(NULL, "x"));
    cr_assert_str_eq(ggmlx_last_error(), "ggml_set_name: tensor is NULL", "nothing pending: nothing carried");
}

/* every dimension can make elements * type size overflow, allocated or not, block types too */
Test(errors, tensor_size_overflow_in_any_dim_is_refused) {
    ggml_log_set(capture_log, NULL);
    struct ggml_init_params p = { 1024 * 1024, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    const int64_t big = (int64_t) 1 << 32;
    const int64_t shapes[][4] = {
        { 1, 1, 1, INT64_MAX }, { 1, INT64_MAX, 1, 1 }, { big, big, 1, 1 }, { 2, big, big, 1 },
        { 1 << 16, 1 << 16, 1 << 16, 1 << 16 }, { INT64_MAX, 1, 1, 1 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        g_n_errors = 0;
        cr_assert_null(ggml_new_tensor(meta, GGML_TYPE_F32, 4, shapes[i]), "shape %zu", i);
        cr_assert_eq(g_n_errors, 1);
        cr_assert(strstr(ggmlx_last_error(), "too large") != NULL, "shape %zu: %s", i, ggmlx_last_error());
        cr_assert_eq(ggml_used_mem(meta), 0, "nothing taken from the context");
        ggml_reset(meta);
    }
    /* Q8_0: 34 bytes a block of 32, so 2^62 elements are 2^57 blocks of 34 bytes: too large */
    cr_assert_null(ggml_new_tensor_2d(meta, GGML_TYPE_Q8_0, (int64_t) 1 << 62, 2));
    cr_assert(strstr(ggmlx_last_error(), "too large") != NULL, "%s", ggmlx_last_error());
    ggml_reset(meta);
    /* Q4_0: 18 bytes a block of 32, so 2^63 elements fit in 2^58 * 18 bytes, but not in an int64 */
    cr_assert_null(ggml_new_tensor_2d(meta, GGML_TYPE_Q4_0, (int64_t) 1 << 62, 2));
    cr_assert(strstr(ggmlx_last_error(), "too large") != NULL, "%s", ggmlx_last_error());
    ggml_reset(meta);
    /* the largest that fits in int64 bytes is accepted, and its byte count is exact */
    struct ggml_tensor * t = ggml_new_tensor_2d(meta, GGML_TYPE_F32, (int64_t) 1 << 30, (int64_t) 1 << 30);
    cr_assert_not_null(t, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_nbytes(t), (size_t) 1 << 62);
    ggml_free(meta);
}

Test(errors, a_row_size_beyond_size_max_is_refused) {
    ggml_log_set(capture_log, NULL);
    g_n_errors = 0;
    /* 4 * INT64_MAX wrapped to a small size_t */
    cr_assert_eq(ggml_row_size(GGML_TYPE_F32, INT64_MAX), 0);
    cr_assert_eq(g_n_errors, 1);
    cr_assert(strstr(ggmlx_last_error(), "ggml_row_size") && strstr(ggmlx_last_error(), "SIZE_MAX"), "%s",
              ggmlx_last_error());
    cr_assert_eq(ggml_row_size(GGML_TYPE_F32, INT64_MAX / 4), (size_t) (INT64_MAX / 4) * 4);
}

Test(errors, unravel_index_out_of_range_writes_nothing) {
    ggml_log_set(capture_log, NULL);
    g_n_errors = 0;
    struct ggml_tensor * t = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 3, 2);
    const int64_t bad[] = { 24, -1, INT64_MAX, INT64_MIN };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int64_t i0 = 7, i1 = 7, i2 = 7, i3 = 7;
        ggml_unravel_index(t, bad[k], &i0, &i1, &i2, &i3);
        cr_assert(i0 == 7 && i1 == 7 && i2 == 7 && i3 == 7, "index %lld: nothing written", (long long) bad[k]);
        cr_assert_eq(g_n_errors, 1);
        cr_assert(strstr(ggmlx_last_error(), "ggml_unravel_index") && strstr(ggmlx_last_error(), "outside"), "%s",
                  ggmlx_last_error());
        g_n_errors = 0;
    }
    int64_t i0, i1, i2, i3;
    ggml_unravel_index(t, 23, &i0, &i1, &i2, &i3);
    cr_assert(i0 == 3 && i1 == 2 && i2 == 1 && i3 == 0);
}

Test(errors, a_threadpool_call_on_null_says_so) {
    ggml_log_set(capture_log, NULL);
    g_n_errors = 0;
    cr_assert_null(ggml_threadpool_new(NULL));
    cr_assert(strstr(ggmlx_last_error(), "params is NULL") != NULL, "not about n_threads: %s", ggmlx_last_error());
    struct ggml_threadpool_params p = ggml_threadpool_params_default(0);
    cr_assert_null(ggml_threadpool_new(&p));
    cr_assert(strstr(ggmlx_last_error(), "n_threads = 0") != NULL, "%s", ggmlx_last_error());
    ggml_threadpool_pause(NULL);
    cr_assert(strstr(ggmlx_last_error(), "ggml_threadpool_pause") != NULL, "%s", ggmlx_last_error());
    ggml_threadpool_resume(NULL);
    cr_assert(strstr(ggmlx_last_error(), "ggml_threadpool_resume") != NULL, "%s", ggmlx_last_error());
    cr_assert_eq(g_n_errors, 4);
}

Test(errors, on_error_abort_restores_upstream_behaviour, .signal = SIGABRT) {
    setenv("GGMLX_ON_ERROR", "abort", 1);
    ggml_relu(ctx, NULL);
}

/*
 * An abort goes through the callback set with ggml_set_abort_callback, with the message, before
 * abort(): this callback checks the message and leaves with its own exit code, so the test
 * passes only if the callback ran (and saw the error) instead of a bare SIGABRT.
 */
static void abort_callback_exits_with_42(const char * message) {
    _exit(message != NULL && strstr(message, "ggml_relu") != NULL && strstr(message, "GGMLX_ON_ERROR=abort") != NULL
              ? 42
              : 1);
}

Test(errors, an_abort_calls_the_abort_callback_with_the_message, .exit_code = 42) {
    cr_assert_null(ggml_set_abort_callback(abort_callback_exits_with_42), "no callback is set at first");
    setenv("GGMLX_ON_ERROR", "abort", 1);
    ggml_relu(ctx, NULL);
}
