"""Load the ``TritonPythonModel`` class of a model directory without a server.

``model.py`` is imported the way the harness imports it (the stub's way: a package of its own,
the version and model directories on ``sys.path``) with the fake pb_utils installed; nothing
else of the model runs (no ``auto_complete_config``, no ``initialize``).

Example::

    from tritonpy.config._loader import load_model_class

    loaded = load_model_class("model_repository/preprocess")
    loaded.is_tritonpy, loaded.cls.max_batch_size      # (True, 32)
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Iterator, List, Optional

from .._tooling.errors import ModelLoadError
from .._tooling.pbtxt import ConfigError, PathLike
from ..testing import (
    explain_import,
    fake_pb_utils_installed,
    import_model_file,
    on_sys_path,
    pick_version,
    unload_package,
)
from ..testing import version_dirs as versions_of

ENTRY_POINT = "TritonPythonModel"


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
    return versions_of(Path(model_dir))


def find_model_file(
    model_dir: PathLike, *, version: Optional[int] = None, filename: str = "model.py"
) -> Path:
    """``<model_dir>/<version>/<filename>``; without ``version``, the highest version that
    has the file (the one Triton's default version policy loads), as the harness picks it.

    >>> find_model_file("model_repository/preprocess")           # doctest: +SKIP
    PosixPath('model_repository/preprocess/1/model.py')
    """
    root = Path(model_dir)
    try:
        chosen = pick_version(root, version, filename)
    except ModelLoadError as exc:
        raise ConfigError(str(exc)) from None
    return root / str(chosen) / filename


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
    """Import ``model.py`` of a model directory (fake pb_utils installed, the version and
    model directories on ``sys.path`` while it imports) and return its ``TritonPythonModel``.

    Raises :class:`ModelImportError` when importing fails (the message names the file and
    the exception), :class:`ConfigError` when there is no model file.

    Example::

        loaded = load_model_class("model_repository/double")
        if loaded.is_tritonpy:
            print(loaded.cls.declared_config())
    """
    model_file = find_model_file(model_dir, version=version, filename=filename)
    # the stub puts the version directory and the model directory on sys.path
    entries = [str(model_file.parent), str(model_file.parent.parent)]

    @contextmanager
    def importing() -> Iterator[None]:
        with fake_pb_utils_installed(), on_sys_path(entries):
            yield

    try:
        module = import_model_file(model_file, importing)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ModelImportError(
            f"{model_file}: importing it failed: {explain_import(exc, model_file)}", exc
        ) from exc
    # only the class is wanted: the module (and its package) leave sys.modules again
    unload_package(str(module.__package__))
    cls = getattr(module, ENTRY_POINT, None)
    return LoadedModel(model_file, module, cls if isinstance(cls, type) else None)
