/*
 * cf-ref.h -- double-precision references for the op cases. Each reads the inputs exactly as
 * they were stored on the device (from the host copy that was uploaded) and writes the expected
 * result in logical row-major order with, per element, the absolute error it allows:
 *
 *     |got - want| <= tol     (tol 0: bit-exact; infinities and NaNs must match)
 *
 * Tolerances follow the arithmetic a backend may reasonably do: one rounding of the output type
 * (half an ulp, allowed as a full one), a few float ulps of what elementwise math rounds (|a| + |b|
 * for a sum, |x0| + |x1| for a rotation), and for sums of many terms a statistical bound: float
 * accumulation in any order makes an error far below 16 float ulps of sqrt(sum of the squared
 * partial sums), while a term missing or counted twice is far above it. For F16/BF16 matrix
 * products each product may carry one rounding of the weights' type (a GPU may round b to it).
 */
#ifndef GGMLX_CF_REF_H
#define GGMLX_CF_REF_H

#include "cf-build.h"

#include "ggml-cpu.h"

#include <float.h>

/* a tensor's elements in a host copy of its arena */
struct cf_acc {
    const unsigned char * base;
    size_t                nb[4];
    int64_t               ne[4];
    enum ggml_type        type;
};

static int cf_root_index(const struct cf_build * b, const struct ggml_tensor * t) {
    const struct ggml_tensor * root = t->view_src ? t->view_src : t;
    for (int i = 0; i < b->n_roots; i++) {
        if (b->roots[i].t == root) {
            return i;
        }
    }
    return -1;
}

/* after: the copy read back from the device, else the one uploaded */
static struct cf_acc cf_acc_of(const struct cf_build * b, const struct ggml_tensor * t, bool after) {
    struct cf_acc a;
    memset(&a, 0, sizeof a);
    const int k = cf_root_index(b, t);
    if (k < 0) {
        return a;
    }
    const struct cf_root * r = &b->roots[k];
    a.base = (after ? r->after : r->before) + r->offset + (t->view_src ? t->view_offs : 0);
    for (int d = 0; d < 4; d++) {
        a.nb[d] = t->nb[d];
        a.ne[d] = t->ne[d];
    }
    a.type = t->type;
    return a;
}

static double cf_at(const struct cf_acc * a, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    if (ggml_is_quantized(a->type)) {
        const int64_t bs = ggml_blck_size(a->type);
        return cf_load_quant(a->type, a->base + (i0 / bs) * a->nb[0] + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3],
                             i0 % bs);
    }
    return cf_load(a->type, a->base + i0 * a->nb[0] + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3]);
}

/*
 * n values quantized to type t and back by the reference quantizer (from_float_ref, to_float),
 * into rt, with per element the error a backend's own quantizer may make: twice the reference's
 * worst error in the element's block. A quantizer may break ties or pick a block's scale
 * differently, which moves values by up to a step (the reference's worst error in a block is
 * about half a step, a whole one at the clamped end of Q4_0's levels); a wrong block, scale or
 * element order is off by the order of the block's largest value. false when t has no
 * reference quantizer or dequantizer.
 */
static bool cf_quant_round_trip(enum ggml_type t, const float * x, int64_t n, float * rt, double * tol) {
    const struct ggml_type_traits * tr = ggml_get_type_traits(t);
    if (tr == NULL || tr->from_float_ref == NULL || tr->to_float == NULL || n % tr->blck_size != 0) {
        return false;
    }
    void * q = malloc(ggml_row_size(t, n));
    if (q == NULL) {
        return false;
    }
    tr->from_float_ref(x, q, n);
    tr->to_float(q, rt, n);
    free(q);
    for (int64_t b0 = 0; b0 < n; b0 += tr->blck_size) {
        double worst = 0.0, amax = 0.0;
        for (int64_t j = b0; j < b0 + tr->blck_size; j++) {
            worst = fmax(worst, fabs((double) x[j] - (double) rt[j]));
            amax  = fmax(amax, fabs((double) x[j]));
        }
        for (int64_t j = b0; j < b0 + tr->blck_size; j++) {
            tol[j] = 2.0 * worst + 1e-6 * amax;
        }
    }
    return true;
}

struct cf_ref {
    const struct cf_op_case * c;
    const struct cf_build *   b;
    int64_t                   ne[4]; /* of the result */
    double *                  want;
    double *                  tol;
    bool                      failed; /* no reference could be computed */
};

#define CF_FOR4(ne, i0, i1, i2, i3)                                                                 \
    for (int64_t i3 = 0; i3 < (ne)[3]; i3++)                                                        \
        for (int64_t i2 = 0; i2 < (ne)[2]; i2++)                                                    \
            for (int64_t i1 = 0; i1 < (ne)[1]; i1++)                                                \
                for (int64_t i0 = 0; i0 < (ne)[0]; i0++)

static size_t cf_idx(const int64_t * ne, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (size_t) (((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0);
}

static void cf_put(struct cf_ref * r, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double want, double tol) {
    const size_t k = cf_idx(r->ne, i0, i1, i2, i3);
    r->want[k] = want;
    r->tol[k]  = tol;
}

/* relative tolerance: f32_ulps float roundings, or one ulp of the output type if that is more */
static double cf_rtol(double f32_ulps, enum ggml_type out) {
    const double t = cf_eps(GGML_TYPE_F32) * f32_ulps;
    const double o = cf_eps(out);
    return t > o ? t : o;
}

/* float ulps of sqrt(sum of squared partial sums) that a long sum may lose, in any order */
#define CF_SUM_ULPS 16.0

/* running statistics of a sum in its natural order, for the tolerance of a reduction */
struct cf_sum {
    double s;  /* the sum */
    double s2; /* sum of the squared partial sums */
    double p2; /* sum of the squared terms */
};

static void cf_sum_add(struct cf_sum * a, double v) {
    a->s += v;
    a->s2 += a->s * a->s;
    a->p2 += v * v;
}

/* what summing in float may cost, then storing in type out */
static double cf_sum_tol(const struct cf_sum * a, double want, enum ggml_type out) {
    return CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) * sqrt(a->s2) + cf_eps(out) * fabs(want);
}

/* ---- per-element math -------------------------------------------------------------------- */

static double cf_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}

static double cf_gelu_tanh(double x) {
    const double k = sqrt(2.0 / CF_PI);
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

static double cf_gelu_erf(double x) {
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double cf_unary(int op, double x) {
    switch (op) {
    case GGML_UNARY_OP_ABS: return fabs(x);
    case GGML_UNARY_OP_NEG: return -x;
    case GGML_UNARY_OP_TANH: return tanh(x);
    case GGML_UNARY_OP_RELU: return x > 0 ? x : 0.0;
    case GGML_UNARY_OP_SIGMOID: return cf_sigmoid(x);
    case GGML_UNARY_OP_GELU: return cf_gelu_tanh(x);
    case GGML_UNARY_OP_SILU: return x * cf_sigmoid(x);
    case GGML_UNARY_OP_EXP: return exp(x);
    case GGML_UNARY_OP_GELU_ERF: return cf_gelu_erf(x);
    case GGML_UNARY_OP_SGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case GGML_UNARY_OP_STEP: return x > 0 ? 1.0 : 0.0;
    case GGML_UNARY_OP_ELU: return x > 0 ? x : expm1(x);
    case GGML_UNARY_OP_GELU_QUICK: return x * cf_sigmoid(1.702 * x);
    case GGML_UNARY_OP_HARDSWISH: return x * fmin(1.0, fmax(0.0, (x + 3.0) / 6.0));
    case GGML_UNARY_OP_HARDSIGMOID: return fmin(1.0, fmax(0.0, (x + 3.0) / 6.0));
    case GGML_UNARY_OP_EXPM1: return expm1(x);
    case GGML_UNARY_OP_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x));
    case GGML_UNARY_OP_FLOOR: return floor(x);
    case GGML_UNARY_OP_CEIL: return ceil(x);
    case GGML_UNARY_OP_ROUND: return round(x);
    case GGML_UNARY_OP_TRUNC: return trunc(x);
    default: return NAN;
    }
}

