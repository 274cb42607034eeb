/*
 * opt-epoch.c -- the loops over a dataset: one epoch (train on the first part, evaluate the rest),
 * the progress bar, and ggml_opt_fit.
 */
#include "opt-impl.h"

#include <inttypes.h>
#include <stdio.h>

void ggml_opt_epoch(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, ggml_opt_result_t result_train,
                    ggml_opt_result_t result_eval, int64_t idata_split, ggml_opt_epoch_callback callback_train,
                    ggml_opt_epoch_callback callback_eval) {
    if (opt_ctx == NULL || dataset == NULL) {
        ggmlx_error(__func__, "opt_ctx or dataset is NULL");
        return;
    }
    if (!opt_ctx->static_graphs) {
        ggmlx_error(__func__, "needs static graphs (a context made with ctx_compute, inputs and outputs)");
        return;
    }
    struct ggml_tensor * inputs = opt_ctx->inputs;
    struct ggml_tensor * data   = dataset->data;
    const int64_t ndata = data->ne[1], nbatch = inputs->ne[1];
    if (data->ne[0] != inputs->ne[0] || ndata % nbatch != 0) {
        ggmlx_error(__func__, "datapoints of %lld elements x %lld do not make batches of the inputs [%lld, %lld]",
                    (long long) data->ne[0], (long long) ndata, (long long) inputs->ne[0], (long long) nbatch);
        return;
    }
    const int64_t nbatches = ndata / nbatch;
    idata_split = idata_split < 0 ? ndata : idata_split;
    if (idata_split % nbatch != 0 || idata_split > ndata) {
        ggmlx_error(__func__, "idata_split %lld is not a whole number of batches of %lld within %lld",
                    (long long) idata_split, (long long) nbatch, (long long) ndata);
        return;
    }
    const int64_t split = idata_split / nbatch;
    int64_t t0 = ggml_time_us();
    for (int64_t ib = 0; ib < nbatches; ib++) {
        const bool train = ib < split;
        if (ib == split) {
            t0 = ggml_time_us();
        }
        ggml_opt_alloc(opt_ctx, train);
        if (!opt_ctx->eval_ready) {
            return; /* ggml_opt_alloc said why */
        }
        ggml_opt_dataset_get_batch(dataset, inputs, opt_ctx->labels, ib);
        ggml_opt_eval(opt_ctx, train ? result_train : result_eval);
        if (ggmlx_last_error() != NULL) {
            return;
        }
        ggml_opt_epoch_callback cb = train ? callback_train : callback_eval;
        if (cb != NULL) {
            cb(train, opt_ctx, dataset, train ? result_train : result_eval, train ? ib + 1 : ib + 1 - split,
               train ? split : nbatches - split, t0);
        }
    }
}

/* h, m, s of a duration in microseconds */
static void hms(int64_t us, int64_t out[3]) {
    int64_t s = us / 1000000;
    out[0] = s / 3600;
    out[1] = s / 60 % 60;
    out[2] = s % 60;
}

void ggml_opt_epoch_callback_progress_bar(bool train, ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset,
                                          ggml_opt_result_t result, int64_t ibatch, int64_t ibatch_max,
                                          int64_t t_start_us) {
    (void) dataset;
    if (opt_ctx == NULL || result == NULL || ibatch <= 0 || ibatch_max <= 0) {
        return;
    }
    /* eight cells, each filled in eighths (U+2588 full .. U+258F one eighth) */
    static const char * const eighths[8] = { " ", "\u258F", "\u258E", "\u258D", "\u258C", "\u258B", "\u258A", "\u2589" };
    fputs(train ? "train: [" : "val:   [", stderr);
    for (int64_t cell = 0; cell < 8; cell++) {
        const int64_t filled = ibatch * 64 / ibatch_max - cell * 8; /* eighths of this cell */
        fputs(filled >= 8 ? "\u2588" : filled <= 0 ? " " : eighths[filled], stderr);
    }
    const int64_t bs = opt_ctx->inputs ? opt_ctx->inputs->ne[1] : 0;
    double loss, loss_unc, acc, acc_unc;
    ggml_opt_result_loss(result, &loss, &loss_unc);
    ggml_opt_result_accuracy(result, &acc, &acc_unc);
    const int64_t t = ggml_time_us() - t_start_us;
    int64_t el[3], eta[3];
    hms(t, el);
    hms(t * (ibatch_max - ibatch) / ibatch, eta);
    fprintf(stderr,
            "] data=%07" PRId64 "/%07" PRId64 " loss=%.5f\u00b1%.5f acc=%.2f\u00b1%.2f%% t=%02" PRId64 ":%02" PRId64
            ":%02" PRId64 " ETA=%02" PRId64 ":%02" PRId64 ":%02" PRId64 " \r",
            ibatch * bs, ibatch_max * bs, loss, loss_unc, 100.0 * acc, 100.0 * acc_unc, el[0], el[1], el[2], eta[0],
            eta[1], eta[2]);
    if (ibatch == ibatch_max) {
        fputc('\n', stderr);
    }
    fflush(stderr);
}

