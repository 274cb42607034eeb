/*
 * test-meta-attention.c -- attention as llama.cpp's tensor split mode (-sm tensor) runs it on a
 * meta device: views that regroup a tensor split by head (the merged K/V view before it is
 * stored, the cache's per-head view), SET_ROWS into a KV cache split by head, and
 * FLASH_ATTN_EXT split by head (GQA, sinks). Each case runs on the plain CPU and on a meta device
 * over 2 or 3 SIM devices (uneven head counts too); the results, and the caches read back with
 * ggml_backend_tensor_get, must agree. What cannot run split is refused with a message that
 * says why, never computed wrong.
 */
#include "meta-fixture.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static void three_sims(void) {
    meta_configure(3, 64 * MiB);
}

TestSuite(meta_attention, .init = three_sims, .timeout = 60);

static struct split_table g_tab;

/* ---- a case: named tensors, a graph built over them, run on the CPU or on a meta device -------- */

#define MAX_T 12

struct tspec {
    const char                         * name;
    enum ggml_type                       type;
    int64_t                              ne[4];
    bool                                 input; /* a graph input (whole); otherwise a weight */
    struct ggml_backend_meta_split_state split; /* weights: how the meta device splits it */
};

typedef struct ggml_tensor * (*build_fn)(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                         const void * params);

struct acase {
    int          n;
    struct tspec t[MAX_T];
    float      * v[MAX_T]; /* host values, indices included, as floats */
    build_fn     build;
    const void * params;
    int          computes; /* the same graph computed this many times (0: once), as llama.cpp reuses graphs */
};

/* frees the values; the case keeps its graph and may take new tensors */
static void case_free(struct acase * c) {
    for (int i = 0; i < c->n; i++) {
        free(c->v[i]);
        c->v[i] = NULL;
    }
    c->n = 0;
}

static int64_t spec_nelements(const struct tspec * s) {
    return s->ne[0] * s->ne[1] * s->ne[2] * s->ne[3];
}

/* adds a tensor with pseudo-random values in [-1, 1), from seed */
static int add_tensor(struct acase * c, const char * name, enum ggml_type type, const int64_t ne[4], bool input,
                      struct ggml_backend_meta_split_state split, uint64_t seed) {
    cr_assert_lt(c->n, MAX_T);
    const int i = c->n++;
    c->t[i] = (struct tspec) { .name = name, .type = type, .ne = { ne[0], ne[1], ne[2], ne[3] }, .input = input,
                               .split = split };
    const int64_t n = spec_nelements(&c->t[i]);
    c->v[i] = malloc((size_t) n * sizeof *c->v[i]);
    cr_assert_not_null(c->v[i]);
    uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (int64_t k = 0; k < n; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        c->v[i][k] = 2.0f * (float) ((x >> 40) * (1.0 / 16777216.0)) - 1.0f;
    }
    return i;
}

static int add_weight(struct acase * c, const char * name, enum ggml_type type, const int64_t ne[4],
                      struct ggml_backend_meta_split_state split, uint64_t seed) {
    return add_tensor(c, name, type, ne, false, split, seed);
}

static int add_input(struct acase * c, const char * name, enum ggml_type type, const int64_t ne[4], uint64_t seed) {
    return add_tensor(c, name, type, ne, true, split_mirrored(), seed);
}

/* one segment; device d holds units[d] * unit along axis (heads times the head's extent) */
static struct ggml_backend_meta_split_state split_units(int axis, size_t n_devs, const int64_t * units, int64_t unit) {
    int64_t ne[GGML_BACKEND_META_MAX_DEVICES];
    for (size_t d = 0; d < n_devs; d++) {
        ne[d] = units[d] * unit;
    }
    return split_list(axis, 1, ne, n_devs);
}

static void put_values(struct ggml_tensor * t, const float * v) {
    const int64_t n = ggml_nelements(t);
    void * buf = malloc(ggml_nbytes(t));
    cr_assert_not_null(buf);
    switch (t->type) {
    case GGML_TYPE_F32: memcpy(buf, v, (size_t) n * sizeof(float)); break;
    case GGML_TYPE_F16: ggml_fp32_to_fp16_row(v, buf, n); break;
    case GGML_TYPE_I32: for (int64_t i = 0; i < n; i++) ((int32_t *) buf)[i] = (int32_t) v[i]; break;
    case GGML_TYPE_I64: for (int64_t i = 0; i < n; i++) ((int64_t *) buf)[i] = (int64_t) v[i]; break;
    case GGML_TYPE_Q8_0: ggml_quantize_chunk(t->type, v, buf, 0, n / t->ne[0], t->ne[0], NULL); break;
    default: cr_assert_fail("type %s", ggml_type_name(t->type));
    }
    ggml_backend_tensor_set(t, buf, 0, ggml_nbytes(t));
    free(buf);
}

static float * take_values(const struct ggml_tensor * t) {
    const int64_t n = ggml_nelements(t);
    void * buf = malloc(ggml_nbytes(t));
    float * v = malloc((size_t) n * sizeof *v);
    cr_assert(buf != NULL && v != NULL);
    ggml_backend_tensor_get(t, buf, 0, ggml_nbytes(t));
    switch (t->type) {
    case GGML_TYPE_F32: memcpy(v, buf, (size_t) n * sizeof(float)); break;
    case GGML_TYPE_F16: ggml_fp16_to_fp32_row(buf, v, n); break;
    case GGML_TYPE_Q8_0: ggml_get_type_traits(t->type)->to_float(buf, v, n); break;
    default: cr_assert_fail("type %s", ggml_type_name(t->type));
    }
    free(buf);
    return v;
}

