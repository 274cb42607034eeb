#!/usr/bin/env bash
# Does llama.cpp built against ggmlx give upstream's answers? Builds llama.cpp (the copy vendored
# in the llama-cpp-python sdist, see scripts/llama-common.sh) twice with LLAMA_USE_SYSTEM_GGML=ON:
# against upstream's ggml from the same sdist (the reference; the same code as llama.cpp's own
# vendored ggml, built once as an install so that both builds follow one recipe) and against the
# ggmlx install. Then:
#
#   1. writes small llama-architecture models with random weights (scripts/llama-tiny-model.py,
#      F32/F16/BF16, a real tokenizer) and quantizes the F32 one with both builds' llama-quantize;
#      the two builds' files must be identical byte for byte;
#   2. compares logits, not text: upstream's llama-perplexity writes the log-probabilities of a
#      fixed text (--kl-divergence-base), the other build reads them (--kl-divergence) and
#      reports mean and maximum KL divergence and how often both pick the same top token. The
#      thresholds come from the noise floor: what two upstream configurations (1 vs 2 threads,
#      flash attention off vs on, per model type) give each other, measured in the same run.
#      Cases: every type with flash attention off and on; on F32, F16, Q8_0, Q4_0 and Q4_K_M
#      also a Q8_0 KV cache, and GGMLX_SIM_DEVICES=2 with -sm layer (the scheduler over SIM0,
#      SIM1 and the CPU) and -sm tensor (the meta device), each against upstream's CPU base of
#      the same flash-attention setting. (-sm row needs a split buffer type; not a case.)
#   3. with --bench, llama-bench on a ~0.5B model for both builds, alternating (printed only);
#   4. with --backend-ops, upstream's test-backend-ops built against ggmlx, on SIM0 and on the CUDA
#      backend run on the emulator (CUDA0, scripts/llama-backend-ops-emu.sh).
#
# Last line: "N passed, N failed". Exit status 0 when nothing failed.
#
# When llama.cpp does not build against ggmlx, that is one failed case, its missing symbols and
# compile errors are listed, and the upstream-only parts (quantizing, noise floors) still run.
#
# Options:
#   --self-test     compare upstream against upstream (no ggmlx build): exercises the harness
#   --bench         also run llama-bench on the ~0.5B model (written on first use, ~1 GB)
#   --backend-ops   also run test-backend-ops (test mode): on SIM0 (GGMLX_SIM_DEVICES=1) and on the
#                   emulated CUDA0 (EMU_BUILD: the ggmlx test build to make the module in)
#   --types LIST    comma-separated model types to compare (default: all)
#   -h, --help
#
# Environment: LLAMA_WORK, GGML_CUDA, CMAKE_ARGS, JOBS (scripts/llama-common.sh); LLAMA_PYTHON
# (a Python with gguf==0.19.0 and numpy; default .ci-venv/bin/python, then python3);
# KLD_CTX (128), KLD_CHUNKS (15, all the text has): the perplexity window; BENCH_SIZE (bench; tiny for a quick try
# of --bench); thresholds: see "Thresholds" below.
set -uo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"

SELF_TEST=0 BENCH=0 BACKEND_OPS=0 TYPES_ARG=""
while [ $# -gt 0 ]; do
    case $1 in
        --self-test) SELF_TEST=1 ;;
        --bench) BENCH=1 ;;
        --backend-ops) BACKEND_OPS=1 ;;
        --types) TYPES_ARG=${2:-}; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# The quantized types: llama-quantize's names. MXFP4 has no dense-model file type (MXFP4_MOE
# puts MXFP4 on expert tensors only), so its attention and FFN matrices are asked for by name.
QUANT_TYPES=(Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K_M Q5_K_M Q6_K IQ4_NL IQ4_XS MXFP4)
ALL_TYPES=(F32 F16 BF16 "${QUANT_TYPES[@]}")
# The types the KV-cache and multi-device cases run on (every type runs flash attention off/on).
CONFIG_TYPES=(F32 F16 Q8_0 Q4_0 Q4_K_M)

