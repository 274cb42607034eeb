/*
 * ggml-demo.c -- a first look at ggmlx: five checks, each a graph computed and compared with a
 * reference computed without the device.
 *
 * On the device ggml_backend_init_best() picks (the first GPU, else the CPU), each against a
 * double-precision reference:
 *   relu     the classic first ggml program: 100 values through ggml_relu
 *   mlp      x [64, batch 8] -> 64x128 (F16 weights) + b1 -> GELU -> 128x10 (F32) + b2 -> softmax
 *   decoder  one llama-style transformer block: RMSNorm, Q/K/V projections, RoPE, causal
 *            multi-head attention, output projection, residual, RMSNorm, SwiGLU, residual
 * and a fourth, on every device at once:
 *   scheduler  an 8-layer decoder through the backend scheduler, its layers in pipeline stages
 *              over the CUDA devices (else the SIM devices, else the CPU), checked against a
 *              CPU-only run, with tokens per second, a Chrome/Perfetto trace and the share of
 *              the time two or more stages computed, read from that trace
 * and a fifth, tensor parallelism:
 *   meta       a 4-layer decoder split across the CUDA devices (else the SIM devices, else the
 *              CPU alone) as one meta device, checked against a CPU-only run
 *
 * usage: ggml-demo [--seed N] [--threads N] [--json] [--trace FILE | --no-trace]
 * Exit status 0 when every check passes, 1 otherwise.
 *
 * Inputs and weights are random but fixed by the seed. Every constructor result is checked: on
 * bad input ggmlx returns NULL and explains why in ggmlx_last_error() (it never aborts).
 *
 * The checks are in demo/ (demo-run.h), which tests/test-demo.c links too; this file is their
 * command line and report.
 */
#include "demo/demo-run.h"

#include "ggml.h"
#include "ggml-backend.h"
#include "ggmlx.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_DEFAULT_SEED    42
#define DEMO_DEFAULT_THREADS 2
#define DEMO_N_CHECKS        5
#define DEMO_DEFAULT_TRACE   "ggml-demo-trace.json"

static void (*const demo_checks[DEMO_N_CHECKS])(const struct demo_options *, struct demo_result *) = {
    demo_relu, demo_mlp, demo_decoder, demo_sched, demo_meta,
};

static void print_text(const struct demo_result * r) {
    if (r->status == DEMO_ERROR) {
        printf("%-28s %-5s %s\n", r->title, demo_status_name(r->status), r->error);
        return;
    }
    printf("%-28s %-5s max|err| = %-9.3g %8.2f ms", r->title, demo_status_name(r->status), r->max_abs_err, r->ms);
    if (r->limit_is_relative) {
        printf("   rel %.3g (limit %g)\n", r->max_rel_err, r->limit);
    } else if (r->limit == 0.0) {
        printf("   (exact)\n");
    } else {
        printf("   (limit %g)\n", r->limit);
    }
    if (r->note[0] != '\0') {
        printf("%-28s on %s: %s\n", "", r->device, r->note);
    }
}

static void print_json_string(const char * s) {
    putchar('"');
    for (; s != NULL && *s != '\0'; s++) {
        const unsigned char c = (unsigned char) *s;
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    putchar('"');
}

/* JSON has no infinities or NaN */
static void print_json_number(double v) {
    if (isfinite(v)) {
        printf("%.6g", v);
    } else {
        printf("null");
    }
}

static void print_json(const struct demo_options * opt, const struct demo_result * r, int n, int passed) {
    printf("{\n  \"build_info\": ");
    print_json_string(ggmlx_build_info());
    printf(",\n  \"backend\": ");
    print_json_string(ggml_backend_name(opt->backend));
    printf(",\n  \"device\": ");
    print_json_string(ggml_backend_dev_name(ggml_backend_get_device(opt->backend)));
    printf(",\n  \"device_description\": ");
    print_json_string(ggml_backend_dev_description(ggml_backend_get_device(opt->backend)));
    printf(",\n  \"seed\": %" PRIu64 ",\n  \"threads\": %d,\n  \"checks\": [\n", opt->seed, opt->n_threads);
    for (int i = 0; i < n; i++) {
        printf("    {\"name\": \"%s\", \"title\": ", r[i].name);
        print_json_string(r[i].title);
        printf(", \"status\": \"%s\", \"max_abs_err\": ", demo_status_name(r[i].status));
        print_json_number(r[i].max_abs_err);
        printf(", \"max_rel_err\": ");
        print_json_number(r[i].max_rel_err);
        printf(", \"limit\": ");
        print_json_number(r[i].limit);
        printf(", \"limit_on\": \"%s\", \"ms\": ", r[i].limit_is_relative ? "max_rel_err" : "max_abs_err");
        print_json_number(r[i].ms);
        printf(", \"device\": ");
        print_json_string(r[i].device);
        if (r[i].tokens_per_s > 0.0) {
            printf(", \"tokens_per_s\": ");
            print_json_number(r[i].tokens_per_s);
            if (r[i].has_overlap) {
                printf(", \"overlap_share\": ");
                print_json_number(r[i].overlap_share);
                printf(", \"overlap_ms\": ");
                print_json_number(r[i].overlap_ms);
                printf(", \"traced_ms\": ");
                print_json_number(r[i].run_ms);
            }
            printf(", \"note\": ");
            print_json_string(r[i].note);
        }
        printf(", \"error\": ");
        if (r[i].status == DEMO_ERROR) {
            print_json_string(r[i].error);
        } else {
            printf("null");
        }
        printf("}%s\n", i + 1 < n ? "," : "");
    }
    printf("  ],\n  \"passed\": %d,\n  \"total\": %d,\n  \"ok\": %s\n}\n", passed, n, passed == n ? "true" : "false");
}

static void usage(FILE * f) {
    fprintf(f, "usage: ggml-demo [--seed N] [--threads N] [--json] [--trace FILE | --no-trace]\n"
               "  --seed N      seed of the random inputs and weights (default %d)\n"
               "  --threads N   CPU threads, 1..%d (default %d)\n"
               "  --json        print the report as JSON\n"
               "  --trace FILE  the scheduler check's Chrome/Perfetto trace (default %s;\n"
               "                GGMLX_SCHED_TRACE, when set, names it instead)\n"
               "  --no-trace    keep no trace file (the check still traces, to a temporary file)\n"
               "GGMLX_SIM_DEVICES=N runs the scheduler check over N simulated devices when there is no GPU.\n"
               "Exit status 0 when every check passes, 1 otherwise.\n",
            DEMO_DEFAULT_SEED, GGML_MAX_N_THREADS, DEMO_DEFAULT_THREADS, DEMO_DEFAULT_TRACE);
}

/* the whole of s as an unsigned number no larger than max */
static bool parse_uint(const char * s, uint64_t max, uint64_t * out) {
    if (s == NULL || *s < '0' || *s > '9') {
        return false;
    }
    char * end;
    const unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || v > max) {
        return false;
    }
    *out = v;
    return true;
}

