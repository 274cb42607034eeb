/*
 * test-sched-trace.c -- time stamps on queues (ggmlx_backend_queue_mark), the scheduler's
 * Chrome trace (ggmlx_sched_set_trace, GGMLX_SCHED_TRACE) and GGML_SCHED_DEBUG printing.
 *
 * Times are never compared with durations (no timed assertions): only their order, which the
 * hold/release hooks make a fact -- a mark behind held work cannot run before the release.
 * Trace files are read back with the small JSON parser of test-json.h, so a file that
 * chrome://tracing would reject fails here too.
 */
#include <criterion/criterion.h>

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggmlx-backend.h"
#include "ggmlx-sched.h"
#include "ggmlx-sim.h"
#include "ggmlx.h"
#include "sched/sched-impl.h"
#include "test-errlog.h"
#include "test-json.h"
#include "test-queues.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 256

/* GGMLX_SIM_CHAOS, when set, is passed on: orders must hold under random queue delays too */
static void sim_setup(void) {
    const char * chaos = getenv("GGMLX_SIM_CHAOS");
    const struct ggmlx_sim_config cfg = {
        .n_devices    = 2,
        .memory_limit = (size_t) 64 << 20,
        .n_threads    = 1,
        .chaos_seed   = chaos ? strtoull(chaos, NULL, 10) : 0,
    };
    cr_assert(ggmlx_sim_configure(&cfg), "ggmlx_sim_configure: %s", ggmlx_last_error() ? ggmlx_last_error() : "");
    ggml_log_set(count_log, NULL);
    g_n_errors = 0;
}

TestSuite(sched_trace, .init = sim_setup, .timeout = 60);

/* ---- helpers ------------------------------------------------------------------------------- */

/* a file name in the test's own temporary directory; removed by the caller */
static void temp_path(char * buf, size_t size, const char * what) {
    const char * dir = getenv("TMPDIR");
    snprintf(buf, size, "%s/ggmlx-trace-%ld-%s.json", dir && dir[0] ? dir : "/tmp", (long) getpid(), what);
    unlink(buf);
}

/* the trace file parsed; fails the test when it is not JSON */
static struct tj_value * read_trace(const char * path) {
    struct tj_value * root = tj_parse_file(path);
    cr_assert_not_null(root, "%s is not valid JSON: %s", path, tj_error());
    cr_assert_eq(root->type, TJ_OBJECT, "the trace is a JSON object");
    const struct tj_value * unit = tj_get(root, "displayTimeUnit");
    cr_assert(unit != NULL && unit->type == TJ_STRING && strcmp(unit->str, "ns") == 0, "displayTimeUnit is \"ns\"");
    const struct tj_value * events = tj_get(root, "traceEvents");
    cr_assert(events != NULL && events->type == TJ_ARRAY, "traceEvents is an array");
    return root;
}

static const char * ev_str(const struct tj_value * ev, const char * key) {
    const struct tj_value * v = tj_get(ev, key);
    return v != NULL && v->type == TJ_STRING ? v->str : NULL;
}

static double ev_num(const struct tj_value * ev, const char * key, double missing) {
    const struct tj_value * v = tj_get(ev, key);
    return v != NULL && v->type == TJ_NUMBER ? v->num : missing;
}

static double ev_arg(const struct tj_value * ev, const char * key, double missing) {
    const struct tj_value * args = tj_get(ev, "args");
    return args != NULL ? ev_num(args, key, missing) : missing;
}

/* the n-th event of phase ph (and name, when not NULL) */
static const struct tj_value * find_event(const struct tj_value * root, const char * ph, const char * name, int n) {
    const struct tj_value * events = tj_get(root, "traceEvents");
    for (int i = 0; i < events->n; i++) {
        const struct tj_value * ev = &events->items[i];
        const char * p = ev_str(ev, "ph");
        const char * nm = ev_str(ev, "name");
        if (p != NULL && strcmp(p, ph) == 0 && (name == NULL || (nm != NULL && strcmp(nm, name) == 0)) && n-- == 0) {
            return ev;
        }
    }
    return NULL;
}

/* the name the trace gives track tid (thread_name metadata), NULL when none */
static const char * track_name(const struct tj_value * root, int tid) {
    for (int i = 0;; i++) {
        const struct tj_value * m = find_event(root, "M", "thread_name", i);
        if (m == NULL) {
            return NULL;
        }
        if ((int) ev_num(m, "tid", -1) == tid) {
            const struct tj_value * args = tj_get(m, "args");
            return args ? ev_str(args, "name") : NULL;
        }
    }
}

