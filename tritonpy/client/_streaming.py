"""Stream one request to a decoupled model: its responses one by one as they arrive
(:func:`open_stream`), or all of them at once (:func:`stream_infer`), and the error that ended
the stream (or None).

The protocol of ``url``: a scheme decides (``grpc://``, ``http://``); a bare ``host:port`` is
gRPC unless ``protocol`` says otherwise, as for :class:`~tritonpy.client.InferClient` and
``tritonpy infer`` (``tritonpy probe`` alone reads a bare ``host:port`` as HTTP, the port the
health endpoints and Kubernetes probes use).

- gRPC: tritonclient's bidirectional stream (``start_stream`` / ``async_stream_infer``); any
  input, a correlation id and START/END (``sequence``). ``cancel_after=N`` cancels the request
  once N responses arrived (``stop_stream(cancel_requests=True)``), as a client that stops
  reading a token stream does.
- HTTP: Triton's ``generate_stream`` endpoint (server-sent events, one JSON object per
  response). What the 24.10 server accepts there: each input a JSON number, a UTF-8 string or
  a flat list of them, whose length the server divides by the configured dims (a batching
  model gets a batch of that many rows); no correlation id (a sequence model refuses every
  request), no binary BYTES. Each output comes back as a flat numpy array.

Example::

    result = stream_infer("localhost:8001", "tokens", {"TEXT": np.array([b"hi"], object)})
    for outputs in result.responses:
        print(outputs["TOKEN"])
    if result.error is not None:
        raise result.error
"""

from __future__ import annotations

import importlib
import json
import queue
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from .._runtime._optional import require
from .._runtime.errors import TritonRequestError
from .._tooling.errors import ServerError
from ._infer import SequenceControl
from ._wire import WireProtocol, parse_endpoint, request_error

#: the code of an error that ended a stream: neither gRPC streaming nor generate_stream carry
#: the error's code in Triton 24.10, only its message
UNKNOWN_CODE = "UNKNOWN"

_FINAL = "triton_final_response"
_WIRE_DTYPES = {
    "BOOL": np.bool_,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}


@dataclass
class StreamResult:
    """What one streamed request produced: ``responses`` (each ``{output: array}``, in
    order), ``parameters`` (each response's parameters, same order), ``error`` (the error
    response or transport error that ended the stream, None when it ended normally),
    ``cancelled`` (the client cancelled it after ``cancel_after`` responses) and ``final``
    (the stream ended with the final flag: gRPC's ``triton_final_response``, or over HTTP the
    server closing the event stream after its last response). A stream's error has code
    :data:`UNKNOWN_CODE`: Triton 24.10 sends only the message of an error response inside a
    stream."""

    responses: List[Dict[str, NDArray[Any]]] = field(default_factory=list)
    parameters: List[Dict[str, Any]] = field(default_factory=list)
    error: Optional[TritonRequestError] = None
    cancelled: bool = False
    final: bool = False


@dataclass(frozen=True)
class StreamResponse:
    """One response of a stream: its ``index`` (0, 1, ...), ``outputs`` and ``parameters``."""

    index: int
    outputs: Dict[str, NDArray[Any]]
    parameters: Dict[str, Any]


@dataclass(frozen=True)
class _Request:
    address: str
    ssl: bool
    model: str
    inputs: Mapping[str, NDArray[Any]]
    outputs: Optional[Sequence[str]]
    parameters: Optional[Mapping[str, Any]]
    sequence: Optional[SequenceControl]
    datatypes: Mapping[str, str]
    cancel_after: Optional[int]
    timeout: float
    version: str = ""  # the model version; "" lets the server's version policy choose


class ResponseStream:
    """The responses of one streamed request, as they arrive (iterate it once). Once the
    iteration ended, :attr:`result` holds what :func:`stream_infer` returns: the error that
    ended the stream, ``final``, ``cancelled`` (the responses themselves are not kept).
    Leaving the loop early cancels the rest of the request over gRPC (``cancelled``) and
    closes the connection over HTTP."""

    def __init__(self, protocol: WireProtocol, request: _Request) -> None:
        self.protocol = protocol
        self._request = request
        self.result = StreamResult()
        self.count = 0

    def __iter__(self) -> Iterator[StreamResponse]:
        parts = _grpc_parts if self.protocol == "grpc" else _http_parts
        for outputs, parameters in parts(self._request, self.result):
            self.count += 1
            yield StreamResponse(self.count - 1, outputs, parameters)


