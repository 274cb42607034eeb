/*
 * cf-cases.h -- the op cases of the conformance runner: what a case is, and the coverage matrix
 * that lists them (types x layouts x sizes, chosen per op family rather than as a full cross
 * product, so the whole run stays within seconds under sanitizers). How a case builds its graph
 * is in cf-build.h, its reference in cf-ref.h, the running in cf-exec.h.
 */
#ifndef GGMLX_CF_CASES_H
#define GGMLX_CF_CASES_H

#include "cf-common.h"

enum cf_op {
    CF_OP_DUP,
    CF_OP_CPY,
    CF_OP_CONT,
    CF_OP_ADD,
    CF_OP_SUB,
    CF_OP_MUL,
    CF_OP_DIV,
    CF_OP_SCALE,
    CF_OP_SQR,
    CF_OP_SQRT,
    CF_OP_SUM,
    CF_OP_SUM_ROWS,
    CF_OP_MEAN,
    CF_OP_ARGMAX,
    CF_OP_REPEAT,
    CF_OP_CONCAT,
    CF_OP_NORM,
    CF_OP_RMS_NORM,
    CF_OP_MUL_MAT,
    CF_OP_GET_ROWS,
    CF_OP_SET_ROWS,
    CF_OP_DIAG_MASK_INF,
    CF_OP_SOFT_MAX,
    CF_OP_SOFT_MAX_EXT,
    CF_OP_ROPE,
    CF_OP_UNARY,
    CF_OP_GLU,
    CF_OP_LOG,
    CF_OP_SIN,
    CF_OP_COS,
    CF_OP_CLAMP,
    CF_OP_LEAKY_RELU,
    CF_OP_ADD1,
    CF_OP_L2_NORM,
    CF_OP_GROUP_NORM,
    CF_OP_OUT_PROD,
    CF_OP_DIAG_MASK_ZERO,
    CF_OP_PAD,
    CF_OP_ARANGE,
    CF_OP_TIMESTEP_EMB,
    CF_OP_COUNT_EQUAL,
    CF_OP_CUMSUM,
    CF_OP_ARGSORT,
    CF_OP_TOP_K,
    CF_OP_PAD_REFLECT_1D,
    /* convolution and images */
    CF_OP_IM2COL,
    CF_OP_CONV_2D_DIRECT,
    CF_OP_CONV_2D_DW_DIRECT,
    CF_OP_POOL_2D,
    CF_OP_UPSCALE,
    CF_OP_POOL_1D,
    CF_OP_CONV_TRANSPOSE_2D,
    CF_OP_COL2IM_1D,
    CF_OP_WIN_PART,
    CF_OP_GET_REL_POS,
    CF_OP_ADD_REL_POS,
};

/*
 * How the inputs are laid out. PERMUTED: the inputs are views whose memory order is (2, 0, 3, 1)
 * of their logical dims, so no dim is contiguous. BCAST: the second operand is repeated (binary
 * ops, mul_mat over dims 2-3, a mask over heads). INPLACE: the result is written over the input.
 */
enum cf_layout { CF_CONTIG, CF_PERMUTED, CF_BCAST, CF_INPLACE };

static const char * cf_layout_name(enum cf_layout l) {
    switch (l) {
    case CF_PERMUTED: return "permuted";
    case CF_BCAST: return "bcast";
    case CF_INPLACE: return "inplace";
    default: return "contig";
    }
}

struct cf_op_case {
    char           name[112];
    enum cf_op     op;
    enum ggml_type t0;    /* the first input */
    enum ggml_type t1;    /* the second input, the destination (cpy, set_rows) or the mask */
    int64_t        ne[4]; /* the first input's shape */
    int64_t        nb[4]; /* a second shape where the op needs one (see cf_build_op) */
    enum cf_layout layout;
    int            ip[4]; /* integer parameters (see cf_build_op) */
    float          fp[4]; /* float parameters */
};

/* ---- the list ------------------------------------------------------------------------------ */

struct cf_case_list {
    struct cf_op_case * v;
    int                 n, cap;
    bool                oom;
    struct cf_op_case   scratch; /* what cf_push hands out once memory ran out */
};

static struct cf_op_case * cf_push(struct cf_case_list * l) {
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 256;
        struct cf_op_case * v = realloc(l->v, (size_t) cap * sizeof *v);
        if (v == NULL) {
            l->oom = true;
            return &l->scratch;
        }
        l->v   = v;
        l->cap = cap;
    }
    struct cf_op_case * c = &l->v[l->n++];
    memset(c, 0, sizeof *c);
    return c;
}

static const char * cf_op_label(const struct cf_op_case * c) {
    static const char * names[] = {
        "dup", "cpy", "cont", "add", "sub", "mul", "div", "scale", "sqr", "sqrt", "sum", "sum_rows", "mean",
        "argmax", "repeat", "concat", "norm", "rms_norm", "mul_mat", "get_rows", "set_rows", "diag_mask_inf",
        "soft_max", "soft_max_ext", "rope", "unary", "glu",
        "log", "sin", "cos", "clamp", "leaky_relu", "add1",
        "l2_norm", "group_norm", "out_prod", "diag_mask_zero", "pad", "arange", "timestep_embedding", "count_equal",
        "cumsum", "argsort", "top_k",
        "pad_reflect_1d",
        "im2col", "conv_2d_direct", "conv_2d_dw_direct", "pool_2d", "interpolate",
        "pool_1d", "conv_transpose_2d_p0", "col2im_1d", "win_part", "get_rel_pos", "add_rel_pos",
    };
    return names[c->op];
}

/* adds a case (never NULL); the name is made from the fields plus an optional note */
static struct cf_op_case * cf_add(struct cf_case_list * l, enum cf_op op, enum ggml_type t0, enum ggml_type t1,
                                  int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, enum cf_layout layout,
                                  const char * note) {
    struct cf_op_case * c = cf_push(l);
    c->op     = op;
    c->t0     = t0;
    c->t1     = t1;
    c->ne[0]  = ne0;
    c->ne[1]  = ne1;
    c->ne[2]  = ne2;
    c->ne[3]  = ne3;
    c->layout = layout;
    /* the types as they matter to the op: conversions as from>to, then the extra input's type */
    char types[32];
    const char * n0 = cf_type_name(t0), * n1 = cf_type_name(t1);
    if (t1 == t0 || op == CF_OP_ROPE) {
        snprintf(types, sizeof types, "%s", n0);
    } else if (op == CF_OP_CPY || op == CF_OP_ARGMAX) {
        snprintf(types, sizeof types, "%s>%s", n0, n1);
    } else if (op == CF_OP_GET_ROWS || op == CF_OP_SET_ROWS) {
        snprintf(types, sizeof types, "%s idx:%s", n0, n1);
    } else if (op == CF_OP_SOFT_MAX_EXT) {
        snprintf(types, sizeof types, "%s mask:%s", n0, n1);
    } else {
        snprintf(types, sizeof types, "%s b:%s", n0, n1);
    }
    snprintf(c->name, sizeof c->name, "%s%s%s %s [%lld,%lld,%lld,%lld] %s", cf_op_label(c), note ? ":" : "",
             note ? note : "", types, (long long) ne0, (long long) ne1, (long long) ne2, (long long) ne3,
             cf_layout_name(layout));
    return c;
}

static const int64_t cf_sizes[] = { 1, 31, 32, 33, 1023, 4097 };
#define CF_N_SIZES ((int) (sizeof cf_sizes / sizeof cf_sizes[0]))

static const enum ggml_type cf_float_types[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };

static const char * cf_unary_name(int op) {
    switch (op) {
    case GGML_UNARY_OP_ABS: return "abs";
    case GGML_UNARY_OP_NEG: return "neg";
    case GGML_UNARY_OP_TANH: return "tanh";
    case GGML_UNARY_OP_RELU: return "relu";
    case GGML_UNARY_OP_SIGMOID: return "sigmoid";
    case GGML_UNARY_OP_GELU: return "gelu";
    case GGML_UNARY_OP_SILU: return "silu";
    case GGML_UNARY_OP_EXP: return "exp";
    case GGML_UNARY_OP_GELU_ERF: return "gelu_erf";
    case GGML_UNARY_OP_SGN: return "sgn";
    case GGML_UNARY_OP_STEP: return "step";
    case GGML_UNARY_OP_ELU: return "elu";
    case GGML_UNARY_OP_GELU_QUICK: return "gelu_quick";
    case GGML_UNARY_OP_HARDSWISH: return "hardswish";
    case GGML_UNARY_OP_HARDSIGMOID: return "hardsigmoid";
    case GGML_UNARY_OP_EXPM1: return "expm1";
    case GGML_UNARY_OP_SOFTPLUS: return "softplus";
    case GGML_UNARY_OP_XIELU: return "xielu";
    case GGML_UNARY_OP_FLOOR: return "floor";
    case GGML_UNARY_OP_CEIL: return "ceil";
    case GGML_UNARY_OP_ROUND: return "round";
    case GGML_UNARY_OP_TRUNC: return "trunc";
    default: return "?";
    }
}

