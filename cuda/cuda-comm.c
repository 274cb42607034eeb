/*
 * cuda-comm.c -- NCCL all-reduce between CUDA backends, for the meta device (cuda-comm.h).
 *
 * A communicator is one NCCL rank per backend, all made at once by ncclCommInitAll from this
 * thread. An all-reduce is one NCCL group: an in-place ncclAllReduce(sum) per rank on that
 * backend's stream, so it runs after the work already queued there and before what comes next
 * (docs/async.md rule 1), and the host does not wait.
 *
 * Refusals the caller can work around (no NCCL, GPUs shared by several backends, a type NCCL
 * does not sum) return NULL/false with a message and no error: the meta device then reduces
 * with copies and adds. Bad arguments are errors. A failure after NCCL may have enqueued part
 * of a reduction becomes every backend's sticky status, and the call returns true: reducing
 * again by another way could add the same partial sums twice.
 */
#include "cuda-comm.h"
#include "cuda-impl.h"
#include "cuda-nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * const FUNC_INIT   = "ggml_backend_comm_init";
static const char * const FUNC_REDUCE = "ggml_backend_comm_allreduce_tensor";

/* GGML_CUDA_ALLREDUCE asks for no communicator (read at every init: it is cheap, and tests set it) */
static bool allreduce_disabled(void) {
    const char * env = getenv("GGML_CUDA_ALLREDUCE");
    if (env == NULL || env[0] == '\0' || strcmp(env, "nccl") == 0) {
        return false;
    }
    if (strcmp(env, "none") == 0) {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: GGML_CUDA_ALLREDUCE=none: no communicator\n", FUNC_INIT);
        return true;
    }
    if (strcmp(env, "internal") == 0) {
        ggmlx_log(GGML_LOG_LEVEL_INFO, "%s: GGML_CUDA_ALLREDUCE=internal: ggmlx has no internal all-reduce; "
                  "the meta device reduces with copies and adds\n", FUNC_INIT);
        return true;
    }
    ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: GGML_CUDA_ALLREDUCE='%s' is not nccl, internal or none: using nccl\n",
              FUNC_INIT, env);
    return false;
}

/* every backend is a CUDA backend (error recorded otherwise) */
static bool check_backends(ggml_backend_t * backends, size_t n) {
    if (backends == NULL || n == 0) {
        ggmlx_error(FUNC_INIT, "%s", backends == NULL ? "backends is NULL" : "n_backends is 0");
        return false;
    }
    if (n > GGML_CUDA_MAX_DEVICES) {
        ggmlx_error(FUNC_INIT, "%zu backends: at most %d CUDA devices take part", n, GGML_CUDA_MAX_DEVICES);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (backends[i] == NULL) {
            ggmlx_error(FUNC_INIT, "backends[%zu] is NULL", i);
            return false;
        }
        if (!ggml_backend_is_cuda(backends[i])) {
            ggmlx_error(FUNC_INIT, "backends[%zu] ('%s') is not a CUDA backend: the CUDA registry's communicator "
                        "takes CUDA backends only", i, ggml_backend_name(backends[i]));
            return false;
        }
        if (!ggmlx_cuda_alive(ggmlx_cuda_backend_device(backends[i]), FUNC_INIT)) {
            return false;
        }
    }
    return true;
}

/* NCCL runs one rank per GPU: two backends on one GPU (two streams, or virtual devices) cannot */
static bool distinct_gpus(ggml_backend_t * backends, size_t n) {
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            const int oi = ggmlx_cuda_backend_device(backends[i])->ordinal;
            if (oi == ggmlx_cuda_backend_device(backends[j])->ordinal) {
                ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: backends %zu and %zu share GPU %d, and NCCL needs one rank "
                          "per GPU: no communicator\n", FUNC_INIT, j, i, oi);
                return false;
            }
        }
    }
    return true;
}

#ifdef GGMLX_USE_NCCL

