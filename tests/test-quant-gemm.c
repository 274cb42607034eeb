/*
 * test-quant-gemm.c -- ggmlx_qgemm (the quantized batched GEMM) against a double-precision
 * product computed here from the block formats' definitions, for every supported weight type
 * and every kernel path (GGMLX_MATMUL_KERNEL), with odd shapes and padded strides.
 *
 * The weights are random bytes (every bit pattern is a valid block) with random but sane
 * half-precision scales; the activations are random int8 values with random scales, as a
 * quantizer would produce.
 */
#include "ggml-math.h"
#include "quant/qgemm-impl.h"
#include "quant/qgemm.h"
#include "quant/quant-blocks.h"
#include "quant/quant-tables.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- random numbers ----------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static double rng_uniform(double lo, double hi) { return lo + (hi - lo) * (double) (rng_next() >> 11) * 0x1p-53; }

static void rng_seed(void) {
    const char * s = getenv("GGMLX_TEST_SEED");
    rng_state = s != NULL ? strtoull(s, NULL, 10) : 12345;
    cr_log_info("seed %llu", (unsigned long long) rng_state);
}

/* ---- the formats, as written in their definitions ------------------------------------------------- */

struct fmt {
    enum ggml_type type;
    int qk;            /* elements per block */
    size_t bsize;      /* bytes per block */
    enum ggml_type bt; /* the activations' type */
};

static const struct fmt k_fmts[] = {
    { GGML_TYPE_Q4_0, 32, sizeof(block_q4_0), GGML_TYPE_Q8_0 },
    { GGML_TYPE_Q4_1, 32, sizeof(block_q4_1), GGML_TYPE_Q8_1 },
    { GGML_TYPE_Q5_0, 32, sizeof(block_q5_0), GGML_TYPE_Q8_0 },
    { GGML_TYPE_Q5_1, 32, sizeof(block_q5_1), GGML_TYPE_Q8_1 },
    { GGML_TYPE_Q8_0, 32, sizeof(block_q8_0), GGML_TYPE_Q8_0 },
    { GGML_TYPE_IQ4_NL, 32, sizeof(block_iq4_nl), GGML_TYPE_Q8_0 },
    { GGML_TYPE_Q2_K, 256, sizeof(block_q2_K), GGML_TYPE_Q8_K },
    { GGML_TYPE_Q3_K, 256, sizeof(block_q3_K), GGML_TYPE_Q8_K },
    { GGML_TYPE_Q4_K, 256, sizeof(block_q4_K), GGML_TYPE_Q8_K },
    { GGML_TYPE_Q5_K, 256, sizeof(block_q5_K), GGML_TYPE_Q8_K },
    { GGML_TYPE_Q6_K, 256, sizeof(block_q6_K), GGML_TYPE_Q8_K },
    { GGML_TYPE_IQ4_XS, 256, sizeof(block_iq4_xs), GGML_TYPE_Q8_K },
};

static const struct fmt * fmt_of(enum ggml_type t) {
    for (size_t i = 0; i < sizeof k_fmts / sizeof k_fmts[0]; i++) {
        if (k_fmts[i].type == t) {
            return &k_fmts[i];
        }
    }
    return NULL;
}

static double half(ggmlx_half h) { return ggmlx_fp16_to_fp32(h); }

static ggmlx_half rand_half(double lo, double hi, bool any_sign) {
    double v = rng_uniform(lo, hi);
    if (any_sign && (rng_next() & 1)) {
        v = -v;
    }
    return ggmlx_fp32_to_fp16((float) v);
}

