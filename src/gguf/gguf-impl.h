/*
 * gguf-impl.h -- the GGUF context shared by the reader, the editor and the writer.
 * Layer: on top of the core (src/core); nothing below includes this.
 */
#pragma once

#include "gguf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Upstream's own caps on one string and one array. The reader also checks every length
 * against the bytes left, so these only matter for a callback reader told a huge size.
 */
#define GGUF_MAX_STRING_LENGTH  ((uint64_t) 1024 * 1024 * 1024)
#define GGUF_MAX_ARRAY_ELEMENTS ((uint64_t) 1024 * 1024 * 1024)

/* A string with its length, so that bytes after an embedded NUL survive a round trip. */
struct gguf_str {
    char * s; /* NUL-terminated copy */
    size_t n; /* bytes, without the NUL */
};

struct gguf_kv {
    char *         key;
    enum gguf_type type;     /* the element type (never ARRAY) */
    bool           is_array;
    size_t         n;        /* elements: 1 for a single value */
    void *         data;     /* n * gguf_type_size(type) bytes; NULL for strings */
    struct gguf_str * strs;  /* n strings when type is STRING */
};

struct gguf_tensor_info {
    struct ggml_tensor t;    /* name, type, ne, nb; data or buffer for the writer */
    uint64_t           offset; /* in the data section */
};

struct gguf_context {
    uint32_t version;

    struct gguf_kv * kv;
    size_t           n_kv;
    size_t           cap_kv;

    struct gguf_tensor_info * info;
    size_t                    n_info;
    size_t                    cap_info;

    size_t alignment;
    size_t offset; /* where the data section starts in the input */
    size_t size;   /* bytes of the data section (tensors padded to the alignment) */

    void * data;   /* the data section, in the ggml context the reader made (not owned) */
};

/* bytes of one element; 0 for STRING, ARRAY and unknown types */
size_t gguf_type_size(enum gguf_type type);

/* a power of two, not 0 */
static inline bool gguf_is_pow2(uint64_t x) {
    return x != 0 && (x & (x - 1)) == 0;
}

/* x rounded up to a multiple of align (a power of two); false when that overflows */
static inline bool gguf_pad(uint64_t x, uint64_t align, uint64_t * out) {
    if (x > UINT64_MAX - (align - 1)) {
        return false;
    }
    *out = (x + align - 1) & ~(align - 1);
    return true;
}

/* ---- the context (gguf-ctx.c) ---------------------------------------------------------------- */

void gguf_kv_clear(struct gguf_kv * kv);

/* Append kv (taken over: on failure it is cleared); false when memory runs out. */
bool gguf_ctx_push_kv(struct gguf_context * ctx, struct gguf_kv * kv);

/* Append a tensor info; false when memory runs out. */
bool gguf_ctx_push_info(struct gguf_context * ctx, const struct gguf_tensor_info * info);

/* Lay the tensors out again from tensor first on (offsets, data size). */
void gguf_ctx_layout(struct gguf_context * ctx, size_t first);

/* ---- names (gguf-utf8.c) --------------------------------------------------------------------- */

/* n bytes of valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF) */
bool gguf_utf8_valid(const char * s, size_t n);

/*
 * A set of names, to find duplicates in linear time: a hostile file with a million keys must
 * not cost a million squared comparisons.
 */
struct gguf_name_set {
    const char ** slots;
    size_t        cap; /* a power of two */
    size_t        n;
};

bool gguf_name_set_init(struct gguf_name_set * set, size_t n_max);
/* true when name was new and is now in the set; name must outlive the set */
bool gguf_name_set_add(struct gguf_name_set * set, const char * name);
void gguf_name_set_free(struct gguf_name_set * set);

/* ---- the writer's buffer (gguf-write.c) ------------------------------------------------------ */

struct gguf_buf {
    uint8_t * data;
    size_t    n;
    size_t    cap;
    bool      failed; /* memory ran out: the contents are incomplete */
};

/* The metadata (header, pairs, infos, padding); false with an error recorded on failure. */
bool gguf_write_meta(const struct gguf_context * ctx, struct gguf_buf * buf, const char * func);
void gguf_buf_free(struct gguf_buf * buf);
