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
