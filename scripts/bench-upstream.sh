#!/usr/bin/env bash
# Quantized formats, ggmlx against upstream: builds tests/bench-quant/bench-quant-client.c
# (public ggml.h, ggml-backend.h and ggml-cpu.h only) twice with the same compiler and flags, once
# linked to an install of ggmlx and once to upstream's ggml as vendored in the llama-cpp-python
# sdist (CPU only, Release, GGML_NATIVE as upstream defaults), runs the two alternating (ours,
# upstream, ours, upstream, ...) and prints markdown tables:
#   - mul_mat of a 16384x4096 weight of each quantized type on the CPU backend (2 threads) by one
#     F32 column (GB/s of weight bytes, next to a streaming-read reference, mem_read: the median
#     and best of tests/bench-quant/mem-read.h on as many bytes as the Q8_0 weight and on 512 MiB)
#     and by 512 columns (GFLOP/s): each library's median over the rounds, and ours/upstream;
#   - the round-trip error (relative RMS of dequantize(quantize(x)) - x) of the types whose
#     quantizer has no Python oracle, ours and upstream's on the same data, and the ratio (the
#     goal is within 1%).
# It prints and asserts nothing. If upstream's program crashes, upstream is rebuilt with its AMX
# code left out and run again (the output says so).
#
# Usage: scripts/bench-upstream.sh [ROUNDS]
#   ROUNDS (default 2) alternating runs of each program.
#
# Everything is built under build-llama/ (LLAMA_WORK), which git ignores.
#
# Environment: BENCH_QUANT_TYPES (comma-separated, default all), BENCH_QUANT_RUNS (timed runs per
# product in a round, default 5), BENCH_QUANT_ROWS (default 16384), BENCH_QUANT_COLS (default
# 512), BENCH_QUANT_THREADS (default 2), CC, CMAKE_ARGS, LLAMA_WORK, JOBS.
set -euo pipefail

GGMLX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$GGMLX_ROOT/scripts/deps.sh"
# shellcheck source=scripts/llama-common.sh
. "$GGMLX_ROOT/scripts/llama-common.sh"

ROUNDS=${1:-2}
SRC=$GGMLX_ROOT/tests/bench-quant/bench-quant-client.c
CC=${CC:-cc}
OUT="$LLAMA_WORK/bench-quant"
NOAMX_PREFIX="$LLAMA_WORK/up-ggml-noamx-prefix"
CLIENT_ARGS=(--threads "${BENCH_QUANT_THREADS:-2}" --runs "${BENCH_QUANT_RUNS:-5}"
             --rows "${BENCH_QUANT_ROWS:-16384}" --cols "${BENCH_QUANT_COLS:-512}")
if [ -n "${BENCH_QUANT_TYPES:-}" ]; then
    CLIENT_ARGS+=(--types "$BENCH_QUANT_TYPES")
fi

case $ROUNDS in
    '' | *[!0-9]* | 0)
        echo "error: rounds must be a positive number, not '$ROUNDS'" >&2
        exit 1
        ;;
esac

llama_ensure_tools
mkdir -p "$OUT"
echo "bench-quant: ggmlx against upstream ggml (llama.cpp $LLAMA_CPP_COMMIT), $ROUNDS alternating rounds"
echo "  $(date -u '+%Y-%m-%d %H:%M UTC'), ggmlx $(git -C "$GGMLX_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'),"\
     "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1), $(ggmlx_nproc) CPUs;"\
     "client: ${CLIENT_ARGS[*]}; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
llama_fetch
llama_build_ggmlx
llama_build_upstream_ggml

# client_link NAME PREFIX: the client built against the ggml install PREFIX. Strict C11 with the
# POSIX declarations it uses (clock_gettime, strcasecmp).
client_link() {
    local name=$1 prefix=$2 libdir
    libdir=$(dirname "$(find "$prefix" -name 'libggml-base.so' | head -n 1)")
    llama_step "build bench-quant-client against $name" "$OUT/$name.build.log" \
        "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -Werror=implicit-function-declaration -O2 -DNDEBUG \
            -I"$prefix/include" "$SRC" -o "$OUT/bench-quant-$name" \
            -L"$libdir" -Wl,-rpath,"$libdir" -lggml -lggml-cpu -lggml-base -lm -pthread
}

