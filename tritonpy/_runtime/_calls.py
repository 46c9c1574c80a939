"""Calling other models from ``infer`` (Triton's business-logic scripting, BLS).

:class:`ModelCalls` is a mixin of :class:`tritonpy.Model`: ``self.call(...)``,
``await self.call_async(...)`` and ``self.call_stream(...)`` send one request to another model
of the same server through ``pb_utils.InferenceRequest.exec`` / ``async_exec`` and give back its
outputs as numpy arrays (BYTES as object arrays of ``bytes``, as a client sees them).

How Python values are encoded (pb_utils cannot read another model's configuration):

* a numpy array is sent as it is (a ``U``/``S`` string array becomes BYTES);
* ``str``/``bytes`` and (nested) lists of them become BYTES object arrays;
* numbers, ``bool`` and (nested) lists of them are sent as numpy would type them (int ->
  INT64, float -> FP64, bool -> BOOL) unless this instance has already learned the data type
  of that input of that model. When the server refuses the data type, it names the one it
  expects (``inference input 'X' data-type is 'INT64', but model 'm' expects 'FP32'``): the
  value is re-encoded with that type and the request sent once more; the type is remembered,
  so later calls go through at the first try. Values the expected type cannot hold exactly
  raise :class:`CallError`;
* a scalar becomes a one-element tensor of shape ``[1]``; a list keeps its nesting as shape.

Errors: an error response raises :class:`tritonpy.TritonRequestError` with the code and message
pb_utils gives and ``model`` the target; it reads ``call to model 'NAME' failed: MESSAGE`` (no
code: re-raised from ``infer()``, the caller's response adds its own). Triton 24.10 hands every
BLS error to the caller as ``INTERNAL`` (the target's own code is lost on the way), with the
target's message.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, TypedDict

import numpy as np

from .dtypes import DTYPES, cast_exactly, dtype_of_numpy, preview_values
from .errors import TritonPyError, TritonRequestError

if TYPE_CHECKING:
    from typing_extensions import Unpack

Outputs = Dict[str, Any]


class CallOptions(TypedDict, total=False):
    """The options of :meth:`ModelCalls.call`, which its async and streaming forms take too:
    ``version`` (-1: the one Triton's policy picks), ``outputs`` (the outputs wanted; None:
    all), ``timeout_ms`` (Triton's request timeout; 0: none)."""

    version: int
    outputs: Optional[Sequence[str]]
    timeout_ms: int


_CALL_OPTIONS = ("version", "outputs", "timeout_ms")

#: TRITONSERVER_Error_Code values, for pb_utils modules whose codes have no ``.name``
_CODE_NAMES = (
    "UNKNOWN",
    "INTERNAL",
    "NOT_FOUND",
    "INVALID_ARG",
    "UNAVAILABLE",
    "UNSUPPORTED",
    "ALREADY_EXISTS",
    "CANCELLED",
)
_DTYPE_REFUSED = re.compile(
    r"inference input '(?P<input>[^']*)' data-type is '(?P<got>\w+)', "
    r"but model '(?P<model>[^']*)' expects '(?P<expected>\w+)'"
)


class CallError(TritonPyError):
    """A call to another model could not be made: a value cannot be encoded for the target's
    input. (An error *answered* by the target is a :class:`tritonpy.TritonRequestError`.)"""


def error_code_name(code: Any) -> str:
    """The name of a ``pb_utils.TritonError`` code (``"INVALID_ARG"``...).

    The real module returns a pybind11 enum with ``.name``; a plain int is mapped by value.

    >>> error_code_name(3)
    'INVALID_ARG'
    """
    name = getattr(code, "name", None)
    if isinstance(name, str):
        return name
    try:
        return _CODE_NAMES[int(code)]
    except (TypeError, ValueError, IndexError):
        return "UNKNOWN"


def _is_text(value: Any) -> bool:
    return isinstance(value, (str, bytes))


def _first_leaf(value: Any) -> Any:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return value


def _to_bytes(value: Any, model: str, name: str) -> Any:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, np.bytes_):
        return bytes(value)
    raise CallError(
        f"call to model '{model}', input '{name}': expected str or bytes in a list of text, "
        f"got {type(value).__name__} {value!r}; pass a list of str/bytes only, or a numpy "
        f"array of the target's data type"
    )


def _bytes_array(value: Any, model: str, name: str) -> np.ndarray:  # type: ignore[type-arg]
    """An object array of ``bytes`` with the nesting of ``value`` as shape."""
    if _is_text(value):
        value = [value]
    shaped = np.array(value, dtype=object)
    flat = [_to_bytes(v, model, name) for v in shaped.ravel()]
    out = np.empty(shaped.shape, dtype=object)
    out.ravel()[:] = flat
    return out


class _Encoded:
    """The arrays of one call, and which inputs came as Python numbers (their type is a guess
    until the server says otherwise)."""

    __slots__ = ("arrays", "guessed")

    def __init__(self) -> None:
        self.arrays: Dict[str, np.ndarray] = {}  # type: ignore[type-arg]
        self.guessed: Dict[str, Any] = {}


