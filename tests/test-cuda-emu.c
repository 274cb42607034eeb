/*
 * test-cuda-emu.c -- cuda/'s kernels, dispatch and cuBLAS plans run on the host by the kernel
 * emulator (tests/cuda-emu/, device EMU0): the conformance runner's every op case and backend
 * rule passes on EMU0, in both thread orders; out-of-range row indices become the CPU's error;
 * and the emulator itself can fail (coordinates, reductions at every block size, bad launches,
 * barriers that never open, a missing barrier seen by reversing the order).
 *
 * What this does not show: anything that needs a GPU (memory model, streams, timing, the
 * backend's host code in cuda-backend.c). scripts/gpu-check.sh does that on a GPU.
 */
#include <criterion/criterion.h>

#ifdef GGMLX_EMU_UNAVAILABLE

Test(cuda_emu, unavailable_in_this_build) {
    cr_skip_test("the kernel emulator needs the CPU backend linked in (not a GGML_BACKEND_DL build)");
}

#else

#include "tools/conformance/cf-run.h"
#include "ggmlx-backend.h"

#include "cuda-emu/emu-test-filter.h"
#include "ggmlx-emu.h"

/* per suite: a per-test .timeout made LSan report 48 bytes leaked inside Criterion 2.4 */
TestSuite(cuda_emu, .timeout = 600);

cudaError_t ggmlx_emu_selftest_coords(const unsigned grid[3], const unsigned block[3], uint32_t * out, uint32_t * count);
cudaError_t ggmlx_emu_selftest_block_sum(int threads, int blocks, const float * v, int n, float * sum, float * mx);
cudaError_t ggmlx_emu_selftest_partial_shuffle(int block, int lanes, float * out);
cudaError_t ggmlx_emu_selftest_neighbour(int threads, bool barrier, int * out);

static struct cf_options emu_options(void) {
    struct cf_options o = cf_test_options();
    o.device  = "EMU0";
    o.exclude = EMU_EXCLUDE;
    return o;
}

/* the cases the emulated kernels ran on 2026-12-04: 719 (with EMU_FILTER unset) */
#define EMU_MIN_PASSED 700

static void run_conformance_on_emu(void) {
    cr_assert_not_null(ggmlx_emu_device(), "%s", cf_last_error());
    struct cf_options opt = emu_options();
    opt.filter = EMU_FILTER;
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    const struct ggmlx_emu_counts c = ggmlx_emu_counts();
    cr_log_info("EMU0: %d cases, %d passed, %d skipped, %d failed; %llu launches, %llu blocks, %llu threads, "
                "%llu GEMMs", sum.n_cases, sum.passed, sum.skipped, sum.failed, (unsigned long long) c.launches,
                (unsigned long long) c.blocks, (unsigned long long) c.threads, (unsigned long long) c.gemm_calls);
    cr_assert_eq(sum.n_devices, 1);
    cr_assert_eq(failed, 0, "%d case(s) failed on EMU0 (see the FAIL lines above)", failed);
    cr_assert_geq(sum.n_cases, EMU_MIN_CASES);
    if (EMU_FILTER == NULL) {
        /* a sudden drop means supports_op broke; a share of all cases would not do, as ops the
         * CUDA backend does not claim (run by the scheduler on the CPU) keep adding CPU-only cases */
        cr_assert_geq(sum.passed, EMU_MIN_PASSED, "only %d of %d cases ran on EMU0 (%d skipped)", sum.passed,
                      sum.n_cases, sum.skipped);
        cr_assert_gt(c.launches, 500);
        cr_assert_gt(c.gemm_calls, 20);
    }
}

Test(cuda_emu, every_conformance_case_passes_on_the_emulated_kernels) {
    run_conformance_on_emu();
}

Test(cuda_emu, every_case_passes_with_the_threads_of_each_block_in_reverse_order) {
#ifdef GGMLX_TEST_TSAN
    cr_skip_test("the kernels' thread order is checked in the Release and ASan suites (see EMU_FILTER)");
#endif
    setenv("GGMLX_EMU_ORDER", "reverse", 1); /* read by each worker thread at its first launch */
    run_conformance_on_emu();
}

Test(cuda_emu, a_wrong_reference_fails_on_the_emulated_device) {
    cr_assert_not_null(ggmlx_emu_device());
    struct cf_options opt = emu_options();
    opt.filter          = "soft_max f32 [";
    opt.out             = NULL;
    opt.wrong_reference = true;
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    cr_assert_gt(sum.n_cases, 0);
    cr_assert_eq(failed, sum.n_cases, "%d of %d cases failed with a wrong reference", failed, sum.n_cases);
}

