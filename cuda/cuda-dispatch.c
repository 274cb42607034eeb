/*
 * cuda-dispatch.c -- which CUDA launcher computes a node (ggmlx_cuda_supports_op), the scratch it
 * needs, and the call itself. supports_op answers yes only for what the launchers really
 * compute, with the same type and layout rules they assume.
 */
#include "cuda-kernels.h"
#include "ggml-impl.h"
#include "launch-config.h"

#include <stdio.h>
#include <string.h>

void ggmlx_cuda_tdesc_of(const struct ggml_tensor * t, struct ggmlx_cuda_tdesc * d) {
    d->data = (char *)t->data;
    d->type = (int)t->type;
    for (int i = 0; i < 4; i++) {
        d->ne[i] = t->ne[i];
        d->nb[i] = (int64_t)t->nb[i];
    }
}

static bool is_float(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

/* equal types with one element per block of 1, 2, 4 or 8 bytes are moved as bytes */
static bool is_plain(enum ggml_type t) {
    switch (t) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_I8: case GGML_TYPE_I16:
    case GGML_TYPE_I32: case GGML_TYPE_I64: case GGML_TYPE_F64:
        return true;
    default:
        return false;
    }
}

static void mm_tensor_of(const struct ggml_tensor * t, struct ggmlx_mm_tensor * m) {
    m->type = (int)t->type;
    for (int i = 0; i < 4; i++) {
        m->ne[i] = t->ne[i];
        m->nb[i] = t->nb[i];
    }
}

static bool mul_mat_plan(const struct ggml_tensor * node, struct ggmlx_mm_plan * plan, char * why, size_t why_size) {
    struct ggmlx_mm_tensor a, b, d;
    mm_tensor_of(node->src[0], &a);
    mm_tensor_of(node->src[1], &b);
    mm_tensor_of(node, &d);
    return ggmlx_mm_plan_make(&a, &b, &d, plan, why, why_size);
}

/* the unary ops ops-unary.cu computes (the math of ggml-math-act.h): every one upstream has */
bool ggmlx_cuda_unary_supported(int op) {
    return op >= 0 && op < GGML_UNARY_OP_COUNT;
}

/* I32 converts to and from the float types as the CPU does it (ggmlx_f32_to_i32_sat) */
static bool is_float_or_i32(enum ggml_type t) {
    return is_float(t) || t == GGML_TYPE_I32;
}

/* the same type, block-quantized ones included, with no gaps on either side: one run of bytes */
static bool bytes_copy(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    return s0 != NULL && s0->type == node->type && ggml_is_contiguous(s0) && ggml_is_contiguous(node) &&
           ggml_nbytes(s0) == ggml_nbytes(node);
}

static int32_t op_param_i32(const struct ggml_tensor * node, int i) {
    int32_t v;
    memcpy(&v, (const char *)node->op_params + 4 * i, sizeof v);
    return v;
}

static bool same_rows(const struct ggml_tensor * a, const struct ggml_tensor * b) {
    return a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3];
}

/* a row fits the shared-memory sort (launch-config.h); the row count never limits it */
static bool sort_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    if (s0 == NULL || s0->type != GGML_TYPE_F32 || node->type != GGML_TYPE_I32 || !same_rows(s0, node) ||
        node->ne[0] > s0->ne[0] || (node->op == GGML_OP_ARGSORT && node->ne[0] != s0->ne[0])) {
        return false;
    }
    struct ggmlx_cuda_limits lim;
    struct ggmlx_cuda_launch l;
    ggmlx_cuda_limits_default(&lim);
    return ggmlx_cuda_launch_sort(&lim, s0->ne[0], 1, &l);
}

