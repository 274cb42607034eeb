/*
 * opt-context.c -- the optimizer context: it adds a loss to the model's forward graph (gf), builds
 * from it the gradient graph (gb_grad: forward, then backward into accumulators) and the
 * optimizer graph (gb_opt: gb_grad, then a step per parameter), and runs one of the three per
 * evaluation through the backend scheduler.
 *
 * With static graphs (a compute context given at init) the three graphs are built once; the
 * scheduler allocates a copy of the one it runs, so that switching graphs never finds tensors
 * already holding another graph's addresses. Otherwise the caller gives a fresh forward graph
 * before every step (ggml_opt_prepare_alloc) and the graphs are rebuilt each time.
 */
#include "opt-impl.h"
#include "ptr-map.h"

#include <math.h>
#include <stdlib.h>

#define OPT_RNG_SEED 0x6767786f70743031ull /* fixed, so that shuffles repeat from run to run */

struct ggml_opt_optimizer_params ggml_opt_get_default_optimizer_params(void * userdata) {
    (void) userdata;
    struct ggml_opt_optimizer_params p;
    p.adamw.alpha = 0.001f;
    p.adamw.beta1 = 0.9f;
    p.adamw.beta2 = 0.999f;
    p.adamw.eps   = 1e-8f;
    p.adamw.wd    = 0.0f;
    p.sgd.alpha   = 1e-3f;
    p.sgd.wd      = 0.0f;
    return p;
}

struct ggml_opt_optimizer_params ggml_opt_get_constant_optimizer_params(void * userdata) {
    if (userdata == NULL) {
        ggmlx_error(__func__, "userdata is NULL (it must point to the parameters); using the defaults");
        return ggml_opt_get_default_optimizer_params(NULL);
    }
    return *(const struct ggml_opt_optimizer_params *) userdata;
}

struct ggml_opt_params ggml_opt_default_params(ggml_backend_sched_t backend_sched, enum ggml_opt_loss_type loss_type) {
    struct ggml_opt_params p;
    memset(&p, 0, sizeof p);
    p.backend_sched   = backend_sched;
    p.loss_type       = loss_type;
    p.build_type      = GGML_OPT_BUILD_TYPE_OPT;
    p.opt_period      = 1;
    p.get_opt_pars    = ggml_opt_get_default_optimizer_params;
    p.get_opt_pars_ud = NULL;
    p.optimizer       = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
    return p;
}

const char * ggml_opt_optimizer_name(enum ggml_opt_optimizer_type o) {
    switch (o) {
    case GGML_OPT_OPTIMIZER_TYPE_ADAMW: return "adamw";
    case GGML_OPT_OPTIMIZER_TYPE_SGD:   return "sgd";
    default:                            return "undefined";
    }
}

/* ---- copying a graph for the scheduler ------------------------------------------------------ */

struct tensor_copier {
    struct ggml_context * ctx;
    struct ggmlx_ptr_map  map; /* original -> index in copies */
    struct ggml_tensor ** copies;
    int32_t               n, cap;
};

static struct ggml_tensor * copy_tensor(struct tensor_copier * c, struct ggml_tensor * t) {
    if (t == NULL) {
        return NULL;
    }
    const int32_t k = ggmlx_ptr_map_find(&c->map, t);
    if (k >= 0) {
        return c->copies[k];
    }
    if (c->n == c->cap) {
        return NULL; /* more tensors than the graph's size allows for: the caller reports it */
    }
    struct ggml_tensor * n = ggml_dup_tensor(c->ctx, t);
    if (n == NULL) {
        return NULL;
    }
    c->copies[c->n] = n;
    ggmlx_ptr_map_put(&c->map, t, c->n++);
    n->op = t->op;
    memcpy(n->nb, t->nb, sizeof n->nb);
    n->flags = t->flags;
    memcpy(n->op_params, t->op_params, sizeof n->op_params);
    memcpy(n->name, t->name, sizeof n->name);
    n->data      = t->data;
    n->buffer    = t->buffer;
    n->extra     = t->extra;
    n->view_offs = t->view_offs;
    n->view_src  = copy_tensor(c, t->view_src);
    for (int i = 0; i < GGML_MAX_SRC; i++) {
        n->src[i] = copy_tensor(c, t->src[i]);
    }
    return n;
}

