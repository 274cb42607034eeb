# shellcheck shell=bash
# Sourced by the llama-*.sh scripts and bench-gguf-upstream.sh: fetches llama.cpp (the copy
# vendored in the llama-cpp-python sdist) and builds the two ggml installs the scripts compare, ours and
# upstream's. Everything lands under $LLAMA_WORK (default build-llama/, git-ignored); nothing
# of upstream's code enters the tree. Each step is skipped when its result is already there.
#
# Needs GGMLX_ROOT set and scripts/deps.sh sourced.
#
# Environment: LLAMA_WORK (work folder), GGML_CUDA (ggmlx's CUDA backend, default OFF),
# CMAKE_ARGS (extra arguments for ggmlx's configure), JOBS (parallel build jobs).

LLAMA_CPP_PY_VERSION=0.3.35
# The vendored llama.cpp of that sdist is llama.cpp at this commit; its ggml headers are the API
# ggmlx implements.
# shellcheck disable=SC2034 # read by the scripts that source this file
LLAMA_CPP_COMMIT=4df29be4

LLAMA_WORK=${LLAMA_WORK:-$GGMLX_ROOT/build-llama}
LLAMA_SDIST_DIR="$LLAMA_WORK/dl"
LLAMA_SRC_DIR="$LLAMA_WORK/src/llama_cpp_python-$LLAMA_CPP_PY_VERSION"
LLAMA_CPP_DIR="$LLAMA_SRC_DIR/vendor/llama.cpp"
GGMLX_PREFIX="$LLAMA_WORK/ggmlx-prefix"
UPSTREAM_PREFIX="$LLAMA_WORK/up-ggml-prefix"
LLAMA_JOBS=${JOBS:-$(ggmlx_nproc)}

