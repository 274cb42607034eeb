/*
 * qgemm-unpack.c -- rows of each weight format as unsigned bytes plus per-block (sa, ca), the
 * common form the GEMM micro-kernels read (see qgemm-impl.h). A signed value q is stored as
 * u = q + o with the type's fixed offset o (ggmlx_qgemm_unpack_offset), which keeps every u in
 * 0..255 for vpdpbusd; the offset is taken back on b's side. Formats with a minimum put it in ca.
 */
#include "qgemm-impl.h"

#include "ggml-math.h"
#include "quant/quant-blocks.h"
#include "quant/quant-tables.h"

#include <string.h>

/*
 * The IQ4 codebook is defined in libggml-base. A weak reference keeps libggml-cpu linkable
 * against a base library that does not export it: IQ4_NL and IQ4_XS weights are then declined
 * (left to vec_dot) instead of failing the link.
 */
#pragma weak ggmlx_kvalues_iq4nl

static bool qg_have_iq4_codebook(void) { return ggmlx_kvalues_iq4nl != NULL; }

static float h2f(ggmlx_half h) { return ggmlx_fp16_to_fp32(h); }

/* the 32 nibbles of a 16-byte group: element j low, element j + 16 high */
static void nibbles32(const uint8_t * restrict qs, uint8_t * restrict u) {
    for (int j = 0; j < 16; j++) {
        u[j] = qs[j] & 15;
        u[j + 16] = qs[j] >> 4;
    }
}

/* the 8 bits of x as bytes 0/1, bit i in byte i (three shift-and-mask steps, no loop over bits) */
static uint64_t spread8(uint8_t x) {
    uint64_t v = x;
    v = (v | (v << 28)) & 0x0000000F0000000Full;
    v = (v | (v << 14)) & 0x0003000300030003ull;
    v = (v | (v << 7)) & 0x0101010101010101ull;
    return v;
}

/* bit j of the 32-bit little-endian qh as bit 4 of u[j] */
static void fifth_bits32(const uint8_t qh_bytes[4], uint8_t * restrict u) {
    for (int g = 0; g < 4; g++) {
        uint64_t w;
        memcpy(&w, u + 8 * g, sizeof w);
        w |= spread8(qh_bytes[g]) << 4;
        memcpy(u + 8 * g, &w, sizeof w);
    }
}