static double cf_softplus(double x) {
    return log1p(exp(x));
}

/*
 * xIELU from the parameters the case gave ggml_xielu (fp[0..3]: alpha_n, alpha_p, beta, eps),
 * derived in float as the constructor stores them; *scale: the size of the terms that cancel.
 */
static double cf_xielu(const struct cf_op_case * c, double x, double * scale) {
    const double an = (float) ((float) c->fp[2] + (float) cf_softplus(c->fp[0]));
    const double ap = (float) cf_softplus(c->fp[1]), beta = c->fp[2], eps = c->fp[3];
    if (x > 0) {
        *scale = ap * x * x + fabs(beta * x);
        return ap * x * x + beta * x;
    }
    const double e = expm1(fmin(x, eps));
    *scale = fabs(an) * (fabs(e) + fabs(x)) + fabs(beta * x);
    return (e - x) * an + beta * x;
}

static double cf_glu_act(int op, double x) {
    switch (op) {
    case GGML_GLU_OP_REGLU: return x > 0 ? x : 0.0;
    case GGML_GLU_OP_GEGLU: return cf_gelu_tanh(x);
    case GGML_GLU_OP_SWIGLU: return x * cf_sigmoid(x);
    case GGML_GLU_OP_GEGLU_ERF: return cf_gelu_erf(x);
    case GGML_GLU_OP_GEGLU_QUICK: return x * cf_sigmoid(1.702 * x);
    default: return NAN;
    }
}

/* ---- the references ------------------------------------------------------------------------ */

/* rows of F32/F16 values quantized into the result: each row within cf_quant_round_trip's bound */
static void cf_ref_copy_to_quant(struct cf_ref * r) {
    const struct cf_acc a  = cf_acc_of(r->b, r->b->in[0], false);
    const enum ggml_type ot = r->b->out->type;
    const int64_t n = r->ne[0];
    float  * x   = malloc((size_t) n * sizeof *x);
    float  * rt  = malloc((size_t) n * sizeof *rt);
    double * tol = malloc((size_t) n * sizeof *tol);
    if (x == NULL || rt == NULL || tol == NULL) {
        r->failed = true;
        goto out;
    }
    for (int64_t i3 = 0; i3 < r->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < r->ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < r->ne[1]; i1++) {
                for (int64_t i0 = 0; i0 < n; i0++) {
                    x[i0] = (float) cf_at(&a, i0, i1, i2, i3);
                }
                if (!cf_quant_round_trip(ot, x, n, rt, tol)) {
                    r->failed = true;
                    goto out;
                }
                for (int64_t i0 = 0; i0 < n; i0++) {
                    cf_put(r, i0, i1, i2, i3, x[i0], tol[i0]);
                }
            }
        }
    }
out:
    free(x);
    free(rt);
    free(tol);
}

static void cf_ref_copy(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const enum ggml_type ot = r->b->out->type;
    if (ggml_is_quantized(ot) && ot != a.type) {
        cf_ref_copy_to_quant(r);
        return;
    }
    /* same logical shape: element for element */
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        cf_put(r, i0, i1, i2, i3, cf_round_to(ot, cf_at(&a, i0, i1, i2, i3)), 0.0);
    }
}

static void cf_ref_binary(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const double rtol = cf_rtol(2, r->b->out->type);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const double av = cf_at(&a, i0, i1, i2, i3);
        const double bv = cf_at(&x, i0 % x.ne[0], i1 % x.ne[1], i2 % x.ne[2], i3 % x.ne[3]);
        double w;
        switch (r->c->op) {
        case CF_OP_ADD: w = av + bv; break;
        case CF_OP_SUB: w = av - bv; break;
        case CF_OP_MUL: w = av * bv; break;
        default: w = av / bv; break;
        }
        const double s = r->c->op == CF_OP_ADD || r->c->op == CF_OP_SUB ? fabs(av) + fabs(bv) : fabs(w);
        cf_put(r, i0, i1, i2, i3, w, rtol * s);
    }
}

static void cf_ref_elementwise(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int op = r->c->ip[0];
    const bool exact = (r->c->op == CF_OP_UNARY &&
                        (op == GGML_UNARY_OP_ABS || op == GGML_UNARY_OP_NEG || op == GGML_UNARY_OP_RELU ||
                         op == GGML_UNARY_OP_SGN || op == GGML_UNARY_OP_STEP || op == GGML_UNARY_OP_FLOOR ||
                         op == GGML_UNARY_OP_CEIL || op == GGML_UNARY_OP_ROUND || op == GGML_UNARY_OP_TRUNC)) ||
                       r->c->op == CF_OP_CLAMP;
    const enum ggml_type ot = r->b->out->type;
    const bool transcendental = r->c->op == CF_OP_UNARY || r->c->op == CF_OP_SQRT || r->c->op == CF_OP_LOG ||
                                r->c->op == CF_OP_SIN || r->c->op == CF_OP_COS;
    const double rtol = exact ? 0.0 : cf_rtol(transcendental ? 32 : 2, r->b->out->type);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const double x = cf_at(&a, i0, i1, i2, i3);
        double w, s;
        switch (r->c->op) {
        case CF_OP_SCALE:
            w = x * (double) r->c->fp[0] + (double) r->c->fp[1];
            s = fabs(x * (double) r->c->fp[0]) + fabs((double) r->c->fp[1]);
            break;
        case CF_OP_LOG: w = log(x); s = fabs(w) + 0.01 * fabs(x); break;
        case CF_OP_SIN: w = sin(x); s = fabs(w) + 0.01 * fabs(x); break;
        case CF_OP_COS: w = cos(x); s = fabs(w) + 0.01 * fabs(x); break;
        /* the bounds as the output type holds them */
        case CF_OP_CLAMP:
            w = cf_round_to(ot, fmax(fmin(x, (double) r->c->fp[1]), (double) r->c->fp[0]));
            s = 0;
            break;
        case CF_OP_LEAKY_RELU: w = x > 0 ? x : x * (double) r->c->fp[0]; s = fabs(w); break;
        case CF_OP_SQR: w = x * x; s = w; break;
        case CF_OP_SQRT: w = sqrt(x); s = w; break;
        default:
            if (op == GGML_UNARY_OP_XIELU) {
                w = cf_xielu(r->c, x, &s);
                break;
            }
            w = cf_unary(op, x);
            /* a backend may compute 0.5x(1 + tanh(..)) and lose a few ulps of x in the cancellation */
            s = fabs(w) + 0.01 * fabs(x);
            break;
        }
        cf_put(r, i0, i1, i2, i3, w, rtol * s);
    }
}

