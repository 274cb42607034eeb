/*
 * test-cuda-dispatch.c -- the CUDA backend's node dispatch (cuda/cuda-dispatch.c, linked in
 * here with stub launchers, so no GPU is needed): what supports_op accepts and refuses, the
 * scratch mul_mat asks for, and which launcher compute_node calls. Needs only the CUDA headers;
 * built without CUDA it reports itself skipped.
 */
#include <criterion/criterion.h>

#if defined(GGMLX_TEST_CUDA_HEADERS)

#include "cuda-kernels.h"
#include "ggml-impl.h"
#include "launch-config.h"
#include "mul-mat-plan.h"

/* ---- stub launchers: record the call, touch nothing ---------------------------------------- */

static const char * g_called;
static struct ggmlx_mm_plan g_plan;
static size_t g_bytes;

enum ggml_status ggmlx_cuda_launch_copy(const struct ggmlx_cuda_exec * ex, const struct ggmlx_cuda_tdesc * src,
                                        const struct ggmlx_cuda_tdesc * dst, char * err, size_t err_size) {
    (void)ex, (void)src, (void)dst, (void)err, (void)err_size;
    g_called = "copy";
    return GGML_STATUS_SUCCESS;
}

enum ggml_status ggmlx_cuda_launch_copy_bytes(const struct ggmlx_cuda_exec * ex, void * dst, const void * src, size_t n,
                                              char * err, size_t err_size) {
    (void)ex, (void)dst, (void)src, (void)err, (void)err_size;
    g_called = "copy_bytes";
    g_bytes  = n;
    return GGML_STATUS_SUCCESS;
}

#define STUB(name, label)                                                                                          \
    enum ggml_status name(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err, size_t n) {   \
        (void)ex, (void)node, (void)err, (void)n;                                                                  \
        g_called = label;                                                                                          \
        return GGML_STATUS_SUCCESS;                                                                                \
    }
STUB(ggmlx_cuda_launch_binary, "binary")
STUB(ggmlx_cuda_launch_unary, "unary")
STUB(ggmlx_cuda_launch_norm, "norm")
STUB(ggmlx_cuda_launch_soft_max, "soft_max")
STUB(ggmlx_cuda_launch_get_rows, "get_rows")
STUB(ggmlx_cuda_launch_reduce, "reduce")
STUB(ggmlx_cuda_launch_shape, "shape")
STUB(ggmlx_cuda_launch_set_rows, "set_rows")
STUB(ggmlx_cuda_launch_glu, "glu")
STUB(ggmlx_cuda_launch_rope, "rope")
STUB(ggmlx_cuda_launch_group_norm, "group_norm")
STUB(ggmlx_cuda_launch_pad, "pad")
STUB(ggmlx_cuda_launch_misc, "misc")
STUB(ggmlx_cuda_launch_argsort, "argsort")
STUB(ggmlx_cuda_launch_out_prod, "out_prod")
#undef STUB

enum ggml_status ggmlx_cuda_launch_mul_mat(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                           const struct ggmlx_mm_plan * plan, char * err, size_t err_size) {
    (void)ex, (void)node, (void)err, (void)err_size;
    g_called = "mul_mat";
    g_plan   = *plan;
    return GGML_STATUS_SUCCESS;
}

/* ---- fixture ------------------------------------------------------------------------------ */

static struct ggml_context * ctx;
static char fake_memory[64];

static void setup(void) {
    struct ggml_init_params p = { 4u * 1024 * 1024, NULL, true };
    ctx = ggml_init(p);
    cr_assert_not_null(ctx);
}

static void teardown(void) {
    ggml_free(ctx);
}

static struct ggml_tensor * t2(enum ggml_type type, int64_t ne0, int64_t ne1) {
    struct ggml_tensor * t = ggml_new_tensor_2d(ctx, type, ne0, ne1);
    cr_assert_not_null(t);
    t->data = fake_memory;
    return t;
}

/* views and results get data as an allocator would give them */
static struct ggml_tensor * with_data(struct ggml_tensor * t) {
    cr_assert_not_null(t);
    t->data = fake_memory;
    return t;
}

static const char * run(struct ggml_tensor * node) {
    const struct ggmlx_cuda_exec ex = { 0 };
    char err[256] = "";
    g_called = NULL;
    const enum ggml_status st = ggmlx_cuda_compute_node(&ex, node, err, sizeof err);
    cr_assert_eq(st, GGML_STATUS_SUCCESS, "%s: %s", node->name, err);
    return g_called;
}

TestSuite(cuda_dispatch, .init = setup, .fini = teardown);

