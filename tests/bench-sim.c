/*
 * bench-sim.c -- what a hop and a copy between two simulated devices cost.
 *
 *   bench-sim [--quick] [--json] [--iters N]
 *
 * set + event hop: tensor_set_async of 1 KiB on SIM0, event_record on SIM0, event_wait on
 * SIM1, synchronize SIM1: one cross-device dependency carrying a little data, as a scheduler
 * makes between splits (microseconds per hop; median, 10th and 90th percentiles).
 * event hop: the same without the set (the cost of the record/wait pair alone).
 * copy SIM0 -> SIM1: ggml_backend_tensor_copy_async of 1, 16 and 64 MiB, then synchronize
 * SIM1; bandwidth in GB/s (10^9 bytes per second) at the median time.
 * Two SIM devices are configured here (one compute thread each, chaos delays off). Each
 * measurement is timed per iteration after a warm-up. --quick runs few iterations (a smoke
 * run); --json prints JSON instead of a markdown table.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "bench-util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOP_BYTES 1024

struct result {
    char   name[64];
    size_t bytes;
    int    iters;
    double median_us, p10_us, p90_us;
    double gbps; /* < 0: not a bandwidth */
};

static struct result g_results[16];
static int           g_n_results;

static const char * why(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "?";
}

static void add_result(const char * name, size_t bytes, double * t, int n, bool bandwidth) {
    const struct bench_stats st = bench_stats_of(t, n);
    struct result * r = &g_results[g_n_results++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->bytes     = bytes;
    r->iters     = n;
    r->median_us = st.median;
    r->p10_us    = st.p10;
    r->p90_us    = st.p90;
    r->gbps      = bandwidth ? (double) bytes / (r->median_us * 1e3) : -1.0;
}

typedef void (*op_fn)(void * arg);

/* per-iteration times of fn(arg), after warm-up iterations */
static void time_op(const char * name, size_t bytes, bool bandwidth, op_fn fn, void * arg, int iters) {
    double * t = malloc((size_t) iters * sizeof *t);
    if (t == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int i = 0; i < iters / 10 + 1; i++) {
        fn(arg);
    }
    for (int i = 0; i < iters; i++) {
        const double t0 = bench_now_us();
        fn(arg);
        t[i] = bench_now_us() - t0;
    }
    add_result(name, bytes, t, iters, bandwidth);
    free(t);
}

static ggml_backend_t sim(const char * name) {
    ggml_backend_t b = ggml_backend_init_by_name(name, NULL);
    if (b == NULL) {
        fprintf(stderr, "cannot start %s: %s\n", name, why());
        exit(1);
    }
    return b;
}

/* ---- the hop ------------------------------------------------------------------------------- */

struct hop_arg {
    ggml_backend_t       a, b;
    ggml_backend_event_t ev;
    struct ggml_tensor * t;    /* on SIM0 */
    float                host[HOP_BYTES / sizeof(float)];
    bool                 with_set;
};

static void hop(void * p) {
    struct hop_arg * h = p;
    if (h->with_set) {
        ggml_backend_tensor_set_async(h->a, h->t, h->host, 0, sizeof h->host);
    }
    ggml_backend_event_record(h->ev, h->a);
    ggml_backend_event_wait(h->b, h->ev);
    ggml_backend_synchronize(h->b);
}

/* ---- the copy ------------------------------------------------------------------------------ */

struct copy_arg {
    ggml_backend_t       a, b;
    struct ggml_tensor * src, * dst;
};

static void copy(void * p) {
    struct copy_arg * c = p;
    ggml_backend_tensor_copy_async(c->a, c->b, c->src, c->dst);
    ggml_backend_synchronize(c->b);
}

/* one copy of `bytes` from SIM0 to SIM1, timed, then the copy checked at a few places */
static void bench_copy(ggml_backend_t a, ggml_backend_t b, size_t bytes, int iters) {
    struct ggml_init_params ip = { 4 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ca = ggml_init(ip), * cb = ggml_init(ip);
    const int64_t n = (int64_t) (bytes / sizeof(float));
    struct copy_arg c = { a, b, ggml_new_tensor_1d(ca, GGML_TYPE_F32, n), ggml_new_tensor_1d(cb, GGML_TYPE_F32, n) };
    ggml_backend_buffer_t ba = ggml_backend_alloc_ctx_tensors(ca, a);
    ggml_backend_buffer_t bb = ggml_backend_alloc_ctx_tensors(cb, b);
    if (ba == NULL || bb == NULL) {
        fprintf(stderr, "cannot allocate 2 x %zu bytes on the SIM devices: %s\n", bytes, why());
        exit(1);
    }
    float * v = malloc(bytes);
    if (v == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float) (i % 4099);
    }
    ggml_backend_tensor_set(c.src, v, 0, bytes);
    ggml_backend_buffer_clear(bb, 0);

    char name[64];
    snprintf(name, sizeof name, "copy SIM0 -> SIM1, %zu MiB", bytes >> 20);
    time_op(name, bytes, true, copy, &c, iters);

    const int64_t probe[3] = { 0, n / 2 + 1, n - 1 };
    for (int k = 0; k < 3; k++) {
        float got = -1.0f;
        ggml_backend_tensor_get(c.dst, &got, (size_t) probe[k] * sizeof(float), sizeof got);
        if (got != v[probe[k]]) {
            fprintf(stderr, "copy check failed at [%lld]: %g, want %g\n", (long long) probe[k], got, v[probe[k]]);
            exit(1);
        }
    }
    free(v);
    ggml_backend_buffer_free(ba);
    ggml_backend_buffer_free(bb);
    ggml_free(ca);
    ggml_free(cb);
}

/* ---- output -------------------------------------------------------------------------------- */

static void print_markdown(void) {
    printf("| operation | bytes | iterations | median (us) | p10 (us) | p90 (us) | GB/s at median |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("| %s | %zu | %d | %.2f | %.2f | %.2f | ", r->name, r->bytes, r->iters, r->median_us, r->p10_us,
               r->p90_us);
        if (r->gbps < 0) {
            printf("- |\n");
        } else {
            printf("%.2f |\n", r->gbps);
        }
    }
}

