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

# the face this package shows tritonpy's other tooling packages: not in __all__, not public API
from ._envcache import BuiltEnv as BuiltEnv
from ._envcache import EnvPlan as EnvPlan
from ._envcache import build_environment as build_environment
from ._envcache import cached_environment as cached_environment
from ._envcache import plan_environment as plan_environment
from ._inenv import GPU_MODULES as GPU_MODULES
from ._inenv import EnvImport as EnvImport
from ._inenv import EnvStartError as EnvStartError
from ._inenv import archive_has_interpreter as archive_has_interpreter
from ._inenv import has_interpreter as has_interpreter
from ._inenv import import_in_environment as import_in_environment
from ._inenv import unpacked_environment as unpacked_environment
from ._needs import missing_module_hint as missing_module_hint
from ._pack import BUILDERS as BUILDERS
from ._pack import Builder, PackOptions, PackResult, StubMode, find_default_spec, pack_env
from ._pack import parse_builder as parse_builder
from ._release_rules import StubDecision as StubDecision
from ._release_rules import container_numpy_pin as container_numpy_pin
from ._release_rules import container_numpy_reason as container_numpy_reason
from ._release_rules import model_name_problems as model_name_problems
from ._release_rules import stub_decision as stub_decision
from ._selfwheel import running_tritonpy as running_tritonpy
from ._selfwheel import self_wheel as self_wheel
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
