"""The hooks of newer Triton releases, as a tp.Model declares them.

- ``ready(self) -> bool`` (sync or ``async``): the model's readiness. A class that defines it
  gets ``is_ready``, which the Python backend calls from release 26.03 on when asked for the
  model's readiness (python_backend r26.03 src/pb_stub.cc: ``False``, an exception or a
  non-bool make the model not ready; 5 s at most). Older releases never call it: the model's
  readiness is then the stub's alone. A class without ``ready`` has no ``is_ready``, so the
  server answers readiness without calling into the stub (its fast path).
- ``response_parameters = True``: ``infer`` returns ``tp.Response(..., parameters=...)``; the
  Python backend takes response parameters from release 25.02 on (r25.02 src/pb_stub.cc), so
  ``initialize`` refuses to load on an older one, naming it, instead of failing requests.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import DeclarationError

#: where each hook comes from, for messages
READY_SOURCE = "python_backend r26.03 src/pb_stub.cc"
PARAMETERS_SOURCE = "python_backend r25.02 src/pb_stub.cc"


def defines_ready(cls: type, base_ready: Callable[..., Any]) -> bool:
    """Whether ``cls`` (a tp.Model subclass) overrides the base class's ``ready``."""
    return getattr(cls, "ready", base_ready) is not base_ready


def is_ready_hook(model: Any) -> Any:
    """``TritonPythonModel.is_ready``: the model's ``ready()``, a bool for the server (a
    coroutine for an ``async def ready``, which the stub runs; its result checked the same)."""
    result = model.ready()
    if inspect.isawaitable(result):
        return _checked(model, result)
    return _as_bool(model, result)


async def _checked(model: Any, awaitable: Any) -> bool:
    return _as_bool(model, await awaitable)


def _as_bool(model: Any, result: Any) -> bool:
    if isinstance(result, bool):
        return result
    raise DeclarationError(
        f"{type(model).__name__}.ready() returned {result!r} ({type(result).__name__}): "
        f"Triton needs True or False (anything else makes the model not ready, "
        f"{READY_SOURCE}); return bool(...)"
    )


def release_of(pb: Any) -> str:
    """`` (release YY.MM)`` when the pb_utils in use says which release it is (the test
    harness's fake says; the real module does not), else ``""``."""
    tell = getattr(pb, "tritonpy_release", None)
    return f" (release {tell()})" if callable(tell) else ""


def check_response_parameters(model: Any, pb: Any) -> None:
    """Refuse to load a model declaring ``response_parameters = True`` where pb_utils has
    none (releases before 25.02)."""
    if not getattr(model, "response_parameters", False):
        return
    if hasattr(pb.InferenceResponse, "parameters"):
        return
    raise DeclarationError(
        f"{type(model).__name__} declares response_parameters = True, but this Triton's "
        f"Python backend{release_of(pb)} has no response parameters "
        f"(pb_utils.InferenceResponse(parameters=...) arrived in release 25.02, "
        f"{PARAMETERS_SOURCE}): serve it on 25.02 or later, or drop the declaration and "
        f"carry the values in an output"
    )
