/*
 * gguf-ctx.c -- the GGUF context: creation, key/value getters and setters.
 *
 * Where upstream aborts (a bad id, a getter of the wrong type), these return 0 / NULL / -1 and
 * record an error naming the key, so that a program can probe a file it does not trust.
 */
#include "gguf-impl.h"
#include "ggml-impl.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char * name;
    size_t       size;
} k_types[GGUF_TYPE_COUNT] = {
    [GGUF_TYPE_UINT8]   = { "u8",   1 },
    [GGUF_TYPE_INT8]    = { "i8",   1 },
    [GGUF_TYPE_UINT16]  = { "u16",  2 },
    [GGUF_TYPE_INT16]   = { "i16",  2 },
    [GGUF_TYPE_UINT32]  = { "u32",  4 },
    [GGUF_TYPE_INT32]   = { "i32",  4 },
    [GGUF_TYPE_FLOAT32] = { "f32",  4 },
    [GGUF_TYPE_BOOL]    = { "bool", 1 },
    [GGUF_TYPE_STRING]  = { "str",  0 },
    [GGUF_TYPE_ARRAY]   = { "arr",  0 },
    [GGUF_TYPE_UINT64]  = { "u64",  8 },
    [GGUF_TYPE_INT64]   = { "i64",  8 },
    [GGUF_TYPE_FLOAT64] = { "f64",  8 },
};

const char * gguf_type_name(enum gguf_type type) {
    if ((int) type < 0 || type >= GGUF_TYPE_COUNT) {
        return NULL; /* as upstream: unknown is not an error, callers print "unknown" */
    }
    return k_types[type].name;
}

size_t gguf_type_size(enum gguf_type type) {
    if ((int) type < 0 || type >= GGUF_TYPE_COUNT) {
        return 0;
    }
    return k_types[type].size;
}

static const char * type_str(enum gguf_type type) {
    const char * s = gguf_type_name(type);
    return s ? s : "unknown";
}

/* ---- life ------------------------------------------------------------------------------------ */

struct gguf_context * gguf_init_empty(void) {
    struct gguf_context * ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        ggmlx_error(__func__, "out of memory");
        return NULL;
    }
    ctx->version   = GGUF_VERSION;
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    ggmlx_ok();
    return ctx;
}

void gguf_kv_clear(struct gguf_kv * kv) {
    free(kv->key);
    free(kv->data);
    if (kv->strs) {
        for (size_t i = 0; i < kv->n; i++) {
            free(kv->strs[i].s);
        }
        free(kv->strs);
    }
    memset(kv, 0, sizeof *kv);
}

void gguf_free(struct gguf_context * ctx) {
    if (ctx == NULL) {
        return;
    }
    for (size_t i = 0; i < ctx->n_kv; i++) {
        gguf_kv_clear(&ctx->kv[i]);
    }
    free(ctx->kv);
    free(ctx->info);
    free(ctx);
}

bool gguf_ctx_push_kv(struct gguf_context * ctx, struct gguf_kv * kv) {
    if (ctx->n_kv == ctx->cap_kv) {
        size_t cap = ctx->cap_kv ? 2 * ctx->cap_kv : 16;
        struct gguf_kv * p = realloc(ctx->kv, cap * sizeof *p);
        if (p == NULL) {
            gguf_kv_clear(kv);
            return false;
        }
        ctx->kv     = p;
        ctx->cap_kv = cap;
    }
    ctx->kv[ctx->n_kv++] = *kv;
    memset(kv, 0, sizeof *kv);
    return true;
}

/* ---- the header ------------------------------------------------------------------------------ */

#define CTX_CHECK(ctx, ret)                                                                   \
    do {                                                                                      \
        if ((ctx) == NULL) {                                                                  \
            ggmlx_error(__func__, "ctx is NULL");                                             \
            return ret;                                                                       \
        }                                                                                     \
    } while (0)

