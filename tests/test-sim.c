/*
 * test-sim.c -- simulated devices (docs/sim.md): configuration and environment, devices and
 * their properties, the memory limit, refused ops, private memory that faults when the host
 * touches it, compute equal to the CPU's, queued copies between SIM devices and the CPU, and
 * cross-kind event waits.
 *
 * SIM devices are fixed at the first registry use, and Criterion runs every test in a process
 * of its own, so each test configures (or sets the environment) first. The cross-device
 * ordering rules are in test-sim-async.c.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "host-backend.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB ((size_t) 1 << 20)

static const char * last_error(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "(none)";
}

static void configure(int n, size_t memory, const enum ggml_op * refused, int n_refused) {
    const struct ggmlx_sim_config cfg = { n, memory, 1, refused, n_refused, 0 };
    cr_assert(ggmlx_sim_configure(&cfg), "%s", last_error());
}

/* two devices of 4 MiB each */
static void two_devices(void) {
    configure(2, 4 * MiB, NULL, 0);
}

static ggml_backend_dev_t sim_dev(int i) {
    char name[16];
    snprintf(name, sizeof name, "SIM%d", i);
    ggml_backend_dev_t dev = ggml_backend_dev_by_name(name);
    cr_assert_not_null(dev, "no device %s", name);
    return dev;
}

static ggml_backend_t sim(int i) {
    ggml_backend_t b = ggml_backend_dev_init(sim_dev(i), NULL);
    cr_assert_not_null(b, "%s", last_error());
    return b;
}

/* one compute thread, so results equal a SIM device's bit for bit */
static ggml_backend_t cpu(void) {
    ggml_backend_t b = ggml_backend_cpu_init();
    cr_assert_not_null(b, "%s", last_error());
    ggml_backend_cpu_set_n_threads(b, 1);
    return b;
}

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params p = { 64 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

static struct ggml_tensor * vec(struct ggml_context * ctx, int64_t n, const char * name) {
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
    ggml_set_name(t, name);
    return t;
}

static ggml_backend_buffer_t alloc_on(struct ggml_context * ctx, ggml_backend_dev_t dev) {
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_dev_buffer_type(dev));
    cr_assert_not_null(buf, "%s", last_error());
    return buf;
}

static void set_all(struct ggml_tensor * t, float base) {
    const int64_t n = ggml_nelements(t);
    float * v = malloc((size_t) n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        v[i] = base + (float) i;
    }
    ggml_backend_tensor_set(t, v, 0, ggml_nbytes(t));
    free(v);
}

static void expect_all(const struct ggml_tensor * t, float base, const char * what) {
    const int64_t n = ggml_nelements(t);
    float * v = malloc((size_t) n * sizeof *v);
    ggml_backend_tensor_get(t, v, 0, ggml_nbytes(t));
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(v[i], base + (float) i, "%s: [%lld] = %g, want %g", what, (long long) i, v[i], base + (float) i);
    }
    free(v);
}

static struct ggmlx_queue * queue_of(ggml_backend_t b) {
    struct ggmlx_queue * q = ggmlx_host_backend_queue(ggmlx_host_backend_of(b));
    cr_assert_not_null(q);
    return q;
}

/* bounded: until b's worker blocks in an event wait */
static void until_waiting(ggml_backend_t b) {
    struct ggmlx_queue * q = queue_of(b);
    for (int i = 0; i < 20000 && !ggmlx_queue_waiting(q); i++) {
        nanosleep(&(struct timespec){ 0, 500000 }, NULL);
    }
    cr_assert(ggmlx_queue_waiting(q), "%s never reached its event wait", ggml_backend_name(b));
}

/* ---- log capture, for what the environment parser reports ---------------------------------- */

static char g_log[4096];

static void capture(enum ggml_log_level level, const char * text, void * user) {
    (void) level;
    (void) user;
    strncat(g_log, text, sizeof g_log - strlen(g_log) - 1);
}

/* ---- configuration ------------------------------------------------------------------------- */

/* position of dev in the registry's device list */
static size_t dev_index(ggml_backend_dev_t dev) {
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        if (ggml_backend_dev_get(i) == dev) {
            return i;
        }
    }
    cr_assert_fail("device %s is not in the registry", ggml_backend_dev_name(dev));
    return SIZE_MAX;
}

/* devices that are not SIM devices (the CPU, and CUDA devices in a CUDA build on a GPU machine) */
static size_t n_other_devices(void) {
    return ggml_backend_dev_count() - ggml_backend_reg_dev_count(ggmlx_sim_reg());
}

Test(sim_config, configured_devices_are_gpus_named_sim0_to_simn_before_the_cpu) {
    configure(3, 0, NULL, 0);
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("SIM");
    cr_assert_eq(reg, ggmlx_sim_reg());
    cr_assert_eq(ggml_backend_reg_dev_count(reg), 3);
    const size_t cpu_at = dev_index(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    for (int i = 0; i < 3; i++) {
        ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, (size_t) i);
        char want[8];
        snprintf(want, sizeof want, "SIM%d", i);
        cr_assert_str_eq(ggml_backend_dev_name(dev), want);
        cr_assert_eq(ggml_backend_dev_by_name(want), dev);
        cr_assert_eq(ggml_backend_dev_type(dev), GGML_BACKEND_DEVICE_TYPE_GPU);
        cr_assert_eq(ggml_backend_dev_backend_reg(dev), reg);
        cr_assert_lt(dev_index(dev), cpu_at, "%s comes before the CPU", want);
        if (i > 0) {
            cr_assert_eq(dev_index(dev), dev_index(ggml_backend_reg_dev_get(reg, (size_t) i - 1)) + 1, "in order");
        }
    }
    cr_assert_eq(ggml_backend_dev_count(), n_other_devices() + 3);
}

