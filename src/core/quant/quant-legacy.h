/*
 * quant-legacy.h -- Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, MXFP4, NVFP4, Q1_0, Q2_0, TQ1_0, TQ2_0: rows to and from F32 (the type traits' to_float and from_float_ref) and the
 * quantizers ggml_quantize_chunk dispatches to. Block layouts: quant-blocks.h.
 */
#ifndef GGMLX_QUANT_LEGACY_H
#define GGMLX_QUANT_LEGACY_H

#include "quant-blocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void ggmlx_dequantize_row_q4_0(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_quantize_row_q4_0_ref(const float * restrict x, void * restrict y, int64_t k);
void ggmlx_dequantize_row_q8_0(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_quantize_row_q8_0_ref(const float * restrict x, void * restrict y, int64_t k);

#endif