struct outcome {
    enum ggml_status        status;
    char                    err[512];
    bool                    logged;     /* the failure was logged as an error */
    float                 * out;        /* the result's values (NULL when it is a view) */
    int64_t                 n_out;
    float                 * back[MAX_T]; /* each weight read back after the compute */
    struct ggmlx_meta_stats stats;
};

static void outcome_free(struct outcome * o) {
    free(o->out);
    for (int i = 0; i < MAX_T; i++) {
        free(o->back[i]);
    }
}

/* c on the CPU (n_devs 0) or on a meta device over SIM0..n_devs-1 splitting the weights as c says */
static void run_case(const struct acase * c, size_t n_devs, struct outcome * o) {
    memset(o, 0, sizeof *o);
    ggml_backend_dev_t dev;
    if (n_devs == 0) {
        dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
        cr_assert_not_null(dev);
    } else {
        split_table_init(&g_tab);
        for (int i = 0; i < c->n; i++) {
            if (!c->t[i].input) {
                split_table_add(&g_tab, c->t[i].name, c->t[i].split);
            }
        }
        dev = meta_over_sims(n_devs, &g_tab);
    }
    ggml_backend_t be = ggml_backend_dev_init(dev, NULL);
    cr_assert_not_null(be, "%s", last_err());
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    struct ggml_context * wctx = meta_ctx_new(MAX_T), * gctx = meta_ctx_new(256);
    struct ggml_tensor * t[MAX_T];
    for (int i = 0; i < c->n; i++) {
        t[i] = ggml_new_tensor(c->t[i].input ? gctx : wctx, c->t[i].type, 4, c->t[i].ne);
        ggml_set_name(t[i], c->t[i].name);
        if (c->t[i].input) {
            ggml_set_input(t[i]);
        }
    }
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
    cr_assert_not_null(wbuf, "%s", last_err());
    ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (int i = 0; i < c->n; i++) {
        if (!c->t[i].input) {
            put_values(t[i], c->v[i]);
        }
    }
    struct ggml_cgraph * gf = ggml_new_graph(gctx);
    struct ggml_tensor * out = c->build(gctx, gf, t, c->params);
    cr_assert_not_null(out, "%s", last_err());
    ggml_set_output(out);
    ggml_build_forward_expand(gf, out);
    ggml_gallocr_t ga = ggml_gallocr_new(buft);
    cr_assert(ggml_gallocr_alloc_graph(ga, gf), "gallocr: %s", last_err());
    if (out->view_src == NULL && out->type == GGML_TYPE_F32) {
        /* NaN: a device that leaves its part of the result unwritten shows (before the inputs are
           set: the allocator may have placed the result over an input it no longer needs) */
        ggml_backend_tensor_memset(out, 0xff, 0, ggml_nbytes(out));
    }
    for (int i = 0; i < c->n; i++) {
        if (c->t[i].input && t[i]->buffer != NULL) { /* an input this graph does not use is not allocated */
            put_values(t[i], c->v[i]);
        }
    }
    ggmlx_clear_last_error();
    g_n_errors = 0;
    o->status = ggml_backend_graph_compute(be, gf);
    for (int k = 1; k < c->computes && o->status == GGML_STATUS_SUCCESS; k++) {
        /* the inputs again: the allocator lets later nodes reuse an input's memory */
        for (int i = 0; i < c->n; i++) {
            if (c->t[i].input && t[i]->buffer != NULL) {
                put_values(t[i], c->v[i]);
            }
        }
        o->status = ggml_backend_graph_compute(be, gf);
    }
    if (o->status != GGML_STATUS_SUCCESS) {
        snprintf(o->err, sizeof o->err, "%s", last_err());
        o->logged = g_n_errors > 0;
        ggmlx_clear_last_error();
        g_n_errors = 0;
    } else {
        if (out->view_src == NULL) {
            o->out   = take_values(out);
            o->n_out = ggml_nelements(out);
        }
        for (int i = 0; i < c->n; i++) {
            if (!c->t[i].input) {
                o->back[i] = take_values(t[i]);
            }
        }
        if (n_devs > 0) {
            cr_assert(ggmlx_meta_get_stats(be, &o->stats), "%s", last_err());
        }
    }
    ggml_gallocr_free(ga);
    ggml_backend_buffer_free(wbuf);
    ggml_free(gctx);
    ggml_free(wctx);
    ggml_backend_free(be);
}

/* within 1e-5 of the CPU's value, relative to it (to 1 for values below 1); NaN never passes */
static void expect_close(const float * got, const float * want, int64_t n, const char * what) {
    bool any = false;
    for (int64_t i = 0; i < n; i++) {
        const double tol = 1e-5 * fmax(1.0, fabs((double) want[i]));
        cr_assert(fabs((double) got[i] - (double) want[i]) <= tol, "%s: element %lld is %.9g, the CPU's %.9g", what,
                  (long long) i, (double) got[i], (double) want[i]);
        any = any || want[i] != 0.0f;
    }
    cr_assert(any, "%s: the CPU's values are all 0, which checks nothing", what);
}

