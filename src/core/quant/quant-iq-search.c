/*
 * quant-iq-search.c -- builds and frees the codebook search tables (quant-iq-search.h).
 *
 * The neighbour lists follow upstream's construction: for a key off the grid, every grid point
 * is ranked by squared distance (ties by grid index) and the points of the nwant nearest
 * distinct distances are kept. Distances are small integers, so a histogram replaces the sort.
 * Only keys whose coordinates are all below nlev get their own list; no quantizer forms others.
 */
#include "quant-iq-search.h"

#include "quant-iq.h"

#include "ggml-impl.h"
#include "quant-tables.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct iq_tables {
    struct ggmlx_iq_search pub;
    int8_t *               pos;
    int32_t *              map;
    uint16_t *             neighbours;
};

struct iq_set_desc {
    const char *     name;
    const uint64_t * grid8; /* 8 values per entry, or NULL */
    const uint32_t * grid4; /* 4 values per entry, or NULL */
    int              grid_size;
    bool             is_signed; /* the IQ1 grid holds int8 -1/0/1 */
    int              nwant;
};

static const struct iq_set_desc k_sets[GGMLX_IQ_SET_COUNT] = {
    [GGMLX_IQ_SET_IQ2_XXS] = { "IQ2_XXS", ggmlx_iq2xxs_grid, NULL, 256, false, 2 },
    [GGMLX_IQ_SET_IQ2_XS]  = { "IQ2_XS", ggmlx_iq2xs_grid, NULL, 512, false, 2 },
    [GGMLX_IQ_SET_IQ2_S]   = { "IQ2_S", ggmlx_iq2s_grid, NULL, 1024, false, 1 },
    [GGMLX_IQ_SET_IQ1]     = { "IQ1_S/IQ1_M", ggmlx_iq1s_grid, NULL, 2048, true, 3 },
    [GGMLX_IQ_SET_IQ3_XXS] = { "IQ3_XXS", NULL, ggmlx_iq3xxs_grid, 256, false, 2 },
    [GGMLX_IQ_SET_IQ3_S]   = { "IQ3_S", NULL, ggmlx_iq3s_grid, 512, false, 3 },
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct iq_tables *) g_tables[GGMLX_IQ_SET_COUNT];

static int desc_dim(const struct iq_set_desc * d) {
    return d->grid8 ? 8 : 4;
}

static int desc_value(const struct iq_set_desc * d, int g, int j) {
    if (d->grid8) {
        const uint8_t b = (uint8_t) (d->grid8[g] >> (8 * j));
        return d->is_signed ? (int) (int8_t) b : (int) b;
    }
    return (int) (uint8_t) (d->grid4[g] >> (8 * j));
}

/* the distinct values of the grid, ascending; returns how many (0 when over 8) */
static int collect_levels(const struct iq_set_desc * d, int levels[8]) {
    int n = 0;
    for (int g = 0; g < d->grid_size; ++g) {
        for (int j = 0; j < desc_dim(d); ++j) {
            const int v = desc_value(d, g, j);
            int       k = 0;
            while (k < n && levels[k] < v) {
                ++k;
            }
            if (k < n && levels[k] == v) {
                continue;
            }
            if (n == 8) {
                return 0;
            }
            memmove(levels + k + 1, levels + k, (size_t) (n - k) * sizeof levels[0]);
            levels[k] = v;
            ++n;
        }
    }
    return n;
}

static void free_tables(struct iq_tables * t) {
    if (!t) {
        return;
    }
    free(t->pos);
    free(t->map);
    free(t->neighbours);
    free(t);
}

/* appends to a growing uint16 array; false when out of memory */
static bool push_u16(uint16_t ** a, int * n, int * cap, uint16_t v) {
    if (*n == *cap) {
        const int  ncap = *cap ? 2 * *cap : 4096;
        uint16_t * na   = realloc(*a, (size_t) ncap * sizeof **a);
        if (!na) {
            return false;
        }
        *a   = na;
        *cap = ncap;
    }
    (*a)[(*n)++] = v;
    return true;
}

