#!/usr/bin/env bash
# Builds a model's environment archive and points its config.pbtxt at it (and places a matching
# triton_python_backend_stub when the environment's Python differs from the server's).
# Usage: scripts/pack_env.sh MODEL_DIR [--python X.Y] [--env envs/NAME.yml | --requirements FILE]
#                            [--triton-version YY.MM] [--builder auto|local|conda] [--force] ...
# A thin wrapper over `tritonpy pack-env` (same options; --help lists them). The interpreter
# running tritonpy: $PYTHON, else the checkout's .venv, else python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-}"
if [ -z "$python" ]; then
    if [ -x "$root/.venv/bin/python" ]; then python="$root/.venv/bin/python"; else python=python3; fi
fi
exec "$python" -m tritonpy pack-env "$@"
