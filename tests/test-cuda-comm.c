/*
 * test-cuda-comm.c -- the CUDA registry's collectives (cuda/cuda-comm.h) and the NCCL loader
 * (cuda/cuda-nccl.h). Built only when libggml-cuda is.
 *
 * Everywhere: the three proc addresses, refusals of bad arguments with errors, and the loader
 * (a missing library, a library that is not NCCL, the installed one, nothing loaded before it
 * is needed). GPU suite: a 1-rank communicator on CUDA0 (a sum over one rank leaves every
 * value as it was), no communicator for two backends on one GPU or under
 * GGML_CUDA_ALLREDUCE=none, refusals of tensors NCCL cannot sum, and with two GPUs or more a
 * real sum. It is skipped, never passed, without a GPU or without NCCL, unless
 * GGMLX_TEST_REQUIRE_CUDA is set (then a missing device fails). On a GPU machine without
 * Criterion, cuda-comm-check (cuda/bench/comm-check.c) runs the GPU half.
 */
#include <criterion/criterion.h>

#include "cuda-comm.h"
#include "cuda-nccl.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml-cuda.h"
#include "ggml.h"
#include "ggmlx-backend.h"
#include "ggmlx.h"
#include "test-errlog.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void setup(void) {
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
    ggmlx_clear_last_error();
}

static void * proc(const char * name) {
    return ggml_backend_reg_get_proc_address(ggml_backend_cuda_reg(), name);
}

/* ---- everywhere ---------------------------------------------------------------------------- */

TestSuite(cuda_comm, .init = setup);

Test(cuda_comm, the_registry_offers_the_three_functions) {
    ggml_backend_comm_init_t             init   = (ggml_backend_comm_init_t) proc("ggml_backend_comm_init");
    ggml_backend_comm_free_t             free_  = (ggml_backend_comm_free_t) proc("ggml_backend_comm_free");
    ggml_backend_comm_allreduce_tensor_t reduce = (ggml_backend_comm_allreduce_tensor_t) proc(
        "ggml_backend_comm_allreduce_tensor");
    cr_assert_eq(init, ggmlx_cuda_comm_init);
    cr_assert_eq(free_, ggmlx_cuda_comm_free);
    cr_assert_eq(reduce, ggmlx_cuda_comm_allreduce_tensor);
    cr_assert_null(proc("ggml_backend_comm_reduce_scatter"), "only what exists is offered");
    ASSERT_NO_ERROR();
}

Test(cuda_comm, init_refuses_bad_arguments_with_an_error) {
    ggml_backend_t none[2] = { NULL, NULL };
    cr_assert_null(ggmlx_cuda_comm_init(NULL, 1));
    ASSERT_ERROR();
    cr_assert_null(ggmlx_cuda_comm_init(none, 0));
    ASSERT_ERROR();
    cr_assert_null(ggmlx_cuda_comm_init(none, 2));
    ASSERT_ERROR();
    cr_assert_null(ggmlx_cuda_comm_init(none, (size_t) GGML_CUDA_MAX_DEVICES + 1));
    ASSERT_ERROR();
}

Test(cuda_comm, init_refuses_backends_that_are_not_cuda) {
    ggml_backend_t cpu = ggml_backend_cpu_init();
    cr_assert_not_null(cpu);
    ggml_backend_t one[1] = { cpu };
    cr_assert_null(ggmlx_cuda_comm_init(one, 1));
    cr_assert(strstr(ggmlx_last_error(), "not a CUDA backend") != NULL, "%s", ggmlx_last_error());
    ASSERT_ERROR();
    ggml_backend_t two[2] = { cpu, cpu };
    cr_assert_null(ggmlx_cuda_comm_init(two, 2));
    ASSERT_ERROR();
    ggml_backend_free(cpu);
}

Test(cuda_comm, free_and_allreduce_without_a_communicator) {
    ggmlx_cuda_comm_free(NULL);
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0);
    struct ggml_tensor * none[1] = { NULL };
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(NULL, none));
    ASSERT_ERROR();
}

Test(cuda_comm, nccl_is_not_loaded_before_it_is_needed) {
    /* the registry and its proc addresses are in use, and no communicator was asked for */
    cr_assert_not_null(proc("ggml_backend_comm_init"));
    (void) ggml_backend_reg_dev_count(ggml_backend_cuda_reg());
    void * h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_null(h, "libnccl.so.2 is loaded although nothing asked for NCCL");
}

