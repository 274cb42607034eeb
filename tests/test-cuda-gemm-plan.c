/*
 * test-cuda-gemm-plan.c -- the cuBLAS calls that cuda/mul-mat-plan.c describes for MUL_MAT
 * (linked as plain C: no CUDA toolkit or GPU needed), run through a column-major GEMM
 * emulator written here that honours transposes, leading dimensions, strides, batch counts,
 * call loops and pointer arrays, and checks that every read and write stays inside its buffer.
 * Results are compared with a double-precision mul_mat computed from ggml's definition:
 *   dst[n, m, i2, i3] = sum_k a[k, n, i2 / r2, i3 / r3] * b[k, m, i2, i3].
 * Also checked: when the plan says to convert or copy an operand first, and which API it uses.
 */
#include <criterion/criterion.h>

#include "ggml.h"
#include "mul-mat-plan.h"
#include "ggml-math.h"

#include <math.h>
#include <stdlib.h>

/* ---- host tensors with any layout --------------------------------------------------------- */

struct host_tensor {
    struct ggmlx_mm_tensor d;
    char  * data;
    size_t  size;
};

static size_t type_size(int type) {
    return type == GGML_TYPE_F32 ? 4 : 2;
}

static float load_as_float(int type, const char * p) {
    uint16_t h;
    float f;
    switch (type) {
    case GGML_TYPE_F16:  memcpy(&h, p, 2); return ggmlx_fp16_to_fp32(h);
    case GGML_TYPE_BF16: memcpy(&h, p, 2); return ggmlx_bf16_to_fp32(h);
    default:             memcpy(&f, p, 4); return f;
    }
}

static void store_float(int type, char * p, float v) {
    uint16_t h;
    switch (type) {
    case GGML_TYPE_F16:  h = ggmlx_fp32_to_fp16(v); memcpy(p, &h, 2); break;
    case GGML_TYPE_BF16: h = ggmlx_fp32_to_bf16(v); memcpy(p, &h, 2); break;
    default:             memcpy(p, &v, 4); break;
    }
}

/*
 * A tensor of shape ne stored with its dims in memory order `order` (fastest first), `pad`
 * extra elements after each run of the fastest dim and `step` elements between neighbours
 * along it. Filled with pseudo-random values.
 */
static void make_tensor(struct host_tensor * t, int type, const int64_t ne[4], const int order[4], int64_t pad,
                        int64_t step, uint32_t * seed) {
    const size_t es = type_size(type);
    t->d.type = type;
    memcpy(t->d.ne, ne, sizeof t->d.ne);
    size_t stride = es * (size_t)step;
    for (int j = 0; j < 4; j++) {
        const int d = order[j];
        t->d.nb[d] = stride;
        stride = j == 0 ? es * (size_t)(ne[d] * step + pad) : stride * (size_t)ne[d];
    }
    size_t last = 0;
    for (int d = 0; d < 4; d++) {
        last += (size_t)(ne[d] - 1) * t->d.nb[d];
    }
    t->size = last + es;
    t->data = malloc(t->size);
    cr_assert_not_null(t->data);
    memset(t->data, 0x7f, t->size); /* gaps hold large values: reading one shows */
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                    *seed = *seed * 1664525u + 1013904223u;
                    const float v = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
                    store_float(type, t->data + i0 * t->d.nb[0] + i1 * t->d.nb[1] + i2 * t->d.nb[2] + i3 * t->d.nb[3], v);
                }
}

static float at(const struct host_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return load_as_float(t->d.type, t->data + i0 * t->d.nb[0] + i1 * t->d.nb[1] + i2 * t->d.nb[2] + i3 * t->d.nb[3]);
}

/* ---- the emulated device ------------------------------------------------------------------ */

/* a buffer the emulator may touch: [base, base + size) */
struct region {
    const char * base;
    size_t       size;
};

static struct region g_regions[4];
static int           g_n_regions;

