/*
 * test-ops-recurrent.c -- SSM_CONV, SSM_SCAN (Mamba-1 and Mamba-2), RWKV_WKV6, GATED_LINEAR_ATTN,
 * RWKV_WKV7 and GATED_DELTA_NET against double-precision recurrences written from their documented
 * definitions: several sequences, odd sizes, threads, state snapshots, a state carried from one call
 * into the next equal to one long call, and every refused shape.
 */
#include "test-ops-common.h"
#include "ggml-impl.h"

#include <math.h>

#define TOL 2e-5

static struct ggml_tensor * rnd(struct to_env * e, struct tu_rng * rng, int64_t ne0, int64_t ne1, int64_t ne2,
                                int64_t ne3, float lo, float hi) {
    struct ggml_tensor * t = to_new(e, GGML_TYPE_F32, ne0, ne1, ne2, ne3);
    tu_fill(t, rng, lo, hi);
    return t;
}

/* flat element i of a contiguous F32 tensor */
static double at(const struct ggml_tensor * t, int64_t i) {
    return ((const float *) t->data)[i];
}

/* the first n elements of got (a packed result, from element off) against want */
static void check_flat(const struct ggml_tensor * got, int64_t off, const double * want, int64_t n, double tol,
                       const char * what) {
    for (int64_t i = 0; i < n; i++) {
        const double g = at(got, off + i);
        if (!tu_close(g, want[i], tol)) {
            cr_assert_fail("%s: element %lld: got %.9g, want %.9g", what, (long long) i, g, want[i]);
        }
    }
}

static void check_same(const struct ggml_tensor * a, int64_t off_a, const struct ggml_tensor * b, int64_t off_b,
                       int64_t n, const char * what) {
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(at(a, off_a + i), at(b, off_b + i), "%s: element %lld: %.9g vs %.9g", what, (long long) i,
                     at(a, off_a + i), at(b, off_b + i));
    }
}

static double softplus_d(double x) {
    return x > 20.0 ? x : log1p(exp(x));
}

/* ---- SSM_CONV ------------------------------------------------------------------------------ */

static void run_ssm_conv(int64_t d_conv, int64_t d_inner, int64_t n_t, int64_t n_s, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct tu_rng rng = tu_rng_new(salt);
    struct ggml_tensor * sx = rnd(&e, &rng, d_conv - 1 + n_t, d_inner, n_s, 1, -1.0f, 1.0f);
    struct ggml_tensor * c  = rnd(&e, &rng, d_conv, d_inner, 1, 1, -1.0f, 1.0f);
    struct ggml_tensor * r  = ggml_ssm_conv(e.ctx, sx, c);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == d_inner && r->ne[1] == n_t && r->ne[2] == n_s && r->ne[3] == 1);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = malloc((size_t) (d_inner * n_t * n_s) * sizeof(double));
    for (int64_t s = 0; s < n_s; s++) {
        for (int64_t t = 0; t < n_t; t++) {
            for (int64_t ch = 0; ch < d_inner; ch++) {
                double sum = 0;
                for (int64_t k = 0; k < d_conv; k++) {
                    sum += tu_get(sx, t + k, ch, s, 0) * tu_get(c, k, ch, 0, 0);
                }
                want[ch + d_inner * (t + n_t * s)] = sum;
            }
        }
    }
    to_check(r, want, TOL, "ssm_conv");
    free(want);
    to_end(&e);
}

Test(ssm_conv, sliding_window_dot_per_channel) {
    run_ssm_conv(4, 7, 5, 3, 1, 1);
    run_ssm_conv(4, 1, 1, 1, 1, 2);
    run_ssm_conv(1, 3, 2, 2, 1, 3);
    run_ssm_conv(4, 1031, 3, 2, 3, 4); /* threads split the channels */
}

Test(ssm_conv, rejects_bad_shapes) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * sx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 7, 5, 2);
    struct ggml_tensor * c  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 6);
    to_expect_rejected(ctx, ggml_ssm_conv(ctx, sx, c), "ggml_ssm_conv"); /* d_inner 5 vs 6 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    sx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2, 5, 2);
    c  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    to_expect_rejected(ctx, ggml_ssm_conv(ctx, sx, c), "ggml_ssm_conv"); /* window shorter than d_conv - 1 */
    ggml_free(ctx);
    ctx = to_small_ctx();
    sx = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, 7, 5, 2);
    c  = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 4, 5);
    to_expect_rejected(ctx, ggml_ssm_conv(ctx, sx, c), "ggml_ssm_conv");
    ggml_free(ctx);
}

/* ---- SSM_SCAN ------------------------------------------------------------------------------ */

struct scan_case {
    int64_t d_state, head_dim, n_head, n_group, n_tok, n_seqs, n_rs, K;
    bool    mamba1;
};

