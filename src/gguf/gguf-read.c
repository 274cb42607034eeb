/*
 * gguf-read.c -- the GGUF parser, over a bounded byte source (a file, a buffer or a callback).
 *
 * A file is untrusted input. Every count, length, type, shape and offset is checked against the
 * bytes really left in the input and against overflow before anything is allocated or read, so
 * a 100-byte file claiming 2^60 keys fails at once, without allocating. The context is then
 * filled in place; a failure frees everything made so far.
 *
 * Every refusal is an error (ggmlx_last_error, the log) of the form
 *     FUNCTION: FIELD ...: WHAT (at byte N) ...
 * naming the field and where in the input it was read. The rules and a word each message
 * contains (the tests match on these; keep them stable):
 *
 *   truncated                  a field needs more bytes than the input has left
 *   magic                      the first 4 bytes are not "GGUF"
 *   version                    0, 1 (GGUFv1), above 3, or byte-swapped ("byte order")
 *   tensor count               "is negative", or more tensor infos than the bytes left can hold
 *   key count                  "is negative", or more pairs than the bytes left can hold
 *   string length              longer than the bytes left (or than 1 GiB)
 *   empty key                  a key of length 0
 *   invalid UTF-8              in a key or a tensor name (string values are not checked: see below)
 *   NUL byte                   inside a key or a tensor name
 *   duplicate key              a key seen before
 *   unknown value type         a type id outside enum gguf_type
 *   nested array               an array whose elements are arrays
 *   array count                more elements than the bytes left can hold (or than 2^30)
 *   general.alignment          not a single u32 ("must be a u32"), or "not a power of two"
 *   name too long              a tensor name of GGML_MAX_NAME (64) bytes or more
 *   duplicate tensor name      a tensor name seen before
 *   n_dims                     more than GGML_MAX_DIMS (4) dimensions
 *   negative                   a dimension ne[j] below 0
 *   element count overflows    the product of the dimensions does not fit in int64_t
 *   unknown ggml type          a type id outside enum ggml_type, or a removed one
 *   block size                 ne[0] not a multiple of the type's block size
 *   byte size overflows        the tensor's bytes do not fit in size_t
 *   data section starts        the aligned start of the data lies past the end of the input
 *   not a multiple of the alignment   a tensor offset
 *   outside the data section   a tensor's bytes do not all lie inside the input
 *   overlaps                   a tensor starts before the previous one ends
 *   gap                        a tensor starts after the padded end of the previous one
 *   out of memory              the ggml context (or a copy) could not be allocated
 *
 * "gap" and "overlaps" together say what upstream's reader demands: the tensors follow each other
 * in file order, each padded to the alignment. Zero-sized tensors (a dimension of 0) are accepted,
 * as upstream does. String values are checked for their length, not for UTF-8: tokenizer
 * vocabularies in the wild hold byte sequences that are not valid UTF-8, and upstream reads them.
 */
#include "gguf-impl.h"
#include "ggml-impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* the fewest bytes a key/value pair and a tensor info take in a file */
#define GGUF_MIN_KV_BYTES   (8 + 1 + 4 + 1)
#define GGUF_MIN_INFO_BYTES (8 + 4 + 4 + 8)

struct rd {
    gguf_reader_callback_t cb;
    void *                 ud;
    size_t                 chunk; /* at most this many bytes a callback call */
    uint64_t               pos;   /* from where reading started */
    uint64_t               size;  /* the input's size: nothing at or past it exists */
    const char *           func;  /* the public function, for messages */
};

static uint64_t rd_left(const struct rd * r) {
    return r->size - r->pos;
}