Test(cuda_dispatch, copies) {
    struct ggml_tensor * a = t2(GGML_TYPE_F32, 8, 4);
    const enum ggml_type ok[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int i = 0; i < 3; i++) {
        struct ggml_tensor * c = with_data(ggml_cpy(ctx, a, t2(ok[i], 4, 8)));
        cr_assert(ggmlx_cuda_supports_op(c));
        cr_assert_str_eq(run(c), "copy");
        cr_assert_eq(ggmlx_cuda_scratch_size(c), 0);
    }
    struct ggml_tensor * p = with_data(ggml_cont(ctx, ggml_transpose(ctx, a)));
    cr_assert(ggmlx_cuda_supports_op(p));
    /* I32 moves as bytes, and converts to and from the float types */
    struct ggml_tensor * i = t2(GGML_TYPE_I32, 8, 4);
    cr_assert(ggmlx_cuda_supports_op(with_data(ggml_cpy(ctx, i, t2(GGML_TYPE_I32, 32, 1)))));
    for (int k = 0; k < 3; k++) {
        cr_assert_str_eq(run(with_data(ggml_cpy(ctx, i, t2(ok[k], 32, 1)))), "copy");
        cr_assert_str_eq(run(with_data(ggml_cpy(ctx, t2(ok[k], 32, 1), i))), "copy");
    }
    /* a quantized tensor moves as bytes when both sides are contiguous, and not otherwise */
    struct ggml_tensor * q = t2(GGML_TYPE_Q8_0, 64, 4);
    struct ggml_tensor * qc = with_data(ggml_cpy(ctx, q, t2(GGML_TYPE_Q8_0, 64, 4)));
    cr_assert(ggmlx_cuda_supports_op(qc));
    cr_assert_str_eq(run(qc), "copy_bytes");
    cr_assert_eq(g_bytes, ggml_nbytes(q));
    struct ggml_tensor * qv = ggml_view_2d(ctx, q, 32, 4, q->nb[1], 0); /* half of each row */
    cr_assert_not(ggmlx_cuda_supports_op(with_data(ggml_cont(ctx, qv))));
    /* but not I16 into a float type */
    struct ggml_tensor * c16 = with_data(ggml_cpy(ctx, t2(GGML_TYPE_I32, 32, 1), t2(GGML_TYPE_F32, 32, 1)));
    c16->src[0] = t2(GGML_TYPE_I16, 32, 1);
    cr_assert_not(ggmlx_cuda_supports_op(c16));
}

Test(cuda_dispatch, elementwise) {
    struct ggml_tensor * a = t2(GGML_TYPE_F16, 8, 4);
    struct ggml_tensor * b = t2(GGML_TYPE_F32, 8, 1);
    struct ggml_tensor * s = with_data(ggml_add(ctx, a, b));
    cr_assert(ggmlx_cuda_supports_op(s), "broadcast add of F16 and F32");
    cr_assert_str_eq(run(s), "binary");
    cr_assert_str_eq(run(with_data(ggml_sub(ctx, a, b))), "binary");
    struct ggml_tensor * u[] = { ggml_relu(ctx, a), ggml_gelu(ctx, a), ggml_silu(ctx, a), ggml_sqr(ctx, a),
                                 ggml_scale(ctx, a, 0.5f), ggml_unary(ctx, a, GGML_UNARY_OP_TANH) };
    for (size_t k = 0; k < sizeof u / sizeof u[0]; k++) {
        cr_assert(ggmlx_cuda_supports_op(with_data(u[k])), "unary %zu", k);
        cr_assert_str_eq(run(u[k]), "unary");
    }
    /* every unary op, and the other elementwise ops with and without parameters */
    for (int op = 0; op < GGML_UNARY_OP_COUNT; op++) {
        struct ggml_tensor * x = op == GGML_UNARY_OP_XIELU ? ggml_xielu(ctx, a, 0.8f, 0.8f, 0.5f, -1e-6f)
                                                           : ggml_unary(ctx, a, (enum ggml_unary_op)op);
        cr_assert(ggmlx_cuda_supports_op(with_data(x)), "unary op %d", op);
        cr_assert_str_eq(run(x), "unary");
    }
    struct ggml_tensor * e[] = { ggml_log(ctx, a), ggml_sin(ctx, a), ggml_cos(ctx, a), ggml_clamp(ctx, a, -1.0f, 1.0f),
                                 ggml_leaky_relu(ctx, a, 0.1f, false), ggml_scale_bias(ctx, a, 2.0f, 1.0f),
                                 ggml_add1(ctx, a, t2(GGML_TYPE_BF16, 1, 1)) };
    for (size_t k = 0; k < sizeof e / sizeof e[0]; k++) {
        cr_assert(ggmlx_cuda_supports_op(with_data(e[k])), "elementwise %zu", k);
        cr_assert_str_eq(run(e[k]), "unary");
    }
    struct ggml_tensor * a1 = with_data(ggml_add1(ctx, a, t2(GGML_TYPE_F32, 1, 1)));
    a1->src[1] = t2(GGML_TYPE_F32, 2, 1); /* by hand: ggml_add1 refuses a b of two elements */
    cr_assert_not(ggmlx_cuda_supports_op(a1));
    /* a unary op without a kernel is refused, and compute_node says so rather than launching */
    /* (built by hand: ggml_unary itself refuses an op past the enum) */
    struct ggml_tensor * h = with_data(ggml_relu(ctx, t2(GGML_TYPE_F32, 4, 4)));
    const int32_t past = GGML_UNARY_OP_COUNT;
    memcpy(h->op_params, &past, sizeof past);
    {
        cr_assert_not(ggmlx_cuda_supports_op(h));
        const struct ggmlx_cuda_exec ex = { 0 };
        char err[256] = "";
        g_called = NULL;
        cr_assert_eq(ggmlx_cuda_compute_node(&ex, h, err, sizeof err), GGML_STATUS_FAILED);
        cr_assert_null(g_called);
        cr_assert(strstr(err, "not supported") != NULL, "%s", err);
    }
}

