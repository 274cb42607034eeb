/*
 * ops-glu.c -- GLU: dst = act(x) * g per element (SWIGLU_OAI: its clipped form with alpha and
 * limit), x and g from the two halves of each src0 row (or from src0 and src1 when split). Any
 * strides; src0, src1 and dst share a float type.
 */
#include "cpu-ops.h"
#include "ops-elem.h"

/* the gated value of x with gate g; p: op_params[2..3] as floats (alpha, limit for SWIGLU_OAI) */
typedef float (*glu_fn)(float x, float g, const float * p);

static float glu_reglu(float x, float g, const float * p) { (void) p; return ggmlx_relu_f32(x) * g; }
static float glu_geglu(float x, float g, const float * p) { (void) p; return ggmlx_gelu_f32(x) * g; }
static float glu_swiglu(float x, float g, const float * p) { (void) p; return ggmlx_silu_f32(x) * g; }
static float glu_geglu_erf(float x, float g, const float * p) { (void) p; return ggmlx_gelu_erf_f32(x) * g; }
static float glu_geglu_quick(float x, float g, const float * p) { (void) p; return ggmlx_gelu_quick_f32(x) * g; }
static float glu_swiglu_oai(float x, float g, const float * p) { return ggmlx_swiglu_oai_f32(x, g, p[0], p[1]); }

static glu_fn glu_fn_for(enum ggml_glu_op op) {
    switch (op) {
    case GGML_GLU_OP_REGLU:       return glu_reglu;
    case GGML_GLU_OP_GEGLU:       return glu_geglu;
    case GGML_GLU_OP_SWIGLU:      return glu_swiglu;
    case GGML_GLU_OP_SWIGLU_OAI:  return glu_swiglu_oai;
    case GGML_GLU_OP_GEGLU_ERF:   return glu_geglu_erf;
    case GGML_GLU_OP_GEGLU_QUICK: return glu_geglu_quick;
    default:                      return NULL;
    }
}

/* an F32 row with the op's function inlined (no call per element) */
static void glu_row_f32(enum ggml_glu_op op, const float * p, float * d, const float * x, const float * g, int64_t n) {
#define GGMLX_GLU_LOOP(fn)                       \
    for (int64_t i = 0; i < n; i++) {            \
        d[i] = fn(x[i], g[i], p);                \
    }                                            \
    return;
    switch (op) {
    case GGML_GLU_OP_REGLU:       GGMLX_GLU_LOOP(glu_reglu)
    case GGML_GLU_OP_GEGLU:       GGMLX_GLU_LOOP(glu_geglu)
    case GGML_GLU_OP_SWIGLU:      GGMLX_GLU_LOOP(glu_swiglu)
    case GGML_GLU_OP_SWIGLU_OAI:  GGMLX_GLU_LOOP(glu_swiglu_oai)
    case GGML_GLU_OP_GEGLU_ERF:   GGMLX_GLU_LOOP(glu_geglu_erf)
    default:                      GGMLX_GLU_LOOP(glu_geglu_quick)
    }
#undef GGMLX_GLU_LOOP
}

void ggmlx_cpu_glu(const struct ggmlx_cpu_params * params, struct ggml_tensor * dst) {
    const struct ggml_tensor * s0 = dst->src[0];
    const struct ggml_tensor * s1 = dst->src[1];
    const enum ggml_glu_op op = (enum ggml_glu_op) ggmlx_get_op_params_i32(dst, 0);
    const glu_fn f = glu_fn_for(op);
    if (f == NULL) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: glu op %d is not implemented in ggmlx yet", dst->name,
                           (int) ggmlx_get_op_params_i32(dst, 0));
        }
        return;
    }
    const float   p[2]    = { ggmlx_get_op_params_f32(dst, 2), ggmlx_get_op_params_f32(dst, 3) };
    const bool    swapped = ggmlx_get_op_params_i32(dst, 1) != 0;
    const int64_t nc      = dst->ne[0];
    if (s1 != NULL ? s1->ne[0] < nc || s0->ne[0] < nc : s0->ne[0] < 2 * nc) {
        if (params->ith == 0) {
            ggmlx_cpu_fail(params, "%s: glu sources are narrower than the result", dst->name);
        }
        return;
    }
    /* element offsets (in elements of dim 0) of the activated half and the gate */
    const int64_t off_x = s1 == NULL && swapped ? nc : 0;
    const int64_t off_g = s1 == NULL && !swapped ? nc : 0;
    const struct ggml_tensor * gsrc = s1 != NULL ? s1 : s0;
    const bool fast = ggmlx_f32_rows(dst) && ggmlx_f32_rows(s0) && ggmlx_f32_rows(gsrc);

    int64_t r0, r1;
    ggmlx_cpu_split_rows(params, ggml_nrows(dst), &r0, &r1);
    for (int64_t ir = r0; ir < r1; ir++) {
        int64_t i1, i2, i3;
        ggmlx_row_coords(dst, ir, &i1, &i2, &i3);
        char       * pd = (char *) dst->data + ggmlx_offset(dst, 0, i1, i2, i3);
        const char * px = (const char *) s0->data + ggmlx_offset(s0, off_x, i1, i2, i3);
        const char * pg = (const char *) gsrc->data + ggmlx_offset(gsrc, off_g, i1, i2, i3);
        if (fast) {
            glu_row_f32(op, p, (float *) pd, (const float *) px, (const float *) pg, nc);
            continue;
        }
        for (int64_t i0 = 0; i0 < nc; i0++) {
            const float x = ggmlx_load_f(s0->type, px + i0 * s0->nb[0]);
            const float g = ggmlx_load_f(gsrc->type, pg + i0 * gsrc->nb[0]);
            ggmlx_store_f(dst->type, pd + i0 * dst->nb[0], f(x, g, p));
        }
    }
}