/* c on n_devs SIM devices gives the CPU's result and leaves every weight as the CPU does */
static struct ggmlx_meta_stats expect_like_cpu(const struct acase * c, size_t n_devs, const char * what) {
    struct outcome cpu, meta;
    run_case(c, 0, &cpu);
    cr_assert_eq(cpu.status, GGML_STATUS_SUCCESS, "%s on the CPU: %s", what, cpu.err);
    run_case(c, n_devs, &meta);
    cr_assert_eq(meta.status, GGML_STATUS_SUCCESS, "%s on %zu devices: %s", what, n_devs, meta.err);
    char msg[256];
    if (cpu.out != NULL) {
        cr_assert_eq(meta.n_out, cpu.n_out);
        snprintf(msg, sizeof msg, "%s on %zu devices, the result", what, n_devs);
        expect_close(meta.out, cpu.out, cpu.n_out, msg);
    }
    for (int i = 0; i < c->n; i++) {
        if (!c->t[i].input) {
            snprintf(msg, sizeof msg, "%s on %zu devices, '%s' read back", what, n_devs, c->t[i].name);
            expect_close(meta.back[i], cpu.back[i], spec_nelements(&c->t[i]), msg);
        }
    }
    const struct ggmlx_meta_stats st = meta.stats;
    outcome_free(&cpu);
    outcome_free(&meta);
    return st;
}

/* c on n_devs SIM devices is refused: an error status, logged, whose message holds both strings */
static void expect_refused(const struct acase * c, size_t n_devs, const char * what, const char * has1, const char * has2) {
    struct outcome o;
    run_case(c, n_devs, &o);
    cr_assert_neq(o.status, GGML_STATUS_SUCCESS, "%s on %zu devices must be refused", what, n_devs);
    cr_assert(o.logged, "%s: the refusal is logged", what);
    cr_assert(strstr(o.err, has1) != NULL, "%s: the message names '%s': %s", what, has1, o.err);
    cr_assert(has2 == NULL || strstr(o.err, has2) != NULL, "%s: the message says '%s': %s", what, has2, o.err);
    outcome_free(&o);
}

/* ---- views that regroup a tensor split by head -------------------------------------------------- */

/*
 * h [hd, heads, T] split by head (axis 1), viewed as [hd * heads, T] (ggml_view_2d with
 * nb1 = h->nb[2], llama.cpp's merge before K and V are stored): one view row is one span of the
 * source, so the view is split along axis 0, each device's part hd times its heads. h is a
 * weight (dense pieces) or computed from one (pieces at their place in the compute buffer).
 */
struct merged_params {
    int64_t hd, heads, tokens;
    bool    computed;
    int64_t skip; /* tokens the view leaves out in front: an offset of whole spans */
};

static struct ggml_tensor * build_merged(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                         const void * params) {
    (void) gf;
    const struct merged_params * p = params;
    struct ggml_tensor * h = t[0];
    if (p->computed) {
        /* w [8, hd * heads] split by rows: the product is split along axis 0, by whole heads */
        h = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, t[1], t[2]), p->hd, p->heads, p->tokens);
        h = ggml_scale(ctx, h, 0.5f);
    }
    struct ggml_tensor * merged = ggml_view_2d(ctx, h, p->hd * p->heads, p->tokens - p->skip, h->nb[2],
                                               (size_t) p->skip * h->nb[2]);
    ggml_set_name(merged, "merged");
    return ggml_cont(ctx, merged);
}

static void check_merged(size_t n_devs, const int64_t * heads, int64_t n_heads, bool computed, int64_t skip) {
    const struct merged_params p = { .hd = 4, .heads = n_heads, .tokens = 3, .computed = computed, .skip = skip };
    struct acase c = { .build = build_merged, .params = &p };
    add_weight(&c, "h", GGML_TYPE_F32, (int64_t[]) { p.hd, n_heads, p.tokens, 1 }, split_units(1, n_devs, heads, 1), 1);
    add_weight(&c, "w", GGML_TYPE_F32, (int64_t[]) { 8, p.hd * n_heads, 1, 1 }, split_units(1, n_devs, heads, p.hd), 2);
    add_input(&c, "x", GGML_TYPE_F32, (int64_t[]) { 8, p.tokens, 1, 1 }, 3);
    char what[128];
    snprintf(what, sizeof what, "merged view of a %s split by head, from token %lld", computed ? "product" : "weight",
             (long long) skip);
    expect_like_cpu(&c, n_devs, what);
    case_free(&c);
}

Test(meta_attention, merged_view_of_a_head_split_tensor_keeps_the_split) {
    for (int computed = 0; computed <= 1; computed++) {
        for (int64_t skip = 0; skip <= 1; skip++) {
            check_merged(2, (const int64_t[]) { 2, 2 }, 4, computed, skip);
            check_merged(2, (const int64_t[]) { 2, 1 }, 3, computed, skip);
            check_merged(3, (const int64_t[]) { 1, 2, 1 }, 4, computed, skip);
        }
    }
}

/*
 * A cache [hd * kv_heads, kv_size, streams] split by head (axis 0), viewed per head as llama.cpp's
 * get_k does: [hd, kv_heads, n_kv, streams - s0] with nb1 = one head, nb2 = one cache row, nb3 =
 * one stream, starting at stream s0. The view is split along axis 1 (by head); each device views
 * its own piece, whose rows and streams are shorter. Then permuted as flash attention takes it.
 */
