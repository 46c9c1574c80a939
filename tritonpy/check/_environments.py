"""Environment rules (TP5xx): ``EXECUTION_ENV_PATH``, the environment's Python, the stub
beside config.pbtxt and the target server's Python, numpy 2 on old releases.

The target server is ``--triton-version YY.MM`` (its container's Python, see
:class:`tritonpy._tooling.releases.TritonRelease`) or ``--server-python X.Y``; without either, the
rules that need it are skipped.

==========  ========  ==============================================================
TP501       both      the path does not exist (warning for an absolute path: it may
                      exist only on the server)
TP502       both      ``$$TRITON_MODEL_DIRECTORY/..`` escapes the model directory
                      (error; a warning when the path exists: a shared environment
                      beside the repository does not travel to object storage); a bare
                      relative path (warning: the server resolves it against its
                      working directory)
TP503       error     neither a ``.tar.gz`` nor a directory
TP504       error     no ``bin/activate`` in the environment
TP505       error     no single ``lib/libpythonX.Y.so*`` in the environment
TP506       error     the environment's Python differs from the stub's libpython
TP507       error     the environment's Python differs from the server's, and no stub
                      for it sits beside config.pbtxt
TP508       error     a stub beside config.pbtxt linking a Python the server lacks, with
                      no environment providing it
TP509       both      numpy >= 2 in the environment for a release whose stub predates it
                      (the table's ``numpy2_bytes_ok``: before 24.11; error; warning when
                      the release is unknown)
TP510       error     the stub beside config.pbtxt is unreadable or links no libpython
TP511       warning   model.py imports tritonpy but the model has no environment, and the
                      release's container Python has no tritonpy (``--triton-version``
                      only: the embedded server's Python is the one tritonpy runs in)
==========  ========  ==============================================================

Every fix names the command that repairs it (``tritonpy stub ...``, ``tritonpy pack-env ...``).
The stub's libpython against the environment's ``lib/`` and the stub's release are TP512 and
TP513 (:mod:`tritonpy.check._stubfacts`).
"""

from __future__ import annotations

import tarfile
import zlib
from typing import Iterator, List, Optional

from .._tooling.elf import ElfError, linked_python
from .._tooling.env_archives import EnvContents, EnvPlace, inspect_env, resolve_env_path
from .._tooling.model_dirs import ENV_PARAMETER, STUB_NAME
from .._tooling.releases import TritonRelease
from ._context import ModelEntry, Repository, error
from ._imports import imports_tritonpy
from ._releases import since
from ._report import ERROR, WARNING, Finding

_FIELD = f"parameters[{ENV_PARAMETER}]"


def check_environments(repo: Repository) -> Iterator[Finding]:
    """Yield the environment findings of every python-backend model."""
    for entry in repo:
        if entry.is_python:
            yield from _check_model(repo, entry)


def _stub_python(entry: ModelEntry, out: List[Finding]) -> Optional[str]:
    stub = entry.path / STUB_NAME
    if not stub.is_file():
        return None
    rel = f"{entry.name}/{STUB_NAME}"
    try:
        python = linked_python(stub)
    except ElfError as exc:
        out.append(
            entry.finding(
                "TP510",
                ERROR,
                "",
                f"cannot read the stub: {str(exc).replace(f'{stub}: ', '')}",
                _STUB_FIX,
                file=rel,
            )
        )
        return None
    if python is None:
        out.append(
            entry.finding(
                "TP510",
                ERROR,
                "",
                "the stub links no libpython, so it is not a Python backend stub",
                _STUB_FIX,
                file=rel,
            )
        )
        return None
    return python


_STUB_FIX = (
    "put a triton_python_backend_stub built for the environment's Python from the server's "
    "release branch beside config.pbtxt ('tritonpy stub MODEL_DIR --triton-version YY.MM')"
)


def _server_source(repo: Repository) -> str:
    """`` (release 24.11's container: <citation>)`` when the server's Python comes from
    ``--triton-version`` (the table's fact), else ``""``."""
    release = repo.release
    if release is None or release < TritonRelease(23, 1):
        return ""  # before the table: releases.py's own 3.8
    return f" (release {release}'s container: {release.facts.cites('python')})"


def _release_name(repo: Repository) -> str:
    return repo.release.name if repo.release else "YY.MM"


