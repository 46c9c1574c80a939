"""The journey builds tritonpy's wheel from a clean copy (``pip wheel --no-build-isolation``),
so it needs the build backend pyproject.toml names (setuptools>=77, part of the dev set-up).
Without it this folder is not collected and the header says why; CI must run it, so there a
missing backend fails instead."""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any


def _backend_problem() -> str:
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return "setuptools is not installed"
    major = int(version.split(".")[0])
    return "" if major >= 77 else f"setuptools {version} is older than 77"


_PROBLEM = _backend_problem()
if _PROBLEM and not os.environ.get("CI"):
    collect_ignore_glob = ["test_*.py"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _PROBLEM:
        terminalreporter.write_line(
            f"tests/journey not collected: {_PROBLEM}; pip install 'setuptools>=77' to run it"
        )
