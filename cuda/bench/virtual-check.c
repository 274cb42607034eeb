/*
 * virtual-check.c -- GGML_CUDA_DEVICES virtual devices on a GPU machine without Criterion
 * (scripts/gpu-check.sh runs it; tests/test-cuda-virtual.c checks the plain C part anywhere).
 *
 *   cuda-virtual-check [--devices N]
 *
 * Sets GGML_CUDA_DEVICES=N (default 3) before the registry is first used, then checks:
 *   registry  N devices CUDA0..CUDA{N-1}, distinct device ids
 *   memory    each reports a budget (free <= total); devices sharing a GPU report equal budgets
 *   oom       the last device refuses what its budget cannot hold, with a message naming it,
 *             while CUDA0 still allocates; freed bytes are usable again
 *   copy      20 rounds of: set on CUDA0, compute there, tensor_copy_async to the last device,
 *             compute there, read back: every value right (rule 7 between virtual devices)
 *   graphs    those computes were replayed from CUDA graphs (unless GGML_CUDA_DISABLE_GRAPHS)
 *   mul_mat   cuBLAS inside a capture: a small y = W x replayed, exact each time, no failed capture
 *   rows      get_rows with an index out of range, in a replayed compute: the compute reports
 *             GGML_STATUS_FAILED with the CPU's message, nothing of the op is written (as on
 *             the CPU), the status sticks until cleared, and the backend computes right after
 * Exit status: 0 all passed, 1 a check failed, 2 no CUDA device.
 */
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cuda.h"
#include "ggmlx.h"
#include "ggmlx-backend.h"

#include "graph-cache.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ELEM (4 << 20)
#define ROUNDS 20

typedef bool (*graph_stats_fn)(ggml_backend_t backend, struct ggmlx_cuda_graph_stats * stats);

static int g_passed, g_failed;

static void report(const char * check, bool ok, const char * fmt, ...) __attribute__((format(printf, 3, 4)));

static void report(const char * check, bool ok, const char * fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("%-9s %s  %s\n", check, ok ? "ok  " : "FAIL", msg);
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
    }
}

static const char * last_error(void) {
    const char * e = ggmlx_last_error();
    return e ? e : "(no message)";
}

static void check_registry(int n) {
    const int got = ggml_backend_cuda_get_device_count();
    bool ok = got == n;
    for (int i = 0; ok && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "CUDA%d", i);
        ggml_backend_dev_t d = ggml_backend_dev_by_name(name);
        if (d == NULL) {
            ok = false;
            break;
        }
        struct ggml_backend_dev_props pi;
        ggml_backend_dev_get_props(d, &pi);
        for (int j = 0; j < i && pi.device_id != NULL; j++) {
            char other[16];
            snprintf(other, sizeof other, "CUDA%d", j);
            struct ggml_backend_dev_props pj;
            ggml_backend_dev_get_props(ggml_backend_dev_by_name(other), &pj);
            if (pj.device_id != NULL && strcmp(pi.device_id, pj.device_id) == 0) {
                ok = false; /* two devices that claim to be one */
            }
        }
        printf("          %s  %s  id %s\n", name, ggml_backend_dev_description(d), pi.device_id ? pi.device_id : "-");
    }
    report("registry", ok, "%d CUDA devices, %d wanted", got, n);
}

/* the device id without the "-vK" a shared GPU's devices carry */
static size_t gpu_id_len(const char * id) {
    const char * v = strstr(id, "-v");
    return v ? (size_t) (v - id) : strlen(id);
}

static void check_memory(int n) {
    bool ok = true;
    for (int i = 0; i < n; i++) {
        ggml_backend_dev_t di = ggml_backend_reg_dev_get(ggml_backend_cuda_reg(), (size_t) i);
        if (di == NULL) {
            ok = false;
            break;
        }
        struct ggml_backend_dev_props pi;
        ggml_backend_dev_get_props(di, &pi);
        printf("          %s  budget %.2f GiB, free %.2f GiB\n", pi.name, pi.memory_total / 1073741824.0,
               pi.memory_free / 1073741824.0);
        ok = ok && pi.memory_total > 0 && pi.memory_free <= pi.memory_total;
        for (int j = 0; j < i; j++) {
            struct ggml_backend_dev_props pj;
            ggml_backend_dev_get_props(ggml_backend_reg_dev_get(ggml_backend_cuda_reg(), (size_t) j), &pj);
            if (pi.device_id && pj.device_id && gpu_id_len(pi.device_id) == gpu_id_len(pj.device_id) &&
                strncmp(pi.device_id, pj.device_id, gpu_id_len(pi.device_id)) == 0 &&
                pi.memory_total != pj.memory_total) {
                ok = false; /* one GPU's devices get equal shares */
            }
        }
    }
    report("memory", ok, "budgets reported, free within them");
}