# Upstream with its AMX code left out: GGML_NATIVE stays on, and explicit -mno-amx-* flags win
# over what -march=native turns on.
build_upstream_noamx() {
    local b="$LLAMA_WORK/up-ggml-noamx-build" launcher gen=()
    local noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
    read -r -a launcher <<<"$(llama_launcher_args)"
    [ -f "$b/CMakeCache.txt" ] || gen=(-G Ninja)
    mkdir -p "$b"
    llama_step "upstream ggml configure (AMX off)" "$b/configure.log" \
        cmake -S "$LLAMA_CPP_DIR/ggml" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
            -DCMAKE_INSTALL_PREFIX="$NOAMX_PREFIX" -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=OFF \
            -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
            -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" \
            -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF || return 1
    llama_step "upstream ggml build (AMX off)" "$b/build.log" cmake --build "$b" -j"$LLAMA_JOBS" || return 1
    rm -rf "$NOAMX_PREFIX"
    llama_step "upstream ggml install (AMX off)" "$b/install.log" cmake --install "$b" || return 1
}

client_link ggmlx "$GGMLX_PREFIX"
client_link upstream "$UPSTREAM_PREFIX"

# run_client NAME ROUND ARGS...: one run into $OUT/NAME.ROUND.txt; its exit status.
run_client() {
    local name=$1 round=$2; shift 2
    "$OUT/bench-quant-$name" --dump "$OUT/bytes-$name" "$@" >"$OUT/$name.$round.txt" 2>"$OUT/$name.$round.err"
}

note=""
rm -rf "$OUT/bytes-ggmlx" "$OUT/bytes-upstream"
mkdir -p "$OUT/bytes-ggmlx" "$OUT/bytes-upstream"
rm -f "$OUT"/ggmlx.*.txt "$OUT"/upstream.*.txt
"$OUT/bench-quant-ggmlx" --mem-read --no-mm --no-rt "${CLIENT_ARGS[@]}" >"$OUT/mem_read.txt"
for ((r = 1; r <= ROUNDS; r++)); do
    rt=()
    # the error is deterministic: once is enough; its bytes are kept to find where the two differ
    [ "$r" -eq 1 ] || rt=(--no-rt)
    echo "  round $r/$ROUNDS: ggmlx"
    st=0
    run_client ggmlx "$r" "${rt[@]}" "${CLIENT_ARGS[@]}" || st=$?
    if [ "$st" -ne 0 ]; then
        echo "  ggmlx's run failed (exit $st), its partial output is kept: $OUT/ggmlx.$r.err"
        tail -n 5 "$OUT/ggmlx.$r.err" | sed 's/^/    | /'
    fi
    echo "  round $r/$ROUNDS: upstream"
    st=0
    run_client upstream "$r" "${rt[@]}" "${CLIENT_ARGS[@]}" || st=$?
    if [ "$st" -ne 0 ]; then
        if [ -z "$note" ]; then
            note="upstream's first run failed (exit $st); upstream was rebuilt with AMX off (-DGGML_AMX_*=OFF, -mno-amx-*) and all its figures are from that build"
            echo "  $note"
            build_upstream_noamx
            client_link upstream "$NOAMX_PREFIX"
            for ((k = 1; k <= r; k++)); do
                rt=()
                [ "$k" -eq 1 ] || rt=(--no-rt)
                st=0
                run_client upstream "$k" "${rt[@]}" "${CLIENT_ARGS[@]}" || st=$?
                [ "$st" -eq 0 ] || echo "  upstream (AMX off) round $k failed too (exit $st): $OUT/upstream.$k.err"
            done
        else
            echo "  upstream round $r failed (exit $st): $OUT/upstream.$r.err"
        fi
    fi
done

echo "  done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" \
     "(a loaded machine slows the 2-thread products, the 1-column ones most)"
python3 - "$OUT" "$ROUNDS" "$note" "${BENCH_QUANT_COLS:-512}" "${BENCH_QUANT_ROWS:-16384}" <<'PY'
import statistics, sys
out, rounds, note, cols, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
res = {}   # (impl, kind, type[, data]) -> [values]
na = {}    # (impl, type) -> reason
hashes = {}  # (impl, "rt", type, data) -> hash of the quantized bytes
order = {"mv": [], "mm": [], "rt": []}
for impl in ("ggmlx", "upstream"):
    for r in range(1, rounds + 1):
        try:
            lines = open(f"{out}/{impl}.{r}.txt").read().splitlines()
        except OSError:
            continue
        for ln in lines:
            f = ln.split()
            if len(f) >= 3 and f[0] in ("mv", "mm"):
                key = (f[0], f[1])
                val = float(f[2])
            elif len(f) == 5 and f[0] == "rt":
                key = ("rt", f[1], f[2])
                val = float(f[3])
                hashes[(impl,) + key] = f[4]
            elif len(f) >= 3 and f[1] == "n/a":
                na.setdefault((impl, f[0]), " ".join(f[2:]))
                continue
            else:
                continue
            if key not in order[key[0]]:
                order[key[0]].append(key)
            res.setdefault((impl,) + key, []).append(val)