static void must_be_inside(const char * p, size_t n) {
    for (int r = 0; r < g_n_regions; r++) {
        if (p >= g_regions[r].base && p + n <= g_regions[r].base + g_regions[r].size) {
            return;
        }
    }
    cr_assert_fail("emulated cuBLAS touched memory outside every buffer");
}

static size_t cuda_type_size(int t) {
    return t == GGMLX_MM_R_32F ? 4 : 2;
}

static float load_cuda(int t, const char * p) {
    must_be_inside(p, cuda_type_size(t));
    return load_as_float(t == GGMLX_MM_R_16F ? GGML_TYPE_F16 : t == GGMLX_MM_R_16BF ? GGML_TYPE_BF16 : GGML_TYPE_F32, p);
}

/* cuBLAS's column-major GEMM with alpha 1, beta 0: C(i, j) = sum_l op(A)(i, l) op(B)(l, j) */
static void gemm(int ta, int tb, int m, int n, int k, const char * A, int at, int lda, const char * B, int bt, int ldb,
                 char * C, int ct, int ldc) {
    cr_assert(m >= 0 && n >= 0 && k >= 0);
    cr_assert(lda >= (ta == GGMLX_MM_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)), "lda %d too small", lda);
    cr_assert(ldb >= (tb == GGMLX_MM_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)), "ldb %d too small", ldb);
    cr_assert(ldc >= (m > 1 ? m : 1), "ldc %d too small", ldc);
    cr_assert_eq(ct, GGMLX_MM_R_32F);
    const size_t ea = cuda_type_size(at), eb = cuda_type_size(bt);
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            double s = 0.0;
            for (int l = 0; l < k; l++) {
                const int64_t ia = ta == GGMLX_MM_OP_N ? i + (int64_t)l * lda : l + (int64_t)i * lda;
                const int64_t ib = tb == GGMLX_MM_OP_N ? l + (int64_t)j * ldb : j + (int64_t)l * ldb;
                s += (double)load_cuda(at, A + ia * (int64_t)ea) * (double)load_cuda(bt, B + ib * (int64_t)eb);
            }
            char * pc = C + ((int64_t)i + (int64_t)j * ldc) * 4;
            must_be_inside(pc, 4);
            const float f = (float)s;
            memcpy(pc, &f, 4);
        }
    }
}

/* the conversion kernel: t's elements, contiguous in ggml order, as type `type` */
static void convert_into(const struct host_tensor * t, int type, char * out) {
    const size_t es = type_size(type);
    size_t o = 0;
    for (int64_t i3 = 0; i3 < t->d.ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->d.ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->d.ne[1]; i1++)
                for (int64_t i0 = 0; i0 < t->d.ne[0]; i0++, o += es) {
                    store_float(type, out + o, at(t, i0, i1, i2, i3));
                }
}

