/*
 * test-compute.c -- the CPU graph executor: threads, thread pools, plans, abort callback,
 * work buffers, and results independent of the thread count.
 */
#include <criterion/criterion.h>

#include "test-util.h"

static struct ggml_context * ctx;

static void setup(void) {
    struct ggml_init_params p = { 64 * 1024 * 1024, NULL, false };
    ctx = ggml_init(p);
}

static void teardown(void) {
    ggml_free(ctx);
}

TestSuite(compute, .init = setup, .fini = teardown);

/* relu(a*b + a) - big enough that every op is split across threads */
static struct ggml_tensor * build(struct ggml_tensor ** a_out, int64_t n) {
    struct tu_rng r = tu_rng_new(1);
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 8);
    struct ggml_tensor * b = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, 8);
    tu_fill(a, &r, -1, 1);
    tu_fill(b, &r, -1, 1);
    *a_out = a;
    return ggml_relu(ctx, ggml_add(ctx, ggml_mul(ctx, a, b), a));
}

static void check(struct ggml_tensor * a, struct ggml_tensor * out) {
    const struct ggml_tensor * b = out->src[0]->src[0]->src[1];
    TU_FOR_EACH(out, i0, i1, i2, i3) {
        double x = tu_get(a, i0, i1, i2, i3), y = tu_get(b, i0, i1, i2, i3);
        double want = x * y + x > 0 ? (float) ((float) (x * y) + x) : 0.0;
        cr_assert(tu_close(tu_get(out, i0, i1, i2, i3), want, 1e-6), "at (%lld, %lld)", (long long) i0, (long long) i1);
    }
}

Test(compute, same_result_on_1_2_and_4_threads) {
    struct ggml_tensor * a;
    struct ggml_tensor * out = build(&a, 4097);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    for (int nt = 1; nt <= 4; nt *= 2) {
        ggml_set_f32(out, -99.0f);
        cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, nt), GGML_STATUS_SUCCESS, "%d threads", nt);
        check(a, out);
    }
}

Test(compute, many_computations_reuse_the_pool) {
    struct ggml_tensor * a;
    struct ggml_tensor * out = build(&a, 2048);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    struct ggml_cplan plan = ggml_graph_plan(g, 2, NULL);
    uint8_t * work = malloc(plan.work_size + 1);
    plan.work_data = work;
    for (int i = 0; i < 200; i++) {
        cr_assert_eq(ggml_graph_compute(g, &plan), GGML_STATUS_SUCCESS);
    }
    check(a, out);
    free(work);
}

Test(compute, explicit_threadpool) {
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(3);
    struct ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    cr_assert_not_null(tp);
    cr_assert_eq(ggml_threadpool_get_n_threads(tp), 3);
    struct ggml_tensor * a;
    struct ggml_tensor * out = build(&a, 4097);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    struct ggml_cplan plan = ggml_graph_plan(g, 8, tp);
    cr_assert_eq(plan.n_threads, 3, "a plan never asks for more threads than its pool has");
    uint8_t * work = malloc(plan.work_size + 1);
    plan.work_data = work;
    ggml_threadpool_pause(tp);
    ggml_threadpool_resume(tp);
    cr_assert_eq(ggml_graph_compute(g, &plan), GGML_STATUS_SUCCESS);
    check(a, out);
    free(work);
    ggml_threadpool_free(tp);
    struct ggml_threadpool_params bad = ggml_threadpool_params_default(0);
    cr_assert_null(ggml_threadpool_new(&bad));
    cr_assert(ggml_threadpool_params_match(&tpp, &tpp));
    cr_assert_not(ggml_threadpool_params_match(&tpp, &bad));
}

static int g_calls;

static bool abort_after_two(void * data) {
    (void) data;
    return ++g_calls >= 2;
}

Test(compute, abort_callback_stops_with_aborted) {
    for (int nt = 1; nt <= 2; nt++) {
        struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8192);
        ggml_set_f32(x, 1.0f);
        struct ggml_tensor * y = x;
        struct ggml_tensor * nodes[6];
        for (int i = 0; i < 6; i++) {
            y = nodes[i] = ggml_scale(ctx, y, 2.0f);
            ggml_set_f32(y, 0.0f);
        }
        struct ggml_cgraph * g = ggml_new_graph(ctx);
        ggml_build_forward_expand(g, y);
        struct ggml_cplan plan = ggml_graph_plan(g, nt, NULL);
        uint8_t * work = malloc(plan.work_size + 1);
        plan.work_data = work;
        plan.abort_callback = abort_after_two;
        g_calls = 0;
        cr_assert_eq(ggml_graph_compute(g, &plan), GGML_STATUS_ABORTED);
        cr_assert_float_eq(ggml_get_f32_1d(nodes[1], 0), 4.0f, 0, "the nodes before the abort ran");
        cr_assert_float_eq(ggml_get_f32_1d(nodes[5], 0), 0.0f, 0, "the nodes after it did not");
        free(work);
    }
}

