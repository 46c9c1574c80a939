"""Layout rules (TP1xx): config.pbtxt present and valid, name = directory, numeric version
directories, model.py present, valid Python and defining ``TritonPythonModel``.

==========  ========  ==============================================================
TP101       error     model directory without config.pbtxt
TP102       error     config.pbtxt does not parse as a ModelConfig (line:column)
TP103       error     ``name`` differs from the directory name (warning when empty)
TP104       error     no numeric version directory
TP105       error     a version directory without model.py (python backend)
TP106       error     model.py is not valid Python
TP107       error     model.py does not define TritonPythonModel
TP108       error     neither backend nor platform set, but model.py present
TP109       both      importing model.py fails (in its own environment when it has
                      one; warning for a package missing from the tool's Python)
TP110       warning   the repository has no model directory
==========  ========  ==============================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Optional

from .._tooling.model_dirs import CONFIG_FILE
from .._tooling.releases import TritonRelease
from ..config import defines_triton_python_model
from ..envs import find_default_spec
from ._context import ModelEntry, Repository, error
from ._envimport import import_failure, import_fix
from ._report import ERROR, WARNING, Finding


def check_layout(repo: Repository) -> Iterator[Finding]:
    """Yield the layout findings of every model directory."""
    if not repo.models:
        yield Finding(
            "TP110",
            WARNING,
            ".",
            "",
            "the repository has no model directory",
            "put each model in its own directory: REPO/<model>/config.pbtxt and "
            "REPO/<model>/1/model.py",
        )
    for entry in repo:
        yield from _check_model(entry, repo.release)


def _check_model(entry: ModelEntry, release: Optional[TritonRelease]) -> Iterator[Finding]:
    yield from _check_config(entry)
    if entry.config is None:
        return  # missing or unparsable: TP101/TP102 said it
    versions = entry.versions()
    if not versions:
        yield entry.finding(
            "TP104",
            ERROR,
            "",
            f"model {entry.name!r} has no numeric version directory, so Triton loads no "
            f"version of it",
            f"put the model files in {entry.name}/1/",
            file=f"{entry.name}/",
        )
        return
    if entry.is_ensemble:
        return
    config, filename = entry.config, entry.model_filename
    if not config.backend and not config.platform:
        if any((v / filename).is_file() for v in versions):
            yield error(
                entry,
                "TP108",
                "backend",
                "config.pbtxt names neither a backend nor a platform, so Triton cannot tell "
                f"that {filename} is a Python-backend model",
                'add backend: "python"',
            )
        return
    if entry.is_python:
        yield from _check_model_files(entry, versions, release)


def _check_config(entry: ModelEntry) -> Iterator[Finding]:
    """TP101-TP103: config.pbtxt present, parsed and naming the model's directory."""
    if not (entry.path / CONFIG_FILE).is_file():
        yield entry.finding(
            "TP101",
            ERROR,
            "",
            f"model directory {entry.name!r} has no config.pbtxt",
            f'create it with at least name: "{entry.name}" and backend: "python" '
            f"(or run 'tritonpy config {entry.name}' for a tritonpy model)",
            file=f"{entry.name}/",
        )
    elif entry.config is None:
        yield error(
            entry,
            "TP102",
            "",
            entry.config_error or "config.pbtxt cannot be parsed",
            "use the field names and values of Triton's model_config.proto at the reported "
            "line:column",
        )
    elif not entry.config.name:
        yield entry.finding(
            "TP103",
            WARNING,
            "name",
            "config.pbtxt sets no name",
            f'add name: "{entry.name}" (the model directory\'s name)',
        )
    elif entry.config.name != entry.name:
        yield error(
            entry,
            "TP103",
            "name",
            f"name is {entry.config.name!r} but the model directory is {entry.name!r}; Triton "
            f"refuses to load a model whose name differs from its directory",
            f'set name: "{entry.name}" or rename the directory to {entry.config.name!r}',
        )


def _check_model_files(
    entry: ModelEntry, versions: List[Path], release: Optional[TritonRelease]
) -> Iterator[Finding]:
    """TP105-TP107 for each version's model file, then TP109 for importing it."""
    filename = entry.model_filename
    for version in versions:
        model_file = version / filename
        rel = f"{entry.name}/{version.name}/{filename}"
        if not model_file.is_file():
            yield entry.finding(
                "TP105",
                ERROR,
                "",
                f"version {version.name} of python-backend model {entry.name!r} has no {filename}",
                f"add {rel} defining TritonPythonModel, or remove the version directory",
                file=rel,
            )
            continue
        yield from _check_source(entry, model_file.read_text(encoding="utf-8"), rel)
    yield from _check_import(entry, release)


def _check_source(entry: ModelEntry, source: str, rel: str) -> Iterator[Finding]:
    try:
        defined = defines_triton_python_model(source)
    except SyntaxError as exc:
        yield entry.finding(
            "TP106",
            ERROR,
            f"line {exc.lineno}",
            f"not valid Python: {exc.msg} (line {exc.lineno}, column {exc.offset})",
            "fix the syntax error; the Python backend cannot import the file",
            file=rel,
        )
        return
    if not defined:
        yield entry.finding(
            "TP107",
            ERROR,
            "TritonPythonModel",
            "defines no TritonPythonModel, the class the Python backend instantiates",
            "define class TritonPythonModel, or bind your class: TritonPythonModel = MyModel",
            file=rel,
        )


def _check_import(entry: ModelEntry, release: Optional[TritonRelease]) -> Iterator[Finding]:
    rel = f"{entry.name}/{exc_path(entry)}"
    found, place = entry.env_import, entry.environment
    if entry.environment_error:
        yield entry.finding(
            "TP109",
            ERROR,
            "",
            f"the environment its spec declares cannot be used: {entry.environment_error}",
            "fix the spec (REPO/<model>/requirements.txt or environment.yml) and check again",
            file=rel,
        )
    if found is not None and place is not None:
        if not found.ok:
            yield entry.finding(
                "TP109",
                ERROR,
                "",
                import_failure(place, found),
                import_fix(entry.name, place, found, release),
                file=rel,
            )
        return
    if place is not None and entry.environment_note:
        yield entry.finding(
            "TP109",
            WARNING,
            "",
            f"its environment {place.label} cannot run here ({entry.environment_note}); "
            "model.py was imported in the tool's Python instead",
            "check it on a machine like the server's",
            file=rel,
        )
    exc = entry.load_error
    if exc is None:
        return
    cause = exc.cause
    if isinstance(cause, SyntaxError):
        return  # TP106 already says it
    missing = isinstance(cause, ImportError)
    fix = (
        "install the package where you run 'tritonpy check' (it may only exist in the "
        "model's EXECUTION_ENV_PATH environment)"
    )
    if missing and find_default_spec(entry.path) is not None:
        fix += (
            "; or import it in the environment its spec declares: 'tritonpy check REPO "
            "--triton-version YY.MM --build-envs'"
        )
    yield entry.finding(
        "TP109",
        WARNING if missing else ERROR,
        "",
        f"importing it failed: {type(cause).__name__}: {cause}"
        + ("; the declarations could not be checked" if missing else ""),
        fix
        if missing
        else "fix the error raised at import time; Triton would fail to load the model",
        file=rel,
    )


def exc_path(entry: ModelEntry) -> str:
    """``<version>/<model file>`` of the version the checker imports."""
    for version in entry.versions():
        if (version / entry.model_filename).is_file():
            return f"{version.name}/{entry.model_filename}"
    return f"1/{entry.model_filename}"
