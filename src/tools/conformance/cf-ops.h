/*
 * cf-ops.h -- the op cases of the conformance runner: what a case is, the coverage matrix that
 * lists them (types x layouts x sizes, chosen per op family rather than as a full cross
 * product, so the whole run stays within seconds under sanitizers), and how a case builds its
 * graph. The references are in cf-ref.h, the running in cf-exec.h.
 */
#ifndef GGMLX_CF_OPS_H
#define GGMLX_CF_OPS_H

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
    struct cf_op_case * c = cf_add(l, CF_OP_GET_ROWS, GGML_TYPE_F32, GGML_TYPE_I32, 4, 100, 1, 1, CF_CONTIG, "many");
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
    cf_cases_attention(l);
    return !l->oom;
}

/* ---- building a case's graph ----------------------------------------------------------------- */

#define CF_MAX_ROOTS  12
#define CF_MAX_INPUTS 6

enum cf_fill {
    CF_FILL_POISON,  /* written by the graph: starts as all-ones bytes (NaN in every float type) */
    CF_FILL_UNIFORM, /* uniform in [lo, hi), rounded to the type */
    CF_FILL_SIGNED,  /* uniform magnitude in [lo, hi), random sign */
    CF_FILL_INT,     /* integers in [lo, hi] */
    CF_FILL_UNIQUE,  /* integers in [lo, hi], distinct within each row (set_rows indices) */
    CF_FILL_CAUSAL,  /* a mask: 0 where column <= row + (ne0 - ne1), else -INF */
};

/* a tensor that owns memory: an input, the result, or an intermediate node */
struct cf_root {
    struct ggml_tensor * t;
    enum cf_fill         fill;
    double               lo, hi;
    struct ggml_tensor * arena;  /* t plus guard bytes on both sides, in the device buffer */
    size_t               offset; /* of t's first byte in the arena */
    size_t               nbytes;
    unsigned char *      before; /* host copy of the whole arena as set */
    unsigned char *      after;  /* and as read back after the computation */
    bool                 written;
};

struct cf_build {
    struct ggml_context * ctx; /* every tensor of the case and its graph (no_alloc) */
    struct cf_root        roots[CF_MAX_ROOTS];
    int                   n_roots;
    struct ggml_tensor *  in[CF_MAX_INPUTS]; /* the inputs as the op sees them */
    int                   n_in;
    struct ggml_tensor *  out;
    bool                  overflow;
};

static struct cf_root * cf_add_root(struct cf_build * b, struct ggml_tensor * t, enum cf_fill fill, double lo, double hi) {
    if (b->n_roots == CF_MAX_ROOTS) {
        b->overflow = true;
        return NULL;
    }
    struct cf_root * r = &b->roots[b->n_roots++];
    memset(r, 0, sizeof *r);
    r->t    = t;
    r->fill = fill;
    r->lo   = lo;
    r->hi   = hi;
    return r;
}

/*
 * A new input of logical shape ne. permuted: stored as a [ne1, ne3, ne0, ne2] tensor seen
 * through ggml_permute, so every logical dim is strided.
 */
static struct ggml_tensor * cf_input(struct cf_build * b, enum ggml_type type, const int64_t * ne, bool permuted,
                                     enum cf_fill fill, double lo, double hi) {
    struct ggml_tensor * t;
    if (permuted) {
        struct ggml_tensor * base = ggml_new_tensor_4d(b->ctx, type, ne[1], ne[3], ne[0], ne[2]);
        if (base == NULL || cf_add_root(b, base, fill, lo, hi) == NULL) {
            return NULL;
        }
        ggml_format_name(base, "in%d.base", b->n_in);
        t = ggml_permute(b->ctx, base, 1, 3, 0, 2);
    } else {
        t = ggml_new_tensor_4d(b->ctx, type, ne[0], ne[1], ne[2], ne[3]);
        if (t == NULL || cf_add_root(b, t, fill, lo, hi) == NULL) {
            return NULL;
        }
    }
    if (t == NULL || b->n_in == CF_MAX_INPUTS) {
        b->overflow = b->overflow || t != NULL;
        return NULL;
    }
    ggml_format_name(t, "in%d", b->n_in);
    b->in[b->n_in++] = t;
    return t;
}

static void cf_ne(int64_t * ne, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    ne[0] = n0, ne[1] = n1, ne[2] = n2, ne[3] = n3;
}

