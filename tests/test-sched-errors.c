/*
 * test-sched-errors.c -- the scheduler's bad input (docs/architecture.md §4): every misuse returns NULL,
 * false, 0 or an error status, records a message (ggmlx_last_error) and logs it, and never
 * takes the process down. Each test ends by showing the scheduler (when one was made) still works.
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "test-errlog.h"

#include <math.h>
#include <string.h>

static void setup(void) {
    const struct ggmlx_sim_config cfg = { .n_devices = 1, .memory_limit = (size_t) 64 << 20, .n_threads = 1 };
    cr_assert(ggmlx_sim_configure(&cfg));
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

TestSuite(sched_errors, .init = setup, .timeout = 30);

static ggml_backend_t cpu_new(void) {
    ggml_backend_t b = ggml_backend_cpu_init();
    cr_assert_not_null(b);
    return b;
}

static ggml_backend_t sim_new(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_name("SIM0");
    cr_assert_not_null(dev);
    ggml_backend_t b = ggml_backend_dev_init(dev, NULL);
    cr_assert_not_null(b);
    return b;
}

/* a one-node graph: y = 2 x over 4 values, x an input */
struct tiny {
    struct ggml_context * ctx;
    struct ggml_cgraph  * gf;
    struct ggml_tensor  * x, * y;
};

/* y = 2 x over n values, or (to_iq2) x copied into IQ2_XXS, which no backend of (SIM0, CPU) runs */
static struct tiny tiny_with(int64_t n, bool to_iq2) {
    struct ggml_init_params p = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct tiny t;
    t.ctx = ggml_init(p);
    cr_assert_not_null(t.ctx);
    t.x = ggml_new_tensor_1d(t.ctx, GGML_TYPE_F32, n);
    ggml_set_input(t.x);
    t.y = to_iq2 ? ggml_cpy(t.ctx, t.x, ggml_new_tensor_1d(t.ctx, GGML_TYPE_IQ2_XXS, n)) : ggml_scale(t.ctx, t.x, 2.0f);
    ggml_set_output(t.y);
    t.gf = ggml_new_graph(t.ctx);
    ggml_build_forward_expand(t.gf, t.y);
    return t;
}

static struct tiny tiny_new(void) {
    return tiny_with(4, false);
}

/* the scheduler still computes y = 2 x right */
static void assert_works(ggml_backend_sched_t s, struct tiny * t) {
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, t->gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    const float x[4] = { 1, -2, 3.5f, 0 };
    float y[4];
    ggml_backend_tensor_set(t->x, x, 0, sizeof x);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, t->gf), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(t->y, y, 0, sizeof y);
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(y[i], 2 * x[i], 1e-6);
    }
}

/* ---- creation ----------------------------------------------------------------------------------- */

Test(sched_errors, new_with_null_backends) {
    cr_assert_null(ggml_backend_sched_new(NULL, NULL, 1, 64, false, false));
    ASSERT_ERROR();
}

Test(sched_errors, new_with_zero_or_negative_backends) {
    ggml_backend_t cpu = cpu_new();
    cr_assert_null(ggml_backend_sched_new(&cpu, NULL, 0, 64, false, false));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_new(&cpu, NULL, -1, 64, false, false));
    ASSERT_ERROR();
    ggml_backend_free(cpu);
}

Test(sched_errors, new_with_seventeen_backends) {
    ggml_backend_t be[GGML_SCHED_MAX_BACKENDS + 1];
    for (int i = 0; i < GGML_SCHED_MAX_BACKENDS + 1; i++) {
        be[i] = cpu_new();
    }
    cr_assert_null(ggml_backend_sched_new(be, NULL, GGML_SCHED_MAX_BACKENDS + 1, 64, false, false));
    ASSERT_ERROR();
    for (int i = 0; i < GGML_SCHED_MAX_BACKENDS + 1; i++) {
        ggml_backend_free(be[i]);
    }
}

