"""The repository checks serve runs before it starts tritonserver, against the serving
interpreter's Python, so a mistake fails in seconds with the file and the fix instead of after
the startup timeout.

Example::

    report = preflight("model_repository", server_python="3.11", provided_stubs=["pre"])
    for warning in report.warnings:
        print(warning.render())
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional, Union

from .._runtime.errors import ToolError
from .._tooling.errors import ServerError
from .._tooling.options import PYTHON_NAMES, OptionNames

if TYPE_CHECKING:  # the check package imports model code: loaded only when a check runs
    from ..check import Report

PathLike = Union[str, "os.PathLike[str]"]

# "the environment's Python differs from the server's and no stub sits beside config.pbtxt":
# not true of the models serve gives a stub of their environment's Python
_PYTHON_MISMATCH = "TP507"


class PreflightError(ServerError):
    """``tritonpy check`` found errors in the repository; the server was not started.

    ``report`` is the :class:`tritonpy.check.Report` (its ``errors`` and ``warnings``).
    """

    def __init__(self, message: str, *, report: Report) -> None:
        super().__init__(message)
        self.report = report


def preflight(
    repository: PathLike,
    *,
    server_python: Optional[str] = None,
    provided_stubs: Iterable[str] = (),
    names: OptionNames = PYTHON_NAMES,
    shown_as: Optional[str] = None,
) -> Report:
    """Run :func:`tritonpy.check.check_repository` on ``repository`` for a server running
    Python ``server_python`` (``X.Y``; ``None`` skips the rules that need it). The models in
    ``provided_stubs`` get a stub for their environment's Python from serve, so they are not
    reported as a Python mismatch. ``shown_as`` names the repository in messages (the
    ``s3://`` URL of which ``repository`` is a temporary copy).

    Returns the report (warnings only) or raises :class:`PreflightError` listing every error.

    Example::

        preflight("model_repository", server_python="3.11").warnings
    """
    from ..check import check_repository

    root = Path(repository)
    label = shown_as or str(root)
    try:
        report = check_repository(root, server_python=server_python)
    except ToolError as exc:
        raise ServerError(f"cannot check the model repository {label}: {exc}") from exc
    provided = set(provided_stubs)
    report.findings = [
        f
        for f in report.findings
        if not (f.code == _PYTHON_MISMATCH and f.file.split("/")[0] in provided)
    ]
    if report.errors:
        errors = len(report.errors)
        listed = "\n".join(f.render() for f in report.errors)
        raise PreflightError(
            f"the model repository {label} has {errors} error{'s' * (errors != 1)} "
            f"(tritonpy check, server Python {server_python or 'unknown'}); tritonserver was "
            f"not started:\n{listed}\nFix them and start again, or pass "
            f"{_skip(names)} to start the server anyway.",
            report=report,
        )
    return report


def _skip(names: OptionNames) -> str:
    return "--no-check" if names.cli else "check=False"
