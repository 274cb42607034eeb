/*
 * ops-image.c -- image kernels: POOL_1D and POOL_2D (F32 or F16 into F32), UPSCALE (F32: nearest,
 * bilinear with or without align-corners and antialias, bicubic), WIN_PART, WIN_UNPART (F32),
 * GET_REL_POS (F16), ADD_REL_POS (F32). Inputs are read through their strides; each thread
 * computes whole rows of dst. The resampling arithmetic is done in float the way upstream's is,
 * so the source pixel picked for a sample is the same.
 */
#include <float.h>
#include <math.h>

#include "cpu-ops.h"
#include "ops-elem.h"

#define AT(t, i0, i1, i2, i3) \
    ((const char *) (t)->data + (i0) * (t)->nb[0] + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])
#define DST_AT(t, i0, i1, i2, i3) \
    ((char *) (t)->data + (i0) * (t)->nb[0] + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])

static inline void st_f32(char * p, float v) {
    memcpy(p, &v, sizeof v);
}

static inline float ld_f32(const char * p) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

/* AVG divides by the elements inside the input (padding not counted), as upstream's 1D pool */
void ggmlx_cpu_pool_1d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const enum ggml_op_pool op = (enum ggml_op_pool) ggmlx_get_op_params_i32(dst, 0);
    const int64_t k = ggmlx_get_op_params_i32(dst, 1);
    const int64_t s = ggmlx_get_op_params_i32(dst, 2);
    const int64_t p = ggmlx_get_op_params_i32(dst, 3);
    const int64_t IW = src->ne[0], OW = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, r, &i1, &i2, &i3);
        for (int64_t ow = 0; ow < OW; ow++) {
            float res = op == GGML_OP_POOL_MAX ? -FLT_MAX : 0.0f;
            int64_t count = 0;
            for (int64_t j = ow * s - p; j < ow * s - p + k; j++) {
                if (j < 0 || j >= IW) {
                    continue;
                }
                const float v = ggmlx_load_f(src->type, AT(src, j, i1, i2, i3));
                res = op == GGML_OP_POOL_MAX ? (v > res ? v : res) : res + v;
                count++;
            }
            if (op == GGML_OP_POOL_AVG) {
                res = count > 0 ? res / (float) count : 0.0f;
            }
            st_f32(DST_AT(dst, ow, i1, i2, i3), res);
        }
    }
}

/* AVG divides by k0*k1 (padding counted as zeros), as upstream's 2D pool */
void ggmlx_cpu_pool_2d(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const enum ggml_op_pool op = (enum ggml_op_pool) ggmlx_get_op_params_i32(dst, 0);
    const int64_t k0 = ggmlx_get_op_params_i32(dst, 1), k1 = ggmlx_get_op_params_i32(dst, 2);
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 3), s1 = ggmlx_get_op_params_i32(dst, 4);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 5), p1 = ggmlx_get_op_params_i32(dst, 6);
    const int64_t IW = src->ne[0], IH = src->ne[1], OW = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t oy, i2, i3;
        ggmlx_row_coords(dst, r, &oy, &i2, &i3);
        for (int64_t ox = 0; ox < OW; ox++) {
            float res = op == GGML_OP_POOL_MAX ? -FLT_MAX : 0.0f;
            for (int64_t y = oy * s1 - p1; y < oy * s1 - p1 + k1; y++) {
                if (y < 0 || y >= IH) {
                    continue;
                }
                for (int64_t x = ox * s0 - p0; x < ox * s0 - p0 + k0; x++) {
                    if (x < 0 || x >= IW) {
                        continue;
                    }
                    const float v = ggmlx_load_f(src->type, AT(src, x, y, i2, i3));
                    res = op == GGML_OP_POOL_MAX ? (v > res ? v : res) : res + v;
                }
            }
            if (op == GGML_OP_POOL_AVG) {
                res /= (float) (k0 * k1);
            }
            st_f32(DST_AT(dst, ox, oy, i2, i3), res);
        }
    }
}

/* ---- UPSCALE --------------------------------------------------------------------------------- */

struct resample {
    const struct ggml_tensor * src;
    float sf0, sf1, off; /* scale factors of dims 0 and 1; pixel centre offset (0 with align-corners) */
};

static inline float px(const struct resample * rs, int64_t x, int64_t y, int64_t i2, int64_t i3) {
    return ld_f32(AT(rs->src, x, y, i2, i3));
}

static inline int64_t clamp_i(int64_t v, int64_t hi) {
    return v < 0 ? 0 : (v > hi ? hi : v);
}

/* plain compares: fminf/fmaxf are library calls without -ffinite-math-only */
static inline float min_f(float a, float b) {
    return a < b ? a : b;
}

static inline float max_f(float a, float b) {
    return a > b ? a : b;
}

/* floor for the sample positions (within int64 range): no libm call in the per-pixel loop */
static inline int64_t floor_i(float v) {
    const int64_t t = (int64_t) v;
    return t - ((float) t > v);
}