/* n bytes into dst; the caller's field description goes into the message */
static bool rd_bytes(struct rd * r, void * dst, uint64_t n, const char * what) {
    if (n > rd_left(r)) {
        ggmlx_error(r->func, "truncated: %s needs %" PRIu64 " bytes at byte %" PRIu64 ", the input has %" PRIu64 " left",
                    what, n, r->pos, rd_left(r));
        return false;
    }
    uint8_t * out  = dst;
    uint64_t  done = 0;
    while (done < n) {
        const size_t want = (n - done) < r->chunk ? (size_t) (n - done) : r->chunk;
        const size_t got  = r->cb(r->ud, out + done, r->pos + done, want);
        if (got == 0 || got > want) {
            ggmlx_error(r->func, "truncated: %s: the input ended at byte %" PRIu64 " (expected %" PRIu64 " bytes)", what,
                        r->pos + done, r->size);
            return false;
        }
        done += got;
    }
    r->pos += n;
    return true;
}

#define RD_SCALAR(name, ctype)                                                                \
    static bool name(struct rd * r, ctype * v, const char * what) {                           \
        return rd_bytes(r, v, sizeof *v, what);                                               \
    }
RD_SCALAR(rd_u32, uint32_t)
RD_SCALAR(rd_i32, int32_t)
RD_SCALAR(rd_u64, uint64_t)
RD_SCALAR(rd_i64, int64_t)

/*
 * A string into out (NUL-terminated copy). An identifier (a key, a tensor name) must also be
 * valid UTF-8 without NUL bytes: a NUL would make two different names equal to strcmp.
 */
static bool rd_str(struct rd * r, struct gguf_str * out, bool identifier, const char * what) {
    const uint64_t at = r->pos;
    uint64_t       len;
    if (!rd_u64(r, &len, what)) {
        return false;
    }
    if (len > rd_left(r) || len > GGUF_MAX_STRING_LENGTH) {
        ggmlx_error(r->func, "%s: string length %" PRIu64 " (at byte %" PRIu64 ") exceeds the %" PRIu64 " bytes left",
                    what, len, at, rd_left(r));
        return false;
    }
    char * s = malloc((size_t) len + 1);
    if (s == NULL) {
        ggmlx_error(r->func, "%s: out of memory for a string of %" PRIu64 " bytes", what, len);
        return false;
    }
    if (!rd_bytes(r, s, len, what)) {
        goto err_s;
    }
    s[len] = '\0';
    if (identifier) {
        if (memchr(s, '\0', (size_t) len) != NULL) {
            ggmlx_error(r->func, "%s (at byte %" PRIu64 ") contains a NUL byte", what, at);
            goto err_s;
        }
        if (!gguf_utf8_valid(s, (size_t) len)) {
            ggmlx_error(r->func, "%s (at byte %" PRIu64 "): invalid UTF-8", what, at);
            goto err_s;
        }
    }
    out->s = s;
    out->n = (size_t) len;
    return true;

err_s:
    free(s);
    return false;
}

/* a value type id; ARRAY only where allow_array */
static bool rd_type(struct rd * r, enum gguf_type * type, bool allow_array, const char * what) {
    const uint64_t at = r->pos;
    int32_t        t;
    if (!rd_i32(r, &t, what)) {
        return false;
    }
    if (t < 0 || t >= GGUF_TYPE_COUNT) {
        ggmlx_error(r->func, "%s: unknown value type %" PRId32 " (at byte %" PRIu64 ")", what, t, at);
        return false;
    }
    if (t == GGUF_TYPE_ARRAY && !allow_array) {
        ggmlx_error(r->func, "%s: nested array (at byte %" PRIu64 "): array elements cannot be arrays", what, at);
        return false;
    }
    *type = (enum gguf_type) t;
    return true;
}

/* the n values of kv (type and n set), checked against the bytes left before allocating */
static bool rd_values(struct rd * r, struct gguf_kv * kv, const char * what) {
    if (kv->type == GGUF_TYPE_STRING) {
        kv->strs = calloc(kv->n ? kv->n : 1, sizeof *kv->strs);
        if (kv->strs == NULL) {
            ggmlx_error(r->func, "%s: out of memory for %zu strings", what, kv->n);
            return false;
        }
        for (size_t i = 0; i < kv->n; i++) {
            if (!rd_str(r, &kv->strs[i], false, what)) {
                return false; /* gguf_kv_clear frees the strings read so far */
            }
        }
        return true;
    }
    const size_t bytes = kv->n * gguf_type_size(kv->type); /* bounded by the count check */
    kv->data = malloc(bytes ? bytes : 1);
    if (kv->data == NULL) {
        ggmlx_error(r->func, "%s: out of memory for %zu bytes", what, bytes);
        return false;
    }
    return rd_bytes(r, kv->data, bytes, what);
}

