/*
 * gguf-names.c -- checks on the names a file gives its keys and tensors: UTF-8, duplicates.
 */
#include "gguf-impl.h"

#include <stdlib.h>
#include <string.h>

bool gguf_utf8_valid(const char * str, size_t n) {
    const unsigned char * s = (const unsigned char *) str;
    size_t i = 0;
    while (i < n) {
        const unsigned c = s[i];
        size_t   len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp  = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp  = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp  = c & 0x07;
        } else {
            return false;
        }
        if (n - i < len) {
            return false;
        }
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += len;
    }
    return true;
}

static uint64_t hash_name(const char * s) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char) *s;
        h *= 0x100000001b3ull;
    }
    return h;
}

bool gguf_name_set_init(struct gguf_name_set * set, size_t n_max) {
    size_t cap = 16;
    while (cap < 2 * n_max) {
        if (cap > SIZE_MAX / 4 / sizeof *set->slots) {
            return false;
        }
        cap *= 2;
    }
    set->slots = calloc(cap, sizeof *set->slots);
    set->cap   = cap;
    set->n     = 0;
    return set->slots != NULL;
}

bool gguf_name_set_add(struct gguf_name_set * set, const char * name) {
    size_t i = (size_t) hash_name(name) & (set->cap - 1);
    while (set->slots[i] != NULL) {
        if (strcmp(set->slots[i], name) == 0) {
            return false;
        }
        i = (i + 1) & (set->cap - 1);
    }
    /* init sized the set for every name the caller will add, so it never fills up */
    set->slots[i] = name;
    set->n++;
    return true;
}

void gguf_name_set_free(struct gguf_name_set * set) {
    free(set->slots);
    set->slots = NULL;
    set->cap   = 0;
    set->n     = 0;
}
