/*
 * backward.c -- automatic differentiation: ggml_build_backward_expand appends to a forward graph
 * the nodes that compute the gradient of its loss with respect to every parameter.
 *
 * The graph keeps, per slot of its hash set, the tensor holding a node's gradient so far and, for
 * parameters and losses, an accumulator the gradient is added into in place (so that several
 * evaluations accumulate before an optimizer step). Nodes are visited from the last to the first,
 * so a node's gradient is complete when its sources' gradients are built from it.
 *
 * Nothing here aborts: an op without a gradient rule, a graph without parameters or loss, a
 * parameter of a type that cannot carry a gradient each fail the graph with a message naming the
 * node, and computing a failed graph returns an error.
 */
#include "ggml-impl.h"

#include <stdlib.h>

struct bwd {
    struct ggml_context * ctx;
    struct ggml_cgraph  * g;
    const bool          * needed; /* per hash slot: the tensor's gradient is wanted */
    bool                  failed;
};

static void bwd_fail(struct bwd * b, const char * fmt, const char * name, const char * extra) {
    if (!b->failed) {
        ggmlx_error("ggml_build_backward_expand", fmt, name, extra);
    }
    b->failed    = true;
    b->g->failed = true;
}

/* the slot of t in the graph's hash set, or GGMLX_HASH_FULL when t is not in the graph */
static size_t slot_of(const struct ggml_cgraph * g, const struct ggml_tensor * t) {
    if (t == NULL || !ggmlx_hash_contains(&g->visited, t)) {
        return GGMLX_HASH_FULL;
    }
    return ggmlx_hash_find(&g->visited, t);
}

static bool wants_grad(const struct bwd * b, const struct ggml_tensor * t) {
    const size_t i = slot_of(b->g, t);
    return i != GGMLX_HASH_FULL && b->needed[i];
}

/* Records new as part of src's gradient; its nodes join the graph. */
static void set_grad(struct bwd * b, size_t i, struct ggml_tensor * grad) {
    if (grad == NULL) { /* a constructor refused: its message is the first error */
        b->failed    = true;
        b->g->failed = true;
        return;
    }
    b->g->grads[i] = grad;
    ggml_format_name(grad, "grad for %s", b->g->visited.keys[i]->name);
    ggml_build_forward_expand(b->g, grad);
}

/* gradient of src += t (in place into its accumulator, if it has one) */
static void add_or_set(struct bwd * b, const struct ggml_tensor * src, struct ggml_tensor * t) {
    const size_t i = slot_of(b->g, src);
    struct ggml_tensor * cur = b->g->grads[i];
    if (cur == NULL || t == NULL) {
        set_grad(b, i, t);
        return;
    }
    set_grad(b, i, b->g->grad_accs[i] ? ggml_add_inplace(b->ctx, cur, t) : ggml_add(b->ctx, cur, t));
}

/* gradient of src -= t */
static void sub_or_set(struct bwd * b, const struct ggml_tensor * src, struct ggml_tensor * t) {
    const size_t i = slot_of(b->g, src);
    struct ggml_tensor * cur = b->g->grads[i];
    if (t == NULL) {
        set_grad(b, i, NULL);
        return;
    }
    if (cur == NULL) {
        set_grad(b, i, ggml_neg(b->ctx, t));
        return;
    }
    set_grad(b, i, b->g->grad_accs[i] ? ggml_sub_inplace(b->ctx, cur, t) : ggml_sub(b->ctx, cur, t));
}

/* gradient of src += t placed at (nb1, nb2, nb3, offset) inside src's shape (the view's place) */
static void acc_or_set(struct bwd * b, struct ggml_tensor * src, struct ggml_tensor * t, size_t nb1, size_t nb2,
                       size_t nb3, size_t offset) {
    const size_t i = slot_of(b->g, src);
    struct ggml_tensor * cur = b->g->grads[i];
    if (t == NULL) {
        set_grad(b, i, NULL);
        return;
    }
    if (cur == NULL) {
        set_grad(b, i, ggml_acc(b->ctx, ggml_scale(b->ctx, src, 0.0f), t, nb1, nb2, nb3, offset));
        return;
    }
    set_grad(b, i, b->g->grad_accs[i] ? ggml_acc_inplace(b->ctx, cur, t, nb1, nb2, nb3, offset)
                                      : ggml_acc(b->ctx, cur, t, nb1, nb2, nb3, offset));
}

