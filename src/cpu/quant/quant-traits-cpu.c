/*
 * quant-traits-cpu.c -- ggml_get_type_traits_cpu: per type, the CPU conversion from F32 and the
 * dot product with the row type it pairs with (formats' vec_dot_type). One table per instruction
 * set is built once; each call picks the table the same way the matrix kernels pick theirs: the
 * best the CPU runs, or the one GGMLX_MATMUL_KERNEL=portable|avx2|avx512 names (falling back to
 * the best available below it).
 */
#include "qdot.h"

#include "ggml-impl.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


static ggmlx_qdot_table qdot_tables[GGMLX_QDOT_ISA_COUNT];
static ggmlx_gemv_table qdot_gemv[GGMLX_QDOT_ISA_COUNT]; /* NULL but where a variant has one */
static pthread_once_t   qdot_once = PTHREAD_ONCE_INIT;

/* which activation type each weight type's dot takes (formats.md §2) */
static enum ggml_type qdot_vec_dot_type(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q8_0:
    case GGML_TYPE_IQ4_NL:
    case GGML_TYPE_MXFP4:
    case GGML_TYPE_NVFP4:
    case GGML_TYPE_Q1_0:
    case GGML_TYPE_Q2_0:
        return GGML_TYPE_Q8_0;
    case GGML_TYPE_Q4_1:
    case GGML_TYPE_Q5_1:
    case GGML_TYPE_Q8_1:
        return GGML_TYPE_Q8_1;
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K:
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K:
    case GGML_TYPE_Q6_K:
    case GGML_TYPE_Q8_K:
    case GGML_TYPE_IQ2_XXS:
    case GGML_TYPE_IQ2_XS:
    case GGML_TYPE_IQ2_S:
    case GGML_TYPE_IQ3_XXS:
    case GGML_TYPE_IQ3_S:
    case GGML_TYPE_IQ1_S:
    case GGML_TYPE_IQ1_M:
    case GGML_TYPE_IQ4_XS:
    case GGML_TYPE_TQ1_0:
    case GGML_TYPE_TQ2_0:
        return GGML_TYPE_Q8_K;
    default:
        return type;
    }
}

/*
 * Codebook types whose quantizers need ggml_quantize_init's search tables: upstream's CPU traits
 * leave their from_float out (so CPY to them is refused), and so do these.
 */
static bool qdot_needs_init(enum ggml_type type) {
    switch (type) {
    case GGML_TYPE_IQ2_XXS:
    case GGML_TYPE_IQ2_XS:
    case GGML_TYPE_IQ2_S:
    case GGML_TYPE_IQ3_XXS:
    case GGML_TYPE_IQ3_S:
    case GGML_TYPE_IQ1_S:
    case GGML_TYPE_IQ1_M:
        return true;
    default:
        return false;
    }
}

void ggmlx_qdot_fill_portable(ggmlx_qdot_table t) {
    for (int i = 0; i < GGML_TYPE_COUNT; i++) {
        const enum ggml_type             type = (enum ggml_type)i;
        const struct ggml_type_traits * tt   = ggml_get_type_traits(type);
        t[i].vec_dot_type                    = qdot_vec_dot_type(type);
        t[i].nrows                           = 1;
        t[i].vec_dot                         = NULL;
        /* the other quantized types convert with their reference quantizer, as upstream does */
        t[i].from_float = tt != NULL && tt->is_quantized && !qdot_needs_init(type) ? tt->from_float_ref : NULL;
    }
    ggmlx_qdot_fill_float(t);
    t[GGML_TYPE_Q8_0].from_float = ggmlx_quantize_row_q8_0_cpu;
    t[GGML_TYPE_Q8_1].from_float = ggmlx_quantize_row_q8_1_cpu;
    t[GGML_TYPE_Q8_K].from_float = ggmlx_quantize_row_q8_K_cpu;
    ggmlx_qdot_fill_legacy(t);
    ggmlx_qdot_fill_k(t);
    ggmlx_qdot_fill_iq(t);
}

