/*
 * cpu-ops.c -- which kernel computes a node, with how many threads and how much scratch.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "ops-custom.h"

static bool is_float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

static bool dup_types_supported(const struct ggml_tensor * dst) {
    const enum ggml_type ts = dst->src[0]->type, td = dst->type;
    if (ts == td) {
        return true; /* byte copy, any type (quantized: whole blocks) */
    }
    const bool s_ok = is_float_type(ts) || ts == GGML_TYPE_I32;
    const bool d_ok = is_float_type(td) || td == GGML_TYPE_I32;
    return s_ok && d_ok;
}

static bool is_f32_or_f16(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16;
}

static bool has_to_float(enum ggml_type t) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    return tr != NULL && tr->to_float != NULL;
}

static bool has_cpu_from_float(enum ggml_type t) {
    const struct ggml_type_traits_cpu * tr = ggml_get_type_traits_cpu(t);
    return tr != NULL && tr->from_float != NULL;
}

/* the codebook formats are searched for whole rows at a time, often with an importance matrix */
#define NO_QUANTIZER \
    "the destination type has no CPU quantizer from F32 (the IQ1, IQ2 and IQ3 formats are made only by " \
    "ggml_quantize_chunk)"

static bool blocks_contiguous(const struct ggml_tensor * t) {
    return t->nb[0] == ggml_type_size(t->type);
}

/* the rule a GET_ROWS from a quantized type breaks, NULL for none */
static const char * get_rows_quant_refusal(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    if (!has_to_float(s0->type)) {
        return "the source type has no dequantizer";
    }
    if (node->src[1]->type != GGML_TYPE_I32) {
        return "row indices must be I32";
    }
    if (node->type != GGML_TYPE_F32 || node->nb[0] != sizeof(float)) {
        return "quantized rows are read into F32 rows with contiguous elements only";
    }
    return blocks_contiguous(s0) ? NULL : "the source's blocks must be contiguous within a row";
}

/* the rule a SET_ROWS into a quantized type breaks, NULL for none */
static const char * set_rows_quant_refusal(const struct ggml_tensor * node) {
    const enum ggml_type ts = node->src[0]->type, ti = node->src[1]->type;
    if (!has_cpu_from_float(node->type)) {
        return NO_QUANTIZER;
    }
    if (ts != GGML_TYPE_F32 && ts != GGML_TYPE_F16) {
        return "rows written into a quantized tensor must be F32 or F16";
    }
    if (ti != GGML_TYPE_I64 && ti != GGML_TYPE_I32) {
        return "row indices must be I64 or I32";
    }
    return blocks_contiguous(node) ? NULL : "the destination's blocks must be contiguous within a row";
}

/* the rule a copy into or out of a quantized type (the types differ) breaks, NULL for none */
static const char * dup_quant_refusal(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    if (ggml_is_quantized(node->type)) {
        if (!is_float_type(s0->type)) {
            return "only F32, F16 and BF16 are copied into a quantized type";
        }
        if (!has_cpu_from_float(node->type)) {
            return NO_QUANTIZER;
        }
        return ggml_is_contiguous(node) ? NULL : "a quantized destination must be contiguous";
    }
    if (node->type != GGML_TYPE_F32) {
        return "a quantized source is copied into F32 or its own type only";
    }
    if (!has_to_float(s0->type)) {
        return "the source type has no dequantizer";
    }
    return blocks_contiguous(s0) ? NULL : "the source's blocks must be contiguous within a row";
}

/*
 * The ops with a quantized operand: the kernel, or NULL with *why saying what rule the node breaks
 * (*why stays NULL for a node that is not of this kind).
 */