static void cf_ref_add1(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const double rtol = cf_rtol(2, r->b->out->type);
    const double y = cf_at(&x, 0, 0, 0, 0);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const double av = cf_at(&a, i0, i1, i2, i3);
        cf_put(r, i0, i1, i2, i3, av + y, rtol * (fabs(av) + fabs(y)));
    }
}

static void cf_ref_glu(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const bool split = r->c->ip[2] != 0, swapped = r->c->ip[1] != 0;
    struct cf_acc g = a;
    if (split) {
        g = cf_acc_of(r->b, r->b->in[1], false);
    }
    const int64_t n = r->ne[0];
    const double rtol = cf_rtol(32, r->b->out->type);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        double x, gv;
        if (split) {
            x  = cf_at(&a, i0, i1, i2, i3);
            gv = cf_at(&g, i0, i1, i2, i3);
        } else {
            x  = cf_at(&a, swapped ? i0 + n : i0, i1, i2, i3);
            gv = cf_at(&a, swapped ? i0 : i0 + n, i1, i2, i3);
        }
        if (r->c->ip[0] == GGML_GLU_OP_SWIGLU_OAI) {
            /* x clipped above at limit, the gate to [-limit, limit] and shifted by 1 */
            const double alpha = r->c->fp[0], limit = r->c->fp[1];
            const double xc = fmin(x, limit), gc = fmax(fmin(gv, limit), -limit);
            const double act = xc * cf_sigmoid(alpha * xc);
            cf_put(r, i0, i1, i2, i3, act * (gc + 1.0), rtol * (fabs(act) + 0.01 * fabs(xc)) * (fabs(gc) + 1.0));
            continue;
        }
        const double act = cf_glu_act(r->c->ip[0], x);
        cf_put(r, i0, i1, i2, i3, act * gv, rtol * (fabs(act) + 0.01 * fabs(x)) * fabs(gv));
    }
}

static void cf_ref_reduce(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const enum cf_op op = r->c->op;
    const enum ggml_type ot = r->b->out->type;
    if (op == CF_OP_SUM) {
        struct cf_sum acc = { 0, 0, 0 };
        CF_FOR4(a.ne, i0, i1, i2, i3) {
            cf_sum_add(&acc, cf_at(&a, i0, i1, i2, i3));
        }
        cf_put(r, 0, 0, 0, 0, acc.s, cf_sum_tol(&acc, acc.s, ot));
        return;
    }
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                struct cf_sum acc = { 0, 0, 0 };
                double best = -INFINITY;
                int64_t arg = 0;
                for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                    const double v = cf_at(&a, i0, i1, i2, i3);
                    cf_sum_add(&acc, v);
                    if (v > best) {
                        best = v;
                        arg  = i0;
                    }
                }
                if (op == CF_OP_ARGMAX) {
                    cf_put(r, i1, 0, 0, 0, (double) arg, 0.0);
                } else if (op == CF_OP_MEAN) {
                    const double n = (double) a.ne[0], m = acc.s / n;
                    /* the division adds one rounding */
                    cf_put(r, 0, i1, i2, i3, m, cf_sum_tol(&acc, acc.s, ot) / n + 2 * cf_eps(GGML_TYPE_F32) * fabs(m));
                } else {
                    cf_put(r, 0, i1, i2, i3, acc.s, cf_sum_tol(&acc, acc.s, ot));
                }
            }
        }
    }
}

static void cf_ref_repeat(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        cf_put(r, i0, i1, i2, i3, cf_at(&a, i0 % a.ne[0], i1 % a.ne[1], i2 % a.ne[2], i3 % a.ne[3]), 0.0);
    }
}

static void cf_ref_concat(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int dim = r->c->ip[0];
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        int64_t i[4] = { i0, i1, i2, i3 };
        double v;
        if (i[dim] < a.ne[dim]) {
            v = cf_at(&a, i0, i1, i2, i3);
        } else {
            i[dim] -= a.ne[dim];
            v = cf_at(&x, i[0], i[1], i[2], i[3]);
        }
        cf_put(r, i0, i1, i2, i3, v, 0.0);
    }
}

static void cf_ref_norm(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const double eps = (double) r->c->fp[0];
    const int64_t n = a.ne[0];
    /* the mean and variance are sums of n terms; the output is O(1) */
    const double rtol = cf_eps(GGML_TYPE_F32) * (16.0 + 2.0 * sqrt((double) n));
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                double sum = 0, sq = 0;
                for (int64_t i0 = 0; i0 < n; i0++) {
                    sum += cf_at(&a, i0, i1, i2, i3);
                }
                const double mean = r->c->op == CF_OP_NORM ? sum / (double) n : 0.0;
                for (int64_t i0 = 0; i0 < n; i0++) {
                    const double d = cf_at(&a, i0, i1, i2, i3) - mean;
                    sq += d * d;
                }
                const double inv = 1.0 / sqrt(sq / (double) n + eps);
                for (int64_t i0 = 0; i0 < n; i0++) {
                    const double w = (cf_at(&a, i0, i1, i2, i3) - mean) * inv;
                    cf_put(r, i0, i1, i2, i3, w, rtol * (fabs(w) + 1.0));
                }
            }
        }
    }
}

/*
 * Quantized weights: the reference multiplies the dequantized weights (exact) by the F32
 * activations in double. A backend quantizes the activations (the CPU: to the weight type's
 * vec_dot_type, Q8_0 or Q8_K, blocks of qb values sharing d = amax / 127, each value off by at most
 * d / 2, and Q8_0's d stored as F16, 2^-11 of every value), so each block adds at most
 * d / 2 * sum |w| and the scale rounding 2^-10 * sum |w x|; then the float sum as for F32.
 */
static void cf_ref_mul_mat_quant(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int64_t K = a.ne[0];
    const int64_t r2 = x.ne[2] / a.ne[2], r3 = x.ne[3] / a.ne[3];
    /* the activations' block: Q8_K (256) for the 256-element formats, Q8_0 (32) for the others;
     * from the block size, not ggml_get_type_traits_cpu, which a GGML_BACKEND_DL build keeps in
     * the CPU module this tool does not link */
    const int64_t qb = ggml_blck_size(a.type) >= 256 ? 256 : 32;
    CF_FOR4(r->ne, n, m, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        double tol = 0.0, mag = 0.0;
        for (int64_t b0 = 0; b0 < K; b0 += qb) {
            double amax = 0.0, wsum = 0.0;
            for (int64_t k = b0; k < b0 + qb && k < K; k++) {
                const double w = cf_at(&a, k, n, i2 / r2, i3 / r3), v = cf_at(&x, k, m, i2, i3);
                cf_sum_add(&acc, w * v);
                mag += fabs(w * v);
                amax = fmax(amax, fabs(v));
                wsum += fabs(w);
            }
            tol += amax / 127.0 / 2.0 * wsum;
        }
        cf_put(r, n, m, i2, i3, acc.s, tol + mag / 1024.0 + cf_sum_tol(&acc, acc.s, GGML_TYPE_F32));
    }
}

