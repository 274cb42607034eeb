/*
 * ops-matmul.c -- MUL_MAT kernel: dst[n, m] = sum_k a[k, n] * b[k, m], batched over dims 2, 3
 * with a broadcast (b's batch i12 uses a's batch i12 / (B2 / A2), likewise for dim 3).
 *
 * Three paths, chosen by the shapes of the two sides:
 *  - GEMM (b has MM_DOT_M = 4 rows or more and a has MM_DOT_N = 8 or more): operands are packed
 *    into F32 panels in the per-thread scratch (converting F16/BF16 and gathering any strides on
 *    the way), then a register-tiled micro-kernel computes 32 (n) x 12 (m) blocks of dst.
 *    Blocking: KC k-values per pass; up to MC rows of b packed per block (it stays in L2 and is
 *    packed once per pass of a unit); each 32-row micro-panel of a is packed once per b block and
 *    stays close (L2) while it meets every 12-row micro-panel of the block; the AVX-512 kernel
 *    prefetches its dst block while it computes.
 *  - DOT (otherwise: b has 1-3 rows or a has 1-7): rows of the big side are converted if needed
 *    and dotted with the few rows of the small side.
 *  - GEMV (a case of DOT: b is the small side, one column per unit, a's rows contiguous): four
 *    rows of a per kernel call share each load of the vector, prefetched, converting F16/BF16 in
 *    registers; rows split between threads.
 * Work is split across threads by output blocks: units of (batch, n range, m range).
 *
 * Micro-kernels exist as portable C (auto-vectorised), AVX2+FMA and AVX-512, picked at run time
 * with __builtin_cpu_supports. GGMLX_MATMUL_KERNEL=portable|avx2|avx512 forces one (an ISA the
 * CPU lacks falls back to the best it has), so tests can check that every path agrees.
 */
#include "cpu-ops.h"
#include "ggml-math.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>
#    define MM_X86 1
#else
#    define MM_X86 0
#endif

#define MM_NR 32  /* dst elements along n (a's rows) per micro-tile */
#define MM_MR 12  /* dst elements along m (b's rows) per micro-tile */
/*
 * k per packed block: a 32 x KC micro-panel is 64 KiB (L2, read at 2 vectors per 24 FMAs). A long
 * kc matters more than an L1-sized panel: each pass adds into dst again (its 12 columns of a
 * micro-tile lie far apart), and 512 measured ~25% faster than 256 on the AVX-512 machine.
 */
#define MM_KC 512
#define MM_MC 528 /* most b rows per packed block (a multiple of MM_MR): 1 MiB at KC 512, in L2 */

/* the DOT path takes products where one side has fewer rows than these */
#define MM_DOT_M 4
#define MM_DOT_N 8

#define MM_ALIGN 64

static int64_t mm_min(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t mm_max(int64_t x, int64_t y) { return x > y ? x : y; }
static int64_t mm_ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }
static int64_t mm_round_up(int64_t x, int64_t y) { return mm_ceil_div(x, y) * y; }

/* ---- instruction-set variants -------------------------------------------------------------- */

/*
 * A micro-kernel multiplies a packed a micro-panel A ([kc][32]) by a packed b micro-panel B
 * ([kc][12]) into the 32 x 12 block at C (C[j * ldc + i] for n offset i, m offset j), storing or
 * (accumulate != 0) adding.
 */
typedef void (*mm_kernel_fn)(int64_t kc, const float * A, const float * B, float * C, int64_t ldc, int accumulate);
typedef float (*mm_dot_fn)(int64_t n, const float * x, const float * y);
typedef void (*mm_cvt_fn)(const uint16_t * x, float * y, int64_t n);
/* dot of n F16 (or BF16) values with n F32 values, converting on the fly */
typedef float (*mm_dot_half_fn)(int64_t n, const uint16_t * x, const float * y);

/*
 * Packs rows into a micro-panel: panel[k * width + r] = rows[r][k] as F32 for r < n_rows and
 * k < kc, zeros for n_rows <= r < width. Rows are contiguous (element stride = type size).
 * Returns false when it cannot (the caller then packs element by element).
 */
typedef bool (*mm_pack_fn)(const char * const * rows, int n_rows, enum ggml_type type, int64_t kc, int width,
                           float * panel);

/*
 * Matrix-vector: out[r] = dot(rows[r][0 .. K), y) for r < 4, rows contiguous (F32, F16 or BF16
 * as type says). Four rows at a time share each load of y and keep eight sums in flight, so the
 * weights stream from memory once at the bandwidth the core gets.
 */
typedef void (*mm_gemv4_fn)(int64_t K, enum ggml_type type, const char * const * rows, const float * y, float * out);

struct mm_isa {
    const char * name;
    mm_kernel_fn kernel;
    mm_dot_fn      dot;
    mm_cvt_fn      f16_to_f32;
    mm_pack_fn     pack;
    mm_dot_half_fn dot_f16;  /* NULL: convert the row, then dot */
    mm_dot_half_fn dot_bf16;
    mm_gemv4_fn    gemv4;
};

static void mk_portable(int64_t kc, const float * A, const float * B, float * C, int64_t ldc, int accumulate) {
    /* 8 x 4 sub-blocks: 32 accumulators fit the 16 SSE registers of baseline x86-64 */
    for (int nh = 0; nh < MM_NR; nh += 8) {
        for (int mg = 0; mg < MM_MR; mg += 4) {
            float c[4][8];
            memset(c, 0, sizeof c);
            for (int64_t k = 0; k < kc; k++) {
                const float * a = A + k * MM_NR + nh;
                const float * b = B + k * MM_MR + mg;
                for (int j = 0; j < 4; j++) {
                    for (int i = 0; i < 8; i++) {
                        c[j][i] += a[i] * b[j];
                    }
                }
            }
            for (int j = 0; j < 4; j++) {
                float * cp = C + (mg + j) * ldc + nh;
                for (int i = 0; i < 8; i++) {
                    cp[i] = accumulate ? cp[i] + c[j][i] : c[j][i];
                }
            }
        }
    }
}