static bool pad_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    if (s0 == NULL || s0->type != node->type || !is_plain(node->type)) {
        return false;
    }
    if (node->op == GGML_OP_PAD) {
        if (op_param_i32(node, 8) != 0) {
            return false; /* circular padding: computed on the CPU */
        }
        for (int d = 0; d < 4; d++) {
            if (op_param_i32(node, 2 * d) < 0 || op_param_i32(node, 2 * d + 1) < 0) {
                return false;
            }
        }
        return true;
    }
    /* PAD_REFLECT_1D: a reflection reaches at most ne0 - 1 away from the edge */
    const int64_t p0 = op_param_i32(node, 0), p1 = op_param_i32(node, 1);
    return node->type == GGML_TYPE_F32 && p0 >= 0 && p1 >= 0 && p0 < s0->ne[0] && p1 < s0->ne[0] &&
           node->ne[0] == s0->ne[0] + p0 + p1 && same_rows(s0, node);
}

static bool glu_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * s0 = node->src[0];
    const struct ggml_tensor * s1 = node->src[1];
    int32_t op;
    memcpy(&op, node->op_params, sizeof op);
    if (op != GGML_GLU_OP_REGLU && op != GGML_GLU_OP_GEGLU && op != GGML_GLU_OP_SWIGLU &&
        op != GGML_GLU_OP_SWIGLU_OAI && op != GGML_GLU_OP_GEGLU_ERF && op != GGML_GLU_OP_GEGLU_QUICK) {
        return false;
    }
    if (s0 == NULL || !is_float(s0->type) || node->type != s0->type || (s1 != NULL && s1->type != s0->type)) {
        return false;
    }
    /* the kernel walks the sources' rows with dst's row coordinates */
    for (int d = 1; d < 4; d++) {
        if (s0->ne[d] != node->ne[d] || (s1 != NULL && s1->ne[d] != node->ne[d])) {
            return false;
        }
    }
    return s1 != NULL ? s0->ne[0] >= node->ne[0] && s1->ne[0] >= node->ne[0] : s0->ne[0] >= 2 * node->ne[0];
}

/* dst [a ne0, b ne0, b ne2, b ne3] summed over dim 1 of both; a repeats over b's dims 2, 3 */
static bool out_prod_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * a = node->src[0];
    const struct ggml_tensor * b = node->src[1];
    return a != NULL && b != NULL && is_float(a->type) && b->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
           a->ne[1] == b->ne[1] && node->ne[0] == a->ne[0] && node->ne[1] == b->ne[0] && node->ne[2] == b->ne[2] &&
           node->ne[3] == b->ne[3] && a->ne[2] > 0 && a->ne[3] > 0 && node->ne[2] % a->ne[2] == 0 &&
           node->ne[3] % a->ne[3] == 0;
}

static bool concat_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * a = node->src[0];
    const struct ggml_tensor * b = node->src[1];
    int32_t dim;
    memcpy(&dim, node->op_params, sizeof dim);
    if (a == NULL || b == NULL || dim < 0 || dim > 3 || a->type != node->type || b->type != node->type ||
        !is_plain(node->type)) {
        return false;
    }
    for (int d = 0; d < 4; d++) {
        const bool ok = d == dim ? node->ne[d] == a->ne[d] + b->ne[d] : a->ne[d] == node->ne[d] && b->ne[d] == node->ne[d];
        if (!ok) {
            return false;
        }
    }
    return true;
}

static bool rope_supported(const struct ggml_tensor * node) {
    const struct ggml_tensor * a   = node->src[0];
    const struct ggml_tensor * pos = node->src[1];
    const struct ggml_tensor * ff  = node->src[2];
    int32_t n_dims, mode;
    memcpy(&n_dims, (const char *)node->op_params + 4, sizeof n_dims);
    memcpy(&mode, (const char *)node->op_params + 8, sizeof mode);
    return a != NULL && pos != NULL && (a->type == GGML_TYPE_F32 || a->type == GGML_TYPE_F16) &&
           node->type == a->type && ggml_are_same_shape(a, node) && pos->type == GGML_TYPE_I32 &&
           pos->ne[0] >= a->ne[2] && (mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX) && n_dims > 0 &&
           op_param_i32(node, 15) == 0 /* ggml_rope_set_offset: computed on the CPU */ &&
           n_dims % 2 == 0 && n_dims <= a->ne[0] &&
           (ff == NULL || (ff->type == GGML_TYPE_F32 && ff->ne[0] >= n_dims / 2));
}