/* key/value pair i into kv */
static bool rd_kv(struct rd * r, size_t i, struct gguf_kv * kv) {
    char           what[GGML_MAX_NAME + 160];
    const uint64_t at = r->pos;
    struct gguf_str key = { 0 };

    snprintf(what, sizeof what, "key %zu", i);
    if (!rd_str(r, &key, true, what)) {
        return false;
    }
    kv->key = key.s;
    if (key.n == 0) {
        ggmlx_error(r->func, "key %zu: empty key (at byte %" PRIu64 ")", i, at);
        return false;
    }
    snprintf(what, sizeof what, "key %zu '%.100s' type", i, kv->key);
    enum gguf_type type;
    if (!rd_type(r, &type, true, what)) {
        return false;
    }
    kv->n = 1;
    if (type == GGUF_TYPE_ARRAY) {
        kv->is_array = true;
        snprintf(what, sizeof what, "key %zu '%.100s' element type", i, kv->key);
        if (!rd_type(r, &type, false, what)) {
            return false;
        }
        const uint64_t count_at = r->pos;
        uint64_t       n;
        snprintf(what, sizeof what, "key %zu '%.100s' array count", i, kv->key);
        if (!rd_u64(r, &n, what)) {
            return false;
        }
        /* a string takes at least its 8-byte length */
        const uint64_t min_el = type == GGUF_TYPE_STRING ? 8 : gguf_type_size(type);
        if (n > GGUF_MAX_ARRAY_ELEMENTS || n > rd_left(r) / min_el) {
            ggmlx_error(r->func,
                        "%s %" PRIu64 " (at byte %" PRIu64 ") needs at least %" PRIu64 " bytes per %s element, "
                        "the input has %" PRIu64 " left", what, n, count_at, min_el, gguf_type_name(type), rd_left(r));
            return false;
        }
        kv->n = (size_t) n;
    }
    kv->type = type;
    snprintf(what, sizeof what, "key %zu '%.100s' value", i, kv->key);
    return rd_values(r, kv, what);
}

/* the alignment key, if present, must be a u32 power of two */
static bool check_alignment(struct rd * r, struct gguf_context * ctx, uint64_t at) {
    const int64_t id = gguf_find_key(ctx, GGUF_KEY_GENERAL_ALIGNMENT);
    if (id < 0) {
        return true;
    }
    const struct gguf_kv * kv = &ctx->kv[id];
    if (kv->type != GGUF_TYPE_UINT32 || kv->is_array) {
        ggmlx_error(r->func, "key %" PRId64 " '" GGUF_KEY_GENERAL_ALIGNMENT "' (at byte %" PRIu64 ") must be a u32, "
                    "not %s%s", id, at, kv->is_array ? "arr of " : "", gguf_type_name(kv->type));
        return false;
    }
    uint32_t align;
    memcpy(&align, kv->data, sizeof align);
    if (!gguf_is_pow2(align)) {
        ggmlx_error(r->func, "key %" PRId64 " '" GGUF_KEY_GENERAL_ALIGNMENT "' = %" PRIu32 " (at byte %" PRIu64
                    ") is not a power of two", id, align, at);
        return false;
    }
    ctx->alignment = align;
    return true;
}

