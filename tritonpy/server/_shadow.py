"""Stubs for environments of another Python, without touching the user's model directories.

A model whose ``EXECUTION_ENV_PATH`` environment has Python 3.10 needs a
``triton_python_backend_stub`` built for 3.10 beside its ``config.pbtxt`` when the server's
stub is 3.11. Instead of copying one into the user's directory, the server serves a *shadow
repository*: a temporary directory with a symbolic link to every model directory, except that
the models needing a stub get a real directory of links to each of their entries plus a link
to the wheel's stub for their Python. ``$$TRITON_MODEL_DIRECTORY`` then names the shadow
directory, where the same relative paths resolve: the shadow sits one level down in its
temporary directory (``tritonpy-serve-XXXX/<repository name>/``) beside links to the folders
next to the repository that an environment path reaches (``$$TRITON_MODEL_DIRECTORY/../../envs/
...``, the shared layout of ``tritonpy export``).

The shadow also spares tritonserver the extraction of environment archives: the Python
backend (python_backend r24.10 src/pb_env.cc) extracts an ``EXECUTION_ENV_PATH`` archive into
``/tmp/python_env_*`` at every server start (once per path: per-model copies of one archive
are each extracted) and uses a directory in place. A model whose archive lies in its own
directory (``$$TRITON_MODEL_DIRECTORY/<name>.tar.gz``, pack-env's and export's per-model
layout) gets a real directory in the shadow where that name links to tritonpy's unpacked copy
of the archive (``<cache>/envs/unpacked/<digest>``, the copy ``tritonpy check`` imports the
model in, made once per archive contents): the backend resolves the link to a directory and
extracts nothing.

Example::

    plan = plan_stubs(Path("model_repository"), "3.11", find_wheel_installation())
    shadow = build_shadow(Path("model_repository"), plan)   # a temporary directory
    ...
    remove_shadow(shadow)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .._tooling.env_archives import environment_python, resolve_env_path
from .._tooling.errors import ArchiveError
from .._tooling.installation import WheelInstallation
from .._tooling.model_dirs import ENV_PARAMETER, STUB_NAME


@dataclass(frozen=True)
class UnpackedEnv:
    """A model whose environment archive ``entry`` (a file of its directory) is served from
    ``folder``, tritonpy's unpacked copy of it."""

    model: str
    entry: str
    folder: Path


@dataclass(frozen=True)
class StubPlan:
    """A model that gets a stub from serve: its name, its environment's Python and the stub."""

    model: str
    python: str
    stub: Path


def _read_env_parameter(config_path: Path) -> Optional[str]:
    """The ``EXECUTION_ENV_PATH`` value of a config.pbtxt (``None`` when unset or unreadable:
    the preflight check reports unreadable configurations)."""
    from .._tooling.pbtxt import ConfigError, load_config

    try:
        config = load_config(config_path)
    except ConfigError:
        return None
    if config.backend != "python" or ENV_PARAMETER not in config.parameters:
        return None
    value = str(config.parameters[ENV_PARAMETER].string_value)
    return value or None


def env_python(model_dir: Path) -> Optional[str]:
    """The Python ``X.Y`` of the model's ``EXECUTION_ENV_PATH`` environment, or ``None`` when it
    has none or it cannot be told.

    Read, cheapest first, from pack-env's record (``.tritonpy-env.json``), the archive's name
    (``*_py3.10.tar.gz``), then the ``lib/libpython3.X`` inside the environment.

    Example::

        env_python(Path("model_repository/preprocess"))   # '3.10'
    """
    raw = _read_env_parameter(model_dir / "config.pbtxt")
    if raw is None:
        return None
    return environment_python(resolve_env_path(raw, model_dir).path)


def repository_models(repository: Path) -> List[str]:
    """The model directories of a repository, sorted (hidden ones left out)."""
    try:
        return sorted(p.name for p in repository.iterdir() if p.is_dir() and p.name[0] != ".")
    except OSError:
        return []