static void check_oom(int n) {
    ggml_backend_buffer_type_t last = ggml_backend_cuda_buffer_type(n - 1);
    ggml_backend_buffer_type_t first = ggml_backend_cuda_buffer_type(0);
    size_t free_last = 0, total_last = 0, free_first = 0, total_first = 0;
    ggml_backend_cuda_get_device_memory(n - 1, &free_last, &total_last);
    ggml_backend_cuda_get_device_memory(0, &free_first, &total_first);
    if (last == NULL || first == NULL || total_last == 0) {
        report("oom", false, "no buffer types: %s", last_error());
        return;
    }
    char name[16];
    snprintf(name, sizeof name, "CUDA%d", n - 1);

    ggml_backend_buffer_t too_big = ggml_backend_buft_alloc_buffer(last, total_last + 4096);
    const char * e = ggmlx_last_error();
    const bool refused = too_big == NULL && e != NULL && strstr(e, "out of memory") && strstr(e, name);
    ggml_backend_buffer_free(too_big);

    const size_t big = total_last / 10 * 6;
    ggml_backend_buffer_t a = ggml_backend_buft_alloc_buffer(last, big);
    ggml_backend_buffer_t b = a ? ggml_backend_buft_alloc_buffer(last, total_last / 2) : NULL;
    const bool second_refused = a != NULL && b == NULL;
    /* another device on the same GPU is not affected (n > 1), nor the first when n == 1 is refused */
    ggml_backend_buffer_t c = n > 1 ? ggml_backend_buft_alloc_buffer(first, total_first / 10 * 6) : NULL;
    const bool other_ok = n == 1 || c != NULL;
    ggml_backend_buffer_free(a);
    ggml_backend_buffer_free(b);
    ggml_backend_buffer_free(c);
    ggml_backend_buffer_t again = ggml_backend_buft_alloc_buffer(last, big);
    const bool reused = again != NULL;
    ggml_backend_buffer_free(again);
    report("oom", refused && second_refused && other_ok && reused,
           "%s refuses past its budget (%s), 60%% then 50%% (%s), CUDA0 meanwhile (%s), again after free (%s)", name,
           refused ? "yes" : "no", second_refused ? "refused" : "not refused", other_ok ? "allocates" : "fails",
           reused ? "yes" : "no");
}