def _numbers_as(value: Any, wire: str, model: str, name: str) -> np.ndarray:  # type: ignore[type-arg]
    """``value`` (Python numbers) as the numpy dtype of Triton data type ``wire``, exactly."""
    dtype = DTYPES.get(wire)
    source = np.asarray(value)
    if dtype is None or dtype.numpy is None or dtype.is_bytes:
        raise CallError(
            f"call to model '{model}', input '{name}': the model expects {wire}, got Python "
            f"values {preview_values(source)}; pass "
            f"{'str or bytes' if wire == 'BYTES' else 'a numpy array'} for a {wire} input"
        )
    cast = cast_exactly(source, dtype.numpy)
    if cast is None:
        raise CallError(
            f"call to model '{model}', input '{name}': the model expects {wire} "
            f"({dtype.numpy}), got values {preview_values(source)} it cannot hold exactly; pass "
            f"a numpy array of dtype {dtype.numpy} (np.asarray(values, np.{dtype.numpy}))"
        )
    return cast


class _Caller:
    """The calls of one model instance: pb_utils, and the data types learned from the
    server's refusals. Kept by :class:`ModelCalls` in one name-mangled attribute, so that no
    name of the user's class can replace it (``Model.initialize`` binds it, see
    :func:`bind_calls`)."""

    def __init__(self, pb: Any) -> None:
        self.pb = pb
        #: (target model, input) -> Triton data type the server said it expects
        self.learned: Dict[Tuple[str, str], str] = {}

    # -- encoding --------------------------------------------------------------------------
    def encode(self, model: str, inputs: Mapping[str, Any]) -> _Encoded:
        encoded = _Encoded()
        learned = self.learned
        for name, value in inputs.items():
            if isinstance(value, np.ndarray):
                if value.dtype.kind in ("U", "S"):
                    encoded.arrays[name] = _bytes_array(value.tolist(), model, name)
                elif dtype_of_numpy(value.dtype) is None:
                    raise CallError(
                        f"call to model '{model}', input '{name}': numpy dtype {value.dtype} "
                        f"has no Triton data type; pass a numeric, bool or bytes array"
                    )
                else:
                    encoded.arrays[name] = value
                continue
            if _is_text(value) or _is_text(_first_leaf(value)):
                encoded.arrays[name] = _bytes_array(value, model, name)
                continue
            if isinstance(value, np.generic):  # a numpy scalar keeps its dtype
                value = np.asarray(value).reshape(1)
                if value.dtype.kind in ("U", "S"):
                    encoded.arrays[name] = _bytes_array(value.tolist(), model, name)
                else:
                    encoded.arrays[name] = value
                continue
            scalar = not isinstance(value, (list, tuple))
            plain = [value] if scalar else value
            source = np.asarray(plain)
            if source.dtype.kind not in "biuf":
                raise CallError(
                    f"call to model '{model}', input '{name}': cannot encode "
                    f"{type(value).__name__} {value!r}; pass a numpy array, numbers, str, "
                    f"bytes or (nested) lists of them"
                )
            encoded.guessed[name] = plain
            wire = learned.get((model, name))
            encoded.arrays[name] = source if wire is None else _numbers_as(plain, wire, model, name)
        return encoded

    def relearn(self, model: str, encoded: _Encoded, message: str) -> bool:
        """Learn the data type the server asked for; True when the call should be retried."""
        match = _DTYPE_REFUSED.search(message)
        if match is None or match.group("model") != model:
            return False
        name, wire = match.group("input"), match.group("expected")
        if name not in encoded.guessed or self.learned.get((model, name)) == wire:
            return False
        self.learned[(model, name)] = wire
        encoded.arrays[name] = _numbers_as(encoded.guessed[name], wire, model, name)
        return True

    def sender(
        self, model: str, inputs: Mapping[str, Any], options: Mapping[str, Any]
    ) -> Tuple[_Encoded, Callable[[], Any]]:
        """The encoded inputs of one call and a function that builds its request (again after
        a data type was learned); a misspelt option is a TypeError, as for any keyword."""
        unknown = sorted(set(options) - set(_CALL_OPTIONS))
        if unknown:
            raise TypeError(
                f"call to model '{model}': unknown option {', '.join(map(repr, unknown))}; "
                f"the options are {', '.join(_CALL_OPTIONS)}"
            )
        encoded = self.encode(model, inputs)
        version = int(options.get("version", -1))
        outputs = options.get("outputs")
        timeout_us = int(options.get("timeout_ms", 0)) * 1000  # pb_utils takes microseconds
        pb = self.pb

        def request() -> Any:
            return pb.InferenceRequest(
                model_name=model,
                model_version=version,
                inputs=[pb.Tensor(n, a) for n, a in encoded.arrays.items()],
                requested_output_names=list(outputs) if outputs is not None else [],
                timeout=timeout_us,
                preferred_memory=pb.PreferredMemory(pb.TRITONSERVER_MEMORY_CPU, 0),
            )

        return encoded, request

    def result(self, model: str, encoded: _Encoded, response: Any) -> Optional[Outputs]:
        """The outputs of ``response``; None when a data type was learned from its error and
        the request should be sent again; else raise the target's error."""
        error = response.error() if response.has_error() else None
        if error is None:
            return _outputs(response)
        if self.relearn(model, encoded, error.message()):
            return None
        raise TritonRequestError(error_code_name(error.code()), error.message(), model=model)

    def stream_head(
        self, model: str, encoded: _Encoded, responses: Iterator[Any]
    ) -> Optional[List[Any]]:
        """The first response of a stream, as a list (empty when there is none); None when a
        data type was learned from its error and the request should be sent again."""
        first = next(responses, None)
        if first is None:
            return []
        if first.has_error() and self.relearn(model, encoded, first.error().message()):
            return None
        return [first]


