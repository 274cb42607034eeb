/*
 * ggml-demo.c -- a first look at ggmlx: three small graphs computed on the device
 * ggml_backend_init_best() picks (the first GPU, else the CPU), each checked against a
 * double-precision reference written independently in demo-ref.h.
 *
 *   relu     the classic first ggml program: 100 values through ggml_relu
 *   mlp      x [64, batch 8] -> 64x128 (F16 weights) + b1 -> GELU -> 128x10 (F32) + b2 -> softmax
 *   decoder  one llama-style transformer block: RMSNorm, Q/K/V projections, RoPE, causal
 *            multi-head attention, output projection, residual, RMSNorm, SwiGLU, residual
 * and a fourth, on every device at once:
 *   scheduler  an 8-layer decoder through the backend scheduler, its layers in pipeline stages
 *              over the CUDA devices (else the SIM devices, else the CPU), checked against a
 *              CPU-only run, with tokens per second, a Chrome/Perfetto trace and the share of
 *              the time two or more stages computed, read from that trace (demo-sched.h)
 * and a fifth, tensor parallelism:
 *   meta       a 4-layer decoder split across the CUDA devices (else the SIM devices, else the
 *              CPU alone) as one meta device, checked against a CPU-only run (demo-meta.h)
 *
 * usage: ggml-demo [--seed N] [--threads N] [--json] [--trace FILE | --no-trace]
 * Exit status 0 when every check passes, 1 otherwise.
 *
 * Inputs and weights are random but fixed by the seed. Every constructor result is checked: on
 * bad input ggmlx returns NULL and explains why in ggmlx_last_error() (it never aborts).
 *
 * Each check keeps two contexts: a host one with the inputs and weights and their values (the
 * reference reads them there), and a no_alloc one with the same tensors and the graph, whose
 * memory comes from the backend (ggml_backend_alloc_ctx_tensors); the values travel with
 * ggml_backend_tensor_set and the result comes back with ggml_backend_tensor_get, so the demo
 * runs the same on a device whose memory the host cannot touch.
 * tests/test-demo.c includes this file with GGMLX_DEMO_NO_MAIN defined and calls the checks.
 */
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx.h"

#include "demo-ref.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEMO_DEFAULT_SEED    42
#define DEMO_DEFAULT_THREADS 2
#define DEMO_MAX_TENSORS     256 /* per check's graph context: the decoder needs ~70 */

/* the MLP */
#define MLP_IN     64
#define MLP_HIDDEN 128
#define MLP_OUT    10
#define MLP_BATCH  8

/* the decoder block */
#define N_EMBD    64
#define N_HEAD    4
#define HEAD_DIM  (N_EMBD / N_HEAD)
#define N_FF      128
#define N_TOKENS  8
#define NORM_EPS  1e-5f
#define ROPE_BASE 10000.0f

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
    const char *     name;              /* "relu", "mlp", "decoder" */
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

static const char * demo_status_name(enum demo_status s) {
    switch (s) {
    case DEMO_PASSED: return "OK";
    case DEMO_FAILED: return "FAIL";
    default:          return "ERROR";
    }
}

/* ---- helpers ----------------------------------------------------------------------------------- */

/* splitmix64: tiny, and the same numbers on every platform */
struct demo_rng {
    uint64_t state;
};

static struct demo_rng demo_rng_new(uint64_t seed, uint64_t stream) {
    /* one stream per check, so each check's data does not depend on which others ran */
    struct demo_rng r = { seed * 0x9e3779b97f4a7c15ull ^ (stream + 1) * 0xd1b54a32d192ed03ull };
    return r;
}

static uint64_t demo_next(struct demo_rng * r) {
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float demo_uniform(struct demo_rng * r, float lo, float hi) {
    return lo + (hi - lo) * (float) ((double) (demo_next(r) >> 11) * 0x1.0p-53);
}

static void demo_begin(struct demo_result * res, const char * name, const char * title, double limit,
                       bool limit_is_relative) {
    memset(res, 0, sizeof *res);
    res->name              = name;
    res->title             = title;
    res->status            = DEMO_PASSED;
    res->limit             = limit;
    res->limit_is_relative = limit_is_relative;
}

/* Records the first failure of a check (with the library's explanation) and passes p through. */
static void * demo_take(struct demo_result * res, void * p, const char * expr) {
    if (p == NULL && res->status != DEMO_ERROR) {
        const char * why = ggmlx_last_error();
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "%s failed: %s", expr, why ? why : "(no message)");
    }
    return p;
}

