/*
 * ggml-conformance.c -- checks every backend rule and every op on every device the registry
 * finds, in one process: the CPU today, simulated and CUDA devices unchanged later.
 *
 * usage: ggml-conformance [--device NAME] [--filter SUBSTR] [--exclude SUBSTR] [--seed N] [--json] [--verbose] [--list]
 *
 * One line per case and device: "ok", "FAIL" with the reason, or "skip" when the device does not
 * support the op; then the number of skips, and last "N passed, N failed". Exit status 0 iff
 * nothing failed. With GGMLX_TEST_REQUIRE_CUDA=1 (the GPU check script), finding no CUDA device
 * fails, and so does a skip on a CUDA device.
 *
 * In conformance/: the op cases are listed in cf-cases.h, build their graphs in cf-build.h and
 * have double-precision references in cf-ref.h; cf-exec.h runs one (guard bytes around every
 * tensor); the backend rules are in cf-rules-memory.h and cf-rules-queue.h (listed in cf-rules.h).
 * tests/test-conformance.c includes this file with GGMLX_CONFORMANCE_NO_MAIN defined and calls
 * cf_run().
 */
/* nanosleep, alarm: POSIX (the build defines _GNU_SOURCE; this is for builds that do not) */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "conformance/cf-common.h"
#include "conformance/cf-cases.h"
#include "conformance/cf-build.h"
#include "conformance/cf-ref.h"
#include "conformance/cf-exec.h"
#include "conformance/cf-rules.h"

#include <ctype.h>
#include <inttypes.h>

struct cf_summary {
    int passed, failed, skipped;
    int n_devices;
    int n_cases; /* per device, after the filter */
};

/* ---- the report -------------------------------------------------------------------------------- */

struct cf_report {
    const struct cf_options * opt;
    bool                      first; /* JSON: no comma before the first case */
};

static void cf_json_string(FILE * f, const char * s) {
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char ch = (unsigned char) *s;
        if (ch == '"' || ch == '\\') {
            fprintf(f, "\\%c", ch);
        } else if (ch < 0x20) {
            fprintf(f, "\\u%04x", ch);
        } else {
            fputc(ch, f);
        }
    }
    fputc('"', f);
}

static const char * cf_status_word(enum cf_status s) {
    return s == CF_OK ? "ok" : s == CF_SKIP ? "skip" : "FAIL";
}

static void cf_report_case(struct cf_report * rep, const char * device, const char * name, const struct cf_result * r) {
    FILE * f = rep->opt->out;
    if (f == NULL) {
        return;
    }
    if (rep->opt->json) {
        fprintf(f, "%s\n    {\"device\": ", rep->first ? "" : ",");
        cf_json_string(f, device);
        fprintf(f, ", \"case\": ");
        cf_json_string(f, name);
        fprintf(f, ", \"status\": \"%s\", \"reason\": ", cf_status_word(r->status));
        cf_json_string(f, r->reason);
        fprintf(f, ", \"err_ratio\": %.3g}", r->err_ratio);
        rep->first = false;
    } else if (r->reason[0] != '\0' && r->status != CF_OK) {
        fprintf(f, "%-4s %s  %s: %s\n", cf_status_word(r->status), device, name, r->reason);
    } else if (rep->opt->verbose && r->status == CF_OK) {
        fprintf(f, "%-4s %s  %s  (error/tolerance %.3g)\n", cf_status_word(r->status), device, name, r->err_ratio);
    } else {
        fprintf(f, "%-4s %s  %s\n", cf_status_word(r->status), device, name);
    }
    fflush(f);
}

/* expected: the case must run on a CUDA device under GGMLX_TEST_REQUIRE_CUDA=1 (cf_cuda_expected) */
static void cf_count(const struct cf_options * opt, const struct cf_device * d, struct cf_result * r,
                     struct cf_summary * sum, bool expected) {
    if (r->status == CF_SKIP && opt->require_cuda && d != NULL && d->is_cuda && expected) {
        char why[CF_REASON_MAX];
        snprintf(why, sizeof why, "%s", r->reason);
        cf_set(r, CF_FAIL, "skipped on a CUDA device with GGMLX_TEST_REQUIRE_CUDA=1: %.200s", why);
    }
    switch (r->status) {
    case CF_OK: sum->passed++; break;
    case CF_SKIP: sum->skipped++; break;
    default: sum->failed++; break;
    }
}