/* a block of random bytes whose scale fields are then made sane */
static void rand_block(enum ggml_type t, void * blk, size_t bsize) {
    uint8_t * p = blk;
    for (size_t i = 0; i < bsize; i++) {
        p[i] = (uint8_t) rng_next();
    }
    switch (t) {
        case GGML_TYPE_Q4_0: ((block_q4_0 *) blk)->d = rand_half(0.001, 0.1, true); break;
        case GGML_TYPE_Q5_0: ((block_q5_0 *) blk)->d = rand_half(0.001, 0.1, true); break;
        case GGML_TYPE_Q8_0: ((block_q8_0 *) blk)->d = rand_half(0.0001, 0.01, true); break;
        case GGML_TYPE_IQ4_NL: ((block_iq4_nl *) blk)->d = rand_half(0.0001, 0.01, true); break;
        case GGML_TYPE_Q4_1:
            ((block_q4_1 *) blk)->d = rand_half(0.001, 0.1, false);
            ((block_q4_1 *) blk)->m = rand_half(0.01, 1.0, true);
            break;
        case GGML_TYPE_Q5_1:
            ((block_q5_1 *) blk)->d = rand_half(0.001, 0.1, false);
            ((block_q5_1 *) blk)->m = rand_half(0.01, 1.0, true);
            break;
        case GGML_TYPE_Q2_K:
            ((block_q2_K *) blk)->d = rand_half(0.001, 0.1, false);
            ((block_q2_K *) blk)->dmin = rand_half(0.001, 0.1, false);
            break;
        case GGML_TYPE_Q3_K: ((block_q3_K *) blk)->d = rand_half(0.001, 0.1, true); break;
        case GGML_TYPE_Q4_K:
            ((block_q4_K *) blk)->d = rand_half(0.0001, 0.01, false);
            ((block_q4_K *) blk)->dmin = rand_half(0.0001, 0.01, false);
            break;
        case GGML_TYPE_Q5_K:
            ((block_q5_K *) blk)->d = rand_half(0.0001, 0.01, false);
            ((block_q5_K *) blk)->dmin = rand_half(0.0001, 0.01, false);
            break;
        case GGML_TYPE_Q6_K: ((block_q6_K *) blk)->d = rand_half(0.00001, 0.001, true); break;
        case GGML_TYPE_IQ4_XS: ((block_iq4_xs *) blk)->d = rand_half(0.00001, 0.001, true); break;
        default: break;
    }
}

static int nibble32(const uint8_t * qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; }

