/*
 * test-cuda-virtual.c -- GGML_CUDA_DEVICES virtual devices without a GPU (cuda/virtual-devices.c
 * linked as plain C): parsing the device count and byte budgets, the round-robin mapping, and
 * the per-device accounting that buffer allocation goes through, from many threads at once.
 */
#include <criterion/criterion.h>

#include "ggml-impl.h"
#include "parse-bytes.h"
#include "virtual-devices.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* refusals are logged from many threads at once in the concurrency tests */
static pthread_mutex_t g_log_mutex = PTHREAD_MUTEX_INITIALIZER;
static int             g_n_logged;
static char            g_logged[512];

static void keep_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) user_data;
    if (level == GGML_LOG_LEVEL_ERROR) {
        pthread_mutex_lock(&g_log_mutex);
        g_n_logged++;
        snprintf(g_logged, sizeof g_logged, "%s", text);
        pthread_mutex_unlock(&g_log_mutex);
    }
}

static void setup(void) {
    ggml_log_set(keep_log, NULL);
    g_n_logged  = 0;
    g_logged[0] = '\0';
}

TestSuite(cuda_virtual, .init = setup, .timeout = 60);

/* ---- GGML_CUDA_DEVICES --------------------------------------------------------------------- */

Test(cuda_virtual, count_unset_is_the_physical_count) {
    cr_assert_eq(ggmlx_cuda_vdev_count(NULL, 1, 16), 1);
    cr_assert_eq(ggmlx_cuda_vdev_count("", 3, 16), 3);
    cr_assert_eq(g_n_logged, 0);
}

Test(cuda_virtual, count_valid_values) {
    cr_assert_eq(ggmlx_cuda_vdev_count("4", 1, 16), 4);
    cr_assert_eq(ggmlx_cuda_vdev_count("1", 2, 16), 1, "fewer than the GPUs is allowed");
    cr_assert_eq(ggmlx_cuda_vdev_count("16", 1, 16), 16);
    cr_assert_eq(ggmlx_cuda_vdev_count("007", 1, 16), 7);
    cr_assert_eq(g_n_logged, 0);
}

Test(cuda_virtual, count_bad_values_fall_back_with_a_message) {
    static const char * bad[] = { "0", "-1", "17", "abc", "3x", " 3", "+3", "2.5", "99999999999999999999" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        g_n_logged = 0;
        cr_assert_eq(ggmlx_cuda_vdev_count(bad[i], 2, 16), 2, "'%s' falls back to the physical count", bad[i]);
        cr_assert_eq(g_n_logged, 1, "'%s' is logged as an error", bad[i]);
        cr_assert(strstr(g_logged, "GGML_CUDA_DEVICES") != NULL && strstr(g_logged, bad[i]) != NULL,
                  "the message names the variable and the value: %s", g_logged);
    }
}

Test(cuda_virtual, count_without_a_gpu_is_zero) {
    cr_assert_eq(ggmlx_cuda_vdev_count("4", 0, 16), 0);
    cr_assert_eq(ggmlx_cuda_vdev_count(NULL, 0, 16), 0);
}

/* ---- mapping ------------------------------------------------------------------------------- */

Test(cuda_virtual, round_robin_mapping) {
    const int phys[] = { 0, 1, 0, 1, 0 };
    const int slot[] = { 0, 0, 1, 1, 2 };
    for (int v = 0; v < 5; v++) {
        cr_assert_eq(ggmlx_cuda_vdev_physical(v, 2), phys[v], "device %d", v);
        cr_assert_eq(ggmlx_cuda_vdev_slot(v, 2), slot[v], "device %d", v);
    }
    cr_assert_eq(ggmlx_cuda_vdev_share(0, 5, 2), 3);
    cr_assert_eq(ggmlx_cuda_vdev_share(1, 5, 2), 2);
    cr_assert_eq(ggmlx_cuda_vdev_share(2, 5, 2), 0, "no such GPU");
    cr_assert_eq(ggmlx_cuda_vdev_share(1, 1, 2), 0, "one device on two GPUs leaves the second unused");
}