/*
 * What every trace must satisfy: complete events carry pid 1, a named track, ts >= 0 and
 * dur >= 0, and on each track they start in the order they were recorded (a queue runs its
 * marks in order, so a track going back in time means a mark ran out of order).
 */
static int check_complete_events(const struct tj_value * root) {
    double last_ts[64];
    for (int t = 0; t < 64; t++) {
        last_ts[t] = -1.0;
    }
    int n = 0;
    for (const struct tj_value * ev; (ev = find_event(root, "X", NULL, n)) != NULL; n++) {
        const int    tid = (int) ev_num(ev, "tid", -1);
        const double ts  = ev_num(ev, "ts", -1.0);
        const double dur = ev_num(ev, "dur", -1.0);
        cr_assert_eq((int) ev_num(ev, "pid", -1), 1, "event %d: pid 1", n);
        cr_assert(tid >= 0 && tid < 64, "event %d: tid %d", n, tid);
        cr_assert_not_null(track_name(root, tid), "event %d: track %d is named", n, tid);
        cr_assert_not_null(ev_str(ev, "name"), "event %d has a name", n);
        cr_assert_not_null(ev_str(ev, "cat"), "event %d has a category", n);
        cr_assert_geq(ts, 0.0, "event %d '%s': ts %g >= 0", n, ev_str(ev, "name"), ts);
        cr_assert_geq(dur, 0.0, "event %d '%s': dur %g >= 0", n, ev_str(ev, "name"), dur);
        cr_assert_geq(ts, last_ts[tid], "event %d '%s' on track %d: ts %g after the previous one's %g", n,
                      ev_str(ev, "name"), tid, ts, last_ts[tid]);
        last_ts[tid] = ts;
    }
    return n;
}

/* ---- queue marks --------------------------------------------------------------------------- */

/* a mark enqueued behind held work is stamped when the queue gets to it, not when enqueued */
static void check_mark_waits_for_queue(ggml_backend_t b) {
    cr_assert(ggmlx_backend_queue_hold(b), "%s can be held", ggml_backend_name(b));
    uint64_t mark = 0;
    cr_assert(ggmlx_backend_queue_mark(b, &mark), "%s stamps on its queue", ggml_backend_name(b));
    cr_assert_geq(ggmlx_backend_queue_pending(b), 1, "the mark is queued");
    cr_assert_eq(mark, 0, "a held queue has not run the mark");
    const uint64_t before_release = ggmlx_time_ns();
    cr_assert(ggmlx_backend_queue_release(b));
    ggml_backend_synchronize(b);
    cr_assert_geq(mark, before_release, "%s: the mark ran after the release (%llu < %llu)", ggml_backend_name(b),
                  (unsigned long long) mark, (unsigned long long) before_release);
    cr_assert_leq(mark, ggmlx_time_ns(), "and before synchronize returned");
}

Test(sched_trace, cpu_mark_is_stamped_when_the_queue_runs_it) {
    ggml_backend_t b = cpu_with("async");
    check_mark_waits_for_queue(b);
    ggml_backend_free(b);
}

Test(sched_trace, sim_mark_is_stamped_when_the_queue_runs_it) {
    ggml_backend_t b = sim(1);
    check_mark_waits_for_queue(b);
    ggml_backend_free(b);
}

Test(sched_trace, sync_cpu_mark_is_the_time_of_the_call) {
    ggml_backend_t b = cpu_with("sync");
    uint64_t mark = 0;
    const uint64_t before = ggmlx_time_ns();
    cr_assert(ggmlx_backend_queue_mark(b, &mark));
    const uint64_t after = ggmlx_time_ns();
    cr_assert(mark >= before && mark <= after, "stamped during the call");
    ggml_backend_free(b);
}

Test(sched_trace, marks_on_one_queue_keep_their_order) {
    ggml_backend_t b = sim(0);
    uint64_t marks[16] = { 0 };
    cr_assert(ggmlx_backend_queue_hold(b));
    for (int i = 0; i < 16; i++) {
        ggmlx_backend_queue_mark(b, &marks[i]);
    }
    cr_assert(ggmlx_backend_queue_release(b));
    ggml_backend_synchronize(b);
    for (int i = 1; i < 16; i++) {
        cr_assert_geq(marks[i], marks[i - 1], "mark %d after mark %d", i, i - 1);
    }
    cr_assert_gt(marks[0], 0);
    ggml_backend_free(b);
}