/* runs the plan as ops-mul-mat.cu does */
static void run_plan(const struct ggmlx_mm_plan * p, const struct host_tensor * a, const struct host_tensor * b,
                     struct host_tensor * dst) {
    char * scratch = malloc(p->scratch_size > 0 ? p->scratch_size : 1);
    cr_assert_not_null(scratch);
    g_n_regions = 0;
    const char * A = a->data;
    const char * B = b->data;
    if (p->conv_a.needed) {
        cr_assert(p->conv_a.offset + p->conv_a.size <= p->scratch_size);
        cr_assert_eq(p->conv_a.offset % GGMLX_MM_SCRATCH_ALIGN, 0);
        convert_into(a, p->conv_a.type, scratch + p->conv_a.offset);
        A = scratch + p->conv_a.offset;
        g_regions[g_n_regions++] = (struct region){ A, p->conv_a.size };
    } else {
        g_regions[g_n_regions++] = (struct region){ a->data, a->size };
    }
    if (p->conv_b.needed) {
        cr_assert(p->conv_b.offset + p->conv_b.size <= p->scratch_size);
        cr_assert_eq(p->conv_b.offset % GGMLX_MM_SCRATCH_ALIGN, 0);
        convert_into(b, p->conv_b.type, scratch + p->conv_b.offset);
        B = scratch + p->conv_b.offset;
        g_regions[g_n_regions++] = (struct region){ B, p->conv_b.size };
    } else {
        g_regions[g_n_regions++] = (struct region){ b->data, b->size };
    }
    g_regions[g_n_regions++] = (struct region){ dst->data, dst->size };
    const size_t ea = cuda_type_size(p->a_type), eb = cuda_type_size(p->b_type);

    if (p->api == GGMLX_MM_API_BATCHED) {
        cr_assert(p->ptr_offset + 3 * (size_t)p->batch * sizeof(void *) <= p->scratch_size);
        const void ** pa = (const void **)(scratch + p->ptr_offset);
        const void ** pb = pa + p->batch;
        void ** pc = (void **)(pb + p->batch);
        for (int64_t i = 0; i < p->batch; i++) { /* k_mm_pointers */
            int64_t oa, ob, oc;
            ggmlx_mm_batch_offsets(p, i, &oa, &ob, &oc);
            pa[i] = A + oa * (int64_t)ea;
            pb[i] = B + ob * (int64_t)eb;
            pc[i] = dst->data + oc * 4;
        }
        for (int64_t i = 0; i < p->batch; i++) { /* cublasGemmBatchedEx */
            gemm(p->transa, p->transb, p->m, p->n, p->k, pa[i], p->a_type, p->lda, pb[i], p->b_type, p->ldb, pc[i],
                 p->c_type, p->ldc);
        }
    } else {
        cr_assert(p->n_calls >= 1);
        for (int c = 0; c < p->n_calls; c++) {
            int64_t oa, ob, oc;
            ggmlx_mm_call_offsets(p, c, &oa, &ob, &oc);
            const int batch = p->api == GGMLX_MM_API_GEMM ? 1 : p->batch;
            for (int64_t i = 0; i < batch; i++) {
                gemm(p->transa, p->transb, p->m, p->n, p->k, A + (oa + i * p->stride_a) * (int64_t)ea, p->a_type, p->lda,
                     B + (ob + i * p->stride_b) * (int64_t)eb, p->b_type, p->ldb, dst->data + (oc + i * p->stride_c) * 4,
                     p->c_type, p->ldc);
            }
        }
    }
    free(scratch);
}

/* ---- one case ----------------------------------------------------------------------------- */

enum b_layout { B_CONTIG, B_PADDED, B_TRANSPOSED, B_PERMUTED, B_STRIDED_ELEMS };
enum a_layout { A_CONTIG, A_PADDED, A_PERMUTED23, A_STRIDED_ELEMS };

struct mm_case {
    int           atype;
    int64_t       K, N, M, a2, a3, b2, b3;
    enum a_layout al;
    enum b_layout bl;
};

static int g_api_seen[3];

