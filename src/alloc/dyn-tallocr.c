/*
 * dyn-tallocr.c -- offsets within growable chunks, best fit over a sorted free list.
 *
 * Each chunk starts as one free block of its capacity; the block that reaches the capacity is the
 * chunk's tail. Taking memory from a tail grows the chunk's high-water mark, which is what the
 * backend buffer for that chunk must hold, so holes below the mark are always tried first.
 */
#include "dyn-tallocr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Capacity of a chunk with no limit: large, yet offset + size can never overflow. */
#define UNLIMITED (SIZE_MAX / 2)

void ggmlx_dyn_tallocr_init(struct ggmlx_dyn_tallocr * a, size_t alignment, size_t max_chunk) {
    memset(a, 0, sizeof *a);
    a->alignment = alignment ? alignment : 1;
    a->max_chunk = (max_chunk == 0 || max_chunk > UNLIMITED) ? UNLIMITED : max_chunk;
}

void ggmlx_dyn_tallocr_release(struct ggmlx_dyn_tallocr * a) {
    for (int c = 0; c < GGMLX_VBUFFER_MAX_CHUNKS; c++) {
        free(a->chunks[c].blocks);
    }
    memset(a->chunks, 0, sizeof a->chunks);
    a->n_chunks = 0;
}

void ggmlx_dyn_tallocr_reset(struct ggmlx_dyn_tallocr * a) {
    for (int c = 0; c < GGMLX_VBUFFER_MAX_CHUNKS; c++) {
        a->chunks[c].n_blocks = 0;
        a->chunks[c].capacity = 0;
        a->chunks[c].high     = 0;
    }
    a->n_chunks = 0;
}

size_t ggmlx_dyn_tallocr_round(const struct ggmlx_dyn_tallocr * a, size_t size) {
    /* an empty tensor still gets an address of its own, so its data pointer is never NULL */
    if (size == 0) {
        size = 1;
    }
    if (size > UNLIMITED) {
        return SIZE_MAX;
    }
    return (size + a->alignment - 1) / a->alignment * a->alignment;
}

static bool is_tail(const struct ggmlx_chunk * ch, const struct ggmlx_free_block * b) {
    return b->offset + b->size == ch->capacity;
}

static bool reserve_blocks(struct ggmlx_chunk * ch, int n) {
    if (n <= ch->cap_blocks) {
        return true;
    }
    int cap = ch->cap_blocks ? ch->cap_blocks * 2 : 16;
    while (cap < n) {
        cap *= 2;
    }
    struct ggmlx_free_block * blocks = realloc(ch->blocks, (size_t) cap * sizeof *blocks);
    if (blocks == NULL) {
        return false;
    }
    ch->blocks     = blocks;
    ch->cap_blocks = cap;
    return true;
}

static void remove_block(struct ggmlx_chunk * ch, int i) {
    memmove(&ch->blocks[i], &ch->blocks[i + 1], (size_t) (ch->n_blocks - i - 1) * sizeof ch->blocks[0]);
    ch->n_blocks--;
}

/* a new chunk able to hold at least size bytes; -1 when none is left */
static int new_chunk(struct ggmlx_dyn_tallocr * a, size_t size) {
    if (a->n_chunks >= GGMLX_VBUFFER_MAX_CHUNKS) {
        return -1;
    }
    struct ggmlx_chunk * ch = &a->chunks[a->n_chunks];
    if (!reserve_blocks(ch, 1)) {
        return -1;
    }
    /*
     * A tensor larger than the limit gets a chunk of its own size (the buffer type then decides
     * whether it can have it), and the last chunk takes whatever is left over.
     */
    size_t cap = size > a->max_chunk ? size : a->max_chunk;
    if (a->n_chunks == GGMLX_VBUFFER_MAX_CHUNKS - 1) {
        cap = UNLIMITED;
    }
    ch->capacity  = cap;
    ch->high      = 0;
    ch->n_blocks  = 1;
    ch->blocks[0] = (struct ggmlx_free_block) { 0, cap };
    return a->n_chunks++;
}

