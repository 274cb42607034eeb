/*
 * test-registry.c -- the registry of backends and devices: the CPU found by name (any case) and
 * type, backends started by name, type and "best", indices out of range, NULL names, and
 * registering registries and devices (once each, from several threads at once).
 *
 * Criterion runs every test in its own process, so each test starts from the registry the
 * library builds on first use.
 */
#include <criterion/criterion.h>

#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake backend kind: registries of up to 4 devices of a chosen type ------------------------ */

struct fake_dev {
    char                       name[32];
    enum ggml_backend_dev_type type;
};

struct fake_reg {
    char                       name[32];
    size_t                     n_devs;
    struct fake_dev            ctx[4];
    struct ggml_backend_device devs[4];
    struct ggml_backend_reg    reg;
};

static const char * fake_backend_name(ggml_backend_t backend) {
    return ((struct fake_dev *) backend->device->context)->name;
}

static void fake_backend_free(ggml_backend_t backend) {
    free(backend);
}

static ggml_guid fake_guid = { 'f', 'a', 'k', 'e' };

static const char * fake_dev_name(ggml_backend_dev_t dev) {
    return ((struct fake_dev *) dev->context)->name;
}

static const char * fake_dev_description(ggml_backend_dev_t dev) {
    (void) dev;
    return "a device of test-registry";
}

static void fake_dev_memory(ggml_backend_dev_t dev, size_t * free_mem, size_t * total) {
    (void) dev;
    *free_mem = 1;
    *total    = 2;
}

static enum ggml_backend_dev_type fake_dev_type(ggml_backend_dev_t dev) {
    return ((struct fake_dev *) dev->context)->type;
}

static void fake_dev_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * p) {
    p->name        = fake_dev_name(dev);
    p->description = fake_dev_description(dev);
    p->type        = fake_dev_type(dev);
    fake_dev_memory(dev, &p->memory_free, &p->memory_total);
}

static ggml_backend_t fake_dev_init(ggml_backend_dev_t dev, const char * params) {
    (void) params;
    ggml_backend_t b = calloc(1, sizeof *b);
    if (b != NULL) {
        b->guid           = &fake_guid;
        b->iface.get_name = fake_backend_name;
        b->iface.free     = fake_backend_free;
        b->device         = dev;
    }
    return b;
}

static const char * fake_reg_name(ggml_backend_reg_t reg) {
    return ((struct fake_reg *) reg->context)->name;
}

static size_t fake_reg_count(ggml_backend_reg_t reg) {
    return ((struct fake_reg *) reg->context)->n_devs;
}

static ggml_backend_dev_t fake_reg_dev(ggml_backend_reg_t reg, size_t i) {
    struct fake_reg * f = reg->context;
    return i < f->n_devs ? &f->devs[i] : NULL;
}

/* A registry "name" with devices "<name>0".. of the given types (allocated; lives to the end). */
static struct fake_reg * fake_reg_new(const char * name, size_t n, const enum ggml_backend_dev_type * types) {
    struct fake_reg * f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->n_devs = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(f->ctx[i].name, sizeof f->ctx[i].name, "%s%zu", name, i);
        f->ctx[i].type = types[i];
        f->devs[i] = (struct ggml_backend_device) {
            .iface = {
                .get_name        = fake_dev_name,
                .get_description = fake_dev_description,
                .get_memory      = fake_dev_memory,
                .get_type        = fake_dev_type,
                .get_props       = fake_dev_props,
                .init_backend    = fake_dev_init,
            },
            .reg     = &f->reg,
            .context = &f->ctx[i],
        };
    }
    f->reg = (struct ggml_backend_reg) {
        .api_version = GGML_BACKEND_API_VERSION,
        .iface       = { .get_name = fake_reg_name, .get_device_count = fake_reg_count, .get_device = fake_reg_dev },
        .context     = f,
    };
    return f;
}

static void expect_error(const char * func) {
    const char * e = ggmlx_last_error();
    cr_assert_not_null(e, "no error recorded (expected one from %s)", func);
    cr_assert(strstr(e, func) != NULL, "error '%s' does not name %s", e, func);
}

/* ---- the CPU --------------------------------------------------------------------------------------- */

Test(registry, cpu_device_is_found_by_name_in_any_case) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_name("CPU");
    cr_assert_not_null(cpu);
    cr_assert_eq(ggml_backend_dev_by_name("cpu"), cpu);
    cr_assert_eq(ggml_backend_dev_by_name("Cpu"), cpu);
    cr_assert_eq(ggml_backend_dev_type(cpu), GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_null(ggmlx_last_error());
}

