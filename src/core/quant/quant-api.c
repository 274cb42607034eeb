/*
 * quant-api.c -- ggml_quantize_chunk, ggml_quantize_requires_imatrix, ggml_quantize_init and
 * ggml_quantize_free: the public face of the quantizers in quant-table.c.
 *
 * Upstream asserts on bad arguments; here each is refused with a message and 0 bytes, before
 * anything is written (docs/deviations.md, Quantization).
 */
#include "quant.h"

#include "ggml-impl.h"
#include "ggml-math.h"

#include <pthread.h>
#include <string.h>

/* one lock for every type's tables: init and free may race from any thread */
static pthread_mutex_t g_quant_mutex = PTHREAD_MUTEX_INITIALIZER;

static bool quantize_init(enum ggml_type type) {
    const struct ggmlx_quant_fns * fns = ggmlx_quant_fns(type);
    if (fns->init == NULL) {
        return true;
    }
    pthread_mutex_lock(&g_quant_mutex);
    const bool ok = fns->init();
    pthread_mutex_unlock(&g_quant_mutex);
    return ok;
}

void ggml_quantize_init(enum ggml_type type) {
    if (!quantize_init(type)) {
        ggmlx_error(__func__, "out of memory building the %s search tables", ggml_type_name(type));
        return;
    }
    ggmlx_ok();
}

void ggml_quantize_free(void) {
    pthread_mutex_lock(&g_quant_mutex);
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const struct ggmlx_quant_fns * fns = ggmlx_quant_fns((enum ggml_type) t);
        if (fns->release != NULL) {
            fns->release(); /* types sharing tables share the hook, which is a no-op the second time */
        }
    }
    pthread_mutex_unlock(&g_quant_mutex);
}

bool ggml_quantize_requires_imatrix(enum ggml_type type) {
    return ggmlx_quant_fns(type)->requires_imatrix;
}

/* F32, F16 and BF16 are element types: their "rows" start at element start, not at a row */
static size_t convert_plain(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t n) {
    switch (type) {
    case GGML_TYPE_F32:
        memcpy((float *) dst + start, src + start, (size_t) n * sizeof(float));
        return (size_t) n * sizeof(float);
    case GGML_TYPE_F16:
        ggml_fp32_to_fp16_row(src + start, (ggml_fp16_t *) dst + start, n);
        return (size_t) n * sizeof(ggml_fp16_t);
    default:
        ggml_fp32_to_bf16_row_ref(src + start, (ggml_bf16_t *) dst + start, n);
        return (size_t) n * sizeof(ggml_bf16_t);
    }
}

size_t ggml_quantize_chunk(enum ggml_type type, const float * src, void * dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float * imatrix) {
    if (!ggmlx_type_is_valid(type)) {
        ggmlx_error(__func__, "unknown or removed type %d", (int) type);
        return 0;
    }
    const bool plain = type == GGML_TYPE_F32 || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
    const struct ggmlx_quant_fns * fns = ggmlx_quant_fns(type);
    if (!plain && fns->quantize == NULL) {
        ggmlx_error(__func__, "%s has no quantizer (it is not a storage format ggml_quantize_chunk writes)",
                    ggml_type_name(type));
        return 0;
    }
    if (src == NULL || dst == NULL) {
        ggmlx_error(__func__, "src or dst is NULL");
        return 0;
    }
    const int64_t blck = ggml_blck_size(type);
    if (n_per_row <= 0 || n_per_row % blck != 0) {
        ggmlx_error(__func__, "n_per_row %lld is not a positive multiple of the %s block size %lld",
                    (long long) n_per_row, ggml_type_name(type), (long long) blck);
        return 0;
    }
    if (nrows < 0) {
        ggmlx_error(__func__, "nrows %lld is negative", (long long) nrows);
        return 0;
    }
    if (start < 0 || start % blck != 0 || start % n_per_row != 0) {
        ggmlx_error(__func__, "start %lld is not a multiple of the %s block size %lld and of n_per_row %lld",
                    (long long) start, ggml_type_name(type), (long long) blck, (long long) n_per_row);
        return 0;
    }
    if (fns->requires_imatrix && imatrix == NULL) {
        ggmlx_error(__func__, "%s needs an importance matrix (imatrix is NULL)", ggml_type_name(type));
        return 0;
    }
    const size_t row_size = ggml_row_size(type, n_per_row);
    int64_t n;
    size_t total, end;
    if (row_size == 0 || __builtin_mul_overflow(nrows, n_per_row, &n) ||
        __builtin_mul_overflow((size_t) nrows, row_size, &total) ||
        __builtin_mul_overflow((size_t) (start / n_per_row), row_size, &end) ||
        __builtin_add_overflow(end, total, &end)) {
        ggmlx_error(__func__, "%lld rows of %lld %s elements from element %lld do not fit in memory",
                    (long long) nrows, (long long) n_per_row, ggml_type_name(type), (long long) start);
        return 0;
    }
    if (!quantize_init(type)) {
        ggmlx_error(__func__, "out of memory building the %s search tables", ggml_type_name(type));
        return 0;
    }
    if (plain) {
        const size_t written = convert_plain(type, src, dst, start, n);
        ggmlx_ok();
        return written;
    }
    const int64_t start_row = start / n_per_row;
    const size_t written = fns->quantize(src + start, (char *) dst + (size_t) start_row * row_size, nrows,
                                         n_per_row, imatrix);
    if (written != total) {
        ggmlx_error(__func__, "the %s quantizer wrote %zu bytes, expected %zu", ggml_type_name(type), written, total);
        return 0;
    }
    ggmlx_ok();
    return written;
}
