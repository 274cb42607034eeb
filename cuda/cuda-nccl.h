/*
 * cuda-nccl.h -- NCCL, opened with dlopen the first time a communicator is asked for (docs/architecture.md §7:
 * the libraries never name libnccl, so a machine without it loads them all the same).
 *
 * Which library: $GGMLX_NCCL_LIBRARY when set (that path only), else "libnccl.so.2", then
 * "libnccl.so", through the dynamic loader's usual search. The first attempt's outcome is kept
 * for the life of the process; the library is never closed (NCCL keeps threads of its own).
 *
 * The probes below are plain C, for the tests too. The function table needs nccl.h's types and
 * exists only where the build found that header (GGMLX_USE_NCCL).
 */
#ifndef GGMLX_CUDA_NCCL_H
#define GGMLX_CUDA_NCCL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Load NCCL if not tried yet. true when it is usable; otherwise false, with the reason (every
 * path tried and what the loader said) in why when why is not NULL. Records no error: a
 * missing NCCL is a fallback, not a failure of the caller.
 */
bool ggmlx_nccl_load(char * why, size_t why_size);

/* the loaded library's version code (2.28.9 is 22809), 0 when none is loaded */
int ggmlx_nccl_version(void);

#ifdef GGMLX_USE_NCCL
#include <nccl.h>

struct ggmlx_nccl {
    int version;
    ncclResult_t (*get_version)(int * version);
    ncclResult_t (*comm_init_all)(ncclComm_t * comms, int ndev, const int * devlist);
    ncclResult_t (*comm_destroy)(ncclComm_t comm);
    ncclResult_t (*comm_get_async_error)(ncclComm_t comm, ncclResult_t * async_error);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    ncclResult_t (*all_reduce)(const void * sendbuff, void * recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
    const char * (*get_error_string)(ncclResult_t result);
    /* NULL before NCCL 2.13; says more than the error code (what CUDA or the network said) */
    const char * (*get_last_error)(ncclComm_t comm);
};

/* the loaded library's functions, NULL when it could not be loaded (ggmlx_nccl_load says why) */
const struct ggmlx_nccl * ggmlx_nccl_get(void);

/* r in words for a message: NCCL's text for the code, then what NCCL last said when it can */
void ggmlx_nccl_describe(const struct ggmlx_nccl * api, ncclResult_t r, ncclComm_t comm, char * buf, size_t size);
#endif

#endif /* GGMLX_CUDA_NCCL_H */