/* element e (< qk) of one block of type t */
static double deq(enum ggml_type t, const void * blk, int e) {
    switch (t) {
        case GGML_TYPE_Q4_0: {
            const block_q4_0 * x = blk;
            return (nibble32(x->qs, e) - 8) * half(x->d);
        }
        case GGML_TYPE_Q4_1: {
            const block_q4_1 * x = blk;
            return nibble32(x->qs, e) * half(x->d) + half(x->m);
        }
        case GGML_TYPE_Q5_0: {
            const block_q5_0 * x = blk;
            const int hb = (x->qh[e / 8] >> (e % 8)) & 1;
            return ((nibble32(x->qs, e) | (hb << 4)) - 16) * half(x->d);
        }
        case GGML_TYPE_Q5_1: {
            const block_q5_1 * x = blk;
            const int hb = (x->qh[e / 8] >> (e % 8)) & 1;
            return (nibble32(x->qs, e) | (hb << 4)) * half(x->d) + half(x->m);
        }
        case GGML_TYPE_Q8_0: {
            const block_q8_0 * x = blk;
            return x->qs[e] * half(x->d);
        }
        case GGML_TYPE_IQ4_NL: {
            const block_iq4_nl * x = blk;
            return ggmlx_kvalues_iq4nl[nibble32(x->qs, e)] * half(x->d);
        }
        case GGML_TYPE_Q2_K: {
            const block_q2_K * x = blk;
            const int q = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const int sc = x->scales[e / 16];
            return half(x->d) * (sc & 15) * q - half(x->dmin) * (sc >> 4);
        }
        case GGML_TYPE_Q3_K: {
            const block_q3_K * x = blk;
            const int q = ((x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) -
                          (((x->hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
            const int s = e / 16;
            const int lo = s < 8 ? x->scales[s] & 15 : x->scales[s - 8] >> 4;
            const int hi = (x->scales[8 + s % 4] >> (2 * (s / 4))) & 3;
            return half(x->d) * ((lo | (hi << 4)) - 32) * q;
        }
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K: {
            const bool five = t == GGML_TYPE_Q5_K;
            const block_q4_K * x4 = blk;
            const block_q5_K * x5 = blk;
            const uint8_t * sc = five ? x5->scales : x4->scales;
            const uint8_t * qs = five ? x5->qs : x4->qs;
            const int c = e / 64, l = e % 32, hi = (e % 64) / 32, j = e / 32;
            int q = hi ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
            if (five) {
                q |= ((x5->qh[l] >> (2 * c + hi)) & 1) << 4;
            }
            int s, mn;
            if (j < 4) {
                s = sc[j] & 63;
                mn = sc[j + 4] & 63;
            } else {
                s = (sc[j + 4] & 15) | ((sc[j - 4] >> 6) << 4);
                mn = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
            }
            const double d = half(five ? x5->d : x4->d), dmin = half(five ? x5->dmin : x4->dmin);
            return d * s * q - dmin * mn;
        }
        case GGML_TYPE_Q6_K: {
            const block_q6_K * x = blk;
            const int h = e / 128, quarter = (e % 128) / 32, l = e % 32;
            const uint8_t * ql = x->ql + 64 * h;
            const uint8_t * qh = x->qh + 32 * h;
            const int low = quarter == 0 ? ql[l] & 15 : quarter == 1 ? ql[l + 32] & 15 : quarter == 2 ? ql[l] >> 4
                                                                                                        : ql[l + 32] >> 4;
            const int q = (low | (((qh[l] >> (2 * quarter)) & 3) << 4)) - 32;
            return half(x->d) * x->scales[e / 16] * q;
        }
        case GGML_TYPE_IQ4_XS: {
            const block_iq4_xs * x = blk;
            const int g = e / 32;
            const int ls = ((x->scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((x->scales_h >> (2 * g)) & 3) << 4);
            return half(x->d) * (ls - 32) * ggmlx_kvalues_iq4nl[nibble32(x->qs + 16 * g, e % 32)];
        }
        case GGML_TYPE_Q8_1: {
            const block_q8_1 * x = blk;
            return x->qs[e] * half(x->d);
        }
        case GGML_TYPE_Q8_K: {
            const block_q8_K * x = blk;
            return x->qs[e] * (double) x->d;
        }
        default: return NAN;
    }
}

static size_t act_block_size(enum ggml_type bt) {
    return bt == GGML_TYPE_Q8_K ? sizeof(block_q8_K) : bt == GGML_TYPE_Q8_1 ? sizeof(block_q8_1) : sizeof(block_q8_0);
}

static int act_qk(enum ggml_type bt) { return bt == GGML_TYPE_Q8_K ? QK_K : 32; }

/* a random activation block as a quantizer would make it (int8 values in -127..127, consistent sums) */
static void rand_act_block(enum ggml_type bt, void * blk) {
    int8_t qs[QK_K];
    const int qk = act_qk(bt);
    for (int i = 0; i < qk; i++) {
        qs[i] = (int8_t) ((int) (rng_next() % 255) - 127);
    }
    if (bt == GGML_TYPE_Q8_K) {
        block_q8_K * x = blk;
        x->d = (float) rng_uniform(0.001, 0.05);
        memcpy(x->qs, qs, QK_K);
        for (int g = 0; g < QK_K / 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++) {
                s += qs[16 * g + i];
            }
            x->bsums[g] = (int16_t) s;
        }
    } else if (bt == GGML_TYPE_Q8_1) {
        block_q8_1 * x = blk;
        x->d = rand_half(0.001, 0.05, true);
        int s = 0;
        for (int i = 0; i < 32; i++) {
            s += qs[i];
        }
        x->s = ggmlx_fp32_to_fp16((float) (half(x->d) * s));
        memcpy(x->qs, qs, 32);
    } else {
        block_q8_0 * x = blk;
        x->d = rand_half(0.001, 0.05, true);
        memcpy(x->qs, qs, 32);
    }
}

/* ---- the check ---------------------------------------------------------------------------------- */

#define SENTINEL 12345.5f

/*
 * c = a * b^T through ggmlx_qgemm with padded strides, against the double product; padding
 * of c must stay untouched. The tolerance is relative to sum |a_e * b_e| per output (a kernel
 * bug is of the order of that sum; float rounding is far below 1e-4 of it).
 */
typedef void (*act_hook)(void * blk, enum ggml_type bt);

static void check_product_hooked(enum ggml_type t, int64_t n, int64_t m, int64_t k, act_hook hook) {
    const struct fmt * f = fmt_of(t);
    cr_assert_not_null(f);
    const size_t arow = (size_t) (k / f->qk) * f->bsize, brow = (size_t) (k / act_qk(f->bt)) * act_block_size(f->bt);
    /* padded strides keep the blocks' natural alignment (2 bytes; 4 for Q8_K's float), as tensors do */
    const size_t lda = arow + 6, ldb = brow + 12, ldc = (size_t) n + 3;
    char * a = malloc(lda * (size_t) n);
    char * b = malloc(ldb * (size_t) m);
    float * c = malloc(sizeof(float) * ldc * (size_t) m);
    double * ad = malloc(sizeof(double) * (size_t) (n * k));
    double * bd = malloc(sizeof(double) * (size_t) (m * k));
    cr_assert(a && b && c && ad && bd);
    for (int64_t i = 0; i < n; i++) {
        for (int64_t blk = 0; blk < k / f->qk; blk++) {
            void * x = a + (size_t) i * lda + (size_t) blk * f->bsize;
            rand_block(t, x, f->bsize);
            for (int e = 0; e < f->qk; e++) {
                ad[i * k + blk * f->qk + e] = deq(t, x, e);
            }
        }
    }
    const int bqk = act_qk(f->bt);
    for (int64_t j = 0; j < m; j++) {
        for (int64_t blk = 0; blk < k / bqk; blk++) {
            void * x = b + (size_t) j * ldb + (size_t) blk * act_block_size(f->bt);
            rand_act_block(f->bt, x);
            if (hook != NULL && blk == 0) {
                hook(x, f->bt);
            }
            for (int e = 0; e < bqk; e++) {
                bd[j * k + blk * bqk + e] = deq(f->bt, x, e);
            }
        }
    }
    for (size_t i = 0; i < ldc * (size_t) m; i++) {
        c[i] = SENTINEL;
    }
    cr_assert(ggmlx_qgemm(t, k, a, lda, n, b, ldb, m, c, ldc), "%s: qgemm declined n=%lld m=%lld k=%lld",
              ggml_type_name(t), (long long) n, (long long) m, (long long) k);
    for (int64_t j = 0; j < m; j++) {
        for (int64_t i = 0; i < n; i++) {
            double ref = 0.0, mag = 0.0;
            for (int64_t e = 0; e < k; e++) {
                ref += ad[i * k + e] * bd[j * k + e];
                mag += fabs(ad[i * k + e] * bd[j * k + e]);
            }
            const double got = c[(size_t) j * ldc + (size_t) i];
            cr_assert(fabs(got - ref) <= 1e-4 * mag + 1e-30, "%s n=%lld m=%lld k=%lld: c[%lld, %lld] = %.9g, want %.9g",
                      ggml_type_name(t), (long long) n, (long long) m, (long long) k, (long long) j, (long long) i,
                      got, ref);
        }
        for (size_t i = (size_t) n; i < ldc; i++) {
            cr_assert_eq(c[(size_t) j * ldc + i], SENTINEL, "padding of c written at row %lld", (long long) j);
        }
    }
    free(a);
    free(b);
    free(c);
    free(ad);
    free(bd);
}

static void check_product(enum ggml_type t, int64_t n, int64_t m, int64_t k) { check_product_hooked(t, n, m, k, NULL); }

static void check_type(enum ggml_type t) {
    rng_seed();
    static const int64_t sizes[] = { 1, 3, 17, 33 };
    const int64_t qk = fmt_of(t)->qk;
    /* 3 * 32 = 96 leaves a part of the 64-byte k chunks the panel is built in */
    const int64_t ks[] = { qk, 3 * qk, 512, 4096 };
    for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++) {
        for (size_t in = 0; in < 4; in++) {
            for (size_t im = 0; im < 4; im++) {
                /* the longest rows only with the larger shapes, to keep the double reference quick */
                if (ks[ik] == 4096 && (sizes[in] < 17 || sizes[im] < 17) && !(sizes[in] == 1 && sizes[im] == 33)) {
                    continue;
                }
                check_product(t, sizes[in], sizes[im], ks[ik]);
            }
        }
    }
}

static bool cpu_has_vnni(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c");
#else
    return false;
#endif
}

static void use_portable(void) { setenv("GGMLX_MATMUL_KERNEL", "portable", 1); }

static void use_avx512(void) {
    if (!cpu_has_vnni()) {
        cr_skip_test("no AVX-512 VNNI on this CPU: the avx512 path is not tested here");
    }
    setenv("GGMLX_MATMUL_KERNEL", "avx512", 1);
}

/* the AMX kernel where the CPU and OS allow it (checked as the library checks: CPUID, permission, probe) */
static void use_amx(void) {
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    if (!cpu_has_vnni() || !ggmlx_qgemm_amx_available()) {
        cr_skip_test("no usable AMX-INT8 here (CPUID, the OS's permission or the probe said no): the amx path is not tested");
    }
    setenv("GGMLX_MATMUL_KERNEL", "amx", 1);
#else
    cr_skip_test("AMX is only used on x86-64 Linux");
#endif
}

#define TYPE_TESTS(name, type)                                                                                       \
    Test(quant_gemm, name##_portable_matches_reference) {                                                            \
        use_portable();                                                                                               \
        check_type(type);                                                                                             \
    }                                                                                                                 \
    Test(quant_gemm, name##_avx512_matches_reference) {                                                              \
        use_avx512();                                                                                                 \
        check_type(type);                                                                                             \
    }                                                                                                                 \
    Test(quant_gemm, name##_amx_matches_reference) {                                                                 \
        use_amx();                                                                                                    \
        check_type(type);                                                                                             \
    }

TYPE_TESTS(q4_0, GGML_TYPE_Q4_0)
TYPE_TESTS(q4_1, GGML_TYPE_Q4_1)
TYPE_TESTS(q5_0, GGML_TYPE_Q5_0)
TYPE_TESTS(q5_1, GGML_TYPE_Q5_1)
TYPE_TESTS(q8_0, GGML_TYPE_Q8_0)
TYPE_TESTS(iq4_nl, GGML_TYPE_IQ4_NL)
TYPE_TESTS(q2_k, GGML_TYPE_Q2_K)
TYPE_TESTS(q3_k, GGML_TYPE_Q3_K)
TYPE_TESTS(q4_k, GGML_TYPE_Q4_K)
TYPE_TESTS(q5_k, GGML_TYPE_Q5_K)
TYPE_TESTS(q6_k, GGML_TYPE_Q6_K)
TYPE_TESTS(iq4_xs, GGML_TYPE_IQ4_XS)

/* ---- what it declines ----------------------------------------------------------------------------- */

static void check_declined(enum ggml_type t, int64_t k) {
    char a[4096] = { 0 }, b[4096] = { 0 };
    float c[4] = { SENTINEL, SENTINEL, SENTINEL, SENTINEL };
    cr_assert_not(ggmlx_qgemm(t, k, a, 1024, 2, b, 1024, 2, c, 2), "%s k=%lld accepted", ggml_type_name(t),
                  (long long) k);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(c[i], SENTINEL, "c written by a declined call");
    }
}

Test(quant_gemm, unsupported_types_are_declined_untouched) {
    use_portable();
    check_declined(GGML_TYPE_F32, 32);
    check_declined(GGML_TYPE_F16, 32);
    check_declined(GGML_TYPE_Q8_K, 256);
    check_declined(GGML_TYPE_Q8_1, 32);
    check_declined(GGML_TYPE_TQ2_0, 256);
    check_declined(GGML_TYPE_IQ2_XXS, 256);
}

Test(quant_gemm, partial_blocks_are_declined_untouched) {
    use_portable();
    check_declined(GGML_TYPE_Q4_0, 48);
    check_declined(GGML_TYPE_Q4_K, 128);
    check_declined(GGML_TYPE_Q6_K, 0);
}

Test(quant_gemm, empty_products_write_nothing) {
    use_portable();
    float c = SENTINEL;
    char a[18] = { 0 }, b[34] = { 0 };
    cr_assert(ggmlx_qgemm(GGML_TYPE_Q4_0, 32, a, 18, 0, b, 34, 1, &c, 1));
    cr_assert(ggmlx_qgemm(GGML_TYPE_Q4_0, 32, a, 18, 1, b, 34, 0, &c, 1));
    cr_assert_eq(c, SENTINEL);
}

/* ---- threads ------------------------------------------------------------------------------------ */

struct half_job {
    const char * a;
    size_t lda;
    int64_t n;
    const char * b;
    size_t ldb;
    int64_t m;
    float * c;
    size_t ldc;
    bool ok;
};

static void * half_job_run(void * p) {
    struct half_job * j = p;
    for (int rep = 0; rep < 4; rep++) {
        j->ok = ggmlx_qgemm(GGML_TYPE_Q4_K, 1024, j->a, j->lda, j->n, j->b, j->ldb, j->m, j->c, j->ldc);
    }
    return NULL;
}

static void threads_agree_with_one_call(void) {
    rng_seed();
    enum { N = 70, M = 29, K = 1024 };
    const size_t lda = (K / QK_K) * sizeof(block_q4_K), ldb = (K / QK_K) * sizeof(block_q8_K);
    char * a = malloc(lda * N);
    char * b = malloc(ldb * M);
    float * c1 = malloc(sizeof(float) * N * M);
    float * c2 = malloc(sizeof(float) * N * M);
    cr_assert(a && b && c1 && c2);
    for (size_t i = 0; i < N * (K / QK_K); i++) {
        rand_block(GGML_TYPE_Q4_K, a + i * sizeof(block_q4_K), sizeof(block_q4_K));
    }
    for (size_t i = 0; i < M * (K / QK_K); i++) {
        rand_act_block(GGML_TYPE_Q8_K, b + i * sizeof(block_q8_K));
    }
    cr_assert(ggmlx_qgemm(GGML_TYPE_Q4_K, K, a, lda, N, b, ldb, M, c1, N));
    struct half_job jobs[2] = {
        { a, lda, 37, b, ldb, M, c2, N, false },
        { a + 37 * lda, lda, N - 37, b, ldb, M, c2 + 37, N, false },
    };
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pthread_create(&th[i], NULL, half_job_run, &jobs[i]), 0);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        cr_assert(jobs[i].ok);
    }
    cr_assert_eq(memcmp(c1, c2, sizeof(float) * N * M), 0, "two threads on halves of n differ from one call");
    free(a);
    free(b);
    free(c1);
    free(c2);
}