/*
 * TRY(ggml_xxx(ctx, ...)): the result, with a NULL recorded in res. A failed constructor also
 * marks its context, so the constructors after it fail too and the graph is never computed.
 */
#define TRY(expr) demo_take(res, (expr), #expr)

/* A check's contexts: see the top of the file. */
struct demo_ctx {
    struct ggml_context * host;  /* inputs and weights with their values; reference buffers */
    struct ggml_context * graph; /* no_alloc: the same tensors, every op, the graph */
};

static bool demo_contexts(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc) {
    const size_t host_mem  = opt->mem_size ? opt->mem_size : (size_t) 8 << 20;
    const size_t graph_mem = opt->mem_size ? opt->mem_size
                                           : ggml_tensor_overhead() * DEMO_MAX_TENSORS + ggml_graph_overhead();
    struct ggml_init_params host_params  = { host_mem, NULL, false };
    struct ggml_init_params graph_params = { graph_mem, NULL, true };
    dc->host  = TRY(ggml_init(host_params));
    dc->graph = dc->host ? TRY(ggml_init(graph_params)) : NULL;
    return dc->graph != NULL;
}

static void demo_free(struct demo_ctx * dc) {
    ggml_free(dc->graph);
    ggml_free(dc->host);
}

/* a leaf tensor in both contexts under one name; the graph's one is returned */
static struct ggml_tensor * demo_new(struct demo_ctx * dc, struct demo_result * res, enum ggml_type type, int64_t ne0,
                                     int64_t ne1, const char * name) {
    struct ggml_tensor * h = TRY(ggml_new_tensor_2d(dc->host, type, ne0, ne1));
    struct ggml_tensor * t = h ? TRY(ggml_new_tensor_2d(dc->graph, type, ne0, ne1)) : NULL;
    if (t != NULL) {
        ggml_set_name(h, name);
        ggml_set_name(t, name);
    }
    return t;
}

/* the host twin of a leaf made by demo_new, which holds its values */
static struct ggml_tensor * demo_host(const struct demo_ctx * dc, const struct ggml_tensor * t) {
    return ggml_get_tensor(dc->host, ggml_get_name(t));
}

/*
 * Element i of a host twin (contiguous, F32, F16 or BF16), through ggml.h alone: in a
 * GGML_BACKEND_DL build ggml-cpu.h's ggml_set_f32_1d lives in a module the demo does not link.
 */
static void demo_set(const struct ggml_tensor * h, int64_t i, float v) {
    void * data = ggml_get_data(h);
    if (h->type == GGML_TYPE_F16) {
        ((ggml_fp16_t *) data)[i] = ggml_fp32_to_fp16(v);
    } else if (h->type == GGML_TYPE_BF16) {
        ((ggml_bf16_t *) data)[i] = ggml_fp32_to_bf16(v);
    } else {
        ((float *) data)[i] = v;
    }
}

static float demo_get(const struct ggml_tensor * h, int64_t i) {
    const void * data = ggml_get_data(h);
    if (h->type == GGML_TYPE_F16) {
        return ggml_fp16_to_fp32(((const ggml_fp16_t *) data)[i]);
    }
    if (h->type == GGML_TYPE_BF16) {
        return ggml_bf16_to_fp32(((const ggml_bf16_t *) data)[i]);
    }
    return ((const float *) data)[i];
}

/* uniform random values in [lo, hi), rounded to t's type (F32, F16 or BF16) as they are stored */
static void demo_fill(const struct demo_ctx * dc, const struct ggml_tensor * t, struct demo_rng * r, float lo,
                      float hi) {
    struct ggml_tensor * h = demo_host(dc, t);
    for (int i = 0; i < (int) ggml_nelements(h); i++) {
        demo_set(h, i, demo_uniform(r, lo, hi));
    }
}

/* t's values as the graph will see them, as doubles, in host memory (freed with the check) */
static double * demo_values(const struct demo_ctx * dc, struct demo_result * res, const struct ggml_tensor * t) {
    const struct ggml_tensor * h = demo_host(dc, t);
    const int n = (int) ggml_nelements(h);
    double * v = TRY(ggml_new_buffer(dc->host, sizeof(double) * (size_t) n));
    for (int i = 0; v != NULL && i < n; i++) {
        v[i] = demo_get(h, i);
    }
    return v;
}