# Thresholds. A case passes when its mean KLD <= max(KLD_FACTOR * floor, KLD_MEAN_MIN), its
# maximum KLD <= max(KLD_FACTOR * floor, KLD_MAX_MIN), and the share of tokens whose top token
# differs <= max(TOP_FACTOR * floor, TOP_MISS_MIN percent). The floor of a type is the worst of
# its upstream-vs-upstream comparisons. The minimums stand for the floor of the unquantized
# models, which is the rounding of the log-probabilities the base file stores (16 bits).
KLD_FACTOR=${KLD_FACTOR:-4}
TOP_FACTOR=${TOP_FACTOR:-2}
KLD_MEAN_MIN=${KLD_MEAN_MIN:-0.0001}
KLD_MAX_MIN=${KLD_MAX_MIN:-0.002}
TOP_MISS_MIN=${TOP_MISS_MIN:-1.0}
KLD_CTX=${KLD_CTX:-128}
BENCH_SIZE=${BENCH_SIZE:-bench}
KLD_CHUNKS=${KLD_CHUNKS:-15}

TEXT="$GGMLX_ROOT/tests/llama/prose.txt"
VOCAB="$LLAMA_CPP_DIR/models/ggml-vocab-llama-spm.gguf"
UP_BUILD="$LLAMA_WORK/llama-up"
X_BUILD="$LLAMA_WORK/llama-x"
OUT="$LLAMA_WORK/compare"
MODELS="$LLAMA_WORK/models"

t_start=$SECONDS
n_pass=0 n_fail=0 n_skip=0
RESULTS="$OUT/results.tsv"

# case_result NAME pass|FAIL|skip DETAIL: one row of the final table.
case_result() {
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RESULTS"
    case $2 in
        pass) n_pass=$((n_pass + 1)) ;;
        FAIL) n_fail=$((n_fail + 1)) ;;
        *) n_skip=$((n_skip + 1)) ;;
    esac
    printf '  %-34s %-4s %s\n' "$1" "$2" "$3"
}

# model_path TYPE: the model every build reads for TYPE (for a quantized type, upstream's file).
model_path() {
    case $1 in
        F32|F16|BF16) echo "$MODELS/llama-tiny-$(lower "$1").gguf" ;;
        *) echo "$OUT/quant/up/llama-tiny-$(lower "$1").gguf" ;;
    esac
}

# quantize BIN_DIR TYPE DST: llama-quantize the F32 tiny model to TYPE.
quantize() {
    local bin=$1 type=$2 dst=$3 args=()
    if [ "$type" = MXFP4 ]; then
        args=(--tensor-type attn_=mxfp4 --tensor-type ffn_=mxfp4)
        type=MXFP4_MOE
    fi
    "$bin/llama-quantize" "${args[@]}" "$MODELS/llama-tiny-f32.gguf" "$dst" "$type" 2
}

# ppl BIN_DIR LOG ARGS...: llama-perplexity on the fixed text, with the window every run shares,
# in the environment PPL_ENV (VAR=VALUE words) adds.
PPL_ENV=()
ppl() {
    local bin=$1 log=$2; shift 2
    env ${PPL_ENV[@]+"${PPL_ENV[@]}"} "$bin/llama-perplexity" -f "$TEXT" -c "$KLD_CTX" --chunks "$KLD_CHUNKS" --no-warmup "$@" >"$log" 2>&1
}

# kld_stats, kld_run: the statistics of a --kl-divergence run, repeated when llama.cpp's logger
# lost them
# shellcheck source=scripts/llama-kld.sh
. "$GGMLX_ROOT/scripts/llama-kld.sh"

# compare_run NAME BIN_DIR BASE LOG ARGS...: a --kl-divergence run against BASE; prints its stats
# or nothing when the run failed (its log's tail then goes to stderr).
compare_run() {
    local bin=$2 base=$3 log=$4; shift 4
    if ! kld_run "$log" env ${PPL_ENV[@]+"${PPL_ENV[@]}"} "$bin/llama-perplexity" -f "$TEXT" -c "$KLD_CTX" \
            --chunks "$KLD_CHUNKS" --no-warmup --kl-divergence-base "$base" --kl-divergence "$@"; then
        tail -n 8 "$log" | sed 's/^/    | /' >&2
        return 1
    fi
}

