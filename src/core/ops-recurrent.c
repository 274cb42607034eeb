/*
 * ops-recurrent.c -- state-space and linear-attention ops: SSM_CONV, SSM_SCAN, RWKV_WKV6,
 * GATED_LINEAR_ATTN, RWKV_WKV7 and GATED_DELTA_NET.
 *
 * Shapes and op_params as upstream's. The scans return one F32 tensor that packs the per-token
 * outputs first and the new recurrent state(s) after them, so that a graph can view both; the
 * state comes in as a separate input so one call can continue where another stopped.
 *   ssm_scan         op_params i32 [0] K, state snapshots kept (1 = final state only)
 *   gated_linear_attn op_params f32 [0] scale
 *   gated_delta_net  op_params i32 [0] K, as ssm_scan
 */
#include "ggml-impl.h"

/* every listed tensor is non-NULL and F32 */
static bool all_f32(struct ggml_context * ctx, const char * func, int n, struct ggml_tensor * const * t,
                    const char * const * names) {
    for (int i = 0; i < n; i++) {
        if (!ggmlx_require_f32(ctx, t[i], names[i], func)) {
            return false;
        }
    }
    return true;
}

static bool all_contiguous(struct ggml_context * ctx, const char * func, int n, struct ggml_tensor * const * t,
                           const char * const * names) {
    for (int i = 0; i < n; i++) {
        if (!ggml_is_contiguous(t[i])) {
            ggmlx_ctx_fail(ctx, func, "%s %s must be contiguous", names[i], GGMLX_SHAPE(t[i]));
            return false;
        }
    }
    return true;
}

static bool same_sht(const struct ggml_tensor * t, int64_t S, int64_t H, int64_t T) {
    return t->ne[0] == S && t->ne[1] == H && t->ne[2] == T && t->ne[3] == 1;
}

struct ggml_tensor * ggml_ssm_conv(struct ggml_context * ctx, struct ggml_tensor * sx, struct ggml_tensor * c) {
    GGMLX_CTX_CHECK(ctx);
    struct ggml_tensor * const in[] = { sx, c };
    static const char * const names[] = { "sx", "c" };
    if (!all_f32(ctx, __func__, 2, in, names)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_is_3d(sx) && ggml_is_matrix(c),
                  "sx %s must be 3-d [d_conv - 1 + n_t, d_inner, n_s] and c %s a matrix [d_conv, d_inner]",
                  GGMLX_SHAPE(sx), GGMLX_SHAPE(c));
    const int64_t d_conv  = c->ne[0];
    const int64_t d_inner = c->ne[1];
    GGMLX_REQUIRE(ctx, sx->ne[1] == d_inner && sx->ne[0] >= d_conv - 1 && d_conv >= 1,
                  "sx %s must be [d_conv - 1 + n_t, d_inner, n_s] for c %s", GGMLX_SHAPE(sx), GGMLX_SHAPE(c));
    GGMLX_REQUIRE(ctx, sx->nb[0] == sizeof(float) && c->nb[0] == sizeof(float),
                  "sx %s and c %s must have contiguous rows", GGMLX_SHAPE(sx), GGMLX_SHAPE(c));
    const int64_t ne[3] = { d_inner, sx->ne[0] - d_conv + 1, sx->ne[2] };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 3, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    result->op     = GGML_OP_SSM_CONV;
    result->src[0] = sx;
    result->src[1] = c;
    return result;
}

static bool rows_packed(const struct ggml_tensor * t) {
    return t->nb[0] == sizeof(float) && t->nb[1] == t->ne[0] * t->nb[0];
}

