/*
 * test-sched-free-order.c -- upstream lets a program free its backends before the scheduler made
 * with them (llama.cpp's llama_context destroys them in that order): freeing the scheduler then
 * must not touch the freed backends (ASan reports a use after free if it does).
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

static void two_sims(void) {
    const struct ggmlx_sim_config cfg = { .n_devices = 2, .memory_limit = (size_t) 16 << 20, .n_threads = 1 };
    cr_assert(ggmlx_sim_configure(&cfg));
}

Test(sched_free_order, backends_freed_before_the_scheduler_are_not_touched_by_its_free, .init = two_sims) {
    ggml_backend_t be[3] = { ggml_backend_dev_init(ggml_backend_dev_by_name("SIM0"), NULL),
                             ggml_backend_dev_init(ggml_backend_dev_by_name("SIM1"), NULL), ggml_backend_cpu_init() };
    cr_assert(be[0] && be[1] && be[2]);
    ggml_backend_sched_t s = ggml_backend_sched_new(be, NULL, 3, 64, false, false);
    cr_assert_not_null(s);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    ggml_set_input(x);
    struct ggml_tensor * y = ggml_scale(ctx, ggml_sqr(ctx, x), 2.0f);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, y);
    cr_assert(ggml_backend_sched_alloc_graph(s, g));
    float in[16], out[16];
    for (int i = 0; i < 16; i++) {
        in[i] = (float) i;
    }
    ggml_backend_tensor_set(x, in, 0, sizeof in);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, g), GGML_STATUS_SUCCESS);
    ggml_backend_tensor_get(y, out, 0, sizeof out);
    cr_assert_float_eq(out[3], 18.0f, 1e-6f);
    for (int i = 0; i < 3; i++) {
        ggml_backend_free(be[i]);
    }
    ggml_backend_sched_free(s); /* after its backends, as llama.cpp frees them */
    ggml_free(ctx);
}

Test(sched_free_order, a_backend_shared_by_two_schedulers_is_forgotten_by_both, .init = two_sims) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_sched_t a = ggml_backend_sched_new(&cpu, NULL, 1, 16, false, false);
    ggml_backend_sched_t b = ggml_backend_sched_new(&cpu, NULL, 1, 16, false, false);
    cr_assert(a && b);
    ggml_backend_free(cpu);
    ggml_backend_sched_free(b);
    ggml_backend_sched_free(a);
}
