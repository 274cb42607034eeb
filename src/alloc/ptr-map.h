/*
 * ptr-map.h -- a map from tensor pointers to int32 values, for tables rebuilt for every graph
 * (the allocator's fingerprints, the scheduler's per-tensor state). Open addressing over a
 * power of two; a slot belongs to the current use only when it carries the map's generation,
 * so starting over (ggmlx_ptr_map_reset) clears nothing.
 */
#ifndef GGMLX_PTR_MAP_H
#define GGMLX_PTR_MAP_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ggmlx_ptr_map {
    const struct ggml_tensor ** keys;
    int32_t                   * vals;
    uint32_t                  * gen;
    size_t                      cap; /* a power of two, 0 before first use */
    uint32_t                    cur;
};

/* An empty map with room for n keys at half load; false when out of host memory. */
bool ggmlx_ptr_map_reset(struct ggmlx_ptr_map * m, size_t n);
void ggmlx_ptr_map_free(struct ggmlx_ptr_map * m);

static inline size_t ggmlx_ptr_map_slot(const struct ggmlx_ptr_map * m, const struct ggml_tensor * t) {
    uint64_t x = (uint64_t) (uintptr_t) t;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    const size_t mask = m->cap - 1;
    size_t i = (size_t) (x >> 20) & mask;
    while (m->gen[i] == m->cur && m->keys[i] != t) {
        i = (i + 1) & mask;
    }
    return i;
}

/* t's value, or -1 */
static inline int32_t ggmlx_ptr_map_find(const struct ggmlx_ptr_map * m, const struct ggml_tensor * t) {
    if (m->cap == 0) {
        return -1;
    }
    const size_t i = ggmlx_ptr_map_slot(m, t);
    return m->gen[i] == m->cur ? m->vals[i] : -1;
}

/* t's value when present (*added false), else val stored for t (*added true); the map must have room */
static inline int32_t ggmlx_ptr_map_get_or_add(struct ggmlx_ptr_map * m, const struct ggml_tensor * t, int32_t val,
                                               bool * added) {
    const size_t i = ggmlx_ptr_map_slot(m, t);
    *added = m->gen[i] != m->cur;
    if (*added) {
        m->gen[i]  = m->cur;
        m->keys[i] = t;
        m->vals[i] = val;
    }
    return m->vals[i];
}

/* store val for t, replacing any value; the map must have room */
static inline void ggmlx_ptr_map_put(struct ggmlx_ptr_map * m, const struct ggml_tensor * t, int32_t val) {
    const size_t i = ggmlx_ptr_map_slot(m, t);
    m->gen[i]  = m->cur;
    m->keys[i] = t;
    m->vals[i] = val;
}

#endif /* GGMLX_PTR_MAP_H */