/* 16 independent partial sums: vectorisable without reassociating a single sum */
static float dot_portable(int64_t n, const float * x, const float * y) {
    float acc[16];
    memset(acc, 0, sizeof acc);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 16; j++) {
            acc[j] += x[i + j] * y[i + j];
        }
    }
    float s = 0.0f;
    for (; i < n; i++) {
        s += x[i] * y[i];
    }
    for (int j = 0; j < 16; j++) {
        s += acc[j];
    }
    return s;
}

static void f16_to_f32_portable(const uint16_t * x, float * y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        y[i] = ggmlx_fp16_to_fp32(x[i]);
    }
}

static bool pack_none(const char * const * rows, int n_rows, enum ggml_type type, int64_t kc, int width,
                      float * panel) {
    (void)rows; (void)n_rows; (void)type; (void)kc; (void)width; (void)panel;
    return false;
}

static inline float mm_load_f(const char * row, int64_t i, enum ggml_type type) {
    if (type == GGML_TYPE_F32) {
        return ((const float *)row)[i];
    }
    const uint16_t h = ((const uint16_t *)row)[i];
    return type == GGML_TYPE_F16 ? ggmlx_fp16_to_fp32(h) : ggmlx_bits_f32((uint32_t)h << 16);
}

/* the columns [i, K) that no vector step covered, added to four rows' sums */
static inline void gemv4_tail(int64_t i, int64_t K, enum ggml_type type, const char * const * rows, const float * y,
                              float * out) {
    for (; i < K; i++) {
        for (int r = 0; r < 4; r++) {
            out[r] += mm_load_f(rows[r], i, type) * y[i];
        }
    }
}

static void gemv4_portable(int64_t K, enum ggml_type type, const char * const * rows, const float * y, float * out) {
    float acc[4][8];
    memset(acc, 0, sizeof acc);
    int64_t i = 0;
    for (; i + 8 <= K; i += 8) {
        for (int r = 0; r < 4; r++) {
            for (int j = 0; j < 8; j++) {
                acc[r][j] += mm_load_f(rows[r], i + j, type) * y[i + j];
            }
        }
    }
    for (int r = 0; r < 4; r++) {
        float s = 0.0f;
        for (int64_t t = i; t < K; t++) {
            s += mm_load_f(rows[r], t, type) * y[t];
        }
        for (int j = 0; j < 8; j++) {
            s += acc[r][j];
        }
        out[r] = s;
    }
}

static const struct mm_isa mm_isa_portable = { "portable", mk_portable, dot_portable, f16_to_f32_portable, pack_none,
                                                NULL, NULL, gemv4_portable };

#if MM_X86

__attribute__((target("avx2,fma"))) static void mk_avx2(int64_t kc, const float * A, const float * B, float * C,
                                                         int64_t ldc, int accumulate) {
    /* four 16 x 6 passes: 12 accumulators + 2 a vectors + 1 broadcast of the 16 ymm registers */
    for (int nh = 0; nh < MM_NR; nh += 16) {
        for (int mg = 0; mg < MM_MR; mg += 6) {
            __m256 c0[6], c1[6];
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++) {
                c0[j] = _mm256_setzero_ps();
                c1[j] = _mm256_setzero_ps();
            }
            const float * a = A + nh;
            const float * b = B + mg;
            for (int64_t k = 0; k < kc; k++, a += MM_NR, b += MM_MR) {
                const __m256 a0 = _mm256_loadu_ps(a);
                const __m256 a1 = _mm256_loadu_ps(a + 8);
#pragma GCC unroll 6
                for (int j = 0; j < 6; j++) {
                    const __m256 bj = _mm256_broadcast_ss(b + j);
                    c0[j] = _mm256_fmadd_ps(a0, bj, c0[j]);
                    c1[j] = _mm256_fmadd_ps(a1, bj, c1[j]);
                }
            }
#pragma GCC unroll 6
            for (int j = 0; j < 6; j++) {
                float * cp = C + (mg + j) * ldc + nh;
                if (accumulate) {
                    c0[j] = _mm256_add_ps(c0[j], _mm256_loadu_ps(cp));
                    c1[j] = _mm256_add_ps(c1[j], _mm256_loadu_ps(cp + 8));
                }
                _mm256_storeu_ps(cp, c0[j]);
                _mm256_storeu_ps(cp + 8, c1[j]);
            }
        }
    }
}

__attribute__((target("avx2,fma"))) static float dot_avx2(int64_t n, const float * x, const float * y) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i),      _mm256_loadu_ps(y + i),      s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8),  _mm256_loadu_ps(y + i + 8),  s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), s0);
    }
    const __m256 s  = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128       h  = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h               = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h               = _mm_add_ss(h, _mm_movehdup_ps(h));
    float        r  = _mm_cvtss_f32(h);
    for (; i < n; i++) {
        r += x[i] * y[i];
    }
    return r;
}

__attribute__((target("avx2,f16c"))) static void f16_to_f32_f16c(const uint16_t * x, float * y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    }
    for (; i < n; i++) {
        y[i] = ggmlx_fp16_to_fp32(x[i]);
    }
}

