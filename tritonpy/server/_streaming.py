"""Stream one request to a decoupled model and collect every response, as a test or a script
needs it: the outputs of each response in order, their response parameters, and the error
that ended the stream (or None).

- gRPC (``stream_infer(..., protocol="grpc")``): tritonclient's bidirectional stream
  (``start_stream`` / ``async_stream_infer``). ``cancel_after=N`` cancels the request once N
  responses arrived (``stop_stream(cancel_requests=True)``), as a client that stops reading a
  token stream does.
- HTTP (``protocol="http"``): Triton's ``generate_stream`` endpoint (server-sent events, one
  JSON object per response). It carries only what maps to JSON: inputs and outputs of one
  element per request or BYTES text; each output comes back as a numpy array of one row.

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
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from .._runtime._optional import require
from .._runtime.errors import TritonRequestError
from .._tooling.errors import ServerError
from ._client import WireProtocol, _request_error, parse_endpoint

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
    response or transport error that ended the stream, None when it ended normally) and
    ``cancelled`` (the client cancelled it after ``cancel_after`` responses). A stream's
    error has code :data:`UNKNOWN_CODE`: Triton 24.10 sends only the message of an error
    response inside a stream."""

    responses: List[Dict[str, NDArray[Any]]] = field(default_factory=list)
    parameters: List[Dict[str, Any]] = field(default_factory=list)
    error: Optional[TritonRequestError] = None
    cancelled: bool = False


def stream_infer(
    url: str,
    model: str,
    inputs: Mapping[str, NDArray[Any]],
    *,
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    parameters: Optional[Mapping[str, Any]] = None,
    cancel_after: Optional[int] = None,
    timeout: float = 60.0,
) -> StreamResult:
    """Send one request to a decoupled model and gather its responses until the final one.

    ``cancel_after`` (gRPC only): cancel the request once that many responses arrived; the
    result then holds those responses and ``cancelled=True``. ``timeout``: seconds to wait for
    each next response before giving up with a :class:`ServerError`.
    """
    endpoint = parse_endpoint(url, protocol)
    if endpoint.protocol == "grpc":
        return _grpc_stream(
            endpoint.address, model, inputs, outputs, parameters, cancel_after, timeout
        )
    if cancel_after is not None:
        raise ServerError(
            "stream_infer: cancel_after needs protocol 'grpc' (HTTP generate_stream has no "
            "cancellation besides closing the connection)."
        )
    return _http_stream(endpoint.address, endpoint.ssl, model, inputs, parameters, timeout)


def _grpc_stream(
    address: str,
    model: str,
    inputs: Mapping[str, NDArray[Any]],
    outputs: Optional[Sequence[str]],
    parameters: Optional[Mapping[str, Any]],
    cancel_after: Optional[int],
    timeout: float,
) -> StreamResult:
    require("tritonclient.grpc", extra="client", feature="stream_infer (grpc)")
    grpc: Any = importlib.import_module("tritonclient.grpc")
    events: queue.Queue[Any] = queue.Queue()
    client = grpc.InferenceServerClient(url=address)
    result = StreamResult()
    try:
        request_inputs = []
        for name, array in inputs.items():
            datatype = "BYTES" if array.dtype.kind in "OSU" else _wire_name(array)
            tensor = grpc.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            request_inputs.append(tensor)
        requested = [grpc.InferRequestedOutput(n) for n in outputs] if outputs else None
        client.start_stream(callback=lambda result, error: events.put((result, error)))
        client.async_stream_infer(
            model,
            request_inputs,
            outputs=requested,
            parameters=dict(parameters) if parameters else None,
            enable_empty_final_response=True,
        )
        while True:
            if cancel_after is not None and len(result.responses) >= cancel_after:
                client.stop_stream(cancel_requests=True)
                result.cancelled = True
                break
            try:
                res, err = events.get(timeout=timeout)
            except queue.Empty:
                raise ServerError(
                    f"model {model!r}: no response within {timeout} s on the gRPC stream "
                    f"after {len(result.responses)} responses; does the model send a final "
                    "response (flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL)?"
                ) from None
            if err is not None:
                result.error = _stream_error(err)
                break
            response = res.get_response()
            params = {k: _grpc_param(v) for k, v in response.parameters.items()}
            final = bool(params.pop(_FINAL, False))
            if response.outputs or not final:
                result.responses.append({o.name: res.as_numpy(o.name) for o in response.outputs})
                result.parameters.append(params)
            if final:
                break
    finally:
        if not result.cancelled:
            client.stop_stream()
        client.close()
    return result


def _stream_error(exc: Exception) -> TritonRequestError:
    # An error response inside a gRPC stream carries its message only (24.10's
    # ModelStreamInferResponse has no status code): tritonclient reports status None.
    error = _request_error(exc)
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
    raise ServerError(f"stream_infer: numpy dtype {array.dtype} has no Triton data type")


def _http_stream(
    address: str,
    ssl: bool,
    model: str,
    inputs: Mapping[str, NDArray[Any]],
    parameters: Optional[Mapping[str, Any]],
    timeout: float,
) -> StreamResult:
    body: Dict[str, Any] = {name: _json_value(name, array) for name, array in inputs.items()}
    if parameters:
        body["parameters"] = dict(parameters)
    scheme = "https" if ssl else "http"
    request = urllib.request.Request(
        f"{scheme}://{address}/v2/models/{model}/generate_stream",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    result = StreamResult()
    try:
        reply = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        result.error = _http_error(exc.code, exc.read())
        return result
    except OSError as exc:
        raise ServerError(
            f"model {model!r}: cannot reach the server at {address} (http): {exc}"
        ) from exc
    with reply:
        for raw in reply:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data:"):
                continue
            event = json.loads(line[len("data:") :])
            if "error" in event:
                result.error = TritonRequestError(UNKNOWN_CODE, str(event["error"]))
                break
            found: Dict[str, NDArray[Any]] = {}
            for key in ("model_name", "model_version", "id"):
                event.pop(key, None)
            for key, value in event.items():
                found[key] = _from_json(value)
            result.responses.append(found)
            result.parameters.append({})
    return result


def _json_value(name: str, array: NDArray[Any]) -> Any:
    if array.size != 1:
        raise ServerError(
            f"stream_infer over HTTP: input {name!r} has shape {list(array.shape)}; "
            "generate_stream carries one value per input; use protocol='grpc'"
        )
    value = array.reshape(-1)[0]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return value.item() if hasattr(value, "item") else value


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
