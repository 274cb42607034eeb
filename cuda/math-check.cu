// math-check.cu -- proves that the shared per-element math (src/core/ggml-math.h and the
// headers it includes) is valid CUDA C++: a kernel calls every `static inline GGMLX_HD`
// function, so nvcc compiles each one for the device as well as for the host, with every
// warning an error. It is compiled only (an OBJECT library), never linked or run.
//
// The list of functions, math-check-calls.inc, is generated at configure time by
// cuda/CMakeLists.txt from the headers; each line is GGMLX_MC(function_name). Arguments are
// made up from the parameter types (numbers, zeroed scratch for pointers, value-initialised
// structs), so a new function needs no edit here.

#if __has_include("ggml-math.h")
#include "ggml-math.h"
#define GGMLX_MC_HAVE_MATH 1
#else
#define GGMLX_MC_HAVE_MATH 0
#endif

#include <stdint.h>
#include <string.h>
#include <type_traits>

namespace {

// Turns into whatever a parameter needs: arithmetic types from the kernel's inputs,
// pointers into zeroed per-thread scratch, anything else value-initialised.
struct mc_arg {
    float                  x;
    int                    i;
    unsigned char        * scratch;

    template <typename T>
    __device__ operator T() const {
        if constexpr (std::is_pointer_v<T>) {
            return reinterpret_cast<T>(scratch);
        } else if constexpr (std::is_same_v<T, bool>) {
            return (i & 1) != 0;
        } else if constexpr (std::is_floating_point_v<T>) {
            return static_cast<T>(x);
        } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
            return static_cast<T>(i);
        } else {
            return T{};
        }
    }
};

template <typename R>
__device__ float mc_fold(const R & r) {
    if constexpr (std::is_arithmetic_v<R>) {
        return static_cast<float>(r);
    } else {
        unsigned char bytes[sizeof(R) < 16 ? sizeof(R) : 16];
        memcpy(bytes, &r, sizeof(bytes));
        float acc = 0.0f;
        for (unsigned k = 0; k < sizeof(bytes); ++k) {
            acc += static_cast<float>(bytes[k]);
        }
        return acc;
    }
}

template <typename R, typename... A>
__device__ float mc_call(R (*fn)(A...), const mc_arg & arg) {
    if constexpr (std::is_void_v<R>) {
        fn(static_cast<A>(arg)...);
        return 0.0f;
    } else {
        return mc_fold(fn(static_cast<A>(arg)...));
    }
}

} // namespace

extern "C" __global__ void ggmlx_math_check_kernel(const float * x, const int * iv, float * out, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) {
        return;
    }
    alignas(16) unsigned char scratch[256];
    memset(scratch, 0, sizeof(scratch));
    const mc_arg arg = { x[t], iv[t], scratch };
    float acc = 0.0f;
#if GGMLX_MC_HAVE_MATH
#define GGMLX_MC(fn) acc += mc_call(&fn, arg);
#include "math-check-calls.inc"
#undef GGMLX_MC
#endif
    (void) arg;
    out[t] = acc;
}
