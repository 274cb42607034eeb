/*
 * ops-copy-quant.c -- DUP, CPY, CONT between float types and quantized ones: F32/F16/BF16 into a
 * contiguous quantized dst (each dst row gathered as F32, then quantized with the CPU from_float),
 * and a quantized src with contiguous blocks into F32 (each src row dequantized with to_float,
 * then placed). Elements pair up in row-major logical order, so shapes may differ; a row of one
 * side may span several rows of the other. Same-type copies stay in ops-copy.c.
 */
#include "cpu-ops.h"
#include "ggml-cpu.h"
#include "ops-elem.h"

#define CQ_ALIGN 64

/* the scratch one thread needs: a row of the quantized side as F32 */
size_t ggmlx_cpu_dup_quant_work_size(const struct ggml_tensor * dst, int n_tasks) {
    const struct ggml_tensor * q = ggml_is_quantized(dst->type) ? dst : dst->src[0];
    const size_t row = ((size_t) q->ne[0] * sizeof(float) + CQ_ALIGN - 1) & ~(size_t) (CQ_ALIGN - 1);
    return (size_t) (n_tasks < 1 ? 1 : n_tasks) * row + CQ_ALIGN;
}

/* this thread's row of floats in the work buffer, NULL (failure reported) when it is too small */
static float * cq_scratch(const struct ggmlx_cpu_params * params, const struct ggml_tensor * dst) {
    const size_t need = ggmlx_cpu_dup_quant_work_size(dst, params->nth);
    if (params->wdata == NULL || params->wsize < need) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s (%s): work buffer of %zu bytes is smaller than the %zu needed", dst->name,
                           ggml_op_name(dst->op), params->wsize, need);
        }
        return NULL;
    }
    const struct ggml_tensor * q = ggml_is_quantized(dst->type) ? dst : dst->src[0];
    const size_t row = ((size_t) q->ne[0] * sizeof(float) + CQ_ALIGN - 1) & ~(size_t) (CQ_ALIGN - 1);
    char * base = (char *) (((uintptr_t) params->wdata + CQ_ALIGN - 1) & ~(uintptr_t) (CQ_ALIGN - 1));
    return (float *) (base + (size_t) params->ith * row);
}

/* the address of the element at flat (row-major logical) index f of t */
static char * cq_at(const struct ggml_tensor * t, int64_t f) {
    const int64_t i0 = f % t->ne[0];
    int64_t       i1, i2, i3;
    ggmlx_row_coords(t, f / t->ne[0], &i1, &i2, &i3);
    return (char *) t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* n elements of t from flat index f on, as floats into y, one run of t's rows at a time */
static void cq_gather(const struct ggml_tensor * t, int64_t f, int64_t n, float * y) {
    while (n > 0) {
        const int64_t i0  = f % t->ne[0];
        const int64_t run = t->ne[0] - i0 < n ? t->ne[0] - i0 : n;
        const char  * p   = cq_at(t, f);
        for (int64_t i = 0; i < run; i++) {
            y[i] = ggmlx_load_f(t->type, p + i * t->nb[0]);
        }
        y += run;
        f += run;
        n -= run;
    }
}

/* n floats into F32 t from flat index f on */
static void cq_scatter(const struct ggml_tensor * t, int64_t f, int64_t n, const float * y) {
    while (n > 0) {
        const int64_t i0  = f % t->ne[0];
        const int64_t run = t->ne[0] - i0 < n ? t->ne[0] - i0 : n;
        char        * p   = cq_at(t, f);
        if (t->nb[0] == sizeof(float)) {
            memcpy(p, y, (size_t) run * sizeof(float));
        } else {
            for (int64_t i = 0; i < run; i++) {
                memcpy(p + i * t->nb[0], &y[i], sizeof(float));
            }
        }
        y += run;
        f += run;
        n -= run;
    }
}

/* float src -> contiguous quantized dst, dst rows split between threads */
static void cq_to_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const ggml_from_float_t    q   = ggml_get_type_traits_cpu(dst->type)->from_float;
    float * tmp = cq_scratch(params, dst);
    if (tmp == NULL) {
        return;
    }
    const int64_t ne0 = dst->ne[0];
    const size_t  row = ggml_row_size(dst->type, ne0);
    const bool    direct = ggml_is_contiguous(src) && src->type == GGML_TYPE_F32;
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        const float * x = tmp;
        if (direct) {
            x = (const float *) src->data + ir * ne0;
        } else {
            cq_gather(src, ir * ne0, ne0, tmp);
        }
        q(x, (char *) dst->data + (size_t) ir * row, ne0);
    }
}

/* quantized src with contiguous blocks -> F32 dst, src rows split between threads */
static void cq_from_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    const ggml_to_float_t      dq  = ggml_get_type_traits(src->type)->to_float;
    float * tmp = cq_scratch(params, dst);
    if (tmp == NULL) {
        return;
    }
    const int64_t ne0    = src->ne[0];
    const bool    direct = ggml_is_contiguous(dst);
    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(src), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(src, ir, &i1, &i2, &i3);
        const char * x = (const char *) src->data + i1 * src->nb[1] + i2 * src->nb[2] + i3 * src->nb[3];
        if (direct) {
            dq(x, (float *) dst->data + ir * ne0, ne0);
            continue;
        }
        dq(x, tmp, ne0);
        cq_scatter(dst, ir * ne0, ne0, tmp);
    }
}

void ggmlx_cpu_dup_quant(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * src = dst->src[0];
    if (ggml_nelements(src) != ggml_nelements(dst)) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: source has %lld elements, destination %lld", dst->name,
                           (long long) ggml_nelements(src), (long long) ggml_nelements(dst));
        }
        return;
    }
    if (ggml_nelements(dst) == 0) {
        return;
    }
    if (ggml_is_quantized(dst->type)) {
        cq_to_quant(params, dst);
    } else {
        cq_from_quant(params, dst);
    }
}