/* tensor info i into info; *offset_at receives where its offset field was */
static bool rd_info(struct rd * r, size_t i, struct gguf_tensor_info * info, struct gguf_name_set * names,
                    uint64_t * offset_at) {
    char           what[GGML_MAX_NAME + 160];
    const uint64_t at = r->pos;
    struct gguf_str name = { 0 };

    memset(info, 0, sizeof *info);
    snprintf(what, sizeof what, "tensor %zu name", i);
    if (!rd_str(r, &name, true, what)) {
        return false;
    }
    if (name.n >= GGML_MAX_NAME) {
        ggmlx_error(r->func, "tensor %zu: name too long: %zu bytes (at byte %" PRIu64 "), at most %d", i, name.n, at,
                    GGML_MAX_NAME - 1);
        free(name.s);
        return false;
    }
    memcpy(info->t.name, name.s, name.n + 1);
    free(name.s);
    if (!gguf_name_set_add(names, info->t.name)) {
        ggmlx_error(r->func, "tensor %zu: duplicate tensor name '%s' (at byte %" PRIu64 ")", i, info->t.name, at);
        return false;
    }

    const uint64_t dims_at = r->pos;
    uint32_t       n_dims;
    snprintf(what, sizeof what, "tensor %zu '%s' n_dims", i, info->t.name);
    if (!rd_u32(r, &n_dims, what)) {
        return false;
    }
    if (n_dims > GGML_MAX_DIMS) {
        ggmlx_error(r->func, "%s = %" PRIu32 " (at byte %" PRIu64 ") exceeds GGML_MAX_DIMS (%d)", what, n_dims, dims_at,
                    GGML_MAX_DIMS);
        return false;
    }
    int64_t nel = 1;
    for (int j = 0; j < GGML_MAX_DIMS; j++) {
        info->t.ne[j] = 1;
    }
    for (uint32_t j = 0; j < n_dims; j++) {
        const uint64_t ne_at = r->pos;
        snprintf(what, sizeof what, "tensor %zu '%s' ne[%" PRIu32 "]", i, info->t.name, j);
        if (!rd_i64(r, &info->t.ne[j], what)) {
            return false;
        }
        if (info->t.ne[j] < 0) {
            ggmlx_error(r->func, "%s = %" PRId64 " (at byte %" PRIu64 ") is negative", what, info->t.ne[j], ne_at);
            return false;
        }
        if (__builtin_mul_overflow(nel, info->t.ne[j], &nel)) {
            ggmlx_error(r->func, "tensor %zu '%s': element count overflows int64 at ne[%" PRIu32 "] (at byte %" PRIu64 ")",
                        i, info->t.name, j, ne_at);
            return false;
        }
    }

    const uint64_t type_at = r->pos;
    int32_t        type;
    snprintf(what, sizeof what, "tensor %zu '%s' type", i, info->t.name);
    if (!rd_i32(r, &type, what)) {
        return false;
    }
    if (type < 0 || type >= GGML_TYPE_COUNT || ggml_blck_size((enum ggml_type) type) == 0) {
        ggmlx_error(r->func, "%s: unknown ggml type %" PRId32 " (at byte %" PRIu64 ")", what, type, type_at);
        return false;
    }
    struct ggml_tensor * t = &info->t;
    t->type = (enum ggml_type) type;
    const int64_t blck = ggml_blck_size(t->type);
    if (t->ne[0] % blck != 0) {
        ggmlx_error(r->func, "tensor %zu '%s': ne[0] = %" PRId64 " is not a multiple of the block size %" PRId64
                    " of %s (type at byte %" PRIu64 ")", i, t->name, t->ne[0], blck, ggml_type_name(t->type), type_at);
        return false;
    }
    /*
     * Contiguous strides; every product is checked, the last one is the byte size. Each stride
     * must also fit in int64_t, as ggml_new_tensor demands: a tensor of [2^62, 0] has no bytes,
     * but its row stride does not fit, and without this check it read without a ggml context and
     * was refused with one (found by fuzz-gguf).
     */
    size_t nb = ggml_type_size(t->type);
    t->nb[0]  = nb;
    bool ovf  = __builtin_mul_overflow(nb, (size_t) (t->ne[0] / blck), &nb) || nb > INT64_MAX;
    t->nb[1]  = nb;
    for (int j = 2; j < GGML_MAX_DIMS && !ovf; j++) {
        ovf      = __builtin_mul_overflow(nb, (size_t) t->ne[j - 1], &nb) || nb > INT64_MAX;
        t->nb[j] = nb;
    }
    size_t bytes = 0;
    if (ovf || __builtin_mul_overflow(nb, (size_t) t->ne[GGML_MAX_DIMS - 1], &bytes) || bytes > INT64_MAX) {
        ggmlx_error(r->func, "tensor %zu '%s': byte size overflows size_t (shape at byte %" PRIu64 ")", i, t->name,
                    dims_at);
        return false;
    }

    *offset_at = r->pos;
    snprintf(what, sizeof what, "tensor %zu '%s' offset", i, t->name);
    return rd_u64(r, &info->offset, what);
}

