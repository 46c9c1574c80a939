"""Whether a model's code imports tritonpy: such a model needs tritonpy in the Python that runs
it, which a stock Triton container does not have (only an ``EXECUTION_ENV_PATH`` environment
brings it).

Example::

    imports_tritonpy(Path("model_repository/preprocess"))    # True for a tp.Model
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import List

from ..config import version_dirs

PACKAGE = "tritonpy"
# for sources that do not parse (the layout rules report the syntax error)
_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+tritonpy\b", re.MULTILINE)


def source_imports_tritonpy(source: str) -> bool:
    """True when the module source imports ``tritonpy`` or one of its submodules anywhere
    (also inside functions: the import still runs in the server's Python).

    >>> source_imports_tritonpy("import tritonpy as tp")
    True
    >>> source_imports_tritonpy("from tritonpy.vision import letterbox")
    True
    >>> source_imports_tritonpy("import tritonpy_extras")
    False
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return bool(_IMPORT_LINE.search(source))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names: List[str] = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == PACKAGE or name.startswith(PACKAGE + ".") for name in names):
            return True
    return False


def imports_tritonpy(model_dir: Path, filename: str = "model.py") -> bool:
    """True when the ``filename`` of any version directory of ``model_dir`` imports tritonpy."""
    for version in version_dirs(model_dir):
        path = version / filename
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if source_imports_tritonpy(source):
            return True
    return False