Test(quant_gemm, threads_on_disjoint_rows_agree_portable) {
    use_portable();
    threads_agree_with_one_call();
}

Test(quant_gemm, threads_on_disjoint_rows_agree_avx512) {
    use_avx512();
    threads_agree_with_one_call();
}

Test(quant_gemm, threads_on_disjoint_rows_agree_amx) {
    use_amx();
    threads_agree_with_one_call();
}

/* ---- kernel names ------------------------------------------------------------------------------- */

Test(quant_gemm, avx2_request_is_left_to_vec_dot) {
#if defined(__x86_64__)
    setenv("GGMLX_MATMUL_KERNEL", "avx2", 1);
    check_declined(GGML_TYPE_Q4_0, 64);
#else
    cr_skip_test("x86 only");
#endif
}

/* an amx request gets right products whether or not this machine can run AMX (the VNNI kernel if not) */
Test(quant_gemm, amx_request_gives_right_products_anywhere) {
    if (!cpu_has_vnni()) {
        cr_skip_test("no AVX-512 VNNI on this CPU: an amx request declines here");
    }
    setenv("GGMLX_MATMUL_KERNEL", "amx", 1);
    rng_seed();
    check_product(GGML_TYPE_Q8_0, 17, 9, 512);
    check_product(GGML_TYPE_Q6_K, 17, 9, 512);
}