/* ---- devices ------------------------------------------------------------------------------------ */

static bool cf_name_is(const char * a, const char * b) {
    for (; *a && *b; a++, b++) {
        if (tolower((unsigned char) *a) != tolower((unsigned char) *b)) {
            return false;
        }
    }
    return *a == *b;
}

static bool cf_device_is_cuda(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    const char * rn = reg ? ggml_backend_reg_name(reg) : NULL;
    const char * dn = ggml_backend_dev_name(dev);
    return (rn != NULL && cf_name_is(rn, "CUDA")) || (dn != NULL && strncmp(dn, "CUDA", 4) == 0);
}

static bool cf_selected(const struct cf_options * opt, const char * name) {
    return (opt->filter == NULL || strstr(name, opt->filter) != NULL) &&
           (opt->exclude == NULL || strstr(name, opt->exclude) == NULL);
}

/* the library's log, minus the errors that rule cases provoke on purpose */
static ggml_log_callback cf_prev_log;
static void *            cf_prev_log_data;

static void cf_log(enum ggml_log_level level, const char * text, void * data) {
    (void) data;
    if (atomic_load(&cf_quiet) || level < GGML_LOG_LEVEL_WARN) {
        return;
    }
    fputs(text, stderr);
}

/* watchdog hook: the program's main sets it to say which case is running */
static void (*cf_on_case_start)(const char * device, const char * name);

static void cf_run_device(const struct cf_options * opt, struct cf_device * d, const struct cf_case_list * cases,
                          struct cf_report * rep, struct cf_summary * sum) {
    struct cf_result r;
    const struct cf_summary before = *sum;
    int n = 0;
    for (int i = 0; i < CF_N_RULES; i++) {
        if (!cf_selected(opt, cf_rules[i].name)) {
            continue;
        }
        n++;
        if (cf_on_case_start) {
            cf_on_case_start(d->name, cf_rules[i].name);
        }
        cf_set(&r, CF_OK, "%s", "");
        cf_rules[i].fn(opt, d, &r);
        cf_count(opt, d, &r, sum, true);
        cf_report_case(rep, d->name, cf_rules[i].name, &r);
    }
    for (int i = 0; i < cases->n; i++) {
        if (!cf_selected(opt, cases->v[i].name)) {
            continue;
        }
        n++;
        if (cf_on_case_start) {
            cf_on_case_start(d->name, cases->v[i].name);
        }
        cf_run_op_case(opt, d, &cases->v[i], &r);
        cf_count(opt, d, &r, sum, cf_cuda_expected(&cases->v[i]));
        cf_report_case(rep, d->name, cases->v[i].name, &r);
    }
    sum->n_cases = n;
    if (opt->out != NULL && !opt->json) {
        fprintf(opt->out, "== %s (%s): %d cases: %d passed, %d failed, %d skipped\n", d->name,
                d->props.description ? d->props.description : "", n, sum->passed - before.passed,
                sum->failed - before.failed, sum->skipped - before.skipped);
    }
}

/*
 * Runs every selected case on every selected device and reports to opt->out.
 * Returns the number of failures (0: everything passed or was skipped).
 */