Test(sched_trace, backend_without_marks_gives_the_call_time) {
    uint64_t mark = 0;
    const uint64_t before = ggmlx_time_ns();
    cr_assert_not(ggmlx_backend_queue_mark(NULL, &mark), "no queue: false");
    cr_assert(mark >= before && mark <= ggmlx_time_ns(), "but *ns is the time of the call");
}

/* ---- the trace writer on its own ----------------------------------------------------------- */

Test(sched_trace, writer_makes_chrome_json_timed_by_the_queues) {
    char path[256];
    temp_path(path, sizeof path, "writer");
    ggml_backend_t s0 = sim(0);
    ggml_backend_t c  = cpu_with("async");
    const char * tracks[] = { "SIM0", "CPU", "host \"main\"\\" };
    struct sched_trace * tr = ggmlx_sched_trace_open(path, tracks, 3);
    cr_assert_not_null(tr, "%s", last_error());

    cr_assert(ggmlx_backend_queue_hold(s0));
    const int on_sim = ggmlx_sched_trace_begin(tr, 0, s0, "split 0: SIM0", "compute", 0, 1);
    ggmlx_sched_trace_end(tr, on_sim, s0);
    const int on_cpu = ggmlx_sched_trace_begin(tr, 1, c, "copy", "copy", 1, 0);
    ggmlx_sched_trace_end(tr, on_cpu, c);
    const int host = ggmlx_sched_trace_begin(tr, 2, NULL, "alloc", "host", -1, 0);
    ggmlx_sched_trace_end(tr, host, NULL);
    cr_assert(on_sim >= 0 && on_cpu >= 0 && host >= 0, "spans begun");
    cr_assert(ggmlx_backend_queue_release(s0));
    ggml_backend_synchronize(s0);
    ggml_backend_synchronize(c);
    cr_assert(ggmlx_sched_trace_close(tr), "%s", last_error());

    struct tj_value * root = read_trace(path);
    cr_assert_eq(check_complete_events(root), 3, "three complete events");
    cr_assert_str_eq(track_name(root, 0), "SIM0");
    cr_assert_str_eq(track_name(root, 1), "CPU");
    cr_assert_str_eq(track_name(root, 2), "host \"main\"\\", "names are escaped and read back whole");
    const struct tj_value * e_sim  = find_event(root, "X", "split 0: SIM0", 0);
    const struct tj_value * e_host = find_event(root, "X", "alloc", 0);
    cr_assert_not_null(e_sim);
    cr_assert_not_null(e_host);
    cr_assert_eq((int) ev_num(e_sim, "tid", -1), 0);
    cr_assert_str_eq(ev_str(e_sim, "cat"), "compute");
    cr_assert_eq((int) ev_arg(e_sim, "split", -9), 0);
    cr_assert_eq((int) ev_arg(e_sim, "slot", -9), 1);
    cr_assert_eq((int) ev_arg(e_host, "split", -9), -1);
    cr_assert_eq((int) ev_num(e_host, "tid", -1), 2);
    /* the held SIM queue stamped its span after the host span, begun later, had ended */
    cr_assert_geq(ev_num(e_sim, "ts", 0), ev_num(e_host, "ts", 0) + ev_num(e_host, "dur", 0),
                  "SIM0 span at %g, host span %g + %g", ev_num(e_sim, "ts", 0), ev_num(e_host, "ts", 0),
                  ev_num(e_host, "dur", 0));
    double first = 1e300;
    for (int i = 0; i < 3; i++) {
        const double ts = ev_num(find_event(root, "X", NULL, i), "ts", 1e300);
        first = ts < first ? ts : first;
    }
    cr_assert_eq(first, 0.0, "times count from the first span");
    tj_free(root);
    unlink(path);
    ggml_backend_free(c);
    ggml_backend_free(s0);
}

