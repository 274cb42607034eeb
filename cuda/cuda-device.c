/*
 * cuda-device.c -- the CUDA registry and its devices CUDA0.., found once on first use, plus the
 * error checking every host file of the backend goes through.
 *
 * No driver or no GPU is not an error: the registry then has zero devices, the reason is kept
 * for ggmlx_backend_unavailable (and, as a module, for the loader's one info line), and the rest
 * of the library works as without CUDA.
 */
#include "cuda-comm.h"
#include "cuda-graph.h"
#include "cuda-impl.h"
#include "cuda-ops.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ggmlx_cuda_device g_devices[GGML_CUDA_MAX_DEVICES];
static int                      g_n_devices;
static char                     g_no_device_why[224]; /* set when g_n_devices is 0 */
static pthread_once_t           g_once = PTHREAD_ONCE_INIT;
static struct ggml_backend_reg  g_reg;
static const struct ggml_backend_device_i g_dev_iface;

/* ---- errors -------------------------------------------------------------------------------- */

/*
 * Errors after which the context is unusable (every later call returns them again). The list
 * follows the runtime documentation: faults inside kernels and hardware failures.
 */
static bool is_sticky(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
        return true;
    default:
        return false;
    }
}

bool ggmlx_cuda_check(struct ggmlx_cuda_device * d, cudaError_t err, const char * func, const char * what) {
    if (err == cudaSuccess) {
        return true;
    }
    /* a non-sticky error stays as the runtime's last error and would surface at an unrelated call */
    (void) cudaGetLastError();
    char msg[256];
    snprintf(msg, sizeof msg, "%s%s%s: %s (%s)", d ? d->name : "", d ? ": " : "", what, cudaGetErrorName(err),
             cudaGetErrorString(err));
    if (d != NULL && is_sticky(err)) {
        /* the context is per GPU: every virtual device on it is gone with it */
        for (int i = 0; i < g_n_devices; i++) {
            struct ggmlx_cuda_device * o = &g_devices[i];
            bool expected = false;
            if ((o == d || o->ordinal == d->ordinal) && atomic_compare_exchange_strong(&o->failed, &expected, true)) {
                snprintf(o->failed_msg, sizeof o->failed_msg, "%s", msg);
            }
        }
        ggmlx_error(func, "%s; %s is marked failed (a sticky CUDA error: restart the process)", msg, d->name);
        return false;
    }
    ggmlx_error(func, "%s", msg);
    return false;
}

bool ggmlx_cuda_alive(struct ggmlx_cuda_device * d, const char * func) {
    if (!atomic_load(&d->failed)) {
        return true;
    }
    ggmlx_error(func, "%s failed earlier (%s); it stays unusable until the process restarts", d->name, d->failed_msg);
    return false;
}

bool ggmlx_cuda_set_device(struct ggmlx_cuda_device * d, const char * func) {
    if (!ggmlx_cuda_alive(d, func)) {
        return false;
    }
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == d->ordinal) {
        return true; /* cudaSetDevice is not free: skip it when nothing changes */
    }
    return ggmlx_cuda_check(d, cudaSetDevice(d->ordinal), func, "cudaSetDevice");
}

/* ---- the device table ---------------------------------------------------------------------- */

static bool probe_device(struct ggmlx_cuda_device * d, int ordinal) {
    static const char * func = "ggml_backend_cuda_reg";
    struct cudaDeviceProp prop;
    if (!ggmlx_cuda_check(NULL, cudaGetDeviceProperties(&prop, ordinal), func, "cudaGetDeviceProperties")) {
        return false;
    }
    d->ordinal   = ordinal;
    d->cc        = prop.major * 10 + prop.minor;
    d->total_mem = prop.totalGlobalMem;
    snprintf(d->description, sizeof d->description, "%s", prop.name);
    int pools = 0;
    d->pools = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ordinal) == cudaSuccess && pools;
    (void) cudaGetLastError();
    if (cudaDeviceGetPCIBusId(d->pci_id, (int) sizeof d->pci_id, ordinal) != cudaSuccess) {
        (void) cudaGetLastError();
        d->pci_id[0] = '\0';
    }
    for (char * p = d->pci_id; *p; p++) {
        *p = (char) tolower((unsigned char) *p); /* upstream's device_id is lower case */
    }
    atomic_init(&d->failed, false);
    d->failed_msg[0] = '\0';
    return true;
}

/* a virtual device past the physical ones repeats the properties of its GPU (GGML_CUDA_DEVICES) */
static void copy_physical(struct ggmlx_cuda_device * d, const struct ggmlx_cuda_device * p) {
    d->ordinal   = p->ordinal;
    d->cc        = p->cc;
    d->pools     = p->pools;
    d->total_mem = p->total_mem;
    memcpy(d->description, p->description, sizeof d->description);
    memcpy(d->pci_id, p->pci_id, sizeof d->pci_id);
    atomic_init(&d->failed, false);
    d->failed_msg[0] = '\0';
}

