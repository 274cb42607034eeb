/*
 * cuda-marks.h -- time stamps timed on the GPU (the queue_mark of cuda-backend.c).
 *
 * A mark is a timing cudaEvent recorded on the backend's stream. The GPU's clock is not the
 * host's, so a mark's time is known only relative to another event: when the backend is
 * synchronized, a reference event is recorded on the idle stream and waited for, the host
 * clock read at that moment, and every pending mark becomes host time minus its elapsed time
 * to the reference (cudaEventElapsedTime, about 0.5 us resolution).
 */
#ifndef GGMLX_CUDA_MARKS_H
#define GGMLX_CUDA_MARKS_H

#include "cuda-impl.h"

#include <stdbool.h>
#include <stdint.h>

struct ggmlx_cuda_mark {
    cudaEvent_t ev;
    uint64_t  * ns;
};

struct ggmlx_cuda_marks {
    struct ggmlx_cuda_mark * pending;  /* recorded, not yet resolved */
    int                      n_pending, cap_pending;
    cudaEvent_t            * spare;    /* resolved events, reused: creating one is not free */
    int                      n_spare, cap_spare;
    cudaEvent_t              ref;      /* the reference event (made when first needed) */
};

/*
 * Record a mark for *ns on stream (of d, current on the calling thread). When that is
 * impossible *ns gets the host time of the call, an error is recorded, and false returned.
 */
bool ggmlx_cuda_marks_add(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaStream_t stream,
                          uint64_t * ns, const char * func);
/*
 * Write every pending mark's time; call right after the stream was synchronized. stream_ok
 * false (the synchronize failed, or the device did): marks get the host time now instead,
 * without touching CUDA.
 */
void ggmlx_cuda_marks_resolve(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, cudaStream_t stream,
                              bool stream_ok, const char * func);
/* Forget pending marks (their times are never written) and destroy the events when live. */
void ggmlx_cuda_marks_free(struct ggmlx_cuda_marks * m, struct ggmlx_cuda_device * d, bool live, const char * func);

#endif /* GGMLX_CUDA_MARKS_H */