static const char * cf_glu_name(int op) {
    switch (op) {
    case GGML_GLU_OP_REGLU: return "reglu";
    case GGML_GLU_OP_GEGLU: return "geglu";
    case GGML_GLU_OP_SWIGLU: return "swiglu";
    case GGML_GLU_OP_GEGLU_ERF: return "geglu_erf";
    case GGML_GLU_OP_GEGLU_QUICK: return "geglu_quick";
    case GGML_GLU_OP_SWIGLU_OAI: return "swiglu_oai";
    default: return "?";
    }
}

static void cf_cases_copy(struct cf_case_list * l) {
    const enum ggml_type all[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    /* every conversion, on a shape with a ragged row */
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            cf_add(l, CF_OP_CPY, all[i], all[j], 33, 3, 2, 1, CF_CONTIG, NULL);
        }
    }
    /* from permuted sources, and into a permuted destination */
    for (int i = 0; i < 4; i++) {
        cf_add(l, CF_OP_CPY, all[i], GGML_TYPE_F32, 31, 5, 3, 2, CF_PERMUTED, NULL);
        cf_add(l, CF_OP_CPY, GGML_TYPE_F32, all[i], 33, 4, 3, 2, CF_PERMUTED, "to-permuted")->ip[0] = 1;
    }
    for (int s = 0; s < CF_N_SIZES; s++) {
        cf_add(l, CF_OP_CPY, GGML_TYPE_F32, GGML_TYPE_F16, cf_sizes[s], 2, 1, 1, CF_CONTIG, NULL);
        cf_add(l, CF_OP_DUP, GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 1, 1, CF_CONTIG, NULL);
    }
    for (int i = 0; i < 4; i++) {
        cf_add(l, CF_OP_CONT, all[i], all[i], 31, 4, 3, 2, CF_PERMUTED, NULL);
        cf_add(l, CF_OP_CONT, all[i], all[i], 1023, 2, 3, 1, CF_PERMUTED, NULL);
        cf_add(l, CF_OP_DUP, all[i], all[i], 32, 3, 2, 2, CF_PERMUTED, NULL);
    }
    cf_add(l, CF_OP_DUP, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 1, 1, CF_INPLACE, NULL);
    /* infinities, NaNs, -0, overflow to F16 infinity, F16 subnormals: carried through exactly */
    for (int j = 0; j < 3; j++) {
        cf_add(l, CF_OP_CPY, GGML_TYPE_F32, cf_float_types[j], 1023, 2, 1, 1, CF_CONTIG, "special")->ip[3] = 1;
    }
    cf_add(l, CF_OP_CPY, GGML_TYPE_F16, GGML_TYPE_F32, 33, 3, 1, 1, CF_CONTIG, "special")->ip[3] = 1;
    cf_add(l, CF_OP_CPY, GGML_TYPE_BF16, GGML_TYPE_F16, 33, 3, 1, 1, CF_CONTIG, "special")->ip[3] = 1;
    cf_add(l, CF_OP_CONT, GGML_TYPE_F16, GGML_TYPE_F16, 31, 4, 3, 2, CF_PERMUTED, "special")->ip[3] = 1;
    /* many rows: grids limited to 65535 in a dimension must still cover them */
    cf_add(l, CF_OP_CPY, GGML_TYPE_F32, GGML_TYPE_F16, 4, 70000, 1, 1, CF_CONTIG, NULL);
}

static void cf_cases_binary(struct cf_case_list * l) {
    const enum cf_op ops[] = { CF_OP_ADD, CF_OP_SUB, CF_OP_MUL, CF_OP_DIV };
    for (int o = 0; o < 4; o++) {
        const enum cf_op op = ops[o];
        for (int s = 0; s < CF_N_SIZES; s++) {
            cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 2, 1, CF_CONTIG, NULL);
        }
        cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 33, 5, 3, 2, CF_PERMUTED, NULL);
        cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 1023, 2, 3, 1, CF_PERMUTED, NULL);
        /* b repeated along rows and dim 3; then b a column repeated along each row */
        struct cf_op_case * c = cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 33, 4, 3, 2, CF_BCAST, "rows");
        c->nb[0] = 33, c->nb[1] = 1, c->nb[2] = 3, c->nb[3] = 1;
        c = cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 1023, 4, 3, 2, CF_BCAST, "cols");
        c->nb[0] = 1, c->nb[1] = 4, c->nb[2] = 1, c->nb[3] = 2;
        /* b shorter than a's rows, repeated along them */
        c = cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 66, 3, 2, 1, CF_BCAST, "tile");
        c->nb[0] = 33, c->nb[1] = 3, c->nb[2] = 1, c->nb[3] = 1;
        c = cf_add(l, op, GGML_TYPE_BF16, GGML_TYPE_BF16, 1023 * 3, 2, 1, 1, CF_BCAST, "tile");
        c->nb[0] = 1023, c->nb[1] = 1, c->nb[2] = 1, c->nb[3] = 1;
        cf_add(l, op, GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 2, 1, CF_INPLACE, NULL);
        for (int t = 1; t < 3; t++) {
            cf_add(l, op, cf_float_types[t], cf_float_types[t], 33, 3, 2, 1, CF_CONTIG, NULL);
            cf_add(l, op, cf_float_types[t], cf_float_types[t], 4097, 2, 1, 1, CF_CONTIG, NULL);
            c = cf_add(l, op, cf_float_types[t], cf_float_types[t], 31, 4, 3, 1, CF_BCAST, "rows");
            c->nb[0] = 31, c->nb[1] = 1, c->nb[2] = 3, c->nb[3] = 1;
        }
        /* F16 activations plus F32 values (the result takes a's type) */
        cf_add(l, op, GGML_TYPE_F16, GGML_TYPE_F32, 33, 3, 2, 1, CF_CONTIG, NULL);
    }
    cf_add(l, CF_OP_ADD, GGML_TYPE_F32, GGML_TYPE_F32, 4, 70000, 1, 1, CF_CONTIG, NULL);
    struct cf_op_case * c = cf_add(l, CF_OP_MUL, GGML_TYPE_F32, GGML_TYPE_F32, 4, 70000, 1, 1, CF_BCAST, "rows");
    c->nb[0] = 4, c->nb[1] = 1, c->nb[2] = 1, c->nb[3] = 1;
}

/*
 * The rest of the elementwise family: the other unary ops (through ggml_unary; XIELU through
 * ggml_xielu with fp[0..3]), LOG, SIN, COS, CLAMP (always in place), LEAKY_RELU, ADD1, SCALE with
 * a bias (fp[1]) and SWIGLU_OAI (fp[0] alpha, fp[1] limit).
 */
