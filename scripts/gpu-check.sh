#!/usr/bin/env bash
# gpu-check.sh -- everything that needs a GPU, in one command, for a machine lent for minutes
# (the H200 device machine: nvcc, CMake and ninja, no Criterion, no package registry).
#
#   scripts/gpu-check.sh
#
# Steps, each timed and bounded with `timeout`, the whole run under 8 minutes:
#   gpu          nvidia-smi -L, driver and CUDA versions (no GPU: "no CUDA device", exit 2, at once)
#   build        Release, GGML_CUDA=ON, CMAKE_CUDA_ARCHITECTURES=90, no tests (no Criterion there),
#                into build-gpu/ (a carried folder configured the same way for this checkout is reused)
#   devices      ggml-devices: the registry must show a CUDA device
#   conformance  ggml-conformance on every device, GGMLX_TEST_REQUIRE_CUDA=1 (a skip on CUDA of a case it claims fails)
#   bench-cuda   bandwidth and mul_mat against a device copy and cuBLAS (markdown + JSON)
#   graphs       bench-cuda-graphs: us per node of a 1000-node graph of tiny adds, with and without
#                CUDA graphs (output joins bench-cuda.md)
#   demo         ggml-demo on the best device
#   torch        cuda/bench/torch-decoder.py --device cuda: the demo's scheduler decoder in PyTorch
#                eager; its tokens/s beside the demo's, and their ratio (no torch: a skip).
#                Output joins demo.log
#   virtual      GGML_CUDA_DEVICES=3: cuda-virtual-check (budgets, out-of-memory per device, copies
#                between devices, graph replays) and ggml-demo over the 3 devices (output joins demo.log)
#   comm         cuda-comm-check: NCCL all-reduce through the CUDA registry (1 rank on CUDA0; a real sum
#                with 2+ GPUs); no NCCL library is a skip. Its output goes to devices.log
#   module       GGML_BACKEND_DL=ON build (libraries and ggml-devices/ggml-demo only) into
#                build-gpu-dl/: ggml-devices --load-all must find CUDA0 through libggml-cuda.so with
#                nothing logged, ggml-demo must pass on CUDA0, and with CUDA_VISIBLE_DEVICES empty the
#                module must cost one "CUDA module not used" line. Output joins devices.log
#   llama        llama.cpp (the trimmed copy carried in .llama-gpu/) built against build-gpu installed
#                into build-gpu-prefix/, then scripts/llama-gpu.sh: F16, Q8_0 and Q4_0 random llama
#                models with -ngl 99, flash attention off and on, against upstream's CPU logits
#                (KL divergence within upstream's own noise floor); the weights must go to CUDA0.
#                No .llama-gpu/ is a skip. Output joins conformance.log
#   sanitizer    compute-sanitizer memcheck over ggml-conformance --device CUDA0 on a few filters
#                (last: it is the slowest, and what is left of the budget bounds it)
# Logs go to $OUT when set (the device tool brings $OUT back; at most 8 files), else to
# build-gpu/gpu-check-logs. A summary table is printed last.
#
# What the device tool must carry: .llama-gpu, which scripts/llama-gpu-pack.sh writes where the
# network is (about 39 MiB of the 64 MiB a call carries), i.e.
#   carry: [".llama-gpu"]
# (plus build-gpu when a built folder is reused). The whole run stays within GPU_CHECK_BUDGET:
# the llama step is bounded at 240 s (a fresh llama.cpp build, about 870 s of compiling on one
# core of the development machine, the longest file about a minute; then six runs of a second
# or two); the other steps took about 70 s on a fresh H200 machine, so 470 s still leaves room.
#
# Environment:
#   GPU_CHECK_BUILD_DIR    build folder (default build-gpu)
#   GPU_CHECK_ARCH         CMAKE_CUDA_ARCHITECTURES (default 90, the H100/H200)
#   GPU_CHECK_SKIP_BUILD=1 use the build folder as it is (testing this script)
#   GPU_CHECK_FILTERS      sanitizer subset, conformance --filter substrings separated by ';'
#   GPU_CHECK_BUDGET       seconds for the whole run (default 470)
#   GPU_CHECK_PYTHON       the Python that has torch (default python3)
#   LLAMA_GPU_PACK         the llama step's pack (default .llama-gpu)
#   LLAMA_GPU_REQUIRE_DEVICE  the device the llama step wants the weights on (default CUDA0; SIM0
#                          tries the step without a GPU)
# Exit: 0 every step passed, 1 a step failed or timed out, 2 no CUDA device.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GPU_CHECK_BUILD_DIR:-$root/build-gpu}
case $build in
/*) ;;
*) build=$root/$build ;;
esac
arch=${GPU_CHECK_ARCH:-90}
skip_build=${GPU_CHECK_SKIP_BUILD:-0}
budget=${GPU_CHECK_BUDGET:-470}
py=${GPU_CHECK_PYTHON:-python3}
filters=${GPU_CHECK_FILTERS:-"rule: tensor;rule: event;add f32 [33;rms_norm f32;soft_max f32;mul_mat:gemm;cpy f32>f16 [1023"}
logs=${OUT:-$build/gpu-check-logs}
jobs=$(nproc 2>/dev/null || echo 4)
bin=$build/bin

mkdir -p "$logs"
t_start=$(date +%s%N)

# summary rows, filled by each step
steps=()
statuses=()
times=()
keys=()
failed=0

elapsed_s() { # seconds since $1 (nanoseconds), one decimal
    local now
    now=$(date +%s%N)
    awk -v a="$1" -v b="$now" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'
}

remaining() { # whole seconds left of the budget
    local now
    now=$(date +%s%N)
    echo $(( budget - (now - t_start) / 1000000000 ))
}

record() { # step status seconds key
    steps+=("$1")
    statuses+=("$2")
    times+=("$3")
    keys+=("$4")
    case $2 in
    ok | skip) ;;
    *) failed=$((failed + 1)) ;;
    esac
}

print_summary() {
    local total i
    total=$(elapsed_s "$t_start")
    {
        echo
        echo "## gpu-check summary"
        echo
        echo "| step | status | time s | key |"
        echo "|---|---|---:|---|"
        for i in "${!steps[@]}"; do
            echo "| ${steps[$i]} | ${statuses[$i]} | ${times[$i]} | ${keys[$i]} |"
        done
        echo
        if [ "$failed" -eq 0 ]; then
            echo "gpu-check: PASS, ${#steps[@]} steps in ${total} s (logs: $logs)"
        else
            echo "gpu-check: FAIL, $failed of ${#steps[@]} steps failed, ${total} s (logs: $logs)"
        fi
    } | tee "$logs/summary.md"
}

# run_step NAME LIMIT LOG CMD...: runs CMD under timeout with its output in LOG; sets step_rc and
# step_time. The limit shrinks to what is left of the budget; with under 5 s left nothing runs.
step_rc=0
step_time=0
run_step() {
    local name=$1 limit=$2 log=$3 left t0
    shift 3
    left=$(remaining)
    if [ "$left" -lt "$limit" ]; then
        limit=$left
    fi
    echo "== $name (limit ${limit} s)"
    if [ "$limit" -lt 5 ]; then
        echo "   no time left in the ${budget} s budget" | tee -a "$log"
        step_rc=124
        step_time=0.0
        return 0
    fi
    t0=$(date +%s%N)
    if timeout -k 5 "$limit" "$@" >>"$log" 2>&1; then
        step_rc=0
    else
        step_rc=$?
    fi
    step_time=$(elapsed_s "$t0")
    tail -n 4 "$log" | sed 's/^/   /'
}

status_of() { # rc -> status word
    case $1 in
    0) echo ok ;;
    124 | 137) echo TIMEOUT ;;
    *) echo "FAIL (rc $1)" ;;
    esac
}

# ---- gpu: is there one at all? -----------------------------------------------------------------------
gpu_log=$logs/devices.log
: >"$gpu_log"
t0=$(date +%s%N)
gpu_list=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu_list=$(timeout 20 nvidia-smi -L 2>&1 || true)
fi
if [ -z "$gpu_list" ] && [ -e /dev/nvidia0 ]; then
    # a container given the device but not nvidia-smi: let the CUDA runtime decide later
    gpu_list="GPU 0: unknown (nvidia-smi not found, /dev/nvidia0 present)"
fi
if ! printf '%s\n' "$gpu_list" | grep -q '^GPU [0-9]'; then
    why=${gpu_list:-nvidia-smi not found}
    why=$(printf '%s' "$why" | head -n 1)
    echo "gpu-check: no CUDA device (${why})" | tee -a "$gpu_log" >&2
    record gpu "no CUDA device" "$(elapsed_s "$t0")" "${why}"
    print_summary
    echo "gpu-check: no CUDA device on this machine: nothing to check (exit 2)"
    exit 2
fi
{
    echo "$gpu_list"
    timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
        --format=csv 2>&1 || true
    timeout 20 nvidia-smi 2>&1 | grep -m 1 'CUDA Version' || true
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
} >>"$gpu_log" 2>&1
driver=$(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
cuda_ver=$(timeout 20 nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1 || true)
gpu_name=$(printf '%s\n' "$gpu_list" | sed -n '1s/^GPU 0: \([^(]*\) (.*/\1/p')
n_gpu=$(printf '%s\n' "$gpu_list" | grep -c '^GPU [0-9]' || true)
cat "$gpu_log"
record gpu ok "$(elapsed_s "$t0")" "${n_gpu} x ${gpu_name:-?}, driver ${driver:-?}, CUDA ${cuda_ver:-?}"

