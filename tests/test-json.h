/*
 * test-json.h -- a strict little JSON reader for tests that check files the library writes
 * (scheduler traces). It accepts RFC 8259 JSON only: trailing commas, bad escapes, control
 * characters in strings or text after the value are errors, so a file it reads is one that
 * chrome://tracing and ui.perfetto.dev can load. Header-only, no Criterion.
 *
 *   struct tj_value * v = tj_parse_file(path);   // NULL: tj_error() says why and where
 *   tj_get(v, "key")                             // an object's member, NULL when absent
 *   v->items[i], v->n                            // array elements / object values
 *   tj_free(v);
 */
#ifndef GGMLX_TEST_JSON_H
#define GGMLX_TEST_JSON_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum tj_type { TJ_NULL, TJ_BOOL, TJ_NUMBER, TJ_STRING, TJ_ARRAY, TJ_OBJECT };

struct tj_value {
    enum tj_type      type;
    bool              b;
    double            num;
    char            * str;   /* TJ_STRING (NUL-terminated; an escaped \u0000 ends it early) */
    int               n;     /* elements of an array, members of an object */
    struct tj_value * items;
    char           ** keys;  /* TJ_OBJECT: keys[i] names items[i] */
};

struct tj_parser {
    const char * s;
    size_t       pos, len;
    int          depth;
};

static char tj_err[160];

static inline const char * tj_error(void) {
    return tj_err;
}

static inline bool tj_fail(struct tj_parser * p, const char * what) {
    snprintf(tj_err, sizeof tj_err, "%s at byte %zu", what, p->pos);
    return false;
}

static inline void tj_free_items(struct tj_value * v) {
    if (v->type == TJ_STRING) {
        free(v->str);
    }
    for (int i = 0; i < v->n; i++) {
        tj_free_items(&v->items[i]);
        if (v->keys != NULL) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
}

static inline void tj_free(struct tj_value * v) {
    if (v != NULL) {
        tj_free_items(v);
        free(v);
    }
}

static inline void tj_ws(struct tj_parser * p) {
    while (p->pos < p->len && strchr(" \t\r\n", p->s[p->pos]) != NULL && p->s[p->pos] != '\0') {
        p->pos++;
    }
}

static inline bool tj_lit(struct tj_parser * p, const char * word) {
    const size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) {
        return tj_fail(p, "bad literal");
    }
    p->pos += n;
    return true;
}

static inline int tj_hex(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* a string at p->pos (on its opening quote) into a fresh buffer */
static inline bool tj_string(struct tj_parser * p, char ** out) {
    p->pos++;
    char * buf = malloc(p->len - p->pos + 1); /* never longer than the source text */
    size_t n = 0;
    if (buf == NULL) {
        return tj_fail(p, "out of memory");
    }
    while (p->pos < p->len) {
        const unsigned char c = (unsigned char) p->s[p->pos++];
        if (c == '"') {
            buf[n] = '\0';
            *out   = buf;
            return true;
        }
        if (c < 0x20) {
            free(buf);
            return tj_fail(p, "control character in a string");
        }
        if (c != '\\') {
            buf[n++] = (char) c;
            continue;
        }
        if (p->pos >= p->len) {
            break;
        }
        const char e = p->s[p->pos++];
        const char * from = "\"\\/bfnrt";
        const char * to   = "\"\\/\b\f\n\r\t";
        const char * k    = strchr(from, e);
        if (k != NULL && e != '\0') {
            buf[n++] = to[k - from];
        } else if (e == 'u' && p->len - p->pos >= 4) {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                const int h = tj_hex(p->s[p->pos++]);
                if (h < 0) {
                    free(buf);
                    return tj_fail(p, "bad \\u escape");
                }
                cp = cp * 16 + (unsigned) h;
            }
            if (cp < 0x80) {
                buf[n++] = (char) cp;
            } else if (cp < 0x800) {
                buf[n++] = (char) (0xc0 | (cp >> 6));
                buf[n++] = (char) (0x80 | (cp & 0x3f));
            } else { /* surrogates are kept as they are: the tests never write them */
                buf[n++] = (char) (0xe0 | (cp >> 12));
                buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
                buf[n++] = (char) (0x80 | (cp & 0x3f));
            }
        } else {
            free(buf);
            return tj_fail(p, "bad escape");
        }
    }
    free(buf);
    return tj_fail(p, "unterminated string");
}

