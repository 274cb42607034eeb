/*
 * cf-rules-queue.h -- backend rules about the queue (docs/async.md): in-order execution,
 * graph_compute = graph_compute_async + synchronize, the graph free to go after enqueueing,
 * events between two backends, and errors: sticky when queued, returned when found up front.
 */
#ifndef GGMLX_CF_RULES_QUEUE_H
#define GGMLX_CF_RULES_QUEUE_H

#include "cf-fixture.h"

/* ---- the queue ------------------------------------------------------------------------------- */

static void cf_rule_async_order(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 4099);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    enum { N = 4099 * 4 };
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule async order"));
    unsigned char * buf = malloc(4 * N);
    if (buf == NULL) {
        cf_set(res, CF_FAIL, "out of host memory");
        goto out;
    }
    unsigned char * a = buf, * bb = buf + N, * h1 = buf + 2 * N, * h2 = buf + 3 * N;
    cf_random_bytes(&rng, a, N);
    cf_random_bytes(&rng, bb, N);
    memset(h1, 0, N);
    memset(h2, 0, N);
    /* in-order queue: each get sees the set queued just before it */
    ggml_backend_tensor_set_async(d->backend, t, a, 0, N);
    ggml_backend_tensor_get_async(d->backend, t, h1, 0, N);
    ggml_backend_tensor_set_async(d->backend, t, bb, 0, N);
    ggml_backend_tensor_get_2d_async(d->backend, t, h2, 0, N / 2, 2, N / 2, N / 2);
    ggml_backend_synchronize(d->backend);
    CF_FAIL_IF(res, memcmp(h1, a, N) != 0, "the first get_async did not see the first set_async");
    CF_FAIL_IF(res, memcmp(h2, bb, N) != 0, "the second get did not see the second set_async");
    free(buf);
out:
    cf_fixture_end(&f);
}

/* y = silu(x * 2 - b) over 4 x 4097, into y */
static struct ggml_tensor * cf_small_graph(struct ggml_context * ctx, struct ggml_tensor * x, struct ggml_tensor * b) {
    struct ggml_tensor * s = ggml_scale(ctx, x, 2.0f);
    struct ggml_tensor * d = s ? ggml_sub(ctx, s, b) : NULL;
    return d ? ggml_silu(ctx, d) : NULL;
}

static void cf_rule_compute_async(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    struct cf_fixture f;
    struct ggml_context * gctx = NULL;
    float * host = NULL;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * x = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4097, 4);
    struct ggml_tensor * b = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4097, 1);
    struct ggml_tensor * y = cf_small_graph(f.ctx, x, b);
    struct ggml_cgraph * gf = y ? ggml_new_graph(f.ctx) : NULL;
    if (gf == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, gf == NULL, "building the graph: %s", cf_last_error());
        goto out;
    }
    ggml_build_forward_expand(gf, y);
    const size_t n = 4097 * 4;
    host = malloc(3 * n * sizeof(float));
    if (host == NULL) {
        cf_set(res, CF_FAIL, "out of host memory");
        goto out;
    }
    float * r1 = host + n, * r2 = host + 2 * n;
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule compute async"));
    for (size_t i = 0; i < n; i++) {
        host[i] = (float) cf_uniform(&rng, -3, 3);
    }
    ggml_backend_tensor_set(x, host, 0, n * sizeof(float));
    ggml_backend_tensor_set(b, host + 7, 0, 4097 * sizeof(float));

    enum ggml_status st = ggml_backend_graph_compute(d->backend, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_SUCCESS, "graph_compute: %s: %s", ggml_status_to_string(st), cf_last_error());
    ggml_backend_tensor_get(y, r1, 0, n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const double v = 2.0 * host[i] - host[7 + i % 4097];
        const double want = v / (1.0 + exp(-v));
        if (!(fabs(r1[i] - want) <= 1e-5 * (fabs(want) + fabs(v)))) {
            CF_FAIL_IF(res, true, "graph_compute: y[%zu] = %.9g, want %.9g", i, r1[i], want);
            break;
        }
    }

    ggml_backend_tensor_memset(y, 0xFF, 0, n * sizeof(float));
    st = ggml_backend_graph_compute_async(d->backend, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_SUCCESS, "graph_compute_async: %s: %s", ggml_status_to_string(st), cf_last_error());
    ggml_backend_synchronize(d->backend);
    ggml_backend_tensor_get(y, r2, 0, n * sizeof(float));
    CF_FAIL_IF(res, memcmp(r1, r2, n * sizeof(float)) != 0, "graph_compute_async + synchronize differs from graph_compute");

    /* the graph and its nodes' metadata may go as soon as compute_async returns: build the
     * same computation in a context of its own, writing into y's memory, and free it at once */
    struct ggml_init_params gp = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    gctx = ggml_init(gp);
    struct ggml_tensor * y2 = gctx ? cf_small_graph(gctx, x, b) : NULL;
    struct ggml_cgraph * g2 = y2 ? ggml_new_graph(gctx) : NULL;
    if (g2 == NULL) {
        CF_FAIL_IF(res, true, "building the second graph: %s", cf_last_error());
        goto out;
    }
    ggml_build_forward_expand(g2, y2);
    /* every node of g2 lives in gctx; give them memory: the intermediates in y2's place too
     * would race, so they go where the first graph's intermediates are */
    for (int i = 0; i < ggml_graph_n_nodes(g2); i++) {
        struct ggml_tensor * node  = ggml_graph_node(g2, i);
        struct ggml_tensor * node1 = ggml_graph_node(gf, i);
        if (ggml_backend_tensor_alloc(f.buf, node, node1->data) != GGML_STATUS_SUCCESS) {
            CF_FAIL_IF(res, true, "ggml_backend_tensor_alloc: %s", cf_last_error());
            goto out;
        }
    }
    ggml_backend_tensor_memset(y, 0xFF, 0, n * sizeof(float));
    /* held, the queue cannot have started when the metadata goes (where the backend has a hold) */
    const bool held = ggmlx_backend_queue_hold(d->backend);
    st = ggml_backend_graph_compute_async(d->backend, g2);
    ggml_free(gctx);
    gctx = NULL;
    if (held) {
        ggmlx_backend_queue_release(d->backend);
    }
    CF_FAIL_IF(res, st != GGML_STATUS_SUCCESS, "graph_compute_async: %s: %s", ggml_status_to_string(st), cf_last_error());
    ggml_backend_synchronize(d->backend);
    ggml_backend_tensor_get(y, r2, 0, n * sizeof(float));
    CF_FAIL_IF(res, memcmp(r1, r2, n * sizeof(float)) != 0, "freeing the graph after graph_compute_async changed the result");
