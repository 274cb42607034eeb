/*
 * qgemm-kernel-amx.c -- the AMX micro-kernel of the quantized GEMM (Intel AMX-INT8), used only
 * when GGMLX_MATMUL_KERNEL=amx asks for it and the run-time check below passes.
 *
 * The panel of a is already in the layout of an AMX B tile (4 bytes of k for each of 16 rows per
 * 64-byte row), so one tdpbsud multiplies 16 rows of b (an A tile loaded straight from b's
 * blocks with b's row stride) by the 16 rows of the panel over one block of bk values: a 16 x 16
 * tile of the same integer dots the VNNI kernel computes. The block's scales are then applied
 * with AVX-512 as in that kernel. Rows of b past the last whole group of 16 go to the AVX-512
 * kernel.
 *
 * The check: CPUID must list AMX-TILE and AMX-INT8, Linux must grant the tile data state
 * (arch_prctl ARCH_REQ_XCOMP_PERM), and a child process must compute one known tile product
 * right (so a machine whose AMX faults or misbehaves costs a child, not the caller). It runs
 * once per process.
 */
#include "qgemm-impl.h"

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)

#    include <cpuid.h>
#    include <errno.h>
#    include <immintrin.h>
#    include <pthread.h>
#    include <string.h>
#    include <sys/syscall.h>
#    include <sys/wait.h>
#    include <unistd.h>

#    define QG_AMX_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl")))

#    define QG_ARCH_REQ_XCOMP_PERM 0x1023
#    define QG_XFEATURE_XTILEDATA  18

/* the 64-byte operand of ldtilecfg (palette 1) */
struct qg_tilecfg {
    uint8_t  palette;
    uint8_t  start_row;
    uint8_t  reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
};

/* tile 0: 16 x 16 int32 dots; tile 1: 16 rows of b, bk bytes each; tile 2: bk / 4 rows of the panel */
static QG_AMX_TARGET void qg_amx_configure(int bk) {
    struct qg_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.rows[0] = 16;
    cfg.colsb[0] = 64;
    cfg.rows[1] = 16;
    cfg.colsb[1] = (uint16_t) bk;
    cfg.rows[2] = (uint8_t) (bk / 4);
    cfg.colsb[2] = 64;
    _tile_loadconfig(&cfg);
}

/* one known product through the tiles, against plain C: true when AMX computes it right */
static QG_AMX_TARGET bool qg_amx_probe(void) {
    static int8_t a[16][32];
    static uint8_t b[8][64];
    static int32_t c[16][16];
    for (int i = 0; i < 16; i++) {
        for (int k = 0; k < 32; k++) {
            a[i][k] = (int8_t) ((i * 7 + k * 13) % 255 - 127);
        }
    }
    for (int t = 0; t < 8; t++) {
        for (int x = 0; x < 64; x++) {
            b[t][x] = (uint8_t) ((t * 31 + x * 17) % 256);
        }
    }
    qg_amx_configure(32);
    _tile_zero(0);
    _tile_loadd(1, a, 32);
    _tile_loadd(2, b, 64);
    _tile_dpbsud(0, 1, 2);
    _tile_stored(0, c, 64);
    _tile_release();
    for (int i = 0; i < 16; i++) {
        for (int n = 0; n < 16; n++) {
            int32_t want = 0;
            for (int k = 0; k < 32; k++) {
                want += a[i][k] * b[k / 4][n * 4 + k % 4];
            }
            if (c[i][n] != want) {
                return false;
            }
        }
    }
    return true;
}

static pthread_once_t qg_amx_once = PTHREAD_ONCE_INIT;
static bool qg_amx_ok;

#    if defined(GGMLX_QGEMM_AMX_EMULATED)
/* tests/test-quant-gemm-amx-emu.c compiles this file with the tile instructions emulated in C */
static void qg_amx_init(void) { qg_amx_ok = qg_amx_probe(); }
#    else
static void qg_amx_init(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24)) || !(edx & (1u << 25))) {
        return;
    }
    if (syscall(SYS_arch_prctl, QG_ARCH_REQ_XCOMP_PERM, QG_XFEATURE_XTILEDATA) != 0) {
        return;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        return;
    }
    if (pid == 0) {
        _exit(qg_amx_probe() ? 0 : 1);
    }
    int status = 0;
    pid_t got;
    do {
        got = waitpid(pid, &status, 0);
    } while (got < 0 && errno == EINTR);
    qg_amx_ok = got == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