/* The CPU (and any backend offering it) computes with opt->n_threads threads. */
static void demo_set_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : NULL;
    void * fn = reg ? ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads") : NULL;
    if (fn != NULL) {
        ((ggml_backend_set_n_threads_t) fn)(backend, n_threads);
    }
}

static void demo_error(struct demo_result * res, const char * what, enum ggml_status st) {
    const char * why = ggmlx_last_error();
    res->status = DEMO_ERROR;
    snprintf(res->error, sizeof res->error, "%s: %s%s%s", what, ggml_status_to_string(st), why ? ": " : "",
             why ? why : "");
}

/*
 * Runs the graph on the backend (after the test hook), timed, and compares out (F32) with the
 * reference want: the graph context's tensors get backend memory, the host values are copied
 * in, and the result is copied back.
 */
static void demo_run(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc,
                     struct ggml_cgraph * gf, const struct ggml_tensor * out, const double * want) {
    if (opt->tamper != NULL) {
        opt->tamper(dc->host, opt->tamper_data);
    }
    float * got = TRY(ggml_new_buffer(dc->host, sizeof(float) * (size_t) ggml_nelements(out)));
    if (got == NULL) {
        return;
    }

    ggml_backend_t backend = opt->backend ? opt->backend : TRY(ggml_backend_init_best());
    if (backend == NULL) {
        return;
    }
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    snprintf(res->device, sizeof res->device, "%s", dev ? ggml_backend_dev_name(dev) : ggml_backend_name(backend));
    demo_set_threads(backend, opt->n_threads);

    ggml_backend_buffer_t buf = TRY(ggml_backend_alloc_ctx_tensors(dc->graph, backend));
    if (buf == NULL) {
        goto out_backend;
    }
    for (struct ggml_tensor * h = ggml_get_first_tensor(dc->host); h != NULL; h = ggml_get_next_tensor(dc->host, h)) {
        ggml_backend_tensor_set(ggml_get_tensor(dc->graph, ggml_get_name(h)), h->data, 0, ggml_nbytes(h));
    }

    const int64_t t0 = ggml_time_us();
    const enum ggml_status st = ggml_backend_graph_compute(backend, gf);
    res->ms = (double) (ggml_time_us() - t0) / 1000.0;
    if (st != GGML_STATUS_SUCCESS) {
        demo_error(res, "ggml_backend_graph_compute", st);
        goto out_buffer;
    }
    ggml_backend_tensor_get(out, got, 0, ggml_nbytes(out));

    double max_err = 0.0, max_ref = 0.0;
    for (int i = 0; i < (int) ggml_nelements(out); i++) {
        const double err = isnan(got[i]) ? INFINITY : fabs(got[i] - want[i]);
        max_err = err > max_err ? err : max_err;
        max_ref = fabs(want[i]) > max_ref ? fabs(want[i]) : max_ref;
    }
    res->max_abs_err = max_err;
    res->max_rel_err = max_ref > 0.0 ? max_err / max_ref : max_err;
    const double measured = res->limit_is_relative ? res->max_rel_err : res->max_abs_err;
    res->status = measured <= res->limit ? DEMO_PASSED : DEMO_FAILED;
out_buffer:
    ggml_backend_buffer_free(buf);
out_backend:
    if (backend != opt->backend) {
        ggml_backend_free(backend);
    }
}

/* ---- 1. relu: the project's seed example -------------------------------------------------------- */

void demo_relu(const struct demo_options * opt, struct demo_result * res) {
    demo_begin(res, "relu", "relu (100 values)", 0.0, false); /* max(x, 0) is exact */
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 1);

    struct ggml_tensor * x = demo_new(&dc, res, GGML_TYPE_F32, 100, 1, "x");
    if (x == NULL) {
        goto done;
    }
    demo_fill(&dc, x, &rng, -1.0f, 1.0f);

    struct ggml_tensor * y  = TRY(ggml_relu(dc.graph, x));
    struct ggml_cgraph * gf = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, y);

    double * want = demo_values(&dc, res, x);
    if (want == NULL) {
        goto done;
    }
    for (int i = 0; i < 100; i++) {
        want[i] = want[i] > 0.0 ? want[i] : 0.0;
    }
    demo_run(opt, res, &dc, gf, y, want);
done:
    demo_free(&dc);
}

/* ---- 2. a two-layer perceptron ------------------------------------------------------------------ */

