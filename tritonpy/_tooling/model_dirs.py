"""The layout of a model repository as Triton reads it: which subdirectories are models, the
name of the configuration file inside each, and how config.pbtxt names a model's environment.

Example::

    [path.name for path in model_directories(Path("model_repository"))]   # ['add', 'sub']
"""

from __future__ import annotations

from pathlib import Path
from typing import List

#: a model's configuration file, directly in its directory
CONFIG_FILE = "config.pbtxt"
#: the config.pbtxt parameter naming a Python-backend model's environment (archive or folder)
ENV_PARAMETER = "EXECUTION_ENV_PATH"
#: what the Python backend replaces by the model's directory in that parameter's value
MODEL_DIR_VARIABLE = "$$TRITON_MODEL_DIRECTORY"
#: the file name Triton looks for when a model brings its own Python backend stub
STUB_NAME = "triton_python_backend_stub"


def model_directories(root: Path) -> List[Path]:
    """The model directories of the repository ``root``, sorted: every subdirectory except
    hidden ones (``.git``, an export's staging folder) and ``__pycache__``-style ones."""
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith((".", "__"))
    )
