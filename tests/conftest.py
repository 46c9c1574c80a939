"""What each test folder needs beyond ``tritonpy[testing]``, in one place.

tests/runtime, tests/testing and the templates' own tests run on ``pip install
'tritonpy[testing]'`` (what needs OpenCV, torch or nvidia-pytriton skips there, naming the
install command). The folders below need the whole development set-up
(``scripts/setup_env.sh``); on an install without it they are not collected and the end of the
run names what is missing. CI has everything and must run them, so under ``CI=true`` nothing is
left out: a missing piece fails the tests instead.
"""

from __future__ import annotations

import importlib
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
_DEV_SETUP = "pip install -e '.[image,server,config,dev]' (scripts/setup_env.sh)"


def _absent(modules: List[str]) -> List[str]:
    absent = []
    for module in modules:
        try:
            importlib.import_module(module)
        except (ImportError, RuntimeError):  # tritonclient.http without gevent: RuntimeError
            absent.append(module)
    return absent


def _old_build_backend() -> List[str]:
    # the journey builds the wheel with --no-build-isolation: pyproject.toml's backend must be here
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return ["setuptools>=77"]
    return [] if int(version.split(".")[0]) >= 77 else [f"setuptools>=77 (found {version})"]


def _missing_by_folder() -> Dict[str, List[str]]:
    tooling = ["google.protobuf", "tritonclient.grpc", "yaml", "packaging", "platformdirs"]
    found = {
        # the tooling's extras: config and tools
        "tooling": _absent([*tooling, "psutil", "elftools"]),
        # a real tritonserver (the server extra, both clients) and OpenCV for most served models
        "integration": _absent(["pytriton", "tritonclient.grpc", "tritonclient.http", "cv2"]),
        "journey": _old_build_backend(),
    }
    return {folder: absent for folder, absent in found.items() if absent}


_MISSING = {} if os.environ.get("CI") else _missing_by_folder()


def pytest_ignore_collect(collection_path: Path) -> bool:
    path = Path(collection_path).resolve()
    return any(path == HERE / folder for folder in _MISSING)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for folder, absent in _MISSING.items():
        terminalreporter.write_line(
            f"tests/{folder} not collected: {', '.join(absent)} missing; {_DEV_SETUP}"
        )