/* a = x on src; a2 = a + a on src; copy a2 to b on dst; b2 = b * b on dst: b2 = 4 x^2 */
static void check_copy(int n, graph_stats_fn stats_fn) {
    const int dst_i = n - 1;
    ggml_backend_t src = ggml_backend_cuda_init(0);
    ggml_backend_t dst = dst_i == 0 ? NULL : ggml_backend_cuda_init(dst_i);
    if (dst_i == 0) {
        dst = src; /* one device: the copy is within one backend */
    }
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * cs = ggml_init(ip);
    struct ggml_context * cd = ggml_init(ip);
    ggml_backend_buffer_t bs = NULL, bd = NULL;
    float * h = malloc(N_ELEM * sizeof *h);
    float * out = malloc(N_ELEM * sizeof *out);
    char why[256] = "";
    bool reported = false;
    if (src == NULL || dst == NULL || cs == NULL || cd == NULL || h == NULL || out == NULL) {
        snprintf(why, sizeof why, "setup: %s", last_error());
        goto done;
    }
    struct ggml_tensor * a  = ggml_new_tensor_1d(cs, GGML_TYPE_F32, N_ELEM);
    struct ggml_tensor * a2 = ggml_add(cs, a, a);
    struct ggml_tensor * b  = ggml_new_tensor_1d(cd, GGML_TYPE_F32, N_ELEM);
    struct ggml_tensor * b2 = ggml_mul(cd, b, b);
    struct ggml_cgraph * gs = ggml_new_graph(cs);
    struct ggml_cgraph * gd = ggml_new_graph(cd);
    ggml_build_forward_expand(gs, a2);
    ggml_build_forward_expand(gd, b2);
    bs = ggml_backend_alloc_ctx_tensors(cs, src);
    bd = ggml_backend_alloc_ctx_tensors(cd, dst);
    if (bs == NULL || bd == NULL) {
        snprintf(why, sizeof why, "allocation: %s", last_error());
        goto done;
    }
    int bad_round = -1;
    for (int r = 0; r < ROUNDS && bad_round < 0; r++) {
        for (int i = 0; i < N_ELEM; i++) {
            h[i] = (float) ((i + r) % 17 + 1);
        }
        ggml_backend_tensor_set_async(src, a, h, 0, N_ELEM * sizeof *h);
        ggml_backend_graph_compute_async(src, gs);
        ggml_backend_tensor_copy_async(src, dst, a2, b);
        ggml_backend_graph_compute_async(dst, gd);
        ggml_backend_tensor_get_async(dst, b2, out, 0, N_ELEM * sizeof *out);
        ggml_backend_synchronize(dst);
        ggml_backend_synchronize(src); /* h is rewritten next round */
        if (ggmlx_backend_get_status(src) != GGML_STATUS_SUCCESS ||
            ggmlx_backend_get_status(dst) != GGML_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "round %d: %s", r, last_error());
            bad_round = r;
            break;
        }
        for (int i = 0; i < N_ELEM; i++) {
            const float want = 4.0f * h[i] * h[i];
            if (out[i] != want) {
                snprintf(why, sizeof why, "round %d: element %d is %g, not %g", r, i, (double) out[i], (double) want);
                bad_round = r;
                break;
            }
        }
    }
    report("copy", bad_round < 0, "CUDA0 -> CUDA%d, %d rounds of %d floats%s%s", dst_i, ROUNDS, N_ELEM,
           why[0] ? ": " : "", why);
    reported = true;
    if (stats_fn != NULL && bad_round < 0) {
        struct ggmlx_cuda_graph_stats s0, s1;
        memset(&s0, 0, sizeof s0);
        memset(&s1, 0, sizeof s1);
        stats_fn(src, &s0);
        stats_fn(dst, &s1);
        const bool disabled = getenv("GGML_CUDA_DISABLE_GRAPHS") != NULL;
        const bool ok = disabled ? s0.n_replay == 0 && s1.n_replay == 0
                                 : s0.n_replay >= ROUNDS - 3 && s1.n_replay >= ROUNDS - 3 && s0.n_failed == 0 &&
                                       s1.n_failed == 0;
        report("graphs", ok, "CUDA0 %llu replays, %llu captures, %llu failed; CUDA%d %llu replays%s",
               (unsigned long long) s0.n_replay, (unsigned long long) s0.n_capture, (unsigned long long) s0.n_failed,
               dst_i, (unsigned long long) s1.n_replay, disabled ? " (GGML_CUDA_DISABLE_GRAPHS set)" : "");
    }
done:
    if (!reported) {
        report("copy", false, "%s", why);
    }
    ggml_backend_buffer_free(bs);
    ggml_backend_buffer_free(bd);
    ggml_free(cs);
    ggml_free(cd);
    free(h);
    free(out);
    if (dst != src) {
        ggml_backend_free(dst);
    }
    ggml_backend_free(src);
}

/*
 * cuBLAS inside a capture: y = W x (W 64x64, x 64x8, F32) on CUDA0, four times: plain, captured,
 * replayed twice, each time against a host reference, and no capture may have failed.
 */
