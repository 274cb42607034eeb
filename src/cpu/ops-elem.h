/*
 * ops-elem.h -- element loads and stores by type for the elementwise CPU kernels
 * (binary, unary, glu, copy, rows, shape, reduce). Internal to src/cpu.
 */
#ifndef GGMLX_CPU_OPS_ELEM_H
#define GGMLX_CPU_OPS_ELEM_H

#include "ggml-impl.h"
#include "ggml-math.h"

/* one float-typed element (F32/F16/BF16) as float; the dispatch rules out other types */
static inline float ggmlx_load_f(enum ggml_type type, const char * p) {
    uint16_t h;
    switch (type) {
    case GGML_TYPE_F16:
        memcpy(&h, p, sizeof h);
        return ggmlx_fp16_to_fp32(h);
    case GGML_TYPE_BF16:
        memcpy(&h, p, sizeof h);
        return ggmlx_bf16_to_fp32(h);
    default: {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    }
    }
}

static inline void ggmlx_store_f(enum ggml_type type, char * p, float v) {
    uint16_t h;
    switch (type) {
    case GGML_TYPE_F16:
        h = ggmlx_fp32_to_fp16(v);
        memcpy(p, &h, sizeof h);
        break;
    case GGML_TYPE_BF16:
        h = ggmlx_fp32_to_bf16(v);
        memcpy(p, &h, sizeof h);
        break;
    default:
        memcpy(p, &v, sizeof v);
        break;
    }
}

/* F32 with unit element stride and float-aligned rows: rows can be walked as float arrays */
static inline bool ggmlx_f32_rows(const struct ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && ((uintptr_t) t->data % sizeof(float)) == 0 &&
           t->nb[1] % sizeof(float) == 0 && t->nb[2] % sizeof(float) == 0 && t->nb[3] % sizeof(float) == 0;
}

/* F32 with no gaps between elements, rows or planes (cheaper than ggml_is_contiguous for hot paths) */
static inline bool ggmlx_f32_dense(const struct ggml_tensor * t) {
    return t->type == GGML_TYPE_F32 && t->nb[0] == sizeof(float) && t->nb[1] == (size_t) t->ne[0] * sizeof(float) &&
           t->nb[2] == t->nb[1] * (size_t) t->ne[1] && t->nb[3] == t->nb[2] * (size_t) t->ne[2];
}

static inline bool ggmlx_same_shape(const struct ggml_tensor * x, const struct ggml_tensor * y) {
    return x->ne[0] == y->ne[0] && x->ne[1] == y->ne[1] && x->ne[2] == y->ne[2] && x->ne[3] == y->ne[3];
}

/* split a flat row index of a tensor with ne1, ne2 rows per level into (i1, i2, i3) */
static inline void ggmlx_row_coords(const struct ggml_tensor * t, int64_t ir, int64_t * i1, int64_t * i2, int64_t * i3) {
    const int64_t n1 = t->ne[1], n2 = t->ne[2];
    *i3 = ir / (n1 * n2);
    *i2 = (ir - *i3 * n1 * n2) / n1;
    *i1 = ir - *i3 * n1 * n2 - *i2 * n1;
}

#endif /* GGMLX_CPU_OPS_ELEM_H */
