#!/usr/bin/env bash
# Builds triton_python_backend_stub for one CPython X.Y from Triton release YY.MM sources
# (CPU build: TRITON_ENABLE_GPU=OFF), then checks it needs exactly libpython3.X.so.1.0.
#
# Usage: scripts/build_stub.sh --python X.Y --triton-version YY.MM [options]
#   --source-dir DIR    use checkouts DIR/{python_backend,common,core,backend} (branch rYY.MM)
#                       instead of cloning them; DIR/{pybind11,dlpack,googletest} too when
#                       present (all three: fully offline); DIR/boost: see --boost-dir
#   --python-path PATH  the interpreter to build against (default: pythonX.Y on PATH, pyenv)
#   --boost-dir DIR     a directory holding boost/ headers (e.g. /usr/include) instead of
#                       downloading Boost (needs network otherwise)
#   --build-dir DIR     work directory (default: $TMPDIR/tritonpy-stub-rYY.MM-pyX.Y)
#   --output FILE       where to put the stub (default: ./triton_python_backend_stub)
#   --jobs N            parallel build jobs (default: nproc)
#   --dry-run           print the commands (one per line, prefixed by '+') without running
# Needs: cmake (>= 3.17; >= 3.31.8 from release 25.08), g++, make, git (unless --source-dir),
# readelf, and the headers of zlib, libarchive and rapidjson (Debian/Ubuntu: zlib1g-dev
# libarchive-dev rapidjson-dev). Build on the server's OS (or use Dockerfile.stub) so
# glibc/libstdc++ match.
set -euo pipefail

die() { echo "build_stub.sh: error: $*" >&2; exit 2; }
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

python="" release="" source_dir="" python_path="" boost_dir="" build_dir="" output=""
jobs="" dry_run=0
while [ $# -gt 0 ]; do
    case "$1" in
        --python|--triton-version|--source-dir|--python-path|--boost-dir|--build-dir|--output|--jobs)
            [ $# -ge 2 ] || die "$1 needs a value"
            opt="$1" value="$2"; shift 2 ;;
        --*=*) opt="${1%%=*}" value="${1#*=}"; shift ;;
        --dry-run) dry_run=1; shift; continue ;;
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

# --- cmake version ---------------------------------------------------------------------------
need_cmake="3.17"
if [ "${release%%.*}${release#*.}" -ge 2508 ]; then need_cmake="3.31.8"; fi
if [ "$dry_run" = 0 ]; then
    have="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
    [ -n "$have" ] || die "cmake not found; release $release needs cmake >= $need_cmake"
    lowest="$(printf '%s\n%s\n' "$need_cmake" "$have" | sort -V | head -n1)"
    [ "$lowest" = "$need_cmake" ] \
        || die "cmake $have is too old for release $release: need >= $need_cmake (pip install 'cmake>=$need_cmake')"
fi

# --- sources ---------------------------------------------------------------------------------
repos=(python_backend common core backend)
if [ -n "$source_dir" ]; then
    src="$(cd "$source_dir" 2>/dev/null && pwd)" || die "--source-dir $source_dir does not exist"
    for repo in "${repos[@]}"; do
        [ -d "$src/$repo" ] || die "--source-dir $src lacks $repo/ (a checkout of branch $branch)"
    done
else
    src="$build_dir/src"
    for repo in "${repos[@]}"; do
        if [ ! -d "$src/$repo/.git" ]; then
            run git clone --quiet --depth 1 --branch "$branch" \
                "https://github.com/triton-inference-server/$repo.git" "$src/$repo"
        fi
    done
fi

args=(
    -S "$src/python_backend" -B "$build_dir/build"
    -DCMAKE_BUILD_TYPE=Release
    -DTRITON_ENABLE_GPU=OFF
    "-DTRITON_BACKEND_REPO_TAG=$branch"
    "-DTRITON_COMMON_REPO_TAG=$branch"
    "-DTRITON_CORE_REPO_TAG=$branch"
    -DCMAKE_SKIP_RPATH=ON
    "-DPYTHON_EXECUTABLE=$python_path"
    "-DPython3_EXECUTABLE=$python_path"
    "-DPython_EXECUTABLE=$python_path"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-COMMON=$src/common"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-CORE=$src/core"
    "-DFETCHCONTENT_SOURCE_DIR_REPO-BACKEND=$src/backend"
)
offline=1
for dep in pybind11 dlpack googletest; do
    if [ -d "$src/$dep" ]; then
        upper="$(echo "$dep" | tr '[:lower:]' '[:upper:]')"
        args+=("-DFETCHCONTENT_SOURCE_DIR_$upper=$src/$dep")
    else
        offline=0
    fi
done
if [ "$offline" = 1 ]; then args+=(-DFETCHCONTENT_FULLY_DISCONNECTED=ON); fi

if [ -z "$boost_dir" ] && [ -d "$src/boost/boost" ]; then boost_dir="$src/boost"; fi
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
    add_custom_target(boostorg COMMAND \${CMAKE_COMMAND} -E copy_directory
                      "$boost_dir/boost" "\${CMAKE_BINARY_DIR}/boost")
  else()
    _ExternalProject_Add(\${name} \${ARGN})
  endif()
endfunction()
EOF
    fi
    args+=("-DCMAKE_PROJECT_tritonpythonbackend_INCLUDE=$include")
fi

# --- configure, build, check -----------------------------------------------------------------
run cmake "${args[@]}"
run cmake --build "$build_dir/build" --target triton-python-backend-stub --parallel "$jobs"
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
