"""What tritonserver refuses before a model's code runs, and how a broken ``model.py`` fails.

The real server (r24.10) refuses to load a model, with these messages (measured, and checked
by ``tests/integration/test_load_errors_agree.py`` against the harness):

- a ``backend`` it has no library for (backend_model.cc): ``unable to find backend library for
  backend 'pyhton', try specifying runtime on the model configuration.``;
- an ``EXECUTION_ENV_PATH`` (after ``$$TRITON_MODEL_DIRECTORY`` is replaced by the model
  directory) that names no file (python_be.cc, pb_env.cc):
  ``Failed to get the canonical path for PATH.``;
- a ``model.py`` that does not parse or import: the exception as ``Type: message`` (``SyntaxError:
  expected ':' (model.py, line 5)``, ``ModuleNotFoundError: No module named 'x'``).

Each check raises :class:`tritonpy.testing.ModelLoadError` with the server's text in
``failures`` (keyed by the model's name), the file or field involved and the fix.

Not checked here: tritonserver also refuses a ``config.pbtxt`` whose ``name`` differs from its
directory's (``tritonpy check`` TP103 and ``tritonpy config`` say so); the harness serves such
a model under the configured name, which the templates' member directories rely on.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import difflib
import os
import traceback
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .._tooling.errors import ModelLoadError

#: the placeholder the Python backend replaces by the model directory in EXECUTION_ENV_PATH
MODEL_DIRECTORY_KEYWORD = "$$TRITON_MODEL_DIRECTORY"
#: the only backend the harness runs
PYTHON_BACKEND = "python"


def _refused(model: str, server_text: str, fix: str) -> ModelLoadError:
    return ModelLoadError(
        f"model {model!r} failed to load: {server_text} (what tritonserver says); {fix}",
        failures={model: server_text},
    )


def check_backend(config: Dict[str, Any], model: str) -> None:
    """Refuse a ``backend`` other than ``"python"`` with tritonserver's message (the embedded
    server, like the harness, has the Python backend alone) and a did-you-mean."""
    backend = config.get("backend", "")
    if not isinstance(backend, str) or not backend or backend == PYTHON_BACKEND:
        return
    text = (
        f"unable to find backend library for backend '{backend}', try specifying runtime on "
        f"the model configuration."
    )
    if difflib.get_close_matches(backend.lower(), [PYTHON_BACKEND], n=1, cutoff=0.6):
        fix = f'did you mean backend: "{PYTHON_BACKEND}"? Correct it in config.pbtxt'
    else:
        fix = (
            f'the harness runs Python-backend models only: set backend: "{PYTHON_BACKEND}" in '
            f"config.pbtxt (a {backend!r} model needs a server with that backend)"
        )
    raise _refused(model, text, fix)


def execution_env_path(value: str, model_dir: Path) -> str:
    """``EXECUTION_ENV_PATH`` as the Python backend resolves it: the first
    ``$$TRITON_MODEL_DIRECTORY`` replaced by the model directory. (r24.10 replaces ``index +
    len(keyword)`` characters from the keyword's index, so text right after a keyword that
    does not start the value is eaten too; reproduced as it is.)"""
    index = value.find(MODEL_DIRECTORY_KEYWORD)
    if index < 0:
        return value
    end = index + index + len(MODEL_DIRECTORY_KEYWORD)
    return value[:index] + str(model_dir) + value[end:]


def check_execution_env(config: Dict[str, Any], model_dir: Path, model: str) -> None:
    """Refuse an ``EXECUTION_ENV_PATH`` parameter that names a missing file or directory, with
    the Python backend's message (the harness itself runs in the test's interpreter)."""
    entry = config.get("parameters", {}).get("EXECUTION_ENV_PATH")
    value = entry.get("string_value", "") if isinstance(entry, dict) else ""
    if not value:
        return
    path = execution_env_path(value, model_dir)
    if os.path.exists(path):
        return
    text = f"Failed to get the canonical path for {path}."
    fix = (
        f"parameter EXECUTION_ENV_PATH is {value!r} and there is no such file; build the "
        f"environment archive there (tritonpy pack-env {model_dir} --python X.Y) or correct "
        f"the path ({MODEL_DIRECTORY_KEYWORD} stands for the model directory)"
    )
    raise _refused(model, text, fix)


def check_before_running(config: Dict[str, Any], model_dir: Path) -> None:
    """The checks tritonserver makes on a named configuration before it runs the model's
    code, in its order: the backend, then the execution environment."""
    check_backend(config, config["name"])
    check_execution_env(config, model_dir, config["name"])


def import_failed(exc: BaseException, model_file: Path, model: str) -> ModelLoadError:
    """The :class:`ModelLoadError` for ``model_file`` failing to parse or import with ``exc``
    (raise it ``from exc``): the server's ``Type: message``, the file and line, the fix."""
    text = f"{type(exc).__name__}: {exc}"
    explained = explain_import(exc, model_file)
    message = f"model {model!r} failed to load: importing {model_file} raised {explained}"
    return ModelLoadError(message, failures={model: text})


def explain_import(exc: BaseException, model_file: Path) -> str:
    """``Type: message at FILE, line N; fix`` for ``model_file`` failing to import."""
    where = failure_location(exc, model_file)
    at = f" at {where[0]}, line {where[1]}" if where else ""
    return f"{type(exc).__name__}: {exc}{at}; {import_fix(exc, model_file.parent.parent)}"


def failure_location(exc: BaseException, model_file: Path) -> Optional[Tuple[str, int]]:
    """The file and line an import failure points at: a syntax error's own position, else
    the innermost frame in the model's directory (model.py or a sibling it imports)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return exc.filename, exc.lineno
    model_dir = str(model_file.parent.parent)
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename.startswith(model_dir + os.sep) and frame.lineno
    ]
    if not frames:
        return None
    return frames[-1].filename, int(frames[-1].lineno or 0)


#: the files that give a model its own environment spec (as tritonpy pack-env reads them)
_SPEC_FILES = ("requirements.txt", "environment.yml", "environment.yaml")


def import_fix(exc: BaseException, model_dir: Optional[Path] = None) -> str:
    """How to fix ``exc``, raised importing the model of ``model_dir``."""
    if isinstance(exc, SyntaxError):
        return "fix the syntax at that line (tritonserver refuses the model the same way)"
    spec = (
        next((model_dir / n for n in _SPEC_FILES if (model_dir / n).is_file()), None)
        if (model_dir is not None)
        else None
    )
    if isinstance(exc, ModuleNotFoundError) and spec is not None:
        # the model has an environment of its own, which the test's Python is not
        install = (
            f"run 'pip install -r {spec}' there"
            if spec.suffix == ".txt"
            else f"install the packages {spec} lists there"
        )
        return (
            f"the model has its own environment spec ({spec}), which the server runs it in "
            f"(tritonpy pack-env builds it), and the test's Python lacks {exc.name!r}: "
            f"{install}"
        )
    if isinstance(exc, ModuleNotFoundError):
        return (
            f"install {exc.name!r} where the model runs (the server's Python, or the "
            f"environment EXECUTION_ENV_PATH names: tritonpy pack-env builds it) and in the "
            f"test's Python, or remove the import"
        )
    if isinstance(exc, ImportError):
        return "fix the import at that line: the name it imports does not exist there"
    return "fix the error at that line (the original exception is chained as __cause__)"