static void cf_cases_elementwise2(struct cf_case_list * l) {
    const int unary[] = { GGML_UNARY_OP_SGN, GGML_UNARY_OP_STEP, GGML_UNARY_OP_ELU, GGML_UNARY_OP_GELU_QUICK,
                          GGML_UNARY_OP_HARDSWISH, GGML_UNARY_OP_HARDSIGMOID, GGML_UNARY_OP_EXPM1,
                          GGML_UNARY_OP_SOFTPLUS, GGML_UNARY_OP_FLOOR, GGML_UNARY_OP_CEIL, GGML_UNARY_OP_ROUND,
                          GGML_UNARY_OP_TRUNC, GGML_UNARY_OP_XIELU };
    const int n_unary = (int) (sizeof unary / sizeof unary[0]);
    for (int u = 0; u < n_unary; u++) {
        const char * n = cf_unary_name(unary[u]);
        struct cf_op_case * c[7];
        c[0] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 1, 1, 1, 1, CF_CONTIG, n);
        c[1] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_CONTIG, n);
        c[2] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 4097, 2, 1, 1, CF_CONTIG, n);
        c[3] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F16, GGML_TYPE_F16, 1023, 2, 1, 1, CF_CONTIG, n);
        c[4] = cf_add(l, CF_OP_UNARY, GGML_TYPE_BF16, GGML_TYPE_BF16, 32, 3, 1, 1, CF_CONTIG, n);
        c[5] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 31, 4, 3, 2, CF_PERMUTED, n);
        /* upstream has no in-place xielu */
        c[6] = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 2, 1,
                      unary[u] == GGML_UNARY_OP_XIELU ? CF_CONTIG : CF_INPLACE, n);
        for (int k = 0; k < 7; k++) {
            c[k]->ip[0] = unary[u];
            if (unary[u] == GGML_UNARY_OP_XIELU) {
                c[k]->fp[0] = 0.8f, c[k]->fp[1] = 0.8f, c[k]->fp[2] = 0.5f, c[k]->fp[3] = -1e-6f;
            }
        }
    }
    /* the exact ones, on infinities, NaNs, -0 and subnormals */
    const int exact[] = { GGML_UNARY_OP_SGN, GGML_UNARY_OP_STEP, GGML_UNARY_OP_FLOOR, GGML_UNARY_OP_CEIL,
                          GGML_UNARY_OP_ROUND, GGML_UNARY_OP_TRUNC };
    for (int u = 0; u < 6; u++) {
        char n[32];
        snprintf(n, sizeof n, "%s-special", cf_unary_name(exact[u]));
        struct cf_op_case * c = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = exact[u], c->ip[3] = 1;
        c = cf_add(l, CF_OP_UNARY, GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = exact[u], c->ip[3] = 1;
    }

    const enum cf_op ops[] = { CF_OP_LOG, CF_OP_SIN, CF_OP_COS, CF_OP_CLAMP, CF_OP_LEAKY_RELU, CF_OP_ADD1 };
    for (int o = 0; o < 6; o++) {
        struct cf_op_case * c[8];
        int k = 0;
        for (int s = 0; s < CF_N_SIZES; s++) {
            c[k++] = cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 1, 1, CF_CONTIG, NULL);
        }
        c[k++] = cf_add(l, ops[o], GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 2, 1, CF_CONTIG, NULL);
        c[k++] = cf_add(l, ops[o], GGML_TYPE_BF16, GGML_TYPE_BF16, 1023, 2, 1, 1, CF_CONTIG, NULL);
        for (int i = 0; i < k; i++) {
            c[i]->fp[0] = ops[o] == CF_OP_CLAMP ? -1.25f : 0.05f, c[i]->fp[1] = 0.75f;
        }
        struct cf_op_case * p = cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 31, 4, 3, 2, CF_PERMUTED, NULL);
        p->fp[0] = ops[o] == CF_OP_CLAMP ? -0.5f : -0.3f, p->fp[1] = 1.5f;
        if (ops[o] != CF_OP_CLAMP) { /* clamp is always in place: its other cases cover it */
            p = cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_INPLACE, NULL);
            p->fp[0] = 0.2f;
        }
    }
    /* add1 with the scalar in another type than a */
    cf_add(l, CF_OP_ADD1, GGML_TYPE_F16, GGML_TYPE_F32, 33, 3, 2, 1, CF_CONTIG, NULL);
    cf_add(l, CF_OP_ADD1, GGML_TYPE_F32, GGML_TYPE_BF16, 1023, 2, 1, 1, CF_CONTIG, NULL);

    /* scale with a bias (ggml_scale_bias) */
    struct cf_op_case * c;
    c = cf_add(l, CF_OP_SCALE, GGML_TYPE_F32, GGML_TYPE_F32, 4097, 3, 1, 1, CF_CONTIG, "bias");
    c->fp[0] = -1.75f, c->fp[1] = 0.5f;
    c = cf_add(l, CF_OP_SCALE, GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 2, 1, CF_PERMUTED, "bias");
    c->fp[0] = 0.3f, c->fp[1] = -2.0f;
    c = cf_add(l, CF_OP_SCALE, GGML_TYPE_BF16, GGML_TYPE_BF16, 32, 3, 2, 1, CF_INPLACE, "bias");
    c->fp[0] = 2.5f, c->fp[1] = 1.0f;

    /* swiglu_oai: gpt-oss's alpha and limit (no clipping in the inputs' range), then limit 2 */
    const float oai[2][2] = { { 1.702f, 7.0f }, { 1.0f, 2.0f } };
    for (int k = 0; k < 2; k++) {
        char n[40];
        snprintf(n, sizeof n, "swiglu_oai-limit%g", (double) oai[k][1]);
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 66, 3, 2, 1, CF_CONTIG, n);
        c->ip[0] = GGML_GLU_OP_SWIGLU_OAI, c->fp[0] = oai[k][0], c->fp[1] = oai[k][1];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 4097, 2, 1, 1, CF_CONTIG, n);
        c->ip[0] = GGML_GLU_OP_SWIGLU_OAI, c->ip[2] = 1, c->fp[0] = oai[k][0], c->fp[1] = oai[k][1];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 2, 1, CF_CONTIG, n);
        c->ip[0] = GGML_GLU_OP_SWIGLU_OAI, c->ip[2] = 1, c->fp[0] = oai[k][0], c->fp[1] = oai[k][1];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_BF16, GGML_TYPE_BF16, 62, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = GGML_GLU_OP_SWIGLU_OAI, c->fp[0] = oai[k][0], c->fp[1] = oai[k][1];
    }
    /* the named helpers beyond geglu/swiglu are ggml_glu with their op: covered above */
}

static void cf_cases_elementwise(struct cf_case_list * l) {
    const enum cf_op ops[] = { CF_OP_SCALE, CF_OP_SQR, CF_OP_SQRT };
    for (int o = 0; o < 3; o++) {
        for (int s = 0; s < CF_N_SIZES; s++) {
            cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 1, 1, CF_CONTIG, NULL)->fp[0] = -1.75f;
        }
        cf_add(l, ops[o], GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 2, 1, CF_CONTIG, NULL)->fp[0] = 0.3f;
        cf_add(l, ops[o], GGML_TYPE_BF16, GGML_TYPE_BF16, 1023, 2, 1, 1, CF_CONTIG, NULL)->fp[0] = 2.5f;
        cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 31, 4, 3, 2, CF_PERMUTED, NULL)->fp[0] = 0.125f;
        cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_INPLACE, NULL)->fp[0] = 3.0f;
    }

    const int unary[] = { GGML_UNARY_OP_RELU, GGML_UNARY_OP_GELU, GGML_UNARY_OP_GELU_ERF, GGML_UNARY_OP_SILU,
                          GGML_UNARY_OP_TANH, GGML_UNARY_OP_SIGMOID, GGML_UNARY_OP_NEG, GGML_UNARY_OP_ABS,
                          GGML_UNARY_OP_EXP };
    for (int u = 0; u < 9; u++) {
        const char * n = cf_unary_name(unary[u]);
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 1, 1, 1, 1, CF_CONTIG, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_CONTIG, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 4097, 2, 1, 1, CF_CONTIG, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F16, GGML_TYPE_F16, 1023, 2, 1, 1, CF_CONTIG, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_BF16, GGML_TYPE_BF16, 32, 3, 1, 1, CF_CONTIG, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 31, 4, 3, 2, CF_PERMUTED, n)->ip[0] = unary[u];
        cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 2, 1, CF_INPLACE, n)->ip[0] = unary[u];
    }
    /* the exact ones, on infinities and NaNs */
    const int exact[] = { GGML_UNARY_OP_NEG, GGML_UNARY_OP_ABS };
    for (int u = 0; u < 2; u++) {
        char n[32];
        snprintf(n, sizeof n, "%s-special", cf_unary_name(exact[u]));
        struct cf_op_case * c = cf_add(l, CF_OP_UNARY, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = exact[u], c->ip[3] = 1;
        c = cf_add(l, CF_OP_UNARY, GGML_TYPE_F16, GGML_TYPE_F16, 33, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = exact[u], c->ip[3] = 1;
    }

    const int glu[] = { GGML_GLU_OP_REGLU, GGML_GLU_OP_GEGLU, GGML_GLU_OP_SWIGLU, GGML_GLU_OP_GEGLU_ERF,
                        GGML_GLU_OP_GEGLU_QUICK };
    for (int g = 0; g < 5; g++) {
        char n[40];
        struct cf_op_case * c;
        snprintf(n, sizeof n, "%s", cf_glu_name(glu[g]));
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 66, 3, 2, 1, CF_CONTIG, n);
        c->ip[0] = glu[g];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 2 * 4097, 2, 1, 1, CF_CONTIG, n);
        c->ip[0] = glu[g];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F16, GGML_TYPE_F16, 64, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = glu[g];
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_BF16, GGML_TYPE_BF16, 62, 3, 1, 1, CF_CONTIG, n);
        c->ip[0] = glu[g];
        snprintf(n, sizeof n, "%s_swapped", cf_glu_name(glu[g]));
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 2046, 2, 1, 1, CF_CONTIG, n);
        c->ip[0] = glu[g], c->ip[1] = 1;
        snprintf(n, sizeof n, "%s_split", cf_glu_name(glu[g]));
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_CONTIG, n);
        c->ip[0] = glu[g], c->ip[2] = 1;
        c = cf_add(l, CF_OP_GLU, GGML_TYPE_F16, GGML_TYPE_F16, 1023, 2, 1, 1, CF_CONTIG, n);
        c->ip[0] = glu[g], c->ip[2] = 1;
    }
    cf_cases_elementwise2(l);
}

