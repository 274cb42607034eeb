/*
 * cpu-convert.c -- ggml-cpu.h's row conversions (upstream's CPU-tuned versions of ggml.h's
 * row converters; the results are the same, rounding to nearest even).
 */
#include "ggml-cpu.h"

#include <string.h>

void ggml_cpu_fp32_to_fp32(const float * x, float * y, int64_t n) {
    if (x != NULL && y != NULL && n > 0 && x != y) {
        memmove(y, x, (size_t) n * sizeof(float));
    }
}

/* C's conversion: toward zero (values outside int32's range are the caller's to avoid) */
void ggml_cpu_fp32_to_i32(const float * x, int32_t * y, int64_t n) {
    for (int64_t i = 0; x != NULL && y != NULL && i < n; i++) {
        y[i] = (int32_t) x[i];
    }
}

void ggml_cpu_fp32_to_fp16(const float * x, ggml_fp16_t * y, int64_t n) {
    if (x != NULL && y != NULL && n > 0) {
        ggml_fp32_to_fp16_row(x, y, n);
    }
}

void ggml_cpu_fp16_to_fp32(const ggml_fp16_t * x, float * y, int64_t n) {
    if (x != NULL && y != NULL && n > 0) {
        ggml_fp16_to_fp32_row(x, y, n);
    }
}

void ggml_cpu_fp32_to_bf16(const float * x, ggml_bf16_t * y, int64_t n) {
    if (x != NULL && y != NULL && n > 0) {
        ggml_fp32_to_bf16_row(x, y, n);
    }
}

void ggml_cpu_bf16_to_fp32(const ggml_bf16_t * x, float * y, int64_t n) {
    if (x != NULL && y != NULL && n > 0) {
        ggml_bf16_to_fp32_row(x, y, n);
    }
}
