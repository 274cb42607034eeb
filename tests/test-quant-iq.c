/*
 * test-quant-iq.c -- the codebook (IQ) formats: hand-built blocks dequantize to the values their
 * layout gives (sign parity, the 4-bit group scales, IQ2_S/IQ3_S high index bits, IQ1_S/IQ1_M
 * delta signs and IQ1_M's scattered super-scale), the search tables are consistent (every grid
 * point maps to itself, every off-grid key has a non-empty neighbour list ordered by distance),
 * init/release can be repeated in any order, the quantizers refuse what they must, and the
 * round trip of Gaussian data stays under the error each format is known to reach.
 */
#include <criterion/criterion.h>

#include "ggml-impl.h"
#include "ggml-math.h"
#include "quant/quant-iq-impl.h"
#include "quant/quant-iq.h"
#include "ggmlx-quant-tables.h"
#include "quant/quant.h"
#include "test-util.h"

#include <pthread.h>

#define HALF_ONE 0x3C00u

static uint8_t u64_byte(uint64_t v, int j) {
    return (uint8_t) (v >> (8 * j));
}

static void put_u16(uint8_t * p, uint16_t v) {
    p[0] = (uint8_t) v;
    p[1] = (uint8_t) (v >> 8);
}

static void put_u32(uint8_t * p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}

/* ---- dequantization of hand-built blocks ---------------------------------------------------- */

Test(iq_dequant, iq2_xxs_seven_sign_bits_get_even_parity) {
    uint8_t b[sizeof(block_iq2_xxs)] = { 0 };
    put_u16(b, HALF_ONE);
    /* group 0: grid entries 0 (all magnitudes 8); sign indices 1, 127, 3, 0; scale code 3 */
    put_u32(b + 2 + 4, 1u | (127u << 7) | (3u << 14) | (0u << 21) | (3u << 28));
    float y[QK_K];
    ggmlx_dequantize_row_iq2_xxs(b, y, QK_K);
    const float v = 1.0f * 3.5f * 0.25f * 8; /* d * (0.5 + 3) / 4 * 8 */
    /* index 1: one negative in 7 bits, so the eighth is negative too */
    cr_assert_eq(y[0], -v);
    cr_assert_eq(y[7], -v);
    for (int j = 1; j < 7; ++j) {
        cr_assert_eq(y[j], v);
    }
    /* index 127: seven negatives, the eighth completes an even count */
    for (int j = 8; j < 16; ++j) {
        cr_assert_eq(y[j], -v);
    }
    /* index 3: two negatives already even, the eighth stays positive */
    cr_assert_eq(y[16], -v);
    cr_assert_eq(y[17], -v);
    for (int j = 18; j < 24; ++j) {
        cr_assert_eq(y[j], v);
    }
    for (int j = 24; j < 32; ++j) {
        cr_assert_eq(y[j], v);
    }
    /* an all-zero group still has scale code 0: d * 0.5 / 4 * 8 = 1 */
    for (int j = 32; j < QK_K; ++j) {
        cr_assert_eq(y[j], 1.0f);
    }
}

Test(iq_dequant, iq2_xs_nine_index_bits_and_two_scales) {
    uint8_t b[sizeof(block_iq2_xs)] = { 0 };
    put_u16(b, 0x4000); /* d = 2 */
    uint8_t * qs = b + 2;
    put_u16(qs + 0, (uint16_t) (511 | (1u << 9))); /* entry 511, sign index 1 */
    put_u16(qs + 4, 300);                          /* third entry: 300, no signs */
    b[2 + 64] = 0x21;                              /* scales[0]: low nibble 1 (first 16), high 2 */
    float y[QK_K];
    ggmlx_dequantize_row_iq2_xs(b, y, QK_K);
    const float db0 = 2.0f * 1.5f * 0.25f, db1 = 2.0f * 2.5f * 0.25f;
    for (int j = 0; j < 8; ++j) {
        const float s = (j == 0 || j == 7) ? -1.0f : 1.0f;
        cr_assert_eq(y[j], db0 * u64_byte(ggmlx_iq2xs_grid[511], j) * s, "j %d", j);
        cr_assert_eq(y[16 + j], db1 * u64_byte(ggmlx_iq2xs_grid[300], j), "j %d", j);
    }
}