struct scan_io {
    struct ggml_tensor *s, *x, *dt, *A, *B, *C, *ids;
};

static struct scan_io scan_inputs(struct to_env * e, const struct scan_case * sc, uint64_t salt) {
    struct tu_rng rng = tu_rng_new(salt);
    struct scan_io io;
    io.s   = rnd(e, &rng, sc->d_state, sc->head_dim, sc->n_head, sc->n_rs, -1.0f, 1.0f);
    io.x   = rnd(e, &rng, sc->head_dim, sc->n_head, sc->n_tok, sc->n_seqs, -1.0f, 1.0f);
    io.dt  = rnd(e, &rng, sc->n_head, sc->n_tok, sc->n_seqs, 1, -2.0f, 1.0f);
    io.A   = rnd(e, &rng, sc->mamba1 ? sc->d_state : 1, sc->n_head, 1, 1, -2.0f, -0.1f);
    io.B   = rnd(e, &rng, sc->d_state, sc->n_group, sc->n_tok, sc->n_seqs, -1.0f, 1.0f);
    io.C   = rnd(e, &rng, sc->d_state, sc->n_group, sc->n_tok, sc->n_seqs, -1.0f, 1.0f);
    io.ids = to_new(e, GGML_TYPE_I32, sc->n_seqs, 1, 1, 1);
    for (int64_t q = 0; q < sc->n_seqs; q++) { /* sequences read the state rows backwards */
        ((int32_t *) io.ids->data)[q] = (int32_t) (sc->n_rs - 1 - q);
    }
    return io;
}

/* y then K slots, as the op packs them; slots it leaves unwritten are NAN */
static double * scan_reference(const struct scan_case * sc, const struct scan_io * io) {
    const int64_t nc = sc->d_state, nr = sc->head_dim, nh = sc->n_head, nt = sc->n_tok, ns = sc->n_seqs;
    const int64_t ny = nr * nh * nt * ns, nst = nc * nr * nh * ns;
    double * out = malloc((size_t) (ny + sc->K * nst) * sizeof(double));
    for (int64_t i = 0; i < ny + sc->K * nst; i++) {
        out[i] = NAN;
    }
    double * st = malloc((size_t) (nc * nr * nh) * sizeof(double));
    for (int64_t q = 0; q < ns; q++) {
        const int32_t row = ((const int32_t *) io->ids->data)[q];
        for (int64_t h = 0; h < nh; h++) {
            for (int64_t d = 0; d < nr; d++) {
                for (int64_t n = 0; n < nc; n++) {
                    st[(h * nr + d) * nc + n] = tu_get(io->s, n, d, h, row);
                }
            }
        }
        for (int64_t t = 0; t < nt; t++) {
            for (int64_t h = 0; h < nh; h++) {
                const int64_t g = h / (nh / sc->n_group);
                const double dtp = softplus_d(tu_get(io->dt, h, t, q, 0));
                for (int64_t d = 0; d < nr; d++) {
                    const double xv = tu_get(io->x, d, h, t, q);
                    double y = 0;
                    for (int64_t n = 0; n < nc; n++) {
                        const double a = tu_get(io->A, sc->mamba1 ? n : 0, h, 0, 0);
                        double * sv = &st[(h * nr + d) * nc + n];
                        *sv = *sv * exp(dtp * a) + tu_get(io->B, n, g, t, q) * xv * dtp;
                        y += *sv * tu_get(io->C, n, g, t, q);
                    }
                    out[((q * nt + t) * nh + h) * nr + d] = y;
                }
            }
            const int64_t slot = nt - 1 - t;
            if (slot < sc->K) {
                memcpy(out + ny + slot * nst + q * nc * nr * nh, st, (size_t) (nc * nr * nh) * sizeof(double));
            }
        }
    }
    free(st);
    return out;
}

static struct ggml_tensor * scan_op(struct to_env * e, const struct scan_io * io, int64_t K) {
    return ggml_ssm_scan(e->ctx, io->s, io->x, io->dt, io->A, io->B, io->C, io->ids, K);
}

static void run_ssm_scan(const struct scan_case * sc, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    const struct scan_io io = scan_inputs(&e, sc, salt);
    struct ggml_tensor * r = scan_op(&e, &io, sc->K);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t ny = sc->head_dim * sc->n_head * sc->n_tok * sc->n_seqs;
    const int64_t nst = sc->d_state * sc->head_dim * sc->n_head * sc->n_seqs;
    cr_assert_eq(ggml_nelements(r), ny + sc->K * nst);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), (int32_t) sc->K);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = scan_reference(sc, &io);
    check_flat(r, 0, want, ny, TOL, "ssm_scan y");
    for (int64_t k = 0; k < sc->K && k < sc->n_tok; k++) {
        check_flat(r, ny + k * nst, want + ny + k * nst, nst, TOL, k == 0 ? "ssm_scan final state" : "ssm_scan snapshot");
    }
    free(want);
    to_end(&e);
}