Test(cuda_dispatch, rows_and_norms) {
    struct ggml_tensor * x = t2(GGML_TYPE_F32, 64, 6);
    cr_assert_str_eq(run(with_data(ggml_norm(ctx, x, 1e-5f))), "norm");
    cr_assert_str_eq(run(with_data(ggml_rms_norm(ctx, x, 1e-5f))), "norm");
    struct ggml_tensor * m16 = t2(GGML_TYPE_F16, 64, 8);
    struct ggml_tensor * sm = with_data(ggml_soft_max_ext(ctx, x, m16, 0.125f, 8.0f));
    cr_assert(ggmlx_cuda_supports_op(sm));
    cr_assert_str_eq(run(sm), "soft_max");
    cr_assert_str_eq(run(with_data(ggml_soft_max_ext(ctx, x, NULL, 1.0f, 0.0f))), "soft_max");
    struct ggml_tensor * idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 5);
    idx->data = fake_memory;
    const enum ggml_type srcs[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int k = 0; k < 4; k++) {
        struct ggml_tensor * g = with_data(ggml_get_rows(ctx, t2(srcs[k], 16, 100), idx));
        cr_assert(ggmlx_cuda_supports_op(g), "get_rows of %s", ggml_type_name(srcs[k]));
        cr_assert_str_eq(run(g), "get_rows");
    }
    cr_assert_str_eq(run(with_data(ggml_sum(ctx, x))), "reduce");
    cr_assert_str_eq(run(with_data(ggml_argmax(ctx, x))), "reduce");
    cr_assert_str_eq(run(with_data(ggml_sum_rows(ctx, x))), "reduce");
    cr_assert_str_eq(run(with_data(ggml_mean(ctx, x))), "reduce");
    cr_assert_str_eq(run(with_data(ggml_repeat(ctx, t2(GGML_TYPE_F32, 64, 1), x))), "shape");
    cr_assert_str_eq(run(with_data(ggml_diag_mask_inf(ctx, x, 2))), "shape");
    cr_assert_str_eq(run(with_data(ggml_concat(ctx, x, t2(GGML_TYPE_F32, 64, 3), 1))), "shape");
    struct ggml_tensor * cc = with_data(ggml_concat(ctx, x, t2(GGML_TYPE_F32, 64, 3), 1));
    cc->src[1] = t2(GGML_TYPE_F16, 64, 3); /* by hand: mixed types are not concatenated here */
    cr_assert_not(ggmlx_cuda_supports_op(cc));
    cr_assert_str_eq(run(with_data(ggml_swiglu(ctx, x))), "glu");
    cr_assert_str_eq(run(with_data(ggml_geglu_split(ctx, x, x))), "glu");
    cr_assert_str_eq(run(with_data(ggml_swiglu_oai(ctx, x, x, 1.702f, 7.0f))), "glu");
    cr_assert_str_eq(run(with_data(ggml_reglu(ctx, x))), "glu");
    struct ggml_tensor * i64 = ggml_new_tensor_1d(ctx, GGML_TYPE_I64, 6);
    i64->data = fake_memory;
    cr_assert_str_eq(run(with_data(ggml_set_rows(ctx, t2(GGML_TYPE_F16, 64, 100), x, i64))), "set_rows");
    struct ggml_tensor * mean16 = with_data(ggml_mean(ctx, x));
    mean16->src[0] = t2(GGML_TYPE_F16, 64, 6); /* by hand: ggml_mean itself refuses F16 */
    cr_assert_not(ggmlx_cuda_supports_op(mean16), "MEAN is F32 only");
    struct ggml_tensor * q   = with_data(ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 4, 6));
    struct ggml_tensor * pos = with_data(ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 6));
    struct ggml_tensor * ro  = with_data(ggml_rope(ctx, q, pos, 32, GGML_ROPE_TYPE_NEOX));
    cr_assert_str_eq(run(ro), "rope");
    const int32_t vision = 24; /* a mode without a kernel (set by hand: ggml_rope refuses it) */
    memcpy((char *)ro->op_params + 8, &vision, sizeof vision);
    cr_assert_not(ggmlx_cuda_supports_op(ro));
    cr_assert_str_eq(run(with_data(ggml_l2_norm(ctx, x, 1e-6f))), "norm");
    struct ggml_tensor * x4 = with_data(ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 8, 4, 6, 2));
    cr_assert_str_eq(run(with_data(ggml_group_norm(ctx, x4, 4, 1e-6f))), "group_norm");
    cr_assert_str_eq(run(with_data(ggml_diag_mask_zero(ctx, x, 1))), "shape");
    for (int k = 0; k < 3; k++) {
        const enum ggml_type at[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
        struct ggml_tensor * op = with_data(ggml_out_prod(ctx, t2(at[k], 64, 6), t2(GGML_TYPE_F32, 3, 6)));
        cr_assert(ggmlx_cuda_supports_op(op), "out_prod of %s", ggml_type_name(at[k]));
        cr_assert_str_eq(run(op), "out_prod");
    }
    struct ggml_tensor * opb = with_data(ggml_out_prod(ctx, x, t2(GGML_TYPE_F32, 3, 6)));
    opb->src[1] = t2(GGML_TYPE_F16, 3, 6); /* by hand: ggml_out_prod asks for an F32 b */
    cr_assert_not(ggmlx_cuda_supports_op(opb));
    /* ops without kernels here */
    struct ggml_tensor * sq = with_data(ggml_sqr(ctx, x));
    sq->op = GGML_OP_CONV_TRANSPOSE_1D;
    cr_assert_not(ggmlx_cuda_supports_op(sq));
}

