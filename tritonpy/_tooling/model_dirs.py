"""The layout of a model repository as Triton reads it: which subdirectories are models, and
the name of the configuration file inside each.

Example::

    [path.name for path in model_directories(Path("model_repository"))]   # ['add', 'sub']
"""

from __future__ import annotations

from pathlib import Path
from typing import List

__all__ = ["CONFIG_FILE", "model_directories"]

#: a model's configuration file, directly in its directory
CONFIG_FILE = "config.pbtxt"


def model_directories(root: Path) -> List[Path]:
    """The model directories of the repository ``root``, sorted: every subdirectory except
    hidden ones (``.git``, an export's staging folder) and ``__pycache__``-style ones."""
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith((".", "__"))
    )