/*
 * The offsets, in file order, against the data section [start, r->size): aligned, inside,
 * and each tensor right after the previous one's padded end (the layout every writer makes).
 */
static bool check_offsets(struct rd * r, struct gguf_context * ctx, const uint64_t * offset_at) {
    const uint64_t data_size = r->size - ctx->offset;
    uint64_t       expected  = 0;
    for (size_t i = 0; i < ctx->n_info; i++) {
        const struct gguf_tensor_info * info  = &ctx->info[i];
        const uint64_t                  off   = info->offset;
        const uint64_t                  bytes = ggml_nbytes(&info->t);
        if (off % ctx->alignment != 0) {
            ggmlx_error(r->func, "tensor %zu '%s': offset %" PRIu64 " (at byte %" PRIu64 ") is not a multiple of the "
                        "alignment %zu", i, info->t.name, off, offset_at[i], ctx->alignment);
            return false;
        }
        if (off > data_size || bytes > data_size - off) {
            ggmlx_error(r->func, "tensor %zu '%s': offset %" PRIu64 " (at byte %" PRIu64 ") with %" PRIu64 " bytes lies "
                        "outside the data section (size %" PRIu64 ")", i, info->t.name, off, offset_at[i], bytes,
                        data_size);
            return false;
        }
        if (off < expected) {
            ggmlx_error(r->func, "tensor %zu '%s': offset %" PRIu64 " (at byte %" PRIu64 ") overlaps tensor %zu '%s', "
                        "which ends at %" PRIu64, i, info->t.name, off, offset_at[i], i - 1, ctx->info[i - 1].t.name,
                        expected);
            return false;
        }
        if (off > expected) {
            ggmlx_error(r->func, "tensor %zu '%s': offset %" PRIu64 " (at byte %" PRIu64 ") leaves a gap: expected %"
                        PRIu64 " (tensors follow each other, padded to the alignment)", i, info->t.name, off,
                        offset_at[i], expected);
            return false;
        }
        /* cannot overflow: off + bytes <= data_size, and padding stays below 2^32 more */
        expected = off + GGML_PAD(bytes, ctx->alignment);
    }
    ctx->size = (size_t) expected;
    return true;
}

