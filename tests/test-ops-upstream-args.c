/*
 * test-ops-upstream-args.c -- arguments upstream's constructors take and upstream's
 * test-backend-ops builds, which the constructors once refused: a get_rows_back indexing fewer
 * rows than its gradient has, a soft_max_ext_back with ALiBi, an I16 repeat, a convolution whose
 * window overhangs the padded input by less than a stride. Each builds as upstream's does; what
 * the CPU cannot compute it refuses in supports_op (as upstream's CPU does), never at build time.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

static bool cpu_supports(struct ggml_tensor * t) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    const bool ok = ggml_backend_supports_op(cpu, t);
    ggml_backend_free(cpu);
    return ok;
}

/* test-backend-ops' v=1 case: indices are a view of half the rows; the other rows of a are unused */
Test(upstream_args, get_rows_back_with_fewer_indices_than_rows) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * grad = to_new(&e, GGML_TYPE_F32, 4, 6, 1, 1);
    struct ggml_tensor * idx  = to_new(&e, GGML_TYPE_I32, 3, 1, 1, 1);
    struct ggml_tensor * src  = to_new(&e, GGML_TYPE_F32, 4, 5, 1, 1);
    for (int64_t r = 0; r < 6; r++) {
        for (int64_t i = 0; i < 4; i++) {
            tu_set(grad, i, r, 0, 0, (double) (10 * r + i));
        }
    }
    const int32_t rows[3] = { 4, 1, 4 };
    memcpy(idx->data, rows, sizeof rows);
    struct ggml_tensor * r = ggml_get_rows_back(e.ctx, grad, idx, src);
    to_alloc(&e, r);
    to_compute(&e, r, 1);
    for (int64_t j = 0; j < 5; j++) {
        for (int64_t i = 0; i < 4; i++) {
            /* row 4 gets grad rows 0 and 2, row 1 gets grad row 1; grad rows 3..5 go nowhere */
            const double want = j == 4 ? (double) (0 + i) + (double) (20 + i) : j == 1 ? (double) (10 + i) : 0.0;
            cr_assert_float_eq(tu_get(r, i, j, 0, 0), want, 0.0, "row %lld col %lld", (long long) j, (long long) i);
        }
    }
    to_end(&e);
}

Test(upstream_args, get_rows_back_still_refuses_more_indices_than_rows) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * grad = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * idx  = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor * src  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    to_expect_rejected(ctx, ggml_get_rows_back(ctx, grad, idx, src), "ggml_get_rows_back");
    ggml_free(ctx);
}

Test(upstream_args, get_rows_back_of_f16_builds_and_the_cpu_refuses_it) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * grad = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 3);
    struct ggml_tensor * idx  = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    struct ggml_tensor * src  = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 4, 5);
    struct ggml_tensor * r    = ggml_get_rows_back(ctx, grad, idx, src);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(!cpu_supports(r));
    ggml_free(ctx);
}

Test(upstream_args, soft_max_back_with_alibi_builds_and_the_cpu_refuses_it) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * g = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 2);
    struct ggml_tensor * y = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 2);
    struct ggml_tensor * r = ggml_soft_max_ext_back(ctx, g, y, 0.5f, 8.0f);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert_eq(ggmlx_get_op_params_f32(r, 1), 8.0f);
    cr_assert(!cpu_supports(r));
    struct ggml_tensor * plain = ggml_soft_max_ext_back(ctx, g, y, 0.5f, 0.0f);
    cr_assert(cpu_supports(plain));
    ggml_free(ctx);
}

Test(upstream_args, repeat_of_i16_builds_and_the_cpu_refuses_it) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_I16, 5, 4);
    struct ggml_tensor * r = ggml_repeat_4d(ctx, a, 5, 8, 1, 1);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->type == GGML_TYPE_I16 && r->ne[1] == 8);
    cr_assert(!cpu_supports(r));
    ggml_free(ctx);
}

/* input 2, kernel 3 dilated by 2 (span 5), padding 1, stride 2: 2 + 2 - 5 = -1 gives -1 / 2 + 1 = 1 */
Test(upstream_args, conv_window_overhanging_by_less_than_a_stride_gives_one_output) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * k = to_new(&e, GGML_TYPE_F32, 1, 3, 1, 1);
    struct ggml_tensor * x = to_new(&e, GGML_TYPE_F32, 1, 2, 1, 1);
    for (int64_t i = 0; i < 3; i++) {
        tu_set(k, 0, i, 0, 0, (double) (i + 1));
    }
    tu_set(x, 0, 0, 0, 0, 7.0);
    tu_set(x, 0, 1, 0, 0, 5.0);
    struct ggml_tensor * r = ggml_conv_2d_direct(e.ctx, k, x, 1, 2, 0, 1, 1, 2);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == 1 && r->ne[1] == 1, "output %lld x %lld", (long long) r->ne[0], (long long) r->ne[1]);
    to_alloc(&e, r);
    to_compute(&e, r, 1);
    /* the taps sit at rows -1, 1, 3: only the middle one (weight 2) is inside, on x row 1 */
    cr_assert_float_eq(tu_get(r, 0, 0, 0, 0), 10.0, 0.0);
    to_end(&e);
}

Test(upstream_args, conv_window_overhanging_by_a_stride_is_refused) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 3, 1, 1);
    struct ggml_tensor * x = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 1, 1, 1);
    /* stride 1: 1 + 4 - 9 = -4 gives -3 rows */
    to_expect_rejected(ctx, ggml_conv_2d_direct(ctx, k, x, 1, 1, 0, 2, 1, 4), "ggml_conv_2d_direct");
    ggml_free(ctx);
}
