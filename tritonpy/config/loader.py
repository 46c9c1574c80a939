"""Load the ``TritonPythonModel`` class of a model directory without a server.

``model.py`` is imported under a unique module name with the fake pb_utils installed; nothing
else of the model runs (no ``auto_complete_config``, no ``initialize``).

Example::

    from tritonpy.config.loader import load_model_class

    loaded = load_model_class("model_repository/preprocess")
    loaded.is_tritonpy, loaded.cls.max_batch_size      # (True, 32)
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import List, Optional

from .._tooling.pbtxt import ConfigError, PathLike

__all__ = [
    "LoadedModel",
    "ModelImportError",
    "defines_triton_python_model",
    "find_model_file",
    "load_model_class",
    "version_dirs",
]

ENTRY_POINT = "TritonPythonModel"
_counter = itertools.count()


class ModelImportError(ConfigError):
    """``model.py`` could not be imported (``cause`` holds the original exception)."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass(frozen=True)
class LoadedModel:
    """What importing ``model.py`` gave: its file, module and ``TritonPythonModel`` (``cls`` is
    None when the module does not define it)."""

    model_file: Path
    module: ModuleType
    cls: Optional[type]

    @property
    def is_tritonpy(self) -> bool:
        """True when ``TritonPythonModel`` is a :class:`tritonpy.Model` subclass."""
        from .._runtime.model import Model

        return isinstance(self.cls, type) and issubclass(self.cls, Model)


def version_dirs(model_dir: PathLike) -> List[Path]:
    """The numeric version directories of a model directory, highest version first."""
    root = Path(model_dir)
    found = [p for p in root.iterdir() if p.is_dir() and p.name.isdigit()]
    return sorted(found, key=lambda p: int(p.name), reverse=True)


def find_model_file(
    model_dir: PathLike, *, version: Optional[int] = None, filename: str = "model.py"
) -> Path:
    """``<model_dir>/<version>/<filename>``; without ``version``, the highest version that
    has the file (the one Triton's default version policy loads).

    >>> find_model_file("model_repository/preprocess")           # doctest: +SKIP
    PosixPath('model_repository/preprocess/1/model.py')
    """
    root = Path(model_dir)
    if version is not None:
        path = root / str(version) / filename
        if not path.is_file():
            raise ConfigError(f"{root}: version {version} has no {filename} (expected {path})")
        return path
    if root.is_dir():
        for directory in version_dirs(root):
            if (directory / filename).is_file():
                return directory / filename
    raise ConfigError(
        f"{root}: no version directory with {filename}; expected {root / '1' / filename}"
    )


def defines_triton_python_model(source: str) -> bool:
    """True when the module source binds ``TritonPythonModel`` at module level (a class, an
    assignment or an import, also under ``if``/``try``), read from the syntax tree without
    running it. Raises SyntaxError for invalid source.

    >>> defines_triton_python_model("class Mine: ...\nTritonPythonModel = Mine")
    True
    """
    pending: List[ast.AST] = [ast.parse(source)]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.ClassDef) and node.name == ENTRY_POINT:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (alias.asname or alias.name) == ENTRY_POINT for alias in node.names
        ):
            return True
        named = isinstance(node, ast.Name) and node.id == ENTRY_POINT
        if named and isinstance(node.ctx, ast.Store):  # type: ignore[attr-defined]
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def load_model_class(
    model_dir: PathLike, *, version: Optional[int] = None, filename: str = "model.py"
) -> LoadedModel:
    """Import ``model.py`` of a model directory (fake pb_utils installed, the version
    directory on ``sys.path`` while it imports) and return its ``TritonPythonModel``.

    Raises :class:`ModelImportError` when importing fails (the message names the file and
    the exception), :class:`ConfigError` when there is no model file.

    Example::

        loaded = load_model_class("model_repository/double")
        if loaded.is_tritonpy:
            print(loaded.cls.declared_config())
    """
    from ..testing.harness import fake_pb_utils_installed

    model_file = find_model_file(model_dir, version=version, filename=filename)
    name = f"_tritonpy_config_{Path(model_dir).name}_{next(_counter)}".replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, model_file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {model_file}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    entry = str(model_file.parent)
    with fake_pb_utils_installed():
        sys.modules[name] = module
        sys.path.insert(0, entry)
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise ModelImportError(
                f"{model_file}: importing it failed: {type(exc).__name__}: {exc}", exc
            ) from exc
        finally:
            sys.modules.pop(name, None)
            if entry in sys.path:
                sys.path.remove(entry)
    cls = getattr(module, ENTRY_POINT, None)
    return LoadedModel(model_file, module, cls if isinstance(cls, type) else None)
