/*
 * emu-test-filter.h -- which conformance cases the emulator tests (test-cuda-emu,
 * test-cuda-emu-backend) run in each build.
 *
 * Under ASan and UBSan (Debug) the one-block-per-row cases of 70000 rows would take most of ten
 * minutes: they run in the Release suite and are left out. Under TSan every fiber switch is a
 * synchronisation it models, and the whole runner takes minutes; the kernels run on one host
 * thread, so TSan has little to find in them: only the backend rules (queues, events and copies
 * around the emulated kernels) run there.
 */
#ifndef GGMLX_EMU_TEST_FILTER_H
#define GGMLX_EMU_TEST_FILTER_H

/* the conformance runner's own minimum per device (test-conformance.c) */
#define MIN_CASES 400

#if defined(GGMLX_TEST_TSAN)
#    define EMU_FILTER    "rule:"
#    define EMU_EXCLUDE   "70000"
#    define EMU_MIN_CASES 10
#elif defined(GGMLX_TEST_SANITIZED)
#    define EMU_FILTER    NULL
#    define EMU_EXCLUDE   "70000"
#    define EMU_MIN_CASES (MIN_CASES - 20)
#else
#    define EMU_FILTER    NULL
#    define EMU_EXCLUDE   NULL
#    define EMU_MIN_CASES MIN_CASES
#endif

#endif /* GGMLX_EMU_TEST_FILTER_H */
