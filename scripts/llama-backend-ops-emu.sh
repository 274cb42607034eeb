#!/usr/bin/env bash
# Upstream's test-backend-ops (test mode) on the emulated CUDA device CUDA0: every case whose op
# ggmlx's CUDA backend claims (supports_op) is computed by cuda/'s kernels and host code on the
# CUDA emulator (tests/cuda-emu/, no GPU needed) and compared with the CPU backend.
#
#   scripts/llama-backend-ops-emu.sh TEST_BACKEND_OPS [TEST_BACKEND_OPS_ARGS...]
#
# TEST_BACKEND_OPS is a test-backend-ops built against a ggmlx install of THIS tree (for example
# build-llama/llama-x/bin/test-backend-ops from scripts/llama-compare.sh): the module and the
# install must be the same sources, since the module calls the install's libggml-base. Extra
# arguments go to test-backend-ops (e.g. -o MUL_MAT, -p REGEX, -j 2).
#
# Builds the target ggml-cuda-emu-module (tests/CMakeLists.txt; needs Criterion, as the test
# build does) in $EMU_BUILD (default build-llama/emu-module-build), runs
#   GGML_BACKEND_PATH=<module> test-backend-ops test -b CUDA0 ...
# with the log in $EMU_LOG (default build-llama/compare/test-backend-ops-cuda-emu.log) and prints
#   test-backend-ops CUDA0 (emulated): N/M passed, K not supported
# Exit status: 0 when every case run passed, 1 when one failed (they are listed) or the run
# broke, 2 on bad usage, 3 when it could not run here (a skip: no Criterion, no module).
#
# Time (2026-12-04, 2 vCPUs): the whole run takes 6 to 8 min, 3568 cases run and 17425 not
# supported; the 20 SOFT_MAX cases of about 1024 x 1024 take 40% of it (about 7 s each on the
# emulator). For a quick run without them: -p '^(?!.*ne=\[102[34],102[34],)'.
#
# Sourced (by llama-compare.sh, with GGMLX_ROOT set and deps.sh + llama-common.sh sourced), it
# only defines llama_backend_ops_emu, which does the above and returns that status.
#
# Environment: GGML_CUDA_DEVICES (emulated devices, default 1: only CUDA0 is tested),
# EMU_BUILD, EMU_LOG, JOBS.

# llama_backend_ops_emu BIN [ARGS...]
llama_backend_ops_emu() {
    local bin=$1; shift
    local build=${EMU_BUILD:-$LLAMA_WORK/emu-module-build}
    local log=${EMU_LOG:-$LLAMA_WORK/compare/test-backend-ops-cuda-emu.log}
    local module="$build/tests/cuda-emu-module/libggml-cuda-emu-module.so"
    local launcher t0 rc
    if [ ! -x "$bin" ]; then
        echo "test-backend-ops CUDA0 (emulated): skipped, no program $bin"
        return 3
    fi
    read -r -a launcher <<<"$(llama_launcher_args)"
    mkdir -p "$build" "$(dirname "$log")"
    # Release as the install; tests on (the emulator's targets live in the test build), nothing else.
    # A test build that already has the target (CI's build-emu) is used as it is.
    if grep -q 'ggml-cuda-emu-module' "$build/build.ninja" 2>/dev/null; then
        :
    elif ! ggmlx_configure "$build" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" -DGGML_CUDA=OFF \
            -DGGML_BUILD_TESTS=ON -DGGML_BUILD_TOOLS=OFF -DGGML_BUILD_BENCH=OFF >"$build/configure.log" 2>&1; then
        echo "test-backend-ops CUDA0 (emulated): FAILED to configure (log: $build/configure.log)"
        tail -n 20 "$build/configure.log" | sed 's/^/    | /'
        return 1
    fi
    if ! grep -q 'ggml-cuda-emu-module' "$build/build.ninja" 2>/dev/null; then
        echo "test-backend-ops CUDA0 (emulated): skipped, no ggml-cuda-emu-module target (Criterion missing?)"
        return 3
    fi
    if ! cmake --build "$build" --target ggml-cuda-emu-module -j"$LLAMA_JOBS" >"$build/build.log" 2>&1; then
        echo "test-backend-ops CUDA0 (emulated): FAILED to build the module (log: $build/build.log)"
        tail -n 30 "$build/build.log" | sed 's/^/    | /'
        return 1
    fi

    t0=$SECONDS
    GGML_CUDA_DEVICES=${GGML_CUDA_DEVICES:-1} GGML_BACKEND_PATH="$module" \
        "$bin" test -b CUDA0 "$@" >"$log" 2>&1
    rc=$?
    llama_backend_ops_emu_report "$log" "$rc" $((SECONDS - t0))
}

# llama_backend_ops_emu_report LOG RC SECONDS: the summary line (and the failed cases) of a run.
llama_backend_ops_emu_report() {
    local log=$1 rc=$2 secs=$3 summary n_pass n_total n_unsup n_fail
    # the device tested must be the emulator's: with a real libggml-cuda in the install, "CUDA"
    # is registered before the module loads, and CUDA0 would be a GPU (or missing)
    if ! grep -q 'Device description: ggmlx emulated GPU' "$log"; then
        echo "test-backend-ops CUDA0 (emulated): FAILED, CUDA0 was not the emulated device (exit $rc, log: $log)"
        grep -E 'GGML_BACKEND_PATH|CUDA0|error' "$log" | head -n 5 | sed 's/^/    | /'
        return 1
    fi
    summary=$(grep -E '^ *[0-9]+/[0-9]+ tests passed' "$log" | tail -n 1)
    n_pass=$(sed -E 's/^ *([0-9]+)\/([0-9]+).*/\1/' <<<"$summary")
    n_total=$(sed -E 's/^ *([0-9]+)\/([0-9]+).*/\2/' <<<"$summary")
    n_unsup=$(grep -c ': not supported' "$log")
    if [ -z "$summary" ]; then
        echo "test-backend-ops CUDA0 (emulated): FAILED, no summary (exit $rc, ${secs} s, log: $log)"
        tail -n 5 "$log" | sed 's/^/    | /'
        return 1
    fi
    echo "test-backend-ops CUDA0 (emulated): $n_pass/$n_total passed, $n_unsup not supported (${secs} s)"
    if [ "$n_total" -eq 0 ]; then
        echo "  no case ran on CUDA0 (a filter that matches nothing?) (log: $log)"
        return 1
    fi
    n_fail=$((n_total - n_pass))
    if [ "$rc" -ne 0 ] || [ "$n_fail" -ne 0 ]; then
        echo "  $n_fail failed (exit $rc, log: $log):"
        # a failed case's console line: "  OP(params): ... FAIL" (the backend's own line has no "(")
        sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ +[A-Z_0-9]+\(.*FAIL' | head -n 20 | sed 's/^/    | /'
        return 1
    fi
    return 0
}

# run as a program: the helpers llama-common.sh and deps.sh provide, then the step
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
        sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'
        [ $# -lt 1 ] && exit 2
        exit 0
    fi
    GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    # shellcheck source=scripts/deps.sh
    . "$GGMLX_ROOT/scripts/deps.sh"
    # shellcheck source=scripts/llama-common.sh
    . "$GGMLX_ROOT/scripts/llama-common.sh"
    llama_backend_ops_emu "$@"
    exit $?
fi