Test(sim_config, no_configuration_gives_a_sim_registry_without_devices) {
    unsetenv("GGMLX_SIM_DEVICES");
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("SIM");
    cr_assert_not_null(reg);
    cr_assert_eq(ggml_backend_reg_dev_count(reg), 0);
    cr_assert_null(ggml_backend_dev_by_name("SIM0"));
}

Test(sim_config, configure_after_the_registry_was_used_fails) {
    unsetenv("GGMLX_SIM_DEVICES");
    const size_t before = ggml_backend_dev_count();
    const struct ggmlx_sim_config cfg = { .n_devices = 2 };
    cr_assert_not(ggmlx_sim_configure(&cfg));
    cr_assert(strstr(last_error(), "fixed") != NULL, "%s", last_error());
    cr_assert_eq(ggml_backend_dev_count(), before, "nothing changed");
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 0);
}

Test(sim_config, sim_reg_fixes_the_devices_too) {
    configure(1, 0, NULL, 0);
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 1);
    const struct ggmlx_sim_config cfg = { .n_devices = 2 };
    cr_assert_not(ggmlx_sim_configure(&cfg));
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 1);
}

Test(sim_config, invalid_configurations_are_refused_and_change_nothing) {
    const enum ggml_op bad_op[] = { GGML_OP_COUNT };
    const enum ggml_op none_op[] = { GGML_OP_NONE };
    const struct ggmlx_sim_config bad[] = {
        { .n_devices = -1 },
        { .n_devices = GGMLX_SIM_MAX_DEVICES + 1 },
        { .n_devices = 1, .n_threads = -1 },
        { .n_devices = 1, .n_threads = GGML_MAX_N_THREADS + 1 },
        { .n_devices = 1, .n_refused_ops = 1, .refused_ops = NULL },
        { .n_devices = 1, .n_refused_ops = -1 },
        { .n_devices = 1, .n_refused_ops = 1, .refused_ops = bad_op },
        { .n_devices = 1, .n_refused_ops = 1, .refused_ops = none_op },
        { .n_devices = 1, .memory_limit = SIZE_MAX },
    };
    unsetenv("GGMLX_SIM_DEVICES");
    cr_assert_not(ggmlx_sim_configure(NULL));
    cr_assert(strstr(last_error(), "NULL") != NULL, "%s", last_error());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ggmlx_clear_last_error();
        cr_assert_not(ggmlx_sim_configure(&bad[i]), "config %zu accepted", i);
        cr_assert_not_null(ggmlx_last_error(), "config %zu: no message", i);
    }
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 0, "no device from a refused configuration");
}

Test(sim_config, the_last_configuration_wins) {
    configure(3, 0, NULL, 0);
    configure(1, 0, NULL, 0);
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 1);
}

Test(sim_config, configuration_wins_over_the_environment) {
    setenv("GGMLX_SIM_DEVICES", "3", 1);
    configure(1, 0, NULL, 0);
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 1);
}

Test(sim_config, defaults_are_one_gib_and_one_thread) {
    const struct ggmlx_sim_config cfg = { .n_devices = 1 };
    cr_assert(ggmlx_sim_configure(&cfg));
    size_t free_b, total;
    ggml_backend_dev_memory(sim_dev(0), &free_b, &total);
    cr_assert_eq(total, (size_t) 1 << 30);
    cr_assert_eq(free_b, total);
    cr_assert(strstr(ggml_backend_dev_description(sim_dev(0)), "1 compute thread") != NULL, "%s",
              ggml_backend_dev_description(sim_dev(0)));
}

Test(sim_config, environment_sets_devices_memory_and_threads) {
    setenv("GGMLX_SIM_DEVICES", "2", 1);
    setenv("GGMLX_SIM_MEMORY", "64M", 1);
    setenv("GGMLX_SIM_THREADS", "3", 1);
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 2);
    size_t free_b, total;
    ggml_backend_dev_memory(sim_dev(1), &free_b, &total);
    cr_assert_eq(total, 64 * MiB);
    cr_assert(strstr(ggml_backend_dev_description(sim_dev(1)), "3 compute threads") != NULL, "%s",
              ggml_backend_dev_description(sim_dev(1)));
}

struct size_case {
    char   text[16];
    size_t bytes;
};