Test(cuda_comm, a_missing_library_is_reported_not_an_error) {
    setenv("GGMLX_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
    char why[512] = "";
    cr_assert_not(ggmlx_nccl_load(why, sizeof why));
    cr_assert_eq(ggmlx_nccl_version(), 0);
#ifdef GGMLX_TEST_NCCL
    cr_assert(strstr(why, "/nonexistent/libnccl.so.2") != NULL, "the reason names the path: %s", why);
    cr_assert(strstr(why, "cannot open") != NULL, "%s", why);
#else
    cr_assert(strstr(why, "no NCCL support") != NULL, "%s", why);
#endif
    /* the outcome is kept: the same answer without trying again */
    char again[512] = "";
    cr_assert_not(ggmlx_nccl_load(again, sizeof again));
    cr_assert_str_eq(again, why);
    ASSERT_NO_ERROR();
    cr_assert_eq(g_n_errors, 0, "a missing NCCL is a fallback, not an error");
}

Test(cuda_comm, a_library_that_is_not_nccl_is_refused) {
#ifdef GGMLX_TEST_NCCL
    setenv("GGMLX_NCCL_LIBRARY", "libm.so.6", 1);
    char why[512] = "";
    cr_assert_not(ggmlx_nccl_load(why, sizeof why));
    cr_assert(strstr(why, "'libm.so.6' has no ncclGetVersion") != NULL, "%s", why);
    cr_assert_eq(ggmlx_nccl_version(), 0);
    ASSERT_NO_ERROR();
#else
    cr_skip_test("this build has no NCCL support");
#endif
}

Test(cuda_comm, the_installed_nccl_is_found_at_first_use) {
#ifdef GGMLX_TEST_NCCL
    unsetenv("GGMLX_NCCL_LIBRARY");
    char why[768] = "";
    if (!ggmlx_nccl_load(why, sizeof why)) {
        cr_assert(strstr(why, "libnccl.so.2") != NULL && strstr(why, "libnccl.so") != NULL,
                  "both names are tried: %s", why);
        cr_skip_test("no NCCL library on this machine: %s", why);
    }
    cr_assert_str_eq(why, "");
    const int v = ggmlx_nccl_version();
    cr_assert(v >= 20000 && v < 30000, "NCCL 2.x with the 2.9+ version code: %d", v);
    void * h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) {
        h = dlopen("libnccl.so", RTLD_NOW | RTLD_NOLOAD);
    }
    cr_assert_not_null(h, "the library is loaded now");
    dlclose(h);
    ASSERT_NO_ERROR();
#else
    cr_skip_test("this build has no NCCL support");
#endif
}

/* ---- on a GPU ------------------------------------------------------------------------------ */

static void need_gpu(int n) {
    const int have = ggml_backend_cuda_get_device_count();
    if (have <= 0) {
        const char * req = getenv("GGMLX_TEST_REQUIRE_CUDA");
        cr_assert(req == NULL || req[0] == '\0' || strcmp(req, "0") == 0, "GGMLX_TEST_REQUIRE_CUDA: no CUDA device");
        cr_skip_test("no CUDA device (GPU-only check)");
    }
    if (have < n) {
        cr_skip_test("%d CUDA device%s, the check needs %d", have, have == 1 ? "" : "s", n);
    }
    char why[768];
    if (!ggmlx_nccl_load(why, sizeof why)) {
        cr_skip_test("no NCCL: %s", why);
    }
}

