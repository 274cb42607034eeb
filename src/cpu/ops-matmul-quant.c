/*
 * ops-matmul-quant.c -- MUL_MAT with quantized weights (src0) and F32 activations (src1):
 * dst[n, m] = dot(a row n, b row m), batched over dims 2, 3 with a's batches broadcast as for F32.
 *
 * The weights are never dequantized. The activations are: every row of b is quantized once into
 * the work buffer as the weight type's vec_dot_type (the threads share that, then meet at a
 * barrier), and each output is one vec_dot of a weight row with a converted row.
 *  - One row of b (token generation): a's rows are split into one contiguous range per thread,
 *    so the weights stream from memory once, each row met by the single vector; a type with a
 *    matrix-vector kernel (ggmlx_qdot_gemv) takes the range in one call, which meets several
 *    weight rows per pass over the vector instead of rearranging the vector for each row.
 *  - Several rows, with a batched kernel for the type (ggmlx_qgemm, src/cpu/quant/qgemm.h): each
 *    thread takes whole blocks of weight rows (multiples of its 16-row panels) against all the
 *    activation rows (up to MQ_GEMM_M) in one call; the kernel unpacks one 16-row panel at a time
 *    and meets every activation row with it, so each weight row is unpacked once per call.
 *  - Several rows, vec_dot only: dst is cut into tiles of MQ_NB weight rows x MQ_MB activation
 *    rows; a weight row is dotted with the tile's MQ_MB converted rows while it sits in L1 (the
 *    block of b rows stays in L2), so each weight row is read once per block of activation rows.
 *    A thread's tiles run along m first: its block of weight rows stays in L2 while it meets every
 *    block of the (small, quantized) activations, so the weights come from memory once in all,
 *    and the threads split the weights between them.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "quant/qdot.h"
#include "quant/qgemm.h"

#include <limits.h>
#include <string.h>

#define MQ_ALIGN 64
#define MQ_MB    64 /* activation rows per tile: 64 converted rows of 4096 Q8_0 values are 272 KiB (L2) */
#define MQ_NB    64 /* weight rows per tile (fewer when the threads need more tiles) */
#define MQ_GEMM_M  2048 /* activation rows per call of the batched kernel */
#define MQ_GEMM_NR 16   /* its panel height: weight row blocks are multiples of it */

static int64_t mq_min(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t mq_ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
static size_t  mq_align(size_t x) { return (x + MQ_ALIGN - 1) & ~(size_t) (MQ_ALIGN - 1); }

struct mq_plan {
    const struct ggml_type_traits_cpu * tr;   /* the weights' */
    ggml_from_float_t                   quant; /* F32 -> vec_dot_type */
    int64_t K, N, M, B2, B3, r2, r3;
    size_t  row_q;      /* bytes of one converted activation row */
    size_t  conv_bytes; /* all converted rows, aligned */
    size_t  per_thread; /* one gathered F32 row (strided activations), aligned */
    int64_t n_chunk, m_chunk, n_chunks, m_chunks, units;
    bool    gemm; /* the batched kernel takes this type (asked with an empty product, which touches nothing) */
    ggmlx_gemv_t gemv; /* several weight rows with one activation row, where the type has it */
};

/*
 * Why the CPU cannot multiply these (NULL when it can): the weight type needs a vec_dot and its
 * vec_dot_type a quantizer, the weights' blocks must be contiguous, the row length must fit the
 * kernels' int and be whole blocks of the vec_dot_type.
 */
const char * ggmlx_cpu_mul_mat_quant_refusal(const struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const struct ggml_type_traits_cpu * tr = ggml_get_type_traits_cpu(a->type);
    if (tr == NULL || tr->vec_dot == NULL) {
        return "the weight type has no CPU dot product kernel";
    }
    const struct ggml_type_traits_cpu * tv = ggml_get_type_traits_cpu(tr->vec_dot_type);
    if (tv == NULL || tv->from_float == NULL) {
        return "the weight type's activation type has no CPU quantizer";
    }
    if (b->type != GGML_TYPE_F32) {
        return "quantized weights need F32 activations";
    }
    if (dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float)) {
        return "the result must be F32 with contiguous rows";
    }
    if (a->nb[0] != ggml_type_size(a->type)) {
        return "the weights' blocks must be contiguous within a row";
    }
    if (a->ne[0] > INT_MAX || a->ne[0] % ggml_blck_size(tr->vec_dot_type) != 0) {
        return "the row length must be whole blocks of the activation type and at most INT_MAX";
    }
    return NULL;
}

