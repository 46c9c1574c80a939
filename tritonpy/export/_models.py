"""One model of an export: copy it without caches or tests, write its full config.pbtxt from
the declarations, and give it the environment (and stub) the target release needs.

Example::

    copy_model(Path("model_repository/preprocess"), Path("deploy/model_repository/preprocess"))
    outcome = prepare_model(source, target, release=TritonRelease.parse("24.10"), pack=True,
                            builder="auto", reporter=Reporter())
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Literal, Optional, Set

from .._runtime.errors import ToolError
from .._tooling.env_archives import RECORD_NAME, archive_name, contents_python, resolve_env_path
from .._tooling.model_dirs import CONFIG_FILE, ENV_PARAMETER, MODEL_DIR_VARIABLE, STUB_NAME
from .._tooling.pbtxt import ConfigError, load_config, set_parameter, write_config
from .._tooling.progress import Reporter
from .._tooling.releases import TritonRelease
from ..check import imports_tritonpy, stand_in
from ..config import ModelImportError, NotDerivableError, apply_declarations, sync_config
from ..envs import Builder, BuiltEnv, EnvImport, stub_decision
from ._files import ENVS_DIR

#: directories never copied: caches, and tests (they stay with the sources)
_SKIPPED_DIRS = {"__pycache__", "tests", "test"}


#: what a model is, to the export
ModelKind = Literal["tritonpy", "python", "ensemble", "other"]
#: what became of its config.pbtxt
ConfigOutcome = Literal["materialised", "kept"]
#: where built environments go: each model directory its own copy, or one shared folder
#: ``envs/`` beside ``model_repository/``
EnvLayout = Literal["per-model", "shared", "image"]
ENV_LAYOUTS = ("per-model", "shared", "image")
#: where the image layout's Dockerfile unpacks the environments (``--env-root``)
DEFAULT_ENV_ROOT = "/opt/tritonpy/envs"
#: the folder of the shared layout's archives, beside model_repository/ in OUT

#: the shared layout's EXECUTION_ENV_PATH prefix (model_repository/<model>/../../envs)
SHARED_PREFIX = f"{MODEL_DIR_VARIABLE}/../../{ENVS_DIR}/"


class ExportError(ToolError):
    """The repository cannot be exported; the message names the model and the fix."""


@dataclass
class ModelExport:
    """What the export did with one model.

    ``kind``: ``"tritonpy"`` (a tp.Model), ``"python"`` (another Python-backend model),
    ``"ensemble"`` or ``"other"``; ``config``: ``"materialised"`` (written from the
    declarations) or ``"kept"``; ``environment``: ``"kept"``, ``"packed"`` or ``"none"``;
    ``parameter``: the EXECUTION_ENV_PATH value; ``stub``: where the stub came from (a
    :data:`tritonpy.stubs._provision.SOURCES` name), ``"removed"`` or None; ``cached``:
    the packed environment came from the build cache (built by an earlier export, or by this
    one for another model of the same spec); ``shared``: the environment is not in the model
    directory (the shared or image layout)."""

    name: str
    kind: ModelKind = "other"
    config: ConfigOutcome = "kept"
    environment: str = "none"  # "kept", "packed" or "none" (see the class docstring)
    parameter: Optional[str] = None
    python: Optional[str] = None
    stub: Optional[str] = None
    cached: bool = False
    shared: bool = False


def _ignored(directory: str, names: List[str]) -> Set[str]:
    """copytree filter: caches, tests, hidden files (build records, partial downloads)."""
    return {
        name
        for name in names
        if name in _SKIPPED_DIRS or name.startswith(".") or name.endswith((".pyc", ".pyo"))
    }


def _is_test_file(name: str) -> bool:
    # what pytest collects beside config.pbtxt (`tritonpy new` renders test_NAME.py there)
    return name == "conftest.py" or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
    )


def copy_model(source: Path, target: Path) -> None:
    """Copy a model directory without ``__pycache__``, ``tests/``, the test files beside its
    ``config.pbtxt`` (``test_*.py``, ``*_test.py``, ``conftest.py``), hidden files or bytecode
    (symbolic links are copied as the files they point to)."""
    root = os.path.abspath(source)

    def ignored(directory: str, names: List[str]) -> Set[str]:
        skipped = _ignored(directory, names)
        if os.path.abspath(directory) == root:
            skipped |= {name for name in names if _is_test_file(name)}
        return skipped

    shutil.copytree(source, target, ignore=ignored)


def _materialise(target: Path, outcome: ModelExport, found: Optional[EnvImport] = None) -> Any:
    """Write the full config.pbtxt of a tritonpy model (from its declarations as ``found``
    read them inside its environment, else by importing it here); return the parsed config
    (None when the model has none the check can read)."""
    path = target / CONFIG_FILE
    config = load_config(path) if path.is_file() else None
    if config is not None and (
        config.platform == "ensemble" or config.HasField("ensemble_scheduling")
    ):
        outcome.kind = "ensemble"
        return config
    if config is not None and config.backend != "python":
        return config  # another backend: its files go as they are
    if config is not None and found is not None and found.ok:
        if not found.is_tritonpy:
            outcome.kind = "python"
            return config
        write_config(path, apply_declarations(config, stand_in(found), target.name))
        outcome.kind, outcome.config = "tritonpy", "materialised"
        return load_config(path)
    try:
        sync_config(target)
    except NotDerivableError:
        if config is not None:
            outcome.kind = "python"
        return config
    except ModelImportError as exc:
        raise ExportError(
            f"model {outcome.name!r}: cannot write its full config.pbtxt: {exc}. Export reads "
            "the declarations by importing model.py: install what it imports where you run "
            "'tritonpy export' (for example in this virtualenv), then export again"
        ) from exc
    outcome.kind = "tritonpy"
    outcome.config = "materialised"
    return load_config(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _remove_stub(target: Path, outcome: ModelExport, reporter: Reporter, why: str) -> None:
    stub = target / STUB_NAME
    if stub.exists():
        stub.unlink()
        outcome.stub = "removed"
        reporter.note(f"{outcome.name}: removed {STUB_NAME} ({why})")


def _existing_environment(
    source: Path,
    target: Path,
    config: Any,
    release: TritonRelease,
    outcome: ModelExport,
    reporter: Reporter,
) -> Optional[str]:
    """Keep the configured environment when its Python fits the release (equal, or a stub for
    it can be placed); return why it cannot be kept, or None when it is kept."""
    raw = config.parameters[ENV_PARAMETER].string_value
    place = resolve_env_path(raw, source)
    if not place.path.exists():
        return f"its {ENV_PARAMETER} {raw!r} does not exist on this machine"
    python = contents_python(place.path)  # None when unreadable: packed anew
    if python is None:
        if place.inside_model_dir:  # do not ship the unusable copy
            _remove(target / place.path.relative_to(source.absolute()))
        return f"its environment {raw!r} has no single lib/libpythonX.Y.so* (or is unreadable)"
    if place.inside_model_dir:
        relative = place.path.relative_to(source.absolute()).as_posix()
        copied = target / relative
        if not copied.exists():  # a hidden name the copy skipped
            _copy_any(place.path, copied)
    else:
        relative = place.path.name
        copied = target / relative
        _copy_any(place.path, copied)
        reporter.note(f"{outcome.name}: copied the environment {raw} into the model directory")
    decision = stub_decision(python, release)
    if decision.needed:
        from ..stubs import StubError, provision_stub

        try:
            placed = provision_stub(
                target, triton_version=release.name, python=python, reporter=reporter
            )
        except StubError as exc:
            _remove(copied)
            return f"{decision.reason}, and none could be placed here. {_indented(exc)}"
        outcome.stub = placed.source
    else:
        _remove_stub(target, outcome, reporter, decision.reason)
    parameter = f"{MODEL_DIR_VARIABLE}/{relative}"
    if parameter != raw:
        set_parameter(config, ENV_PARAMETER, parameter)
        write_config(target / CONFIG_FILE, config)
    outcome.environment, outcome.parameter, outcome.python = "kept", parameter, python
    return None


def _indented(exc: Exception) -> str:
    """A multi-line error (the stub's: each source's reason, the Dockerfile.stub command)
    kept whole inside another message."""
    return "\n    ".join(str(exc).splitlines())


def _copy_any(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target)


def _pack(
    target: Path,
    release: TritonRelease,
    builder: Builder,
    outcome: ModelExport,
    reporter: Reporter,
) -> None:
    from ..envs import pack_env

    # a stub left from the source may be for another Python than the new environment's
    _remove_stub(target, outcome, reporter, "packing a new environment")
    result = pack_env(target, triton_version=release.name, builder=builder, reporter=reporter)
    (target / RECORD_NAME).unlink(missing_ok=True)  # the build record is a local cache
    outcome.environment, outcome.parameter = "packed", result.parameter
    outcome.python = result.python
    if result.stub is not None:
        outcome.stub = result.stub.source


@dataclass(frozen=True)
class Prepared:
    """What validation found for one model: its import inside its environment (``found``),
    the built environment waiting for it (``built``), and where built environments go."""

    found: Optional[EnvImport] = None
    built: Optional[BuiltEnv] = None
    layout: EnvLayout = "per-model"
    shared_dir: Optional[Path] = None  # OUT's staged envs/ for the shared and image layouts
    env_root: str = DEFAULT_ENV_ROOT  # the image layout's folder of unpacked environments


def _link_or_copy(source: Path, target: Path, *, replace: bool = False) -> None:
    """A hard link where the file system allows one (same bytes, no second copy), else a
    copy; an existing ``target`` is kept (the shared archive of an earlier model), or
    replaced with ``replace`` (a stale archive copied with the model directory)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if replace and (target.exists() or target.is_symlink()):
        target.unlink()
    if target.exists():
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _place_built(
    target: Path,
    config: Any,
    release: TritonRelease,
    prepared: Prepared,
    outcome: ModelExport,
    reporter: Reporter,
) -> None:
    """Give the model the built environment: its own copy (per-model), the shared archive in
    ``envs/`` beside the repository (shared), or that archive unpacked by the image into
    ``env_root`` (image); point EXECUTION_ENV_PATH at it; place the stub its Python needs."""
    built = prepared.built
    assert built is not None
    _remove_stub(target, outcome, reporter, "packing a new environment")
    if prepared.layout != "per-model" and prepared.shared_dir is not None:
        name = archive_name(built.plan.key[:12], built.python)
        _link_or_copy(built.archive, prepared.shared_dir / name)
        outcome.shared = True
        if prepared.layout == "image":  # unpacked by the Dockerfile: a directory, no extraction
            parameter = f"{prepared.env_root.rstrip('/')}/{name[: -len('.tar.gz')]}"
        else:
            parameter = SHARED_PREFIX + name
    else:
        name = archive_name(outcome.name, built.python)
        _link_or_copy(built.archive, target / name, replace=True)
        parameter = f"{MODEL_DIR_VARIABLE}/{name}"
    set_parameter(config, ENV_PARAMETER, parameter)
    write_config(target / CONFIG_FILE, config)
    outcome.environment, outcome.parameter, outcome.python = "packed", parameter, built.python
    outcome.cached = not built.built or bool(built.models)  # built for another model
    built.models.append(outcome.name)
    decision = stub_decision(built.python, release)
    if decision.needed:
        from ..stubs import StubError, provision_stub

        try:
            placed = provision_stub(
                target, triton_version=release.name, python=built.python, reporter=reporter
            )
        except StubError as exc:
            raise ExportError(
                f"model {outcome.name!r}: {decision.reason}, and none could be placed here. "
                f"{_indented(exc)}"
            ) from exc
        outcome.stub = placed.source


