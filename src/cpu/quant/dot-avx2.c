/*
 * dot-avx2.c -- the x86 kernels of dot-x86.h compiled for AVX2 + FMA + F16C.
 * Chosen at run time only where the CPU has these (quant-traits-cpu.c).
 */
#include "qdot.h"

#include <math.h>
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
/* only the kernels get the target: the code that installs them runs on any x86-64 CPU */
#    if defined(__clang__)
#        include <immintrin.h>
#        pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#    else
#        pragma GCC push_options
#        pragma GCC target("avx2,fma,f16c")
#        include <immintrin.h>
#    endif
#    define QX(name) name##_avx2
#    define QX_VNNI  0
#    include "dot-x86.h"
#    include "dot-iq-x86.h"
#    include "dot-lowbit-x86.h"
#    if defined(__clang__)
#        pragma clang attribute pop
#    else
#        pragma GCC pop_options
#    endif

void ggmlx_qdot_fill_avx2(ggmlx_qdot_table t) {
    ggmlx_qdot_apply(t, entries_avx2, sizeof(entries_avx2) / sizeof(entries_avx2[0]));
    ggmlx_qdot_apply(t, iq_entries_avx2, sizeof(iq_entries_avx2) / sizeof(iq_entries_avx2[0]));
    ggmlx_qdot_apply(t, lowbit_entries_avx2, sizeof(lowbit_entries_avx2) / sizeof(lowbit_entries_avx2[0]));
}
#else
void ggmlx_qdot_fill_avx2(ggmlx_qdot_table t) { (void)t; }
#endif
