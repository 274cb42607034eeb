/*
 * test-cuda-emu-backend.c -- the CUDA backend's own host code (cuda/cuda-backend.c and the
 * files it uses: devices, buffers, streams, events, CUDA graphs, the row error word) running
 * over the emulated CUDA runtime of tests/cuda-emu/ (emu-cudart.cpp: streams are worker
 * threads, capture records work, graph launches replay it) with the kernels of test-cuda-emu.
 * The conformance runner passes on "CUDA0" as it must on a GPU.
 */
#include <criterion/criterion.h>

#ifdef GGMLX_EMU_UNAVAILABLE

Test(cuda_emu_backend, unavailable_in_this_build) {
    cr_skip_test("the emulated CUDA backend is built only where the real libggml-cuda is not "
                 "(both define ggml_backend_cuda_*), and not as a GGML_BACKEND_DL module");
}

#else

#include "tools/conformance/cf-run.h"
#include "ggmlx-backend.h"

#include "ggml-cuda.h"
#include "cuda-emu/emu-test-filter.h"
#include "ggmlx-emu.h"

/* per suite: a per-test .timeout made LSan report 48 bytes leaked inside Criterion 2.4 */
TestSuite(cuda_emu_backend, .timeout = 600);

static struct cf_options cuda_options(const char * device) {
    struct cf_options o = cf_test_options();
    o.device       = device;
    o.require_cuda = true;
    o.filter       = EMU_FILTER;
    o.exclude      = EMU_EXCLUDE;
    return o;
}

static void register_cuda(void) {
    ggml_backend_reg_t reg = ggml_backend_cuda_reg();
    cr_assert_not_null(reg);
    ggml_backend_register(reg);
    cr_assert_geq(ggml_backend_cuda_get_device_count(), 1, "no emulated GPU: %s", cf_last_error());
}

Test(cuda_emu_backend, every_conformance_case_passes_on_cuda0) {
    register_cuda();
    struct cf_options opt = cuda_options("CUDA0");
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    cr_log_info("CUDA0 (emulated): %d cases, %d passed, %d skipped, %d failed", sum.n_cases, sum.passed, sum.skipped,
                sum.failed);
    cr_assert_eq(sum.n_devices, 1);
    cr_assert_eq(failed, 0, "%d case(s) failed on the emulated CUDA0 (see the FAIL lines above)", failed);
    cr_assert_eq(sum.skipped, sum.skipped_unclaimed, "%d skipped, %d of them cases CUDA does not claim", sum.skipped,
                 sum.skipped_unclaimed);
    cr_assert_geq(sum.n_cases, EMU_MIN_CASES);
}

#endif /* GGMLX_EMU_UNAVAILABLE */
