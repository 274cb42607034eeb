/*
 * opt-dataset.c -- datasets for training: data and labels in a host buffer, cut into shards that
 * are shuffled and copied into batches.
 */
#include "opt-impl.h"

#include <stdlib.h>
#include <string.h>

uint64_t ggmlx_opt_rand_below(uint64_t * state, uint64_t n) {
    *state += 0x9e3779b97f4a7c15ull;
    uint64_t z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return n == 0 ? 0 : z % n; /* the modulo bias is below 2^-40 for any dataset that fits memory */
}

ggml_opt_dataset_t ggml_opt_dataset_init(enum ggml_type type_data, enum ggml_type type_label, int64_t ne_datapoint,
                                         int64_t ne_label, int64_t ndata, int64_t ndata_shard) {
    if (ne_datapoint <= 0 || ne_label < 0 || ndata <= 0 || ndata_shard <= 0 || ndata % ndata_shard != 0) {
        ggmlx_error(__func__, "bad sizes: ne_datapoint %lld (> 0), ne_label %lld (>= 0), ndata %lld (> 0), "
                              "ndata_shard %lld (> 0, dividing ndata)", (long long) ne_datapoint,
                    (long long) ne_label, (long long) ndata, (long long) ndata_shard);
        return NULL;
    }
    if (!ggmlx_type_is_valid(type_data) || (ne_label > 0 && !ggmlx_type_is_valid(type_label))) {
        ggmlx_error(__func__, "type_data %d or type_label %d is not a ggml_type", (int) type_data, (int) type_label);
        return NULL;
    }
    ggml_opt_dataset_t d = calloc(1, sizeof *d);
    if (d == NULL) {
        goto err_oom;
    }
    d->ndata       = ndata;
    d->ndata_shard = ndata_shard;
    d->nshards     = ndata / ndata_shard;
    struct ggml_init_params ip = { 2 * ggml_tensor_overhead(), NULL, true };
    d->ctx = ggml_init(ip);
    if (d->ctx == NULL) {
        goto err_free;
    }
    d->data = ggml_new_tensor_2d(d->ctx, type_data, ne_datapoint, ndata);
    if (d->data == NULL) {
        goto err_ctx;
    }
    d->nbs_data = ggml_nbytes(d->data) / (size_t) d->nshards;
    if (ne_label > 0) {
        d->labels = ggml_new_tensor_2d(d->ctx, type_label, ne_label, ndata);
        if (d->labels == NULL) {
            goto err_ctx;
        }
        d->nbs_labels = ggml_nbytes(d->labels) / (size_t) d->nshards;
    }
    d->permutation = malloc((size_t) d->nshards * sizeof *d->permutation);
    if (d->permutation == NULL) {
        goto err_ctx;
    }
    for (int64_t i = 0; i < d->nshards; i++) {
        d->permutation[i] = i;
    }
    d->buf = ggml_backend_alloc_ctx_tensors_from_buft(d->ctx, ggml_backend_cpu_buffer_type());
    if (d->buf == NULL) {
        goto err_perm;
    }
    ggmlx_ok();
    return d;

err_perm:
    free(d->permutation);
err_ctx:
    ggml_free(d->ctx);
err_free:
    free(d);
err_oom:
    ggmlx_error(__func__, "out of memory for %lld datapoints", (long long) ndata);
    return NULL;
}

void ggml_opt_dataset_free(ggml_opt_dataset_t dataset) {
    if (dataset == NULL) {
        return;
    }
    ggml_backend_buffer_free(dataset->buf);
    ggml_free(dataset->ctx);
    free(dataset->permutation);
    free(dataset);
}

int64_t ggml_opt_dataset_ndata(ggml_opt_dataset_t dataset) {
    return dataset ? dataset->ndata : 0;
}

struct ggml_tensor * ggml_opt_dataset_data(ggml_opt_dataset_t dataset) {
    return dataset ? dataset->data : NULL;
}

struct ggml_tensor * ggml_opt_dataset_labels(ggml_opt_dataset_t dataset) {
    return dataset ? dataset->labels : NULL;
}

