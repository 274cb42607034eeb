/*
 * qgemm.c -- ggmlx_qgemm: the quantized batched GEMM's driver. It picks a micro-kernel, reads
 * the activations' per-block scalars once per call (db, the offset correction -o * sum(q) and
 * db * sum(q), for every row of b), then unpacks QG_NR rows of the weights at a time into a
 * per-thread panel and runs the micro-kernel over all rows of b against it (b in passes of
 * QG_MCHUNK rows). Only one panel of a is ever unpacked: the scratch is about 32 * k bytes plus
 * 12 bytes per row of a pass and block of 32 (16 for Q2_K, Q3_K, Q6_K), whatever the sizes.
 *
 * Both preparations are paid per call, so callers should pass many rows: all the activation
 * rows and at least 64 weight rows per call keep them to a few percent.
 * Rows must keep the natural alignment of their blocks (2 bytes, 4 for Q8_K), as tensors do.
 *
 * GGMLX_MATMUL_KERNEL=portable forces the plain C kernel, =avx512 the AVX-512 VNNI one and =amx
 * the AMX one (Linux; as for the float matmul, an ISA the CPU or OS lacks falls back to what it
 * has). AMX is used only on request. =avx2 declines, as does an x86 CPU without AVX-512 VNNI,
 * so that the caller keeps its vec_dot kernels.
 */
#include "qgemm.h"

#include "qgemm-impl.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the activations' formats ------------------------------------------------------------------- */

static bool qg_bview_of(enum ggml_type t, struct qg_bview * v) {
    switch (t) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_IQ4_NL:
            v->bsize = sizeof(block_q8_0);
            v->qs_off = offsetof(block_q8_0, qs);
            v->qk = QK8_0;
            return true;
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_1:
            v->bsize = sizeof(block_q8_1);
            v->qs_off = offsetof(block_q8_1, qs);
            v->qk = QK8_1;
            return true;
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_IQ4_XS:
            v->bsize = sizeof(block_q8_K);
            v->qs_off = offsetof(block_q8_K, qs);
            v->qk = QK_K;
            return true;
        default:
            return false;
    }
}

/* the scale and the sum of the 32 values of each of the nbb blocks of one Q8_0 / Q8_1 row */
static void qg_row_sums32_portable(const char * row, int64_t nbb, size_t bsize, size_t qs_off, float * d,
                                   int32_t * sum) {
    for (int64_t bb = 0; bb < nbb; bb++) {
        const char * blk = row + (size_t) bb * bsize;
        const int8_t * q = (const int8_t *) (blk + qs_off);
        ggmlx_half h;
        memcpy(&h, blk, sizeof h);
        d[bb] = ggmlx_fp16_to_fp32(h);
        int32_t s = 0;
        for (int e = 0; e < 32; e++) {
            s += q[e];
        }
        sum[bb] = s;
    }
}

/*
 * The per-row scalars of rows [0, m) of b (see struct qg_bview; dbs only when dbs != NULL).
 * Q8_K carries the sums of its 16-value groups (bsums), so only the 32-value formats are summed
 * here, by row_sums32; tmp holds 2 * (k / 32) values.
 */
static void qg_fill_info(const struct qg_bview * v, int64_t m, int bk, int off, int32_t * corr, float * dbs,
                         float * db, qg_row_sums32_fn row_sums32, void * tmp) {
    const int64_t nbb = v->nbb, nblk = v->nblk;
    const int per = v->qk / bk;
    for (int64_t j = 0; j < m; j++) {
        const char * row = v->b + (size_t) j * v->ldb;
        if (v->qk == QK_K) {
            for (int64_t bb = 0; bb < nbb; bb++) {
                const block_q8_K * x = (const block_q8_K *) (row + (size_t) bb * v->bsize);
                db[qg_at(j, bb, nbb)] = x->d;
                for (int s = 0; s < per; s++) {
                    int32_t sum = 0;
                    for (int g = s * bk / 16; g < (s + 1) * bk / 16; g++) {
                        sum += x->bsums[g];
                    }
                    corr[qg_at(j, bb * per + s, nblk)] = -off * sum;
                    if (dbs != NULL) {
                        dbs[qg_at(j, bb * per + s, nblk)] = x->d * (float) sum;
                    }
                }
            }
            continue;
        }
        float * d = tmp;
        int32_t * sum = (int32_t *) (d + nbb);
        row_sums32(row, nbb, v->bsize, v->qs_off, d, sum);
        for (int64_t bb = 0; bb < nbb; bb++) {
            db[qg_at(j, bb, nbb)] = d[bb];
            corr[qg_at(j, bb, nblk)] = -off * sum[bb];
            if (dbs != NULL) {
                dbs[qg_at(j, bb, nblk)] = d[bb] * (float) sum[bb];
            }
        }
    }
}

