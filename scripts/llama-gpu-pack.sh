#!/usr/bin/env bash
# Writes .llama-gpu/ (git-ignored): everything scripts/llama-gpu.sh needs to check llama.cpp on
# ggmlx's CUDA backend on a machine with a GPU but no network and no Python packages. Run it
# here, where the network (for the llama-cpp-python sdist) and upstream's CPU build are; then
# name .llama-gpu in the device tool's `carry` list.
#
#   scripts/llama-gpu-pack.sh
#
# The pack holds:
#   llama.cpp.tar.gz   the sdist's llama.cpp, trimmed to what `cmake -DLLAMA_USE_SYSTEM_GGML=ON`
#                      and the llama-perplexity target need (no ggml, models, docs, tests,
#                      examples; a tools/CMakeLists.txt of our own that adds only perplexity)
#   models/            llama-gpu-{f16,q8_0,q4_0}.gguf: scripts/llama-tiny-model.py --size gpu,
#                      quantized with upstream's llama-quantize
#   bases/             TYPE-fa0.kld.gz, TYPE-fa1.kld.gz: upstream's CPU log-probabilities
#                      (llama-perplexity --kl-divergence-base, flash attention off / on)
#   prose.txt          the text the bases score (a copy of tests/llama/prose.txt)
#   thresholds.txt     per type: the limits a case must meet, and upstream's CPU noise floor
#   pack.txt           how the pack was made (llama.cpp commit, window, sizes)
#
# Thresholds come from the noise floor exactly as in scripts/llama-compare.sh: per type, the
# worst of upstream-vs-upstream comparisons (1 vs 2 threads with flash attention off and on,
# flash attention on vs off), times KLD_FACTOR / TOP_FACTOR, never under the minimums.
#
# Environment: LLAMA_WORK, JOBS (scripts/llama-common.sh; the sdist and upstream's llama.cpp
# build are reused from there, built when missing); LLAMA_PYTHON (a Python with gguf==0.19.0 and
# numpy); LLAMA_GPU_PACK (output folder, default .llama-gpu); LLAMA_GPU_CTX (104) and
# LLAMA_GPU_CHUNKS (2): the scored window, 102 tokens (llama-perplexity prints no statistics
# under 100: it scores the second half of each chunk; each scored token costs 64 KiB of base, 32000
# log-probabilities); KLD_FACTOR, TOP_FACTOR, KLD_MEAN_MIN, KLD_MAX_MIN, TOP_MISS_MIN (as in
# llama-compare.sh).
set -uo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"
# shellcheck source=scripts/llama-kld.sh
. "$GGMLX_ROOT/scripts/llama-kld.sh"

case ${1:-} in
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac

PACK=${LLAMA_GPU_PACK:-$GGMLX_ROOT/.llama-gpu}
CTX=${LLAMA_GPU_CTX:-104}
CHUNKS=${LLAMA_GPU_CHUNKS:-2}
KLD_FACTOR=${KLD_FACTOR:-4}
TOP_FACTOR=${TOP_FACTOR:-2}
KLD_MEAN_MIN=${KLD_MEAN_MIN:-0.0001}
KLD_MAX_MIN=${KLD_MAX_MIN:-0.002}
TOP_MISS_MIN=${TOP_MISS_MIN:-1.0}
TYPES=(F16 Q8_0 Q4_0)
TEXT="$GGMLX_ROOT/tests/llama/prose.txt"
UP_BUILD="$LLAMA_WORK/llama-up"
UP_BIN="$UP_BUILD/bin"
t_start=$SECONDS

echo "llama-gpu-pack: llama.cpp $LLAMA_CPP_COMMIT (llama-cpp-python $LLAMA_CPP_PY_VERSION) -> $PACK"
PY=$(pick_python) || { echo "error: no Python with gguf and numpy (set LLAMA_PYTHON)" >&2; exit 1; }
llama_fetch || exit 1