def _stub_command(repo: Repository, entry: ModelEntry, python: str) -> str:
    """The command that places the right stub (named in the fixes)."""
    return (
        f"'tritonpy stub REPO/{entry.name} --triton-version {_release_name(repo)} "
        f"--python {python}'"
    )


def _pack_command(repo: Repository, entry: ModelEntry, python: Optional[str]) -> str:
    """The command that rebuilds the environment (named in the fixes)."""
    option = f" --python {python}" if python else ""
    return f"'tritonpy pack-env REPO/{entry.name} --triton-version {_release_name(repo)}{option}'"


def _check_model(repo: Repository, entry: ModelEntry) -> Iterator[Finding]:
    found: List[Finding] = []
    stub_python = _stub_python(entry, found)
    yield from found
    server = repo.server_python
    if ENV_PARAMETER not in entry.config.parameters:
        if stub_python and server and stub_python != server:
            yield entry.finding(
                "TP508",
                ERROR,
                "",
                f"the stub links libpython{stub_python} but the server runs Python {server}"
                f"{_server_source(repo)}, "
                f"and no {ENV_PARAMETER} environment provides Python {stub_python}; the model "
                f"cannot start (the launcher may wait forever)",
                f"pack an environment with Python {stub_python}: "
                f"{_pack_command(repo, entry, stub_python)}, or remove the stub to use the "
                f"server's own",
                file=f"{entry.name}/{STUB_NAME}",
            )
        yield from _without_environment(repo, entry)
        return
    found = []
    contents = _resolve(entry, found)
    yield from found
    if contents is None:
        return
    env_python = contents.python
    if env_python and stub_python and env_python != stub_python:
        yield error(
            entry,
            "TP506",
            _FIELD,
            f"the environment has Python {env_python} but the stub beside config.pbtxt "
            f"links libpython{stub_python}; the stub runs the model without the "
            f"environment's packages",
            f"replace the stub: {_stub_command(repo, entry, env_python)}, or rebuild the "
            f"environment with Python {stub_python}: {_pack_command(repo, entry, stub_python)}",
        )
    elif env_python and not stub_python and server and env_python != server:
        yield error(
            entry,
            "TP507",
            _FIELD,
            f"the environment has Python {env_python} but the server runs Python {server}"
            f"{_server_source(repo)} and no {STUB_NAME} sits beside config.pbtxt; the "
            f"server's stub ignores the environment",
            f"put a stub for Python {env_python} from the server's release beside it: "
            f"{_stub_command(repo, entry, env_python)}, or rebuild the environment with "
            f"Python {server}: {_pack_command(repo, entry, server)}",
        )
    yield from _numpy(repo, entry, contents)


def _without_environment(repo: Repository, entry: ModelEntry) -> Iterator[Finding]:
    """TP511: a tritonpy model without an environment fails to import in a stock container."""
    release = repo.release
    if release is None or not imports_tritonpy(entry.path, entry.model_filename):
        return
    yield entry.finding(
        "TP511",
        WARNING,
        _FIELD,
        f"{entry.model_filename} imports tritonpy but the model has no {ENV_PARAMETER} "
        f"environment, and the Python {release.python} of the release {release} container "
        f"has no tritonpy: the model fails to load there (No module named 'tritonpy')",
        f"pack its environment: 'tritonpy pack-env REPO/{entry.name} --triton-version "
        f"{release}', or export the repository with every environment: 'tritonpy export "
        f"REPO OUT --triton-version {release}' (or install tritonpy into your server image)",
    )


def _resolve(entry: ModelEntry, out: List[Finding]) -> Optional[EnvContents]:
    """What the model's environment holds; None when it cannot be inspected (the reason, if
    the check's to tell, is appended to ``out``, as is every other finding about it)."""
    raw = entry.config.parameters[ENV_PARAMETER].string_value
    place = resolve_env_path(raw, entry.path)
    findings = list(_place_findings(entry, place))
    out.extend(findings)
    if any(finding.severity == ERROR for finding in findings) or not place.path.exists():
        return None
    try:
        contents = inspect_env(place.path)
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return None  # TP604 reports the archive
    out.extend(_contents_findings(entry, raw, contents))
    return contents