/* The ggml context of params: one tensor per info, and with !no_alloc the data section. */
static bool make_ggml_ctx(struct rd * r, struct gguf_context * ctx, struct gguf_init_params params) {
    const size_t overhead = ggml_tensor_overhead();
    size_t       mem;
    /* room for the blob's own padding to GGML_MEM_ALIGN in the ggml context */
    if (__builtin_mul_overflow(ctx->n_info + 1, overhead, &mem) ||
        (!params.no_alloc && __builtin_add_overflow(mem, ctx->size + GGML_MEM_ALIGN, &mem))) {
        ggmlx_error(r->func, "out of memory: the ggml context would exceed SIZE_MAX");
        return false;
    }
    struct ggml_context * gctx = ggml_init((struct ggml_init_params) {
        .mem_size   = mem,
        .mem_buffer = NULL,
        .no_alloc   = params.no_alloc,
    });
    if (gctx == NULL) {
        ggmlx_error(r->func, "out of memory: cannot make a ggml context of %zu bytes", mem);
        return false;
    }
    uint8_t * blob = NULL;
    if (!params.no_alloc) {
        struct ggml_tensor * data = ggml_new_tensor_1d(gctx, GGML_TYPE_I8, (int64_t) ctx->size);
        if (data == NULL) {
            goto err_gctx;
        }
        ggml_set_name(data, "GGUF tensor data binary blob");
        blob = data->data;
        /* the last tensor's padding may be missing from the input: it reads as zeros */
        const uint64_t avail = r->size - ctx->offset;
        const size_t   n     = ctx->size < avail ? ctx->size : (size_t) avail;
        r->pos = ctx->offset;
        if (!rd_bytes(r, blob, n, "data section")) {
            goto err_gctx;
        }
        memset(blob + n, 0, ctx->size - n);
        ctx->data = blob;
        ggml_set_no_alloc(gctx, true);
    }
    for (size_t i = 0; i < ctx->n_info; i++) {
        const struct ggml_tensor * ti = &ctx->info[i].t;
        struct ggml_tensor *       t  = ggml_new_tensor(gctx, ti->type, GGML_MAX_DIMS, ti->ne);
        if (t == NULL) {
            goto err_gctx;
        }
        ggml_set_name(t, ti->name);
        if (blob) {
            t->data = blob + ctx->info[i].offset;
            /* so that the context can be written back as it was read (upstream cannot) */
            ctx->info[i].t.data = t->data;
        }
    }
    ggml_set_no_alloc(gctx, params.no_alloc);
    *params.ctx = gctx;
    return true;

err_gctx:
    ggml_free(gctx);
    return false;
}

/* The whole parse; on failure everything is freed and *params.ctx is NULL. */
static struct gguf_context * gguf_read(struct rd * r, struct gguf_init_params params) {
    struct gguf_name_set names    = { 0 };
    uint64_t *           offsets  = NULL;
    struct gguf_context * ctx     = calloc(1, sizeof *ctx);

    if (params.ctx) {
        *params.ctx = NULL;
    }
    if (ctx == NULL) {
        ggmlx_error(r->func, "out of memory");
        return NULL;
    }
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;

    char magic[4];
    if (!rd_bytes(r, magic, sizeof magic, "magic")) {
        goto err_ctx;
    }
    if (memcmp(magic, GGUF_MAGIC, sizeof magic) != 0) {
        ggmlx_error(r->func, "bad magic (at byte 0): %02x %02x %02x %02x, expected \"GGUF\"", (unsigned char) magic[0],
                    (unsigned char) magic[1], (unsigned char) magic[2], (unsigned char) magic[3]);
        goto err_ctx;
    }
    if (!rd_u32(r, &ctx->version, "version")) {
        goto err_ctx;
    }
    if (ctx->version != 0 && (ctx->version & 0xFFFF) == 0) {
        ggmlx_error(r->func, "version 0x%08" PRIx32 " (at byte 4) looks byte-swapped: a file of the other byte order",
                    ctx->version);
        goto err_ctx;
    }
    if (ctx->version < 2 || ctx->version > GGUF_VERSION) {
        ggmlx_error(r->func, "version %" PRIu32 " (at byte 4) is not supported (2 and 3 are)", ctx->version);
        goto err_ctx;
    }