Test(sched_errors, new_with_a_null_backend_in_the_list) {
    ggml_backend_t be[2] = { NULL, cpu_new() };
    cr_assert_null(ggml_backend_sched_new(be, NULL, 2, 64, false, false));
    ASSERT_ERROR();
    ggml_backend_free(be[1]);
}

Test(sched_errors, new_with_the_last_backend_not_a_cpu) {
    ggml_backend_t be[2] = { cpu_new(), sim_new() };
    cr_assert_null(ggml_backend_sched_new(&be[1], NULL, 1, 64, false, false));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_new(be, NULL, 2, 64, false, false));
    ASSERT_ERROR();
    ggml_backend_free(be[0]);
    ggml_backend_free(be[1]);
}

Test(sched_errors, new_with_a_buffer_type_its_backend_cannot_use) {
    ggml_backend_t be[2] = { sim_new(), cpu_new() };
    ggml_backend_buffer_type_t sim_buft = ggml_backend_get_default_buffer_type(be[0]);
    ggml_backend_buffer_type_t cpu_buft = ggml_backend_cpu_buffer_type();
    cr_assert_not(ggml_backend_supports_buft(be[1], sim_buft), "precondition: the CPU cannot use SIM memory");
    ggml_backend_buffer_type_t bad_cpu[2] = { NULL, sim_buft };
    cr_assert_null(ggml_backend_sched_new(be, bad_cpu, 2, 64, false, false));
    ASSERT_ERROR();
    if (!ggml_backend_supports_buft(be[0], cpu_buft)) {
        ggml_backend_buffer_type_t bad_sim[2] = { cpu_buft, NULL };
        cr_assert_null(ggml_backend_sched_new(be, bad_sim, 2, 64, false, false));
        ASSERT_ERROR();
    }
    ggml_backend_buffer_type_t good[2] = { sim_buft, NULL };
    ggml_backend_sched_t s = ggml_backend_sched_new(be, good, 2, 64, false, false);
    cr_assert_not_null(s, "explicit default buffer types are fine: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert_eq(ggml_backend_sched_get_buffer_type(s, be[1]), ggml_backend_get_default_buffer_type(be[1]));
    ggml_backend_sched_free(s);
    ggml_backend_free(be[0]);
    ggml_backend_free(be[1]);
}

Test(sched_errors, free_of_null_is_a_no_op) {
    ggml_backend_sched_free(NULL);
    ASSERT_NO_ERROR();
}

/* ---- a NULL scheduler ------------------------------------------------------------------------ */

Test(sched_errors, every_call_on_a_null_scheduler) {
    struct tiny t = tiny_new();
    ggml_backend_t cpu = cpu_new();
    size_t sizes[1] = { 77 };
    struct ggmlx_sched_stats st;

    cr_assert_not(ggml_backend_sched_reserve(NULL, t.gf));
    ASSERT_ERROR();
    ggml_backend_sched_reserve_size(NULL, t.gf, sizes);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_n_backends(NULL), 0);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_backend(NULL, 0));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_n_splits(NULL), 0);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_n_copies(NULL), 0);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_buffer_type(NULL, cpu));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_buffer_size(NULL, cpu), 0);
    ASSERT_ERROR();
    ggml_backend_sched_set_tensor_backend(NULL, t.y, cpu);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_tensor_backend(NULL, t.y));
    ASSERT_ERROR();
    ggml_backend_sched_split_graph(NULL, t.gf);
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_sched_alloc_graph(NULL, t.gf));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_graph_compute(NULL, t.gf), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_graph_compute_async(NULL, t.gf), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    ggml_backend_sched_synchronize(NULL);
    ASSERT_ERROR();
    ggml_backend_sched_reset(NULL);
    ASSERT_ERROR();
    ggml_backend_sched_set_eval_callback(NULL, NULL, NULL);
    ASSERT_ERROR();
    cr_assert_not(ggmlx_sched_set_n_copies(NULL, 2));
    ASSERT_ERROR();
    cr_assert_not(ggmlx_sched_get_stats(NULL, &st));
    ASSERT_ERROR();
    ggmlx_sched_reset_stats(NULL);
    ASSERT_ERROR();
    cr_assert_not(ggmlx_sched_set_trace(NULL, "/tmp/x.json"));
    ASSERT_ERROR();
    ggml_backend_free(cpu);
    ggml_free(t.ctx);
}

