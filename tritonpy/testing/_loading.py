"""Finding and importing a model directory's ``model.py`` the way Triton's stub does.

The stub (pb_stub.cc, ``StubSetup``, r24.10) appends the version directory and the model
directory to ``sys.path`` and imports the file as ``<version>.model``: a module of the
namespace package named after the version directory. So ``model.py`` may import a sibling both
absolutely (``import helpers``) and relatively (``from .helpers import f``). The harness gives
every loaded model its own package name, so that two models (or two harnesses on one model)
never share their sibling modules in ``sys.modules``.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import importlib.util
import itertools
import os
import sys
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, ContextManager, Iterator, List, Optional, Sequence

from .._tooling.errors import ModelLoadError

_package_counter = itertools.count()


def version_dirs(model_dir: Path) -> List[Path]:
    """The numeric version directories of a model directory, highest version first (none
    when the directory does not exist)."""
    if not model_dir.is_dir():
        return []
    found = [p for p in model_dir.iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(found, key=lambda p: int(p.name), reverse=True)


def pick_version(model_dir: Path, version: Optional[int], filename: str) -> int:
    """The version to load: ``version`` if given (it must have ``filename``), else the highest
    numbered directory that has it (the one Triton's default version policy loads)."""
    if version is not None:
        expected = model_dir / str(version) / filename
        if not expected.is_file():
            raise ModelLoadError(
                f"model directory {model_dir}: version {version} has no {filename} "
                f"(expected {expected})"
            )
        return int(version)
    for directory in version_dirs(model_dir):
        if (directory / filename).is_file():
            return int(directory.name)
    raise ModelLoadError(
        f"model directory {model_dir} has no version directory with {filename} "
        f"(expected {model_dir / '1' / filename})"
    )


@contextmanager
def on_sys_path(entries: Sequence[str]) -> Iterator[None]:
    """``entries`` put first on ``sys.path`` (those not there yet), removed afterwards."""
    added = [entry for entry in entries if entry not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for entry in added:
            with suppress(ValueError):
                sys.path.remove(entry)


def import_model_file(model_file: Path, running: Callable[[], ContextManager[None]]) -> ModuleType:
    """Import ``model_file`` as a module of a package over its directory (``running()`` is
    entered while its top-level code runs). On failure nothing stays in ``sys.modules``."""
    safe = "".join(c if c.isalnum() else "_" for c in model_file.parent.parent.name)
    package_name = f"_tritonpy_model_{safe}_{next(_package_counter)}"
    package = ModuleType(package_name)
    package.__path__ = [str(model_file.parent)]
    package.__package__ = package_name
    module_name = f"{package_name}.{model_file.stem}"
    spec = importlib.util.spec_from_file_location(module_name, model_file)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"cannot import {model_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[package_name] = package
    sys.modules[module_name] = module
    try:
        with running():
            spec.loader.exec_module(module)
    except BaseException:
        unload_package(package_name)
        raise
    return module


def unload_package(package_name: str) -> None:
    """Drop a model's package and its submodules from ``sys.modules``."""
    prefix = package_name + "."
    doomed: List[str] = [n for n in sys.modules if n == package_name or n.startswith(prefix)]
    for name in doomed:
        sys.modules.pop(name, None)


def target_version(target: Any) -> Optional[int]:
    """The version a BLS target serves: a harness's own, 1 for a class, the highest of a model
    directory; None for a callable (it answers any version)."""
    version = getattr(target, "version", None)
    if isinstance(version, int) and not isinstance(target, type):
        return version  # a ModelHarness
    if isinstance(target, type):
        return 1
    if isinstance(target, (str, os.PathLike)):
        with suppress(OSError, ModelLoadError):
            return pick_version(Path(os.fspath(target)), None, "model.py")
    return None