/* src's nodes and leafs as new tensors in ctx (sharing any memory they already have), with
 * src's gradients; NULL on failure */
static struct ggml_cgraph * copy_graph(struct ggml_context * ctx, struct ggml_cgraph * src) {
    struct tensor_copier c = { .ctx = ctx, .n = 0, .cap = src->size };
    struct ggml_cgraph * dst = NULL;
    c.copies = malloc((size_t) c.cap * sizeof *c.copies);
    memset(&c.map, 0, sizeof c.map);
    if (c.copies == NULL || !ggmlx_ptr_map_reset(&c.map, (size_t) c.cap)) {
        goto out;
    }
    dst = ggml_new_graph_custom(ctx, (size_t) src->size, true);
    if (dst == NULL) {
        goto out;
    }
    for (int i = 0; i < src->n_leafs; i++) {
        ggml_build_forward_expand(dst, copy_tensor(&c, src->leafs[i]));
    }
    for (int i = 0; i < src->n_nodes; i++) {
        ggml_build_forward_expand(dst, copy_tensor(&c, src->nodes[i]));
    }
    if (dst->failed || dst->n_nodes != src->n_nodes || dst->n_leafs != src->n_leafs) {
        dst = NULL;
        goto out;
    }
    if (src->grads != NULL) {
        for (int i = 0; i < src->n_nodes; i++) {
            const size_t is = ggmlx_hash_find(&src->visited, src->nodes[i]);
            const size_t id = ggmlx_hash_find(&dst->visited, dst->nodes[i]);
            dst->grads[id]     = src->grads[is];
            dst->grad_accs[id] = src->grad_accs[is];
        }
    }
out:
    ggmlx_ptr_map_free(&c.map);
    free(c.copies);
    return dst;
}

/* ---- building the graphs -------------------------------------------------------------------- */

static bool build_fail(const char * what) {
    ggmlx_error("ggml_opt_alloc", "cannot build the training graphs: %s", what);
    return false;
}

/* the loss (and for cross entropy the predictions and the correct count) on top of the outputs */
static bool build_loss(ggml_opt_context_t o, struct ggml_context * ctx) {
    struct ggml_tensor * out = o->outputs;
    const float per_elem = 1.0f / ((float) o->opt_period * (float) ggml_nelements(out));
    switch (o->loss_type) {
    case GGML_OPT_LOSS_TYPE_MEAN:
        o->loss = ggml_scale(ctx, ggml_sum(ctx, out), per_elem);
        o->loss_per_datapoint = true;
        break;
    case GGML_OPT_LOSS_TYPE_SUM:
        o->loss = ggml_sum(ctx, out);
        o->loss_per_datapoint = false;
        break;
    case GGML_OPT_LOSS_TYPE_CROSS_ENTROPY:
        o->labels = ggml_dup_tensor(ctx, out);
        if (o->labels == NULL) {
            return false;
        }
        ggml_set_input(o->labels);
        ggml_set_name(o->labels, "labels");
        o->loss = ggml_cross_entropy_loss(ctx, out, o->labels);
        if (o->loss != NULL && o->opt_period > 1) {
            o->loss = ggml_scale(ctx, o->loss, 1.0f / (float) o->opt_period);
        }
        o->loss_per_datapoint = true;
        break;
    case GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR:
        o->labels = ggml_dup_tensor(ctx, out);
        if (o->labels == NULL) {
            return false;
        }
        ggml_set_input(o->labels);
        ggml_set_name(o->labels, "labels");
        o->loss = ggml_scale(ctx, ggml_sum(ctx, ggml_sqr(ctx, ggml_sub(ctx, out, o->labels))), per_elem);
        o->loss_per_datapoint = true;
        break;
    default:
        return build_fail("unknown loss type");
    }
    if (o->loss == NULL) {
        return false;
    }
    ggml_set_name(o->loss, "loss");
    ggml_set_output(o->loss);
    ggml_set_loss(o->loss);
    ggml_build_forward_expand(o->gf, o->loss);
    if (o->loss_type == GGML_OPT_LOSS_TYPE_CROSS_ENTROPY) {
        o->pred = ggml_argmax(ctx, out);
        if (o->pred == NULL) {
            return false;
        }
        ggml_set_name(o->pred, "pred");
        ggml_set_output(o->pred);
        ggml_build_forward_expand(o->gf, o->pred);
        o->ncorrect = ggml_count_equal(ctx, o->pred, ggml_argmax(ctx, o->labels));
        if (o->ncorrect == NULL) {
            return false;
        }
        ggml_set_name(o->ncorrect, "ncorrect");
        ggml_set_output(o->ncorrect);
        ggml_build_forward_expand(o->gf, o->ncorrect);
    }
    return !o->gf->failed;
}

