/*
 * test-backend-cpu.c -- the CPU device and registry: properties, init parameters, what it
 * supports, the functions it hands out by name, plans, settings and bad input.
 */
#include <criterion/criterion.h>

#include "backend-cpu.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(backend_cpu, .timeout = 60);

static ggml_backend_dev_t cpu_dev(void) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    cr_assert_not_null(reg);
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    cr_assert_not_null(dev);
    return dev;
}

static struct ggml_context * new_ctx(void) {
    struct ggml_init_params p = { 32 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    return ggml_init(p);
}

/* ---- registry and device ------------------------------------------------------------------- */

Test(backend_cpu, registry_is_named_cpu_with_one_device) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    cr_assert_str_eq(ggml_backend_reg_name(reg), "CPU");
    cr_assert_eq(ggml_backend_reg_dev_count(reg), 1);
    cr_assert_null(ggml_backend_reg_dev_get(reg, 1));
    cr_assert_not_null(ggmlx_last_error(), "index 1 is an error");
    cr_assert_eq(ggml_backend_dev_backend_reg(cpu_dev()), reg);
    cr_assert_eq(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), cpu_dev(), "the registry finds it");
}

static void cpuinfo_model(char * out, size_t n) {
    out[0] = '\0';
    FILE * f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char * c = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && c) {
            c++;
            while (*c == ' ' || *c == '\t') {
                c++;
            }
            c[strcspn(c, "\n")] = '\0';
            snprintf(out, n, "%s", c);
            break;
        }
    }
    fclose(f);
}

