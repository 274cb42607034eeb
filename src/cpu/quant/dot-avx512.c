/*
 * dot-avx512.c -- the x86 kernels of dot-x86.h compiled for AVX-512 (F, BW, VL, VNNI), whose vpdpbusd does each byte dot product in one instruction.
 * Chosen at run time only where the CPU has these (quant-traits-cpu.c).
 */
#include "qdot.h"

#include <math.h>
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
#    if defined(__clang__)
#        include <immintrin.h>
#        pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))), apply_to = function)
#    else
#        pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")
#        include <immintrin.h>
#    endif
#    define QX(name) name##_avx512
#    define QX_VNNI  1
#    include "dot-x86.h"
#    if defined(__clang__)
#        pragma clang attribute pop
#    endif

void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { QX(fill)(t); }
#else
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t) { (void)t; }
#endif
