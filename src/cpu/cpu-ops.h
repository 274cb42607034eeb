/*
 * cpu-ops.h -- the contract between the CPU graph executor (compute.c) and the kernels.
 *
 * For every node, each of the plan's threads calls the node's kernel once with its own ith
 * (0..nth-1); a kernel computes its share (usually rows ith, ith+nth, ... or a contiguous block)
 * and returns. Kernels may use ggmlx_cpu_barrier() to wait for all threads of the node (for
 * example after converting an operand into the shared work buffer), but must then be called with
 * nth > 1 by every thread (the executor guarantees it). Bad data found while computing (an
 * index out of range) is reported with ggmlx_cpu_fail(): the computation returns
 * GGML_STATUS_FAILED and the kernel must write nothing outside dst.
 */
#ifndef GGMLX_CPU_OPS_H
#define GGMLX_CPU_OPS_H

#include "ggml-impl.h"

/* the first byte of row (i1, i2, i3) of t */
#define ROW_PTR(t, i1, i2, i3) ((char *)(t)->data + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])

struct ggmlx_cpu_state; /* executor-private: barrier, error flag */

struct ggmlx_cpu_params {
    int                      ith;   /* this thread */
    int                      nth;   /* threads computing this node */
    void                   * wdata; /* shared scratch of ggmlx_cpu_work_size() bytes for this node */
    size_t                   wsize;
    struct ggmlx_cpu_state * state;
};

/* ggmlx_cpu_kernel_t, a kernel's type, is in ggmlx-backend-impl.h with ggmlx_cpu_kernel_for */

void ggmlx_cpu_barrier(const struct ggmlx_cpu_params * params);
void ggmlx_cpu_fail(const struct ggmlx_cpu_params * params, const char * fmt, ...) __attribute__((format(printf, 2, 3)));

/* rows [*r0, *r1) of nr for thread ith of nth, in contiguous blocks */
static inline void ggmlx_cpu_split_rows(const struct ggmlx_cpu_params * p, int64_t nr, int64_t * r0, int64_t * r1) {
    if (p->nth == 1) { /* the usual case for small nodes: no division */
        *r0 = 0;
        *r1 = nr;
        return;
    }
    const int64_t per = (nr + p->nth - 1) / p->nth;
    *r0 = per * p->ith < nr ? per * p->ith : nr;
    *r1 = *r0 + per < nr ? *r0 + per : nr;
}

/* The kernel for a node, or NULL when the CPU cannot compute it (op or types unsupported). */
ggmlx_cpu_kernel_t ggmlx_cpu_kernel_for(const struct ggml_tensor * node);

/* Why the CPU refuses a node with a quantized operand (a rule it breaks), NULL when it does not or
 * when nothing more specific than "unsupported op or types" can be said. */
const char * ggmlx_cpu_refusal(const struct ggml_tensor * node);

/* How many threads a node is worth (1 for tiny ones) when n_threads are available. */
int ggmlx_cpu_n_tasks(const struct ggml_tensor * node, int n_threads);

/* Scratch bytes a node needs when computed by n_tasks threads. */
size_t ggmlx_cpu_work_size(const struct ggml_tensor * node, int n_tasks);

/* ---- kernels, by family (one file each) ---------------------------------------------------- */