# Floors: per model type, the worst mean, max and top-token agreement of the upstream-vs-upstream
# comparisons, and the thresholds derived from them.
declare -A FLOOR_MEAN FLOOR_MAX FLOOR_TOP
floor_add() {
    local t=$1 mean=$2 max=$3 top=$4
    FLOOR_MEAN[$t]=$(awk -v a="${FLOOR_MEAN[$t]:-0}" -v b="$mean" 'BEGIN { print (b > a ? b : a) }')
    FLOOR_MAX[$t]=$(awk -v a="${FLOOR_MAX[$t]:-0}" -v b="$max" 'BEGIN { print (b > a ? b : a) }')
    FLOOR_TOP[$t]=$(awk -v a="${FLOOR_TOP[$t]:-100}" -v b="$top" 'BEGIN { print (b < a ? b : a) }')
}
# limits TYPE: "mean_limit max_limit top_limit"
limits() {
    awk -v f="$KLD_FACTOR" -v tf="$TOP_FACTOR" -v m="${FLOOR_MEAN[$1]}" -v x="${FLOOR_MAX[$1]}" -v t="${FLOOR_TOP[$1]}" \
        -v mm="$KLD_MEAN_MIN" -v xm="$KLD_MAX_MIN" -v tm="$TOP_MISS_MIN" 'BEGIN {
        ml = f * m; if (ml < mm) ml = mm
        xl = f * x; if (xl < xm) xl = xm
        miss = tf * (100 - t); if (miss < tm) miss = tm
        printf "%.6g %.6g %.3f\n", ml, xl, 100 - miss
    }'
}
# judge TYPE "mean max top": pass or FAIL
judge() {
    local lim
    lim=$(limits "$1")
    awk -v s="$2" -v l="$lim" 'BEGIN {
        split(s, v, " "); split(l, w, " ")
        print ((v[1] + 0 <= w[1] + 0 && v[2] + 0 <= w[2] + 0 && v[3] + 0 >= w[3] + 0) ? "pass" : "FAIL")
    }'
}

# --- builds ---------------------------------------------------------------------------------
echo "llama-compare: llama.cpp $LLAMA_CPP_COMMIT (llama-cpp-python $LLAMA_CPP_PY_VERSION), upstream ggml vs $(
    [ "$SELF_TEST" = 1 ] && echo "upstream ggml (self-test)" || echo ggmlx)"
