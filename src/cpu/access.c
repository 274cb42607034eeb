/*
 * access.c -- reading and writing single elements of host tensors (ggml_set_f32_1d and co).
 * Indices are checked: out of range is an error and nothing is read or written.
 */
#include "ggml-impl.h"
#include "ggml-cpu.h"
#include "ggml-math.h"

static bool host_tensor_ok(const struct ggml_tensor * t, const char * func) {
    if (t == NULL) {
        ggmlx_error(func, "tensor is NULL");
        return false;
    }
    if (t->data == NULL) {
        ggmlx_error(func, "tensor '%s' has no data", t->name);
        return false;
    }
    if (t->buffer != NULL) {
        ggmlx_error(func, "tensor '%s' lives in a backend buffer: use ggml_backend_tensor_get/set", t->name);
        return false;
    }
    switch (t->type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16:
    case GGML_TYPE_I8:  case GGML_TYPE_I16: case GGML_TYPE_I32:
        return true;
    default:
        ggmlx_error(func, "element access to %s tensors is not supported", ggml_type_name(t->type));
        return false;
    }
}

static double load(const struct ggml_tensor * t, const char * p) {
    switch (t->type) {
    case GGML_TYPE_F32:  return *(const float *) p;
    case GGML_TYPE_F16:  return ggmlx_fp16_to_fp32(*(const uint16_t *) p);
    case GGML_TYPE_BF16: return ggmlx_bf16_to_fp32(*(const uint16_t *) p);
    case GGML_TYPE_I8:   return *(const int8_t *) p;
    case GGML_TYPE_I16:  return *(const int16_t *) p;
    default:             return *(const int32_t *) p;
    }
}

/* a float into an integer range without undefined behaviour: truncated, saturated, NaN -> 0 */
static int32_t float_to_int(double v, int32_t lo, int32_t hi) {
    if (!(v == v)) {
        return 0;
    }
    return v <= lo ? lo : v >= hi ? hi : (int32_t) v;
}

/* integers are stored as given (no float round trip), floats rounded to the tensor's type */
static void store(const struct ggml_tensor * t, char * p, double v, bool is_int, int32_t iv) {
    switch (t->type) {
    case GGML_TYPE_F32:  *(float *) p = (float) v; break;
    case GGML_TYPE_F16:  *(uint16_t *) p = ggmlx_fp32_to_fp16((float) v); break;
    case GGML_TYPE_BF16: *(uint16_t *) p = ggmlx_fp32_to_bf16((float) v); break;
    case GGML_TYPE_I8:   *(int8_t *) p = (int8_t) (is_int ? iv : float_to_int(v, INT8_MIN, INT8_MAX)); break;
    case GGML_TYPE_I16:  *(int16_t *) p = (int16_t) (is_int ? iv : float_to_int(v, INT16_MIN, INT16_MAX)); break;
    default:             *(int32_t *) p = is_int ? iv : float_to_int(v, INT32_MIN, INT32_MAX); break;
    }
}

/* element i in row-major order of the logical shape, whatever the strides */
static char * elem_1d(const struct ggml_tensor * t, int i, const char * func) {
    if (i < 0 || i >= ggml_nelements(t)) {
        ggmlx_error(func, "index %d is outside the %lld elements of '%s'", i, (long long) ggml_nelements(t), t->name);
        return NULL;
    }
    int64_t i0, i1, i2, i3;
    ggml_unravel_index(t, i, &i0, &i1, &i2, &i3);
    return (char *) t->data + ggmlx_offset(t, i0, i1, i2, i3);
}

static char * elem_nd(const struct ggml_tensor * t, int i0, int i1, int i2, int i3, const char * func) {
    if (i0 < 0 || i0 >= t->ne[0] || i1 < 0 || i1 >= t->ne[1] || i2 < 0 || i2 >= t->ne[2] || i3 < 0 || i3 >= t->ne[3]) {
        ggmlx_error(func, "index (%d, %d, %d, %d) is outside %s", i0, i1, i2, i3, GGMLX_SHAPE(t));
        return NULL;
    }
    return (char *) t->data + ggmlx_offset(t, i0, i1, i2, i3);
}

