/*
 * quant-blocks.h -- the block of every quantized ggml type, byte for byte as it lies in a GGUF file
 * and in a tensor's memory. These structs are the file format: field order, sizes and packing are
 * fixed by upstream ggml's files, so a static assert pins each size to the type table in types.c.
 * Every multi-byte field is little-endian; a "half" is an IEEE binary16 stored as uint16_t.
 *
 * Kept free of code so that the CPU kernels (src/cpu), the formats (src/core/quant) and the tests
 * all read the same definitions.
 */
#ifndef GGMLX_QUANT_BLOCKS_H
#define GGMLX_QUANT_BLOCKS_H

#include <stdint.h>

typedef uint16_t ggmlx_half;

#define QK4_0  32
#define QK4_1  32
#define QK5_0  32
#define QK5_1  32
#define QK8_0  32
#define QK8_1  32
#define QK4_NL 32
#define QK_MXFP4 32
#define QK_NVFP4 64
#define QK_NVFP4_SUB 16
#define QK1_0  128
#define QK2_0  64
#define QK_K   256
#define K_SCALE_SIZE 12

/* ---- 32-element formats ----------------------------------------------------------------------- */

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK4_0 / 2];
} block_q4_0;

typedef struct {
    ggmlx_half d;
    ggmlx_half m;
    uint8_t    qs[QK4_1 / 2];
} block_q4_1;

typedef struct {
    ggmlx_half d;
    uint8_t    qh[4];
    uint8_t    qs[QK5_0 / 2];
} block_q5_0;

typedef struct {
    ggmlx_half d;
    ggmlx_half m;
    uint8_t    qh[4];
    uint8_t    qs[QK5_1 / 2];
} block_q5_1;

typedef struct {
    ggmlx_half d;
    int8_t     qs[QK8_0];
} block_q8_0;

/* s = d * sum(qs), kept so that a dot with Q4_1/Q5_1 can add their minimum without a second pass */
typedef struct {
    ggmlx_half d;
    ggmlx_half s;
    int8_t     qs[QK8_1];
} block_q8_1;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK4_NL / 2];
} block_iq4_nl;

/* e: an E8M0 exponent, the scale is 2^(e - 128) against the doubled E2M1 table */
typedef struct {
    uint8_t e;
    uint8_t qs[QK_MXFP4 / 2];
} block_mxfp4;

/* d[s]: a UE4M3 scale per 16-element sub-block */
typedef struct {
    uint8_t d[QK_NVFP4 / QK_NVFP4_SUB];
    uint8_t qs[QK_NVFP4 / 2];
} block_nvfp4;

/* ---- low-bit formats -------------------------------------------------------------------------- */

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK1_0 / 8];
} block_q1_0;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK2_0 / 4];
} block_q2_0;

/* ternary: d comes last in both */
typedef struct {
    uint8_t    qs[(QK_K - 4 * QK_K / 64) / 5];
    uint8_t    qh[QK_K / 64];
    ggmlx_half d;
} block_tq1_0;

typedef struct {
    uint8_t    qs[QK_K / 4];
    ggmlx_half d;
} block_tq2_0;

/* ---- K-quants (super-blocks of 256) ----------------------------------------------------------- */

typedef struct {
    uint8_t    scales[QK_K / 16];
    uint8_t    qs[QK_K / 4];
    ggmlx_half d;
    ggmlx_half dmin;
} block_q2_K;

typedef struct {
    uint8_t    hmask[QK_K / 8];
    uint8_t    qs[QK_K / 4];
    uint8_t    scales[12];
    ggmlx_half d;
} block_q3_K;

typedef struct {
    ggmlx_half d;
    ggmlx_half dmin;
    uint8_t    scales[K_SCALE_SIZE];
    uint8_t    qs[QK_K / 2];
} block_q4_K;

typedef struct {
    ggmlx_half d;
    ggmlx_half dmin;
    uint8_t    scales[K_SCALE_SIZE];
    uint8_t    qh[QK_K / 8];
    uint8_t    qs[QK_K / 2];
} block_q5_K;

typedef struct {
    uint8_t    ql[QK_K / 2];
    uint8_t    qh[QK_K / 4];
    int8_t     scales[QK_K / 16];
    ggmlx_half d;
} block_q6_K;

/* the activations' type for K-quant and IQ dot products; bsums are sums of 16 qs each */
typedef struct {
    float   d;
    int8_t  qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;

/* ---- IQ (codebook) formats -------------------------------------------------------------------- */

typedef struct {
    ggmlx_half d;
    uint16_t   qs[QK_K / 8];
} block_iq2_xxs;

typedef struct {
    ggmlx_half d;
    uint16_t   qs[QK_K / 8];
    uint8_t    scales[QK_K / 32];
} block_iq2_xs;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK_K / 4];
    uint8_t    qh[QK_K / 32];
    uint8_t    scales[QK_K / 32];
} block_iq2_s;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[3 * QK_K / 8];
} block_iq3_xxs;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK_K / 4];
    uint8_t    qh[QK_K / 32];
    uint8_t    signs[QK_K / 8];
    uint8_t    scales[QK_K / 64];
} block_iq3_s;

typedef struct {
    ggmlx_half d;
    uint8_t    qs[QK_K / 8];
    uint16_t   qh[QK_K / 32];
} block_iq1_s;

/* no d field: the half super-scale is spread over the top nibbles of the four u16 words of scales */
typedef struct {
    uint8_t qs[QK_K / 8];
    uint8_t qh[QK_K / 16];
    uint8_t scales[QK_K / 32];
} block_iq1_m;

typedef struct {
    ggmlx_half d;
    uint16_t   scales_h;
    uint8_t    scales_l[QK_K / 64];
    uint8_t    qs[QK_K / 2];
} block_iq4_xs;

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl");
_Static_assert(sizeof(block_mxfp4) == 17, "block_mxfp4");
_Static_assert(sizeof(block_nvfp4) == 36, "block_nvfp4");
_Static_assert(sizeof(block_q1_0) == 18, "block_q1_0");
_Static_assert(sizeof(block_q2_0) == 18, "block_q2_0");
_Static_assert(sizeof(block_tq1_0) == 54, "block_tq1_0");
_Static_assert(sizeof(block_tq2_0) == 66, "block_tq2_0");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K");
_Static_assert(sizeof(block_iq2_xxs) == 66, "block_iq2_xxs");
_Static_assert(sizeof(block_iq2_xs) == 74, "block_iq2_xs");
_Static_assert(sizeof(block_iq2_s) == 82, "block_iq2_s");
_Static_assert(sizeof(block_iq3_xxs) == 98, "block_iq3_xxs");
_Static_assert(sizeof(block_iq3_s) == 110, "block_iq3_s");
_Static_assert(sizeof(block_iq1_s) == 50, "block_iq1_s");
_Static_assert(sizeof(block_iq1_m) == 56, "block_iq1_m");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs");

#endif
