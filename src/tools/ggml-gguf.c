/*
 * ggml-gguf.c -- prints what a GGUF file holds: the header, the key/values and the tensors.
 *
 * usage: ggml-gguf [--json] FILE
 *   --json   print JSON instead of text
 * Arrays of more than 8 elements show their first 8 and how many more there are (in JSON: the
 * first 8 as "values" and the total as "n"). Only the metadata is read, never the tensor data.
 * Exit status 0; 1 when FILE is not a GGUF file that ggmlx reads (the reason on stderr, naming
 * the field and its byte offset); 2 on bad arguments.
 */
#include "ggml.h"
#include "gguf.h"
#include "ggmlx.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SHOWN 8 /* array elements printed before "... (N more)" */

static void quiet(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) text;
    (void) user_data;
}

/* length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one */
static int utf8_len(const unsigned char * s) {
    if (s[0] < 0x80) {
        return 1;
    }
    int n;
    uint32_t cp;
    if ((s[0] & 0xE0) == 0xC0) {
        n = 2, cp = s[0] & 0x1F;
    } else if ((s[0] & 0xF0) == 0xE0) {
        n = 3, cp = s[0] & 0x0F;
    } else if ((s[0] & 0xF8) == 0xF0) {
        n = 4, cp = s[0] & 0x07;
    } else {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0; /* also stops at the terminating NUL */
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    static const uint32_t min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    return n;
}

/*
 * A string value, quoted. Tokenizer vocabularies hold byte sequences that are not UTF-8: in text
 * they show as \xHH, in JSON (which must stay UTF-8) as U+FFFD.
 */
static void put_str(const char * s, bool json) {
    putchar('"');
    for (const unsigned char * p = (const unsigned char *) s; *p;) {
        const int n = utf8_len(p);
        if (n == 0) {
            printf(json ? "\\ufffd" : "\\x%02x", *p);
            p++;
        } else if (*p == '"' || *p == '\\') {
            printf("\\%c", *p++);
        } else if (*p < 0x20 || *p == 0x7F) {
            printf(json ? "\\u%04x" : "\\x%02x", *p++);
        } else {
            fwrite(p, 1, (size_t) n, stdout);
            p += n;
        }
    }
    putchar('"');
}

static void put_value(const struct gguf_context * g, int64_t id, enum gguf_type t, const void * data, size_t i,
                      bool json) {
    switch (t) {
        case GGUF_TYPE_UINT8: printf("%u", (unsigned) ((const uint8_t *) data)[i]); break;
        case GGUF_TYPE_INT8: printf("%d", (int) ((const int8_t *) data)[i]); break;
        case GGUF_TYPE_UINT16: printf("%u", (unsigned) ((const uint16_t *) data)[i]); break;
        case GGUF_TYPE_INT16: printf("%d", (int) ((const int16_t *) data)[i]); break;
        case GGUF_TYPE_UINT32: printf("%" PRIu32, ((const uint32_t *) data)[i]); break;
        case GGUF_TYPE_INT32: printf("%" PRId32, ((const int32_t *) data)[i]); break;
        case GGUF_TYPE_UINT64: printf("%" PRIu64, ((const uint64_t *) data)[i]); break;
        case GGUF_TYPE_INT64: printf("%" PRId64, ((const int64_t *) data)[i]); break;
        case GGUF_TYPE_BOOL: printf("%s", ((const uint8_t *) data)[i] ? "true" : "false"); break;
        case GGUF_TYPE_FLOAT32:
        case GGUF_TYPE_FLOAT64: {
            const double v = t == GGUF_TYPE_FLOAT32 ? ((const float *) data)[i] : ((const double *) data)[i];
            if (json && (v != v || v - v != 0)) {
                printf("null"); /* NaN and infinities have no JSON spelling */
            } else {
                printf(t == GGUF_TYPE_FLOAT32 ? "%.9g" : "%.17g", v);
            }
            break;
        }
        case GGUF_TYPE_STRING:
            put_str(gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY ? gguf_get_arr_str(g, id, i) : gguf_get_val_str(g, id),
                    json);
            break;
        default: printf("?"); break;
    }
}

/* the value of key id: a scalar, or [first SHOWN elements] */
static void put_kv_value(const struct gguf_context * g, int64_t id, bool json) {
    const enum gguf_type t = gguf_get_kv_type(g, id);
    if (t != GGUF_TYPE_ARRAY) {
        put_value(g, id, t, t == GGUF_TYPE_STRING ? NULL : gguf_get_val_data(g, id), 0, json);
        return;
    }
    const enum gguf_type et   = gguf_get_arr_type(g, id);
    const size_t         n    = gguf_get_arr_n(g, id);
    const void *         data = et == GGUF_TYPE_STRING ? NULL : gguf_get_arr_data(g, id);
    putchar('[');
    for (size_t i = 0; i < n && i < SHOWN; i++) {
        printf("%s", i ? ", " : "");
        put_value(g, id, et, data, i, json);
    }
    if (!json && n > SHOWN) {
        printf(", ... (%zu more)", n - SHOWN);
    }
    putchar(']');
}

static int n_dims(const int64_t * ne) {
    int n = GGML_MAX_DIMS;
    while (n > 1 && ne[n - 1] == 1) {
        n--;
    }
    return n;
}

static void print_text(const char * path, const struct gguf_context * g) {
    printf("%s: GGUF version %" PRIu32 "\n", path, gguf_get_version(g));
    printf("  tensors      %" PRId64 "\n", gguf_get_n_tensors(g));
    printf("  key/values   %" PRId64 "\n", gguf_get_n_kv(g));
    printf("  alignment    %zu\n", gguf_get_alignment(g));
    printf("  data offset  %zu\n", gguf_get_data_offset(g));

    printf("\nkey/values:\n");
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        const enum gguf_type t = gguf_get_kv_type(g, i);
        char                 type[32];
        if (t == GGUF_TYPE_ARRAY) {
            snprintf(type, sizeof type, "arr[%s,%zu]", gguf_type_name(gguf_get_arr_type(g, i)), gguf_get_arr_n(g, i));
        } else {
            snprintf(type, sizeof type, "%s", gguf_type_name(t));
        }
        printf("  %-40s %-16s ", gguf_get_key(g, i), type);
        put_kv_value(g, i, false);
        putchar('\n');
    }

    printf("\ntensors:\n  %-40s %-6s %-28s %12s %12s\n", "name", "type", "shape", "offset", "bytes");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const int64_t * ne = gguf_get_tensor_ne(g, i);
        char            shape[128];
        int             len = snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < n_dims(ne); d++) {
            len += snprintf(shape + len, sizeof shape - (size_t) len, "%s%" PRId64, d ? ", " : "", ne[d]);
        }
        snprintf(shape + len, sizeof shape - (size_t) len, "]");
        printf("  %-40s %-6s %-28s %12zu %12zu\n", gguf_get_tensor_name(g, i),
               ggml_type_name(gguf_get_tensor_type(g, i)), shape, gguf_get_tensor_offset(g, i),
               gguf_get_tensor_size(g, i));
    }
}

