"""One inference request from the command line: turn ``NAME=VALUE`` strings into tensors of
the model's declared dtypes and shapes, send them with ``tritonclient`` (HTTP or gRPC), and
describe the outputs.

Value forms (``parse_input_value``), chosen by the input's datatype in the model's
configuration:

- BYTES input: one row. ``@path`` sends the file's bytes (an encoded image, a document...);
  any other VALUE is sent as its UTF-8 text, exactly as written, so a JSON value
  (``{"a": 1}``, ``[1, 2]``) reaches a ``tp.JSON`` input as that JSON document;
- any other input: a JSON number or list, a tensor of the declared dtype.

A batch dimension of 1 is added when the model batches (``max_batch_size > 0``) and the value
has one dimension fewer.

Example::

    outputs = infer_once("add_sub", {"INPUT0": "[1,2,3,4]", "INPUT1": "[1,1,1,1]"},
                         url="localhost:8001")
    print(format_output(outputs[0]))          # OUTPUT0 (FP32, shape [4]): [2.0, 3.0, 4.0, 5.0]
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypedDict,
    Union,
)

import numpy as np
from numpy.typing import NDArray

from .._runtime._optional import require
from .._runtime.dtypes import lookup_dtype
from .._runtime.errors import DeclarationError, TritonRequestError
from .._tooling.errors import ServerError
from .._tooling.tensor_display import format_tensor, tensor_to_json

if TYPE_CHECKING:
    from typing_extensions import Unpack

_GRPC_CODES = {
    "INVALID_ARGUMENT": "INVALID_ARG",
    "UNIMPLEMENTED": "UNSUPPORTED",
}
_HTTP_CODES = {
    "400": "INVALID_ARG",
    "404": "NOT_FOUND",
    "409": "ALREADY_EXISTS",
    "499": "CANCELLED",
    "500": "INTERNAL",
    "501": "UNSUPPORTED",
    "503": "UNAVAILABLE",
}


#: how requests travel: tritonclient's gRPC or HTTP client
WireProtocol = Literal["grpc", "http"]


@dataclass(frozen=True)
class Endpoint:
    """Where to send requests: ``protocol`` ``"grpc"`` or ``"http"``, ``address``
    ``host:port``, ``ssl`` for ``https://``/``grpcs://``."""

    protocol: WireProtocol
    address: str
    ssl: bool = False


def parse_endpoint(url: str, protocol: Optional[WireProtocol] = None) -> Endpoint:
    """Read ``localhost:8001``, ``http://host:8000``, ``grpc://host:8001``.

    Without a scheme the protocol is ``protocol`` (default gRPC); a scheme decides it, and an
    explicit ``protocol`` that disagrees is an error.

    Example::

        parse_endpoint("http://127.0.0.1:8000")   # Endpoint("http", "127.0.0.1:8000")
    """
    schemes: Dict[str, Tuple[WireProtocol, bool]] = {
        "http": ("http", False),
        "https": ("http", True),
        "grpc": ("grpc", False),
        "grpcs": ("grpc", True),
    }
    scheme, sep, rest = url.partition("://")
    if sep:
        if scheme.lower() not in schemes:
            raise ServerError(
                f"server URL {url!r}: unknown scheme {scheme!r}; expected http://, https://, "
                "grpc:// or host:port."
            )
        implied, ssl = schemes[scheme.lower()]
        if protocol is not None and protocol != implied:
            raise ServerError(
                f"server URL {url!r} says {implied} but --protocol is {protocol}; drop one."
            )
        address = rest.rstrip("/")
    else:
        implied, ssl, address = protocol or "grpc", False, url.rstrip("/")
    if implied not in ("grpc", "http"):  # a string from the command line
        raise ServerError(f"protocol {implied!r}: expected 'grpc' or 'http'.")
    if not address:
        raise ServerError(f"server URL {url!r} has no host:port.")
    return Endpoint(implied, address, ssl)


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model configuration (``datatype`` is the wire name)."""

    name: str
    datatype: str
    dims: Tuple[int, ...]
    optional: bool = False


@dataclass(frozen=True)
class ModelSignature:
    """What a request needs to know about a model: its batching and its tensors."""

    name: str
    max_batch_size: int
    inputs: Dict[str, TensorSpec]
    outputs: Dict[str, TensorSpec]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelSignature:
        """Build from a model configuration as JSON (HTTP ``/config``, or gRPC ``as_json``,
        where int64 values are strings)."""

        def specs(key: str) -> Dict[str, TensorSpec]:
            out: Dict[str, TensorSpec] = {}
            for entry in config.get(key, []):
                dtype = lookup_dtype(str(entry.get("data_type", "TYPE_INVALID")))
                out[str(entry["name"])] = TensorSpec(
                    str(entry["name"]),
                    dtype.name,
                    tuple(int(d) for d in entry.get("dims", [])),
                    bool(entry.get("optional", False)),
                )
            return out

        return cls(
            str(config.get("name", "")),
            int(config.get("max_batch_size", 0) or 0),
            specs("input"),
            specs("output"),
        )


def split_assignment(text: str) -> Tuple[str, str]:
    """``"NAME=VALUE"`` -> ``("NAME", "VALUE")``."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ServerError(
            f"input {text!r}: expected NAME=VALUE (a JSON list/number, text, or @file)."
        )
    return name, value