def open_stream(
    url: str,
    model: str,
    inputs: Mapping[str, NDArray[Any]],
    *,
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    sequence: Optional[SequenceControl] = None,
    datatypes: Optional[Mapping[str, str]] = None,
    cancel_after: Optional[int] = None,
    timeout: float = 60.0,
    version: str = "",
) -> ResponseStream:
    """Stream one request to ``model``; iterate the result for each response as it arrives.

    ``url``: see the module documentation (a bare ``host:port`` is gRPC). ``sequence``: the
    correlation id and START/END of a request to a sequence model (gRPC only: 24.10's
    ``generate_stream`` takes none); ``datatypes``: the wire data type of inputs whose numpy
    dtype does not say it; ``cancel_after`` (gRPC only): cancel the request once that many
    responses arrived; ``timeout``: seconds to wait for each next response before giving up
    with a :class:`ServerError` (caused by a :class:`TimeoutError`); ``version``: the model
    version to stream to (default: the one the server's version policy picks). Nothing is sent
    until the iteration starts.

    Example::

        stream = open_stream("grpc://localhost:8001", "square", {"IN": np.array([3], np.int32)})
        for response in stream:
            print(response.index, response.outputs["OUT"])
        print(stream.count, stream.result.final, stream.result.error)
    """
    endpoint = parse_endpoint(url, protocol)
    request = _Request(
        endpoint.address,
        endpoint.ssl,
        model,
        inputs,
        outputs,
        parameters,
        sequence,
        dict(datatypes or {}),
        cancel_after,
        timeout,
        version,
    )
    if endpoint.protocol == "http":
        _check_http(request)
    return ResponseStream(endpoint.protocol, request)


def stream_infer(
    url: str,
    model: str,
    inputs: Mapping[str, NDArray[Any]],
    *,
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    sequence: Optional[SequenceControl] = None,
    cancel_after: Optional[int] = None,
    timeout: float = 60.0,
    version: str = "",
) -> StreamResult:
    """Send one request to a decoupled model and gather its responses until the final one.

    ``url`` is ``grpc://host:port``, ``http://host:port`` or a bare ``host:port``, which is
    gRPC unless ``protocol="http"`` (as for :class:`~tritonpy.client.InferClient`). The other
    options are those of :func:`open_stream`.

    Example::

        result = stream_infer("localhost:8001", "square", {"IN": np.array([2], np.int32)})
        assert [r["OUT"].tolist() for r in result.responses] == [[4], [4]] and result.final
    """
    stream = open_stream(
        url,
        model,
        inputs,
        protocol=protocol,
        outputs=outputs,
        parameters=parameters,
        sequence=sequence,
        cancel_after=cancel_after,
        timeout=timeout,
        version=version,
    )
    responses = [(part.outputs, part.parameters) for part in stream]
    stream.result.responses = [outputs for outputs, _ in responses]
    stream.result.parameters = [params for _, params in responses]
    return stream.result


# -- gRPC ------------------------------------------------------------------------------------
def _grpc_parts(
    request: _Request, result: StreamResult
) -> Iterator[Tuple[Dict[str, NDArray[Any]], Dict[str, Any]]]:
    require("tritonclient.grpc", extra="client", feature="stream_infer (grpc)")
    grpc: Any = importlib.import_module("tritonclient.grpc")
    events: queue.Queue[Any] = queue.Queue()
    client = grpc.InferenceServerClient(url=request.address, ssl=request.ssl)
    count = 0
    try:
        client.start_stream(callback=lambda result, error: events.put((result, error)))
        client.async_stream_infer(
            request.model,
            _grpc_inputs(grpc, request),
            model_version=request.version,
            outputs=[grpc.InferRequestedOutput(n) for n in request.outputs or ()] or None,
            parameters=dict(request.parameters) if request.parameters else None,
            enable_empty_final_response=True,
            **(request.sequence.keywords() if request.sequence is not None else {}),
        )
        while True:
            if request.cancel_after is not None and count >= request.cancel_after:
                client.stop_stream(cancel_requests=True)
                result.cancelled = True
                return
            res, err = _next_event(events, request, count)
            if err is not None:
                result.error = _stream_error(err)
                return
            response = res.get_response()
            params = {k: _grpc_param(v) for k, v in response.parameters.items()}
            final = bool(params.pop(_FINAL, False))
            if response.outputs or not final:
                count += 1
                try:
                    yield {o.name: res.as_numpy(o.name) for o in response.outputs}, params
                except GeneratorExit:  # the reader stopped early: cancel the rest
                    client.stop_stream(cancel_requests=True)
                    result.cancelled = True
                    raise
            if final:
                result.final = True
                return
    finally:
        if not result.cancelled:
            client.stop_stream()
        client.close()


def _grpc_inputs(grpc: Any, request: _Request) -> List[Any]:
    tensors = []
    for name, array in request.inputs.items():
        datatype = request.datatypes.get(name) or (
            "BYTES" if array.dtype.kind in "OSU" else _wire_name(array)
        )
        tensor = grpc.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        tensors.append(tensor)
    return tensors


def _next_event(events: queue.Queue[Any], request: _Request, count: int) -> Any:
    try:
        return events.get(timeout=request.timeout)
    except queue.Empty:
        raise ServerError(
            f"model {request.model!r}: no response within {request.timeout:g} s on the gRPC "
            f"stream after {count} response(s); does the model send a final response "
            "(flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL)?"
        ) from TimeoutError(f"no response within {request.timeout:g} s")


def _stream_error(exc: Exception) -> TritonRequestError:
    # An error response inside a gRPC stream carries its message only (24.10's
    # ModelStreamInferResponse has no status code): tritonclient reports status None.
    error = request_error(exc)
    if error.code in ("None", "UNKNOWN"):
        return TritonRequestError(UNKNOWN_CODE, error.message)
    return error


