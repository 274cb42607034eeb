/*
 * quant-legacy.h -- Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, MXFP4, NVFP4, Q1_0, Q2_0, TQ1_0, TQ2_0: rows
 * to and from F32 (the type traits' to_float and from_float_ref) and the quantizers
 * ggml_quantize_chunk dispatches to. Block layouts: quant-blocks.h.
 *
 * dequantize_row_<t>(x, y, k) and quantize_row_<t>_ref(x, y, k) take k elements, a whole number
 * of blocks (the callers check). The _ref quantizers write the same bytes as upstream's reference
 * quantizers. quantize_<t>(src, dst, nrows, n_per_row, imatrix) quantizes whole rows and returns
 * the bytes written; Q4_0, Q4_1, Q5_0 and Q5_1 use the importance matrix (n_per_row weights, one
 * per column) when one is given, the others ignore it.
 */
#ifndef GGMLX_QUANT_LEGACY_H
#define GGMLX_QUANT_LEGACY_H

#include "quant-blocks.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- 4- and 5-bit (quant-q4q5.c) ---- */
void ggmlx_dequantize_row_q4_0(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q4_1(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q5_0(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q5_1(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q4_0_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q4_1_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q5_0_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q5_1_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q4_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q4_1(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q5_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q5_1(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- 8-bit (quant-q8.c); Q8_1 has no dequantizer and no whole-rows quantizer ---- */
void ggmlx_dequantize_row_q8_0(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q8_0_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q8_1_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q8_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- FP4 (quant-fp4.c) ---- */
void ggmlx_dequantize_row_mxfp4(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_nvfp4(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_mxfp4_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_nvfp4_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_mxfp4(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_nvfp4(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- 1- and 2-bit (quant-lowbit.c) ---- */
void ggmlx_dequantize_row_q1_0(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_q2_0(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_q1_0_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_q2_0_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_q1_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_q2_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- ternary (quant-ternary.c) ---- */
void ggmlx_dequantize_row_tq1_0(const void * x, float * y, int64_t k);
void ggmlx_dequantize_row_tq2_0(const void * x, float * y, int64_t k);
void ggmlx_quantize_row_tq1_0_ref(const float * x, void * y, int64_t k);
void ggmlx_quantize_row_tq2_0_ref(const float * x, void * y, int64_t k);
size_t ggmlx_quantize_tq1_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);
size_t ggmlx_quantize_tq2_0(const float * src, void * dst, int64_t nrows, int64_t n_per_row, const float * imatrix);

/* ---- the FP4 scales, shared with the CPU kernels ---- */

/* An E8M0 exponent e as 2^(e - 128): half the OCP scale 2^(e - 127), because the FP4 table holds
 * doubled E2M1 values. e = 0 and 1 give the subnormals 2^-128 and 2^-127; 0xFF (NaN) is not
 * special here (ggml_validate_row_data refuses it). */
static inline float ggmlx_e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* A UE4M3 scale (4 exponent bits with bias 7, 3 mantissa bits, no sign), halved for the doubled
 * table. 0x00 and 0x7F (the NaN code) give 0. */
static inline float ggmlx_ue4m3_to_fp32(uint8_t u) {
    const uint32_t ex = (u >> 3) & 15u, man = u & 7u;
    if (u == 0x7F || ex == 0) {
        return u == 0x7F ? 0.0f : (float) man * 0.0009765625f; /* man * 2^-9, halved */
    }
    /* (1 + man / 8) * 2^(ex - 7), halved, built from bits: the CPU kernels call it per sub-block */
    const uint32_t bits = ((ex + 119u) << 23) | (man << 20);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* f32 -> UE4M3 as upstream rounds it: not positive or NaN -> 0; clamped to 448; a subnormal
 * mantissa rounds half up, and so does a normal one (on the 4th mantissa bit, carrying into the
 * exponent); anything reaching exponent 15 saturates to 0x7E. */
static inline uint8_t ggmlx_fp32_to_ue4m3(float x) {
    if (!(x > 0.0f)) {
        return 0;
    }
    if (x > 448.0f) {
        x = 448.0f;
    }
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    int exp = (int) ((bits >> 23) & 0xFF) - 127 + 7;
    if (exp <= 0) {
        int man = (int) (x * 512.0f + 0.5f);
        if (man > 7) {
            man = 7;
        }
        return man < 1 ? 0 : (uint8_t) man;
    }
    if (exp >= 15) {
        return 0x7E;
    }
    int man = (int) ((bits >> 20) & 7) + (int) ((bits >> 19) & 1);
    if (man > 7) {
        man = 0;
        exp++;
        if (exp >= 15) {
            return 0x7E;
        }
    }
    return (uint8_t) ((exp << 3) | man);
}

#endif
