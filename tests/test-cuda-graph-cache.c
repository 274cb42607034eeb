/*
 * test-cuda-graph-cache.c -- the CUDA graph replay decision without a GPU (cuda/graph-cache.c
 * linked as plain C; executable graphs are fake pointers). A replay must follow only a
 * compute equal in every property a kernel launch depends on; anything else launches plainly.
 */
#include <criterion/criterion.h>

#include "ggml-impl.h"
#include "graph-cache.h"

#include "ggml.h"

#include <stdint.h>

static int    g_n_destroyed;
static void * g_last_destroyed;

static void fake_destroy(void * exec, void * user) {
    cr_assert_eq(user, &g_n_destroyed, "the owner's pointer comes back");
    g_n_destroyed++;
    g_last_destroyed = exec;
}

static void * fake_exec(int i) {
    return (void *) (uintptr_t) (0x1000 * (i + 1));
}

struct fixture {
    struct ggml_context * ctx;
    struct ggml_tensor  * a, * b, * c, * d;
    struct ggml_cgraph  * g;
};

/* d = (a + b) * b on fake device pointers; room for a second graph */
static void make(struct fixture * f, uintptr_t base) {
    struct ggml_init_params ip = { 16 * ggml_tensor_overhead() + 2 * ggml_graph_overhead(), NULL, true };
    f->ctx = ggml_init(ip);
    cr_assert_not_null(f->ctx);
    f->a = ggml_new_tensor_2d(f->ctx, GGML_TYPE_F32, 8, 4);
    f->b = ggml_new_tensor_2d(f->ctx, GGML_TYPE_F32, 8, 4);
    f->c = ggml_add(f->ctx, f->a, f->b);
    f->d = ggml_mul(f->ctx, f->c, f->b);
    f->a->data = (void *) (base + 0x000);
    f->b->data = (void *) (base + 0x100);
    f->c->data = (void *) (base + 0x200);
    f->d->data = (void *) (base + 0x300);
    f->g = ggml_new_graph(f->ctx);
    ggml_build_forward_expand(f->g, f->d);
    cr_assert_eq(ggml_graph_n_nodes(f->g), 2);
}

static const uint64_t k_extra[GGMLX_CUDA_GRAPH_EXTRA] = { 0xabc000, 4096 };

static struct ggmlx_cuda_graph_cache g_cache;

static void setup(void) {
    g_n_destroyed    = 0;
    g_last_destroyed = NULL;
    ggmlx_cuda_graph_cache_init(&g_cache, fake_destroy, &g_n_destroyed);
}

static void teardown(void) {
    ggmlx_cuda_graph_cache_free(&g_cache);
}

TestSuite(cuda_graph_cache, .init = setup, .fini = teardown, .timeout = 60);

static enum ggmlx_cuda_graph_action look(const struct ggml_cgraph * g, const uint64_t * extra,
                                         struct ggmlx_cuda_graph_entry ** e) {
    return ggmlx_cuda_graph_cache_lookup(&g_cache, g, extra, e);
}

/* warm-up, capture: leaves f's signature ready with exec */
static struct ggmlx_cuda_graph_entry * capture(struct fixture * f, void * exec) {
    struct ggmlx_cuda_graph_entry * e = NULL;
    cr_assert_eq(look(f->g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN, "the first run is the warm-up");
    cr_assert_not_null(e);
    cr_assert_eq(look(f->g, k_extra, &e), GGMLX_CUDA_GRAPH_CAPTURE, "the second identical run is captured");
    ggmlx_cuda_graph_cache_captured(&g_cache, e, exec);
    struct ggmlx_cuda_graph_entry * r = NULL;
    cr_assert_eq(look(f->g, k_extra, &r), GGMLX_CUDA_GRAPH_REPLAY);
    cr_assert_eq(r, e);
    cr_assert_eq(r->exec, exec);
    return e;
}

Test(cuda_graph_cache, disable_variable_as_upstream) {
    cr_assert_not(ggmlx_cuda_graphs_disabled(NULL));
    cr_assert(ggmlx_cuda_graphs_disabled("1"));
    cr_assert(ggmlx_cuda_graphs_disabled("0"), "upstream only asks whether it is set");
    cr_assert(ggmlx_cuda_graphs_disabled(""));
}

Test(cuda_graph_cache, warm_up_capture_replay) {
    struct fixture f;
    make(&f, 0x10000);
    capture(&f, fake_exec(0));
    struct ggmlx_cuda_graph_entry * e = NULL;
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(look(f.g, k_extra, &e), GGMLX_CUDA_GRAPH_REPLAY);
    }
    cr_assert_eq(g_cache.stats.n_plain, 1);
    cr_assert_eq(g_cache.stats.n_capture, 1);
    cr_assert_eq(g_cache.stats.n_replay, 6);
    cr_assert_eq(g_n_destroyed, 0);
    ggml_free(f.ctx);
}

