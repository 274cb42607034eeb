/*
 * ops-backward-image.c -- the gradients of IM2COL and POOL_2D with respect to their image. Both
 * gather: each image element sums the gradients of the outputs that read it, so a thread owns
 * whole image rows and the result does not depend on the thread count.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

#include <float.h>

#define AT(t, i0, i1, i2, i3) \
    ((const char *) (t)->data + (i0) * (t)->nb[0] + (i1) * (t)->nb[1] + (i2) * (t)->nb[2] + (i3) * (t)->nb[3])
#define F32(p) (*(const float *) (p))

void ggmlx_cpu_im2col_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * g = dst->src[0]; /* [IC*KH*KW, OW, OH, N] or [IC*KW, OW, N] */
    const struct ggml_tensor * k = dst->src[1];
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 0), s1 = ggmlx_get_op_params_i32(dst, 1);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 2), p1 = ggmlx_get_op_params_i32(dst, 3);
    const int64_t d0 = ggmlx_get_op_params_i32(dst, 4), d1 = ggmlx_get_op_params_i32(dst, 5);
    const bool is_2D = ggmlx_get_op_params_i32(dst, 6) == 1;
    const int64_t KW = k->ne[0], KH = is_2D ? k->ne[1] : 1;
    const int64_t OW = g->ne[1], OH = is_2D ? g->ne[2] : 1;
    const int64_t IW = dst->ne[0], n1 = dst->ne[1], n2 = dst->ne[2];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t j1 = r % n1, j2 = (r / n1) % n2, j3 = r / (n1 * n2);
        /* 2D: the row is (ih, ic, n); 1D: (ic, n) */
        const int64_t ih = is_2D ? j1 : 0, ic = is_2D ? j2 : j1, n = is_2D ? j3 : j2;
        float * d = (float *) ((char *) dst->data + j1 * dst->nb[1] + j2 * dst->nb[2] + j3 * dst->nb[3]);
        for (int64_t iw = 0; iw < IW; iw++) {
            double sum = 0.0;
            for (int64_t kh = 0; kh < KH; kh++) {
                const int64_t th = ih + p1 - kh * d1;
                if (th < 0 || th % s1 != 0 || th / s1 >= OH) {
                    continue;
                }
                const int64_t oh = th / s1;
                for (int64_t kw = 0; kw < KW; kw++) {
                    const int64_t tw = iw + p0 - kw * d0;
                    if (tw < 0 || tw % s0 != 0 || tw / s0 >= OW) {
                        continue;
                    }
                    const int64_t ow = tw / s0, col = (ic * KH + kh) * KW + kw;
                    sum += is_2D ? F32(AT(g, col, ow, oh, n)) : F32(AT(g, col, ow, n, 0));
                }
            }
            *(float *) ((char *) d + iw * dst->nb[0]) = (float) sum;
        }
    }
}

/* Max pooling sends a window's gradient to its first largest input, average pooling spreads it
 * over the window's k0*k1 taps (padding included, as the forward divides by them). */
void ggmlx_cpu_pool_2d_back(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * g  = dst->src[0];
    const struct ggml_tensor * af = dst->src[1];
    const enum ggml_op_pool op = (enum ggml_op_pool) ggmlx_get_op_params_i32(dst, 0);
    const int64_t k0 = ggmlx_get_op_params_i32(dst, 1), k1 = ggmlx_get_op_params_i32(dst, 2);
    const int64_t s0 = ggmlx_get_op_params_i32(dst, 3), s1 = ggmlx_get_op_params_i32(dst, 4);
    const int64_t p0 = ggmlx_get_op_params_i32(dst, 5), p1 = ggmlx_get_op_params_i32(dst, 6);
    const int64_t IW = af->ne[0], IH = af->ne[1], OW = g->ne[0], OH = g->ne[1];
    const int64_t n1 = dst->ne[1], n2 = dst->ne[2];

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, dst->ne[1] * dst->ne[2] * dst->ne[3], &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t y = r % n1, c = (r / n1) % n2, n = r / (n1 * n2);
        float * d = (float *) ((char *) dst->data + y * dst->nb[1] + c * dst->nb[2] + n * dst->nb[3]);
        for (int64_t x = 0; x < IW; x++) {
            double sum = 0.0;
            for (int64_t oy = 0; oy < OH; oy++) {
                const int64_t wy = oy * s1 - p1;
                if (y < wy || y >= wy + k1) {
                    continue;
                }
                for (int64_t ox = 0; ox < OW; ox++) {
                    const int64_t wx = ox * s0 - p0;
                    if (x < wx || x >= wx + k0) {
                        continue;
                    }
                    const float go = F32(AT(g, ox, oy, c, n));
                    if (op == GGML_OP_POOL_AVG) {
                        sum += go / (double) (k0 * k1);
                        continue;
                    }
                    /* is (x, y) the window's first maximum? */
                    float best = -FLT_MAX;
                    int64_t bx = -1, by = -1;
                    for (int64_t yy = wy; yy < wy + k1; yy++) {
                        for (int64_t xx = wx; xx < wx + k0; xx++) {
                            if (yy < 0 || yy >= IH || xx < 0 || xx >= IW) {
                                continue;
                            }
                            const float v = ggmlx_load_f(af->type, AT(af, xx, yy, c, n));
                            if (bx < 0 || v > best) {
                                best = v;
                                bx   = xx;
                                by   = yy;
                            }
                        }
                    }
                    if (bx == x && by == y) {
                        sum += go;
                    }
                }
            }
            *(float *) ((char *) d + x * dst->nb[0]) = (float) sum;
        }
    }
}