Test(cuda_virtual, shares_add_up_and_match_the_mapping) {
    for (int np = 1; np <= 8; np++) {
        for (int nv = 1; nv <= 16; nv++) {
            int count[8] = { 0 };
            for (int v = 0; v < nv; v++) {
                const int p = ggmlx_cuda_vdev_physical(v, np);
                cr_assert(p >= 0 && p < np);
                cr_assert_eq(ggmlx_cuda_vdev_slot(v, np), count[p], "slots on a GPU count up from 0");
                count[p]++;
            }
            for (int p = 0; p < np; p++) {
                cr_assert_eq(ggmlx_cuda_vdev_share(p, nv, np), count[p], "GPU %d of %d, %d devices", p, np, nv);
            }
        }
    }
}

Test(cuda_virtual, plan_and_ids) {
    struct ggmlx_cuda_vdev plan[16];
    char id[48];
    /* one GPU, three devices: all share it, ids numbered */
    ggmlx_cuda_vdev_plan(plan, 3, 1);
    for (int v = 0; v < 3; v++) {
        cr_assert_eq(plan[v].physical, 0);
        cr_assert_eq(plan[v].slot, v);
        cr_assert_eq(plan[v].share, 3);
        ggmlx_cuda_vdev_id(id, sizeof id, "0000:1b:00.0", &plan[v]);
        char want[48];
        snprintf(want, sizeof want, "0000:1b:00.0-v%d", v);
        cr_assert_str_eq(id, want);
    }
    /* two GPUs, three devices: GPU 0 is shared (devices 0 and 2), GPU 1 is not */
    ggmlx_cuda_vdev_plan(plan, 3, 2);
    const char * gpu[2] = { "0000:01:00.0", "0000:02:00.0" };
    const char * want[3] = { "0000:01:00.0-v0", "0000:02:00.0", "0000:01:00.0-v1" };
    for (int v = 0; v < 3; v++) {
        ggmlx_cuda_vdev_id(id, sizeof id, gpu[plan[v].physical], &plan[v]);
        cr_assert_str_eq(id, want[v], "device %d: %s", v, id);
    }
    /* no virtual devices: ids unchanged; a GPU without an id stays without */
    ggmlx_cuda_vdev_plan(plan, 2, 2);
    ggmlx_cuda_vdev_id(id, sizeof id, gpu[1], &plan[1]);
    cr_assert_str_eq(id, gpu[1]);
    ggmlx_cuda_vdev_plan(plan, 2, 1);
    ggmlx_cuda_vdev_id(id, sizeof id, "", &plan[1]);
    cr_assert_str_eq(id, "");
    /* in place, as the registry does it for a physical slot, appends once */
    char inplace[48] = "0000:1b:00.0";
    ggmlx_cuda_vdev_plan(plan, 2, 1);
    char gpu_copy[48];
    snprintf(gpu_copy, sizeof gpu_copy, "%s", inplace);
    ggmlx_cuda_vdev_id(inplace, sizeof inplace, gpu_copy, &plan[0]);
    cr_assert_str_eq(inplace, "0000:1b:00.0-v0");
}

/* ---- budgets ------------------------------------------------------------------------------- */

Test(cuda_virtual, parse_bytes) {
    static const struct { const char * s; size_t v; } good[] = {
        { "1024", 1024 },           { "1K", 1024 },         { "1k", 1024 },           { "1KiB", 1024 },
        { "3M", (size_t) 3 << 20 }, { "512MB", (size_t) 512 << 20 }, { "2G", (size_t) 2 << 30 },
        { "1T", (size_t) 1 << 40 }, { "100B", 100 },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t v = 0;
        cr_assert(ggmlx_parse_bytes(good[i].s, &v), "'%s' parses", good[i].s);
        cr_assert_eq(v, good[i].v, "'%s' = %zu, got %zu", good[i].s, good[i].v, v);
    }
    static const char * bad[] = { "", "G", "-1", "1X", "1 G", "1GG", "1iB", "99999999999T", "1KBB", NULL };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 7;
        cr_assert_not(ggmlx_parse_bytes(bad[i], &v), "'%s' is refused", bad[i] ? bad[i] : "(null)");
        cr_assert_eq(v, 7, "nothing written for '%s'", bad[i] ? bad[i] : "(null)");
    }
}

