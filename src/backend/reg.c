/*
 * reg.c -- the generic calls on one backend registry. The registry of all registries lives in
 * libggml.
 */
#include "backend-check.h"

const char * ggml_backend_reg_name(ggml_backend_reg_t reg) {
    if (reg == NULL) {
        ggmlx_error(__func__, "reg is NULL");
        return NULL;
    }
    return reg->iface.get_name(reg);
}

size_t ggml_backend_reg_dev_count(ggml_backend_reg_t reg) {
    if (reg == NULL) {
        ggmlx_error(__func__, "reg is NULL");
        return 0;
    }
    return reg->iface.get_device_count(reg);
}

ggml_backend_dev_t ggml_backend_reg_dev_get(ggml_backend_reg_t reg, size_t index) {
    if (reg == NULL) {
        ggmlx_error(__func__, "reg is NULL");
        return NULL;
    }
    const size_t count = reg->iface.get_device_count(reg);
    if (index >= count) {
        ggmlx_error(__func__, "%s has %zu device(s); index %zu is out of range", reg->iface.get_name(reg), count, index);
        return NULL;
    }
    return reg->iface.get_device(reg, index);
}

void * ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char * name) {
    if (reg == NULL || name == NULL) {
        ggmlx_error(__func__, "%s is NULL", reg == NULL ? "reg" : "name");
        return NULL;
    }
    /* an unknown name is a normal answer: callers probe for optional functions */
    ggmlx_ok();
    return reg->iface.get_proc_address ? reg->iface.get_proc_address(reg, name) : NULL;
}