/* the smallest hole (a free block below a chunk's tail) that holds size */
static bool find_hole(const struct ggmlx_dyn_tallocr * a, size_t size, int * best_c, int * best_i) {
    size_t best = SIZE_MAX;
    bool   found = false;
    for (int c = 0; c < a->n_chunks; c++) {
        const struct ggmlx_chunk * ch = &a->chunks[c];
        for (int i = 0; i < ch->n_blocks; i++) {
            const struct ggmlx_free_block * b = &ch->blocks[i];
            if (is_tail(ch, b) || b->size < size || (found && b->size >= best)) {
                continue;
            }
            best    = b->size;
            *best_c = c;
            *best_i = i;
            found   = true;
        }
    }
    return found;
}

/*
 * The tail to take size from: one that fits below its chunk's high-water mark (smallest
 * leftover) before one that must grow its chunk (least growth).
 */
static bool find_tail(const struct ggmlx_dyn_tallocr * a, size_t size, int * best_c, int * best_i) {
    bool   found = false, best_grows = true;
    size_t best_cost = SIZE_MAX;
    for (int c = 0; c < a->n_chunks; c++) {
        const struct ggmlx_chunk * ch = &a->chunks[c];
        if (ch->n_blocks == 0) {
            continue;
        }
        const struct ggmlx_free_block * b = &ch->blocks[ch->n_blocks - 1];
        if (!is_tail(ch, b) || b->size < size) {
            continue;
        }
        const size_t end   = b->offset + size;
        const bool   grows = end > ch->high;
        const size_t cost  = grows ? end - ch->high : ch->high - end;
        const bool better  = !found || (best_grows && !grows) || (best_grows == grows && cost < best_cost);
        if (better) {
            found      = true;
            best_grows = grows;
            best_cost  = cost;
            *best_c    = c;
            *best_i    = ch->n_blocks - 1;
        }
    }
    return found;
}

struct ggmlx_addr ggmlx_dyn_tallocr_alloc(struct ggmlx_dyn_tallocr * a, size_t size) {
    const struct ggmlx_addr none = { -1, 0 };
    size = ggmlx_dyn_tallocr_round(a, size);
    if (size > UNLIMITED) {
        return none;
    }
    int c = -1, i = -1;
    if (!find_hole(a, size, &c, &i) && !find_tail(a, size, &c, &i)) {
        c = new_chunk(a, size);
        if (c < 0) {
            return none;
        }
        i = 0;
    }
    struct ggmlx_chunk      * ch = &a->chunks[c];
    struct ggmlx_free_block * b  = &ch->blocks[i];
    const struct ggmlx_addr addr = { c, b->offset };
    b->offset += size;
    b->size   -= size;
    if (b->size == 0) {
        remove_block(ch, i);
    }
    if (addr.offset + size > ch->high) {
        ch->high = addr.offset + size;
    }
    return addr;
}

bool ggmlx_dyn_tallocr_free(struct ggmlx_dyn_tallocr * a, struct ggmlx_addr addr, size_t size) {
    if (addr.chunk < 0 || addr.chunk >= a->n_chunks) {
        return false;
    }
    size = ggmlx_dyn_tallocr_round(a, size);
    struct ggmlx_chunk * ch = &a->chunks[addr.chunk];

    int i = 0; /* first block after the freed range */
    while (i < ch->n_blocks && ch->blocks[i].offset < addr.offset) {
        i++;
    }
    const bool joins_prev = i > 0 && ch->blocks[i - 1].offset + ch->blocks[i - 1].size == addr.offset;
    const bool joins_next = i < ch->n_blocks && addr.offset + size == ch->blocks[i].offset;

    if (joins_prev && joins_next) {
        ch->blocks[i - 1].size += size + ch->blocks[i].size;
        remove_block(ch, i);
    } else if (joins_prev) {
        ch->blocks[i - 1].size += size;
    } else if (joins_next) {
        ch->blocks[i].offset  = addr.offset;
        ch->blocks[i].size   += size;
    } else {
        if (!reserve_blocks(ch, ch->n_blocks + 1)) {
            return false;
        }
        memmove(&ch->blocks[i + 1], &ch->blocks[i], (size_t) (ch->n_blocks - i) * sizeof ch->blocks[0]);
        ch->blocks[i] = (struct ggmlx_free_block) { addr.offset, size };
        ch->n_blocks++;
    }
    return true;
}

size_t ggmlx_dyn_tallocr_chunk_size(const struct ggmlx_dyn_tallocr * a, int c) {
    return (c >= 0 && c < a->n_chunks) ? a->chunks[c].high : 0;
}
