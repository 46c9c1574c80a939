"""Public classes and functions report the public module users import them from.

A public package's ``__init__`` ends with ``publish(__name__, globals())``: each class and
function its ``__all__`` lists that a private module of the package defines then says it lives
in the public module (``tp.InputError.__module__ == "tritonpy"``). Tracebacks read
``tritonpy.InputError: ...``, ``repr`` and documentation tools show the import users write,
and pickle, which finds a class by ``__module__`` and ``__qualname__``, finds it there too.

Annotations written as text (``from __future__ import annotations``) are resolved first, in
the module that wrote them, so that ``typing.get_type_hints`` and ``dataclasses.fields`` still
find their names; one naming what only type checkers import stays text, as before.

Example (the end of a public package's ``__init__``)::

    from .._runtime._public_names import publish as _publish

    __all__ = ["TritonServer", "ServerError"]
    _publish(__name__, globals(), adopt=["ServerError"])  # ServerError: from tritonpy._tooling

Runtime module: stdlib only (``tritonpy`` itself calls it inside Triton's stub).
"""

from __future__ import annotations

import inspect
import sys
import typing
from typing import Any, Collection, Dict, Mapping


def publish(module_name: str, namespace: Mapping[str, Any], adopt: Collection[str] = ()) -> None:
    """Give the classes and functions ``namespace["__all__"]`` lists the ``__module__``
    ``module_name``: those a private module of ``module_name`` defines, and those ``adopt``
    names (defined in a private module shared by several packages; each has one home).

    An object exported under another name than its own keeps its module (pickle looks it up
    by its own name), and so does one defined in a public module.
    """
    for name in namespace["__all__"]:
        found = namespace[name]
        if not (isinstance(found, type) or inspect.isfunction(found)):
            continue
        if found.__qualname__ != name or not _is_private(found.__module__):
            continue
        if name in adopt or found.__module__.startswith(module_name + "."):
            if isinstance(found, type):
                _resolve_annotations(found, sys.modules[found.__module__])
            found.__module__ = module_name


def _is_private(module_name: str) -> bool:
    return any(part.startswith("_") for part in module_name.split("."))


def _resolve_annotations(cls: type, defining: Any) -> None:
    """Text annotations of ``cls`` (and of its dataclass fields) as the objects they name in
    the module ``defining``: what ``typing.get_type_hints`` finds through ``cls.__module__``
    before the move, it finds after it."""
    # the class's own annotations (3.8 and 3.9 have no inspect.get_annotations)
    annotations: Dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    if not any(isinstance(annotation, str) for annotation in annotations.values()):
        return
    try:
        resolved = typing.get_type_hints(cls)  # nested forward references resolved too
    except Exception:
        resolved = {}  # one name only type checkers import: resolve the others one by one
    scope = {**vars(defining), **vars(cls)}
    for attribute, annotation in list(annotations.items()):
        if not isinstance(annotation, str):
            continue
        if attribute in resolved:
            annotations[attribute] = resolved[attribute]
            continue
        try:
            annotations[attribute] = eval(annotation, scope)  # names from our own code only
        except Exception:
            continue  # a name only type checkers import: the annotation stays text
    for field in cls.__dict__.get("__dataclass_fields__", {}).values():
        if isinstance(field.type, str) and field.name in annotations:
            field.type = annotations[field.name]
