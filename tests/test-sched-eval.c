/*
 * test-sched-eval.c -- the scheduler's eval callback (every node observed with the values of a
 * CPU-only run; false stops the whole compute), its buffers (types, sizes, input slots per copy)
 * and its counters, over SIM devices and the CPU.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "sched-fixture.h"

#include <stdlib.h>

TestSuite(sched_eval, .init = four_sims, .timeout = 60);

/* ---- eval callback ------------------------------------------------------------------------------ */

struct cb_state {
    struct ggml_cgraph        * gf;
    const struct sm_ref_nodes * ref;          /* NULL: no value check */
    const char                * only;         /* ask for nodes whose name ends so; NULL: all */
    const char                * stop_at;      /* return false once this node is computed */
    bool                        asked[256], seen[256];
    int                         n_seen, n_compared, n_after_stop, n_bad_order;
    bool                        stopped;
    double                      worst;
};

static int node_index(struct ggml_cgraph * gf, const struct ggml_tensor * t) {
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        if (ggml_graph_node(gf, i) == t) {
            return i;
        }
    }
    return -1;
}

static bool ends_with(const char * s, const char * suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool observe(struct ggml_tensor * t, bool ask, void * user_data) {
    struct cb_state * st = user_data;
    const int i = node_index(st->gf, t);
    if (st->stopped) {
        st->n_after_stop++;
    }
    if (i < 0 || i >= 256) {
        st->n_bad_order++;
        return false;
    }
    if (ask) {
        st->asked[i] = st->only == NULL || ends_with(t->name, st->only);
        return st->asked[i];
    }
    if (!st->asked[i] || st->seen[i]) {
        st->n_bad_order++; /* computed data handed over without being asked for, or twice */
    }
    st->seen[i] = true;
    st->n_seen++;
    if (st->ref != NULL && i < st->ref->n_nodes && st->ref->values[i] != NULL) {
        float * got = sm_read(t);
        if (got != NULL) {
            const double e = sm_max_rel_err(got, st->ref->values[i], (size_t) ggml_nelements(t));
            st->worst = isnan(e) || e > st->worst ? e : st->worst;
            st->n_compared++;
            free(got);
        }
    }
    if (st->stop_at != NULL && strcmp(t->name, st->stop_at) == 0) {
        st->stopped = true;
        return false;
    }
    return true;
}

static bool is_view_op(enum ggml_op op) {
    return op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE || op == GGML_OP_TRANSPOSE || op == GGML_OP_NONE;
}

Test(sched_eval, eval_callback_sees_every_node_with_the_reference_values) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 2, cpu_of(&b), b.be, 2, false);
    struct sm_ref_nodes ref;
    cr_assert(sm_reference(&d.cfg, d.cfg.n_tokens, 50, NULL, &ref));
    cr_assert_eq(ref.n_nodes, ggml_graph_n_nodes(d.g.gf));
    struct cb_state st = { .gf = d.g.gf, .ref = &ref };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf));
    cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, 50));
    cr_assert_eq(ggml_backend_sched_graph_compute(s, d.g.gf), GGML_STATUS_SUCCESS);
    cr_assert_eq(st.n_bad_order, 0, "every node handed over once, after it was asked for");
    for (int i = 0; i < ggml_graph_n_nodes(d.g.gf); i++) {
        struct ggml_tensor * t = ggml_graph_node(d.g.gf, i);
        if (!is_view_op(t->op)) {
            cr_assert(st.asked[i] && st.seen[i], "node %d (%s) asked %d, seen %d", i, t->name, st.asked[i], st.seen[i]);
        }
    }
    cr_assert_geq(st.n_compared, 20 * d.cfg.n_layer);
    cr_assert(st.worst <= TOL, "an observed node differs from the CPU-only run by %g", st.worst);
    decoder_check(&d, &d.g, 50);
    sm_ref_nodes_free(&ref);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, eval_callback_sees_only_the_nodes_it_asks_for) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    struct cb_state st = { .gf = d.g.gf, .only = ".kq_soft" };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    decoder_run(s, &d, &d.g, 51);
    cr_assert_eq(st.n_seen, d.cfg.n_layer, "one soft_max per layer handed over");
    cr_assert_eq(st.n_bad_order, 0);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, eval_callback_false_stops_the_whole_compute) {
    struct backends b = backends_new(2);
    const ggml_backend_buffer_type_t bufts[4] = {
        ggml_backend_get_default_buffer_type(b.be[0]), ggml_backend_get_default_buffer_type(b.be[0]),
        ggml_backend_get_default_buffer_type(b.be[1]), ggml_backend_get_default_buffer_type(b.be[1]) };
    struct chain c;
    chain_new(&c, 4, bufts, 8);
    struct cb_state st = { .gf = c.gf, .stop_at = "y0" };
    ggml_backend_sched_t s = sched_new(&b, false);
    ggml_backend_sched_set_eval_callback(s, observe, &st);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 7);
    /* a marker in the output (SIM1's memory): still there when SIM1's split never ran */
    float mark[CH_DIM * 8];
    for (int i = 0; i < CH_DIM * 8; i++) {
        mark[i] = 12345.0f;
    }
    ggml_backend_tensor_set(c.y[3], mark, 0, sizeof mark);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_ABORTED);
    cr_assert(st.stopped);
    cr_assert_eq(st.n_after_stop, 0, "the callback was called %d times after it said stop", st.n_after_stop);
    float * out = sm_read(c.y[3]);
    cr_assert_arr_eq(out, mark, sizeof mark, "the split after the stop ran");
    free(out);

    ggml_backend_sched_set_eval_callback(s, NULL, NULL);
    ggml_backend_sched_reset(s);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf));
    chain_set_input(&c, 7);
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS, "the scheduler works after a stop");
    float * want = chain_reference(4, 8, 7);
    assert_close(c.y[3], want, "chain after an aborted compute");
    free(want);
    ggml_backend_sched_free(s);
    chain_free(&c);
    backends_free(&b);
}

