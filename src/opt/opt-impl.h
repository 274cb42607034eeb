/*
 * opt-impl.h -- the objects behind ggml-opt.h, shared by the files of src/opt.
 */
#ifndef GGMLX_OPT_IMPL_H
#define GGMLX_OPT_IMPL_H

#include "ggml-opt.h"
#include "ggml-impl.h"

#include <stdint.h>

struct ggml_opt_dataset {
    struct ggml_context * ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor  * data;
    struct ggml_tensor  * labels;   /* NULL without labels */
    int64_t               ndata;
    int64_t               ndata_shard;
    size_t                nbs_data;   /* bytes of one shard of data */
    size_t                nbs_labels; /* ... and of its labels */
    int64_t               nshards;
    int64_t             * permutation; /* shard order for batches */
};

/* The context's own tensors (accumulators, moments; with static graphs the loss too) are kept by
 * buffer type: a parameter's accumulator and moments live where the parameter does, so that the
 * in-place updates of a step never land in a copy on another device. Part 0 is the scheduler's
 * first backend's. */
#define GGMLX_OPT_MAX_PARTS 17

struct ggmlx_opt_part {
    ggml_backend_buffer_type_t buft;
    struct ggml_context *      ctx;
    ggml_backend_buffer_t      buf;
};

struct ggml_opt_context {
    ggml_backend_sched_t backend_sched;
    struct ggml_cgraph * allocated_graph;      /* gf, gb_grad or gb_opt, as allocated last */
    struct ggml_cgraph * allocated_graph_copy; /* what the scheduler allocated (a copy for static graphs) */
    struct ggmlx_opt_part parts[GGMLX_OPT_MAX_PARTS];
    int                   n_parts;
    size_t                part_size;               /* metadata bytes of each part's context */
    bool                  static_allocated;
    struct ggml_context * ctx_cpu;             /* the optimizer's hyperparameters, in host memory */
    struct ggml_context * ctx_compute;
    struct ggml_context * ctx_copy;
    ggml_backend_buffer_t buf_cpu;
    uint64_t              rng;

    enum ggml_opt_loss_type  loss_type;
    enum ggml_opt_build_type build_type;       /* of the next evaluation */
    enum ggml_opt_build_type build_type_alloc; /* the most the graphs are built for */

    struct ggml_tensor * inputs, * outputs, * labels, * loss, * pred, * ncorrect;
    struct ggml_cgraph * gf, * gb_grad, * gb_opt;
    bool static_graphs;
    bool eval_ready;

    struct ggml_tensor ** grad_accs; /* per node of gf: accumulators of parameters and the loss */
    struct ggml_tensor ** grad_m;    /* per node of gf: AdamW moments of parameters */
    struct ggml_tensor ** grad_v;
    int                   n_grad_nodes;

    int64_t iter;       /* optimizer steps so far + 1 (AdamW's bias correction) */
    int32_t opt_period;
    int32_t opt_i;      /* evaluations into the current period */
    bool    loss_per_datapoint;

    ggml_opt_get_optimizer_params get_opt_pars;
    void *                        get_opt_pars_ud;
    struct ggml_tensor *          opt_step_params;
    enum ggml_opt_optimizer_type  optimizer;
};

struct ggml_opt_result {
    int64_t   ndata;
    float   * loss;     /* one per evaluated batch */
    int64_t   n_loss, cap_loss;
    int32_t * pred;
    int64_t   n_pred, cap_pred;
    int64_t   ncorrect; /* -1 when not known */
    int64_t   opt_period;
    bool      loss_per_datapoint;
};

/* a uniform draw in [0, n) from *state (splitmix64) */
uint64_t ggmlx_opt_rand_below(uint64_t * state, uint64_t n);

/* results (opt-result.c): record one evaluation; false when out of memory */
bool ggmlx_opt_result_add(ggml_opt_result_t r, float loss, const int32_t * pred, int64_t n_pred);

#endif