/* the context of the part for buffer type buft (part 0 for NULL), made on first use */
static struct ggml_context * part_ctx(ggml_opt_context_t o, ggml_backend_buffer_type_t buft) {
    if (buft == NULL) {
        buft = o->parts[0].buft;
    }
    for (int i = 0; i < o->n_parts; i++) {
        if (o->parts[i].buft == buft) {
            return o->parts[i].ctx;
        }
    }
    if (o->n_parts == GGMLX_OPT_MAX_PARTS || o->static_allocated) {
        build_fail("the parameters live in more buffer types than the context can follow");
        return NULL;
    }
    struct ggml_init_params ip = { o->part_size, NULL, true };
    struct ggmlx_opt_part * p = &o->parts[o->n_parts];
    p->buft = buft;
    p->ctx  = ggml_init(ip);
    p->buf  = NULL;
    if (p->ctx == NULL) {
        build_fail("out of host memory");
        return NULL;
    }
    o->n_parts++;
    return p->ctx;
}

/* where a parameter's own tensors go: its buffer's type, or part 0 when it has none */
static ggml_backend_buffer_type_t buft_of(const struct ggml_tensor * t) {
    const struct ggml_tensor * base = t->view_src ? t->view_src : t;
    return base->buffer ? ggml_backend_buffer_get_type(base->buffer) : NULL;
}

static bool alloc_static(ggml_opt_context_t o) {
    for (int i = 0; i < o->n_parts; i++) {
        struct ggmlx_opt_part * p = &o->parts[i];
        if (p->buf != NULL || ggml_get_first_tensor(p->ctx) == NULL) {
            continue;
        }
        p->buf = ggml_backend_alloc_ctx_tensors_from_buft(p->ctx, p->buft);
        if (p->buf == NULL) {
            return build_fail("no memory for the accumulators and moments");
        }
    }
    o->static_allocated = true;
    return true;
}

/* per node of gf: accumulators for parameters (when accumulating) and the loss, AdamW moments */
static bool make_state(ggml_opt_context_t o, bool accumulate, bool need_momenta) {
    const int n = o->gf->n_nodes;
    o->n_grad_nodes = n;
    o->grad_accs = calloc((size_t) n, sizeof *o->grad_accs);
    if (need_momenta) {
        o->grad_m = calloc((size_t) n, sizeof *o->grad_m);
        o->grad_v = calloc((size_t) n, sizeof *o->grad_v);
    }
    if (o->grad_accs == NULL || (need_momenta && (o->grad_m == NULL || o->grad_v == NULL))) {
        return build_fail("out of host memory");
    }
    for (int i = 0; i < n; i++) {
        struct ggml_tensor * node = o->gf->nodes[i];
        const bool param = (node->flags & GGML_TENSOR_FLAG_PARAM) != 0;
        struct ggml_context * ctx = part_ctx(o, param ? buft_of(node) : NULL);
        if (ctx == NULL) {
            return false;
        }
        if ((accumulate && param) || (node->flags & GGML_TENSOR_FLAG_LOSS)) {
            o->grad_accs[i] = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            if (o->grad_accs[i] == NULL) {
                return false;
            }
        }
        if (need_momenta && param) {
            o->grad_m[i] = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            o->grad_v[i] = ggml_new_tensor(ctx, GGML_TYPE_F32, GGML_MAX_DIMS, node->ne);
            if (o->grad_m[i] == NULL || o->grad_v[i] == NULL) {
                return false;
            }
            ggml_format_name(o->grad_m[i], "AdamW m for %s", node->name);
            ggml_format_name(o->grad_v[i], "AdamW v for %s", node->name);
        }
    }
    return true;
}