void ggml_opt_fit(ggml_backend_sched_t backend_sched, struct ggml_context * ctx_compute, struct ggml_tensor * inputs,
                  struct ggml_tensor * outputs, ggml_opt_dataset_t dataset, enum ggml_opt_loss_type loss_type,
                  enum ggml_opt_optimizer_type optimizer, ggml_opt_get_optimizer_params get_opt_pars, int64_t nepoch,
                  int64_t nbatch_logical, float val_split, bool silent) {
    if (inputs == NULL || dataset == NULL) {
        ggmlx_error(__func__, "inputs or dataset is NULL");
        return;
    }
    const int64_t t_start = ggml_time_us();
    const int64_t ndata = dataset->data->ne[1], nbatch_physical = inputs->ne[1];
    if (nbatch_logical <= 0 || ndata % nbatch_logical != 0 || nbatch_logical % nbatch_physical != 0) {
        ggmlx_error(__func__, "nbatch_logical %lld must divide the %lld datapoints and be a multiple of the inputs' "
                              "batch of %lld", (long long) nbatch_logical, (long long) ndata, (long long) nbatch_physical);
        return;
    }
    if (!(val_split >= 0.0f && val_split < 1.0f)) {
        ggmlx_error(__func__, "val_split %g is not in [0, 1)", (double) val_split);
        return;
    }
    const int64_t opt_period   = nbatch_logical / nbatch_physical;
    const int64_t nlogical     = ndata / nbatch_logical;
    const int64_t ibatch_split = (int64_t) ((1.0f - val_split) * (float) nlogical) * opt_period;
    const int64_t idata_split  = ibatch_split * nbatch_physical;

    int64_t epoch = 1;
    struct ggml_opt_params params = ggml_opt_default_params(backend_sched, loss_type);
    params.ctx_compute     = ctx_compute;
    params.inputs          = inputs;
    params.outputs         = outputs;
    params.opt_period      = (int32_t) opt_period;
    params.get_opt_pars    = get_opt_pars;
    params.get_opt_pars_ud = &epoch;
    params.optimizer       = optimizer;
    ggml_opt_context_t opt_ctx = ggml_opt_init(params);
    if (opt_ctx == NULL) {
        return;
    }
    ggml_opt_result_t rt = ggml_opt_result_init(), rv = ggml_opt_result_init();
    if (rt == NULL || rv == NULL) {
        goto out;
    }
    if (nbatch_logical < ndata) { /* a single batch of everything gains nothing from shuffling */
        ggml_opt_dataset_shuffle(opt_ctx, dataset, -1);
    }
    ggml_opt_epoch_callback cb = silent ? NULL : ggml_opt_epoch_callback_progress_bar;
    for (; epoch <= nepoch; epoch++) {
        if (nbatch_logical < idata_split) {
            ggml_opt_dataset_shuffle(opt_ctx, dataset, idata_split);
        }
        ggml_opt_result_reset(rt);
        ggml_opt_result_reset(rv);
        if (!silent) {
            fprintf(stderr, "%s: epoch %04" PRId64 "/%04" PRId64 ":\n", __func__, epoch, nepoch);
        }
        ggml_opt_epoch(opt_ctx, dataset, rt, rv, idata_split, cb, cb);
        if (ggmlx_last_error() != NULL) {
            goto out;
        }
        if (!silent) {
            fputc('\n', stderr);
        }
    }
    if (!silent) {
        int64_t t[3];
        hms(ggml_time_us() - t_start, t);
        fprintf(stderr, "%s: training took %02" PRId64 ":%02" PRId64 ":%02" PRId64 "\n", __func__, t[0], t[1], t[2]);
    }
out:
    ggml_opt_result_free(rv);
    ggml_opt_result_free(rt);
    ggml_opt_free(opt_ctx);
}