ParameterizedTestParameters(sim_config, memory_sizes_take_k_m_g_t_suffixes) {
    static struct size_case cases[] = {
        { "4096", 4096 },           { "8K", 8192 },   { "3m", 3 * MiB },  { "2G", (size_t) 2 << 30 },
        { "1GiB", (size_t) 1 << 30 }, { "5MB", 5 * MiB }, { "1T", (size_t) 1 << 40 }, { "0", (size_t) 1 << 30 },
    };
    return cr_make_param_array(struct size_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct size_case * c, sim_config, memory_sizes_take_k_m_g_t_suffixes) {
    setenv("GGMLX_SIM_DEVICES", "1", 1);
    setenv("GGMLX_SIM_MEMORY", c->text, 1);
    size_t free_b, total;
    ggml_backend_dev_memory(sim_dev(0), &free_b, &total);
    cr_assert_eq(total, c->bytes, "GGMLX_SIM_MEMORY=%s gave %zu bytes", c->text, total);
}

struct env_case {
    char name[24];
    char value[24];
};

ParameterizedTestParameters(sim_config, a_malformed_variable_is_reported_and_gives_no_device) {
    static struct env_case cases[] = {
        { "GGMLX_SIM_DEVICES", "two" },          { "GGMLX_SIM_DEVICES", "17" },
        { "GGMLX_SIM_DEVICES", "-1" },           { "GGMLX_SIM_MEMORY", "12X" },
        { "GGMLX_SIM_MEMORY", "M" },             { "GGMLX_SIM_MEMORY", "99999999999T" },
        { "GGMLX_SIM_THREADS", "1.5" },          { "GGMLX_SIM_REFUSE_OPS", "MUL_MAT,NOT_AN_OP" },
        { "GGMLX_SIM_CHAOS", "-3" },
    };
    return cr_make_param_array(struct env_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(struct env_case * c, sim_config, a_malformed_variable_is_reported_and_gives_no_device) {
    ggml_log_set(capture, NULL);
    setenv("GGMLX_SIM_DEVICES", "2", 1);
    setenv(c->name, c->value, 1);
    cr_assert_eq(ggml_backend_reg_dev_count(ggmlx_sim_reg()), 0, "%s=%s accepted", c->name, c->value);
    cr_assert(strstr(g_log, c->name) != NULL, "the message names the variable: %s", g_log);
    ggml_log_set(NULL, NULL);
}

Test(sim_config, refused_ops_from_the_environment) {
    setenv("GGMLX_SIM_DEVICES", "1", 1);
    setenv("GGMLX_SIM_REFUSE_OPS", "mul_mat, ROPE", 1);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * a = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * mm  = ggml_mul_mat(ctx, a, a);
    struct ggml_tensor * add = ggml_add(ctx, a, a);
    struct ggml_tensor * pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 4);
    struct ggml_tensor * r = ggml_rope(ctx, ggml_reshape_3d(ctx, a, 8, 1, 4), pos, 8, 0);
    cr_assert_not(ggml_backend_dev_supports_op(sim_dev(0), mm));
    cr_assert_not(ggml_backend_dev_supports_op(sim_dev(0), r));
    cr_assert(ggml_backend_dev_supports_op(sim_dev(0), add));
    ggml_backend_dev_t cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert(ggml_backend_dev_supports_op(cpu_dev, mm), "the CPU is not restricted");
    ggml_free(ctx);
}

/* Seeded, so the delays are the same every run: 100 of them (0-200 us each) cannot sum below 1 ms. */
Test(sim_config, chaos_from_the_environment_delays_tasks_and_keeps_results) {
    setenv("GGMLX_SIM_DEVICES", "1", 1);
    setenv("GGMLX_SIM_CHAOS", "42", 1);
    ggml_backend_t b = sim(0);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * t = vec(ctx, 100, "t");
    ggml_backend_buffer_t buf = alloc_on(ctx, sim_dev(0));
    float v[100];
    for (int i = 0; i < 100; i++) {
        v[i] = (float) i;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100; i++) {
        ggml_backend_tensor_set_async(b, t, &v[i], (size_t) i * sizeof(float), sizeof(float));
    }
    ggml_backend_synchronize(b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double us = (double) (t1.tv_sec - t0.tv_sec) * 1e6 + (double) (t1.tv_nsec - t0.tv_nsec) / 1e3;
    cr_assert_geq(us, 1000.0, "100 tasks in chaos mode took only %.0f us", us);
    expect_all(t, 0.0f, "after 100 delayed copies");
    ggml_backend_free(b);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/* ---- devices ------------------------------------------------------------------------------- */

Test(sim, device_properties, .init = two_devices) {
    ggml_backend_dev_t dev = sim_dev(1);
    struct ggml_backend_dev_props p;
    ggml_backend_dev_get_props(dev, &p);
    cr_assert_str_eq(p.name, "SIM1");
    cr_assert(strstr(p.description, "simulated") != NULL, "%s", p.description);
    cr_assert_eq(p.type, GGML_BACKEND_DEVICE_TYPE_GPU);
    cr_assert_eq(p.memory_total, 4 * MiB);
    cr_assert_eq(p.memory_free, 4 * MiB);
    cr_assert(p.caps.async);
    cr_assert(p.caps.events);
    cr_assert_not(p.caps.host_buffer);
    cr_assert_not(p.caps.buffer_from_host_ptr);
    cr_assert_null(ggml_backend_dev_host_buffer_type(dev));

    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    cr_assert_str_eq(ggml_backend_buft_name(buft), "SIM1");
    cr_assert_eq(ggml_backend_buft_get_device(buft), dev);
    cr_assert_eq(ggml_backend_buft_get_alignment(buft), 64);
    cr_assert_eq(ggml_backend_buft_get_max_size(buft), 4 * MiB);
    cr_assert_not(ggml_backend_buft_is_host(buft));
    cr_assert(ggml_backend_dev_supports_buft(dev, buft));
    cr_assert_not(ggml_backend_dev_supports_buft(dev, ggml_backend_dev_buffer_type(sim_dev(0))), "not SIM0's memory");
    cr_assert_not(ggml_backend_dev_supports_buft(dev, ggml_backend_cpu_buffer_type()), "not host memory");
}

Test(sim, backends_are_sim_and_not_cpu, .init = two_devices) {
    ggml_backend_t s = sim(0), c = cpu();
    cr_assert(ggmlx_backend_is_sim(s));
    cr_assert_not(ggml_backend_is_cpu(s));
    cr_assert_not(ggmlx_backend_is_sim(c));
    cr_assert_not(ggmlx_backend_is_sim(NULL));
    cr_assert_str_eq(ggml_backend_name(s), "SIM0");
    cr_assert_eq(ggml_backend_get_device(s), sim_dev(0));
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, init_best_picks_sim0, .init = two_devices) {
    if (ggml_backend_dev_backend_reg(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU)) != ggmlx_sim_reg()) {
        cr_skip_test("a real GPU comes before the SIM devices");
    }
    ggml_backend_t b = ggml_backend_init_best();
    cr_assert_not_null(b);
    cr_assert_str_eq(ggml_backend_name(b), "SIM0");
    ggml_backend_free(b);
}

Test(sim, init_parameters_take_n_threads_and_refuse_the_unknown, .init = two_devices) {
    ggml_backend_t b = ggml_backend_dev_init(sim_dev(0), "n_threads=2");
    cr_assert_not_null(b, "%s", last_error());
    cr_assert_eq(ggmlx_host_backend_run_settings(ggmlx_host_backend_of(b)).n_threads, 2);
    ggml_backend_free(b);
    cr_assert_null(ggml_backend_dev_init(sim_dev(0), "sync"));
    cr_assert(strstr(last_error(), "sync") != NULL, "%s", last_error());
    cr_assert_null(ggml_backend_dev_init(sim_dev(0), "n_threads=0"));
}

Test(sim, set_n_threads_from_the_registry_is_queued, .init = two_devices) {
    typedef void (*set_fn)(ggml_backend_t, int);
    set_fn set = (set_fn) ggml_backend_reg_get_proc_address(ggmlx_sim_reg(), "ggml_backend_set_n_threads");
    cr_assert_not_null(set);
    ggml_backend_t b = sim(0), c = cpu();
    set(b, 3);
    ggml_backend_synchronize(b);
    cr_assert_eq(ggmlx_host_backend_run_settings(ggmlx_host_backend_of(b)).n_threads, 3);
    set(c, 2);
    cr_assert(strstr(last_error(), "not a SIM backend") != NULL, "%s", last_error());
    ggml_backend_free(b);
    ggml_backend_free(c);
}

/* ---- memory -------------------------------------------------------------------------------- */

Test(sim, allocations_past_the_limit_fail_and_freeing_gives_memory_back, .init = two_devices) {
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(sim_dev(0));
    size_t free_b, total;
    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(buft, 3 * MiB);
    cr_assert_not_null(a, "%s", last_error());
    ggml_backend_dev_memory(sim_dev(0), &free_b, &total);
    cr_assert_eq(free_b, 1 * MiB);
    cr_assert_eq(total, 4 * MiB);

    cr_assert_null(ggml_backend_buft_alloc_buffer(buft, 2 * MiB), "past the limit");
    cr_assert(strstr(last_error(), "out of device memory") != NULL, "%s", last_error());
    ggml_backend_dev_memory(sim_dev(1), &free_b, &total);
    cr_assert_eq(free_b, 4 * MiB, "SIM1 counts its own memory");

    ggml_backend_buffer_free(a);
    ggml_backend_dev_memory(sim_dev(0), &free_b, &total);
    cr_assert_eq(free_b, 4 * MiB, "freed memory is given back");
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(buft, 4 * MiB);
    cr_assert_not_null(b, "the whole limit fits once free: %s", last_error());
    cr_assert_null(ggml_backend_buft_alloc_buffer(buft, 1));
    ggml_backend_buffer_free(b);
}

Test(sim, one_allocation_larger_than_the_device_fails, .init = two_devices) {
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(sim_dev(0));
    cr_assert_null(ggml_backend_buft_alloc_buffer(buft, 4 * MiB + 1));
    cr_assert_null(ggml_backend_buft_alloc_buffer(buft, SIZE_MAX));
    size_t free_b, total;
    ggml_backend_dev_memory(sim_dev(0), &free_b, &total);
    cr_assert_eq(free_b, total, "a failed allocation takes nothing");
}

Test(sim, buffers_are_private_memory_at_their_base, .init = two_devices) {
    ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(ggml_backend_dev_buffer_type(sim_dev(0)), 1000);
    cr_assert_not_null(buf);
    cr_assert_not_null(ggml_backend_buffer_get_base(buf));
    cr_assert_eq(ggml_backend_buffer_get_size(buf), 1000);
    cr_assert_not(ggml_backend_buffer_is_host(buf));
    ggml_backend_buffer_free(buf);
}

/* ---- private memory: the host faults, the buffer calls work -------------------------------- */

/* the tensor, holding 1, 2, 3, ... written through the buffer */
static struct ggml_tensor * sim_tensor(struct ggml_context ** ctx, ggml_backend_buffer_t * buf) {
    *ctx = new_ctx();
    struct ggml_tensor * t = vec(*ctx, 16, "private");
    *buf = alloc_on(*ctx, sim_dev(0));
    set_all(t, 1.0f);
    expect_all(t, 1.0f, "read back through the buffer");
    /* the default action, so the fault ends the process by the signal whatever a sanitizer set */
    signal(SIGSEGV, SIG_DFL);
    return t;
}

Test(sim, a_host_read_of_sim_memory_faults, .init = two_devices, .signal = SIGSEGV) {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * t = sim_tensor(&ctx, &buf);
    const volatile float * p = t->data;
    const float v = p[0];
    cr_assert_fail("read %g from SIM memory without a fault", v);
}

Test(sim, a_host_write_to_sim_memory_faults, .init = two_devices, .signal = SIGSEGV) {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * t = sim_tensor(&ctx, &buf);
    volatile float * p = t->data;
    p[3] = 7.0f;
    cr_assert_fail("wrote SIM memory without a fault");
}

Test(sim, set_get_memset_clear_and_2d_go_through_the_buffer, .init = two_devices) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * t = vec(ctx, 64, "t");
    ggml_backend_buffer_t buf = alloc_on(ctx, sim_dev(0));
    set_all(t, 10.0f);
    expect_all(t, 10.0f, "set/get");

    ggml_backend_tensor_memset(t, 0, 4 * sizeof(float), 4 * sizeof(float));
    float v[64];
    ggml_backend_tensor_get(t, v, 0, sizeof v);
    cr_assert_eq(v[3], 13.0f);
    cr_assert_eq(v[4], 0.0f);
    cr_assert_eq(v[7], 0.0f);
    cr_assert_eq(v[8], 18.0f);

    /* rows of 2 floats every 8 in the tensor, packed in host memory */
    const float rows[6] = { -1, -2, -3, -4, -5, -6 };
    ggml_backend_tensor_set_2d(t, rows, 0, 2 * sizeof(float), 3, 8 * sizeof(float), 2 * sizeof(float));
    float back[6] = { 0 };
    ggml_backend_tensor_get_2d(t, back, 0, 2 * sizeof(float), 3, 8 * sizeof(float), 2 * sizeof(float));
    cr_assert_arr_eq(back, rows, sizeof rows);
    ggml_backend_tensor_get(t, v, 0, sizeof v);
    cr_assert_eq(v[8], -3.0f);
    cr_assert_eq(v[10], 20.0f, "between the rows nothing changed");

    ggml_backend_buffer_clear(buf, 0);
    ggml_backend_tensor_get(t, v, 0, sizeof v);
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(v[i], 0.0f);
    }
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
}

/*
 * A view of the middle 2 x 3 block of a 6 x 4 matrix has other data between its rows. Copying
 * one such view into another (same layout) must move the view's 6 values and leave every other
 * value of the destination matrix as it was, on each path: SIM0 -> SIM1 (through the host),
 * host -> SIM0, SIM0 -> host, and copy_async SIM1 -> SIM0.
 */
static struct ggml_tensor * middle_view(struct ggml_context * ctx, struct ggml_tensor * m) {
    return ggml_view_2d(ctx, m, 3, 2, m->nb[1], 1 * m->nb[1] + 2 * sizeof(float));
}

static void expect_view_copied(struct ggml_tensor * dm, float dst_base, float src_base, const char * what) {
    float v[24];
    ggml_backend_tensor_get(dm, v, 0, sizeof v);
    for (int r = 0; r < 4; r++) {
        for (int c = 0; c < 6; c++) {
            const bool in_view = r >= 1 && r < 3 && c >= 2 && c < 5;
            const float want = (in_view ? src_base : dst_base) + (float) (r * 6 + c);
            cr_assert_eq(v[r * 6 + c], want, "%s: [%d][%d] = %g, want %g (%s the view)", what, r, c, v[r * 6 + c],
                         want, in_view ? "in" : "outside");
        }
    }
}

Test(sim, copies_of_a_view_with_gaps_leave_the_data_between_its_rows, .init = two_devices) {
    struct ggml_context * c0 = new_ctx(), * c1 = new_ctx(), * ch = new_ctx();
    struct ggml_tensor * m0 = ggml_new_tensor_2d(c0, GGML_TYPE_F32, 6, 4);
    struct ggml_tensor * m1 = ggml_new_tensor_2d(c1, GGML_TYPE_F32, 6, 4);
    struct ggml_tensor * mh = ggml_new_tensor_2d(ch, GGML_TYPE_F32, 6, 4);
    ggml_backend_buffer_t b0 = alloc_on(c0, sim_dev(0)), b1 = alloc_on(c1, sim_dev(1));
    ggml_backend_buffer_t bh = ggml_backend_alloc_ctx_tensors_from_buft(ch, ggml_backend_cpu_buffer_type());
    cr_assert_not_null(bh);
    struct ggml_tensor * v0 = middle_view(c0, m0), * v1 = middle_view(c1, m1), * vh = middle_view(ch, mh);
    cr_assert(v0->buffer == b0 && v1->buffer == b1 && vh->buffer == bh, "views of allocated tensors are placed");

    set_all(m0, 100.0f);
    set_all(m1, 200.0f);
    ggml_backend_tensor_copy(v0, v1);
    cr_assert_null(ggmlx_last_error(), "%s", last_error());
    expect_view_copied(m1, 200.0f, 100.0f, "SIM0 -> SIM1");

    set_all(mh, 300.0f);
    ggml_backend_tensor_copy(vh, v0);
    expect_view_copied(m0, 100.0f, 300.0f, "host -> SIM0");

    set_all(m0, 400.0f);
    ggml_backend_tensor_copy(v0, vh);
    expect_view_copied(mh, 300.0f, 400.0f, "SIM0 -> host");

    ggml_backend_t s0 = sim(0), s1 = sim(1);
    set_all(m1, 500.0f);
    ggml_backend_tensor_copy_async(s1, s0, v1, v0);
    ggml_backend_synchronize(s0);
    cr_assert_null(ggmlx_last_error(), "%s", last_error());
    expect_view_copied(m0, 400.0f, 500.0f, "copy_async SIM1 -> SIM0");

    ggml_backend_free(s0);
    ggml_backend_free(s1);
    ggml_backend_buffer_free(b0);
    ggml_backend_buffer_free(b1);
    ggml_backend_buffer_free(bh);
    ggml_free(c0);
    ggml_free(c1);
    ggml_free(ch);
}

Test(sim, blocking_copies_between_sim_devices_and_the_host, .init = two_devices) {
    struct ggml_context * c0 = new_ctx(), * c1 = new_ctx(), * ch = new_ctx();
    struct ggml_tensor * a = vec(c0, 32, "a"), * b = vec(c1, 32, "b"), * h = vec(ch, 32, "h");
    ggml_backend_buffer_t b0 = alloc_on(c0, sim_dev(0)), b1 = alloc_on(c1, sim_dev(1));
    ggml_backend_buffer_t bh = ggml_backend_alloc_ctx_tensors_from_buft(ch, ggml_backend_cpu_buffer_type());
    set_all(a, 5.0f);
    ggml_backend_tensor_copy(a, b);
    expect_all(b, 5.0f, "SIM0 -> SIM1");
    ggml_backend_tensor_copy(b, h);
    expect_all(h, 5.0f, "SIM1 -> host");
    set_all(h, 9.0f);
    ggml_backend_tensor_copy(h, a);
    expect_all(a, 9.0f, "host -> SIM0");
    ggml_backend_buffer_free(b0);
    ggml_backend_buffer_free(b1);
    ggml_backend_buffer_free(bh);
    ggml_free(c0);
    ggml_free(c1);
    ggml_free(ch);
}

/* ---- compute ------------------------------------------------------------------------------- */

/* out = softmax(mul_mat(w, x) + bias) * 0.5, on dev (or the CPU buffer type when dev is NULL) */
struct small_graph {
    struct ggml_context * ctx;
    struct ggml_tensor  * w, * x, * bias, * out;
    struct ggml_cgraph  * g;
    ggml_backend_buffer_t buf;
};

static void small_graph_init(struct small_graph * s, ggml_backend_buffer_type_t buft) {
    s->ctx  = new_ctx();
    s->w    = ggml_new_tensor_2d(s->ctx, GGML_TYPE_F32, 33, 17);
    s->x    = ggml_new_tensor_2d(s->ctx, GGML_TYPE_F32, 33, 5);
    s->bias = ggml_new_tensor_1d(s->ctx, GGML_TYPE_F32, 17);
    s->out  = ggml_scale(s->ctx, ggml_soft_max(s->ctx, ggml_add(s->ctx, ggml_mul_mat(s->ctx, s->w, s->x), s->bias)), 0.5f);
    s->g    = ggml_new_graph(s->ctx);
    ggml_build_forward_expand(s->g, s->out);
    s->buf = ggml_backend_alloc_ctx_tensors_from_buft(s->ctx, buft);
    cr_assert_not_null(s->buf, "%s", last_error());
    struct ggml_tensor * in[3] = { s->w, s->x, s->bias };
    for (int k = 0; k < 3; k++) {
        const int64_t n = ggml_nelements(in[k]);
        float * v = malloc((size_t) n * sizeof *v);
        for (int64_t i = 0; i < n; i++) {
            v[i] = sinf((float) (i * 7 + k * 13)) * 0.25f;
        }
        ggml_backend_tensor_set(in[k], v, 0, ggml_nbytes(in[k]));
        free(v);
    }
}

static void small_graph_free(struct small_graph * s) {
    ggml_backend_buffer_free(s->buf);
    ggml_free(s->ctx);
}

static void expect_same_output(const struct small_graph * a, const struct small_graph * b) {
    const size_t n = (size_t) ggml_nelements(a->out);
    float * va = malloc(n * sizeof *va), * vb = malloc(n * sizeof *vb);
    ggml_backend_tensor_get(a->out, va, 0, n * sizeof *va);
    ggml_backend_tensor_get(b->out, vb, 0, n * sizeof *vb);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(va[i], vb[i], "[%zu]: %g vs %g", i, va[i], vb[i]);
    }
    free(va);
    free(vb);
}