def bind_calls(model: ModelCalls, pb: Any) -> None:
    """Give ``model``'s calls the stub's pb_utils module (``Model.initialize`` does)."""
    model._ModelCalls__caller = _Caller(pb)  # type: ignore[attr-defined]


class ModelCalls:
    """Mixin of :class:`tritonpy.Model`: calls to other models of the same server."""

    #: the state of this instance's calls, set by :func:`bind_calls`
    __caller: _Caller

    # -- public API -------------------------------------------------------------------------
    def call(
        self,
        model_name: str,
        inputs: Mapping[str, Any],
        *,
        version: int = -1,
        outputs: Optional[Sequence[str]] = None,
        timeout_ms: int = 0,
    ) -> Outputs:
        """Run one request on another model of the server and return its outputs.

        ``inputs`` maps input names to numpy arrays, str/bytes, numbers or lists of them (see
        the module documentation for how each is encoded); ``outputs`` names the outputs
        wanted (None: all); ``version`` -1 is the version Triton's policy picks; ``timeout_ms``
        is Triton's request timeout (0: none), which bounds the wait in the target's queue, not
        its run. An error response raises :class:`tritonpy.TritonRequestError`.

        Example::

            def infer(self, TEXT):
                scores = self.call("classifier", {"TEXT": TEXT})["SCORES"]
                return {"LABEL": np.argmax(scores, axis=-1)}
        """
        options = {"version": version, "outputs": outputs, "timeout_ms": timeout_ms}
        encoded, request = self.__caller.sender(model_name, inputs, options)
        while True:
            result = self.__caller.result(model_name, encoded, request().exec())
            if result is not None:
                return result

    async def call_async(
        self, model_name: str, inputs: Mapping[str, Any], **options: Unpack[CallOptions]
    ) -> Outputs:
        """:meth:`call` for ``async def infer`` (the same options): several calls run at once
        when gathered.

        Example::

            async def infer(self, IMAGE):
                boxes, labels = await asyncio.gather(
                    self.call_async("detector", {"IMAGE": IMAGE}),
                    self.call_async("classifier", {"IMAGE": IMAGE}),
                )
                return {"BOXES": boxes["BOXES"], "LABELS": labels["LABELS"]}
        """
        encoded, request = self.__caller.sender(model_name, inputs, options)
        while True:
            result = self.__caller.result(model_name, encoded, await request().async_exec())
            if result is not None:
                return result

    def call_stream(
        self, model_name: str, inputs: Mapping[str, Any], **options: Unpack[CallOptions]
    ) -> Iterator[Outputs]:
        """Iterate the responses of a decoupled (streaming) model, one dict of outputs each
        (the options of :meth:`call`).

        The empty response that only carries the FINAL flag is skipped; an error response
        raises :class:`tritonpy.TritonRequestError`. In Triton 24.10 an error response the
        target sends after some parts does not reach the caller: the stream just ends.

        Example::

            def infer(self, PROMPT):
                tokens = [part["TOKEN"][0] for part in self.call_stream("llm", {"PROMPT": PROMPT})]
                return {"TEXT": b"".join(tokens)}
        """
        encoded, request = self.__caller.sender(model_name, inputs, options)
        while True:
            responses = iter(request().exec(decoupled=True))
            head = self.__caller.stream_head(model_name, encoded, responses)
            if head is not None:
                return _stream(head, responses, model_name)

    async def call_stream_async(
        self, model_name: str, inputs: Mapping[str, Any], **options: Unpack[CallOptions]
    ) -> AsyncIterator[Outputs]:
        """:meth:`call_stream` for ``async def infer`` (``async for part in ...``)."""
        encoded, request = self.__caller.sender(model_name, inputs, options)
        while True:
            responses = iter(await request().async_exec(decoupled=True))
            head = self.__caller.stream_head(model_name, encoded, responses)
            if head is not None:
                for part in _stream(head, responses, model_name):
                    yield part
                return


def _outputs(response: Any) -> Outputs:
    return {t.name(): t.as_numpy() for t in response.output_tensors()}


def _stream(head: List[Any], rest: Iterator[Any], model: str) -> Iterator[Outputs]:
    for response in _chain(head, rest):
        if response.has_error():
            error = response.error()
            raise TritonRequestError(error_code_name(error.code()), error.message(), model=model)
        tensors = response.output_tensors()
        if tensors:  # a flags-only FINAL response carries nothing
            yield {t.name(): t.as_numpy() for t in tensors}


def _chain(head: List[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from head
    yield from rest
