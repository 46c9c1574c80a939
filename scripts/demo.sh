#!/usr/bin/env bash
# Sets up everything and runs the demo: renders the digits ensemble (preprocess -> torch
# classifier -> postprocess) from the templates, serves it in a real tritonserver, sends
# held-out digit images as PNG bytes and prints labels, accuracy and latency.
# Usage: scripts/demo.sh [demo options, see: .venv/bin/python -m tritonpy.demo --help]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup_env.sh .venv
exec .venv/bin/python -m tritonpy.demo "$@"