Test(sim, compute_on_sim0_equals_the_cpu, .init = two_devices) {
    ggml_backend_t s = sim(0), c = cpu();
    struct small_graph gs, gc;
    small_graph_init(&gs, ggml_backend_dev_buffer_type(sim_dev(0)));
    small_graph_init(&gc, ggml_backend_cpu_buffer_type());
    cr_assert_eq(ggml_backend_graph_compute(s, gs.g), GGML_STATUS_SUCCESS, "%s", last_error());
    cr_assert_eq(ggml_backend_graph_compute(c, gc.g), GGML_STATUS_SUCCESS, "%s", last_error());
    expect_same_output(&gs, &gc);
    small_graph_free(&gs);
    small_graph_free(&gc);
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, a_graph_plan_computes_through_the_private_memory, .init = two_devices) {
    ggml_backend_t s = sim(1), c = cpu();
    struct small_graph gs, gc;
    small_graph_init(&gs, ggml_backend_dev_buffer_type(sim_dev(1)));
    small_graph_init(&gc, ggml_backend_cpu_buffer_type());
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(s, gs.g);
    cr_assert_not_null(plan, "%s", last_error());
    cr_assert_eq(ggml_backend_graph_plan_compute(s, plan), GGML_STATUS_SUCCESS, "%s", last_error());
    cr_assert_eq(ggml_backend_graph_compute(c, gc.g), GGML_STATUS_SUCCESS);
    expect_same_output(&gs, &gc);
    ggml_backend_graph_plan_free(s, plan);
    small_graph_free(&gs);
    small_graph_free(&gc);
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, compute_on_another_devices_or_host_memory_is_refused_when_enqueued, .init = two_devices) {
    ggml_backend_t s = sim(0);
    struct small_graph on1, onhost;
    small_graph_init(&on1, ggml_backend_dev_buffer_type(sim_dev(1)));
    small_graph_init(&onhost, ggml_backend_cpu_buffer_type());
    cr_assert_eq(ggml_backend_graph_compute_async(s, on1.g), GGML_STATUS_FAILED);
    cr_assert(strstr(last_error(), "SIM1") != NULL, "names the memory: %s", last_error());
    cr_assert_eq(ggml_backend_graph_compute_async(s, onhost.g), GGML_STATUS_FAILED);
    cr_assert(strstr(last_error(), "CPU") != NULL, "names the memory: %s", last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s), 0, "nothing queued");
    cr_assert_eq(ggmlx_backend_get_status(s), GGML_STATUS_SUCCESS, "and nothing sticky");
    small_graph_free(&on1);
    small_graph_free(&onhost);
    ggml_backend_free(s);
}