Test(cuda_graph_cache, same_graph_rebuilt_is_recognised) {
    struct fixture f;
    make(&f, 0x10000);
    capture(&f, fake_exec(0));
    /* a new graph object (new uid) over the same tensors, as a caller rebuilding it each step */
    struct ggml_cgraph * g2 = ggml_new_graph(f.ctx);
    ggml_build_forward_expand(g2, f.d);
    cr_assert_neq(ggmlx_graph_uid(g2), ggmlx_graph_uid(f.g));
    struct ggmlx_cuda_graph_entry * e = NULL;
    cr_assert_eq(look(g2, k_extra, &e), GGMLX_CUDA_GRAPH_REPLAY);
    ggml_free(f.ctx);
}

/* each change must stop the replay; undoing it finds the captured entry again */
#define CHANGE_STOPS_REPLAY(what, change, undo)                                                    \
    do {                                                                                           \
        struct ggmlx_cuda_graph_entry * e_ = NULL;                                                 \
        change;                                                                                    \
        cr_assert_eq(look(f.g, extra, &e_), GGMLX_CUDA_GRAPH_PLAIN, "%s: no replay after a change", what); \
        cr_assert_not(e_ != NULL && e_->ready, "%s: not the captured entry", what);               \
        undo;                                                                                      \
        cr_assert_eq(look(f.g, extra, &e_), GGMLX_CUDA_GRAPH_REPLAY, "%s: undone, replayed again", what); \
    } while (0)

Test(cuda_graph_cache, every_property_takes_part) {
    struct fixture f;
    make(&f, 0x10000);
    capture(&f, fake_exec(0));
    uint64_t extra[GGMLX_CUDA_GRAPH_EXTRA] = { k_extra[0], k_extra[1] };
    void * p;
    int64_t ne;
    size_t nb;
    int32_t flags;

    CHANGE_STOPS_REPLAY("node data", (p = f.d->data, f.d->data = (char *) p + 128), f.d->data = p);
    CHANGE_STOPS_REPLAY("source data", (p = f.a->data, f.a->data = (char *) p + 128), f.a->data = p);
    CHANGE_STOPS_REPLAY("node ne", (ne = f.c->ne[1], f.c->ne[1] = 3), f.c->ne[1] = ne);
    CHANGE_STOPS_REPLAY("source ne", (ne = f.b->ne[0], f.b->ne[0] = 9), f.b->ne[0] = ne);
    CHANGE_STOPS_REPLAY("node nb", (nb = f.d->nb[1], f.d->nb[1] = 64), f.d->nb[1] = nb);
    CHANGE_STOPS_REPLAY("source nb", (nb = f.a->nb[2], f.a->nb[2] += 4), f.a->nb[2] = nb);
    CHANGE_STOPS_REPLAY("node type", f.c->type = GGML_TYPE_F16, f.c->type = GGML_TYPE_F32);
    CHANGE_STOPS_REPLAY("source type", f.b->type = GGML_TYPE_F16, f.b->type = GGML_TYPE_F32);
    CHANGE_STOPS_REPLAY("op", f.d->op = GGML_OP_SUB, f.d->op = GGML_OP_MUL);
    CHANGE_STOPS_REPLAY("op params", f.c->op_params[15] = 7, f.c->op_params[15] = 0);
    CHANGE_STOPS_REPLAY("flags", (flags = f.d->flags, f.d->flags ^= GGML_TENSOR_FLAG_OUTPUT), f.d->flags = flags);
    CHANGE_STOPS_REPLAY("a source added", f.d->src[3] = f.a, f.d->src[3] = NULL);
    CHANGE_STOPS_REPLAY("sources swapped", (f.c->src[0] = f.b, f.c->src[1] = f.a), (f.c->src[0] = f.a, f.c->src[1] = f.b));
    CHANGE_STOPS_REPLAY("backend word 0", extra[0] += 256, extra[0] -= 256);
    CHANGE_STOPS_REPLAY("backend word 1", extra[1] *= 2, extra[1] /= 2);
    CHANGE_STOPS_REPLAY("node count", f.g->n_nodes = 1, f.g->n_nodes = 2);
    cr_assert_eq(g_n_destroyed, 0, "16 entries: the captured one was never evicted");
    ggml_free(f.ctx);
}