# ---- build -------------------------------------------------------------------------------------------
build_log=$logs/build.log
: >"$build_log"
# A build folder is reused only when it was configured for this source tree (CMake refuses
# another one) with CUDA on and the wanted architecture.
reuse=0
if [ "$skip_build" != 1 ] && [ -f "$build/CMakeCache.txt" ]; then
    if grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$build/CMakeCache.txt" &&
        grep -q "^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=$arch\$" "$build/CMakeCache.txt" &&
        grep -q '^GGML_CUDA:[A-Z]*=ON$' "$build/CMakeCache.txt"; then
        reuse=1
    else
        echo "build: $build was configured for another tree or architecture: configuring it afresh" | tee -a "$build_log"
        rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
    fi
fi
if [ "$skip_build" = 1 ]; then
    record build skip 0.0 "GPU_CHECK_SKIP_BUILD=1: using $build as it is"
else
    if [ "$reuse" = 0 ]; then
        run_step configure 120 "$build_log" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$arch" -DGGML_BUILD_TESTS=OFF
        conf_time=$step_time
        conf_rc=$step_rc
    else
        conf_time=0.0
        conf_rc=0
    fi
    if [ "$conf_rc" = 0 ]; then
        run_step build 300 "$build_log" cmake --build "$build" -j "$jobs"
        total_build=$(awk -v a="$conf_time" -v b="$step_time" 'BEGIN { printf "%.1f", a + b }')
        record build "$(status_of "$step_rc")" "$total_build" "sm_${arch}, ${jobs} jobs$([ "$reuse" = 1 ] && echo ', reused folder')"
    else
        record build "$(status_of "$conf_rc")" "$conf_time" "configure failed: see build.log"
    fi
