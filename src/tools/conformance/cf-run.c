/*
 * cf-run.c -- the conformance runner (see cf-run.h): each case on each device, the report, the
 * summary. The parts are in this directory: the op cases are listed in cf-cases.h, build their
 * graphs in cf-build.h and have double-precision references in cf-ref.h; cf-exec.h runs one
 * (guard bytes around every tensor); the backend rules are in cf-rules-memory.h and
 * cf-rules-queue.h (listed in cf-rules.h). Those headers are included here only.
 */
/* nanosleep: POSIX (the build defines _GNU_SOURCE; this is for builds that do not) */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "cf-run.h"

#include "cf-common.h"
#include "cf-cases.h"
#include "cf-build.h"
#include "cf-ref.h"
#include "cf-exec.h"
#include "cf-rules.h"

#include <ctype.h>
#include <inttypes.h>

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
    case CF_SKIP:
        sum->skipped++;
        sum->skipped_unclaimed += d != NULL && d->is_cuda && !expected;
        break;
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

bool cf_device_is_cuda(ggml_backend_dev_t dev) {
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

static void (*cf_on_case_start)(const char * device, const char * name);

void cf_set_case_hook(void (*fn)(const char * device, const char * name)) {
    cf_on_case_start = fn;
}

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
int cf_run(const struct cf_options * opt, struct cf_summary * sum) {
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

int cf_list(const struct cf_options * opt, FILE * out) {
    struct cf_case_list cases;
    if (!cf_make_op_cases(&cases)) {
        free(cases.v);
        fprintf(stderr, "ggml-conformance: out of memory\n");
        return 1;
    }
    for (int i = 0; i < CF_N_RULES; i++) {
        if (cf_selected(opt, cf_rules[i].name)) {
            fprintf(out, "%s\n", cf_rules[i].name);
        }
    }
    for (int i = 0; i < cases.n; i++) {
        if (cf_selected(opt, cases.v[i].name)) {
            fprintf(out, "%s\n", cases.v[i].name);
        }
    }
    free(cases.v);
    return 0;
}


struct cf_options cf_test_options(void) {
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
