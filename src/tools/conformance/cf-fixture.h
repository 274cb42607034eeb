/*
 * cf-fixture.h -- what the backend-rule cases share: a few tensors allocated on the device,
 * random bytes, a short sleep, and the flag that quiets errors provoked on purpose.
 */
#ifndef GGMLX_CF_FIXTURE_H
#define GGMLX_CF_FIXTURE_H

#include "cf-exec.h"

#include <stdatomic.h>
#include <time.h>

/* Expected errors are logged by the library; while set, the runner's log callback drops them. */
static atomic_int cf_quiet;

/* a small allocated set of tensors on the device */
struct cf_fixture {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
};

static bool cf_fixture_begin(struct cf_fixture * f, struct cf_result * res) {
    struct ggml_init_params p = { 32 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    f->buf = NULL;
    f->ctx = ggml_init(p);
    if (f->ctx == NULL) {
        cf_set(res, CF_FAIL, "ggml_init: %s", cf_last_error());
        return false;
    }
    return true;
}

static bool cf_fixture_alloc(struct cf_fixture * f, const struct cf_device * d, struct cf_result * res) {
    f->buf = ggml_backend_alloc_ctx_tensors_from_buft(f->ctx, d->buft);
    if (f->buf == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_alloc_ctx_tensors_from_buft: %s", cf_last_error());
        return false;
    }
    return true;
}

static void cf_fixture_end(struct cf_fixture * f) {
    ggml_backend_buffer_free(f->buf);
    ggml_free(f->ctx);
    f->buf = NULL;
    f->ctx = NULL;
}

static void cf_random_bytes(struct cf_rng * rng, void * p, size_t n) {
    unsigned char * c = p;
    for (size_t i = 0; i < n; i++) {
        c[i] = (unsigned char) (cf_next(rng) >> 56);
    }
}

static void cf_sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

#endif /* GGMLX_CF_FIXTURE_H */