static int cf_run(const struct cf_options * opt, struct cf_summary * sum) {
    struct cf_case_list cases;
    struct cf_report    rep = { opt, true };
    struct cf_result    r;
    memset(sum, 0, sizeof *sum);
    atomic_store(&cf_quiet, 0);
    ggml_log_get(&cf_prev_log, &cf_prev_log_data);
    ggml_log_set(cf_log, NULL);

    /* backends built as modules (GGML_BACKEND_DL) register only when loaded; loading skips any
     * already registered, so this changes nothing in a static build */
    ggml_backend_load_all();
    const bool have_cases = cf_make_op_cases(&cases);
    const size_t n_dev = ggml_backend_dev_count();
    FILE * f = opt->out;
    if (f != NULL) {
        if (opt->json) {
            fprintf(f, "{\n  \"seed\": %" PRIu64 ",\n  \"devices\": [", opt->seed);
            int k = 0;
            for (size_t i = 0; i < n_dev; i++) {
                const char * name = ggml_backend_dev_name(ggml_backend_dev_get(i));
                if (opt->device == NULL || (name && cf_name_is(name, opt->device))) {
                    fprintf(f, "%s", k++ ? ", " : "");
                    cf_json_string(f, name ? name : "?");
                }
            }
            fprintf(f, "],\n  \"cases\": [");
        } else {
            fprintf(f, "ggml-conformance: seed %" PRIu64 " (--seed N to change), %zu device(s):", opt->seed, n_dev);
            for (size_t i = 0; i < n_dev; i++) {
                const char * name = ggml_backend_dev_name(ggml_backend_dev_get(i));
                fprintf(f, " %s", name ? name : "?");
            }
            fprintf(f, "\n");
        }
    }
    if (!have_cases) {
        cf_set(&r, CF_FAIL, "out of memory listing the cases");
        cf_count(opt, NULL, &r, sum, true);
        cf_report_case(&rep, "-", "case list", &r);
    }

    bool found_cuda = false;
    for (size_t i = 0; i < n_dev && have_cases; i++) {
        struct cf_device d;
        memset(&d, 0, sizeof d);
        d.dev  = ggml_backend_dev_get(i);
        d.name = d.dev ? ggml_backend_dev_name(d.dev) : NULL;
        if (d.name == NULL) {
            d.name = "?";
        }
        if (opt->device != NULL && !cf_name_is(d.name, opt->device)) {
            continue;
        }
        sum->n_devices++;
        d.is_cuda  = d.dev != NULL && cf_device_is_cuda(d.dev);
        found_cuda = found_cuda || d.is_cuda;
        if (d.dev != NULL) {
            ggml_backend_dev_get_props(d.dev, &d.props);
            d.buft    = ggml_backend_dev_buffer_type(d.dev);
            d.backend = ggml_backend_dev_init(d.dev, NULL);
        }
        if (d.backend == NULL || d.buft == NULL) {
            cf_set(&r, CF_FAIL, "%s: %s", d.backend == NULL ? "ggml_backend_dev_init" : "ggml_backend_dev_buffer_type",
                   cf_last_error());
            cf_count(opt, &d, &r, sum, true);
            cf_report_case(&rep, d.name, "device init", &r);
            ggml_backend_free(d.backend);
            continue;
        }
        cf_run_device(opt, &d, &cases, &rep, sum);
        ggml_backend_free(d.backend);
    }
    if (n_dev == 0) {
        cf_set(&r, CF_FAIL, "the registry found no device (GGML_BACKEND_DL build without modules?)");
        cf_count(opt, NULL, &r, sum, true);
        cf_report_case(&rep, "-", "device lookup", &r);
    } else if (opt->device != NULL && sum->n_devices == 0) {
        cf_set(&r, CF_FAIL, "no device named '%s' (ggml-devices lists them)", opt->device);
        cf_count(opt, NULL, &r, sum, true);
        cf_report_case(&rep, opt->device, "device lookup", &r);
    }
    if (opt->require_cuda && !found_cuda) {
        cf_set(&r, CF_FAIL, "GGMLX_TEST_REQUIRE_CUDA=1 but the registry found no CUDA device");
        cf_count(opt, NULL, &r, sum, true);
        cf_report_case(&rep, "-", "require CUDA", &r);
    }
    free(cases.v);

    if (f != NULL) {
        if (opt->json) {
            fprintf(f, "\n  ],\n  \"skipped\": %d,\n  \"passed\": %d,\n  \"failed\": %d\n}\n", sum->skipped, sum->passed,
                    sum->failed);
        } else {
            fprintf(f, "%d skipped\n%d passed, %d failed\n", sum->skipped, sum->passed, sum->failed);
        }
        fflush(f);
    }
    ggml_log_set(cf_prev_log, cf_prev_log_data);
    return sum->failed;
}

#ifdef GGMLX_CONFORMANCE_NO_MAIN