/* ---- activation blocks a quantizer left all zero ------------------------------------------------ */

/* upstream's Q8_K quantizer leaves bsums as they were when a block is all zero: d = 0 must win */
static void zero_block_stale_sums(void * blk, enum ggml_type bt) {
    if (bt == GGML_TYPE_Q8_K) {
        block_q8_K * x = blk;
        x->d = 0.0f;
        memset(x->qs, 0, sizeof x->qs);
        for (int g = 0; g < QK_K / 16; g++) {
            x->bsums[g] = (int16_t) (12345 - 1000 * g);
        }
    } else {
        block_q8_0 * x = blk;
        x->d = 0;
        memset(x->qs, 0, sizeof x->qs);
    }
}

static void check_zero_blocks(void) {
    rng_seed();
    static const enum ggml_type types[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q4_K,
                                            GGML_TYPE_Q6_K, GGML_TYPE_IQ4_XS };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        check_product_hooked(types[i], 17, 9, 512, zero_block_stale_sums);
    }
}

Test(quant_gemm, zero_activation_blocks_with_stale_sums_add_nothing_portable) {
    use_portable();
    check_zero_blocks();
}

Test(quant_gemm, zero_activation_blocks_with_stale_sums_add_nothing_avx512) {
    use_avx512();
    check_zero_blocks();
}