Test(cuda_dispatch, pads_generators_scans) {
    struct ggml_tensor * x = t2(GGML_TYPE_F32, 33, 5);
    const enum ggml_type pad_types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int k = 0; k < 4; k++) {
        struct ggml_tensor * p = with_data(ggml_pad_ext(ctx, t2(pad_types[k], 7, 3), 1, 2, 0, 1, 2, 0, 0, 1));
        cr_assert(ggmlx_cuda_supports_op(p), "pad of %s", ggml_type_name(pad_types[k]));
        cr_assert_str_eq(run(p), "pad");
    }
    cr_assert_str_eq(run(with_data(ggml_pad(ctx, x, 3, 1, 0, 0))), "pad");
    struct ggml_tensor * r = with_data(ggml_pad_reflect_1d(ctx, x, 4, 32));
    cr_assert_str_eq(run(r), "pad");
    memset(r->op_params, 0, sizeof r->op_params);
    const int32_t far = 33; /* by hand: a reflection past the row's other end */
    memcpy(r->op_params, &far, sizeof far);
    cr_assert_not(ggmlx_cuda_supports_op(r));

    cr_assert_str_eq(run(with_data(ggml_arange(ctx, 0.0f, 10.0f, 0.5f))), "misc");
    struct ggml_tensor * ts = t2(GGML_TYPE_F32, 7, 1);
    cr_assert_str_eq(run(with_data(ggml_timestep_embedding(ctx, ts, 33, 10000))), "misc");
    cr_assert_str_eq(run(with_data(ggml_cumsum(ctx, x))), "misc");
    struct ggml_tensor * ia = t2(GGML_TYPE_I32, 33, 5);
    struct ggml_tensor * ib = t2(GGML_TYPE_I32, 33, 5);
    cr_assert_str_eq(run(with_data(ggml_count_equal(ctx, ia, ib))), "misc");
    struct ggml_tensor * ce = with_data(ggml_count_equal(ctx, ia, ib));
    ce->src[1] = t2(GGML_TYPE_I32, 33, 4); /* by hand: shapes that differ */
    cr_assert_not(ggmlx_cuda_supports_op(ce));
}