def _no_pack(name: str, source: Path, release: TritonRelease, reason: str) -> ExportError:
    return ExportError(
        f"model {name!r}: model.py imports tritonpy, which the Python "
        f"{release.python} of the release {release} container lacks, and {reason}. Pack "
        f"one: 'tritonpy pack-env {source} --triton-version {release}', or export "
        f"without --no-pack to let export pack it"
    )


def prepare_model(
    source: Path,
    target: Path,
    *,
    release: TritonRelease,
    pack: bool,
    builder: Builder,
    reporter: Reporter,
    prepared: Prepared = Prepared(),
) -> ModelExport:
    """Make the copied model ``target`` (from ``source``) deployable on ``release``.

    - a tritonpy model's config.pbtxt is written in full from its declarations (as read
      inside its environment: ``prepared.found``);
    - a python model's existing environment is kept (moved inside the model directory and named
      with ``$$TRITON_MODEL_DIRECTORY``) when its Python is the release's, or when a stub for
      its Python can be placed;
    - a model whose model.py imports tritonpy and has no fitting environment gets the one
      validation built for it (``prepared.built``, from the build cache), else one packed
      for the release's Python (:func:`tritonpy.envs.pack_env`), unless ``pack`` is false:
      then :class:`ExportError` says how to provide one.
    """
    outcome = ModelExport(target.name)
    try:
        config = _materialise(target, outcome, prepared.found)
    except ConfigError:
        return outcome  # an unreadable config.pbtxt: the check reports it with its position
    if config is None or config.backend != "python":
        return outcome
    needs_tritonpy = imports_tritonpy(target, config.default_model_filename or "model.py")
    reason = "it has no environment"
    if ENV_PARAMETER in config.parameters and prepared.built is None:
        why_not = _existing_environment(source, target, config, release, outcome, reporter)
        if why_not is None:
            return outcome
        reason = why_not
    if not needs_tritonpy:
        return outcome  # a plain model: the check says what is wrong with its environment
    if not pack:
        raise _no_pack(outcome.name, source, release, reason)
    if prepared.built is not None:
        _place_built(target, config, release, prepared, outcome, reporter)
        return outcome
    reporter.note(f"{outcome.name}: {reason}; packing one for release {release}")
    _pack(target, release, builder, outcome, reporter)
    return outcome
