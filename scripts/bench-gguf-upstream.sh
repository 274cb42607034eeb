#!/usr/bin/env bash
# Reading GGUF metadata, ggmlx against upstream: builds tests/bench-gguf.c (public gguf.h and
# ggml.h only) twice with the same compiler and flags, once linked to an install of ggmlx and
# once to upstream's ggml as vendored in the llama-cpp-python sdist (CPU only, Release); writes
# the bench file once with upstream's writer, has both read it in the same run, alternating, and
# prints each one's median and the ratio.
#
# Usage: scripts/bench-gguf-upstream.sh [ROUNDS]
#   ROUNDS (default 5) alternating runs of each program, each timing BENCH_GGUF_RUNS reads
#   in-process; the figure per library is the median of its rounds' medians.
#
# Everything is built under build-llama/ (LLAMA_WORK), which git ignores.
#
# Environment: BENCH_GGUF_SRC (default tests/bench-gguf.c), BENCH_GGUF_RUNS (reads per round,
# default 21), CC, CMAKE_ARGS, LLAMA_WORK, JOBS.
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"

ROUNDS=${1:-5}
RUNS=${BENCH_GGUF_RUNS:-21}
SRC=${BENCH_GGUF_SRC:-$GGMLX_ROOT/tests/bench-gguf.c}
CC=${CC:-cc}
OUT="$LLAMA_WORK/bench-gguf"

if [ ! -f "$SRC" ]; then
    echo "error: $SRC does not exist (the bench program this script runs)" >&2
    exit 1
fi
for n in "$ROUNDS" "$RUNS"; do
    case $n in
        '' | *[!0-9]* | 0)
            echo "error: rounds and runs must be positive numbers, not '$n'" >&2
            exit 1
            ;;
    esac
done

llama_ensure_tools
mkdir -p "$OUT"
echo "bench-gguf: ggmlx against upstream ggml (llama.cpp $LLAMA_CPP_COMMIT), $ROUNDS rounds of $RUNS reads each"
llama_fetch
llama_build_ggmlx
llama_build_upstream_ggml

# bench_link NAME PREFIX: builds the bench program against the ggml install PREFIX. gguf and
# ggml_init live in libggml-base in both. The program uses POSIX calls (strdup, access), which
# strict C11 does not declare: an implicit declaration would truncate strdup's pointer.
bench_link() {
    local name=$1 prefix=$2 libdir
    libdir=$(dirname "$(find "$prefix" -name 'libggml-base.so' | head -n 1)")
    llama_step "build bench-gguf against $name" "$OUT/$name.build.log" \
        "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -Werror=implicit-function-declaration -O2 -DNDEBUG -DBENCH_GGUF_IMPL="\"$name\"" -I"$prefix/include" "$SRC" \
            -o "$OUT/bench-gguf-$name" -L"$libdir" -Wl,-rpath,"$libdir" -lggml-base -lm -pthread
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
llama_step "write the file with ${have[0]}" "$OUT/write.log" \
    "$OUT/bench-gguf-${have[0]}" --write --file "$file" --runs 1
echo "  file: $file, $(stat -c %s "$file") bytes"

# Alternating rounds, so that both see the same machine load. Each program times its reads
# itself and prints "bench-gguf: <impl> <ms> ms median (...)".
python3 - "$ROUNDS" "$RUNS" "$file" "$OUT" "${have[@]}" <<'PY'
import re, statistics, subprocess, sys
rounds, runs, path, out, names = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
pat = re.compile(r"^bench-gguf: \S+ ([0-9.]+) ms median", re.M)
meds = {n: [] for n in names}
for _ in range(rounds):
    for n in names:
        cmd = [f"{out}/bench-gguf-{n}", "--file", path, "--runs", runs]
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = pat.search(p.stdout)
        if p.returncode != 0 or not m:
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        meds[n].append(float(m.group(1)))
med = {n: statistics.median(meds[n]) for n in names}
for n in names:
    rs = " ".join(f"{x:.2f}" for x in meds[n])
    print(f"  {n:8s} {med[n]:8.2f} ms, median of {rounds} rounds of {runs} reads (round medians: {rs})")
if len(names) == 2:
    print(f"bench-gguf: ggmlx {med['ggmlx']:.2f} ms, upstream {med['upstream']:.2f} ms, "
          f"ratio ggmlx/upstream {med['ggmlx'] / med['upstream']:.2f}")
else:
    print(f"bench-gguf: only {names[0]} builds, no ratio")
PY