Test(sim, refused_ops_are_unsupported_and_refused_when_enqueued) {
    const enum ggml_op refused[] = { GGML_OP_MUL_MAT };
    configure(1, 4 * MiB, refused, 1);
    ggml_backend_t s = sim(0);
    struct small_graph gs;
    small_graph_init(&gs, ggml_backend_dev_buffer_type(sim_dev(0)));
    const struct ggml_tensor * mm = gs.out->src[0]->src[0]->src[0];
    cr_assert_eq(mm->op, GGML_OP_MUL_MAT);
    cr_assert_not(ggml_backend_supports_op(s, mm));
    cr_assert_not(ggml_backend_dev_offload_op(sim_dev(0), mm));
    cr_assert(ggml_backend_supports_op(s, gs.out), "SCALE is not refused");
    cr_assert_eq(ggml_backend_graph_compute_async(s, gs.g), GGML_STATUS_FAILED);
    cr_assert(strstr(last_error(), "not supported") != NULL, "%s", last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s), 0);
    small_graph_free(&gs);
    ggml_backend_free(s);
}

Test(sim, large_batches_are_worth_offloading_row_lookups_are_not, .init = two_devices) {
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * w  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 16);
    struct ggml_tensor * x1 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 1);
    struct ggml_tensor * x32 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 16, 32);
    struct ggml_tensor * ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 40);
    cr_assert(ggml_backend_dev_offload_op(sim_dev(0), ggml_mul_mat(ctx, w, x32)));
    cr_assert_not(ggml_backend_dev_offload_op(sim_dev(0), ggml_mul_mat(ctx, w, x1)));
    cr_assert_not(ggml_backend_dev_offload_op(sim_dev(0), ggml_get_rows(ctx, w, ids)));
    ggml_free(ctx);
}