uint32_t gguf_get_version(const struct gguf_context * ctx) {
    CTX_CHECK(ctx, 0);
    ggmlx_ok();
    return ctx->version;
}

size_t gguf_get_alignment(const struct gguf_context * ctx) {
    CTX_CHECK(ctx, 0);
    ggmlx_ok();
    return ctx->alignment;
}

size_t gguf_get_data_offset(const struct gguf_context * ctx) {
    CTX_CHECK(ctx, 0);
    ggmlx_ok();
    return ctx->offset;
}

/* ---- key/value getters ----------------------------------------------------------------------- */

int64_t gguf_get_n_kv(const struct gguf_context * ctx) {
    CTX_CHECK(ctx, 0);
    ggmlx_ok();
    return (int64_t) ctx->n_kv;
}

int64_t gguf_find_key(const struct gguf_context * ctx, const char * key) {
    CTX_CHECK(ctx, -1);
    if (key == NULL) {
        ggmlx_error(__func__, "key is NULL");
        return -1;
    }
    ggmlx_ok();
    for (size_t i = 0; i < ctx->n_kv; i++) {
        if (strcmp(ctx->kv[i].key, key) == 0) {
            return (int64_t) i;
        }
    }
    return -1;
}

static const struct gguf_kv * kv_at(const struct gguf_context * ctx, int64_t key_id, const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return NULL;
    }
    if (key_id < 0 || (uint64_t) key_id >= ctx->n_kv) {
        ggmlx_error(func, "key id %lld out of range (the context has %zu keys)", (long long) key_id, ctx->n_kv);
        return NULL;
    }
    return &ctx->kv[key_id];
}

const char * gguf_get_key(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    ggmlx_ok();
    return kv->key;
}

enum gguf_type gguf_get_kv_type(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return (enum gguf_type) -1;
    }
    ggmlx_ok();
    return kv->is_array ? GGUF_TYPE_ARRAY : kv->type;
}

enum gguf_type gguf_get_arr_type(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return (enum gguf_type) -1;
    }
    if (!kv->is_array) {
        ggmlx_error(__func__, "key '%s' holds a single %s, not an array", kv->key, type_str(kv->type));
        return (enum gguf_type) -1;
    }
    ggmlx_ok();
    return kv->type;
}

/* The single value of key_id, which must be of type; NULL with an error otherwise. */
static const struct gguf_kv * single(const struct gguf_context * ctx, int64_t key_id, enum gguf_type type,
                                     const char * func) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, func);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type != type) {
        ggmlx_error(func, "key '%s' has type %s%s, not %s", kv->key, kv->is_array ? "arr of " : "",
                    type_str(kv->type), type_str(type));
        return NULL;
    }
    if (kv->n != 1) {
        ggmlx_error(func, "key '%s' is an array of %zu elements, not one value", kv->key, kv->n);
        return NULL;
    }
    ggmlx_ok();
    return kv;
}

#define GETTER(fn, ctype, gtype)                                                              \
    ctype fn(const struct gguf_context * ctx, int64_t key_id) {                               \
        const struct gguf_kv * kv = single(ctx, key_id, gtype, __func__);                     \
        if (kv == NULL) {                                                                     \
            return (ctype) 0;                                                                 \
        }                                                                                     \
        ctype v;                                                                              \
        memcpy(&v, kv->data, sizeof v);                                                       \
        return v;                                                                             \
    }

GETTER(gguf_get_val_u8,  uint8_t,  GGUF_TYPE_UINT8)
GETTER(gguf_get_val_i8,  int8_t,   GGUF_TYPE_INT8)
GETTER(gguf_get_val_u16, uint16_t, GGUF_TYPE_UINT16)
GETTER(gguf_get_val_i16, int16_t,  GGUF_TYPE_INT16)
GETTER(gguf_get_val_u32, uint32_t, GGUF_TYPE_UINT32)
GETTER(gguf_get_val_i32, int32_t,  GGUF_TYPE_INT32)
GETTER(gguf_get_val_f32, float,    GGUF_TYPE_FLOAT32)
GETTER(gguf_get_val_u64, uint64_t, GGUF_TYPE_UINT64)
GETTER(gguf_get_val_i64, int64_t,  GGUF_TYPE_INT64)
GETTER(gguf_get_val_f64, double,   GGUF_TYPE_FLOAT64)

