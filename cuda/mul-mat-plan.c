/*
 * mul-mat-plan.c -- see mul-mat-plan.h. Plain C11: compiled into libggml-cuda and, as the object
 * library ggmlx-cuda-plain (tests/CMakeLists.txt), into its tests.
 */
#include "mul-mat-plan.h"

#include "ggml.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* when more calls than this would loop over dim 3, one pointer-array call is cheaper */
#define MM_MAX_CALLS 4

static size_t mm_elem_size(int type) {
    switch (type) {
    case GGML_TYPE_F32:  return 4;
    case GGML_TYPE_F16:  return 2;
    case GGML_TYPE_BF16: return 2;
    default:             return 0;
    }
}

static int mm_cuda_type(int type) {
    switch (type) {
    case GGML_TYPE_F16:  return GGMLX_MM_R_16F;
    case GGML_TYPE_BF16: return GGMLX_MM_R_16BF;
    default:             return GGMLX_MM_R_32F;
    }
}

static bool mm_fits_int(int64_t v) {
    return v >= 0 && v <= INT_MAX;
}

static size_t mm_align(size_t v) {
    return (v + GGMLX_MM_SCRATCH_ALIGN - 1) / GGMLX_MM_SCRATCH_ALIGN * GGMLX_MM_SCRATCH_ALIGN;
}

/* every byte stride a whole number of elements */
static bool mm_strides_whole(const struct ggmlx_mm_tensor * t, size_t es) {
    for (int d = 0; d < 4; d++) {
        if (t->nb[d] % es != 0) {
            return false;
        }
    }
    return true;
}

static bool mm_fail(char * why, size_t why_size, const char * msg) {
    if (why != NULL && why_size > 0) {
        snprintf(why, why_size, "%s", msg);
    }
    return false;
}