/* ---- bad arguments to a good scheduler -------------------------------------------------------- */

struct env {
    ggml_backend_t       be[2];
    ggml_backend_sched_t s;
    struct tiny          t;
};

static struct env env_new(void) {
    struct env e;
    e.be[0] = sim_new();
    e.be[1] = cpu_new();
    e.s = ggml_backend_sched_new(e.be, NULL, 2, 64, false, false);
    cr_assert_not_null(e.s);
    e.t = tiny_new();
    return e;
}

static void env_free(struct env * e) {
    ggml_backend_sched_free(e->s);
    ggml_backend_free(e->be[0]);
    ggml_backend_free(e->be[1]);
    ggml_free(e->t.ctx);
}

Test(sched_errors, null_graphs) {
    struct env e = env_new();
    size_t sizes[2] = { 77, 77 };
    cr_assert_not(ggml_backend_sched_reserve(e.s, NULL));
    ASSERT_ERROR();
    ggml_backend_sched_reserve_size(e.s, NULL, sizes);
    ASSERT_ERROR();
    ggml_backend_sched_reserve_size(e.s, e.t.gf, NULL);
    ASSERT_ERROR();
    ggml_backend_sched_split_graph(e.s, NULL);
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_sched_alloc_graph(e.s, NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_graph_compute(e.s, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_graph_compute_async(e.s, NULL), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    env_free(&e);
}

Test(sched_errors, backend_index_out_of_range) {
    struct env e = env_new();
    cr_assert_null(ggml_backend_sched_get_backend(e.s, -1));
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_backend(e.s, 2));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_backend(e.s, 1), e.be[1]);
    env_free(&e);
}

Test(sched_errors, a_backend_not_in_the_scheduler) {
    struct env e = env_new();
    ggml_backend_t other = cpu_new();
    cr_assert_null(ggml_backend_sched_get_buffer_type(e.s, other));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_buffer_size(e.s, other), 0);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_buffer_type(e.s, NULL));
    ASSERT_ERROR();
    cr_assert_eq(ggml_backend_sched_get_buffer_size(e.s, NULL), 0);
    ASSERT_ERROR();
    ggml_backend_sched_reset(e.s);
    ggml_backend_sched_set_tensor_backend(e.s, e.t.y, other);
    ASSERT_ERROR();
    cr_assert_null(ggml_backend_sched_get_tensor_backend(e.s, e.t.y), "the bad pin was not recorded");
    ggml_backend_sched_set_tensor_backend(e.s, e.t.y, NULL);
    ASSERT_ERROR();
    ggml_backend_sched_set_tensor_backend(e.s, NULL, e.be[1]);
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    ggml_backend_free(other);
    env_free(&e);
}

Test(sched_errors, n_copies_out_of_range) {
    struct env e = env_new();
    const int bad[] = { 0, -1, GGMLX_SCHED_MAX_COPIES + 1, 9, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_not(ggmlx_sched_set_n_copies(e.s, bad[i]), "n_copies = %d accepted", bad[i]);
        ASSERT_ERROR();
    }
    assert_works(e.s, &e.t);
    cr_assert_eq(ggml_backend_sched_get_n_copies(e.s), 1, "a refused value changed nothing");
    cr_assert(ggmlx_sched_set_n_copies(e.s, GGMLX_SCHED_MAX_COPIES));
    ASSERT_NO_ERROR();
    assert_works(e.s, &e.t);
    cr_assert_eq(ggml_backend_sched_get_n_copies(e.s), GGMLX_SCHED_MAX_COPIES);
    env_free(&e);
}

