/*
 * bench-cuda.c -- the CUDA backend against the GPU's own ceilings, both measured in the same run.
 *
 *   bench-cuda [--json] [--json-out FILE] [--quick] [--reps N] [--device NAME] [--ggml-only]
 *
 * Memory-bound ops (add, mul, scale, rms_norm, soft_max_ext, cpy F32->F16 on 64M elements) run
 * through the ggml backend API on the device (CUDA0 unless --device). Each is compared with a
 * device-to-device cudaMemcpyAsync that moves the same number of bytes (half read, half written),
 * so "% of copy" says how close the kernel is to what the memory system gives a plain copy.
 * mul_mat with F32, F16 and BF16 weights is compared with cublasGemmEx called directly on the same
 * shapes and the same data; the two results are also compared (relative L2 difference).
 *
 * Timing: every figure is the median over --reps batches, after warm-up. A batch is K runs back
 * to back divided by K. The references run on our own stream and are timed with cudaEvents. The
 * backend's stream is private to it, so a ggml batch is K graph_compute_async calls followed by one
 * synchronize, timed on the host: the queue keeps the GPU busy while the host enqueues, so only one
 * synchronize (microseconds) falls on a batch of several hundred microseconds or more.
 *
 * --ggml-only skips the CUDA runtime and the references, so the ggml side can be exercised on any
 * device (CPU, SIM) on a machine without a GPU.
 *
 * Exit status: 0 every row ran, 1 some row failed or the registry has no such device (the
 * references are still measured and printed), 2 no CUDA device at all (said on stderr).
 *
 * This program links its own static cudart. libggml-cuda keeps its copy hidden, so the two never
 * see each other's streams or events; they share only the device's primary context.
 */
#include "bench-util.h"
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggmlx.h"
#include "ggmlx-backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 1000

struct options {
    bool         json;
    bool         quick;
    int          reps;   /* batches; the median is reported */
    int          batch;  /* runs per batch */
    const char * device; /* ggml device name */
    const char * json_out; /* also write the JSON here (NULL: no) */
    bool         ggml_only; /* no cudart and no references: the ggml side on any device (testing) */
    int64_t      row;    /* elementwise tensors are [row, rows] */
    int64_t      rows;
};

/* one row of the bandwidth table */
struct bw_row {
    const char * op;
    const char * types;
    int64_t      n;         /* elements of the op's main input */
    double       bytes;     /* fewest bytes the op must move: inputs read once, output written once */
    double       ggml_ms;   /* NAN: not measured */
    double       copy_ms;
    const char * note;      /* NULL: ok */
};

/* one row of the mul_mat table */
struct mm_row {
    const char * wtype;
    int          m, n, k;  /* C[m,n] = W[m,k] * X[k,n] in the usual notation */
    double       ggml_ms;
    double       cublas_ms;
    double       rel_diff; /* ||ggml - cublas|| / ||cublas||; NAN: not compared */
    const char * note;
};

static struct bw_row g_bw[8];
static int           g_n_bw;
static struct mm_row g_mm[8];
static int           g_n_mm;
static char          g_notes[16][256]; /* storage for notes that carry a message */
static int           g_n_notes;

static const char * keep_note(const char * fmt, const char * a, const char * b) {
    if (g_n_notes == (int) (sizeof g_notes / sizeof g_notes[0])) {
        return "failed (more notes than room)";
    }
    char * s = g_notes[g_n_notes++];
    snprintf(s, sizeof g_notes[0], fmt, a ? a : "", b ? b : "");
    /* a note goes into a markdown cell and a JSON string: keep it to plain characters */
    for (char * p = s; *p; p++) {
        if (*p == '|' || *p == '"' || *p == '\\' || (unsigned char) *p < 0x20) {
            *p = ' ';
        }
    }
    return s;
}

static const char * last_error(void) {
    const char * e = ggmlx_last_error();
    return e ? e : "no message";
}

/* ---- random data (never zeros: they hide unwritten outputs and can run faster) ---------------------- */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static void fill_random(float * x, int64_t n, float lo, float hi) {
    uint64_t s = g_rng;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = lo + (hi - lo) * (float) ((double) (s >> 11) * 0x1.0p-53);
    }
    g_rng = s;
}

/* ---- the references: our own stream, events, cuBLAS ------------------------------------------------ */

struct ref {
    int            device;
    cudaStream_t   stream;
    cudaEvent_t    start, stop;
    cublasHandle_t cublas;
    void         * src; /* copy reference buffers, copy_cap bytes each */
    void         * dst;
    size_t         copy_cap;
};

