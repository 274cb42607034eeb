/*
 * quant-validate.h -- the per-block checks ggml_validate_row_data applies to quantized types.
 */
#ifndef GGMLX_QUANT_VALIDATE_H
#define GGMLX_QUANT_VALIDATE_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>

/* Checks nblocks blocks of a quantized type: every scale finite (f16 d, m, dmin; Q8_K's f32 d;
 * IQ1_M's scale assembled from its scales), no MXFP4 exponent 0xFF. Q8_1 is never valid (it is
 * not a storage type). On failure records an error naming the block and returns false. */
bool ggmlx_validate_quant_blocks(const char * func, enum ggml_type type, const void * data, size_t nblocks);

#endif
