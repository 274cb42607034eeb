/*
 * sched-async-net.h -- what tests/test-sched-async.c builds on: a chain of stages over SIM
 * devices scheduled with the CPU, one graph per computation (as llama.cpp builds one per batch),
 * a host reference in double precision, and the queue helpers (settle, helper threads) that
 * force interleavings without sleeping on a guess.
 *
 * The network: out = S_n(...S_1(x)), S_s(h) = scale(W_s h, 1/8), W_s a D x D weight in a
 * WEIGHTS buffer of SIM s, x a [D, M] graph input (the scheduler places it on the CPU, in an
 * input slot). Each stage's result is flagged as an output, so any of them may be fetched.
 */
#ifndef GGMLX_SCHED_ASYNC_NET_H
#define GGMLX_SCHED_ASYNC_NET_H

#include <criterion/criterion.h>

#include "test-queues.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define D          64  /* width of every stage */
#define M          4   /* columns (tokens) of an input */
#define MAX_STAGES 3
#define SENTINEL   -1.0e30f /* in host memory an output has not been written to yet */

/* ---- helpers ------------------------------------------------------------------------------- */

/* fn(arg) on a helper thread, so a call that may block the host cannot hang the test */
struct helper {
    void      (*fn)(void *);
    void       * arg;
    atomic_bool  done;
    pthread_t    thread;
};

static inline void * helper_main(void * p) {
    struct helper * h = p;
    h->fn(h->arg);
    atomic_store(&h->done, true);
    return NULL;
}

static inline struct helper * start_helper(void (*fn)(void *), void * arg) {
    struct helper * h = calloc(1, sizeof *h);
    cr_assert_not_null(h);
    h->fn  = fn;
    h->arg = arg;
    atomic_init(&h->done, false);
    cr_assert_eq(pthread_create(&h->thread, NULL, helper_main, h), 0);
    return h;
}

/* true when the helper returned within `ms`; joined and freed then, left running otherwise */
static inline bool helper_done_within(struct helper * h, int ms) {
    for (int i = 0; i < ms * 10; i++) {
        if (atomic_load(&h->done)) {
            pthread_join(h->thread, NULL);
            free(h);
            return true;
        }
        nap_us(100);
    }
    return false;
}

/* ---- the network: weights on SIM devices, a scheduler over them and the CPU ---------------- */

struct net {
    int                   n_stages;
    ggml_backend_t        backends[MAX_STAGES + 1]; /* SIM0..SIMn-1, then the CPU */
    int                   n_backends;
    struct ggml_context * wctx[MAX_STAGES];
    ggml_backend_buffer_t wbuf[MAX_STAGES];
    struct ggml_tensor  * w[MAX_STAGES];
    float                 hw[MAX_STAGES][D * D];
    ggml_backend_sched_t  sched;
};

static inline ggml_backend_t net_cpu(const struct net * n) {
    return n->backends[n->n_stages];
}