struct cache_view_params {
    int64_t hd, kv_heads, kv_size, streams, n_kv, s0;
};

static struct ggml_tensor * cache_head_view(struct ggml_context * ctx, struct ggml_tensor * cache,
                                            const struct cache_view_params * p) {
    const size_t row = ggml_row_size(cache->type, p->hd * p->kv_heads);
    struct ggml_tensor * v = ggml_view_4d(ctx, cache, p->hd, p->kv_heads, p->n_kv, p->streams - p->s0,
                                          ggml_row_size(cache->type, p->hd), row, row * (size_t) p->kv_size,
                                          row * (size_t) p->kv_size * (size_t) p->s0);
    ggml_format_name(v, "%s_heads", cache->name);
    return v;
}

static struct ggml_tensor * build_head_view(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                            const void * params) {
    (void) gf;
    struct ggml_tensor * v = cache_head_view(ctx, t[0], params);
    return ggml_cont(ctx, ggml_permute(ctx, v, 0, 2, 1, 3));
}

static void check_head_view(size_t n_devs, const int64_t * kv_heads, int64_t n_kv_heads, enum ggml_type type) {
    const int64_t hd = ggml_blck_size(type) > 1 ? ggml_blck_size(type) : 4;
    const struct cache_view_params p = { .hd = hd, .kv_heads = n_kv_heads, .kv_size = 8, .streams = 3, .n_kv = 5, .s0 = 1 };
    struct acase c = { .build = build_head_view, .params = &p };
    add_weight(&c, "cache", type, (int64_t[]) { p.hd * n_kv_heads, p.kv_size, p.streams, 1 },
               split_units(0, n_devs, kv_heads, p.hd), 4);
    char what[128];
    snprintf(what, sizeof what, "head view of a %s cache split by head", ggml_type_name(type));
    expect_like_cpu(&c, n_devs, what);
    case_free(&c);
}

Test(meta_attention, head_view_of_a_cache_split_by_head_keeps_the_split) {
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0 };
    for (int i = 0; i < 3; i++) {
        check_head_view(2, (const int64_t[]) { 1, 1 }, 2, types[i]);
        check_head_view(2, (const int64_t[]) { 2, 1 }, 3, types[i]);
        check_head_view(3, (const int64_t[]) { 1, 1, 1 }, 3, types[i]);
        check_head_view(3, (const int64_t[]) { 2, 0, 2 }, 4, types[i]);
    }
}

/* views of a cache split by head [hd * 2, 8] over 2 devices that do not cover whole spans */
enum cut_kind { CUT_ONE_HEAD, CUT_ALL_BUT_THE_FIRST_HEAD, CUT_NONE, CUT_NONE_ALL };

static struct ggml_tensor * build_cut(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                      const void * params) {
    (void) gf;
    const enum cut_kind kind = *(const enum cut_kind *) params;
    struct ggml_tensor * cache = t[0];
    const int64_t hd = 4, n_kv = 5;
    struct ggml_tensor * v;
    switch (kind) {
    case CUT_ONE_HEAD: /* device 1's head alone */
        v = ggml_view_2d(ctx, cache, hd, n_kv, cache->nb[1], ggml_row_size(cache->type, hd));
        ggml_set_name(v, "one_head");
        break;
    case CUT_ALL_BUT_THE_FIRST_HEAD:
        v = ggml_view_2d(ctx, cache, cache->ne[0] - hd, n_kv, cache->nb[1], ggml_row_size(cache->type, hd));
        ggml_set_name(v, "later_heads");
        break;
    case CUT_NONE_ALL: /* all of it, shaped as it is */
        v = ggml_view_2d(ctx, cache, cache->ne[0], cache->ne[1], cache->nb[1], 0);
        ggml_set_name(v, "all_rows");
        break;
    default: /* the first n_kv rows whole: split as the cache */
        v = ggml_view_2d(ctx, cache, cache->ne[0], n_kv, cache->nb[1], 0);
        ggml_set_name(v, "first_rows");
        break;
    }
    return ggml_cont(ctx, v);
}

Test(meta_attention, view_cutting_through_the_pieces_is_refused_with_a_message) {
    const int64_t heads[2] = { 1, 1 };
    enum cut_kind kind = CUT_NONE;
    struct acase c = { .build = build_cut, .params = &kind };
    add_weight(&c, "cache", GGML_TYPE_F32, (int64_t[]) { 8, 8, 1, 1 }, split_units(0, 2, heads, 4), 5);
    /* the whole rows of the cache's first cells keep the split */
    expect_like_cpu(&c, 2, "a view of whole cache rows");
    kind = CUT_ONE_HEAD;
    expect_refused(&c, 2, "a view of one head", "one_head", "cuts through the devices' pieces");
    kind = CUT_ALL_BUT_THE_FIRST_HEAD;
    expect_refused(&c, 2, "a view of all heads but the first", "later_heads", "cuts through the devices' pieces");
    case_free(&c);
}

/* a VIEW with the source's own shape and strides: each device's view is its piece, as it is */
Test(meta_attention, view_of_all_of_a_split_tensor_is_each_devices_piece) {
    enum cut_kind kind = CUT_NONE_ALL;
    struct acase c = { .build = build_cut, .params = &kind };
    add_weight(&c, "cache", GGML_TYPE_F32, (int64_t[]) { 8, 8, 1, 1 }, split_units(0, 2, (const int64_t[]) { 1, 1 }, 4), 5);
    expect_like_cpu(&c, 2, "a view of all of a cache split by head");
    case_free(&c);
    add_weight(&c, "cache", GGML_TYPE_F32, (int64_t[]) { 8, 8, 1, 1 }, split_units(1, 3, (const int64_t[]) { 3, 0, 5 }, 1), 5);
    expect_like_cpu(&c, 3, "a view of all of a table split by rows");
    case_free(&c);
}