static ggml_backend_t gpu(int device) {
    ggml_backend_t b = ggml_backend_cuda_init(device);
    cr_assert_not_null(b, "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    return b;
}

/* a tensor of n elements of type in backend b's memory, in its own context (*ctx) */
static struct ggml_tensor * tensor_on(ggml_backend_t b, enum ggml_type type, int64_t n, struct ggml_context ** ctx,
                                      ggml_backend_buffer_t * buf) {
    struct ggml_init_params p = { 4 * ggml_tensor_overhead(), NULL, true };
    *ctx = ggml_init(p);
    cr_assert_not_null(*ctx);
    struct ggml_tensor * t = ggml_new_tensor_1d(*ctx, type, n);
    cr_assert_not_null(t);
    *buf = ggml_backend_alloc_ctx_tensors(*ctx, b);
    cr_assert_not_null(*buf);
    return t;
}

/* element i of a test pattern (exact in F16 and BF16: a few bits of mantissa, no zeros) */
static float pattern(size_t i, size_t rank) {
    return (float) ((int) ((i * 7 + rank * 3) % 61) - 30) * 0.125f + (float) (rank + 1) * 0.5f;
}

static void fill(struct ggml_tensor * t, size_t rank) {
    const size_t n = (size_t) ggml_nelements(t);
    void * host = malloc(ggml_nbytes(t));
    cr_assert_not_null(host);
    for (size_t i = 0; i < n; i++) {
        const float v = pattern(i, rank);
        switch (t->type) {
        case GGML_TYPE_F32:  ((float *) host)[i] = v; break;
        case GGML_TYPE_F16:  ((ggml_fp16_t *) host)[i] = ggml_fp32_to_fp16(v); break;
        case GGML_TYPE_BF16: ((ggml_bf16_t *) host)[i] = ggml_fp32_to_bf16(v); break;
        default: cr_assert_fail("no pattern for %s", ggml_type_name(t->type));
        }
    }
    ggml_backend_tensor_set(t, host, 0, ggml_nbytes(t));
    free(host);
}

static float element(const void * host, enum ggml_type type, size_t i) {
    switch (type) {
    case GGML_TYPE_F32:  return ((const float *) host)[i];
    case GGML_TYPE_F16:  return ggml_fp16_to_fp32(((const ggml_fp16_t *) host)[i]);
    case GGML_TYPE_BF16: return ggml_bf16_to_fp32(((const ggml_bf16_t *) host)[i]);
    default: return 0.0f;
    }
}

Test(cuda_comm, one_rank_allreduce_leaves_every_value_as_it_was, .timeout = 60) {
    need_gpu(1);
    ggml_backend_t b = gpu(0);
    ggml_backend_t bs[1] = { b };
    void * comm = ggmlx_cuda_comm_init(bs, 1);
    cr_assert_not_null(comm, "a 1-rank communicator on CUDA0: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ASSERT_NO_ERROR();
    const enum ggml_type types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    const int64_t sizes[] = { 1, 1031, (int64_t) 1 << 20 };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            struct ggml_context * ctx;
            ggml_backend_buffer_t buf;
            struct ggml_tensor * t = tensor_on(b, types[k], sizes[s], &ctx, &buf);
            fill(t, 0);
            void * before = malloc(ggml_nbytes(t));
            void * after  = malloc(ggml_nbytes(t));
            cr_assert(before && after);
            ggml_backend_tensor_get(t, before, 0, ggml_nbytes(t));
            struct ggml_tensor * ts[1] = { t };
            cr_assert(ggmlx_cuda_comm_allreduce_tensor(comm, ts), "%s x %lld: %s", ggml_type_name(types[k]),
                      (long long) sizes[s], ggmlx_last_error() ? ggmlx_last_error() : "");
            ASSERT_NO_ERROR();
            ggml_backend_synchronize(b);
            cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS);
            ggml_backend_tensor_get(t, after, 0, ggml_nbytes(t));
            cr_assert(memcmp(before, after, ggml_nbytes(t)) == 0, "%s x %lld changed", ggml_type_name(types[k]),
                      (long long) sizes[s]);
            free(before);
            free(after);
            ggml_backend_buffer_free(buf);
            ggml_free(ctx);
        }
    }
    ggmlx_cuda_comm_free(comm);
    ASSERT_NO_ERROR();
    ggml_backend_free(b);
}

Test(cuda_comm, no_communicator_where_nccl_cannot_or_must_not_run, .timeout = 60) {
    need_gpu(1);
    ggml_backend_t a = gpu(0);
    ggml_backend_t b = gpu(0);
    ggml_backend_t shared[2] = { a, b };
    cr_assert_null(ggmlx_cuda_comm_init(shared, 2), "two backends on one GPU: NCCL needs one rank per GPU");
    ASSERT_NO_ERROR();
    ggml_backend_t one[1] = { a };
    setenv("GGML_CUDA_ALLREDUCE", "none", 1);
    cr_assert_null(ggmlx_cuda_comm_init(one, 1));
    ASSERT_NO_ERROR();
    setenv("GGML_CUDA_ALLREDUCE", "nccl", 1);
    void * comm = ggmlx_cuda_comm_init(one, 1);
    cr_assert_not_null(comm);
    ggmlx_cuda_comm_free(comm);
    unsetenv("GGML_CUDA_ALLREDUCE");
    cr_assert_eq(g_n_errors, 0);
    ggml_backend_free(b);
    ggml_backend_free(a);
}