Test(cuda_virtual, budget_divides_the_gpu) {
    const size_t total = (size_t) 141 << 30;
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 1, NULL), total);
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 4, NULL), total / 4);
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 3, ""), total / 3);
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 4, "2G"), (size_t) 2 << 30, "the variable wins");
    cr_assert_eq(g_n_logged, 0);
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 4, "lots"), total / 4, "a bad value is ignored");
    cr_assert_eq(ggmlx_cuda_vdev_budget(total, 4, "0"), total / 4, "a budget of nothing is ignored");
    cr_assert_eq(g_n_logged, 2, "each bad value is logged");
    cr_assert(strstr(g_logged, "GGMLX_CUDA_DEVICE_MEMORY") != NULL, "%s", g_logged);
}

/* ---- accounting ---------------------------------------------------------------------------- */

Test(cuda_virtual, reserve_up_to_the_budget) {
    struct ggmlx_cuda_vmem vm;
    ggmlx_cuda_vmem_init(&vm, 1000);
    cr_assert(ggmlx_cuda_vmem_reserve(&vm, 600, "f", "CUDA1"));
    cr_assert(ggmlx_cuda_vmem_reserve(&vm, 400, "f", "CUDA1"), "an exact fit is allowed");
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 1000);
    cr_assert_eq(ggmlx_cuda_vmem_free(&vm, SIZE_MAX), 0);
    cr_assert_null(ggmlx_last_error());

    cr_assert_not(ggmlx_cuda_vmem_reserve(&vm, 1, "ggml_backend_buft_alloc_buffer", "CUDA1"));
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 1000, "a refusal takes nothing");
    const char * e = ggmlx_last_error();
    cr_assert_not_null(e);
    cr_assert(strstr(e, "ggml_backend_buft_alloc_buffer") && strstr(e, "CUDA1") && strstr(e, "out of memory") &&
                  strstr(e, "1000"),
              "the error names the call, the device and the use: %s", e);
    cr_assert_eq(g_n_logged, 1);

    ggmlx_cuda_vmem_release(&vm, 600);
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 400);
    cr_assert_eq(ggmlx_cuda_vmem_free(&vm, SIZE_MAX), 600);
    cr_assert_eq(ggmlx_cuda_vmem_free(&vm, 250), 250, "never more than the GPU has free");
    cr_assert(ggmlx_cuda_vmem_reserve(&vm, 600, "f", "CUDA1"), "freed bytes are usable again");
}

Test(cuda_virtual, huge_requests_do_not_wrap) {
    struct ggmlx_cuda_vmem vm;
    ggmlx_cuda_vmem_init(&vm, 1000);
    cr_assert(ggmlx_cuda_vmem_reserve(&vm, 10, "f", "CUDA0"));
    cr_assert_not(ggmlx_cuda_vmem_reserve(&vm, SIZE_MAX - 5, "f", "CUDA0"));
    cr_assert_not(ggmlx_cuda_vmem_reserve(&vm, SIZE_MAX, "f", "CUDA0"));
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 10);
    ggmlx_cuda_vmem_release(&vm, 20); /* a caller's bug: clamps at zero instead of wrapping */
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 0);
}