Test(iq_dequant, iq2_s_high_index_bits_and_explicit_signs) {
    uint8_t b[sizeof(block_iq2_s)] = { 0 };
    put_u16(b, HALF_ONE);
    block_iq2_s * x = (block_iq2_s *) b;
    for (int l = 0; l < 4; ++l) {
        x->qs[l] = 5;
    }
    x->qh[0]          = 0xE4; /* two bits per entry, first entry lowest: 0, 1, 2, 3 */
    x->qs[QK_K / 8 + 1] = 0x01; /* explicit sign byte of entry 1: its first value negative */
    x->scales[0]      = 0x00;
    float y[QK_K];
    ggmlx_dequantize_row_iq2_s(b, y, QK_K);
    const float db = 0.5f * 0.25f;
    for (int l = 0; l < 4; ++l) {
        const int idx = 5 + 256 * l;
        for (int j = 0; j < 8; ++j) {
            const float s = (l == 1 && j == 0) ? -1.0f : 1.0f;
            cr_assert_eq(y[8 * l + j], db * u64_byte(ggmlx_iq2s_grid[idx], j) * s, "entry %d value %d", l, j);
        }
    }
}

Test(iq_dequant, iq3_xxs_scale_and_sign_word) {
    uint8_t b[sizeof(block_iq3_xxs)] = { 0 };
    put_u16(b, HALF_ONE);
    block_iq3_xxs * x = (block_iq3_xxs *) b;
    x->qs[0]          = 17;
    x->qs[1]          = 200;
    put_u32(x->qs + QK_K / 4, 127u | (1u << 28)); /* signs index 127 (all 8 negative), scale code 1 */
    float y[QK_K];
    ggmlx_dequantize_row_iq3_xxs(b, y, QK_K);
    const float db = 1.5f * 0.5f;
    for (int j = 0; j < 4; ++j) {
        cr_assert_eq(y[j], -db * (uint8_t) (ggmlx_iq3xxs_grid[17] >> (8 * j)));
        cr_assert_eq(y[4 + j], -db * (uint8_t) (ggmlx_iq3xxs_grid[200] >> (8 * j)));
    }
}

Test(iq_dequant, iq3_s_ninth_index_bit_per_entry) {
    uint8_t b[sizeof(block_iq3_s)] = { 0 };
    put_u16(b, HALF_ONE);
    block_iq3_s * x = (block_iq3_s *) b;
    for (int i = 0; i < 16; ++i) {
        x->qs[i] = 7;
    }
    x->qh[0]     = 0x02; /* group 0: only its second 4-value entry reaches past 255 */
    x->qh[1]     = 0x80; /* group 1: only its last entry does */
    x->signs[0]  = 0x10; /* group 0, first 8 values: value 4 (the second entry's first) negative */
    x->scales[0] = 0x21; /* group 0: d * (1 + 2*1); group 1: d * (1 + 2*2) */
    float y[QK_K];
    ggmlx_dequantize_row_iq3_s(b, y, QK_K);
    for (int e = 0; e < 8; ++e) {
        const int idx0 = 7 + (e == 1 ? 256 : 0), idx1 = 7 + (e == 7 ? 256 : 0);
        for (int j = 0; j < 4; ++j) {
            const float s = (e == 1 && j == 0) ? -1.0f : 1.0f;
            cr_assert_eq(y[4 * e + j], 3.0f * (uint8_t) (ggmlx_iq3s_grid[idx0] >> (8 * j)) * s, "entry %d", e);
            cr_assert_eq(y[32 + 4 * e + j], 5.0f * (uint8_t) (ggmlx_iq3s_grid[idx1] >> (8 * j)), "entry %d", e);
        }
    }
}