/* t broadcast to src's shape (dims where t is 1 are repeated) */
static struct ggml_tensor * spread(struct bwd * b, struct ggml_tensor * t, struct ggml_tensor * like) {
    return t == NULL || ggml_are_same_shape(t, like) ? t : ggml_repeat(b->ctx, t, like);
}

/* t summed down to small's shape (the reverse of a broadcast), or t itself when shapes agree */
static struct ggml_tensor * gather(struct bwd * b, struct ggml_tensor * t, struct ggml_tensor * small) {
    return t == NULL || ggml_are_same_shape(t, small) ? t : ggml_repeat_back(b->ctx, t, small);
}

static void backward_mul_mat(struct bwd * b, struct ggml_tensor * node, struct ggml_tensor * grad) {
    struct ggml_tensor * a = node->src[0], * x = node->src[1];
    if (wants_grad(b, a)) {
        /* d a = x (outer) grad, summed over the batches a was broadcast to */
        struct ggml_tensor * t = ggml_out_prod(b->ctx, x, grad);
        if (t != NULL && !ggml_are_same_shape(t, a)) {
            if (t->ne[3] != 1 || t->ne[2] % a->ne[2] != 0) {
                bwd_fail(b, "node '%s': %s", node->name, "broadcasting along dim 3 has no gradient rule");
                return;
            }
            const int64_t nr2 = t->ne[2] / a->ne[2];
            t = ggml_view_4d(b->ctx, t, a->ne[0], a->ne[1], a->ne[2], nr2, t->nb[1], t->nb[2] * (size_t) nr2,
                             t->nb[2], 0);
            t = ggml_repeat_back(b->ctx, t, a);
        }
        add_or_set(b, a, t);
    }
    if (wants_grad(b, x)) {
        /* d x = a^T grad, as an outer product so the (usually larger) a is not transposed */
        add_or_set(b, x, ggml_out_prod(b->ctx, a, ggml_transpose(b->ctx, grad)));
    }
}

static void backward_unary(struct bwd * b, struct ggml_tensor * node, struct ggml_tensor * grad) {
    struct ggml_context * ctx = b->ctx;
    struct ggml_tensor *  x   = node->src[0];
    if (!wants_grad(b, x)) {
        return;
    }
    switch (ggml_get_unary_op(node)) {
    case GGML_UNARY_OP_ABS:      add_or_set(b, x, ggml_mul(ctx, ggml_sgn(ctx, x), grad)); break;
    case GGML_UNARY_OP_SGN:
    case GGML_UNARY_OP_STEP:     break; /* piecewise constant */
    case GGML_UNARY_OP_NEG:      sub_or_set(b, x, grad); break;
    case GGML_UNARY_OP_RELU:     add_or_set(b, x, ggml_mul(ctx, ggml_step(ctx, x), grad)); break;
    case GGML_UNARY_OP_SILU:     add_or_set(b, x, ggml_silu_back(ctx, grad, x)); break;
    case GGML_UNARY_OP_EXP:      add_or_set(b, x, ggml_mul(ctx, node, grad)); break;
    case GGML_UNARY_OP_EXPM1:    add_or_set(b, x, ggml_mul(ctx, grad, ggml_exp(ctx, x))); break;
    case GGML_UNARY_OP_SOFTPLUS: add_or_set(b, x, ggml_mul(ctx, grad, ggml_sigmoid(ctx, x))); break;
    default:
        bwd_fail(b, "node '%s': unary op %s has no gradient rule", node->name, ggml_unary_op_name(ggml_get_unary_op(node)));
    }
}

