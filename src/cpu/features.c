/*
 * features.c -- CPU features probed at run time, so one binary runs on any x86-64.
 */
#include "ggml-cpu.h"

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#    define HAS(feature) (__builtin_cpu_supports(feature) ? 1 : 0)
#else
#    define HAS(feature) 0
#endif

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;

static void init_once(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#endif
}

void ggml_cpu_init(void) {
    pthread_once(&g_init_once, init_once);
}

int ggml_cpu_has_sse3(void)        { ggml_cpu_init(); return HAS("sse3"); }
int ggml_cpu_has_ssse3(void)       { ggml_cpu_init(); return HAS("ssse3"); }
int ggml_cpu_has_avx(void)         { ggml_cpu_init(); return HAS("avx"); }
int ggml_cpu_has_avx2(void)        { ggml_cpu_init(); return HAS("avx2"); }
int ggml_cpu_has_fma(void)         { ggml_cpu_init(); return HAS("fma"); }
int ggml_cpu_has_avx512(void)      { ggml_cpu_init(); return HAS("avx512f"); }
int ggml_cpu_has_avx512_bf16(void) { ggml_cpu_init(); return HAS("avx512bf16"); }

int ggml_cpu_has_f16c(void) {
    ggml_cpu_init();
#if defined(__x86_64__) || defined(__i386__)
    /* gcc 12 has no "f16c" name for __builtin_cpu_supports: read CPUID leaf 1, ECX bit 29 */
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    return (c >> 29) & 1u;
#else
    return 0;
#endif
}

#if defined(__x86_64__) || defined(__i386__)
#    include <cpuid.h>

/* CPUID leaf 7 subleaf sub, register reg (0 eax, 1 ebx, 2 ecx, 3 edx), bit: 0 when absent */
static int leaf7_bit(unsigned sub, int reg, int bit) {
    unsigned r[4];
    if (!__get_cpuid_count(7, sub, &r[0], &r[1], &r[2], &r[3])) {
        return 0;
    }
    return (int) ((r[reg] >> bit) & 1u);
}

/* the extended register state the OS saves (XCR0), 0 when it has no XSAVE */
static unsigned long long os_xcr0(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1u)) { /* OSXSAVE */
        return 0;
    }
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long) hi << 32) | lo;
}

/* AVX-512 state (opmask, upper ZMM halves, ZMM16-31) and AVX state saved by the OS */
static int os_avx512(void) {
    return (os_xcr0() & 0xe6u) == 0xe6u;
}

static int os_avx(void) {
    return (os_xcr0() & 0x6u) == 0x6u;
}

/* tile configuration and data state (XCR0 bits 17, 18) */
static int os_amx(void) {
    return (os_xcr0() & 0x60000ull) == 0x60000ull;
}

int ggml_cpu_has_avx512_vbmi(void) { return leaf7_bit(0, 2, 1) && os_avx512(); }
int ggml_cpu_has_avx512_vnni(void) { return leaf7_bit(0, 2, 11) && os_avx512(); }
int ggml_cpu_has_avx_vnni(void)    { return leaf7_bit(1, 0, 4) && os_avx(); }
int ggml_cpu_has_bmi2(void)        { return leaf7_bit(0, 1, 8); }
int ggml_cpu_has_amx_int8(void)    { return leaf7_bit(0, 3, 25) && os_amx(); }
#else
int ggml_cpu_has_avx512_vbmi(void) { return 0; }
int ggml_cpu_has_avx512_vnni(void) { return 0; }
int ggml_cpu_has_avx_vnni(void)    { return 0; }
int ggml_cpu_has_bmi2(void)        { return 0; }
int ggml_cpu_has_amx_int8(void)    { return 0; }
#endif

/* other architectures' features: ggmlx builds its SIMD kernels for x86-64 only */
int ggml_cpu_has_neon(void)        { return 0; }
int ggml_cpu_has_arm_fma(void)     { return 0; }
int ggml_cpu_has_fp16_va(void)     { return 0; }
int ggml_cpu_has_dotprod(void)     { return 0; }
int ggml_cpu_has_matmul_int8(void) { return 0; }
int ggml_cpu_has_sve(void)         { return 0; }
int ggml_cpu_get_sve_cnt(void)     { return 0; }
int ggml_cpu_has_sme(void)         { return 0; }
int ggml_cpu_has_sme2(void)        { return 0; }
int ggml_cpu_has_riscv_v(void)     { return 0; }
int ggml_cpu_get_rvv_vlen(void)    { return 0; }
int ggml_cpu_has_vsx(void)         { return 0; }
int ggml_cpu_has_vxe(void)         { return 0; }
int ggml_cpu_has_wasm_simd(void)   { return 0; }
int ggml_cpu_has_llamafile(void)   { return 0; }