/* one dst row of bilinear samples: the two source rows and their weight are the row's, x varies */
static void row_bilinear(const struct resample * rs, char * d, size_t dnb0, int64_t ne0, int64_t i1, int64_t i2,
                         int64_t i3) {
    const struct ggml_tensor * src = rs->src;
    const int64_t n0 = src->ne[0], n1 = src->ne[1];
    const float y = ((float) i1 + rs->off) / rs->sf1 - rs->off;
    const int64_t y0 = clamp_i(floor_i(y), n1 - 1), y1 = clamp_i(floor_i(y) + 1, n1 - 1);
    const float dy = min_f(max_f(y - (float) y0, 0.0f), 1.0f);
    const char * r0 = AT(src, 0, y0, i2, i3);
    const char * r1 = AT(src, 0, y1, i2, i3);
    const int64_t nb0 = (int64_t) src->nb[0];
    for (int64_t i0 = 0; i0 < ne0; i0++) {
        const float x = ((float) i0 + rs->off) / rs->sf0 - rs->off;
        const int64_t x0 = clamp_i(floor_i(x), n0 - 1), x1 = clamp_i(floor_i(x) + 1, n0 - 1);
        const float dx = min_f(max_f(x - (float) x0, 0.0f), 1.0f);
        const float v = ld_f32(r0 + x0 * nb0) * (1 - dx) * (1 - dy) + ld_f32(r0 + x1 * nb0) * dx * (1 - dy) +
                        ld_f32(r1 + x0 * nb0) * (1 - dx) * dy + ld_f32(r1 + x1 * nb0) * dx * dy;
        st_f32(d + i0 * (int64_t) dnb0, v);
    }
}

/* a triangle filter widened by the downscale factor (PyTorch's antialiased bilinear) */
static float sample_antialias(const struct resample * rs, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t n0 = rs->src->ne[0], n1 = rs->src->ne[1];
    const float sup0 = max_f(1.0f, 1.0f / rs->sf0), inv0 = 1.0f / sup0;
    const float sup1 = max_f(1.0f, 1.0f / rs->sf1), inv1 = 1.0f / sup1;
    const float x = ((float) i0 + rs->off) / rs->sf0;
    const float y = ((float) i1 + rs->off) / rs->sf1;
    const float fx0 = x - sup0 + rs->off, fx1 = x + sup0 + rs->off;
    const float fy0 = y - sup1 + rs->off, fy1 = y + sup1 + rs->off;
    const int64_t x_lo = fx0 > 0.0f ? (int64_t) fx0 : 0, x_hi = (int64_t) fx1 < n0 ? (int64_t) fx1 : n0;
    const int64_t y_lo = fy0 > 0.0f ? (int64_t) fy0 : 0, y_hi = (int64_t) fy1 < n1 ? (int64_t) fy1 : n1;
    float val = 0.0f, total = 0.0f;
    for (int64_t sy = y_lo; sy < y_hi; sy++) {
        const float wy = max_f(1.0f - fabsf(((float) sy - y + rs->off) * inv1), 0.0f);
        for (int64_t sx = x_lo; sx < x_hi; sx++) {
            const float w = max_f(1.0f - fabsf(((float) sx - x + rs->off) * inv0), 0.0f) * wy;
            if (w > 0.0f) {
                val += px(rs, sx, sy, i2, i3) * w;
                total += w;
            }
        }
    }
    return total > 0.0f ? val / total : val;
}

/* Keys' cubic convolution with a = -0.75 (PyTorch's) */
static inline float cubic_near(float t) { /* |t| <= 1 */
    const float a = -0.75f;
    return ((a + 2) * t - (a + 3)) * t * t + 1;
}

static inline float cubic_far(float t) { /* 1 < |t| < 2 */
    const float a = -0.75f;
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
}

static float sample_bicubic(const struct resample * rs, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t n0 = rs->src->ne[0], n1 = rs->src->ne[1];
    const float y = ((float) i1 + rs->off) / rs->sf1 - rs->off;
    const float x = ((float) i0 + rs->off) / rs->sf0 - rs->off;
    const int64_t y0 = floor_i(y), x0 = floor_i(x);
    const float dy = y - (float) y0, dx = x - (float) x0;
    const float wx[4] = { cubic_far(dx + 1), cubic_near(dx), cubic_near(1 - dx), cubic_far(2 - dx) };
    const float wy[4] = { cubic_far(dy + 1), cubic_near(dy), cubic_near(1 - dy), cubic_far(2 - dy) };
    float val = 0.0f;
    for (int j = 0; j < 4; j++) {
        const int64_t yy = clamp_i(y0 - 1 + j, n1 - 1);
        float row = 0.0f;
        for (int i = 0; i < 4; i++) {
            row += px(rs, clamp_i(x0 - 1 + i, n0 - 1), yy, i2, i3) * wx[i];
        }
        val += row * wy[j];
    }
    return val;
}