#define CU(call)                                                                                    \
    do {                                                                                            \
        const cudaError_t cu_err_ = (call);                                                         \
        if (cu_err_ != cudaSuccess) {                                                               \
            fprintf(stderr, "bench-cuda: %s: %s\n", #call, cudaGetErrorString(cu_err_));            \
            goto err;                                                                               \
        }                                                                                           \
    } while (0)

#define CB(call)                                                                                    \
    do {                                                                                            \
        const cublasStatus_t cb_st_ = (call);                                                       \
        if (cb_st_ != CUBLAS_STATUS_SUCCESS) {                                                      \
            fprintf(stderr, "bench-cuda: %s: %s\n", #call, cublasGetStatusString(cb_st_));          \
            goto err;                                                                               \
        }                                                                                           \
    } while (0)

static bool ref_init(struct ref * r, int device, size_t copy_cap) {
    memset(r, 0, sizeof *r);
    r->device = device;
    CU(cudaSetDevice(device));
    CU(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    CU(cudaEventCreate(&r->start));
    CU(cudaEventCreate(&r->stop));
    CB(cublasCreate(&r->cublas));
    CB(cublasSetStream(r->cublas, r->stream));
    CU(cudaMalloc(&r->src, copy_cap));
    CU(cudaMalloc(&r->dst, copy_cap));
    r->copy_cap = copy_cap;
    /* random bytes in the source: a copy of zeros could be compressed or short-cut */
    {
        const size_t chunk = 16u << 20;
        float * h = malloc(chunk);
        if (h == NULL) {
            fprintf(stderr, "bench-cuda: out of host memory\n");
            goto err;
        }
        fill_random(h, (int64_t) (chunk / sizeof(float)), -1.0f, 1.0f);
        for (size_t off = 0; off < copy_cap; off += chunk) {
            const size_t len = copy_cap - off < chunk ? copy_cap - off : chunk;
            const cudaError_t e = cudaMemcpy((char *) r->src + off, h, len, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) {
                fprintf(stderr, "bench-cuda: cudaMemcpy (fill): %s\n", cudaGetErrorString(e));
                free(h);
                goto err;
            }
        }
        free(h);
    }
    return true;
err:
    return false;
}

static void ref_free(struct ref * r) {
    /* teardown: errors here change no result, so they are not reported */
    if (r->src) {
        (void) cudaFree(r->src);
    }
    if (r->dst) {
        (void) cudaFree(r->dst);
    }
    if (r->cublas) {
        (void) cublasDestroy(r->cublas);
    }
    if (r->start) {
        (void) cudaEventDestroy(r->start);
    }
    if (r->stop) {
        (void) cudaEventDestroy(r->stop);
    }
    if (r->stream) {
        (void) cudaStreamDestroy(r->stream);
    }
    memset(r, 0, sizeof *r);
}

/* median milliseconds of one device-to-device copy of n bytes; NAN on failure */
static double ref_copy_ms(struct ref * r, size_t n, const struct options * o) {
    double t[MAX_REPS];
    if (r->src == NULL || n > r->copy_cap) {
        return NAN;
    }
    for (int i = 0; i < 3; i++) {
        CU(cudaMemcpyAsync(r->dst, r->src, n, cudaMemcpyDeviceToDevice, r->stream));
    }
    for (int rep = 0; rep < o->reps; rep++) {
        CU(cudaEventRecord(r->start, r->stream));
        for (int i = 0; i < o->batch; i++) {
            CU(cudaMemcpyAsync(r->dst, r->src, n, cudaMemcpyDeviceToDevice, r->stream));
        }
        CU(cudaEventRecord(r->stop, r->stream));
        CU(cudaEventSynchronize(r->stop));
        float ms = 0.0f;
        CU(cudaEventElapsedTime(&ms, r->start, r->stop));
        t[rep] = (double) ms / o->batch;
    }
    return bench_median(t, o->reps);
err:
    return NAN;
}

/* ---- the ggml side ---------------------------------------------------------------------------------- */

/* median milliseconds of one run of gf on backend; NAN (and *note set) on failure */
static double ggml_graph_ms(ggml_backend_t backend, struct ggml_cgraph * gf, const struct options * o,
                            const char ** note) {
    double t[MAX_REPS];
    for (int i = 0; i < 3; i++) {
        if (ggml_backend_graph_compute_async(backend, gf) != GGML_STATUS_SUCCESS) {
            goto err;
        }
    }
    /* synchronize returns nothing (as upstream); a queued failure is the backend's sticky status */
    ggml_backend_synchronize(backend);
    if (ggmlx_backend_get_status(backend) != GGML_STATUS_SUCCESS) {
        goto err;
    }
    for (int rep = 0; rep < o->reps; rep++) {
        const double t0 = (1e-3 * bench_now_us());
        for (int i = 0; i < o->batch; i++) {
            if (ggml_backend_graph_compute_async(backend, gf) != GGML_STATUS_SUCCESS) {
                goto err;
            }
        }
        ggml_backend_synchronize(backend);
        if (ggmlx_backend_get_status(backend) != GGML_STATUS_SUCCESS) {
            goto err;
        }
        t[rep] = ((1e-3 * bench_now_us()) - t0) / o->batch;
    }
    return bench_median(t, o->reps);
err:
    *note = keep_note("failed: %s%s", last_error(), NULL);
    return NAN;
}

static struct ggml_context * small_ctx(void) {
    struct ggml_init_params ip = {
        .mem_size   = 16 * ggml_tensor_overhead() + ggml_graph_overhead(),
        .mem_buffer = NULL,
        .no_alloc   = true,
    };
    return ggml_init(ip);
}

enum bw_op { BW_ADD, BW_MUL, BW_SCALE, BW_RMS_NORM, BW_SOFT_MAX, BW_CPY_F16, BW_N };

static const char * const bw_names[BW_N] = { "add", "mul", "scale", "rms_norm", "soft_max_ext", "cpy" };
static const char * const bw_types[BW_N] = { "f32", "f32", "f32", "f32", "f32", "f32>f16" };

/* host: two arrays of n random floats, shared by every elementwise row */
static void bench_bw(enum bw_op op, ggml_backend_t backend, struct ref * r, const float * ha, const float * hb,
                     const struct options * o) {
    struct bw_row * row = &g_bw[g_n_bw++];
    const int64_t n = o->row * o->rows;
    memset(row, 0, sizeof *row);
    row->op      = bw_names[op];
    row->types   = bw_types[op];
    row->n       = n;
    row->ggml_ms = NAN;
    row->copy_ms = NAN;
    switch (op) {
    case BW_ADD:
    case BW_MUL:     row->bytes = 12.0 * (double) n; break;
    case BW_CPY_F16: row->bytes = 6.0 * (double) n; break;
    default:         row->bytes = 8.0 * (double) n; break;
    }

    struct ggml_context * ctx = NULL;
    ggml_backend_buffer_t buf = NULL;

    /* the reference first, so that it is there even when the ggml side cannot run */
    row->copy_ms = ref_copy_ms(r, (size_t) (row->bytes / 2), o);
    if (backend == NULL) {
        row->note = "no such ggml device";
        return;
    }

    ctx = small_ctx();
    if (ctx == NULL) {
        row->note = keep_note("failed: ggml_init: %s%s", last_error(), NULL);
        goto done;
    }
    struct ggml_tensor * a   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, o->row, o->rows);
    struct ggml_tensor * b   = NULL;
    struct ggml_tensor * out = NULL;
    switch (op) {
    case BW_ADD:
    case BW_MUL:
        b   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, o->row, o->rows);
        out = op == BW_ADD ? ggml_add(ctx, a, b) : ggml_mul(ctx, a, b);
        break;
    case BW_SCALE:    out = ggml_scale(ctx, a, 0.5f); break;
    case BW_RMS_NORM: out = ggml_rms_norm(ctx, a, 1e-6f); break;
    case BW_SOFT_MAX: out = ggml_soft_max_ext(ctx, a, NULL, 1.0f, 0.0f); break;
    case BW_CPY_F16:
        b   = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, o->row, o->rows);
        out = ggml_cpy(ctx, a, b);
        break;
    case BW_N: break;
    }
    if (out == NULL) {
        row->note = keep_note("failed: building the op: %s%s", last_error(), NULL);
        goto done;
    }
    if (!ggml_backend_dev_supports_op(ggml_backend_get_device(backend), out)) {
        row->note = "unsupported by the device";
        goto done;
    }
    buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (buf == NULL) {
        row->note = keep_note("failed: allocating tensors: %s%s", last_error(), NULL);
        goto done;
    }
    ggml_backend_tensor_set(a, ha, 0, ggml_nbytes(a));
    if (b != NULL && b->type == GGML_TYPE_F32) {
        ggml_backend_tensor_set(b, hb, 0, ggml_nbytes(b));
    }
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (gf == NULL) {
        row->note = keep_note("failed: ggml_new_graph: %s%s", last_error(), NULL);
        goto done;
    }
    ggml_build_forward_expand(gf, out);
    row->ggml_ms = ggml_graph_ms(backend, gf, o, &row->note);
done:
    if (buf) {
        ggml_backend_buffer_free(buf);
    }
    if (ctx) {
        ggml_free(ctx);
    }
}