static void print_json(const char * path, const struct gguf_context * g) {
    printf("{\"file\": ");
    put_str(path, true);
    printf(", \"version\": %" PRIu32 ", \"n_tensors\": %" PRId64 ", \"n_kv\": %" PRId64
           ", \"alignment\": %zu, \"data_offset\": %zu,\n \"kv\": [",
           gguf_get_version(g), gguf_get_n_tensors(g), gguf_get_n_kv(g), gguf_get_alignment(g),
           gguf_get_data_offset(g));
    for (int64_t i = 0; i < gguf_get_n_kv(g); i++) {
        const enum gguf_type t = gguf_get_kv_type(g, i);
        printf("%s\n  {\"key\": ", i ? "," : "");
        put_str(gguf_get_key(g, i), true);
        if (t == GGUF_TYPE_ARRAY) {
            printf(", \"type\": \"arr\", \"element_type\": \"%s\", \"n\": %zu, \"values\": ",
                   gguf_type_name(gguf_get_arr_type(g, i)), gguf_get_arr_n(g, i));
        } else {
            printf(", \"type\": \"%s\", \"value\": ", gguf_type_name(t));
        }
        put_kv_value(g, i, true);
        putchar('}');
    }
    printf("],\n \"tensors\": [");
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const int64_t * ne = gguf_get_tensor_ne(g, i);
        printf("%s\n  {\"name\": ", i ? "," : "");
        put_str(gguf_get_tensor_name(g, i), true);
        printf(", \"type\": \"%s\", \"ne\": [", ggml_type_name(gguf_get_tensor_type(g, i)));
        for (int d = 0; d < n_dims(ne); d++) {
            printf("%s%" PRId64, d ? ", " : "", ne[d]);
        }
        printf("], \"offset\": %zu, \"bytes\": %zu}", gguf_get_tensor_offset(g, i), gguf_get_tensor_size(g, i));
    }
    printf("]}\n");
}

int main(int argc, char ** argv) {
    bool         json = false;
    const char * path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' || path != NULL) {
            fprintf(stderr, "usage: ggml-gguf [--json] FILE\n");
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (path == NULL) {
        fprintf(stderr, "usage: ggml-gguf [--json] FILE\n");
        return 2;
    }
    ggml_log_set(quiet, NULL); /* the reason is printed once, below */
    struct gguf_context * g = gguf_init_from_file(path, (struct gguf_init_params) { .no_alloc = true, .ctx = NULL });
    if (g == NULL) {
        fprintf(stderr, "ggml-gguf: %s: %s\n", path, ggmlx_last_error() ? ggmlx_last_error() : "cannot be read");
        return 1;
    }
    if (json) {
        print_json(path, g);
    } else {
        print_text(path, g);
    }
    gguf_free(g);
    return 0;
}