__attribute__((target("avx512f"))) static void mk_avx512(int64_t kc, const float * A, const float * B, float * C,
                                                          int64_t ldc, int accumulate) {
    /* the whole 32 x 12 block: 24 accumulators + 2 a vectors + 1 broadcast of 32 zmm registers */
    __m512 c0[MM_MR], c1[MM_MR];
    /* the block's 24 cache lines (12 columns far apart) are fetched while the sums build up */
#pragma GCC unroll 12
    for (int j = 0; j < MM_MR; j++) {
        _mm_prefetch((const char *)(C + j * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(C + j * ldc + 16), _MM_HINT_T0);
    }
#pragma GCC unroll 12
    for (int j = 0; j < MM_MR; j++) {
        c0[j] = _mm512_setzero_ps();
        c1[j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < kc; k++, A += MM_NR, B += MM_MR) {
        const __m512 a0 = _mm512_loadu_ps(A);
        const __m512 a1 = _mm512_loadu_ps(A + 16);
#pragma GCC unroll 12
        for (int j = 0; j < MM_MR; j++) {
            const __m512 bj = _mm512_set1_ps(B[j]);
            c0[j] = _mm512_fmadd_ps(a0, bj, c0[j]);
            c1[j] = _mm512_fmadd_ps(a1, bj, c1[j]);
        }
    }
#pragma GCC unroll 12
    for (int j = 0; j < MM_MR; j++) {
        float * cp = C + j * ldc;
        if (accumulate) {
            c0[j] = _mm512_add_ps(c0[j], _mm512_loadu_ps(cp));
            c1[j] = _mm512_add_ps(c1[j], _mm512_loadu_ps(cp + 16));
        }
        _mm512_storeu_ps(cp, c0[j]);
        _mm512_storeu_ps(cp + 16, c1[j]);
    }
}

__attribute__((target("avx512f"))) static float dot_avx512(int64_t n, const float * x, const float * y) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i),      _mm512_loadu_ps(y + i),      s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), s0);
    }
    float r = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
    for (; i < n; i++) {
        r += x[i] * y[i];
    }
    return r;
}

__attribute__((target("avx512f"))) static void f16_to_f32_avx512(const uint16_t * x, float * y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
    }
    for (; i < n; i++) {
        y[i] = ggmlx_fp16_to_fp32(x[i]);
    }
}

/* 16 consecutive elements of a row as F32 */
__attribute__((target("avx512f"))) static inline __m512 load16_avx512(const char * p, enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_F16:
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    case GGML_TYPE_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
    default:
        return _mm512_loadu_ps((const float *)p);
    }
}

/* r[i] holds row i, 16 columns; afterwards r[j] holds column j, 16 rows */
__attribute__((target("avx512f"))) static inline void transpose16_avx512(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i]     = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* per 128-bit lane L, u[4g + q] now gathers rows 4g..4g+3 of column 4L + q */
    for (int g = 0; g < 4; g++) {
        const __m512d a = _mm512_castps_pd(t[4 * g]),     b = _mm512_castps_pd(t[4 * g + 2]);
        const __m512d c = _mm512_castps_pd(t[4 * g + 1]), d = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int q = 0; q < 4; q++) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[q],     u[4 + q],  0x44);
        const __m512 v1 = _mm512_shuffle_f32x4(u[q],     u[4 + q],  0xEE);
        const __m512 w0 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x44);
        const __m512 w1 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xEE);
        r[q]      = _mm512_shuffle_f32x4(v0, w0, 0x88);
        r[4 + q]  = _mm512_shuffle_f32x4(v0, w0, 0xDD);
        r[8 + q]  = _mm512_shuffle_f32x4(v1, w1, 0x88);
        r[12 + q] = _mm512_shuffle_f32x4(v1, w1, 0xDD);
    }
}

__attribute__((target("avx512f"))) static bool pack_avx512(const char * const * rows, int n_rows, enum ggml_type type,
                                                            int64_t kc, int width, float * panel) {
    const size_t    es   = type == GGML_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    const __mmask16 keep = (__mmask16)((1u << (width % 16 ? width % 16 : 16)) - 1u);
    int64_t k = 0;
    for (; k + 16 <= kc; k += 16) {
        for (int g = 0; g < width; g += 16) {
            __m512 r[16];
            for (int i = 0; i < 16; i++) {
                r[i] = g + i < n_rows ? load16_avx512(rows[g + i] + (size_t)k * es, type) : _mm512_setzero_ps();
            }
            transpose16_avx512(r);
            const __mmask16 m = g + 16 <= width ? (__mmask16)0xFFFF : keep;
            for (int j = 0; j < 16; j++) {
                _mm512_mask_storeu_ps(panel + (k + j) * width + g, m, r[j]);
            }
        }
    }
    for (; k < kc; k++) {
        for (int r = 0; r < width; r++) {
            float v = 0.0f;
            if (r < n_rows) {
                const char * p = rows[r] + (size_t)k * es;
                v = type == GGML_TYPE_F32  ? *(const float *)p
                  : type == GGML_TYPE_F16  ? ggmlx_fp16_to_fp32(*(const uint16_t *)p)
                                           : ggmlx_bf16_to_fp32(*(const uint16_t *)p);
            }
            panel[k * width + r] = v;
        }
    }
    return true;
}

__attribute__((target("avx512f"))) static inline float dot_half_avx512(int64_t n, const uint16_t * x, const float * y,
                                                                         enum ggml_type type) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(load16_avx512((const char *)(x + i), type), _mm512_loadu_ps(y + i), s0);
        s1 = _mm512_fmadd_ps(load16_avx512((const char *)(x + i + 16), type), _mm512_loadu_ps(y + i + 16), s1);
    }
    for (; i + 16 <= n; i += 16) {
        s0 = _mm512_fmadd_ps(load16_avx512((const char *)(x + i), type), _mm512_loadu_ps(y + i), s0);
    }
    float r = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    for (; i < n; i++) {
        r += (type == GGML_TYPE_F16 ? ggmlx_fp16_to_fp32(x[i]) : ggmlx_bf16_to_fp32(x[i])) * y[i];
    }
    return r;
}