Test(sched_trace, writer_copies_names_and_escapes_them) {
    char path[256];
    temp_path(path, sizeof path, "names");
    const char * tracks[] = { "host" };
    struct sched_trace * tr = ggmlx_sched_trace_open(path, tracks, 1);
    cr_assert_not_null(tr, "%s", last_error());
    char name[64];
    snprintf(name, sizeof name, "a\"b\\c\nd\te\x01");
    const int s = ggmlx_sched_trace_begin(tr, 0, NULL, name, "host", 3, 0);
    memset(name, 'x', sizeof name - 1); /* the caller's buffer is reused at once */
    ggmlx_sched_trace_end(tr, s, NULL);
    const int open_span = ggmlx_sched_trace_begin(tr, 0, NULL, "never ended", "host", 4, 0);
    cr_assert_geq(open_span, 0);
    cr_assert_eq(ggmlx_sched_trace_begin(tr, 1, NULL, "bad track", "host", 0, 0), -1, "no track 1");
    cr_assert(ggmlx_sched_trace_close(tr), "%s", last_error());
    struct tj_value * root = read_trace(path);
    cr_assert_eq(check_complete_events(root), 1, "the span never ended is left out");
    cr_assert_not_null(find_event(root, "X", "a\"b\\c\nd\te\x01", 0), "the name as given at begin");
    tj_free(root);
    unlink(path);
}

Test(sched_trace, writer_refuses_an_unwritable_path) {
    const char * tracks[] = { "host" };
    struct sched_trace * tr = ggmlx_sched_trace_open("/nonexistent-ggmlx-dir/trace.json", tracks, 1);
    cr_assert_null(tr);
    cr_assert(strstr(last_error(), "/nonexistent-ggmlx-dir/trace.json") != NULL, "the message names the file: %s",
              last_error());
    ASSERT_ERROR();
}

/* ---- the scheduler's trace ----------------------------------------------------------------- */

/*
 * out = 2 * (x * w0 + w1) with w0 in SIM0's memory, w1 in SIM1's and out pinned to the CPU:
 * three splits (SIM0, SIM1, CPU), each but the first fed by a copy from the one before.
 */
struct net {
    ggml_backend_t        be[3];  /* SIM0, SIM1, CPU */
    struct ggml_context * wctx[2];
    ggml_backend_buffer_t wbuf[2];
    struct ggml_context * ctx;
    struct ggml_tensor  * x, * out;
    struct ggml_cgraph  * graph;
};