/* ---- queued copies --------------------------------------------------------------------------- */

struct copy_pair {
    struct ggml_context * cs, * cd;
    struct ggml_tensor  * src, * dst;
    ggml_backend_buffer_t bs, bd;
};

/* src on src_dev, dst on dst_dev (NULL: host memory) */
static void copy_pair_init(struct copy_pair * p, ggml_backend_dev_t src_dev, ggml_backend_dev_t dst_dev) {
    p->cs  = new_ctx();
    p->cd  = new_ctx();
    p->src = vec(p->cs, 256, "src");
    p->dst = vec(p->cd, 256, "dst");
    p->bs  = ggml_backend_alloc_ctx_tensors_from_buft(p->cs, src_dev ? ggml_backend_dev_buffer_type(src_dev)
                                                                      : ggml_backend_cpu_buffer_type());
    p->bd  = ggml_backend_alloc_ctx_tensors_from_buft(p->cd, dst_dev ? ggml_backend_dev_buffer_type(dst_dev)
                                                                      : ggml_backend_cpu_buffer_type());
    cr_assert(p->bs && p->bd, "%s", last_error());
    set_all(p->src, 1.0f);
    set_all(p->dst, -1000.0f);
}

static void copy_pair_free(struct copy_pair * p) {
    ggml_backend_buffer_free(p->bs);
    ggml_backend_buffer_free(p->bd);
    ggml_free(p->cs);
    ggml_free(p->cd);
}

