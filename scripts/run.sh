#!/usr/bin/env bash
# Builds ggmlx (Release, no tests) into build-release/ and runs the demo program.
# Arguments are passed to ggml-demo.
#
# Environment: GGML_CUDA (AUTO, ON, OFF), CMAKE_ARGS (extra configure arguments).
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"

BUILD_DIR="$GGMLX_ROOT/build-release"

ggmlx_build_tools

read -r -a extra_cmake <<< "${CMAKE_ARGS:-}"

# The build's output goes to a log (shown if it fails), so stdout is the demo's.
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/run-build.log"
if ! { ggmlx_configure "$BUILD_DIR" \
           -DCMAKE_BUILD_TYPE=Release \
           -DGGML_CUDA="${GGML_CUDA:-AUTO}" \
           -DGGML_BUILD_TESTS=OFF \
           -DGGML_BUILD_BENCH=OFF \
           -DGGML_BUILD_TOOLS=ON \
           "${extra_cmake[@]}" &&
       cmake --build "$BUILD_DIR" -j"$(ggmlx_nproc)" --target ggml-demo; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: build failed (log: $log)" >&2
    exit 1
fi
exec "$BUILD_DIR/bin/ggml-demo" "$@"
