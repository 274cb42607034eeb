/*
 * demo-common.h -- what the demo's checks are made of (demo-common.c), for the checks alone:
 * the program and the tests see demo-run.h.
 *
 * Each of the first three checks keeps two contexts: a host one with the inputs and weights and
 * their values (the reference reads them there), and a no_alloc one with the same tensors and
 * the graph, whose memory comes from the backend (ggml_backend_alloc_ctx_tensors); the values
 * travel with ggml_backend_tensor_set and the result comes back with ggml_backend_tensor_get,
 * so a check runs the same on a device whose memory the host cannot touch.
 */
#ifndef GGMLX_DEMO_COMMON_H
#define GGMLX_DEMO_COMMON_H

#include "demo-run.h"

/* random numbers fixed by the seed: one stream per check, so each check's data does not depend
 * on which others ran */
struct demo_rng {
    uint64_t state;
};

struct demo_rng demo_rng_new(uint64_t seed, uint64_t stream);

/* res zeroed and passing, until something says otherwise */
void demo_begin(struct demo_result * res, const char * name, const char * title, double limit, bool limit_is_relative);

/* Records the first failure of a check (with the library's explanation) and passes p through. */
void * demo_take(struct demo_result * res, void * p, const char * expr);

/*
 * TRY(ggml_xxx(ctx, ...)): the result, with a NULL recorded in res. A failed constructor also
 * marks its context, so the constructors after it fail too and the graph is never computed.
 */
#define TRY(expr) demo_take(res, (expr), #expr)

/* res an error: what failed, the status and ggmlx_last_error() */
void demo_error(struct demo_result * res, const char * what, enum ggml_status st);

/* The CPU (and any backend offering it) computes with n_threads threads. */
void demo_set_threads(ggml_backend_t backend, int n_threads);

/* A check's contexts: see the top of the file. */
struct demo_ctx {
    struct ggml_context * host;  /* inputs and weights with their values; reference buffers */
    struct ggml_context * graph; /* no_alloc: the same tensors, every op, the graph */
};

/* both contexts (opt->mem_size bytes each, or enough); false with the error in res */
bool demo_contexts(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc);
void demo_free(struct demo_ctx * dc);

/* a leaf tensor in both contexts under one name; the graph's one is returned */
struct ggml_tensor * demo_new(struct demo_ctx * dc, struct demo_result * res, enum ggml_type type, int64_t ne0,
                              int64_t ne1, const char * name);

/* the host twin of a leaf made by demo_new, which holds its values */
struct ggml_tensor * demo_host(const struct demo_ctx * dc, const struct ggml_tensor * t);

/* element i of a host twin (contiguous, F32, F16 or BF16) set to v, rounded to its type */
void demo_set(const struct ggml_tensor * h, int64_t i, float v);

/* uniform random values in [lo, hi), rounded to t's type (F32, F16 or BF16) as they are stored */
void demo_fill(const struct demo_ctx * dc, const struct ggml_tensor * t, struct demo_rng * r, float lo, float hi);

/* t's values as the graph will see them, as doubles, in host memory (freed with the check) */
double * demo_values(const struct demo_ctx * dc, struct demo_result * res, const struct ggml_tensor * t);

/*
 * Runs the graph on opt->backend (else the device ggml_backend_init_best() picks), after the
 * test hook, timed, and compares out (F32) with the reference want into res.
 */
void demo_run(const struct demo_options * opt, struct demo_result * res, struct demo_ctx * dc, struct ggml_cgraph * gf,
              const struct ggml_tensor * out, const double * want);

/* compares got with want into res (max |error|, and relative to the largest |want|); a check
 * that passed fails when the relative error is over res->limit */
void demo_compare(struct demo_result * res, const float * got, const float * want, size_t n);

#endif /* GGMLX_DEMO_COMMON_H */