echo "work folder: $LLAMA_WORK"
llama_ensure_tools || exit 1
PY=$(pick_python) || { echo "error: no Python with gguf and numpy (set LLAMA_PYTHON)" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT/quant/up" "$OUT/quant/x" "$OUT/kld" "$MODELS"
: >"$RESULTS"

echo "[1/6] fetch and builds"
llama_fetch || exit 1
# Upstream's ggml never changes for a given sdist: an existing install is reused.
if [ ! -f "$UPSTREAM_PREFIX/lib/cmake/ggml/ggml-config.cmake" ]; then
    llama_build_upstream_ggml || exit 1
fi
llama_step "llama.cpp against upstream ggml: configure" "$UP_BUILD.configure.log" \
    llama_configure_tools "$UP_BUILD" "$UPSTREAM_PREFIX" || exit 1
# The reference needs only the programs that write bases and quantize (and, for the self-test,
# everything the compared build runs).
LLAMA_BUILD_TARGETS=(llama-perplexity llama-bench llama-quantize)
[ "$SELF_TEST" = 1 ] && LLAMA_BUILD_TARGETS=("${LLAMA_TOOL_TARGETS[@]}")
llama_step "llama.cpp against upstream ggml: build ${LLAMA_BUILD_TARGETS[*]}" "$UP_BUILD.build.log" \
    llama_build_tools "$UP_BUILD" || exit 1
unset LLAMA_BUILD_TARGETS
UP_BIN="$UP_BUILD/bin"

X_BIN=""
if [ "$SELF_TEST" = 1 ]; then
    X_BIN=$UP_BIN
    echo "  self-test: the compared build is upstream's again"
elif llama_build_ggmlx; then
    x_log="$X_BUILD.build.log"
    if llama_step "llama.cpp against ggmlx: configure" "$X_BUILD.configure.log" \
            llama_configure_tools "$X_BUILD" "$GGMLX_PREFIX"; then
        echo "  ggml package: $(sed -n 's/^ggml_DIR:[A-Z]*=//p' "$X_BUILD/CMakeCache.txt")"
        t0=$SECONDS
        # libllama first, with -k 0 (every file that can be compiled is, so the summary lists
        # every problem); the programs only when it links, since they all need it.
        if cmake --build "$X_BUILD" --target llama -j"$LLAMA_JOBS" -- -k 0 >"$x_log" 2>&1 &&
           llama_build_tools "$X_BUILD" -k 0 >>"$x_log" 2>&1; then
            echo "  llama.cpp against ggmlx: build: ok ($((SECONDS - t0)) s)"
            X_BIN="$X_BUILD/bin"
            case_result "build llama.cpp against ggmlx" pass ""
        else
            echo "  llama.cpp against ggmlx: build: FAILED ($((SECONDS - t0)) s, log: $x_log)"
            grep -o "undefined reference to \`[^']*'" "$x_log" | sed "s/.*\`//; s/'\$//" |
                LC_ALL=C sort -u >"$OUT/undefined"
            n_undef=$(wc -l <"$OUT/undefined")
            if [ "$n_undef" -gt 0 ]; then
                echo "  symbols ggmlx does not define ($n_undef):"
                fmt -w 100 <(tr '\n' ' ' <"$OUT/undefined") | sed 's/^/    /'
            fi
            n_cc=$(grep -c '^FAILED: .*\.o$\|^FAILED: .*\.o ' "$x_log")
            # What the compiler met first: ggml functions and types ggmlx's headers lack.
            # gcc quotes names with ‘’ in a UTF-8 locale and with '' otherwise.
            # shellcheck disable=SC1112
            grep -oE "(‘|')gg(ml|uf)_[A-Za-z0-9_]*(’|') (was not declared|has not been declared|does not name a type)" "$x_log" |
                sed -E "s/^(‘|')([A-Za-z0-9_]*).*/\2/" | LC_ALL=C sort -u >"$OUT/undeclared"
            if [ -s "$OUT/undeclared" ]; then
                echo "  ggml names llama.cpp uses that ggmlx's headers do not declare ($(wc -l <"$OUT/undeclared")):"
                fmt -w 100 <(tr '\n' ' ' <"$OUT/undeclared") | sed 's/^/    /'
            fi
            if [ "$n_cc" -gt 0 ]; then
                echo "  files that do not compile: $n_cc; first error of each, grouped:"
                awk '/^FAILED: .*\.o/ { want = 1; next }
                     want && /error:/ { sub(/^.*error: /, ""); print; want = 0 }' "$x_log" |
                    LC_ALL=C sort | uniq -c | sort -rn | head -n 15 | sed 's/^/    /'
            fi
            case_result "build llama.cpp against ggmlx" FAIL \
                "$n_cc files fail to compile ($(wc -l <"$OUT/undeclared") undeclared ggml names), $n_undef undefined symbols at link"
        fi
    else
        case_result "build llama.cpp against ggmlx" FAIL "configure failed ($X_BUILD.configure.log)"
    fi
else
    case_result "build ggmlx" FAIL "see the log above"
fi
[ -n "$X_BIN" ] || echo "  only the upstream parts run below (quantizing, noise floors)"

# --- models ---------------------------------------------------------------------------------
echo "[2/6] models"
if ! "$PY" "$GGMLX_ROOT/scripts/llama-tiny-model.py" --vocab "$VOCAB" --out "$MODELS" --size tiny \
        >"$OUT/models.log" 2>&1; then
    sed 's/^/    | /' "$OUT/models.log"
    echo "error: could not write the models" >&2
    exit 1
fi
sed 's/^/  /' "$OUT/models.log"

# --- quantizing -----------------------------------------------------------------------------
echo "[3/6] quantizing with both builds' llama-quantize (the files must be identical)"
for t in "${QUANT_TYPES[@]}"; do
    f=$(lower "$t")
    up="$OUT/quant/up/llama-tiny-$f.gguf"
    if ! quantize "$UP_BIN" "$t" "$up" >"$OUT/quant/up/$f.log" 2>&1; then
        tail -n 8 "$OUT/quant/up/$f.log" | sed 's/^/    | /'
        case_result "quantize $t" FAIL "upstream's llama-quantize failed"
        continue
    fi
    if [ -z "$X_BIN" ]; then
        continue
    fi
    x="$OUT/quant/x/llama-tiny-$f.gguf"
    if ! quantize "$X_BIN" "$t" "$x" >"$OUT/quant/x/$f.log" 2>&1; then
        tail -n 8 "$OUT/quant/x/$f.log" | sed 's/^/    | /'
        case_result "quantize $t" FAIL "llama-quantize against ggmlx failed"
    elif cmp -s "$up" "$x"; then
        case_result "quantize $t" pass "identical, $(stat -c %s "$up") bytes"
    else
        n_diff=$(cmp -l "$up" "$x" 2>/dev/null | wc -l)
        case_result "quantize $t" FAIL "$n_diff of $(stat -c %s "$up") bytes differ (sizes $(stat -c %s "$up") / $(stat -c %s "$x"))"
    fi
done

# --- noise floor ----------------------------------------------------------------------------
# Bases: upstream, 2 threads. "fa0": flash attention off, F16 KV cache; "fa1": flash attention
# on; "kvq8": flash attention on (a quantized V cache needs it), Q8_0 K and V cache. Each case
# of ours is compared with the base of its own configuration.
base_args() {
    case $1 in
        fa0) echo "-t 2 -fa off" ;;
        fa1) echo "-t 2 -fa on" ;;
        kvq8) echo "-t 2 -fa on -ctk q8_0 -ctv q8_0" ;;
    esac
}
if [ -n "$TYPES_ARG" ]; then
    IFS=, read -r -a TYPES <<<"$(echo "$TYPES_ARG" | tr '[:lower:]' '[:upper:]')"
