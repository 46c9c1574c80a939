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

#: tritonserver's loads one at a time, for a repository in a bucket that holds a stub. A model
#: folder copied out of a bucket is written by tritonserver itself (core@r24.10 s3.h
#: LocalizePath, an std::ofstream: no O_CLOEXEC) while the other load threads (4 by default)
#: fork stubs: a process forked meanwhile inherits the open file, and exec of a
#: triton_python_backend_stub held open for writing fails with "Text file busy" (ETXTBSY) for
#: as long as that process lives, so the model never gets ready. Measured on 24.10 with twelve
#: models each publishing a stub: 1 start of 4 hung so with the default, none of 4 with this,
#: at three times the start time (18 s against 6 s).
SERIAL_LOADS_ARG = "--model-load-thread-count=1"


def model_directories(root: Path) -> List[Path]:
    """The model directories of the repository ``root``, sorted: every subdirectory except
    hidden ones (``.git``, an export's staging folder) and ``__pycache__``-style ones."""
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith((".", "__"))
    )