Test(cuda_graph_cache, alternating_copy_slots_both_replay) {
    /* one split, two sets of input copies (the scheduler's copy slots) used in turn */
    struct fixture f;
    make(&f, 0x10000);
    void * slot_a = f.a->data;
    void * slot_b = (void *) 0x90000;
    struct ggmlx_cuda_graph_entry * e = NULL;
    enum ggmlx_cuda_graph_action want[] = { GGMLX_CUDA_GRAPH_PLAIN, GGMLX_CUDA_GRAPH_PLAIN,
                                            GGMLX_CUDA_GRAPH_CAPTURE, GGMLX_CUDA_GRAPH_CAPTURE,
                                            GGMLX_CUDA_GRAPH_REPLAY, GGMLX_CUDA_GRAPH_REPLAY,
                                            GGMLX_CUDA_GRAPH_REPLAY, GGMLX_CUDA_GRAPH_REPLAY };
    struct ggmlx_cuda_graph_entry * first[2] = { NULL, NULL };
    for (int i = 0; i < 8; i++) {
        f.a->data = i % 2 ? slot_b : slot_a;
        const enum ggmlx_cuda_graph_action act = look(f.g, k_extra, &e);
        cr_assert_eq(act, want[i], "step %d", i);
        if (i < 2) {
            first[i] = e;
        } else {
            cr_assert_eq(e, first[i % 2], "step %d uses its slot's entry", i);
        }
        if (act == GGMLX_CUDA_GRAPH_CAPTURE) {
            ggmlx_cuda_graph_cache_captured(&g_cache, e, fake_exec(i));
        }
        if (act == GGMLX_CUDA_GRAPH_REPLAY) {
            cr_assert_eq(e->exec, fake_exec(2 + i % 2));
        }
    }
    cr_assert_neq(first[0], first[1]);
    ggml_free(f.ctx);
}