static void find_devices(void) {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        (void) cudaGetLastError();
        /* cudaErrorInsufficientDriver without a driver, cudaErrorNoDevice without a GPU */
        snprintf(g_no_device_why, sizeof g_no_device_why, "no CUDA device (%s: %s)", cudaGetErrorName(err),
                 cudaGetErrorString(err));
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "ggml_backend_cuda_reg: %s\n", g_no_device_why);
        return;
    }
    if (n == 0) {
        snprintf(g_no_device_why, sizeof g_no_device_why, "no CUDA device (the driver reports no GPU)");
    }
    if (n > GGML_CUDA_MAX_DEVICES) {
        ggmlx_log(GGML_LOG_LEVEL_WARN, "ggml_backend_cuda_reg: %d CUDA devices, using the first %d\n", n,
                  GGML_CUDA_MAX_DEVICES);
        n = GGML_CUDA_MAX_DEVICES;
    }
    /* the physical GPUs first, in slots 0..n_phys-1, which round-robin maps to themselves */
    int n_phys = 0;
    for (int i = 0; i < n; i++) {
        if (probe_device(&g_devices[n_phys], i)) {
            n_phys++; /* a device the runtime cannot describe is left out, the others stay */
        }
    }
    const int n_virt = ggmlx_cuda_vdev_count(getenv("GGML_CUDA_DEVICES"), n_phys, GGML_CUDA_MAX_DEVICES);
    const char * mem_env = getenv("GGMLX_CUDA_DEVICE_MEMORY");
    struct ggmlx_cuda_vdev plan[GGML_CUDA_MAX_DEVICES];
    ggmlx_cuda_vdev_plan(plan, n_virt, n_phys);
    /* the GPUs' own ids, before the physical slots get their "-vK" */
    char gpu_ids[GGML_CUDA_MAX_DEVICES][sizeof g_devices[0].pci_id];
    for (int p = 0; p < n_phys; p++) {
        memcpy(gpu_ids[p], g_devices[p].pci_id, sizeof gpu_ids[p]);
    }
    for (int v = 0; v < n_virt; v++) {
        struct ggmlx_cuda_device * d = &g_devices[v];
        if (v >= n_phys) {
            copy_physical(d, &g_devices[plan[v].physical]);
        }
        d->share = plan[v].share;
        ggmlx_cuda_vdev_id(d->pci_id, sizeof d->pci_id, gpu_ids[plan[v].physical], &plan[v]);
        ggmlx_cuda_vmem_init(&d->vmem, ggmlx_cuda_vdev_budget(d->total_mem, d->share, mem_env));
        snprintf(d->name, sizeof d->name, "CUDA%d", v);
        d->buft = (struct ggml_backend_buffer_type){ ggmlx_cuda_buft_iface, &d->dev, d };
        d->dev  = (struct ggml_backend_device){ g_dev_iface, &g_reg, d };
    }
    g_n_devices = n_virt;
    if (n > 0 && n_phys == 0) {
        snprintf(g_no_device_why, sizeof g_no_device_why,
                 "no CUDA device (the driver reports %d GPU%s, none could be queried: see the errors above)", n,
                 n == 1 ? "" : "s");
    }
    if (n_virt != n_phys) {
        const int used = n_phys < n_virt ? n_phys : n_virt;
        ggmlx_log(GGML_LOG_LEVEL_INFO, "ggml_backend_cuda_reg: GGML_CUDA_DEVICES=%d: %d device%s on %d GPU%s\n", n_virt,
                  n_virt, n_virt == 1 ? "" : "s", used, used == 1 ? "" : "s");
    }
    ggmlx_log(GGML_LOG_LEVEL_DEBUG, "ggml_backend_cuda_reg: %d CUDA device%s\n", g_n_devices,
              g_n_devices == 1 ? "" : "s");
}

int ggmlx_cuda_n_devices(void) {
    pthread_once(&g_once, find_devices);
    return g_n_devices;
}

/* why there is no device, NULL when there is one (GGMLX_BACKEND_UNAVAILABLE_REASON) */
static const char * no_device_reason(void) {
    return ggmlx_cuda_n_devices() > 0 ? NULL : g_no_device_why;
}

struct ggmlx_cuda_device * ggmlx_cuda_device_at(const char * func, int i) {
    const int n = ggmlx_cuda_n_devices();
    if (i < 0 || i >= n) {
        if (n == 0) {
            ggmlx_error(func, "device %d: there are no CUDA devices (no GPU, or no CUDA driver)", i);
        } else {
            ggmlx_error(func, "device %d is out of range: %d CUDA device%s", i, n, n == 1 ? "" : "s");
        }
        return NULL;
    }
    return &g_devices[i];
}

