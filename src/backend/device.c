/*
 * device.c -- the generic ggml_backend_dev_* calls: checks and defaults for optional entries.
 */
#include "backend-check.h"

#include <string.h>

#define CHECK_DEVICE(device, ret)                                                             \
    do {                                                                                      \
        if ((device) == NULL) {                                                               \
            ggmlx_error(__func__, "device is NULL");                                          \
            return ret;                                                                       \
        }                                                                                     \
    } while (0)

const char * ggml_backend_dev_name(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, NULL);
    return device->iface.get_name(device);
}

const char * ggml_backend_dev_description(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, NULL);
    return device->iface.get_description(device);
}

void ggml_backend_dev_memory(ggml_backend_dev_t device, size_t * free, size_t * total) {
    size_t f = 0, t = 0;
    if (device == NULL) {
        ggmlx_error(__func__, "device is NULL");
    } else {
        device->iface.get_memory(device, &f, &t);
    }
    /* either pointer may be NULL when the caller wants only the other number */
    if (free != NULL) {
        *free = f;
    }
    if (total != NULL) {
        *total = t;
    }
}

enum ggml_backend_dev_type ggml_backend_dev_type(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, GGML_BACKEND_DEVICE_TYPE_CPU);
    return device->iface.get_type(device);
}

void ggml_backend_dev_get_props(ggml_backend_dev_t device, struct ggml_backend_dev_props * props) {
    if (props == NULL) {
        ggmlx_error(__func__, "props is NULL");
        return;
    }
    memset(props, 0, sizeof *props);
    CHECK_DEVICE(device, );
    device->iface.get_props(device, props);
}

ggml_backend_reg_t ggml_backend_dev_backend_reg(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, NULL);
    return device->reg;
}

ggml_backend_t ggml_backend_dev_init(ggml_backend_dev_t device, const char * params) {
    CHECK_DEVICE(device, NULL);
    ggmlx_clear_last_error();
    ggml_backend_t backend = device->iface.init_backend(device, params);
    if (backend == NULL) {
        ggmlx_error_if_silent(__func__, "device %s could not start a backend (params \"%s\")",
                              device->iface.get_name(device), params ? params : "");
    }
    return backend;
}

ggml_backend_buffer_type_t ggml_backend_dev_buffer_type(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, NULL);
    return device->iface.get_buffer_type(device);
}

ggml_backend_buffer_type_t ggml_backend_dev_host_buffer_type(ggml_backend_dev_t device) {
    CHECK_DEVICE(device, NULL);
    /* NULL here means "none" (caps.host_buffer is false), not an error */
    ggmlx_ok();
    return device->iface.get_host_buffer_type ? device->iface.get_host_buffer_type(device) : NULL;
}

ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void * ptr, size_t size,
                                                            size_t max_tensor_size) {
    CHECK_DEVICE(device, NULL);
    if (device->iface.buffer_from_host_ptr == NULL) {
        ggmlx_error(__func__, "device %s cannot wrap host memory (caps.buffer_from_host_ptr is false)",
                    device->iface.get_name(device));
        return NULL;
    }
    if (ptr == NULL) {
        ggmlx_error(__func__, "ptr is NULL");
        return NULL;
    }
    ggmlx_clear_last_error();
    ggml_backend_buffer_t buffer = device->iface.buffer_from_host_ptr(device, ptr, size, max_tensor_size);
    if (buffer == NULL) {
        ggmlx_error_if_silent(__func__, "device %s could not wrap %zu bytes at %p", device->iface.get_name(device),
                              size, ptr);
    }
    return buffer;
}

bool ggml_backend_dev_supports_op(ggml_backend_dev_t device, const struct ggml_tensor * op) {
    CHECK_DEVICE(device, false);
    if (op == NULL) {
        ggmlx_error(__func__, "op is NULL");
        return false;
    }
    return device->iface.supports_op(device, op);
}

bool ggml_backend_dev_supports_buft(ggml_backend_dev_t device, ggml_backend_buffer_type_t buft) {
    CHECK_DEVICE(device, false);
    if (buft == NULL) {
        ggmlx_error(__func__, "buft is NULL");
        return false;
    }
    return device->iface.supports_buft(device, buft);
}

bool ggml_backend_dev_offload_op(ggml_backend_dev_t device, const struct ggml_tensor * op) {
    CHECK_DEVICE(device, false);
    if (op == NULL) {
        ggmlx_error(__func__, "op is NULL");
        return false;
    }
    return device->iface.offload_op ? device->iface.offload_op(device, op) : false;
}