/* ---- SET_ROWS into a cache split by head ------------------------------------------------------ */

/*
 * rows [hd * kv_heads, T] split by head along axis 0 (a weight, or computed from one) written at
 * the whole indices idx into cache [hd * kv_heads, kv_size, streams] split alike; with several
 * streams the cache is first reshaped to one table of kv_size * streams rows, as llama.cpp does.
 */
struct set_rows_params {
    int64_t hd, kv_heads, kv_size, streams, tokens;
    bool    computed;
};

static struct ggml_tensor * build_set_rows(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                           const void * params) {
    (void) gf;
    const struct set_rows_params * p = params;
    struct ggml_tensor * cache = t[0], * rows = t[1], * idx = t[2];
    if (p->computed) {
        rows = ggml_scale(ctx, rows, 1.5f);
    }
    if (p->streams > 1) {
        cache = ggml_reshape_2d(ctx, cache, cache->ne[0], p->kv_size * p->streams);
    }
    return ggml_set_rows(ctx, cache, rows, idx);
}

static void check_set_rows(size_t n_devs, const int64_t * kv_heads, int64_t n_kv_heads, enum ggml_type type,
                           int64_t streams, bool computed) {
    const int64_t hd = ggml_blck_size(type) > 1 ? ggml_blck_size(type) : 4;
    const struct set_rows_params p = { .hd = hd, .kv_heads = n_kv_heads, .kv_size = 6, .streams = streams, .tokens = 3,
                                       .computed = computed };
    struct acase c = { .build = build_set_rows, .params = &p };
    const struct ggml_backend_meta_split_state s = split_units(0, n_devs, kv_heads, p.hd);
    add_weight(&c, "cache", type, (int64_t[]) { p.hd * n_kv_heads, p.kv_size, streams, 1 }, s, 6);
    add_weight(&c, "rows", GGML_TYPE_F32, (int64_t[]) { p.hd * n_kv_heads, p.tokens, 1, 1 }, s, 7);
    const int idx = add_input(&c, "idx", GGML_TYPE_I64, (int64_t[]) { p.tokens, 1, 1, 1 }, 0);
    /* cells 4, 1 and the last one (in the last stream when there are several) */
    c.v[idx][0] = 4.0f;
    c.v[idx][1] = 1.0f;
    c.v[idx][2] = (float) (p.kv_size * streams - 1);
    char what[128];
    snprintf(what, sizeof what, "SET_ROWS of %s rows into a %s cache of %lld stream(s)", computed ? "computed" : "stored",
             ggml_type_name(type), (long long) streams);
    expect_like_cpu(&c, n_devs, what);
    case_free(&c);
}

Test(meta_attention, set_rows_into_a_cache_split_by_head_writes_each_devices_part) {
    const enum ggml_type types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_Q8_0 };
    for (int i = 0; i < 3; i++) {
        for (int computed = 0; computed <= 1; computed++) {
            check_set_rows(2, (const int64_t[]) { 1, 1 }, 2, types[i], 1, computed);
            check_set_rows(2, (const int64_t[]) { 2, 1 }, 3, types[i], 1, computed);
            check_set_rows(3, (const int64_t[]) { 1, 1, 1 }, 3, types[i], 2, computed);
        }
    }
}

/* whole (mirrored) rows into a cache split by head: each device writes its heads' part of them */
Test(meta_attention, set_rows_of_whole_rows_into_a_cache_split_by_head) {
    for (int computed = 0; computed <= 1; computed++) {
        const struct set_rows_params p = { .hd = 4, .kv_heads = 3, .kv_size = 6, .streams = 1, .tokens = 3,
                                           .computed = computed };
        struct acase c = { .build = build_set_rows, .params = &p };
        add_weight(&c, "cache", GGML_TYPE_F16, (int64_t[]) { 12, 6, 1, 1 },
                   split_units(0, 2, (const int64_t[]) { 2, 1 }, 4), 6);
        add_weight(&c, "rows", GGML_TYPE_F32, (int64_t[]) { 12, 3, 1, 1 }, split_mirrored(), 7);
        const int idx = add_input(&c, "idx", GGML_TYPE_I64, (int64_t[]) { 3, 1, 1, 1 }, 0);
        for (int k = 0; k < 3; k++) {
            c.v[idx][k] = (float) (5 - 2 * k);
        }
        expect_like_cpu(&c, 2, computed ? "SET_ROWS of computed whole rows" : "SET_ROWS of stored whole rows");
        case_free(&c);
    }
}