/* ---- buffers, copies, counters ------------------------------------------------------------------ */

/*
 * More copies multiply only the slots: the graph inputs and the tensors a device passes on to
 * another (so a pipeline's stages never wait for each other's copies); the shared part of every
 * buffer is unchanged.
 */
Test(sched_eval, buffer_types_are_the_backends_defaults_and_copies_multiply_only_slots) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 1, "one copy without parallel");
    for (int i = 0; i < b.n; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_type(s, b.be[i]), ggml_backend_get_default_buffer_type(b.be[i]));
    }
    decoder_run(s, &d, &d.g, 60);
    size_t one[3], three[3];
    struct ggmlx_sched_stats st1, st3;
    cr_assert(ggmlx_sched_get_stats(s, &st1));
    for (int i = 0; i < 3; i++) {
        one[i] = ggml_backend_sched_get_buffer_size(s, b.be[i]);
    }
    cr_assert_gt(one[0], 0);
    cr_assert_gt(one[1], 0);
    cr_assert(ggmlx_sched_set_n_copies(s, 3));
    for (uint64_t seed = 61; seed < 65; seed++) {
        decoder_run(s, &d, &d.g, seed); /* rotates through the three slots */
    }
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 3);
    cr_assert(ggmlx_sched_get_stats(s, &st3));
    for (int i = 0; i < 3; i++) {
        three[i] = ggml_backend_sched_get_buffer_size(s, b.be[i]);
        const size_t slot = st3.input_slot_bytes[i][0];
        /* SIM0 passes its last layer's result to SIM1, SIM1 its result to the CPU */
        cr_assert_gt(slot, 0, "%s holds inputs or passes a result on", bname(b.be[i]));
        for (int c = 0; c < GGMLX_SCHED_MAX_COPIES; c++) {
            cr_assert_eq(st3.input_slot_bytes[i][c], c < 3 ? slot : 0, "%s slot %d", bname(b.be[i]), c);
        }
        cr_assert_eq(st1.input_slot_bytes[i][0], slot, "%s: one slot of the same size with one copy", bname(b.be[i]));
        cr_assert_eq(three[i] - one[i], 2 * slot, "%s: %zu -> %zu bytes, two more slots of %zu", bname(b.be[i]), one[i],
                     three[i], slot);
        cr_assert_eq(st3.compute_bytes[i], st1.compute_bytes[i], "%s: the shared part is unchanged", bname(b.be[i]));
    }
    const size_t align = ggml_backend_buft_get_alignment(ggml_backend_get_default_buffer_type(cpu_of(&b)));
    const struct ggml_tensor * ins[3] = { d.g.inp, d.g.pos, d.g.mask };
    size_t per_copy = 0;
    for (int i = 0; i < 3; i++) {
        per_copy += (ggml_nbytes(ins[i]) + align - 1) / align * align;
    }
    /* the inputs, and the token embeddings the CPU looks up and passes on to SIM0 */
    cr_assert_geq(st3.input_slot_bytes[2][0], per_copy, "the CPU's slot holds the inputs");
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, parallel_keeps_two_copies) {
    struct backends b = backends_new(2);
    ggml_backend_sched_t s = sched_new(&b, true);
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 2);
    cr_assert_eq(ggml_backend_sched_get_n_backends(s), 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_backend(s, i), b.be[i]);
    }
    ggml_backend_sched_free(s);
    backends_free(&b);
}

