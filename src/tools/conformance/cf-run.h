/*
 * cf-run.h -- the conformance runner as a library: the program ggml-conformance and the test
 * suites (test-conformance, the CUDA emulator's) run the same cases through cf_run.
 */
#ifndef GGMLX_CF_RUN_H
#define GGMLX_CF_RUN_H

#include "ggml-backend.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CF_DEFAULT_SEED 20260821ull

struct cf_options {
    uint64_t     seed;
    const char * device;       /* run on this device only (NULL: every device) */
    const char * filter;       /* only cases whose name contains this (NULL: all) */
    const char * exclude;      /* and not those whose name contains this (NULL: none left out) */
    bool         json;
    bool         verbose;      /* text: also each passing case's largest error over its tolerance */
    bool         require_cuda; /* GGMLX_TEST_REQUIRE_CUDA=1: no CUDA device, or a skip on one, fails */
    FILE *       out;          /* the report (NULL: none) */
    /* for tests of the runner itself: */
    bool wrong_reference; /* every op case expects a wrong value at one element */
    bool break_guard;     /* one guard byte after every result is overwritten before the checks */
};

struct cf_summary {
    int passed, failed, skipped;
    int skipped_unclaimed; /* of the skips, cases a CUDA device's backend does not claim (quantized ones) */
    int n_devices;
    int n_cases; /* per device, after the filter */
};

/*
 * Every selected backend rule and op case on every selected device, one line each into
 * opt->out; returns the number of failures (also in sum).
 */
int cf_run(const struct cf_options * opt, struct cf_summary * sum);

/* the names of the selected rules and cases, one a line; 0, or 1 when out of memory */
int cf_list(const struct cf_options * opt, FILE * out);

/* called as each case starts (the program's watchdog names the case that hangs); NULL: none */
void cf_set_case_hook(void (*fn)(const char * device, const char * name));

/* what the test suites start from: every device, the default seed or GGMLX_TEST_SEED's, each
 * case's line into the test log */
struct cf_options cf_test_options(void);

/* the device belongs to the CUDA registry (real or emulated) */
bool cf_device_is_cuda(ggml_backend_dev_t dev);

/* the calling thread's last ggmlx error, or "(no message)" */
const char * cf_last_error(void);

#endif /* GGMLX_CF_RUN_H */