static void cf_ref_mul_mat(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    if (ggml_is_quantized(a.type)) {
        cf_ref_mul_mat_quant(r);
        return;
    }
    const int64_t K = a.ne[0];
    const int64_t r2 = x.ne[2] / a.ne[2], r3 = x.ne[3] / a.ne[3];
    /* F16/BF16 weights: b may be rounded to their type, one rounding per product (4 of its
     * ulps of the products' root sum of squares is ~14 standard deviations) */
    const double prod_ulps = a.type == GGML_TYPE_F32 ? CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) : 4.0 * cf_eps(a.type);
    CF_FOR4(r->ne, n, m, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        for (int64_t k = 0; k < K; k++) {
            cf_sum_add(&acc, cf_at(&a, k, n, i2 / r2, i3 / r3) * cf_at(&x, k, m, i2, i3));
        }
        cf_put(r, n, m, i2, i3, acc.s, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) + prod_ulps * sqrt(acc.p2));
    }
}

static void cf_ref_get_rows(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc idx = cf_acc_of(r->b, r->b->in[1], false);
    const enum ggml_type ot = r->b->out->type;
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const int64_t row = (int64_t) cf_at(&idx, i1, i2, i3, 0);
        cf_put(r, i0, i1, i2, i3, cf_round_to(ot, cf_at(&a, i0, row, i2, i3)), 0.0);
    }
}

/* rows quantized into their places: within cf_quant_round_trip's bound of the source values */
static void cf_ref_set_rows_quant(struct cf_ref * r, const struct cf_acc * src, const struct cf_acc * idx,
                                  enum ggml_type t) {
    const int64_t n = src->ne[0];
    float  * x   = malloc((size_t) n * sizeof *x);
    float  * rt  = malloc((size_t) n * sizeof *rt);
    double * tol = malloc((size_t) n * sizeof *tol);
    if (x == NULL || rt == NULL || tol == NULL) {
        r->failed = true;
        goto out;
    }
    for (int64_t i3 = 0; i3 < src->ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < src->ne[2]; i2++) {
            for (int64_t i = 0; i < src->ne[1]; i++) {
                const int64_t row = (int64_t) cf_at(idx, i, i2 % idx->ne[1], i3 % idx->ne[2], 0);
                for (int64_t i0 = 0; i0 < n; i0++) {
                    x[i0] = (float) cf_at(src, i0, i, i2, i3);
                }
                if (!cf_quant_round_trip(t, x, n, rt, tol)) {
                    r->failed = true;
                    goto out;
                }
                for (int64_t i0 = 0; i0 < n; i0++) {
                    cf_put(r, i0, row, i2, i3, x[i0], tol[i0]);
                }
            }
        }
    }
out:
    free(x);
    free(rt);
    free(tol);
}

static void cf_ref_set_rows(struct cf_ref * r) {
    const struct cf_acc dst = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc src = cf_acc_of(r->b, r->b->in[1], false);
    const struct cf_acc idx = cf_acc_of(r->b, r->b->in[2], false);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        cf_put(r, i0, i1, i2, i3, cf_at(&dst, i0, i1, i2, i3), 0.0);
    }
    if (ggml_is_quantized(dst.type)) {
        cf_ref_set_rows_quant(r, &src, &idx, dst.type);
        return;
    }
    for (int64_t i3 = 0; i3 < src.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < src.ne[2]; i2++) {
            for (int64_t i = 0; i < src.ne[1]; i++) {
                const int64_t row = (int64_t) cf_at(&idx, i, i2 % idx.ne[1], i3 % idx.ne[2], 0);
                for (int64_t i0 = 0; i0 < src.ne[0]; i0++) {
                    cf_put(r, i0, row, i2, i3, cf_round_to(dst.type, cf_at(&src, i0, i, i2, i3)), 0.0);
                }
            }
        }
    }
}

static void cf_ref_diag_mask(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t n_past = r->c->ip[0];
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const double masked = r->c->op == CF_OP_DIAG_MASK_ZERO ? 0.0 : -INFINITY;
        cf_put(r, i0, i1, i2, i3, i0 > n_past + i1 ? masked : cf_at(&a, i0, i1, i2, i3), 0.0);
    }
}

/* ALiBi: the slope of head h of n_head, geometric as upstream defines it */
static double cf_alibi_slope(double max_bias, int64_t n_head, int64_t h) {
    if (!(max_bias > 0)) {
        return 1.0;
    }
    int64_t n_log2 = 1;
    while (n_log2 * 2 <= n_head) {
        n_log2 *= 2;
    }
    const double m0 = pow(2.0, -max_bias / (double) n_log2);
    const double m1 = pow(2.0, -(max_bias / 2.0) / (double) n_log2);
    return h < n_log2 ? pow(m0, (double) (h + 1)) : pow(m1, (double) (2 * (h - n_log2) + 1));
}

static void cf_ref_soft_max(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const bool has_mask = r->c->op == CF_OP_SOFT_MAX_EXT && r->c->ip[0] != 0;
    struct cf_acc m = a;
    if (has_mask) {
        m = cf_acc_of(r->b, r->b->in[1], false);
    }
    const double scale = r->c->op == CF_OP_SOFT_MAX_EXT ? (double) r->c->fp[0] : 1.0;
    const double max_bias = r->c->op == CF_OP_SOFT_MAX_EXT ? (double) r->c->fp[1] : 0.0;
    const int64_t n = a.ne[0];
    /* relative: the exponentials and the normalising sum over n terms */
    const double rtol = cf_eps(GGML_TYPE_F32) * (32.0 + 2.0 * sqrt((double) n));
    double * w = malloc((size_t) n * sizeof *w);
    if (w == NULL) {
        r->failed = true;
        return;
    }
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            const double slope = cf_alibi_slope(max_bias, a.ne[2], i2);
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                double mx = -INFINITY;
                for (int64_t i0 = 0; i0 < n; i0++) {
                    w[i0] = cf_at(&a, i0, i1, i2, i3) * scale;
                    if (has_mask) {
                        w[i0] += slope * cf_at(&m, i0, i1, i2 % m.ne[2], i3 % m.ne[3]);
                    }
                    mx = w[i0] > mx ? w[i0] : mx;
                }
                double sum = 0;
                for (int64_t i0 = 0; i0 < n; i0++) {
                    w[i0] = exp(w[i0] - mx);
                    sum += w[i0];
                }
                for (int64_t i0 = 0; i0 < n; i0++) {
                    cf_put(r, i0, i1, i2, i3, w[i0] / sum, rtol * w[i0] / sum);
                }
            }
        }
    }
    free(w);
}

/* the YaRN correction range [lo, hi] in pairs, as ggml defines it */
static void cf_yarn_dims(int n_dims, int n_ctx_orig, double base, double beta_fast, double beta_slow, double * lo,
                         double * hi) {
    const double d_fast = n_dims * log(n_ctx_orig / (beta_fast * 2.0 * CF_PI)) / (2.0 * log(base));
    const double d_slow = n_dims * log(n_ctx_orig / (beta_slow * 2.0 * CF_PI)) / (2.0 * log(base));
    *lo = fmax(0.0, floor(d_fast));
    *hi = fmin((double) (n_dims - 1), ceil(d_slow));
}