/* GGMLX_SCHED_COPY (read by sched_new) forces one way of copying: every way gives the same values */
static const char * const copy_modes[] = { "best", "bounce", "sync" };

/* indices, not strings: a parameter crosses into the test's process by value */
ParameterizedTestParameters(sched_eval, steady_state_copies_by_each_way_with_no_host_wait) {
    static int modes[] = { 0, 1, 2 };
    return cr_make_param_array(int, modes, 3);
}

ParameterizedTest(int * imode, sched_eval, steady_state_copies_by_each_way_with_no_host_wait) {
    const char * const * mode = &copy_modes[*imode];
    const bool sync = *imode == 2;
    if (*imode == 0) {
        unsetenv("GGMLX_SCHED_COPY");
    } else {
        setenv("GGMLX_SCHED_COPY", *mode, 1);
    }
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    ggmlx_sched_reset_stats(s);
    for (uint64_t seed = 70; seed < 73; seed++) {
        ggml_backend_sched_reset(s);
        cr_assert(ggml_backend_sched_alloc_graph(s, d.g.gf));
        cr_assert(sm_graph_set_inputs(&d.g, &d.cfg, seed));
        cr_assert_eq(ggml_backend_sched_graph_compute_async(s, d.g.gf), GGML_STATUS_SUCCESS);
        ggml_backend_sched_synchronize(s);
        decoder_check(&d, &d.g, seed);
    }
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert_eq(st.n_computes, 3);
    cr_assert_eq(st.n_splits, 3 * (uint64_t) ggml_backend_sched_get_n_splits(s));
    /* per compute at least: embeddings CPU -> SIM0, SIM0 -> SIM1, SIM1 -> CPU */
    if (sync) {
        cr_assert_geq(st.n_sync_fallbacks, 3 * 3, "forced: every copy on the host");
        cr_assert_eq(st.n_async_copies, 0);
    } else {
        cr_assert_eq(st.n_sync_fallbacks, 0, "%s: SIM devices and the CPU copy through queues", *mode);
        cr_assert_eq(st.n_host_waits, 0, "%s: nothing was pending at any alloc (synchronized before)", *mode);
        cr_assert_geq(st.n_async_copies, 3 * 3);
    }
    cr_assert_gt(st.bytes_copied, 0);
    ggmlx_sched_reset_stats(s);
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert(st.n_computes == 0 && st.n_splits == 0 && st.n_async_copies == 0 && st.bytes_copied == 0);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, reserve_size_reports_what_reserve_allocates) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, false);
    size_t sizes[3] = { 0, 0, 0 };
    ggml_backend_sched_reserve_size(s, d.g.gf, sizes);
    for (int i = 0; i < 3; i++) {
        cr_assert_gt(sizes[i], 0, "%s needs a compute buffer", bname(b.be[i]));
        cr_assert_eq(ggml_backend_sched_get_buffer_size(s, b.be[i]), 0, "reserve_size allocated on %s", bname(b.be[i]));
    }
    cr_assert(ggml_backend_sched_reserve(s, d.g.gf));
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ggml_backend_sched_get_buffer_size(s, b.be[i]), sizes[i], "%s: reserved %zu, reserve_size said %zu",
                     bname(b.be[i]), ggml_backend_sched_get_buffer_size(s, b.be[i]), sizes[i]);
    }
    decoder_run(s, &d, &d.g, 80);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, a_larger_graph_reallocates_and_a_smaller_one_after_does_not) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    d.cfg.n_tokens = d.m.cfg.n_tokens = 16;
    const int sizes[3] = { 4, 16, 4 };
    uint64_t reallocs[3];
    size_t sim0[3];
    ggml_backend_sched_t s = sched_new(&b, false);
    for (int k = 0; k < 3; k++) {
        struct sm_graph g;
        cr_assert(sm_graph_build(&g, &d.m, sizes[k]));
        decoder_run(s, &d, &g, 81 + (uint64_t) k);
        sm_graph_free(&g);
        struct ggmlx_sched_stats st;
        cr_assert(ggmlx_sched_get_stats(s, &st));
        reallocs[k] = st.n_reallocs;
        sim0[k] = ggml_backend_sched_get_buffer_size(s, b.be[0]);
    }
    cr_assert_gt(reallocs[0], 0, "the first graph allocated compute buffers");
    cr_assert_gt(reallocs[1], reallocs[0], "16 tokens need more than 4");
    cr_assert_gt(sim0[1], sim0[0]);
    cr_assert_eq(reallocs[2], reallocs[1], "4 tokens fit what 16 got");
    cr_assert_eq(sim0[2], sim0[1], "buffers are kept, not shrunk");
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