static void mq_make_plan(const struct ggml_tensor * dst, int nth, struct mq_plan * p) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    memset(p, 0, sizeof *p);
    p->tr    = ggml_get_type_traits_cpu(a->type);
    p->quant = ggml_get_type_traits_cpu(p->tr->vec_dot_type)->from_float;
    p->gemv  = ggmlx_qdot_gemv(a->type);
    p->K     = a->ne[0];
    p->N     = a->ne[1];
    p->M     = b->ne[1];
    p->B2    = b->ne[2];
    p->B3    = b->ne[3];
    p->r2    = a->ne[2] > 0 && b->ne[2] >= a->ne[2] ? b->ne[2] / a->ne[2] : 1;
    p->r3    = a->ne[3] > 0 && b->ne[3] >= a->ne[3] ? b->ne[3] / a->ne[3] : 1;
    if (nth < 1) {
        nth = 1;
    }
    p->row_q      = (size_t) (p->K / ggml_blck_size(p->tr->vec_dot_type)) * ggml_type_size(p->tr->vec_dot_type);
    p->conv_bytes = mq_align(p->row_q * (size_t) (p->M * p->B2 * p->B3));
    p->per_thread = b->nb[0] == sizeof(float) ? 0 : mq_align((size_t) p->K * sizeof(float));

    const int64_t batches = p->B2 * p->B3;
    /* one contiguous share per thread when the batches divide evenly, else finer to even out */
    const int64_t want = nth <= 1 ? 1 : batches % nth == 0 ? nth : 4 * (int64_t) nth;
    p->gemm = p->M > 1 && p->K > 0 && ggmlx_qgemm(a->type, p->K, NULL, 0, 0, NULL, 0, 0, NULL, 0);
    if (p->M == 1) {
        p->m_chunk = 1;
        p->n_chunk = batches >= want ? p->N : mq_ceil_div(p->N, mq_ceil_div(want, batches > 0 ? batches : 1));
    } else if (p->gemm) {
        p->m_chunk = mq_min(p->M, MQ_GEMM_M);
        const int64_t per_batch = mq_ceil_div(p->M, p->m_chunk);
        const int64_t split_n   = batches * per_batch >= want ? 1 : mq_ceil_div(want, batches * per_batch);
        p->n_chunk = mq_ceil_div(mq_ceil_div(p->N, split_n), MQ_GEMM_NR) * MQ_GEMM_NR;
    } else {
        p->m_chunk = mq_min(p->M, MQ_MB);
        p->n_chunk = mq_min(p->N, MQ_NB);
        const int64_t tiles = batches * mq_ceil_div(p->M, p->m_chunk) * mq_ceil_div(p->N, p->n_chunk);
        if (tiles < want && p->N > 0) {
            /* thinner tiles of weight rows until every thread has one (at least 4 rows each) */
            const int64_t per_n = mq_ceil_div(want, mq_ceil_div(tiles, mq_ceil_div(p->N, p->n_chunk)));
            p->n_chunk = mq_ceil_div(p->N, per_n);
            p->n_chunk = p->n_chunk < 4 ? mq_min(4, p->N) : p->n_chunk;
        }
    }
    if (p->n_chunk < 1) {
        p->n_chunk = 1;
    }
    p->n_chunks = mq_ceil_div(p->N, p->n_chunk);
    p->m_chunks = mq_ceil_div(p->M, p->m_chunk);
    p->units    = batches * p->n_chunks * p->m_chunks;
}

size_t ggmlx_cpu_mul_mat_quant_work_size(const struct ggml_tensor * dst, int n_tasks) {
    struct mq_plan p;
    mq_make_plan(dst, n_tasks, &p);
    return p.conv_bytes + (size_t) (n_tasks < 1 ? 1 : n_tasks) * p.per_thread + MQ_ALIGN;
}

/*
 * Converts b into the work buffer: row (i13 * B2 + i12) * M + m at wq + that * row_q. With at
 * least as many rows as threads each thread takes whole rows; otherwise (one vector) every
 * thread quantizes its own range of blocks of every row.
 */