Test(backend_cpu, device_properties) {
    ggml_backend_dev_t dev = cpu_dev();
    struct ggml_backend_dev_props p;
    memset(&p, 0x5a, sizeof p);
    ggml_backend_dev_get_props(dev, &p);
    cr_assert_str_eq(p.name, "CPU");
    cr_assert_str_eq(ggml_backend_dev_name(dev), "CPU");
    cr_assert_eq(p.type, GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_eq(ggml_backend_dev_type(dev), GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_null(p.device_id);
    cr_assert(p.caps.async);
    cr_assert_not(p.caps.host_buffer);
    cr_assert(p.caps.buffer_from_host_ptr);
    cr_assert(p.caps.events);
    cr_assert(p.caps.mmap_support);
    cr_assert_gt(p.memory_total, 0);
    cr_assert_leq(p.memory_free, p.memory_total);
    char model[256];
    cpuinfo_model(model, sizeof model);
    cr_assert_gt(strlen(p.description), 0);
    if (model[0]) {
        cr_assert_str_eq(p.description, model, "the model name from /proc/cpuinfo");
    }
}

Test(backend_cpu, buffer_types) {
    ggml_backend_dev_t dev = cpu_dev();
    cr_assert_eq(ggml_backend_dev_buffer_type(dev), ggml_backend_cpu_buffer_type());
    cr_assert_null(ggml_backend_dev_host_buffer_type(dev), "no pinned host buffers on the CPU");
    cr_assert(ggml_backend_dev_supports_buft(dev, ggml_backend_cpu_buffer_type()));

    /* buffers over the caller's memory */
    void * mem = aligned_alloc(64, 4096);
    ggml_backend_buffer_t buf = ggml_backend_dev_buffer_from_host_ptr(dev, mem, 4096, 4096);
    cr_assert_not_null(buf);
    cr_assert_eq(ggml_backend_buffer_get_base(buf), mem);
    cr_assert(ggml_backend_buffer_is_host(buf));
    cr_assert(ggml_backend_dev_supports_buft(dev, ggml_backend_buffer_get_type(buf)), "any host buffer type");
    ggml_backend_buffer_free(buf);
    free(mem);
}

Test(backend_cpu, supports_op_follows_the_kernels) {
    ggml_backend_dev_t dev = cpu_dev();
    struct ggml_context * ctx = new_ctx();
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 256);
    struct ggml_tensor * s = ggml_scale(ctx, x, 2.0f);
    struct ggml_tensor * r = ggml_reshape_2d(ctx, x, 16, 16);
    struct ggml_tensor * q = ggml_cast(ctx, s, GGML_TYPE_IQ2_XXS);
    cr_assert(ggml_backend_dev_supports_op(dev, s));
    cr_assert(ggml_backend_dev_supports_op(dev, r), "views need no kernel");
    cr_assert(ggml_backend_dev_supports_op(dev, x), "leaves too");
    cr_assert_not(ggml_backend_dev_supports_op(dev, q), "no kernel converts into IQ2_XXS");
    cr_assert_not(ggml_backend_dev_offload_op(dev, s));
    ggml_free(ctx);
}

/* ---- proc addresses ------------------------------------------------------------------------ */

Test(backend_cpu, proc_addresses) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads"),
                 (void *) ggml_backend_cpu_set_n_threads);
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_abort_callback"),
                 (void *) ggml_backend_cpu_set_abort_callback);
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_use_ref"),
                 (void *) ggml_backend_cpu_set_use_ref);
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"), (void *) ggml_threadpool_new);
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_free"), (void *) ggml_threadpool_free);
    cr_assert_eq(ggml_backend_reg_get_proc_address(reg, "ggml_backend_cpu_set_threadpool"),
                 (void *) ggml_backend_cpu_set_threadpool);
    cr_assert_not_null(ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
    cr_assert_not_null(ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
    cr_assert_null(ggml_backend_reg_get_proc_address(reg, "ggml_backend_no_such_function"));
    cr_assert_null(ggmlx_last_error(), "an unknown name is not an error");
}

Test(backend_cpu, features_list_the_cpu_features) {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    ggml_backend_get_features_t get = (ggml_backend_get_features_t) ggml_backend_reg_get_proc_address(
        reg, "ggml_backend_get_features");
    struct ggml_backend_feature * f = get(reg);
    bool avx2 = false, fma = false;
    int n = 0;
    for (; f[n].name != NULL; n++) {
        cr_assert_str_eq(f[n].value, "1");
        avx2 |= strcmp(f[n].name, "AVX2") == 0;
        fma  |= strcmp(f[n].name, "FMA") == 0;
        cr_assert_lt(n, 16);
    }
    cr_assert_eq(avx2, ggml_cpu_has_avx2() != 0);
    cr_assert_eq(fma, ggml_cpu_has_fma() != 0);
}

Test(backend_cpu, extra_buffer_types_list_is_empty) {
    ggml_backend_dev_get_extra_bufts_t get = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(
        ggml_backend_cpu_reg(), "ggml_backend_dev_get_extra_bufts");
    ggml_backend_buffer_type_t * list = get(cpu_dev());
    cr_assert_not_null(list);
    cr_assert_null(list[0], "NULL-terminated and empty");
}

Test(backend_cpu, set_n_threads_through_the_proc_address) {
    ggml_backend_t b = ggml_backend_cpu_init();
    ggml_backend_set_n_threads_t set = (ggml_backend_set_n_threads_t) ggml_backend_reg_get_proc_address(
        ggml_backend_cpu_reg(), "ggml_backend_set_n_threads");
    set(b, 3);
    ggml_backend_synchronize(b);
    cr_assert_eq(ggmlx_backend_cpu_run_n_threads(b), 3);
    ggml_backend_free(b);
}

/* ---- init parameters ----------------------------------------------------------------------- */

Test(backend_cpu, init_parameters) {
    ggml_backend_dev_t dev = cpu_dev();
    const char * ok_async[] = { NULL, "", "async", " , ;", "n_threads=2" };
    for (size_t i = 0; i < sizeof ok_async / sizeof ok_async[0]; i++) {
        ggml_backend_t b = ggml_backend_dev_init(dev, ok_async[i]);
        cr_assert_not_null(b, "'%s'", ok_async[i] ? ok_async[i] : "NULL");
        cr_assert_not_null(ggmlx_backend_cpu_queue(b), "'%s' is asynchronous", ok_async[i] ? ok_async[i] : "NULL");
        ggml_backend_free(b);
    }
    const char * ok_sync[] = { "sync", "sync,n_threads=3", "n_threads=1; sync" };
    for (size_t i = 0; i < sizeof ok_sync / sizeof ok_sync[0]; i++) {
        ggml_backend_t b = ggml_backend_dev_init(dev, ok_sync[i]);
        cr_assert_not_null(b, "'%s'", ok_sync[i]);
        cr_assert_null(ggmlx_backend_cpu_queue(b), "'%s' has no queue", ok_sync[i]);
        ggml_backend_free(b);
    }
    ggml_backend_t b = ggml_backend_dev_init(dev, "n_threads=3");
    cr_assert_eq(ggmlx_backend_cpu_run_n_threads(b), 3);
    ggml_backend_free(b);
}

Test(backend_cpu, bad_init_parameters_give_null_and_a_message) {
    ggml_backend_dev_t dev = cpu_dev();
    const char * bad[] = { "turbo", "n_threads=0", "n_threads=x", "n_threads=", "n_threads=100000", "syncx" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(ggml_backend_dev_init(dev, bad[i]), "'%s'", bad[i]);
        cr_assert_not_null(ggmlx_last_error());
        cr_assert(strstr(ggmlx_last_error(), "parameter") != NULL, "%s", ggmlx_last_error());
    }
}

/* ---- the backend --------------------------------------------------------------------------- */

Test(backend_cpu, identity) {
    ggml_backend_t a = ggml_backend_cpu_init();
    ggml_backend_t b = ggml_backend_init_by_name("cpu", "sync");
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert(ggml_backend_is_cpu(a));
    cr_assert(ggml_backend_is_cpu(b));
    cr_assert_not(ggml_backend_is_cpu(NULL));
    cr_assert_str_eq(ggml_backend_name(a), "CPU");
    cr_assert(ggml_guid_matches(ggml_backend_guid(a), ggml_backend_guid(b)));
    cr_assert_eq(ggml_backend_get_device(a), cpu_dev());
    cr_assert_eq(ggml_backend_get_default_buffer_type(a), ggml_backend_cpu_buffer_type());
    ggml_backend_free(a);
    ggml_backend_free(b);
}

static const char * fake_name(ggml_backend_t b) {
    (void) b;
    return "FAKE";
}

Test(backend_cpu, setters_refuse_other_backends) {
    static ggml_guid other = { 1, 2, 3 };
    struct ggml_backend fake = { .guid = &other, .iface = { .get_name = fake_name } };
    ggml_backend_cpu_set_n_threads(&fake, 2);
    cr_assert(strstr(ggmlx_last_error(), "not a CPU backend") != NULL, "%s", ggmlx_last_error());
    ggml_backend_cpu_set_n_threads(NULL, 2);
    cr_assert_not_null(ggmlx_last_error());
    ggml_backend_cpu_set_abort_callback(&fake, NULL, NULL);
    cr_assert_not_null(ggmlx_last_error());
    ggml_backend_cpu_set_threadpool(&fake, NULL);
    cr_assert_not_null(ggmlx_last_error());
    ggml_backend_cpu_set_use_ref(&fake, true);
    cr_assert_not_null(ggmlx_last_error());
    cr_assert_not(ggml_backend_is_cpu(&fake));
}

Test(backend_cpu, set_n_threads_out_of_range_is_refused) {
    ggml_backend_t b = ggml_backend_dev_init(cpu_dev(), "n_threads=2");
    ggml_backend_cpu_set_n_threads(b, 0);
    cr_assert_not_null(ggmlx_last_error());
    ggml_backend_cpu_set_n_threads(b, GGML_MAX_N_THREADS + 1);
    cr_assert_not_null(ggmlx_last_error());
    ggml_backend_synchronize(b);
    cr_assert_eq(ggmlx_backend_cpu_run_n_threads(b), 2, "unchanged");
    ggml_backend_free(b);
}

Test(backend_cpu, sync_mode_settings_apply_at_once) {
    ggml_backend_t b = ggml_backend_dev_init(cpu_dev(), "sync");
    ggml_backend_cpu_set_n_threads(b, 5);
    cr_assert_eq(ggmlx_backend_cpu_run_n_threads(b), 5);
    ggml_backend_free(b);
}

/* x (filled with 1, 2, ...), y = 2x, allocated on b */
struct small {
    struct ggml_context * ctx;
    struct ggml_tensor  * x, * y;
    struct ggml_cgraph  * g;
    ggml_backend_buffer_t buf;
};

static void small_init(struct small * s, ggml_backend_t b) {
    s->ctx = new_ctx();
    s->x   = ggml_new_tensor_1d(s->ctx, GGML_TYPE_F32, 256);
    s->y   = ggml_scale(s->ctx, s->x, 2.0f);
    s->g   = ggml_new_graph(s->ctx);
    ggml_build_forward_expand(s->g, s->y);
    s->buf = ggml_backend_alloc_ctx_tensors(s->ctx, b);
    cr_assert_not_null(s->buf);
    float v[256];
    for (int i = 0; i < 256; i++) {
        v[i] = (float) (i + 1);
    }
    ggml_backend_tensor_set(s->x, v, 0, sizeof v);
    ggml_backend_tensor_memset(s->y, 0, 0, ggml_nbytes(s->y));
}

static float y_at(const struct small * s, int i) {
    float v;
    ggml_backend_tensor_get(s->y, &v, (size_t) i * sizeof v, sizeof v);
    return v;
}

static void small_free(struct small * s) {
    ggml_backend_buffer_free(s->buf);
    ggml_free(s->ctx);
}

Test(backend_cpu, graph_plans) {
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, b);
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(b, s.g);
    cr_assert_not_null(plan);
    cr_assert_eq(ggml_backend_graph_plan_compute(b, plan), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(y_at(&s, 9), 20.0f, 0);

    /* a plan holds what it needs: the graph may change after it was made */
    ggml_graph_clear(s.g);
    ggml_backend_tensor_memset(s.y, 0, 0, ggml_nbytes(s.y));
    cr_assert_eq(ggml_backend_graph_plan_compute(b, plan), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(y_at(&s, 9), 20.0f, 0);

    ggml_backend_graph_plan_free(b, plan);
    cr_assert_eq(ggml_backend_graph_plan_compute(b, plan), GGML_STATUS_FAILED, "a plan used after free");
    cr_assert(strstr(ggmlx_last_error(), "not a live plan") != NULL, "%s", ggmlx_last_error());
    small_free(&s);
    ggml_backend_free(b);
}

Test(backend_cpu, plan_of_another_backend_is_refused) {
    ggml_backend_t a = ggml_backend_cpu_init();
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, a);
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(a, s.g);
    cr_assert_eq(ggml_backend_graph_plan_compute(b, plan), GGML_STATUS_FAILED);
    cr_assert_float_eq(y_at(&s, 0), 0.0f, 0, "nothing ran");
    ggml_backend_graph_plan_free(a, plan);
    small_free(&s);
    ggml_backend_free(a);
    ggml_backend_free(b);
}

Test(backend_cpu, plan_runs_after_queued_work) {
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, b);
    struct ggml_context * c2 = new_ctx();
    struct ggml_tensor * yv = ggml_view_tensor(c2, s.y);
    struct ggml_tensor * z = ggml_scale(c2, yv, 10.0f);
    struct ggml_cgraph * gz = ggml_new_graph(c2);
    ggml_build_forward_expand(gz, z);
    ggml_backend_buffer_t buf2 = ggml_backend_alloc_ctx_tensors(c2, b);
    ggml_backend_graph_plan_t plan = ggml_backend_graph_plan_create(b, gz);
    cr_assert_eq(ggml_backend_graph_compute_async(b, s.g), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_graph_plan_compute(b, plan), GGML_STATUS_SUCCESS);
    float v;
    ggml_backend_tensor_get(z, &v, 4 * sizeof v, sizeof v);
    cr_assert_float_eq(v, 100.0f, 0, "z = 10 * y, y computed by the queued work first");
    ggml_backend_graph_plan_free(b, plan);
    ggml_backend_buffer_free(buf2);
    ggml_free(c2);
    small_free(&s);
    ggml_backend_free(b);
}

