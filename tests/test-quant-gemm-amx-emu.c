/*
 * test-quant-gemm-amx-emu.c -- the AMX kernel of the quantized GEMM on any x86-64 machine: its
 * source is compiled here with the tile instructions (ldtilecfg, tilezero, tileloadd,
 * tilestored, tdpbsud, tilerelease) emulated in C, as the Intel SDM defines them, including
 * the shape rules tdpbsud faults on. ggmlx_qgemm then runs it end to end (its availability
 * check becomes the probe alone) and the products are compared with the VNNI kernel's, which
 * test-quant-gemm checks against a double-precision reference.
 */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)

#    include <immintrin.h>
#    include <math.h>
#    include <stdbool.h>
#    include <stdint.h>
#    include <string.h>

/* one thread's tile registers and configuration (threads keep their own, as on hardware) */
struct emu_tiles {
    int     rows[8];
    int     colsb[8];
    uint8_t data[8][16][64];
    bool    fault;
};

static _Thread_local struct emu_tiles emu;

static void emu_loadconfig(const void * p) {
    const uint8_t * cfg = p;
    memset(&emu, 0, sizeof emu);
    if (cfg[0] != 1) {
        emu.fault = true;
    }
    for (int t = 0; t < 8; t++) {
        uint16_t cb;
        memcpy(&cb, cfg + 16 + 2 * t, sizeof cb);
        emu.colsb[t] = cb;
        emu.rows[t] = cfg[48 + t];
        if (emu.colsb[t] > 64 || emu.rows[t] > 16) {
            emu.fault = true;
        }
    }
}

static void emu_loadd(int t, const void * base, long stride) {
    if (emu.rows[t] == 0) {
        emu.fault = true;
    }
    memset(emu.data[t], 0, sizeof emu.data[t]);
    for (int r = 0; r < emu.rows[t]; r++) {
        memcpy(emu.data[t][r], (const char *) base + (long) r * stride, (size_t) emu.colsb[t]);
    }
}

static void emu_stored(int t, void * base, long stride) {
    for (int r = 0; r < emu.rows[t]; r++) {
        memcpy((char *) base + (long) r * stride, emu.data[t][r], (size_t) emu.colsb[t]);
    }
}

/* C[m][n] += sum over k of A[m][k] (signed) * B[k / 4][4 n + k % 4] (unsigned), with tdpbsud's shape checks */
static void emu_dpbsud(int c, int a, int b) {
    if (emu.colsb[a] != 4 * emu.rows[b] || emu.rows[c] != emu.rows[a] || emu.colsb[c] != emu.colsb[b] ||
        emu.colsb[c] % 4 != 0) {
        emu.fault = true;
        return;
    }
    for (int m = 0; m < emu.rows[c]; m++) {
        for (int n = 0; n < emu.colsb[c] / 4; n++) {
            int32_t acc;
            memcpy(&acc, &emu.data[c][m][4 * n], sizeof acc);
            for (int k = 0; k < emu.colsb[a]; k++) {
                acc += (int32_t) (int8_t) emu.data[a][m][k] * (int32_t) emu.data[b][k / 4][4 * n + k % 4];
            }
            memcpy(&emu.data[c][m][4 * n], &acc, sizeof acc);
        }
    }
}

#    undef _tile_loadd
#    undef _tile_stored
#    undef _tile_zero
#    undef _tile_dpbsud
#    define _tile_loadconfig(cfg)          emu_loadconfig(cfg)
#    define _tile_release()                ((void) 0)
#    define _tile_zero(t)                  memset(emu.data[t], 0, sizeof emu.data[t])
#    define _tile_loadd(t, base, stride)   emu_loadd(t, base, stride)
#    define _tile_stored(t, base, stride)  emu_stored(t, base, stride)
#    define _tile_dpbsud(c, a, b)          emu_dpbsud(c, a, b)

#    define GGMLX_QGEMM_AMX_EMULATED 1
#    include "quant/qgemm-kernel-amx.c"

#endif

#include "ggml-math.h"
#include "quant/qgemm.h"
#include "quant/quant-blocks.h"
#include "quant/quant-tables.h"

#include <criterion/criterion.h>
#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)

static bool cpu_has_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("f16c");
}

static uint64_t rng_state = 12345;

static uint8_t rnd8(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t) (rng_state >> 56);
}

