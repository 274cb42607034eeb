/*
 * bench-soak-sim.c -- a chaos soak of the simulated devices: random multi-device pipelines under
 * random queue delays, every result checked. Not a CTest test (CI runs fixed seeds; this one
 * uses a new seed each run unless told). See docs/sim.md, "Soak".
 *
 *   bench-soak-sim [--seed S] [--iterations N] [--devices D] [--window W] [--no-chaos] [--verbose]
 *
 * Each iteration sends a vector of random length through a route of 1 to 6 stages, each on a
 * random backend (SIM0..SIM{D-1} or the CPU, repeats allowed). A stage computes 1 to 3 ops
 * (scale, add the device's bias) into tensors allocated for this iteration; between stages the
 * data moves by a random method: ggml_backend_tensor_copy_async; get_async into host memory +
 * event record / wait + set_async; straight through the CPU's host memory behind an event; or
 * synchronize + a blocking ggml_backend_tensor_copy. The last stage reads the result back and
 * records an event. Up to W iterations are in flight; the oldest is then waited for, compared
 * with the same arithmetic done on the host, and its buffers and contexts freed. Some iterations
 * hold a random queue while they are enqueued. The SIM queues sleep 0-200 us before every task
 * (GGMLX_SIM_CHAOS, seeded from --seed). A watchdog ends the run when nothing completes for 60 s.
 *
 * Exit status: 0 when every result matched, 1 on a mismatch, a queue error or a hang, 2 on
 * bad arguments. The seed is printed first; --seed replays the same pipelines (the delays, and
 * so the interleavings, differ from run to run by nature).
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx-backend.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_BACKENDS (GGMLX_SIM_MAX_DEVICES + 1)
#define MAX_STAGES   6
#define MAX_OPS      3
#define MAX_WINDOW   64

enum method { M_COPY_ASYNC, M_STAGING, M_HOST_DIRECT, M_BLOCKING, M_COUNT };

static const char * const method_names[M_COUNT] = { "copy_async", "staging", "host-direct", "blocking" };

/* ---- random numbers ------------------------------------------------------------------------ */

static uint64_t g_rng;

static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int rnd_below(int n) {
    return (int) (rnd() % (uint64_t) n);
}

static float rnd_unit(void) { /* [-1, 1) */
    return (float) ((double) (rnd() >> 40) / 8388608.0 - 1.0);
}

/* ---- devices ------------------------------------------------------------------------------- */

struct dev {
    ggml_backend_t        b;
    bool                  is_cpu;
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * bias; /* one element, broadcast by ggml_add */
    float                 bias_value;
};

static struct dev g_dev[MAX_BACKENDS];
static int        g_n_dev;
static bool       g_verbose;

static const char * why(void) {
    return ggmlx_last_error() ? ggmlx_last_error() : "?";
}

static void dev_init(struct dev * d, ggml_backend_t b, float bias) {
    d->b      = b;
    d->is_cpu = !ggmlx_backend_is_sim(b);
    struct ggml_init_params ip = { ggml_tensor_overhead(), NULL, true };
    d->ctx  = ggml_init(ip);
    d->bias = ggml_new_tensor_1d(d->ctx, GGML_TYPE_F32, 1);
    d->buf  = ggml_backend_alloc_ctx_tensors(d->ctx, b);
    if (d->buf == NULL) {
        fprintf(stderr, "soak: cannot allocate on %s: %s\n", ggml_backend_name(b), why());
        exit(1);
    }
    d->bias_value = bias;
    ggml_backend_tensor_set(d->bias, &bias, 0, sizeof bias);
}

/* ---- one iteration ------------------------------------------------------------------------- */

enum op_kind { OP_SCALE, OP_ADD_BIAS };

struct op {
    enum op_kind kind;
    float        scale;
};

struct stage {
    int                   dev;
    int                   n_ops;
    struct op             ops[MAX_OPS];
    enum method           method; /* how the data came in (stages after the first) */
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * in, * out;
    float               * staging;
};

