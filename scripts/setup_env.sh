#!/usr/bin/env bash
# Creates (or updates) the project's virtualenv with everything the demo and the tests need.
# Usage: scripts/setup_env.sh [VENV_DIR]        (default: .venv)
# Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${1:-.venv}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    echo "==> creating virtualenv $venv with $($python --version 2>&1)"
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
echo "==> installing tritonpy and its test/demo dependencies into $venv"
# torch is pinned: a bare 'torch' resolves to a multi-GB CUDA build, 2.13.0 has a CPU build.
# numpy<2: the tritonserver 24.10 stub bundled by nvidia-pytriton predates numpy 2.
# (the filter drops pip notes about configured package locations that do not exist here)
"${pip[@]}" install -e ".[image,server,config,dev,s3]" "torch==2.13.0" "numpy<2" \
    2> >(grep -v "^WARNING: Location" >&2)