/* offset-128 codebook values of IQ4_NL / IQ4_XS for the 32 nibbles of a group */
static void iq4_values32_c(const uint8_t * restrict qs, uint8_t * restrict u) {
    for (int j = 0; j < 16; j++) {
        u[j] = (uint8_t) (ggmlx_kvalues_iq4nl[qs[j] & 15] + 128);
        u[j + 16] = (uint8_t) (ggmlx_kvalues_iq4nl[qs[j] >> 4] + 128);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>

/* the same with the 16-entry codebook as a byte shuffle */
__attribute__((target("ssse3"))) static void iq4_values32_ssse3(const uint8_t * qs, uint8_t * u) {
    const __m128i lut = _mm_xor_si128(_mm_loadu_si128((const __m128i *) ggmlx_kvalues_iq4nl), _mm_set1_epi8(-128));
    const __m128i m4 = _mm_set1_epi8(15);
    const __m128i q = _mm_loadu_si128((const __m128i *) qs);
    _mm_storeu_si128((__m128i *) u, _mm_shuffle_epi8(lut, _mm_and_si128(q, m4)));
    _mm_storeu_si128((__m128i *) (u + 16), _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
}

static void iq4_values32(const uint8_t * qs, uint8_t * u) {
    if (__builtin_cpu_supports("ssse3")) {
        iq4_values32_ssse3(qs, u);
    } else {
        iq4_values32_c(qs, u);
    }
}
#else
static void iq4_values32(const uint8_t * qs, uint8_t * u) { iq4_values32_c(qs, u); }
#endif

/* the 6-bit scale and min of sub-block j of Q4_K / Q5_K */
static void scale_min_k4(int j, const uint8_t * q, int * sc, int * mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* the 2-bit fields of Q2_K / Q3_K: element 128h + 32s + l is (qs[32h + l] >> 2s) & 3 */
static void crumbs256(const uint8_t * qs, uint8_t * u) {
    for (int h = 0; h < 2; h++) {
        for (int s = 0; s < 4; s++) {
            for (int l = 0; l < 32; l++) {
                u[128 * h + 32 * s + l] = (qs[32 * h + l] >> (2 * s)) & 3;
            }
        }
    }
}

int ggmlx_qgemm_unpack_bk(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_0:
        case GGML_TYPE_Q4_1:
        case GGML_TYPE_Q5_0:
        case GGML_TYPE_Q5_1:
        case GGML_TYPE_Q8_0:
            return 32;
        case GGML_TYPE_IQ4_NL:
            return qg_have_iq4_codebook() ? 32 : 0;
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
            return 32;
        case GGML_TYPE_IQ4_XS:
            return qg_have_iq4_codebook() ? 32 : 0;
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q6_K:
            return 16;
        default:
            return 0;
    }
}

int ggmlx_qgemm_unpack_offset(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q4_0: return 8;
        case GGML_TYPE_Q5_0: return 16;
        case GGML_TYPE_Q8_0:
        case GGML_TYPE_IQ4_NL:
        case GGML_TYPE_IQ4_XS: return 128;
        case GGML_TYPE_Q3_K: return 4;
        case GGML_TYPE_Q6_K: return 32;
        default: return 0;
    }
}

int ggmlx_qgemm_unpack_qk(enum ggml_type t) {
    switch (t) {
        case GGML_TYPE_Q2_K:
        case GGML_TYPE_Q3_K:
        case GGML_TYPE_Q4_K:
        case GGML_TYPE_Q5_K:
        case GGML_TYPE_Q6_K:
        case GGML_TYPE_IQ4_XS:
            return QK_K;
        default:
            return 32;
    }
}

static void unpack_q4_0(const block_q4_0 * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        nibbles32(x[i].qs, u + 32 * i);
        sa[i * st] = d;
        ca[i * st] = 0.0f;
    }
}

static void unpack_q4_1(const block_q4_1 * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        nibbles32(x[i].qs, u + 32 * i);
        sa[i * st] = h2f(x[i].d);
        ca[i * st] = h2f(x[i].m);
    }
}

static void unpack_q5_0(const block_q5_0 * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        nibbles32(x[i].qs, u + 32 * i);
        fifth_bits32(x[i].qh, u + 32 * i);
        sa[i * st] = d;
        ca[i * st] = 0.0f;
    }
}

static void unpack_q5_1(const block_q5_1 * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        nibbles32(x[i].qs, u + 32 * i);
        fifth_bits32(x[i].qh, u + 32 * i);
        sa[i * st] = h2f(x[i].d);
        ca[i * st] = h2f(x[i].m);
    }
}

static void unpack_q8_0(const block_q8_0 * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        for (int j = 0; j < 32; j++) {
            u[32 * i + j] = (uint8_t) (x[i].qs[j] + 128);
        }
        sa[i * st] = d;
        ca[i * st] = 0.0f;
    }
}

static void unpack_iq4_nl(const block_iq4_nl * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        iq4_values32(x[i].qs, u + 32 * i);
        sa[i * st] = d;
        ca[i * st] = 0.0f;
    }
}

/* Q4_K and Q5_K (qh NULL for Q4_K): 64-element chunk c holds sub-blocks 2c (low nibbles) and 2c + 1 */
static void unpack_q45_k(const uint8_t * scales, const uint8_t * qs, const uint8_t * qh, float d, float dmin,
                         uint8_t * u, float * sa, float * ca, size_t st) {
    for (int c = 0; c < 4; c++) {
        for (int l = 0; l < 32; l++) {
            uint8_t lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
            if (qh != NULL) {
                lo |= (uint8_t) (((qh[l] >> (2 * c)) & 1) << 4);
                hi |= (uint8_t) (((qh[l] >> (2 * c + 1)) & 1) << 4);
            }
            u[64 * c + l] = lo;
            u[64 * c + 32 + l] = hi;
        }
    }
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        scale_min_k4(j, scales, &sc, &mn);
        sa[j * st] = d * (float) sc;
        ca[j * st] = -dmin * (float) mn;
    }
}

