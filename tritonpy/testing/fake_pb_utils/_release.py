"""Which Triton release's pb_utils surface the fake offers, and the errors a release's stub
raises for an API it lacks.

The fake is one module object, shared by every harness. The release it shows is the one of
the harness whose model code runs now (``release_running``), else the newest harness still
open (a decoupled model's own threads send after ``execute`` returned), else
:data:`DEFAULT_RELEASE`, the bundled server's. APIs that only some releases have are
:class:`ReleaseMethod` descriptors: on a release without them the attribute does not exist
(``hasattr`` is False, a call is the stub's AttributeError), as in that release's stub.

What each API is and where it comes from (python_backend sources):

- ``InferenceResponse(parameters=...)`` and ``InferenceResponse.parameters()``: r25.02
  ``src/pb_stub.cc`` (a dict or None; keys str, values bool/int/str; ``parameters()`` is its
  JSON text, ``"{}"`` without parameters); r24.10 refuses the argument with pybind11's
  TypeError (measured on the 24.10 server, text below).
- ``ResponseIterator.cancel()``: r25.04 ``src/pb_stub.cc``, ``src/pb_response_iterator.cc``
  (no effect once the iterator is finished, else the callee's request is cancelled).
- ``TritonPythonModel.is_ready()``: r26.03 ``src/pb_stub.cc``, ``src/python_be.cc`` (see
  :mod:`tritonpy.testing._release`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional, Sequence

from ..._tooling.release_facts import ReleaseFacts, facts_for

#: the release of the server bundled with tritonpy (nvidia-pytriton's tritonserver 2.51)
DEFAULT_RELEASE = "24.10"
#: the name the stub's C++ module has, as its objects and errors show it
STUB_MODULE = "c_python_backend_utils"

_lock = threading.Lock()
_running: List[ReleaseFacts] = []
_open: List[ReleaseFacts] = []
_default = facts_for(DEFAULT_RELEASE)


def current() -> ReleaseFacts:
    """The facts of the release the fake shows now."""
    with _lock:
        if _running:
            return _running[-1]
        return _open[-1] if _open else _default


def has_api(name: str) -> bool:
    return current().has_api(name)


@contextmanager
def release_running(facts: ReleaseFacts) -> Iterator[None]:
    """While a harness's model code runs: the fake shows ``facts.release``."""
    with _lock:
        _running.append(facts)
    try:
        yield
    finally:
        with _lock:
            _running.remove(facts)


def release_opened(facts: ReleaseFacts) -> None:
    """A harness for ``facts.release`` was opened (undo with :func:`release_closed`)."""
    with _lock:
        _open.append(facts)


def release_closed(facts: ReleaseFacts) -> None:
    with _lock:
        if facts in _open:
            # the newest entry equal to it: harnesses of one release are interchangeable
            del _open[len(_open) - 1 - _open[::-1].index(facts)]


def missing_attribute(class_name: str, attribute: str) -> AttributeError:
    """The stub's AttributeError for a method its release does not have (measured, 24.10)."""
    return AttributeError(f"'{STUB_MODULE}.{class_name}' object has no attribute '{attribute}'")


class ReleaseMethod:
    """A method that exists from the release whose facts list ``api`` on.

    Example::

        class InferenceResponse:
            parameters = ReleaseMethod(API_RESPONSE_PARAMETERS, _parameters)
    """

    def __init__(self, api: str, function: Callable[..., Any]) -> None:
        self.api = api
        self.function = function
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if not has_api(self.api):
            raise missing_attribute(owner.__name__ if owner else "?", self.name)
        if instance is None:
            return self.function
        return self.function.__get__(instance, owner)


def _pybind_repr(value: Any) -> str:
    """A value as pybind11 shows it in "Invoked with": stub objects by type and address."""
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_pybind_repr(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    module = type(value).__module__
    if module.startswith("tritonpy.testing.fake_pb_utils"):
        return f"<{STUB_MODULE}.{type(value).__name__} object at {hex(id(value))}>"
    return repr(value)


def constructor_refused(
    class_name: str, signature: str, args: Sequence[Any], kwargs: Sequence[Any]
) -> TypeError:
    """pybind11's TypeError for constructor arguments the release's binding lacks (24.10's
    ``InferenceResponse(parameters=...)``, measured: the same text, object addresses aside).
    ``kwargs`` is a sequence of (name, value) pairs."""
    invoked = [_pybind_repr(a) for a in args]
    shown = ", ".join(invoked)
    if kwargs:
        named = ", ".join(f"{k}={_pybind_repr(v)}" for k, v in kwargs)
        shown = f"{shown}; kwargs: {named}" if shown else f"kwargs: {named}"
    return TypeError(
        "__init__(): incompatible constructor arguments. The following argument types are "
        f"supported:\n    1. {STUB_MODULE}.{class_name}({signature})\n\nInvoked with: {shown}"
    )
