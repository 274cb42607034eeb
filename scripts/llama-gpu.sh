#!/usr/bin/env bash
# Does llama.cpp on a ggmlx install give upstream's CPU logits with its layers on a device? For
# a machine with a GPU and no network (scripts/gpu-check.sh runs it on the CUDA build): everything
# it reads comes from .llama-gpu/, which scripts/llama-gpu-pack.sh writes where the network is.
#
#   scripts/llama-gpu.sh PREFIX
#
# PREFIX is a ggmlx install (`cmake --install BUILD --prefix PREFIX`). The script unpacks the
# pack's trimmed llama.cpp, configures it against PREFIX (LLAMA_USE_SYSTEM_GGML=ON, Ninja, an
# rpath to PREFIX/lib) and builds llama-perplexity; then, for each model of the pack (F16, Q8_0,
# Q4_0) with flash attention off and on, runs it with -ngl 99 against upstream's CPU base of the
# same setting (--kl-divergence) and judges mean KLD, maximum KLD and same-top-token share with
# the pack's thresholds (upstream's own noise floor, see llama-gpu-pack.sh). Each case line names
# the buffers llama.cpp put the model's weights in ("model buffer" lines of its log), so a run
# that quietly stayed on the CPU shows. Last line: "N passed, N failed".
#
# Environment:
#   LLAMA_GPU_PACK            the pack (default .llama-gpu)
#   LLAMA_GPU_WORK            unpacked sources, build and logs (default build-llama-gpu)
#   LLAMA_GPU_ARGS            extra llama-perplexity arguments for every case (default none),
#                             e.g. "-sm layer" or "-dev CUDA0"
#   LLAMA_GPU_REQUIRE_DEVICE  a device that must hold model weights (e.g. CUDA0): a case whose
#                             log has no "DEVICE model buffer" line fails
#   JOBS                      build jobs (default: every core)
# Exit: 0 every case passed, 1 a build or case failed, 2 bad usage, 3 no pack (nothing run).
set -uo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/llama-kld.sh
. "$GGMLX_ROOT/scripts/llama-kld.sh"

case ${1:-} in
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") echo "usage: scripts/llama-gpu.sh PREFIX (a ggmlx install; see --help)" >&2; exit 2 ;;
esac
[ $# -eq 1 ] || { echo "error: one argument, the ggmlx install prefix (see --help)" >&2; exit 2; }
PREFIX=$(cd "$1" 2>/dev/null && pwd) || { echo "error: no folder $1" >&2; exit 2; }
if [ ! -f "$PREFIX/lib/cmake/ggml/ggml-config.cmake" ]; then
    echo "error: $PREFIX is not a ggml install (no lib/cmake/ggml/ggml-config.cmake)" >&2
    exit 2
fi

PACK=${LLAMA_GPU_PACK:-$GGMLX_ROOT/.llama-gpu}
WORK=${LLAMA_GPU_WORK:-$GGMLX_ROOT/build-llama-gpu}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
REQUIRE=${LLAMA_GPU_REQUIRE_DEVICE:-}
read -r -a EXTRA <<<"${LLAMA_GPU_ARGS:-}"
t_start=$SECONDS

for f in llama.cpp.tar.gz thresholds.txt pack.txt prose.txt; do
    if [ ! -f "$PACK/$f" ]; then
        echo "llama-gpu: skipped: no pack at $PACK (missing $f); make it where the network is with"
        echo "  scripts/llama-gpu-pack.sh"
        echo "and carry .llama-gpu to this machine"
        exit 3
    fi
done
CTX=$(sed -n 's/^ctx //p' "$PACK/pack.txt")
CHUNKS=$(sed -n 's/^chunks //p' "$PACK/pack.txt")
echo "llama-gpu: $(head -n 1 "$PACK/pack.txt") on $PREFIX"
echo "  window: -c $CTX --chunks $CHUNKS; extra arguments: ${EXTRA[*]:-none}${REQUIRE:+; required device: $REQUIRE}"

n_pass=0 n_fail=0
result() { # NAME pass|FAIL DETAIL
    printf '  %-22s %-4s %s\n' "$1" "$2" "$3"
    if [ "$2" = pass ]; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); fi
}
finish() {
    echo "llama-gpu: $((SECONDS - t_start)) s, logs under $WORK/logs"
    echo "$n_pass passed, $n_fail failed"
    [ "$n_fail" -eq 0 ]
    exit $?
}

