/*
 * emu-device.c -- "EMU0": a device whose graphs are computed by cuda/'s real dispatch and
 * kernels (ggmlx_cuda_supports_op, ggmlx_cuda_compute_node), compiled for the host by
 * tests/cuda-emu/. Everything around the kernels is a host backend's (src/cpu/host-backend.h):
 * an in-order queue on a worker thread, counter events, queued copies and sticky status, so the
 * conformance runner's rules and op cases run on it unchanged. Its memory is host memory.
 *
 * A compute does what cuda-backend.c does per graph: scratch for the largest node (from
 * ggmlx_cuda_scratch_size) reserved before the first launch, the row error word set to the
 * compute's epoch, one ggmlx_cuda_compute_node per node that is not a view, then the word read
 * back and decoded with row-check.h into the same message a GPU run gives.
 */
#include "ggmlx-emu.h"

#include "cublas_v2.h"
#include "cuda-kernels.h"
#include "cuda-ops.h"
#include "row-check.h"

#include "ggml-backend-impl.h"
#include "ggml-cpu.h"
#include "host-backend.h"
#include "host-queue.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMU_MEMORY ((size_t) 1 << 30) /* what EMU0 reports; allocations are not held to it */

static struct ggml_backend_buffer_type g_buft;
static struct ggml_backend_device     g_dev;
static struct ggml_backend_reg        g_reg;
static pthread_once_t                 g_once = PTHREAD_ONCE_INIT;
static bool                           g_ok;

/* ---- the compute ------------------------------------------------------------------------------ */

static enum ggml_status emu_compute(void * ctx, struct ggml_cgraph * g) {
    static const char * func = "ggml_backend_graph_compute";
    (void) ctx;
    size_t need = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!ggmlx_cuda_node_skipped(g->nodes[i])) {
            const size_t s = ggmlx_cuda_scratch_size(g->nodes[i]);
            need = s > need ? s : need;
        }
    }
    void * scratch = NULL;
    if (need > 0) {
        scratch = aligned_alloc(256, (need + 255) / 256 * 256);
        if (scratch == NULL) {
            ggmlx_error(func, "EMU0: no %zu bytes of scratch; nothing launched", need);
            return GGML_STATUS_ALLOC_FAILED;
        }
    }
    int64_t                word[GGMLX_ROW_ERR_SLOTS] = { 0 };
    struct ggmlx_row_check rc;
    ggmlx_row_check_reset(&rc);
    word[GGMLX_ROW_ERR_EPOCH] = ggmlx_row_check_add(&rc, g);

    struct ggmlx_cuda_exec ex = {
        .device       = 0,
        .cc           = 90,
        .stream       = NULL,
        .cublas       = ggmlx_emu_cublas_handle(),
        .scratch      = scratch,
        .scratch_size = need,
        .row_err      = word,
        .node         = 0,
    };
    enum ggml_status st = GGML_STATUS_SUCCESS;
    for (int i = 0; i < g->n_nodes && st == GGML_STATUS_SUCCESS; i++) {
        struct ggml_tensor * node = g->nodes[i];
        if (ggmlx_cuda_node_skipped(node)) {
            continue;
        }
        char err[256] = "";
        ex.node = i;
        st = ggmlx_cuda_compute_node(&ex, node, err, sizeof err);
        if (st != GGML_STATUS_SUCCESS) {
            const char * why = ggmlx_emu_last_failure();
            ggmlx_error(func, "EMU0: node %d: %s%s%s", i, err, why[0] ? "; emulator: " : "", why);
        }
    }
    free(scratch);
    char msg[256];
    if (st == GGML_STATUS_SUCCESS && ggmlx_row_check_decode(&rc, word, msg, sizeof msg)) {
        ggmlx_error(func, "EMU0: %s", msg);
        st = GGML_STATUS_FAILED;
    }
    return st;
}

/* ---- buffer type: CPU buffers that name EMU0's type ------------------------------------------ */

static const char * emu_buft_get_name(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return "EMU0";
}

static ggml_backend_buffer_t emu_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
    if (b != NULL) {
        b->buft = buft; /* the CPU buffer's functions never look at their type */
    }
    return b;
}

