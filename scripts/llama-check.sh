#!/usr/bin/env bash
# How far does llama.cpp get when built against ggmlx? Fetches the llama-cpp-python sdist (its
# vendor/llama.cpp is llama.cpp at 4df29be4), installs ggmlx into a prefix, builds libllama
# against that install with LLAMA_USE_SYSTEM_GGML=ON and reports configure, compile and link
# results and every ggml/gguf symbol libllama needs that ggmlx does not export.
#
# The missing-symbol list does not depend on how far our build gets: libllama is also built
# against upstream's own ggml (from the same sdist), which always links, and the ggml symbols
# that libllama imports there, less those our libraries define, are the list.
#
# Not a gate: exits 0 whatever llama.cpp does (non-zero only when the harness itself cannot
# run, e.g. no network for the first download). Everything it fetches and builds stays under
# build-llama/ (LLAMA_WORK), which git ignores.
#
# Environment: LLAMA_WORK, GGML_CUDA (default OFF), JOBS; see scripts/llama-common.sh.
set -uo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"

t_start=$SECONDS
REF_BUILD="$LLAMA_WORK/llama-ref"
SYS_BUILD="$LLAMA_WORK/llama-ggmlx"
REPORT="$LLAMA_WORK/report"

# llama.cpp with just libllama: no common library, tools, tests, examples, server, web UI or
# network code. --no-undefined makes the shared library's link fail on every symbol that no
# linked library provides, instead of leaving it for the loader.
# shellcheck disable=SC2317 # called through mapfile in llama_configure
llama_cmake_args() {
    local launcher
    read -r -a launcher <<<"$(llama_launcher_args)"
    printf '%s\n' -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" -DBUILD_SHARED_LIBS=ON \
        -DLLAMA_USE_SYSTEM_GGML=ON -DCMAKE_PREFIX_PATH="$1" \
        -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_MTMD=OFF \
        -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--no-undefined
}

# llama_configure DIR PREFIX: configures llama.cpp in DIR against the ggml install PREFIX.
# shellcheck disable=SC2317 # called through llama_step
llama_configure() {
    local dir=$1 prefix=$2 args gen=()
    mapfile -t args < <(llama_cmake_args "$prefix")
    [ -f "$dir/CMakeCache.txt" ] || gen=(-G Ninja)
    cmake -S "$LLAMA_CPP_DIR" -B "$dir" "${gen[@]}" "${args[@]}"
}

# The object files of libllama in a configured build, one a line.
llama_objects() {
    ninja -C "$1" -t targets all 2>/dev/null |
        sed -n 's|^\(src/CMakeFiles/llama\.dir/[^:]*\.o\):.*|\1|p' | LC_ALL=C sort -u
}

# The shared libllama of a build (the unversioned link name may be missing on a failed link).
llama_lib() {
    find "$1" -name 'libllama.so*' -type f 2>/dev/null | head -n 1
}

echo "llama-check: llama.cpp $LLAMA_CPP_COMMIT (llama-cpp-python $LLAMA_CPP_PY_VERSION) against ggmlx"
echo "work folder: $LLAMA_WORK"
llama_ensure_tools || exit 1
mkdir -p "$LLAMA_WORK" "$REPORT"

echo "[1/5] fetch"
llama_fetch || exit 1

echo "[2/5] ggml installs"
llama_build_ggmlx || exit 1
llama_build_upstream_ggml || exit 1

echo "[3/5] llama.cpp against upstream ggml (reference for the symbol list)"
ref_lib=""
if llama_step "configure" "$REF_BUILD.configure.log" llama_configure "$REF_BUILD" "$UPSTREAM_PREFIX" &&
   llama_step "build libllama" "$REF_BUILD.build.log" cmake --build "$REF_BUILD" --target llama -j"$LLAMA_JOBS"; then
    ref_lib=$(llama_lib "$REF_BUILD")
fi
if [ -z "$ref_lib" ]; then
    echo "error: libllama does not build against its own ggml; the harness cannot compute the list" >&2
    exit 1
fi