fi

have() { [ -x "$bin/$1" ]; }

# ---- devices -----------------------------------------------------------------------------------------
if have ggml-devices; then
    echo "--- ggml-devices" >>"$gpu_log"
    run_step devices 30 "$gpu_log" "$bin/ggml-devices"
    n_cuda=$(grep -cE '^ +[0-9]+ +CUDA[0-9]+ ' "$gpu_log" || true)
    n_all=$(sed -n 's/^\([0-9][0-9]*\) devices*$/\1/p' "$gpu_log" | tail -n 1)
    st=$(status_of "$step_rc")
    if [ "$step_rc" = 0 ] && [ "$n_cuda" = 0 ]; then
        st="FAIL (no CUDA device in the registry)"
    fi
    record devices "$st" "$step_time" "${n_cuda} CUDA of ${n_all:-?} devices"
else
    record devices "FAIL (not built)" 0.0 "-"
fi

# ---- conformance -------------------------------------------------------------------------------------
conf_log=$logs/conformance.log
: >"$conf_log"
if have ggml-conformance; then
    run_step conformance 180 "$conf_log" env GGMLX_TEST_REQUIRE_CUDA=1 "$bin/ggml-conformance"
    record conformance "$(status_of "$step_rc")" "$step_time" "$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$conf_log" | tail -n 1)"
else
    record conformance "FAIL (not built)" 0.0 "-"
fi

