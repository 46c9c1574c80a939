#!/usr/bin/env bash
# Runs the runtime's unit tests (model, codecs, batching, fake pb_utils, harness) on the other
# CPython versions a model environment may use. Each gets its own virtualenv with the runtime
# dependencies only (numpy<2, OpenCV, protobuf config parsing), no torch: torch for these
# versions is a multi-GB CUDA download, so the 'torch' marker is deselected there.
# Usage: scripts/test_runtime_pythons.sh [X.Y ...]     (default: 3.10 3.12)
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.12)
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
    "$venv/bin/python" -m pip --disable-pip-version-check -q install -e ".[image,config]" "numpy<2" pytest
    echo "==> runtime unit tests on $("$venv/bin/python" --version)"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not torch and not integration" tests/runtime
done
