/*
 * qgemm.h -- batched products of quantized weights with quantized activations on the CPU.
 *
 * mul_mat quantizes b into the vec_dot_type of a's type once; with many rows of b (prompt
 * processing) a blocked GEMM over int8 values beats one vec_dot per output element, because each
 * unpacked panel of a is reused against many rows of b.
 */
#ifndef GGMLX_CPU_QUANT_QGEMM_H
#define GGMLX_CPU_QUANT_QGEMM_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* c[j*ldc + i] = dot(row i of a, row j of b) for i < n, j < m. a: n rows of k elements of type t, row stride lda bytes
 * (the weights); b: m rows of k elements of the vec_dot_type of t (Q8_0 for Q4_0/Q8_0/IQ4_NL..., Q8_K for the K-quants),
 * row stride ldb bytes (the activations, already quantized). Returns false, touching nothing, when it has no kernel for t
 * on this CPU (the caller then uses vec_dot). Called concurrently by several threads on disjoint blocks of c. */
bool ggmlx_qgemm(enum ggml_type t, int64_t k, const void * a, size_t lda, int64_t n, const void * b, size_t ldb,
                 int64_t m, float * c, size_t ldc);

#endif