static ggmlx_cpu_kernel_t quant_kernel(const struct ggml_tensor * node, const char ** why) {
    const struct ggml_tensor * s0 = node->src[0];
    *why = NULL;
    switch (node->op) {
    case GGML_OP_MUL_MAT:
        if (!ggml_is_quantized(s0->type)) {
            return NULL;
        }
        *why = ggmlx_cpu_mul_mat_quant_refusal(node);
        return *why == NULL ? ggmlx_cpu_mul_mat_quant : NULL;
    case GGML_OP_GET_ROWS:
        if (!ggml_is_quantized(s0->type)) {
            return NULL;
        }
        *why = get_rows_quant_refusal(node);
        return *why == NULL ? ggmlx_cpu_get_rows : NULL;
    case GGML_OP_SET_ROWS:
        if (!ggml_is_quantized(node->type)) {
            return NULL;
        }
        *why = set_rows_quant_refusal(node);
        return *why == NULL ? ggmlx_cpu_set_rows : NULL;
    case GGML_OP_DUP:
    case GGML_OP_CPY:
    case GGML_OP_CONT:
        if (s0->type == node->type || (!ggml_is_quantized(s0->type) && !ggml_is_quantized(node->type))) {
            return NULL; /* same-type and float copies: ggmlx_cpu_dup */
        }
        *why = dup_quant_refusal(node);
        return *why == NULL ? ggmlx_cpu_dup_quant : NULL;
    case GGML_OP_FLASH_ATTN_EXT:
        if (!ggml_is_quantized(node->src[1]->type) && !ggml_is_quantized(node->src[2]->type)) {
            return NULL;
        }
        *why = ggmlx_cpu_flash_attn_refusal(node);
        return *why == NULL ? ggmlx_cpu_flash_attn : NULL;
    case GGML_OP_MUL_MAT_ID:
        if (!ggml_is_quantized(s0->type)) {
            return NULL;
        }
        *why = ggmlx_cpu_mul_mat_id_refusal(node);
        return *why == NULL ? ggmlx_cpu_mul_mat_id : NULL;
    default:
        return NULL;
    }
}

const char * ggmlx_cpu_refusal(const struct ggml_tensor * node) {
    const char * why;
    quant_kernel(node, &why);
    return why;
}