else
    TYPES=("${ALL_TYPES[@]}")
fi
in_config_types() {
    local c
    for c in "${CONFIG_TYPES[@]}"; do [ "$c" = "$1" ] && return 0; done
    return 1
}

echo "[4/6] noise floor: upstream against upstream (KLD mean, max, same top %)"
printf '  %-8s %-24s %12s %12s %9s\n' type comparison "mean KLD" "max KLD" "same top"
declare -A HAVE_BASE
for t in "${TYPES[@]}"; do
    m=$(model_path "$t")
    if [ ! -f "$m" ]; then
        case_result "$t" FAIL "no model file $m"
        continue
    fi
    f=$(lower "$t")
    cfgs=(fa0 fa1)
    in_config_types "$t" && cfgs+=(kvq8)
    for c in "${cfgs[@]}"; do
        base="$OUT/kld/$f-$c.kld"
        read -r -a cargs <<<"$(base_args "$c")"
        if ! ppl "$UP_BIN" "$OUT/kld/$f-$c-base.log" -m "$m" "${cargs[@]}" --kl-divergence-base "$base"; then
            tail -n 8 "$OUT/kld/$f-$c-base.log" | sed 's/^/    | /'
            case_result "$t base ($c)" FAIL "upstream's llama-perplexity failed"
            continue
        fi
        HAVE_BASE[$f-$c]=1
        # The same configuration with one thread; against the flash-attention-off base, also
        # flash attention on.
        floor_runs=("threads-1|$(base_args "$c" | sed 's/-t 2/-t 1/')")
        [ "$c" = fa0 ] && floor_runs+=("fa-on|$(base_args fa1)")
        for fr in "${floor_runs[@]}"; do
            name=${fr%%|*}
            read -r -a a <<<"${fr#*|}"
            if s=$(compare_run "$name" "$UP_BIN" "$base" "$OUT/kld/$f-$c-floor-$name.log" -m "$m" "${a[@]}"); then
                read -r mean max top <<<"$s"
                floor_add "$t" "$mean" "$max" "$top"
                printf '  %-8s %-24s %12s %12s %8s%%\n' "$t" "$c: $name" "$mean" "$max" "$top"
            else
                case_result "$t floor $c $name" FAIL "upstream's llama-perplexity failed"
            fi
        done
    done
    if [ -n "${FLOOR_MEAN[$t]:-}" ]; then
        read -r lm lx lt <<<"$(limits "$t")"
        printf '  %-8s %-24s %12s %12s %8s%%\n' "$t" "=> limits" "$lm" "$lx" "$lt"
    fi