Test(sched_eval, parallel_two_slots_alternate_with_right_values) {
    struct backends b = backends_new(2);
    struct decoder d;
    decoder_new(&d, 4, cpu_of(&b), b.be, 2, false);
    ggml_backend_sched_t s = sched_new(&b, true);
    for (uint64_t seed = 90; seed < 95; seed++) {
        decoder_run(s, &d, &d.g, seed);
    }
    cr_assert_eq(ggml_backend_sched_get_n_copies(s), 2);
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    cr_assert_gt(st.input_slot_bytes[2][0], 0);
    cr_assert_eq(st.input_slot_bytes[2][1], st.input_slot_bytes[2][0], "both slots hold the same inputs");
    cr_assert_eq(st.input_slot_bytes[2][2], 0);
    ggml_backend_sched_free(s);
    decoder_free(&d);
    backends_free(&b);
}

/* an input the user allocated on a device is used where it is: no input slot, values right */
Test(sched_eval, an_input_the_user_allocated_on_a_device_takes_no_slot) {
    struct backends b = backends_new(2);
    const ggml_backend_buffer_type_t bufts[2] = { ggml_backend_get_default_buffer_type(b.be[1]),
                                                  ggml_backend_get_default_buffer_type(b.be[0]) };
    struct chain c;
    chain_new(&c, 2, bufts, 8);
    struct ggml_context * xctx = sm_ctx_new(1, 0);
    struct ggml_tensor * x = ggml_dup_tensor(xctx, c.x);
    ggml_set_input(x);
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors(xctx, b.be[0]);
    cr_assert_not_null(xbuf);
    c.y[0]->src[1] = x; /* the chain now reads the user's tensor on SIM0 instead of c.x */
    struct ggml_tensor * keep = c.x;
    c.x = x;
    chain_set_input(&c, 13);
    c.gf = ggml_new_graph_custom(c.ctx, 64, false);
    ggml_build_forward_expand(c.gf, c.y[1]);
    ggml_backend_sched_t s = sched_new(&b, true);
    cr_assert(ggml_backend_sched_alloc_graph(s, c.gf), "%s", ggmlx_last_error() ? ggmlx_last_error() : "");
    cr_assert_eq(ggml_backend_sched_graph_compute(s, c.gf), GGML_STATUS_SUCCESS);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.y[0]), b.be[1]);
    cr_assert_eq(ggml_backend_sched_get_tensor_backend(s, c.y[1]), b.be[0]);
    struct ggmlx_sched_stats st;
    cr_assert(ggmlx_sched_get_stats(s, &st));
    /* x stays where the user put it; only y0, which SIM1 passes on to SIM0, takes slots */
    for (int i = 0; i < b.n; i++) {
        for (int k = 0; k < GGMLX_SCHED_MAX_COPIES; k++) {
            /* one graph allocated: only its slot (0) has memory yet */
            if (b.be[i] == b.be[1] && k == 0) {
                cr_assert_geq(st.input_slot_bytes[i][k], ggml_nbytes(c.y[0]), "%s slot %d", bname(b.be[i]), k);
            } else {
                cr_assert_eq(st.input_slot_bytes[i][k], 0, "%s slot %d: %zu bytes", bname(b.be[i]), k,
                             st.input_slot_bytes[i][k]);
            }
        }
    }
    float * want = chain_reference(2, 8, 13);
    assert_close(c.y[1], want, "chain from a user-allocated input");
    free(want);
    c.x = keep;
    ggml_backend_sched_free(s);
    ggml_backend_buffer_free(xbuf);
    ggml_free(xctx);
    chain_free(&c);
    backends_free(&b);
}
