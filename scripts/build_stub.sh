#!/usr/bin/env bash
# Builds triton_python_backend_stub for one CPython X.Y from Triton release YY.MM sources
# (CPU build: TRITON_ENABLE_GPU=OFF), then checks it needs exactly libpython3.X.so.1.0.
#
# Usage: scripts/build_stub.sh --python X.Y --triton-version YY.MM [options]
#   --source-dir DIR    offline sources: DIR/{python_backend,common,core,backend} (branch rYY.MM)
#                       as unpacked checkouts or as DIR/<name>.tar.gz archives (unpacked into
#                       the build dir); DIR/{pybind11,dlpack,googletest} the same way (googletest
#                       also from /usr/src/googletest); Boost headers from DIR/boost, --boost-dir
#                       or /usr/include (>= 1.76). Without it the repositories are cloned.
#   --python-path PATH  the interpreter to build against (default: pythonX.Y on PATH, pyenv)
#   --boost-dir DIR     a directory holding boost/ headers (e.g. /usr/include) instead of
#                       downloading Boost (needs network otherwise)
#   --build-dir DIR     work directory (default: $TMPDIR/tritonpy-stub-rYY.MM-pyX.Y)
#   --output FILE       where to put the stub (default: ./triton_python_backend_stub)
#   --jobs N            parallel build jobs (default: nproc)
#   --cmake PATH        the cmake to run (default: cmake on PATH); release 25.08 and later need
#                       >= 3.31.8 (pip install 'cmake>=3.31.8,<4' puts one in the venv's bin/)
#   --check-deps        only check the build packages: name each missing one and the apt-get
#                       line that installs them (exit 3 when some are missing)
#   --print-inputs      print what the build depends on (sources, compiler, cmake, Boost,
#                       Python), one 'name=value' a line, and exit: tritonpy's cache key
#   --dry-run           print the commands (one per line, prefixed by '+') without running
# Needs: cmake (>= 3.17; >= 3.31.8 from release 25.08), g++, make, readelf, git (unless
# --source-dir) and the headers of zlib, libarchive, rapidjson, Boost (Debian/Ubuntu: zlib1g-dev
# libarchive-dev rapidjson-dev libboost-dev, googletest; --check-deps says which are missing).
# Build on the server's OS (or use Dockerfile.stub) so glibc/libstdc++ match.
set -euo pipefail

die() { echo "build_stub.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

python="" release="" source_dir="" python_path="" boost_dir="" build_dir="" output=""
jobs="" cmake="" dry_run=0 mode=build
while [ $# -gt 0 ]; do
    case "$1" in
        --python|--triton-version|--source-dir|--python-path|--boost-dir|--build-dir|--output|--jobs|--cmake)
            [ $# -ge 2 ] || die "$1 needs a value"
            opt="$1" value="$2"; shift 2 ;;
        --*=*) opt="${1%%=*}" value="${1#*=}"; shift ;;
        --dry-run) dry_run=1; shift; continue ;;
        --check-deps) mode=check; shift; continue ;;
        --print-inputs) mode=inputs; shift; continue ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    case "$opt" in
        --python) python="$value" ;;
        --triton-version) release="$value" ;;
        --source-dir) source_dir="$value" ;;
        --python-path) python_path="$value" ;;
        --boost-dir) boost_dir="$value" ;;
        --build-dir) build_dir="$value" ;;
        --output) output="$value" ;;
        --jobs) jobs="$value" ;;
        --cmake) cmake="$value" ;;
        *) die "unknown option '$opt' (see --help)" ;;
    esac
done

[[ "$python" =~ ^3\.[0-9]+$ ]] || die "--python X.Y is required, e.g. --python 3.10 (got '$python')"
[[ "$release" =~ ^r?[0-9]{2}\.[0-9]{2}$ ]] \
    || die "--triton-version YY.MM is required, e.g. --triton-version 24.10 (got '$release')"
release="${release#r}"
branch="r$release"
build_dir="${build_dir:-${TMPDIR:-/tmp}/tritonpy-stub-$branch-py$python}"
output="${output:-$PWD/triton_python_backend_stub}"
jobs="${jobs:-$(nproc 2>/dev/null || echo 2)}"
cmake="${cmake:-cmake}"
if [ -n "$source_dir" ]; then
    resolved="$(cd "$source_dir" 2>/dev/null && pwd)" || die "--source-dir $source_dir does not exist"
    source_dir="$resolved"
fi

run() {
    printf '+'; printf ' %q' "$@"; printf '\n'
    if [ "$dry_run" = 0 ]; then "$@"; fi
}