# A Python that has gguf and numpy: LLAMA_PYTHON, CI's venv, then python3.
pick_python() {
    local py
    for py in "${LLAMA_PYTHON:-}" "$GGMLX_ROOT/.ci-venv/bin/python" python3; do
        [ -n "$py" ] || continue
        if "$py" -c 'import gguf, numpy' 2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

# lower NAME: a type's name as it appears in file names.
lower() { echo "$1" | tr '[:upper:]' '[:lower:]'; }

# Compiler launcher arguments for cmake: ccache when there is one (rebuilds of the same
# llama.cpp sources are then nearly free).
llama_launcher_args() {
    if command -v ccache >/dev/null 2>&1; then
        echo "-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
    fi
}

# llama_step NAME LOG CMD...: runs CMD with its output in LOG; on failure shows the log's tail.
llama_step() {
    local name=$1 log=$2; shift 2
    local t0=$SECONDS
    if "$@" >"$log" 2>&1; then
        echo "  $name: ok ($((SECONDS - t0)) s)"
        return 0
    fi
    echo "  $name: FAILED ($((SECONDS - t0)) s, log: $log)"
    tail -n 30 "$log" | sed 's/^/    | /'
    return 1
}

# The tools every step needs: a C/C++ toolchain, cmake, ninja, nm, and pip to fetch the sdist.
llama_ensure_tools() {
    local extra=()
    command -v nm >/dev/null 2>&1 || extra+=(binutils)
    command -v tar >/dev/null 2>&1 || extra+=(tar)
    command -v python3 >/dev/null 2>&1 || extra+=(python3)
    if ! python3 -m pip --version >/dev/null 2>&1; then
        extra+=(python3-pip)
    fi
    ggmlx_build_tools "${extra[@]}"
}

# Downloads the sdist with pip (reused when present) and unpacks it.
llama_fetch() {
    local tarball="$LLAMA_SDIST_DIR/llama_cpp_python-$LLAMA_CPP_PY_VERSION.tar.gz"
    mkdir -p "$LLAMA_SDIST_DIR" "$LLAMA_WORK/src"
    if [ ! -s "$tarball" ]; then
        llama_step "download llama-cpp-python==$LLAMA_CPP_PY_VERSION (sdist)" "$LLAMA_WORK/download.log" \
            python3 -m pip download --no-deps --no-binary :all: \
                "llama-cpp-python==$LLAMA_CPP_PY_VERSION" -d "$LLAMA_SDIST_DIR" || return 1
    else
        echo "  sdist: reused $tarball"
    fi
    if [ ! -f "$LLAMA_SRC_DIR/.unpacked" ]; then
        rm -rf "$LLAMA_SRC_DIR"
        llama_step "unpack" "$LLAMA_WORK/unpack.log" tar -xzf "$tarball" -C "$LLAMA_WORK/src" || return 1
        touch "$LLAMA_SRC_DIR/.unpacked"
    fi
    if [ ! -f "$LLAMA_CPP_DIR/CMakeLists.txt" ] || [ ! -f "$LLAMA_CPP_DIR/ggml/include/ggml.h" ]; then
        echo "error: $LLAMA_CPP_DIR is not a llama.cpp tree with ggml (unexpected sdist layout)" >&2
        return 1
    fi
    # The sdist leaves out ggml/ggml.pc.in, which ggml's own CMakeLists reads when ggml is built on
    # its own; a stand-in lets that configure run (its pkg-config file is never used here).
    if [ ! -f "$LLAMA_CPP_DIR/ggml/ggml.pc.in" ]; then
        # shellcheck disable=SC2016 # ${prefix} is pkg-config's, not the shell's
        printf '%s\n' 'prefix=@CMAKE_INSTALL_PREFIX@' 'Name: ggml' \
            'Description: stand-in written by ggmlx scripts/llama-common.sh' \
            'Version: @GGML_VERSION@' 'Libs: -L${prefix}/lib -lggml -lggml-base' \
            'Cflags: -I${prefix}/include' >"$LLAMA_CPP_DIR/ggml/ggml.pc.in"
    fi
}

# Builds ggmlx (Release, libraries only) and installs it into $GGMLX_PREFIX. The prefix is
# emptied first so that a header or library removed from the tree does not linger there.
llama_build_ggmlx() {
    local b="$LLAMA_WORK/ggmlx-build"
    local launcher extra
    read -r -a launcher <<<"$(llama_launcher_args)"
    read -r -a extra <<<"${CMAKE_ARGS:-}"
    mkdir -p "$b"
    llama_step "ggmlx configure" "$b/configure.log" \
        ggmlx_configure "$b" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
            -DCMAKE_INSTALL_PREFIX="$GGMLX_PREFIX" -DGGML_CUDA="${GGML_CUDA:-OFF}" \
            -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_TOOLS=OFF -DGGML_BUILD_BENCH=OFF "${extra[@]}" || return 1
    llama_step "ggmlx build" "$b/build.log" cmake --build "$b" -j"$LLAMA_JOBS" || return 1
    rm -rf "$GGMLX_PREFIX"
    llama_step "ggmlx install" "$b/install.log" cmake --install "$b" || return 1
}

# Builds upstream's ggml as vendored in the sdist (CPU only, Release) into $UPSTREAM_PREFIX.
llama_build_upstream_ggml() {
    local b="$LLAMA_WORK/up-ggml-build"
    local launcher gen=()
    read -r -a launcher <<<"$(llama_launcher_args)"
    [ -f "$b/CMakeCache.txt" ] || gen=(-G Ninja)
    mkdir -p "$b"
    llama_step "upstream ggml configure" "$b/configure.log" \
        cmake -S "$LLAMA_CPP_DIR/ggml" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
            -DCMAKE_INSTALL_PREFIX="$UPSTREAM_PREFIX" -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=OFF \
            -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF || return 1
    llama_step "upstream ggml build" "$b/build.log" cmake --build "$b" -j"$LLAMA_JOBS" || return 1
    rm -rf "$UPSTREAM_PREFIX"
    llama_step "upstream ggml install" "$b/install.log" cmake --install "$b" || return 1
}

# llama_exports PREFIX: every function and object the shared libraries under PREFIX define,
# one name a line, sorted (symbol versions stripped).
llama_exports() {
    local lib
    for lib in "$1"/lib*/libggml*.so; do
        [ -e "$lib" ] || continue
        nm -D --defined-only "$lib" | awk 'NF >= 3 && $2 ~ /^[TtDdBbRrWwVvi]$/ { print $3 }'
    done | sed 's/@.*//' | LC_ALL=C sort -u
}

# The llama.cpp programs llama-compare.sh runs; the sdist's llama.cpp has llama-completion as its
# plain text-generation program.
# shellcheck disable=SC2034 # read by the scripts that source this file
LLAMA_TOOL_TARGETS=(llama-completion llama-perplexity llama-bench llama-quantize test-backend-ops)

# llama_configure_tools DIR PREFIX: configures llama.cpp in DIR against the ggml install PREFIX,
# with the common library, tools and tests (only LLAMA_TOOL_TARGETS are built from it), and no
# server, web UI, examples or network code. The rpath points at PREFIX, so the programs run the
# ggml they were built against without LD_LIBRARY_PATH; it is an old-style DT_RPATH (not
# RUNPATH) because only that one also serves the libraries' own dependencies (libggml loading
# libggml-cpu, whose install carries no rpath).
llama_configure_tools() {
    local dir=$1 prefix=$2 launcher gen=()
    read -r -a launcher <<<"$(llama_launcher_args)"
    [ -f "$dir/CMakeCache.txt" ] || gen=(-G Ninja)
    cmake -S "$LLAMA_CPP_DIR" -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
        -DBUILD_SHARED_LIBS=ON -DLLAMA_USE_SYSTEM_GGML=ON -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -Dggml_DIR="$prefix/lib/cmake/ggml" \
        -DCMAKE_BUILD_RPATH="$prefix/lib" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
        -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags \
        -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_MTMD=OFF -DLLAMA_CURL=OFF
}

# llama_build_tools DIR [NINJA_ARGS...]: builds LLAMA_TOOL_TARGETS (or the targets the array
# LLAMA_BUILD_TARGETS names, when set) in a configured DIR.
llama_build_tools() {
    local dir=$1; shift
    local targets=("${LLAMA_TOOL_TARGETS[@]}")
    [ -n "${LLAMA_BUILD_TARGETS+x}" ] && targets=("${LLAMA_BUILD_TARGETS[@]}")
    cmake --build "$dir" --target "${targets[@]}" -j"$LLAMA_JOBS" -- "$@"
}
