/*
 * ops-recurrent-rows.h -- the inner loops of the recurrent kernels (ops-recurrent.c), one state
 * row at a time. Included once per instruction set: the includer defines RR(name) (the function's
 * name for that set) and RR_ATTR (its target attribute, or nothing), and the compiler vectorizes
 * each copy for its set. Sums are kept in RR_LANES independent partial sums so that they
 * vectorize without reassociating float additions behind the compiler's back.
 */
#define RR_LANES 16

/* sum of x[i] * y[i] */
#if RR_ISA == 2
RR_ATTR static inline float RR(dot)(int64_t n, const float * restrict x, const float * restrict y) {
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc);
    }
    if (i < n) {
        const __mmask16 m = (__mmask16) ((1u << (n - i)) - 1);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), acc);
    }
    return _mm512_reduce_add_ps(acc);
}
#elif RR_ISA == 1
RR_ATTR static inline float RR(dot)(int64_t n, const float * restrict x, const float * restrict y) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
    }
    a0 = _mm256_add_ps(a0, a1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    float sum = _mm_cvtss_f32(h);
    for (; i < n; i++) {
        sum += x[i] * y[i];
    }
    return sum;
}
#else
/* RR_LANES independent partial sums: they vectorize without reassociating the float additions */
RR_ATTR static inline float RR(dot)(int64_t n, const float * restrict x, const float * restrict y) {
    float acc[RR_LANES] = { 0 };
    int64_t i = 0;
    for (; i + RR_LANES <= n; i += RR_LANES) {
        for (int l = 0; l < RR_LANES; l++) {
            acc[l] += x[i + l] * y[i + l];
        }
    }
    for (int l = 0; i < n; i++, l++) {
        acc[l] += x[i] * y[i];
    }
    float sum = 0.0f;
    for (int l = 0; l < RR_LANES; l++) {
        sum += acc[l];
    }
    return sum;
}
#endif

/* row *= decay (per column, or the scalar d0 when decay is NULL); returns row . k */
RR_ATTR static float RR(gdn_decay_dot)(int64_t n, float * restrict row, const float * restrict decay, float d0,
                                       const float * restrict k) {
    if (decay != NULL) {
        for (int64_t i = 0; i < n; i++) {
            row[i] *= decay[i];
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            row[i] *= d0;
        }
    }
    return RR(dot)(n, row, k);
}

/* row += d k; returns row . q */
RR_ATTR static float RR(gdn_update_dot)(int64_t n, float * restrict row, const float * restrict k, float d,
                                        const float * restrict q) {
    for (int64_t i = 0; i < n; i++) {
        row[i] += k[i] * d;
    }
    return RR(dot)(n, row, q);
}

/* wkv6, row i of the state: out[j] += r (u k v[j] + s[j]); s[j] = s[j] w + k v[j] */
RR_ATTR static void RR(wkv6_row)(int64_t n, float * restrict out, float * restrict s, const float * restrict v, float k,
                                 float r, float u, float w) {
    for (int64_t j = 0; j < n; j++) {
        const float kv = v[j] * k;
        out[j] += (kv * u + s[j]) * r;
        s[j] = s[j] * w + kv;
    }
}

/* GLA, row i of the state: s[j] = s[j] g + k v[j]; out[j] += q s[j] */
RR_ATTR static void RR(gla_row)(int64_t n, float * restrict out, float * restrict s, const float * restrict v, float k,
                                float q, float g) {
    for (int64_t j = 0; j < n; j++) {
        const float nv = s[j] * g + v[j] * k;
        out[j] += nv * q;
        s[j] = nv;
    }
}

/* wkv7, row i of the state: s[j] = s[j] w[j] + v k[j] + sa b[j]; returns s . r */
RR_ATTR static float RR(wkv7_row)(int64_t n, float * restrict s, const float * restrict w, const float * restrict k,
                                  float v, float sa, const float * restrict b, const float * restrict r) {
    for (int64_t j = 0; j < n; j++) {
        s[j] = s[j] * w[j] + v * k[j] + sa * b[j];
    }
    return RR(dot)(n, s, r);
}

/* Mamba-2, row of the state: s[n] = s[n] dA + B[n] xdt; returns s . C */
RR_ATTR static float RR(ssm2_row)(int64_t n, float * restrict s, const float * restrict B, const float * restrict C,
                                  float dA, float xdt) {
    for (int64_t i = 0; i < n; i++) {
        s[i] = s[i] * dA + B[i] * xdt;
    }
    return RR(dot)(n, s, C);
}

#undef RR_LANES