static struct ggml_context * no_alloc_ctx(int n_tensors) {
    struct ggml_init_params p = { (size_t) n_tensors * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(p);
    cr_assert_not_null(ctx);
    return ctx;
}

static struct ggml_tensor * weight(struct net * n, int i, float value) {
    n->wctx[i] = no_alloc_ctx(1);
    struct ggml_tensor * w = ggml_new_tensor_1d(n->wctx[i], GGML_TYPE_F32, N);
    ggml_format_name(w, "w%d", i);
    n->wbuf[i] = ggml_backend_alloc_ctx_tensors(n->wctx[i], n->be[i]);
    cr_assert_not_null(n->wbuf[i], "%s", last_error());
    ggml_backend_buffer_set_usage(n->wbuf[i], GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    float v[N];
    for (int k = 0; k < N; k++) {
        v[k] = value;
    }
    ggml_backend_tensor_set(w, v, 0, sizeof v);
    return w;
}

static void net_init(struct net * n) {
    memset(n, 0, sizeof *n);
    n->be[0] = sim(0);
    n->be[1] = sim(1);
    n->be[2] = cpu_with("async");
    struct ggml_tensor * w0 = weight(n, 0, 3.0f);
    struct ggml_tensor * w1 = weight(n, 1, 1.0f);
    n->ctx = no_alloc_ctx(8);
    n->x   = ggml_new_tensor_1d(n->ctx, GGML_TYPE_F32, N);
    ggml_set_name(n->x, "x");
    ggml_set_input(n->x);
    struct ggml_tensor * h0 = ggml_mul(n->ctx, n->x, w0);
    ggml_set_name(h0, "h0");
    struct ggml_tensor * h1 = ggml_add(n->ctx, h0, w1);
    ggml_set_name(h1, "h1");
    n->out = ggml_scale(n->ctx, h1, 2.0f);
    ggml_set_name(n->out, "out");
    ggml_set_output(n->out);
    n->graph = ggml_new_graph(n->ctx);
    ggml_build_forward_expand(n->graph, n->out);
}

static ggml_backend_sched_t net_sched_p(struct net * n, bool parallel) {
    ggml_backend_sched_t s = ggml_backend_sched_new(n->be, NULL, 3, 64, parallel, false);
    cr_assert_not_null(s, "%s", last_error());
    return s;
}

/* one step of a decode loop: reset, alloc, inputs, compute (queued, not waited for) */
static void net_step(struct net * n, ggml_backend_sched_t s, float base) {
    ggml_backend_sched_reset(s);
    ggml_backend_sched_set_tensor_backend(s, n->out, n->be[2]);
    cr_assert(ggml_backend_sched_alloc_graph(s, n->graph), "alloc_graph: %s", last_error());
    float v[N];
    for (int k = 0; k < N; k++) {
        v[k] = base + 0.5f * (float) k;
    }
    ggml_backend_tensor_set(n->x, v, 0, sizeof v);
    cr_assert_eq(ggml_backend_sched_graph_compute_async(s, n->graph), GGML_STATUS_SUCCESS, "%s", last_error());
}

static void net_expect(const struct net * n, float base) {
    float v[N];
    ggml_backend_tensor_get(n->out, v, 0, sizeof v);
    for (int k = 0; k < N; k++) {
        const float want = 2.0f * (3.0f * (base + 0.5f * (float) k) + 1.0f);
        cr_assert_float_eq(v[k], want, 1e-4f * want, "out[%d] = %g, want %g", k, v[k], want);
    }
}

static ggml_backend_sched_t net_sched(struct net * n) {
    return net_sched_p(n, false);
}

static void net_free(struct net * n) {
    ggml_free(n->ctx);
    for (int i = 0; i < 2; i++) {
        ggml_backend_buffer_free(n->wbuf[i]);
        ggml_free(n->wctx[i]);
    }
    for (int i = 0; i < 3; i++) {
        ggml_backend_free(n->be[i]);
    }
}

static int count_category(const struct tj_value * root, const char * cat) {
    int c = 0;
    for (int i = 0;; i++) {
        const struct tj_value * ev = find_event(root, "X", NULL, i);
        if (ev == NULL) {
            return c;
        }
        c += strcmp(ev_str(ev, "cat"), cat) == 0;
    }
}

/* the k-th compute event named "split <i>: <backend>", checked to be on that backend's track */
static const struct tj_value * split_event(const struct tj_value * root, int split, const char * backend, int k) {
    char name[64];
    snprintf(name, sizeof name, "split %d: %s", split, backend);
    const struct tj_value * ev = find_event(root, "X", name, k);
    cr_assert_not_null(ev, "compute event %d of '%s'", k, name);
    cr_assert_str_eq(ev_str(ev, "cat"), "compute");
    cr_assert_str_eq(track_name(root, (int) ev_num(ev, "tid", -1)), backend, "'%s' on the track of %s", name, backend);
    cr_assert_eq((int) ev_arg(ev, "split", -1), split);
    return ev;
}

Test(sched_trace, trace_has_one_compute_event_per_split_on_its_backend) {
    char path[256];
    temp_path(path, sizeof path, "sched");
    struct net n;
    net_init(&n);
    ggml_backend_sched_t s = net_sched(&n);
    cr_assert(ggmlx_sched_set_trace(s, path), "%s", last_error());
    net_step(&n, s, 1.0f);
    net_step(&n, s, 2.0f);
    ggml_backend_sched_synchronize(s);
    net_expect(&n, 2.0f);
    cr_assert_eq(ggml_backend_sched_get_n_splits(s), 3, "SIM0, SIM1, CPU");
    cr_assert(ggmlx_sched_set_trace(s, NULL), "stopping writes the file: %s", last_error());

    struct tj_value * root = read_trace(path);
    check_complete_events(root);
    cr_assert_str_eq(track_name(root, 0), "SIM0");
    cr_assert_str_eq(track_name(root, 1), "SIM1");
    cr_assert_str_eq(track_name(root, 2), "CPU");
    cr_assert_str_eq(track_name(root, 3), "host");
    cr_assert_eq(count_category(root, "compute"), 2 * 3, "a compute event per split and compute");
    cr_assert_geq(count_category(root, "copy"), 2 * 2, "splits 1 and 2 copy their input");
    cr_assert_not_null(find_event(root, "X", "alloc", 1), "an alloc span per alloc_graph");
    const char * names[3] = { "SIM0", "SIM1", "CPU" };
    for (int k = 0; k < 2; k++) {
        for (int i = 1; i < 3; i++) {
            /* split i reads split i-1's result: its queue reached it only after that one ended */
            const struct tj_value * prev = split_event(root, i - 1, names[i - 1], k);
            const struct tj_value * cur  = split_event(root, i, names[i], k);
            cr_assert_geq(ev_num(cur, "ts", 0), ev_num(prev, "ts", 0) + ev_num(prev, "dur", 0),
                          "compute %d: split %d starts at %g, before split %d ends (%g + %g)", k, i, ev_num(cur, "ts", 0),
                          i - 1, ev_num(prev, "ts", 0), ev_num(prev, "dur", 0));
        }
    }
    tj_free(root);
    unlink(path);
    ggml_backend_sched_free(s);
    net_free(&n);
}

Test(sched_trace, pipelined_computes_are_traced_with_their_input_slot) {
    char path[256];
    temp_path(path, sizeof path, "pipe");
    struct net n;
    net_init(&n);
    ggml_backend_sched_t s = net_sched_p(&n, true);
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 2);
    cr_assert(ggmlx_sched_set_trace(s, path), "%s", last_error());
    for (int k = 0; k < 4; k++) {
        net_step(&n, s, (float) k);
    }
    ggml_backend_sched_synchronize(s);
    net_expect(&n, 3.0f);
    cr_assert(ggmlx_sched_set_trace(s, NULL), "%s", last_error());
    struct tj_value * root = read_trace(path);
    check_complete_events(root);
    cr_assert_eq(count_category(root, "compute"), 4 * 3);
    for (int k = 0; k < 4; k++) {
        const struct tj_value * first = split_event(root, 0, "SIM0", k);
        cr_assert_eq((int) ev_arg(first, "slot", -1), k % 2, "compute %d uses input slot %d", k, k % 2);
    }
    tj_free(root);
    unlink(path);
    ggml_backend_sched_free(s);
    net_free(&n);
}

/* the k-th complete event of category cat on track tid, NULL when there are fewer */
static const struct tj_value * track_event(const struct tj_value * root, int tid, const char * cat, int k) {
    for (int i = 0;; i++) {
        const struct tj_value * ev = find_event(root, "X", NULL, i);
        if (ev == NULL) {
            return NULL;
        }
        if ((int) ev_num(ev, "tid", -1) == tid && strcmp(ev_str(ev, "cat"), cat) == 0 && k-- == 0) {
            return ev;
        }
    }
}

static double ev_end(const struct tj_value * ev) {
    return ev_num(ev, "ts", 0) + ev_num(ev, "dur", 0);
}

/* on every track, no wait span lies (even partly) inside a copy span; returns the copies seen */
static int check_no_wait_in_a_copy(const struct tj_value * root, int n_tracks) {
    int n_copies = 0;
    for (int t = 0; t < n_tracks; t++) {
        const struct tj_value * c;
        for (int i = 0; (c = track_event(root, t, "copy", i)) != NULL; i++, n_copies++) {
            const struct tj_value * w;
            for (int j = 0; (w = track_event(root, t, "wait", j)) != NULL; j++) {
                cr_assert(ev_end(w) <= ev_num(c, "ts", 0) || ev_num(w, "ts", 0) >= ev_end(c),
                          "track %s: '%s' [%g, %g] lies in '%s' [%g, %g]", track_name(root, t), ev_str(w, "name"),
                          ev_num(w, "ts", 0), ev_end(w), ev_str(c, "name"), ev_num(c, "ts", 0), ev_end(c));
            }
        }
    }
    return n_copies;
}

/*
 * SIM0's queue is held, so SIM1's copy of h0 (split 1's input) must wait for it. That wait is a
 * "wait for SIM0" span of SIM1's own, and the copy span starts only when it is over: a queue
 * standing still is not shown as copying. Both ways a device-to-device copy is made: the
 * destination's copy (cpy_tensor_async, which orders itself after the source queue) and the
 * bounce through host memory (get on SIM0, then set on SIM1).
 */
static void check_copy_waits_apart(const char * mode) {
    char path[256];
    temp_path(path, sizeof path, mode);
    struct net n;
    net_init(&n);
    if (strcmp(mode, "best") != 0) {
        cr_assert_eq(setenv("GGMLX_SCHED_COPY", mode, 1), 0);
    }
    ggml_backend_sched_t s = net_sched(&n);
    unsetenv("GGMLX_SCHED_COPY");
    cr_assert(ggmlx_sched_set_trace(s, path), "%s", last_error());
    cr_assert(ggmlx_backend_queue_hold(n.be[0]));
    net_step(&n, s, 1.0f);
    settle(n.be[1]); /* SIM1 stands in its wait for SIM0 */
    cr_assert_geq(ggmlx_backend_queue_pending(n.be[1]), 1, "%s: SIM1 waits for the held SIM0", mode);
    cr_assert(ggmlx_backend_queue_release(n.be[0]));
    ggml_backend_sched_synchronize(s);
    net_expect(&n, 1.0f);
    struct ggmlx_sched_stats st;
    ggmlx_sched_get_stats(s, &st);
    cr_assert_eq(st.n_sync_fallbacks, 0, "%s: every copy queued", mode);
    cr_assert(ggmlx_sched_set_trace(s, NULL), "%s", last_error());

    struct tj_value * root = read_trace(path);
    check_complete_events(root);
    cr_assert_geq(check_no_wait_in_a_copy(root, 4), 2, "%s: copies of x and h0 at least", mode);
    const struct tj_value * wait = NULL, * copy = NULL;
    for (int i = 0; (wait == NULL || copy == NULL) && find_event(root, "X", NULL, i) != NULL; i++) {
        const struct tj_value * ev = find_event(root, "X", NULL, i);
        if ((int) ev_num(ev, "tid", -1) != 1) {
            continue;
        }
        if (wait == NULL && strcmp(ev_str(ev, "name"), "wait for SIM0") == 0) {
            wait = ev;
        } else if (copy == NULL && strcmp(ev_str(ev, "name"), "copy h0") == 0) {
            copy = ev;
        }
    }
    cr_assert_not_null(wait, "%s: SIM1's wait for the held SIM0 is a span of its own", mode);
    cr_assert_str_eq(ev_str(wait, "cat"), "wait");
    cr_assert_not_null(copy, "%s: SIM1 has a span for its copy of h0", mode);
    cr_assert_eq((int) ev_arg(copy, "split", -1), 1, "the copy belongs to split 1");
    cr_assert_geq(ev_num(copy, "ts", 0), ev_end(wait), "%s: the copy [%g, %g] starts after the wait [%g, %g]", mode,
                  ev_num(copy, "ts", 0), ev_end(copy), ev_num(wait, "ts", 0), ev_end(wait));
    /* SIM0 was released only after SIM1 stood waiting, so SIM0's compute ran inside the wait */
    const struct tj_value * sim0 = split_event(root, 0, "SIM0", 0);
    cr_assert_geq(ev_end(sim0), ev_num(wait, "ts", 0), "%s: SIM0 computed while SIM1 waited", mode);
    cr_assert_leq(ev_end(sim0), ev_end(wait), "%s: the wait ends after SIM0's compute", mode);
    tj_free(root);
    unlink(path);
    ggml_backend_sched_free(s);
    net_free(&n);
}

Test(sched_trace, a_copy_span_never_covers_the_wait_before_the_copy) {
    check_copy_waits_apart("best");
}

Test(sched_trace, a_bounced_copy_has_its_wait_apart_too) {
    check_copy_waits_apart("bounce");
}

Test(sched_trace, env_variable_traces_every_new_scheduler) {
    char path[256];
    temp_path(path, sizeof path, "env");
    cr_assert_eq(setenv("GGMLX_SCHED_TRACE", path, 1), 0);
    struct net n;
    net_init(&n);
    ggml_backend_sched_t s = net_sched(&n);
    unsetenv("GGMLX_SCHED_TRACE");
    net_step(&n, s, 1.0f);
    ggml_backend_sched_free(s); /* the trace is written here */
    struct tj_value * root = read_trace(path);
    check_complete_events(root);
    cr_assert_eq(count_category(root, "compute"), 3, "the three splits of the one compute");
    split_event(root, 2, "CPU", 0);
    tj_free(root);
    unlink(path);
    net_free(&n);
}

Test(sched_trace, unwritable_trace_path_is_an_error_and_leaves_no_trace) {
    struct net n;
    net_init(&n);
    ggml_backend_sched_t s = net_sched(&n);
    cr_assert_not(ggmlx_sched_set_trace(s, "/nonexistent-ggmlx-dir/t.json"));
    cr_assert(strstr(last_error(), "/nonexistent-ggmlx-dir/t.json") != NULL, "message names the file: %s",
              last_error());
    ASSERT_ERROR();
    net_step(&n, s, 1.0f); /* the scheduler works on, untraced */
    ggml_backend_sched_synchronize(s);
    net_expect(&n, 1.0f);
    cr_assert(ggmlx_sched_set_trace(s, NULL), "nothing to stop: true");
    ggml_backend_sched_free(s);
    net_free(&n);
}

/* ---- GGML_SCHED_DEBUG ---------------------------------------------------------------------- */

static char g_log[1 << 16];
static size_t g_log_len;

static void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    count_log(level, text, user_data);
    if (level == GGML_LOG_LEVEL_INFO || level == GGML_LOG_LEVEL_CONT) {
        const size_t n = strlen(text);
        if (g_log_len + n < sizeof g_log) {
            memcpy(g_log + g_log_len, text, n + 1);
            g_log_len += n;
        }
    }
}