__attribute__((target("avx512f"))) static float dot_f16_avx512(int64_t n, const uint16_t * x, const float * y) {
    return dot_half_avx512(n, x, y, GGML_TYPE_F16);
}

__attribute__((target("avx512f"))) static float dot_bf16_avx512(int64_t n, const uint16_t * x, const float * y) {
    return dot_half_avx512(n, x, y, GGML_TYPE_BF16);
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 load8_avx2(const uint16_t * p, enum ggml_type type) {
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (type == GGML_TYPE_F16) {
        return _mm256_cvtph_ps(h);
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2,fma,f16c"))) static inline float dot_half_avx2(int64_t n, const uint16_t * x, const float * y,
                                                                            enum ggml_type type) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(load8_avx2(x + i, type), _mm256_loadu_ps(y + i), s0);
        s1 = _mm256_fmadd_ps(load8_avx2(x + i + 8, type), _mm256_loadu_ps(y + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8) {
        s0 = _mm256_fmadd_ps(load8_avx2(x + i, type), _mm256_loadu_ps(y + i), s0);
    }
    const __m256 s = _mm256_add_ps(s0, s1);
    __m128       h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h              = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h              = _mm_add_ss(h, _mm_movehdup_ps(h));
    float        r = _mm_cvtss_f32(h);
    for (; i < n; i++) {
        r += (type == GGML_TYPE_F16 ? ggmlx_fp16_to_fp32(x[i]) : ggmlx_bf16_to_fp32(x[i])) * y[i];
    }
    return r;
}

__attribute__((target("avx2,fma,f16c"))) static float dot_f16_avx2(int64_t n, const uint16_t * x, const float * y) {
    return dot_half_avx2(n, x, y, GGML_TYPE_F16);
}

__attribute__((target("avx2,fma,f16c"))) static float dot_bf16_avx2(int64_t n, const uint16_t * x, const float * y) {
    return dot_half_avx2(n, x, y, GGML_TYPE_BF16);
}

/* how far ahead (bytes) the GEMV kernels prefetch each row */
#define MM_GEMV_PF 512

__attribute__((target("avx512f"))) static inline void gemv4_avx512_t(int64_t K, enum ggml_type type,
                                                                      const char * const * rows, const float * y,
                                                                      float * out) {
    const size_t es = type == GGML_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    const char * r0 = rows[0], * r1 = rows[1], * r2 = rows[2], * r3 = rows[3];
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    __m512 b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps(), b2 = _mm512_setzero_ps(), b3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= K; i += 32) {
        const size_t o = (size_t)i * es;
        _mm_prefetch(r0 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r1 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r2 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r3 + o + MM_GEMV_PF, _MM_HINT_T0);
        if (es == sizeof(float)) { /* 32 F32 values span two cache lines */
            _mm_prefetch(r0 + o + MM_GEMV_PF + 64, _MM_HINT_T0);
            _mm_prefetch(r1 + o + MM_GEMV_PF + 64, _MM_HINT_T0);
            _mm_prefetch(r2 + o + MM_GEMV_PF + 64, _MM_HINT_T0);
            _mm_prefetch(r3 + o + MM_GEMV_PF + 64, _MM_HINT_T0);
        }
        const __m512 y0 = _mm512_loadu_ps(y + i);
        const __m512 y1 = _mm512_loadu_ps(y + i + 16);
        a0 = _mm512_fmadd_ps(load16_avx512(r0 + o, type), y0, a0);
        a1 = _mm512_fmadd_ps(load16_avx512(r1 + o, type), y0, a1);
        a2 = _mm512_fmadd_ps(load16_avx512(r2 + o, type), y0, a2);
        a3 = _mm512_fmadd_ps(load16_avx512(r3 + o, type), y0, a3);
        b0 = _mm512_fmadd_ps(load16_avx512(r0 + o + 16 * es, type), y1, b0);
        b1 = _mm512_fmadd_ps(load16_avx512(r1 + o + 16 * es, type), y1, b1);
        b2 = _mm512_fmadd_ps(load16_avx512(r2 + o + 16 * es, type), y1, b2);
        b3 = _mm512_fmadd_ps(load16_avx512(r3 + o + 16 * es, type), y1, b3);
    }
    for (; i + 16 <= K; i += 16) {
        const size_t o  = (size_t)i * es;
        const __m512 y0 = _mm512_loadu_ps(y + i);
        a0 = _mm512_fmadd_ps(load16_avx512(r0 + o, type), y0, a0);
        a1 = _mm512_fmadd_ps(load16_avx512(r1 + o, type), y0, a1);
        a2 = _mm512_fmadd_ps(load16_avx512(r2 + o, type), y0, a2);
        a3 = _mm512_fmadd_ps(load16_avx512(r3 + o, type), y0, a3);
    }
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(a0, b0));
    out[1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, b1));
    out[2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, b2));
    out[3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, b3));
    gemv4_tail(i, K, type, rows, y, out);
}

/* one instance per type, so the conversion is resolved at compile time */
__attribute__((target("avx512f"))) static void gemv4_avx512(int64_t K, enum ggml_type type, const char * const * rows,
                                                             const float * y, float * out) {
    switch (type) {
    case GGML_TYPE_F16:  gemv4_avx512_t(K, GGML_TYPE_F16, rows, y, out); break;
    case GGML_TYPE_BF16: gemv4_avx512_t(K, GGML_TYPE_BF16, rows, y, out); break;
    default:             gemv4_avx512_t(K, GGML_TYPE_F32, rows, y, out); break;
    }
}

