/*
 * opt-result.c -- what evaluations add up to: the loss of each batch, predictions, correct ones,
 * and the statistics over batches.
 */
#include "opt-impl.h"

#include <math.h>
#include <stdlib.h>

ggml_opt_result_t ggml_opt_result_init(void) {
    ggml_opt_result_t r = calloc(1, sizeof *r);
    if (r == NULL) {
        ggmlx_error(__func__, "out of host memory");
        return NULL;
    }
    r->opt_period = -1;
    return r;
}

void ggml_opt_result_free(ggml_opt_result_t result) {
    if (result == NULL) {
        return;
    }
    free(result->loss);
    free(result->pred);
    free(result);
}

void ggml_opt_result_reset(ggml_opt_result_t result) {
    if (result == NULL) {
        return;
    }
    result->ndata    = 0;
    result->n_loss   = 0;
    result->n_pred   = 0;
    result->ncorrect = 0;
}

static bool grow(void ** p, int64_t * cap, int64_t need, size_t elem) {
    if (need <= *cap) {
        return true;
    }
    int64_t n = *cap ? *cap : 16;
    while (n < need) {
        n *= 2;
    }
    void * q = realloc(*p, (size_t) n * elem);
    if (q == NULL) {
        return false;
    }
    *p   = q;
    *cap = n;
    return true;
}

bool ggmlx_opt_result_add(ggml_opt_result_t r, float loss, const int32_t * pred, int64_t n_pred) {
    if (!grow((void **) &r->loss, &r->cap_loss, r->n_loss + 1, sizeof *r->loss) ||
        (pred != NULL && !grow((void **) &r->pred, &r->cap_pred, r->n_pred + n_pred, sizeof *r->pred))) {
        return false;
    }
    r->loss[r->n_loss++] = loss;
    if (pred != NULL) {
        memcpy(r->pred + r->n_pred, pred, (size_t) n_pred * sizeof *pred);
        r->n_pred += n_pred;
    }
    return true;
}

void ggml_opt_result_ndata(ggml_opt_result_t result, int64_t * ndata) {
    if (result != NULL && ndata != NULL) {
        *ndata = result->ndata;
    }
}

void ggml_opt_result_loss(ggml_opt_result_t result, double * loss, double * unc) {
    if (result == NULL || loss == NULL) {
        return;
    }
    const int64_t nb = result->n_loss;
    if (nb == 0) {
        *loss = 0.0;
        if (unc) {
            *unc = NAN;
        }
        return;
    }
    double sum = 0.0, sum2 = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        /* a per-datapoint loss was divided by opt_period in each physical batch */
        const double l = result->loss_per_datapoint ? (double) result->loss[i] * (double) result->opt_period
                                                    : (double) result->loss[i];
        sum += l;
        sum2 += l * l;
    }
    const double mean = sum / (double) nb;
    *loss = result->loss_per_datapoint ? mean : sum;
    if (unc == NULL) {
        return;
    }
    if (nb < 2) {
        *unc = NAN;
        return;
    }
    const double var = sum2 / (double) nb - mean * mean;
    *unc = result->loss_per_datapoint ? sqrt(var / (double) (nb - 1)) : sqrt(var * (double) nb / (double) (nb - 1));
}

void ggml_opt_result_pred(ggml_opt_result_t result, int32_t * pred) {
    if (result == NULL || pred == NULL) {
        return;
    }
    memcpy(pred, result->pred, (size_t) result->n_pred * sizeof *pred);
}

void ggml_opt_result_accuracy(ggml_opt_result_t result, double * accuracy, double * unc) {
    if (result == NULL || accuracy == NULL) {
        return;
    }
    const bool known = result->ncorrect >= 0 && result->ndata > 0;
    *accuracy = known ? (double) result->ncorrect / (double) result->ndata : NAN;
    if (unc != NULL) {
        *unc = known && result->ndata >= 2 ? sqrt(*accuracy * (1.0 - *accuracy) / (double) (result->ndata - 1)) : NAN;
    }
}