static void run_case(const struct mm_case * c, uint32_t seed) {
    struct host_tensor a, b, dst;
    const int64_t ane[4] = { c->K, c->N, c->a2, c->a3 };
    const int64_t bne[4] = { c->K, c->M, c->b2, c->b3 };
    const int64_t dne[4] = { c->N, c->M, c->b2, c->b3 };
    static const int o0123[4] = { 0, 1, 2, 3 }, o0132[4] = { 0, 1, 3, 2 }, o1023[4] = { 1, 0, 2, 3 },
                     o0213[4] = { 0, 2, 1, 3 };
    switch (c->al) {
    case A_CONTIG:        make_tensor(&a, c->atype, ane, o0123, 0, 1, &seed); break;
    case A_PADDED:        make_tensor(&a, c->atype, ane, o0123, 3, 1, &seed); break;
    case A_PERMUTED23:    make_tensor(&a, c->atype, ane, o0132, 0, 1, &seed); break;
    case A_STRIDED_ELEMS: make_tensor(&a, c->atype, ane, o0123, 0, 2, &seed); break;
    }
    switch (c->bl) {
    case B_CONTIG:        make_tensor(&b, GGML_TYPE_F32, bne, o0123, 0, 1, &seed); break;
    case B_PADDED:        make_tensor(&b, GGML_TYPE_F32, bne, o0123, 5, 1, &seed); break;
    case B_TRANSPOSED:    make_tensor(&b, GGML_TYPE_F32, bne, o1023, 0, 1, &seed); break;
    case B_PERMUTED:      make_tensor(&b, GGML_TYPE_F32, bne, o0213, 0, 1, &seed); break;
    case B_STRIDED_ELEMS: make_tensor(&b, GGML_TYPE_F32, bne, o0123, 1, 3, &seed); break;
    }
    make_tensor(&dst, GGML_TYPE_F32, dne, o0123, 0, 1, &seed);
    memset(dst.data, 0xff, dst.size); /* NaNs: an element never written shows */

    struct ggmlx_mm_plan p;
    char why[256] = "";
    cr_assert(ggmlx_mm_plan_make(&a.d, &b.d, &dst.d, &p, why, sizeof why), "no plan: %s", why);
    cr_assert(p.api >= 0 && p.api <= 2);
    g_api_seen[p.api]++;

    /* what has to be converted or copied first */
    /* (a single column of b with strided elements is read as a transposed 1 x K matrix) */
    const bool b_readable = c->atype == GGML_TYPE_F32 &&
                            (c->bl == B_CONTIG || c->bl == B_PADDED || c->bl == B_TRANSPOSED || c->bl == B_PERMUTED ||
                             (c->bl == B_STRIDED_ELEMS && c->M == 1));
    cr_assert_eq(p.conv_b.needed, !b_readable, "conv_b %d for a type %d, b layout %d", p.conv_b.needed, c->atype, c->bl);
    if (p.conv_b.needed) {
        cr_assert_eq(p.conv_b.type, c->atype, "b is converted to a's type");
    }
    cr_assert_eq(p.conv_a.needed, c->al == A_STRIDED_ELEMS);
    if (c->atype == GGML_TYPE_F32) {
        cr_assert_eq(p.a_type, GGMLX_MM_R_32F);
    } else {
        cr_assert_eq(p.a_type, c->atype == GGML_TYPE_F16 ? GGMLX_MM_R_16F : GGMLX_MM_R_16BF);
    }
    cr_assert_eq(p.b_type, p.a_type);
    cr_assert_eq(p.c_type, GGMLX_MM_R_32F);
    cr_assert_eq(p.compute_type, GGMLX_MM_COMPUTE_32F);
    if (c->bl == B_TRANSPOSED && c->atype == GGML_TYPE_F32 && c->M > 1) {
        cr_assert_eq(p.transb, GGMLX_MM_OP_T, "a transposed view of b is read transposed, not copied");
    }

    run_plan(&p, &a, &b, &dst);

    const int64_t r2 = c->b2 / c->a2, r3 = c->b3 / c->a3;
    for (int64_t i3 = 0; i3 < c->b3; i3++)
        for (int64_t i2 = 0; i2 < c->b2; i2++)
            for (int64_t m = 0; m < c->M; m++)
                for (int64_t n = 0; n < c->N; n++) {
                    double want = 0.0, mag = 0.0;
                    for (int64_t k = 0; k < c->K; k++) {
                        double bv = at(&b, k, m, i2, i3);
                        if (c->atype != GGML_TYPE_F32) {
                            /* b rounded to the weights' type: the documented cost of the tensor-core path */
                            char tmp[4];
                            store_float(c->atype, tmp, (float)bv);
                            bv = load_as_float(c->atype, tmp);
                        }
                        const double t = (double)at(&a, k, n, i2 / r2, i3 / r3) * bv;
                        want += t;
                        mag += fabs(t);
                    }
                    const float got = at(&dst, n, m, i2, i3);
                    cr_assert(fabs((double)got - want) <= 1e-6 * mag + 1e-30,
                              "dst[%lld, %lld, %lld, %lld] = %.9g, want %.9g (K %lld N %lld M %lld a %lldx%lld b %lldx%lld,"
                              " a type %d layouts %d/%d, api %d)",
                              (long long)n, (long long)m, (long long)i2, (long long)i3, got, want, (long long)c->K,
                              (long long)c->N, (long long)c->M, (long long)c->a2, (long long)c->a3, (long long)c->b2,
                              (long long)c->b3, c->atype, c->al, c->bl, p.api);
                }
    free(a.data);
    free(b.data);
    free(dst.data);
}