    uint64_t align_at = 0;
    int64_t n_tensors, n_kv;
    if (!rd_i64(r, &n_tensors, "tensor count") || !rd_i64(r, &n_kv, "key count")) {
        goto err_ctx;
    }
    if (n_tensors < 0 || n_kv < 0) {
        ggmlx_error(r->func, "%s %" PRId64 " (at byte %d) is negative", n_tensors < 0 ? "tensor count" : "key count",
                    n_tensors < 0 ? n_tensors : n_kv, n_tensors < 0 ? 8 : 16);
        goto err_ctx;
    }
    if ((uint64_t) n_tensors > rd_left(r) / GGUF_MIN_INFO_BYTES) {
        ggmlx_error(r->func, "tensor count %" PRId64 " (at byte 8) does not fit: each tensor info takes at least %d "
                    "bytes and the input has %" PRIu64 " left", n_tensors, GGUF_MIN_INFO_BYTES, rd_left(r));
        goto err_ctx;
    }
    if ((uint64_t) n_kv > (rd_left(r) - (uint64_t) n_tensors * GGUF_MIN_INFO_BYTES) / GGUF_MIN_KV_BYTES) {
        ggmlx_error(r->func, "key count %" PRId64 " (at byte 16) does not fit: each pair takes at least %d bytes and "
                    "the input has %" PRIu64 " left", n_kv, GGUF_MIN_KV_BYTES, rd_left(r));
        goto err_ctx;
    }

    /* both arrays are bounded by the input's size now; reserving them keeps names' addresses */
    ctx->kv     = calloc((size_t) n_kv ? (size_t) n_kv : 1, sizeof *ctx->kv);
    ctx->cap_kv = (size_t) n_kv;
    if (ctx->kv == NULL || !gguf_name_set_init(&names, (size_t) n_kv)) {
        ggmlx_error(r->func, "out of memory for %" PRId64 " keys", n_kv);
        goto err_names;
    }
    for (size_t i = 0; i < (size_t) n_kv; i++) {
        const uint64_t at = r->pos;
        struct gguf_kv kv = { 0 };
        if (!rd_kv(r, i, &kv)) {
            gguf_kv_clear(&kv);
            goto err_names;
        }
        ctx->kv[ctx->n_kv++] = kv; /* reserved: cannot fail */
        if (strcmp(kv.key, GGUF_KEY_GENERAL_ALIGNMENT) == 0) {
            align_at = at; /* where the pair starts, for check_alignment's message */
        }
        if (!gguf_name_set_add(&names, ctx->kv[i].key)) {
            ggmlx_error(r->func, "key %zu: duplicate key '%s' (at byte %" PRIu64 ")", i, ctx->kv[i].key, at);
            goto err_names;
        }
    }
    gguf_name_set_free(&names);
    if (!check_alignment(r, ctx, align_at)) {
        goto err_ctx;
    }

    ctx->info     = calloc((size_t) n_tensors ? (size_t) n_tensors : 1, sizeof *ctx->info);
    ctx->cap_info = (size_t) n_tensors;
    offsets       = calloc((size_t) n_tensors ? (size_t) n_tensors : 1, sizeof *offsets);
    if (ctx->info == NULL || offsets == NULL || !gguf_name_set_init(&names, (size_t) n_tensors)) {
        ggmlx_error(r->func, "out of memory for %" PRId64 " tensor infos", n_tensors);
        goto err_names;
    }
    for (size_t i = 0; i < (size_t) n_tensors; i++) {
        if (!rd_info(r, i, &ctx->info[i], &names, &offsets[i])) {
            goto err_names;
        }
        ctx->n_info++;
    }
    gguf_name_set_free(&names);

    /* with no tensors there is no data section and no padding to skip (as upstream) */
    ctx->offset = (size_t) r->pos;
    if (ctx->n_info > 0) {
        uint64_t start = UINT64_MAX; /* stays so when padding overflows */
        if (!gguf_pad(r->pos, ctx->alignment, &start) || start > r->size) {
            ggmlx_error(r->func, "data section starts at byte %" PRIu64 " (the tensor infos end at byte %" PRIu64
                        ", aligned to %zu), past the end of the input (%" PRIu64 " bytes)", start, r->pos,
                        ctx->alignment, r->size);
            goto err_offsets;
        }
        ctx->offset = (size_t) start;
    }
    if (!check_offsets(r, ctx, offsets)) {
        goto err_offsets;
    }
    free(offsets);
    offsets = NULL;