Test(iq_dequant, iq1_s_scale_delta_sign_and_high_bits) {
    uint8_t b[sizeof(block_iq1_s)] = { 0 };
    put_u16(b, HALF_ONE);
    block_iq1_s * x = (block_iq1_s *) b;
    /* group 0: scale code 2 (d * 5), delta negated, entry 1's high index bits 1 -> index 256 */
    put_u16((uint8_t *) &x->qh[0], (uint16_t) ((2u << 12) | 0x8000u | (1u << 3)));
    float y[QK_K];
    ggmlx_dequantize_row_iq1_s(b, y, QK_K);
    for (int j = 0; j < 8; ++j) {
        cr_assert_eq(y[j], 5.0f * (-1.0f - 0.125f), "grid entry 0 is all -1");
        cr_assert_eq(y[8 + j], 5.0f * ((float) (int8_t) u64_byte(ggmlx_iq1s_grid[256], j) - 0.125f));
    }
    /* group 1: all fields zero: scale d * 1, delta +0.125 */
    cr_assert_eq(y[32], -0.875f);
}

Test(iq_dequant, iq1_m_super_scale_is_assembled_from_four_nibbles) {
    uint8_t b[sizeof(block_iq1_m)] = { 0 };
    block_iq1_m * x = (block_iq1_m *) b;
    /* the half 0x4A3C (12.46875): nibble k goes to the top of scale word k */
    const uint16_t half = 0x4A3C;
    uint16_t       sc[4];
    for (int k = 0; k < 4; ++k) {
        sc[k] = (uint16_t) (((half >> (4 * k)) & 0xf) << 12);
    }
    sc[0] |= (uint16_t) (1u | (0u << 3) | (3u << 6)); /* group 0: halves 1, 0; group 1 first half: 3 */
    for (int k = 0; k < 4; ++k) {
        put_u16(x->scales + 2 * k, sc[k]);
    }
    x->qh[0] = 0x08; /* group 0, entry 0: delta negated; entry 1 keeps +delta */
    float y[QK_K];
    ggmlx_dequantize_row_iq1_m(b, y, QK_K);
    const float d = 12.46875f;
    cr_assert_eq(ggmlx_fp16_to_fp32(half), d);
    for (int j = 0; j < 8; ++j) {
        cr_assert_eq(y[j], d * 3 * (-1.0f - 0.125f));
        cr_assert_eq(y[8 + j], d * 3 * (-1.0f + 0.125f));
        cr_assert_eq(y[16 + j], d * 1 * (-1.0f + 0.125f));
        cr_assert_eq(y[32 + j], d * 7 * (-1.0f + 0.125f));
    }
}

/* ---- search tables -------------------------------------------------------------------------- */

static const enum ggmlx_iq_set k_all_sets[] = {
    GGMLX_IQ_SET_IQ2_XXS, GGMLX_IQ_SET_IQ2_XS,  GGMLX_IQ_SET_IQ2_S,
    GGMLX_IQ_SET_IQ1,     GGMLX_IQ_SET_IQ3_XXS, GGMLX_IQ_SET_IQ3_S,
};
static const int k_grid_sizes[] = { 256, 512, 1024, 2048, 256, 512 };

static int sq_dist(const struct ggmlx_iq_search * s, int g, const int8_t * p) {
    int d2 = 0;
    for (int i = 0; i < s->dim; ++i) {
        const int d = s->pos[g * s->dim + i] - p[i];
        d2 += d * d;
    }
    return d2;
}

Test(iq_tables, every_grid_point_maps_to_itself) {
    for (int k = 0; k < GGMLX_IQ_SET_COUNT; ++k) {
        cr_assert(ggmlx_iq_search_build(k_all_sets[k]));
        const struct ggmlx_iq_search * s = ggmlx_iq_search_peek(k_all_sets[k]);
        cr_assert_not_null(s);
        cr_assert_eq(s->grid_size, k_grid_sizes[k]);
        for (int g = 0; g < s->grid_size; ++g) {
            int8_t L[8];
            ggmlx_iq_grid_levels(s, g, L);
            cr_assert_eq(s->map[ggmlx_iq_key(s, L)], g, "set %d point %d", k, g);
        }
    }
}

Test(iq_tables, the_levels_are_three_or_eight) {
    const int nlev[] = { 3, 3, 3, 3, 8, 8 };
    for (int k = 0; k < GGMLX_IQ_SET_COUNT; ++k) {
        cr_assert(ggmlx_iq_search_build(k_all_sets[k]));
        cr_assert_eq(ggmlx_iq_search_peek(k_all_sets[k])->nlev, nlev[k]);
    }
}