bool ggmlx_mm_plan_make(const struct ggmlx_mm_tensor * a, const struct ggmlx_mm_tensor * b,
                        const struct ggmlx_mm_tensor * dst, struct ggmlx_mm_plan * plan, char * why, size_t why_size) {
    if (a == NULL || b == NULL || dst == NULL || plan == NULL) {
        return mm_fail(why, why_size, "mul_mat plan: NULL argument");
    }
    memset(plan, 0, sizeof *plan);
    const size_t esa = mm_elem_size(a->type), esb = mm_elem_size(b->type);
    if (esa == 0 || esb == 0 || dst->type != GGML_TYPE_F32) {
        return mm_fail(why, why_size, "mul_mat on CUDA: a and b must be F32, F16 or BF16 and dst F32");
    }
    const int64_t K = a->ne[0], N = a->ne[1], M = b->ne[1];
    const int64_t B2 = b->ne[2], B3 = b->ne[3];
    for (int d = 0; d < 4; d++) {
        if (a->ne[d] < 0 || b->ne[d] < 0) {
            return mm_fail(why, why_size, "mul_mat: negative dimension");
        }
    }
    if (b->ne[0] != K || a->ne[2] < 1 || a->ne[3] < 1 || B2 % a->ne[2] != 0 || B3 % a->ne[3] != 0 ||
        dst->ne[0] != N || dst->ne[1] != M || dst->ne[2] != B2 || dst->ne[3] != B3) {
        return mm_fail(why, why_size, "mul_mat: shapes of a, b and dst do not fit");
    }
    if (dst->nb[0] != 4 || !mm_strides_whole(dst, 4) || (int64_t)(dst->nb[1] / 4) < N) {
        return mm_fail(why, why_size, "mul_mat on CUDA: dst must have unit element stride and non-overlapping rows");
    }
    const int64_t r2 = B2 / a->ne[2], r3 = B3 / a->ne[3];
    const int gtype = a->type; /* the GEMM's input type: b is brought to a's */

    plan->a_type       = mm_cuda_type(gtype);
    plan->b_type       = mm_cuda_type(gtype);
    plan->c_type       = GGMLX_MM_R_32F;
    plan->compute_type = GGMLX_MM_COMPUTE_32F;
    plan->r2 = r2, plan->r3 = r3, plan->bne2 = B2 > 0 ? B2 : 1;
    if (plan->r2 < 1) plan->r2 = 1;
    if (plan->r3 < 1) plan->r3 = 1;

    size_t scratch = 0;

    /* ---- A: a's rows as the columns of a K x N matrix, read transposed ---- */
    int64_t lda;
    plan->transa = GGMLX_MM_OP_T;
    if (a->nb[0] == esa && mm_strides_whole(a, esa) && (int64_t)(a->nb[1] / esa) >= K) {
        lda       = (int64_t)(a->nb[1] / esa);
        plan->sa2 = (int64_t)(a->nb[2] / esa);
        plan->sa3 = (int64_t)(a->nb[3] / esa);
    } else {
        plan->conv_a.needed = true;
        plan->conv_a.type   = a->type;
        plan->conv_a.offset = scratch;
        plan->conv_a.size   = (size_t)K * (size_t)N * (size_t)a->ne[2] * (size_t)a->ne[3] * esa;
        scratch             = mm_align(scratch + plan->conv_a.size);
        lda       = K;
        plan->sa2 = K * N;
        plan->sa3 = K * N * a->ne[2];
    }

    /* ---- B: b's rows as the columns of a K x M matrix ---- */
    int64_t ldb;
    if (b->type == gtype && b->nb[0] == esb && mm_strides_whole(b, esb) && (int64_t)(b->nb[1] / esb) >= K) {
        plan->transb = GGMLX_MM_OP_N;
        ldb       = (int64_t)(b->nb[1] / esb);
        plan->sb2 = (int64_t)(b->nb[2] / esb);
        plan->sb3 = (int64_t)(b->nb[3] / esb);
    } else if (b->type == gtype && (b->nb[1] == esb || M == 1) && mm_strides_whole(b, esb) &&
               (int64_t)(b->nb[0] / esb) >= M && b->nb[0] > 0) {
        /* a transposed view: B is stored M x K (its columns are b's columns), read as B^T */
        plan->transb = GGMLX_MM_OP_T;
        ldb       = (int64_t)(b->nb[0] / esb);
        plan->sb2 = (int64_t)(b->nb[2] / esb);
        plan->sb3 = (int64_t)(b->nb[3] / esb);
    } else {
        plan->conv_b.needed = true;
        plan->conv_b.type   = gtype;
        plan->conv_b.offset = scratch;
        plan->conv_b.size   = (size_t)K * (size_t)M * (size_t)B2 * (size_t)B3 * mm_elem_size(gtype);
        scratch             = mm_align(scratch + plan->conv_b.size);
        plan->transb = GGMLX_MM_OP_N;
        ldb       = K;
        plan->sb2 = K * M;
        plan->sb3 = K * M * B2;
    }

    /* ---- C: dst's rows as the columns of N x M ---- */
    const int64_t ldc = (int64_t)(dst->nb[1] / 4);
    plan->sc2 = (int64_t)(dst->nb[2] / 4);
    plan->sc3 = (int64_t)(dst->nb[3] / 4);

    /* cuBLAS wants leading dimensions of at least 1 even for empty matrices */
    if (lda < 1) lda = 1;
    if (ldb < 1) ldb = 1;
    if (!mm_fits_int(K) || !mm_fits_int(N) || !mm_fits_int(M) || !mm_fits_int(lda) || !mm_fits_int(ldb) ||
        !mm_fits_int(ldc < 1 ? 1 : ldc) || !mm_fits_int(B2 * B3)) {
        return mm_fail(why, why_size, "mul_mat on CUDA: a dimension or leading dimension is past INT_MAX");
    }
    plan->k = (int)K, plan->m = (int)N, plan->n = (int)M;
    plan->lda = (int)lda, plan->ldb = (int)ldb, plan->ldc = (int)(ldc < 1 ? 1 : ldc);

    /* ---- batching over dims 2 and 3 ---- */
    const int64_t nb = B2 * B3;
    plan->api = GGMLX_MM_API_GEMM, plan->batch = 1, plan->n_calls = 1, plan->call_div_a = 1;
    bool done = nb <= 1;

    /* one A for every batch, b's and dst's batches one after another: all columns of one GEMM */
    if (!done && a->ne[2] == 1 && a->ne[3] == 1 && plan->transb == GGMLX_MM_OP_N && plan->sb2 == ldb * M &&
        plan->sc2 == ldc * M && (B3 == 1 || (plan->sb3 == plan->sb2 * B2 && plan->sc3 == plan->sc2 * B2)) &&
        mm_fits_int(M * nb)) {
        plan->n = (int)(M * nb);
        done    = true;
    }
    /* no broadcast, or a broadcast of a single matrix per dim: strides (0 for the broadcast) */
    if (!done && (r2 == 1 || a->ne[2] == 1) && (r3 == 1 || a->ne[3] == 1)) {
        const int64_t ea2 = r2 == 1 ? plan->sa2 : 0, ea3 = r3 == 1 ? plan->sa3 : 0;
        if (B3 == 1 || B2 == 1 ||
            (ea3 == ea2 * B2 && plan->sb3 == plan->sb2 * B2 && plan->sc3 == plan->sc2 * B2)) {
            plan->api      = GGMLX_MM_API_STRIDED;
            plan->batch    = (int)nb;
            plan->stride_a = B2 == 1 ? ea3 : ea2;
            plan->stride_b = B2 == 1 ? plan->sb3 : plan->sb2;
            plan->stride_c = B2 == 1 ? plan->sc3 : plan->sc2;
            done = true;
        } else if (B3 <= MM_MAX_CALLS) {
            plan->api      = GGMLX_MM_API_STRIDED;
            plan->batch    = (int)B2;
            plan->stride_a = ea2, plan->stride_b = plan->sb2, plan->stride_c = plan->sc2;
            plan->n_calls  = (int)B3;
            plan->call_step_a = ea3, plan->call_step_b = plan->sb3, plan->call_step_c = plan->sc3;
            done = true;
        }
    }
    /* a broadcast over dim 2: the r2 batches of b that share one A sit side by side as columns */
    if (!done && plan->transb == GGMLX_MM_OP_N && plan->sb2 == ldb * M && plan->sc2 == ldc * M && B3 <= MM_MAX_CALLS &&
        mm_fits_int(M * r2)) {
        plan->api      = GGMLX_MM_API_STRIDED;
        plan->n        = (int)(M * r2);
        plan->batch    = (int)a->ne[2];
        plan->stride_a = plan->sa2, plan->stride_b = plan->sb2 * r2, plan->stride_c = plan->sc2 * r2;
        plan->n_calls  = (int)B3;
        plan->call_div_a = r3, plan->call_step_a = plan->sa3;
        plan->call_step_b = plan->sb3, plan->call_step_c = plan->sc3;
        done = true;
    }
    if (!done) {
        plan->api        = GGMLX_MM_API_BATCHED;
        plan->batch      = (int)nb;
        plan->ptr_offset = scratch;
        scratch          = mm_align(scratch + 3 * (size_t)nb * sizeof(void *));
    }
    plan->scratch_size = scratch;
    return true;
}