struct iter {
    long                 id;
    int64_t              n;
    int                  n_stages;
    struct stage         st[MAX_STAGES];
    float              * in_host, * out_host;
    ggml_backend_event_t done;
    int                  held; /* backend held while enqueueing, -1: none */
};

static long     g_counts[M_COUNT];
static long     g_n_stages_total;
static atomic_long g_completed;

static float apply_host(float v, const struct op * op, float bias) {
    return op->kind == OP_SCALE ? v * op->scale : v + bias;
}

static void plan(struct iter * it, long id) {
    memset(it, 0, sizeof *it);
    it->id = id;
    const int size_class = rnd_below(100);
    it->n = size_class < 70 ? 1 + rnd_below(1024) : size_class < 95 ? 1025 + rnd_below(65536 - 1024) :
                                                                      65537 + rnd_below(196608);
    it->n_stages = 1 + rnd_below(MAX_STAGES);
    it->held     = rnd_below(10) == 0 ? rnd_below(g_n_dev) : -1;
    for (int k = 0; k < it->n_stages; k++) {
        struct stage * s = &it->st[k];
        s->dev   = rnd_below(g_n_dev);
        s->n_ops = 1 + rnd_below(MAX_OPS);
        for (int o = 0; o < s->n_ops; o++) {
            static const float scales[4] = { 0.5f, 2.0f, -1.0f, 1.5f };
            s->ops[o].kind  = rnd_below(2) == 0 ? OP_SCALE : OP_ADD_BIAS;
            s->ops[o].scale = scales[rnd_below(4)];
        }
        s->method = (enum method) rnd_below(M_COUNT);
        if (s->method == M_BLOCKING && it->held >= 0) {
            s->method = M_COPY_ASYNC; /* a blocking copy synchronizes: never with a queue held */
        }
    }
}

static void build_stage(struct iter * it, struct stage * s) {
    const struct dev * d = &g_dev[s->dev];
    struct ggml_init_params ip = { (MAX_OPS + 2) * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    s->ctx = ggml_init(ip);
    if (s->ctx == NULL) {
        fprintf(stderr, "soak: out of memory\n");
        exit(1);
    }
    s->in = ggml_new_tensor_1d(s->ctx, GGML_TYPE_F32, it->n);
    struct ggml_tensor * cur = s->in;
    for (int o = 0; o < s->n_ops; o++) {
        cur = s->ops[o].kind == OP_SCALE ? ggml_scale(s->ctx, cur, s->ops[o].scale) : ggml_add(s->ctx, cur, d->bias);
    }
    s->out = cur;
    s->buf = ggml_backend_alloc_ctx_tensors(s->ctx, d->b);
    if (s->buf == NULL) {
        fprintf(stderr, "soak: iteration %ld: cannot allocate %" PRId64 " floats on %s: %s\n", it->id, it->n,
                ggml_backend_name(d->b), why());
        exit(1);
    }
}

static void compute_stage(struct iter * it, struct stage * s) {
    struct ggml_cgraph * g = ggml_new_graph(s->ctx);
    ggml_build_forward_expand(g, s->out);
    const enum ggml_status st = ggml_backend_graph_compute_async(g_dev[s->dev].b, g);
    if (st != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "soak: iteration %ld: graph_compute_async on %s: %s (%s)\n", it->id,
                ggml_backend_name(g_dev[s->dev].b), ggml_status_to_string(st), why());
        exit(1);
    }
}

static void event_hop(ggml_backend_t from, ggml_backend_t to) {
    ggml_backend_event_t ev = ggml_backend_event_new(ggml_backend_get_device(from));
    if (ev == NULL) {
        fprintf(stderr, "soak: event_new: %s\n", why());
        exit(1);
    }
    ggml_backend_event_record(ev, from);
    ggml_backend_event_wait(to, ev);
    ggml_backend_event_free(ev); /* the queued record and wait keep it alive */
}