static void check_mul_mat_graphs(graph_stats_fn stats_fn) {
    enum { K = 64, M = 64, N = 8 };
    ggml_backend_t be = ggml_backend_cuda_init(0);
    struct ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    ggml_backend_buffer_t buf = NULL;
    static float w[M * K], x[K * N], y[M * N];
    struct ggmlx_cuda_graph_stats st;
    memset(&st, 0, sizeof st);
    char why[256] = "";
    if (be == NULL || ctx == NULL || stats_fn == NULL) {
        snprintf(why, sizeof why, "setup: %s", stats_fn == NULL ? "no ggmlx_backend_cuda_graph_stats" : last_error());
        goto done;
    }
    struct ggml_tensor * tw = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    struct ggml_tensor * tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    struct ggml_tensor * ty = ggml_mul_mat(ctx, tw, tx);
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, ty);
    buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    if (buf == NULL) {
        snprintf(why, sizeof why, "allocation: %s", last_error());
        goto done;
    }
    for (int i = 0; i < M * K; i++) {
        w[i] = (float) ((i * 7) % 11 - 5) * 0.25f;
    }
    ggml_backend_tensor_set(tw, w, 0, sizeof w);
    for (int r = 0; r < 4 && why[0] == '\0'; r++) {
        for (int i = 0; i < K * N; i++) {
            x[i] = (float) ((i + 3 * r) % 9 - 4);
        }
        ggml_backend_tensor_set(tx, x, 0, sizeof x);
        if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "round %d: %s", r, last_error());
            break;
        }
        ggml_backend_tensor_get(ty, y, 0, sizeof y);
        for (int j = 0; j < N && why[0] == '\0'; j++) {
            for (int i = 0; i < M; i++) {
                double ref = 0;
                for (int k = 0; k < K; k++) {
                    ref += (double) w[i * K + k] * x[j * K + k];
                }
                /* small integers times quarters: exact in F32 whatever the summation order */
                if ((double) y[j * M + i] != ref) {
                    snprintf(why, sizeof why, "round %d: y[%d,%d] = %g, not %g", r, i, j, (double) y[j * M + i], ref);
                    break;
                }
            }
        }
    }
    if (why[0] == '\0') {
        stats_fn(be, &st);
        if (getenv("GGML_CUDA_DISABLE_GRAPHS") == NULL && (st.n_failed != 0 || st.n_replay < 2)) {
            snprintf(why, sizeof why, "%llu replays, %llu failed captures (cuBLAS in a capture)",
                     (unsigned long long) st.n_replay, (unsigned long long) st.n_failed);
        }
    }
done:
    report("mul_mat", why[0] == '\0', "cuBLAS y = W x on CUDA0, 4 rounds exact, %llu replays%s%s",
           (unsigned long long) st.n_replay, why[0] ? ": " : "", why);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(be);
}

enum { ROWS_W = 4, ROWS_N = 10, ROWS_K = 4 };

/* out = table[ids]; "" when every row of out holds what it should (untouched: all still -1) */
static void rows_verify(struct ggml_tensor * out, const int32_t * ids, bool untouched, char * why, size_t n) {
    float y[ROWS_K * ROWS_W];
    ggml_backend_tensor_get(out, y, 0, sizeof y);
    for (int k = 0; k < ROWS_K; k++) {
        for (int c = 0; c < ROWS_W; c++) {
            const float want = untouched ? -1.0f : (float) (ids[k] * 10 + c);
            if (y[k * ROWS_W + c] != want) {
                snprintf(why, n, "out[%d, %d] = %g, not %g", c, k, (double) y[k * ROWS_W + c], (double) want);
                return;
            }
        }
    }
}

/* a replayed compute whose index 2 is 17: "" when it fails as the CPU would, and only then */
static void rows_bad_round(ggml_backend_t be, struct ggml_cgraph * g, struct ggml_tensor * ids_t,
                           struct ggml_tensor * out, char * why, size_t n) {
    static const int32_t bad[ROWS_K] = { 0, 3, 17, 2 };
    static const float   fill[ROWS_K * ROWS_W] = { -1, -1, -1, -1, -1, -1, -1, -1,
                                                   -1, -1, -1, -1, -1, -1, -1, -1 };
    static const char * want = "embd (GET_ROWS): row index 17 at [2, 0, 0] is out of range 0..9";
    ggml_backend_tensor_set(ids_t, bad, 0, sizeof bad);
    ggml_backend_tensor_set(out, fill, 0, sizeof fill);
    const enum ggml_status st = ggml_backend_graph_compute(be, g);
    if (st != GGML_STATUS_FAILED || strstr(last_error(), want) == NULL) {
        snprintf(why, n, "bad index: %s, \"%s\"", ggml_status_to_string(st), last_error());
        return;
    }
    if (ggmlx_backend_get_status(be) != GGML_STATUS_FAILED || ggml_backend_graph_compute(be, g) != GGML_STATUS_FAILED) {
        snprintf(why, n, "the status did not stick");
        return;
    }
    ggmlx_backend_clear_status(be);
    rows_verify(out, bad, true, why, n); /* a bad index: nothing of the op written, as on the CPU */
}

