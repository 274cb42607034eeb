/*
 * test-meta-api.c -- making a meta device (ggml_backend_meta_device): bad arguments are errors,
 * never crashes; equal arguments give the one cached device, from any number of threads at once;
 * the device's name, type, memory, buffer type and backend; the split axis names; the stats of a
 * meta backend. Buffers are in test-meta-buffer.c, reductions and events in test-meta-allreduce.c.
 */
#include "meta-fixture.h"

#include <pthread.h>

static void three_sims(void) {
    meta_configure(3, 64 * MiB);
}

TestSuite(meta_api, .init = three_sims, .timeout = 30);

static struct ggml_backend_meta_split_state split_fn_a(const struct ggml_tensor * t, void * ud) {
    (void) t;
    (void) ud;
    return split_mirrored();
}

/* the same behaviour as split_fn_a, but another function: another device */
static struct ggml_backend_meta_split_state split_fn_b(const struct ggml_tensor * t, void * ud) {
    (void) t;
    (void) ud;
    return split_mirrored();
}

static int g_ud_a, g_ud_b;

/* ---- bad arguments ----------------------------------------------------------------------------- */

Test(meta_api, null_devs_is_an_error) {
    cr_assert_null(ggml_backend_meta_device(NULL, 2, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, zero_devices_is_an_error) {
    ggml_backend_dev_t devs[1] = { sim_dev(0) };
    cr_assert_null(ggml_backend_meta_device(devs, 0, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, more_than_max_devices_is_an_error) {
    /* 17 distinct devices do not exist here; the count must be refused before entries are read */
    ggml_backend_dev_t devs[GGML_BACKEND_META_MAX_DEVICES + 1];
    for (size_t i = 0; i < GGML_BACKEND_META_MAX_DEVICES + 1; i++) {
        devs[i] = sim_dev((int) (i % 3));
    }
    cr_assert_null(ggml_backend_meta_device(devs, GGML_BACKEND_META_MAX_DEVICES + 1, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, null_entry_is_an_error) {
    ggml_backend_dev_t devs[3] = { sim_dev(0), NULL, sim_dev(1) };
    cr_assert_null(ggml_backend_meta_device(devs, 3, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, same_device_twice_is_an_error) {
    ggml_backend_dev_t pair[2] = { sim_dev(0), sim_dev(0) };
    cr_assert_null(ggml_backend_meta_device(pair, 2, split_fn_a, NULL));
    ASSERT_ERROR();
    /* not only neighbours */
    ggml_backend_dev_t three[3] = { sim_dev(0), sim_dev(1), sim_dev(0) };
    cr_assert_null(ggml_backend_meta_device(three, 3, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, meta_device_among_devs_is_an_error) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());
    ggml_backend_dev_t nested[2] = { meta, sim_dev(2) };
    cr_assert_null(ggml_backend_meta_device(nested, 2, split_fn_a, NULL));
    ASSERT_ERROR();
    ggml_backend_dev_t alone[1] = { meta };
    cr_assert_null(ggml_backend_meta_device(alone, 1, split_fn_a, NULL));
    ASSERT_ERROR();
}

Test(meta_api, null_split_function_is_an_error) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    cr_assert_null(ggml_backend_meta_device(devs, 2, NULL, NULL));
    ASSERT_ERROR();
}

/* a failed call leaves nothing behind that a later valid call would trip over */
Test(meta_api, valid_call_after_errors_works_and_clears_the_error) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(0) };
    cr_assert_null(ggml_backend_meta_device(devs, 2, split_fn_a, NULL));
    cr_assert_not_null(ggmlx_last_error());
    devs[1] = sim_dev(1);
    cr_assert_not_null(ggml_backend_meta_device(devs, 2, split_fn_a, NULL), "%s", last_err());
    ASSERT_NO_ERROR();
}

/* ---- the cache ------------------------------------------------------------------------------------ */

Test(meta_api, same_arguments_give_the_same_device) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_dev_t a = ggml_backend_meta_device(devs, 2, split_fn_a, &g_ud_a);
    cr_assert_not_null(a, "%s", last_err());
    /* a fresh array with the same contents: the key is the devices, not the array */
    ggml_backend_dev_t again[2] = { sim_dev(0), sim_dev(1) };
    cr_assert_eq(ggml_backend_meta_device(again, 2, split_fn_a, &g_ud_a), a);
    cr_assert_eq(ggml_backend_meta_device(devs, 2, split_fn_a, &g_ud_a), a);
}

Test(meta_api, different_arguments_give_different_devices) {
    ggml_backend_dev_t devs[3] = { sim_dev(0), sim_dev(1), sim_dev(2) };
    ggml_backend_dev_t base = ggml_backend_meta_device(devs, 2, split_fn_a, &g_ud_a);
    cr_assert_not_null(base, "%s", last_err());

    ggml_backend_dev_t other_ud = ggml_backend_meta_device(devs, 2, split_fn_a, &g_ud_b);
    ggml_backend_dev_t null_ud  = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    ggml_backend_dev_t other_fn = ggml_backend_meta_device(devs, 2, split_fn_b, &g_ud_a);
    ggml_backend_dev_t three    = ggml_backend_meta_device(devs, 3, split_fn_a, &g_ud_a);
    ggml_backend_dev_t one      = ggml_backend_meta_device(devs, 1, split_fn_a, &g_ud_a);
    ggml_backend_dev_t swapped[2] = { devs[1], devs[0] };
    ggml_backend_dev_t reordered = ggml_backend_meta_device(swapped, 2, split_fn_a, &g_ud_a);
    ggml_backend_dev_t others[2] = { devs[0], devs[2] };
    ggml_backend_dev_t other_dev = ggml_backend_meta_device(others, 2, split_fn_a, &g_ud_a);

    ggml_backend_dev_t all[8] = { base, other_ud, null_ud, other_fn, three, one, reordered, other_dev };
    for (int i = 0; i < 8; i++) {
        cr_assert_not_null(all[i], "device %d: %s", i, last_err());
        for (int j = 0; j < i; j++) {
            cr_assert_neq(all[i], all[j], "devices %d and %d are the same", j, i);
        }
    }
    cr_assert_str_eq(ggml_backend_dev_name(reordered), "Meta(SIM1,SIM0)");
    cr_assert_eq(ggmlx_meta_dev_n_devices(three), 3);
    cr_assert_eq(ggmlx_meta_dev_n_devices(one), 1);
}

/* callers pass stack arrays: the device keeps its own copy of the list */
Test(meta_api, device_does_not_keep_the_callers_array) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_dev_t a = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(a, "%s", last_err());
    devs[0] = sim_dev(2);
    ggml_backend_dev_t b = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(b, "%s", last_err());
    cr_assert_neq(a, b);
    cr_assert_str_eq(ggml_backend_dev_name(a), "Meta(SIM0,SIM1)");
    cr_assert_str_eq(ggml_backend_dev_name(b), "Meta(SIM2,SIM1)");
    devs[0] = sim_dev(0);
    cr_assert_eq(ggml_backend_meta_device(devs, 2, split_fn_a, NULL), a);
}

/* ---- threads ------------------------------------------------------------------------------------- */

#define N_THREADS 8

struct race {
    pthread_barrier_t  * start;
    void               * ud;
    ggml_backend_dev_t   result;
    char                 error[256];
};

static void * race_main(void * arg) {
    struct race * r = arg;
    ggml_backend_dev_t devs[2] = { ggml_backend_dev_by_name("SIM0"), ggml_backend_dev_by_name("SIM1") };
    pthread_barrier_wait(r->start);
    r->result = ggml_backend_meta_device(devs, 2, split_fn_a, r->ud);
    if (r->result == NULL) {
        snprintf(r->error, sizeof r->error, "%s", last_err());
    }
    return NULL;
}

/* n threads start together, thread i passing uds[i]; results in r[] */
static void race_run(struct race * r, void * const * uds) {
    pthread_barrier_t start;
    pthread_t th[N_THREADS];
    cr_assert_eq(pthread_barrier_init(&start, NULL, N_THREADS), 0);
    for (int i = 0; i < N_THREADS; i++) {
        r[i] = (struct race) { .start = &start, .ud = uds[i] };
        cr_assert_eq(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_eq(pthread_join(th[i], NULL), 0);
    }
    pthread_barrier_destroy(&start);
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_not_null(r[i].result, "thread %d: %s", i, r[i].error);
    }
}

/* rounds of the race, each about a new device, so the cache grows while threads look it up */
#define N_ROUNDS 64

Test(meta_api, threads_creating_the_same_device_get_one_pointer) {
    (void) sim_dev(0); /* fix the registry before the race: the race is about the meta cache */
    static int round_ud[N_ROUNDS];
    for (int k = 0; k < N_ROUNDS; k++) {
        void * uds[N_THREADS];
        for (int i = 0; i < N_THREADS; i++) {
            uds[i] = &round_ud[k];
        }
        struct race r[N_THREADS];
        race_run(r, uds);
        for (int i = 1; i < N_THREADS; i++) {
            cr_assert_eq(r[i].result, r[0].result, "round %d: thread %d got another device", k, i);
        }
        ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
        cr_assert_eq(ggml_backend_meta_device(devs, 2, split_fn_a, &round_ud[k]), r[0].result);
    }
}

Test(meta_api, threads_creating_different_devices_get_distinct_pointers) {
    (void) sim_dev(0);
    static int uds_storage[N_THREADS];
    void * uds[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        uds[i] = &uds_storage[i];
    }
    struct race r[N_THREADS];
    race_run(r, uds);
    for (int i = 0; i < N_THREADS; i++) {
        for (int j = 0; j < i; j++) {
            cr_assert_neq(r[i].result, r[j].result, "threads %d and %d got the same device", j, i);
        }
    }
    /* and each is the cached one for its arguments */
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    for (int i = 0; i < N_THREADS; i++) {
        cr_assert_eq(ggml_backend_meta_device(devs, 2, split_fn_a, uds[i]), r[i].result);
    }
}

/* ---- the device ---------------------------------------------------------------------------------- */

Test(meta_api, device_name_type_and_count) {
    ggml_backend_dev_t devs[3] = { sim_dev(0), sim_dev(1), sim_dev(2) };
    ggml_backend_dev_t two = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    ggml_backend_dev_t three = ggml_backend_meta_device(devs, 3, split_fn_a, NULL);
    cr_assert(two != NULL && three != NULL, "%s", last_err());

    cr_assert_str_eq(ggml_backend_dev_name(two), "Meta(SIM0,SIM1)");
    cr_assert_str_eq(ggml_backend_dev_name(three), "Meta(SIM0,SIM1,SIM2)");
    cr_assert_not_null(ggml_backend_dev_description(two));
    cr_assert_eq(ggml_backend_dev_type(two), GGML_BACKEND_DEVICE_TYPE_META);
    cr_assert_eq(ggmlx_meta_dev_n_devices(two), 2);
    cr_assert_eq(ggmlx_meta_dev_n_devices(three), 3);

    struct ggml_backend_dev_props props;
    memset(&props, 0, sizeof props);
    ggml_backend_dev_get_props(two, &props);
    cr_assert_str_eq(props.name, "Meta(SIM0,SIM1)");
    cr_assert_eq(props.type, GGML_BACKEND_DEVICE_TYPE_META);
}

Test(meta_api, n_devices_of_other_devices_is_zero) {
    cr_assert_eq(ggmlx_meta_dev_n_devices(sim_dev(0)), 0);
    cr_assert_eq(ggmlx_meta_dev_n_devices(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)), 0);
    cr_assert_eq(ggmlx_meta_dev_n_devices(NULL), 0);
}

Test(meta_api, memory_is_the_sum_of_the_devices) {
    ggml_backend_dev_t devs[3] = { sim_dev(0), sim_dev(1), sim_dev(2) };
    size_t want_total = 0, want_free = 0;
    for (int i = 0; i < 3; i++) {
        size_t f = 0, t = 0;
        ggml_backend_dev_memory(devs[i], &f, &t);
        cr_assert_gt(t, 0);
        want_total += t;
        want_free += f;
    }
    cr_assert_eq(want_total, 3 * 64 * MiB, "the SIM devices were configured with 64 MiB each");
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 3, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());
    size_t f = 0, t = 0;
    ggml_backend_dev_memory(meta, &f, &t);
    cr_assert_eq(t, want_total);
    cr_assert_leq(f, t);
    cr_assert_eq(f, want_free, "nothing is allocated: free is the sum of the devices' free memory");

    struct ggml_backend_dev_props props;
    ggml_backend_dev_get_props(meta, &props);
    cr_assert_eq(props.memory_total, want_total);
}

Test(meta_api, buffer_type_and_backend) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());

    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(meta);
    cr_assert_not_null(buft, "%s", last_err());
    cr_assert_neq(buft, ggml_backend_dev_buffer_type(devs[0]));
    cr_assert_neq(buft, ggml_backend_dev_buffer_type(devs[1]));
    cr_assert_not_null(ggml_backend_buft_name(buft));
    cr_assert_gt(ggml_backend_buft_get_alignment(buft), 0);
    cr_assert_eq(ggml_backend_buft_get_device(buft), meta);
    cr_assert_not(ggml_backend_buft_is_host(buft), "SIM memory is private, so the meta buffers are too");
    cr_assert_eq(ggml_backend_dev_buffer_type(meta), buft, "one buffer type per meta device");

    ggml_backend_t be = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(be, "%s", last_err());
    cr_assert_eq(ggml_backend_get_device(be), meta);
    cr_assert_not_null(ggml_backend_name(be));
    cr_assert_eq(ggml_backend_get_default_buffer_type(be), buft);
    cr_assert(ggml_backend_supports_buft(be, buft));
    cr_assert_not(ggml_backend_supports_buft(be, ggml_backend_dev_buffer_type(devs[0])),
                  "a SIM buffer holds whole tensors, not the meta layout");
    ggml_backend_synchronize(be);

    struct ggmlx_meta_stats st;
    memset(&st, 0xff, sizeof st);
    cr_assert(ggmlx_meta_get_stats(be, &st), "%s", last_err());
    cr_assert_eq(st.n_graphs, 0);
    cr_assert_eq(st.n_subgraphs, 0);
    cr_assert_eq(st.n_allreduce_comm, 0);
    cr_assert_eq(st.n_allreduce_generic, 0);
    cr_assert_eq(st.bytes_reduced, 0);
    ggmlx_meta_reset_stats(be);
    ggml_backend_free(be);
}