struct cuda_comm {
    const struct ggmlx_nccl * api;
    size_t                    n;
    ggml_backend_t          * backends; /* the caller's, kept alive by it while the communicator is used */
    ncclComm_t              * comms;    /* comms[i] is backends[i]'s rank */
    bool                      broken;   /* an NCCL error: every later reduction is refused */
};

/* a warning the first time a process finds no NCCL, then debug messages only */
static void report_no_nccl(const char * why) {
    static atomic_bool warned;
    const bool first = !atomic_exchange(&warned, true);
    ggmlx_log(first ? GGML_LOG_LEVEL_WARN : GGML_LOG_LEVEL_DEBUG,
              "%s: NCCL is not available (%s); the meta device reduces with copies and adds\n", FUNC_INIT, why);
}

static void destroy_comms(struct cuda_comm * c, const char * func) {
    for (size_t i = 0; c->comms != NULL && i < c->n; i++) {
        if (c->comms[i] == NULL) {
            continue;
        }
        /* NCCL finishes what it has enqueued before it lets go of the rank */
        const ncclResult_t r = c->api->comm_destroy(c->comms[i]);
        if (r != ncclSuccess) {
            char msg[512];
            ggmlx_nccl_describe(c->api, r, NULL, msg, sizeof msg);
            ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: ncclCommDestroy of rank %zu: %s\n", func, i, msg);
        }
    }
    free(c->comms);
    free(c->backends);
    free(c);
}

void * ggmlx_cuda_comm_init(ggml_backend_t * backends, size_t n_backends) {
    if (!check_backends(backends, n_backends)) {
        return NULL;
    }
    if (allreduce_disabled() || !distinct_gpus(backends, n_backends)) {
        ggmlx_ok();
        return NULL;
    }
    char why[768];
    const struct ggmlx_nccl * api = ggmlx_nccl_load(why, sizeof why) ? ggmlx_nccl_get() : NULL;
    if (api == NULL) {
        report_no_nccl(why);
        ggmlx_ok();
        return NULL;
    }
    struct cuda_comm * c = calloc(1, sizeof *c);
    int * devs = calloc(n_backends, sizeof *devs);
    if (c == NULL || devs == NULL) {
        ggmlx_error(FUNC_INIT, "out of host memory");
        goto err_free;
    }
    c->api      = api;
    c->n        = n_backends;
    c->backends = calloc(n_backends, sizeof *c->backends);
    c->comms    = calloc(n_backends, sizeof *c->comms);
    if (c->backends == NULL || c->comms == NULL) {
        ggmlx_error(FUNC_INIT, "out of host memory");
        goto err_comm;
    }
    for (size_t i = 0; i < n_backends; i++) {
        c->backends[i] = backends[i];
        devs[i]        = ggmlx_cuda_backend_device(backends[i])->ordinal;
    }
    /* NCCL moves between the GPUs while it sets them up: the caller's current device is put back */
    int cur = -1;
    const bool have_cur = cudaGetDevice(&cur) == cudaSuccess;
    const ncclResult_t r = api->comm_init_all(c->comms, (int) n_backends, devs);
    if (have_cur) {
        (void) cudaSetDevice(cur);
    }
    (void) cudaGetLastError(); /* NCCL's own CUDA failures are reported below, not at a later call */
    if (r != ncclSuccess) {
        char msg[512];
        ggmlx_nccl_describe(api, r, NULL, msg, sizeof msg);
        /* a rank may exist only in part: NCCL's own cleanup has released it */
        memset(c->comms, 0, n_backends * sizeof *c->comms);
        ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: ncclCommInitAll over %zu GPU%s failed: %s; the meta device reduces "
                  "with copies and adds\n", FUNC_INIT, n_backends, n_backends == 1 ? "" : "s", msg);
        destroy_comms(c, FUNC_INIT);
        free(devs);
        ggmlx_ok();
        return NULL;
    }
    free(devs);
    ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: NCCL %d communicator over %zu GPU%s\n", FUNC_INIT, api->version, n_backends,
              n_backends == 1 ? "" : "s");
    ggmlx_ok();
    return c;