__attribute__((target("avx2,fma,f16c"))) static inline __m256 load8f_avx2(const char * p, enum ggml_type type) {
    if (type == GGML_TYPE_F32) {
        return _mm256_loadu_ps((const float *)p);
    }
    return load8_avx2((const uint16_t *)p, type);
}

__attribute__((target("avx2,fma,f16c"))) static inline float hsum_avx2(__m256 s) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h        = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h        = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

__attribute__((target("avx2,fma,f16c"))) static inline void gemv4_avx2_t(int64_t K, enum ggml_type type,
                                                                          const char * const * rows, const float * y,
                                                                          float * out) {
    const size_t es = type == GGML_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    const char * r0 = rows[0], * r1 = rows[1], * r2 = rows[2], * r3 = rows[3];
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps(), b2 = _mm256_setzero_ps(), b3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= K; i += 16) {
        const size_t o = (size_t)i * es;
        _mm_prefetch(r0 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r1 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r2 + o + MM_GEMV_PF, _MM_HINT_T0);
        _mm_prefetch(r3 + o + MM_GEMV_PF, _MM_HINT_T0);
        const __m256 y0 = _mm256_loadu_ps(y + i);
        const __m256 y1 = _mm256_loadu_ps(y + i + 8);
        a0 = _mm256_fmadd_ps(load8f_avx2(r0 + o, type), y0, a0);
        a1 = _mm256_fmadd_ps(load8f_avx2(r1 + o, type), y0, a1);
        a2 = _mm256_fmadd_ps(load8f_avx2(r2 + o, type), y0, a2);
        a3 = _mm256_fmadd_ps(load8f_avx2(r3 + o, type), y0, a3);
        b0 = _mm256_fmadd_ps(load8f_avx2(r0 + o + 8 * es, type), y1, b0);
        b1 = _mm256_fmadd_ps(load8f_avx2(r1 + o + 8 * es, type), y1, b1);
        b2 = _mm256_fmadd_ps(load8f_avx2(r2 + o + 8 * es, type), y1, b2);
        b3 = _mm256_fmadd_ps(load8f_avx2(r3 + o + 8 * es, type), y1, b3);
    }
    for (; i + 8 <= K; i += 8) {
        const size_t o  = (size_t)i * es;
        const __m256 y0 = _mm256_loadu_ps(y + i);
        a0 = _mm256_fmadd_ps(load8f_avx2(r0 + o, type), y0, a0);
        a1 = _mm256_fmadd_ps(load8f_avx2(r1 + o, type), y0, a1);
        a2 = _mm256_fmadd_ps(load8f_avx2(r2 + o, type), y0, a2);
        a3 = _mm256_fmadd_ps(load8f_avx2(r3 + o, type), y0, a3);
    }
    out[0] = hsum_avx2(_mm256_add_ps(a0, b0));
    out[1] = hsum_avx2(_mm256_add_ps(a1, b1));
    out[2] = hsum_avx2(_mm256_add_ps(a2, b2));
    out[3] = hsum_avx2(_mm256_add_ps(a3, b3));
    gemv4_tail(i, K, type, rows, y, out);
}

__attribute__((target("avx2,fma,f16c"))) static void gemv4_avx2(int64_t K, enum ggml_type type, const char * const * rows,
                                                                 const float * y, float * out) {
    switch (type) {
    case GGML_TYPE_F16:  gemv4_avx2_t(K, GGML_TYPE_F16, rows, y, out); break;
    case GGML_TYPE_BF16: gemv4_avx2_t(K, GGML_TYPE_BF16, rows, y, out); break;
    default:             gemv4_avx2_t(K, GGML_TYPE_F32, rows, y, out); break;
    }
}

static const struct mm_isa mm_isa_avx2   = { "avx2",   mk_avx2,   dot_avx2,   f16_to_f32_f16c,   pack_none,
                                             dot_f16_avx2,   dot_bf16_avx2,   gemv4_avx2 };
static const struct mm_isa mm_isa_avx512 = { "avx512", mk_avx512, dot_avx512, f16_to_f32_avx512, pack_avx512,
                                             dot_f16_avx512, dot_bf16_avx512, gemv4_avx512 };