Test(compute, work_buffer_out_of_context_memory_is_alloc_failed) {
    struct ggml_init_params p = { 3 * ggml_tensor_overhead() + ggml_graph_overhead() + 64, NULL, true };
    struct ggml_context * meta = ggml_init(p);
    static float da[256 * 256], db[256 * 256], dc[256 * 256];
    struct ggml_tensor * a = ggml_new_tensor_2d(meta, GGML_TYPE_F16, 256, 256);
    struct ggml_tensor * b = ggml_new_tensor_2d(meta, GGML_TYPE_F32, 256, 256);
    a->data = da;
    b->data = db;
    struct ggml_tensor * c = ggml_mul_mat(meta, a, b);
    c->data = dc;
    struct ggml_cgraph * g = ggml_new_graph(meta);
    cr_assert_not_null(g);
    ggml_build_forward_expand(g, c);
    struct ggml_cplan plan = ggml_graph_plan(g, 1, NULL);
    if (plan.work_size == 0) {
        ggml_free(meta);
        cr_skip_test("mul_mat needs no work buffer with the current kernels");
    }
    cr_assert_eq(ggml_graph_compute_with_ctx(meta, g, 1), GGML_STATUS_ALLOC_FAILED);
    ggml_free(meta);
}

Test(compute, views_and_empty_tensors_are_skipped) {
    struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 4);
    ggml_set_f32(x, -2.0f);
    struct ggml_tensor * v = ggml_view_1d(ctx, x, 4, 4 * sizeof(float));
    struct ggml_tensor * r = ggml_abs(ctx, ggml_reshape_2d(ctx, v, 2, 2));
    struct ggml_tensor * e = ggml_relu(ctx, ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 0, 3));
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, r);
    ggml_build_forward_expand(g, e);
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 2), GGML_STATUS_SUCCESS);
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(ggml_get_f32_1d(r, i), 2.0f, 0);
    }
}

Test(compute, default_thread_count_when_zero) {
    struct ggml_tensor * a;
    struct ggml_tensor * out = build(&a, 512);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    struct ggml_cplan plan = ggml_graph_plan(g, 0, NULL);
    cr_assert_eq(plan.n_threads, GGML_DEFAULT_N_THREADS);
    cr_assert_eq(ggml_graph_compute_with_ctx(ctx, g, 0), GGML_STATUS_SUCCESS);
    check(a, out);
}

/*
 * The last worker of a job lowers n_active before it bumps done_gen. If it is descheduled in
 * between, the caller sees n_active == 0, returns and posts the next job, and the late bump
 * then lands while that next job runs. The helper thread below plays that late worker (the
 * interleaving is too narrow to hit by chance): the caller must still wait for its worker.
 */
#include "threadpool.h"

#include <unistd.h>

struct slow_job {
    atomic_int count;
};

static void slow_fn(void * p, int ith) {
    struct slow_job * job = p;
    if (ith != 0) {
        usleep(200 * 1000);
    }
    atomic_fetch_add(&job->count, 1);
}

static void * late_bump_main(void * p) {
    struct ggml_threadpool * tp = p;
    usleep(20 * 1000);
    atomic_fetch_add(&tp->done_gen, 1);
    ggmlx_futex_wake_all(&tp->done_gen);
    return NULL;
}

Test(compute, threadpool_run_ignores_a_late_done_signal) {
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(2);
    struct ggml_threadpool * tp = ggml_threadpool_new(&tpp);
    cr_assert_not_null(tp);
    struct slow_job job;
    atomic_init(&job.count, 0);
    pthread_t th;
    pthread_create(&th, NULL, late_bump_main, tp);
    ggmlx_threadpool_run(tp, 2, slow_fn, &job);
    const int got = atomic_load(&job.count);
    pthread_join(th, NULL);
    ggml_threadpool_free(tp);
    cr_assert_eq(got, 2, "returned with %d of 2 threads done", got);
}
