"""The messages of a failed start: which models failed and why, with the server log's lines
about each, the fix, and the log tail."""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Mapping, Sequence

from .._tooling.options import OptionNames
from ._loadfail import LoadFailure


def condensed(text: str, width: int = 300) -> str:
    """A log excerpt for an error message: no table borders, long lines cut, indented."""
    lines = [
        re.sub(r"\s{2,}", " ", ln.rstrip()) if ln.startswith("|") else ln
        for ln in text.splitlines()
        if not ln.startswith("+")
    ]
    return "\n".join("    " + (ln if len(ln) <= width else ln[: width - 3] + "...") for ln in lines)


def load_error_message(
    repository: Path,
    failures: Sequence[LoadFailure],
    about: Mapping[str, Sequence[str]],
    tail: str,
) -> str:
    """The text of a :class:`ModelLoadError`: each model's failure in its short form (the
    exception, the user's frames, the fix), the server log lines about it that say more than
    that, then the log tail."""
    parts: List[str] = []
    for failure in failures:
        parts.extend(failure.lines())
        extra = [ln for ln in about.get(failure.model, ()) if failure.exception not in ln]
        if extra and not failure.frames:
            parts.append(
                f"  server log lines about {failure.model!r}:\n{condensed(chr(10).join(extra))}"
            )
    names = ", ".join(repr(f.model) for f in failures)
    return (
        f"{len(failures)} model(s) of {repository} failed to load: {names}.\n"
        + "\n".join(parts)
        + "\nFix the model (its model.py or config.pbtxt) and start the server again. "
        f"Server log tail:\n{condensed(tail)}"
    )


def timeout_message(
    repository: Path, seconds: float, not_ready: Sequence[str], tail: str, names: OptionNames
) -> str:
    """The text of a :class:`ServerTimeoutError`."""
    what = ", ".join(repr(n) for n in not_ready) if not_ready else "(the server itself)"
    return (
        f"tritonserver did not become ready within {seconds:g} s (repository {repository}); "
        f"not ready: {what}. A model whose initialize() is slow needs a longer startup "
        f"timeout ({names.option('startup_timeout', 'SECONDS')}); a stub that never starts "
        "usually cannot find libpython (check LD_LIBRARY_PATH and the stub's Python "
        f"version). Server log tail:\n{condensed(tail)}"
    )


def port_clash_message(ports: Sequence[int], host: str, clash: str, names: OptionNames) -> str:
    """The text of the error when tritonserver could not bind a port it was given."""
    flags = names.options("http_port", "grpc_port", "metrics_port")
    return (
        f"tritonserver could not bind its ports {list(ports)} on {host}: {clash}. Pass other "
        f"ports ({flags}) or leave them out to use free ones."
    )


def busy_port_message(label: str, option: str, port: int, host: str, names: OptionNames) -> str:
    """The text of the error when a port the caller chose is already taken."""
    return (
        f"the {label} port {port} on {host} is already in use by another process. Pass another "
        f"{names.option(option, 'PORT')}, stop the process using it, or leave "
        f"{names.option(option).rstrip('=')} out to use a free port."
    )