bool gguf_get_val_bool(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = single(ctx, key_id, GGUF_TYPE_BOOL, __func__);
    /* stored as one byte; any nonzero byte is true, as upstream reads it */
    return kv != NULL && *(const int8_t *) kv->data != 0;
}

const char * gguf_get_val_str(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = single(ctx, key_id, GGUF_TYPE_STRING, __func__);
    return kv ? kv->strs[0].s : NULL;
}

const void * gguf_get_val_data(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->n != 1 || kv->type == GGUF_TYPE_STRING) {
        ggmlx_error(__func__, "key '%s' is not a single non-string value", kv->key);
        return NULL;
    }
    ggmlx_ok();
    return kv->data;
}

size_t gguf_get_arr_n(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return 0;
    }
    ggmlx_ok();
    return kv->n;
}

const void * gguf_get_arr_data(const struct gguf_context * ctx, int64_t key_id) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type == GGUF_TYPE_STRING) {
        ggmlx_error(__func__, "key '%s' holds strings: use gguf_get_arr_str", kv->key);
        return NULL;
    }
    ggmlx_ok();
    return kv->data;
}

const char * gguf_get_arr_str(const struct gguf_context * ctx, int64_t key_id, size_t i) {
    const struct gguf_kv * kv = kv_at(ctx, key_id, __func__);
    if (kv == NULL) {
        return NULL;
    }
    if (kv->type != GGUF_TYPE_STRING) {
        ggmlx_error(__func__, "key '%s' has type %s, not str", kv->key, type_str(kv->type));
        return NULL;
    }
    if (i >= kv->n) {
        ggmlx_error(__func__, "index %zu out of range for key '%s' (%zu strings)", i, kv->key, kv->n);
        return NULL;
    }
    ggmlx_ok();
    return kv->strs[i].s;
}

/* ---- setters --------------------------------------------------------------------------------- */