done

# --- comparisons ----------------------------------------------------------------------------
echo "[5/6] ggmlx against upstream's logits"
if [ -z "$X_BIN" ]; then
    echo "  skipped: no llama.cpp build against ggmlx"
else
    printf '  %-34s %-4s %s\n' case "" "mean KLD / max KLD / same top % (limits)"
    for t in "${TYPES[@]}"; do
        f=$(lower "$t")
        m=$(model_path "$t")
        [ -n "${FLOOR_MEAN[$t]:-}" ] || continue
        # name|config|environment|arguments
        cases=("fa-off|fa0||-t 2 -fa off" "fa-on|fa1||-t 2 -fa on")
        if in_config_types "$t"; then
            cases+=("kv-q8_0|kvq8||-t 2 -fa on -ctk q8_0 -ctv q8_0"
                    "sim2 -sm layer|fa0|GGMLX_SIM_DEVICES=2|-t 2 -fa off -ngl 99 -sm layer"
                    "sim2 -sm tensor|fa1|GGMLX_SIM_DEVICES=2|-t 2 -fa on -ngl 99 -sm tensor")
        fi
        for cs in "${cases[@]}"; do
            IFS='|' read -r name c envs argstr <<<"$cs"
            base="$OUT/kld/$f-$c.kld"
            if [ -z "${HAVE_BASE[$f-$c]:-}" ]; then
                case_result "$t $name" FAIL "no upstream base"
                continue
            fi
            if [ "$SELF_TEST" = 1 ] && [ "$name" = "sim2 -sm tensor" ]; then
                # Upstream's CPU-only ggml has no device for the tensor split mode's meta device.
                case_result "$t $name" skip "self-test: upstream has no devices to split over"
                continue
            fi
            read -r -a a <<<"$argstr"
            read -r -a PPL_ENV <<<"$envs"
            log="$OUT/kld/$f-x-${name// /_}.log"
            s=$(compare_run "$name" "$X_BIN" "$base" "$log" -m "$m" "${a[@]}")
            rc=$?
            PPL_ENV=()
            if [ "$rc" -eq 0 ]; then
                read -r mean max top <<<"$s"
                read -r lm lx lt <<<"$(limits "$t")"
                case_result "$t $name" "$(judge "$t" "$s")" "$mean / $max / $top% ($lm / $lx / $lt%)"
            else
                case_result "$t $name" FAIL "llama-perplexity failed (log: $log)"
            fi
        done
    done
fi