void ggml_opt_dataset_shuffle(ggml_opt_context_t opt_ctx, ggml_opt_dataset_t dataset, int64_t idata) {
    if (opt_ctx == NULL || dataset == NULL) {
        ggmlx_error(__func__, "opt_ctx or dataset is NULL");
        return;
    }
    if (idata > dataset->ndata || (idata >= 0 && idata % dataset->ndata_shard != 0)) {
        ggmlx_error(__func__, "idata %lld must be < 0 (all) or a multiple of the shard size %lld up to %lld",
                    (long long) idata, (long long) dataset->ndata_shard, (long long) dataset->ndata);
        return;
    }
    const int64_t n = idata < 0 ? dataset->nshards : idata / dataset->ndata_shard;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        const int64_t j = (int64_t) ggmlx_opt_rand_below(&opt_ctx->rng, (uint64_t) i + 1);
        const int64_t t = dataset->permutation[i];
        dataset->permutation[i] = dataset->permutation[j];
        dataset->permutation[j] = t;
    }
    ggmlx_ok();
}

/* shards in a batch of nb_data bytes, or -1 (with the reason) when the batch does not fit */
static int64_t batch_shards(ggml_opt_dataset_t d, size_t nb_data, int64_t ibatch, const char * func) {
    if (nb_data == 0 || nb_data % d->nbs_data != 0) {
        ggmlx_error(func, "a batch of %zu bytes is not a whole number of shards (%zu bytes each)", nb_data,
                    d->nbs_data);
        return -1;
    }
    const int64_t per = (int64_t) (nb_data / d->nbs_data);
    if (ibatch < 0 || (ibatch + 1) * per > d->nshards) {
        ggmlx_error(func, "batch %lld of %lld shards is outside the dataset's %lld shards", (long long) ibatch,
                    (long long) per, (long long) d->nshards);
        return -1;
    }
    return per;
}

void ggml_opt_dataset_get_batch(ggml_opt_dataset_t dataset, struct ggml_tensor * data_batch,
                                struct ggml_tensor * labels_batch, int64_t ibatch) {
    if (dataset == NULL || data_batch == NULL) {
        ggmlx_error(__func__, "dataset or data_batch is NULL");
        return;
    }
    if ((labels_batch == NULL) != (dataset->labels == NULL)) {
        ggmlx_error(__func__, "labels_batch must be given exactly when the dataset has labels");
        return;
    }
    if (!ggml_is_contiguous(data_batch) || data_batch->type != dataset->data->type ||
        (labels_batch != NULL && (!ggml_is_contiguous(labels_batch) || labels_batch->type != dataset->labels->type))) {
        ggmlx_error(__func__, "the batch tensors must be contiguous and of the dataset's types");
        return;
    }
    const int64_t per = batch_shards(dataset, ggml_nbytes(data_batch), ibatch, __func__);
    if (per < 0) {
        return;
    }
    if (labels_batch != NULL && ggml_nbytes(labels_batch) != (size_t) per * dataset->nbs_labels) {
        ggmlx_error(__func__, "labels_batch holds %zu bytes, the batch's labels are %zu", ggml_nbytes(labels_batch),
                    (size_t) per * dataset->nbs_labels);
        return;
    }
    for (int64_t k = 0; k < per; k++) {
        const int64_t s = dataset->permutation[ibatch * per + k];
        ggml_backend_tensor_set(data_batch, (const char *) dataset->data->data + (size_t) s * dataset->nbs_data,
                                (size_t) k * dataset->nbs_data, dataset->nbs_data);
        if (labels_batch != NULL) {
            ggml_backend_tensor_set(labels_batch,
                                    (const char *) dataset->labels->data + (size_t) s * dataset->nbs_labels,
                                    (size_t) k * dataset->nbs_labels, dataset->nbs_labels);
        }
    }
    ggmlx_ok();
}

void ggml_opt_dataset_get_batch_host(ggml_opt_dataset_t dataset, void * data_batch, size_t nb_data_batch,
                                     void * labels_batch, int64_t ibatch) {
    if (dataset == NULL || data_batch == NULL) {
        ggmlx_error(__func__, "dataset or data_batch is NULL");
        return;
    }
    if ((labels_batch == NULL) != (dataset->labels == NULL)) {
        ggmlx_error(__func__, "labels_batch must be given exactly when the dataset has labels");
        return;
    }
    const int64_t per = batch_shards(dataset, nb_data_batch, ibatch, __func__);
    if (per < 0) {
        return;
    }
    for (int64_t k = 0; k < per; k++) {
        const int64_t s = dataset->permutation[ibatch * per + k];
        memcpy((char *) data_batch + (size_t) k * dataset->nbs_data,
               (const char *) dataset->data->data + (size_t) s * dataset->nbs_data, dataset->nbs_data);
        if (labels_batch != NULL) {
            memcpy((char *) labels_batch + (size_t) k * dataset->nbs_labels,
                   (const char *) dataset->labels->data + (size_t) s * dataset->nbs_labels, dataset->nbs_labels);
        }
    }
    ggmlx_ok();
}
