/*
 * types.c -- type traits, fp16/bf16 conversions, and the names of types and ops.
 * The tables below were generated from upstream's enum values (shared/reference/abi) so that
 * every id, size and name matches; the ABI test checks them.
 */
#include "ggml-impl.h"
#include "ggml-math.h"
#include "quant/quant-iq.h"
#include "quant/quant-k.h"
#include "quant/quant-legacy.h"
#include "quant/quant-validate.h"

static void f16_to_f32_row(const void * GGML_RESTRICT x, float * GGML_RESTRICT y, int64_t k) {
    ggml_fp16_to_fp32_row((const ggml_fp16_t *) x, y, k);
}

static void f32_to_f16_row(const float * GGML_RESTRICT x, void * GGML_RESTRICT y, int64_t k) {
    ggml_fp32_to_fp16_row(x, (ggml_fp16_t *) y, k);
}

static void bf16_to_f32_row(const void * GGML_RESTRICT x, float * GGML_RESTRICT y, int64_t k) {
    ggml_bf16_to_fp32_row((const ggml_bf16_t *) x, y, k);
}

static void f32_to_bf16_row(const float * GGML_RESTRICT x, void * GGML_RESTRICT y, int64_t k) {
    ggml_fp32_to_bf16_row_ref(x, (ggml_bf16_t *) y, k);
}

static const char * const k_op_names[] = {
    "NONE", "DUP", "ADD", "ADD_ID", "ADD1", "ACC", "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG", "SIN",
    "COS", "SUM", "SUM_ROWS", "CUMSUM", "MEAN", "ARGMAX", "COUNT_EQUAL", "REPEAT", "REPEAT_BACK",
    "CONCAT", "SILU_BACK", "NORM", "RMS_NORM", "RMS_NORM_BACK", "GROUP_NORM", "L2_NORM", "MUL_MAT",
    "MUL_MAT_ID", "OUT_PROD", "SCALE", "SET", "CPY", "CONT", "RESHAPE", "VIEW", "PERMUTE",
    "TRANSPOSE", "GET_ROWS", "GET_ROWS_BACK", "SET_ROWS", "DIAG", "DIAG_MASK_INF", "DIAG_MASK_ZERO",
    "SOFT_MAX", "SOFT_MAX_BACK", "ROPE", "ROPE_BACK", "CLAMP", "CONV_TRANSPOSE_1D", "IM2COL",
    "IM2COL_BACK", "IM2COL_3D", "COL2IM_1D", "CONV_2D", "CONV_3D", "CONV_2D_DW",
    "CONV_TRANSPOSE_2D", "POOL_1D", "POOL_2D", "POOL_2D_BACK", "UPSCALE", "PAD", "PAD_REFLECT_1D",
    "ROLL", "ARANGE", "TIMESTEP_EMBEDDING", "ARGSORT", "TOP_K", "LEAKY_RELU", "TRI", "FILL",
    "FLASH_ATTN_EXT", "FLASH_ATTN_BACK", "SSM_CONV", "SSM_SCAN", "WIN_PART", "WIN_UNPART",
    "GET_REL_POS", "ADD_REL_POS", "RWKV_WKV6", "GATED_LINEAR_ATTN", "RWKV_WKV7", "SOLVE_TRI",
    "GATED_DELTA_NET", "LIGHTNING_INDEXER", "DSV4_HC_COMB", "DSV4_HC_PRE", "DSV4_HC_POST", "UNARY",
    "MAP_CUSTOM1", "MAP_CUSTOM2", "MAP_CUSTOM3", "CUSTOM", "CROSS_ENTROPY_LOSS",
    "CROSS_ENTROPY_LOSS_BACK", "OPT_STEP_ADAMW", "OPT_STEP_SGD", "GLU",
};

static const char * const k_unary_names[] = {
    "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK", "SILU",
    "HARDSWISH", "HARDSIGMOID", "EXP", "EXPM1", "SOFTPLUS", "GELU_ERF", "XIELU", "FLOOR", "CEIL",
    "ROUND", "TRUNC",
};

static const char * const k_glu_names[] = {
    "REGLU", "GEGLU", "SWIGLU", "SWIGLU_OAI", "GEGLU_ERF", "GEGLU_QUICK",
};