Test(ssm_scan, mamba2_scalar_decay_grouped_heads) {
    const struct scan_case a = { 5, 3, 4, 2, 3, 2, 3, 1, false };
    run_ssm_scan(&a, 1, 10);
    const struct scan_case b = { 16, 8, 12, 3, 4, 3, 3, 1, false }; /* heads split among threads */
    run_ssm_scan(&b, 3, 11);
}

Test(ssm_scan, mamba1_per_state_decay) {
    const struct scan_case a = { 7, 5, 1, 1, 4, 2, 2, 1, true };
    run_ssm_scan(&a, 1, 12);
    const struct scan_case b = { 16, 33, 3, 1, 5, 2, 4, 1, true };
    run_ssm_scan(&b, 2, 13);
}

Test(ssm_scan, keeps_k_state_snapshots) {
    const struct scan_case a = { 5, 3, 4, 2, 5, 2, 2, 3, false }; /* slots 0..2 written */
    run_ssm_scan(&a, 2, 14);
    const struct scan_case b = { 5, 3, 4, 1, 2, 1, 1, 4, false }; /* fewer tokens than slots */
    run_ssm_scan(&b, 1, 15);
}

Test(ssm_scan, state_carried_between_calls_equals_one_call) {
    const struct scan_case sc = { 6, 3, 4, 2, 5, 1, 1, 1, false };
    struct to_env e;
    to_begin(&e);
    const struct scan_io io = scan_inputs(&e, &sc, 16);
    struct ggml_tensor * whole = to_alloc(&e, scan_op(&e, &io, 1));
    to_compute(&e, whole, 1);
    const int64_t split = 2, nst = sc.d_state * sc.head_dim * sc.n_head;
    struct scan_io p1 = io, p2 = io;
    for (int part = 0; part < 2; part++) {
        struct scan_io * p = part == 0 ? &p1 : &p2;
        const int64_t t0 = part == 0 ? 0 : split, nt = part == 0 ? split : sc.n_tok - split;
        p->x  = ggml_view_4d(e.ctx, io.x, sc.head_dim, sc.n_head, nt, 1, io.x->nb[1], io.x->nb[2], io.x->nb[3],
                             (size_t) t0 * io.x->nb[2]);
        p->dt = ggml_view_3d(e.ctx, io.dt, sc.n_head, nt, 1, io.dt->nb[1], io.dt->nb[2], (size_t) t0 * io.dt->nb[1]);
        p->B  = ggml_view_4d(e.ctx, io.B, sc.d_state, sc.n_group, nt, 1, io.B->nb[1], io.B->nb[2], io.B->nb[3],
                             (size_t) t0 * io.B->nb[2]);
        p->C  = ggml_view_4d(e.ctx, io.C, sc.d_state, sc.n_group, nt, 1, io.C->nb[1], io.C->nb[2], io.C->nb[3],
                             (size_t) t0 * io.C->nb[2]);
    }
    struct ggml_tensor * r1 = to_alloc(&e, scan_op(&e, &p1, 1));
    to_compute(&e, r1, 2);
    p2.s = to_new(&e, GGML_TYPE_F32, sc.d_state, sc.head_dim, sc.n_head, 1);
    memcpy(p2.s->data, (const float *) r1->data + ggml_nelements(p1.x), (size_t) nst * sizeof(float));
    struct ggml_tensor * r2 = to_alloc(&e, scan_op(&e, &p2, 1));
    to_compute(&e, r2, 2);
    const int64_t row = sc.head_dim * sc.n_head;
    check_same(r1, 0, whole, 0, split * row, "first call's outputs");
    check_same(r2, 0, whole, split * row, (sc.n_tok - split) * row, "second call's outputs");
    check_same(r2, ggml_nelements(p2.x), whole, ggml_nelements(io.x), nst, "final state");
    to_end(&e);
}

Test(ssm_scan, rejects_state_rows_out_of_range_at_compute) {
    const struct scan_case sc = { 4, 2, 2, 1, 2, 1, 1, 1, false };
    struct to_env e;
    to_begin(&e);
    const struct scan_io io = scan_inputs(&e, &sc, 17);
    ((int32_t *) io.ids->data)[0] = 1; /* s has one row */
    struct ggml_tensor * r = to_alloc(&e, scan_op(&e, &io, 1));
    cr_assert_eq(tu_compute(e.ctx, r, 1), GGML_STATUS_FAILED);
    cr_assert_not_null(strstr(ggmlx_last_error(), "ids"), "%s", ggmlx_last_error());
    to_end(&e);
}