#    endif

bool ggmlx_qgemm_amx_available(void) {
    pthread_once(&qg_amx_once, qg_amx_init);
    return qg_amx_ok;
}

/* rows [j0, j0 + 16) of b against the panel */
static QG_AMX_TARGET void qg_amx_tile16(const struct qg_panel * p, __mmask16 mask, const struct qg_bview * b,
                                        int64_t j0, float * c, size_t ldc) {
    const int bk = p->bk;
    const int64_t nbb = p->k / b->qk;
    const int per = b->qk / bk;
    int32_t dots[16][16] __attribute__((aligned(64)));
    float acc[16][16] __attribute__((aligned(64)));
    memset(acc, 0, sizeof acc);
    const char * base = b->b + (size_t) j0 * b->ldb + b->qs_off;
    for (int64_t bb = 0; bb < nbb; bb++) {
        __m512 sum[16];
        for (int jj = 0; jj < 16; jj++) {
            sum[jj] = _mm512_setzero_ps();
        }
        for (int sb = 0; sb < per; sb++) {
            const int64_t blk = bb * per + sb;
            _tile_zero(0);
            _tile_loadd(1, base + (size_t) bb * b->bsize + (size_t) (sb * bk), (long) b->ldb);
            _tile_loadd(2, p->u + (size_t) blk * (size_t) bk * QG_NR, 64);
            _tile_dpbsud(0, 1, 2);
            _tile_stored(0, dots, 64);
            const __m512 s = _mm512_loadu_ps(p->sa + blk * QG_NR);
            for (int jj = 0; jj < 16; jj++) {
                const int32_t corr = b->corr[qg_at(j0 + jj, blk, b->nblk)];
                const __m512i d = _mm512_add_epi32(_mm512_load_si512((const void *) dots[jj]), _mm512_set1_epi32(corr));
                sum[jj] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), s, sum[jj]);
            }
            if (p->has_min) {
                const __m512 cv = _mm512_loadu_ps(p->ca + blk * QG_NR);
                for (int jj = 0; jj < 16; jj++) {
                    const float dbs = b->dbs[qg_at(j0 + jj, blk, b->nblk)];
                    _mm512_store_ps(acc[jj], _mm512_fmadd_ps(cv, _mm512_set1_ps(dbs), _mm512_load_ps(acc[jj])));
                }
            }
        }
        for (int jj = 0; jj < 16; jj++) {
            const float db = b->db[qg_at(j0 + jj, bb, b->nbb)];
            _mm512_store_ps(acc[jj], _mm512_fmadd_ps(sum[jj], _mm512_set1_ps(db), _mm512_load_ps(acc[jj])));
        }
    }
    for (int jj = 0; jj < 16; jj++) {
        _mm512_mask_storeu_ps(c + (size_t) (j0 + jj) * ldc, mask, _mm512_load_ps(acc[jj]));
    }
}

QG_AMX_TARGET void ggmlx_qgemm_kernel_amx(const struct qg_panel * p, int nr, const struct qg_bview * b, int64_t m,
                                          float * c, size_t ldc) {
    const __mmask16 mask = (__mmask16) ((1u << nr) - 1u);
    const int64_t m16 = m / 16 * 16;
    if (m16 > 0) {
        qg_amx_configure(p->bk);
        for (int64_t j0 = 0; j0 < m16; j0 += 16) {
            qg_amx_tile16(p, mask, b, j0, c, ldc);
        }
        _tile_release();
    }
    if (m16 < m) {
        /* the same view from row m16 on: a whole number of groups of the per-row scalars */
        struct qg_bview rest = *b;
        rest.b += (size_t) m16 * b->ldb;
        rest.corr += qg_at(m16, 0, b->nblk);
        rest.dbs = b->dbs != NULL ? b->dbs + qg_at(m16, 0, b->nblk) : NULL;
        rest.db += qg_at(m16, 0, b->nbb);
        ggmlx_qgemm_kernel_avx512(p, nr, &rest, m - m16, c + (size_t) m16 * ldc, ldc);
    }
}

#endif
