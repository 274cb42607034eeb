/*
 * ggml-cpu.h -- computing graphs on the CPU, on the caller's thread plus a reusable thread pool,
 * and the CPU backend: an in-order queue whose worker thread runs the graphs (docs/async.md).
 */
#pragma once

#include "ggml.h"
#include "ggml-backend.h"

#ifdef __cplusplus
extern "C" {
#endif

    /*
     * The plan for one computation: how much scratch the graph needs and who computes it.
     * Fill work_data with at least work_size bytes before ggml_graph_compute().
     */
    struct ggml_cplan {
        size_t    work_size;
        uint8_t * work_data;

        int                       n_threads;
        struct ggml_threadpool  * threadpool; /* NULL: a pool cached by the library is used */

        /* polled between nodes; returning true stops the computation with GGML_STATUS_ABORTED */
        ggml_abort_callback abort_callback;
        void *              abort_callback_data;

        bool use_ref; /* reference kernels only (accepted; ggmlx's kernels are all reference-exact) */
    };

    /* NUMA placement strategies (accepted for compatibility; ggmlx does not pin memory yet) */
    enum ggml_numa_strategy {
        GGML_NUMA_STRATEGY_DISABLED   = 0,
        GGML_NUMA_STRATEGY_DISTRIBUTE = 1,
        GGML_NUMA_STRATEGY_ISOLATE    = 2,
        GGML_NUMA_STRATEGY_NUMACTL    = 3,
        GGML_NUMA_STRATEGY_MIRROR     = 4,
        GGML_NUMA_STRATEGY_COUNT
    };

    /* Call once before the first computation (optional: computations call it themselves). */
    GGML_API void ggml_cpu_init(void);

    /* Scalars and element access. Indices out of range are an error: nothing is read or written. */
    GGML_API struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value);
    GGML_API struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value);

    GGML_API struct ggml_tensor * ggml_set_i32 (struct ggml_tensor * tensor, int32_t value);
    GGML_API struct ggml_tensor * ggml_set_f32 (struct ggml_tensor * tensor, float value);

    GGML_API int32_t ggml_get_i32_1d(const struct ggml_tensor * tensor, int i);
    GGML_API void    ggml_set_i32_1d(const struct ggml_tensor * tensor, int i, int32_t value);

    GGML_API int32_t ggml_get_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3);
    GGML_API void    ggml_set_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, int32_t value);

    GGML_API float   ggml_get_f32_1d(const struct ggml_tensor * tensor, int i);
    GGML_API void    ggml_set_f32_1d(const struct ggml_tensor * tensor, int i, float value);

    GGML_API float   ggml_get_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3);
    GGML_API void    ggml_set_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, float value);

    /*
     * Thread pools. A pool's workers sleep between computations; ggml_threadpool_free() joins
     * them. Free a pool only when no computation is running on it.
     */
    GGML_API struct ggml_threadpool * ggml_threadpool_new          (struct ggml_threadpool_params * params);
    GGML_API void                     ggml_threadpool_free         (struct ggml_threadpool * threadpool);
    GGML_API int                      ggml_threadpool_get_n_threads(struct ggml_threadpool * threadpool);
    GGML_API void                     ggml_threadpool_pause        (struct ggml_threadpool * threadpool);
    GGML_API void                     ggml_threadpool_resume       (struct ggml_threadpool * threadpool);

    /*
     * Plan a computation. n_threads <= 0 means GGML_DEFAULT_N_THREADS. A failed graph yields a
     * plan whose computation returns GGML_STATUS_FAILED.
     */
    GGML_API struct ggml_cplan ggml_graph_plan(
                  const struct ggml_cgraph * cgraph,
                                       int   n_threads,
                    struct ggml_threadpool * threadpool);

    /*
     * Compute on the calling thread and n_threads - 1 pool workers; returns when done.
     * GGML_STATUS_FAILED for a failed graph, a missing work buffer or a kernel that refused its
     * input (the reason is in ggmlx_last_error()); GGML_STATUS_ABORTED when the abort callback
     * asked for it.
     */
    GGML_API enum ggml_status  ggml_graph_compute(struct ggml_cgraph * cgraph, struct ggml_cplan * cplan);

    /* Same, with the work buffer taken from ctx (which must have room for it). */
    GGML_API enum ggml_status  ggml_graph_compute_with_ctx(struct ggml_context * ctx, struct ggml_cgraph * cgraph, int n_threads);

    /* CPU features, probed at run time: 1 when present */
    GGML_API int ggml_cpu_has_sse3       (void);
    GGML_API int ggml_cpu_has_ssse3      (void);
    GGML_API int ggml_cpu_has_avx        (void);
    GGML_API int ggml_cpu_has_avx2       (void);
    GGML_API int ggml_cpu_has_f16c       (void);
    GGML_API int ggml_cpu_has_fma        (void);
    GGML_API int ggml_cpu_has_avx512     (void);
    GGML_API int ggml_cpu_has_avx512_bf16(void);

    /*
     * Per-type CPU kernels (upstream exposes these for tests and benchmarks). vec_dot computes
     * s[0] = the dot product of n elements of x (a row of the type) and y (a row of vec_dot_type);
     * bs, bx, by and nrc describe several rows at once where nrows > 1 (always 1 here). from_float
     * converts n floats to the type (NULL where the CPU has no such conversion). The selection
     * follows the CPU's instruction set, or GGMLX_MATMUL_KERNEL=portable|avx2|avx512.
     */
    typedef void (*ggml_vec_dot_t)  (int n, float * GGML_RESTRICT s, size_t bs, const void * GGML_RESTRICT x, size_t bx,
                                       const void * GGML_RESTRICT y, size_t by, int nrc);

    struct ggml_type_traits_cpu {
        ggml_from_float_t        from_float;
        ggml_vec_dot_t           vec_dot;
        enum ggml_type           vec_dot_type;
        int64_t                  nrows; /* rows one vec_dot call computes */
    };

    /* NULL for a type id out of range */
    GGML_BACKEND_API const struct ggml_type_traits_cpu * ggml_get_type_traits_cpu(enum ggml_type type);

    /*
     * The CPU backend. graph_compute_async enqueues and returns at once; one worker thread per
     * backend runs what is queued, in order, with a pool of n_threads - 1 more threads. The
     * "sync" device parameter (or GGMLX_CPU_SYNC=1) computes on the caller's thread instead, as
     * upstream does. The setters below are queued like any other work: they apply to what is
     * enqueued after them. A thread pool or abort callback handed over must outlive the work
     * queued while it is set (synchronize before freeing it). The abort callback and the log
     * callback are called from the worker thread.
     */
    GGML_BACKEND_API ggml_backend_t ggml_backend_cpu_init(void);

    GGML_BACKEND_API bool ggml_backend_is_cpu                (ggml_backend_t backend);
    GGML_BACKEND_API void ggml_backend_cpu_set_n_threads     (ggml_backend_t backend_cpu, int n_threads);
    GGML_BACKEND_API void ggml_backend_cpu_set_threadpool    (ggml_backend_t backend_cpu, ggml_threadpool_t threadpool);
    GGML_BACKEND_API void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend_cpu, ggml_abort_callback abort_callback, void * abort_callback_data);

    /* reference kernels only (accepted; ggmlx's kernels are all reference-exact) */
    GGML_BACKEND_API void ggml_backend_cpu_set_use_ref(ggml_backend_t backend_cpu, bool use_ref);

    GGML_BACKEND_API ggml_backend_reg_t ggml_backend_cpu_reg(void);

    /* more CPU features (x86: CPUID, with the OS's register-state support where it matters; the
     * other architectures' queries answer 0); vector lengths in bytes, 0 without SVE / RVV */
    GGML_BACKEND_API int ggml_cpu_has_avx_vnni   (void);
    GGML_BACKEND_API int ggml_cpu_has_bmi2       (void);
    GGML_BACKEND_API int ggml_cpu_has_avx512_vbmi(void);
    GGML_BACKEND_API int ggml_cpu_has_avx512_vnni(void);
    GGML_BACKEND_API int ggml_cpu_has_amx_int8   (void);
    GGML_BACKEND_API int ggml_cpu_has_neon       (void);
    GGML_BACKEND_API int ggml_cpu_has_arm_fma    (void);
    GGML_BACKEND_API int ggml_cpu_has_fp16_va    (void);
    GGML_BACKEND_API int ggml_cpu_has_dotprod    (void);
    GGML_BACKEND_API int ggml_cpu_has_matmul_int8(void);
    GGML_BACKEND_API int ggml_cpu_has_sve        (void);
    GGML_BACKEND_API int ggml_cpu_get_sve_cnt    (void);
    GGML_BACKEND_API int ggml_cpu_has_sme        (void);
    GGML_BACKEND_API int ggml_cpu_has_sme2       (void);
    GGML_BACKEND_API int ggml_cpu_has_riscv_v    (void);
    GGML_BACKEND_API int ggml_cpu_get_rvv_vlen   (void);
    GGML_BACKEND_API int ggml_cpu_has_vsx        (void);
    GGML_BACKEND_API int ggml_cpu_has_vxe        (void);
    GGML_BACKEND_API int ggml_cpu_has_wasm_simd  (void);
    GGML_BACKEND_API int ggml_cpu_has_llamafile  (void);

    /* NUMA: ggml_numa_init counts the nodes Linux lists (a second call changes nothing); the
     * strategy is accepted, memory is not placed by node. ggml_is_numa: more than one node. */
    GGML_BACKEND_API void ggml_numa_init(enum ggml_numa_strategy numa);
    GGML_BACKEND_API bool ggml_is_numa(void);

    /* row conversions (as ggml.h's *_row; fp32_to_i32 truncates toward zero) */
    GGML_BACKEND_API void ggml_cpu_fp32_to_fp32(const float *,       float *, int64_t);
    GGML_BACKEND_API void ggml_cpu_fp32_to_i32 (const float *,     int32_t *, int64_t);
    GGML_BACKEND_API void ggml_cpu_fp32_to_fp16(const float *, ggml_fp16_t *, int64_t);
    GGML_BACKEND_API void ggml_cpu_fp16_to_fp32(const ggml_fp16_t *, float *, int64_t);
    GGML_BACKEND_API void ggml_cpu_fp32_to_bf16(const float *, ggml_bf16_t *, int64_t);
    GGML_BACKEND_API void ggml_cpu_bf16_to_fp32(const ggml_bf16_t *, float *, int64_t);

#ifdef __cplusplus
}
#endif