/* the value range each op's inputs are drawn from: inside the domain, away from overflow */
static enum cf_fill cf_default_fill(const struct cf_op_case * c, enum ggml_type t, double * lo, double * hi) {
    if (t == GGML_TYPE_I32 || t == GGML_TYPE_I64) {
        *lo = -100, *hi = 100;
        return CF_FILL_INT;
    }
    *lo = -2.0, *hi = 2.0;
    if (c->op == CF_OP_SQRT) {
        *lo = 0.0;
        *hi = 4.0;
    } else if (c->op == CF_OP_UNARY && c->ip[0] == GGML_UNARY_OP_EXP) {
        *lo = -4.0, *hi = 4.0;
    } else if (c->op == CF_OP_UNARY || c->op == CF_OP_GLU) {
        *lo = -4.0, *hi = 4.0; /* past the bends of every activation */
    } else if (c->op == CF_OP_CPY || c->op == CF_OP_DUP || c->op == CF_OP_CONT) {
        *lo = -100.0, *hi = 100.0; /* so that conversion to I32 sees values of both signs */
    } else if (c->op == CF_OP_SOFT_MAX || c->op == CF_OP_SOFT_MAX_EXT || c->op == CF_OP_DIAG_MASK_INF) {
        *lo = -5.0, *hi = 5.0;
    }
    return CF_FILL_UNIFORM;
}

static struct ggml_tensor * cf_default_input(struct cf_build * b, const struct cf_op_case * c, enum ggml_type t,
                                             const int64_t * ne, bool permuted) {
    double lo, hi;
    const enum cf_fill f = cf_default_fill(c, t, &lo, &hi);
    return cf_input(b, t, ne, permuted, f, lo, hi);
}

static struct ggml_tensor * cf_build_rope(struct cf_build * b, const struct cf_op_case * c) {
    const bool inplace = c->layout == CF_INPLACE;
    struct ggml_tensor * a   = cf_default_input(b, c, c->t0, c->ne, false);
    int64_t              pne[4];
    cf_ne(pne, c->ne[2], 1, 1, 1);
    struct ggml_tensor * pos = cf_input(b, GGML_TYPE_I32, pne, false, CF_FILL_INT, 0, 100);
    struct ggml_tensor * ff  = NULL;
    if (c->ip[3]) {
        int64_t fne[4];
        cf_ne(fne, c->ip[1] / 2, 1, 1, 1);
        ff = cf_input(b, GGML_TYPE_F32, fne, false, CF_FILL_UNIFORM, 1.0, 4.0);
        if (ff == NULL) {
            return NULL;
        }
    }
    if (a == NULL || pos == NULL) {
        return NULL;
    }
    if (!c->ip[2]) {
        return inplace ? ggml_rope_inplace(b->ctx, a, pos, c->ip[1], c->ip[0]) : ggml_rope(b->ctx, a, pos, c->ip[1], c->ip[0]);
    }
    /* n_ctx_orig 256 and beta 32 / 1: a YaRN ramp that lies inside the rotated dims */
    return ggml_rope_ext(b->ctx, a, pos, ff, c->ip[1], c->ip[0], 256, c->fp[0], c->fp[1], c->fp[3], c->fp[2], 32.0f,
                         1.0f);
}

/* the node the case checks, or NULL when a constructor refused (ggmlx_last_error says why) */
static struct ggml_tensor * cf_build_op(struct cf_build * b, const struct cf_op_case * c) {
    struct ggml_context * ctx      = b->ctx;
    const bool            permuted = c->layout == CF_PERMUTED;
    const bool            inplace  = c->layout == CF_INPLACE;
    struct ggml_tensor *  a = NULL, * x = NULL, * y = NULL;
    int64_t               ne[4];

