/*
 * qops-stopgap-cpu.c -- TEMPORARY: the CPU traits of Q4_0 and Q8_0 (scalar), only so that the
 * quantized ops can be tested before the vec_dot branch lands. Removed when it is merged.
 */
#include "ggml-cpu.h"
#include "ggml-math.h"
#include "quant/quant-blocks.h"

static void stopgap_dot_q4_0_q8_0(int n, float * restrict s, size_t bs, const void * restrict vx, size_t bx,
                                  const void * restrict vy, size_t by, int nrc) {
    (void) bs; (void) bx; (void) by; (void) nrc;
    const block_q4_0 * x = vx;
    const block_q8_0 * y = vy;
    float sum = 0.0f;
    for (int b = 0; b < n / QK8_0; b++) {
        int acc = 0;
        for (int j = 0; j < QK4_0 / 2; j++) {
            acc += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j] + ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + QK4_0 / 2];
        }
        sum += ggmlx_fp16_to_fp32(x[b].d) * ggmlx_fp16_to_fp32(y[b].d) * (float) acc;
    }
    *s = sum;
}

static void stopgap_dot_q8_0_q8_0(int n, float * restrict s, size_t bs, const void * restrict vx, size_t bx,
                                  const void * restrict vy, size_t by, int nrc) {
    (void) bs; (void) bx; (void) by; (void) nrc;
    const block_q8_0 * x = vx;
    const block_q8_0 * y = vy;
    float sum = 0.0f;
    for (int b = 0; b < n / QK8_0; b++) {
        int acc = 0;
        for (int j = 0; j < QK8_0; j++) {
            acc += x[b].qs[j] * y[b].qs[j];
        }
        sum += ggmlx_fp16_to_fp32(x[b].d) * ggmlx_fp16_to_fp32(y[b].d) * (float) acc;
    }
    *s = sum;
}

/* the core library's reference quantizers are reached through the public traits (they are hidden) */
static void stopgap_from_q4_0(const float * restrict x, void * restrict y, int64_t k) {
    ggml_get_type_traits(GGML_TYPE_Q4_0)->from_float_ref(x, y, k);
}

static void stopgap_from_q8_0(const float * restrict x, void * restrict y, int64_t k) {
    ggml_get_type_traits(GGML_TYPE_Q8_0)->from_float_ref(x, y, k);
}

static const struct ggml_type_traits_cpu stopgap_traits[GGML_TYPE_COUNT] = {
    [GGML_TYPE_Q4_0] = { .from_float = stopgap_from_q4_0, .vec_dot = stopgap_dot_q4_0_q8_0,
                         .vec_dot_type = GGML_TYPE_Q8_0, .nrows = 1 },
    [GGML_TYPE_Q8_0] = { .from_float = stopgap_from_q8_0, .vec_dot = stopgap_dot_q8_0_q8_0,
                         .vec_dot_type = GGML_TYPE_Q8_0, .nrows = 1 },
};

const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type) {
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) {
        return NULL;
    }
    return &stopgap_traits[type];
}
