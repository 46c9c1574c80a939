"""A model's load failure in a few lines: the exception, the user's own frames, the fix.

Triton reports a ``model.py`` that fails to load with the stub's exception and a pybind11
traceback, innermost frame first, importlib's and tritonpy's frames included::

    Internal: ModuleNotFoundError: No module named 'scipy_not_there'

    At:
      /repo/broken/1/model.py(2): <module>
      <frozen importlib._bootstrap>(241): _call_with_frames_removed

:func:`describe_load_failure` keeps what a user acts on: the exception, the frames in their
own files (outermost first, as Python prints them) and a fix line for the failures tritonpy
recognises (a missing package: which environment lacks it and the command that adds it).

Example::

    failure = describe_load_failure("broken", text, repository=Path("repo"), python="python3")
    print("\\n".join(failure.lines()))
    # model 'broken' failed to load: ModuleNotFoundError: No module named 'scipy_not_there'
    #   File "/repo/broken/1/model.py", line 2, in <module>
    #   fix: the serving interpreter python3 has no module 'scipy_not_there': ...
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ._logs import failure_hint

# "load failed for model 'm': version 1 is at UNAVAILABLE state: Internal: ..." (repository
# API), "Internal: ..." (the log), then the exception
_API_PREFIX = re.compile(r"^load failed for model '[^']+': version \d+ is at \w+ state: ")
_STATUS_PREFIX = re.compile(r"^(Internal|Invalid argument|Unavailable|Not found|Unknown): ")
_FRAME = re.compile(r"^\s+(?P<file>.+?)\((?P<line>\d+)\): (?P<function>.+?)\s*$")
_SYNTAX_AT = re.compile(r"\((?P<file>[^(),]+), line (?P<line>\d+)\)\s*$")
_NO_MODULE = re.compile(r"^ModuleNotFoundError: No module named '(?P<module>[^']+)'")
_TRITONPY_FRAME = re.compile(r"[/\\]tritonpy[/\\]")  # its package, installed or checked out
_MAX_FRAMES = 6


@dataclass(frozen=True)
class Frame:
    """One frame of the user's code: ``file``, ``line``, ``function``."""

    file: str
    line: int
    function: str

    def render(self) -> str:
        return f'File "{self.file}", line {self.line}, in {self.function}'


@dataclass(frozen=True)
class LoadFailure:
    """Why ``model`` failed to load, short: ``exception`` (``NameError: name 'x' is not
    defined``), ``frames`` in the user's files (outermost first), ``fix`` (``""`` when
    tritonpy knows none), and the full ``text`` Triton gave."""

    model: str
    exception: str
    frames: Tuple[Frame, ...] = ()
    fix: str = ""
    text: str = ""

    @property
    def where(self) -> Optional[Frame]:
        """The innermost frame of the user's code, where the exception was raised."""
        return self.frames[-1] if self.frames else None

    def lines(self, *, headline: Optional[str] = None) -> List[str]:
        """The failure as console lines: the headline (default ``model 'm' failed to load:
        <exception>``), the frames, the fix."""
        first = headline or f"model {self.model!r} failed to load"
        out = [f"{first}: {self.exception}"]
        out += [f"  {frame.render()}" for frame in self.frames]
        if self.fix:
            out.append(f"  fix: {self.fix}")
        return out


def _split(text: str) -> Tuple[str, List[str]]:
    """The exception line(s) and the frame lines of Triton's text."""
    body = _STATUS_PREFIX.sub("", _API_PREFIX.sub("", text.strip()))
    head, _, frames = body.partition("\nAt:\n")
    head = head.strip().rstrip(";").strip()
    return head, [ln for ln in frames.splitlines() if ln.strip() and ln.strip() != ";"]


def user_frames(frame_lines: Sequence[str], repository: Optional[Path] = None) -> List[Frame]:
    """The frames of pybind11's ``At:`` list (innermost first) that are the user's code,
    outermost first: no ``<frozen importlib...>``, tritonpy or ``triton_python_backend_utils``
    frames (a file under ``repository`` is always the user's). At most the innermost six.

    >>> user_frames(["  /r/m/1/model.py(4): helper", "  <frozen importlib._bootstrap>(241): f"])
    [Frame(file='/r/m/1/model.py', line=4, function='helper')]
    """
    frames: List[Frame] = []
    for raw in frame_lines:
        match = _FRAME.match(raw)
        if match is None:
            continue
        file = match["file"]
        ours = file.startswith("<") or _TRITONPY_FRAME.search(file) or "triton_python_back" in file
        if ours and not (repository is not None and file.startswith(f"{repository}{os.sep}")):
            continue
        frames.append(Frame(file, int(match["line"]), match["function"]))
    return list(reversed(frames[:_MAX_FRAMES]))


def _syntax_frame(model_dir: Path, exception: str) -> Optional[Frame]:
    """``SyntaxError: expected ':' (model.py, line 5)`` names the file without its folder."""
    match = _SYNTAX_AT.search(exception)
    if match is None:
        return None
    found = sorted(model_dir.glob(f"*/{match['file']}"))
    file = str(found[0]) if len(found) == 1 else str(model_dir / "<version>" / match["file"])
    return Frame(file, int(match["line"]), "<module>")


def missing_module_fix(
    module: str, model_dir: Path, *, python: Optional[str], env_path: Optional[str]
) -> str:
    """Which environment lacks ``module`` and the command that adds it.

    >>> missing_module_fix("yaml", Path("repo/m"), python="/venv/bin/python", env_path=None)[:60]
    "the serving interpreter /venv/bin/python has no module 'yaml'"
    """
    from ..envs import missing_module_hint

    package = missing_module_hint(module)
    pack = f"tritonpy pack-env {model_dir}"
    if env_path is not None:
        return (
            f"the model's environment (EXECUTION_ENV_PATH {env_path}) has no module "
            f"{module!r}: add {package} to {model_dir / 'requirements.txt'} and rebuild the "
            f"environment with `{pack}`"
        )
    interpreter = python or "python"
    return (
        f"the serving interpreter {interpreter} has no module {module!r}: install it there "
        f"(`{interpreter} -m pip install {package}`), or give the model its own environment "
        f"(add {package} to {model_dir / 'requirements.txt'}, then `{pack}`)"
    )


def describe_load_failure(
    model: str,
    text: str,
    *,
    repository: Path,
    python: Optional[str] = None,
) -> LoadFailure:
    """Turn Triton's failure text for ``model`` (a ``failed to load`` log message or the
    repository API's error) into a :class:`LoadFailure`; ``python`` is the serving
    interpreter (named in the fix for a missing package).

    Example::

        describe_load_failure("m", "Internal: SyntaxError: expected ':' (model.py, line 2)",
                              repository=Path("repo")).where.line     # 2
    """
    from ._shadow import _read_env_parameter

    head, frame_lines = _split(text)
    model_dir = repository / model
    frames = user_frames(frame_lines, repository.absolute())
    exception = head.splitlines()[0] if head else text.strip().splitlines()[0]
    if not frames:
        syntax = _syntax_frame(model_dir, exception)
        frames = [syntax] if syntax else []
    fix = failure_hint(model, text)
    missing = _NO_MODULE.match(exception)
    if missing and not fix:
        env_path = _read_env_parameter(model_dir / "config.pbtxt")
        fix = missing_module_fix(missing["module"], model_dir, python=python, env_path=env_path)
    return LoadFailure(model, exception, tuple(frames), fix, text)