Test(cuda_virtual, out_of_memory_on_one_device_leaves_the_others) {
    /* four devices on one GPU, as GGML_CUDA_DEVICES=4 makes them */
    const size_t total = (size_t) 4 << 20;
    struct ggmlx_cuda_vmem vm[4];
    for (int i = 0; i < 4; i++) {
        ggmlx_cuda_vmem_init(&vm[i], ggmlx_cuda_vdev_budget(total, ggmlx_cuda_vdev_share(0, 4, 1), NULL));
        cr_assert_eq(vm[i].budget, (size_t) 1 << 20);
    }
    cr_assert(ggmlx_cuda_vmem_reserve(&vm[1], (size_t) 1 << 20, "f", "CUDA1"));
    cr_assert_not(ggmlx_cuda_vmem_reserve(&vm[1], 128, "f", "CUDA1"), "CUDA1 is full");
    cr_assert(strstr(ggmlx_last_error(), "CUDA1") != NULL);
    for (int i = 0; i < 4; i++) {
        if (i != 1) {
            cr_assert(ggmlx_cuda_vmem_reserve(&vm[i], (size_t) 1 << 19, "f", "CUDAx"), "device %d still allocates", i);
            cr_assert_eq(ggmlx_cuda_vmem_used(&vm[i]), (size_t) 1 << 19);
        }
    }
    cr_assert_not(ggmlx_cuda_vmem_reserve(&vm[1], 1, "f", "CUDA1"), "and CUDA1 stays full");
}

/* ---- many threads -------------------------------------------------------------------------- */

#define N_THREADS 8
#define CHUNK     64
#define N_CHUNKS  1000

struct fill_arg {
    struct ggmlx_cuda_vmem * vm;
    int                      n_ok;
};

static void * fill(void * p) {
    struct fill_arg * a = p;
    while (ggmlx_cuda_vmem_reserve(a->vm, CHUNK, "f", "CUDA0")) {
        a->n_ok++;
    }
    return NULL;
}

Test(cuda_virtual, concurrent_reserves_never_exceed_the_budget) {
    /* budget for exactly N_CHUNKS chunks plus a remainder no chunk fits in */
    struct ggmlx_cuda_vmem vm;
    ggmlx_cuda_vmem_init(&vm, (size_t) CHUNK * N_CHUNKS + CHUNK - 1);
    pthread_t th[N_THREADS];
    struct fill_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (struct fill_arg){ &vm, 0 };
        cr_assert_eq(pthread_create(&th[i], NULL, fill, &args[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        total += args[i].n_ok;
    }
    cr_assert_eq(total, N_CHUNKS, "exactly the chunks that fit were handed out, got %d", total);
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), (size_t) CHUNK * N_CHUNKS);
}

struct churn_arg {
    struct ggmlx_cuda_vmem * vm;
    unsigned                 seed;
    int                      n_refused;
};

static void * churn(void * p) {
    struct churn_arg * a = p;
    for (int i = 0; i < 20000; i++) {
        a->seed = a->seed * 1103515245u + 12345u;
        const size_t size = 1 + (a->seed >> 16) % 300;
        if (ggmlx_cuda_vmem_reserve(a->vm, size, "f", "CUDA0")) {
            if (ggmlx_cuda_vmem_used(a->vm) > a->vm->budget) {
                return (void *) 1; /* seen over the budget */
            }
            ggmlx_cuda_vmem_release(a->vm, size);
        } else {
            a->n_refused++;
        }
    }
    return NULL;
}

Test(cuda_virtual, concurrent_reserve_and_release_balance) {
    const unsigned seed = 12345;
    printf("seed %u\n", seed);
    struct ggmlx_cuda_vmem vm;
    ggmlx_cuda_vmem_init(&vm, 1000); /* tight: refusals happen, so both paths race */
    pthread_t th[N_THREADS];
    struct churn_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i] = (struct churn_arg){ &vm, seed + (unsigned) i, 0 };
        cr_assert_eq(pthread_create(&th[i], NULL, churn, &args[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        void * over = NULL;
        pthread_join(th[i], &over);
        cr_assert_null(over, "thread %d saw more in use than the budget", i);
    }
    cr_assert_eq(ggmlx_cuda_vmem_used(&vm), 0, "every reserve was released");
}
