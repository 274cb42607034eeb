// test-abi-cxx.cpp -- the ABI test compiled as C++17: upstream's headers are used from C++
// (llama.cpp, whisper.cpp), so ours must compile there and give the same types and numbers.
#include "test-abi.c"