Test(ssm_scan, rejects_bad_shapes) {
    const int64_t ds = 4, hd = 3, nh = 4, nt = 2, ns = 2;
    for (int bad = 0; bad < 7; bad++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * s   = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ds, hd, nh, ns);
        struct ggml_tensor * x   = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, hd, nh, nt, ns);
        struct ggml_tensor * dt  = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, bad == 0 ? nh + 1 : nh, nt, ns);
        struct ggml_tensor * A   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, bad == 1 ? ds : 1, nh);
        struct ggml_tensor * B   = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ds, bad == 2 ? 3 : 2, nt, ns);
        struct ggml_tensor * C   = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ds, bad == 2 ? 3 : 2, nt, bad == 3 ? 1 : ns);
        struct ggml_tensor * ids = ggml_new_tensor_1d(ctx, bad == 4 ? GGML_TYPE_F32 : GGML_TYPE_I32, ns);
        int64_t K = bad == 1 ? 2 : bad == 5 ? 0 : 1; /* 1: K > 1 with Mamba-1's A */
        if (bad == 6) {
            s = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, ds, hd + 1, nh, ns);
        }
        to_expect_rejected(ctx, ggml_ssm_scan(ctx, s, x, dt, A, B, C, ids, K), "ggml_ssm_scan");
        ggml_free(ctx);
    }
}

/* ---- RWKV_WKV6, GATED_LINEAR_ATTN, RWKV_WKV7 ------------------------------------------------- */

enum rwkv_kind { WKV6, GLA, WKV7 };

static int rwkv_n_in(enum rwkv_kind kind) {
    return kind == WKV6 ? 5 : kind == GLA ? 4 : 6;
}

/* the kind's inputs (argument order) then the state: decays in (0, 1) where the recurrence needs them */
static void rwkv_inputs(struct to_env * e, enum rwkv_kind kind, int64_t S, int64_t H, int64_t T, int64_t n_seqs,
                        uint64_t salt, struct ggml_tensor ** in) {
    struct tu_rng rng = tu_rng_new(salt);
    const int n = rwkv_n_in(kind);
    for (int i = 0; i < n; i++) {
        const bool decay = (kind == WKV6 && i == 4) || (kind == GLA && i == 3) || (kind == WKV7 && i == 1);
        const bool bonus = kind == WKV6 && i == 3;
        in[i] = rnd(e, &rng, S, H, bonus ? 1 : T, 1, decay ? 0.5f : -1.0f, decay ? 0.99f : 1.0f);
    }
    if (kind == WKV7) { /* a = -kk, b = kk * a_gate as RWKV-7 feeds them: keeps the state bounded */
        for (int64_t i = 0; i < S * H * T; i++) {
            ((float *) in[4]->data)[i] *= 0.3f;
        }
    }
    in[n] = rnd(e, &rng, S * S * H, n_seqs, 1, 1, -1.0f, 1.0f);
}

static struct ggml_tensor * rwkv_op(struct ggml_context * ctx, enum rwkv_kind kind, struct ggml_tensor ** in,
                                    float scale) {
    switch (kind) {
    case WKV6: return ggml_rwkv_wkv6(ctx, in[0], in[1], in[2], in[3], in[4], in[5]);
    case GLA:  return ggml_gated_linear_attn(ctx, in[0], in[1], in[2], in[3], in[4], scale);
    default:   return ggml_rwkv_wkv7(ctx, in[0], in[1], in[2], in[3], in[4], in[5], in[6]);
    }
}

/* outputs [S*H, T] then states, as packed; state s[h][i][j] at h*S*S + i*S + j */
static double * rwkv_reference(enum rwkv_kind kind, int64_t S, int64_t H, int64_t T, int64_t n_seqs,
                               struct ggml_tensor ** in, float scale) {
    const int64_t C = S * H, L = T / n_seqs;
    double * out = calloc((size_t) (C * T + C * S * n_seqs), sizeof(double));
    const struct ggml_tensor * state = in[rwkv_n_in(kind)];
    for (int64_t i = 0; i < C * S * n_seqs; i++) {
        out[C * T + i] = at(state, i);
    }
#define IN(k, t, h, i) at(in[k], (t) * C + (h) * S + (i))
    for (int64_t q = 0; q < n_seqs; q++) {
        for (int64_t t = q * L; t < (q + 1) * L; t++) {
            for (int64_t h = 0; h < H; h++) {
                double * s = out + C * T + q * C * S + h * S * S;
                double * o = out + t * C + h * S;
                if (kind == WKV7) { /* r w k v a b */
                    for (int64_t i = 0; i < S; i++) {
                        double sa = 0;
                        for (int64_t j = 0; j < S; j++) {
                            sa += IN(4, t, h, j) * s[i * S + j];
                        }
                        for (int64_t j = 0; j < S; j++) {
                            s[i * S + j] = s[i * S + j] * IN(1, t, h, j) + IN(3, t, h, i) * IN(2, t, h, j) +
                                           sa * IN(5, t, h, j);
                            o[i] += s[i * S + j] * IN(0, t, h, j);
                        }
                    }
                    continue;
                }
                for (int64_t i = 0; i < S; i++) {
                    const double k = IN(0, t, h, i), rq = IN(2, t, h, i);
                    for (int64_t j = 0; j < S; j++) {
                        const double kv = k * IN(1, t, h, j);
                        if (kind == WKV6) { /* k v r u w */
                            o[j] += rq * (at(in[3], h * S + i) * kv + s[i * S + j]);
                            s[i * S + j] = s[i * S + j] * IN(4, t, h, i) + kv;
                        } else { /* k v q g */
                            s[i * S + j] = s[i * S + j] * IN(3, t, h, i) + kv;
                            o[j] += rq * scale * s[i * S + j];
                        }
                    }
                }
            }
        }
    }
#undef IN
    return out;
}

