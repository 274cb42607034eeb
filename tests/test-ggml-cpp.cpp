// test-ggml-cpp.cpp -- the C++ owners of ggml-cpp.h: they compile against our headers with
// upstream's names, free what they own when they go out of scope, and accept being empty.
#include <criterion/criterion.h>

#include "ggml-cpp.h"
#include "ggml-cpu.h"

#include <type_traits>
#include <utility>

static_assert(std::is_same<ggml_context_ptr::pointer, ggml_context *>::value, "ggml_context_ptr owns a ggml_context");
static_assert(std::is_same<gguf_context_ptr::pointer, gguf_context *>::value, "gguf_context_ptr owns a gguf_context");
static_assert(std::is_same<ggml_gallocr_ptr::pointer, ggml_gallocr_t>::value, "ggml_gallocr_ptr owns a gallocr");
static_assert(std::is_same<ggml_backend_ptr::pointer, ggml_backend_t>::value, "ggml_backend_ptr owns a backend");
static_assert(std::is_same<ggml_backend_buffer_ptr::pointer, ggml_backend_buffer_t>::value, "buffer owner");
static_assert(std::is_same<ggml_backend_event_ptr::pointer, ggml_backend_event_t>::value, "event owner");
static_assert(std::is_same<ggml_backend_sched_ptr::pointer, ggml_backend_sched_t>::value, "sched owner");
static_assert(sizeof(ggml_context_ptr) == sizeof(void *), "an empty deleter costs nothing");

Test(ggml_cpp, owners_free_what_they_hold) {
    ggml_init_params params = { 1 << 16, nullptr, false };
    ggml_context_ptr ctx(ggml_init(params));
    cr_assert(ctx != nullptr);
    ggml_tensor * t = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4);
    cr_assert(t != nullptr);

    gguf_context_ptr gguf(gguf_init_empty());
    gguf_set_val_u32(gguf.get(), "n", 4);
    cr_assert_eq(gguf_get_n_kv(gguf.get()), 1);

    ggml_backend_ptr backend(ggml_backend_cpu_init());
    cr_assert(backend != nullptr);
    ggml_backend_buffer_ptr buffer(ggml_backend_alloc_buffer(backend.get(), 1024));
    cr_assert(buffer != nullptr);
    cr_assert_geq(ggml_backend_buffer_get_size(buffer.get()), 1024);
    ggml_gallocr_ptr galloc(ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend.get())));
    cr_assert(galloc != nullptr);

    ggml_context_ptr moved = std::move(ctx);
    cr_assert(ctx == nullptr);
    cr_assert(moved != nullptr);
    /* everything is freed here, in reverse order; ASan builds report any leak */
}

Test(ggml_cpp, empty_owners_are_fine) {
    ggml_context_ptr        a;
    gguf_context_ptr        b;
    ggml_gallocr_ptr        c;
    ggml_backend_ptr        d;
    ggml_backend_buffer_ptr e;
    ggml_backend_event_ptr  f;
    ggml_backend_sched_ptr  g;
    cr_assert(!a && !b && !c && !d && !e && !f && !g);
}