static void cf_ref_rope(struct cf_ref * r) {
    const struct cf_op_case * c = r->c;
    const struct cf_acc a   = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc pos = cf_acc_of(r->b, r->b->in[1], false);
    struct cf_acc ff = a;
    const bool has_ff = c->ip[3] != 0;
    if (has_ff) {
        ff = cf_acc_of(r->b, r->b->in[2], false);
    }
    const int n_dims = c->ip[1];
    const bool neox = c->ip[0] == GGML_ROPE_TYPE_NEOX;
    const bool ext = c->ip[2] != 0;
    const double base = ext ? c->fp[0] : 10000.0, freq_scale = ext ? c->fp[1] : 1.0;
    const double attn = ext ? c->fp[2] : 1.0, ext_factor = ext ? c->fp[3] : 0.0;
    double lo = 0, hi = 0;
    cf_yarn_dims(n_dims, 256, base, 32.0, 1.0, &lo, &hi);
    const double mscale = ext_factor != 0 ? attn * (1.0 + 0.1 * log(1.0 / freq_scale)) : attn;
    /* angles up to 100 rad in float: the angle itself is off by ~1e-5 */
    const double rtol = fmax(1e-4, cf_eps(r->b->out->type));

    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            const double p = cf_at(&pos, i2, 0, 0, 0);
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                for (int pair = 0; pair < n_dims / 2; pair++) {
                    const double f = has_ff ? cf_at(&ff, pair, 0, 0, 0) : 1.0;
                    const double extrap = p * pow(base, -2.0 * pair / n_dims) / f;
                    double theta = freq_scale * extrap;
                    if (ext_factor != 0) {
                        const double y = (pair - lo) / fmax(0.001, hi - lo);
                        const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * ext_factor;
                        theta = theta * (1.0 - mix) + extrap * mix;
                    }
                    const int64_t j0 = neox ? pair : 2 * pair;
                    const int64_t j1 = neox ? pair + n_dims / 2 : 2 * pair + 1;
                    const double x0 = cf_at(&a, j0, i1, i2, i3), x1 = cf_at(&a, j1, i1, i2, i3);
                    const double cs = cos(theta) * mscale, sn = sin(theta) * mscale;
                    const double s = (fabs(x0) + fabs(x1)) * fabs(mscale);
                    cf_put(r, j0, i1, i2, i3, x0 * cs - x1 * sn, rtol * s);
                    cf_put(r, j1, i1, i2, i3, x0 * sn + x1 * cs, rtol * s);
                }
                for (int64_t i0 = n_dims; i0 < a.ne[0]; i0++) {
                    const double v = cf_at(&a, i0, i1, i2, i3);
                    cf_put(r, i0, i1, i2, i3, v, 0.0);
                }
            }
        }
    }
}

/* ---- l2/group norm, out_prod, pad, arange, timestep embedding, count_equal, cumsum, sorting -- */

static void cf_ref_l2_norm(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const double eps = (double) r->c->fp[0];
    const double rtol = cf_eps(GGML_TYPE_F32) * (16.0 + 2.0 * sqrt((double) a.ne[0]));
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                double sq = 0;
                for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                    sq += cf_at(&a, i0, i1, i2, i3) * cf_at(&a, i0, i1, i2, i3);
                }
                /* x / max(|x|, eps), as upstream */
                const double inv = 1.0 / fmax(sqrt(sq), eps);
                for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                    const double w = cf_at(&a, i0, i1, i2, i3) * inv;
                    cf_put(r, i0, i1, i2, i3, w, rtol * (fabs(w) + 1.0));
                }
            }
        }
    }
}

/* channels (dim 2) in groups of ceil(ne2 / n_groups), each group of each dim-3 slice normalised */
static void cf_ref_group_norm(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t n_groups = r->c->ip[0];
    const double  eps      = (double) r->c->fp[0];
    const int64_t per      = (a.ne[2] + n_groups - 1) / n_groups;
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t c0 = 0; c0 < a.ne[2]; c0 += per) {
            const int64_t c1 = c0 + per < a.ne[2] ? c0 + per : a.ne[2];
            const double  n  = (double) ((c1 - c0) * a.ne[0] * a.ne[1]);
            double sum = 0, sq = 0;
            for (int64_t i2 = c0; i2 < c1; i2++) {
                for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                    for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                        sum += cf_at(&a, i0, i1, i2, i3);
                    }
                }
            }
            const double mean = sum / n;
            for (int64_t i2 = c0; i2 < c1; i2++) {
                for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                    for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                        const double d = cf_at(&a, i0, i1, i2, i3) - mean;
                        sq += d * d;
                    }
                }
            }
            const double inv  = 1.0 / sqrt(sq / n + eps);
            const double rtol = cf_eps(GGML_TYPE_F32) * (16.0 + 2.0 * sqrt(n));
            for (int64_t i2 = c0; i2 < c1; i2++) {
                for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                    for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                        const double w = (cf_at(&a, i0, i1, i2, i3) - mean) * inv;
                        cf_put(r, i0, i1, i2, i3, w, rtol * (fabs(w) + 1.0));
                    }
                }
            }
        }
    }
}

/* want[i0, i1, i2, i3] = sum over k of a[i0, k, i2 / r2, i3 / r3] * b[i1, k, i2, i3] */
static void cf_ref_out_prod(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int64_t K = a.ne[1];
    const int64_t r2 = x.ne[2] / a.ne[2], r3 = x.ne[3] / a.ne[3];
    /* as for mul_mat: F16/BF16 a allows one rounding of its type per product */
    const double prod_ulps = a.type == GGML_TYPE_F32 ? CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) : 4.0 * cf_eps(a.type);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        for (int64_t k = 0; k < K; k++) {
            cf_sum_add(&acc, cf_at(&a, i0, k, i2 / r2, i3 / r3) * cf_at(&x, i1, k, i2, i3));
        }
        cf_put(r, i0, i1, i2, i3, acc.s, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) + prod_ulps * sqrt(acc.p2));
    }
}

/* ip: left pads, nb: right pads; zeros outside a */
static void cf_ref_pad(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int * lp = r->c->ip;
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const int64_t j0 = i0 - lp[0], j1 = i1 - lp[1], j2 = i2 - lp[2], j3 = i3 - lp[3];
        const bool in = j0 >= 0 && j0 < a.ne[0] && j1 >= 0 && j1 < a.ne[1] && j2 >= 0 && j2 < a.ne[2] && j3 >= 0 &&
                        j3 < a.ne[3];
        cf_put(r, i0, i1, i2, i3, in ? cf_at(&a, j0, j1, j2, j3) : 0.0, 0.0);
    }
}

static void cf_ref_arange(struct cf_ref * r) {
    const double start = r->c->fp[0], step = r->c->fp[2];
    for (int64_t i = 0; i < r->ne[0]; i++) {
        const double w = start + step * (double) i;
        /* start + step * i in float: two roundings */
        cf_put(r, i, 0, 0, 0, w, 2.0 * cf_eps(GGML_TYPE_F32) * (fabs(start) + fabs(step * (double) i)));
    }
}