void ggmlx_cpu_upscale(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const uint32_t flags = (uint32_t) ggmlx_get_op_params_i32(dst, 0);
    const uint32_t mode = flags & 0xFFu;
    const int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], n00 = src->ne[0], n01 = src->ne[1];
    struct resample rs = { src, (float) ne0 / (float) n00, (float) ne1 / (float) n01, 0.5f };
    const float sf2 = (float) dst->ne[2] / (float) src->ne[2], sf3 = (float) dst->ne[3] / (float) src->ne[3];
    if (flags & GGML_SCALE_FLAG_ALIGN_CORNERS) {
        rs.off = 0.0f;
        if (ne0 > 1 && n00 > 1) {
            rs.sf0 = (float) (ne0 - 1) / (float) (n00 - 1);
        }
        if (ne1 > 1 && n01 > 1) {
            rs.sf1 = (float) (ne1 - 1) / (float) (n01 - 1);
        }
    }

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, r, &i1, &i2, &i3);
        /* dims 2 and 3 are always nearest */
        const int64_t j2 = (int64_t) ((float) i2 / sf2), j3 = (int64_t) ((float) i3 / sf3);
        char * d = DST_AT(dst, 0, i1, i2, i3);
        if (mode == GGML_SCALE_MODE_BILINEAR && !(flags & GGML_SCALE_FLAG_ANTIALIAS)) {
            row_bilinear(&rs, d, dst->nb[0], ne0, i1, j2, j3);
            continue;
        }
        if (mode == GGML_SCALE_MODE_NEAREST) {
            const char * row = AT(src, 0, (int64_t) ((float) i1 / rs.sf1), j2, j3);
            for (int64_t i0 = 0; i0 < ne0; i0++) {
                memcpy(d + i0 * (int64_t) dst->nb[0], row + (int64_t) ((float) i0 / rs.sf0) * (int64_t) src->nb[0],
                       sizeof(float));
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            const float v = mode == GGML_SCALE_MODE_BILINEAR ? sample_antialias(&rs, i0, i1, j2, j3)
                                                             : sample_bicubic(&rs, i0, i1, j2, j3);
            st_f32(d + i0 * (int64_t) dst->nb[0], v);
        }
    }
}

/* ---- SAM's windows and relative positions ---------------------------------------------------- */

/* dst (c, x, y, window py*npx + px) = src (c, px*w + x, py*w + y) inside src, else 0 */
void ggmlx_cpu_win_part(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t npx = ggmlx_get_op_params_i32(dst, 0), w = ggmlx_get_op_params_i32(dst, 2);
    const int64_t C = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t x, y, win;
        ggmlx_row_coords(dst, r, &x, &y, &win);
        const int64_t sx = (win % npx) * w + x, sy = (win / npx) * w + y;
        const bool in = sx < src->ne[1] && sy < src->ne[2];
        for (int64_t c = 0; c < C; c++) {
            st_f32(DST_AT(dst, c, x, y, win), in ? ld_f32(AT(src, c, sx, sy, 0)) : 0.0f);
        }
    }
}

void ggmlx_cpu_win_unpart(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t w = ggmlx_get_op_params_i32(dst, 0);
    const int64_t npx = (dst->ne[1] + w - 1) / w, C = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t x, y, i3;
        ggmlx_row_coords(dst, r, &x, &y, &i3);
        const int64_t win = (y / w) * npx + x / w;
        for (int64_t c = 0; c < C; c++) {
            st_f32(DST_AT(dst, c, x, y, i3), ld_f32(AT(src, c, x % w, y % w, win)));
        }
    }
}

/* dst row (k, q) = src row (kh - 1 - k + q): the relative offset q - k shifted to be >= 0 */
void ggmlx_cpu_get_rel_pos(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const int64_t kh = dst->ne[1], C = dst->ne[0];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t k, q, i3;
        ggmlx_row_coords(dst, r, &k, &q, &i3);
        const int64_t pos = kh - 1 - k + q;
        for (int64_t c = 0; c < C; c++) {
            memcpy(DST_AT(dst, c, k, q, i3), AT(src, c, pos, 0, 0), sizeof(uint16_t));
        }
    }
}

/* dst row r (of W*W) = a row r + ph (r, e / W) + pw (r, e % W); with pw, ph [W, H, Q, B] flat rows r */
void ggmlx_cpu_add_rel_pos(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a  = dst->src[0];
    const struct ggml_tensor * pw = dst->src[1];
    const struct ggml_tensor * ph = dst->src[2];
    const int64_t W = pw->ne[0];
    const float * pwd = (const float *) pw->data; /* contiguous, checked by the constructor */
    const float * phd = (const float *) ph->data;

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, a->ne[1] * a->ne[2] * a->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(a, r, &i1, &i2, &i3);
        const float * x = (const float *) (const void *) AT(a, 0, i1, i2, i3);
        float * y = (float *) (void *) DST_AT(dst, 0, i1, i2, i3);
        const float * rw = pwd + r * W, * rh = phd + r * W;
        for (int64_t kh = 0; kh < W; kh++) {
            for (int64_t kw = 0; kw < W; kw++) {
                y[kh * W + kw] = x[kh * W + kw] + rh[kh] + rw[kw];
            }
        }
    }
}
