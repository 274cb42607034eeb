/*
 * quant-table.c -- the whole-rows quantizer of each type (quant.h), grouped as the formats are.
 */
#include "quant.h"
#include "quant-iq.h"
#include "quant-k.h"
#include "quant-legacy.h"

static const struct ggmlx_quant_fns k_quant_fns[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = { 0 }, /* F32, F16 and BF16 are handled by ggml_quantize_chunk itself */

    /* ---- 32-element legacy formats, the FP4 formats, the low-bit and ternary formats ---- */
    [GGML_TYPE_Q4_0]  = { .quantize = ggmlx_quantize_q4_0 },
    [GGML_TYPE_Q4_1]  = { .quantize = ggmlx_quantize_q4_1 },
    [GGML_TYPE_Q5_0]  = { .quantize = ggmlx_quantize_q5_0 },
    [GGML_TYPE_Q5_1]  = { .quantize = ggmlx_quantize_q5_1 },
    [GGML_TYPE_Q8_0]  = { .quantize = ggmlx_quantize_q8_0 },
    [GGML_TYPE_MXFP4] = { .quantize = ggmlx_quantize_mxfp4 },
    [GGML_TYPE_NVFP4] = { .quantize = ggmlx_quantize_nvfp4 },
    [GGML_TYPE_Q1_0]  = { .quantize = ggmlx_quantize_q1_0 },
    [GGML_TYPE_Q2_0]  = { .quantize = ggmlx_quantize_q2_0 },
    [GGML_TYPE_TQ1_0] = { .quantize = ggmlx_quantize_tq1_0 },
    [GGML_TYPE_TQ2_0] = { .quantize = ggmlx_quantize_tq2_0 },
    /* Q8_1 stays empty: it is only the other operand of Q4_1/Q5_1 dot products */

    /* ---- K-quants and the non-linear 4-bit formats ---- */
    [GGML_TYPE_Q2_K]   = { .quantize = ggmlx_quantize_q2_K },
    [GGML_TYPE_Q3_K]   = { .quantize = ggmlx_quantize_q3_K },
    [GGML_TYPE_Q4_K]   = { .quantize = ggmlx_quantize_q4_K },
    [GGML_TYPE_Q5_K]   = { .quantize = ggmlx_quantize_q5_K },
    [GGML_TYPE_Q6_K]   = { .quantize = ggmlx_quantize_q6_K },
    [GGML_TYPE_IQ4_NL] = { .quantize = ggmlx_quantize_iq4_nl },
    [GGML_TYPE_IQ4_XS] = { .quantize = ggmlx_quantize_iq4_xs },
    /* Q8_K stays empty: it is only the activations' side of K-quant and IQ dot products */

    /* ---- codebook (IQ) formats ---- */
    [GGML_TYPE_IQ2_XXS] = { ggmlx_quantize_iq2_xxs, true, ggmlx_iq2_xxs_init, ggmlx_iq2_xxs_release },
    [GGML_TYPE_IQ2_XS]  = { ggmlx_quantize_iq2_xs, true, ggmlx_iq2_xs_init, ggmlx_iq2_xs_release },
    [GGML_TYPE_IQ2_S]   = { ggmlx_quantize_iq2_s, false, ggmlx_iq2_s_init, ggmlx_iq2_s_release },
    [GGML_TYPE_IQ3_XXS] = { ggmlx_quantize_iq3_xxs, false, ggmlx_iq3_xxs_init, ggmlx_iq3_xxs_release },
    [GGML_TYPE_IQ3_S]   = { ggmlx_quantize_iq3_s, false, ggmlx_iq3_s_init, ggmlx_iq3_s_release },
    [GGML_TYPE_IQ1_S]   = { ggmlx_quantize_iq1_s, true, ggmlx_iq1_init, ggmlx_iq1_release },
    [GGML_TYPE_IQ1_M]   = { ggmlx_quantize_iq1_m, false, ggmlx_iq1_init, ggmlx_iq1_release },

};

const struct ggmlx_quant_fns * ggmlx_quant_fns(enum ggml_type type) {
    static const struct ggmlx_quant_fns none = { 0 };
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) {
        return &none;
    }
    return &k_quant_fns[type];
}