struct mlp {
    struct ggml_tensor * w1; /* F16 [MLP_IN, MLP_HIDDEN] */
    struct ggml_tensor * b1; /* F32 [MLP_HIDDEN] */
    struct ggml_tensor * w2; /* F32 [MLP_HIDDEN, MLP_OUT] */
    struct ggml_tensor * b2; /* F32 [MLP_OUT] */
};

/* x: [MLP_IN, MLP_BATCH] -> class probabilities [MLP_OUT, MLP_BATCH] */
static struct ggml_tensor * mlp_forward(struct ggml_context * ctx, struct demo_result * res, const struct mlp * m,
                                        struct ggml_tensor * x) {
    struct ggml_tensor * h = TRY(ggml_mul_mat(ctx, m->w1, x));
    h = TRY(ggml_add(ctx, h, m->b1)); /* b1 is broadcast over the batch */
    h = TRY(ggml_gelu(ctx, h));

    struct ggml_tensor * logits = TRY(ggml_mul_mat(ctx, m->w2, h));
    logits = TRY(ggml_add(ctx, logits, m->b2));
    return TRY(ggml_soft_max(ctx, logits));
}

void demo_mlp(const struct demo_options * opt, struct demo_result * res) {
    /* fc1 has F16 weights: a GPU rounds the activations to F16 too, for its tensor cores (as
     * upstream's CUDA backend does; about 2^-11 relative per product), which the CPU does not */
    demo_begin(res, "mlp", "mlp 64-128-10 (batch 8)", 1e-4, false);
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 2);

    struct mlp m;
    struct ggml_tensor * x = demo_new(&dc, res, GGML_TYPE_F32, MLP_IN, MLP_BATCH, "x");
    m.w1 = demo_new(&dc, res, GGML_TYPE_F16, MLP_IN, MLP_HIDDEN, "fc1.weight");
    m.b1 = demo_new(&dc, res, GGML_TYPE_F32, MLP_HIDDEN, 1, "fc1.bias");
    m.w2 = demo_new(&dc, res, GGML_TYPE_F32, MLP_HIDDEN, MLP_OUT, "fc2.weight");
    m.b2 = demo_new(&dc, res, GGML_TYPE_F32, MLP_OUT, 1, "fc2.bias");
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    /* weights scaled by 1/sqrt(fan-in), so every layer's outputs stay of order 1 */
    demo_fill(&dc, x, &rng, -1.0f, 1.0f);
    demo_fill(&dc, m.w1, &rng, -0.125f, 0.125f);
    demo_fill(&dc, m.b1, &rng, -0.1f, 0.1f);
    demo_fill(&dc, m.w2, &rng, -0.25f, 0.25f);
    demo_fill(&dc, m.b2, &rng, -0.1f, 0.1f);

    struct ggml_tensor * probs = mlp_forward(dc.graph, res, &m, x);
    struct ggml_cgraph * gf    = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, probs);

    const struct ref_mlp ref = {
        MLP_IN, MLP_HIDDEN, MLP_OUT, MLP_BATCH,
        demo_values(&dc, res, m.w1), demo_values(&dc, res, m.b1),
        demo_values(&dc, res, m.w2), demo_values(&dc, res, m.b2),
    };
    const double * xs   = demo_values(&dc, res, x);
    double *       want = TRY(ggml_new_buffer(dc.host, MLP_OUT * MLP_BATCH * sizeof(double)));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    if (!ref_mlp_forward(&ref, xs, want)) {
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "out of memory for the reference");
        goto done;
    }
    demo_run(opt, res, &dc, gf, probs, want);
done:
    demo_free(&dc);
}

/* ---- 3. a llama-style transformer decoder block -------------------------------------------------- */

struct block {
    struct ggml_tensor * attn_norm;          /* F32  [N_EMBD] */
    struct ggml_tensor * wq, * wk, * wv, * wo; /* F16  [N_EMBD, N_EMBD] */
    struct ggml_tensor * ffn_norm;           /* F32  [N_EMBD] */
    struct ggml_tensor * ffn_gate, * ffn_up; /* BF16 [N_EMBD, N_FF] */
    struct ggml_tensor * ffn_down;           /* BF16 [N_FF, N_EMBD] */
};

/*
 * x: [N_EMBD, N_TOKENS]; pos: I32 [N_TOKENS]; mask: F32 [N_TOKENS (keys), N_TOKENS (queries)],
 * 0 where a query may see a key and -INF where it may not.
 */