/* moves prev->out into s->in by s->method */
static void transfer(struct iter * it, struct stage * prev, struct stage * s) {
    ggml_backend_t from = g_dev[prev->dev].b, to = g_dev[s->dev].b;
    const size_t   bytes = (size_t) it->n * sizeof(float);
    enum method    m     = s->method;
    if (m == M_HOST_DIRECT && !g_dev[prev->dev].is_cpu && !g_dev[s->dev].is_cpu) {
        m = M_STAGING; /* no host memory on either side */
    }
    g_counts[m]++;
    switch (m) {
    case M_COPY_ASYNC:
        ggml_backend_tensor_copy_async(from, to, prev->out, s->in);
        break;
    case M_STAGING:
        s->staging = malloc(bytes);
        if (s->staging == NULL) {
            fprintf(stderr, "soak: out of memory\n");
            exit(1);
        }
        ggml_backend_tensor_get_async(from, prev->out, s->staging, 0, bytes);
        event_hop(from, to);
        ggml_backend_tensor_set_async(to, s->in, s->staging, 0, bytes);
        break;
    case M_HOST_DIRECT:
        if (g_dev[s->dev].is_cpu) {
            /* the source writes straight into the CPU tensor; the CPU waits for it */
            ggml_backend_tensor_get_async(from, prev->out, s->in->data, 0, bytes);
            event_hop(from, to);
        } else {
            /* the destination reads straight from the CPU tensor once the CPU has made it */
            event_hop(from, to);
            ggml_backend_tensor_set_async(to, s->in, prev->out->data, 0, bytes);
        }
        break;
    case M_BLOCKING:
        ggml_backend_synchronize(from);
        ggml_backend_tensor_copy(prev->out, s->in); /* s->in is new: no queue uses it yet */
        break;
    case M_COUNT:
        break;
    }
}