def _place_findings(entry: ModelEntry, place: EnvPlace) -> Iterator[Finding]:
    """TP501-TP503: where EXECUTION_ENV_PATH points, and whether something usable is there."""
    raw = place.raw
    if place.kind != "absolute" and not place.inside_model_dir:
        if not place.path.exists():
            yield error(
                entry,
                "TP502",
                _FIELD,
                f"{raw!r} points outside the model directory (to {entry.display(place.path)})",
                "keep the environment inside the model directory: "
                "$$TRITON_MODEL_DIRECTORY/<env>.tar.gz",
            )
            return
        # a shared environment beside the repository (tritonpy export --env-layout shared)
        yield entry.finding(
            "TP502",
            WARNING,
            _FIELD,
            f"{raw!r} points outside the model directory (to {entry.display(place.path)}): "
            "it works where the repository is served in place or from an image that keeps "
            "that folder, but a repository copied model directory by model directory "
            "(object storage, KServe) loses it",
            "for object storage keep the environment inside the model directory "
            "($$TRITON_MODEL_DIRECTORY/<env>.tar.gz; tritonpy export --env-layout per-model)",
        )
    if place.kind == "relative":
        yield entry.finding(
            "TP502",
            WARNING,
            _FIELD,
            f"{raw!r} is relative: the server resolves it against its own working directory, "
            f"not the model directory",
            f"write $$TRITON_MODEL_DIRECTORY/{raw}",
        )
    if not place.path.exists():
        yield _missing_environment(entry, place)
        return
    is_archive = place.path.is_file() and place.path.name.endswith(".tar.gz")
    if not is_archive and not place.path.is_dir():
        yield error(
            entry,
            "TP503",
            _FIELD,
            f"{raw!r} is neither a .tar.gz archive nor a directory",
            "point it at a conda-pack .tar.gz or an unpacked environment directory",
        )


def _missing_environment(entry: ModelEntry, place: EnvPlace) -> Finding:
    """TP501: an error, or a warning for an absolute path (it may exist only on the server)."""
    if place.kind == "absolute":
        return entry.finding(
            "TP501",
            WARNING,
            _FIELD,
            f"{place.raw!r} does not exist on this machine",
            "make sure it exists on the server",
        )
    return error(
        entry,
        "TP501",
        _FIELD,
        f"{place.raw!r} does not exist (looked for {entry.display(place.path)})",
        "build the environment there (tritonpy pack-env MODEL_DIR, or conda-pack) or fix the path",
    )


def _contents_findings(entry: ModelEntry, raw: str, contents: EnvContents) -> Iterator[Finding]:
    """TP504-TP505: what the stub needs inside the environment."""
    if not contents.has_activate:
        yield error(
            entry,
            "TP504",
            _FIELD,
            f"the environment {raw!r} has no bin/activate",
            "pack a conda environment (conda-pack writes bin/activate) or add the script",
        )
    if contents.python is None:
        found = f"found {list(contents.pythons)}" if contents.pythons else "found none"
        yield error(
            entry,
            "TP505",
            _FIELD,
            f"the environment {raw!r} needs exactly one lib/libpythonX.Y.so* ({found}); "
            f"the stub loads the environment's Python from it",
            "create the environment with a shared libpython (conda's python has one)",
        )


def _numpy(repo: Repository, entry: ModelEntry, contents: EnvContents) -> Iterator[Finding]:
    version = contents.numpy
    if version is None or _major(version) < 2:
        return
    release = repo.release
    if release is not None and release.facts.numpy2_bytes_ok:
        return
    # the first release whose stub handles numpy 2, from the table (pybind11 2.12)
    first, cite = since("numpy2_bytes_ok", True)
    where = f"release {release}" if release else f"releases before {first} ({cite})"
    yield entry.finding(
        "TP509",
        ERROR if release is not None else WARNING,
        _FIELD,
        f"the environment has numpy {version}; the Python backend stub of {where} "
        f"predates numpy 2 (BYTES inputs fail and outputs come back empty)",
        f"pin numpy<2 in the environment's spec and rebuild it: "
        f"{_pack_command(repo, entry, contents.python)}"
        + ("" if release else ", or pass --triton-version to check against your release"),
    )


def _major(version: str) -> int:
    """The major number of a (dist-info) version; 0 when it is not a PEP 440 version."""
    from packaging.version import InvalidVersion, Version  # required by check_repository

    try:
        return Version(version).major
    except InvalidVersion:
        return 0
