/*
 * ops-moe.c -- MUL_MAT_ID and ADD_ID on the CPU.
 *
 * MUL_MAT_ID: res[:, e, t] = as[ids[e, t]] * b[:, e % n_b, t]. The (e, t) pairs are grouped by
 * expert first (one thread, while nothing else can start), then every pair's activation row is
 * converted into the work buffer in that grouped order: as the weight type's vec_dot_type for
 * quantized experts (the weights themselves are never dequantized), copied as F32 for float
 * experts. Each expert then is an ordinary product of its weight matrix with a contiguous block
 * of rows, cut into tiles of weight rows x pairs shared among the threads; quantized tiles of
 * several rows go to the batched kernel (ggmlx_qgemm) through a per-thread tile of results that
 * is scattered to the pairs' places in dst, single rows (token generation) to vec_dot.
 *
 * An id outside 0 .. n_expert-1 fails the computation before anything is written.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "quant/qgemm.h"

#include <string.h>

#define MI_ALIGN 64
#define MI_NB    64  /* weight rows per tile (a multiple of the batched kernel's 16-row panels) */
#define MI_MB    256 /* pairs per tile */

static int64_t mi_min(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t mi_ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
static size_t  mi_align(size_t x) { return (x + MI_ALIGN - 1) & ~(size_t) (MI_ALIGN - 1); }

static bool mi_float_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16;
}

const char * ggmlx_cpu_mul_mat_id_refusal(const struct ggml_tensor * dst) {
    const struct ggml_tensor * as = dst->src[0];
    if (dst->src[2]->type != GGML_TYPE_I32) {
        return "expert ids must be I32";
    }
    if (mi_float_type(as->type)) {
        if (dst->type != GGML_TYPE_F32 || dst->nb[0] != sizeof(float)) {
            return "the result must be F32 with contiguous rows";
        }
        return as->nb[0] == ggml_type_size(as->type) ? NULL : "the experts' rows must be contiguous";
    }
    return ggmlx_cpu_mul_mat_quant_refusal(dst); /* the same rules as a quantized mul_mat */
}

struct mi_plan {
    int64_t K, N, n_exp, n_used, n_tok, n_b, pairs;
    bool    quant;
    size_t  row_c;      /* bytes of one converted activation row */
    size_t  head;       /* bytes of the grouping: flag, offsets[n_exp + 1], fill[n_exp], pair list */
    size_t  conv;       /* bytes of the converted rows */
    size_t  per_thread; /* scratch of one thread */
    int64_t n_chunk;
};

static void mi_make_plan(const struct ggml_tensor * dst, int nth, struct mi_plan * p) {
    const struct ggml_tensor * as  = dst->src[0];
    const struct ggml_tensor * b   = dst->src[1];
    const struct ggml_tensor * ids = dst->src[2];
    memset(p, 0, sizeof *p);
    p->K      = as->ne[0];
    p->N      = as->ne[1];
    p->n_exp  = as->ne[2];
    p->n_used = ids->ne[0];
    p->n_tok  = ids->ne[1];
    p->n_b    = b->ne[1];
    p->pairs  = p->n_used * p->n_tok;
    p->quant  = !mi_float_type(as->type);
    if (p->quant) {
        const enum ggml_type vt = ggml_get_type_traits_cpu(as->type)->vec_dot_type;
        p->row_c = (size_t) (p->K / ggml_blck_size(vt)) * ggml_type_size(vt);
    } else {
        p->row_c = (size_t) p->K * sizeof(float);
    }
    p->head = mi_align(sizeof(int64_t) * (size_t) (1 + 2 * p->n_exp + 1 + p->pairs));
    p->conv = mi_align(p->row_c * (size_t) p->pairs);
    /* a tile of results and one gathered F32 row (strided activations into a quantizer) */
    p->per_thread = p->quant ? mi_align(sizeof(float) * MI_NB * MI_MB) + mi_align((size_t) p->K * sizeof(float)) : 0;
    /* enough tiles for every thread even when few experts are active (token generation) */
    if (nth < 1) {
        nth = 1;
    }
    const int64_t active = mi_min(p->n_exp, p->pairs) > 0 ? mi_min(p->n_exp, p->pairs) : 1;
    int64_t n_chunk = MI_NB;
    while (n_chunk > 16 && active * mi_ceil_div(p->N, n_chunk) < 4 * (int64_t) nth) {
        n_chunk /= 2;
    }
    p->n_chunk = n_chunk;
}

size_t ggmlx_cpu_mul_mat_id_work_size(const struct ggml_tensor * dst, int n_tasks) {
    struct mi_plan p;
    mi_make_plan(dst, n_tasks, &p);
    return p.head + p.conv + (size_t) (n_tasks < 1 ? 1 : n_tasks) * p.per_thread + MI_ALIGN;
}

