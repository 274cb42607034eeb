/*
 * ops-rows.cu -- GET_ROWS with I32 indices: dst[:, i10, i11, i12] = src[:, idx[i10, i11, i12], i11, i12],
 * and SET_ROWS with I32 or I64 indices: dst[:, idx[i, i02 % n11, i03 % n12], i02, i03] = src[:, i, i02, i03].
 * Indices are data the host never sees before the kernels run, so each op is two kernels: the
 * first reads every index and keeps one that is out of range in the backend's error word; the
 * second writes nothing at all when the word holds a record of the running compute. So a bad
 * index leaves dst untouched, as on the CPU, and the host turns the record into an error at the
 * next synchronize (row-check.h). The writing kernels still skip a bad row on their own, so
 * nothing is read or written out of bounds even when the word holds an older record.
 */
#include "kernels-common.cuh"
#include "row-check.h"

/* one record between checks: the first claim wins, so an earlier kernel's record is never
 * overwritten by a later one's (within a kernel, any of its bad indices may be the one kept) */
static __device__ void ggmlx_row_err_keep(int64_t * w, int node, int64_t v, int64_t p0, int64_t p1, int64_t p2) {
    unsigned long long * claim = (unsigned long long *)&w[GGMLX_ROW_ERR_CLAIM];
    if (atomicCAS(claim, 0ull, 1ull) != 0ull) {
        return;
    }
    w[GGMLX_ROW_ERR_AT]    = w[GGMLX_ROW_ERR_EPOCH];
    w[GGMLX_ROW_ERR_NODE]  = node;
    w[GGMLX_ROW_ERR_VALUE] = v;
    w[GGMLX_ROW_ERR_POS0]  = p0;
    w[GGMLX_ROW_ERR_POS1]  = p1;
    w[GGMLX_ROW_ERR_POS2]  = p2;
}

/* the running compute has a bad index (this node's or an earlier rows node's): write nothing */
static __device__ __forceinline__ bool ggmlx_row_err_now(const int64_t * w) {
    return w[GGMLX_ROW_ERR_CLAIM] != 0 && w[GGMLX_ROW_ERR_AT] == w[GGMLX_ROW_ERR_EPOCH];
}

/* every index of idx (I32 or I64, up to 3-D) against 0..limit-1; 1-D launch over all of them */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS)
k_rows_check(const ggmlx_cuda_tdesc idx, int64_t limit, int64_t * err_word, int node) {
    const int64_t n  = idx.ne[0] * idx.ne[1] * idx.ne[2];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += sx) {
        const int64_t i0 = k % idx.ne[0], q = k / idx.ne[0];
        const int64_t i1 = q % idx.ne[1], i2 = q / idx.ne[1];
        const char * p = idx.data + i0 * idx.nb[0] + i1 * idx.nb[1] + i2 * idx.nb[2];
        const int64_t v = idx.type == GGML_TYPE_I64 ? *(const int64_t *)p : (int64_t)*(const int32_t *)p;
        if (v < 0 || v >= limit) {
            ggmlx_row_err_keep(err_word, node, v, i0, i1, i2);
        }
    }
}

static enum ggml_status launch_rows_check(const ggmlx_cuda_exec * ex, const ggmlx_cuda_tdesc & idx, int64_t limit,
                                          const char * name, char * err, size_t err_size) {
    const ggmlx_cuda_limits lim = ggmlx_limits();
    ggmlx_cuda_launch l;
    if (!ggmlx_cuda_launch_1d(&lim, idx.ne[0] * idx.ne[1] * idx.ne[2], &l)) {
        return ggmlx_fail(err, err_size, name, "no launch configuration for the index check");
    }
    k_rows_check<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(idx, limit, ex->row_err, ex->node);
    return ggmlx_after_launch(err, err_size, "rows index check");
}

