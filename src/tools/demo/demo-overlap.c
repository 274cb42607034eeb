/*
 * demo-overlap.c -- how much of a traced run had two or more devices computing at once, read
 * back from the scheduler's Chrome trace (ggmlx_sched_set_trace). The scheduler check reports
 * it: a pipeline that works shows a share well above zero, one whose batches queue behind each
 * other on one device shows none, whatever the tokens per second say.
 *
 * Only "compute" spans count (a split running on its backend's queue) and only on the tracks
 * asked for; "copy" and "wait" spans and the host's track never do. The scheduler check counts
 * its pipeline's stages, not the CPU, whose small split (the embeddings) would count as
 * overlap with a stage even where the stages take turns. The run is the time from the first compute span's start to the
 * last one's end. The span times are the queues' own (ggmlx_backend_queue_mark), so a device
 * counts as computing from when its queue reached the split to when it finished it.
 */
#include "demo-overlap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a span's start or end; ends sort first at equal times, so spans that only touch do not overlap */
struct demo_edge {
    double t;
    int    track;
    int    delta; /* +1 start, -1 end */
};

static int demo_edge_cmp(const void * pa, const void * pb) {
    const struct demo_edge * a = pa, * b = pb;
    if (a->t != b->t) {
        return a->t < b->t ? -1 : 1;
    }
    return a->delta - b->delta;
}

/* a sweep over the spans' edges in time order, counting the tracks with a span open */
bool demo_overlap_of(const struct demo_span * spans, int n, struct demo_overlap * out) {
    memset(out, 0, sizeof *out);
    out->n_spans = n;
    if (n <= 0) {
        return true;
    }
    struct demo_edge * e    = malloc(sizeof *e * 2 * (size_t) n);
    int *              open = calloc((size_t) n, sizeof *open); /* per track slot: spans open */
    int *              ids  = malloc(sizeof *ids * (size_t) n); /* track of each slot */
    if (e == NULL || open == NULL || ids == NULL) {
        free(e);
        free(open);
        free(ids);
        return false;
    }
    double t0 = INFINITY, t1 = -INFINITY;
    for (int i = 0; i < n; i++) {
        int slot = 0;
        while (slot < out->n_tracks && ids[slot] != spans[i].track) {
            slot++;
        }
        if (slot == out->n_tracks) {
            ids[out->n_tracks++] = spans[i].track;
        }
        const double end = spans[i].end > spans[i].begin ? spans[i].end : spans[i].begin;
        e[2 * i]     = (struct demo_edge) { spans[i].begin, slot, +1 };
        e[2 * i + 1] = (struct demo_edge) { end, slot, -1 };
        t0 = spans[i].begin < t0 ? spans[i].begin : t0;
        t1 = end > t1 ? end : t1;
    }
    qsort(e, 2 * (size_t) n, sizeof *e, demo_edge_cmp);
    int busy = 0; /* tracks with a span open */
    for (int i = 0; i < 2 * n; i++) {
        if (i > 0 && busy >= 2) {
            out->shared_us += e[i].t - e[i - 1].t;
        }
        const int before = open[e[i].track];
        open[e[i].track] += e[i].delta;
        busy += (before == 0 && open[e[i].track] > 0) - (before > 0 && open[e[i].track] == 0);
    }
    out->run_us = t1 - t0;
    out->share  = out->run_us > 0.0 ? out->shared_us / out->run_us : 0.0;
    free(e);
    free(open);
    free(ids);
    return true;
}

/* the number after "key": in s, false when there is none */
static bool demo_json_number(const char * s, const char * key, double * v) {
    const char * p = strstr(s, key);
    char * end;
    if (p == NULL) {
        return false;
    }
    *v = strtod(p + strlen(key), &end);
    return end != p + strlen(key);
}

/* one event a line, as ggmlx's trace writer puts it: the name comes first and is JSON-escaped, so
 * the fields after it are found by their keys */
bool demo_trace_overlap(const char * path, int n_tracks, struct demo_overlap * out) {
    memset(out, 0, sizeof *out);
    FILE * f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    struct demo_span * spans = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    char line[1024];
    while (ok && fgets(line, sizeof line, f) != NULL) {
        const char * cat = strstr(line, "\"cat\":\"compute\"");
        double tid, ts, dur;
        if (cat == NULL || !demo_json_number(cat, "\"tid\":", &tid) || !demo_json_number(cat, "\"ts\":", &ts) ||
            !demo_json_number(cat, "\"dur\":", &dur) || tid < 0 || tid >= n_tracks) {
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            struct demo_span * grown = realloc(spans, sizeof *spans * (size_t) cap);
            if (grown == NULL) {
                ok = false;
                break;
            }
            spans = grown;
        }
        spans[n++] = (struct demo_span) { (int) tid, ts, ts + dur };
    }
    ok = ok && !ferror(f) && n > 0 && demo_overlap_of(spans, n, out);
    fclose(f);
    free(spans);
    return ok;
}