static void mq_convert(const struct ggmlx_cpu_params * params, const struct mq_plan * p, const struct ggml_tensor * b,
                       char * wq, float * tmp) {
    const int64_t rows = p->M * p->B2 * p->B3;
    const int64_t bs   = ggml_blck_size(p->tr->vec_dot_type);
    const size_t  ts   = ggml_type_size(p->tr->vec_dot_type);
    int64_t r0 = 0, r1 = rows, k0 = 0, k1 = p->K;
    if (rows >= params->nth) {
        ggmlx_cpu_split_rows(params, rows, &r0, &r1);
    } else {
        const int64_t nblk = p->K / bs;
        const int64_t per  = mq_ceil_div(nblk, params->nth);
        k0 = mq_min(nblk, per * params->ith) * bs;
        k1 = mq_min(nblk, per * (params->ith + 1)) * bs;
    }
    if (k1 <= k0) {
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const int64_t m   = r % p->M;
        const int64_t i12 = (r / p->M) % p->B2;
        const int64_t i13 = r / (p->M * p->B2);
        const char  * src = (const char *) b->data + m * b->nb[1] + i12 * b->nb[2] + i13 * b->nb[3] + k0 * b->nb[0];
        const float * x   = (const float *) src;
        if (b->nb[0] != sizeof(float)) {
            for (int64_t k = 0; k < k1 - k0; k++) {
                memcpy(&tmp[k], src + k * b->nb[0], sizeof(float));
            }
            x = tmp;
        }
        p->quant(x, wq + (size_t) r * p->row_q + (size_t) (k0 / bs) * ts, k1 - k0);
    }
}

struct mq_ctx {
    const struct mq_plan     * p;
    const struct ggml_tensor * a;
    struct ggml_tensor       * dst;
    const char               * wq;
};

static void mq_tile(const struct mq_ctx * c, int64_t i12, int64_t i13, int64_t n0, int64_t n1, int64_t m0, int64_t m1) {
    const struct mq_plan     * p = c->p;
    const struct ggml_tensor * a = c->a;
    const struct ggml_tensor * d = c->dst;
    const char * arow = (const char *) a->data + n0 * a->nb[1] + (i12 / p->r2) * a->nb[2] + (i13 / p->r3) * a->nb[3];
    const char * brow = c->wq + (size_t) ((i13 * p->B2 + i12) * p->M + m0) * p->row_q;
    float      * out  = (float *) ((char *) d->data + n0 * d->nb[0] + m0 * d->nb[1] + i12 * d->nb[2] + i13 * d->nb[3]);
    const size_t ldc  = d->nb[1] / sizeof(float);

    if (p->K == 0) {
        for (int64_t m = 0; m < m1 - m0; m++) {
            memset(out + m * ldc, 0, (size_t) (n1 - n0) * sizeof(float));
        }
        return;
    }
    if (p->gemm && d->nb[1] % sizeof(float) == 0 &&
        ggmlx_qgemm(a->type, p->K, arow, a->nb[1], n1 - n0, brow, p->row_q, m1 - m0, out, ldc)) {
        return;
    }
    const int K = (int) p->K;
    if (p->gemv != NULL && n1 - n0 <= INT_MAX) {
        /* dst's rows are contiguous in n (dst->nb[0] is a float's size) */
        for (int64_t m = 0; m < m1 - m0; m++) {
            p->gemv(K, (float *) ((char *) out + m * d->nb[1]), arow, a->nb[1], (int) (n1 - n0), brow + (size_t) m * p->row_q);
        }
        return;
    }
    for (int64_t n = 0; n < n1 - n0; n++) {
        const char * x = arow + n * a->nb[1];
        for (int64_t m = 0; m < m1 - m0; m++) {
            float s;
            p->tr->vec_dot(K, &s, 0, x, 0, brow + (size_t) m * p->row_q, 0, 1);
            *(float *) ((char *) out + n * d->nb[0] + m * d->nb[1]) = s;
        }
    }
}

void ggmlx_cpu_mul_mat_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    struct mq_plan p;
    mq_make_plan(dst, params->nth, &p);
    const size_t need = p.conv_bytes + (size_t) params->nth * p.per_thread + MQ_ALIGN;
    if (params->wdata == NULL || params->wsize < need) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "ggml_mul_mat: work buffer of %zu bytes is smaller than the %zu needed",
                           params->wsize, need);
        }
        return;
    }
    char  * base = (char *) (((uintptr_t) params->wdata + MQ_ALIGN - 1) & ~(uintptr_t) (MQ_ALIGN - 1));
    float * tmp  = (float *) (base + p.conv_bytes + (size_t) params->ith * p.per_thread);

    mq_convert(params, &p, dst->src[1], base, tmp);
    if (params->nth > 1) {
        ggmlx_cpu_barrier(params);
    }

    const struct mq_ctx c = { &p, dst->src[0], dst, base };
    int64_t u0, u1;
    ggmlx_cpu_split_rows(params, p.units, &u0, &u1);
    const int64_t per_batch = p.n_chunks * p.m_chunks;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t batch = u / per_batch;
        const int64_t rest  = u % per_batch;
        const int64_t m0    = (rest % p.m_chunks) * p.m_chunk;
        const int64_t n0    = (rest / p.m_chunks) * p.n_chunk;
        mq_tile(&c, batch % p.B2, batch / p.B2, n0, mq_min(p.N, n0 + p.n_chunk), m0, mq_min(p.M, m0 + p.m_chunk));
    }
}