/*
 * Rule 7, made deterministic with a hold: the source queue is held with a queued write of new
 * values; the copy must wait for it, so the destination ends with the new values, never the
 * old ones, and its queue is still blocked while the source is held.
 */
static void check_ordered_copy(ggml_backend_t bs, ggml_backend_t bd, struct copy_pair * p) {
    static float fresh[256];
    for (int i = 0; i < 256; i++) {
        fresh[i] = 500.0f + (float) i;
    }
    cr_assert(ggmlx_backend_queue_hold(bs));
    ggml_backend_tensor_set_async(bs, p->src, fresh, 0, sizeof fresh);
    ggml_backend_tensor_copy_async(bs, bd, p->src, p->dst);
    cr_assert_null(ggmlx_last_error(), "%s", last_error());
    if (bs != bd) {
        until_waiting(bd);
        cr_assert_geq(ggmlx_backend_queue_pending(bd), 1, "the copy waits for the held source");
    }
    expect_all(p->dst, -1000.0f, "nothing copied while the source is held");
    cr_assert(ggmlx_backend_queue_release(bs));
    ggml_backend_synchronize(bd);
    expect_all(p->dst, 500.0f, "the copy read what was queued before it");
}

Test(sim, sim_to_sim_copy_async_is_ordered_after_the_source_queue, .init = two_devices) {
    ggml_backend_t b0 = sim(0), b1 = sim(1);
    struct copy_pair p;
    copy_pair_init(&p, sim_dev(0), sim_dev(1));
    check_ordered_copy(b0, b1, &p);
    copy_pair_free(&p);
    ggml_backend_free(b0);
    ggml_backend_free(b1);
}

Test(sim, copy_async_between_two_backends_of_one_device, .init = two_devices) {
    ggml_backend_t a = sim(0), b = sim(0);
    struct copy_pair p;
    copy_pair_init(&p, sim_dev(0), sim_dev(0));
    check_ordered_copy(a, b, &p);
    copy_pair_free(&p);
    ggml_backend_free(a);
    ggml_backend_free(b);
}

Test(sim, sim_to_cpu_copy_async_is_ordered_after_the_source_queue, .init = two_devices) {
    ggml_backend_t s = sim(0), c = cpu();
    struct copy_pair p;
    copy_pair_init(&p, sim_dev(0), NULL);
    check_ordered_copy(s, c, &p);
    copy_pair_free(&p);
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, cpu_to_sim_copy_async_is_ordered_after_the_source_queue, .init = two_devices) {
    ggml_backend_t s = sim(1), c = cpu();
    struct copy_pair p;
    copy_pair_init(&p, NULL, sim_dev(1));
    check_ordered_copy(c, s, &p);
    copy_pair_free(&p);
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, copy_async_on_one_sim_backend_runs_in_queue_order, .init = two_devices) {
    ggml_backend_t b = sim(0);
    struct copy_pair p;
    copy_pair_init(&p, sim_dev(0), sim_dev(0));
    check_ordered_copy(b, b, &p);
    copy_pair_free(&p);
    ggml_backend_free(b);
}