/* graph_size is a hint, not a cap that fails (or asserts, upstream): the scheduler grows */
Test(sched_errors, a_graph_larger_than_graph_size_still_computes) {
    ggml_backend_t cpu = cpu_new();
    ggml_backend_sched_t s = ggml_backend_sched_new(&cpu, NULL, 1, 16, false, false);
    cr_assert_not_null(s);
    struct ggml_init_params p = { 256 * ggml_tensor_overhead() + ggml_graph_overhead_custom(256, false), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    ggml_set_input(x);
    struct ggml_tensor * cur = x;
    for (int i = 0; i < 200; i++) {
        cur = ggml_scale(ctx, cur, 1.01f);
    }
    ggml_set_output(cur);
    struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 256, false);
    ggml_build_forward_expand(gf, cur);
    cr_assert(ggml_backend_sched_alloc_graph(s, gf), "200 nodes, graph_size 16: %s",
              ggmlx_last_error() ? ggmlx_last_error() : "");
    const float xv[4] = { 1, -2, 0.5f, 0 };
    float y[4];
    ggml_backend_tensor_set(x, xv, 0, sizeof xv);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, gf), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(cur, y, 0, sizeof y);
    for (int i = 0; i < 4; i++) {
        const double want = xv[i] * pow(1.01, 200);
        cr_assert(fabs(y[i] - want) <= 1e-4 * (1 + fabs(want)), "y[%d] = %g, want %g", i, y[i], want);
    }
    ggml_free(ctx);
    ggml_backend_sched_free(s);
    ggml_backend_free(cpu);
}

Test(sched_errors, a_trace_file_that_cannot_be_opened) {
    struct env e = env_new();
    cr_assert_not(ggmlx_sched_set_trace(e.s, "/nonexistent-dir/for/sure/trace.json"));
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    env_free(&e);
}

Test(sched_errors, stats_into_null) {
    struct env e = env_new();
    cr_assert_not(ggmlx_sched_get_stats(e.s, NULL));
    ASSERT_ERROR();
    env_free(&e);
}

Test(sched_errors, a_failed_graph_is_refused) {
    struct env e = env_new();
    struct ggml_init_params p = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    struct ggml_tensor * a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    struct ggml_tensor * bad = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 5);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, ggml_scale(ctx, a, 2.0f));
    struct ggml_tensor * sum = ggml_add(ctx, a, bad); /* shapes do not broadcast: NULL */
    cr_assert_null(sum);
    ggml_build_forward_expand(gf, sum);
    cr_assert(ggmlx_graph_is_failed(gf), "precondition: the graph is marked failed");
    ggmlx_clear_last_error();
    g_n_errors = 0;
    cr_assert_not(ggml_backend_sched_alloc_graph(e.s, gf));
    ASSERT_ERROR();
    ggml_backend_sched_reset(e.s);
    cr_assert_eq(ggml_backend_sched_graph_compute(e.s, gf), GGML_STATUS_FAILED);
    ASSERT_ERROR();
    cr_assert_not(ggml_backend_sched_reserve(e.s, gf));
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    ggml_free(ctx);
    env_free(&e);
}

/* upstream computes the second graph in the first one's memory; here it is an error */
Test(sched_errors, another_graph_while_one_is_allocated) {
    struct env e = env_new();
    struct tiny other = tiny_new();
    ggml_backend_sched_reset(e.s);
    cr_assert(ggml_backend_sched_alloc_graph(e.s, e.t.gf));
    cr_assert(ggml_backend_sched_alloc_graph(e.s, e.t.gf), "the same graph again is fine");
    ASSERT_NO_ERROR();
    cr_assert_not(ggml_backend_sched_alloc_graph(e.s, other.gf));
    ASSERT_ERROR();
    cr_assert_neq(ggml_backend_sched_graph_compute(e.s, other.gf), GGML_STATUS_SUCCESS);
    ASSERT_ERROR();
    assert_works(e.s, &other);
    assert_works(e.s, &e.t);
    ggml_free(other.ctx);
    env_free(&e);
}