/* random bytes with every scale a sane half (the first two bytes of each block, or the float of Q8_K) */
static void fill_blocks(enum ggml_type t, char * p, size_t nblocks) {
    const size_t bs = ggml_type_size(t);
    for (size_t i = 0; i < nblocks * bs; i++) {
        p[i] = (char) rnd8();
    }
    for (size_t i = 0; i < nblocks; i++) {
        char * x = p + i * bs;
        if (t == GGML_TYPE_Q8_K) {
            block_q8_K * y = (block_q8_K *) x;
            y->d = 0.001f * (float) (1 + rnd8() % 50);
            for (int g = 0; g < QK_K / 16; g++) {
                int s = 0;
                for (int e = 0; e < 16; e++) {
                    s += y->qs[16 * g + e];
                }
                y->bsums[g] = (int16_t) s;
            }
            continue;
        }
        const ggmlx_half h = ggmlx_fp32_to_fp16(0.001f * (float) (1 + rnd8() % 50));
        switch (t) {
            case GGML_TYPE_Q2_K: memcpy(x + bs - 4, &h, 2); memcpy(x + bs - 2, &h, 2); break;
            case GGML_TYPE_Q3_K:
            case GGML_TYPE_Q6_K: memcpy(x + bs - 2, &h, 2); break;
            case GGML_TYPE_Q4_1:
            case GGML_TYPE_Q5_1:
            case GGML_TYPE_Q4_K:
            case GGML_TYPE_Q5_K:
            case GGML_TYPE_Q8_1: memcpy(x, &h, 2); memcpy(x + 2, &h, 2); break;
            default: memcpy(x, &h, 2); break;
        }
    }
}

/* the emulated AMX kernel against the VNNI kernel on the same data (m covers whole tiles and a tail) */
static void check_against_vnni(enum ggml_type t, enum ggml_type bt, int64_t n, int64_t m, int64_t k) {
    const size_t lda = ggml_row_size(t, k), ldb = ggml_row_size(bt, k);
    char * a = malloc(lda * (size_t) n);
    char * b = malloc(ldb * (size_t) m);
    float * c0 = malloc(sizeof(float) * (size_t) (n * m));
    float * c1 = malloc(sizeof(float) * (size_t) (n * m));
    cr_assert(a && b && c0 && c1);
    fill_blocks(t, a, lda * (size_t) n / ggml_type_size(t));
    fill_blocks(bt, b, ldb * (size_t) m / ggml_type_size(bt));
    setenv("GGMLX_MATMUL_KERNEL", "avx512", 1);
    cr_assert(ggmlx_qgemm(t, k, a, lda, n, b, ldb, m, c0, (size_t) n), "%s declined", ggml_type_name(t));
    setenv("GGMLX_MATMUL_KERNEL", "amx", 1);
    cr_assert(ggmlx_qgemm(t, k, a, lda, n, b, ldb, m, c1, (size_t) n));
    cr_assert_not(emu.fault, "%s: a tile instruction was given shapes the hardware faults on", ggml_type_name(t));
    for (int64_t i = 0; i < n * m; i++) {
        const double tol = 1e-5 * (fabs((double) c0[i]) + 1.0);
        cr_assert(fabs((double) c1[i] - (double) c0[i]) <= tol, "%s: c[%lld] amx %.9g vnni %.9g", ggml_type_name(t),
                  (long long) i, (double) c1[i], (double) c0[i]);
    }
    free(a);
    free(b);
    free(c0);
    free(c1);
}

/*
 * The library refers to the IQ4 codebook weakly (see qgemm-unpack.c), which does not bring it in
 * from a static archive by itself: this strong reference does, as the IQ4 vec_dot kernels do in
 * a full build.
 */
const int8_t * const test_iq4_codebook = ggmlx_kvalues_iq4nl;

Test(quant_gemm_amx_emu, probe_passes_on_the_emulated_tiles) {
    cr_assert(ggmlx_qgemm_amx_available());
    cr_assert_not(emu.fault);
}

Test(quant_gemm_amx_emu, every_type_matches_the_vnni_kernel) {
    if (!cpu_has_vnni()) {
        cr_skip_test("no AVX-512 VNNI on this CPU: the AMX kernel's float part needs AVX-512");
    }
    static const struct {
        enum ggml_type t, bt;
    } types[] = {
        { GGML_TYPE_Q4_0, GGML_TYPE_Q8_0 }, { GGML_TYPE_Q4_1, GGML_TYPE_Q8_1 }, { GGML_TYPE_Q5_0, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q5_1, GGML_TYPE_Q8_1 }, { GGML_TYPE_Q8_0, GGML_TYPE_Q8_0 }, { GGML_TYPE_IQ4_NL, GGML_TYPE_Q8_0 },
        { GGML_TYPE_Q2_K, GGML_TYPE_Q8_K }, { GGML_TYPE_Q3_K, GGML_TYPE_Q8_K }, { GGML_TYPE_Q4_K, GGML_TYPE_Q8_K },
        { GGML_TYPE_Q5_K, GGML_TYPE_Q8_K }, { GGML_TYPE_Q6_K, GGML_TYPE_Q8_K }, { GGML_TYPE_IQ4_XS, GGML_TYPE_Q8_K },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        check_against_vnni(types[i].t, types[i].bt, 19, 37, 512);
        check_against_vnni(types[i].t, types[i].bt, 16, 16, 256);
        check_against_vnni(types[i].t, types[i].bt, 3, 9, 256);
    }
}

#else

Test(quant_gemm_amx_emu, not_x86_64_linux) { cr_skip_test("the AMX kernel exists on x86-64 Linux only"); }

#endif