out:
    free(host);
    ggml_free(gctx);
    cf_fixture_end(&f);
}

/* ---- events -------------------------------------------------------------------------------- */

static void cf_rule_events(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    if (!d->props.caps.events) {
        cf_set(res, CF_SKIP, "the device has no events (caps.events false)");
        return;
    }
    struct cf_fixture f;
    ggml_backend_t b1 = NULL, b2 = NULL;
    ggml_backend_event_t e = NULL;
    bool held = false;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    enum { N = 1024 * 4 };
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, N / 4);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    b1 = ggml_backend_dev_init(d->dev, NULL);
    b2 = ggml_backend_dev_init(d->dev, NULL);
    e  = ggml_backend_event_new(d->dev);
    if (b1 == NULL || b2 == NULL || e == NULL) {
        cf_set(res, CF_FAIL, "%s: %s", e == NULL ? "ggml_backend_event_new" : "ggml_backend_dev_init", cf_last_error());
        goto out;
    }
    struct cf_rng rng = cf_rng_new(opt->seed, cf_hash("rule events"));
    unsigned char old_v[N], new_v[N], h[N], now[N];
    cf_random_bytes(&rng, old_v, N);
    cf_random_bytes(&rng, new_v, N);
    memset(h, 0, N);
    ggml_backend_tensor_set(t, old_v, 0, N);

    /* b1 writes, records; b2 waits for the event, then reads. With b1 held, b2 must stay blocked. */
    held = ggmlx_backend_queue_hold(b1);
    ggml_backend_tensor_set_async(b1, t, new_v, 0, N);
    ggml_backend_event_record(e, b1);
    ggml_backend_event_wait(b2, e);
    ggml_backend_tensor_get_async(b2, t, h, 0, N);
    if (held) {
        for (int i = 0; i < 25; i++) {
            cf_sleep_ms(2);
            if (ggmlx_backend_queue_pending(b2) == 0) {
                CF_FAIL_IF(res, true, "b2 ran past event_wait while the event's record was still held on b1");
                break;
            }
        }
        ggmlx_backend_queue_release(b1);
        held = false;
    }
    ggml_backend_event_synchronize(e);
    /* the host waited for the record, so the write queued before it is done */
    ggml_backend_tensor_get(t, now, 0, N);
    CF_FAIL_IF(res, memcmp(now, new_v, N) != 0, "event_synchronize returned before the work recorded before it was done");
    ggml_backend_synchronize(b2);
    CF_FAIL_IF(res, memcmp(h, new_v, N) != 0, "b2 read the tensor before b1's write that the event stands for");
    ggml_backend_synchronize(b1);
out:
    if (held) {
        ggmlx_backend_queue_release(b1);
    }
    ggml_backend_event_free(e);
    ggml_backend_free(b1);
    ggml_backend_free(b2);
    cf_fixture_end(&f);
}