# --- the interpreter -------------------------------------------------------------------------
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
if [ -z "$python_path" ]; then
    candidates=("$(command -v "python$python" || true)")
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$python".*/bin/"python$python"; do
        candidates+=("$candidate")
    done
    for candidate in "${candidates[@]}"; do
        if [ -n "$candidate" ] && [ "$(version_of "$candidate")" = "$python" ]; then
            python_path="$candidate"
            break
        fi
    done
fi
# a pyenv shim or a symlink: build against the real interpreter it runs
if [ -n "$python_path" ] && [ "$(version_of "$python_path")" = "$python" ]; then
    python_path="$("$python_path" -c 'import sys; print(sys.executable)')"
elif [ "$dry_run" = 0 ]; then
    die "no working Python $python found${python_path:+ ($python_path is Python $(version_of "$python_path" || echo '?'))}; install it with its shared library or pass --python-path"
fi
python_path="${python_path:-python$python}"

# --- where each source comes from: a checkout, an archive, a system copy ----------------------
repos=(python_backend common core backend)
deps=(pybind11 dlpack googletest)
# the directory of one source (empty when absent); archives are unpacked on first use
source_of() {
    local name="$1"
    if [ -z "$source_dir" ]; then return 0; fi
    if [ -d "$source_dir/$name" ]; then echo "$source_dir/$name"; return 0; fi
    if [ -f "$source_dir/$name.tar.gz" ]; then echo "$build_dir/src/$name"; return 0; fi
    if [ "$name" = googletest ] && [ -f /usr/src/googletest/CMakeLists.txt ]; then
        echo /usr/src/googletest
    fi
}
# what identifies one source: the archive's digest, the checkout's commit, else its files' digest
fingerprint_of() {
    local name="$1" dir
    if [ -n "$source_dir" ] && [ ! -d "$source_dir/$name" ] && [ -f "$source_dir/$name.tar.gz" ]; then
        echo "archive:$(sha256sum "$source_dir/$name.tar.gz" | cut -d' ' -f1)"; return 0
    fi
    dir="$(source_of "$name")"
    if [ -z "$dir" ] && [ -n "$source_dir" ]; then echo "absent"; return 0; fi
    if [ -z "$dir" ]; then echo "clone:$branch"; return 0; fi
    if [ -e "$dir/.git" ] && commit="$(git -C "$dir" rev-parse HEAD 2>/dev/null)"; then
        echo "commit:$commit"; return 0
    fi
    echo "tree:$(cd "$dir" && find . -type f ! -path './.git/*' -print0 | LC_ALL=C sort -z \
        | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
}
boost_version_in() {  # 107900 for Boost 1.79 (empty when no headers)
    sed -n 's/^#define BOOST_VERSION \([0-9]*\).*/\1/p' "$1/boost/version.hpp" 2>/dev/null || true
}
include_dirs=(${TRITONPY_STUB_INCLUDE_DIRS:-/usr/include /usr/local/include})
if [ -z "$boost_dir" ] && [ -n "$source_dir" ]; then
    if [ -d "$source_dir/boost/boost" ]; then boost_dir="$source_dir/boost"
    else
        for dir in "${include_dirs[@]}"; do
            if [ "$(boost_version_in "$dir")" -ge 107600 ] 2>/dev/null; then boost_dir="$dir"; break; fi
        done
    fi
fi

# the cmake flags that shape the binary (paths aside): part of the cache key
flags=(
    -DCMAKE_BUILD_TYPE=Release
    -DTRITON_ENABLE_GPU=OFF
    "-DTRITON_BACKEND_REPO_TAG=$branch"
    "-DTRITON_COMMON_REPO_TAG=$branch"
    "-DTRITON_CORE_REPO_TAG=$branch"
    -DCMAKE_SKIP_RPATH=ON
)
# bump when a change to this script changes the binary in a way the printed inputs do not show
recipe=1