static int unary_op_of(const struct ggml_tensor * node) {
    int32_t v;
    memcpy(&v, node->op_params, sizeof v);
    return v;
}

bool ggmlx_cuda_supports_op(const struct ggml_tensor * node) {
    if (node == NULL) {
        return false;
    }
    const struct ggml_tensor * s0 = node->src[0];
    const struct ggml_tensor * s1 = node->src[1];
    switch (node->op) {
    case GGML_OP_NONE:
    case GGML_OP_VIEW:
    case GGML_OP_RESHAPE:
    case GGML_OP_PERMUTE:
    case GGML_OP_TRANSPOSE:
        return true; /* nothing to compute */
    case GGML_OP_DUP:
    case GGML_OP_CPY:
    case GGML_OP_CONT:
        return s0 != NULL && ggml_nelements(s0) == ggml_nelements(node) &&
               ((s0->type == node->type && is_plain(node->type)) ||
                (is_float_or_i32(s0->type) && is_float_or_i32(node->type)) || bytes_copy(node));
    case GGML_OP_ADD:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
        return s0 != NULL && s1 != NULL && is_float(s0->type) && is_float(s1->type) && is_float(node->type) &&
               ggml_are_same_shape(s0, node) && ggml_can_repeat(s1, node);
    case GGML_OP_UNARY:
        if (!ggmlx_cuda_unary_supported(unary_op_of(node))) {
            return false;
        }
        /* fall through */
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_SIN:
    case GGML_OP_COS:
    case GGML_OP_CLAMP:
    case GGML_OP_LEAKY_RELU:
    case GGML_OP_SCALE:
        return s0 != NULL && is_float(s0->type) && node->type == s0->type && ggml_are_same_shape(s0, node);
    case GGML_OP_ADD1:
        return s0 != NULL && s1 != NULL && is_float(s0->type) && is_float(s1->type) && node->type == s0->type &&
               ggml_are_same_shape(s0, node) && ggml_nelements(s1) == 1;
    case GGML_OP_NORM:
    case GGML_OP_RMS_NORM:
    case GGML_OP_L2_NORM:
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(s0, node);
    case GGML_OP_GROUP_NORM:
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
               ggml_are_same_shape(s0, node) && op_param_i32(node, 0) >= 1;
    case GGML_OP_SOFT_MAX:
        /* sinks (src[2]) are not implemented; the mask covers the rows and broadcasts over dims 2, 3 */
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(s0, node) &&
               node->src[2] == NULL &&
               (s1 == NULL || ((s1->type == GGML_TYPE_F16 || s1->type == GGML_TYPE_F32) && s1->ne[0] == s0->ne[0] &&
                               s1->ne[1] >= s0->ne[1] && s1->ne[2] > 0 && s1->ne[3] > 0 && s0->ne[2] % s1->ne[2] == 0 &&
                               s0->ne[3] % s1->ne[3] == 0));
    case GGML_OP_GET_ROWS:
        return s0 != NULL && s1 != NULL && s1->type == GGML_TYPE_I32 && is_plain(s0->type) &&
               (node->type == s0->type || (is_float(s0->type) && is_float(node->type))) && node->ne[0] == s0->ne[0] &&
               node->ne[1] == s1->ne[0] && node->ne[2] == s1->ne[1] && node->ne[3] == s1->ne[2] &&
               s0->ne[2] == s1->ne[1] && s0->ne[3] == s1->ne[2];
    case GGML_OP_SUM:
    case GGML_OP_SUM_ROWS:
        return s0 != NULL && is_float(s0->type) && is_float(node->type);
    case GGML_OP_MEAN:
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32;
    case GGML_OP_ARGMAX:
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_I32 && s0->ne[2] == 1 &&
               s0->ne[3] == 1 && node->ne[0] == s0->ne[1];
    case GGML_OP_REPEAT:
        return s0 != NULL && s0->type == node->type && is_plain(node->type) && !ggml_is_empty(s0) &&
               ggml_can_repeat(s0, node);
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_DIAG_MASK_ZERO:
    case GGML_OP_CUMSUM:
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 && ggml_are_same_shape(s0, node);
    case GGML_OP_PAD:
    case GGML_OP_PAD_REFLECT_1D:
        return pad_supported(node);
    case GGML_OP_ARANGE:
        return node->type == GGML_TYPE_F32;
    case GGML_OP_TIMESTEP_EMBEDDING:
        /* row r of dst embeds src[r]; dim (op_params[0]) is dst's row length */
        return s0 != NULL && s0->type == GGML_TYPE_F32 && node->type == GGML_TYPE_F32 &&
               node->ne[0] == op_param_i32(node, 0) && op_param_i32(node, 1) >= 1 && s0->ne[0] >= node->ne[1] &&
               node->ne[2] == 1 && node->ne[3] == 1;
    case GGML_OP_COUNT_EQUAL:
        return s0 != NULL && s1 != NULL && s0->type == GGML_TYPE_I32 && s1->type == GGML_TYPE_I32 &&
               node->type == GGML_TYPE_I64 && ggml_are_same_shape(s0, s1) && ggml_nelements(node) == 1;
    case GGML_OP_ARGSORT:
    case GGML_OP_TOP_K:
        return sort_supported(node);
    case GGML_OP_CONCAT:
        return concat_supported(node);
    case GGML_OP_ROPE:
        return rope_supported(node);
    case GGML_OP_GLU:
        return glu_supported(node);
    case GGML_OP_SET_ROWS:
        return s0 != NULL && s1 != NULL && s0->type == GGML_TYPE_F32 &&
               (s1->type == GGML_TYPE_I32 || s1->type == GGML_TYPE_I64) && is_float(node->type) &&
               node->ne[0] == s0->ne[0] && node->ne[2] == s0->ne[2] && node->ne[3] == s0->ne[3] &&
               s1->ne[0] == s0->ne[1] && s1->ne[1] > 0 && s1->ne[2] > 0;
    case GGML_OP_OUT_PROD:
        return out_prod_supported(node);
    case GGML_OP_MUL_MAT: {
        if (s0 == NULL || s1 == NULL) {
            return false;
        }
        struct ggmlx_mm_plan plan;
        return mul_mat_plan(node, &plan, NULL, 0);
    }
    default:
        return false;
    }
}