static void backward_rope(struct bwd * b, struct ggml_tensor * node, struct ggml_tensor * grad) {
    if (node->src[2] != NULL && wants_grad(b, node->src[2])) {
        bwd_fail(b, "node '%s': %s", node->name, "the frequency factors of rope have no gradient");
        return;
    }
    if (!wants_grad(b, node->src[0])) {
        return;
    }
    const int32_t * p = node->op_params;
    const int mode = p[2];
    const float fb = ggmlx_get_op_params_f32(node, 5), fs = ggmlx_get_op_params_f32(node, 6),
                ef = ggmlx_get_op_params_f32(node, 7), af = ggmlx_get_op_params_f32(node, 8),
                bf = ggmlx_get_op_params_f32(node, 9), bs = ggmlx_get_op_params_f32(node, 10);
    if (mode & GGML_ROPE_TYPE_MROPE) {
        int sections[4] = { p[11], p[12], p[13], p[14] };
        add_or_set(b, node->src[0], ggml_rope_multi_back(b->ctx, grad, node->src[1], node->src[2], p[1], sections,
                                                         mode, p[4], fb, fs, ef, af, bf, bs));
        return;
    }
    add_or_set(b, node->src[0],
               ggml_rope_ext_back(b->ctx, grad, node->src[1], node->src[2], p[1], mode, p[4], fb, fs, ef, af, bf, bs));
}

static void backward_permute(struct bwd * b, struct ggml_tensor * node, struct ggml_tensor * grad) {
    int back[4] = { 0, 1, 2, 3 };
    for (int i = 0; i < 4; i++) {
        back[node->op_params[i] & 3] = i;
    }
    add_or_set(b, node->src[0], ggml_permute(b->ctx, grad, back[0], back[1], back[2], back[3]));
}

