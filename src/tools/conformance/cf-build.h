/*
 * cf-build.h -- how an op case (cf-cases.h) builds its graph: its inputs, each a tensor that
 * owns memory (or a permuted view of one) with the value range it is filled from, and the node
 * under test.
 */
#ifndef GGMLX_CF_BUILD_H
#define GGMLX_CF_BUILD_H

#include "cf-cases.h"

#define CF_MAX_ROOTS  12
#define CF_MAX_INPUTS 6

enum cf_fill {
    CF_FILL_POISON,  /* written by the graph: starts as all-ones bytes (NaN in every float type) */
    CF_FILL_UNIFORM, /* uniform in [lo, hi), rounded to the type */
    CF_FILL_SIGNED,  /* uniform magnitude in [lo, hi), random sign */
    CF_FILL_INT,     /* integers in [lo, hi] */
    CF_FILL_UNIQUE,  /* integers in [lo, hi], distinct within each row (set_rows indices) */
    CF_FILL_CAUSAL,  /* a mask: 0 where column <= row + (ne0 - ne1), else -INF */
    CF_FILL_SPECIAL, /* uniform, but every 5th value +-INF, NaN, -0, 1e5 (INF in F16) or -1e-6 (subnormal) */
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
    } else if (c->op == CF_OP_LOG) {
        *lo = 0.05, *hi = 8.0;
    } else if (c->op == CF_OP_SIN || c->op == CF_OP_COS || c->op == CF_OP_CLAMP || c->op == CF_OP_LEAKY_RELU) {
        *lo = -6.0, *hi = 6.0;
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

/* the first input of a case with ip[3] set (copies, neg/abs, get_rows) carries special values */
static struct ggml_tensor * cf_default_input(struct cf_build * b, const struct cf_op_case * c, enum ggml_type t,
                                             const int64_t * ne, bool permuted) {
    double lo, hi;
    enum cf_fill f = cf_default_fill(c, t, &lo, &hi);
    if (b->n_in == 0 && c->op != CF_OP_ROPE && c->ip[3] != 0 && f == CF_FILL_UNIFORM) {
        f = CF_FILL_SPECIAL;
    }
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
        if (a != NULL && c->fp[1] != 0.0f) {
            return inplace ? ggml_scale_bias_inplace(ctx, a, c->fp[0], c->fp[1]) : ggml_scale_bias(ctx, a, c->fp[0], c->fp[1]);
        }
        return a == NULL ? NULL : inplace ? ggml_scale_inplace(ctx, a, c->fp[0]) : ggml_scale(ctx, a, c->fp[0]);
    case CF_OP_LOG:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_log_inplace(ctx, a) : ggml_log(ctx, a);
    case CF_OP_SIN:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_sin_inplace(ctx, a) : ggml_sin(ctx, a);
    case CF_OP_COS:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_cos_inplace(ctx, a) : ggml_cos(ctx, a);
    case CF_OP_CLAMP: /* always in place, as upstream */
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_clamp(ctx, a, c->fp[0], c->fp[1]);
    case CF_OP_LEAKY_RELU:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_leaky_relu(ctx, a, c->fp[0], inplace);
    case CF_OP_ADD1:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        cf_ne(ne, 1, 1, 1, 1);
        x = cf_default_input(b, c, c->t1, ne, false);
        return a == NULL || x == NULL ? NULL : inplace ? ggml_add1_inplace(ctx, a, x) : ggml_add1(ctx, a, x);
    case CF_OP_SQR:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_sqr_inplace(ctx, a) : ggml_sqr(ctx, a);
    case CF_OP_SQRT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_sqrt_inplace(ctx, a) : ggml_sqrt(ctx, a);
    case CF_OP_UNARY:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        if (a != NULL && c->ip[0] == GGML_UNARY_OP_XIELU) {
            return ggml_xielu(ctx, a, c->fp[0], c->fp[1], c->fp[2], c->fp[3]);
        }
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
            if (x != NULL && c->ip[0] == GGML_GLU_OP_SWIGLU_OAI) {
                return ggml_swiglu_oai(ctx, a, x, c->fp[0], c->fp[1]);
            }
            return x == NULL ? NULL : ggml_glu_split(ctx, a, x, (enum ggml_glu_op) c->ip[0]);
        }
        if (c->ip[0] == GGML_GLU_OP_SWIGLU_OAI) {
            return ggml_swiglu_oai(ctx, a, NULL, c->fp[0], c->fp[1]);
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

    case CF_OP_L2_NORM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : inplace ? ggml_l2_norm_inplace(ctx, a, c->fp[0]) : ggml_l2_norm(ctx, a, c->fp[0]);
    case CF_OP_GROUP_NORM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL
               : inplace ? ggml_group_norm_inplace(ctx, a, c->ip[0], c->fp[0])
                         : ggml_group_norm(ctx, a, c->ip[0], c->fp[0]);
    case CF_OP_OUT_PROD:
        a = cf_default_input(b, c, c->t0, c->ne, false);
        x = cf_default_input(b, c, GGML_TYPE_F32, c->nb, permuted);
        return a == NULL || x == NULL ? NULL : ggml_out_prod(ctx, a, x);
    case CF_OP_DIAG_MASK_ZERO:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL
               : inplace ? ggml_diag_mask_zero_inplace(ctx, a, c->ip[0])
                         : ggml_diag_mask_zero(ctx, a, c->ip[0]);
    case CF_OP_PAD: /* ip: the left pads, nb: the right pads */
        a = c->t0 == GGML_TYPE_I32 ? cf_input(b, c->t0, c->ne, permuted, CF_FILL_INT, -100, 100)
                                   : cf_input(b, c->t0, c->ne, permuted, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL ? NULL
                         : ggml_pad_ext(ctx, a, c->ip[0], (int) c->nb[0], c->ip[1], (int) c->nb[1], c->ip[2],
                                        (int) c->nb[2], c->ip[3], (int) c->nb[3]);
    case CF_OP_ARANGE:
        return ggml_arange(ctx, c->fp[0], c->fp[1], c->fp[2]);
    case CF_OP_TIMESTEP_EMB:
        a = cf_input(b, GGML_TYPE_F32, c->ne, false, CF_FILL_UNIFORM, 0.0, 1000.0);
        return a == NULL ? NULL : ggml_timestep_embedding(ctx, a, c->ip[0], c->ip[1]);
    case CF_OP_COUNT_EQUAL:
        /* few distinct values: about a quarter of the pairs equal */
        a = cf_input(b, GGML_TYPE_I32, c->ne, false, CF_FILL_INT, 0, 3);
        x = cf_input(b, GGML_TYPE_I32, c->ne, permuted, CF_FILL_INT, 0, 3);
        return a == NULL || x == NULL ? NULL : ggml_count_equal(ctx, a, x);
    case CF_OP_CUMSUM:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_cumsum(ctx, a);
    case CF_OP_ARGSORT:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_argsort(ctx, a, (enum ggml_sort_order) c->ip[0]);
    case CF_OP_TOP_K:
        a = cf_default_input(b, c, c->t0, c->ne, permuted);
        return a == NULL ? NULL : ggml_top_k(ctx, a, c->ip[0]);
    case CF_OP_PAD_REFLECT_1D:
        a = cf_default_input(b, c, c->t0, c->ne, false);
        return a == NULL ? NULL : ggml_pad_reflect_1d(ctx, a, c->ip[0], c->ip[1]);

    case CF_OP_IM2COL:
    case CF_OP_CONV_2D_DIRECT:
    case CF_OP_CONV_2D_DW_DIRECT: /* the kernel (nb) first, the data (ne) second */
        a = cf_input(b, c->t0, c->nb, false, CF_FILL_UNIFORM, -1.0, 1.0);
        x = cf_input(b, GGML_TYPE_F32, c->ne, permuted, CF_FILL_UNIFORM, -2.0, 2.0);
        if (a == NULL || x == NULL) {
            return NULL;
        }
        if (c->op == CF_OP_IM2COL) {
            return ggml_im2col(ctx, a, x, c->ip[0], c->ip[0], c->ip[1], c->ip[2], c->ip[3], c->ip[3], true, c->t1);
        }
        return c->op == CF_OP_CONV_2D_DIRECT
               ? ggml_conv_2d_direct(ctx, a, x, c->ip[0], c->ip[0], c->ip[1], c->ip[2], c->ip[3], c->ip[3])
               : ggml_conv_2d_dw_direct(ctx, a, x, c->ip[0], c->ip[0], c->ip[1], c->ip[2], c->ip[3], c->ip[3]);
    case CF_OP_POOL_2D:
        a = cf_input(b, c->t0, c->ne, permuted, CF_FILL_UNIFORM, -2.0, 1.0);
        return a == NULL ? NULL
                         : ggml_pool_2d(ctx, a, (enum ggml_op_pool) c->ip[0], c->ip[1], c->ip[2], c->ip[3], c->ip[3],
                                        c->fp[0], c->fp[1]);
    case CF_OP_UPSCALE:
        a = cf_input(b, c->t0, c->ne, permuted, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL ? NULL : ggml_interpolate(ctx, a, c->nb[0], c->nb[1], c->nb[2], c->nb[3], (uint32_t) c->ip[0]);
    case CF_OP_POOL_1D:
        a = cf_input(b, c->t0, c->ne, permuted, CF_FILL_UNIFORM, -2.0, 1.0);
        return a == NULL ? NULL : ggml_pool_1d(ctx, a, (enum ggml_op_pool) c->ip[0], c->ip[1], c->ip[2], c->ip[3]);
    case CF_OP_CONV_TRANSPOSE_2D:
        a = cf_input(b, c->t0, c->nb, false, CF_FILL_UNIFORM, -1.0, 1.0);
        x = cf_input(b, GGML_TYPE_F32, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL || x == NULL ? NULL : ggml_conv_transpose_2d_p0(ctx, a, x, c->ip[0]);
    case CF_OP_COL2IM_1D:
        a = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL ? NULL : ggml_col2im_1d(ctx, a, c->ip[0], c->ip[1], c->ip[2]);
    case CF_OP_WIN_PART:
        a = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL ? NULL : ggml_win_part(ctx, a, c->ip[0]);
    case CF_OP_GET_REL_POS:
        a = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL ? NULL : ggml_get_rel_pos(ctx, a, c->ip[0], c->ip[0]);
    case CF_OP_ADD_REL_POS: /* a [W*W, H*Q, B], pw and ph [W, H, Q, B] */
        cf_ne(ne, c->ne[0] * c->ne[0], c->ne[1] * c->ne[2], c->ne[3], 1);
        a = cf_input(b, c->t0, ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        x = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        y = cf_input(b, c->t0, c->ne, false, CF_FILL_UNIFORM, -2.0, 2.0);
        return a == NULL || x == NULL || y == NULL ? NULL
               : inplace ? ggml_add_rel_pos_inplace(ctx, a, x, y) : ggml_add_rel_pos(ctx, a, x, y);
    }
    return NULL;
}

#endif /* GGMLX_CF_BUILD_H */