/* rows split by head one way, the cache another: each device's rows would land in another's heads */
Test(meta_attention, set_rows_into_a_cache_split_otherwise_is_refused) {
    const struct set_rows_params p = { .hd = 4, .kv_heads = 3, .kv_size = 6, .streams = 1, .tokens = 3 };
    struct acase c = { .build = build_set_rows, .params = &p };
    add_weight(&c, "cache", GGML_TYPE_F32, (int64_t[]) { 12, 6, 1, 1 }, split_units(0, 2, (const int64_t[]) { 1, 2 }, 4), 6);
    add_weight(&c, "rows", GGML_TYPE_F32, (int64_t[]) { 12, 3, 1, 1 }, split_units(0, 2, (const int64_t[]) { 2, 1 }, 4), 7);
    const int idx = add_input(&c, "idx", GGML_TYPE_I64, (int64_t[]) { 3, 1, 1, 1 }, 0);
    for (int k = 0; k < 3; k++) {
        c.v[idx][k] = (float) k;
    }
    expect_refused(&c, 2, "SET_ROWS into a cache split otherwise", "SET_ROWS", "from rows split as it or whole");
    case_free(&c);
    /* split rows into a whole table: no device has all of a row to write */
    add_weight(&c, "cache", GGML_TYPE_F32, (int64_t[]) { 12, 6, 1, 1 }, split_mirrored(), 6);
    add_weight(&c, "rows", GGML_TYPE_F32, (int64_t[]) { 12, 3, 1, 1 }, split_units(0, 2, (const int64_t[]) { 2, 1 }, 4), 7);
    add_input(&c, "idx", GGML_TYPE_I64, (int64_t[]) { 3, 1, 1, 1 }, 0);
    expect_refused(&c, 2, "SET_ROWS of split rows into a whole cache", "SET_ROWS", "split only along axis 0");
    case_free(&c);
}

/* ---- FLASH_ATTN_EXT split by head ----------------------------------------------------------------- */

/*
 * q [D, n_q, heads, 1], k and v [D, n_kv, kv_heads, 1] split along axis 2 (by head), each
 * device's query heads the groups of its K/V heads; a whole F16 mask with masked cells; sinks
 * (one per query head) whole or split as the query heads. The result [D, heads, n_q] is split
 * along axis 1.
 */
enum sinks_kind { SINKS_NONE, SINKS_WHOLE, SINKS_SPLIT };

struct fa_params {
    int64_t         d, n_q, n_kv;
    float           max_bias;
    enum sinks_kind sinks;
};

static struct ggml_tensor * build_fa(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                     const void * params) {
    (void) gf;
    const struct fa_params * p = params;
    struct ggml_tensor * fa = ggml_flash_attn_ext(ctx, t[0], t[1], t[2], t[3], 1.0f / sqrtf((float) p->d), p->max_bias,
                                                  0.0f);
    ggml_set_name(fa, "attn");
    if (p->sinks != SINKS_NONE) {
        ggml_flash_attn_ext_add_sinks(fa, t[4]);
    }
    return fa;
}

/* the FLASH_ATTN case: split_qkv false leaves q, k and v whole */
static void fa_case(struct acase * c, const struct fa_params * p, size_t n_devs, const int64_t * heads, int64_t n_heads,
                    const int64_t * kv_heads, int64_t n_kv_heads, enum ggml_type kv_type, bool split_qkv) {
    *c = (struct acase) { .build = build_fa, .params = p };
    const struct ggml_backend_meta_split_state sq = split_qkv ? split_units(2, n_devs, heads, 1) : split_mirrored();
    const struct ggml_backend_meta_split_state skv = split_qkv ? split_units(2, n_devs, kv_heads, 1) : split_mirrored();
    add_weight(c, "q", GGML_TYPE_F32, (int64_t[]) { p->d, p->n_q, n_heads, 1 }, sq, 11);
    add_weight(c, "k", kv_type, (int64_t[]) { p->d, p->n_kv, n_kv_heads, 1 }, skv, 12);
    add_weight(c, "v", kv_type, (int64_t[]) { p->d, p->n_kv, n_kv_heads, 1 }, skv, 13);
    const int mask = add_input(c, "mask", GGML_TYPE_F16, (int64_t[]) { p->n_kv, p->n_q, 1, 1 }, 14);
    for (int64_t i = 0; i < p->n_q; i++) {
        for (int64_t j = 0; j < p->n_kv; j++) {
            /* causal over the last n_q cells, with a small bias on the others */
            c->v[mask][i * p->n_kv + j] = j > p->n_kv - p->n_q + i ? -INFINITY : 0.25f * (float) ((i + j) % 3);
        }
    }
    add_weight(c, "sinks", GGML_TYPE_F32, (int64_t[]) { n_heads, 1, 1, 1 },
               p->sinks == SINKS_SPLIT ? split_units(0, n_devs, heads, 1) : split_mirrored(), 15);
}

static void check_fa(size_t n_devs, const int64_t * heads, int64_t n_heads, const int64_t * kv_heads, int64_t n_kv_heads) {
    const enum ggml_type types[2] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int ti = 0; ti < 2; ti++) {
        for (int sk = SINKS_NONE; sk <= SINKS_SPLIT; sk++) {
            const struct fa_params p = { .d = 8, .n_q = 3, .n_kv = 7, .sinks = (enum sinks_kind) sk };
            struct acase c;
            fa_case(&c, &p, n_devs, heads, n_heads, kv_heads, n_kv_heads, types[ti], true);
            char what[160];
            snprintf(what, sizeof what, "flash attention, %lld heads over %lld K/V heads, %s K/V, sinks %s",
                     (long long) n_heads, (long long) n_kv_heads, ggml_type_name(types[ti]),
                     sk == SINKS_NONE ? "none" : sk == SINKS_WHOLE ? "whole" : "split");
            expect_like_cpu(&c, n_devs, what);
            case_free(&c);
        }
    }
}