/* row i: cos(t f_j) for j < dim / 2, then sin(t f_j), then 0 for an odd dim; f_j = period^(-j / half) */
static void cf_ref_timestep(struct cf_ref * r) {
    const struct cf_acc t = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t dim = r->c->ip[0], half = dim / 2;
    const double lmax = log((double) r->c->ip[1]);
    for (int64_t i = 0; i < r->ne[1]; i++) {
        const double ts = cf_at(&t, i, 0, 0, 0);
        for (int64_t j = 0; j < half; j++) {
            const double arg = ts * exp(-lmax * (double) j / (double) half);
            /* an argument computed in float may be off by a few of its ulps */
            const double tol = cf_eps(GGML_TYPE_F32) * (4.0 * fabs(arg) + 2.0);
            cf_put(r, j, i, 0, 0, cos(arg), tol);
            cf_put(r, j + half, i, 0, 0, sin(arg), tol);
        }
        if (dim % 2) {
            cf_put(r, dim - 1, i, 0, 0, 0.0, 0.0);
        }
    }
}

static void cf_ref_count_equal(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    int64_t n = 0;
    CF_FOR4(a.ne, i0, i1, i2, i3) {
        n += cf_at(&a, i0, i1, i2, i3) == cf_at(&x, i0, i1, i2, i3);
    }
    cf_put(r, 0, 0, 0, 0, (double) n, 0.0);
}

static void cf_ref_cumsum(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                struct cf_sum acc = { 0, 0, 0 };
                for (int64_t i0 = 0; i0 < a.ne[0]; i0++) {
                    cf_sum_add(&acc, cf_at(&a, i0, i1, i2, i3));
                    cf_put(r, i0, i1, i2, i3, acc.s, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32));
                }
            }
        }
    }
}

/*
 * argsort and top_k: the stable order (equal values by index; NaN largest). top_k takes the
 * first k of the descending order: upstream leaves its order open, ggmlx returns it sorted, so a
 * backend returning another order would need a set comparison here.
 */
static bool cf_sort_before(double x, int64_t ix, double y, int64_t iy, bool desc) {
    if (isnan(x) || isnan(y)) {
        return isnan(x) && isnan(y) ? ix < iy : desc ? isnan(x) : isnan(y);
    }
    if (x != y) {
        return desc ? x > y : x < y;
    }
    return ix < iy;
}

static void cf_ref_sort(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const bool desc = r->c->op == CF_OP_TOP_K || r->c->ip[0] == GGML_SORT_ORDER_DESC;
    const int64_t n = a.ne[0];
    int64_t * idx = malloc((size_t) (n > 0 ? n : 1) * sizeof *idx);
    int64_t * tmp = malloc((size_t) (n > 0 ? n : 1) * sizeof *tmp);
    double  * v   = malloc((size_t) (n > 0 ? n : 1) * sizeof *v);
    if (idx == NULL || tmp == NULL || v == NULL) {
        r->failed = true;
        free(idx), free(tmp), free(v);
        return;
    }
    for (int64_t i3 = 0; i3 < a.ne[3]; i3++) {
        for (int64_t i2 = 0; i2 < a.ne[2]; i2++) {
            for (int64_t i1 = 0; i1 < a.ne[1]; i1++) {
                for (int64_t i = 0; i < n; i++) {
                    v[i] = cf_at(&a, i, i1, i2, i3);
                    idx[i] = i;
                }
                /* bottom-up merge sort */
                for (int64_t w = 1; w < n; w *= 2) {
                    for (int64_t lo = 0; lo < n; lo += 2 * w) {
                        const int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                        int64_t i = lo, j = mid, o = lo;
                        while (i < mid && j < hi) {
                            tmp[o++] = cf_sort_before(v[idx[j]], idx[j], v[idx[i]], idx[i], desc) ? idx[j++] : idx[i++];
                        }
                        while (i < mid) {
                            tmp[o++] = idx[i++];
                        }
                        while (j < hi) {
                            tmp[o++] = idx[j++];
                        }
                    }
                    memcpy(idx, tmp, (size_t) n * sizeof *idx);
                }
                for (int64_t i = 0; i < r->ne[0]; i++) {
                    cf_put(r, i, i1, i2, i3, (double) idx[i], 0.0);
                }
            }
        }
    }
    free(idx), free(tmp), free(v);
}

/* column i0 of the result is column |i0 - p0| of a, reflected again past its last column */
static void cf_ref_pad_reflect(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t p0 = r->c->ip[0], n = a.ne[0];
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        int64_t j = i0 - p0;
        j = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
        cf_put(r, i0, i1, i2, i3, cf_at(&a, j, i1, i2, i3), 0.0);
    }
}

/* ---- convolution and images ---------------------------------------------------------------- */

/* the data element a kernel tap reads, or 0 in the padding */
static double cf_tap(const struct cf_acc * x, int64_t iw, int64_t ih, int64_t ic, int64_t n) {
    return iw >= 0 && iw < x->ne[0] && ih >= 0 && ih < x->ne[1] ? cf_at(x, iw, ih, ic, n) : 0.0;
}

/* column (ic*KH + kh)*KW + kw of row (ow, oh, n) is data (ow*s + kw*d - p0, oh*s + kh*d - p1, ic, n) */
static void cf_ref_im2col(struct cf_ref * r) {
    const struct cf_acc k = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int * ip = r->c->ip;
    const int64_t KW = k.ne[0], KH = k.ne[1];
    CF_FOR4(r->ne, i0, ow, oh, n) {
        const int64_t kw = i0 % KW, kh = (i0 / KW) % KH, ic = i0 / (KW * KH);
        const double v = cf_tap(&x, ow * ip[0] + kw * ip[3] - ip[1], oh * ip[0] + kh * ip[3] - ip[2], ic, n);
        cf_put(r, i0, ow, oh, n, cf_round_to(r->b->out->type, v), 0.0);
    }
}

/* direct loops; the depthwise one reads kernel (kw, kh, 0, c) for channel c only */
static void cf_ref_conv_2d(struct cf_ref * r) {
    const struct cf_acc k = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int * ip = r->c->ip;
    const bool dw = r->c->op == CF_OP_CONV_2D_DW_DIRECT;
    CF_FOR4(r->ne, ow, oh, oc, n) {
        struct cf_sum acc = { 0, 0, 0 };
        const int64_t ic0 = dw ? oc : 0, ic1 = dw ? oc + 1 : k.ne[2];
        for (int64_t ic = ic0; ic < ic1; ic++) {
            for (int64_t kh = 0; kh < k.ne[1]; kh++) {
                for (int64_t kw = 0; kw < k.ne[0]; kw++) {
                    const double v = cf_tap(&x, ow * ip[0] + kw * ip[3] - ip[1], oh * ip[0] + kh * ip[3] - ip[2], ic, n);
                    cf_sum_add(&acc, cf_at(&k, kw, kh, dw ? 0 : ic, oc) * v);
                }
            }
        }
        cf_put(r, ow, oh, oc, n, acc.s, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) + CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) * sqrt(acc.p2));
    }
}

/* MAX of the window inside the data; AVG sums it and divides by k0*k1 (the padding counts as zeros) */
static void cf_ref_pool_2d(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int * ip = r->c->ip;
    const int64_t p0 = (int64_t) r->c->fp[0], p1 = (int64_t) r->c->fp[1];
    CF_FOR4(r->ne, ox, oy, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        double mx = -FLT_MAX;
        for (int64_t y = oy * ip[3] - p1; y < oy * ip[3] - p1 + ip[2]; y++) {
            for (int64_t xx = ox * ip[3] - p0; xx < ox * ip[3] - p0 + ip[1]; xx++) {
                if (xx >= 0 && xx < a.ne[0] && y >= 0 && y < a.ne[1]) {
                    const double v = cf_at(&a, xx, y, i2, i3);
                    mx = v > mx ? v : mx;
                    cf_sum_add(&acc, v);
                }
            }
        }
        if (ip[0] == GGML_OP_POOL_MAX) {
            cf_put(r, ox, oy, i2, i3, mx, 0.0);
        } else {
            const double w = acc.s / (ip[1] * ip[2]);
            cf_put(r, ox, oy, i2, i3, w, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) / (ip[1] * ip[2]) + cf_eps(GGML_TYPE_F32) * fabs(w));
        }
    }
}