/* ---- mul_mat against cublasGemmEx ------------------------------------------------------------------- */

static size_t type_bytes(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? 4 : 2;
}

static cudaDataType_t cuda_type(enum ggml_type t) {
    return t == GGML_TYPE_F32 ? CUDA_R_32F : t == GGML_TYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* n floats of src as type t in dst (n * type_bytes(t) bytes) */
static void to_type(enum ggml_type t, const float * src, void * dst, int64_t n) {
    if (t == GGML_TYPE_F32) {
        memcpy(dst, src, (size_t) n * sizeof(float));
    } else if (t == GGML_TYPE_F16) {
        ggml_fp32_to_fp16_row(src, dst, n);
    } else {
        ggml_fp32_to_bf16_row(src, dst, n);
    }
}

/*
 * cuBLAS on the same problem: ggml's W is [k, m] (rows of k contiguous values), which column-major
 * cuBLAS sees as a k x m matrix with ld k, so C (m x n, ld m) = W^T X. The activations go in as the
 * weights' type, as a tensor-core path would convert them; that conversion is left out of the
 * reference's time. Compute in F32 (CUBLAS_COMPUTE_32F: no TF32 for F32 inputs).
 */
static double cublas_mm_ms(struct ref * r, enum ggml_type wt, int m, int n, int k, const void * hw,
                           const void * hx, float * hc, const struct options * o) {
    double t[MAX_REPS];
    double res = NAN;
    void * dw = NULL, * dx = NULL, * dc = NULL;
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType_t ct = cuda_type(wt);
    if (r->cublas == NULL) {
        return NAN; /* --ggml-only */
    }
    CU(cudaMalloc(&dw, (size_t) m * k * type_bytes(wt)));
    CU(cudaMalloc(&dx, (size_t) k * n * type_bytes(wt)));
    CU(cudaMalloc(&dc, (size_t) m * n * sizeof(float)));
    CU(cudaMemcpy(dw, hw, (size_t) m * k * type_bytes(wt), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(dx, hx, (size_t) k * n * type_bytes(wt), cudaMemcpyHostToDevice));
    for (int i = 0; i < 3; i++) {
        CB(cublasGemmEx(r->cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, dw, ct, k, dx, ct, k, &beta, dc,
                        CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    for (int rep = 0; rep < o->reps; rep++) {
        CU(cudaEventRecord(r->start, r->stream));
        for (int i = 0; i < o->batch; i++) {
            CB(cublasGemmEx(r->cublas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, dw, ct, k, dx, ct, k, &beta,
                            dc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        CU(cudaEventRecord(r->stop, r->stream));
        CU(cudaEventSynchronize(r->stop));
        float ms = 0.0f;
        CU(cudaEventElapsedTime(&ms, r->start, r->stop));
        t[rep] = (double) ms / o->batch;
    }
    CU(cudaMemcpy(hc, dc, (size_t) m * n * sizeof(float), cudaMemcpyDeviceToHost));
    res = bench_median(t, o->reps);
err:
    if (dw) {
        (void) cudaFree(dw);
    }
    if (dx) {
        (void) cudaFree(dx);
    }
    if (dc) {
        (void) cudaFree(dc);
    }
    return res;
}

static double rel_l2(const float * x, const float * ref, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double d = (double) x[i] - (double) ref[i];
        num += d * d;
        den += (double) ref[i] * (double) ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : (num > 0.0 ? INFINITY : 0.0);
}

static void bench_mm(enum ggml_type wt, int m, int n, int k, ggml_backend_t backend, struct ref * r,
                     const struct options * o) {
    struct mm_row * row = &g_mm[g_n_mm++];
    memset(row, 0, sizeof *row);
    row->wtype     = ggml_type_name(wt);
    row->m         = m;
    row->n         = n;
    row->k         = k;
    row->ggml_ms   = NAN;
    row->cublas_ms = NAN;
    row->rel_diff  = NAN;

    struct ggml_context * ctx = NULL;
    ggml_backend_buffer_t buf = NULL;
    float * wf = malloc((size_t) m * k * sizeof(float));
    float * xf = malloc((size_t) k * n * sizeof(float));
    void  * wq = malloc((size_t) m * k * type_bytes(wt));
    void  * xq = malloc((size_t) k * n * type_bytes(wt));
    float * c_ref = malloc((size_t) m * n * sizeof(float));
    float * c_ggml = malloc((size_t) m * n * sizeof(float));
    if (!wf || !xf || !wq || !xq || !c_ref || !c_ggml) {
        row->note = "failed: out of host memory";
        goto done;
    }
    /* values of order one; scaled by 1/sqrt(k) so that sums stay of order one */
    fill_random(wf, (int64_t) m * k, -1.0f, 1.0f);
    fill_random(xf, (int64_t) k * n, -1.0f / sqrtf((float) k), 1.0f / sqrtf((float) k));
    to_type(wt, wf, wq, (int64_t) m * k);
    to_type(wt, xf, xq, (int64_t) k * n);

    row->cublas_ms = cublas_mm_ms(r, wt, m, n, k, wq, xq, c_ref, o);
    if (backend == NULL) {
        row->note = "no such ggml device";
        goto done;
    }

    ctx = small_ctx();
    if (ctx == NULL) {
        row->note = keep_note("failed: ggml_init: %s%s", last_error(), NULL);
        goto done;
    }
    struct ggml_tensor * w   = ggml_new_tensor_2d(ctx, wt, k, m);
    struct ggml_tensor * x   = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, n);
    struct ggml_tensor * out = ggml_mul_mat(ctx, w, x);
    if (out == NULL) {
        row->note = keep_note("failed: building mul_mat: %s%s", last_error(), NULL);
        goto done;
    }
    if (!ggml_backend_dev_supports_op(ggml_backend_get_device(backend), out)) {
        row->note = "unsupported by the device";
        goto done;
    }
    buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (buf == NULL) {
        row->note = keep_note("failed: allocating tensors: %s%s", last_error(), NULL);
        goto done;
    }
    ggml_backend_tensor_set(w, wq, 0, ggml_nbytes(w));
    ggml_backend_tensor_set(x, xf, 0, ggml_nbytes(x));
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    if (gf == NULL) {
        row->note = keep_note("failed: ggml_new_graph: %s%s", last_error(), NULL);
        goto done;
    }
    ggml_build_forward_expand(gf, out);
    row->ggml_ms = ggml_graph_ms(backend, gf, o, &row->note);
    if (!isnan(row->ggml_ms) && !isnan(row->cublas_ms)) {
        ggml_backend_tensor_get(out, c_ggml, 0, ggml_nbytes(out));
        row->rel_diff = rel_l2(c_ggml, c_ref, (int64_t) m * n);
        /* bf16 operands land between 1e-3 and 1e-2 against float64; against each other, less */
        if (!(row->rel_diff <= 1e-2)) {
            row->note = "CHECK: results differ from cuBLAS";
        }
    }
done:
    if (buf) {
        ggml_backend_buffer_free(buf);
    }
    if (ctx) {
        ggml_free(ctx);
    }
    free(wf);
    free(xf);
    free(wq);
    free(xq);
    free(c_ref);
    free(c_ggml);
}

/* ---- output ----------------------------------------------------------------------------------------- */

/* every note is a failure or a CHECK: a row that ran cleanly has none */
static bool row_failed(const char * note) {
    return note != NULL;
}

static void print_num(const char * fmt, double v) {
    if (isnan(v)) {
        printf(" -- |");
    } else {
        printf(fmt, v);
    }
}

static void json_num(FILE * f, const char * key, double v, bool comma) {
    if (isnan(v) || isinf(v)) {
        fprintf(f, "\"%s\": null%s", key, comma ? ", " : "");
    } else {
        fprintf(f, "\"%s\": %.6g%s", key, v, comma ? ", " : "");
    }
}

static void print_markdown(const char * dev_name, const char * gpu, const struct options * o) {
    printf("## bench-cuda: ggml device %s on %s\n\n", dev_name, gpu);
    printf("median of %d batches of %d runs after warm-up; copy = cudaMemcpyAsync device to device of the "
           "same bytes (GB/s count bytes read + written)\n\n", o->reps, o->batch);
    printf("| op | types | elements | MB moved | ggml ms | ggml GB/s | copy GB/s | %% of copy | note |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < g_n_bw; i++) {
        const struct bw_row * r = &g_bw[i];
        printf("| %s | %s | %" PRId64 " | %.0f |", r->op, r->types, r->n, r->bytes / 1e6);
        print_num(" %.4f |", r->ggml_ms);
        print_num(" %.0f |", r->bytes / (r->ggml_ms * 1e6));
        print_num(" %.0f |", r->bytes / (r->copy_ms * 1e6));
        print_num(" %.1f |", 100.0 * r->copy_ms / r->ggml_ms);
        printf(" %s |\n", r->note ? r->note : "");
    }
    printf("\nmul_mat: C[m,n] = W[m,k] X[k,n], X F32 in ggml; cuBLAS = cublasGemmEx with X in W's type, "
           "F32 output, CUBLAS_COMPUTE_32F\n\n");
    printf("| weights | m x n x k | ggml ms | ggml TFLOP/s | cuBLAS ms | cuBLAS TFLOP/s | %% of cuBLAS | "
           "rel. diff | note |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < g_n_mm; i++) {
        const struct mm_row * r = &g_mm[i];
        const double flop = 2.0 * r->m * r->n * r->k;
        printf("| %s | %dx%dx%d |", r->wtype, r->m, r->n, r->k);
        print_num(" %.4f |", r->ggml_ms);
        print_num(" %.1f |", flop / (r->ggml_ms * 1e9));
        print_num(" %.4f |", r->cublas_ms);
        print_num(" %.1f |", flop / (r->cublas_ms * 1e9));
        print_num(" %.1f |", 100.0 * r->cublas_ms / r->ggml_ms);
        print_num(" %.2e |", r->rel_diff);
        printf(" %s |\n", r->note ? r->note : "");
    }
    printf("\n");
}

static void print_json(FILE * f, const char * dev_name, const char * gpu, const struct options * o) {
    fprintf(f, "{\"device\": \"%s\", \"gpu\": \"%s\", \"reps\": %d, \"batch\": %d,\n \"bandwidth\": [", dev_name, gpu,
           o->reps, o->batch);
    for (int i = 0; i < g_n_bw; i++) {
        const struct bw_row * r = &g_bw[i];
        fprintf(f, "%s\n  {\"op\": \"%s\", \"types\": \"%s\", \"elements\": %" PRId64 ", ", i ? "," : "", r->op, r->types,
               r->n);
        json_num(f, "bytes", r->bytes, true);
        json_num(f, "ggml_ms", r->ggml_ms, true);
        json_num(f, "ggml_gbps", r->bytes / (r->ggml_ms * 1e6), true);
        json_num(f, "copy_ms", r->copy_ms, true);
        json_num(f, "copy_gbps", r->bytes / (r->copy_ms * 1e6), true);
        json_num(f, "pct_of_copy", 100.0 * r->copy_ms / r->ggml_ms, true);
        fprintf(f, "\"note\": %s%s%s}", r->note ? "\"" : "", r->note ? r->note : "null", r->note ? "\"" : "");
    }
    fprintf(f, "],\n \"mul_mat\": [");
    for (int i = 0; i < g_n_mm; i++) {
        const struct mm_row * r = &g_mm[i];
        const double flop = 2.0 * r->m * r->n * r->k;
        fprintf(f, "%s\n  {\"weights\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, ", i ? "," : "", r->wtype, r->m, r->n,
               r->k);
        json_num(f, "ggml_ms", r->ggml_ms, true);
        json_num(f, "ggml_tflops", flop / (r->ggml_ms * 1e9), true);
        json_num(f, "cublas_ms", r->cublas_ms, true);
        json_num(f, "cublas_tflops", flop / (r->cublas_ms * 1e9), true);
        json_num(f, "pct_of_cublas", 100.0 * r->cublas_ms / r->ggml_ms, true);
        json_num(f, "rel_diff", r->rel_diff, true);
        fprintf(f, "\"note\": %s%s%s}", r->note ? "\"" : "", r->note ? r->note : "null", r->note ? "\"" : "");
    }
    fprintf(f, "]}\n");
}

/* ---- main -------------------------------------------------------------------------------------------- */

static void usage(FILE * f) {
    fprintf(f, "usage: bench-cuda [--json] [--json-out FILE] [--quick] [--reps N] [--device NAME] [--ggml-only]\n"
               "  ggml's CUDA backend against a device-to-device copy (GB/s) and cuBLAS (TFLOP/s)\n"
               "  --quick: small sizes and few runs (a smoke run); --device: ggml device (default CUDA0)\n"
               "  --json: JSON instead of markdown; --json-out FILE: markdown on stdout and JSON in FILE\n"
               "  --ggml-only: no CUDA runtime, no references: the ggml side on any device (e.g. CPU)\n"
               "  exit 0 ok, 1 a row failed or no such ggml device, 2 no CUDA device\n");
}

/* the CUDA ordinal of a ggml device: by its PCI bus id when it reports one, else 0 */
static int cuda_ordinal(ggml_backend_dev_t dev) {
    if (dev == NULL) {
        return 0;
    }
    struct ggml_backend_dev_props p;
    memset(&p, 0, sizeof p);
    ggml_backend_dev_get_props(dev, &p);
    int ord = 0;
    if (p.device_id != NULL && cudaDeviceGetByPCIBusId(&ord, p.device_id) == cudaSuccess) {
        return ord;
    }
    return 0;
}

int main(int argc, char ** argv) {
    struct options o = { .json = false, .quick = false, .reps = 0, .batch = 0, .device = "CUDA0", .json_out = NULL,
                          .ggml_only = false };
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o.json = true;
        } else if (strcmp(argv[i], "--quick") == 0) {
            o.quick = true;
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            char * end = NULL;
            const long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > MAX_REPS) {
                fprintf(stderr, "bench-cuda: --reps needs 1..%d\n", MAX_REPS);
                return 1;
            }
            o.reps = (int) v;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            o.device = argv[++i];
        } else if (strcmp(argv[i], "--ggml-only") == 0) {
            o.ggml_only = true;
        } else if (strcmp(argv[i], "--json-out") == 0 && i + 1 < argc) {
            o.json_out = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench-cuda: bad argument '%s'\n", argv[i]);
            usage(stderr);
            return 1;
        }
    }
    if (o.reps == 0) {
        o.reps = o.quick ? 3 : 15;
    }
    o.batch = o.quick ? 2 : 10;
    o.row   = 4096;
    o.rows  = o.quick ? 1024 : 16384; /* 4M or 64M elements: 16 or 256 MB per F32 tensor */

    /* no device, no driver, or a driver too old: all mean there is nothing to measure */
    int n_cuda = 0;
    const cudaError_t ce = o.ggml_only ? cudaSuccess : cudaGetDeviceCount(&n_cuda);
    if (!o.ggml_only && (ce != cudaSuccess || n_cuda == 0)) {
        fprintf(stderr, "bench-cuda: no CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
                ce != cudaSuccess ? cudaGetErrorString(ce) : "ok", n_cuda);
        if (o.json) {
            printf("{\"error\": \"no CUDA device\"}\n");
        }
        if (o.json_out != NULL) {
            FILE * jf = fopen(o.json_out, "w");
            if (jf != NULL) {
                fprintf(jf, "{\"error\": \"no CUDA device\"}\n");
                (void) fclose(jf);
            }
        }
        return 2;
    }

#ifdef GGML_BACKEND_DL
    ggml_backend_load_all(); /* libggml-cuda.so is a module: CUDA0 exists once it is loaded */
#endif
    ggml_backend_dev_t dev     = ggml_backend_dev_by_name(o.device);
    ggml_backend_t     backend = NULL;
    if (dev == NULL) {
        fprintf(stderr, "bench-cuda: the ggml registry has no device '%s' (%d CUDA device(s) seen by cudart): "
                        "measuring the references only\n", o.device, n_cuda);
    } else {
        backend = ggml_backend_dev_init(dev, NULL);
        if (backend == NULL) {
            fprintf(stderr, "bench-cuda: cannot start %s: %s\n", o.device, last_error());
        }
    }
    const int ord = o.ggml_only ? 0 : cuda_ordinal(dev);
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    char gpu[300];
    if (o.ggml_only) {
        snprintf(gpu, sizeof gpu, "%.200s (--ggml-only: no references)", dev ? ggml_backend_dev_description(dev) : "?");
    } else if (cudaGetDeviceProperties(&prop, ord) == cudaSuccess) {
        snprintf(gpu, sizeof gpu, "%.200s (cuda:%d, sm_%d%d, %d SMs, %.0f GiB)", prop.name, ord, prop.major,
                 prop.minor, prop.multiProcessorCount, (double) prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    } else {
        snprintf(gpu, sizeof gpu, "cuda:%d", ord);
    }
    for (char * p = gpu; *p; p++) {
        if (*p == '"' || *p == '\\' || *p == '|') {
            *p = ' ';
        }
    }

    int         rc = 0;
    struct ref  r;
    const int64_t n = o.row * o.rows;
    float * ha = malloc((size_t) n * sizeof(float));
    float * hb = malloc((size_t) n * sizeof(float));
    if (ha == NULL || hb == NULL) {
        fprintf(stderr, "bench-cuda: out of host memory\n");
        rc = 1;
        goto out;
    }
    fill_random(ha, n, -1.0f, 1.0f);
    fill_random(hb, n, -1.0f, 1.0f);
    /* the largest copy reference: half of add's 12 bytes per element */
    memset(&r, 0, sizeof r);
    if (!o.ggml_only && !ref_init(&r, ord, (size_t) n * 6)) {
        ref_free(&r);
        rc = 1;
        goto out;
    }

    for (int op = 0; op < BW_N; op++) {
        bench_bw((enum bw_op) op, backend, &r, ha, hb, &o);
    }
    static const enum ggml_type wtypes[3] = { GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16 };
    for (int t = 0; t < 3; t++) {
        if (o.quick) {
            bench_mm(wtypes[t], 2048, 256, 2048, backend, &r, &o);
            bench_mm(wtypes[t], 1024, 1024, 1024, backend, &r, &o);
        } else {
            bench_mm(wtypes[t], 8192, 512, 8192, backend, &r, &o);
            bench_mm(wtypes[t], 4096, 4096, 4096, backend, &r, &o);
        }
    }
    ref_free(&r);

    if (o.json) {
        print_json(stdout, o.device, gpu, &o);
    } else {
        print_markdown(o.device, gpu, &o);
    }
    if (o.json_out != NULL) {
        FILE * jf = fopen(o.json_out, "w");
        if (jf == NULL) {
            fprintf(stderr, "bench-cuda: cannot write %s\n", o.json_out);
            rc = 1;
        } else {
            print_json(jf, o.device, gpu, &o);
            if (fclose(jf) != 0) {
                fprintf(stderr, "bench-cuda: cannot write %s\n", o.json_out);
                rc = 1;
            }
        }
    }

    /* one closing line with the key numbers (gpu-check.sh shows it in its summary) */
    double copy_best = 0.0, bw_worst = INFINITY, mm_worst = INFINITY;
    int    failed    = 0;
    for (int i = 0; i < g_n_bw; i++) {
        const double cg = g_bw[i].bytes / (g_bw[i].copy_ms * 1e6);
        if (!isnan(cg) && cg > copy_best) {
            copy_best = cg;
        }
        if (!isnan(g_bw[i].ggml_ms) && 100.0 * g_bw[i].copy_ms / g_bw[i].ggml_ms < bw_worst) {
            bw_worst = 100.0 * g_bw[i].copy_ms / g_bw[i].ggml_ms;
        }
        failed += row_failed(g_bw[i].note) || (!o.ggml_only && isnan(g_bw[i].copy_ms));
    }
    for (int i = 0; i < g_n_mm; i++) {
        if (!isnan(g_mm[i].ggml_ms) && 100.0 * g_mm[i].cublas_ms / g_mm[i].ggml_ms < mm_worst) {
            mm_worst = 100.0 * g_mm[i].cublas_ms / g_mm[i].ggml_ms;
        }
        failed += row_failed(g_mm[i].note) || (!o.ggml_only && isnan(g_mm[i].cublas_ms));
    }
    char s_copy[32] = "--", s_bw[32] = "--", s_mm[32] = "--";
    if (copy_best > 0.0) {
        snprintf(s_copy, sizeof s_copy, "%.0f", copy_best);
    }
    if (!isinf(bw_worst)) {
        snprintf(s_bw, sizeof s_bw, "%.0f", bw_worst);
    }
    if (!isinf(mm_worst)) {
        snprintf(s_mm, sizeof s_mm, "%.0f", mm_worst);
    }
    fprintf(o.json ? stderr : stdout,
            "bench-cuda: copy %s GB/s; slowest elementwise %s%% of copy; slowest mul_mat %s%% of cuBLAS; "
            "%d of %d rows failed\n",
            s_copy, s_bw, s_mm, failed, g_n_bw + g_n_mm);
    if (failed) {
        rc = 1;
    }
out:
    if (backend) {
        ggml_backend_free(backend);
    }
    free(ha);
    free(hb);
    return rc;
}
