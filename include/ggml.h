/*
 * ggml.h -- tensors, contexts, op constructors and compute graphs.
 *
 * Source and binary compatible with upstream ggml's public ggml.h (snapshot 2026-08-21) for every
 * function declared here; enums and public structs are complete and laid out as upstream's.
 * Only what ggmlx implements is declared: see the README's compatibility table.
 *
 * Error contract (docs/errors.md): no function here aborts the process on bad input. A function
 * that returns a pointer returns NULL, one that returns a status returns an error status, and
 * the reason is logged through the ggml_log_set() callback and kept in ggmlx_last_error()
 * (include/ggmlx.h). A failed op constructor marks its context failed, so that every later
 * constructor on that context and every graph built from its tensors fails too.
 *
 * Threads: the log callback may be called from worker threads, not only the caller's.
 */
#pragma once

#ifdef GGML_SHARED
#    if defined(_WIN32) && !defined(__MINGW32__)
#        ifdef GGML_BUILD
#            define GGML_API __declspec(dllexport) extern
#        else
#            define GGML_API __declspec(dllimport) extern
#        endif
#    else
#        define GGML_API __attribute__((visibility("default"))) extern
#    endif
#else
#    define GGML_API extern
#endif

#ifdef __GNUC__
#    define GGML_DEPRECATED(func, hint) func __attribute__((deprecated(hint)))
#    define GGML_ATTRIBUTE_FORMAT(...) __attribute__((format(printf, __VA_ARGS__)))
#else
#    define GGML_DEPRECATED(func, hint) func
#    define GGML_ATTRIBUTE_FORMAT(...)
#endif

#ifdef __cplusplus
#    define GGML_NORETURN [[noreturn]]
#    define GGML_RESTRICT
#else
#    define GGML_NORETURN _Noreturn
#    define GGML_RESTRICT restrict
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GGML_FILE_MAGIC   0x67676d6c /* the bytes "ggml" */
#define GGML_FILE_VERSION 2

#define GGML_QNT_VERSION        2
#define GGML_QNT_VERSION_FACTOR 1000

#define GGML_MAX_DIMS           4
#define GGML_MAX_PARAMS         2048
#define GGML_MAX_SRC            10
#define GGML_MAX_N_THREADS      512
#define GGML_MAX_OP_PARAMS      64
#ifndef GGML_MAX_NAME
#    define GGML_MAX_NAME       64
#endif

#define GGML_DEFAULT_N_THREADS  4
#define GGML_DEFAULT_GRAPH_SIZE 2048

#if UINTPTR_MAX == 0xFFFFFFFF
#    define GGML_MEM_ALIGN 4
#else
#    define GGML_MEM_ALIGN 16
#endif

#define GGML_EXIT_SUCCESS 0
#define GGML_EXIT_ABORTED 1

#define GGML_ROPE_TYPE_NORMAL 0
#define GGML_ROPE_TYPE_NEOX   2
#define GGML_ROPE_TYPE_MROPE  8
#define GGML_ROPE_TYPE_VISION 24
#define GGML_ROPE_TYPE_IMROPE 40

#define GGML_MROPE_SECTIONS   4

#define GGML_N_TASKS_MAX (-1)

#define GGML_UNUSED(x) (void)(x)
/* any number of expressions marked used (C; upstream's C++/CUDA variant is not needed here) */
#define GGML_UNUSED_VARS(...) do { (void)sizeof((__VA_ARGS__, 0)); } while (0)
#define GGML_PAD(x, n) (((x) + (n) - 1) & ~((n) - 1))

/*
 * Locals for a kernel's shapes and strides, as upstream's kernels (and programs written like
 * them, such as llama.cpp's test-backend-ops) declare them: GGML_TENSOR_LOCALS(int64_t, ne0,
 * src0, ne) gives const int64_t ne00, ne01, ne02, ne03 (0 when src0 is NULL).
 */
#define GGML_TENSOR_LOCALS_1(type, prefix, pointer, array) \
    const type prefix##0 = (pointer) ? (pointer)->array[0] : 0; GGML_UNUSED(prefix##0);
#define GGML_TENSOR_LOCALS_2(type, prefix, pointer, array) GGML_TENSOR_LOCALS_1(type, prefix, pointer, array) \
    const type prefix##1 = (pointer) ? (pointer)->array[1] : 0; GGML_UNUSED(prefix##1);
#define GGML_TENSOR_LOCALS_3(type, prefix, pointer, array) GGML_TENSOR_LOCALS_2(type, prefix, pointer, array) \
    const type prefix##2 = (pointer) ? (pointer)->array[2] : 0; GGML_UNUSED(prefix##2);
#define GGML_TENSOR_LOCALS(type, prefix, pointer, array) GGML_TENSOR_LOCALS_3(type, prefix, pointer, array) \
    const type prefix##3 = (pointer) ? (pointer)->array[3] : 0; GGML_UNUSED(prefix##3);

/* ne0x/nb0x of src0, ne1x/nb1x of src1, ne2x/nb2x of src2, nex/nbx of dst */
#define GGML_TENSOR_UNARY_OP_LOCALS \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) GGML_TENSOR_LOCALS(size_t, nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne, dst, ne) GGML_TENSOR_LOCALS(size_t, nb, dst, nb)
#define GGML_TENSOR_BINARY_OP_LOCALS01 \
    GGML_TENSOR_LOCALS(int64_t, ne0, src0, ne) GGML_TENSOR_LOCALS(size_t, nb0, src0, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne1, src1, ne) GGML_TENSOR_LOCALS(size_t, nb1, src1, nb)
#define GGML_TENSOR_BINARY_OP_LOCALS \
    GGML_TENSOR_BINARY_OP_LOCALS01 \
    GGML_TENSOR_LOCALS(int64_t, ne, dst, ne) GGML_TENSOR_LOCALS(size_t, nb, dst, nb)
#define GGML_TENSOR_TERNARY_OP_LOCALS \
    GGML_TENSOR_BINARY_OP_LOCALS01 \
    GGML_TENSOR_LOCALS(int64_t, ne2, src2, ne) GGML_TENSOR_LOCALS(size_t, nb2, src2, nb) \
    GGML_TENSOR_LOCALS(int64_t, ne, dst, ne) GGML_TENSOR_LOCALS(size_t, nb, dst, nb)

/* Aborts are for broken internal invariants only; bad input is reported, never aborted on. */
#define GGML_ABORT(...) ggml_abort(__FILE__, __LINE__, __VA_ARGS__)
#define GGML_ASSERT(x) if (!(x)) GGML_ABORT("GGML_ASSERT(%s) failed", #x)