static void cf_cases_reduce(struct cf_case_list * l) {
    const enum cf_op ops[] = { CF_OP_SUM, CF_OP_SUM_ROWS, CF_OP_MEAN };
    for (int o = 0; o < 3; o++) {
        for (int s = 0; s < CF_N_SIZES; s++) {
            cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 2, 1, CF_CONTIG, NULL);
        }
        cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 33, 5, 3, 2, CF_PERMUTED, NULL);
        if (ops[o] != CF_OP_MEAN) {
            cf_add(l, ops[o], GGML_TYPE_F16, GGML_TYPE_F16, 1023, 3, 1, 1, CF_CONTIG, NULL);
            cf_add(l, ops[o], GGML_TYPE_BF16, GGML_TYPE_BF16, 33, 3, 2, 1, CF_CONTIG, NULL);
        }
    }
    cf_add(l, CF_OP_SUM_ROWS, GGML_TYPE_F32, GGML_TYPE_F32, 4, 70000, 1, 1, CF_CONTIG, NULL);
    for (int s = 0; s < CF_N_SIZES; s++) {
        cf_add(l, CF_OP_ARGMAX, GGML_TYPE_F32, GGML_TYPE_I32, cf_sizes[s], 5, 1, 1, CF_CONTIG, NULL);
    }
    cf_add(l, CF_OP_ARGMAX, GGML_TYPE_F32, GGML_TYPE_I32, 33, 7, 1, 1, CF_PERMUTED, NULL);
}

static void cf_cases_shape(struct cf_case_list * l) {
    const int64_t rep[][2][4] = {
        { { 1, 1, 1, 1 }, { 31, 3, 2, 1 } },      /* a scalar everywhere */
        { { 33, 1, 2, 1 }, { 33, 3, 4, 2 } },     /* rows */
        { { 1023, 2, 1, 1 }, { 2046, 4, 2, 1 } }, /* whole tiles */
        { { 4, 3, 1, 1 }, { 4097 * 4, 3, 1, 1 } },
    };
    for (int r = 0; r < 4; r++) {
        const enum ggml_type t = r == 1 ? GGML_TYPE_F16 : r == 2 ? GGML_TYPE_I32 : GGML_TYPE_F32;
        struct cf_op_case * c = cf_add(l, CF_OP_REPEAT, t, t, rep[r][0][0], rep[r][0][1], rep[r][0][2],
                                       rep[r][0][3], CF_CONTIG, NULL);
        memcpy(c->nb, rep[r][1], sizeof c->nb);
    }
    struct cf_op_case * c = cf_add(l, CF_OP_REPEAT, GGML_TYPE_BF16, GGML_TYPE_BF16, 31, 1, 3, 1, CF_PERMUTED, NULL);
    c->nb[0] = 62, c->nb[1] = 2, c->nb[2] = 3, c->nb[3] = 2;

    for (int dim = 0; dim < 4; dim++) {
        const enum ggml_type t = dim == 1 ? GGML_TYPE_F16 : dim == 2 ? GGML_TYPE_I32 : GGML_TYPE_F32;
        char n[16];
        snprintf(n, sizeof n, "dim%d", dim);
        c = cf_add(l, CF_OP_CONCAT, t, t, 33, 3, 2, 2, CF_CONTIG, n);
        c->ip[0] = dim;
        memcpy(c->nb, c->ne, sizeof c->nb);
        c->nb[dim] = dim == 0 ? 31 : 1;
    }
    c = cf_add(l, CF_OP_CONCAT, GGML_TYPE_F32, GGML_TYPE_F32, 31, 3, 2, 2, CF_PERMUTED, "dim1");
    c->ip[0] = 1;
    c->nb[0] = 31, c->nb[1] = 4, c->nb[2] = 2, c->nb[3] = 2;
    c = cf_add(l, CF_OP_CONCAT, GGML_TYPE_BF16, GGML_TYPE_BF16, 1023, 2, 1, 1, CF_CONTIG, "dim0");
    c->nb[0] = 1025, c->nb[1] = 2, c->nb[2] = 1, c->nb[3] = 1;
}

static void cf_cases_norm(struct cf_case_list * l) {
    const enum cf_op ops[] = { CF_OP_NORM, CF_OP_RMS_NORM };
    for (int o = 0; o < 2; o++) {
        for (int s = 0; s < CF_N_SIZES; s++) {
            cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 2, 1, CF_CONTIG, NULL)->fp[0] = 1e-5f;
        }
        cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 33, 5, 3, 2, CF_PERMUTED, NULL)->fp[0] = 1e-6f;
        cf_add(l, ops[o], GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 2, 1, CF_INPLACE, NULL)->fp[0] = 1e-3f;
    }
    cf_add(l, CF_OP_RMS_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 4, 70000, 1, 1, CF_CONTIG, NULL)->fp[0] = 1e-5f;
}

static void cf_cases_mul_mat(struct cf_case_list * l) {
    for (int t = 0; t < 3; t++) {
        for (int s = 0; s < CF_N_SIZES; s++) {
            /* a is [K, N], b is [K, M]: K is the size under test */
            struct cf_op_case * c = cf_add(l, CF_OP_MUL_MAT, cf_float_types[t], GGML_TYPE_F32, cf_sizes[s], 5, 1, 1,
                                           CF_CONTIG, NULL);
            c->nb[0] = cf_sizes[s], c->nb[1] = 3, c->nb[2] = 1, c->nb[3] = 1;
        }
        /* enough rows and columns for a blocked product, with ragged edges */
        struct cf_op_case * c = cf_add(l, CF_OP_MUL_MAT, cf_float_types[t], GGML_TYPE_F32, 96, 65, 1, 1, CF_CONTIG,
                                       "gemm");
        c->nb[0] = 96, c->nb[1] = 33, c->nb[2] = 1, c->nb[3] = 1;
        /* a broadcast over dims 2 and 3 */
        c = cf_add(l, CF_OP_MUL_MAT, cf_float_types[t], GGML_TYPE_F32, 32, 7, 2, 3, CF_BCAST, NULL);
        c->nb[0] = 32, c->nb[1] = 5, c->nb[2] = 4, c->nb[3] = 6;
        /* b as a permuted view (its rows not contiguous) */
        c = cf_add(l, CF_OP_MUL_MAT, cf_float_types[t], GGML_TYPE_F32, 33, 4, 2, 1, CF_PERMUTED, NULL);
        c->nb[0] = 33, c->nb[1] = 3, c->nb[2] = 2, c->nb[3] = 1;
        /* a matrix-vector product (the CPU's GEMV kernel: 4 rows a call, ragged ends in k and n) */
        c = cf_add(l, CF_OP_MUL_MAT, cf_float_types[t], GGML_TYPE_F32, 1000, 37, 1, 1, CF_CONTIG, "gemv");
        c->nb[0] = 1000, c->nb[1] = 1, c->nb[2] = 1, c->nb[3] = 1;
    }
    /* a matrix-vector product with many rows of a */
    struct cf_op_case * c = cf_add(l, CF_OP_MUL_MAT, GGML_TYPE_F16, GGML_TYPE_F32, 16, 70000, 1, 1, CF_CONTIG, "rows");
    c->nb[0] = 16, c->nb[1] = 1, c->nb[2] = 1, c->nb[3] = 1;
}