static double cf_px(const struct cf_acc * a, int64_t x, int64_t y, int64_t i2, int64_t i3) {
    x = x < 0 ? 0 : x >= a->ne[0] ? a->ne[0] - 1 : x;
    y = y < 0 ? 0 : y >= a->ne[1] ? a->ne[1] - 1 : y;
    return cf_at(a, x, y, i2, i3);
}

static double cf_cubic(double t) {
    const double A = -0.75; /* PyTorch's */
    t = fabs(t);
    return t <= 1 ? ((A + 2) * t - (A + 3)) * t * t + 1 : t < 2 ? ((A * t - 5 * A) * t + 8 * A) * t - 4 * A : 0;
}

/*
 * Resampling as upstream documents it: sample centres at (i + 0.5) / scale - 0.5 (at i / scale
 * with align-corners, the scale then (n_out - 1) / (n_in - 1)), edges clamped; bicubic is Keys'
 * kernel with a = -0.75; antialiased bilinear a triangle filter widened by 1 / scale when
 * shrinking. Positions are computed in float by a backend, so each value may be off by a few
 * float ulps of the position times the largest step between neighbours.
 */
static void cf_ref_upscale(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const uint32_t mode = (uint32_t) r->c->ip[0], m = mode & 0xFF;
    const int64_t n0 = a.ne[0], n1 = a.ne[1];
    double sf0 = (double) r->ne[0] / n0, sf1 = (double) r->ne[1] / n1, off = 0.5;
    if (mode & GGML_SCALE_FLAG_ALIGN_CORNERS) {
        off = 0;
        sf0 = r->ne[0] > 1 && n0 > 1 ? (double) (r->ne[0] - 1) / (n0 - 1) : sf0;
        sf1 = r->ne[1] > 1 && n1 > 1 ? (double) (r->ne[1] - 1) / (n1 - 1) : sf1;
    }
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const int64_t j2 = i2 * a.ne[2] / r->ne[2], j3 = i3 * a.ne[3] / r->ne[3];
        double v = 0, mag = 0;
        if (m == GGML_SCALE_MODE_NEAREST) {
            v = cf_at(&a, (int64_t) floor(i0 / sf0), (int64_t) floor(i1 / sf1), j2, j3);
        } else if (mode & GGML_SCALE_FLAG_ANTIALIAS) {
            const double s0 = fmax(1, 1 / sf0), s1 = fmax(1, 1 / sf1);
            const double x = (i0 + off) / sf0, y = (i1 + off) / sf1;
            double tot = 0;
            for (int64_t sy = 0; sy < n1; sy++) {
                const double wy = fmax(0, 1 - fabs((sy - y + off) / s1));
                for (int64_t sx = 0; sx < n0 && wy > 0; sx++) {
                    const double w = fmax(0, 1 - fabs((sx - x + off) / s0)) * wy;
                    v += w * cf_at(&a, sx, sy, j2, j3);
                    mag += w * fabs(cf_at(&a, sx, sy, j2, j3));
                    tot += w;
                }
            }
            v = tot > 0 ? v / tot : v;
            mag = tot > 0 ? mag / tot : mag;
        } else {
            const double x = (i0 + off) / sf0 - off, y = (i1 + off) / sf1 - off;
            const int64_t x0 = (int64_t) floor(x), y0 = (int64_t) floor(y);
            if (m == GGML_SCALE_MODE_BILINEAR) {
                const int64_t cx = x0 < 0 ? 0 : x0 > n0 - 1 ? n0 - 1 : x0, cy = y0 < 0 ? 0 : y0 > n1 - 1 ? n1 - 1 : y0;
                const double dx = fmin(fmax(x - cx, 0), 1), dy = fmin(fmax(y - cy, 0), 1);
                const double q[4] = { cf_px(&a, cx, cy, j2, j3), cf_px(&a, x0 + 1, cy, j2, j3),
                                      cf_px(&a, cx, y0 + 1, j2, j3), cf_px(&a, x0 + 1, y0 + 1, j2, j3) };
                v = q[0] * (1 - dx) * (1 - dy) + q[1] * dx * (1 - dy) + q[2] * (1 - dx) * dy + q[3] * dx * dy;
                mag = fabs(q[0]) + fabs(q[1]) + fabs(q[2]) + fabs(q[3]);
            } else {
                const double dx = x - x0, dy = y - y0;
                for (int j = -1; j <= 2; j++) {
                    for (int i = -1; i <= 2; i++) {
                        const double q = cf_px(&a, x0 + i, y0 + j, j2, j3);
                        v += q * cf_cubic(dx - i) * cf_cubic(dy - j);
                        mag += fabs(q) * 1.5;
                    }
                }
            }
        }
        const double pos = (double) (r->ne[0] > r->ne[1] ? r->ne[0] : r->ne[1]) + n0 + n1;
        cf_put(r, i0, i1, i2, i3, v, m == GGML_SCALE_MODE_NEAREST ? 0.0 : CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) * (pos + 1) * mag);
    }
}

/* MAX of the window inside the data; AVG divides by the elements inside (the 1D pool does not count padding) */
static void cf_ref_pool_1d(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int * ip = r->c->ip;
    CF_FOR4(r->ne, ow, i1, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        double mx = -FLT_MAX;
        int64_t n = 0;
        for (int64_t j = ow * ip[2] - ip[3]; j < ow * ip[2] - ip[3] + ip[1]; j++) {
            if (j >= 0 && j < a.ne[0]) {
                const double v = cf_at(&a, j, i1, i2, i3);
                mx = v > mx ? v : mx;
                cf_sum_add(&acc, v);
                n++;
            }
        }
        const double w = ip[0] == GGML_OP_POOL_MAX ? mx : n > 0 ? acc.s / (double) n : 0.0;
        cf_put(r, ow, i1, i2, i3, w, ip[0] == GGML_OP_POOL_MAX ? 0.0 : cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) + cf_eps(GGML_TYPE_F32) * fabs(w));
    }
}

/* output (x*s + kx, y*s + ky, oc, n) gathers kernel (kx, ky, oc, ic) * data (x, y, ic, n) over ic, x, y */
static void cf_ref_conv_transpose_2d(struct cf_ref * r) {
    const struct cf_acc k = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc x = cf_acc_of(r->b, r->b->in[1], false);
    const int64_t st = r->c->ip[0];
    CF_FOR4(r->ne, ox, oy, oc, n) {
        struct cf_sum acc = { 0, 0, 0 };
        for (int64_t ky = oy % st; ky < k.ne[1] && ky <= oy; ky += st) {
            const int64_t y = (oy - ky) / st;
            for (int64_t kx = ox % st; y < x.ne[1] && kx < k.ne[0] && kx <= ox; kx += st) {
                const int64_t xx = (ox - kx) / st;
                for (int64_t ic = 0; xx < x.ne[0] && ic < k.ne[3]; ic++) {
                    cf_sum_add(&acc, cf_at(&k, kx, ky, oc, ic) * cf_at(&x, xx, y, ic, n));
                }
            }
        }
        cf_put(r, ox, oy, oc, n, acc.s, cf_sum_tol(&acc, acc.s, GGML_TYPE_F32) + CF_SUM_ULPS * cf_eps(GGML_TYPE_F32) * sqrt(acc.p2));
    }
}