# --- generating text -------------------------------------------------------------------------
# The README's commands: llama-completion on the CPU and over SIM0 and SIM1 generates the tokens
# it was asked for (the text itself is not compared: random weights make it a string of near-ties).
if [ -n "$X_BIN" ] && [ "$SELF_TEST" = 0 ]; then
    for cs in "CPU||" "SIM0+SIM1 -sm layer|GGMLX_SIM_DEVICES=2|-ngl 99 -sm layer"; do
        IFS='|' read -r name envs argstr <<<"$cs"
        read -r -a a <<<"$argstr"
        read -r -a e <<<"$envs"
        log="$OUT/completion-${name%% *}.log"
        # the timings are printed last, where llama.cpp's logger may lose them (see llama-kld.sh)
        for ((try = 1; try <= KLD_TRIES; try++)); do
            env ${e[@]+"${e[@]}"} "$X_BIN/llama-completion" -m "$MODELS/llama-tiny-f32.gguf" -p "The harbor town" \
                -n 16 --temp 0 -t 2 --no-warmup ${a[@]+"${a[@]}"} >"$log" 2>&1 </dev/null
            rc=$?
            runs=$(sed -n 's/.* eval time = .*\/ *\([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
            [ "$rc" -ne 0 ] || [ -n "$runs" ] && break
        done
        if [ "$rc" -eq 0 ] && [ "${runs:-0}" -eq 15 ]; then
            case_result "llama-completion $name" pass "16 tokens"
        else
            case_result "llama-completion $name" FAIL "exit $rc, ${runs:-no} decode runs (log: $log)"
        fi
    done
fi

# --- optional: test-backend-ops and llama-bench ---------------------------------------------
echo "[6/6] test-backend-ops and llama-bench"
if [ "$BACKEND_OPS" = 1 ]; then
    if [ -z "$X_BIN" ]; then
        case_result "test-backend-ops SIM0" skip "no llama.cpp build against ggmlx"
    elif [ "$SELF_TEST" = 1 ]; then
        case_result "test-backend-ops SIM0" skip "self-test: upstream has no SIM devices"
    else
        log="$OUT/test-backend-ops.log"
        GGMLX_SIM_DEVICES=1 "$X_BIN/test-backend-ops" test -b SIM0 >"$log" 2>&1
        rc=$?
        summary=$(grep -E '^ *[0-9]+/[0-9]+ tests passed' "$log" | tail -n 1 | sed 's/^ *//')
        n_unsup=$(grep -c ': not supported' "$log")
        if [ "$rc" -eq 0 ]; then
            case_result "test-backend-ops SIM0" pass "${summary:-?}, $n_unsup not supported"
        else
            case_result "test-backend-ops SIM0" FAIL "exit $rc, ${summary:-no summary}, log: $log"
            grep 'FAIL' "$log" | head -n 10 | sed 's/^/    | /'
        fi
        # the CUDA backend on the emulator (tests/cuda-emu), loaded as a module
        # shellcheck source=scripts/llama-backend-ops-emu.sh
        . "$GGMLX_ROOT/scripts/llama-backend-ops-emu.sh"
        line=$(llama_backend_ops_emu "$X_BIN/test-backend-ops" 2>&1)
        rc=$?
        echo "$line" | sed 's/^/  /'
        detail=$(echo "$line" | sed -n 's/^test-backend-ops CUDA0 (emulated): //p' | head -n 1)
        case $rc in
            0) case_result "test-backend-ops CUDA0 (emulated)" pass "$detail" ;;
            3) case_result "test-backend-ops CUDA0 (emulated)" skip "$detail" ;;
            *) case_result "test-backend-ops CUDA0 (emulated)" FAIL "$detail" ;;
        esac
    fi
else
    echo "  test-backend-ops: not asked for (--backend-ops)"
fi