# --- build packages: each needed header or tool, and the package that provides it ------------
. /etc/os-release 2>/dev/null || true
boost_package=libboost-dev  # Boost >= 1.76: Ubuntu 24.04's default; Debian 12's is 1.74
if [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ]; then boost_package=libboost1.81-dev; fi
has_header() {
    local dir
    for dir in "${include_dirs[@]}"; do [ -f "$dir/$1" ] && return 0; done
    return 1
}
missing_packages() {  # one 'package<TAB>why' a line
    local header package
    command -v "$cmake" >/dev/null || printf 'cmake\t%s\n' "$cmake"
    command -v make >/dev/null || printf 'make\tmake\n'
    command -v c++ >/dev/null || command -v g++ >/dev/null || printf 'g++\ta C++ compiler\n'
    command -v readelf >/dev/null || printf 'binutils\treadelf\n'
    [ -n "$source_dir" ] || command -v git >/dev/null || printf 'git\tgit (to clone the sources)\n'
    # the interpreter's headers and shared libpython (the stub links libpythonX.Y.so.1.0)
    if ! "$python_path" -c 'import os, sys, sysconfig
include = os.path.join(sysconfig.get_paths()["include"], "Python.h")
sys.exit(not (os.path.isfile(include) and sysconfig.get_config_var("Py_ENABLE_SHARED")))' \
        2>/dev/null; then
        printf 'python%s-dev\tPython.h and libpython%s.so of %s (or a Python built with --enable-shared)\n' \
            "$python" "$python" "$python_path"
    fi
    for pair in zlib.h:zlib1g-dev archive.h:libarchive-dev rapidjson/document.h:rapidjson-dev; do
        header="${pair%%:*}" package="${pair#*:}"
        has_header "$header" || printf '%s\t%s\n' "$package" "$header"
    done
    if [ -n "$source_dir" ] && [ -z "$boost_dir" ]; then
        printf '%s\tboost/version.hpp, Boost >= 1.76; or pass --boost-dir\n' "$boost_package"
    fi
    if [ -n "$source_dir" ] && [ -z "$(source_of googletest)" ]; then
        printf 'googletest\t/usr/src/googletest; or put it in %s/googletest\n' "$source_dir"
    fi
}
if [ "$mode" = check ] || { [ "$mode" = build ] && [ "$dry_run" = 0 ]; }; then
    missing="$(missing_packages)"
    if [ -n "$missing" ]; then
        {
            echo "build_stub.sh: missing build packages:"
            printf '%s\n' "$missing" | while IFS=$'\t' read -r package why; do
                echo "  $package (for $why)"
            done
            echo "install them with:"
            echo "  apt-get install -y --no-install-recommends $(printf '%s\n' "$missing" | cut -f1 | sort -u | tr '\n' ' ' | sed 's/ $//')"
        } >&2
        exit 3
    fi
    if [ "$mode" = check ]; then echo "build_stub.sh: all build packages are present"; exit 0; fi
fi

# --- cmake version ---------------------------------------------------------------------------
need_cmake="3.17"
if [ "${release%%.*}${release#*.}" -ge 2508 ]; then need_cmake="3.31.8"; fi
cmake_version="$("$cmake" --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p' || true)"
if [ "$dry_run" = 0 ] && [ "$mode" = build ]; then
    [ -n "$cmake_version" ] || die "cmake not found; release $release needs cmake >= $need_cmake"
    lowest="$(printf '%s\n%s\n' "$need_cmake" "$cmake_version" | sort -V | head -n1)"
    [ "$lowest" = "$need_cmake" ] \
        || die "cmake $cmake_version ($cmake) is too old for release $release: need >= $need_cmake (pip install 'cmake>=$need_cmake,<4' and pass --cmake, or put it first on PATH)"
fi
# CMake 4 refuses the old cmake_minimum_required of some fetched sub-projects; Triton's QA
# passes the same policy floor
if [ "${cmake_version%%.*}" -ge 4 ] 2>/dev/null; then flags+=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5); fi

# --- the build inputs (tritonpy's cache key) --------------------------------------------------
if [ "$mode" = inputs ]; then
    echo "release=$release"
    echo "python=$("$python_path" -c 'import sys, sysconfig; print(sys.version.split()[0], sysconfig.get_config_var("SOABI"))' 2>/dev/null || echo "$python")"
    echo "arch=$(uname -m)"
    echo "compiler=$( (c++ --version || g++ --version) 2>/dev/null | head -n1)"
    echo "cmake=$cmake_version"
    echo "boost=${boost_dir:+$(boost_version_in "$boost_dir") }${boost_dir:-download}"
    echo "flags=${flags[*]}"
    echo "recipe=$recipe"
    for name in "${repos[@]}" "${deps[@]}"; do echo "$name=$(fingerprint_of "$name")"; done
    exit 0
fi