Test(quant_gemm, zero_activation_blocks_with_stale_sums_add_nothing_amx) {
    use_amx();
    check_zero_blocks();
}

/* the check runs once; asking again, from another thread too, gives the same answer */
static void * amx_answer(void * out) {
    *(bool *) out = ggmlx_qgemm_amx_available();
    return NULL;
}

Test(quant_gemm, amx_check_is_stable_across_calls_and_threads) {
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
    const bool first = ggmlx_qgemm_amx_available();
    bool other = !first;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, amx_answer, &other), 0);
    pthread_join(th, NULL);
    cr_assert_eq(other, first);
    cr_assert_eq(ggmlx_qgemm_amx_available(), first);
    cr_log_info("AMX usable here: %s", first ? "yes" : "no");
#else
    cr_skip_test("AMX is only used on x86-64 Linux");
#endif
}

/* ---- many activation rows ----------------------------------------------------------------------- */

/* more rows of b than one pass of the driver takes (1024): every pass lands in its rows of c */
static void check_long_batch(void) {
    rng_seed();
    check_product(GGML_TYPE_Q4_0, 17, 1100, 64);
    check_product(GGML_TYPE_Q4_1, 3, 1031, 32);
    check_product(GGML_TYPE_Q6_K, 17, 1100, 256);
}

Test(quant_gemm, more_activation_rows_than_one_pass_portable) {
    use_portable();
    check_long_batch();
}

Test(quant_gemm, more_activation_rows_than_one_pass_avx512) {
    use_avx512();
    check_long_batch();
}

Test(quant_gemm, more_activation_rows_than_one_pass_amx) {
    use_amx();
    check_long_batch();
}