if [ "$BENCH" = 1 ]; then
    if [ -z "$X_BIN" ]; then
        echo "  llama-bench: skipped (no llama.cpp build against ggmlx)"
    elif ! "$PY" "$GGMLX_ROOT/scripts/llama-tiny-model.py" --vocab "$VOCAB" --out "$MODELS" \
            --size "$BENCH_SIZE" --types f16 >"$OUT/bench-model.log" 2>&1; then
        sed 's/^/    | /' "$OUT/bench-model.log"
        echo "  llama-bench: could not write the bench model"
    else
        bm="$MODELS/llama-$BENCH_SIZE-f16.gguf"
        printf '  %-8s %-6s %14s %14s %7s\n' type test "upstream t/s" "ours t/s" ratio
        for t in F16 Q8_0 Q4_0 Q4_K_M; do
            m=$bm
            if [ "$t" != F16 ]; then
                m="$MODELS/llama-$BENCH_SIZE-$(lower "$t").gguf"
                [ -f "$m" ] || "$UP_BIN/llama-quantize" "$bm" "$m" "$t" 2 >"$OUT/bench-quant-$t.log" 2>&1 ||
                    { echo "  $t: llama-quantize failed"; continue; }
            fi
            # Three alternating runs each; the best of each build counts (the machine is shared).
            for i in 1 2 3; do
                for side in up x; do
                    [ "$side" = up ] && b=$UP_BIN || b=$X_BIN
                    "$b/llama-bench" -m "$m" -t 2 -p 128 -n 32 -r 1 -o csv >"$OUT/bench-$t-$side-$i.csv" 2>/dev/null
                done
            done
            for test in pp128 tg32; do
                best() {
                    local n_p n_g
                    [ "$test" = pp128 ] && n_p=128 n_g=0 || n_p=0 n_g=32
                    cat "$OUT"/bench-"$t"-"$1"-*.csv 2>/dev/null | awk -F, -v p="$n_p" -v g="$n_g" '
                        NR == 1 || /^build_commit/ { for (i = 1; i <= NF; i++) { h = $i; gsub(/"/, "", h); col[h] = i }; next }
                        { np = $col["n_prompt"]; ng = $col["n_gen"]; ts = $col["avg_ts"]
                          gsub(/"/, "", np); gsub(/"/, "", ng); gsub(/"/, "", ts)
                          if (np == p && ng == g && ts + 0 > best) best = ts + 0 }
                        END { printf "%.2f\n", best }'
                }
                u=$(best up) o=$(best x)
                printf '  %-8s %-6s %14s %14s %7s\n' "$t" "$test" "$u" "$o" \
                    "$(awk -v u="$u" -v o="$o" 'BEGIN { if (u > 0) printf "%.2fx", o / u; else print "-" }')"
            done
        done
    fi
else
    echo "  llama-bench: not asked for (--bench)"
fi

# --- summary --------------------------------------------------------------------------------
# The logit comparisons as a markdown table (a row per type, a column per case) for the README.
awk -F'\t' '
    $1 ~ / (fa-off|fa-on|kv-q8_0|sim2 -sm layer|sim2 -sm tensor)$/ {
        t = $1; sub(/ .*/, "", t); c = substr($1, length(t) + 2)
        if (!(t in seen)) { seen[t] = 1; order[++n] = t }
        v = $3; sub(/ \(.*/, "", v)
        l = $3; if (sub(/^[^(]*\(/, "", l)) { sub(/\)$/, "", l); lim[t] = l }
        cell[t, c] = ($2 == "pass" ? v : "FAIL: " v)
    }
    END {
        if (n == 0) exit
        split("fa-off|fa-on|kv-q8_0|sim2 -sm layer|sim2 -sm tensor", cs, "|")
        print "| type | fa off | fa on | KV cache Q8_0 | SIM0+SIM1 -sm layer | SIM0+SIM1 -sm tensor | limits |"
        print "| --- | --- | --- | --- | --- | --- | --- |"
        for (i = 1; i <= n; i++) {
            line = "| " order[i]
            for (j = 1; j <= 5; j++) line = line " | " ((order[i], cs[j]) in cell ? cell[order[i], cs[j]] : "-")
            print line " | " lim[order[i]] " |"
        }
    }' "$RESULTS" >"$OUT/kld-table.md"
echo
echo "results ($((SECONDS - t_start)) s; logs under $OUT; the logits as a table: $OUT/kld-table.md):"
awk -F'\t' '{ printf "  %-34s %-4s %s\n", $1, $2, $3 }' "$RESULTS"
[ "$n_skip" -gt 0 ] && echo "$n_skip skipped"
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