int64_t gguf_remove_key(struct gguf_context * ctx, const char * key) {
    const int64_t id = gguf_find_key(ctx, key);
    if (id < 0) {
        return -1; /* gguf_find_key recorded any error */
    }
    const bool was_alignment = strcmp(key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    gguf_kv_clear(&ctx->kv[id]);
    memmove(&ctx->kv[id], &ctx->kv[id + 1], (ctx->n_kv - (size_t) id - 1) * sizeof *ctx->kv);
    ctx->n_kv--;
    if (was_alignment) {
        ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
        gguf_ctx_layout(ctx, 0);
    }
    return id;
}

/*
 * Set kv (taken over) as the newest pair of its key. Unlike upstream, the alignment key also
 * sets the alignment the context lays its tensors out with, so that the file written says what
 * it does.
 */
static void set_kv(struct gguf_context * ctx, struct gguf_kv * kv, const char * func) {
    uint32_t align = 0;
    const bool is_alignment = strcmp(kv->key, GGUF_KEY_GENERAL_ALIGNMENT) == 0;
    if (is_alignment) {
        if (kv->type != GGUF_TYPE_UINT32 || kv->is_array) {
            ggmlx_error(func, "key '%s' must be a u32, not %s%s", kv->key, kv->is_array ? "arr of " : "",
                        type_str(kv->type));
            goto err_kv;
        }
        memcpy(&align, kv->data, sizeof align);
        if (!gguf_is_pow2(align)) {
            ggmlx_error(func, "key '%s': %u is not a power of two", kv->key, align);
            goto err_kv;
        }
    }
    /* remove the old pair (by id: kv->key may be a copy of it) after the new one is ready */
    for (size_t i = 0; i < ctx->n_kv; i++) {
        if (strcmp(ctx->kv[i].key, kv->key) == 0) {
            gguf_kv_clear(&ctx->kv[i]);
            memmove(&ctx->kv[i], &ctx->kv[i + 1], (ctx->n_kv - i - 1) * sizeof *ctx->kv);
            ctx->n_kv--;
            break;
        }
    }
    if (!gguf_ctx_push_kv(ctx, kv)) {
        ggmlx_error(func, "out of memory");
        return;
    }
    if (is_alignment) {
        ctx->alignment = align;
        gguf_ctx_layout(ctx, 0);
    }
    ggmlx_ok();
    return;

err_kv:
    gguf_kv_clear(kv);
}

/* a new pair of n elements of type; false (error recorded) when the key is bad or memory ran out */
static bool kv_new(struct gguf_kv * kv, const char * key, enum gguf_type type, bool is_array, size_t n,
                   const char * func) {
    memset(kv, 0, sizeof *kv);
    if (key == NULL) {
        ggmlx_error(func, "key is NULL");
        return false;
    }
    if (key[0] == '\0') {
        ggmlx_error(func, "empty key");
        return false;
    }
    kv->key = strdup(key);
    if (kv->key == NULL) {
        goto err_oom;
    }
    kv->type     = type;
    kv->is_array = is_array;
    kv->n        = n;
    if (type == GGUF_TYPE_STRING) {
        kv->strs = calloc(n ? n : 1, sizeof *kv->strs);
        if (kv->strs == NULL) {
            goto err_oom;
        }
    } else {
        const size_t esize = gguf_type_size(type);
        if (n > SIZE_MAX / esize) {
            ggmlx_error(func, "key '%s': %zu elements of %s overflow", key, n, type_str(type));
            goto err_kv;
        }
        kv->data = malloc(n ? n * esize : 1);
        if (kv->data == NULL) {
            goto err_oom;
        }
    }
    return true;

err_oom:
    ggmlx_error(func, "out of memory");
err_kv:
    /* kv->n counts strings not yet copied: clear only what exists */
    kv->n = 0;
    gguf_kv_clear(kv);
    return false;
}

static bool str_copy(struct gguf_str * dst, const char * s, size_t n) {
    dst->s = malloc(n + 1);
    if (dst->s == NULL) {
        return false;
    }
    memcpy(dst->s, s, n);
    dst->s[n] = '\0';
    dst->n    = n;
    return true;
}

static void set_scalar(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * val,
                       const char * func) {
    if (ctx == NULL) {
        ggmlx_error(func, "ctx is NULL");
        return;
    }
    struct gguf_kv kv;
    if (!kv_new(&kv, key, type, false, 1, func)) {
        return;
    }
    memcpy(kv.data, val, gguf_type_size(type));
    set_kv(ctx, &kv, func);
}

#define SETTER(fn, ctype, gtype)                                                              \
    void fn(struct gguf_context * ctx, const char * key, ctype val) {                         \
        set_scalar(ctx, key, gtype, &val, __func__);                                          \
    }

SETTER(gguf_set_val_u8,  uint8_t,  GGUF_TYPE_UINT8)
SETTER(gguf_set_val_i8,  int8_t,   GGUF_TYPE_INT8)
SETTER(gguf_set_val_u16, uint16_t, GGUF_TYPE_UINT16)
SETTER(gguf_set_val_i16, int16_t,  GGUF_TYPE_INT16)
SETTER(gguf_set_val_u32, uint32_t, GGUF_TYPE_UINT32)
SETTER(gguf_set_val_i32, int32_t,  GGUF_TYPE_INT32)
SETTER(gguf_set_val_f32, float,    GGUF_TYPE_FLOAT32)
SETTER(gguf_set_val_u64, uint64_t, GGUF_TYPE_UINT64)
SETTER(gguf_set_val_i64, int64_t,  GGUF_TYPE_INT64)
SETTER(gguf_set_val_f64, double,   GGUF_TYPE_FLOAT64)

void gguf_set_val_bool(struct gguf_context * ctx, const char * key, bool val) {
    const int8_t b = val ? 1 : 0;
    set_scalar(ctx, key, GGUF_TYPE_BOOL, &b, __func__);
}

void gguf_set_val_str(struct gguf_context * ctx, const char * key, const char * val) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return;
    }
    if (val == NULL) {
        ggmlx_error(__func__, "value of key '%s' is NULL", key ? key : "(null)");
        return;
    }
    struct gguf_kv kv;
    if (!kv_new(&kv, key, GGUF_TYPE_STRING, false, 1, __func__)) {
        return;
    }
    if (!str_copy(&kv.strs[0], val, strlen(val))) {
        ggmlx_error(__func__, "out of memory");
        gguf_kv_clear(&kv);
        return;
    }
    set_kv(ctx, &kv, __func__);
}