static void check_rows(graph_stats_fn stats_fn) {
    ggml_backend_t be = ggml_backend_cuda_init(0);
    struct ggml_init_params ip = { 4 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true };
    struct ggml_context * ctx = ggml_init(ip);
    ggml_backend_buffer_t buf = NULL;
    struct ggmlx_cuda_graph_stats s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    char why[320] = "";
    if (be == NULL || ctx == NULL || stats_fn == NULL) {
        snprintf(why, sizeof why, "setup: %s", stats_fn == NULL ? "no ggmlx_backend_cuda_graph_stats" : last_error());
        goto done;
    }
    struct ggml_tensor * table = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, ROWS_W, ROWS_N);
    struct ggml_tensor * ids_t = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, ROWS_K);
    struct ggml_tensor * out   = ggml_get_rows(ctx, table, ids_t);
    ggml_set_name(out, "embd");
    struct ggml_cgraph * g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, out);
    buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    if (buf == NULL) {
        snprintf(why, sizeof why, "allocation: %s", last_error());
        goto done;
    }
    float t[ROWS_N * ROWS_W];
    for (int i = 0; i < ROWS_N * ROWS_W; i++) {
        t[i] = (float) ((i / ROWS_W) * 10 + i % ROWS_W);
    }
    ggml_backend_tensor_set(table, t, 0, sizeof t);
    static const int32_t good[ROWS_K] = { 0, 3, 5, 2 };
    ggml_backend_tensor_set(ids_t, good, 0, sizeof good);
    /* warm-up and capture first, so the bad round is a replay */
    for (int r = 0; r < 3 && why[0] == '\0'; r++) {
        if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "round %d: %s", r, last_error());
        }
    }
    stats_fn(be, &s0);
    if (why[0] == '\0') {
        rows_bad_round(be, g, ids_t, out, why, sizeof why);
    }
    stats_fn(be, &s1);
    if (why[0] == '\0') {
        ggml_backend_tensor_set(ids_t, good, 0, sizeof good);
        if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) {
            snprintf(why, sizeof why, "after clear: %s", last_error());
        } else {
            rows_verify(out, good, false, why, sizeof why);
        }
    }
    if (why[0] == '\0' && getenv("GGML_CUDA_DISABLE_GRAPHS") == NULL && s1.n_replay <= s0.n_replay) {
        snprintf(why, sizeof why, "the bad compute was not a replay");
    }
done:
    report("rows", why[0] == '\0', "get_rows index 17 of 0..9 on CUDA0 fails at synchronize, nothing written%s%s",
           why[0] ? ": " : "", why);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(be);
}

int main(int argc, char ** argv) {
    int n = 3;
    if (argc == 3 && strcmp(argv[1], "--devices") == 0) {
        n = atoi(argv[2]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--devices N]\n", argv[0]);
        return 1;
    }
    if (n < 1 || n > GGML_CUDA_MAX_DEVICES) {
        fprintf(stderr, "cuda-virtual-check: --devices takes 1 to %d\n", GGML_CUDA_MAX_DEVICES);
        return 1;
    }
    char value[16];
    snprintf(value, sizeof value, "%d", n);
    setenv("GGML_CUDA_DEVICES", value, 1); /* before the registry's first use */
    unsetenv("GGMLX_CUDA_DEVICE_MEMORY");
    if (ggml_backend_cuda_get_device_count() == 0) {
        printf("cuda-virtual-check: no CUDA device\n");
        return 2;
    }
    /* a build whose libggml does not register CUDA itself (the emulated backend of the tests):
     * registering the same registry again does nothing */
    ggml_backend_register(ggml_backend_cuda_reg());
    graph_stats_fn stats_fn =
        (graph_stats_fn) ggml_backend_reg_get_proc_address(ggml_backend_cuda_reg(), "ggmlx_backend_cuda_graph_stats");
    check_registry(n);
    check_memory(n);
    check_oom(n);
    check_copy(n, stats_fn);
    check_mul_mat_graphs(stats_fn);
    check_rows(stats_fn);
    printf("cuda-virtual-check: %d passed, %d failed (GGML_CUDA_DEVICES=%d)\n", g_passed, g_failed, n);
    return g_failed ? 1 : 0;
}