static void run_rwkv(enum rwkv_kind kind, int64_t S, int64_t H, int64_t L, int64_t n_seqs, int n_threads,
                     uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * in[7];
    const int64_t T = L * n_seqs;
    rwkv_inputs(&e, kind, S, H, T, n_seqs, salt, in);
    const float scale = 0.37f;
    struct ggml_tensor * r = rwkv_op(e.ctx, kind, in, scale);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    cr_assert(r->ne[0] == S * H && r->ne[1] == T + S * n_seqs && r->ne[2] == 1);
    if (kind == GLA) {
        cr_assert_eq(ggmlx_get_op_params_f32(r, 0), scale);
    }
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = rwkv_reference(kind, S, H, T, n_seqs, in, scale);
    to_check(r, want, 1e-4, kind == WKV6 ? "wkv6" : kind == GLA ? "gla" : "wkv7");
    free(want);
    to_end(&e);
}

/* a call on the first tokens, then one on the rest from its state, equals one call on all */
static void run_rwkv_carry(enum rwkv_kind kind) {
    const int64_t S = 5, H = 3, T = 7, split = 3, C = S * H;
    struct to_env e;
    to_begin(&e);
    struct ggml_tensor * in[7], * p1[7], * p2[7];
    rwkv_inputs(&e, kind, S, H, T, 1, 30 + kind, in);
    struct ggml_tensor * whole = to_alloc(&e, rwkv_op(e.ctx, kind, in, 0.5f));
    to_compute(&e, whole, 1);
    const int n = rwkv_n_in(kind);
    for (int i = 0; i < n; i++) {
        if (kind == WKV6 && i == 3) {
            p1[i] = p2[i] = in[i];
            continue;
        }
        p1[i] = ggml_view_3d(e.ctx, in[i], S, H, split, in[i]->nb[1], in[i]->nb[2], 0);
        p2[i] = ggml_view_3d(e.ctx, in[i], S, H, T - split, in[i]->nb[1], in[i]->nb[2], (size_t) split * in[i]->nb[2]);
    }
    p1[n] = in[n];
    struct ggml_tensor * r1 = to_alloc(&e, rwkv_op(e.ctx, kind, p1, 0.5f));
    to_compute(&e, r1, 2);
    p2[n] = to_new(&e, GGML_TYPE_F32, S * S * H, 1, 1, 1);
    memcpy(p2[n]->data, (const float *) r1->data + split * C, (size_t) (S * C) * sizeof(float));
    struct ggml_tensor * r2 = to_alloc(&e, rwkv_op(e.ctx, kind, p2, 0.5f));
    to_compute(&e, r2, 2);
    check_same(r1, 0, whole, 0, split * C, "first call's outputs");
    check_same(r2, 0, whole, split * C, (T - split) * C, "second call's outputs");
    check_same(r2, (T - split) * C, whole, T * C, S * C, "final state");
    to_end(&e);
}

Test(rwkv_wkv6, matches_the_recurrence_over_sequences) {
    run_rwkv(WKV6, 3, 2, 3, 2, 1, 40);
    run_rwkv(WKV6, 1, 1, 1, 1, 1, 41);
    run_rwkv(WKV6, 16, 5, 4, 3, 3, 42);
}

Test(rwkv_wkv6, state_carried_between_calls_equals_one_call) {
    run_rwkv_carry(WKV6);
}

Test(gated_linear_attn, matches_the_recurrence_over_sequences) {
    run_rwkv(GLA, 3, 2, 3, 2, 1, 43);
    run_rwkv(GLA, 1, 1, 1, 1, 1, 44);
    run_rwkv(GLA, 16, 5, 4, 3, 3, 45);
}