static const struct ggml_type_traits k_type_traits[GGML_TYPE_COUNT] = {
    /* ---- plain types ---- */
    [0] = { .type_name = "f32", .blck_size = 1, .type_size = 4, .is_quantized = false },
    [1] = { .type_name = "f16", .blck_size = 1, .type_size = 2, .is_quantized = false, .to_float = f16_to_f32_row, .from_float_ref = f32_to_f16_row },
    [30] = { .type_name = "bf16", .blck_size = 1, .type_size = 2, .is_quantized = false, .to_float = bf16_to_f32_row, .from_float_ref = f32_to_bf16_row },
    [24] = { .type_name = "i8", .blck_size = 1, .type_size = 1, .is_quantized = false },
    [25] = { .type_name = "i16", .blck_size = 1, .type_size = 2, .is_quantized = false },
    [26] = { .type_name = "i32", .blck_size = 1, .type_size = 4, .is_quantized = false },
    [27] = { .type_name = "i64", .blck_size = 1, .type_size = 8, .is_quantized = false },
    [28] = { .type_name = "f64", .blck_size = 1, .type_size = 8, .is_quantized = false },

    /* ---- removed ids (0-sized: never valid) ---- */
    [4] = { .type_name = "DEPRECATED", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [5] = { .type_name = "DEPRECATED", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [31] = { .type_name = "TYPE_Q4_0_4_4 REMOVED, use Q4_0 with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [32] = { .type_name = "TYPE_Q4_0_4_8 REMOVED, use Q4_0 with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [33] = { .type_name = "TYPE_Q4_0_8_8 REMOVED, use Q4_0 with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [36] = { .type_name = "TYPE_IQ4_NL_4_4 REMOVED, use IQ4_NL with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [37] = { .type_name = "TYPE_IQ4_NL_4_8 REMOVED, use IQ4_NL with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },
    [38] = { .type_name = "TYPE_IQ4_NL_8_8 REMOVED, use IQ4_NL with runtime repacking", .blck_size = 0, .type_size = 0, .is_quantized = false },

    /* ---- 32-element legacy formats, the FP4 formats, the low-bit and ternary formats (quant-legacy.h) ---- */
    [2] = { .type_name = "q4_0", .blck_size = 32, .type_size = 18, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q4_0, .from_float_ref = ggmlx_quantize_row_q4_0_ref },
    [3] = { .type_name = "q4_1", .blck_size = 32, .type_size = 20, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q4_1, .from_float_ref = ggmlx_quantize_row_q4_1_ref },
    [6] = { .type_name = "q5_0", .blck_size = 32, .type_size = 22, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q5_0, .from_float_ref = ggmlx_quantize_row_q5_0_ref },
    [7] = { .type_name = "q5_1", .blck_size = 32, .type_size = 24, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q5_1, .from_float_ref = ggmlx_quantize_row_q5_1_ref },
    [8] = { .type_name = "q8_0", .blck_size = 32, .type_size = 34, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q8_0, .from_float_ref = ggmlx_quantize_row_q8_0_ref },
    [9] = { .type_name = "q8_1", .blck_size = 32, .type_size = 36, .is_quantized = true, .from_float_ref = ggmlx_quantize_row_q8_1_ref },
    [39] = { .type_name = "mxfp4", .blck_size = 32, .type_size = 17, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_mxfp4, .from_float_ref = ggmlx_quantize_row_mxfp4_ref },
    [40] = { .type_name = "nvfp4", .blck_size = 64, .type_size = 36, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_nvfp4, .from_float_ref = ggmlx_quantize_row_nvfp4_ref },
    [41] = { .type_name = "q1_0", .blck_size = 128, .type_size = 18, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q1_0, .from_float_ref = ggmlx_quantize_row_q1_0_ref },
    [42] = { .type_name = "q2_0", .blck_size = 64, .type_size = 18, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q2_0, .from_float_ref = ggmlx_quantize_row_q2_0_ref },
    [34] = { .type_name = "tq1_0", .blck_size = 256, .type_size = 54, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_tq1_0, .from_float_ref = ggmlx_quantize_row_tq1_0_ref },
    [35] = { .type_name = "tq2_0", .blck_size = 256, .type_size = 66, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_tq2_0, .from_float_ref = ggmlx_quantize_row_tq2_0_ref },

    /* ---- K-quants and the non-linear 4-bit formats (quant-k.h) ---- */
    [10] = { .type_name = "q2_K", .blck_size = 256, .type_size = 84, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q2_K, .from_float_ref = ggmlx_quantize_row_q2_K_ref },
    [11] = { .type_name = "q3_K", .blck_size = 256, .type_size = 110, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q3_K, .from_float_ref = ggmlx_quantize_row_q3_K_ref },
    [12] = { .type_name = "q4_K", .blck_size = 256, .type_size = 144, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q4_K, .from_float_ref = ggmlx_quantize_row_q4_K_ref },
    [13] = { .type_name = "q5_K", .blck_size = 256, .type_size = 176, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q5_K, .from_float_ref = ggmlx_quantize_row_q5_K_ref },
    [14] = { .type_name = "q6_K", .blck_size = 256, .type_size = 210, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_q6_K, .from_float_ref = ggmlx_quantize_row_q6_K_ref },
    /* as upstream: no conversions, Q8_K is made only by the CPU backend (ggmlx_quantize_row_q8_K_ref) */
    [15] = { .type_name = "q8_K", .blck_size = 256, .type_size = 292, .is_quantized = true },
    [20] = { .type_name = "iq4_nl", .blck_size = 32, .type_size = 18, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_iq4_nl, .from_float_ref = ggmlx_quantize_row_iq4_nl_ref },
    [23] = { .type_name = "iq4_xs", .blck_size = 256, .type_size = 136, .is_quantized = true,
             .to_float = ggmlx_dequantize_row_iq4_xs, .from_float_ref = ggmlx_quantize_row_iq4_xs_ref },

    /* ---- codebook (IQ) formats (quant-iq.h) ---- */
    [16] = { .type_name = "iq2_xxs", .blck_size = 256, .type_size = 66, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq2_xxs },
    [17] = { .type_name = "iq2_xs", .blck_size = 256, .type_size = 74, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq2_xs },
    [22] = { .type_name = "iq2_s", .blck_size = 256, .type_size = 82, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq2_s, .from_float_ref = ggmlx_quantize_row_iq2_s_ref },
    [18] = { .type_name = "iq3_xxs", .blck_size = 256, .type_size = 98, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq3_xxs, .from_float_ref = ggmlx_quantize_row_iq3_xxs_ref },
    [21] = { .type_name = "iq3_s", .blck_size = 256, .type_size = 110, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq3_s, .from_float_ref = ggmlx_quantize_row_iq3_s_ref },
    [19] = { .type_name = "iq1_s", .blck_size = 256, .type_size = 50, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq1_s },
    [29] = { .type_name = "iq1_m", .blck_size = 256, .type_size = 56, .is_quantized = true, .to_float = ggmlx_dequantize_row_iq1_m },
};

_Static_assert(sizeof(k_op_names) / sizeof(k_op_names[0]) == GGML_OP_COUNT, "an op has no name");
_Static_assert(sizeof(k_unary_names) / sizeof(k_unary_names[0]) == GGML_UNARY_OP_COUNT, "a unary op has no name");
_Static_assert(sizeof(k_glu_names) / sizeof(k_glu_names[0]) == GGML_GLU_OP_COUNT, "a glu op has no name");

bool ggmlx_type_is_valid(enum ggml_type type) {
    return (int) type >= 0 && type < GGML_TYPE_COUNT && k_type_traits[type].blck_size > 0;
}

const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type) {
    if ((int) type < 0 || type >= GGML_TYPE_COUNT) {
        ggmlx_error(__func__, "unknown type %d", (int) type);
        return NULL;
    }
    return &k_type_traits[type];
}

int64_t ggml_blck_size(enum ggml_type type) {
    return ggmlx_type_is_valid(type) ? k_type_traits[type].blck_size : 0;
}

size_t ggml_type_size(enum ggml_type type) {
    return ggmlx_type_is_valid(type) ? k_type_traits[type].type_size : 0;
}

size_t ggml_row_size(enum ggml_type type, int64_t ne) {
    if (!ggmlx_type_is_valid(type) || ne < 0 || ne % k_type_traits[type].blck_size != 0) {
        ggmlx_error(__func__, "%lld elements are not a whole number of %s blocks", (long long) ne,
                    ggml_type_name(type));
        return 0;
    }
    size_t size;
    if (__builtin_mul_overflow(k_type_traits[type].type_size, (size_t) (ne / k_type_traits[type].blck_size), &size)) {
        ggmlx_error(__func__, "a row of %lld %s elements has more bytes than SIZE_MAX", (long long) ne,
                    ggml_type_name(type));
        return 0;
    }
    return size;
}

double ggml_type_sizef(enum ggml_type type) {
    return ggmlx_type_is_valid(type) ? (double) k_type_traits[type].type_size / (double) k_type_traits[type].blck_size : 0.0;
}

const char * ggml_type_name(enum ggml_type type) {
    return ((int) type >= 0 && type < GGML_TYPE_COUNT) ? k_type_traits[type].type_name : "NONE";
}

bool ggml_is_quantized(enum ggml_type type) {
    return ggmlx_type_is_valid(type) && k_type_traits[type].is_quantized;
}

const char * ggml_op_name(enum ggml_op op) {
    return ((int) op >= 0 && op < GGML_OP_COUNT) ? k_op_names[op] : "INVALID";
}

const char * ggml_op_symbol(enum ggml_op op) {
    switch (op) {
    case GGML_OP_NONE:     return "none";
    case GGML_OP_DUP:      return "x";
    case GGML_OP_ADD:      return "x+y";
    case GGML_OP_SUB:      return "x-y";
    case GGML_OP_MUL:      return "x*y";
    case GGML_OP_DIV:      return "x/y";
    case GGML_OP_SQR:      return "x^2";
    case GGML_OP_SQRT:     return "√x";
    case GGML_OP_SUM:      return "Σx";
    case GGML_OP_SUM_ROWS: return "Σx_k";
    case GGML_OP_MEAN:     return "Σx/n";
    case GGML_OP_MUL_MAT:  return "X*Y";
    case GGML_OP_SCALE:    return "x*v";
    case GGML_OP_CPY:      return "x-\\>y";
    case GGML_OP_UNARY:    return "unary(x)";
    case GGML_OP_GLU:      return "glu(x)";
    default:               return ggml_op_name(op);
    }
}

const char * ggml_unary_op_name(enum ggml_unary_op op) {
    return ((int) op >= 0 && op < GGML_UNARY_OP_COUNT) ? k_unary_names[op] : "INVALID";
}

const char * ggml_glu_op_name(enum ggml_glu_op op) {
    return ((int) op >= 0 && op < GGML_GLU_OP_COUNT) ? k_glu_names[op] : "INVALID";
}

enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor * tensor) {
    if (tensor == NULL || tensor->op != GGML_OP_UNARY) {
        ggmlx_error(__func__, "tensor is not a unary op");
        return GGML_UNARY_OP_COUNT;
    }
    return (enum ggml_unary_op) tensor->op_params[0];
}

enum ggml_glu_op ggml_get_glu_op(const struct ggml_tensor * tensor) {
    if (tensor == NULL || tensor->op != GGML_OP_GLU) {
        ggmlx_error(__func__, "tensor is not a glu op");
        return GGML_GLU_OP_COUNT;
    }
    return (enum ggml_glu_op) tensor->op_params[0];
}

const char * ggml_op_desc(const struct ggml_tensor * t) {
    if (t == NULL) {
        return "INVALID";
    }
    if (t->op == GGML_OP_UNARY) {
        return ggml_unary_op_name((enum ggml_unary_op) t->op_params[0]);
    }
    if (t->op == GGML_OP_GLU) {
        return ggml_glu_op_name((enum ggml_glu_op) t->op_params[0]);
    }
    return ggml_op_name(t->op);
}

enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype) {
    switch (ftype) {
    case GGML_FTYPE_ALL_F32:              return GGML_TYPE_F32;
    case GGML_FTYPE_MOSTLY_F16:           return GGML_TYPE_F16;
    case GGML_FTYPE_MOSTLY_Q4_0:          return GGML_TYPE_Q4_0;
    case GGML_FTYPE_MOSTLY_Q4_1:          return GGML_TYPE_Q4_1;
    case GGML_FTYPE_MOSTLY_Q5_0:          return GGML_TYPE_Q5_0;
    case GGML_FTYPE_MOSTLY_Q5_1:          return GGML_TYPE_Q5_1;
    case GGML_FTYPE_MOSTLY_Q8_0:          return GGML_TYPE_Q8_0;
    case GGML_FTYPE_MOSTLY_Q2_K:          return GGML_TYPE_Q2_K;
    case GGML_FTYPE_MOSTLY_Q3_K:          return GGML_TYPE_Q3_K;
    case GGML_FTYPE_MOSTLY_Q4_K:          return GGML_TYPE_Q4_K;
    case GGML_FTYPE_MOSTLY_Q5_K:          return GGML_TYPE_Q5_K;
    case GGML_FTYPE_MOSTLY_Q6_K:          return GGML_TYPE_Q6_K;
    case GGML_FTYPE_MOSTLY_IQ2_XXS:       return GGML_TYPE_IQ2_XXS;
    case GGML_FTYPE_MOSTLY_IQ2_XS:        return GGML_TYPE_IQ2_XS;
    case GGML_FTYPE_MOSTLY_IQ3_XXS:       return GGML_TYPE_IQ3_XXS;
    case GGML_FTYPE_MOSTLY_IQ1_S:         return GGML_TYPE_IQ1_S;
    case GGML_FTYPE_MOSTLY_IQ1_M:         return GGML_TYPE_IQ1_M;
    case GGML_FTYPE_MOSTLY_IQ4_NL:        return GGML_TYPE_IQ4_NL;
    case GGML_FTYPE_MOSTLY_IQ4_XS:        return GGML_TYPE_IQ4_XS;
    case GGML_FTYPE_MOSTLY_IQ3_S:         return GGML_TYPE_IQ3_S;
    case GGML_FTYPE_MOSTLY_IQ2_S:         return GGML_TYPE_IQ2_S;
    case GGML_FTYPE_MOSTLY_BF16:          return GGML_TYPE_BF16;
    case GGML_FTYPE_MOSTLY_MXFP4:         return GGML_TYPE_MXFP4;
    case GGML_FTYPE_MOSTLY_NVFP4:         return GGML_TYPE_NVFP4;
    case GGML_FTYPE_MOSTLY_Q1_0:          return GGML_TYPE_Q1_0;
    case GGML_FTYPE_MOSTLY_Q2_0:          return GGML_TYPE_Q2_0;
    case GGML_FTYPE_UNKNOWN:
    case GGML_FTYPE_MOSTLY_Q4_1_SOME_F16: break;
    }
    return GGML_TYPE_COUNT;
}

/* ---- fp16 / bf16 --------------------------------------------------------------------------- */

float ggml_fp16_to_fp32(ggml_fp16_t h) {
    return ggmlx_fp16_to_fp32(h);
}

ggml_fp16_t ggml_fp32_to_fp16(float f) {
    return ggmlx_fp32_to_fp16(f);
}

void ggml_fp16_to_fp32_row(const ggml_fp16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggmlx_fp16_to_fp32(x[i]);
    }
}

void ggml_fp32_to_fp16_row(const float * x, ggml_fp16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggmlx_fp32_to_fp16(x[i]);
    }
}

