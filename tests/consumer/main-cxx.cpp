// A C++ program against an installed ggmlx: ggml-cpp.h's owners free a context and a GGUF
// context. Exit status 0 on success.
#include "ggml-cpp.h"

#include <cstdio>

int main() {
    ggml_init_params params = { 1 << 16, nullptr, false };
    ggml_context_ptr ctx(ggml_init(params));
    gguf_context_ptr gguf(gguf_init_empty());
    const bool ok = ctx && gguf && ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, 4) != nullptr;
    std::printf("consumer-cxx: %s\n", ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