static bool mm_has_avx2(void) {
    __builtin_cpu_init();
    /* F16C is not checked: every CPU with AVX2 has it, and clang cannot query it here */
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static bool mm_has_avx512(void) {
    __builtin_cpu_init();
    return mm_has_avx2() && __builtin_cpu_supports("avx512f");
}

#endif /* MM_X86 */

/* The variant to use: the best the CPU has, or the one GGMLX_MATMUL_KERNEL names if available. */
static const struct mm_isa * mm_pick_isa(void) {
    const char * want = getenv("GGMLX_MATMUL_KERNEL");
    if (want != NULL && strcmp(want, "portable") == 0) {
        return &mm_isa_portable;
    }
#if MM_X86
    const bool force_avx2 = want != NULL && strcmp(want, "avx2") == 0;
    if (!force_avx2 && mm_has_avx512()) {
        return &mm_isa_avx512;
    }
    if (mm_has_avx2()) {
        return &mm_isa_avx2;
    }
#endif
    return &mm_isa_portable;
}

/* ---- rows as F32 ----------------------------------------------------------------------------- */

/*
 * n elements of a row (stride nb0 bytes) as F32: the row itself when it already is contiguous
 * F32, else converted into buf.
 */
static const float * mm_row_f32(const struct mm_isa * isa, const char * row, enum ggml_type type, size_t nb0,
                                int64_t n, float * buf) {
    if (type == GGML_TYPE_F32) {
        if (nb0 == sizeof(float)) {
            return (const float *)row;
        }
        for (int64_t i = 0; i < n; i++) {
            buf[i] = *(const float *)(row + i * nb0);
        }
    } else if (type == GGML_TYPE_F16) {
        if (nb0 == sizeof(uint16_t)) {
            isa->f16_to_f32((const uint16_t *)row, buf, n);
        } else {
            for (int64_t i = 0; i < n; i++) {
                buf[i] = ggmlx_fp16_to_fp32(*(const uint16_t *)(row + i * nb0));
            }
        }
    } else { /* BF16: the top half of an F32 */
        if (nb0 == sizeof(uint16_t)) {
            const uint16_t * x = (const uint16_t *)row;
            for (int64_t i = 0; i < n; i++) {
                buf[i] = ggmlx_bits_f32((uint32_t)x[i] << 16);
            }
        } else {
            for (int64_t i = 0; i < n; i++) {
                buf[i] = ggmlx_bf16_to_fp32(*(const uint16_t *)(row + i * nb0));
            }
        }
    }
    return buf;
}

/* ---- the plan: path, blocking and units of work ------------------------------------------------ */

enum mm_path { MM_PATH_GEMM, MM_PATH_DOT };

struct mm_plan {
    enum mm_path path;
    int64_t K, N, M, B2, B3, r2, r3;
    int64_t kc, mc;              /* GEMM blocking, clamped to the problem */
    bool    small_is_b;          /* DOT: which side has the few rows */
    int64_t n_small;             /* DOT: rows on the small side */
    int64_t n_chunk, m_chunk;    /* unit extent along n and m */
    int64_t n_chunks, m_chunks;  /* units per batch along n and m */
    int64_t units;
    size_t  per_thread;          /* scratch bytes per thread, a multiple of MM_ALIGN */
};

static void mm_make_plan(const struct ggml_tensor * dst, int nth, struct mm_plan * p) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    memset(p, 0, sizeof *p);
    p->K  = a->ne[0];
    p->N  = a->ne[1];
    p->M  = b->ne[1];
    p->B2 = b->ne[2];
    p->B3 = b->ne[3];
    p->r2 = a->ne[2] > 0 ? b->ne[2] / a->ne[2] : 1;
    p->r3 = a->ne[3] > 0 ? b->ne[3] / a->ne[3] : 1;
    if (p->r2 < 1) {
        p->r2 = 1;
    }
    if (p->r3 < 1) {
        p->r3 = 1;
    }
    if (nth < 1) {
        nth = 1;
    }
    const int64_t batches = p->B2 * p->B3;
    /*
     * One unit per thread when the batches divide evenly (each unit packs its b blocks once, so
     * fewer, larger units pack less); otherwise several per thread so uneven shares even out.
     */
    const int64_t want = nth <= 1 ? 1 : batches % nth == 0 ? nth : 4 * (int64_t)nth;

    p->path = (p->M < MM_DOT_M || p->N < MM_DOT_N) ? MM_PATH_DOT : MM_PATH_GEMM;

    if (p->path == MM_PATH_GEMM) {
        p->kc = mm_max(1, mm_min(MM_KC, p->K));
        p->mc = mm_min(MM_MC, mm_round_up(p->M, MM_MR));
        const int64_t tiles_n = mm_ceil_div(p->N, MM_NR);
        const int64_t tiles_m = mm_ceil_div(p->M, MM_MR);
        int64_t n_chunks = 1;
        if (batches < want) {
            n_chunks = mm_min(tiles_n, mm_ceil_div(want, mm_max(batches, 1)));
        }
        int64_t m_chunks = 1;
        if (batches * n_chunks < want) {
            m_chunks = mm_min(tiles_m, mm_ceil_div(want, mm_max(batches * n_chunks, 1)));
        }
        p->n_chunk  = mm_ceil_div(tiles_n, n_chunks) * MM_NR;
        p->m_chunk  = mm_ceil_div(tiles_m, m_chunks) * MM_MR;
        p->n_chunks = mm_ceil_div(p->N, p->n_chunk);
        p->m_chunks = mm_ceil_div(p->M, p->m_chunk);
        /* a micro-panel, a b block, and a row being converted */
        p->per_thread = (size_t)(MM_NR + p->mc + 1) * (size_t)p->kc * sizeof(float);
    } else {
        /* the side with fewer rows is held converted; the other is walked a row at a time */
        p->small_is_b = p->M < MM_DOT_M && p->M <= p->N;
        p->n_small    = p->small_is_b ? p->M : p->N;
        const int64_t big = p->small_is_b ? p->N : p->M;
        int64_t chunks = 1;
        if (batches < want) {
            chunks = mm_max(1, mm_min(big, mm_ceil_div(want, mm_max(batches, 1))));
        }
        int64_t chunk = mm_max(1, mm_ceil_div(big, chunks));
        if (p->small_is_b && p->M == 1) {
            chunk = mm_round_up(chunk, 4); /* whole calls of the 4-row matrix-vector kernel */
        }
        if (p->small_is_b) {
            p->n_chunk = chunk;
            p->m_chunk = mm_max(1, p->M);
        } else {
            p->n_chunk = mm_max(1, p->N);
            p->m_chunk = chunk;
        }
        p->n_chunks = mm_ceil_div(p->N, p->n_chunk);
        p->m_chunks = mm_ceil_div(p->M, p->m_chunk);
        p->per_thread = (size_t)(p->n_small + 1) * (size_t)mm_round_up(p->K, 16) * sizeof(float);
    }
    p->units      = batches * p->n_chunks * p->m_chunks;
    p->per_thread = (size_t)mm_round_up((int64_t)p->per_thread + MM_ALIGN, MM_ALIGN);
}

size_t ggmlx_cpu_mul_mat_work_size(const struct ggml_tensor * dst, int n_tasks) {
    struct mm_plan p;
    mm_make_plan(dst, n_tasks, &p);
    return (size_t)(n_tasks < 1 ? 1 : n_tasks) * p.per_thread + MM_ALIGN;
}