static void print_json(void) {
    printf("{\n  \"benchmark\": \"bench-sim\",\n  \"build\": \"%s\",\n  \"results\": [\n", ggmlx_build_info());
    for (int i = 0; i < g_n_results; i++) {
        const struct result * r = &g_results[i];
        printf("    {\"name\": \"%s\", \"bytes\": %zu, \"iterations\": %d, \"median_us\": %.3f, \"p10_us\": %.3f, "
               "\"p90_us\": %.3f", r->name, r->bytes, r->iters, r->median_us, r->p10_us, r->p90_us);
        if (r->gbps >= 0) {
            printf(", \"gb_per_s\": %.3f", r->gbps);
        }
        printf("}%s\n", i + 1 < g_n_results ? "," : "");
    }
    printf("  ]\n}\n");
}

int main(int argc, char ** argv) {
    bool json  = false;
    int  iters = 20000;
    if (!bench_parse_args(argc, argv, &json, &iters)) {
        return 2;
    }
    if (getenv("GGMLX_SIM_CHAOS") != NULL) {
        fprintf(stderr, "note: GGMLX_SIM_CHAOS is ignored here; the benchmark runs without delays\n");
    }
    const struct ggmlx_sim_config cfg = {
        .n_devices    = 2,
        .memory_limit = (size_t) 512 << 20,
        .n_threads    = 1,
        .chaos_seed   = 0,
    };
    if (!ggmlx_sim_configure(&cfg)) {
        fprintf(stderr, "ggmlx_sim_configure: %s\n", why());
        return 1;
    }
    ggml_backend_t a = sim("SIM0"), b = sim("SIM1");

    struct ggml_init_params ip = { 2 * ggml_tensor_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct hop_arg * h = calloc(1, sizeof *h);
    h->a  = a;
    h->b  = b;
    h->ev = ggml_backend_event_new(ggml_backend_get_device(a));
    h->t  = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, HOP_BYTES / sizeof(float));
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, a);
    if (h->ev == NULL || buf == NULL) {
        fprintf(stderr, "cannot set up the hop: %s\n", why());
        return 1;
    }
    h->with_set = true;
    time_op("set 1 KiB + event hop SIM0 -> SIM1", HOP_BYTES, false, hop, h, iters);
    h->with_set = false;
    time_op("event hop SIM0 -> SIM1 (record + wait)", 0, false, hop, h, iters);

    /* a copy takes milliseconds where a hop takes microseconds: fewer iterations, at least 5 */
    const size_t mib[3] = { 1, 16, 64 };
    for (int k = 0; k < 3; k++) {
        int n = iters / (int) (20 * mib[k]);
        bench_copy(a, b, mib[k] << 20, n < 5 ? 5 : n > 500 ? 500 : n);
    }

    if (json) {
        print_json();
    } else {
        print_markdown();
    }
    ggml_backend_event_free(h->ev);
    free(h);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(a);
    ggml_backend_free(b);
    return 0;
}