Test(sim, set_and_get_async_run_on_the_queue, .init = two_devices) {
    ggml_backend_t b = sim(0);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * t = vec(ctx, 64, "t");
    ggml_backend_buffer_t buf = alloc_on(ctx, sim_dev(0));
    set_all(t, 0.0f);
    static float in[64], out[64], rows[8];
    for (int i = 0; i < 64; i++) {
        in[i] = 100.0f + (float) i;
        out[i] = -1.0f;
    }
    cr_assert(ggmlx_backend_queue_hold(b));
    ggml_backend_tensor_set_async(b, t, in, 0, sizeof in);
    ggml_backend_tensor_get_async(b, t, out, 0, sizeof out);
    ggml_backend_tensor_get_2d_async(b, t, rows, 0, 2 * sizeof(float), 4, 16 * sizeof(float), 2 * sizeof(float));
    cr_assert_eq(ggmlx_backend_queue_pending(b), 3);
    cr_assert_eq(out[0], -1.0f, "nothing ran while held");
    cr_assert(ggmlx_backend_queue_release(b));
    ggml_backend_synchronize(b);
    for (int i = 0; i < 64; i++) {
        cr_assert_eq(out[i], 100.0f + (float) i);
    }
    const float want[8] = { 100, 101, 116, 117, 132, 133, 148, 149 };
    cr_assert_arr_eq(rows, want, sizeof want);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(b);
}

Test(sim, async_copies_into_another_devices_memory_are_refused, .init = two_devices) {
    ggml_backend_t b0 = sim(0);
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * t = vec(ctx, 8, "on SIM1");
    ggml_backend_buffer_t buf = alloc_on(ctx, sim_dev(1));
    float v[8] = { 0 };
    ggml_backend_tensor_set_async(b0, t, v, 0, sizeof v);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(b0), 0);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(b0);
}

/* ---- events across kinds ------------------------------------------------------------------- */

/*
 * `waiter` waits for an event recorded on the held `recorder` after a queued write, then writes
 * a tensor of its own: while the recorder is held the waiter must stay blocked in its wait with
 * its write pending, and after the release both writes have happened.
 */
static void check_cross_wait(ggml_backend_t recorder, ggml_backend_dev_t rec_dev, ggml_backend_t waiter,
                             ggml_backend_dev_t wait_dev) {
    struct copy_pair p; /* src: the recorder's tensor, dst: the waiter's */
    copy_pair_init(&p, rec_dev == ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) ? NULL : rec_dev,
                   wait_dev == ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU) ? NULL : wait_dev);
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(recorder));
    cr_assert_not_null(ev, "%s", last_error());
    static float a[256], b[256];
    for (int i = 0; i < 256; i++) {
        a[i] = 300.0f + (float) i;
        b[i] = 700.0f + (float) i;
    }
    cr_assert(ggmlx_backend_queue_hold(recorder));
    ggml_backend_tensor_set_async(recorder, p.src, a, 0, sizeof a);
    ggml_backend_event_record(ev, recorder);
    ggml_backend_event_wait(waiter, ev);
    ggml_backend_tensor_set_async(waiter, p.dst, b, 0, sizeof b);
    until_waiting(waiter);
    cr_assert_eq(ggmlx_backend_queue_pending(waiter), 2, "the wait and the write after it are pending");
    expect_all(p.dst, -1000.0f, "the waiter wrote nothing yet");
    cr_assert(ggmlx_backend_queue_release(recorder));
    ggml_backend_synchronize(waiter);
    expect_all(p.dst, 700.0f, "the waiter ran after the event");
    ggml_backend_event_synchronize(ev);
    expect_all(p.src, 300.0f, "the recorder's write");
    ggml_backend_event_free(ev);
    copy_pair_free(&p);
}

Test(sim, a_sim_queue_waits_on_a_cpu_event, .init = two_devices) {
    ggml_backend_t s = sim(0), c = cpu();
    check_cross_wait(c, ggml_backend_get_device(c), s, sim_dev(0));
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, a_cpu_queue_waits_on_a_sim_event, .init = two_devices) {
    ggml_backend_t s = sim(1), c = cpu();
    check_cross_wait(s, sim_dev(1), c, ggml_backend_get_device(c));
    ggml_backend_free(s);
    ggml_backend_free(c);
}

Test(sim, a_sim_queue_waits_on_another_sim_devices_event, .init = two_devices) {
    ggml_backend_t s0 = sim(0), s1 = sim(1);
    check_cross_wait(s0, sim_dev(0), s1, sim_dev(1));
    ggml_backend_free(s0);
    ggml_backend_free(s1);
}

Test(sim, a_backend_records_only_its_own_devices_events, .init = two_devices) {
    ggml_backend_t s0 = sim(0), s1 = sim(1);
    ggml_backend_event_t ev = ggml_backend_event_new(sim_dev(0));
    cr_assert_not_null(ev);
    ggml_backend_event_record(ev, s1);
    cr_assert(strstr(last_error(), "SIM1") != NULL, "%s", last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s1), 0);
    cr_assert(ggmlx_backend_queue_hold(s0));
    ggml_backend_event_record(ev, s0);
    cr_assert_null(ggmlx_last_error(), "%s", last_error());
    cr_assert_eq(ggmlx_backend_queue_pending(s0), 1, "the record is queued on its own device's backend");
    cr_assert(ggmlx_backend_queue_release(s0));
    ggml_backend_event_synchronize(ev);
    ggml_backend_event_free(ev);
    ggml_backend_free(s0);
    ggml_backend_free(s1);
}