Test(cuda_graph_cache, least_recently_used_is_evicted_and_its_exec_reused) {
    struct fixture f[GGMLX_CUDA_GRAPH_CACHE_SIZE + 1];
    struct ggmlx_cuda_graph_entry * ent[GGMLX_CUDA_GRAPH_CACHE_SIZE];
    for (int i = 0; i < GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        make(&f[i], 0x100000 * (uintptr_t) (i + 1));
        ent[i] = capture(&f[i], fake_exec(i));
    }
    /* touch every graph but the first: it becomes the least recently used */
    struct ggmlx_cuda_graph_entry * e = NULL;
    for (int i = 1; i < GGMLX_CUDA_GRAPH_CACHE_SIZE; i++) {
        cr_assert_eq(look(f[i].g, k_extra, &e), GGMLX_CUDA_GRAPH_REPLAY);
    }
    const int last = GGMLX_CUDA_GRAPH_CACHE_SIZE;
    make(&f[last], 0x7000000);
    cr_assert_eq(look(f[last].g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN);
    cr_assert_eq(e, ent[0], "the least recently used entry is taken");
    cr_assert_eq(e->exec, fake_exec(0), "its executable graph stays, to be updated");
    cr_assert_not(e->ready, "but it is not replayed for the new signature");
    cr_assert_eq(g_n_destroyed, 0);

    cr_assert_eq(look(f[last].g, k_extra, &e), GGMLX_CUDA_GRAPH_CAPTURE);
    cr_assert_eq(e->exec, fake_exec(0), "the capture may update the stale graph");
    ggmlx_cuda_graph_cache_captured(&g_cache, e, fake_exec(0)); /* the update worked: the same exec */
    cr_assert_eq(g_n_destroyed, 0, "an updated graph is not destroyed");
    cr_assert_eq(look(f[last].g, k_extra, &e), GGMLX_CUDA_GRAPH_REPLAY);

    cr_assert_eq(look(f[0].g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN, "the evicted graph starts over");
    cr_assert_eq(e, ent[1], "taking the next least recently used");
    cr_assert_eq(look(f[0].g, k_extra, &e), GGMLX_CUDA_GRAPH_CAPTURE);
    ggmlx_cuda_graph_cache_captured(&g_cache, e, fake_exec(99)); /* re-instantiated: the stale one goes */
    cr_assert_eq(g_n_destroyed, 1);
    cr_assert_eq(g_last_destroyed, fake_exec(1));

    ggmlx_cuda_graph_cache_free(&g_cache);
    cr_assert_eq(g_n_destroyed, 1 + GGMLX_CUDA_GRAPH_CACHE_SIZE, "freeing the cache destroys every graph");
    ggmlx_cuda_graph_cache_init(&g_cache, fake_destroy, &g_n_destroyed);
    for (int i = 0; i <= last; i++) {
        ggml_free(f[i].ctx);
    }
}

Test(cuda_graph_cache, failed_capture_launches_plainly_from_then_on) {
    struct fixture f;
    make(&f, 0x10000);
    struct ggmlx_cuda_graph_entry * e = NULL;
    cr_assert_eq(look(f.g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN);
    cr_assert_eq(look(f.g, k_extra, &e), GGMLX_CUDA_GRAPH_CAPTURE);
    ggmlx_cuda_graph_cache_failed(&g_cache, e);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(look(f.g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN, "no second try at the same signature");
    }
    cr_assert_eq(g_cache.stats.n_failed, 1);
    cr_assert_eq(g_cache.stats.n_capture, 1);

    /* a replay that failed: its graph is destroyed, plain launches follow */
    struct fixture h;
    make(&h, 0x50000);
    e = capture(&h, fake_exec(5));
    ggmlx_cuda_graph_cache_failed(&g_cache, e);
    cr_assert_eq(g_n_destroyed, 1);
    cr_assert_eq(g_last_destroyed, fake_exec(5));
    cr_assert_null(e->exec);
    cr_assert_eq(look(h.g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN);
    ggml_free(f.ctx);
    ggml_free(h.ctx);
}

Test(cuda_graph_cache, empty_graph_is_not_cached) {
    struct ggml_init_params ip = { ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    struct ggmlx_cuda_graph_entry * e = (void *) 1;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(look(g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN);
        cr_assert_null(e);
    }
    ggml_free(ctx);
}

Test(cuda_graph_cache, large_graph_signature) {
    /* a 1000-node chain, as the launch-overhead benchmark builds: one changed node in the middle */
    struct ggml_init_params ip = { 1100 * ggml_tensor_overhead() + ggml_graph_overhead_custom(2048, false), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    struct ggml_tensor * x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 16);
    x->data = (void *) 0x1000;
    struct ggml_tensor * mid = NULL;
    for (int i = 0; i < 1000; i++) {
        x = ggml_add(ctx, x, x);
        x->data = (void *) (uintptr_t) (0x2000 + 0x100 * i);
        if (i == 500) {
            mid = x;
        }
    }
    struct ggml_cgraph * g = ggml_new_graph_custom(ctx, 2048, false);
    ggml_build_forward_expand(g, x);
    cr_assert_eq(ggml_graph_n_nodes(g), 1000);
    struct ggmlx_cuda_graph_entry * e = NULL;
    cr_assert_eq(look(g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN);
    cr_assert_eq(look(g, k_extra, &e), GGMLX_CUDA_GRAPH_CAPTURE);
    ggmlx_cuda_graph_cache_captured(&g_cache, e, fake_exec(0));
    cr_assert_eq(look(g, k_extra, &e), GGMLX_CUDA_GRAPH_REPLAY);
    mid->nb[1] += 4;
    cr_assert_eq(look(g, k_extra, &e), GGMLX_CUDA_GRAPH_PLAIN, "a change deep inside is seen");
    ggml_free(ctx);
}