static void unpack_q2_k(const block_q2_K * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        crumbs256(x[i].qs, u + QK_K * i);
        for (int s = 0; s < 16; s++) {
            sa[(16 * i + s) * st] = d * (float) (x[i].scales[s] & 15);
            ca[(16 * i + s) * st] = -dmin * (float) (x[i].scales[s] >> 4);
        }
    }
}

static void unpack_q3_k(const block_q3_K * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        uint8_t * v = u + QK_K * i;
        crumbs256(x[i].qs, v);
        /* values are -4..3; a set hmask bit means the +4 is already there, so u = q + 4 */
        for (int s = 0; s < 8; s++) {
            for (int l = 0; l < 32; l++) {
                v[32 * s + l] = (uint8_t) (v[32 * s + l] + (((x[i].hmask[l] >> s) & 1) << 2));
            }
        }
        for (int s = 0; s < 16; s++) {
            const int lo = s < 8 ? x[i].scales[s] & 15 : x[i].scales[s - 8] >> 4;
            const int hi = (x[i].scales[8 + s % 4] >> (2 * (s / 4))) & 3;
            const float scale = d * (float) ((lo | (hi << 4)) - 32);
            sa[(16 * i + s) * st] = scale;
            ca[(16 * i + s) * st] = 0.0f;
        }
    }
}

static void unpack_q6_k(const block_q6_K * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        for (int h = 0; h < 2; h++) {
            const uint8_t * ql = x[i].ql + 64 * h;
            const uint8_t * qh = x[i].qh + 32 * h;
            uint8_t * v = u + QK_K * i + 128 * h;
            for (int l = 0; l < 32; l++) {
                v[l] = (uint8_t) ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4));
                v[l + 32] = (uint8_t) ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
                v[l + 64] = (uint8_t) ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
                v[l + 96] = (uint8_t) ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
            }
        }
        for (int s = 0; s < 16; s++) {
            const float scale = d * (float) x[i].scales[s];
            sa[(16 * i + s) * st] = scale;
            ca[(16 * i + s) * st] = 0.0f;
        }
    }
}

static void unpack_iq4_xs(const block_iq4_xs * x, int64_t nb, uint8_t * u, float * sa, float * ca, size_t st) {
    for (int64_t i = 0; i < nb; i++) {
        const float d = h2f(x[i].d);
        for (int g = 0; g < 8; g++) {
            const int ls = ((x[i].scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((x[i].scales_h >> (2 * g)) & 3) << 4);
            const float scale = d * (float) (ls - 32);
            iq4_values32(x[i].qs + 16 * g, u + QK_K * i + 32 * g);
            sa[(8 * i + g) * st] = scale;
            ca[(8 * i + g) * st] = 0.0f;
        }
    }
}

void ggmlx_qgemm_unpack_row(enum ggml_type t, const void * row, int64_t k, uint8_t * u, float * sa, float * ca,
                            size_t st) {
    const int64_t nb = k / ggmlx_qgemm_unpack_qk(t);
    switch (t) {
        case GGML_TYPE_Q4_0: unpack_q4_0(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q4_1: unpack_q4_1(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q5_0: unpack_q5_0(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q5_1: unpack_q5_1(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q8_0: unpack_q8_0(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_IQ4_NL: unpack_iq4_nl(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q2_K: unpack_q2_k(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q3_K: unpack_q3_k(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_Q4_K:
            for (int64_t i = 0; i < nb; i++) {
                const block_q4_K * x = (const block_q4_K *) row + i;
                unpack_q45_k(x->scales, x->qs, NULL, h2f(x->d), h2f(x->dmin), u + QK_K * i, sa + 8 * i * st,
                             ca + 8 * i * st, st);
            }
            break;
        case GGML_TYPE_Q5_K:
            for (int64_t i = 0; i < nb; i++) {
                const block_q5_K * x = (const block_q5_K *) row + i;
                unpack_q45_k(x->scales, x->qs, x->qh, h2f(x->d), h2f(x->dmin), u + QK_K * i, sa + 8 * i * st,
                             ca + 8 * i * st, st);
            }
            break;
        case GGML_TYPE_Q6_K: unpack_q6_k(row, nb, u, sa, ca, st); break;
        case GGML_TYPE_IQ4_XS: unpack_iq4_xs(row, nb, u, sa, ca, st); break;
        default: break;
    }
}