static inline bool tj_number(struct tj_parser * p, double * out) {
    const size_t start = p->pos;
    size_t i = p->pos;
    if (i < p->len && p->s[i] == '-') {
        i++;
    }
    if (i < p->len && p->s[i] == '0') {
        i++;
    } else if (i < p->len && p->s[i] >= '1' && p->s[i] <= '9') {
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') {
            i++;
        }
    } else {
        return tj_fail(p, "bad number");
    }
    if (i < p->len && p->s[i] == '.') {
        i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            return tj_fail(p, "bad fraction");
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') {
            i++;
        }
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) {
            i++;
        }
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9') {
            return tj_fail(p, "bad exponent");
        }
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9') {
            i++;
        }
    }
    char tmp[64];
    const size_t n = i - start;
    if (n >= sizeof tmp) {
        return tj_fail(p, "number too long");
    }
    memcpy(tmp, p->s + start, n);
    tmp[n] = '\0';
    *out   = strtod(tmp, NULL);
    p->pos = i;
    return true;
}

static inline bool tj_value_at(struct tj_parser * p, struct tj_value * v);

/* elements of an array or members of an object, after the opening bracket */
static inline bool tj_members(struct tj_parser * p, struct tj_value * v, bool object) {
    const char close = object ? '}' : ']';
    int cap = 0;
    p->pos++;
    tj_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return true;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? cap * 2 : 8;
            struct tj_value * items = realloc(v->items, (size_t) cap * sizeof *items);
            char ** keys = object ? realloc(v->keys, (size_t) cap * sizeof *keys) : NULL;
            if (items != NULL) {
                v->items = items;
            }
            if (keys != NULL) {
                v->keys = keys;
            }
            if (items == NULL || (object && keys == NULL)) {
                return tj_fail(p, "out of memory");
            }
        }
        char * key = NULL;
        tj_ws(p);
        if (object) {
            if (p->pos >= p->len || p->s[p->pos] != '"' || !tj_string(p, &key)) {
                return tj_err[0] ? false : tj_fail(p, "expected a key");
            }
            tj_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                free(key);
                return tj_fail(p, "expected ':'");
            }
            p->pos++;
        }
        struct tj_value * item = &v->items[v->n];
        memset(item, 0, sizeof *item);
        if (object) {
            v->keys[v->n] = key;
        }
        v->n++; /* counted before parsing, so tj_free releases a half-read item */
        if (!tj_value_at(p, item)) {
            return false;
        }
        tj_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return true;
        }
        return tj_fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static inline bool tj_value_at(struct tj_parser * p, struct tj_value * v) {
    tj_ws(p);
    if (p->pos >= p->len) {
        return tj_fail(p, "unexpected end");
    }
    if (++p->depth > 64) {
        return tj_fail(p, "nested too deep");
    }
    bool ok;
    switch (p->s[p->pos]) {
        case '{': v->type = TJ_OBJECT; ok = tj_members(p, v, true); break;
        case '[': v->type = TJ_ARRAY; ok = tj_members(p, v, false); break;
        case '"': v->type = TJ_STRING; ok = tj_string(p, &v->str); break;
        case 't': v->type = TJ_BOOL; v->b = true; ok = tj_lit(p, "true"); break;
        case 'f': v->type = TJ_BOOL; ok = tj_lit(p, "false"); break;
        case 'n': v->type = TJ_NULL; ok = tj_lit(p, "null"); break;
        default: v->type = TJ_NUMBER; ok = tj_number(p, &v->num); break;
    }
    p->depth--;
    return ok;
}

static inline struct tj_value * tj_parse(const char * text, size_t len) {
    struct tj_parser p = { text, 0, len, 0 };
    struct tj_value * v = calloc(1, sizeof *v);
    tj_err[0] = '\0';
    if (v == NULL) {
        snprintf(tj_err, sizeof tj_err, "out of memory");
        return NULL;
    }
    bool ok = tj_value_at(&p, v);
    if (ok) {
        tj_ws(&p);
        ok = p.pos == p.len || tj_fail(&p, "text after the value");
    }
    if (!ok) {
        tj_free(v);
        return NULL;
    }
    return v;
}

static inline struct tj_value * tj_parse_file(const char * path) {
    FILE * f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(tj_err, sizeof tj_err, "cannot open %s", path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char * text = malloc(cap);
    for (size_t got; text != NULL && (got = fread(text + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len == cap) {
            char * more = realloc(text, cap *= 2);
            if (more == NULL) {
                free(text);
                text = NULL;
            }
            text = more;
        }
    }
    fclose(f);
    if (text == NULL) {
        snprintf(tj_err, sizeof tj_err, "out of memory reading %s", path);
        return NULL;
    }
    struct tj_value * v = tj_parse(text, len);
    free(text);
    return v;
}

static inline const struct tj_value * tj_get(const struct tj_value * obj, const char * key) {
    if (obj == NULL || obj->type != TJ_OBJECT) {
        return NULL;
    }
    for (int i = 0; i < obj->n; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            return &obj->items[i];
        }
    }
    return NULL;
}

#endif /* GGMLX_TEST_JSON_H */