# Upstream's llama.cpp on upstream's CPU ggml writes the bases and quantizes; reused when built.
if [ ! -x "$UP_BIN/llama-perplexity" ] || [ ! -x "$UP_BIN/llama-quantize" ]; then
    llama_ensure_tools || exit 1
    if [ ! -f "$UPSTREAM_PREFIX/lib/cmake/ggml/ggml-config.cmake" ]; then
        llama_build_upstream_ggml || exit 1
    fi
    llama_step "llama.cpp against upstream ggml: configure" "$UP_BUILD.configure.log" \
        llama_configure_tools "$UP_BUILD" "$UPSTREAM_PREFIX" || exit 1
    # shellcheck disable=SC2034 # read by llama_build_tools
    LLAMA_BUILD_TARGETS=(llama-perplexity llama-quantize)
    llama_step "llama.cpp against upstream ggml: build" "$UP_BUILD.build.log" llama_build_tools "$UP_BUILD" || exit 1
else
    echo "  upstream llama.cpp: reused $UP_BIN"
fi

scratch=$(mktemp -d)
new="$PACK.new"
# a failed run leaves neither a half-written pack nor its scratch files
trap 'rm -rf "$scratch" "$new"' EXIT
rm -rf "$new"
mkdir -p "$new/models" "$new/bases"

# --- trimmed llama.cpp ----------------------------------------------------------------------
# What the top-level CMakeLists reads with LLAMA_USE_SYSTEM_GGML=ON, tests, examples and the app
# off: cmake/ (whose common.cmake includes ggml/cmake/common.cmake: of ggml, only that file
# travels), src/, include/, common/ (and the vendored headers it includes, plus cpp-httplib,
# which it adds as a subdirectory), and tools/. Of tools/ only perplexity travels; the
# tools/CMakeLists.txt written here adds just that one.
trim="$scratch/llama.cpp"
mkdir -p "$trim/tools" "$trim/vendor"
(cd "$LLAMA_CPP_DIR" && cp -a CMakeLists.txt LICENSE cmake include src common "$trim/" &&
    cp -a vendor/cpp-httplib vendor/nlohmann vendor/sheredom vendor/stb "$trim/vendor/" &&
    cp -a tools/perplexity "$trim/tools/" && mkdir -p "$trim/ggml/cmake" &&
    cp -a ggml/cmake/common.cmake "$trim/ggml/cmake/") || { echo "error: could not copy the llama.cpp sources" >&2; exit 1; }
printf '%s\n' '# Written by ggmlx scripts/llama-gpu-pack.sh: this trimmed tree carries one tool.' \
    'find_package(Threads REQUIRED)' 'llama_add_compile_flags()' 'add_subdirectory(perplexity)' \
    >"$trim/tools/CMakeLists.txt"
tar -czf "$new/llama.cpp.tar.gz" -C "$scratch" llama.cpp || exit 1
echo "  trimmed llama.cpp: $(du -k "$new/llama.cpp.tar.gz" | cut -f1) KiB"

# --- models ---------------------------------------------------------------------------------
VOCAB="$LLAMA_CPP_DIR/models/ggml-vocab-llama-spm.gguf"
"$PY" "$GGMLX_ROOT/scripts/llama-tiny-model.py" --vocab "$VOCAB" --out "$new/models" --size gpu --types f16 \
    >"$scratch/model.log" 2>&1 || { cat "$scratch/model.log"; exit 1; }
for t in Q8_0 Q4_0; do
    "$UP_BIN/llama-quantize" "$new/models/llama-gpu-f16.gguf" "$new/models/llama-gpu-$(lower "$t").gguf" "$t" 2 \
        >"$scratch/quant-$t.log" 2>&1 || { tail -n 20 "$scratch/quant-$t.log"; exit 1; }
done
cp "$TEXT" "$new/prose.txt"