/* output (t, oc) sums the columns (oc*K + k, t_in) with t_in*s + k == t + p, in the columns' type */
static void cf_ref_col2im_1d(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t s0 = r->c->ip[0], oc_n = r->c->ip[1], p0 = r->c->ip[2], K = a.ne[0] / oc_n;
    const enum ggml_type ot = r->b->out->type;
    CF_FOR4(r->ne, t, oc, i2, i3) {
        struct cf_sum acc = { 0, 0, 0 };
        for (int64_t ti = 0; ti < a.ne[1]; ti++) {
            const int64_t k = t + p0 - ti * s0;
            if (k >= 0 && k < K) {
                cf_sum_add(&acc, cf_at(&a, oc * K + k, ti, 0, 0));
            }
        }
        cf_put(r, t, oc, i2, i3, acc.s, cf_sum_tol(&acc, acc.s, ot));
    }
}

/* window (px, py) = py*npx + px holds data (px*w + x, py*w + y), zeros past the data */
static void cf_ref_win_part(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t w = r->c->ip[0], npx = (a.ne[1] + w - 1) / w;
    CF_FOR4(r->ne, c, x, y, win) {
        const int64_t sx = (win % npx) * w + x, sy = (win / npx) * w + y;
        cf_put(r, c, x, y, win, sx < a.ne[1] && sy < a.ne[2] ? cf_at(&a, c, sx, sy, 0) : 0.0, 0.0);
    }
}

static void cf_ref_get_rel_pos(struct cf_ref * r) {
    const struct cf_acc a = cf_acc_of(r->b, r->b->in[0], false);
    const int64_t kh = r->ne[1];
    CF_FOR4(r->ne, c, k, q, i3) {
        cf_put(r, c, k, q, i3, cf_at(&a, c, kh - 1 - k + q, 0, 0), 0.0);
    }
}

/* a (kh*W + kw, h + H*q, b) + ph (kh, h, q, b) + pw (kw, h, q, b) */
static void cf_ref_add_rel_pos(struct cf_ref * r) {
    const struct cf_acc a  = cf_acc_of(r->b, r->b->in[0], false);
    const struct cf_acc pw = cf_acc_of(r->b, r->b->in[1], false);
    const struct cf_acc ph = cf_acc_of(r->b, r->b->in[2], false);
    const int64_t W = pw.ne[0], H = pw.ne[1];
    const double rtol = cf_rtol(2, GGML_TYPE_F32);
    CF_FOR4(r->ne, i0, i1, i2, i3) {
        const double v0 = cf_at(&a, i0, i1, i2, i3), v1 = cf_at(&ph, i0 / W, i1 % H, i1 / H, i2),
                     v2 = cf_at(&pw, i0 % W, i1 % H, i1 / H, i2);
        cf_put(r, i0, i1, i2, i3, v0 + v1 + v2, rtol * (fabs(v0) + fabs(v1) + fabs(v2)));
    }
}

/* fills r->want and r->tol; sets r->failed when the reference could not be computed */
static void cf_reference(struct cf_ref * r) {
    switch (r->c->op) {
    case CF_OP_DUP:
    case CF_OP_CPY:
    case CF_OP_CONT: cf_ref_copy(r); break;
    case CF_OP_ADD:
    case CF_OP_SUB:
    case CF_OP_MUL:
    case CF_OP_DIV: cf_ref_binary(r); break;
    case CF_OP_SCALE:
    case CF_OP_SQR:
    case CF_OP_SQRT:
    case CF_OP_UNARY:
    case CF_OP_LOG:
    case CF_OP_SIN:
    case CF_OP_COS:
    case CF_OP_CLAMP:
    case CF_OP_LEAKY_RELU: cf_ref_elementwise(r); break;
    case CF_OP_ADD1: cf_ref_add1(r); break;
    case CF_OP_GLU: cf_ref_glu(r); break;
    case CF_OP_SUM:
    case CF_OP_SUM_ROWS:
    case CF_OP_MEAN:
    case CF_OP_ARGMAX: cf_ref_reduce(r); break;
    case CF_OP_REPEAT: cf_ref_repeat(r); break;
    case CF_OP_CONCAT: cf_ref_concat(r); break;
    case CF_OP_NORM:
    case CF_OP_RMS_NORM: cf_ref_norm(r); break;
    case CF_OP_MUL_MAT: cf_ref_mul_mat(r); break;
    case CF_OP_GET_ROWS: cf_ref_get_rows(r); break;
    case CF_OP_SET_ROWS: cf_ref_set_rows(r); break;
    case CF_OP_DIAG_MASK_INF: cf_ref_diag_mask(r); break;
    case CF_OP_SOFT_MAX:
    case CF_OP_SOFT_MAX_EXT: cf_ref_soft_max(r); break;
    case CF_OP_ROPE: cf_ref_rope(r); break;
    case CF_OP_L2_NORM: cf_ref_l2_norm(r); break;
    case CF_OP_GROUP_NORM: cf_ref_group_norm(r); break;
    case CF_OP_OUT_PROD: cf_ref_out_prod(r); break;
    case CF_OP_DIAG_MASK_ZERO: cf_ref_diag_mask(r); break;
    case CF_OP_PAD: cf_ref_pad(r); break;
    case CF_OP_ARANGE: cf_ref_arange(r); break;
    case CF_OP_TIMESTEP_EMB: cf_ref_timestep(r); break;
    case CF_OP_COUNT_EQUAL: cf_ref_count_equal(r); break;
    case CF_OP_CUMSUM: cf_ref_cumsum(r); break;
    case CF_OP_ARGSORT:
    case CF_OP_TOP_K: cf_ref_sort(r); break;
    case CF_OP_PAD_REFLECT_1D: cf_ref_pad_reflect(r); break;
    case CF_OP_IM2COL: cf_ref_im2col(r); break;
    case CF_OP_CONV_2D_DIRECT:
    case CF_OP_CONV_2D_DW_DIRECT: cf_ref_conv_2d(r); break;
    case CF_OP_POOL_2D: cf_ref_pool_2d(r); break;
    case CF_OP_UPSCALE: cf_ref_upscale(r); break;
    case CF_OP_POOL_1D: cf_ref_pool_1d(r); break;
    case CF_OP_CONV_TRANSPOSE_2D: cf_ref_conv_transpose_2d(r); break;
    case CF_OP_COL2IM_1D: cf_ref_col2im_1d(r); break;
    case CF_OP_WIN_PART: cf_ref_win_part(r); break;
    case CF_OP_GET_REL_POS: cf_ref_get_rel_pos(r); break;
    case CF_OP_ADD_REL_POS: cf_ref_add_rel_pos(r); break;
    default: r->failed = true; break;
    }
}

#endif /* GGMLX_CF_REF_H */