/* ---- row indices ------------------------------------------------------------------------------- */

/* get_rows of a 4 x 10 table with indices {1, 17, 2} on dev: its status, message and rows */
static enum ggml_status bad_row_index(ggml_backend_dev_t dev, char * msg, size_t msg_size, float out[12]) {
    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    cr_assert_not_null(ctx);
    struct ggml_tensor * embd = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 10);
    struct ggml_tensor * idx  = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 3);
    ggml_set_name(embd, "embd");
    struct ggml_tensor * rows = ggml_get_rows(ctx, embd, idx);
    struct ggml_cgraph * gf   = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, rows);
    ggml_backend_t backend = ggml_backend_dev_init(dev, NULL);
    cr_assert_not_null(backend);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    cr_assert_not_null(buf);
    float table[40];
    for (int i = 0; i < 40; i++) {
        table[i] = (float) i;
    }
    const int32_t ids[3] = { 1, 17, 2 };
    ggml_backend_tensor_set(embd, table, 0, sizeof table);
    ggml_backend_tensor_set(idx, ids, 0, sizeof ids);
    ggml_backend_tensor_memset(rows, 0, 0, ggml_nbytes(rows));
    const enum ggml_status st = ggml_backend_graph_compute(backend, gf);
    snprintf(msg, msg_size, "%s", cf_last_error());
    ggmlx_backend_clear_status(backend);
    ggml_backend_tensor_get(rows, out, 0, 12 * sizeof(float));
    ggml_backend_buffer_free(buf);
    ggml_backend_free(backend);
    ggml_free(ctx);
    return st;
}

Test(cuda_emu, an_out_of_range_row_index_fails_with_the_cpus_message) {
    ggml_backend_dev_t emu = ggmlx_emu_device();
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    cr_assert_not_null(emu);
    cr_assert_not_null(cpu);
    char m_emu[512], m_cpu[512];
    float r_emu[12], r_cpu[12];
    const enum ggml_status s_emu = bad_row_index(emu, m_emu, sizeof m_emu, r_emu);
    const enum ggml_status s_cpu = bad_row_index(cpu, m_cpu, sizeof m_cpu, r_cpu);
    cr_assert_eq(s_emu, GGML_STATUS_FAILED, "EMU0 returned %s", ggml_status_to_string(s_emu));
    cr_assert_eq(s_cpu, GGML_STATUS_FAILED);
    const char * what = "(GET_ROWS): row index 17 at [1, 0, 0] is out of range 0..9";
    cr_assert_not_null(strstr(m_cpu, what), "CPU: %s", m_cpu);
    cr_assert_not_null(strstr(m_emu, what), "EMU0: %s", m_emu);
    /* nothing was written, the good rows neither, as on the CPU */
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(r_cpu[i], 0.0f, "CPU wrote rows[%d] = %g", i, r_cpu[i]);
        cr_assert_eq(r_emu[i], 0.0f, "EMU0 wrote rows[%d] = %g", i, r_emu[i]);
    }
}

/* ---- the emulator itself ------------------------------------------------------------------------ */

Test(cuda_emu, every_thread_of_a_3d_grid_runs_once_with_its_coordinates) {
    const unsigned grids[][3]  = { { 1, 1, 1 }, { 3, 2, 2 }, { 2, 1, 3 } };
    const unsigned blocks[][3] = { { 1, 1, 1 }, { 32, 2, 1 }, { 4, 4, 4 } };
    for (int c = 0; c < 3; c++) {
        const unsigned n = grids[c][0] * grids[c][1] * grids[c][2] * blocks[c][0] * blocks[c][1] * blocks[c][2];
        uint32_t * out   = malloc(n * sizeof *out);
        uint32_t * count = calloc(n, sizeof *count);
        cr_assert(out != NULL && count != NULL);
        memset(out, 0xFF, n * sizeof *out);
        cr_assert_eq(ggmlx_emu_selftest_coords(grids[c], blocks[c], out, count), cudaSuccess, "%s",
                     ggmlx_emu_last_failure());
        for (unsigned i = 0; i < n; i++) {
            cr_assert_eq(out[i], i, "config %d: thread %u wrote %u", c, i, out[i]);
            cr_assert_eq(count[i], 1, "config %d: thread %u ran %u times", c, i, count[i]);
        }
        free(out);
        free(count);
    }
}

