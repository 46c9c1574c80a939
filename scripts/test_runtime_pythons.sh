#!/usr/bin/env bash
# Runs the runtime tests (tests/runtime: model, codecs, batching) and the testing kit's
# (tests/testing: fake pb_utils, harnesses) on the other CPython versions a model environment
# may use. Each gets its own virtualenv with the runtime's
# dependencies only (numpy, OpenCV, protobuf for config.pbtxt parsing). Left out there, by
# marker: torch (for these versions only a multi-GB CUDA build exists) and the parity tests that
# read the real pb_utils module from the nvidia-pytriton wheel (both run in the main run).
# numpy: below 2 up to 3.12, as Triton releases before 24.12 need; 3.13 has no numpy 1 wheels,
# so it runs on numpy 2, which also proves the runtime works with it.
# Usage: scripts/test_runtime_pythons.sh [X.Y ...]     (default: 3.9 3.10 3.12 3.13)
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.9 3.10 3.12 3.13)
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")

for version in "${versions[@]}"; do
    interpreter=$(ls -d "$root"/versions/"$version".*/bin/python"$version" 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$interpreter" ]; then
        echo "==> SKIPPING Python $version: no interpreter under $root/versions (install it with 'pyenv install $version')"
        continue
    fi
    venv=".venv-$version"
    if [ ! -x "$venv/bin/python" ]; then
        echo "==> creating $venv with $("$interpreter" --version)"
        "$interpreter" -m venv "$venv"
    fi
    numpy="numpy<2"
    [ "$version" != "3.13" ] || numpy="numpy>=2"
    "$venv/bin/python" -m pip --disable-pip-version-check -q install -e ".[image,config]" "$numpy" pytest hypothesis \
        2> >(grep -v "^WARNING: Location" >&2)
    echo "==> runtime tests on $("$venv/bin/python" --version), numpy $("$venv/bin/python" -c 'import numpy; print(numpy.__version__)')"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not torch and not pytriton and not integration" tests/runtime tests/testing
done
