# shellcheck shell=bash
# Sourced by the other scripts: installs the Debian packages a build needs when
# they are missing. Nothing is touched when everything is already there.

# ggmlx_have_pkg PKG: the Debian package PKG is installed.
ggmlx_have_pkg() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# ggmlx_ensure_packages PKG...: apt-get install the listed packages that are missing.
ggmlx_ensure_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        ggmlx_have_pkg "$pkg" || missing+=("$pkg")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0

    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: missing packages (${missing[*]}) and no apt-get to install them" >&2
        return 1
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "error: missing packages (${missing[*]}); run as root or install sudo" >&2
            return 1
        fi
    fi
    # apt's and dpkg's progress goes to a log: one line here says what is installed, and the
    # log is shown only when something fails
    local log="${TMPDIR:-/tmp}/ggmlx-deps.log"
    echo "installing ${missing[*]} with apt-get (log: $log)" >&2
    if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
               "${missing[@]}"; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "error: apt-get could not install ${missing[*]} (log: $log)" >&2
        return 1
    fi
}

# ggmlx_build_tools: the tools both scripts need (a package is skipped when its
# command is already on PATH, e.g. a newer cmake installed some other way).
ggmlx_build_tools() {
    local want=()
    command -v cmake >/dev/null 2>&1      || want+=(cmake)
    command -v ninja >/dev/null 2>&1      || want+=(ninja-build)
    command -v pkg-config >/dev/null 2>&1 || want+=(pkg-config)
    command -v gcc >/dev/null 2>&1        || want+=(gcc)
    command -v g++ >/dev/null 2>&1        || want+=(g++)
    ggmlx_ensure_packages "${want[@]}" "$@"
}

# ggmlx_nproc: number of CPUs to build with.
ggmlx_nproc() {
    nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2
}

# ggmlx_configure BUILD_DIR ARGS...: configure with Ninja, unless the build
# directory already exists with some other generator (then keep that one).
ggmlx_configure() {
    local dir=$1; shift
    local gen=()
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        gen=(-G Ninja)
    fi
    cmake -S "$GGMLX_ROOT" -B "$dir" "${gen[@]}" "$@"
}
