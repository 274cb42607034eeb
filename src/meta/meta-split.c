/*
 * meta-split.c -- split states: the names, the checks of what the user's callback returns, and
 * the arithmetic of who holds which part.
 */
#include "meta-impl.h"

#include <string.h>

const char * ggml_backend_meta_split_axis_name(enum ggml_backend_meta_split_axis split_axis) {
    switch (split_axis) {
    case GGML_BACKEND_SPLIT_AXIS_0:        return "axis_0";
    case GGML_BACKEND_SPLIT_AXIS_1:        return "axis_1";
    case GGML_BACKEND_SPLIT_AXIS_2:        return "axis_2";
    case GGML_BACKEND_SPLIT_AXIS_3:        return "axis_3";
    case GGML_BACKEND_SPLIT_AXIS_MIRRORED: return "mirrored";
    case GGML_BACKEND_SPLIT_AXIS_PARTIAL:  return "partial";
    case GGML_BACKEND_SPLIT_AXIS_NONE:     return "none";
    case GGML_BACKEND_SPLIT_AXIS_UNKNOWN:  return "unknown";
    }
    return "invalid";
}

int64_t ggmlx_meta_split_start(const struct meta_split * s, size_t n_devs, uint32_t seg, size_t d) {
    int64_t start = 0;
    for (uint32_t k = 0; k < seg; k++) {
        for (size_t j = 0; j < n_devs; j++) {
            start += s->len[k][j];
        }
    }
    for (size_t j = 0; j < d; j++) {
        start += s->len[seg][j];
    }
    return start;
}

int64_t ggmlx_meta_split_dev_len(const struct meta_split * s, size_t n_devs, size_t d) {
    (void) n_devs;
    int64_t n = 0;
    for (uint32_t k = 0; k < s->n_seg; k++) {
        n += s->len[k][d];
    }
    return n;
}

bool ggmlx_meta_split_equal(const struct meta_split * a, const struct meta_split * b, size_t n_devs) {
    if (a->axis != b->axis) {
        return false;
    }
    if (!meta_split_is_axis(a)) {
        return true;
    }
    if (a->n_seg != b->n_seg) {
        return false;
    }
    for (uint32_t k = 0; k < a->n_seg; k++) {
        for (size_t d = 0; d < n_devs; d++) {
            if (a->len[k][d] != b->len[k][d]) {
                return false;
            }
        }
    }
    return true;
}

void ggmlx_meta_split_mirrored(struct meta_split * s) {
    s->axis  = GGML_BACKEND_SPLIT_AXIS_MIRRORED;
    s->n_seg = 1;
}

bool ggmlx_meta_split_from_user(const struct ggml_backend_meta_split_state * u, const struct ggml_tensor * t, size_t n_devs,
                                struct meta_split * out, const char * func) {
    memset(out, 0, sizeof *out);
    if (u->axis == GGML_BACKEND_SPLIT_AXIS_MIRRORED) {
        ggmlx_meta_split_mirrored(out);
        return true;
    }
    if ((int) u->axis < 0 || (int) u->axis >= GGML_MAX_DIMS) {
        ggmlx_error(func, "the split callback gave tensor '%s' the state '%s' (%d): a weight must be split along an axis "
                    "0..3 or mirrored", t->name, ggml_backend_meta_split_axis_name(u->axis), (int) u->axis);
        return false;
    }
    if (u->n_segments < 1 || u->n_segments > META_MAX_SEG) {
        ggmlx_error(func, "the split callback gave tensor '%s' %u segments; 1 to %d are possible", t->name,
                    u->n_segments, META_MAX_SEG);
        return false;
    }
    const int a = (int) u->axis;
    const int64_t blck = ggml_blck_size(t->type);
    int64_t sum = 0;
    for (uint32_t k = 0; k < u->n_segments; k++) {
        if (u->nr[k] > 1) {
            ggmlx_error(func, "the split callback gave tensor '%s' %u repetitions of segment %u; repeated segments are "
                        "not supported", t->name, u->nr[k], k);
            return false;
        }
        for (size_t d = 0; d < n_devs; d++) {
            const int64_t n = u->ne[k * n_devs + d];
            if (n < 0) {
                ggmlx_error(func, "the split callback gave tensor '%s' a negative length (%lld) for device %zu", t->name,
                            (long long) n, d);
                return false;
            }
            if (a == 0 && blck > 1 && n % blck != 0) {
                ggmlx_error(func, "tensor '%s': device %zu's share along axis 0 (%lld) is not a multiple of the %s block "
                            "size %lld", t->name, d, (long long) n, ggml_type_name(t->type), (long long) blck);
                return false;
            }
            if (n > t->ne[a] || sum > t->ne[a] - n) {
                sum = t->ne[a] + 1; /* reported below */
                break;
            }
            out->len[k][d] = n;
            sum += n;
        }
    }
    if (sum != t->ne[a]) {
        ggmlx_error(func, "the split callback's lengths for tensor '%s' along axis %d do not add up to its extent %lld",
                    t->name, a, (long long) t->ne[a]);
        return false;
    }
    out->axis  = a;
    out->n_seg = u->n_segments;
    return true;
}
