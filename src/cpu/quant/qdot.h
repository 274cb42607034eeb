/*
 * qdot.h -- the CPU kernels behind ggml_get_type_traits_cpu: the activation quantizers
 * (F32 -> Q8_0 / Q8_1 / Q8_K) and the dot product of a row of every type with a row of its
 * vec_dot_type, in portable C and, on x86, AVX2 and AVX-512 variants.
 *
 * Each instruction set fills a whole table: it starts from the one below it (portable <- avx2 <-
 * avx512) and replaces the entries it has kernels for, so a forced variant never lacks a type.
 * The activation quantizers of every variant give the same bytes as the portable ones, which
 * follow the reference quantizers exactly.
 */
#ifndef GGMLX_QDOT_H
#define GGMLX_QDOT_H

#include "ggml.h"
#include "ggml-cpu.h"
#include "quant/quant-legacy.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum ggmlx_qdot_isa {
    GGMLX_QDOT_PORTABLE = 0,
    GGMLX_QDOT_AVX2     = 1,
    GGMLX_QDOT_AVX512   = 2,
    GGMLX_QDOT_ISA_COUNT
};

/* The table of one variant, or of the best below it the CPU has; NULL for a type out of range. */
const struct ggml_type_traits_cpu * ggmlx_type_traits_cpu_isa(enum ggml_type type, enum ggmlx_qdot_isa isa);

/* The variant ggml_get_type_traits_cpu uses now (the CPU's best, or GGMLX_MATMUL_KERNEL's). */
enum ggmlx_qdot_isa ggmlx_qdot_isa_active(void);

/* The best variant this CPU runs, and the variant's name ("portable", "avx2", "avx512"). */
enum ggmlx_qdot_isa ggmlx_qdot_isa_best(void);
const char *        ggmlx_qdot_isa_name(enum ggmlx_qdot_isa isa);

/*
 * Matrix-vector kernels: s[r] = the dot product of weight row r (rows bx bytes apart) with the one
 * converted activation row vy, for r < nr: what nr calls of the type's vec_dot give, but several
 * rows meet each load and rearrangement of the activations. NULL for a type without one (the
 * caller then calls vec_dot per row).
 */
typedef void (*ggmlx_gemv_t)(int n, float * restrict s, const void * restrict vx, size_t bx, int nr,
                             const void * restrict vy);

ggmlx_gemv_t ggmlx_qdot_gemv_isa(enum ggml_type type, enum ggmlx_qdot_isa isa);
ggmlx_gemv_t ggmlx_qdot_gemv(enum ggml_type type); /* the active variant's */

typedef ggmlx_gemv_t ggmlx_gemv_table[GGML_TYPE_COUNT];
void ggmlx_qdot_fill_gemv_avx512(ggmlx_gemv_table g); /* no-op where the CPU or compiler lacks it */

/* ---- filling the tables (each variant's file) ---------------------------------------------- */

typedef struct ggml_type_traits_cpu ggmlx_qdot_table[GGML_TYPE_COUNT];

void ggmlx_qdot_fill_portable(ggmlx_qdot_table t);
void ggmlx_qdot_fill_float(ggmlx_qdot_table t);  /* the families of the portable table */
void ggmlx_qdot_fill_legacy(ggmlx_qdot_table t);
void ggmlx_qdot_fill_k(ggmlx_qdot_table t);
void ggmlx_qdot_fill_iq(ggmlx_qdot_table t);
void ggmlx_qdot_fill_avx2(ggmlx_qdot_table t);   /* no-op where the compiler cannot target x86 */
void ggmlx_qdot_fill_avx512(ggmlx_qdot_table t);
void ggmlx_qdot_fill_avx512_base(ggmlx_qdot_table t); /* without the VBMI kernels (tests) */

/*
 * What an instruction-set file provides: entries (a NULL member leaves the table's one), applied
 * by ggmlx_qdot_apply. The lists are data, so the code that applies them is compiled for the
 * baseline CPU and never for the instruction set it installs.
 */
struct ggmlx_qdot_entry {
    enum ggml_type    type;
    ggml_from_float_t from_float;
    ggml_vec_dot_t    vec_dot;
};

void ggmlx_qdot_apply(ggmlx_qdot_table t, const struct ggmlx_qdot_entry * e, size_t n);

/* ---- portable kernels the SIMD files fall back to or compare with -------------------------- */

void ggmlx_quantize_row_q8_0_cpu(const float * restrict x, void * restrict y, int64_t k);
void ggmlx_quantize_row_q8_1_cpu(const float * restrict x, void * restrict y, int64_t k);
void ggmlx_quantize_row_q8_K_cpu(const float * restrict x, void * restrict y, int64_t k);

/* the FP4 scale decoders, ggmlx_e8m0_to_fp32_half and ggmlx_ue4m3_to_fp32, are the formats' own
 * (quant/quant-legacy.h) */

#define GGMLX_VEC_DOT_ARGS                                                                                     \
    int n, float * restrict s, size_t bs, const void * restrict vx, size_t bx, const void * restrict vy,      \
        size_t by, int nrc

#define GGMLX_VEC_DOT_UNUSED ((void)bs, (void)bx, (void)by, (void)nrc)

#endif