err_comm:
    destroy_comms(c, FUNC_INIT);
    c = NULL;
err_free:
    free(c);
    free(devs);
    return NULL;
}

void ggmlx_cuda_comm_free(void * comm_ctx) {
    if (comm_ctx != NULL) {
        destroy_comms(comm_ctx, "ggml_backend_comm_free");
    }
}

/* NCCL's name for t's type; false for a type NCCL cannot add (the caller falls back) */
static bool nccl_type(const struct cuda_comm * c, enum ggml_type type, ncclDataType_t * out) {
    switch (type) {
    case GGML_TYPE_F32:
        *out = ncclFloat32;
        return true;
    case GGML_TYPE_F16:
        *out = ncclFloat16;
        return true;
    case GGML_TYPE_BF16:
        *out = ncclBfloat16;
        return c->api->version >= 21000; /* BF16 arrived in NCCL 2.10 */
    default:
        return false;
    }
}

/*
 * Everything that can be known before anything is enqueued. 1: go ahead; 0: the caller should
 * reduce another way (a message, no error); -1: bad arguments or an unusable backend (error
 * recorded).
 */
static int check_reduce(struct cuda_comm * c, struct ggml_tensor ** tensors, ncclDataType_t * dt) {
    if (tensors == NULL) {
        ggmlx_error(FUNC_REDUCE, "tensors is NULL");
        return -1;
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct ggml_tensor * t = tensors[i];
        if (t == NULL) {
            ggmlx_error(FUNC_REDUCE, "tensors[%zu] is NULL", i);
            return -1;
        }
        if (t->type != tensors[0]->type || ggml_nelements(t) != ggml_nelements(tensors[0])) {
            char a[96], b[96];
            ggmlx_error(FUNC_REDUCE, "tensors[%zu] '%s' is %s but tensors[0] '%s' is %s: all must have one type "
                        "and element count", i, t->name, ggmlx_shape_str(t, a, sizeof a), tensors[0]->name,
                        ggmlx_shape_str(tensors[0], b, sizeof b));
            return -1;
        }
        struct ggmlx_cuda_device * d = ggmlx_cuda_backend_device(c->backends[i]);
        if (t->data == NULL || ggmlx_cuda_tensor_device(t) != d) {
            ggmlx_error(FUNC_REDUCE, "tensors[%zu] '%s' is not allocated in %s memory, where backend %zu runs", i,
                        t->name, d->name, i);
            return -1;
        }
    }
    if (!nccl_type(c, tensors[0]->type, dt) || !ggml_is_contiguous(tensors[0])) {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: %s%s: not summed by NCCL\n", FUNC_REDUCE,
                  ggml_type_name(tensors[0]->type), ggml_is_contiguous(tensors[0]) ? "" : ", not contiguous");
        return 0;
    }
    for (size_t i = 1; i < c->n; i++) {
        if (!ggml_is_contiguous(tensors[i])) {
            ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: tensors[%zu] is not contiguous: not summed by NCCL\n", FUNC_REDUCE, i);
            return 0;
        }
    }
    if (c->broken) {
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: the communicator failed earlier: not used again\n", FUNC_REDUCE);
        return 0;
    }
    /* an error of a reduction already running (a peer lost, say) poisons the communicator */
    for (size_t i = 0; i < c->n; i++) {
        ncclResult_t async = ncclSuccess;
        const ncclResult_t r = c->api->comm_get_async_error(c->comms[i], &async);
        if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
            char msg[512];
            ggmlx_nccl_describe(c->api, r != ncclSuccess ? r : async, c->comms[i], msg, sizeof msg);
            ggmlx_log(GGML_LOG_LEVEL_WARN, "%s: rank %zu of the communicator failed: %s; it is not used again\n",
                      FUNC_REDUCE, i, msg);
            c->broken = true;
            return 0;
        }
    }
    for (size_t i = 0; i < c->n; i++) {
        if (!ggmlx_cuda_backend_ready(c->backends[i], FUNC_REDUCE)) {
            return -1;
        }
    }
    return 1;
}