/* a meta device over one device is a valid (if pointless) configuration */
Test(meta_api, one_device_is_valid) {
    ggml_backend_dev_t devs[1] = { sim_dev(1) };
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 1, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());
    cr_assert_str_eq(ggml_backend_dev_name(meta), "Meta(SIM1)");
    cr_assert_eq(ggmlx_meta_dev_n_devices(meta), 1);
    ggml_backend_t be = ggml_backend_dev_init(meta, NULL);
    cr_assert_not_null(be, "%s", last_err());
    ggml_backend_free(be);
}

/* the CPU device can be part of one too (it is a device like any other here) */
Test(meta_api, cpu_and_sim_device) {
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_not_null(cpu);
    ggml_backend_dev_t devs[2] = { sim_dev(0), cpu };
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());
    char want[64];
    snprintf(want, sizeof want, "Meta(SIM0,%s)", ggml_backend_dev_name(cpu));
    cr_assert_str_eq(ggml_backend_dev_name(meta), want);
}

/* as upstream: a meta device is made by the caller, never enumerated by the registry */
Test(meta_api, meta_devices_are_not_enumerated) {
    const size_t n_before = ggml_backend_dev_count();
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_dev_t meta = ggml_backend_meta_device(devs, 2, split_fn_a, NULL);
    cr_assert_not_null(meta, "%s", last_err());
    cr_assert_eq(ggml_backend_dev_count(), n_before);
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        cr_assert_neq(ggml_backend_dev_get(i), meta);
        cr_assert_neq(ggml_backend_dev_type(ggml_backend_dev_get(i)), GGML_BACKEND_DEVICE_TYPE_META);
    }
    cr_assert_null(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_META));
}

