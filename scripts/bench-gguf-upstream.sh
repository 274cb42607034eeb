#!/usr/bin/env bash
# Reading GGUF metadata, ggmlx against upstream: builds tests/bench-gguf.c (public gguf.h and
# ggml.h only) twice, once linked to an install of ggmlx and once to upstream's ggml as vendored
# in the llama-cpp-python sdist (CPU only, Release), writes the bench file once and has both
# read it in the same run, alternating, and prints each one's median and the ratio.
#
# Usage: scripts/bench-gguf-upstream.sh [RUNS]   (RUNS process pairs, default 15)
#
# The times are whole processes (start, load the libraries, read the metadata, exit) measured
# from outside, so they do not depend on what the program prints; its own output of the last
# run of each is shown too. Everything is built under build-llama/ (LLAMA_WORK), git-ignored.
#
# Environment: BENCH_GGUF_SRC (default tests/bench-gguf.c), CC, LLAMA_WORK, JOBS.
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"

RUNS=${1:-15}
SRC=${BENCH_GGUF_SRC:-$GGMLX_ROOT/tests/bench-gguf.c}
CC=${CC:-cc}
OUT="$LLAMA_WORK/bench-gguf"

if [ ! -f "$SRC" ]; then
    echo "error: $SRC does not exist (the bench program this script runs)" >&2
    exit 1
fi
case $RUNS in
    '' | *[!0-9]*) echo "error: RUNS must be a number, not '$RUNS'" >&2; exit 1 ;;
esac

llama_ensure_tools
mkdir -p "$OUT"
echo "bench-gguf: ggmlx against upstream ggml (llama.cpp $LLAMA_CPP_COMMIT), $RUNS runs each"
llama_fetch
llama_build_ggmlx
llama_build_upstream_ggml

# bench_link NAME PREFIX: builds the bench program against the ggml install PREFIX, the same
# compiler and flags for both.
bench_link() {
    local name=$1 prefix=$2 libdir
    libdir=$(dirname "$(find "$prefix" -name 'libggml-base.so' | head -n 1)")
    llama_step "build bench-gguf against $name" "$OUT/$name.build.log" \
        "$CC" -std=c11 -O2 -DNDEBUG -I"$GGMLX_ROOT/tests" -I"$prefix/include" "$SRC" \
            -o "$OUT/bench-gguf-$name" -L"$libdir" -Wl,-rpath,"$libdir" -lggml -lggml-base -lm -pthread
}

have=()
bench_link upstream "$UPSTREAM_PREFIX" && have+=(upstream)
bench_link ggmlx "$GGMLX_PREFIX" && have+=(ggmlx)
if [ "${#have[@]}" -eq 0 ]; then
    echo "error: the bench program builds against neither library" >&2
    exit 1
fi

# Upstream writes the file when it can, so that ggmlx reads a file it did not write itself.
file="$OUT/bench.gguf"
rm -f "$file"
llama_step "write $file with ${have[0]}" "$OUT/write.log" "$OUT/bench-gguf-${have[0]}" --write "$file"
echo "  file: $(stat -c %s "$file") bytes"

# Alternating runs, so that both see the same machine load; the median of each.
python3 - "$RUNS" "$file" "$OUT" "${have[@]}" <<'EOF'
import statistics, subprocess, sys, time
runs, path, out, names = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
times = {n: [] for n in names}
last = {}
for _ in range(runs):
    for n in names:
        t0 = time.perf_counter()
        p = subprocess.run([f"{out}/bench-gguf-{n}", path], capture_output=True, text=True)
        dt = (time.perf_counter() - t0) * 1e3
        if p.returncode != 0:
            sys.exit(f"bench-gguf-{n} {path} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        times[n].append(dt)
        last[n] = p.stdout + p.stderr
for n in names:
    print(f"  output of bench-gguf-{n} (last run):")
    for line in last[n].strip().splitlines():
        print(f"    | {line}")
med = {n: statistics.median(times[n]) for n in names}
for n in names:
    t = sorted(times[n])
    print(f"  {n:8s} median {med[n]:8.2f} ms (min {t[0]:.2f}, max {t[-1]:.2f}) per process, {runs} runs")
if len(names) == 2:
    print(f"bench-gguf: ggmlx {med['ggmlx']:.2f} ms, upstream {med['upstream']:.2f} ms, "
          f"ratio ggmlx/upstream {med['ggmlx'] / med['upstream']:.2f}")
else:
    print(f"bench-gguf: only {names[0]} builds; no ratio")
EOF