# ---- bench-cuda --------------------------------------------------------------------------------------
bench_log=$logs/bench-cuda.md
: >"$bench_log"
if have bench-cuda; then
    run_step bench-cuda 120 "$bench_log" "$bin/bench-cuda" --json-out "$logs/bench-cuda.json"
    # the table matters more than the log's tail
    grep '^|' "$bench_log" || true
    record bench-cuda "$(status_of "$step_rc")" "$step_time" "$(grep '^bench-cuda:' "$bench_log" | tail -n 1 | sed 's/^bench-cuda: //')"
else
    record bench-cuda "FAIL (not built)" 0.0 "-"
fi

# ---- graphs: launch overhead with and without CUDA graphs -------------------------------------------
if have bench-cuda-graphs; then
    echo "--- bench-cuda-graphs" >>"$bench_log"
    run_step graphs 60 "$bench_log" "$bin/bench-cuda-graphs"
    record graphs "$(status_of "$step_rc")" "$step_time" "$(grep '^bench-cuda-graphs:' "$bench_log" | tail -n 1 | sed 's/^bench-cuda-graphs: //')"
else
    record graphs "FAIL (not built)" 0.0 "-"
fi

# ---- demo --------------------------------------------------------------------------------------------
demo_log=$logs/demo.log
: >"$demo_log"
if have ggml-demo; then
    run_step demo 60 "$demo_log" "$bin/ggml-demo"
    st=$(status_of "$step_rc")
    # the demo takes the best device: on a GPU machine that must be the GPU
    if [ "$step_rc" = 0 ] && ! grep -q '^device CUDA' "$demo_log"; then
        st="FAIL (not run on a CUDA device)"
    fi
    record demo "$st" "$step_time" "$(tail -n 1 "$demo_log")"
else
    record demo "FAIL (not built)" 0.0 "-"
fi

# ---- torch: the demo's scheduler decoder in PyTorch eager -------------------------------------------
# A yardstick, not a check of ggmlx: no torch (or a torch without CUDA, exit 2) is a skip. The
# demo's figure is read before the virtual step adds a second demo to demo.log; the output joins
# demo.log ($OUT brings back 8 files at most).
demo_tps=$(grep -A 1 'decoder via the scheduler' "$demo_log" | sed -n 's/.* \([0-9][0-9.]*\) tokens\/s.*/\1/p' |
    head -n 1 || true)
t0=$(date +%s%N)
if ! timeout 60 "$py" -c 'import torch' >/dev/null 2>&1; then
    record torch skip "$(elapsed_s "$t0")" "no torch for $py"
else
    echo "--- torch-decoder.py --device cuda ($py)" >>"$demo_log"
    run_step torch 120 "$demo_log" "$py" "$root/cuda/bench/torch-decoder.py" --device cuda
    torch_tps=$(sed -n 's/^torch-decoder: \([0-9][0-9.]*\) tokens\/s.*/\1/p' "$demo_log" | tail -n 1 || true)
    st=$(status_of "$step_rc")
    if [ "$step_rc" = 2 ]; then
        st=skip
        key=$(grep '^torch-decoder:' "$demo_log" | tail -n 1 | sed 's/^torch-decoder: //')
    elif [ -n "$torch_tps" ] && [ -n "$demo_tps" ]; then
        key="torch eager ${torch_tps} tokens/s, ggmlx scheduler ${demo_tps} tokens/s: ggmlx/torch $(awk -v a="$demo_tps" \
            -v b="$torch_tps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')x"
    else
        key="torch eager ${torch_tps:-?} tokens/s, ggmlx scheduler ${demo_tps:-?} tokens/s (see demo.log)"
    fi
    record torch "$st" "$(elapsed_s "$t0")" "$key"
fi

# ---- virtual: GGML_CUDA_DEVICES=3 on the one GPU --------------------------------------------------------
if have cuda-virtual-check && have ggml-demo; then
    echo "--- cuda-virtual-check (GGML_CUDA_DEVICES=3)" >>"$demo_log"
    run_step virtual 60 "$demo_log" "$bin/cuda-virtual-check" --devices 3
    v_rc=$step_rc
    v_time=$step_time
    v_key=$(grep '^cuda-virtual-check:' "$demo_log" | tail -n 1 | sed 's/^cuda-virtual-check: //')
    echo "--- ggml-demo with GGML_CUDA_DEVICES=3" >>"$demo_log"
    run_step "virtual demo" 60 "$demo_log" env GGML_CUDA_DEVICES=3 "$bin/ggml-demo" --no-trace
    if [ "$v_rc" = 0 ]; then
        v_rc=$step_rc
    fi
    v_time=$(awk -v a="$v_time" -v b="$step_time" 'BEGIN { printf "%.1f", a + b }')
    record virtual "$(status_of "$v_rc")" "$v_time" "${v_key:-see demo.log}; demo on 3 devices: $(tail -n 1 "$demo_log")"
