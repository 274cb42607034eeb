/*
 * ggml-math-rope.h -- rotary position embedding angles (part of ggml-math.h; include that instead).
 *
 * One rotary pair i (0 <= i < n_dims/2) at position p turns by
 *     theta_extrap = p * freq_base^(-2i/n_dims) / freq_factor_i
 * and YaRN blends it with the interpolated angle freq_scale * theta_extrap over the pairs between
 * the correction dims. Each angle is computed directly from its pair index rather than by
 * repeated multiplication, so a GPU thread can compute any pair on its own and the error does
 * not grow along the row.
 */
#ifndef GGMLX_MATH_ROPE_H
#define GGMLX_MATH_ROPE_H

/* the rotary dim (counted in elements) whose wavelength fits n_rot times into n_ctx_orig */
static inline GGMLX_HD float ggmlx_rope_yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 6.28318530717958647692f)) / (2.0f * logf(base));
}

/* [start, end] of the pairs YaRN ramps between interpolation and extrapolation */
static inline GGMLX_HD void ggmlx_rope_yarn_corr_dims(int n_dims, int n_ctx_orig, float freq_base, float beta_fast,
                                                      float beta_slow, float * dims) {
    const float start = floorf(ggmlx_rope_yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base));
    const float end   = ceilf(ggmlx_rope_yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base));
    dims[0] = fmaxf(0.0f, start);
    dims[1] = fminf((float)(n_dims - 1), end);
}

/* 1 for pairs below the ramp (pure extrapolation), 0 above it, linear in between */
static inline GGMLX_HD float ggmlx_rope_yarn_ramp(float low, float high, int pair) {
    const float y = ((float)pair - low) / fmaxf(0.001f, high - low);
    return 1.0f - fminf(1.0f, fmaxf(0.0f, y));
}

/* freq_base^(-2i/n_dims): the frequency of pair i before scaling */
static inline GGMLX_HD float ggmlx_rope_inv_freq(float freq_base, int n_dims, int pair) {
    return powf(freq_base, -2.0f * (float)pair / (float)n_dims);
}

/* Amplitude factor of every rotation: attn_factor, grown by YaRN's 0.1*ln(1/freq_scale) when on. */
static inline GGMLX_HD float ggmlx_rope_mscale(float attn_factor, float freq_scale, float ext_factor) {
    return ext_factor != 0.0f ? attn_factor * (1.0f + 0.1f * logf(1.0f / freq_scale)) : attn_factor;
}

/*
 * cos and sin (times mscale from ggmlx_rope_mscale) of pair `pair` at position pos.
 * freq_factor divides the pair's frequency (1 when there are none); corr_dims from
 * ggmlx_rope_yarn_corr_dims (only read when ext_factor != 0).
 */
static inline GGMLX_HD void ggmlx_rope_cos_sin(float pos, int pair, int n_dims, float freq_base, float freq_scale,
                                               float freq_factor, float ext_factor, const float * corr_dims,
                                               float mscale, float * cos_out, float * sin_out) {
    const float theta_extrap = pos * ggmlx_rope_inv_freq(freq_base, n_dims, pair) / freq_factor;
    const float theta_interp = freq_scale * theta_extrap;
    float theta = theta_interp;
    if (ext_factor != 0.0f) {
        const float mix = ggmlx_rope_yarn_ramp(corr_dims[0], corr_dims[1], pair) * ext_factor;
        theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
    }
    *cos_out = cosf(theta) * mscale;
    *sin_out = sinf(theta) * mscale;
}

#endif
