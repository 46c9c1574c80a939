#!/usr/bin/env bash
# Sets up everything and runs the whole test suite: lint, types, unit and integration tests
# (the integration tests start a real tritonserver), then the runtime unit tests again on the
# other CPython versions a model environment may use.
# Usage: scripts/test.sh [extra pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup_env.sh .venv
py=.venv/bin/python

echo "==> ruff"
"$py" -m ruff check .
"$py" -m ruff format --check .
echo "==> mypy (strict, package)"
"$py" -m mypy
echo "==> import layers (import-linter contracts in pyproject.toml)"
.venv/bin/lint-imports --no-cache

echo "==> pytest (unit + integration on $("$py" --version))"
"$py" -m pytest -q --durations=20 "$@"

scripts/test_runtime_pythons.sh