/* ---- sweeps ------------------------------------------------------------------------------- */

static const int k_types[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

Test(cuda_gemm_plan, layouts_and_broadcasts) {
    /* (a2, a3, b2, b3): none, dim 2, dim 3, both, a single a for all, mixed */
    static const int64_t batches[][4] = { { 1, 1, 1, 1 }, { 1, 1, 3, 2 }, { 2, 1, 4, 1 }, { 2, 3, 4, 6 },
                                          { 3, 2, 3, 2 }, { 1, 2, 2, 4 }, { 2, 1, 2, 5 }, { 1, 1, 1, 7 },
                                          { 2, 2, 6, 2 } };
    static const int64_t kn_m[][3] = { { 1, 1, 1 }, { 7, 5, 3 }, { 33, 4, 2 }, { 32, 16, 1 } };
    uint32_t seed = 1;
    memset(g_api_seen, 0, sizeof g_api_seen);
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof kn_m / sizeof kn_m[0]; s++)
            for (size_t bt = 0; bt < sizeof batches / sizeof batches[0]; bt++)
                for (int al = A_CONTIG; al <= A_STRIDED_ELEMS; al++)
                    for (int bl = B_CONTIG; bl <= B_STRIDED_ELEMS; bl++) {
                        const struct mm_case c = { k_types[t], kn_m[s][0], kn_m[s][1], kn_m[s][2],
                                                   batches[bt][0], batches[bt][1], batches[bt][2], batches[bt][3],
                                                   (enum a_layout)al, (enum b_layout)bl };
                        run_case(&c, seed++);
                    }
    /* every API form was exercised */
    cr_assert(g_api_seen[GGMLX_MM_API_GEMM] > 0);
    cr_assert(g_api_seen[GGMLX_MM_API_STRIDED] > 0);
    cr_assert(g_api_seen[GGMLX_MM_API_BATCHED] > 0);
}

Test(cuda_gemm_plan, sizes) {
    static const int64_t kn_m[][3] = { { 4097, 3, 2 }, { 1, 4097, 1 }, { 16, 1, 4097 }, { 1023, 33, 31 },
                                       { 96, 65, 33 }, { 257, 2, 65 }, { 2, 300, 300 } };
    uint32_t seed = 77;
    for (int t = 0; t < 3; t++)
        for (size_t s = 0; s < sizeof kn_m / sizeof kn_m[0]; s++) {
            const struct mm_case c = { k_types[t], kn_m[s][0], kn_m[s][1], kn_m[s][2], 1, 1, 1, 1, A_CONTIG, B_CONTIG };
            run_case(&c, seed++);
            const struct mm_case d = { k_types[t], kn_m[s][0], kn_m[s][1], kn_m[s][2], 1, 1, 2, 1, A_PADDED, B_TRANSPOSED };
            run_case(&d, seed++);
        }
}