Test(gated_linear_attn, state_carried_between_calls_equals_one_call) {
    run_rwkv_carry(GLA);
}

Test(rwkv_wkv7, matches_the_recurrence_over_sequences) {
    run_rwkv(WKV7, 3, 2, 3, 2, 1, 46);
    run_rwkv(WKV7, 1, 1, 1, 1, 1, 47);
    run_rwkv(WKV7, 16, 5, 4, 3, 3, 48);
}

Test(rwkv_wkv7, state_carried_between_calls_equals_one_call) {
    run_rwkv_carry(WKV7);
}

static void expect_rwkv_rejected(enum rwkv_kind kind, int bad_input, int64_t state_ne0, int64_t state_ne1) {
    const int64_t S = 4, H = 2, T = 6;
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * in[7];
    const int n = rwkv_n_in(kind);
    for (int i = 0; i < n; i++) {
        const bool bonus = kind == WKV6 && i == 3;
        in[i] = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, S, H, bonus ? 1 : (i == bad_input ? T - 1 : T));
    }
    in[n] = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, state_ne0, state_ne1);
    const char * name = kind == WKV6 ? "ggml_rwkv_wkv6" : kind == GLA ? "ggml_gated_linear_attn" : "ggml_rwkv_wkv7";
    to_expect_rejected(ctx, rwkv_op(ctx, kind, in, 1.0f), name);
    ggml_free(ctx);
}

Test(rwkv_wkv6, rejects_bad_shapes) {
    expect_rwkv_rejected(WKV6, 1, 32, 2);  /* v's tokens */
    expect_rwkv_rejected(WKV6, -1, 31, 2); /* state size */
    expect_rwkv_rejected(WKV6, -1, 32, 4); /* 6 tokens do not split among 4 sequences */
}

Test(gated_linear_attn, rejects_bad_shapes) {
    expect_rwkv_rejected(GLA, 3, 32, 2);
    expect_rwkv_rejected(GLA, -1, 32, 3 * 1 + 1);
}

Test(rwkv_wkv7, rejects_bad_shapes) {
    expect_rwkv_rejected(WKV7, 5, 32, 2);
    expect_rwkv_rejected(WKV7, -1, 33, 1);
}

Test(rwkv_wkv7, rejects_non_contiguous_input) {
    struct ggml_context * ctx = to_small_ctx();
    struct ggml_tensor * in[7];
    for (int i = 0; i < 6; i++) {
        in[i] = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 4, 2, 3);
    }
    in[2] = ggml_permute(ctx, ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 2, 4, 3), 1, 0, 2, 3);
    in[6] = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 32, 1);
    to_expect_rejected(ctx, rwkv_op(ctx, WKV7, in, 1.0f), "ggml_rwkv_wkv7");
    ggml_free(ctx);
}

/* ---- GATED_DELTA_NET ----------------------------------------------------------------------- */

struct gdn_case {
    int64_t S, H, Hk, T, N, Nk, K;
    bool    kda;
};

struct gdn_io {
    struct ggml_tensor *q, *k, *v, *g, *beta, *state;
};

static struct gdn_io gdn_inputs(struct to_env * e, const struct gdn_case * c, uint64_t salt) {
    struct tu_rng rng = tu_rng_new(salt);
    struct gdn_io io;
    /* q, k L2-normalized as the models feed them, scaled so the delta rule stays stable */
    io.q = rnd(e, &rng, c->S, c->Hk, c->T, c->Nk, -1.0f, 1.0f);
    io.k = rnd(e, &rng, c->S, c->Hk, c->T, c->Nk, -1.0f, 1.0f);
    for (int64_t r = 0; r < c->Hk * c->T * c->Nk; r++) {
        float * kr = (float *) io.k->data + r * c->S;
        double n2 = 0;
        for (int64_t i = 0; i < c->S; i++) {
            n2 += (double) kr[i] * kr[i];
        }
        for (int64_t i = 0; i < c->S; i++) {
            kr[i] = (float) (kr[i] / sqrt(n2));
        }
    }
    io.v     = rnd(e, &rng, c->S, c->H, c->T, c->N, -1.0f, 1.0f);
    io.g     = rnd(e, &rng, c->kda ? c->S : 1, c->H, c->T, c->N, -0.5f, 0.0f);
    io.beta  = rnd(e, &rng, 1, c->H, c->T, c->N, 0.1f, 0.9f);
    io.state = rnd(e, &rng, c->S, c->S, c->H, c->N, -0.5f, 0.5f);
    return io;
}

static struct ggml_tensor * gdn_op(struct ggml_context * ctx, const struct gdn_io * io, int64_t K) {
    return ggml_gated_delta_net(ctx, io->q, io->k, io->v, io->g, io->beta, io->state, K);
}