struct ggml_tensor * ggml_ssm_scan(struct ggml_context * ctx, struct ggml_tensor * s, struct ggml_tensor * x,
                                   struct ggml_tensor * dt, struct ggml_tensor * A, struct ggml_tensor * B,
                                   struct ggml_tensor * C, struct ggml_tensor * ids, int64_t K) {
    GGMLX_CTX_CHECK(ctx);
    struct ggml_tensor * const in[] = { s, x, dt, A, B, C };
    static const char * const names[] = { "s", "x", "dt", "A", "B", "C" };
    if (!all_f32(ctx, __func__, 6, in, names)) {
        return NULL;
    }
    GGMLX_REQUIRE_TENSOR(ctx, ids);
    GGMLX_REQUIRE(ctx, ids->type == GGML_TYPE_I32 && ggml_is_vector(ids) && ids->nb[0] == sizeof(int32_t),
                  "ids must be a contiguous I32 vector, got %s", GGMLX_SHAPE(ids));
    GGMLX_REQUIRE(ctx, K >= 1 && K <= INT32_MAX, "K (%lld) must be in [1, INT32_MAX]", (long long) K);
    struct ggml_tensor * const contig[] = { s, dt, A };
    static const char * const cnames[] = { "s", "dt", "A" };
    if (!all_contiguous(ctx, __func__, 3, contig, cnames)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, rows_packed(x) && rows_packed(B) && rows_packed(C),
                  "x %s, B %s and C %s must have contiguous first two dims", GGMLX_SHAPE(x), GGMLX_SHAPE(B),
                  GGMLX_SHAPE(C));
    GGMLX_REQUIRE(ctx, ggml_are_same_shape(B, C), "B %s and C %s must have the same shape", GGMLX_SHAPE(B),
                  GGMLX_SHAPE(C));
    const int64_t d_state  = s->ne[0];
    const int64_t head_dim = x->ne[0];
    const int64_t n_head   = x->ne[1];
    const int64_t n_tok    = x->ne[2];
    const int64_t n_seqs   = x->ne[3];
    GGMLX_REQUIRE(ctx, ggml_is_3d(dt) && dt->ne[0] == n_head && dt->ne[1] == n_tok && dt->ne[2] == n_seqs,
                  "dt %s must be [n_head, n_seq_tokens, n_seqs] for x %s", GGMLX_SHAPE(dt), GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, s->ne[1] == head_dim && s->ne[2] == n_head,
                  "s %s must be [d_state, head_dim, n_head, n_rs] for x %s", GGMLX_SHAPE(s), GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, B->ne[0] == d_state && B->ne[1] >= 1 && n_head % B->ne[1] == 0 && B->ne[2] == n_tok &&
                  B->ne[3] == n_seqs,
                  "B %s must be [d_state, n_group, n_seq_tokens, n_seqs] with n_head (%lld) a multiple of n_group, "
                  "for s %s and x %s", GGMLX_SHAPE(B), (long long) n_head, GGMLX_SHAPE(s), GGMLX_SHAPE(x));
    GGMLX_REQUIRE(ctx, ids->ne[0] == n_seqs, "ids %s must hold one state row per sequence (%lld)", GGMLX_SHAPE(ids),
                  (long long) n_seqs);
    GGMLX_REQUIRE(ctx, ggml_is_matrix(A) && A->ne[1] == n_head && (A->ne[0] == 1 || A->ne[0] == d_state),
                  "A %s must be [1, n_head] (Mamba-2) or [d_state, n_head] (Mamba-1), n_head %lld, d_state %lld",
                  GGMLX_SHAPE(A), (long long) n_head, (long long) d_state);
    GGMLX_REQUIRE(ctx, A->ne[0] == 1 || K == 1, "K (%lld) > 1 needs Mamba-2's scalar A, got A %s", (long long) K,
                  GGMLX_SHAPE(A));
    const int64_t ne[1] = { ggml_nelements(x) + K * d_state * head_dim * n_head * n_seqs };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 1, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) K);
    result->op     = GGML_OP_SSM_SCAN;
    result->src[0] = s;
    result->src[1] = x;
    result->src[2] = dt;
    result->src[3] = A;
    result->src[4] = B;
    result->src[5] = C;
    result->src[6] = ids;
    return result;
}