static void enqueue(struct iter * it) {
    const size_t bytes = (size_t) it->n * sizeof(float);
    it->in_host  = malloc(bytes);
    it->out_host = malloc(bytes);
    if (it->in_host == NULL || it->out_host == NULL) {
        fprintf(stderr, "soak: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < it->n; i++) {
        it->in_host[i]  = rnd_unit();
        it->out_host[i] = NAN;
    }
    for (int k = 0; k < it->n_stages; k++) {
        build_stage(it, &it->st[k]);
    }
    if (it->held >= 0) {
        ggmlx_backend_queue_hold(g_dev[it->held].b);
    }
    ggml_backend_t first = g_dev[it->st[0].dev].b;
    if (rnd_below(2) == 0) {
        ggml_backend_tensor_set_async(first, it->st[0].in, it->in_host, 0, bytes);
    } else {
        ggml_backend_tensor_set(it->st[0].in, it->in_host, 0, bytes); /* new tensor: nothing queued uses it */
    }
    for (int k = 0; k < it->n_stages; k++) {
        if (k > 0) {
            transfer(it, &it->st[k - 1], &it->st[k]);
        }
        compute_stage(it, &it->st[k]);
    }
    struct stage * last = &it->st[it->n_stages - 1];
    ggml_backend_t lb   = g_dev[last->dev].b;
    ggml_backend_tensor_get_async(lb, last->out, it->out_host, 0, bytes);
    it->done = ggml_backend_event_new(ggml_backend_get_device(lb));
    if (it->done == NULL) {
        fprintf(stderr, "soak: event_new: %s\n", why());
        exit(1);
    }
    ggml_backend_event_record(it->done, lb);
    if (it->held >= 0) {
        ggmlx_backend_queue_release(g_dev[it->held].b);
    }
    g_n_stages_total += it->n_stages;
}

static void describe(const struct iter * it) {
    fprintf(stderr, "  iteration %ld: %" PRId64 " floats, route:", it->id, it->n);
    for (int k = 0; k < it->n_stages; k++) {
        const struct stage * s = &it->st[k];
        fprintf(stderr, " %s%s[", k > 0 ? "-" : "", k > 0 ? method_names[s->method] : "");
        for (int o = 0; o < s->n_ops; o++) {
            if (s->ops[o].kind == OP_SCALE) {
                fprintf(stderr, "%s*%g", o ? "," : "", (double) s->ops[o].scale);
            } else {
                fprintf(stderr, "%s+bias", o ? "," : "");
            }
        }
        fprintf(stderr, "]@%s", ggml_backend_name(g_dev[s->dev].b));
    }
    fprintf(stderr, "%s%s\n", it->held >= 0 ? ", held " : "", it->held >= 0 ? ggml_backend_name(g_dev[it->held].b) : "");
}

/* waits for it, checks it against the host's arithmetic, frees it; false on a mismatch */
static bool complete(struct iter * it) {
    ggml_backend_event_synchronize(it->done);
    bool ok = true;
    for (int64_t i = 0; i < it->n && ok; i++) {
        float v = it->in_host[i];
        for (int k = 0; k < it->n_stages; k++) {
            const struct stage * s = &it->st[k];
            for (int o = 0; o < s->n_ops; o++) {
                v = apply_host(v, &s->ops[o], g_dev[s->dev].bias_value);
            }
        }
        const float got = it->out_host[i];
        if (!(fabsf(got - v) <= 1e-5f * fabsf(v) + 1e-6f)) {
            fprintf(stderr, "soak: MISMATCH in iteration %ld at [%" PRId64 "]: %.9g, want %.9g\n", it->id, i,
                    (double) got, (double) v);
            describe(it);
            ok = false;
        }
    }
    if (ok && g_verbose) {
        describe(it);
    }
    ggml_backend_event_free(it->done);
    for (int k = 0; k < it->n_stages; k++) {
        ggml_backend_buffer_free(it->st[k].buf);
        ggml_free(it->st[k].ctx);
        free(it->st[k].staging);
    }
    free(it->in_host);
    free(it->out_host);
    atomic_fetch_add(&g_completed, 1);
    return ok;
}

/* ---- watchdog ------------------------------------------------------------------------------ */

static void * watchdog(void * arg) {
    (void) arg;
    long last = -1;
    int  still = 0;
    for (;;) {
        sleep(1);
        const long now = atomic_load(&g_completed);
        still = now == last ? still + 1 : 0;
        last  = now;
        if (still >= 60) {
            fprintf(stderr, "soak: HANG: no iteration completed for 60 s (after %ld); pending tasks:", now);
            for (int d = 0; d < g_n_dev; d++) {
                fprintf(stderr, " %s=%zu", ggml_backend_name(g_dev[d].b), ggmlx_backend_queue_pending(g_dev[d].b));
            }
            fprintf(stderr, "\n");
            _exit(1);
        }
    }
    return NULL;
}

/* ---- main ---------------------------------------------------------------------------------- */

static uint64_t random_seed(void) {
    uint64_t s = 0;
    FILE * f = fopen("/dev/urandom", "rb");
    if (f != NULL) {
        if (fread(&s, sizeof s, 1, f) != 1) {
            s = 0;
        }
        fclose(f);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s ^= (uint64_t) ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t) ts.tv_sec ^ (uint64_t) getpid() << 32;
    return s != 0 ? s : 1;
}

static void usage(const char * argv0) {
    fprintf(stderr, "usage: %s [--seed S] [--iterations N] [--devices D] [--window W] [--no-chaos] [--verbose]\n",
            argv0);
}

int main(int argc, char ** argv) {
    uint64_t seed       = 0;
    long     iterations = 2000;
    int      n_sim      = 2;
    int      window     = 4;
    bool     chaos      = true;
    for (int i = 1; i < argc; i++) {
        const bool has_value = i + 1 < argc;
        if (strcmp(argv[i], "--seed") == 0 && has_value) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--iterations") == 0 && has_value) {
            iterations = atol(argv[++i]);
        } else if (strcmp(argv[i], "--devices") == 0 && has_value) {
            n_sim = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--window") == 0 && has_value) {
            window = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--no-chaos") == 0) {
            chaos = false;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            g_verbose = true;
        } else {
            usage(argv[0]);
            return 2;
        }
    }
    if (iterations < 1 || n_sim < 1 || n_sim > GGMLX_SIM_MAX_DEVICES || window < 1 || window > MAX_WINDOW) {
        fprintf(stderr, "bad arguments: iterations >= 1, devices 1..%d, window 1..%d\n", GGMLX_SIM_MAX_DEVICES,
                MAX_WINDOW);
        usage(argv[0]);
        return 2;
    }
    if (seed == 0) {
        seed = random_seed();
    }
    printf("soak: seed %" PRIu64 " (replay with --seed %" PRIu64 "), %d SIM devices + CPU, %ld iterations, "
           "window %d, chaos %s\n", seed, seed, n_sim, iterations, window, chaos ? "on" : "off");
    fflush(stdout);
    g_rng = seed;

    const struct ggmlx_sim_config cfg = {
        .n_devices    = n_sim,
        .memory_limit = 0,
        .n_threads    = 1,
        .chaos_seed   = chaos ? seed : 0,
    };
    if (!ggmlx_sim_configure(&cfg)) {
        fprintf(stderr, "soak: ggmlx_sim_configure: %s\n", why());
        return 1;
    }
    for (int d = 0; d < n_sim; d++) {
        char name[16];
        snprintf(name, sizeof name, "SIM%d", d);
        ggml_backend_t b = ggml_backend_init_by_name(name, NULL);
        if (b == NULL) {
            fprintf(stderr, "soak: cannot start %s: %s\n", name, why());
            return 1;
        }
        dev_init(&g_dev[g_n_dev++], b, 0.25f * (float) (d + 1));
    }
    ggml_backend_t c = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, NULL);
    if (c == NULL) {
        fprintf(stderr, "soak: cannot start the CPU backend: %s\n", why());
        return 1;
    }
    dev_init(&g_dev[g_n_dev++], c, -0.125f);

    pthread_t wd;
    if (pthread_create(&wd, NULL, watchdog, NULL) != 0) {
        fprintf(stderr, "soak: cannot start the watchdog\n");
        return 1;
    }
    pthread_detach(wd);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static struct iter ring[MAX_WINDOW];
    long failures = 0;
    for (long i = 0; i < iterations + window; i++) {
        struct iter * it = &ring[i % window];
        if (i >= window && !complete(it)) {
            failures++;
        }
        if (i < iterations) {
            plan(it, i);
            enqueue(it);
            if (rnd_below(20) == 0) {
                ggml_backend_synchronize(g_dev[rnd_below(g_n_dev)].b); /* a stray synchronize changes nothing */
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);

    for (int d = 0; d < g_n_dev; d++) {
        ggml_backend_synchronize(g_dev[d].b);
        const enum ggml_status st = ggmlx_backend_get_status(g_dev[d].b);
        if (st != GGML_STATUS_SUCCESS) {
            fprintf(stderr, "soak: %s has a queued error: %s\n", ggml_backend_name(g_dev[d].b), ggml_status_to_string(st));
            failures++;
        }
    }
    const double secs = (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec);
    printf("soak: %ld iterations, %ld stages, transfers:", iterations, g_n_stages_total);
    for (int m = 0; m < M_COUNT; m++) {
        printf(" %s %ld", method_names[m], g_counts[m]);
    }
    printf("; %.1f s\n", secs);
    for (int d = 0; d < g_n_dev; d++) {
        ggml_backend_free(g_dev[d].b);
        ggml_backend_buffer_free(g_dev[d].buf);
        ggml_free(g_dev[d].ctx);
    }
    if (failures > 0) {
        printf("soak: FAILED (%ld failures; seed %" PRIu64 ")\n", failures, seed);
        return 1;
    }
    printf("soak: ok\n");
    return 0;
}