/* stage s's weights on SIM s, in a buffer marked as weights so the matmul goes where they are */
static inline void net_init(struct net * n, int n_stages, bool parallel) {
    memset(n, 0, sizeof *n);
    n->n_stages   = n_stages;
    n->n_backends = n_stages + 1;
    for (int s = 0; s < n_stages; s++) {
        n->backends[s] = sim(s);
        struct ggml_init_params p = { 4 * ggml_tensor_overhead(), NULL, true };
        n->wctx[s] = ggml_init(p);
        cr_assert_not_null(n->wctx[s]);
        n->w[s] = ggml_new_tensor_2d(n->wctx[s], GGML_TYPE_F32, D, D);
        ggml_format_name(n->w[s], "w%d", s);
        n->wbuf[s] = ggml_backend_alloc_ctx_tensors(n->wctx[s], n->backends[s]);
        cr_assert_not_null(n->wbuf[s], "%s", last_error());
        ggml_backend_buffer_set_usage(n->wbuf[s], GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        for (int i = 0; i < D * D; i++) {
            n->hw[s][i] = cosf(0.37f * (float) i + 1.1f * (float) s) * sinf(0.013f * (float) i + (float) s);
        }
        ggml_backend_tensor_set(n->w[s], n->hw[s], 0, sizeof n->hw[s]);
    }
    n->backends[n_stages] = cpu();
    n->sched = ggml_backend_sched_new(n->backends, NULL, n->n_backends, 256, parallel, false);
    cr_assert_not_null(n->sched, "ggml_backend_sched_new: %s", last_error());
}

static inline void net_free(struct net * n) {
    ggml_backend_sched_free(n->sched);
    for (int s = 0; s < n->n_stages; s++) {
        ggml_backend_buffer_free(n->wbuf[s]);
        ggml_free(n->wctx[s]);
    }
    for (int i = 0; i < n->n_backends; i++) {
        ggml_backend_free(n->backends[i]);
    }
}

/* the input of computation k: different for every k, so a stale value is seen */
static inline void input_of(int k, float * x) {
    for (int i = 0; i < D * M; i++) {
        x[i] = sinf(0.21f * (float) i + 0.9f * (float) k + 0.3f);
    }
}

/* host reference: the output of the first n_upto stages for input x ([M][D], rows of D) */
static inline void reference(const struct net * n, int n_upto, const float * x, float * out) {
    double h[D * M], t[D * M];
    for (int i = 0; i < D * M; i++) {
        h[i] = x[i];
    }
    for (int s = 0; s < n_upto; s++) {
        for (int m = 0; m < M; m++) {
            for (int r = 0; r < D; r++) {
                double acc = 0.0;
                for (int c = 0; c < D; c++) {
                    acc += (double) n->hw[s][r * D + c] * h[m * D + c];
                }
                t[m * D + r] = acc * 0.125;
            }
        }
        memcpy(h, t, sizeof h);
    }
    for (int i = 0; i < D * M; i++) {
        out[i] = (float) h[i];
    }
}

static inline void expect_stages(const struct net * n, int n_upto, int k, const float * got, const char * what) {
    float x[D * M], want[D * M];
    input_of(k, x);
    reference(n, n_upto, x, want);
    for (int i = 0; i < D * M; i++) {
        cr_assert(fabsf(got[i] - want[i]) <= 1e-4f * (1.0f + fabsf(want[i])),
                  "%s, computation %d: [%d] = %g, want %g (the CPU reference)", what, k, i, got[i], want[i]);
    }
}

static inline void expect_output(const struct net * n, int k, const float * got) {
    expect_stages(n, n->n_stages, k, got, "output");
}

static inline void expect_untouched(const float * got, const char * what) {
    for (int i = 0; i < D * M; i++) {
        cr_assert(got[i] == SENTINEL, "%s: [%d] = %g was written", what, i, got[i]);
    }
}

static inline void clear_host(float * v) {
    for (int i = 0; i < D * M; i++) {
        v[i] = SENTINEL;
    }
}

/* One computation's graph, in a context of its own, as llama.cpp builds one per batch. */
struct step {
    struct ggml_context * ctx;
    struct ggml_cgraph  * g;
    struct ggml_tensor  * x;
    struct ggml_tensor  * h[MAX_STAGES]; /* h[s]: output of stage s; the last is the output */
};

/* no Criterion assertion here: helper threads build graphs too (false on failure) */
static inline bool step_build_try(const struct net * n, struct step * st) {
    struct ggml_init_params p = { 32 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    st->ctx = ggml_init(p);
    if (st->ctx == NULL) {
        return false;
    }
    st->x = ggml_new_tensor_2d(st->ctx, GGML_TYPE_F32, D, M);
    ggml_set_name(st->x, "x");
    ggml_set_input(st->x);
    struct ggml_tensor * h = st->x;
    for (int s = 0; s < n->n_stages; s++) {
        h = ggml_scale(st->ctx, ggml_mul_mat(st->ctx, n->w[s], h), 0.125f);
        ggml_format_name(h, "h%d", s);
        ggml_set_output(h); /* kept in place, so a test may fetch any stage's result */
        st->h[s] = h;
    }
    st->g = ggml_new_graph(st->ctx);
    if (st->g == NULL) {
        return false;
    }
    ggml_build_forward_expand(st->g, h);
    return true;
}

static inline void step_build(const struct net * n, struct step * st) {
    cr_assert(step_build_try(n, st), "building the graph: %s", last_error());
}

static inline void step_free(struct step * st) {
    ggml_free(st->ctx);
    st->ctx = NULL;
}

/* fetch t on the queue of the backend the scheduler computed it on, behind that computation */
static inline bool fetch_async_try(const struct net * n, struct ggml_tensor * t, float * dst) {
    ggml_backend_t b = ggml_backend_sched_get_tensor_backend(n->sched, t);
    if (b == NULL) {
        return false;
    }
    ggml_backend_tensor_get_async(b, t, dst, 0, ggml_nbytes(t));
    return true;
}

/*
 * The loop body: alloc_graph, set the input, compute_async, fetch the output; no synchronize.
 * NULL when done, else what failed (no assertion: helper threads run it too).
 */
static inline const char * step_enqueue_try(const struct net * n, struct step * st, int k, float * out) {
    float x[D * M];
    input_of(k, x);
    if (!ggml_backend_sched_alloc_graph(n->sched, st->g)) {
        return "alloc_graph";
    }
    ggml_backend_tensor_set(st->x, x, 0, sizeof x);
    if (ggml_backend_sched_graph_compute_async(n->sched, st->g) != GGML_STATUS_SUCCESS) {
        return "graph_compute_async";
    }
    if (!fetch_async_try(n, st->h[n->n_stages - 1], out)) {
        return "get_tensor_backend of the output";
    }
    return NULL;
}

static inline void step_enqueue(const struct net * n, struct step * st, int k, float * out) {
    const char * failed = step_enqueue_try(n, st, k, out);
    cr_assert_null(failed, "computation %d: %s failed: %s", k, failed ? failed : "", last_error());
}

/* reset, build and enqueue computation k */
static inline void step_run(const struct net * n, struct step * st, int k, float * out) {
    ggml_backend_sched_reset(n->sched);
    step_build(n, st);
    step_enqueue(n, st, k, out);
}

static inline int backend_index(const struct net * n, ggml_backend_t b) {
    for (int i = 0; i < n->n_backends; i++) {
        if (n->backends[i] == b) {
            return i;
        }
    }
    return -1;
}

static inline struct ggmlx_sched_stats stats_of(const struct net * n) {
    struct ggmlx_sched_stats s;
    cr_assert(ggmlx_sched_get_stats(n->sched, &s));
    return s;
}

struct enqueue_job {
    struct net  * n;
    struct step * st;
    int           k;
    float       * out;
    const char  * failed; /* what failed, NULL when all went well */
    char          message[256];
};

/* computation k on a helper thread: reset, build, enqueue (no Criterion assertion off the main thread) */
static inline void enqueue_job_fn(void * p) {
    struct enqueue_job * j = p;
    ggml_backend_sched_reset(j->n->sched);
    if (!step_build_try(j->n, j->st)) {
        j->failed = "building the graph";
    } else {
        j->failed = step_enqueue_try(j->n, j->st, j->k, j->out);
    }
    if (j->failed != NULL) {
        snprintf(j->message, sizeof j->message, "%s", last_error());
    }
}

static inline void expect_job_ok(const struct enqueue_job * j) {
    cr_assert_null(j->failed, "computation %d: %s failed: %s", j->k, j->failed ? j->failed : "", j->message);
}

#endif /* GGMLX_SCHED_ASYNC_NET_H */
