/*
 * ops-recurrent.h -- the vectorized row loops of the recurrent kernels (ops-recurrent-rows.h),
 * for the instruction set this CPU has, shared with the indexer's dot products (ops-dsv4.c).
 */
#ifndef GGMLX_OPS_RECURRENT_H
#define GGMLX_OPS_RECURRENT_H

#include <stdint.h>

struct ggmlx_rr_rows {
    float (*dot)(int64_t, const float *, const float *);
    float (*gdn_decay_dot)(int64_t, float *, const float *, float, const float *);
    float (*gdn_update_dot)(int64_t, float *, const float *, float, const float *);
    void (*wkv6_row)(int64_t, float *, float *, const float *, float, float, float, float);
    void (*gla_row)(int64_t, float *, float *, const float *, float, float, float);
    float (*wkv7_row)(int64_t, float *, const float *, const float *, float, float, const float *, const float *);
    float (*ssm2_row)(int64_t, float *, const float *, const float *, float, float);
};

/* the loops for this CPU: AVX-512 or AVX2 on x86 when present, else the baseline build */
const struct ggmlx_rr_rows * ggmlx_cpu_rr_rows(void);

#endif /* GGMLX_OPS_RECURRENT_H */
