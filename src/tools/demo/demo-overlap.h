/*
 * demo-overlap.h -- the share of a traced run during which two or more devices computed at
 * once, read back from the scheduler's Chrome trace (demo-overlap.c): the scheduler check's
 * measure of its pipeline, and what tests/test-demo.c checks on made-up spans and traces.
 */
#ifndef GGMLX_DEMO_OVERLAP_H
#define GGMLX_DEMO_OVERLAP_H

#include <stdbool.h>

/* one compute span of a trace: the track (a backend) and its times in microseconds */
struct demo_span {
    int    track;
    double begin, end;
};

struct demo_overlap {
    int    n_spans;   /* compute spans read */
    int    n_tracks;  /* distinct tracks among them */
    double run_us;    /* first compute start to last compute end */
    double shared_us; /* time with compute spans open on two or more tracks */
    double share;     /* shared_us / run_us; 0 when run_us is 0 */
};

/*
 * The union of the intervals during which spans are open on at least two tracks. A track's
 * own spans may overlap or repeat (a queue's spans never should, but a trace is input): a
 * track counts once however many of its spans are open. false when out of memory.
 */
bool demo_overlap_of(const struct demo_span * spans, int n, struct demo_overlap * out);

/*
 * The overlap of the compute spans on tracks 0 .. n_tracks - 1 (the scheduler's first
 * n_tracks backends) of the trace file at path, as ggmlx's trace writer makes it (one event per
 * line; the name comes first and is JSON-escaped, so the fields after it are found by their
 * keys). false when the file cannot be read or holds no such span.
 */
bool demo_trace_overlap(const char * path, int n_tracks, struct demo_overlap * out);

#endif /* GGMLX_DEMO_OVERLAP_H */
