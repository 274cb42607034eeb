/*
 * gguf-write.c -- writing a context: the metadata into a growable buffer, then to a file with
 * the tensor data (from the tensor's data pointer, or its backend buffer).
 */
#include "gguf-impl.h"
#include "ggml-impl.h"
#include "ggml-backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void gguf_buf_free(struct gguf_buf * buf) {
    free(buf->data);
    memset(buf, 0, sizeof *buf);
}

static void buf_put(struct gguf_buf * buf, const void * src, size_t n) {
    if (buf->failed) {
        return;
    }
    if (n > buf->cap - buf->n) {
        size_t cap = buf->cap ? buf->cap : 4096;
        while (cap - buf->n < n) {
            if (cap > SIZE_MAX / 2) {
                buf->failed = true;
                return;
            }
            cap *= 2;
        }
        uint8_t * p = realloc(buf->data, cap);
        if (p == NULL) {
            buf->failed = true;
            return;
        }
        buf->data = p;
        buf->cap  = cap;
    }
    memcpy(buf->data + buf->n, src, n);
    buf->n += n;
}

static void buf_str(struct gguf_buf * buf, const char * s, size_t n) {
    const uint64_t len = n;
    buf_put(buf, &len, sizeof len);
    buf_put(buf, s, n);
}

static void buf_zeros(struct gguf_buf * buf, size_t n) {
    static const uint8_t zeros[64];
    while (n > 0) {
        const size_t k = n < sizeof zeros ? n : sizeof zeros;
        buf_put(buf, zeros, k);
        n -= k;
    }
}

bool gguf_write_meta(const struct gguf_context * ctx, struct gguf_buf * buf, const char * func) {
    const uint32_t version   = ctx->version;
    const int64_t  n_tensors = (int64_t) ctx->n_info;
    const int64_t  n_kv      = (int64_t) ctx->n_kv;
    buf_put(buf, GGUF_MAGIC, 4);
    buf_put(buf, &version, sizeof version);
    buf_put(buf, &n_tensors, sizeof n_tensors);
    buf_put(buf, &n_kv, sizeof n_kv);

    for (size_t i = 0; i < ctx->n_kv; i++) {
        const struct gguf_kv * kv = &ctx->kv[i];
        buf_str(buf, kv->key, strlen(kv->key));
        const int32_t type = kv->is_array ? GGUF_TYPE_ARRAY : (int32_t) kv->type;
        buf_put(buf, &type, sizeof type);
        if (kv->is_array) {
            const int32_t  etype = (int32_t) kv->type;
            const uint64_t n     = kv->n;
            buf_put(buf, &etype, sizeof etype);
            buf_put(buf, &n, sizeof n);
        }
        if (kv->type == GGUF_TYPE_STRING) {
            for (size_t j = 0; j < kv->n; j++) {
                buf_str(buf, kv->strs[j].s, kv->strs[j].n);
            }
        } else {
            buf_put(buf, kv->data, kv->n * gguf_type_size(kv->type));
        }
    }

    for (size_t i = 0; i < ctx->n_info; i++) {
        const struct gguf_tensor_info * info = &ctx->info[i];
        buf_str(buf, info->t.name, strlen(info->t.name));
        /*
         * Trailing dimensions of 1 are not written, as upstream; but a 0 is kept wherever it is
         * (ggml_n_dims counts only dimensions above 1, so [4, 0] would lose its 0 and become [4],
         * 16 bytes the data section does not have).
         */
        uint32_t n_dims = GGML_MAX_DIMS;
        while (n_dims > 1 && info->t.ne[n_dims - 1] == 1) {
            n_dims--;
        }
        buf_put(buf, &n_dims, sizeof n_dims);
        buf_put(buf, info->t.ne, n_dims * sizeof info->t.ne[0]);
        const int32_t type = (int32_t) info->t.type;
        buf_put(buf, &type, sizeof type);
        buf_put(buf, &info->offset, sizeof info->offset);
    }

    /* Only a data section needs an aligned start. Without tensors the reader (ours and upstream's)
     * puts the data offset at the end of the metadata, so padding would only grow the file: by
     * up to 2 GiB for a hostile general.alignment of 2^31 in a 60-byte file read and written
     * back. Upstream pads here too; both read either file the same. */
    if (ctx->n_info > 0) {
        buf_zeros(buf, GGML_PAD(buf->n, ctx->alignment) - buf->n);
    }
    if (buf->failed) {
        ggmlx_error(func, "out of memory for the metadata");
        return false;
    }
    return true;
}

