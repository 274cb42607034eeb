/*
 * testmod.c -- a backend module built on its own, for the loading tests (test-load, test-tools).
 *
 * One device, "TESTMOD0", of type ACCEL. It answers questions about itself (name, description,
 * memory, props) and can make a backend, but that backend computes nothing: it exists to show
 * that a module's devices join the registry and leave it again, not to run graphs.
 *
 * Built twice: libggml-testmod.so (this library's API version, ggml_backend_score exported) and,
 * with TESTMOD_BAD_VERSION, libggml-testmod-badver.so, whose registry claims upstream's API
 * version 2 and which exports no score, so a scan for "testmod" passes it over.
 *
 * GGMLX_TESTMOD_SCORE (environment) overrides the score, so a test can make it 0, and
 * GGMLX_TESTMOD_REASON is what its ggmlx_backend_unavailable_reason says then (unset: NULL).
 */
#include "ggml-backend-impl.h"

#include <stdlib.h>
#include <string.h>

#define TESTMOD_EXPORT __attribute__((visibility("default")))

#ifdef TESTMOD_BAD_VERSION
#    define TESTMOD_API_VERSION 2 /* upstream ggml's */
#else
#    define TESTMOD_API_VERSION GGML_BACKEND_API_VERSION
#endif

#define TESTMOD_MEMORY ((size_t) 64 << 20)

/* ---- backend: a name, and a refusal to compute ----------------------------------------------- */

static const char * backend_get_name(ggml_backend_t backend) {
    (void) backend;
    return "TESTMOD";
}

static void backend_free(ggml_backend_t backend) {
    free(backend);
}

static enum ggml_status backend_graph_compute(ggml_backend_t backend, struct ggml_cgraph * cgraph) {
    (void) backend;
    (void) cgraph;
    return GGML_STATUS_FAILED;
}

static ggml_guid testmod_guid = { 0x74, 0x65, 0x73, 0x74, 0x6d, 0x6f, 0x64, 0x00,
                                   0x67, 0x67, 0x6d, 0x6c, 0x78, 0x00, 0x00, 0x01 };

/* ---- device ------------------------------------------------------------------------------------ */

static const char * dev_get_name(ggml_backend_dev_t dev) {
    (void) dev;
    return "TESTMOD0";
}

static const char * dev_get_description(ggml_backend_dev_t dev) {
    (void) dev;
    return "ggmlx test module (computes nothing)";
}

static void dev_get_memory(ggml_backend_dev_t dev, size_t * free_mem, size_t * total) {
    (void) dev;
    *free_mem = TESTMOD_MEMORY / 2;
    *total    = TESTMOD_MEMORY;
}

static enum ggml_backend_dev_type dev_get_type(ggml_backend_dev_t dev) {
    (void) dev;
    return GGML_BACKEND_DEVICE_TYPE_ACCEL;
}

static void dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props * props) {
    memset(props, 0, sizeof *props);
    props->name        = dev_get_name(dev);
    props->description = dev_get_description(dev);
    dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->type      = dev_get_type(dev);
    props->device_id = "testmod:0";
    props->caps.async = false;
}

static ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char * params) {
    (void) params;
    ggml_backend_t backend = calloc(1, sizeof *backend);
    if (backend == NULL) {
        return NULL;
    }
    backend->guid                = &testmod_guid;
    backend->iface.get_name      = backend_get_name;
    backend->iface.free          = backend_free;
    backend->iface.graph_compute = backend_graph_compute;
    backend->device              = dev;
    return backend;
}

static ggml_backend_buffer_type_t dev_get_buffer_type(ggml_backend_dev_t dev) {
    (void) dev;
    return NULL;
}

static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor * op) {
    (void) dev;
    (void) op;
    return false;
}

static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft) {
    (void) dev;
    (void) buft;
    return false;
}

/* ---- registry ------------------------------------------------------------------------------------ */

static const char * reg_get_name(ggml_backend_reg_t reg) {
    (void) reg;
    return "TESTMOD";
}

static size_t reg_get_device_count(ggml_backend_reg_t reg) {
    (void) reg;
    return 1;
}

static struct ggml_backend_device testmod_device;

static ggml_backend_dev_t reg_get_device(ggml_backend_reg_t reg, size_t index) {
    (void) reg;
    return index == 0 ? &testmod_device : NULL;
}

static void * reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    (void) reg;
    (void) name;
    return NULL;
}

static struct ggml_backend_reg testmod_reg = {
    .api_version = TESTMOD_API_VERSION,
    .iface = {
        .get_name         = reg_get_name,
        .get_device_count = reg_get_device_count,
        .get_device       = reg_get_device,
        .get_proc_address = reg_get_proc_address,
    },
    .context = NULL,
};

static struct ggml_backend_device testmod_device = {
    .iface = {
        .get_name        = dev_get_name,
        .get_description = dev_get_description,
        .get_memory      = dev_get_memory,
        .get_type        = dev_get_type,
        .get_props       = dev_get_props,
        .init_backend    = dev_init_backend,
        .get_buffer_type = dev_get_buffer_type,
        .supports_op     = dev_supports_op,
        .supports_buft   = dev_supports_buft,
    },
    .reg     = &testmod_reg,
    .context = NULL,
};

/* ---- what the module exports ---------------------------------------------------------------------- */

TESTMOD_EXPORT ggml_backend_reg_t ggml_backend_init(void);
ggml_backend_reg_t ggml_backend_init(void) {
    return &testmod_reg;
}

#ifndef TESTMOD_BAD_VERSION
TESTMOD_EXPORT int ggml_backend_score(void);
int ggml_backend_score(void) {
    const char * s = getenv("GGMLX_TESTMOD_SCORE");
    return s != NULL ? atoi(s) : 1;
}

/* why the score is 0, in the module's words: what the loader's one info line says */
TESTMOD_EXPORT const char * ggmlx_backend_unavailable_reason(void);
const char * ggmlx_backend_unavailable_reason(void) {
    return getenv("GGMLX_TESTMOD_REASON");
}
#endif
