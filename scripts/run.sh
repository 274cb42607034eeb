#!/usr/bin/env bash
# Builds ggmlx (Release: the libraries and the programs, no tests) into build-release/ and runs
# the demo program. Arguments are passed to ggml-demo. Afterwards
#   cmake --install build-release --prefix DIR
# installs what was built (DIR/bin, DIR/lib, DIR/include, the CMake package and ggml.pc).
#
# Environment: GGML_CUDA (AUTO, ON, OFF), CMAKE_ARGS (extra configure arguments).
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"

BUILD_DIR="$GGMLX_ROOT/build-release"

ggmlx_build_tools

read -r -a extra_cmake <<< "${CMAKE_ARGS:-}"

# The build's output goes to a log (shown if it fails), so stdout is the demo's; what happens
# meanwhile is said on stderr.
say() { echo "run.sh: $*" >&2; }
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/run-build.log"
fail() {
    cat "$log" >&2
    echo "error: build failed (log: $log)" >&2
    exit 1
}

say "configuring a Release build in ${BUILD_DIR#"$PWD"/} (GGML_CUDA=${GGML_CUDA:-AUTO}; log: $log)"
ggmlx_configure "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA="${GGML_CUDA:-AUTO}" \
    -DGGML_BUILD_TESTS=OFF \
    -DGGML_BUILD_BENCH=OFF \
    -DGGML_BUILD_TOOLS=ON \
    "${extra_cmake[@]}" >"$log" 2>&1 || fail

# the configure summary names the backends ("backends: cpu;cuda")
if grep -q 'backends: [a-z;]*cuda' "$log"; then
    say "building the libraries (with the CUDA backend: nvcc takes most of the time;" \
        "GGML_CUDA=OFF skips it) and the programs"
else
    say "building the libraries (CPU backend; no CUDA: GGML_CUDA=${GGML_CUDA:-AUTO}, nvcc not used) and the programs"
fi
t0=$(date +%s)
# everything `cmake --install` installs: the libraries and every program of src/tools
cmake --build "$BUILD_DIR" -j"$(ggmlx_nproc)" >>"$log" 2>&1 || fail
say "built in $(($(date +%s) - t0)) s: programs in ${BUILD_DIR#"$PWD"/}/bin, libraries in ${BUILD_DIR#"$PWD"/}/lib;" \
    "running ggml-demo"
exec "$BUILD_DIR/bin/ggml-demo" "$@"
