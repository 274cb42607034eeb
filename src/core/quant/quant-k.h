/*
 * quant-k.h -- Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS: rows to and from F32 (the type traits' to_float and from_float_ref) and the
 * quantizers ggml_quantize_chunk dispatches to. Block layouts: quant-blocks.h.
 *
 * dequantize_row_<t>(x, y, k) and quantize_row_<t>_ref(x, y, k) take k elements, a whole number of blocks (the callers
 * check). The _ref quantizers follow upstream's reference quantizers step for step (the same f32 arithmetic), so they
 * write the same bytes. quantize_<t>(src, dst, nrows, n_per_row, imatrix) quantizes whole rows (n_per_row a multiple
 * of the block size, checked by ggml_quantize_chunk) and returns the bytes written; imatrix is NULL or n_per_row
 * weights, one per column, used by every row. Without one the K-quants take exactly the _ref path; IQ4_NL and IQ4_XS
 * always search 15 scales per block, so their quantize_<t> output differs from their _ref output.
 */
#ifndef GGMLX_QUANT_K_H
#define GGMLX_QUANT_K_H

#include "quant-blocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- 2- and 3-bit (quant-k23.c) ---- */
void ggmlx_dequantize_row_q2_K(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q3_K(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q2_K_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q3_K_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q2_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q3_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- 4- and 5-bit with 6-bit scales and minimums (quant-k45.c) ---- */
void ggmlx_dequantize_row_q4_K(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q5_K(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q4_K_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q5_K_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q4_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q5_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- 6- and 8-bit (quant-k68.c); Q8_K is only the activations' side of dot products: no whole-rows quantizer ---- */
void ggmlx_dequantize_row_q6_K(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q6_K_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q6_K(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
void ggmlx_dequantize_row_q8_K(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q8_K_ref(const float * x, void * y, int64_t k);

/* ---- non-linear 4-bit, the kvalues_iq4nl codebook (quant-k-iq4.c) ---- */
void ggmlx_dequantize_row_iq4_nl(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_iq4_xs(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_iq4_nl_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_iq4_xs_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_iq4_nl(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq4_xs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

#endif