    if (params.ctx && !make_ggml_ctx(r, ctx, params)) {
        goto err_ctx;
    }
    ggmlx_ok();
    return ctx;

err_names:
    gguf_name_set_free(&names);
err_offsets:
    free(offsets);
err_ctx:
    gguf_free(ctx);
    return NULL;
}

/* ---- sources --------------------------------------------------------------------------------- */

struct file_src {
    FILE *   f;
    uint64_t base; /* the file position reading started at */
    uint64_t cur;  /* the file position now, relative to base */
};

static size_t file_read(void * ud, void * out, uint64_t offset, size_t len) {
    struct file_src * src = ud;
    if (offset != src->cur) {
        if (offset > INT64_MAX - src->base || fseeko(src->f, (off_t) (src->base + offset), SEEK_SET) != 0) {
            return 0;
        }
        src->cur = offset;
    }
    const size_t n = fread(out, 1, len, src->f);
    src->cur += n;
    return n;
}

static struct gguf_context * read_file(FILE * file, struct gguf_init_params params, const char * func) {
    const off_t base = ftello(file);
    if (base < 0 || fseeko(file, 0, SEEK_END) != 0) {
        ggmlx_error(func, "cannot find the file's size (not seekable?): %s", strerror(errno));
        return NULL;
    }
    const off_t end = ftello(file);
    if (end < base || fseeko(file, base, SEEK_SET) != 0) {
        ggmlx_error(func, "cannot find the file's size: %s", strerror(errno));
        return NULL;
    }
    struct file_src src = { .f = file, .base = (uint64_t) base, .cur = 0 };
    struct rd       r   = {
        .cb = file_read, .ud = &src, .chunk = SIZE_MAX, .pos = 0, .size = (uint64_t) (end - base), .func = func,
    };
    return gguf_read(&r, params);
}

struct gguf_context * gguf_init_from_file_ptr(FILE * file, struct gguf_init_params params) {
    if (file == NULL) {
        ggmlx_error(__func__, "file is NULL");
        return NULL;
    }
    return read_file(file, params, __func__);
}

struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params) {
    if (fname == NULL) {
        ggmlx_error(__func__, "fname is NULL");
        return NULL;
    }
    FILE * file = ggml_fopen(fname, "rb");
    if (file == NULL) {
        ggmlx_error(__func__, "cannot open '%s': %s", fname, strerror(errno));
        return NULL;
    }
    struct gguf_context * ctx = read_file(file, params, __func__);
    fclose(file);
    return ctx;
}

struct buf_src {
    const uint8_t * data;
    size_t          size;
};

static size_t buf_read(void * ud, void * out, uint64_t offset, size_t len) {
    const struct buf_src * src = ud;
    if (offset >= src->size) {
        return 0;
    }
    const size_t n = len < src->size - offset ? len : (size_t) (src->size - offset);
    memcpy(out, src->data + offset, n);
    return n;
}

struct gguf_context * gguf_init_from_buffer(const void * data, size_t size, struct gguf_init_params params) {
    if (data == NULL || size == 0) {
        ggmlx_error(__func__, "%s", data == NULL ? "data is NULL" : "size is 0");
        return NULL;
    }
    struct buf_src src = { .data = data, .size = size };
    struct rd      r   = { .cb = buf_read, .ud = &src, .chunk = SIZE_MAX, .pos = 0, .size = size, .func = __func__ };
    return gguf_read(&r, params);
}

struct gguf_context * gguf_init_from_callback(gguf_reader_callback_t callback, void * userdata, size_t max_chunk_read,
                                              uint64_t max_expected_size, struct gguf_init_params params) {
    if (callback == NULL) {
        ggmlx_error(__func__, "callback is NULL");
        return NULL;
    }
    struct rd r = {
        .cb    = callback,
        .ud    = userdata,
        .chunk = max_chunk_read ? max_chunk_read : SIZE_MAX,
        .pos   = 0,
        .size  = max_expected_size,
        .func  = __func__,
    };
    return gguf_read(&r, params);
}
