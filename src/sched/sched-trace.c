/*
 * sched-trace.c -- the scheduler's Chrome/Perfetto trace (ggmlx_sched_set_trace,
 * GGMLX_SCHED_TRACE).
 *
 * A span's two times are written by the queue that runs the work (ggmlx_backend_queue_mark),
 * possibly long after begin/end return, so spans live in fixed blocks that never move: a
 * growing array would leave the queues writing into freed memory.
 */
#include "sched-impl.h"
#include "ggml-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SPANS_PER_BLOCK 1024
/* a long-running traced program stops adding spans here (~100 MiB) instead of eating memory */
#define MAX_SPANS (1 << 20)

struct trace_span {
    uint64_t     begin_ns;
    uint64_t     end_ns;
    char       * name;
    const char * category; /* the scheduler passes string literals */
    int          track;
    int          split;
    int          slot;
    bool         ended;
};

struct sched_trace {
    FILE               * f;
    char               * path;
    char              ** track_names;
    int                  n_tracks;
    struct trace_span ** blocks;
    int                  n_blocks, blocks_cap;
    int                  n_spans;
    bool                 warned_full;
};

static char * dup_str(const char * s) {
    s = s != NULL ? s : "";
    const size_t n = strlen(s) + 1;
    char * d = malloc(n);
    if (d != NULL) {
        memcpy(d, s, n);
    }
    return d;
}

static struct trace_span * span_at(const struct sched_trace * tr, int i) {
    return &tr->blocks[i / SPANS_PER_BLOCK][i % SPANS_PER_BLOCK];
}

static void trace_free(struct sched_trace * tr) {
    for (int i = 0; i < tr->n_spans; i++) {
        free(span_at(tr, i)->name);
    }
    for (int b = 0; b < tr->n_blocks; b++) {
        free(tr->blocks[b]);
    }
    free(tr->blocks);
    for (int t = 0; t < tr->n_tracks; t++) {
        free(tr->track_names[t]);
    }
    free(tr->track_names);
    free(tr->path);
    free(tr);
}

struct sched_trace * ggmlx_sched_trace_open(const char * path, const char * const * track_names, int n_tracks) {
    static const char * func = "ggmlx_sched_set_trace";
    if (path == NULL || path[0] == '\0' || n_tracks < 1 || track_names == NULL) {
        ggmlx_error(func, "no trace file name, or no tracks");
        return NULL;
    }
    struct sched_trace * tr = calloc(1, sizeof *tr);
    if (tr == NULL || (tr->path = dup_str(path)) == NULL ||
        (tr->track_names = calloc((size_t) n_tracks, sizeof *tr->track_names)) == NULL) {
        goto err_oom;
    }
    tr->n_tracks = n_tracks;
    for (int t = 0; t < n_tracks; t++) {
        if ((tr->track_names[t] = dup_str(track_names[t])) == NULL) {
            goto err_oom;
        }
    }
    /* opened now, so a bad path is reported when tracing starts, not when the trace is lost */
    tr->f = fopen(path, "w");
    if (tr->f == NULL) {
        ggmlx_error(func, "cannot open trace file '%s': %s", path, strerror(errno));
        trace_free(tr);
        return NULL;
    }
    return tr;

err_oom:
    ggmlx_error(func, "out of host memory");
    if (tr != NULL) {
        trace_free(tr);
    }
    return NULL;
}

/* room for one more span; NULL when out of memory or at the cap */
static struct trace_span * new_span(struct sched_trace * tr) {
    if (tr->n_spans >= MAX_SPANS) {
        if (!tr->warned_full) {
            tr->warned_full = true;
            ggmlx_log(GGML_LOG_LEVEL_WARN, "ggmlx_sched_trace: %d spans recorded; later ones are dropped from %s\n",
                      MAX_SPANS, tr->path);
        }
        return NULL;
    }
    const int b = tr->n_spans / SPANS_PER_BLOCK;
    if (b == tr->n_blocks) {
        if (tr->n_blocks == tr->blocks_cap) {
            const int cap = tr->blocks_cap ? tr->blocks_cap * 2 : 16;
            struct trace_span ** blocks = realloc(tr->blocks, (size_t) cap * sizeof *blocks);
            if (blocks == NULL) {
                return NULL;
            }
            tr->blocks     = blocks;
            tr->blocks_cap = cap;
        }
        tr->blocks[b] = malloc(SPANS_PER_BLOCK * sizeof(struct trace_span));
        if (tr->blocks[b] == NULL) {
            return NULL;
        }
        tr->n_blocks++;
    }
    return span_at(tr, tr->n_spans);
}

