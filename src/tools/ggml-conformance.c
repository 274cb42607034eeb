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
 * The runner is in conformance/ (cf-run.h); this file is its command line and its watchdog.
 */
/* alarm: POSIX (the build defines _GNU_SOURCE; this is for builds that do not) */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "conformance/cf-run.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
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
        return cf_list(&opt, stdout);
    }

    signal(SIGALRM, cf_timeout);
    cf_set_case_hook(cf_watch_case);
    struct cf_summary sum;
    const int failed = cf_run(&opt, &sum);
    alarm(0);
    return failed == 0 ? 0 : 1;
}