/* thread 0: pairs grouped by expert into list (pair = t * n_used + e); false on a bad id */
static bool mi_group(const struct mi_plan * p, const struct ggml_tensor * ids, int64_t * off, int64_t * fill,
                     int64_t * list, int32_t * bad_id) {
    memset(off, 0, sizeof(int64_t) * (size_t) (p->n_exp + 1));
    for (int64_t t = 0; t < p->n_tok; t++) {
        for (int64_t e = 0; e < p->n_used; e++) {
            const int32_t x = *(const int32_t *) ((const char *) ids->data + e * ids->nb[0] + t * ids->nb[1]);
            if (x < 0 || x >= p->n_exp) {
                *bad_id = x;
                return false;
            }
            off[x + 1]++;
        }
    }
    for (int64_t x = 0; x < p->n_exp; x++) {
        off[x + 1] += off[x];
        fill[x] = off[x];
    }
    for (int64_t t = 0; t < p->n_tok; t++) {
        for (int64_t e = 0; e < p->n_used; e++) {
            const int32_t x = *(const int32_t *) ((const char *) ids->data + e * ids->nb[0] + t * ids->nb[1]);
            list[fill[x]++] = t * p->n_used + e;
        }
    }
    return true;
}

/* the activation row of every pair, in grouped order, as the experts' products take them */
static void mi_convert(const struct ggmlx_cpu_params * params, const struct mi_plan * p, const struct ggml_tensor * b,
                       const int64_t * list, char * conv, ggml_from_float_t quant, float * gather) {
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, p->pairs, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t e = list[r] % p->n_used, t = list[r] / p->n_used;
        const char * src = (const char *) b->data + (e % p->n_b) * b->nb[1] + t * b->nb[2];
        char * out = conv + (size_t) r * p->row_c;
        const float * x = (const float *) src;
        if (b->nb[0] != sizeof(float)) {
            float * g = p->quant ? gather : (float *) out;
            for (int64_t i = 0; i < p->K; i++) {
                memcpy(&g[i], src + i * b->nb[0], sizeof(float));
            }
            x = g;
        }
        if (p->quant) {
            quant(x, out, p->K);
        } else if (x != (const float *) out) {
            memcpy(out, x, p->row_c);
        }
    }
}

struct mi_ctx {
    const struct mi_plan     * p;
    const struct ggml_tensor * as;
    struct ggml_tensor       * dst;
    const int64_t            * list;
    const char               * conv;
    float                    * tile;
};

static float * mi_out(const struct mi_ctx * c, int64_t pair) {
    const int64_t e = pair % c->p->n_used, t = pair / c->p->n_used;
    return (float *) ((char *) c->dst->data + e * c->dst->nb[1] + t * c->dst->nb[2]);
}

/* rows n0..n1 of expert x against its grouped pairs g0..g1 */
static void mi_tile(const struct mi_ctx * c, int64_t x, int64_t n0, int64_t n1, int64_t g0, int64_t g1) {
    const struct mi_plan     * p  = c->p;
    const struct ggml_tensor * as = c->as;
    const char * arow = (const char *) as->data + x * as->nb[2] + n0 * as->nb[1];
    const char * brow = c->conv + (size_t) g0 * p->row_c;
    const int64_t nn = n1 - n0, nm = g1 - g0;
    if (p->K == 0) {
        for (int64_t m = 0; m < nm; m++) {
            memset(mi_out(c, c->list[g0 + m]) + n0, 0, (size_t) nn * sizeof(float));
        }
        return;
    }
    if (p->quant && nm > 1 &&
        ggmlx_qgemm(as->type, p->K, arow, as->nb[1], nn, brow, p->row_c, nm, c->tile, (size_t) nn)) {
        for (int64_t m = 0; m < nm; m++) {
            memcpy(mi_out(c, c->list[g0 + m]) + n0, c->tile + m * nn, (size_t) nn * sizeof(float));
        }
        return;
    }
    const struct ggml_type_traits_cpu * tr = p->quant ? ggml_get_type_traits_cpu(as->type) : NULL;
    for (int64_t n = 0; n < nn; n++) {
        const char * w = arow + n * as->nb[1];
        for (int64_t m = 0; m < nm; m++) {
            const char * y = brow + (size_t) m * p->row_c;
            float s;
            if (p->quant) {
                tr->vec_dot((int) p->K, &s, 0, w, 0, y, 0, 1);
            } else {
                s = ggmlx_cpu_dot_float_row(p->K, w, as->type, (const float *) y);
            }
            mi_out(c, c->list[g0 + m])[n0 + n] = s;
        }
    }
}

