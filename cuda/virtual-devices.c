/*
 * virtual-devices.c -- GGML_CUDA_DEVICES parsing, the virtual-to-physical mapping and the
 * per-device memory budgets (virtual-devices.h). Plain C: the tests include this file directly.
 */
#include "virtual-devices.h"

#include "ggml-impl.h"
#include "parse-bytes.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ggmlx_cuda_vdev_count(const char * env, int n_physical, int max) {
    if (n_physical <= 0) {
        return 0;
    }
    if (env == NULL || env[0] == '\0') {
        return n_physical;
    }
    char * end = NULL;
    errno = 0;
    const long n = strtol(env, &end, 10);
    /* a typo must not silently become another device count: whole digits only */
    if (!isdigit((unsigned char) env[0]) || errno != 0 || *end != '\0' || n < 1 || n > max) {
        ggmlx_log(GGML_LOG_LEVEL_ERROR,
                  "ggml_backend_cuda_reg: GGML_CUDA_DEVICES='%s' is not a device count from 1 to %d; "
                  "using the %d physical device%s\n",
                  env, max, n_physical, n_physical == 1 ? "" : "s");
        return n_physical;
    }
    return (int) n;
}

int ggmlx_cuda_vdev_physical(int v, int n_physical) {
    return n_physical > 0 ? v % n_physical : 0;
}

int ggmlx_cuda_vdev_slot(int v, int n_physical) {
    return n_physical > 0 ? v / n_physical : 0;
}

int ggmlx_cuda_vdev_share(int p, int n_virtual, int n_physical) {
    if (n_physical <= 0 || p < 0 || p >= n_physical || p >= n_virtual) {
        return 0;
    }
    /* round-robin: the first n_virtual % n_physical GPUs carry one more */
    return n_virtual / n_physical + (p < n_virtual % n_physical ? 1 : 0);
}

void ggmlx_cuda_vdev_plan(struct ggmlx_cuda_vdev * out, int n_virtual, int n_physical) {
    for (int v = 0; v < n_virtual; v++) {
        out[v].physical = ggmlx_cuda_vdev_physical(v, n_physical);
        out[v].slot     = ggmlx_cuda_vdev_slot(v, n_physical);
        out[v].share    = ggmlx_cuda_vdev_share(out[v].physical, n_virtual, n_physical);
    }
}

void ggmlx_cuda_vdev_id(char * out, size_t size, const char * gpu_id, const struct ggmlx_cuda_vdev * v) {
    const int n = v->share > 1 && gpu_id[0] != '\0' ? snprintf(out, size, "%s-v%d", gpu_id, v->slot) : -1;
    if (n < 0 || (size_t) n >= size) {
        /* no suffix wanted, or no room for it: a cut "-v" would only mislead */
        snprintf(out, size, "%s", gpu_id);
    }
}

size_t ggmlx_cuda_vdev_budget(size_t physical_total, int share, const char * mem_env) {
    if (mem_env != NULL && mem_env[0] != '\0') {
        size_t bytes = 0;
        if (ggmlx_parse_bytes(mem_env, &bytes) && bytes > 0) {
            return bytes;
        }
        ggmlx_log(GGML_LOG_LEVEL_ERROR,
                  "ggml_backend_cuda_reg: GGMLX_CUDA_DEVICE_MEMORY='%s' is not a positive byte count (digits, "
                  "then K, M, G or T); ignored\n",
                  mem_env);
    }
    return share > 1 ? physical_total / (size_t) share : physical_total;
}

/* ---- accounting ---------------------------------------------------------------------------- */

void ggmlx_cuda_vmem_init(struct ggmlx_cuda_vmem * vm, size_t budget) {
    vm->budget = budget;
    atomic_init(&vm->used, 0);
}

bool ggmlx_cuda_vmem_reserve(struct ggmlx_cuda_vmem * vm, size_t size, const char * func, const char * name) {
    size_t used = atomic_load(&vm->used);
    do {
        if (size > vm->budget || used > vm->budget - size) {
            ggmlx_error(func, "%s: out of memory: %zu bytes asked, %zu of the device's %zu bytes in use", name, size,
                        used, vm->budget);
            return false;
        }
    } while (!atomic_compare_exchange_weak(&vm->used, &used, used + size));
    return true;
}

void ggmlx_cuda_vmem_release(struct ggmlx_cuda_vmem * vm, size_t size) {
    size_t used = atomic_load(&vm->used);
    size_t next;
    do {
        /* more given back than taken is a bug of the caller: never wrap below zero */
        next = size > used ? 0 : used - size;
    } while (!atomic_compare_exchange_weak(&vm->used, &used, next));
}

size_t ggmlx_cuda_vmem_used(const struct ggmlx_cuda_vmem * vm) {
    return atomic_load(&((struct ggmlx_cuda_vmem *) vm)->used);
}

size_t ggmlx_cuda_vmem_free(const struct ggmlx_cuda_vmem * vm, size_t physical_free) {
    const size_t used = ggmlx_cuda_vmem_used(vm);
    const size_t left = used < vm->budget ? vm->budget - used : 0;
    return left < physical_free ? left : physical_free;
}