echo "[4/5] llama.cpp against ggmlx"
sys_log="$SYS_BUILD.build.log"
configure=FAIL compiled=0 link=FAIL
total=$(llama_objects "$REF_BUILD" | wc -l)
: >"$REPORT/failed-files"
: >"$REPORT/link-undefined"
if llama_step "configure" "$SYS_BUILD.configure.log" llama_configure "$SYS_BUILD" "$GGMLX_PREFIX"; then
    configure=ok
    # Which ggml the configure found, in case another install on the machine came first.
    echo "  ggml package: $(sed -n 's/^ggml_DIR:PATH=//p' "$SYS_BUILD/CMakeCache.txt")"
    # -k 0: compile every file that can be compiled, so the count says how many do. A failure
    # is summarised below rather than shown as the log's tail.
    t0=$SECONDS
    if cmake --build "$SYS_BUILD" --target llama -j"$LLAMA_JOBS" -- -k 0 >"$sys_log" 2>&1; then
        echo "  build libllama: ok ($((SECONDS - t0)) s)"
    else
        echo "  build libllama (keep going): FAILED ($((SECONDS - t0)) s, log: $sys_log)"
    fi
    total=$(llama_objects "$SYS_BUILD" | wc -l)
    # ninja names each failed command's output on a "FAILED:" line (newer ninja adds "[code=N]").
    sed -n 's|^FAILED: \(\[code=[0-9]*\] \)\{0,1\}\(src/CMakeFiles/llama\.dir/[^ ]*\.o\).*|\2|p' "$sys_log" |
        LC_ALL=C sort -u >"$REPORT/failed-files"
    compiled=$((total - $(wc -l <"$REPORT/failed-files")))
    if [ -s "$REPORT/failed-files" ]; then
        link_note="not reached ($(wc -l <"$REPORT/failed-files") files do not compile)"
    elif grep -q '^FAILED: .*libllama' "$sys_log"; then
        link_note="failed"
        grep -o "undefined reference to \`[^']*'" "$sys_log" | sed "s/.*\`//; s/'\$//" |
            LC_ALL=C sort -u >"$REPORT/link-undefined"
    elif [ -n "$(llama_lib "$SYS_BUILD")" ]; then
        link=ok link_note="libllama links with every symbol resolved"
    else
        link_note="not reached"
    fi
else
    link_note="not reached (configure failed)"
fi

# A file stops at its first missing header, so the headers are listed from the sources too.
grep -rhoE '#include [<"](ggml|gguf)[^">]*\.h[">]' "$LLAMA_CPP_DIR/src" "$LLAMA_CPP_DIR/include" |
    sed 's/^#include .//; s/.$//' | LC_ALL=C sort -u >"$REPORT/headers-used"
absent=()
while read -r h; do
    [ -f "$GGMLX_PREFIX/include/$h" ] || absent+=("$h")
done <"$REPORT/headers-used"
echo "  ggml headers libllama includes: $(wc -l <"$REPORT/headers-used"), not installed by ggmlx: ${#absent[@]}${absent[*]:+ (${absent[*]})}"
if [ -s "$REPORT/failed-files" ]; then
    echo "  files that do not compile: $(wc -l <"$REPORT/failed-files") of $total; first error of each, grouped:"
    # The first "error:" line after each file's FAILED line, its location cut off.
    awk '
        /^FAILED: / { want = 1; next }
        want && /error:/ { sub(/^.*error: /, ""); print; want = 0 }
    ' "$sys_log" | LC_ALL=C sort | uniq -c | sort -rn | head -n 20 | sed 's/^/    /'
    echo "  files: $(sed 's|.*/llama\.dir/||; s|\.o$||' "$REPORT/failed-files" | head -n 12 | tr '\n' ' ')$(
        [ "$(wc -l <"$REPORT/failed-files")" -gt 12 ] && echo '...')"
fi
echo "  link: $link_note"
if [ -s "$REPORT/link-undefined" ]; then
    echo "  undefined at link: $(wc -l <"$REPORT/link-undefined") symbols (list: $REPORT/link-undefined)"
fi

echo "[5/5] ggml/gguf symbols libllama needs that ggmlx does not export"
llama_exports "$UPSTREAM_PREFIX" >"$REPORT/upstream-exports"
llama_exports "$GGMLX_PREFIX" >"$REPORT/ggmlx-exports"
nm -D --undefined-only "$ref_lib" | awk '{ print $NF }' | sed 's/@.*//' | LC_ALL=C sort -u \
    >"$REPORT/llama-imports"
LC_ALL=C comm -12 "$REPORT/llama-imports" "$REPORT/upstream-exports" >"$REPORT/needed"
LC_ALL=C comm -23 "$REPORT/needed" "$REPORT/ggmlx-exports" >"$REPORT/missing"
n_needed=$(wc -l <"$REPORT/needed")
n_missing=$(wc -l <"$REPORT/missing")
echo "  libllama imports $n_needed symbols from ggml; ggmlx lacks $n_missing of them:"
# Grouped by family, so the list reads as the work left.
for fam in 'gguf_' 'ggml_opt_' 'ggml_backend_' 'ggml_quantize' 'ggml_'; do
    grep "^$fam" "$REPORT/missing" >"$REPORT/fam" || true
    if [ "$fam" = ggml_ ]; then
        grep -v -E '^(ggml_opt_|ggml_backend_|ggml_quantize)' "$REPORT/fam" >"$REPORT/fam2" || true
        mv "$REPORT/fam2" "$REPORT/fam"
    fi
    [ -s "$REPORT/fam" ] || continue
    echo "  ${fam}* ($(wc -l <"$REPORT/fam")):"
    fmt -w 100 <(tr '\n' ' ' <"$REPORT/fam") | sed 's/^/    /'
done
grep -v -E '^(ggml_|gguf_)' "$REPORT/missing" | sed 's/^/  other: /'
rm -f "$REPORT/fam"

echo "took $((SECONDS - t_start)) s; logs: $LLAMA_WORK/*.log, lists: $REPORT/"
echo "llama-check: configure $configure, compile $compiled of $total files, link $link, $n_missing ggml/gguf symbols missing"
exit 0