static bool abort_always(void * data) {
    (*(int *) data)++;
    return true;
}

Test(backend_cpu, abort_callback_stops_the_queued_compute_and_is_reported_once) {
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, b);
    int calls = 0;
    ggml_backend_cpu_set_abort_callback(b, abort_always, &calls);
    cr_assert_eq(ggml_backend_graph_compute(b, s.g), GGML_STATUS_ABORTED);
    cr_assert_gt(calls, 0, "called on the worker");
    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS, "an abort is returned once, then forgotten");
    ggml_backend_cpu_set_abort_callback(b, NULL, NULL);
    cr_assert_eq(ggml_backend_graph_compute(b, s.g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(y_at(&s, 1), 4.0f, 0);
    small_free(&s);
    ggml_backend_free(b);
}

/* an abort left by graph_compute_async is also returned once by the next graph_compute, then forgotten */
Test(backend_cpu, abort_from_compute_async_is_reported_once_by_graph_compute) {
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, b);
    int calls = 0;
    ggml_backend_cpu_set_abort_callback(b, abort_always, &calls);
    cr_assert_eq(ggml_backend_graph_compute_async(b, s.g), GGML_STATUS_SUCCESS);
    ggml_backend_synchronize(b);
    cr_assert_gt(calls, 0, "called on the worker");
    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_ABORTED);
    ggml_backend_cpu_set_abort_callback(b, NULL, NULL);
    cr_assert_eq(ggml_backend_graph_compute(b, s.g), GGML_STATUS_ABORTED, "the abort is returned once");
    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS, "then forgotten");
    cr_assert_eq(ggml_backend_graph_compute(b, s.g), GGML_STATUS_SUCCESS, "the next computation runs normally");
    cr_assert_float_eq(y_at(&s, 1), 4.0f, 0);
    small_free(&s);
    ggml_backend_free(b);
}

