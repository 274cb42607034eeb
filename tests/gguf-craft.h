/*
 * gguf-craft.h -- building GGUF files byte by byte in memory, for the tests that feed the reader
 * hostile input. Nothing here goes through the library's writer: a file the writer could never
 * make (a nested array, overlapping tensors) must be as easy to spell as a good one.
 *
 * Every writer appends little-endian bytes; memory running out aborts the test program (a test
 * helper, not library code). craft_at() gives the offset the next byte will have, so a test can
 * name the byte where a field it broke starts.
 */
#ifndef GGMLX_TEST_GGUF_CRAFT_H
#define GGMLX_TEST_GGUF_CRAFT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct craft {
    uint8_t * b;
    size_t    n;
    size_t    cap;
};

static inline void craft_bytes(struct craft * c, const void * p, size_t n) {
    if (c->n + n > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < c->n + n) {
            cap *= 2;
        }
        uint8_t * b = realloc(c->b, cap);
        if (b == NULL) {
            abort();
        }
        c->b   = b;
        c->cap = cap;
    }
    if (n > 0) {
        memcpy(c->b + c->n, p, n);
    }
    c->n += n;
}

static inline size_t craft_at(const struct craft * c) {
    return c->n;
}

/* v as n little-endian bytes, whatever the host */
static inline void craft_le(struct craft * c, uint64_t v, int n) {
    uint8_t b[8];
    for (int i = 0; i < n; i++) {
        b[i] = (uint8_t) (v >> (8 * i));
    }
    craft_bytes(c, b, (size_t) n);
}

static inline void craft_u8(struct craft * c, uint8_t v) { craft_le(c, v, 1); }
static inline void craft_u16(struct craft * c, uint16_t v) { craft_le(c, v, 2); }
static inline void craft_u32(struct craft * c, uint32_t v) { craft_le(c, v, 4); }
static inline void craft_i32(struct craft * c, int32_t v) { craft_le(c, (uint32_t) v, 4); }
static inline void craft_u64(struct craft * c, uint64_t v) { craft_le(c, v, 8); }
static inline void craft_i64(struct craft * c, int64_t v) { craft_le(c, (uint64_t) v, 8); }

static inline void craft_f32(struct craft * c, float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    craft_u32(c, u);
}

/* a string: its length, then n bytes (may hold NULs or invalid UTF-8) */
static inline void craft_strn(struct craft * c, const char * s, size_t n) {
    craft_u64(c, n);
    craft_bytes(c, s, n);
}

static inline void craft_str(struct craft * c, const char * s) {
    craft_strn(c, s, strlen(s));
}

static inline void craft_header(struct craft * c, uint32_t version, int64_t n_tensors, int64_t n_kv) {
    craft_bytes(c, "GGUF", 4);
    craft_u32(c, version);
    craft_i64(c, n_tensors);
    craft_i64(c, n_kv);
}

/* the value types, spelled out so a test does not depend on the header it tests */
enum {
    CT_U8 = 0, CT_I8 = 1, CT_U16 = 2, CT_I16 = 3, CT_U32 = 4, CT_I32 = 5, CT_F32 = 6, CT_BOOL = 7,
    CT_STR = 8, CT_ARR = 9, CT_U64 = 10, CT_I64 = 11, CT_F64 = 12,
};

/* a key and its value type; the caller writes the value */
static inline void craft_key(struct craft * c, const char * key, int32_t type) {
    craft_str(c, key);
    craft_i32(c, type);
}

static inline void craft_kv_u32(struct craft * c, const char * key, uint32_t v) {
    craft_key(c, key, CT_U32);
    craft_u32(c, v);
}

static inline void craft_kv_str(struct craft * c, const char * key, const char * v) {
    craft_key(c, key, CT_STR);
    craft_str(c, v);
}

/* an array key up to its count; the caller writes the elements */
static inline void craft_kv_arr(struct craft * c, const char * key, int32_t elem_type, uint64_t n) {
    craft_key(c, key, CT_ARR);
    craft_i32(c, elem_type);
    craft_u64(c, n);
}

/* a tensor info with n_dims dimensions from ne */
static inline void craft_info(struct craft * c, const char * name, uint32_t n_dims, const int64_t * ne, int32_t type,
                              uint64_t offset) {
    craft_str(c, name);
    craft_u32(c, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) {
        craft_i64(c, ne[i]);
    }
    craft_i32(c, type);
    craft_u64(c, offset);
}

/* zeros up to the next multiple of align (a file offset) */
static inline void craft_pad(struct craft * c, size_t align) {
    while (c->n % align != 0) {
        craft_u8(c, 0);
    }
}

/* n bytes of filler for a data section */
static inline void craft_fill(struct craft * c, size_t n, uint8_t v) {
    for (size_t i = 0; i < n; i++) {
        craft_u8(c, v);
    }
}

static inline void craft_free(struct craft * c) {
    free(c->b);
    *c = (struct craft) { 0 };
}

/*
 * The first n bytes of c into a new temporary file; its path goes to path (at least 64 bytes).
 * Returns 0, or -1 when the file cannot be made.
 */
static inline int craft_write_tmp(const struct craft * c, size_t n, char * path) {
    strcpy(path, "/tmp/ggmlx-gguf-XXXXXX");
    const int fd = mkstemp(path);
    if (fd < 0) {
        return -1;
    }
    size_t done = 0;
    while (done < n) {
        const ssize_t w = write(fd, c->b + done, n - done);
        if (w <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        done += (size_t) w;
    }
    close(fd);
    return 0;
}

#endif /* GGMLX_TEST_GGUF_CRAFT_H */