/* ops-binary.c: ADD, SUB, MUL, DIV with broadcasting of src1 */
void ggmlx_cpu_binary(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-binary.c: ADD1 (src1 a single element) */
void ggmlx_cpu_add1(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-unary.c: UNARY (every ggml_unary_op the header documents), SQR, SQRT, SCALE; ops-glu.c: GLU */
void ggmlx_cpu_unary(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_scale(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-unary.c: CLAMP, LEAKY_RELU and UNARY XIELU (float parameters in op_params); LOG, SIN, COS
 * go through ggmlx_cpu_unary */
void ggmlx_cpu_unary_param(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_glu  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-copy.c: DUP, CPY, CONT between F32/F16/BF16 (and same-type copies of any type) */
void ggmlx_cpu_dup(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-copy-quant.c: DUP, CPY, CONT from F32/F16/BF16 into a quantized type, from one into F32 */
void   ggmlx_cpu_dup_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_dup_quant_work_size(const struct ggml_tensor * dst, int n_tasks);

/* ops-rows.c: GET_ROWS (quantized rows into F32 too), SET_ROWS (F32/F16 rows into quantized too) */
void   ggmlx_cpu_get_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_set_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_set_rows_work_size(const struct ggml_tensor * dst, int n_tasks);

/* ops-shape.c: REPEAT, CONCAT */
void ggmlx_cpu_repeat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_concat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-reduce.c: SUM, SUM_ROWS, MEAN, ARGMAX */
void ggmlx_cpu_sum     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_sum_rows(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_mean    (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_argmax  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-norm.c: NORM, RMS_NORM, L2_NORM, GROUP_NORM */
void ggmlx_cpu_norm    (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_rms_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_l2_norm   (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_group_norm(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-softmax.c: SOFT_MAX (with mask, scale, ALiBi), DIAG_MASK_INF */
void ggmlx_cpu_soft_max     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* DIAG_MASK_*: columns past n_past + row become fill */
/* dst = src * s + b row by row, any float types and strides (SCALE, ADD1) */
void ggmlx_cpu_affine(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, const struct ggml_tensor * src,
                      float s, float b);
void ggmlx_cpu_diag_mask(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, float fill);
void ggmlx_cpu_diag_mask_inf(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-rope.c: ROPE (normal and NEOX) and ROPE_BACK (the rotation by -theta) */
void ggmlx_cpu_rope(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-matmul.c: MUL_MAT with F32, F16, BF16 src0 and F32 src1 */
void   ggmlx_cpu_mul_mat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_mul_mat_work_size(const struct ggml_tensor * dst, int n_tasks);

/* ops-matmul-quant.c: MUL_MAT with quantized src0 (any type with a CPU vec_dot) and F32 src1 */
void         ggmlx_cpu_mul_mat_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t       ggmlx_cpu_mul_mat_quant_work_size(const struct ggml_tensor * dst, int n_tasks);
const char * ggmlx_cpu_mul_mat_quant_refusal(const struct ggml_tensor * dst); /* NULL: supported */

/* ops-misc.c: OUT_PROD (F32, F16, BF16 src0; F32 src1), DIAG_MASK_ZERO, ARANGE, TIMESTEP_EMBEDDING,
 * COUNT_EQUAL (I32), CUMSUM */
void   ggmlx_cpu_out_prod           (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_diag_mask_zero     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_arange             (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_timestep_embedding (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_count_equal        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_count_equal_work_size(int n_tasks);
void   ggmlx_cpu_cumsum             (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-sort.c: ARGSORT, TOP_K of F32 rows */
void   ggmlx_cpu_argsort        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_top_k          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_sort_work_size (const struct ggml_tensor * dst, int n_tasks);

/* ops-pad.c: PAD of any one-element-per-block type, PAD_REFLECT_1D (F32) */
void ggmlx_cpu_pad           (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_pad_reflect_1d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-backward.c: REPEAT_BACK, SILU_BACK, RMS_NORM_BACK, SOFT_MAX_BACK, GET_ROWS_BACK (F32) */
void   ggmlx_cpu_repeat_back          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_repeat_back_work_size(const struct ggml_tensor * dst, int n_tasks);
void   ggmlx_cpu_silu_back            (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_rms_norm_back        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_soft_max_back        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_get_rows_back        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-backward-image.c: IM2COL_BACK (the columns' gradient summed into the image), POOL_2D_BACK (F32) */
void   ggmlx_cpu_im2col_back          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_pool_2d_back         (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

/* ops-attn-back.c: FLASH_ATTN_BACK (F32 q, k, v, d) */
void   ggmlx_cpu_flash_attn_back          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_flash_attn_back_work_size(const struct ggml_tensor * dst, int n_tasks);

/* ops-train.c: CROSS_ENTROPY_LOSS (+ _BACK), OPT_STEP_ADAMW, OPT_STEP_SGD (F32) */
void   ggmlx_cpu_cross_entropy_loss          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_cross_entropy_loss_work_size(int n_tasks);
void   ggmlx_cpu_cross_entropy_loss_back     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_opt_step_adamw              (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_opt_step_sgd                (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-conv.c: IM2COL, IM2COL_3D, COL2IM_1D, direct CONV_2D / CONV_2D_DW / CONV_3D, CONV_TRANSPOSE_1D/2D */
void ggmlx_cpu_im2col            (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_im2col_3d         (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_col2im_1d         (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_conv_2d           (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_conv_3d           (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_conv_2d_dw        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_conv_transpose_1d (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_conv_transpose_2d (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-conv-avx512.c: CONV_2D with unit row stride on AVX-512 (false: not taken, use the portable loops) */
bool   ggmlx_cpu_conv_2d_fast      (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_conv_2d_work_size (const struct ggml_tensor * dst, int n_tasks);

/* ops-image.c: POOL_1D, POOL_2D, UPSCALE (every scale mode and flag), WIN_PART, WIN_UNPART, GET_REL_POS,
 * ADD_REL_POS */
void ggmlx_cpu_pool_1d    (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_pool_2d    (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_upscale    (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_win_part   (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_win_unpart (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_get_rel_pos(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_add_rel_pos(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ---- attention and experts ---- */
/* ops-softmax.c: ALiBi slope of head h of n_head (1 when max_bias <= 0), shared with FLASH_ATTN_EXT */
float ggmlx_cpu_alibi_slope(float max_bias, int64_t n_head, int64_t h);
/* ops-attn.c: FLASH_ATTN_EXT (F32 q; F32, F16, BF16 or quantized K and V; F16/F32 mask; sinks) */
void         ggmlx_cpu_flash_attn(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t       ggmlx_cpu_flash_attn_work_size(const struct ggml_tensor * dst, int n_tasks);
const char * ggmlx_cpu_flash_attn_refusal(const struct ggml_tensor * dst); /* NULL: supported */
float        ggmlx_cpu_dot_float_row(int64_t n, const void * row, enum ggml_type t, const float * y);
/* ops-moe.c: MUL_MAT_ID (any weight type with a CPU vec_dot, F32 b, I32 ids), ADD_ID (F32) */
void         ggmlx_cpu_mul_mat_id(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t       ggmlx_cpu_mul_mat_id_work_size(const struct ggml_tensor * dst, int n_tasks);
const char * ggmlx_cpu_mul_mat_id_refusal(const struct ggml_tensor * dst); /* NULL: supported */
void         ggmlx_cpu_add_id(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-recurrent.c: SSM_CONV, SSM_SCAN, RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7, GATED_DELTA_NET (F32) */
void   ggmlx_cpu_ssm_conv         (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_ssm_scan         (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_rwkv_wkv6        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_gated_linear_attn(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_rwkv_wkv7        (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_gated_delta_net  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_gated_delta_net_work_size(const struct ggml_tensor * dst, int n_tasks);

/* ops-dsv4.c: LIGHTNING_INDEXER (K of any type with a to_float), DSV4_HC_COMB/PRE/POST (F32) */
void   ggmlx_cpu_lightning_indexer(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_lightning_indexer_work_size(const struct ggml_tensor * dst, int n_tasks);
void   ggmlx_cpu_dsv4_hc_comb     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_dsv4_hc_pre      (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void   ggmlx_cpu_dsv4_hc_post     (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-write.c: SET, ACC (F32), FILL, TRI, DIAG, ROLL; ops-solve.c: SOLVE_TRI (F32) */
void ggmlx_cpu_set  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_acc  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_fill (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_tri  (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_diag (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_roll (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
void ggmlx_cpu_solve_tri(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-pad.c: PAD with op_params [8] = 1 (circular) */
void ggmlx_cpu_pad_circular(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
/* ops-rope-multi.c: ROPE in the MROPE, IMROPE and VISION modes (F32, F16) */
void   ggmlx_cpu_rope_multi          (const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);
size_t ggmlx_cpu_rope_multi_work_size(const struct ggml_tensor * dst, int n_tasks);
/* ops-custom.c: MAP_CUSTOM1/2/3 and CUSTOM (the user's callback) */
void ggmlx_cpu_custom(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst);

#endif /* GGMLX_CPU_OPS_H */