static bool key_in_range(int key, int dim, int bits, int nlev) {
    for (int i = 0; i < dim; ++i) {
        if (((key >> (bits * i)) & ((1 << bits) - 1)) >= nlev) {
            return false;
        }
    }
    return true;
}

static int clamp_key(int key, int dim, int bits, int nlev) {
    int out = 0;
    for (int i = 0; i < dim; ++i) {
        int l = (key >> (bits * i)) & ((1 << bits) - 1);
        out |= (l < nlev ? l : nlev - 1) << (bits * i);
    }
    return out;
}

/*
 * The list of one off-grid key: dist holds grid_size squared distances, hist the count of each
 * distance (max_d2 + 1 entries, zeroed on return).
 */
static bool append_neighbours(struct iq_tables * t, int key, int * dist, int * hist, int max_d2, int * n, int * cap) {
    const struct ggmlx_iq_search * s = &t->pub;
    int8_t                         p[8];
    for (int i = 0; i < s->dim; ++i) {
        p[i] = (int8_t) (2 * ((key >> (s->bits * i)) & ((1 << s->bits) - 1)) + 1);
    }
    for (int g = 0; g < s->grid_size; ++g) {
        const int8_t * q  = t->pos + (size_t) g * s->dim;
        int            d2 = 0;
        for (int i = 0; i < s->dim; ++i) {
            d2 += (q[i] - p[i]) * (q[i] - p[i]);
        }
        dist[g] = d2;
        hist[d2]++;
    }
    /* the nwant smallest distances present, and how many points they hold */
    int shells[8];
    int nshell = 0, count = 0;
    for (int d2 = 0; d2 <= max_d2 && nshell < s->nwant; ++d2) {
        if (hist[d2]) {
            shells[nshell++] = d2;
            count += hist[d2];
        }
    }
    memset(hist, 0, (size_t) (max_d2 + 1) * sizeof hist[0]);

    t->map[key] = -(*n) - 1;
    bool ok = push_u16(&t->neighbours, n, cap, (uint16_t) count);
    for (int k = 0; ok && k < nshell; ++k) {
        for (int g = 0; ok && g < s->grid_size; ++g) {
            if (dist[g] == shells[k]) {
                ok = push_u16(&t->neighbours, n, cap, (uint16_t) g);
            }
        }
    }
    return ok;
}

static struct iq_tables * build_tables(const struct iq_set_desc * d) {
    int levels[8];
    const int nlev = collect_levels(d, levels);
    if (nlev < 2) {
        ggmlx_error(__func__, "%s: the generated grid has %d distinct values", d->name, nlev);
        return NULL;
    }
    const int dim  = desc_dim(d);
    const int bits = nlev <= 4 ? 2 : 3;

    struct iq_tables * t = calloc(1, sizeof *t);
    if (!t) {
        return NULL;
    }
    t->pub.grid_size = d->grid_size;
    t->pub.dim       = dim;
    t->pub.nlev      = nlev;
    t->pub.bits      = bits;
    t->pub.nkeys     = 1 << (bits * dim);
    t->pub.nwant     = d->nwant;

    const int max_d2 = dim * (2 * nlev - 2) * (2 * nlev - 2);
    int *     dist   = malloc((size_t) d->grid_size * sizeof *dist);
    int *     hist   = calloc((size_t) max_d2 + 1, sizeof *hist);
    t->pos           = malloc((size_t) d->grid_size * (size_t) dim);
    t->map           = malloc((size_t) t->pub.nkeys * sizeof *t->map);
    if (!dist || !hist || !t->pos || !t->map) {
        goto err_free;
    }

