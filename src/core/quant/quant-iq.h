/*
 * quant-iq.h -- IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M: rows to and from F32 (the type traits' to_float and from_float_ref) and the
 * quantizers ggml_quantize_chunk dispatches to. Block layouts: quant-blocks.h.
 */
#ifndef GGMLX_QUANT_IQ_H
#define GGMLX_QUANT_IQ_H

#include "quant-blocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#endif