Test(registry, cpu_registry_is_found_by_name_in_any_case_and_owns_the_cpu_device) {
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("cpu");
    cr_assert_not_null(reg);
    cr_assert_eq(ggml_backend_reg_by_name("CPU"), reg);
    cr_assert_eq(reg, ggml_backend_cpu_reg());
    cr_assert_eq(ggml_backend_dev_backend_reg(ggml_backend_dev_by_name("CPU")), reg);
}

Test(registry, cpu_is_the_last_registry) {
    const size_t n = ggml_backend_reg_count();
    cr_assert_geq(n, 1);
    cr_assert_eq(ggml_backend_reg_get(n - 1), ggml_backend_cpu_reg());
}

Test(registry, every_device_of_every_registry_is_listed) {
    size_t total = 0;
    for (size_t i = 0; i < ggml_backend_reg_count(); i++) {
        ggml_backend_reg_t reg = ggml_backend_reg_get(i);
        for (size_t j = 0; j < ggml_backend_reg_dev_count(reg); j++, total++) {
            ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, j);
            bool listed = false;
            for (size_t k = 0; k < ggml_backend_dev_count(); k++) {
                listed = listed || ggml_backend_dev_get(k) == dev;
            }
            cr_assert(listed, "device %s of %s is not in the device list", ggml_backend_dev_name(dev),
                      ggml_backend_reg_name(reg));
        }
    }
    cr_assert_eq(ggml_backend_dev_count(), total);
}

Test(registry, by_type_finds_the_cpu_and_nothing_of_a_type_nobody_has) {
    cr_assert_eq(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), ggml_backend_dev_by_name("CPU"));
    /* the static backends include no META device */
    cr_assert_null(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_META));
    cr_assert_null(ggmlx_last_error(), "finding nothing is an answer, not an error");
}

Test(registry, by_type_takes_the_first_match) {
    const enum ggml_backend_dev_type t[2] = { GGML_BACKEND_DEVICE_TYPE_ACCEL, GGML_BACKEND_DEVICE_TYPE_ACCEL };
    struct fake_reg * f = fake_reg_new("ACC", 2, t);
    ggml_backend_register(&f->reg);
    cr_assert_eq(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_ACCEL), &f->devs[0]);
}

Test(registry, an_unknown_type_is_an_error) {
    cr_assert_null(ggml_backend_dev_by_type((enum ggml_backend_dev_type) 99));
    expect_error("ggml_backend_dev_by_type");
    cr_assert_null(ggml_backend_init_by_type((enum ggml_backend_dev_type) -1, NULL));
    expect_error("ggml_backend_init_by_type");
}

Test(registry, an_unknown_name_finds_nothing_without_an_error) {
    cr_assert_null(ggml_backend_dev_by_name("no-such-device"));
    cr_assert_null(ggml_backend_reg_by_name("no-such-backend"));
    cr_assert_null(ggmlx_last_error());
}

Test(registry, null_names_are_errors) {
    cr_assert_null(ggml_backend_dev_by_name(NULL));
    expect_error("ggml_backend_dev_by_name");
    cr_assert_null(ggml_backend_reg_by_name(NULL));
    expect_error("ggml_backend_reg_by_name");
    cr_assert_null(ggml_backend_init_by_name(NULL, NULL));
    expect_error("ggml_backend_init_by_name");
}

Test(registry, indices_out_of_range_are_errors) {
    const size_t nr = ggml_backend_reg_count(), nd = ggml_backend_dev_count();
    for (size_t i = 0; i < nr; i++) {
        cr_assert_not_null(ggml_backend_reg_get(i));
    }
    for (size_t i = 0; i < nd; i++) {
        cr_assert_not_null(ggml_backend_dev_get(i));
    }
    cr_assert_null(ggml_backend_reg_get(nr));
    expect_error("ggml_backend_reg_get");
    cr_assert(strstr(ggmlx_last_error(), "out of range") != NULL, "%s", ggmlx_last_error());
    cr_assert_null(ggml_backend_dev_get(nd));
    expect_error("ggml_backend_dev_get");
    cr_assert_null(ggml_backend_dev_get((size_t) -1));
    expect_error("ggml_backend_dev_get");
}

/* ---- starting backends ------------------------------------------------------------------------------ */

Test(registry, init_by_name_cpu_gives_a_cpu_backend) {
    ggml_backend_t b = ggml_backend_init_by_name("cpu", NULL);
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert(ggml_backend_is_cpu(b));
    cr_assert_eq(ggml_backend_get_device(b), ggml_backend_dev_by_name("CPU"));
    ggml_backend_free(b);
}

Test(registry, init_by_type_cpu_gives_a_cpu_backend) {
    ggml_backend_t b = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert(ggml_backend_is_cpu(b));
    ggml_backend_free(b);
}