Test(backend_cpu, user_threadpool) {
    ggml_backend_t b = ggml_backend_cpu_init();
    struct small s;
    small_init(&s, b);
    struct ggml_threadpool_params p = ggml_threadpool_params_default(2);
    struct ggml_threadpool * tp = ggml_threadpool_new(&p);
    cr_assert_not_null(tp);
    ggml_backend_cpu_set_threadpool(b, tp);
    cr_assert_eq(ggml_backend_graph_compute(b, s.g), GGML_STATUS_SUCCESS);
    cr_assert_float_eq(y_at(&s, 255), 512.0f, 0);
    ggml_backend_cpu_set_threadpool(b, NULL);
    ggml_backend_synchronize(b); /* nothing queued uses tp any more */
    ggml_threadpool_free(tp);
    small_free(&s);
    ggml_backend_free(b);
}

Test(backend_cpu, events_are_host_counter_events) {
    ggml_backend_t b = ggml_backend_cpu_init();
    ggml_backend_event_t ev = ggml_backend_event_new(cpu_dev());
    cr_assert_not_null(ev);
    cr_assert_not_null(ggmlx_host_event_of(ev));
    cr_assert_eq(ev->device, cpu_dev());
    ggml_backend_event_record(ev, b);
    ggml_backend_event_synchronize(ev);
    cr_assert_eq(atomic_load(&ggmlx_host_event_of(ev)->value), 1);
    cr_assert_eq(atomic_load(&ggmlx_host_event_of(ev)->n_recorded), 1);
    ggml_backend_event_free(ev);
    ggml_backend_free(b);
}
