/*
 * alloc-test-buft.h -- for the allocator suites: a buffer type over CPU memory with a byte limit
 * (a device that runs out of memory), a max buffer size, an alignment of our choosing, and
 * counters of live buffers, so tests can check sizes, reallocations and that nothing leaks.
 */
#ifndef GGMLX_ALLOC_TEST_BUFT_H
#define GGMLX_ALLOC_TEST_BUFT_H

#include "ggml-backend-impl.h"
#include "ggml-backend.h"

#include <stdint.h>
#include <string.h>

struct tb_state {
    size_t limit;      /* live bytes allowed; 0: none */
    size_t max_size;   /* 0: SIZE_MAX */
    size_t alignment;  /* 0: the CPU's */
    size_t live_bytes;
    int    live_bufs;
    int    n_allocs;   /* successful allocations */
    int    n_refused;  /* allocations refused for the limit */
    bool   fail_views; /* buffers refuse to initialise views (a backend failing init_tensor) */
};

struct tb_buft {
    struct ggml_backend_buffer_type buft;
    struct tb_state                 st;
};

/* the CPU buffer's own free, saved when the first buffer is made */
static void (*tb_cpu_free)(ggml_backend_buffer_t);

static struct tb_state * tb_state_of(ggml_backend_buffer_type_t buft) {
    return &((struct tb_buft *) buft->context)->st;
}

static void tb_free(ggml_backend_buffer_t b) {
    struct tb_state * st = tb_state_of(b->buft);
    st->live_bytes -= b->size;
    st->live_bufs--;
    if (tb_cpu_free) {
        tb_cpu_free(b);
    }
}

static enum ggml_status tb_init_tensor(ggml_backend_buffer_t b, struct ggml_tensor * t) {
    (void) b;
    return t->view_src != NULL ? GGML_STATUS_FAILED : GGML_STATUS_SUCCESS;
}

static const char * tb_name(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return "TEST";
}

static ggml_backend_buffer_t tb_alloc(ggml_backend_buffer_type_t buft, size_t size) {
    struct tb_state * st = tb_state_of(buft);
    if (st->limit != 0 && (size > st->limit || st->live_bytes > st->limit - size)) {
        st->n_refused++;
        return NULL;
    }
    ggml_backend_buffer_t b = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), size);
    if (b == NULL) {
        return NULL;
    }
    tb_cpu_free          = b->iface.free_buffer;
    b->iface.free_buffer = tb_free;
    b->buft              = buft; /* sizes and alignment now come from the test type */
    if (st->fail_views) {
        b->iface.init_tensor = tb_init_tensor;
    }
    st->live_bytes      += size;
    st->live_bufs++;
    st->n_allocs++;
    return b;
}

static size_t tb_alignment(ggml_backend_buffer_type_t buft) {
    const struct tb_state * st = tb_state_of(buft);
    return st->alignment ? st->alignment : ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type());
}

static size_t tb_max_size(ggml_backend_buffer_type_t buft) {
    const struct tb_state * st = tb_state_of(buft);
    return st->max_size ? st->max_size : SIZE_MAX;
}

static bool tb_is_host(ggml_backend_buffer_type_t buft) {
    (void) buft;
    return true;
}

/* set up t (static storage in the test) as a fresh test buffer type */
static inline ggml_backend_buffer_type_t tb_init(struct tb_buft * t, size_t limit, size_t max_size, size_t alignment) {
    memset(t, 0, sizeof *t);
    t->buft.iface.get_name      = tb_name;
    t->buft.iface.alloc_buffer  = tb_alloc;
    t->buft.iface.get_alignment = tb_alignment;
    t->buft.iface.get_max_size  = tb_max_size;
    t->buft.iface.is_host       = tb_is_host;
    t->buft.context             = t;
    t->st.limit     = limit;
    t->st.max_size  = max_size;
    t->st.alignment = alignment;
    return &t->buft;
}

#endif /* GGMLX_ALLOC_TEST_BUFT_H */