static void compute_backward(struct bwd * b, struct ggml_tensor * node) {
    struct ggml_context * ctx  = b->ctx;
    struct ggml_tensor *  grad = ggml_graph_get_grad(b->g, node);
    if (grad == NULL) {
        return;
    }
    struct ggml_tensor * s0 = node->src[0], * s1 = node->src[1];
    const bool g0 = wants_grad(b, s0), g1 = wants_grad(b, s1);

    switch (node->op) {
    case GGML_OP_NONE:
        break;
    case GGML_OP_DUP:
        if (g0) add_or_set(b, s0, grad);
        break;
    case GGML_OP_ADD:
        if (g0) add_or_set(b, s0, grad);
        if (g1) add_or_set(b, s1, gather(b, grad, s1));
        break;
    case GGML_OP_ADD1:
        if (g0) add_or_set(b, s0, grad);
        if (g1) add_or_set(b, s1, ggml_sum(ctx, grad));
        break;
    case GGML_OP_SUB:
        if (g0) add_or_set(b, s0, grad);
        if (g1) sub_or_set(b, s1, gather(b, grad, s1));
        break;
    case GGML_OP_MUL:
        if (g0) add_or_set(b, s0, ggml_mul(ctx, grad, s1));
        if (g1) add_or_set(b, s1, gather(b, ggml_mul(ctx, s0, grad), s1));
        break;
    case GGML_OP_DIV:
        if (g0) add_or_set(b, s0, ggml_div(ctx, grad, s1));
        if (g1) sub_or_set(b, s1, gather(b, ggml_mul(ctx, grad, ggml_div(ctx, node, s1)), s1));
        break;
    case GGML_OP_SQR:
        if (g0) add_or_set(b, s0, ggml_scale(ctx, ggml_mul(ctx, s0, grad), 2.0f));
        break;
    case GGML_OP_SQRT:
        if (g0) add_or_set(b, s0, ggml_scale(ctx, ggml_div(ctx, grad, node), 0.5f));
        break;
    case GGML_OP_LOG:
        if (g0) add_or_set(b, s0, ggml_div(ctx, grad, s0));
        break;
    case GGML_OP_SIN:
        if (g0) add_or_set(b, s0, ggml_mul(ctx, grad, ggml_cos(ctx, s0)));
        break;
    case GGML_OP_COS:
        if (g0) sub_or_set(b, s0, ggml_mul(ctx, grad, ggml_sin(ctx, s0)));
        break;
    case GGML_OP_SUM:
    case GGML_OP_SUM_ROWS:
        if (g0) add_or_set(b, s0, spread(b, grad, s0));
        break;
    case GGML_OP_MEAN:
        if (g0) add_or_set(b, s0, spread(b, ggml_scale(ctx, grad, 1.0f / (float) s0->ne[0]), s0));
        break;
    case GGML_OP_REPEAT:
        if (g0) add_or_set(b, s0, gather(b, grad, s0));
        break;
    case GGML_OP_REPEAT_BACK:
        if (g0) add_or_set(b, s0, spread(b, grad, s0));
        break;
    case GGML_OP_RMS_NORM:
        if (g0) add_or_set(b, s0, ggml_rms_norm_back(ctx, grad, s0, ggmlx_get_op_params_f32(node, 0)));
        break;
    case GGML_OP_MUL_MAT:
        backward_mul_mat(b, node, grad);
        break;
    case GGML_OP_SCALE:
        /* a bias (op_params[1]) shifts the value, not its slope */
        if (g0) add_or_set(b, s0, ggml_scale(ctx, grad, ggmlx_get_op_params_f32(node, 0)));
        break;
    case GGML_OP_CPY: /* the destination is overwritten: only the source has a gradient */
        if (g0) add_or_set(b, s0, ggml_reshape(ctx, grad, s0));
        break;
    case GGML_OP_CONT:
        if (g0) add_or_set(b, s0, ggml_are_same_shape(node, s0) ? grad : ggml_reshape(ctx, grad, s0));
        break;
    case GGML_OP_RESHAPE:
        if (g0) add_or_set(b, s0, ggml_reshape(ctx, ggml_is_contiguous(grad) ? grad : ggml_cont(ctx, grad), s0));
        break;
    case GGML_OP_PERMUTE:
        if (g0) backward_permute(b, node, grad);
        break;
    case GGML_OP_VIEW:
        if (g0) {
            size_t offset;
            memcpy(&offset, node->op_params, sizeof offset);
            acc_or_set(b, s0, grad, node->nb[1], node->nb[2], node->nb[3], offset);
        }
        break;
    case GGML_OP_ACC:
    case GGML_OP_SET: {
        const size_t nb1 = (size_t) node->op_params[0], nb2 = (size_t) node->op_params[1],
                     nb3 = (size_t) node->op_params[2], offset = (size_t) node->op_params[3];
        if (!g0 && !g1) {
            break;
        }
        /* the part of the result where b landed */
        struct ggml_tensor * where = ggml_view_4d(ctx, grad, s1->ne[0], s1->ne[1], s1->ne[2], s1->ne[3], nb1, nb2, nb3,
                                                  offset);
        if (g0) {
            /* acc: a passes through everywhere; set: not where b overwrote it */
            add_or_set(b, s0, node->op == GGML_OP_ACC ? grad
                                                      : ggml_acc(ctx, grad, ggml_neg(ctx, where), nb1, nb2, nb3, offset));
        }
        if (g1) add_or_set(b, s1, ggml_reshape(ctx, ggml_cont(ctx, where), s1));
        break;
    }
    case GGML_OP_IM2COL:
        if (g1) {
            const int32_t * p = node->op_params;
            add_or_set(b, s1, ggml_im2col_back(ctx, grad, s0, s1->ne, p[0], p[1], p[2], p[3], p[4], p[5], p[6] == 1));
        }
        break;
    case GGML_OP_POOL_2D:
        if (g0) {
            const int32_t * p = node->op_params;
            add_or_set(b, s0, ggml_pool_2d_back(ctx, grad, s0, (enum ggml_op_pool) p[0], p[1], p[2], p[3], p[4],
                                                (float) p[5], (float) p[6]));
        }
        break;
    case GGML_OP_TRANSPOSE:
        if (g0) add_or_set(b, s0, ggml_transpose(ctx, grad));
        break;
    case GGML_OP_GET_ROWS:
        if (g0) add_or_set(b, s0, ggml_get_rows_back(ctx, grad, s1, s0));
        break;
    case GGML_OP_DIAG_MASK_INF:
    case GGML_OP_DIAG_MASK_ZERO:
        if (g0) add_or_set(b, s0, ggml_diag_mask_zero(ctx, grad, node->op_params[0]));
        break;
    case GGML_OP_SOFT_MAX:
        if (g1) {
            bwd_fail(b, "node '%s': %s", node->name, "the mask of soft_max has no gradient");
            return;
        }
        if (g0 && ggmlx_get_op_params_f32(node, 1) != 0.0f) {
            /* soft_max_ext_back builds it, but no backend computes ALiBi's backward pass */
            bwd_fail(b, "node '%s': %s", node->name, "soft_max with max_bias (ALiBi) has no gradient rule");
            return;
        }
        if (g0) {
            add_or_set(b, s0, ggml_soft_max_ext_back(ctx, grad, node, ggmlx_get_op_params_f32(node, 0),
                                                    ggmlx_get_op_params_f32(node, 1)));
        }
        break;
    case GGML_OP_ROPE:
        backward_rope(b, node, grad);
        break;
    case GGML_OP_UNARY:
        backward_unary(b, node, grad);
        break;
    case GGML_OP_GLU:
        if (ggml_get_glu_op(node) != GGML_GLU_OP_SWIGLU || s1 == NULL) {
            bwd_fail(b, "node '%s': %s", node->name, "only split swiglu (two sources) has a gradient rule among the GLUs");
            return;
        }
        if (g0) add_or_set(b, s0, ggml_silu_back(ctx, ggml_mul(ctx, grad, s1), s0));
        if (g1) add_or_set(b, s1, ggml_mul(ctx, ggml_silu(ctx, s0), grad));
        break;
    case GGML_OP_CROSS_ENTROPY_LOSS:
        if (g1) {
            bwd_fail(b, "node '%s': %s", node->name, "the labels of cross_entropy_loss have no gradient");
            return;
        }
        if (g0) add_or_set(b, s0, ggml_cross_entropy_loss_back(ctx, grad, s0, s1));
        break;
    default:
        bwd_fail(b, "node '%s': op %s has no gradient rule", node->name, ggml_op_name(node->op));
        return;
    }
    for (int j = 0; j < 2 && !b->failed; j++) {
        struct ggml_tensor * s = node->src[j];
        if (s != NULL && wants_grad(b, s)) {
            struct ggml_tensor * gs = ggml_graph_get_grad(b->g, s);
            if (gs != NULL && !ggml_are_same_shape(gs, s)) {
                bwd_fail(b, "node '%s': the gradient of a source has the wrong shape (%s)", node->name, GGMLX_SHAPE(gs));
            }
        }
    }
}