/* ---- DOT path ---------------------------------------------------------------------------------- */

struct mm_ctx {
    const struct mm_isa      * isa;
    const struct mm_plan     * p;
    const struct ggml_tensor * a;
    const struct ggml_tensor * b;
    struct ggml_tensor       * dst;
    float                    * scratch; /* this thread's */
};

static float * mm_dst_at(const struct mm_ctx * c, int64_t n, int64_t m, int64_t i12, int64_t i13) {
    const struct ggml_tensor * d = c->dst;
    return (float *)((char *)d->data + n * d->nb[0] + m * d->nb[1] + i12 * d->nb[2] + i13 * d->nb[3]);
}

static const char * mm_a_row(const struct mm_ctx * c, int64_t n, int64_t i12, int64_t i13) {
    const struct ggml_tensor * a = c->a;
    return (const char *)a->data + n * a->nb[1] + (i12 / c->p->r2) * a->nb[2] + (i13 / c->p->r3) * a->nb[3];
}

static const char * mm_b_row(const struct mm_ctx * c, int64_t m, int64_t i12, int64_t i13) {
    const struct ggml_tensor * b = c->b;
    return (const char *)b->data + m * b->nb[1] + i12 * b->nb[2] + i13 * b->nb[3];
}

static void mm_dot_unit(const struct mm_ctx * c, int64_t i12, int64_t i13, int64_t n0, int64_t n1, int64_t m0,
                        int64_t m1) {
    const struct mm_plan * p   = c->p;
    const int64_t          K   = p->K;
    const int64_t          ldk = mm_round_up(K, 16);
    const float          * small[MM_DOT_N];
    float                * big_buf = c->scratch + p->n_small * ldk;

    /*
     * Matrix-vector product with contiguous weight rows: four rows per kernel call, the vector
     * read (or gathered once, when strided) from this thread's scratch.
     */
    if (p->small_is_b && m1 - m0 == 1 && c->a->nb[0] == ggml_type_size(c->a->type) && c->isa->gemv4 != NULL) {
        const float * y = mm_row_f32(c->isa, mm_b_row(c, m0, i12, i13), GGML_TYPE_F32, c->b->nb[0], K, c->scratch);
        const char  * rows[4];
        float         out[4];
        int64_t       n = n0;
        for (; n + 4 <= n1; n += 4) {
            for (int r = 0; r < 4; r++) {
                rows[r] = mm_a_row(c, n + r, i12, i13);
            }
            c->isa->gemv4(K, c->a->type, rows, y, out);
            for (int r = 0; r < 4; r++) {
                *mm_dst_at(c, n + r, m0, i12, i13) = out[r];
            }
        }
        if (n < n1) { /* the last 1-3 rows: repeat the last one to fill the kernel */
            for (int r = 0; r < 4; r++) {
                rows[r] = mm_a_row(c, n + r < n1 ? n + r : n1 - 1, i12, i13);
            }
            c->isa->gemv4(K, c->a->type, rows, y, out);
            for (int64_t r = 0; n + r < n1; r++) {
                *mm_dst_at(c, n + r, m0, i12, i13) = out[r];
            }
        }
        return;
    }

    if (p->small_is_b) {
        for (int64_t m = m0; m < m1; m++) {
            small[m - m0] = mm_row_f32(c->isa, mm_b_row(c, m, i12, i13), GGML_TYPE_F32, c->b->nb[0], K,
                                       c->scratch + (m - m0) * ldk);
        }
        /* half-precision rows of a are converted inside the dot when the ISA can */
        const mm_dot_half_fn dh = c->a->nb[0] != sizeof(uint16_t) ? NULL
                                : c->a->type == GGML_TYPE_F16 ? c->isa->dot_f16
                                : c->a->type == GGML_TYPE_BF16 ? c->isa->dot_bf16 : NULL;
        for (int64_t n = n0; n < n1; n++) {
            if (dh != NULL) {
                const uint16_t * x = (const uint16_t *)mm_a_row(c, n, i12, i13);
                for (int64_t m = m0; m < m1; m++) {
                    *mm_dst_at(c, n, m, i12, i13) = dh(K, x, small[m - m0]);
                }
                continue;
            }
            const float * x = mm_row_f32(c->isa, mm_a_row(c, n, i12, i13), c->a->type, c->a->nb[0], K, big_buf);
            for (int64_t m = m0; m < m1; m++) {
                *mm_dst_at(c, n, m, i12, i13) = c->isa->dot(K, x, small[m - m0]);
            }
        }
    } else {
        for (int64_t n = n0; n < n1; n++) {
            small[n - n0] = mm_row_f32(c->isa, mm_a_row(c, n, i12, i13), c->a->type, c->a->nb[0], K,
                                       c->scratch + (n - n0) * ldk);
        }
        for (int64_t m = m0; m < m1; m++) {
            const float * y = mm_row_f32(c->isa, mm_b_row(c, m, i12, i13), GGML_TYPE_F32, c->b->nb[0], K, big_buf);
            for (int64_t n = n0; n < n1; n++) {
                *mm_dst_at(c, n, m, i12, i13) = c->isa->dot(K, small[n - n0], y);
            }
        }
    }
}

/* ---- GEMM path --------------------------------------------------------------------------------- */

/*
 * One micro-panel: rows[0 .. n_rows) (k from 0, element stride nb0 bytes, of the given type)
 * as panel[k * width + r], zero rows up to width. tmp holds one converted row (kc floats).
 */