#ifdef __cplusplus
extern "C" {
#endif

    /* Calls the abort callback (ggml_set_abort_callback) or prints, then abort()s. */
    GGML_NORETURN GGML_ATTRIBUTE_FORMAT(3, 4)
    GGML_API void ggml_abort(const char * file, int line, const char * fmt, ...);

    enum ggml_status {
        GGML_STATUS_ALLOC_FAILED = -2,
        GGML_STATUS_FAILED       = -1,
        GGML_STATUS_SUCCESS      = 0,
        GGML_STATUS_ABORTED      = 1,
    };

    enum ggml_type {
        GGML_TYPE_F32     = 0,
        GGML_TYPE_F16     = 1,
        GGML_TYPE_Q4_0    = 2,
        GGML_TYPE_Q4_1    = 3,
        GGML_TYPE_Q5_0    = 6,
        GGML_TYPE_Q5_1    = 7,
        GGML_TYPE_Q8_0    = 8,
        GGML_TYPE_Q8_1    = 9,
        GGML_TYPE_Q2_K    = 10,
        GGML_TYPE_Q3_K    = 11,
        GGML_TYPE_Q4_K    = 12,
        GGML_TYPE_Q5_K    = 13,
        GGML_TYPE_Q6_K    = 14,
        GGML_TYPE_Q8_K    = 15,
        GGML_TYPE_IQ2_XXS = 16,
        GGML_TYPE_IQ2_XS  = 17,
        GGML_TYPE_IQ3_XXS = 18,
        GGML_TYPE_IQ1_S   = 19,
        GGML_TYPE_IQ4_NL  = 20,
        GGML_TYPE_IQ3_S   = 21,
        GGML_TYPE_IQ2_S   = 22,
        GGML_TYPE_IQ4_XS  = 23,
        GGML_TYPE_I8      = 24,
        GGML_TYPE_I16     = 25,
        GGML_TYPE_I32     = 26,
        GGML_TYPE_I64     = 27,
        GGML_TYPE_F64     = 28,
        GGML_TYPE_IQ1_M   = 29,
        GGML_TYPE_BF16    = 30,
        GGML_TYPE_TQ1_0   = 34,
        GGML_TYPE_TQ2_0   = 35,
        GGML_TYPE_MXFP4   = 39,
        GGML_TYPE_NVFP4   = 40,
        GGML_TYPE_Q1_0    = 41,
        GGML_TYPE_Q2_0    = 42,
        GGML_TYPE_COUNT   = 43,
    };

    enum ggml_prec {
        GGML_PREC_DEFAULT = 0,
        GGML_PREC_F32     = 10,
    };

    enum ggml_op_hint {
        GGML_HINT_NONE             = 0,
        GGML_HINT_SRC0_IS_HADAMARD = 1,
    };

    enum ggml_ftype {
        GGML_FTYPE_UNKNOWN              = -1,
        GGML_FTYPE_ALL_F32              = 0,
        GGML_FTYPE_MOSTLY_F16           = 1,
        GGML_FTYPE_MOSTLY_Q4_0          = 2,
        GGML_FTYPE_MOSTLY_Q4_1          = 3,
        GGML_FTYPE_MOSTLY_Q4_1_SOME_F16 = 4,
        GGML_FTYPE_MOSTLY_Q8_0          = 7,
        GGML_FTYPE_MOSTLY_Q5_0          = 8,
        GGML_FTYPE_MOSTLY_Q5_1          = 9,
        GGML_FTYPE_MOSTLY_Q2_K          = 10,
        GGML_FTYPE_MOSTLY_Q3_K          = 11,
        GGML_FTYPE_MOSTLY_Q4_K          = 12,
        GGML_FTYPE_MOSTLY_Q5_K          = 13,
        GGML_FTYPE_MOSTLY_Q6_K          = 14,
        GGML_FTYPE_MOSTLY_IQ2_XXS       = 15,
        GGML_FTYPE_MOSTLY_IQ2_XS        = 16,
        GGML_FTYPE_MOSTLY_IQ3_XXS       = 17,
        GGML_FTYPE_MOSTLY_IQ1_S         = 18,
        GGML_FTYPE_MOSTLY_IQ4_NL        = 19,
        GGML_FTYPE_MOSTLY_IQ3_S         = 20,
        GGML_FTYPE_MOSTLY_IQ2_S         = 21,
        GGML_FTYPE_MOSTLY_IQ4_XS        = 22,
        GGML_FTYPE_MOSTLY_IQ1_M         = 23,
        GGML_FTYPE_MOSTLY_BF16          = 24,
        GGML_FTYPE_MOSTLY_MXFP4         = 25,
        GGML_FTYPE_MOSTLY_NVFP4         = 26,
        GGML_FTYPE_MOSTLY_Q1_0          = 27,
        GGML_FTYPE_MOSTLY_Q2_0          = 28,
    };

    enum ggml_op {
        GGML_OP_NONE                    = 0,
        GGML_OP_DUP                     = 1,
        GGML_OP_ADD                     = 2,
        GGML_OP_ADD_ID                  = 3,
        GGML_OP_ADD1                    = 4,
        GGML_OP_ACC                     = 5,
        GGML_OP_SUB                     = 6,
        GGML_OP_MUL                     = 7,
        GGML_OP_DIV                     = 8,
        GGML_OP_SQR                     = 9,
        GGML_OP_SQRT                    = 10,
        GGML_OP_LOG                     = 11,
        GGML_OP_SIN                     = 12,
        GGML_OP_COS                     = 13,
        GGML_OP_SUM                     = 14,
        GGML_OP_SUM_ROWS                = 15,
        GGML_OP_CUMSUM                  = 16,
        GGML_OP_MEAN                    = 17,
        GGML_OP_ARGMAX                  = 18,
        GGML_OP_COUNT_EQUAL             = 19,
        GGML_OP_REPEAT                  = 20,
        GGML_OP_REPEAT_BACK             = 21,
        GGML_OP_CONCAT                  = 22,
        GGML_OP_SILU_BACK               = 23,
        GGML_OP_NORM                    = 24,
        GGML_OP_RMS_NORM                = 25,
        GGML_OP_RMS_NORM_BACK           = 26,
        GGML_OP_GROUP_NORM              = 27,
        GGML_OP_L2_NORM                 = 28,
        GGML_OP_MUL_MAT                 = 29,
        GGML_OP_MUL_MAT_ID              = 30,
        GGML_OP_OUT_PROD                = 31,
        GGML_OP_SCALE                   = 32,
        GGML_OP_SET                     = 33,
        GGML_OP_CPY                     = 34,
        GGML_OP_CONT                    = 35,
        GGML_OP_RESHAPE                 = 36,
        GGML_OP_VIEW                    = 37,
        GGML_OP_PERMUTE                 = 38,
        GGML_OP_TRANSPOSE               = 39,
        GGML_OP_GET_ROWS                = 40,
        GGML_OP_GET_ROWS_BACK           = 41,
        GGML_OP_SET_ROWS                = 42,
        GGML_OP_DIAG                    = 43,
        GGML_OP_DIAG_MASK_INF           = 44,
        GGML_OP_DIAG_MASK_ZERO          = 45,
        GGML_OP_SOFT_MAX                = 46,
        GGML_OP_SOFT_MAX_BACK           = 47,
        GGML_OP_ROPE                    = 48,
        GGML_OP_ROPE_BACK               = 49,
        GGML_OP_CLAMP                   = 50,
        GGML_OP_CONV_TRANSPOSE_1D       = 51,
        GGML_OP_IM2COL                  = 52,
        GGML_OP_IM2COL_BACK             = 53,
        GGML_OP_IM2COL_3D               = 54,
        GGML_OP_COL2IM_1D               = 55,
        GGML_OP_CONV_2D                 = 56,
        GGML_OP_CONV_3D                 = 57,
        GGML_OP_CONV_2D_DW              = 58,
        GGML_OP_CONV_TRANSPOSE_2D       = 59,
        GGML_OP_POOL_1D                 = 60,
        GGML_OP_POOL_2D                 = 61,
        GGML_OP_POOL_2D_BACK            = 62,
        GGML_OP_UPSCALE                 = 63,
        GGML_OP_PAD                     = 64,
        GGML_OP_PAD_REFLECT_1D          = 65,
        GGML_OP_ROLL                    = 66,
        GGML_OP_ARANGE                  = 67,
        GGML_OP_TIMESTEP_EMBEDDING      = 68,
        GGML_OP_ARGSORT                 = 69,
        GGML_OP_TOP_K                   = 70,
        GGML_OP_LEAKY_RELU              = 71,
        GGML_OP_TRI                     = 72,
        GGML_OP_FILL                    = 73,
        GGML_OP_FLASH_ATTN_EXT          = 74,
        GGML_OP_FLASH_ATTN_BACK         = 75,
        GGML_OP_SSM_CONV                = 76,
        GGML_OP_SSM_SCAN                = 77,
        GGML_OP_WIN_PART                = 78,
        GGML_OP_WIN_UNPART              = 79,
        GGML_OP_GET_REL_POS             = 80,
        GGML_OP_ADD_REL_POS             = 81,
        GGML_OP_RWKV_WKV6               = 82,
        GGML_OP_GATED_LINEAR_ATTN       = 83,
        GGML_OP_RWKV_WKV7               = 84,
        GGML_OP_SOLVE_TRI               = 85,
        GGML_OP_GATED_DELTA_NET         = 86,
        GGML_OP_LIGHTNING_INDEXER       = 87,
        GGML_OP_DSV4_HC_COMB            = 88,
        GGML_OP_DSV4_HC_PRE             = 89,
        GGML_OP_DSV4_HC_POST            = 90,
        GGML_OP_UNARY                   = 91,
        GGML_OP_MAP_CUSTOM1             = 92,
        GGML_OP_MAP_CUSTOM2             = 93,
        GGML_OP_MAP_CUSTOM3             = 94,
        GGML_OP_CUSTOM                  = 95,
        GGML_OP_CROSS_ENTROPY_LOSS      = 96,
        GGML_OP_CROSS_ENTROPY_LOSS_BACK = 97,
        GGML_OP_OPT_STEP_ADAMW          = 98,
        GGML_OP_OPT_STEP_SGD            = 99,
        GGML_OP_GLU                     = 100,
        GGML_OP_COUNT                   = 101,
    };

    enum ggml_unary_op {
        GGML_UNARY_OP_ABS         = 0,
        GGML_UNARY_OP_SGN         = 1,
        GGML_UNARY_OP_NEG         = 2,
        GGML_UNARY_OP_STEP        = 3,
        GGML_UNARY_OP_TANH        = 4,
        GGML_UNARY_OP_ELU         = 5,
        GGML_UNARY_OP_RELU        = 6,
        GGML_UNARY_OP_SIGMOID     = 7,
        GGML_UNARY_OP_GELU        = 8,
        GGML_UNARY_OP_GELU_QUICK  = 9,
        GGML_UNARY_OP_SILU        = 10,
        GGML_UNARY_OP_HARDSWISH   = 11,
        GGML_UNARY_OP_HARDSIGMOID = 12,
        GGML_UNARY_OP_EXP         = 13,
        GGML_UNARY_OP_EXPM1       = 14,
        GGML_UNARY_OP_SOFTPLUS    = 15,
        GGML_UNARY_OP_GELU_ERF    = 16,
        GGML_UNARY_OP_XIELU       = 17,
        GGML_UNARY_OP_FLOOR       = 18,
        GGML_UNARY_OP_CEIL        = 19,
        GGML_UNARY_OP_ROUND       = 20,
        GGML_UNARY_OP_TRUNC       = 21,
        GGML_UNARY_OP_COUNT       = 22,
    };

    enum ggml_glu_op {
        GGML_GLU_OP_REGLU       = 0,
        GGML_GLU_OP_GEGLU       = 1,
        GGML_GLU_OP_SWIGLU      = 2,
        GGML_GLU_OP_SWIGLU_OAI  = 3,
        GGML_GLU_OP_GEGLU_ERF   = 4,
        GGML_GLU_OP_GEGLU_QUICK = 5,
        GGML_GLU_OP_COUNT       = 6,
    };

    enum ggml_object_type {
        GGML_OBJECT_TYPE_TENSOR      = 0,
        GGML_OBJECT_TYPE_GRAPH       = 1,
        GGML_OBJECT_TYPE_WORK_BUFFER = 2,
    };

    enum ggml_log_level {
        GGML_LOG_LEVEL_NONE  = 0,
        GGML_LOG_LEVEL_DEBUG = 1,
        GGML_LOG_LEVEL_INFO  = 2,
        GGML_LOG_LEVEL_WARN  = 3,
        GGML_LOG_LEVEL_ERROR = 4,
        GGML_LOG_LEVEL_CONT  = 5,
    };

    enum ggml_tensor_flag {
        GGML_TENSOR_FLAG_INPUT   = 1,
        GGML_TENSOR_FLAG_OUTPUT  = 2,
        GGML_TENSOR_FLAG_PARAM   = 4,
        GGML_TENSOR_FLAG_LOSS    = 8,
        GGML_TENSOR_FLAG_COMPUTE = 16,
    };

    enum ggml_tri_type {
        GGML_TRI_TYPE_UPPER_DIAG = 0,
        GGML_TRI_TYPE_UPPER      = 1,
        GGML_TRI_TYPE_LOWER_DIAG = 2,
        GGML_TRI_TYPE_LOWER      = 3,
    };

    enum ggml_op_pool {
        GGML_OP_POOL_MAX   = 0,
        GGML_OP_POOL_AVG   = 1,
        GGML_OP_POOL_COUNT = 2,
    };

    enum ggml_scale_mode {
        GGML_SCALE_MODE_NEAREST  = 0,
        GGML_SCALE_MODE_BILINEAR = 1,
        GGML_SCALE_MODE_BICUBIC  = 2,
        GGML_SCALE_MODE_COUNT    = 3,
    };

    enum ggml_scale_flag {
        GGML_SCALE_FLAG_ALIGN_CORNERS = 256,
        GGML_SCALE_FLAG_ANTIALIAS     = 512,
    };

    enum ggml_sort_order {
        GGML_SORT_ORDER_ASC  = 0,
        GGML_SORT_ORDER_DESC = 1,
    };

    enum ggml_sched_priority {
        GGML_SCHED_PRIO_LOW      = -1,
        GGML_SCHED_PRIO_NORMAL   = 0,
        GGML_SCHED_PRIO_MEDIUM   = 1,
        GGML_SCHED_PRIO_HIGH     = 2,
        GGML_SCHED_PRIO_REALTIME = 3,
    };

    GGML_API const char * ggml_status_to_string(enum ggml_status status);

    /* IEEE 754 binary16, stored as its bit pattern */
    typedef uint16_t ggml_fp16_t;
    GGML_API float       ggml_fp16_to_fp32(ggml_fp16_t);
    GGML_API ggml_fp16_t ggml_fp32_to_fp16(float);
    GGML_API void        ggml_fp16_to_fp32_row(const ggml_fp16_t *, float *, int64_t);
    GGML_API void        ggml_fp32_to_fp16_row(const float *, ggml_fp16_t *, int64_t);

    /* bfloat16: the top half of a binary32; conversions round to nearest even */
    typedef struct { uint16_t bits; } ggml_bf16_t;
    GGML_API ggml_bf16_t ggml_fp32_to_bf16(float);
    GGML_API float       ggml_bf16_to_fp32(ggml_bf16_t);
    GGML_API void        ggml_bf16_to_fp32_row(const ggml_bf16_t *, float *, int64_t);
    GGML_API void        ggml_fp32_to_bf16_row_ref(const float *, ggml_bf16_t *, int64_t);
    GGML_API void        ggml_fp32_to_bf16_row(const float *, ggml_bf16_t *, int64_t);

    struct ggml_object;
    struct ggml_context;
    struct ggml_cgraph;

    struct ggml_init_params {
        size_t mem_size;   /* bytes */
        void * mem_buffer; /* NULL: the context allocates (and frees) its own memory */
        bool   no_alloc;   /* true: tensors get metadata only, data stays NULL */
    };

    /* n-dimensional tensor; ne[] counts elements, nb[] strides in bytes */
    struct ggml_tensor {
        enum ggml_type type;

        struct ggml_backend_buffer * buffer;

        int64_t ne[GGML_MAX_DIMS];
        size_t  nb[GGML_MAX_DIMS]; /* nb[0] = type size, nb[i] = nb[i-1] * ne[i-1] when contiguous */

        enum ggml_op op;

        /* op parameters, int32_t-aligned */
        int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)];

        int32_t flags;

        struct ggml_tensor * src[GGML_MAX_SRC];

        struct ggml_tensor * view_src;
        size_t               view_offs;

        void * data;

        char name[GGML_MAX_NAME];

        void * extra; /* backend-private */

        char padding[8];
    };

    static const size_t GGML_TENSOR_SIZE = sizeof(struct ggml_tensor);

    /* Return true to stop a running graph computation (GGML_STATUS_ABORTED). */
    typedef bool (*ggml_abort_callback)(void * data);

    typedef uint8_t ggml_guid[16];
    typedef ggml_guid * ggml_guid_t;

    GGML_API bool ggml_guid_matches(ggml_guid_t guid_a, ggml_guid_t guid_b);

    /* library version string (ggmlx's, e.g. "0.1.0") and the commit it was built from, if known */
    GGML_API const char * ggml_version(void);
    GGML_API const char * ggml_commit(void);

    /* Clocks. ggml_time_init is optional (the clocks start lazily) and kept for compatibility. */
    GGML_API void    ggml_time_init(void);
    GGML_API int64_t ggml_time_ms(void);
    GGML_API int64_t ggml_time_us(void);
    GGML_API int64_t ggml_cycles(void);
    GGML_API int64_t ggml_cycles_per_ms(void);

    /* fopen with UTF-8 file names on every platform */
    GGML_API FILE * ggml_fopen(const char * fname, const char * mode);

    GGML_API void ggml_print_object (const struct ggml_object * obj);
    GGML_API void ggml_print_objects(const struct ggml_context * ctx);

    /* Sizes and shape queries. A NULL tensor yields 0 / false with an error recorded. */
    GGML_API int64_t ggml_nelements (const struct ggml_tensor * tensor);
    GGML_API int64_t ggml_nrows     (const struct ggml_tensor * tensor);
    GGML_API size_t  ggml_nbytes    (const struct ggml_tensor * tensor);
    GGML_API size_t  ggml_nbytes_pad(const struct ggml_tensor * tensor); /* padded to GGML_MEM_ALIGN */

    /* Type traits. An unknown or removed type yields 0 / NULL / "NONE"-like names, never a crash. */
    GGML_API int64_t ggml_blck_size(enum ggml_type type);
    GGML_API size_t  ggml_type_size(enum ggml_type type);          /* bytes per block */
    GGML_API size_t  ggml_row_size (enum ggml_type type, int64_t ne); /* bytes for ne elements */

    GGML_DEPRECATED(
    GGML_API double ggml_type_sizef(enum ggml_type type),
    "use ggml_row_size() instead");

    GGML_API const char * ggml_type_name(enum ggml_type type);
    GGML_API const char * ggml_op_name  (enum ggml_op   op);
    GGML_API const char * ggml_op_symbol(enum ggml_op   op);

    GGML_API const char * ggml_unary_op_name(enum ggml_unary_op op);
    GGML_API const char * ggml_glu_op_name(enum ggml_glu_op op);
    GGML_API const char * ggml_op_desc(const struct ggml_tensor * t); /* unary/glu op name, else op name */

    GGML_API size_t ggml_element_size(const struct ggml_tensor * tensor);

    GGML_API bool ggml_is_quantized(enum ggml_type type);

    GGML_API enum ggml_type ggml_ftype_to_ggml_type(enum ggml_ftype ftype);

    GGML_API bool ggml_is_transposed(const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_permuted  (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_empty     (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_scalar    (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_vector    (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_matrix    (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_3d        (const struct ggml_tensor * tensor);
    GGML_API int  ggml_n_dims       (const struct ggml_tensor * tensor); /* at least 1 */

    /* contiguity: whole tensor; _0 same as whole; _1 rows contiguous beyond dim 0 ... */
    GGML_API bool ggml_is_contiguous  (const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_contiguous_0(const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_contiguous_1(const struct ggml_tensor * tensor); /* contiguous for dims >= 1 */
    GGML_API bool ggml_is_contiguous_2(const struct ggml_tensor * tensor); /* contiguous for dims >= 2 */

    /* true when the elements occupy one gap-free block of memory, in any order */
    GGML_API bool ggml_is_contiguously_allocated(const struct ggml_tensor * tensor);

    /* true for a permutation of dims 0..2 where the channel dim (2) is the fastest */
    GGML_API bool ggml_is_contiguous_channels(const struct ggml_tensor * tensor);

    /* true when each row (dim 0) is contiguous */
    GGML_API bool ggml_is_contiguous_rows(const struct ggml_tensor * tensor);

    GGML_API bool ggml_are_same_shape (const struct ggml_tensor * t0, const struct ggml_tensor * t1);
    GGML_API bool ggml_are_same_stride(const struct ggml_tensor * t0, const struct ggml_tensor * t1);

    /* true when t0 can be broadcast (repeated a whole number of times) to t1's shape */
    GGML_API bool ggml_can_repeat(const struct ggml_tensor * t0, const struct ggml_tensor * t1);

    /* bytes a context needs per tensor, metadata only */
    GGML_API size_t ggml_tensor_overhead(void);

    /* true when every value in data is a valid encoding of type (no NaN/Inf for float types) */
    GGML_API bool ggml_validate_row_data(enum ggml_type type, const void * data, size_t nbytes);

    /*
     * Quantization (thread-safe).
     * ggml_quantize_init builds the search tables a type's quantizer needs (only the codebook
     * types have any); calling it again is a no-op until ggml_quantize_free drops them all.
     * ggml_quantize_chunk calls it itself.
     */
    GGML_API void ggml_quantize_init(enum ggml_type type);
    GGML_API void ggml_quantize_free(void);

    /* true for the types whose quantizer needs an importance matrix */
    GGML_API bool ggml_quantize_requires_imatrix(enum ggml_type type);

    /*
     * Quantize nrows rows of n_per_row floats, src + start onward, into dst + the row start/n_per_row
     * (F32/F16/BF16: dst + start elements). imatrix: NULL or n_per_row weights, one per column.
     * Returns the bytes written; 0 with an error when refused (start not a multiple of the block
     * size and of n_per_row, a type with no quantizer, a required imatrix missing, NULL pointers).
     */
    GGML_API size_t ggml_quantize_chunk(
            enum ggml_type   type,
               const float * src,
                      void * dst,
                   int64_t   start,
                   int64_t   nrows,
                   int64_t   n_per_row,
               const float * imatrix);

    /*
     * Contexts.
     * Precondition: params.mem_size > 0 unless no_alloc tensors only are made (metadata still
     * needs memory: ggml_tensor_overhead() per tensor). A user-supplied mem_buffer stays the
     * caller's and must outlive the context. Returns NULL (with an error) when memory cannot be had.
     */
    GGML_API struct ggml_context * ggml_init (struct ggml_init_params params);
    GGML_API void                  ggml_reset(struct ggml_context * ctx); /* forget every object, keep memory */
    GGML_API void                  ggml_free (struct ggml_context * ctx); /* NULL is allowed */

    GGML_API size_t  ggml_used_mem(const struct ggml_context * ctx);

    GGML_API bool    ggml_get_no_alloc(struct ggml_context * ctx);
    GGML_API void    ggml_set_no_alloc(struct ggml_context * ctx, bool no_alloc);

    GGML_API void *  ggml_get_mem_buffer     (const struct ggml_context * ctx);
    GGML_API size_t  ggml_get_mem_size       (const struct ggml_context * ctx);
    GGML_API size_t  ggml_get_max_tensor_size(const struct ggml_context * ctx);

    /* Tensors. ne[i] >= 0; n_dims in 1..GGML_MAX_DIMS; type must be a known type. */
    GGML_API struct ggml_tensor * ggml_new_tensor(
            struct ggml_context * ctx,
            enum   ggml_type type,
            int    n_dims,
            const int64_t *ne);

    GGML_API struct ggml_tensor * ggml_new_tensor_1d(
            struct ggml_context * ctx,
            enum   ggml_type type,
            int64_t ne0);

    GGML_API struct ggml_tensor * ggml_new_tensor_2d(
            struct ggml_context * ctx,
            enum   ggml_type type,
            int64_t ne0,
            int64_t ne1);

    GGML_API struct ggml_tensor * ggml_new_tensor_3d(
            struct ggml_context * ctx,
            enum   ggml_type type,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2);

    GGML_API struct ggml_tensor * ggml_new_tensor_4d(
            struct ggml_context * ctx,
            enum   ggml_type type,
            int64_t ne0,
            int64_t ne1,
            int64_t ne2,
            int64_t ne3);

    /* raw bytes from the context's memory (NULL in a no_alloc context) */
    GGML_API void * ggml_new_buffer(struct ggml_context * ctx, size_t nbytes);

    GGML_API struct ggml_tensor * ggml_dup_tensor (struct ggml_context * ctx, const struct ggml_tensor * src);
    GGML_API struct ggml_tensor * ggml_view_tensor(struct ggml_context * ctx, struct ggml_tensor * src);

    /* walk a context's tensors in creation order */
    GGML_API struct ggml_tensor * ggml_get_first_tensor(const struct ggml_context * ctx);
    GGML_API struct ggml_tensor * ggml_get_next_tensor (const struct ggml_context * ctx, struct ggml_tensor * tensor);
    /* NULL means "no tensor of that name" (not an error) */
    GGML_API struct ggml_tensor * ggml_get_tensor(struct ggml_context * ctx, const char * name);

    /* from a flat element index to coordinates */
    GGML_API void ggml_unravel_index(const struct ggml_tensor * tensor, int64_t i, int64_t * i0, int64_t * i1, int64_t * i2, int64_t * i3);

    GGML_API enum ggml_unary_op ggml_get_unary_op(const struct ggml_tensor * tensor);
    GGML_API enum ggml_glu_op   ggml_get_glu_op(const struct ggml_tensor * tensor);

    GGML_API void *  ggml_get_data    (const struct ggml_tensor * tensor);
    GGML_API float * ggml_get_data_f32(const struct ggml_tensor * tensor);

    GGML_API const char *         ggml_get_name   (const struct ggml_tensor * tensor);
    /* names longer than GGML_MAX_NAME - 1 are truncated */
    GGML_API struct ggml_tensor * ggml_set_name   (      struct ggml_tensor * tensor, const char * name);
    GGML_ATTRIBUTE_FORMAT(2, 3)
    GGML_API struct ggml_tensor * ggml_format_name(      struct ggml_tensor * tensor, const char * fmt, ...);

    /* Flags the scheduler and allocators read: inputs are placed first, outputs are never reused. */
    GGML_API void ggml_set_input (struct ggml_tensor * tensor);
    GGML_API void ggml_set_output(struct ggml_tensor * tensor);
    GGML_API void ggml_set_param (struct ggml_tensor * tensor);
    GGML_API void ggml_set_loss  (struct ggml_tensor * tensor);

    /*
     * Operations on tensors with backpropagation
     */

    GGML_API struct ggml_tensor * ggml_dup(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_dup_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* Binary elementwise ops: b is broadcast to a (ggml_can_repeat(b, a)); the result has a's shape. */
    GGML_API struct ggml_tensor * ggml_add(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_add_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* a plus b's one element (b a scalar of any float type); the result has a's shape and type */
    GGML_API struct ggml_tensor * ggml_add1(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_add1_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_sub(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_sub_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_mul(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_mul_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_div(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_div_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_sqr(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sqr_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sqrt(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sqrt_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* natural log, sine, cosine (their own ggml_op each) */
    GGML_API struct ggml_tensor * ggml_log(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_log_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sin(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sin_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_cos(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_cos_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* sum of all elements, a scalar */
    GGML_API struct ggml_tensor * ggml_sum(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* sum along rows: [ne0, ne1, ne2, ne3] -> [1, ne1, ne2, ne3] */
    GGML_API struct ggml_tensor * ggml_sum_rows(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* cumulative sum along rows (dim 0), same shape */
    GGML_API struct ggml_tensor * ggml_cumsum(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* mean along rows: [ne0, ne1, ne2, ne3] -> [1, ne1, ne2, ne3] */
    GGML_API struct ggml_tensor * ggml_mean(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* index of the largest element of each row of a matrix, as I32 */
    GGML_API struct ggml_tensor * ggml_argmax(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* number of equal elements of a and b (same shape, I32), as a one-element I64 tensor */
    GGML_API struct ggml_tensor * ggml_count_equal(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* a repeated to b's shape */
    GGML_API struct ggml_tensor * ggml_repeat(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_repeat_4d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);

    /* a and b joined along dim; every other dim must match */
    GGML_API struct ggml_tensor * ggml_concat(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   dim);

    GGML_API struct ggml_tensor * ggml_abs(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_abs_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_neg(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_neg_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_tanh(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_tanh_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_relu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_relu_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sigmoid(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sigmoid_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* tanh approximation of GELU */
    GGML_API struct ggml_tensor * ggml_gelu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_gelu_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* exact GELU, x * Phi(x) through erf */
    GGML_API struct ggml_tensor * ggml_gelu_erf(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_gelu_erf_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_silu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_silu_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_exp(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_exp_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* -1, 0 or 1 */
    GGML_API struct ggml_tensor * ggml_sgn(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_sgn_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* 1 for x > 0, else 0 */
    GGML_API struct ggml_tensor * ggml_step(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_step_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* x for x > 0, else exp(x) - 1 */
    GGML_API struct ggml_tensor * ggml_elu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_elu_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* max(x, 0) + negative_slope * min(x, 0) (GGML_OP_LEAKY_RELU; op_params [0] the slope) */
    GGML_API struct ggml_tensor * ggml_leaky_relu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 negative_slope,
            bool                  inplace);

    /* x * sigmoid(1.702 x) */
    GGML_API struct ggml_tensor * ggml_gelu_quick(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_gelu_quick_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* x * min(1, max(0, (x + 3) / 6)); hardsigmoid without the x (no in-place forms upstream) */
    GGML_API struct ggml_tensor * ggml_hardswish(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_hardsigmoid(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* exp(x) - 1, accurate near 0 */
    GGML_API struct ggml_tensor * ggml_expm1(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_expm1_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* log(1 + exp(x)) */
    GGML_API struct ggml_tensor * ggml_softplus(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_softplus_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* rounding to an integral value: down, up, to nearest (halfway away from zero), toward zero */
    GGML_API struct ggml_tensor * ggml_floor(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_floor_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_ceil(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_ceil_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_round(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_round_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_trunc(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_trunc_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /*
     * xIELU: x > 0: ap x^2 + beta x; else (expm1(min(x, eps)) - x) an + beta x, with
     * ap = softplus(alpha_p), an = beta + softplus(alpha_n) (computed here, stored in op_params).
     */
    GGML_API struct ggml_tensor * ggml_xielu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 alpha_n,
            float                 alpha_p,
            float                 beta,
            float                 eps);

    /*
     * Gated linear units. Without _split, a's rows hold both halves: the first ne0/2 values are
     * the activated half and the rest the gate (swapped: the other way round); the result has
     * ne0/2 columns. With _split, a is activated and b is the gate, both of the result's shape.
     */
    GGML_API struct ggml_tensor * ggml_glu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum ggml_glu_op      op,
            bool                  swapped);

    GGML_API struct ggml_tensor * ggml_glu_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            enum ggml_glu_op      op);

    GGML_API struct ggml_tensor * ggml_geglu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_swiglu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_swiglu_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_swiglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_reglu(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_reglu_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_reglu_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_geglu_erf(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_erf_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_erf_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_geglu_quick(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_quick_swapped(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_geglu_quick_split(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /*
     * gpt-oss SwiGLU: min(x, limit) * sigmoid(alpha min(x, limit)) * (clamp(g, -limit, limit) + 1);
     * b (the gate) may be NULL, then a's rows hold both halves. op_params [2] alpha, [3] limit.
     */
    GGML_API struct ggml_tensor * ggml_swiglu_oai(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            float                 alpha,
            float                 limit);

    /* normalize each row to zero mean and unit variance */
    GGML_API struct ggml_tensor * ggml_norm(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    GGML_API struct ggml_tensor * ggml_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    /* divide each row by its root mean square */
    GGML_API struct ggml_tensor * ggml_rms_norm(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    GGML_API struct ggml_tensor * ggml_rms_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    /* divide each row by its L2 norm (at least eps) */
    GGML_API struct ggml_tensor * ggml_l2_norm(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    GGML_API struct ggml_tensor * ggml_l2_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 eps);

    /* normalize groups of channels (dim 2 split into n_groups) to zero mean and unit variance */
    GGML_API struct ggml_tensor * ggml_group_norm(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_groups,
            float                 eps);

    GGML_API struct ggml_tensor * ggml_group_norm_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_groups,
            float                 eps);

    /*
     * Matrix product, b times a transposed: a is [K, N, A2, A3], b is [K, M, B2, B3] and the
     * result is F32 [N, M, B2, B3]. B2 and B3 must be whole multiples of A2 and A3 (a is
     * broadcast). a may be F32, F16 or BF16; b is F32.
     */
    GGML_API struct ggml_tensor * ggml_mul_mat(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* change the precision of a matrix multiplication (GGML_PREC_F32 for higher precision) */
    GGML_API void ggml_mul_mat_set_prec(
            struct ggml_tensor * a,
            enum ggml_prec       prec);

    /*
     * Outer product summed over dim 1: a is [N, K, A2, A3], b is [M, K, B2, B3] and the result
     * is F32 [N, M, B2, B3] (B2, B3 whole multiples of A2, A3). a may be F32, F16 or BF16; b F32.
     */
    GGML_API struct ggml_tensor * ggml_out_prod(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_scale(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 s);

    GGML_API struct ggml_tensor * ggml_scale_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 s);

    /* a * s + b */
    GGML_API struct ggml_tensor * ggml_scale_bias(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 s,
            float                 b);

    GGML_API struct ggml_tensor * ggml_scale_bias_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 s,
            float                 b);

    /* each element clamped to [min, max]; as upstream, always in place (the result views a) */
    GGML_API struct ggml_tensor * ggml_clamp(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            float                 min,
            float                 max);

    /* a -> b (converting types), returns a view of b */
    GGML_API struct ggml_tensor * ggml_cpy(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_cast(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum   ggml_type      type);

    /* make contiguous */
    GGML_API struct ggml_tensor * ggml_cont(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* make contiguous, with new shape (same element count) */
    GGML_API struct ggml_tensor * ggml_cont_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0);

    GGML_API struct ggml_tensor * ggml_cont_2d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1);

    GGML_API struct ggml_tensor * ggml_cont_3d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2);

    GGML_API struct ggml_tensor * ggml_cont_4d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2,
            int64_t               ne3);

    /* Reshapes return views and need a contiguous a; the element count must not change. */
    GGML_API struct ggml_tensor * ggml_reshape(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    GGML_API struct ggml_tensor * ggml_reshape_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0);

    GGML_API struct ggml_tensor * ggml_reshape_2d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1);

    GGML_API struct ggml_tensor * ggml_reshape_3d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2);

    GGML_API struct ggml_tensor * ggml_reshape_4d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2,
            int64_t               ne3);

    /* Views: offset and strides in bytes; the view must lie inside a's data, or NULL. */
    GGML_API struct ggml_tensor * ggml_view_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            size_t                offset);

    GGML_API struct ggml_tensor * ggml_view_2d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            size_t                nb1, /* row stride in bytes */
            size_t                offset);

    GGML_API struct ggml_tensor * ggml_view_3d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2,
            size_t                nb1,
            size_t                nb2,
            size_t                offset);

    GGML_API struct ggml_tensor * ggml_view_4d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2,
            int64_t               ne3,
            size_t                nb1,
            size_t                nb2,
            size_t                nb3,
            size_t                offset);

    /* axis_i is the new position of a's dim i; the axes must be a permutation of 0..3 */
    GGML_API struct ggml_tensor * ggml_permute(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   axis0,
            int                   axis1,
            int                   axis2,
            int                   axis3);

    /* alias for ggml_permute(ctx, a, 1, 0, 2, 3) */
    GGML_API struct ggml_tensor * ggml_transpose(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /* rows of a picked by the I32 indices in b; b is [n, ne2, ne3] over a's [.., ne2, ne3] */
    GGML_API struct ggml_tensor * ggml_get_rows(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,  /* data */
            struct ggml_tensor  * b); /* row indices */

    /*
     * a[c[i]] = b[i] for every row i of b: writes b's rows into a at the I64 or I32 indices in c,
     * returns a view of a. Indices out of range fail the computation (GGML_STATUS_FAILED).
     */
    GGML_API struct ggml_tensor * ggml_set_rows(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,  /* destination */
            struct ggml_tensor  * b,  /* source */
            struct ggml_tensor  * c); /* row indices */

    /* set elements above the diagonal (shifted right by n_past) to -INF */
    GGML_API struct ggml_tensor * ggml_diag_mask_inf(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_past);

    GGML_API struct ggml_tensor * ggml_diag_mask_inf_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_past);

    /* set elements above the diagonal (shifted right by n_past) to 0 */
    GGML_API struct ggml_tensor * ggml_diag_mask_zero(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_past);

    GGML_API struct ggml_tensor * ggml_diag_mask_zero_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   n_past);

    GGML_API struct ggml_tensor * ggml_soft_max(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    GGML_API struct ggml_tensor * ggml_soft_max_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a);

    /*
     * softmax(a*scale + mask*(ALiBi slope)) along rows.
     * mask: optional (NULL means none), F16 or F32, ne0 = a's ne0, ne1 >= a's ne1, broadcast
     * over dims 2 and 3. max_bias > 0 enables ALiBi with a slope per head (dim 2).
     */
    GGML_API struct ggml_tensor * ggml_soft_max_ext(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * mask,
            float                 scale,
            float                 max_bias);

    GGML_API struct ggml_tensor * ggml_soft_max_ext_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * mask,
            float                 scale,
            float                 max_bias);

    /*
     * Rotary position embedding.
     * b: I32 positions, one per a's ne2 (a is [head_dim, n_head, n_tokens, 1]);
     * mode: GGML_ROPE_TYPE_NORMAL rotates adjacent pairs, GGML_ROPE_TYPE_NEOX the two halves.
     */
    GGML_API struct ggml_tensor * ggml_rope(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   n_dims,
            int                   mode);

    GGML_API struct ggml_tensor * ggml_rope_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   n_dims,
            int                   mode);

    /* c: optional F32 frequency factors (n_dims/2 values) dividing each pair's frequency */
    GGML_API struct ggml_tensor * ggml_rope_ext(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c,
            int                   n_dims,
            int                   mode,
            int                   n_ctx_orig,
            float                 freq_base,
            float                 freq_scale,
            float                 ext_factor,
            float                 attn_factor,
            float                 beta_fast,
            float                 beta_slow);

    GGML_API struct ggml_tensor * ggml_rope_ext_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c,
            int                   n_dims,
            int                   mode,
            int                   n_ctx_orig,
            float                 freq_base,
            float                 freq_scale,
            float                 ext_factor,
            float                 attn_factor,
            float                 beta_fast,
            float                 beta_slow);

    /* YaRN: the range of rotary dims to correct, from the beta thresholds */
    GGML_API void ggml_rope_yarn_corr_dims(
        int n_dims, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow, float dims[2]);

    /* pad each dim at its end with zeros: [x, ..., x] -> [x, ..., x, 0, ..., 0] */
    GGML_API struct ggml_tensor * ggml_pad(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   p0,
            int                   p1,
            int                   p2,
            int                   p3);

    /* pad each dim with lp zeros before and rp zeros after */
    GGML_API struct ggml_tensor * ggml_pad_ext(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   lp0,
            int                   rp0,
            int                   lp1,
            int                   rp1,
            int                   lp2,
            int                   rp2,
            int                   lp3,
            int                   rp3);

    /* pad dim 0 with its reflection (the edge not repeated): [a, b, c, d] p0 2, p1 1 -> [c, b, a, b, c, d, c] */
    GGML_API struct ggml_tensor * ggml_pad_reflect_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   p0,
            int                   p1);

    /* ---- convolution and images ---- */

    /* im2col: kernel a [KW, KH, IC, OC] (1D: [K, IC, OC]), data b [W, H, IC, N] (1D: [L, IC, N]) ->
     * [IC*KH*KW, OW, OH, N] (1D: [IC*K, OL, N]) of dst_type (F32 or F16); a mul_mat with the kernel is then
     * the convolution */
    GGML_API struct ggml_tensor * ggml_im2col(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   s1,
            int                   p0,
            int                   p1,
            int                   d0,
            int                   d1,
            bool                  is_2D,
            enum ggml_type        dst_type);

    /* scatter-add of GEMM columns a [K*oc, T_in] into a signal [(T_in - 1)*s0 + K - 2*p0, oc] */
    GGML_API struct ggml_tensor * ggml_col2im_1d(
        struct ggml_context * ctx,
        struct ggml_tensor  * a,
        int                   s0,
        int                   oc,
        int                   p0);

    /* a [K, IC, OC], b [L, IC, N] -> [OL, OC, N] */
    GGML_API struct ggml_tensor * ggml_conv_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   p0,
            int                   d0);

    /* ggml_conv_1d with padding a->ne[0] / 2 */
    GGML_API struct ggml_tensor* ggml_conv_1d_ph(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s,
            int                   d);

    /* depthwise: a [K, 1, C], b [L, C] -> [OL, C, 1] */
    GGML_API struct ggml_tensor * ggml_conv_1d_dw(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   p0,
            int                   d0);

    GGML_API struct ggml_tensor * ggml_conv_1d_dw_ph(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   d0);

    /* a [K, OC, IC], b [L, IC] -> [(L - 1)*s0 + K, OC]; p0 must be 0 and d0 1 */
    GGML_API struct ggml_tensor * ggml_conv_transpose_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   p0,
            int                   d0);

    /* a [KW, KH, IC, OC], b [W, H, IC, N] -> [OW, OH, OC, N] (im2col + mul_mat) */
    GGML_API struct ggml_tensor * ggml_conv_2d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   s1,
            int                   p0,
            int                   p1,
            int                   d0,
            int                   d1);

    /* a [KW, KH, KD, IC*OC], b [W, H, D, IC*N] -> [OW, OH, OD*N, IC*KD*KH*KW] columns */
    GGML_API struct ggml_tensor * ggml_im2col_3d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int64_t               IC,
            int                   s0,
            int                   s1,
            int                   s2,
            int                   p0,
            int                   p1,
            int                   p2,
            int                   d0,
            int                   d1,
            int                   d2,
            enum ggml_type        dst_type);

    /* a [KW, KH, KD, OC*IC], b [W, H, D, N*IC] -> [OW, OH, OD, N*OC] */
    GGML_API struct ggml_tensor * ggml_conv_3d(
                struct ggml_context * ctx,
                struct ggml_tensor  * a,
                struct ggml_tensor  * b,
                int64_t               IC,
                int                   s0,
                int                   s1,
                int                   s2,
                int                   p0,
                int                   p1,
                int                   p2,
                int                   d0,
                int                   d1,
                int                   d2
        );

    /* stride = kernel size, no padding */
    GGML_API struct ggml_tensor * ggml_conv_2d_sk_p0(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* stride 1, padding half the kernel */
    GGML_API struct ggml_tensor * ggml_conv_2d_s1_ph(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* depthwise (via im2col and mul_mat): a [KW, KH, 1, C], b [W, H, C, N] -> [OW, OH, C, N] */
    GGML_API struct ggml_tensor * ggml_conv_2d_dw(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                  s0,
            int                  s1,
            int                  p0,
            int                  p1,
            int                  d0,
            int                  d1);

    /* depthwise, its own op: a [KW, KH, 1, C], b [W, H, C, N] -> [OW, OH, C, N] (channels-innermost b gives a
     * channels-innermost result) */
    GGML_API struct ggml_tensor * ggml_conv_2d_dw_direct(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   stride0,
            int                   stride1,
            int                   pad0,
            int                   pad1,
            int                   dilation0,
            int                   dilation1);

    /* a [KW, KH, OC, IC], b [W, H, IC, N] -> [(W - 1)*stride + KW, (H - 1)*stride + KH, OC, N] */
    GGML_API struct ggml_tensor * ggml_conv_transpose_2d_p0(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   stride);

    GGML_API struct ggml_tensor * ggml_conv_2d_direct(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   s1,
            int                   p0,
            int                   p1,
            int                   d0,
            int                   d1);

    GGML_API struct ggml_tensor * ggml_conv_3d_direct(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            int                   s0,
            int                   s1,
            int                   s2,
            int                   p0,
            int                   p1,
            int                   p2,
            int                   d0,
            int                   d1,
            int                   d2,
            int                   n_channels,
            int                   n_batch,
            int                   n_channels_out);

    GGML_API struct ggml_tensor * ggml_pool_1d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum ggml_op_pool     op,
            int                   k0,
            int                   s0,
            int                   p0);

    /* the result has 2*p0 padding in dim 0 and 2*p1 in dim 1 (AVG divides by k0*k1, padding included) */
    GGML_API struct ggml_tensor * ggml_pool_2d(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum ggml_op_pool     op,
            int                   k0,
            int                   k1,
            int                   s0,
            int                   s1,
            float                 p0,
            float                 p1);

    /* multiplies ne0 and ne1 by scale_factor */
    GGML_API struct ggml_tensor * ggml_upscale(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   scale_factor,
            enum ggml_scale_mode  mode);

    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_upscale_ext(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   ne0,
            int                   ne1,
            int                   ne2,
            int                   ne3,
            enum ggml_scale_mode  mode),
        "use ggml_interpolate instead");

    /* up- or downsamples to the given size; 2D modes (bilinear, bicubic) act on dims 0 and 1 */
    GGML_API struct ggml_tensor * ggml_interpolate(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int64_t               ne0,
            int64_t               ne1,
            int64_t               ne2,
            int64_t               ne3,
            uint32_t              mode);

    /* non-overlapping w x w windows, zero-padded: a [C, W, H] -> [C, w, w, windows] (used in SAM) */
    GGML_API struct ggml_tensor * ggml_win_part(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   w);

    /* reverse of ggml_win_part */
    GGML_API struct ggml_tensor * ggml_win_unpart(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   w0,
            int                   h0,
            int                   w);

    /* F16 a [C, 2*qh - 1] -> [C, kh, qh], row (k, q) = a row (kh - 1 - k + q) (used in SAM) */
    GGML_API struct ggml_tensor * ggml_get_rel_pos(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   qh,
            int                   kh);

    /* a [W*W, H*Q, B] += ph broadcast over kw and pw over kh (pw, ph [W, H, Q, B]) (used in SAM) */
    GGML_API struct ggml_tensor * ggml_add_rel_pos(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * pw,
            struct ggml_tensor  * ph);

    GGML_API struct ggml_tensor * ggml_add_rel_pos_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * pw,
            struct ggml_tensor  * ph);

    /* sinusoidal embedding of each timestep (F32 [n]): F32 [dim, n] */
    GGML_API struct ggml_tensor * ggml_timestep_embedding(
            struct ggml_context * ctx,
            struct ggml_tensor  * timesteps,
            int                   dim,
            int                   max_period);

    /* indices (I32) that sort each row */
    GGML_API struct ggml_tensor * ggml_argsort(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum ggml_sort_order  order);

    /* start, start + step, ... below stop (F32, 1-D) */
    GGML_API struct ggml_tensor * ggml_arange(
            struct ggml_context * ctx,
            float                 start,
            float                 stop,
            float                 step);

    /* indices (I32) of the k largest elements of each row, in no particular order */
    GGML_API struct ggml_tensor * ggml_top_k(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   k);

    /* ---- attention and experts ---- */

    /* indices (I32) of each row's k largest elements, largest first (a view of a descending argsort) */
    GGML_API struct ggml_tensor * ggml_argsort_top_k(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            int                   k);

    /* adds sinks (F32 [a's ne2]) to a soft_max_ext result: one extra logit per head, no output */
    GGML_API void ggml_soft_max_add_sinks(
            struct ggml_tensor * a,
            struct ggml_tensor * sinks);

    /*
     * Fused attention: softmax(scale * K^T Q + slope * mask) V, with memory independent of n_kv^2.
     *   q:    [n_embd_k, n_batch, n_head,    ne3 ]  F32
     *   k:    [n_embd_k, n_kv,    n_head_kv, ne3 ]  F32, F16, BF16 or quantized
     *   v:    [n_embd_v, n_kv,    n_head_kv, ne3 ]  !! not transposed !!
     *   mask: [n_kv,     n_batch, ne32,      ne33]  F16 or F32 (more rows than n_batch allowed)
     *   res:  [n_embd_v, n_head,  n_batch,   ne3 ]  !! permuted !!
     * broadcast: n_head % n_head_kv == 0, n_head % ne32 == 0, ne3 % ne33 == 0.
     * logit_softcap > 0 replaces each logit s by logit_softcap * tanh(s / logit_softcap).
     */
    GGML_API struct ggml_tensor * ggml_flash_attn_ext(
            struct ggml_context * ctx,
            struct ggml_tensor  * q,
            struct ggml_tensor  * k,
            struct ggml_tensor  * v,
            struct ggml_tensor  * mask,
            float                 scale,
            float                 max_bias,
            float                 logit_softcap);

    GGML_API void ggml_flash_attn_ext_set_prec(
            struct ggml_tensor * a,
            enum ggml_prec       prec);

    GGML_API enum ggml_prec ggml_flash_attn_ext_get_prec(
            const struct ggml_tensor * a);

    /* sinks: F32 [n_head], one extra logit per head joining each row's softmax */
    GGML_API void ggml_flash_attn_ext_add_sinks(
            struct ggml_tensor * a,
            struct ggml_tensor * sinks);

    /*
     * Indirect matrix multiplication (mixture of experts):
     *   as:  [K, N, n_expert]  F32, F16, BF16 or quantized, one matrix per expert
     *   b:   [K, n_b, n_tokens] F32 (n_b 1 or n_expert_used)
     *   ids: [n_expert_used, n_tokens] I32
     *   res: [N, n_expert_used, n_tokens] F32, res[:, e, t] = as[ids[e, t]] * b[:, e % n_b, t]
     */
    GGML_API struct ggml_tensor * ggml_mul_mat_id(
            struct ggml_context * ctx,
            struct ggml_tensor  * as,
            struct ggml_tensor  * b,
            struct ggml_tensor  * ids);

    /* res[:, e, t] = a[:, e, t] + b[:, ids[e, t]] (a F32 [ne0, n_used, n_tokens], b F32 [ne0, n_expert]) */
    GGML_API struct ggml_tensor * ggml_add_id(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * ids);

    /*
     * State-space and linear-attention scans. The scans return one F32 tensor:
     * the per-token outputs, then the new state(s), as upstream packs them.
     * ssm_conv: sx [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner] -> [d_inner, n_t, n_s]
     * ssm_scan: s [d_state, head_dim, n_head, n_rs], x [head_dim, n_head, n_t, n_s], dt [n_head, n_t, n_s],
     *           A [1 or d_state, n_head], B and C [d_state, n_group, n_t, n_s], ids I32 [n_s] (state rows);
     *           K state snapshots (slot 0 final; K > 1 only with Mamba-2's scalar A)
     * rwkv_wkv6, gated_linear_attn, rwkv_wkv7: inputs [S, H, n_tokens], state S*S*H per sequence ->
     *           [S*H, n_tokens + S*n_seqs]
     */
    GGML_API struct ggml_tensor * ggml_ssm_conv(
            struct ggml_context * ctx,
            struct ggml_tensor  * sx,
            struct ggml_tensor  * c);

    GGML_API struct ggml_tensor * ggml_ssm_scan(
            struct ggml_context * ctx,
            struct ggml_tensor  * s,
            struct ggml_tensor  * x,
            struct ggml_tensor  * dt,
            struct ggml_tensor  * A,
            struct ggml_tensor  * B,
            struct ggml_tensor  * C,
            struct ggml_tensor  * ids,
            int64_t               K);

    GGML_API struct ggml_tensor * ggml_rwkv_wkv6(
            struct ggml_context * ctx,
            struct ggml_tensor  * k,
            struct ggml_tensor  * v,
            struct ggml_tensor  * r,
            struct ggml_tensor  * tf,
            struct ggml_tensor  * td,
            struct ggml_tensor  * state);

    GGML_API struct ggml_tensor * ggml_gated_linear_attn(
            struct ggml_context * ctx,
            struct ggml_tensor  * k,
            struct ggml_tensor  * v,
            struct ggml_tensor  * q,
            struct ggml_tensor  * g,
            struct ggml_tensor  * state,
            float scale);

    GGML_API struct ggml_tensor * ggml_rwkv_wkv7(
            struct ggml_context * ctx,
            struct ggml_tensor  * r,
            struct ggml_tensor  * w,
            struct ggml_tensor  * k,
            struct ggml_tensor  * v,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * state);

    /*
     * q, k [S_k, H_k, n_tokens, n_seqs_k] (repeated over v's heads and sequences), v [S_v, H_v, n_tokens,
     * n_seqs], g [1 or S_v, H_v, n_tokens, n_seqs], beta [1, H_v, n_tokens, n_seqs], state [S_v, S_v, H_v,
     * n_seqs] -> [S_v*H_v, n_tokens*n_seqs + K*S_v*n_seqs]: outputs, then K states (slot 0 the final one,
     * slot s the state s tokens back; slots past n_tokens - 1 are not written).
     */
    GGML_API struct ggml_tensor * ggml_gated_delta_net(
            struct ggml_context * ctx,
            struct ggml_tensor  * q,
            struct ggml_tensor  * k,
            struct ggml_tensor  * v,
            struct ggml_tensor  * g,
            struct ggml_tensor  * beta,
            struct ggml_tensor  * state,
            int64_t               K);

    /*
     * DeepSeek sparse-attention indexer and V4 hyper-connections.
     * lightning_indexer: q [n_embd, n_head, n_batch, ne3], k [n_embd, 1, n_kv, ne3] (any type with a
     *   to_float), weights [n_head, n_batch, 1, ne3] (prescaled), mask F16 [n_kv, n_batch, 1, ne33]
     *   (ne3 % ne33 == 0) -> [n_kv, n_batch, 1, ne3] = sum_h relu(q.k) * weights + mask
     * dsv4_hc_comb: mixes [24, n_tokens], scale [>= 3], base [24] -> [4, 4, n_tokens], a softmax over
     *   destinations then n_iter Sinkhorn normalizations (hc = 4 streams only)
     * dsv4_hc_pre: x [n_embd, hc, n_tokens], weights [hc, n_tokens] -> [n_embd, n_tokens]
     * dsv4_hc_post: x [n_embd, n_tokens], residual [n_embd, hc, n_tokens], post [hc, n_tokens],
     *   comb [hc, hc, n_tokens] -> [n_embd, hc, n_tokens]
     */
    GGML_API struct ggml_tensor * ggml_lightning_indexer(
        struct ggml_context * ctx,
        struct ggml_tensor  * q,
        struct ggml_tensor  * k,
        struct ggml_tensor  * weights,
        struct ggml_tensor  * mask);

    GGML_API struct ggml_tensor * ggml_dsv4_hc_comb(
            struct ggml_context * ctx,
            struct ggml_tensor  * mixes,
            struct ggml_tensor  * scale,
            struct ggml_tensor  * base,
            float                 eps,
            int32_t               n_iter);

    GGML_API struct ggml_tensor * ggml_dsv4_hc_pre(
            struct ggml_context * ctx,
            struct ggml_tensor  * x,
            struct ggml_tensor  * weights);

    GGML_API struct ggml_tensor * ggml_dsv4_hc_post(
            struct ggml_context * ctx,
            struct ggml_tensor  * x,
            struct ggml_tensor  * residual,
            struct ggml_tensor  * post,
            struct ggml_tensor  * comb);

    /*
     * Unary ops by enum (see enum ggml_unary_op for the list ggmlx computes).
     */
    GGML_API struct ggml_tensor * ggml_unary(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            enum ggml_unary_op    op);

    GGML_API struct ggml_tensor * ggml_unary_inplace(
        struct ggml_context * ctx,
        struct ggml_tensor  * a,
        enum ggml_unary_op    op);

    /*
     * Training ops: the gradients ggml_build_backward_expand builds from, the loss and the
     * optimizer steps. F32. Each backward op takes the incoming gradient first.
     */
    /* a summed down to b's shape: the gradient of ggml_repeat(x, b-shaped) */
    GGML_API struct ggml_tensor * ggml_repeat_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* a: gradient of silu(b); b: silu's input */
    GGML_API struct ggml_tensor * ggml_silu_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* a: gradient of rms_norm(b, eps); b: its input */
    GGML_API struct ggml_tensor * ggml_rms_norm_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            float                 eps);

    /* a: gradient of y = soft_max_ext(x, mask, scale, max_bias); b: y. max_bias must be 0. */
    GGML_API struct ggml_tensor * ggml_soft_max_ext_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            float                 scale,
            float                 max_bias);

    GGML_API struct ggml_tensor * ggml_soft_max_ext_back_inplace(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            float                 scale,
            float                 max_bias);

    /* a: gradient of ggml_rope_ext(x, b, c, ...) with the same parameters: rotates it back */
    GGML_API struct ggml_tensor * ggml_rope_ext_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c,
            int                   n_dims,
            int                   mode,
            int                   n_ctx_orig,
            float                 freq_base,
            float                 freq_scale,
            float                 ext_factor,
            float                 attn_factor,
            float                 beta_fast,
            float                 beta_slow);

    /* a: gradient of ggml_rope_multi(x, b, c, ...) with the same parameters: rotates it back */
    GGML_API struct ggml_tensor * ggml_rope_multi_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c,
            int                   n_dims,
            int                   sections[4],
            int                   mode,
            int                   n_ctx_orig,
            float                 freq_base,
            float                 freq_scale,
            float                 ext_factor,
            float                 attn_factor,
            float                 beta_fast,
            float                 beta_slow);

    /* a: gradient of ggml_im2col(b, image, s0, s1, p0, p1, d0, d1, is_2D, ...); ne: the image's
     * shape. The image's gradient (F32). */
    GGML_API struct ggml_tensor * ggml_im2col_back(
        struct ggml_context * ctx,
        struct ggml_tensor  * a,
        struct ggml_tensor  * b,
        int64_t             * ne,
        int                   s0,
        int                   s1,
        int                   p0,
        int                   p1,
        int                   d0,
        int                   d1,
        bool                  is_2D);

    /* a: gradient of ggml_pool_2d(af, op, ...) with the same parameters: af's gradient (F32) */
    GGML_API struct ggml_tensor * ggml_pool_2d_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * af,
            enum ggml_op_pool     op,
            int                   k0,
            int                   k1,
            int                   s0,
            int                   s1,
            float                 p0,
            float                 p1);

    /* the gradients of attention V softmax(K^T Q / sqrt(D)) (causal when masked) for q [D, N, h, b],
     * k [D, M, h_kv, b], v [M, D, h_kv, b] (transposed) and d, O's gradient [D, N, h, b]: F32,
     * dq, dk, dv end to end, each padded to GGML_MEM_ALIGN bytes */
    GGML_API struct ggml_tensor * ggml_flash_attn_back(
           struct ggml_context * ctx,
           struct ggml_tensor  * q,
           struct ggml_tensor  * k,
           struct ggml_tensor  * v,
           struct ggml_tensor  * d,
           bool                  masked);

    /* a: gradient of get_rows(c, b) (2-D); b: I32 indices; c: the rows' source, for its shape */
    GGML_API struct ggml_tensor * ggml_get_rows_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c);

    /* -sum(b * log_softmax(a)) per row of logits a and labels b, averaged over rows: F32 [1] */
    GGML_API struct ggml_tensor * ggml_cross_entropy_loss(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b);

    /* a: gradient of the loss (scalar); b: logits; c: labels */
    GGML_API struct ggml_tensor * ggml_cross_entropy_loss_back(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * b,
            struct ggml_tensor  * c);

    /* a (a parameter) -= AdamW step from grad, updating the moments m and v; adamw_params F32 [7]:
     * alpha, beta1, beta2, eps, weight decay, 1/(1-beta1^t), 1/(1-beta2^t). Result: a view of a. */
    GGML_API struct ggml_tensor * ggml_opt_step_adamw(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * grad,
            struct ggml_tensor  * m,
            struct ggml_tensor  * v,
            struct ggml_tensor  * adamw_params);

    /* a (a parameter) = a (1 - alpha wd) - alpha grad; sgd_params F32 [2]: alpha, weight decay */
    GGML_API struct ggml_tensor * ggml_opt_step_sgd(
            struct ggml_context * ctx,
            struct ggml_tensor  * a,
            struct ggml_tensor  * grad,
            struct ggml_tensor  * sgd_params);

    /*
     * Graphs.
     * ggml_new_graph fails (NULL) on a failed context. ggml_build_forward_expand(gf, NULL) marks
     * gf failed, so that a NULL left by a failed constructor is never taken for "nothing to do".
     */
    GGML_API struct ggml_cgraph * ggml_new_graph       (struct ggml_context * ctx); /* GGML_DEFAULT_GRAPH_SIZE nodes */
    GGML_API struct ggml_cgraph * ggml_new_graph_custom(struct ggml_context * ctx, size_t size, bool grads);
    GGML_API struct ggml_cgraph * ggml_graph_dup       (struct ggml_context * ctx, struct ggml_cgraph * cgraph, bool force_grads);
    /* dst must be at least as large as src */
    GGML_API void                 ggml_graph_cpy       (struct ggml_cgraph * src, struct ggml_cgraph * dst);
    /* gradient accumulators to 0 (a loss's to 1) and AdamW moments to 0; the graph needs gradients */
    GGML_API void                 ggml_graph_reset     (struct ggml_cgraph * cgraph);
    GGML_API void                 ggml_graph_clear     (struct ggml_cgraph * cgraph); /* drop every node and leaf */

    GGML_API int                   ggml_graph_size   (struct ggml_cgraph * cgraph);
    /* i < 0 counts from the end: -1 is the last node; out of range is NULL with an error */
    GGML_API struct ggml_tensor *  ggml_graph_node   (struct ggml_cgraph * cgraph, int i);
    GGML_API struct ggml_tensor ** ggml_graph_nodes  (struct ggml_cgraph * cgraph);
    GGML_API int                   ggml_graph_n_nodes(struct ggml_cgraph * cgraph);

    GGML_API void   ggml_graph_add_node(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

    GGML_API size_t ggml_graph_overhead(void);
    GGML_API size_t ggml_graph_overhead_custom(size_t size, bool grads);

    GGML_API struct ggml_tensor * ggml_graph_get_tensor(const struct ggml_cgraph * cgraph, const char * name);
    /* node's gradient (or its accumulator) after ggml_build_backward_expand; NULL when it has none */
    GGML_API struct ggml_tensor * ggml_graph_get_grad    (const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);
    GGML_API struct ggml_tensor * ggml_graph_get_grad_acc(const struct ggml_cgraph * cgraph, const struct ggml_tensor * node);

    /* print info and performance information for the graph */
    GGML_API void ggml_graph_print(const struct ggml_cgraph * cgraph);

    /* write a Graphviz dot file; gb may be NULL */
    GGML_API void ggml_graph_dump_dot(const struct ggml_cgraph * gb, const struct ggml_cgraph * cgraph, const char * filename);

    /* add tensor and everything it depends on to the graph, each node once, sources first */
    GGML_API void ggml_build_forward_expand(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

    /*
     * Append the gradient of the graph's loss (ggml_set_loss) with respect to every parameter
     * (ggml_set_param) to cgraph, which must have gradients (ggml_new_graph_custom(..., true)).
     * grad_accs, if not NULL, has one entry per node (NULL or a tensor of the node's shape) to
     * accumulate that node's gradient into. A graph it cannot differentiate is marked failed.
     */
    GGML_API void ggml_build_backward_expand(
        struct ggml_context *  ctx,
        struct ggml_cgraph  *  cgraph,
        struct ggml_tensor  ** grad_accs);

    /*
     * Logging. The callback may be called from any thread (queue workers included).
     * NULL restores the default (stderr).
     */
    typedef void (*ggml_log_callback)(enum ggml_log_level level, const char * text, void * user_data);

    GGML_API void ggml_log_get(ggml_log_callback * log_callback, void ** user_data);
    GGML_API void ggml_log_set(ggml_log_callback   log_callback, void *  user_data);

    /* Called by ggml_abort() before abort(); returns the previous callback. */
    typedef void (*ggml_abort_callback_t)(const char * error_message);
    GGML_API ggml_abort_callback_t ggml_set_abort_callback(ggml_abort_callback_t callback);

    GGML_API struct ggml_tensor * ggml_set_zero(struct ggml_tensor * tensor);

    /*
     * Type traits
     */
    typedef void (*ggml_to_float_t)  (const void  * GGML_RESTRICT x, float * GGML_RESTRICT y, int64_t k);
    typedef void (*ggml_from_float_t)(const float * GGML_RESTRICT x, void  * GGML_RESTRICT y, int64_t k);

    struct ggml_type_traits {
        const char             * type_name;
        int64_t                  blck_size;
        int64_t                  blck_size_interleave; /* interleave elements in blocks */
        size_t                   type_size;
        bool                     is_quantized;
        ggml_to_float_t          to_float;
        ggml_from_float_t        from_float_ref;
    };

    /* never NULL for a type below GGML_TYPE_COUNT; conversions are NULL where ggmlx has none */
    GGML_API const struct ggml_type_traits * ggml_get_type_traits(enum ggml_type type);

    /*
     * Threadpool parameters (the pool itself is in ggml-cpu.h)
     */
    struct ggml_threadpool_params {
        bool                     cpumask[GGML_MAX_N_THREADS]; /* cores a worker may run on; all false: no pinning */
        int                      n_threads;
        enum ggml_sched_priority prio;
        uint32_t                 poll;       /* 0..100: how long idle workers spin before they sleep */
        bool                     strict_cpu; /* one core per worker instead of the whole mask */
        bool                     paused;     /* workers wait for ggml_threadpool_resume() */
    };

    struct ggml_threadpool; /* forward declaration, see ggml-cpu.h */

    typedef struct ggml_threadpool * ggml_threadpool_t;

    GGML_API struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads);
    GGML_API void                          ggml_threadpool_params_init   (struct ggml_threadpool_params * p, int n_threads);
    GGML_API bool                          ggml_threadpool_params_match  (const struct ggml_threadpool_params * p0, const struct ggml_threadpool_params * p1);

    /*
     * Writing into tensors, M-RoPE, custom ops and graph utilities.
     */

    /* b -> view(a, nb1, nb2, nb3, offset) (bytes; a contiguous): the result is a with b written
     * there (SET), or with b added there (ACC, F32); _inplace returns a view of a */
    GGML_API struct ggml_tensor * ggml_set(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           size_t nb1, size_t nb2, size_t nb3, size_t offset);
    GGML_API struct ggml_tensor * ggml_set_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                   size_t nb1, size_t nb2, size_t nb3, size_t offset);
    GGML_API struct ggml_tensor * ggml_set_1d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                              size_t offset);
    GGML_API struct ggml_tensor * ggml_set_1d_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                      size_t offset);
    GGML_API struct ggml_tensor * ggml_set_2d(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                              size_t nb1, size_t offset);
    GGML_API struct ggml_tensor * ggml_set_2d_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                      size_t nb1, size_t offset);
    GGML_API struct ggml_tensor * ggml_acc(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                           size_t nb1, size_t nb2, size_t nb3, size_t offset);
    GGML_API struct ggml_tensor * ggml_acc_inplace(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                   size_t nb1, size_t nb2, size_t nb3, size_t offset);

    /* a + b (b broadcast over a's rows), the result in type; a F16, BF16 or quantized */
    GGML_API struct ggml_tensor * ggml_add_cast(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                enum ggml_type type);

    /* every element c */
    GGML_API struct ggml_tensor * ggml_fill(struct ggml_context * ctx, struct ggml_tensor * a, float c);
    GGML_API struct ggml_tensor * ggml_fill_inplace(struct ggml_context * ctx, struct ggml_tensor * a, float c);

    /* zeros outside the triangle of each square matrix (column i0, row i1): LOWER keeps i0 < i1,
     * LOWER_DIAG i0 <= i1, UPPER i0 > i1, UPPER_DIAG i0 >= i1 */
    GGML_API struct ggml_tensor * ggml_tri(struct ggml_context * ctx, struct ggml_tensor * a, enum ggml_tri_type type);

    /* [n, 1, ne2, ne3] -> [n, n, ne2, ne3] with a on the diagonal, zeros elsewhere */
    GGML_API struct ggml_tensor * ggml_diag(struct ggml_context * ctx, struct ggml_tensor * a);

    /* elements moved by shift_d along dim d (|shift_d| < ne_d), wrapping around */
    GGML_API struct ggml_tensor * ggml_roll(struct ggml_context * ctx, struct ggml_tensor * a, int shift0, int shift1,
                                            int shift2, int shift3);

    /* padding taken from the other side of each dim, as on a torus */
    GGML_API struct ggml_tensor * ggml_pad_circular(struct ggml_context * ctx, struct ggml_tensor * a, int p0, int p1,
                                                    int p2, int p3);
    GGML_API struct ggml_tensor * ggml_pad_ext_circular(struct ggml_context * ctx, struct ggml_tensor * a, int lp0, int rp0,
                                                        int lp1, int rp1, int lp2, int rp2, int lp3, int rp3);

    /* X with A X = B: a [n, n] lower triangular, b [k, n], batches equal; only left, lower, non-unit
     * (as upstream) */
    GGML_API struct ggml_tensor * ggml_solve_tri(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                 bool left, bool lower, bool uni);

    /* GGML_HINT_SRC0_IS_HADAMARD tells backends src0 is a Hadamard matrix; the result is unchanged */
    GGML_API void ggml_mul_mat_set_hint(struct ggml_tensor * a, enum ggml_op_hint hint);

    /*
     * Multi-dimensional RoPE (Qwen-VL): b holds four positions per token (t for all tokens, then
     * h, w, e); sections count the rotated pairs of each; NEOX ordering. MROPE: sections one after
     * the other, IMROPE: interleaved t, h, w, VISION: n_dims = ne0/2, each section's angles from 0.
     */
    GGML_API struct ggml_tensor * ggml_rope_multi(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                  struct ggml_tensor * c, int n_dims, int sections[GGML_MROPE_SECTIONS],
                                                  int mode, int n_ctx_orig, float freq_base, float freq_scale,
                                                  float ext_factor, float attn_factor, float beta_fast, float beta_slow);
    GGML_API struct ggml_tensor * ggml_rope_multi_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                          struct ggml_tensor * b, struct ggml_tensor * c, int n_dims,
                                                          int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                                                          float freq_base, float freq_scale, float ext_factor,
                                                          float attn_factor, float beta_fast, float beta_slow);

    /* rotate the channels from n_offs on (the others pass through); returns a, NULL when refused */
    GGML_API struct ggml_tensor * ggml_rope_set_offset(struct ggml_tensor * a, int n_offs);

    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_rope_custom(
            struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims, int mode,
            int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast,
            float beta_slow),
        "use ggml_rope_ext instead");
    GGML_DEPRECATED(GGML_API struct ggml_tensor * ggml_rope_custom_inplace(
            struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b, int n_dims, int mode,
            int n_ctx_orig, float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast,
            float beta_slow),
        "use ggml_rope_ext_inplace instead");

    /*
     * Custom ops: the CPU calls fun once on each of the node's threads with ith in 0..nth-1, where
     * nth is n_tasks (at most the computation's thread count; GGML_N_TASKS_MAX: all of them).
     */
    typedef void (*ggml_custom1_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, int ith, int nth, void * userdata);
    typedef void (*ggml_custom2_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b,
                                      int ith, int nth, void * userdata);
    typedef void (*ggml_custom3_op_t)(struct ggml_tensor * dst, const struct ggml_tensor * a, const struct ggml_tensor * b,
                                      const struct ggml_tensor * c, int ith, int nth, void * userdata);
    typedef void (*ggml_custom_op_t)(struct ggml_tensor * dst, int ith, int nth, void * userdata);

    GGML_API struct ggml_tensor * ggml_map_custom1(struct ggml_context * ctx, struct ggml_tensor * a, ggml_custom1_op_t fun,
                                                   int n_tasks, void * userdata);
    GGML_API struct ggml_tensor * ggml_map_custom1_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                           ggml_custom1_op_t fun, int n_tasks, void * userdata);
    GGML_API struct ggml_tensor * ggml_map_custom2(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                   ggml_custom2_op_t fun, int n_tasks, void * userdata);
    GGML_API struct ggml_tensor * ggml_map_custom2_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                           struct ggml_tensor * b, ggml_custom2_op_t fun, int n_tasks,
                                                           void * userdata);
    GGML_API struct ggml_tensor * ggml_map_custom3(struct ggml_context * ctx, struct ggml_tensor * a, struct ggml_tensor * b,
                                                   struct ggml_tensor * c, ggml_custom3_op_t fun, int n_tasks,
                                                   void * userdata);
    GGML_API struct ggml_tensor * ggml_map_custom3_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                           struct ggml_tensor * b, struct ggml_tensor * c,
                                                           ggml_custom3_op_t fun, int n_tasks, void * userdata);
    /* a new tensor of the given type and shape computed by fun from args (at most GGML_MAX_SRC - 1) */
    GGML_API struct ggml_tensor * ggml_custom_4d(struct ggml_context * ctx, enum ggml_type type, int64_t ne0, int64_t ne1,
                                                 int64_t ne2, int64_t ne3, struct ggml_tensor ** args, int n_args,
                                                 ggml_custom_op_t fun, int n_tasks, void * userdata);
    /* a view of a (src[0]) computed by fun from args (src[1..], at most GGML_MAX_SRC - 2) */
    GGML_API struct ggml_tensor * ggml_custom_inplace(struct ggml_context * ctx, struct ggml_tensor * a,
                                                      struct ggml_tensor ** args, int n_args, ggml_custom_op_t fun,
                                                      int n_tasks, void * userdata);

    /* the tensor shares another's memory */
    GGML_API bool ggml_is_view(const struct ggml_tensor * tensor);
    /* dims below 1, 2, 3 packed together (the others may have any stride) */
    GGML_API bool ggml_is_contiguous_to_1(const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_contiguous_to_2(const struct ggml_tensor * tensor);
    GGML_API bool ggml_is_contiguous_to_3(const struct ggml_tensor * tensor);

    /* adds every tensors[i] (and what it depends on) to the graph, marks only tensors[idx]'s for
     * computation and returns it: one graph topology whatever branch is chosen */
    GGML_API struct ggml_tensor * ggml_build_forward_select(struct ggml_cgraph * cgraph, struct ggml_tensor ** tensors,
                                                            int n_tensors, int idx);
    /* adds tensor and its sources without marking them for computation (a later expand does) */
    GGML_API void ggml_build_forward_order(struct ggml_cgraph * cgraph, struct ggml_tensor * tensor);

#ifdef __cplusplus
}
#endif
