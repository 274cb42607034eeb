/*
 * threadpool-params.c -- the plain-data thread pool parameters declared in ggml.h.
 */
#include "ggml-impl.h"

void ggml_threadpool_params_init(struct ggml_threadpool_params * p, int n_threads) {
    if (p == NULL) {
        ggmlx_error(__func__, "params is NULL");
        return;
    }
    memset(p, 0, sizeof *p);
    p->n_threads  = n_threads;
    p->prio       = GGML_SCHED_PRIO_NORMAL;
    p->poll       = 50;
    p->strict_cpu = false;
    p->paused     = false;
}

struct ggml_threadpool_params ggml_threadpool_params_default(int n_threads) {
    struct ggml_threadpool_params p;
    ggml_threadpool_params_init(&p, n_threads);
    return p;
}

bool ggml_threadpool_params_match(const struct ggml_threadpool_params * p0, const struct ggml_threadpool_params * p1) {
    if (p0 == NULL || p1 == NULL) {
        return p0 == p1;
    }
    return p0->n_threads == p1->n_threads && p0->prio == p1->prio && p0->poll == p1->poll &&
           p0->strict_cpu == p1->strict_cpu && memcmp(p0->cpumask, p1->cpumask, sizeof p0->cpumask) == 0;
}