/* every key made of levels < nlev either is a grid point or has a list of the nearest shells */
Test(iq_tables, neighbour_lists_are_nonempty_and_ordered_by_distance) {
    for (int k = 0; k < GGMLX_IQ_SET_COUNT; ++k) {
        cr_assert(ggmlx_iq_search_build(k_all_sets[k]));
        const struct ggmlx_iq_search * s = ggmlx_iq_search_peek(k_all_sets[k]);
        int                            checked = 0;
        for (int key = 0; key < s->nkeys; ++key) {
            int8_t p[8];
            bool   valid = true;
            for (int i = 0; i < s->dim; ++i) {
                const int l = (key >> (s->bits * i)) & ((1 << s->bits) - 1);
                valid &= l < s->nlev;
                p[i] = (int8_t) (2 * l + 1);
            }
            if (!valid || s->map[key] >= 0) {
                continue;
            }
            const uint16_t * list = ggmlx_iq_neighbours(s, s->map[key]);
            cr_assert_gt(list[0], 0, "set %d key %d", k, key);
            int shells = 1, prev_d2 = -1, prev_g = -1;
            for (int j = 1; j <= list[0]; ++j) {
                cr_assert_lt(list[j], s->grid_size);
                const int d2 = sq_dist(s, list[j], p);
                cr_assert(d2 > prev_d2 || (d2 == prev_d2 && list[j] > prev_g), "set %d key %d entry %d", k, key, j);
                shells += prev_d2 >= 0 && d2 != prev_d2;
                prev_d2 = d2;
                prev_g  = list[j];
            }
            cr_assert_leq(shells, s->nwant);
            /* the first shell is the true nearest distance, and the last shell is complete */
            if ((checked++ % 97) == 0) {
                int dmin = 1 << 30, in_last = 0;
                for (int g = 0; g < s->grid_size; ++g) {
                    const int d2 = sq_dist(s, g, p);
                    dmin = d2 < dmin ? d2 : dmin;
                    in_last += d2 <= prev_d2;
                }
                cr_assert_eq(sq_dist(s, list[1], p), dmin, "set %d key %d", k, key);
                cr_assert_eq(in_last, list[0], "set %d key %d", k, key);
            }
        }
        cr_assert_gt(checked, 0);
    }
}

Test(iq_tables, init_twice_release_twice_and_release_without_init) {
    ggmlx_iq2_s_release(); /* never built: a no-op */
    cr_assert_null(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ2_S));
    cr_assert(ggmlx_iq2_s_init());
    const struct ggmlx_iq_search * first = ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ2_S);
    cr_assert_not_null(first);
    cr_assert(ggmlx_iq2_s_init());
    cr_assert_eq(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ2_S), first, "a second init keeps the tables");
    ggmlx_iq2_s_release();
    cr_assert_null(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ2_S));
    ggmlx_iq2_s_release();
    cr_assert_null(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ2_S));
    cr_assert(ggmlx_iq2_s_init(), "built again after a release");
    ggmlx_iq2_s_release();
}

Test(iq_tables, iq1_s_and_iq1_m_share_one_set) {
    cr_assert(ggmlx_quant_fns(GGML_TYPE_IQ1_S)->init());
    cr_assert_not_null(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ1));
    ggmlx_quant_fns(GGML_TYPE_IQ1_M)->release();
    cr_assert_null(ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ1));
    ggmlx_quant_fns(GGML_TYPE_IQ1_S)->release();
}

static void * build_iq3_s(void * arg) {
    (void) arg;
    return ggmlx_iq_search_build(GGMLX_IQ_SET_IQ3_S) ? (void *) ggmlx_iq_search_peek(GGMLX_IQ_SET_IQ3_S) : NULL;
}

Test(iq_tables, concurrent_builds_make_one_table) {
    pthread_t t[4];
    void *    r[4];
    for (int i = 0; i < 4; ++i) {
        cr_assert_eq(pthread_create(&t[i], NULL, build_iq3_s, NULL), 0);
    }
    for (int i = 0; i < 4; ++i) {
        pthread_join(t[i], &r[i]);
        cr_assert_not_null(r[i]);
        cr_assert_eq(r[i], r[0]);
    }
    ggmlx_iq3_s_release();
}

