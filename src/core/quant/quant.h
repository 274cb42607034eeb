/*
 * quant.h -- what ggml_quantize_chunk needs to know about a quantized type beyond its public traits:
 * the whole-rows quantizer (which takes an importance matrix, one weight per column, where the
 * format uses one), whether that matrix is required, and how to build and drop the codebook
 * search tables some quantizers need (ggml_quantize_init / ggml_quantize_free call these under one
 * lock, so they need none of their own).
 */
#ifndef GGMLX_QUANT_H
#define GGMLX_QUANT_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Quantize nrows rows of n_per_row floats from src into dst (rows of ggml_row_size bytes); imatrix
 * is NULL or n_per_row floats. Returns the bytes written. */
typedef size_t (*ggmlx_quantize_rows_fn)(const float * src, void * dst, int64_t nrows, int64_t n_per_row,
                                         const float * imatrix);

struct ggmlx_quant_fns {
    ggmlx_quantize_rows_fn quantize;
    bool                   requires_imatrix;
    bool (*init)(void);    /* NULL: nothing to build; false: out of memory (nothing half built kept) */
    void (*release)(void); /* frees what init built; a no-op when nothing was */
};

/* The entry of a type; one with quantize == NULL for types ggml_quantize_chunk does not take. */
const struct ggmlx_quant_fns * ggmlx_quant_fns(enum ggml_type type);

#endif