/* (min. 1 block per SM: without it ptxas for sm_80 holds the kernel to 32 registers and spills) */
__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_get_rows(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc idx, const ggmlx_cuda_tdesc dst, int es,
           const int64_t * err_word) {
    if (ggmlx_row_err_now(err_word)) {
        return;
    }
    const int64_t ne0   = dst.ne[0];
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const ggmlx_row3 rc = ggmlx_dev_row_coords(dst, r);
        const int64_t i10 = rc.i1, i11 = rc.i2, i12 = rc.i3;
        const int64_t row = *(const int32_t *)(idx.data + i10 * idx.nb[0] + i11 * idx.nb[1] + i12 * idx.nb[2]);
        if (row < 0 || row >= src.ne[1]) {
            continue;
        }
        const char * ps = src.data + row * src.nb[1] + i11 * src.nb[2] + i12 * src.nb[3];
        char       * pd = dst.data + i10 * dst.nb[1] + i11 * dst.nb[2] + i12 * dst.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            ggmlx_dev_copy_elem(src.type, ps + i0 * src.nb[0], dst.type, pd + i0 * dst.nb[0], es);
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_get_rows(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                       char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, idx, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node->src[1], &idx);
    ggmlx_cuda_tdesc_of(node, &dst);
    const int64_t nrows = dst.ne[1] * dst.ne[2] * dst.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(dst.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    const enum ggml_status chk = launch_rows_check(ex, idx, src.ne[1], node->name, err, err_size);
    if (chk != GGML_STATUS_SUCCESS) {
        return chk;
    }
    k_get_rows<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, idx, dst, ggmlx_elem_size(dst.type), ex->row_err);
    return ggmlx_after_launch(err, err_size, "get_rows");
}

__global__ void __launch_bounds__(GGMLX_CUDA_ELEM_THREADS, 1)
k_set_rows(const ggmlx_cuda_tdesc src, const ggmlx_cuda_tdesc idx, const ggmlx_cuda_tdesc dst,
           const int64_t * err_word) {
    if (ggmlx_row_err_now(err_word)) {
        return;
    }
    const int64_t ne0   = src.ne[0];
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    const int64_t sx = (int64_t)gridDim.x * blockDim.x, sy = (int64_t)gridDim.y * blockDim.y;
    for (int64_t r = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; r < nrows; r += sy) {
        const uint64_t q   = (uint64_t)r / (uint64_t)src.ne[1];
        const int64_t  i   = (int64_t)((uint64_t)r - q * (uint64_t)src.ne[1]);
        const int64_t  i03 = (int64_t)(q / (uint64_t)src.ne[2]);
        const int64_t  i02 = (int64_t)(q - (uint64_t)i03 * (uint64_t)src.ne[2]);
        const int64_t j1 = (int64_t)((uint64_t)i02 % (uint64_t)idx.ne[1]);
        const int64_t j2 = (int64_t)((uint64_t)i03 % (uint64_t)idx.ne[2]);
        const char * pi = idx.data + i * idx.nb[0] + j1 * idx.nb[1] + j2 * idx.nb[2];
        const int64_t row = idx.type == GGML_TYPE_I64 ? *(const int64_t *)pi : (int64_t)*(const int32_t *)pi;
        if (row < 0 || row >= dst.ne[1]) {
            continue;
        }
        const char * ps = src.data + i * src.nb[1] + i02 * src.nb[2] + i03 * src.nb[3];
        char       * pd = dst.data + row * dst.nb[1] + i02 * dst.nb[2] + i03 * dst.nb[3];
        for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < ne0; i0 += sx) {
            ggmlx_dev_store(dst.type, pd + i0 * dst.nb[0], ggmlx_dev_load(src.type, ps + i0 * src.nb[0]));
        }
    }
}

extern "C" enum ggml_status ggmlx_cuda_launch_set_rows(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                                       char * err, size_t err_size) {
    ggmlx_cuda_tdesc src, idx, dst;
    ggmlx_cuda_tdesc_of(node->src[0], &src);
    ggmlx_cuda_tdesc_of(node->src[1], &idx);
    ggmlx_cuda_tdesc_of(node, &dst);
    const int64_t nrows = src.ne[1] * src.ne[2] * src.ne[3];
    ggmlx_cuda_launch l;
    bool run;
    const enum ggml_status st = ggmlx_elem_launch(src.ne[0], nrows, &l, &run, err, err_size, node->name);
    if (st != GGML_STATUS_SUCCESS || !run) {
        return st;
    }
    const enum ggml_status chk = launch_rows_check(ex, idx, dst.ne[1], node->name, err, err_size);
    if (chk != GGML_STATUS_SUCCESS) {
        return chk;
    }
    k_set_rows<<<ggmlx_grid(l), ggmlx_block(l), 0, ex->stream>>>(src, idx, dst, ex->row_err);
    return ggmlx_after_launch(err, err_size, "set_rows");
}
