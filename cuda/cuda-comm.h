/*
 * cuda-comm.h -- the CUDA registry's collectives for the meta device (ggml-backend.h,
 * "Collectives between backends"): an NCCL communicator over CUDA backends on distinct GPUs,
 * and an in-place sum across them enqueued on each backend's stream. The registry hands them
 * out as "ggml_backend_comm_init", "ggml_backend_comm_free", "ggml_backend_comm_allreduce_tensor".
 *
 * GGML_CUDA_ALLREDUCE (upstream's variable): "nccl" (the default) or "none" (no communicator:
 * the meta device reduces with copies and adds). Upstream's "internal" is not implemented here
 * and means "none".
 */
#ifndef GGMLX_CUDA_COMM_H
#define GGMLX_CUDA_COMM_H

#include "ggml-backend.h"

#include <stdbool.h>
#include <stddef.h>

void * ggmlx_cuda_comm_init(ggml_backend_t * backends, size_t n_backends);
void   ggmlx_cuda_comm_free(void * comm_ctx);
bool   ggmlx_cuda_comm_allreduce_tensor(void * comm_ctx, struct ggml_tensor ** tensors);

#endif /* GGMLX_CUDA_COMM_H */
