/*
 * ops-rope.cu -- ROPE, F32 and F16, normal (adjacent pairs) and NEOX (halves) layouts, with
 * optional frequency factors and YaRN, as src/cpu/ops-rope.c computes it: the angle of every
 * pair comes straight from ggml-math-rope.h (no running products), so a thread can take any
 * pair on its own. ELEM mapping over [pairs + pass-through dims] of each row: each element is
 * read and written by one thread only, so in place is safe.
 */
#include "kernels-common.cuh"

struct rope_args {
    int   n_dims;
    int   neox;
    float freq_base, freq_scale, ext_factor, mscale;
    float corr0, corr1;
};

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_rope(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc pos, const ggmlx_cuda_tdesc ff, const ggmlx_cuda_tdesc dst,
       const rope_args a) {
    const int64_t n_pairs = a.n_dims / 2;
    const int64_t ne0     = src.ne[0];
    const int64_t n_work  = n_pairs + (ne0 - a.n_dims);
    const int64_t nrows   = src.ne[1] * src.ne[2] * src.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    const bool    f16 = src.type == GGML_TYPE_F16;
    const float   corr[2] = { a.corr0, a.corr1 };
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const uint64_t q  = (uint64_t)r / (uint64_t)src.ne[1];
        const int64_t  i1 = (int64_t)((uint64_t)r - q * (uint64_t)src.ne[1]);
        const int64_t  i3 = (int64_t)(q / (uint64_t)src.ne[2]);
        const int64_t  i2 = (int64_t)(q - (uint64_t)i3 * (uint64_t)src.ne[2]);
        const char * s = src.data + i1 * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3];
        char       * d = dst.data + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
        const float  p = (float)*(const int32_t *)(pos.data + i2 * pos.nb[0]);
        for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n_work; k += sx) {
            if (k >= n_pairs) {
                const int64_t i = a.n_dims + (k - n_pairs); /* past n_dims: copied */
                if (f16) {
                    *(uint16_t *)(d + i * dst.nb[0]) = *(const uint16_t *)(s + i * src.nb[0]);
                } else {
                    *(float *)(d + i * dst.nb[0]) = *(const float *)(s + i * src.nb[0]);
                }
                continue;
            }
            const float fac = ff.data != nullptr ? *(const float *)(ff.data + k * ff.nb[0]) : 1.0f;
            float c, sn;
            ggmlx_rope_cos_sin(p, (int)k, a.n_dims, a.freq_base, a.freq_scale, fac, a.ext_factor, corr, a.mscale, &c, &sn);
            const int64_t j0 = a.neox ? k : 2 * k;
            const int64_t j1 = j0 + (a.neox ? n_pairs : 1);
            const float x0 = ggmlx_dev_load(src.type, s + j0 * src.nb[0]);
            const float x1 = ggmlx_dev_load(src.type, s + j1 * src.nb[0]);
            ggmlx_dev_store(dst.type, d + j0 * dst.nb[0], x0 * c - x1 * sn);
            ggmlx_dev_store(dst.type, d + j1 * dst.nb[0], x0 * sn + x1 * c);
        }
    }
}

static float param_f(const ggml_tensor * t, int i) {
    float v;
    memcpy(&v, (const char *)t->op_params + 4 * i, sizeof v);
    return v;
}

static int32_t param_i(const ggml_tensor * t, int i) {
    int32_t v;
    memcpy(&v, (const char *)t->op_params + 4 * i, sizeof v);
    return v;
}

extern "C" enum ggml_status ggmlx_cuda_launch_rope(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                   char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, pos, ff, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node->src[1], &pos);
    ggmlx_cuda_tdesc_of(node, &dst);
    if (node->src[2] != NULL) {
        ggmlx_cuda_tdesc_of(node->src[2], &ff);
    } else {
        memset(&ff, 0, sizeof ff);
    }
    rope_args a;
    a.n_dims     = param_i(node, 1);
    a.neox       = (param_i(node, 2) & GGML_ROPE_TYPE_NEOX) != 0;
    a.freq_base  = param_f(node, 5);
    a.freq_scale = param_f(node, 6);
    a.ext_factor = param_f(node, 7);
    a.mscale     = ggmlx_rope_mscale(param_f(node, 8), a.freq_scale, a.ext_factor);
    float corr[2];
    ggmlx_rope_yarn_corr_dims(a.n_dims, param_i(node, 4), a.freq_base, param_f(node, 9), param_f(node, 10), corr);
    a.corr0 = corr[0], a.corr1 = corr[1];

    const int64_t nrows  = src.ne[1] * src.ne[2] * src.ne[3];
    const int64_t n_work = a.n_dims / 2 + (src.ne[0] - a.n_dims);
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(n_work, nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    k_rope<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, pos, ff, dst, a);
    return ggmlx_after_launch(err, err_size, "rope");
}