/* ---- stats on what is not a meta backend --------------------------------------------------------- */

Test(meta_api, stats_of_a_non_meta_backend_is_an_error) {
    ggml_backend_t sim = sim_backend(0);
    struct ggmlx_meta_stats st;
    cr_assert_not(ggmlx_meta_get_stats(sim, &st));
    ASSERT_ERROR();
    cr_assert_not(ggmlx_meta_get_stats(NULL, &st));
    ASSERT_ERROR();
    ggmlx_meta_reset_stats(sim); /* must do nothing harmful */
    ggmlx_meta_reset_stats(NULL);
    ggml_backend_free(sim);
}

Test(meta_api, stats_into_null_is_an_error) {
    ggml_backend_dev_t devs[2] = { sim_dev(0), sim_dev(1) };
    ggml_backend_t be = ggml_backend_dev_init(ggml_backend_meta_device(devs, 2, split_fn_a, NULL), NULL);
    cr_assert_not_null(be, "%s", last_err());
    cr_assert_not(ggmlx_meta_get_stats(be, NULL));
    ASSERT_ERROR();
    ggml_backend_free(be);
}

/* ---- axis names ---------------------------------------------------------------------------------- */

Test(meta_api, split_axis_names) {
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_0), "axis_0");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_1), "axis_1");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_2), "axis_2");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_3), "axis_3");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_MIRRORED), "mirrored");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_PARTIAL), "partial");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_NONE), "none");
    cr_assert_str_eq(ggml_backend_meta_split_axis_name(GGML_BACKEND_SPLIT_AXIS_UNKNOWN), "unknown");
    const int invalid[] = { 4, 5, 9, 12, 97, 100, -1, 1 << 20 };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        const char * name = ggml_backend_meta_split_axis_name((enum ggml_backend_meta_split_axis) invalid[i]);
        cr_assert_not_null(name);
        cr_assert_str_eq(name, "invalid", "value %d", invalid[i]);
    }
}