/* sources whose values cannot change the output's gradient (indices, positions, shape donors) */
static bool ignored_src(const struct ggml_tensor * node, int j) {
    switch (node->op) {
    case GGML_OP_CPY:
    case GGML_OP_GET_ROWS:
    case GGML_OP_GET_ROWS_BACK:
    case GGML_OP_ROPE:
        return j == 1;
    case GGML_OP_IM2COL:
    case GGML_OP_IM2COL_BACK:
        return j == 0;
    case GGML_OP_UNARY:
        return ggml_get_unary_op(node) == GGML_UNARY_OP_SGN || ggml_get_unary_op(node) == GGML_UNARY_OP_STEP;
    default:
        return false;
    }
}

static bool is_view_like(enum ggml_op op) {
    return op == GGML_OP_CPY || op == GGML_OP_VIEW || op == GGML_OP_RESHAPE || op == GGML_OP_PERMUTE ||
           op == GGML_OP_TRANSPOSE;
}

/* Marks the nodes whose gradient is wanted (parameters, losses and what depends on a parameter)
 * and gives parameters and losses their accumulators. false on a refused graph. */
static bool mark_needed(struct bwd * b, bool * needed, struct ggml_tensor ** grad_accs) {
    struct ggml_cgraph * g = b->g;
    for (int i = 0; i < g->n_nodes; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (node->type == GGML_TYPE_I32) {
            continue;
        }
        bool need = (node->flags & (GGML_TENSOR_FLAG_PARAM | GGML_TENSOR_FLAG_LOSS)) != 0;
        for (int j = 0; j < GGML_MAX_SRC && !need; j++) {
            const struct ggml_tensor * s = node->src[j];
            if (s == NULL || ignored_src(node, j) || !wants_grad(b, s)) {
                continue;
            }
            need = true;
        }
        if (!need) {
            continue;
        }
        if (node->type != GGML_TYPE_F32 && node->type != GGML_TYPE_F16) {
            bwd_fail(b, "node '%s' needs a gradient but is %s (only F32 and F16 carry one)", node->name,
                     ggml_type_name(node->type));
            return false;
        }
        if (node->view_src != NULL && !is_view_like(node->op)) {
            bwd_fail(b, "node '%s' (%s) is computed in place, which has no gradient rule", node->name,
                     ggml_op_name(node->op));
            return false;
        }
        const size_t k = slot_of(g, node);
        if (grad_accs != NULL && grad_accs[i] != NULL) {
            if (!ggml_are_same_shape(grad_accs[i], node)) {
                bwd_fail(b, "grad_accs entry for node '%s' has the wrong shape (%s)", node->name,
                         GGMLX_SHAPE(grad_accs[i]));
                return false;
            }
            g->grad_accs[k] = grad_accs[i];
            g->grads[k]     = grad_accs[i];
        } else if (node->flags & GGML_TENSOR_FLAG_LOSS) {
            struct ggml_tensor * acc = ggml_new_tensor(b->ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            if (acc == NULL) {
                bwd_fail(b, "node '%s': %s", node->name, "no memory for the loss's gradient");
                return false;
            }
            ggml_format_name(acc, "grad acc for %s", node->name);
            g->grad_accs[k] = acc;
            g->grads[k]     = acc;
        }
        needed[k] = true;
    }
    return true;
}

void ggml_build_backward_expand(struct ggml_context * ctx, struct ggml_cgraph * cgraph, struct ggml_tensor ** grad_accs) {
    if (ctx == NULL || cgraph == NULL) {
        ggmlx_error(__func__, "ctx or cgraph is NULL");
        return;
    }
    if (cgraph->is_view || cgraph->grads == NULL) {
        ggmlx_error(__func__, "the graph has no room for gradients (make it with ggml_new_graph_custom(..., true))");
        cgraph->failed = true;
        return;
    }
    if (cgraph->failed || ctx->failed) {
        ggmlx_error(__func__, "the graph or its context already failed (see the first error)");
        cgraph->failed = true;
        return;
    }
    bool any_param = false, any_loss = false;
    for (int i = 0; i < cgraph->n_nodes; i++) {
        any_param = any_param || (cgraph->nodes[i]->flags & GGML_TENSOR_FLAG_PARAM);
        any_loss  = any_loss || (cgraph->nodes[i]->flags & GGML_TENSOR_FLAG_LOSS);
    }
    if (!any_param || !any_loss) {
        ggmlx_error(__func__, "no %s in the graph (did you forget to call %s?)",
                    !any_param ? "trainable parameter" : "loss", !any_param ? "ggml_set_param" : "ggml_set_loss");
        cgraph->failed = true;
        return;
    }
    const size_t hsize = cgraph->visited.size;
    bool * needed = calloc(hsize, sizeof *needed);
    if (needed == NULL) {
        ggmlx_error(__func__, "out of host memory");
        cgraph->failed = true;
        return;
    }
    memset(cgraph->grads, 0, hsize * sizeof *cgraph->grads);
    memset(cgraph->grad_accs, 0, hsize * sizeof *cgraph->grad_accs);

    struct bwd b = { .ctx = ctx, .g = cgraph, .needed = needed, .failed = false };
    const int n_forward = cgraph->n_nodes;
    if (mark_needed(&b, needed, grad_accs)) {
        for (int i = n_forward - 1; i >= 0 && !b.failed; i--) {
            compute_backward(&b, cgraph->nodes[i]);
        }
    }
    free(needed);
    if (!b.failed && !cgraph->failed) {
        ggmlx_ok();
    }
}