# --- build ----------------------------------------------------------------------------------
# The sources are unpacked again only when the pack's tarball changed, so that a kept build
# folder rebuilds nothing.
mkdir -p "$WORK/logs"
src="$WORK/src/llama.cpp"
stamp=$(cksum <"$PACK/llama.cpp.tar.gz")
if [ ! -f "$WORK/src/.stamp" ] || [ "$(cat "$WORK/src/.stamp")" != "$stamp" ]; then
    rm -rf "$WORK/src"
    mkdir -p "$WORK/src"
    if ! tar -xzf "$PACK/llama.cpp.tar.gz" -C "$WORK/src"; then
        result build FAIL "could not unpack $PACK/llama.cpp.tar.gz"
        finish
    fi
    echo "$stamp" >"$WORK/src/.stamp"
fi
bdir="$WORK/build"
gen=() launcher=()
[ -f "$bdir/CMakeCache.txt" ] || gen=(-G Ninja)
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
t0=$SECONDS
# As scripts/llama-common.sh's llama_configure_tools: the rpath (an old-style DT_RPATH, which
# also serves libggml's own dependencies) points at PREFIX/lib.
if ! cmake -S "$src" -B "$bdir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
        -DBUILD_SHARED_LIBS=ON -DLLAMA_USE_SYSTEM_GGML=ON -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -Dggml_DIR="$PREFIX/lib/cmake/ggml" \
        -DCMAKE_BUILD_RPATH="$PREFIX/lib" -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \
        -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags \
        -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_MTMD=OFF -DLLAMA_CURL=OFF \
        >"$WORK/logs/configure.log" 2>&1; then
    tail -n 20 "$WORK/logs/configure.log" | sed 's/^/    | /'
    result build FAIL "configure failed (log: $WORK/logs/configure.log)"
    finish
fi
if ! cmake --build "$bdir" --target llama-perplexity -j"$JOBS" >"$WORK/logs/build.log" 2>&1; then
    grep -m 10 -E 'error|undefined reference' "$WORK/logs/build.log" | sed 's/^/    | /'
    result build FAIL "llama-perplexity did not build (log: $WORK/logs/build.log)"
    finish
fi
result build pass "llama-perplexity against $PREFIX ($((SECONDS - t0)) s, $JOBS jobs)"
PPL="$bdir/bin/llama-perplexity"

# --- cases ----------------------------------------------------------------------------------
lower() { echo "$1" | tr '[:upper:]' '[:lower:]'; }
mkdir -p "$WORK/bases"
while read -r type lm lx lt fm fx ft; do
    case $type in '#'*|'') continue ;; esac
    f=$(lower "$type")
    model="$PACK/models/llama-gpu-$f.gguf"
    for c in fa0 fa1; do
        fa=off
        [ "$c" = fa1 ] && fa=on
        name="$type fa-$fa"
        base="$WORK/bases/$f-$c.kld"
        log="$WORK/logs/$f-$c.log"
        if [ ! -f "$model" ] || ! gzip -dc "$PACK/bases/$f-$c.kld.gz" >"$base" 2>/dev/null; then
            result "$name" FAIL "the pack lacks $model or its base $f-$c.kld.gz"
            continue
        fi
        t0=$SECONDS
        # -lv 4: llama.cpp's "model buffer" lines (where the weights went) are info-level
        if ! s=$(kld_run "$log" "$PPL" -m "$model" -f "$PACK/prose.txt" -c "$CTX" --chunks "$CHUNKS" --no-warmup \
                -lv 4 -ngl 99 -fa "$fa" ${EXTRA[@]+"${EXTRA[@]}"} --kl-divergence-base "$base" --kl-divergence); then
            grep -v '^[0-9.]* [ID] ' "$log" | tail -n 8 | sed 's/^/    | /'
            result "$name" FAIL "llama-perplexity failed (log: $log)"
            continue
        fi
        bufs=$(sed -n 's/.* \([A-Za-z0-9_]*\) model buffer size = *\([0-9.]*\) MiB.*/\1 \2/p' "$log" |
            awk '{ printf "%s%s %s MiB", (NR > 1 ? ", " : ""), $1, $2 }')
        read -r mean max top <<<"$s"
        verdict=$(awk -v m="$mean" -v x="$max" -v t="$top" -v lm="$lm" -v lx="$lx" -v lt="$lt" \
            'BEGIN { print ((m + 0 <= lm + 0 && x + 0 <= lx + 0 && t + 0 >= lt + 0) ? "pass" : "FAIL") }')
        detail="KLD $mean / max $max / top $top% (limits $lm / $lx / $lt%; floor $fm / $fx / $ft%), $((SECONDS - t0)) s; weights: ${bufs:-none reported}"
        if [ -n "$REQUIRE" ] && ! grep -q " $REQUIRE model buffer size" "$log"; then
            verdict=FAIL
            detail="no '$REQUIRE model buffer' line: the model did not go to $REQUIRE; $detail"
        fi
        result "$name" "$verdict" "$detail"
    done
done <"$PACK/thresholds.txt"
finish