static struct ggml_tensor * block_forward(struct ggml_context * ctx, struct demo_result * res, const struct block * w,
                                          struct ggml_tensor * x, struct ggml_tensor * pos, struct ggml_tensor * mask) {
    struct ggml_tensor * cur = TRY(ggml_rms_norm(ctx, x, NORM_EPS));
    cur = TRY(ggml_mul(ctx, cur, w->attn_norm));

    struct ggml_tensor * q = TRY(ggml_mul_mat(ctx, w->wq, cur));
    struct ggml_tensor * k = TRY(ggml_mul_mat(ctx, w->wk, cur));
    struct ggml_tensor * v = TRY(ggml_mul_mat(ctx, w->wv, cur));

    /* split each token's row into heads: [HEAD_DIM, N_HEAD, N_TOKENS] */
    q = TRY(ggml_reshape_3d(ctx, q, HEAD_DIM, N_HEAD, N_TOKENS));
    k = TRY(ggml_reshape_3d(ctx, k, HEAD_DIM, N_HEAD, N_TOKENS));
    v = TRY(ggml_reshape_3d(ctx, v, HEAD_DIM, N_HEAD, N_TOKENS));

    /* no YaRN: freq_scale 1, ext_factor 0, attn_factor 1 */
    q = TRY(ggml_rope_ext(ctx, q, pos, NULL, HEAD_DIM, GGML_ROPE_TYPE_NEOX, 0, ROPE_BASE, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f));
    k = TRY(ggml_rope_ext(ctx, k, pos, NULL, HEAD_DIM, GGML_ROPE_TYPE_NEOX, 0, ROPE_BASE, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f));

    /* heads become the batch dim (views, nothing is copied): [HEAD_DIM, N_TOKENS, N_HEAD] */
    q = TRY(ggml_permute(ctx, q, 0, 2, 1, 3));
    k = TRY(ggml_permute(ctx, k, 0, 2, 1, 3));

    /* scores for every (key, query) pair of each head: [N_TOKENS, N_TOKENS, N_HEAD] */
    struct ggml_tensor * kq = TRY(ggml_mul_mat(ctx, k, q));
    kq = TRY(ggml_soft_max_ext(ctx, kq, mask, 1.0f / sqrtf((float) HEAD_DIM), 0.0f));

    /* V with the tokens along dim 0, [N_TOKENS, HEAD_DIM, N_HEAD], so mul_mat sums over keys */
    struct ggml_tensor * vt = TRY(ggml_permute(ctx, v, 1, 2, 0, 3));
    vt = TRY(ggml_cont(ctx, vt));
    struct ggml_tensor * kqv = TRY(ggml_mul_mat(ctx, vt, kq)); /* [HEAD_DIM, N_TOKENS, N_HEAD] */

    /* heads side by side again: [N_EMBD, N_TOKENS] */
    cur = TRY(ggml_permute(ctx, kqv, 0, 2, 1, 3));
    cur = TRY(ggml_cont_2d(ctx, cur, N_EMBD, N_TOKENS));
    cur = TRY(ggml_mul_mat(ctx, w->wo, cur));
    struct ggml_tensor * h = TRY(ggml_add(ctx, x, cur));

    cur = TRY(ggml_rms_norm(ctx, h, NORM_EPS));
    cur = TRY(ggml_mul(ctx, cur, w->ffn_norm));
    struct ggml_tensor * gate = TRY(ggml_mul_mat(ctx, w->ffn_gate, cur));
    struct ggml_tensor * up   = TRY(ggml_mul_mat(ctx, w->ffn_up, cur));
    cur = TRY(ggml_swiglu_split(ctx, gate, up)); /* silu(gate) * up */
    cur = TRY(ggml_mul_mat(ctx, w->ffn_down, cur));
    return TRY(ggml_add(ctx, h, cur));
}