/*
 * The RWKV-style scans: n inputs of shape [S, H, n_tokens] (the first, k or r, sets S, H and
 * n_tokens, except `per_head` which is [S, H] for wkv6's bonus u), then the state [S*S*H, n_seqs].
 * n_tokens counts every sequence's tokens, the sequences taking equal consecutive shares.
 */
static struct ggml_tensor * rwkv_like(struct ggml_context * ctx, const char * func, enum ggml_op op, int n,
                                      struct ggml_tensor * const * t, const char * const * names, int per_head,
                                      const struct ggml_tensor * ref) {
    if (!all_f32(ctx, func, n, t, names) || !all_contiguous(ctx, func, n, t, names)) {
        return NULL;
    }
    const struct ggml_tensor * state = t[n - 1];
    const int64_t S  = ref->ne[0];
    const int64_t H  = ref->ne[1];
    const int64_t T  = ref->ne[2];
    for (int i = 0; i < n - 1; i++) {
        const bool ok = i == per_head ? ggml_nelements(t[i]) == S * H : same_sht(t[i], S, H, T);
        if (!ok) {
            ggmlx_ctx_fail(ctx, func, "%s %s must be [%lld, %lld, %lld]%s", names[i], GGMLX_SHAPE(t[i]), (long long) S,
                           (long long) H, i == per_head ? 1LL : (long long) T, i == per_head ? " (S*H elements)" : "");
            return NULL;
        }
    }
    const int64_t n_seqs = state->ne[1];
    if (n_seqs < 1 || ggml_nelements(state) != S * S * H * n_seqs || T % n_seqs != 0) {
        ggmlx_ctx_fail(ctx, func, "state %s must hold S*S*H = %lld values per sequence in ne1 sequences, and "
                       "n_tokens (%lld) must split evenly among them", GGMLX_SHAPE(state), (long long) (S * S * H),
                       (long long) T);
        return NULL;
    }
    const int64_t ne[2] = { S * H, T + S * n_seqs };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 2, ne, NULL, 0, func);
    if (result == NULL) {
        return NULL;
    }
    result->op = op;
    for (int i = 0; i < n; i++) {
        result->src[i] = t[i];
    }
    return result;
}

struct ggml_tensor * ggml_rwkv_wkv6(struct ggml_context * ctx, struct ggml_tensor * k, struct ggml_tensor * v,
                                    struct ggml_tensor * r, struct ggml_tensor * tf, struct ggml_tensor * td,
                                    struct ggml_tensor * state) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, k);
    struct ggml_tensor * const in[] = { k, v, r, tf, td, state };
    static const char * const names[] = { "k", "v", "r", "tf", "td", "state" };
    return rwkv_like(ctx, __func__, GGML_OP_RWKV_WKV6, 6, in, names, 3, k);
}

struct ggml_tensor * ggml_gated_linear_attn(struct ggml_context * ctx, struct ggml_tensor * k, struct ggml_tensor * v,
                                            struct ggml_tensor * q, struct ggml_tensor * g, struct ggml_tensor * state,
                                            float scale) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, k);
    struct ggml_tensor * const in[] = { k, v, q, g, state };
    static const char * const names[] = { "k", "v", "q", "g", "state" };
    struct ggml_tensor * result = rwkv_like(ctx, __func__, GGML_OP_GATED_LINEAR_ATTN, 5, in, names, -1, k);
    if (result != NULL) {
        ggmlx_set_op_params_f32(result, 0, scale);
    }
    return result;
}

struct ggml_tensor * ggml_rwkv_wkv7(struct ggml_context * ctx, struct ggml_tensor * r, struct ggml_tensor * w,
                                    struct ggml_tensor * k, struct ggml_tensor * v, struct ggml_tensor * a,
                                    struct ggml_tensor * b, struct ggml_tensor * state) {
    GGMLX_CTX_CHECK(ctx);
    GGMLX_REQUIRE_TENSOR(ctx, k);
    struct ggml_tensor * const in[] = { r, w, k, v, a, b, state };
    static const char * const names[] = { "r", "w", "k", "v", "a", "b", "state" };
    return rwkv_like(ctx, __func__, GGML_OP_RWKV_WKV7, 7, in, names, -1, k);
}