size_t gguf_get_meta_size(const struct gguf_context * ctx) {
    if (ctx == NULL) {
        ggmlx_error(__func__, "ctx is NULL");
        return 0;
    }
    struct gguf_buf buf = { 0 };
    if (!gguf_write_meta(ctx, &buf, __func__)) {
        gguf_buf_free(&buf);
        return 0;
    }
    const size_t n = buf.n;
    gguf_buf_free(&buf);
    ggmlx_ok();
    return n;
}

void gguf_get_meta_data(const struct gguf_context * ctx, void * data) {
    if (ctx == NULL || data == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "data");
        return;
    }
    struct gguf_buf buf = { 0 };
    if (gguf_write_meta(ctx, &buf, __func__)) {
        memcpy(data, buf.data, buf.n);
        ggmlx_ok();
    }
    gguf_buf_free(&buf);
}

/* one tensor's data and its padding */
static bool write_tensor(const struct gguf_context * ctx, const struct gguf_tensor_info * info, FILE * file,
                         const char * func) {
    const struct ggml_tensor * t     = &info->t;
    const size_t               bytes = ggml_nbytes(t);
    static const uint8_t       zeros[256];

    if (!ggml_is_contiguous(t)) {
        ggmlx_error(func, "tensor '%s' is not contiguous", t->name);
        return false;
    }
    if (bytes > 0 && t->buffer) {
        void * tmp = malloc(bytes);
        if (tmp == NULL) {
            ggmlx_error(func, "tensor '%s': out of memory for a copy of %zu bytes", t->name, bytes);
            return false;
        }
        ggml_backend_tensor_get(t, tmp, 0, bytes);
        const bool ok = fwrite(tmp, 1, bytes, file) == bytes;
        free(tmp);
        if (!ok) {
            goto err_io;
        }
    } else if (bytes > 0) {
        if (t->data == NULL) {
            ggmlx_error(func, "tensor '%s' has no data (gguf_set_tensor_data, or write with only_meta)", t->name);
            return false;
        }
        if (fwrite(t->data, 1, bytes, file) != bytes) {
            goto err_io;
        }
    }
    size_t pad = GGML_PAD(bytes, ctx->alignment) - bytes;
    while (pad > 0) {
        const size_t k = pad < sizeof zeros ? pad : sizeof zeros;
        if (fwrite(zeros, 1, k, file) != k) {
            goto err_io;
        }
        pad -= k;
    }
    return true;

err_io:
    ggmlx_error(func, "tensor '%s': write failed: %s", t->name, strerror(errno));
    return false;
}

static bool write_file(const struct gguf_context * ctx, FILE * file, bool only_meta, const char * func) {
    struct gguf_buf buf = { 0 };
    if (!gguf_write_meta(ctx, &buf, func)) {
        goto err_buf;
    }
    if (fwrite(buf.data, 1, buf.n, file) != buf.n) {
        ggmlx_error(func, "metadata write failed: %s", strerror(errno));
        goto err_buf;
    }
    gguf_buf_free(&buf);
    if (!only_meta) {
        for (size_t i = 0; i < ctx->n_info; i++) {
            if (!write_tensor(ctx, &ctx->info[i], file, func)) {
                return false;
            }
        }
    }
    return true;

err_buf:
    gguf_buf_free(&buf);
    return false;
}

bool gguf_write_to_file_ptr(const struct gguf_context * ctx, FILE * file, bool only_meta) {
    if (ctx == NULL || file == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "file");
        return false;
    }
    if (!write_file(ctx, file, only_meta, __func__)) {
        return false;
    }
    ggmlx_ok();
    return true;
}

bool gguf_write_to_file(const struct gguf_context * ctx, const char * fname, bool only_meta) {
    if (ctx == NULL || fname == NULL) {
        ggmlx_error(__func__, "%s is NULL", ctx == NULL ? "ctx" : "fname");
        return false;
    }
    FILE * file = ggml_fopen(fname, "wb");
    if (file == NULL) {
        ggmlx_error(__func__, "cannot open '%s' for writing: %s", fname, strerror(errno));
        return false;
    }
    bool ok = write_file(ctx, file, only_meta, __func__);
    if (fclose(file) != 0 && ok) {
        ggmlx_error(__func__, "closing '%s' failed: %s", fname, strerror(errno));
        ok = false;
    }
    if (ok) {
        ggmlx_ok();
    }
    return ok;
}
