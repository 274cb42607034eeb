/*
 * quant-k.h -- Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS: rows to and from F32 (the type traits' to_float and from_float_ref) and the
 * quantizers ggml_quantize_chunk dispatches to. Block layouts: quant-blocks.h.
 */
#ifndef GGMLX_QUANT_K_H
#define GGMLX_QUANT_K_H

#include "quant-blocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#endif