static void cf_rule_event_unrecorded(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    (void) opt;
    if (!d->props.caps.events) {
        cf_set(res, CF_SKIP, "the device has no events (caps.events false)");
        return;
    }
    struct cf_fixture f;
    ggml_backend_event_t e = NULL;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 64);
    if (t == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, t == NULL, "ggml_new_tensor_1d: %s", cf_last_error());
        goto out;
    }
    e = ggml_backend_event_new(d->dev);
    if (e == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_event_new: %s", cf_last_error());
        goto out;
    }
    ggml_backend_event_synchronize(e); /* returns at once: never recorded counts as done */
    float a[64], h[64];
    for (int i = 0; i < 64; i++) {
        a[i] = (float) i * 0.5f;
    }
    ggml_backend_event_wait(d->backend, e);
    ggml_backend_tensor_set_async(d->backend, t, a, 0, sizeof a);
    ggml_backend_tensor_get_async(d->backend, t, h, 0, sizeof h);
    ggml_backend_synchronize(d->backend);
    CF_FAIL_IF(res, memcmp(a, h, sizeof a) != 0, "work queued after waiting on an unrecorded event did not run");
out:
    ggml_backend_event_free(e);
    cf_fixture_end(&f);
}

/* ---- errors in queued work --------------------------------------------------------------------- */

static void cf_rule_sticky_status(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    (void) opt;
    struct cf_fixture f;
    ggml_backend_t be = NULL;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_tensor * dst = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 8);
    struct ggml_tensor * src = ggml_new_tensor_2d(f.ctx, GGML_TYPE_F32, 4, 2);
    struct ggml_tensor * idx = ggml_new_tensor_1d(f.ctx, GGML_TYPE_I64, 2);
    struct ggml_tensor * out = dst && src && idx ? ggml_set_rows(f.ctx, dst, src, idx) : NULL;
    struct ggml_cgraph * gf  = out ? ggml_new_graph(f.ctx) : NULL;
    if (gf == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, gf == NULL, "building the graph: %s", cf_last_error());
        goto out;
    }
    ggml_build_forward_expand(gf, out);
    struct cf_result sup;
    if (!cf_supported(d, gf, &sup)) {
        cf_set(res, CF_SKIP, "%s", sup.reason);
        goto out;
    }
    be = ggml_backend_dev_init(d->dev, NULL);
    if (be == NULL) {
        cf_set(res, CF_FAIL, "ggml_backend_dev_init: %s", cf_last_error());
        goto out;
    }
    float zeros[32] = { 0 }, rows[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, h[32];
    const int64_t bad[2] = { 1, 99 }, good[2] = { 6, 2 };
    ggml_backend_tensor_set(dst, zeros, 0, sizeof zeros);
    ggml_backend_tensor_set(src, rows, 0, sizeof rows);
    ggml_backend_tensor_set(idx, bad, 0, sizeof bad);

    /* A CPU backend in "sync" mode has no queue: errors come back from the call, nothing sticks
     * (docs/async.md). Every backend with a queue (a host queue, or a GPU stream) keeps them. */
    bool queued = ggmlx_backend_queue_hold(be);
    if (queued) {
        ggmlx_backend_queue_release(be);
    } else {
        queued = d->props.type != GGML_BACKEND_DEVICE_TYPE_CPU;
    }

    atomic_store(&cf_quiet, 1);
    enum ggml_status st = ggml_backend_graph_compute(be, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_FAILED, "index 99 of 8 rows: graph_compute returned %s, want %s",
               ggml_status_to_string(st), ggml_status_to_string(GGML_STATUS_FAILED));
    if (!queued) {
        atomic_store(&cf_quiet, 0);
        if (res->status == CF_OK) {
            cf_set(res, CF_OK, "no queue (sync mode): errors returned directly");
        }
        goto check_usable;
    }
    CF_FAIL_IF(res, ggmlx_backend_get_status(be) != GGML_STATUS_FAILED, "get_status after the failure: %s",
               ggml_status_to_string(ggmlx_backend_get_status(be)));
    ggml_backend_synchronize(be);
    CF_FAIL_IF(res, ggmlx_backend_get_status(be) != GGML_STATUS_FAILED, "the status did not stick (read again: %s)",
               ggml_status_to_string(ggmlx_backend_get_status(be)));
    CF_FAIL_IF(res, ggmlx_backend_get_status(d->backend) != GGML_STATUS_SUCCESS,
               "another backend of the device was marked failed too");
    /* while failed, a valid graph is refused and nothing runs */
    ggml_backend_tensor_set(idx, good, 0, sizeof good);
    st = ggml_backend_graph_compute(be, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_FAILED, "a valid graph on the failed queue returned %s", ggml_status_to_string(st));
    ggml_backend_tensor_get(dst, h, 0, sizeof h);
    CF_FAIL_IF(res, memcmp(h, zeros, sizeof zeros) != 0, "a graph ran on the failed queue before clear_status");
    ggml_backend_tensor_set(idx, bad, 0, sizeof bad);
    ggmlx_backend_clear_status(be);
    CF_FAIL_IF(res, ggmlx_backend_get_status(be) != GGML_STATUS_SUCCESS, "clear_status left %s",
               ggml_status_to_string(ggmlx_backend_get_status(be)));

    /* the same through compute_async: the error surfaces at synchronize */
    st = ggml_backend_graph_compute_async(be, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_SUCCESS && st != GGML_STATUS_FAILED, "graph_compute_async returned %s",
               ggml_status_to_string(st));
    ggml_backend_synchronize(be);
    CF_FAIL_IF(res, ggmlx_backend_get_status(be) != GGML_STATUS_FAILED, "after compute_async + synchronize: %s",
               ggml_status_to_string(ggmlx_backend_get_status(be)));
    ggmlx_backend_clear_status(be);
    atomic_store(&cf_quiet, 0);

check_usable:
    /* usable again */
    ggml_backend_tensor_set(idx, good, 0, sizeof good);
    st = ggml_backend_graph_compute(be, gf);
    CF_FAIL_IF(res, st != GGML_STATUS_SUCCESS, "after clear_status, a valid graph: %s: %s", ggml_status_to_string(st),
               cf_last_error());
    ggml_backend_tensor_get(dst, h, 0, sizeof h);
    for (int r = 0; r < 8; r++) {
        for (int i = 0; i < 4; i++) {
            const float want = r == 6 ? rows[i] : r == 2 ? rows[4 + i] : 0.0f;
            if (h[r * 4 + i] != want) {
                CF_FAIL_IF(res, true, "after clear_status: row %d col %d is %g, want %g", r, i, (double) h[r * 4 + i],
                           (double) want);
                r = 8;
                break;
            }
        }
    }
out:
    atomic_store(&cf_quiet, 0);
    if (be != NULL) {
        ggml_backend_synchronize(be);
        ggmlx_backend_clear_status(be);
    }
    ggml_backend_free(be);
    cf_fixture_end(&f);
}