Test(cuda_gemm_plan, api_choices) {
    struct host_tensor a, b, d;
    uint32_t seed = 5;
    static const int o[4] = { 0, 1, 2, 3 };
    struct ggmlx_mm_plan p;
    /* a single matrix times a batch of contiguous b: all columns of one GEMM */
    make_tensor(&a, GGML_TYPE_F16, (const int64_t[4]){ 8, 4, 1, 1 }, o, 0, 1, &seed);
    make_tensor(&b, GGML_TYPE_F32, (const int64_t[4]){ 8, 3, 5, 2 }, o, 0, 1, &seed);
    make_tensor(&d, GGML_TYPE_F32, (const int64_t[4]){ 4, 3, 5, 2 }, o, 0, 1, &seed);
    cr_assert(ggmlx_mm_plan_make(&a.d, &b.d, &d.d, &p, NULL, 0));
    cr_assert_eq(p.api, GGMLX_MM_API_GEMM);
    cr_assert_eq(p.n, 30);
    cr_assert(p.conv_b.needed);
    cr_assert_eq(p.conv_b.size, 8 * 3 * 5 * 2 * 2);
    cr_assert(p.scratch_size >= p.conv_b.size);
    free(a.data), free(b.data), free(d.data);
    /* no broadcast: one strided batch */
    make_tensor(&a, GGML_TYPE_F32, (const int64_t[4]){ 8, 4, 5, 2 }, o, 0, 1, &seed);
    make_tensor(&b, GGML_TYPE_F32, (const int64_t[4]){ 8, 3, 5, 2 }, o, 0, 1, &seed);
    make_tensor(&d, GGML_TYPE_F32, (const int64_t[4]){ 4, 3, 5, 2 }, o, 0, 1, &seed);
    cr_assert(ggmlx_mm_plan_make(&a.d, &b.d, &d.d, &p, NULL, 0));
    cr_assert_eq(p.api, GGMLX_MM_API_STRIDED);
    cr_assert_eq(p.batch, 10);
    cr_assert_eq(p.n_calls, 1);
    cr_assert_not(p.conv_b.needed);
    cr_assert_eq(p.scratch_size, 0);
    free(a.data), free(b.data), free(d.data);
}

Test(cuda_gemm_plan, refusals) {
    struct ggmlx_mm_tensor a = { GGML_TYPE_F32, { 8, 4, 1, 1 }, { 4, 32, 128, 128 } };
    struct ggmlx_mm_tensor b = { GGML_TYPE_F32, { 8, 3, 1, 1 }, { 4, 32, 96, 96 } };
    struct ggmlx_mm_tensor d = { GGML_TYPE_F32, { 4, 3, 1, 1 }, { 4, 16, 48, 48 } };
    struct ggmlx_mm_plan p;
    char why[128];
    cr_assert(ggmlx_mm_plan_make(&a, &b, &d, &p, why, sizeof why));
    struct ggmlx_mm_tensor x = a;
    x.type = GGML_TYPE_Q4_0;
    cr_assert_not(ggmlx_mm_plan_make(&x, &b, &d, &p, why, sizeof why));
    x = b, x.ne[0] = 9;
    cr_assert_not(ggmlx_mm_plan_make(&a, &x, &d, &p, why, sizeof why), "K differs");
    x = d, x.type = GGML_TYPE_F16;
    cr_assert_not(ggmlx_mm_plan_make(&a, &b, &x, &p, why, sizeof why), "dst must be F32");
    x = d, x.nb[0] = 8;
    cr_assert_not(ggmlx_mm_plan_make(&a, &b, &x, &p, why, sizeof why), "dst element stride");
    x = b, x.ne[2] = 3;
    struct ggmlx_mm_tensor a2 = a;
    a2.ne[2] = 2;
    struct ggmlx_mm_tensor d2 = d;
    d2.ne[2] = 3;
    cr_assert_not(ggmlx_mm_plan_make(&a2, &x, &d2, &p, why, sizeof why), "3 is no multiple of 2");
    /* K past INT_MAX cannot be one cuBLAS call */
    struct ggmlx_mm_tensor big_a = { GGML_TYPE_F32, { (int64_t)1 << 31, 1, 1, 1 }, { 4, (size_t)1 << 33, (size_t)1 << 33, (size_t)1 << 33 } };
    struct ggmlx_mm_tensor big_b = { GGML_TYPE_F32, { (int64_t)1 << 31, 1, 1, 1 }, { 4, (size_t)1 << 33, (size_t)1 << 33, (size_t)1 << 33 } };
    struct ggmlx_mm_tensor big_d = { GGML_TYPE_F32, { 1, 1, 1, 1 }, { 4, 4, 4, 4 } };
    cr_assert_not(ggmlx_mm_plan_make(&big_a, &big_b, &big_d, &p, why, sizeof why));
    cr_assert(strlen(why) > 0);
    cr_assert_not(ggmlx_mm_plan_make(NULL, &b, &d, &p, why, sizeof why));
}
