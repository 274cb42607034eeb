/*
 * dyn-tallocr.h -- the offset allocator behind gallocr: it hands out offsets in up to
 * GGMLX_VBUFFER_MAX_CHUNKS chunks without touching any memory, and remembers how large each
 * chunk had to grow. gallocr runs a graph through it to plan addresses, then allocates backend
 * buffers of the recorded chunk sizes. Internal to libggml-base.
 */
#ifndef GGMLX_DYN_TALLOCR_H
#define GGMLX_DYN_TALLOCR_H

#include <stdbool.h>
#include <stddef.h>

/* A graph's memory may span this many backend buffers of one buffer type (upstream's number). */
#define GGMLX_VBUFFER_MAX_CHUNKS 16

struct ggmlx_addr {
    int    chunk;  /* -1: nowhere */
    size_t offset;
};

struct ggmlx_free_block {
    size_t offset;
    size_t size;
};

struct ggmlx_chunk {
    struct ggmlx_free_block * blocks; /* sorted by offset, never adjacent */
    int                       n_blocks;
    int                       cap_blocks;
    size_t                    capacity; /* how far the chunk may grow */
    size_t                    high;     /* bytes it had to grow to so far */
};

struct ggmlx_dyn_tallocr {
    size_t             alignment;
    size_t             max_chunk; /* the buffer type's max size */
    int                n_chunks;
    struct ggmlx_chunk chunks[GGMLX_VBUFFER_MAX_CHUNKS];
};

/* alignment must be a power of two; max_chunk 0 means no limit */
void ggmlx_dyn_tallocr_init(struct ggmlx_dyn_tallocr * a, size_t alignment, size_t max_chunk);
void ggmlx_dyn_tallocr_release(struct ggmlx_dyn_tallocr * a);

/* forget every allocation and every chunk (keeps the block arrays for reuse) */
void ggmlx_dyn_tallocr_reset(struct ggmlx_dyn_tallocr * a);

/* bytes a request of size takes (aligned, at least one alignment unit) */
size_t ggmlx_dyn_tallocr_round(const struct ggmlx_dyn_tallocr * a, size_t size);

/*
 * An address for size bytes: the smallest hole that fits; else the end of the chunk that has to
 * grow least; else a new chunk. chunk -1 when no chunk is left or host memory ran out.
 */
struct ggmlx_addr ggmlx_dyn_tallocr_alloc(struct ggmlx_dyn_tallocr * a, size_t size);

/* give back what ggmlx_dyn_tallocr_alloc(a, size) returned at addr; false when host memory ran out */
bool ggmlx_dyn_tallocr_free(struct ggmlx_dyn_tallocr * a, struct ggmlx_addr addr, size_t size);

/* bytes chunk c had to grow to (0 past the last chunk) */
size_t ggmlx_dyn_tallocr_chunk_size(const struct ggmlx_dyn_tallocr * a, int c);

#endif /* GGMLX_DYN_TALLOCR_H */