def plan_stubs(
    repository: Path, server_python: str, wheel: WheelInstallation
) -> Dict[str, StubPlan]:
    """The models of ``repository`` that need a stub serve provides: their environment's Python
    differs from ``server_python``, the wheel or the stub cache (a native build) has a stub for
    it, and the user placed no stub of their own (theirs wins).

    Example::

        plan_stubs(Path("repo"), "3.11", wheel)   # {'pre': StubPlan('pre', '3.10', ...)}
    """
    # the one stub lookup tritonpy has: the wheel's stub, else one built earlier (cache)
    from ..stubs import WHEEL_RELEASES, find_stub

    release = WHEEL_RELEASES.get(wheel.version)
    plans: Dict[str, StubPlan] = {}
    for model_dir in sorted(p for p in repository.iterdir() if p.is_dir()):
        if model_dir.name.startswith(".") or (model_dir / STUB_NAME).exists():
            continue
        python = env_python(model_dir)
        if python is None or python == server_python:
            continue
        if release is None:  # an unknown wheel: only its own stubs are known to match
            stub: Optional[Path] = wheel.stub(python) if wheel.stub(python).is_file() else None
        else:
            found = find_stub(release, python, wheel=wheel)
            stub = found.path if found is not None else None
        if stub is not None:
            plans[model_dir.name] = StubPlan(model_dir.name, python, stub)
    return plans


def _unpacked_copy(archive: Path) -> Optional[Path]:
    """tritonpy's unpacked copy of ``archive`` (unpacked now when the cache has none), or
    ``None`` when it cannot be made: tritonserver then extracts the archive itself (and
    reports what is wrong with it)."""
    from ..envs import unpacked_environment  # not at import: serve's facts load no envs

    try:
        return unpacked_environment(archive)
    except (ArchiveError, OSError):
        return None


def plan_unpacked(repository: Path) -> Dict[str, UnpackedEnv]:
    """The models of ``repository`` whose ``EXECUTION_ENV_PATH`` is an archive in their own
    directory (``$$TRITON_MODEL_DIRECTORY/<file>``), with tritonpy's unpacked copy of it.
    An archive named by an absolute path, or beside the repository (export's shared layout,
    extracted once per start for all its models), is left to tritonserver.

    Example::

        plan_unpacked(Path("repo"))   # {'pre': UnpackedEnv('pre', 'pre_py3.10.tar.gz', ...)}
    """
    planned: Dict[str, UnpackedEnv] = {}
    for name in repository_models(repository):
        model_dir = repository.absolute() / name
        raw = _read_env_parameter(model_dir / "config.pbtxt")
        if raw is None:
            continue
        place = resolve_env_path(raw, model_dir)
        if place.kind != "model" or place.path.parent != model_dir or not place.path.is_file():
            continue
        folder = _unpacked_copy(place.path)
        if folder is not None:
            planned[name] = UnpackedEnv(name, place.path.name, folder)
    return planned


def build_shadow(
    repository: Path,
    plans: Dict[str, StubPlan],
    unpacked: Optional[Dict[str, UnpackedEnv]] = None,
) -> Path:
    """A temporary repository mirroring ``repository`` through symbolic links, with the
    planned stubs beside the configs of their models and the ``unpacked`` models' archives
    linked to their unpacked copies; return its path. Nothing is written into
    ``repository``.

    Example::

        shadow = build_shadow(Path("repo"), plan_stubs(Path("repo"), "3.11", wheel))
    """
    envs = unpacked or {}
    source = repository.absolute()
    base = Path(tempfile.mkdtemp(prefix=_SHADOW_PREFIX))
    shadow = base / (source.name or "repository")
    try:
        shadow.mkdir()
        for sibling in sorted(_siblings_reached(source, plans)):
            (base / sibling).symlink_to(source.parent / sibling)
        for entry in sorted(source.iterdir()):
            target = shadow / entry.name
            plan, env = plans.get(entry.name), envs.get(entry.name)
            if plan is None and env is None:
                target.symlink_to(entry)
                continue
            target.mkdir()
            for item in sorted(entry.iterdir()):
                linked = env.folder if env is not None and item.name == env.entry else item
                (target / item.name).symlink_to(linked)
            if plan is not None:
                (target / STUB_NAME).symlink_to(plan.stub)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return shadow


def prepare(
    repository: Path, plans: Dict[str, StubPlan], unpacked: bool
) -> Tuple[Optional[Path], Dict[str, UnpackedEnv]]:
    """The shadow repository serve needs (``None`` when no model needs one: no stub to
    give and, with ``unpacked``, no archive to serve from its unpacked copy) and the models
    whose archives it serves unpacked."""
    envs = plan_unpacked(repository) if unpacked else {}
    shadow = build_shadow(repository, plans, envs) if plans or envs else None
    return shadow, envs


