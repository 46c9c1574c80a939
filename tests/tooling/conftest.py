"""The tooling tests need the tooling's extras (``config``, ``tools``: protobuf, the Triton
client, PyYAML, packaging, platformdirs, psutil, pyelftools). On an install without them (for
example ``pip install 'tritonpy[testing]'``, which runs tests/runtime and the templates' tests)
this folder is not collected and the header says why; CI has everything and must run them, so
there a missing one fails the tests instead."""

from __future__ import annotations

import importlib
import os
from typing import Any, List

_NEEDED = (
    "google.protobuf",
    "tritonclient.grpc",
    "yaml",
    "packaging",
    "platformdirs",
    "psutil",
    "elftools",
)


def _absent() -> List[str]:
    absent = []
    for module in _NEEDED:
        try:
            importlib.import_module(module)
        except ImportError:
            absent.append(module)
    return absent


_ABSENT = _absent()
if _ABSENT and not os.environ.get("CI"):
    collect_ignore_glob = ["test_*.py"]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _ABSENT:
        terminalreporter.write_line(
            f"tests/tooling not collected: {', '.join(_ABSENT)} missing; "
            "pip install -e '.[image,server,config,dev]' (scripts/setup_env.sh) to run them"
        )
