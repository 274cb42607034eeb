#!/usr/bin/env bash
# Builds ggmlx and runs the test suite (Criterion + CTest).
#
#   scripts/test.sh
#
# Environment:
#   BUILD_DIR   build directory (default: build)
#   BUILD_TYPE  CMAKE_BUILD_TYPE (default: Release; CMAKE_ARGS may override it)
#   GGML_CUDA   AUTO (default), ON or OFF
#   CMAKE_ARGS  extra arguments for the configure step (split on whitespace)
#   CTEST_ARGS  extra arguments for ctest (split on whitespace), e.g. "-R test-core"
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"

BUILD_DIR=${BUILD_DIR:-build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$GGMLX_ROOT/$BUILD_DIR" ;; esac

# Criterion: the Debian package, unless pkg-config already finds one.
if pkg-config --exists criterion 2>/dev/null; then
    ggmlx_build_tools
else
    ggmlx_build_tools libcriterion-dev
fi

read -r -a extra_cmake <<< "${CMAKE_ARGS:-}"
read -r -a extra_ctest <<< "${CTEST_ARGS:-}"
jobs=$(ggmlx_nproc)

ggmlx_configure "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
    -DGGML_CUDA="${GGML_CUDA:-AUTO}" \
    -DGGML_BUILD_TESTS=ON \
    "${extra_cmake[@]}"
cmake --build "$BUILD_DIR" -j"$jobs"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j2 --timeout 300 "${extra_ctest[@]}"