static void cf_cases_rows(struct cf_case_list * l) {
    const enum ggml_type all[] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    const int64_t sizes[] = { 1, 33, 1023 };
    for (int t = 0; t < 4; t++) {
        for (int s = 0; s < 3; s++) {
            /* a is [ne0, 10 rows, 2, 1]; 7 indices per (i2, i3) */
            struct cf_op_case * c = cf_add(l, CF_OP_GET_ROWS, all[t], GGML_TYPE_I32, sizes[s], 10, 2, 1, CF_CONTIG, NULL);
            c->nb[0] = 7;
        }
    }
    struct cf_op_case * c = cf_add(l, CF_OP_GET_ROWS, GGML_TYPE_F16, GGML_TYPE_I32, 33, 10, 2, 1, CF_CONTIG, "special");
    c->nb[0] = 7, c->ip[3] = 1;
    c = cf_add(l, CF_OP_GET_ROWS, GGML_TYPE_F32, GGML_TYPE_I32, 4, 100, 1, 1, CF_CONTIG, "many");
    c->nb[0] = 70000; /* 70000 output rows */
    c = cf_add(l, CF_OP_GET_ROWS, GGML_TYPE_F16, GGML_TYPE_I32, 8, 70000, 1, 1, CF_CONTIG, "far");
    c->nb[0] = 33; /* indices reaching past row 65535 */

    for (int t = 0; t < 3; t++) {
        for (int idx = 0; idx < 2; idx++) {
            const enum ggml_type it = idx ? GGML_TYPE_I32 : GGML_TYPE_I64;
            /* destination [ne0, 20 rows, 2, 1] gets 6 rows per (i2, i3) */
            c = cf_add(l, CF_OP_SET_ROWS, cf_float_types[t], it, 33, 20, 2, 1, CF_CONTIG, NULL);
            c->nb[0] = 6, c->nb[1] = 2, c->nb[2] = 1;
            c = cf_add(l, CF_OP_SET_ROWS, cf_float_types[t], it, 1023, 9, 1, 1, CF_CONTIG, NULL);
            c->nb[0] = 4, c->nb[1] = 1, c->nb[2] = 1;
        }
    }
    /* one index row shared by every (i2, i3) */
    c = cf_add(l, CF_OP_SET_ROWS, GGML_TYPE_F32, GGML_TYPE_I64, 31, 12, 3, 2, CF_BCAST, NULL);
    c->nb[0] = 5, c->nb[1] = 1, c->nb[2] = 1;
    c = cf_add(l, CF_OP_SET_ROWS, GGML_TYPE_F16, GGML_TYPE_I64, 4, 70000, 1, 1, CF_CONTIG, "far");
    c->nb[0] = 40, c->nb[1] = 1, c->nb[2] = 1;
}

static void cf_cases_attention(struct cf_case_list * l) {
    const int64_t dm[][2] = { { 1, 1 }, { 33, 33 }, { 32, 7 }, { 1023, 3 } };
    for (int i = 0; i < 4; i++) {
        cf_add(l, CF_OP_DIAG_MASK_INF, GGML_TYPE_F32, GGML_TYPE_F32, dm[i][0], dm[i][1], 2, 1, CF_CONTIG, NULL)->ip[0] =
            i == 2 ? 20 : 0;
    }
    cf_add(l, CF_OP_DIAG_MASK_INF, GGML_TYPE_F32, GGML_TYPE_F32, 31, 31, 2, 1, CF_INPLACE, NULL)->ip[0] = 3;

    for (int s = 0; s < CF_N_SIZES; s++) {
        cf_add(l, CF_OP_SOFT_MAX, GGML_TYPE_F32, GGML_TYPE_F32, cf_sizes[s], 3, 2, 1, CF_CONTIG, NULL);
    }
    cf_add(l, CF_OP_SOFT_MAX, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 2, 1, CF_INPLACE, NULL);
    cf_add(l, CF_OP_SOFT_MAX, GGML_TYPE_F32, GGML_TYPE_F32, 31, 5, 3, 2, CF_PERMUTED, NULL);
    cf_add(l, CF_OP_SOFT_MAX, GGML_TYPE_F32, GGML_TYPE_F32, 4, 70000, 1, 1, CF_CONTIG, NULL);

    /* soft_max_ext: ip[0] mask (1 random, 2 causal with -INF), ip[1] extra mask rows; fp scale, max_bias */
    struct {
        int64_t ne[4], mask_ne2, mask_ne3;
        enum ggml_type mt;
        int kind, pad;
        float scale, max_bias;
        enum cf_layout layout;
        const char * note;
    } sm[] = {
        { { 33, 5, 1, 1 }, 1, 1, GGML_TYPE_F32, 0, 0, 0.125f, 0.0f, CF_CONTIG, "scale" },
        { { 33, 5, 2, 1 }, 1, 1, GGML_TYPE_F32, 1, 3, 0.5f, 0.0f, CF_BCAST, "mask" },
        { { 1023, 4, 1, 1 }, 1, 1, GGML_TYPE_F16, 1, 0, 1.0f, 0.0f, CF_CONTIG, "mask" },
        { { 32, 32, 3, 2 }, 1, 1, GGML_TYPE_F16, 2, 0, 0.25f, 0.0f, CF_BCAST, "causal" },
        { { 31, 4, 4, 1 }, 4, 1, GGML_TYPE_F32, 1, 1, 1.0f, 8.0f, CF_CONTIG, "alibi" },
        { { 33, 3, 6, 1 }, 1, 1, GGML_TYPE_F16, 1, 0, 0.7f, 8.0f, CF_BCAST, "alibi" }, /* 6 heads: both slopes */
        { { 4097, 2, 1, 1 }, 1, 1, GGML_TYPE_F16, 2, 0, 1.0f, 0.0f, CF_CONTIG, "causal" },
        { { 33, 4, 2, 1 }, 2, 1, GGML_TYPE_F32, 1, 0, 0.5f, 0.0f, CF_INPLACE, "mask" },
    };
    for (size_t i = 0; i < sizeof sm / sizeof sm[0]; i++) {
        struct cf_op_case * c = cf_add(l, CF_OP_SOFT_MAX_EXT, GGML_TYPE_F32, sm[i].mt, sm[i].ne[0], sm[i].ne[1],
                                       sm[i].ne[2], sm[i].ne[3], sm[i].layout, sm[i].note);
        c->ip[0] = sm[i].kind, c->ip[1] = sm[i].pad;
        c->nb[0] = sm[i].ne[0], c->nb[1] = sm[i].ne[1] + sm[i].pad, c->nb[2] = sm[i].mask_ne2, c->nb[3] = sm[i].mask_ne3;
        c->fp[0] = sm[i].scale, c->fp[1] = sm[i].max_bias;
    }

    /* rope: ip[0] mode, ip[1] n_dims, ip[2] 1 = rope_ext (fp: base, freq_scale, attn_factor, ext_factor),
     * ip[3] 1 = with frequency factors */
    const int modes[] = { GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX };
    for (int m = 0; m < 2; m++) {
        const char * mn = m ? "neox" : "normal";
        for (int t = 0; t < 2; t++) {
            const enum ggml_type ty = t ? GGML_TYPE_F16 : GGML_TYPE_F32;
            struct cf_op_case * c = cf_add(l, CF_OP_ROPE, ty, GGML_TYPE_I32, 64, 4, 5, 1, CF_CONTIG, mn);
            c->ip[0] = modes[m], c->ip[1] = 64;
            c = cf_add(l, CF_OP_ROPE, ty, GGML_TYPE_I32, 32, 3, 7, 1, CF_CONTIG, mn);
            c->ip[0] = modes[m], c->ip[1] = 16; /* partial: the rest passes through */
        }
        struct cf_op_case * c = cf_add(l, CF_OP_ROPE, GGML_TYPE_F32, GGML_TYPE_I32, 128, 2, 3, 1, CF_INPLACE, mn);
        c->ip[0] = modes[m], c->ip[1] = 128;
        c = cf_add(l, CF_OP_ROPE, GGML_TYPE_F32, GGML_TYPE_I32, 64, 2, 4, 1, CF_CONTIG, m ? "neox-ext" : "normal-ext");
        c->ip[0] = modes[m], c->ip[1] = 48, c->ip[2] = 1, c->ip[3] = 1;
        c->fp[0] = 5000.0f, c->fp[1] = 0.5f, c->fp[2] = 0.8f, c->fp[3] = 0.0f;
        c = cf_add(l, CF_OP_ROPE, GGML_TYPE_F32, GGML_TYPE_I32, 64, 2, 4, 1, CF_CONTIG, m ? "neox-yarn" : "normal-yarn");
        c->ip[0] = modes[m], c->ip[1] = 64, c->ip[2] = 1;
        c->fp[0] = 10000.0f, c->fp[1] = 0.25f, c->fp[2] = 1.0f, c->fp[3] = 1.0f;
    }
    struct cf_op_case * c = cf_add(l, CF_OP_ROPE, GGML_TYPE_F32, GGML_TYPE_I32, 8, 1, 70000, 1, CF_CONTIG, "neox");
    c->ip[0] = GGML_ROPE_TYPE_NEOX, c->ip[1] = 8;
}