Test(meta_attention, flash_attn_split_by_head_equals_the_cpu) {
    check_fa(2, (const int64_t[]) { 2, 2 }, 4, (const int64_t[]) { 1, 1 }, 2);     /* GQA, even */
    check_fa(2, (const int64_t[]) { 4, 2 }, 6, (const int64_t[]) { 2, 1 }, 3);     /* 3 K/V heads over 2 devices */
    check_fa(3, (const int64_t[]) { 2, 2, 2 }, 6, (const int64_t[]) { 1, 1, 1 }, 3);
    check_fa(3, (const int64_t[]) { 1, 2, 1 }, 4, (const int64_t[]) { 1, 2, 1 }, 4); /* one query head per K/V head */
    check_fa(3, (const int64_t[]) { 2, 0, 2 }, 4, (const int64_t[]) { 1, 0, 1 }, 2); /* a device without heads */
}

/* ALiBi's slope of a head depends on its index among all heads: split by head it is refused */
Test(meta_attention, flash_attn_split_with_alibi_is_refused) {
    const int64_t heads[2] = { 2, 2 }, kv_heads[2] = { 1, 1 };
    struct fa_params p = { .d = 8, .n_q = 3, .n_kv = 7, .max_bias = 0.0f };
    struct acase c;
    fa_case(&c, &p, 2, heads, 4, kv_heads, 2, GGML_TYPE_F16, true);
    expect_like_cpu(&c, 2, "flash attention split by head, no ALiBi");
    p.max_bias = 8.0f;
    expect_refused(&c, 2, "flash attention split by head with ALiBi", "attn", "ALiBi");
    case_free(&c);
    /* whole q, k and v: every device computes all heads, with their own slopes */
    fa_case(&c, &p, 2, heads, 4, kv_heads, 2, GGML_TYPE_F16, false);
    expect_like_cpu(&c, 2, "flash attention with ALiBi, whole");
    case_free(&c);
}

/* device 0 with 2 query heads but 2 K/V heads (of a group size 2): its heads would attend to the wrong K/V */
Test(meta_attention, flash_attn_whose_query_heads_are_not_their_kv_groups_is_refused) {
    const struct fa_params p = { .d = 8, .n_q = 3, .n_kv = 7 };
    struct acase c;
    fa_case(&c, &p, 2, (const int64_t[]) { 2, 2 }, 4, (const int64_t[]) { 2, 0 }, 2, GGML_TYPE_F32, true);
    expect_refused(&c, 2, "flash attention with mismatched groups", "attn", "not the groups of its K/V heads");
    case_free(&c);
}

/* ---- one attention block as llama.cpp builds it ------------------------------------------------ */

/*
 * x [n_embd, T] -> q, k, v projections (weights split by head along axis 1) -> reshape to heads,
 * rope q and k -> k and v merged (view) and stored with SET_ROWS into F16 caches split by head at
 * cells pos .. pos + T - 1 -> views of the caches' first n_kv cells per head -> permute ->
 * FLASH_ATTN_EXT (mask whole) -> reshape to [n_embd, T] -> output projection (split along axis 0:
 * partial sums) -> + x (the reduction). The earlier cells of the caches hold earlier tokens.
 */
struct block_params {
    int64_t hd, heads, kv_heads, n_embd, tokens, kv_size, past;
};

static struct ggml_tensor * build_block(struct ggml_context * ctx, struct ggml_cgraph * gf, struct ggml_tensor ** t,
                                        const void * params) {
    const struct block_params * p = params;
    struct ggml_tensor * wq = t[0], * wk = t[1], * wv = t[2], * wo = t[3], * cache_k = t[4], * cache_v = t[5];
    struct ggml_tensor * x = t[6], * pos = t[7], * idx = t[8], * mask = t[9];
    const int64_t T = p->tokens, n_kv = p->past + T;
    struct ggml_tensor * q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, wq, x), p->hd, p->heads, T);
    struct ggml_tensor * k = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, wk, x), p->hd, p->kv_heads, T);
    struct ggml_tensor * v = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, wv, x), p->hd, p->kv_heads, T);
    q = ggml_rope_ext(ctx, q, pos, NULL, (int) p->hd, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    k = ggml_rope_ext(ctx, k, pos, NULL, (int) p->hd, 0, 0, 10000.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
    const int64_t gqa = p->hd * p->kv_heads;
    struct ggml_tensor * k_rows = ggml_view_2d(ctx, k, gqa, T, k->nb[2], 0);
    struct ggml_tensor * v_rows = ggml_view_2d(ctx, v, gqa, T, v->nb[2], 0);
    /* stored before the views of the caches are read */
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, cache_k, k_rows, idx));
    ggml_build_forward_expand(gf, ggml_set_rows(ctx, cache_v, v_rows, idx));
    const struct cache_view_params cv = { .hd = p->hd, .kv_heads = p->kv_heads, .kv_size = p->kv_size, .streams = 1,
                                          .n_kv = n_kv, .s0 = 0 };
    struct ggml_tensor * kh = ggml_permute(ctx, cache_head_view(ctx, cache_k, &cv), 0, 2, 1, 3);
    struct ggml_tensor * vh = ggml_permute(ctx, cache_head_view(ctx, cache_v, &cv), 0, 2, 1, 3);
    q = ggml_permute(ctx, q, 0, 2, 1, 3);
    struct ggml_tensor * fa = ggml_flash_attn_ext(ctx, q, kh, vh, mask, 1.0f / sqrtf((float) p->hd), 0.0f, 0.0f);
    struct ggml_tensor * cur = ggml_reshape_2d(ctx, fa, p->hd * p->heads, T);
    return ggml_add(ctx, ggml_mul_mat(ctx, wo, cur), x);
}