mem = [l.split() for l in open(f"{out}/mem_read.txt").read().splitlines() if l.startswith("mem_read")]

def cell(impl, key):
    v = res.get((impl,) + key)
    if v:
        return statistics.median(v)
    return None

def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)

def ratio(a, b, spec=".2f"):
    return "-" if a is None or b is None or b == 0 else format(a / b, spec)

def types_of(kind):
    seen = []
    for k in order[kind]:
        if k[1] not in seen:
            seen.append(k[1])
    return seen

print()
if note:
    print(f"Note: {note}.\n")
for kind, title, unit in (("mv", f"mul_mat {rows}x4096 weight, 1 column (weights read)", "GB/s"),
                          ("mm", f"mul_mat {rows}x4096 weight, {cols} columns", "GFLOP/s")):
    print(f"### {title}, {unit}, median of {rounds} rounds\n")
    print(f"| type | ggmlx | upstream | ggmlx/upstream |")
    print(f"|---|---:|---:|---:|")
    ts = types_of(kind) or []
    for t in sorted(set(ts) | {k[1] for k in na}, key=lambda t: ts.index(t) if t in ts else 99):
        a, b = cell("ggmlx", (kind, t)), cell("upstream", (kind, t))
        print(f"| {t} | {fmt(a, '.1f')} | {fmt(b, '.1f')} | {ratio(a, b)} |")
    if kind == "mv":
        # mem_read THREADS MEDIAN BEST LOADS MIB: as large as the Q8_0 weight, then 512 MiB
        for m in mem:
            size = f"{m[5]} MiB, " if len(m) > 5 else ""
            print(f"| mem_read ({size}{m[1]} threads, reference), median / best "
                  f"| {float(m[2]):.1f} / {float(m[3] if len(m) > 3 else m[2]):.1f} | | |")
    print()
print("### Round-trip error sqrt(sum (dq(q(x))-x)^2 / sum x^2), 64x4096 values (goal: within 1%)\n")
print("| type | data | ggmlx | upstream | ggmlx/upstream | same bytes |")
print("|---|---|---:|---:|---:|---|")
for key in order["rt"]:
    a, b = cell("ggmlx", key), cell("upstream", key)
    ha, hb = hashes.get(("ggmlx",) + key), hashes.get(("upstream",) + key)
    same = "-" if ha is None or hb is None else ("yes" if ha == hb else "no")
    print(f"| {key[1]} | {key[2]} | {fmt(a, '.5f')} | {fmt(b, '.5f')} | {ratio(a, b, '.4f')} | {same} |")
# where the quantized bytes first differ (block = 4096/elements-per-block blocks a row)
blocks = {"q2_K": (256, 84), "q3_K": (256, 110), "q4_K": (256, 144), "q5_K": (256, 176), "q6_K": (256, 210),
          "iq2_xxs": (256, 66), "iq2_xs": (256, 74), "iq2_s": (256, 82), "iq3_xxs": (256, 98),
          "iq3_s": (256, 110), "iq1_s": (256, 50), "iq1_m": (256, 56), "iq4_nl": (32, 18),
          "iq4_xs": (256, 136), "nvfp4": (64, 36), "q1_0": (128, 18), "q2_0": (64, 18)}
for key in order["rt"]:
    ha, hb = hashes.get(("ggmlx",) + key), hashes.get(("upstream",) + key)
    if ha is None or hb is None or ha == hb or key[1] not in blocks:
        continue
    try:
        a = open(f"{out}/bytes-ggmlx/{key[1]}.{key[2]}.bin", "rb").read()
        b = open(f"{out}/bytes-upstream/{key[1]}.{key[2]}.bin", "rb").read()
    except OSError:
        continue
    qk, size = blocks[key[1]]
    diff = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
    if not diff:
        continue
    i, per_row = diff[0], 4096 // qk
    nblk = len({d // size for d in diff})
    print(f"\n{key[1]} {key[2]}: {nblk} of {len(a) // size} blocks differ; first at row {i // size // per_row} "
          f"block {i // size % per_row} byte {i % size}: ggmlx 0x{a[i]:02x}, upstream 0x{b[i]:02x}", end="")
print()
by_reason = {}
for (impl, t), why in na.items():
    by_reason.setdefault((impl, why), []).append(t)
for (impl, why), ts in sorted(by_reason.items()):
    print(f"{impl} n/a ({why}): {', '.join(ts)}")
PY