/* outputs then K slots (NAN where not written); state s[j][i] at j*S + i, j over v, i over k */
static double * gdn_reference(const struct gdn_case * c, const struct gdn_io * io) {
    const int64_t S = c->S, H = c->H, T = c->T, N = c->N;
    const int64_t ny = S * H * T * N, nst = S * S * H * N;
    double * out = malloc((size_t) (ny + c->K * nst) * sizeof(double));
    for (int64_t i = 0; i < ny + c->K * nst; i++) {
        out[i] = NAN;
    }
    double * s = malloc((size_t) (S * S) * sizeof(double));
    double * d = malloc((size_t) S * sizeof(double));
    for (int64_t n = 0; n < N; n++) {
        for (int64_t h = 0; h < H; h++) {
            const int64_t hk = h % c->Hk, nk = n / (N / c->Nk);
            for (int64_t j = 0; j < S; j++) {
                for (int64_t i = 0; i < S; i++) {
                    s[j * S + i] = tu_get(io->state, i, j, h, n);
                }
            }
            for (int64_t t = 0; t < T; t++) {
                for (int64_t j = 0; j < S; j++) {
                    for (int64_t i = 0; i < S; i++) {
                        s[j * S + i] *= exp(tu_get(io->g, c->kda ? i : 0, h, t, n));
                    }
                }
                const double beta = tu_get(io->beta, 0, h, t, n);
                for (int64_t j = 0; j < S; j++) {
                    double sk = 0;
                    for (int64_t i = 0; i < S; i++) {
                        sk += s[j * S + i] * tu_get(io->k, i, hk, t, nk);
                    }
                    d[j] = (tu_get(io->v, j, h, t, n) - sk) * beta;
                }
                for (int64_t j = 0; j < S; j++) {
                    double o = 0;
                    for (int64_t i = 0; i < S; i++) {
                        s[j * S + i] += tu_get(io->k, i, hk, t, nk) * d[j];
                        o += s[j * S + i] * tu_get(io->q, i, hk, t, nk);
                    }
                    out[((n * T + t) * H + h) * S + j] = o / sqrt((double) S);
                }
                const int64_t slot = T - 1 - t;
                if (slot < c->K) {
                    memcpy(out + ny + slot * nst + (n * H + h) * S * S, s, (size_t) (S * S) * sizeof(double));
                }
            }
        }
    }
    free(d);
    free(s);
    return out;
}

static void run_gdn(const struct gdn_case * c, int n_threads, uint64_t salt) {
    struct to_env e;
    to_begin(&e);
    const struct gdn_io io = gdn_inputs(&e, c, salt);
    struct ggml_tensor * r = gdn_op(e.ctx, &io, c->K);
    cr_assert_not_null(r, "%s", ggmlx_last_error());
    const int64_t ny = c->S * c->H * c->T * c->N, nst = c->S * c->S * c->H * c->N;
    cr_assert(r->ne[0] == c->S * c->H && r->ne[1] == c->T * c->N + c->K * c->S * c->N);
    cr_assert_eq(ggmlx_get_op_params_i32(r, 0), (int32_t) c->K);
    to_alloc(&e, r);
    to_compute(&e, r, n_threads);
    double * want = gdn_reference(c, &io);
    check_flat(r, 0, want, ny, 1e-4, "gated_delta_net outputs");
    for (int64_t k = 0; k < c->K && k < c->T; k++) {
        check_flat(r, ny + k * nst, want + ny + k * nst, nst, 1e-4, k == 0 ? "final state" : "snapshot");
    }
    free(want);
    to_end(&e);
}

Test(gated_delta_net, scalar_gate_over_sequences) {
    const struct gdn_case a = { 5, 3, 3, 4, 2, 2, 1, false };
    run_gdn(&a, 1, 50);
    const struct gdn_case b = { 1, 1, 1, 1, 1, 1, 1, false };
    run_gdn(&b, 1, 51);
    const struct gdn_case c = { 32, 6, 6, 5, 2, 2, 1, false }; /* threads over (sequence, head) */
    run_gdn(&c, 3, 52);
}

Test(gated_delta_net, per_channel_gate_kda) {
    const struct gdn_case a = { 7, 2, 2, 3, 3, 3, 1, true };
    run_gdn(&a, 2, 53);
}

Test(gated_delta_net, q_and_k_repeat_over_heads_and_sequences) {
    const struct gdn_case a = { 4, 6, 2, 3, 4, 2, 1, false };
    run_gdn(&a, 2, 54);
}

Test(gated_delta_net, keeps_k_state_snapshots) {
    const struct gdn_case a = { 5, 2, 2, 4, 2, 2, 3, false };
    run_gdn(&a, 2, 55);
    const struct gdn_case b = { 3, 2, 1, 2, 1, 1, 4, true }; /* fewer tokens than slots */
    run_gdn(&b, 1, 56);
}