bool ggmlx_cuda_comm_allreduce_tensor(void * comm_ctx, struct ggml_tensor ** tensors) {
    struct cuda_comm * c = comm_ctx;
    if (c == NULL) {
        ggmlx_error(FUNC_REDUCE, "comm_ctx is NULL");
        return false;
    }
    ncclDataType_t dt = ncclFloat32;
    const int go = check_reduce(c, tensors, &dt);
    if (go <= 0) {
        if (go == 0) {
            ggmlx_ok();
        }
        return false;
    }
    const size_t count = (size_t) ggml_nelements(tensors[0]);
    if (count == 0) {
        ggmlx_ok();
        return true;
    }
    char msg[512];
    ncclResult_t r = c->api->group_start();
    if (r != ncclSuccess) {
        ggmlx_nccl_describe(c->api, r, NULL, msg, sizeof msg);
        ggmlx_error(FUNC_REDUCE, "ncclGroupStart: %s; nothing enqueued", msg);
        c->broken = true;
        return false;
    }
    size_t failed_rank = c->n;
    for (size_t i = 0; i < c->n; i++) {
        r = c->api->all_reduce(tensors[i]->data, tensors[i]->data, count, dt, ncclSum, c->comms[i],
                               ggmlx_cuda_backend_stream(c->backends[i]));
        if (r != ncclSuccess) {
            failed_rank = i;
            ggmlx_nccl_describe(c->api, r, c->comms[i], msg, sizeof msg);
            break;
        }
    }
    /* the group is closed even after a failure inside it: an open one would swallow later NCCL calls */
    const ncclResult_t end = c->api->group_end();
    (void) cudaGetLastError(); /* a CUDA failure inside NCCL is reported here, not at a later call */
    if (failed_rank == c->n && end == ncclSuccess) {
        ggmlx_ok();
        return true;
    }
    if (failed_rank < c->n) {
        ggmlx_error(FUNC_REDUCE, "ncclAllReduce of %zu %s on rank %zu (%s): %s", count, ggml_type_name(tensors[0]->type),
                    failed_rank, ggml_backend_name(c->backends[failed_rank]), msg);
    } else {
        ggmlx_nccl_describe(c->api, end, NULL, msg, sizeof msg);
        ggmlx_error(FUNC_REDUCE, "ncclGroupEnd for %zu %s: %s", count, ggml_type_name(tensors[0]->type), msg);
    }
    /* some ranks may have their part in the streams: the result is unknown, so every queue fails */
    for (size_t i = 0; i < c->n; i++) {
        ggmlx_cuda_backend_fail(c->backends[i]);
    }
    c->broken = true;
    return true;
}

#else /* !GGMLX_USE_NCCL: the checks still run, so bad arguments say so in every build */

void * ggmlx_cuda_comm_init(ggml_backend_t * backends, size_t n_backends) {
    if (!check_backends(backends, n_backends)) {
        return NULL;
    }
    if (!allreduce_disabled() && distinct_gpus(backends, n_backends)) {
        char why[256];
        ggmlx_nccl_load(why, sizeof why);
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "%s: %s: no communicator\n", FUNC_INIT, why);
    }
    ggmlx_ok();
    return NULL;
}

void ggmlx_cuda_comm_free(void * comm_ctx) {
    (void) comm_ctx; /* init never made one */
}

bool ggmlx_cuda_comm_allreduce_tensor(void * comm_ctx, struct ggml_tensor ** tensors) {
    (void) tensors;
    ggmlx_error(FUNC_REDUCE, "%s: this build has no NCCL support, so no communicator exists",
                comm_ctx == NULL ? "comm_ctx is NULL" : "comm_ctx is not a communicator of this build");
    return false;
}

#endif
