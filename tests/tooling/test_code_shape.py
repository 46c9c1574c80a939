"""The package's shape, kept: no module over 500 lines and no function over 60 (docstring
included), the limits docs/architecture.md states. A piece that outgrows them is split by
concept (what it does), never by line count alone; this test only says where to look.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import tritonpy

PACKAGE = Path(tritonpy.__file__).resolve().parent
MODULE_LINES = 500
FUNCTION_LINES = 60


def _sources() -> List[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def test_the_package_is_read() -> None:
    # a wrong PACKAGE would make the limits below pass on nothing
    names = {path.relative_to(PACKAGE).as_posix() for path in _sources()}
    assert {"__init__.py", "cli.py", "_runtime/model.py"} <= names


def test_no_module_is_over_the_line_limit() -> None:
    over = []
    for path in _sources():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MODULE_LINES:
            over.append(f"{path.relative_to(PACKAGE)}: {lines} lines")
    assert not over, f"modules over {MODULE_LINES} lines (split them by concept): {over}"


def test_no_function_is_over_the_line_limit() -> None:
    over = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                    over.append(f"{where} {node.name}() {length} lines")
    assert not over, f"functions over {FUNCTION_LINES} lines: {over}"