Test(iq_tables, quant_table_entries) {
    const enum ggml_type types[] = { GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                     GGML_TYPE_IQ3_S,   GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M };
    const bool needs[] = { true, true, false, false, false, true, false };
    for (int i = 0; i < 7; ++i) {
        const struct ggmlx_quant_fns * f = ggmlx_quant_fns(types[i]);
        cr_assert_not_null(f->quantize);
        cr_assert_not_null(f->init);
        cr_assert_not_null(f->release);
        cr_assert_eq(f->requires_imatrix, needs[i], "%s", ggml_type_name(types[i]));
    }
}

/* ---- quantizers ----------------------------------------------------------------------------- */

typedef size_t (*rows_fn)(const float *, void *, int64_t, int64_t, const float *);
typedef void (*deq_fn)(const void *, float *, int64_t);

struct iq_type {
    const char *   name;
    enum ggml_type type;
    rows_fn        quantize;
    deq_fn         dequantize;
    size_t         block;
    /* relative RMS round-trip error bound on the Gaussian test data with its imatrix */
    double         max_rel_rms;
};

/*
 * Bounds: measured relative RMS error (sqrt(sum e^2 / sum x^2)) on 16 rows of 1024 N(0,1) values
 * with the importance matrix below, seeds 12345 and 1..5, plus 3%. Upstream's quantizers reach
 * the same errors on this data to within 0.01%.
 */
static const struct iq_type k_types[] = {
    { "IQ3_XXS", GGML_TYPE_IQ3_XXS, ggmlx_quantize_iq3_xxs, ggmlx_dequantize_row_iq3_xxs, sizeof(block_iq3_xxs), 0.201 },
    { "IQ3_S", GGML_TYPE_IQ3_S, ggmlx_quantize_iq3_s, ggmlx_dequantize_row_iq3_s, sizeof(block_iq3_s), 0.149 },
    { "IQ2_S", GGML_TYPE_IQ2_S, ggmlx_quantize_iq2_s, ggmlx_dequantize_row_iq2_s, sizeof(block_iq2_s), 0.268 },
    { "IQ2_XS", GGML_TYPE_IQ2_XS, ggmlx_quantize_iq2_xs, ggmlx_dequantize_row_iq2_xs, sizeof(block_iq2_xs), 0.325 },
    { "IQ2_XXS", GGML_TYPE_IQ2_XXS, ggmlx_quantize_iq2_xxs, ggmlx_dequantize_row_iq2_xxs, sizeof(block_iq2_xxs), 0.370 },
    { "IQ1_S", GGML_TYPE_IQ1_S, ggmlx_quantize_iq1_s, ggmlx_dequantize_row_iq1_s, sizeof(block_iq1_s), 0.528 },
    { "IQ1_M", GGML_TYPE_IQ1_M, ggmlx_quantize_iq1_m, ggmlx_dequantize_row_iq1_m, sizeof(block_iq1_m), 0.502 },
};
#define N_TYPES ((int) (sizeof k_types / sizeof k_types[0]))

enum { ROWS = 16, COLS = 1024 };

