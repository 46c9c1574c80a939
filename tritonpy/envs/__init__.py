"""Per-model Python environments for Triton's Python backend (``EXECUTION_ENV_PATH``).

Build an environment from a spec with conda (+ conda-pack) or from a local CPython with a shared
libpython, archive it relocatably, verify it the way Triton uses it, place it atomically in the
model directory and point config.pbtxt at it.

Example::

    from tritonpy.envs import pack_env

    result = pack_env("model_repository/preprocess", python="3.10", spec="envs/opencv.yml")
    print(result.archive, result.size, result.parameter)
"""

from __future__ import annotations

from .._runtime._public_names import publish as _publish
from .._tooling.errors import ArchiveError, EnvError, SpecError
from .._tooling.progress import CommandError, Reporter
from ._pack import Builder, PackOptions, PackResult, StubMode, find_default_spec, pack_env
from ._spec import EnvSpec, read_spec
from ._verify import VerifyReport, verify_archive

__all__ = [
    "ArchiveError",
    "Builder",
    "CommandError",
    "EnvError",
    "EnvSpec",
    "PackOptions",
    "PackResult",
    "Reporter",
    "SpecError",
    "StubMode",
    "VerifyReport",
    "find_default_spec",
    "pack_env",
    "read_spec",
    "verify_archive",
]

# the errors and the progress reporter are written in tritonpy._tooling, shared with the tools
_publish(
    __name__, globals(), adopt=["ArchiveError", "CommandError", "EnvError", "Reporter", "SpecError"]
)