static bool add_steps(ggml_opt_context_t o, bool need_momenta) {
    o->opt_step_params = ggml_new_tensor_1d(o->ctx_cpu, GGML_TYPE_F32, need_momenta ? 7 : 2);
    if (o->opt_step_params == NULL) {
        return false;
    }
    ggml_set_input(o->opt_step_params);
    const char * name = ggml_opt_optimizer_name(o->optimizer);
    ggml_format_name(o->opt_step_params, "%s_params", name);
    for (int i = o->gf->n_nodes - 1; i >= 0; i--) {
        struct ggml_tensor * node = o->gb_opt->nodes[i];
        struct ggml_tensor * grad = ggml_graph_get_grad(o->gb_opt, node);
        if (grad == NULL || !(node->flags & GGML_TENSOR_FLAG_PARAM)) {
            continue;
        }
        struct ggml_tensor * step = o->optimizer == GGML_OPT_OPTIMIZER_TYPE_ADAMW
            ? ggml_opt_step_adamw(o->ctx_compute, node, grad, o->grad_m[i], o->grad_v[i], o->opt_step_params)
            : ggml_opt_step_sgd(o->ctx_compute, node, grad, o->opt_step_params);
        if (step == NULL) {
            return false;
        }
        ggml_format_name(step, "%s step for %s", name, node->name);
        ggml_build_forward_expand(o->gb_opt, step);
    }
    return !o->gb_opt->failed;
}

static bool opt_build(ggml_opt_context_t o) {
    if (o->ctx_compute == NULL || o->gf == NULL || o->inputs == NULL || o->outputs == NULL) {
        return build_fail("no compute context, forward graph, inputs or outputs (static graphs, or "
                          "ggml_opt_prepare_alloc before every ggml_opt_alloc)");
    }
    if (o->static_graphs && o->inputs->data == NULL) {
        return build_fail("with static graphs the inputs must be allocated before ggml_opt_init");
    }
    const bool accumulate = o->build_type_alloc >= GGML_OPT_BUILD_TYPE_GRAD &&
                            !(o->static_graphs && o->build_type_alloc == GGML_OPT_BUILD_TYPE_OPT && o->opt_period == 1);
    const bool need_momenta = o->build_type_alloc == GGML_OPT_BUILD_TYPE_OPT && o->optimizer == GGML_OPT_OPTIMIZER_TYPE_ADAMW;

    ggml_set_input(o->inputs);
    ggml_set_output(o->outputs);
    int n_param = 0;
    for (int i = 0; i < o->gf->n_nodes; i++) {
        const struct ggml_tensor * node = o->gf->nodes[i];
        n_param += (node->flags & GGML_TENSOR_FLAG_PARAM) != 0;
        if (node->flags & GGML_TENSOR_FLAG_LOSS) {
            return build_fail("the model already has a loss (extra loss terms are not supported)");
        }
    }
    if (o->n_parts == 0) {
        const size_t per_param = (accumulate ? 1 : 0) + (need_momenta ? 2 : 0);
        const size_t n_const   = o->static_graphs ? 9 : 0; /* labels, loss (up to 5), pred, ncorrect (2) */
        o->part_size = (1 + per_param * (size_t) n_param + n_const) * ggml_tensor_overhead();
        ggml_backend_t first = ggml_backend_sched_get_backend(o->backend_sched, 0);
        if (first == NULL) {
            return build_fail("the scheduler has no backend");
        }
        o->parts[0].buft = ggml_backend_get_default_buffer_type(first);
        if (part_ctx(o, o->parts[0].buft) == NULL) {
            return false;
        }
    }
    ggml_free(o->ctx_cpu);
    ggml_backend_buffer_free(o->buf_cpu);
    o->buf_cpu = NULL;
    struct ggml_init_params cp = { ggml_tensor_overhead(), NULL, true };
    o->ctx_cpu = ggml_init(cp);
    if (o->ctx_cpu == NULL) {
        return build_fail("out of host memory");
    }
    if (!build_loss(o, o->static_graphs ? o->parts[0].ctx : o->ctx_compute)) {
        return false;
    }

    if (o->static_allocated) {
        if (o->build_type == GGML_OPT_BUILD_TYPE_FORWARD) {
            return true;
        }
    } else if (o->build_type_alloc == GGML_OPT_BUILD_TYPE_FORWARD) {
        return alloc_static(o);
    }
    if (o->grad_accs == NULL && !make_state(o, accumulate, need_momenta)) {
        return false;
    }
    if (o->n_grad_nodes != o->gf->n_nodes) {
        return build_fail("the forward graph changed its number of nodes between steps");
    }
    o->gb_grad = ggml_graph_dup(o->ctx_compute, o->gf, true);
    if (o->gb_grad == NULL) {
        return false;
    }
    ggml_build_backward_expand(o->ctx_compute, o->gb_grad, o->grad_accs);
    if (o->gb_grad->failed) {
        return false;
    }
    if (o->static_allocated) {
        if (o->build_type == GGML_OPT_BUILD_TYPE_GRAD) {
            return true;
        }
    } else if (o->build_type_alloc == GGML_OPT_BUILD_TYPE_GRAD) {
        if (!alloc_static(o)) {
            return false;
        }
        ggml_graph_reset(o->gb_grad);
        return true;
    }
    o->gb_opt = ggml_graph_dup(o->ctx_compute, o->gb_grad, true);
    if (o->gb_opt == NULL || !add_steps(o, need_momenta)) {
        return false;
    }
    if (!o->static_allocated) {
        if (!alloc_static(o)) {
            return false;
        }
        ggml_graph_reset(o->gb_opt);
    }
    o->buf_cpu = ggml_backend_alloc_ctx_tensors_from_buft(o->ctx_cpu, ggml_backend_cpu_buffer_type());
    return o->buf_cpu != NULL || build_fail("no host memory for the optimizer parameters");
}