static float gaussian(struct tu_rng * r) {
    const float u = tu_uniform(r, 1e-7f, 1.0f), v = tu_uniform(r, 0.0f, 1.0f);
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

static void gaussian_data(float * x, float * imatrix) {
    struct tu_rng r = tu_rng_new(77);
    for (int i = 0; i < ROWS * COLS; ++i) {
        x[i] = gaussian(&r);
    }
    for (int i = 0; i < COLS; ++i) {
        imatrix[i] = 0.2f + 5.0f * tu_uniform(&r, 0, 1) * tu_uniform(&r, 0, 1);
    }
}

static double rel_rms(const float * x, const float * y, int n) {
    double e = 0, s = 0;
    for (int i = 0; i < n; ++i) {
        e += (double) (y[i] - x[i]) * (y[i] - x[i]);
        s += (double) x[i] * x[i];
    }
    return sqrt(e / s);
}

Test(iq_quant, gaussian_round_trip_error_is_bounded) {
    static float x[ROWS * COLS], y[ROWS * COLS], im[COLS];
    static uint8_t q[ROWS * COLS];
    gaussian_data(x, im);
    for (int t = 0; t < N_TYPES; ++t) {
        const size_t want = (size_t) ROWS * (COLS / QK_K) * k_types[t].block;
        cr_assert_eq(k_types[t].quantize(x, q, ROWS, COLS, im), want, "%s", k_types[t].name);
        k_types[t].dequantize(q, y, ROWS * COLS);
        const double e = rel_rms(x, y, ROWS * COLS);
        fprintf(stderr, "%-8s relative RMS error %.5f\n", k_types[t].name, e);
        cr_assert_lt(e, k_types[t].max_rel_rms, "%s: %.5f", k_types[t].name, e);
    }
}

Test(iq_quant, a_required_imatrix_missing_is_refused) {
    static float x[QK_K];
    static uint8_t q[sizeof(block_iq2_xs)];
    const rows_fn need[] = { ggmlx_quantize_iq2_xxs, ggmlx_quantize_iq2_xs, ggmlx_quantize_iq1_s };
    for (int i = 0; i < 3; ++i) {
        ggmlx_clear_last_error();
        memset(q, 0xA5, sizeof q);
        cr_assert_eq(need[i](x, q, 1, QK_K, NULL), 0);
        cr_assert_not_null(strstr(ggmlx_last_error(), "importance matrix"), "%s", ggmlx_last_error());
        cr_assert_eq(q[0], 0xA5, "nothing written");
    }
}

Test(iq_quant, optional_imatrix_types_quantize_without_one) {
    static float x[QK_K];
    static uint8_t q[sizeof(block_iq3_s)];
    for (int i = 0; i < QK_K; ++i) {
        x[i] = (float) ((i * 37) % 19) - 9.0f;
    }
    const rows_fn opt[] = { ggmlx_quantize_iq2_s, ggmlx_quantize_iq3_xxs, ggmlx_quantize_iq3_s, ggmlx_quantize_iq1_m };
    const size_t size[] = { sizeof(block_iq2_s), sizeof(block_iq3_xxs), sizeof(block_iq3_s), sizeof(block_iq1_m) };
    for (int i = 0; i < 4; ++i) {
        cr_assert_eq(opt[i](x, q, 1, QK_K, NULL), size[i]);
    }
}

Test(iq_quant, a_row_length_off_the_block_size_is_refused) {
    static float x[2 * QK_K], im[2 * QK_K];
    static uint8_t q[2 * sizeof(block_iq3_s)];
    for (int t = 0; t < N_TYPES; ++t) {
        ggmlx_clear_last_error();
        cr_assert_eq(k_types[t].quantize(x, q, 1, QK_K + 32, im), 0, "%s", k_types[t].name);
        cr_assert_not_null(strstr(ggmlx_last_error(), "multiple of 256"), "%s", ggmlx_last_error());
        cr_assert_eq(k_types[t].quantize(x, q, -1, QK_K, im), 0, "%s", k_types[t].name);
    }
}

Test(iq_quant, a_quantizer_called_before_init_builds_its_tables) {
    static float x[QK_K], im[QK_K];
    static uint8_t q[sizeof(block_iq3_s)]; /* the largest IQ block */
    for (int i = 0; i < QK_K; ++i) {
        x[i] = sinf((float) i);
        im[i] = 1.0f;
    }
    for (int t = 0; t < N_TYPES; ++t) {
        ggmlx_quant_fns(k_types[t].type)->release();
        cr_assert_eq(k_types[t].quantize(x, q, 1, QK_K, im), k_types[t].block, "%s", k_types[t].name);
    }
    for (int k = 0; k < GGMLX_IQ_SET_COUNT; ++k) {
        cr_assert_not_null(ggmlx_iq_search_peek(k_all_sets[k]));
    }
}

Test(iq_quant, zero_rows_dequantize_to_zero) {
    static float x[2 * QK_K], y[2 * QK_K], im[2 * QK_K];
    static uint8_t q[2 * sizeof(block_iq3_s)];
    for (int i = 0; i < 2 * QK_K; ++i) {
        im[i] = 1.0f;
    }
    for (int t = 0; t < N_TYPES; ++t) {
        memset(q, 0xA5, sizeof q);
        cr_assert_eq(k_types[t].quantize(x, q, 1, 2 * QK_K, im), 2 * k_types[t].block);
        k_types[t].dequantize(q, y, 2 * QK_K);
        for (int i = 0; i < 2 * QK_K; ++i) {
            cr_assert_eq(y[i], 0.0f, "%s value %d", k_types[t].name, i);
        }
    }
}

/* the imatrix is indexed by column and serves every row, so rows quantize independently */
Test(iq_quant, rows_quantize_independently) {
    static float x[ROWS * COLS], im[COLS];
    static uint8_t all[ROWS * COLS], one[COLS];
    gaussian_data(x, im);
    for (int t = 0; t < N_TYPES; ++t) {
        const size_t row_bytes = (COLS / QK_K) * k_types[t].block;
        cr_assert_eq(k_types[t].quantize(x, all, 4, COLS, im), 4 * row_bytes);
        for (int r = 0; r < 4; ++r) {
            cr_assert_eq(k_types[t].quantize(x + r * COLS, one, 1, COLS, im), row_bytes);
            cr_assert_arr_eq(all + r * row_bytes, one, row_bytes, "%s row %d", k_types[t].name, r);
        }
    }
}

Test(iq_quant, from_float_ref_is_the_quantizer_without_imatrix) {
    static float x[2 * QK_K];
    static uint8_t a[2 * sizeof(block_iq3_s)], b[2 * sizeof(block_iq3_s)];
    struct tu_rng r = tu_rng_new(5);
    for (int i = 0; i < 2 * QK_K; ++i) {
        x[i] = gaussian(&r);
    }
    const enum ggml_type types[] = { GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_IQ2_S };
    const rows_fn fns[] = { ggmlx_quantize_iq3_xxs, ggmlx_quantize_iq3_s, ggmlx_quantize_iq2_s };
    for (int i = 0; i < 3; ++i) {
        const struct ggml_type_traits * tr = ggml_get_type_traits(types[i]);
        cr_assert_not_null(tr->from_float_ref);
        cr_assert_not_null(tr->to_float);
        const size_t n = fns[i](x, a, 1, 2 * QK_K, NULL);
        tr->from_float_ref(x, b, 2 * QK_K);
        cr_assert_arr_eq(a, b, n, "%s", ggml_type_name(types[i]));
    }
    /* upstream gives the other four no from_float_ref */
    cr_assert_null(ggml_get_type_traits(GGML_TYPE_IQ2_XXS)->from_float_ref);
    cr_assert_null(ggml_get_type_traits(GGML_TYPE_IQ2_XS)->from_float_ref);
    cr_assert_null(ggml_get_type_traits(GGML_TYPE_IQ1_S)->from_float_ref);
    cr_assert_null(ggml_get_type_traits(GGML_TYPE_IQ1_M)->from_float_ref);
}

Test(iq_quant, non_finite_input_does_not_crash) {
    static float x[QK_K], im[QK_K];
    static uint8_t q[sizeof(block_iq3_s)];
    for (int i = 0; i < QK_K; ++i) {
        x[i]  = (i % 3 == 0) ? NAN : (i % 3 == 1) ? INFINITY : (float) i;
        im[i] = 1.0f;
    }
    for (int t = 0; t < N_TYPES; ++t) {
        cr_assert_eq(k_types[t].quantize(x, q, 1, QK_K, im), k_types[t].block, "%s", k_types[t].name);
    }
}

/* upstream's IQ3_S skips a group of 32 zeros without moving its index pointer, so every later
 * group of the block lands one slot early; here each group keeps its own slots */
Test(iq_quant, iq3_s_a_zero_group_leaves_the_others_in_place) {
    static float x[QK_K], y[QK_K];
    static uint8_t q[sizeof(block_iq3_s)];
    struct tu_rng r = tu_rng_new(9);
    for (int i = 0; i < QK_K; ++i) {
        x[i] = i < 32 ? 0.0f : gaussian(&r);
    }
    cr_assert_eq(ggmlx_quantize_iq3_s(x, q, 1, QK_K, NULL), sizeof(block_iq3_s));
    ggmlx_dequantize_row_iq3_s(q, y, QK_K);
    const double e = rel_rms(x, y, QK_K);
    cr_assert_lt(e, 0.25, "relative RMS %.4f", e);
}
