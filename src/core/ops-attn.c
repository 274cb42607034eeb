/*
 * ops-attn.c -- FLASH_ATTN_EXT: softmax(scale * K^T Q + slope * mask) V in one op, with its
 * precision hint and attention sinks, shaped as upstream:
 *   q     [DK, n_q,  n_head,    ne3]  F32
 *   k     [DK, n_kv, n_head_kv, ne3]  F32, F16, BF16 or quantized
 *   v     [DV, n_kv, n_head_kv, ne3]  (not transposed)
 *   mask  [n_kv, >= n_q, ne32, ne33]  F16 or F32; n_head % ne32 == 0, ne3 % ne33 == 0
 *   sinks [n_head]                    F32 (ggml_flash_attn_ext_add_sinks)
 *   res   [DV, n_head, n_q, ne3]      F32, permuted: heads of one query are adjacent
 * op_params: f32 [0] scale, [1] max_bias, [2] logit_softcap; i32 [3] precision.
 */
#include "ggml-impl.h"

static bool attn_kv_type_ok(enum ggml_type t) {
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || ggml_is_quantized(t);
}

struct ggml_tensor * ggml_flash_attn_ext(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                         struct ggml_tensor * v, struct ggml_tensor * mask, float scale,
                                         float max_bias, float logit_softcap) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, q);
    GGMLX_REQUIRE_TENSOR(ctx, k);
    GGMLX_REQUIRE_TENSOR(ctx, v);
    GGMLX_REQUIRE(ctx, q->type == GGML_TYPE_F32, "q must be F32, got %s", GGMLX_SHAPE(q));
    GGMLX_REQUIRE(ctx, attn_kv_type_ok(k->type) && attn_kv_type_ok(v->type),
                  "k and v must be F32, F16, BF16 or quantized, got k %s, v %s", GGMLX_SHAPE(k), GGMLX_SHAPE(v));
    GGMLX_REQUIRE(ctx, k->ne[0] == q->ne[0], "k ne0 (%lld) must equal q ne0 (%lld), the key head size",
                  (long long) k->ne[0], (long long) q->ne[0]);
    GGMLX_REQUIRE(ctx, k->ne[1] == v->ne[1] && k->ne[2] == v->ne[2],
                  "k %s and v %s must have the same number of cached tokens (ne1) and KV heads (ne2)",
                  GGMLX_SHAPE(k), GGMLX_SHAPE(v));
    GGMLX_REQUIRE(ctx, k->ne[2] > 0 && q->ne[2] % k->ne[2] == 0,
                  "q heads (ne2 %lld) must be a whole multiple of the KV heads (k ne2 %lld)",
                  (long long) q->ne[2], (long long) k->ne[2]);
    GGMLX_REQUIRE(ctx, q->ne[3] == k->ne[3] && q->ne[3] == v->ne[3],
                  "q, k and v must have the same ne3: q %s, k %s, v %s", GGMLX_SHAPE(q), GGMLX_SHAPE(k),
                  GGMLX_SHAPE(v));
    if (mask != NULL) {
        GGMLX_REQUIRE(ctx, mask->type == GGML_TYPE_F16 || mask->type == GGML_TYPE_F32,
                      "mask must be F16 or F32, got %s", GGMLX_SHAPE(mask));
        GGMLX_REQUIRE(ctx, mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1] && mask->ne[2] > 0 &&
                           mask->ne[3] > 0 && q->ne[2] % mask->ne[2] == 0 && q->ne[3] % mask->ne[3] == 0,
                      "mask %s does not fit q %s, k %s (need mask ne0 == n_kv, ne1 >= n_queries, and q ne2, ne3 "
                      "whole multiples of the mask's)", GGMLX_SHAPE(mask), GGMLX_SHAPE(q), GGMLX_SHAPE(k));
    }
    GGMLX_REQUIRE(ctx, !(max_bias > 0.0f) || mask != NULL, "max_bias %g > 0 (ALiBi) needs a mask", (double) max_bias);
    GGMLX_REQUIRE(ctx, logit_softcap >= 0.0f, "logit_softcap must be >= 0 (0: off), got %g", (double) logit_softcap);

    const int64_t ne[4] = { v->ne[0], q->ne[2], q->ne[1], q->ne[3] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 4, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_f32(result, 0, scale);
    ggmlx_set_op_params_f32(result, 1, max_bias);
    ggmlx_set_op_params_f32(result, 2, logit_softcap);
    ggmlx_set_op_params_i32(result, 3, GGML_PREC_DEFAULT);
    result->op     = GGML_OP_FLASH_ATTN_EXT;
    result->src[0] = q;
    result->src[1] = k;
    result->src[2] = v;
    result->src[3] = mask;
    return result;
}

static bool is_flash_attn(const struct ggml_tensor * a, const char * func) {
    if (a == NULL) {
        ggmlx_error(func, "tensor argument 'a' is NULL");
        return false;
    }
    if (a->op != GGML_OP_FLASH_ATTN_EXT) {
        ggmlx_error(func, "a must be a FLASH_ATTN_EXT result, got op %s", ggml_op_name(a->op));
        return false;
    }
    return true;
}

void ggml_flash_attn_ext_set_prec(struct ggml_tensor * a, enum ggml_prec prec) {
    if (!is_flash_attn(a, __func__)) {
        return;
    }
    if (prec != GGML_PREC_DEFAULT && prec != GGML_PREC_F32) {
        ggmlx_error(__func__, "unknown precision %d (GGML_PREC_DEFAULT or GGML_PREC_F32)", (int) prec);
        return;
    }
    ggmlx_set_op_params_i32(a, 3, (int32_t) prec);
    ggmlx_ok();
}

enum ggml_prec ggml_flash_attn_ext_get_prec(const struct ggml_tensor * a) {
    if (!is_flash_attn(a, __func__)) {
        return GGML_PREC_DEFAULT;
    }
    ggmlx_ok();
    return (enum ggml_prec) ggmlx_get_op_params_i32(a, 3);
}

/* one F32 logit per query head, joining every row's softmax without a value (NULL removes them) */
void ggml_flash_attn_ext_add_sinks(struct ggml_tensor * a, struct ggml_tensor * sinks) {
    if (!is_flash_attn(a, __func__)) {
        return;
    }
    if (sinks != NULL && (sinks->type != GGML_TYPE_F32 || sinks->ne[0] != a->src[0]->ne[2] ||
                          ggml_nelements(sinks) != sinks->ne[0])) {
        ggmlx_error(__func__, "sinks must be F32 [n_head = %lld], got %s", (long long) a->src[0]->ne[2],
                    GGMLX_SHAPE(sinks));
        return;
    }
    a->src[4] = sinks;
    ggmlx_ok();
}