    for (int k = 0; k < t->pub.nkeys; ++k) {
        t->map[k] = INT32_MIN; /* not yet filled */
    }
    for (int g = 0; g < d->grid_size; ++g) {
        int key = 0;
        for (int j = 0; j < dim; ++j) {
            int l = 0;
            while (levels[l] != desc_value(d, g, j)) {
                ++l;
            }
            t->pos[(size_t) g * dim + j] = (int8_t) (2 * l + 1);
            key |= l << (bits * j);
        }
        t->map[key] = g;
    }

    int n = 0, cap = 0;
    for (int k = 0; k < t->pub.nkeys; ++k) {
        if (t->map[k] == INT32_MIN && key_in_range(k, dim, bits, nlev)) {
            if (!append_neighbours(t, k, dist, hist, max_d2, &n, &cap)) {
                goto err_free;
            }
        }
    }
    for (int k = 0; k < t->pub.nkeys; ++k) {
        if (t->map[k] == INT32_MIN) {
            t->map[k] = t->map[clamp_key(k, dim, bits, nlev)];
        }
    }
    t->pub.pos          = t->pos;
    t->pub.map          = t->map;
    t->pub.neighbours   = t->neighbours;
    t->pub.n_neighbours = n;
    free(dist);
    free(hist);
    return t;

err_free:
    free(dist);
    free(hist);
    free_tables(t);
    return NULL;
}

bool ggmlx_iq_search_build(enum ggmlx_iq_set set) {
    if ((int) set < 0 || set >= GGMLX_IQ_SET_COUNT) {
        return false;
    }
    if (atomic_load_explicit(&g_tables[set], memory_order_acquire)) {
        return true;
    }
    pthread_mutex_lock(&g_lock);
    bool ok = true;
    if (!atomic_load_explicit(&g_tables[set], memory_order_relaxed)) {
        struct iq_tables * t = build_tables(&k_sets[set]);
        ok                   = t != NULL;
        atomic_store_explicit(&g_tables[set], t, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    return ok;
}

void ggmlx_iq_search_release(enum ggmlx_iq_set set) {
    if ((int) set < 0 || set >= GGMLX_IQ_SET_COUNT) {
        return;
    }
    pthread_mutex_lock(&g_lock);
    struct iq_tables * t = atomic_exchange_explicit(&g_tables[set], NULL, memory_order_acq_rel);
    pthread_mutex_unlock(&g_lock);
    free_tables(t);
}

const struct ggmlx_iq_search * ggmlx_iq_search_peek(enum ggmlx_iq_set set) {
    if ((int) set < 0 || set >= GGMLX_IQ_SET_COUNT) {
        return NULL;
    }
    struct iq_tables * t = atomic_load_explicit(&g_tables[set], memory_order_acquire);
    return t ? &t->pub : NULL;
}

const struct ggmlx_iq_search * ggmlx_iq_search_get(enum ggmlx_iq_set set, const char * func) {
    if (!ggmlx_iq_search_build(set)) {
        ggmlx_error(func, "out of memory building the %s codebook search tables",
                    (int) set >= 0 && set < GGMLX_IQ_SET_COUNT ? k_sets[set].name : "?");
        return NULL;
    }
    return ggmlx_iq_search_peek(set);
}

/* ---- quant.h hooks (quant-iq.h) ---- */

bool ggmlx_iq2_xxs_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ2_XXS); }
bool ggmlx_iq2_xs_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ2_XS); }
bool ggmlx_iq2_s_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ2_S); }
bool ggmlx_iq3_xxs_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ3_XXS); }
bool ggmlx_iq3_s_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ3_S); }
bool ggmlx_iq1_init(void) { return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ1); }

void ggmlx_iq2_xxs_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ2_XXS); }
void ggmlx_iq2_xs_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ2_XS); }
void ggmlx_iq2_s_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ2_S); }
void ggmlx_iq3_xxs_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ3_XXS); }
void ggmlx_iq3_s_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ3_S); }
void ggmlx_iq1_release(void) { ggmlx_iq_search_release(GGMLX_IQ_SET_IQ1); }
