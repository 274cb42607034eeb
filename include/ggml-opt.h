/*
 * ggml-opt.h -- training a model built from ggml ops: datasets, an optimizer context that runs a
 * model's forward pass, its gradients and an optimizer step (AdamW or SGD) through a backend
 * scheduler, results (loss, predictions, accuracy), and ggml_opt_fit, which does all of it for a
 * number of epochs.
 *
 * Upstream ggml's API. Calls that get bad arguments or a state they cannot act on record a message
 * (ggmlx_last_error()) and do nothing, rather than abort; a query on a NULL handle returns 0/NULL.
 * Free in reverse order of creation: contexts before the scheduler and compute context they use.
 */
#pragma once

#include "ggml.h"
#include "ggml-backend.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

    struct ggml_opt_dataset;
    struct ggml_opt_context;
    struct ggml_opt_result;

    typedef struct ggml_opt_dataset * ggml_opt_dataset_t;
    typedef struct ggml_opt_context * ggml_opt_context_t;
    typedef struct ggml_opt_result  * ggml_opt_result_t;

    /* what the optimizer minimizes, built on the model's outputs */
    enum ggml_opt_loss_type {
        GGML_OPT_LOSS_TYPE_MEAN,               /* mean of the outputs */
        GGML_OPT_LOSS_TYPE_SUM,                /* sum of the outputs */
        GGML_OPT_LOSS_TYPE_CROSS_ENTROPY,      /* outputs are logits, labels a distribution per datapoint */
        GGML_OPT_LOSS_TYPE_MEAN_SQUARED_ERROR, /* outputs against labels */
    };

    /* ---- datasets ------------------------------------------------------------------------- */

    /*
     * A dataset of ndata datapoints of ne_datapoint elements (type_data) and, if ne_label > 0,
     * as many labels of ne_label elements (type_label), in host memory. Datapoints are shuffled
     * and copied in shards of ndata_shard, which must divide ndata. NULL on bad sizes.
     */
    GGML_API ggml_opt_dataset_t ggml_opt_dataset_init(
            enum ggml_type type_data,
            enum ggml_type type_label,
            int64_t        ne_datapoint,
            int64_t        ne_label,
            int64_t        ndata,
            int64_t        ndata_shard);
    GGML_API void ggml_opt_dataset_free(ggml_opt_dataset_t dataset);

    GGML_API int64_t              ggml_opt_dataset_ndata (ggml_opt_dataset_t dataset);
    /* [ne_datapoint, ndata] and [ne_label, ndata] (NULL without labels): fill them directly */
    GGML_API struct ggml_tensor * ggml_opt_dataset_data  (ggml_opt_dataset_t dataset);
    GGML_API struct ggml_tensor * ggml_opt_dataset_labels(ggml_opt_dataset_t dataset);

    /* shuffle the first idata datapoints (a multiple of the shard size), or all for idata < 0,
     * with opt_ctx's random generator */
    GGML_API void ggml_opt_dataset_shuffle(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, int64_t idata);

    /* copy batch ibatch (as many shards as data_batch holds) into contiguous tensors of the
     * dataset's types; labels_batch is NULL exactly when the dataset has no labels */
    GGML_API void ggml_opt_dataset_get_batch(
            ggml_opt_dataset_t   dataset,
            struct ggml_tensor * data_batch,
            struct ggml_tensor * labels_batch,
            int64_t              ibatch);
    /* the same into host memory: nb_data_batch bytes of data, and the matching labels */
    GGML_API void ggml_opt_dataset_get_batch_host(
            ggml_opt_dataset_t   dataset,
            void               * data_batch,
            size_t               nb_data_batch,
            void               * labels_batch,
            int64_t              ibatch);

    /* ---- optimizer context ----------------------------------------------------------------- */

    /* how far a context builds its graphs: forward only, with gradients, with an optimizer step */
    enum ggml_opt_build_type {
        GGML_OPT_BUILD_TYPE_FORWARD = 10,
        GGML_OPT_BUILD_TYPE_GRAD    = 20,
        GGML_OPT_BUILD_TYPE_OPT     = 30,
    };

    enum ggml_opt_optimizer_type {
        GGML_OPT_OPTIMIZER_TYPE_ADAMW,
        GGML_OPT_OPTIMIZER_TYPE_SGD,

        GGML_OPT_OPTIMIZER_TYPE_COUNT
    };

    /* the optimizers' hyperparameters; each optimizer reads its own */
    struct ggml_opt_optimizer_params {
        struct {
            float alpha; /* learning rate */
            float beta1; /* decay of the first moment */
            float beta2; /* decay of the second moment */
            float eps;   /* added to the second moment's root */
            float wd;    /* weight decay, 0 for none */
        } adamw;
        struct {
            float alpha; /* learning rate */
            float wd;    /* weight decay */
        } sgd;
    };

    /* called before every optimizer step; userdata is the context's get_opt_pars_ud */
    typedef struct ggml_opt_optimizer_params (*ggml_opt_get_optimizer_params)(void * userdata);

    /* AdamW alpha 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, no decay; SGD alpha 1e-3, no decay */
    GGML_API struct ggml_opt_optimizer_params ggml_opt_get_default_optimizer_params(void * userdata);
    /* *(struct ggml_opt_optimizer_params *) userdata */
    GGML_API struct ggml_opt_optimizer_params ggml_opt_get_constant_optimizer_params(void * userdata);

    struct ggml_opt_params {
        ggml_backend_sched_t backend_sched; /* runs the graphs; its first backend holds the context's own tensors */

        /* static graphs: the model is built once in ctx_compute from inputs to outputs; leave
         * all three NULL to build a graph per step with ggml_opt_prepare_alloc instead */
        struct ggml_context * ctx_compute;
        struct ggml_tensor  * inputs;
        struct ggml_tensor  * outputs;

        enum ggml_opt_loss_type  loss_type;
        enum ggml_opt_build_type build_type;

        int32_t opt_period; /* gradient accumulation steps per optimizer step, >= 1 */

        ggml_opt_get_optimizer_params get_opt_pars;
        void *                        get_opt_pars_ud;
        enum ggml_opt_optimizer_type  optimizer;
    };

    /* build type OPT, opt_period 1, default optimizer parameters, AdamW */
    GGML_API struct ggml_opt_params ggml_opt_default_params(
            ggml_backend_sched_t    backend_sched,
            enum ggml_opt_loss_type loss_type);

    /* NULL (with the reason) on bad params or when the model cannot be differentiated */
    GGML_API ggml_opt_context_t ggml_opt_init(struct ggml_opt_params params);
    GGML_API void ggml_opt_free(ggml_opt_context_t opt_ctx);

    /* zero the accumulated gradients; with optimizer true, also the optimizer's state */
    GGML_API void ggml_opt_reset(ggml_opt_context_t opt_ctx, bool optimizer);

    GGML_API bool ggml_opt_static_graphs(ggml_opt_context_t opt_ctx);

    GGML_API struct ggml_tensor * ggml_opt_inputs(  ggml_opt_context_t opt_ctx);
    GGML_API struct ggml_tensor * ggml_opt_outputs( ggml_opt_context_t opt_ctx);
    GGML_API struct ggml_tensor * ggml_opt_labels(  ggml_opt_context_t opt_ctx); /* NULL for MEAN and SUM */
    GGML_API struct ggml_tensor * ggml_opt_loss(    ggml_opt_context_t opt_ctx); /* F32 scalar */
    GGML_API struct ggml_tensor * ggml_opt_pred(    ggml_opt_context_t opt_ctx); /* argmax of the outputs (cross entropy) */
    GGML_API struct ggml_tensor * ggml_opt_ncorrect(ggml_opt_context_t opt_ctx); /* predictions equal to the labels' argmax */

    /* the accumulator of node's gradient in the optimizer graph, or NULL */
    GGML_API struct ggml_tensor * ggml_opt_grad_acc(ggml_opt_context_t opt_ctx, struct ggml_tensor * node);

    GGML_API enum ggml_opt_optimizer_type ggml_opt_context_optimizer_type(ggml_opt_context_t);
    /* "adamw", "sgd", or "undefined" */
    GGML_API const char * ggml_opt_optimizer_name(enum ggml_opt_optimizer_type);

    /* ---- results --------------------------------------------------------------------------- */

    /* what evaluations added up: datapoints, the loss of each batch, predictions, correct ones */
    GGML_API ggml_opt_result_t ggml_opt_result_init(void);
    GGML_API void ggml_opt_result_free(ggml_opt_result_t result);
    GGML_API void ggml_opt_result_reset(ggml_opt_result_t result);

    GGML_API void ggml_opt_result_ndata(   ggml_opt_result_t result, int64_t * ndata);
    /* the mean loss per batch (MEAN, CROSS_ENTROPY, MSE) or the total (SUM), and its standard
     * error over batches (NaN below two batches; unc may be NULL) */
    GGML_API void ggml_opt_result_loss(    ggml_opt_result_t result, double  * loss,     double * unc);
    /* ndata predictions */
    GGML_API void ggml_opt_result_pred(    ggml_opt_result_t result, int32_t * pred);
    /* fraction of correct predictions (NaN when not known) and its standard error */
    GGML_API void ggml_opt_result_accuracy(ggml_opt_result_t result, double  * accuracy, double * unc);

    /* ---- computing ------------------------------------------------------------------------- */

    /* without static graphs, before every ggml_opt_alloc: the step's compute context, its
     * forward graph, inputs and outputs */
    GGML_API void ggml_opt_prepare_alloc(
        ggml_opt_context_t    opt_ctx,
        struct ggml_context * ctx_compute,
        struct ggml_cgraph  * gf,
        struct ggml_tensor  * inputs,
        struct ggml_tensor  * outputs);

    /* allocate the next step's graph through the scheduler: forward only, or (backward true)
     * with gradients and, every opt_period steps, the optimizer step; then set the inputs */
    GGML_API void ggml_opt_alloc(ggml_opt_context_t opt_ctx, bool backward);

    /* run the allocated graph; add its loss, predictions and correct count to result (may be NULL) */
    GGML_API void ggml_opt_eval(ggml_opt_context_t opt_ctx, ggml_opt_result_t result);

    /* called after each batch of ggml_opt_epoch */
    typedef void (*ggml_opt_epoch_callback)(
            bool               train,       /* a training batch (else a validation one) */
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            ggml_opt_result_t  result,      /* the result this part of the epoch adds to */
            int64_t            ibatch,      /* batches done in this part */
            int64_t            ibatch_max,  /* batches in this part */
            int64_t            t_start_us); /* when this part started (ggml_time_us) */

    /* one pass over the dataset (static graphs): datapoints before idata_split (all for < 0)
     * train, the rest are evaluated */
    GGML_API void ggml_opt_epoch(
            ggml_opt_context_t      opt_ctx,
            ggml_opt_dataset_t      dataset,
            ggml_opt_result_t       result_train,
            ggml_opt_result_t       result_eval,
            int64_t                 idata_split,
            ggml_opt_epoch_callback callback_train,
            ggml_opt_epoch_callback callback_eval);

    /* a progress bar with loss, accuracy and times, on stderr */
    GGML_API void ggml_opt_epoch_callback_progress_bar(
            bool               train,
            ggml_opt_context_t opt_ctx,
            ggml_opt_dataset_t dataset,
            ggml_opt_result_t  result,
            int64_t            ibatch,
            int64_t            ibatch_max,
            int64_t            t_start_us);

    /*
     * Train the model from inputs [ne_datapoint, ndata_batch] to outputs for nepoch epochs:
     * nbatch_logical datapoints per optimizer step (a multiple of ndata_batch, dividing ndata),
     * the last val_split (in [0, 1)) of the data for validation. get_opt_pars gets a pointer to
     * the current epoch (int64_t) as userdata.
     */
    GGML_API void ggml_opt_fit(
            ggml_backend_sched_t            backend_sched,
            struct ggml_context           * ctx_compute,
            struct ggml_tensor            * inputs,
            struct ggml_tensor            * outputs,
            ggml_opt_dataset_t              dataset,
            enum ggml_opt_loss_type         loss_type,
            enum ggml_opt_optimizer_type    optimizer,
            ggml_opt_get_optimizer_params   get_opt_pars,
            int64_t                         nepoch,
            int64_t                         nbatch_logical,
            float                           val_split,
            bool                            silent);

#ifdef __cplusplus
}
#endif