/* what the test suites start from: every device, the default seed or GGMLX_TEST_SEED's, each
 * case's line into the test log */
static struct cf_options cf_test_options(void) {
    struct cf_options o;
    memset(&o, 0, sizeof o);
    o.seed = CF_DEFAULT_SEED;
    const char * s = getenv("GGMLX_TEST_SEED");
    if (s != NULL) {
        o.seed = strtoull(s, NULL, 10);
    }
    o.out = stderr;
    return o;
}

#else

#include <signal.h>
#include <unistd.h>

/* A case that hangs (a wait that never returns) must not hang the GPU check script: after
 * CF_CASE_TIMEOUT seconds in one case, say which and exit with a failure. */
#define CF_CASE_TIMEOUT 120

static char cf_current[256];

static void cf_watch_case(const char * device, const char * name) {
    snprintf(cf_current, sizeof cf_current, "FAIL %s  %s: timed out after %d s\n", device, name, CF_CASE_TIMEOUT);
    alarm(CF_CASE_TIMEOUT);
}

static void cf_timeout(int sig) {
    (void) sig;
    static const char tail[] = "0 passed, 1 failed\n";
    const ssize_t w1 = write(STDOUT_FILENO, cf_current, strlen(cf_current));
    const ssize_t w2 = write(STDOUT_FILENO, tail, sizeof tail - 1);
    (void) w1;
    (void) w2;
    _exit(1);
}

static void cf_usage(FILE * f) {
    fprintf(f, "usage: ggml-conformance [--device NAME] [--filter SUBSTR] [--exclude SUBSTR] [--seed N] [--json] [--verbose] [--list]\n"
               "  every backend rule and op case on every device; last line: N passed, N failed\n"
               "  GGMLX_TEST_REQUIRE_CUDA=1: no CUDA device, or a skip on one of a case CUDA claims, is a failure\n");
}

int main(int argc, char ** argv) {
    struct cf_options opt;
    memset(&opt, 0, sizeof opt);
    opt.seed = CF_DEFAULT_SEED;
    opt.out  = stdout;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        const char * a = argv[i];
        if (strcmp(a, "--json") == 0) {
            opt.json = true;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            opt.verbose = true;
        } else if (strcmp(a, "--list") == 0) {
            list = true;
        } else if ((strcmp(a, "--device") == 0 || strcmp(a, "--filter") == 0 || strcmp(a, "--exclude") == 0 ||
                    strcmp(a, "--seed") == 0) && i + 1 < argc) {
            const char * v = argv[++i];
            if (a[2] == 'd') {
                opt.device = v;
            } else if (a[2] == 'f') {
                opt.filter = v;
            } else if (a[2] == 'e') {
                opt.exclude = v;
            } else {
                char * end = NULL;
                opt.seed = strtoull(v, &end, 10);
                if (end == v || *end != '\0') {
                    fprintf(stderr, "ggml-conformance: --seed needs a number, got '%s'\n", v);
                    return 2;
                }
            }
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cf_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "ggml-conformance: unknown argument '%s'\n", a);
            cf_usage(stderr);
            return 2;
        }
    }
    const char * rc = getenv("GGMLX_TEST_REQUIRE_CUDA");
    opt.require_cuda = rc != NULL && strcmp(rc, "1") == 0;

    if (list) {
        struct cf_case_list cases;
        if (!cf_make_op_cases(&cases)) {
            free(cases.v);
            fprintf(stderr, "ggml-conformance: out of memory\n");
            return 1;
        }
        for (int i = 0; i < CF_N_RULES; i++) {
            if (cf_selected(&opt, cf_rules[i].name)) {
                printf("%s\n", cf_rules[i].name);
            }
        }
        for (int i = 0; i < cases.n; i++) {
            if (cf_selected(&opt, cases.v[i].name)) {
                printf("%s\n", cases.v[i].name);
            }
        }
        free(cases.v);
        return 0;
    }

    signal(SIGALRM, cf_timeout);
    cf_on_case_start = cf_watch_case;
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    alarm(0);
    return failed == 0 ? 0 : 1;
}

#endif /* GGMLX_CONFORMANCE_NO_MAIN */