/* ---- the context ---------------------------------------------------------------------------- */

ggml_opt_context_t ggml_opt_init(struct ggml_opt_params params) {
    if (params.backend_sched == NULL) {
        ggmlx_error(__func__, "params.backend_sched is NULL");
        return NULL;
    }
    if (params.opt_period < 1 || params.get_opt_pars == NULL ||
        (params.optimizer != GGML_OPT_OPTIMIZER_TYPE_ADAMW && params.optimizer != GGML_OPT_OPTIMIZER_TYPE_SGD) ||
        (unsigned) params.loss_type > GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR ||
        (params.build_type != GGML_OPT_BUILD_TYPE_FORWARD && params.build_type != GGML_OPT_BUILD_TYPE_GRAD &&
         params.build_type != GGML_OPT_BUILD_TYPE_OPT)) {
        ggmlx_error(__func__, "bad params: opt_period %d (>= 1), get_opt_pars %s, optimizer %d, loss type %d, build type %d",
                    params.opt_period, params.get_opt_pars ? "set" : "NULL", (int) params.optimizer,
                    (int) params.loss_type, (int) params.build_type);
        return NULL;
    }
    const bool has_ctx = params.ctx_compute != NULL;
    if (has_ctx != (params.inputs != NULL) || has_ctx != (params.outputs != NULL)) {
        ggmlx_error(__func__, "ctx_compute, inputs and outputs are given together (static graphs) or not at all");
        return NULL;
    }
    ggml_opt_context_t o = calloc(1, sizeof *o);
    if (o == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    o->backend_sched    = params.backend_sched;
    o->ctx_compute      = params.ctx_compute;
    o->loss_type        = params.loss_type;
    o->build_type       = params.build_type;
    o->build_type_alloc = params.build_type;
    o->inputs           = params.inputs;
    o->outputs          = params.outputs;
    o->opt_period       = params.opt_period;
    o->get_opt_pars     = params.get_opt_pars;
    o->get_opt_pars_ud  = params.get_opt_pars_ud;
    o->optimizer        = params.optimizer;
    o->iter             = 1;
    o->rng              = OPT_RNG_SEED;
    o->static_graphs    = has_ctx;
    if (!o->static_graphs) {
        ggmlx_ok();
        return o;
    }
    o->gf = ggml_new_graph_custom(o->ctx_compute, GGML_DEFAULT_GRAPH_SIZE, true);
    if (o->gf == NULL) {
        goto err_free;
    }
    ggml_build_forward_expand(o->gf, o->outputs);
    if (o->gf->failed || !opt_build(o)) {
        goto err_free;
    }
    ggmlx_ok();
    return o;

err_free: {
        char why[512];
        const bool had = ggmlx_error_save(why, sizeof why);
        ggml_opt_free(o);
        if (had) {
            ggmlx_error_restore(why);
        }
        return NULL;
    }
}

void ggml_opt_free(ggml_opt_context_t opt_ctx) {
    if (opt_ctx == NULL) {
        return;
    }
    ggml_backend_buffer_free(opt_ctx->buf_cpu);
    for (int i = opt_ctx->n_parts - 1; i >= 0; i--) {
        ggml_backend_buffer_free(opt_ctx->parts[i].buf);
        ggml_free(opt_ctx->parts[i].ctx);
    }
    ggml_free(opt_ctx->ctx_cpu);
    ggml_free(opt_ctx->ctx_copy);
    free(opt_ctx->grad_accs);
    free(opt_ctx->grad_m);
    free(opt_ctx->grad_v);
    free(opt_ctx);
}

void ggml_opt_reset(ggml_opt_context_t opt_ctx, bool optimizer) {
    if (opt_ctx == NULL) {
        ggmlx_error(__func__, "opt_ctx is NULL");
        return;
    }
    struct ggml_cgraph * g = optimizer ? opt_ctx->gb_opt : opt_ctx->gb_grad;
    if (g == NULL) {
        ggmlx_error(__func__, "the context has no %s graph yet", optimizer ? "optimizer" : "gradient");
        return;
    }
    ggml_graph_reset(g);
    if (optimizer) {
        opt_ctx->iter = 1;
    }
}

bool ggml_opt_static_graphs(ggml_opt_context_t opt_ctx) { return opt_ctx != NULL && opt_ctx->static_graphs; }
struct ggml_tensor * ggml_opt_inputs(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->inputs : NULL; }
struct ggml_tensor * ggml_opt_outputs(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->outputs : NULL; }
struct ggml_tensor * ggml_opt_labels(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->labels : NULL; }
struct ggml_tensor * ggml_opt_loss(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->loss : NULL; }
struct ggml_tensor * ggml_opt_pred(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->pred : NULL; }
struct ggml_tensor * ggml_opt_ncorrect(ggml_opt_context_t opt_ctx) { return opt_ctx ? opt_ctx->ncorrect : NULL; }

struct ggml_tensor * ggml_opt_grad_acc(ggml_opt_context_t opt_ctx, struct ggml_tensor * node) {
    return opt_ctx && opt_ctx->gb_opt ? ggml_graph_get_grad_acc(opt_ctx->gb_opt, node) : NULL;
}

enum ggml_opt_optimizer_type ggml_opt_context_optimizer_type(ggml_opt_context_t c) {
    return c ? c->optimizer : GGML_OPT_OPTIMIZER_TYPE_COUNT;
}

/* ---- computing ------------------------------------------------------------------------------ */

void ggml_opt_prepare_alloc(ggml_opt_context_t opt_ctx, struct ggml_context * ctx_compute, struct ggml_cgraph * gf,
                            struct ggml_tensor * inputs, struct ggml_tensor * outputs) {
    if (opt_ctx == NULL || ctx_compute == NULL || gf == NULL || inputs == NULL || outputs == NULL) {
        ggmlx_error(__func__, "an argument is NULL");
        return;
    }
    if (opt_ctx->static_graphs) {
        ggmlx_error(__func__, "the context has static graphs (made with a compute context): nothing to prepare");
        return;
    }
    opt_ctx->ctx_compute = ctx_compute;
    opt_ctx->gf          = gf;
    opt_ctx->inputs      = inputs;
    opt_ctx->outputs     = outputs;
    ggmlx_ok();
}

/* The parameters' gradient accumulators to 0, without touching the optimizer's moments (which
 * ggml_graph_reset of the optimizer graph would clear too). */
static void zero_param_accumulators(ggml_opt_context_t o) {
    if (o->grad_accs == NULL || !o->static_allocated) {
        return;
    }
    for (int i = 0; i < o->n_grad_nodes; i++) {
        struct ggml_tensor * acc = o->grad_accs[i];
        if (acc != NULL && !(o->gf->nodes[i]->flags & GGML_TENSOR_FLAG_LOSS)) {
            ggml_backend_tensor_memset(acc, 0, 0, ggml_nbytes(acc));
        }
    }
}

void ggml_opt_alloc(ggml_opt_context_t opt_ctx, bool backward) {
    if (opt_ctx == NULL) {
        ggmlx_error(__func__, "opt_ctx is NULL");
        return;
    }
    if (opt_ctx->eval_ready) {
        ggmlx_error(__func__, "the last allocated graph was not evaluated (ggml_opt_eval) yet");
        return;
    }
    if (backward && opt_ctx->build_type_alloc < GGML_OPT_BUILD_TYPE_GRAD) {
        ggmlx_error(__func__, "the context was made for forward passes only (build type FORWARD)");
        return;
    }
    if (backward) {
        const int32_t next = (opt_ctx->opt_i + 1) % opt_ctx->opt_period;
        opt_ctx->build_type = next == 0 && opt_ctx->build_type_alloc == GGML_OPT_BUILD_TYPE_OPT
                                  ? GGML_OPT_BUILD_TYPE_OPT : GGML_OPT_BUILD_TYPE_GRAD;
    } else {
        opt_ctx->build_type = GGML_OPT_BUILD_TYPE_FORWARD;
    }
    if (!opt_ctx->static_graphs) {
        opt_ctx->labels = opt_ctx->loss = opt_ctx->pred = opt_ctx->ncorrect = NULL;
        if (!opt_build(opt_ctx)) {
            return;
        }
    }
    if (backward && opt_ctx->opt_i == 0) {
        zero_param_accumulators(opt_ctx); /* a new accumulation period */
    }
    struct ggml_cgraph * graph = opt_ctx->build_type == GGML_OPT_BUILD_TYPE_FORWARD ? opt_ctx->gf
                               : opt_ctx->build_type == GGML_OPT_BUILD_TYPE_GRAD    ? opt_ctx->gb_grad
                                                                                    : opt_ctx->gb_opt;
    if (graph == NULL) {
        ggmlx_error(__func__, "the graph for this step was not built");
        return;
    }
    if (opt_ctx->allocated_graph == graph) {
        opt_ctx->eval_ready = true;
        ggmlx_ok();
        return;
    }
    ggml_backend_sched_reset(opt_ctx->backend_sched);
    if (opt_ctx->static_graphs) {
        struct ggml_init_params ip = { (size_t) graph->size * ggml_tensor_overhead() +
                                           ggml_graph_overhead_custom((size_t) graph->size, graph->grads != NULL),
                                       NULL, true };
        ggml_free(opt_ctx->ctx_copy);
        opt_ctx->ctx_copy = ggml_init(ip);
        opt_ctx->allocated_graph_copy = opt_ctx->ctx_copy ? copy_graph(opt_ctx->ctx_copy, graph) : NULL;
        if (opt_ctx->allocated_graph_copy == NULL) {
            opt_ctx->allocated_graph = NULL;
            ggmlx_error(__func__, "out of memory copying the graph for the scheduler");
            return;
        }
    } else {
        opt_ctx->allocated_graph_copy = graph;
    }
    if (!ggml_backend_sched_alloc_graph(opt_ctx->backend_sched, opt_ctx->allocated_graph_copy)) {
        opt_ctx->allocated_graph = NULL;
        return; /* the scheduler said why */
    }
    opt_ctx->allocated_graph = graph;
    opt_ctx->eval_ready      = true;
    ggmlx_ok();
}

/* the optimizer's hyperparameters for this step into its parameter tensor; false when invalid */
static bool set_step_params(ggml_opt_context_t o) {
    const struct ggml_opt_optimizer_params p = o->get_opt_pars(o->get_opt_pars_ud);
    float * d = (float *) o->opt_step_params->data;
    if (o->optimizer == GGML_OPT_OPTIMIZER_TYPE_ADAMW) {
        const struct { float alpha, beta1, beta2, eps, wd; } a = { p.adamw.alpha, p.adamw.beta1, p.adamw.beta2,
                                                                   p.adamw.eps, p.adamw.wd };
        if (!(a.alpha > 0.0f) || !(a.beta1 >= 0.0f && a.beta1 <= 1.0f) || !(a.beta2 >= 0.0f && a.beta2 <= 1.0f) ||
            !(a.eps >= 0.0f) || !(a.wd >= 0.0f && a.wd <= 1.0f)) {
            ggmlx_error("ggml_opt_eval", "bad AdamW parameters: alpha %g (> 0), beta1 %g, beta2 %g (in [0, 1]), "
                        "eps %g (>= 0), wd %g (in [0, 1])", (double) a.alpha, (double) a.beta1, (double) a.beta2,
                        (double) a.eps, (double) a.wd);
            return false;
        }
        d[0] = a.alpha;
        d[1] = a.beta1;
        d[2] = a.beta2;
        d[3] = a.eps;
        d[4] = a.wd;
        d[5] = 1.0f / (1.0f - powf(a.beta1, (float) o->iter)); /* bias corrections for step iter */
        d[6] = 1.0f / (1.0f - powf(a.beta2, (float) o->iter));
    } else {
        if (!(p.sgd.alpha > 0.0f) || !(p.sgd.wd >= 0.0f && p.sgd.wd <= 1.0f)) {
            ggmlx_error("ggml_opt_eval", "bad SGD parameters: alpha %g (> 0), wd %g (in [0, 1])", (double) p.sgd.alpha,
                        (double) p.sgd.wd);
            return false;
        }
        d[0] = p.sgd.alpha;
        d[1] = p.sgd.wd;
    }
    return true;
}

static bool add_to_result(ggml_opt_context_t o, ggml_opt_result_t r) {
    if (r->ndata == 0) {
        r->loss_per_datapoint = o->loss_per_datapoint;
        r->opt_period         = o->opt_period;
    } else if (r->loss_per_datapoint != o->loss_per_datapoint || r->opt_period != o->opt_period) {
        ggmlx_error("ggml_opt_eval", "the result holds evaluations of another loss or period: reset it first");
        return false;
    }
    const int64_t ndata = o->outputs->ne[1];
    if (r->ndata != ndata * r->n_loss) {
        ggmlx_error("ggml_opt_eval", "batches of different sizes cannot be added to one result");
        return false;
    }
    float loss;
    ggml_backend_tensor_get(o->loss, &loss, 0, sizeof loss);
    if (!isfinite(loss)) {
        /* training has diverged (or the data holds NaN): say so rather than average it away */
        ggmlx_error("ggml_opt_eval", "the loss is %g after %lld optimizer steps (a learning rate too high, or NaN "
                    "in the data); the result keeps what came before", (double) loss, (long long) (o->iter - 1));
        return false;
    }
    int32_t * pred = NULL;
    if (o->pred != NULL) {
        pred = malloc((size_t) ndata * sizeof *pred);
        if (pred == NULL) {
            ggmlx_error("ggml_opt_eval", "out of host memory");
            return false;
        }
        ggml_backend_tensor_get(o->pred, pred, 0, (size_t) ndata * sizeof *pred);
    }
    const bool ok = ggmlx_opt_result_add(r, loss, pred, pred ? ndata : 0);
    free(pred);
    if (!ok) {
        ggmlx_error("ggml_opt_eval", "out of host memory");
        return false;
    }
    r->ndata += ndata;
    if (o->ncorrect == NULL || r->ncorrect < 0) {
        r->ncorrect = -1;
        return true;
    }
    int64_t nc;
    ggml_backend_tensor_get(o->ncorrect, &nc, 0, sizeof nc);
    r->ncorrect += nc;
    return true;
}

void ggml_opt_eval(ggml_opt_context_t opt_ctx, ggml_opt_result_t result) {
    if (opt_ctx == NULL) {
        ggmlx_error(__func__, "opt_ctx is NULL");
        return;
    }
    if (!opt_ctx->eval_ready) {
        ggmlx_error(__func__, "no graph is allocated: call ggml_opt_alloc first");
        return;
    }
    opt_ctx->eval_ready = false;
    const bool is_opt = opt_ctx->allocated_graph == opt_ctx->gb_opt;
    if (is_opt && !set_step_params(opt_ctx)) {
        return;
    }
    const enum ggml_status st = ggml_backend_sched_graph_compute(opt_ctx->backend_sched, opt_ctx->allocated_graph_copy);
    if (st != GGML_STATUS_SUCCESS) {
        return; /* the scheduler said why; nothing counts as evaluated */
    }
    opt_ctx->iter += is_opt;
    opt_ctx->opt_i = (opt_ctx->opt_i + 1) % opt_ctx->opt_period;
    const bool ok = result == NULL || add_to_result(opt_ctx, result);
    if (!opt_ctx->static_graphs) { /* the caller's next graph replaces these */
        opt_ctx->gf = opt_ctx->gb_grad = opt_ctx->gb_opt = NULL;
        opt_ctx->allocated_graph = opt_ctx->allocated_graph_copy = NULL;
    }
    if (ok) {
        ggmlx_ok();
    }
}
