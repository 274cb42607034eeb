/*
 * parse-bytes.h -- byte counts in environment variables ("512M", "2GiB", "100B"), one reading
 * for every variable that takes one. Header-only: the CUDA library and plain-C tests use it
 * without linking anything.
 */
#ifndef GGMLX_PARSE_BYTES_H
#define GGMLX_PARSE_BYTES_H

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Digits, then an optional K, M, G or T (powers of 1024, any case), then an optional "B" or
 * (after a suffix) "iB". False, *out untouched, for anything else or a count over SIZE_MAX;
 * callers apply their own bounds (zero included).
 */
static inline bool ggmlx_parse_bytes(const char * s, size_t * out) {
    if (s == NULL || !isdigit((unsigned char) s[0])) {
        return false;
    }
    char * end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0) {
        return false;
    }
    unsigned shift = 0;
    switch (toupper((unsigned char) *end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case 'T': shift = 40; end++; break;
    default: break;
    }
    if (shift != 0 && (end[0] == 'i' || end[0] == 'I') && (end[1] == 'B' || end[1] == 'b')) {
        end += 2;
    } else if (end[0] == 'B' || end[0] == 'b') {
        end++;
    }
    if (*end != '\0' || v > (unsigned long long) (SIZE_MAX >> shift)) {
        return false;
    }
    *out = (size_t) v << shift;
    return true;
}

#endif /* GGMLX_PARSE_BYTES_H */
