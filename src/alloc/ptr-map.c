/*
 * ptr-map.c -- sizing and freeing of the pointer maps of ptr-map.h.
 */
#include "ptr-map.h"

#include <stdlib.h>
#include <string.h>

bool ggmlx_ptr_map_reset(struct ggmlx_ptr_map * m, size_t n) {
    size_t cap = 64;
    while (cap < 2 * n) {
        cap *= 2;
    }
    if (cap > m->cap) {
        const struct ggml_tensor ** keys = malloc(cap * sizeof *keys);
        int32_t *                   vals = malloc(cap * sizeof *vals);
        uint32_t *                  gen  = calloc(cap, sizeof *gen);
        if (keys == NULL || vals == NULL || gen == NULL) {
            free(keys);
            free(vals);
            free(gen);
            return false;
        }
        ggmlx_ptr_map_free(m);
        m->keys = keys;
        m->vals = vals;
        m->gen  = gen;
        m->cap  = cap;
    }
    if (++m->cur == 0) {
        /* after 2^32 uses the generations wrap: only then is the table cleared */
        memset(m->gen, 0, m->cap * sizeof *m->gen);
        m->cur = 1;
    }
    return true;
}

void ggmlx_ptr_map_free(struct ggmlx_ptr_map * m) {
    free(m->keys);
    free(m->vals);
    free(m->gen);
    m->keys = NULL;
    m->vals = NULL;
    m->gen  = NULL;
    m->cap  = 0;
    m->cur  = 0;
}