void ggmlx_cpu_mul_mat_id(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    struct mi_plan p;
    mi_make_plan(dst, params->nth, &p);
    const size_t need = p.head + p.conv + (size_t) params->nth * p.per_thread + MI_ALIGN;
    if (params->wdata == NULL || params->wsize < need) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "ggml_mul_mat_id: work buffer of %zu bytes is smaller than the %zu needed",
                           params->wsize, need);
        }
        return;
    }
    char    * base = (char *) (((uintptr_t) params->wdata + MI_ALIGN - 1) & ~(uintptr_t) (MI_ALIGN - 1));
    int64_t * flag = (int64_t *) base;
    int64_t * off  = flag + 1;
    int64_t * fill = off + p.n_exp + 1;
    int64_t * list = fill + p.n_exp;
    char    * conv = base + p.head;
    char    * mine = conv + p.conv + (size_t) params->ith * p.per_thread;
    float   * tile = (float *) mine;
    float   * gather = (float *) (mine + mi_align(sizeof(float) * MI_NB * MI_MB));

    if (params->ith == 0) {
        int32_t bad = 0;
        *flag = mi_group(&p, dst->src[2], off, fill, list, &bad) ? 0 : 1;
        if (*flag) {
            ggmlx_cpu_fail(params, "ggml_mul_mat_id: expert id %d is outside 0 .. %lld", (int) bad,
                           (long long) p.n_exp - 1);
        }
    }
    if (params->nth > 1) {
        ggmlx_cpu_barrier(params);
    }
    if (*flag) {
        return;
    }
    const ggml_from_float_t quant =
        p.quant ? ggml_get_type_traits_cpu(ggml_get_type_traits_cpu(dst->src[0]->type)->vec_dot_type)->from_float
                : NULL;
    mi_convert(params, &p, dst->src[1], list, conv, quant, gather);
    if (params->nth > 1) {
        ggmlx_cpu_barrier(params);
    }

    /* units: per active expert, its blocks of weight rows x blocks of pairs (pairs fastest, so a
     * thread's block of weight rows stays in cache across them) */
    const struct mi_ctx c = { &p, dst->src[0], dst, list, conv, tile };
    const int64_t n_chunks = mi_ceil_div(p.N, p.n_chunk);
    int64_t total = 0;
    for (int64_t x = 0; x < p.n_exp; x++) {
        total += n_chunks * mi_ceil_div(off[x + 1] - off[x], MI_MB);
    }
    int64_t u0, u1;
    ggmlx_cpu_split_rows(params, total, &u0, &u1);
    int64_t u = 0;
    for (int64_t x = 0; x < p.n_exp && u < u1; x++) {
        const int64_t cnt = off[x + 1] - off[x];
        const int64_t m_chunks = mi_ceil_div(cnt, MI_MB);
        const int64_t n_units = n_chunks * m_chunks;
        if (u + n_units <= u0) {
            u += n_units;
            continue;
        }
        for (int64_t k = 0; k < n_units; k++, u++) {
            if (u < u0 || u >= u1) {
                continue;
            }
            const int64_t n0 = (k / m_chunks) * p.n_chunk;
            const int64_t g0 = off[x] + (k % m_chunks) * MI_MB;
            mi_tile(&c, x, n0, mi_min(p.N, n0 + p.n_chunk), g0, mi_min(off[x + 1], g0 + MI_MB));
        }
    }
}

/* res[:, e, t] = a[:, e, t] + b[:, ids[e, t]] */
void ggmlx_cpu_add_id(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a   = dst->src[0];
    const struct ggml_tensor * b   = dst->src[1];
    const struct ggml_tensor * ids = dst->src[2];
    const int64_t ne0 = a->ne[0], ne1 = a->ne[1];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ne1 * a->ne[2], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = r / ne1;
        const int32_t x = *(const int32_t *) ((const char *) ids->data + i1 * ids->nb[0] + i2 * ids->nb[1]);
        if (x < 0 || x >= b->ne[1]) {
            ggmlx_cpu_fail(params, "ggml_add_id: id %d is outside 0 .. %lld", (int) x, (long long) b->ne[1] - 1);
            return;
        }
        const char * sa = (const char *) a->data + i1 * a->nb[1] + i2 * a->nb[2];
        const char * sb = (const char *) b->data + x * b->nb[1];
        char       * d  = (char *) dst->data + i1 * dst->nb[1] + i2 * dst->nb[2];
        for (int64_t i = 0; i < ne0; i++) {
            *(float *) (d + i * dst->nb[0]) = *(const float *) (sa + i * a->nb[0]) + *(const float *) (sb + i * b->nb[0]);
        }
    }
}