int main(int argc, char ** argv) {
    struct demo_options opt = { DEMO_DEFAULT_SEED, DEMO_DEFAULT_THREADS, 0, NULL, NULL, NULL };
    demo_set_trace_path(DEMO_DEFAULT_TRACE);
    bool json = false;

    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc && argv[i + 1][0] != '\0') {
            demo_set_trace_path(argv[++i]);
        } else if (strcmp(argv[i], "--no-trace") == 0) {
            demo_set_trace_path(NULL);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc && parse_uint(argv[i + 1], UINT64_MAX, &v)) {
            opt.seed = v;
            i++;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc && parse_uint(argv[i + 1], GGML_MAX_N_THREADS, &v) &&
                   v >= 1) {
            opt.n_threads = (int) v;
            i++;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "ggml-demo: bad argument '%s'%s\n", argv[i],
                    strcmp(argv[i], "--seed") == 0 || strcmp(argv[i], "--threads") == 0 || strcmp(argv[i], "--trace") == 0
                        ? " (missing or bad value)"
                        : "");
            usage(stderr);
            return 1;
        }
    }

#ifdef GGML_BACKEND_DL
    /* every backend, the CPU included, is a module: nothing is registered until it is loaded */
    ggml_backend_load_all();
#endif
    /* the first GPU, else an integrated GPU, else the CPU */
    opt.backend = ggml_backend_init_best();
    if (opt.backend == NULL) {
        const char * why = ggmlx_last_error();
        fprintf(stderr, "ggml-demo: ggml_backend_init_best failed: %s\n", why ? why : "(no message)");
        return 1;
    }
    ggml_backend_dev_t dev  = ggml_backend_get_device(opt.backend);
    const char *       name = dev ? ggml_backend_dev_name(dev) : ggml_backend_name(opt.backend);

    if (!json) {
        printf("%s\n", ggmlx_build_info());
        printf("seed %" PRIu64 " (--seed N to change), %d threads, %s\n", opt.seed, opt.n_threads, name);
        printf("device %s (%s), chosen by ggml_backend_init_best()\n", name,
               dev ? ggml_backend_dev_description(dev) : "no description");
        fflush(stdout);
    }

    struct demo_result results[DEMO_N_CHECKS];
    int passed = 0;
    for (int i = 0; i < DEMO_N_CHECKS; i++) {
        demo_checks[i](&opt, &results[i]);
        passed += results[i].status == DEMO_PASSED;
        if (!json) {
            print_text(&results[i]);
            fflush(stdout);
        }
    }

    if (json) {
        print_json(&opt, results, DEMO_N_CHECKS, passed);
    } else if (passed == DEMO_N_CHECKS) {
        printf("demo: all %d checks passed on %s (%d thread%s)\n", DEMO_N_CHECKS, name, opt.n_threads,
               opt.n_threads == 1 ? "" : "s");
    } else {
        printf("demo: %d of %d checks failed on %s (%d thread%s)\n", DEMO_N_CHECKS - passed, DEMO_N_CHECKS, name,
               opt.n_threads, opt.n_threads == 1 ? "" : "s");
    }
    ggml_backend_free(opt.backend);
    return passed == DEMO_N_CHECKS ? 0 : 1;
}
