/*
 * demo-common.c -- what every check of the demo is made of (demo-common.h): its data, its two
 * contexts, the run on the backend and the comparison with the reference.
 */
#include "../tool-rng.h"
#include "demo-common.h"

#include "ggmlx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DEMO_MAX_TENSORS 256 /* per check's graph context: the decoder needs ~70 */

const char * demo_status_name(enum demo_status s) {
    switch (s) {
    case DEMO_PASSED: return "OK";
    case DEMO_FAILED: return "FAIL";
    default:          return "ERROR";
    }
}

struct demo_rng demo_rng_new(uint64_t seed, uint64_t stream) {
    struct demo_rng r = { tool_rng_seed(seed, stream) };
    return r;
}

static float demo_uniform(struct demo_rng * r, float lo, float hi) {
    return lo + (hi - lo) * (float) tool_rng_unit(&r->state);
}

void demo_begin(struct demo_result * res, const char * name, const char * title, double limit,
                bool limit_is_relative) {
    memset(res, 0, sizeof *res);
    res->name              = name;
    res->title             = title;
    res->status            = DEMO_PASSED;
    res->limit             = limit;
    res->limit_is_relative = limit_is_relative;
}

/* Records the first failure of a check (with the library's explanation) and passes p through. */
void * demo_take(struct demo_result * res, void * p, const char * expr) {
    if (p == NULL && res->status != DEMO_ERROR) {
        const char * why = ggmlx_last_error();
        res->status = DEMO_ERROR;
        snprintf(res->error, sizeof res->error, "%s failed: %s", expr, why ? why : "(no message)");
    }
    return p;
}

bool demo_contexts(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc) {
    const size_t host_mem  = opt->mem_size ? opt->mem_size : (size_t) 8 << 20;
    const size_t graph_mem = opt->mem_size ? opt->mem_size
                                           : ggml_tensor_overhead() * DEMO_MAX_TENSORS + ggml_graph_overhead();
    struct ggml_init_params host_params  = { host_mem, NULL, false };
    struct ggml_init_params graph_params = { graph_mem, NULL, true };
    dc->host  = TRY(ggml_init(host_params));
    dc->graph = dc->host ? TRY(ggml_init(graph_params)) : NULL;
    return dc->graph != NULL;
}

void demo_free(struct demo_ctx * dc) {
    ggml_free(dc->graph);
    ggml_free(dc->host);
}

/* a leaf tensor in both contexts under one name; the graph's one is returned */
struct ggml_tensor * demo_new(struct demo_ctx * dc, struct demo_result * res, enum ggml_type type, int64_t ne0,
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
struct ggml_tensor * demo_host(const struct demo_ctx * dc, const struct ggml_tensor * t) {
    return ggml_get_tensor(dc->host, ggml_get_name(t));
}

/*
 * Element i of a host twin (contiguous, F32, F16 or BF16), through ggml.h alone: in a
 * GGML_BACKEND_DL build ggml-cpu.h's ggml_set_f32_1d lives in a module the demo does not link.
 */
void demo_set(const struct ggml_tensor * h, int64_t i, float v) {
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
void demo_fill(const struct demo_ctx * dc, const struct ggml_tensor * t, struct demo_rng * r, float lo,
               float hi) {
    struct ggml_tensor * h = demo_host(dc, t);
    for (int i = 0; i < (int) ggml_nelements(h); i++) {
        demo_set(h, i, demo_uniform(r, lo, hi));
    }
}

/* t's values as the graph will see them, as doubles, in host memory (freed with the check) */
double * demo_values(const struct demo_ctx * dc, struct demo_result * res, const struct ggml_tensor * t) {
    const struct ggml_tensor * h = demo_host(dc, t);
    const int n = (int) ggml_nelements(h);
    double * v = TRY(ggml_new_buffer(dc->host, sizeof(double) * (size_t) n));
    for (int i = 0; v != NULL && i < n; i++) {
        v[i] = demo_get(h, i);
    }
    return v;
}

/* The CPU (and any backend offering it) computes with opt->n_threads threads. */
void demo_set_threads(ggml_backend_t backend, int n_threads) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : NULL;
    void * fn = reg ? ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_n_threads") : NULL;
    if (fn != NULL) {
        ((ggml_backend_set_n_threads_t) fn)(backend, n_threads);
    }
}

void demo_error(struct demo_result * res, const char * what, enum ggml_status st) {
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
void demo_run(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc,
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

/* compares got with want into res (max |error|, and relative to the largest |want|) */
void demo_compare(struct demo_result * res, const float * got, const float * want, size_t n) {
    double err = 0.0, big = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double) got[i] - (double) want[i]);
        err = isnan(e) || e > err ? e : err;
        big = fabs((double) want[i]) > big ? fabs((double) want[i]) : big;
    }
    const double rel = big > 0.0 ? err / big : err;
    res->max_abs_err = isnan(err) || err > res->max_abs_err ? err : res->max_abs_err;
    res->max_rel_err = isnan(rel) || rel > res->max_rel_err ? rel : res->max_rel_err;
    if (!(res->max_rel_err <= res->limit) && res->status == DEMO_PASSED) {
        res->status = DEMO_FAILED;
    }
}
