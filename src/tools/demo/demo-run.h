/*
 * demo-run.h -- the demo's checks as a library: the program ggml-demo (its command line and
 * report), tests/test-demo.c and the CUDA emulator's ggml-demo-emu run the same checks.
 *
 *   demo_relu     100 values through ggml_relu
 *   demo_mlp      x [64, batch 8] -> 64x128 (F16) + b1 -> GELU -> 128x10 (F32) + b2 -> softmax
 *   demo_decoder  one llama-style transformer block
 *   demo_sched    an 8-layer decoder through the backend scheduler, its layers in pipeline
 *                 stages over the CUDA devices (else the SIM devices, else the CPU)
 *   demo_meta     a 4-layer decoder split across the devices as one meta device
 *
 * Each check builds its graphs from random inputs and weights fixed by opt->seed and compares
 * the result with a reference computed without the device (double precision for the first
 * three, a CPU-only run for the last two). A check never aborts: what failed, and the library's
 * explanation, end up in the result.
 */
#ifndef GGMLX_DEMO_RUN_H
#define GGMLX_DEMO_RUN_H

#include "ggml.h"
#include "ggml-backend.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the decoder block check's sizes (a test corrupts its weights at chosen elements) */
#define DEMO_DECODER_N_EMBD 64
#define DEMO_DECODER_N_FF   128

struct demo_options {
    uint64_t seed;
    int      n_threads;
    size_t   mem_size; /* bytes for each of a check's two contexts; 0: enough */
    /* For tests: called after the inputs and weights are set and the reference is computed,
     * just before they are copied to the backend, with the check's host context (tensors can
     * be found by name there). */
    void (*tamper)(struct ggml_context * ctx, void * data);
    void * tamper_data;
    /* where the graphs run; NULL: each check starts ggml_backend_init_best() for itself */
    ggml_backend_t backend;
};

enum demo_status { DEMO_PASSED, DEMO_FAILED, DEMO_ERROR };

struct demo_result {
    const char *     name;              /* "relu", "mlp", "decoder", "scheduler", "meta" */
    const char *     title;             /* for the report */
    enum demo_status status;
    double           max_abs_err;
    double           max_rel_err;       /* max_abs_err over the largest |reference value| */
    double           limit;             /* on max_rel_err if limit_is_relative, else on max_abs_err */
    bool             limit_is_relative;
    double           ms;                /* the graph computation alone */
    char             device[64];        /* the device that computed it */
    char             error[768];        /* DEMO_ERROR: what failed and ggmlx_last_error() */
    double           tokens_per_s;      /* the scheduler and meta checks; 0 for the others */
    char             note[512];         /* the scheduler and meta checks: how they ran */
    /* the scheduler check: its timed run's trace read back (demo-overlap.h); false when unread */
    bool             has_overlap;
    double           overlap_share;     /* of the run, two or more devices computing */
    double           overlap_ms;        /* that time */
    double           run_ms;            /* first compute start to last compute end in the trace */
};

/* "OK", "FAIL" or "ERROR", as the report writes a status */
const char * demo_status_name(enum demo_status s);

void demo_relu(const struct demo_options * opt, struct demo_result * res);
void demo_mlp(const struct demo_options * opt, struct demo_result * res);
void demo_decoder(const struct demo_options * opt, struct demo_result * res);
void demo_sched(const struct demo_options * opt, struct demo_result * res);
void demo_meta(const struct demo_options * opt, struct demo_result * res);

/*
 * Where demo_sched writes the Chrome/Perfetto trace of its timed run (ggml-demo's --trace);
 * NULL, the start: a temporary file, read back and removed. GGMLX_SCHED_TRACE, when set, names
 * it instead. A setting rather than a field of demo_options, whose initializers list every field.
 */
void demo_set_trace_path(const char * path);

#endif /* GGMLX_DEMO_RUN_H */