static size_t emu_buft_get_alignment(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

static bool emu_buft_is_host(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return true;
}

/* ---- device ---------------------------------------------------------------------------------- */

static const char * emu_dev_get_name(ggml_backend_dev_t dev) {
    (void) dev;
    return "EMU0";
}

static const char * emu_dev_get_description(ggml_backend_dev_t dev) {
    (void) dev;
    return "ggmlx CUDA kernel emulator (cuda/ kernels and dispatch run on the host)";
}

static void emu_dev_get_memory(ggml_backend_dev_t dev, size_t * free_mem, size_t * total) {
    (void) dev;
    *free_mem = EMU_MEMORY;
    *total    = EMU_MEMORY;
}

static enum ggml_backend_dev_type emu_dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static void emu_dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    memset(props, 0, sizeof *props);
    props->name        = emu_dev_get_name(dev);
    props->description = emu_dev_get_description(dev);
    props->type        = GGML_BACKEND_DEVICE_TYPE_GPU;
    emu_dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->caps.async  = true;
    props->caps.events = true;
}

static ggml_guid_t emu_guid(void) {
    static ggml_guid guid = { 0x67, 0x78, 0x65, 0x6d, 0x75, 0x30, 0x00, 0x01,
                              0x9a, 0x3c, 0x51, 0x0e, 0x27, 0xd4, 0x8b, 0x66 };
    return &guid;
}

static ggml_backend_t emu_dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    (void) params;
    const struct ggmlx_host_backend_params p = {
        .name        = "EMU0",
        .guid        = emu_guid(),
        .device      = dev,
        .sync        = false,
        .n_threads   = 1,
        .compute     = emu_compute,
        .compute_ctx = NULL,
    };
    return ggmlx_host_backend_new(&p);
}

static ggml_backend_buffer_type_t emu_dev_get_buffer_type(ggml_backend_dev_t dev) {
    (void) dev;
    return &g_buft;
}

static bool emu_dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    return ggmlx_cuda_supports_op(op);
}

static bool emu_dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    (void) dev;
    return buft == &g_buft;
}

static ggml_backend_event_t emu_dev_event_new(ggml_backend_dev_t dev) {
    return ggmlx_host_event_new(dev);
}

static void emu_dev_event_free(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_free(event);
}

static void emu_dev_event_synchronize(ggml_backend_dev_t dev, ggml_backend_event_t event) {
    (void) dev;
    ggmlx_host_event_synchronize(event);
}

/* ---- registry ---------------------------------------------------------------------------------- */

static const char * emu_reg_get_name(ggml_backend_reg_t reg) {
    (void) reg;
    return "EMU";
}

static size_t emu_reg_get_device_count(ggml_backend_reg_t reg) {
    (void) reg;
    return 1;
}

static ggml_backend_dev_t emu_reg_get_device(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    return index == 0 ? &g_dev : NULL;
}

static void emu_init(void) {
    g_buft = (struct ggml_backend_buffer_type){
        .iface = {
            .get_name      = emu_buft_get_name,
            .alloc_buffer  = emu_buft_alloc_buffer,
            .get_alignment = emu_buft_get_alignment,
            .is_host       = emu_buft_is_host,
        },
        .device  = &g_dev,
        .context = NULL,
    };
    g_dev = (struct ggml_backend_device){
        .iface = {
            .get_name          = emu_dev_get_name,
            .get_description   = emu_dev_get_description,
            .get_memory        = emu_dev_get_memory,
            .get_type          = emu_dev_get_type,
            .get_props         = emu_dev_get_props,
            .init_backend      = emu_dev_init_backend,
            .get_buffer_type   = emu_dev_get_buffer_type,
            .supports_op       = emu_dev_supports_op,
            .supports_buft     = emu_dev_supports_buft,
            .event_new         = emu_dev_event_new,
            .event_free        = emu_dev_event_free,
            .event_synchronize = emu_dev_event_synchronize,
        },
        .reg     = &g_reg,
        .context = NULL,
    };
    g_reg = (struct ggml_backend_reg){
        .api_version = GGML_BACKEND_API_VERSION,
        .iface = {
            .get_name         = emu_reg_get_name,
            .get_device_count = emu_reg_get_device_count,
            .get_device       = emu_reg_get_device,
        },
        .context = NULL,
    };
    ggml_backend_register(&g_reg);
    g_ok = ggml_backend_dev_by_name("EMU0") == &g_dev;
}

ggml_backend_dev_t ggmlx_emu_device(void) {
    pthread_once(&g_once, emu_init);
    if (!g_ok) {
        ggmlx_error("ggmlx_emu_device", "EMU0 was not found in the registry after ggml_backend_register");
        return NULL;
    }
    return &g_dev;
}