def _fit_shape(array: NDArray[Any], spec: TensorSpec, max_batch_size: int) -> NDArray[Any]:
    if array.ndim == 0:
        array = array.reshape((1,) * max(len(spec.dims), 1))
    if max_batch_size > 0 and array.ndim == len(spec.dims):
        array = array[np.newaxis, ...]
    return array


def parse_input_value(text: str, spec: TensorSpec, max_batch_size: int = 0) -> NDArray[Any]:
    """Turn one command-line value into the tensor for input ``spec`` (see the module's
    docstring for the forms).

    Example::

        spec = TensorSpec("TEXT", "BYTES", (1,))
        parse_input_value("hello", spec, max_batch_size=8)   # array([[b'hello']], dtype=object)
        parse_input_value('{"a": 1}', spec, 8)               # array([[b'{"a": 1}']], ...)
    """
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ServerError(
                f"input {spec.name!r}: cannot read file {str(path)!r}: {exc.strerror}. "
                "Pass @<path of an existing file>."
            ) from exc
        if spec.datatype != "BYTES":
            raise ServerError(
                f"input {spec.name!r} is {spec.datatype}: a file (@{path}) can only fill a BYTES "
                "input. Pass a JSON list of numbers instead."
            )
        return _fit_shape(np.array([data], dtype=np.object_), spec, max_batch_size)
    if spec.datatype == "BYTES":
        # one row, the text as written: a JSON document stays one document (tp.JSON, tp.Text)
        return _fit_shape(np.array([text.encode("utf-8")], dtype=np.object_), spec, max_batch_size)
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = None
        is_json = False
    else:
        is_json = isinstance(value, (list, int, float))  # bool is an int: BOOL inputs
    if not is_json:
        raise ServerError(
            f"input {spec.name!r} is {spec.datatype} with dims {list(spec.dims)}: expected a "
            f"JSON number or list, got {text!r}. Example: {spec.name}=[1, 2, 3]."
        )
    dtype = lookup_dtype(spec.datatype).numpy
    if dtype is None:
        raise ServerError(
            f"input {spec.name!r} is {spec.datatype}, which numpy cannot hold; send it with "
            "your own client."
        )
    try:
        array = np.array(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ServerError(
            f"input {spec.name!r}: cannot make a {spec.datatype} tensor from {text!r}: {exc}. "
            "Pass a rectangular JSON list of numbers."
        ) from exc
    return _fit_shape(array, spec, max_batch_size)


@dataclass(frozen=True)
class OutputTensor:
    """One output of a response."""

    name: str
    datatype: str
    array: NDArray[Any]

    def values(self) -> Any:
        """Nested lists; BYTES elements decoded as UTF-8 where valid, else left as bytes."""
        if self.array.dtype == np.object_:

            def decode(v: Any) -> Any:
                if isinstance(v, bytes):
                    try:
                        return v.decode("utf-8")
                    except UnicodeDecodeError:
                        return v
                return v

            return np.vectorize(decode, otypes=[object])(self.array).tolist()
        return self.array.tolist()

    def to_json(self) -> Dict[str, Any]:
        """``{"name", "datatype", "shape", "data"}``, ready for ``json.dumps``: BYTES elements
        as text where UTF-8, else ``{"base64": ...}``."""
        return tensor_to_json(self.name, self.datatype, self.array)


def format_output(output: OutputTensor, *, full: bool = False) -> str:
    """``NAME (DTYPE, shape [..]): VALUE``, VALUE summarised by numpy (``...`` in long
    dimensions) unless ``full``; see :func:`tritonpy._tooling.tensor_display.format_tensor`."""
    return format_tensor(output.name, output.datatype, output.array, full=full)


def _request_error(exc: Exception) -> TritonRequestError:
    status_fn = getattr(exc, "status", None)
    message_fn = getattr(exc, "message", None)
    status = str(status_fn() if callable(status_fn) else "") or "UNKNOWN"
    message = str(message_fn() if callable(message_fn) else exc)
    if status.startswith("StatusCode."):
        code = status[len("StatusCode.") :]
        code = _GRPC_CODES.get(code, code)
    else:
        code = _HTTP_CODES.get(status, f"HTTP {status}" if status.isdigit() else status)
    return TritonRequestError(code, message)


@dataclass(frozen=True)
class SequenceControl:
    """The sequence-batcher controls of one request to a sequence model (its configuration
    has ``sequence_batching``): ``id`` the correlation id (a non-zero int, or a non-empty
    str), ``start`` the first request of the sequence, ``end`` its last one.

    Example::

        client.infer("seq_sum", {"VALUE": value}, sequence=SequenceControl(42, start=True))
        client.infer("seq_sum", {"VALUE": value}, sequence=SequenceControl(42, end=True))
    """

    id: Union[int, str]
    start: bool = False
    end: bool = False

    def keywords(self) -> Dict[str, Any]:
        """tritonclient's ``infer`` keywords for these controls."""
        return {"sequence_id": self.id, "sequence_start": self.start, "sequence_end": self.end}


class RequestOptions(TypedDict, total=False):
    """The keyword options of :meth:`InferClient.infer` (those of
    :meth:`InferClient.infer_with_parameters`)."""

    signature: Optional[ModelSignature]
    parameters: Optional[Mapping[str, Any]]
    sequence: Optional[SequenceControl]
    version: str


class InferClient:
    """A tritonclient (HTTP or gRPC) with the few calls the CLI needs.

    Example::

        client = InferClient("localhost:8001")
        sig = client.signature("add_sub")
        outs = client.infer("add_sub", {"INPUT0": np.ones(4, np.float32), ...})
    """

    def __init__(
        self,
        url: str = "localhost:8001",
        protocol: Optional[WireProtocol] = None,
        *,
        timeout: float = 60.0,
    ) -> None:
        self.endpoint = parse_endpoint(url, protocol)
        self.timeout = timeout
        name = f"tritonclient.{self.endpoint.protocol}"
        require(name, extra="client", feature=f"InferClient ({self.endpoint.protocol})")
        module = importlib.import_module(name)
        self._module: Any = module
        if self.endpoint.protocol == "grpc":
            self._client: Any = module.InferenceServerClient(
                url=self.endpoint.address, ssl=self.endpoint.ssl
            )
        else:
            self._client = module.InferenceServerClient(
                url=self.endpoint.address,
                ssl=self.endpoint.ssl,
                connection_timeout=timeout,
                network_timeout=timeout,
            )

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from tritonclient.utils import InferenceServerException

        try:
            return fn(*args, **kwargs)
        except InferenceServerException as exc:
            raise _request_error(exc) from exc
        except OSError as exc:
            raise ServerError(
                f"{what}: cannot reach the server at {self.endpoint.address} "
                f"({self.endpoint.protocol}): {exc}. Is it running (tritonpy serve REPO)? Is "
                "the port the right one for the protocol (HTTP 8000, gRPC 8001 by default)?"
            ) from exc

    def model_config(self, model: str, version: str = "") -> Dict[str, Any]:
        """The model's configuration as the server completed it (JSON form); ``version``: of
        that version (default: the one the server's version policy picks)."""
        what = f"model {model!r}" + (f" version {version}" if version else "")
        if self.endpoint.protocol == "grpc":
            reply = self._call(
                what, self._client.get_model_config, model, model_version=version, as_json=True
            )
            config: Dict[str, Any] = reply.get("config", reply)
        else:
            config = self._call(what, self._client.get_model_config, model, model_version=version)
        return config

    def signature(self, model: str) -> ModelSignature:
        """The model's configuration as a :class:`ModelSignature`."""
        config = self.model_config(model)
        try:
            return ModelSignature.from_config(config)
        except (DeclarationError, KeyError, ValueError) as exc:
            raise ServerError(f"model {model!r}: unreadable configuration: {exc}") from exc

    def infer(
        self,
        model: str,
        inputs: Mapping[str, NDArray[Any]],
        outputs: Optional[Sequence[str]] = None,
        **options: Unpack[RequestOptions],
    ) -> List[OutputTensor]:
        """Send one request; return the outputs in the order of ``outputs`` (default: the
        model's declared outputs). ``parameters``: the request parameters (``{str: bool |
        int | str}``), which a model's ``infer(parameters=...)`` receives; ``signature``: the
        model's, when known (else read from the server once); ``sequence``: a
        :class:`SequenceControl` (correlation id, START/END) for a sequence model;
        ``version``: the model version to ask (default: the one the server's version policy
        picks). An error response raises :class:`tritonpy.TritonRequestError`."""
        return self.infer_with_parameters(model, inputs, outputs, **options)[0]

    def infer_with_parameters(
        self,
        model: str,
        inputs: Mapping[str, NDArray[Any]],
        outputs: Optional[Sequence[str]] = None,
        *,
        signature: Optional[ModelSignature] = None,
        parameters: Optional[Mapping[str, Any]] = None,
        sequence: Optional[SequenceControl] = None,
        version: str = "",
    ) -> Tuple[List[OutputTensor], Dict[str, Any]]:
        """:meth:`infer`, also returning the response parameters (``{}`` when it has none).
        ``sequence``: the correlation id and START/END flags of a request to a sequence model.

        Example::

            outs, params = client.infer_with_parameters("m", {"X": x}, parameters={"k": 1})
        """
        sig = signature or self.signature(model)
        wanted = list(outputs) if outputs else list(sig.outputs)
        request_inputs = []
        for name, array in inputs.items():
            spec = sig.inputs.get(name)
            datatype = spec.datatype if spec else ("BYTES" if array.dtype == np.object_ else "")
            if not datatype:
                raise ServerError(
                    f"model {model!r} has no input {name!r}; its inputs are "
                    f"{', '.join(sig.inputs) or 'none'}."
                )
            tensor = self._module.InferInput(name, list(array.shape), datatype)
            tensor.set_data_from_numpy(array)
            request_inputs.append(tensor)
        requested = [self._module.InferRequestedOutput(name) for name in wanted]
        result = self._call(
            f"model {model!r}",
            self._client.infer,
            model,
            request_inputs,
            outputs=requested,
            model_version=version,
            parameters=dict(parameters) if parameters else None,
            **(sequence.keywords() if sequence is not None else {}),
            **({"client_timeout": self.timeout} if self.endpoint.protocol == "grpc" else {}),
        )
        found: List[OutputTensor] = []
        for name in wanted:
            array = result.as_numpy(name)
            if array is None:
                continue
            meta = result.get_output(name)
            datatype = meta["datatype"] if isinstance(meta, dict) else meta.datatype
            found.append(OutputTensor(name, str(datatype), array))
        return found, self._response_parameters(result)

    def _response_parameters(self, result: Any) -> Dict[str, Any]:
        response = result.get_response()
        if isinstance(response, dict):  # HTTP: the JSON body
            return dict(response.get("parameters") or {})
        found: Dict[str, Any] = {}
        for key, value in response.parameters.items():
            kind = value.WhichOneof("parameter_choice")
            found[key] = getattr(value, kind) if kind else None
        return found

    def close(self) -> None:
        self._client.close()


def infer_once(
    model: str,
    values: Mapping[str, str],
    *,
    url: str = "localhost:8001",
    protocol: Optional[WireProtocol] = None,
    outputs: Optional[Sequence[str]] = None,
    timeout: float = 60.0,
) -> List[OutputTensor]:
    """Send one request built from command-line strings (see :func:`parse_input_value`).

    Example::

        infer_once("echo_text", {"TEXT": "hello"}, url="http://127.0.0.1:8000")
    """
    client = InferClient(url, protocol, timeout=timeout)
    try:
        sig = client.signature(model)
        arrays = request_arrays(sig, values, outputs)
        return client.infer(model, arrays, outputs, signature=sig)
    finally:
        client.close()


def request_arrays(
    sig: ModelSignature, values: Mapping[str, str], outputs: Optional[Sequence[str]] = None
) -> Dict[str, NDArray[Any]]:
    """The tensors of a request to the model ``sig`` describes, from command-line strings
    (see :func:`parse_input_value`), once every name is checked: no unknown input, every
    required one given, no unknown output among ``outputs``.

    Example::

        request_arrays(client.signature("add_sub"), {"INPUT0": "[1,2,3,4]", ...})
    """
    model = sig.name
    unknown = [name for name in values if name not in sig.inputs]
    if unknown:
        raise ServerError(
            f"model {model!r} has no input(s) {', '.join(map(repr, unknown))}; its inputs "
            f"are {', '.join(sig.inputs) or 'none'}."
        )
    missing = [n for n, s in sig.inputs.items() if not s.optional and n not in values]
    if missing:
        raise ServerError(
            f"model {model!r} needs input(s) {', '.join(map(repr, missing))}: pass "
            + " ".join(f"--input {n}=..." for n in missing)
            + "."
        )
    bad_outputs = [n for n in outputs or () if n not in sig.outputs]
    if bad_outputs:
        raise ServerError(
            f"model {model!r} has no output(s) {', '.join(map(repr, bad_outputs))}; its "
            f"outputs are {', '.join(sig.outputs) or 'none'}."
        )
    return {
        name: parse_input_value(text, sig.inputs[name], sig.max_batch_size)
        for name, text in values.items()
    }