static void check_block(size_t n_devs, const int64_t * heads, int64_t n_heads, const int64_t * kv_heads,
                        int64_t n_kv_heads, int64_t tokens, enum ggml_type cache_type) {
    const int64_t hd = ggml_blck_size(cache_type) > 1 ? ggml_blck_size(cache_type) : 8;
    const struct block_params p = { .hd = hd, .heads = n_heads, .kv_heads = n_kv_heads, .n_embd = 16,
                                    .tokens = tokens, .kv_size = 16, .past = 4 };
    const int64_t q_dim = p.hd * n_heads, kv_dim = p.hd * n_kv_heads, n_kv = p.past + p.tokens;
    struct acase c = { .build = build_block, .params = &p };
    add_weight(&c, "wq", GGML_TYPE_F32, (int64_t[]) { p.n_embd, q_dim, 1, 1 }, split_units(1, n_devs, heads, p.hd), 21);
    add_weight(&c, "wk", GGML_TYPE_F32, (int64_t[]) { p.n_embd, kv_dim, 1, 1 }, split_units(1, n_devs, kv_heads, p.hd), 22);
    add_weight(&c, "wv", GGML_TYPE_F32, (int64_t[]) { p.n_embd, kv_dim, 1, 1 }, split_units(1, n_devs, kv_heads, p.hd), 23);
    add_weight(&c, "wo", GGML_TYPE_F32, (int64_t[]) { q_dim, p.n_embd, 1, 1 }, split_units(0, n_devs, heads, p.hd), 24);
    add_weight(&c, "cache_k", cache_type, (int64_t[]) { kv_dim, p.kv_size, 1, 1 }, split_units(0, n_devs, kv_heads, p.hd), 25);
    add_weight(&c, "cache_v", cache_type, (int64_t[]) { kv_dim, p.kv_size, 1, 1 }, split_units(0, n_devs, kv_heads, p.hd), 26);
    /* projections near unit scale, so the softmax is not flat */
    for (int i = 0; i < 4; i++) {
        for (int64_t k = 0; k < spec_nelements(&c.t[i]); k++) {
            c.v[i][k] /= sqrtf((float) c.t[i].ne[0]) * 0.5f;
        }
    }
    add_input(&c, "x", GGML_TYPE_F32, (int64_t[]) { p.n_embd, p.tokens, 1, 1 }, 27);
    const int pos = add_input(&c, "pos", GGML_TYPE_I32, (int64_t[]) { p.tokens, 1, 1, 1 }, 0);
    const int idx = add_input(&c, "idx", GGML_TYPE_I64, (int64_t[]) { p.tokens, 1, 1, 1 }, 0);
    const int mask = add_input(&c, "mask", GGML_TYPE_F16, (int64_t[]) { n_kv, p.tokens, 1, 1 }, 0);
    for (int64_t i = 0; i < p.tokens; i++) {
        c.v[pos][i] = (float) (p.past + i);
        c.v[idx][i] = (float) (p.past + i);
        for (int64_t j = 0; j < n_kv; j++) {
            c.v[mask][i * n_kv + j] = j <= p.past + i ? 0.0f : -INFINITY;
        }
    }
    char what[128];
    snprintf(what, sizeof what, "attention block, %lld heads over %lld K/V heads, %lld token(s), %s caches",
             (long long) n_heads, (long long) n_kv_heads, (long long) tokens, ggml_type_name(cache_type));
    const struct ggmlx_meta_stats st = expect_like_cpu(&c, n_devs, what);
    cr_assert_eq(st.n_allreduce_generic, 1, "%s: one reduction, the output projection's partial sums before + x", what);
    /* the same graph again (the caches get the same rows again): the same values */
    c.computes = 2;
    strncat(what, ", computed twice", sizeof what - strlen(what) - 1);
    expect_like_cpu(&c, n_devs, what);
    case_free(&c);
}

Test(meta_attention, llama_attention_block_split_by_head_equals_the_cpu) {
    for (int64_t tokens = 1; tokens <= 3; tokens += 2) { /* generating, and a short prompt */
        check_block(2, (const int64_t[]) { 2, 2 }, 4, (const int64_t[]) { 1, 1 }, 2, tokens, GGML_TYPE_F16);
        check_block(2, (const int64_t[]) { 4, 2 }, 6, (const int64_t[]) { 2, 1 }, 3, tokens, GGML_TYPE_F16);
        check_block(3, (const int64_t[]) { 2, 2, 2 }, 6, (const int64_t[]) { 1, 1, 1 }, 3, tokens, GGML_TYPE_F16);
        check_block(3, (const int64_t[]) { 2, 0, 2 }, 4, (const int64_t[]) { 1, 0, 1 }, 2, tokens, GGML_TYPE_F16);
    }
    check_block(2, (const int64_t[]) { 4, 2 }, 6, (const int64_t[]) { 2, 1 }, 3, 3, GGML_TYPE_Q8_0);
}
