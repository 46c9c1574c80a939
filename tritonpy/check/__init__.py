"""``tritonpy check``: inspect a whole model repository without starting a server and report
every problem that would otherwise show up at load time, with the file, the field, what is
wrong and how to fix it.

Rule families, one module each: :mod:`~tritonpy.check._layout` (TP1xx),
:mod:`~tritonpy.check._consistency` (TP2xx), :mod:`~tritonpy.check._batching` (TP3xx),
:mod:`~tritonpy.check._ensembles` (TP4xx), :mod:`~tritonpy.check._environments` (TP501-TP511),
:mod:`~tritonpy.check._stubfacts` (TP512-TP513),
:mod:`~tritonpy.check._archives` (TP6xx), :mod:`~tritonpy.check._sequences` (TP7xx),
:mod:`~tritonpy.check._releases` (TP8xx: what ``triton_version``'s release refuses).

Example::

    from tritonpy.check import check_repository

    report = check_repository("model_repository", triton_version="24.10")
    for finding in report.errors:
        print(finding.render())
    assert report.exit_code() == 0
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple, Union

from .._runtime._optional import require
from .._runtime._public_names import publish as _publish
from .._runtime.errors import ToolError
from .._tooling.pbtxt import CONFIG_MODULES
from .._tooling.release_facts import ReleaseOutsideTableWarning
from .._tooling.releases import TritonRelease
from ..storage import is_remote
from ._archives import check_archives
from ._batching import check_batching
from ._consistency import check_consistency
from ._context import EnvImports, Repository
from ._ensembles import check_ensembles

# the face this package shows tritonpy's other tooling packages: not in __all__, not public API
from ._envimport import ModelEnvironment as ModelEnvironment
from ._envimport import configured_environment as configured_environment
from ._envimport import import_failure as import_failure
from ._envimport import import_fix as import_fix
from ._envimport import stand_in as stand_in
from ._environments import check_environments
from ._imports import imports_tritonpy as imports_tritonpy
from ._layout import check_layout
from ._releases import check_releases
from ._report import ERROR, INFO, WARNING, Finding, Report
from ._sequences import check_sequences
from ._stubfacts import check_stubs

__all__ = [
    "ERROR",
    "INFO",
    "RULES",
    "WARNING",
    "CheckError",
    "Finding",
    "Report",
    "check_repository",
]

Rule = Callable[[Repository], Iterator[Finding]]

#: every rule family, in the order findings are reported
RULES: List[Rule] = [
    check_layout,
    check_consistency,
    check_batching,
    check_ensembles,
    check_environments,
    check_stubs,
    check_archives,
    check_sequences,
    check_releases,
]


class CheckError(ToolError):
    """The check itself cannot run (no such repository, bad options)."""


def check_repository(
    repo: Union[str, Path],
    *,
    triton_version: Optional[str] = None,
    server_python: Optional[str] = None,
    envs: bool = True,
    build_envs: bool = False,
    builder: str = "auto",
) -> Report:
    """Check the model repository ``repo`` and return every finding.

    ``repo`` is a directory, or an ``s3://`` URL (``s3://BUCKET/PREFIX``,
    ``s3://HOST:PORT/BUCKET/PREFIX``): a temporary copy of the bucket folder is checked
    (credentials from the AWS_* variables, as tritonserver reads them) and the report names
    the URL; :class:`~tritonpy.storage.StorageError` when it cannot be read.

    ``triton_version`` (``"24.10"``) names the target server's release: its container Python,
    whether its stub handles numpy 2 and what it refuses (the TP8xx rules), all from the table
    of release facts (a release after the table gets its newest facts and a TP801 warning).
    ``server_python`` (``"3.12"``) gives the server's Python directly (the embedded server's
    is the serving interpreter's). Without either, the rules that compare against the server
    are skipped and the TP8xx rules give info lines.

    Importing each python model's ``model.py`` (with the fake pb_utils) is the only user code
    that runs; nothing is initialised. It is imported inside the model's own environment when
    it has one (``envs``, the default): the ``EXECUTION_ENV_PATH`` archive (unpacked once into
    tritonpy's cache) or directory, or, with ``triton_version``, the environment the model
    directory's ``requirements.txt``/``environment.yml`` declares when it is in the build cache
    (``build_envs``: build it first, with ``builder``); else in the tool's Python. Raises
    :class:`~tritonpy.MissingDependencyError` when protobuf or tritonclient (the
    ``config`` extra) is missing, :class:`CheckError` for a bad ``repo`` or options.

    >>> report = check_repository("model_repository", server_python="3.11")  # doctest: +SKIP
    >>> report.codes, report.exit_code()                                       # doctest: +SKIP
    ([], 0)
    """
    # without protobuf every config.pbtxt would look invalid: say once what to install
    # (packaging, of the same extra, reads versions found in environments)
    require(*CONFIG_MODULES, "packaging", extra="config", feature="tritonpy check")
    remote = is_remote(str(repo))
    root = Path(repo)
    if not remote and not root.is_dir():
        raise CheckError(
            f"model repository {root} is not a directory; pass the directory "
            f"holding one subdirectory per model"
        )
    release, server_python = _target(triton_version, server_python, build_envs)
    imports = EnvImports(enabled=envs, build=build_envs, builder=builder)
    if remote:
        return _run_remote(str(repo), release, server_python, imports)
    return _run(root, release, server_python, imports)


def _target(
    triton_version: Optional[str], server_python: Optional[str], build_envs: bool
) -> Tuple[Optional[TritonRelease], Optional[str]]:
    """The target release and server Python the options name, or :class:`CheckError`."""
    if triton_version is not None and server_python is not None:
        raise CheckError("give either triton_version or server_python, not both")
    release = TritonRelease.parse(triton_version) if triton_version else None
    if build_envs and release is None:
        raise CheckError(
            "build_envs (--build-envs) needs triton_version (--triton-version YY.MM): an "
            "environment is built for a release's container Python"
        )
    if server_python is not None:
        parts = server_python.strip().split(".")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise CheckError(f"server Python {server_python!r} is not X.Y (e.g. 3.12)")
        server_python = ".".join(parts)
    return release, server_python


def _run_remote(
    url: str, release: Optional[TritonRelease], server_python: Optional[str], envs: EnvImports
) -> Report:
    """Check a temporary copy of the bucket folder ``url`` (credentials from the
    environment, as tritonserver reads them); the report names ``url``, not the copy."""
    from ..storage import TemporaryDownload

    with TemporaryDownload(url) as copy:
        report = _run(copy.path, release, server_python, envs)
        local, shown = copy.path.absolute(), str(copy.url)

        def named(text: str) -> str:  # a path outside the copy lies beside it: URL/..
            return text.replace(str(local), shown).replace(str(local.parent), f"{shown}/..")

        report.findings = [
            dataclasses.replace(f, file=named(f.file), message=named(f.message), fix=named(f.fix))
            for f in report.findings
        ]
    report.repository = shown
    return report


def _run(
    root: Path, release: Optional[TritonRelease], server_python: Optional[str], envs: EnvImports
) -> Report:
    """Scan the repository and apply every rule family."""
    with warnings.catch_warnings():
        # a release outside the table is the TP801 finding, not a Python warning
        warnings.simplefilter("ignore", ReleaseOutsideTableWarning)
        repository = Repository.scan(root, release=release, server_python=server_python, envs=envs)
        report = Report(root)
        for rule in RULES:
            report.findings.extend(rule(repository))
    return report


_publish(__name__, globals())