struct ggmlx_cuda_device * ggmlx_cuda_device_of(ggml_backend_dev_t dev) {
    if (dev == NULL || dev->reg != &g_reg) {
        return NULL;
    }
    return dev->context;
}

/* ---- device vtable ------------------------------------------------------------------------- */

static const char * dev_get_name(ggml_backend_dev_t dev) {
    return ((struct ggmlx_cuda_device *) dev->context)->name;
}

static const char * dev_get_description(ggml_backend_dev_t dev) {
    return ((struct ggmlx_cuda_device *) dev->context)->description;
}

/* the device's budget (the GPU's memory, or its share of it): what is left of it, bounded by
 * what the GPU really has free (other devices and processes use it too) */
static void dev_get_memory(ggml_backend_dev_t dev, size_t * free, size_t * total) {
    static const char * func = "ggml_backend_dev_memory";
    struct ggmlx_cuda_device * d = dev->context;
    *free  = 0;
    *total = d->vmem.budget;
    size_t f = 0, t = 0;
    if (ggmlx_cuda_set_device(d, func) && ggmlx_cuda_check(d, cudaMemGetInfo(&f, &t), func, "cudaMemGetInfo")) {
        *free = ggmlx_cuda_vmem_free(&d->vmem, f);
    }
}

static enum ggml_backend_dev_type dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static void dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    struct ggmlx_cuda_device * d = dev->context;
    props->name        = d->name;
    props->description = d->description;
    props->type        = GGML_BACKEND_DEVICE_TYPE_GPU;
    props->device_id   = d->pci_id[0] ? d->pci_id : NULL;
    dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps.async                = true;
    props->caps.host_buffer          = true;
    props->caps.buffer_from_host_ptr = false;
    props->caps.events               = true;
    props->caps.mmap_support         = false;
}

static ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    if (params != NULL && params[0] != '\0') {
        /* as upstream: CUDA has no init parameters; say so rather than fail a portable caller */
        ggmlx_log(GGML_LOG_LEVEL_DEBUG, "ggml_backend_dev_init: CUDA ignores the parameters '%s'\n", params);
    }
    return ggmlx_cuda_backend_new(dev->context, "ggml_backend_dev_init");
}

static ggml_backend_buffer_type_t dev_get_buffer_type(ggml_backend_dev_t dev) {
    return &((struct ggmlx_cuda_device *) dev->context)->buft;
}

static ggml_backend_buffer_type_t dev_get_host_buffer_type(ggml_backend_dev_t dev) {
    (void) dev;
    return ggml_backend_cuda_host_buffer_type();
}

static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    return ggmlx_op_is_view(op->op) || ggmlx_cuda_supports_op(op);
}

static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    /* device memory of this GPU only: kernels cannot read another GPU's or pageable memory */
    return ggmlx_cuda_buft_is_device(buft) && buft->context == dev->context;
}

/* the batch size an op works on, for the offload decision (as upstream) */
static int64_t op_batch_size(const struct ggml_tensor * op) {
    switch (op->op) {
    case GGML_OP_GET_ROWS:
        return 0; /* gathering rows is cheap where the weights are */
    case GGML_OP_MUL_MAT_ID:
        return op->ne[2];
    default:
        return op->ne[1];
    }
}

static bool dev_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    static atomic_int min_batch = -1; /* read once; a race only computes the same value twice */
    int mb = atomic_load(&min_batch);
    if (mb < 0) {
        const char * env = getenv("GGML_OP_OFFLOAD_MIN_BATCH");
        const int v = env ? atoi(env) : 32;
        mb = v > 0 ? v : 32;
        atomic_store(&min_batch, mb);
    }
    return op_batch_size(op) >= mb;
}

static ggml_backend_event_t dev_event_new(ggml_backend_dev_t dev) {
    return ggmlx_cuda_event_new(dev->context);
}

static void dev_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_cuda_event_free(event);
}

static void dev_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_cuda_event_synchronize(event);
}

static const struct ggml_backend_device_i g_dev_iface = {
    .get_name             = dev_get_name,
    .get_description      = dev_get_description,
    .get_memory           = dev_get_memory,
    .get_type             = dev_get_type,
    .get_props            = dev_get_props,
    .init_backend         = dev_init_backend,
    .get_buffer_type      = dev_get_buffer_type,
    .get_host_buffer_type = dev_get_host_buffer_type,
    .buffer_from_host_ptr = NULL,
    .supports_op          = dev_supports_op,
    .supports_buft        = dev_supports_buft,
    .offload_op           = dev_offload_op,
    .event_new            = dev_event_new,
    .event_free           = dev_event_free,
    .event_synchronize    = dev_event_synchronize,
};

/* ---- registry ------------------------------------------------------------------------------ */