/*
 * A graph edited after it was built: a node's source swapped for a tensor in host memory that
 * the graph does not list. Unless the scheduler looks at sources outside the graph, the node
 * falls back to SIM0 (first in priority), which cannot read host memory, and the split is refused
 * when enqueued: that failure must come back with its message. Either way no wrong values, and
 * the scheduler works after.
 */
Test(sched_errors, a_split_refused_at_enqueue_fails_with_a_message) {
    struct env e = env_new();
    struct tiny t = tiny_new();
    struct ggml_init_params p = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * uctx = ggml_init(p);
    struct ggml_tensor * ux = ggml_dup_tensor(uctx, t.x);
    ggml_backend_buffer_t ubuf = ggml_backend_alloc_ctx_tensors(uctx, e.be[1]);
    cr_assert_not_null(ubuf);
    const float xv[4] = { 1, 2, 3, 4 };
    ggml_backend_tensor_set(ux, xv, 0, sizeof xv);
    t.y->src[0] = ux; /* the graph still lists t.x as its leaf */
    ggml_backend_sched_reset(e.s);
    ggmlx_clear_last_error();
    g_n_errors = 0;
    const enum ggml_status st = ggml_backend_sched_graph_compute(e.s, t.gf);
    if (st != GGML_STATUS_SUCCESS) {
        ASSERT_ERROR();
    } else {
        float y[4];
        ggml_backend_tensor_get(t.y, y, 0, sizeof y);
        for (int i = 0; i < 4; i++) {
            cr_assert_float_eq(y[i], 2 * xv[i], 1e-6);
        }
    }
    assert_works(e.s, &e.t);
    ggml_backend_buffer_free(ubuf);
    ggml_free(uctx);
    ggml_free(t.ctx);
    env_free(&e);
}

/* ---- failures keep their message, their kind, and no memory ----------------------------------- */

/* the IQ2_XXS graph, after checking that neither backend has learnt to run it */
static struct tiny unschedulable_new(ggml_backend_t * be) {
    struct tiny t = tiny_with(256, true);
    for (int b = 0; b < 2; b++) {
        cr_assert_not(ggml_backend_supports_op(be[b], t.y), "%s now runs F32 -> IQ2_XXS copies: pick another op",
                      ggml_backend_name(be[b]));
    }
    return t;
}

Test(sched_errors, reserve_of_a_graph_no_backend_runs_keeps_its_message) {
    struct env e = env_new();
    struct tiny u = unschedulable_new(e.be);
    size_t sizes[2];
    cr_assert_not(ggml_backend_sched_reserve(e.s, u.gf));
    ASSERT_ERROR();
    ggml_backend_sched_reserve_size(e.s, u.gf, sizes);
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    ggml_free(u.ctx);
    env_free(&e);
}

Test(sched_errors, a_graph_no_backend_runs_is_failed_not_alloc_failed) {
    struct env e = env_new();
    struct tiny u = unschedulable_new(e.be);
    ggml_backend_sched_reset(e.s);
    cr_assert_not(ggml_backend_sched_alloc_graph(e.s, u.gf));
    ASSERT_ERROR();
    ggml_backend_sched_reset(e.s);
    cr_assert_eq(ggml_backend_sched_graph_compute(e.s, u.gf), GGML_STATUS_FAILED,
                 "ALLOC_FAILED tells a caller to retry smaller, which cannot help here");
    ASSERT_ERROR();
    assert_works(e.s, &e.t);
    ggml_free(u.ctx);
    env_free(&e);
}

/* y = 2 x over n values, x pinned to SIM0 (its input slot there) and y in SIM0's compute buffer */
static struct tiny on_sim_new(ggml_backend_sched_t s, ggml_backend_t sim, int64_t n) {
    struct tiny t = tiny_with(n, false);
    ggml_backend_sched_reset(s);
    ggml_backend_sched_set_tensor_backend(s, t.x, sim);
    return t;
}

static size_t sim_free_memory(void) {
    size_t free_b = 0, total = 0;
    ggml_backend_dev_memory(ggml_backend_dev_by_name("SIM0"), &free_b, &total);
    return free_b;
}

