"""How the stub's pybind11 binding takes ``pb_utils.InferenceRequest``'s arguments and request
or response ``parameters`` (python_backend r24.10 src/pb_stub.cc), for the fake's
constructors: which calls the binding refuses (pybind11's TypeError, its text as measured on
24.10), bytes taken as str, and the parameter checks with the stub's messages."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
from typing import Any, Dict, Optional, Sequence, Union

from ._errors import TritonModelException
from ._release import STUB_MODULE, constructor_refused
from ._tensor import Tensor

#: the 24.10 binding's constructor, as pybind11 shows it (measured; object addresses aside)
_REQUEST_SIGNATURE_24_10 = (
    "request_id: str = '', correlation_id: object = 0, inputs: "
    "List[triton::backend::python::PbTensor], requested_output_names: List[str], "
    "model_name: str, model_version: int = -1, flags: int = 0, timeout: int = 0, "
    f"preferred_memory: {STUB_MODULE}.PreferredMemory = "
    f"<{STUB_MODULE}.PreferredMemory object at {{memory}}>, trace: "
    f"{STUB_MODULE}.InferenceTrace = <{STUB_MODULE}.InferenceTrace object at {{trace}}>, "
    "parameters: object = None"
)
#: stand-ins for the binding's default objects, whose addresses its signature shows
_DEFAULT_MEMORY, _DEFAULT_TRACE = object(), object()
_REQUEST_ARGS = (
    "request_id", "correlation_id", "inputs", "requested_output_names", "model_name",
    "model_version", "flags", "timeout", "preferred_memory", "trace", "parameters",
)  # fmt: skip
_REQUIRED = ("inputs", "requested_output_names", "model_name")


def _text(value: Any) -> Optional[str]:
    """A str argument as pybind11 converts it to std::string (bytes too); None if not."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return None


def request_refused(args: Sequence[Any], kwargs: Dict[str, Any]) -> TypeError:
    """pybind11's TypeError for an ``InferenceRequest(*args, **kwargs)`` the binding refuses."""
    signature = _REQUEST_SIGNATURE_24_10.format(
        memory=hex(id(_DEFAULT_MEMORY)), trace=hex(id(_DEFAULT_TRACE))
    )
    return constructor_refused("InferenceRequest", signature, args, list(kwargs.items()))


def _sequence(value: Any) -> bool:
    """Whether pybind11 converts ``value`` to a std::vector: a Python sequence (a list, a
    tuple; not a set, a dict, a str or bytes)."""
    if isinstance(value, (str, bytes, dict)):
        return False
    return hasattr(value, "__getitem__") and hasattr(value, "__len__")


def _integers(named: Dict[str, Any]) -> bool:
    return all(isinstance(named.get(n, 0), int) for n in ("model_version", "flags", "timeout"))


def request_arguments(args: Sequence[Any], kwargs: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The constructor's arguments by name, None where the binding's overload does not take
    them (a missing model name, inputs or output names, a None or a wrongly typed one).
    A correlation id neither int nor str passes here and is refused by the constructor."""
    if len(args) > len(_REQUEST_ARGS) or set(kwargs) - set(_REQUEST_ARGS):
        return None
    named = dict(zip(_REQUEST_ARGS, args))
    if set(named) & set(kwargs):
        return None
    named.update(kwargs)
    if any(named.get(name) is None for name in _REQUIRED):
        return None
    if any(named.get(n, 0) is None for n in _REQUEST_ARGS[:-1]):
        return None  # py::arg(...).none(false): only ``parameters`` takes None
    names, inputs = named["requested_output_names"], named["inputs"]
    if not (_sequence(names) and _sequence(inputs) and _integers(named)):
        return None
    if not all(isinstance(t, Tensor) for t in inputs):
        return None
    texts = [_text(n) for n in names]
    if _text(named["model_name"]) is None or _text(named.get("request_id", "")) is None:
        return None
    if any(t is None for t in texts):
        return None
    return _named_texts(named, texts)


def _named_texts(named: Dict[str, Any], output_names: Sequence[Any]) -> Dict[str, Any]:
    """``named`` with its model name, request id and output names as str (bytes decoded)."""
    out = dict(named, requested_output_names=[_text(n) or "" for n in output_names])
    for key in ("model_name", "request_id"):
        if key in out:
            out[key] = _text(out[key]) or ""
    return out


def lenient_arguments(args: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments of a request built outside model code (a test handing ``execute`` a
    request, as the server would build it): missing ones take empty defaults."""
    named = dict(zip(_REQUEST_ARGS, args), **kwargs)
    for key, empty in (("inputs", []), ("requested_output_names", []), ("model_name", "")):
        if named.get(key) is None:
            named[key] = empty
    return _named_texts(named, list(named["requested_output_names"]))


def dict_parameters(value: Any) -> str:
    """``parameters`` as the stub takes them (src/pb_stub.cc: PyDefaultArgumentToMutableType
    <py::dict>, then the key and value checks; BLS requests in r24.10, responses from
    r25.02): None or a dict of str to bool/int/str, kept as its JSON text."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        # PyDefaultArgumentToMutableType<py::dict>: the C++ type's mangled name, as GCC gives it
        raise TritonModelException(f"Expect N8pybind114dictE, got {type(value)}")
    for key, item in value.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if not isinstance(item, (bool, int, str)):
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(item)}"
            )
    return json.dumps(value)


def request_parameters(parameters: Union[str, Dict[str, Any], None], server_json: bool) -> str:
    """A request's ``parameters`` as JSON text. ``server_json``: the harness (or a test)
    hands the JSON text the server built for a client's request; model code cannot (the stub
    refuses a str). The callee sees the caller's dict (measured, 24.10: QA bls_parameters)."""
    if server_json and isinstance(parameters, str):
        json.loads(parameters)  # must be valid JSON
        return parameters
    return dict_parameters(parameters)