/*
 * l2/group norm, out_prod, diag_mask_zero, pad (ip: left pads, nb: right pads), arange (fp: start,
 * stop, step), timestep_embedding (ne0 timesteps; ip: dim, max_period), count_equal, cumsum,
 * argsort (ip[0]: order) and top_k (ip[0]: k).
 */
static void cf_cases_misc(struct cf_case_list * l) {
    struct cf_op_case * c;
    for (int s = 0; s < CF_N_SIZES; s++) {
        const int64_t n = cf_sizes[s];
        cf_add(l, CF_OP_L2_NORM, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 2, 1, CF_CONTIG, NULL)->fp[0] = 1e-6f;
        cf_add(l, CF_OP_CUMSUM, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 2, 1, CF_CONTIG, NULL);
        cf_add(l, CF_OP_COUNT_EQUAL, GGML_TYPE_I32, GGML_TYPE_I32, n, 3, 2, 1, CF_CONTIG, NULL);
        cf_add(l, CF_OP_ARGSORT, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 1, 1, CF_CONTIG, "asc")->ip[0] = GGML_SORT_ORDER_ASC;
        cf_add(l, CF_OP_ARGSORT, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 1, 1, CF_CONTIG, "desc")->ip[0] = GGML_SORT_ORDER_DESC;
        cf_add(l, CF_OP_TOP_K, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 1, 1, CF_CONTIG, "k1")->ip[0] = 1;
        if (n >= 33) {
            cf_add(l, CF_OP_TOP_K, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 1, 1, CF_CONTIG, "k33")->ip[0] = 33;
        }
        c = cf_add(l, CF_OP_DIAG_MASK_ZERO, GGML_TYPE_F32, GGML_TYPE_F32, n, n < 7 ? n : 7, 2, 1, CF_CONTIG, NULL);
        c->ip[0] = s % 3;
        for (int t = 0; t < 3; t++) {
            /* a is [N, K]: N is the size under test; b is [3, K] */
            c = cf_add(l, CF_OP_OUT_PROD, cf_float_types[t], GGML_TYPE_F32, n, 5, 1, 1, CF_CONTIG, NULL);
            c->nb[0] = 3, c->nb[1] = 5, c->nb[2] = 1, c->nb[3] = 1;
        }
        c = cf_add(l, CF_OP_PAD, GGML_TYPE_F32, GGML_TYPE_F32, n, 3, 2, 1, CF_CONTIG, NULL);
        c->ip[0] = 1, c->ip[1] = 0, c->ip[2] = 1, c->ip[3] = 0;
        c->nb[0] = 2, c->nb[1] = 1, c->nb[2] = 0, c->nb[3] = 1;
    }
    cf_add(l, CF_OP_L2_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 33, 5, 3, 2, CF_PERMUTED, NULL)->fp[0] = 1e-6f;
    cf_add(l, CF_OP_L2_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 2, 1, CF_INPLACE, NULL)->fp[0] = 1e-3f;

    c = cf_add(l, CF_OP_GROUP_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 7, 5, 8, 2, CF_CONTIG, NULL);
    c->ip[0] = 4, c->fp[0] = 1e-6f;
    c = cf_add(l, CF_OP_GROUP_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 33, 3, 10, 1, CF_CONTIG, "uneven");
    c->ip[0] = 4, c->fp[0] = 1e-6f;
    c = cf_add(l, CF_OP_GROUP_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 1023, 2, 4, 1, CF_CONTIG, NULL);
    c->ip[0] = 2, c->fp[0] = 1e-5f;
    c = cf_add(l, CF_OP_GROUP_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 6, 5, 6, 2, CF_PERMUTED, NULL);
    c->ip[0] = 3, c->fp[0] = 1e-6f;
    c = cf_add(l, CF_OP_GROUP_NORM, GGML_TYPE_F32, GGML_TYPE_F32, 32, 3, 4, 1, CF_INPLACE, NULL);
    c->ip[0] = 2, c->fp[0] = 1e-3f;

    for (int t = 0; t < 3; t++) {
        /* a broadcast over dims 2 and 3, and b as a permuted view */
        c = cf_add(l, CF_OP_OUT_PROD, cf_float_types[t], GGML_TYPE_F32, 9, 7, 2, 1, CF_BCAST, NULL);
        c->nb[0] = 5, c->nb[1] = 7, c->nb[2] = 4, c->nb[3] = 3;
        c = cf_add(l, CF_OP_OUT_PROD, cf_float_types[t], GGML_TYPE_F32, 33, 6, 2, 1, CF_PERMUTED, NULL);
        c->nb[0] = 31, c->nb[1] = 6, c->nb[2] = 2, c->nb[3] = 1;
    }

    cf_add(l, CF_OP_DIAG_MASK_ZERO, GGML_TYPE_F32, GGML_TYPE_F32, 33, 31, 2, 1, CF_PERMUTED, NULL)->ip[0] = 1;
    cf_add(l, CF_OP_DIAG_MASK_ZERO, GGML_TYPE_F32, GGML_TYPE_F32, 32, 32, 2, 1, CF_INPLACE, NULL)->ip[0] = 0;

    const enum ggml_type pad_types[] = { GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_I32 };
    for (int t = 0; t < 3; t++) {
        c = cf_add(l, CF_OP_PAD, pad_types[t], pad_types[t], 31, 4, 2, 1, CF_CONTIG, NULL);
        c->ip[0] = 2, c->ip[1] = 1, c->ip[2] = 0, c->ip[3] = 1;
        c->nb[0] = 1, c->nb[1] = 0, c->nb[2] = 2, c->nb[3] = 0;
    }
    c = cf_add(l, CF_OP_PAD, GGML_TYPE_F32, GGML_TYPE_F32, 33, 31, 2, 3, CF_PERMUTED, NULL);
    c->ip[0] = 1, c->ip[1] = 2, c->ip[2] = 0, c->ip[3] = 1;
    c->nb[0] = 2, c->nb[1] = 0, c->nb[2] = 1, c->nb[3] = 1;

    const float ranges[][3] = { { 0.0f, 10.0f, 1.0f }, { -3.0f, 4.5f, 0.5f }, { 2.0f, 3.0f, 0.3f }, { 0.0f, 4097.0f, 1.0f } };
    for (int i = 0; i < 4; i++) {
        c = cf_add(l, CF_OP_ARANGE, GGML_TYPE_F32, GGML_TYPE_F32, 1, 1, 1, 1, CF_CONTIG, NULL);
        c->fp[0] = ranges[i][0], c->fp[1] = ranges[i][1], c->fp[2] = ranges[i][2];
        snprintf(c->name, sizeof c->name, "arange f32 (%g, %g, %g)", (double) ranges[i][0], (double) ranges[i][1],
                 (double) ranges[i][2]);
    }

    /* ne0 timesteps, embedding dim */
    const int dims[][2] = { { 1, 32 }, { 31, 33 }, { 33, 320 }, { 4097, 8 } };
    for (int i = 0; i < 4; i++) {
        c = cf_add(l, CF_OP_TIMESTEP_EMB, GGML_TYPE_F32, GGML_TYPE_F32, dims[i][0], 1, 1, 1, CF_CONTIG, NULL);
        c->ip[0] = dims[i][1], c->ip[1] = 10000;
    }

    cf_add(l, CF_OP_CUMSUM, GGML_TYPE_F32, GGML_TYPE_F32, 33, 31, 2, 3, CF_PERMUTED, NULL);
    cf_add(l, CF_OP_COUNT_EQUAL, GGML_TYPE_I32, GGML_TYPE_I32, 33, 31, 2, 3, CF_PERMUTED, NULL);
    cf_add(l, CF_OP_ARGSORT, GGML_TYPE_F32, GGML_TYPE_F32, 33, 31, 2, 3, CF_PERMUTED, "asc")->ip[0] = GGML_SORT_ORDER_ASC;
    cf_add(l, CF_OP_TOP_K, GGML_TYPE_F32, GGML_TYPE_F32, 33, 31, 2, 3, CF_PERMUTED, "k5")->ip[0] = 5;

    /* pad_reflect_1d: ip[0], ip[1] the left and right reflections */
    c = cf_add(l, CF_OP_PAD_REFLECT_1D, GGML_TYPE_F32, GGML_TYPE_F32, 7, 3, 2, 1, CF_CONTIG, NULL);
    c->ip[0] = 6, c->ip[1] = 2;
    c = cf_add(l, CF_OP_PAD_REFLECT_1D, GGML_TYPE_F32, GGML_TYPE_F32, 1023, 2, 1, 1, CF_CONTIG, NULL);
    c->ip[0] = 31, c->ip[1] = 1022;
}

