/*
 * ops-custom.c -- constructors of the custom ops: MAP_CUSTOM1/2/3 (the result shaped like a,
 * or a view of it) and CUSTOM (any shape, up to GGML_MAX_SRC sources), with the callback,
 * thread count and userdata in op_params as upstream lays them out (ops-custom.h).
 */
#include "ggml-impl.h"
#include "ops-custom.h"

static bool n_tasks_ok(struct ggml_context * ctx, int n_tasks, const void * fun, const char * func) {
    if (fun == NULL) {
        ggmlx_ctx_fail(ctx, func, "fun is NULL");
        return false;
    }
    if (n_tasks != GGML_N_TASKS_MAX && n_tasks <= 0) {
        ggmlx_ctx_fail(ctx, func, "n_tasks must be > 0 or GGML_N_TASKS_MAX (-1), got %d", n_tasks);
        return false;
    }
    return true;
}

/* the MAP_CUSTOM result with sources srcs[0..n) (srcs[0] is a) and params copied in */
static struct ggml_tensor * map_custom_impl(struct ggml_context * ctx, struct ggml_tensor * const srcs[3], int n,
                                            const void * params, size_t size, enum ggml_op op, bool inplace,
                                            const char * func) {
    static const char * const names[3] = { "a", "b", "c" };
    for (int i = 0; i < n; i++) {
        if (srcs[i] == NULL) {
            ggmlx_ctx_fail(ctx, func, "tensor argument '%s' is NULL", names[i]);
            return NULL;
        }
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, srcs[0], inplace, func);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params(result, params, size);
    result->op = op;
    for (int i = 0; i < n; i++) {
        result->src[i] = srcs[i];
    }
    return result;
}

#define MAP_CUSTOM_PARAMS(T, fun, n_tasks, userdata) \
    struct T p;                                      \
    memset(&p, 0, sizeof p);                         \
    p.fun      = (fun);                              \
    p.n_tasks  = (n_tasks);                          \
    p.userdata = (userdata)

static struct ggml_tensor * custom1(struct ggml_context * ctx, struct ggml_tensor * a, ggml_custom1_op_t fun,
                                    int n_tasks, void * userdata, bool inplace, const char * func) {
    if (!n_tasks_ok(ctx, n_tasks, (const void *) fun, func)) {
        return NULL;
    }
    MAP_CUSTOM_PARAMS(ggmlx_custom1_params, fun, n_tasks, userdata);
    struct ggml_tensor * const srcs[3] = { a, NULL, NULL };
    return map_custom_impl(ctx, srcs, 1, &p, sizeof p, GGML_OP_MAP_CUSTOM1, inplace, func);
}

static struct ggml_tensor * custom2(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    ggml_custom2_op_t fun, int n_tasks, void * userdata, bool inplace,
                                    const char * func) {
    if (!n_tasks_ok(ctx, n_tasks, (const void *) fun, func)) {
        return NULL;
    }
    MAP_CUSTOM_PARAMS(ggmlx_custom2_params, fun, n_tasks, userdata);
    struct ggml_tensor * const srcs[3] = { a, b, NULL };
    return map_custom_impl(ctx, srcs, 2, &p, sizeof p, GGML_OP_MAP_CUSTOM2, inplace, func);
}

static struct ggml_tensor * custom3(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                    struct ggml_tensor * c, ggml_custom3_op_t fun, int n_tasks, void * userdata,
                                    bool inplace, const char * func) {
    if (!n_tasks_ok(ctx, n_tasks, (const void *) fun, func)) {
        return NULL;
    }
    MAP_CUSTOM_PARAMS(ggmlx_custom3_params, fun, n_tasks, userdata);
    struct ggml_tensor * const srcs[3] = { a, b, c };
    return map_custom_impl(ctx, srcs, 3, &p, sizeof p, GGML_OP_MAP_CUSTOM3, inplace, func);
}

struct ggml_tensor * ggml_map_custom1(struct ggml_context * ctx, struct ggml_tensor * a, ggml_custom1_op_t fun,
                                      int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom1(ctx, a, fun, n_tasks, userdata, false, __func__);
}

struct ggml_tensor * ggml_map_custom1_inplace(struct ggml_context * ctx, struct ggml_tensor * a, ggml_custom1_op_t fun,
                                              int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom1(ctx, a, fun, n_tasks, userdata, true, __func__);
}

struct ggml_tensor * ggml_map_custom2(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      ggml_custom2_op_t fun, int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom2(ctx, a, b, fun, n_tasks, userdata, false, __func__);
}

struct ggml_tensor * ggml_map_custom2_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                              ggml_custom2_op_t fun, int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom2(ctx, a, b, fun, n_tasks, userdata, true, __func__);
}

struct ggml_tensor * ggml_map_custom3(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                      struct ggml_tensor * c, ggml_custom3_op_t fun, int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom3(ctx, a, b, c, fun, n_tasks, userdata, false, __func__);
}

struct ggml_tensor * ggml_map_custom3_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                              struct ggml_tensor * c, ggml_custom3_op_t fun, int n_tasks,
                                              void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    return custom3(ctx, a, b, c, fun, n_tasks, userdata, true, __func__);
}

/* sources args[0..n_args) must all be there; first: where they start in src[] */
static bool args_ok(struct ggml_context * ctx, struct ggml_tensor ** args, int n_args, int first, const char * func) {
    if (n_args < 0 || n_args > GGML_MAX_SRC - first || (n_args > 0 && args == NULL)) {
        ggmlx_ctx_fail(ctx, func, "n_args must be 0 .. %d with args non-NULL when > 0, got %d", GGML_MAX_SRC - first,
                       n_args);
        return false;
    }
    for (int i = 0; i < n_args; i++) {
        if (args[i] == NULL) {
            ggmlx_ctx_fail(ctx, func, "args[%d] is NULL", i);
            return false;
        }
    }
    return true;
}

struct ggml_tensor * ggml_custom_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                    int64_t ne2, int64_t ne3, struct ggml_tensor ** args, int n_args,
                                    ggml_custom_op_t fun, int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    if (!n_tasks_ok(ctx, n_tasks, (const void *) fun, __func__) || !args_ok(ctx, args, n_args, 0, __func__)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggmlx_type_is_valid(type), "unknown type %d", (int) type);
    const int64_t ne[4] = { ne0, ne1, ne2, ne3 };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, type, GGML_MAX_DIMS, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    MAP_CUSTOM_PARAMS(ggmlx_custom_params, fun, n_tasks, userdata);
    ggmlx_set_op_params(result, &p, sizeof p);
    result->op = GGML_OP_CUSTOM;
    for (int i = 0; i < n_args; i++) {
        result->src[i] = args[i];
    }
    return result;
}

struct ggml_tensor * ggml_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor ** args,
                                         int n_args, ggml_custom_op_t fun, int n_tasks, void * userdata) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, a);
    if (!n_tasks_ok(ctx, n_tasks, (const void *) fun, __func__) || !args_ok(ctx, args, n_args, 1, __func__)) {
        return NULL;
    }
    struct ggml_tensor * result = ggmlx_new_result(ctx, a, true, __func__);
    if (result == NULL) {
        return NULL;
    }
    MAP_CUSTOM_PARAMS(ggmlx_custom_params, fun, n_tasks, userdata);
    ggmlx_set_op_params(result, &p, sizeof p);
    result->op     = GGML_OP_CUSTOM;
    result->src[0] = a;
    for (int i = 0; i < n_args; i++) {
        result->src[i + 1] = args[i];
    }
    return result;
}