int ggmlx_sched_trace_begin(struct sched_trace * tr, int track, ggml_backend_t queue, const char * name,
                            const char * category, int split, int copy_slot) {
    if (tr == NULL || track < 0 || track >= tr->n_tracks) {
        return -1;
    }
    struct trace_span * s = new_span(tr);
    if (s == NULL) {
        return -1;
    }
    s->name = dup_str(name);
    if (s->name == NULL) {
        return -1;
    }
    s->category = category != NULL ? category : "";
    s->track    = track;
    s->split    = split;
    s->slot     = copy_slot;
    s->ended    = false;
    s->begin_ns = 0;
    s->end_ns   = 0;
    ggmlx_backend_queue_mark(queue, &s->begin_ns);
    return tr->n_spans++;
}

void ggmlx_sched_trace_end(struct sched_trace * tr, int span, ggml_backend_t queue) {
    if (tr == NULL || span < 0 || span >= tr->n_spans) {
        return; /* begin failed (full): nothing to close */
    }
    struct trace_span * s = span_at(tr, span);
    if (!s->ended) {
        s->ended = true;
        ggmlx_backend_queue_mark(queue, &s->end_ns);
    }
}

/* s as a JSON string body (quotes excluded) */
static void put_json_string(FILE * f, const char * s) {
    for (const unsigned char * p = (const unsigned char *) s; *p != '\0'; p++) {
        switch (*p) {
            case '"':  fputs("\\\"", f); break;
            case '\\': fputs("\\\\", f); break;
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            default:
                if (*p < 0x20) {
                    fprintf(f, "\\u%04x", *p);
                } else {
                    fputc(*p, f); /* UTF-8 bytes pass through: JSON text is UTF-8 */
                }
        }
    }
}

static void write_events(const struct sched_trace * tr) {
    FILE * f = tr->f;
    uint64_t t0 = UINT64_MAX;
    for (int i = 0; i < tr->n_spans; i++) {
        const struct trace_span * s = span_at(tr, i);
        if (s->ended && s->begin_ns < t0) {
            t0 = s->begin_ns;
        }
    }
    fputs("{\"traceEvents\":[\n", f);
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"ggml_backend_sched\"}}", f);
    for (int t = 0; t < tr->n_tracks; t++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"name\":\"", t);
        put_json_string(f, tr->track_names[t]);
        fputs("\"}}", f);
        /* keep the tracks in backend order, not in order of first appearance */
        fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                t, t);
    }
    for (int i = 0; i < tr->n_spans; i++) {
        const struct trace_span * s = span_at(tr, i);
        if (!s->ended) {
            continue; /* left open on purpose (a refused copy) or by a compute that failed half way */
        }
        /* the end is never before the begin on one queue; a clamp guards clock rounding (CUDA) */
        const uint64_t end = s->end_ns > s->begin_ns ? s->end_ns : s->begin_ns;
        fputs(",\n{\"name\":\"", f);
        put_json_string(f, s->name);
        fputs("\",\"cat\":\"", f);
        put_json_string(f, s->category);
        fprintf(f, "\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"split\":%d,\"slot\":%d}}",
                s->track, (double) (s->begin_ns - t0) / 1e3, (double) (end - s->begin_ns) / 1e3, s->split,
                s->slot);
    }
    fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f);
}

bool ggmlx_sched_trace_close(struct sched_trace * tr) {
    static const char * func = "ggmlx_sched_set_trace";
    if (tr == NULL) {
        return true;
    }
    write_events(tr);
    const bool write_failed = ferror(tr->f) != 0;
    errno = 0;
    const bool close_failed = fclose(tr->f) != 0;
    bool ok = true;
    if (write_failed || close_failed) {
        /* fclose flushes, so a full disk usually shows up there, with errno set */
        ggmlx_error(func, "writing trace file '%s' failed: %s", tr->path,
                    close_failed && errno != 0 ? strerror(errno) : "write error");
        ok = false;
    }
    trace_free(tr);
    return ok;
}
