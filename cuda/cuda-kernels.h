/*
 * cuda-kernels.h -- the extern "C" launchers of cuda/ops-*.cu, called by cuda-dispatch.c.
 * Internal to cuda/. Each enqueues on ex->stream, checks its own launches and cuBLAS calls
 * and returns a status with a message in err; none synchronizes or allocates.
 */
#ifndef GGMLX_CUDA_KERNELS_H
#define GGMLX_CUDA_KERNELS_H

#include "cuda-ops.h"
#include "mul-mat-plan.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor as a kernel reads it: device data, ggml type, shape, byte strides. */
struct ggmlx_cuda_tdesc {
    char    * data;
    int       type;
    int64_t   ne[4];
    int64_t   nb[4];
};

void ggmlx_cuda_tdesc_of(const struct ggml_tensor * t, struct ggmlx_cuda_tdesc * d);

/* elements of src, in row-major logical order, into dst (same count, any shapes and strides) */
enum ggml_status ggmlx_cuda_launch_copy(const struct ggmlx_cuda_exec * ex, const struct ggmlx_cuda_tdesc * src,
                                        const struct ggmlx_cuda_tdesc * dst, char * err, size_t err_size);

/* n bytes from src to dst, both device memory (same-type copies of contiguous tensors of any type) */
enum ggml_status ggmlx_cuda_launch_copy_bytes(const struct ggmlx_cuda_exec * ex, void * dst, const void * src, size_t n,
                                              char * err, size_t err_size);

/* ADD, SUB, MUL, DIV */
enum ggml_status ggmlx_cuda_launch_binary(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                          size_t err_size);
/* UNARY (see ggmlx_cuda_unary_supported), SQR, SQRT, LOG, SIN, COS, CLAMP, LEAKY_RELU, SCALE, ADD1 */
enum ggml_status ggmlx_cuda_launch_unary(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                         size_t err_size);
bool ggmlx_cuda_unary_supported(int unary_op);
/* NORM, RMS_NORM, L2_NORM */
enum ggml_status ggmlx_cuda_launch_norm(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                        size_t err_size);
/* GROUP_NORM */
enum ggml_status ggmlx_cuda_launch_group_norm(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                              size_t err_size);
/* SOFT_MAX (scale, optional F16/F32 mask, ALiBi) */
enum ggml_status ggmlx_cuda_launch_soft_max(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                            size_t err_size);
/* GET_ROWS with I32 indices; a row whose index is out of range is left untouched */
enum ggml_status ggmlx_cuda_launch_get_rows(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                            size_t err_size);
/* SUM, SUM_ROWS, MEAN, ARGMAX */
enum ggml_status ggmlx_cuda_launch_reduce(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                          size_t err_size);
/* SET_ROWS with I32 or I64 indices; an out-of-range index skips its row */
enum ggml_status ggmlx_cuda_launch_set_rows(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                            size_t err_size);
/* GLU (all six, swiglu_oai with its alpha and limit), fused or split */
enum ggml_status ggmlx_cuda_launch_glu(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                       size_t err_size);
/* ROPE, normal and NEOX, F32/F16, optional frequency factors, YaRN */
enum ggml_status ggmlx_cuda_launch_rope(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                        size_t err_size);
/* REPEAT, CONCAT, DIAG_MASK_INF, DIAG_MASK_ZERO */
enum ggml_status ggmlx_cuda_launch_shape(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                         size_t err_size);
/* PAD (and pad_ext), PAD_REFLECT_1D */
enum ggml_status ggmlx_cuda_launch_pad(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                       size_t err_size);
/* ARANGE, TIMESTEP_EMBEDDING, CUMSUM, COUNT_EQUAL */
enum ggml_status ggmlx_cuda_launch_misc(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                        size_t err_size);
/* ARGSORT, TOP_K on rows that ggmlx_cuda_launch_sort (launch-config.h) accepts */
enum ggml_status ggmlx_cuda_launch_argsort(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                           size_t err_size);
/* OUT_PROD (a F32/F16/BF16 broadcast over dims 2, 3; b and dst F32) */
enum ggml_status ggmlx_cuda_launch_out_prod(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node, char * err,
                                            size_t err_size);
/* MUL_MAT through cuBLAS, following plan (made by the caller from the same node) */
enum ggml_status ggmlx_cuda_launch_mul_mat(const struct ggmlx_cuda_exec * ex, struct ggml_tensor * node,
                                           const struct ggmlx_mm_plan * plan, char * err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_CUDA_KERNELS_H */