void gguf_set_arr_data(struct gguf_context * ctx, const char * key, enum gguf_type type, const void * data, size_t n) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return;
    }
    if (gguf_type_size(type) == 0) {
        ggmlx_error(__func__, "key '%s': element type %d (%s) is not a fixed-size type", key ? key : "(null)",
                    (int) type, type_str(type));
        return;
    }
    if (data == NULL && n > 0) {
        ggmlx_error(__func__, "key '%s': data is NULL", key ? key : "(null)");
        return;
    }
    struct gguf_kv kv;
    if (!kv_new(&kv, key, type, true, n, __func__)) {
        return;
    }
    if (n > 0) {
        memcpy(kv.data, data, n * gguf_type_size(type));
    }
    set_kv(ctx, &kv, __func__);
}

void gguf_set_arr_str(struct gguf_context * ctx, const char * key, const char ** data, size_t n) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return;
    }
    if (data == NULL && n > 0) {
        ggmlx_error(__func__, "key '%s': data is NULL", key ? key : "(null)");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (data[i] == NULL) {
            ggmlx_error(__func__, "key '%s': string %zu is NULL", key ? key : "(null)", i);
            return;
        }
    }
    struct gguf_kv kv;
    if (!kv_new(&kv, key, GGUF_TYPE_STRING, true, n, __func__)) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!str_copy(&kv.strs[i], data[i], strlen(data[i]))) {
            ggmlx_error(__func__, "out of memory");
            gguf_kv_clear(&kv); /* the strings not copied yet are NULL: free(NULL) is fine */
            return;
        }
    }
    set_kv(ctx, &kv, __func__);
}

/* A deep copy of src (its key, values and strings with their lengths). */
static bool kv_dup(struct gguf_kv * dst, const struct gguf_kv * src, const char * func) {
    if (!kv_new(dst, src->key, src->type, src->is_array, src->n, func)) {
        return false;
    }
    if (src->type == GGUF_TYPE_STRING) {
        for (size_t i = 0; i < src->n; i++) {
            if (!str_copy(&dst->strs[i], src->strs[i].s, src->strs[i].n)) {
                ggmlx_error(func, "out of memory");
                gguf_kv_clear(dst);
                return false;
            }
        }
    } else if (src->n > 0) {
        memcpy(dst->data, src->data, src->n * gguf_type_size(src->type));
    }
    return true;
}

void gguf_set_kv(struct gguf_context * ctx, const struct gguf_context * src) {
    if (ctx == NULL || src == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "src");
        return;
    }
    if (ctx == src) {
        ggmlx_ok(); /* setting every pair to itself changes nothing */
        return;
    }
    for (size_t i = 0; i < src->n_kv; i++) {
        struct gguf_kv kv;
        if (!kv_dup(&kv, &src->kv[i], __func__)) {
            return;
        }
        set_kv(ctx, &kv, __func__);
        if (ggmlx_last_error() != NULL) {
            return;
        }
    }
    ggmlx_ok();
}