    switch (c->op) {
    case CF_OP_DUP:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_dup_inplace(ctx, a) : ggml_dup(ctx, a);
    case CF_OP_CONT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_cont(ctx, a);
    case CF_OP_CPY:
        a = cf_default_input(b, c, c->t0, c->ne, permuted && c->ip[0] == 0);
        x = cf_default_input(b, c, c->t1, c->ne, c->ip[0] == 1);
        return a == NULL || x == NULL ? NULL : ggml_cpy(ctx, a, x);

    case CF_OP_ADD:
    case CF_OP_SUB:
    case CF_OP_MUL:
    case CF_OP_DIV: {
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        const int64_t * bne = c->layout == CF_BCAST ? c->nb : c->ne;
        if (c->op == CF_OP_DIV) {
            x = cf_input(b, c->t1, bne, permuted, CF_FILL_SIGNED, 0.25, 2.0);
        } else {
            x = cf_default_input(b, c, c->t1, bne, permuted);
        }
        if (a == NULL || x == NULL) {
            return NULL;
        }
        switch (c->op) {
        case CF_OP_ADD: return inplace ? ggml_add_inplace(ctx, a, x) : ggml_add(ctx, a, x);
        case CF_OP_SUB: return inplace ? ggml_sub_inplace(ctx, a, x) : ggml_sub(ctx, a, x);
        case CF_OP_MUL: return inplace ? ggml_mul_inplace(ctx, a, x) : ggml_mul(ctx, a, x);
        default: return inplace ? ggml_div_inplace(ctx, a, x) : ggml_div(ctx, a, x);
        }
    }

    case CF_OP_SCALE:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_scale_inplace(ctx, a, c->fp[0]) : ggml_scale(ctx, a, c->fp[0]);
    case CF_OP_SQR:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_sqr_inplace(ctx, a) : ggml_sqr(ctx, a);
    case CF_OP_SQRT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_sqrt_inplace(ctx, a) : ggml_sqrt(ctx, a);
    case CF_OP_UNARY:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL
               : inplace ? ggml_unary_inplace(ctx, a, (enum ggml_unary_op) c->ip[0])
                         : ggml_unary(ctx, a, (enum ggml_unary_op) c->ip[0]);
    case CF_OP_GLU:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        if (a == NULL) {
            return NULL;
        }
        if (c->ip[2]) {
            x = cf_default_input(b, c, c->t0, c->ne, permuted);
            return x == NULL ? NULL : ggml_glu_split(ctx, a, x, (enum ggml_glu_op) c->ip[0]);
        }
        return ggml_glu(ctx, a, (enum ggml_glu_op) c->ip[0], c->ip[1] != 0);

    case CF_OP_SUM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_sum(ctx, a);
    case CF_OP_SUM_ROWS:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_sum_rows(ctx, a);
    case CF_OP_MEAN:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_mean(ctx, a);
    case CF_OP_ARGMAX:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_argmax(ctx, a);

    case CF_OP_REPEAT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_repeat_4d(ctx, a, c->nb[0], c->nb[1], c->nb[2], c->nb[3]);
    case CF_OP_CONCAT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        x = cf_default_input(b, c, c->t0, c->nb, permuted);
        return a == NULL || x == NULL ? NULL : ggml_concat(ctx, a, x, c->ip[0]);

    case CF_OP_NORM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_norm_inplace(ctx, a, c->fp[0]) : ggml_norm(ctx, a, c->fp[0]);
    case CF_OP_RMS_NORM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_rms_norm_inplace(ctx, a, c->fp[0]) : ggml_rms_norm(ctx, a, c->fp[0]);

    case CF_OP_MUL_MAT:
        a = cf_default_input(b, c, c->t0, c->ne, false);
        x = cf_default_input(b, c, GGML_TYPE_F32, c->nb, permuted);
        return a == NULL || x == NULL ? NULL : ggml_mul_mat(ctx, a, x);

    case CF_OP_GET_ROWS:
        a = cf_default_input(b, c, c->t0, c->ne, false);
        cf_ne(ne, c->nb[0], c->ne[2], c->ne[3], 1);
        /* past 65535 rows, every index lies beyond row 65535 (a 16-bit grid limit would show) */
        x = cf_input(b, GGML_TYPE_I32, ne, false, CF_FILL_INT, c->ne[1] > 65536 ? 65536 : 0, (double) (c->ne[1] - 1));
        return a == NULL || x == NULL ? NULL : ggml_get_rows(ctx, a, x);
    case CF_OP_SET_ROWS: {
        /* c->nb: rows written per (i2, i3), then the index tensor's dims 1 and 2 */
        a = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        cf_ne(ne, c->ne[0], c->nb[0], c->ne[2], c->ne[3]);
        x = cf_input(b, GGML_TYPE_F32, ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        cf_ne(ne, c->nb[0], c->layout == CF_BCAST ? 1 : c->ne[2], c->layout == CF_BCAST ? 1 : c->ne[3], 1);
        y = cf_input(b, c->t1, ne, false, CF_FILL_UNIQUE, c->ne[1] > 65536 ? 65536 : 0, (double) (c->ne[1] - 1));
        return a == NULL || x == NULL || y == NULL ? NULL : ggml_set_rows(ctx, a, x, y);
    }

    case CF_OP_DIAG_MASK_INF:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL
               : inplace ? ggml_diag_mask_inf_inplace(ctx, a, c->ip[0])
                         : ggml_diag_mask_inf(ctx, a, c->ip[0]);
    case CF_OP_SOFT_MAX:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_soft_max_inplace(ctx, a) : ggml_soft_max(ctx, a);
    case CF_OP_SOFT_MAX_EXT:
        a = cf_default_input(b, c, c->t0, c->ne, false);
        if (a == NULL) {
            return NULL;
        }
        if (c->ip[0] == 1) {
            x = cf_input(b, c->t1, c->nb, false, CF_FILL_UNIFORM, -3.0, 1.0);
        } else if (c->ip[0] == 2) {
            x = cf_input(b, c->t1, c->nb, false, CF_FILL_CAUSAL, 0, 0);
        }
        if (c->ip[0] != 0 && x == NULL) {
            return NULL;
        }
        return inplace ? ggml_soft_max_ext_inplace(ctx, a, x, c->fp[0], c->fp[1])
                       : ggml_soft_max_ext(ctx, a, x, c->fp[0], c->fp[1]);
    case CF_OP_ROPE:
        return cf_build_rope(b, c);
    }
    return NULL;
}

#endif /* GGMLX_CF_OPS_H */