Test(cuda_dispatch, sorts_up_to_the_shared_memory_limit) {
    struct ggmlx_cuda_limits lim;
    struct ggmlx_cuda_launch l;
    ggmlx_cuda_limits_default(&lim);
    const int64_t lens[] = { 1, 33, 4097, 8192, 8193, 100000 };
    for (int k = 0; k < 6; k++) {
        struct ggml_tensor * a = t2(GGML_TYPE_F32, lens[k], 3);
        const bool fits = ggmlx_cuda_launch_sort(&lim, lens[k], 3, &l);
        cr_assert_eq(fits, lens[k] <= 8192, "rows of %lld", (long long)lens[k]);
        struct ggml_tensor * s[] = { ggml_argsort(ctx, a, GGML_SORT_ORDER_ASC), ggml_argsort(ctx, a, GGML_SORT_ORDER_DESC),
                                     ggml_top_k(ctx, a, 1) };
        for (int j = 0; j < 3; j++) {
            cr_assert_eq(ggmlx_cuda_supports_op(with_data(s[j])), fits, "sort %d of rows of %lld", j, (long long)lens[k]);
            if (fits) {
                cr_assert_str_eq(run(s[j]), "argsort");
            }
        }
    }
}

Test(cuda_dispatch, mul_mat) {
    const enum ggml_type types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int k = 0; k < 3; k++) {
        struct ggml_tensor * a = t2(types[k], 64, 32);
        struct ggml_tensor * b = t2(GGML_TYPE_F32, 64, 7);
        struct ggml_tensor * c = with_data(ggml_mul_mat(ctx, a, b));
        cr_assert(ggmlx_cuda_supports_op(c));
        cr_assert_str_eq(run(c), "mul_mat");
        cr_assert_eq(g_plan.m, 32);
        cr_assert_eq(g_plan.n, 7);
        cr_assert_eq(g_plan.k, 64);
        const size_t scratch = ggmlx_cuda_scratch_size(c);
        if (types[k] == GGML_TYPE_F32) {
            cr_assert_eq(scratch, 0, "F32 b is read where it is");
        } else {
            cr_assert(scratch >= 64 * 7 * 2, "b converted to %s needs scratch", ggml_type_name(types[k]));
        }
        cr_assert_eq(scratch, g_plan.scratch_size);
    }
}

Test(cuda_dispatch, nothing_to_do_and_bad_calls) {
    struct ggml_tensor * x = t2(GGML_TYPE_F32, 4, 4);
    struct ggml_tensor * v = ggml_transpose(ctx, x);
    cr_assert(ggmlx_cuda_supports_op(v));
    cr_assert_null(run(v), "a view launches nothing");
    struct ggml_tensor * e = with_data(ggml_relu(ctx, t2(GGML_TYPE_F32, 0, 4)));
    cr_assert_null(run(e), "an empty result launches nothing");
    cr_assert_not(ggmlx_cuda_supports_op(NULL));
    cr_assert_eq(ggmlx_cuda_scratch_size(NULL), 0);
    const struct ggmlx_cuda_exec ex = { 0 };
    char err[128] = "";
    cr_assert_eq(ggmlx_cuda_compute_node(&ex, NULL, err, sizeof err), GGML_STATUS_FAILED);
    cr_assert_eq(ggmlx_cuda_compute_node(&ex, NULL, NULL, 0), GGML_STATUS_FAILED, "no room for a message is fine");
    cr_assert_eq(ggmlx_cuda_compute_node(&ex, NULL, NULL, 64), GGML_STATUS_FAILED, "nor is a NULL buffer");
    /* the sum of an empty source needs no memory for it */
    struct ggml_tensor * empty = t2(GGML_TYPE_F32, 0, 3);
    empty->data = NULL;
    cr_assert_str_eq(run(with_data(ggml_sum_rows(ctx, empty))), "reduce");
    cr_assert(err[0] != '\0');
    struct ggml_tensor * r = ggml_relu(ctx, x);
    r->data = NULL; /* not allocated */
    err[0] = '\0';
    cr_assert_eq(ggmlx_cuda_compute_node(&ex, r, err, sizeof err), GGML_STATUS_FAILED);
    cr_assert(strstr(err, "no data") != NULL, "%s", err);
}

#else

Test(cuda_dispatch, built_without_cuda) {
    cr_skip_test("built without the CUDA backend (GGML_CUDA=OFF or no nvcc)");
}

#endif