/*
 * Convolution and images. im2col and the direct convolutions: ne the data [W, H, C, N], nb the
 * kernel, ip the stride (both dims), the two paddings and the dilation (both dims); t1 im2col's
 * column type. pool_2d: ip the pool op, k0, k1, the stride (both dims), fp the paddings.
 * interpolate: nb the result's shape, ip[0] the mode and flags.
 */
static void cf_cases_conv(struct cf_case_list * l) {
    struct cf_op_case * c;
    const enum ggml_type col_types[2] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        c = cf_add(l, CF_OP_IM2COL, GGML_TYPE_F16, col_types[t], 33, 31, 3, 2, CF_CONTIG, NULL);
        c->nb[0] = 3, c->nb[1] = 3, c->nb[2] = 3, c->nb[3] = 4;
        c->ip[0] = 2, c->ip[1] = 1, c->ip[2] = 0, c->ip[3] = 2;
        c = cf_add(l, CF_OP_IM2COL, GGML_TYPE_F16, col_types[t], 13, 9, 4, 3, CF_PERMUTED, NULL);
        c->nb[0] = 5, c->nb[1] = 2, c->nb[2] = 4, c->nb[3] = 1;
        c->ip[0] = 1, c->ip[1] = 2, c->ip[2] = 1, c->ip[3] = 1;
    }
    const enum ggml_type kernel_types[2] = { GGML_TYPE_F32, GGML_TYPE_F16 };
    for (int t = 0; t < 2; t++) {
        c = cf_add(l, CF_OP_CONV_2D_DIRECT, kernel_types[t], GGML_TYPE_F32, 33, 31, 5, 2, CF_CONTIG, NULL);
        c->nb[0] = 3, c->nb[1] = 3, c->nb[2] = 5, c->nb[3] = 7;
        c->ip[0] = 1, c->ip[1] = 1, c->ip[2] = 1, c->ip[3] = 1;
        c = cf_add(l, CF_OP_CONV_2D_DIRECT, kernel_types[t], GGML_TYPE_F32, 17, 12, 3, 1, CF_PERMUTED, NULL);
        c->nb[0] = 4, c->nb[1] = 3, c->nb[2] = 3, c->nb[3] = 5;
        c->ip[0] = 2, c->ip[1] = 2, c->ip[2] = 0, c->ip[3] = 2;
        c = cf_add(l, CF_OP_CONV_2D_DW_DIRECT, kernel_types[t], GGML_TYPE_F32, 32, 33, 6, 2, CF_CONTIG, NULL);
        c->nb[0] = 3, c->nb[1] = 3, c->nb[2] = 1, c->nb[3] = 6;
        c->ip[0] = 1, c->ip[1] = 1, c->ip[2] = 1, c->ip[3] = 1;
        c = cf_add(l, CF_OP_CONV_2D_DW_DIRECT, kernel_types[t], GGML_TYPE_F32, 19, 14, 5, 1, CF_PERMUTED, NULL);
        c->nb[0] = 5, c->nb[1] = 3, c->nb[2] = 1, c->nb[3] = 5;
        c->ip[0] = 2, c->ip[1] = 2, c->ip[2] = 1, c->ip[3] = 2;
    }
    for (int t = 0; t < 2; t++) {
        for (int op = 0; op < 2; op++) {
            c = cf_add(l, CF_OP_POOL_2D, kernel_types[t], GGML_TYPE_F32, 33, 31, 3, 2, t ? CF_PERMUTED : CF_CONTIG,
                       op == GGML_OP_POOL_MAX ? "max" : "avg");
            c->ip[0] = op, c->ip[1] = 3, c->ip[2] = 2, c->ip[3] = 2;
            c->fp[0] = 1.0f, c->fp[1] = 1.0f;
        }
    }
    const uint32_t modes[] = {
        GGML_SCALE_MODE_NEAREST, GGML_SCALE_MODE_BILINEAR, GGML_SCALE_MODE_BICUBIC,
        GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ALIGN_CORNERS, GGML_SCALE_MODE_BICUBIC | GGML_SCALE_FLAG_ALIGN_CORNERS,
        GGML_SCALE_MODE_BILINEAR | GGML_SCALE_FLAG_ANTIALIAS,
    };
    static const char * const mode_names[] = { "nearest", "bilinear", "bicubic", "bilinear-ac", "bicubic-ac",
                                               "bilinear-aa" };
    for (int m = 0; m < 6; m++) {
        /* up by 2 (x) and 1.5 (y), and down by 4 (x) and 2 (y) */
        c = cf_add(l, CF_OP_UPSCALE, GGML_TYPE_F32, GGML_TYPE_F32, 16, 12, 3, 2, m % 2 ? CF_PERMUTED : CF_CONTIG,
                   mode_names[m]);
        c->nb[0] = 32, c->nb[1] = 18, c->nb[2] = 3, c->nb[3] = 2;
        c->ip[0] = (int) modes[m];
        c = cf_add(l, CF_OP_UPSCALE, GGML_TYPE_F32, GGML_TYPE_F32, 32, 12, 2, 1, CF_CONTIG, mode_names[m]);
        c->nb[0] = 8, c->nb[1] = 6, c->nb[2] = 2, c->nb[3] = 1;
        c->ip[0] = (int) modes[m];
    }
    /* pool_1d: ip the pool op, kernel, stride, padding */
    for (int t = 0; t < 2; t++) {
        for (int op = 0; op < 2; op++) {
            c = cf_add(l, CF_OP_POOL_1D, kernel_types[t], GGML_TYPE_F32, 33, 5, 2, 2, t ? CF_PERMUTED : CF_CONTIG,
                       op == GGML_OP_POOL_MAX ? "max" : "avg");
            c->ip[0] = op, c->ip[1] = 4, c->ip[2] = 3, c->ip[3] = 2;
        }
    }
    /* conv_transpose_2d_p0: ne the data [W, H, IC, N], nb the kernel [KW, KH, OC, IC], ip[0] the stride */
    for (int t = 0; t < 2; t++) {
        c = cf_add(l, CF_OP_CONV_TRANSPOSE_2D, kernel_types[t], GGML_TYPE_F32, 13, 9, 6, 2, CF_CONTIG, NULL);
        c->nb[0] = 3, c->nb[1] = 4, c->nb[2] = 5, c->nb[3] = 6;
        c->ip[0] = 2 + t;
    }
    /* col2im_1d: ne the columns [K*oc, T_in], ip the stride, oc, the padding */
    for (int t = 0; t < 3; t++) {
        c = cf_add(l, CF_OP_COL2IM_1D, cf_float_types[t], cf_float_types[t], 4 * 3, 33, 1, 1, CF_CONTIG, NULL);
        c->ip[0] = 2 + t % 2, c->ip[1] = 3, c->ip[2] = t;
    }
    /* win_part: ne [C, W, H], ip[0] the window; get_rel_pos: ip[0] qh = kh; add_rel_pos: ne pw's shape */
    cf_add(l, CF_OP_WIN_PART, GGML_TYPE_F32, GGML_TYPE_F32, 7, 13, 11, 1, CF_CONTIG, NULL)->ip[0] = 5;
    cf_add(l, CF_OP_WIN_PART, GGML_TYPE_F32, GGML_TYPE_F32, 33, 8, 8, 1, CF_CONTIG, NULL)->ip[0] = 4;
    cf_add(l, CF_OP_GET_REL_POS, GGML_TYPE_F16, GGML_TYPE_F16, 33, 13, 1, 1, CF_CONTIG, NULL)->ip[0] = 7;
    cf_add(l, CF_OP_ADD_REL_POS, GGML_TYPE_F32, GGML_TYPE_F32, 5, 4, 3, 2, CF_CONTIG, NULL);
    cf_add(l, CF_OP_ADD_REL_POS, GGML_TYPE_F32, GGML_TYPE_F32, 7, 7, 2, 3, CF_INPLACE, NULL);
}