static void mm_pack(const struct mm_isa * isa, const char * const * rows, int n_rows, enum ggml_type type, size_t nb0,
                    int64_t kc, int width, float * panel, float * tmp) {
    const size_t es = type == GGML_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    if (nb0 == es && isa->pack(rows, n_rows, type, kc, width, panel)) {
        return;
    }
    for (int r = 0; r < width; r++) {
        if (r >= n_rows) {
            for (int64_t k = 0; k < kc; k++) {
                panel[k * width + r] = 0.0f;
            }
            continue;
        }
        const float * x = mm_row_f32(isa, rows[r], type, nb0, kc, tmp);
        for (int64_t k = 0; k < kc; k++) {
            panel[k * width + r] = x[k];
        }
    }
}

static void mm_gemm_unit(const struct mm_ctx * c, int64_t i12, int64_t i13, int64_t n0, int64_t n1, int64_t m0,
                         int64_t m1) {
    const struct mm_plan * p     = c->p;
    const struct ggml_tensor * a = c->a;
    const struct ggml_tensor * b = c->b;
    const int64_t          ldc   = (int64_t)(c->dst->nb[1] / sizeof(float));
    const bool             fastc = c->dst->nb[0] == sizeof(float) && c->dst->nb[1] % sizeof(float) == 0;
    float                * apack = c->scratch;                        /* 32 x kc */
    float                * bpack = apack + MM_NR * p->kc;             /* mc x kc */
    float                * tmp   = bpack + p->mc * p->kc;             /* kc */
    float                  tile[MM_NR * MM_MR];
    const char           * rows[MM_NR];

    if (p->K == 0) {
        for (int64_t m = m0; m < m1; m++) {
            for (int64_t n = n0; n < n1; n++) {
                *mm_dst_at(c, n, m, i12, i13) = 0.0f;
            }
        }
        return;
    }

    /* b blocks of (nearly) equal size, so a is packed as few times as possible */
    const int64_t n_blocks = mm_ceil_div(m1 - m0, p->mc);
    const int64_t mc_even  = mm_round_up(mm_ceil_div(m1 - m0, n_blocks), MM_MR);

    for (int64_t pc = 0; pc < p->K; pc += p->kc) {
        const int64_t kc = mm_min(p->kc, p->K - pc);
        for (int64_t ic = m0; ic < m1; ic += mc_even) {
            const int64_t mc = mm_min(mc_even, m1 - ic);
            for (int64_t t = 0; t < mc; t += MM_MR) {
                const int nr = (int)mm_min(MM_MR, mc - t);
                for (int r = 0; r < nr; r++) {
                    rows[r] = mm_b_row(c, ic + t + r, i12, i13) + pc * b->nb[0];
                }
                mm_pack(c->isa, rows, nr, GGML_TYPE_F32, b->nb[0], kc, MM_MR, bpack + t * kc, tmp);
            }
            for (int64_t jr = n0; jr < n1; jr += MM_NR) {
                const int nv = (int)mm_min(MM_NR, n1 - jr);
                for (int r = 0; r < nv; r++) {
                    rows[r] = mm_a_row(c, jr + r, i12, i13) + pc * a->nb[0];
                }
                mm_pack(c->isa, rows, nv, a->type, a->nb[0], kc, MM_NR, apack, tmp);
                for (int64_t ir = 0; ir < mc; ir += MM_MR) {
                    const float * bp = bpack + ir * kc;
                    const int64_t mv = mm_min(MM_MR, mc - ir);
                    if (fastc && nv == MM_NR && mv == MM_MR) {
                        c->isa->kernel(kc, apack, bp, mm_dst_at(c, jr, ic + ir, i12, i13), ldc, pc > 0);
                        continue;
                    }
                    c->isa->kernel(kc, apack, bp, tile, MM_NR, 0);
                    for (int64_t j = 0; j < mv; j++) {
                        for (int64_t i = 0; i < nv; i++) {
                            float * d = mm_dst_at(c, jr + i, ic + ir + j, i12, i13);
                            *d = pc > 0 ? *d + tile[j * MM_NR + i] : tile[j * MM_NR + i];
                        }
                    }
                }
            }
        }
    }
}

/* ---- entry ------------------------------------------------------------------------------------- */

void ggmlx_cpu_mul_mat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    struct mm_plan p;
    mm_make_plan(dst, params->nth, &p);

    const size_t need = (size_t)params->nth * p.per_thread + MM_ALIGN;
    if (params->wdata == NULL || params->wsize < need) {
        ggmlx_cpu_fail(params, "ggml_mul_mat: work buffer of %zu bytes is smaller than the %zu needed", params->wsize,
                       need);
        return;
    }
    const uintptr_t base = ((uintptr_t)params->wdata + MM_ALIGN - 1) & ~(uintptr_t)(MM_ALIGN - 1);

    struct mm_ctx c;
    c.isa     = mm_pick_isa();
    c.p       = &p;
    c.a       = dst->src[0];
    c.b       = dst->src[1];
    c.dst     = dst;
    c.scratch = (float *)(base + (size_t)params->ith * p.per_thread);

    int64_t u0, u1;
    ggmlx_cpu_split_rows(params, p.units, &u0, &u1);
    const int64_t per_batch = p.n_chunks * p.m_chunks;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t batch = u / per_batch;
        const int64_t rest  = u % per_batch;
        const int64_t i12   = batch % p.B2;
        const int64_t i13   = batch / p.B2;
        const int64_t n0    = (rest % p.n_chunks) * p.n_chunk;
        const int64_t m0    = (rest / p.n_chunks) * p.m_chunk;
        const int64_t n1    = mm_min(p.N, n0 + p.n_chunk);
        const int64_t m1    = mm_min(p.M, m0 + p.m_chunk);
        if (p.path == MM_PATH_GEMM) {
            mm_gemm_unit(&c, i12, i13, n0, n1, m0, m1);
        } else {
            mm_dot_unit(&c, i12, i13, n0, n1, m0, m1);
        }
    }
}
