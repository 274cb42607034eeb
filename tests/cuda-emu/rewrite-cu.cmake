# rewrite-cu.cmake -- turns one cuda/*.cu file into C++ the host compiler takes, for the kernel
# emulator: cmake -DIN=<file.cu> -DOUT=<file.cpp> -P rewrite-cu.cmake
#
# Two rewrites, each keeping the line count so that #line points messages at the .cu file:
#   kernel<<<grid, block, shmem, stream>>>(args)  ->  ggmlx_emu::launch(kernel, grid, block, shmem, stream)(args)
#   extern __shared__ T name[];                    ->  T * name = static_cast<T *>(ggmlx_emu::dyn_shmem());
# A launch must sit on one line (every one in cuda/ does); one that does not is left as it is
# and fails to compile, rather than being rewritten wrongly.

file(READ "${IN}" text)
string(REGEX REPLACE
    "([A-Za-z_][A-Za-z0-9_]*(<[A-Za-z0-9_, ]*>)?)<<<([^\n]*)>>>\\("
    "ggmlx_emu::launch(\\1, \\3)("
    text "${text}")
string(REGEX REPLACE
    "extern[ \t]+__shared__[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\\[[ \t]*\\][ \t]*;"
    "\\1 * \\2 = static_cast<\\1 *>(ggmlx_emu::dyn_shmem());"
    text "${text}")
if(text MATCHES "<<<")
    message(FATAL_ERROR "${IN}: a kernel launch the emulator's rewrite does not recognise")
endif()
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