Test(cuda_emu, block_sum_and_max_are_right_at_every_block_size) {
    enum { N = 3001 };
    static float v[N];
    double want = 0;
    for (int i = 0; i < N; i++) {
        v[i] = (float) ((i * 37) % 101) - 50.0f; /* integers: every partial sum is exact in float */
        want += v[i];
    }
    v[1234] = 77.0f;
    want += 77.0 - ((1234 * 37) % 101 - 50.0);
    for (int threads = 32; threads <= 1024; threads += 32) {
        float sum[2], mx[2];
        cr_assert_eq(ggmlx_emu_selftest_block_sum(threads, 2, v, N, sum, mx), cudaSuccess, "%d threads: %s", threads,
                     ggmlx_emu_last_failure());
        for (int b = 0; b < 2; b++) {
            cr_assert_eq(sum[b], (float) want, "%d threads, block %d: sum %g, want %g", threads, b, sum[b], want);
            cr_assert_eq(mx[b], 77.0f, "%d threads, block %d: max %g", threads, b, mx[b]);
        }
    }
}

Test(cuda_emu, a_launch_outside_the_device_limits_is_an_invalid_configuration) {
    const unsigned grid[3] = { 1, 1, 1 }, big[3] = { 2048, 1, 1 }, zero[3] = { 0, 1, 1 }, deep[3] = { 1, 1, 65 };
    uint32_t out[1], count[1];
    cr_assert_eq(ggmlx_emu_selftest_coords(grid, big, out, count), cudaErrorInvalidConfiguration);
    cr_assert_eq(ggmlx_emu_selftest_coords(grid, zero, out, count), cudaErrorInvalidConfiguration);
    cr_assert_eq(ggmlx_emu_selftest_coords(grid, deep, out, count), cudaErrorInvalidConfiguration);
    const unsigned tall[3] = { 1, 65536, 1 }, one[3] = { 1, 1, 1 };
    cr_assert_eq(ggmlx_emu_selftest_coords(tall, one, out, count), cudaErrorInvalidConfiguration);
    /* the error is reported once, then the thread is clean again */
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(cuda_emu, a_full_mask_shuffle_missing_lanes_fails_instead_of_hanging) {
    float out[64];
    cr_assert_eq(ggmlx_emu_selftest_partial_shuffle(32, 32, out), cudaSuccess, "%s", ggmlx_emu_last_failure());
    for (int i = 0; i < 32; i++) {
        cr_assert_eq(out[i], 32.0f);
    }
    /* a block of 16 threads: lanes 16..31 do not exist */
    cr_assert_eq(ggmlx_emu_selftest_partial_shuffle(16, 16, out), cudaErrorLaunchFailure);
    cr_assert_not_null(strstr(ggmlx_emu_last_failure(), "barrier that can never open"), "%s", ggmlx_emu_last_failure());
    /* half a warp returned before the shuffle */
    cr_assert_eq(ggmlx_emu_selftest_partial_shuffle(64, 48, out), cudaErrorLaunchFailure);
    /* and the emulator is usable afterwards */
    cr_assert_eq(ggmlx_emu_selftest_partial_shuffle(64, 64, out), cudaSuccess, "%s", ggmlx_emu_last_failure());
    cr_assert_eq(out[63], 32.0f);
}

Test(cuda_emu, reversing_the_thread_order_exposes_a_missing_barrier) {
    enum { T = 96 };
    int fwd[T], rev[T];
    for (int with = 0; with < 2; with++) {
        ggmlx_emu_set_reverse(false);
        cr_assert_eq(ggmlx_emu_selftest_neighbour(T, with, fwd), cudaSuccess);
        ggmlx_emu_set_reverse(true);
        cr_assert_eq(ggmlx_emu_selftest_neighbour(T, with, rev), cudaSuccess);
        ggmlx_emu_set_reverse(false);
        int right_fwd = 0, right_rev = 0;
        for (int i = 0; i < T; i++) {
            right_fwd += fwd[i] == (i + 1) % T;
            right_rev += rev[i] == (i + 1) % T;
        }
        if (with) {
            cr_assert_eq(right_fwd, T);
            cr_assert_eq(right_rev, T);
        } else {
            /* without the barrier the two orders disagree: in index order a thread reads its
             * neighbour before the neighbour wrote (only the last thread, whose neighbour 0 ran
             * first, is right); reversed, every neighbour wrote first */
            cr_assert_eq(right_fwd, 1, "%d of %d right in index order", right_fwd, T);
            cr_assert_eq(right_rev, T - 1, "%d of %d right in reverse order", right_rev, T);
        }
    }
}

#endif /* GGMLX_EMU_UNAVAILABLE */