/* A graph that cannot run (a tensor without memory) is refused by the call, before anything is
 * queued: an error status, nothing written, and the queue's status left clean. */
static void cf_rule_refused_before_enqueue(const struct cf_options * opt, struct cf_device * d, struct cf_result * res) {
    (void) opt;
    struct cf_fixture f;
    struct ggml_context * loose = NULL;
    if (!cf_fixture_begin(&f, res)) {
        return;
    }
    struct ggml_init_params lp = { 4 * ggml_tensor_overhead(), NULL, true };
    loose = ggml_init(lp);
    struct ggml_tensor * x = ggml_new_tensor_1d(f.ctx, GGML_TYPE_F32, 64);
    struct ggml_tensor * z = loose ? ggml_new_tensor_1d(loose, GGML_TYPE_F32, 64) : NULL; /* never allocated */
    struct ggml_tensor * y = x && z ? ggml_add(f.ctx, x, z) : NULL;
    struct ggml_cgraph * gf = y ? ggml_new_graph(f.ctx) : NULL;
    if (gf == NULL || !cf_fixture_alloc(&f, d, res)) {
        CF_FAIL_IF(res, gf == NULL, "building the graph: %s", cf_last_error());
        goto out;
    }
    ggml_build_forward_expand(gf, y);
    float ones[64], h[64];
    for (int i = 0; i < 64; i++) {
        ones[i] = 1.0f;
    }
    ggml_backend_tensor_set(x, ones, 0, sizeof ones);
    ggml_backend_tensor_set(y, ones, 0, sizeof ones);
    atomic_store(&cf_quiet, 1);
    ggmlx_clear_last_error();
    const enum ggml_status st = ggml_backend_graph_compute(d->backend, gf);
    const bool have_message = ggmlx_last_error() != NULL;
    atomic_store(&cf_quiet, 0);
    CF_FAIL_IF(res, st == GGML_STATUS_SUCCESS, "a graph with an unallocated tensor computed with success");
    CF_FAIL_IF(res, !have_message, "refused without a message in ggmlx_last_error()");
    CF_FAIL_IF(res, ggmlx_backend_get_status(d->backend) != GGML_STATUS_SUCCESS,
               "an error found before enqueueing was left in the queue's status: %s",
               ggml_status_to_string(ggmlx_backend_get_status(d->backend)));
    ggml_backend_tensor_get(y, h, 0, sizeof h);
    CF_FAIL_IF(res, memcmp(h, ones, sizeof ones) != 0, "the refused graph wrote its result");
    ggmlx_backend_clear_status(d->backend);
out:
    atomic_store(&cf_quiet, 0);
    ggml_free(loose);
    cf_fixture_end(&f);
}

#endif /* GGMLX_CF_RULES_QUEUE_H */