static void fill(struct ggml_tensor * t, double v, bool is_int, int32_t iv) {
    const int64_t n = ggml_nelements(t);
    for (int64_t i = 0; i < n; i++) {
        int64_t i0, i1, i2, i3;
        ggml_unravel_index(t, i, &i0, &i1, &i2, &i3);
        store(t, (char *) t->data + ggmlx_offset(t, i0, i1, i2, i3), v, is_int, iv);
    }
}

struct ggml_tensor * ggml_set_i32(struct ggml_tensor * tensor, int32_t value) {
    if (!host_tensor_ok(tensor, __func__)) {
        return NULL;
    }
    fill(tensor, value, true, value);
    ggmlx_ok();
    return tensor;
}

struct ggml_tensor * ggml_set_f32(struct ggml_tensor * tensor, float value) {
    if (!host_tensor_ok(tensor, __func__)) {
        return NULL;
    }
    fill(tensor, value, false, 0);
    ggmlx_ok();
    return tensor;
}

int32_t ggml_get_i32_1d(const struct ggml_tensor * tensor, int i) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_1d(tensor, i, __func__) : NULL;
    if (p == NULL) {
        return 0;
    }
    ggmlx_ok();
    return tensor->type == GGML_TYPE_I32 ? *(const int32_t *) p : float_to_int(load(tensor, p), INT32_MIN, INT32_MAX);
}

void ggml_set_i32_1d(const struct ggml_tensor * tensor, int i, int32_t value) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_1d(tensor, i, __func__) : NULL;
    if (p != NULL) {
        store(tensor, p, value, true, value);
        ggmlx_ok();
    }
}

int32_t ggml_get_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_nd(tensor, i0, i1, i2, i3, __func__) : NULL;
    if (p == NULL) {
        return 0;
    }
    ggmlx_ok();
    return tensor->type == GGML_TYPE_I32 ? *(const int32_t *) p : float_to_int(load(tensor, p), INT32_MIN, INT32_MAX);
}

void ggml_set_i32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, int32_t value) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_nd(tensor, i0, i1, i2, i3, __func__) : NULL;
    if (p != NULL) {
        store(tensor, p, value, true, value);
        ggmlx_ok();
    }
}

float ggml_get_f32_1d(const struct ggml_tensor * tensor, int i) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_1d(tensor, i, __func__) : NULL;
    if (p == NULL) {
        return 0.0f;
    }
    ggmlx_ok();
    return (float) load(tensor, p);
}

void ggml_set_f32_1d(const struct ggml_tensor * tensor, int i, float value) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_1d(tensor, i, __func__) : NULL;
    if (p != NULL) {
        store(tensor, p, value, false, 0);
        ggmlx_ok();
    }
}

float ggml_get_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_nd(tensor, i0, i1, i2, i3, __func__) : NULL;
    if (p == NULL) {
        return 0.0f;
    }
    ggmlx_ok();
    return (float) load(tensor, p);
}

void ggml_set_f32_nd(const struct ggml_tensor * tensor, int i0, int i1, int i2, int i3, float value) {
    char * p = host_tensor_ok(tensor, __func__) ? elem_nd(tensor, i0, i1, i2, i3, __func__) : NULL;
    if (p != NULL) {
        store(tensor, p, value, false, 0);
        ggmlx_ok();
    }
}

struct ggml_tensor * ggml_new_i32(struct ggml_context * ctx, int32_t value) {
    /* asked before the tensor is made, so a refused call takes nothing from the context */
    if (ctx != NULL && ggml_get_no_alloc(ctx)) {
        ggmlx_error(__func__, "the context is no_alloc: the value has nowhere to go");
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    if (t == NULL) {
        return NULL;
    }
    *(int32_t *) t->data = value;
    return t;
}

struct ggml_tensor * ggml_new_f32(struct ggml_context * ctx, float value) {
    /* asked before the tensor is made, so a refused call takes nothing from the context */
    if (ctx != NULL && ggml_get_no_alloc(ctx)) {
        ggmlx_error(__func__, "the context is no_alloc: the value has nowhere to go");
        return NULL;
    }
    struct ggml_tensor * t = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
    if (t == NULL) {
        return NULL;
    }
    *(float *) t->data = value;
    return t;
}