_SHADOW_PREFIX = "tritonpy-serve-"


def _siblings_reached(source: Path, plans: Dict[str, StubPlan]) -> List[str]:
    """The entries beside the repository ``source`` that the environment paths of the planned
    models reach with ``..`` (one level out of the repository: export's shared layout)."""
    reached = set()
    for name in plans:
        raw = _read_env_parameter(source / name / "config.pbtxt")
        if raw is None or "$$TRITON_MODEL_DIRECTORY" not in raw:
            continue
        path = os.path.normpath(raw.replace("$$TRITON_MODEL_DIRECTORY", str(source / name)))
        relative = os.path.relpath(path, source.parent)
        first = relative.split(os.sep)[0]
        if first not in ("..", source.name, ".") and (source.parent / first).exists():
            reached.add(first)
    return sorted(reached)


def sync_shadow(shadow: Path, repository: Path, plans: Dict[str, StubPlan]) -> None:
    """Bring a shadow repository up to date with ``repository`` after the user added or
    removed model directories (or entries of a model that has a planned stub): links to new
    entries, none left to entries that are gone; an archive served from its unpacked copy
    follows its file (a new archive, a new copy). A new model gets no stub of another Python
    and no unpacked copy (serve plans those at start); ``plans`` are the stubs given then
    (every real directory of the shadow is mirrored entry by entry).

    Example::

        sync_shadow(shadow, Path("repo"), plans)   # after `mkdir repo/new_model`
    """
    source = repository.absolute()
    for target, entry in _link_pairs(shadow, source):
        if target.is_symlink() and os.readlink(target) != str(entry):
            _relink_unpacked(target, entry)  # an archive served from its unpacked copy
        elif not entry.exists() and not target.is_dir():
            target.unlink(missing_ok=True)  # a link to a removed entry
        elif entry.exists() and not os.path.lexists(target):
            target.symlink_to(entry)
    for target in list(shadow.iterdir()):
        if not (source / target.name).exists():
            if target.is_symlink():
                target.unlink()
            else:
                shutil.rmtree(target, ignore_errors=True)


def _relink_unpacked(target: Path, archive: Path) -> None:
    """An archive served from its unpacked copy, kept in step with the user's file: gone,
    its link goes; replaced (pack-env again), the link names the new contents' copy (or the
    archive itself, for tritonserver to extract, when no copy can be made)."""
    if not archive.is_file():
        target.unlink()
        return
    linked = _unpacked_copy(archive) or archive
    if os.readlink(target) != str(linked):
        fresh = target.with_name(f".{target.name}.new")
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(linked)
        os.replace(fresh, target)


def _link_pairs(shadow: Path, source: Path) -> List[Tuple[Path, Path]]:
    """(link in the shadow, the user's entry it points to) for every entry the shadow mirrors
    now or should; a model with a real directory in the shadow (a stub given, an archive
    served unpacked) entry by entry."""
    pairs: List[Tuple[Path, Path]] = []
    names = {p.name for p in source.iterdir()} | {p.name for p in shadow.iterdir()}
    for name in sorted(names):
        if (shadow / name).is_dir() and not (shadow / name).is_symlink():
            inner = {p.name for p in (shadow / name).iterdir() if p.name != STUB_NAME}
            if (source / name).is_dir():
                inner |= {p.name for p in (source / name).iterdir()}
            pairs += [(shadow / name / item, source / name / item) for item in sorted(inner)]
        else:
            pairs.append((shadow / name, source / name))
    return pairs


def remove_shadow(shadow: Path) -> None:
    """Delete a shadow repository and the temporary directory holding it (only links and
    directories: ``rmtree`` does not follow symbolic links, so the user's files stay)."""
    base = shadow.parent if shadow.parent.name.startswith(_SHADOW_PREFIX) else shadow
    shutil.rmtree(base, ignore_errors=True)


def user_path(text: str, shadow: Optional[Path], repository: Path) -> str:
    """``text`` with the shadow repository's paths replaced by the user's."""
    if shadow is None:
        return text
    return text.replace(str(shadow), str(repository.absolute()))