# --- sources ---------------------------------------------------------------------------------
declare -A path_of=()
if [ -n "$source_dir" ]; then
    made_src=0
    for name in "${repos[@]}" "${deps[@]}"; do
        dir="$(source_of "$name")"
        if [ -z "$dir" ]; then
            for repo in "${repos[@]}"; do
                [ "$name" != "$repo" ] || die "--source-dir $source_dir lacks $name/ or $name.tar.gz (a checkout or archive of branch $branch)"
            done
            continue
        fi
        if [ "$dir" = "$build_dir/src/$name" ]; then
            # a tree unpacked from this very archive is kept (so make rebuilds nothing); any
            # other (another archive, an interrupted unpack: no stamp) is unpacked afresh
            stamp="$build_dir/src/.$name.unpacked" digest="$(fingerprint_of "$name")"
            if [ "$dry_run" = 1 ] || [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
                if [ "$made_src" = 0 ]; then run mkdir -p "$build_dir/src"; made_src=1; fi
                run rm -rf "$dir" "$stamp"
                run tar -xzf "$source_dir/$name.tar.gz" -C "$build_dir/src"
                [ "$dry_run" = 1 ] || [ -d "$dir" ] || die "$source_dir/$name.tar.gz holds no top-level $name/ directory"
                [ "$dry_run" = 1 ] || echo "$digest" > "$stamp"
            fi
        fi
        path_of[$name]="$dir"
    done
else
    for repo in "${repos[@]}"; do
        if [ ! -d "$build_dir/src/$repo/.git" ]; then
            run git clone --quiet --depth 1 --branch "$branch" \
                "https://github.com/triton-inference-server/$repo.git" "$build_dir/src/$repo"
        fi
        path_of[$repo]="$build_dir/src/$repo"
    done
fi

args=(
    -S "${path_of[python_backend]}" -B "$build_dir/build"
    "${flags[@]}"
    "-DPYTHON_EXECUTABLE=$python_path"
    "-DPython3_EXECUTABLE=$python_path"
    "-DPython_EXECUTABLE=$python_path"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-COMMON=${path_of[common]}"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-CORE=${path_of[core]}"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-BACKEND=${path_of[backend]}"
)
offline=1
for dep in "${deps[@]}"; do
    if [ -n "${path_of[$dep]:-}" ]; then
        upper="$(echo "$dep" | tr '[:lower:]' '[:upper:]')"
        args+=("-DFETCHCONTENT_SOURCE_DIR_$upper=${path_of[$dep]}")
    else
        offline=0
    fi
done
if [ "$offline" = 1 ]; then args+=(-DFETCHCONTENT_FULLY_DISCONNECTED=ON); fi

if [ -n "$boost_dir" ]; then
    [ "$dry_run" = 1 ] || [ -d "$boost_dir/boost" ] || die "--boost-dir $boost_dir has no boost/"
    include="$build_dir/tritonpy-local-boost.cmake"
    # python_backend downloads Boost with ExternalProject_Add(boostorg URL ...), which has no
    # cache variable to override: this project include replaces that one call by a copy of
    # the local headers (other ExternalProject_Add calls pass through).
    if [ "$dry_run" = 0 ]; then
        mkdir -p "$build_dir"
        cat > "$include" <<EOF
# Written by tritonpy scripts/build_stub.sh: local Boost headers instead of a download.
include(ExternalProject)
function(ExternalProject_Add name)
  if(name STREQUAL "boostorg")
    # a link made once (a stamp), not a copy at every build: fresh header mtimes would make
    # every rebuild a full one
    add_custom_command(OUTPUT "\${CMAKE_BINARY_DIR}/tritonpy-boost.stamp"
      COMMAND \${CMAKE_COMMAND} -E rm -rf "\${CMAKE_BINARY_DIR}/boost"
      COMMAND \${CMAKE_COMMAND} -E create_symlink "$boost_dir/boost" "\${CMAKE_BINARY_DIR}/boost"
      COMMAND \${CMAKE_COMMAND} -E touch "\${CMAKE_BINARY_DIR}/tritonpy-boost.stamp")
    add_custom_target(boostorg DEPENDS "\${CMAKE_BINARY_DIR}/tritonpy-boost.stamp")
  else()
    _ExternalProject_Add(\${name} \${ARGN})
  endif()
endfunction()
EOF
    fi
    args+=("-DCMAKE_PROJECT_tritonpythonbackend_INCLUDE=$include")
fi

# --- configure, build, check -----------------------------------------------------------------
run "$cmake" "${args[@]}"
run "$cmake" --build "$build_dir/build" --target triton-python-backend-stub --parallel "$jobs"
stub="$build_dir/build/triton_python_backend_stub"
echo "+ readelf -d $stub  # must need exactly libpython$python.so.1.0"
if [ "$dry_run" = 0 ]; then
    needed="$(readelf -d "$stub" | sed -n 's/.*(NEEDED).*\[\(libpython[^]]*\)\].*/\1/p')"
    [ "$needed" = "libpython$python.so.1.0" ] \
        || die "$stub needs '${needed:-no libpython}', expected exactly libpython$python.so.1.0"
fi
run mkdir -p "$(dirname "$output")"
run install -m 0755 "$stub" "$output"
if [ "$dry_run" = 1 ]; then echo "dry run: would build $output (Python $python, Triton $branch)"
else echo "built $output (Python $python, Triton $branch)"; fi