ggmlx_cpu_kernel_t ggmlx_cpu_kernel_for(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    const struct ggml_tensor * s1 = node->src[1];

    const char * why;
    const ggmlx_cpu_kernel_t qk = quant_kernel(node, &why);
    if (qk != NULL || why != NULL) {
        return qk;
    }

    const bool f32_in_out = s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32;
    switch (node->op) {
    case GGML_OP_DUP:
    case GGML_OP_CPY:
    case GGML_OP_CONT:
        return dup_types_supported(node) ? ggmlx_cpu_dup : NULL;
    case GGML_OP_ADD:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
        return is_float_type(s0->type) && is_float_type(s1->type) && is_float_type(node->type) ? ggmlx_cpu_binary : NULL;
    case GGML_OP_ADD1:
        return is_float_type(s0->type) && is_float_type(s1->type) && node->type == s0->type ? ggmlx_cpu_add1 : NULL;
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_SIN:
    case GGML_OP_COS:
    case GGML_OP_UNARY:
        return is_float_type(s0->type) && node->type == s0->type ? ggmlx_cpu_unary : NULL;
    case GGML_OP_CLAMP:
    case GGML_OP_LEAKY_RELU:
        return is_float_type(s0->type) && node->type == s0->type ? ggmlx_cpu_unary_param : NULL;
    case GGML_OP_SCALE:
        return is_float_type(s0->type) && node->type == s0->type ? ggmlx_cpu_scale : NULL;
    case GGML_OP_GLU:
        return is_float_type(s0->type) && node->type == s0->type ? ggmlx_cpu_glu : NULL;
    case GGML_OP_SUM:
        return is_float_type(s0->type) ? ggmlx_cpu_sum : NULL;
    case GGML_OP_SUM_ROWS:
        return is_float_type(s0->type) ? ggmlx_cpu_sum_rows : NULL;
    case GGML_OP_MEAN:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_mean : NULL;
    case GGML_OP_ARGMAX:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_argmax : NULL;
    case GGML_OP_REPEAT:
        return is_float_type(s0->type) || s0->type == GGML_TYPE_I32 ? ggmlx_cpu_repeat : NULL;
    case GGML_OP_CONCAT:
        return s0->type == s1->type && s0->type == node->type ? ggmlx_cpu_concat : NULL;
    case GGML_OP_NORM:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_norm : NULL;
    case GGML_OP_RMS_NORM:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_rms_norm : NULL;
    case GGML_OP_L2_NORM:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_l2_norm : NULL;
    case GGML_OP_GROUP_NORM:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_group_norm : NULL;
    case GGML_OP_OUT_PROD:
        return is_float_type(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_out_prod : NULL;
    case GGML_OP_DIAG_MASK_ZERO:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_diag_mask_zero : NULL;
    case GGML_OP_ARANGE:
        return node->type == GGML_TYPE_F32 ? ggmlx_cpu_arange : NULL;
    case GGML_OP_TIMESTEP_EMBEDDING:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_timestep_embedding : NULL;
    case GGML_OP_COUNT_EQUAL:
        return s0->type == GGML_TYPE_I32 && s1->type == GGML_TYPE_I32 && node->type == GGML_TYPE_I64 ? ggmlx_cpu_count_equal : NULL;
    case GGML_OP_CUMSUM:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_cumsum : NULL;
    case GGML_OP_ARGSORT:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 ? ggmlx_cpu_argsort : NULL;
    case GGML_OP_TOP_K:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 ? ggmlx_cpu_top_k : NULL;
    case GGML_OP_PAD:
        return s0->type != node->type || ggml_blck_size(s0->type) != 1 ? NULL
             : ggmlx_get_op_params_i32(node, 8) != 0 ? ggmlx_cpu_pad_circular : ggmlx_cpu_pad;
    case GGML_OP_PAD_REFLECT_1D:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_pad_reflect_1d : NULL;
    case GGML_OP_MUL_MAT:
        return is_float_type(s0->type) && s1->type == GGML_TYPE_F32 ? ggmlx_cpu_mul_mat : NULL;
    case GGML_OP_GET_ROWS:
        return (is_float_type(s0->type) || s0->type == GGML_TYPE_I32) && s1->type == GGML_TYPE_I32 ? ggmlx_cpu_get_rows : NULL;
    case GGML_OP_SET_ROWS:
        return (s0->type == GGML_TYPE_F32 || s0->type == GGML_TYPE_F16) &&
               (s1->type == GGML_TYPE_I64 || s1->type == GGML_TYPE_I32) && is_float_type(node->type)
               ? ggmlx_cpu_set_rows : NULL;
    case GGML_OP_DIAG_MASK_INF:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_diag_mask_inf : NULL;
    case GGML_OP_SOFT_MAX:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_soft_max : NULL;
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK: /* the rotation by -theta */
        return s0->type != GGML_TYPE_F32 && s0->type != GGML_TYPE_F16 ? NULL
             : (ggmlx_get_op_params_i32(node, 2) & GGML_ROPE_TYPE_MROPE) ? ggmlx_cpu_rope_multi : ggmlx_cpu_rope;
    case GGML_OP_FLASH_ATTN_BACK:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 && node->src[2]->type == GGML_TYPE_F32 &&
               node->src[3]->type == GGML_TYPE_F32 ? ggmlx_cpu_flash_attn_back : NULL;
    case GGML_OP_IM2COL_BACK:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_im2col_back : NULL;
    case GGML_OP_POOL_2D_BACK:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
               (s1->type == GGML_TYPE_F32 || s1->type == GGML_TYPE_F16) ? ggmlx_cpu_pool_2d_back : NULL;
    /* training: F32 only, as the constructors require */
    case GGML_OP_REPEAT_BACK:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_repeat_back : NULL;
    case GGML_OP_SILU_BACK:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 ? ggmlx_cpu_silu_back : NULL;
    case GGML_OP_RMS_NORM_BACK:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 ? ggmlx_cpu_rms_norm_back : NULL;
    case GGML_OP_SOFT_MAX_BACK: /* not ALiBi's (a max_bias), as upstream's CPU */
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 && ggmlx_get_op_params_f32(node, 1) == 0.0f
             ? ggmlx_cpu_soft_max_back : NULL;
    case GGML_OP_GET_ROWS_BACK:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_I32 ? ggmlx_cpu_get_rows_back : NULL;
    case GGML_OP_CROSS_ENTROPY_LOSS:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 ? ggmlx_cpu_cross_entropy_loss : NULL;
    case GGML_OP_CROSS_ENTROPY_LOSS_BACK:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 ? ggmlx_cpu_cross_entropy_loss_back : NULL;
    case GGML_OP_OPT_STEP_ADAMW:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_opt_step_adamw : NULL;
    case GGML_OP_OPT_STEP_SGD:
        return s0->type == GGML_TYPE_F32 ? ggmlx_cpu_opt_step_sgd : NULL;
    /* convolution and images: ops-conv.c, ops-image.c */
    case GGML_OP_IM2COL:
        return s1->type == GGML_TYPE_F32 && is_f32_or_f16(node->type) ? ggmlx_cpu_im2col : NULL;
    case GGML_OP_IM2COL_3D:
        return s1->type == GGML_TYPE_F32 && is_f32_or_f16(node->type) ? ggmlx_cpu_im2col_3d : NULL;
    case GGML_OP_COL2IM_1D:
        return is_float_type(s0->type) && node->type == s0->type ? ggmlx_cpu_col2im_1d : NULL;
    case GGML_OP_CONV_2D:
        return is_f32_or_f16(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_conv_2d : NULL;
    case GGML_OP_CONV_3D:
        return is_f32_or_f16(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_conv_3d : NULL;
    case GGML_OP_CONV_2D_DW:
        return is_f32_or_f16(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_conv_2d_dw : NULL;
    case GGML_OP_CONV_TRANSPOSE_1D:
        return is_f32_or_f16(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_conv_transpose_1d : NULL;
    case GGML_OP_CONV_TRANSPOSE_2D:
        return is_f32_or_f16(s0->type) && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_conv_transpose_2d : NULL;
    case GGML_OP_POOL_1D:
        return is_f32_or_f16(s0->type) && node->type == GGML_TYPE_F32 ? ggmlx_cpu_pool_1d : NULL;
    case GGML_OP_POOL_2D:
        return is_f32_or_f16(s0->type) && node->type == GGML_TYPE_F32 ? ggmlx_cpu_pool_2d : NULL;
    case GGML_OP_UPSCALE:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_upscale : NULL;
    case GGML_OP_WIN_PART:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_win_part : NULL;
    case GGML_OP_WIN_UNPART:
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 ? ggmlx_cpu_win_unpart : NULL;
    case GGML_OP_GET_REL_POS:
        return s0->type == GGML_TYPE_F16 && node->type == GGML_TYPE_F16 ? ggmlx_cpu_get_rel_pos : NULL;
    case GGML_OP_ADD_REL_POS:
        /* the kernel walks rows of a and dst as float arrays and pw, ph as flat arrays */
        return s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_is_contiguous(s0) && ggml_is_contiguous(node) &&
               node->src[1]->type == GGML_TYPE_F32 && node->src[2]->type == GGML_TYPE_F32 &&
               ggml_is_contiguous(node->src[1]) && ggml_is_contiguous(node->src[2]) ? ggmlx_cpu_add_rel_pos : NULL;
    case GGML_OP_FLASH_ATTN_EXT: /* float K and V (quantized ones: quant_kernel) */
        return ggmlx_cpu_flash_attn_refusal(node) == NULL ? ggmlx_cpu_flash_attn : NULL;
    case GGML_OP_MUL_MAT_ID:
        return ggmlx_cpu_mul_mat_id_refusal(node) == NULL ? ggmlx_cpu_mul_mat_id : NULL;
    case GGML_OP_ADD_ID:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 && node->src[2]->type == GGML_TYPE_I32 &&
               node->type == GGML_TYPE_F32 ? ggmlx_cpu_add_id : NULL;
    /* recurrent and linear attention, DeepSeek indexer and hyper-connections: F32 (the
     * constructors admit nothing else, except the indexer's K) */
    case GGML_OP_SSM_CONV:
        return f32_in_out ? ggmlx_cpu_ssm_conv : NULL;
    case GGML_OP_SSM_SCAN:
        return f32_in_out ? ggmlx_cpu_ssm_scan : NULL;
    case GGML_OP_RWKV_WKV6:
        return f32_in_out ? ggmlx_cpu_rwkv_wkv6 : NULL;
    case GGML_OP_GATED_LINEAR_ATTN:
        return f32_in_out ? ggmlx_cpu_gated_linear_attn : NULL;
    case GGML_OP_RWKV_WKV7:
        return f32_in_out ? ggmlx_cpu_rwkv_wkv7 : NULL;
    case GGML_OP_GATED_DELTA_NET:
        return f32_in_out ? ggmlx_cpu_gated_delta_net : NULL;
    case GGML_OP_LIGHTNING_INDEXER:
        return f32_in_out && (s1->type == GGML_TYPE_F32 || ggml_get_type_traits(s1->type)->to_float != NULL)
               ? ggmlx_cpu_lightning_indexer : NULL;
    case GGML_OP_DSV4_HC_COMB:
        return f32_in_out ? ggmlx_cpu_dsv4_hc_comb : NULL;
    case GGML_OP_DSV4_HC_PRE:
        return f32_in_out ? ggmlx_cpu_dsv4_hc_pre : NULL;
    case GGML_OP_DSV4_HC_POST:
        return f32_in_out ? ggmlx_cpu_dsv4_hc_post : NULL;
        return s0->type != GGML_TYPE_F32 && s0->type != GGML_TYPE_F16 ? NULL
             : (ggmlx_get_op_params_i32(node, 2) & GGML_ROPE_TYPE_MROPE) ? ggmlx_cpu_rope_multi : ggmlx_cpu_rope;
    case GGML_OP_SET:
        return node->type == s0->type && ggml_is_contiguous(node) && ggml_blck_size(node->type) == 1 &&
               (s1->type == node->type || (is_float_type(s1->type) && is_float_type(node->type)))
               ? ggmlx_cpu_set : NULL;
    case GGML_OP_ACC:
        return node->type == GGML_TYPE_F32 && s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 &&
               ggml_is_contiguous(node) ? ggmlx_cpu_acc : NULL;
    case GGML_OP_FILL:
        return is_float_type(node->type) ? ggmlx_cpu_fill : NULL;
    case GGML_OP_TRI:
        return is_float_type(node->type) && s0->type == node->type ? ggmlx_cpu_tri : NULL;
    case GGML_OP_DIAG:
        return is_float_type(node->type) && s0->type == node->type ? ggmlx_cpu_diag : NULL;
    case GGML_OP_ROLL:
        return s0->type == node->type && ggml_blck_size(node->type) == 1 ? ggmlx_cpu_roll : NULL;
    case GGML_OP_SOLVE_TRI:
        return s0->type == GGML_TYPE_F32 && s1->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
               ggml_is_contiguous(s0) && ggml_is_contiguous(s1) && ggml_is_contiguous(node) ? ggmlx_cpu_solve_tri : NULL;
    case GGML_OP_MAP_CUSTOM1:
    case GGML_OP_MAP_CUSTOM2:
    case GGML_OP_MAP_CUSTOM3:
    case GGML_OP_CUSTOM:
        return ggmlx_cpu_custom; /* the callback decides what it accepts */
    default:
        return NULL;
    }
}

int ggmlx_cpu_n_tasks(const struct ggml_tensor * node, int n_threads) {
    if (n_threads <= 1) {
        return 1;
    }
    /* Waking a second thread costs a barrier (a few hundred ns on a shared vCPU); not worth it
     * below a few thousand elements of simple work. Matrix products are always worth it. */
    if (node->op == GGML_OP_MUL_MAT || node->op == GGML_OP_MUL_MAT_ID || node->op == GGML_OP_FLASH_ATTN_EXT ||
        node->op == GGML_OP_FLASH_ATTN_BACK) {
        return n_threads;
    }
    /* convolutions cost their output times the kernel volume: worth threads even when small */
    if (node->op == GGML_OP_CONV_2D || node->op == GGML_OP_CONV_3D || node->op == GGML_OP_CONV_2D_DW ||
        node->op == GGML_OP_CONV_TRANSPOSE_1D || node->op == GGML_OP_CONV_TRANSPOSE_2D) {
        return ggml_nelements(node) * node->src[0]->ne[0] * node->src[0]->ne[1] < 4096 ? 1 : n_threads;
    }

    /* custom ops get the threads they asked for (GGML_N_TASKS_MAX: all), as upstream */
    if (node->op == GGML_OP_MAP_CUSTOM1 || node->op == GGML_OP_MAP_CUSTOM2 || node->op == GGML_OP_MAP_CUSTOM3 ||
        node->op == GGML_OP_CUSTOM) {
        const int want = ggmlx_custom_n_tasks(node);
        return want == GGML_N_TASKS_MAX || want > n_threads ? n_threads : want;
    }
    /* a triangular solve costs n^2 per column of the result */
    if (node->op == GGML_OP_SOLVE_TRI) {
        return ggml_nelements(node) * node->src[0]->ne[0] < 4096 ? 1 : n_threads;
    }
    /* reductions read far more than they write; everything else costs about its output */
    const bool reduces = node->op == GGML_OP_SUM || node->op == GGML_OP_SUM_ROWS || node->op == GGML_OP_MEAN ||
                         node->op == GGML_OP_ARGMAX || node->op == GGML_OP_COUNT_EQUAL || node->op == GGML_OP_GROUP_NORM ||
                         node->op == GGML_OP_REPEAT_BACK || node->op == GGML_OP_CROSS_ENTROPY_LOSS;
    /* an outer product costs its output times the summed dim */
    const int64_t n = node->op == GGML_OP_OUT_PROD ? ggml_nelements(node) * node->src[0]->ne[1]
                                                   : ggml_nelements(reduces ? node->src[0] : node);
    if (n < 4096) {
        return 1;
    }
    return n_threads;
}

size_t ggmlx_cpu_work_size(const struct ggml_tensor * node, int n_tasks) {
    switch (node->op) {
    case GGML_OP_MUL_MAT:
        return ggml_is_quantized(node->src[0]->type) ? ggmlx_cpu_mul_mat_quant_work_size(node, n_tasks)
                                                     : ggmlx_cpu_mul_mat_work_size(node, n_tasks);
    case GGML_OP_DUP:
    case GGML_OP_CPY:
    case GGML_OP_CONT:
        return node->type != node->src[0]->type &&
               (ggml_is_quantized(node->type) || ggml_is_quantized(node->src[0]->type))
               ? ggmlx_cpu_dup_quant_work_size(node, n_tasks) : 0;
    case GGML_OP_SET_ROWS:
        return ggmlx_cpu_set_rows_work_size(node, n_tasks);
    case GGML_OP_CONV_2D:
        return ggmlx_cpu_conv_2d_work_size(node, n_tasks);
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK:
        return (ggmlx_get_op_params_i32(node, 2) & GGML_ROPE_TYPE_MROPE) ? ggmlx_cpu_rope_multi_work_size(node, n_tasks) : 0;
    case GGML_OP_SUM:
        return (size_t)n_tasks * 64; /* per-thread partial sums, one cache line each */
    case GGML_OP_COUNT_EQUAL:
        return ggmlx_cpu_count_equal_work_size(n_tasks);
    case GGML_OP_REPEAT_BACK:
        return ggmlx_cpu_repeat_back_work_size(node, n_tasks);
    case GGML_OP_FLASH_ATTN_BACK:
        return ggmlx_cpu_flash_attn_back_work_size(node, n_tasks);
    case GGML_OP_CROSS_ENTROPY_LOSS:
        return ggmlx_cpu_cross_entropy_loss_work_size(n_tasks);
    case GGML_OP_ARGSORT:
    case GGML_OP_TOP_K:
        return ggmlx_cpu_sort_work_size(node, n_tasks);
    case GGML_OP_FLASH_ATTN_EXT:
        return ggmlx_cpu_flash_attn_work_size(node, n_tasks);
    case GGML_OP_MUL_MAT_ID:
        return ggmlx_cpu_mul_mat_id_work_size(node, n_tasks);
    case GGML_OP_GATED_DELTA_NET:
        return ggmlx_cpu_gated_delta_net_work_size(node, n_tasks);
    case GGML_OP_LIGHTNING_INDEXER:
        return ggmlx_cpu_lightning_indexer_work_size(node, n_tasks);
    default:
        return 0;
    }
}