ggml_bf16_t ggml_fp32_to_bf16(float f) {
    ggml_bf16_t b = { ggmlx_fp32_to_bf16(f) };
    return b;
}

float ggml_bf16_to_fp32(ggml_bf16_t b) {
    return ggmlx_bf16_to_fp32(b.bits);
}

void ggml_bf16_to_fp32_row(const ggml_bf16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggmlx_bf16_to_fp32(x[i].bits);
    }
}

void ggml_fp32_to_bf16_row_ref(const float * x, ggml_bf16_t * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i].bits = ggmlx_fp32_to_bf16(x[i]);
    }
}

void ggml_fp32_to_bf16_row(const float * x, ggml_bf16_t * y, int64_t n) {
    ggml_fp32_to_bf16_row_ref(x, y, n);
}

bool ggml_validate_row_data(enum ggml_type type, const void * data, size_t nbytes) {
    if (!ggmlx_type_is_valid(type) || data == NULL) {
        ggmlx_error(__func__, "invalid type %d or NULL data", (int) type);
        return false;
    }
    if (nbytes % k_type_traits[type].type_size != 0) {
        ggmlx_error(__func__, "%zu bytes is not a whole number of %s blocks", nbytes, ggml_type_name(type));
        return false;
    }
    const size_t n = nbytes / k_type_traits[type].type_size;
    switch (type) {
    case GGML_TYPE_F32:
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(((const float *) data)[i])) {
                ggmlx_error(__func__, "value %zu is not finite", i);
                return false;
            }
        }
        break;
    case GGML_TYPE_F16:
        for (size_t i = 0; i < n; i++) {
            if ((((const uint16_t *) data)[i] & 0x7c00u) == 0x7c00u) {
                ggmlx_error(__func__, "value %zu is not finite", i);
                return false;
            }
        }
        break;
    case GGML_TYPE_BF16:
        for (size_t i = 0; i < n; i++) {
            if ((((const uint16_t *) data)[i] & 0x7f80u) == 0x7f80u) {
                ggmlx_error(__func__, "value %zu is not finite", i);
                return false;
            }
        }
        break;
    case GGML_TYPE_F64:
        for (size_t i = 0; i < n; i++) {
            if (!isfinite(((const double *) data)[i])) {
                ggmlx_error(__func__, "value %zu is not finite", i);
                return false;
            }
        }
        break;
    case GGML_TYPE_I8:
    case GGML_TYPE_I16:
    case GGML_TYPE_I32:
    case GGML_TYPE_I64:
        break; /* every bit pattern is an integer */
    default:
        return ggmlx_validate_quant_blocks(__func__, type, data, n);
    }
    return true;
}
