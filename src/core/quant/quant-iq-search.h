/*
 * quant-iq-search.h -- the search tables the codebook (IQ) quantizers look points up in.
 *
 * A quantizer rounds each group of 8 (IQ2, IQ1) or 4 (IQ3) scaled magnitudes to levels
 * l = 0..nlev-1 and packs them into a key, `bits` bits per coordinate, first coordinate lowest.
 * Only some keys are codebook entries; `map` turns a key into its grid index, or, for a key
 * that is not on the grid, into a list of the grid points nearest to it, which the quantizer
 * then searches with its own weighted error. A table set is built from the generated grid of
 * its format (quant-tables.h): the levels are the distinct byte values of the grid in
 * increasing order, and a point's lattice coordinates are 2l+1.
 */
#ifndef GGMLX_QUANT_IQ_SEARCH_H
#define GGMLX_QUANT_IQ_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

enum ggmlx_iq_set {
    GGMLX_IQ_SET_IQ2_XXS,
    GGMLX_IQ_SET_IQ2_XS,
    GGMLX_IQ_SET_IQ2_S,
    GGMLX_IQ_SET_IQ1, /* IQ1_S and IQ1_M share the grid and so the tables */
    GGMLX_IQ_SET_IQ3_XXS,
    GGMLX_IQ_SET_IQ3_S,
    GGMLX_IQ_SET_COUNT,
};

struct ggmlx_iq_search {
    int grid_size; /* entries in the codebook */
    int dim;       /* values per entry: 8 or 4 */
    int nlev;      /* levels per coordinate: 3 or 8 */
    int bits;      /* key bits per coordinate: 2 or 3 */
    int nkeys;     /* 1 << (bits * dim) */
    int nwant;     /* how many distance shells a neighbour list holds */
    /* grid_size x dim lattice coordinates 2l+1, in codebook order */
    const int8_t * pos;
    /* nkeys entries: >= 0 a grid index; < 0 the list at neighbours[-map - 1]. A key with a
     * coordinate >= nlev (no quantizer makes one) shares the entry of the key clamped to nlev-1. */
    const int32_t * map;
    /* lists: a count n >= 1, then n grid indices, nearest shell first, ascending index within a
     * shell (squared Euclidean distance between lattice coordinates) */
    const uint16_t * neighbours;
    int n_neighbours; /* total uint16 entries in neighbours */
};

/* Builds the tables of a set unless they exist (thread-safe). False: out of memory, nothing kept. */
bool ggmlx_iq_search_build(enum ggmlx_iq_set set);
/* Frees them; a no-op when they were never built. Not to be called while a quantizer runs. */
void ggmlx_iq_search_release(enum ggmlx_iq_set set);
/* The tables, or NULL when not built. */
const struct ggmlx_iq_search * ggmlx_iq_search_peek(enum ggmlx_iq_set set);
/* The tables, built first if needed; NULL with an error naming func when memory runs out. */
const struct ggmlx_iq_search * ggmlx_iq_search_get(enum ggmlx_iq_set set, const char * func);

static inline const uint16_t * ggmlx_iq_neighbours(const struct ggmlx_iq_search * s, int32_t map_entry) {
    return s->neighbours + (-(int64_t) map_entry - 1);
}

#endif
