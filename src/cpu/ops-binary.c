/*
 * ops-binary.c -- ADD, SUB, MUL, DIV: dst = src0 (op) src1, src1 repeated over src0's shape.
 * Any float type for each operand; arithmetic in float, as upstream.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

static inline float binary_apply(enum ggml_op op, float x, float y) {
    switch (op) {
    case GGML_OP_ADD: return x + y;
    case GGML_OP_SUB: return x - y;
    case GGML_OP_MUL: return x * y;
    default:          return x / y;
    }
}

/* The common case (all F32, unit element stride), with the op hoisted out of the loop. */
#define GGMLX_BINARY_F32_LOOP(expr)                                                      \
    do {                                                                                 \
        if (ne10 == ne0) {                                                               \
            for (int64_t i = 0; i < ne0; i++) { const float x = pa[i], y = pb[i]; pd[i] = (expr); } \
        } else if (ne10 == 1) {                                                          \
            const float y = pb[0];                                                       \
            for (int64_t i = 0; i < ne0; i++) { const float x = pa[i]; pd[i] = (expr); } \
        } else {                                                                         \
            for (int64_t i = 0; i < ne0; i++) { const float x = pa[i], y = pb[i % ne10]; pd[i] = (expr); } \
        }                                                                                \
    } while (0)

static void binary_row_f32(enum ggml_op op, int64_t ne0, int64_t ne10, float * pd, const float * pa, const float * pb) {
    switch (op) {
    case GGML_OP_ADD: GGMLX_BINARY_F32_LOOP(x + y); break;
    case GGML_OP_SUB: GGMLX_BINARY_F32_LOOP(x - y); break;
    case GGML_OP_MUL: GGMLX_BINARY_F32_LOOP(x * y); break;
    default:          GGMLX_BINARY_F32_LOOP(x / y); break;
    }
}

#undef GGMLX_BINARY_F32_LOOP

void ggmlx_cpu_binary(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const enum ggml_op op = dst->op;

    /*
     * All dense F32 of one shape: one flat run split by elements. This is tested first and with
     * few loads because it is the common case and small graphs pay for every check: the per-row
     * index divisions below cost more than the arithmetic on a 16-element row.
     */
    if (ggmlx_f32_dense(dst) && ggmlx_f32_dense(a) && ggmlx_f32_dense(b) && ggmlx_same_shape(a, b) &&
        (((uintptr_t) dst->data | (uintptr_t) a->data | (uintptr_t) b->data) % sizeof(float)) == 0) {
        const int64_t n = dst->ne[0] * dst->ne[1] * dst->ne[2] * dst->ne[3];
        int64_t e0, e1;
        ggmlx_cpu_split_rows(params, n, &e0, &e1);
        if (e1 > e0) {
            binary_row_f32(op, e1 - e0, e1 - e0, (float *) dst->data + e0, (const float *) a->data + e0,
                           (const float *) b->data + e0);
        }
        return;
    }

    const int64_t ne0 = dst->ne[0], ne10 = b->ne[0];
    const bool fast = ggmlx_f32_rows(dst) && ggmlx_f32_rows(a) && ggmlx_f32_rows(b);

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char       * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * pa = (const char *) a->data + ggmlx_offset(a, 0, i1, i2, i3);
        const char * pb = (const char *) b->data + ggmlx_offset(b, 0, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        if (fast) {
            binary_row_f32(op, ne0, ne10, (float *) pd, (const float *) pa, (const float *) pb);
            continue;
        }
        for (int64_t i0 = 0; i0 < ne0; i0++) {
            const float x = ggmlx_load_f(a->type, pa + i0 * a->nb[0]);
            const float y = ggmlx_load_f(b->type, pb + (i0 % ne10) * b->nb[0]);
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], binary_apply(op, x, y));
        }
    }
}

/* ADD1: dst = src0 + the one element of src1 (x * 1 is exact, so this is x + y), any strides */
void ggmlx_cpu_add1(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * b = dst->src[1];
    ggmlx_cpu_affine(params, dst, dst->src[0], 1.0f, ggmlx_load_f(b->type, (const char *) b->data));
}