else
    record virtual "FAIL (not built)" 0.0 "-"
fi

# ---- comm ----------------------------------------------------------------------------------------------
# NCCL is dlopen()ed by name; where the loader's path lacks it (a pip-installed NCCL, say), the
# first copy found is named through GGMLX_NCCL_LIBRARY. Output joins devices.log: $OUT brings back
# at most 8 files, and those are taken.
if have cuda-comm-check; then
    comm_env=()
    if [ -z "${GGMLX_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
        pip_nccl=$(python3 -c 'import os, nvidia.nccl as m; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' \
            2>/dev/null || true)
        for cand in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 "$pip_nccl"; do
            if [ -n "$cand" ] && [ -f "$cand" ]; then
                comm_env=("GGMLX_NCCL_LIBRARY=$cand")
                break
            fi
        done
    fi
    echo "--- cuda-comm-check ${comm_env[*]:-}" >>"$gpu_log"
    run_step comm 60 "$gpu_log" env "${comm_env[@]}" "$bin/cuda-comm-check"
    key=$(grep -E '^cuda-comm-check:' "$gpu_log" | tail -n 1 | sed 's/^cuda-comm-check: //')
    if [ "$step_rc" = 3 ]; then
        record comm skip "$step_time" "${key:-no NCCL library}"
    else
        record comm "$(status_of "$step_rc")" "$step_time" "${key:-see devices.log}"
    fi
else
    record comm "FAIL (not built)" 0.0 "-"
fi

# ---- module: the CUDA backend as a loadable module (GGML_BACKEND_DL) ------------------------------------
# CI builds and runs this configuration only where there is no GPU; here the module must load.
dl_build=$build-dl
# dl_check BUILD, run through `bash -c` so that run_step's timeout bounds it; its scratch files stay
# out of $OUT (which brings back 8 files at most)
# shellcheck disable=SC2317 # invoked indirectly, through bash -c
dl_check() {
    local b=$1 out scratch rc=1
    scratch=$(mktemp -d)
    echo "--- ggml-devices --load-all (GGML_BACKEND_DL)"
    if ! out=$("$b/bin/ggml-devices" --load-all 2>"$scratch/err"); then
        cat "$scratch/err"
    elif echo "$out" && ! grep -qE '^ +[0-9]+ +CUDA0 ' <<<"$out" || [ -s "$scratch/err" ]; then
        echo "module: CUDA0 not found through libggml-cuda.so, or something was logged: $(cat "$scratch/err")"
    elif ! { echo "--- ggml-demo --no-trace (GGML_BACKEND_DL)" &&
             "$b/bin/ggml-demo" --no-trace >"$scratch/demo" 2>&1; tail -n 2 "$scratch/demo" &&
             grep -q 'passed on CUDA0' "$scratch/demo"; }; then
        echo "module: the demo did not pass on CUDA0"
    elif ! { echo "--- ggml-devices --load-all with CUDA_VISIBLE_DEVICES empty" &&
             out=$(CUDA_VISIBLE_DEVICES='' "$b/bin/ggml-devices" --load-all 2>"$scratch/err") &&
             cat "$scratch/err" && [ "$(wc -l <"$scratch/err")" -eq 1 ] &&
             grep -q 'CUDA module not used: .*no CUDA device' "$scratch/err" && grep -qE '^ +0 +CPU ' <<<"$out"; }; then
        echo "module: without a visible GPU, want one 'CUDA module not used' line and the CPU device"
    else
        rc=0
    fi
    rm -rf "$scratch"
    return "$rc"
}
if [ "$skip_build" = 1 ]; then
    record module skip 0.0 "GPU_CHECK_SKIP_BUILD=1"
else
    echo "--- module build (GGML_BACKEND_DL=ON) in $dl_build" >>"$gpu_log"
    mod_t0=$(date +%s%N)
    run_step "module build" 150 "$gpu_log" bash -c "cmake -S '$root' -B '$dl_build' -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DCMAKE_CUDA_ARCHITECTURES=$arch -DGGML_BUILD_TESTS=OFF \
        -DGGML_BUILD_BENCH=OFF >/dev/null && cmake --build '$dl_build' -j $jobs --target ggml-devices ggml-demo >/dev/null"
    if [ "$step_rc" = 0 ]; then
        export -f dl_check
        # shellcheck disable=SC2016 # $1 is bash -c's own argument
        run_step module 90 "$gpu_log" bash -c 'dl_check "$1"' dl_check "$dl_build"
    fi
    record module "$(status_of "$step_rc")" "$(elapsed_s "$mod_t0")" "libggml-cuda.so loaded by ggml_backend_load_all; demo on CUDA0 (see devices.log)"
fi

# ---- llama: llama.cpp on the CUDA backend against upstream's CPU logits ------------------------------
# build-gpu is installed into a scratch prefix and scripts/llama-gpu.sh builds the carried, trimmed
# llama.cpp against it, runs the carried models with -ngl 99 (flash attention off and on) against
# upstream's carried CPU bases, and fails a case whose weights did not go to CUDA0. Without the
# carried .llama-gpu/ (scripts/llama-gpu-pack.sh makes it) the step is a skip. Output joins
# conformance.log ($OUT brings back 8 files at most, and those are taken).
llama_pack=${LLAMA_GPU_PACK:-$root/.llama-gpu}
llama_prefix=$build-prefix
if [ ! -f "$llama_pack/pack.txt" ]; then
    record llama skip 0.0 "no $llama_pack: run scripts/llama-gpu-pack.sh where the network is and carry .llama-gpu"
elif [ ! -f "$build/cmake_install.cmake" ]; then
    record llama "FAIL (not built)" 0.0 "-"
else
    echo "--- llama: scripts/llama-gpu.sh on build-gpu installed into $llama_prefix" >>"$conf_log"
    run_step llama 240 "$conf_log" bash -c "rm -rf '$llama_prefix' && cmake --install '$build' --prefix '$llama_prefix' >/dev/null &&
        LLAMA_GPU_REQUIRE_DEVICE=${LLAMA_GPU_REQUIRE_DEVICE:-CUDA0} JOBS=$jobs LLAMA_GPU_PACK='$llama_pack' '$root/scripts/llama-gpu.sh' '$llama_prefix'"
    key=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$conf_log" | tail -n 1 || true)
    if [ "$step_rc" = 3 ]; then
        record llama skip "$step_time" "no usable pack (see conformance.log)"
    else
        record llama "$(status_of "$step_rc")" "$step_time" "${key:-see conformance.log}: F16, Q8_0, Q4_0, fa off/on, weights on ${LLAMA_GPU_REQUIRE_DEVICE:-CUDA0}"
    fi
fi

# ---- compute-sanitizer -------------------------------------------------------------------------------
san_log=$logs/sanitizer.log
: >"$san_log"
if ! command -v compute-sanitizer >/dev/null 2>&1; then
    record sanitizer skip 0.0 "compute-sanitizer not on PATH"
elif ! have ggml-conformance; then
    record sanitizer "FAIL (not built)" 0.0 "-"
else
    # one child per filter: each runs a few cases, and a memcheck report names its filter
    IFS=';' read -r -a filter_list <<<"$filters"
    san_t0=$(date +%s%N)
    san_bad=0
    san_timeout=0
    for f in "${filter_list[@]}"; do
        echo "--- filter '$f'" >>"$san_log"
        run_step "sanitizer '$f'" 45 "$san_log" env GGMLX_TEST_REQUIRE_CUDA=1 \
            compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
            "$bin/ggml-conformance" --device CUDA0 --filter "$f"
        case $step_rc in
        0) ;;
        124 | 137) san_timeout=1 ;;
        *) san_bad=$((san_bad + 1)) ;;
        esac
    done
    n_err=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$san_log" | awk '{ s += $1 } END { print s + 0 }')
    st=ok
    if [ "$san_timeout" = 1 ]; then
        st=TIMEOUT
    elif [ "$san_bad" -gt 0 ]; then
        st="FAIL ($san_bad of ${#filter_list[@]} runs)"
    fi
    record sanitizer "$st" "$(elapsed_s "$san_t0")" "memcheck: ${n_err} errors over ${#filter_list[@]} filters"
fi

print_summary
if [ "$failed" -gt 0 ]; then
    exit 1
fi
exit 0