void ggmlx_qdot_apply(ggmlx_qdot_table t, const struct ggmlx_qdot_entry * e, size_t n) {
    for (size_t k = 0; k < n; k++) {
        if (e[k].from_float != NULL) {
            t[e[k].type].from_float = e[k].from_float;
        }
        if (e[k].vec_dot != NULL) {
            t[e[k].type].vec_dot = e[k].vec_dot;
        }
    }
}

static void qdot_build(void) {
    ggmlx_qdot_fill_portable(qdot_tables[GGMLX_QDOT_PORTABLE]);
    memcpy(qdot_tables[GGMLX_QDOT_AVX2], qdot_tables[GGMLX_QDOT_PORTABLE], sizeof(ggmlx_qdot_table));
    ggmlx_qdot_fill_avx2(qdot_tables[GGMLX_QDOT_AVX2]);
    memcpy(qdot_tables[GGMLX_QDOT_AVX512], qdot_tables[GGMLX_QDOT_AVX2], sizeof(ggmlx_qdot_table));
    ggmlx_qdot_fill_avx512(qdot_tables[GGMLX_QDOT_AVX512]);
    ggmlx_qdot_fill_gemv_avx512(qdot_gemv[GGMLX_QDOT_AVX512]);
}

enum ggmlx_qdot_isa ggmlx_qdot_isa_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    /* the AVX-512 kernels use byte/word ops and VNNI dot products on 256- and 512-bit vectors */
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) {
        return GGMLX_QDOT_AVX512;
    }
    if (avx2) {
        return GGMLX_QDOT_AVX2;
    }
#endif
    return GGMLX_QDOT_PORTABLE;
}

const char * ggmlx_qdot_isa_name(enum ggmlx_qdot_isa isa) {
    switch (isa) {
    case GGMLX_QDOT_AVX2:
        return "avx2";
    case GGMLX_QDOT_AVX512:
        return "avx512";
    default:
        return "portable";
    }
}

enum ggmlx_qdot_isa ggmlx_qdot_isa_active(void) {
    const enum ggmlx_qdot_isa best = ggmlx_qdot_isa_best();
    const char *              want = getenv("GGMLX_MATMUL_KERNEL");
    if (want != NULL && strcmp(want, "portable") == 0) {
        return GGMLX_QDOT_PORTABLE;
    }
    if (want != NULL && strcmp(want, "avx2") == 0 && best >= GGMLX_QDOT_AVX2) {
        return GGMLX_QDOT_AVX2;
    }
    return best;
}

const struct ggml_type_traits_cpu * ggmlx_type_traits_cpu_isa(enum ggml_type type, enum ggmlx_qdot_isa isa) {
    if ((int)type < 0 || (int)type >= GGML_TYPE_COUNT || (int)isa < 0 || isa >= GGMLX_QDOT_ISA_COUNT) {
        return NULL;
    }
    const enum ggmlx_qdot_isa best = ggmlx_qdot_isa_best();
    pthread_once(&qdot_once, qdot_build);
    return &qdot_tables[isa <= best ? isa : best][type];
}

const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type) {
    if ((int)type < 0 || (int)type >= GGML_TYPE_COUNT) {
        ggmlx_error(__func__, "type %d is not a ggml_type (0 .. %d)", (int)type, GGML_TYPE_COUNT - 1);
        return NULL;
    }
    return ggmlx_type_traits_cpu_isa(type, ggmlx_qdot_isa_active());
}

ggmlx_gemv_t ggmlx_qdot_gemv_isa(enum ggml_type type, enum ggmlx_qdot_isa isa) {
    if ((int)type < 0 || (int)type >= GGML_TYPE_COUNT || (int)isa < 0 || isa >= GGMLX_QDOT_ISA_COUNT) {
        return NULL;
    }
    const enum ggmlx_qdot_isa best = ggmlx_qdot_isa_best();
    pthread_once(&qdot_once, qdot_build);
    return qdot_gemv[isa <= best ? isa : best][type];
}

ggmlx_gemv_t ggmlx_qdot_gemv(enum ggml_type type) { return ggmlx_qdot_gemv_isa(type, ggmlx_qdot_isa_active()); }