/* what GGML_SCHED_DEBUG=level prints while splitting the net's graph */
static void debug_output(const char * level) {
    cr_assert_eq(setenv("GGML_SCHED_DEBUG", level, 1), 0);
    struct net n;
    net_init(&n);
    ggml_backend_sched_t s = net_sched(&n);
    unsetenv("GGML_SCHED_DEBUG");
    g_log_len = 0;
    g_log[0]  = '\0';
    ggml_log_set(capture_log, NULL);
    net_step(&n, s, 1.0f);
    ggml_backend_sched_synchronize(s);
    ggml_log_set(count_log, NULL);
    ggml_backend_sched_free(s);
    net_free(&n);
}

Test(sched_trace, debug_1_prints_each_split_with_its_inputs) {
    debug_output("1");
    cr_assert(strstr(g_log, "## SPLIT #0: SIM0") != NULL, "split 0 on SIM0 in:\n%s", g_log);
    cr_assert(strstr(g_log, "## SPLIT #1: SIM1") != NULL, "split 1 on SIM1 in:\n%s", g_log);
    cr_assert(strstr(g_log, "## SPLIT #2: CPU") != NULL, "split 2 on CPU in:\n%s", g_log);
    cr_assert(strstr(g_log, "[h0 (1.0K) from SIM0]") != NULL, "split 1's input h0 (N floats) in:\n%s", g_log);
    cr_assert(strstr(g_log, "node #") == NULL, "no node lines at level 1:\n%s", g_log);
}

