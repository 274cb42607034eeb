#!/usr/bin/env bash
# Checks that each library exports only what the public headers declare.
#
#   scripts/check-exports.sh LIBDIR [INCLUDEDIR]
#
# LIBDIR holds the installed (or built) libggml*.so; INCLUDEDIR the headers that go with them
# (default: include/ of this checkout). Every symbol that `nm -D --defined-only` lists for a
# library must be named by a declaration in those headers; the loader's own markers (_init,
# _fini, _edata, ...) and the entry points of a backend module (ggml_backend_init,
# ggml_backend_score, and ggmlx's optional ggmlx_backend_unavailable_reason) are allowed. Prints one line
# per library with its count, then every offender; exits 1 when there is one, 2 on bad usage.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 LIBDIR [INCLUDEDIR]" >&2
    exit 2
fi
libdir=$1
incdir=${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/include}
if [ ! -d "$libdir" ] || [ ! -d "$incdir" ]; then
    echo "error: $libdir or $incdir is not a directory" >&2
    exit 2
fi
command -v nm >/dev/null || { echo "error: nm not found (binutils)" >&2; exit 2; }

shopt -s nullglob
headers=("$incdir"/*.h)
# the libraries themselves, not their version-suffixed links
libs=()
for lib in "$libdir"/libggml*.so; do
    libs+=("$lib")
done
shopt -u nullglob
if [ "${#headers[@]}" -eq 0 ] || [ "${#libs[@]}" -eq 0 ]; then
    echo "error: no headers in $incdir or no libggml*.so in $libdir" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Names the headers declare: an identifier followed by '(' (functions) or by ';' / '[' after an
# extern or a GGML_API const (data: GGML_API carries the extern), with comments removed so that
# a name quoted in prose does not count.
sed -e 's://.*$::' "${headers[@]}" |
    perl -0777 -pe 's:/\*.*?\*/::gs' >"$tmp/headers.txt"
{
    grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' "$tmp/headers.txt" | sed -E 's/[[:space:]]*\($//'
    { grep -E '\bextern\b|\bGGML_API[[:space:]]+const\b' "$tmp/headers.txt" || true; } |
        { grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*(;|\[)' || true; } | sed -E 's/[[:space:]]*(;|\[)$//'
    # a backend module's entry points (ggml-backend.h's typedefs name them only in strings; the
    # loader asks ggmlx_backend_unavailable_reason why a module that scored 0 cannot run here)
    printf '%s\n' ggml_backend_init ggml_backend_score ggmlx_backend_unavailable_reason
    # what the linker defines in every shared object
    printf '%s\n' _init _fini _edata _end __bss_start
} | sort -u >"$tmp/declared.txt"

bad=0
for lib in "${libs[@]}"; do
    nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*$//' | sort -u >"$tmp/exported.txt"
    comm -23 "$tmp/exported.txt" "$tmp/declared.txt" >"$tmp/offenders.txt"
    n=$(wc -l <"$tmp/exported.txt")
    n_bad=$(wc -l <"$tmp/offenders.txt")
    if [ "$n_bad" -eq 0 ]; then
        echo "ok: $(basename "$lib") exports $n symbols, all declared in $incdir"
    else
        echo "error: $(basename "$lib") exports $n symbols, $n_bad not declared in $incdir:" >&2
        sed 's/^/    /' "$tmp/offenders.txt" >&2
        bad=1
    fi
done
exit "$bad"