static const char * reg_get_name(ggml_backend_reg_t reg) {
    (void) reg;
    return GGML_CUDA_NAME;
}

static size_t reg_get_device_count(ggml_backend_reg_t reg) {
    (void) reg;
    return (size_t) ggmlx_cuda_n_devices();
}

static ggml_backend_dev_t reg_get_device(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    const int n = ggmlx_cuda_n_devices();
    if (index >= (size_t) n) {
        ggmlx_error("ggml_backend_reg_dev_get", "CUDA has %d device%s; index %zu is out of range", n,
                    n == 1 ? "" : "s", index);
        return NULL;
    }
    return &g_devices[index].dev;
}

static struct ggml_backend_feature * reg_get_features(ggml_backend_reg_t reg) {
    (void) reg;
    static struct ggml_backend_feature features[] = {
        { "NO_VMM", "1" },  /* plain cudaMalloc buffers and a stream-ordered scratch pool */
        { NULL, NULL },     /* the list ends with a NULL name */
    };
    return features;
}

static void * reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    (void) reg;
    static const struct ggmlx_proc procs[] = {
        { "ggml_backend_register_host_buffer",   (void *) ggml_backend_cuda_register_host_buffer },
        { "ggml_backend_unregister_host_buffer", (void *) ggml_backend_cuda_unregister_host_buffer },
        { "ggml_backend_get_features",           (void *) reg_get_features },
        { "ggml_backend_comm_init",              (void *) ggmlx_cuda_comm_init },
        { "ggml_backend_comm_free",              (void *) ggmlx_cuda_comm_free },
        { "ggml_backend_comm_allreduce_tensor",  (void *) ggmlx_cuda_comm_allreduce_tensor },
        { "ggmlx_backend_cuda_graph_stats",      (void *) ggmlx_backend_cuda_graph_stats },
        { GGMLX_BACKEND_UNAVAILABLE_REASON,      (void *) no_device_reason },
    };
    return ggmlx_proc_lookup(procs, sizeof procs / sizeof procs[0], name);
}

static struct ggml_backend_reg g_reg = {
    .api_version = GGML_BACKEND_API_VERSION,
    .iface = {
        .get_name         = reg_get_name,
        .get_device_count = reg_get_device_count,
        .get_device       = reg_get_device,
        .get_proc_address = reg_get_proc_address,
    },
    .context = NULL,
};

ggml_backend_reg_t ggml_backend_cuda_reg(void) {
    return &g_reg;
}

#ifdef GGML_BACKEND_DL
/*
 * As a module: without a usable device the score is 0, so ggml_backend_load_all
 * leaves the module out and logs the reason once. Finding the devices only asks the runtime
 * (cudaGetDeviceCount, which loads libcuda if there is one); no context is created.
 */
static int cuda_module_score(void) {
    return ggmlx_cuda_n_devices() > 0 ? 1 : 0;
}

GGML_BACKEND_DL_IMPL(ggml_backend_cuda_reg)
GGML_BACKEND_DL_SCORE_IMPL(cuda_module_score)
GGMLX_BACKEND_DL_REASON_IMPL(no_device_reason)
#endif

/* ---- public per-device calls (ggml-cuda.h) ------------------------------------------------- */

int ggml_backend_cuda_get_device_count(void) {
    return ggmlx_cuda_n_devices();
}

void ggml_backend_cuda_get_device_description(int device, char * description, size_t description_size) {
    if (description == NULL || description_size == 0) {
        ggmlx_error(__func__, "description is NULL or has no room");
        return;
    }
    description[0] = '\0';
    struct ggmlx_cuda_device * d = ggmlx_cuda_device_at(__func__, device);
    if (d == NULL) {
        return;
    }
    snprintf(description, description_size, "%s", d->description);
    ggmlx_ok();
}

void ggml_backend_cuda_get_device_memory(int device, size_t * free, size_t * total) {
    if (free == NULL || total == NULL) {
        ggmlx_error(__func__, "%s is NULL", free == NULL ? "free" : "total");
        return;
    }
    *free  = 0;
    *total = 0;
    struct ggmlx_cuda_device * d = ggmlx_cuda_device_at(__func__, device);
    if (d == NULL) {
        return;
    }
    ggmlx_ok();
    dev_get_memory(&d->dev, free, total);
}

ggml_backend_buffer_type_t ggml_backend_cuda_buffer_type(int device) {
    struct ggmlx_cuda_device * d = ggmlx_cuda_device_at(__func__, device);
    if (d == NULL) {
        return NULL;
    }
    ggmlx_ok();
    return &d->buft;
}

ggml_backend_t ggml_backend_cuda_init(int device) {
    struct ggmlx_cuda_device * d = ggmlx_cuda_device_at(__func__, device);
    return d ? ggmlx_cuda_backend_new(d, __func__) : NULL;
}
