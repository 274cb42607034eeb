/*
 * ops-copy.c -- DUP, CPY, CONT: src0's elements, in row-major logical order, into dst's shape
 * (same element count, any shapes and strides on both sides), converting between F32, F16,
 * BF16 and I32; a same-type copy of any type moves bytes (quantized types: whole rows of blocks).
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#include <limits.h>
#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#    include <immintrin.h>
#    define CP_X86 1
#else
#    define CP_X86 0
#endif

/*
 * Contiguous conversions with AVX-512, bit for bit the scalar ones of ggml-math.h
 * (the hardware's F16 conversions differ only on NaNs, which are rewritten to the scalar
 * results). GGMLX_COPY_KERNEL=portable turns them off, so tests can compare both.
 */
#if CP_X86
__attribute__((target("avx512f"))) static inline __m512 cp_load16(enum ggml_type ts, const char * p) {
    switch (ts) {
    case GGML_TYPE_F16: {
        const __m256i h = _mm256_loadu_si256((const __m256i *)p);
        const __m512i w = _mm512_cvtepu16_epi32(h);
        const __m512  f = _mm512_cvtph_ps(h);
        /* NaN halves keep their payload unquieted in the scalar conversion: sign | inf | mant << 13 */
        const __mmask16 nan = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7c00)),
                                                      _mm512_set1_epi32(0x7c00)) &
                              _mm512_test_epi32_mask(w, _mm512_set1_epi32(0x3ff));
        const __m512i bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16),
                                             _mm512_or_si512(_mm512_set1_epi32(0x7f800000),
                                                             _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3ff)), 13)));
        return _mm512_mask_blend_ps(nan, f, _mm512_castsi512_ps(bits));
    }
    case GGML_TYPE_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
    case GGML_TYPE_I32:
        return _mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)p));
    default:
        return _mm512_loadu_ps((const float *)p);
    }
}

__attribute__((target("avx512f"))) static inline void cp_store16(enum ggml_type td, char * p, __m512 v) {
    const __m512i x    = _mm512_castps_si512(v);
    const __m512i absx = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(absx, _mm512_set1_epi32(0x7f800000));
    switch (td) {
    case GGML_TYPE_F16: {
        /* a NaN becomes sign | 0x7fc00000 first, which the hardware turns into sign | 0x7e00 */
        const __m512i q = _mm512_or_si512(_mm512_and_si512(x, _mm512_set1_epi32((int)0x80000000u)),
                                          _mm512_set1_epi32(0x7fc00000));
        const __m512  w = _mm512_castsi512_ps(_mm512_mask_blend_epi32(nan, x, q));
        _mm256_storeu_si256((__m256i *)p, _mm512_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        break;
    }
    case GGML_TYPE_BF16: {
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
        const __m512i r   = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
        const __m512i n   = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
        _mm256_storeu_si256((__m256i *)p, _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, r, n)));
        break;
    }
    case GGML_TYPE_I32: {
        /* truncation; NaN -> 0, >= 2^31 -> INT32_MAX (the hardware gives INT32_MIN for both) */
        __m512i t = _mm512_cvttps_epi32(v);
        const __mmask16 big = _mm512_cmp_ps_mask(v, _mm512_set1_ps(2147483648.0f), _CMP_GE_OQ);
        t = _mm512_mask_blend_epi32(big, t, _mm512_set1_epi32(INT32_MAX));
        t = _mm512_mask_blend_epi32(nan, t, _mm512_setzero_si512());
        _mm512_storeu_si512((void *)p, t);
        break;
    }
    default:
        _mm512_storeu_ps((float *)p, v);
        break;
    }
}

/* n contiguous elements of ts at ps into td at pd, 16 at a time; returns how many were done */
__attribute__((target("avx512f"))) static int64_t cp_run_avx512(enum ggml_type td, char * pd, enum ggml_type ts,
                                                                 const char * ps, int64_t n) {
    const size_t es = ggml_type_size(ts), ed = ggml_type_size(td);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        cp_store16(td, pd + (size_t)i * ed, cp_load16(ts, ps + (size_t)i * es));
    }
    return i;
}

static bool cp_use_avx512(void) {
    const char * want = getenv("GGMLX_COPY_KERNEL");
    if (want != NULL && strcmp(want, "portable") == 0) {
        return false;
    }
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
#endif

/* n elements from ps (stride ss bytes, type ts) to pd (stride sd, type td) */
static void convert_run(enum ggml_type td, char * pd, size_t sd, enum ggml_type ts, const char * ps, size_t ss, int64_t n) {
    if (td == ts) {
        if (pd == ps && sd == ss) {
            return; /* copying a tensor onto itself (ggml_dup_inplace) */
        }
        const size_t es = ggml_type_size(td);
        if (sd == es && ss == es) {
            memmove(pd, ps, (size_t) n * es);
            return;
        }
        for (int64_t i = 0; i < n; i++) {
            memcpy(pd + i * sd, ps + i * ss, es);
        }
        return;
    }
#if CP_X86
    if (ss == ggml_type_size(ts) && sd == ggml_type_size(td) && n >= 16 && cp_use_avx512()) {
        const int64_t done = cp_run_avx512(td, pd, ts, ps, n);
        pd += (size_t)done * sd;
        ps += (size_t)done * ss;
        n -= done;
    }
#endif
    if (ts == GGML_TYPE_I32) {
        for (int64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, ps + i * ss, sizeof v);
            ggmlx_store_f(td, pd + i * sd, (float) v);
        }
        return;
    }
    if (td == GGML_TYPE_I32) {
        for (int64_t i = 0; i < n; i++) {
            const int32_t v = ggmlx_f32_to_i32_sat(ggmlx_load_f(ts, ps + i * ss));
            memcpy(pd + i * sd, &v, sizeof v);
        }
        return;
    }
    if (ts == GGML_TYPE_F32 && ss == sizeof(float) && td == GGML_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, ps + i * ss, sizeof f);
            const uint16_t h = ggmlx_fp32_to_fp16(f);
            memcpy(pd + i * sd, &h, sizeof h);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        ggmlx_store_f(td, pd + i * sd, ggmlx_load_f(ts, ps + i * ss));
    }
}