Test(gated_delta_net, state_carried_between_calls_equals_one_call) {
    const struct gdn_case c = { 6, 3, 3, 7, 1, 1, 1, true };
    const int64_t split = 3, S = c.S, H = c.H, row = S * H;
    struct to_env e;
    to_begin(&e);
    const struct gdn_io io = gdn_inputs(&e, &c, 57);
    struct ggml_tensor * whole = to_alloc(&e, gdn_op(e.ctx, &io, 1));
    to_compute(&e, whole, 1);
    struct gdn_io p[2];
    for (int part = 0; part < 2; part++) {
        const int64_t t0 = part == 0 ? 0 : split, nt = part == 0 ? split : c.T - split;
        struct ggml_tensor * src[5] = { io.q, io.k, io.v, io.g, io.beta };
        struct ggml_tensor * dstv[5];
        for (int i = 0; i < 5; i++) {
            dstv[i] = ggml_view_4d(e.ctx, src[i], src[i]->ne[0], src[i]->ne[1], nt, 1, src[i]->nb[1], src[i]->nb[2],
                                   src[i]->nb[3], (size_t) t0 * src[i]->nb[2]);
        }
        p[part] = (struct gdn_io) { dstv[0], dstv[1], dstv[2], dstv[3], dstv[4], io.state };
    }
    struct ggml_tensor * r1 = to_alloc(&e, gdn_op(e.ctx, &p[0], 1));
    to_compute(&e, r1, 2);
    p[1].state = to_new(&e, GGML_TYPE_F32, S, S, H, 1);
    memcpy(p[1].state->data, (const float *) r1->data + split * row, (size_t) (S * row) * sizeof(float));
    struct ggml_tensor * r2 = to_alloc(&e, gdn_op(e.ctx, &p[1], 1));
    to_compute(&e, r2, 2);
    check_same(r1, 0, whole, 0, split * row, "first call's outputs");
    check_same(r2, 0, whole, split * row, (c.T - split) * row, "second call's outputs");
    check_same(r2, (c.T - split) * row, whole, c.T * row, S * row, "final state");
    to_end(&e);
}

Test(gated_delta_net, rejects_bad_shapes) {
    const int64_t S = 4, H = 4, T = 3, N = 2;
    for (int bad = 0; bad < 8; bad++) {
        struct ggml_context * ctx = to_small_ctx();
        struct ggml_tensor * q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, bad == 0 ? 3 : 2, T, N);
        struct ggml_tensor * k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad == 1 ? S + 1 : S, 2, T, N);
        struct ggml_tensor * v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, H, T, N);
        struct ggml_tensor * g = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad == 2 ? 2 : 1, H, T, N);
        struct ggml_tensor * beta = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, bad == 3 ? S : 1, H, T, N);
        struct ggml_tensor * st = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, S, bad == 4 ? H - 1 : H, N);
        if (bad == 5) {
            v = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, S, H, T, N);
        }
        if (bad == 6) {
            k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, S, 2, T, 3); /* 3 sequences do not divide 2 */
        }
        const int64_t K = bad == 7 ? 0 : 1;
        to_expect_rejected(ctx, ggml_gated_delta_net(ctx, q, k, v, g, beta, st, K), "ggml_gated_delta_net");
        ggml_free(ctx);
    }
}

/* ---- every instruction-set path ------------------------------------------------------------ */

/* the row loops exist per ISA (portable, AVX2, AVX-512); each must match the recurrences, tails included */
static void run_every_family(void) {
    const struct scan_case m2 = { 37, 3, 4, 2, 3, 2, 3, 2, false };
    run_ssm_scan(&m2, 2, 60);
    const struct scan_case m1 = { 19, 5, 2, 1, 3, 1, 1, 1, true };
    run_ssm_scan(&m1, 1, 61);
    run_rwkv(WKV6, 21, 3, 3, 2, 2, 62);
    run_rwkv(GLA, 21, 3, 3, 2, 2, 63);
    run_rwkv(WKV7, 21, 3, 3, 2, 2, 64);
    const struct gdn_case sc = { 37, 3, 3, 4, 2, 2, 2, false };
    run_gdn(&sc, 2, 65);
    const struct gdn_case kda = { 19, 2, 1, 3, 2, 1, 1, true };
    run_gdn(&kda, 1, 66);
}

Test(recurrent_isa, portable_path) {
    setenv("GGMLX_RECURRENT_KERNEL", "portable", 1);
    run_every_family();
}

Test(recurrent_isa, avx2_path) {
    setenv("GGMLX_RECURRENT_KERNEL", "avx2", 1);
    run_every_family();
}

Test(recurrent_isa, best_path) {
    unsetenv("GGMLX_RECURRENT_KERNEL");
    run_every_family();
}
