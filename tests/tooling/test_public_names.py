"""Public classes and functions name their public module (``tp.InputError.__module__ ==
"tritonpy"``, tritonpy/_runtime/_public_names.py): tracebacks read ``tritonpy.InputError``,
and what reads ``__module__`` (pickle, ``repr``, ``typing.get_type_hints``, documentation
tools) finds the object where users import it."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import traceback
import typing
from typing import Any, Dict, List, Tuple

import pytest
from test_public_api import PINNED

import tritonpy as tp
import tritonpy.testing


def _exported() -> List[Tuple[str, str, Any]]:
    found = []
    for module_name in sorted(PINNED):
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                found.append((module_name, name, value))
    return found


EXPORTED = _exported()


def test_there_are_names_to_check() -> None:
    assert len(EXPORTED) > 150
    assert (tp.Model.__module__, tp.InputError.__module__) == ("tritonpy", "tritonpy")
    assert tritonpy.testing.ModelHarness.__module__ == "tritonpy.testing"


@pytest.mark.parametrize(("module_name", "name", "value"), EXPORTED, ids=lambda v: str(v)[:40])
def test_every_public_name_reports_a_public_module_that_exports_it(
    module_name: str, name: str, value: Any
) -> None:
    home = value.__module__
    assert home in PINNED, f"{module_name}.{name} reports the private module {home}"
    assert getattr(importlib.import_module(home), value.__qualname__) is value
    # one object in two public modules has one home: where it is written, or the one named
    if (module_name, name) == ("tritonpy.server", "ModelLoadError"):
        assert home == "tritonpy.testing"


def test_errors_read_with_their_public_class() -> None:
    error = tp.InputError("input 'X': expected FP32", input_name="X")
    assert traceback.format_exception_only(type(error), error) == [
        "tritonpy.InputError: input 'X': expected FP32\n"
    ]
    assert repr(tp.Model) == "<class 'tritonpy.Model'>"
    assert repr(tritonpy.testing.ModelHarness) == "<class 'tritonpy.testing.ModelHarness'>"


@pytest.mark.parametrize(
    "error",
    [
        tp.InputError("input 'X': expected FP32", input_name="X"),
        tp.TritonRequestError("INVALID_ARG", "input 'X': expected FP32"),
        tp.TritonRequestError("INTERNAL", "not healthy", model="b"),
    ],
    ids=repr,
)
def test_errors_pickle_under_their_public_class(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error)
    assert vars(copy) == vars(error)
    assert pickle.loads(pickle.dumps(type(error))) is type(error)


def _defining_globals(cls: type) -> Dict[str, Any]:
    """The namespace of the module that wrote ``cls`` (its methods keep it), where
    ``typing.get_type_hints`` looked names up before ``__module__`` moved."""
    for value in vars(cls).values():
        function = getattr(value, "__func__", getattr(value, "fget", value))
        if inspect.isfunction(function) and function.__qualname__.startswith(cls.__qualname__):
            return function.__globals__
    return vars(importlib.import_module(cls.__module__))


def _fails(annotation: Any, namespace: Dict[str, Any]) -> bool:
    if not isinstance(annotation, str):
        return False
    try:
        eval(annotation, dict(namespace))
    except NameError:
        return True
    return False


CLASSES = [entry for entry in EXPORTED if inspect.isclass(entry[2])]


@pytest.mark.parametrize(("module_name", "name", "value"), CLASSES, ids=lambda v: str(v)[:40])
def test_type_hints_resolve_after_the_move(module_name: str, name: str, value: type) -> None:
    defining = _defining_globals(value)
    try:
        typing.get_type_hints(value)
    except NameError as exc:
        # allowed only where an annotation names what the defining module imports under
        # TYPE_CHECKING: get_type_hints failed before the move as after it
        own = vars(value).get("__annotations__", {})
        unresolvable = [text for text in own.values() if _fails(text, defining)]
        assert unresolvable, f"{name}: {exc}"
        return
    if defining["__name__"] != value.__module__ and dataclasses.is_dataclass(value):
        # a moved dataclass's fields name objects, not text, for tools that read
        # dataclasses.fields (the CLI generator evaluates text in cls.__module__)
        for field in dataclasses.fields(value):
            assert not isinstance(field.type, str), (name, field.name, field.type)


def test_published_dataclass_fields_are_objects() -> None:
    from tritonpy.check import Finding

    assert Finding.__module__ == "tritonpy.check"
    assert all(not isinstance(field.type, str) for field in dataclasses.fields(Finding))
