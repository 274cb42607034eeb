/*
 * cf-rules.h -- the backend-rule cases: what every device must do besides computing ops right,
 * each checked through the public API only, so they run unchanged on CPU, SIM and CUDA devices.
 * Waits are bounded where the API allows it; a wait that never returns is caught by the
 * runner's per-case watchdog (ggml-conformance.c) or by CTest's timeout.
 */
#ifndef GGMLX_CF_RULES_H
#define GGMLX_CF_RULES_H

#include "cf-rules-memory.h"
#include "cf-rules-queue.h"

/* ---- the table ------------------------------------------------------------------------------- */

typedef void (*cf_rule_fn)(const struct cf_options *, struct cf_device *, struct cf_result *);

static const struct {
    const char * name;
    cf_rule_fn   fn;
} cf_rules[] = {
    { "rule: buffer alloc, properties, zero size, free", cf_rule_buffer_alloc },
    { "rule: buffer clear", cf_rule_buffer_clear },
    { "rule: tensor set/get round trip, offsets, memset", cf_rule_set_get },
    { "rule: tensor set_2d/get_2d", cf_rule_set_get_2d },
    { "rule: set/get/memset past the end refused, data unchanged", cf_rule_out_of_range },
    { "rule: tensor_copy and tensor_copy_async between backends", cf_rule_tensor_copy },
    { "rule: async set/get run in queue order", cf_rule_async_order },
    { "rule: graph_compute_async + synchronize equals graph_compute; graph freed after enqueue", cf_rule_compute_async },
    { "rule: event record/wait/synchronize order two backends", cf_rule_events },
    { "rule: an event never recorded counts as done", cf_rule_event_unrecorded },
    { "rule: queued errors are sticky until clear_status", cf_rule_sticky_status },
    { "rule: a graph that cannot run is refused before enqueueing", cf_rule_refused_before_enqueue },
};
#define CF_N_RULES ((int) (sizeof cf_rules / sizeof cf_rules[0]))

#endif /* GGMLX_CF_RULES_H */
