/*
 * ops-shape.c -- REPEAT and CONCAT. Both only move elements (no arithmetic), so they work by
 * element size: any non-block type, any strides; CONCAT also moves rows of quantized blocks.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

/* n elements of es bytes each, strided on both sides */
static void move_elems(char * pd, size_t sd, const char * ps, size_t ss, size_t es, int64_t n) {
    if (sd == es && ss == es) {
        memcpy(pd, ps, (size_t) n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(pd + i * sd, ps + i * ss, es);
    }
}

void ggmlx_cpu_repeat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    if (ggml_nelements(dst) == 0) {
        return;
    }
    if (ggml_nelements(src) == 0 || src->type != dst->type) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: cannot repeat an empty or differently typed source", dst->name);
        }
        return;
    }
    const size_t  es   = ggml_type_size(dst->type);
    const int64_t ne0  = dst->ne[0];
    const int64_t ne00 = src->ne[0];
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * ps = (const char *) src->data +
                          ggmlx_offset(src, 0, i1 % src->ne[1], i2 % src->ne[2], i3 % src->ne[3]);
        for (int64_t k = 0; k < ne0; k += ne00) {
            move_elems(pd + k * dst->nb[0], dst->nb[0], ps, src->nb[0], es, ne00);
        }
    }
}

void ggmlx_cpu_concat(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * a = dst->src[0];
    const struct ggml_tensor * b = dst->src[1];
    const int dim = ggmlx_get_op_params_i32(dst, 0);
    if (dim < 0 || dim >= GGML_MAX_DIMS) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: concat dim %d out of range", dst->name, dim);
        }
        return;
    }
    const bool   blocks = ggml_blck_size(dst->type) != 1;
    const size_t es     = ggml_type_size(dst->type);
    if (blocks && (a->nb[0] != es || b->nb[0] != es || dst->nb[0] != es)) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: concat of %s needs rows of contiguous blocks", dst->name,
                           ggml_type_name(dst->type));
        }
        return;
    }
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i[4] = { 0 };
        ggmlx_row_coords(dst, ir, &i[1], &i[2], &i[3]);
        char * pd = (char *) dst->data + ggmlx_offset(dst, 0, i[1], i[2], i[3]);
        if (dim == 0) {
            const char * pa = (const char *) a->data + ggmlx_offset(a, 0, i[1], i[2], i[3]);
            const char * pb = (const char *) b->data + ggmlx_offset(b, 0, i[1], i[2], i[3]);
            if (blocks) {
                const size_t ra = ggml_row_size(a->type, a->ne[0]);
                memcpy(pd, pa, ra);
                memcpy(pd + ra, pb, ggml_row_size(b->type, b->ne[0]));
            } else {
                move_elems(pd, dst->nb[0], pa, a->nb[0], es, a->ne[0]);
                move_elems(pd + a->ne[0] * dst->nb[0], dst->nb[0], pb, b->nb[0], es, b->ne[0]);
            }
            continue;
        }
        const struct ggml_tensor * s = a;
        if (i[dim] >= a->ne[dim]) {
            s = b;
            i[dim] -= a->ne[dim];
        }
        const char * ps = (const char *) s->data + ggmlx_offset(s, 0, i[1], i[2], i[3]);
        if (blocks) {
            memcpy(pd, ps, ggml_row_size(s->type, s->ne[0]));
        } else {
            move_elems(pd, dst->nb[0], ps, s->nb[0], es, dst->ne[0]);
        }
    }
}