/* Quantized same-type copy: rows of whole blocks, matched by flat row index. */
static void dup_blocks(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst, const struct ggml_tensor * src) {
    const size_t ts = ggml_type_size(dst->type);
    if (src->ne[0] != dst->ne[0] || src->nb[0] != ts || dst->nb[0] != ts) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: copying %s needs rows of the same length with contiguous blocks",
                           dst->name, ggml_type_name(dst->type));
        }
        return;
    }
    const size_t row = ggml_row_size(dst->type, dst->ne[0]);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t d1, d2, d3, s1, s2, s3;
        ggmlx_row_coords(dst, ir, &d1, &d2, &d3);
        ggmlx_row_coords(src, ir, &s1, &s2, &s3);
        memmove((char *) dst->data + ggmlx_offset(dst, 0, d1, d2, d3),
                (const char *) src->data + ggmlx_offset(src, 0, s1, s2, s3), row);
    }
}

void ggmlx_cpu_dup(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    if (ggml_nelements(src) != ggml_nelements(dst)) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: source has %lld elements, destination %lld", dst->name,
                           (long long) ggml_nelements(src), (long long) ggml_nelements(dst));
        }
        return;
    }
    if (ggml_nelements(dst) == 0) {
        return;
    }
    const enum ggml_type td = dst->type, ts = src->type;

    /* both one gap-free block in the same order: split the bytes between threads */
    if (td == ts && ggml_is_contiguous(dst) && ggml_is_contiguous(src)) {
        const size_t n = ggml_nbytes(dst);
        const size_t per = (n + (size_t) params->nth - 1) / (size_t) params->nth;
        const size_t b0 = per * (size_t) params->ith < n ? per * (size_t) params->ith : n;
        const size_t b1 = b0 + per < n ? b0 + per : n;
        if (b1 > b0 && dst->data != src->data) {
            memmove((char *) dst->data + b0, (const char *) src->data + b0, b1 - b0);
        }
        return;
    }
    if (ggml_blck_size(td) != 1 || ggml_blck_size(ts) != 1) {
        dup_blocks(params, dst, src); /* the dispatch only lets equal types through here */
        return;
    }
    /* both gap-free, types differ: one flat run, split between threads in multiples of 16 */
    if (ggml_is_contiguous(dst) && ggml_is_contiguous(src)) {
        const int64_t n   = ggml_nelements(dst);
        const int64_t per = ((n + params->nth - 1) / params->nth + 15) / 16 * 16;
        const int64_t i0  = per * params->ith < n ? per * params->ith : n;
        const int64_t i1  = i0 + per < n ? i0 + per : n;
        const size_t  es = ggml_type_size(ts), ed = ggml_type_size(td);
        if (i1 > i0) {
            convert_run(td, (char *) dst->data + (size_t) i0 * ed, ed, ts, (const char *) src->data + (size_t) i0 * es,
                        es, i1 - i0);
        }
        return;
    }

    const int64_t ne0 = dst->ne[0];
    const bool same_shape = ggml_are_same_shape(dst, src);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        if (same_shape) {
            const char * ps = (const char *) src->data + ggmlx_offset(src, 0, i1, i2, i3);
            convert_run(td, pd, dst->nb[0], ts, ps, src->nb[0], ne0);
            continue;
        }
        /* Different shapes: the row's elements may span several source rows. Walk the source
         * from the flat index of the row's first element, one source-row segment at a time. */
        const int64_t flat = ir * ne0;
        int64_t j0 = flat % src->ne[0];
        int64_t jr = flat / src->ne[0];
        int64_t done = 0;
        while (done < ne0) {
            int64_t j1, j2, j3;
            ggmlx_row_coords(src, jr, &j1, &j2, &j3);
            int64_t n = src->ne[0] - j0;
            if (n > ne0 - done) {
                n = ne0 - done;
            }
            const char * ps = (const char *) src->data + ggmlx_offset(src, j0, j1, j2, j3);
            convert_run(td, pd + done * dst->nb[0], dst->nb[0], ts, ps, src->nb[0], n);
            done += n;
            j0 = 0;
            jr++;
        }
    }
}
