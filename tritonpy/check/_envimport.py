"""Which Python imports a model's ``model.py`` for the check (and the export): its own
environment's when it has one, else the tool's.

- ``EXECUTION_ENV_PATH`` names an existing archive or directory with ``bin/activate`` and
  ``bin/python3`` (every environment pack-env or conda-pack writes): that one (an archive is
  unpacked once into tritonpy's cache, keyed by its digest);
- no ``EXECUTION_ENV_PATH`` but a spec in the model directory (``environment.yml`` /
  ``requirements.txt``) and a target release: the spec's environment from the build cache
  (built first when ``build`` is true: ``tritonpy check --build-envs``, ``tritonpy export``);
- otherwise the tool's own Python, as before.

A model imported in its environment is known to the rules by a stand-in class carrying its
declarations (``declared_config()``, ``decoupled``), read inside that environment.

Example::

    place = find_environment(path, config, release, build=False)
    place.label if place else "the tool's Python"
"""

from __future__ import annotations

import copy
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Literal, Optional

from .._tooling.env_archives import archive_members, resolve_env_path
from .._tooling.model_dirs import ENV_PARAMETER
from .._tooling.releases import TritonRelease
from ..envs import EnvImport, archive_has_interpreter, has_interpreter, missing_module_hint

#: where a model's environment comes from
EnvSource = Literal["configured", "spec"]


@dataclass(frozen=True)
class ModelEnvironment:
    """The environment a model is imported in: ``path`` (an archive or a directory),
    ``label`` (how messages name it: the EXECUTION_ENV_PATH value, or the spec file),
    ``source`` and, for a spec's environment, the ``spec`` file."""

    path: Path
    label: str
    source: EnvSource
    spec: Optional[Path] = None


def configured_environment(model_dir: Path, config: Any) -> Optional[ModelEnvironment]:
    """The EXECUTION_ENV_PATH environment when it exists and has an interpreter to import
    with (a minimal layout without ``bin/python3`` is imported in the tool's Python)."""
    if ENV_PARAMETER not in config.parameters:
        return None
    raw = config.parameters[ENV_PARAMETER].string_value
    path = resolve_env_path(raw, model_dir).path
    if path.is_dir():
        usable = has_interpreter(path)
    elif path.is_file() and path.name.endswith(".tar.gz"):
        try:
            usable = archive_has_interpreter(m.name for m in archive_members(path))
        except (tarfile.TarError, OSError, EOFError, zlib.error):
            usable = False  # TP604 reports it
    else:
        usable = False
    return ModelEnvironment(path, raw, "configured") if usable else None


def spec_environment(
    model_dir: Path, release: Optional[TritonRelease], *, build: bool, builder: str = "auto"
) -> Optional[ModelEnvironment]:
    """The built environment of the model directory's spec for ``release``: from the cache,
    or built now when ``build``; None without a spec, a release or (not ``build``) a cached
    build. Build errors propagate."""
    from ..envs import (
        build_environment,
        cached_environment,
        find_default_spec,
        parse_builder,
        plan_environment,
    )

    if release is None or find_default_spec(model_dir) is None:
        return None
    plan = plan_environment(model_dir, triton_version=release.name, builder=parse_builder(builder))
    found = build_environment(plan) if build else cached_environment(plan)
    if found is None:
        return None
    return ModelEnvironment(found.archive, str(plan.spec), "spec", plan.spec)


def stand_in(found: EnvImport) -> type:
    """A class standing for a tritonpy model imported in its environment: what the rules and
    the config tooling read of a ``tritonpy.Model`` (``declared_config()``, ``decoupled``)."""
    declared: Dict[str, Any] = dict(found.declared or {})

    def declared_config(cls: type) -> Dict[str, Any]:
        return copy.deepcopy(declared)

    namespace: Dict[str, Any] = {
        "declared_config": classmethod(declared_config),
        "decoupled": found.decoupled,
        "inputs": {},
        "outputs": {},
        "__doc__": f"{found.class_name}, as declared inside {found.environment}",
    }
    return type(found.class_name or "TritonPythonModel", (), namespace)


def import_failure(place: ModelEnvironment, found: EnvImport) -> str:
    """What failed when a ``model.py`` was imported inside ``place``."""
    return (
        f"importing it inside its environment {place.label} (Python {found.python}) failed: "
        f"{found.error.splitlines()[0] if found.error else 'unknown error'}"
    )


def import_fix(
    name: str, place: ModelEnvironment, found: EnvImport, release: Optional[TritonRelease]
) -> str:
    """How to fix it: the package to add, where, and the command that rebuilds."""
    version = release.name if release else "YY.MM"
    if found.missing == "tritonpy" and place.source == "configured":
        return (
            f"the environment {place.label} has no tritonpy: rebuild it with 'tritonpy pack-env "
            f"REPO/{name} --triton-version {version} --force' (it installs the running "
            "tritonpy)"
        )
    if found.missing:
        package = missing_module_hint(found.missing)
        if place.source == "spec":
            return (
                f"add {package} (it provides {found.missing!r}) to {place.spec}; the next "
                f"'tritonpy export' (or 'tritonpy check --build-envs') builds the environment "
                f"again"
            )
        return (
            f"the environment {place.label} lacks {found.missing!r}: add {package} to the "
            f"model's spec (REPO/{name}/requirements.txt or environment.yml) and rebuild it: "
            f"'tritonpy pack-env REPO/{name} --triton-version {version} --force'"
        )
    return (
        f"fix the error raised at import time inside {place.label}; Triton would fail to load "
        f"the model"
    )