Test(sched_trace, debug_2_prints_every_node_with_its_cause) {
    debug_output("2");
    cr_assert(strstr(g_log, "## SPLIT #2: CPU") != NULL, "%s", g_log);
    const char * h0  = strstr(g_log, " h0 ");
    const char * out = strstr(g_log, " out ");
    cr_assert(h0 != NULL && out != NULL, "node lines for h0 and out in:\n%s", g_log);
    cr_assert(strstr(g_log, ": SIM0     [weight]") != NULL, "h0 on SIM0 for its weight in:\n%s", g_log);
    cr_assert(strstr(g_log, ": CPU      [user]") != NULL, "out pinned by the user in:\n%s", g_log);
}

Test(sched_trace, cause_names_are_distinct) {
    for (int a = CAUSE_NONE; a <= CAUSE_FALLBACK; a++) {
        cr_assert_str_neq(ggmlx_sched_cause_name((enum sched_cause) a), "?", "cause %d is named", a);
        for (int b = a + 1; b <= CAUSE_FALLBACK; b++) {
            cr_assert_str_neq(ggmlx_sched_cause_name((enum sched_cause) a), ggmlx_sched_cause_name((enum sched_cause) b));
        }
    }
    cr_assert_str_eq(ggmlx_sched_cause_name((enum sched_cause) 99), "?");
}

Test(sched_trace, print_splits_of_nothing_prints_nothing) {
    g_log_len = 0;
    g_log[0]  = '\0';
    ggml_log_set(capture_log, NULL);
    ggmlx_sched_print_splits(NULL);
    ggml_log_set(count_log, NULL);
    cr_assert_eq(g_log_len, 0);
}