Test(registry, init_by_name_of_no_device_is_an_error_that_lists_the_devices) {
    cr_assert_null(ggml_backend_init_by_name("no-such-device", NULL));
    expect_error("ggml_backend_init_by_name");
    cr_assert(strstr(ggmlx_last_error(), "no-such-device") != NULL, "%s", ggmlx_last_error());
    cr_assert(strstr(ggmlx_last_error(), "CPU") != NULL, "%s", ggmlx_last_error());
}

Test(registry, init_by_type_of_no_device_is_an_error) {
    cr_assert_null(ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_META, NULL));
    expect_error("ggml_backend_init_by_type");
    cr_assert(strstr(ggmlx_last_error(), "META") != NULL, "%s", ggmlx_last_error());
}

Test(registry, init_best_gives_the_first_gpu_else_igpu_else_cpu) {
    ggml_backend_dev_t want = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
    if (want == NULL) {
        want = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_IGPU);
    }
    if (want == NULL) {
        want = ggml_backend_dev_by_name("CPU");
    }
    ggml_backend_t b = ggml_backend_init_best();
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert_eq(ggml_backend_get_device(b), want, "init_best chose %s", ggml_backend_name(b));
    ggml_backend_free(b);
}

Test(registry, init_best_gives_the_cpu_without_gpus) {
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU) != NULL ||
        ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_IGPU) != NULL) {
        cr_skip_test("this build has GPU devices");
    }
    ggml_backend_t b = ggml_backend_init_best();
    cr_assert_not_null(b, "%s", ggmlx_last_error());
    cr_assert(ggml_backend_is_cpu(b));
    ggml_backend_free(b);
}

Test(registry, init_best_prefers_a_gpu_to_an_igpu_to_the_cpu_whatever_the_order) {
    const enum ggml_backend_dev_type igpu = GGML_BACKEND_DEVICE_TYPE_IGPU, gpu = GGML_BACKEND_DEVICE_TYPE_GPU;
    struct fake_reg * fi = fake_reg_new("FAKEIGPU", 1, &igpu);
    ggml_backend_register(&fi->reg);
    if (ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU) == NULL) {
        ggml_backend_t b = ggml_backend_init_best();
        cr_assert_not_null(b);
        cr_assert_eq(ggml_backend_get_device(b), &fi->devs[0]);
        cr_assert_str_eq(ggml_backend_name(b), "FAKEIGPU0");
        ggml_backend_free(b);
    }
    struct fake_reg * fg = fake_reg_new("FAKEGPU", 1, &gpu);
    ggml_backend_register(&fg->reg);
    ggml_backend_t b = ggml_backend_init_best();
    cr_assert_not_null(b);
    cr_assert_eq(ggml_backend_get_device(b)->iface.get_type(ggml_backend_get_device(b)), GGML_BACKEND_DEVICE_TYPE_GPU);
    ggml_backend_free(b);
}

/* ---- registering ------------------------------------------------------------------------------------ */

Test(registry, register_adds_the_registry_and_its_devices_in_order) {
    const size_t nr = ggml_backend_reg_count(), nd = ggml_backend_dev_count();
    const enum ggml_backend_dev_type t[2] = { GGML_BACKEND_DEVICE_TYPE_GPU, GGML_BACKEND_DEVICE_TYPE_GPU };
    struct fake_reg * f = fake_reg_new("FAKE", 2, t);
    ggml_backend_register(&f->reg);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(ggml_backend_reg_count(), nr + 1);
    cr_assert_eq(ggml_backend_dev_count(), nd + 2);
    cr_assert_eq(ggml_backend_reg_get(nr), &f->reg);
    cr_assert_eq(ggml_backend_dev_get(nd), &f->devs[0]);
    cr_assert_eq(ggml_backend_dev_get(nd + 1), &f->devs[1]);
    cr_assert_eq(ggml_backend_reg_by_name("fake"), &f->reg);
    cr_assert_eq(ggml_backend_dev_by_name("fake1"), &f->devs[1]);
}

Test(registry, registering_twice_changes_nothing) {
    const size_t nr = ggml_backend_reg_count(), nd = ggml_backend_dev_count();
    ggml_backend_register(ggml_backend_cpu_reg());
    cr_assert_null(ggmlx_last_error(), "a repeat is not an error");
    cr_assert_eq(ggml_backend_reg_count(), nr);
    cr_assert_eq(ggml_backend_dev_count(), nd);

    const enum ggml_backend_dev_type t = GGML_BACKEND_DEVICE_TYPE_ACCEL;
    struct fake_reg * f = fake_reg_new("TWICE", 1, &t);
    ggml_backend_register(&f->reg);
    ggml_backend_register(&f->reg);
    cr_assert_eq(ggml_backend_reg_count(), nr + 1);
    cr_assert_eq(ggml_backend_dev_count(), nd + 1);
}

