/*
 * quant-validate.c -- block checks of ggml_validate_row_data (quant-validate.h): the rules of
 * upstream's validator. Blocks are read with memcpy, since a row of a file need not be aligned.
 */
#include "quant-validate.h"
#include "quant-blocks.h"

#include "ggml-impl.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static inline uint16_t load_u16(const uint8_t * p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline bool half_is_finite(uint16_t h) {
    return (h & 0x7c00u) != 0x7c00u;
}

/* f16 scales at off1 (and off2 unless it is SIZE_MAX) of every block */
static bool check_halves(const char * func, enum ggml_type type, const uint8_t * p, size_t nblocks,
                         size_t block_size, size_t off1, const char * name1, size_t off2, const char * name2) {
    for (size_t i = 0; i < nblocks; i++, p += block_size) {
        if (!half_is_finite(load_u16(p + off1))) {
            ggmlx_error(func, "%s block %zu: %s is not finite (0x%04x)", ggml_type_name(type), i, name1,
                        load_u16(p + off1));
            return false;
        }
        if (off2 != SIZE_MAX && !half_is_finite(load_u16(p + off2))) {
            ggmlx_error(func, "%s block %zu: %s is not finite (0x%04x)", ggml_type_name(type), i, name2,
                        load_u16(p + off2));
            return false;
        }
    }
    return true;
}

#define CHECK_D(block) \
    check_halves(func, type, p, nblocks, sizeof(block), offsetof(block, d), "d", SIZE_MAX, NULL)
#define CHECK_D_AND(block, field) \
    check_halves(func, type, p, nblocks, sizeof(block), offsetof(block, d), "d", offsetof(block, field), #field)

static bool check_mxfp4(const char * func, const uint8_t * p, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++, p += sizeof(block_mxfp4)) {
        if (p[offsetof(block_mxfp4, e)] == 0xFF) {
            ggmlx_error(func, "mxfp4 block %zu: exponent e is 0xFF (NaN)", i);
            return false;
        }
    }
    return true;
}

static bool check_q8_k(const char * func, const uint8_t * p, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++, p += sizeof(block_q8_K)) {
        float d;
        memcpy(&d, p + offsetof(block_q8_K, d), sizeof d);
        if (!isfinite(d)) {
            ggmlx_error(func, "q8_K block %zu: d is not finite", i);
            return false;
        }
    }
    return true;
}

/* IQ1_M has no d field: its f16 scale is the top nibbles of the four u16 words of scales */
static bool check_iq1_m(const char * func, const uint8_t * p, size_t nblocks) {
    for (size_t i = 0; i < nblocks; i++, p += sizeof(block_iq1_m)) {
        const uint8_t * sc = p + offsetof(block_iq1_m, scales);
        const uint16_t h = (uint16_t) ((load_u16(sc) >> 12) | ((load_u16(sc + 2) >> 8) & 0x00f0u) |
                                       ((load_u16(sc + 4) >> 4) & 0x0f00u) | (load_u16(sc + 6) & 0xf000u));
        if (!half_is_finite(h)) {
            ggmlx_error(func, "iq1_m block %zu: the scale assembled from scales is not finite (0x%04x)", i, h);
            return false;
        }
    }
    return true;
}

bool ggmlx_validate_quant_blocks(const char * func, enum ggml_type type, const void * data, size_t nblocks) {
    const uint8_t * p = data;
    switch (type) {
    case GGML_TYPE_Q4_0:    return CHECK_D(block_q4_0);
    case GGML_TYPE_Q4_1:    return CHECK_D_AND(block_q4_1, m);
    case GGML_TYPE_Q5_0:    return CHECK_D(block_q5_0);
    case GGML_TYPE_Q5_1:    return CHECK_D_AND(block_q5_1, m);
    case GGML_TYPE_Q8_0:    return CHECK_D(block_q8_0);
    case GGML_TYPE_Q1_0:    return CHECK_D(block_q1_0);
    case GGML_TYPE_Q2_0:    return CHECK_D(block_q2_0);
    case GGML_TYPE_TQ1_0:   return CHECK_D(block_tq1_0);
    case GGML_TYPE_TQ2_0:   return CHECK_D(block_tq2_0);
    case GGML_TYPE_MXFP4:   return check_mxfp4(func, p, nblocks);
    case GGML_TYPE_NVFP4:   return true; /* every UE4M3 byte decodes to a finite scale */
    case GGML_TYPE_Q2_K:    return CHECK_D_AND(block_q2_K, dmin);
    case GGML_TYPE_Q3_K:    return CHECK_D(block_q3_K);
    case GGML_TYPE_Q4_K:    return CHECK_D_AND(block_q4_K, dmin);
    case GGML_TYPE_Q5_K:    return CHECK_D_AND(block_q5_K, dmin);
    case GGML_TYPE_Q6_K:    return CHECK_D(block_q6_K);
    case GGML_TYPE_Q8_K:    return check_q8_k(func, p, nblocks);
    case GGML_TYPE_IQ4_NL:  return CHECK_D(block_iq4_nl);
    case GGML_TYPE_IQ4_XS:  return CHECK_D(block_iq4_xs);
    case GGML_TYPE_IQ2_XXS: return CHECK_D(block_iq2_xxs);
    case GGML_TYPE_IQ2_XS:  return CHECK_D(block_iq2_xs);
    case GGML_TYPE_IQ2_S:   return CHECK_D(block_iq2_s);
    case GGML_TYPE_IQ3_XXS: return CHECK_D(block_iq3_xxs);
    case GGML_TYPE_IQ3_S:   return CHECK_D(block_iq3_s);
    case GGML_TYPE_IQ1_S:   return CHECK_D(block_iq1_s);
    case GGML_TYPE_IQ1_M:   return check_iq1_m(func, p, nblocks);
    case GGML_TYPE_Q8_1:
        ggmlx_error(func, "q8_1 is not a storage type: its rows are never valid data");
        return false;
    default:
        ggmlx_error(func, "%s is not a quantized type", ggml_type_name(type));
        return false;
    }
}