/*
 * SIM0 has 64 MiB: a 40 MiB input fits its slot, but y's 40 MiB more do not. The failed
 * alloc_graph must hold no more memory than before (the input slot grown for it is given back,
 * the 4 MiB one it replaced is there again), leave the input without memory, and report
 * ALLOC_FAILED through compute; the smaller graph then runs again.
 */
Test(sched_errors, alloc_graph_out_of_memory_holds_no_more_memory_than_before) {
    struct env e = env_new();
    struct tiny small = on_sim_new(e.s, e.be[0], (int64_t) 1 << 20);
    cr_assert(ggml_backend_sched_alloc_graph(e.s, small.gf), "%s", ggmlx_last_error());
    const size_t free_before = sim_free_memory();
    const size_t sched_before = ggml_backend_sched_get_buffer_size(e.s, e.be[0]);
    cr_assert_gt(sched_before, 0);

    struct tiny big = on_sim_new(e.s, e.be[0], (int64_t) 10 << 20);
    cr_assert_not(ggml_backend_sched_alloc_graph(e.s, big.gf));
    ASSERT_ERROR();
    cr_assert_eq(sim_free_memory(), free_before, "SIM0 free: %zu bytes, %zu before the failed alloc_graph",
                 sim_free_memory(), free_before);
    cr_assert_eq(ggml_backend_sched_get_buffer_size(e.s, e.be[0]), sched_before);
    cr_assert_null(big.x->data, "the input keeps no pointer into memory given back");
    cr_assert_null(big.x->buffer);

    /* through compute: y = 2 w, w a 40 MiB weight on SIM0, so y's 40 MiB go there too */
    struct ggml_init_params wp = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * wctx = ggml_init(wp);
    struct ggml_tensor * w = ggml_new_tensor_1d(wctx, GGML_TYPE_F32, (int64_t) 10 << 20);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors(wctx, e.be[0]);
    cr_assert_not_null(wbuf, "%s", ggmlx_last_error());
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    const size_t free_with_w = sim_free_memory();
    struct ggml_init_params gp = { 4 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * gctx = ggml_init(gp);
    struct ggml_tensor * wy = ggml_scale(gctx, w, 2.0f);
    struct ggml_cgraph * wg = ggml_new_graph(gctx);
    ggml_build_forward_expand(wg, wy);
    ggml_backend_sched_reset(e.s);
    const enum ggml_status st = ggml_backend_sched_graph_compute(e.s, wg);
    cr_assert_eq(st, GGML_STATUS_ALLOC_FAILED, "status %d: %s", (int) st, ggmlx_last_error());
    ASSERT_ERROR();
    cr_assert_eq(sim_free_memory(), free_with_w);
    ggml_free(gctx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    cr_assert_eq(sim_free_memory(), free_before);

    ggml_backend_sched_reset(e.s);
    ggml_backend_sched_set_tensor_backend(e.s, small.x, e.be[0]);
    cr_assert(ggml_backend_sched_alloc_graph(e.s, small.gf), "%s", ggmlx_last_error());
    cr_assert_eq(sim_free_memory(), free_before, "the smaller graph fits where it was");
    static float x[1 << 20], y[1 << 20];
    for (int i = 0; i < (1 << 20); i++) {
        x[i] = (float) (i % 13) - 6.0f;
    }
    ggml_backend_tensor_set(small.x, x, 0, sizeof x);
    cr_assert_eq(ggml_backend_sched_graph_compute(e.s, small.gf), GGML_STATUS_SUCCESS, "%s", ggmlx_last_error());
    ggml_backend_tensor_get(small.y, y, 0, sizeof y);
    for (int i = 0; i < (1 << 20); i += 4099) {
        cr_assert_float_eq(y[i], 2 * x[i], 1e-6);
    }
    assert_works(e.s, &e.t);
    ggml_free(big.ctx);
    ggml_free(small.ctx);
    env_free(&e);
}