Test(registry, register_refuses_null_and_foreign_registries) {
    const size_t nr = ggml_backend_reg_count(), nd = ggml_backend_dev_count();
    ggml_backend_register(NULL);
    expect_error("ggml_backend_register");

    const enum ggml_backend_dev_type t = GGML_BACKEND_DEVICE_TYPE_GPU;
    struct fake_reg * f = fake_reg_new("FOREIGN", 1, &t);
    f->reg.api_version = 2; /* upstream's: its vtables are not ours */
    ggml_backend_register(&f->reg);
    expect_error("ggml_backend_register");
    cr_assert(strstr(ggmlx_last_error(), "API version") != NULL, "%s", ggmlx_last_error());

    struct fake_reg * g = fake_reg_new("BROKEN", 1, &t);
    g->reg.iface.get_device = NULL;
    ggml_backend_register(&g->reg);
    expect_error("ggml_backend_register");

    cr_assert_eq(ggml_backend_reg_count(), nr);
    cr_assert_eq(ggml_backend_dev_count(), nd);
    cr_assert_null(ggml_backend_dev_by_name("FOREIGN0"));
    free(f); /* refused, so nothing refers to them */
    free(g);
}

Test(registry, device_register_adds_a_device_once) {
    const size_t nd = ggml_backend_dev_count(), nr = ggml_backend_reg_count();
    const enum ggml_backend_dev_type t = GGML_BACKEND_DEVICE_TYPE_ACCEL;
    struct fake_reg * f = fake_reg_new("LONE", 1, &t);
    ggml_backend_device_register(&f->devs[0]);
    cr_assert_null(ggmlx_last_error());
    cr_assert_eq(ggml_backend_dev_count(), nd + 1);
    cr_assert_eq(ggml_backend_reg_count(), nr, "a device alone adds no registry");
    cr_assert_eq(ggml_backend_dev_by_name("lone0"), &f->devs[0]);
    ggml_backend_device_register(&f->devs[0]);
    cr_assert_eq(ggml_backend_dev_count(), nd + 1);
    /* and registering its registry afterwards does not list it twice */
    ggml_backend_register(&f->reg);
    cr_assert_eq(ggml_backend_dev_count(), nd + 1);
    cr_assert_eq(ggml_backend_reg_count(), nr + 1);
}

Test(registry, device_register_refuses_null) {
    const size_t nd = ggml_backend_dev_count();
    ggml_backend_device_register(NULL);
    expect_error("ggml_backend_device_register");
    cr_assert_eq(ggml_backend_dev_count(), nd);
}

/* ---- threads ------------------------------------------------------------------------------------------- */

#define N_THREADS 8

static void * register_and_look_up(void * arg) {
    struct fake_reg * f = arg;
    ggml_backend_register(&f->reg);
    for (int i = 0; i < 50; i++) {
        if (ggml_backend_dev_by_name(f->ctx[0].name) != &f->devs[0] || ggml_backend_dev_by_name("CPU") == NULL) {
            return (void *) 1;
        }
        ggml_backend_register(&f->reg);
    }
    return NULL;
}

Test(registry, threads_registering_and_looking_up_at_once_see_a_consistent_registry) {
    const size_t nr = ggml_backend_reg_count(), nd = ggml_backend_dev_count();
    const enum ggml_backend_dev_type t = GGML_BACKEND_DEVICE_TYPE_ACCEL;
    struct fake_reg * f[N_THREADS];
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        char name[16];
        snprintf(name, sizeof name, "T%d_", i);
        f[i] = fake_reg_new(name, 1, &t);
        cr_assert_eq(pthread_create(&th[i], NULL, register_and_look_up, f[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        void * r;
        pthread_join(th[i], &r);
        cr_assert_null(r, "thread %d saw a wrong lookup", i);
    }
    cr_assert_eq(ggml_backend_reg_count(), nr + N_THREADS);
    cr_assert_eq(ggml_backend_dev_count(), nd + N_THREADS);
}

static void * first_use(void * arg) {
    (void) arg;
    return ggml_backend_dev_by_name("CPU");
}

Test(registry, first_use_from_many_threads_registers_the_cpu_once) {
    pthread_t th[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, first_use, NULL), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        void * r;
        pthread_join(th[i], &r);
        cr_assert_not_null(r);
    }
    size_t cpus = 0;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        cpus += ggml_backend_dev_get(i) == ggml_backend_dev_by_name("CPU");
    }
    cr_assert_eq(cpus, 1);
}