# --- bases and noise floor ------------------------------------------------------------------
# ppl ARGS...: upstream's llama-perplexity on the pack's window
ppl() {
    "$UP_BIN/llama-perplexity" -f "$TEXT" -c "$CTX" --chunks "$CHUNKS" --no-warmup "$@"
}
{
    echo "# llama-gpu pack thresholds: a case of TYPE passes when mean KLD <= mean_limit, max KLD <= max_limit"
    echo "# and same-top % >= top_limit. floor_*: upstream's CPU against itself (worst of 1 vs 2 threads, fa on vs off)."
    echo "# type mean_limit max_limit top_limit floor_mean floor_max floor_top"
} >"$new/thresholds.txt"
echo "  upstream CPU noise floor (mean KLD, max KLD, same top %):"
for t in "${TYPES[@]}"; do
    f=$(lower "$t")
    m="$new/models/llama-gpu-$f.gguf"
    fm=0 fx=0 ft=100
    for c in fa0 fa1; do
        fa=off
        [ "$c" = fa1 ] && fa=on
        base="$scratch/$f-$c.kld"
        ppl -m "$m" -t 2 -fa "$fa" --kl-divergence-base "$base" >"$scratch/$f-$c-base.log" 2>&1 ||
            { tail -n 20 "$scratch/$f-$c-base.log"; echo "error: upstream's llama-perplexity failed ($t $c)" >&2; exit 1; }
        runs=("threads-1|-t 1 -fa $fa")
        [ "$c" = fa0 ] && runs+=("fa-on|-t 2 -fa on")
        for r in "${runs[@]}"; do
            name=${r%%|*}
            read -r -a a <<<"${r#*|}"
            log="$scratch/$f-$c-$name.log"
            if ! s=$(kld_run "$log" ppl -m "$m" "${a[@]}" --kl-divergence-base "$base" --kl-divergence); then
                tail -n 20 "$log"
                echo "error: upstream's floor run failed ($t $c $name)" >&2
                exit 1
            fi
            read -r mean max top <<<"$s"
            printf '    %-5s %-14s %12s %12s %8s%%\n' "$t" "$c: $name" "$mean" "$max" "$top"
            read -r fm fx ft <<<"$(awk -v m="$fm" -v x="$fx" -v t="$ft" -v a="$mean" -v b="$max" -v c="$top" \
                'BEGIN { print (a > m ? a : m), (b > x ? b : x), (c < t ? c : t) }')"
        done
        gzip -9 -c "$base" >"$new/bases/$f-$c.kld.gz"
    done
    awk -v ty="$t" -v f="$KLD_FACTOR" -v tf="$TOP_FACTOR" -v m="$fm" -v x="$fx" -v t="$ft" \
        -v mm="$KLD_MEAN_MIN" -v xm="$KLD_MAX_MIN" -v tm="$TOP_MISS_MIN" 'BEGIN {
        ml = f * m; if (ml < mm) ml = mm
        xl = f * x; if (xl < xm) xl = xm
        miss = tf * (100 - t); if (miss < tm) miss = tm
        printf "%s %.6g %.6g %.3f %s %s %s\n", ty, ml, xl, 100 - miss, m, x, t
    }' >>"$new/thresholds.txt"
    tail -n 1 "$new/thresholds.txt" | awk '{ printf "    %-5s => limits %s / %s / %s%%\n", $1, $2, $3, $4 }'
done

{
    echo "llama.cpp $LLAMA_CPP_COMMIT (llama-cpp-python $LLAMA_CPP_PY_VERSION)"
    echo "ctx $CTX"
    echo "chunks $CHUNKS"
    echo "types ${TYPES[*]}"
    echo "written $(date -u '+%Y-%m-%d %H:%M UTC') by scripts/llama-gpu-pack.sh"
} >"$new/pack.txt"

rm -rf "$PACK"
mv "$new" "$PACK"
echo "  pack: $(du -sk "$PACK" | cut -f1) KiB in $PACK ($((SECONDS - t_start)) s)"
find "$PACK" -type f -printf '    %8k KiB  %P\n' | sort -k3
echo "carry it: the device tool's carry list names \".llama-gpu\""
