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

from .._tooling.archives import (
    check_members,
    extract_checked,
    safe_extract,
    staging_file,
    write_archive,
)
from .._tooling.errors import ArchiveError, EnvError, SpecError
from .._tooling.progress import CommandError, Reporter, run_command
from .interpreters import BaseInterpreter, find_interpreter, probe_interpreter
from .pack import BUILDERS, Builder, PackOptions, PackResult, StubMode, find_default_spec, pack_env
from .spec import EnvSpec, read_spec
from .verify import VerifyReport, verify_archive

__all__ = [
    "BUILDERS",
    "ArchiveError",
    "BaseInterpreter",
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
    "check_members",
    "extract_checked",
    "find_default_spec",
    "find_interpreter",
    "pack_env",
    "probe_interpreter",
    "read_spec",
    "run_command",
    "safe_extract",
    "staging_file",
    "verify_archive",
    "write_archive",
]