/* ---- kernel choice ------------------------------------------------------------------------------ */

#if defined(__x86_64__) && defined(__GNUC__)
static bool qg_has_avx512_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c");
}
#endif

/* the four bytes of k-step t of row r go to u[t * 64 + r * 4]: rows holds QG_NR rows of k bytes */
static void qg_interleave_portable(const uint8_t * rows, int64_t k, uint8_t * u) {
    for (int r = 0; r < QG_NR; r++) {
        for (int64_t t = 0; t < k / 4; t++) {
            memcpy(u + (size_t) t * 4 * QG_NR + (size_t) r * 4, rows + (size_t) r * (size_t) k + 4 * t, 4);
        }
    }
}

struct qg_isa {
    qg_kernel_fn kernel;
    void (*interleave)(const uint8_t * rows, int64_t k, uint8_t * u);
    qg_row_sums32_fn row_sums32;
};

/* read per call, like the float matmul, so that tests can switch paths within one process; false: no kernel */
static bool qg_pick(struct qg_isa * isa) {
    const char * want = getenv("GGMLX_MATMUL_KERNEL");
    isa->kernel = ggmlx_qgemm_kernel_portable;
    isa->interleave = qg_interleave_portable;
    isa->row_sums32 = qg_row_sums32_portable;
    if (want != NULL && strcmp(want, "portable") == 0) {
        return true;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    /* forcing the float matmul to AVX2 is for testing the AVX2 kernels: leave the products to vec_dot's */
    if (want != NULL && strcmp(want, "avx2") == 0) {
        return false;
    }
    if (qg_has_avx512_vnni()) {
#    if defined(__linux__)
        /* AMX only on request until it has been measured against the VNNI kernel where it exists */
        const bool amx = want != NULL && strcmp(want, "amx") == 0 && ggmlx_qgemm_amx_available();
        isa->kernel = amx ? ggmlx_qgemm_kernel_amx : ggmlx_qgemm_kernel_avx512;
#    else
        isa->kernel = ggmlx_qgemm_kernel_avx512;
#    endif
        isa->interleave = ggmlx_qgemm_interleave_avx512;
        isa->row_sums32 = ggmlx_qgemm_row_sums32_avx512;
        return true;
    }
    return false;
#else
    return true;
#endif
}

/* ---- per-thread scratch ------------------------------------------------------------------------- */

struct qg_scratch {
    void * mem;
    size_t size;
};

static pthread_key_t qg_key;
static bool qg_key_ok;
static pthread_once_t qg_key_once = PTHREAD_ONCE_INIT;

static void qg_scratch_free(void * p) {
    struct qg_scratch * s = p;
    free(s->mem);
    free(s);
}

static void qg_key_init(void) { qg_key_ok = pthread_key_create(&qg_key, qg_scratch_free) == 0; }

/* this thread's scratch of at least size bytes (64-byte aligned), kept for its next calls; NULL when out of memory */
static void * qg_scratch_get(size_t size) {
    pthread_once(&qg_key_once, qg_key_init);
    if (!qg_key_ok) {
        return NULL;
    }
    struct qg_scratch * s = pthread_getspecific(qg_key);
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        if (s == NULL) {
            return NULL;
        }
        if (pthread_setspecific(qg_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->size < size) {
        const size_t want = (size + 63) / 64 * 64;
        void * mem = aligned_alloc(64, want);
        if (mem == NULL) {
            return NULL;
        }
        free(s->mem);
        s->mem = mem;
        s->size = want;
    }
    return s->mem;
}

/* ---- driver ------------------------------------------------------------------------------------- */

/*
 * Rows of b per pass: bounds the per-row scalars (12 bytes per row and block) whatever m is, at
 * the price of unpacking the weights once more per pass. A multiple of 16 (the AMX tile height).
 */
#ifndef QG_MCHUNK
#    define QG_MCHUNK 1024
#endif

static size_t qg_align64(size_t x) { return (x + 63) / 64 * 64; }

/* rows [i0, i0 + nr) of a into the panel; the rows past nr are zeroed so they add nothing */
static void qg_pack_panel(const struct qg_isa * isa, enum ggml_type t, const char * a, size_t lda, int64_t i0, int nr,
                          struct qg_panel * p, uint8_t * rows) {
    const int64_t k = p->k, nblk = k / p->bk;
    for (int r = 0; r < QG_NR; r++) {
        uint8_t * row = rows + (size_t) r * (size_t) k;
        if (r < nr) {
            ggmlx_qgemm_unpack_row(t, a + (size_t) (i0 + r) * lda, k, row, p->sa + r, p->ca + r, QG_NR);
        } else {
            memset(row, 0, (size_t) k);
            for (int64_t blk = 0; blk < nblk; blk++) {
                p->sa[blk * QG_NR + r] = 0.0f;
                p->ca[blk * QG_NR + r] = 0.0f;
            }
        }
    }
    isa->interleave(rows, k, p->u);
}

bool ggmlx_qgemm(enum ggml_type t, int64_t k, const void * a, size_t lda, int64_t n, const void * b, size_t ldb,
                 int64_t m, float * c, size_t ldc) {
    struct qg_bview v;
    const int bk = ggmlx_qgemm_unpack_bk(t);
    if (bk == 0 || !qg_bview_of(t, &v) || k <= 0 || k % ggmlx_qgemm_unpack_qk(t) != 0 || k % v.qk != 0 ||
        n < 0 || m < 0) {
        return false;
    }
    struct qg_isa isa;
    if (!qg_pick(&isa)) {
        return false;
    }
    if (n == 0 || m == 0) {
        return true;
    }
    const bool has_min = ggmlx_qgemm_unpack_offset(t) == 0;
    const int64_t nblk = k / bk, nbb = k / v.qk;
    const size_t u_size = qg_align64((size_t) k * QG_NR);
    const size_t s_size = qg_align64((size_t) nblk * QG_NR * sizeof(float));
    const int64_t mc = m < QG_MCHUNK ? m : QG_MCHUNK;
    const size_t mg = (size_t) ((mc + QG_MG - 1) / QG_MG * QG_MG); /* rows of b per chunk, whole groups */
    const size_t corr_size = qg_align64(mg * (size_t) nblk * sizeof(int32_t));
    const size_t dbs_size = has_min ? qg_align64(mg * (size_t) nblk * sizeof(float)) : 0;
    const size_t db_size = qg_align64(mg * (size_t) nbb * sizeof(float));
    const size_t rows_size = qg_align64((size_t) k * QG_NR);
    const size_t tmp_size = qg_align64((size_t) (k / 32) * 2 * sizeof(float));
    char * mem = qg_scratch_get(u_size + 2 * s_size + corr_size + dbs_size + db_size + rows_size + tmp_size);
    if (mem == NULL) {
        return false;
    }
    struct qg_panel p = {
        .u = (uint8_t *) mem,
        .sa = (float *) (mem + u_size),
        .ca = (float *) (mem + u_size + s_size),
        .k = k,
        .bk = bk,
        .has_min = has_min,
    };
    char * at = mem + u_size + 2 * s_size;
    int32_t * corr = (int32_t *) at;
    float * dbs = has_min ? (float *) (at + corr_size) : NULL;
    float * db = (float *) (at + corr_size + dbs_size);
    uint8_t * rows = (uint8_t *) (at + corr_size + dbs_size + db_size);
    void * tmp = at + corr_size + dbs_size + db_size + rows_size;

    v.ldb = ldb;
    v.nblk = nblk;
    v.nbb = nbb;
    v.corr = corr;
    v.dbs = dbs;
    v.db = db;
    for (int64_t j0 = 0; j0 < m; j0 += mc) {
        const int64_t mj = m - j0 < mc ? m - j0 : mc;
        v.b = (const char *) b + (size_t) j0 * ldb;
        qg_fill_info(&v, mj, bk, ggmlx_qgemm_unpack_offset(t), corr, dbs, db, isa.row_sums32, tmp);
        for (int64_t i0 = 0; i0 < n; i0 += QG_NR) {
            const int nr = n - i0 < QG_NR ? (int) (n - i0) : QG_NR;
            qg_pack_panel(&isa, t, a, lda, i0, nr, &p, rows);
            isa.kernel(&p, nr, &v, mj, c + (size_t) j0 * ldc + (size_t) i0, ldc);
        }
    }
    return true;
}
