/*
 * quant-iq.h -- IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M: rows to and from F32 (the
 * type traits' to_float and from_float_ref) and the quantizers ggml_quantize_chunk dispatches to.
 * Block layouts: quant-blocks.h.
 *
 * Every row length k (and n_per_row) is a multiple of QK_K. The quantizers search codebook tables
 * built by the init hooks below (ggml_quantize_init calls them); called before those tables exist
 * they quantize nothing, return 0 and say why through ggmlx_error.
 */
#ifndef GGMLX_QUANT_IQ_H
#define GGMLX_QUANT_IQ_H

#include "quant-blocks.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the offset IQ1_S and IQ1_M add to (or, with the block's flag, subtract from) each grid value */
#define IQ1S_DELTA 0.125f
#define IQ1M_DELTA 0.125f

/* ---- to_float ---- */
void ggmlx_dequantize_row_iq2_xxs(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq2_xs(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq2_s(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq3_xxs(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq3_s(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq1_s(const void * restrict x, float * restrict y, int64_t k);
void ggmlx_dequantize_row_iq1_m(const void * restrict x, float * restrict y, int64_t k);

/* ---- from_float_ref (the types upstream gives one; no importance matrix) ---- */
void ggmlx_quantize_row_iq3_xxs_ref(const float * restrict x, void * restrict y, int64_t k);
void ggmlx_quantize_row_iq3_s_ref(const float * restrict x, void * restrict y, int64_t k);
void ggmlx_quantize_row_iq2_s_ref(const float * restrict x, void * restrict y, int64_t k);

/* ---- whole rows (quant.h's ggmlx_quantize_rows_fn); 0 on refusal ---- */
size_t ggmlx_quantize_iq2_xxs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq2_xs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq2_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq3_xxs(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq3_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq1_s(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_iq1_m(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- the codebook search tables (quant.h init/release hooks) ----
 * init builds the tables of its type (IQ1_S and IQ1_M share one set) and is a no-op when they
 * exist; false means out of memory, with nothing kept. release frees them; releasing what was
 * never built is a no-op. Not thread-safe by themselves: ggml_quantize_init/free hold a lock. */
bool ggmlx_iq2_xxs_init(void);
bool ggmlx_iq2_xs_init(void);
bool ggmlx_iq2_s_init(void);
bool ggmlx_iq3_xxs_init(void);
bool ggmlx_iq3_s_init(void);
bool ggmlx_iq1_init(void);
void ggmlx_iq2_xxs_release(void);
void ggmlx_iq2_xs_release(void);
void ggmlx_iq2_s_release(void);
void ggmlx_iq3_xxs_release(void);
void ggmlx_iq3_s_release(void);
void ggmlx_iq1_release(void);

#endif
