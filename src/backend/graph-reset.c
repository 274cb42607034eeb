/*
 * graph-reset.c -- ggml_graph_reset: the start of a training step. It sits with the backend layer,
 * not with the graphs of src/core, because the gradients it writes usually live in backend buffers.
 */
#include "ggml-backend.h"
#include "ggml-impl.h"

static void zero_tensor(struct ggml_tensor * t) {
    if (t->buffer != NULL) {
        ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
    } else if (t->data != NULL) {
        memset(t->data, 0, ggml_nbytes(t));
    }
}

static bool has_memory(const struct ggml_tensor * t, const char * what) {
    if (t->buffer == NULL && t->data == NULL) {
        ggmlx_error("ggml_graph_reset", "%s '%s' has no memory (allocate the graph first)", what, t->name);
        return false;
    }
    return true;
}

void ggml_graph_reset(struct ggml_cgraph * cgraph) {
    if (cgraph == NULL) {
        ggmlx_error(__func__, "cgraph is NULL");
        return;
    }
    if (cgraph->grads == NULL) {
        ggmlx_error(__func__, "the graph has no gradients (make it with ggml_new_graph_custom(..., true))");
        return;
    }
    /* check everything first, so that a refused reset writes nothing */
    for (int i = 0; i < cgraph->n_nodes; i++) {
        struct ggml_tensor * node = cgraph->nodes[i];
        struct ggml_tensor * acc  = ggml_graph_get_grad_acc(cgraph, node);
        if (node->op == GGML_OP_OPT_STEP_ADAMW &&
            (!has_memory(node->src[2], "first moment") || !has_memory(node->src[3], "second moment"))) {
            return;
        }
        if (acc == NULL) {
            continue;
        }
        if (!has_memory(acc, "gradient accumulator")) {
            return;
        }
        if ((node->flags & GGML_TENSOR_FLAG_LOSS) && (acc->type != GGML_TYPE_F32 || !ggml_is_scalar(acc))) {
            ggmlx_error(__func__, "the gradient of loss '%s' is not an F32 scalar", node->name);
            return;
        }
    }
    for (int i = 0; i < cgraph->n_nodes; i++) {
        struct ggml_tensor * node = cgraph->nodes[i];
        struct ggml_tensor * acc  = ggml_graph_get_grad_acc(cgraph, node);
        if (node->op == GGML_OP_OPT_STEP_ADAMW) { /* a new run starts with no momentum */
            zero_tensor(node->src[2]);
            zero_tensor(node->src[3]);
        }
        if (acc == NULL) {
            continue;
        }
        if (node->flags & GGML_TENSOR_FLAG_LOSS) { /* d loss / d loss */
            const float one = 1.0f;
            if (acc->buffer != NULL) {
                ggml_backend_tensor_set(acc, &one, 0, sizeof one);
            } else {
                memcpy(acc->data, &one, sizeof one);
            }
        } else {
            zero_tensor(acc);
        }
    }
    ggmlx_ok();
}