Test(cuda_comm, tensors_nccl_cannot_sum_are_refused_untouched, .timeout = 60) {
    need_gpu(1);
    ggml_backend_t b = gpu(0);
    ggml_backend_t bs[1] = { b };
    void * comm = ggmlx_cuda_comm_init(bs, 1);
    cr_assert_not_null(comm);

    /* I32: not a type the meta device sums here; a refusal, not an error */
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor * ti = tensor_on(b, GGML_TYPE_I32, 64, &ctx, &buf);
    struct ggml_tensor * ts[1] = { ti };
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(comm, ts));
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);

    /* not contiguous: a transposed view */
    struct ggml_init_params p = { 4 * ggml_tensor_overhead(), NULL, true };
    ctx = ggml_init(p);
    struct ggml_tensor * m = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 8, 4);
    struct ggml_tensor * mt = ggml_transpose(ctx, m);
    buf = ggml_backend_alloc_ctx_tensors(ctx, b);
    cr_assert_not_null(buf);
    cr_assert_eq(ggml_backend_view_init(mt), GGML_STATUS_SUCCESS);
    ts[0] = mt;
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(comm, ts));
    ASSERT_NO_ERROR();
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);

    /* in host memory: a bad argument, an error */
    ggml_backend_t cpu = ggml_backend_cpu_init();
    struct ggml_tensor * th = tensor_on(cpu, GGML_TYPE_F32, 64, &ctx, &buf);
    ts[0] = th;
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(comm, ts));
    ASSERT_ERROR();
    ts[0] = NULL;
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(comm, ts));
    ASSERT_ERROR();
    cr_assert_not(ggmlx_cuda_comm_allreduce_tensor(comm, NULL));
    ASSERT_ERROR();
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(cpu);

    cr_assert_eq(ggmlx_backend_get_status(b), GGML_STATUS_SUCCESS, "a refusal leaves the queue clean");
    ggmlx_cuda_comm_free(comm);
    ggml_backend_free(b);
}

Test(cuda_comm, ranks_on_several_gpus_all_get_the_sum, .timeout = 120) {
    need_gpu(2);
    const int n = ggml_backend_cuda_get_device_count() < 8 ? ggml_backend_cuda_get_device_count() : 8;
    ggml_backend_t bs[8];
    struct ggml_context * ctx[8];
    ggml_backend_buffer_t buf[8];
    struct ggml_tensor * ts[8];
    const int64_t ne = 4099;
    for (int r = 0; r < n; r++) {
        bs[r] = gpu(r);
        ts[r] = tensor_on(bs[r], GGML_TYPE_F32, ne, &ctx[r], &buf[r]);
        fill(ts[r], (size_t) r);
    }
    void * comm = ggmlx_cuda_comm_init(bs, (size_t) n);
    cr_assert_not_null(comm, "%d GPUs: %s", n, ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert(ggmlx_cuda_comm_allreduce_tensor(comm, ts), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    float * got = malloc((size_t) ne * sizeof *got);
    cr_assert_not_null(got);
    for (int r = 0; r < n; r++) {
        ggml_backend_synchronize(bs[r]);
        cr_assert_eq(ggmlx_backend_get_status(bs[r]), GGML_STATUS_SUCCESS);
        ggml_backend_tensor_get(ts[r], got, 0, ggml_nbytes(ts[r]));
        for (int64_t i = 0; i < ne; i++) {
            float want = 0.0f;
            for (int q = 0; q < n; q++) {
                want += pattern((size_t) i, (size_t) q);
            }
            /* the summands are multiples of 1/8 far below 2^20: every order of adding is exact */
            cr_assert_eq(element(got, GGML_TYPE_F32, (size_t) i), want, "rank %d element %lld", r, (long long) i);
        }
    }
    free(got);
    ggmlx_cuda_comm_free(comm);
    for (int r = 0; r < n; r++) {
        ggml_backend_buffer_free(buf[r]);
        ggml_free(ctx[r]);
        ggml_backend_free(bs[r]);
    }
}