/*
 * Quantized operands: products with the weight types models use (odd row counts, a vector, a
 * batch over several tiles, broadcasts over dims 2 and 3, permuted activations), row lookups and
 * copies out of them, copies and row writes into the KV-cache types. A type a device cannot
 * handle (no kernel yet) is a skip.
 */
static void cf_cases_quant(struct cf_case_list * l) {
    const enum ggml_type weights[] = { GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K,
                                       GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4 };
    for (int t = 0; t < 6; t++) {
        const enum ggml_type wt = weights[t];
        const int64_t K = ggml_blck_size(wt) == 256 ? 512 : 224; /* 2 or 7 blocks */
        /* a matrix-vector product, odd row count */
        struct cf_op_case * c = cf_add(l, CF_OP_MUL_MAT, wt, GGML_TYPE_F32, K, 37, 1, 1, CF_CONTIG, "gemv");
        c->nb[0] = K, c->nb[1] = 1, c->nb[2] = 1, c->nb[3] = 1;
        /* a batch of 70 rows: more than one tile of activation rows */
        c = cf_add(l, CF_OP_MUL_MAT, wt, GGML_TYPE_F32, K, 33, 1, 1, CF_CONTIG, "gemm");
        c->nb[0] = K, c->nb[1] = 70, c->nb[2] = 1, c->nb[3] = 1;
        /* a broadcast over dims 2 and 3 */
        c = cf_add(l, CF_OP_MUL_MAT, wt, GGML_TYPE_F32, ggml_blck_size(wt) == 256 ? 256 : 64, 7, 2, 3, CF_BCAST, NULL);
        c->nb[0] = c->ne[0], c->nb[1] = 5, c->nb[2] = 4, c->nb[3] = 6;
        /* the activations as a permuted view (gathered before they are quantized) */
        c = cf_add(l, CF_OP_MUL_MAT, wt, GGML_TYPE_F32, ggml_blck_size(wt) == 256 ? 256 : 96, 5, 2, 1, CF_PERMUTED, NULL);
        c->nb[0] = c->ne[0], c->nb[1] = 3, c->nb[2] = 2, c->nb[3] = 1;
        /* rows out of them; a is [K, 10 rows, 2, 1], 7 indices per plane */
        c = cf_add(l, CF_OP_GET_ROWS, wt, GGML_TYPE_I32, ggml_blck_size(wt) == 256 ? 256 : 96, 10, 2, 1, CF_CONTIG, NULL);
        c->nb[0] = 7;
    }
    const enum ggml_type kv[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                  GGML_TYPE_IQ4_NL };
    for (int t = 0; t < 6; t++) {
        /* destination [96, 20 rows, 2, 1] gets 6 rows per plane */
        struct cf_op_case * c = cf_add(l, CF_OP_SET_ROWS, kv[t], GGML_TYPE_I64, 96, 20, 2, 1, CF_CONTIG, NULL);
        c->nb[0] = 6, c->nb[1] = 2, c->nb[2] = 1;
    }
    struct cf_op_case * c = cf_add(l, CF_OP_SET_ROWS, GGML_TYPE_Q8_0, GGML_TYPE_I32, 64, 12, 3, 2, CF_BCAST, NULL);
    c->nb[0] = 5, c->nb[1] = 1, c->nb[2] = 1;
    const enum ggml_type into[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_0 };
    for (int t = 0; t < 2; t++) {
        cf_add(l, CF_OP_CPY, GGML_TYPE_F32, into[t], 96, 5, 3, 1, CF_CONTIG, NULL);
        cf_add(l, CF_OP_CPY, GGML_TYPE_F16, into[t], 64, 3, 2, 1, CF_PERMUTED, NULL);
        cf_add(l, CF_OP_CPY, into[t], GGML_TYPE_F32, 96, 5, 3, 1, CF_CONTIG, NULL);
        cf_add(l, CF_OP_CPY, into[t], GGML_TYPE_F32, 64, 3, 2, 1, CF_CONTIG, "to-permuted")->ip[0] = 1;
        cf_add(l, CF_OP_CONT, into[t], into[t], 64, 3, 2, 1, CF_CONTIG, NULL);
    }
}

/* every op case, in a fixed order; false when memory ran out */
static bool cf_make_op_cases(struct cf_case_list * l) {
    memset(l, 0, sizeof *l);
    cf_cases_copy(l);
    cf_cases_binary(l);
    cf_cases_elementwise(l);
    cf_cases_reduce(l);
    cf_cases_shape(l);
    cf_cases_norm(l);
    cf_cases_mul_mat(l);
    cf_cases_rows(l);
    cf_cases_quant(l);
    cf_cases_attention(l);
    cf_cases_misc(l);
    cf_cases_conv(l);
    return !l->oom;
}

/*
 * Cases the CUDA backend must run (issue 5's ops, then issue 8's kernels for the ops of issue 7):
 * with GGMLX_TEST_REQUIRE_CUDA=1 a skip of one of these on a CUDA device is a failure, while the
 * ops CUDA does not claim may be skipped there (supports_op says no and the scheduler runs them
 * elsewhere). Sorts are expected up to the shared-memory sort's row limit (8192 with the
 * default 48 KiB per block).
 */
static bool cf_cuda_expected(const struct cf_op_case * c) {
    if (ggml_is_quantized(c->t0) || ggml_is_quantized(c->t1)) {
        return false; /* the CUDA backend has no quantized kernels */
    }
    switch (c->op) {
    case CF_OP_DUP: case CF_OP_CPY: case CF_OP_CONT: case CF_OP_ADD: case CF_OP_SUB: case CF_OP_MUL:
    case CF_OP_DIV: case CF_OP_SCALE: case CF_OP_SQR: case CF_OP_SQRT: case CF_OP_SUM: case CF_OP_SUM_ROWS:
    case CF_OP_MEAN: case CF_OP_ARGMAX: case CF_OP_REPEAT: case CF_OP_CONCAT: case CF_OP_NORM:
    case CF_OP_RMS_NORM: case CF_OP_MUL_MAT: case CF_OP_GET_ROWS: case CF_OP_SET_ROWS:
    case CF_OP_DIAG_MASK_INF: case CF_OP_SOFT_MAX: case CF_OP_SOFT_MAX_EXT: case CF_OP_ROPE:
    case CF_OP_UNARY: case CF_OP_GLU: case CF_OP_LOG: case CF_OP_SIN: case CF_OP_COS: case CF_OP_CLAMP:
    case CF_OP_LEAKY_RELU: case CF_OP_ADD1: case CF_OP_L2_NORM: case CF_OP_GROUP_NORM: case CF_OP_DIAG_MASK_ZERO:
    case CF_OP_PAD: case CF_OP_ARANGE: case CF_OP_TIMESTEP_EMB: case CF_OP_COUNT_EQUAL: case CF_OP_CUMSUM:
    case CF_OP_PAD_REFLECT_1D: case CF_OP_OUT_PROD:
        return true;
    case CF_OP_ARGSORT:
    case CF_OP_TOP_K:
        return c->ne[0] <= 8192;
    default:
        return false;
    }
}

#endif /* GGMLX_CF_CASES_H */