struct ggml_tensor * ggml_gated_delta_net(struct ggml_context * ctx, struct ggml_tensor * q, struct ggml_tensor * k,
                                          struct ggml_tensor * v, struct ggml_tensor * g, struct ggml_tensor * beta,
                                          struct ggml_tensor * state, int64_t K) {
    GGMLX_CTX_CHECK(ctx);
    struct ggml_tensor * const in[] = { q, k, v, g, beta, state };
    static const char * const names[] = { "q", "k", "v", "g", "beta", "state" };
    if (!all_f32(ctx, __func__, 6, in, names) || !all_contiguous(ctx, __func__, 3, in + 3, names + 3)) {
        return NULL;
    }
    GGMLX_REQUIRE(ctx, ggml_is_contiguous_rows(q) && ggml_is_contiguous_rows(k) && ggml_is_contiguous_rows(v),
                  "q %s, k %s and v %s must have contiguous rows", GGMLX_SHAPE(q), GGMLX_SHAPE(k), GGMLX_SHAPE(v));
    GGMLX_REQUIRE(ctx, K >= 1 && K <= INT32_MAX, "K (%lld) must be in [1, INT32_MAX]", (long long) K);
    const int64_t S = v->ne[0];
    const int64_t H = v->ne[1];
    const int64_t T = v->ne[2];
    const int64_t N = v->ne[3];
    /* q and k may have fewer heads and sequences, repeated over v's (head h reads h % H_k) */
    const struct ggml_tensor * qk[2] = { q, k };
    for (int i = 0; i < 2; i++) {
        const struct ggml_tensor * t = qk[i];
        GGMLX_REQUIRE(ctx, t->ne[0] == S && t->ne[2] == T && t->ne[1] >= 1 && H % t->ne[1] == 0 && t->ne[3] >= 1 &&
                      N % t->ne[3] == 0,
                      "%s %s must be [S_v, H_k, n_tokens, n_seqs_k] with H_k dividing H_v and n_seqs_k dividing n_seqs "
                      "of v %s", i == 0 ? "q" : "k", GGMLX_SHAPE(t), GGMLX_SHAPE(v));
    }
    GGMLX_REQUIRE(ctx, (g->ne[0] == 1 || g->ne[0] == S) && g->ne[1] == H && g->ne[2] == T && g->ne[3] == N,
                  "g %s must be [1 or S_v, H, n_tokens, n_seqs] for v %s", GGMLX_SHAPE(g), GGMLX_SHAPE(v));
    GGMLX_REQUIRE(ctx, beta->ne[0] == 1 && beta->ne[1] == H && beta->ne[2] == T && beta->ne[3] == N,
                  "beta %s must be [1, H, n_tokens, n_seqs] for v %s", GGMLX_SHAPE(beta), GGMLX_SHAPE(v));
    GGMLX_REQUIRE(ctx, state->ne[0] == S && state->ne[1] == S && state->ne[2] == H && state->ne[3] == N,
                  "state %s must be [S_v, S_v, H, n_seqs] for v %s", GGMLX_SHAPE(state), GGMLX_SHAPE(v));
    const int64_t ne[2] = { S * H, T * N + K * S * N };
    struct ggml_tensor * result = ggmlx_new_tensor_impl(ctx, GGML_TYPE_F32, 2, ne, NULL, 0, __func__);
    if (result == NULL) {
        return NULL;
    }
    ggmlx_set_op_params_i32(result, 0, (int32_t) K);
    result->op = GGML_OP_GATED_DELTA_NET;
    for (int i = 0; i < 6; i++) {
        result->src[i] = in[i];
    }
    return result;
}