void demo_decoder(const struct demo_options * opt, struct demo_result * res) {
    /* F16 weights, activations rounded to F16 on a GPU (see demo_mlp): the scheduler's limit */
    demo_begin(res, "decoder", "decoder block (8 tokens)", 1e-3, true);
    struct demo_ctx dc;
    if (!demo_contexts(opt, res, &dc)) {
        goto done;
    }
    struct demo_rng rng = demo_rng_new(opt->seed, 3);

    struct block w;
    struct ggml_tensor * x    = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, N_TOKENS, "x");
    struct ggml_tensor * pos  = demo_new(&dc, res, GGML_TYPE_I32, N_TOKENS, 1, "pos");
    struct ggml_tensor * mask = demo_new(&dc, res, GGML_TYPE_F32, N_TOKENS, N_TOKENS, "kq_mask");
    w.attn_norm = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, 1, "attn_norm");
    w.wq        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_q");
    w.wk        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_k");
    w.wv        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_v");
    w.wo        = demo_new(&dc, res, GGML_TYPE_F16, N_EMBD, N_EMBD, "attn_output");
    w.ffn_norm  = demo_new(&dc, res, GGML_TYPE_F32, N_EMBD, 1, "ffn_norm");
    w.ffn_gate  = demo_new(&dc, res, GGML_TYPE_BF16, N_EMBD, N_FF, "ffn_gate");
    w.ffn_up    = demo_new(&dc, res, GGML_TYPE_BF16, N_EMBD, N_FF, "ffn_up");
    w.ffn_down  = demo_new(&dc, res, GGML_TYPE_BF16, N_FF, N_EMBD, "ffn_down");
    if (res->status == DEMO_ERROR) {
        goto done;
    }

    demo_fill(&dc, x, &rng, -1.0f, 1.0f);
    int positions[N_TOKENS];
    for (int t = 0; t < N_TOKENS; t++) {
        positions[t] = t;
        ((int32_t *) ggml_get_data(demo_host(&dc, pos)))[t] = t;
        for (int j = 0; j < N_TOKENS; j++) { /* causal: query t sees keys 0..t */
            demo_set(demo_host(&dc, mask), (int64_t) t * N_TOKENS + j, j <= t ? 0.0f : -INFINITY);
        }
    }
    demo_fill(&dc, w.attn_norm, &rng, 0.8f, 1.2f);
    demo_fill(&dc, w.wq, &rng, -0.25f, 0.25f); /* larger than 1/sqrt(fan-in): sharper attention */
    demo_fill(&dc, w.wk, &rng, -0.25f, 0.25f);
    demo_fill(&dc, w.wv, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.wo, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_norm, &rng, 0.8f, 1.2f);
    demo_fill(&dc, w.ffn_gate, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_up, &rng, -0.125f, 0.125f);
    demo_fill(&dc, w.ffn_down, &rng, -0.09f, 0.09f);

    struct ggml_tensor * out = block_forward(dc.graph, res, &w, x, pos, mask);
    struct ggml_cgraph * gf  = TRY(ggml_new_graph(dc.graph));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    ggml_build_forward_expand(gf, out);

    const struct ref_block ref = {
        N_EMBD, N_HEAD, N_FF, N_TOKENS, NORM_EPS, ROPE_BASE, positions,
        demo_values(&dc, res, w.attn_norm),
        demo_values(&dc, res, w.wq), demo_values(&dc, res, w.wk),
        demo_values(&dc, res, w.wv), demo_values(&dc, res, w.wo),
        demo_values(&dc, res, w.ffn_norm),
        demo_values(&dc, res, w.ffn_gate), demo_values(&dc, res, w.ffn_up),
        demo_values(&dc, res, w.ffn_down),
    };
    const double * xs   = demo_values(&dc, res, x);
    double *       want = TRY(ggml_new_buffer(dc.host, N_EMBD * N_TOKENS * sizeof(double)));
    if (res->status == DEMO_ERROR) {
        goto done;
    }
    if (!ref_block_forward(&ref, xs, want)) {
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "out of memory for the reference");
        goto done;
    }
    demo_run(opt, res, &dc, gf, out, want);
done:
    demo_free(&dc);
}

/* ---- 4. a decoder stack through the scheduler, over every device ------------------------------- */

#include "demo-sched.h"

/* ---- 5. a decoder split across the devices as one meta device (tensor parallelism) --------------- */

#include "demo-meta.h"

/* ---- the program ---------------------------------------------------------------------------------- */

#ifndef GGMLX_DEMO_NO_MAIN

#define DEMO_N_CHECKS 5
#define DEMO_DEFAULT_TRACE "ggml-demo-trace.json"

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
    demo_sched_trace_path = DEMO_DEFAULT_TRACE;
    bool json = false;

    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc && argv[i + 1][0] != '\0') {
            demo_sched_trace_path = argv[++i];
        } else if (strcmp(argv[i], "--no-trace") == 0) {
            demo_sched_trace_path = NULL;
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
#endif