def _grpc_param(value: Any) -> Any:
    kind = value.WhichOneof("parameter_choice")
    return getattr(value, kind) if kind else None


def _wire_name(array: NDArray[Any]) -> str:
    for name, dtype in _WIRE_DTYPES.items():
        if array.dtype == np.dtype(dtype):
            return name
    raise ServerError(
        f"stream_infer: numpy dtype {array.dtype} has no Triton data type; pass datatypes="
    )


# -- HTTP generate_stream ----------------------------------------------------------------------
def _check_http(request: _Request) -> None:
    if request.cancel_after is not None:
        raise ServerError(
            "stream_infer: cancel_after needs protocol 'grpc' (HTTP generate_stream has no "
            "cancellation besides closing the connection)."
        )
    if request.sequence is not None:
        raise ServerError(
            f"model {request.model!r}: HTTP generate_stream carries no correlation id (Triton "
            "24.10 ignores one there and refuses the request); stream to the sequence model "
            "over gRPC (grpc://HOST:8001)."
        )
    for name, array in request.inputs.items():
        http_value(name, array, request.datatypes.get(name, ""))


def http_value(name: str, array: NDArray[Any], datatype: str = "") -> Any:
    """Input ``name`` as ``generate_stream`` takes it (a number or UTF-8 text when it has one
    element, else a flat list of them), or :class:`ServerError` saying why it cannot go that
    way (binary BYTES, BF16) and what to use instead.

    >>> http_value("IN", np.array([[2]], np.int32)), http_value("X", np.zeros(2, np.float32))
    (2, [0.0, 0.0])
    """
    if datatype == "BF16":
        raise ServerError(
            f"input {name!r} is BF16, which HTTP generate_stream cannot carry; stream over "
            "gRPC (grpc://HOST:8001)."
        )
    values = []
    for value in array.reshape(-1).tolist():
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise ServerError(
                    f"input {name!r} holds bytes that are not UTF-8 text; HTTP generate_stream "
                    "carries only JSON text: stream over gRPC (grpc://HOST:8001)."
                ) from None
        values.append(value)
    return values[0] if len(values) == 1 else values


def _http_parts(
    request: _Request, result: StreamResult
) -> Iterator[Tuple[Dict[str, NDArray[Any]], Dict[str, Any]]]:
    body: Dict[str, Any] = {
        name: http_value(name, array, request.datatypes.get(name, ""))
        for name, array in request.inputs.items()
    }
    if request.parameters:
        body["parameters"] = dict(request.parameters)
    scheme = "https" if request.ssl else "http"
    sent = urllib.request.Request(
        f"{scheme}://{request.address}/v2/models/{request.model}"
        f"{f'/versions/{request.version}' if request.version else ''}/generate_stream",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        reply = urllib.request.urlopen(sent, timeout=request.timeout)
    except urllib.error.HTTPError as exc:
        result.error = _http_error(exc.code, exc.read())
        return
    except (socket.timeout, TimeoutError) as exc:
        raise _http_timeout(request) from TimeoutError(str(exc))
    except OSError as exc:
        raise ServerError(
            f"model {request.model!r}: cannot reach the server at {request.address} (http): {exc}"
        ) from exc
    with reply:
        try:
            yield from _events(reply, result)
        except (socket.timeout, TimeoutError) as exc:
            raise _http_timeout(request) from TimeoutError(str(exc))
    if result.error is None:
        result.final = True


def _events(
    reply: Any, result: StreamResult
) -> Iterator[Tuple[Dict[str, NDArray[Any]], Dict[str, Any]]]:
    for raw in reply:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data:"):
            continue
        event = json.loads(line[len("data:") :])
        if "error" in event:
            result.error = TritonRequestError(UNKNOWN_CODE, str(event["error"]))
            return
        for key in ("model_name", "model_version", "id"):
            event.pop(key, None)
        yield {key: _from_json(value) for key, value in event.items()}, {}


def _http_timeout(request: _Request) -> ServerError:
    return ServerError(
        f"model {request.model!r}: no response within {request.timeout:g} s on HTTP "
        "generate_stream; does the model send a final response?"
    )


def _from_json(value: Any) -> NDArray[Any]:
    if isinstance(value, str):
        return np.array([value.encode("utf-8")], dtype=object)
    return np.array(value if isinstance(value, list) else [value])


def _http_error(status: int, payload: bytes) -> TritonRequestError:
    text = payload.decode("utf-8", "replace").strip()
    if text.startswith("data:"):
        # an error as the stream's first event: Triton answers 400 whatever the error's code
        try:
            return TritonRequestError(UNKNOWN_CODE, str(json.loads(text[5:])["error"]))
        except (ValueError, KeyError):
            pass
    try:
        message = str(json.loads(payload).get("error", payload.decode()))
    except ValueError:
        message = payload.decode("utf-8", "replace")
    codes = {400: "INVALID_ARG", 404: "NOT_FOUND", 499: "CANCELLED", 500: "INTERNAL"}
    return TritonRequestError(codes.get(status, f"HTTP {status}"), message)
