/*
 * row-check.h -- out-of-range row indices found by the CUDA get_rows / set_rows kernels, made
 * into an error at the next synchronize (docs/errors.md). Indices are data the host never sees
 * before the kernels run, so a kernel skips a bad row and leaves a record in the backend's
 * device "error word"; the host reads the word back only after a compute with rows nodes was
 * enqueued, once the stream has drained.
 *
 * Plain C with no CUDA headers: the .cu kernels use the word layout, the backend the rest, and
 * tests/test-cuda-row-check.c checks the decoding and the "read back or not" decision anywhere.
 */
#ifndef GGMLX_CUDA_ROW_CHECK_H
#define GGMLX_CUDA_ROW_CHECK_H

#include "ggml.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the error word: int64 slots in device memory, zero while nothing went wrong */
enum ggmlx_row_err_slot {
    GGMLX_ROW_ERR_CLAIM,  /* 0, or 1 once a kernel has kept a record (atomicCAS: the first one wins) */
    GGMLX_ROW_ERR_EPOCH,  /* the compute now running, written by the host before its kernels */
    GGMLX_ROW_ERR_AT,     /* the record: EPOCH when the bad index was read */
    GGMLX_ROW_ERR_NODE,   /* ... the node's position in its graph */
    GGMLX_ROW_ERR_VALUE,  /* ... the index read */
    GGMLX_ROW_ERR_POS0,   /* ... its coordinates in the index tensor */
    GGMLX_ROW_ERR_POS1,
    GGMLX_ROW_ERR_POS2,
    GGMLX_ROW_ERR_SLOTS
};

/* rows nodes remembered between checks; more are counted, and reported without a name */
#define GGMLX_ROW_CHECK_NODES 64

struct ggmlx_row_node {
    int          epoch;  /* the compute it was enqueued with */
    int          node;   /* its position in that compute's graph */
    enum ggml_op op;
    int64_t      limit;  /* indices must be in 0..limit-1 */
    char         name[GGML_MAX_NAME];
};

struct ggmlx_row_check {
    int                   epoch;   /* computes with rows nodes enqueued since the last check */
    int                   n_nodes;
    struct ggmlx_row_node nodes[GGMLX_ROW_CHECK_NODES];
};

/* nothing pending (after a check, and at backend init) */
void ggmlx_row_check_reset(struct ggmlx_row_check * rc);

/*
 * Note the rows nodes of a compute about to be enqueued. Returns the compute's epoch (the value
 * the host writes into GGMLX_ROW_ERR_EPOCH before its kernels), or 0 when it has no rows node
 * and nothing needs to be written.
 */
int ggmlx_row_check_add(struct ggmlx_row_check * rc, const struct ggml_cgraph * graph);

/* a rows node was enqueued since the last check: the word must be read back */
bool ggmlx_row_check_pending(const struct ggmlx_row_check * rc);

/*
 * The word read back after the stream drained: false when it holds no record; otherwise true
 * with "name (op): row index V at [a, b, c] is out of range 0..L" in msg (the CPU's wording).
 */
bool ggmlx_row_check_decode(const struct ggmlx_row_check * rc, const int64_t word[GGMLX_ROW_ERR_SLOTS], char * msg,
                            size_t msg_size);

#ifdef __cplusplus
}
#endif

#endif /* GGMLX_CUDA_ROW_CHECK_H */