bool ggmlx_cuda_node_skipped(const struct ggml_tensor * node) {
    return ggmlx_op_is_view(node->op) || !(node->flags & GGML_TENSOR_FLAG_COMPUTE) || ggml_is_empty(node);
}

size_t ggmlx_cuda_scratch_size(const struct ggml_tensor * node) {
    if (node == NULL || node->op != GGML_OP_MUL_MAT || !ggmlx_cuda_supports_op(node)) {
        return 0;
    }
    struct ggmlx_mm_plan plan;
    return mul_mat_plan(node, &plan, NULL, 0) ? plan.scratch_size : 0;
}

enum ggml_status ggmlx_cuda_compute_node(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                         size_t err_size) {
    char dummy[1];
    if (err == NULL || err_size == 0) {
        err      = dummy;
        err_size = sizeof dummy;
    }
    if (ex == NULL || node == NULL) {
        snprintf(err, err_size, "ggmlx_cuda_compute_node: NULL argument");
        return GGML_STATUS_FAILED;
    }
    if (!ggmlx_cuda_supports_op(node)) {
        snprintf(err, err_size, "%s: op %s is not supported on CUDA for these types or layouts", node->name,
                 ggml_op_desc(node));
        return GGML_STATUS_FAILED;
    }
    switch (node->op) {
    case GGML_OP_NONE:
    case GGML_OP_VIEW:
    case GGML_OP_RESHAPE:
    case GGML_OP_PERMUTE:
    case GGML_OP_TRANSPOSE:
        return GGML_STATUS_SUCCESS;
    default:
        break;
    }
    if (ggml_nelements(node) == 0) {
        return GGML_STATUS_SUCCESS;
    }
    /* an empty source may have no memory at all; the kernels never read one */
    bool no_data = node->data == NULL;
    for (int i = 0; i < GGML_MAX_SRC; i++) {
        no_data = no_data || (node->src[i] != NULL && !ggml_is_empty(node->src[i]) && node->src[i]->data == NULL);
    }
    if (no_data) {
        snprintf(err, err_size, "%s (%s): a tensor has no data", node->name, ggml_op_desc(node));
        return GGML_STATUS_FAILED;
    }
    switch (node->op) {
    case GGML_OP_DUP:
    case GGML_OP_CPY:
    case GGML_OP_CONT: {
        if (!is_plain(node->type)) {
            return ggmlx_cuda_launch_copy_bytes(ex, node->data, node->src[0]->data, ggml_nbytes(node), err, err_size);
        }
        struct ggmlx_cuda_tdesc s, d;
        ggmlx_cuda_tdesc_of(node->src[0], &s);
        ggmlx_cuda_tdesc_of(node, &d);
        return ggmlx_cuda_launch_copy(ex, &s, &d, err, err_size);
    }
    case GGML_OP_ADD:
    case GGML_OP_SUB:
    case GGML_OP_MUL:
    case GGML_OP_DIV:
        return ggmlx_cuda_launch_binary(ex, node, err, err_size);
    case GGML_OP_UNARY:
    case GGML_OP_SQR:
    case GGML_OP_SQRT:
    case GGML_OP_LOG:
    case GGML_OP_SIN:
    case GGML_OP_COS:
    case GGML_OP_CLAMP:
    case GGML_OP_LEAKY_RELU:
    case GGML_OP_SCALE:
    case GGML_OP_ADD1:
        return ggmlx_cuda_launch_unary(ex, node, err, err_size);
    case GGML_OP_NORM:
    case GGML_OP_RMS_NORM:
    case GGML_OP_L2_NORM:
        return ggmlx_cuda_launch_norm(ex, node, err, err_size);
    case GGML_OP_GROUP_NORM:
        return ggmlx_cuda_launch_group_norm(ex, node, err, err_size);
    case GGML_OP_SOFT_MAX:
        return ggmlx_cuda_launch_soft_max(ex, node, err, err_size);
    case GGML_OP_GET_ROWS:
        return ggmlx_cuda_launch_get_rows(ex, node, err, err_size);
    case GGML_OP_SUM:
    case GGML_OP_SUM_ROWS:
    case GGML_OP_MEAN:
    case GGML_OP_ARGMAX:
        return ggmlx_cuda_launch_reduce(ex, node, err, err_size);
    case GGML_OP_REPEAT:
    case GGML_OP_CONCAT:
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_DIAG_MASK_ZERO:
        return ggmlx_cuda_launch_shape(ex, node, err, err_size);
    case GGML_OP_PAD:
    case GGML_OP_PAD_REFLECT_1D:
        return ggmlx_cuda_launch_pad(ex, node, err, err_size);
    case GGML_OP_ARANGE:
    case GGML_OP_TIMESTEP_EMBEDDING:
    case GGML_OP_CUMSUM:
    case GGML_OP_COUNT_EQUAL:
        return ggmlx_cuda_launch_misc(ex, node, err, err_size);
    case GGML_OP_ARGSORT:
    case GGML_OP_TOP_K:
        return ggmlx_cuda_launch_argsort(ex, node, err, err_size);
    case GGML_OP_GLU:
        return ggmlx_cuda_launch_glu(ex, node, err, err_size);
    case GGML_OP_ROPE:
        return ggmlx_cuda_launch_rope(ex, node, err, err_size);
    case GGML_OP_SET_ROWS:
        return ggmlx_cuda_launch_set_rows(ex, node, err, err_size);
    case GGML_OP_OUT_PROD:
        return ggmlx_cuda_launch_out_prod(ex, node, err, err_size);
    case GGML_OP_MUL_MAT: {
        struct ggmlx_mm_plan plan;
        if (!mul_mat_plan(node, &plan, err, err_size)) {
            return GGML_STATUS_FAILED;
        }
        return ggmlx_cuda_launch_mul_mat(ex, node, &plan, err, err_size);
    }
    default:
        snprintf(err, err_size, "%s: no CUDA launcher for op %s", node->name, ggml_op_desc(node));
        return GGML_STATUS_FAILED;
    }
}
