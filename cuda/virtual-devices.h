/*
 * virtual-devices.h -- GGML_CUDA_DEVICES=N virtual devices and per-device memory budgets, in
 * plain C (no CUDA headers) so tests/test-cuda-virtual.c checks it on a machine without a GPU.
 *
 * Virtual device v lives on physical GPU v % n_physical (round-robin, as upstream). Each has
 * its own budget: the GPU's memory divided among the virtual devices on it, or
 * GGMLX_CUDA_DEVICE_MEMORY bytes for every device. Buffer allocation reserves from the budget
 * before cudaMalloc, so one virtual device running out leaves the others allocating.
 */
#ifndef GGMLX_CUDA_VIRTUAL_DEVICES_H
#define GGMLX_CUDA_VIRTUAL_DEVICES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * The number of devices to expose for the value of GGML_CUDA_DEVICES (env, may be NULL).
 * Unset or empty: n_physical. A whole number 1..max: that number. Anything else: an ERROR
 * log naming the value, and n_physical. With no physical GPU there is nothing to share: 0.
 */
int ggmlx_cuda_vdev_count(const char * env, int n_physical, int max);

/* the physical GPU of virtual device v, and the index of v among that GPU's virtual devices */
int ggmlx_cuda_vdev_physical(int v, int n_physical);
int ggmlx_cuda_vdev_slot(int v, int n_physical);
/* how many of n_virtual virtual devices live on physical GPU p */
int ggmlx_cuda_vdev_share(int p, int n_virtual, int n_physical);

/* where one virtual device lives */
struct ggmlx_cuda_vdev {
    int physical; /* GPU index */
    int slot;     /* index among that GPU's virtual devices */
    int share;    /* virtual devices on that GPU */
};

/* the table of n_virtual devices (out[0..n_virtual-1]) on n_physical GPUs */
void ggmlx_cuda_vdev_plan(struct ggmlx_cuda_vdev * out, int n_virtual, int n_physical);

/*
 * A virtual device's id: the GPU's id (gpu_id, may be empty), with "-vK" (K its slot) appended
 * when the GPU carries more than one device, so no two devices claim to be one (as upstream).
 */
void ggmlx_cuda_vdev_id(char * out, size_t size, const char * gpu_id, const struct ggmlx_cuda_vdev * v);

/*
 * The budget of one virtual device: mem_env (GGMLX_CUDA_DEVICE_MEMORY, may be NULL) when it is
 * a valid byte count, else physical_total / share. A bad mem_env is an ERROR log and ignored.
 */
size_t ggmlx_cuda_vdev_budget(size_t physical_total, int share, const char * mem_env);

/* ---- accounting ---------------------------------------------------------------------------- */

struct ggmlx_cuda_vmem {
    size_t         budget;
    atomic_size_t  used;
};

void   ggmlx_cuda_vmem_init(struct ggmlx_cuda_vmem * vm, size_t budget);
/*
 * Take size bytes of the budget (any number of threads at once). false when they do not fit:
 * nothing is taken and an error naming func and the device (name) says how much is in use.
 */
bool   ggmlx_cuda_vmem_reserve(struct ggmlx_cuda_vmem * vm, size_t size, const char * func, const char * name);
/* give back what a reserve took */
void   ggmlx_cuda_vmem_release(struct ggmlx_cuda_vmem * vm, size_t size);
size_t ggmlx_cuda_vmem_used(const struct ggmlx_cuda_vmem * vm);
/* what is left of the budget, never more than physical_free (the GPU may be shared with others) */
size_t ggmlx_cuda_vmem_free(const struct ggmlx_cuda_vmem * vm, size_t physical_free);

#endif /* GGMLX_CUDA_VIRTUAL_DEVICES_H */
